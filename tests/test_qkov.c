/*
 * test_qkov.c — one head's OV copying score and QK split (qkov.h):
 *  - a constructed head whose (D, D) OV matrix is a block upper
 *    triangular A with known eigenvalues (1 +- 2i, 3, -1, -0.5 +- i,
 *    0.25, -2): the eigenvalues and the copying score (sum of positive
 *    real parts over sum of moduli) within 1e-9;
 *  - on random models of both families, pre- and post-norm, a GQA
 *    conversion: the power sums sum_i lambda_i^k, k = 1 .. D, of the
 *    eigenvalues found in D x D equal the traces of the k-th powers of the
 *    V x V matrix W_U~ W_O W_V~ W_E built here in double (with the norm
 *    gains and centring folded as qkov.h says), within 1e-5 of sum |lambda|^k (the
 *    eigen solver's backward error on a non-normal matrix: 3e-7 seen): the
 *    power sums 1 .. D fix the D eigenvalues, so the small space gives
 *    the full circuit's spectrum;
 *  - the QK split (GPT-2 family pre and post; Llama with RoPE and native
 *    GQA, pre and post, and with Llama 3.1's RoPE scaling): its token x
 *    token, token x position, position x token and position x position
 *    means (token x token alone with RoPE) equal the means over the
 *    visible pairs of why's terms of those parts (why.h, a separate
 *    computation),
 *    and the whole score's mean that of why's scores, within 1e-6; the
 *    same on Gemma 2 (sandwich norms, query_pre_attn_scalar, scores
 *    soft-capped: the classes split the score before the cap, and the
 *    mean capped score is that of why's capped scores) and OLMo-2 (the
 *    whole-width q/k norm frozen at the row's scale);
 *  - a head outside the model is refused with one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "qkov.h"
#include "randmodel.h"
#include "why.h"

enum { V = 19, H = 4, C = 32, D = C / H, T = 7 };

/* ---------------------------------------------------- a constructed head */

