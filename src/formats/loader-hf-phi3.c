/*
 * loader-hf-phi3.c — Hugging Face Phi-3 directories ("hf-phi3"):
 * config.json with model_type "phi3" (Phi3ForCausalLM: Phi-3-mini-4k,
 * and the same layout with LongRoPE in Phi-3-mini-128k, Phi-3.5-mini and
 * Phi-4-mini).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads (default:
 *   the heads), hidden_size, intermediate_size, vocab_size,
 *   max_position_embeddings; RMSNorm with rms_norm_eps (1e-5), pre-norm,
 *   RoPE with rope_theta (10000) over the first head_dim *
 *   partial_rotary_factor dims of each head (rotary_dims; Phi-4-mini's
 *   0.75 turns 96 of 128), SwiGLU (hidden_act silu), untied unless
 *   tie_word_embeddings is true (Phi3Config's default is false; Phi-4-mini
 *   ties).  sliding_window, when set and below the context, masks as
 *   transformers does in eager and sdpa attention (query i sees keys j
 *   with i - j < sliding_window, itself included): every layer local over
 *   that window (config.h local_window); Phi-3-mini-4k's 2047 against its
 *   4096 positions.  head_dim, when given, must be hidden_size / heads
 *   (the fused rows are read at that width only).
 *   rope_scaling null (or "default"), or LongRoPE: type (or rope_type)
 *   "longrope", or "su" as Phi-3-mini-128k first spelled it, with
 *   short_factor and long_factor, R/2 factors each above 0 (R the turned
 *   dims), into config.h's ROPE_SCALE_LONGROPE: the original context is
 *   original_max_position_embeddings (beside rope_scaling, as Phi-3 spells
 *   it, or inside), else max_position_embeddings; the attention factor is
 *   rope_scaling's attention_factor, else sqrt(1 + ln f / ln original)
 *   with f rope_scaling's factor or else max_position_embeddings / the
 *   original context (1 when f <= 1), transformers' rule.  Every other
 *   kind, and keys LongRoPE does not read, are refused by name, as are
 *   other hidden_act values.
 *
 * Weights (model.safetensors or shards): model.embed_tokens,
 * model.layers.N.{input_layernorm, self_attn.qkv_proj, self_attn.o_proj,
 * post_attention_layernorm, mlp.gate_up_proj, mlp.down_proj},
 * model.norm, lm_head.  qkv_proj's rows are [q (H*D); k (K*D); v (K*D)]
 * and gate_up_proj's [gate (F); up (F)], the engine's own orders: the
 * map lists qkv_proj once per part (hf_tensor.fused) so the q and k rows
 * take rotate-half's permutation (HF turns pairs (i, i + R/2), the engine
 * (2i, 2i + 1)); gate_up_proj is read whole.
 *
 * The tokenizer is the directory's tokenizer.json (ld_hf_tokenizer):
 * Phi-3's sentencepiece-style BPE with byte fallback; Phi-4-mini's
 * byte-level BPE loads when tok-hfjson.c knows its Split pattern and is
 * refused by name otherwise; --tokenizer gives another.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"

/* ------------------------------------------------------------ config.json */

/* The kind of rope_scaling rs, from "rope_type" or its older key "type"
 * (both: the same); NULL with e set when it has none. */
static const char *scaling_type(json_t *rs, struct err *e)
{
	json_t *rt = json_object_get(rs, "rope_type"), *t = json_object_get(rs, "type");
	if ((rt && !json_is_string(rt)) || (t && !json_is_string(t)))
		return err_set(e, "config.json: rope_scaling's type is not a string"), NULL;
	if (rt && t && strcmp(json_string_value(rt), json_string_value(t)))
		return err_set(e, "config.json: rope_scaling's rope_type and type differ"), NULL;
	if (!rt && !t)
		return err_set(e, "config.json: rope_scaling has no type"), NULL;
	return json_string_value(rt ? rt : t);
}

