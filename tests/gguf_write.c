/*
 * gguf_write.c — the GGUF writer, reference quantizers and model and
 * tokenizer writers of gguf_write.h.
 */
#define _GNU_SOURCE
#include "gguf_write.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "config.h"
#include "gguf.h"
#include "loaders.h"
#include "util.h"

static _Noreturn void fixture(const char *what)
{
	fprintf(stderr, "gguf_write: %s\n", what);
	abort();
}

/* ------------------------------------------------------------ the writer */

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *x, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, x, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void put_str(struct buf *b, const char *s, size_t n)
{
	put_u64(b, n);
	put(b, s, n);
}

struct gtensor {
	char name[64];
	uint32_t type;
	uint64_t ne[2];
	int ndim;
	struct buf data;
};

struct gw {
	struct buf kv;
	uint64_t n_kv;
	struct gtensor *t;
	int n_t;
};

struct gw *gw_new(void)
{
	return xcalloc(1, sizeof(struct gw));
}

void gw_free(struct gw *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n_t; i++)
		free(w->t[i].data.p);
	free(w->t);
	free(w->kv.p);
	free(w);
}

static void key(struct gw *w, const char *k, uint32_t type)
{
	put_str(&w->kv, k, strlen(k));
	put_u32(&w->kv, type);
	w->n_kv++;
}

void gw_u32(struct gw *w, const char *k, uint32_t v)
{
	key(w, k, GGUF_U32);
	put_u32(&w->kv, v);
}

void gw_i32(struct gw *w, const char *k, int32_t v)
{
	key(w, k, GGUF_I32);
	put(&w->kv, &v, 4);
}

void gw_f32(struct gw *w, const char *k, float v)
{
	key(w, k, GGUF_F32);
	put(&w->kv, &v, 4);
}

void gw_bool(struct gw *w, const char *k, bool v)
{
	unsigned char b = v;
	key(w, k, GGUF_BOOL);
	put(&w->kv, &b, 1);
}

void gw_str(struct gw *w, const char *k, const char *v)
{
	key(w, k, GGUF_STRING);
	put_str(&w->kv, v, strlen(v));
}

void gw_strs(struct gw *w, const char *k, char *const *v, const uint32_t *len, size_t n)
{
	key(w, k, GGUF_ARRAY);
	put_u32(&w->kv, GGUF_STRING);
	put_u64(&w->kv, n);
	for (size_t i = 0; i < n; i++)
		put_str(&w->kv, v[i], len ? len[i] : strlen(v[i]));
}

void gw_f32s(struct gw *w, const char *k, const float *v, size_t n)
{
	key(w, k, GGUF_ARRAY);
	put_u32(&w->kv, GGUF_F32);
	put_u64(&w->kv, n);
	put(&w->kv, v, 4 * n);
}

void gw_i32s(struct gw *w, const char *k, const int32_t *v, size_t n)
{
	key(w, k, GGUF_ARRAY);
	put_u32(&w->kv, GGUF_I32);
	put_u64(&w->kv, n);
	put(&w->kv, v, 4 * n);
}

void gw_tensor(struct gw *w, const char *name, uint32_t type, size_t rows, size_t cols,
	       const float *x)
{
	size_t bv = ggml_block_values(type), n = (rows ? rows : 1) * cols;
	if (!bv || cols % bv)
		type = GGML_F32; /* as llama.cpp falls back for rows that do not fit */
	bv = ggml_block_values(type);
	w->t = xrealloc(w->t, (size_t)(w->n_t + 1) * sizeof *w->t);
	struct gtensor *t = &w->t[w->n_t++];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->type = type;
	t->ne[0] = cols;
	t->ne[1] = rows;
	t->ndim = rows ? 2 : 1;
	size_t bytes = n / bv * ggml_block_bytes(type);
	t->data.p = xmalloc(bytes + 1);
	t->data.n = t->data.cap = bytes;
	gq_quantize(type, x, t->data.p, n);
}

unsigned char *gw_bytes(struct gw *w, uint32_t version, uint32_t alignment, size_t *len)
{
	struct buf b = { 0 };
	uint32_t a = alignment ? alignment : 32;
	put(&b, "GGUF", 4);
	put_u32(&b, version);
	put_u64(&b, (uint64_t)w->n_t);
	put_u64(&b, w->n_kv + (a != 32));
	put(&b, w->kv.p, w->kv.n);
	if (a != 32) {
		put_str(&b, "general.alignment", 17);
		put_u32(&b, GGUF_U32);
		put_u32(&b, a);
	}
	uint64_t off = 0;
	for (int i = 0; i < w->n_t; i++) {
		struct gtensor *t = &w->t[i];
		put_str(&b, t->name, strlen(t->name));
		put_u32(&b, (uint32_t)t->ndim);
		for (int d = 0; d < t->ndim; d++)
			put_u64(&b, t->ne[d]);
		put_u32(&b, t->type);
		put_u64(&b, off);
		off = (off + t->data.n + a - 1) / a * a;
	}
	static const unsigned char zeros[64];
	while (b.n % a)
		put(&b, zeros, 1);
	for (int i = 0; i < w->n_t; i++) {
		put(&b, w->t[i].data.p, w->t[i].data.n);
		while (i + 1 < w->n_t && b.n % a)
			put(&b, zeros, 1);
	}
	*len = b.n;
	return b.p;
}

int gw_write(struct gw *w, const char *path, uint32_t version, uint32_t alignment)
{
	size_t n;
	unsigned char *p = gw_bytes(w, version, alignment, &n);
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = 0;
	free(p);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------ quantizers */

static float f16r(float x)
{
	return f16_to_f32(f32_to_f16(x));
}

static void put_half(unsigned char *p, float x)
{
	uint16_t h = f32_to_f16(x);
	p[0] = (unsigned char)h;
	p[1] = (unsigned char)(h >> 8);
}

static float get_half(const unsigned char *p)
{
	return f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* The nearest level q in [lo, hi] of x on the grid step * q + off. */
static int level(float x, float step, float off, int lo, int hi)
{
	if (step == 0)
		return lo > 0 ? lo : hi < 0 ? hi : 0;
	float q = roundf((x - off) / step);
	return q < lo ? lo : q > hi ? hi : (int)q;
}

/* The value of largest magnitude, with its sign. */
static float signed_max(const float *x, int n)
{
	float m = 0;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > fabsf(m))
			m = x[i];
	return m;
}

/* Symmetric 32-value blocks: Q8_0 (levels -127..127), Q4_0 (-8..7), Q5_0. */
static void q_sym32(uint32_t t, const float *x, unsigned char *b)
{
	int lo = t == GGML_Q8_0 ? -127 : t == GGML_Q4_0 ? -8 : -16, hi = -lo - (t != GGML_Q8_0);
	float m = signed_max(x, 32), d = t == GGML_Q8_0 ? fabsf(m) / 127 : m / (float)lo;
	put_half(b, d);
	float ds = f16r(d);
	int q[32];
	for (int j = 0; j < 32; j++)
		q[j] = level(x[j], ds, 0, lo, hi);
	if (t == GGML_Q8_0) {
		for (int j = 0; j < 32; j++)
			b[2 + j] = (unsigned char)(int8_t)q[j];
		return;
	}
	unsigned char *qs = b + (t == GGML_Q5_0 ? 6 : 2);
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		int a = q[j] - lo, c = q[j + 16] - lo;
		qs[j] = (unsigned char)((a & 15) | (c & 15) << 4);
		qh |= (uint32_t)(a >> 4 & 1) << j | (uint32_t)(c >> 4 & 1) << (j + 16);
	}
	if (t == GGML_Q5_0)
		memcpy(b + 2, &qh, 4);
}

