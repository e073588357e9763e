/*
 * test_why.c — one score split into its parts (why.h), on seeded random
 * models of both families (GPT-2: LayerNorm, learned positions, biases,
 * tied; Llama: RMSNorm, RoPE, no biases, untied), with non-trivial
 * biases, norm gains and shifts, 2 and 3 layers:
 *  - every (query part, key part) term equals a double-precision
 *    reference written here from ref_forward_qk's trace (ref_forward.h):
 *    the components built from the trace's head outputs, MLP outputs and
 *    streams, each norm frozen at the reference's own scale (computed from
 *    its own stream), projected by the head's rows (K/V rows pooled here
 *    for a GQA conversion) and turned by its own RoPE, within 1e-4 +
 *    1e-4 |ref|;
 *  - the reference's terms sum to the reference's score (its q . k after
 *    RoPE, scaled) within 1e-9: the frozen-norm split is exact;
 *  - why's terms sum to the pass's score within 1e-4, and that score is
 *    the reference's within 1e-4 + 1e-4 |ref|; the mean score over the
 *    visible keys (the sum of the key means) is the reference's mean;
 *  - under native options (pre-norm), post-norm placement, a native GQA
 *    model (2 K/V heads) and a GQA conversion (2 from 4), partial RoPE,
 *    Llama 3.1's RoPE scaling, Qwen3's q/k norm (frozen at each head's
 *    1/rms, as the norms of the stream are),
 *    scaling off with two heads ablated (every term of an ablated head's
 *    part is exactly 0), a window mask;
 *  - Gemma 2 (sandwich norms frozen at each row's 1/rms of its heads' sum,
 *    query_pre_attn_scalar, a local layer, scores soft-capped at 2 with
 *    the cap bending some score by more than 0.5: the terms sum to the
 *    pre-cap score, `capped` is the reference's cap * tanh(score / cap)
 *    and the engine's softmax read it: ln A_IJ - ln A_II of the pass's
 *    weights is capped_IJ - capped_II, within 1e-4), Gemma 3 (sandwich
 *    norms, q/k norm, a local layer on its own RoPE base) and OLMo-2 (no
 *    norm before the sub-blocks, sandwich norms, the whole-width q/k norm
 *    frozen at the 1/rms of all the query heads, or all the key heads, of
 *    the position), under their options;
 *  - bad arguments (head outside the model, a key after the query under
 *    the causal mask or outside the window, positions outside the text)
 *    and unsplittable models (no residual connections, a pitfall) are
 *    refused with one line, as are OLMo-2 runs the pass cannot make
 *    (post-norm, fewer K/V heads than its key norm spans).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "randmodel.h"
#include "ref_forward.h"
#include "why.h"

enum { V = 19, T = 8, H = 4, C = 32, D = C / H, MAXL = 3, MAXP = 5 + MAXL * (H + 4) };

static double worst; /* largest |code - reference| of a term */
static double bent;  /* largest |capped - score| of the reference */

/* A random model whose biases, norm gains and shifts are not 0 / 1. */
static struct model *make_model(bool llama, int L, int kv, uint64_t seed)
{
	struct model *m = randmodel_new(llama, L, kv, V, 1.0f, seed);
	struct rng g;
	rng_seed(&g, seed * 7 + 1);
	enum param_id ids[] = { P_QKVB, P_ATTPROJB, P_FCB, P_FCPROJB, P_LNFB, P_LN1B, P_LN2B };
	for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
		for (size_t i = 0; i < m->psize[ids[k]]; i++)
			m->p[ids[k]][i] = 0.1f * rng_normal(&g);
	enum param_id gains[] = { P_LNFW, P_LN1W, P_LN2W };
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < m->psize[gains[k]]; i++)
			m->p[gains[k]][i] = 0.6f + 0.8f * rng_uniform(&g);
	return m;
}

/* ------------------------------------------------------------ reference */

struct ref {
	int n;
	enum why_kind kind[MAXP];
	int layer[MAXP], head[MAXP];
	double v[MAXP][C];   /* the component in the stream */
	double q[MAXP][D];   /* its query (side 0) or key (side 1) vector */
};

