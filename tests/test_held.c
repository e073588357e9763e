/*
 * test_held.c — weight matrices held in their stored type (held.h,
 * held.c), against quant.c's ggml_dequantize of the same bytes and a
 * double-precision product of its floats.  Every matrix is seeded random
 * bytes valid for its type: F16 any pattern but Inf / NaN (subnormals and
 * 65504 included), F32 and BF16 random signs and mantissas with
 * exponents from 2^-26 to 2^12 (zeros and subnormals among them), the
 * block types random bytes with finite halves for d, m and dmin.
 *   - every type attnscope reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
 *     Q5_1, Q2_K .. Q6_K), 37 rows of 2 blocks (64 or 512 columns; the
 *     one-value types 7, 40 and 43 columns: no 8-value step, no tail, a
 *     tail of 3 in the AVX2 conversion): held_rows of all rows and of
 *     rows 5 .. 11 equals ggml_dequantize bit for bit;
 *   - held_matmul for N = 1, 2, 4 (one weight row at a time beside the
 *     dots) and N = 5, 33 (tiles and sgemm), with and without a bias,
 *     writes every element of out within 1e-5 (sum |w x| + |bias|) + 1e-6
 *     of the double-precision reference;
 *   - for N <= 4 each row of the product equals the product of that input
 *     row alone bit for bit (held.c converts each weight row and dots it
 *     with every input row, so a decoder step's output does not depend
 *     on the rows beside it);
 *   - a matrix of a Q4_K, a Q8_0 and a BF16 part (256 columns), added
 *     last rows first, is complete only once all three are added, and
 *     its rows and products match as above; held_add_part refuses
 *     overlapping rows, rows outside the matrix, a fifth part and columns
 *     that are not whole blocks (or a type it does not read), and a
 *     refusal leaves the matrix as it was;
 *   - 64 columns of F16 over 65553 rows (one 65536-row tile, TILE_FLOATS /
 *     cols, and part of another), alone and as a part from row 17 after
 *     an F32 part, and 300 Q8_0 rows of 32800 columns (tiles of 127, 127
 *     and 46 rows), for N = 6 against the reference;
 *   - with two BLAS threads (a helper thread converts half of each tile
 *     and dots half of the rows) the products of 150-row F16, BF16, Q8_0
 *     and Q4_K matrices meet the reference, and for N <= 4 equal the
 *     one-thread products bit for bit, as do those for N = 33 where
 *     gemmw.h is built;
 *   - gemmw.h's product of F16 and BF16 rows (7, 16, 43, 901 and 2053 columns;
 *     1, 4, 5 and 13 rows; N from 5 to 33) meets the reference, each
 *     element equals the same element made alone bit for bit, and the
 *     F32-tile path it replaces meets the reference too;
 *   - for N <= 4, F16 and BF16 rows (7, 16, 40, 43 and 901 columns: tails
 *     of every length class) give the product of the same values held as
 *     F32 bit for bit (the 16-bit rows are converted in registers, the F32
 *     ones through a scratch row: one order of the sums);
 *   - ggml_first_nonfinite names the block whose values the reference
 *     dequantization first makes Inf or NaN, for every type: none in
 *     valid blocks (halves up to +-65504), else the block given an Inf or
 *     NaN half (or value), every value of which is then not finite;
 *   - held_row_bytes, held_bytes and held_type give the layouts' numbers;
 *     held_free accepts NULL, a zeroed and a half-built matrix, and a
 *     second call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmw.h"
#include "held.h"
#include "model.h"
#include "quant.h"
#include "util.h"

enum { ROWS = 37, GEMV_N = 4 /* held.c's GEMV_ROWS: up to it, row dots */ };

static const int ns[] = { 1, 2, 4, 5, 33 }; /* <= 4: row dots; more: tiles */
#define N_NS (int)(sizeof ns / sizeof ns[0])

static int group_setup(void **state)
{
	(void)state;
	engine_set_threads(1);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	held_scratch_free();
	return 0;
}

/* ---------------------------------------------------------------- inputs */

static void half_at(unsigned char *p, float x)
{
	uint16_t h = f32_to_f16(x);
	p[0] = (unsigned char)h;
	p[1] = (unsigned char)(h >> 8);
}

/* Byte offsets of the IEEE halves (d, m, dmin) in a block of type t
 * (quant.h's layouts); returns how many. */
