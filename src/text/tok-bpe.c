/*
 * tok-bpe.c — GPT-2 byte-level BPE ("gpt2-bpe").
 *
 * The vocabulary (vocab.json, or the "model" of a tokenizer.json) maps
 * strings to ids; each string spells bytes through GPT-2's byte-to-unicode
 * table (printable Latin-1 bytes stand for themselves, the other 68 bytes
 * for U+0100..U+0143, so a space is "Ġ").  Pieces are stored here as the
 * raw bytes they spell, which is what decoding needs.
 *
 * Encoding (as GPT-2's encoder.py):
 *   1. invalid UTF-8 bytes become U+FFFD, one per byte (tokenizer.h);
 *   2. the text is split with GPT-2's pattern, run by PCRE2 in UTF mode
 *        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      with \s spelled out as the Unicode White_Space set (what tiktoken's
 *      and the regex module's \s mean), not PCRE2's own \s;
 *   3. each chunk starts as one token per byte, then the adjacent pair with
 *      the lowest merge rank is merged, leftmost first, until no pair of the
 *      merge list remains (a heap over the pairs, so a long run of spaces or
 *      digits costs O(n log n) rather than encoder.py's O(n^2));
 *   4. chunks seen before come from a cache (bounded; cleared when full).
 * Text such as "<|endoftext|>" is ordinary text: special tokens are never
 * produced by encoding (tiktoken's encode_ordinary).  <|endoftext|> is the
 * BOS id when present, as GPT-2 uses it to start documents.
 */
#define _GNU_SOURCE
#include "tokenizer.h"
#include "tok-common.h"
#include "json-util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#define WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
	   "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+"
	"|[" WS "]+(?![^" WS "])|[" WS "]+";

#define CACHE_MAX_ENTRIES 65536
#define CACHE_MAX_CHUNK   256	/* longer chunks are not cached */
#define PIECE_MAX         (1 << 16)
#define VOCAB_MAX         (1 << 22)

struct cache_ent {
	char *key;		/* NULL when the slot is free */
	uint32_t len, hash;
	int *ids;
	int n;
};

struct bpe_impl {
	int n;			/* vocabulary size */
	char *blob;		/* all pieces' bytes */
	uint32_t *off;		/* piece i = blob[off[i] .. off[i+1]) */
	unsigned char *literal;	/* 1 when the vocab key was not byte-mapped */
	int32_t *vtab;		/* bytes -> id, open addressing, -1 free */
	uint32_t vmask;
	int byte_id[256];
	uint32_t b2u[256];	/* GPT-2's byte -> code point map */
	int16_t u2b[324];	/* and back (-1: not a byte) */

	int nmerges;
	int32_t *ma, *mb;	/* merge r joins ma[r] and mb[r] */
	struct tok_merges merges;

	pcre2_code *re;
	bool jit;

	pthread_mutex_t lock;	/* guards the cache */
	struct cache_ent *cache;
	uint32_t cmask, cused;
};

static const struct tokenizer_ops bpe_ops;

/* ---------------------------------------------------------------- lookups */

static const char *piece_of(const struct bpe_impl *b, int id, size_t *len)
{
	*len = b->off[id + 1] - b->off[id];
	return b->blob + b->off[id];
}

/* Id of the piece with exactly these bytes, or -1. */
static int vocab_find(const struct bpe_impl *b, const char *s, size_t n)
{
	return tok_vtab_find(b->vtab, b->vmask, b->blob, b->off, s, n);
}


/* ------------------------------------------------------------ building */

static void bpe_impl_free(struct bpe_impl *b)
{
	if (!b)
		return;
	free(b->blob);
	free(b->off);
	free(b->literal);
	free(b->vtab);
	free(b->ma);
	free(b->mb);
	tok_merges_free(&b->merges);
	if (b->re)
		pcre2_code_free(b->re);
	if (b->cache) {
		for (uint32_t i = 0; i <= b->cmask; i++) {
			free(b->cache[i].key);
			free(b->cache[i].ids);
		}
		free(b->cache);
		pthread_mutex_destroy(&b->lock);
	}
	free(b);
}