/* One of LongRoPE's tables, key of rs: R/2 factors, each above 0. */
static int longrope_table(json_t *rs, const char *key, int R, float *out, struct err *e)
{
	int n = 0;
	if (ju_get_floats(rs, key, "config.json: rope_scaling", JU_REQUIRED, out, CFG_MAX_ROPE_PAIRS,
			  &n, e) < 0)
		return -1;
	if (n != R / 2)
		return err_set(e, "config.json: rope_scaling %s holds %d factors, not the %d of the "
			       "%d rotary dims", key, n, R / 2, R);
	for (int i = 0; i < n; i++)
		if (!(out[i] > 0.0f))
			return err_set(e, "config.json: rope_scaling %s[%d] = %g must be above 0", key, i,
				       (double)out[i]);
	return 0;
}

/* LongRoPE's original context: original_max_position_embeddings beside
 * the scaling (Phi-3's spelling, which transformers prefers), inside it,
 * or max_position_embeddings; and its attention factor: rope_scaling's
 * attention_factor, else from factor (rope_scaling's, else
 * max_position_embeddings / the original context) as
 * sqrt(1 + ln factor / ln original), 1 for a factor of 1 or less. */
static int longrope_scale(json_t *o, json_t *rs, struct model_config *c, struct err *e)
{
	const char *where = "config.json: rope_scaling";
	int max_pos = 0, orig = 0, has_factor, has_attn;
	float factor = 0.0f, attn = 0.0f;
	if (LD_HF_INT(o, "max_position_embeddings", JU_REQUIRED, &max_pos, e) < 0 ||
	    ju_get_int(rs, "original_max_position_embeddings", where, JU_NULL_ABSENT, 1, 1 << 30,
		       &orig, e) < 0 ||
	    LD_HF_INT(o, "original_max_position_embeddings", 0, &orig, e) < 0 ||
	    (has_factor = ju_get_float(rs, "factor", where, JU_NULL_ABSENT, &factor, e)) < 0 ||
	    (has_attn = ju_get_float(rs, "attention_factor", where, JU_NULL_ABSENT, &attn, e)) < 0)
		return -1;
	c->rope_orig_context = orig ? orig : max_pos;
	if (has_factor == 1) /* absent */
		factor = (float)((double)max_pos / c->rope_orig_context);
	if (has_attn == 1)
		attn = factor <= 1.0f ? 1.0f : (float)sqrt(1.0 + log((double)factor) /
							    log((double)c->rope_orig_context));
	if (!(attn > 0.0f && attn < 1e6f))
		return err_set(e, "config.json: rope_scaling's attention factor %g (factor %g over an "
			       "original context of %d) is not a positive number", (double)attn,
			       (double)factor, c->rope_orig_context);
	c->rope_attn_factor = attn;
	return 0;
}

/* rope_scaling: null, absent, {"type" / "rope_type": "default"}, or
 * LongRoPE ("longrope", or "su" as Phi-3-128k first spelled it) with
 * short_factor and long_factor over the R = rotary_dims turned dims; the
 * kind of anything else, and any key LongRoPE does not read, is named in
 * the refusal. */
static int parse_rope_scaling(json_t *o, struct model_config *c, struct err *e)
{
	static const char *const keys[] = { "type", "rope_type", "short_factor", "long_factor",
		"factor", "attention_factor", "original_max_position_embeddings", NULL };
	json_t *rs = json_object_get(o, "rope_scaling"), *v;
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return err_set(e, "config.json: rope_scaling is not an object");
	const char *type = scaling_type(rs, e), *key;
	if (!type)
		return -1;
	if (!strcmp(type, "default") && json_object_size(rs) <= 2)
		return 0;
	if (strcmp(type, "longrope") && strcmp(type, "su"))
		return err_set(e, "config.json: rope_scaling type \"%.40s\" is not supported", type);
	json_object_foreach(rs, key, v) {
		int k = 0;
		while (keys[k] && strcmp(keys[k], key))
			k++;
		if (!keys[k])
			return err_set(e, "config.json: rope_scaling key \"%.40s\" is not supported for "
				       "%s", key, type);
	}
	int R = cfg_rotary_dims(c);
	c->rope_scaling = ROPE_SCALE_LONGROPE;
	if (R / 2 > CFG_MAX_ROPE_PAIRS)
		return err_set(e, "config.json: rope_scaling %s over %d rotary dims: at most %d are "
			       "supported", type, R, 2 * CFG_MAX_ROPE_PAIRS);
	if (longrope_table(rs, "short_factor", R, c->rope_short, e) ||
	    longrope_table(rs, "long_factor", R, c->rope_long, e))
		return -1;
	return longrope_scale(o, rs, c, e);
}

