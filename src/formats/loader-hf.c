/*
 * loader-hf.c — Hugging Face GPT-2 directories ("hf-gpt2").
 *
 * config.json (GPT2LMHeadModel) maps to our config as
 *   n_layer, n_head (= n_kv_head), n_embd, vocab_size, n_positions (or n_ctx)
 *   d_ff = n_inner, or 4 * n_embd when absent or null
 *   LayerNorm with eps layer_norm_epsilon (1e-5 when absent), pre-norm,
 *   learned positions, GELU tanh (activation_function gelu_new,
 *   gelu_pytorch_tanh or gelu_fast), biases, tied unless
 *   tie_word_embeddings is false (then lm_head.weight is read); a tied
 *   file's lm_head.weight must equal wte (refused, not ignored, when not).
 * Without model_type the config must have GPT-2's keys (n_layer, ...).
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
 * The safetensors container is checked by the reader checkpoint.c uses too
 * (safetensors.h); tensors of other dtypes are listed rather than refused,
 * as files carry the mask buffers in U8 or BOOL, and refused when wanted.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "safetensors.h"

/* model.safetensors as GPT-2 files come: mask buffers of any dtype. */
static const struct st_checks hf_checks = { .other_dtypes = true };

/* ------------------------------------------------------------ config.json */

