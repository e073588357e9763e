/*
 * hf-shards.c — the weights of a Hugging Face directory: model.safetensors,
 * or the shards model.safetensors.index.json names, opened through the one
 * safetensors reader (safetensors.h) and read by name (loaders.h).
 *
 * Every Hugging Face family reads through these (hf-load.c, loader-hf*.c);
 * the row orders of the RoPE permutations are here too, as the GGUF
 * loader shares them.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "loaders.h"
#include "safetensors.h"

/* ------------------------------------------------------------ row orders */

int llama_rope_row(int r, int D)
{
	int i = r % D, head = r - i;
	return head + (i < D / 2 ? 2 * i : 2 * (i - D / 2) + 1);
}

int neox_rope_row(int r, int D, int R)
{
	int i = r % D, head = r - i;
	if (i >= R)
		return r;
	return head + (i < R / 2 ? 2 * i : 2 * (i - R / 2) + 1);
}

int neox_qkv_row(int r, int H, int D, int R)
{
	int h = r / (3 * D), part = r / D % 3, d = r % D;
	if (part == 2)
		return (2 * H + h) * D + d;
	return (part * H + h) * D + neox_rope_row(d, D, R);
}

/* ----------------------------------------------------------------- files */

/* 0 when no tensor is in two of the shards, else -1 + e naming it and both. */
static int check_twice(const struct ld_shards *s, struct err *e)
{
	for (int i = 1; i < s->n; i++)
		for (int j = 0; j < s->f[i].n; j++)
			for (int k = 0; k < i; k++)
				if (st_find(&s->f[k], s->f[i].t[j].name)) {
					const char *a = strrchr(s->path[k], '/'), *b = strrchr(s->path[i], '/');
					return err_set(e, "tensor \"%.60s\" is in two shards, %.80s and %.80s",
						       s->f[i].t[j].name, a ? a + 1 : s->path[k],
						       b ? b + 1 : s->path[i]);
				}
	return 0;
}

/* The index's root, or NULL + e: not JSON, not an object, no weight_map. */
static json_t *load_index(const char *idx, struct err *e)
{
	json_error_t jerr;
	json_t *root = ju_load_file(idx, JSON_REJECT_DUPLICATES, &jerr);
	if (!root && jerr.line == -1)
		err_set(e, "%s", jerr.text);
	else if (!root)
		err_set(e, "model.safetensors.index.json: invalid JSON (line %d, column %d: %.80s)",
			jerr.line, jerr.column, jerr.text);
	else if (!json_is_object(json_object_get(root, "weight_map")))
		err_set(e, "model.safetensors.index.json: no \"weight_map\" object");
	else
		return root;
	json_decref(root);
	return NULL;
}

/* Opens every shard the index's weight_map names, each once. */
static int open_index(const char *dir, const char *idx, struct ld_shards *s, struct err *e)
{
	static const struct st_checks checks = { .other_dtypes = true };
	json_t *root = load_index(idx, e), *map = json_object_get(root, "weight_map");
	const char *key;
	json_t *v;
	int rc = root ? 0 : -1;
	json_object_foreach(map, key, v) {
		if (rc || !json_is_string(v) || strchr(json_string_value(v), '/')) {
			rc = rc ? rc : err_set(e, "model.safetensors.index.json: \"%.60s\" names no "
					       "file beside it", key);
			break;
		}
		bool seen = false;
		char *path = ld_join(dir, json_string_value(v));
		for (int i = 0; i < s->n && !seen; i++)
			seen = !strcmp(s->path[i], path);
		if (!seen) {
			if (s->n == LD_MAX_SHARDS)
				rc = err_set(e, "more than %d shards", LD_MAX_SHARDS);
			else if (st_open(&s->f[s->n], path, &checks, e) != 0)
				rc = err_prefix(e, "%s", json_string_value(v));
			else
				s->path[s->n++] = xstrdup(path);
		}
		free(path);
	}
	json_decref(root);
	return rc ? rc : check_twice(s, e);
}

