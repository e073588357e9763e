/*
 * tok-char.c — character-level tokenizer: one token per Unicode code point,
 * after "<unk>" (id 0) and optionally "<bos>" (id 1) or a masked-LM
 * encoder's "[CLS]", "[SEP]" and "[MASK]" (ids 1-3; tokenizer.h).
 *
 * Lookup from code point to id uses a table for ASCII and binary search
 * over the code points sorted once at construction, so a 10k-character
 * vocabulary costs about 14 comparisons per character.  Building from
 * sample text counts code points in a small hash table.
 */
#include "tokenizer.h"
#include "tok-common.h"
#include "json-util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define CP_LIMIT 0x110000u	/* one past the last code point */

struct cp_id {
	uint32_t cp;
	int id;
};

struct char_impl {
	int nspecial;		/* 1 (unk), 2 (unk, bos) or 4 (unk, cls, sep, mask) */
	int n;			/* character tokens */
	uint32_t *cps;		/* code point of id nspecial + i */
	struct cp_id *sorted;	/* the same, ascending by code point */
	int ascii[128];		/* id of each ASCII code point, or unk */
};

static const struct tokenizer_ops char_ops;

static int cp_valid(uint32_t cp)
{
	return cp < CP_LIMIT && (cp < 0xD800 || cp > 0xDFFF);
}

static int cmp_cp_id(const void *a, const void *b)
{
	const struct cp_id *x = a, *y = b;

	if (x->cp != y->cp)
		return x->cp < y->cp ? -1 : 1;
	return 0;
}

/* Id of code point cp, or the unk id when it is not in the vocabulary. */
static int char_lookup(const struct tokenizer *t, uint32_t cp)
{
	const struct char_impl *c = t->impl;
	int lo = 0, hi = c->n;

	if (cp < 128)
		return c->ascii[cp];
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (c->sorted[mid].cp < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n && c->sorted[lo].cp == cp)
		return c->sorted[lo].id;
	return t->unk_id;
}

struct tokenizer *tok_char_new(const uint32_t *cps, int n, int specials, struct err *e)
{
	struct tokenizer *t;
	struct char_impl *c;
	int i;

	if (specials < TOK_CHAR_PLAIN || specials > TOK_CHAR_MLM) {
		err_set(e, "char tokenizer: unknown special tokens %d", specials);
		return NULL;
	}
	if (n < 0 || n > INT_MAX - 4) {
		err_set(e, "char tokenizer: bad number of characters %d", n);
		return NULL;
	}
	if (n > 0 && !cps) {
		err_set(e, "char tokenizer: no characters given");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (!cp_valid(cps[i])) {
			err_set(e, "char tokenizer: U+%04X (at %d) is not a valid code point",
				(unsigned)cps[i], i);
			return NULL;
		}
	}

	c = xcalloc(1, sizeof *c);
	c->nspecial = specials == TOK_CHAR_MLM ? 4 : specials == TOK_CHAR_BOS ? 2 : 1;
	c->n = n;
	c->cps = xmalloc((size_t)n * sizeof *c->cps);
	c->sorted = xmalloc((size_t)n * sizeof *c->sorted);
	if (n)
		memcpy(c->cps, cps, (size_t)n * sizeof *c->cps);
	for (i = 0; i < n; i++) {
		c->sorted[i].cp = cps[i];
		c->sorted[i].id = c->nspecial + i;
	}
	if (n)
		qsort(c->sorted, (size_t)n, sizeof *c->sorted, cmp_cp_id);
	for (i = 1; i < n; i++) {
		if (c->sorted[i].cp == c->sorted[i - 1].cp) {
			int a = c->sorted[i - 1].id - c->nspecial;
			int b = c->sorted[i].id - c->nspecial;

			err_set(e, "char tokenizer: U+%04X appears twice (at %d and %d)",
				(unsigned)c->sorted[i].cp, a < b ? a : b, a < b ? b : a);
			free(c->cps);
			free(c->sorted);
			free(c);
			return NULL;
		}
	}
	for (i = 0; i < 128; i++)
		c->ascii[i] = 0;
	for (i = 0; i < n && c->sorted[i].cp < 128; i++)
		c->ascii[c->sorted[i].cp] = c->sorted[i].id;

	t = xcalloc(1, sizeof *t);
	t->ops = &char_ops;
	t->vocab_size = c->nspecial + n;
	t->unk_id = 0;
	t->bos_id = specials != TOK_CHAR_PLAIN ? 1 : -1;
	t->eos_id = specials == TOK_CHAR_MLM ? 2 : -1;
	t->impl = c;
	return t;
}

int32_t tok_char_codepoint(const struct tokenizer *t, int id)
{
	const struct char_impl *c;

	if (!t || t->ops != &char_ops || id < 0 || id >= t->vocab_size)
		return -1;
	c = t->impl;
	if (id < c->nspecial)
		return -1;
	return (int32_t)c->cps[id - c->nspecial];
}

