/*
 * tok-llama2c.c — llama2.c's tokenizer.bin ("llama2c"): the sentencepiece
 * BPE vocabulary of Llama 2 (or a custom one trained for llama2.c).
 *
 * File: int32 max_token_length, then per piece: float32 score, int32 length,
 * that many bytes.  The piece count is not stored (llama2.c takes it from
 * the model's vocab_size).  llama2.c's export writes sentencepiece's "▁" as a
 * space, BOS and EOS as "\n<s>\n" and "\n</s>\n", and the 256 byte-fallback
 * pieces as "<0x00>" .. "<0xFF>".
 *
 * Encoding, as llama2.c's encode() (which is sentencepiece's BPE):
 *   - invalid UTF-8 bytes become U+FFFD first (tokenizer.h);
 *   - a non-empty text gets the dummy prefix " " in front;
 *   - each code point becomes its piece, or, when there is none, one
 *     byte-fallback piece per UTF-8 byte (<unk> without byte pieces);
 *   - then, repeatedly, the adjacent pair whose concatenation is a piece
 *     with the highest score is merged (the leftmost among equal scores),
 *     until no concatenation is a piece.  A heap over the pairs makes this
 *     O(n log n) instead of llama2.c's O(n^2) rescans; the result is the same.
 *   Control pieces (<unk>, <s>, </s>) and byte pieces never take part in a
 *   merge or a lookup (as in sentencepiece; llama2.c would let the text
 *   "<s>" become BOS).
 * Decoding concatenates the pieces (byte pieces as their byte), leaves out
 * BOS and EOS, and drops the leading space of the first piece and of a
 * piece right after BOS (llama2.c's and sentencepiece's rule), so that
 * decode(encode(s)) == s.  Labels: BOS is "<s>", EOS "</s>".
 *
 * struct tok_spm_opts (tokenizer.h) adds what llama.cpp's reading of a GGUF
 * SentencePiece vocabulary has beyond llama2.c's (Gemma's files):
 *   - whole pieces: before anything else the typed text is cut at each of
 *     them, longest piece first and each leftmost first over what is still
 *     text, as llama.cpp's special-token partition does; they become their
 *     id, take part in no merge, and each run of text between them is
 *     encoded on its own (with the dummy prefix, when there is one, only at
 *     the start and after a whole piece, as llama.cpp);
 *   - no dummy prefix (add_space_prefix false): decoding then keeps every
 *     leading space;
 *   - a typed U+2581 reads as a space (llama.cpp turns spaces into U+2581
 *     before the merges, so the two are one character to it).
 * The options, BOS and <unk> go into to_json, so a checkpoint keeps them.
 */
#define _GNU_SOURCE
#include "tokenizer.h"
#include "tok-common.h"
#include "json-util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define PIECE_MAX  (1 << 16)
#define PIECES_MAX (1 << 22)

enum piece_kind { PK_NORMAL, PK_BYTE, PK_CONTROL, PK_WHOLE };

struct l2c_impl {
	int n;
	int max_len;		/* longest piece (at least max_token_length) */
	char *blob;		/* piece bytes as shown (control: "<s>") */
	uint32_t *off;		/* piece i = blob[off[i] .. off[i+1]) */
	float *score;
	unsigned char *kind;	/* enum piece_kind */
	int32_t *vtab;		/* normal piece bytes -> id, -1 free */
	uint32_t vmask;
	int byte_id[256];	/* -1 when the vocabulary has no byte pieces */
	int space_id;		/* " " or -1 */
	int eos_id;
	unsigned char *raw;	/* the file as read, for to_json */
	size_t raw_len;
	bool no_prefix, space_mark; /* struct tok_spm_opts */
	int *whole;		/* n_whole whole pieces, longest first */
	int n_whole;
	bool opts;		/* built with options: to_json writes them */
};

static const struct tokenizer_ops l2c_ops;

static const char *piece_of(const struct l2c_impl *b, int id, size_t *len)
{
	*len = b->off[id + 1] - b->off[id];
	return b->blob + b->off[id];
}

/* Id of the normal piece with exactly these bytes, or -1. */
static int lookup(const struct l2c_impl *b, const char *s, size_t n)
{
	return tok_vtab_find(b->vtab, b->vmask, b->blob, b->off, s, n);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void l2c_impl_free(struct l2c_impl *b)
{
	if (!b)
		return;
	free(b->blob);
	free(b->off);
	free(b->score);
	free(b->kind);
	free(b->vtab);
	free(b->raw);
	free(b->whole);
	free(b);
}

static int32_t rd_i32(const unsigned char *p)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
	int32_t x;

	memcpy(&x, &v, 4);
	return x;
}

