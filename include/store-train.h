/*
 * store-train.h — records a training run (train-run.h) in a session
 * database (store.h) as it trains, through train_run's hooks: the run's
 * training_runs row is inserted before the first step (status "running",
 * linked by resumed_from to the row of the run it resumes when that row is
 * in the same database), its steps are committed in batches as they are
 * done (STORE_TRAIN_STEPS at a time, STORE_TRAIN_MS after the last commit,
 * and at every validation and the end: a kill -9 loses at most the last
 * batch), and the row is finished at the end (status "done",
 * "interrupted" or "failed", losses, wall time).  Steps restored on
 * resume belong to the run that did them and are not recorded again.
 *
 * Ownership: the recorder takes the open store and closes it in
 * store_train_free; it borrows the spec, which must outlive the run.
 *
 * Failure: the first row, inserted by store_train_on_start, fails the run
 * (-1 with the database's message: nothing is trained).  A write that
 * fails later prints one warning on stderr ("attnscope train: warning:
 * ...; recording stopped, training goes on"), closes the store and
 * records nothing more: the checkpoint is what matters.
 *
 * Layer: the store, above train (it reads train_run's spec and state).
 */
#ifndef ATTNSCOPE_STORE_TRAIN_H
#define ATTNSCOPE_STORE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "train-run.h"

#define STORE_TRAIN_STEPS 50
#define STORE_TRAIN_MS 2000.0

struct store_train {
	struct store *st;              /* owned; NULL: not recording (none, or stopped) */
	char *real;                    /* the database's path with links resolved, or NULL */
	const struct train_spec *spec; /* borrowed: the run's files, flags, seed, threads */
	int64_t run_id;                /* this run's training_runs id; 0 before on_start */
	size_t next;                   /* history row of the first step not yet committed */
	double last_ms;                /* when steps were last committed */
};

/* Sets r up to record the run of spec in st (taken; NULL: record
 * nothing, the hooks are then no-ops). */
void store_train_init(struct store_train *r, struct store *st, const struct train_spec *spec);

/* Closes the store and frees what r owns; a zeroed r is fine. */
void store_train_free(struct store_train *r);

/* The hooks, with ctx a struct store_train; a caller with hooks of its own
 * calls them from its own (train.h does). */
int store_train_on_start(void *ctx, const struct train_state *s, struct train_link *link,
			 struct err *e);
void store_train_on_step(void *ctx, const struct train_state *s);
void store_train_on_end(void *ctx, const struct train_state *s, int status, double seconds,
			const char *message);

/* Hooks that only record (ctx r, the other hooks NULL). */
struct train_hooks store_train_hooks(struct store_train *r);

#endif
