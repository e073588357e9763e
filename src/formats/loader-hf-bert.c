/*
 * loader-hf-bert.c — Hugging Face BERT directories ("hf-bert"): config.json
 * with model_type "bert": BertForMaskedLM, or a BertModel without a head.
 *
 * config.json maps to our config as
 *   num_hidden_layers, num_attention_heads (= K/V heads), hidden_size,
 *   intermediate_size, vocab_size, max_position_embeddings; LayerNorm with
 *   layer_norm_eps (1e-12) and biases, post-norm blocks
 *   (x <- LN(x + attn(x)); x <- LN(x + mlp(x))), learned positions, exact
 *   GELU, no mask (bidirectional), an embedding norm (emb_norm) and
 *   BERT's masked-LM head with no final norm (head mlm), the decoder tied
 *   to the word embeddings unless the file holds a different
 *   cls.predictions.decoder.weight; without cls.predictions (a BertModel
 *   file) no head (head none: attention and the stream, no logits).  Refused by name: hidden_act other
 *   than "gelu", position_embedding_type other than "absolute",
 *   is_decoder or add_cross_attention true, type_vocab_size below 1.
 *
 * Token types: the engine has no segment input, so
 * token_type_embeddings[0] is added into every row of the position table
 * at load time.  For single-segment input (every token_type_id 0, what
 * HF uses when none are given) this is exact up to the order of one float
 * addition; a second segment (a sentence pair) cannot be expressed.
 *
 * An encoder's numbers (docs/variants.md): the loss is the masked-LM
 * head's cross-entropy of each input token at its own, unmasked position
 * (reconstruction; model_targets), not a next-token loss; KL and top-1
 * compare the run's and the baseline's output distributions at every
 * position, as for decoders.  generate and train --from refuse it.  A
 * BertModel has none of these: no loss, KL or top-1, and the commands that
 * read logits (lens, patch, sweep, ...) refuse it.
 *
 * Weights (model.safetensors or shards, hf-shards.c), with or without the
 * "bert." prefix: embeddings.{word_embeddings, position_embeddings,
 * token_type_embeddings, LayerNorm}, encoder.layer.N.attention.self.{query,
 * key, value}, attention.output.{dense, LayerNorm}, intermediate.dense,
 * output.{dense, LayerNorm}; cls.predictions.{transform.dense,
 * transform.LayerNorm, bias, decoder}.  LayerNorms may be spelled
 * gamma/beta (older files).  The pooler (pooler.dense), NSP's
 * cls.seq_relationship and the position_ids buffer are ignored.
 *
 * The tokenizer: --tokenizer, else the one beside the model
 * (hf_bert_tokenizer): BERT's WordPiece from tokenizer.json or vocab.txt,
 * [CLS] ... [SEP] around the text.
 *
 * The encoder's pieces (hf_bert_parse, hf_encoder_switches,
 * hf_bert_embeddings, hf_mlm_finish, hf_bert_tokenizer and the map's
 * HF_BERT_ENCODER rows, hf-family.h) serve RoBERTa (loader-hf-roberta.c)
 * and DistilBERT (loader-hf-distilbert.c) too.
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
#include "tok-wordpiece.h"

/* ------------------------------------------------------------ config.json */

/* The fields the engine cannot honour, refused by name. */
static int refuse_fields(json_t *o, struct err *e)
{
	const char *act = "gelu", *pos = "absolute";
	bool decoder = false, cross = false;
	int types = 2;
	if (ju_get_str(o, "hidden_act", "config.json", JU_NULL_ABSENT, &act, e) < 0 ||
	    ju_get_str(o, "position_embedding_type", "config.json", JU_NULL_ABSENT, &pos, e) < 0 ||
	    ju_get_bool(o, "is_decoder", "config.json", JU_NULL_ABSENT, &decoder, e) < 0 ||
	    ju_get_bool(o, "add_cross_attention", "config.json", JU_NULL_ABSENT, &cross, e) < 0 ||
	    LD_HF_INT(o, "type_vocab_size", 0, &types, e) < 0)
		return -1;
	if (strcmp(act, "gelu"))
		return err_set(e, "config.json: hidden_act \"%.40s\" is not supported (gelu is)", act);
	if (strcmp(pos, "absolute"))
		return err_set(e, "config.json: position_embedding_type \"%.40s\" is not supported "
			       "(absolute is)", pos);
	if (decoder)
		return err_set(e, "config.json: is_decoder true is not supported (BERT as an encoder is)");
	if (cross)
		return err_set(e, "config.json: add_cross_attention true is not supported");
	return 0;
}

