/*
 * ops.c — forward kernels: matrix products through OpenBLAS, gemmw.h or
 * (attention's) attnmm.h, and the element-wise and row-wise kernels around
 * them, written to vectorise.
 */
#include "ops.h"

#include "attnmm.h"
#include "fastmath.h"
#include "gemmw.h"
#include "quant.h"
#include "split.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* bias (OC, or NULL) added to each of the N rows of out (N, OC). */
static void add_bias(float *out, const float *bias, int N, int OC)
{
	if (!bias)
		return;
	for (int i = 0; i < N; i++) {
		float *o = out + (size_t)i * OC;
		for (int j = 0; j < OC; j++)
			o[j] += bias[j];
	}
}

void matmul_forward(float *out, const float *inp, const float *w, const float *bias,
		    int N, int IC, int OC)
{
	if (N == 1) /* one row (a decoder step): OpenBLAS's sgemm does not switch to gemv */
		cblas_sgemv(CblasRowMajor, CblasNoTrans, OC, IC, 1.0f, w, IC, inp, 1, 0.0f, out, 1);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC,
			    1.0f, inp, IC, w, IC, 0.0f, out, OC);
	add_bias(out, bias, N, OC);
}

void matmul_w(float *out, const float *inp, struct wmat w, const float *bias, int N, int IC,
	      int OC, bool own)
{
	if (w.h) {
		held_matmul(out, inp, w.h, bias, N);
	} else if (own && N > 1 && gemmw_available()) {
		gemmw_split(out, OC, inp, N, IC, (const unsigned char *)w.f, (size_t)IC * sizeof(float),
			    GGML_F32, OC);
		add_bias(out, bias, N, OC);
	} else {
		matmul_forward(out, inp, w.f, bias, N, IC, OC);
	}
}

void dmatmul(double *out, const double *a, const double *b, int N, int K, int M, bool bt)
{
	cblas_dgemm(CblasRowMajor, CblasNoTrans, bt ? CblasTrans : CblasNoTrans, N, M, K, 1.0, a, K,
		    b, bt ? K : M, 0.0, out, M);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
		       const float *w, const float *b, int N, int C, float eps)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C;
		float *o = out + (size_t)i * C;
		float m = 0.0f;
		for (int j = 0; j < C; j++)
			m += x[j];
		m /= (float)C;
		float v = 0.0f;
		for (int j = 0; j < C; j++) {
			float d = x[j] - m;
			v += d * d;
		}
		v /= (float)C;
		float s = 1.0f / sqrtf(v + eps);
		for (int j = 0; j < C; j++)
			o[j] = (x[j] - m) * s * w[j] + (b ? b[j] : 0.0f);
		if (mean)
			mean[i] = m;
		if (rstd)
			rstd[i] = s;
	}
}

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w,
		     int N, int C, float eps)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C;
		float *o = out + (size_t)i * C;
		float ss = 0.0f;
		for (int j = 0; j < C; j++)
			ss += x[j] * x[j];
		float s = 1.0f / sqrtf(ss / (float)C + eps);
		for (int j = 0; j < C; j++)
			o[j] = x[j] * s * w[j];
		if (rstd)
			rstd[i] = s;
	}
}

void norm_forward(enum norm_type type, float *out, float *mean, float *rstd,
		  const float *inp, const float *w, const float *b, int N, int C, float eps)
{
	if (!w) { /* no norm here: x as it is, its mean 0 and scale 1 */
		if (out != inp)
			memmove(out, inp, (size_t)N * C * sizeof *out);
		for (int i = 0; i < N; i++) {
			if (mean)
				mean[i] = 0.0f;
			if (rstd)
				rstd[i] = 1.0f;
		}
		return;
	}
	if (type == NORM_RMS)
		rmsnorm_forward(out, rstd, inp, w, N, C, eps);
	else
		layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps);
}