static int cmp_eig(const void *a, const void *b)
{
	const double *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void test_known_eigenvalues(void **state)
{
	(void)state;
	struct model *m = randmodel_new(true, 1, 4, V, 1.0f, 9); /* RMSNorm, untied */
	/* gains 1; wte[v] = lmhead[v] = e_v for v < D, else 0: W_E W_U~ = I on dims 0 .. D-1 */
	for (int j = 0; j < C; j++)
		m->p[P_LN1W][j] = m->p[P_LNFW][j] = 1.0f;
	memset(m->p[P_WTE], 0, m->psize[P_WTE] * sizeof(float));
	memset(m->p[P_LMHEAD], 0, m->psize[P_LMHEAD] * sizeof(float));
	for (int v = 0; v < D; v++)
		m->p[P_WTE][(size_t)v * C + v] = m->p[P_LMHEAD][(size_t)v * C + v] = 1.0f;
	/* A: diagonal blocks (1 -2; 2 1), 3, -1, (-0.5 1; -1 -0.5), 0.25, -2, ones above */
	double A[D][D] = { { 0 } };
	for (int i = 0; i < D; i++)
		for (int j = i + 1; j < D; j++)
			A[i][j] = 0.5 + 0.1 * (i + j);
	A[0][0] = 1, A[0][1] = -2, A[1][0] = 2, A[1][1] = 1;
	A[2][2] = 3, A[3][3] = -1;
	A[4][4] = -0.5, A[4][5] = 1, A[5][4] = -1, A[5][5] = -0.5;
	A[6][6] = 0.25, A[7][7] = -2;
	int h = 2, K = 4, QKV = (H + 2 * K) * D;
	/* W_V of head 2 = [I_D 0]; W_O's columns of head 2 = [A; 0] */
	float *wv = m->p[P_QKVW] + (size_t)(H + K + h) * D * C;
	memset(wv, 0, (size_t)D * C * sizeof(float));
	for (int d = 0; d < D; d++)
		wv[(size_t)d * C + d] = 1.0f;
	(void)QKV;
	for (int o = 0; o < C; o++)
		for (int d = 0; d < D; d++)
			m->p[P_ATTPROJW][(size_t)o * C + h * D + d] = o < D ? (float)A[o][d] : 0.0f;
	model_clear_cache(m);
	struct run_options o;
	run_options_native(m, &o);
	struct qkov_ov ov;
	struct err e;
	assert_int_equal(qkov_ov_run(m, &o, 0, h, &ov, &e), 0);
	double want[D][2] = { { 1, -2 }, { 1, 2 }, { 3, 0 }, { -1, 0 }, { -0.5, -1 }, { -0.5, 1 },
			      { 0.25, 0 }, { -2, 0 } }, got[D][2];
	for (int i = 0; i < D; i++)
		got[i][0] = ov.re[i], got[i][1] = ov.im[i];
	qsort(want, D, sizeof want[0], cmp_eig);
	qsort(got, D, sizeof got[0], cmp_eig);
	for (int i = 0; i < D; i++)
		if (fabs(got[i][0] - want[i][0]) > 1e-9 || fabs(got[i][1] - want[i][1]) > 1e-9)
			fail_msg("eigenvalue %d: %g%+gi, want %g%+gi", i, got[i][0], got[i][1], want[i][0],
				 want[i][1]);
	double pos = 1 + 1 + 3 + 0.25, all = 2 * sqrt(5) + 3 + 1 + 2 * sqrt(1.25) + 0.25 + 2;
	if (fabs(ov.copy - pos / all) > 1e-9)
		fail_msg("copying score %.12g, want %.12g", ov.copy, pos / all);
	qkov_ov_free(&ov);
	qkov_ov_free(&ov);
	model_free(m);
}

/* --------------------------------------------- power sums against V x V */

/* u <- g * (u - mean u) (LayerNorm), g * u (RMSNorm). */
static void fold(const struct model *m, double *u, const float *g)
{
	double mean = 0;
	for (int j = 0; j < C; j++)
		mean += u[j];
	mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
	for (int j = 0; j < C; j++)
		u[j] = (u[j] - mean) * g[j];
}

/* The full circuit F (V, V) = W_U~ W_O W_V~ W_E in double: F[a][b] is
 * token b's embedding through the head's values and output to token a's
 * logit. */
static void full_circuit(const struct model *m, const struct run_options *o, int l, int h,
			 double *F)
{
	int K = m->cfg.n_kv_head, G = o->kv_heads, QKV = (H + 2 * K) * D;
	const float *w = m->p[P_QKVW] + (size_t)l * QKV * C;
	const float *wu = m->cfg.tied ? m->p[P_WTE] : m->p[P_LMHEAD];
	static double ov[V][D], un[V][C];
	for (int b = 0; b < V; b++) { /* W_V~ wte[b]: the group's pooled value rows */
		double x[C];
		for (int j = 0; j < C; j++)
			x[j] = m->p[P_WTE][(size_t)b * C + j];
		if (o->placement == PLACE_PRE)
			fold(m, x, m->p[P_LN1W] + (size_t)l * C);
		int g = h / (H / G);
		for (int d = 0; d < D; d++) {
			double s = 0;
			for (int u = g * (H / G); u < (g + 1) * (H / G); u++) {
				const float *row = w + (size_t)((H + K) * D + (u / (H / K)) * D + d) * C;
				for (int j = 0; j < C; j++)
					s += row[j] * x[j] / (H / G);
			}
			ov[b][d] = s;
		}
	}
	for (int a = 0; a < V; a++) { /* P (g_f * W_U[a]), as a row */
		for (int j = 0; j < C; j++)
			un[a][j] = (double)wu[(size_t)a * C + j] * m->p[P_LNFW][j];
		double mean = 0;
		for (int j = 0; j < C; j++)
			mean += un[a][j];
		for (int j = 0; j < C && m->cfg.norm == NORM_LAYER; j++)
			un[a][j] -= mean / C;
	}
	const float *pw = m->p[P_ATTPROJW] + (size_t)l * C * C;
	for (int a = 0; a < V; a++)
		for (int b = 0; b < V; b++) {
			double s = 0;
			for (int j = 0; j < C; j++) {
				double out = 0;
				for (int d = 0; d < D; d++)
					out += pw[(size_t)j * C + h * D + d] * ov[b][d];
				s += un[a][j] * out;
			}
			F[a * V + b] = s;
		}
}

static void check_power_sums(struct model *m, const struct run_options *o)
{
	static double F[V * V], P[V * V], Q[V * V];
	for (int l = 0; l < m->cfg.n_layer; l++)
		for (int h = 0; h < H; h++) {
			struct qkov_ov ov;
			struct err e;
			assert_int_equal(qkov_ov_run(m, o, l, h, &ov, &e), 0);
			full_circuit(m, o, l, h, F);
			memcpy(P, F, sizeof F);
			for (int k = 1; k <= D; k++) {
				double tr = 0, scale = 0;
				double complex s = 0;
				for (int i = 0; i < V; i++)
					tr += P[i * V + i];
				for (int i = 0; i < D; i++) {
					double complex lam = ov.re[i] + I * ov.im[i];
					s += cpow(lam, k);
					scale += pow(cabs(lam), k);
				}
				if (fabs(creal(s) - tr) > 1e-5 * scale || fabs(cimag(s)) > 1e-5 * scale)
					fail_msg("%d.%d: sum of lambda^%d = %g%+gi, trace of F^%d = %g", l, h, k,
						 creal(s), cimag(s), k, tr);
				for (int i = 0; i < V; i++) /* P <- P F */
					for (int j = 0; j < V; j++) {
						double x = 0;
						for (int t = 0; t < V; t++)
							x += P[i * V + t] * F[t * V + j];
						Q[i * V + j] = x;
					}
				memcpy(P, Q, sizeof Q);
			}
			assert_true(ov.copy >= 0 && ov.copy <= 1);
			qkov_ov_free(&ov);
		}
}

static void test_power_sums(void **state)
{
	(void)state;
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = randmodel_new(llama, 2, 4, V, 1.0f, 21 + llama);
		struct rng g;
		rng_seed(&g, 5);
		for (size_t i = 0; i < m->psize[P_LN1W]; i++)
			m->p[P_LN1W][i] = 0.5f + rng_uniform(&g);
		for (size_t i = 0; i < m->psize[P_LNFW]; i++)
			m->p[P_LNFW][i] = 0.5f + rng_uniform(&g);
		struct run_options o;
		run_options_native(m, &o);
		check_power_sums(m, &o);
		o.placement = PLACE_POST;
		check_power_sums(m, &o);
		o.placement = PLACE_PRE;
		o.kv_heads = 2;
		check_power_sums(m, &o);
		model_free(m);
	}
}

