/*
 * backward.c — gradients of the mean next-token loss for the model as
 * configured (its native K/V heads, placement, mask and scaling, with or
 * without residual connections and MLP, nothing ablated), from the
 * activations a RUN_TRAIN forward saved.
 *
 * Each layer has a kernel X_backward(dinp, dweight, dbias, dout, saved...,
 * dims) after llm.c's train_gpt2.c: outputs first, dimensions last, every
 * gradient ADDED (+=) into its destination.  Matrix products go through
 * cblas_sgemm (threaded by OpenBLAS); the element-wise loops are written
 * to vectorise.
 */
#include "backward.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "ops.h"

struct backward_state {
	int B, T;          /* capacity: up to B x T tokens */
	int C, A, V, QKV, F, FF;
	float *dlogits;    /* (B, T, V) */
	float *dresidual;  /* (B, T, C) gradient of the residual stream */
	float *dbuf1;      /* (B, T, C) gradient of a norm's output or input */
	float *dbuf2;      /* (B, T, C) */
	float *datty;      /* (B, T, A) gradient of the heads' concatenated outputs */
	float *dqkv;       /* (B, T, QKV) native QKV rows */
	float *datt;       /* (T, T) gradient of one head's weights, then scores */
	float *patt;       /* (T, T) one head's unmasked softmax (after-softmax mask) */
	float *dfch;       /* (B, T, FF) */
	float *dfch_act;   /* (B, T, F) */
	float *dsand;      /* (B, T, C) gradient of a sandwich norm's input (sandwich only) */
	float *scores;     /* (T, T) one head's scaled scores before the cap (attn_softcap only) */
	/* BERT's parts, recomputed from the saved activations (forward keeps
	 * neither): */
	float *hpre;       /* (B, T, C) MLM head: HEADW x + HEADB; the embedding sum */
	float *hact;       /* (B, T, C) MLM head: gelu_exact(hpre); a norm's output */
	float *nmean;      /* (B, T) the embedding norm's mean and rstd */
	float *nrstd;      /* (B, T) */
};

struct backward_state *backward_new(const struct model_config *c, int B, int T)
{
	struct backward_state *s = xcalloc(1, sizeof *s);
	size_t bt = (size_t)B * T;
	s->B = B;
	s->T = T;
	s->C = c->d_model;
	s->A = cfg_attn_width(c);
	s->V = c->vocab_size;
	s->QKV = cfg_qkv_rows(c, c->n_kv_head);
	s->F = c->d_ff;
	s->FF = cfg_ff_rows(c);
	s->dlogits = xmalloc_aligned(bt * s->V * sizeof(float));
	s->dresidual = xmalloc_aligned(bt * s->C * sizeof(float));
	s->dbuf1 = xmalloc_aligned(bt * s->C * sizeof(float));
	s->dbuf2 = xmalloc_aligned(bt * s->C * sizeof(float));
	s->datty = xmalloc_aligned(bt * s->A * sizeof(float));
	s->dqkv = xmalloc_aligned(bt * s->QKV * sizeof(float));
	s->datt = xmalloc_aligned((size_t)T * T * sizeof(float));
	s->patt = xmalloc_aligned((size_t)T * T * sizeof(float));
	s->dfch = xmalloc_aligned(bt * s->FF * sizeof(float));
	s->dfch_act = xmalloc_aligned(bt * s->F * sizeof(float));
	if (c->sandwich)
		s->dsand = xmalloc_aligned(bt * s->C * sizeof(float));
	if (c->attn_softcap > 0.0f)
		s->scores = xmalloc_aligned((size_t)T * T * sizeof(float));
	if (c->head == HEAD_MLM || c->emb_norm) {
		s->hpre = xmalloc_aligned(bt * s->C * sizeof(float));
		s->hact = xmalloc_aligned(bt * s->C * sizeof(float));
		s->nmean = xmalloc_aligned(bt * sizeof(float));
		s->nrstd = xmalloc_aligned(bt * sizeof(float));
	}
	return s;
}

void backward_free(struct backward_state *s)
{
	if (!s)
		return;
	free(s->dlogits);
	free(s->dresidual);
	free(s->dbuf1);
	free(s->dbuf2);
	free(s->datty);
	free(s->dqkv);
	free(s->datt);
	free(s->patt);
	free(s->dfch);
	free(s->dfch_act);
	free(s->dsand);
	free(s->scores);
	free(s->hpre);
	free(s->hact);
	free(s->nmean);
	free(s->nrstd);
	free(s);
}

/* ----------------------------------------------------------------- kernels */

/* Column sums of dout (N, OC) added into dbias (OC); one thread per column
 * range, so the sums need no reduction. */
static void colsum_backward(float *dbias, const float *dout, int N, int OC)
{
	/* row by row, so that memory is read in order and the adds vectorise */
	for (int i = 0; i < N; i++) {
		const float *row = dout + (size_t)i * OC;
#pragma omp simd
		for (int j = 0; j < OC; j++)
			dbias[j] += row[j];
	}
}

/* For out (N, OC) = inp (N, IC) w^T + bias, with w (OC, IC):
 *   dinp (N, IC)  += dout w        (skipped when dinp is NULL)
 *   dw   (OC, IC) += dout^T inp
 *   dbias (OC)    += column sums of dout (skipped when dbias is NULL) */
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			    const float *inp, const float *weight, int N, int IC, int OC)
{
	if (dinp)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC,
			    1.0f, dout, OC, weight, IC, 1.0f, dinp, IC);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N,
		    1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
	if (dbias)
		colsum_backward(dbias, dout, N, OC);
}