/* Turns a vocabulary key into the bytes it spells.  Keys with a code point
 * outside the byte map (added tokens of other vocabularies) are taken
 * literally.  Returns the length written to out (at least strlen(key)
 * bytes long). */
static size_t key_bytes(const char *key, size_t klen, const int16_t *u2b, char *out,
			bool *literal)
{
	size_t i = 0, n = 0;

	*literal = false;
	while (i < klen) {
		uint32_t cp;
		int bad, k = utf8_decode((const unsigned char *)key + i, klen - i, &cp, &bad);

		if (bad || cp >= 324 || u2b[cp] < 0) {
			*literal = true;
			memcpy(out, key, klen);
			return klen;
		}
		out[n++] = (char)u2b[cp];
		i += (size_t)k;
	}
	return n;
}

/* Builds the pieces and the byte -> id table from a vocab object.
 * where names the source in messages ("DIR/vocab.json"). */
static int build_vocab(struct bpe_impl *b, const json_t *vocab, const char *where,
		       struct err *e)
{
	uint32_t *b2u = b->b2u;
	int16_t *u2b = b->u2b;
	size_t n = json_object_size(vocab), total = 0, at = 0;
	const char *key;
	json_t *v;
	char **keys;
	size_t *klens;

	if (!json_is_object(vocab))
		return err_set(e, "%s: not a JSON object", where);
	if (n == 0)
		return err_set(e, "%s: the vocabulary is empty", where);
	if (n > (size_t)VOCAB_MAX)
		return err_set(e, "%s: %zu tokens is too many", where, n);
	tok_gpt2_byte_map(b2u, u2b);
	/* ids must run 0..n-1: an id past that means one below is missing,
	 * which is the one to name */
	json_object_foreach((json_t *)vocab, key, v) {
		if (json_is_integer(v) && json_integer_value(v) >= (json_int_t)n) {
			bool *seen = xcalloc(n, 1);
			const char *k2;
			json_t *v2;
			json_object_foreach((json_t *)vocab, k2, v2)
				if (json_is_integer(v2) && json_integer_value(v2) >= 0 &&
				    json_integer_value(v2) < (json_int_t)n)
					seen[json_integer_value(v2)] = true;
			size_t gap = 0;
			while (gap < n && seen[gap])
				gap++;
			free(seen);
			if (gap < n)
				return err_set(e, "%s: no token has id %zu (the %zu ids must run from 0 "
					       "without gaps)", where, gap, n);
			break;
		}
	}
	keys = xcalloc(n, sizeof *keys);
	klens = xcalloc(n, sizeof *klens);
	json_object_foreach((json_t *)vocab, key, v) {
		json_int_t id;

		if (!json_is_integer(v)) {
			err_set(e, "%s: the id of token \"%.40s\" is not an integer", where, key);
			goto fail;
		}
		id = json_integer_value(v);
		if (id < 0 || (size_t)id >= n) {
			err_set(e, "%s: token \"%.40s\" has id %lld, outside 0..%zu", where, key,
				(long long)id, n - 1);
			goto fail;
		}
		if (keys[id]) {
			err_set(e, "%s: id %lld is given to both \"%.40s\" and \"%.40s\"", where,
				(long long)id, keys[id], key);
			goto fail;
		}
		keys[id] = (char *)key;
		klens[id] = strlen(key);
		if (klens[id] == 0 || klens[id] > PIECE_MAX) {
			err_set(e, "%s: token %lld has an empty or huge key", where, (long long)id);
			goto fail;
		}
		total += klens[id];
	}
	/* n keys, each id in 0..n-1, no id twice: every id has a key. */
	b->n = (int)n;
	b->blob = xmalloc(total + 1);
	b->off = xmalloc((n + 1) * sizeof *b->off);
	b->literal = xcalloc(n, 1);
	for (size_t i = 0; i < n; i++) {
		bool lit;

		b->off[i] = (uint32_t)at;
		at += key_bytes(keys[i], klens[i], u2b, b->blob + at, &lit);
		b->literal[i] = lit;
	}
	b->off[n] = (uint32_t)at;
	b->vtab = tok_vtab_new(n, &b->vmask);
	for (size_t i = 0; i < n; i++) {
		size_t l;
		const char *p = piece_of(b, (int)i, &l);

		if (vocab_find(b, p, l) >= 0)
			continue; /* a duplicate spelling: the first id wins */
		tok_vtab_add(b->vtab, b->vmask, p, l, (int32_t)i);
	}
	for (int c = 0; c < 256; c++) {
		char one = (char)c;

		b->byte_id[c] = vocab_find(b, &one, 1);
		if (b->byte_id[c] < 0) {
			char tmp[8];
			int k = utf8_encode(b2u[c], tmp);

			tmp[k] = '\0';
			err_set(e, "%s: no token for byte 0x%02x (\"%s\"): not a byte-level vocabulary",
				where, c, tmp);
			goto fail;
		}
	}
	free(keys);
	free(klens);
	return 0;
fail:
	free(keys);
	free(klens);
	return -1;
}