static int half_offsets(uint32_t t, int off[2])
{
	switch (t) {
	case GGML_Q8_0: case GGML_Q4_0: case GGML_Q5_0:
		off[0] = 0;
		return 1;
	case GGML_Q4_1: case GGML_Q5_1: case GGML_Q4_K: case GGML_Q5_K:
		off[0] = 0, off[1] = 2;
		return 2;
	case GGML_Q2_K:
		off[0] = 80, off[1] = 82;
		return 2;
	case GGML_Q3_K:
		off[0] = 108;
		return 1;
	case GGML_Q6_K:
		off[0] = 208;
		return 1;
	}
	return 0;
}

/* A random exponent field for F32 / BF16 (bias 127): one in 40 is 0 (zero
 * or subnormal), the rest 2^-26 .. 2^12, so products stay finite. */
static uint32_t some_exponent(struct rng *r)
{
	uint32_t e = rng_u32(r) % 40;
	return e ? 100 + e : 0;
}

/* n_bytes of random valid data of type t (whole blocks) into b. */
static void random_bytes(uint32_t t, unsigned char *b, size_t n_bytes, struct rng *r)
{
	for (size_t i = 0; i < n_bytes; i++)
		b[i] = (unsigned char)rng_u32(r);
	size_t bb = ggml_block_bytes(t);
	for (size_t k = 0; k < n_bytes; k += bb) {
		unsigned char *p = b + k;
		if (t == GGML_F16 && (p[1] & 0x7c) == 0x7c) { /* exponent 31: Inf / NaN */
			p[1] = (unsigned char)((p[1] & 0x83) | (rng_u32(r) % 31) << 2);
		} else if (t == GGML_BF16) {
			uint32_t e = some_exponent(r);
			p[1] = (unsigned char)((p[1] & 0x80) | e >> 1);
			p[0] = (unsigned char)((p[0] & 0x7f) | (e & 1) << 7);
		} else if (t == GGML_F32) {
			uint32_t e = some_exponent(r);
			p[3] = (unsigned char)((p[3] & 0x80) | e >> 1);
			p[2] = (unsigned char)((p[2] & 0x7f) | (e & 1) << 7);
		} else {
			int off[2], n = half_offsets(t, off);
			for (int j = 0; j < n; j++)
				half_at(p + off[j], (rng_uniform(r) - 0.5f) * 0.2f);
		}
	}
}

static float *random_floats(size_t n, struct rng *r)
{
	float *x = xmalloc(n * sizeof *x);
	for (size_t i = 0; i < n; i++)
		x[i] = rng_normal(r);
	return x;
}

/* Adds rows r0 .. r0 + n - 1 of type t to h, filled with random bytes, and
 * writes their ggml_dequantize floats into W (h->rows, h->cols). */
static void add_random_part(struct held_mat *h, int r0, int n, uint32_t t, float *W,
			    struct rng *r)
{
	unsigned char *b = held_add_part(h, r0, n, t);
	if (!b)
		fail_msg("%s: held_add_part(r0 %d, n %d) of a %d x %d matrix refused",
			 ggml_type_name(t), r0, n, h->rows, h->cols);
	size_t rb = held_row_bytes(t, h->cols);
	random_bytes(t, b, (size_t)n * rb, r);
	ggml_dequantize(t, b, W + (size_t)r0 * h->cols,
			(size_t)n * h->cols / ggml_block_values(t));
}

/* ------------------------------------------------------------ the checks */

/* got (n values, rows of cols) equals want bit for bit; else fails with
 * how many differ and the one that differs most (a NaN the most). */
static void same_bits(const float *got, const float *want, size_t n, int cols, int row0,
		      const char *what)
{
	size_t bad = 0, wk = 0;
	double worst = -1;
	for (size_t k = 0; k < n; k++)
		if (memcmp(&got[k], &want[k], sizeof *got) != 0) {
			double d = fabs((double)got[k] - want[k]);
			if (isnan(d))
				d = INFINITY;
			if (bad++ == 0 || d > worst)
				worst = d, wk = k;
		}
	if (bad)
		fail_msg("%s: %zu of %zu values differ; the most at row %zu column %zu: %.9g, want "
			 "%.9g", what, bad, n, row0 + wk / cols, wk % cols, (double)got[wk],
			 (double)want[wk]);
}

