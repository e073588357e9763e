/*
 * ops.h — the forward kernels of the engine.
 *
 * Each kernel writes its outputs first and takes its dimensions last
 * (llm.c's convention).  Matrices are row-major; a weight w of shape
 * (OC, IC) maps a row x of IC inputs to x w^T.  Matrix products go
 * through cblas_sgemm or, in a pass on the engine's own threads, through
 * gemmw.h and attnmm.h (held weights: held.h's products).  Outputs never
 * alias inputs unless a kernel says so.
 */
#ifndef ATTNSCOPE_OPS_H
#define ATTNSCOPE_OPS_H

#include <stdbool.h>

#include "config.h"
#include "model.h"

/* out (N, OC) = inp (N, IC) w^T + bias; bias (OC) may be NULL. */
void matmul_forward(float *out, const float *inp, const float *w, const float *bias,
		    int N, int IC, int OC);

/* matmul_forward with w in either form.  own (run_own_threads): an F32
 * w of more than one row is multiplied by gemmw.h's kernel on the engine's
 * two threads (gemmw_split), so that a pass gives OpenBLAS's workers no
 * work; else by matmul_forward.  The numbers differ between the two only
 * by the order of the sums.  Held weights: held_matmul either way. */
void matmul_w(float *out, const float *inp, struct wmat w, const float *bias, int N, int IC,
	      int OC, bool own);

/* out (N, M) = a (N, K) b, b being (K, M), or with bt b^T, b being (M, K);
 * in double, through cblas_dgemm (the analyses' weight products). */
void dmatmul(double *out, const double *a, const double *b, int N, int K, int M, bool bt);

/* LayerNorm over rows of C: out = (x - mean) * rstd * w + b (b may be NULL).
 * mean and rstd (N) are saved for the backward pass; either may be NULL. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
		       const float *w, const float *b, int N, int C, float eps);

/* RMSNorm over rows of C: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps). */
void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w,
		     int N, int C, float eps);

/* Dispatches on the norm type (mean is unused for RMSNorm).  A NULL w is
 * no norm at all (OLMo-2 has none before its sub-blocks, most models none
 * after them): out = inp (in place: nothing), mean 0, rstd 1. */
void norm_forward(enum norm_type type, float *out, float *mean, float *rstd,
		  const float *inp, const float *w, const float *b, int N, int C, float eps);

/* The q/k norm (config.h qk_norm), in place on n rows of x (row stride
 * ld): an RMSNorm of each of the H query heads (D wide, from column 0)
 * with the scale wq (D), and of each of the G key heads after them with
 * wk (D); with whole (qk_norm_whole), one RMSNorm of all H query heads
 * together (wq H*D) and one of the G key heads (wk G*D).  In place is
 * safe: rmsnorm_forward reads a row before writing it. */
void qk_norm_rows(float *x, int n, int ld, int H, int G, int D, const float *wq,
		  const float *wk, bool whole, float eps);

/* Soft-capping (Gemma 2), in place: x = cap * tanh(x / cap); nothing when
 * cap <= 0. */
void softcap_forward(float *x, long n, float cap);

/* GeGLU: out (N, F) = gelu_tanh(inp[:, :F]) * inp[:, F:], inp (N, 2F). */
void geglu_forward(float *out, const float *inp, int N, int F);

/* GELU, tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))). */
void gelu_forward(float *out, const float *inp, long n);

/* GELU, exact: 0.5 x (1 + erf(x / sqrt(2))). */
void gelu_exact_forward(float *out, const float *inp, long n);

/* SwiGLU: out (N, F) = silu(inp[:, :F]) * inp[:, F:], inp (N, 2F). */
void swiglu_forward(float *out, const float *inp, int N, int F);

/* Rotates, in place, the first n_rot heads (D wide) of one row by RoPE at
 * position pos over the first R dims of each head (R even, <= D):
 * dimension pairs (2i, 2i+1), i < R/2, turn by pos * freq[i] (freq (R/2),
 * the config's inverse frequencies: config_rope_freqs), with cos and sin
 * times mscale (cfg_rope_mscale: 1 but for LongRoPE); dims R..D-1 are
 * left as they are (partial rotary; R = D turns them all). */
void rope_rotate(float *row, int n_rot, int D, int R, int pos, const float *freq, float mscale);

/* rope_rotate of each row of x (B*T rows, row stride ld) at position
 * t = row % T. */
void rope_forward(float *x, int B, int T, int n_rot, int D, int R, int ld, const float *freq,
		  float mscale);

/* Keys [*lo, *hi] of query i whose weights may be non-zero under a mask
 * (config.h); under AFTER_SOFTMAX the softmax itself runs over all T. */