static int ref_add(struct ref *r, enum why_kind kind, int layer, int head)
{
	assert_true(r->n < MAXP);
	r->kind[r->n] = kind;
	r->layer[r->n] = layer;
	r->head[r->n] = head;
	memset(r->v[r->n], 0, sizeof r->v[0]);
	return r->n++;
}

static double ref_rstd(const struct model *m, const double *x)
{
	double mean = 0, var = 0;
	for (int j = 0; j < C; j++)
		mean += x[j];
	mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
	for (int j = 0; j < C; j++)
		var += (x[j] - mean) * (x[j] - mean);
	return 1.0 / sqrt(var / C + m->cfg.norm_eps);
}

/* Every component through a norm frozen at rstd, its shift (param b,
 * absent: none) a new component. */
static void ref_norm_frozen(const struct model *m, struct ref *r, enum param_id g, enum param_id b,
			    int l, int which, double rstd)
{
	for (int a = 0; a < r->n; a++) {
		double mean = 0;
		for (int j = 0; j < C; j++)
			mean += r->v[a][j];
		mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
		for (int j = 0; j < C; j++)
			r->v[a][j] = (r->v[a][j] - mean) * rstd * m->p[g][(size_t)l * C + j];
	}
	if (m->psize[b]) {
		int a = ref_add(r, WHY_SHIFT, l, which);
		for (int j = 0; j < C; j++)
			r->v[a][j] = m->p[b][(size_t)l * C + j];
	}
}

/* RoPE of layer l at position t of the T-token pass (LongRoPE: its table,
 * cos and sin times the attention factor); Gemma 3's local layers turn by
 * their own base, unscaled. */
static void ref_rope(const struct model *m, double *v, int t, int l)
{
	int R = m->cfg.rotary_dims ? m->cfg.rotary_dims : D;
	struct model_config c = m->cfg;
	if (c.rope_local_theta > 0 && c.local_window > 0 && ((c.local[0] >> l) & 1u)) {
		c.rope_theta = c.rope_local_theta;
		c.rope_scaling = ROPE_SCALE_NONE;
	}
	double ms = c.rope_scaling == ROPE_SCALE_LONGROPE ? (double)c.rope_attn_factor : 1.0;
	for (int i = 0; i < R / 2; i++) {
		double ang = t * ref_rope_freq_in(&c, i, R, T);
		double a = v[2 * i], b = v[2 * i + 1];
		v[2 * i] = ms * (a * cos(ang) - b * sin(ang));
		v[2 * i + 1] = ms * (a * sin(ang) + b * cos(ang));
	}
}

/* Row d of head h's query (key = false) or of its K/V group's key under G
 * K/V heads (the mean of the group's query heads' native K rows), its
 * bias into *bias. */
static void ref_row(const struct model *m, int l, int h, int G, bool key, int d, double *row,
		    double *bias)
{
	int K = m->cfg.n_kv_head, QKV = (H + 2 * K) * D;
	const float *w = m->p[P_QKVW] + (size_t)l * QKV * C;
	const float *b = m->psize[P_QKVB] ? m->p[P_QKVB] + (size_t)l * QKV : NULL;
	int h0 = key ? (h / (H / G)) * (H / G) : h, n = key ? H / G : 1;
	memset(row, 0, C * sizeof *row);
	*bias = 0;
	for (int u = h0; u < h0 + n; u++) {
		int r = key ? H * D + (u / (H / K)) * D + d : u * D + d;
		for (int j = 0; j < C; j++)
			row[j] += w[(size_t)r * C + j] / n;
		*bias += b ? b[r] / n : 0;
	}
}

/* Gemma's and OLMo-2's sandwich norm of layer l's attention: the last nh
 * components (its heads and bias) frozen at the 1/rms of their sum, times
 * ATTPOSTW. */
