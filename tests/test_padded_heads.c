/*
 * test_padded_heads.c — the analyses that read a head's weights (compose,
 * why, dla, qkov, heat norms) on heads wider than d_model / n_head.
 *
 * A model with heads D = 8 wide and the same model with head_dim 12, each
 * head's 8 query, key and value rows followed by 4 rows of zeros and its 8
 * output-projection columns by 4 zero columns, compute the same function
 * when the scores are not scaled by 1/sqrt(D) (the zero dims add nothing
 * to q . k, the zero values nothing to the output) and under learned
 * positions (RoPE's frequencies would follow D).  Each analysis must then
 * give the padded model the unpadded one's numbers: a stride that reads
 * the heads' width H * D as d_model lands on other weights and differs.
 * The unpadded model's numbers are checked against double-precision
 * references in test_compose, test_why, test_dla, test_qkov and
 * test_heat; with MHA and with native GQA (2 K/V heads).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "dla.h"
#include "heat.h"
#include "model.h"
#include "qkov.h"
#include "randmodel.h"
#include "why.h"

enum { V = 13, L = 3, T = 9, D = 8, WIDE = 12 };

static void near(double got, double want, const char *what)
{
	if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want))))
		fail_msg("%s: padded %.9g, unpadded %.9g", what, got, want);
}

/* rows blocks of D rows of C (or of 1: biases) from src into blocks of
 * WIDE rows of dst, the rest of each block zero. */
static void pad_rows(float *dst, const float *src, int blocks, int C)
{
	for (int b = 0; b < blocks; b++)
		for (int r = 0; r < WIDE; r++)
			for (int j = 0; j < C; j++)
				dst[((size_t)b * WIDE + r) * C + j] = r < D ? src[((size_t)b * D + r) * C + j] : 0.0f;
}

/* m with every head padded from D to WIDE dims (see the top). */
static struct model *padded(const struct model *m, int kv)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, blocks = H + 2 * kv;
	struct model *p = randmodel_new_hd(false, L, kv, V, 1.0f, 1, WIDE);
	for (int i = 0; i < N_PARAMS; i++)
		if (m->p[i] && i != P_QKVW && i != P_QKVB && i != P_ATTPROJW) {
			assert_true(p->psize[i] == m->psize[i]);
			memcpy(p->p[i], m->p[i], m->psize[i] * sizeof(float));
		}
	for (int l = 0; l < L; l++) {
		pad_rows(p->p[P_QKVW] + (size_t)l * blocks * WIDE * C,
			 m->p[P_QKVW] + (size_t)l * blocks * D * C, blocks, C);
		pad_rows(p->p[P_QKVB] + (size_t)l * blocks * WIDE, m->p[P_QKVB] + (size_t)l * blocks * D,
			 blocks, 1);
		for (int o = 0; o < C; o++)
			for (int h = 0; h < H; h++)
				for (int d = 0; d < WIDE; d++)
					p->p[P_ATTPROJW][((size_t)l * C + o) * H * WIDE + h * WIDE + d] =
						d < D ? m->p[P_ATTPROJW][((size_t)l * C + o) * C + h * D + d] : 0.0f;
	}
	return p;
}

static void same_compose(struct model *m, struct model *p, const struct run_options *o)
{
	struct compose_result a, b;
	struct err e;
	assert_int_equal(compose_run(m, o, &a, &e), 0);
	assert_int_equal(compose_run(p, o, &b, &e), 0);
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++)
		for (int k = 0; k < COMPOSE_KINDS; k++)
			near(b.pairs[i].score[k], a.pairs[i].score[k], "composition score");
	compose_free(&a);
	compose_free(&b);
}

