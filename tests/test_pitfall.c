/*
 * test_pitfall.c — the pitfall run options (model.h, enum pitfall) against
 * the double-precision reference extended with them (tests/ref_forward.c),
 * and what each must show: no-transpose is the identity with one head and
 * mixes positions otherwise, mask-one-head leaves head 0 causal and lets the
 * other heads see the future, eps0 turns a constant row into NaN and the run
 * says where.
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

#include "decode.h"
#include "model.h"
#include "randmodel.h"
#include "ref_forward.h"
#include "util.h"

#define ABS_TOL 1e-5
#define REL_TOL 1e-4
enum { V = 11, T = 9, L = 2 };

static const int toks[T] = { 1, 4, 2, 9, 4, 7, 0, 3, 10 };
static double g_max_logits, g_max_att; /* worst |engine - reference| seen */
static int g_runs;

static struct run *run_ok(struct model *m, const struct run_options *o, const int *tk, int B,
			  int n)
{
	struct run *r = run_new(&m->cfg, B, n, RUN_LOGITS | RUN_ATTN);
	struct err e = { { 0 } };
	if (model_forward(m, o, tk, NULL, B, n, r, &e) != 0) {
		print_error("model_forward: %s\n", e.msg);
		fail();
	}
	return r;
}

/* |a - b| within tolerance, or both not finite; updates *worst. */
static bool close_to(float a, double b, double *worst)
{
	if (!isfinite(a) || !isfinite(b))
		return !isfinite(a) && !isfinite(b);
	double d = fabs((double)a - b);
	if (d > *worst)
		*worst = d;
	return d <= ABS_TOL + REL_TOL * fabs(b);
}

/* One pass of m under o against the reference: logits and every head's
 * attention.  Prints the first mismatch; returns whether all matched. */
static bool matches_ref(struct model *m, const struct run_options *o, const char *what)
{
	int H = m->cfg.n_head;
	double *rl = malloc(sizeof *rl * T * V), *ra = malloc(sizeof *ra * L * H * T * T);
	assert_int_equal(ref_forward(m, o, toks, T, rl, ra, NULL), 0);
	struct run *r = run_ok(m, o, toks, 1, T);
	bool ok = true;
	for (int i = 0; i < T * V && ok; i++)
		if (!close_to(run_logits(r)[i], rl[i], &g_max_logits)) {
			print_error("%s: logit [%d,%d] engine %.9g ref %.9g\n", what, i / V, i % V,
				    (double)run_logits(r)[i], rl[i]);
			ok = false;
		}
	for (int l = 0; l < L && ok; l++)
		for (int h = 0; h < H && ok; h++) {
			const float *a = run_att(r, l, 0, h);
			const double *b = ra + ((size_t)l * H + h) * T * T;
			for (int i = 0; i < T * T && ok; i++)
				if (!close_to(a[i], b[i], &g_max_att)) {
					print_error("%s: attention %d.%d [%d,%d] engine %.9g ref %.9g\n",
						    what, l, h, i / T, i % T, (double)a[i], b[i]);
					ok = false;
				}
		}
	g_runs++;
	run_free(r);
	free(rl);
	free(ra);
	return ok;
}

/* Embeddings and every matrix times 10 (QKV times 40 with randmodel's
 * gain): peaked attention and logits of order 1, so that a wrong view or
 * mask moves them well beyond the tolerance. */
static void sharpen(struct model *m)
{
	static const enum param_id mats[] = { P_WTE, P_WPE, P_QKVW, P_ATTPROJW, P_FCW,
					      P_FCPROJW, P_LMHEAD };
	for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
		for (size_t j = 0; j < m->psize[mats[i]]; j++)
			m->p[mats[i]][j] *= 10.0f;
	model_clear_cache(m);
}

/* Every pitfall on both families, native K in {4, 2, 1}, run G in {4, 2, 1},
 * both placements, causal / none / window 2 masks, with and without an
 * ablated head, against the reference. */