/* LayerNorm out = (x - mean) * rstd * w + b over rows of C, with the mean
 * and rstd the forward saved.  With n = (x - mean) * rstd and g = dout * w:
 *   dx += rstd * (g - mean(g) - n * mean(g * n)),  dw += dout * n,  db += dout.
 * dbias may be NULL (no shift). */
static void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			       const float *inp, const float *weight, const float *mean,
			       const float *rstd, int N, int C)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
		float *dx = dinp + (size_t)i * C;
		float m = mean[i], s = rstd[i];
		float gmean = 0.0f, gnmean = 0.0f;
		for (int j = 0; j < C; j++) {
			float n = (x[j] - m) * s, g = dy[j] * weight[j];
			gmean += g;
			gnmean += g * n;
		}
		gmean /= (float)C;
		gnmean /= (float)C;
		for (int j = 0; j < C; j++) {
			float n = (x[j] - m) * s, g = dy[j] * weight[j];
			dx[j] += s * (g - gmean - n * gnmean);
		}
	}
	for (int j = 0; j < C; j++) {
		float dw = 0.0f, db = 0.0f;
		for (int i = 0; i < N; i++) {
			float dy = dout[(size_t)i * C + j];
			dw += dy * (inp[(size_t)i * C + j] - mean[i]) * rstd[i];
			db += dy;
		}
		dweight[j] += dw;
		if (dbias)
			dbias[j] += db;
	}
}

/* RMSNorm out = x * rstd * w over rows of C.  With n = x * rstd and
 * g = dout * w:  dx += rstd * (g - n * mean(g * n)),  dw += dout * n. */
static void rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
			     const float *weight, const float *rstd, int N, int C)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
		float *dx = dinp + (size_t)i * C;
		float s = rstd[i], gnmean = 0.0f;
		for (int j = 0; j < C; j++)
			gnmean += dy[j] * weight[j] * x[j] * s;
		gnmean /= (float)C;
		for (int j = 0; j < C; j++)
			dx[j] += s * (dy[j] * weight[j] - x[j] * s * gnmean);
	}
	for (int j = 0; j < C; j++) {
		float dw = 0.0f;
		for (int i = 0; i < N; i++)
			dw += dout[(size_t)i * C + j] * inp[(size_t)i * C + j] * rstd[i];
		dweight[j] += dw;
	}
}

/* Dispatches on the norm type (mean and dbias are unused for RMSNorm).  A
 * NULL weight is no norm (norm_forward's: OLMo-2 has none before its
 * sub-blocks): dinp += dout. */
