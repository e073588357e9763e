/*
 * tok-hfjson.c — Hugging Face tokenizer.json files with a BPE model
 * ("hf-tokenizer-json"); what is supported and refused is listed in
 * include/tok-hfjson.h.
 *
 * The vocabulary is kept as its keys (the strings of model.vocab, or an
 * added token's content) and, separately, as the exact bytes each id
 * decodes to.  Encoding works on keys: the pre-tokenizer turns text into
 * key alphabet (ByteLevel maps bytes to GPT-2's code points, Metaspace and
 * the Prepend/Replace normalizers put in "▁"), and the BPE merges pairs of
 * key ids by rank (tok_merge_pairs).  A character with no key of its own
 * never merges; it becomes <0xNN> byte tokens (byte_fallback) or unk.
 *
 * JavaScript regexes (the reference is transformers.js) run under PCRE2 in
 * UTF mode after a rewrite: \s and \S spelled out as JavaScript's white
 * space, \d as [0-9], '.' as "not a line terminator", and the case-blind
 * contractions group as transformers.js rewrites it.
 */
#define _GNU_SOURCE
#include "tok-hfjson.h"
#include "tok-common.h"
#include "json-util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define VOCAB_MAX (1 << 22)
#define PIECE_MAX (1 << 16)
#define STEPS_MAX 16

/* JavaScript's \s: WhiteSpace and LineTerminator (ECMA-262). */
#define JS_WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}" \
	      "\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
/* transformers.js's ByteLevel pattern (GPT-2's, with JavaScript's \s). */
static const char bytelevel_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enum norm_kind { NORM_NFC, NORM_PREPEND, NORM_REPLACE };

struct norm {
	enum norm_kind kind;
	char *a, *b;		/* PREPEND: a; REPLACE: a by b */
	size_t al, bl;
};

enum pre_kind { PRE_SPLIT, PRE_BYTELEVEL, PRE_METASPACE };

struct pre {
	enum pre_kind kind;
	pcre2_code *re;		/* SPLIT (also Digits), BYTELEVEL with use_regex */
	bool prefix_space;	/* BYTELEVEL, METASPACE: add_prefix_space */
	bool first_only;	/* METASPACE: prepend_scheme "first" */
	char *repl;		/* METASPACE: the replacement */
	size_t repl_len;
};

enum dec_kind { DEC_NONE, DEC_BYTELEVEL, DEC_SP };

struct hf_impl {
	int n;			/* ids 0 .. n-1 */
	char *kblob;		/* key of id i = kblob[koff[i] .. koff[i+1]) */
	uint32_t *koff;
	char *pblob;		/* bytes of id i = pblob[poff[i] .. poff[i+1]) */
	uint32_t *poff;
	unsigned char *added;	/* 1 for the ids of added_tokens */
	int32_t *vtab;		/* model.vocab keys -> ids */
	uint32_t vmask;

	struct tok_merges merges;

	int nadded;		/* added tokens matched in text, longest first */
	int *add_id;
	bool *add_lstrip, *add_rstrip;
	int *add_by_byte;	/* their indices grouped by first byte, each group */
	int add_start[257];	/* longest first: byte c's at [add_start[c], add_start[c+1]) */

	struct norm norm[STEPS_MAX];
	int nnorm;
	struct pre pre[STEPS_MAX];
	int npre;

	bool byte_fallback, fuse_unk, ignore_merges;
	int byte_tok[256];	/* <0xNN>, or -1 */
	uint32_t b2u[256];	/* GPT-2's byte -> code point map */
	int16_t u2b[324];	/* and back */

	enum dec_kind dec;
	char *sp_repl;		/* DEC_SP: what decodes as a space ("▁") */
	size_t sp_repl_len;
	bool dec_bytes;		/* DEC_SP: <0xNN> decodes as the byte */
	int strip;		/* DEC_SP: leading spaces dropped from the text */

	char *json;		/* the tokenizer.json text, for to_json */
	size_t json_len;
};

static const struct tokenizer_ops hf_ops;

/* ------------------------------------------------------------ helpers */



static const char *key_of(const struct hf_impl *h, int id, size_t *len)
{
	*len = h->koff[id + 1] - h->koff[id];
	return h->kblob + h->koff[id];
}

static int vocab_find(const struct hf_impl *h, const char *s, size_t n)
{
	return tok_vtab_find(h->vtab, h->vmask, h->kblob, h->koff, s, n);
}


/* A type name quoted from the file, printable and short. */
static const char *type_name(const json_t *o, char *buf, size_t size)
{
	const json_t *t = json_object_get(o, "type");

	if (!json_is_string(t))
		return "(no type)";
	utf8_printable(json_string_value(t), json_string_length(t) > 40 ? 40 : json_string_length(t),
		       buf, size);
	return buf;
}

/* The first 40 bytes of s[0..n) for a one-line message (control
 * characters as \xNN): buf, of at least QUOTE_MAX bytes. */
#define QUOTE_MAX (4 * 40 + 1)
static const char *quoted(const char *s, size_t n, char *buf)
{
	utf8_printable(s, n > 40 ? 40 : n, buf, QUOTE_MAX);
	return buf;
}

static bool is_type(const json_t *o, const char *type)
{
	const json_t *t = json_object_get(o, "type");

	return json_is_string(t) && !strcmp(json_string_value(t), type);
}

/* Whether o[key] is true (false when absent or null). */
static bool flag(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

/* A growing byte string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 64;

		while (c < b->len + n + 1)
			c *= 2;
		b->s = xrealloc(b->s, c);
		b->cap = c;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

/* A list of strings (pre-tokens), each malloc'd. */
struct strs {
	char **s;
	size_t *len;
	int n, cap;
};

static void strs_add(struct strs *l, const char *s, size_t n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->s = xrealloc(l->s, (size_t)l->cap * sizeof *l->s);
		l->len = xrealloc(l->len, (size_t)l->cap * sizeof *l->len);
	}
	l->s[l->n] = xstrndup(s, n); /* copies n bytes, NULs and all */
	l->len[l->n++] = n;
}

static void strs_free(struct strs *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->s[i]);
	free(l->s);
	free(l->len);
	memset(l, 0, sizeof *l);
}

/* -------------------------------------------------------------- regexes */

/* Rewrites a JavaScript u-mode regex (as transformers.js builds it from
 * a Split pattern) for PCRE2.  Malloc'd, or NULL + e. */