/* held_rows (all rows, then rows 5 .. 11) equals W bit for bit. */
static void check_rows(const struct held_mat *h, const float *W, const char *what)
{
	size_t n = (size_t)h->rows * h->cols;
	char part[96];
	float *got = xmalloc(n * sizeof *got);
	memset(got, 0xff, n * sizeof *got); /* NaN: a value never written shows */
	held_rows(h, 0, h->rows, got);
	snprintf(part, sizeof part, "%s, held_rows(0, %d) against ggml_dequantize", what, h->rows);
	same_bits(got, W, n, h->cols, 0, part);
	if (h->rows > 11) {
		memset(got, 0xff, n * sizeof *got);
		held_rows(h, 5, 7, got);
		snprintf(part, sizeof part, "%s, held_rows(5, 7) against ggml_dequantize", what);
		same_bits(got, W + 5 * (size_t)h->cols, 7 * (size_t)h->cols, h->cols, 5, part);
	}
	free(got);
}

struct worst {
	double err, ratio; /* largest |a - ref| and largest |a - ref| / tolerance */
};

/* out (N, OC) against in (N, IC) · W^T + bias in double: every element
 * within 1e-5 (sum |w x| + |bias|) + 1e-6.  Prints the worst element and
 * fails when one is not (NaN included). */
static void check_product(const float *out, const float *in, const float *W, const float *bias,
			  int N, int OC, int IC, const char *what, struct worst *w)
{
	double worst = -1, wref = 0, wtol = 0;
	int wi = 0, wj = 0;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < OC; j++) {
			double ref = 0, mag = 0;
			for (int k = 0; k < IC; k++) {
				double p = (double)W[(size_t)j * IC + k] * in[(size_t)i * IC + k];
				ref += p;
				mag += fabs(p);
			}
			if (bias) {
				ref += bias[j];
				mag += fabs(bias[j]);
			}
			double a = out[(size_t)i * OC + j], err = fabs(a - ref);
			double tol = 1e-5 * mag + 1e-6, ratio = err / tol;
			if (isnan(ratio))
				ratio = INFINITY;
			w->err = fmax(w->err, err);
			if (ratio > worst) {
				worst = ratio;
				wi = i, wj = j, wref = ref, wtol = tol;
			}
		}
	w->ratio = fmax(w->ratio, worst);
	if (!(worst <= 1))
		fail_msg("%s, N %d%s: out[%d][%d] = %.9g, reference %.9g, error %.3g > tolerance "
			 "%.3g", what, N, bias ? " with bias" : "", wi, wj,
			 (double)out[(size_t)wi * OC + wj], wref, fabs(out[(size_t)wi * OC + wj] - wref),
			 wtol);
}

/* held_matmul of h for every N of ns, with and without bias, against W;
 * for N <= 4 also each row alone, bit for bit.  Returns the worst. */
static struct worst check_products(const struct held_mat *h, const float *W, const char *what,
				   struct rng *r)
{
	int OC = h->rows, IC = h->cols, nmax = ns[N_NS - 1];
	float *in = random_floats((size_t)nmax * IC, r), *bias = random_floats((size_t)OC, r);
	float *out = xmalloc((size_t)nmax * OC * sizeof *out), *one = xmalloc(OC * sizeof *one);
	struct worst w = { 0, 0 };
	for (int k = 0; k < N_NS; k++)
		for (int b = 0; b < 2; b++) {
			int N = ns[k];
			const float *bs = b ? bias : NULL;
			memset(out, 0xff, (size_t)N * OC * sizeof *out); /* NaN */
			held_matmul(out, in, h, bs, N);
			check_product(out, in, W, bs, N, OC, IC, what, &w);
			for (int i = 0; N > 1 && N <= 4 && i < N; i++) {
				char row[96];
				snprintf(row, sizeof row, "%s, N %d%s: out's row %d against that "
					 "input row alone", what, N, bs ? " with bias" : "", i);
				memset(one, 0xff, OC * sizeof *one);
				held_matmul(one, in + (size_t)i * IC, h, bs, 1);
				same_bits(out + (size_t)i * OC, one, (size_t)OC, OC, 0, row);
			}
		}
	free(in);
	free(bias);
	free(out);
	free(one);
	return w;
}

/* --------------------------------------------------------------- types */

static const uint32_t all_types[] = {
	GGML_F32, GGML_F16, GGML_BF16, GGML_Q8_0, GGML_Q4_0, GGML_Q4_1, GGML_Q5_0,
	GGML_Q5_1, GGML_Q2_K, GGML_Q3_K, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K,
};