static float rd_f32(const unsigned char *p)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
	float x;

	memcpy(&x, &v, 4);
	return x;
}

/*
 * Parses a tokenizer.bin image (taking ownership of buf).  want > 0: exactly
 * that many pieces.  Messages start with where.
 */
/* First pass over the pieces after the header of buf (len bytes): checks
 * each and counts them (exactly want when want > 0) and their bytes into
 * *n and *total; raises b->max_len to the longest.  0, or -1 with e set. */
static int count_pieces(const unsigned char *buf, size_t len, int want, const char *where,
			struct l2c_impl *b, int *n_out, size_t *total, struct err *e)
{
	size_t at = 4;
	int n = 0;
	*total = 0;
	while (want > 0 ? n < want : at < len) {
		if (len - at < 8) {
			if (want > 0)
				return err_set(e, "%s: ends after %d pieces, but the model's vocabulary "
					       "has %d (truncated, or the tokenizer of another model?)",
					       where, n, want);
			return err_set(e, "%s: piece %d is cut short (truncated?)", where, n);
		}
		float s = rd_f32(buf + at);
		int32_t l = rd_i32(buf + at + 4);
		if (!isfinite(s))
			return err_set(e, "%s: piece %d has a non-finite score", where, n);
		if (l < 0 || l > PIECE_MAX)
			return err_set(e, "%s: piece %d has length %d, outside 0..%d", where, n, l,
				       PIECE_MAX);
		if (l > b->max_len) /* the header's bound is advice only; keep the truth */
			b->max_len = l;
		if (len - at - 8 < (size_t)l)
			return err_set(e, "%s: piece %d is cut short (truncated?)", where, n);
		at += 8 + (size_t)l;
		*total += (size_t)l;
		if (++n > PIECES_MAX)
			return err_set(e, "%s: more than %d pieces", where, PIECES_MAX);
	}
	if (at != len)
		return err_set(e, "%s: has more than the model's %d pieces (%zu bytes left): the "
			       "tokenizer of another model?", where, want, len - at);
	if (n == 0)
		return err_set(e, "%s: no pieces", where);
	*n_out = n;
	return 0;
}

/* Enters piece i (l bytes at p) into b and t at blob offset *o: a control
 * piece (<s>, </s>, <unk>, bare or as llama2.c's export writes them), a
 * byte piece (<0xNN>), or text found by lookup. */
static void add_piece(struct l2c_impl *b, struct tokenizer *t, int i, const char *p, size_t l,
		      size_t *o)
{
	if ((l == 5 && !memcmp(p, "\n<s>\n", 5)) || (l == 3 && !memcmp(p, "<s>", 3))) {
		memcpy(b->blob + *o, "<s>", 3);
		*o += 3;
		b->kind[i] = PK_CONTROL;
		if (t->bos_id < 0)
			t->bos_id = i;
		return;
	}
	if ((l == 6 && !memcmp(p, "\n</s>\n", 6)) || (l == 4 && !memcmp(p, "</s>", 4))) {
		memcpy(b->blob + *o, "</s>", 4);
		*o += 4;
		b->kind[i] = PK_CONTROL;
		if (b->eos_id < 0)
			b->eos_id = i;
		return;
	}
	if (l == 5 && !memcmp(p, "<unk>", 5)) {
		memcpy(b->blob + *o, p, 5);
		*o += 5;
		b->kind[i] = PK_CONTROL;
		if (t->unk_id < 0)
			t->unk_id = i;
		return;
	}
	if (l == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>' &&
	    hexval(p[3]) >= 0 && hexval(p[4]) >= 0) {
		int byte = hexval(p[3]) * 16 + hexval(p[4]);
		b->blob[(*o)++] = (char)byte;
		b->kind[i] = PK_BYTE;
		if (b->byte_id[byte] < 0)
			b->byte_id[byte] = i;
		return;
	}
	memcpy(b->blob + *o, p, l);
	*o += l;
	if (l && lookup(b, p, l) < 0)
		tok_vtab_add(b->vtab, b->vmask, p, l, i);
}

