/*
 * optim.c — learning-rate schedule, gradient norms and clipping, AdamW, and
 * the file holding the state of an interrupted run (FILE.optim).
 */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

bool optim_param_decays(enum param_id i)
{
	switch (i) {
	case P_WTE: case P_WPE: case P_QKVW: case P_ATTPROJW:
	case P_FCW: case P_FCPROJW: case P_LMHEAD:
		return true;
	default:
		return false;
	}
}

void adamw_init(struct adamw *a, const struct model *m, float weight_decay)
{
	memset(a, 0, sizeof *a);
	a->beta1 = 0.9f;
	a->beta2 = 0.95f;
	a->eps = 1e-8f;
	a->weight_decay = weight_decay;
	a->n = m->n_params;
	a->m = xmalloc_aligned(a->n * sizeof(float));
	a->v = xmalloc_aligned(a->n * sizeof(float));
	memset(a->m, 0, a->n * sizeof(float));
	memset(a->v, 0, a->n * sizeof(float));
	for (int i = 0; i < N_PARAMS; i++)
		a->decay[i] = optim_param_decays((enum param_id)i);
}

void adamw_free(struct adamw *a)
{
	free(a->m);
	free(a->v);
	a->m = a->v = NULL;
}

void adamw_update(struct adamw *a, struct model *m, const float *g, float gscale, float lr)
{
	long t = a->step + 1;
	float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	float c1 = 1.0f / (1.0f - powf(b1, (float)t));
	float c2 = 1.0f / (1.0f - powf(b2, (float)t));
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		size_t off = (size_t)(m->p[i] - m->params);
		long n = (long)m->psize[i];
		float *p = m->p[i], *mm = a->m + off, *vv = a->v + off;
		const float *gg = g + off;
		float keep = a->decay[i] ? 1.0f - lr * a->weight_decay : 1.0f;
		for (long j = 0; j < n; j++) {
			float gj = gg[j] * gscale;
			float mj = b1 * mm[j] + (1.0f - b1) * gj;
			float vj = b2 * vv[j] + (1.0f - b2) * gj * gj;
			mm[j] = mj;
			vv[j] = vj;
			p[j] = p[j] * keep - lr * (mj * c1) / (sqrtf(vj * c2) + eps);
		}
	}
	a->step++;
}

float lr_schedule(long step, long total, long warmup, float peak, float min_frac)
{
	if (step < warmup)
		return peak * (float)(step + 1) / (float)warmup;
	float floor_lr = peak * min_frac;
	long span = total - warmup - 1;
	if (span <= 0)
		return peak;
	double progress = (double)(step - warmup) / (double)span;
	if (progress > 1.0)
		progress = 1.0;
	return floor_lr + (float)(0.5 * (1.0 + cos(3.14159265358979323846 * progress))) * (peak - floor_lr);
}

double grad_norms(const struct model *m, const float *g, float *layer_norms)
{
	int L = m->cfg.n_layer;
	double total = 0;
	double *layer = xcalloc((size_t)L, sizeof *layer);
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		const float *x = g + (m->p[i] - m->params);
		size_t n = m->psize[i];
		if (param_per_layer((enum param_id)i)) {
			size_t per = n / (size_t)L;
			for (int l = 0; l < L; l++) {
				double s = 0;
				const float *xl = x + (size_t)l * per;
				for (size_t j = 0; j < per; j++)
					s += (double)xl[j] * xl[j];
				layer[l] += s;
				total += s;
			}
		} else {
			double s = 0;
			for (size_t j = 0; j < n; j++)
				s += (double)x[j] * x[j];
			total += s;
		}
	}
	if (layer_norms)
		for (int l = 0; l < L; l++)
			layer_norms[l] = (float)sqrt(layer[l]);
	free(layer);
	return sqrt(total);
}

float clip_scale(double norm, float clip)
{
	if (clip <= 0.0f || !(norm > 0.0) || norm <= clip)
		return 1.0f;
	return (float)(clip / norm);
}

/* ------------------------------------------------------------ FILE.optim */

/* Growable byte buffer for building the file image. */
struct bytes {
	unsigned char *p;
	size_t n, cap;
};

static void by_put(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void by_u64(struct bytes *b, uint64_t x)
{
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)(x >> (8 * i));
	by_put(b, w, 8);
}

static void by_u32(struct bytes *b, uint32_t x)
{
	unsigned char w[4];
	for (int i = 0; i < 4; i++)
		w[i] = (unsigned char)(x >> (8 * i));
	by_put(b, w, 4);
}

static void by_f32s(struct bytes *b, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &x[i], 4);
		by_u32(b, u);
	}
}

int optim_file_write(const char *path, const struct optim_file *f, struct err *e)
{
	size_t P = f->n_params, jlen = strlen(f->json);
	struct bytes b = { 0 };
	uint64_t sec;
	memcpy(&sec, &f->seconds, 8);
	by_put(&b, OPTIM_FILE_MAGIC, 8);
	by_u32(&b, OPTIM_FILE_VERSION);
	by_u32(&b, f->n_layer);
	by_u64(&b, f->n_params);
	by_u64(&b, f->step);
	by_u64(&b, f->rng);
	by_u64(&b, f->tokens);
	by_u64(&b, f->data_bytes);
	by_u64(&b, f->data_hash);
	by_u64(&b, sec);
	by_u64(&b, f->hist_n);
	by_u64(&b, f->val_n);
	by_u64(&b, jlen);
	by_put(&b, f->json, jlen);
	by_f32s(&b, f->params, P);
	by_f32s(&b, f->m, P);
	by_f32s(&b, f->v, P);
	by_f32s(&b, f->hist, f->hist_n * (3 + (size_t)f->n_layer));
	by_f32s(&b, f->val, f->val_n * 2);
	by_u64(&b, dataset_fnv1a(b.p, b.n));
	int rc = write_file_atomic(path, b.p, b.n, e);
	free(b.p);
	return rc;
}