static void test_types(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 20251205);
	for (size_t k = 0; k < sizeof all_types / sizeof all_types[0]; k++) {
		uint32_t t = all_types[k];
		size_t bv = ggml_block_values(t);
		int cols_one[] = { 7, 40, 43 }, cols_block[] = { 2 * (int)bv };
		int *cols = bv == 1 ? cols_one : cols_block, n_cols = bv == 1 ? 3 : 1;
		for (int c = 0; c < n_cols; c++) {
			struct held_mat h = { .rows = ROWS, .cols = cols[c] };
			float *W = xmalloc((size_t)ROWS * cols[c] * sizeof *W);
			add_random_part(&h, 0, ROWS, t, W, &r);
			assert_true(held_complete(&h));
			char what[64];
			snprintf(what, sizeof what, "%s, %d x %d", ggml_type_name(t), ROWS, cols[c]);
			check_rows(&h, W, what);
			struct worst w = check_products(&h, W, what, &r);
			printf("  %-18s rows exact; products worst error %.3g, %.3f of tolerance\n",
			       what, w.err, w.ratio);
			held_free(&h);
			free(W);
		}
	}
}

/* ---------------------------------------------------------- mixed parts */

static void test_mixed_parts(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 77);
	struct held_mat h = { .rows = ROWS, .cols = 256 };
	float *W = xmalloc((size_t)ROWS * 256 * sizeof *W);
	assert_false(held_complete(&h));
	add_random_part(&h, 29, 8, GGML_BF16, W, &r); /* the last rows first */
	assert_false(held_complete(&h));
	assert_int_equal(held_type(&h), GGML_BF16);
	add_random_part(&h, 0, 16, GGML_Q4_K, W, &r);
	assert_false(held_complete(&h));
	assert_int_equal(held_type(&h), (uint32_t)-1);

	/* refusals leave h as it was */
	assert_null(held_add_part(&h, 10, 10, GGML_Q8_0)); /* into Q4_K's 0 .. 15 */
	assert_null(held_add_part(&h, 28, 2, GGML_Q8_0));  /* into BF16's 29 .. 36 */
	assert_null(held_add_part(&h, 0, ROWS, GGML_Q8_0)); /* over both */
	assert_null(held_add_part(&h, 16, 14, GGML_Q8_0)); /* 16 .. 29 */
	assert_null(held_add_part(&h, 16, 13, 15)); /* Q8_K: not read */
	assert_int_equal(h.n_parts, 2);
	assert_false(held_complete(&h));

	add_random_part(&h, 16, 13, GGML_Q8_0, W, &r); /* 16 .. 28: exactly the gap */
	assert_true(held_complete(&h));
	assert_int_equal(held_type(&h), (uint32_t)-1);
	/* rows * row bytes: Q4_K 144 a 256-value block, Q8_0 34 a 32-value
	 * block, BF16 2 a value */
	assert_int_equal(held_bytes(&h), 16 * 144 + 13 * 8 * 34 + 8 * 256 * 2);
	check_rows(&h, W, "Q4_K + Q8_0 + BF16");
	struct worst w = check_products(&h, W, "Q4_K + Q8_0 + BF16", &r);
	printf("  Q4_K 0-15, Q8_0 16-28, BF16 29-36 (added BF16, Q4_K, Q8_0): rows exact; "
	       "products worst error %.3g, %.3f of tolerance\n", w.err, w.ratio);
	held_free(&h);
	assert_int_equal(h.n_parts, 0);
	free(W);
}

