/*
 * loader-hf-llama.c — Hugging Face Llama-family directories ("hf-llama"):
 * config.json with model_type "llama", "qwen2", "qwen3" or "mistral"
 * (Llama 2/3, TinyLlama, SmolLM/SmolLM2, Qwen2, Qwen3 (dense), Mistral).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads (default:
 *   the heads), hidden_size, intermediate_size, vocab_size,
 *   max_position_embeddings; RMSNorm with rms_norm_eps, pre-norm, RoPE with
 *   rope_theta (10000), SwiGLU (hidden_act silu), untied unless
 *   tie_word_embeddings is true (transformers' default for these three
 *   families is false): lm_head.weight is then required, and when tied a
 *   lm_head.weight in the file must equal the embeddings (it is refused,
 *   not ignored, when it differs); head_dim, when given, is each
 *   head's width (q_proj (H * head_dim, hidden), o_proj (hidden,
 *   H * head_dim)), hidden_size / heads when absent.  Qwen2's Q/K/V
 *   biases are read (the engine's other biases stay 0, which is exact).
 *   Qwen3 adds an RMSNorm of each query and key head before RoPE
 *   (self_attn.q_norm / k_norm, head_dim wide; config qk_norm) and has no
 *   biases.  Mistral's sliding_window (Qwen2's and Qwen3's only with
 *   use_sliding_window true), when smaller than the context,
 *   becomes the context: within it the window is exact.
 *   rope_scaling: none, "linear" (factor) or Llama 3.1/3.2's "llama3"
 *   (factor, low_freq_factor, high_freq_factor,
 *   original_max_position_embeddings; "type" is the older name of
 *   "rope_type"); "dynamic" (frequencies that follow the sequence length,
 *   which a KV cache cannot), "yarn", "longrope" and unknown keys are
 *   refused by name.  A max_position_embeddings above the engine's
 *   CFG_MAX_CONTEXT (Llama 3.1's 131072) becomes that limit: RoPE has no
 *   table, so shorter texts are exact.  attention_bias on every projection
 *   and other hidden_act values are refused by name.
 *
 * Weights (model.safetensors, or the shards a model.safetensors.index.json
 * names): model.embed_tokens, model.layers.N.{input_layernorm,
 * self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
 * model.norm, lm_head.  HF's rotary embedding turns dimension pairs
 * (i, i + D/2) of each head; the engine turns (2i, 2i + 1) with the same
 * frequency: the rows of each Q and K head are permuted on load
 * (llama_rope_row), after which the numbers are the same.  hf-load.c
 * does the reading, through the map below.
 *
 * The tokenizer is the directory's tokenizer.json when it has one, read by
 * tok-hfjson.c (BPE models: Llama 3 and Qwen2's Split patterns, Digits,
 * sentencepiece-style BPE with byte fallback; WordPiece and Unigram
 * models and other unsupported parts are refused by name), else GPT-2's
 * vocab.json + merges.txt; --tokenizer gives another.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"

/* ------------------------------------------------------------ config.json */

/* A rope_scaling number: a float, or an integer in 1..2^30 (int_out). */
static int scaling_number(json_t *rs, const char *key, float *out, int *int_out, struct err *e)
{
	if (!json_object_get(rs, key))
		return err_set(e, "config.json: rope_scaling needs \"%s\"", key);
	if (int_out)
		return ju_get_int(rs, key, "config.json: rope_scaling", JU_REQUIRED, 1, 1 << 30,
				  int_out, e);
	return ju_get_float(rs, key, "config.json: rope_scaling", JU_REQUIRED, out, e);
}

/* rope_scaling: null or absent, {"rope_type" (or the older "type"):
 * "default"}, {"linear", factor} or {"llama3", factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings} (Llama 3.1/3.2).
 * Other kinds and keys are refused by name; config_validate checks the
 * numbers. */