void qk_norm_rows(float *x, int n, int ld, int H, int G, int D, const float *wq,
		  const float *wk, bool whole, float eps)
{
	int nq = whole ? 1 : H, nk = whole ? 1 : G, wq_n = whole ? H * D : D, wk_n = whole ? G * D : D;
	for (int i = 0; i < n; i++) {
		float *row = x + (size_t)i * ld;
		rmsnorm_forward(row, NULL, row, wq, nq, wq_n, eps);
		rmsnorm_forward(row + (size_t)H * D, NULL, row + (size_t)H * D, wk, nk, wk_n, eps);
	}
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void gelu_forward(float *out, const float *inp, long n)
{
#pragma omp simd
	for (long i = 0; i < n; i++) {
		float x = inp[i];
		out[i] = 0.5f * x * (1.0f + fast_tanhf(GELU_K * (x + 0.044715f * x * x * x)));
	}
}

void gelu_exact_forward(float *out, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = 0.5f * inp[i] * (1.0f + erff(inp[i] * 0.70710678118654752f));
}

void swiglu_forward(float *out, const float *inp, int N, int F)
{
	for (int i = 0; i < N; i++) {
		const float *g = inp + (size_t)i * 2 * F, *u = g + F;
		float *o = out + (size_t)i * F;
#pragma omp simd
		for (int j = 0; j < F; j++)
			o[j] = g[j] / (1.0f + fast_expf(-g[j])) * u[j];
	}
}

void geglu_forward(float *out, const float *inp, int N, int F)
{
	for (int i = 0; i < N; i++) {
		const float *g = inp + (size_t)i * 2 * F, *u = g + F;
		float *o = out + (size_t)i * F;
		gelu_forward(o, g, F);
		for (int j = 0; j < F; j++)
			o[j] *= u[j];
	}
}

void rope_rotate(float *row, int n_rot, int D, int R, int pos, const float *freq, float mscale)
{
	for (int i = 0; i < R / 2; i++) {
		float c = cosf((float)pos * freq[i]) * mscale, s = sinf((float)pos * freq[i]) * mscale;
		for (int h = 0; h < n_rot; h++) {
			float *p = row + (size_t)h * D + 2 * i;
			float a = p[0], b = p[1];
			p[0] = a * c - b * s;
			p[1] = a * s + b * c;
		}
	}
}

void rope_forward(float *x, int B, int T, int n_rot, int D, int R, int ld, const float *freq,
		  float mscale)
{
	for (int r = 0; r < B * T; r++)
		rope_rotate(x + (size_t)r * ld, n_rot, D, R, r % T, freq, mscale);
}

void softcap_forward(float *x, long n, float cap)
{
	if (cap <= 0.0f)
		return;
	float inv = 1.0f / cap;
	for (long i = 0; i < n; i++)
		x[i] = cap * tanhf(x[i] * inv);
}

/* Softmax of row[lo..hi] in place; entries outside become exactly 0. */
static void masked_softmax_row(float *row, int T, int lo, int hi)
{
	float mx = fast_maxf(row + lo, hi - lo + 1);
	float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
	for (int j = lo; j <= hi; j++) {
		float e = fast_expf(row[j] - mx);
		row[j] = e;
		sum += e;
	}
	float inv = 1.0f / sum;
	for (int j = 0; j < lo; j++)
		row[j] = 0.0f;
	for (int j = lo; j <= hi; j++)
		row[j] *= inv;
	for (int j = hi + 1; j < T; j++)
		row[j] = 0.0f;
}

/* What one attention job reads: the call's spec, its buffers and mm, the
 * products by attnmm.h (on the engine's threads), else OpenBLAS's. */
struct attend {
	const struct attn_spec *s;
	float *out, *att, *scratch;
	const float *qkv;
	bool mm;
	attn_head_fn *each; /* given each head's weights (attention_each) */
	void *ctx;
};

/* The keys one head's query rows read, as attnmm_span: row i is query
 * q0 + i; last is the last real key.  Under MASK_AFTER_SOFTMAX every real
 * key is normalised over (the mask hides the later ones after). */
struct keys {
	enum mask_kind mask;
	int window, T, q0, last;
};

static void keys_of_row(const void *ctx, int i, int *lo, int *hi)
{
	const struct keys *s = ctx;
	if (s->mask == MASK_AFTER_SOFTMAX) {
		*lo = 0;
		*hi = s->last;
		return;
	}
	mask_range(s->mask, s->window, s->q0 + i, s->T, lo, hi);
	*hi = *hi < s->last ? *hi : s->last;
	*lo = *lo < *hi ? *lo : *hi;
}

/* Head h of sequence b on thread t: its scores, mask and softmax into
 * att (thread t's block of scratch when att is NULL), its output into out
 * (none when out is NULL). */
static void attend_head(const struct attend *x, int b, int h, int t)
{
	const struct attn_spec *s = x->s;
	int T = s->T, H = s->H, G = s->G, D = s->D, q0 = s->q0;
	int ld = (H + 2 * G) * D, C = H * D, M = T - q0, g = h / (H / G);
	const float *base = x->qkv + (size_t)b * T * ld;
	int last = s->key_len && s->key_len[b] < T ? s->key_len[b] - 1 : T - 1; /* last real key */
	enum mask_kind mask = h < s->n_masked ? s->mask : MASK_NONE;
	struct keys keys = { mask, s->window, T, q0, last };
	const float *q = base + (size_t)q0 * ld + (size_t)h * D;
	const float *k = base + (size_t)(H + g) * D;
	const float *v = base + (size_t)(H + G + g) * D;
	float *a = x->att ? x->att + ((size_t)b * H + h) * T * T + (size_t)q0 * T
			  : x->scratch + (size_t)t * T * T;
	if (x->mm)
		attnmm_scores(a, T, q, ld, k, ld, M, T, D, s->scale, keys_of_row, &keys);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, T, D, s->scale, q, ld, k,
			    ld, 0.0f, a, T);
	for (int i = q0; i < T; i++) {
		float *row = a + (size_t)(i - q0) * T;
		int lo, hi;
		keys_of_row(&keys, i - q0, &lo, &hi);
		softcap_forward(row + lo, hi - lo + 1, s->cap);
		if (mask == MASK_AFTER_SOFTMAX) { /* normalise over all, then hide */
			masked_softmax_row(row, T, 0, last);
			hi = i < last ? i : last;
			memset(row + hi + 1, 0, (size_t)(T - 1 - hi) * sizeof(float));
		} else {
			masked_softmax_row(row, T, lo, hi);
		}
	}
	if (x->each)
		x->each(x->ctx, b, h, a);
	if (!x->out)
		return;
	float *o = x->out + ((size_t)b * T + q0) * C + (size_t)h * D;
	if (x->mm)
		attnmm_values(o, C, a, T, v, ld, M, D, keys_of_row, &keys);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, T, 1.0f, a, T, v, ld,
			    0.0f, o, C);
}

