/*
 * loader-hf-neox.c — Hugging Face GPT-NeoX directories ("hf-neox"):
 * config.json with model_type "gpt_neox" (GPTNeoXForCausalLM: Pythia,
 * GPT-NeoX-20B).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads (= K/V heads), hidden_size,
 *   intermediate_size, vocab_size, max_position_embeddings; LayerNorm with
 *   layer_norm_eps (1e-5) and biases, pre-norm, parallel blocks unless
 *   use_parallel_residual is false; RoPE with rotary_emb_base, rope_theta
 *   or rope_parameters.rope_theta (10000) over the first
 *   R = int(head_size * rotary_pct) dims of each head (rotary_pct, or
 *   partial_rotary_factor, plain or in rope_parameters; 0.25); hidden_act
 *   "gelu" (exact, erf) or "gelu_new" (tanh); untied unless
 *   tie_word_embeddings.  attention_bias false leaves the Q/K/V and output
 *   projection biases 0, which is exact.  rope_scaling, a rope_type other
 *   than "default", another hidden_act and an R that is odd or 0 are
 *   refused by name.
 *
 * Weights (model.safetensors or shards, hf-shards.c): gpt_neox.embed_in,
 * gpt_neox.layers.N.{input_layernorm, post_attention_layernorm,
 * attention.query_key_value, attention.dense, mlp.dense_h_to_4h,
 * mlp.dense_4h_to_h}, gpt_neox.final_layer_norm, embed_out.  The fused
 * query_key_value holds each head's [q; k; v] in turn, and its q and k
 * rows turn by rotate-half over the first R dims (pairs (i, i + R/2)):
 * neox_qkv_row puts every row where the engine wants it.  The buffers
 * older files carry (attention.bias, attention.masked_bias,
 * rotary_emb.inv_freq) are ignored.
 *
 * The tokenizer is the directory's tokenizer.json (tok-hfjson.h: Pythia's
 * byte-level BPE, its NFC normalizer and its added tokens), else GPT-2's
 * vocab.json + merges.txt; --tokenizer gives another.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "safetensors.h"

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

/* ------------------------------------------------------------ config.json */

/* config.json at path when its model_type is gpt_neox, else NULL. */
static json_t *neox_config(const char *path)
{
	json_t *root = ju_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *t = json_object_get(root, "model_type");
	if (json_is_string(t) && !strcmp(json_string_value(t), "gpt_neox"))
		return root;
	json_decref(root);
	return NULL;
}

/* One RoPE number, which config.json may spell three ways: old (o[old]),
 * new (o[key]) or nested (rope_parameters[key]).  0 with *out set, 1 when
 * absent (*out untouched), -1 + e when one is not a number or two differ
 * (which one HF takes depends on its version). */
static int rope_number(json_t *o, const char *old, const char *key, double *out, struct err *e)
{
	json_t *rp = json_object_get(o, "rope_parameters");
	json_t *v[3] = { json_object_get(o, old), json_object_get(o, key),
			 json_is_object(rp) ? json_object_get(rp, key) : NULL };
	const char *name[3] = { old, key, "rope_parameters." };
	int found = -1;
	for (int i = 0; i < 3; i++) {
		if (!v[i] || json_is_null(v[i]))
			continue;
		if (!json_is_number(v[i]))
			return err_set(e, "config.json: %s%s must be a number", name[i], i == 2 ? key : "");
		if (found >= 0 && json_number_value(v[i]) != *out)
			return err_set(e, "config.json: %s%s %g and %s%s %g disagree", name[found],
				       found == 2 ? key : "", *out, name[i], i == 2 ? key : "",
				       json_number_value(v[i]));
		if (found < 0)
			found = i;
		*out = json_number_value(v[i]);
	}
	return found < 0;
}

/* RoPE: theta, the rotary dims of each head, and what the engine cannot do. */
static int parse_rope(json_t *o, struct model_config *c, struct err *e)
{
	json_t *rs = json_object_get(o, "rope_scaling"), *rp = json_object_get(o, "rope_parameters");
	if (rs && !json_is_null(rs))
		return err_set(e, "config.json: rope_scaling is not supported");
	json_t *type = json_is_object(rp) ? json_object_get(rp, "rope_type") : NULL;
	if (type && !json_is_null(type) &&
	    (!json_is_string(type) || strcmp(json_string_value(type), "default")))
		return err_set(e, "config.json: rope_parameters.rope_type %.40s is not supported "
			       "(default only)", json_is_string(type) ? json_string_value(type) : "?");
	double theta = 10000.0, pct = 0.25;
	if (rope_number(o, "rotary_emb_base", "rope_theta", &theta, e) < 0 ||
	    rope_number(o, "rotary_pct", "partial_rotary_factor", &pct, e) < 0)
		return -1;
	int D = c->d_model / c->n_head;
	if (!(pct > 0.0 && pct <= 1.0))
		return err_set(e, "config.json: rotary_pct %g is not in (0, 1]", pct);
	int R = (int)(D * pct); /* as HF: int(head_size * rotary_pct) */
	if (R < 2 || R % 2)
		return err_set(e, "config.json: rotary_pct %g gives %d rotary dims of the head's %d; "
			       "the engine needs an even number, 2 or more", pct, R, D);
	c->pos = POS_ROPE;
	c->rope_theta = (float)theta;
	c->rotary_dims = R == D ? 0 : R;
	return 0;
}

