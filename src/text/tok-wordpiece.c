/*
 * tok-wordpiece.c — BERT's WordPiece tokenizer (include/tok-wordpiece.h):
 * BertNormalizer, BertPreTokenizer and the greedy longest-match WordPiece
 * model, read from a tokenizer.json or a vocab.txt (which is turned into
 * the tokenizer.json it stands for, so that one builder reads both).
 */
#include "tok-wordpiece.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "json-util.h"
#include "tok-common.h"
#include "utf8.h"

#include "tok-wordpiece-data.h"

#define VOCAB_MAX (1 << 24)
#define PIECE_MAX 1024

struct wp_impl {
	int n;			/* ids 0 .. n-1 */
	char *blob;		/* token i = blob[off[i] .. off[i+1]) */
	uint32_t *off;
	int32_t *vtab;		/* token -> id */
	uint32_t vmask;

	int nadded;		/* added tokens matched in the text, longest first */
	int *add_id;

	bool clean_text, chinese, lowercase, strip_accents;
	int max_chars;		/* max_input_chars_per_word */
	size_t max_piece;	/* the longest token's bytes: no piece has more code points */
	char *prefix;		/* continuing_subword_prefix */
	size_t prefix_len;

	bool dec_wordpiece;	/* decoder WordPiece (else pieces joined by spaces) */
	char *dec_prefix;
	size_t dec_prefix_len;
	bool cleanup;

	char *json;		/* the tokenizer.json text, for to_json */
	size_t json_len;
};

static const struct tokenizer_ops wp_ops;

/* --------------------------------------------------------------- Unicode */

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid][0])
			hi = mid;
		else if (cp > r[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

#define IN(table, cp) in_ranges(table, sizeof table / sizeof table[0], cp)

/* JavaScript's \s. */
static bool js_space(uint32_t cp)
{
	return (cp >= 9 && cp <= 13) || cp == ' ' || cp == 0xA0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
	       cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

static bool is_punct(uint32_t cp)
{
	return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
	       (cp >= 123 && cp <= 126) || IN(wp_punct, cp);
}

/* The CJK ideographs transformers.js separates (BMP only: it tests UTF-16
 * units). */
static bool is_cjk(uint32_t cp)
{
	return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
	       (cp >= 0xF900 && cp <= 0xFAFF);
}

/* A growing array of code points. */
struct cps {
	uint32_t *v;
	size_t n, cap;
};

static void cps_push(struct cps *c, uint32_t cp)
{
	if (c->n == c->cap)
		c->v = xrealloc(c->v, (c->cap = c->cap ? 2 * c->cap : 64) * sizeof *c->v);
	c->v[c->n++] = cp;
}

static uint32_t lower_simple(uint32_t cp)
{
	size_t lo = 0, hi = sizeof wp_lower / sizeof wp_lower[0];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < wp_lower[mid][0])
			hi = mid;
		else if (cp > wp_lower[mid][0])
			lo = mid + 1;
		else
			return wp_lower[mid][1];
	}
	return cp;
}

/* Unicode's Final_Sigma: s[i] (a capital sigma) follows a cased letter
 * and no cased letter follows it, case-ignorable characters skipped. */
static bool final_sigma(const uint32_t *s, size_t n, size_t i)
{
	size_t k = i;
	bool before = false, after = false;

	while (k > 0 && IN(wp_case_ignorable, s[k - 1]))
		k--;
	before = k > 0 && IN(wp_cased, s[k - 1]);
	for (k = i + 1; k < n && IN(wp_case_ignorable, s[k]); k++)
		;
	after = k < n && IN(wp_cased, s[k]);
	return before && !after;
}

/* Appends the canonical decomposition of cp (tok-nfc's tables). */
static void nfd_push(struct cps *out, uint32_t cp)
{
	uint32_t d[TOK_NFD_MAX];
	int n = tok_nfd_char(cp, d);

	for (int k = 0; k < n; k++)
		cps_push(out, d[k]);
}

/* BertNormalizer over in[0..n) into out (emptied first). */
static void normalize(const struct wp_impl *h, const uint32_t *in, size_t n, struct cps *out)
{
	struct cps a = { 0 };

	out->n = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp = in[i];

		if (h->clean_text) {
			if (cp == 0 || cp == 0xFFFD ||
			    (cp != '\t' && cp != '\n' && cp != '\r' && IN(wp_control, cp)))
				continue;
			if (js_space(cp))
				cp = ' ';
		}
		if (h->chinese && is_cjk(cp)) {
			cps_push(&a, ' ');
			cps_push(&a, cp);
			cps_push(&a, ' ');
		} else {
			cps_push(&a, cp);
		}
	}
	for (size_t i = 0; i < a.n; i++) {
		uint32_t cp = a.v[i];

		if (h->lowercase) {
			if (cp == 0x130) { /* İ: the one lowercase of two code points */
				cp = 'i';
				if (!h->strip_accents)
					cps_push(out, cp), cp = 0x307;
			} else if (cp == 0x3A3) {
				cp = final_sigma(a.v, a.n, i) ? 0x3C2 : 0x3C3;
			} else {
				cp = lower_simple(cp);
			}
		}
		if (!h->strip_accents) {
			cps_push(out, cp);
			continue;
		}
		size_t at = out->n;
		nfd_push(out, cp);
		size_t k = at;
		for (size_t j = at; j < out->n; j++)
			if (!IN(wp_mn, out->v[j]))
				out->v[k++] = out->v[j];
		out->n = k;
	}
	free(a.v);
}