static void test_refused(void **state)
{
	(void)state;
	struct held_mat h = { .rows = ROWS, .cols = 64 };
	assert_null(held_add_part(&h, 30, 8, GGML_Q8_0)); /* rows 30 .. 37 of 0 .. 36 */
	assert_null(held_add_part(&h, ROWS, 1, GGML_Q8_0));
	assert_null(held_add_part(&h, -1, 2, GGML_Q8_0));
	assert_null(held_add_part(&h, 0, 0, GGML_Q8_0));
	assert_null(held_add_part(&h, 0, -3, GGML_Q8_0));
	assert_null(held_add_part(&h, 0, ROWS + 1, GGML_Q8_0));
	assert_null(held_add_part(&h, 0, ROWS, GGML_Q4_K)); /* 64 columns: a quarter block */
	assert_null(held_add_part(&h, 0, ROWS, 9));	    /* Q8_1: not read */
	assert_null(held_add_part(&h, 0, ROWS, 99));
	assert_int_equal(h.n_parts, 0);

	/* columns that are not whole blocks; the one-value types take any */
	struct held_mat c40 = { .rows = 4, .cols = 40 };
	assert_null(held_add_part(&c40, 0, 4, GGML_Q8_0));
	assert_null(held_add_part(&c40, 0, 4, GGML_Q4_0));
	assert_null(held_add_part(&c40, 0, 4, GGML_Q5_1));
	assert_int_equal(c40.n_parts, 0);
	assert_non_null(held_add_part(&c40, 0, 2, GGML_F16));
	assert_non_null(held_add_part(&c40, 2, 2, GGML_BF16));
	assert_true(held_complete(&c40));
	held_free(&c40);
	struct held_mat c300 = { .rows = 4, .cols = 300 };
	assert_null(held_add_part(&c300, 0, 4, GGML_Q6_K));
	assert_null(held_add_part(&c300, 0, 4, GGML_Q8_0));
	assert_int_equal(c300.n_parts, 0);

	/* a fifth part, even for rows no part holds */
	struct held_mat f = { .rows = 9, .cols = 32 };
	for (int i = 0; i < HELD_MAX_PARTS; i++)
		assert_non_null(held_add_part(&f, 2 * i, 2, i % 2 ? GGML_Q8_0 : GGML_Q4_1));
	assert_false(held_complete(&f)); /* row 8 */
	assert_null(held_add_part(&f, 8, 1, GGML_Q8_0));
	assert_int_equal(f.n_parts, HELD_MAX_PARTS);
	assert_false(held_complete(&f));
	held_free(&f);
}

/* ---------------------------------------------------------------- tiles */

/* Products over more than one tile (held.c: 2^19 / cols rows a tile, at
 * least 16), N = 6 with and without bias: 8209 F16 rows of 64 columns (a
 * full 8192-row tile and a partial one), alone and as rows 17 .. 8225
 * added before an F32 part of rows 0 .. 16; and 37 Q8_0 rows of 32800
 * columns (15 rows a tile, raised to 16: tiles of 16, 16 and 5). */
static void test_tiles(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		int cols, rows, lead; /* lead > 0: an F32 part of rows 0 .. lead - 1 */
		uint32_t type;
	} cases[] = {
		{ "F16 65553 x 64", 64, 65553, 0, GGML_F16 },
		{ "F32 0-16 + F16 17-65569", 64, 65553, 17, GGML_F16 },
		{ "Q8_0 300 x 32800", 32800, 300, 0, GGML_Q8_0 },
	};
	struct rng r;
	rng_seed(&r, 8209);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int C = cases[k].cols, lead = cases[k].lead, rows = cases[k].rows + lead;
		struct held_mat h = { .rows = rows, .cols = C };
		float *W = xmalloc((size_t)rows * C * sizeof *W);
		add_random_part(&h, lead, cases[k].rows, cases[k].type, W, &r);
		if (lead)
			add_random_part(&h, 0, lead, GGML_F32, W, &r);
		assert_true(held_complete(&h));
		float *in = random_floats((size_t)6 * C, &r), *bias = random_floats((size_t)rows, &r);
		float *out = xmalloc((size_t)6 * rows * sizeof *out);
		struct worst w = { 0, 0 };
		for (int b = 0; b < 2; b++) {
			memset(out, 0xff, (size_t)6 * rows * sizeof *out);
			held_matmul(out, in, &h, b ? bias : NULL, 6);
			check_product(out, in, W, b ? bias : NULL, 6, rows, C, cases[k].what, &w);
		}
		printf("  %-22s N 6: products worst error %.3g, %.3f of tolerance\n", cases[k].what,
		       w.err, w.ratio);
		held_free(&h);
		free(W);
		free(in);
		free(bias);
		free(out);
	}
}

/* -------------------------------------------------------------- threads */

/* The product of 33 input rows (gemmw where built: 16-bit rows read in
 * their width, the other types' F32 tiles; else tiles and sgemm) with two
 * threads equals the one-thread product bit for bit: the threads split the
 * weight rows, and each element is summed alone. */
