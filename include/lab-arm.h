/*
 * lab-arm.h — what the lab's experiments share (lab.c): building and
 * training one arm with progress and cancelling, held-out losses under
 * given options, and filling the result's table and findings.  Internal to
 * lab.c and lab-exps.c.
 */
#ifndef ATTNSCOPE_LAB_ARM_H
#define ATTNSCOPE_LAB_ARM_H

#include "dataset.h"
#include "lab.h"
#include "model.h"
#include "trainer.h"

/* A fresh model of config c (its vocab_size taken from d's tokenizer),
 * GPT-2 initialised from seed.  NULL with a message when c is invalid. */
struct model *lab_model(const struct model_config *c, const struct dataset *d, uint64_t seed,
			struct err *e);

/* Trains m on d for hp->steps steps into tr (train_run, train-run.h: no
 * validation, no files; tr initialised there, the caller releases it),
 * reporting "lab EXP: LABEL: step i/n loss x" through the
 * context's progress callback.  0, 1 when cancelled (tr holds the steps
 * done), or -1 with a message. */
int lab_train(const struct lab_ctx *ctx, const char *exp, const char *label, struct model *m,
	      const struct dataset *d, const struct train_hparams *hp, struct trainer *tr,
	      struct err *e);

/* Mean loss of m under options o over n_batches fixed validation batches
 * of B windows of d (T = the model's context).  NAN without a validation
 * split.  0 or -1. */
int lab_held_out(struct model *m, const struct run_options *o, const struct dataset *d, int B,
		 int n_batches, double *loss, struct err *e);

/* Mean attention entropy (nats) over every layer, head and query of the
 * first validation window, under the model's native options. */
double lab_attention_entropy(struct model *m, const struct dataset *d, struct err *e);

/* Keeps the training loss of arm `label` from tr's history (lab.h: struct
 * lab_result's curves); nothing once LAB_MAX_CURVES are kept. */
void lab_curve(struct lab_result *r, const char *label, const struct trainer *tr);

/* Starts the table with its header: cols cells. */
void lab_table_header(struct lab_table *t, int cols, const char *const *names);
/* Appends a row of t->cols cells, each printf-formatted from one string in
 * the variadic list (already formatted text). */
void lab_table_row(struct lab_table *t, ...);
/* Appends a finding (printf-style). */
void lab_finding(struct lab_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A number as table text: "%.4f", or "-" for NAN. */
const char *lab_num(char *buf, size_t size, double x, int decimals);

#endif