/* Min-offset 32-value blocks: Q4_1 (levels 0..15), Q5_1 (0..31). */
static void q_min32(uint32_t t, const float *x, unsigned char *b)
{
	int hi = t == GGML_Q4_1 ? 15 : 31;
	float mn = x[0], mx = x[0];
	for (int j = 1; j < 32; j++) {
		mn = x[j] < mn ? x[j] : mn;
		mx = x[j] > mx ? x[j] : mx;
	}
	put_half(b, (mx - mn) / (float)hi);
	put_half(b + 2, mn);
	float ds = get_half(b), ms = get_half(b + 2);
	unsigned char *qs = b + (t == GGML_Q5_1 ? 8 : 4);
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		int a = level(x[j], ds, ms, 0, hi), c = level(x[j + 16], ds, ms, 0, hi);
		qs[j] = (unsigned char)((a & 15) | (c & 15) << 4);
		qh |= (uint32_t)(a >> 4 & 1) << j | (uint32_t)(c >> 4 & 1) << (j + 16);
	}
	if (t == GGML_Q5_1)
		memcpy(b + 4, &qh, 4);
}

/* A K block's sub-block scales with mins (Q2_K: 16 of 16, levels 0..3;
 * Q4_K/Q5_K: 8 of 32, 0..15 / 0..31): each sub-block's range over its
 * levels, then the scales and mins on 4 or 6 bits of the super-block's d
 * and dmin.  Fills the levels q[256], the integer scales and mins. */