static int parse_config(json_t *o, struct model_config *c, bool *attn_bias, struct err *e)
{
	if (ld_hf_shape(o, c, e))
		return -1;
	if (c->d_model % c->n_head)
		return err_set(e, "config.json: hidden_size %d is not divisible by "
			       "num_attention_heads %d", c->d_model, c->n_head);
	float eps = 1e-5f;
	const char *act = "gelu";
	bool parallel = true, tied = false;
	*attn_bias = true;
	if (ju_get_float(o, "layer_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_bool(o, "use_parallel_residual", "config.json", JU_NULL_ABSENT, &parallel, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0 ||
	    ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, attn_bias, e) < 0)
		return -1;
	if (!strcmp(act, "gelu"))
		c->mlp = MLP_GELU_EXACT;
	else if (!strcmp(act, "gelu_new"))
		c->mlp = MLP_GELU;
	else
		return err_set(e, "config.json: hidden_act \"%.40s\" is not supported (gelu and "
			       "gelu_new are)", act);
	if (parse_rope(o, c, e))
		return -1;
	c->norm = NORM_LAYER;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->parallel = parallel;
	c->bias = true;
	c->tied = tied;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* The fused query_key_value weight (3C, C) and bias (3C; NULL: none in
 * the file) of one layer into the engine's rows. */
static int read_qkv(struct ld_shards *s, const char *wname, const char *bname,
		    const struct model_config *c, float *w, float *b, float *tmp, struct err *e)
{
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), R = cfg_rotary_dims(c);
	if (ld_shards_read(s, wname, 3 * (uint64_t)C, (uint64_t)C, tmp, e))
		return -1;
	for (int r = 0; r < 3 * C; r++)
		memcpy(w + (size_t)neox_qkv_row(r, H, D, R) * C, tmp + (size_t)r * C,
		       (size_t)C * sizeof(float));
	if (!bname)
		return 0;
	if (ld_shards_read(s, bname, 3 * (uint64_t)C, 0, tmp, e))
		return -1;
	for (int r = 0; r < 3 * C; r++)
		b[neox_qkv_row(r, H, D, R)] = tmp[r];
	return 0;
}

/* Layer l's tensors. */
static int read_layer(struct ld_shards *s, struct model *m, int l, bool attn_bias, float *tmp,
		      struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, F = (uint64_t)c->d_ff;
	char wn[128], bn[128];
#define N(buf, fmt) (snprintf(buf, sizeof buf, "gpt_neox.layers.%d." fmt, l), buf)
#define AT(id, n) (m->p[id] + (size_t)l * (n))
	if (read_qkv(s, N(wn, "attention.query_key_value.weight"),
		     attn_bias ? N(bn, "attention.query_key_value.bias") : NULL, c,
		     AT(P_QKVW, 3 * C * C), AT(P_QKVB, 3 * C), tmp, e))
		return -1;
	if (ld_shards_read(s, N(wn, "input_layernorm.weight"), C, 0, AT(P_LN1W, C), e) ||
	    ld_shards_read(s, N(wn, "input_layernorm.bias"), C, 0, AT(P_LN1B, C), e) ||
	    ld_shards_read(s, N(wn, "post_attention_layernorm.weight"), C, 0, AT(P_LN2W, C), e) ||
	    ld_shards_read(s, N(wn, "post_attention_layernorm.bias"), C, 0, AT(P_LN2B, C), e) ||
	    ld_shards_read(s, N(wn, "attention.dense.weight"), C, C, AT(P_ATTPROJW, C * C), e) ||
	    (attn_bias &&
	     ld_shards_read(s, N(wn, "attention.dense.bias"), C, 0, AT(P_ATTPROJB, C), e)) ||
	    ld_shards_read(s, N(wn, "mlp.dense_h_to_4h.weight"), F, C, AT(P_FCW, F * C), e) ||
	    ld_shards_read(s, N(wn, "mlp.dense_h_to_4h.bias"), F, 0, AT(P_FCB, F), e) ||
	    ld_shards_read(s, N(wn, "mlp.dense_4h_to_h.weight"), C, F, AT(P_FCPROJW, C * F), e) ||
	    ld_shards_read(s, N(wn, "mlp.dense_4h_to_h.bias"), C, 0, AT(P_FCPROJB, C), e))
		return -1;
#undef AT
#undef N
	return 0;
}

