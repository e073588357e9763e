/*
 * mlm.c — masked-LM batches (mlm.h).
 */
#include "mlm.h"

#include <math.h>
#include <stdlib.h>

int mlm_check(const struct tokenizer *tok, int T, struct err *e)
{
	if (tok_char_mask_id(tok) < 0)
		return err_set(e, "masked-LM batches need a character vocabulary with [CLS], [SEP] "
			       "and [MASK]");
	if (tok->vocab_size <= tok_char_specials(tok))
		return err_set(e, "masked-LM batches need at least one character in the vocabulary");
	if (T < 3)
		return err_set(e, "masked-LM windows need a context of at least 3 ([CLS], one "
			       "token, [SEP]), not %d", T);
	return 0;
}

/* A uniform integer in [0, n), n >= 1. */
static int draw(struct rng *r, int n)
{
	return (int)(((uint64_t)rng_u32(r) * (uint64_t)n) >> 32);
}

/* One window w (T tokens) and its targets t. */
static void corrupt_one(const struct tokenizer *tok, struct rng *r, int T, int *w, int *t,
			int *order)
{
	int n = T - 2, first = tok_char_specials(tok), nchars = tok->vocab_size - first;
	int k = (int)lround(MLM_SELECT * n);
	for (int i = T - 1; i >= 1; i--) /* the window moves right by one */
		w[i] = w[i - 1];
	w[0] = tok->bos_id;
	w[T - 1] = tok->eos_id;
	for (int i = 0; i < T; i++)
		t[i] = -1;
	for (int i = 0; i < n; i++)
		order[i] = 1 + i;
	for (int i = 0; i < k; i++) { /* the first k of a partial Fisher-Yates shuffle */
		int j = i + draw(r, n - i), p = order[j];
		order[j] = order[i];
		order[i] = p;
		t[p] = w[p];
		float u = rng_uniform(r);
		if (u < MLM_MASK)
			w[p] = tok_char_mask_id(tok);
		else if (u < MLM_MASK + MLM_RANDOM)
			w[p] = first + draw(r, nchars);
	}
}

void mlm_corrupt(const struct tokenizer *tok, struct rng *r, int B, int T, int *tokens,
		 int *targets)
{
	int *order = xmalloc((size_t)T * sizeof *order);
	for (int b = 0; b < B; b++)
		corrupt_one(tok, r, T, tokens + (size_t)b * T, targets + (size_t)b * T, order);
	free(order);
}

void mlm_sample(const struct dataset *d, const struct tokenizer *tok, struct rng *r, int B,
		int T, int *tokens, int *targets)
{
	dataset_sample(d, r, B, T, tokens, targets);
	mlm_corrupt(tok, r, B, T, tokens, targets);
}

void mlm_val_batch(const struct dataset *d, const struct tokenizer *tok, uint64_t seed,
		   int batch, int n_batches, int B, int T, int *tokens, int *targets)
{
	struct rng r;
	rng_seed(&r, seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(batch + 1)));
	dataset_val_batch(d, batch, n_batches, B, T, tokens, targets);
	mlm_corrupt(tok, &r, B, T, tokens, targets);
}