static char *js_to_pcre2(const char *pat, size_t len, const char *where, struct err *e)
{
	static const char *const rewrite[][2] = {
		{ "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
		  "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))" },
	};
	struct buf b = { 0 };
	bool in_class = false;

	for (size_t i = 0; i < len;) {
		size_t r;

		for (r = 0; r < sizeof rewrite / sizeof rewrite[0]; r++) {
			size_t rl = strlen(rewrite[r][0]);

			if (!in_class && len - i >= rl && !memcmp(pat + i, rewrite[r][0], rl)) {
				buf_str(&b, rewrite[r][1]);
				i += rl;
				break;
			}
		}
		if (r < sizeof rewrite / sizeof rewrite[0])
			continue;
		char c = pat[i];
		if (c == '\\' && i + 1 < len) {
			char d = pat[i + 1];

			if (d == 's')
				buf_str(&b, in_class ? JS_WS : "[" JS_WS "]");
			else if (d == 'd')
				buf_str(&b, in_class ? "0-9" : "[0-9]");
			else if ((d == 'S' || d == 'D') && !in_class)
				buf_str(&b, d == 'S' ? "[^" JS_WS "]" : "[^0-9]");
			else if (d == 'S' || d == 'D') {
				free(b.s);
				err_set(e, "%s: \\%c inside a character class is not supported yet", where, d);
				return NULL;
			} else if (d == '#' || d == '&' || d == '~')
				buf_put(&b, &d, 1); /* transformers.js drops these escapes */
			else
				buf_put(&b, pat + i, 2);
			i += 2;
			continue;
		}
		if (c == '[' && !in_class) {
			in_class = true;
			buf_put(&b, &c, 1);
			if (i + 1 < len && pat[i + 1] == '^')
				buf_put(&b, pat + ++i, 1);
		} else if (c == ']' && in_class) {
			in_class = false;
			buf_put(&b, &c, 1);
		} else if (c == '.' && !in_class) {
			buf_str(&b, "[^\\n\\r\\x{2028}\\x{2029}]");
		} else {
			buf_put(&b, &c, 1);
		}
		i++;
	}
	if (!b.s)
		buf_str(&b, "");
	return b.s;
}

/* Compiles a pattern (literal when literal is set); NULL + e. */
static pcre2_code *compile(const char *pat, size_t len, bool literal, const char *where,
			   struct err *e)
{
	char *p = literal ? NULL : js_to_pcre2(pat, len, where, e);
	int code;
	PCRE2_SIZE at;
	pcre2_code *re;

	if (!literal && !p)
		return NULL;
	re = pcre2_compile((PCRE2_SPTR)(literal ? pat : p), literal ? len : PCRE2_ZERO_TERMINATED,
			   PCRE2_UTF | (literal ? PCRE2_LITERAL : 0), &code, &at, NULL);
	free(p);
	if (!re) {
		PCRE2_UCHAR msg[120];

		pcre2_get_error_message(code, msg, sizeof msg);
		err_set(e, "%s: the pattern does not compile (at %zu: %s)", where, (size_t)at,
			(char *)msg);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

/* Bounds on one pcre2_match call, so that a pattern with catastrophic
 * backtracking ("(a|aa)+$", "(?R)?a") fails on that text instead of
 * running for minutes or overflowing the stack.  The JIT honours the
 * match limit; the interpreter also the depth and heap limits (KiB). */
#define MATCH_LIMIT 10000000u
#define DEPTH_LIMIT 1000000u
#define HEAP_LIMIT (64u * 1024u)

static pcre2_match_context *match_context(void)
{
	pcre2_match_context *mc = pcre2_match_context_create(NULL);

	if (!mc)
		die("out of memory (PCRE2 match context)");
	pcre2_set_match_limit(mc, MATCH_LIMIT);
	pcre2_set_depth_limit(mc, DEPTH_LIMIT);
	pcre2_set_heap_limit(mc, HEAP_LIMIT);
	return mc;
}

/* A failed match (other than no match) as a one-line error for this text. */
static int match_error(int rc, struct err *e)
{
	PCRE2_UCHAR msg[120];

	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
	    rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
		return err_set(e, "tokenizer.json: a pre-tokenizer regex hit its match limit on "
			       "this text (the pattern backtracks too much); not encoded");
	pcre2_get_error_message(rc, msg, sizeof msg);
	return err_set(e, "tokenizer.json: a pre-tokenizer regex failed on this text (PCRE2: %s); "
		       "not encoded", (char *)msg);
}

/* Splits s[0..len) around the matches of re, keeping both the matches
 * and what lies between (behaviour Isolated, as transformers.js's
 * regexSplit); appends the non-empty parts to out.  -1 + e when a match
 * fails (its limits, above); out then holds what was split so far. */
static int split_isolated(const pcre2_code *re, const char *s, size_t len, struct strs *out,
			  struct err *e)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	pcre2_match_context *mc = match_context();
	size_t last = 0, from = 0;
	int ret = 0;

	if (!md)
		die("out of memory (PCRE2 match data)");
	while (from <= len) {
		int rc = pcre2_match(re, (PCRE2_SPTR)s, len, from, PCRE2_NO_UTF_CHECK, md, mc);
		PCRE2_SIZE *ov;

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			ret = match_error(rc, e);
			goto out;
		}
		ov = pcre2_get_ovector_pointer(md);
		if (ov[0] > last)
			strs_add(out, s + last, ov[0] - last);
		if (ov[1] > ov[0]) {
			strs_add(out, s + ov[0], ov[1] - ov[0]);
			last = from = ov[1];
			continue;
		}
		last = ov[0];
		if (ov[1] >= len)
			break;
		uint32_t cp;
		int bad;
		from = ov[1] + (size_t)utf8_decode((const unsigned char *)s + ov[1], len - ov[1],
						   &cp, &bad);
	}
	if (last < len)
		strs_add(out, s + last, len - last);
out:
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	return ret;
}

/* ------------------------------------------------------------- freeing */

static void hf_impl_free(struct hf_impl *h)
{
	if (!h)
		return;
	free(h->kblob);
	free(h->koff);
	free(h->pblob);
	free(h->poff);
	free(h->added);
	free(h->vtab);
	tok_merges_free(&h->merges);
	free(h->add_id);
	free(h->add_lstrip);
	free(h->add_rstrip);
	free(h->add_by_byte);
	for (int i = 0; i < h->nnorm; i++) {
		free(h->norm[i].a);
		free(h->norm[i].b);
	}
	for (int i = 0; i < h->npre; i++) {
		if (h->pre[i].re)
			pcre2_code_free(h->pre[i].re);
		free(h->pre[i].repl);
	}
	free(h->sp_repl);
	free(h->json);
	free(h);
}

/* ---------------------------------------------------------- vocabulary */

/* Checks one added_tokens entry; its id and content in *id, *content. */
static int added_entry(const json_t *a, size_t i, const char *where, json_int_t *id,
		       const char **content, struct err *e)
{
	const json_t *jid = json_object_get(a, "id"), *c = json_object_get(a, "content");

	if (!json_is_integer(jid) || !json_is_string(c) || json_string_length(c) == 0)
		return err_set(e, "%s: added_tokens[%zu] needs an integer \"id\" and a non-empty "
			       "\"content\"", where, i);
	if (flag(a, "single_word"))
		return err_set(e, "%s: added_tokens[%zu]: single_word true is not supported yet",
			       where, i);
	*id = json_integer_value(jid);
	*content = json_string_value(c);
	if (*id < 0 || *id >= VOCAB_MAX)
		return err_set(e, "%s: added_tokens[%zu]: id %lld is out of range", where, i,
			       (long long)*id);
	if (strlen(*content) != json_string_length(c) || json_string_length(c) > PIECE_MAX)
		return err_set(e, "%s: added_tokens[%zu]: the content holds a NUL or is huge",
			       where, i);
	return 0;
}

