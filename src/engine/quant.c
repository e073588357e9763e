/*
 * quant.c — ggml's tensor types as floats (quant.h): the sizes and
 * names of the types, and the dequantization of the ones attnscope reads,
 * value for value as ggml's reference dequantizers compute them (the same
 * float products in the same order).
 *
 * Bit positions, for value v of a block (all K types: 256 values):
 *   Q4_0/Q4_1   v < 16: low nibble of qs[v]; v >= 16: high nibble of qs[v - 16]
 *   Q5_0/Q5_1   the nibble as Q4, plus bit v of the u32 qh as the fifth bit
 *   Q2_K        half h = v / 128, group g = v % 128 / 32, l = v % 32:
 *               q = qs[32h + l] >> 2g & 3, scale byte 8h + 2g + (l >= 16)
 *   Q3_K        as Q2_K for the low bits and the scale index; the high bit is
 *               hmask[l] bit 4h + g; the 16 6-bit scales: low 4 bits from
 *               byte i (i < 8) or the high nibble of byte i - 8, top 2 bits
 *               from byte 8 + i % 4 at bit 2 (i / 4)
 *   Q4_K/Q5_K   pair p = v / 64 of sub-blocks 2p, 2p + 1: qs[32p + l]'s low
 *               nibble for the first 32, high for the next; Q5_K's fifth
 *               bit is qh[l] bit 2p (first) or 2p + 1 (second); the 6-bit
 *               scale and min of sub-block j: j < 4: bytes j and j + 4 (low
 *               6 bits); else the nibbles of byte j + 4 with the top 2 bits
 *               of bytes j - 4 (scale) and j (min)
 *   Q6_K        half h = v / 128, quarter k = v % 128 / 32, l = v % 32:
 *               low 4 bits of ql[64h + l + 32 (k & 1)], the high nibble when
 *               k >= 2; 2 high bits qh[32h + l] >> 2k; scale 8h + l / 16 + 2k
 */
#include "quant.h"
#include "util.h"

#include <stdbool.h>
#include <string.h>

struct type_info {
	const char *name;
	size_t values, bytes; /* 0: not read here */
	/* the block's IEEE halves (d, and m or dmin): how many, byte offsets */
	int halves, half_at[2];
};

/* ggml's types by number; NULL names are numbers ggml has retired. */
static const struct type_info types[] = {
	[0] = { "F32", 1, 4 },        [1] = { "F16", 1, 2 },
	[2] = { "Q4_0", 32, 18, 1, { 0 } },          [3] = { "Q4_1", 32, 20, 2, { 0, 2 } },
	[6] = { "Q5_0", 32, 22, 1, { 0 } },          [7] = { "Q5_1", 32, 24, 2, { 0, 2 } },
	[8] = { "Q8_0", 32, 34, 1, { 0 } },          [9] = { "Q8_1", 0, 0 },
	[10] = { "Q2_K", 256, 84, 2, { 80, 82 } },   [11] = { "Q3_K", 256, 110, 1, { 108 } },
	[12] = { "Q4_K", 256, 144, 2, { 0, 2 } },    [13] = { "Q5_K", 256, 176, 2, { 0, 2 } },
	[14] = { "Q6_K", 256, 210, 1, { 208 } },     [15] = { "Q8_K", 0, 0 },      [16] = { "IQ2_XXS", 0, 0 },
	[17] = { "IQ2_XS", 0, 0 },    [18] = { "IQ3_XXS", 0, 0 },   [19] = { "IQ1_S", 0, 0 },
	[20] = { "IQ4_NL", 0, 0 },    [21] = { "IQ3_S", 0, 0 },     [22] = { "IQ2_S", 0, 0 },
	[23] = { "IQ4_XS", 0, 0 },    [24] = { "I8", 0, 0 },        [25] = { "I16", 0, 0 },
	[26] = { "I32", 0, 0 },       [27] = { "I64", 0, 0 },       [28] = { "F64", 0, 0 },
	[29] = { "IQ1_M", 0, 0 },     [30] = { "BF16", 1, 2 },      [34] = { "TQ1_0", 0, 0 },
	[35] = { "TQ2_0", 0, 0 },     [39] = { "MXFP4", 0, 0 },
};
#define N_TYPES (sizeof types / sizeof types[0])

size_t ggml_block_values(uint32_t t)
{
	return t < N_TYPES ? types[t].values : 0;
}

size_t ggml_block_bytes(uint32_t t)
{
	return t < N_TYPES ? types[t].bytes : 0;
}

