/*
 * test_dla.c — direct logit attribution (dla.h) on seeded random models of
 * both families (GPT-2: LayerNorm, learned positions, biases, tied; Llama:
 * RMSNorm, RoPE, no biases, untied), their biases and norm gains made
 * non-trivial first:
 *  - every part equals a double-precision reference written here from
 *    ref_forward's trace (ref_forward.h): the head's output row times its
 *    output-projection columns, the MLP as the block output minus
 *    att_res minus its bias, the embeddings and biases as they are, each
 *    read through the final norm frozen at the reference's own scale
 *    (1/std or 1/rms of its stream), within 1e-4 + 1e-4 |ref|;
 *  - the parts sum to the model's logit at the position within 1e-4
 *    (left_out below 1e-4), and the reference's parts to its own logit
 *    within 1e-9 (the frozen-norm decomposition is exact);
 *  - the logit dla_run makes on its one row is the whole pass's (a
 *    model_forward with logits) within 1e-5, and its predicted token the
 *    whole pass's most likely one;
 *  - under native options, a GQA conversion (2 K/V heads from 4), an
 *    ablation (the ablated heads' parts are exactly 0), a window mask and
 *    parallel blocks (GPT-NeoX's: the MLP reads the block's input);
 *    at every position, for the predicted token and for a named one;
 *    with heads d_model / n_head wide and with head_dim 12 and 4 (the
 *    heads' width 48 and 16 beside d_model 32);
 *  - Gemma 2: sqrt(C) embeddings, sandwich norms (each head's part and
 *    the attention bias's through the attention's norm frozen at the
 *    row's 1/rms of the heads' sum plus bias, the MLP's bias inside its
 *    part), logits soft-capped with the cap bending some logit by more
 *    than 0.5: the parts sum to the logit before the cap, `capped` is the
 *    reference's logit within 1e-4 and the whole pass's within 1e-5; with
 *    biases and without;
 *  - post-norm placement and a position outside the text are refused.
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

#include "dla.h"
#include "model.h"
#include "randmodel.h"
#include "ref_forward.h"

enum { V = 19, T = 9, L = 3, H = 4, C = 32, AMAX = 48 };

static int D = C / H, A = C; /* the heads' width of the model under test */

static double worst; /* largest |code - reference| seen, printed at the end */
static double bent;  /* largest |capped - logit| seen */

/* A random model whose biases, norm gains and shifts are not 0 / 1. */
static struct model *make_model(bool llama, uint64_t seed, int head_dim)
{
	struct model *m = randmodel_new_hd(llama, L, 4, V, 1.0f, seed, head_dim);
	D = cfg_d_head(&m->cfg);
	A = cfg_attn_width(&m->cfg);
	struct rng g;
	rng_seed(&g, seed * 7 + 1);
	enum param_id ids[] = { P_QKVB, P_ATTPROJB, P_FCB, P_FCPROJB, P_LNFB, P_LN1B, P_LN2B };
	for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
		for (size_t i = 0; i < m->psize[ids[k]]; i++)
			m->p[ids[k]][i] = 0.1f * rng_normal(&g);
	enum param_id gains[] = { P_LNFW, P_LN1W, P_LN2W };
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < m->psize[gains[k]]; i++)
			m->p[gains[k]][i] = 0.6f + 0.8f * rng_uniform(&g);
	return m;
}

/* Reference part of one stream vector p (C doubles) through the frozen
 * final norm: sum_j W_U[v][j] g[j] rstd (p[j] - mean p) (no mean for RMS). */
static double through(const struct model *m, const double *p, int v, double rstd)
{
	const float *wu = (m->cfg.tied ? m->p[P_WTE] : m->p[P_LMHEAD]) + (size_t)v * C;
	double mean = 0, s = 0;
	for (int j = 0; j < C; j++)
		mean += p[j];
	mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
	for (int j = 0; j < C; j++)
		s += wu[j] * (double)m->p[P_LNFW][j] * rstd * (p[j] - mean);
	return s;
}

