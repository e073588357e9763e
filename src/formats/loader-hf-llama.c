/*
 * loader-hf-llama.c — Hugging Face Llama-family directories ("hf-llama"):
 * config.json with model_type "llama", "qwen2" or "mistral" (Llama 2/3,
 * TinyLlama, SmolLM/SmolLM2, Qwen2, Mistral).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads (default:
 *   the heads), hidden_size, intermediate_size, vocab_size,
 *   max_position_embeddings; RMSNorm with rms_norm_eps, pre-norm, RoPE with
 *   rope_theta (10000), SwiGLU (hidden_act silu), untied unless
 *   tie_word_embeddings is true (transformers' default for these three
 *   families is false): lm_head.weight is then required, and when tied a
 *   lm_head.weight in the file must equal the embeddings (it is refused,
 *   not ignored, when it differs); head_dim, when given, must be
 *   hidden_size / heads.  Qwen2's Q/K/V biases are read (the engine's other
 *   biases stay 0, which is exact).  Mistral's sliding_window (Qwen2's
 *   only with use_sliding_window true), when smaller than the context,
 *   becomes the context: within it the window is exact.
 *   rope_scaling, attention_bias on every projection and other hidden_act
 *   values are refused by name.
 *
 * Weights (model.safetensors, or the shards a model.safetensors.index.json
 * names): model.embed_tokens, model.layers.N.{input_layernorm,
 * self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
 * model.norm, lm_head.  HF's rotary embedding turns dimension pairs
 * (i, i + D/2) of each head; the engine turns (2i, 2i + 1) with the same
 * frequency: the rows of each Q and K head are permuted on load
 * (llama_rope_row), after which the numbers are the same.
 *
 * The tokenizer is the directory's tokenizer.json when it has one, read by
 * tok-hfjson.c (BPE models: Llama 3 and Qwen2's Split patterns, Digits,
 * sentencepiece-style BPE with byte fallback; WordPiece and Unigram
 * models and other unsupported parts are refused by name), else GPT-2's
 * vocab.json + merges.txt; --tokenizer gives another.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "safetensors.h"

int llama_rope_row(int r, int D)
{
	int i = r % D, head = r - i;
	return head + (i < D / 2 ? 2 * i : 2 * (i - D / 2) + 1);
}

/* ------------------------------------------------------------ config.json */

static const char *const families[] = { "llama", "qwen2", "mistral" };

/* model_type of config.json at path when it is one of ours, else NULL
 * (the string lives in *root, which the caller frees). */
static const char *family_of(const char *path, json_t **root)
{
	*root = ju_load_file(path, 0, NULL);
	json_t *t = json_object_get(*root, "model_type");
	for (size_t i = 0; json_is_string(t) && i < sizeof families / sizeof *families; i++)
		if (!strcmp(json_string_value(t), families[i]))
			return families[i];
	return NULL;
}

