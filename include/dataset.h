/*
 * dataset.h — the token data of a training run: a UTF-8 text file encoded
 * once with a character vocabulary built from it, split into a training
 * part (the first 1 - f of the tokens) and a validation part (the last f).
 */
#ifndef ATTNSCOPE_DATASET_H
#define ATTNSCOPE_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"
#include "util.h"

struct dataset {
	struct tokenizer *tok; /* owned until taken (set to NULL by the taker) */
	int *ids;              /* n token ids of the whole file */
	size_t n;
	size_t n_train;        /* ids[0 .. n_train) train, ids[n_train .. n) validation */
	size_t n_val;
	size_t bytes;          /* size of the file */
	uint64_t hash;         /* FNV-1a 64 of the file's bytes */
	size_t n_unk;          /* positions that became <unk> (rarer than min_count) */

	/* How windows are drawn (dataset_set_windows; defaults: anywhere, no
	 * repeats).  line_starts[0 .. n_train_starts) are the training
	 * positions that begin a line and leave room for a window, then
	 * n_val_starts validation ones; NULL when windows start anywhere. */
	size_t *line_starts;
	size_t n_train_starts, n_val_starts;
	double repeat;         /* probability that a training window repeats a span */
	int repeat_min, repeat_max; /* span length, tokens */
	bool repeat_random;    /* the span is random tokens, written twice */
	int *chars, n_chars;   /* ids random spans draw from (owned; NULL unless repeat_random) */
};

/* Reads path (inflated when gzip: gz.h) and encodes it.  Fails with one line "PATH: problem" for a
 * missing, unreadable, empty or non-UTF-8 file, a file with NUL bytes, or a
 * text with no character occurring min_count times.  val_fraction in
 * [0, 1) is the share of tokens, taken from the end, kept for validation. */
int dataset_load(struct dataset *d, const char *path, int min_count, double val_fraction,
		 struct err *e);
/* As dataset_load, the vocabulary with the special tokens `specials`
 * (tokenizer.h: TOK_CHAR_MLM for a masked-LM encoder). */
int dataset_load_chars(struct dataset *d, const char *path, int min_count, int specials,
		       double val_fraction, struct err *e);
/* As dataset_load, encoded with tok (an existing model's vocabulary;
 * taken: d owns it on success, it is freed on failure). */
int dataset_load_tok(struct dataset *d, const char *path, struct tokenizer *tok,
		     double val_fraction, struct err *e);

void dataset_free(struct dataset *d);

/* Checks that both splits hold at least one window of T + 1 tokens (the
 * validation split only when it is not empty).  0 or -1 with a message. */
int dataset_check_context(const struct dataset *d, const char *path, int T, struct err *e);

/* Chooses how windows of T + 1 tokens are drawn.  line_starts: every
 * window (training and validation) begins at the first token of a line
 * (position 0 or just after a newline), e.g. at a poem's first character
 * when the corpus holds one poem per line.  repeat in [0, 1]: the chance
 * that a training window has a span of repeat_min .. repeat_max tokens
 * repeated: with repeat_random false, a span of the window's own text is
 * copied to a later place (the text after that place moves right); with
 * it, a sequence of tokens drawn uniformly from the characters of the text
 * (not <unk>) overwrites the window at two places, the second after the
 * first.  Validation windows stay plain text.  Fails with a message when
 * no line of either split leaves room for a window, or the span bounds do
 * not fit twice in T + 1 tokens. */
int dataset_set_windows(struct dataset *d, int T, bool line_starts, double repeat,
			int repeat_min, int repeat_max, bool repeat_random, struct err *e);

/* FNV-1a 64-bit hash of n bytes. */
uint64_t dataset_fnv1a(const void *p, size_t n);

/* Fills tokens and targets (B x T each) with B windows of T + 1 tokens
 * from the training split, starting at uniformly random offsets (or line
 * starts) drawn from r, each with a repeated span at the chance set by
 * dataset_set_windows; targets are the tokens shifted left by one. */
void dataset_sample(const struct dataset *d, struct rng *r, int B, int T, int *tokens,
		    int *targets);

/* Fills batch `batch` of n_batches fixed validation batches: B * n_batches
 * windows whose starts are spread evenly over the validation split (the
 * first at its start, the last at its end), or over its line starts when
 * windows begin at lines.  Needs n_val >= T + 1. */
void dataset_val_batch(const struct dataset *d, int batch, int n_batches, int B, int T,
		       int *tokens, int *targets);

#endif