/* Fills keys[id] from model.vocab and added_tokens, and h->n. */
static int collect_keys(struct hf_impl *h, const json_t *vocab, const json_t *added,
			const char *where, const char ***keys_out, struct err *e)
{
	json_int_t top = -1, id;
	const char *key, *content, **keys;
	char q1[QUOTE_MAX], q2[QUOTE_MAX];
	json_t *v;
	size_t i;

	if (!json_is_object(vocab) || json_object_size(vocab) == 0)
		return err_set(e, "%s: model.vocab is missing, empty or not an object", where);
	if (added && !json_is_array(added))
		return err_set(e, "%s: added_tokens is not an array", where);
	json_object_foreach((json_t *)vocab, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= VOCAB_MAX)
			return err_set(e, "%s: model.vocab: the id of \"%s\" is not an integer "
				       "in 0..%d", where, quoted(key, strlen(key), q1), VOCAB_MAX - 1);
		if (json_integer_value(v) > top)
			top = json_integer_value(v);
	}
	json_array_foreach(added, i, v) {
		if (added_entry(v, i, where, &id, &content, e))
			return -1;
		if (id > top)
			top = id;
	}
	h->n = (int)top + 1;
	keys = xcalloc((size_t)h->n, sizeof *keys);
	*keys_out = keys;
	json_object_foreach((json_t *)vocab, key, v) {
		id = json_integer_value(v);
		if (keys[id])
			return err_set(e, "%s: model.vocab: id %lld is given to both \"%s\" and "
				       "\"%s\"", where, (long long)id, quoted(keys[id], strlen(keys[id]), q1),
				       quoted(key, strlen(key), q2));
		if (!*key || strlen(key) > PIECE_MAX)
			return err_set(e, "%s: model.vocab: token %lld has an empty or huge key",
				       where, (long long)id);
		keys[id] = key;
	}
	json_array_foreach(added, i, v) {
		added_entry(v, i, where, &id, &content, e);
		if (!keys[id])
			keys[id] = content;
	}
	for (int k = 0; k < h->n; k++)
		if (!keys[k])
			return err_set(e, "%s: no token has id %d (model.vocab and added_tokens must "
				       "number the tokens from 0 without gaps)", where, k);
	return 0;
}

/* Groups the added tokens by first byte (a counting sort, which keeps
 * each group longest first), so that matching them in text looks only at
 * those that can start there (Gemma 3 has 6415). */
static void index_added(struct hf_impl *h)
{
	int at[257] = { 0 };

	h->add_by_byte = xcalloc((size_t)h->nadded + 1, sizeof *h->add_by_byte);
	for (int i = 0; i < h->nadded; i++)
		at[(unsigned char)h->kblob[h->koff[h->add_id[i]]] + 1]++;
	for (int c = 0; c < 256; c++)
		at[c + 1] += at[c];
	memcpy(h->add_start, at, sizeof at);
	for (int i = 0; i < h->nadded; i++)
		h->add_by_byte[at[(unsigned char)h->kblob[h->koff[h->add_id[i]]]]++] = i;
}

/* Builds the keys, the key table, the added tokens and byte tokens. */
static int build_vocab(struct hf_impl *h, const json_t *model, const json_t *added,
		       const char *where, struct err *e)
{
	const char **keys = NULL;
	size_t total = 0, at = 0, i;
	json_t *a;

	if (collect_keys(h, json_object_get(model, "vocab"), added, where, &keys, e)) {
		free(keys);
		return -1;
	}
	for (int k = 0; k < h->n; k++)
		total += strlen(keys[k]);
	h->kblob = xmalloc(total + 1);
	h->koff = xmalloc(((size_t)h->n + 1) * sizeof *h->koff);
	for (int k = 0; k < h->n; k++) {
		size_t l = strlen(keys[k]);

		h->koff[k] = (uint32_t)at;
		memcpy(h->kblob + at, keys[k], l);
		at += l;
	}
	h->koff[h->n] = (uint32_t)at;
	free(keys);
	h->vtab = tok_vtab_new((size_t)h->n, &h->vmask);
	const char *key;
	json_t *v;
	json_object_foreach(json_object_get(model, "vocab"), key, v)
		if (vocab_find(h, key, strlen(key)) < 0)
			tok_vtab_add(h->vtab, h->vmask, key, strlen(key),
				     (int32_t)json_integer_value(v));
	/* added tokens, longest first (matching takes the longest) */
	h->added = xcalloc((size_t)h->n, 1);
	h->nadded = (int)json_array_size(added);
	h->add_id = xcalloc((size_t)h->nadded + 1, sizeof *h->add_id);
	h->add_lstrip = xcalloc((size_t)h->nadded + 1, sizeof *h->add_lstrip);
	h->add_rstrip = xcalloc((size_t)h->nadded + 1, sizeof *h->add_rstrip);
	json_array_foreach(added, i, a) {
		const char *c = json_string_value(json_object_get(a, "content"));
		size_t l = strlen(c), k = i;
		int id = (int)json_integer_value(json_object_get(a, "id"));
		size_t kl;
		char q1[QUOTE_MAX], q2[QUOTE_MAX];
		const char *have = key_of(h, id, &kl);

		if (kl != l || memcmp(have, c, l))
			return err_set(e, "%s: added_tokens[%zu]: \"%s\" has the id of \"%s\" "
				       "in model.vocab", where, i, quoted(c, l, q1),
				       quoted(have, kl, q2));
		h->added[id] = 1;
		while (k > 0 && (key_of(h, h->add_id[k - 1], &kl), kl) < l) {
			h->add_id[k] = h->add_id[k - 1];
			h->add_lstrip[k] = h->add_lstrip[k - 1];
			h->add_rstrip[k] = h->add_rstrip[k - 1];
			k--;
		}
		h->add_id[k] = id;
		h->add_lstrip[k] = flag(a, "lstrip");
		h->add_rstrip[k] = flag(a, "rstrip");
	}
	index_added(h);
	for (int b = 0; b < 256; b++) {
		char name[8];

		snprintf(name, sizeof name, "<0x%02X>", b);
		h->byte_tok[b] = vocab_find(h, name, 6);
	}
	return 0;
}

/* One merge: "a b", or ["a", "b"]. */
static int add_merge(struct hf_impl *h, const json_t *m, size_t i, const char *where,
		     struct err *e)
{
	const char *x, *y, *sp;
	size_t xl, yl;

	if (json_is_string(m)) {
		const char *s = json_string_value(m);
		size_t l = json_string_length(m);

		sp = memchr(s, ' ', l);
		if (!sp || sp == s || sp == s + l - 1 || memchr(sp + 1, ' ', (size_t)(s + l - sp - 1)))
			return err_set(e, "%s: model.merges[%zu] is malformed (expected two tokens "
				       "separated by one space)", where, i);
		x = s;
		xl = (size_t)(sp - s);
		y = sp + 1;
		yl = (size_t)(s + l - sp - 1);
	} else if (json_is_array(m) && json_array_size(m) == 2 &&
		   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
		x = json_string_value(json_array_get(m, 0));
		xl = json_string_length(json_array_get(m, 0));
		y = json_string_value(json_array_get(m, 1));
		yl = json_string_length(json_array_get(m, 1));
	} else {
		return err_set(e, "%s: model.merges[%zu] is neither \"A B\" nor [\"A\", \"B\"]",
			       where, i);
	}
	int a = vocab_find(h, x, xl), b = vocab_find(h, y, yl), out;
	char *both = xmalloc(xl + yl + 1);
	memcpy(both, x, xl);
	memcpy(both + xl, y, yl);
	out = vocab_find(h, both, xl + yl);
	free(both);
	char q1[QUOTE_MAX], q2[QUOTE_MAX];
	if (a < 0 || b < 0)
		return err_set(e, "%s: model.merges[%zu]: token \"%s\" is not in the vocab", where,
			       i, a < 0 ? quoted(x, xl, q1) : quoted(y, yl, q1));
	if (out < 0)
		return err_set(e, "%s: model.merges[%zu]: the merge of \"%s\" and \"%s\" is not "
			       "in the vocab", where, i, quoted(x, xl, q1), quoted(y, yl, q2));
	tok_merges_add(&h->merges, a, b, (int)i, out); /* a repeat keeps its first rank */
	return 0;
}

