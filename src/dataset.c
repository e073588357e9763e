/*
 * dataset.c — loading, checking and encoding a training text, and drawing
 * training and validation windows from it.
 */
#include "dataset.h"

#include <stdlib.h>
#include <string.h>

/* Defined in tok-char.c: a character vocabulary of the code points that
 * occur at least min_count times in text (rarer ones become <unk>). */
struct tokenizer *tok_char_from_text(const char *text, size_t len, int min_count,
				     int with_bos, struct err *e);

uint64_t dataset_fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Rejects text that is not valid UTF-8 or contains NUL bytes, naming the
 * byte offset of the first problem. */
static int check_text(const char *text, size_t len, const char *path, struct err *e)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0;
	while (i < len) {
		if (s[i] == 0)
			return err_set(e, "%s: NUL byte at offset %zu; not a text file", path, i);
		uint32_t cp;
		int bad;
		int k = utf8_decode(s + i, len - i, &cp, &bad);
		if (bad)
			return err_set(e, "%s: not UTF-8 text (invalid byte 0x%02x at offset %zu)",
				       path, s[i], i);
		i += (size_t)k;
	}
	return 0;
}

int dataset_load(struct dataset *d, const char *path, int min_count, double val_fraction,
		 struct err *e)
{
	memset(d, 0, sizeof *d);
	size_t len;
	char *text = read_file(path, &len, e);
	if (!text)
		return -1;
	if (len == 0) {
		free(text);
		return err_set(e, "%s: empty file", path);
	}
	if (len > (size_t)1 << 31) {
		free(text);
		return err_set(e, "%s: %zu bytes is more than the 2 GiB a training text may have",
			       path, len);
	}
	if (check_text(text, len, path, e)) {
		free(text);
		return -1;
	}
	d->bytes = len;
	d->hash = dataset_fnv1a(text, len);
	d->tok = tok_char_from_text(text, len, min_count, 0, e);
	if (!d->tok) {
		free(text);
		return err_prefix(e, "%s", path);
	}
	if (d->tok->vocab_size < 2) {
		free(text);
		dataset_free(d);
		return err_set(e, "%s: no character occurs %d times (--min-count)", path, min_count);
	}
	int n = 0;
	if (tok_encode(d->tok, text, len, 0, &d->ids, &n, e) < 0) {
		free(text);
		dataset_free(d);
		return err_prefix(e, "%s", path);
	}
	free(text);
	d->n = (size_t)n;
	d->n_val = (size_t)((double)d->n * val_fraction);
	d->n_train = d->n - d->n_val;
	for (size_t i = 0; i < d->n; i++)
		d->n_unk += d->ids[i] == d->tok->unk_id;
	return 0;
}

void dataset_free(struct dataset *d)
{
	tok_free(d->tok);
	free(d->ids);
	memset(d, 0, sizeof *d);
}

int dataset_check_context(const struct dataset *d, const char *path, int T, struct err *e)
{
	size_t need = (size_t)T + 1;
	if (d->n_train < need)
		return err_set(e, "%s: the training split has %zu tokens, fewer than context + 1 = %zu; "
			       "use a smaller --context or more text", path, d->n_train, need);
	if (d->n_val > 0 && d->n_val < need)
		return err_set(e, "%s: the validation split has %zu tokens, fewer than context + 1 = %zu; "
			       "use a smaller --context or a larger --val-fraction", path, d->n_val, need);
	return 0;
}

/* Copies the window of T + 1 tokens at start into one row of tokens and
 * targets. */
static void window(const struct dataset *d, size_t start, int T, int *tokens, int *targets)
{
	memcpy(tokens, d->ids + start, (size_t)T * sizeof(int));
	memcpy(targets, d->ids + start + 1, (size_t)T * sizeof(int));
}

void dataset_sample(const struct dataset *d, struct rng *r, int B, int T, int *tokens,
		    int *targets)
{
	uint64_t starts = d->n_train - (size_t)T; /* valid starts: 0 .. n_train - T - 1 */
	for (int b = 0; b < B; b++) {
		uint64_t x = ((uint64_t)rng_u32(r) << 32) | rng_u32(r);
		window(d, (size_t)(x % starts), T, tokens + (size_t)b * T, targets + (size_t)b * T);
	}
}

void dataset_val_batch(const struct dataset *d, int batch, int n_batches, int B, int T,
		       int *tokens, int *targets)
{
	uint64_t count = (uint64_t)n_batches * B;
	uint64_t last = d->n_val - (size_t)T - 1; /* largest start inside the split */
	for (int b = 0; b < B; b++) {
		uint64_t i = (uint64_t)batch * B + b;
		uint64_t start = count > 1 ? i * last / (count - 1) : 0;
		window(d, d->n_train + (size_t)start, T, tokens + (size_t)b * T,
		       targets + (size_t)b * T);
	}
}