const char *ggml_type_name(uint32_t t)
{
	return t < N_TYPES ? types[t].name : NULL;
}

/* Whether the 16-bit value at p (little-endian) has every exponent bit of
 * mask set: Inf or NaN. */
static bool all_ones(const unsigned char *p, uint16_t mask)
{
	return ((uint16_t)(p[0] | p[1] << 8) & mask) == mask;
}

/* The first of n 16-bit values at src, `stride` bytes apart, whose bits
 * under mask are all set (Inf or NaN in that layout), or n: a run of
 * them or-ed together first (the compiler vectorises it), looked through
 * only when one is. */
static size_t first_all_ones(const unsigned char *src, size_t n, size_t stride, uint16_t mask)
{
	enum { RUN = 1024 };
	for (size_t b0 = 0; b0 < n; b0 += RUN) {
		size_t k = n - b0 < RUN ? n - b0 : RUN;
		const unsigned char *p = src + b0 * stride;
		unsigned any = 0;
		if (stride == 2) {
			for (size_t i = 0; i < k; i++) {
				uint16_t v;
				memcpy(&v, p + 2 * i, 2);
				any |= (v & mask) == mask;
			}
		} else {
			for (size_t i = 0; i < k; i++)
				any |= all_ones(p + i * stride, mask);
		}
		for (size_t i = 0; any && i < k; i++)
			if (all_ones(p + i * stride, mask))
				return b0 + i;
	}
	return n;
}

size_t ggml_first_nonfinite(uint32_t t, const unsigned char *src, size_t n_blocks)
{
	size_t bb = ggml_block_bytes(t);
	if (!bb)
		die("ggml_first_nonfinite: type %u is not one attnscope reads", t);
	if (t == GGML_F32) /* the values themselves: F32 by its upper half */
		return first_all_ones(src + 2, n_blocks, 4, 0x7F80);
	if (t == GGML_F16 || t == GGML_BF16)
		return first_all_ones(src, n_blocks, 2, t == GGML_F16 ? 0x7C00 : 0x7F80);
	for (size_t b = 0; b < n_blocks; b++)
		for (int h = 0; h < types[t].halves; h++)
			if (all_ones(src + b * bb + types[t].half_at[h], 0x7C00))
				return b;
	return n_blocks;
}