static int build_merges(struct hf_impl *h, const json_t *merges, const char *where,
			struct err *e)
{
	size_t n = json_array_size(merges), i;
	json_t *m;

	if (!json_is_array(merges))
		return err_set(e, "%s: model.merges is missing or not an array", where);
	tok_merges_init(&h->merges, n);
	json_array_foreach(merges, i, m)
		if (add_merge(h, m, i, where, e))
			return -1;
	return 0;
}

/* The model's options: refuses what is not BPE or not supported. */
static int parse_model(struct hf_impl *h, const json_t *model, const json_t *added,
		       const char *where, int *unk_id, struct err *e)
{
	char tn[64];
	static const char *const empty_only[] = { "continuing_subword_prefix",
						  "end_of_word_suffix" };

	if (!json_is_object(model))
		return err_set(e, "%s: no \"model\" object", where);
	if (!is_type(model, "BPE"))
		return err_set(e, "%s: model type %s is not supported yet (BPE only)", where,
			       type_name(model, tn, sizeof tn));
	for (size_t i = 0; i < 2; i++) {
		const json_t *v = json_object_get(model, empty_only[i]);

		if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
			return err_set(e, "%s: model.%s is not supported yet", where, empty_only[i]);
	}
	const json_t *dropout = json_object_get(model, "dropout");
	if (dropout && !json_is_null(dropout))
		return err_set(e, "%s: model.dropout is not supported", where);
	if (build_vocab(h, model, added, where, e) ||
	    build_merges(h, json_object_get(model, "merges"), where, e))
		return -1;
	h->byte_fallback = flag(model, "byte_fallback");
	h->fuse_unk = flag(model, "fuse_unk");
	h->ignore_merges = flag(model, "ignore_merges");
	const json_t *unk = json_object_get(model, "unk_token");
	*unk_id = -1;
	if (json_is_string(unk)) {
		char q[QUOTE_MAX];

		*unk_id = vocab_find(h, json_string_value(unk), json_string_length(unk));
		if (*unk_id < 0)
			return err_set(e, "%s: model.unk_token \"%s\" is not in the vocab", where,
				       quoted(json_string_value(unk), json_string_length(unk), q));
	} else if (unk && !json_is_null(unk)) {
		return err_set(e, "%s: model.unk_token is not a string", where);
	}
	return 0;
}

/* ------------------------------------------- normalizer, pre-tokenizer */

static int parse_normalizer(struct hf_impl *h, const json_t *n, const char *where,
			    struct err *e)
{
	char tn[64];

	if (!n || json_is_null(n))
		return 0;
	if (is_type(n, "Sequence")) {
		size_t i;
		json_t *s, *list = json_object_get(n, "normalizers");

		if (!json_is_array(list))
			return err_set(e, "%s: normalizer Sequence without \"normalizers\"", where);
		json_array_foreach(list, i, s)
			if (parse_normalizer(h, s, where, e))
				return -1;
		return 0;
	}
	if (h->nnorm == STEPS_MAX)
		return err_set(e, "%s: more than %d normalizers", where, STEPS_MAX);
	struct norm *o = &h->norm[h->nnorm];
	if (is_type(n, "NFC")) {
		o->kind = NORM_NFC;
	} else if (is_type(n, "Prepend")) {
		const json_t *p = json_object_get(n, "prepend");

		if (!json_is_string(p))
			return err_set(e, "%s: normalizer Prepend without a \"prepend\" string", where);
		o->kind = NORM_PREPEND;
		o->al = json_string_length(p);
		o->a = xstrndup(json_string_value(p), o->al);
	} else if (is_type(n, "Replace")) {
		const json_t *p = json_object_get(json_object_get(n, "pattern"), "String");
		const json_t *c = json_object_get(n, "content");

		if (!json_is_string(p) || !json_is_string(c))
			return err_set(e, "%s: normalizer Replace is supported with a String pattern "
				       "and a content string only", where);
		if (json_string_length(p) == 0)
			return err_set(e, "%s: normalizer Replace with an empty pattern", where);
		o->kind = NORM_REPLACE;
		o->al = json_string_length(p);
		o->a = xstrndup(json_string_value(p), o->al);
		o->bl = json_string_length(c);
		o->b = xstrndup(json_string_value(c), o->bl);
	} else {
		return err_set(e, "%s: normalizer %s is not supported yet", where,
			       type_name(n, tn, sizeof tn));
	}
	h->nnorm++;
	return 0;
}

/* Whether no text can hold str[0..len) when the next pre-tokenizer
 * reads it: it is one character, the last normalizer is a Replace of it
 * by a content without it (a Replace of one character leaves none, and
 * makes none at its seams), and the pre-tokenizers before only split
 * (ByteLevel and Metaspace write characters). */
static bool normalized_away(const struct hf_impl *h, const char *str, size_t len)
{
	const struct norm *o = h->nnorm ? &h->norm[h->nnorm - 1] : NULL;
	uint32_t cp;
	int bad;

	for (int i = 0; i < h->npre; i++)
		if (h->pre[i].kind != PRE_SPLIT)
			return false;

	if (!o || o->kind != NORM_REPLACE || len == 0 || o->al != len || memcmp(o->a, str, len))
		return false;
	if ((size_t)utf8_decode((const unsigned char *)str, len, &cp, &bad) != len || bad)
		return false;
	return !memmem(o->b, o->bl, str, len);
}

/* A Split step into p; *skip set when it can never split (Gemma's: a
 * MergedWithPrevious Split on " " after the normalizer replaced every " "
 * by "▁").  transformers.js splits every behaviour but Removed as
 * Isolated, tokenizers merges each match into the piece before it: they
 * agree only where the pattern never matches, so MergedWithPrevious is
 * taken only there. */
static int parse_split(const struct hf_impl *h, struct pre *p, const json_t *n,
		       const char *where, bool *skip, struct err *e)
{
	const json_t *pat = json_object_get(n, "pattern"), *b = json_object_get(n, "behavior");
	const json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
	const char *bn = json_is_string(b) ? json_string_value(b) : "(none)";
	char w[512], q[QUOTE_MAX];

	*skip = false;
	if (flag(n, "invert"))
		return err_set(e, "%s: pre_tokenizer Split with invert true is not supported yet",
			       where);
	if (!strcmp(bn, "MergedWithPrevious") && json_is_string(str) &&
	    normalized_away(h, json_string_value(str), json_string_length(str))) {
		*skip = true;
		return 0;
	}
	if (!strcmp(bn, "MergedWithPrevious"))
		return err_set(e, "%s: pre_tokenizer Split with behavior MergedWithPrevious is "
			       "supported only on a one-character String that the last normalizer "
			       "replaces (transformers.js splits it as Isolated)", where);
	if (strcmp(bn, "Isolated"))
		return err_set(e, "%s: pre_tokenizer Split with behavior %s is not supported yet "
			       "(Isolated only)", where, quoted(bn, strlen(bn), q));
	if (!json_is_string(re) && !json_is_string(str))
		return err_set(e, "%s: pre_tokenizer Split without a Regex or String pattern", where);
	snprintf(w, sizeof w, "%s: pre_tokenizer Split", where);
	p->kind = PRE_SPLIT;
	p->re = json_is_string(re) ? compile(json_string_value(re), json_string_length(re), false,
					    w, e)
				   : compile(json_string_value(str), json_string_length(str), true,
					    w, e);
	return p->re ? 0 : -1;
}