static void norm_backward(enum norm_type type, float *dinp, float *dweight, float *dbias,
			  const float *dout, const float *inp, const float *weight,
			  const float *mean, const float *rstd, int N, int C)
{
	if (!weight) {
		for (size_t i = 0; i < (size_t)N * C; i++)
			dinp[i] += dout[i];
	} else if (type == NORM_RMS)
		rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
	else
		layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* GELU (tanh approximation): dinp += dout * gelu'(inp). */
static void gelu_backward(float *dinp, const float *dout, const float *inp, long n)
{
#pragma omp simd
	for (long i = 0; i < n; i++) {
		float x = inp[i];
		float u = GELU_K * (x + 0.044715f * x * x * x);
		float th = fast_tanhf(u), sech2 = 1.0f - th * th;
		float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
		dinp[i] += dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
	}
}

/* GELU, exact: d/dx x Phi(x) = Phi(x) + x phi(x); dinp += dout * that. */
static void gelu_exact_backward(float *dinp, const float *dout, const float *inp, long n)
{
	for (long i = 0; i < n; i++) {
		float x = inp[i];
		float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
		float pdf = 0.39894228040143268f * expf(-0.5f * x * x); /* 1/sqrt(2 pi) */
		dinp[i] += dout[i] * (cdf + x * pdf);
	}
}

/* SwiGLU out = silu(g) * u with g = inp[:, :F], u = inp[:, F:]:
 *   dg += dout * u * sigma(g) * (1 + g * (1 - sigma(g))),  du += dout * silu(g). */
static void swiglu_backward(float *dinp, const float *dout, const float *inp, int N, int F)
{
	for (int i = 0; i < N; i++) {
		const float *g = inp + (size_t)i * 2 * F, *u = g + F, *dy = dout + (size_t)i * F;
		float *dg = dinp + (size_t)i * 2 * F, *du = dg + F;
#pragma omp simd
		for (int j = 0; j < F; j++) {
			float sig = 1.0f / (1.0f + fast_expf(-g[j]));
			dg[j] += dy[j] * u[j] * sig * (1.0f + g[j] * (1.0f - sig));
			du[j] += dy[j] * g[j] * sig;
		}
	}
}

/* GeGLU out = gelu(g) * u (tanh GELU) with g = inp[:, :F], u = inp[:, F:]:
 *   dg += dout * u * gelu'(g),  du += dout * gelu(g). */
static void geglu_backward(float *dinp, const float *dout, const float *inp, int N, int F)
{
	for (int i = 0; i < N; i++) {
		const float *g = inp + (size_t)i * 2 * F, *u = g + F, *dy = dout + (size_t)i * F;
		float *dg = dinp + (size_t)i * 2 * F, *du = dg + F;
#pragma omp simd
		for (int j = 0; j < F; j++) {
			float x = g[j];
			float th = fast_tanhf(GELU_K * (x + 0.044715f * x * x * x));
			float dth = (1.0f - th * th) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
			dg[j] += dy[j] * u[j] * (0.5f * (1.0f + th) + 0.5f * x * dth);
			du[j] += dy[j] * 0.5f * x * (1.0f + th);
		}
	}
}

/* Inverse of rope_forward on a gradient, in place: the forward turns each
 * pair by +angle (and scales it by mscale), so the gradient of the
 * pre-rotation pair is the gradient of the rotated pair turned by -angle
 * (times mscale).  Same rows, heads and angles as the forward (n_rot heads
 * of D from the start of each row of stride ld, pairs of their first R
 * dims); the dims after R pass their gradient unchanged. */
static void rope_backward(float *dx, int B, int T, int n_rot, int D, int R, int ld,
			  const float *freq, float mscale)
{
	for (int r = 0; r < B * T; r++) {
		int t = r % T;
		float *row = dx + (size_t)r * ld;
		for (int i = 0; i < R / 2; i++) {
			float c = cosf((float)t * freq[i]) * mscale, s = sinf((float)t * freq[i]) * mscale;
			for (int h = 0; h < n_rot; h++) {
				float *p = row + (size_t)h * D + 2 * i;
				float ga = p[0], gb = p[1];
				p[0] = ga * c + gb * s;
				p[1] = -ga * s + gb * c;
			}
		}
	}
}

/* Soft-capping (softcap_forward), in place on a gradient: for out =
 * cap tanh(x / cap), dx = dout (1 - (out / cap)^2), with out (n) the
 * capped values; nothing when cap <= 0. */
static void softcap_backward(float *d, const float *out, long n, float cap)
{
	if (cap <= 0.0f)
		return;
	float inv = 1.0f / cap;
	for (long i = 0; i < n; i++) {
		float t = out[i] * inv;
		d[i] *= 1.0f - t * t;
	}
}

/* The softmax of query i's scores (capped at cap when > 0) over every key,
 * for the after-softmax mask, recomputed from the saved queries and keys:
 * p (T) for one head. */
static void full_softmax_row(float *p, const float *q, const float *k, int T, int D, int ld,
			     float scale, float cap)
{
	float mx = -INFINITY;
	for (int j = 0; j < T; j++) {
		const float *kj = k + (size_t)j * ld;
		float z = 0.0f;
		for (int d = 0; d < D; d++)
			z += q[d] * kj[d];
		p[j] = z * scale;
		softcap_forward(p + j, 1, cap);
		mx = p[j] > mx ? p[j] : mx;
	}
	float sum = 0.0f;
	for (int j = 0; j < T; j++) {
		p[j] = expf(p[j] - mx);
		sum += p[j];
	}
	for (int j = 0; j < T; j++)
		p[j] /= sum;
}

/*
 * Multi-head attention, the inverse of attention_forward under the mask:
 * dqkv (B, T, ld) += the gradients of the (post-RoPE) query, key and value
 * rows, from dout (B, T, H*D), the saved qkv and the saved weights att
 * (B, H, T, T).  Query heads that share K/V head h / (H / G) add their key
 * and value gradients into it.  datt and patt are (T, T) scratch.  For one
 * head, with A the weights, O = A V, S the scores and P = softmax(S) over
 * the keys in the softmax:
 *   dA = dO V^T,  dV += A^T dO,  dS = P * (dP - rowsum(dP * P)),
 *   dQ += scale dS K,  dK += scale dS^T Q.
 * Usually A = P and dP = dA, and weights outside the mask are exactly 0,
 * so their dS is 0 too.  Under the after-softmax mask A = P * M: then
 * dP = dA * M, while P (recomputed into patt) spans every key.  With a
 * soft-cap (cap > 0, Gemma 2's) S = cap tanh(Z / cap) of the scaled
 * products Z = scale Q K^T, recomputed into sc ((T, T) scratch, unused
 * without a cap): dZ = dS (1 - (S / cap)^2) takes dS's place in dQ, dK.
 */
static void attention_backward(float *dqkv, float *datt, float *patt, float *sc,
			       const float *dout, const float *qkv, const float *att, int B, int T,
			       int H, int G, int D, enum mask_kind mask, int window, float scale,
			       float cap)
{
	int ld = (H + 2 * G) * D, C = H * D, group = H / G;
	for (int b = 0; b < B; b++) {
		const float *base = qkv + (size_t)b * T * ld;
		float *dbase = dqkv + (size_t)b * T * ld;
		for (int h = 0; h < H; h++) {
			int g = h / group;
			const float *q = base + (size_t)h * D;
			const float *k = base + (size_t)(H + g) * D;
			const float *v = base + (size_t)(H + G + g) * D;
			float *dq = dbase + (size_t)h * D;
			float *dk = dbase + (size_t)(H + g) * D;
			float *dv = dbase + (size_t)(H + G + g) * D;
			const float *a = att + ((size_t)b * H + h) * T * T;
			const float *dy = dout + (size_t)b * T * C + (size_t)h * D;
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D,
				    1.0f, dy, C, v, ld, 0.0f, datt, T);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T,
				    1.0f, a, T, dy, C, 1.0f, dv, ld);
			for (int i = 0; i < T; i++) {
				int lo, hi;
				mask_range(mask, window, i, T, &lo, &hi);
				const float *pi = a + (size_t)i * T;
				float *di = datt + (size_t)i * T;
				if (mask == MASK_AFTER_SOFTMAX) {
					float *p = patt + (size_t)i * T;
					full_softmax_row(p, q + (size_t)i * ld, k, T, D, ld, scale, cap);
					for (int j = hi + 1; j < T; j++)
						di[j] = 0.0f;
					pi = p;
					lo = 0;
					hi = T - 1;
				}
				float dot = 0.0f;
				for (int j = lo; j <= hi; j++)
					dot += pi[j] * di[j];
				for (int j = 0; j < lo; j++)
					di[j] = 0.0f;
				for (int j = lo; j <= hi; j++)
					di[j] = pi[j] * (di[j] - dot);
				for (int j = hi + 1; j < T; j++)
					di[j] = 0.0f;
			}
			if (cap > 0.0f) {
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D,
					    scale, q, ld, k, ld, 0.0f, sc, T);
				softcap_forward(sc, (long)T * T, cap);
				softcap_backward(datt, sc, (long)T * T, cap);
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T,
				    scale, datt, T, k, ld, 1.0f, dq, ld);
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T,
				    scale, datt, T, q, ld, 1.0f, dk, ld);
		}
	}
}

