/*
 * loader-hf-neo.c — Hugging Face GPT-Neo directories ("hf-neo"):
 * config.json with model_type "gpt_neo" (GPTNeoForCausalLM: EleutherAI's
 * gpt-neo-125M and larger, the TinyStories models).
 *
 * config.json maps to our config as
 *   num_layers, num_heads (= K/V heads), hidden_size, vocab_size,
 *   max_position_embeddings; intermediate_size, or 4 * hidden_size when
 *   absent or null; LayerNorm with layer_norm_epsilon (1e-5) and biases,
 *   pre-norm, learned positions, activation_function gelu_new (also
 *   gelu_pytorch_tanh, gelu_fast: the tanh form) or gelu (exact), tied
 *   unless tie_word_embeddings is false (then lm_head.weight is read).
 *   attention_types, a list of [[kinds...], repeat] pairs, expands to one
 *   kind per layer (each pair's kinds, repeat times, in order); the count
 *   must be num_layers, and attention_layers, when the file has it, must
 *   be that expansion.  A "local" layer sees window_size keys, itself
 *   included (query i, keys j with i - j < window_size: config.h
 *   local_window); a "global" layer is causal.  GPT-Neo does not divide
 *   the scores by sqrt(d_head), so the native scale is off.  Another
 *   attention kind or activation is refused by name.
 *
 * Weights (model.safetensors or shards, hf-shards.c), with or without the
 * "transformer." prefix: wte, wpe, h.N.ln_1, h.N.attn.attention.{q_proj,
 * k_proj, v_proj} (weights only: GPT-Neo's Q/K/V have no bias, so the
 * engine's QKVB stays 0), h.N.attn.attention.out_proj (weight and bias),
 * h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f; every weight an
 * nn.Linear stored (out, in) as the engine keeps it.  The mask buffers
 * attn.attention.bias / masked_bias are ignored.
 *
 * The tokenizer is GPT-2's: vocab.json + merges.txt or tokenizer.json
 * (ld_gpt2_tokenizer); --tokenizer gives another.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"

/* ------------------------------------------------------------ config.json */

/* One kind name into *local; -1 + e for a kind the engine lacks. */
static int attention_kind(json_t *v, const char *where, size_t i, bool *local, struct err *e)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	if (s && !strcmp(s, "global"))
		*local = false;
	else if (s && !strcmp(s, "local"))
		*local = true;
	else
		return err_set(e, "config.json: %s[%zu] is %.40s; the kinds are \"global\" and "
			       "\"local\"", where, i, s ? s : "not a string");
	return 0;
}

/* attention_types [[kinds, repeat], ...] into loc[0 .. n_layer), true for
 * a local layer, checking the count against c->n_layer and any
 * attention_layers against the expansion. */