static void k_min(const float *x, int sub, int levels, int sbits, float *d, float *dmin,
		  int *sc, int *mn, int *q)
{
	int ns = 256 / sub, smax = (1 << sbits) - 1;
	float scale[16], minv[16], ms = 0, mm = 0;
	for (int j = 0; j < ns; j++) {
		float lo = 0, hi = 0;
		for (int l = 0; l < sub; l++) {
			float v = x[j * sub + l];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		minv[j] = -lo;
		scale[j] = (hi - lo) / (float)levels;
		ms = scale[j] > ms ? scale[j] : ms;
		mm = minv[j] > mm ? minv[j] : mm;
	}
	*d = f16r(ms / (float)smax);
	*dmin = f16r(mm / (float)smax);
	for (int j = 0; j < ns; j++) {
		sc[j] = level(scale[j], *d, 0, 0, smax);
		mn[j] = level(minv[j], *dmin, 0, 0, smax);
		float dl = *d * (float)sc[j], ml = *dmin * (float)mn[j];
		for (int l = 0; l < sub; l++)
			q[j * sub + l] = level(x[j * sub + l], dl, -ml, 0, levels);
	}
}

/* A K block's signed sub-block scales of 16 values (Q3_K: levels -4..3 and
 * 6-bit scales; Q6_K: -32..31 and 8-bit scales). */
static void k_sym(const float *x, int qlo, int slo, float *d, int *sc, int *q)
{
	float scale[16], big = 0;
	for (int j = 0; j < 16; j++) {
		scale[j] = signed_max(x + 16 * j, 16) / (float)qlo;
		big = fabsf(scale[j]) > fabsf(big) ? scale[j] : big;
	}
	*d = f16r(big / (float)slo);
	for (int j = 0; j < 16; j++) {
		sc[j] = level(scale[j], *d, 0, slo, -slo - 1);
		float dl = *d * (float)sc[j];
		for (int l = 0; l < 16; l++)
			q[16 * j + l] = level(x[16 * j + l], dl, 0, qlo, -qlo - 1);
	}
}

static void q2k(const float *x, unsigned char *b)
{
	float d, dmin;
	int sc[16], mn[16], q[256];
	k_min(x, 16, 3, 4, &d, &dmin, sc, mn, q);
	memset(b, 0, 84);
	for (int j = 0; j < 16; j++)
		b[j] = (unsigned char)(sc[j] | mn[j] << 4);
	for (int v = 0; v < 256; v++)
		b[16 + 32 * (v / 128) + v % 32] |= (unsigned char)(q[v] << (2 * (v % 128 / 32)));
	put_half(b + 80, d);
	put_half(b + 82, dmin);
}

static void q3k(const float *x, unsigned char *b)
{
	float d;
	int sc[16], q[256];
	k_sym(x, -4, -32, &d, sc, q);
	memset(b, 0, 110);
	for (int v = 0; v < 256; v++) {
		int u = q[v] + 4, h = v / 128, g = v % 128 / 32, l = v % 32;
		b[32 + 32 * h + l] |= (unsigned char)((u & 3) << (2 * g));
		if (u & 4)
			b[l] |= (unsigned char)(1 << (4 * h + g));
	}
	for (int i = 0; i < 16; i++) {
		int u = sc[i] + 32;
		b[96 + (i < 8 ? i : i - 8)] |= (unsigned char)((u & 15) << (i < 8 ? 0 : 4));
		b[96 + 8 + i % 4] |= (unsigned char)((u >> 4) << (2 * (i / 4)));
	}
	put_half(b + 108, d);
}

static void q45k(const float *x, unsigned char *b, bool five)
{
	float d, dmin;
	int sc[8], mn[8], q[256];
	k_min(x, 32, five ? 31 : 15, 6, &d, &dmin, sc, mn, q);
	memset(b, 0, five ? 176 : 144);
	put_half(b, d);
	put_half(b + 2, dmin);
	unsigned char *s = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
	for (int j = 0; j < 8; j++) {
		if (j < 4) {
			s[j] = (unsigned char)sc[j];
			s[j + 4] = (unsigned char)mn[j];
		} else {
			s[j + 4] = (unsigned char)((sc[j] & 15) | (mn[j] & 15) << 4);
			s[j - 4] |= (unsigned char)((sc[j] >> 4) << 6);
			s[j] |= (unsigned char)((mn[j] >> 4) << 6);
		}
	}
	for (int p = 0; p < 4; p++)
		for (int l = 0; l < 32; l++) {
			int a = q[64 * p + l], c = q[64 * p + 32 + l];
			qs[32 * p + l] = (unsigned char)((a & 15) | (c & 15) << 4);
			if (five)
				qh[l] |= (unsigned char)((a >> 4) << (2 * p) | (c >> 4) << (2 * p + 1));
		}
}

static void q6k(const float *x, unsigned char *b)
{
	float d;
	int sc[16], q[256];
	k_sym(x, -32, -128, &d, sc, q);
	memset(b, 0, 210);
	for (int v = 0; v < 256; v++) {
		int u = q[v] + 32, h = v / 128, k = v % 128 / 32, l = v % 32;
		b[64 * h + l + 32 * (k & 1)] |= (unsigned char)((u & 15) << (k >= 2 ? 4 : 0));
		b[128 + 32 * h + l] |= (unsigned char)((u >> 4) << (2 * k));
	}
	for (int j = 0; j < 16; j++)
		b[192 + j] = (unsigned char)(int8_t)sc[j];
	put_half(b + 208, d);
}

void gq_quantize(uint32_t type, const float *x, unsigned char *out, size_t n)
{
	size_t bv = ggml_block_values(type), bb = ggml_block_bytes(type);
	if (type == GGML_F32) {
		memcpy(out, x, 4 * n);
		return;
	}
	for (size_t i = 0; i < n / bv; i++, x += bv, out += bb) {
		uint16_t h;
		switch (type) {
		case GGML_F16: h = f32_to_f16(x[0]); memcpy(out, &h, 2); break;
		case GGML_BF16: {
			uint32_t u;
			memcpy(&u, x, 4);
			h = (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16); /* nearest, ties even */
			memcpy(out, &h, 2);
			break;
		}
		case GGML_Q8_0: case GGML_Q4_0: case GGML_Q5_0: q_sym32(type, x, out); break;
		case GGML_Q4_1: case GGML_Q5_1: q_min32(type, x, out); break;
		case GGML_Q2_K: q2k(x, out); break;
		case GGML_Q3_K: q3k(x, out); break;
		case GGML_Q4_K: q45k(x, out, false); break;
		case GGML_Q5_K: q45k(x, out, true); break;
		case GGML_Q6_K: q6k(x, out); break;
		default: fixture("gq_quantize: no quantizer for the type");
		}
	}
}

/* ---------------------------------------------------------------- bounds */

/* Half a step inside the grid [lo, hi] (step apart), the distance to the
 * nearer end outside it. */
static float grid_bound(float x, float step, float lo, float hi)
{
	float s = fabsf(step) / 2, a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;
	return x < a - s ? a - x : x > b + s ? x - b : s;
}

/* The grid of value v of a block as stored: step, first and last level. */
static void grid_of(uint32_t t, const unsigned char *b, int v, float *step, float *lo, float *hi)
{
	int sc, mn, j;
	float d;
	switch (t) {
	case GGML_Q8_0: *step = get_half(b); *lo = -127 * *step; *hi = 127 * *step; return;
	case GGML_Q4_0: *step = get_half(b); *lo = -8 * *step; *hi = 7 * *step; return;
	case GGML_Q5_0: *step = get_half(b); *lo = -16 * *step; *hi = 15 * *step; return;
	case GGML_Q4_1: case GGML_Q5_1:
		*step = get_half(b);
		*lo = get_half(b + 2);
		*hi = *lo + *step * (t == GGML_Q4_1 ? 15 : 31);
		return;
	case GGML_Q2_K:
		sc = b[v / 16] & 15;
		mn = b[v / 16] >> 4;
		*step = get_half(b + 80) * (float)sc;
		*lo = -(get_half(b + 82) * (float)mn);
		*hi = *step * 3 + *lo;
		return;
	case GGML_Q3_K:
		j = v / 16;
		sc = ((j < 8 ? b[96 + j] & 15 : b[96 + j - 8] >> 4) |
		      (b[104 + j % 4] >> (2 * (j / 4)) & 3) << 4) - 32;
		*step = get_half(b + 108) * (float)sc;
		*lo = -4 * *step;
		*hi = 3 * *step;
		return;
	case GGML_Q4_K: case GGML_Q5_K:
		j = v / 32;
		if (j < 4) {
			sc = b[4 + j] & 63;
			mn = b[8 + j] & 63;
		} else {
			sc = (b[8 + j] & 15) | (b[j] >> 6) << 4;
			mn = (b[8 + j] >> 4) | (b[4 + j] >> 6) << 4;
		}
		*step = get_half(b) * (float)sc;
		*lo = -(get_half(b + 2) * (float)mn);
		*hi = *step * (t == GGML_Q4_K ? 15 : 31) + *lo;
		return;
	case GGML_Q6_K:
		d = get_half(b + 208);
		*step = d * (float)(int8_t)b[192 + v / 16];
		*lo = -32 * *step;
		*hi = 31 * *step;
		return;
	default:
		fixture("gq_bound: no grid for the type");
	}
}

void gq_bound(uint32_t t, const unsigned char *block, const float *x, float *bound)
{
	size_t bv = ggml_block_values(t);
	for (size_t v = 0; v < bv; v++) {
		if (t == GGML_F32) {
			bound[v] = 0;
		} else if (t == GGML_F16 || t == GGML_BF16) {
			float r = t == GGML_F16 ? 0x1p-11f : 0x1p-8f; /* half an ulp, relative */
			bound[v] = fabsf(x[v]) * r + (t == GGML_F16 ? 0x1p-25f : 0);
		} else {
			float step, lo, hi;
			grid_of(t, block, (int)v, &step, &lo, &hi);
			bound[v] = grid_bound(x[v], step, lo, hi);
		}
	}
}

/* ---------------------------------------------------------------- models */

const char *const ga_name[GA_N] = { "llama", "qwen2", "qwen3", "gpt2", "gptneox", "bert",
				    "gemma2", "gemma3", "olmo2", "phi3" };

bool ga_gqa(enum ga a)
{
	return a != GA_GPT2 && a != GA_NEOX && a != GA_BERT;
}

int ga_gemma_scale(enum ga a, int L, int C, int H, int D)
{
	return L == (a == GA_GEMMA3 ? 62 : 46) ? C / H : D;
}

bool ga_gemma_sliding(enum ga a, int l)
{
	int pattern = a == GA_GEMMA3 ? 6 : 2;
	return l % pattern < pattern - 1;
}

/* The switches of Gemma 2, Gemma 3 and OLMo-2 on the Llama shape, as far as
 * a GGUF file holds them: Gemma's scores at 1/sqrt(D), or 1/sqrt(C / H) at
 * the 27B models' layer counts (46, 62), caps 4 and 2 (Gemma 2) so that they act,
 * sliding layers over 4 keys by llama.cpp's pattern (2; Gemma 3: 6), tied;
 * Gemma 3's global layers on base 1000000 scaled linearly by 8, its
 * sliding ones on 10000; OLMo-2's base 500000, untied; Phi-3's LongRoPE
 * (Phi-3.5-mini's, over the first half of each head as Phi-4-mini turns
 * part of it) with an original context of 4, so that a longer pass takes
 * the long table, untied. */
static void ga_family(struct model_config *c, enum ga a)
{
	if (a == GA_PHI3) {
		c->rotary_dims = cfg_d_head(c) / 2;
		c->rope_scaling = ROPE_SCALE_LONGROPE;
		c->rope_orig_context = 4;
		c->rope_attn_factor = (float)sqrt(1.0 + log(c->context / 4.0) / log(4.0));
		for (int i = 0; i < c->rotary_dims / 2; i++) {
			c->rope_short[i] = 1.0f + 0.25f * (float)i;
			c->rope_long[i] = 1.5f + 6.0f * (float)(i * i);
		}
		return;
	}
	if (a == GA_OLMO2) {
		c->sandwich = c->post_only = c->qk_norm = c->qk_norm_whole = true;
		c->rope_theta = 500000.0f;
		return;
	}
	c->mlp = MLP_GEGLU;
	c->tied = true;
	c->sandwich = true;
	c->emb_scale = (float)sqrt((double)c->d_model);
	if (a == GA_GEMMA2) {
		c->attn_softcap = 4.0f;
		c->final_softcap = 2.0f;
	}
	c->local_window = 4;
	for (int l = 0; l < c->n_layer; l++)
		cfg_set_local(c, l, ga_gemma_sliding(a, l));
	int D = cfg_d_head(c), dim = ga_gemma_scale(a, c->n_layer, c->d_model, c->n_head, D);
	c->attn_scale_dim = dim == D ? 0 : dim;
	if (a == GA_GEMMA3) {
		c->qk_norm = true;
		c->rope_theta = 1e6f;
		c->rope_scaling = ROPE_SCALE_LINEAR;
		c->rope_factor = 8.0f;
		c->rope_local_theta = 10000.0f;
	}
}

struct model *ga_model(enum ga a, int V, int L, int C, int F, int H, int K, int S,
		       uint64_t seed)
{
	return ga_model_hd(a, V, L, C, F, H, K, 0, S, seed);
}

struct model *ga_model_hd(enum ga a, int V, int L, int C, int F, int H, int K, int D, int S,
			  uint64_t seed)
{
	struct model_config c;
	struct err e;
	config_default(&c);
	c.vocab_size = V;
	c.n_layer = L;
	c.d_model = C;
	c.d_ff = F;
	c.n_head = H;
	bool llama = ga_gqa(a);
	c.n_kv_head = llama ? K : H;
	c.head_dim = D;
	c.context = S;
	c.tied = a == GA_GPT2;
	if (llama) {
		c.norm = NORM_RMS;
		c.norm_eps = 1e-6f;
		c.pos = POS_ROPE;
		c.mlp = MLP_SWIGLU;
		c.bias = a == GA_QWEN2;
		c.qk_norm = a == GA_QWEN3;
		if (a == GA_GEMMA2 || a == GA_GEMMA3 || a == GA_OLMO2 || a == GA_PHI3)
			ga_family(&c, a);
	} else if (a == GA_NEOX) {
		c.pos = POS_ROPE;
		c.rotary_dims = C / H / 2;
		c.mlp = MLP_GELU_EXACT;
		c.parallel = true;
	} else if (a == GA_BERT) {
		c.norm_eps = 1e-12f;
		c.placement = PLACE_POST;
		c.mlp = MLP_GELU_EXACT;
		c.mask = MASK_NONE;
		c.emb_norm = true;
		c.head = HEAD_NONE;
		c.tied = true;
	}
	struct model *m = model_new(&c, &e);
	if (!m)
		fixture(e.msg);
	model_init_random(m, seed);
	struct rng r;
	rng_seed(&r, seed + 1);
	for (size_t i = 0; i < m->n_params; i++) /* weights far from their init */
		m->params[i] += 0.05f * rng_normal(&r);
	if (a == GA_QWEN2) /* biases on Q, K and V only */
		for (int i = P_ATTPROJB; i <= P_FCPROJB; i++)
			if (i != P_LN2W && i != P_LN2B && i != P_FCW && i != P_FCPROJW && m->p[i])
				memset(m->p[i], 0, m->psize[i] * sizeof(float));
	m->name = xstrdup("ref");
	return m;
}

/* Metadata of the shape, as the converter writes it for architecture a. */
static void ga_meta(struct gw *w, const struct model_config *c, enum ga a)
{
	char k[128];
	const char *n = ga_name[a];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", n, s), k)
	gw_str(w, "general.architecture", n);
	gw_str(w, "general.name", "attnscope test model");
	gw_u32(w, KEY("block_count"), (uint32_t)c->n_layer);
	gw_u32(w, KEY("context_length"), (uint32_t)c->context);
	gw_u32(w, KEY("embedding_length"), (uint32_t)c->d_model);
	gw_u32(w, KEY("feed_forward_length"), (uint32_t)c->d_ff);
	gw_u32(w, KEY("attention.head_count"), (uint32_t)c->n_head);
	if (c->head_dim) { /* each head's width apart from embedding_length / head_count */
		gw_u32(w, KEY("attention.key_length"), (uint32_t)c->head_dim);
		gw_u32(w, KEY("attention.value_length"), (uint32_t)c->head_dim);
	}
	/* Qwen3's and Gemma's config.json always have head_dim */
	if ((a == GA_QWEN3 || a == GA_GEMMA2 || a == GA_GEMMA3) && !c->head_dim) {
		gw_u32(w, KEY("attention.key_length"), (uint32_t)cfg_d_head(c));
		gw_u32(w, KEY("attention.value_length"), (uint32_t)cfg_d_head(c));
	}
	if (ga_gqa(a)) {
		gw_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->n_kv_head);
		gw_f32(w, KEY("attention.layer_norm_rms_epsilon"), c->norm_eps);
		if (a != GA_GEMMA2) /* Gemma 2's converter writes no RoPE key (10000 by default) */
			gw_f32(w, KEY("rope.freq_base"), c->rope_theta);
		/* Qwen3's, Gemma's, OLMo-2's write none */
		if (a == GA_LLAMA || a == GA_QWEN2 || a == GA_PHI3)
			gw_u32(w, KEY("rope.dimension_count"), (uint32_t)cfg_rotary_dims(c));
	} else {
		gw_f32(w, KEY("attention.layer_norm_epsilon"), c->norm_eps);
	}
	if (a == GA_NEOX) {
		gw_u32(w, KEY("rope.dimension_count"), (uint32_t)cfg_rotary_dims(c));
		gw_bool(w, KEY("use_parallel_residual"), c->parallel);
	}
	if (a == GA_BERT) {
		gw_bool(w, KEY("attention.causal"), false);
		gw_u32(w, KEY("pooling_type"), 1);
	}
	if (a == GA_GEMMA2) { /* the converter's Gemma 2 writes all three */
		gw_f32(w, KEY("attn_logit_softcapping"), c->attn_softcap);
		gw_f32(w, KEY("final_logit_softcapping"), c->final_softcap);
		gw_u32(w, KEY("attention.sliding_window"), (uint32_t)c->local_window);
	}
	if (a == GA_GEMMA3) { /* its Gemma 3 writes what the config has */
		if (c->final_softcap > 0)
			gw_f32(w, KEY("final_logit_softcapping"), c->final_softcap);
		if (c->local_window)
			gw_u32(w, KEY("attention.sliding_window"), (uint32_t)c->local_window);
		if (c->rope_scaling == ROPE_SCALE_LINEAR) {
			gw_str(w, KEY("rope.scaling.type"), "linear");
			gw_f32(w, KEY("rope.scaling.factor"), c->rope_factor);
		}
	}
	if (a == GA_PHI3) { /* Phi3MiniModel's: the window 0 for none, the original context always */
		gw_u32(w, KEY("attention.sliding_window"), (uint32_t)c->local_window);
		gw_u32(w, KEY("rope.scaling.original_context_length"),
		       (uint32_t)(c->rope_scaling == ROPE_SCALE_LONGROPE ? c->rope_orig_context
									  : c->context));
		if (c->rope_scaling == ROPE_SCALE_LONGROPE)
			gw_f32(w, KEY("rope.scaling.attn_factor"), c->rope_attn_factor);
	}
#undef KEY
}

