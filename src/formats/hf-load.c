/*
 * hf-load.c — the one loader of every Hugging Face family (hf-family.h):
 * config.json → the family's parse → tokenizer → its fit to vocab_size →
 * the weights (model.safetensors, its shards, or the file named) → a size
 * check before allocating → model_new → the family's tensor map, output
 * layer and finish → every tensor read or ignored.  The families
 * themselves (loader-hf.c GPT-2, loader-hf-llama.c, loader-hf-neox.c,
 * loader-hf-bert.c, loader-hf-roberta.c, loader-hf-distilbert.c,
 * loader-hf-neo.c, loader-hf-phi3.c) are tables and small functions; this
 * file holds no family's names.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "quant.h"
#include "loaders.h"
#include "safetensors.h"

/* ------------------------------------------------------------ config.json */

/* config.json's root, or NULL + e with what is wrong and where. */
static json_t *load_config(const char *path, struct err *e)
{
	json_error_t jerr;
	json_t *o = ju_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (o)
		return o;
	if (!ld_is_file(path))
		err_set(e, "no config.json: not a Hugging Face model directory");
	else if (jerr.line == -1) /* a FIFO now, or too large */
		err_set(e, "%s", jerr.text);
	else
		err_set(e, "config.json: invalid JSON (line %d, column %d: %s)", jerr.line,
			jerr.column, jerr.text);
	return NULL;
}

/* Whether family f claims config.json's root (NULL: not JSON); *type is
 * its model_type when a string, else NULL.  An untyped family claims what
 * no model_type string names (its parse says what is wrong). */
static bool claims(const struct hf_family *f, json_t *root, const char **type)
{
	json_t *t = json_object_get(root, "model_type");
	*type = json_is_string(t) ? json_string_value(t) : NULL;
	for (size_t i = 0; *type && f->types[i]; i++)
		if (!strcmp(*type, f->types[i]))
			return true;
	return f->untyped && !*type;
}

/* The directory of path (itself, or a weights file's). */
static char *dir_of(const char *path)
{
	return ld_is_dir(path) ? xstrdup(path) : ld_dirname(path);
}

/* config.json of path's directory into c and x: 0, or -1 + e (no path
 * prefix). */
static int parse_dir(const struct hf_family *f, const char *dir, struct model_config *c,
		     struct hf_ctx *x, struct err *e)
{
	char *cfgp = ld_join(dir, "config.json");
	json_t *root = load_config(cfgp, e);
	const char *type = NULL;
	int rc = -1;
	*x = (struct hf_ctx){ .prefix = "" };
	if (root && !claims(f, root, &type))
		err_set(e, "config.json: not %s", f->what);
	else if (root)
		rc = f->parse(root, type, c, x, e);
	json_decref(root);
	free(cfgp);
	return rc;
}

/* ------------------------------------------------------------------ probe */

/* Whether the safetensors file at path holds map[0] (with the prefix or
 * without): the weights of this family, not an attnscope checkpoint. */
static bool file_holds(const struct hf_family *f, const char *path)
{
	struct ld_shards s = { .n = 0 };
	struct err e;
	if (ld_shards_open_file(path, &s, &e))
		return false;
	char full[192];
	snprintf(full, sizeof full, "%s%s", f->prefix ? f->prefix : "", f->map[0].name);
	struct st_file *in;
	bool ok = ld_shards_find(&s, f->map[0].name, &in) || ld_shards_find(&s, full, &in);
	ld_shards_close(&s);
	return ok;
}

bool ld_hf_probe(const struct hf_family *f, const char *path, char *why, size_t n)
{
	bool dir = ld_is_dir(path);
	char *d = dir_of(path), *cfgp = ld_join(d, "config.json");
	json_t *root = ld_is_file(cfgp) ? ju_load_file(cfgp, JSON_REJECT_DUPLICATES, NULL) : NULL;
	const char *type;
	bool ok = ld_is_file(cfgp) && claims(f, root, &type); /* not JSON: the untyped family's */
	if (ok && !dir)
		ok = file_holds(f, path);
	if (!ok && dir && !ld_is_file(cfgp))
		snprintf(why, n, "a directory without config.json");
	else if (!ok && dir)
		snprintf(why, n, "no config.json of %s", f->what);
	else if (!ok)
		snprintf(why, n, "not a directory, nor the family's weights beside its config.json");
	json_decref(root);
	free(d);
	free(cfgp);
	return ok;
}