/* Mean cross-entropy over the positions with a target: dlogits (N, V) +=
 * (softmax(logits) - onehot(target)) * inv_count where targets[i] >= 0. */
static void crossentropy_backward(float *dlogits, const float *logits, const int *targets,
				  int N, int V, float inv_count)
{
	for (int i = 0; i < N; i++) {
		if (targets[i] < 0)
			continue;
		const float *z = logits + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		float mx = fast_maxf(z, V);
		double sum = 0.0;
#pragma omp simd reduction(+ : sum)
		for (int j = 0; j < V; j++)
			sum += fast_expf(z[j] - mx);
		float inv = (float)(1.0 / sum);
#pragma omp simd
		for (int j = 0; j < V; j++)
			dz[j] += fast_expf(z[j] - mx) * inv * inv_count;
		dz[targets[i]] -= inv_count;
	}
}

/* Token (and learned position) embedding, the token rows times scale
 * (Gemma's emb_scale; 1 for other models): dwte[tokens[i]] += scale *
 * dout[i] and, when dwpe is not NULL, dwpe[i % T] += dout[i].  Serial,
 * since tokens and positions repeat across rows. */
static void embedding_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
			       int N, int T, int C, float scale)
{
	for (int i = 0; i < N; i++) {
		const float *dy = dout + (size_t)i * C;
		float *dt = dwte + (size_t)tokens[i] * C;
		for (int j = 0; j < C; j++)
			dt[j] += scale * dy[j];
		if (dwpe) {
			float *dp = dwpe + (size_t)(i % T) * C;
			for (int j = 0; j < C; j++)
				dp[j] += dy[j];
		}
	}
}

/* ------------------------------------------------------------------ blocks */

/* Pointers to one layer's weights, gradients and saved activations. */
struct layer_ctx {
	int layer;              /* l, for its mask (local or global) */
	const float *ln1w, *ln2w, *qkvw, *qkvb, *projw, *fcw, *fpw;
	const float *qnw, *knw; /* the q/k norm's scales (qk_norm), or NULL */
	float *dqnw, *dknw;
	const float *apw, *mpw; /* the sandwich norms' scales (sandwich), or NULL */
	float *dapw, *dmpw;
	const float *attpost_in, *attpost_rstd, *mlppost_in, *mlppost_rstd;
	float *dln1w, *dln1b, *dln2w, *dln2b, *dqkvw, *dqkvb, *dprojw, *dprojb;
	float *dfcw, *dfcb, *dfpw, *dfpb;
	const float *in, *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att_res;
	const float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_act, *mlp_res, *att;
};

/* Gradient pointer for a parameter slice, NULL when the tensor is absent. */
static float *grad_at(const struct model *m, float *grads, enum param_id id, size_t off)
{
	return m->p[id] ? grads + (m->p[id] - m->params) + off : NULL;
}

/* The same for the weights themselves. */
static const float *param_at(const struct model *m, enum param_id id, size_t off)
{
	return m->p[id] ? m->p[id] + off : NULL;
}

