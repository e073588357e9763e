/*
 * loader-hf.c — Hugging Face GPT-2 directories ("hf-gpt2").
 *
 * config.json (GPT2LMHeadModel) maps to our config as
 *   n_layer, n_head (= n_kv_head), n_embd, vocab_size, n_positions (or n_ctx)
 *   d_ff = n_inner, or 4 * n_embd when absent or null
 *   LayerNorm with eps layer_norm_epsilon (1e-5 when absent), pre-norm,
 *   learned positions, GELU tanh (activation_function gelu_new,
 *   gelu_pytorch_tanh or gelu_fast), biases, tied unless
 *   tie_word_embeddings is false (then lm_head.weight is read).
 * Settings the engine cannot reproduce (scale_attn_weights false,
 * scale_attn_by_inverse_layer_idx, cross-attention, another model_type or
 * activation) are refused by name.
 *
 * model.safetensors holds the published names, with or without the
 * "transformer." prefix: wte, wpe, h.N.ln_1, h.N.attn.c_attn, h.N.attn.c_proj,
 * h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f (".weight"/".bias").  Conv1D
 * weights are stored [in, out]; they are transposed into our (out, in).
 * The attention-mask buffers h.N.attn.bias / h.N.attn.masked_bias are
 * ignored; any other unknown name is an error.  F32, F16 and BF16 read.
 * The safetensors header is checked as checkpoint.c checks ours: length
 * within the file, JSON object, every entry's dtype, shape and byte range,
 * sizes that agree, no overlaps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "loaders.h"

#define HEADER_MAX ((uint64_t)100000000)
#define MAX_DIMS 8

/* ------------------------------------------------------- safetensors */

enum { DT_F32, DT_F16, DT_BF16, DT_OTHER };

struct st_ent {
	const char *name;	/* key in the header JSON */
	int dtype;
	size_t esize;		/* bytes per element; 0 for an unknown dtype */
	int ndim;
	uint64_t shape[MAX_DIMS];
	uint64_t begin, end, n;
	bool used;
};

struct st_file {
	int fd;
	uint64_t data_off;	/* 8 + header length */
	json_t *root;
	struct st_ent *t;
	int n;
};

static const struct {
	const char *name;
	size_t size;
	int dtype;
} dtypes[] = {
	{ "F32", 4, DT_F32 }, { "F16", 2, DT_F16 }, { "BF16", 2, DT_BF16 },
	{ "F64", 8, DT_OTHER }, { "I64", 8, DT_OTHER }, { "U64", 8, DT_OTHER },
	{ "I32", 4, DT_OTHER }, { "U32", 4, DT_OTHER }, { "I16", 2, DT_OTHER },
	{ "U16", 2, DT_OTHER }, { "I8", 1, DT_OTHER }, { "U8", 1, DT_OTHER },
	{ "BOOL", 1, DT_OTHER }, { "F8_E4M3", 1, DT_OTHER }, { "F8_E5M2", 1, DT_OTHER },
};