static inline void mask_range(enum mask_kind mask, int window, int i, int T, int *lo, int *hi)
{
	switch (mask) {
	case MASK_NONE: *lo = 0; *hi = T - 1; break;
	case MASK_WINDOW: *lo = i - window > 0 ? i - window : 0; *hi = i; break;
	default: *lo = 0; *hi = i; break;
	}
}

/*
 * Multi-head attention for B sequences of T tokens.
 *   out (B, T, H*D)   heads' outputs, concatenated
 *   att (B, H, T, T)  post-softmax weights (masked entries exactly 0; rows
 *                     sum to less than 1 under MASK_AFTER_SOFTMAX)
 *   qkv (B, T, ld)    per row: H query heads, then G key heads, then G value heads
 * Query head h reads key/value head h / (H / G).  scale multiplies the scores.
 * key_len (B, or NULL): a padding mask, keys key_len[b] .. T-1 of sequence b
 * are hidden as well (a query with no key left sees the last real one).
 */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int H, int G,
		       int D, enum mask_kind mask, int window, float scale, const int *key_len);

/* One attention call (attention_forward's, in general): B sequences of T
 * tokens, queries q0 .. T-1 (rows q0 .. T-1 of out and of each head's att
 * are written, over all T keys; the rows before q0 are not touched), H
 * query heads and G key/value heads of D.  The mask applies to heads
 * 0 .. n_masked-1; heads n_masked .. H-1 see every key (MASK_NONE;
 * key_len still hides padding): the mask-one-head pitfall with n_masked =
 * 1 (model.h, enum pitfall).  The scores are multiplied by scale, then
 * soft-capped at cap (softcap_forward; 0: none).  key_len (B, or NULL): a
 * padding mask.  own: the heads are split over the engine's two threads
 * (split.h), for a pass whose products run there (matmul_w's own) and
 * should not wake OpenBLAS's: each head's products are attnmm.h's where
 * they are built (a head size up to ATTNMM_MAX_D), else OpenBLAS's on one
 * thread meanwhile; the two sum in different orders, so their numbers
 * agree within float rounding, not bit for bit.  Each head's weights are
 * the same bits whatever the split of heads over threads and, with
 * attnmm.h's products, whatever q0 (one fixed chain per element). */
struct attn_spec {
	int B, T, q0, H, G, D;
	enum mask_kind mask;
	int window;
	float scale, cap;
	const int *key_len;
	int n_masked;
	bool own;
};

/* The attention s describes on qkv (B, T, (H + 2G) * D).  out (B, T, H*D)
 * NULL: the weights only.  att (B, H, T, T) NULL: the weights are not
 * kept; each thread makes one head's at a time in its block of scratch
 * (2 * T * T floats). */
void attention_run(const struct attn_spec *s, float *out, float *att, float *scratch,
		   const float *qkv);

/* The weights of attention_run(s, NULL, NULL, scratch, qkv), each head's
 * given to fn (model.h, attn_head_fn) as it is made and not kept. */
void attention_each(const struct attn_spec *s, float *scratch, const float *qkv,
		    attn_head_fn *fn, void *ctx);

/*
 * Attention of one query over n cached positions (the step decoder's):
 *   out (H*D)     heads' outputs, concatenated
 *   att (H, n)    post-softmax weights, exactly 0 before lo
 *   q (H*D)       the query heads of the new position
 *   k, v (n, ld)  cached key and value rows: G heads of D each, row stride ld
 * Keys lo .. n-1 are visible; query head h reads key/value head h / (H / G).
 */
void attention_step(float *out, float *att, const float *q, const float *k, const float *v,
		    int n, int ld, int H, int G, int D, int lo, float scale, float cap);

/* The MLP of one block on N rows of d_model: out (N, C) = proj(act(fc(inp)))
 * with GELU (tanh or exact), or SwiGLU over the gate | up halves of fc; fch (N, FF) and
 * fch_act (N, F) are kept for the backward pass; own as matmul_w's. */
void mlp_forward(const struct model_config *c, float *fch, float *fch_act, float *out,
		 const float *inp, struct wmat fcw, const float *fcb, struct wmat projw,
		 const float *projb, int N, bool own);

/* out[i] = a[i] + b[i], or b[i] when a is NULL (a block without its
 * residual connection); out may alias a or b. */
void residual_forward(float *out, const float *a, const float *b, long n);

/* nll[i] = logsumexp(logits[i]) - logits[i][targets[i]], NAN where
 * targets[i] < 0.  Returns the sum over positions with a target and stores
 * their count in *count. */
double crossentropy_forward(float *nll, const float *logits, const int *targets,
			    int N, int V, int *count);

/* L2 norm of each of N rows of n values with stride ld. */
void row_norms(float *out, const float *x, int N, int n, int ld);

#endif