const char *ga_unheld(const struct model_config *c, enum ga a)
{
	bool g = a == GA_GEMMA2 || a == GA_GEMMA3, whole = a == GA_OLMO2;
	if (c->qk_norm != (a == GA_QWEN3 || a == GA_GEMMA3 || whole) || c->qk_norm_whole != whole)
		return "its q/k norm is not the architecture's (Qwen3's and Gemma 3's per head, "
		       "OLMo-2's over the whole projections, none for the others)";
	if (c->sandwich != (g || whole) || c->post_only != whole)
		return "its norms around the sub-blocks are not the architecture's (Gemma's sandwich, "
		       "OLMo-2's after only)";
	if (a == GA_PHI3) {
		for (int l = 1; l < c->n_layer; l++)
			if (cfg_layer_local(c, l) != cfg_layer_local(c, 0))
				return "some of its layers slide and some do not (Phi-3's window is on every "
				       "layer or none)";
		if (c->bias || c->mlp != MLP_SWIGLU ||
		    (c->rope_scaling != ROPE_SCALE_NONE && c->rope_scaling != ROPE_SCALE_LONGROPE))
			return "it has biases, an MLP other than SwiGLU, or RoPE scaling other than "
			       "LongRoPE (Phi-3's are none, SwiGLU and LongRoPE)";
	}
	if (!g)
		return NULL;
	int D = cfg_d_head(c);
	if ((c->attn_scale_dim ? c->attn_scale_dim : D) !=
	    ga_gemma_scale(a, c->n_layer, c->d_model, c->n_head, D))
		return "its query_pre_attn_scalar is not what llama.cpp derives (head_dim, or hidden / "
		       "heads for the 27B layer counts)";
	for (int l = 0; c->local_window && l < c->n_layer; l++)
		if (cfg_layer_local(c, l) != ga_gemma_sliding(a, l))
			return "its sliding layers are not llama.cpp's (every layer l with l % 2 < 1 for "
			       "Gemma 2, l % 6 < 5 for Gemma 3)";
	if (!c->tied || (a == GA_GEMMA2 && c->rope_theta != 10000.0f) ||
	    (a == GA_GEMMA3 && (c->attn_softcap > 0 || c->rope_scaling == ROPE_SCALE_LLAMA3 ||
				(c->local_window && c->rope_local_theta != 10000.0f))))
		return "it is untied, or its RoPE or caps are not what the converter writes for the "
		       "architecture";
	return NULL;
}

