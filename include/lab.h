/*
 * lab.h — the tutorials' training experiments, rerun on this machine.
 *
 * Each experiment trains (or times) small models in a few arms that differ
 * in one thing — residual connections, norm placement, scaling, the mask,
 * the number of heads, K/V sharing — and reports a table in the shape the
 * tutorial gives, plus findings: sentences computed from the measured
 * numbers, which say plainly when the result is not the tutorial's.
 * Nothing here reads a session or prints to a terminal except through the
 * progress callback; the `lab` command (cmd-lab.c) shows and records it,
 * and `export lab` (export-lab.c) draws the table's bars (struct
 * lab_plot) and the arms' training curves.
 *
 * Two sizes: quick (under a minute here: what the tests run) and full
 * (minutes: what docs/training.md quotes).
 */
#ifndef ATTNSCOPE_LAB_H
#define ATTNSCOPE_LAB_H

#include <signal.h>
#include <stdbool.h>

#include "curves.h"
#include "util.h"

/* A result table: rows x cols cells of text, row 0 the header. */
struct lab_table {
	int rows, cols;
	char **cells;           /* rows * cols strings, owned */
};

#define LAB_MAX_FINDINGS 8
#define LAB_MAX_CURVES 16   /* trained arms whose loss curve is kept */
#define LAB_CURVE_POINTS 200 /* points of a kept curve at most */

struct lab_result {
	struct lab_table table;
	char *findings[LAB_MAX_FINDINGS]; /* sentences from the numbers, owned */
	int n_findings;
	/* The training loss of every trained arm, named by the arm (curves.h:
	 * x the step, y the mean loss of the steps since the previous point;
	 * every step when there are at most LAB_CURVE_POINTS), in the order
	 * the arms ran; owned. */
	struct curve curves[LAB_MAX_CURVES];
	int n_curves;
	char *json;             /* the table, the findings, the curves ("curves":
				 * [{"arm","step":[...],"loss":[...]}]), owned */
	bool partial;           /* stopped early: the rows of the arms that finished */
	bool quick;             /* the quick size (lab_result_json sets it) */
};

void lab_result_free(struct lab_result *r);

/* Fills r->json from the table, findings and curves of experiment name,
 * and r->quick. */
void lab_result_json(struct lab_result *r, const char *name, bool quick);

/* Where and how an experiment runs. */
struct lab_ctx {
	const char *data;       /* UTF-8 training text */
	const char *base_model; /* the model the gqa experiment converts (a spec for model_open) */
	const char *native_gqa; /* its natively trained GQA counterpart, or NULL */
	bool quick;
	int threads;            /* 0: all cores */
	/* When not NULL and set, the experiment stops after the current step;
	 * the arms that finished are kept (result->partial). */
	volatile sig_atomic_t *cancel;
	/* Called about every 100 ms with one line of progress (no newline),
	 * and with NULL when an arm finishes; may be NULL. */
	void (*progress)(void *ctx, const char *line);
	void *progress_ctx;
};

/* What `export lab` draws of an experiment's table as bars: one group per
 * row (an arm), named by its label columns (a number shown after its
 * column's name: "depth 4"), one bar per value column; a cell that is not
 * a number ("-", "") has no bar. */
struct lab_plot {
	const char *labels[4];  /* column names, NULL after the last */
	const char *values[4];  /* column names, NULL after the last */
	const char *axis;       /* what the bars measure ("loss, nats per character") */
	bool log;               /* a logarithmic axis: the values span decades */
};

struct lab_experiment {
	const char *name;
	const char *claim;      /* what the tutorial says, one sentence */
	const char *measures;   /* what the experiment does, one sentence */
	int quick_s, full_s;    /* measured wall time here, seconds (docs/training.md's machine) */
	/* 0, 1 when cancelled (partial result), or -1 with a message. */
	int (*run)(const struct lab_ctx *ctx, struct lab_result *out, struct err *e);
	struct lab_plot plot;
};

/* The experiments, in docs/training.md's order; NULL-terminated by name. */
extern const struct lab_experiment lab_experiments[];

/* The experiment called name, or NULL. */
const struct lab_experiment *lab_find(const char *name);

#endif
