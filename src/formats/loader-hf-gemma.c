/*
 * loader-hf-gemma.c — Hugging Face Gemma 2 and Gemma 3 text directories
 * ("hf-gemma"): config.json with model_type "gemma2" (Gemma2ForCausalLM:
 * gemma-2-2b, -9b, -27b and their -it versions, the models Gemma Scope
 * reads) or "gemma3_text" (Gemma3ForCausalLM: gemma-3-1b and -it).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads,
 *   hidden_size, intermediate_size, vocab_size, max_position_embeddings,
 *   head_dim (each head's width, 256 when absent); RMSNorm with
 *   rms_norm_eps (1e-6) whose scale is 1 + the stored weight (added on
 *   load: the engine's norms multiply by their weight), pre-norm with the
 *   sandwich norms after both sub-blocks (post_attention_layernorm,
 *   post_feedforward_layernorm; pre_feedforward_layernorm is the norm
 *   before the MLP); RoPE with rope_theta (Gemma 2: 10000, Gemma 3:
 *   1000000); GeGLU (hidden_activation, or the older hidden_act,
 *   "gelu_pytorch_tanh"); token embeddings times sqrt(hidden_size)
 *   (emb_scale); the scores scaled by query_pre_attn_scalar^-1/2 (256;
 *   attn_scale_dim) and capped at attn_logit_softcapping, the logits at
 *   final_logit_softcapping (Gemma 2: 50 and 30, Gemma 3: null, none);
 *   sliding_window (4096) on the layers layer_types names
 *   "sliding_attention", or, without layer_types, on every layer i with
 *   (i + 1) % P != 0, P Gemma 3's sliding_window_pattern (6) or Gemma 2's
 *   2 (its even layers), as transformers sets them: those layers local
 *   over that window (config.h local_window), when it is below the
 *   context; tied unless tie_word_embeddings is false.  Gemma 3 adds the
 *   q/k norm (self_attn.q_norm / k_norm, 1 + weight, head_dim wide;
 *   config qk_norm), its local layers' RoPE base rope_local_base_freq
 *   (10000, unscaled: rope_local_theta) and a linear rope_scaling of the
 *   global layers ({"rope_type": "linear", "factor": F}).  attention_bias
 *   true, other rope_scaling kinds, transformers 5's rope_parameters,
 *   other activations and layer types are refused by name.
 *
 * Weights (model.safetensors or shards): model.embed_tokens,
 * model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, (Gemma 3)
 * self_attn.{q,k}_norm, post_attention_layernorm,
 * pre_feedforward_layernorm, mlp.{gate,up,down}_proj,
 * post_feedforward_layernorm}, model.norm, lm_head when untied.  Q and K
 * rows (and the q/k norm's scales) are in rotate-half order, permuted on
 * load as Llama's are.
 *
 * The tokenizer is the directory's tokenizer.json (ld_hf_tokenizer);
 * --tokenizer gives another.
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

/* A soft-capping value: a positive number, or null / absent for none (absent:
 * Gemma2Config's default def). */
static int parse_cap(json_t *o, const char *key, float def, float *out, struct err *e)
{
	json_t *v = json_object_get(o, key);
	*out = def;
	if (v && json_is_null(v)) {
		*out = 0.0f;
		return 0;
	}
	if (ju_get_float(o, key, "config.json", JU_NULL_ABSENT, out, e) < 0)
		return -1;
	if (!(*out > 0.0f && *out <= 1e6f))
		return err_set(e, "config.json: %s %g must be a positive number or null", key,
			       (double)*out);
	return 0;
}

/* Which layers are local: layer_types, or those i with (i + 1) % pattern. */
static int parse_layers(json_t *o, struct model_config *c, int window, int pattern,
			struct err *e)
{
	json_t *types = json_object_get(o, "layer_types");
	if (types && !json_is_null(types) &&
	    (!json_is_array(types) || (int)json_array_size(types) != c->n_layer))
		return err_set(e, "config.json: layer_types is not an array of %d layer types",
			       c->n_layer);
	if (window <= 0 || window >= c->context) /* the window covers every text: no local layers */
		return 0;
	c->local_window = window;
	for (int l = 0; l < c->n_layer; l++) {
		bool local = (l + 1) % pattern != 0;
		json_t *t = types && !json_is_null(types) ? json_array_get(types, (size_t)l) : NULL;
		if (t) {
			const char *s = json_is_string(t) ? json_string_value(t) : "";
			if (strcmp(s, "sliding_attention") && strcmp(s, "full_attention"))
				return err_set(e, "config.json: layer_types[%d] \"%.40s\" is not "
					       "sliding_attention or full_attention", l, s);
			local = !strcmp(s, "sliding_attention");
		}
		cfg_set_local(c, l, local);
	}
	bool any = false;
	for (int l = 0; l < c->n_layer; l++)
		any |= cfg_layer_local(c, l);
	if (!any)
		c->local_window = 0;
	return 0;
}