static int parse_metaspace(struct pre *p, const json_t *n, const char *where, struct err *e)
{
	const json_t *r = json_object_get(n, "replacement");
	const json_t *scheme = json_object_get(n, "prepend_scheme");
	const json_t *aps = json_object_get(n, "add_prefix_space");
	const char *sc = json_is_string(scheme) ? json_string_value(scheme) : "always";

	if (!json_is_string(r) || json_string_length(r) == 0)
		return err_set(e, "%s: pre_tokenizer Metaspace without a \"replacement\"", where);
	if (flag(n, "split"))
		return err_set(e, "%s: pre_tokenizer Metaspace with split true is not supported yet",
			       where);
	char q[QUOTE_MAX];
	if (strcmp(sc, "always") && strcmp(sc, "first") && strcmp(sc, "never"))
		return err_set(e, "%s: pre_tokenizer Metaspace prepend_scheme %s is not "
			       "supported", where, quoted(sc, strlen(sc), q));
	/* transformers.js prepends only with add_prefix_space true; tokenizers
	 * follows prepend_scheme alone: refuse where they disagree */
	if (!json_is_boolean(aps) && strcmp(sc, "never"))
		return err_set(e, "%s: pre_tokenizer Metaspace without add_prefix_space is not "
			       "supported yet", where);
	p->kind = PRE_METASPACE;
	p->repl_len = json_string_length(r);
	p->repl = xstrndup(json_string_value(r), p->repl_len);
	p->prefix_space = json_is_true(aps) && strcmp(sc, "never");
	p->first_only = !strcmp(sc, "first");
	return 0;
}

static int parse_pre(struct hf_impl *h, const json_t *n, const char *where, struct err *e)
{
	char tn[64];

	if (!n || json_is_null(n))
		return 0;
	if (is_type(n, "Sequence")) {
		size_t i;
		json_t *s, *list = json_object_get(n, "pretokenizers");

		if (!json_is_array(list))
			return err_set(e, "%s: pre_tokenizer Sequence without \"pretokenizers\"", where);
		json_array_foreach(list, i, s)
			if (parse_pre(h, s, where, e))
				return -1;
		return 0;
	}
	if (h->npre == STEPS_MAX)
		return err_set(e, "%s: more than %d pre-tokenizers", where, STEPS_MAX);
	struct pre *p = &h->pre[h->npre];
	if (is_type(n, "Split")) {
		bool skip;

		if (parse_split(h, p, n, where, &skip, e))
			return -1;
		if (skip)
			return 0;
	} else if (is_type(n, "ByteLevel")) {
		const json_t *ur = json_object_get(n, "use_regex");

		p->kind = PRE_BYTELEVEL;
		p->prefix_space = flag(n, "add_prefix_space");
		if (!ur || json_is_true(ur)) {
			p->re = compile(bytelevel_pattern, strlen(bytelevel_pattern), false, where, e);
			if (!p->re)
				return -1;
		}
	} else if (is_type(n, "Digits")) {
		static const char one[] = "[^0-9]+|[0-9]", runs[] = "[^0-9]+|[0-9]+";
		bool single = flag(n, "individual_digits");

		p->kind = PRE_SPLIT;
		p->re = compile(single ? one : runs, strlen(single ? one : runs), false, where, e);
		if (!p->re)
			return -1;
	} else if (is_type(n, "Metaspace")) {
		if (parse_metaspace(p, n, where, e))
			return -1;
	} else {
		return err_set(e, "%s: pre_tokenizer %s is not supported yet", where,
			       type_name(n, tn, sizeof tn));
	}
	h->npre++;
	return 0;
}

/* ------------------------------------------------------------- decoder */

static int parse_decoder_step(struct hf_impl *h, const json_t *d, const char *where,
			      struct err *e)
{
	char tn[64];

	if (is_type(d, "ByteLevel") && h->dec == DEC_NONE) {
		h->dec = DEC_BYTELEVEL;
		return 0;
	}
	if (h->dec == DEC_BYTELEVEL)
		return err_set(e, "%s: decoder %s after ByteLevel is not supported yet", where,
			       type_name(d, tn, sizeof tn));
	if (is_type(d, "Replace")) {
		const json_t *p = json_object_get(json_object_get(d, "pattern"), "String");
		const json_t *c = json_object_get(d, "content");

		if (!json_is_string(p) || json_string_length(p) == 0 || !json_is_string(c) ||
		    strcmp(json_string_value(c), " ") || h->sp_repl)
			return err_set(e, "%s: decoder Replace is supported only as one String "
				       "pattern replaced by \" \"", where);
		h->sp_repl_len = json_string_length(p);
		h->sp_repl = xstrndup(json_string_value(p), h->sp_repl_len);
	} else if (is_type(d, "ByteFallback")) {
		h->dec_bytes = true;
	} else if (is_type(d, "Fuse")) {
		/* concatenation, which decoding does anyway */
	} else if (is_type(d, "Strip")) {
		const json_t *c = json_object_get(d, "content"), *start = json_object_get(d, "start");
		const json_t *stop = json_object_get(d, "stop");

		if (!json_is_string(c) || strcmp(json_string_value(c), " ") ||
		    !json_is_integer(start) || json_integer_value(start) < 0 ||
		    json_integer_value(start) > 8 || json_integer_value(stop) != 0)
			return err_set(e, "%s: decoder Strip is supported only for leading spaces",
				       where);
		h->strip = (int)json_integer_value(start);
	} else if (is_type(d, "Metaspace")) {
		const json_t *r = json_object_get(d, "replacement");

		if (!json_is_string(r) || json_string_length(r) == 0 || h->sp_repl)
			return err_set(e, "%s: decoder Metaspace without a \"replacement\"", where);
		h->sp_repl_len = json_string_length(r);
		h->sp_repl = xstrndup(json_string_value(r), h->sp_repl_len);
		h->strip = flag(d, "add_prefix_space") ? 1 : 0;
	} else {
		return err_set(e, "%s: decoder %s is not supported yet", where,
			       type_name(d, tn, sizeof tn));
	}
	h->dec = DEC_SP;
	return 0;
}

static int parse_decoder(struct hf_impl *h, const json_t *d, const char *where, struct err *e)
{
	if (!d || json_is_null(d))
		return 0;
	if (is_type(d, "Sequence")) {
		size_t i;
		json_t *s, *list = json_object_get(d, "decoders");

		if (!json_is_array(list))
			return err_set(e, "%s: decoder Sequence without \"decoders\"", where);
		json_array_foreach(list, i, s)
			if (parse_decoder_step(h, s, where, e))
				return -1;
		return 0;
	}
	return parse_decoder_step(h, d, where, e);
}