/* ----------------------------------------------------------- encoding */

static void ids_push(int **ids, int *n, int *cap, int id)
{
	if (*n == *cap)
		*ids = xrealloc(*ids, (size_t)(*cap *= 2) * sizeof **ids);
	(*ids)[(*n)++] = id;
}

static int vocab_find(const struct wp_impl *h, const char *s, size_t n)
{
	return tok_vtab_find(h->vtab, h->vmask, h->blob, h->off, s, n);
}

/* The WordPiece model over one word w[0..n) (code points). */
static void wordpiece(const struct tokenizer *t, const uint32_t *w, size_t n, int **ids,
		      int *nids, int *cap)
{
	const struct wp_impl *h = t->impl;
	size_t *at, len = 0, start = 0;
	char *word, *tmp;
	int first = *nids;

	if (n > (size_t)h->max_chars) {
		ids_push(ids, nids, cap, t->unk_id);
		return;
	}
	/* the word in UTF-8; at[i]: where code point i starts */
	at = xmalloc((n + 1) * sizeof *at);
	word = xmalloc(4 * n + 1);
	tmp = xmalloc(h->prefix_len + 4 * n + 1); /* the prefix, then a piece */
	memcpy(tmp, h->prefix, h->prefix_len);
	for (size_t i = 0; i < n; i++) {
		at[i] = len;
		len += (size_t)utf8_encode(w[i], word + len);
	}
	at[n] = len;
	while (start < n) {
		int id = -1;
		size_t end = n - start > h->max_piece ? start + h->max_piece : n;

		for (; end > start; end--) {
			size_t pl = at[end] - at[start];

			if (start == 0) {
				id = vocab_find(h, word, pl);
			} else {
				memcpy(tmp + h->prefix_len, word + at[start], pl);
				id = vocab_find(h, tmp, h->prefix_len + pl);
			}
			if (id >= 0)
				break;
		}
		if (id < 0) { /* the whole word is unknown */
			*nids = first;
			ids_push(ids, nids, cap, t->unk_id);
			break;
		}
		ids_push(ids, nids, cap, id);
		start = end;
	}
	free(at);
	free(word);
	free(tmp);
}

/* Normalizes, pre-tokenizes and encodes the stretch s[0..n) (code points). */
static void encode_stretch(const struct tokenizer *t, const uint32_t *s, size_t n, int **ids,
			   int *nids, int *cap)
{
	struct cps c = { 0 };
	size_t i = 0;

	normalize(t->impl, s, n, &c);
	while (i < c.n) {
		if (js_space(c.v[i])) {
			i++;
		} else if (is_punct(c.v[i])) {
			wordpiece(t, c.v + i, 1, ids, nids, cap);
			i++;
		} else {
			size_t j = i;

			while (j < c.n && !js_space(c.v[j]) && !is_punct(c.v[j]))
				j++;
			wordpiece(t, c.v + i, j - i, ids, nids, cap);
			i = j;
		}
	}
	free(c.v);
}

/* The added token at s[0..len) (longest first), or -1; its length in *kl. */
static int added_at(const struct wp_impl *h, const char *s, size_t len, size_t *kl)
{
	for (int i = 0; i < h->nadded; i++) {
		int id = h->add_id[i];

		*kl = h->off[id + 1] - h->off[id];
		if (*kl <= len && !memcmp(h->blob + h->off[id], s, *kl))
			return id;
	}
	return -1;
}