/* Whole pieces longer first, then lower ids first (qsort_r, ctx the impl). */
static int by_length(const void *x, const void *y, void *ctx)
{
	const struct l2c_impl *sb = ctx;
	int a = *(const int *)x, c = *(const int *)y;
	uint32_t la = sb->off[a + 1] - sb->off[a], lc = sb->off[c + 1] - sb->off[c];
	return la != lc ? (la < lc ? 1 : -1) : (a > c) - (a < c);
}

/* Takes o's whole pieces into b (n pieces): marks them in *mark (malloc'd,
 * n bytes).  0, or -1 with e set when one is not a piece. */
static int take_opts(struct l2c_impl *b, const struct tok_spm_opts *o, int n,
		     unsigned char **mark, const char *where, struct err *e)
{
	*mark = xcalloc((size_t)n, 1);
	if (!o)
		return 0;
	b->opts = true;
	b->no_prefix = o->no_prefix;
	b->space_mark = o->space_mark;
	b->whole = xmalloc(((size_t)o->n_whole + 1) * sizeof *b->whole);
	for (int i = 0; i < o->n_whole; i++) {
		int id = o->whole[i];
		if (id < 0 || id >= n)
			return err_set(e, "%s: whole piece %d is not one of the %d pieces", where, id,
				       n);
		if (!(*mark)[id])
			b->whole[b->n_whole++] = id;
		(*mark)[id] = 1;
	}
	return 0;
}

static struct tokenizer *parse_bin(unsigned char *buf, size_t len, int want,
				   const struct tok_spm_opts *opts, const char *where, struct err *e)
{
	unsigned char *mark = NULL;
	struct l2c_impl *b = xcalloc(1, sizeof *b);
	size_t total = 0;
	int n = 0;

	b->raw = buf;
	b->raw_len = len;
	if (len < 4) {
		err_set(e, "%s: %zu bytes is too short for a llama2.c tokenizer (truncated?)",
			where, len);
		goto fail;
	}
	b->max_len = rd_i32(buf);
	if (b->max_len <= 0 || b->max_len > PIECE_MAX) {
		err_set(e, "%s: max_token_length %d is not in 1..%d: not a llama2.c tokenizer",
			where, b->max_len, PIECE_MAX);
		goto fail;
	}
	if (count_pieces(buf, len, want, where, b, &n, &total, e) != 0 ||
	    take_opts(b, opts, n, &mark, where, e) != 0)
		goto fail;

	b->n = n;
	b->blob = xmalloc(total + 1);
	b->off = xmalloc(((size_t)n + 1) * sizeof *b->off);
	b->score = xmalloc((size_t)n * sizeof *b->score);
	b->kind = xcalloc((size_t)n, 1);
	b->vtab = tok_vtab_new((size_t)n, &b->vmask);
	for (int c = 0; c < 256; c++)
		b->byte_id[c] = -1;

	struct tokenizer *t = xcalloc(1, sizeof *t);
	t->ops = &l2c_ops;
	t->bos_id = t->unk_id = t->eos_id = b->eos_id = -1;
	t->impl = b;

	size_t o = 0, at = 4;
	for (int i = 0; i < n; i++) {
		size_t l = (size_t)rd_i32(buf + at + 4);
		b->score[i] = rd_f32(buf + at);
		b->off[i] = (uint32_t)o;
		if (mark[i]) {
			memcpy(b->blob + o, buf + at + 8, l);
			o += l;
			b->kind[i] = PK_WHOLE;
		} else {
			add_piece(b, t, i, (const char *)buf + at + 8, l, &o);
		}
		at += 8 + l;
	}
	b->off[n] = (uint32_t)o;
	b->space_id = lookup(b, " ", 1);
	t->vocab_size = n;
	free(mark);
	for (int i = 0; i < b->n_whole; i++)
		if (b->off[b->whole[i] + 1] == b->off[b->whole[i]]) {
			err_set(e, "%s: whole piece %d is empty", where, b->whole[i]);
			l2c_impl_free(b);
			free(t);
			return NULL;
		}
	if (b->n_whole > 1)
		qsort_r(b->whole, (size_t)b->n_whole, sizeof *b->whole, by_length, b);
	return t;
fail:
	free(mark);
	l2c_impl_free(b);
	return NULL;
}

/* ------------------------------------------------------------- encoding */

struct merge_ctx {
	const struct l2c_impl *b;
	char *buf;		/* room for max_len bytes */
};

/* tok_merge_fn: a and b merge when both are normal pieces whose
 * concatenation is a normal piece; the higher score merges first. */
