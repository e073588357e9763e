/*
 * attnmm.h — the two products of one attention head, for the rows a mask
 * leaves each query: the scores Q·Kᵀ and the output P·V.  Built where
 * gemmw is (AVX-512F, attnmm_available); elsewhere ops.c uses OpenBLAS.
 *
 * Query row i (0 .. M - 1) needs keys lo .. hi of span(ctx, i, &lo, &hi),
 * a range inside 0 .. n_keys - 1 whose lo and hi never decrease with i
 * (every mask of ops.h's mask_range, clamped by a padding mask, is such).
 *
 *   attnmm_scores: a[i * lda + j] = scale * sum over d of q[i * ldq + d] *
 *     k[j * ldk + d] (d = 0 .. D - 1, one fused multiply-add after another
 *     from 0), for every j in row i's range; other entries of the row below
 *     n_keys may be written too (with their scores), none past it.
 *   attnmm_values: out[i * ldo + d] = sum over j of a[i * lda + j] *
 *     v[j * ldv + d], for d = 0 .. D - 1: the entries of row i outside its
 *     range must be exactly 0 (a softmax's masked entries are), and they
 *     leave the sum as it is, so each element is the fused multiply-adds of
 *     its row's range in order from lo, whatever the rows beside it.
 *
 * Each element is therefore the same bits whichever rows a call is given
 * (a split of the queries over threads, or queries q0 .. T-1 alone).
 * Nothing is allocated (a panel of keys lives on the stack); the caller
 * owns every buffer.  D is at most ATTNMM_MAX_D.
 */
#ifndef ATTNSCOPE_ATTNMM_H
#define ATTNSCOPE_ATTNMM_H

#include <stdbool.h>

#define ATTNMM_MAX_D 256

typedef void attnmm_span(const void *ctx, int i, int *lo, int *hi);

/* Whether the products are built here; when false they must not be called. */
bool attnmm_available(void);

void attnmm_scores(float *a, int lda, const float *q, int ldq, const float *k, int ldk, int M,
		   int n_keys, int D, float scale, attnmm_span *span, const void *ctx);

void attnmm_values(float *out, int ldo, const float *a, int lda, const float *v, int ldv, int M,
		   int D, attnmm_span *span, const void *ctx);

#endif
