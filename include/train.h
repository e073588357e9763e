/*
 * train.h — `attnscope train`: trains a model on a UTF-8 text file and
 * writes a checkpoint (see docs/training.md and `attnscope train --help`).
 *
 * Interrupting (Ctrl-C, SIGTERM or --stop-after N) finishes the current
 * step and writes the checkpoint FILE plus its optimizer state FILE.optim;
 * a second Ctrl-C or SIGTERM drops the step in progress and writes those
 * of the last finished step; a third quits at once, writing nothing.
 * `attnscope train --resume FILE` then continues the run, giving the same
 * final weights, bit for bit, as an uninterrupted run with the same seed
 * and thread count.  A run that completes deletes FILE.optim unless
 * --keep-optim is given.
 *
 * With a session database (--db, $ATTNSCOPE_DB) the run is recorded as it
 * trains (store.h, training_runs and training_steps): one row per session
 * of the run, inserted before its first step and linked by resumed_from to
 * the session it resumes; steps committed in batches.
 *
 * FILE.optim holds the exact F32 weights, the AdamW moments, the step
 * counter, the batch generator's state, the per-step history, the flags of
 * the run and its command lines; its binary layout is documented in
 * optim.h (struct optim_file).  On --resume the stored flags are replayed
 * first, then the ones given; shape flags and the data must not change.
 *
 * The command only turns flags into a train_run spec (train-run.h), which
 * does the training, resuming and writing; its hooks add progress, the
 * signals and the database.
 */
#ifndef ATTNSCOPE_TRAIN_H
#define ATTNSCOPE_TRAIN_H

#include "util.h"

/* Exit statuses of `attnscope train`. */
enum {
	TRAIN_EXIT_OK = 0,
	TRAIN_EXIT_FAIL = 1,        /* data, files, the database, diverged training,
				     * quit without saving (a third Ctrl-C) */
	TRAIN_EXIT_USAGE = 2,       /* flags wrong whatever the data: unknown or bad
				     * values, an impossible shape, too big for memory */
	TRAIN_EXIT_INTERRUPTED = 130, /* stopped early; checkpoint + FILE.optim written */
};

/* Entry point of `attnscope train ARGS...` (argv[0] is "train").
 * Prints errors as one line on stderr.  Returns the process exit status. */
int train_main(int argc, char **argv);

/* train_main without printing the error: returns the exit status and, when
 * it is neither OK nor INTERRUPTED, the one-line message in e.  Progress
 * and the summary are still printed unless --quiet is given.  Besides the
 * documented flags, --stop-after N behaves as if Ctrl-C arrived during
 * step N of this session, and --stop-now-at N as if it arrived twice
 * during step N (tests use them to interrupt deterministically). */
int train_run_args(int argc, char **argv, struct err *e);

#endif
