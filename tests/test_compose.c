/*
 * test_compose.c — composition scores (compose.h).
 *
 *  - Every pair's Q, K and V score equals a double-precision reference
 *    written here the plain way: the K/V conversion done from model.h's
 *    rule (mean-pooling the native K/V heads of each new group), the
 *    input norm applied as the C x C matrix diag(g) (I - 11^T/C) (LayerNorm)
 *    or diag(g) (RMSNorm) multiplied into W_Q, W_K, W_V, then W_QK and W_OV
 *    formed as C x C matrices, their products and Frobenius norms taken
 *    directly; within 1e-9 (1e-6 under a conversion, whose pooled K/V
 *    weights the engine keeps in float), for both families (GPT-2 LayerNorm, Llama
 *    RMSNorm) under native options, a GQA conversion (2 K/V heads from 4),
 *    a native GQA model (2 K/V heads) and post-norm placement (nothing
 *    folded); the norm gains are random, not ones.
 *  - The baseline equals the reference's score of the same standard normal
 *    draws (COMPOSE_SEED, drawn in compose.c's order), within 1e-9.
 *  - On the shipped models/induction.safetensors (2 layers x 4 heads; 0.2
 *    its previous-token head, 1.1 and 1.2 its induction heads), what an
 *    induction circuit predicts of K-composition: 0.2 -> 1.1 and
 *    0.2 -> 1.2 are both among the 4 strongest of the 16 K pairs and
 *    above 1.5 times the baseline; they are 0.2's two strongest K targets;
 *    and for both, K-composition exceeds their Q- and V-composition.
 *    (Measured: K 0.162 and 0.144, 3rd and 4th of 16, baseline 0.089;
 *    the two stronger pairs both start at 0.3, a broad head.)
 *  - A model of one layer is refused.
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

#include "compose.h"
#include "loader.h"
#include "model.h"
#include "randmodel.h"

enum { V = 11, L = 3, H = 4, C = 32, D = C / H };

static double worst, worst_gqa; /* largest |score - reference|: native K/V, converted */

/* out (n, m) = a (n, k) b (k, m), row-major doubles. */
static void mul(double *out, const double *a, const double *b, int n, int k, int m)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++) {
			double s = 0;
			for (int t = 0; t < k; t++)
				s += a[i * k + t] * b[t * m + j];
			out[i * m + j] = s;
		}
}

static double frob(const double *a, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += a[i] * a[i];
	return sqrt(s);
}

/* A head's four matrices: q, k, v (D, C), o (C, D). */
struct ref_head {
	double q[D * C], k[D * C], v[D * C], o[C * D];
};

/* score of kind k from A's matrices to B's, all C x C. */
static void ref_scores(const struct ref_head *a, const struct ref_head *b, double *score)
{
	static double qt[C * D], qk[C * C], qkt[C * C], ova[C * C], ovb[C * C], p[C * C];
	for (int i = 0; i < D; i++)
		for (int j = 0; j < C; j++)
			qt[j * D + i] = b->q[i * C + j];
	mul(qk, qt, b->k, C, D, C); /* W_Q^T W_K */
	for (int i = 0; i < C; i++)
		for (int j = 0; j < C; j++)
			qkt[j * C + i] = qk[i * C + j];
	mul(ova, a->o, a->v, C, D, C);
	mul(ovb, b->o, b->v, C, D, C);
	double nqk = frob(qk, C * C), nova = frob(ova, C * C), novb = frob(ovb, C * C);
	mul(p, qkt, ova, C, C, C);
	score[COMPOSE_Q] = frob(p, C * C) / (nqk * nova);
	mul(p, qk, ova, C, C, C);
	score[COMPOSE_K] = frob(p, C * C) / (nqk * nova);
	mul(p, ovb, ova, C, C, C);
	score[COMPOSE_V] = frob(p, C * C) / (novb * nova);
}

