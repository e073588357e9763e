/*
 * tui-int.h — what the files of the visualizer's loop share, and nothing
 * outside them includes (the rest of the program uses tui.h, the views
 * tui-view.h).  The files, each using only those before it and the views:
 *
 *   tui-term.c     the terminal: curses mode on and off, colours and
 *                  glyphs, restored on every way out (signals, exit())
 *   tui.c          tui_run: the loop, what each key does, the help
 *
 * All drawing and reading of keys happens on the thread that runs
 * tui_run, except the watcher's progress line while a command runs.
 */
#ifndef ATTNSCOPE_TUI_INT_H
#define ATTNSCOPE_TUI_INT_H

#include <signal.h>
#include <stdbool.h>

#include "tui-view.h"
#include "util.h"

/* ------------------------------------------------ the terminal (tui-term.c) */

/*
 * Takes the terminal: curses mode (made once per process, resumed on later
 * entries), raw keys, the mouse when it reports, the alternate screen,
 * and st's style (utf8, colors, vsub, the colour pairs) chosen for it.
 * From here until tui_term_leave() the signals that end the program
 * restore the terminal first, as does exit().  0, or -1 with a message
 * (no terminal, no TERM, no cursor addressing) and the terminal as it was.
 */
int tui_term_enter(struct tui_state *st, struct err *e);

/* Gives the terminal back as it was and the signals their old actions. */
void tui_term_leave(void);

/* Ctrl-Z: the terminal given back and the process stopped; when it goes
 * on, curses mode again at the terminal's size (the caller repaints). */
void tui_term_suspend(void);

/* A command runs (NULL: none now): a first SIGINT from outside sets
 * *cancel instead of ending the program. */
void tui_term_command(volatile sig_atomic_t *cancel);

/* A command's standard error goes to a pseudo-terminal: the real stderr
 * (saved; -1: not redirected) and the end that reads back what the
 * command wrote (master; -1: none), so that a fatal signal or exit()
 * puts the real one back and shows what the command wrote last. */
void tui_term_stderr(int saved, int master);

#endif