static void ref_sandwich(const struct model *m, struct ref *r, int nh, int l)
{
	double sum[C] = { 0 };
	for (int a = r->n - nh; a < r->n; a++)
		for (int j = 0; j < C; j++)
			sum[j] += r->v[a][j];
	double rs = ref_rstd(m, sum);
	for (int a = r->n - nh; a < r->n; a++)
		for (int j = 0; j < C; j++)
			r->v[a][j] *= rs * m->p[P_ATTPOSTW][(size_t)l * C + j];
}

/* OLMo-2's whole-width q/k norm on the parts' query (key) vectors of head
 * h: frozen at the 1/rms of all H query heads (all G key heads, each the
 * replica of native head g / (G / K)) projected from the parts' sum, the
 * head's own D scales of the H*D (K*D) ones. */
static void ref_qk_whole(const struct model *m, const struct run_options *o, struct ref *r, int L,
			 int h, bool key)
{
	int G = o->kv_heads, K = m->cfg.n_kv_head, nh = key ? G : H;
	double x[C] = { 0 }, row[C], bias, ss = 0;
	for (int b = 0; b < r->n; b++)
		for (int j = 0; j < C; j++)
			x[j] += r->v[b][j];
	for (int u = 0; u < nh; u++)
		for (int d = 0; d < D; d++) {
			ref_row(m, L, key ? u * (H / G) : u, G, key, d, row, &bias);
			double y = bias;
			for (int j = 0; j < C; j++)
				y += row[j] * x[j];
			ss += y * y;
		}
	double rs = 1.0 / sqrt(ss / (nh * D) + (double)m->cfg.norm_eps);
	int slot = key ? (h / (H / G)) / (G / K) : h;
	const float *w = m->p[key ? P_KNORMW : P_QNORMW] + (size_t)L * (key ? K : H) * D + slot * D;
	for (int b = 0; b < r->n; b++)
		for (int d = 0; d < D; d++)
			r->q[b][d] *= rs * w[d];
}

/* The components at position p of layer L's input, and their query
 * (key = false) or key vectors for head h. */
