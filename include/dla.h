/*
 * dla.h — direct logit attribution (Elhage et al. 2021; TransformerLens's
 * decompose_resid): the logit of one token at one position split into
 * what each head, each MLP, the embeddings and the biases write into the
 * residual stream, read straight through the output head.
 *
 * Pre-norm with residual connections, the last block's output at position
 * i is a sum of parts:
 *   x = wte[token i] + wpe[i] (learned positions only)
 *     + sum over layers l, heads h of  W_O^{l,h} a^{l,h}      (a: the head's
 *       output row at i, D floats, after ablation; W_O^{l,h} the columns
 *       h*D .. h*D+D-1 of layer l's output projection (C, C))
 *     + sum over l of b_O^l (the attention projection's bias)
 *     + sum over l of (mlp_l - b_MLP^l), b_MLP^l the MLP output bias,
 *       mlp_l = x_{l+1} - x_l - W_O^l a^l - b_O^l (the MLP's whole output,
 *       read from the run's stream: for a parallel block too)
 *     + sum over l of b_MLP^l.
 * The final norm is treated as linear with its scale frozen at the real
 * one of position i, read from the run: rstd = 1/std (LayerNorm) or 1/rms
 * (RMSNorm) of the real x, so that
 *   logit_v = sum over parts p of  u_v . P p   +   W_U[v] . b_f,
 *   u_v[j] = W_U[v][j] g_f[j] rstd,
 * P the mean subtraction (p - mean(p)) for LayerNorm, the identity for
 * RMSNorm (both linear), g_f / b_f the final norm's gain and shift, W_U the
 * output layer (WTE when tied).  With rstd frozen at its real value this
 * is exact: `left_out` = logit - sum(parts) is float rounding only.
 *
 * Sandwich norms (Gemma 2/3, OLMo-2): the attention's output joins the
 * stream normed, g_a W_O a r_a, r_a the 1/rms at i of the heads' sum plus
 * b_O; frozen at it, each head's part is u_v . P (g_a W_O^{l,h} a^{l,h}
 * r_a) (r_a in post_rstd), and every head's part of the row shares it.
 * The MLP's part is read from the stream, its norm inside, and its output
 * bias stays in it (its norm's scale is not kept by the pass).  Soft-capped
 * logits (Gemma 2's final_softcap): the parts sum to the logit before the
 * cap, and the cap's change, capped - logit, is reported apart: capped is
 * the model's logit (the pass's).
 *
 * Options: the pass is the model's under the caller's run options (a GQA
 * conversion, ablations, mask, scaling), so an ablated head's part is 0.
 * Refused, with one line: post-norm placement (the stream is no sum of
 * parts there), a model without residual connections, an embedding norm,
 * and output heads other than the final norm plus the output layer
 * (BERT's MLM head; no head).
 */
#ifndef ATTNSCOPE_DLA_H
#define ATTNSCOPE_DLA_H

#include "model.h"
#include "util.h"

enum dla_kind {
	DLA_TOKEN,     /* the token embedding wte[token i] */
	DLA_POS,       /* the position embedding wpe[i] (learned positions) */
	DLA_HEAD,      /* head (layer, head) */
	DLA_MLP,       /* layer's MLP, its output bias left out (kept in
			* with sandwich norms) */
	DLA_ATTN_BIAS, /* every layer's attention projection bias */
	DLA_MLP_BIAS,  /* every layer's MLP output bias (none with sandwich
			* norms) */
	DLA_NORM_BIAS, /* the final norm's shift b_f (LayerNorm with bias) */
};

struct dla_part {
	enum dla_kind kind;
	int layer, head; /* DLA_HEAD: both; DLA_MLP: layer; else -1 */
	double logit;    /* its direct contribution to the token's logit */
};

struct dla_result {
	int pos, token;    /* the position and the token whose logit is split */
	bool predicted;    /* token is the run's most likely one at pos */
	double logit;      /* the model's logit of token at pos (the pass's),
			    * before any soft-capping: what the parts sum to */
	double softcap;    /* the logits' cap (final_softcap), 0: none */
	double capped;     /* softcap * tanh(logit / softcap): the model's
			    * logit as it comes out (logit without a cap) */
	double sum;        /* sum of the parts */
	double left_out;   /* logit - sum */
	double rstd;       /* the frozen scale of the final norm at pos */
	int n_layer;       /* L: post_rstd's length */
	double *post_rstd; /* (L) owned: each layer's attention sandwich norm
			    * frozen at pos (1/rms); NULL without sandwich norms */
	int n;             /* parts */
	struct dla_part *parts; /* (n) in the order of enum dla_kind, heads by layer then head; owned */
};

/* Runs model m under options o on tokens[0 .. T) (one pass of its own,
 * with a hook keeping the heads' outputs at pos; the output layer on row
 * pos only, the other rows' logits never made) and splits the logit of
 * token at position pos; token -1: the pass's most likely token there.
 * 0, or -1 with e set: refused options or models (above), pos outside
 * 0 .. T-1, token outside the vocabulary, a failed pass.  Free with
 * dla_free (also after -1: a no-op then). */
int dla_run(struct model *m, const struct run_options *o, const int *tokens, int T, int pos,
	    int token, struct dla_result *out, struct err *e);
void dla_free(struct dla_result *r);

/* Fills order[0 .. n) with part indices, the largest |logit| first (ties:
 * the lower index first): the table `dla` prints. */
void dla_rank(const struct dla_result *r, int *order);

/* The name of a part: "0.2", "mlp 1", "token", "position", "attn biases",
 * "mlp biases", "final norm shift".  NUL-terminated. */
void dla_part_name(const struct dla_part *p, char *buf, size_t size);

#endif
