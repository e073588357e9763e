/*
 * lab.h — the tutorials' training experiments, rerun on this machine.
 *
 * Each experiment trains (or times) small models in a few arms that differ
 * in one thing — residual connections, norm placement, scaling, the mask,
 * the number of heads, K/V sharing — and reports a table in the shape the
 * tutorial gives, plus findings: sentences computed from the measured
 * numbers, which say plainly when the result is not the tutorial's.
 * Nothing here reads a session or prints to a terminal except through the
 * progress callback; the `lab` command (cmd-lab.c) shows and records it.
 *
 * Two sizes: quick (under a minute here: what the tests run) and full
 * (minutes: what docs/training.md quotes).
 */
#ifndef ATTNSCOPE_LAB_H
#define ATTNSCOPE_LAB_H

#include <signal.h>
#include <stdbool.h>

#include "util.h"

/* A result table: rows x cols cells of text, row 0 the header. */
struct lab_table {
	int rows, cols;
	char **cells;           /* rows * cols strings, owned */
};

#define LAB_MAX_FINDINGS 8

struct lab_result {
	struct lab_table table;
	char *findings[LAB_MAX_FINDINGS]; /* sentences from the numbers, owned */
	int n_findings;
	char *json;             /* the table, the findings and each arm's numbers, owned */
	bool partial;           /* stopped early: the rows of the arms that finished */
};

void lab_result_free(struct lab_result *r);

/* Fills r->json from the table and findings of experiment name. */
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

struct lab_experiment {
	const char *name;
	const char *claim;      /* what the tutorial says, one sentence */
	const char *measures;   /* what the experiment does, one sentence */
	int quick_s, full_s;    /* measured wall time here, seconds (docs/training.md's machine) */
	/* 0, 1 when cancelled (partial result), or -1 with a message. */
	int (*run)(const struct lab_ctx *ctx, struct lab_result *out, struct err *e);
};

/* The experiments, in docs/training.md's order; NULL-terminated by name. */
extern const struct lab_experiment lab_experiments[];

/* The experiment called name, or NULL. */
const struct lab_experiment *lab_find(const char *name);

#endif