/* blk.L.NAME from engine rows [r0, r0 + rows) of p (cols wide). */
static void blk(struct gw *w, int l, const char *name, uint32_t type, size_t rows, size_t cols,
		const float *p)
{
	char n[96];
	snprintf(n, sizeof n, "blk.%d.%s", l, name);
	gw_tensor(w, n, type, rows, cols, p);
}

/* A layer's Q and K rows in rotate-half order, as Qwen2's, Qwen3's and NeoX's
 * files hold them ([q; k; v] of rows x cols, cols 1 for a bias). */
static float *rotated(const struct model_config *c, const float *w, size_t cols)
{
	int H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), R = cfg_rotary_dims(c);
	size_t rows = (size_t)cfg_qkv_rows(c, K), qk = (size_t)(H + K) * D;
	float *o = xmalloc(rows * cols * sizeof *o);
	memcpy(o, w, rows * cols * sizeof *o);
	for (size_t r = 0; r < qk; r++) {
		size_t h0 = r < (size_t)H * D ? 0 : (size_t)H * D;
		memcpy(o + r * cols, w + (h0 + (size_t)neox_rope_row((int)(r - h0), D, R)) * cols,
		       cols * sizeof *o);
	}
	return o;
}

/* Layer l's q/k norm scales in rotate-half order as HF's q_norm / k_norm
 * hold them: one head's D each (Qwen3, Gemma 3), or OLMo-2's H * D and
 * K * D over the whole projections (each head's D rotated as its rows). */
static void ga_qk_norm(struct gw *w, const struct model *m, int l)
{
	const struct model_config *c = &m->cfg;
	int D = cfg_d_head(c), R = cfg_rotary_dims(c);
	int n[2] = { D, D };
	if (c->qk_norm_whole) {
		n[0] = c->n_head * D;
		n[1] = c->n_kv_head * D;
	}
	float *o = xmalloc((size_t)n[0] * sizeof *o);
	static const char *const name[2] = { "attn_q_norm.weight", "attn_k_norm.weight" };
	static const enum param_id id[2] = { P_QNORMW, P_KNORMW };
	for (int i = 0; i < 2; i++) {
		const float *s = m->p[id[i]] + (size_t)l * (size_t)n[i];
		for (int r = 0; r < n[i]; r++)
			o[r] = s[neox_rope_row(r, D, R)];
		blk(w, l, name[i], 0, 0, (size_t)n[i], o);
	}
	free(o);
}

static void ga_layer(struct gw *w, const struct model *m, enum ga a, int l, uint32_t ty)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, D = (size_t)cfg_d_head(c);
	size_t H = (size_t)c->n_head, K = (size_t)c->n_kv_head, QKV = (H + 2 * K) * D;
	const float *qkv = m->p[P_QKVW] + l * QKV * C, *qb = c->bias ? m->p[P_QKVB] + l * QKV : NULL;
	bool rot = a != GA_LLAMA && c->pos == POS_ROPE, ln = c->norm == NORM_LAYER;
	bool gated = c->mlp == MLP_SWIGLU || c->mlp == MLP_GEGLU;
	float *rw = rot ? rotated(c, qkv, C) : NULL, *rb = rot && qb ? rotated(c, qb, 1) : NULL;
	const float *wq = rw ? rw : qkv, *bq = rb ? rb : qb;
#define AT(id, n) (m->p[id] + (size_t)l * (n))
	if (a == GA_BERT) {
		blk(w, l, "attn_output_norm.weight", 0, 0, C, AT(P_LN1W, C));
		blk(w, l, "attn_output_norm.bias", 0, 0, C, AT(P_LN1B, C));
		blk(w, l, "layer_output_norm.weight", 0, 0, C, AT(P_LN2W, C));
		blk(w, l, "layer_output_norm.bias", 0, 0, C, AT(P_LN2B, C));
	} else if (!c->post_only) { /* Gemma's ffn_norm is its pre_feedforward_layernorm */
		blk(w, l, "attn_norm.weight", 0, 0, C, AT(P_LN1W, C));
		blk(w, l, "ffn_norm.weight", 0, 0, C, AT(P_LN2W, C));
		if (ln) {
			blk(w, l, "attn_norm.bias", 0, 0, C, AT(P_LN1B, C));
			blk(w, l, "ffn_norm.bias", 0, 0, C, AT(P_LN2B, C));
		}
	}
	if (c->sandwich) { /* the scales as stored: Gemma's converter has added its 1 */
		blk(w, l, "post_attention_norm.weight", 0, 0, C, AT(P_ATTPOSTW, C));
		blk(w, l, "post_ffw_norm.weight", 0, 0, C, AT(P_MLPPOSTW, C));
	}
	if (a == GA_GPT2 || a == GA_NEOX || a == GA_PHI3) {
		blk(w, l, "attn_qkv.weight", ty, QKV, C, wq);
		if (bq)
			blk(w, l, "attn_qkv.bias", 0, 0, QKV, bq);
	} else {
		blk(w, l, "attn_q.weight", ty, H * D, C, wq);
		blk(w, l, "attn_k.weight", ty, K * D, C, wq + H * D * C);
		blk(w, l, "attn_v.weight", ty, K * D, C, wq + (H + K) * D * C);
		if (bq) {
			blk(w, l, "attn_q.bias", 0, 0, H * D, bq);
			blk(w, l, "attn_k.bias", 0, 0, K * D, bq + H * D);
			blk(w, l, "attn_v.bias", 0, 0, K * D, bq + (H + K) * D);
		}
	}
	if (c->qk_norm)
		ga_qk_norm(w, m, l);
	blk(w, l, "attn_output.weight", ty, C, H * D, AT(P_ATTPROJW, C * H * D));
	if (c->bias && a != GA_QWEN2)
		blk(w, l, "attn_output.bias", 0, 0, C, AT(P_ATTPROJB, C));
	if (a == GA_PHI3) { /* gate_up_proj: [gate; up] in one tensor */
		blk(w, l, "ffn_up.weight", ty, 2 * F, C, AT(P_FCW, 2 * F * C));
	} else if (gated) {
		blk(w, l, "ffn_gate.weight", ty, F, C, AT(P_FCW, 2 * F * C));
		blk(w, l, "ffn_up.weight", ty, F, C, AT(P_FCW, 2 * F * C) + F * C);
	} else {
		blk(w, l, "ffn_up.weight", ty, F, C, AT(P_FCW, F * C));
		blk(w, l, "ffn_up.bias", 0, 0, F, AT(P_FCB, F));
	}
	blk(w, l, "ffn_down.weight", ty, C, F, AT(P_FCPROJW, C * F));
	if (!gated)
		blk(w, l, "ffn_down.bias", 0, 0, C, AT(P_FCPROJB, C));
