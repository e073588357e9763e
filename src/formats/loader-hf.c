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
 * scale_attn_by_inverse_layer_idx, cross-attention, another activation)
 * are refused by name; a model_type no family claims is refused by the
 * format table (loader.c).
 *
 * The weights (model.safetensors, its shards, or a safetensors file with
 * a config.json beside it) hold the published names, with or without the
 * "transformer." prefix: wte, wpe, h.N.ln_1, h.N.attn.c_attn, h.N.attn.c_proj,
 * h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f (".weight"/".bias"), and
 * lm_head.weight.  Conv1D weights are stored [in, out]; they are transposed
 * into our (out, in).  The attention-mask buffers h.N.attn.bias /
 * h.N.attn.masked_bias are ignored; any other unknown name is an error.
 * F32, F16 and BF16 read; tensors of other dtypes are listed rather than
 * refused, as files carry the mask buffers in U8 or BOOL.
 *
 * The tokenizer: GPT-2's vocab.json + merges.txt, or tokenizer.json, beside
 * the model or given with --tokenizer.  hf-load.c does the rest.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"

/* ------------------------------------------------------------ config.json */

/* The sizes: positive integers up to 2^30; null is absent (n_inner). */
static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	const char *s = NULL;
	bool b;
	config_default(c);
	if (!json_is_object(o))
		return err_set(e, "config.json: not a JSON object");
	if (ju_get_str(o, "model_type", "config.json", 0, &s, e) < 0)
		return -1;
	if (!s && !json_object_get(o, "n_layer")) /* no family named, not GPT-2's keys */
		return err_set(e, "config.json: no \"model_type\", and no \"n_layer\" for GPT-2, "
			       "the family assumed without one; name it (gpt2, llama, qwen2, mistral, "
			       "gpt_neox, gpt_neo, bert, roberta, distilbert)");
	if (LD_HF_INT(o, "n_layer", JU_REQUIRED, &c->n_layer, e) < 0 ||
	    LD_HF_INT(o, "n_head", JU_REQUIRED, &c->n_head, e) < 0 ||
	    LD_HF_INT(o, "n_embd", JU_REQUIRED, &c->d_model, e) < 0 ||
	    LD_HF_INT(o, "vocab_size", JU_REQUIRED, &c->vocab_size, e) < 0)
		return -1;
	int r = LD_HF_INT(o, "n_positions", 0, &c->context, e);
	if (r < 0 || (r > 0 && LD_HF_INT(o, "n_ctx", JU_REQUIRED, &c->context, e) < 0))
		return r > 0 ? err_set(e, "config.json: missing key \"n_positions\"") : -1;
	c->n_kv_head = c->n_head;
	c->d_ff = c->d_model <= INT_MAX / 4 ? 4 * c->d_model : INT_MAX; /* d_model is refused */
	if (LD_HF_INT(o, "n_inner", 0, &c->d_ff, e) < 0 ||
	    ju_get_float(o, "layer_norm_epsilon", "config.json", 0, &c->norm_eps, e) < 0)
		return -1;
	s = NULL;
	if (ju_get_str(o, "activation_function", "config.json", 0, &s, e) < 0)
		return -1;
	if (s && strcmp(s, "gelu_new") && strcmp(s, "gelu_pytorch_tanh") && strcmp(s, "gelu_fast"))
		return err_set(e, "config.json: activation_function \"%.40s\" is not supported (the "
			       "engine has GELU tanh: gelu_new)", s);
	b = true;
	if (ju_get_bool(o, "tie_word_embeddings", "config.json", 0, &b, e) < 0)
		return -1;
	c->tied = b;
	b = true;
	if (ju_get_bool(o, "scale_attn_weights", "config.json", 0, &b, e) < 0)
		return -1;
	if (!b)
		return err_set(e, "config.json: scale_attn_weights false is not supported");
	static const char *const unsupported[] = { "scale_attn_by_inverse_layer_idx",
						   "add_cross_attention" };
	for (size_t i = 0; i < 2; i++) {
		b = false;
		if (ju_get_bool(o, unsupported[i], "config.json", 0, &b, e) < 0)
			return -1;
		if (b)
			return err_set(e, "config.json: %s true is not supported", unsupported[i]);
	}
	c->norm = NORM_LAYER;
	c->placement = PLACE_PRE;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU;
	c->bias = true;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gpt2", NULL };

/* The attention-mask buffers some files carry. */
static const char *const ignored[] = { ".attn.bias", ".attn.masked_bias", NULL };

static const struct hf_tensor map[] = {
	{ .name = "wte.weight", .p = P_WTE },
	{ .name = "wpe.weight", .p = P_WPE },
	{ .name = "h.%d.ln_1.weight", .p = P_LN1W },
	{ .name = "h.%d.ln_1.bias", .p = P_LN1B },
	{ .name = "h.%d.attn.c_attn.weight", .p = P_QKVW, .xf = HF_CONV1D },
	{ .name = "h.%d.attn.c_attn.bias", .p = P_QKVB },
	{ .name = "h.%d.attn.c_proj.weight", .p = P_ATTPROJW, .xf = HF_CONV1D },
	{ .name = "h.%d.attn.c_proj.bias", .p = P_ATTPROJB },
	{ .name = "h.%d.ln_2.weight", .p = P_LN2W },
	{ .name = "h.%d.ln_2.bias", .p = P_LN2B },
	{ .name = "h.%d.mlp.c_fc.weight", .p = P_FCW, .xf = HF_CONV1D },
	{ .name = "h.%d.mlp.c_fc.bias", .p = P_FCB },
	{ .name = "h.%d.mlp.c_proj.weight", .p = P_FCPROJW, .xf = HF_CONV1D },
	{ .name = "h.%d.mlp.c_proj.bias", .p = P_FCPROJB },
	{ .name = "ln_f.weight", .p = P_LNFW },
	{ .name = "ln_f.bias", .p = P_LNFB },
	{ .name = NULL },
};

const struct hf_family hf_gpt2 = {
	.what = "a GPT-2 model",
	.types = types,
	.untyped = true,
	.parse = parse_config,
	.tokenizer = ld_gpt2_tokenizer,
	.prefix = "transformer.",
	.map = map,
	.head = "lm_head.weight",
	.tied_default = true,
	.ignored = ignored,
};

const struct model_format format_hf_gpt2 = {
	"hf-gpt2", "Hugging Face GPT-2 directory", .hf = &hf_gpt2,
};