/* ----------------------------------------------------------- tensor map */

/* Where an entry's rows go: rows r0.. of its engine tensor (of one layer),
 * rows of cols values each (0: a vector). */
struct slot {
	size_t r0, rows, cols;
};

/* The slot of t in config c; false when c has no such tensor. */
static bool slot_of(const struct model_config *c, const struct hf_tensor *t, struct slot *g)
{
	size_t shape[3];
	int nd;
	if (!param_shape(c, t->p, shape, &nd))
		return false;
	int lay = param_per_layer(t->p) ? 1 : 0;
	size_t rows = shape[lay], cols = nd - lay == 2 ? shape[lay + 1] : 0;
	size_t D = (size_t)cfg_d_head(c), H = (size_t)c->n_head, K = (size_t)c->n_kv_head;
	size_t F = (size_t)c->d_ff;
	switch (t->part) {
	case HF_Q: *g = (struct slot){ 0, H * D, cols }; break;
	case HF_K: *g = (struct slot){ H * D, K * D, cols }; break;
	case HF_V: *g = (struct slot){ (H + K) * D, K * D, cols }; break;
	case HF_GATE: *g = (struct slot){ 0, F, cols }; break;
	case HF_UP: *g = (struct slot){ F, F, cols }; break;
	default: *g = (struct slot){ 0, rows, cols }; break;
	}
	return true;
}

/* A Conv1D weight stored [out, in] rather than [in, out]: said so. */
static int conv1d_shape(struct ld_shards *s, const char *name, const struct slot *g, struct err *e)
{
	struct st_file *in;
	struct st_tensor *t = ld_shards_find(s, name, &in);
	if (!t || t->ndim != 2 || t->shape[0] != g->rows || t->shape[1] != g->cols ||
	    g->rows == g->cols)
		return 0;
	char got[96], want[64];
	uint64_t shape[2] = { g->cols, g->rows };
	st_shape_str(got, sizeof got, t->shape, t->ndim);
	st_shape_str(want, sizeof want, shape, 2);
	return err_set(e, "%s has shape %s, transposed: a Conv1D weight is [in, out] = %s", name,
		       got, want);
}

/* Row r of the file's tensor goes to this row of the slot. */
static size_t dest_row(const struct model_config *c, enum hf_xform xf, size_t r)
{
	int D = cfg_d_head(c);
	if (xf == HF_ROPE)
		return (size_t)neox_rope_row((int)r, D, cfg_rotary_dims(c));
	if (xf == HF_NEOX_QKV)
		return (size_t)neox_qkv_row((int)r, c->n_head, D, cfg_rotary_dims(c));
	return r;
}

/* A fused entry's part (t->fused): the file's tensor, all rows of the
 * engine tensor (whole), is read; rows g->r0.. of it go, through t's
 * transform, to the same rows of dst. */
static int read_fused(struct ld_shards *s, const struct model_config *c, const struct hf_tensor *t,
		      const char *name, const struct slot *g, const struct slot *whole, float *dst,
		      struct err *e)
{
	size_t w = g->cols ? g->cols : 1;
	float *tmp = xmalloc_aligned(whole->rows * w * sizeof(float));
	int rc = ld_shards_read(s, name, whole->rows, whole->cols, tmp, e);
	for (size_t r = 0; !rc && r < g->rows; r++)
		memcpy(dst + (g->r0 + dest_row(c, t->xf, r)) * w, tmp + (g->r0 + r) * w,
		       w * sizeof(float));
	free(tmp);
	return rc;
}

/* read_slot's work: the file's tensor through t's transform. */
static int read_rows(struct ld_shards *s, const struct model_config *c, const struct hf_tensor *t,
		     const char *name, const struct slot *g, float *dst, struct err *e)
{
	size_t w = g->cols ? g->cols : 1;
	float *at = dst + g->r0 * w;
	if (t->fused) {
		struct hf_tensor all = *t;
		struct slot whole;
		all.part = HF_WHOLE;
		slot_of(c, &all, &whole);
		return read_fused(s, c, t, name, g, &whole, dst, e);
	}
	if (t->xf == HF_COPY)
		return ld_shards_read(s, name, g->rows, g->cols, at, e);
	if (t->xf == HF_CONV1D && g->cols) /* [in, out] -> (out, in) */
		return conv1d_shape(s, name, g, e) ? -1
						   : ld_shards_read_t(s, name, g->cols, g->rows, at, e);
	float *tmp = xmalloc_aligned(g->rows * w * sizeof(float));
	int rc = ld_shards_read(s, name, g->rows, g->cols, tmp, e);
	for (size_t r = 0; !rc && r < g->rows; r++)
		memcpy(at + dest_row(c, t->xf, r) * w, tmp + r * w, w * sizeof(float));
	free(tmp);
	return rc;
}

