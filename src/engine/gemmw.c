/*
 * gemmw.c — many input rows times weight rows in their stored width
 * (gemmw.h).
 *
 * The output is made in tiles of RM weight rows by RN input rows: RM * RN
 * sixteen-lane accumulators, and per sixteen columns RM weight loads
 * (16-bit ones converted to F32 in registers: F16 by vcvtph2ps, BF16 by a
 * shift) and RN input loads for RM * RN multiply-adds; 5 x 5 uses 31 of
 * the 32 registers.  On this project's 2-core AMD EPYC it ran the
 * Qwen2.5-0.5B shapes with 16-bit rows at 164-184 GFLOP/s a core, and
 * GPT-2-small's with F32 rows at 126-181, against OpenBLAS's sgemm's
 * 96-103 (its Haswell kernel is 256 bits wide); 4 x 6 and 3 x 8 tiles ran
 * at 94-145.  The columns are taken CHUNK at a time and the input rows a
 * block at a time (about BLOCK_BYTES of their chunk, which stay in the
 * core's L2) while that chunk of every weight row of the range streams
 * past; each weight value is then read N / block times, in its own width.
 * Chunks matter for wide rows: with whole rows an input block of 256 KiB
 * held 30 rows of 2048 columns and 5 of 8192, and F32 products 2048 x 8192
 * and 4096 x 14336 at N = 256 ran at 41-51 GFLOP/s on one core; with
 * 1024-column chunks at 111-129 (512: 116-127, 256: 115-124; measured with
 * another job on the second core).  Rows of 1024 columns or fewer are one
 * chunk.  Input rows 64-byte aligned (the engine's buffers are, rows a
 * multiple of 16 wide) load a cache line at a time: 16-byte aligned ones
 * ran at about 60% of the rate (68 against 100-118 GFLOP/s on one core).
 */
#include "gemmw.h"

#include "quant.h"
#include "split.h"
#include "util.h"

#include <math.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define GEMMW 1
#endif

#define RM 5			/* weight rows a tile */
#define RN 5			/* input rows a tile */
#define BLOCK_BYTES (256 * 1024) /* input rows kept close while weights stream */
#define CHUNK 1024		 /* columns a pass over the weight rows (a multiple of 16) */
/* the tile's loops unrolled whole, so that its accumulators stay in registers */
#define UNROLL _Pragma("GCC unroll 8")

#ifdef GEMMW

bool gemmw_available(void)
{
	return true;
}

enum width { BF16, F16, F32 }; /* a weight row's type, a constant where inlined */

/* Bytes of one weight value. */
static inline size_t bytes_of(const enum width f)
{
	return f == F32 ? 4 : 2;
}

