/*
 * loader-hf-gemma.c — Hugging Face Gemma 2 and Gemma 3 directories
 * ("hf-gemma"): config.json with model_type "gemma2" (Gemma2ForCausalLM:
 * gemma-2-2b, -9b, -27b and their -it versions, the models Gemma Scope
 * reads) or "gemma3_text" (Gemma3ForCausalLM: gemma-3-1b and -it); and
 * ("hf-gemma3") the text model of Gemma 3's multimodal directories,
 * model_type "gemma3" (Gemma3ForConditionalGeneration: gemma-3-4b, -12b,
 * -27b): its text_config, read as a gemma3_text config.json with
 * Gemma3TextConfig's defaults for the shape keys it leaves out, and its
 * weights named language_model.model.* (the Hub's files) or
 * model.language_model.* (transformers since 4.52), the output layer
 * language_model.lm_head or lm_head when untied; the vision model and its
 * projector (vision_tower.*, multi_modal_projector.*) are passed over.
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
 *   global layers ({"rope_type": "linear", "factor": F}).  Transformers
 *   5's spelling is read too: rope_parameters in place of rope_theta and
 *   rope_scaling (Gemma 2: {"rope_type", "rope_theta"}), and for Gemma 3
 *   of rope_local_base_freq as well ({"full_attention": {...},
 *   "sliding_attention": {...}}).  attention_bias true, other rope_scaling
 *   kinds and keys, other activations and layer types are refused by name.
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
#include "utf8.h"

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
	int rc = ju_get_float(o, key, "config.json", JU_NULL_ABSENT, out, e);
	if (rc)
		return rc < 0 ? -1 : 0; /* absent: the default */
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
			char shown[64]; /* the file's word, on one line */
			utf8_printable(s, strlen(s), shown, sizeof shown);
			if (strcmp(s, "sliding_attention") && strcmp(s, "full_attention"))
				return err_set(e, "config.json: layer_types[%d] \"%s\" is not "
					       "sliding_attention or full_attention", l, shown);
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
	c->tied = tied;
	return 0;
}

/* One RoPE block at where: {"rope_type" (or "type"): "default"}, or with
 * linear ok {"linear", "factor"} (into c's scaling); with theta not NULL
 * also "rope_theta" (transformers 5's rope_parameters), into *theta.
 * Any other key or kind is refused by name. */
static int parse_rope_block(json_t *b, const char *where, bool linear_ok, float *theta,
			    struct model_config *c, struct err *e)
{
	if (!json_is_object(b))
		return err_set(e, "%s is not an object", where);
	json_t *t = json_object_get(b, "rope_type");
	if (!t)
		t = json_object_get(b, "type");
	const char *type = json_is_string(t) ? json_string_value(t) : "?";
	bool linear = linear_ok && !strcmp(type, "linear");
	char shown[64]; /* the file's words, on one line */
	if (strcmp(type, "default") && !linear) {
		utf8_printable(type, strlen(type), shown, sizeof shown);
		return err_set(e, "%s: rope_type %s is not supported (%s)", where, shown,
			       linear_ok ? "default, or linear with a factor" : "default only");
	}
	const char *key;
	json_t *v;
	json_object_foreach(b, key, v) {
		bool known = !strcmp(key, "rope_type") || !strcmp(key, "type") ||
			     (theta && !strcmp(key, "rope_theta")) ||
			     (linear && !strcmp(key, "factor"));
		if (!known) {
			utf8_printable(key, strlen(key), shown, sizeof shown);
			return err_set(e, "%s: key \"%s\" is not supported", where, shown);
		}
	}
	if (theta && ju_get_float(b, "rope_theta", where, JU_NULL_ABSENT, theta, e) < 0)
		return -1;
	if (!linear)
		return 0;
	c->rope_scaling = ROPE_SCALE_LINEAR;
	return ju_get_float(b, "factor", where, JU_REQUIRED, &c->rope_factor, e) < 0 ? -1 : 0;
}

/* RoPE in either spelling, into c's scaling, *theta (global layers) and
 * *local_theta (Gemma 3's local layers):
 *   transformers 4: rope_theta, rope_local_base_freq (read by the caller)
 *     and rope_scaling null, absent, default, or (Gemma 3) linear;
 *   transformers 5: rope_parameters, for Gemma 2 one block with its
 *     rope_theta, for Gemma 3 {"full_attention": block (default or
 *     linear), "sliding_attention": block (default)}. */