/* Parses one merge "A B" (the two vocabulary strings, byte-mapped) given
 * as two spans, and records it with the next rank. */
static int add_merge(struct bpe_impl *b, const char *x, size_t xl, const char *y, size_t yl,
		     const char *where, long line, struct err *e)
{
	char *buf = xmalloc(2 * (xl + yl) + 8);
	size_t al, bl;
	bool lit;
	int a, c, out, rank = b->nmerges;

	al = key_bytes(x, xl, b->u2b, buf, &lit);
	bl = key_bytes(y, yl, b->u2b, buf + al, &lit);
	a = vocab_find(b, buf, al);
	c = vocab_find(b, buf + al, bl);
	out = vocab_find(b, buf, al + bl);
	free(buf);
	if (a < 0 || c < 0) {
		char q[4 * 40 + 1]; /* the token as given, NULs and all, made printable */
		utf8_printable(a < 0 ? x : y, (a < 0 ? xl : yl) > 40 ? 40 : (a < 0 ? xl : yl), q,
			       sizeof q);
		return err_set(e, "%s:%ld: token \"%s\" is not in the vocabulary", where, line, q);
	}
	if (out < 0)
		return err_set(e, "%s:%ld: the merge of \"%.*s\" and \"%.*s\" is not in the "
			       "vocabulary", where, line, (int)(xl > 40 ? 40 : xl), x,
			       (int)(yl > 40 ? 40 : yl), y);
	if (!tok_merges_add(&b->merges, a, c, rank, out))
		return 0; /* a repeated merge keeps its first (better) rank */
	b->ma[rank] = a;
	b->mb[rank] = c;
	b->nmerges++;
	return 0;
}

static void alloc_merges(struct bpe_impl *b, size_t n)
{
	b->ma = xmalloc((n + 1) * sizeof *b->ma);
	b->mb = xmalloc((n + 1) * sizeof *b->mb);
	tok_merges_init(&b->merges, n);
}

