/*
 * tokenizer.c — the kind-independent half of the tokenizer interface:
 * encoding with an optional BOS, pieces, decoding, printable labels,
 * building a tokenizer from its JSON description, and telling which text
 * became <unk>.
 *
 * Ownership: a kind's constructor allocates the struct tokenizer and its
 * impl; ops->free releases impl (and anything it owns) and tok_free()
 * then frees the struct itself.
 */
#include "tokenizer.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tok-common.h"

struct tok_kind {
	const char *type;
	struct tokenizer *(*from_json)(const json_t *root, struct err *e);
};

static const struct tok_kind tok_kinds[] = {
	{ "char", tok_char_from_json },
	{ "gpt2-bpe", tok_bpe_from_json },
	{ "llama2c", tok_llama2c_from_json },
	{ "hf-tokenizer-json", tok_hfjson_from_json },
	{ "wordpiece", tok_wordpiece_from_json },
};

/* ---------------------------------------------------------- unknown text */

/* Whether code point cp, encoded alone, is exactly t's <unk>. */
static int cp_unknown(const struct tokenizer *t, uint32_t cp)
{
	char buf[4];
	int k = utf8_encode(cp, buf), *ids = NULL, n = 0;
	struct err e;
	int unk = tok_encode(t, buf, (size_t)k, 0, &ids, &n, &e) >= 0 && n == 1 &&
		  ids[0] == t->unk_id;
	free(ids);
	return unk;
}

int tok_unknown(const struct tokenizer *t, const char *text, size_t len, int add_bos,
		const int *ids, int n, int32_t *src, uint32_t *cps, int max_cps, int *n_cps)
{
	int count = 0;
	for (int i = 0; i < n; i++) {
		count += t->unk_id >= 0 && ids[i] == t->unk_id;
		if (src)
			src[i] = -1;
	}
	if (n_cps)
		*n_cps = 0;
	if (count == 0)
		return 0;
	/* a character tokenizer: token i (after BOS) is code point i */
	int i = add_bos && t->bos_id >= 0 && n > 0 && ids[0] == t->bos_id ? 1 : 0;
	bool one_to_one = !strcmp(t->ops->kind, "char");
	int distinct = 0, cap = 16;
	uint32_t *all = xmalloc((size_t)cap * sizeof *all); /* every distinct one */
	const unsigned char *u = (const unsigned char *)text;
	for (size_t p = 0; p < len;) {
		uint32_t cp;
		int bad;
		p += (size_t)utf8_decode(u + p, len - p, &cp, &bad);
		if (!cp_unknown(t, cp)) {
			i++;
			continue;
		}
		if (one_to_one && src && i < n && ids[i] == t->unk_id)
			src[i] = (int32_t)cp;
		i++;
		bool seen = false;
		for (int k = 0; k < distinct && !seen; k++)
			seen = all[k] == cp;
		if (seen)
			continue;
		if (distinct == cap)
			all = xrealloc(all, (size_t)(cap *= 2) * sizeof *all);
		if (distinct < max_cps)
			cps[distinct] = cp;
		all[distinct++] = cp;
	}
	free(all);
	if (n_cps)
		*n_cps = distinct;
	return count;
}

/* -------------------------------------------------------------- encoding */

int tok_encode(const struct tokenizer *t, const char *text, size_t len, int add_bos,
	       int **ids, int *n, struct err *e)
{
	int cap = 16, ret;

	*ids = NULL;
	*n = 0;
	if (!text && len)
		return err_set(e, "tokenizer: no text to encode");
	*ids = xmalloc((size_t)cap * sizeof **ids);
	if (add_bos && t->bos_id >= 0)
		(*ids)[(*n)++] = t->bos_id;
	ret = t->ops->encode(t, text ? text : "", len, ids, n, &cap, e);
	if (ret < 0) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return -1;
	}
	if (add_bos && t->eos_id >= 0) {
		if (*n == cap)
			*ids = xrealloc(*ids, (size_t)(cap *= 2) * sizeof **ids);
		(*ids)[(*n)++] = t->eos_id;
	}
	return ret;
}

/* ------------------------------------------------------- pieces, decoding */

static int tok_valid_id(const struct tokenizer *t, int id)
{
	return t && id >= 0 && id < t->vocab_size;
}

int tok_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	if (!tok_valid_id(t, id)) {
		/* An id outside the vocabulary has no bytes. */
		if (size)
			buf[0] = '\0';
		return 0;
	}
	return t->ops->piece(t, id, buf, size);
}

/*
 * Returns the exact bytes of id in a NUL-terminated buffer: small (the
 * caller's) when the piece fits, else a malloc'd one stored in *heap.
 */
static const char *piece_bytes(const struct tokenizer *t, int id, char *small,
			       size_t size, char **heap, int *len)
{
	int l = tok_piece(t, id, small, size);

	*heap = NULL;
	if (l < 0)
		l = 0;
	if ((size_t)l >= size) {
		*heap = xmalloc((size_t)l + 1);
		l = tok_piece(t, id, *heap, (size_t)l + 1);
		*len = l;
		return *heap;
	}
	*len = l;
	return small;
}

char *tok_decode(const struct tokenizer *t, const int *ids, int n)
{
	size_t cap = 64, len = 0;
	char *out;
	char small[128];
	int i;

	if (t && t->ops->decode)
		return t->ops->decode(t, ids, n);
	out = xmalloc(cap);
	for (i = 0; i < n; i++) {
		char *heap;
		int l;
		const char *p = piece_bytes(t, ids[i], small, sizeof small, &heap, &l);

		if (len + (size_t)l + 1 > cap) {
			while (len + (size_t)l + 1 > cap)
				cap *= 2;
			out = xrealloc(out, cap);
		}
		memcpy(out + len, p, (size_t)l);
		len += (size_t)l;
		free(heap);
	}
	out[len] = '\0';
	return out;
}