static void many_rows_split(const struct held_mat *h, int cols, struct rng *r)
{
	enum { N = 33 };
	float *in = random_floats((size_t)N * cols, r);
	float *one = xmalloc((size_t)N * h->rows * sizeof *one);
	float *two = xmalloc((size_t)N * h->rows * sizeof *two);
	held_matmul(one, in, h, NULL, N);
	engine_set_threads(2);
	held_matmul(two, in, h, NULL, N);
	engine_set_threads(1);
	if (gemmw_available())
		same_bits(two, one, (size_t)N * h->rows, h->rows, 0,
			  "N 33 with two threads against one");
	free(in);
	free(one);
	free(two);
}

static void test_threads(void **state)
{
	(void)state;
	static const uint32_t types[] = { GGML_F16, GGML_BF16, GGML_Q8_0, GGML_Q4_K };
	struct rng r;
	rng_seed(&r, 150);
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int cols = 2 * (int)(ggml_block_values(types[k]) > 1 ? ggml_block_values(types[k]) : 40);
		struct held_mat h = { .rows = 150, .cols = cols };
		float *W = xmalloc((size_t)150 * cols * sizeof *W);
		add_random_part(&h, 0, 150, types[k], W, &r);
		float *in = random_floats((size_t)4 * cols, &r);
		float *one = xmalloc((size_t)4 * 150 * sizeof *one);
		held_matmul(one, in, &h, NULL, 4); /* one thread */
		char what[64];
		snprintf(what, sizeof what, "%s, 150 x %d, two threads", ggml_type_name(types[k]), cols);
		engine_set_threads(2);
		struct worst w = check_products(&h, W, what, &r);
		float *two = xmalloc((size_t)4 * 150 * sizeof *two);
		held_matmul(two, in, &h, NULL, 4);
		engine_set_threads(1);
		same_bits(two, one, (size_t)4 * 150, 150, 0, "N 4 with two threads against one");
		many_rows_split(&h, cols, &r);
		printf("  %-28s products worst error %.3g, %.3f of tolerance\n", what, w.err, w.ratio);
		held_free(&h);
		free(W);
		free(in);
		free(one);
		free(two);
	}
}

/* ------------------------------------------------- 16-bit rows in registers */

/* A decoder step's product of F16 and BF16 rows (converted in registers,
 * held.c's dots16) equals, bit for bit, the product of the same values
 * held as F32 (converted into a scratch row and dotted there): the sums
 * are added in one order, whatever the width's tail. */
static void test_16bit_dots(void **state)
{
	(void)state;
	static const uint32_t types[] = { GGML_F16, GGML_BF16 };
	static const int widths[] = { 7, 16, 40, 43, 901 };
	struct rng r;
	rng_seed(&r, 16);
	for (size_t k = 0; k < 2; k++)
		for (size_t c = 0; c < sizeof widths / sizeof widths[0]; c++) {
			int cols = widths[c];
			struct held_mat h = { .rows = ROWS, .cols = cols }, f = h;
			float *W = xmalloc((size_t)ROWS * cols * sizeof *W);
			add_random_part(&h, 0, ROWS, types[k], W, &r);
			unsigned char *b = held_add_part(&f, 0, ROWS, GGML_F32);
			assert_non_null(b);
			memcpy(b, W, (size_t)ROWS * cols * sizeof *W);
			float *in = random_floats((size_t)GEMV_N * cols, &r);
			float got[GEMV_N * ROWS], want[GEMV_N * ROWS];
			for (int n = 1; n <= GEMV_N; n++) {
				char what[64];
				snprintf(what, sizeof what, "%s, %d columns, N %d, against F32 rows",
					 ggml_type_name(types[k]), cols, n);
				held_matmul(got, in, &h, NULL, n);
				held_matmul(want, in, &f, NULL, n);
				same_bits(got, want, (size_t)n * ROWS, ROWS, 0, what);
			}
			held_free(&h);
			held_free(&f);
			free(W);
			free(in);
		}
}

/* --------------------------------------------- many rows, 16-bit tiles */

/* gemmw.h's product (held_matmul's for N > 4 on F16 and BF16 parts where
 * it is built): for widths with no 16-column step (7), exactly one (16),
 * a tail (43, 901), three chunks of columns and a tail (2053) and row
 * counts around its 5 x 5 tiles, every element
 * meets the double reference; each element equals, bit for bit, the same
 * element made alone (one weight row by one input row: gemmw_rows on a
 * 1 x 1 tile), so no tile shape or thread split changes a number; the
 * F32-tile path (held_use_gemmw false) meets the reference too. */