/* The activation, biases, RoPE scaling and tying. */
static int parse_rest(json_t *o, struct model_config *c, struct err *e)
{
	const char *act = NULL;
	bool bias = false, tied = true; /* Gemma2Config's */
	if (ju_get_str(o, "hidden_activation", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    (!act && ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0) ||
	    ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, &bias, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0)
		return -1;
	if (act && strcmp(act, "gelu_pytorch_tanh"))
		return err_set(e, "config.json: hidden_activation \"%.40s\" is not supported "
			       "(GeGLU with gelu_pytorch_tanh only)", act);
	if (bias)
		return err_set(e, "config.json: attention_bias true is not supported");
	if (json_object_get(o, "rope_parameters"))
		return err_set(e, "config.json: rope_parameters (transformers 5's spelling of "
			       "rope_theta and rope_scaling) is not read yet");
	c->tied = tied;
	return 0;
}

/* rope_scaling: null, absent or {"rope_type" (or "type"): "default"}; for
 * Gemma 3 also {"linear", "factor"} (its global layers'). */
static int parse_rope_scaling(json_t *o, bool gemma3, struct model_config *c, struct err *e)
{
	json_t *rs = json_object_get(o, "rope_scaling");
	if (!rs || json_is_null(rs))
		return 0;
	json_t *t = json_is_object(rs) ? json_object_get(rs, "rope_type") : NULL;
	if (!t && json_is_object(rs))
		t = json_object_get(rs, "type");
	const char *type = json_is_string(t) ? json_string_value(t) : "?";
	size_t n = json_is_object(rs) ? json_object_size(rs) : 0; /* keys besides the type */
	n -= n && json_object_get(rs, "rope_type") ? 1 : 0;
	n -= n && json_object_get(rs, "type") ? 1 : 0;
	if (!strcmp(type, "default") && n == 0)
		return 0;
	if (gemma3 && !strcmp(type, "linear") && n == 1) {
		c->rope_scaling = ROPE_SCALE_LINEAR;
		return ju_get_float(rs, "factor", "config.json: rope_scaling", JU_REQUIRED,
				    &c->rope_factor, e) < 0 ? -1 : 0;
	}
	return err_set(e, "config.json: rope_scaling %.40s is not supported for Gemma %s", type,
		       gemma3 ? "3 (linear with a factor is)" : "2");
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)x;
	bool g3 = !strcmp(type, "gemma3_text");
	if (ld_hf_rope_shape(o, c, e))
		return -1;
	/* Gemma2Config's and Gemma3TextConfig's defaults */
	int qpas = 256, window = 4096, pattern = g3 ? 6 : 2;
	float eps = 1e-6f, theta = g3 ? 1e6f : 10000.0f, local_theta = 10000.0f;
	if (ld_hf_head_dim(o, c, 256, e) ||
	    LD_HF_INT(o, "query_pre_attn_scalar", 0, &qpas, e) < 0 ||
	    LD_HF_INT(o, "sliding_window", 0, &window, e) < 0 ||
	    (g3 && LD_HF_INT(o, "sliding_window_pattern", 0, &pattern, e) < 0) ||
	    ju_get_float(o, "rms_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_float(o, "rope_theta", "config.json", JU_NULL_ABSENT, &theta, e) < 0 ||
	    (g3 && ju_get_float(o, "rope_local_base_freq", "config.json", JU_NULL_ABSENT,
				&local_theta, e) < 0) ||
	    parse_cap(o, "attn_logit_softcapping", g3 ? 0.0f : 50.0f, &c->attn_softcap, e) ||
	    parse_cap(o, "final_logit_softcapping", g3 ? 0.0f : 30.0f, &c->final_softcap, e) ||
	    parse_rest(o, c, e) || parse_rope_scaling(o, g3, c, e))
		return -1;
	if (json_is_null(json_object_get(o, "sliding_window")))
		window = 0;
	if (parse_layers(o, c, window, pattern, e))
		return -1;
	c->norm = NORM_RMS;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = theta;
	c->mlp = MLP_GEGLU;
	c->bias = false;
	c->sandwich = true;
	c->emb_scale = (float)sqrt((double)c->d_model);
	c->attn_scale_dim = qpas == cfg_d_head(c) ? 0 : qpas;
	c->qk_norm = g3;
	if (g3 && c->local_window > 0) /* the local layers' own base, unscaled */
		c->rope_local_theta = local_theta;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gemma2", "gemma3_text", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

/* Every norm's scale is 1 + the stored weight (plus_one); Gemma 3's q/k
 * norm is read when the config has it (c->qk_norm). */
#define L_ "model.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "model.embed_tokens.weight", .p = P_WTE },
	{ .name = L_ "input_layernorm.weight", .p = P_LN1W, .plus_one = true },
	{ .name = L_ "self_attn.q_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE },
	{ .name = L_ "self_attn.v_proj.weight", .p = P_QKVW, .part = HF_V },
	{ .name = L_ "self_attn.q_norm.weight", .p = P_QNORMW, .xf = HF_ROPE, .plus_one = true },
	{ .name = L_ "self_attn.k_norm.weight", .p = P_KNORMW, .xf = HF_ROPE, .plus_one = true },
	{ .name = L_ "self_attn.o_proj.weight", .p = P_ATTPROJW },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_ATTPOSTW, .plus_one = true },
	{ .name = L_ "pre_feedforward_layernorm.weight", .p = P_LN2W, .plus_one = true },
	{ .name = L_ "mlp.gate_proj.weight", .p = P_FCW, .part = HF_GATE },
	{ .name = L_ "mlp.up_proj.weight", .p = P_FCW, .part = HF_UP },
	{ .name = L_ "mlp.down_proj.weight", .p = P_FCPROJW },
	{ .name = L_ "post_feedforward_layernorm.weight", .p = P_MLPPOSTW, .plus_one = true },
	{ .name = "model.norm.weight", .p = P_LNFW, .plus_one = true },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_gemma = {
	.what = "a Gemma 2 or Gemma 3 text model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "lm_head.weight",
	.tied_default = true,
	.ignored = ignored,
};

const struct model_format format_hf_gemma = {
	"hf-gemma", "Hugging Face Gemma 2 or Gemma 3 text directory (gemma-2-2b, gemma-3-1b)",
	.hf = &hf_gemma,
};