static float half(const unsigned char *p)
{
	return f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* ------------------------------------------------------ 32-value blocks */

static void q8_0(const unsigned char *b, float *y)
{
	float d = half(b);
	for (int j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q4_0 (with_min false) and Q4_1. */
static void q4(const unsigned char *b, float *y, bool with_min)
{
	float d = half(b), m = with_min ? half(b + 2) : 0.0f;
	const unsigned char *qs = b + (with_min ? 4 : 2);
	for (int j = 0; j < 16; j++) {
		int lo = qs[j] & 15, hi = qs[j] >> 4;
		if (with_min) {
			y[j] = (float)lo * d + m;
			y[j + 16] = (float)hi * d + m;
		} else {
			y[j] = (float)(lo - 8) * d;
			y[j + 16] = (float)(hi - 8) * d;
		}
	}
}

/* Q5_0 (with_min false) and Q5_1. */
static void q5(const unsigned char *b, float *y, bool with_min)
{
	float d = half(b), m = with_min ? half(b + 2) : 0.0f;
	const unsigned char *h = b + (with_min ? 4 : 2), *qs = h + 4;
	uint32_t qh = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
		      (uint32_t)h[3] << 24;
	for (int j = 0; j < 16; j++) {
		int lo = (qs[j] & 15) | (int)(qh >> j & 1) << 4;
		int hi = (qs[j] >> 4) | (int)(qh >> (j + 16) & 1) << 4;
		if (with_min) {
			y[j] = (float)lo * d + m;
			y[j + 16] = (float)hi * d + m;
		} else {
			y[j] = (float)(lo - 16) * d;
			y[j + 16] = (float)(hi - 16) * d;
		}
	}
}

/* --------------------------------------------------------------- K types */

static void q2_k(const unsigned char *b, float *y)
{
	const unsigned char *sc = b, *qs = b + 16;
	float d = half(b + 80), dmin = half(b + 82);
	for (int v = 0; v < 256; v++) {
		int h = v / 128, g = v % 128 / 32, l = v % 32;
		int s = sc[8 * h + 2 * g + (l >= 16)];
		float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
		y[v] = dl * (float)(qs[32 * h + l] >> (2 * g) & 3) - ml;
	}
}

static void q3_k(const unsigned char *b, float *y)
{
	const unsigned char *hm = b, *qs = b + 32, *sb = b + 96;
	float d = half(b + 108);
	int scale[16];
	for (int i = 0; i < 16; i++) {
		int low = i < 8 ? sb[i] & 15 : sb[i - 8] >> 4;
		scale[i] = (low | (sb[8 + i % 4] >> (2 * (i / 4)) & 3) << 4) - 32;
	}
	for (int v = 0; v < 256; v++) {
		int h = v / 128, g = v % 128 / 32, l = v % 32;
		int q = qs[32 * h + l] >> (2 * g) & 3;
		if (!(hm[l] >> (4 * h + g) & 1))
			q -= 4;
		float dl = d * (float)scale[8 * h + 2 * g + (l >= 16)];
		y[v] = dl * (float)q;
	}
}

/* The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block. */
static void scale_min(const unsigned char *s, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
		*mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
	}
}

/* Q4_K (qh NULL) and Q5_K. */
static void q45_k(const unsigned char *b, float *y, bool five)
{
	float d = half(b), dmin = half(b + 2);
	const unsigned char *s = b + 4, *qh = five ? b + 16 : NULL, *qs = b + (five ? 48 : 16);
	for (int p = 0; p < 4; p++) {
		int sc1, m1, sc2, m2;
		scale_min(s, 2 * p, &sc1, &m1);
		scale_min(s, 2 * p + 1, &sc2, &m2);
		float d1 = d * (float)sc1, dm1 = dmin * (float)m1;
		float d2 = d * (float)sc2, dm2 = dmin * (float)m2;
		for (int l = 0; l < 32; l++) {
			int lo = qs[32 * p + l] & 15, hi = qs[32 * p + l] >> 4;
			if (qh) {
				lo += (qh[l] >> (2 * p) & 1) ? 16 : 0;
				hi += (qh[l] >> (2 * p + 1) & 1) ? 16 : 0;
			}
			y[64 * p + l] = d1 * (float)lo - dm1;
			y[64 * p + 32 + l] = d2 * (float)hi - dm2;
		}
	}
}

static void q6_k(const unsigned char *b, float *y)
{
	const unsigned char *ql = b, *qh = b + 128;
	const signed char *sc = (const signed char *)(b + 192);
	float d = half(b + 208);
	for (int v = 0; v < 256; v++) {
		int h = v / 128, k = v % 128 / 32, l = v % 32;
		int byte = ql[64 * h + l + 32 * (k & 1)];
		int q = ((k >= 2 ? byte >> 4 : byte & 15) | (qh[32 * h + l] >> (2 * k) & 3) << 4) - 32;
		y[v] = d * (float)sc[8 * h + l / 16 + 2 * k] * (float)q;
	}
}

/* ------------------------------------------------------- AVX2 versions */

/*
 * The same floats as the scalar functions above, eight at a time: each
 * value is the same product (and difference) of the same two floats,
 * computed by one _mm256_mul_ps (then one _mm256_sub_ps, never a fused
 * multiply-add: -std=c11 keeps GCC from contracting them, as it keeps it
 * from contracting the scalar code), and the per-block scales (d * sc, dmin
 * * mn) are the scalar code's own expressions.  The halves convert through
 * F16C, which gives f16_to_f32's value for every finite half (subnormals
 * included) and Inf; a NaN takes f16_to_f32, which keeps a signalling
 * NaN's bits.  tests/test_gguf.c holds each to ggml_dequantize_ref bit for
 * bit on random blocks.  (In these types every product is exact, a half's
 * 11 significant bits times at most 8 bits of scale and 6 of q, except
 * Q6_K's last, after which nothing is added: so a fused multiply-add would
 * give the same floats too, and the test cannot tell them apart.)
 */
#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

#define QUANT_AVX2 1

static inline float half_f16c(const unsigned char *p)
{
	uint16_t h = (uint16_t)(p[0] | p[1] << 8);
	return (h & 0x7c00) == 0x7c00 ? f16_to_f32(h) : _cvtsh_ss(h);
}

/* The low 8 bytes of x as floats: unsigned, or signed. */
static inline __m256 u8_ps(__m128i x)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(x));
}

static inline __m256 i8_ps(__m128i x)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
}

/* y[0 .. 31] = (float)q[j] * d for the 32 signed bytes q. */
static inline void i8x32_mul(float *y, __m256i q, __m256 d)
{
	__m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
	_mm256_storeu_ps(y, _mm256_mul_ps(i8_ps(a), d));
	_mm256_storeu_ps(y + 8, _mm256_mul_ps(i8_ps(_mm_srli_si128(a, 8)), d));
	_mm256_storeu_ps(y + 16, _mm256_mul_ps(i8_ps(b), d));
	_mm256_storeu_ps(y + 24, _mm256_mul_ps(i8_ps(_mm_srli_si128(b, 8)), d));
}