static void layer_setup(struct layer_ctx *x, const struct model *m, const struct run *r,
			float *grads, int l)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, QKV = (size_t)cfg_qkv_rows(c, c->n_kv_head);
	size_t FF = (size_t)cfg_ff_rows(c), F = (size_t)c->d_ff, N = (size_t)r->b * r->t;
	size_t H = (size_t)c->n_head, T = (size_t)r->t, A = (size_t)cfg_attn_width(c);

	x->layer = l;
	x->ln1w = param_at(m, P_LN1W, l * C);
	x->ln2w = param_at(m, P_LN2W, l * C);
	x->qkvw = param_at(m, P_QKVW, l * QKV * C);
	x->qkvb = param_at(m, P_QKVB, l * QKV);
	size_t qn = m->psize[P_QNORMW] / (size_t)c->n_layer; /* D, or H*D when whole */
	size_t kn = m->psize[P_KNORMW] / (size_t)c->n_layer; /* D, or K*D */
	x->qnw = param_at(m, P_QNORMW, l * qn);
	x->knw = param_at(m, P_KNORMW, l * kn);
	x->dqnw = grad_at(m, grads, P_QNORMW, l * qn);
	x->dknw = grad_at(m, grads, P_KNORMW, l * kn);
	x->projw = param_at(m, P_ATTPROJW, l * C * A);
	x->apw = param_at(m, P_ATTPOSTW, l * C);
	x->mpw = param_at(m, P_MLPPOSTW, l * C);
	x->dapw = grad_at(m, grads, P_ATTPOSTW, l * C);
	x->dmpw = grad_at(m, grads, P_MLPPOSTW, l * C);
	x->fcw = param_at(m, P_FCW, l * FF * C);
	x->fpw = param_at(m, P_FCPROJW, l * C * F);
	x->dln1w = grad_at(m, grads, P_LN1W, l * C);
	x->dln1b = grad_at(m, grads, P_LN1B, l * C);
	x->dln2w = grad_at(m, grads, P_LN2W, l * C);
	x->dln2b = grad_at(m, grads, P_LN2B, l * C);
	x->dqkvw = grad_at(m, grads, P_QKVW, l * QKV * C);
	x->dqkvb = grad_at(m, grads, P_QKVB, l * QKV);
	x->dprojw = grad_at(m, grads, P_ATTPROJW, l * C * A);
	x->dprojb = grad_at(m, grads, P_ATTPROJB, l * C);
	x->dfcw = grad_at(m, grads, P_FCW, l * FF * C);
	x->dfcb = grad_at(m, grads, P_FCB, l * FF);
	x->dfpw = grad_at(m, grads, P_FCPROJW, l * C * F);
	x->dfpb = grad_at(m, grads, P_FCPROJB, l * C);

	x->in = r->resid + l * N * C;
	x->ln1 = r->ln1 + l * r->lstride_c;
	x->ln1_mean = r->ln1_mean + l * r->lstride_bt;
	x->ln1_rstd = r->ln1_rstd + l * r->lstride_bt;
	x->qkv = r->qkv + l * r->lstride_qkv;
	x->atty = r->atty + l * r->lstride_a;
	x->att_res = r->att_res + l * r->lstride_c;
	x->ln2 = r->ln2 + l * r->lstride_c;
	x->ln2_mean = r->ln2_mean + l * r->lstride_bt;
	x->ln2_rstd = r->ln2_rstd + l * r->lstride_bt;
	x->fch = r->fch + l * r->lstride_ff;
	x->fch_act = r->fch_act + l * r->lstride_f;
	x->mlp_res = r->mlp_res + l * r->lstride_c;
	x->att = r->att + l * N * H * T;
	x->attpost_in = r->attpost_in ? r->attpost_in + l * r->lstride_c : NULL;
	x->attpost_rstd = r->attpost_rstd ? r->attpost_rstd + l * r->lstride_bt : NULL;
	x->mlppost_in = r->mlppost_in ? r->mlppost_in + l * r->lstride_c : NULL;
	x->mlppost_rstd = r->mlppost_rstd ? r->mlppost_rstd + l * r->lstride_bt : NULL;
}

/* A sandwich norm (scale w; NULL: none) after a sub-block's output
 * projection: the gradient of the projection's output (N, C) from dout,
 * that of the norm's output; dout itself without the norm, else s->dsand,
 * with dw += the scale's gradient. */
static const float *sandwich_backward(float *dw, const float *dout, const float *inp,
				      const float *w, const float *rstd,
				      struct backward_state *s, int N, int C)
{
	if (!w)
		return dout;
	memset(s->dsand, 0, (size_t)N * C * sizeof(float));
	rmsnorm_backward(s->dsand, dw, dout, inp, w, rstd, N, C);
	return s->dsand;
}

/* The q/k norm (config qk_norm) backward, in place on dqkv (N, QKV): the
 * query and key slots hold the gradient of the normed heads on entry and
 * of the projection's output on return; the scales' gradients go to
 * x->dqnw / dknw.  The projection's output, which a pass does not keep,
 * is recomputed from inp, and each norm's rstd from it: one per head, or
 * with qk_norm_whole (OLMo-2's) one over all H query heads and one over
 * the K key heads. */
static void qk_norm_backward(float *dqkv, const float *inp, const struct layer_ctx *x,
			     const struct model_config *c, int N)
{
	int C = c->d_model, H = c->n_head, G = c->n_kv_head, D = cfg_d_head(c);
	int QKV = cfg_qkv_rows(c, G), QK = (H + G) * D;
	bool whole = c->qk_norm_whole;
	int nq = whole ? 1 : H, nk = whole ? 1 : G, wq = whole ? H * D : D, wk = whole ? G * D : D;
	float *pre = xmalloc((size_t)N * QKV * sizeof *pre);
	float *tmp = xmalloc((size_t)QK * sizeof *tmp), *d = xmalloc((size_t)QK * sizeof *d);
	float *rstd = xmalloc((size_t)(H + G) * sizeof *rstd);
	matmul_forward(pre, inp, x->qkvw, x->qkvb, N, C, QKV);
	for (int i = 0; i < N; i++) {
		const float *p = pre + (size_t)i * QKV;
		float *g = dqkv + (size_t)i * QKV;
		rmsnorm_forward(tmp, rstd, p, x->qnw, nq, wq, c->norm_eps);
		rmsnorm_forward(tmp + (size_t)H * D, rstd + nq, p + (size_t)H * D, x->knw, nk, wk,
				c->norm_eps);
		memset(d, 0, (size_t)QK * sizeof *d);
		rmsnorm_backward(d, x->dqnw, g, p, x->qnw, rstd, nq, wq);
		rmsnorm_backward(d + (size_t)H * D, x->dknw, g + (size_t)H * D, p + (size_t)H * D,
				 x->knw, rstd + nq, nk, wk);
		memcpy(g, d, (size_t)QK * sizeof *d);
	}
	free(pre);
	free(tmp);
	free(d);
	free(rstd);
}

/* Attention sub-block: for y = sandwich(proj(attention(rope(qknorm(inp
 * qkvw^T + qkvb))))), dinp += the gradient of inp (N, C) from dout (N, C),
 * and the block's weight gradients (the heads' outputs are (N, A)). */
