/*
 * loader-hf-roberta.c — Hugging Face RoBERTa directories ("hf-roberta"):
 * config.json with model_type "roberta": RobertaForMaskedLM, or a
 * RobertaModel without a head (roberta-base, distilroberta-base).
 *
 * RoBERTa is BERT's encoder (loader-hf-bert.c: the same config keys,
 * refusals, post-norm blocks, embedding LayerNorm and masked-LM head)
 * with two differences:
 *   - positions are offset: HF numbers the text's tokens from
 *     padding_idx + 1 (pad_token_id 1: the first token reads row 2 of
 *     position_embeddings), so max_position_embeddings 514 gives a
 *     context of 512, and the engine's position row i is the file's row
 *     pad_token_id + 1 + i.  A <pad> token inside the text would read row
 *     pad_token_id in HF; the tokenizer never produces one from text;
 *   - the head is lm_head.{dense, layer_norm (layer_norm_eps), decoder,
 *     bias}, the decoder tied to the word embeddings unless the file's
 *     lm_head.decoder.weight differs; lm_head.decoder.bias, when held,
 *     must equal lm_head.bias.  Without lm_head (a RobertaModel) head none.
 * type_vocab_size is 1: token type 0 is folded into the positions, as for
 * BERT.
 *
 * Weights, with or without the "roberta." prefix: embeddings.{word,
 * position, token_type}_embeddings, embeddings.LayerNorm, encoder.layer.N
 * as BERT's; lm_head.* never prefixed.  The pooler and the position_ids
 * buffer are ignored.
 *
 * The tokenizer: --tokenizer, else the one beside the model: byte-level
 * BPE from tokenizer.json (its RobertaProcessing puts cls ... sep around
 * the text) or vocab.json + merges.txt, given <s> ... </s>
 * (tok_bpe_wrap); a vocabulary without <s> and </s> is refused.  Typed
 * special tokens ("<mask>") are not matched in the text: they encode as
 * their characters.
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
#include "tokenizer.h"

/* ------------------------------------------------------------ config.json */

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	int pad = 1;
	if (hf_bert_parse(o, c, e) ||
	    ju_get_int(o, "pad_token_id", "config.json", JU_NULL_ABSENT, 0, 1 << 20, &pad, e) < 0)
		return -1;
	if (c->context <= pad + 1)
		return err_set(e, "config.json: max_position_embeddings %d leaves no position after "
			       "pad_token_id %d (positions start at pad_token_id + 1)", c->context, pad);
	x->pos_offset = pad + 1;
	c->context -= pad + 1;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* What the map leaves: offset positions, token type 0, the decoder. */
static struct model *finish(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
			    struct err *e)
{
	if (hf_bert_embeddings(s, m, x, e)) {
		model_free(m);
		return NULL;
	}
	return hf_mlm_finish(s, m, "lm_head.decoder.weight", "lm_head.decoder.bias", e);
}

/* -------------------------------------------------------------- tokenizer */

/* The byte-level BPE beside the model or from opt, with <s> ... </s>
 * around the text; NULL + a one-line e. */
static struct tokenizer *roberta_tokenizer(const char *opt, const char *dir, struct err *e)
{
	struct tokenizer *t = ld_hf_tokenizer(opt, dir, e);
	if (!t || t->eos_id >= 0)
		return t; /* a tokenizer.json whose post_processor wraps the text */
	if (!strcmp(t->ops->kind, "gpt2-bpe") && !tok_bpe_wrap(t, "<s>", "</s>", e))
		return t;
	if (strcmp(t->ops->kind, "gpt2-bpe"))
		err_set(e, "the %s tokenizer does not put <s> ... </s> around the text (RoBERTa's "
			"RobertaProcessing); give vocab.json + merges.txt or a tokenizer.json that does",
			t->ops->kind);
	else
		err_prefix(e, "tokenizer (RoBERTa puts <s> ... </s> around the text)");
	tok_free(t);
	return NULL;
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "roberta", NULL };

static const char *const ignored[] = { "embeddings.position_ids", "pooler.dense.", NULL };

static const struct hf_tensor map[] = {
	HF_BERT_ENCODER,
	/* RobertaForMaskedLM's head, absent from a RobertaModel (head none) */
	{ .name = "lm_head.dense.weight", .p = P_HEADW, .unprefixed = true },
	{ .name = "lm_head.dense.bias", .p = P_HEADB, .unprefixed = true },
	{ .name = "lm_head.layer_norm.weight", .p = P_HEADLNW, .unprefixed = true },
	{ .name = "lm_head.layer_norm.bias", .p = P_HEADLNB, .unprefixed = true },
	{ .name = "lm_head.bias", .p = P_OUTB, .unprefixed = true },
	{ .name = NULL },
};

const struct hf_family hf_roberta = {
	.what = "a RoBERTa model",
	.types = types,
	.parse = parse_config,
	.tokenizer = roberta_tokenizer,
	.prefix = "roberta.",
	.map = map,
	.ignored = ignored,
	.mlm_probe = "lm_head.dense.weight",
	.finish = finish,
};

const struct model_format format_hf_roberta = {
	"hf-roberta", "Hugging Face RoBERTa directory (RobertaForMaskedLM or RobertaModel)",
	.hf = &hf_roberta,
};