/* Decodes s[from .. to) into cps and encodes it. */
static void encode_bytes(const struct tokenizer *t, const char *s, size_t from, size_t to,
			 struct cps *c, int **ids, int *n, int *cap)
{
	c->n = 0;
	for (size_t i = from; i < to;) {
		uint32_t cp;
		int bad;

		i += (size_t)utf8_decode((const unsigned char *)s + i, to - i, &cp, &bad);
		cps_push(c, cp);
	}
	if (c->n)
		encode_stretch(t, c->v, c->n, ids, n, cap);
}

static int wp_encode(const struct tokenizer *t, const char *text, size_t len, int **ids, int *n,
		     int *cap, struct err *e)
{
	const struct wp_impl *h = t->impl;
	int nbad, id;
	size_t clen, start = 0, kl;
	char *fixed = tok_replace_invalid(text, len, &clen, &nbad);
	const char *s = fixed ? fixed : text;
	struct cps c = { 0 };

	if (clen > (size_t)INT_MAX / 4) {
		free(fixed);
		return err_set(e, "tokenizer: text too long (%zu bytes)", len);
	}
	for (size_t i = 0; i < clen;) {
		if ((id = added_at(h, s + i, clen - i, &kl)) < 0) {
			i++;
			continue;
		}
		encode_bytes(t, s, start, i, &c, ids, n, cap);
		ids_push(ids, n, cap, id);
		start = i += kl;
	}
	encode_bytes(t, s, start, clen, &c, ids, n, cap);
	free(c.v);
	free(fixed);
	return nbad;
}

/* ---------------------------------------------------------- other ops */

static int wp_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	const struct wp_impl *h = t->impl;

	return tok_copy_piece(h->blob + h->off[id], h->off[id + 1] - h->off[id], buf, size);
}

/* A growing byte string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		while (b->len + n + 1 > b->cap)
			b->cap = b->cap ? 2 * b->cap : 64;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* transformers.js's clean_up_tokenization on one decoded piece p[0..n). */
static void put_cleaned(struct buf *b, const char *p, size_t n)
{
	static const char *const from[] = { " .", " ?", " !", " ,", " ' ", " n't", " 'm",
					    " 's", " 've", " 're" };
	static const char *const to[] = { ".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve",
					  "'re" };
	char *s = xmalloc(n + 1), *r;

	memcpy(s, p, n);
	s[n] = '\0';
	for (size_t k = 0; k < sizeof from / sizeof from[0]; k++) {
		size_t fl = strlen(from[k]), tl = strlen(to[k]);

		for (r = s; (r = strstr(r, from[k]));) {
			memmove(r + tl, r + fl, strlen(r + fl) + 1);
			memcpy(r, to[k], tl);
			r += tl;
		}
	}
	buf_put(b, s, strlen(s));
	free(s);
}

static char *wp_decode(const struct tokenizer *t, const int *ids, int n)
{
	const struct wp_impl *h = t->impl;
	struct buf b = { 0 }, piece = { 0 };

	buf_put(&b, "", 0);
	for (int i = 0, k = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= h->n)
			continue;
		const char *p = h->blob + h->off[ids[i]];
		size_t l = h->off[ids[i] + 1] - h->off[ids[i]];

		piece.len = 0;
		if (k++ > 0) {
			if (h->dec_wordpiece && l >= h->dec_prefix_len &&
			    !memcmp(p, h->dec_prefix, h->dec_prefix_len)) {
				p += h->dec_prefix_len;
				l -= h->dec_prefix_len;
			} else {
				buf_put(&piece, " ", 1);
			}
		}
		buf_put(&piece, p, l);
		if (h->cleanup)
			put_cleaned(&b, piece.s, piece.len);
		else
			buf_put(&b, piece.s, piece.len);
	}
	free(piece.s);
	return b.s;
}

static char *wp_to_json(const struct tokenizer *t)
{
	const struct wp_impl *h = t->impl;

	return tok_source_json("wordpiece", h->json, h->json_len);
}

static void wp_impl_free(struct wp_impl *h)
{
	if (!h)
		return;
	free(h->blob);
	free(h->off);
	free(h->vtab);
	free(h->add_id);
	free(h->prefix);
	free(h->dec_prefix);
	free(h->json);
	free(h);
}

static void wp_free(struct tokenizer *t)
{
	wp_impl_free(t->impl);
	t->impl = NULL;
}

static const struct tokenizer_ops wp_ops = {
	.kind = "wordpiece",
	.encode = wp_encode,
	.piece = wp_piece,
	.to_json = wp_to_json,
	.free = wp_free,
	.decode = wp_decode,
};

