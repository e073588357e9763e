/*
 * test_attnmm.c — one attention head's two products (attnmm.h), skipped
 * with a message where they are not built (no AVX-512F).
 *   - scores, for head sizes 1, 7, 16, 33, 64, 80, 128 and 256 (no
 *     sixteen-value step, one, a tail, the sizes of real models, the
 *     limit), 1 to 77 keys (a part of a 32-key panel, one, several and a
 *     tail) and query rows from 0 or from 5, under a causal mask, a
 *     window of 3, no mask, a padding mask (the last real key 20) and
 *     every-key spans: each entry in a row's range is the chain of fused
 *     multiply-adds over d from 0 times the scale (equal, as a value), and
 *     within 1e-5 of the absolute sum of a double-precision dot product;
 *     nothing is written past the keys nor into rows past M;
 *   - output, the same shapes with weights random in each row's range and
 *     exactly 0 outside it: each element is the chain of fused
 *     multiply-adds over the row's range from its first key (equal, as a
 *     value), within 1e-5 of a double-precision sum, and nothing is
 *     written past D in a row nor past row M.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnmm.h"
#include "ops.h"
#include "util.h"

#define SENTINEL 12345.0f

/* A row's keys, as ops.c's attention builds them. */
struct span {
	enum mask_kind mask;
	int window, T, q0, last;
	bool all; /* every real key (MASK_AFTER_SOFTMAX's softmax) */
};

static void span_of(const void *ctx, int i, int *lo, int *hi)
{
	const struct span *s = ctx;
	if (s->all) {
		*lo = 0;
		*hi = s->last;
		return;
	}
	mask_range(s->mask, s->window, s->q0 + i, s->T, lo, hi);
	*hi = *hi < s->last ? *hi : s->last;
	*lo = *lo < *hi ? *lo : *hi;
}

#define N_SPANS 5
static struct span span_case(int c, int T, int q0)
{
	struct span s = { MASK_CAUSAL, 3, T, q0, T - 1, false };
	switch (c) {
	case 1: s.mask = MASK_WINDOW; break;
	case 2: s.mask = MASK_NONE; break;
	case 3: s.last = T - 1 < 20 ? T - 1 : 20; break;
	case 4: s.all = true; break;
	}
	return s;
}

static const int heads[] = { 1, 7, 16, 33, 64, 80, 128, 256 };
static const int keys[] = { 1, 5, 31, 32, 33, 77 };

static float *random_floats(struct rng *r, size_t n)
{
	float *x = xmalloc(n * sizeof *x);
	for (size_t i = 0; i < n; i++)
		x[i] = rng_uniform(r) * 2.0f - 1.0f;
	return x;
}

/* One case: head size D, T keys, queries from q0 (M = T - q0 rows), the
 * span sp (case c). */
struct shape {
	int D, T, q0, M, c;
	struct span sp;
};

typedef void check_fn(const struct shape *x, struct rng *r);

/* check over every head size, key count, span and first query. */
static void for_each_shape(check_fn *check, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	for (size_t hd = 0; hd < sizeof heads / sizeof *heads; hd++)
		for (size_t kt = 0; kt < sizeof keys / sizeof *keys; kt++)
			for (int c = 0; c < N_SPANS; c++)
				for (int q0 = 0; q0 <= 5; q0 += 5) {
					struct shape x = { heads[hd], keys[kt], q0, keys[kt] - q0, c,
							   span_case(c, keys[kt], q0) };
					if (x.M >= 1)
						check(&x, &r);
				}
}