/* merges.txt: an optional "#version" line, then "A B" per line. */
static int parse_merges_txt(struct bpe_impl *b, const char *text, size_t len,
			    const char *where, struct err *e)
{
	size_t lines = 1;
	long line = 0;
	const char *p = text, *end = text + len;

	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	alloc_merges(b, lines);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *sp;
		size_t l;

		line++;
		l = (size_t)(le - p);
		if (l && p[l - 1] == '\r')
			l--;
		if (l == 0 || (line == 1 && l >= 8 && memcmp(p, "#version", 8) == 0)) {
			p = nl ? nl + 1 : end;
			continue;
		}
		sp = memchr(p, ' ', l);
		if (!sp || sp == p || sp == p + l - 1 || memchr(sp + 1, ' ', (size_t)(p + l - sp - 1)))
			return err_set(e, "%s:%ld: malformed line (expected two tokens separated "
				       "by one space)", where, line);
		if (add_merge(b, p, (size_t)(sp - p), sp + 1, (size_t)(p + l - sp - 1), where,
			      line, e))
			return -1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* A JSON merges array: "A B" strings, or ["A", "B"] pairs (newer files). */
static int parse_merges_json(struct bpe_impl *b, const json_t *merges, const char *where,
			     struct err *e)
{
	size_t i;
	json_t *m;

	if (!json_is_array(merges))
		return err_set(e, "%s: \"merges\" is missing or not an array", where);
	alloc_merges(b, json_array_size(merges));
	json_array_foreach(merges, i, m) {
		const char *x, *y, *sp;
		size_t xl, yl;

		if (json_is_string(m)) {
			const char *s = json_string_value(m);
			size_t l = json_string_length(m);

			sp = memchr(s, ' ', l);
			if (!sp || sp == s || sp == s + l - 1 ||
			    memchr(sp + 1, ' ', (size_t)(s + l - sp - 1)))
				return err_set(e, "%s: merges[%zu] is malformed (expected two tokens "
					       "separated by one space)", where, i);
			x = s;
			xl = (size_t)(sp - s);
			y = sp + 1;
			yl = (size_t)(s + l - sp - 1);
		} else if (json_is_array(m) && json_array_size(m) == 2 &&
			   json_is_string(json_array_get(m, 0)) &&
			   json_is_string(json_array_get(m, 1))) {
			x = json_string_value(json_array_get(m, 0));
			xl = json_string_length(json_array_get(m, 0));
			y = json_string_value(json_array_get(m, 1));
			yl = json_string_length(json_array_get(m, 1));
			if (!xl || !yl)
				return err_set(e, "%s: merges[%zu] has an empty token", where, i);
		} else {
			return err_set(e, "%s: merges[%zu] is neither \"A B\" nor [\"A\", \"B\"]",
				       where, i);
		}
		if (add_merge(b, x, xl, y, yl, where, (long)i + 1, e))
			return -1;
	}
	return 0;
}

static int compile_pattern(struct bpe_impl *b, struct err *e)
{
	int code;
	PCRE2_SIZE at;

	b->re = pcre2_compile((PCRE2_SPTR)gpt2_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF,
			      &code, &at, NULL);
	if (!b->re) {
		PCRE2_UCHAR msg[120];

		pcre2_get_error_message(code, msg, sizeof msg);
		die("GPT-2 pattern does not compile at %zu: %s", (size_t)at, (char *)msg);
	}
	b->jit = pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE) == 0;
	(void)e;
	return 0;
}

static struct tokenizer *bpe_finish(struct bpe_impl *b)
{
	struct tokenizer *t = xcalloc(1, sizeof *t);

	compile_pattern(b, NULL);
	pthread_mutex_init(&b->lock, NULL);
	b->cmask = 1023;
	b->cache = xcalloc((size_t)b->cmask + 1, sizeof *b->cache);
	t->ops = &bpe_ops;
	t->vocab_size = b->n;
	t->bos_id = vocab_find(b, "<|endoftext|>", 13);
	t->unk_id = t->eos_id = -1;
	t->impl = b;
	return t;
}

/* ------------------------------------------------------------- encoding */

/* tok_merge_fn over the merge list: the lower rank merges first. */
static bool merge_of(const void *ctx, int a, int b, double *key, int *out)
{
	const struct bpe_impl *bp = ctx;
	int r = tok_merges_find(&bp->merges, a, b, out);

	*key = r;
	return r >= 0;
}

/* BPE over one chunk; writes the ids to out (room for len) and returns
 * their number. */
static int bpe_chunk(const struct bpe_impl *b, const unsigned char *s, int len, int *out)
{
	for (int i = 0; i < len; i++)
		out[i] = b->byte_id[s[i]];
	return tok_merge_pairs(out, len, merge_of, b);
}

static void ids_reserve(int **ids, int *cap, int need)
{
	if (need > *cap) {
		int c = *cap ? *cap : 16;

		while (c < need)
			c = c > INT_MAX / 2 ? INT_MAX : 2 * c;
		*ids = xrealloc(*ids, (size_t)c * sizeof **ids);
		*cap = c;
	}
}

/* Cache slot for key (found or free); caller holds the lock. */
static struct cache_ent *cache_slot(struct bpe_impl *b, const char *s, uint32_t len,
				    uint32_t hash)
{
	uint32_t i = hash & b->cmask;

	for (;; i = (i + 1) & b->cmask) {
		struct cache_ent *c = &b->cache[i];

		if (!c->key || (c->hash == hash && c->len == len && memcmp(c->key, s, len) == 0))
			return c;
	}
}

static void cache_clear(struct bpe_impl *b)
{
	for (uint32_t i = 0; i <= b->cmask; i++) {
		free(b->cache[i].key);
		free(b->cache[i].ids);
		memset(&b->cache[i], 0, sizeof b->cache[i]);
	}
	b->cused = 0;
}