static void test_gemmw(void **state)
{
	(void)state;
	if (!gemmw_available()) {
		printf("  skipped: gemmw is not built on this machine (no AVX-512F)\n");
		return;
	}
	static const uint32_t types[] = { GGML_F16, GGML_BF16 };
	static const int widths[] = { 7, 16, 43, 901, 2053 }, row_counts[] = { 1, 4, 5, 13 };
	static const int ns16[] = { 5, 6, 11, 33 };
	struct rng r;
	rng_seed(&r, 1616);
	for (size_t k = 0; k < 2; k++)
		for (size_t c = 0; c < sizeof widths / sizeof widths[0]; c++)
			for (size_t q = 0; q < sizeof row_counts / sizeof row_counts[0]; q++) {
				int cols = widths[c], rows = row_counts[q], N = ns16[(c + q) % 4];
				struct held_mat h = { .rows = rows, .cols = cols };
				float *W = xmalloc((size_t)rows * cols * sizeof *W);
				add_random_part(&h, 0, rows, types[k], W, &r);
				float *in = random_floats((size_t)N * cols, &r);
				float *out = xmalloc((size_t)N * rows * sizeof *out);
				char what[96];
				snprintf(what, sizeof what, "%s, %d x %d, gemmw", ggml_type_name(types[k]),
					 rows, cols);
				struct worst w = { 0 };
				held_matmul(out, in, &h, NULL, N);
				check_product(out, in, W, NULL, N, rows, cols, what, &w);
				const struct held_part *p = &h.part[0];
				for (int i = 0; i < N; i++)
					for (int j = 0; j < rows; j++) {
						float one;
						gemmw_rows(&one, 1, in + (size_t)i * cols, 1, cols,
							    p->data + (size_t)j * p->row_bytes, p->row_bytes,
							    p->type, 0, 1);
						if (memcmp(&one, &out[(size_t)i * rows + j], sizeof one))
							fail_msg("%s, N %d: out[%d][%d] = %.9g in the product, "
								 "%.9g alone", what, N, i, j,
								 (double)out[(size_t)i * rows + j],
								 (double)one);
					}
				held_use_gemmw(false);
				held_matmul(out, in, &h, NULL, N);
				held_use_gemmw(true);
				snprintf(what, sizeof what, "%s, %d x %d, F32 tiles",
					 ggml_type_name(types[k]), rows, cols);
				check_product(out, in, W, NULL, N, rows, cols, what, &w);
				held_free(&h);
				free(W);
				free(in);
				free(out);
			}
}

/* ---------------------------------------------------- finite by the bits */

/* Sets the 16-bit value at p to Inf or a NaN (exponent all ones under
 * mask, a random sign and mantissa, not 0 for a NaN). */
