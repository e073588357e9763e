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
 * (bert_tokenizer): BERT's WordPiece from tokenizer.json or vocab.txt,
 * [CLS] ... [SEP] around the text.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "safetensors.h"
#include "tok-wordpiece.h"

/* ------------------------------------------------------------ config.json */

/* config.json at path when its model_type is bert, else NULL. */
static json_t *bert_config(const char *path)
{
	json_t *root = ju_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *t = json_object_get(root, "model_type");
	if (json_is_string(t) && !strcmp(json_string_value(t), "bert"))
		return root;
	json_decref(root);
	return NULL;
}

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

static int parse_config(json_t *o, struct model_config *c, struct err *e)
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
	c->norm = NORM_LAYER;
	c->norm_eps = eps;
	c->placement = PLACE_POST;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU_EXACT;
	c->mask = MASK_NONE;
	c->emb_norm = true;
	c->head = HEAD_MLM;
	c->bias = true;
	c->tied = true; /* read_weights unties a decoder.weight that differs */
	if (config_validate(c, e) != 0)
		return err_prefix(e, "config.json");
	return 0;
}

/* ---------------------------------------------------------------- weights */

/* The weights of one file, whose names may lack "bert." (BertModel). */
struct bert_names {
	struct ld_shards *s;
	const char *pre; /* "bert." or "" */
};

/* Reads pre + name. */
static int rd(const struct bert_names *b, const char *name, uint64_t d0, uint64_t d1, float *dst,
	      struct err *e)
{
	char full[160];
	snprintf(full, sizeof full, "%s%s", b->pre, name);
	return ld_shards_read(b->s, full, d0, d1, dst, e);
}

/* A LayerNorm called base: base.weight / base.bias, or gamma / beta. */
static int rd_norm(const struct bert_names *b, const char *base, uint64_t C, float *w, float *bias,
		   struct err *e)
{
	char wn[160], full[200];
	struct st_file *f;
	snprintf(full, sizeof full, "%s%s.gamma", b->pre, base);
	bool old = ld_shards_find(b->s, full, &f) != NULL; /* else a missing .weight is named */
	snprintf(wn, sizeof wn, "%s.%s", base, old ? "gamma" : "weight");
	if (rd(b, wn, C, 0, w, e))
		return -1;
	snprintf(wn, sizeof wn, "%s.%s", base, old ? "beta" : "bias");
	return rd(b, wn, C, 0, bias, e);
}

/* Layer l's tensors: query, key and value stacked as the engine's H query,
 * then key, then value heads; the post-norm block's two LayerNorms as
 * norm1 (after attention) and norm2 (after the MLP). */
static int read_layer(const struct bert_names *b, struct model *m, int l, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, F = (uint64_t)c->d_ff;
	float *qkvw = m->p[P_QKVW] + (size_t)l * 3 * C * C, *qkvb = m->p[P_QKVB] + (size_t)l * 3 * C;
	static const char *const qkv[3] = { "query", "key", "value" };
	char n1[128], n2[128];
#define N(buf, fmt) (snprintf(buf, sizeof buf, "encoder.layer.%d." fmt, l), buf)
#define AT(id, n) (m->p[id] + (size_t)l * (n))
	for (int i = 0; i < 3; i++) {
		snprintf(n1, sizeof n1, "encoder.layer.%d.attention.self.%s.weight", l, qkv[i]);
		snprintf(n2, sizeof n2, "encoder.layer.%d.attention.self.%s.bias", l, qkv[i]);
		if (rd(b, n1, C, C, qkvw + (size_t)i * C * C, e) || rd(b, n2, C, 0, qkvb + (size_t)i * C, e))
			return -1;
	}
	if (rd(b, N(n1, "attention.output.dense.weight"), C, C, AT(P_ATTPROJW, C * C), e) ||
	    rd(b, N(n1, "attention.output.dense.bias"), C, 0, AT(P_ATTPROJB, C), e) ||
	    rd_norm(b, N(n1, "attention.output.LayerNorm"), C, AT(P_LN1W, C), AT(P_LN1B, C), e) ||
	    rd(b, N(n1, "intermediate.dense.weight"), F, C, AT(P_FCW, F * C), e) ||
	    rd(b, N(n1, "intermediate.dense.bias"), F, 0, AT(P_FCB, F), e) ||
	    rd(b, N(n1, "output.dense.weight"), C, F, AT(P_FCPROJW, C * F), e) ||
	    rd(b, N(n1, "output.dense.bias"), C, 0, AT(P_FCPROJB, C), e) ||
	    rd_norm(b, N(n1, "output.LayerNorm"), C, AT(P_LN2W, C), AT(P_LN2B, C), e))
		return -1;
#undef AT
#undef N
	return 0;
}

