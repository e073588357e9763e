/*
 * held.c — products with weights held in their stored type (held.h).
 *
 * Many rows of input (a pass over a text): F16 and BF16 rows are read in
 * their width by gemmw.h's tiles where it is built; other types' rows
 * (and 16-bit ones elsewhere) are converted to F32 a tile at a time
 * (16 MiB) and each tile's columns of the output come from one product,
 * gemmw.h's F32 rows where it is built, else OpenBLAS's sgemm.
 * Converting costs one read of the weight per pass against 2 N flops per
 * weight: small beside the product from a few dozen rows on.  A few rows (a decoder step): each
 * weight row is dotted with every input row, converted in registers (F16,
 * BF16) or into a scratch row (the block types), so the weight is
 * streamed once in its own width.
 */
#include "held.h"

#include "gemmw.h"
#include "quant.h"
#include "split.h"
#include "util.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define HELD_AVX2 1
#endif

#define GEMV_ROWS 4		 /* up to this many input rows: row-by-row dots */
#define TILE_FLOATS ((size_t)1 << 22) /* 16 MiB of F32 weight rows a tile */

static bool use_gemmw = true;

void held_use_gemmw(bool on)
{
	use_gemmw = on;
}

/* ---------------------------------------------------------------- parts */

size_t held_row_bytes(uint32_t t, int cols)
{
	size_t bv = ggml_block_values(t);
	if (!bv || cols <= 0 || (size_t)cols % bv)
		return 0;
	return (size_t)cols / bv * ggml_block_bytes(t);
}

unsigned char *held_add_part(struct held_mat *h, int r0, int n, uint32_t t)
{
	size_t rb = held_row_bytes(t, h->cols);
	if (!rb || n <= 0 || r0 < 0 || r0 > h->rows - n || h->n_parts >= HELD_MAX_PARTS)
		return NULL;
	for (int i = 0; i < h->n_parts; i++)
		if (r0 < h->part[i].r0 + h->part[i].rows && h->part[i].r0 < r0 + n)
			return NULL;
	struct held_part *p = &h->part[h->n_parts++];
	*p = (struct held_part){ .type = t, .r0 = r0, .rows = n, .row_bytes = rb };
	p->data = xmalloc_aligned((size_t)n * rb);
	return p->data;
}

bool held_complete(const struct held_mat *h)
{
	long n = 0;
	for (int i = 0; i < h->n_parts; i++)
		n += h->part[i].rows;
	return h->rows > 0 && n == h->rows; /* parts never overlap (held_add_part) */
}

size_t held_bytes(const struct held_mat *h)
{
	size_t n = 0;
	for (int i = 0; i < h->n_parts; i++)
		n += (size_t)h->part[i].rows * h->part[i].row_bytes;
	return n;
}

uint32_t held_type(const struct held_mat *h)
{
	for (int i = 1; i < h->n_parts; i++)
		if (h->part[i].type != h->part[0].type)
			return (uint32_t)-1;
	return h->n_parts ? h->part[0].type : (uint32_t)-1;
}

void held_free(struct held_mat *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->n_parts; i++)
		free(h->part[i].data);
	h->n_parts = 0;
}

/* --------------------------------------------------------- conversions */

/* The cols values of part p's row r (of the part) into dst. */
static void part_row(const struct held_part *p, int r, int cols, float *dst)
{
	const unsigned char *src = p->data + (size_t)r * p->row_bytes;
#ifdef HELD_AVX2
	int j = 0;
	if (p->type == GGML_F16) {
		for (; j + 8 <= cols; j += 8)
			_mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(
							  (const __m128i *)(src + 2 * (size_t)j))));
	} else if (p->type == GGML_BF16) {
		for (; j + 8 <= cols; j += 8) {
			__m256i v = _mm256_cvtepu16_epi32(
				_mm_loadu_si128((const __m128i *)(src + 2 * (size_t)j)));
			_mm256_storeu_ps(dst + j, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
		}
	}
	if (j) { /* the 16-bit types' tail, one value a block */
		ggml_dequantize(p->type, src + 2 * (size_t)j, dst + j, (size_t)(cols - j));
		return;
	}
#endif
	ggml_dequantize(p->type, src, dst, (size_t)cols / ggml_block_values(p->type));
}

