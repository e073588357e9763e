/*
 * hf-family.h — private to the Hugging Face loaders (src/formats/hf-load.c
 * and the loader-hf*.c family files): one architecture as a table row, and
 * the one loader (ld_hf_load) that opens every family's directory.
 *
 * Lifetimes: a family is a const struct of static data and functions;
 * nothing in it is allocated.  ld_hf_load reads config.json, takes the
 * tokenizer, checks it fits, opens the weights (model.safetensors, its
 * shards, or the one safetensors file named), refuses a config the files
 * could not fill, allocates the model and fills it through the family's
 * tensor map; on failure everything is freed and NULL + "PATH: problem"
 * returned.
 *
 * A new family is one file holding a const struct hf_family (its
 * model_type names, config parse, tokenizer, tensor map) and one row in
 * the format table (loader.c): a struct model_format whose .hf names it.
 */
#ifndef ATTNSCOPE_HF_FAMILY_H
#define ATTNSCOPE_HF_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "loaders.h"
#include "util.h"

/* Which rows of a fused engine tensor an HF tensor fills (config.h):
 *   WHOLE        the whole tensor (of one layer, when per-layer)
 *   Q, K, V      QKVW / QKVB rows: H*D query rows, then K*D key rows, then
 *                K*D value rows
 *   GATE, UP     FCW rows of SwiGLU: F gate rows, then F up rows */
enum hf_part { HF_WHOLE, HF_Q, HF_K, HF_V, HF_GATE, HF_UP };

/* How the file's tensor becomes the engine's rows:
 *   COPY       as stored
 *   CONV1D     GPT-2's Conv1D weight, stored [in, out]: transposed
 *   ROPE       a Q or K projection (or bias) whose heads turn pairs
 *              (i, i + R/2) of their first R dims (rotary_dims; R = D
 *              for most): rows permuted to the engine's (2i, 2i + 1)
 *              within each head, the rest kept (neox_rope_row)
 *   NEOX_QKV   GPT-NeoX's fused query_key_value, per head [q; k; v]:
 *              rows moved to the engine's layout (neox_qkv_row) */
enum hf_xform { HF_COPY, HF_CONV1D, HF_ROPE, HF_NEOX_QKV };

/* Bits of struct hf_tensor's when, set by a family's parse from config.json. */
#define HF_OPT_ATTN_BIAS 1u /* the Q/K/V and output projections carry biases */

/* One tensor of a family's files.  Per-layer engine tensors
 * (param_per_layer) have a name with one %d, the layer; the file's names
 * may carry the family's prefix (struct hf_family), unless unprefixed.
 * An entry whose engine tensor the config does not have (param_shape 0:
 * Qwen2's Q/K/V biases in a Llama config, BERT's head in a BertModel) is
 * not read, so a file that holds it anyway is refused as unexpected. */
struct hf_tensor {
	const char *name;	/* "model.layers.%d.self_attn.q_proj.weight" */
	enum param_id p;	/* the engine tensor it fills */
	enum hf_part part;
	enum hf_xform xf;
	unsigned when;		/* HF_OPT_* bits that must all be set; 0: always */
	bool unprefixed;	/* never carries the prefix (lm_head.weight) */
	const char *alt;	/* an older spelling read when name is absent
				 * (BERT's LayerNorm gamma / beta), or NULL */
	bool fused;		/* the file's tensor holds every part of the
				 * engine tensor (of one layer) in the engine's
				 * row order, [q; k; v] or [gate; up] (Phi-3's
				 * qkv_proj, gate_up_proj); this entry takes only
				 * its part's rows, through xf.  A fused tensor is
				 * listed once per part. */
	bool plus_one;		/* a norm whose scale is 1 + the stored weight
				 * (Gemma's): 1 added to every value read */
};

/* What a family's parse and inspect settle beyond the config. */
struct hf_ctx {
	const char *prefix;	/* "" or the family's prefix, as the file has it */
	unsigned opts;		/* HF_OPT_* */
	int pos_offset;		/* the row of the file's position table that
				 * position 0 reads (RoBERTa: pad_token_id + 1) */
	const char *head;	/* the output layer's name when the family's
				 * inspect finds the weights spell it other than
				 * its head does, or NULL */
};

struct hf_family {
	const char *what;		/* for messages: "a Llama, Qwen2 or Mistral model" */
	const char *const *types;	/* config.json model_type values, NULL-ended */
	bool untyped;			/* also claims a config.json without model_type */
	/* config.json's object o, whose model_type is type (NULL: none), into
	 * c, with config_validate's check; options into x->opts.  0, or -1 + e
	 * ("config.json: ..."). */
	int (*parse)(json_t *o, const char *type, struct model_config *c, struct hf_ctx *x,
		     struct err *e);
	/* The tokenizer: from opt (--tokenizer) when given, else from dir;
	 * NULL + a one-line e (no path prefix needed). */
	struct tokenizer *(*tokenizer)(const char *opt, const char *dir, struct err *e);
	const char *prefix;		/* names may start with it, or NULL (never) */
	const struct hf_tensor *map;	/* ended by a NULL name; map[0] is the token
					 * embedding, whose name finds the prefix */
	/* The output layer when it is an ordinary LM head: its tensor (required
	 * when the config unties it, else, when present, a copy of map[0]'s),
	 * and whether config.json ties by default.  NULL: finish reads it. */
	const char *head;
	bool tied_default;
	/* Names held but unused (buffers, poolers): any containing one of these
	 * is passed over; NULL-ended, or NULL. */
	const char *const *ignored;
	/* An encoder's masked-LM head: a tensor of it (never prefixed) whose
	 * absence from the weights makes the model head none (a BertModel,
	 * RobertaModel or DistilBertModel), or NULL. */
	const char *mlm_probe;
	/* Optional, before the model is allocated: what the weights decide of
	 * the config.  0, or -1 + e. */
	int (*inspect)(struct ld_shards *s, struct model_config *c, struct hf_ctx *x,
		       struct err *e);
	/* Optional, after the map is read: what a map cannot say.  Returns m,
	 * a replacement for it (m freed), or NULL + e (m freed). */
	struct model *(*finish)(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
				struct err *e);
};