#undef AT
	free(rw);
	free(rb);
}

/* Llama 3.1's scaling as llama.cpp's converter writes it for a llama
 * file: one divisor per pair, computed from the rule's parameters
 * (factor, low and high frequency factors, original context) on the
 * unscaled frequencies theta^(-2i/R), in the tensor rope_freqs.weight. */
static void llama3_rope_freqs(struct gw *w, const struct model_config *c)
{
	int R = cfg_rotary_dims(c);
	float f[CFG_MAX_ROPE_PAIRS];
	double n = c->rope_orig_context, lo = c->rope_low_freq, hi = c->rope_high_freq;
	double k = c->rope_factor, lo_wave = n / lo, hi_wave = n / hi;
	for (int i = 0; i < R / 2; i++) {
		double freq = 1.0 / pow((double)c->rope_theta, 2.0 * i / R);
		double wave = 2.0 * 3.14159265358979323846 / freq;
		if (wave < hi_wave)
			f[i] = 1.0f;
		else if (wave > lo_wave)
			f[i] = (float)k;
		else {
			double s = (n / wave - lo) / (hi - lo);
			f[i] = (float)(1.0 / ((1.0 - s) / k + s));
		}
	}
	gw_tensor(w, "rope_freqs.weight", GGML_F32, 0, (size_t)R / 2, f);
}

void ga_write_model(struct gw *w, const struct model *m, enum ga a, uint32_t type)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, V = (size_t)c->vocab_size, S = (size_t)c->context;
	const char *why = ga_unheld(c, a);
	if (why)
		fixture(why);
	ga_meta(w, c, a);
	gw_tensor(w, "token_embd.weight", type, V, C, m->p[P_WTE]);
	if (c->pos == POS_LEARNED)
		gw_tensor(w, "position_embd.weight", type, S, C, m->p[P_WPE]);
	if (a == GA_BERT) { /* type 0 zero, so the folded positions stay exact */
		float *types = xcalloc(2 * C, sizeof *types);
		for (size_t j = 0; j < C; j++)
			types[C + j] = 0.01f * (float)(j % 7);
		gw_tensor(w, "token_types.weight", GGML_F32, 2, C, types);
		free(types);
		gw_tensor(w, "token_embd_norm.weight", 0, 0, C, m->p[P_LNEW]);
		gw_tensor(w, "token_embd_norm.bias", 0, 0, C, m->p[P_LNEB]);
	}
	for (int l = 0; l < c->n_layer; l++)
		ga_layer(w, m, a, l, type);
	if (a != GA_BERT) {
		gw_tensor(w, "output_norm.weight", 0, 0, C, m->p[P_LNFW]);
		if (c->norm == NORM_LAYER)
			gw_tensor(w, "output_norm.bias", 0, 0, C, m->p[P_LNFB]);
	}
	if (!c->tied)
		gw_tensor(w, "output.weight", type, V, C, m->p[P_LMHEAD]);
	if (a == GA_LLAMA && c->rope_scaling == ROPE_SCALE_LLAMA3)
		llama3_rope_freqs(w, c);
	if (a == GA_PHI3 && c->rope_scaling == ROPE_SCALE_LONGROPE) {
		size_t n = (size_t)cfg_rotary_dims(c) / 2;
		gw_tensor(w, "rope_factors_long.weight", GGML_F32, 0, n, c->rope_long);
		gw_tensor(w, "rope_factors_short.weight", GGML_F32, 0, n, c->rope_short);
	}
}

/* ------------------------------------------------------------ tokenizers */

/* Tokens by id from a vocab object, with room for n ids (gaps: NULL). */
static char **tokens_of(json_t *vocab, size_t n)
{
	char **tok = xcalloc(n, sizeof *tok);
	const char *k;
	json_t *v;
	json_object_foreach(vocab, k, v) {
		json_int_t id = json_integer_value(v);
		if (id >= 0 && (size_t)id < n)
			tok[id] = (char *)k;
	}
	return tok;
}

static size_t id_count(json_t *vocab, json_t *added)
{
	size_t n = 0, i;
	const char *k;
	json_t *v;
	json_object_foreach(vocab, k, v)
		n = (size_t)json_integer_value(v) + 1 > n ? (size_t)json_integer_value(v) + 1 : n;
	json_array_foreach(added, i, v) {
		size_t id = (size_t)json_integer_value(json_object_get(v, "id"));
		n = id + 1 > n ? id + 1 : n;
	}
	return n;
}

/* Merges as "a b" strings from merges.txt lines or tokenizer.json's list. */
static void put_merges(struct gw *w, json_t *list)
{
	size_t n = json_array_size(list), i;
	char **m = xmalloc((n ? n : 1) * sizeof *m);
	json_t *x;
	json_array_foreach(list, i, x) {
		if (json_is_string(x)) {
			m[i] = xstrdup(json_string_value(x));
		} else {
			const char *a = json_string_value(json_array_get(x, 0));
			const char *b = json_string_value(json_array_get(x, 1));
			m[i] = xmalloc(strlen(a) + strlen(b) + 2);
			sprintf(m[i], "%s %s", a, b);
		}
	}
	gw_strs(w, "tokenizer.ggml.merges", m, NULL, n);
	for (i = 0; i < n; i++)
		free(m[i]);
	free(m);
}

int gt_gpt2_dir(struct gw *w, const char *dir)
{
	return gt_gpt2_dir_padded(w, dir, 0);
}