/* The part holding row r, or NULL. */
static const struct held_part *part_of(const struct held_mat *h, int r)
{
	for (int i = 0; i < h->n_parts; i++)
		if (r >= h->part[i].r0 && r < h->part[i].r0 + h->part[i].rows)
			return &h->part[i];
	return NULL;
}

void held_rows(const struct held_mat *h, int r0, int n, float *dst)
{
	for (int r = r0; r < r0 + n; r++) {
		const struct held_part *p = part_of(h, r);
		if (!p)
			die("held_rows: row %d of a %d-row matrix is in no part", r, h->rows);
		part_row(p, r - p->r0, h->cols, dst + (size_t)(r - r0) * h->cols);
	}
}

/* ------------------------------------------------------------ products */

/* Scratch of thread t (0 or 1), grown to n floats. */
static float *scratch[2];
static size_t scratch_n[2];

static float *scratch_get(int t, size_t n)
{
	if (n > scratch_n[t]) {
		free(scratch[t]);
		scratch[t] = xmalloc_aligned(n * sizeof(float));
		scratch_n[t] = n;
	}
	return scratch[t];
}

void held_scratch_free(void)
{
	for (int t = 0; t < 2; t++) {
		free(scratch[t]);
		scratch[t] = NULL;
		scratch_n[t] = 0;
	}
}

static float dot(const float *a, const float *b, int n)
{
	int j = 0;
	float s = 0.0f;
#ifdef HELD_AVX2
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	for (; j + 16 <= n; j += 16) {
		acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc0);
		acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(b + j + 8), acc1);
	}
	__m256 acc = _mm256_add_ps(acc0, acc1);
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_movehdup_ps(q));
	s = _mm_cvtss_f32(q);
#endif
	for (; j < n; j++)
		s += a[j] * b[j];
	return s;
}

#ifdef HELD_AVX2
/* Eight values of a 16-bit row at src as F32 (both conversions exact). */
static inline __m256 load8_16(const unsigned char *src, uint32_t type)
{
	__m128i h = _mm_loadu_si128((const __m128i *)src);
	if (type == GGML_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline float hsum8(__m256 acc)
{
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}

/* A 16-bit row (F16 or BF16, IC values at src) dotted with N input rows
 * (in, IC apart) into out[0], out[OC], ...: converted in registers, never
 * stored, each sum added in dot()'s order, so the results are its bit for
 * bit.  N is a constant where it is inlined (dots16). */
static inline __attribute__((always_inline)) void dots16_n(const unsigned char *src,
							   uint32_t type, const float *in,
							   int IC, float *out, int OC, const int N)
{
	__m256 a0[GEMV_ROWS], a1[GEMV_ROWS];
	for (int i = 0; i < N; i++)
		a0[i] = a1[i] = _mm256_setzero_ps();
	int j = 0;
	for (; j + 16 <= IC; j += 16) {
		__m256 w0 = load8_16(src + 2 * (size_t)j, type);
		__m256 w1 = load8_16(src + 2 * (size_t)(j + 8), type);
		for (int i = 0; i < N; i++) {
			const float *x = in + (size_t)i * IC + j;
			a0[i] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), a0[i]);
			a1[i] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), a1[i]);
		}
	}
	float tail[16];
	if (j < IC)
		ggml_dequantize(type, src + 2 * (size_t)j, tail, (size_t)(IC - j));
	for (int i = 0; i < N; i++) {
		float s = hsum8(_mm256_add_ps(a0[i], a1[i]));
		const float *x = in + (size_t)i * IC;
		for (int k = j; k < IC; k++)
			s += tail[k - j] * x[k];
		out[(size_t)i * OC] = s;
	}
}

static void dots16(const unsigned char *src, uint32_t type, const float *in, int N, int IC,
		   float *out, int OC)
{
	switch (N) {
	case 1: dots16_n(src, type, in, IC, out, OC, 1); break;
	case 2: dots16_n(src, type, in, IC, out, OC, 2); break;
	case 3: dots16_n(src, type, in, IC, out, OC, 3); break;
	default: dots16_n(src, type, in, IC, out, OC, 4); break;
	}
}
#endif