/* Jobs lo .. hi - 1 of B * H, job u being sequence u / H's head u % H. */
static void attend_heads(void *ctx, int lo, int hi, int t)
{
	const struct attend *x = ctx;
	for (int u = lo; u < hi; u++)
		attend_head(x, u / x->s->H, u % x->s->H, t);
}

/* attention_run and attention_each: x's heads on the engine's threads
 * or the caller's. */
static void attend_all(struct attend *x)
{
	const struct attn_spec *s = x->s;
	x->mm = s->own && attnmm_available() && s->D <= ATTNMM_MAX_D;
	if (x->mm)
		split_rows(attend_heads, x, s->B * s->H, 2);
	else if (s->own)
		split_rows_blas1(attend_heads, x, s->B * s->H, 2);
	else
		attend_heads(x, 0, s->B * s->H, 0);
}

void attention_run(const struct attn_spec *s, float *out, float *att, float *scratch,
		   const float *qkv)
{
	struct attend x = { s, out, att, scratch, qkv, false, NULL, NULL };
	attend_all(&x);
}

void attention_each(const struct attn_spec *s, float *scratch, const float *qkv,
		    attn_head_fn *fn, void *ctx)
{
	struct attend x = { s, NULL, NULL, scratch, qkv, false, fn, ctx };
	attend_all(&x);
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int H, int G,
		       int D, enum mask_kind mask, int window, float scale, const int *key_len)
{
	struct attn_spec s = { B, T, 0, H, G, D, mask, window, scale, 0.0f, key_len, H, false };
	attention_run(&s, out, att, NULL, qkv);
}