/* Reads the file's tensor name into slot g of dst (the engine tensor of
 * one layer), through t's transform, 1 added to each value for a
 * plus_one norm. */
static int read_slot(struct ld_shards *s, const struct model_config *c, const struct hf_tensor *t,
		     const char *name, const struct slot *g, float *dst, struct err *e)
{
	int rc = read_rows(s, c, t, name, g, dst, e);
	float *at = dst + g->r0 * (g->cols ? g->cols : 1);
	for (size_t i = 0; !rc && t->plus_one && i < g->rows * (g->cols ? g->cols : 1); i++)
		at[i] += 1.0f;
	return rc;
}

/* The file's name of entry t in layer l: prefixed, or its older spelling
 * when only that is in the file. */
static void entry_name(struct ld_shards *s, const struct hf_ctx *x, const struct hf_tensor *t,
		       int l, char *buf, size_t n)
{
	const char *pre = t->unprefixed ? "" : x->prefix;
	char part[160];
	snprintf(part, sizeof part, t->name, l);
	snprintf(buf, n, "%s%s", pre, part);
	struct st_file *in;
	if (t->alt && !ld_shards_find(s, buf, &in)) {
		char alt[192];
		snprintf(part, sizeof part, t->alt, l);
		snprintf(alt, sizeof alt, "%s%s", pre, part);
		if (ld_shards_find(s, alt, &in))
			snprintf(buf, n, "%s", alt);
	}
}

/* ------------------------------------------------------------ held weights */

/* The held type of a file's dtype. */
static uint32_t held_type_of(enum dtype dt)
{
	return dt == DTYPE_F16 ? GGML_F16 : dt == DTYPE_BF16 ? GGML_BF16 : GGML_F32;
}

/* Reads the file's tensor name into slot g of h (the engine tensor of one
 * layer, held): its rows in the file's type, moved through t's row
 * transform.  A tensor stored in order goes straight into its part;
 * one whose rows move (RoPE, fused) through one copy of it. */
static int read_held(struct ld_shards *s, const struct model_config *c, const struct hf_tensor *t,
		     const char *name, const struct slot *g, struct held_mat *h, struct err *e)
{
	struct st_file *in;
	struct st_tensor *st = ld_shards_find(s, name, &in);
	if (!st)
		return err_set(e, "missing tensor \"%s\"", name);
	struct slot whole = *g;
	if (t->fused) {
		struct hf_tensor all = *t;
		all.part = HF_WHOLE;
		slot_of(c, &all, &whole);
	}
	uint32_t type = held_type_of(st->dtype);
	unsigned char *dst = held_add_part(h, (int)g->r0, (int)g->rows, type);
	if (!dst)
		return err_set(e, "%s: its rows cannot be held (%s values of %zu)", name,
			       st->dtype_name, g->cols);
	enum dtype dt;
	if (!t->fused && t->xf == HF_COPY)
		return ld_shards_read_stored(s, name, g->rows, g->cols, dst, &dt, e);
	size_t rb = held_row_bytes(type, (int)g->cols), from = t->fused ? g->r0 : 0;
	unsigned char *tmp = xmalloc_aligned(whole.rows * rb);
	int rc = ld_shards_read_stored(s, name, whole.rows, whole.cols, tmp, &dt, e);
	for (size_t r = 0; !rc && r < g->rows; r++)
		memcpy(dst + dest_row(c, t->xf, r) * rb, tmp + (from + r) * rb, rb);
	free(tmp);
	return rc;
}

/* The engine tensors to hold as stored: every holdable one whose entries
 * keep their rows whole (no Conv1D transpose, no 1 added) and whose
 * layer 0 tensors the file stores in 16 bits (the output layer's too).
 * None under o->f32, nor for a family whose finish reads the weights. */