/* -------------------------------------------------------- tokenizer.json */

/* A type name quoted from the file, printable and short. */
static const char *type_name(const json_t *o, char *buf, size_t size)
{
	const json_t *t = json_object_get(o, "type");

	if (!json_is_string(t))
		return "(no type)";
	utf8_printable(json_string_value(t),
		       json_string_length(t) > 40 ? 40 : json_string_length(t), buf, size);
	return buf;
}

static bool is_type(const json_t *o, const char *type)
{
	const json_t *t = json_object_get(o, "type");

	return json_is_string(t) && !strcmp(json_string_value(t), type);
}

/* Reads the boolean o[key] into *out; absent or null leaves it. */
static int opt_bool(const json_t *o, const char *key, const char *what, const char *where,
		    bool *out, struct err *e)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return err_set(e, "%s: %s.%s must be true, false or null", where, what, key);
	*out = json_is_true(v);
	return 0;
}

static int parse_normalizer(struct wp_impl *h, const json_t *n, const char *where, struct err *e)
{
	char tn[48];

	if (!n || json_is_null(n))
		return 0;
	if (!is_type(n, "BertNormalizer"))
		return err_set(e, "%s: normalizer %s is not supported yet (only BertNormalizer)",
			       where, type_name(n, tn, sizeof tn));
	h->clean_text = h->chinese = h->lowercase = true;
	if (opt_bool(n, "clean_text", "normalizer", where, &h->clean_text, e) ||
	    opt_bool(n, "handle_chinese_chars", "normalizer", where, &h->chinese, e) ||
	    opt_bool(n, "lowercase", "normalizer", where, &h->lowercase, e))
		return -1;
	h->strip_accents = h->lowercase; /* null: follow lowercase */
	return opt_bool(n, "strip_accents", "normalizer", where, &h->strip_accents, e);
}

/* The id of the token named s: the vocabulary's. */
static int token_named(const struct wp_impl *h, const json_t *s)
{
	return json_is_string(s) ? vocab_find(h, json_string_value(s), json_string_length(s)) : -1;
}

/* [CLS] and [SEP] from the post_processor. */
static int parse_post(struct tokenizer *t, const json_t *p, const char *where, struct err *e)
{
	const struct wp_impl *h = t->impl;
	char tn[48];

	t->bos_id = t->eos_id = -1;
	if (!p || json_is_null(p))
		return 0;
	if (is_type(p, "BertProcessing")) {
		t->bos_id = token_named(h, json_array_get(json_object_get(p, "cls"), 0));
		t->eos_id = token_named(h, json_array_get(json_object_get(p, "sep"), 0));
		if (t->bos_id < 0 || t->eos_id < 0)
			return err_set(e, "%s: post_processor BertProcessing: cls and sep must name "
				       "tokens of the vocab", where);
		return 0;
	}
	if (!is_type(p, "TemplateProcessing"))
		return err_set(e, "%s: post_processor %s is not supported yet", where,
			       type_name(p, tn, sizeof tn));
	const json_t *single = json_object_get(p, "single"), *it;
	size_t i, na = 0;
	int before = 0, after = 0;

	json_array_foreach(single, i, it) {
		const json_t *sp = json_object_get(json_object_get(it, "SpecialToken"), "id");
		const json_t *seq = json_object_get(json_object_get(it, "Sequence"), "id");
		int id = token_named(h, sp);

		if (seq && json_is_string(seq) && !strcmp(json_string_value(seq), "A")) {
			na++;
		} else if (sp && id >= 0 && !na && !before++) {
			t->bos_id = id;
		} else if (sp && id >= 0 && na && !after++) {
			t->eos_id = id;
		} else {
			return err_set(e, "%s: post_processor TemplateProcessing: single must be "
				       "[SpecialToken] $A [SpecialToken] with tokens of the vocab "
				       "(item %zu)", where, i);
		}
	}
	if (na != 1)
		return err_set(e, "%s: post_processor TemplateProcessing: single must hold $A once",
			       where);
	return 0;
}