/* Embeddings: words, positions + token type 0 folded in, their norm. */
static int read_embeddings(const struct bert_names *b, struct model *m, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, V = (uint64_t)c->vocab_size, S = (uint64_t)c->context;
	char full[160];
	struct st_file *f;
	snprintf(full, sizeof full, "%sembeddings.token_type_embeddings.weight", b->pre);
	struct st_tensor *t = ld_shards_find(b->s, full, &f);
	if (!t || t->ndim != 2 || t->shape[0] < 1 || t->shape[1] != C)
		return err_set(e, "%s: missing, or not (type_vocab_size, %llu)", full,
			       (unsigned long long)C);
	float *types = xmalloc((size_t)t->shape[0] * C * sizeof(float));
	int rc = rd(b, "embeddings.token_type_embeddings.weight", t->shape[0], C, types, e);
	if (!rc)
		rc = rd(b, "embeddings.word_embeddings.weight", V, C, m->p[P_WTE], e) ||
		     rd(b, "embeddings.position_embeddings.weight", S, C, m->p[P_WPE], e) ||
		     rd_norm(b, "embeddings.LayerNorm", C, m->p[P_LNEW], m->p[P_LNEB], e);
	if (!rc) /* single-segment input: every token has type 0 */
		for (size_t i = 0; i < S; i++)
			for (size_t j = 0; j < C; j++)
				m->p[P_WPE][i * C + j] += types[j];
	free(types);
	return rc ? -1 : 0;
}

/* The masked-LM head but its decoder weight (untie reads that). */
static int read_head(struct ld_shards *s, struct model *m, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, V = (uint64_t)c->vocab_size;
	struct bert_names h = { s, "" };
	struct st_file *f;
	if (rd(&h, "cls.predictions.transform.dense.weight", C, C, m->p[P_HEADW], e) ||
	    rd(&h, "cls.predictions.transform.dense.bias", C, 0, m->p[P_HEADB], e) ||
	    rd_norm(&h, "cls.predictions.transform.LayerNorm", C, m->p[P_HEADLNW], m->p[P_HEADLNB], e) ||
	    rd(&h, "cls.predictions.bias", V, 0, m->p[P_OUTB], e))
		return -1;
	if (!ld_shards_find(s, "cls.predictions.decoder.bias", &f))
		return 0;
	/* a second copy of cls.predictions.bias: it must agree */
	float *tmp = xmalloc((size_t)V * sizeof(float));
	int rc = rd(&h, "cls.predictions.decoder.bias", V, 0, tmp, e);
	if (!rc && memcmp(tmp, m->p[P_OUTB], (size_t)V * sizeof(float)))
		rc = err_set(e, "cls.predictions.decoder.bias differs from cls.predictions.bias");
	free(tmp);
	return rc;
}

/* The output layer: tied to the word embeddings (m itself) unless the
 * file's cls.predictions.decoder.weight differs from them, when an untied
 * copy of m holding it is returned and m freed.  NULL + e on failure (m
 * freed). */
