/*
 * sampler.h — choosing the next token from a row of logits, kept apart
 * from the model (after llama2.c's Sampler): greedy, or a draw from the
 * softmax of logits / temperature over the top_k most likely tokens.  The
 * random state is the sampler's own, so a seed reproduces a generation.
 */
#ifndef ATTNSCOPE_SAMPLER_H
#define ATTNSCOPE_SAMPLER_H

#include <stdint.h>

#include "util.h"

struct sampler {
	int vocab_size;    /* ids drawn: 0 .. vocab_size-1, the first of a logits row
			    * that may be longer (decoder_ids: a tokenizer smaller
			    * than the model's vocabulary) */
	float temperature; /* 0: always the most likely token */
	int top_k;         /* draw among the k most likely; 0 or >= vocab_size: all */
	struct rng rng;
	int *order;        /* (vocab_size) scratch: token ids by logit */
	float *probs;      /* (vocab_size) scratch */
};

/* Sets up s for vocab_size tokens.  temperature >= 0, top_k >= 0. */
void sampler_init(struct sampler *s, int vocab_size, float temperature, int top_k,
		  uint64_t seed);
void sampler_free(struct sampler *s);

/* The next token for logits (at least vocab_size of them; any beyond are
 * never read); ties go to the smaller id.  With
 * exclude >= 0 that id is never chosen (e.g. <unk>), unless it is the only
 * token. */
int sampler_sample(struct sampler *s, const float *logits, int exclude);

#endif
