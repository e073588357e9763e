/*
 * test_heat.c — the heatmap quantities (heat.h) against direct
 * computations on seeded random models:
 *  - weights are the run's softmax weights;
 *  - scores: the softmax of each row's visible scores gives the weights
 *    back (causal, none, window; MHA, GQA and MQA), masked keys are NAN,
 *    and switching the scaling off multiplies layer 0's scores by sqrt(D);
 *    also under Gemma 2's scale and soft-capping, with a local layer;
 *  - norms: A_ij times the norm of head h's value j pushed through the
 *    whole output projection with every other head's input zero; an
 *    ablated head's are all 0; the display rows sum to 1; with heads
 *    d_model / n_head wide and head_dim 12 and 4 (widths 48 and 16);
 *  - rollout: layer 0 is ((mean A) + I) / 2 row-normalised, layer 1 that
 *    of layer 1 times layer 0's, every row sums to 1;
 *  - the display scales a row of scores from 0 at its lowest to 1 at its
 *    highest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heat.h"
#include "model.h"
#include "randmodel.h"

enum { V = 13, T = 9 };

static const int toks[T] = { 1, 5, 2, 9, 9, 3, 12, 0, 7 };

static struct heat compute(struct model *m, const struct run_options *o, enum heat_kind k)
{
	struct heat h;
	struct err e;
	if (heat_compute(m, o, toks, T, k, &h, &e) != 0)
		fail_msg("heat_compute: %s", e.msg);
	return h;
}

/* A pass keeping every layer's weights and q, k, v, made as heat_compute's
 * is (not RUN_TRAIN: a training pass's products are OpenBLAS's, whose
 * sums are in another order, ops.h matmul_w). */
static struct run *attention(struct model *m, const struct run_options *o)
{
	struct run *r = run_new(&m->cfg, 1, T, RUN_ATTN | RUN_QKV);
	struct err e;
	if (model_forward(m, o, toks, NULL, 1, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	return r;
}

/* Under o, every head's weights are the run's, and the softmax of each
 * row's visible scores gives them back; masked keys are NAN. */
static void check_scores_give_weights(struct model *m, const struct run_options *o)
{
	struct run *r = attention(m, o);
	struct heat w = compute(m, o, HEAT_WEIGHTS), s = compute(m, o, HEAT_SCORES);
	for (int l = 0; l < m->cfg.n_layer; l++)
		for (int h = 0; h < m->cfg.n_head; h++) {
			const float *a = run_att(r, l, 0, h), *hw = heat_at(&w, l, h);
			const float *sc = heat_at(&s, l, h);
			assert_memory_equal(a, hw, sizeof(float) * T * T);
			for (int i = 0; i < T; i++) {
				double mx = -INFINITY, sum = 0;
				for (int j = 0; j < T; j++)
					if (!isnan(sc[i * T + j]))
						mx = fmax(mx, sc[i * T + j]);
				for (int j = 0; j < T; j++)
					if (!isnan(sc[i * T + j]))
						sum += exp(sc[i * T + j] - mx);
				for (int j = 0; j < T; j++) {
					float x = sc[i * T + j];
					/* a masked key has weight exactly 0, a visible one more */
					assert_true(isnan(x) == (a[i * T + j] == 0.0f));
					double p = isnan(x) ? 0 : exp(x - mx) / sum;
					assert_true(fabs(p - a[i * T + j]) < 1e-5);
				}
			}
		}
	heat_free(&w);
	heat_free(&s);
	run_free(r);
}

static void test_weights_and_scores(void **state)
{
	(void)state;
	static const enum mask_kind masks[3] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW };
	static const int gs[3] = { 4, 2, 1 };
	struct model *m = randmodel_new(true, 2, 4, V, 8.0f, 60);
	int H = 4;
	for (int mk = 0; mk < 3; mk++)
		for (int gi = 0; gi < 3; gi++) {
			struct run_options o;
			run_options_native(m, &o);
			o.mask = masks[mk];
			o.window = 3;
			o.kv_heads = gs[gi];
			check_scores_give_weights(m, &o);
		}
	/* without the scaling, every score of layer 0 (same input) is sqrt(D)
	 * times larger */
	struct run_options on, off;
	run_options_native(m, &on);
	off = on;
	off.scale = false;
	struct heat a = compute(m, &on, HEAT_SCORES), b = compute(m, &off, HEAT_SCORES);
	double k = sqrt((double)cfg_d_head(&m->cfg));
	for (size_t i = 0; i < (size_t)H * T * T; i++)
		if (!isnan(a.v[i]))
			assert_true(fabs(b.v[i] - k * a.v[i]) < 1e-4 * (1 + fabs(b.v[i])));
	heat_free(&a);
	heat_free(&b);
	model_free(m);
}

/* The scores the softmax reads on a model with Gemma 2's scale
 * (1/sqrt(query_pre_attn_scalar), not 1/sqrt(D)) and its soft-capping of
 * the scores at a cap small enough to bend them, layer 0 local over 3
 * keys: their softmax still gives the weights back. */
static void test_scores_gemma(void **state)
{
	(void)state;
	struct model *base = randmodel_new(true, 2, 2, V, 8.0f, 63);
	struct model_config c = base->cfg;
	c.attn_scale_dim = 3;
	c.attn_softcap = 1.5f;
	c.local_window = 3;
	cfg_set_local(&c, 0, true);
	struct model *m = randmodel_rebuild(base, &c, 64);
	struct run_options o;
	run_options_native(m, &o);
	check_scores_give_weights(m, &o);
	struct heat s = compute(m, &o, HEAT_SCORES);
	double top = 0; /* the cap bounds every score */
	for (size_t i = 0; i < (size_t)m->cfg.n_layer * m->cfg.n_head * T * T; i++)
		top = isnan(s.v[i]) ? top : fmax(top, fabs(s.v[i]));
	assert_true(top <= 1.5 && top > 0.5);
	heat_free(&s);
	o.scale = false; /* off: no scale at all, still capped */
	check_scores_give_weights(m, &o);
	model_free(m);
}

/* norms on a model whose heads are head_dim wide (0: d_model / n_head) */
static void check_norms(int head_dim)
{
	struct model *m = randmodel_new_hd(false, 2, 2, V, 8.0f, 61, head_dim);
	const struct model_config *c = &m->cfg;
	int L = c->n_layer, H = c->n_head, C = c->d_model, D = cfg_d_head(c), G = 2;
	int A = cfg_attn_width(c);
	int ld = cfg_qkv_rows(c, G);
	struct run_options o;
	run_options_native(m, &o);
	opt_set_ablated(&o, 1 * H + 3, true);
	struct run *r = attention(m, &o);
	struct heat n = compute(m, &o, HEAT_NORMS);
	double *z = calloc((size_t)A, sizeof *z);
	float *disp = malloc(sizeof(float) * T * T);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			const float *a = run_att(r, l, 0, h), *got = heat_at(&n, l, h);
			const float *wo = m->p[P_ATTPROJW] + (size_t)l * C * A;
			const float *qkv = r->qkv + (size_t)l * r->lstride_qkv;
			for (int j = 0; j < T; j++) {
				/* head h's value j alone through the whole projection */
				memset(z, 0, sizeof *z * (size_t)A);
				const float *v = qkv + (size_t)j * ld + (size_t)(H + G + h / (H / G)) * D;
				for (int d = 0; d < D; d++)
					z[h * D + d] = v[d];
				double sq = 0;
				for (int row = 0; row < C; row++) {
					double y = 0;
					for (int col = 0; col < A; col++)
						y += (double)wo[(size_t)row * A + col] * z[col];
					sq += y * y;
				}
				double u = (l == 1 && h == 3) ? 0.0 : sqrt(sq);
				for (int i = 0; i < T; i++)
					assert_true(fabs(got[i * T + j] - a[i * T + j] * u) <
						    1e-5 * (1 + a[i * T + j] * u));
			}
			heat_display(&n, l, h, disp);
			for (int i = 0; i < T && !(l == 1 && h == 3); i++) {
				double s = 0;
				for (int j = 0; j < T; j++)
					s += disp[i * T + j];
				assert_true(fabs(s - 1.0) < 1e-5);
			}
		}
	for (int i = 0; i < T * T; i++) /* the ablated head adds nothing */
		assert_true(heat_at(&n, 1, 3)[i] == 0.0f);
	free(z);
	free(disp);
	heat_free(&n);
	run_free(r);
	model_free(m);
}