static int cmp_begin(const void *a, const void *b)
{
	const struct st_ent *x = *(const struct st_ent *const *)a;
	const struct st_ent *y = *(const struct st_ent *const *)b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static void fmt_shape(char *buf, size_t size, const uint64_t *shape, int ndim)
{
	size_t len = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < ndim && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu64, d ? ", " : "", shape[d]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

static int parse_entry(const char *name, json_t *v, uint64_t data_size, struct st_ent *t,
		       struct err *e)
{
	t->name = name;
	if (!json_is_object(v))
		return err_set(e, "tensor %.60s: entry is not an object", name);
	json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape");
	json_t *of = json_object_get(v, "data_offsets");
	if (!json_is_string(dt))
		return err_set(e, "tensor %.60s: dtype missing or not a string", name);
	t->dtype = -1;
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (strcmp(json_string_value(dt), dtypes[i].name) == 0) {
			t->dtype = dtypes[i].dtype;
			t->esize = dtypes[i].size;
		}
	if (t->dtype < 0) {
		t->dtype = DT_OTHER;
		t->esize = 0;
	}
	if (!json_is_array(sh) || json_array_size(sh) > MAX_DIMS)
		return err_set(e, "tensor %.60s: shape is not a list of at most %d integers", name,
			       MAX_DIMS);
	t->ndim = (int)json_array_size(sh);
	t->n = 1;
	for (int d = 0; d < t->ndim; d++) {
		json_t *x = json_array_get(sh, (size_t)d);
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return err_set(e, "tensor %.60s: shape holds a non-integer or negative", name);
		t->shape[d] = (uint64_t)json_integer_value(x);
		if (t->shape[d] && t->n > UINT64_MAX / 16 / t->shape[d])
			return err_set(e, "tensor %.60s: shape is absurdly large", name);
		t->n *= t->shape[d];
	}
	if (!json_is_array(of) || json_array_size(of) != 2 ||
	    !json_is_integer(json_array_get(of, 0)) || !json_is_integer(json_array_get(of, 1)) ||
	    json_integer_value(json_array_get(of, 0)) < 0 ||
	    json_integer_value(json_array_get(of, 1)) < 0)
		return err_set(e, "tensor %.60s: data_offsets must be two non-negative integers", name);
	t->begin = (uint64_t)json_integer_value(json_array_get(of, 0));
	t->end = (uint64_t)json_integer_value(json_array_get(of, 1));
	if (t->begin > t->end || t->end > data_size)
		return err_set(e, "tensor %.60s: data_offsets [%" PRIu64 ", %" PRIu64 "] are outside "
			       "the data (%" PRIu64 " bytes; truncated?)", name, t->begin, t->end,
			       data_size);
	if (t->esize && t->end - t->begin != t->n * t->esize)
		return err_set(e, "tensor %.60s: data_offsets span %" PRIu64 " bytes, but %" PRIu64
			       " %s elements take %" PRIu64, name, t->end - t->begin, t->n,
			       json_string_value(dt), t->n * t->esize);
	return 0;
}

/* Opens and checks a safetensors file.  Messages without the path. */
static int st_open(const char *path, struct st_file *f, struct err *e)
{
	memset(f, 0, sizeof *f);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return err_set(e, "%s", strerror(errno));
	struct stat st;
	unsigned char w[8];
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode))
		return err_set(e, "not a regular file");
	uint64_t fsize = (uint64_t)st.st_size, n = 0;
	if (fsize < 8)
		return err_set(e, "file too short (%" PRIu64 " bytes; truncated?)", fsize);
	if (ld_pread(f->fd, w, 8, 0, e))
		return -1;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | w[i];
	if (n > fsize - 8)
		return err_set(e, "header length %" PRIu64 " runs past the end of the file "
			       "(%" PRIu64 " bytes; truncated?)", n, fsize);
	if (n > HEADER_MAX || n < 2)
		return err_set(e, "header length %" PRIu64 " is absurd", n);
	char *hdr = xmalloc((size_t)n + 1);
	if (ld_pread(f->fd, hdr, (size_t)n, 8, e)) {
		free(hdr);
		return -1;
	}
	json_error_t jerr;
	f->root = json_loadb(hdr, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
	free(hdr);
	if (!f->root)
		return err_set(e, "header is not valid JSON (line %d, column %d: %s)", jerr.line,
			       jerr.column, jerr.text);
	if (!json_is_object(f->root))
		return err_set(e, "header is not a JSON object");
	f->data_off = 8 + n;
	uint64_t data_size = fsize - 8 - n;
	f->t = xcalloc(json_object_size(f->root) + 1, sizeof *f->t);
	const char *key;
	json_t *v;
	json_object_foreach(f->root, key, v) {
		if (strcmp(key, "__metadata__") == 0)
			continue;
		if (parse_entry(key, v, data_size, &f->t[f->n], e))
			return -1;
		f->n++;
	}
	/* no two tensors share bytes */
	struct st_ent **s = xmalloc(((size_t)f->n + 1) * sizeof *s);
	int k = 0;
	for (int i = 0; i < f->n; i++)
		if (f->t[i].esize && f->t[i].end > f->t[i].begin)
			s[k++] = &f->t[i];
	qsort(s, (size_t)k, sizeof *s, cmp_begin);
	int rc = 0;
	for (int i = 1; i < k && !rc; i++)
		if (s[i]->begin < s[i - 1]->end)
			rc = err_set(e, "tensors %.60s and %.60s overlap", s[i - 1]->name, s[i]->name);
	free(s);
	return rc;
}

static void st_close(struct st_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	json_decref(f->root);
	free(f->t);
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

static struct st_ent *st_find(struct st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

/* Reads tensor t (F32/F16/BF16) as floats into dst (t->n of them). */
static int st_read(struct st_file *f, const struct st_ent *t, float *dst, struct err *e)
{
	off_t off = (off_t)(f->data_off + t->begin);
	if (t->dtype == DT_F16) {
		uint16_t buf[8192];
		for (uint64_t i = 0; i < t->n; i += 8192) {
			size_t k = t->n - i < 8192 ? (size_t)(t->n - i) : 8192;
			if (ld_pread(f->fd, buf, k * 2, off + (off_t)(i * 2), e))
				return -1;
			for (size_t j = 0; j < k; j++)
				dst[i + j] = f16_to_f32(buf[j]);
		}
		for (uint64_t i = 0; i < t->n; i++)
			if (!isfinite(dst[i]))
				return err_set(e, "tensor %s has a non-finite value at element %" PRIu64,
					       t->name, i);
		return 0;
	}
	return ld_read_floats(f->fd, off, dst, (size_t)t->n, t->dtype == DT_BF16, t->name, e);
}

/* ------------------------------------------------------------ config.json */

static int cfg_int(json_t *o, const char *key, bool required, int *out, struct err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			return err_set(e, "config.json: missing key \"%s\"", key);
		return 1;
	}
	if (!json_is_integer(v))
		return err_set(e, "config.json: \"%s\" must be an integer", key);
	json_int_t x = json_integer_value(v);
	if (x <= 0 || x > (1 << 30))
		return err_set(e, "config.json: \"%s\" = %lld is out of range", key, (long long)x);
	*out = (int)x;
	return 0;
}

static int cfg_bool(json_t *o, const char *key, bool *out, struct err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return 1;
	if (!json_is_boolean(v))
		return err_set(e, "config.json: \"%s\" must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

static int cfg_str(json_t *o, const char *key, const char **out, struct err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return 1;
	if (!json_is_string(v))
		return err_set(e, "config.json: \"%s\" must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int parse_config(const char *path, struct model_config *c, struct err *e)
{
	json_error_t jerr;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		if (!ld_is_file(path))
			return err_set(e, "no config.json: not a Hugging Face model directory");
		return err_set(e, "config.json: invalid JSON (line %d, column %d: %s)", jerr.line,
			       jerr.column, jerr.text);
	}
	int rc = -1;
	const char *s = NULL;
	bool b;
	config_default(c);
	if (!json_is_object(o)) {
		err_set(e, "config.json: not a JSON object");
		goto out;
	}
	int r = cfg_str(o, "model_type", &s, e);
	if (r < 0)
		goto out;
	if (r == 0 && strcmp(s, "gpt2") != 0) {
		err_set(e, "config.json: model_type \"%.40s\" is not supported (GPT-2 only)", s);
		goto out;
	}
	if (cfg_int(o, "n_layer", true, &c->n_layer, e) < 0 ||
	    cfg_int(o, "n_head", true, &c->n_head, e) < 0 ||
	    cfg_int(o, "n_embd", true, &c->d_model, e) < 0 ||
	    cfg_int(o, "vocab_size", true, &c->vocab_size, e) < 0)
		goto out;
	r = cfg_int(o, "n_positions", false, &c->context, e);
	if (r < 0 || (r > 0 && cfg_int(o, "n_ctx", true, &c->context, e) < 0)) {
		if (r > 0)
			err_set(e, "config.json: missing key \"n_positions\"");
		goto out;
	}
	c->n_kv_head = c->n_head;
	c->d_ff = 4 * c->d_model;
	if (cfg_int(o, "n_inner", false, &c->d_ff, e) < 0)
		goto out;
	json_t *eps = json_object_get(o, "layer_norm_epsilon");
	if (eps) {
		if (!json_is_number(eps)) {
			err_set(e, "config.json: \"layer_norm_epsilon\" must be a number");
			goto out;
		}
		c->norm_eps = (float)json_number_value(eps);
	}
	s = NULL;
	if (cfg_str(o, "activation_function", &s, e) < 0)
		goto out;
	if (s && strcmp(s, "gelu_new") && strcmp(s, "gelu_pytorch_tanh") && strcmp(s, "gelu_fast")) {
		err_set(e, "config.json: activation_function \"%.40s\" is not supported (the "
			"engine has GELU tanh: gelu_new)", s);
		goto out;
	}
	b = true;
	if (cfg_bool(o, "tie_word_embeddings", &b, e) < 0)
		goto out;
	c->tied = b;
	b = true;
	if (cfg_bool(o, "scale_attn_weights", &b, e) < 0)
		goto out;
	if (!b) {
		err_set(e, "config.json: scale_attn_weights false is not supported");
		goto out;
	}
	static const char *const unsupported[] = { "scale_attn_by_inverse_layer_idx",
						   "add_cross_attention" };
	for (size_t i = 0; i < 2; i++) {
		b = false;
		if (cfg_bool(o, unsupported[i], &b, e) < 0)
			goto out;
		if (b) {
			err_set(e, "config.json: %s true is not supported", unsupported[i]);
			goto out;
		}
	}
	c->norm = NORM_LAYER;
	c->placement = PLACE_PRE;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU;
	c->bias = true;
	if (config_validate(c, e) != 0) {
		err_prefix(e, "config.json");
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* ------------------------------------------------------------- tensors */

/* Looks up prefix+name, checks its shape is {d0, d1} (d1 = 0: 1-D) and
 * its dtype readable.  Returns the entry, or NULL with e set. */
static struct st_ent *want(struct st_file *f, const char *prefix, const char *name,
			   uint64_t d0, uint64_t d1, bool conv1d, struct err *e)
{
	char full[160];
	snprintf(full, sizeof full, "%s%s", prefix, name);
	struct st_ent *t = st_find(f, full);
	if (!t) {
		err_set(e, "model.safetensors: missing tensor \"%s\"", full);
		return NULL;
	}
	uint64_t shape[2] = { d0, d1 };
	int ndim = d1 ? 2 : 1;
	bool ok = t->ndim == ndim && t->shape[0] == d0 && (ndim == 1 || t->shape[1] == d1);
	if (!ok) {
		char got[96], exp[64];
		fmt_shape(got, sizeof got, t->shape, t->ndim);
		fmt_shape(exp, sizeof exp, shape, ndim);
		if (conv1d && t->ndim == 2 && t->shape[0] == d1 && t->shape[1] == d0)
			err_set(e, "model.safetensors: %s has shape %s, transposed: a GPT-2 Conv1D "
				"weight is [in, out] = %s", full, got, exp);
		else
			err_set(e, "model.safetensors: %s has shape %s, but config.json needs %s",
				full, got, exp);
		return NULL;
	}
	if (t->dtype == DT_OTHER) {
		err_set(e, "model.safetensors: %s has a dtype attnscope does not read "
			"(F32, F16, BF16 only)", full);
		return NULL;
	}
	t->used = true;
	return t;
}

/* Reads a plain tensor into dst. */
static int read_plain(struct st_file *f, const char *prefix, const char *name, uint64_t d0,
		      uint64_t d1, float *dst, struct err *e)
{
	struct st_ent *t = want(f, prefix, name, d0, d1, false, e);
	if (!t)
		return -1;
	if (st_read(f, t, dst, e))
		return err_prefix(e, "model.safetensors");
	return 0;
}

/* Reads a Conv1D weight [in, out] and stores it transposed, (out, in). */
static int read_conv1d(struct st_file *f, const char *prefix, const char *name, uint64_t in,
		       uint64_t out, float *dst, float *tmp, struct err *e)
{
	struct st_ent *t = want(f, prefix, name, in, out, true, e);
	if (!t)
		return -1;
	if (st_read(f, t, tmp, e))
		return err_prefix(e, "model.safetensors");
	for (uint64_t i = 0; i < in; i++)
		for (uint64_t o = 0; o < out; o++)
			dst[o * in + i] = tmp[i * out + o];
	return 0;
}

static bool ignorable(const char *name, const char *prefix, bool tied)
{
	size_t pl = strlen(prefix);
	if (strcmp(name, "lm_head.weight") == 0)
		return tied; /* a tied copy of wte */
	if (strncmp(name, prefix, pl) != 0)
		return false;
	name += pl;
	if (strncmp(name, "h.", 2) != 0)
		return false;
	const char *p = name + 2;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > name + 2 &&
	       (strcmp(p, ".attn.bias") == 0 || strcmp(p, ".attn.masked_bias") == 0);
}

static int read_weights(struct st_file *f, struct model *m, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t V = (uint64_t)c->vocab_size, C = (uint64_t)c->d_model, S = (uint64_t)c->context;
	uint64_t F = (uint64_t)c->d_ff, L = (uint64_t)c->n_layer;
	const char *prefix = st_find(f, "transformer.wte.weight") ? "transformer." : "";
	float *tmp = xmalloc_aligned((size_t)(C * (F > 3 * C ? F : 3 * C)) * sizeof(float));
	char name[96];
	int rc = -1;

#define PLAIN(nm, d0, d1, dst) if (read_plain(f, prefix, nm, d0, d1, dst, e)) goto out
#define CONV(nm, in, outd, dst) if (read_conv1d(f, prefix, nm, in, outd, dst, tmp, e)) goto out
	PLAIN("wte.weight", V, C, m->p[P_WTE]);
	PLAIN("wpe.weight", S, C, m->p[P_WPE]);
	for (uint64_t l = 0; l < L; l++) {
#define N(s) (snprintf(name, sizeof name, "h.%" PRIu64 ".%s", l, s), name)
		PLAIN(N("ln_1.weight"), C, 0, m->p[P_LN1W] + l * C);
		PLAIN(N("ln_1.bias"), C, 0, m->p[P_LN1B] + l * C);
		CONV(N("attn.c_attn.weight"), C, 3 * C, m->p[P_QKVW] + l * 3 * C * C);
		PLAIN(N("attn.c_attn.bias"), 3 * C, 0, m->p[P_QKVB] + l * 3 * C);
		CONV(N("attn.c_proj.weight"), C, C, m->p[P_ATTPROJW] + l * C * C);
		PLAIN(N("attn.c_proj.bias"), C, 0, m->p[P_ATTPROJB] + l * C);
		PLAIN(N("ln_2.weight"), C, 0, m->p[P_LN2W] + l * C);
		PLAIN(N("ln_2.bias"), C, 0, m->p[P_LN2B] + l * C);
		CONV(N("mlp.c_fc.weight"), C, F, m->p[P_FCW] + l * F * C);
		PLAIN(N("mlp.c_fc.bias"), F, 0, m->p[P_FCB] + l * F);
		CONV(N("mlp.c_proj.weight"), F, C, m->p[P_FCPROJW] + l * C * F);
		PLAIN(N("mlp.c_proj.bias"), C, 0, m->p[P_FCPROJB] + l * C);
#undef N
	}
	PLAIN("ln_f.weight", C, 0, m->p[P_LNFW]);
	PLAIN("ln_f.bias", C, 0, m->p[P_LNFB]);
	if (!c->tied) {
		struct st_ent *t = st_find(f, "lm_head.weight");
		if (!t) {
			err_set(e, "model.safetensors: missing tensor \"lm_head.weight\" "
				"(config.json: tie_word_embeddings is false)");
			goto out;
		}
		PLAIN("lm_head.weight", V, C, m->p[P_LMHEAD]);
	}
#undef PLAIN
#undef CONV
	for (int i = 0; i < f->n; i++)
		if (!f->t[i].used && !ignorable(f->t[i].name, prefix, c->tied)) {
			err_set(e, "model.safetensors: unexpected tensor \"%.60s\" (not GPT-2's)",
				f->t[i].name);
			goto out;
		}
	rc = 0;
out:
	free(tmp);
	return rc;
}

/* --------------------------------------------------------------- format */

/* A directory with config.json, or a safetensors file with GPT-2's names
 * and a config.json beside it. */
static bool probe_hf(const char *path, char *why, size_t n)
{
	if (ld_is_dir(path)) {
		char *cfg = ld_join(path, "config.json");
		bool ok = ld_is_file(cfg);
		free(cfg);
		if (!ok)
			snprintf(why, n, "a directory without config.json");
		return ok;
	}
	char *dir = ld_dirname(path), *cfg = ld_join(dir, "config.json");
	bool ok = false;
	if (ld_is_file(cfg)) {
		struct st_file f;
		struct err e;
		if (st_open(path, &f, &e) == 0)
			ok = st_find(&f, "wte.weight") || st_find(&f, "transformer.wte.weight");
		st_close(&f);
	}
	free(dir);
	free(cfg);
	if (!ok)
		snprintf(why, n, "not a directory");
	return ok;
}

static struct model *load_hf(const char *path, const struct load_opts *o, struct err *e)
{
	char *dir = ld_is_dir(path) ? xstrdup(path) : ld_dirname(path);
	char *cfgp = ld_join(dir, "config.json");
	char *stp = ld_is_dir(path) ? ld_join(dir, "model.safetensors") : xstrdup(path);
	struct model_config cfg;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct st_file f = { .fd = -1 };

	if (parse_config(cfgp, &cfg, e))
		goto fail;
	if (!ld_is_file(stp)) {
		char *idx = ld_join(dir, "model.safetensors.index.json");
		char *pt = ld_join(dir, "pytorch_model.bin");
		if (ld_is_file(idx))
			err_set(e, "sharded checkpoints (model.safetensors.index.json) are not "
				"supported; merge them into one model.safetensors");
		else if (ld_is_file(pt))
			err_set(e, "no model.safetensors (pytorch_model.bin is a pickle attnscope "
				"does not read; convert it to safetensors)");
		else
			err_set(e, "no model.safetensors");
		free(idx);
		free(pt);
		goto fail;
	}
	tok = ld_gpt2_tokenizer(o->tokenizer, dir, e);
	if (!tok)
		goto fail_noprefix;
	if (tok->vocab_size > cfg.vocab_size) {
		err_set(e, "the tokenizer has %d tokens but config.json's vocab_size is %d",
			tok->vocab_size, cfg.vocab_size);
		goto fail;
	}
	if (st_open(stp, &f, e)) {
		err_prefix(e, "model.safetensors");
		goto fail;
	}
	{
		/* refuse, before allocating for it, a config that the file could not
		 * fill by far (a few missing tensors are named by read_weights) */
		uint64_t held = 0, need = config_param_count(&cfg);
		for (int i = 0; i < f.n; i++) /* values with bytes behind them */
			if (f.t[i].esize && held <= UINT64_MAX - f.t[i].n)
				held += f.t[i].n;
		if (need / 2 > held) {
			err_set(e, "config.json describes %" PRIu64 " parameters but model.safetensors "
				   "holds %" PRIu64 " values", need, held);
			goto fail;
		}
	}
	m = model_new(&cfg, e);
	if (!m) {
		err_prefix(e, "config.json");
		goto fail;
	}
	if (read_weights(&f, m, e))
		goto fail;
	st_close(&f);
	m->tok = tok;
	m->path = xstrdup(path);
	{
		/* a cache snapshot is named after its repository */
		const char *r = strstr(dir, "/models--");
		const char *snap = r ? strstr(r, "/snapshots/") : NULL;
		if (snap) {
			char *name = xstrndup(r + 9, (size_t)(snap - r - 9));
			char *d = strstr(name, "--");
			if (d) { /* ORG--NAME -> ORG/NAME */
				*d = '/';
				memmove(d + 1, d + 2, strlen(d + 2) + 1);
			}
			m->name = name;
		} else {
			m->name = ld_basename(dir, NULL);
		}
	}
	free(dir);
	free(cfgp);
	free(stp);
	return m;
fail:
	err_prefix(e, "%s", dir);
fail_noprefix:
	st_close(&f);
	tok_free(tok);
	model_free(m);
	free(dir);
	free(cfgp);
	free(stp);
	return NULL;
}

const struct model_format format_hf_gpt2 = {
	"hf-gpt2", "Hugging Face GPT-2 directory", probe_hf, load_hf,
};