static int parse_decoder(struct wp_impl *h, const json_t *d, const char *where, struct err *e)
{
	char tn[48];
	const json_t *prefix = json_object_get(d, "prefix");

	if (!d || json_is_null(d))
		return 0;
	if (!is_type(d, "WordPiece"))
		return err_set(e, "%s: decoder %s is not supported yet (only WordPiece)", where,
			       type_name(d, tn, sizeof tn));
	h->dec_wordpiece = true;
	if (prefix && !json_is_string(prefix))
		return err_set(e, "%s: decoder.prefix must be a string", where);
	h->dec_prefix = xstrdup(prefix ? json_string_value(prefix) : "##");
	h->dec_prefix_len = strlen(h->dec_prefix);
	h->cleanup = true;
	return opt_bool(d, "cleanup", "decoder", where, &h->cleanup, e);
}

/* Checks one added_tokens entry; its id in *id. */
static int added_entry(const struct wp_impl *h, const json_t *a, size_t i, const char *where,
		       int *id, struct err *e)
{
	const json_t *c = json_object_get(a, "content");
	static const char *const flags[] = { "single_word", "lstrip", "rstrip" };

	if (!json_is_string(c) || json_string_length(c) == 0 ||
	    !json_is_integer(json_object_get(a, "id")))
		return err_set(e, "%s: added_tokens[%zu] needs an integer \"id\" and a non-empty "
			       "\"content\"", where, i);
	for (size_t k = 0; k < 3; k++)
		if (json_is_true(json_object_get(a, flags[k])))
			return err_set(e, "%s: added_tokens[%zu]: %s true is not supported yet",
				       where, i, flags[k]);
	*id = token_named(h, c);
	if (*id < 0 || *id != json_integer_value(json_object_get(a, "id")))
		return err_set(e, "%s: added_tokens[%zu]: \"%.40s\" is not model.vocab's token of "
			       "that id", where, i, json_string_value(c));
	return 0;
}

static int cmp_len_desc(const void *a, const void *b, void *ctx)
{
	const struct wp_impl *h = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	uint32_t lx = h->off[x + 1] - h->off[x], ly = h->off[y + 1] - h->off[y];

	return lx != ly ? (lx < ly ? 1 : -1) : (x > y) - (x < y);
}

/* The added tokens, longest first (sorted by insertion: there are few). */
static int parse_added(struct wp_impl *h, const json_t *added, const char *where,
		       struct err *e)
{
	const json_t *a;
	size_t i;

	if (added && !json_is_array(added))
		return err_set(e, "%s: added_tokens is not an array", where);
	h->add_id = xmalloc((json_array_size(added) + 1) * sizeof *h->add_id);
	json_array_foreach(added, i, a) {
		int id = -1, k;

		if (added_entry(h, a, i, where, &id, e))
			return -1;
		for (k = 0; k < h->nadded && h->add_id[k] != id; k++)
			;
		if (k < h->nadded)
			continue;
		for (k = h->nadded++; k > 0 && cmp_len_desc(&h->add_id[k - 1], &id, h) > 0; k--)
			h->add_id[k] = h->add_id[k - 1];
		h->add_id[k] = id;
	}
	return 0;
}

/* model.vocab into the blob, the offsets and the table. */
static int build_vocab(struct wp_impl *h, const json_t *vocab, const char *where, struct err *e)
{
	const char *key, **keys;
	json_t *v;
	size_t total = 0;
	int rc = -1;

	if (!json_is_object(vocab) || json_object_size(vocab) == 0)
		return err_set(e, "%s: model.vocab is missing, empty or not an object", where);
	if (json_object_size(vocab) > VOCAB_MAX)
		return err_set(e, "%s: model.vocab has more than %d tokens", where, VOCAB_MAX);
	h->n = (int)json_object_size(vocab);
	keys = xcalloc((size_t)h->n, sizeof *keys);
	json_object_foreach((json_t *)vocab, key, v) {
		json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;

		if (id < 0 || id >= h->n) {
			err_set(e, "%s: model.vocab: the id of \"%.40s\" is not an integer in 0..%d "
				"(ids must run from 0 without gaps)", where, key, h->n - 1);
			goto out;
		}
		if (keys[id]) {
			err_set(e, "%s: model.vocab: id %lld is given to both \"%.40s\" and \"%.40s\"",
				where, (long long)id, keys[id], key);
			goto out;
		}
		if (!*key || strlen(key) > PIECE_MAX) {
			err_set(e, "%s: model.vocab: token %lld is empty or huge", where,
				(long long)id);
			goto out;
		}
		keys[id] = key;
		total += strlen(key);
	}
	h->blob = xmalloc(total + 1);
	h->off = xmalloc(((size_t)h->n + 1) * sizeof *h->off);
	h->vtab = tok_vtab_new((size_t)h->n, &h->vmask);
	total = 0;
	for (int i = 0; i < h->n; i++) {
		size_t l = strlen(keys[i]);

		h->off[i] = (uint32_t)total;
		memcpy(h->blob + total, keys[i], l);
		tok_vtab_add(h->vtab, h->vmask, keys[i], l, i);
		total += l;
		if (l > h->max_piece)
			h->max_piece = l;
	}
	h->off[h->n] = (uint32_t)total;
	rc = 0;
out:
	free(keys);
	return rc;
}