int ld_shards_open_file(const char *path, struct ld_shards *s, struct err *e)
{
	static const struct st_checks checks = { .other_dtypes = true };
	s->n = 0;
	if (st_open(&s->f[0], path, &checks, e) != 0) {
		const char *base = strrchr(path, '/');
		return err_prefix(e, "%s", base ? base + 1 : path);
	}
	s->path[0] = xstrdup(path);
	s->n = 1;
	return 0;
}

int ld_shards_open(const char *dir, struct ld_shards *s, struct err *e)
{
	s->n = 0;
	char *one = ld_join(dir, "model.safetensors");
	char *idx = ld_join(dir, "model.safetensors.index.json");
	char *pt = ld_join(dir, "pytorch_model.bin");
	int rc = -1;
	if (ld_is_file(one))
		rc = ld_shards_open_file(one, s, e);
	else if (ld_is_file(idx))
		rc = open_index(dir, idx, s, e);
	else if (ld_is_file(pt))
		err_set(e, "no model.safetensors (pytorch_model.bin is a pickle attnscope does not "
			"read; convert it to safetensors)");
	else
		err_set(e, "no model.safetensors or model.safetensors.index.json");
	free(one);
	free(idx);
	free(pt);
	if (rc)
		ld_shards_close(s);
	return rc;
}

void ld_shards_close(struct ld_shards *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->path[i]);
		st_close(&s->f[i]);
	}
	s->n = 0;
}

struct st_tensor *ld_shards_find(struct ld_shards *s, const char *name, struct st_file **in)
{
	for (int i = 0; i < s->n; i++) {
		struct st_tensor *t = st_find(&s->f[i], name);
		if (t) {
			*in = &s->f[i];
			return t;
		}
	}
	return NULL;
}

/* The tensor name shaped {d0, d1} (d1 = 0: 1-D) and its file in *in, or
 * NULL + e: missing, or another shape ("... but config.json needs ..."). */
static struct st_tensor *find_shaped(struct ld_shards *s, const char *name, uint64_t d0,
				     uint64_t d1, struct st_file **in, struct err *e)
{
	struct st_tensor *t = ld_shards_find(s, name, in);
	if (!t) {
		err_set(e, "missing tensor \"%s\"", name);
		return NULL;
	}
	uint64_t shape[2] = { d0, d1 };
	int nd = d1 ? 2 : 1;
	if (t->ndim != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1)) {
		char got[96], want[64];
		st_shape_str(got, sizeof got, t->shape, t->ndim);
		st_shape_str(want, sizeof want, shape, nd);
		err_set(e, "%s has shape %s, but config.json needs %s", name, got, want);
		return NULL;
	}
	return t;
}

int ld_shards_read(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1, float *dst,
		   struct err *e)
{
	struct st_file *f;
	struct st_tensor *t = find_shaped(s, name, d0, d1, &f, e);
	return t ? st_read(f, t, dst, e) : -1;
}

/* Bytes of the file read per block by ld_shards_read_t: a block and the
 * rows it is written to stay in the L2 cache. */
#define T_BLOCK_BYTES (256u << 10)

/* The transposed rows of one block: rows i0 .. i0+n-1 of a (d0, d1) matrix,
 * held in buf (n, d1), into columns i0.. of dst (d1, d0).  Sixteen rows of
 * dst at a time, so that the sixteen lines of each row of buf they read
 * are read from L1 while they last. */
static void transpose_block(float *dst, const float *buf, uint64_t i0, size_t n, uint64_t d0,
			    uint64_t d1)
{
	for (uint64_t o0 = 0; o0 < d1; o0 += 16) {
		uint64_t o1 = o0 + 16 < d1 ? o0 + 16 : d1;
		for (size_t i = 0; i < n; i++) {
			const float *row = buf + i * d1;
			for (uint64_t o = o0; o < o1; o++)
				dst[o * d0 + i0 + i] = row[o];
		}
	}
}