/* Reading cursor over a file image whose layout was checked against its
 * length before anything past the fixed header is read. */
struct cursor {
	const unsigned char *p;
	size_t at;
};

static uint64_t cu_u64(struct cursor *c)
{
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= (uint64_t)c->p[c->at + (size_t)i] << (8 * i);
	c->at += 8;
	return x;
}

static uint32_t cu_u32(struct cursor *c)
{
	uint32_t x = 0;
	for (int i = 0; i < 4; i++)
		x |= (uint32_t)c->p[c->at + (size_t)i] << (8 * i);
	c->at += 4;
	return x;
}

/* A new array of n floats read from the cursor. */
static float *cu_f32s(struct cursor *c, size_t n)
{
	float *x = xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		uint32_t u = cu_u32(c);
		memcpy(&x[i], &u, 4);
	}
	return x;
}

void optim_file_free(struct optim_file *f)
{
	free(f->json);
	free(f->params);
	free(f->m);
	free(f->v);
	free(f->hist);
	free(f->val);
	memset(f, 0, sizeof *f);
}

/* Size of the fixed header: magic, two u32 and ten u64. */
#define OPTIM_HEADER (8 + 2 * 4 + 10 * 8)

int optim_file_read(const char *path, struct optim_file *f, struct err *e)
{
	memset(f, 0, sizeof *f);
	if (file_refuse_special(path, false, "a regular file", e))
		return -1;
	size_t len;
	unsigned char *file = (unsigned char *)read_file(path, &len, e);
	if (!file)
		return -1;
	int rc = -1;
	struct cursor c = { file, 0 };
	if (len < OPTIM_HEADER + 8 || memcmp(file, OPTIM_FILE_MAGIC, 8) != 0) {
		err_set(e, "%s: not an attnscope optimizer state file", path);
		goto out;
	}
	c.at = len - 8;
	if (cu_u64(&c) != dataset_fnv1a(file, len - 8)) {
		err_set(e, "%s: checksum mismatch (the file is damaged or truncated)", path);
		goto out;
	}
	c.at = 8;
	uint32_t version = cu_u32(&c);
	if (version != OPTIM_FILE_VERSION) {
		err_set(e, "%s: version %u, this build reads version %u", path, version,
			OPTIM_FILE_VERSION);
		goto out;
	}
	f->n_layer = cu_u32(&c);
	f->n_params = cu_u64(&c);
	f->step = cu_u64(&c);
	f->rng = cu_u64(&c);
	f->tokens = cu_u64(&c);
	f->data_bytes = cu_u64(&c);
	f->data_hash = cu_u64(&c);
	uint64_t sec = cu_u64(&c);
	memcpy(&f->seconds, &sec, 8);
	f->hist_n = cu_u64(&c);
	f->val_n = cu_u64(&c);
	uint64_t jlen = cu_u64(&c);
	/* bounds that keep the size arithmetic below far from overflow */
	if (f->n_layer < 1 || f->n_layer > CFG_MAX_LAYERS || f->step > ((uint64_t)1 << 32) ||
	    f->hist_n != f->step || f->val_n > f->step + 1 || f->n_params < 1 ||
	    f->n_params > ((uint64_t)1 << 36) || jlen > len) {
		err_set(e, "%s: inconsistent header", path);
		goto out;
	}
	uint64_t body = jlen + 4 * (3 * f->n_params + f->hist_n * (3 + f->n_layer) + 2 * f->val_n);
	if (OPTIM_HEADER + body + 8 != len) {
		err_set(e, "%s: %zu bytes, but its header describes %llu", path, len,
			(unsigned long long)(OPTIM_HEADER + body + 8));
		goto out;
	}
	f->json = xstrndup((const char *)file + c.at, (size_t)jlen);
	c.at += (size_t)jlen;
	if (strlen(f->json) != jlen) {
		err_set(e, "%s: NUL byte in the run description", path);
		goto out;
	}
	size_t P = (size_t)f->n_params;
	f->params = cu_f32s(&c, P);
	f->m = cu_f32s(&c, P);
	f->v = cu_f32s(&c, P);
	f->hist = cu_f32s(&c, (size_t)f->hist_n * (3 + f->n_layer));
	f->val = cu_f32s(&c, (size_t)f->val_n * 2);
	for (size_t i = 0; i < P; i++)
		if (!isfinite(f->params[i]) || !isfinite(f->m[i]) || !(f->v[i] >= 0) ||
		    !isfinite(f->v[i])) {
			err_set(e, "%s: non-finite weight or moment at element %zu", path, i);
			goto out;
		}
	rc = 0;
out:
	free(file);
	if (rc)
		optim_file_free(f);
	return rc;
}