/* Gemma's sandwich norm of layer l's attention at pos: 1/rms of the
 * heads' output row through W_O plus b_O, from the reference's trace. */
static double post_rstd(const struct model *m, const struct ref_trace *tr, int l, int pos)
{
	double ss = 0;
	for (int o = 0; o < C; o++) {
		double y = m->psize[P_ATTPROJB] ? m->p[P_ATTPROJB][(size_t)l * C + o] : 0.0;
		for (int k = 0; k < A; k++)
			y += m->p[P_ATTPROJW][((size_t)l * C + o) * A + k] * tr->atty[((size_t)l * T + pos) * A + k];
		ss += y * y;
	}
	return 1.0 / sqrt(ss / C + m->cfg.norm_eps);
}

/* v (C) through layer l's attention sandwich norm frozen at pos (a no-op
 * without sandwich norms). */
static void sandwich(const struct model *m, const struct ref_trace *tr, int l, int pos, double *v)
{
	if (!m->cfg.sandwich)
		return;
	double rs = post_rstd(m, tr, l, pos);
	for (int j = 0; j < C; j++)
		v[j] *= m->p[P_ATTPOSTW][(size_t)l * C + j] * rs;
}

/* The reference's value of part pt at position pos for token v. */
static double ref_part(const struct model *m, const struct ref_trace *tr, const int *tokens,
		       int pos, int v, double rstd, const struct dla_part *pt)
{
	double p[C] = { 0 };
	const double *row;
	switch (pt->kind) {
	case DLA_TOKEN: /* Gemma's times sqrt(C) */
		for (int j = 0; j < C; j++)
			p[j] = m->p[P_WTE][(size_t)tokens[pos] * C + j] *
			       (m->cfg.emb_scale > 0 ? (double)m->cfg.emb_scale : 1.0);
		break;
	case DLA_POS:
		for (int j = 0; j < C; j++)
			p[j] = m->p[P_WPE][(size_t)pos * C + j];
		break;
	case DLA_HEAD:
		row = tr->atty + ((size_t)pt->layer * T + pos) * A;
		for (int o = 0; o < C; o++)
			for (int d = 0; d < D; d++)
				p[o] += m->p[P_ATTPROJW][((size_t)pt->layer * C + o) * A + pt->head * D + d] *
					row[pt->head * D + d];
		sandwich(m, tr, pt->layer, pos, p);
		break;
	case DLA_MLP: /* with sandwich norms its bias stays in, inside its norm */
		for (int j = 0; j < C; j++)
			p[j] = tr->resid[((size_t)(pt->layer + 1) * T + pos) * C + j] -
			       tr->att_res[((size_t)pt->layer * T + pos) * C + j] -
			       (m->p[P_FCPROJB] && !m->cfg.sandwich
					? m->p[P_FCPROJB][(size_t)pt->layer * C + j] : 0.0);
		break;
	case DLA_ATTN_BIAS:
	case DLA_MLP_BIAS:
		for (int l = 0; l < L; l++) {
			double b[C];
			for (int j = 0; j < C; j++)
				b[j] = m->p[pt->kind == DLA_ATTN_BIAS ? P_ATTPROJB : P_FCPROJB][(size_t)l * C + j];
			if (pt->kind == DLA_ATTN_BIAS)
				sandwich(m, tr, l, pos, b);
			for (int j = 0; j < C; j++)
				p[j] += b[j];
		}
		break;
	case DLA_NORM_BIAS: {
		const float *wu = (m->cfg.tied ? m->p[P_WTE] : m->p[P_LMHEAD]) + (size_t)v * C;
		double s = 0;
		for (int j = 0; j < C; j++)
			s += (double)wu[j] * m->p[P_LNFB][j];
		return s;
	}
	}
	return through(m, p, v, rstd);
}

/* dla_run against the reference at every position, for the predicted
 * token and token (pos * 3) % V. */