static int parse_model(struct tokenizer *t, const json_t *m, const char *where, struct err *e)
{
	struct wp_impl *h = t->impl;
	char tn[48];
	const json_t *unk = json_object_get(m, "unk_token");
	const json_t *prefix = json_object_get(m, "continuing_subword_prefix");

	if (!json_is_object(m))
		return err_set(e, "%s: model is missing or not an object", where);
	if (!is_type(m, "WordPiece"))
		return err_set(e, "%s: model type %s is not WordPiece", where,
			       type_name(m, tn, sizeof tn));
	if (build_vocab(h, json_object_get(m, "vocab"), where, e))
		return -1;
	if (!json_is_string(unk))
		return err_set(e, "%s: model.unk_token is missing (WordPiece needs one)", where);
	if ((t->unk_id = token_named(h, unk)) < 0)
		return err_set(e, "%s: model.unk_token \"%.40s\" is not in model.vocab", where,
			       json_string_value(unk));
	if (prefix && !json_is_null(prefix) &&
	    (!json_is_string(prefix) || json_string_length(prefix) > 16 ||
	     strlen(json_string_value(prefix)) != json_string_length(prefix)))
		return err_set(e, "%s: model.continuing_subword_prefix must be a short string",
			       where);
	h->prefix = xstrdup(json_is_string(prefix) ? json_string_value(prefix) : "##");
	h->prefix_len = strlen(h->prefix);
	h->max_chars = 100;
	return ju_get_int(m, "max_input_chars_per_word", where, JU_NULL_ABSENT, 1, INT_MAX / 8,
			  &h->max_chars, e) < 0 ? -1 : 0;
}

/* Builds the tokenizer from the parsed tokenizer.json root. */
static struct tokenizer *from_root(const json_t *root, const char *json, size_t len,
				   const char *where, struct err *e)
{
	struct wp_impl *h = xcalloc(1, sizeof *h);
	struct tokenizer *t = xcalloc(1, sizeof *t);
	const json_t *pre = json_object_get(root, "pre_tokenizer");
	char tn[48];

	t->ops = &wp_ops;
	t->impl = h;
	t->bos_id = t->eos_id = t->unk_id = -1;
	if (!json_is_object(root)) {
		err_set(e, "%s: not a JSON object", where);
		goto fail;
	}
	if (parse_model(t, json_object_get(root, "model"), where, e) ||
	    parse_added(h, json_object_get(root, "added_tokens"), where, e) ||
	    parse_normalizer(h, json_object_get(root, "normalizer"), where, e) ||
	    parse_post(t, json_object_get(root, "post_processor"), where, e) ||
	    parse_decoder(h, json_object_get(root, "decoder"), where, e))
		goto fail;
	if (!is_type(pre, "BertPreTokenizer")) {
		err_set(e, "%s: pre_tokenizer %s is not supported yet (only BertPreTokenizer)",
			where, json_is_null(pre) || !pre ? "null" : type_name(pre, tn, sizeof tn));
		goto fail;
	}
	h->json = xmalloc(len + 1);
	memcpy(h->json, json, len);
	h->json[len] = '\0';
	h->json_len = len;
	t->vocab_size = h->n;
	return t;
fail:
	wp_impl_free(h);
	free(t);
	return NULL;
}

struct tokenizer *tok_wordpiece_from_text(const char *json, size_t len, const char *where,
					  struct err *e)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	struct tokenizer *t;

	if (!root) {
		char msg[sizeof jerr.text * 4];

		utf8_printable(jerr.text, strlen(jerr.text), msg, sizeof msg);
		err_set(e, "%s: invalid JSON (line %d, column %d: %s)", where, jerr.line,
			jerr.column, msg);
		return NULL;
	}
	t = from_root(root, json, len, where, e);
	json_decref(root);
	return t;
}

struct tokenizer *tok_wordpiece_from_json(const json_t *root, struct err *e)
{
	const json_t *j = json_object_get(root, "json");