static void ref_side(const struct model *m, const struct run_options *o, const struct ref_trace *tr,
		     const struct ref_trace_qk *qk, const int *tokens, int L, int h, int p, bool key,
		     struct ref *r)
{
	r->n = 0;
	int a = ref_add(r, WHY_TOKEN, -1, -1);
	for (int j = 0; j < C; j++)
		r->v[a][j] = m->p[P_WTE][(size_t)tokens[p] * C + j] *
			     (m->cfg.emb_scale > 0 ? (double)m->cfg.emb_scale : 1.0);
	if (m->cfg.pos == POS_LEARNED) {
		a = ref_add(r, WHY_POS, -1, -1);
		for (int j = 0; j < C; j++)
			r->v[a][j] = m->p[P_WPE][(size_t)p * C + j];
	}
	for (int l = 0; l < L; l++) {
		int a0 = r->n;
		for (int hh = 0; hh < H; hh++) {
			a = ref_add(r, WHY_HEAD, l, hh);
			const double *y = tr->atty + ((size_t)l * T + p) * C + hh * D;
			for (int j = 0; j < C; j++)
				for (int d = 0; d < D; d++)
					r->v[a][j] += m->p[P_ATTPROJW][((size_t)l * C + j) * C + hh * D + d] * y[d];
		}
		if (m->psize[P_ATTPROJB]) {
			a = ref_add(r, WHY_ATTN_BIAS, l, -1);
			for (int j = 0; j < C; j++)
				r->v[a][j] = m->p[P_ATTPROJB][(size_t)l * C + j];
		}
		if (m->cfg.sandwich)
			ref_sandwich(m, r, r->n - a0, l);
		const double *mlp = qk->mlp + ((size_t)l * T + p) * C;
		if (o->placement == PLACE_PRE) {
			a = ref_add(r, WHY_MLP, l, -1);
			memcpy(r->v[a], mlp, sizeof r->v[a]);
			continue;
		}
		/* post: norm1 of att_res, then + mlp, then norm2 of that sum */
		const double *ares = tr->att_res + ((size_t)l * T + p) * C;
		double rs1 = ref_rstd(m, ares), h1[C], mean = 0;
		for (int j = 0; j < C; j++)
			mean += ares[j];
		mean = m->cfg.norm == NORM_LAYER ? mean / C : 0;
		for (int j = 0; j < C; j++)
			h1[j] = (ares[j] - mean) * rs1 * m->p[P_LN1W][(size_t)l * C + j] +
				(m->psize[P_LN1B] ? m->p[P_LN1B][(size_t)l * C + j] : 0) + mlp[j];
		ref_norm_frozen(m, r, P_LN1W, P_LN1B, l, 1, rs1);
		a = ref_add(r, WHY_MLP, l, -1);
		memcpy(r->v[a], mlp, sizeof r->v[a]);
		ref_norm_frozen(m, r, P_LN2W, P_LN2B, l, 2, ref_rstd(m, h1));
	}
	if (o->placement == PLACE_PRE && m->psize[P_LN1W]) /* OLMo-2: no norm1 */
		ref_norm_frozen(m, r, P_LN1W, P_LN1B, L, 1, ref_rstd(m, tr->resid + ((size_t)L * T + p) * C));
	double row[C], bias[D];
	for (int d = 0; d < D; d++) {
		ref_row(m, L, h, o->kv_heads, key, d, row, &bias[d]);
		for (int b = 0; b < r->n; b++) {
			double s = 0;
			for (int j = 0; j < C; j++)
				s += row[j] * r->v[b][j];
			r->q[b][d] = s;
		}
	}
	if (m->psize[P_QKVB]) {
		a = ref_add(r, WHY_QK_BIAS, -1, -1);
		memcpy(r->q[a], bias, sizeof bias);
	}
	if (m->cfg.qk_norm_whole) {
		ref_qk_whole(m, o, r, L, h, key);
	} else if (m->cfg.qk_norm) { /* Qwen3: frozen at 1/rms of the whole head, the parts' sum */
		const float *w = m->p[key ? P_KNORMW : P_QNORMW] + (size_t)L * D;
		double sum[D] = { 0 }, ss = 0;
		for (int b = 0; b < r->n; b++)
			for (int d = 0; d < D; d++)
				sum[d] += r->q[b][d];
		for (int d = 0; d < D; d++)
			ss += sum[d] * sum[d];
		double rs = 1.0 / sqrt(ss / D + (double)m->cfg.norm_eps);
		for (int b = 0; b < r->n; b++)
			for (int d = 0; d < D; d++)
				r->q[b][d] *= rs * w[d];
	}
	if (m->cfg.pos == POS_ROPE)
		for (int b = 0; b < r->n; b++)
			ref_rope(m, r->q[b], p, L);
}

/* ---------------------------------------------------------------- checks */

static double dotd(const double *a, const double *b)
{
	double s = 0;
	for (int d = 0; d < D; d++)
		s += a[d] * b[d];
	return s;
}

/* The capped score c_IJ of l.h is what the pass's softmax read: ln A_IJ -
 * ln A_II of the engine's weights is c_IJ - c_II (why's at key I). */
static void check_softmax(struct model *m, const struct run_options *o, const int *tokens, int l,
			  int h, int I, int J, double capped)
{
	struct why_result w;
	struct err e;
	if (why_run(m, o, tokens, T, l, h, I, I, &w, &e) != 0)
		fail_msg("why %d.%d %d %d: %s", l, h, I, I, e.msg);
	struct run *r = run_new(&m->cfg, 1, T, RUN_ATTN);
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, T, r, &e), 0);
	const float *A = run_att(r, l, 0, h) + (size_t)I * T;
	double got = log((double)A[J]) - log((double)A[I]), want = capped - w.capped;
	if (!(fabs(got - want) < 1e-4 + 1e-4 * fabs(want)))
		fail_msg("%d.%d %d %d: ln A_IJ - ln A_II %g, capped scores' difference %g", l, h, I, J,
			 got, want);
	run_free(r);
	why_free(&w);
}

