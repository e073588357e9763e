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
 * neox_qkv_row puts every row where the engine wants it (hf-load.c reads
 * through the map below).  The buffers
 * older files carry (attention.bias, attention.masked_bias,
 * rotary_emb.inv_freq) are ignored.
 *
 * The tokenizer is the directory's tokenizer.json (tok-hfjson.h: Pythia's
 * byte-level BPE, its NFC normalizer and its added tokens), else GPT-2's
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

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	if (ld_hf_shape(o, c, e))
		return -1;
	if (c->d_model % c->n_head)
		return err_set(e, "config.json: hidden_size %d is not divisible by "
			       "num_attention_heads %d", c->d_model, c->n_head);
	float eps = 1e-5f;
	const char *act = "gelu";
	bool parallel = true, tied = false, attn_bias = true;
	if (ju_get_float(o, "layer_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_bool(o, "use_parallel_residual", "config.json", JU_NULL_ABSENT, &parallel, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0 ||
	    ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, &attn_bias, e) < 0)
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
	x->opts = attn_bias ? HF_OPT_ATTN_BIAS : 0; /* without, those biases stay 0 */
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

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gpt_neox", NULL };

/* Buffers some files carry that hold no weights. */
static const char *const ignored[] = { ".attention.bias", ".attention.masked_bias",
				       "rotary_emb.inv_freq", NULL };

#define L_ "gpt_neox.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "gpt_neox.embed_in.weight", .p = P_WTE },
	{ .name = L_ "input_layernorm.weight", .p = P_LN1W },
	{ .name = L_ "input_layernorm.bias", .p = P_LN1B },
	{ .name = L_ "attention.query_key_value.weight", .p = P_QKVW, .xf = HF_NEOX_QKV },
	{ .name = L_ "attention.query_key_value.bias", .p = P_QKVB, .xf = HF_NEOX_QKV,
	  .when = HF_OPT_ATTN_BIAS },
	{ .name = L_ "attention.dense.weight", .p = P_ATTPROJW },
	{ .name = L_ "attention.dense.bias", .p = P_ATTPROJB, .when = HF_OPT_ATTN_BIAS },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_LN2W },
	{ .name = L_ "post_attention_layernorm.bias", .p = P_LN2B },
	{ .name = L_ "mlp.dense_h_to_4h.weight", .p = P_FCW },
	{ .name = L_ "mlp.dense_h_to_4h.bias", .p = P_FCB },
	{ .name = L_ "mlp.dense_4h_to_h.weight", .p = P_FCPROJW },
	{ .name = L_ "mlp.dense_4h_to_h.bias", .p = P_FCPROJB },
	{ .name = "gpt_neox.final_layer_norm.weight", .p = P_LNFW },
	{ .name = "gpt_neox.final_layer_norm.bias", .p = P_LNFB },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_neox = {
	.what = "a GPT-NeoX model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "embed_out.weight",
	.ignored = ignored,
};

const struct model_format format_hf_neox = {
	"hf-neox", "Hugging Face GPT-NeoX directory (Pythia)", .hf = &hf_neox,
};