/* Whether key k[0..n) is "<0xNN>"; the byte in *b. */
static bool byte_key(const char *k, size_t n, unsigned *b)
{
	char hex[3];

	if (n != 6 || memcmp(k, "<0x", 3) || k[5] != '>' || !strchr("0123456789ABCDEF", k[3]) ||
	    !strchr("0123456789ABCDEF", k[4]))
		return false;
	hex[0] = k[3];
	hex[1] = k[4];
	hex[2] = '\0';
	*b = (unsigned)strtoul(hex, NULL, 16);
	return true;
}

/* The bytes of every id, as the decoder turns its key into text.  As in
 * transformers.js, ByteLevel leaves added tokens as they are; Replace and
 * Metaspace put a space for each "▁" in them too (Gemma's "▁▁" is two
 * spaces). */
static void build_pieces(struct hf_impl *h)
{
	struct buf b = { 0 };

	h->poff = xmalloc(((size_t)h->n + 1) * sizeof *h->poff);
	buf_put(&b, "", 0);
	for (int id = 0; id < h->n; id++) {
		size_t kl, start = b.len;
		const char *k = key_of(h, id, &kl);
		unsigned byte;

		h->poff[id] = (uint32_t)b.len;
		if (h->dec == DEC_NONE || (h->added[id] && h->dec == DEC_BYTELEVEL)) {
			buf_put(&b, k, kl);
		} else if (h->dec == DEC_BYTELEVEL) {
			for (size_t i = 0; i < kl;) {
				uint32_t cp;
				int bad, l = utf8_decode((const unsigned char *)k + i, kl - i, &cp, &bad);
				char c;

				if (bad || cp >= 324 || h->u2b[cp] < 0) { /* not byte-mapped: literal */
					b.len = start;
					buf_put(&b, k, kl);
					break;
				}
				c = (char)h->u2b[cp];
				buf_put(&b, &c, 1);
				i += (size_t)l;
			}
		} else if (h->dec_bytes && byte_key(k, kl, &byte)) {
			char c = (char)byte;

			buf_put(&b, &c, 1);
		} else {
			for (size_t i = 0; i < kl;) {
				if (h->sp_repl && kl - i >= h->sp_repl_len &&
				    !memcmp(k + i, h->sp_repl, h->sp_repl_len)) {
					buf_put(&b, " ", 1);
					i += h->sp_repl_len;
				} else {
					buf_put(&b, k + i++, 1);
				}
			}
		}
	}
	h->poff[h->n] = (uint32_t)b.len;
	h->pblob = b.s;
}

/* ------------------------------------------------------------ encoding */

/* How far the normalizers may grow a text: no step's output may exceed
 * NORM_GROWTH times the text given to normalize() plus NORM_SLACK bytes
 * (a Prepend to one character), nor NORM_CAP bytes.  A chain of Replace
 * steps ("a" by "aaaaaaaa", sixteen times) would otherwise ask for
 * gigabytes from one character. */
#define NORM_GROWTH 16
#define NORM_SLACK 1024
#define NORM_CAP ((size_t)256 << 20)

static size_t norm_limit(size_t len)
{
	if (len > (NORM_CAP - NORM_SLACK) / NORM_GROWTH)
		return len > NORM_CAP ? len : NORM_CAP;
	return len * NORM_GROWTH + NORM_SLACK;
}

/* Normalizer step i (kind o) of a text of len bytes refused for growing past max. */
static int norm_too_big(int i, const struct norm *o, size_t len, size_t max, struct err *e)
{
	static const char *const names[] = { "NFC", "Prepend", "Replace" };

	return err_set(e, "tokenizer.json: normalizer %d (%s) would grow this %zu-byte text past "
		       "%zu bytes (%d times its length plus %d, at most %zu MiB); not encoded",
		       i + 1, names[o->kind], len, max, NORM_GROWTH, NORM_SLACK, NORM_CAP >> 20);
}

/* One normalizer step over b into nb (empty on entry); false, nb freed,
 * when its output would pass max bytes. */
static bool norm_step(const struct norm *o, const struct buf *b, size_t max, struct buf *nb)
{
	if (o->kind == NORM_NFC) { /* grows a text by a few times at most */
		nb->s = tok_nfc(b->s, b->len, &nb->len);
		nb->cap = nb->len + 1;
	} else if (o->kind == NORM_PREPEND) {
		if (o->al > max - b->len)
			return false;
		buf_put(nb, o->a, o->al);
		buf_put(nb, b->s, b->len);
	} else { /* Replace */
		buf_put(nb, "", 0);
		for (size_t k = 0; k < b->len;) {
			bool hit = b->len - k >= o->al && !memcmp(b->s + k, o->a, o->al);
			size_t n = hit ? o->bl : 1;

			if (n > max - nb->len) {
				free(nb->s);
				return false;
			}
			buf_put(nb, hit ? o->b : b->s + k, n);
			k += hit ? o->al : 1;
		}
	}
	if (nb->len <= max)
		return true;
	free(nb->s);
	return false;
}

/* Applies the normalizers to s[0..len) (valid UTF-8); malloc'd result in
 * *out, *out_len.  -1 + e (and *out NULL) when a step would grow the text
 * past norm_limit(len). */
static int normalize(const struct hf_impl *h, const char *s, size_t len, char **out,
		     size_t *out_len, struct err *e)
{
	struct buf b = { 0 };
	size_t max = norm_limit(len);

	*out = NULL;
	*out_len = 0;
	buf_put(&b, s, len);
	for (int i = 0; i < h->nnorm; i++) {
		struct buf nb = { 0 };
		bool fits = norm_step(&h->norm[i], &b, max, &nb);

		free(b.s);
		if (!fits)
			return norm_too_big(i, &h->norm[i], len, max, e);
		b = nb;
	}
	*out = b.s;
	*out_len = b.len;
	return 0;
}

/* One pre-tokenizer over one piece; appends the results to out.
 * -1 + e when a regex fails on this text (split_isolated). */
static int pre_one(const struct hf_impl *h, const struct pre *p, const char *s, size_t len,
		   int section, struct strs *out, struct err *e)
{
	struct buf b = { 0 };
	int ret = 0;

	if (p->kind == PRE_SPLIT)
		return split_isolated(p->re, s, len, out, e);
	if (p->kind == PRE_METASPACE) {
		struct buf m = { 0 };

		buf_put(&m, "", 0);
		for (size_t i = 0; i < len; i++)
			if (s[i] == ' ')
				buf_put(&m, p->repl, p->repl_len);
			else
				buf_put(&m, s + i, 1);
		if (p->prefix_space && (m.len < p->repl_len || memcmp(m.s, p->repl, p->repl_len)) &&
		    (!p->first_only || section == 0)) {
			buf_put(&b, p->repl, p->repl_len);
		}
		buf_put(&b, m.s, m.len);
		free(m.s);
		strs_add(out, b.s, b.len);
		free(b.s);
		return 0;
	}
	/* ByteLevel: a space first, the pattern, then bytes to code points */
	struct strs parts = { 0 };
	if (p->prefix_space && (len == 0 || s[0] != ' '))
		buf_put(&b, " ", 1);
	buf_put(&b, s, len);
	if (p->re)
		ret = split_isolated(p->re, b.s, b.len, &parts, e);
	else
		strs_add(&parts, b.s, b.len);
	for (int i = 0; i < parts.n && !ret; i++) {
		struct buf m = { 0 };

		buf_put(&m, "", 0);
		for (size_t k = 0; k < parts.len[i]; k++) {
			char u[4];
			int l = utf8_encode(h->b2u[(unsigned char)parts.s[i][k]], u);

			buf_put(&m, u, (size_t)l);
		}
		strs_add(out, m.s, m.len);
		free(m.s);
	}
	strs_free(&parts);
	free(b.s);
	return ret;
}