static int parse_config(json_t *o, const char *family, struct model_config *c, bool *qkv_bias,
			struct err *e)
{
	if (ld_hf_shape(o, c, e))
		return -1;
	int hd = 0, window = 0;
	if (LD_HF_INT(o, "num_key_value_heads", 0, &c->n_kv_head, e) < 0 ||
	    LD_HF_INT(o, "head_dim", 0, &hd, e) < 0 || LD_HF_INT(o, "sliding_window", 0, &window, e) < 0)
		return -1;
	if (hd && (int64_t)hd * c->n_head != c->d_model) /* in 64 bits: both may be 2^30 */
		return err_set(e, "config.json: head_dim %d is not hidden_size / num_attention_heads "
			       "(%d); the engine needs that", hd, c->d_model / c->n_head);
	/* Qwen2 windows attention only when use_sliding_window is true */
	bool windowed = strcmp(family, "qwen2") != 0;
	if (ju_get_bool(o, "use_sliding_window", "config.json", JU_NULL_ABSENT, &windowed, e) < 0)
		return -1;
	if (windowed && window && window < c->context) /* exact up to the window */
		c->context = window;
	float eps = 1e-6f, theta = 10000.0f;
	if (ju_get_float(o, "rms_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_float(o, "rope_theta", "config.json", JU_NULL_ABSENT, &theta, e) < 0)
		return -1;
	const char *act = NULL;
	if (ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0)
		return -1;
	if (act && strcmp(act, "silu"))
		return err_set(e, "config.json: hidden_act \"%.40s\" is not supported (SwiGLU with "
			       "silu only)", act);
	json_t *rs = json_object_get(o, "rope_scaling");
	if (rs && !json_is_null(rs))
		return err_set(e, "config.json: rope_scaling is not supported");
	bool b = false;
	if (ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, &b, e) < 0)
		return -1;
	if (b)
		return err_set(e, "config.json: attention_bias true is not supported");
	b = false; /* LlamaConfig's, Qwen2Config's and MistralConfig's default */
	if (ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &b, e) < 0)
		return -1;
	c->tied = b;
	c->norm = NORM_RMS;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = theta;
	c->mlp = MLP_SWIGLU;
	*qkv_bias = !strcmp(family, "qwen2");
	c->bias = *qkv_bias; /* the other biases exist, all 0 */
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* Reads a Q or K projection (rows heads x D, cols C) into dst with each
 * head's rows in the engine's RoPE order; bias likewise when b is set. */
static int read_rope_rows(struct ld_shards *s, const char *name, int heads, int D, int C, float *dst,
			  float *tmp, struct err *e)
{
	if (ld_shards_read(s, name, (uint64_t)heads * D, (uint64_t)C, tmp, e))
		return -1;
	for (int r = 0; r < heads * D; r++)
		memcpy(dst + (size_t)llama_rope_row(r, D) * C, tmp + (size_t)r * C, (size_t)C * sizeof(float));
	return 0;
}

static int read_rope_bias(struct ld_shards *s, const char *name, int heads, int D, float *dst,
			  float *tmp, struct err *e)
{
	if (ld_shards_read(s, name, (uint64_t)heads * D, 0, tmp, e))
		return -1;
	for (int r = 0; r < heads * D; r++)
		dst[llama_rope_row(r, D)] = tmp[r];
	return 0;
}

/* What a Llama file may hold that the engine computes or shares. */
static bool ignored(const char *name)
{
	return strstr(name, "rotary_emb.inv_freq") != NULL;
}

static int read_weights(struct ld_shards *s, struct model *m, bool qkv_bias, struct err *e)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), F = c->d_ff;
	size_t QKV = (size_t)cfg_qkv_rows(c, K);
	float *tmp = xmalloc_aligned((size_t)(F > C ? F : C) * C * sizeof(float));
	char name[128];
	int rc = -1;
#define N(fmt) (snprintf(name, sizeof name, "model.layers.%d." fmt, l), name)
	if (ld_shards_read(s, "model.embed_tokens.weight", (uint64_t)c->vocab_size, (uint64_t)C,
			m->p[P_WTE], e))
		goto out;
	for (int l = 0; l < c->n_layer; l++) {
		float *qkv = m->p[P_QKVW] + (size_t)l * QKV * C;
		float *qb = qkv_bias ? m->p[P_QKVB] + (size_t)l * QKV : NULL;
		float *fc = m->p[P_FCW] + (size_t)l * 2 * F * C;
		if (ld_shards_read(s, N("input_layernorm.weight"), (uint64_t)C, 0, m->p[P_LN1W] + (size_t)l * C, e) ||
		    read_rope_rows(s, N("self_attn.q_proj.weight"), H, D, C, qkv, tmp, e) ||
		    read_rope_rows(s, N("self_attn.k_proj.weight"), K, D, C, qkv + (size_t)H * D * C, tmp, e) ||
		    ld_shards_read(s, N("self_attn.v_proj.weight"), (uint64_t)K * D, (uint64_t)C,
				qkv + (size_t)(H + K) * D * C, e) ||
		    ld_shards_read(s, N("self_attn.o_proj.weight"), (uint64_t)C, (uint64_t)C,
				m->p[P_ATTPROJW] + (size_t)l * C * C, e) ||
		    ld_shards_read(s, N("post_attention_layernorm.weight"), (uint64_t)C, 0,
				m->p[P_LN2W] + (size_t)l * C, e) ||
		    ld_shards_read(s, N("mlp.gate_proj.weight"), (uint64_t)F, (uint64_t)C, fc, e) ||
		    ld_shards_read(s, N("mlp.up_proj.weight"), (uint64_t)F, (uint64_t)C, fc + (size_t)F * C, e) ||
		    ld_shards_read(s, N("mlp.down_proj.weight"), (uint64_t)C, (uint64_t)F,
				m->p[P_FCPROJW] + (size_t)l * C * F, e))
			goto out;
		if (qb && (read_rope_bias(s, N("self_attn.q_proj.bias"), H, D, qb, tmp, e) ||
			   read_rope_bias(s, N("self_attn.k_proj.bias"), K, D, qb + (size_t)H * D, tmp, e) ||
			   ld_shards_read(s, N("self_attn.v_proj.bias"), (uint64_t)K * D, 0,
				       qb + (size_t)(H + K) * D, e)))
			goto out;
	}
