/*
 * sampler.c — greedy and top-k temperature sampling (see sampler.h).
 */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>

void sampler_init(struct sampler *s, int vocab_size, float temperature, int top_k,
		  uint64_t seed)
{
	s->vocab_size = vocab_size;
	s->temperature = temperature;
	s->top_k = top_k <= 0 || top_k > vocab_size ? vocab_size : top_k;
	rng_seed(&s->rng, seed);
	s->order = xmalloc((size_t)vocab_size * sizeof *s->order);
	s->probs = xmalloc((size_t)vocab_size * sizeof *s->probs);
}

void sampler_free(struct sampler *s)
{
	free(s->order);
	free(s->probs);
	s->order = NULL;
	s->probs = NULL;
}

/* The k most likely ids of logits (not exclude) into order[0 .. returned),
 * most likely first, ties to the smaller id: a partial insertion sort. */
static int top_ids(const float *logits, int V, int k, int exclude, int *order)
{
	int n = 0;
	for (int id = 0; id < V; id++) {
		if (id == exclude)
			continue;
		if (n == k && logits[id] <= logits[order[n - 1]])
			continue;
		int i = n < k ? n++ : n - 1;
		while (i > 0 && logits[order[i - 1]] < logits[id]) {
			order[i] = order[i - 1];
			i--;
		}
		order[i] = id;
	}
	return n;
}

int sampler_sample(struct sampler *s, const float *logits, int exclude)
{
	int V = s->vocab_size;
	if (exclude >= 0 && V == 1)
		exclude = -1;
	int k = s->temperature <= 0.0f ? 1 : s->top_k;
	if (exclude >= 0 && k > V - 1)
		k = V - 1;
	int n = top_ids(logits, V, k, exclude, s->order);
	if (s->temperature <= 0.0f || n == 1)
		return s->order[0];
	double sum = 0.0, mx = logits[s->order[0]];
	for (int i = 0; i < n; i++) {
		s->probs[i] = (float)exp((logits[s->order[i]] - mx) / s->temperature);
		sum += s->probs[i];
	}
	double r = rng_uniform(&s->rng) * sum, acc = 0.0;
	for (int i = 0; i < n; i++) {
		acc += s->probs[i];
		if (r < acc)
			return s->order[i];
	}
	return s->order[n - 1];
}