static void attn_block_backward(float *dinp, const float *dout, const float *inp,
				const struct layer_ctx *x, const struct model_config *c,
				struct backward_state *s, int B, int T)
{
	int C = c->d_model, H = c->n_head, G = c->n_kv_head, D = cfg_d_head(c);
	int QKV = cfg_qkv_rows(c, G), N = B * T, A = H * D;
	float scale = c->scale ? cfg_attn_scale(c) : 1.0f;

	memset(s->datty, 0, (size_t)N * A * sizeof(float));
	dout = sandwich_backward(x->dapw, dout, x->attpost_in, x->apw, x->attpost_rstd, s, N, C);
	matmul_backward(s->datty, x->dprojw, x->dprojb, dout, x->atty, x->projw, N, A, C);
	memset(s->dqkv, 0, (size_t)N * QKV * sizeof(float));
	bool local = cfg_layer_local(c, x->layer);
	attention_backward(s->dqkv, s->datt, s->patt, s->scores, s->datty, x->qkv, x->att, B, T, H,
			   G, D, local ? MASK_WINDOW : c->mask, local ? c->local_window - 1 : 0, scale,
			   c->attn_softcap);
	if (c->pos == POS_ROPE) {
		float *freq = xmalloc((size_t)cfg_rotary_dims(c) / 2 * sizeof *freq);
		struct model_config rc;
		config_rope_of_layer(c, x->layer, &rc);
		config_rope_freqs(&rc, T, freq);
		rope_backward(s->dqkv, B, T, H + G, D, cfg_rotary_dims(c), QKV, freq,
			      cfg_rope_mscale(&rc));
		free(freq);
	}
	if (x->qnw)
		qk_norm_backward(s->dqkv, inp, x, c, N);
	matmul_backward(dinp, x->dqkvw, x->dqkvb, s->dqkv, inp, x->qkvw, N, C, QKV);
}

/* MLP sub-block: for y = sandwich(fcproj(act(inp fcw^T + fcb))), dinp +=
 * the gradient of inp (N, C) from dout (N, C), and the block's weight
 * gradients. */
static void mlp_block_backward(float *dinp, const float *dout, const float *inp,
			       const struct layer_ctx *x, const struct model_config *c,
			       struct backward_state *s, int N)
{
	int C = c->d_model, F = c->d_ff, FF = cfg_ff_rows(c);

	memset(s->dfch_act, 0, (size_t)N * F * sizeof(float));
	dout = sandwich_backward(x->dmpw, dout, x->mlppost_in, x->mpw, x->mlppost_rstd, s, N, C);
	matmul_backward(s->dfch_act, x->dfpw, x->dfpb, dout, x->fch_act, x->fpw, N, F, C);
	memset(s->dfch, 0, (size_t)N * FF * sizeof(float));
	if (c->mlp == MLP_SWIGLU)
		swiglu_backward(s->dfch, s->dfch_act, x->fch, N, F);
	else if (c->mlp == MLP_GEGLU)
		geglu_backward(s->dfch, s->dfch_act, x->fch, N, F);
	else if (c->mlp == MLP_GELU_EXACT)
		gelu_exact_backward(s->dfch, s->dfch_act, x->fch, (long)N * F);
	else
		gelu_backward(s->dfch, s->dfch_act, x->fch, (long)N * F);
	matmul_backward(dinp, x->dfcw, x->dfcb, s->dfch, inp, x->fcw, N, C, FF);
}

/* A parallel block (pre-norm, with an MLP):
 *   att_res = in + attn(norm1(in));  out = att_res + mlp(norm2(in))
 * d(att_res) is d(out) whatever the residual switch (the MLP's output is
 * always added to att_res); d(in) gathers the skip, and both norms'. */
static void parallel_backward(const struct layer_ctx *x, const struct model_config *c,
			      struct backward_state *s, int B, int T)
{
	int C = c->d_model, N = B * T;
	size_t bytes = (size_t)N * C * sizeof(float);
	enum norm_type nt = c->norm;
	/* dbuf2 = d(in) through norm2 */
	memset(s->dbuf1, 0, bytes);
	mlp_block_backward(s->dbuf1, s->dresidual, x->ln2, x, c, s, N);
	memset(s->dbuf2, 0, bytes);
	norm_backward(nt, s->dbuf2, x->dln2w, x->dln2b, s->dbuf1, x->in, x->ln2w, x->ln2_mean,
		      x->ln2_rstd, N, C);
	/* dbuf1 = d(ln1) */
	memset(s->dbuf1, 0, bytes);
	attn_block_backward(s->dbuf1, s->dresidual, x->ln1, x, c, s, B, T);
	/* dresidual = d(in): the skip, norm2's share, then norm1's */
	if (!c->residual)
		memset(s->dresidual, 0, bytes);
	for (size_t i = 0; i < (size_t)N * C; i++)
		s->dresidual[i] += s->dbuf2[i];
	norm_backward(nt, s->dresidual, x->dln1w, x->dln1b, s->dbuf1, x->in, x->ln1w, x->ln1_mean,
		      x->ln1_rstd, N, C);
}

/* One block, mirroring model_forward.  On entry s->dresidual holds the
 * gradient of the block's output; on return, of its input.
 *   pre:  att_res = in + attn(norm1(in));  out = att_res + mlp(norm2(att_res))
 *   post: att_res = in + attn(in);  ln1 = norm1(att_res);
 *         mlp_res = ln1 + mlp(ln1);  out = norm2(mlp_res)
 * Without residual connections the "x +" terms go, and with them the
 * gradient that flows around each sub-block; without an MLP the block ends
 * at att_res (pre) or ln1 (post).  Parallel blocks: parallel_backward. */
