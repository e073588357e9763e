/*
 * dataset.c — loading, checking and encoding a training text, and drawing
 * training and validation windows from it.
 */
#include "dataset.h"

#include <stdlib.h>
#include <string.h>

#include "gz.h"

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

/* dataset_load and dataset_load_tok: tok is the vocabulary to encode with
 * (taken), or NULL to build one of the text's characters. */
static int load(struct dataset *d, const char *path, struct tokenizer *tok, int min_count,
		int specials, double val_fraction, struct err *e)
{
	memset(d, 0, sizeof *d);
	size_t len;
	/* the size is refused before anything is read */
	char *text = gz_read_file(path, (size_t)1 << 31, "a training text", &len, e);
	if (!text) {
		tok_free(tok);
		return -1;
	}
	int rc = 0;
	if (len == 0)
		rc = err_set(e, "%s: empty file", path);
	else
		rc = check_text(text, len, path, e);
	if (rc) {
		free(text);
		tok_free(tok);
		return -1;
	}
	d->bytes = len;
	d->hash = dataset_fnv1a(text, len);
	d->tok = tok ? tok : tok_char_from_text(text, len, min_count, specials, e);
	if (!d->tok) {
		free(text);
		return err_prefix(e, "%s", path);
	}
	if (d->tok->vocab_size < 2 || (!tok && tok_char_specials(d->tok) == d->tok->vocab_size)) {
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

int dataset_load(struct dataset *d, const char *path, int min_count, double val_fraction,
		 struct err *e)
{
	return load(d, path, NULL, min_count, TOK_CHAR_PLAIN, val_fraction, e);
}

int dataset_load_chars(struct dataset *d, const char *path, int min_count, int specials,
		       double val_fraction, struct err *e)
{
	return load(d, path, NULL, min_count, specials, val_fraction, e);
}

int dataset_load_tok(struct dataset *d, const char *path, struct tokenizer *tok,
		     double val_fraction, struct err *e)
{
	return load(d, path, tok, 1, TOK_CHAR_PLAIN, val_fraction, e);
}

void dataset_free(struct dataset *d)
{
	tok_free(d->tok);
	free(d->ids);
	free(d->line_starts);
	free(d->chars);
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

/* The id of "\n" in d's vocabulary, or -1. */
static int newline_id(const struct dataset *d)
{
	int *ids = NULL, n = 0;
	struct err e = { 0 };
	int id = -1;
	if (tok_encode(d->tok, "\n", 1, 0, &ids, &n, &e) >= 0 && n == 1 && ids[0] != d->tok->unk_id)
		id = ids[0];
	free(ids);
	return id;
}

int dataset_set_windows(struct dataset *d, int T, bool line_starts, double repeat,
			int repeat_min, int repeat_max, bool repeat_random, struct err *e)
{
	free(d->line_starts);
	d->line_starts = NULL;
	d->n_train_starts = d->n_val_starts = 0;
	if (repeat > 0 && (repeat_min < 1 || repeat_min > repeat_max || 2 * repeat_max > T + 1))
		return err_set(e, "repeated spans of %d..%d tokens do not fit twice in a window of "
			       "%d + 1 tokens", repeat_min, repeat_max, T);
	d->repeat = repeat;
	d->repeat_min = repeat_min;
	d->repeat_max = repeat_max;
	d->repeat_random = repeat_random;
	free(d->chars);
	d->chars = NULL;
	d->n_chars = 0;
	if (repeat_random) { /* the tokenizer may be handed to a model before sampling */
		d->chars = xmalloc((size_t)d->tok->vocab_size * sizeof *d->chars);
		for (int id = 0; id < d->tok->vocab_size; id++)
			if (id != d->tok->unk_id && id != d->tok->bos_id)
				d->chars[d->n_chars++] = id;
		if (d->n_chars == 0)
			return err_set(e, "random repeated spans need a character to draw");
	}
	if (!line_starts)
		return 0;
	int nl = newline_id(d);
	if (nl < 0)
		return err_set(e, "windows at line starts: the text has no newline");
	/* training starts s need s + T + 1 <= n_train, validation ones
	 * n_train <= s and s + T + 1 <= n */
	size_t cap = 1024, k = 0, need = (size_t)T + 1;
	size_t *v = xmalloc(cap * sizeof *v);
	for (int part = 0; part < 2; part++) {
		size_t lo = part ? d->n_train : 0, end = part ? d->n : d->n_train;
		for (size_t s = lo; s + need <= end; s++) {
			if (s > lo && d->ids[s - 1] != nl)
				continue;
			if (k == cap)
				v = xrealloc(v, (cap *= 2) * sizeof *v);
			v[k++] = s;
		}
		if (part == 0)
			d->n_train_starts = k;
		else
			d->n_val_starts = k - d->n_train_starts;
	}
	d->line_starts = v;
	if (d->n_train_starts == 0 || (d->n_val > 0 && d->n_val_starts == 0))
		return err_set(e, "windows at line starts: no line of the %s split is followed by "
			       "%zu tokens", d->n_train_starts ? "validation" : "training", need);
	return 0;
}

/* Copies the window of T + 1 tokens at start into one row of tokens and
 * targets. */
static void window(const struct dataset *d, size_t start, int T, int *tokens, int *targets)
{
	memcpy(tokens, d->ids + start, (size_t)T * sizeof(int));
	memcpy(targets, d->ids + start + 1, (size_t)T * sizeof(int));
}

static uint64_t rng_u64(struct rng *r)
{
	return ((uint64_t)rng_u32(r) << 32) | rng_u32(r);
}

/* A character id drawn uniformly (not <unk>, not BOS). */
static int random_char(const struct dataset *d, struct rng *r)
{
	return d->chars[rng_u32(r) % (uint32_t)d->n_chars];
}

/* The window of T + 1 tokens at start with a span of k tokens at offset a
 * repeated at offset b (a + k <= b <= T + 1 - k), written as tokens and
 * targets.  Text spans: w[0, b) w[a, a+k) w[b, T+1-k).  Random spans: w
 * with R written over [a, a+k) and [b, b+k). */
static void window_repeat(const struct dataset *d, size_t start, int T, struct rng *r,
			  int *tokens, int *targets)
{
	int n = T + 1, span = d->repeat_max - d->repeat_min + 1;
	int k = d->repeat_min + (int)(rng_u32(r) % (uint32_t)span);
	int a = (int)(rng_u32(r) % (uint32_t)(n - 2 * k + 1));
	int b = a + k + (int)(rng_u32(r) % (uint32_t)(n - k - (a + k) + 1));
	const int *w = d->ids + start;
	int *out = xmalloc((size_t)n * sizeof *out);
	if (d->repeat_random) {
		memcpy(out, w, (size_t)n * sizeof *out);
		for (int i = 0; i < k; i++)
			out[a + i] = out[b + i] = random_char(d, r);
	} else {
		memcpy(out, w, (size_t)b * sizeof *out);
		memcpy(out + b, w + a, (size_t)k * sizeof *out);
		memcpy(out + b + k, w + b, (size_t)(n - b - k) * sizeof *out);
	}
	memcpy(tokens, out, (size_t)T * sizeof *out);
	memcpy(targets, out + 1, (size_t)T * sizeof *out);
	free(out);
}

void dataset_sample(const struct dataset *d, struct rng *r, int B, int T, int *tokens,
		    int *targets)
{
	uint64_t starts = d->line_starts ? d->n_train_starts
					 : d->n_train - (size_t)T; /* 0 .. n_train - T - 1 */
	for (int b = 0; b < B; b++) {
		uint64_t x = rng_u64(r) % starts;
		size_t start = d->line_starts ? d->line_starts[x] : (size_t)x;
		int *tk = tokens + (size_t)b * T, *tg = targets + (size_t)b * T;
		if (d->repeat > 0 && rng_uniform(r) < d->repeat)
			window_repeat(d, start, T, r, tk, tg);
		else
			window(d, start, T, tk, tg);
	}
}

void dataset_val_batch(const struct dataset *d, int batch, int n_batches, int B, int T,
		       int *tokens, int *targets)
{
	uint64_t count = (uint64_t)n_batches * B;
	for (int b = 0; b < B; b++) {
		uint64_t i = (uint64_t)batch * B + b;
		size_t start;
		if (d->line_starts) {
			uint64_t last = d->n_val_starts - 1;
			start = d->line_starts[d->n_train_starts +
					       (count > 1 ? i * last / (count - 1) : 0)];
		} else {
			uint64_t last = d->n_val - (size_t)T - 1; /* largest start inside the split */
			start = d->n_train + (size_t)(count > 1 ? i * last / (count - 1) : 0);
		}
		window(d, start, T, tokens + (size_t)b * T, targets + (size_t)b * T);
	}
}