static bool merge_of(const void *ctx, int a, int b, double *key, int *out)
{
	const struct merge_ctx *m = ctx;
	const struct l2c_impl *v = m->b;
	size_t la, lb;
	const char *pa, *pb;
	int id;

	if (v->kind[a] != PK_NORMAL || v->kind[b] != PK_NORMAL)
		return false;
	pa = piece_of(v, a, &la);
	pb = piece_of(v, b, &lb);
	if (la + lb > (size_t)v->max_len)
		return false;
	memcpy(m->buf, pa, la);
	memcpy(m->buf + la, pb, lb);
	id = lookup(v, m->buf, la + lb);
	if (id < 0)
		return false;
	*key = -(double)v->score[id];
	*out = id;
	return true;
}

/* Appends the pieces of s[0 .. len) to tok[ns ..], with the dummy prefix
 * first when prefix, merged; returns the new count and adds the invalid
 * bytes replaced to *nbad.  tok has room for 3 * len + 1 more. */
static int encode_run(const struct tokenizer *t, const unsigned char *s, size_t len, bool prefix,
		      int *tok, int ns, int *nbad)
{
	const struct l2c_impl *b = t->impl;
	struct merge_ctx m = { b, NULL };
	int start = ns;

	if (prefix && b->space_id >= 0)
		tok[ns++] = b->space_id;
	else if (prefix && b->byte_id[' '] >= 0)
		tok[ns++] = b->byte_id[' '];
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int bad, k = utf8_decode(s + i, len - i, &cp, &bad), id;
		char u[4];
		const char *c = (const char *)s + i;
		int cl = k;

		if (bad) {
			(*nbad)++;
			memcpy(u, "\xef\xbf\xbd", 3);
			c = u;
			cl = 3;
		} else if (b->space_mark && cp == 0x2581) {
			c = " ";
			cl = 1;
		}
		id = lookup(b, c, (size_t)cl);
		if (id >= 0) {
			tok[ns++] = id;
		} else {
			for (int j = 0; j < cl; j++) {
				int bid = b->byte_id[(unsigned char)c[j]];

				tok[ns++] = bid >= 0 ? bid : (t->unk_id >= 0 ? t->unk_id : 0);
			}
		}
		i += (size_t)k;
	}
	m.buf = xmalloc((size_t)b->max_len + 1);
	ns = start + tok_merge_pairs(tok + start, ns - start, merge_of, &m);
	free(m.buf);
	return ns;
}

/* A stretch of the text: [at, at + len), a whole piece's id or -1 (text). */
struct run {
	size_t at, len;
	int id;
};

/* Cuts the text runs of r (*n of them, room for cap) at every occurrence
 * of the whole piece id (the leftmost first).  Returns the new count. */
static int cut_at(const struct l2c_impl *b, const char *text, struct run *r, int n, int id)
{
	size_t pl;
	const char *p = piece_of(b, id, &pl);

	for (int i = 0; i < n; i++) {
		if (r[i].id >= 0 || r[i].len < pl)
			continue;
		const char *hit = memmem(text + r[i].at, r[i].len, p, pl);
		if (!hit)
			continue;
		size_t at = (size_t)(hit - text), end = r[i].at + r[i].len;
		struct run left = { r[i].at, at - r[i].at, -1 }, mid = { at, pl, id };
		struct run right = { at + pl, end - at - pl, -1 };
		int k = (left.len > 0) + 1 + (right.len > 0);

		memmove(r + i + k, r + i + 1, (size_t)(n - i - 1) * sizeof *r);
		n += k - 1;
		if (left.len)
			r[i++] = left;
		r[i] = mid;
		if (right.len)
			r[i + 1] = right; /* searched next */
	}
	return n;
}

