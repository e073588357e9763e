/*
 * why.h — why a head attends: the pre-softmax score of query position I
 * on key position J in head L.H split into the parts of the residual
 * stream that make it (after Elhage et al. 2021's path expansion of the
 * QK circuit; TransformerLens's frozen-norm convention).
 *
 * The stream at the input of layer L, at a position p, is a sum of
 * components c_a(p) (C each), built in double from one pass:
 *   token       wte[token p]
 *   position    wpe[p] (learned positions only; with RoPE there is no
 *               position component: see below)
 *   head l.h    W_O^{l,h} y^{l,h}(p): the head's output row (after
 *               ablation: an ablated head's part is 0) through its
 *               columns h*D .. h*D+D-1 of layer l's output projection
 *   attn bias l the output projection's bias b_O^l (it belongs to no head)
 *   mlp l       the MLP's whole output, its bias included (the block's
 *               change minus its attention part, read from the pass)
 *   shift ...   the shift b of a LayerNorm the stream went through
 * for every layer l < L.  A norm is not linear; it is made linear by
 * freezing its scale at the position: the per-position 1/std (LayerNorm,
 * after centring) or 1/rms (RMSNorm) of the real stream there is a
 * constant, the centring (c - mean c) is applied to each component, the
 * gain g multiplies each, and the shift b becomes a component of its own.
 * With the scales frozen at their real values the sum of the parts is the
 * real stream, so the split is exact up to float rounding.
 *
 * "Input components" by placement:
 *   pre-norm   block l adds its heads, b_O^l and its MLP to the stream;
 *              layer L's queries and keys read norm1_L of it, frozen at
 *              position I for the query and J for the key.
 *   post-norm  the stream is x_{l+1} = norm2(norm1(x_l + attn) + mlp):
 *              every component already in the stream goes through each
 *              norm frozen at the position's scale, and the norm's shift
 *              joins as a component ("shift 1 l", "shift 2 l"); layer L
 *              reads its input as it is (no norm before attention), so
 *              a part is the component as the later norms left it.
 *   An embedding norm (BERT) is frozen the same way ("shift emb").
 *   sandwich   (Gemma 2/3, OLMo-2) a sub-block's output o is normed
 *              (ATTPOSTW, MLPPOSTW) before it joins the stream, as g o r,
 *              r its 1/rms at the position: the attention's norm reads
 *              the sum of the heads and b_O, so each head's part and the
 *              bias's of one row are frozen at that row's r (the
 *              pass's, run.attpost_rstd; kept in post_rstd) times g, and they still sum to what joined the
 *              stream; the MLP's part is read from the pass, its norm
 *              inside.  OLMo-2 has no norm before the sub-blocks (n_p
 *              below the identity).
 * Then for a part a, with W_Q^h and W_K^g the (D, C) rows of the head h
 * and of its K/V head g = h / (H / G) (G: the pass's K/V heads, GQA's
 * pooled weights included),
 *   q_a = R_I W_Q^h n_I(c_a(I)),   k_b = R_J W_K^g n_J(c_b(J))
 * (n_p the frozen norm1 of layer L, the identity under post-norm; R_p
 * RoPE's rotation at p, the identity with learned positions; a q/k norm
 * frozen between W and R: Qwen3's and Gemma 3's at the head's own 1/rms
 * at the position, OLMo-2's whole-width one at the 1/rms of all H query
 * heads' (all G key heads') rows there, the head's D scales a slice of
 * its H*D (G*D)), and the
 * query and key biases b_Q, b_K and the shift of norm1_L are the parts
 * "qk bias" and "shift 1 L" (their q and k are W_Q b + b_Q etc. as they
 * apply).  The score is
 *   s = scale * sum_a sum_b q_a . k_b,   scale = 1/sqrt(D) or 1 (scale off)
 * one term per (query part, key part) (1/sqrt(attn_scale_dim) for a model
 * that sets it, Gemma's).  A model that soft-caps its scores (Gemma 2's
 * attn_softcap) feeds the softmax cap * tanh(s / cap), which is no sum:
 * the terms split s, the pre-cap score, and the cap's effect, capped - s,
 * is reported beside them (why_result.capped).  With RoPE a position is no
 * component: it enters every term through R_I and R_J (q_a . k_b =
 * (W_Q n(c_a))^T R_{J-I} (W_K n(c_b)) for the rotated dims), so its effect
 * is inside the token and head parts, not beside them.
 * Marginals: the key side of part b is scale * q . k_b (q the whole
 * query), the query side of part a is scale * q_a . k (k the whole key);
 * each side sums to the score as well.  A part's contrast at the key is
 * its key side minus its mean over every key the query sees (the same
 * query, the key's components at each visible position): the contrasts
 * sum to the score minus the mean score, J's lead over the average key,
 * which is what the softmax turns into weight (a shift common to every
 * key of the query changes no weight).
 */