/* ------------------------------------------------------------ QK split */

static void check_qk(struct model *m, const struct run_options *o, const int *tokens, int l, int h)
{
	struct qkov_qk qk;
	struct err e;
	assert_int_equal(qkov_qk_run(m, o, tokens, T, l, h, &qk, &e), 0);
	double mean[2][2] = { { 0 } }, score = 0, capped = 0;
	int pairs = 0, np = m->cfg.pos == POS_LEARNED ? 2 : 1;
	int window; /* a local layer sees its window only */
	enum mask_kind mask = layer_mask(&m->cfg, o, l, &window);
	for (int i = 0; i < T; i++)
		for (int j = mask == MASK_WINDOW && i - window > 0 ? i - window : 0; j <= i; j++) {
			struct why_result w;
			assert_int_equal(why_run(m, o, tokens, T, l, h, i, j, &w, &e), 0);
			int tp[2] = { why_find_part(&w, "token"), why_find_part(&w, "position") };
			for (int a = 0; a < np; a++)
				for (int b = 0; b < np; b++)
					mean[a][b] += w.terms[(size_t)tp[a] * w.n + tp[b]];
			score += w.score;
			capped += w.capped;
			pairs++;
			why_free(&w);
		}
	assert_int_equal(qk.pairs, pairs);
	assert_true(qk.has_pos == (np == 2));
	for (int a = 0; a < np; a++)
		for (int b = 0; b < np; b++)
			if (fabs(qk.mean[a][b] - mean[a][b] / pairs) > 1e-6 * (1 + fabs(mean[a][b] / pairs)))
				fail_msg("%d.%d class (%d, %d): %g vs why's %g", l, h, a, b, qk.mean[a][b],
					 mean[a][b] / pairs);
	assert_true(fabs(qk.mean_score - score / pairs) < 1e-6 * (1 + fabs(score / pairs)));
	assert_true(qk.softcap == m->cfg.attn_softcap);
	if (!(fabs(qk.mean_capped - capped / pairs) < 1e-6 * (1 + fabs(capped / pairs))))
		fail_msg("%d.%d: mean capped score %g vs why's %g", l, h, qk.mean_capped, capped / pairs);
	double sum = 0;
	for (int a = 0; a < QK_CLASSES; a++)
		for (int b = 0; b < QK_CLASSES; b++)
			sum += qk.mean[a][b];
	assert_true(fabs(sum - qk.mean_score) < 1e-6 * (1 + fabs(sum)));
}

/* Gemma 2 (sandwich norms, scores capped at 2 with the QKV weights times
 * 6 so that tanh bends, query_pre_attn_scalar 12, layer 0 local over 4
 * keys) and OLMo-2 (no norm before the sub-blocks, sandwich norms, the
 * whole-width q/k norm) against why. */