static int l2c_encode(const struct tokenizer *t, const char *text, size_t len, int **ids,
		      int *n, int *cap, struct err *e)
{
	const struct l2c_impl *b = t->impl;
	int nbad = 0, ns = 0, nr = 1;
	int *tok;

	if (len == 0)
		return 0;
	/* a code point becomes at most 4 byte pieces, U+FFFD for a bad byte 3;
	 * each run of text may add a prefix piece */
	if (len > (size_t)(INT_MAX / 5 - 2 - *n))
		return err_set(e, "llama2.c tokenizer: text too long (%zu bytes)", len);
	tok = xmalloc((4 * len + 2) * sizeof *tok);
	/* each cut adds at most two runs, and there are at most len whole ones */
	struct run *r = xmalloc((2 * len + 2) * sizeof *r);
	r[0] = (struct run){ 0, len, -1 };
	for (int w = 0; w < b->n_whole; w++)
		nr = cut_at(b, text, r, nr, b->whole[w]);
	for (int i = 0; i < nr; i++) {
		bool after = i == 0 || r[i - 1].id >= 0;

		if (r[i].id >= 0)
			tok[ns++] = r[i].id;
		else
			ns = encode_run(t, (const unsigned char *)text + r[i].at, r[i].len,
					after && !b->no_prefix, tok, ns, &nbad);
	}
	free(r);
	if (*n + ns > *cap) {
		*ids = xrealloc(*ids, (size_t)(*n + ns) * sizeof **ids);
		*cap = *n + ns;
	}
	memcpy(*ids + *n, tok, (size_t)ns * sizeof *tok);
	*n += ns;
	free(tok);
	return nbad;
}

/* ------------------------------------------------------------ other ops */

static int l2c_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	size_t len;
	const char *p = piece_of(t->impl, id, &len);

	return tok_copy_piece(p, len, buf, size);
}

