/*
 * tok-common.c — helpers shared by the tokenizers (tok-common.h).
 */
#include "tok-common.h"

#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "utf8.h"
#include "util.h"

uint32_t tok_hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

int32_t *tok_vtab_new(size_t n, uint32_t *mask)
{
	uint32_t slots = 16;
	int32_t *vtab;

	while (slots < 2 * n)
		slots *= 2;
	vtab = xmalloc((size_t)slots * sizeof *vtab);
	memset(vtab, 0xff, (size_t)slots * sizeof *vtab);
	*mask = slots - 1;
	return vtab;
}

int tok_vtab_find(const int32_t *vtab, uint32_t mask, const char *blob, const uint32_t *off,
		  const char *s, size_t n)
{
	uint32_t i = tok_hash_bytes(s, n) & mask;

	for (;; i = (i + 1) & mask) {
		int id = vtab[i];

		if (id < 0)
			return -1;
		if (off[id + 1] - off[id] == n && memcmp(blob + off[id], s, n) == 0)
			return id;
	}
}

void tok_vtab_add(int32_t *vtab, uint32_t mask, const char *s, size_t n, int32_t id)
{
	uint32_t h = tok_hash_bytes(s, n) & mask;

	while (vtab[h] >= 0)
		h = (h + 1) & mask;
	vtab[h] = id;
}

int tok_copy_piece(const char *p, size_t len, char *buf, size_t size)
{
	if (size) {
		size_t k = len < size - 1 ? len : size - 1;

		memcpy(buf, p, k);
		buf[k] = '\0';
	}
	return (int)len;
}

char *tok_json_dump(json_t *root)
{
	char *out = ju_dump(root, JSON_COMPACT | JSON_PRESERVE_ORDER);

	json_decref(root);
	return out;
}

char *tok_source_json(const char *type, const char *json, size_t len)
{
	json_t *root = ju_check(json_object());

	ju_set(root, "type", json_string(type));
	ju_set(root, "json", json_stringn(json, len));
	return tok_json_dump(root);
}

/* ------------------------------------------------------------- merging */

struct pair {
	double key;
	int32_t pos, a, b, out;
};

/* Heap order: the lower key first, then the leftmost. */
static bool pair_before(const struct pair *x, const struct pair *y)
{
	return x->key != y->key ? x->key < y->key : x->pos < y->pos;
}

struct heap {
	struct pair *v;
	int n, cap;
};

static void heap_push(struct heap *h, struct pair p)
{
	int i;

	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 64;
		h->v = xrealloc(h->v, (size_t)h->cap * sizeof *h->v);
	}
	i = h->n++;
	while (i > 0 && pair_before(&p, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = p;
}

static struct pair heap_pop(struct heap *h)
{
	struct pair top = h->v[0], last = h->v[--h->n];
	int i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && pair_before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!pair_before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

/* Pushes the pair (i, j) when it merges. */
static void push_pair(struct heap *h, const int *tok, int i, int j, tok_merge_fn merge,
		      const void *ctx)
{
	double key;
	int out;

	if (i < 0 || j < 0)
		return;
	if (merge(ctx, tok[i], tok[j], &key, &out))
		heap_push(h, (struct pair){ key, i, tok[i], tok[j], out });
}

int tok_merge_pairs(int *tok, int n, tok_merge_fn merge, const void *ctx)
{
	int *prev, *next, k = 0;
	struct heap h = { 0 };

	if (n <= 0)
		return 0;
	prev = xmalloc((size_t)n * 2 * sizeof *prev);
	next = prev + n;
	for (int i = 0; i < n; i++) {
		prev[i] = i - 1;
		next[i] = i + 1 < n ? i + 1 : -1;
	}
	for (int i = 0; i + 1 < n; i++)
		push_pair(&h, tok, i, i + 1, merge, ctx);
	while (h.n) {
		struct pair p = heap_pop(&h);
		int i = p.pos, j = next[i];

		/* stale: the left symbol was absorbed (tok = -1) or either changed */
		if (tok[i] != p.a || j < 0 || tok[j] != p.b)
			continue;
		tok[i] = p.out;
		tok[j] = -1;
		next[i] = next[j];
		if (next[j] >= 0)
			prev[next[j]] = i;
		push_pair(&h, tok, prev[i], i, merge, ctx);
		push_pair(&h, tok, i, next[i], merge, ctx);
	}
	/* the survivors in order; i only moves right, so k <= i */
	for (int i = 0; i >= 0; i = next[i])
		tok[k++] = tok[i];
	free(h.v);
	free(prev);
	return k;
}

void tok_gpt2_byte_map(uint32_t b2u[256], int16_t u2b[324])
{
	int next = 256;
	for (int i = 0; i < 324; i++)
		u2b[i] = -1;
	for (int b = 0; b < 256; b++) {
		bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
		b2u[b] = self ? (uint32_t)b : (uint32_t)next++;
		u2b[b2u[b]] = (int16_t)b;
	}
}

char *tok_replace_invalid(const char *text, size_t len, size_t *out_len, int *nbad)
{
	const unsigned char *s = (const unsigned char *)text;
	char *out = NULL;
	size_t i = 0, o = 0;

	*nbad = 0;
	while (i < len) {
		uint32_t cp;
		int bad, k = utf8_decode(s + i, len - i, &cp, &bad);
		if (bad && !out) {
			out = xmalloc(3 * len + 1);
			memcpy(out, text, i);
			o = i;
		}
		if (bad) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			(*nbad)++;
		} else if (out) {
			memcpy(out + o, s + i, (size_t)k);
			o += (size_t)k;
		}
		i += (size_t)k;
	}
	if (out)
		out[o] = '\0';
	*out_len = out ? o : len;
	return out;
}

/* ------------------------------------------------------------ merge table */

static uint32_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint32_t)x;
}

void tok_merges_init(struct tok_merges *m, size_t n)
{
	size_t slots = 16;
	while (slots < 2 * n + 2)
		slots *= 2;
	m->mask = (uint32_t)(slots - 1);
	m->key = xcalloc(slots, sizeof *m->key);
	m->rank = xmalloc(slots * sizeof *m->rank);
	m->out = xmalloc(slots * sizeof *m->out);
}

bool tok_merges_add(struct tok_merges *m, int a, int b, int rank, int out)
{
	uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
	uint32_t i = hash_u64(key) & m->mask;
	while (m->key[i] != 0) {
		if (m->key[i] == key)
			return false;
		i = (i + 1) & m->mask;
	}
	m->key[i] = key;
	m->rank[i] = rank;
	m->out[i] = out;
	return true;
}

int tok_merges_find(const struct tok_merges *m, int a, int b, int *out)
{
	uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
	for (uint32_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->key[i] == 0)
			return -1;
		if (m->key[i] == key) {
			*out = m->out[i];
			return m->rank[i];
		}
	}
}

void tok_merges_free(struct tok_merges *m)
{
	free(m->key);
	free(m->rank);
	free(m->out);
	memset(m, 0, sizeof *m);
}