static void check_options(struct model *m, const struct run_options *o, const int *tokens)
{
	double logits[T * V], resid[(L + 1) * T * C], att_res[L * T * C], atty[L * T * AMAX];
	struct ref_trace tr = { resid, att_res, atty };
	assert_int_equal(ref_forward(m, o, tokens, T, logits, NULL, &tr), 0);
	struct err e;
	struct run *full = run_new(&m->cfg, 1, T, RUN_LOGITS);
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, T, full, &e), 0);
	for (int pos = 0; pos < T; pos++)
		for (int named = 0; named <= 1; named++) {
			struct dla_result d;
			int want = named ? (pos * 3) % V : -1;
			assert_int_equal(dla_run(m, o, tokens, T, pos, want, &d, &e), 0);
			const double *x = resid + ((size_t)L * T + pos) * C;
			double mean = 0, var = 0;
			for (int j = 0; j < C; j++)
				mean += x[j];
			mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
			for (int j = 0; j < C; j++)
				var += (x[j] - mean) * (x[j] - mean);
			double rstd = 1.0 / sqrt(var / C + m->cfg.norm_eps), sum = 0;
			int v = d.token;
			if (named)
				assert_int_equal(v, want);
			assert_true(fabs(d.rstd - rstd) <= 1e-4 * rstd);
			int heads = 0;
			for (int i = 0; i < d.n; i++) {
				double r = ref_part(m, &tr, tokens, pos, v, rstd, &d.parts[i]);
				double err = fabs(d.parts[i].logit - r);
				worst = err > worst ? err : worst;
				if (err > 1e-4 + 1e-4 * fabs(r))
					fail_msg("part %d (kind %d, %d.%d) at %d: %g vs reference %g", i,
						 d.parts[i].kind, d.parts[i].layer, d.parts[i].head, pos,
						 d.parts[i].logit, r);
				if (d.parts[i].kind == DLA_HEAD) {
					heads++;
					if (opt_is_ablated(o, d.parts[i].layer * H + d.parts[i].head))
						assert_true(d.parts[i].logit == 0.0);
				}
				sum += r;
			}
			assert_int_equal(heads, L * H);
			/* the parts sum to the logit before the cap; capped is the
			 * model's (Gemma 2's final_softcap) */
			double cap = m->cfg.final_softcap, rcapped = cap > 0 ? cap * tanh(sum / cap) : sum;
			assert_true(fabs(rcapped - logits[pos * V + v]) < 1e-9 * (1 + fabs(sum)));
			assert_true(fabs(d.sum + d.left_out - d.logit) < 1e-12);
			if (!(fabs(d.left_out) < 1e-4))
				fail_msg("left out %g at %d", d.left_out, pos);
			assert_true(d.softcap == cap);
			assert_true(fabs(d.logit - sum) < 1e-4 + 1e-4 * fabs(sum));
			if (!(fabs(d.capped - logits[pos * V + v]) < 1e-4))
				fail_msg("capped %g at %d, the reference's logit %g", d.capped, pos,
					 logits[pos * V + v]);
			bent = fabs(d.capped - d.logit) > bent ? fabs(d.capped - d.logit) : bent;
			const float *fl = run_logits(full) + (size_t)pos * V;
			int best = 0;
			for (int k = 1; k < V; k++)
				best = fl[k] > fl[best] ? k : best;
			if (!(fabs(d.capped - fl[v]) <= 1e-5 * (1 + fabs(fl[v]))))
				fail_msg("logit %g at %d, the whole pass's %g", d.capped, pos, fl[v]);
			assert_int_equal(d.predicted, v == best);
			dla_free(&d);
		}
	run_free(full);
}