static char *l2c_decode(const struct tokenizer *t, const int *ids, int n)
{
	const struct l2c_impl *b = t->impl;
	size_t cap = 64, len = 0;
	char *out = xmalloc(cap);
	int prev = -1;

	for (int i = 0; i < n; i++) {
		int id = ids[i];
		size_t l;
		const char *p;

		if (id < 0 || id >= b->n) {
			prev = id;
			continue;
		}
		if (id == t->bos_id || id == b->eos_id) {
			prev = id;
			continue;
		}
		p = piece_of(b, id, &l);
		if (b->kind[id] == PK_NORMAL && !b->no_prefix && l && p[0] == ' ' &&
		    (i == 0 || (prev == t->bos_id && prev >= 0))) {
			p++;
			l--;
		}
		if (len + l + 1 > cap) {
			while (len + l + 1 > cap)
				cap *= 2;
			out = xrealloc(out, cap);
		}
		memcpy(out + len, p, l);
		len += l;
		prev = id;
	}
	out[len] = '\0';
	return out;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64_encode(const unsigned char *s, size_t n)
{
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Decodes base64 (no whitespace); NULL when malformed. */
static unsigned char *base64_decode(const char *s, size_t n, size_t *out_len)
{
	unsigned char *out, *o;
	int val[256];

	if (n % 4)
		return NULL;
	for (int i = 0; i < 256; i++)
		val[i] = -1;
	for (int i = 0; i < 64; i++)
		val[(unsigned char)b64[i]] = i;
	out = o = xmalloc(n / 4 * 3 + 1);
	for (size_t i = 0; i < n; i += 4) {
		int a = val[(unsigned char)s[i]], b = val[(unsigned char)s[i + 1]];
		int c = s[i + 2] == '=' ? 0 : val[(unsigned char)s[i + 2]];
		int d = s[i + 3] == '=' ? 0 : val[(unsigned char)s[i + 3]];
		bool last = i + 4 == n;

		if (a < 0 || b < 0 || c < 0 || d < 0 ||
		    (!last && (s[i + 2] == '=' || s[i + 3] == '=')) ||
		    (s[i + 2] == '=' && s[i + 3] != '=')) {
			free(out);
			return NULL;
		}
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		*o++ = (unsigned char)(v >> 16);
		if (s[i + 2] != '=')
			*o++ = (unsigned char)(v >> 8);
		if (s[i + 3] != '=')
			*o++ = (unsigned char)v;
	}
	*out_len = (size_t)(o - out);
	return out;
}

static char *l2c_to_json(const struct tokenizer *t)
{
	const struct l2c_impl *b = t->impl;
	char *data = base64_encode(b->raw, b->raw_len);
	json_t *root = ju_check(json_object());

	ju_set(root, "type", json_string("llama2c"));
	ju_set(root, "pieces", json_integer(b->n));
	ju_set(root, "data", json_string(data));
	free(data);
	if (b->opts) {
		json_t *whole = ju_check(json_array());
		for (int i = 0; i < b->n_whole; i++)
			ju_append(whole, json_integer(b->whole[i]));
		ju_set(root, "whole", whole);
		ju_set(root, "no_prefix", json_boolean(b->no_prefix));
		ju_set(root, "space_mark", json_boolean(b->space_mark));
		ju_set(root, "bos", json_integer(t->bos_id));
		ju_set(root, "unk", json_integer(t->unk_id));
	}
	return tok_json_dump(root);
}

static void l2c_free(struct tokenizer *t)
{
	l2c_impl_free(t->impl);
	t->impl = NULL;
}

static const struct tokenizer_ops l2c_ops = {
	.kind = "llama2c",
	.encode = l2c_encode,
	.piece = l2c_piece,
	.to_json = l2c_to_json,
	.free = l2c_free,
	.decode = l2c_decode,
};

/* ------------------------------------------------------- constructors */

/* The tokenizer JSON's options (its "whole", "no_prefix", "space_mark",
 * "bos" and "unk") over the pieces in buf, which it takes. */
static struct tokenizer *from_json_opts(const json_t *root, unsigned char *buf, size_t len,
					int pieces, struct err *e)
{
	const json_t *whole = json_object_get(root, "whole"), *v;
	const json_t *bos = json_object_get(root, "bos"), *unk = json_object_get(root, "unk");
	struct tok_spm_opts o = { .no_prefix = json_is_true(json_object_get(root, "no_prefix")),
				  .space_mark = json_is_true(json_object_get(root, "space_mark")) };
	struct tokenizer *t = NULL;
	size_t i;
	int *ids = xmalloc((json_array_size(whole) + 1) * sizeof *ids);

	if (!json_is_array(whole) || !json_is_integer(bos) || !json_is_integer(unk) ||
	    json_integer_value(bos) < -1 || json_integer_value(bos) >= pieces ||
	    json_integer_value(unk) < -1 || json_integer_value(unk) >= pieces) {
		err_set(e, "tokenizer JSON: \"whole\", \"bos\" or \"unk\" is not a piece list or id");
		free(buf);
		goto out;
	}
	json_array_foreach(whole, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= pieces) {
			err_set(e, "tokenizer JSON: \"whole\" entry %zu is not a piece id", i);
			free(buf);
			goto out;
		}
		ids[i] = (int)json_integer_value(v);
	}
	o.whole = ids;
	o.n_whole = (int)json_array_size(whole);
	t = parse_bin(buf, len, pieces, &o, "tokenizer JSON", e);
	if (t) {
		t->bos_id = (int)json_integer_value(bos);
		t->unk_id = (int)json_integer_value(unk);
	}
out:
	free(ids);
	return t;
}

struct tokenizer *tok_llama2c_from_json(const json_t *root, struct err *e)
{
	const json_t *data = json_object_get(root, "data");
	const json_t *pieces = json_object_get(root, "pieces");
	unsigned char *buf;
	size_t len;

	if (!json_is_string(data)) {
		err_set(e, "tokenizer JSON: \"data\" missing or not a string");
		return NULL;
	}
	if (!json_is_integer(pieces) || json_integer_value(pieces) <= 0 ||
	    json_integer_value(pieces) > PIECES_MAX) {
		err_set(e, "tokenizer JSON: \"pieces\" missing or not a positive integer");
		return NULL;
	}
	buf = base64_decode(json_string_value(data), json_string_length(data), &len);
	if (!buf) {
		err_set(e, "tokenizer JSON: \"data\" is not base64");
		return NULL;
	}
	const json_t *whole = json_object_get(root, "whole");
	if (!whole)
		return parse_bin(buf, len, (int)json_integer_value(pieces), NULL, "tokenizer JSON", e);
	return from_json_opts(root, buf, len, (int)json_integer_value(pieces), e);
}

struct tokenizer *tok_llama2c_from_bin(unsigned char *buf, size_t len, int n_pieces,
				       const char *where, struct err *e)
{
	return parse_bin(buf, len, n_pieces < 0 ? 0 : n_pieces, NULL, where, e);
}

struct tokenizer *tok_llama2c_from_bin_opts(unsigned char *buf, size_t len, int n_pieces,
					    const struct tok_spm_opts *o, const char *where,
					    struct err *e)
{
	return parse_bin(buf, len, n_pieces < 0 ? 0 : n_pieces, o, where, e);
}

struct tokenizer *tok_llama2c_load(const char *path, int n_pieces, struct err *e)
{
	size_t len;
	char *buf = read_file_max(path, TOK_FILE_MAX, "a tokenizer file", &len, e);

	if (!buf)
		return NULL;
	return parse_bin((unsigned char *)buf, len, n_pieces < 0 ? 0 : n_pieces, NULL, path, e);
}