/* y[0 .. 31] = d * (float)q[j] - m for the 32 unsigned bytes q (Q4_K's
 * d1 * lo - dm1). */
static inline void u8x32_mul_sub(float *y, __m256i q, __m256 d, __m256 m)
{
	__m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
	_mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, u8_ps(a)), m));
	_mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(d, u8_ps(_mm_srli_si128(a, 8))), m));
	_mm256_storeu_ps(y + 16, _mm256_sub_ps(_mm256_mul_ps(d, u8_ps(b)), m));
	_mm256_storeu_ps(y + 24, _mm256_sub_ps(_mm256_mul_ps(d, u8_ps(_mm_srli_si128(b, 8))), m));
}

static void q8_0_avx2(const unsigned char *b, float *y, size_t n)
{
	for (size_t i = 0; i < n; i++, b += 34, y += 32) {
		__m256 d = _mm256_set1_ps(half_f16c(b));
		i8x32_mul(y, _mm256_loadu_si256((const __m256i *)(b + 2)), d);
	}
}

static void q4_0_avx2(const unsigned char *b, float *y, size_t n)
{
	const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	for (size_t i = 0; i < n; i++, b += 18, y += 32) {
		__m256 d = _mm256_set1_ps(half_f16c(b));
		__m128i q = _mm_loadu_si128((const __m128i *)(b + 2));
		__m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
		__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
		i8x32_mul(y, _mm256_set_m128i(hi, lo), d);
	}
}

/* d * sc[j] into dsc[j] and dmin * mn[j] into dmn[j] for the 8 sub-blocks
 * of a Q4_K / Q5_K block (scale_min's 6-bit numbers, unpacked four bytes
 * at a time; the same products as the scalar code's d1, dm1, ...). */
static inline void scales_mins(const unsigned char *s, float d, float dmin, float dsc[8],
			       float dmn[8])
{
	const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
	uint32_t u[3], sc[2], mn[2];
	memcpy(u, s, 12);
	sc[0] = u[0] & k1;
	sc[1] = (u[2] & k2) | (u[0] >> 6 & k3) << 4;
	mn[0] = u[1] & k1;
	mn[1] = (u[2] >> 4 & k2) | (u[1] >> 6 & k3) << 4;
	__m128i vs = _mm_loadl_epi64((const __m128i *)sc), vm = _mm_loadl_epi64((const __m128i *)mn);
	_mm256_storeu_ps(dsc, _mm256_mul_ps(_mm256_set1_ps(d), u8_ps(vs)));
	_mm256_storeu_ps(dmn, _mm256_mul_ps(_mm256_set1_ps(dmin), u8_ps(vm)));
}

/* Q4_K (qh NULL) and Q5_K. */
static void q45_k_avx2(const unsigned char *b, float *y, size_t n, bool five)
{
	const __m256i m4 = _mm256_set1_epi8(15), sixteen = _mm256_set1_epi8(16);
	size_t bb = five ? 176 : 144;
	for (size_t i = 0; i < n; i++, b += bb, y += 256) {
		float dsc[8], dmn[8];
		scales_mins(b + 4, half_f16c(b), half_f16c(b + 2), dsc, dmn);
		const unsigned char *qs = b + (five ? 48 : 16);
		__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(b + 16)) : _mm256_setzero_si256();
		for (int p = 0; p < 4; p++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
			__m256i lo = _mm256_and_si256(q, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			if (five) { /* bit 2p of qh[l] (lo), 2p + 1 (hi): 16 */
				__m256i b1 = _mm256_set1_epi8((char)(1 << 2 * p));
				__m256i b2 = _mm256_set1_epi8((char)(2 << 2 * p));
				lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(
								 _mm256_and_si256(qh, b1), b1), sixteen));
				hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(
								 _mm256_and_si256(qh, b2), b2), sixteen));
			}
			u8x32_mul_sub(y + 64 * p, lo, _mm256_set1_ps(dsc[2 * p]),
				      _mm256_set1_ps(dmn[2 * p]));
			u8x32_mul_sub(y + 64 * p + 32, hi, _mm256_set1_ps(dsc[2 * p + 1]),
				      _mm256_set1_ps(dmn[2 * p + 1]));
		}
	}
}

/* y[0 .. 31] = (d * sc0) * q[j] for j < 16, (d * sc1) * q[j] after: one of
 * Q6_K's quarters, whose 32 values take two scales. */
