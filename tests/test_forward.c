/*
 * test_forward.c — the forward pass against a naive double-precision
 * reference (tests/ref_forward.c), plus invariants of every run option.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnmm.h"
#include "config.h"
#include "decode.h"
#include "gemmw.h"
#include "model.h"
#include "ops.h"
#include "quant.h"
#include "util.h"
#include "ref_forward.h"

/* Tiny shapes keep the whole matrix fast. */
enum { TV = 13, TC = 16, TL = 2, TH = 4, TF = 24, TS = 8, TT = 7 };

#define ABS_TOL 1e-5
#define REL_TOL 1e-4

static const int test_tokens[TT] = { 3, 11, 0, 7, 7, 12, 5 };

/* Largest errors seen over the whole binary, for the summary line. */
static double g_max_err_logits, g_max_err_att, g_max_err_resid;
static double g_max_ratio; /* max |a-b| / tol */
static int g_print_budget = 20; /* mismatch reports left (keeps a broken engine's log readable) */
static long g_compared_runs;

/* ----------------------------------------------------------- model setup */

struct variant {
	enum norm_type norm;
	enum norm_place place;
	enum pos_type pos;
	enum mlp_type mlp;
	int kv;
	bool bias, tied;
	float eps; /* 0: 1e-5 */
	bool no_residual, no_mlp; /* the lab's switches */
	bool parallel;            /* GPT-NeoX's parallel blocks */
	int rotary;               /* rotary_dims (0: all of D) */
	int heads;                /* 0: TH */
	bool emb_norm, mlm;       /* BERT's embedding norm and masked-LM head */
	int local_window;         /* GPT-Neo's local layers: bit l of local_bits */
	unsigned local_bits;
	bool no_scale;            /* native scores unscaled (GPT-Neo) */
	int head_dim;             /* 0: TC / heads */
	bool qk_norm;             /* Qwen3's q/k norm */
	bool gemma;               /* Gemma 2's switches: sqrt(C) embeddings, sandwich
				   * norms, soft-capping at 2 (scores) and 3 (logits),
				   * the scale of a query_pre_attn_scalar of 6 */
	bool olmo;                /* OLMo-2's: norms after the sub-blocks only, one
				   * q norm over all query heads, one k norm over all
				   * key heads */
	bool longrope;            /* Phi-3's LongRoPE over an original context of
				   * LR_ORIG (tables and factor: longrope_config) */
};

/* LongRoPE's original context in the tiny models: the test text (TT) is
 * longer, a text of LR_ORIG tokens is not. */
enum { LR_ORIG = 4 };

static float tiny_eps(const struct variant *v)
{
	return v->eps > 0.0f ? v->eps : 1e-5f;
}

/* LongRoPE on base 100 (so that every pair turns visibly over 7
 * positions): short factors 1 + 0.5 i, long ones 2 + 3 i (i < R/2), cos and
 * sin times 1.25. */
static void longrope_config(struct model_config *c)
{
	c->rope_theta = 100.0f;
	c->rope_scaling = ROPE_SCALE_LONGROPE;
	c->rope_orig_context = LR_ORIG;
	c->rope_attn_factor = 1.25f;
	for (int i = 0; i < cfg_rotary_dims(c) / 2; i++) {
		c->rope_short[i] = 1.0f + 0.5f * (float)i;
		c->rope_long[i] = 2.0f + 3.0f * (float)i;
	}
}

static void tiny_config(struct model_config *c, const struct variant *v)
{
	config_default(c);
	c->vocab_size = TV;
	c->d_model = TC;
	c->n_layer = TL;
	c->n_head = v->heads ? v->heads : TH;
	c->n_kv_head = v->kv;
	c->d_ff = TF;
	c->context = TS;
	c->norm = v->norm;
	c->norm_eps = tiny_eps(v);
	c->placement = v->place;
	c->pos = v->pos;
	c->rope_theta = 10000.0f;
	c->mlp = v->mlp;
	c->bias = v->bias;
	c->tied = v->tied;
	c->residual = !v->no_residual;
	if (v->no_mlp)
		c->d_ff = 0;
	c->parallel = v->parallel;
	c->rotary_dims = v->rotary;
	c->emb_norm = v->emb_norm;
	c->head = v->mlm ? HEAD_MLM : HEAD_LM;
	c->local_window = v->local_window;
	c->local[0] = v->local_bits;
	c->scale = !v->no_scale;
	c->head_dim = v->head_dim;
	c->qk_norm = v->qk_norm;
	if (v->gemma) {
		c->emb_scale = sqrtf((float)TC);
		c->sandwich = true;
		c->attn_softcap = 2.0f;
		c->final_softcap = 3.0f;
		c->attn_scale_dim = 6;
	}
	if (v->olmo) {
		c->sandwich = c->post_only = true;
		c->qk_norm = c->qk_norm_whole = true;
	}
	if (v->longrope)
		longrope_config(c);
	if (v->gemma && v->qk_norm) { /* Gemma 3: local layers turn by a base of their own */
		c->rope_theta = 100.0f;
		c->rope_scaling = ROPE_SCALE_LINEAR; /* on the global layers only */
		c->rope_factor = 4.0f;
		c->rope_local_theta = 10000.0f;
	}
}

static void fill_normal(struct rng *g, float *p, size_t n, float mean, float sd)
{
	for (size_t i = 0; i < n; i++)
		p[i] = mean + sd * rng_normal(g);
}

static void scale_tensor(struct model *m, enum param_id id, float s)
{
	for (size_t i = 0; i < m->psize[id]; i++)
		m->p[id][i] *= s;
}

/* model_new + model_init_random, then everything made non-trivial: norm
 * scales 1 + 0.1 N, biases/shifts 0.1 N, matrices scaled up so attention is
 * peaked and the MLP non-linearities are exercised away from 0. */
static struct model *make_model(const struct variant *v, uint64_t seed)
{
	struct model_config c;
	struct err e = { { 0 } };
	tiny_config(&c, v);
	struct model *m = model_new(&c, &e);
	if (!m) {
		print_error("model_new failed: %s\n", e.msg);
		fail();
	}
	model_init_random(m, seed);
	struct rng g;
	rng_seed(&g, seed * 7919u + 17u);
	static const enum param_id scales[] = { P_LN1W, P_LN2W, P_LNFW, P_LNEW, P_HEADLNW,
						P_QNORMW, P_KNORMW, P_ATTPOSTW, P_MLPPOSTW };
	static const enum param_id biases[] = { P_LN1B, P_LN2B, P_LNFB, P_QKVB,
						P_ATTPROJB, P_FCB, P_FCPROJB, P_LNEB,
						P_HEADB, P_HEADLNB, P_OUTB };
	static const enum param_id mats[] = { P_WTE, P_WPE, P_QKVW, P_ATTPROJW,
					      P_FCW, P_FCPROJW, P_LMHEAD, P_HEADW };
	for (size_t i = 0; i < sizeof scales / sizeof *scales; i++)
		fill_normal(&g, m->p[scales[i]], m->psize[scales[i]], 1.0f, 0.1f);
	for (size_t i = 0; i < sizeof biases / sizeof *biases; i++)
		if (m->p[biases[i]])
			fill_normal(&g, m->p[biases[i]], m->psize[biases[i]], 0.0f, 0.1f);
	for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
		if (m->p[mats[i]])
			scale_tensor(m, mats[i], 15.0f);
	model_clear_cache(m);

	/* The tensor table must match the variant (else the reference would
	 * silently agree with a wrong table). */
	assert_true((m->psize[P_LN1B] > 0) == (v->bias && v->norm == NORM_LAYER));
	assert_true((m->psize[P_QKVB] > 0) == v->bias);
	assert_true((m->psize[P_FCB] > 0) == (v->bias && !v->no_mlp));
	assert_true((m->psize[P_WPE] > 0) == (v->pos == POS_LEARNED));
	assert_true((m->psize[P_LMHEAD] > 0) == !v->tied);
	int nh = c.n_head;
	int nd = v->head_dim ? v->head_dim : TC / nh;
	assert_int_equal(m->psize[P_QKVW], (size_t)TL * (nh + 2 * v->kv) * nd * TC);
	assert_int_equal(m->psize[P_ATTPROJW], (size_t)TL * TC * nh * nd);
	assert_int_equal(m->psize[P_FCW],
			 v->no_mlp ? 0 : (size_t)TL * (v->mlp == MLP_SWIGLU || v->mlp == MLP_GEGLU ? 2 * TF : TF) * TC);
	assert_true((m->psize[P_LN2W] > 0) == (!v->no_mlp && !v->olmo));
	assert_true((m->psize[P_LN1W] > 0) == !v->olmo);
	assert_true((m->psize[P_LNEW] > 0) == v->emb_norm);
	assert_true((m->psize[P_LNEB] > 0) == (v->emb_norm && v->bias && v->norm == NORM_LAYER));
	assert_true((m->psize[P_LNFW] > 0) == !v->mlm);
	assert_true((m->psize[P_HEADW] > 0) == v->mlm);
	assert_true((m->psize[P_HEADLNW] > 0) == v->mlm);
	assert_true((m->psize[P_OUTB] > 0) == (v->mlm && v->bias));
	assert_int_equal(m->psize[P_QNORMW], v->olmo ? (size_t)TL * nh * nd : v->qk_norm ? (size_t)TL * nd : 0);
	assert_int_equal(m->psize[P_KNORMW], v->olmo ? (size_t)TL * v->kv * nd : m->psize[P_QNORMW]);
	assert_int_equal(m->psize[P_ATTPOSTW], v->gemma || v->olmo ? (size_t)TL * TC : 0);
	assert_int_equal(m->psize[P_MLPPOSTW], (v->gemma || v->olmo) && !v->no_mlp ? (size_t)TL * TC : 0);
	return m;
}

static struct variant default_variant(void)
{
	struct variant v = { NORM_LAYER, PLACE_PRE, POS_LEARNED, MLP_GELU, TH, true, true, 0.0f,
			     false, false, false, 0, 0, false, false, 0, 0u, false, 0, false, false, false,
			     false };
	return v;
}