/* why_run of head l.h, query I, key J against the reference. */
static void check_pair(struct model *m, const struct run_options *o, const int *tokens,
		       const struct ref_trace *tr, const struct ref_trace_qk *qk, int l, int h, int I,
		       int J)
{
	struct why_result w;
	struct err e;
	if (why_run(m, o, tokens, T, l, h, I, J, &w, &e) != 0)
		fail_msg("why %d.%d %d %d: %s", l, h, I, J, e.msg);
	static struct ref rq, rk;
	ref_side(m, o, tr, qk, tokens, l, h, I, false, &rq);
	ref_side(m, o, tr, qk, tokens, l, h, J, true, &rk);
	assert_int_equal(w.n, rq.n);
	assert_int_equal(w.n, rk.n);
	double sd = m->cfg.attn_scale_dim ? m->cfg.attn_scale_dim : D; /* Gemma's scalar */
	double sc = o->scale ? 1.0 / sqrt(sd) : 1.0, rsum = 0;
	for (int a = 0; a < w.n; a++) {
		assert_int_equal(w.parts[a].kind, rq.kind[a]);
		assert_int_equal(w.parts[a].layer, rq.layer[a]);
		assert_int_equal(w.parts[a].head, rq.head[a]);
		bool ablated = rq.kind[a] == WHY_HEAD && opt_is_ablated(o, rq.layer[a] * H + rq.head[a]);
		for (int b = 0; b < w.n; b++) {
			double ref = sc * dotd(rq.q[a], rk.q[b]), got = w.terms[(size_t)a * w.n + b];
			double err = fabs(got - ref);
			worst = err > worst ? err : worst;
			if (err > 1e-4 + 1e-4 * fabs(ref))
				fail_msg("%d.%d %d %d term (%d, %d): %g vs reference %g", l, h, I, J, a, b, got, ref);
			if (ablated)
				assert_true(got == 0.0 && w.terms[(size_t)b * w.n + a] == 0.0);
			rsum += ref;
		}
	}
	int G = o->kv_heads, g = h / (H / G);
	double rscore = sc * dotd(qk->q + (((size_t)l * H + h) * T + I) * D,
				  qk->k + (((size_t)l * G + g) * T + J) * D);
	if (fabs(rsum - rscore) > 1e-9 * (1 + fabs(rscore)))
		fail_msg("reference terms %.12g vs reference score %.12g", rsum, rscore);
	if (!(fabs(w.sum - w.score) < 1e-4))
		fail_msg("%d.%d %d %d: terms sum to %g, the pass's score %g", l, h, I, J, w.sum, w.score);
	assert_true(fabs(w.score - rscore) < 1e-4 + 1e-4 * fabs(rscore));
	/* soft-capping: the terms split the score before the cap; capped is
	 * the reference's cap * tanh(score / cap), and what the softmax read */
	double cap = m->cfg.attn_softcap, rcapped = cap > 0 ? cap * tanh(rscore / cap) : rscore;
	assert_true(w.softcap == cap);
	if (!(fabs(w.capped - rcapped) < 1e-4 + 1e-4 * fabs(rcapped)))
		fail_msg("%d.%d %d %d: capped %g vs reference %g", l, h, I, J, w.capped, rcapped);
	bent = fabs(rcapped - rscore) > bent ? fabs(rcapped - rscore) : bent;
	if (cap > 0 && J != I)
		check_softmax(m, o, tokens, l, h, I, J, w.capped);
	/* the mean over visible keys */
	int lo = 0, hi = I, window; /* the run's window, or a local layer's */
	enum mask_kind mask = layer_mask(&m->cfg, o, l, &window);
	if (mask == MASK_WINDOW)
		lo = I - window > 0 ? I - window : 0;
	double rmean = 0, kmean = 0, qside = 0, kside = 0;
	for (int j = lo; j <= hi; j++)
		rmean += sc * dotd(qk->q + (((size_t)l * H + h) * T + I) * D,
				   qk->k + (((size_t)l * G + g) * T + j) * D) / (hi - lo + 1);
	for (int a = 0; a < w.n; a++) {
		kmean += w.parts[a].key_mean;
		qside += w.parts[a].query;
		kside += w.parts[a].key;
	}
	assert_true(fabs(kmean - w.mean_score) < 1e-9 * (1 + fabs(kmean)));
	assert_true(fabs(w.mean_score - rmean) < 1e-4 + 1e-4 * fabs(rmean));
	assert_true(fabs(qside - w.sum) < 1e-9 * (1 + fabs(qside)));
	assert_true(fabs(kside - w.sum) < 1e-9 * (1 + fabs(kside)));
	why_free(&w);
}