/* Head (l, h) of m for G K/V heads, the norm applied as a matrix. */
static void ref_head_of(const struct model *m, int G, bool pre, int l, int h, struct ref_head *out)
{
	int K = m->cfg.n_kv_head, QKVN = (H + 2 * K) * D;
	const float *w = m->p[P_QKVW] + (size_t)l * QKVN * C;
	static double raw[3][D * C], nm[C * C];
	for (int i = 0; i < C; i++) /* the norm's linear part */
		for (int j = 0; j < C; j++) {
			double pij = (i == j) - (m->cfg.norm == NORM_LAYER ? 1.0 / C : 0.0);
			nm[i * C + j] = pre && m->p[P_LN1W] ? m->p[P_LN1W][(size_t)l * C + i] * pij
							    : (double)(i == j); /* OLMo-2: no norm first */
		}
	for (int d = 0; d < D; d++)
		for (int c = 0; c < C; c++) {
			raw[0][d * C + c] = w[(size_t)(h * D + d) * C + c];
			double ks = 0, vs = 0;
			int g = h / (H / G), n = H / G;
			for (int q = g * n; q < (g + 1) * n; q++) {
				int nat = q / (H / K);
				ks += w[(size_t)((H + nat) * D + d) * C + c];
				vs += w[(size_t)((H + K + nat) * D + d) * C + c];
			}
			raw[1][d * C + c] = ks / n;
			raw[2][d * C + c] = vs / n;
			if (m->cfg.qk_norm && !m->cfg.qk_norm_whole) { /* diag(scales) W_Q, diag(scales) W_K */
				raw[0][d * C + c] *= m->p[P_QNORMW][(size_t)l * D + d];
				raw[1][d * C + c] *= m->p[P_KNORMW][(size_t)l * D + d];
			}
			if (m->cfg.qk_norm_whole) { /* OLMo-2: the slices of head h and of its K/V group */
				raw[0][d * C + c] *= m->p[P_QNORMW][((size_t)l * H + h) * D + d];
				raw[1][d * C + c] *= m->p[P_KNORMW][((size_t)l * K + g * K / G) * D + d];
			}
		}
	mul(out->q, raw[0], nm, D, C, C);
	mul(out->k, raw[1], nm, D, C, C);
	mul(out->v, raw[2], nm, D, C, C);
	for (int r = 0; r < C; r++) /* with Gemma's sandwich norm: diag(gain) W_O */
		for (int d = 0; d < D; d++)
			out->o[r * D + d] = m->p[P_ATTPROJW][((size_t)l * C + r) * C + h * D + d] *
					    (m->cfg.sandwich ? m->p[P_ATTPOSTW][(size_t)l * C + r] : 1.0);
}

/* Scores within tol of the reference: 1e-9 with the native K/V weights,
 * 1e-6 under a conversion (the engine pools the K/V weights in float,
 * which rounds each to about 6e-8 of itself). */
static void check(struct model *m, const struct run_options *o)
{
	double tol = o->kv_heads == m->cfg.n_kv_head ? 1e-9 : 1e-6;
	struct compose_result r;
	struct err e;
	assert_int_equal(compose_run(m, o, &r, &e), 0);
	assert_int_equal(r.n, H * H * L * (L - 1) / 2);
	static struct ref_head ha, hb;
	for (int i = 0; i < r.n; i++) {
		const struct compose_pair *p = &r.pairs[i];
		assert_true(p->la < p->lb);
		ref_head_of(m, o->kv_heads, o->placement == PLACE_PRE, p->la, p->ha, &ha);
		ref_head_of(m, o->kv_heads, o->placement == PLACE_PRE, p->lb, p->hb, &hb);
		double s[COMPOSE_KINDS];
		ref_scores(&ha, &hb, s);
		for (int k = 0; k < COMPOSE_KINDS; k++) {
			double err = fabs(p->score[k] - s[k]);
			if (o->kv_heads == m->cfg.n_kv_head)
				worst = err > worst ? err : worst;
			else
				worst_gqa = err > worst_gqa ? err : worst_gqa;
			if (err > tol)
				fail_msg("G %d placement %d: %s %d.%d -> %d.%d: %.12f vs reference %.12f", o->kv_heads, o->placement, compose_kind_name(k),
					 p->la, p->ha, p->lb, p->hb, p->score[k], s[k]);
			assert_true(p->score[k] >= 0 && p->score[k] <= 1);
		}
	}
	/* the baseline: the same normal draws, scored by the reference */
	struct rng g;
	rng_seed(&g, COMPOSE_SEED);
	double mean[COMPOSE_KINDS] = { 0 };
	for (int n = 0; n < COMPOSE_DRAWS; n++) {
		struct ref_head *hh[2] = { &ha, &hb };
		for (int i = 0; i < 2; i++) {
			for (int j = 0; j < D * C; j++)
				hh[i]->q[j] = rng_normal(&g);
			for (int j = 0; j < D * C; j++)
				hh[i]->k[j] = rng_normal(&g);
			for (int j = 0; j < D * C; j++)
				hh[i]->v[j] = rng_normal(&g);
			for (int j = 0; j < C * D; j++)
				hh[i]->o[j] = rng_normal(&g);
		}
		double s[COMPOSE_KINDS];
		ref_scores(&ha, &hb, s);
		for (int k = 0; k < COMPOSE_KINDS; k++)
			mean[k] += s[k] / COMPOSE_DRAWS;
	}
	for (int k = 0; k < COMPOSE_KINDS; k++)
		assert_true(fabs(mean[k] - r.baseline[k]) < 1e-9);
	compose_free(&r);
}

