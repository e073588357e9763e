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

/* The reference's value of part pt at position pos for token v. */
static double ref_part(const struct model *m, const struct ref_trace *tr, const int *tokens,
		       int pos, int v, double rstd, const struct dla_part *pt)
{
	double p[C] = { 0 };
	const double *row;
	switch (pt->kind) {
	case DLA_TOKEN:
		for (int j = 0; j < C; j++)
			p[j] = m->p[P_WTE][(size_t)tokens[pos] * C + j];
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
		break;
	case DLA_MLP:
		for (int j = 0; j < C; j++)
			p[j] = tr->resid[((size_t)(pt->layer + 1) * T + pos) * C + j] -
			       tr->att_res[((size_t)pt->layer * T + pos) * C + j] -
			       (m->p[P_FCPROJB] ? m->p[P_FCPROJB][(size_t)pt->layer * C + j] : 0.0);
		break;
	case DLA_ATTN_BIAS:
	case DLA_MLP_BIAS:
		for (int l = 0; l < L; l++)
			for (int j = 0; j < C; j++)
				p[j] += m->p[pt->kind == DLA_ATTN_BIAS ? P_ATTPROJB : P_FCPROJB][(size_t)l * C + j];
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
			assert_true(fabs(sum - logits[pos * V + v]) < 1e-9 * (1 + fabs(sum)));
			assert_true(fabs(d.sum + d.left_out - d.logit) < 1e-12);
			if (!(fabs(d.left_out) < 1e-4))
				fail_msg("left out %g at %d", d.left_out, pos);
			assert_true(fabs(d.logit - logits[pos * V + v]) < 1e-4);
			const float *fl = full->logits + (size_t)pos * V;
			int best = 0;
			for (int k = 1; k < V; k++)
				best = fl[k] > fl[best] ? k : best;
			if (!(fabs(d.logit - fl[v]) <= 1e-5 * (1 + fabs(fl[v]))))
				fail_msg("logit %g at %d, the whole pass's %g", d.logit, pos, fl[v]);
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
		cmocka_unit_test(test_dla_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