static void not_finite_at(unsigned char *p, uint16_t mask, struct rng *r)
{
	uint16_t v = (uint16_t)(rng_u32(r) | mask);
	if (rng_u32(r) % 2)
		v &= (uint16_t)(mask | 0x8000); /* Inf */
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

/* ggml_first_nonfinite (the loaders' check of held weights, read off the
 * bits) names the block whose first value is the first that the
 * reference dequantization makes NaN or Inf: none for random valid
 * blocks, halves at +-65504 among them (the largest values a block
 * makes), and, with one half (or the value of a one-value type) made Inf
 * or NaN in a random block, that block, whose every value is then not
 * finite while those before it are. */
static void test_nonfinite_bits(void **state)
{
	(void)state;
	enum { BLOCKS = 48, TRIALS = 40 };
	struct rng r;
	rng_seed(&r, 77);
	for (size_t k = 0; k < sizeof all_types / sizeof all_types[0]; k++) {
		uint32_t t = all_types[k];
		size_t bb = ggml_block_bytes(t), bv = ggml_block_values(t);
		unsigned char *b = xmalloc(BLOCKS * bb);
		float *x = xmalloc(BLOCKS * bv * sizeof *x);
		int off[2], nh = half_offsets(t, off);
		for (int trial = 0; trial <= TRIALS; trial++) {
			random_bytes(t, b, BLOCKS * bb, &r);
			for (size_t q = 0; q < BLOCKS; q++) /* the largest halves, now and then */
				for (int j = 0; j < nh; j++)
					if (rng_u32(&r) % 4 == 0)
						half_at(b + q * bb + off[j], rng_u32(&r) % 2 ? 65504.0f : -65504.0f);
			size_t bad = BLOCKS;
			if (trial) { /* trial 0: all valid */
				bad = rng_u32(&r) % BLOCKS;
				unsigned char *p = b + bad * bb;
				if (nh)
					not_finite_at(p + off[rng_u32(&r) % nh], 0x7C00, &r);
				else
					not_finite_at(t == GGML_F32 ? p + 2 : p, t == GGML_F16 ? 0x7C00 : 0x7F80, &r);
			}
			ggml_dequantize_ref(t, b, x, BLOCKS);
			size_t first = BLOCKS * bv;
			for (size_t i = 0; i < BLOCKS * bv && first == BLOCKS * bv; i++)
				first = isfinite(x[i]) ? first : i;
			size_t got = ggml_first_nonfinite(t, b, BLOCKS);
			if (got != bad || first != (bad < BLOCKS ? bad * bv : BLOCKS * bv))
				fail_msg("%s, trial %d: ggml_first_nonfinite %zu, made %zu, first value "
					 "not finite %zu", ggml_type_name(t), trial, got, bad, first);
			for (size_t i = 0; bad < BLOCKS && i < bv; i++)
				if (isfinite(x[bad * bv + i]))
					fail_msg("%s, trial %d: value %zu of the block made bad is finite",
						 ggml_type_name(t), trial, i);
		}
		free(b);
		free(x);
	}
}

/* ------------------------------------------------------------ accounting */

static void test_accounting(void **state)
{
	(void)state;
	assert_int_equal(held_row_bytes(GGML_F32, 43), 172);
	assert_int_equal(held_row_bytes(GGML_F16, 43), 86);
	assert_int_equal(held_row_bytes(GGML_BF16, 7), 14);
	assert_int_equal(held_row_bytes(GGML_Q8_0, 64), 68);
	assert_int_equal(held_row_bytes(GGML_Q4_0, 64), 36);
	assert_int_equal(held_row_bytes(GGML_Q4_1, 64), 40);
	assert_int_equal(held_row_bytes(GGML_Q5_0, 64), 44);
	assert_int_equal(held_row_bytes(GGML_Q5_1, 64), 48);
	assert_int_equal(held_row_bytes(GGML_Q2_K, 512), 168);
	assert_int_equal(held_row_bytes(GGML_Q3_K, 512), 220);
	assert_int_equal(held_row_bytes(GGML_Q4_K, 512), 288);
	assert_int_equal(held_row_bytes(GGML_Q5_K, 512), 352);
	assert_int_equal(held_row_bytes(GGML_Q6_K, 512), 420);
	assert_int_equal(held_row_bytes(GGML_Q8_0, 40), 0);
	assert_int_equal(held_row_bytes(GGML_F16, 0), 0);
	assert_int_equal(held_row_bytes(GGML_F16, -8), 0);
	assert_int_equal(held_row_bytes(15, 256), 0); /* Q8_K */

	/* a zeroed matrix: nothing held, no type, freeing it (twice) changes nothing */
	struct held_mat z = { 0 };
	assert_int_equal(held_bytes(&z), 0);
	assert_int_equal(held_type(&z), (uint32_t)-1);
	assert_false(held_complete(&z));
	held_free(&z);
	held_free(&z);
	held_free(NULL);
	assert_int_equal(z.n_parts, 0);

	/* one type in two parts; freed half-built (LeakSanitizer sees the rest) */
	struct held_mat h = { .rows = 10, .cols = 512 };
	assert_non_null(held_add_part(&h, 6, 4, GGML_Q6_K));
	assert_int_equal(held_type(&h), GGML_Q6_K);
	assert_int_equal(held_bytes(&h), 4 * 420);
	assert_non_null(held_add_part(&h, 0, 3, GGML_Q6_K));
	assert_int_equal(held_type(&h), GGML_Q6_K);
	assert_int_equal(held_bytes(&h), 7 * 420);
	assert_false(held_complete(&h));
	held_free(&h);
	assert_int_equal(h.n_parts, 0);
	assert_int_equal(held_bytes(&h), 0);
	assert_int_equal(held_type(&h), (uint32_t)-1);
	held_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_mixed_parts),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_tiles),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_16bit_dots),
		cmocka_unit_test(test_gemmw),
		cmocka_unit_test(test_nonfinite_bits),
		cmocka_unit_test(test_accounting),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