/* What a split job reads: a part, its rows' destination, the input. */
struct job {
	const struct held_part *p;
	const float *in;
	float *out; /* part_dots: the product; part_tiles: the tile */
	int N, IC, OC, r; /* r: the tile's first row in the part */
};

/* Rows lo .. hi - 1 of the part: each converted, dotted with every input row. */
static void dots_rows(void *ctx, int lo, int hi, int t)
{
	const struct job *j = ctx;
#ifdef HELD_AVX2
	if (j->p->type == GGML_F16 || j->p->type == GGML_BF16) {
		size_t rb = j->p->row_bytes;
		for (int r = lo; r < hi; r++)
			dots16(j->p->data + (size_t)r * rb, j->p->type, j->in, j->N, j->IC,
			       j->out + j->p->r0 + r, j->OC);
		return;
	}
#endif
	float *row = scratch_get(t, (size_t)j->IC);
	for (int r = lo; r < hi; r++) {
		part_row(j->p, r, j->IC, row);
		for (int i = 0; i < j->N; i++)
			j->out[(size_t)i * j->OC + j->p->r0 + r] =
				dot(row, j->in + (size_t)i * j->IC, j->IC);
	}
}

/* Rows lo .. hi - 1 of the tile converted into it. */
static void tile_rows(void *ctx, int lo, int hi, int t)
{
	(void)t;
	const struct job *j = ctx;
	for (int k = lo; k < hi; k++)
		part_row(j->p, j->r + k, j->IC, j->out + (size_t)k * j->IC);
}

/* A few rows: each weight row converted once, dotted with every input row. */
static void part_dots(float *out, const float *in, const struct held_part *p, int N, int IC,
		      int OC)
{
	struct job j = { p, in, out, N, IC, OC, 0 };
	split_rows(dots_rows, &j, p->rows, 64);
}

/* Many rows: a tile of weight rows converted, then one product into its
 * columns of out: gemmw.h's F32 rows where it is built and wanted, else
 * OpenBLAS's sgemm. */
static void part_tiles(float *out, const float *in, const struct held_part *p, int N, int IC,
		       int OC)
{
	int tile = (int)(TILE_FLOATS / (size_t)IC);
	if (tile < 16)
		tile = 16;
	if (tile > p->rows)
		tile = p->rows;
	float *w = scratch_get(0, (size_t)tile * IC);
	for (int r = 0; r < p->rows; r += tile) {
		int n = p->rows - r < tile ? p->rows - r : tile;
		struct job j = { p, in, w, N, IC, OC, r };
		split_rows(tile_rows, &j, n, 64);
		if (use_gemmw && gemmw_available())
			gemmw_split(out + p->r0 + r, OC, in, N, IC, (const unsigned char *)w,
				    (size_t)IC * sizeof(float), GGML_F32, n);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, n, IC, 1.0f, in, IC,
				    w, IC, 0.0f, out + p->r0 + r, OC);
	}
}

/* Many rows of a 16-bit part: its rows read in their width (gemmw.h). */
static bool part_gemmw(float *out, const float *in, const struct held_part *p, int N, int IC,
			int OC)
{
	if (!use_gemmw || !gemmw_available() ||
	    (p->type != GGML_F16 && p->type != GGML_BF16))
		return false;
	gemmw_split(out + p->r0, OC, in, N, IC, p->data, p->row_bytes, p->type, p->rows);
	return true;
}

void held_matmul(float *out, const float *in, const struct held_mat *h, const float *bias,
		 int N)
{
	int IC = h->cols, OC = h->rows;
	for (int i = 0; i < h->n_parts; i++) {
		if (N <= GEMV_ROWS)
			part_dots(out, in, &h->part[i], N, IC, OC);
		else if (!part_gemmw(out, in, &h->part[i], N, IC, OC))
			part_tiles(out, in, &h->part[i], N, IC, OC);
	}
	if (bias) /* after the product, as matmul_forward adds it */
		for (int i = 0; i < N; i++) {
			float *o = out + (size_t)i * OC;
			for (int j = 0; j < OC; j++)
				o[j] += bias[j];
		}
}