static int parse_types(json_t *o, const struct model_config *c, bool *loc, struct err *e)
{
	json_t *t = json_object_get(o, "attention_types"), *al = json_object_get(o, "attention_layers");
	if (!json_is_array(t))
		return err_set(e, "config.json: missing key \"attention_types\" (a list of "
			       "[[kinds], repeat])");
	int n = 0;
	size_t i, j;
	json_t *item, *k;
	json_array_foreach(t, i, item) {
		json_t *kinds = json_array_get(item, 0), *rep = json_array_get(item, 1);
		json_int_t r = json_is_integer(rep) ? json_integer_value(rep) : -1;
		if (json_array_size(item) != 2 || !json_is_array(kinds) || r < 0 || r > CFG_MAX_LAYERS)
			return err_set(e, "config.json: attention_types[%zu] is not [[kinds], repeat]", i);
		for (json_int_t rr = 0; rr < r; rr++)
			json_array_foreach(kinds, j, k) {
				bool local;
				if (attention_kind(k, "attention_types kind", j, &local, e))
					return -1;
				if (n >= c->n_layer)
					return err_set(e, "config.json: attention_types gives more layers "
						       "than num_layers %d", c->n_layer);
				loc[n++] = local;
			}
	}
	if (n != c->n_layer)
		return err_set(e, "config.json: attention_types gives %d layers, num_layers is %d", n,
			       c->n_layer);
	if (al && !json_is_null(al)) {
		if (!json_is_array(al) || json_array_size(al) != (size_t)n)
			return err_set(e, "config.json: attention_layers does not list %d kinds", n);
		json_array_foreach(al, i, k) {
			bool local;
			if (attention_kind(k, "attention_layers", i, &local, e))
				return -1;
			if (local != loc[i])
				return err_set(e, "config.json: attention_layers[%zu] disagrees with "
					       "attention_types", i);
		}
	}
	return 0;
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	config_default(c);
	if (LD_HF_INT(o, "num_layers", JU_REQUIRED, &c->n_layer, e) < 0 ||
	    LD_HF_INT(o, "num_heads", JU_REQUIRED, &c->n_head, e) < 0 ||
	    LD_HF_INT(o, "hidden_size", JU_REQUIRED, &c->d_model, e) < 0 ||
	    LD_HF_INT(o, "vocab_size", JU_REQUIRED, &c->vocab_size, e) < 0 ||
	    LD_HF_INT(o, "max_position_embeddings", JU_REQUIRED, &c->context, e) < 0)
		return -1;
	if (c->n_layer > CFG_MAX_LAYERS)
		return err_set(e, "config.json: num_layers %d is more than %d", c->n_layer,
			       CFG_MAX_LAYERS);
	c->n_kv_head = c->n_head;
	c->d_ff = c->d_model <= INT_MAX / 4 ? 4 * c->d_model : INT_MAX; /* d_model is refused */
	const char *act = "gelu_new";
	bool tied = true;
	int window = 256;
	if (LD_HF_INT(o, "intermediate_size", 0, &c->d_ff, e) < 0 ||
	    LD_HF_INT(o, "window_size", 0, &window, e) < 0 ||
	    ju_get_float(o, "layer_norm_epsilon", "config.json", JU_NULL_ABSENT, &c->norm_eps, e) < 0 ||
	    ju_get_str(o, "activation_function", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_bool(o, "tie_word_embeddings", "config.json", JU_NULL_ABSENT, &tied, e) < 0)
		return -1;
	if (!strcmp(act, "gelu"))
		c->mlp = MLP_GELU_EXACT;
	else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh") ||
		 !strcmp(act, "gelu_fast"))
		c->mlp = MLP_GELU;
	else
		return err_set(e, "config.json: activation_function \"%.40s\" is not supported "
			       "(gelu_new and gelu are)", act);
	bool loc[CFG_MAX_LAYERS] = { false };
	if (parse_types(o, c, loc, e))
		return -1;
	for (int l = 0; l < c->n_layer; l++) {
		cfg_set_local(c, l, loc[l]);
		if (loc[l])
			c->local_window = window;
	}
	c->norm = NORM_LAYER;
	c->placement = PLACE_PRE;
	c->pos = POS_LEARNED;
	c->bias = true;
	c->tied = tied;
	c->scale = false; /* GPT-Neo's scores are q.k, not q.k / sqrt(D) */
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "gpt_neo", NULL };

/* The mask buffers some files carry. */
static const char *const ignored[] = { ".attn.attention.bias", ".attn.attention.masked_bias",
				       NULL };

#define A_ "h.%d.attn.attention."
static const struct hf_tensor map[] = {
	{ .name = "wte.weight", .p = P_WTE },
	{ .name = "wpe.weight", .p = P_WPE },
	{ .name = "h.%d.ln_1.weight", .p = P_LN1W },
	{ .name = "h.%d.ln_1.bias", .p = P_LN1B },
	{ .name = A_ "q_proj.weight", .p = P_QKVW, .part = HF_Q },
	{ .name = A_ "k_proj.weight", .p = P_QKVW, .part = HF_K },
	{ .name = A_ "v_proj.weight", .p = P_QKVW, .part = HF_V },
	{ .name = A_ "out_proj.weight", .p = P_ATTPROJW },
	{ .name = A_ "out_proj.bias", .p = P_ATTPROJB },
	{ .name = "h.%d.ln_2.weight", .p = P_LN2W },
	{ .name = "h.%d.ln_2.bias", .p = P_LN2B },
	{ .name = "h.%d.mlp.c_fc.weight", .p = P_FCW },
	{ .name = "h.%d.mlp.c_fc.bias", .p = P_FCB },
	{ .name = "h.%d.mlp.c_proj.weight", .p = P_FCPROJW },
	{ .name = "h.%d.mlp.c_proj.bias", .p = P_FCPROJB },
	{ .name = "ln_f.weight", .p = P_LNFW },
	{ .name = "ln_f.bias", .p = P_LNFB },
	{ .name = NULL },
};
#undef A_

const struct hf_family hf_neo = {
	.what = "a GPT-Neo model",
	.types = types,
	.parse = parse_config,
	.tokenizer = ld_gpt2_tokenizer,
	.prefix = "transformer.",
	.map = map,
	.head = "lm_head.weight",
	.tied_default = true,
	.ignored = ignored,
};

const struct model_format format_hf_neo = {
	"hf-neo", "Hugging Face GPT-Neo directory (TinyStories, gpt-neo-125M)", .hf = &hf_neo,
};