static void test_dla_matches_reference(void **state)
{
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 7 + 2) % V;
	/* heads d_model / H wide, then 12 wide (width 48) and 4 (width 16):
	 * head_dim apart from d_model / n_head */
	for (int run = 0; run < 6; run++) {
		int llama = run % 2, head_dim = (int[]){ 0, 12, 4 }[run / 2];
		struct model *m = make_model(llama, 11 + llama, head_dim);
		struct run_options o;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		struct run_options g = o;
		g.kv_heads = 2;
		check_options(m, &g, tokens);
		struct run_options a = o;
		opt_set_ablated(&a, 0 * H + 1, true);
		opt_set_ablated(&a, 2 * H + 3, true);
		check_options(m, &a, tokens);
		struct run_options w = o;
		w.mask = MASK_WINDOW;
		w.window = 2;
		check_options(m, &w, tokens);
		/* a parallel block (GPT-NeoX): x + attn(norm1(x)) + mlp(norm2(x)) */
		m->cfg.parallel = true;
		check_options(m, &o, tokens);
		model_free(m);
	}
	printf("dla: worst |part - reference| %.3g\n", worst);
}

/* Gemma 2 from a Llama model (with biases or without): sqrt(C)
 * embeddings, sandwich norms (scales 1 + 0.3 N), GeGLU, scores capped at
 * 2, logits at 3 (the output layer times 12, so that tanh bends),
 * query_pre_attn_scalar 12, layer 0 local over 4 keys. */
static struct model *make_gemma2(bool bias, uint64_t seed)
{
	struct model *base = make_model(true, seed, 0);
	struct model_config c = base->cfg;
	c.emb_scale = sqrtf((float)C);
	c.sandwich = true;
	c.attn_softcap = 2.0f;
	c.final_softcap = 3.0f;
	c.attn_scale_dim = 12;
	c.mlp = MLP_GEGLU;
	c.local_window = 4;
	cfg_set_local(&c, 0, true);
	c.bias = bias;
	struct model *m = randmodel_rebuild(base, &c, seed + 100);
	struct rng g;
	rng_seed(&g, seed * 3 + 5);
	enum param_id ids[] = { P_QKVB, P_ATTPROJB, P_FCB, P_FCPROJB };
	for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
		for (size_t i = 0; i < m->psize[ids[k]]; i++)
			m->p[ids[k]][i] = 0.3f * rng_normal(&g);
	for (size_t i = 0; i < m->psize[P_LMHEAD]; i++)
		m->p[P_LMHEAD][i] *= 12.0f;
	return m;
}

/* Gemma 2 (sandwich norms frozen at each row's 1/rms of the attention's
 * output, the logits soft-capped with the cap moving some logit by more
 * than 0.5: the parts sum to the logit before the cap, and capped is the
 * model's logit), with biases (the attention's through its norm, the
 * MLP's inside its part) and without: native, MQA, an ablation, a
 * window. */
static void test_dla_gemma2(void **state)
{
	(void)state;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 3) % V;
	for (int bias = 0; bias <= 1; bias++) {
		struct model *m = make_gemma2(bias, 21 + bias);
		struct run_options o, v;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		v = o;
		v.kv_heads = 1;
		check_options(m, &v, tokens);
		v = o;
		opt_set_ablated(&v, 1 * H + 2, true);
		check_options(m, &v, tokens);
		v = o;
		v.mask = MASK_WINDOW;
		v.window = 3;
		check_options(m, &v, tokens);
		model_free(m);
	}
	if (!(bent > 0.5))
		fail_msg("the final cap moved no logit by more than %g: tanh never bent", bent);
	printf("dla: worst |part - reference| %.3g, largest |capped - logit| %.3g\n", worst, bent);
}

static void test_dla_refuses(void **state)
{
	struct model *m = make_model(false, 3, 0);
	int tokens[T] = { 0 };
	struct run_options o;
	run_options_native(m, &o);
	struct err e;
	struct dla_result d;
	assert_int_equal(dla_run(m, &o, tokens, T, T, -1, &d, &e), -1);
	assert_non_null(strstr(e.msg, "position"));
	assert_int_equal(dla_run(m, &o, tokens, T, 0, V, &d, &e), -1);
	o.placement = PLACE_POST;
	assert_int_equal(dla_run(m, &o, tokens, T, 0, -1, &d, &e), -1);
	assert_non_null(strstr(e.msg, "post-norm"));
	dla_free(&d);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dla_matches_reference),
		cmocka_unit_test(test_dla_gemma2),
		cmocka_unit_test(test_dla_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
