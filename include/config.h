/*
 * config.h — the blueprint of a transformer (decoders of the GPT-2, Llama
 * and GPT-NeoX families; BERT's encoder) and its parameter tensor table.
 *
 * Dimension legend used in every shape comment of the engine:
 *   V  vocab_size       C  d_model          L  n_layer
 *   H  n_head (query)   K  n_kv_head        D  d_head (head_dim; C / H when 0)
 *   A  attention width H * D (C unless head_dim says otherwise)
 *   F  d_ff             S  context (maximum sequence length)
 *   B  batch            T  sequence length of one run (T <= S)
 *   QKV = (H + 2K) * D  rows of the fused query/key/value projection
 *   FF  = F (GELU) or 2F (SwiGLU: gate rows first, then up rows)
 */
#ifndef ATTNSCOPE_CONFIG_H
#define ATTNSCOPE_CONFIG_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum norm_type { NORM_LAYER, NORM_RMS };
enum norm_place { PLACE_PRE, PLACE_POST };
enum pos_type { POS_LEARNED, POS_ROPE };
/* RoPE frequency scaling (config_rope_freqs gives the formulas):
 *   NONE      theta^(-2i/R) as is
 *   LINEAR    every frequency divided by rope_factor (positions / factor)
 *   LLAMA3    Llama 3.1's: pairs whose wavelength exceeds
 *             rope_orig_context / rope_low_freq are divided by rope_factor,
 *             those below rope_orig_context / rope_high_freq are kept, and
 *             those between blend the two.
 *   LONGROPE  Phi-3's LongRoPE ("longrope", once "su"): pair i's frequency
 *             divided by rope_short[i] in a pass over at most
 *             rope_orig_context positions, by rope_long[i] in a longer one
 *             (the pass's length picks the table: config_rope_freqs'
 *             n_pos), and the turned dims of every query and key times
 *             rope_attn_factor (cos and sin scaled; the dims past R are
 *             not), so the turned part of each score times its square.
 *   FACTORS   one table of per-pair divisors, whatever the pass's length:
 *             pair i's frequency divided by rope_long[i] (rope_short holds
 *             the same table, the attention factor is 1); llama.cpp's
 *             rope_freqs tensor, which its converter writes for Llama 3.1's
 *             scaling, and what a GGUF file holds of it. */
enum rope_scaling {
	ROPE_SCALE_NONE, ROPE_SCALE_LINEAR, ROPE_SCALE_LLAMA3, ROPE_SCALE_LONGROPE,
	ROPE_SCALE_FACTORS
};
/* MLP_GELU is GPT-2's tanh approximation (HF "gelu_new"); MLP_GELU_EXACT
 * is 0.5 x (1 + erf(x / sqrt 2)) (HF "gelu", GPT-NeoX / Pythia); MLP_GEGLU
 * is SwiGLU's gated form with the tanh GELU in place of SiLU,
 * gelu(gate) * up (Gemma's "gelu_pytorch_tanh"). */
enum mlp_type { MLP_GELU, MLP_SWIGLU, MLP_GELU_EXACT, MLP_GEGLU };

/* Which keys a query sees (run options and a model's native mask):
 *   CAUSAL         keys 0..i, softmax over them
 *   NONE           every key (bidirectional)
 *   WINDOW         keys i-window..i
 *   AFTER_SOFTMAX  the pitfall: softmax over every key, then the weights of
 *                  keys after i set to 0, so rows no longer sum to 1 and
 *                  future keys still shape the normalisation */
enum mask_kind { MASK_CAUSAL, MASK_NONE, MASK_WINDOW, MASK_AFTER_SOFTMAX };

/* What follows the last block:
 *   LM   the final norm, then logits = WTE (tied) or LMHEAD times it
 *   MLM  BERT's masked-LM head, no final norm: h = norm(gelu_exact(HEADW x
 *        + HEADB)) with HEADLNW / HEADLNB, logits = WTE or LMHEAD times h,
 *        plus OUTB.  A model with this head is an encoder: its loss scores
 *        each input token at its own position (model_targets).
 *   NONE no head (a BertModel file): the last block's output is the
 *        model's; a pass has no logits and no loss (cfg_has_head). */
enum head_type { HEAD_LM, HEAD_MLM, HEAD_NONE };

/* Limits that keep every size computation far from overflow. */
#define CFG_MAX_VOCAB   (1 << 20)
#define CFG_MAX_DMODEL  (1 << 15)
#define CFG_MAX_LAYERS  256
#define CFG_MAX_HEADS   256
#define CFG_MAX_DFF     (1 << 17)
#define CFG_MAX_CONTEXT (1 << 16)
#define CFG_MAX_HEAD_DIM 4096 /* head_dim; H * D is held within CFG_MAX_DMODEL */
#define CFG_MAX_ROPE_PAIRS 256 /* LONGROPE: factors per table, so R <= 512 */

