/*
 * mlm.h — batches for the masked-language-model objective (Devlin et al.
 * 2019, BERT): windows of a character text wrapped as [CLS] ... [SEP],
 * some positions corrupted, the loss only where they were.
 *
 * A window of T tokens: [CLS], the first T - 2 tokens of a text window
 * (dataset.h: with line starts, from the first character of a line;
 * lines inside it are separated by their newline characters, and the last
 * one may be cut), [SEP].  Of its T - 2 ordinary positions,
 * round(MLM_SELECT x (T - 2)) are selected uniformly without replacement;
 * each selected position becomes [MASK] with chance MLM_MASK, a random
 * character (uniform over the vocabulary's characters, never a special
 * token) with chance MLM_RANDOM, else keeps its token.  Its target is the
 * original token; every other position (the special tokens among them)
 * has target -1, so the loss counts the selected positions only.
 *
 * Layer: text (it needs the dataset and the character vocabulary only).
 */
#ifndef ATTNSCOPE_MLM_H
#define ATTNSCOPE_MLM_H

#include "dataset.h"
#include "tokenizer.h"
#include "util.h"

#define MLM_SELECT 0.15 /* share of ordinary positions selected */
#define MLM_MASK   0.8  /* of those: replaced by [MASK] */
#define MLM_RANDOM 0.1  /* by a random character; the remaining 0.1 unchanged */

/* Whether tok can make MLM batches (a character vocabulary with [CLS],
 * [SEP] and [MASK], TOK_CHAR_MLM) and T leaves an ordinary position
 * (T >= 3).  0, or -1 with a message. */
int mlm_check(const struct tokenizer *tok, int T, struct err *e);

/*
 * Turns B plain windows tokens (B, T) in place into MLM inputs and writes
 * their targets (B, T), with the draws from r: tokens[b][0] = [CLS],
 * tokens[b][1 .. T-2] the window's first T - 2 tokens corrupted as above,
 * tokens[b][T-1] = [SEP].  tok must pass mlm_check.
 */
void mlm_corrupt(const struct tokenizer *tok, struct rng *r, int B, int T, int *tokens,
		 int *targets);

/* B training windows (dataset_sample's, which must leave T + 1 tokens)
 * made MLM inputs, both drawing from r. */
void mlm_sample(const struct dataset *d, const struct tokenizer *tok, struct rng *r, int B,
		int T, int *tokens, int *targets);

/* Fixed validation batch `batch` of n_batches (dataset_val_batch's
 * windows), corrupted with draws seeded from seed and batch alone: the
 * same positions and replacements at every validation of a run. */
void mlm_val_batch(const struct dataset *d, const struct tokenizer *tok, uint64_t seed,
		   int batch, int n_batches, int B, int T, int *tokens, int *targets);

#endif