/* Sixteen values of a weight row at p as F32 (the conversions are exact). */
static inline __m512 load_w(const unsigned char *p, const enum width f)
{
	if (f == F32)
		return _mm512_loadu_ps((const float *)p);
	__m256i h = _mm256_loadu_si256((const __m256i *)p);
	if (f == F16)
		return _mm512_cvtph_ps(h);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Value k of a weight row at p as F32. */
static inline float value_w(const unsigned char *p, int k, const enum width f)
{
	if (f == F32) {
		float x;
		memcpy(&x, p + 4 * (size_t)k, sizeof x);
		return x;
	}
	uint16_t v = (uint16_t)(p[2 * k] | p[2 * k + 1] << 8);
	if (f == F16)
		return _cvtsh_ss(v);
	union { uint32_t u; float f; } b = { (uint32_t)v << 16 };
	return b.f;
}

/* One tile over columns k0 .. k1 - 1 (multiples of 16, k1 at most the
 * last multiple of 16 of IC): rm weight rows at w (rb bytes apart) by rn
 * input rows at in (IC apart) into out[n * ldo + m], set by the first
 * chunk of columns and added to by the others; the last chunk adds the
 * columns past the last multiple of 16 too.  rm, rn and the width wd are
 * constants where it is inlined, so the accumulators live in registers. */
static inline __attribute__((always_inline)) void tile(const int rm, const int rn,
						       const enum width wd, float *out, int ldo,
						       const float *in, int IC,
						       const unsigned char *w, size_t rb,
						       int k0, int k1, bool first, bool last)
{
	__m512 acc[RM][RN];
	UNROLL for (int m = 0; m < rm; m++)
		UNROLL for (int n = 0; n < rn; n++)
			acc[m][n] = _mm512_setzero_ps();
	for (int k = k0; k < k1; k += 16) {
		__m512 a[RM];
		UNROLL for (int m = 0; m < rm; m++)
			a[m] = load_w(w + (size_t)m * rb + bytes_of(wd) * (size_t)k, wd);
		UNROLL for (int n = 0; n < rn; n++) {
			__m512 x = _mm512_loadu_ps(in + (size_t)n * IC + k);
			UNROLL for (int m = 0; m < rm; m++)
				acc[m][n] = _mm512_fmadd_ps(a[m], x, acc[m][n]);
		}
	}
	UNROLL for (int m = 0; m < rm; m++)
		UNROLL for (int n = 0; n < rn; n++) {
			float *o = out + (size_t)n * ldo + m;
			float s = _mm512_reduce_add_ps(acc[m][n]);
			if (!first)
				s = *o + s;
			if (last) {
				const float *x = in + (size_t)n * IC;
				for (int k = IC & ~15; k < IC; k++)
					s = fmaf(value_w(w + (size_t)m * rb, k, wd), x[k], s);
			}
			*o = s;
		}
}

#define TILE_ARGS out, ldo, in, IC, w, rb, k0, k1, first, last
#define TILE_ROW(m, F)                                                                    \
	case (m) * 8 + 1: tile(m, 1, F, TILE_ARGS); break;                                \
	case (m) * 8 + 2: tile(m, 2, F, TILE_ARGS); break;                                \
	case (m) * 8 + 3: tile(m, 3, F, TILE_ARGS); break;                                \
	case (m) * 8 + 4: tile(m, 4, F, TILE_ARGS); break;                                \
	case (m) * 8 + 5: tile(m, 5, F, TILE_ARGS); break;
#define TILE_FN(name, F)                                                                  \
	static void name(int rm, int rn, float *out, int ldo, const float *in, int IC,    \
			 const unsigned char *w, size_t rb, int k0, int k1, bool first,   \
			 bool last)                                                       \
	{                                                                                 \
		switch (rm * 8 + rn) {                                                    \
			TILE_ROW(1, F) TILE_ROW(2, F) TILE_ROW(3, F) TILE_ROW(4, F)       \
			TILE_ROW(5, F)                                                    \
		}                                                                         \
	}

TILE_FN(tile_f16, F16)
TILE_FN(tile_bf16, BF16)
TILE_FN(tile_f32, F32)

typedef void tile_fn(int rm, int rn, float *out, int ldo, const float *in, int IC,
		     const unsigned char *w, size_t rb, int k0, int k1, bool first, bool last);

void gemmw_rows(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int lo, int hi)
{
	tile_fn *fn = type == GGML_F16 ? tile_f16 : type == GGML_F32 ? tile_f32 : tile_bf16;
	int K16 = IC & ~15, kc = K16 < CHUNK ? K16 : CHUNK;
	int nb = BLOCK_BYTES / ((kc > 16 ? kc : 16) * (int)sizeof(float)) / RN * RN;
	if (nb < RN)
		nb = RN;
	for (int n0 = 0; n0 < N; n0 += nb) {
		int n1 = N - n0 < nb ? N : n0 + nb, k0 = 0;
		do { /* once with no column chunk (IC < 16): the tail alone */
			int k1 = K16 - k0 < CHUNK ? K16 : k0 + CHUNK;
			for (int r = lo; r < hi; r += RM) {
				int rm = hi - r < RM ? hi - r : RM;
				for (int n = n0; n < n1; n += RN)
					fn(rm, n1 - n < RN ? n1 - n : RN, out + (size_t)n * ldo + r, ldo,
					   in + (size_t)n * IC, IC, w + (size_t)r * rb, rb, k0, k1,
					   k0 == 0, k1 == K16);
			}
			k0 = k1;
		} while (k0 < K16);
	}
}

/* One product for split_rows: its weight rows lo .. hi - 1. */
struct product {
	float *out;
	const float *in;
	const unsigned char *w;
	size_t rb;
	uint32_t type;
	int ldo, N, IC;
};

static void product_rows(void *ctx, int lo, int hi, int t)
{
	(void)t;
	const struct product *j = ctx;
	gemmw_rows(j->out, j->ldo, j->in, j->N, j->IC, j->w, j->rb, j->type, lo, hi);
}

void gemmw_split(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int rows)
{
	struct product j = { out, in, w, rb, type, ldo, N, IC };
	split_rows(product_rows, &j, rows, 16);
}

#else

bool gemmw_available(void)
{
	return false;
}

void gemmw_rows(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int lo, int hi)
{
	(void)out, (void)ldo, (void)in, (void)N, (void)IC, (void)w, (void)rb, (void)type;
	(void)lo, (void)hi;
	die("gemmw_rows: not built on this machine (gemmw_available is false)");
}

void gemmw_split(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int rows)
{
	gemmw_rows(out, ldo, in, N, IC, w, rb, type, 0, rows);
}

#endif