#ifndef ATTNSCOPE_WHY_H
#define ATTNSCOPE_WHY_H

#include "model.h"
#include "util.h"

enum why_kind {
	WHY_TOKEN,     /* the token embedding */
	WHY_POS,       /* the learned position embedding */
	WHY_HEAD,      /* head (layer, head) through its output projection */
	WHY_MLP,       /* layer's MLP, its bias included */
	WHY_ATTN_BIAS, /* layer's output projection bias */
	WHY_SHIFT,     /* a norm's shift: layer -1 the embedding norm, else
			* head = 1 (norm1) or 2 (norm2) of layer */
	WHY_QK_BIAS,   /* b_Q on the query side, b_K on the key side */
};

struct why_part {
	enum why_kind kind;
	int layer, head;  /* as enum why_kind says; -1 where unused */
	double query;     /* query side: scale * q_a . k */
	double key;       /* key side:   scale * q . k_a */
	double key_mean;  /* the key side's mean over the keys query I sees
			   * (k_a at each visible key j, the same q): key -
			   * key_mean is what part a adds to J's lead over
			   * the average key, which is what the softmax reads */
};

struct why_result {
	int layer, head;  /* L.H */
	int kv_head;      /* its K/V head in the pass */
	int qpos, kpos;   /* I, J */
	double score;     /* the pass's score (its q, k rows, scaled), before
			   * any soft-capping: what the terms sum to */
	double softcap;   /* the scores' cap (attn_softcap; Gemma 2's), 0: none */
	double capped;    /* softcap * tanh(score / softcap), the score the
			   * softmax read (score itself without a cap) */
	double sum;       /* sum of every term */
	double left_out;  /* score - sum: float rounding only */
	double scale;     /* 1/sqrt(D) (1/sqrt(attn_scale_dim) where the model
			   * sets one) or 1 */
	double mean_score; /* the mean score over the keys query I sees
			    * (the sum of the parts' key_mean) */
	double rstd_q, rstd_k; /* layer L's frozen norm1 scale at I and J (NAN:
				* post-norm, or no norm before the sub-blocks,
				* OLMo-2's) */
	double qn_rstd_q, qn_rstd_k; /* the q/k norm's frozen scale (1/rms) of the
				      * query head at I and the key head at J, or
				      * under qk_norm_whole of all the query heads
				      * at I and all the key heads at J (NAN: no
				      * q/k norm) */
	double *post_rstd; /* (layer, 2) owned: layer l's attention sandwich
			    * norm frozen at I ([2l]) and J ([2l+1]); NULL
			    * without sandwich norms */
	int n;            /* parts */
	struct why_part *parts; /* (n) owned: token, position, then by layer */
	double *terms;    /* (n, n) owned: terms[a * n + b] = scale * q_a . k_b */
};

/* Runs m under o on tokens[0 .. T) (one pass of its own that keeps every
 * layer) and splits the score of query I on key J in head layer.head.
 * 0, or -1 with e set (one line): the head outside the model, I or J
 * (I = qpos, J = kpos) outside the text, a key the mask hides from the query (J > I under a
 * causal mask, outside the window), a model without residual connections
 * or a pitfall (neither is a sum of parts), a failed pass.  Gemma 2/3's
 * and OLMo-2's sandwich norms, soft-capped scores and q/k norms are split
 * as above.  Free with
 * why_free (a no-op on a zeroed or freed result). */
int why_run(struct model *m, const struct run_options *o, const int *tokens, int T, int layer,
	    int head, int qpos, int kpos, struct why_result *out, struct err *e);
void why_free(struct why_result *r);

/* The frozen norm scale of one position: 1/sqrt(var + eps) of x (C), the
 * variance about the mean for LayerNorm and about 0 for RMSNorm (c->norm),
 * in double.  qkov folds its norms with the same scale. */
double why_rstd(const struct model_config *c, const double *x, double eps);

/* Fills order[0 .. n) with indices 0 .. n-1, the largest |v| first (ties:
 * the lower index first). */
void why_rank(const double *v, int n, int *order);

/* A part's name: "token", "position", "0.2", "mlp 1", "attn bias 0",
 * "shift emb", "shift 1 0", "qk bias".  NUL-terminated. */
void why_part_name(const struct why_part *p, char *buf, size_t size);

/* The part named name (as why_part_name writes it; "L.H" for a head), or
 * -1. */
int why_find_part(const struct why_result *r, const char *name);

#endif