void hf_encoder_switches(struct model_config *c, float eps)
{
	c->norm = NORM_LAYER;
	c->norm_eps = eps;
	c->placement = PLACE_POST;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU_EXACT;
	c->mask = MASK_NONE;
	c->emb_norm = true;
	c->head = HEAD_MLM;
	c->bias = true;
	c->tied = true; /* hf_mlm_finish unties a decoder that differs */
}

int hf_bert_parse(json_t *o, struct model_config *c, struct err *e)
{
	if (ld_hf_shape(o, c, e))
		return -1;
	if (refuse_fields(o, e))
		return -1;
	if (c->d_model % c->n_head)
		return err_set(e, "config.json: hidden_size %d is not divisible by "
			       "num_attention_heads %d", c->d_model, c->n_head);
	float eps = 1e-12f;
	if (ju_get_float(o, "layer_norm_eps", "config.json", JU_NULL_ABSENT, &eps, e) < 0)
		return -1;
	hf_encoder_switches(c, eps);
	return 0;
}

static int parse_config(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
			struct err *e)
{
	(void)type;
	(void)x;
	if (hf_bert_parse(o, c, e))
		return -1;
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* The position table: the file's rows x->pos_offset .. + context, read
 * whole (context + offset rows) and cut. */
static int read_positions(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
			  struct err *e)
{
	uint64_t C = (uint64_t)m->cfg.d_model, S = (uint64_t)m->cfg.context;
	uint64_t off = (uint64_t)x->pos_offset;
	char full[160];
	snprintf(full, sizeof full, "%sembeddings.position_embeddings.weight", x->prefix);
	if (!off)
		return ld_shards_read(s, full, S, C, m->p[P_WPE], e);
	float *all = xmalloc((size_t)((S + off) * C) * sizeof(float));
	int rc = ld_shards_read(s, full, S + off, C, all, e);
	if (!rc)
		memcpy(m->p[P_WPE], all + off * C, (size_t)(S * C) * sizeof(float));
	free(all);
	return rc;
}

/* Token type 0 folded into every row of the position table. */
static int fold_token_types(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
			    struct err *e)
{
	uint64_t C = (uint64_t)m->cfg.d_model, S = (uint64_t)m->cfg.context;
	char full[160];
	struct st_file *f;
	snprintf(full, sizeof full, "%sembeddings.token_type_embeddings.weight", x->prefix);
	struct st_tensor *t = ld_shards_find(s, full, &f);
	if (!t || t->ndim != 2 || t->shape[0] < 1 || t->shape[1] != C)
		return err_set(e, "%s: missing, or not (type_vocab_size, %llu)", full,
			       (unsigned long long)C);
	float *types = xmalloc((size_t)t->shape[0] * C * sizeof(float));
	int rc = ld_shards_read(s, full, t->shape[0], C, types, e);
	for (size_t i = 0; !rc && i < S; i++) /* single-segment input: every token has type 0 */
		for (size_t j = 0; j < C; j++)
			m->p[P_WPE][i * C + j] += types[j];
	free(types);
	return rc;
}

int hf_bert_embeddings(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
		       struct err *e)
{
	return read_positions(s, m, x, e) || fold_token_types(s, m, x, e) ? -1 : 0;
}

/* The decoder's bias, when the file holds one (a second copy of the
 * head's bias): it must agree with P_OUTB. */
static int check_decoder_bias(struct ld_shards *s, const struct model *m, const char *name,
			      struct err *e)
{
	struct st_file *f;
	uint64_t V = (uint64_t)m->cfg.vocab_size;
	if (!name || !ld_shards_find(s, name, &f))
		return 0;
	float *tmp = xmalloc((size_t)V * sizeof(float));
	int rc = ld_shards_read(s, name, V, 0, tmp, e);
	if (!rc && memcmp(tmp, m->p[P_OUTB], (size_t)V * sizeof(float)))
		rc = err_set(e, "%s differs from the head's bias", name);
	free(tmp);
	return rc;
}

/* The output layer: tied to the word embeddings (m itself) unless the
 * file's decoder weight differs from them, when an untied copy of m
 * holding it is returned and m freed.  NULL + e on failure (m freed). */
static struct model *untie(struct ld_shards *s, struct model *m, const char *decoder,
			   struct err *e)
{
	struct st_file *f;
	size_t n = (size_t)m->cfg.vocab_size * m->cfg.d_model;
	if (!ld_shards_find(s, decoder, &f))
		return m;
	float *w = xmalloc(n * sizeof(float));
	struct model *u = NULL;
	if (ld_shards_read(s, decoder, (uint64_t)m->cfg.vocab_size, (uint64_t)m->cfg.d_model, w, e))
		goto out;
	if (!memcmp(w, m->p[P_WTE], n * sizeof(float))) {
		free(w);
		return m;
	}
	struct model_config c = m->cfg;
	c.tied = false;
	u = model_new(&c, e);
	if (!u)
		goto out;
	for (int i = 0; i < N_PARAMS; i++)
		if (u->psize[i] && i != P_LMHEAD)
			memcpy(u->p[i], m->p[i], u->psize[i] * sizeof(float));
	memcpy(u->p[P_LMHEAD], w, n * sizeof(float));
out:
	free(w);
	model_free(m);
	return u;
}

struct model *hf_mlm_finish(struct ld_shards *s, struct model *m, const char *decoder,
			    const char *decoder_bias, struct err *e)
{
	if (!cfg_has_head(&m->cfg))
		return m;
	if (check_decoder_bias(s, m, decoder_bias, e)) {
		model_free(m);
		return NULL;
	}
	return untie(s, m, decoder, e);
}

/* What the map leaves: positions, token types, and the head's decoder. */
static struct model *finish(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
			    struct err *e)
{
	if (hf_bert_embeddings(s, m, x, e)) {
		model_free(m);
		return NULL;
	}
	return hf_mlm_finish(s, m, "cls.predictions.decoder.weight", "cls.predictions.decoder.bias", e);
}

/* -------------------------------------------------------------- tokenizer */

/* Whether the tokenizer.json at path has a WordPiece model (BERT's). */
static bool wordpiece_json(const char *path)
{
	json_t *root = ju_load_file(path, 0, NULL);
	json_t *type = json_object_get(json_object_get(root, "model"), "type");
	bool wp = json_is_string(type) && !strcmp(json_string_value(type), "WordPiece");
	json_decref(root);
	return wp;
}

/* Whether where (a file, or a directory's tokenizer.json, else its
 * vocab.txt) holds BERT's WordPiece. */
static bool is_wordpiece(const char *where)
{
	if (ld_is_file(where)) {
		char *base = ld_basename(where, NULL);
		bool wp = !strcmp(base, "vocab.txt") || wordpiece_json(where);
		free(base);
		return wp;
	}
	char *tj = ld_join(where, "tokenizer.json"), *vt = ld_join(where, "vocab.txt");
	bool wp = ld_is_file(tj) ? wordpiece_json(tj) : ld_is_file(vt);
	free(tj);
	free(vt);
	return wp;
}

/* The tokenizer of a BERT directory, or of --tokenizer (opt): BERT's
 * WordPiece (tok-wordpiece.h: a WordPiece tokenizer.json, else vocab.txt
 * with tokenizer_config.json's casing), or any other the HF loaders read
 * (ld_hf_tokenizer).  NULL + a one-line e on failure. */
struct tokenizer *hf_bert_tokenizer(const char *opt, const char *dir, struct err *e)
{
	const char *where = opt ? opt : dir;
	if (is_wordpiece(where))
		return tok_wordpiece_load(where, e);
	return ld_hf_tokenizer(opt, dir, e);
}

/* -------------------------------------------------------------- the family */

static const char *const types[] = { "bert", NULL };

/* Tensors that hold no weights the engine uses. */
static const char *const ignored[] = { "embeddings.position_ids", "pooler.dense.",
				       "cls.seq_relationship.", NULL };

static const struct hf_tensor map[] = {
	HF_BERT_ENCODER,
	/* the masked-LM head, absent from a BertModel (head none) */
	{ .name = "cls.predictions.transform.dense.weight", .p = P_HEADW, .unprefixed = true },
	{ .name = "cls.predictions.transform.dense.bias", .p = P_HEADB, .unprefixed = true },
	HF_BERT_NORM("cls.predictions.transform.LayerNorm", P_HEADLNW, P_HEADLNB, true),
	{ .name = "cls.predictions.bias", .p = P_OUTB, .unprefixed = true },
	{ .name = NULL },
};

const struct hf_family hf_bert = {
	.what = "a BERT model",
	.types = types,
	.parse = parse_config,
	.tokenizer = hf_bert_tokenizer,
	.prefix = "bert.",
	.map = map,
	.ignored = ignored,
	.mlm_probe = "cls.predictions.transform.dense.weight",
	.finish = finish,
};

const struct model_format format_hf_bert = {
	"hf-bert", "Hugging Face BERT directory (BertForMaskedLM or BertModel)", .hf = &hf_bert,
};
