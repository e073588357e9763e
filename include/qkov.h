/*
 * qkov.h — the QK and OV circuits of one head (Elhage et al. 2021).
 *
 * OV: the full OV circuit W_U W_OV W_E (V, V) says, for a token attended
 * to, what the head pushes the logits towards.  A head that copies has
 * mostly positive eigenvalues there.  Its copying score is
 *   sum_i max(Re lambda_i, 0) / sum_i |lambda_i|
 * over the eigenvalues of that matrix: 1 for a pure copier, 0 when every
 * eigenvalue has a negative real part (a complex pair counts both).
 * The nonzero eigenvalues of AB equal those of BA, so it is computed from
 * the (D, D) matrix W_V~ W_E W_U~ W_O, never V x V:
 *   W_E (C, V)   token embeddings as columns (wte^T)
 *   W_V~ (D, C)  the head's K/V group's value rows, under pre-norm times
 *                its layer's norm1 gain and centring (W_V diag(g) P,
 *                P = I - 11^T/C for LayerNorm, I for RMSNorm)
 *   W_O (C, D)   its columns of the output projection
 *   W_U~ (V, C)  the output layer (wte when tied) times the final norm's
 *                gain and centring (W_U diag(g_f) P)
 * The per-token norm scales (1/std, 1/rms: positive numbers) and every
 * bias are left out, as are the other layers (the direct path only).
 * Models whose output head is not the final norm plus an output layer
 * (BERT's MLM head, none) are refused.
 *
 * QK on the current text: each visible score (query i, key j) of the
 * head split by what the query and the key are made of — the token
 * embedding, the learned position embedding, and the rest (earlier heads
 * and MLPs, biases, norm shifts) — with why.h's frozen-norm convention:
 * the token and position embeddings are followed through every norm on
 * the way frozen at the position's scale, turned into the head's query or
 * key (RoPE at the position), and the rest is the pass's own q or k row
 * minus those two, so the nine classes sum to the pass's score.  With
 * RoPE there is no position class (positions act inside the others).
 * A q/k norm is frozen at the position's 1/rms of what it reads (the
 * head's row; OLMo-2's whole query or key block); sandwich norms act on
 * sub-blocks' outputs, which are in the rest.  Soft-capped scores (Gemma
 * 2's): the classes split the score before the cap, and the capped
 * score's mean and spread are given beside it.
 */
#ifndef ATTNSCOPE_QKOV_H
#define ATTNSCOPE_QKOV_H

#include "model.h"
#include "util.h"

struct qkov_ov {
	int D;
	double copy;       /* the copying score above */
	double *re, *im;   /* (D) eigenvalues of the (D, D) matrix; owned */
};

/* The OV circuit of head layer.head of m under o (the pass's K/V heads
 * and placement).  0, or -1 with e set (one line): head outside the
 * model, no final norm plus output layer, an eigen solver failure.  Free
 * with qkov_ov_free (a no-op on a zeroed or freed result). */
int qkov_ov_run(struct model *m, const struct run_options *o, int layer, int head,
		struct qkov_ov *out, struct err *e);
void qkov_ov_free(struct qkov_ov *r);

/* The eigenvalues (re, im: n each) of the real n x n row-major matrix a
 * (overwritten), by LAPACK's dgeev.  0, or -1 with e set. */
int qkov_eigen(double *a, int n, double *re, double *im, struct err *e);

/* sum max(re_i, 0) / sum |lambda_i| over n eigenvalues (NAN when all are 0). */
double qkov_copy_score(const double *re, const double *im, int n);

enum qk_class { QK_TOKEN, QK_POS, QK_REST, QK_CLASSES };

struct qkov_qk {
	int pairs;                          /* visible (query, key) pairs */
	bool has_pos;                       /* learned positions (QK_POS is used) */
	double mean[QK_CLASSES][QK_CLASSES];   /* [query class][key class]: mean term */
	double spread[QK_CLASSES][QK_CLASSES]; /* mean over queries of the term's standard
						* deviation over that query's keys (what
						* changes the pattern: the softmax ignores
						* a shift common to a row) */
	double mean_score, spread_score;    /* the same of the whole score (before
					     * any cap: the classes sum to it) */
	double softcap;                     /* the scores' cap (Gemma 2's), 0: none */
	double mean_capped, spread_capped;  /* the same of the capped score
					     * softcap tanh(score / softcap) the
					     * softmax reads (the whole score's
					     * without a cap) */
};

/* The QK split above for head layer.head on tokens[0 .. T) under o.
 * Visible keys: those the mask lets a query weigh (mask_range).  0, or
 * -1 with e set: head outside the model, a model without residual
 * connections or a pitfall (as why.h), a failed pass. */
int qkov_qk_run(struct model *m, const struct run_options *o, const int *tokens, int T,
		int layer, int head, struct qkov_qk *out, struct err *e);

/* "token", "position", "rest". */
const char *qk_class_name(enum qk_class c);

#endif