/* The sizes: positive integers up to 2^30; null is absent (n_inner). */
static int parse_config(const char *path, struct model_config *c, struct err *e)
{
	json_error_t jerr;
	json_t *o = ju_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		if (!ld_is_file(path))
			return err_set(e, "no config.json: not a Hugging Face model directory");
		if (jerr.line == -1) /* a FIFO now, or too large */
			return err_set(e, "%s", jerr.text);
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
	int r = ju_get_str(o, "model_type", "config.json", 0, &s, e);
	if (r < 0)
		goto out;
	if (r == 0 && strcmp(s, "gpt2") != 0) {
		err_set(e, "config.json: model_type \"%.40s\" is not supported (gpt2, llama, qwen2, "
			"mistral, gpt_neox and bert are)", s);
		goto out;
	}
	if (r == 1 && !json_object_get(o, "n_layer")) { /* no family named, not GPT-2's keys */
		err_set(e, "config.json: no \"model_type\", and no \"n_layer\" for GPT-2, the family "
			"assumed without one; name it (gpt2, llama, qwen2, mistral, gpt_neox, bert)");
		goto out;
	}
	if (LD_HF_INT(o, "n_layer", JU_REQUIRED, &c->n_layer, e) < 0 ||
	    LD_HF_INT(o, "n_head", JU_REQUIRED, &c->n_head, e) < 0 ||
	    LD_HF_INT(o, "n_embd", JU_REQUIRED, &c->d_model, e) < 0 ||
	    LD_HF_INT(o, "vocab_size", JU_REQUIRED, &c->vocab_size, e) < 0)
		goto out;
	r = LD_HF_INT(o, "n_positions", 0, &c->context, e);
	if (r < 0 || (r > 0 && LD_HF_INT(o, "n_ctx", JU_REQUIRED, &c->context, e) < 0)) {
		if (r > 0)
			err_set(e, "config.json: missing key \"n_positions\"");
		goto out;
	}
	c->n_kv_head = c->n_head;
	c->d_ff = c->d_model <= INT_MAX / 4 ? 4 * c->d_model : INT_MAX; /* d_model is refused */
	if (LD_HF_INT(o, "n_inner", 0, &c->d_ff, e) < 0 ||
	    ju_get_float(o, "layer_norm_epsilon", "config.json", 0, &c->norm_eps, e) < 0)
		goto out;
	s = NULL;
	if (ju_get_str(o, "activation_function", "config.json", 0, &s, e) < 0)
		goto out;
	if (s && strcmp(s, "gelu_new") && strcmp(s, "gelu_pytorch_tanh") && strcmp(s, "gelu_fast")) {
		err_set(e, "config.json: activation_function \"%.40s\" is not supported (the "
			"engine has GELU tanh: gelu_new)", s);
		goto out;
	}
	b = true;
	if (ju_get_bool(o, "tie_word_embeddings", "config.json", 0, &b, e) < 0)
		goto out;
	c->tied = b;
	b = true;
	if (ju_get_bool(o, "scale_attn_weights", "config.json", 0, &b, e) < 0)
		goto out;
	if (!b) {
		err_set(e, "config.json: scale_attn_weights false is not supported");
		goto out;
	}
	static const char *const unsupported[] = { "scale_attn_by_inverse_layer_idx",
						   "add_cross_attention" };
	for (size_t i = 0; i < 2; i++) {
		b = false;
		if (ju_get_bool(o, unsupported[i], "config.json", 0, &b, e) < 0)
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
static struct st_tensor *want(struct st_file *f, const char *prefix, const char *name,
			      uint64_t d0, uint64_t d1, bool conv1d, struct err *e)
{
	char full[160];
	snprintf(full, sizeof full, "%s%s", prefix, name);
	struct st_tensor *t = st_find(f, full);
	if (!t) {
		err_set(e, "model.safetensors: missing tensor \"%s\"", full);
		return NULL;
	}
	uint64_t shape[2] = { d0, d1 };
	int ndim = d1 ? 2 : 1;
	bool ok = t->ndim == ndim && t->shape[0] == d0 && (ndim == 1 || t->shape[1] == d1);
	if (!ok) {
		char got[96], exp[64];
		st_shape_str(got, sizeof got, t->shape, t->ndim);
		st_shape_str(exp, sizeof exp, shape, ndim);
		if (conv1d && t->ndim == 2 && t->shape[0] == d1 && t->shape[1] == d0)
			err_set(e, "model.safetensors: %s has shape %s, transposed: a GPT-2 Conv1D "
				"weight is [in, out] = %s", full, got, exp);
		else
			err_set(e, "model.safetensors: %s has shape %s, but config.json needs %s",
				full, got, exp);
		return NULL;
	}
	if (t->dtype == DTYPE_OTHER) {
		err_set(e, "model.safetensors: %s has a dtype attnscope does not read "
			"(F32, F16, BF16 only)", full);
		return NULL;
	}
	return t;
}

/* Reads a plain tensor into dst. */
static int read_plain(struct st_file *f, const char *prefix, const char *name, uint64_t d0,
		      uint64_t d1, float *dst, struct err *e)
{
	struct st_tensor *t = want(f, prefix, name, d0, d1, false, e);
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
	struct st_tensor *t = want(f, prefix, name, in, out, true, e);
	if (!t)
		return -1;
	if (st_read(f, t, tmp, e))
		return err_prefix(e, "model.safetensors");
	for (uint64_t i = 0; i < in; i++)
		for (uint64_t o = 0; o < out; o++)
			dst[o * in + i] = tmp[i * out + o];
	return 0;
}

static bool ignorable(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);
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
		if (!st_find(f, "lm_head.weight")) {
			err_set(e, "model.safetensors: missing tensor \"lm_head.weight\" "
				"(config.json: tie_word_embeddings is false)");
			goto out;
		}
		PLAIN("lm_head.weight", V, C, m->p[P_LMHEAD]);
	} else if (st_find(f, "lm_head.weight") &&
		   ld_tied_copy(f, st_find(f, "lm_head.weight"), "wte.weight", m->p[P_WTE], V, C,
				"tie_word_embeddings true, or absent: GPT-2's default", e)) {
		err_prefix(e, "model.safetensors");
		goto out;
	}
#undef PLAIN
#undef CONV
	for (int i = 0; i < f->n; i++)
		if (!f->t[i].read && !ignorable(f->t[i].name, prefix)) {
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
		if (st_open(&f, path, &hf_checks, &e) == 0) {
			ok = st_find(&f, "wte.weight") || st_find(&f, "transformer.wte.weight");
			st_close(&f);
		}
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
	if (ld_tokenizer_fits(tok, cfg.vocab_size, e))
		goto fail;
	if (st_open(&f, stp, &hf_checks, e)) {
		err_prefix(e, "model.safetensors");
		goto fail;
	}
	{
		/* refuse, before allocating for it, a config that the file could not
		 * fill by far (a few missing tensors are named by read_weights) */
		uint64_t held = st_values_held(&f), need = config_param_count(&cfg);
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

static int describe_hf(const char *path, struct model_config *c, struct err *e)
{
	char *dir = ld_is_dir(path) ? xstrdup(path) : ld_dirname(path);
	char *cfgp = ld_join(dir, "config.json");
	int rc = parse_config(cfgp, c, e);
	if (rc)
		err_prefix(e, "%s", dir);
	free(dir);
	free(cfgp);
	return rc;
}

const struct model_format format_hf_gpt2 = {
	"hf-gpt2", "Hugging Face GPT-2 directory", probe_hf, load_hf, describe_hf,
};