void attention_step(float *out, float *att, const float *q, const float *k, const float *v,
		    int n, int ld, int H, int G, int D, int lo, float scale, float cap)
{
	int group = H / G;
	for (int h = 0; h < H; h++) {
		int g = h / group;
		const float *qh = q + (size_t)h * D;
		float *a = att + (size_t)h * n;
		for (int j = lo; j < n; j++) {
			const float *kj = k + (size_t)j * ld + (size_t)g * D;
			float s = 0.0f;
			for (int d = 0; d < D; d++)
				s += qh[d] * kj[d];
			a[j] = s * scale;
		}
		softcap_forward(a + lo, n - lo, cap);
		masked_softmax_row(a, n, lo, n - 1);
		float *o = out + (size_t)h * D;
		memset(o, 0, (size_t)D * sizeof(float));
		for (int j = lo; j < n; j++) {
			const float *vj = v + (size_t)j * ld + (size_t)g * D;
			for (int d = 0; d < D; d++)
				o[d] += a[j] * vj[d];
		}
	}
}

void mlp_forward(const struct model_config *c, float *fch, float *fch_act, float *out,
		 const float *inp, struct wmat fcw, const float *fcb, struct wmat projw,
		 const float *projb, int N, bool own)
{
	int C = c->d_model, F = c->d_ff, FF = cfg_ff_rows(c);
	matmul_w(fch, inp, fcw, fcb, N, C, FF, own);
	if (c->mlp == MLP_SWIGLU)
		swiglu_forward(fch_act, fch, N, F);
	else if (c->mlp == MLP_GEGLU)
		geglu_forward(fch_act, fch, N, F);
	else if (c->mlp == MLP_GELU_EXACT)
		gelu_exact_forward(fch_act, fch, (long)N * F);
	else
		gelu_forward(fch_act, fch, (long)N * F);
	matmul_w(out, fch_act, projw, projb, N, F, C, own);
}

void residual_forward(float *out, const float *a, const float *b, long n)
{
	if (!a) {
		if (out != b)
			memmove(out, b, (size_t)n * sizeof(float));
		return;
	}
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

double crossentropy_forward(float *nll, const float *logits, const int *targets,
			    int N, int V, int *count)
{
	double total = 0.0;
	int cnt = 0;
	for (int i = 0; i < N; i++) {
		if (targets[i] < 0) {
			nll[i] = NAN;
			continue;
		}
		const float *z = logits + (size_t)i * V;
		float mx = fast_maxf(z, V);
		double sum = 0.0;
#pragma omp simd reduction(+ : sum)
		for (int j = 0; j < V; j++)
			sum += fast_expf(z[j] - mx);
		nll[i] = (float)(log(sum) + mx - z[targets[i]]);
		total += nll[i];
		cnt++;
	}
	*count = cnt;
	return total;
}

void row_norms(float *out, const float *x, int N, int n, int ld)
{
	for (int i = 0; i < N; i++) {
		const float *r = x + (size_t)i * ld;
		double s = 0.0;
		for (int j = 0; j < n; j++)
			s += (double)r[j] * r[j];
		out[i] = (float)sqrt(s);
	}
}