/* ------------------------------------------------------------------ labels */

/* A label under construction: never more than size-1 bytes plus a NUL. */
struct label {
	char *buf;
	size_t size, len;
	int full;
};

/* Appends one unit (a whole code point or escape) or nothing at all. */
static void label_put(struct label *l, const char *s, size_t n)
{
	if (l->full)
		return;
	if (l->len + n + 1 > l->size) {
		l->full = 1;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
}

static void label_str(struct label *l, const char *s)
{
	label_put(l, s, strlen(s));
}

/* Appends the printable form of one valid code point. */
static void label_cp(struct label *l, uint32_t cp)
{
	char tmp[16];
	int n;

	if (cp == ' ') {
		label_str(l, "\xe2\x90\xa3");			/* ␣ U+2423 */
	} else if (cp == '\n') {
		label_str(l, "\xe2\x8f\x8e");			/* ⏎ U+23CE */
	} else if (cp == '\t') {
		label_str(l, "\xe2\x87\xa5");			/* ⇥ U+21E5 */
	} else if (cp < 0x20) {
		n = utf8_encode(0x2400 + cp, tmp);		/* ␀..␟ */
		label_put(l, tmp, (size_t)n);
	} else if (cp == 0x7F) {
		label_str(l, "<7f>");
	} else if (cp >= 0x80 && cp <= 0x9F) {
		/* C1 controls would be taken as escape sequences by terminals. */
		snprintf(tmp, sizeof tmp, "<U+%04X>", (unsigned)cp);
		label_str(l, tmp);
	} else {
		n = utf8_encode(cp, tmp);
		label_put(l, tmp, (size_t)n);
	}
}

/* Appends a run of invalid bytes as one "<e5 ba>" unit. */
static void label_hex(struct label *l, const unsigned char *s, size_t n)
{
	char tmp[3 * 16 + 2];
	size_t i, k = 0;

	/* Long runs go out as several units so that tmp stays small. */
	while (n > 16) {
		label_hex(l, s, 16);
		s += 16;
		n -= 16;
	}
	tmp[k++] = '<';
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(tmp + k, sizeof tmp - k, i ? " %02x" : "%02x", s[i]);
	tmp[k++] = '>';
	label_put(l, tmp, k);
}

void tok_label(const struct tokenizer *t, int id, char *buf, size_t size)
{
	struct label l = { buf, size, 0, 0 };
	char small[128], tmp[32];
	char *heap;
	const unsigned char *p;
	size_t i, bad_start = 0, nbad = 0;
	int len;

	if (!buf || size == 0)
		return;
	buf[0] = '\0';
	if (!tok_valid_id(t, id)) {
		snprintf(tmp, sizeof tmp, "<bad id %d>", id);
		label_str(&l, tmp);
		return;
	}
	/* Special tokens come out as their names, which print as they are. */
	p = (const unsigned char *)piece_bytes(t, id, small, sizeof small, &heap, &len);
	for (i = 0; i < (size_t)len && !l.full;) {
		uint32_t cp;
		int bad, k = utf8_decode(p + i, (size_t)len - i, &cp, &bad);

		if (bad) {
			if (!nbad)
				bad_start = i;
			nbad++;
		} else {
			if (nbad)
				label_hex(&l, p + bad_start, nbad);
			nbad = 0;
			label_cp(&l, cp);
		}
		i += (size_t)k;
	}
	if (nbad)
		label_hex(&l, p + bad_start, nbad);
	free(heap);
}

/* -------------------------------------------------------------- lifecycle */

/* Copies at most size-1 bytes of s with anything but printable ASCII
 * replaced by '?', so that a name read from a file fits in one line. */
static void printable(const char *s, size_t n, char *out, size_t size)
{
	size_t i;

	for (i = 0; i < n && i + 1 < size; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7F) ? s[i] : '?';
	out[i] = '\0';
}

struct tokenizer *tok_from_json(const char *json, struct err *e)
{
	char tmp[48];
	json_error_t jerr;
	json_t *root, *type;
	struct tokenizer *t = NULL;
	size_t i;

	if (!json) {
		err_set(e, "tokenizer JSON: missing");
		return NULL;
	}
	root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		char msg[sizeof jerr.text];

		printable(jerr.text, strlen(jerr.text), msg, sizeof msg);
		err_set(e, "tokenizer JSON: line %d column %d: %s",
			jerr.line, jerr.column, msg);
		return NULL;
	}
	if (!json_is_object(root)) {
		err_set(e, "tokenizer JSON: expected an object");
		goto out;
	}
	type = json_object_get(root, "type");
	if (!json_is_string(type)) {
		err_set(e, "tokenizer JSON: \"type\" missing or not a string");
		goto out;
	}
	for (i = 0; i < sizeof tok_kinds / sizeof tok_kinds[0]; i++) {
		if (json_string_length(type) == strlen(tok_kinds[i].type) &&
		    strcmp(json_string_value(type), tok_kinds[i].type) == 0) {
			t = tok_kinds[i].from_json(root, e);
			goto out;
		}
	}
	printable(json_string_value(type), json_string_length(type), tmp, sizeof tmp);
	err_set(e, "tokenizer JSON: unknown type \"%s\"", tmp);
out:
	json_decref(root);
	return t;
}

void tok_free(struct tokenizer *t)
{
	if (!t)
		return;
	if (t->ops && t->ops->free)
		t->ops->free(t);
	else
		free(t->impl);
	free(t);
}
