/*
 * loader-hf-gemma2.c — Hugging Face Gemma 2 directories ("hf-gemma2"):
 * config.json with model_type "gemma2" (Gemma2ForCausalLM: gemma-2-2b,
 * -9b, -27b and their -it versions, the models Gemma Scope reads).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads,
 *   hidden_size, intermediate_size, vocab_size, max_position_embeddings,
 *   head_dim (each head's width, Gemma2Config's 256 when absent); RMSNorm
 *   with rms_norm_eps (1e-6) whose scale is 1 + the stored weight (added
 *   on load: the engine's norms multiply by their weight), pre-norm with
 *   the sandwich norms after both sub-blocks (post_attention_layernorm,
 *   post_feedforward_layernorm; pre_feedforward_layernorm is the norm
 *   before the MLP); RoPE with rope_theta (10000); GeGLU
 *   (hidden_activation, or the older hidden_act, "gelu_pytorch_tanh");
 *   token embeddings times sqrt(hidden_size) (emb_scale); the scores
 *   scaled by query_pre_attn_scalar^-1/2 (256; attn_scale_dim) and capped
 *   at attn_logit_softcapping (50), the logits at final_logit_softcapping
 *   (30; null: none); sliding_window (4096) on the layers layer_types
 *   names "sliding_attention", or, without layer_types, on the even
 *   layers (0, 2, ...) as transformers has them: those layers local over
 *   that window (config.h local_window), when it is below the context;
 *   tied unless tie_word_embeddings is false.  attention_bias true,
 *   rope_scaling, other activations and layer types are refused by name.
 *
 * Weights (model.safetensors or shards): model.embed_tokens,
 * model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
 * post_attention_layernorm, pre_feedforward_layernorm, mlp.{gate,up,down}_proj,
 * post_feedforward_layernorm}, model.norm, lm_head when untied.  Q and K
 * rows are in rotate-half order, permuted on load as Llama's are.
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

/* Which layers are local: layer_types, or every even layer. */
static int parse_layers(json_t *o, struct model_config *c, int window, struct err *e)
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
		bool local = l % 2 == 0;
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
	json_t *rs = json_object_get(o, "rope_scaling");
	if (rs && !json_is_null(rs))
		return err_set(e, "config.json: rope_scaling is not supported for Gemma 2");
	c->tied = tied;
	return 0;
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	if (ld_hf_shape(o, c, e))
		return -1;
	int hd = 256, qpas = 256, window = 4096; /* Gemma2Config's */
	float eps = 1e-6f, theta = 10000.0f;
	if (LD_HF_INT(o, "num_key_value_heads", 0, &c->n_kv_head, e) < 0 ||
	    LD_HF_INT(o, "head_dim", 0, &hd, e) < 0 ||
	    LD_HF_INT(o, "query_pre_attn_scalar", 0, &qpas, e) < 0 ||
	    LD_HF_INT(o, "sliding_window", 0, &window, e) < 0 ||
	    ju_get_float(o, "rms_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_float(o, "rope_theta", "config.json", JU_NULL_ABSENT, &theta, e) < 0 ||
	    parse_cap(o, "attn_logit_softcapping", 50.0f, &c->attn_softcap, e) ||
	    parse_cap(o, "final_logit_softcapping", 30.0f, &c->final_softcap, e) ||
	    parse_rest(o, c, e))
		return -1;
	if (json_is_null(json_object_get(o, "sliding_window")))
		window = 0;
	if (c->n_layer > CFG_MAX_LAYERS)
		return err_set(e, "config.json: num_hidden_layers %d is more than %d", c->n_layer,
			       CFG_MAX_LAYERS);
	if (hd > CFG_MAX_HEAD_DIM)
		return err_set(e, "config.json: head_dim %d is more than %d", hd, CFG_MAX_HEAD_DIM);
	if (c->n_head < 1 || (int64_t)hd * c->n_head != c->d_model) /* 64 bits: both may be 2^30 */
		c->head_dim = hd;
	if (c->context > CFG_MAX_CONTEXT) /* RoPE holds no table: shorter texts are exact */
		c->context = CFG_MAX_CONTEXT;
	if (parse_layers(o, c, window, e))
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
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gemma2", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

/* Every norm's scale is 1 + the stored weight (HF_PLUS_ONE). */
#define L_ "model.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "model.embed_tokens.weight", .p = P_WTE },
	{ .name = L_ "input_layernorm.weight", .p = P_LN1W, .xf = HF_PLUS_ONE },
	{ .name = L_ "self_attn.q_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE },
	{ .name = L_ "self_attn.v_proj.weight", .p = P_QKVW, .part = HF_V },
	{ .name = L_ "self_attn.o_proj.weight", .p = P_ATTPROJW },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_ATTPOSTW, .xf = HF_PLUS_ONE },
	{ .name = L_ "pre_feedforward_layernorm.weight", .p = P_LN2W, .xf = HF_PLUS_ONE },
	{ .name = L_ "mlp.gate_proj.weight", .p = P_FCW, .part = HF_GATE },
	{ .name = L_ "mlp.up_proj.weight", .p = P_FCW, .part = HF_UP },
	{ .name = L_ "mlp.down_proj.weight", .p = P_FCPROJW },
	{ .name = L_ "post_feedforward_layernorm.weight", .p = P_MLPPOSTW, .xf = HF_PLUS_ONE },
	{ .name = "model.norm.weight", .p = P_LNFW, .xf = HF_PLUS_ONE },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_gemma2 = {
	.what = "a Gemma 2 model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "lm_head.weight",
	.tied_default = true,
	.ignored = ignored,
};

const struct model_format format_hf_gemma2 = {
	"hf-gemma2", "Hugging Face Gemma 2 directory (gemma-2-2b, -9b, -27b)", .hf = &hf_gemma2,
};