static void test_against_reference(void **s)
{
	(void)s;
	static const int kvs[3] = { 4, 2, 1 };
	static const enum mask_kind masks[3] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW };
	int bad = 0, runs = 0;
	engine_set_threads(1);
	for (int llama = 0; llama < 2; llama++)
		for (int ki = 0; ki < 3; ki++) {
			struct model *m = randmodel_new(llama, L, kvs[ki], V, 4.0f, 40u + llama * 3 + ki);
			sharpen(m);
			for (int p = 1; p < N_PITFALLS; p++)
				for (int g = 0; g < 3; g++)
					for (int pl = 0; pl < 2; pl++)
						for (int mk = 0; mk < 3; mk++) {
							struct run_options o;
							run_options_native(m, &o);
							o.pitfall = (enum pitfall)p;
							o.kv_heads = kvs[g];
							o.placement = pl ? PLACE_POST : PLACE_PRE;
							o.mask = masks[mk];
							o.window = 2;
							if ((g + mk) & 1)
								opt_set_ablated(&o, 1 * 4 + 2, true);
							char what[128];
							snprintf(what, sizeof what, "%s llama=%d K=%d G=%d %s mask=%s",
								 pitfall_name(o.pitfall), llama, kvs[ki], kvs[g],
								 norm_place_name(o.placement),
								 mask_kind_name(o.mask));
							runs++;
							bad += !matches_ref(m, &o, what);
						}
			model_free(m);
		}
	engine_set_threads(0);
	print_message("pitfalls vs reference: %d runs, %d mismatches; max |d| logits %.3g, "
		      "attention %.3g\n", runs, bad, g_max_logits, g_max_att);
	assert_int_equal(bad, 0);
}

static double max_diff(const float *a, const float *b, size_t n)
{
	double d = 0.0;
	for (size_t i = 0; i < n; i++)
		d = fmax(d, fabs((double)a[i] - b[i]));
	return d;
}

/* No transpose with one head: (T, D) read as (1, T, D) is the same tensor,
 * so the run equals the native one; with 4 heads it does not. */
static void test_no_transpose_identity(void **s)
{
	(void)s;
	struct model_config c;
	config_default(&c);
	c.vocab_size = V, c.d_model = 8, c.n_layer = L, c.n_head = 1, c.n_kv_head = 1;
	c.d_ff = 16, c.context = 16;
	struct err e = { { 0 } };
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	model_init_random(m, 7);
	struct run_options o, p;
	run_options_native(m, &o);
	p = o;
	p.pitfall = PITFALL_NO_TRANSPOSE;
	struct run *a = run_ok(m, &o, toks, 1, T), *b = run_ok(m, &p, toks, 1, T);
	assert_true(max_diff(run_logits(a), run_logits(b), (size_t)T * V) == 0.0);
	run_free(a), run_free(b), model_free(m);

	m = randmodel_new(false, L, 4, V, 4.0f, 8);
	run_options_native(m, &o);
	p = o;
	p.pitfall = PITFALL_NO_TRANSPOSE;
	a = run_ok(m, &o, toks, 1, T), b = run_ok(m, &p, toks, 1, T);
	double d = max_diff(run_logits(a), run_logits(b), (size_t)T * V);
	print_message("no-transpose, 4 heads: max |logit change| %.3g\n", d);
	assert_true(d > 1e-3);
	run_free(a), run_free(b), model_free(m);
}

/* Two sequences in one batch give what each gives alone (the view is per
 * sequence), under no-transpose and mask-one-head. */
static void test_batch_per_sequence(void **s)
{
	(void)s;
	struct model *m = randmodel_new(true, L, 2, V, 4.0f, 9);
	int two[2 * T];
	for (int i = 0; i < T; i++)
		two[i] = toks[i], two[T + i] = toks[T - 1 - i];
	for (int p = PITFALL_NO_TRANSPOSE; p <= PITFALL_MASK_ONE_HEAD; p++) {
		struct run_options o;
		run_options_native(m, &o);
		o.pitfall = (enum pitfall)p;
		struct run *both = run_ok(m, &o, two, 2, T);
		for (int b = 0; b < 2; b++) {
			struct run *one = run_ok(m, &o, two + b * T, 1, T);
			double d = max_diff(run_logits(both) + (size_t)b * T * V, run_logits(one), (size_t)T * V);
			assert_true(d < 1e-4);
			run_free(one);
		}
		run_free(both);
	}
	model_free(m);
}

/* mask-one-head: every layer's head 0 keeps the causal zeros above the
 * diagonal; at layer 0 its weights are the causal run's; heads 1-3 put
 * weight on later keys.  Not resumable by rows, not decodable. */
