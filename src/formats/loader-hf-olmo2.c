/*
 * loader-hf-olmo2.c — Hugging Face OLMo-2 directories ("hf-olmo2"):
 * config.json with model_type "olmo2" (Olmo2ForCausalLM: OLMo-2-0425-1B,
 * OLMo-2-1124-7B / 13B and their -Instruct versions).
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads, num_key_value_heads (default:
 *   the heads), hidden_size, intermediate_size, vocab_size,
 *   max_position_embeddings; each head hidden_size / num_attention_heads
 *   wide; RMSNorm with rms_norm_eps (1e-5) after each sub-block and none
 *   before it (post_attention_layernorm, post_feedforward_layernorm:
 *   config sandwich and post_only, x + norm(attn(x))); one RMSNorm of the
 *   whole query projection (H * D) and one of the whole key projection
 *   (K * D) before RoPE (self_attn.q_norm / k_norm: qk_norm_whole); RoPE
 *   with rope_theta (10000); SwiGLU (hidden_act silu); untied unless
 *   tie_word_embeddings is true (Olmo2Config's default is false).
 *   rope_scaling other than null, attention_bias true and other
 *   activations are refused by name.  The key norm spans the native key
 *   heads together, so `attn gqa` / `mqa` to fewer of them is refused
 *   when run; the norm placement stays native.
 *
 * Weights (model.safetensors or shards): model.embed_tokens,
 * model.layers.N.{self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm,
 * post_attention_layernorm, mlp.{gate,up,down}_proj,
 * post_feedforward_layernorm}, model.norm, lm_head.  Q and K rows, and
 * the q/k norms' scales (laid out as those rows), are in rotate-half
 * order, permuted on load as Llama's are.
 *
 * The tokenizer is the directory's tokenizer.json (ld_hf_tokenizer: OLMo-2's
 * byte-level BPE); --tokenizer gives another.
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

/* Everything but the shape: norm, RoPE, activation, biases, tying. */
static int parse_rest(json_t *o, struct model_config *c, struct err *e)
{
	float eps = 1e-5f, theta = 10000.0f;
	const char *act = NULL;
	bool tied = false, bias = false; /* Olmo2Config's */
	if (ju_get_float(o, "rms_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0 ||
	    ju_get_float(o, "rope_theta", "config.json", JU_NULL_ABSENT, &theta, e) < 0 ||
	    ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_bool(o, "attention_bias", "config.json", JU_NULL_ABSENT, &bias, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0)
		return -1;
	if (act && strcmp(act, "silu"))
		return err_set(e, "config.json: hidden_act \"%.40s\" is not supported (SwiGLU with "
			       "silu only)", act);
	if (bias)
		return err_set(e, "config.json: attention_bias true is not supported");
	json_t *rs = json_object_get(o, "rope_scaling");
	if (rs && !json_is_null(rs))
		return err_set(e, "config.json: rope_scaling is not supported for OLMo-2 yet");
	c->norm = NORM_RMS;
	c->norm_eps = eps;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = theta;
	c->mlp = MLP_SWIGLU;
	c->bias = false;
	c->tied = tied;
	c->sandwich = c->post_only = true;
	c->qk_norm = c->qk_norm_whole = true;
	return 0;
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	if (ld_hf_rope_shape(o, c, e))
		return -1;
	if (config_check_heads(c->d_model, c->n_head, e))
		return err_prefix(e, "config.json");
	if (parse_rest(o, c, e))
		return -1;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "olmo2", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

#define L_ "model.layers.%d."
static const struct hf_tensor map[] = {
	{ .name = "model.embed_tokens.weight", .p = P_WTE },
	{ .name = L_ "self_attn.q_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE },
	{ .name = L_ "self_attn.k_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE },
	{ .name = L_ "self_attn.v_proj.weight", .p = P_QKVW, .part = HF_V },
	{ .name = L_ "self_attn.q_norm.weight", .p = P_QNORMW, .xf = HF_ROPE }, /* (H * D) */
	{ .name = L_ "self_attn.k_norm.weight", .p = P_KNORMW, .xf = HF_ROPE }, /* (K * D) */
	{ .name = L_ "self_attn.o_proj.weight", .p = P_ATTPROJW },
	{ .name = L_ "post_attention_layernorm.weight", .p = P_ATTPOSTW },
	{ .name = L_ "mlp.gate_proj.weight", .p = P_FCW, .part = HF_GATE },
	{ .name = L_ "mlp.up_proj.weight", .p = P_FCW, .part = HF_UP },
	{ .name = L_ "mlp.down_proj.weight", .p = P_FCPROJW },
	{ .name = L_ "post_feedforward_layernorm.weight", .p = P_MLPPOSTW },
	{ .name = "model.norm.weight", .p = P_LNFW },
	{ .name = NULL },
};
#undef L_

const struct hf_family hf_olmo2 = {
	.what = "an OLMo-2 model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_hf_tokenizer,
	.map = map,
	.head = "lm_head.weight",
	.ignored = ignored,
};

const struct model_format format_hf_olmo2 = {
	"hf-olmo2", "Hugging Face OLMo-2 directory (OLMo-2-0425-1B, -1124-7B)", .hf = &hf_olmo2,
};