/* All pre-tokenizers in turn over s[0..len); -1 + e as pre_one (out is
 * then still the caller's to free). */
static int pre_tokenize(const struct hf_impl *h, const char *s, size_t len, int section,
			struct strs *out, struct err *e)
{
	strs_add(out, s, len);
	for (int i = 0; i < h->npre; i++) {
		struct strs next = { 0 };
		int rc = 0;

		for (int k = 0; k < out->n && !rc; k++)
			rc = pre_one(h, &h->pre[i], out->s[k], out->len[k], section, &next, e);
		strs_free(out);
		*out = next;
		if (rc)
			return -1;
	}
	return 0;
}

static void ids_push(int **ids, int *n, int *cap, int id)
{
	if (*n == *cap) {
		if (*cap > INT_MAX / 2)
			die("tokenizer: too many tokens");
		*cap = *cap ? 2 * *cap : 16;
		*ids = xrealloc(*ids, (size_t)*cap * sizeof **ids);
	}
	(*ids)[(*n)++] = id;
}

/* tok_merge_fn over the merges; characters with no key (< 0) never merge. */
static bool merge_of(const void *ctx, int a, int b, double *key, int *out)
{
	const struct hf_impl *h = ctx;
	int r = a >= 0 && b >= 0 ? tok_merges_find(&h->merges, a, b, out) : -1;

	*key = r;
	return r >= 0;
}

/* The BPE model over one pre-token; appends its ids.  A character with
 * no key is kept as -(its byte offset) - 1 until the end.  fuse_unk joins
 * an unk to one before it at or after ids[floor] (the section's start). */
static int bpe_word(const struct tokenizer *t, const char *s, size_t len, int floor, int **ids,
		    int *n, int *cap, struct err *e)
{
	const struct hf_impl *h = t->impl;
	int id, k = 0;

	if (h->ignore_merges && (id = vocab_find(h, s, len)) >= 0) {
		ids_push(ids, n, cap, id);
		return 0;
	}
	if (len > (size_t)INT_MAX / 2)
		return err_set(e, "tokenizer: text too long");
	int *tok = xmalloc((len + 1) * sizeof *tok);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int bad, l = utf8_decode((const unsigned char *)s + i, len - i, &cp, &bad);

		id = vocab_find(h, s + i, (size_t)l);
		tok[k++] = id >= 0 ? id : -(int)i - 1;
		i += (size_t)l;
	}
	k = tok_merge_pairs(tok, k, merge_of, h);
	for (int j = 0; j < k; j++) {
		if (tok[j] >= 0) {
			ids_push(ids, n, cap, tok[j]);
			continue;
		}
		size_t at = (size_t)(-tok[j] - 1);
		uint32_t cp;
		int bad, l = utf8_decode((const unsigned char *)s + at, len - at, &cp, &bad);
		bool bytes = h->byte_fallback;

		for (int b = 0; b < l && bytes; b++)
			bytes = h->byte_tok[(unsigned char)s[at + b]] >= 0;
		if (bytes) {
			for (int b = 0; b < l; b++)
				ids_push(ids, n, cap, h->byte_tok[(unsigned char)s[at + b]]);
		} else if (t->unk_id < 0) {
			char q[32];

			utf8_printable(s + at, (size_t)l, q, sizeof q);
			free(tok);
			return err_set(e, "tokenizer: no token for \"%s\" (U+%04X) and no unk_token",
				       q, (unsigned)cp);
		} else if (!(h->fuse_unk && *n > floor && (*ids)[*n - 1] == t->unk_id)) {
			ids_push(ids, n, cap, t->unk_id);
		}
	}
	free(tok);
	return 0;
}

/* One stretch of text between added tokens. */
static int encode_section(const struct tokenizer *t, const char *s, size_t len, int section,
			  int **ids, int *n, int *cap, struct err *e)
{
	const struct hf_impl *h = t->impl;
	struct strs words = { 0 };
	char *norm = NULL;
	size_t nlen = 0;
	int rc = 0, first = *n;

	if (len == 0)
		return 0;
	if (normalize(h, s, len, &norm, &nlen, e))
		return -1;
	if (nlen == 0) {
		free(norm);
		return 0;
	}
	rc = pre_tokenize(h, norm, nlen, section, &words, e);
	for (int i = 0; i < words.n && !rc; i++)
		if (words.len[i] > 0)
			rc = bpe_word(t, words.s[i], words.len[i], first, ids, n, cap, e);
	strs_free(&words);
	free(norm);
	return rc;
}

/* The added token at s[0..len) (longest first), or -1; its index in *k. */
static int added_at(const struct hf_impl *h, const char *s, size_t len, int *k)
{
	unsigned char c = (unsigned char)s[0];

	for (int j = h->add_start[c]; j < h->add_start[c + 1]; j++) {
		int i = h->add_by_byte[j];
		size_t kl;
		const char *key = key_of(h, h->add_id[i], &kl);

		if (kl <= len && !memcmp(key, s, kl)) {
			*k = i;
			return h->add_id[i];
		}
	}
	return -1;
}

/* JavaScript's trim set, for added tokens' lstrip and rstrip. */
static size_t js_space_len(const char *s, size_t len)
{
	uint32_t cp;
	int bad, l = utf8_decode((const unsigned char *)s, len, &cp, &bad);

	if (bad)
		return 0;
	if ((cp >= 9 && cp <= 13) || cp == ' ' || cp == 0xA0 || cp == 0x1680 ||
	    (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
	    cp == 0x205F || cp == 0x3000 || cp == 0xFEFF)
		return (size_t)l;
	return 0;
}


/* Splits the text around the added tokens typed in it (as transformers.js:
 * longest first, leftmost; lstrip and rstrip trim JavaScript white space
 * beside them) and encodes each stretch between them.  section counts the
 * non-empty parts before trimming, added tokens included (Metaspace's
 * prepend_scheme "first" prepends in part 0 only). */
static int hf_encode(const struct tokenizer *t, const char *text, size_t len, int **ids,
		     int *n, int *cap, struct err *e)
{
	const struct hf_impl *h = t->impl;
	int nbad, section = 0, k, id;
	size_t clen, part = 0, start = 0, i = 0, sl;
	char *s = tok_replace_invalid(text, len, &clen, &nbad);

	if (!s) { /* every byte valid: a NUL-terminated copy all the same */
		s = xmalloc(len + 1);
		memcpy(s, text, len);
		s[len] = '\0';
	}

	if (clen > (size_t)INT_MAX / 2) {
		free(s);
		return err_set(e, "tokenizer: text too long (%zu bytes)", len);
	}
	while (i < clen) {
		if ((id = added_at(h, s + i, clen - i, &k)) < 0) {
			i++;
			continue;
		}
		size_t end = i;
		while (h->add_lstrip[k] && end > start) { /* trims the space before it */
			size_t b = end - 1;

			while (b > start && ((unsigned char)s[b] & 0xC0) == 0x80)
				b--;
			if (js_space_len(s + b, end - b) != end - b)
				break;
			end = b;
		}
		if (end > start && encode_section(t, s + start, end - start, section, ids, n, cap, e))
			goto fail;
		section += i > part;
		ids_push(ids, n, cap, id);
		section++;
		key_of(h, id, &sl);
		part = start = i += sl;
		while (h->add_rstrip[k] && start < clen && (sl = js_space_len(s + start, clen - start)))
			start += sl;
		i = start;
	}
	if (start < clen && encode_section(t, s + start, clen - start, section, ids, n, cap, e))
		goto fail;
	free(s);
	return nbad;
fail:
	free(s);
	return -1;
}

/* ----------------------------------------------------------- other ops */

static int hf_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	const struct hf_impl *h = t->impl;

	return tok_copy_piece(h->pblob + h->poff[id], h->poff[id + 1] - h->poff[id], buf, size);
}