/* Every head of the first and last layer on a few (I, J) pairs. */
static void check_options(struct model *m, const struct run_options *o, const int *tokens)
{
	int L = m->cfg.n_layer;
	static double resid[(MAXL + 1) * T * C], att_res[MAXL * T * C], atty[MAXL * T * C],
		mlp[MAXL * T * C], q[MAXL * H * T * D], k[MAXL * H * T * D];
	struct ref_trace tr = { resid, att_res, atty };
	struct ref_trace_qk qk = { mlp, q, k };
	assert_int_equal(ref_forward_qk(m, o, tokens, T, NULL, NULL, &tr, &qk), 0);
	const int pairs[][2] = { { T - 1, 0 }, { T - 1, T - 1 }, { T - 1, T - 3 }, { 4, 3 }, { 2, 2 } };
	for (int li = 0; li < 2; li++)
		for (int h = 0; h < H; h++)
			for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
				int I = pairs[p][0], J = pairs[p][1], window;
				int l = li ? L - 1 : 0;
				if (layer_mask(&m->cfg, o, l, &window) == MASK_WINDOW && J < I - window)
					continue;
				check_pair(m, o, tokens, &tr, &qk, li ? L - 1 : 0, h, I, J);
			}
}

static void test_why_matches_reference(void **state)
{
	(void)state;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 7 + 2) % V;
	for (int llama = 0; llama <= 1; llama++)
		for (int L = 2; L <= 3; L++) {
			struct model *m = make_model(llama, L, 4, 11 + llama + 2 * L);
			struct run_options o;
			run_options_native(m, &o);
			check_options(m, &o, tokens);
			struct run_options p = o;
			p.placement = PLACE_POST;
			check_options(m, &p, tokens);
			struct run_options g = o;
			g.kv_heads = 2;
			check_options(m, &g, tokens);
			struct run_options a = o;
			a.scale = false;
			opt_set_ablated(&a, 0 * H + 1, true);
			opt_set_ablated(&a, (L - 1) * H + 3, true);
			check_options(m, &a, tokens);
			struct run_options wnd = o;
			wnd.mask = MASK_WINDOW;
			wnd.window = 2;
			check_options(m, &wnd, tokens);
			if (llama) { /* partial rotary: the last half of each head unturned */
				m->cfg.rotary_dims = D / 2;
				check_options(m, &o, tokens);
				/* Llama 3.1's RoPE scaling over an original context
				 * of 8: pair 0 blended, the others divided by 8 */
				m->cfg.rotary_dims = 0;
				m->cfg.rope_scaling = ROPE_SCALE_LLAMA3;
				m->cfg.rope_factor = 8.0f;
				m->cfg.rope_low_freq = 1.0f;
				m->cfg.rope_high_freq = 4.0f;
				m->cfg.rope_orig_context = 8;
				check_options(m, &o, tokens);
				/* Phi-3's LongRoPE over an original context of 4
				 * (the long table), on half of each head: cos and
				 * sin times 1.3 */
				m->cfg.rotary_dims = D / 2;
				m->cfg.rope_scaling = ROPE_SCALE_LONGROPE;
				m->cfg.rope_orig_context = 4;
				m->cfg.rope_attn_factor = 1.3f;
				for (int i = 0; i < D / 4; i++) {
					m->cfg.rope_short[i] = 1.0f + (float)i;
					m->cfg.rope_long[i] = 3.0f + 5.0f * (float)i;
				}
				check_options(m, &o, tokens);
				m->cfg.rotary_dims = 0;
				/* Gemma's token embeddings times sqrt(C) */
				m->cfg.rope_scaling = ROPE_SCALE_NONE;
				m->cfg.emb_scale = sqrtf((float)C);
				check_options(m, &o, tokens);
				m->cfg.emb_scale = 0.0f;
			}
			model_free(m);
		}
	/* Qwen3's q/k norm (scales 1 + 0.3 N): native MHA and GQA, post-norm,
	 * a conversion, scale off with an ablation, a window */
	for (int kv = 2; kv <= 4; kv += 2) {
		struct model *m = randmodel_qk_norm(make_model(true, 2, kv, 31 + kv), 40 + kv);
		struct run_options o;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		struct run_options v = o;
		v.placement = PLACE_POST;
		check_options(m, &v, tokens);
		v = o;
		v.kv_heads = 1;
		check_options(m, &v, tokens);
		v = o;
		v.scale = false;
		opt_set_ablated(&v, 0 * H + 2, true);
		v.mask = MASK_WINDOW;
		v.window = 3;
		check_options(m, &v, tokens);
		/* Gemma 3's RoPE: layer 0 local over 4 keys on a base of its own,
		 * the global layer 1 on another, scaled */
		m->cfg.local_window = 4;
		cfg_set_local(&m->cfg, 0, true);
		m->cfg.rope_theta = 100.0f;
		m->cfg.rope_scaling = ROPE_SCALE_LINEAR;
		m->cfg.rope_factor = 4.0f;
		m->cfg.rope_local_theta = 10000.0f;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		model_free(m);
	}
	/* a native GQA model: 2 K/V heads for 4 query heads */
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = make_model(llama, 2, 2, 5 + llama);
		struct run_options o;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		o.placement = PLACE_POST;
		check_options(m, &o, tokens);
		model_free(m);
	}
	printf("why: worst |term - reference| %.3g\n", worst);
}

