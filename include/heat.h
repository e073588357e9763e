/*
 * heat.h — what a heatmap shows.  Besides the softmax weights, the
 * quantities attention studies look at when the weights alone mislead:
 *
 *   HEAT_WEIGHTS  A_ij, the softmax weights of the run.
 *   HEAT_SCORES   the scores before the softmax, s * q_i . k_j (s the
 *                 1/sqrt(D) scale when on): why a softmax saturates.
 *                 Keys a query may not see are NAN ("masked").
 *   HEAT_NORMS    ||A_ij W_O^h v_j||, the norm of what key j actually adds
 *                 to query i's output through head h (Kobayashi et al.
 *                 2020: a large weight on a value of small norm does
 *                 little), W_O^h the output projection's columns of head h
 *                 (no bias).  An ablated head adds nothing: all 0.
 *   HEAT_ROLLOUT  attention rollout (Abnar & Zuidema 2020) through layers
 *                 0..l, head-averaged: with M_l the mean over heads of
 *                 layer l's weights, Â_l = (M_l + I) / 2 with each row
 *                 divided by its sum (the identity stands for the residual
 *                 stream), R_0 = Â_0 and R_l = Â_l R_{l-1}.  Every head
 *                 of layer l shows R_l.
 *
 * Values are kept as computed (heat.v); heat_display() maps one head's to
 * 0..1 for drawing: weights and rollout as they are, norms divided by
 * their row's sum (so a row shows where the head's output comes from),
 * scores scaled per row from its smallest to its largest visible score;
 * masked cells stay NAN.
 */
#ifndef ATTNSCOPE_HEAT_H
#define ATTNSCOPE_HEAT_H

#include "model.h"
#include "util.h"

enum heat_kind { HEAT_WEIGHTS, HEAT_SCORES, HEAT_NORMS, HEAT_ROLLOUT, HEAT_KINDS };

/* "weights", "scores", "norms", "rollout"; parse returns -1 when unknown. */
const char *heat_kind_name(enum heat_kind k);
int heat_kind_parse(const char *s, enum heat_kind *out);

/* One line saying exactly what kind k shows (help). */
const char *heat_kind_about(enum heat_kind k);

/* A few words naming what a heatmap of kind k shades (legends). */
const char *heat_kind_legend(enum heat_kind k);

/* The name of one value of kind k as computed (heat.v), as panels list
 * them: "weight", "raw score", "norm", "rollout". */
const char *heat_kind_value(enum heat_kind k);

struct heat {
	enum heat_kind kind;
	int L, H, T;
	float *v;       /* (L, H, T, T) row = query, column = key; owned */
};

/* Computes kind for every layer and head of m run under o on tokens (T,
 * within the context), with a run of its own.  0, or -1 with a message. */
int heat_compute(struct model *m, const struct run_options *o, const int *tokens, int T,
		 enum heat_kind kind, struct heat *out, struct err *e);

void heat_free(struct heat *h);

/* Layer l, head h's (T, T) values. */
static inline const float *heat_at(const struct heat *h, int l, int hd)
{
	return h->v + (((size_t)l * h->H + hd) * h->T) * h->T;
}

/* Layer l, head hd's map for drawing into out (T, T): see the top. */
void heat_display(const struct heat *h, int l, int hd, float *out);

#endif