static int parse_rope(json_t *o, bool gemma3, float *theta, float *local_theta,
		      struct model_config *c, struct err *e)
{
	json_t *rs = json_object_get(o, "rope_scaling"), *rp = json_object_get(o, "rope_parameters");
	if (rs && !json_is_null(rs) && rp && !json_is_null(rp))
		return err_set(e, "config.json: both rope_scaling and rope_parameters are set");
	if (rs && !json_is_null(rs))
		return parse_rope_block(rs, "config.json: rope_scaling", gemma3, NULL, c, e);
	if (!rp || json_is_null(rp))
		return 0;
	if (!gemma3)
		return parse_rope_block(rp, "config.json: rope_parameters", false, theta, c, e);
	json_t *full = json_object_get(rp, "full_attention");
	json_t *slide = json_object_get(rp, "sliding_attention");
	if (!json_is_object(rp) || !full || !slide || json_object_size(rp) != 2)
		return err_set(e, "config.json: rope_parameters must hold full_attention and "
			       "sliding_attention (Gemma 3)");
	struct model_config local = *c;
	if (parse_rope_block(full, "config.json: rope_parameters.full_attention", true, theta, c, e) ||
	    parse_rope_block(slide, "config.json: rope_parameters.sliding_attention", false,
			     local_theta, &local, e))
		return -1;
	return 0;
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
	    parse_rest(o, c, e) || parse_rope(o, g3, &theta, &local_theta, c, e))
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

/* ------------------------------------------- Gemma 3's multimodal files */

/* Gemma3TextConfig's defaults for the shape keys a text_config may leave
 * out (gemma-3-4b-it's names only what differs from them). */
static const struct { const char *key; int value; } text_defaults[] = {
	{ "vocab_size", 262208 },	 { "hidden_size", 2304 },
	{ "intermediate_size", 9216 }, { "num_hidden_layers", 26 },
	{ "num_attention_heads", 8 },	 { "num_key_value_heads", 4 },
	{ "max_position_embeddings", 131072 },
};

/* A Gemma3ForConditionalGeneration's config.json (model_type "gemma3"):
 * its text_config, with Gemma3TextConfig's defaults for the shape keys it
 * leaves out, parsed as a gemma3_text config.json; errors name
 * text_config.  The vision model's keys are not read. */
static int parse_config_mm(json_t *o, const char *type, struct model_config *c,
			   struct hf_ctx *x, struct err *e)
{
	(void)type;
	json_t *tc = json_object_get(o, "text_config");
	if (!json_is_object(tc))
		return err_set(e, "config.json: text_config is %s (a Gemma 3 multimodal config "
			       "holds its text model there)", tc ? "not an object" : "missing");
	json_t *t = json_object_get(tc, "model_type");
	if (t && !(json_is_string(t) && !strcmp(json_string_value(t), "gemma3_text")))
		return err_set(e, "config.json: text_config.model_type is not gemma3_text");
	json_t *copy = json_deep_copy(tc);
	if (!copy)
		die("out of memory");
	for (size_t i = 0; i < sizeof text_defaults / sizeof *text_defaults; i++)
		if (!json_object_get(copy, text_defaults[i].key))
			ju_set(copy, text_defaults[i].key, json_integer(text_defaults[i].value));
	int rc = parse_config(copy, "gemma3_text", c, x, e);
	json_decref(copy);
	if (rc && !strncmp(e->msg, "config.json: ", 13)) {
		char msg[ERR_MAX];
		snprintf(msg, sizeof msg, "%s", e->msg + 13);
		err_set(e, "config.json: text_config: %s", msg);
	}
	return rc;
}

/* The text model's names in each spelling of the multimodal files: the
 * Hub's (transformers 4.50: language_model.model.*, the output layer
 * language_model.lm_head) or transformers' own since 4.52
 * (model.language_model.*, lm_head). */
static const struct mm_spelling {
	const char *prefix, *head;
} spellings[] = {
	{ "language_model.model.", "language_model.lm_head.weight" },
	{ "model.language_model.", "lm_head.weight" },
};

