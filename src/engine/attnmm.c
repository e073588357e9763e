/*
 * attnmm.c — one attention head's scores and output over the keys each
 * query's mask leaves it (attnmm.h).
 *
 * Scores: the keys are taken SP at a time and copied into a panel of D
 * rows of SP values (key j's value d at panel[d * SP + j - jp]), so that
 * for each d one broadcast query value meets SP keys in SV vector
 * multiply-adds; a tile of SR query rows keeps SR * SV accumulators (24 of
 * the 32 registers) while d runs.  A panel is copied once for all the
 * query rows whose range reaches it: with a causal mask about half of the
 * T * T scores of a head are computed, where a general matrix product
 * computes them all.
 *
 * Output: a tile of VR query rows times up to VV vectors of the D output
 * columns (24 accumulators); for each key j of the tile's range one
 * broadcast weight per row meets the value row j, read in place (rows ldv
 * apart).  The tile's range is the union of its rows' ranges; the zeros
 * outside a row's own range leave its sums as they are.
 */
#include "attnmm.h"

#include "util.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define ATTNMM 1
#endif

#define SR 12	       /* query rows a scores tile */
#define SV 2	       /* vectors of keys a panel */
#define SP (16 * SV)   /* keys a panel */
#define VR 6	       /* query rows an output tile */
#define VV 4	       /* vectors of output columns an output tile */
#define UNROLL _Pragma("GCC unroll 16")

#ifdef ATTNMM

bool attnmm_available(void)
{
	return true;
}

/* Lanes of a vector whose first column is c, of n columns in all. */
static inline __mmask16 lanes(int c, int n)
{
	int k = n - c;
	return k >= 16 ? (__mmask16)0xffff : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1);
}

/* rn query rows at q (ldq apart) against the panel's SP keys, the first
 * m[v] lanes of vector v stored (scaled) into a (lda apart). */
static inline __attribute__((always_inline)) void score_tile(const int rn, float *a, int lda,
							     const float *q, int ldq,
							     const float *panel, int D,
							     __m512 scale,
							     const __mmask16 *m)
{
	__m512 acc[SR][SV];
	UNROLL for (int r = 0; r < rn; r++)
		UNROLL for (int v = 0; v < SV; v++)
			acc[r][v] = _mm512_setzero_ps();
	for (int d = 0; d < D; d++) {
		__m512 p[SV];
		UNROLL for (int v = 0; v < SV; v++)
			p[v] = _mm512_load_ps(panel + (size_t)d * SP + 16 * v);
		UNROLL for (int r = 0; r < rn; r++) {
			__m512 b = _mm512_set1_ps(q[(size_t)r * ldq + d]);
			UNROLL for (int v = 0; v < SV; v++)
				acc[r][v] = _mm512_fmadd_ps(b, p[v], acc[r][v]);
		}
	}
	UNROLL for (int r = 0; r < rn; r++)
		UNROLL for (int v = 0; v < SV; v++)
			_mm512_mask_storeu_ps(a + (size_t)r * lda + 16 * v, m[v],
					      _mm512_mul_ps(acc[r][v], scale));
}

#define SCORE_CASE(n) case n: score_tile(n, a, lda, q, ldq, panel, D, scale, m); break;

static void score_rows(int rn, float *a, int lda, const float *q, int ldq, const float *panel,
		       int D, __m512 scale, const __mmask16 *m)
{
	switch (rn) {
		SCORE_CASE(1) SCORE_CASE(2) SCORE_CASE(3) SCORE_CASE(4) SCORE_CASE(5) SCORE_CASE(6)
		SCORE_CASE(7) SCORE_CASE(8) SCORE_CASE(9) SCORE_CASE(10) SCORE_CASE(11)
		SCORE_CASE(12)
	}
}

/* Keys jp .. jp + nj - 1 (rows ldk apart) into panel, zeros after them. */
static void pack_panel(float *panel, const float *k, int ldk, int jp, int nj, int D)
{
	for (int j = 0; j < SP; j++) {
		const float *kj = j < nj ? k + (size_t)(jp + j) * ldk : NULL;
		for (int d = 0; d < D; d++)
			panel[(size_t)d * SP + j] = kj ? kj[d] : 0.0f;
	}
}