static void cache_put(struct bpe_impl *b, const char *s, uint32_t len, uint32_t hash,
		      const int *ids, int n)
{
	struct cache_ent *c;

	if (b->cused >= CACHE_MAX_ENTRIES)
		cache_clear(b);
	if (2 * (b->cused + 1) > b->cmask + 1) {
		struct cache_ent *old = b->cache;
		uint32_t omask = b->cmask;

		b->cmask = 2 * (b->cmask + 1) - 1;
		b->cache = xcalloc((size_t)b->cmask + 1, sizeof *b->cache);
		for (uint32_t i = 0; i <= omask; i++)
			if (old[i].key)
				*cache_slot(b, old[i].key, old[i].len, old[i].hash) = old[i];
		free(old);
	}
	c = cache_slot(b, s, len, hash);
	if (c->key)
		return;
	c->key = xmalloc(len ? len : 1);
	memcpy(c->key, s, len);
	c->len = len;
	c->hash = hash;
	c->ids = xmalloc((size_t)(n ? n : 1) * sizeof *c->ids);
	memcpy(c->ids, ids, (size_t)n * sizeof *ids);
	c->n = n;
	b->cused++;
}

/* Appends the ids of one pre-tokenized chunk. */
static void encode_chunk(struct bpe_impl *b, const char *s, size_t len, int **ids, int *n,
			 int *cap)
{
	uint32_t hash = 0;

	ids_reserve(ids, cap, *n + (int)len);
	if (len <= CACHE_MAX_CHUNK) {
		struct cache_ent *c;

		hash = tok_hash_bytes(s, len);
		pthread_mutex_lock(&b->lock);
		c = cache_slot(b, s, (uint32_t)len, hash);
		if (c->key) {
			memcpy(*ids + *n, c->ids, (size_t)c->n * sizeof **ids);
			*n += c->n;
			pthread_mutex_unlock(&b->lock);
			return;
		}
		pthread_mutex_unlock(&b->lock);
	}
	int k = bpe_chunk(b, (const unsigned char *)s, (int)len, *ids + *n);
	if (len <= CACHE_MAX_CHUNK) {
		pthread_mutex_lock(&b->lock);
		cache_put(b, s, (uint32_t)len, hash, *ids + *n, k);
		pthread_mutex_unlock(&b->lock);
	}
	*n += k;
}


static int bpe_encode(const struct tokenizer *t, const char *text, size_t len, int **ids,
		      int *n, int *cap, struct err *e)
{
	struct bpe_impl *b = t->impl;
	int nbad;
	size_t clen, pos = 0;
	char *clean = tok_replace_invalid(text, len, &clen, &nbad);
	const char *s = clean ? clean : text;
	pcre2_match_data *md;

	if (clen > (size_t)(INT_MAX / 2 - *n)) {
		free(clean);
		return err_set(e, "gpt2 tokenizer: text too long (%zu bytes)", len);
	}
	md = pcre2_match_data_create_from_pattern(b->re, NULL);
	if (!md)
		die("out of memory (PCRE2 match data)");
	while (pos < clen) {
		int rc = b->jit ? pcre2_jit_match(b->re, (PCRE2_SPTR)s, clen, pos, 0, md, NULL)
				: pcre2_match(b->re, (PCRE2_SPTR)s, clen, pos, PCRE2_NO_UTF_CHECK,
					      md, NULL);
		PCRE2_SIZE *ov;
		size_t ms, me;

		if (rc == PCRE2_ERROR_NOMATCH) {
			encode_chunk(b, s + pos, clen - pos, ids, n, cap);
			break;
		}
		if (rc < 0) { /* a limit of PCRE2's: this text only, not the program */
			PCRE2_UCHAR msg[120];

			pcre2_get_error_message(rc, msg, sizeof msg);
			nbad = err_set(e, "gpt2 tokenizer: the pre-tokenizer pattern failed on this "
				       "text (%s); not encoded", (char *)msg);
			break;
		}
		ov = pcre2_get_ovector_pointer(md);
		ms = ov[0];
		me = ov[1];
		if (ms > pos) /* cannot happen with this pattern; kept exact anyway */
			encode_chunk(b, s + pos, ms - pos, ids, n, cap);
		if (me == ms) /* an empty match cannot happen either */
			me = ms + 1;
		encode_chunk(b, s + ms, me - ms, ids, n, cap);
		pos = me;
	}
	pcre2_match_data_free(md);
	free(clean);
	return nbad;
}