/* A Gemma 2 model (gemma3 false) or a Gemma 3 one from a Llama one with 2
 * K/V heads: sqrt(C) embeddings, sandwich norms (scales 1 + 0.3 N),
 * GeGLU, query_pre_attn_scalar 12, layer 0 local over 4 keys, the logits
 * soft-capped at 3; Gemma 2's scores soft-capped at 2 (the QKV weights
 * times 6, so that tanh bends), Gemma 3's q/k norm, its local layer on a
 * RoPE base of its own, the global one on another, scaled. */
static struct model *make_gemma(bool gemma3, uint64_t seed)
{
	struct model *base = make_model(true, 2, 2, seed);
	struct model_config c = base->cfg;
	c.emb_scale = sqrtf((float)C);
	c.sandwich = true;
	c.attn_softcap = gemma3 ? 0.0f : 2.0f;
	c.final_softcap = 3.0f;
	c.attn_scale_dim = 12;
	c.mlp = MLP_GEGLU;
	c.local_window = 4;
	cfg_set_local(&c, 0, true);
	if (gemma3) {
		c.qk_norm = true;
		c.rope_theta = 100.0f;
		c.rope_scaling = ROPE_SCALE_LINEAR;
		c.rope_factor = 4.0f;
		c.rope_local_theta = 10000.0f;
	}
	struct model *m = randmodel_rebuild(base, &c, seed + 100);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 6.0f;
	return m;
}

/* Gemma 2 (sandwich norms, soft-capped scores that bend: some score moves
 * by more than 0.5 under the cap), Gemma 3 (sandwich norms, q/k norm, a
 * local layer on its own RoPE base) and OLMo-2 (no norm before the
 * sub-blocks, sandwich norms, the whole-width q/k norm, 2 K/V heads)
 * against the reference: native, post-norm (the Gemmas), fewer K/V heads
 * (MQA) and more (MHA, OLMo-2's one conversion), scale off with an
 * ablation, a window. */