static int parse_rope_scaling(json_t *rs, struct model_config *c, struct err *e)
{
	static const char *const keys[] = { "rope_type", "type", "factor", "low_freq_factor",
		"high_freq_factor", "original_max_position_embeddings" };
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return err_set(e, "config.json: rope_scaling is not an object");
	const char *key, *type = NULL;
	json_t *v;
	json_object_foreach(rs, key, v) {
		size_t k = 0;
		while (k < sizeof keys / sizeof keys[0] && strcmp(key, keys[k]))
			k++;
		if (k == sizeof keys / sizeof keys[0])
			return err_set(e, "config.json: rope_scaling key \"%.40s\" is not supported", key);
		if (k < 2 && !json_is_string(v))
			return err_set(e, "config.json: rope_scaling.%s is not a string", key);
		if (k < 2 && type && strcmp(type, json_string_value(v)))
			return err_set(e, "config.json: rope_scaling's rope_type and type differ");
		if (k < 2)
			type = json_string_value(v);
	}
	if (!type)
		return err_set(e, "config.json: rope_scaling has no rope_type");
	int n_keys = (int)json_object_size(rs) - (json_object_get(rs, "type") != NULL) -
		     (json_object_get(rs, "rope_type") != NULL);
	if (!strcmp(type, "default") && n_keys == 0)
		return 0;
	if (!strcmp(type, "linear") && n_keys == 1) {
		c->rope_scaling = ROPE_SCALE_LINEAR;
		return scaling_number(rs, "factor", &c->rope_factor, NULL, e);
	}
	if (!strcmp(type, "llama3") && n_keys == 4) {
		c->rope_scaling = ROPE_SCALE_LLAMA3;
		return scaling_number(rs, "factor", &c->rope_factor, NULL, e) ||
		       scaling_number(rs, "low_freq_factor", &c->rope_low_freq, NULL, e) ||
		       scaling_number(rs, "high_freq_factor", &c->rope_high_freq, NULL, e) ||
		       scaling_number(rs, "original_max_position_embeddings", NULL,
				      &c->rope_orig_context, e) ? -1 : 0;
	}
	if (!strcmp(type, "default") || !strcmp(type, "linear") || !strcmp(type, "llama3"))
		return err_set(e, "config.json: rope_scaling %.40s takes %s", type,
			       !strcmp(type, "default") ? "no other keys" : !strcmp(type, "linear") ?
			       "factor only" : "factor, low_freq_factor, high_freq_factor and "
			       "original_max_position_embeddings");
	if (!strcmp(type, "dynamic"))
		return err_set(e, "config.json: rope_scaling dynamic is not supported: its "
			       "frequencies change with the sequence length, which a KV cache "
			       "cannot follow");
	if (!strcmp(type, "yarn") || !strcmp(type, "longrope"))
		return err_set(e, "config.json: rope_scaling %s is not supported yet", type);
	return err_set(e, "config.json: rope_scaling type \"%.40s\" is not supported", type);
}

static int parse_config(json_t *o, const char *family, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)x;
	int window = 0; /* (Llama 3.1/3.2's 131072 positions: cut by ld_hf_rope_shape) */
	if (ld_hf_rope_shape(o, c, e) || ld_hf_head_dim(o, c, 0, e) ||
	    LD_HF_INT(o, "sliding_window", 0, &window, e) < 0)
		return -1;
	/* Qwen2 and Qwen3 window attention only when use_sliding_window is true */
	bool qwen3 = !strcmp(family, "qwen3");
	bool windowed = strcmp(family, "qwen2") != 0 && !qwen3;
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
	if (parse_rope_scaling(json_object_get(o, "rope_scaling"), c, e))
		return -1;
	bool b = false;
	if (ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, &b, e) < 0)
		return -1;
	if (b)
		return err_set(e, "config.json: attention_bias true is not supported");
	b = false; /* the default of LlamaConfig, Qwen2Config, Qwen3Config and MistralConfig */
	if (ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &b, e) < 0)
		return -1;
	c->tied = b;
	c->norm = NORM_RMS;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = theta;
	c->mlp = MLP_SWIGLU;
	c->bias = !strcmp(family, "qwen2"); /* Q/K/V biases; the other biases exist, all 0 */
	c->qk_norm = qwen3;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "llama", "qwen2", "qwen3", "mistral", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

/* Q/K/V biases are read when the config has them (Qwen2's c->bias), the
 * q/k norm's scales likewise (Qwen3's c->qk_norm: one head's D values,
 * permuted as each head's rows are). */
#define L_ "model.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "model.embed_tokens.weight", .p = P_WTE },
	{ .name = L_ "input_layernorm.weight", .p = P_LN1W },
	{ .name = L_ "self_attn.q_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE },
	{ .name = L_ "self_attn.v_proj.weight", .p = P_QKVW, .part = HF_V },
	{ .name = L_ "self_attn.q_proj.bias", .p = P_QKVB, .part = HF_Q, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_proj.bias", .p = P_QKVB, .part = HF_K, .xf = HF_ROPE },
	{ .name = L_ "self_attn.v_proj.bias", .p = P_QKVB, .part = HF_V },
	{ .name = L_ "self_attn.q_norm.weight", .p = P_QNORMW, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_norm.weight", .p = P_KNORMW, .xf = HF_ROPE },
	{ .name = L_ "self_attn.o_proj.weight", .p = P_ATTPROJW },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_LN2W },
	{ .name = L_ "mlp.gate_proj.weight", .p = P_FCW, .part = HF_GATE },
	{ .name = L_ "mlp.up_proj.weight", .p = P_FCW, .part = HF_UP },
	{ .name = L_ "mlp.down_proj.weight", .p = P_FCPROJW },
	{ .name = "model.norm.weight", .p = P_LNFW },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_llama = {
	.what = "a Llama, Qwen2, Qwen3 or Mistral model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "lm_head.weight",
	.ignored = ignored,
};

const struct model_format format_hf_llama = {
	"hf-llama", "Hugging Face Llama-family directory (Llama, Qwen2, Qwen3, Mistral)",
	.hf = &hf_llama,
};