	if (!json_is_string(j))
		return err_set(e, "tokenizer JSON: \"json\" (the tokenizer.json text) is missing"),
		       NULL;
	return tok_wordpiece_from_text(json_string_value(j), json_string_length(j),
				       "tokenizer JSON", e);
}

/* ------------------------------------------------------------- vocab.txt */

/* Checks one vocab.txt line s[0..n) (line number no). */
static int vocab_line(const char *s, size_t n, int no, const char *where, struct err *e)
{
	if (n == 0)
		return err_set(e, "%s: line %d is empty (one token a line)", where, no);
	if (n > PIECE_MAX)
		return err_set(e, "%s: line %d is longer than %d bytes", where, no, PIECE_MAX);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int bad, k = utf8_decode((const unsigned char *)s + i, n - i, &cp, &bad);

		if (bad || js_space(cp) || cp < 0x20 || cp == 0x7F)
			return err_set(e, "%s: line %d holds %s at byte %zu", where, no,
				       bad ? "invalid UTF-8" : js_space(cp) ? "white space"
				       : "a control character", i);
		i += (size_t)k;
	}
	return 0;
}

/* The BertNormalizer options of a tokenizer_config.json text into n. */
static int vocab_config(const char *config, size_t clen, const char *where, json_t *n,
			struct err *e)
{
	json_error_t jerr;
	json_t *c;
	bool lower = true, chinese = true, strip = true;
	int rc = -1;

	if (!config) {
		ju_set(n, "lowercase", json_true());
		ju_set(n, "strip_accents", json_null());
		return 0;
	}
	if (!(c = json_loadb(config, clen, 0, &jerr)) || !json_is_object(c)) {
		err_set(e, "%s: tokenizer_config.json is not a JSON object", where);
		goto out;
	}
	if (ju_get_bool(c, "do_lower_case", "tokenizer_config.json", JU_NULL_ABSENT, &lower, e) < 0 ||
	    ju_get_bool(c, "tokenize_chinese_chars", "tokenizer_config.json", JU_NULL_ABSENT,
			&chinese, e) < 0)
		goto out;
	ju_set(n, "lowercase", json_boolean(lower));
	ju_set(n, "handle_chinese_chars", json_boolean(chinese));
	switch (ju_get_bool(c, "strip_accents", "tokenizer_config.json", JU_NULL_ABSENT, &strip, e)) {
	case 0:
		ju_set(n, "strip_accents", json_boolean(strip));
		break;
	case 1:
		ju_set(n, "strip_accents", json_null());
		break;
	default:
		goto out;
	}
	rc = 0;
out:
	json_decref(c);
	return rc;
}

/* The tokenizer.json a vocab.txt stands for (without its vocab). */
static json_t *vocab_skeleton(const json_t *vocab, json_t *norm)
{
	static const char *const specials[] = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" };
	json_t *root = ju_check(json_object()), *added = ju_check(json_array());
	json_t *model = ju_check(json_object()), *dec = ju_check(json_object());

	for (size_t i = 0; i < 5; i++) {
		const json_t *id = json_object_get(vocab, specials[i]);
		json_t *a;

		if (!id)
			continue;
		a = ju_check(json_object());
		ju_set(a, "id", json_incref((json_t *)id));
		ju_set(a, "content", json_string(specials[i]));
		ju_set(a, "special", json_true());
		ju_append(added, a);
	}
	ju_set(root, "added_tokens", added);
	ju_set(norm, "type", json_string("BertNormalizer"));
	ju_set(norm, "clean_text", json_true());
	ju_set(root, "normalizer", norm);
	ju_set(root, "pre_tokenizer", ju_check(json_pack("{s:s}", "type", "BertPreTokenizer")));
	if (json_object_get(vocab, "[CLS]") && json_object_get(vocab, "[SEP]"))
		ju_set(root, "post_processor", ju_check(json_pack(
			"{s:s, s:[{s:{s:s}}, {s:{s:s}}, {s:{s:s}}]}", "type",
			"TemplateProcessing", "single", "SpecialToken", "id", "[CLS]", "Sequence",
			"id", "A", "SpecialToken", "id", "[SEP]")));
	ju_set(dec, "type", json_string("WordPiece"));
	ju_set(dec, "prefix", json_string("##"));
	ju_set(dec, "cleanup", json_true());
	ju_set(root, "decoder", dec);
	ju_set(model, "type", json_string("WordPiece"));
	ju_set(model, "unk_token", json_string("[UNK]"));
	ju_set(model, "continuing_subword_prefix", json_string("##"));
	ju_set(model, "max_input_chars_per_word", json_integer(100));
	ju_set(model, "vocab", json_incref((json_t *)vocab));
	ju_set(root, "model", model);
	return root;
}