static char *hf_decode(const struct tokenizer *t, const int *ids, int n)
{
	const struct hf_impl *h = t->impl;
	struct buf b = { 0 };

	buf_put(&b, "", 0);
	for (int i = 0; i < n; i++) {
		int id = ids[i];

		if (id < 0 || id >= h->n)
			continue;
		const char *p = h->pblob + h->poff[id];
		size_t l = h->poff[id + 1] - h->poff[id], kl;
		const char *k = key_of(h, id, &kl);
		bool lead = i == 0 || (t->bos_id >= 0 && ids[i - 1] == t->bos_id);

		/* the space the normalizer or Metaspace put first */
		if (h->dec == DEC_SP && lead && !h->added[id] && h->sp_repl &&
		    kl >= h->sp_repl_len && !memcmp(k, h->sp_repl, h->sp_repl_len))
			for (int s = 0; s < h->strip && l > 0 && p[0] == ' '; s++) {
				p++;
				l--;
			}
		buf_put(&b, p, l);
	}
	return b.s;
}

static char *hf_to_json(const struct tokenizer *t)
{
	const struct hf_impl *h = t->impl;

	return tok_source_json("hf-tokenizer-json", h->json, h->json_len);
}

static void hf_free(struct tokenizer *t)
{
	hf_impl_free(t->impl);
	t->impl = NULL;
}

static const struct tokenizer_ops hf_ops = {
	.kind = "hf-tokenizer-json",
	.encode = hf_encode,
	.piece = hf_piece,
	.to_json = hf_to_json,
	.free = hf_free,
	.decode = hf_decode,
};

/* -------------------------------------------------------- constructors */

/* The id of an added special token named s, or -1. */
static int special_named(const struct hf_impl *h, const char *s)
{
	for (int i = 0; i < h->nadded; i++) {
		size_t kl;
		const char *k = key_of(h, h->add_id[i], &kl);

		if (kl == strlen(s) && !memcmp(k, s, kl))
			return h->add_id[i];
	}
	return -1;
}

/* RobertaProcessing's (or BertProcessing's) pair [name, id] in post under
 * key: the id when it is one of the vocabulary's, else -1. */
static int processing_id(const struct hf_impl *h, const json_t *post, const char *key)
{
	const json_t *id = json_array_get(json_object_get(post, key), 1);
	json_int_t v = json_integer_value(id);
	return json_is_integer(id) && v >= 0 && v < h->n ? (int)v : -1;
}

/* BOS: what the post_processor's template puts before the text. */
static int find_bos(const struct hf_impl *h, const json_t *post)
{
	static const char *const names[] = { "<|begin_of_text|>", "<s>", "<bos>" };

	if (is_type(post, "Sequence")) {
		size_t i;
		json_t *p;

		json_array_foreach(json_object_get(post, "processors"), i, p)
			if (is_type(p, "TemplateProcessing"))
				post = p;
	}
	if (is_type(post, "RobertaProcessing") || is_type(post, "BertProcessing"))
		return processing_id(h, post, "cls");
	if (is_type(post, "TemplateProcessing")) {
		const json_t *first = json_array_get(json_object_get(post, "single"), 0);
		const json_t *id = json_object_get(json_object_get(first, "SpecialToken"), "id");

		if (json_is_string(id))
			return special_named(h, json_string_value(id));
		return -1;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (special_named(h, names[i]) >= 0)
			return special_named(h, names[i]);
	return -1;
}

/* EOS: what RobertaProcessing or BertProcessing puts after the text (sep,
 * with cls before it), else -1. */
static int find_eos(const struct hf_impl *h, const json_t *post, int bos)
{
	if (bos < 0 || !(is_type(post, "RobertaProcessing") || is_type(post, "BertProcessing")))
		return -1;
	return processing_id(h, post, "sep");
}

struct tokenizer *tok_hfjson_from_text(const char *json, size_t len, const char *where,
				       struct err *e)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	struct hf_impl *h;
	struct tokenizer *t;
	int unk_id = -1;

	if (!root) {
		char msg[sizeof jerr.text * 4];

		utf8_printable(jerr.text, strlen(jerr.text), msg, sizeof msg);
		err_set(e, "%s: invalid JSON (line %d, column %d: %s)", where, jerr.line,
			jerr.column, msg);
		return NULL;
	}
	h = xcalloc(1, sizeof *h);
	tok_gpt2_byte_map(h->b2u, h->u2b);
	if (!json_is_object(root)) {
		err_set(e, "%s: not a JSON object", where);
		goto fail;
	}
	if (parse_model(h, json_object_get(root, "model"), json_object_get(root, "added_tokens"),
			where, &unk_id, e) ||
	    parse_normalizer(h, json_object_get(root, "normalizer"), where, e) ||
	    parse_pre(h, json_object_get(root, "pre_tokenizer"), where, e) ||
	    parse_decoder(h, json_object_get(root, "decoder"), where, e))
		goto fail;
	build_pieces(h);
	h->json = xmalloc(len + 1);
	memcpy(h->json, json, len);
	h->json[len] = '\0';
	h->json_len = len;
	t = xcalloc(1, sizeof *t);
	t->ops = &hf_ops;
	t->vocab_size = h->n;
	t->unk_id = unk_id;
	t->bos_id = find_bos(h, json_object_get(root, "post_processor"));
	t->eos_id = find_eos(h, json_object_get(root, "post_processor"), t->bos_id);
	t->impl = h;
	json_decref(root);
	return t;
fail:
	json_decref(root);
	hf_impl_free(h);
	return NULL;
}

struct tokenizer *tok_hfjson_load(const char *path, struct err *e)
{
	size_t len;
	char *text = read_file(path, &len, e);
	struct tokenizer *t;

	if (!text)
		return NULL;
	t = tok_hfjson_from_text(text, len, path, e);
	free(text);
	return t;
}

struct tokenizer *tok_hfjson_from_json(const json_t *root, struct err *e)
{
	const json_t *j = json_object_get(root, "json");

	if (!json_is_string(j))
		return err_set(e, "tokenizer JSON: \"json\" (the tokenizer.json text) is missing"),
		       NULL;
	return tok_hfjson_from_text(json_string_value(j), json_string_length(j),
				    "tokenizer JSON", e);
}
