/*
 * lens.c — the logit lens (see lens.h): the output head (the final norm
 * and the output layer, or BERT's MLM head) applied to the residual stream kept at every depth of a run.
 */
#include "lens.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "fastmath.h"
#include "ops.h"

/* The stream at depth d, position i of batch 0: resid holds (L + 1, b, t, C). */
static const float *stream(const struct run *r, int d, int i)
{
	return r->resid + ((size_t)d * r->b * r->t + (size_t)i) * r->C;
}

/* Lens logits of n rows x (each C wide, stride C) into z (n, V). */
static void read_out(const struct model *m, const float *x, int n, float *z)
{
	size_t size = (size_t)n * m->cfg.d_model * sizeof(float);
	float *xn = xmalloc(size), *tmp = xmalloc(size);
	model_head_forward(m, z, xn, NULL, NULL, tmp, x, n);
	free(xn);
	free(tmp);
}

void lens_logits(const struct model *m, const struct run *r, int d, int i, float *z)
{
	read_out(m, stream(r, d, i), 1, z);
}

void lens_run(const struct model *m, const struct run *r, struct lens *out)
{
	int L = m->cfg.n_layer, T = r->t, V = m->cfg.vocab_size;
	out->D = L + 1;
	out->T = T;
	out->V = V;
	out->final = xmalloc((size_t)T * sizeof *out->final);
	out->p = xmalloc((size_t)out->D * T * sizeof *out->p);
	out->top = xmalloc((size_t)out->D * T * sizeof *out->top);
	float *buf = xmalloc((size_t)T * V * sizeof *buf);
	for (int d = L; d >= 0; d--) {
		/* batch 0's T rows at depth d are contiguous; the last depth's
		 * are the run's own logits when it kept them */
		const float *z = buf;
		if (d == L && r->logits)
			z = run_logits(r);
		else
			read_out(m, stream(r, d, 0), T, buf);
		for (int i = 0; i < T; i++) {
			/* the most likely token (the first of the largest logits),
			 * then one pass of exponentials for the final prediction's
			 * probability: both vectorised, this loop being the lens's
			 * cost beside the output layer */
			const float *zi = z + (size_t)i * V;
			float mx = fast_maxf(zi, V);
			int best = 0;
			while (best < V - 1 && zi[best] != mx)
				best++;
			if (d == L)
				out->final[i] = best;
			out->top[(size_t)d * T + i] = best;
			double sum = 0.0;
#pragma omp simd reduction(+ : sum)
			for (int j = 0; j < V; j++)
				sum += fast_expf(zi[j] - mx);
			out->p[(size_t)d * T + i] = (float)(fast_expf(zi[out->final[i]] - mx) / sum);
		}
	}
	free(buf);
}

void lens_free(struct lens *l)
{
	free(l->final);
	free(l->p);
	free(l->top);
	memset(l, 0, sizeof *l);
}

void lens_depth_name(int d, char *buf, size_t size)
{
	if (d == 0)
		snprintf(buf, size, "embeddings");
	else
		snprintf(buf, size, "after %d", d - 1);
}