int tok_char_mask_id(const struct tokenizer *t)
{
	if (!t || t->ops != &char_ops)
		return -1;
	return ((const struct char_impl *)t->impl)->nspecial == 4 ? 3 : -1;
}

int tok_char_specials(const struct tokenizer *t)
{
	if (!t || t->ops != &char_ops)
		return -1;
	return ((const struct char_impl *)t->impl)->nspecial;
}

/* Occurrence counts per code point: open addressing, linear probing. */
struct cp_count {
	uint32_t cp;		/* EMPTY_CP when the slot is free */
	uint32_t count;		/* saturates at UINT32_MAX */
};

#define EMPTY_CP UINT32_MAX

struct count_table {
	struct cp_count *slot;
	uint32_t mask;		/* slots - 1, a power of two minus one */
	uint32_t used;
};

static uint32_t cp_hash(uint32_t cp, uint32_t mask)
{
	return (cp * 0x9E3779B1u >> 8) & mask;
}

static void count_init(struct count_table *h, uint32_t slots)
{
	uint32_t i;

	h->slot = xmalloc((size_t)slots * sizeof *h->slot);
	for (i = 0; i < slots; i++)
		h->slot[i].cp = EMPTY_CP;
	h->mask = slots - 1;
	h->used = 0;
}

static struct cp_count *count_find(struct count_table *h, uint32_t cp)
{
	uint32_t i = cp_hash(cp, h->mask);

	while (h->slot[i].cp != EMPTY_CP && h->slot[i].cp != cp)
		i = (i + 1) & h->mask;
	return &h->slot[i];
}

static void count_add(struct count_table *h, uint32_t cp)
{
	struct cp_count *c = count_find(h, cp);

	if (c->cp == EMPTY_CP) {
		/* At most 0x110000 keys, so doubling below half load ends. */
		if (2 * (h->used + 1) > h->mask + 1) {
			struct count_table old = *h;
			uint32_t i;

			count_init(h, 2 * (old.mask + 1));
			for (i = 0; i <= old.mask; i++) {
				if (old.slot[i].cp != EMPTY_CP) {
					*count_find(h, old.slot[i].cp) = old.slot[i];
					h->used++;
				}
			}
			free(old.slot);
			c = count_find(h, cp);
		}
		c->cp = cp;
		c->count = 0;
		h->used++;
	}
	if (c->count != UINT32_MAX)
		c->count++;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Builds a character tokenizer from sample text: every code point that
 * occurs at least min_count times (min_count < 1 counts as 1), ordered by
 * code point.  Invalid UTF-8 bytes count as U+FFFD.  NULL + e on error.
 *
 * struct tokenizer *tok_char_from_text(const char *text, size_t len,
 *                                      int min_count, int specials,
 *                                      struct err *e);
 */
struct tokenizer *tok_char_from_text(const char *text, size_t len, int min_count,
				     int specials, struct err *e)
{
	const unsigned char *s = (const unsigned char *)text;
	uint32_t min = min_count < 1 ? 1 : (uint32_t)min_count, *cps, i;
	struct count_table h;
	struct tokenizer *t;
	size_t at = 0;
	int n = 0;

	if (!text && len) {
		err_set(e, "char tokenizer: no text given");
		return NULL;
	}
	count_init(&h, 256);
	while (at < len) {
		uint32_t cp;
		int bad;

		at += (size_t)utf8_decode(s + at, len - at, &cp, &bad);
		count_add(&h, cp);
	}
	cps = xmalloc((size_t)h.used * sizeof *cps);
	for (i = 0; i <= h.mask; i++)
		if (h.slot[i].cp != EMPTY_CP && h.slot[i].count >= min)
			cps[n++] = h.slot[i].cp;
	free(h.slot);
	if (n)
		qsort(cps, (size_t)n, sizeof *cps, cmp_u32);
	t = tok_char_new(cps, n, specials, e);
	free(cps);
	return t;
}

/* ------------------------------------------------------------------- ops */

/* 3, the id of [MASK], when s (left bytes) starts with a typed "[MASK]"
 * in an MLM vocabulary (as BERT's tokenizers read it), its length in
 * *used; -1 elsewhere.  [CLS] and [SEP] come only from the wrapping, so no
 * text can fake the model's markers. */
static int char_typed_mask(const struct char_impl *c, const unsigned char *s, size_t left,
			   size_t *used)
{
	static const char mask[] = "[MASK]";

	if (c->nspecial != 4 || left < sizeof mask - 1 || memcmp(s, mask, sizeof mask - 1))
		return -1;
	*used = sizeof mask - 1;
	return 3;
}

static int char_encode(const struct tokenizer *t, const char *text, size_t len,
		       int **ids, int *n, int *cap, struct err *e)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, need;
	int nbad = 0;

	/* Every byte yields at most one id, so room for len more is enough. */
	if (len > (size_t)(INT_MAX - *n))
		return err_set(e, "char tokenizer: text too long (%zu bytes)", len);
	need = (size_t)*n + len;
	if (need > (size_t)*cap) {
		*ids = xrealloc(*ids, need * sizeof **ids);
		*cap = (int)need;
	}
	while (i < len) {
		uint32_t cp;
		size_t used;
		int bad, id = char_typed_mask(t->impl, s + i, len - i, &used);

		if (id >= 0) {
			(*ids)[(*n)++] = id;
			i += used;
			continue;
		}
		i += (size_t)utf8_decode(s + i, len - i, &cp, &bad);
		nbad += bad;
		(*ids)[(*n)++] = char_lookup(t, cp);
	}
	return nbad;
}