static inline void q6_quarter(float *y, __m256i q, float d, const signed char *sc)
{
	__m256 d0 = _mm256_set1_ps(d * (float)sc[0]), d1 = _mm256_set1_ps(d * (float)sc[1]);
	__m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
	_mm256_storeu_ps(y, _mm256_mul_ps(d0, i8_ps(a)));
	_mm256_storeu_ps(y + 8, _mm256_mul_ps(d0, i8_ps(_mm_srli_si128(a, 8))));
	_mm256_storeu_ps(y + 16, _mm256_mul_ps(d1, i8_ps(b)));
	_mm256_storeu_ps(y + 24, _mm256_mul_ps(d1, i8_ps(_mm_srli_si128(b, 8))));
}

static void q6_k_avx2(const unsigned char *b, float *y, size_t n)
{
	const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3 << 4);
	const __m256i m32 = _mm256_set1_epi8(32);
	for (size_t i = 0; i < n; i++, b += 210, y += 256) {
		const signed char *sc = (const signed char *)(b + 192);
		float d = half_f16c(b + 208);
		for (int h = 0; h < 2; h++) {
			__m256i l0 = _mm256_loadu_si256((const __m256i *)(b + 64 * h));
			__m256i l1 = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32));
			__m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
			/* quarter k: its 4 low bits, and bits 2k, 2k + 1 of qh at 4, 5 */
			__m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
						     _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
			__m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
						     _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
			__m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
						     _mm256_and_si256(qh, m2));
			__m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
						     _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
			float *yh = y + 128 * h;
			q6_quarter(yh, _mm256_sub_epi8(q0, m32), d, sc + 8 * h);
			q6_quarter(yh + 32, _mm256_sub_epi8(q1, m32), d, sc + 8 * h + 2);
			q6_quarter(yh + 64, _mm256_sub_epi8(q2, m32), d, sc + 8 * h + 4);
			q6_quarter(yh + 96, _mm256_sub_epi8(q3, m32), d, sc + 8 * h + 6);
		}
	}
}

/* The types above, n_blocks at src into dst; false for another type. */
static bool dequantize_avx2(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks)
{
	switch (t) {
	case GGML_Q8_0: q8_0_avx2(src, dst, n_blocks); return true;
	case GGML_Q4_0: q4_0_avx2(src, dst, n_blocks); return true;
	case GGML_Q4_K: q45_k_avx2(src, dst, n_blocks, false); return true;
	case GGML_Q5_K: q45_k_avx2(src, dst, n_blocks, true); return true;
	case GGML_Q6_K: q6_k_avx2(src, dst, n_blocks); return true;
	default: return false;
	}
}
#endif

/* ---------------------------------------------------------------- entry */

/* fast: the AVX2 version of the type where this build has one. */
static void dequantize(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks,
		       bool fast)
{
	size_t bv = ggml_block_values(t), bb = ggml_block_bytes(t);
	if (!bv)
		die("ggml_dequantize: type %u is not read", t);
	if (t == GGML_F32 || t == GGML_F16 || t == GGML_BF16) {
		dtype_to_f32(dst, src, n_blocks,
			     t == GGML_F32 ? DTYPE_F32 : t == GGML_F16 ? DTYPE_F16 : DTYPE_BF16);
		return;
	}
#ifdef QUANT_AVX2
	if (fast && dequantize_avx2(t, src, dst, n_blocks))
		return;
#else
	(void)fast;
#endif
	for (size_t i = 0; i < n_blocks; i++, src += bb, dst += bv) {
		switch (t) {
		case GGML_Q8_0: q8_0(src, dst); break;
		case GGML_Q4_0: q4(src, dst, false); break;
		case GGML_Q4_1: q4(src, dst, true); break;
		case GGML_Q5_0: q5(src, dst, false); break;
		case GGML_Q5_1: q5(src, dst, true); break;
		case GGML_Q2_K: q2_k(src, dst); break;
		case GGML_Q3_K: q3_k(src, dst); break;
		case GGML_Q4_K: q45_k(src, dst, false); break;
		case GGML_Q5_K: q45_k(src, dst, true); break;
		case GGML_Q6_K: q6_k(src, dst); break;
		default: die("ggml_dequantize: type %u has no dequantizer", t);
		}
	}
}

void ggml_dequantize(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks)
{
	dequantize(t, src, dst, n_blocks, true);
}

void ggml_dequantize_ref(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks)
{
	dequantize(t, src, dst, n_blocks, false);
}