#undef N
	if (ld_shards_read(s, "model.norm.weight", (uint64_t)C, 0, m->p[P_LNFW], e))
		goto out;
	struct st_file *f;
	if (!c->tied && !ld_shards_find(s, "lm_head.weight", &f)) {
		err_set(e, "missing tensor \"lm_head.weight\" (config.json: tie_word_embeddings is "
			"false, or absent: false is the family's default)");
		goto out;
	}
	if (c->tied ? ld_shards_tied(s, "lm_head.weight", "model.embed_tokens.weight", m->p[P_WTE],
				     (uint64_t)c->vocab_size, (uint64_t)C,
				     "tie_word_embeddings true", e)
		    : ld_shards_read(s, "lm_head.weight", (uint64_t)c->vocab_size, (uint64_t)C,
				     m->p[P_LMHEAD], e))
		goto out;
	/* every tensor read, but RoPE's frequencies */
	rc = ld_shards_all_read(s, ignored, e);
out:
	free(tmp);
	return rc;
}

/* ----------------------------------------------------------------- format */

/* config.json's parsed root when it is of a family above, else NULL. */
static json_t *llama_config(const char *path)
{
	json_t *root = NULL;
	if (family_of(path, &root))
		return root;
	json_decref(root);
	return NULL;
}

static bool probe_llama(const char *path, char *why, size_t n)
{
	return ld_probe_hf_dir(path, llama_config, "a Llama, Qwen2 or Mistral model", why, n);
}

static int describe_llama(const char *path, struct model_config *c, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = NULL;
	const char *family = family_of(cfgp, &root);
	bool qkv_bias;
	int rc = family ? parse_config(root, family, c, &qkv_bias, e)
			: err_set(e, "config.json: not a Llama, Qwen2 or Mistral model");
	if (rc)
		err_prefix(e, "%s", path);
	json_decref(root);
	free(cfgp);
	return rc;
}

static struct model *load_llama(const char *path, const struct load_opts *o, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = NULL;
	const char *family = family_of(cfgp, &root);
	struct model_config cfg;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct ld_shards sh = { .n = 0 };
	bool qkv_bias = false;
	if (!family || parse_config(root, family, &cfg, &qkv_bias, e))
		goto fail;
	tok = ld_hf_tokenizer(o->tokenizer, path, e);
	if (!tok)
		goto fail_noprefix;
	if (ld_tokenizer_fits(tok, cfg.vocab_size, e))
		goto fail;
	if (ld_shards_open(path, &sh, e))
		goto fail;
	uint64_t held = ld_shards_values(&sh), need = config_param_count(&cfg);
	if (need / 2 > held) {
		err_set(e, "config.json describes %" PRIu64 " parameters but the weights hold %" PRIu64
			" values", need, held);
		goto fail;
	}
	m = model_new(&cfg, e);
	if (!m || read_weights(&sh, m, qkv_bias, e))
		goto fail;
	ld_shards_close(&sh);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = ld_basename(path, NULL);
	json_decref(root);
	free(cfgp);
	return m;
fail:
	err_prefix(e, "%s", path);
fail_noprefix:
	ld_shards_close(&sh);
	tok_free(tok);
	model_free(m);
	json_decref(root);
	free(cfgp);
	return NULL;
}

const struct model_format format_hf_llama = {
	"hf-llama", "Hugging Face Llama-family directory (Llama, Qwen2, Mistral)", probe_llama,
	load_llama, describe_llama,
};