static void block_backward(const struct layer_ctx *x, const struct model_config *c,
			   struct backward_state *s, int B, int T)
{
	int C = c->d_model, N = B * T;
	size_t bytes = (size_t)N * C * sizeof(float);
	enum norm_type nt = c->norm;
	bool skip = c->residual, mlp = c->d_ff > 0;

	if (c->parallel && mlp) {
		parallel_backward(x, c, s, B, T);
	} else if (c->placement == PLACE_PRE) {
		/* dresidual is d(out) and, through the skip, part of d(att_res) */
		if (mlp) {
			memset(s->dbuf1, 0, bytes);
			mlp_block_backward(s->dbuf1, s->dresidual, x->ln2, x, c, s, N);
			if (!skip)
				memset(s->dresidual, 0, bytes);
			norm_backward(nt, s->dresidual, x->dln2w, x->dln2b, s->dbuf1, x->att_res,
				      x->ln2w, x->ln2_mean, x->ln2_rstd, N, C);
		}
		/* dresidual is now d(att_res), and through the skip part of d(in) */
		memset(s->dbuf1, 0, bytes);
		attn_block_backward(s->dbuf1, s->dresidual, x->ln1, x, c, s, B, T);
		if (!skip)
			memset(s->dresidual, 0, bytes);
		norm_backward(nt, s->dresidual, x->dln1w, x->dln1b, s->dbuf1, x->in,
			      x->ln1w, x->ln1_mean, x->ln1_rstd, N, C);
	} else {
		/* dbuf2 = d(ln1): without an MLP, d(out) itself */
		if (mlp) {
			/* dbuf1 = d(mlp_res) */
			memset(s->dbuf1, 0, bytes);
			norm_backward(nt, s->dbuf1, x->dln2w, x->dln2b, s->dresidual, x->mlp_res,
				      x->ln2w, x->ln2_mean, x->ln2_rstd, N, C);
			/* the skip plus the MLP's input gradient */
			if (skip)
				memcpy(s->dbuf2, s->dbuf1, bytes);
			else
				memset(s->dbuf2, 0, bytes);
			mlp_block_backward(s->dbuf2, s->dbuf1, x->ln1, x, c, s, N);
		} else {
			memcpy(s->dbuf2, s->dresidual, bytes);
		}
		/* dbuf1 = d(att_res) */
		memset(s->dbuf1, 0, bytes);
		norm_backward(nt, s->dbuf1, x->dln1w, x->dln1b, s->dbuf2, x->att_res,
			      x->ln1w, x->ln1_mean, x->ln1_rstd, N, C);
		/* dresidual = d(in): the skip plus the attention's input gradient */
		if (skip)
			memcpy(s->dresidual, s->dbuf1, bytes);
		else
			memset(s->dresidual, 0, bytes);
		attn_block_backward(s->dresidual, s->dbuf1, x->in, x, c, s, B, T);
	}
}

/* ------------------------------------------------------------------- model */

int backward_supports(const struct model_config *c, struct err *e)
{
	if (c->head == HEAD_NONE)
		return err_set(e, "backward: config head none (a model without an output head) "
			       "has no loss: forward only");
	return 0;
}

/* The output head, loss to the last block's output: on return
 * s->dresidual holds the gradient of resid[L].  dlogits is filled.
 *   LM:  logits = wout lnf,  lnf = norm(x)
 *   MLM: logits = wout h + OUTB,  h = norm(a) (its mean / rstd saved in
 *        lnf_mean / lnf_rstd),  a = gelu_exact(p),  p = HEADW x + HEADB;
 *        p and a are recomputed into hpre and hact. */
static void head_backward(const struct model *m, const struct run *r, float *grads,
			  struct backward_state *s, int N)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, V = c->vocab_size;
	size_t bytes = (size_t)N * C * sizeof(float);
	const float *x = r->resid + (size_t)c->n_layer * N * C;
	const float *wout = c->tied ? m->p[P_WTE] : m->p[P_LMHEAD];
	float *dwout = grad_at(m, grads, c->tied ? P_WTE : P_LMHEAD, 0);
	memset(s->dbuf1, 0, bytes);
	matmul_backward(s->dbuf1, dwout, grad_at(m, grads, P_OUTB, 0), s->dlogits, r->lnf, wout,
			N, C, V);
	memset(s->dresidual, 0, bytes);
	if (c->head == HEAD_LM) {
		norm_backward(c->norm, s->dresidual, grad_at(m, grads, P_LNFW, 0),
			      grad_at(m, grads, P_LNFB, 0), s->dbuf1, x, m->p[P_LNFW], r->lnf_mean,
			      r->lnf_rstd, N, C);
		return;
	}
	matmul_forward(s->hpre, x, m->p[P_HEADW], m->p[P_HEADB], N, C, C);
	gelu_exact_forward(s->hact, s->hpre, (long)N * C);
	memset(s->dbuf2, 0, bytes);
	norm_backward(c->norm, s->dbuf2, grad_at(m, grads, P_HEADLNW, 0),
		      grad_at(m, grads, P_HEADLNB, 0), s->dbuf1, s->hact, m->p[P_HEADLNW],
		      r->lnf_mean, r->lnf_rstd, N, C);
	memset(s->dbuf1, 0, bytes);
	gelu_exact_backward(s->dbuf1, s->dbuf2, s->hpre, (long)N * C);
	matmul_backward(s->dresidual, grad_at(m, grads, P_HEADW, 0), grad_at(m, grads, P_HEADB, 0),
			s->dbuf1, x, m->p[P_HEADW], N, C, C);
}