static void same_why(struct model *m, struct model *p, const struct run_options *o,
		     const int *tokens)
{
	struct why_result a, b;
	struct err e;
	assert_int_equal(why_run(m, o, tokens, T, 2, 1, 7, 3, &a, &e), 0);
	assert_int_equal(why_run(p, o, tokens, T, 2, 1, 7, 3, &b, &e), 0);
	near(b.score, a.score, "why's score");
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++) {
		near(b.parts[i].query, a.parts[i].query, "why's query side");
		near(b.parts[i].key, a.parts[i].key, "why's key side");
	}
	why_free(&a);
	why_free(&b);
}

static void same_dla(struct model *m, struct model *p, const struct run_options *o,
		     const int *tokens)
{
	struct dla_result a, b;
	struct err e;
	assert_int_equal(dla_run(m, o, tokens, T, T - 1, -1, &a, &e), 0);
	assert_int_equal(dla_run(p, o, tokens, T, T - 1, -1, &b, &e), 0);
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++)
		near(b.parts[i].logit, a.parts[i].logit, "dla part");
	dla_free(&a);
	dla_free(&b);
}

static void same_qkov(struct model *m, struct model *p, const struct run_options *o,
		      const int *tokens)
{
	struct qkov_ov a, b;
	struct err e;
	assert_int_equal(qkov_ov_run(m, o, 1, 2, &a, &e), 0);
	assert_int_equal(qkov_ov_run(p, o, 1, 2, &b, &e), 0);
	near(b.copy, a.copy, "the OV copying score");
	qkov_ov_free(&a);
	qkov_ov_free(&b);
	struct qkov_qk qa, qb;
	assert_int_equal(qkov_qk_run(m, o, tokens, T, 1, 2, &qa, &e), 0);
	assert_int_equal(qkov_qk_run(p, o, tokens, T, 1, 2, &qb, &e), 0);
	for (int i = 0; i < QK_CLASSES; i++)
		for (int j = 0; j < QK_CLASSES; j++)
			near(qb.mean[i][j], qa.mean[i][j], "the QK split's mean term");
}

static void same_norms(struct model *m, struct model *p, const struct run_options *o,
		       const int *tokens)
{
	struct heat a, b;
	struct err e;
	assert_int_equal(heat_compute(m, o, tokens, T, HEAT_NORMS, &a, &e), 0);
	assert_int_equal(heat_compute(p, o, tokens, T, HEAT_NORMS, &b, &e), 0);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < m->cfg.n_head; h++)
			for (int i = 0; i < T * T; i++)
				near(heat_at(&b, l, h)[i], heat_at(&a, l, h)[i], "heat norms");
	heat_free(&a);
	heat_free(&b);
}

static void test_padded_heads(void **state)
{
	(void)state;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 3) % V;
	for (int kv = 4; kv >= 2; kv -= 2) {
		struct model *m = randmodel_new(false, L, kv, V, 1.0f, 40 + kv);
		struct model *p = padded(m, kv);
		assert_int_equal(cfg_d_head(&m->cfg), D);
		assert_int_equal(cfg_attn_width(&p->cfg), m->cfg.n_head * WIDE);
		struct run_options o;
		run_options_native(m, &o);
		o.scale = false;
		/* the premise: the two models compute the same logits */
		struct err e;
		struct run *ra = run_new(&m->cfg, 1, T, RUN_LOGITS), *rb = run_new(&p->cfg, 1, T, RUN_LOGITS);
		assert_int_equal(model_forward(m, &o, tokens, NULL, 1, T, ra, &e), 0);
		assert_int_equal(model_forward(p, &o, tokens, NULL, 1, T, rb, &e), 0);
		for (int i = 0; i < T * V; i++)
			near(run_logits(rb)[i], run_logits(ra)[i], "logits");
		run_free(ra);
		run_free(rb);
		same_compose(m, p, &o);
		same_why(m, p, &o, tokens);
		same_dla(m, p, &o, tokens);
		same_qkov(m, p, &o, tokens);
		same_norms(m, p, &o, tokens);
		model_free(m);
		model_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_padded_heads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