static void check_gemma_olmo2(const int *tokens)
{
	for (int k = 0; k < 2; k++) {
		struct model *base = randmodel_new(true, 2, 2, V, 1.0f, 36 + k);
		struct model_config c = base->cfg;
		c.sandwich = true;
		if (k == 0) {
			c.emb_scale = sqrtf((float)C);
			c.attn_softcap = 2.0f;
			c.attn_scale_dim = 12;
			c.mlp = MLP_GEGLU;
			c.local_window = 4;
			cfg_set_local(&c, 0, true);
		} else {
			c.post_only = c.qk_norm = c.qk_norm_whole = true;
		}
		struct model *g = randmodel_rebuild(base, &c, 38 + k);
		for (size_t i = 0; k == 0 && i < g->psize[P_QKVW]; i++)
			g->p[P_QKVW][i] *= 6.0f;
		struct run_options go;
		run_options_native(g, &go);
		check_qk(g, &go, tokens, 0, 1);
		check_qk(g, &go, tokens, 1, 3);
		if (k == 0) {
			go.placement = PLACE_POST;
			check_qk(g, &go, tokens, 1, 2);
		} else {
			go.kv_heads = 4;
			check_qk(g, &go, tokens, 1, 2);
		}
		model_free(g);
	}
}

static void test_qk_split(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 2, 4, V, 1.0f, 33);
	struct rng g;
	rng_seed(&g, 8);
	for (size_t i = 0; i < m->psize[P_LN1B]; i++)
		m->p[P_LN1B][i] = 0.1f * rng_normal(&g);
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 1) % V;
	struct run_options o;
	run_options_native(m, &o);
	for (int l = 0; l < 2; l++)
		check_qk(m, &o, tokens, l, 1);
	o.placement = PLACE_POST;
	check_qk(m, &o, tokens, 1, 2);
	struct model *r = randmodel_new(true, 2, 2, V, 1.0f, 34); /* RoPE, native GQA */
	struct run_options ro;
	run_options_native(r, &ro);
	check_qk(r, &ro, tokens, 1, 3);
	ro.placement = PLACE_POST;
	check_qk(r, &ro, tokens, 0, 0);
	r->cfg.rope_scaling = ROPE_SCALE_LLAMA3; /* Llama 3.1's, over an original 8 */
	r->cfg.rope_factor = 8.0f;
	r->cfg.rope_low_freq = 1.0f;
	r->cfg.rope_high_freq = 4.0f;
	r->cfg.rope_orig_context = 8;
	run_options_native(r, &ro);
	check_qk(r, &ro, tokens, 1, 3);
	r->cfg.rope_scaling = ROPE_SCALE_LONGROPE; /* Phi-3's, over an original 4: the long table */
	r->cfg.rope_orig_context = 4;
	r->cfg.rope_attn_factor = 1.3f;
	for (int i = 0; i < D / 2; i++) {
		r->cfg.rope_short[i] = 1.0f + (float)i;
		r->cfg.rope_long[i] = 3.0f + 5.0f * (float)i;
	}
	check_qk(r, &ro, tokens, 1, 3);
	r->cfg.rope_scaling = ROPE_SCALE_LLAMA3;
	r = randmodel_qk_norm(r, 35); /* Qwen3's q/k norm, under both placements */
	run_options_native(r, &ro);
	check_qk(r, &ro, tokens, 1, 2);
	ro.placement = PLACE_POST;
	check_qk(r, &ro, tokens, 1, 0);
	r->cfg.rope_scaling = ROPE_SCALE_NONE; /* Gemma 3's RoPE: layer 0 local on its own base */
	r->cfg.local_window = 4;
	cfg_set_local(&r->cfg, 0, true);
	r->cfg.rope_theta = 100.0f;
	r->cfg.rope_local_theta = 10000.0f;
	run_options_native(r, &ro);
	check_qk(r, &ro, tokens, 0, 1);
	check_qk(r, &ro, tokens, 1, 1);
	model_free(r);
	check_gemma_olmo2(tokens);
	struct qkov_qk qk;
	struct qkov_ov ov;
	struct err e = { "" };
	assert_int_equal(qkov_qk_run(m, &o, tokens, T, 2, 0, &qk, &e), -1);
	assert_true(e.msg[0] && !strchr(e.msg, '\n'));
	assert_int_equal(qkov_ov_run(m, &o, 0, H, &ov, &e), -1);
	assert_non_null(strstr(e.msg, "outside the model"));
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_eigenvalues),
		cmocka_unit_test(test_power_sums),
		cmocka_unit_test(test_qk_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