struct tokenizer *tok_wordpiece_from_vocab(const char *vocab, size_t len, const char *config,
					   size_t clen, const char *where, struct err *e)
{
	json_t *v = ju_check(json_object()), *norm = ju_check(json_object()), *root = NULL;
	struct tokenizer *t = NULL;
	int no = 0;
	char *text = NULL;

	/* as Hugging Face reads it: a UTF-8 byte order mark is no token's, and
	 * blank lines at the end are no tokens (one inside is refused) */
	if (len >= 3 && !memcmp(vocab, "\xef\xbb\xbf", 3)) {
		vocab += 3;
		len -= 3;
	}
	while (len && (vocab[len - 1] == '\n' || vocab[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < len; no++) {
		const char *nl = memchr(vocab + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - vocab) : len, l = end - i;

		if (l && vocab[i + l - 1] == '\r')
			l--;
		if (vocab_line(vocab + i, l, no + 1, where, e))
			goto out;
		if (no >= VOCAB_MAX) {
			err_set(e, "%s: more than %d lines", where, VOCAB_MAX);
			goto out;
		}
		char *tok = xstrndup(vocab + i, l);
		int dup = json_object_get(v, tok) != NULL;

		if (dup)
			err_set(e, "%s: line %d: \"%.40s\" is also on line %lld", where, no + 1, tok,
				(long long)json_integer_value(json_object_get(v, tok)) + 1);
		else
			ju_set(v, tok, json_integer(no));
		free(tok);
		if (dup)
			goto out;
		i = end + 1;
	}
	if (no == 0) {
		err_set(e, "%s: the vocabulary is empty", where);
		goto out;
	}
	if (!json_object_get(v, "[UNK]")) {
		err_set(e, "%s: no [UNK] token (WordPiece needs one)", where);
		goto out;
	}
	if (vocab_config(config, clen, where, norm, e))
		goto out;
	root = vocab_skeleton(v, norm);
	norm = NULL;
	text = tok_json_dump(json_incref(root));
	t = from_root(root, text, strlen(text), where, e);
out:
	free(text);
	json_decref(root);
	json_decref(norm);
	json_decref(v);
	return t;
}

/* ------------------------------------------------------------------ files */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* path/name into buf; false when it does not fit. */
static bool join(char *buf, size_t size, const char *dir, const char *name)
{
	return (size_t)snprintf(buf, size, "%s/%s", dir, name) < size;
}

static struct tokenizer *load_vocab_txt(const char *vpath, const char *cpath, struct err *e)
{
	size_t len, clen = 0;
	char *vocab = read_file_max(vpath, TOK_FILE_MAX, "a tokenizer file", &len, e);
	char *config = NULL;
	struct stat st;
	struct tokenizer *t = NULL;

	if (!vocab)
		return NULL;
	if (cpath && stat(cpath, &st) == 0 &&
	    !(config = read_file_max(cpath, TOK_FILE_MAX, "a tokenizer file", &clen, e)))
		goto out;
	t = tok_wordpiece_from_vocab(vocab, len, config, clen, vpath, e);
out:
	free(vocab);
	free(config);
	return t;
}

struct tokenizer *tok_wordpiece_load(const char *path, struct err *e)
{
	char a[4096], b[4096];
	struct stat st;
	size_t len;
	char *text;
	struct tokenizer *t;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (!join(a, sizeof a, path, "tokenizer.json") ||
		    !join(b, sizeof b, path, "tokenizer_config.json"))
			return err_set(e, "%s: path too long", path), NULL;
		if (stat(a, &st) == 0)
			return tok_wordpiece_load(a, e);
		join(a, sizeof a, path, "vocab.txt");
		return load_vocab_txt(a, b, e);
	}
	if (!ends_with(path, ".json")) {
		const char *slash = strrchr(path, '/');
		int dl = slash ? (int)(slash - path) : 1;

		if (snprintf(b, sizeof b, "%.*s/tokenizer_config.json", dl, slash ? path : ".") >=
		    (int)sizeof b)
			return err_set(e, "%s: path too long", path), NULL;
		return load_vocab_txt(path, b, e);
	}
	if (!(text = read_file_max(path, TOK_FILE_MAX, "a tokenizer file", &len, e)))
		return NULL;
	t = tok_wordpiece_from_text(text, len, path, e);
	free(text);
	return t;
}