void attnmm_scores(float *a, int lda, const float *q, int ldq, const float *k, int ldk, int M,
		   int n_keys, int D, float scale, attnmm_span *span, const void *ctx)
{
	if (D < 1 || D > ATTNMM_MAX_D)
		die("attnmm_scores: head size %d outside 1 .. %d", D, ATTNMM_MAX_D);
	float panel[ATTNMM_MAX_D * SP] __attribute__((aligned(64)));
	__m512 s = _mm512_set1_ps(scale);
	for (int jp = 0; jp < n_keys; jp += SP) {
		int nj = n_keys - jp < SP ? n_keys - jp : SP, packed = 0;
		__mmask16 m[SV];
		for (int v = 0; v < SV; v++)
			m[v] = lanes(16 * v, nj);
		for (int r0 = 0; r0 < M; r0 += SR) {
			int rn = M - r0 < SR ? M - r0 : SR, lo, hi, lo1, hi1;
			span(ctx, r0, &lo, &hi);
			span(ctx, r0 + rn - 1, &lo1, &hi1);
			if (lo > jp + nj - 1) /* this tile's rows and all after start later */
				break;
			if (hi1 < jp) /* none of this tile's rows reaches the panel */
				continue;
			if (!packed)
				pack_panel(panel, k, ldk, jp, nj, D);
			packed = 1;
			score_rows(rn, a + (size_t)r0 * lda + jp, lda, q + (size_t)r0 * ldq, ldq, panel,
				   D, s, m);
		}
	}
}

/* rn rows of weights at a (lda apart) over keys j0 .. j1 times value rows
 * at v (ldv apart), nv vectors of columns (lanes m[c]) into out. */
static inline __attribute__((always_inline)) void value_tile(const int rn, const int nv,
							     float *out, int ldo,
							     const float *a, int lda,
							     const float *v, int ldv, int j0,
							     int j1, const __mmask16 *m)
{
	__m512 acc[VR][VV];
	UNROLL for (int r = 0; r < rn; r++)
		UNROLL for (int c = 0; c < nv; c++)
			acc[r][c] = _mm512_setzero_ps();
	for (int j = j0; j <= j1; j++) {
		__m512 x[VV];
		UNROLL for (int c = 0; c < nv; c++)
			x[c] = _mm512_maskz_loadu_ps(m[c], v + (size_t)j * ldv + 16 * c);
		UNROLL for (int r = 0; r < rn; r++) {
			__m512 b = _mm512_set1_ps(a[(size_t)r * lda + j]);
			UNROLL for (int c = 0; c < nv; c++)
				acc[r][c] = _mm512_fmadd_ps(b, x[c], acc[r][c]);
		}
	}
	UNROLL for (int r = 0; r < rn; r++)
		UNROLL for (int c = 0; c < nv; c++)
			_mm512_mask_storeu_ps(out + (size_t)r * ldo + 16 * c, m[c], acc[r][c]);
}

#define VALUE_ARGS out, ldo, a, lda, v, ldv, j0, j1, m
#define VALUE_ROW(r)                                                                      \
	case (r) * 8 + 1: value_tile(r, 1, VALUE_ARGS); break;                            \
	case (r) * 8 + 2: value_tile(r, 2, VALUE_ARGS); break;                            \
	case (r) * 8 + 3: value_tile(r, 3, VALUE_ARGS); break;                            \
	case (r) * 8 + 4: value_tile(r, 4, VALUE_ARGS); break;

static void value_rows(int rn, int nv, float *out, int ldo, const float *a, int lda,
		       const float *v, int ldv, int j0, int j1, const __mmask16 *m)
{
	switch (rn * 8 + nv) {
		VALUE_ROW(1) VALUE_ROW(2) VALUE_ROW(3) VALUE_ROW(4) VALUE_ROW(5) VALUE_ROW(6)
	}
}

void attnmm_values(float *out, int ldo, const float *a, int lda, const float *v, int ldv, int M,
		   int D, attnmm_span *span, const void *ctx)
{
	for (int r0 = 0; r0 < M; r0 += VR) {
		int rn = M - r0 < VR ? M - r0 : VR, lo, hi, lo1, hi1;
		span(ctx, r0, &lo, &hi);
		span(ctx, r0 + rn - 1, &lo1, &hi1);
		for (int d0 = 0; d0 < D; d0 += 16 * VV) {
			int nv = (D - d0 + 15) / 16 < VV ? (D - d0 + 15) / 16 : VV;
			__mmask16 m[VV];
			for (int c = 0; c < VV; c++)
				m[c] = lanes(d0 + 16 * c, D);
			value_rows(rn, nv, out + (size_t)r0 * ldo + d0, ldo, a + (size_t)r0 * lda, lda,
				   v + d0, ldv, lo, hi1, m);
		}
	}
}

#else

bool attnmm_available(void)
{
	return false;
}

void attnmm_scores(float *a, int lda, const float *q, int ldq, const float *k, int ldk, int M,
		   int n_keys, int D, float scale, attnmm_span *span, const void *ctx)
{
	(void)a, (void)lda, (void)q, (void)ldq, (void)k, (void)ldk, (void)M, (void)n_keys;
	(void)D, (void)scale, (void)span, (void)ctx;
	die("attnmm_scores: not built on this machine (attnmm_available is false)");
}

void attnmm_values(float *out, int ldo, const float *a, int lda, const float *v, int ldv, int M,
		   int D, attnmm_span *span, const void *ctx)
{
	(void)out, (void)ldo, (void)a, (void)lda, (void)v, (void)ldv, (void)M, (void)D;
	(void)span, (void)ctx;
	die("attnmm_values: not built on this machine (attnmm_available is false)");
}

#endif