static uint32_t held_mask(const struct hf_family *f, struct ld_shards *s,
			  const struct model_config *c, const struct hf_ctx *x,
			  const struct load_opts *o)
{
	uint32_t hold = 0, keep = 0;
	if (o->f32 || f->finish)
		return 0;
	for (const struct hf_tensor *t = f->map; t->name; t++) {
		struct slot g;
		if ((t->when & x->opts) != t->when || !slot_of(c, t, &g) || !model_holdable(t->p))
			continue;
		char name[192];
		struct st_file *in;
		entry_name(s, x, t, 0, name, sizeof name);
		struct st_tensor *st = ld_shards_find(s, name, &in);
		bool ok = st && (st->dtype == DTYPE_F16 || st->dtype == DTYPE_BF16) &&
			  t->xf != HF_CONV1D && !t->plus_one && g.cols;
		*(ok ? &hold : &keep) |= 1u << t->p;
	}
	struct st_file *in;
	const char *head = x->head ? x->head : f->head;
	struct st_tensor *st = head && !c->tied ? ld_shards_find(s, head, &in) : NULL;
	if (st && (st->dtype == DTYPE_F16 || st->dtype == DTYPE_BF16))
		hold |= 1u << P_LMHEAD;
	return hold & ~keep;
}

/* Every entry of the family's map the config has, for every layer. */
static int read_map(const struct hf_family *f, struct ld_shards *s, struct model *m,
		    const struct hf_ctx *x, struct err *e)
{
	const struct model_config *c = &m->cfg;
	for (const struct hf_tensor *t = f->map; t->name; t++) {
		struct slot g;
		if ((t->when & x->opts) != t->when || !slot_of(c, t, &g))
			continue;
		bool layer = param_per_layer(t->p);
		size_t per = layer ? m->psize[t->p] / (size_t)c->n_layer : 0;
		for (int l = 0; l < (layer ? c->n_layer : 1); l++) {
			char name[192];
			entry_name(s, x, t, l, name, sizeof name);
			if (m->held[t->p] ? read_held(s, c, t, name, &g, &m->held[t->p][l], e)
					  : read_slot(s, c, t, name, &g, m->p[t->p] + (size_t)l * per, e))
				return -1;
		}
	}
	return 0;
}

/* The output layer of an LM head: read when untied, else checked to be a
 * copy of the embeddings when the file holds it. */
static int read_head(const struct hf_family *f, struct ld_shards *s, struct model *m,
		     const struct hf_ctx *x, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t V = (uint64_t)c->vocab_size, C = (uint64_t)c->d_model;
	struct st_file *in;
	const char *head = x->head ? x->head : f->head;
	char emb[192];
	snprintf(emb, sizeof emb, "%s%s", x->prefix, f->map[0].name);
	if (c->tied)
		return ld_shards_tied(s, head, emb, m, V, C,
				      f->tied_default ? "tie_word_embeddings true, or absent: the "
				      "family's default" : "tie_word_embeddings true", e);
	if (!ld_shards_find(s, head, &in))
		return err_set(e, "missing tensor \"%s\" (config.json: tie_word_embeddings is "
			       "false%s)", head, f->tied_default ? "" : ", or absent: false is "
			       "the family's default");
	if (m->held[P_LMHEAD]) {
		struct hf_tensor t = { .name = head, .p = P_LMHEAD };
		struct slot g = { 0, V, C };
		return read_held(s, c, &t, head, &g, &m->held[P_LMHEAD][0], e);
	}
	return ld_shards_read(s, head, V, C, m->p[P_LMHEAD], e);
}

/* ------------------------------------------------------------------ load */

/* The model's name: a cache snapshot's repository (ORG/NAME), else the
 * directory's last component. */
static char *model_name(const char *dir)
{
	const char *r = strstr(dir, "/models--");
	const char *snap = r ? strstr(r, "/snapshots/") : NULL;
	if (!snap)
		return ld_basename(dir, NULL);
	char *name = xstrndup(r + 9, (size_t)(snap - r - 9));
	char *d = strstr(name, "--");
	if (d) { /* ORG--NAME -> ORG/NAME */
		*d = '/';
		memmove(d + 1, d + 2, strlen(d + 2) + 1);
	}
	return name;
}

/* The parameters of one block: a shortfall within them is a few missing
 * tensors, named when read; more is a config the files cannot fill. */