/* partial_rotary_factor (absent or null: 1) into c->rotary_dims. */
static int parse_rotary(json_t *o, struct model_config *c, struct err *e)
{
	float f = 1.0f;
	if (ju_get_float(o, "partial_rotary_factor", "config.json", JU_NULL_ABSENT, &f, e) < 0)
		return -1;
	if (!(f > 0.0f && f <= 1.0f))
		return err_set(e, "config.json: partial_rotary_factor %g is outside (0, 1]", f);
	if (f == 1.0f) /* all of each head: config_validate checks D */
		return 0;
	int D = cfg_d_head(c), R = (int)((double)D * f); /* HF truncates the same way */
	if (R < 2 || R % 2)
		return err_set(e, "config.json: partial_rotary_factor %g turns %d of head_dim %d; "
			       "RoPE needs an even count of 2 or more", f, R, D);
	c->rotary_dims = R == D ? 0 : R;
	return 0;
}

/* Everything but the shape: window, norm, RoPE, activation, tying. */
static int parse_rest(json_t *o, struct model_config *c, struct err *e)
{
	int window = 0;
	float eps = 1e-5f, theta = 10000.0f;
	const char *act = NULL;
	bool tied = false; /* Phi3Config's default */
	if (LD_HF_INT(o, "sliding_window", 0, &window, e) < 0 ||
	    ju_get_float(o, "rms_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_float(o, "rope_theta", "config.json", JU_NULL_ABSENT, &theta, e) < 0 ||
	    ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0)
		return -1;
	if (act && strcmp(act, "silu"))
		return err_set(e, "config.json: hidden_act \"%.40s\" is not supported (SwiGLU with "
			       "silu only)", act);
	if (parse_rotary(o, c, e) || parse_rope_scaling(o, c, e))
		return -1;
	if (window && window < c->context) { /* HF masks: every layer local */
		c->local_window = window;
		for (int l = 0; l < c->n_layer; l++)
			cfg_set_local(c, l, true);
	}
	c->norm = NORM_RMS;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = theta;
	c->mlp = MLP_SWIGLU;
	c->bias = false;
	c->tied = tied;
	return 0;
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	int hd = 0;
	if (ld_hf_rope_shape(o, c, e) || LD_HF_INT(o, "head_dim", 0, &hd, e) < 0)
		return -1;
	if (config_check_heads(c->d_model, c->n_head, e))
		return err_prefix(e, "config.json");
	if (hd && (int64_t)hd * c->n_head != c->d_model) /* in 64 bits: both may be 2^30 */
		return err_set(e, "config.json: head_dim %d is not hidden_size / num_attention_heads "
			       "(%d): not supported for Phi-3 yet", hd, c->d_model / c->n_head);
	if (parse_rest(o, c, e))
		return -1;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "phi3", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

#define L_ "model.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "model.embed_tokens.weight", .p = P_WTE },
	{ .name = L_ "input_layernorm.weight", .p = P_LN1W },
	{ .name = L_ "self_attn.qkv_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE,
	  .fused = true },
	{ .name = L_ "self_attn.qkv_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE,
	  .fused = true },
	{ .name = L_ "self_attn.qkv_proj.weight", .p = P_QKVW, .part = HF_V, .fused = true },
	{ .name = L_ "self_attn.o_proj.weight", .p = P_ATTPROJW },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_LN2W },
	{ .name = L_ "mlp.gate_up_proj.weight", .p = P_FCW }, /* [gate; up]: as the engine */
	{ .name = L_ "mlp.down_proj.weight", .p = P_FCPROJW },
	{ .name = "model.norm.weight", .p = P_LNFW },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_phi3 = {
	.what = "a Phi-3 model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "lm_head.weight",
	.ignored = ignored,
};

const struct model_format format_hf_phi3 = {
	"hf-phi3", "Hugging Face Phi-3 directory (Phi-3-mini, Phi-3.5-mini, Phi-4-mini)",
	.hf = &hf_phi3,
};