/* default_variant as today's RoPE decoders are: RMSNorm, mlp, no biases. */
static struct variant rope_variant(enum mlp_type mlp)
{
	struct variant v = default_variant();
	v.pos = POS_ROPE;
	v.norm = NORM_RMS;
	v.mlp = mlp;
	v.bias = false;
	return v;
}

/* ----------------------------------------------------------- comparison */

static const char *mask_name(const struct run_options *o, char *buf, size_t n)
{
	switch (o->mask) {
	case MASK_CAUSAL: return "causal";
	case MASK_NONE: return "none";
	case MASK_WINDOW: snprintf(buf, n, "window%d", o->window); return buf;
	case MASK_AFTER_SOFTMAX: return "after-softmax";
	}
	return "?";
}

static void describe(char *buf, size_t n, const struct variant *v, const struct run_options *o,
		     unsigned flags)
{
	char mb[32];
	char ab[64] = "none";
	size_t used = 0;
	for (int bit = 0; bit < TL * TH; bit++)
		if (opt_is_ablated(o, bit))
			used += snprintf(ab + used, sizeof ab - used, "%s%d.%d",
					 used ? "," : "", bit / TH, bit % TH);
	snprintf(buf, n,
		 "model{norm=%s native=%s pos=%s mlp=%s K=%d bias=%d tied=%d eps=%g%s%s%s%s%s rot=%d "
		 "local=%#x/%d D=%d%s} "
		 "run{G=%d place=%s mask=%s scale=%d ablate=%s pitfall=%s flags=%s}",
		 norm_type_name(v->norm), norm_place_name(v->place), pos_type_name(v->pos),
		 mlp_type_name(v->mlp), v->kv, v->bias, v->tied, (double)tiny_eps(v),
		 v->no_residual ? " no-residual" : "", v->no_mlp ? " no-mlp" : "",
		 v->parallel ? " parallel" : "", v->emb_norm ? " emb-norm" : "",
		 v->mlm ? " mlm" : "", v->rotary, v->local_bits, v->local_window, v->head_dim,
		 v->olmo ? " olmo2" : v->qk_norm ? " qk-norm" : v->gemma ? " gemma"
		 : v->longrope ? " longrope" : "",
		 o->kv_heads, norm_place_name(o->placement), mask_name(o, mb, sizeof mb), o->scale, ab,
		 pitfall_name(o->pitfall),
		 (flags & RUN_TRAIN) ? "train" : "logits|attn");
}

/* Compares n engine floats with reference doubles; prints the worst element
 * on failure; shape/ndim turn the flat index into coordinates. */
static bool compare(const char *what, const char *combo, const float *eng, const double *ref,
		    size_t n, const int *shape, int ndim, double *max_err)
{
	size_t worst = 0;
	double worst_ratio = -1.0, worst_err = 0.0;
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)eng[i] - ref[i]);
		double tol = ABS_TOL + REL_TOL * fabs(ref[i]);
		double ratio = isfinite(d) ? d / tol : INFINITY; /* NaN/inf engine values are worst */
		if (!(ratio <= 1.0))
			ok = false;
		if (ratio > worst_ratio) {
			worst_ratio = ratio;
			worst = i;
			worst_err = d;
		}
		if (!(d <= *max_err))
			*max_err = d;
	}
	if (worst_ratio > g_max_ratio)
		g_max_ratio = worst_ratio;
	if (!ok && g_print_budget > 0) {
		if (--g_print_budget == 0)
			print_error("(further mismatch reports suppressed)\n");
		char idx[64];
		size_t used = 0, rem = worst;
		int coord[4];
		for (int k = ndim - 1; k >= 0; k--) {
			coord[k] = (int)(rem % (size_t)shape[k]);
			rem /= (size_t)shape[k];
		}
		for (int k = 0; k < ndim; k++)
			used += snprintf(idx + used, sizeof idx - used, "%s%d", k ? "," : "", coord[k]);
		print_error("MISMATCH %s\n  %s worst [%s] engine=%.9g ref=%.9g |d|=%.3g tol=%.3g\n",
			    combo, what, idx, (double)eng[worst], ref[worst], worst_err,
			    ABS_TOL + REL_TOL * fabs(ref[worst]));
	}
	return ok;
}

/* One engine pass (B=1) against the reference.  Returns true on a match. */
static bool check_against_ref(struct model *m, const struct variant *v,
			      const struct run_options *o, unsigned flags, const int *tokens, int T)
{
	const int V = TV, C = TC, L = TL, H = m->cfg.n_head;
	char combo[512];
	describe(combo, sizeof combo, v, o, flags);

	double *rl = malloc(sizeof(double) * T * V);
	double *ra = malloc(sizeof(double) * L * H * T * T);
	double *rres = malloc(sizeof(double) * (L + 1) * T * C);
	double *rares = malloc(sizeof(double) * L * T * C);
	struct ref_trace tr = { rres, rares, NULL };
	assert_non_null(rl);
	assert_non_null(ra);
	assert_non_null(rres);
	assert_non_null(rares);
	assert_int_equal(ref_forward(m, o, tokens, T, rl, ra, &tr), 0);

	struct run *r = run_new(&m->cfg, 1, T, flags);
	struct err e = { { 0 } };
	int rc = model_forward(m, o, tokens, NULL, 1, T, r, &e);
	bool ok = true;
	if (rc != 0) {
		print_error("model_forward failed (%s): %s\n", combo, e.msg);
		ok = false;
		goto out;
	}
	int ls[2] = { T, V };
	ok &= compare("logits (t,v)", combo, run_logits(r), rl, (size_t)T * V, ls, 2, &g_max_err_logits);
	float *ea = malloc(sizeof(float) * L * H * T * T);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++)
			memcpy(ea + ((size_t)l * H + h) * T * T, run_att(r, l, 0, h),
			       sizeof(float) * T * T);
	int as[4] = { L, H, T, T };
	ok &= compare("attention (l,h,i,j)", combo, ea, ra, (size_t)L * H * T * T, as, 4,
		      &g_max_err_att);
	free(ea);
	{
		/* resid_norm (L, B, T): L2 norm of each block's output */
		double *rn = malloc(sizeof(double) * L * T);
		assert_non_null(rn);
		for (int l = 0; l < L; l++)
			for (int t = 0; t < T; t++) {
				double s2 = 0.0;
				for (int c = 0; c < C; c++) {
					double x = rres[((size_t)(l + 1) * T + t) * C + c];
					s2 += x * x;
				}
				rn[l * T + t] = sqrt(s2);
			}
		int ns[2] = { L, T };
		ok &= compare("resid_norm (l,t)", combo, r->resid_norm, rn, (size_t)L * T, ns, 2,
			      &g_max_err_resid);
		free(rn);
	}
	if (flags & RUN_TRAIN) {
		/* saved activations: every block input and layer's att_res */
		assert_true(r->lstride_c >= (size_t)T * C);
		for (int l = 0; l <= L && ok; l++) {
			int rs[2] = { T, C };
			char what[64];
			snprintf(what, sizeof what, "resid[%d] (t,c)", l);
			/* resid is (L+1, B, T, C) packed by the pass's B*T */
			ok &= compare(what, combo, r->resid + (size_t)l * T * C,
				      rres + (size_t)l * T * C, (size_t)T * C, rs, 2, &g_max_err_resid);
			if (l < L) {
				snprintf(what, sizeof what, "att_res[%d] (t,c)", l);
				ok &= compare(what, combo, r->att_res + (size_t)l * r->lstride_c,
					      rares + (size_t)l * T * C, (size_t)T * C, rs, 2,
					      &g_max_err_resid);
			}
		}
	}
	g_compared_runs++;
out:
	run_free(r);
	free(rl);
	free(ra);
	free(rres);
	free(rares);
	return ok;
}

static void base_options(const struct model *m, struct run_options *o)
{
	memset(o, 0, sizeof *o);
	run_options_native(m, o);
}

/* ---------------------------------------------------------- a. the matrix */

/* One cmocka test per (norm, positions): loops native placement, MLP,
 * native K in {H, H/2, 1}, G in {4, 2, 1}, run placement, mask, scale and
 * ablation.  Bias and tying are tied to loop indices so all four pairs
 * appear with every norm / positions / MLP / K. */
static void run_matrix(enum norm_type norm, enum pos_type pos)
{
	static const int kvs[3] = { TH, TH / 2, 1 };
	static const int gs[3] = { 4, 2, 1 };
	int failures = 0, runs = 0;
	/* One thread: the shapes are tiny and OpenMP/BLAS thread hand-offs cost
	 * more than the work (10x slower on a loaded 2-core box).  The threaded
	 * paths are covered by test_batch_and_reuse and the invariant tests. */
	engine_set_threads(1);
	for (int pl = 0; pl < 2; pl++)
		for (int mi = 0; mi < 2; mi++)
			for (int ki = 0; ki < 3; ki++) {
				struct variant v;
				memset(&v, 0, sizeof v);
				v.norm = norm;
				v.place = pl ? PLACE_POST : PLACE_PRE;
				v.pos = pos;
				v.mlp = mi ? MLP_SWIGLU : MLP_GELU;
				v.kv = kvs[ki];
				v.bias = ((ki + mi + (int)norm) & 1) == 0;
				v.tied = ((ki + pl + (int)pos) & 1) == 0;
				/* a large eps in some models so eps placement shows clearly */
				v.eps = ((ki + mi + pl) % 3 == 1) ? 0.05f : 1e-5f;
				uint64_t seed = 1000u + (uint64_t)norm * 100 + (uint64_t)pos * 50 +
						(uint64_t)pl * 20 + (uint64_t)mi * 10 + (uint64_t)ki;
				struct model *m = make_model(&v, seed);
				for (int gi = 0; gi < 3; gi++)
					for (int rp = 0; rp < 2; rp++)
						for (int mk = 0; mk < 4; mk++)
							for (int sc = 0; sc < 2; sc++)
								for (int ab = 0; ab < 2; ab++) {
					struct run_options o;
					base_options(m, &o);
					o.kv_heads = gs[gi];
					o.placement = rp ? PLACE_POST : PLACE_PRE;
					static const enum mask_kind masks[4] = {
						MASK_CAUSAL, MASK_NONE, MASK_WINDOW, MASK_AFTER_SOFTMAX };
					o.mask = masks[mk];
					o.window = 2;
					o.scale = sc == 0;
					if (ab)
						opt_set_ablated(&o, 1 * TH + 2, true); /* head 1.2 */
					unsigned flags = ((gi + mk + sc + ab) & 1)
						? (RUN_LOGITS | RUN_ATTN | RUN_TRAIN)
						: (RUN_LOGITS | RUN_ATTN);
					runs++;
					if (!check_against_ref(m, &v, &o, flags, test_tokens, TT))
						failures++;
				}
				model_free(m);
			}
	engine_set_threads(0);
	print_message("matrix %s/%s: %d runs, %d mismatches\n", norm_type_name(norm),
		      pos_type_name(pos), runs, failures);
	assert_int_equal(failures, 0);
}

