/*
 * test_lens.c — the logit lens (lens.h).
 *
 *  - At the last depth the lens is the model's own output: final[i] is the
 *    argmax of the run's logits and p is their softmax there (1e-5).
 *  - At every depth and position the lens logits equal a direct double-
 *    precision computation from the run's residual stream (the final norm
 *    written out, then the tied or untied output layer), within
 *    1e-4 + 1e-4 |ref|, for LayerNorm/tied and RMSNorm/untied models.
 *  - p at every depth is a probability (in [0, 1]) and top is the argmax
 *    of that depth's lens.
 *  - Ablating every head of the last layer leaves the lens before that
 *    layer unchanged (nothing before it reads those heads) and changes
 *    the last depth.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lens.h"
#include "model.h"
#include "randmodel.h"

enum { V = 23, T = 9 };

/* A random model of 3 layers whose final norm is not all ones. */
static struct model *make_model(bool llama, uint64_t seed)
{
	struct model *m = randmodel_new(llama, 3, 4, V, 1.0f, seed);
	for (size_t i = 0; i < m->psize[P_LNFW]; i++)
		m->p[P_LNFW][i] = 0.5f + (float)(i % 7) * 0.1f;
	return m;
}

/* The lens logits at one stream row x, in double, written out. */
static void reference(const struct model *m, const float *x, double *z)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model;
	double mean = 0, var = 0, xn[64];
	for (int j = 0; j < C; j++)
		mean += x[j];
	mean /= C;
	for (int j = 0; j < C; j++)
		var += c->norm == NORM_RMS ? (double)x[j] * x[j] : (x[j] - mean) * (x[j] - mean);
	var /= C;
	double rstd = 1.0 / sqrt(var + c->norm_eps);
	for (int j = 0; j < C; j++) {
		double v = c->norm == NORM_RMS ? x[j] * rstd : (x[j] - mean) * rstd;
		xn[j] = v * m->p[P_LNFW][j] + (m->p[P_LNFB] ? m->p[P_LNFB][j] : 0.0);
	}
	const float *w = c->tied ? m->p[P_WTE] : m->p[P_LMHEAD];
	for (int v = 0; v < V; v++) {
		double s = 0;
		for (int j = 0; j < C; j++)
			s += xn[j] * w[(size_t)v * C + j];
		z[v] = s;
	}
}

static void test_lens_matches_reference(void **state)
{
	(void)state;
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = make_model(llama, 5 + llama);
		int tokens[T];
		for (int i = 0; i < T; i++)
			tokens[i] = (i * 4 + 1) % V;
		struct run_options o;
		run_options_native(m, &o);
		struct err e;
		struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
		assert_int_equal(model_forward(m, &o, tokens, NULL, 1, T, r, &e), 0);
		struct lens ln;
		lens_run(m, r, &ln);
		assert_int_equal(ln.D, m->cfg.n_layer + 1);
		int C = m->cfg.d_model;
		float z[V];
		double ref[V];
		for (int d = 0; d < ln.D; d++)
			for (int i = 0; i < T; i++) {
				lens_logits(m, r, d, i, z);
				reference(m, r->resid + ((size_t)d * T + i) * C, ref);
				int best = 0;
				for (int v = 0; v < V; v++) {
					assert_true(fabs(z[v] - ref[v]) <= 1e-4 + 1e-4 * fabs(ref[v]));
					best = z[v] > z[best] ? v : best;
				}
				assert_int_equal(ln.top[(size_t)d * T + i], best);
				float p = ln.p[(size_t)d * T + i];
				assert_true(p >= 0.0f && p <= 1.0f);
			}
		/* the last depth is the model's output */
		for (int i = 0; i < T; i++) {
			const float *lg = run_logits(r) + (size_t)i * V;
			int best = 0;
			double sum = 0;
			for (int v = 0; v < V; v++)
				best = lg[v] > lg[best] ? v : best;
			for (int v = 0; v < V; v++)
				sum += exp((double)lg[v] - lg[best]);
			assert_int_equal(ln.final[i], best);
			assert_true(fabs(ln.p[(size_t)(ln.D - 1) * T + i] - 1.0 / sum) < 1e-5);
		}

		/* ablating the last layer's heads: earlier depths unchanged */
		struct run_options ab = o;
		for (int h = 0; h < 4; h++)
			opt_set_ablated(&ab, (m->cfg.n_layer - 1) * 4 + h, true);
		struct run *ra = run_new(&m->cfg, 1, T, RUN_LOGITS);
		assert_int_equal(model_forward(m, &ab, tokens, NULL, 1, T, ra, &e), 0);
		struct lens la;
		lens_run(m, ra, &la);
		size_t before = (size_t)(ln.D - 1) * T;
		bool last_differs = false;
		float za[V];
		for (int d = 0; d < ln.D - 1; d++)
			for (int i = 0; i < T; i++) {
				lens_logits(m, r, d, i, z);
				lens_logits(m, ra, d, i, za);
				assert_memory_equal(z, za, sizeof z);
				assert_int_equal(la.top[(size_t)d * T + i], ln.top[(size_t)d * T + i]);
			}
		for (int i = 0; i < T; i++)
			last_differs |= fabs(la.p[before + i] - ln.p[before + i]) > 1e-4 ||
					la.final[i] != ln.final[i];
		assert_true(last_differs);
		lens_free(&la);
		run_free(ra);
		lens_free(&ln);
		run_free(r);
		model_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lens_matches_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
