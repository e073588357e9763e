/*
 * ref_forward.c — naive double-precision reference forward (see ref_forward.h).
 *
 * Written from include/model.h and include/config.h only.  Everything is a
 * plain loop; nothing here is shared with src/ (no BLAS, no ops.h).
 */
#include "ref_forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double *dalloc(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof *p);
	if (!p)
		abort();
	return p;
}

/* Per-layer row of a per-layer tensor, or NULL when the tensor is absent. */
static const float *layer_ptr(const struct model *m, enum param_id id, int l, size_t per_layer)
{
	if (!m->p[id] || m->psize[id] == 0)
		return NULL;
	return m->p[id] + (size_t)l * per_layer;
}

/* Epsilon of every norm: the config's, or 0 under the eps0 pitfall. */
static double g_eps;
/* The padding mask: keys at or after g_key_len are hidden from every query. */
static int g_key_len;

/* The n heads of each position t of v [h][t][d] as one vector of n * D:
 * v <- v / sqrt(mean(v^2) + eps) * w, in place, head h scaled by the
 * weights of head h / rep (rep > 1: heads replicated from n / rep native
 * ones, whose mean square is the natives'). */
static void ref_rms_whole(double *v, int n, int rep, int T, int D, const float *w)
{
	for (int t = 0; t < T; t++) {
		double ms = 0.0;
		for (int h = 0; h < n; h++)
			for (int d = 0; d < D; d++)
				ms += v[((size_t)h * T + t) * D + d] * v[((size_t)h * T + t) * D + d];
		double inv = 1.0 / sqrt(ms / (n * D) + g_eps);
		for (int h = 0; h < n; h++)
			for (int d = 0; d < D; d++)
				v[((size_t)h * T + t) * D + d] *= inv * (double)w[(h / rep) * D + d];
	}
}

/* v (D) <- v / sqrt(mean(v^2) + eps) * w, in place. */
static void ref_rms_head(double *v, int D, const float *w)
{
	double ms = 0.0;
	for (int d = 0; d < D; d++)
		ms += v[d] * v[d];
	double inv = 1.0 / sqrt(ms / D + g_eps);
	for (int d = 0; d < D; d++)
		v[d] *= inv * (double)w[d];
}

/* out[c] = norm(in)[c] for one row of C values.
 * LayerNorm: (x - mean) / sqrt(var + eps) * w + b, var biased (divide by C).
 * RMSNorm:   x / sqrt(mean(x^2) + eps) * w  (+ b if a bias tensor exists).
 * eps is g_eps: with eps 0 a row of variance 0 gives 0/0 = NaN. */
static void ref_norm(const struct model_config *cfg, const double *in, double *out,
		     const float *w, const float *b)
{
	int C = cfg->d_model;
	double eps = g_eps;
	if (cfg->norm == NORM_LAYER) {
		double mean = 0.0;
		for (int c = 0; c < C; c++)
			mean += in[c];
		mean /= C;
		double var = 0.0;
		for (int c = 0; c < C; c++)
			var += (in[c] - mean) * (in[c] - mean);
		var /= C;
		double denom = sqrt(var + eps);
		for (int c = 0; c < C; c++) {
			double v = (in[c] - mean) / denom * (double)w[c];
			if (b)
				v += (double)b[c];
			out[c] = v;
		}
	} else {
		double ms = 0.0;
		for (int c = 0; c < C; c++)
			ms += in[c] * in[c];
		ms /= C;
		double denom = sqrt(ms + eps);
		for (int c = 0; c < C; c++) {
			double v = in[c] / denom * (double)w[c];
			if (b)
				v += (double)b[c];
			out[c] = v;
		}
	}
}