/* ----------------------------------------------------------- other ops */

static int bpe_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	size_t len;
	const char *p = piece_of(t->impl, id, &len);

	return tok_copy_piece(p, len, buf, size);
}

/* The vocabulary key of id: its bytes through the byte map. */
static char *id_key(const struct bpe_impl *b, int id, const uint32_t b2u[256])
{
	size_t len;
	const char *p = piece_of(b, id, &len);
	char *k = xmalloc(2 * len + 1), *o = k;

	if (b->literal[id]) {
		memcpy(k, p, len);
		k[len] = '\0';
		return k;
	}
	for (size_t i = 0; i < len; i++)
		o += utf8_encode(b2u[(unsigned char)p[i]], o);
	*o = '\0';
	return k;
}

static char *bpe_to_json(const struct tokenizer *t)
{
	const struct bpe_impl *b = t->impl;
	json_t *root = ju_check(json_object()), *vocab = ju_check(json_object());
	json_t *merges = ju_check(json_array());
	char **keys = xmalloc((size_t)b->n * sizeof *keys);

	for (int i = 0; i < b->n; i++) {
		keys[i] = id_key(b, i, b->b2u);
		ju_set(vocab, keys[i], json_integer(i));
	}
	for (int r = 0; r < b->nmerges; r++) {
		size_t la = strlen(keys[b->ma[r]]), lb = strlen(keys[b->mb[r]]);
		char *m = xmalloc(la + lb + 2);

		memcpy(m, keys[b->ma[r]], la);
		m[la] = ' ';
		memcpy(m + la + 1, keys[b->mb[r]], lb + 1);
		ju_append(merges, json_string(m));
		free(m);
	}
	for (int i = 0; i < b->n; i++)
		free(keys[i]);
	free(keys);
	ju_set(root, "type", json_string("gpt2-bpe"));
	if (t->eos_id >= 0) { /* tok_bpe_wrap's; absent: <|endoftext|> first, nothing after */
		ju_set(root, "bos", json_integer(t->bos_id));
		ju_set(root, "eos", json_integer(t->eos_id));
	}
	ju_set(root, "vocab", vocab);
	ju_set(root, "merges", merges);
	return tok_json_dump(root);
}

static void bpe_free(struct tokenizer *t)
{
	bpe_impl_free(t->impl);
	t->impl = NULL;
}

static const struct tokenizer_ops bpe_ops = {
	.kind = "gpt2-bpe",
	.encode = bpe_encode,
	.piece = bpe_piece,
	.to_json = bpe_to_json,
	.free = bpe_free,
};

/* -------------------------------------------------------- constructors */

/* From a vocab object and a merges array (tokenizer.json, our own JSON). */
static struct tokenizer *bpe_from_objects(const json_t *vocab, const json_t *merges,
					  const char *vwhere, const char *mwhere,
					  struct err *e)
{
	struct bpe_impl *b = xcalloc(1, sizeof *b);

	if (build_vocab(b, vocab, vwhere, e) || parse_merges_json(b, merges, mwhere, e)) {
		bpe_impl_free(b);
		return NULL;
	}
	return bpe_finish(b);
}

/* The ids tok_bpe_wrap put around the text, when the description has them. */
static int read_wrap(struct tokenizer *t, const json_t *root, struct err *e)
{
	const json_t *bos = json_object_get(root, "bos"), *eos = json_object_get(root, "eos");
	if (!bos && !eos)
		return 0;
	json_int_t b = json_integer_value(bos), x = json_integer_value(eos);
	if (!json_is_integer(bos) || !json_is_integer(eos) || b < 0 || x < 0 ||
	    b >= t->vocab_size || x >= t->vocab_size)
		return err_set(e, "tokenizer JSON: \"bos\" and \"eos\" must both be ids below %d",
			       t->vocab_size);
	t->bos_id = (int)b;
	t->eos_id = (int)x;
	return 0;
}