/* The lab's architecture switches: blocks without residual connections,
 * without an MLP, and both, under each placement and native mask, against
 * the reference. */
static void test_lab_architectures(void **s)
{
	(void)s;
	static const enum mask_kind masks[3] = { MASK_CAUSAL, MASK_NONE, MASK_AFTER_SOFTMAX };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (int sw = 1; sw < 4; sw++)
		for (int norm = 0; norm < 2; norm++)
			for (int pl = 0; pl < 2; pl++) {
				struct variant v = default_variant();
				v.norm = norm ? NORM_RMS : NORM_LAYER;
				v.pos = norm ? POS_ROPE : POS_LEARNED;
				v.place = pl ? PLACE_POST : PLACE_PRE;
				v.no_residual = sw & 1;
				v.no_mlp = sw & 2;
				struct model *m = make_model(&v, 5000u + (uint64_t)(sw * 4 + norm * 2 + pl));
				for (int mk = 0; mk < 3; mk++)
					for (int sc = 0; sc < 2; sc++) {
						struct run_options o;
						base_options(m, &o);
						o.mask = masks[mk];
						o.scale = sc == 0;
						runs++;
						if (!check_against_ref(m, &v, &o, (RUN_LOGITS | RUN_ATTN | RUN_TRAIN),
								       test_tokens, TT))
							failures++;
					}
				model_free(m);
			}
	engine_set_threads(0);
	print_message("lab architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* GPT-NeoX's pieces: parallel blocks, partial rotary (R = 4 of D = 8, two
 * heads, so that a second frequency exists),
 * exact GELU, with and without each other, under native and converted K/V
 * heads, both run placements (post-norm runs the sequential block), every
 * mask, ablation, and the lab's switches under a parallel block. */
static void test_neox_architectures(void **s)
{
	(void)s;
	static const enum mlp_type mlps[3] = { MLP_GELU_EXACT, MLP_GELU, MLP_SWIGLU };
	static const enum mask_kind masks[4] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW,
						 MASK_AFTER_SOFTMAX };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (int par = 0; par < 2; par++)
		for (int rot = 0; rot < 3; rot++) /* learned; RoPE over 4 of 8; RoPE over all */
			for (int mi = 0; mi < 3; mi++)
				for (int sw = 0; sw < 3; sw++) { /* plain, no residual, no MLP */
					struct variant v = default_variant();
					v.parallel = par;
					v.pos = rot ? POS_ROPE : POS_LEARNED;
					v.rotary = rot == 1 ? 4 : 0;
					v.heads = rot == 1 ? 2 : TH;
					v.mlp = mlps[mi];
					v.kv = (rot + mi) % 2 ? v.heads / 2 : v.heads;
					v.bias = (par + mi) % 2 == 0;
					v.tied = (rot + sw) % 2 == 0;
					v.no_residual = sw == 1;
					v.no_mlp = sw == 2;
					struct model *m = make_model(&v, 7000u + (uint64_t)(par * 100 + rot * 30 +
										       mi * 10 + sw));
					for (int rp = 0; rp < 2; rp++)
						for (int mk = 0; mk < 4; mk++)
							for (int gi = 0; gi < 2; gi++) {
						struct run_options o;
						base_options(m, &o);
						o.kv_heads = gi ? 1 : v.kv;
						o.placement = rp ? PLACE_POST : PLACE_PRE;
						o.mask = masks[mk];
						o.window = 2;
						o.scale = (mk + gi) % 3 != 2;
						if ((rp + mk + gi) % 2)
							opt_set_ablated(&o, 0 * TH + 1, true);
						unsigned flags = (mk + gi) % 2 ? (RUN_LOGITS | RUN_ATTN | RUN_TRAIN)
									       : (RUN_LOGITS | RUN_ATTN);
						runs++;
						if (!check_against_ref(m, &v, &o, flags, test_tokens, TT))
							failures++;
					}
					model_free(m);
				}
	engine_set_threads(0);
	print_message("neox architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The run options every architecture test sweeps, against the reference:
 * placements pre and post (pre only when !both), every run mask (a window
 * of 2), G = v->kv or g_alt, the scale off on a third of them, head 1.1
 * ablated on half, the no-transpose pitfall once (when no_transpose) and
 * eps0 once (when eps0), the saved activations (RUN_TRAIN) on half.
 * Adds the runs to *runs; returns the mismatches. */
static int check_option_grid(struct model *m, const struct variant *v, int g_alt, bool both,
			     bool no_transpose, bool eps0, int *runs)
{
	static const enum mask_kind masks[4] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW,
						 MASK_AFTER_SOFTMAX };
	int failures = 0;
	for (int rp = 0; rp < (both ? 2 : 1); rp++)
		for (int mk = 0; mk < 4; mk++)
			for (int gi = 0; gi < 2; gi++) {
				struct run_options o;
				base_options(m, &o);
				o.kv_heads = gi ? g_alt : v->kv;
				o.placement = rp ? PLACE_POST : PLACE_PRE;
				o.mask = masks[mk];
				o.window = 2;
				o.scale = (mk + gi) % 3 != 2;
				if ((rp + mk + gi) % 2)
					opt_set_ablated(&o, 1 * m->cfg.n_head + 1, true);
				if (no_transpose && mk == 1 && gi == 1)
					o.pitfall = PITFALL_NO_TRANSPOSE;
				if (eps0 && mk == 3 && gi == 0)
					o.pitfall = PITFALL_EPS0;
				unsigned flags = (mk + gi) % 2 ? (RUN_LOGITS | RUN_ATTN | RUN_TRAIN)
							       : (RUN_LOGITS | RUN_ATTN);
				(*runs)++;
				if (!check_against_ref(m, v, &o, flags, test_tokens, TT))
					failures++;
			}
	return failures;
}

/* head_dim apart from d_model / n_head (Qwen3, Gemma): heads' width
 * H * D above C (4 x 8 = 32 over 16), below it (2 x 4 = 8) and with C not
 * divisible by H (3 x 6 = 18); native K = H or fewer, RoPE over all of D
 * or 4 of 8, SwiGLU / GELU, every run mask and placement, G = K or 1, an
 * ablation, the no-transpose pitfall, the saved activations (RUN_TRAIN)
 * against the reference. */
static void test_headdim_architectures(void **s)
{
	(void)s;
	static const struct { int heads, head_dim, kv, rotary; } shapes[] = {
		{ 4, 8, 2, 0 }, { 4, 8, 4, 4 }, { 2, 4, 1, 0 }, { 3, 6, 3, 0 }, { 3, 6, 1, 2 },
	};
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
		for (int pos = 0; pos < 2; pos++) {
			struct variant v = default_variant();
			v.heads = shapes[si].heads;
			v.head_dim = shapes[si].head_dim;
			v.kv = shapes[si].kv;
			v.pos = pos || shapes[si].rotary ? POS_ROPE : POS_LEARNED;
			v.rotary = shapes[si].rotary;
			v.norm = pos ? NORM_RMS : NORM_LAYER;
			v.mlp = (si + pos) % 2 ? MLP_SWIGLU : MLP_GELU;
			v.bias = pos == 0;
			v.tied = si % 2 == 0;
			v.place = si == 2 ? PLACE_POST : PLACE_PRE;
			struct model *m = make_model(&v, 9100u + (uint64_t)(si * 10 + pos));
			assert_int_equal(cfg_attn_width(&m->cfg), v.heads * v.head_dim);
			failures += check_option_grid(m, &v, 1, true, true, false, &runs);
			model_free(m);
		}
	engine_set_threads(0);
	print_message("head_dim architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* Qwen3's q/k norm: an RMSNorm of every query and key head before RoPE,
 * on heads as wide as d_model / H or apart from it (4 x 8 over 16), RoPE
 * over all of D or half of it, learned positions, native GQA; every run
 * mask and placement, G = K or 1 (the norm then reads the converted key
 * heads), scale off, an ablation, the no-transpose and eps0 pitfalls and
 * the saved activations against the reference. */
static void test_qknorm_architectures(void **s)
{
	(void)s;
	static const struct { int heads, head_dim, kv, rotary; enum pos_type pos; } shapes[] = {
		{ 4, 0, 2, 0, POS_ROPE }, { 4, 8, 2, 4, POS_ROPE }, { 2, 0, 2, 0, POS_LEARNED },
	};
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		struct variant v = default_variant();
		v.qk_norm = true;
		v.heads = shapes[si].heads;
		v.head_dim = shapes[si].head_dim;
		v.kv = shapes[si].kv;
		v.pos = shapes[si].pos;
		v.rotary = shapes[si].rotary;
		v.norm = si == 2 ? NORM_LAYER : NORM_RMS;
		v.mlp = si == 2 ? MLP_GELU : MLP_SWIGLU;
		v.bias = si != 0;
		v.tied = si == 1;
		struct model *m = make_model(&v, 9300u + (uint64_t)si);
		failures += check_option_grid(m, &v, 1, true, true, true, &runs);
		model_free(m);
	}
	engine_set_threads(0);
	print_message("q/k norm architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* Gemma 2's switches together (test_forward's variant.gemma): token
 * embeddings times sqrt(C), the sandwich norms around both sub-blocks,
 * scores and logits soft-capped (at 2 and 3, well inside tanh's bend for
 * these weights), the scale 1/sqrt(6) in place of 1/sqrt(D), GeGLU; even
 * layers local over 3 keys (shorter than the text) as Gemma 2 alternates
 * them; heads as wide as C / H or apart from it, GQA; every run mask and
 * placement, G = K or 1, scale off, an ablation, the eps0 pitfall, the
 * saved activations, and once as Gemma 3: the q/k norm, the global layer
 * on RoPE base 100 scaled linearly by 4, the local one on base 10000
 * unscaled (rope_local_theta). */
static void test_gemma_architectures(void **s)
{
	(void)s;
	static const struct { int heads, head_dim, kv; bool qk; } shapes[] = {
		{ 4, 0, 2, false }, { 4, 8, 1, false }, { 2, 0, 2, true },
	};
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		struct variant v = rope_variant(MLP_GEGLU);
		v.gemma = true;
		v.qk_norm = shapes[si].qk;
		v.heads = shapes[si].heads;
		v.head_dim = shapes[si].head_dim;
		v.kv = shapes[si].kv;
		v.tied = si != 1;
		v.local_window = 3;
		v.local_bits = 1u; /* layer 0 local, layer 1 global */
		struct model *m = make_model(&v, 9400u + (uint64_t)si);
		failures += check_option_grid(m, &v, 1, true, false, true, &runs);
		model_free(m);
	}
	engine_set_threads(0);
	print_message("gemma architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* OLMo-2's blocks: no norm before either sub-block, the sandwich norms
 * after them, one RMSNorm over all query heads and one over all key
 * heads (before RoPE); MHA and GQA (2 of 4), heads as wide as C / H or
 * apart from it; every run mask, G = K or H (whole multiples: the key norm
 * spans the native key heads), scale off, an ablation, the eps0 pitfall
 * and the saved activations against the reference; a conversion to fewer
 * K/V heads, another placement and the no-transpose pitfall refused. */
static void test_olmo2_architectures(void **s)
{
	(void)s;
	static const struct { int kv, head_dim; } shapes[] = { { 4, 0 }, { 2, 0 }, { 2, 8 } };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		struct variant v = rope_variant(MLP_SWIGLU);
		v.olmo = true;
		v.kv = shapes[si].kv;
		v.head_dim = shapes[si].head_dim;
		v.tied = si == 1;
		struct model *m = make_model(&v, 9500u + (uint64_t)si);
		failures += check_option_grid(m, &v, TH, false, false, true, &runs);
		struct run_options o;
		struct err e;
		base_options(m, &o);
		o.placement = PLACE_POST;
		assert_int_equal(run_options_validate(m, &o, &e), -1);
		assert_non_null(strstr(e.msg, "placement stays native"));
		base_options(m, &o);
		o.kv_heads = 1;
		assert_int_equal(run_options_validate(m, &o, &e), -1);
		assert_non_null(strstr(e.msg, "key norm spans"));
		base_options(m, &o);
		o.pitfall = PITFALL_NO_TRANSPOSE;
		assert_int_equal(run_options_validate(m, &o, &e), -1);
		model_free(m);
	}
	engine_set_threads(0);
	print_message("olmo2 architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The engine's pass over T tokens against the reference of config rc
 * (m's weights): the worst |engine - ref| / tolerance of logits and
 * attention. */
static double ratio_vs_config(struct model *m, const struct model_config *rc, int T)
{
	struct run_options o;
	base_options(m, &o);
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	struct err e;
	assert_int_equal(model_forward(m, &o, test_tokens, NULL, 1, T, r, &e), 0);
	double *rl = malloc(sizeof(double) * T * TV);
	double *ra = malloc(sizeof(double) * TL * TH * T * T);
	assert_non_null(rl);
	assert_non_null(ra);
	struct model_config saved = m->cfg;
	m->cfg = *rc;
	assert_int_equal(ref_forward(m, &o, test_tokens, T, rl, ra, NULL), 0);
	m->cfg = saved;
	double worst = 0.0;
	for (int i = 0; i < T * TV; i++)
		worst = fmax(worst, fabs(run_logits(r)[i] - rl[i]) / (ABS_TOL + REL_TOL * fabs(rl[i])));
	for (int l = 0; l < TL; l++)
		for (int h = 0; h < TH; h++)
			for (int i = 0; i < T * T; i++) {
				double a = run_att(r, l, 0, h)[i], b = ra[((size_t)l * TH + h) * T * T + i];
				worst = fmax(worst, fabs(a - b) / (ABS_TOL + REL_TOL * fabs(b)));
			}
	free(rl);
	free(ra);
	run_free(r);
	return worst;
}

/* Phi-3's LongRoPE (longrope_config, original context 4) on heads of 8:
 * RoPE over all of D or 4 of it (Phi-4-mini's partial rotary), MHA and
 * native GQA; a text of 4 tokens (the short table) and of 7 (the long
 * one), each under the native options, post-norm, G = 1, a window, scale
 * off, an ablation, the no-transpose pitfall, and the saved activations,
 * against the reference.  The comparison sees each part: the reference
 * with the other table, or without the attention factor, is far away. */
static void test_longrope_architectures(void **s)
{
	(void)s;
	static const struct { int rotary, kv; } shapes[] = { { 0, 4 }, { 4, 2 } };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		struct variant v = rope_variant(MLP_SWIGLU);
		v.longrope = true;
		v.head_dim = 8;
		v.rotary = shapes[si].rotary;
		v.kv = shapes[si].kv;
		v.tied = si == 1;
		struct model *m = make_model(&v, 9600u + (uint64_t)si);
		for (int T = LR_ORIG; T <= TT; T += TT - LR_ORIG)
			for (int k = 0; k < 7; k++) {
				struct run_options o;
				base_options(m, &o);
				o.placement = k == 1 ? PLACE_POST : PLACE_PRE;
				o.kv_heads = k == 2 ? 1 : v.kv;
				o.mask = k == 3 ? MASK_WINDOW : MASK_CAUSAL;
				o.window = 2;
				o.scale = k != 4;
				if (k == 5)
					opt_set_ablated(&o, 1 * TH + 1, true);
				if (k == 6)
					o.pitfall = PITFALL_NO_TRANSPOSE;
				unsigned flags = RUN_LOGITS | RUN_ATTN | (k % 2 ? RUN_TRAIN : 0);
				runs++;
				if (!check_against_ref(m, &v, &o, flags, test_tokens, T))
					failures++;
			}
		struct model_config other = m->cfg; /* the reference on the short table at T = 7 */
		other.rope_orig_context = TT;
		double w_table = ratio_vs_config(m, &other, TT);
		other = m->cfg; /* and on the long table at T = 4 */
		other.rope_orig_context = LR_ORIG - 1;
		double w_short = ratio_vs_config(m, &other, LR_ORIG);
		other = m->cfg;
		other.rope_attn_factor = 1.0f;
		double w_factor = ratio_vs_config(m, &other, TT);
		print_message("longrope rot=%d: the reference with the other table is %.0f / %.0f "
			      "tolerances off, without the attention factor %.0f\n", v.rotary, w_table,
			      w_short, w_factor);
		assert_true(w_table > 100.0 && w_short > 100.0 && w_factor > 100.0);
		model_free(m);
	}
	engine_set_threads(0);
	print_message("longrope architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The mean NLL of next-token targets (T - 1 of them) from the reference
 * logits (T, V). */
static double ref_next_token_loss(const double *logits, const int *tokens, int T, int V)
{
	double sum = 0.0;
	for (int t = 0; t + 1 < T; t++) {
		const double *z = logits + (size_t)t * V;
		double mx = z[0], se = 0.0;
		for (int v = 1; v < V; v++)
			mx = z[v] > mx ? z[v] : mx;
		for (int v = 0; v < V; v++)
			se += exp(z[v] - mx);
		sum += mx + log(se) - z[tokens[t + 1]];
	}
	return sum / (T - 1);
}

static struct run *forward_ok(struct model *m, const struct run_options *o, unsigned flags,
			      const int *tokens, int T);

/* GPT-Neo: local layers (window 3 keys, shorter than the 7 tokens) beside
 * global ones, either order, native scale off; every run mask, placement,
 * G, scale and an ablation against the reference's local layers, and the
 * loss against the reference logits' next-token NLL. */
static void test_neo_architectures(void **s)
{
	(void)s;
	static const enum mask_kind masks[4] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW,
						 MASK_AFTER_SOFTMAX };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (int bits = 1; bits <= 2; bits++) /* layer 0 local, or layer 1 (GPT-Neo's order) */
		for (int mi = 0; mi < 2; mi++) {
			struct variant v = default_variant();
			v.local_window = 3;
			v.local_bits = (unsigned)bits;
			v.no_scale = true;
			v.mlp = mi ? MLP_GELU_EXACT : MLP_GELU;
			v.tied = mi == 0;
			struct model *m = make_model(&v, 9100u + (uint64_t)(bits * 10 + mi));
			/* GPT-Neo's Q/K/V carry no bias */
			memset(m->p[P_QKVB], 0, m->psize[P_QKVB] * sizeof(float));
			for (int rp = 0; rp < 2; rp++)
				for (int mk = 0; mk < 5; mk++)
					for (int gi = 0; gi < 2; gi++) {
						struct run_options o;
						base_options(m, &o);
						o.kv_heads = gi ? 2 : TH;
						o.placement = rp ? PLACE_POST : PLACE_PRE;
						o.mask = masks[mk % 4];
						o.window = mk == 4 ? 1 : 5; /* narrower, wider than 3 keys */
						o.scale = (mk + gi) % 3 == 2;
						if ((rp + mk + gi) % 2)
							opt_set_ablated(&o, 1 * TH + 2, true);
						unsigned flags = gi ? (RUN_LOGITS | RUN_ATTN | RUN_TRAIN)
								    : (RUN_LOGITS | RUN_ATTN);
						runs++;
						if (!check_against_ref(m, &v, &o, flags, test_tokens, TT))
							failures++;
					}
			/* the loss of the native pass */
			struct run_options o;
			base_options(m, &o);
			double *rl = malloc(sizeof(double) * TT * TV);
			assert_non_null(rl);
			assert_int_equal(ref_forward(m, &o, test_tokens, TT, rl, NULL, NULL), 0);
			double want = ref_next_token_loss(rl, test_tokens, TT, TV);
			struct run *r = forward_ok(m, &o, RUN_LOGITS, test_tokens, TT);
			double d = fabs((double)r->loss - want);
			if (!(d <= ABS_TOL + REL_TOL * want)) {
				print_error("neo loss: engine %.9g ref %.9g\n", (double)r->loss, want);
				failures++;
			}
			if (d > g_max_err_logits)
				g_max_err_logits = d;
			run_free(r);
			free(rl);
			model_free(m);
		}
	engine_set_threads(0);
	print_message("neo architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The mean NLL an encoder's pass reports without targets: each token at
 * its own position, from the reference logits (T, V). */
static double ref_reconstruction_loss(const double *logits, const int *tokens, int T, int V)
{
	double sum = 0.0;
	for (int t = 0; t < T; t++) {
		const double *z = logits + (size_t)t * V;
		double mx = z[0], se = 0.0;
		for (int j = 1; j < V; j++)
			mx = z[j] > mx ? z[j] : mx;
		for (int j = 0; j < V; j++)
			se += exp(z[j] - mx);
		sum += mx + log(se) - z[tokens[t]];
	}
	return sum / T;
}

/* BERT's pieces: an embedding norm, the masked-LM head (no final norm),
 * with and without each other, biases and tying, LayerNorm or RMSNorm,
 * natively post-norm with exact GELU and no mask; run under both
 * placements, every mask, converted K/V heads and ablation.  The encoder's
 * loss without targets is each token's own NLL. */
static void test_bert_architectures(void **s)
{
	(void)s;
	static const enum mask_kind masks[4] = { MASK_NONE, MASK_CAUSAL, MASK_WINDOW,
						 MASK_AFTER_SOFTMAX };
	int failures = 0, runs = 0;
	engine_set_threads(1);
	for (int en = 0; en < 2; en++)
		for (int hd = 0; hd < 2; hd++)
			for (int bt = 0; bt < 4; bt++) { /* bias x tied */
				struct variant v = default_variant();
				v.emb_norm = en;
				v.mlm = hd;
				v.bias = bt & 1;
				v.tied = bt & 2;
				v.norm = (en + hd + bt) % 3 == 2 ? NORM_RMS : NORM_LAYER;
				v.place = PLACE_POST;
				v.mlp = MLP_GELU_EXACT;
				v.kv = (en + bt) % 2 ? TH / 2 : TH;
				struct model *m = make_model(&v, 9100u + (uint64_t)(en * 40 + hd * 10 + bt));
				m->cfg.mask = MASK_NONE;
				for (int rp = 0; rp < 2; rp++)
					for (int mk = 0; mk < 4; mk++) {
						struct run_options o;
						base_options(m, &o);
						assert_int_equal(o.mask, MASK_NONE);
						o.kv_heads = (rp + mk) % 2 ? 1 : v.kv;
						o.placement = rp ? PLACE_PRE : PLACE_POST;
						o.mask = masks[mk];
						o.window = 2;
						if (mk == 3)
							opt_set_ablated(&o, 1 * TH + 2, true);
						unsigned flags = mk % 2 ? (RUN_LOGITS | RUN_ATTN | RUN_TRAIN)
									: (RUN_LOGITS | RUN_ATTN);
						runs++;
						if (!check_against_ref(m, &v, &o, flags, test_tokens, TT))
							failures++;
					}
				/* the native run's loss: reconstruction for an encoder */
				struct run_options o;
				base_options(m, &o);
				double *rl = malloc(sizeof(double) * TT * TV);
				assert_non_null(rl);
				assert_int_equal(ref_forward(m, &o, test_tokens, TT, rl, NULL, NULL), 0);
				struct run *r = run_new(&m->cfg, 1, TT, RUN_LOGITS);
				struct err e = { { 0 } };
				assert_int_equal(model_forward(m, &o, test_tokens, NULL, 1, TT, r, &e), 0);
				if (hd) {
					assert_int_equal(r->n_targets, TT);
					double want = ref_reconstruction_loss(rl, test_tokens, TT, TV);
					if (!(fabs(r->loss - want) <= ABS_TOL + REL_TOL * fabs(want))) {
						print_error("mlm loss %.9g, reference %.9g\n", r->loss, want);
						failures++;
					}
					/* a bidirectional encoder cannot be decoded */
					struct decoder *d = decoder_new(m, &o, 0, &e);
					assert_null(d);
					assert_non_null(strstr(e.msg, "encoder"));
					assert_null(strchr(e.msg, '\n'));
				} else {
					assert_int_equal(r->n_targets, TT - 1);
				}
				run_free(r);
				free(rl);
				model_free(m);
			}
	engine_set_threads(0);
	print_message("bert architectures: %d runs, %d mismatches\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The new fields' checks: post-norm with parallel blocks, rotary_dims odd,
 * above D, or without RoPE are refused, each naming its field. */
static void test_neox_config_checks(void **s)
{
	(void)s;
	struct variant v = default_variant();
	struct model_config c;
	struct err e = { { 0 } };
	tiny_config(&c, &v);
	c.parallel = true;
	assert_int_equal(config_validate(&c, &e), 0);
	c.placement = PLACE_POST;
	assert_int_equal(config_validate(&c, &e), -1);
	assert_non_null(strstr(e.msg, "parallel"));
	tiny_config(&c, &v);
	c.rotary_dims = 2;
	assert_int_equal(config_validate(&c, &e), -1); /* learned positions */
	assert_non_null(strstr(e.msg, "rotary_dims"));
	c.pos = POS_ROPE;
	assert_int_equal(config_validate(&c, &e), 0);
	int bad[3] = { 3, 6, -2 }; /* odd, above D = 4, negative */
	for (int i = 0; i < 3; i++) {
		c.rotary_dims = bad[i];
		assert_int_equal(config_validate(&c, &e), -1);
		assert_non_null(strstr(e.msg, "rotary_dims"));
	}
	c.rotary_dims = 0;
	c.mlp = (enum mlp_type)(MLP_GEGLU + 1);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_string_equal(mlp_type_name(MLP_GELU_EXACT), "gelu-exact");
	enum mlp_type t;
	assert_int_equal(mlp_type_parse("gelu-exact", &t), 0);
	assert_int_equal(t, MLP_GELU_EXACT);
	assert_int_equal(mlp_type_parse("geglu", &t), 0);
	assert_int_equal(t, MLP_GEGLU);
	/* Gemma 2's switches: negative or non-finite values, sandwich norms on LayerNorm */
	struct model_config g = c;
	g.mlp = MLP_GEGLU;
	assert_int_equal(config_validate(&g, &e), 0);
	g.attn_softcap = -1.0f;
	assert_int_equal(config_validate(&g, &e), -1);
	assert_non_null(strstr(e.msg, "soft-capping"));
	g.attn_softcap = 0.0f;
	g.emb_scale = NAN;
	assert_int_equal(config_validate(&g, &e), -1);
	assert_non_null(strstr(e.msg, "emb_scale"));
	g.emb_scale = 0.0f;
	g.sandwich = true;
	g.norm = NORM_LAYER;
	assert_int_equal(config_validate(&g, &e), -1);
	assert_non_null(strstr(e.msg, "sandwich"));
}

static void test_matrix_layer_learned(void **s) { (void)s; run_matrix(NORM_LAYER, POS_LEARNED); }
static void test_matrix_layer_rope(void **s) { (void)s; run_matrix(NORM_LAYER, POS_ROPE); }
static void test_matrix_rms_learned(void **s) { (void)s; run_matrix(NORM_RMS, POS_LEARNED); }
static void test_matrix_rms_rope(void **s) { (void)s; run_matrix(NORM_RMS, POS_ROPE); }

/* A run allocated for (B=2, T=7) reused for smaller passes, and a batch of
 * two different sequences: every batch entry must match the reference. */
static void test_batch_and_reuse(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.pos = POS_ROPE;
	v.kv = 2;
	struct model *m = make_model(&v, 77);
	engine_set_threads(0); /* every core: the threaded kernels against the reference */
	struct run *r = run_new(&m->cfg, 2, TT, RUN_LOGITS | RUN_ATTN);
	static const int shapes[][2] = { { 2, 7 }, { 2, 5 }, { 1, 7 }, { 1, 3 }, { 2, 7 } };
	int tokens[2 * TT];
	for (int i = 0; i < 2 * TT; i++)
		tokens[i] = (i * 5 + 3) % TV;
	struct run_options o;
	base_options(m, &o);
	o.kv_heads = 1;
	int failures = 0;
	for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
		int B = shapes[si][0], T = shapes[si][1];
		int tk[2 * TT];
		for (int b = 0; b < B; b++)
			for (int t = 0; t < T; t++)
				tk[b * T + t] = tokens[b * TT + t];
		struct err e = { { 0 } };
		assert_int_equal(model_forward(m, &o, tk, NULL, B, T, r, &e), 0);
		assert_int_equal(r->b, B);
		assert_int_equal(r->t, T);
		for (int b = 0; b < B; b++) {
			double rl[TT * TV], ra[TL * TH * TT * TT];
			assert_int_equal(ref_forward(m, &o, tk + b * T, T, rl, ra, NULL), 0);
			char combo[128];
			snprintf(combo, sizeof combo, "batch/reuse pass B=%d T=%d, entry b=%d", B, T, b);
			int ls[2] = { T, TV };
			failures += !compare("logits (t,v)", combo, run_logits(r) + (size_t)b * T * TV, rl,
					     (size_t)T * TV, ls, 2, &g_max_err_logits);
			for (int l = 0; l < TL; l++)
				for (int h = 0; h < TH; h++) {
					int as[2] = { T, T };
					char what[64];
					snprintf(what, sizeof what, "attention l=%d h=%d (i,j)", l, h);
					failures += !compare(what, combo, run_att(r, l, b, h),
							     ra + ((size_t)l * TH + h) * T * T,
							     (size_t)T * T, as, 2, &g_max_err_att);
				}
		}
	}
	run_free(r);
	model_free(m);
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------- b. invariants */

static struct run *forward_ok(struct model *m, const struct run_options *o, unsigned flags,
			      const int *tokens, int T)
{
	struct run *r = run_new(&m->cfg, 1, T, flags);
	struct err e = { { 0 } };
	int rc = model_forward(m, o, tokens, NULL, 1, T, r, &e);
	if (rc != 0) {
		print_error("model_forward: %s\n", e.msg);
		fail();
	}
	return r;
}

static void test_attention_rows_sum_to_one(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.kv = 2;
	struct model *m = make_model(&v, 5);
	double worst = 0.0;
	for (int mk = 0; mk < 5; mk++) {
		struct run_options o;
		base_options(m, &o);
		o.mask = mk == 0 ? MASK_CAUSAL : mk == 1 ? MASK_NONE : MASK_WINDOW;
		o.window = mk == 2 ? 0 : mk == 3 ? 2 : 100;
		struct run *r = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++) {
				const float *a = run_att(r, l, 0, h);
				for (int i = 0; i < TT; i++) {
					double sum = 0.0;
					for (int j = 0; j < TT; j++) {
						assert_true(a[i * TT + j] >= 0.0f);
						sum += a[i * TT + j];
					}
					if (fabs(sum - 1.0) > worst)
						worst = fabs(sum - 1.0);
					if (fabs(sum - 1.0) > 1e-5) {
						print_error("mask %d window %d: row l=%d h=%d i=%d sums to %.9g\n",
							    o.mask, o.window, l, h, i, sum);
						fail();
					}
				}
			}
		run_free(r);
	}
	print_message("row sums: worst |sum-1| = %.3g\n", worst);
	model_free(m);
}

/* Attention with its heads split over the engine's two threads (ops.h:
 * struct attn_spec's own, what every pass but a training one runs;
 * attnmm.h's products where they are built, OpenBLAS's for a head size
 * past ATTNMM_MAX_D) gives every head's weights and output within 1e-6 of
 * the one-thread loop's through OpenBLAS, for head sizes 16 and
 * ATTNMM_MAX_D + 8, with padding and a masked-heads count below H, and
 * for one sequence's queries from row q0 on; OpenBLAS's thread count is
 * as it was after. */
static void check_attention_own(int D)
{
	enum { B = 2, T = 37, H = 6, G = 2 };
	int LD = (H + 2 * G) * D;
	float scale = 1.0f / sqrtf((float)D);
	static const int key_len[B] = { T, 20 };
	float *qkv = xmalloc(sizeof(float) * B * T * LD);
	float *out[2], *att[2];
	struct rng r;
	rng_seed(&r, 37);
	for (int i = 0; i < B * T * LD; i++)
		qkv[i] = rng_uniform(&r) - 0.5f;
	for (int q0 = 0; q0 <= 5; q0 += 5) {
		for (int k = 0; k < 2; k++) {
			out[k] = xcalloc((size_t)B * T * H * D, sizeof(float));
			att[k] = xcalloc((size_t)B * H * T * T, sizeof(float));
			engine_set_threads(k ? 2 : 1);
			struct attn_spec s = { q0 ? 1 : B, T, q0, H, G, D, MASK_CAUSAL, 0, scale, 0.0f,
					       q0 ? NULL : key_len, q0 ? H : 4, k == 1 };
			attention_run(&s, out[k], att[k], NULL, qkv);
			if (k)
				assert_int_equal(openblas_get_num_threads(), 2);
		}
		engine_set_threads(0);
		for (int i = 0; i < B * T * H * D; i++)
			if (fabsf(out[0][i] - out[1][i]) > 1e-6f)
				fail_msg("D %d q0 %d: out[%d] %.9g on one thread, %.9g split", D, q0, i,
					 (double)out[0][i], (double)out[1][i]);
		for (int i = 0; i < B * H * T * T; i++)
			if (fabsf(att[0][i] - att[1][i]) > 1e-6f)
				fail_msg("D %d q0 %d: att[%d] %.9g on one thread, %.9g split", D, q0, i,
					 (double)att[0][i], (double)att[1][i]);
		for (int k = 0; k < 2; k++) {
			free(out[k]);
			free(att[k]);
		}
	}
	free(qkv);
}

static void test_attention_own_threads(void **s)
{
	(void)s;
	check_attention_own(16);
	check_attention_own(ATTNMM_MAX_D + 8);
}

/* An F32 product on the engine's own threads (ops.h: matmul_w's own, what
 * every pass but a training one runs where gemmw.h is built): for widths
 * with no 16-column step (7), one (16), a tail (43, 901) and three
 * 1024-column chunks with a tail (2053), and row
 * counts around its 5 x 5 tiles and the split's minimum of 16, each
 * element meets a double-precision product within 1e-5 relative to the
 * row's absolute sum, and equals bit for bit the same element made on one
 * thread and made alone (gemmw_rows of one weight row by one input row);
 * the bias is added; OpenBLAS's product (own false) meets the reference
 * too, and the product leaves OpenBLAS's thread count as it was.  Passes
 * take the path, training ones not (run_own_threads). */
static void test_matmul_own(void **s)
{
	(void)s;
	if (!gemmw_available()) {
		printf("  skipped: gemmw is not built on this machine (no AVX-512F)\n");
		return;
	}
	static const int widths[] = { 7, 16, 43, 901, 2053 }, rows_of[] = { 3, 16, 37 };
	static const int ns[] = { 2, 5, 33 };
	struct rng r;
	rng_seed(&r, 901);
	for (int c = 0; c < 5; c++)
		for (int q = 0; q < 3; q++) {
			int IC = widths[c], OC = rows_of[q], N = ns[(c + q) % 3];
			float *w = xmalloc((size_t)OC * IC * sizeof *w), *b = xmalloc((size_t)OC * sizeof *b);
			float *in = xmalloc((size_t)N * IC * sizeof *in), *out[3];
			for (int i = 0; i < OC * IC; i++)
				w[i] = rng_uniform(&r) - 0.5f;
			for (int i = 0; i < OC; i++)
				b[i] = rng_uniform(&r) - 0.5f;
			for (int i = 0; i < N * IC; i++)
				in[i] = rng_uniform(&r) - 0.5f;
			for (int k = 0; k < 3; k++) { /* own on two threads, on one; OpenBLAS's */
				out[k] = xmalloc((size_t)N * OC * sizeof(float));
				engine_set_threads(k == 1 ? 1 : 2);
				matmul_w(out[k], in, (struct wmat){ w, NULL }, b, N, IC, OC, k < 2);
				assert_int_equal(openblas_get_num_threads(), k == 1 ? 1 : 2);
			}
			engine_set_threads(0);
			for (int i = 0; i < N; i++)
				for (int j = 0; j < OC; j++) {
					double want = b[j], mag = fabs(b[j]);
					for (int k = 0; k < IC; k++) {
						want += (double)in[i * IC + k] * w[j * IC + k];
						mag += fabs((double)in[i * IC + k] * w[j * IC + k]);
					}
					float one;
					gemmw_rows(&one, 1, in + (size_t)i * IC, 1, IC,
						   (const unsigned char *)(w + (size_t)j * IC), (size_t)IC * 4,
						   GGML_F32, 0, 1);
					size_t at = (size_t)i * OC + j;
					for (int k = 0; k < 3; k++)
						if (fabs(out[k][at] - want) > 1e-5 * mag)
							fail_msg("%d x %d, N %d, %s: out[%d][%d] %.9g, want %.9g", OC,
								 IC, N, k == 2 ? "OpenBLAS" : "own", i, j,
								 (double)out[k][at], want);
					if (out[0][at] != out[1][at] || out[0][at] != one + b[j])
						fail_msg("%d x %d, N %d: out[%d][%d] %.9g split, %.9g on one "
							 "thread, %.9g alone", OC, IC, N, i, j, (double)out[0][at],
							 (double)out[1][at], (double)(one + b[j]));
				}
			for (int k = 0; k < 3; k++)
				free(out[k]);
			free(w);
			free(b);
			free(in);
		}
	assert_true(run_own_threads(RUN_LOGITS | RUN_ATTN));
	assert_false(run_own_threads(RUN_LOGITS | RUN_TRAIN));
}

static void test_causal_zero_above_diagonal(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.pos = POS_ROPE;
	struct model *m = make_model(&v, 6);
	for (int G = 4; G >= 1; G /= 2) {
		struct run_options o;
		base_options(m, &o);
		o.kv_heads = G;
		o.mask = MASK_CAUSAL;
		struct run *r = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++) {
				const float *a = run_att(r, l, 0, h);
				for (int i = 0; i < TT; i++)
					for (int j = i + 1; j < TT; j++)
						if (a[i * TT + j] != 0.0f) {
							print_error("G=%d l=%d h=%d: att[%d][%d] = %g, not 0\n",
								    G, l, h, i, j, a[i * TT + j]);
							fail();
						}
			}
		run_free(r);
	}
	model_free(m);
}

static void test_window_zero_outside(void **s)
{
	(void)s;
	struct variant v = default_variant();
	struct model *m = make_model(&v, 8);
	for (int N = 0; N <= TT; N++) {
		struct run_options o;
		base_options(m, &o);
		o.mask = MASK_WINDOW;
		o.window = N;
		struct run *r = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++) {
				const float *a = run_att(r, l, 0, h);
				for (int i = 0; i < TT; i++)
					for (int j = 0; j < TT; j++) {
						bool outside = j < i - N || j > i;
						if (outside && a[i * TT + j] != 0.0f) {
							print_error("window %d l=%d h=%d: att[%d][%d] = %g, not 0\n",
								    N, l, h, i, j, a[i * TT + j]);
							fail();
						}
						if (!outside && !(a[i * TT + j] > 0.0f)) {
							print_error("window %d l=%d h=%d: att[%d][%d] = %g inside the window\n",
								    N, l, h, i, j, a[i * TT + j]);
							fail();
						}
					}
			}
		/* window 0: each query sees only itself */
		if (N == 0)
			for (int i = 0; i < TT; i++)
				assert_true(run_att(r, 0, 0, 0)[i * TT + i] == 1.0f);
		run_free(r);
	}
	model_free(m);
}

static void test_gqa_full_equals_mha(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.pos = POS_ROPE;
	v.kv = TH;
	struct model *m = make_model(&v, 9);
	struct run_options nat, o;
	base_options(m, &nat);
	o = nat;
	o.kv_heads = TH;
	struct run *r0 = forward_ok(m, &nat, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
	struct run *r1 = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
	/* populate the cache with another G, then G = H again */
	o.kv_heads = 2;
	struct run *rx = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
	run_free(rx);
	o.kv_heads = TH;
	struct run *r2 = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
	size_t nl = sizeof(float) * TT * TV;
	assert_memory_equal(run_logits(r0), run_logits(r1), nl);
	assert_memory_equal(run_logits(r0), run_logits(r2), nl);
	for (int l = 0; l < TL; l++)
		for (int h = 0; h < TH; h++) {
			assert_memory_equal(run_att(r0, l, 0, h), run_att(r1, l, 0, h), sizeof(float) * TT * TT);
			assert_memory_equal(run_att(r0, l, 0, h), run_att(r2, l, 0, h), sizeof(float) * TT * TT);
		}
	run_free(r0);
	run_free(r1);
	run_free(r2);
	model_free(m);
}

static void test_mqa_identical_heads_equals_mha(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.kv = TH;
	v.bias = true;
	const int D = TC / TH, QKV = (TH + 2 * TH) * D;
	for (int pos = 0; pos < 2; pos++) {
		v.pos = pos ? POS_ROPE : POS_LEARNED;
		struct model *m = make_model(&v, 10 + pos);
		for (int l = 0; l < TL; l++) {
			float *w = m->p[P_QKVW] + (size_t)l * QKV * TC;
			float *b = m->p[P_QKVB] + (size_t)l * QKV;
			for (int kh = 1; kh < TH; kh++) {
				int k0 = TH * D, v0 = 2 * TH * D; /* K rows, V rows (K = H) */
				memcpy(w + (size_t)(k0 + kh * D) * TC, w + (size_t)k0 * TC, sizeof(float) * D * TC);
				memcpy(w + (size_t)(v0 + kh * D) * TC, w + (size_t)v0 * TC, sizeof(float) * D * TC);
				memcpy(b + k0 + kh * D, b + k0, sizeof(float) * D);
				memcpy(b + v0 + kh * D, b + v0, sizeof(float) * D);
			}
		}
		model_clear_cache(m);
		struct run_options o;
		base_options(m, &o);
		struct run *ra = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
		o.kv_heads = 1;
		struct run *rb = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
		double worst_l = 0.0, worst_a = 0.0;
		for (int i = 0; i < TT * TV; i++) {
			double d = fabs((double)run_logits(ra)[i] - run_logits(rb)[i]);
			worst_l = d > worst_l ? d : worst_l;
		}
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++)
				for (int i = 0; i < TT * TT; i++) {
					double d = fabs((double)run_att(ra, l, 0, h)[i] - run_att(rb, l, 0, h)[i]);
					worst_a = d > worst_a ? d : worst_a;
				}
		print_message("MQA vs MHA (identical K/V heads, %s): max |d| logits %.3g, attention %.3g\n",
			      pos_type_name(v.pos), worst_l, worst_a);
		assert_true(worst_l <= 1e-6);
		assert_true(worst_a <= 1e-6);
		run_free(ra);
		run_free(rb);
		model_free(m);
	}
}

/* Ablating (l, h): blocks <= l see the same inputs, and layer l's att_res
 * changes by exactly that head's projected output. */
static void test_ablation_contribution(void **s)
{
	(void)s;
	const int D = TC / TH;
	const unsigned flags = RUN_LOGITS | RUN_ATTN | RUN_TRAIN;
	double worst = 0.0;
	for (int pl = 0; pl < 2; pl++)
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h += 3) {
				struct variant v = default_variant();
				v.place = pl ? PLACE_POST : PLACE_PRE;
				v.kv = 2;
				struct model *m = make_model(&v, 20 + pl);
				struct run_options o;
				base_options(m, &o);
				struct run *rf = forward_ok(m, &o, flags, test_tokens, TT);
				opt_set_ablated(&o, l * TH + h, true);
				struct run *ra = forward_ok(m, &o, flags, test_tokens, TT);
				size_t st = rf->lstride_c;
				assert_true(st >= (size_t)TT * TC);
				assert_int_equal(ra->lstride_c, st);
				/* resid[0..l] (packed by the pass's B*T): bit-identical */
				assert_memory_equal(rf->resid, ra->resid, sizeof(float) * (l + 1) * TT * TC);
				/* ... and resid[l+1] differs: the head mattered */
				assert_memory_not_equal(rf->resid + (size_t)(l + 1) * TT * TC,
							ra->resid + (size_t)(l + 1) * TT * TC,
							sizeof(float) * TT * TC);
				/* att_res(ablated) = att_res(full) - atty_h . W_O[:, h-slice]^T */
				const float *wo = m->p[P_ATTPROJW] + (size_t)l * TC * TC;
				const float *yf = rf->atty + l * st;
				for (int t = 0; t < TT; t++)
					for (int c = 0; c < TC; c++) {
						double contrib = 0.0;
						for (int d = 0; d < D; d++)
							contrib += (double)yf[t * TC + h * D + d] *
								   (double)wo[(size_t)c * TC + h * D + d];
						double want = (double)rf->att_res[l * st + t * TC + c] - contrib;
						double got = ra->att_res[l * st + t * TC + c];
						double d = fabs(got - want);
						worst = d > worst ? d : worst;
						if (d > 1e-5) {
							print_error("%s ablate %d.%d: att_res[t=%d][c=%d] = %.9g, want %.9g\n",
								    norm_place_name(v.place), l, h, t, c, got, want);
							fail();
						}
					}
				/* the ablation had an effect on the logits (sanity of the check) */
				assert_memory_not_equal(run_logits(rf), run_logits(ra), sizeof(float) * TT * TV);
				run_free(rf);
				run_free(ra);
				model_free(m);
			}
	print_message("ablation: max |att_res(abl) - (att_res(full) - contribution)| = %.3g\n", worst);
}

static void check_nll(const struct run *r, const int *targets, int T)
{
	double sum = 0.0;
	int n = 0;
	for (int t = 0; t < T; t++) {
		if (targets[t] < 0) {
			assert_true(isnan(r->nll[t]));
			continue;
		}
		const float *lg = run_logits(r) + (size_t)t * TV;
		double mx = -INFINITY;
		for (int k = 0; k < TV; k++)
			mx = lg[k] > mx ? lg[k] : mx;
		double z = 0.0;
		for (int k = 0; k < TV; k++)
			z += exp((double)lg[k] - mx);
		double want = -((double)lg[targets[t]] - mx - log(z));
		if (fabs(r->nll[t] - want) > 1e-5 + 1e-5 * fabs(want)) {
			print_error("nll[%d] = %.9g, want %.9g\n", t, (double)r->nll[t], want);
			fail();
		}
		sum += want;
		n++;
	}
	assert_int_equal(r->n_targets, n);
	double loss = sum / n;
	if (fabs(r->loss - loss) > 1e-5 + 1e-5 * fabs(loss)) {
		print_error("loss = %.9g, want %.9g\n", r->loss, loss);
		fail();
	}
}

/* model_forward_from: an ablation at layer l started from the unablated
 * pass's blocks before l gives model_forward's logits and loss bit for bit
 * (pre- and post-norm, a GQA conversion); options that differ before l,
 * or a start past the ablation, are refused. */
static void test_forward_from(void **s)
{
	(void)s;
	for (int pl = 0; pl < 2; pl++) {
		struct variant v = default_variant();
		v.place = pl ? PLACE_POST : PLACE_PRE;
		v.kv = 2;
		struct model *m = make_model(&v, 40 + pl);
		struct run_options o, ab;
		base_options(m, &o);
		struct run *base = forward_ok(m, &o, RUN_LOGITS, test_tokens, TT);
		struct run *r = run_new(&m->cfg, 1, TT, RUN_LOGITS);
		struct err e;
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++) {
				ab = o;
				opt_set_ablated(&ab, l * TH + h, true);
				struct run *want = forward_ok(m, &ab, RUN_LOGITS, test_tokens, TT);
				assert_int_equal(model_forward_from(m, &ab, test_tokens, NULL, base, l, r, &e), 0);
				assert_memory_equal(run_logits(r), run_logits(want), sizeof(float) * TT * TV);
				assert_memory_equal(r->resid, want->resid, sizeof(float) * (TL + 1) * TT * TC);
				assert_true(r->loss == want->loss);
				run_free(want);
			}
		/* an ablation before the start, or other options, are refused */
		ab = o;
		opt_set_ablated(&ab, 0, true);
		assert_int_equal(model_forward_from(m, &ab, test_tokens, NULL, base, 1, r, &e), -1);
		ab = o;
		ab.scale = !ab.scale;
		assert_int_equal(model_forward_from(m, &ab, test_tokens, NULL, base, TL, r, &e), -1);
		assert_non_null(strstr(e.msg, "options differ"));
		run_free(r);
		run_free(base);
		model_free(m);
	}
}

static void test_nll_and_loss(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.tied = false;
	struct model *m = make_model(&v, 30);
	struct run_options o;
	base_options(m, &o);
	/* NULL targets: tokens shifted left, last position has none */
	struct run *r = forward_ok(m, &o, RUN_LOGITS, test_tokens, TT);
	int shifted[TT];
	for (int t = 0; t < TT; t++)
		shifted[t] = t + 1 < TT ? test_tokens[t + 1] : -1;
	check_nll(r, shifted, TT);
	/* explicit targets with skipped positions */
	int targets[TT] = { 4, -1, 12, 0, -1, 9, 2 };
	struct err e = { { 0 } };
	assert_int_equal(model_forward(m, &o, test_tokens, targets, 1, TT, r, &e), 0);
	check_nll(r, targets, TT);
	run_free(r);
	model_free(m);
}

static void expect_fail(struct model *m, const struct run_options *o, const int *tokens,
			int B, int T, struct run *r, const char *what)
{
	struct err e;
	e.msg[0] = '\0';
	int rc = model_forward(m, o, tokens, NULL, B, T, r, &e);
	if (rc != -1) {
		print_error("%s: model_forward returned %d, want -1\n", what, rc);
		fail();
	}
	if (e.msg[0] == '\0') {
		print_error("%s: -1 without a message\n", what);
		fail();
	}
	print_message("%s -> %s\n", what, e.msg);
}

static void test_bad_inputs(void **s)
{
	(void)s;
	struct variant v = default_variant();
	struct model *m = make_model(&v, 40);
	struct run_options o;
	base_options(m, &o);
	const unsigned fl = RUN_LOGITS | RUN_ATTN;

	/* T above the context (the run itself is big enough) */
	int longtok[TS + 1];
	for (int i = 0; i < TS + 1; i++)
		longtok[i] = i % TV;
	struct run *big = run_new(&m->cfg, 2, TS + 1, fl);
	expect_fail(m, &o, longtok, 1, TS + 1, big, "T above context");

	/* token ids out of range */
	int bad[TT];
	memcpy(bad, test_tokens, sizeof bad);
	bad[3] = TV;
	expect_fail(m, &o, bad, 1, TT, big, "token == V");
	bad[3] = -1;
	expect_fail(m, &o, bad, 1, TT, big, "token -1");

	/* G not dividing H, and G = 0 */
	struct run_options og = o;
	og.kv_heads = 3;
	expect_fail(m, &og, test_tokens, 1, TT, big, "G=3 with H=4");
	og.kv_heads = 0;
	expect_fail(m, &og, test_tokens, 1, TT, big, "G=0");
	og.kv_heads = 8;
	expect_fail(m, &og, test_tokens, 1, TT, big, "G=8 with H=4");

	/* run allocated too small: T and B */
	struct run *small = run_new(&m->cfg, 1, 4, fl);
	expect_fail(m, &o, test_tokens, 1, TT, small, "T above the run's T");
	int two[2 * 4] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	expect_fail(m, &o, two, 2, 4, small, "B above the run's B");

	/* the engine still works afterwards */
	struct err e = { { 0 } };
	assert_int_equal(model_forward(m, &o, test_tokens, NULL, 1, 4, small, &e), 0);
	assert_int_equal(model_forward(m, &o, test_tokens, NULL, 1, TT, big, &e), 0);
	run_free(small);
	run_free(big);
	model_free(m);
}

static void test_kv_cache(void **s)
{
	(void)s;
	struct variant v = default_variant();
	v.kv = TH;
	struct model *m = make_model(&v, 50);
	const float *w0, *b0, *w1, *b1, *w2, *b2;
	/* G == K: the native tensors */
	model_qkv_for(m, TH, &w0, &b0);
	assert_ptr_equal(w0, m->p[P_QKVW]);
	assert_ptr_equal(b0, m->p[P_QKVB]);
	/* G != K: built once, then the same pointers */
	model_qkv_for(m, 2, &w1, &b1);
	assert_ptr_not_equal(w1, m->p[P_QKVW]);
	model_qkv_for(m, 2, &w2, &b2);
	assert_ptr_equal(w1, w2);
	assert_ptr_equal(b1, b2);
	model_qkv_for(m, 1, &w2, &b2);
	assert_ptr_not_equal(w1, w2);
	model_qkv_for(m, 2, &w2, &b2);
	assert_ptr_equal(w1, w2);
	assert_ptr_equal(b1, b2);
	/* a forward pass uses the cached slot and does not rebuild it */
	struct run_options o;
	base_options(m, &o);
	o.kv_heads = 2;
	struct run *r = forward_ok(m, &o, RUN_LOGITS, test_tokens, TT);
	model_qkv_for(m, 2, &w2, &b2);
	assert_ptr_equal(w1, w2);
	/* Q rows are copied from the native */
	const int D = TC / TH;
	for (int l = 0; l < TL; l++)
		assert_memory_equal(w1 + (size_t)l * (TH + 4) * D * TC,
				    m->p[P_QKVW] + (size_t)l * 3 * TH * D * TC,
				    sizeof(float) * TH * D * TC);
	run_free(r);
	model_free(m);
}

/* Going up from native K replicates, which is exact: logits and attention
 * bit-identical to the native pass. */
static void test_replication_exact(void **s)
{
	(void)s;
	static const int cases[][2] = { { 1, 4 }, { 1, 2 }, { 2, 4 } }; /* native K, G */
	for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
		for (int pos = 0; pos < 2; pos++) {
			struct variant v = default_variant();
			v.kv = cases[ci][0];
			v.pos = pos ? POS_ROPE : POS_LEARNED;
			v.bias = true;
			struct model *m = make_model(&v, 60 + ci);
			struct run_options o;
			base_options(m, &o);
			struct run *rn = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
			o.kv_heads = cases[ci][1];
			struct run *ru = forward_ok(m, &o, RUN_LOGITS | RUN_ATTN, test_tokens, TT);
			if (memcmp(run_logits(rn), run_logits(ru), sizeof(float) * TT * TV) != 0) {
				double worst = 0.0;
				for (int i = 0; i < TT * TV; i++)
					worst = fmax(worst, fabs((double)run_logits(rn)[i] - run_logits(ru)[i]));
				print_error("K=%d -> G=%d (%s): logits differ, max |d| = %.3g\n",
					    cases[ci][0], cases[ci][1], pos_type_name(v.pos), worst);
				fail();
			}
			for (int l = 0; l < TL; l++)
				for (int h = 0; h < TH; h++)
					assert_memory_equal(run_att(rn, l, 0, h), run_att(ru, l, 0, h),
							    sizeof(float) * TT * TT);
			run_free(rn);
			run_free(ru);
			model_free(m);
		}
}

/* head_norm: "(L, B, H, T) L2 norm of each head's output (pre-projection)"
 * (model.h).  Checked against the reference's head outputs, two sequences,
 * one ablated head (its output, hence its norm, is 0). */
static void test_head_norm(void **s)
{
	(void)s;
	enum { B = 2 };
	const int D = TC / TH;
	struct variant v = default_variant();
	v.kv = 2;
	struct model *m = make_model(&v, 90);
	struct run_options o;
	base_options(m, &o);
	o.kv_heads = 1;
	opt_set_ablated(&o, 0 * TH + 1, true);
	int tokens[B * TT];
	for (int i = 0; i < B * TT; i++)
		tokens[i] = (i * 7 + 2) % TV;
	struct run *r = run_new(&m->cfg, B, TT, RUN_LOGITS | RUN_ATTN);
	struct err e = { { 0 } };
	assert_int_equal(model_forward(m, &o, tokens, NULL, B, TT, r, &e), 0);
	double *want = malloc(sizeof(double) * TL * B * TH * TT); /* (L, B, H, T) */
	double *atty = malloc(sizeof(double) * TL * TT * TC);
	assert_non_null(want);
	assert_non_null(atty);
	for (int b = 0; b < B; b++) {
		struct ref_trace tr = { NULL, NULL, atty };
		assert_int_equal(ref_forward(m, &o, tokens + b * TT, TT, NULL, NULL, &tr), 0);
		for (int l = 0; l < TL; l++)
			for (int h = 0; h < TH; h++)
				for (int t = 0; t < TT; t++) {
					double s2 = 0.0;
					for (int d = 0; d < D; d++) {
						double y = atty[((size_t)l * TT + t) * TC + h * D + d];
						s2 += y * y;
					}
					want[(((size_t)l * B + b) * TH + h) * TT + t] = sqrt(s2);
				}
	}
	int shape[4] = { TL, B, TH, TT };
	double max_err = 0.0, saved_ratio = g_max_ratio; /* kept out of the summary */
	bool ok = compare("head_norm (l,b,h,t)", "head_norm, B=2, G=1, ablate=0.1", r->head_norm, want,
			  (size_t)TL * B * TH * TT, shape, 4, &max_err);
	g_max_ratio = saved_ratio;
	print_message("head_norm: max |d| vs model.h layout (L, B, H, T) = %.3g\n", max_err);
	if (!ok) {
		/* say whether the engine wrote the other natural layout */
		double worst = 0.0;
		for (int l = 0; l < TL; l++)
			for (int b = 0; b < B; b++)
				for (int t = 0; t < TT; t++)
					for (int h = 0; h < TH; h++)
						worst = fmax(worst, fabs((double)r->head_norm[(((size_t)l * B + b) * TT + t) * TH + h] -
									 want[(((size_t)l * B + b) * TH + h) * TT + t]));
		print_error("head_norm read as (L, B, T, H) instead matches within %.3g: "
			    "engine layout differs from model.h\n", worst);
	}
	free(want);
	free(atty);
	run_free(r);
	model_free(m);
	assert_true(ok);
}

static void test_summary(void **s)
{
	(void)s;
	print_message("reference comparisons: %ld passes; max |d| logits %.3g, attention %.3g, "
		      "resid/att_res %.3g; worst |d|/tol %.3g\n",
		      g_compared_runs, g_max_err_logits, g_max_err_att, g_max_err_resid, g_max_ratio);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix_layer_learned),
		cmocka_unit_test(test_matrix_layer_rope),
		cmocka_unit_test(test_matrix_rms_learned),
		cmocka_unit_test(test_matrix_rms_rope),
		cmocka_unit_test(test_lab_architectures),
		cmocka_unit_test(test_neox_architectures),
		cmocka_unit_test(test_neox_config_checks),
		cmocka_unit_test(test_neo_architectures),
		cmocka_unit_test(test_headdim_architectures),
		cmocka_unit_test(test_qknorm_architectures),
		cmocka_unit_test(test_gemma_architectures),
		cmocka_unit_test(test_olmo2_architectures),
		cmocka_unit_test(test_longrope_architectures),
		cmocka_unit_test(test_bert_architectures),
		cmocka_unit_test(test_batch_and_reuse),
		cmocka_unit_test(test_attention_rows_sum_to_one),
		cmocka_unit_test(test_attention_own_threads),
		cmocka_unit_test(test_matmul_own),
		cmocka_unit_test(test_causal_zero_above_diagonal),
		cmocka_unit_test(test_window_zero_outside),
		cmocka_unit_test(test_gqa_full_equals_mha),
		cmocka_unit_test(test_mqa_identical_heads_equals_mha),
		cmocka_unit_test(test_ablation_contribution),
		cmocka_unit_test(test_forward_from),
		cmocka_unit_test(test_nll_and_loss),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_kv_cache),
		cmocka_unit_test(test_replication_exact),
		cmocka_unit_test(test_head_norm),
		cmocka_unit_test(test_summary),
	};
	return cmocka_run_group_tests_name("forward", tests, NULL, NULL);
}