static void test_norms(void **state)
{
	(void)state;
	check_norms(0);
	check_norms(12); /* heads 48 wide in all beside d_model 32 */
	check_norms(4);  /* and 16 */
}

static void test_rollout(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 2, 4, V, 8.0f, 62);
	int H = 4;
	struct run_options o;
	run_options_native(m, &o);
	o.mask = MASK_NONE;
	struct run *r = attention(m, &o);
	struct heat ro = compute(m, &o, HEAT_ROLLOUT);
	double hat[2][T][T];
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < T; i++) {
			double sum = 0;
			for (int j = 0; j < T; j++) {
				double mean = 0;
				for (int h = 0; h < H; h++)
					mean += run_att(r, l, 0, h)[i * T + j] / H;
				hat[l][i][j] = 0.5 * mean + (i == j ? 0.5 : 0.0);
				sum += hat[l][i][j];
			}
			for (int j = 0; j < T; j++)
				hat[l][i][j] /= sum;
		}
	for (int h = 0; h < H; h++)
		for (int i = 0; i < T; i++) {
			double s0 = 0, s1 = 0;
			for (int j = 0; j < T; j++) {
				double want1 = 0;
				for (int k = 0; k < T; k++)
					want1 += hat[1][i][k] * hat[0][k][j];
				assert_true(fabs(heat_at(&ro, 0, h)[i * T + j] - hat[0][i][j]) < 1e-6);
				assert_true(fabs(heat_at(&ro, 1, h)[i * T + j] - want1) < 1e-6);
				s0 += heat_at(&ro, 0, h)[i * T + j];
				s1 += heat_at(&ro, 1, h)[i * T + j];
			}
			assert_true(fabs(s0 - 1) < 1e-5 && fabs(s1 - 1) < 1e-5);
		}
	heat_free(&ro);
	run_free(r);
	model_free(m);
}

static void test_display_scores(void **state)
{
	(void)state;
	float v[4] = { 2.0f, NAN, -1.0f, 0.5f };
	struct heat h = { .kind = HEAT_SCORES, .L = 1, .H = 1, .T = 2, .v = v };
	float out[4];
	heat_display(&h, 0, 0, out);
	assert_true(out[0] == 1.0f && isnan(out[1]));  /* a single visible score: 1 */
	assert_true(out[2] == 0.0f && out[3] == 1.0f); /* lowest 0, highest 1 */
	enum heat_kind k;
	assert_int_equal(heat_kind_parse("rollout", &k), 0);
	assert_int_equal(k, HEAT_ROLLOUT);
	assert_int_equal(heat_kind_parse("weight", &k), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weights_and_scores),
		cmocka_unit_test(test_scores_gemma),
		cmocka_unit_test(test_norms),
		cmocka_unit_test(test_rollout),
		cmocka_unit_test(test_display_scores),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