struct model_config {
	int vocab_size;       /* V */
	int d_model;          /* C */
	int n_layer;          /* L */
	int n_head;           /* H */
	int n_kv_head;        /* K, native; divides H */
	int head_dim;         /* D when nonzero (Qwen3, Gemma: H * D need not be C);
			       * 0 = C / H, every model's before head_dim existed */
	int d_ff;             /* F; 0 = no MLP (attention-only blocks) */
	int context;          /* S */
	enum norm_type norm;
	float norm_eps;
	enum norm_place placement; /* native placement */
	enum pos_type pos;
	float rope_theta;
	int rotary_dims;      /* RoPE turns the first R dims of each head (pairs
			       * (2i, 2i+1), i < R/2, by pos * theta^(-2i/R),
			       * scaled by rope_scaling); the
			       * rest pass unturned.  Even, 2..D; 0 = D (all) */
	enum rope_scaling rope_scaling; /* NONE unless a long-context model's */
	float rope_factor;    /* LINEAR, LLAMA3: >= 1 (1 when NONE or LONGROPE) */
	float rope_low_freq;  /* LLAMA3: low_freq_factor, > 0 */
	float rope_high_freq; /* LLAMA3: high_freq_factor, > rope_low_freq */
	int rope_orig_context; /* LLAMA3, LONGROPE: original_max_position_embeddings,
				* >= 1 */
	float rope_attn_factor; /* LONGROPE: cos and sin times this, > 0
				 * (cfg_rope_mscale; 1 for every other kind) */
	float rope_short[CFG_MAX_ROPE_PAIRS]; /* LONGROPE: (R/2) pair i's divisor in a
					       * pass of at most rope_orig_context
					       * positions, > 0; FACTORS: rope_long */
	float rope_long[CFG_MAX_ROPE_PAIRS];  /* LONGROPE: (R/2) in a longer pass, > 0;
					       * FACTORS: the table */
	enum mlp_type mlp;
	bool parallel;        /* pre-norm only: the block is x + attn(norm1(x)) +
			       * mlp(norm2(x)), both read the same x (GPT-NeoX);
			       * without residual: attn(norm1(x)) + mlp(norm2(x)) */
	bool emb_norm;        /* a norm (LNEW, LNEB) of token + position embeddings
			       * before block 0 (BERT) */
	enum head_type head;  /* the output head (HEAD_LM unless BERT's) */
	/* Gemma 2's switches (0 / false: off, every other model's): */
	float emb_scale;      /* token embeddings times this (sqrt(d_model)) */
	bool sandwich;        /* each sub-block's output normed (ATTPOSTW,
			       * MLPPOSTW) before it joins the stream, beside the
			       * norms before it */
	float attn_softcap;   /* scores s become cap * tanh(s / cap) (after the
			       * scale, before the mask) */
	float final_softcap;  /* logits likewise */
	int attn_scale_dim;   /* the native scale is 1/sqrt(this), not
			       * 1/sqrt(D) (query_pre_attn_scalar) */
	bool qk_norm;         /* an RMSNorm of every query and key head after
			       * the projection, before RoPE (Qwen3): weights
			       * QNORMW / KNORMW, D wide, one per layer shared by
			       * its query heads and one by its key heads */
	bool qk_norm_whole;   /* with qk_norm: one RMSNorm over all H query
			       * heads together (QNORMW H*D wide) and one over
			       * the K key heads (KNORMW K*D), OLMo-2's */
	bool post_only;       /* with sandwich: no norm before either sub-block
			       * (no LN1W, LN2W): OLMo-2's x + norm(attn(x));
			       * a run's ln1 / ln2 then hold the sub-blocks'
			       * inputs as they are (norm_forward of no scale) */
	bool bias;            /* biases on every linear layer and LayerNorm shifts */
	bool tied;            /* output projection is wte^T */
	/* How the model was trained (all true / causal for ordinary models;
	 * the lab's experiments switch them off): */
	bool residual;        /* sub-blocks add to the stream (false: replace it) */
	bool scale;           /* native 1/sqrt(D) on the scores */
	enum mask_kind mask;  /* native mask: CAUSAL, NONE or AFTER_SOFTMAX */
	/* Local attention (GPT-Neo): on a layer whose bit is set in local, query
	 * i sees only keys j with i - local_window < j <= i (local_window keys,
	 * itself included); the other layers are global (the native mask).
	 * local_window 0 and no bits: every layer global. */
	int local_window;
	uint64_t local[CFG_MAX_LAYERS / 64]; /* bit l: layer l is local */
	float rope_local_theta; /* Gemma 3: the local layers' RoPE base, their
				 * frequencies unscaled; 0: theirs are the
				 * global layers' (rope_theta, rope_scaling) */
};