/* Scores of one case against the chain and the double reference. */
static void check_scores(const struct shape *x, struct rng *r)
{
	int D = x->D, T = x->T, M = x->M, ld = D + 3, lda = T + 2;
	float *q = random_floats(r, (size_t)M * ld);
	float *k = random_floats(r, (size_t)T * ld);
	float *a = xmalloc((size_t)(M + 1) * lda * sizeof *a);
	for (int i = 0; i < (M + 1) * lda; i++)
		a[i] = SENTINEL;
	attnmm_scores(a, lda, q, ld, k, ld, M, T, D, 0.125f, span_of, &x->sp);
	for (int i = 0; i < M; i++) {
		int lo, hi;
		span_of(&x->sp, i, &lo, &hi);
		for (int j = lo; j <= hi; j++) {
			float chain = 0.0f;
			double ref = 0.0, mag = 0.0;
			for (int d = 0; d < D; d++) {
				float u = q[i * ld + d], w = k[j * ld + d];
				chain = fmaf(u, w, chain);
				ref += (double)u * w;
				mag += fabs((double)u * w);
			}
			float got = a[i * lda + j];
			if (got != chain * 0.125f || fabs(got - 0.125 * ref) > 1e-5 * 0.125 * mag + 1e-30)
				fail_msg("D %d T %d span %d q0 %d: a[%d][%d] %.9g, chain %.9g, double %.9g",
					 D, T, x->c, x->q0, i, j, (double)got, (double)(chain * 0.125f),
					 0.125 * ref);
		}
		for (int j = T; j < lda; j++)
			if (a[i * lda + j] != SENTINEL)
				fail_msg("D %d T %d: a[%d][%d] written past the keys", D, T, i, j);
	}
	for (int j = 0; j < lda; j++)
		if (a[M * lda + j] != SENTINEL)
			fail_msg("D %d T %d: row %d past M written", D, T, M);
	free(q);
	free(k);
	free(a);
}

/* Output of one case against the chain and the double reference. */
static void check_values(const struct shape *x, struct rng *r)
{
	int D = x->D, T = x->T, M = x->M, ld = D + 3, ldo = D + 2;
	float *v = random_floats(r, (size_t)T * ld);
	float *a = xcalloc((size_t)M * T, sizeof *a);
	float *out = xmalloc((size_t)(M + 1) * ldo * sizeof *out);
	for (int i = 0; i < M; i++) {
		int lo, hi;
		span_of(&x->sp, i, &lo, &hi);
		for (int j = lo; j <= hi; j++)
			a[i * T + j] = rng_uniform(r);
	}
	for (int i = 0; i < (M + 1) * ldo; i++)
		out[i] = SENTINEL;
	attnmm_values(out, ldo, a, T, v, ld, M, D, span_of, &x->sp);
	for (int i = 0; i < M; i++) {
		int lo, hi;
		span_of(&x->sp, i, &lo, &hi);
		for (int d = 0; d < D; d++) {
			float chain = 0.0f;
			double ref = 0.0, mag = 0.0;
			for (int j = lo; j <= hi; j++) {
				float u = a[i * T + j], w = v[j * ld + d];
				chain = fmaf(u, w, chain);
				ref += (double)u * w;
				mag += fabs((double)u * w);
			}
			float got = out[i * ldo + d];
			if (got != chain || fabs(got - ref) > 1e-5 * mag + 1e-30)
				fail_msg("D %d T %d span %d q0 %d: out[%d][%d] %.9g, chain %.9g, double %.9g",
					 D, T, x->c, x->q0, i, d, (double)got, (double)chain, ref);
		}
		for (int d = D; d < ldo; d++)
			if (out[i * ldo + d] != SENTINEL)
				fail_msg("D %d T %d: out[%d][%d] written past D", D, T, i, d);
	}
	for (int d = 0; d < ldo; d++)
		if (out[M * ldo + d] != SENTINEL)
			fail_msg("D %d T %d: row %d past M written", D, T, M);
	free(v);
	free(a);
	free(out);
}

static bool built(void)
{
	if (!attnmm_available())
		printf("  skipped: attnmm is not built on this machine (no AVX-512F)\n");
	return attnmm_available();
}

static void test_scores(void **state)
{
	(void)state;
	if (built())
		for_each_shape(check_scores, 64);
}

static void test_values(void **state)
{
	(void)state;
	if (built())
		for_each_shape(check_values, 65);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scores),
		cmocka_unit_test(test_values),
	};
	return cmocka_run_group_tests_name("attnmm", tests, NULL, NULL);
}
