/*
 * compose.h — composition scores between attention heads (Elhage et al.
 * 2021, "A Mathematical Framework for Transformer Circuits"): how much a
 * later head B reads, through its queries, keys or values, the subspace an
 * earlier head A writes.  Weights only: no text is run.
 *
 * Per head, as (rows, columns) matrices acting on column vectors of the
 * residual stream (C):
 *   W_Q, W_K, W_V (D, C)  the head's rows of the fused QKV; K and V those
 *                         of its K/V group (query head h reads K/V head
 *                         h / (H / G), G the pass's K/V heads: a GQA
 *                         conversion's pooled weights are used)
 *   W_O (C, D)            its columns h*D .. h*D+D-1 of the output projection
 * with the input-side norm of the head's layer folded into W_Q, W_K and
 * W_V under pre-norm placement: W <- W diag(g) for RMSNorm, W <- W diag(g) P
 * for LayerNorm (P = I - 11^T / C, its mean subtraction; the per-token
 * 1/std or 1/rms scale and the shift b are left out).  Under post-norm the
 * attention reads the stream as it is and nothing is folded.  Qwen3's q/k
 * norm (config qk_norm) scales row d of W_Q and W_K by its query and key
 * scales, its per-head 1/rms left out as the stream norms' are.  Biases
 * are left out.  Then
 *   W_QK = W_Q^T W_K (C, C)   (a score is x_q^T W_QK x_k, up to 1/sqrt(D))
 *   W_OV = W_O W_V   (C, C)
 * and for A in an earlier layer than B, with ||.|| the Frobenius norm:
 *   Q-composition  ||W_QK^B^T W_OV^A|| / (||W_QK^B|| ||W_OV^A||)  (B's queries read A)
 *   K-composition  ||W_QK^B   W_OV^A|| / (||W_QK^B|| ||W_OV^A||)  (B's keys read A)
 *   V-composition  ||W_OV^B   W_OV^A|| / (||W_OV^B|| ||W_OV^A||)  (B's values read A)
 * (W_QK^B^T = W_K^T W_Q: its right side takes the query.)  Each lies in
 * [0, 1].  A squared numerator is the Frobenius product of two symmetric
 * C x C matrices of rank D, one per head (||P Q||^2 = <P^T P, Q Q^T>),
 * each written F^T F through a (D, C) factor F = chol(Gram) W; their
 * upper triangles are formed a block of rows at a time and every pair's
 * products come out of dgemm calls, never a C x C product of two heads'
 * matrices.  Double precision; the factors take 4 L H D C doubles
 * (some 200 MB for GPT-2 small) and the blocks some 47 MB more.
 *
 * The baseline is what random matrices of the same shapes score: the mean,
 * over COMPOSE_DRAWS draws (seed COMPOSE_SEED), of the score of matrices
 * whose entries are independent standard normals (W_Q, W_K, W_V (D, C),
 * W_O (C, D) for both heads), computed by the same code.  One baseline per
 * kind; the three have the same expectation (the normal is rotation
 * invariant), the draws differ.
 *
 * Options: the pass's K/V heads (o->kv_heads) and placement are honoured;
 * mask, scaling and ablations change no weight (the 1/sqrt(D) cancels in
 * the ratio) and are not used.
 */
#ifndef ATTNSCOPE_COMPOSE_H
#define ATTNSCOPE_COMPOSE_H

#include "model.h"
#include "util.h"

enum compose_kind { COMPOSE_Q, COMPOSE_K, COMPOSE_V, COMPOSE_KINDS };

#define COMPOSE_DRAWS 16
#define COMPOSE_SEED 20211222u

struct compose_pair {
	int la, ha;                  /* the earlier head A */
	int lb, hb;                  /* the later head B (lb > la) */
	double score[COMPOSE_KINDS]; /* Q, K and V composition */
};

struct compose_result {
	int L, H, G;       /* layers, query heads, the K/V heads used */
	int n;             /* pairs: H^2 L (L - 1) / 2 */
	struct compose_pair *pairs; /* (n) by A's layer and head, then B's; owned */
	double baseline[COMPOSE_KINDS];
};

/* Scores every pair of heads in different layers of m under options o
 * (kv_heads, placement).  Out of memory is fatal; 0, or -1 with e set for
 * invalid options or a model of one layer (no pairs).  Free with
 * compose_free (a no-op on a zeroed or freed result). */
int compose_run(struct model *m, const struct run_options *o, struct compose_result *out,
		struct err *e);
void compose_free(struct compose_result *r);

/* Fills order[0 .. n) with pair indices, the highest score of kind k
 * first (ties: the lower index first). */
void compose_rank(const struct compose_result *r, enum compose_kind k, int *order);

/* "Q", "K" or "V". */
const char *compose_kind_name(enum compose_kind k);

#endif
