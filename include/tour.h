/*
 * tour.h — the class in lesson order: `tour` at the prompt, in scripts and
 * at the visualizer's `:` prompt (cmd-tour.c), and `attnscope tour` from
 * the shell (main.c).
 *
 * A lesson is one of the shipped demo files (resolve.h: demo_file), run
 * as a command file through the script runner (script.h), so the tour
 * adds no narration of its own beyond one line per lesson:
 *   "lesson N/M: TITLE (about K min)"   (in Chinese "第 N 课（共 M 课）：...")
 * The session remembers the lesson run last (session.tour_lesson): `tour`
 * runs the next one, `tour back` the one before, `tour N` any.
 */
#ifndef ATTNSCOPE_TOUR_H
#define ATTNSCOPE_TOUR_H

#include "cmd.h"
#include "session.h"
#include "util.h"

/* How many lessons the tour has (M). */
int tour_lessons(void);

/* Runs lesson n (1..M): prints its header and runs its demo file, in
 * batch mode (stopping at its first failing command) unless a person is at
 * the terminal (s->interactive: pauses wait, failures are reported and
 * the lesson goes on), after clearing the text, as when the file runs
 * alone.  Sets s->tour_lesson = n.  Returns 0; CMD_QUIT when
 * the lesson ran `quit`; -1 with e set when the file is missing, a command
 * of it failed ("lesson N/M (FILE): ..."; the command's own
 * FILE:LINE: message is already on standard error) or a lesson is already
 * running (a lesson cannot start the tour). */
int tour_run_lesson(struct session *s, int n, struct err *e);

/* attnscope tour --batch: lessons from..M in order, each as
 * tour_run_lesson; a lesson that fails is reported and the next one runs.
 * Ends with a line saying how it went.  Returns 0 when every lesson ran
 * without a failure, CMD_QUIT after `quit`, else -1 with e naming the
 * lessons that failed (or the interruption that stopped the tour). */
int tour_run_all(struct session *s, int from, struct err *e);

#endif