int ld_shards_read_t(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1,
		     float *dst, struct err *e)
{
	struct st_file *f;
	struct st_tensor *t = find_shaped(s, name, d0, d1, &f, e);
	if (!t)
		return -1;
	size_t rows = d1 ? T_BLOCK_BYTES / (d1 * sizeof(float)) : 1;
	rows = rows < 1 ? 1 : rows > d0 ? (size_t)d0 : rows;
	float *buf = xmalloc_aligned((rows ? rows : 1) * (d1 ? d1 : 1) * sizeof(float));
	int rc = 0;
	for (uint64_t i0 = 0; rc == 0 && i0 < d0; i0 += rows) {
		size_t n = d0 - i0 < rows ? (size_t)(d0 - i0) : rows;
		rc = st_read_rows(f, t, i0, n, buf, e);
		if (rc == 0)
			transpose_block(dst, buf, i0, n, d0, d1 ? d1 : 1);
	}
	free(buf);
	if (rc == 0)
		t->read = true;
	return rc;
}

int ld_shards_read_stored(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1,
			  void *dst, enum dtype *dt, struct err *e)
{
	struct st_file *f;
	struct st_tensor *t = find_shaped(s, name, d0, d1, &f, e);
	if (!t)
		return -1;
	*dt = t->dtype;
	return st_read_stored(f, t, dst, e);
}

int ld_shards_all_read(const struct ld_shards *s, const char *const *ignored, struct err *e)
{
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->f[i].n; j++) {
			const struct st_tensor *t = &s->f[i].t[j];
			bool pass = t->read;
			for (size_t k = 0; !pass && ignored && ignored[k]; k++)
				pass = strstr(t->name, ignored[k]) != NULL;
			if (!pass)
				return err_set(e, "unexpected tensor \"%.60s\"", t->name);
		}
	return 0;
}

uint64_t ld_shards_values(const struct ld_shards *s)
{
	uint64_t held = 0;
	for (int i = 0; i < s->n; i++)
		held += st_values_held(&s->f[i]);
	return held;
}

int ld_shards_check_size(const struct ld_shards *s, double need, double slack, struct err *e)
{
	double have = (double)ld_shards_values(s);
	if (need > have + slack)
		return err_set(e, "config.json describes %.0f weights, but the safetensors files "
			       "hold %.0f values", need, have);
	return 0;
}

int ld_tied_copy(struct st_file *f, struct st_tensor *t, const char *emb, const struct model *m,
		 uint64_t V, uint64_t C, const char *tie, struct err *e)
{
	char why[64] = "";
	if (t->ndim != 2 || t->shape[0] != V || t->shape[1] != C || t->dtype == DTYPE_OTHER) {
		st_shape_str(why, sizeof why, t->shape, t->ndim);
		memmove(why + 7, why, strlen(why) + 1);
		memcpy(why, " shape ", 7);
	}
	float *row = xmalloc_aligned(2 * (size_t)C * sizeof(float)), *wte = row + C;
	for (uint64_t r = 0; !why[0] && r < V; r++) { /* a row at a time: no V x C copy */
		off_t off = (off_t)(f->data_off + t->begin + r * C * t->esize);
		if (ld_read_floats(f->fd, off, row, (size_t)C, t->dtype, t->name, e)) {
			free(row);
			return -1;
		}
		model_rows_f32(m, P_WTE, 0, r, 1, wte);
		for (uint64_t j = 0; j < C && !why[0]; j++)
			if (row[j] != wte[j])
				snprintf(why, sizeof why, " at row %" PRIu64, r);
	}
	free(row);
	if (why[0])
		return err_set(e, "%.60s differs from %s%s, but config.json ties them (%s); set "
			       "\"tie_word_embeddings\": false to use it", t->name, emb, why, tie);
	t->read = true;
	return 0;
}

int ld_shards_tied(struct ld_shards *s, const char *head, const char *emb, const struct model *m,
		   uint64_t V, uint64_t C, const char *tie, struct err *e)
{
	struct st_file *f;
	struct st_tensor *t = ld_shards_find(s, head, &f);
	return t ? ld_tied_copy(f, t, emb, m, V, C, tie, e) : 0;
}