static double layer_params(const struct model_config *c)
{
	size_t shape[3], n = 0;
	int nd;
	for (int i = 0; i < N_PARAMS; i++)
		if (param_per_layer((enum param_id)i))
			n += param_shape(c, (enum param_id)i, shape, &nd);
	return (double)n / c->n_layer;
}

/* Opens the weights of path and lets the family settle what they decide. */
static int open_weights(const struct hf_family *f, const char *path, const char *dir,
			struct ld_shards *s, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	if (ld_is_dir(path) ? ld_shards_open(dir, s, e) : ld_shards_open_file(path, s, e))
		return -1;
	char full[192];
	struct st_file *in;
	snprintf(full, sizeof full, "%s%s", f->prefix ? f->prefix : "", f->map[0].name);
	if (f->prefix && ld_shards_find(s, full, &in))
		x->prefix = f->prefix;
	if (f->mlm_probe && !ld_shards_find(s, f->mlm_probe, &in))
		c->head = HEAD_NONE; /* the last block's output is the model's */
	return f->inspect ? f->inspect(s, c, x, e) : 0;
}

/* Fills a new model of cfg from the open weights; NULL + e (no prefix). */
static struct model *fill(const struct hf_family *f, struct ld_shards *s,
			  const struct model_config *cfg, const struct hf_ctx *x,
			  const struct load_opts *o, struct err *e)
{
	struct model *m = model_new_held(cfg, held_mask(f, s, cfg, x, o), e);
	if (!m)
		return NULL;
	if (read_map(f, s, m, x, e) || (f->head && read_head(f, s, m, x, e))) {
		model_free(m);
		return NULL;
	}
	if (f->finish && !(m = f->finish(s, m, x, e)))
		return NULL;
	if (ld_shards_all_read(s, f->ignored, e)) {
		model_free(m);
		return NULL;
	}
	if (!model_held_complete(m))
		die("ld_hf_load: a held matrix of %s lacks rows its map should fill", f->what);
	return m;
}

struct model *ld_hf_load(const struct hf_family *f, const char *path, const struct load_opts *o,
			 struct err *e)
{
	char *dir = dir_of(path);
	struct model_config cfg;
	struct hf_ctx x;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct ld_shards sh = { .n = 0 };
	if (parse_dir(f, dir, &cfg, &x, e))
		goto fail;
	tok = f->tokenizer(o->tokenizer, dir, e);
	if (!tok)
		goto fail_noprefix;
	if (ld_tokenizer_fits(tok, cfg.vocab_size, e) ||
	    open_weights(f, path, dir, &sh, &cfg, &x, e) ||
	    ld_shards_check_size(&sh, (double)config_param_count(&cfg), layer_params(&cfg), e) ||
	    !(m = fill(f, &sh, &cfg, &x, o, e)))
		goto fail;
	ld_shards_close(&sh);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = model_name(dir);
	free(dir);
	return m;
fail:
	err_prefix(e, "%s", dir);
fail_noprefix:
	ld_shards_close(&sh);
	tok_free(tok);
	free(dir);
	return NULL;
}

int ld_hf_stored_bytes(const char *path, double *bytes, double *values)
{
	struct ld_shards s = { .n = 0 };
	struct err e;
	char *dir = dir_of(path);
	int rc = ld_is_dir(path) ? ld_shards_open(dir, &s, &e) : ld_shards_open_file(path, &s, &e);
	*bytes = *values = 0;
	for (int i = 0; !rc && i < s.n; i++)
		for (int j = 0; j < s.f[i].n; j++) {
			*bytes += (double)(s.f[i].t[j].end - s.f[i].t[j].begin);
			*values += (double)s.f[i].t[j].n;
		}
	ld_shards_close(&s);
	free(dir);
	return rc ? -1 : 0;
}

int ld_hf_describe(const struct hf_family *f, const char *path, struct model_config *c,
		   struct err *e)
{
	char *dir = dir_of(path);
	struct hf_ctx x;
	int rc = parse_dir(f, dir, c, &x, e);
	if (rc)
		err_prefix(e, "%s", dir);
	struct ld_shards sh = { .n = 0 };
	struct err ignore;
	if (!rc && (f->inspect || f->mlm_probe)) /* headers only: what the weights decide */
		open_weights(f, path, dir, &sh, c, &x, &ignore);
	ld_shards_close(&sh);
	free(dir);
	return rc;
}