static void test_mask_one_head(void **s)
{
	(void)s;
	struct model *m = randmodel_new(false, L, 4, V, 4.0f, 10);
	struct run_options o, p;
	run_options_native(m, &o);
	p = o;
	p.pitfall = PITFALL_MASK_ONE_HEAD;
	struct run *a = run_ok(m, &o, toks, 1, T), *b = run_ok(m, &p, toks, 1, T);
	assert_true(max_diff(run_att(a, 0, 0, 0), run_att(b, 0, 0, 0), (size_t)T * T) < 1e-6);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < 4; h++) {
			const float *w = run_att(b, l, 0, h);
			double future = 0.0;
			for (int i = 0; i < T; i++)
				for (int j = i + 1; j < T; j++)
					future += w[i * T + j];
			if (h == 0)
				assert_true(future == 0.0);
			else
				assert_true(future > 0.1);
		}
	run_free(a);
	run_free(b);
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_QKV);
	struct err e = { { 0 } };
	assert_int_equal(model_forward(m, &p, toks, NULL, 1, T, r, &e), 0);
	assert_false(model_rows_resumable(r));
	assert_int_equal(model_blocks_from(m, r, 1, 3, &e), -1);
	run_free(r);
	assert_null(decoder_new(m, &p, 0, &e));
	assert_non_null(strstr(e.msg, "pitfall mask-one-head"));
	model_free(m);
}

/* eps0 on a row of variance 0: a llama (RMSNorm) model whose token 4 embeds
 * as zeros, and a GPT-2 (LayerNorm) one whose token 9 embeds as 0.5
 * everywhere and whose position 3 as zeros.
 * Natively every value is finite; under eps0 the first NaN is norm1 of
 * layer 0 at the first such position, the loss is NaN, and the reference
 * agrees on every value that is finite and on where they are not. */
static void test_eps0_nan(void **s)
{
	(void)s;
	for (int llama = 0; llama < 2; llama++) {
		struct model *m = randmodel_new(llama, L, 4, V, 4.0f, 11);
		int C = m->cfg.d_model, at = llama ? 1 : 3; /* toks[1] == 4 */
		for (int c = 0; c < C; c++) {
			m->p[P_WTE][(size_t)toks[at] * C + c] = llama ? 0.0f : 0.5f;
			if (!llama)
				m->p[P_WPE][(size_t)at * C + c] = 0.0f;
		}
		struct run_options o, p;
		run_options_native(m, &o);
		p = o;
		p.pitfall = PITFALL_EPS0;
		struct run *a = run_ok(m, &o, toks, 1, T), *b = run_ok(m, &p, toks, 1, T);
		assert_null(a->nonfinite.site);
		assert_true(isfinite(a->loss));
		assert_non_null(b->nonfinite.site);
		assert_string_equal(b->nonfinite.site, "norm1");
		assert_int_equal(b->nonfinite.layer, 0);
		assert_int_equal(b->nonfinite.pos, at);
		assert_true(isnan(b->loss));
		assert_true(matches_ref(m, &p, llama ? "eps0 rms zero row" : "eps0 ln constant row"));
		run_free(a);
		run_free(b);
		model_free(m);
	}
}

/* Names, validation and equality. */
static void test_names_and_options(void **s)
{
	(void)s;
	enum pitfall p;
	for (int i = 0; i < N_PITFALLS; i++) {
		assert_int_equal(pitfall_parse(pitfall_name((enum pitfall)i), &p), 0);
		assert_int_equal(p, i);
	}
	assert_int_equal(pitfall_parse("eps", &p), -1);
	struct model *m = randmodel_new(false, L, 4, V, 1.0f, 12);
	struct run_options o, q;
	run_options_native(m, &o);
	assert_int_equal(o.pitfall, PITFALL_NONE);
	q = o;
	q.pitfall = PITFALL_EPS0;
	assert_false(run_options_equal(&o, &q));
	q.pitfall = (enum pitfall)N_PITFALLS;
	struct err e = { { 0 } };
	assert_int_equal(run_options_validate(m, &q, &e), -1);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_reference),
		cmocka_unit_test(test_no_transpose_identity),
		cmocka_unit_test(test_batch_per_sequence),
		cmocka_unit_test(test_mask_one_head),
		cmocka_unit_test(test_eps0_nan),
		cmocka_unit_test(test_names_and_options),
	};
	return cmocka_run_group_tests_name("pitfall", tests, NULL, NULL);
}