static struct model *untie(struct ld_shards *s, struct model *m, struct err *e)
{
	struct st_file *f;
	size_t n = (size_t)m->cfg.vocab_size * m->cfg.d_model;
	if (!ld_shards_find(s, "cls.predictions.decoder.weight", &f))
		return m;
	float *w = xmalloc(n * sizeof(float));
	struct model *u = NULL;
	if (ld_shards_read(s, "cls.predictions.decoder.weight", (uint64_t)m->cfg.vocab_size,
			   (uint64_t)m->cfg.d_model, w, e))
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

/* Tensors that hold no weights the engine uses. */
static bool ignored_tensor(const char *name)
{
	static const char *const parts[] = { "embeddings.position_ids", "pooler.dense.",
					     "cls.seq_relationship." };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		if (strstr(name, parts[i]))
			return true;
	return false;
}

/* Reads every weight into m (tied); returns m, an untied copy of it, or
 * NULL + e (m freed). */
static struct model *read_weights(struct ld_shards *s, struct model *m, const char *pre,
				  struct err *e)
{
	struct bert_names b = { s, pre };
	int rc = read_embeddings(&b, m, e);
	for (int l = 0; !rc && l < m->cfg.n_layer; l++)
		rc = read_layer(&b, m, l, e);
	if (rc || (cfg_has_head(&m->cfg) && read_head(s, m, e))) {
		model_free(m);
		return NULL;
	}
	if (cfg_has_head(&m->cfg))
		m = untie(s, m, e);
	if (m && ld_shards_all_read(s, ignored_tensor, e)) {
		model_free(m);
		return NULL;
	}
	return m;
}

/* Which names the file uses: "bert." (BertForMaskedLM, or a BertModel
 * saved inside another) or none (BertModel); *head: whether it holds the
 * masked-LM head (cls.predictions). */
static const char *name_prefix(struct ld_shards *s, bool *head)
{
	struct st_file *f;
	*head = ld_shards_find(s, "cls.predictions.transform.dense.weight", &f) != NULL;
	return ld_shards_find(s, "bert.embeddings.word_embeddings.weight", &f) ? "bert." : "";
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
static struct tokenizer *bert_tokenizer(const char *opt, const char *dir, struct err *e)
{
	const char *where = opt ? opt : dir;
	if (is_wordpiece(where))
		return tok_wordpiece_load(where, e);
	return ld_hf_tokenizer(opt, dir, e);
}

/* ----------------------------------------------------------------- format */

static bool probe_bert(const char *path, char *why, size_t n)
{
	return ld_probe_hf_dir(path, bert_config, "a BERT model", why, n);
}

static struct model *load_bert(const char *path, const struct load_opts *o, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = bert_config(cfgp);
	struct model_config cfg;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct ld_shards sh = { .n = 0 };
	const char *pre;
	free(cfgp);
	if (!root) {
		err_set(e, "config.json: not a BERT model, or not JSON");
		goto fail;
	}
	if (parse_config(root, &cfg, e))
		goto fail;
	tok = bert_tokenizer(o->tokenizer, path, e);
	if (!tok)
		goto fail_noprefix;
	if (ld_tokenizer_fits(tok, cfg.vocab_size, e))
		goto fail;
	bool head = false;
	if (ld_shards_open(path, &sh, e))
		goto fail;
	pre = name_prefix(&sh, &head);
	if (!head) /* a BertModel: the last block's output is the model's */
		cfg.head = HEAD_NONE;
	if (ld_shards_check_size(&sh, (double)config_param_count(&cfg), e))
		goto fail;
	m = model_new(&cfg, e);
	if (!m || !(m = read_weights(&sh, m, pre, e)))
		goto fail;
	ld_shards_close(&sh);
	json_decref(root);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = ld_basename(path, NULL);
	return m;
fail:
	err_prefix(e, "%s", path);
fail_noprefix:
	ld_shards_close(&sh);
	tok_free(tok);
	model_free(m);
	json_decref(root);
	return NULL;
}

static int describe_bert(const char *path, struct model_config *c, struct err *e)
{
	char *cfgp = ld_join(path, "config.json");
	json_t *root = bert_config(cfgp);
	free(cfgp);
	int rc = root ? parse_config(root, c, e)
		      : err_set(e, "config.json: not a BERT model, or not JSON");
	struct ld_shards sh = { .n = 0 };
	struct err ignore;
	bool head = true;
	if (!rc && !ld_shards_open(path, &sh, &ignore)) { /* headers only: a BertModel? */
		name_prefix(&sh, &head);
		c->head = head ? HEAD_MLM : HEAD_NONE;
	}
	ld_shards_close(&sh);
	if (rc)
		err_prefix(e, "%s", path);
	json_decref(root);
	return rc;
}

const struct model_format format_hf_bert = {
	"hf-bert", "Hugging Face BERT directory (BertForMaskedLM or BertModel)", probe_bert, load_bert,
	describe_bert,
};
