/*
 * loader-hf-distilbert.c — Hugging Face DistilBERT directories
 * ("hf-distilbert"): config.json with model_type "distilbert":
 * DistilBertForMaskedLM, or a DistilBertModel without a head
 * (distilbert-base-uncased).
 *
 * config.json maps to our config as
 *   n_layers, n_heads (= K/V heads), dim, hidden_dim (d_ff), vocab_size,
 *   max_position_embeddings; every LayerNorm eps 1e-12 (fixed by the
 *   modeling code, not in the config), post-norm blocks, learned
 *   positions, exact GELU, no mask, an embedding norm and the masked-LM
 *   head (hf_encoder_switches, BERT's).  No token types.
 *   sinusoidal_pos_embds true is read like false: HF fills the position
 *   table with the sinusoids and saves it as the weights, which are read
 *   as they are.  Refused by name: activation other than "gelu", dim not
 *   divisible by n_heads.
 *
 * Weights, with or without the "distilbert." prefix:
 * embeddings.{word_embeddings, position_embeddings, LayerNorm},
 * transformer.layer.N.attention.{q_lin, k_lin, v_lin, out_lin},
 * sa_layer_norm (after attention), ffn.lin1, ffn.lin2, output_layer_norm
 * (after the MLP); the head vocab_transform, vocab_layer_norm,
 * vocab_projector (never prefixed; its weight tied to the word embeddings
 * unless the file's differs).  Without vocab_transform (a
 * DistilBertModel) head none.  The position_ids buffer is ignored.
 *
 * The tokenizer: BERT's (hf_bert_tokenizer: WordPiece from tokenizer.json
 * or vocab.txt, [CLS] ... [SEP]).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"

/* ------------------------------------------------------------ config.json */

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	const char *act = "gelu";
	config_default(c);
	if (LD_HF_INT(o, "n_layers", JU_REQUIRED, &c->n_layer, e) < 0 ||
	    LD_HF_INT(o, "n_heads", JU_REQUIRED, &c->n_head, e) < 0 ||
	    LD_HF_INT(o, "dim", JU_REQUIRED, &c->d_model, e) < 0 ||
	    LD_HF_INT(o, "hidden_dim", JU_REQUIRED, &c->d_ff, e) < 0 ||
	    LD_HF_INT(o, "vocab_size", JU_REQUIRED, &c->vocab_size, e) < 0 ||
	    LD_HF_INT(o, "max_position_embeddings", JU_REQUIRED, &c->context, e) < 0 ||
	    ju_get_str(o, "activation", "config.json", JU_NULL_ABSENT, &act, e) < 0)
		return -1;
	if (strcmp(act, "gelu"))
		return err_set(e, "config.json: activation \"%.40s\" is not supported (gelu is)", act);
	if (c->d_model % c->n_head)
		return err_set(e, "config.json: dim %d is not divisible by n_heads %d", c->d_model,
			       c->n_head);
	c->n_kv_head = c->n_head;
	hf_encoder_switches(c, 1e-12f);
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* The head's decoder, vocab_projector.weight. */
static struct model *finish(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
			    struct err *e)
{
	(void)x;
	return hf_mlm_finish(s, m, "vocab_projector.weight", NULL, e);
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "distilbert", NULL };

static const char *const ignored[] = { "embeddings.position_ids", NULL };

#define L_ "transformer.layer.%d."
#define LINEAR(base, w, b, rows) \
	{ .name = L_ base ".weight", .p = w, .part = rows }, \
	{ .name = L_ base ".bias", .p = b, .part = rows }
#define NORM(base, w, b, raw) \
	{ .name = base ".weight", .p = w, .unprefixed = raw }, \
	{ .name = base ".bias", .p = b, .unprefixed = raw }
static const struct hf_tensor map[] = {
	{ .name = "embeddings.word_embeddings.weight", .p = P_WTE },
	{ .name = "embeddings.position_embeddings.weight", .p = P_WPE },
	NORM("embeddings.LayerNorm", P_LNEW, P_LNEB, false),
	LINEAR("attention.q_lin", P_QKVW, P_QKVB, HF_Q),
	LINEAR("attention.k_lin", P_QKVW, P_QKVB, HF_K),
	LINEAR("attention.v_lin", P_QKVW, P_QKVB, HF_V),
	LINEAR("attention.out_lin", P_ATTPROJW, P_ATTPROJB, HF_WHOLE),
	NORM(L_ "sa_layer_norm", P_LN1W, P_LN1B, false),
	LINEAR("ffn.lin1", P_FCW, P_FCB, HF_WHOLE),
	LINEAR("ffn.lin2", P_FCPROJW, P_FCPROJB, HF_WHOLE),
	NORM(L_ "output_layer_norm", P_LN2W, P_LN2B, false),
	/* DistilBertForMaskedLM's head, absent from a DistilBertModel */
	{ .name = "vocab_transform.weight", .p = P_HEADW, .unprefixed = true },
	{ .name = "vocab_transform.bias", .p = P_HEADB, .unprefixed = true },
	NORM("vocab_layer_norm", P_HEADLNW, P_HEADLNB, true),
	{ .name = "vocab_projector.bias", .p = P_OUTB, .unprefixed = true },
	{ .name = NULL },
};
#undef NORM
#undef LINEAR
#undef L_

const struct hf_family hf_distilbert = {
	.what = "a DistilBERT model",
	.types = types,
	.parse = parse_config,
	.tokenizer = hf_bert_tokenizer,
	.prefix = "distilbert.",
	.map = map,
	.ignored = ignored,
	.mlm_probe = "vocab_transform.weight",
	.finish = finish,
};

const struct model_format format_hf_distilbert = {
	"hf-distilbert", "Hugging Face DistilBERT directory (DistilBertForMaskedLM or "
	"DistilBertModel)", .hf = &hf_distilbert,
};
