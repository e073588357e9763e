/*
 * train-record.h — the training record: the JSON text a trained model
 * carries as its "training" metadata (model.h's train_meta), written by
 * train_run (train-run.h) and read back here for the curves (curves.h) and
 * the lab (lab.h).  One module writes and reads it, so the keys live in
 * one place.
 *
 * Keys: "command" (the command line that started the run), "resumed"
 * (those that resumed it, when any), "data", "from" (when given),
 * "data_bytes", "data_tokens", "train_tokens", "val_tokens", "unk_tokens",
 * "min_count", "line_starts", "repeat" (+ "repeat_min", "repeat_max",
 * "repeat_random" when > 0), "seed", "steps", "steps_done", "complete",
 * "batch", "context", "lr", "warmup", "min_lr_frac", "weight_decay",
 * "clip", "val_fraction", "params", "tokens_seen", "final_train_loss",
 * "final_val_loss" (null: none), "wall_seconds", "threads", "cores";
 * "history": {"every": k, "step", "loss", "lr", "grad_norm": one value
 * per stored step, "layer_grad_norm": one row of n_layer per stored
 * step}, every k-th step and the last, at most ~1000; "val": {"step",
 * "loss"}.  A non-finite number is written null.
 */
#ifndef ATTNSCOPE_TRAIN_RECORD_H
#define ATTNSCOPE_TRAIN_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "dataset.h"
#include "train-run.h"
#include "trainer.h"
#include "util.h"

/* The record of spec's run in trainer t (its model, history and
 * validations) on d, after seconds of wall time; complete when every step
 * is done.  Malloc'd compact JSON.  Never fails. */
char *train_record_json(const struct train_spec *spec, const struct trainer *t,
			const struct dataset *d, double seconds, bool complete);

#define TRAIN_RECORD_MAX_LAYERS 1024 /* longest layer_grad_norm row accepted */

/* A record read back: the history by stored step, the validations, and
 * the summary numbers.  Arrays owned. */
struct train_record {
	int n;                  /* stored steps */
	double *step;           /* (n) */
	double *loss;           /* (n); NAN where null */
	double *lr, *grad;      /* (n) each, or NULL when the record lacks them */
	int n_layer;            /* 0 without layer_grad_norm */
	double **layer;         /* (n_layer) arrays of (n): layer l's gradient norm */
	int n_val;
	double *val_step, *val_loss; /* (n_val) each; both NULL without "val" */
	long every;             /* history.every (1 when absent) */
	long steps, steps_done; /* -1 when absent */
	double final_train_loss, final_val_loss; /* NAN when absent */
};

/*
 * Reads the JSON text of a training record (len bytes; need not be
 * NUL-terminated).  "history" with "step" and "loss" is required; "lr",
 * "grad_norm", "layer_grad_norm" and "val" are optional, but each array
 * present must have one entry per step, steps must be finite numbers and
 * values numbers or null.  0, or -1 with one line in e ("training record:
 * history.loss has 9 values for 10 steps") and r zeroed.  Free r with
 * train_record_free.
 */
int train_record_parse(const char *json, size_t len, struct train_record *r, struct err *e);

/* Frees what r owns and zeroes it; a zeroed record is fine. */
void train_record_free(struct train_record *r);

#endif