static double gelu_tanh(double x)
{
	const double k = sqrt(2.0 / 3.14159265358979323846);
	return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* HF "gelu": the exact one, x Phi(x). */
static double gelu_erf(double x)
{
	return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double silu(double x)
{
	return x / (1.0 + exp(-x));
}

/* The angle per position of pair i, in double from the published rules:
 * theta^(-2i/R); linear scaling divides it by the factor; Llama 3.1's
 * counts the turns r = N * freq / (2 pi) the pair makes over the original
 * context N: r < low_freq_factor takes freq / factor, r > high_freq_factor
 * keeps freq, and in between the weight w = (r - low) / (high - low) of
 * freq against freq / factor grows linearly.  LongRoPE divides theta^(2i/R)
 * times the pair's factor into 1: the short table's factor when the call
 * spans at most N positions, the long table's past that. */
double ref_rope_freq_in(const struct model_config *c, int i, int R, int n_pos)
{
	double f = pow((double)c->rope_theta, -2.0 * i / (double)R), k = (double)c->rope_factor;
	if (c->rope_scaling == ROPE_SCALE_LINEAR)
		return f / k;
	if (c->rope_scaling == ROPE_SCALE_FACTORS) /* llama.cpp's rope_freqs: one table */
		return 1.0 / ((double)c->rope_long[i] * pow((double)c->rope_theta, 2.0 * i / (double)R));
	if (c->rope_scaling == ROPE_SCALE_LONGROPE) {
		const float *table = n_pos > c->rope_orig_context ? c->rope_long : c->rope_short;
		return 1.0 / ((double)table[i] * pow((double)c->rope_theta, 2.0 * i / (double)R));
	}
	if (c->rope_scaling != ROPE_SCALE_LLAMA3)
		return f;
	double turns = (double)c->rope_orig_context * f / (2.0 * 3.14159265358979323846);
	double lo = (double)c->rope_low_freq, hi = (double)c->rope_high_freq;
	if (turns < lo)
		return f / k;
	if (turns > hi)
		return f;
	double w = (turns - lo) / (hi - lo);
	return w * f + (1.0 - w) * (f / k);
}

double ref_rope_freq(const struct model_config *c, int i, int R)
{
	return ref_rope_freq_in(c, i, R, 1);
}

/* Positions before g_span0 were computed in one call over g_span0
 * positions, each later position t in a call of its own over t + 1
 * (ref_forward_stepped); 0: the whole pass in one call. */
static int g_span0;

/* Rotates pairs (2i, 2i+1) of the first R dims of one head vector at
 * position t of layer l, in a call over n_pos positions, by
 * t * ref_rope_freq_in(i); dims R and on are not touched.  LongRoPE
 * multiplies the cosine and the sine by its attention factor.  Gemma 3:
 * a local layer turns by its own base, unscaled. */
static void rope(double *v, int R, int t, int l, const struct model_config *c, int n_pos)
{
	struct model_config lc = *c;
	bool local = c->local_window > 0 && ((c->local[l / 64] >> (l % 64)) & 1u);
	if (c->rope_local_theta > 0 && local) {
		lc.rope_theta = c->rope_local_theta;
		lc.rope_scaling = ROPE_SCALE_NONE;
	}
	double ms = lc.rope_scaling == ROPE_SCALE_LONGROPE ? (double)lc.rope_attn_factor : 1.0;
	for (int i = 0; i < R / 2; i++) {
		double ang = (double)t * ref_rope_freq_in(&lc, i, R, n_pos);
		double cs = ms * cos(ang), sn = ms * sin(ang);
		double a = v[2 * i], b = v[2 * i + 1];
		v[2 * i] = a * cs - b * sn;
		v[2 * i + 1] = a * sn + b * cs;
	}
}

/* Whether layer l of cfg is a GPT-Neo "local" layer: its query i sees key j
 * only when 0 <= i - j < window_size (local_window), whatever the run's
 * mask; a run window narrower than that narrows it (model.h). */
static bool is_local(const struct model_config *cfg, int l)
{
	return cfg->local_window > 0 && ((cfg->local[l / 64] >> (l % 64)) & 1u);
}

/* Whether key j takes part in query i's softmax for head h of layer l ...
 * (the mask-one-head pitfall: a mask of shape (T, T) added to head 0's
 * scores only, the other heads unmasked) */
static bool key_in_softmax(const struct model_config *cfg, int l, const struct run_options *o,
			   int h, int i, int j)
{
	if (j >= g_key_len) /* the padding mask, on every head */
		return false;
	if (o->pitfall == PITFALL_MASK_ONE_HEAD && h > 0)
		return true;
	if (is_local(cfg, l)) {
		bool in = i - j >= 0 && i - j < cfg->local_window;
		return o->mask == MASK_WINDOW ? in && i - j <= o->window : in;
	}
	switch (o->mask) {
	case MASK_CAUSAL: return j <= i;
	case MASK_NONE:   return true;
	case MASK_WINDOW: return j <= i && j >= i - o->window;
	case MASK_AFTER_SOFTMAX: return true;
	}
	return false;
}

/* ... and whether its weight is kept afterwards. */
static bool key_kept(const struct model_config *cfg, int l, const struct run_options *o, int h,
		     int i, int j)
{
	if (j >= g_key_len)
		return false;
	if (o->pitfall == PITFALL_MASK_ONE_HEAD && h > 0)
		return true;
	if (o->mask == MASK_AFTER_SOFTMAX && !is_local(cfg, l))
		return j <= i;
	return key_in_softmax(cfg, l, o, h, i, j);
}

static int ref_forward_all(const struct model *m, const struct run_options *o, const int *tokens,
			   int T, int key_len, double *logits, double *att, struct ref_trace *trace,
			   struct ref_trace_qk *qk);

int ref_forward(const struct model *m, const struct run_options *o, const int *tokens, int T,
		double *logits, double *att, struct ref_trace *trace)
{
	return ref_forward_all(m, o, tokens, T, T, logits, att, trace, NULL);
}

int ref_forward_qk(const struct model *m, const struct run_options *o, const int *tokens, int T,
		   double *logits, double *att, struct ref_trace *trace, struct ref_trace_qk *qk)
{
	return ref_forward_all(m, o, tokens, T, T, logits, att, trace, qk);
}

int ref_forward_padded(const struct model *m, const struct run_options *o, const int *tokens,
		       int T, int key_len, double *logits, double *att, struct ref_trace *trace)
{
	return ref_forward_all(m, o, tokens, T, key_len, logits, att, trace, NULL);
}

int ref_forward_stepped(const struct model *m, const struct run_options *o, const int *tokens,
			int T, int prefill, double *logits, double *att)
{
	if (prefill < 1 || prefill > T)
		return -1;
	g_span0 = prefill;
	int rc = ref_forward_all(m, o, tokens, T, T, logits, att, NULL, NULL);
	g_span0 = 0;
	return rc;
}

/* ref_forward_padded, also filling qk (may be NULL). */
static int ref_forward_all(const struct model *m, const struct run_options *o, const int *tokens,
			   int T, int key_len, double *logits, double *att, struct ref_trace *trace,
			   struct ref_trace_qk *qk)
{
	const struct model_config *cfg = &m->cfg;
	const int V = cfg->vocab_size, C = cfg->d_model, L = cfg->n_layer;
	const int H = cfg->n_head, K = cfg->n_kv_head, F = cfg->d_ff;
	const int D = cfg->head_dim ? cfg->head_dim : C / H; /* the config's head_dim, else C / H */
	const int A = H * D; /* the heads' concatenated width */
	const int G = o->kv_heads;
	const int FF = cfg->mlp == MLP_SWIGLU || cfg->mlp == MLP_GEGLU ? 2 * F : F;
	const int QKVN = (H + 2 * K) * D; /* native fused rows */
	const int R = cfg->rotary_dims ? cfg->rotary_dims : D; /* RoPE dims per head */
	/* parallel blocks (pre-norm only): x + attn(norm1(x)) + mlp(norm2(x)) */
	const bool parallel = cfg->parallel && o->placement == PLACE_PRE;

	if (G <= 0 || H % G != 0 || T <= 0 || key_len < 1 || key_len > T)
		return -1;
	g_key_len = key_len;
	g_eps = o->pitfall == PITFALL_EPS0 ? 0.0 : (double)cfg->norm_eps;
	/* No transpose: the (T, n*D) rows of q, k, v and of the output are
	 * one flat buffer read as (n, T, D) in place, i.e. element
	 * [h][t][d] of the view is flat element (h*T + t)*D + d. */
	const bool flat = o->pitfall == PITFALL_NO_TRANSPOSE;
	if (cfg->pos == POS_LEARNED && T > cfg->context)
		return -1;
	for (int t = 0; t < T; t++)
		if (tokens[t] < 0 || tokens[t] >= V)
			return -1;

	double *x = dalloc((size_t)T * C);     /* residual stream */
	double *ain = dalloc((size_t)T * C);   /* attention input */
	double *q = dalloc((size_t)T * H * D); /* q[t][h][d] */
	double *k = dalloc((size_t)T * G * D); /* k[t][g][d] */
	double *v = dalloc((size_t)T * G * D);
	double *wk = dalloc((size_t)G * D * C); /* converted K weights [g*D+d][c] */
	double *wv = dalloc((size_t)G * D * C);
	double *bk = dalloc((size_t)G * D);
	double *bv = dalloc((size_t)G * D);
	double *y = dalloc((size_t)T * A);     /* heads' outputs, [t][h*D+d] */
	double *qa = dalloc((size_t)H * T * D); /* the heads as attention reads them, [h][t][d] */
	double *ka = dalloc((size_t)G * T * D);
	double *va = dalloc((size_t)G * T * D);
	double *oa = dalloc((size_t)H * T * D); /* attention's output, [h][t][d] */
	double *ares = dalloc((size_t)T * C);
	double *h1 = dalloc((size_t)T * C);
	double *hid = dalloc((size_t)FF);
	double *act = dalloc((size_t)F);
	double *mo = dalloc((size_t)C);
	double *tmp = dalloc((size_t)C);
	double *p = dalloc((size_t)T);

	/* embeddings */
	for (int t = 0; t < T; t++)
		for (int c = 0; c < C; c++) {
			double e = (double)m->p[P_WTE][(size_t)tokens[t] * C + c];
			if (cfg->emb_scale > 0.0f) /* Gemma: the token embedding times sqrt(C) */
				e *= (double)cfg->emb_scale;
			if (cfg->pos == POS_LEARNED)
				e += (double)m->p[P_WPE][(size_t)t * C + c];
			x[(size_t)t * C + c] = e;
		}
	if (cfg->emb_norm) /* BERT: a norm of the summed embeddings before block 0 */
		for (int t = 0; t < T; t++) {
			memcpy(tmp, x + (size_t)t * C, sizeof(double) * C);
			ref_norm(cfg, tmp, x + (size_t)t * C, m->p[P_LNEW],
				 m->psize[P_LNEB] ? m->p[P_LNEB] : NULL);
		}

	for (int l = 0; l < L; l++) {
		const float *ln1w = layer_ptr(m, P_LN1W, l, C);
		const float *ln1b = layer_ptr(m, P_LN1B, l, C);
		const float *ln2w = layer_ptr(m, P_LN2W, l, C);
		const float *ln2b = layer_ptr(m, P_LN2B, l, C);
		const float *qkvw = layer_ptr(m, P_QKVW, l, (size_t)QKVN * C);
		const float *qkvb = layer_ptr(m, P_QKVB, l, QKVN);
		const float *pw = layer_ptr(m, P_ATTPROJW, l, (size_t)C * A); /* (C, A) */
		const float *pb = layer_ptr(m, P_ATTPROJB, l, C);
		const float *fcw = layer_ptr(m, P_FCW, l, (size_t)FF * C);
		const float *fcb = layer_ptr(m, P_FCB, l, FF);
		const float *fpw = layer_ptr(m, P_FCPROJW, l, (size_t)C * F);
		const float *fpb = layer_ptr(m, P_FCPROJB, l, C);

		if (trace && trace->resid)
			memcpy(trace->resid + (size_t)l * T * C, x, sizeof(double) * T * C);

		/* attention input */
		for (int t = 0; t < T; t++) {
			if (o->placement == PLACE_PRE && ln1w)
				ref_norm(cfg, x + (size_t)t * C, ain + (size_t)t * C, ln1w, ln1b);
			else
				memcpy(ain + (size_t)t * C, x + (size_t)t * C, sizeof(double) * C);
		}

		/* K/V weights for G heads: new head g is the mean, over the query
		 * heads h of group g = [g*H/G, (g+1)*H/G), of native head h/(H/K). */
		for (int g = 0; g < G; g++) {
			int h0 = g * (H / G), h1e = (g + 1) * (H / G);
			int n = h1e - h0;
			for (int d = 0; d < D; d++) {
				for (int c = 0; c < C; c++) {
					double sk = 0.0, sv = 0.0;
					for (int h = h0; h < h1e; h++) {
						int nk = h / (H / K);
						size_t rk = (size_t)(H * D + nk * D + d);
						size_t rv = (size_t)((H + K) * D + nk * D + d);
						sk += (double)qkvw[rk * C + c];
						sv += (double)qkvw[rv * C + c];
					}
					wk[((size_t)g * D + d) * C + c] = sk / n;
					wv[((size_t)g * D + d) * C + c] = sv / n;
				}
				double sbk = 0.0, sbv = 0.0;
				if (qkvb) {
					for (int h = h0; h < h1e; h++) {
						int nk = h / (H / K);
						sbk += (double)qkvb[H * D + nk * D + d];
						sbv += (double)qkvb[(H + K) * D + nk * D + d];
					}
				}
				bk[g * D + d] = sbk / n;
				bv[g * D + d] = sbv / n;
			}
		}

		/* projections, one head at a time */
		for (int t = 0; t < T; t++) {
			const double *a = ain + (size_t)t * C;
			for (int h = 0; h < H; h++) {
				double *qh = q + ((size_t)t * H + h) * D;
				for (int d = 0; d < D; d++) {
					size_t row = (size_t)(h * D + d);
					double s = qkvb ? (double)qkvb[row] : 0.0;
					for (int c = 0; c < C; c++)
						s += (double)qkvw[row * C + c] * a[c];
					qh[d] = s;
				}
			}
			for (int g = 0; g < G; g++) {
				double *kg = k + ((size_t)t * G + g) * D;
				double *vg = v + ((size_t)t * G + g) * D;
				for (int d = 0; d < D; d++) {
					double sk = bk[g * D + d], sv = bv[g * D + d];
					for (int c = 0; c < C; c++) {
						sk += wk[((size_t)g * D + d) * C + c] * a[c];
						sv += wv[((size_t)g * D + d) * C + c] * a[c];
					}
					kg[d] = sk;
					vg[d] = sv;
				}
			}
		}

		/* (T, n, D) -> (n, T, D): a transpose, or under no-transpose the
		 * same flat buffer; then RoPE on q and k at position t of the view */
		for (int h = 0; h < H; h++)
			for (int t = 0; t < T; t++)
				for (int d = 0; d < D; d++) {
					size_t at = ((size_t)h * T + t) * D + d;
					qa[at] = flat ? q[at] : q[((size_t)t * H + h) * D + d];
				}
		for (int g = 0; g < G; g++)
			for (int t = 0; t < T; t++)
				for (int d = 0; d < D; d++) {
					size_t at = ((size_t)g * T + t) * D + d;
					ka[at] = flat ? k[at] : k[((size_t)t * G + g) * D + d];
					va[at] = flat ? v[at] : v[((size_t)t * G + g) * D + d];
				}
		/* Qwen3's q/k norm: each query and key head (D values at one
		 * position) scaled to unit root mean square, then by the layer's
		 * query or key scale, before RoPE */
		if (cfg->qk_norm && !cfg->qk_norm_whole) {
			for (int r = 0; r < H * T; r++)
				ref_rms_head(qa + (size_t)r * D, D, layer_ptr(m, P_QNORMW, l, D));
			for (int r = 0; r < G * T; r++)
				ref_rms_head(ka + (size_t)r * D, D, layer_ptr(m, P_KNORMW, l, D));
		}
		/* OLMo-2's: one norm over all query heads of a position, one over
		 * all its key heads */
		if (cfg->qk_norm_whole) {
			ref_rms_whole(qa, H, 1, T, D, layer_ptr(m, P_QNORMW, l, (size_t)H * D));
			ref_rms_whole(ka, G, G / K, T, D, layer_ptr(m, P_KNORMW, l, (size_t)K * D));
		}
		if (cfg->pos == POS_ROPE) { /* position t in a call over span(t) positions */
			int span0 = g_span0 > 0 ? g_span0 : T;
			for (int h = 0; h < H; h++)
				for (int t = 0; t < T; t++)
					rope(qa + ((size_t)h * T + t) * D, R, t, l, cfg,
					     t + 1 > span0 ? t + 1 : span0);
			for (int g = 0; g < G; g++)
				for (int t = 0; t < T; t++)
					rope(ka + ((size_t)g * T + t) * D, R, t, l, cfg,
					     t + 1 > span0 ? t + 1 : span0);
		}

		if (qk && qk->q)
			memcpy(qk->q + (size_t)l * H * T * D, qa, sizeof(double) * H * T * D);
		if (qk && qk->k)
			memcpy(qk->k + (size_t)l * G * T * D, ka, sizeof(double) * G * T * D);

		/* attention, one head at a time */
		/* Gemma 2: query_pre_attn_scalar in place of D, then the scores
		 * soft-capped, cap * tanh(s / cap), before the mask */
		double sc = o->scale ? 1.0 / sqrt((double)(cfg->attn_scale_dim ? cfg->attn_scale_dim : D))
				     : 1.0;
		double cap = cfg->attn_softcap;
		for (int h = 0; h < H; h++) {
			int g = h / (H / G);
			for (int i = 0; i < T; i++) {
				const double *qi = qa + ((size_t)h * T + i) * D;
				double mx = -INFINITY;
				for (int j = 0; j < T; j++) {
					if (!key_in_softmax(cfg, l, o, h, i, j))
						continue;
					const double *kj = ka + ((size_t)g * T + j) * D;
					double s = 0.0;
					for (int d = 0; d < D; d++)
						s += qi[d] * kj[d];
					s *= sc;
					if (cap > 0)
						s = cap * tanh(s / cap);
					p[j] = s;
					if (s > mx)
						mx = s;
				}
				double sum = 0.0;
				for (int j = 0; j < T; j++) {
					if (!key_in_softmax(cfg, l, o, h, i, j)) {
						p[j] = 0.0;
						continue;
					}
					p[j] = exp(p[j] - mx);
					sum += p[j];
				}
				for (int j = 0; j < T; j++)
					p[j] = key_kept(cfg, l, o, h, i, j) ? p[j] / sum : 0.0;
				if (att)
					for (int j = 0; j < T; j++)
						att[(((size_t)l * H + h) * T + i) * T + j] = p[j];
				for (int d = 0; d < D; d++) {
					double s = 0.0;
					for (int j = 0; j < T; j++)
						s += p[j] * va[((size_t)g * T + j) * D + d];
					oa[((size_t)h * T + i) * D + d] = s;
				}
			}
		}
		/* (H, T, D) -> (T, H*D), the same way as above; then ablation */
		for (int h = 0; h < H; h++)
			for (int t = 0; t < T; t++)
				for (int d = 0; d < D; d++) {
					size_t at = ((size_t)h * T + t) * D + d;
					y[flat ? at : (size_t)t * A + h * D + d] = oa[at];
				}
		for (int h = 0; h < H; h++)
			if (opt_is_ablated(o, l * H + h))
				for (int t = 0; t < T; t++)
					for (int d = 0; d < D; d++)
						y[(size_t)t * A + h * D + d] = 0.0;
		if (trace && trace->atty)
			memcpy(trace->atty + (size_t)l * T * A, y, sizeof(double) * T * A);

		/* output projection (Gemma: normed, the sandwich norm) + residual */
		const float *apw = layer_ptr(m, P_ATTPOSTW, l, C), *mpw = layer_ptr(m, P_MLPPOSTW, l, C);
		for (int t = 0; t < T; t++) {
			for (int c = 0; c < C; c++) {
				double s = pb ? (double)pb[c] : 0.0;
				for (int kk = 0; kk < A; kk++)
					s += (double)pw[(size_t)c * A + kk] * y[(size_t)t * A + kk];
				tmp[c] = s;
			}
			if (apw) {
				memcpy(mo, tmp, sizeof(double) * C);
				ref_norm(cfg, mo, tmp, apw, NULL);
			}
			for (int c = 0; c < C; c++)
				ares[(size_t)t * C + c] = (cfg->residual ? x[(size_t)t * C + c] : 0.0) + tmp[c];
		}
		if (trace && trace->att_res)
			memcpy(trace->att_res + (size_t)l * T * C, ares, sizeof(double) * T * C);

		/* MLP */
		for (int t = 0; t < T; t++) {
			double *ar = ares + (size_t)t * C;
			double *in = h1 + (size_t)t * C; /* MLP input */
			double *xo = x + (size_t)t * C;
			if (o->placement == PLACE_PRE && F == 0) { /* attention-only block */
				memcpy(xo, ar, sizeof(double) * C);
				continue;
			}
			if (parallel) /* the MLP reads the block's input too */
				ref_norm(cfg, xo, in, ln2w, ln2b);
			else if (o->placement == PLACE_PRE && !ln2w) /* OLMo-2: no norm before the MLP */
				memcpy(in, ar, sizeof(double) * C);
			else if (o->placement == PLACE_PRE)
				ref_norm(cfg, ar, in, ln2w, ln2b);
			else
				ref_norm(cfg, ar, in, ln1w, ln1b); /* h1 = norm1(x + attn(x)) */
			if (F == 0) {
				memcpy(xo, in, sizeof(double) * C);
				continue;
			}
			for (int f = 0; f < FF; f++) {
				double s = fcb ? (double)fcb[f] : 0.0;
				for (int c = 0; c < C; c++)
					s += (double)fcw[(size_t)f * C + c] * in[c];
				hid[f] = s;
			}
			for (int f = 0; f < F; f++)
				act[f] = cfg->mlp == MLP_SWIGLU ? silu(hid[f]) * hid[F + f]
					 : cfg->mlp == MLP_GEGLU ? gelu_tanh(hid[f]) * hid[F + f]
					 : cfg->mlp == MLP_GELU_EXACT ? gelu_erf(hid[f]) : gelu_tanh(hid[f]);
			for (int c = 0; c < C; c++) {
				double s = fpb ? (double)fpb[c] : 0.0;
				for (int f = 0; f < F; f++)
					s += (double)fpw[(size_t)c * F + f] * act[f];
				mo[c] = s;
			}
			if (mpw) { /* Gemma's sandwich norm of the MLP's output */
				memcpy(tmp, mo, sizeof(double) * C);
				ref_norm(cfg, tmp, mo, mpw, NULL);
			}
			if (qk && qk->mlp)
				memcpy(qk->mlp + ((size_t)l * T + t) * C, mo, sizeof(double) * C);
			double skip = cfg->residual ? 1.0 : 0.0;
			if (parallel) { /* ar = skip x + attn: both sub-blocks add up */
				for (int c = 0; c < C; c++)
					xo[c] = ar[c] + mo[c];
			} else if (o->placement == PLACE_PRE) {
				for (int c = 0; c < C; c++)
					xo[c] = skip * ar[c] + mo[c];
			} else {
				for (int c = 0; c < C; c++)
					tmp[c] = skip * in[c] + mo[c];
				ref_norm(cfg, tmp, xo, ln2w, ln2b);
			}
		}
	}
	if (trace && trace->resid)
		memcpy(trace->resid + (size_t)L * T * C, x, sizeof(double) * T * C);

	/* final norm + output projection; BERT's MLM head instead:
	 * norm(gelu_erf(dense(x))) with no final norm, then a bias per token */
	if (logits) {
		const float *wout = cfg->tied ? m->p[P_WTE] : m->p[P_LMHEAD];
		const float *lnfb = m->psize[P_LNFB] ? m->p[P_LNFB] : NULL;
		bool mlm = cfg->head == HEAD_MLM;
		const float *hw = m->p[P_HEADW], *hb = m->psize[P_HEADB] ? m->p[P_HEADB] : NULL;
		const float *ob = m->psize[P_OUTB] ? m->p[P_OUTB] : NULL;
		for (int t = 0; t < T; t++) {
			if (mlm) {
				for (int c = 0; c < C; c++) {
					double s = hb ? (double)hb[c] : 0.0;
					for (int kk = 0; kk < C; kk++)
						s += (double)hw[(size_t)c * C + kk] * x[(size_t)t * C + kk];
					mo[c] = gelu_erf(s);
				}
				ref_norm(cfg, mo, tmp, m->p[P_HEADLNW],
					 m->psize[P_HEADLNB] ? m->p[P_HEADLNB] : NULL);
			} else {
				ref_norm(cfg, x + (size_t)t * C, tmp, m->p[P_LNFW], lnfb);
			}
			for (int vv = 0; vv < V; vv++) {
				double s = mlm && ob ? (double)ob[vv] : 0.0;
				for (int c = 0; c < C; c++)
					s += (double)wout[(size_t)vv * C + c] * tmp[c];
				if (cfg->final_softcap > 0) /* Gemma 2 */
					s = cfg->final_softcap * tanh(s / cfg->final_softcap);
				logits[(size_t)t * V + vv] = s;
			}
		}
	}

	free(x); free(ain); free(q); free(k); free(v); free(wk); free(wv); free(bk); free(bv);
	free(y); free(qa); free(ka); free(va); free(oa); free(ares); free(h1); free(hid); free(act); free(mo); free(tmp); free(p);
	return 0;
}