int gt_gpt2_dir_padded(struct gw *w, const char *dir, size_t pad_to)
{
	char p[4096];
	struct err e;
	size_t len;
	snprintf(p, sizeof p, "%s/vocab.json", dir);
	json_t *vocab = json_load_file(p, 0, NULL), *merges = json_array();
	snprintf(p, sizeof p, "%s/merges.txt", dir);
	char *text = read_file(p, &len, &e), *save = NULL;
	if (!vocab || !text) {
		fprintf(stderr, "gt_gpt2_dir: cannot read %s\n", dir);
		json_decref(vocab);
		json_decref(merges);
		free(text);
		return -1;
	}
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, "#version", 8))
			json_array_append_new(merges, json_string(l));
	free(text);
	size_t nv = json_object_size(vocab), n = pad_to > nv ? pad_to : nv;
	char **tok = tokens_of(vocab, nv), **pad = NULL;
	int32_t *type = xmalloc(n * sizeof *type);
	int eot = -1;
	for (size_t i = 0; i < nv; i++) {
		if (!tok[i])
			fixture("gt_gpt2_dir: a gap in vocab.json's ids");
		type[i] = strcmp(tok[i], "<|endoftext|>") ? 1 : 3;
		eot = type[i] == 3 ? (int)i : eot;
	}
	if (n > nv) { /* the converter's [PADi] rows past the tokenizer, unused (5) */
		tok = xrealloc(tok, n * sizeof *tok);
		pad = xmalloc((n - nv) * sizeof *pad);
		for (size_t i = nv; i < n; i++) {
			char name[32];
			snprintf(name, sizeof name, "[PAD%zu]", i);
			tok[i] = pad[i - nv] = xstrdup(name);
			type[i] = 5;
		}
	}
	gw_str(w, "tokenizer.ggml.model", "gpt2");
	gw_str(w, "tokenizer.ggml.pre", "gpt-2");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, n);
	put_merges(w, merges);
	if (eot >= 0) {
		gw_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)eot);
		gw_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eot);
	}
	for (size_t i = 0; pad && i < n - nv; i++)
		free(pad[i]);
	free(pad);
	free(tok);
	free(type);
	json_decref(vocab);
	json_decref(merges);
	return 0;
}

int gt_hf_json(struct gw *w, const char *json, size_t len, const char *pre, const char *bos)
{
	json_t *root = json_loadb(json, len, 0, NULL), *model = json_object_get(root, "model");
	json_t *vocab = json_object_get(model, "vocab"), *added = json_object_get(root, "added_tokens");
	if (!json_is_object(vocab))
		return fprintf(stderr, "gt_hf_json: no model.vocab\n"), json_decref(root), -1;
	size_t n = id_count(vocab, added), i;
	char **tok = tokens_of(vocab, n);
	int32_t *type = xmalloc(n * sizeof *type);
	json_t *a;
	for (i = 0; i < n; i++)
		type[i] = 1;
	json_array_foreach(added, i, a) {
		size_t id = (size_t)json_integer_value(json_object_get(a, "id"));
		tok[id] = (char *)json_string_value(json_object_get(a, "content"));
		type[id] = json_is_true(json_object_get(a, "special")) ? 3 : 4;
	}
	int bos_id = -1;
	for (i = 0; i < n; i++) {
		if (!tok[i])
			fixture("gt_hf_json: a gap in the ids");
		if (bos && !strcmp(tok[i], bos))
			bos_id = (int)i;
	}
	gw_str(w, "tokenizer.ggml.model", "gpt2");
	gw_str(w, "tokenizer.ggml.pre", pre);
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, n);
	put_merges(w, json_object_get(model, "merges"));
	if (bos_id >= 0)
		gw_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos_id);
	gw_bool(w, "tokenizer.ggml.add_bos_token", bos_id >= 0);
	free(tok);
	free(type);
	json_decref(root);
	return 0;
}

/* The piece merge x of tokenizer.json produces ("a b" or ["a", "b"]),
 * malloc'd, or NULL when it is neither. */
static char *merge_piece(json_t *x)
{
	const char *a, *b, *sp;
	size_t la;
	if (json_is_string(x)) {
		a = json_string_value(x);
		sp = strchr(a, ' ');
		if (!sp)
			return NULL;
		la = (size_t)(sp - a);
		b = sp + 1;
	} else {
		a = json_string_value(json_array_get(x, 0));
		b = json_string_value(json_array_get(x, 1));
		if (!a || !b)
			return NULL;
		la = strlen(a);
	}
	char *p = xmalloc(la + strlen(b) + 1);
	memcpy(p, a, la);
	strcpy(p + la, b);
	return p;
}

/* Each piece's score: -(rank of the first merge producing it); pieces no
 * merge produces (single characters) -(merges + 1), below every other. */
static float *rank_scores(json_t *vocab, json_t *merges, size_t n)
{
	size_t nm = json_array_size(merges), i;
	float *score = xmalloc(n * sizeof *score);
	bool *set = xcalloc(n, sizeof *set);
	json_t *x;
	for (i = 0; i < n; i++)
		score[i] = -(float)(nm + 1);
	json_array_foreach(merges, i, x) {
		char *p = merge_piece(x);
		json_t *id = p ? json_object_get(vocab, p) : NULL;
		json_int_t k = json_integer_value(id);
		if (id && k >= 0 && (size_t)k < n && !set[k]) {
			score[k] = -(float)i;
			set[k] = true;
		}
		free(p);
	}
	free(set);
	return score;
}

/* Replaces every U+2581 of s by a space, in place. */
static void spaces_of(char *s)
{
	char *o = s;
	for (const char *p = s; *p;)
		if (!strncmp(p, "\xe2\x96\x81", 3))
			*o++ = ' ', p += 3;
		else
			*o++ = *p++;
	*o = '\0';
}

int gt_spm_json(struct gw *w, const char *json, size_t len)
{
	json_t *root = json_loadb(json, len, 0, NULL), *model = json_object_get(root, "model");
	json_t *vocab = json_object_get(model, "vocab"), *added = json_object_get(root, "added_tokens");
	if (!json_is_object(vocab))
		return fprintf(stderr, "gt_spm_json: no model.vocab\n"), json_decref(root), -1;
	size_t n = id_count(vocab, added), i;
	char **tok = tokens_of(vocab, n);
	float *score = rank_scores(vocab, json_object_get(model, "merges"), n);
	int32_t *type = xmalloc(n * sizeof *type);
	json_t *a;
	for (i = 0; i < n; i++) {
		if (tok[i])
			tok[i] = xstrdup(tok[i]);
		type[i] = tok[i] && strlen(tok[i]) == 6 && !strncmp(tok[i], "<0x", 3) ? 6 : 1;
	}
	json_array_foreach(added, i, a) {
		size_t id = (size_t)json_integer_value(json_object_get(a, "id"));
		bool special = json_is_true(json_object_get(a, "special"));
		free(tok[id]);
		tok[id] = xstrdup(json_string_value(json_object_get(a, "content")));
		type[id] = !strcmp(tok[id], "<unk>") ? 2 : special ? 3 : 4;
		if (!special)
			spaces_of(tok[id]);
		score[id] = -1000;
	}
	int bos = -1, eos = -1, unk = -1;
	for (i = 0; i < n; i++) {
		if (!tok[i])
			fixture("gt_spm_json: a gap in the ids");
		bos = !strcmp(tok[i], "<bos>") ? (int)i : bos;
		eos = !strcmp(tok[i], "<eos>") ? (int)i : eos;
		unk = !strcmp(tok[i], "<unk>") ? (int)i : unk;
	}
	if (bos < 0 || eos < 0 || unk < 0)
		fixture("gt_spm_json: no <bos>, <eos> or <unk>");
	gw_str(w, "tokenizer.ggml.model", "llama");
	gw_str(w, "tokenizer.ggml.pre", "default");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, n);
	gw_f32s(w, "tokenizer.ggml.scores", score, n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, n);
	gw_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
	gw_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)unk);
	gw_bool(w, "tokenizer.ggml.add_bos_token", true);
	gw_bool(w, "tokenizer.ggml.add_space_prefix", false);
	for (i = 0; i < n; i++)
		free(tok[i]);
	free(tok);
	free(score);
	free(type);
	json_decref(root);
	return (int)n;
}