static void test_compose_matches_reference(void **state)
{
	for (int llama = 0; llama <= 4; llama++) /* 2: Qwen3's q/k norm; 3: Gemma's sandwich norms
						  * too; 4: OLMo-2's blocks */
		for (int kv = 4; kv >= 2; kv -= 2) {
			struct model *m = randmodel_new(llama > 0, L, kv, V, 1.0f, 21 + llama + kv);
			struct model_config gc = m->cfg;
			gc.sandwich = llama >= 3;
			gc.qk_norm = llama >= 2;
			gc.post_only = gc.qk_norm_whole = llama == 4;
			if (llama >= 2)
				m = randmodel_rebuild(m, &gc, 30 + kv);
			struct rng g;
			rng_seed(&g, 5);
			for (size_t i = 0; i < m->psize[P_LN1W]; i++)
				m->p[P_LN1W][i] = 0.5f + rng_uniform(&g);
			struct run_options o;
			run_options_native(m, &o);
			check(m, &o);
			if (kv == 4 && llama < 4) { /* OLMo-2's key norm takes no conversion down */
				o.kv_heads = 2;
				check(m, &o);
				o.kv_heads = 4;
			}
			if (kv == 2 && llama == 4) { /* but whole multiples of its key heads */
				o.kv_heads = 4;
				check(m, &o);
				o.kv_heads = 2;
			}
			o.placement = PLACE_POST; /* OLMo-2: no norm to move */
			if (llama < 4)
				check(m, &o);
			model_free(m);
		}
	printf("compose: worst |score - reference| %.3g native K/V, %.3g converted\n", worst, worst_gqa);
}

/* The index of pair A -> B in r, or -1. */
static int find(const struct compose_result *r, int la, int ha, int lb, int hb)
{
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		if (p->la == la && p->ha == ha && p->lb == lb && p->hb == hb)
			return i;
	}
	return -1;
}

static void test_compose_induction_model(void **state)
{
	struct err e;
	struct model *m = model_open("models/induction.safetensors", &e);
	if (!m)
		fail_msg("%s", e.msg);
	struct run_options o;
	run_options_native(m, &o);
	struct compose_result r;
	assert_int_equal(compose_run(m, &o, &r, &e), 0);
	assert_int_equal(r.n, 16);
	int order[16];
	compose_rank(&r, COMPOSE_K, order);
	for (int i = 0; i < 4; i++) {
		const struct compose_pair *p = &r.pairs[order[i]];
		printf("K %d: %d.%d -> %d.%d %.3f (baseline %.3f)\n", i + 1, p->la, p->ha, p->lb, p->hb,
		       p->score[COMPOSE_K], r.baseline[COMPOSE_K]);
	}
	int to[2] = { find(&r, 0, 2, 1, 1), find(&r, 0, 2, 1, 2) };
	int rank[2] = { -1, -1 };
	for (int k = 0; k < 2; k++) {
		assert_true(to[k] >= 0);
		for (int i = 0; i < 16; i++)
			if (order[i] == to[k])
				rank[k] = i;
		const double *s = r.pairs[to[k]].score;
		assert_true(rank[k] >= 0 && rank[k] < 4);
		assert_true(s[COMPOSE_K] > 1.5 * r.baseline[COMPOSE_K]);
		assert_true(s[COMPOSE_K] > s[COMPOSE_Q] && s[COMPOSE_K] > s[COMPOSE_V]);
	}
	/* 0.2's K-composition into 1.0 and 1.3 is below both induction heads' */
	double lo = fmin(r.pairs[to[0]].score[COMPOSE_K], r.pairs[to[1]].score[COMPOSE_K]);
	for (int hb = 0; hb < 4; hb += 3)
		assert_true(r.pairs[find(&r, 0, 2, 1, hb)].score[COMPOSE_K] < lo);
	compose_free(&r);
	model_free(m);
}

static void test_compose_refuses_one_layer(void **state)
{
	struct model *m = randmodel_new(false, 1, 4, V, 1.0f, 3);
	struct run_options o;
	run_options_native(m, &o);
	struct compose_result r;
	struct err e;
	assert_int_equal(compose_run(m, &o, &r, &e), -1);
	assert_non_null(strstr(e.msg, "two layers"));
	compose_free(&r);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compose_matches_reference),
		cmocka_unit_test(test_compose_induction_model),
		cmocka_unit_test(test_compose_refuses_one_layer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
