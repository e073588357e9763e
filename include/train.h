/*
 * train.h — `attnscope train`: trains a model on a UTF-8 text file and
 * writes a checkpoint (see README "Training" and `attnscope train --help`).
 *
 * Interrupting (Ctrl-C, SIGTERM or --stop-after N) finishes the current
 * step and writes the checkpoint FILE plus its optimizer state FILE.optim;
 * `attnscope train --resume FILE` then continues the run, giving the same
 * final weights, bit for bit, as an uninterrupted run with the same seed
 * and thread count.  A run that completes deletes FILE.optim unless
 * --keep-optim is given.
 *
 * FILE.optim holds the exact F32 weights, the AdamW moments, the step
 * counter, the batch generator's state, the per-step history, the flags of
 * the run and its command lines; its binary layout is documented in
 * optim.h (struct optim_file).  On --resume the stored flags are replayed
 * first, then the ones given; shape flags and the data must not change.
 */
#ifndef ATTNSCOPE_TRAIN_H
#define ATTNSCOPE_TRAIN_H

#include "util.h"

/* Exit statuses of `attnscope train`. */
enum {
	TRAIN_EXIT_OK = 0,
	TRAIN_EXIT_FAIL = 1,        /* data, files, diverged training */
	TRAIN_EXIT_USAGE = 2,       /* bad flags or an impossible shape */
	TRAIN_EXIT_INTERRUPTED = 130, /* stopped early; checkpoint + FILE.optim written */
};

/* Entry point of `attnscope train ARGS...` (argv[0] is "train").
 * Prints errors as one line on stderr.  Returns the process exit status. */
int train_main(int argc, char **argv);

/* train_main without printing the error: returns the exit status and, when
 * it is neither OK nor INTERRUPTED, the one-line message in e.  Progress
 * and the summary are still printed unless --quiet is given.  Besides the
 * documented flags, --stop-after N behaves as if Ctrl-C arrived during
 * step N of this session (tests use it to interrupt deterministically). */
int train_run_args(int argc, char **argv, struct err *e);

#endif