struct tokenizer *tok_bpe_from_json(const json_t *root, struct err *e)
{
	struct tokenizer *t = bpe_from_objects(json_object_get(root, "vocab"),
					       json_object_get(root, "merges"),
					       "tokenizer JSON \"vocab\"", "tokenizer JSON", e);
	if (t && read_wrap(t, root, e)) {
		bpe_free(t);
		free(t);
		return NULL;
	}
	return t;
}

int tok_bpe_wrap(struct tokenizer *t, const char *bos, const char *eos, struct err *e)
{
	if (t->ops != &bpe_ops)
		return err_set(e, "a %s tokenizer cannot be given %s ... %s", t->ops->kind, bos, eos);
	int b = vocab_find(t->impl, bos, strlen(bos)), x = vocab_find(t->impl, eos, strlen(eos));
	if (b < 0 || x < 0)
		return err_set(e, "the vocabulary has no %s", b < 0 ? bos : eos);
	t->bos_id = b;
	t->eos_id = x;
	return 0;
}

static bool is_regular(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static json_t *load_json(const char *path, struct err *e)
{
	json_error_t jerr;
	json_t *j = ju_load_file(path, JSON_REJECT_DUPLICATES, &jerr);

	if (!j) {
		if (jerr.line == -1) /* missing, a FIFO, too large */
			err_set(e, "%s", jerr.text);
		else
			err_set(e, "%s: invalid JSON (line %d, column %d: %.120s)", path,
				jerr.line, jerr.column, jerr.text);
	}
	return j;
}

static struct tokenizer *load_tokenizer_json(const char *path, struct err *e)
{
	json_t *root = load_json(path, e), *model, *type;
	struct tokenizer *t = NULL;

	if (!root)
		return NULL;
	model = json_object_get(root, "model");
	type = json_object_get(model, "type");
	if (!json_is_object(model))
		err_set(e, "%s: no \"model\" object", path);
	else if (type && (!json_is_string(type) || strcmp(json_string_value(type), "BPE") != 0))
		err_set(e, "%s: model type is not BPE", path);
	else
		t = bpe_from_objects(json_object_get(model, "vocab"),
				     json_object_get(model, "merges"), path, path, e);
	json_decref(root);
	return t;
}

static struct tokenizer *load_vocab_merges(const char *vpath, const char *mpath,
					   struct err *e)
{
	json_t *vocab = load_json(vpath, e);
	struct bpe_impl *b;
	char *text;
	size_t len;

	if (!vocab)
		return NULL;
	b = xcalloc(1, sizeof *b);
	if (build_vocab(b, vocab, vpath, e)) {
		json_decref(vocab);
		bpe_impl_free(b);
		return NULL;
	}
	json_decref(vocab);
	text = read_file_max(mpath, TOK_FILE_MAX, "a tokenizer file", &len, e);
	if (!text || parse_merges_txt(b, text, len, mpath, e)) {
		free(text);
		bpe_impl_free(b);
		return NULL;
	}
	free(text);
	return bpe_finish(b);
}

struct tokenizer *tok_bpe_load(const char *path, struct err *e)
{
	size_t n = strlen(path) + 32;
	char *v = xmalloc(n), *m = xmalloc(n), *j = xmalloc(n);
	struct tokenizer *t = NULL;
	struct stat st;

	snprintf(v, n, "%s/vocab.json", path);
	snprintf(m, n, "%s/merges.txt", path);
	snprintf(j, n, "%s/tokenizer.json", path);
	if (stat(path, &st) != 0)
		err_set(e, "%s: %s", path, strerror(errno));
	else if (S_ISREG(st.st_mode))
		t = load_tokenizer_json(path, e);
	else if (is_regular(v) && is_regular(m))
		t = load_vocab_merges(v, m, e);
	else if (is_regular(j))
		t = load_tokenizer_json(j, e);
	else
		err_set(e, "%s: no GPT-2 tokenizer here (vocab.json and merges.txt, or "
			"tokenizer.json)", path);
	free(v);
	free(m);
	free(j);
	if (e && !t) /* keep quoted file text on one line */
		for (char *p = e->msg; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = '?';
	return t;
}