static const char *char_special(const struct char_impl *c, int id)
{
	static const char *const mlm[] = { "<unk>", "[CLS]", "[SEP]", "[MASK]" };
	if (c->nspecial == 4)
		return mlm[id];
	return id == 0 ? "<unk>" : "<bos>";
}

static int char_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	const struct char_impl *c = t->impl;
	char tmp[8];
	const char *p = tmp;
	size_t len;

	if (id < c->nspecial) {
		p = char_special(c, id);
		len = strlen(p);
	} else {
		len = (size_t)utf8_encode(c->cps[id - c->nspecial], tmp);
	}
	return tok_copy_piece(p, len, buf, size);
}

static char *char_to_json(const struct tokenizer *t)
{
	const struct char_impl *c = t->impl;
	json_t *root = ju_check(json_object());
	json_t *chars = ju_check(json_array());
	int i;

	for (i = 0; i < c->n; i++)
		ju_append(chars, json_integer(c->cps[i]));
	ju_set(root, "type", json_string("char"));
	ju_set(root, "bos", json_boolean(t->bos_id >= 0));
	if (c->nspecial == 4)
		ju_set(root, "specials", json_string("mlm"));
	ju_set(root, "chars", chars);
	return tok_json_dump(root);
}

static void char_free(struct tokenizer *t)
{
	struct char_impl *c = t->impl;

	if (c) {
		free(c->cps);
		free(c->sorted);
		free(c);
	}
	t->impl = NULL;
}

static const struct tokenizer_ops char_ops = {
	.kind = "char",
	.encode = char_encode,
	.piece = char_piece,
	.to_json = char_to_json,
	.free = char_free,
};

/*
 * Builds a character tokenizer from the object written by char_to_json;
 * called by tok_from_json() once "type" is "char".  NULL + e on error.
 */
struct tokenizer *tok_char_from_json(const json_t *root, struct err *e)
{
	const json_t *bos = json_object_get(root, "bos");
	const json_t *chars = json_object_get(root, "chars");
	const json_t *specials = json_object_get(root, "specials");
	int kind;
	struct tokenizer *t;
	uint32_t *cps;
	size_t i, n;

	if (!json_is_boolean(bos)) {
		err_set(e, "tokenizer JSON: \"bos\" missing or not true/false");
		return NULL;
	}
	if (!json_is_array(chars)) {
		err_set(e, "tokenizer JSON: \"chars\" missing or not an array");
		return NULL;
	}
	if (specials && !(json_is_string(specials) &&
			  strcmp(json_string_value(specials), "mlm") == 0 && json_is_true(bos))) {
		err_set(e, "tokenizer JSON: \"specials\" is not \"mlm\" (with \"bos\" true)");
		return NULL;
	}
	kind = specials ? TOK_CHAR_MLM : json_is_true(bos) ? TOK_CHAR_BOS : TOK_CHAR_PLAIN;
	n = json_array_size(chars);
	if (n > (size_t)INT_MAX - 4) {
		err_set(e, "tokenizer JSON: too many chars (%zu)", n);
		return NULL;
	}
	cps = xmalloc(n * sizeof *cps);
	for (i = 0; i < n; i++) {
		const json_t *v = json_array_get(chars, i);
		json_int_t x;

		if (!json_is_integer(v)) {
			err_set(e, "tokenizer JSON: chars[%zu] is not an integer", i);
			goto fail;
		}
		x = json_integer_value(v);
		if (x < 0 || x >= (json_int_t)CP_LIMIT || (x >= 0xD800 && x <= 0xDFFF)) {
			err_set(e, "tokenizer JSON: chars[%zu] = %lld is not a valid code point",
				i, (long long)x);
			goto fail;
		}
		cps[i] = (uint32_t)x;
	}
	t = tok_char_new(cps, (int)n, kind, e);
	if (!t)
		err_prefix(e, "tokenizer JSON");
	free(cps);
	return t;
fail:
	free(cps);
	return NULL;
}
