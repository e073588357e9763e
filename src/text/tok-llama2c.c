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

enum piece_kind { PK_NORMAL, PK_BYTE, PK_CONTROL };

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

static struct tokenizer *parse_bin(unsigned char *buf, size_t len, int want, const char *where,
				   struct err *e)
{
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
	if (count_pieces(buf, len, want, where, b, &n, &total, e) != 0)
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
		add_piece(b, t, i, (const char *)buf + at + 8, l, &o);
		at += 8 + l;
	}
	b->off[n] = (uint32_t)o;
	b->space_id = lookup(b, " ", 1);
	t->vocab_size = n;
	return t;
fail:
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

static int l2c_encode(const struct tokenizer *t, const char *text, size_t len, int **ids,
		      int *n, int *cap, struct err *e)
{
	const struct l2c_impl *b = t->impl;
	const unsigned char *s = (const unsigned char *)text;
	int nbad = 0, ns = 0;
	int *tok;
	struct merge_ctx m = { b, NULL };
	size_t i;

	if (len == 0)
		return 0;
	/* a code point becomes at most 4 byte pieces; U+FFFD for a bad byte 3 */
	if (len > (size_t)(INT_MAX / 4 - 1 - *n))
		return err_set(e, "llama2.c tokenizer: text too long (%zu bytes)", len);
	tok = xmalloc((3 * len + 1) * sizeof *tok);

	if (b->space_id >= 0)
		tok[ns++] = b->space_id;
	else if (b->byte_id[' '] >= 0)
		tok[ns++] = b->byte_id[' '];
	for (i = 0; i < len;) {
		uint32_t cp;
		int bad, k = utf8_decode(s + i, len - i, &cp, &bad), id;
		char u[4];
		const char *c = (const char *)s + i;
		int cl = k;

		if (bad) {
			nbad++;
			memcpy(u, "\xef\xbf\xbd", 3);
			c = u;
			cl = 3;
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
	ns = tok_merge_pairs(tok, ns, merge_of, &m);
	free(m.buf);
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
		if (b->kind[id] == PK_NORMAL && l && p[0] == ' ' &&
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
	return parse_bin(buf, len, (int)json_integer_value(pieces), "tokenizer JSON", e);
}

struct tokenizer *tok_llama2c_from_bin(unsigned char *buf, size_t len, int n_pieces,
				       const char *where, struct err *e)
{
	return parse_bin(buf, len, n_pieces < 0 ? 0 : n_pieces, where, e);
}

struct tokenizer *tok_llama2c_load(const char *path, int n_pieces, struct err *e)
{
	size_t len;
	char *buf = read_file_max(path, TOK_FILE_MAX, "a tokenizer file", &len, e);

	if (!buf)
		return NULL;
	return parse_bin((unsigned char *)buf, len, n_pieces < 0 ? 0 : n_pieces, path, e);
}