extern const struct hf_family hf_gpt2, hf_llama, hf_neox, hf_neo, hf_bert, hf_roberta,
	hf_distilbert, hf_phi3, hf_gemma, hf_gemma3mm, hf_olmo2;

/* ------------------------------------------------ BERT-like encoders
 * (loader-hf-bert.c), shared with RoBERTa and DistilBERT. */

/* The engine switches of a BERT-like encoder: post-norm LayerNorm (eps),
 * learned positions, exact GELU, no mask, an embedding norm, the
 * masked-LM head, biases, tied. */
void hf_encoder_switches(struct model_config *c, float eps);

/* BERT's config.json keys (ld_hf_shape, layer_norm_eps) into c with
 * hf_encoder_switches, refusing by name what the engine cannot run; no
 * config_validate (the caller may still change the context).  0, or -1 + e. */
int hf_bert_parse(json_t *o, struct model_config *c, struct err *e);

/* BERT's embeddings beyond the word table: the position table from row
 * x->pos_offset of PREFIXembeddings.position_embeddings.weight (which has
 * context + pos_offset rows), plus token type 0 of
 * PREFIXembeddings.token_type_embeddings.weight added into every row.
 * 0, or -1 + e. */
int hf_bert_embeddings(struct ld_shards *s, struct model *m, const struct hf_ctx *x,
		       struct err *e);

/* The masked-LM head's output layer: tied unless the tensor decoder
 * differs from the word embeddings (then an untied copy replaces m);
 * decoder_bias, when named and present, must equal the head's bias.
 * m itself without a head; NULL + e on failure (m freed). */
struct model *hf_mlm_finish(struct ld_shards *s, struct model *m, const char *decoder,
			    const char *decoder_bias, struct err *e);

/* A LayerNorm pair of BERT's spelling, or gamma / beta (older files). */
#define HF_BERT_NORM(base, w, b, raw) \
	{ .name = base ".weight", .p = w, .unprefixed = raw, .alt = base ".gamma" }, \
	{ .name = base ".bias", .p = b, .unprefixed = raw, .alt = base ".beta" }

/* The map entries of BERT's embeddings and encoder (BERT and RoBERTa):
 * the word table (map[0]) and the embedding LayerNorm (the positions and
 * token types are hf_bert_embeddings'), query, key and value stacked as
 * the engine's H query, then key, then value heads, and the post-norm
 * block's two LayerNorms as norm1 (after attention) and norm2 (after the
 * MLP). */
#define HF_BERT_L_ "encoder.layer.%d."
#define HF_BERT_ENCODER \
	{ .name = "embeddings.word_embeddings.weight", .p = P_WTE }, \
	HF_BERT_NORM("embeddings.LayerNorm", P_LNEW, P_LNEB, false), \
	{ .name = HF_BERT_L_ "attention.self.query.weight", .p = P_QKVW, .part = HF_Q }, \
	{ .name = HF_BERT_L_ "attention.self.query.bias", .p = P_QKVB, .part = HF_Q }, \
	{ .name = HF_BERT_L_ "attention.self.key.weight", .p = P_QKVW, .part = HF_K }, \
	{ .name = HF_BERT_L_ "attention.self.key.bias", .p = P_QKVB, .part = HF_K }, \
	{ .name = HF_BERT_L_ "attention.self.value.weight", .p = P_QKVW, .part = HF_V }, \
	{ .name = HF_BERT_L_ "attention.self.value.bias", .p = P_QKVB, .part = HF_V }, \
	{ .name = HF_BERT_L_ "attention.output.dense.weight", .p = P_ATTPROJW }, \
	{ .name = HF_BERT_L_ "attention.output.dense.bias", .p = P_ATTPROJB }, \
	HF_BERT_NORM(HF_BERT_L_ "attention.output.LayerNorm", P_LN1W, P_LN1B, false), \
	{ .name = HF_BERT_L_ "intermediate.dense.weight", .p = P_FCW }, \
	{ .name = HF_BERT_L_ "intermediate.dense.bias", .p = P_FCB }, \
	{ .name = HF_BERT_L_ "output.dense.weight", .p = P_FCPROJW }, \
	{ .name = HF_BERT_L_ "output.dense.bias", .p = P_FCPROJB }, \
	HF_BERT_NORM(HF_BERT_L_ "output.LayerNorm", P_LN2W, P_LN2B, false)

/* BERT's tokenizer (WordPiece from tokenizer.json or vocab.txt, [CLS] ...
 * [SEP]), else any the HF loaders read; from opt or dir.  NULL + e. */
struct tokenizer *hf_bert_tokenizer(const char *opt, const char *dir, struct err *e);

/* The format table's entry points for family f (struct model_format). */
bool ld_hf_probe(const struct hf_family *f, const char *path, char *why, size_t n);
struct model *ld_hf_load(const struct hf_family *f, const char *path, const struct load_opts *o,
			 struct err *e);
int ld_hf_describe(const struct hf_family *f, const char *path, struct model_config *c,
		   struct err *e);
/* The bytes of the safetensors files' tensors of path (model_format's
 * stored_bytes): 0, or -1 when they cannot be opened. */
int ld_hf_stored_bytes(const char *path, double *bytes, double *values);

#endif