/* Which spelling the weights use, by their token embedding. */
static int inspect_mm(struct ld_shards *s, struct model_config *c, struct hf_ctx *x,
		      struct err *e)
{
	(void)c;
	for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
		char name[96];
		struct st_file *in;
		snprintf(name, sizeof name, "%sembed_tokens.weight", spellings[i].prefix);
		if (ld_shards_find(s, name, &in)) {
			x->prefix = spellings[i].prefix;
			x->head = spellings[i].head;
			return 0;
		}
	}
	return err_set(e, "missing tensor \"language_model.model.embed_tokens.weight\" (or "
		       "\"model.language_model.embed_tokens.weight\"): no Gemma 3 text model");
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gemma2", "gemma3_text", NULL };

/* RoPE's frequencies, which the engine computes. */
static const char *const ignored[] = { "rotary_emb.inv_freq", NULL };

/* Every norm's scale is 1 + the stored weight (plus_one); Gemma 3's q/k
 * norm is read when the config has it (c->qk_norm).  M is the text
 * model's own prefix: "model." in a text directory, "" in a multimodal
 * one (whose prefix, inspect_mm's, ends with it). */
#define GEMMA_MAP(M) \
	{ .name = M "embed_tokens.weight", .p = P_WTE }, \
	{ .name = M L_ "input_layernorm.weight", .p = P_LN1W, .plus_one = true }, \
	{ .name = M L_ "self_attn.q_proj.weight", .p = P_QKVW, .part = HF_Q, .xf = HF_ROPE }, \
	{ .name = M L_ "self_attn.k_proj.weight", .p = P_QKVW, .part = HF_K, .xf = HF_ROPE }, \
	{ .name = M L_ "self_attn.v_proj.weight", .p = P_QKVW, .part = HF_V }, \
	{ .name = M L_ "self_attn.q_norm.weight", .p = P_QNORMW, .xf = HF_ROPE, .plus_one = true }, \
	{ .name = M L_ "self_attn.k_norm.weight", .p = P_KNORMW, .xf = HF_ROPE, .plus_one = true }, \
	{ .name = M L_ "self_attn.o_proj.weight", .p = P_ATTPROJW }, \
	{ .name = M L_ "post_attention_layernorm.weight", .p = P_ATTPOSTW, .plus_one = true }, \
	{ .name = M L_ "pre_feedforward_layernorm.weight", .p = P_LN2W, .plus_one = true }, \
	{ .name = M L_ "mlp.gate_proj.weight", .p = P_FCW, .part = HF_GATE }, \
	{ .name = M L_ "mlp.up_proj.weight", .p = P_FCW, .part = HF_UP }, \
	{ .name = M L_ "mlp.down_proj.weight", .p = P_FCPROJW }, \
	{ .name = M L_ "post_feedforward_layernorm.weight", .p = P_MLPPOSTW, .plus_one = true }, \
	{ .name = M "norm.weight", .p = P_LNFW, .plus_one = true }, \
	{ .name = NULL }
#define L_ "layers.%d."
static const struct hf_tensor map[] = { GEMMA_MAP("model.") };
static const struct hf_tensor map_mm[] = { GEMMA_MAP("") };
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

static const char *const types_mm[] = { "gemma3", NULL };

/* RoPE's frequencies, and the vision model and its projector, whose
 * tensors sit beside the text model's (in either spelling). */
static const char *const ignored_mm[] = { "rotary_emb.inv_freq", "vision_tower.",
					  "multi_modal_projector.", NULL };

const struct hf_family hf_gemma3mm = {
	.what = "a Gemma 3 multimodal model",
	.types = types_mm,
	.parse = parse_config_mm,
	.tokenizer = ld_hf_tokenizer,
	.prefix = "language_model.model.",
	.map = map_mm,
	.head = "language_model.lm_head.weight",
	.tied_default = true,
	.ignored = ignored_mm,
	.inspect = inspect_mm,
};

const struct model_format format_hf_gemma3mm = {
	"hf-gemma3", "Hugging Face Gemma 3 multimodal directory (gemma-3-4b-it): its text model",
	.hf = &hf_gemma3mm,
};