/* The embedding norm (emb_norm): s->dresidual holds the gradient of its
 * output; on return s->dbuf1 holds that of its input, the (scaled) token +
 * position sum, which is recomputed (hpre) with its mean and rstd. */
static void emb_norm_backward(const struct model *m, const int *tokens, float *grads,
			      struct backward_state *s, int N, int T)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model;
	float scale = c->emb_scale > 0.0f ? c->emb_scale : 1.0f;
	for (int i = 0; i < N; i++) {
		const float *te = m->p[P_WTE] + (size_t)tokens[i] * C;
		const float *pe = c->pos == POS_LEARNED ? m->p[P_WPE] + (size_t)(i % T) * C : NULL;
		float *xi = s->hpre + (size_t)i * C;
		for (int j = 0; j < C; j++)
			xi[j] = te[j] * scale + (pe ? pe[j] : 0.0f);
	}
	norm_forward(c->norm, s->hact, s->nmean, s->nrstd, s->hpre, m->p[P_LNEW], m->p[P_LNEB],
		     N, C, c->norm_eps);
	memset(s->dbuf1, 0, (size_t)N * C * sizeof(float));
	norm_backward(c->norm, s->dbuf1, grad_at(m, grads, P_LNEW, 0), grad_at(m, grads, P_LNEB, 0),
		      s->dresidual, s->hpre, m->p[P_LNEW], s->nmean, s->nrstd, N, C);
}

int model_backward(const struct model *m, const struct run_options *o, const int *tokens,
		   const int *targets, const struct run *r, float *grads,
		   struct backward_state *s, struct err *e)
{
	const struct model_config *c = &m->cfg;
	struct run_options native;
	run_options_native(m, &native);
	if (backward_supports(c, e) != 0)
		return -1;
	if (!(r->flags & RUN_TRAIN))
		return err_set(e, "backward: the run was not made for training (RUN_TRAIN)");
	if (r->key_len)
		return err_set(e, "backward: a padding mask (run.key_len) is not supported");
	if (!run_options_equal(o, &native) || !run_options_equal(&r->opt, &native))
		return err_set(e, "backward: only the model's native options are supported "
			       "(its K/V heads, placement, mask and scaling, no ablation, no pitfall)");
	if (r->C != c->d_model || r->L != c->n_layer || r->V != c->vocab_size ||
	    r->H != c->n_head || r->A != cfg_attn_width(c) || r->F != c->d_ff ||
	    r->FF != cfg_ff_rows(c) || (c->sandwich && !r->attpost_in))
		return err_set(e, "backward: the run was made for another model shape");
	if (s->C != c->d_model || s->V != c->vocab_size || s->F != c->d_ff || s->FF != cfg_ff_rows(c) ||
	    s->QKV != cfg_qkv_rows(c, c->n_kv_head) || s->A != cfg_attn_width(c) ||
	    (c->sandwich && !s->dsand) || (c->attn_softcap > 0.0f && !s->scores))
		return err_set(e, "backward: the state was made for another model shape");
	int B = r->b, T = r->t, N = B * T;
	if (B < 1 || T < 1)
		return err_set(e, "backward: the run holds no forward pass");
	if (B > s->B || T > s->T || (size_t)N > (size_t)s->B * s->T)
		return err_set(e, "backward: state holds %dx%d tokens, the run has %dx%d",
			       s->B, s->T, B, T);

	int C = c->d_model, V = c->vocab_size, L = c->n_layer;
	for (int i = 0; i < N; i++)
		if (tokens[i] < 0 || tokens[i] >= V)
			return err_set(e, "backward: token %d at position %d is outside the vocabulary",
				       tokens[i], i);
	int *tg = targets ? NULL : model_targets(c, tokens, B, T);
	if (tg)
		targets = tg;
	int count = 0;
	for (int i = 0; i < N; i++) {
		if (targets[i] >= V) {
			free(tg);
			return err_set(e, "backward: target %d at position %d is outside the vocabulary",
				       targets[i], i);
		}
		count += targets[i] >= 0;
	}
	if (count != r->n_targets) {
		free(tg);
		return err_set(e, "backward: %d targets, but the forward pass counted %d",
			       count, r->n_targets);
	}
	if (count == 0) { /* no loss: every gradient is zero */
		free(tg);
		return 0;
	}

	/* loss -> logits -> final norm */
	memset(s->dlogits, 0, (size_t)N * V * sizeof(float));
	crossentropy_backward(s->dlogits, r->logits, targets, N, V, 1.0f / (float)count);
	softcap_backward(s->dlogits, r->logits, (long)N * V, c->final_softcap);
	free(tg);
	head_backward(m, r, grads, s, N);

	/* blocks, last to first */
	for (int l = L - 1; l >= 0; l--) {
		struct layer_ctx x;
		layer_setup(&x, m, r, grads, l);
		block_backward(&x, c, s, B, T);
	}

	/* embeddings, through their norm when the model has one */
	const float *demb = s->dresidual;
	if (c->emb_norm) {
		emb_norm_backward(m, tokens, grads, s, N, T);
		demb = s->dbuf1;
	}
	embedding_backward(grad_at(m, grads, P_WTE, 0), grad_at(m, grads, P_WPE, 0),
			   demb, tokens, N, T, C, c->emb_scale > 0.0f ? c->emb_scale : 1.0f);
	return 0;
}