/* Buffers some files carry that hold no weights. */
static bool ignored_tensor(const char *name)
{
	static const char *const tails[] = { ".attention.bias", ".attention.masked_bias",
					     "rotary_emb.inv_freq" };
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
		size_t k = strlen(tails[i]);
		if (n >= k && !strcmp(name + n - k, tails[i]))
			return true;
	}
	return false;
}

static int read_weights(struct ld_shards *s, struct model *m, bool attn_bias, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, V = (uint64_t)c->vocab_size;
	float *tmp = xmalloc_aligned(3 * (size_t)C * C * sizeof(float));
	int rc = -1;
	if (ld_shards_read(s, "gpt_neox.embed_in.weight", V, C, m->p[P_WTE], e))
		goto out;
	for (int l = 0; l < c->n_layer; l++)
		if (read_layer(s, m, l, attn_bias, tmp, e))
			goto out;
	if (ld_shards_read(s, "gpt_neox.final_layer_norm.weight", C, 0, m->p[P_LNFW], e) ||
	    ld_shards_read(s, "gpt_neox.final_layer_norm.bias", C, 0, m->p[P_LNFB], e))
		goto out;
	if (!c->tied && ld_shards_read(s, "embed_out.weight", V, C, m->p[P_LMHEAD], e))
		goto out;
	if (c->tied && ld_shards_tied(s, "embed_out.weight", "gpt_neox.embed_in.weight",
				      m->p[P_WTE], V, C, "tie_word_embeddings true", e))
		goto out; /* a copy of embed_in is checked, then left */
	rc = ld_shards_all_read(s, ignored_tensor, e);
out:
	free(tmp);
	return rc;
}

/* Refuses a config.json that asks for more weights than the files hold,
 * before the model is allocated (a few edited digits could ask for
 * gigabytes): what is allocated follows what is on disk. */
static int check_size(const struct ld_shards *s, const struct model_config *c, bool attn_bias,
		      struct err *e)
{
	size_t shape[3];
	int nd;
	double need = (double)config_param_count(c);
	if (!attn_bias) /* the projections' biases stay 0, absent from the files */
		need -= (double)param_shape(c, P_QKVB, shape, &nd) +
			(double)param_shape(c, P_ATTPROJB, shape, &nd);
	return ld_shards_check_size(s, need, e);
}

/* ----------------------------------------------------------------- format */

static bool probe_neox(const char *path, char *why, size_t n)
{
	return ld_probe_hf_dir(path, neox_config, "a GPT-NeoX model", why, n);
}

static struct model *load_neox(const char *path, const struct load_opts *o, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = neox_config(cfgp);
	struct model_config cfg;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct ld_shards sh = { .n = 0 };
	bool attn_bias = true;
	free(cfgp);
	if (!root) {
		err_set(e, "config.json: not a GPT-NeoX model, or not JSON");
		goto fail;
	}
	if (parse_config(root, &cfg, &attn_bias, e))
		goto fail;
	tok = ld_hf_tokenizer(o->tokenizer, path, e);
	if (!tok)
		goto fail_noprefix;
	if (ld_tokenizer_fits(tok, cfg.vocab_size, e))
		goto fail;
	if (ld_shards_open(path, &sh, e) || check_size(&sh, &cfg, attn_bias, e))
		goto fail;
	m = model_new(&cfg, e);
	if (!m || read_weights(&sh, m, attn_bias, e))
		goto fail;
	ld_shards_close(&sh);
	json_decref(root);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = ld_basename(path, NULL);
	return m;
fail:
	err_prefix(e, "%s", path);
fail_noprefix:
	ld_shards_close(&sh);
	tok_free(tok);
	model_free(m);
	json_decref(root);
	return NULL;
}

static int describe_neox(const char *path, struct model_config *c, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = neox_config(cfgp);
	bool attn_bias = true;
	free(cfgp);
	int rc = root ? parse_config(root, c, &attn_bias, e)
		      : err_set(e, "config.json: not a GPT-NeoX model, or not JSON");
	if (rc)
		err_prefix(e, "%s", path);
	json_decref(root);
	return rc;
}

const struct model_format format_hf_neox = {
	"hf-neox", "Hugging Face GPT-NeoX directory (Pythia)", probe_neox, load_neox, describe_neox,
};