static void test_why_gemma_olmo2(void **state)
{
	(void)state;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 3) % V;
	for (int k = 0; k < 3; k++) {
		struct model *m;
		if (k < 2) {
			m = make_gemma(k == 1, 60 + k);
		} else {
			struct model *base = make_model(true, 2, 2, 62);
			struct model_config c = base->cfg;
			c.sandwich = c.post_only = c.qk_norm = c.qk_norm_whole = true;
			m = randmodel_rebuild(base, &c, 63);
		}
		struct run_options o, v;
		run_options_native(m, &o);
		check_options(m, &o, tokens);
		v = o;
		v.kv_heads = k < 2 ? 1 : 4;
		check_options(m, &v, tokens);
		v = o;
		v.scale = false;
		opt_set_ablated(&v, 0 * H + 2, true);
		check_options(m, &v, tokens);
		v = o;
		v.mask = MASK_WINDOW;
		v.window = 3;
		check_options(m, &v, tokens);
		if (k < 2) {
			v = o;
			v.placement = PLACE_POST;
			check_options(m, &v, tokens);
		}
		if (k == 0 && !(bent > 0.5))
			fail_msg("Gemma 2's cap moved no score by more than %g: tanh never bent", bent);
		model_free(m);
	}
	printf("why: worst |term - reference| %.3g, largest |capped - score| %.3g\n", worst, bent);
}

/* -1 and a non-empty message of one line. */
static void refused(struct model *m, const struct run_options *o, const int *tokens, int l, int h,
		    int I, int J, const char *word)
{
	struct why_result w;
	struct err e = { "" };
	assert_int_equal(why_run(m, o, tokens, T, l, h, I, J, &w, &e), -1);
	assert_true(e.msg[0] && !strchr(e.msg, '\n'));
	if (!strstr(e.msg, word))
		fail_msg("'%s' does not say %s", e.msg, word);
	why_free(&w); /* a no-op on the zeroed result */
}

static void test_why_refuses(void **state)
{
	(void)state;
	struct model *m = make_model(false, 2, 4, 3);
	int tokens[T] = { 0 };
	struct run_options o;
	run_options_native(m, &o);
	refused(m, &o, tokens, 2, 0, 3, 1, "outside the model");
	refused(m, &o, tokens, 0, H, 3, 1, "outside the model");
	refused(m, &o, tokens, -1, 0, 3, 1, "outside the model");
	refused(m, &o, tokens, 1, 0, 2, 5, "causal mask");
	refused(m, &o, tokens, 1, 0, T, 1, "query position");
	refused(m, &o, tokens, 1, 0, T - 1, T, "key position");
	refused(m, &o, tokens, 1, 0, -1, 0, "query position");
	struct run_options w = o;
	w.mask = MASK_WINDOW;
	w.window = 2;
	refused(m, &w, tokens, 1, 0, 6, 1, "window");
	struct run_options p = o;
	p.pitfall = PITFALL_NO_TRANSPOSE;
	refused(m, &p, tokens, 1, 0, 6, 1, "pitfall");
	m->cfg.residual = false;
	refused(m, &o, tokens, 1, 0, 6, 1, "residual");
	m->cfg.residual = true;
	/* with no mask a later key has a score */
	struct run_options n = o;
	n.mask = MASK_NONE;
	struct why_result r;
	struct err e;
	assert_int_equal(why_run(m, &n, tokens, T, 1, 0, 2, 5, &r, &e), 0);
	why_free(&r);
	why_free(&r);
	model_free(m);
	/* OLMo-2: post-norm, or fewer K/V heads than its key norm spans, the
	 * pass itself refuses */
	struct model *base = make_model(true, 2, 2, 4);
	struct model_config c = base->cfg;
	c.sandwich = c.post_only = c.qk_norm = c.qk_norm_whole = true;
	m = randmodel_rebuild(base, &c, 5);
	run_options_native(m, &o);
	p = o;
	p.placement = PLACE_POST;
	refused(m, &p, tokens, 1, 0, 6, 1, "norm placement stays native");
	p = o;
	p.kv_heads = 1;
	refused(m, &p, tokens, 1, 0, 6, 1, "key norm spans");
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_why_matches_reference),
		cmocka_unit_test(test_why_gemma_olmo2),
		cmocka_unit_test(test_why_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