/* Parameter tensors, in the order they are laid out in one allocation.
 * Shapes (a tensor absent from a config has size 0):
 *   WTE      (V, C)        token embedding
 *   WPE      (S, C)        learned positions only
 *   LN1W     (L, C)        norm before (pre) / after (post) attention
 *                          (LN1W, LN2W absent with post_only)
 *   LN1B     (L, C)        LayerNorm with bias only
 *   QKVW     (L, QKV, C)   rows: H query heads, K key heads, V value heads
 *   QKVB     (L, QKV)      bias only
 *   ATTPROJW (L, C, A)     output projection, input index = h*D + d
 *   ATTPROJB (L, C)
 *   LN2W     (L, C)        norm around the MLP     } absent without
 *   LN2B     (L, C)                                } an MLP (F = 0)
 *   FCW      (L, FF, C)                            }
 *   FCB      (L, FF)                               }
 *   FCPROJW  (L, C, F)                             }
 *   FCPROJB  (L, C)                                }
 *   LNFW     (C)           final norm (HEAD_LM only)
 *   LNFB     (C)
 *   LMHEAD   (V, C)        untied output only
 *   LNEW     (C)           embedding norm (emb_norm only)
 *   LNEB     (C)           LayerNorm with bias only
 *   HEADW    (C, C)        MLM head's transform (HEAD_MLM only)
 *   HEADB    (C)           bias only
 *   HEADLNW  (C)           MLM head's norm
 *   HEADLNB  (C)           LayerNorm with bias only
 *   OUTB     (V)           MLM head's output bias (bias only)
 *   QNORMW   (L, D)        q/k norm (qk_norm only): the scale of each
 *   KNORMW   (L, D)        query head's / key head's RMSNorm ((L, H*D) and
 *                          (L, K*D) with qk_norm_whole)
 *   ATTPOSTW (L, C)        sandwich norms (sandwich only): the norm of the
 *   MLPPOSTW (L, C)        attention's / the MLP's output
 */
enum param_id {
	P_WTE, P_WPE, P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB,
	P_LN2W, P_LN2B, P_FCW, P_FCB, P_FCPROJW, P_FCPROJB, P_LNFW, P_LNFB,
	P_LMHEAD, P_LNEW, P_LNEB, P_HEADW, P_HEADB, P_HEADLNW, P_HEADLNB, P_OUTB,
	P_QNORMW, P_KNORMW, P_ATTPOSTW, P_MLPPOSTW, N_PARAMS
};

/* Name of tensor i in checkpoints ("wte", "qkvw", ...). */
const char *param_name(enum param_id i);

/* Whether tensor i is per-layer (its first dimension is L). */
bool param_per_layer(enum param_id i);

/* Fills shape[0..*ndim) for tensor i; *ndim is 0 for an absent tensor.
 * Returns the element count (0 when absent). */
size_t param_shape(const struct model_config *c, enum param_id i, size_t shape[3], int *ndim);

/* Total number of parameters. */
size_t config_param_count(const struct model_config *c);

static inline int cfg_d_head(const struct model_config *c)
{
	return c->head_dim ? c->head_dim : c->d_model / c->n_head;
}
/* A, the width of the heads' concatenated outputs: H * D. */
static inline int cfg_attn_width(const struct model_config *c)
{
	return c->n_head * cfg_d_head(c);
}
static inline int cfg_qkv_rows(const struct model_config *c, int kv_heads)
{
	return (c->n_head + 2 * kv_heads) * cfg_d_head(c);
}
static inline int cfg_ff_rows(const struct model_config *c)
{
	return c->mlp == MLP_SWIGLU || c->mlp == MLP_GEGLU ? 2 * c->d_ff : c->d_ff;
}

/* The native scale of the scores: 1/sqrt(attn_scale_dim or D). */
static inline float cfg_attn_scale(const struct model_config *c)
{
	return 1.0f / sqrtf((float)(c->attn_scale_dim ? c->attn_scale_dim : cfg_d_head(c)));
}

/* R of rotary_dims: the rotated dims of each head (D when 0). */
static inline int cfg_rotary_dims(const struct model_config *c)
{
	return c->rotary_dims ? c->rotary_dims : cfg_d_head(c);
}

/* Whether a pass over n_pos positions (its largest position + 1) turns
 * by LongRoPE's long table: n_pos above the original context. */