int gt_llama2c(struct gw *w, const char *path)
{
	struct err e;
	size_t len;
	unsigned char *b = (unsigned char *)read_file(path, &len, &e);
	if (!b)
		return fprintf(stderr, "gt_llama2c: %s\n", e.msg), -1;
	size_t n = 0, cap = 1024, at = 4;
	char **tok = xmalloc(cap * sizeof *tok);
	uint32_t *tl = xmalloc(cap * sizeof *tl);
	float *score = xmalloc(cap * sizeof *score);
	int32_t *type = xmalloc(cap * sizeof *type);
	while (at + 8 <= len) {
		if (n == cap) {
			cap *= 2;
			tok = xrealloc(tok, cap * sizeof *tok);
			tl = xrealloc(tl, cap * sizeof *tl);
			score = xrealloc(score, cap * sizeof *score);
			type = xrealloc(type, cap * sizeof *type);
		}
		int32_t l;
		memcpy(&score[n], b + at, 4);
		memcpy(&l, b + at + 4, 4);
		const char *p = (const char *)b + at + 8;
		char *t = xmalloc(3 * (size_t)l + 1), *o = t;
		if (l == 5 && !memcmp(p, "\n<s>\n", 5))
			p += 1, l = 3;
		else if (l == 6 && !memcmp(p, "\n</s>\n", 6))
			p += 1, l = 4;
		for (int32_t i = 0; i < l; i++)
			o = p[i] == ' ' ? (memcpy(o, "\xe2\x96\x81", 3), o + 3) : (*o = p[i], o + 1);
		tok[n] = t;
		tl[n] = (uint32_t)(o - t);
		bool ctl = (l == 3 && !memcmp(p, "<s>", 3)) || (l == 4 && !memcmp(p, "</s>", 4));
		type[n] = ctl ? 3 : l == 5 && !memcmp(p, "<unk>", 5) ? 2
			  : l == 6 && !memcmp(p, "<0x", 3) ? 6 : 1;
		at += 8 + (size_t)(l + (ctl ? 2 : 0));
		n++;
	}
	gw_str(w, "tokenizer.ggml.model", "llama");
	gw_str(w, "tokenizer.ggml.pre", "default");
	gw_strs(w, "tokenizer.ggml.tokens", tok, tl, n);
	gw_f32s(w, "tokenizer.ggml.scores", score, n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, n);
	gw_u32(w, "tokenizer.ggml.bos_token_id", 1);
	gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	gw_bool(w, "tokenizer.ggml.add_bos_token", true);
	gw_bool(w, "tokenizer.ggml.add_space_prefix", true);
	for (size_t i = 0; i < n; i++)
		free(tok[i]);
	free(tok);
	free(tl);
	free(score);
	free(type);
	free(b);
	return 0;
}

int gt_wordpiece_json(struct gw *w, const char *json, size_t len)
{
	json_t *root = json_loadb(json, len, 0, NULL), *model = json_object_get(root, "model");
	json_t *vocab = json_object_get(model, "vocab"), *added = json_object_get(root, "added_tokens");
	if (!json_is_object(vocab))
		return fprintf(stderr, "gt_wordpiece_json: no model.vocab\n"), json_decref(root), -1;
	size_t n = id_count(vocab, added), i;
	char **tok = tokens_of(vocab, n), **ph = xmalloc(n * sizeof *ph);
	int32_t *type = xmalloc(n * sizeof *type);
	json_t *a;
	for (i = 0; i < n; i++)
		type[i] = 1;
	json_array_foreach(added, i, a)
		if (json_is_true(json_object_get(a, "special")))
			type[json_integer_value(json_object_get(a, "id"))] = 3;
	static const char *const special[] = { "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]" };
	static const char *const keys[] = { "cls_token_id", "seperator_token_id",
					    "unknown_token_id", "padding_token_id", "mask_token_id" };
	for (i = 0; i < n; i++) { /* the converter's phantom space */
		if (!tok[i])
			fixture("gt_wordpiece_json: a gap in the ids");
		ph[i] = xmalloc(strlen(tok[i]) + 4);
		if (type[i] == 3)
			strcpy(ph[i], tok[i]);
		else if (!strncmp(tok[i], "##", 2))
			strcpy(ph[i], tok[i] + 2);
		else
			sprintf(ph[i], "\xe2\x96\x81%s", tok[i]);
		for (int s = 0; s < 5; s++)
			if (!strcmp(tok[i], special[s])) {
				char k[96];
				snprintf(k, sizeof k, "tokenizer.ggml.%s", keys[s]);
				gw_u32(w, k, (uint32_t)i);
			}
	}
	gw_str(w, "tokenizer.ggml.model", "bert");
	gw_str(w, "tokenizer.ggml.pre", "default");
	gw_strs(w, "tokenizer.ggml.tokens", ph, NULL, n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, n);
	for (i = 0; i < n; i++)
		free(ph[i]);
	free(ph);
	free(tok);
	free(type);
	json_decref(root);
	return 0;
}

/* -------------------------------------------------- a BF16 checkpoint */

int gw_checkpoint_bf16(struct model *m, const char *path)
{
	struct err e;
	for (size_t i = 0; i < m->n_params; i++) {
		uint16_t h;
		gq_quantize(GGML_BF16, m->params + i, (unsigned char *)&h, 1);
		m->params[i] = bf16_to_f32(h);
	}
	if (checkpoint_save(m, path, CKPT_F32, &e))
		return fprintf(stderr, "gw_checkpoint_bf16: %s\n", e.msg), -1;
	/* the F32 file again, each tensor's data as BF16 */
	size_t len;
	unsigned char *f = (unsigned char *)read_file(path, &len, &e);
	if (!f)
		return -1;
	uint64_t hl;
	memcpy(&hl, f, 8);
	json_t *hdr = json_loadb((const char *)f + 8, (size_t)hl, 0, NULL), *t;
	const char *name;
	struct buf data = { 0 };
	json_object_foreach(hdr, name, t) {
		json_t *off = json_object_get(t, "data_offsets");
		if (!off)
			continue;
		uint64_t a = (uint64_t)json_integer_value(json_array_get(off, 0));
		uint64_t b = (uint64_t)json_integer_value(json_array_get(off, 1));
		json_array_set_new(off, 0, json_integer((json_int_t)data.n));
		for (uint64_t i = a; i < b; i += 4) {
			unsigned char h[2];
			gq_quantize(GGML_BF16, (const float *)(f + 8 + hl + i), h, 1);
			put(&data, h, 2);
		}
		json_array_set_new(off, 1, json_integer((json_int_t)data.n));
		json_object_set_new(t, "dtype", json_string("BF16"));
	}
	char *h = json_dumps(hdr, JSON_COMPACT);
	uint64_t n = strlen(h);
	FILE *o = fopen(path, "wb");
	int ok = o && fwrite(&n, 8, 1, o) == 1 && fwrite(h, 1, n, o) == n &&
		 fwrite(data.p, 1, data.n, o) == data.n;
	if (o && fclose(o) != 0)
		ok = 0;
	free(h);
	free(data.p);
	free(f);
	json_decref(hdr);
	return ok ? 0 : -1;
}