static inline bool cfg_rope_long(const struct model_config *c, int n_pos)
{
	return c->rope_scaling == ROPE_SCALE_LONGROPE && n_pos > c->rope_orig_context;
}

/* What cos and sin are multiplied by: LONGROPE's attention factor, else 1. */
static inline float cfg_rope_mscale(const struct model_config *c)
{
	return c->rope_scaling == ROPE_SCALE_LONGROPE ? c->rope_attn_factor : 1.0f;
}

/* RoPE's inverse frequency of each pair i < R/2 after the config's
 * scaling, in a pass over n_pos positions (its largest position + 1; only
 * LONGROPE reads it): freq[i] = theta^(-2i/R) computed in float (as the
 * engine always has), then scaled in double (enum rope_scaling).  freq
 * holds R/2 floats. */
void config_rope_freqs(const struct model_config *c, int n_pos, float *freq);

/* The scaling alone: the scaled inverse frequency of pair i, whose
 * unscaled one is f, in a pass over n_pos positions (f itself under
 * ROPE_SCALE_NONE). */
double config_rope_scale(const struct model_config *c, int n_pos, int i, double f);

/* Whether layer l is a local-attention layer (struct model_config). */
static inline bool cfg_layer_local(const struct model_config *c, int l)
{
	return c->local_window > 0 && l >= 0 && l < CFG_MAX_LAYERS &&
	       ((c->local[l / 64] >> (l % 64)) & 1u);
}
/* Layers outside 0..CFG_MAX_LAYERS-1 have no bit and are left alone: a
 * loader may mark layers before config_validate refuses their count. */
static inline void cfg_set_local(struct model_config *c, int l, bool on)
{
	if (l < 0 || l >= CFG_MAX_LAYERS)
		return;
	if (on)
		c->local[l / 64] |= (uint64_t)1 << (l % 64);
	else
		c->local[l / 64] &= ~((uint64_t)1 << (l % 64));
}

/* The RoPE of layer l as a config: c itself, or for a local layer of a
 * model whose local layers have a base of their own (rope_local_theta) a
 * copy with that base and no scaling; what config_rope_freqs,
 * config_rope_scale and cfg_rope_mscale read.  out may be c. */
void config_rope_of_layer(const struct model_config *c, int l, struct model_config *out);

/* Whether the model is an encoder (BERT): its loss targets are the input
 * tokens themselves, and it cannot be decoded one token at a time. */
static inline bool cfg_is_encoder(const struct model_config *c)
{
	return c->head == HEAD_MLM || c->head == HEAD_NONE;
}

/* Whether a pass can make logits: false for HEAD_NONE, whose runs keep
 * no logits (run_new drops RUN_LOGITS) and whose loss is NAN. */
static inline bool cfg_has_head(const struct model_config *c)
{
	return c->head != HEAD_NONE;
}

/* Checks every field and their relations (d_model divisible by n_head
 * unless head_dim is given, an even d_head for RoPE, sizes within the limits above, ...).
 * Returns 0, or -1 with a message naming the first bad field. */
int config_validate(const struct model_config *c, struct err *e);


/* The multi-head split: every head takes d_model / n_head features, so
 * n_head must divide d_model.  0, or -1 with the tutorial's one-line
 * message naming both numbers ("d_model 64 is not divisible by num_heads
 * 3: ..."); train and lab refuse such a shape with it. */
int config_check_heads(int d_model, int n_head, struct err *e);

/* A GPT-2-style default: LayerNorm pre-norm, learned positions, GELU, biases,
 * tied embeddings, eps 1e-5, RoPE theta 10000 (used when pos = ROPE),
 * residual connections, scaled scores, causal mask, sequential blocks,
 * RoPE over all of d_head (rotary_dims 0) without scaling (factor 1), no
 * embedding norm, the LM head. */
void config_default(struct model_config *c);

/* Short names used in metadata, flags and docs/ ("layernorm", "pre", ...);
 * the parsers return -1 for an unknown name. */
const char *norm_type_name(enum norm_type t);
const char *norm_place_name(enum norm_place p);
const char *pos_type_name(enum pos_type p);
const char *mlp_type_name(enum mlp_type m);
const char *mask_kind_name(enum mask_kind m);
const char *head_type_name(enum head_type h);
const char *rope_scaling_name(enum rope_scaling r);
int norm_type_parse(const char *s, enum norm_type *out);
int norm_place_parse(const char *s, enum norm_place *out);
int pos_type_parse(const char *s, enum pos_type *out);
int mlp_type_parse(const char *s, enum mlp_type *out);
int mask_kind_parse(const char *s, enum mask_kind *out);
int head_type_parse(const char *s, enum head_type *out);
int rope_scaling_parse(const char *s, enum rope_scaling *out);

#endif
