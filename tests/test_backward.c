/*
 * test_backward.c — model_backward against finite differences of the float
 * forward pass, for every parameter tensor of tiny models over every
 * combination of norm x placement x positions x MLP x native K/V heads, the
 * lab's switches, GPT-NeoX's blocks, BERT's embedding norm and masked-LM
 * head, RoPE scaling (linear, llama3), Gemma 2/3's switches (GeGLU, the
 * embedding scale, sandwich norms, soft-caps) and OLMo-2's (post_only, the
 * whole-width q/k norm); the batch mean; accumulation; and refusal of runs
 * it cannot differentiate.
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

#include "backward.h"
#include "model.h"

/* Tiny shapes: V, C, L, H, F, context S (> T, so one WPE row gets no
 * gradient), batch B and sequence length T. */
enum { TV = 11, TC = 16, TL = 2, TH = 4, TF = 20, TS = 6, TB = 2, TT = 5 };

/*
 * Finite-difference method.  The loss is the engine's own float forward
 * (r->loss: float NLLs summed in double), so each evaluation carries a
 * rounding error of roughly 1e-7 relative to the loss (~2.4 = log V), a few
 * 1e-7 absolute after the layers.  A central difference
 * (L(p + eps) - L(p - eps)) / (2 eps) divides that noise by 2 eps and adds a
 * truncation error of eps^2 / 6 * L''', which the norms and softmaxes make
 * sizeable for the embeddings (tied ones especially).  Measured worst
 * errors over the 48 combinations of this file: eps 1e-3 -> 3.4e-3 (noise),
 * 3e-3 -> 8.6e-4, 5e-3 -> 6.7e-4, 1e-2 -> 2.3e-3, 2e-2 -> 9.2e-3 and
 * 5e-2 -> 6e-2 (truncation, growing as eps^2).  eps = 5e-3 sits between the
 * two regimes, 15x under the 1e-2 tolerance.  The step actually taken is
 * (p + eps) - (p - eps) as rounded to float, so the quotient divides by the
 * real step.  Weights with std 0.2 keep the gradients at 1e-2..1, far above
 * the ~1e-5 absolute noise of the quotient.
 *
 * Metric, per tensor: max |analytic - numeric| / max(max |numeric|, 1e-6)
 * over a random sample of FD_SAMPLE distinct elements (the whole tensor when
 * it has at most FD_FULL elements).  Normalising by the tensor's largest
 * gradient rather than element by element keeps elements whose gradient is
 * near zero (where a difference shows only the noise floor) from failing a
 * correct backward, while a wrong kernel (missing term, wrong sign, wrong
 * layer or head) moves the error to order one.
 */
#define FD_EPS 5e-3f
#define FD_SAMPLE 30
#define FD_FULL 48
#define FD_TOL 1e-2

struct combo {
	enum norm_type norm;
	enum norm_place place;
	enum pos_type pos;
	enum mlp_type mlp;
	int kv;
	bool bias, tied, explicit_targets;
	/* the lab's switches (all off in combo_of's 48) */
	bool no_residual, no_scale, no_mlp;
	enum mask_kind mask;
	/* GPT-NeoX's blocks (off in combo_of's 48) */
	bool parallel;
	int rotary, heads; /* rotary_dims (0: all), query heads (0: TH) */
	/* BERT's parts (off in combo_of's 48) */
	bool emb_norm, mlm;
	/* RoPE scaling (none in combo_of's 48): linear by 4, llama3 by 8
	 * with low 1, high 4 over an original context of 8, or longrope over
	 * an original context of 3 (the text is 5: the long table), factors
	 * 1 + i (short) and 2 + 3i (long), cos and sin times 1.3 */
	enum rope_scaling rope_scale;
	/* GPT-Neo's local layers: bit l of local_bits, over local_window keys */
	int local_window;
	unsigned local_bits;
	int head_dim; /* 0: TC / heads */
	bool qk_norm; /* Qwen3's q/k norm (off in combo_of's 48) */
	/* Gemma 2's and OLMo-2's switches (off in combo_of's 48): the
	 * embedding scale sqrt(C), the sandwich norms, no norm before the
	 * sub-blocks, the whole-width q/k norm, soft-caps (0: none) */
	bool emb_scale, sandwich, post_only, qk_whole;
	float attn_cap, final_cap;
};

static void combo_name(const struct combo *k, char *buf, size_t n)
{
	snprintf(buf, n, "%-9s %-4s %-7s %-10s kv=%d %-6s %-6s %s%s%s%s%s%s%s", norm_type_name(k->norm),
		 norm_place_name(k->place), pos_type_name(k->pos), mlp_type_name(k->mlp), k->kv,
		 k->bias ? "bias" : "nobias", k->tied ? "tied" : "untied",
		 k->explicit_targets ? "targets" : "shifted", k->no_residual ? " no-residual" : "",
		 k->no_scale ? " no-scale" : "", k->no_mlp ? " no-mlp" : "",
		 k->mask != MASK_CAUSAL ? " mask " : "", k->mask != MASK_CAUSAL ? mask_kind_name(k->mask) : "",
		 k->parallel ? " parallel" : "");
	if (k->emb_norm || k->mlm) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, "%s%s", k->emb_norm ? " emb-norm" : "",
			 k->mlm ? " head-mlm" : "");
	}
	if (k->local_window) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, " local %#x over %d", k->local_bits, k->local_window);
	}
	int D = k->head_dim ? k->head_dim : TC / (k->heads ? k->heads : TH);
	if (k->rotary) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, " rotary %d of %d", k->rotary, D);
	}
	if (k->head_dim) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, " heads %d x head_dim %d", k->heads ? k->heads : TH, D);
	}
	if (k->qk_norm) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, k->qk_whole ? " qk-norm-whole" : " qk-norm");
	}
	if (k->emb_scale || k->sandwich || k->post_only) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, "%s%s%s", k->emb_scale ? " emb-scale" : "",
			 k->sandwich ? " sandwich" : "", k->post_only ? " post-only" : "");
	}
	if (k->attn_cap > 0.0f || k->final_cap > 0.0f) {
		size_t used = strlen(buf);
		snprintf(buf + used, n - used, " softcap %g / %g", (double)k->attn_cap,
			 (double)k->final_cap);
	}
}

/* The combination with index idx in 0..47: norm x placement x positions x
 * MLP x K in {H, 2, 1} (K fastest); bias, tying and explicit targets follow
 * the low bits of idx, so every norm x placement group of 12 has all eight
 * patterns of the three. */
static struct combo combo_of(int idx)
{
	static const int kvs[3] = { TH, 2, 1 };
	struct combo k;
	memset(&k, 0, sizeof k);
	k.kv = kvs[idx % 3];
	k.mlp = (enum mlp_type)((idx / 3) % 2);
	k.pos = (enum pos_type)((idx / 6) % 2);
	k.place = (enum norm_place)((idx / 12) % 2);
	k.norm = (enum norm_type)((idx / 24) % 2);
	k.bias = idx & 1;
	k.tied = (idx >> 1) & 1;
	k.explicit_targets = (idx >> 2) & 1;
	return k;
}

/* A tiny model of combination k with weights far from their init: matrices
 * and embeddings N(0, 0.2^2) / N(0, 0.3^2), norm scales 1 + 0.1 N(0, 1),
 * biases and norm shifts 0.1 N(0, 1). */
static struct model *tiny_model(const struct combo *k, uint64_t seed)
{
	struct model_config c;
	config_default(&c);
	c.vocab_size = TV;
	c.d_model = TC;
	c.n_layer = TL;
	c.n_head = k->heads ? k->heads : TH;
	c.n_kv_head = k->kv;
	c.d_ff = TF;
	c.context = TS;
	c.norm = k->norm;
	c.placement = k->place;
	c.pos = k->pos;
	c.mlp = k->mlp;
	c.bias = k->bias;
	c.tied = k->tied;
	c.residual = !k->no_residual;
	c.scale = !k->no_scale;
	c.mask = k->mask;
	if (k->no_mlp)
		c.d_ff = 0;
	c.parallel = k->parallel;
	c.rotary_dims = k->rotary;
	c.emb_norm = k->emb_norm;
	c.head = k->mlm ? HEAD_MLM : HEAD_LM;
	c.rope_scaling = k->rope_scale;
	c.rope_factor = k->rope_scale == ROPE_SCALE_LINEAR ? 4.0f : 8.0f;
	if (k->rope_scale == ROPE_SCALE_LLAMA3) {
		c.rope_low_freq = 1.0f;
		c.rope_high_freq = 4.0f;
		c.rope_orig_context = 8;
	}
	if (k->rope_scale == ROPE_SCALE_LONGROPE) {
		c.rope_orig_context = 3;
		c.rope_attn_factor = 1.3f;
		for (int i = 0; i < CFG_MAX_ROPE_PAIRS; i++) {
			c.rope_short[i] = 1.0f + (float)i;
			c.rope_long[i] = 2.0f + 3.0f * (float)i;
		}
	}
	c.local_window = k->local_window;
	c.local[0] = k->local_bits;
	c.head_dim = k->head_dim;
	c.qk_norm = k->qk_norm;
	if (k->qk_norm && k->local_window) /* Gemma 3's local layers on a RoPE base of their own */
		c.rope_local_theta = 500.0f;
	c.emb_scale = k->emb_scale ? sqrtf((float)TC) : 0.0f;
	c.sandwich = k->sandwich;
	c.post_only = k->post_only;
	c.qk_norm_whole = k->qk_whole;
	c.attn_softcap = k->attn_cap;
	c.final_softcap = k->final_cap;
	struct err e = { "" };
	struct model *m = model_new(&c, &e);
	if (!m)
		fail_msg("model_new: %s", e.msg);
	struct rng r;
	rng_seed(&r, seed);
	for (int i = 0; i < N_PARAMS; i++) {
		float *p = m->p[i];
		for (size_t j = 0; j < m->psize[i]; j++) {
			float z = rng_normal(&r);
			switch (i) {
			case P_LN1W: case P_LN2W: case P_LNFW: case P_LNEW: case P_HEADLNW:
			case P_QNORMW: case P_KNORMW: case P_ATTPOSTW: case P_MLPPOSTW:
				p[j] = 1.0f + 0.1f * z;
				break;
			case P_LN1B: case P_LN2B: case P_LNFB: case P_QKVB:
			case P_ATTPROJB: case P_FCB: case P_FCPROJB:
			case P_LNEB: case P_HEADB: case P_HEADLNB: case P_OUTB:
				p[j] = 0.1f * z;
				break;
			case P_WTE: case P_WPE:
				p[j] = 0.3f * z;
				break;
			default:
				p[j] = 0.2f * z;
				break;
			}
		}
	}
	return m;
}

/* Random tokens; explicit targets are random ids with two positions
 * skipped (-1), or NULL for the forward's shifted tokens. */
static void make_batch(int *tokens, int *targets, bool explicit_targets, int N, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	for (int i = 0; i < N; i++)
		tokens[i] = (int)(rng_u32(&r) % TV);
	if (explicit_targets) {
		for (int i = 0; i < N; i++)
			targets[i] = (int)(rng_u32(&r) % TV);
		targets[1] = -1;
		targets[N - 2] = -1;
	}
}

static double loss_of(struct model *m, const struct run_options *o, const int *tokens,
		      const int *targets, int B, int T, struct run *r)
{
	struct err e = { "" };
	if (model_forward(m, o, tokens, targets, B, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	return r->loss;
}

/* Forward then backward into grads (zeroed first). */
static void gradients(struct model *m, const struct run_options *o, const int *tokens,
		      const int *targets, int B, int T, struct run *r, struct backward_state *s,
		      float *grads)
{
	struct err e = { "" };
	memset(grads, 0, m->n_params * sizeof(float));
	loss_of(m, o, tokens, targets, B, T, r);
	if (model_backward(m, o, tokens, targets, r, grads, s, &e) != 0)
		fail_msg("model_backward: %s", e.msg);
}

struct fd_result {
	double err;      /* worst relative error over the tensors */
	int tensor;      /* its tensor */
	size_t elem;     /* and the element with the largest difference there */
	float analytic, numeric;
	double scale;    /* the max |numeric| the error was divided by */
};

/* Checks every tensor of the model of combination k; returns the worst. */
static struct fd_result fd_check(const struct combo *k, uint64_t seed)
{
	struct model *m = tiny_model(k, seed);
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	struct run_options o;
	run_options_native(m, &o);
	int N = TB * TT, tokens[TB * TT], targets[TB * TT];
	make_batch(tokens, targets, k->explicit_targets, N, seed + 1);
	const int *tg = k->explicit_targets ? targets : NULL;

	float *grads = malloc(m->n_params * sizeof(float));
	gradients(m, &o, tokens, tg, TB, TT, r, s, grads);

	struct fd_result worst = { .err = -1.0, .tensor = -1 };
	struct rng rr;
	rng_seed(&rr, seed + 2);
	size_t *idx = NULL;
	for (int t = 0; t < N_PARAMS; t++) {
		size_t n = m->psize[t];
		if (n == 0)
			continue;
		idx = realloc(idx, n * sizeof *idx);
		for (size_t j = 0; j < n; j++)
			idx[j] = j;
		size_t count = n;
		if (n > FD_FULL) { /* partial Fisher-Yates: FD_SAMPLE distinct elements */
			count = FD_SAMPLE;
			for (size_t j = 0; j < count; j++) {
				size_t pick = j + rng_u32(&rr) % (n - j), tmp = idx[j];
				idx[j] = idx[pick];
				idx[pick] = tmp;
			}
		}
		float *p = m->p[t], *g = grads + (p - m->params);
		double maxdiff = 0.0, maxnum = 0.0;
		size_t at = idx[0];
		float at_a = 0.0f, at_n = 0.0f;
		for (size_t j = 0; j < count; j++) {
			size_t i = idx[j];
			float orig = p[i], up = orig + FD_EPS, down = orig - FD_EPS;
			p[i] = up;
			double lp = loss_of(m, &o, tokens, tg, TB, TT, r);
			p[i] = down;
			double lm = loss_of(m, &o, tokens, tg, TB, TT, r);
			p[i] = orig;
			double num = (lp - lm) / ((double)up - (double)down);
			double diff = fabs((double)g[i] - num);
			if (fabs(num) > maxnum)
				maxnum = fabs(num);
			if (diff > maxdiff || j == 0) {
				maxdiff = diff;
				at = i;
				at_a = g[i];
				at_n = (float)num;
			}
		}
		double scale = maxnum > 1e-6 ? maxnum : 1e-6;
		double rel = maxdiff / scale;
		if (rel > worst.err) {
			worst = (struct fd_result){ rel, t, at, at_a, at_n, scale };
		}
	}
	free(idx);
	free(grads);
	backward_free(s);
	run_free(r);
	model_free(m);
	return worst;
}

/* fd_check of combination k, one line for its worst element (ok or
 * FAIL); 1 when that is above FD_TOL. */
static int fd_report(const struct combo *k, uint64_t seed)
{
	char name[192];
	struct fd_result w = fd_check(k, seed);
	combo_name(k, name, sizeof name);
	bool bad = !(w.err < FD_TOL);
	print_message("%s %s  worst %.2e  %s[%zu] analytic %.6e numeric %.6e\n",
		      bad ? "FAIL" : "  ok", name, w.err, param_name((enum param_id)w.tensor), w.elem,
		      (double)w.analytic, (double)w.numeric);
	return bad;
}


/* Runs the 12 combinations of one norm x placement group, prints one line
 * per combination and fails on the first group member above FD_TOL after
 * printing them all. */
static void fd_group(enum norm_type norm, enum norm_place place)
{
	double group_worst = 0.0;
	int failures = 0;
	char name[128];
	for (int idx = 0; idx < 48; idx++) {
		struct combo k = combo_of(idx);
		if (k.norm != norm || k.place != place)
			continue;
		struct fd_result w = fd_check(&k, 1000 + (uint64_t)idx * 17);
		combo_name(&k, name, sizeof name);
		bool bad = !(w.err < FD_TOL);
		print_message("%s %s  worst %.2e  %s[%zu] analytic %.6e numeric %.6e (max|num| %.2e)\n",
			      bad ? "FAIL" : "  ok", name, w.err, param_name((enum param_id)w.tensor),
			      w.elem, (double)w.analytic, (double)w.numeric, w.scale);
		if (!(w.err <= group_worst)) /* NaN sticks */
			group_worst = w.err;
		failures += bad;
	}
	print_message("  group %s/%s: worst relative error %.2e\n", norm_type_name(norm),
		      norm_place_name(place), group_worst);
	if (failures)
		fail_msg("%d combinations of %s/%s above the tolerance %g", failures,
			 norm_type_name(norm), norm_place_name(place), FD_TOL);
}

/* The lab's switches, each alone and two together, under both placements:
 * blocks without residual connections, unscaled scores, attention-only
 * blocks, and models trained with no mask or the mask after the softmax. */
static void test_fd_lab_switches(void **state)
{
	(void)state;
	int failures = 0;
	for (int sw = 0; sw < 7; sw++)
		for (int pl = 0; pl < 2; pl++) {
			struct combo k = combo_of(sw * 7 % 48);
			k.place = pl ? PLACE_POST : PLACE_PRE;
			k.no_residual = sw == 0 || sw == 5;
			k.no_scale = sw == 1;
			k.no_mlp = sw == 2 || sw == 5;
			k.mask = sw == 3 ? MASK_NONE : sw == 4 || sw == 6 ? MASK_AFTER_SOFTMAX : MASK_CAUSAL;
			k.no_scale |= sw == 6;
			failures += fd_report(&k, 7000 + (uint64_t)(sw * 2 + pl) * 31);
		}
	if (failures)
		fail_msg("%d switch combinations above the tolerance %g", failures, FD_TOL);
}

/* GPT-NeoX's blocks: parallel (with and without residual connections),
 * RoPE over 4 of 8 dims (two heads), exact GELU, alone and together. */
static void test_fd_neox(void **state)
{
	(void)state;
	int failures = 0;
	for (int v = 0; v < 8; v++) {
		struct combo k = combo_of(v * 5 % 24); /* pre-norm, LayerNorm */
		k.place = PLACE_PRE;
		k.parallel = v != 1 && v != 2;
		k.pos = v == 3 || v == 6 ? POS_LEARNED : POS_ROPE;
		k.heads = v % 2 ? 2 : TH;
		k.kv = v % 3 == 0 ? k.heads : 1;
		k.rotary = k.pos == POS_ROPE && k.heads == 2 ? 4 : 0;
		k.mlp = v == 7 ? MLP_SWIGLU : v % 4 == 2 ? MLP_GELU : MLP_GELU_EXACT;
		k.norm = v == 5 ? NORM_RMS : NORM_LAYER;
		k.no_residual = v == 4;
		failures += fd_report(&k, 9000 + (uint64_t)v * 37);
	}
	if (failures)
		fail_msg("%d GPT-NeoX combinations above the tolerance %g", failures, FD_TOL);
}

/* head_dim apart from d_model / heads: H * D above C (4 x 8 over 16),
 * below it (2 x 4) and with C not divisible by H (3 x 6); both norms and
 * placements, learned and RoPE (all dims or 4 of 8), GQA, SwiGLU; every
 * tensor within FD_TOL. */
static void test_fd_head_dim(void **state)
{
	(void)state;
	static const struct { int heads, head_dim, kv, rotary; } shapes[] = {
		{ 4, 8, 2, 0 }, { 4, 8, 1, 4 }, { 2, 4, 2, 0 }, { 3, 6, 1, 0 }, { 3, 6, 3, 2 },
	};
	int failures = 0;
	for (int v = 0; v < 10; v++) {
		struct combo k = combo_of(v * 7 % 48);
		k.heads = shapes[v % 5].heads;
		k.head_dim = shapes[v % 5].head_dim;
		k.kv = shapes[v % 5].kv;
		k.rotary = shapes[v % 5].rotary;
		if (k.rotary)
			k.pos = POS_ROPE;
		failures += fd_report(&k, 9500 + (uint64_t)v * 41);
	}
	if (failures)
		fail_msg("%d head_dim combinations above the tolerance %g", failures, FD_TOL);
}

/* Qwen3's q/k norm: both norms and placements, RoPE over all of D or
 * half, learned positions, MHA / GQA / MQA, heads as wide as C / H or
 * apart from it (4 x 8 over 16), once with Gemma 3's local layer on a
 * RoPE base of its own; every tensor (the norm's scales among them)
 * within FD_TOL. */
static void test_fd_qk_norm(void **state)
{
	(void)state;
	static const struct { int heads, head_dim, kv, rotary; } shapes[] = {
		{ 0, 0, TH, 0 }, { 0, 0, 2, 2 }, { 4, 8, 1, 0 }, { 2, 0, 2, 4 },
	};
	int failures = 0;
	for (int v = 0; v < 8; v++) {
		struct combo k = combo_of(v * 11 % 48);
		k.qk_norm = true;
		k.heads = shapes[v % 4].heads;
		k.head_dim = shapes[v % 4].head_dim;
		k.kv = shapes[v % 4].kv;
		k.rotary = shapes[v % 4].rotary;
		if (k.rotary)
			k.pos = POS_ROPE;
		if (v == 7) { /* as Gemma 3: layer 0 local over 3 keys on base 500, layer 1 scaled */
			k.pos = POS_ROPE;
			k.local_window = 3;
			k.local_bits = 1u;
			k.rope_scale = ROPE_SCALE_LINEAR;
		}
		failures += fd_report(&k, 9700 + (uint64_t)v * 43);
	}
	if (failures)
		fail_msg("%d q/k norm combinations above the tolerance %g", failures, FD_TOL);
}

/* GeGLU (Gemma's gelu_tanh(gate) * up): both norms and placements,
 * parallel blocks, learned positions and RoPE, MHA / GQA / MQA, biases on
 * and off; every tensor (the gate and up rows of FCW among them) within
 * FD_TOL. */
static void test_fd_geglu(void **state)
{
	(void)state;
	int failures = 0;
	for (int v = 0; v < 6; v++) {
		struct combo k = combo_of(v * 13 % 48);
		k.mlp = MLP_GEGLU;
		k.pos = v % 2 ? POS_ROPE : POS_LEARNED;
		k.parallel = v == 5;
		if (k.parallel)
			k.place = PLACE_PRE;
		failures += fd_report(&k, 9800 + (uint64_t)v * 47);
	}
	if (failures)
		fail_msg("%d GeGLU combinations above the tolerance %g", failures, FD_TOL);
}

/* Gemma 2's switches, each alone and then together, under both norms and
 * placements where the config allows them: the embedding scale sqrt(C)
 * (tied and untied, learned and RoPE positions, beside BERT's embedding
 * norm); the sandwich norms (RMSNorm: pre, post, parallel, attention-only
 * blocks, without residual connections); the attention and final
 * soft-caps, at 1 to 3 where tanh bends (beside the after-softmax mask
 * and local layers); then all of Gemma 2's together (GeGLU, GQA, a local
 * layer, caps 2 and 3) and Gemma 3's (the q/k norm and the local layer's
 * own RoPE base in place of the caps); every tensor within FD_TOL. */
static void test_fd_gemma(void **state)
{
	(void)state;
	int failures = 0;
	for (int v = 0; v < 5; v++) {
		struct combo k = combo_of(v * 19 % 48);
		k.emb_scale = true;
		k.pos = v % 2 ? POS_ROPE : POS_LEARNED;
		k.emb_norm = v == 4;
		failures += fd_report(&k, 9900 + (uint64_t)v * 53);
	}
	for (int v = 0; v < 6; v++) {
		struct combo k = combo_of(24 + v * 5 % 24); /* RMSNorm */
		k.sandwich = true;
		k.place = v % 2 ? PLACE_POST : PLACE_PRE;
		k.parallel = v == 2;
		k.no_mlp = v == 3;
		k.no_residual = v == 4 || v == 5;
		failures += fd_report(&k, 9950 + (uint64_t)v * 59);
	}
	static const float caps[6][2] = { { 1, 0 }, { 2, 0 }, { 0, 2 }, { 0, 3 }, { 1, 2 }, { 1.5f, 0 } };
	for (int v = 0; v < 6; v++) {
		struct combo k = combo_of(v * 17 % 48);
		k.attn_cap = caps[v][0];
		k.final_cap = caps[v][1];
		k.mask = v == 5 ? MASK_AFTER_SOFTMAX : MASK_CAUSAL;
		k.local_window = v == 4 ? 3 : 0;
		k.local_bits = v == 4 ? 1u : 0u;
		failures += fd_report(&k, 9970 + (uint64_t)v * 67);
	}
	for (int v = 0; v < 4; v++) { /* Gemma 2 (v < 2) and Gemma 3 */
		struct combo k = { .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE,
				   .mlp = MLP_GEGLU, .kv = v % 2 ? 1 : 2, .tied = true,
				   .explicit_targets = v % 2, .local_window = 3, .local_bits = 1u,
				   .emb_scale = true, .sandwich = true };
		if (v < 2) {
			k.attn_cap = v ? 2.0f : 3.0f;
			k.final_cap = v ? 3.0f : 2.0f;
		} else {
			k.qk_norm = true;
			k.head_dim = v == 3 ? 8 : 0;
		}
		failures += fd_report(&k, 9980 + (uint64_t)v * 71);
	}
	if (failures)
		fail_msg("%d Gemma combinations above the tolerance %g", failures, FD_TOL);
}

/* OLMo-2's switches: blocks with no norm before either sub-block and the
 * sandwich norms after (post_only), learned and RoPE positions, MHA / GQA
 * / MQA, with and without the MLP; the whole-width q/k norm alone (both
 * norms and placements, heads as wide as C / H or 4 x 8 over 16); then
 * OLMo-2 itself (post_only, sandwich, whole-width q/k norm, RoPE,
 * SwiGLU); every tensor within FD_TOL. */
static void test_fd_olmo2(void **state)
{
	(void)state;
	int failures = 0;
	for (int v = 0; v < 4; v++) {
		struct combo k = combo_of(24 + v * 7 % 12); /* RMSNorm, pre */
		k.sandwich = true;
		k.post_only = true;
		k.no_mlp = v == 3;
		failures += fd_report(&k, 9990 + (uint64_t)v * 61);
	}
	for (int v = 0; v < 4; v++) {
		struct combo k = combo_of(v * 13 % 48);
		k.qk_norm = k.qk_whole = true;
		k.head_dim = v == 2 ? 8 : 0;
		failures += fd_report(&k, 9995 + (uint64_t)v * 73);
	}
	for (int v = 0; v < 3; v++) {
		struct combo k = { .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE,
				   .mlp = MLP_SWIGLU, .kv = v == 0 ? TH : v == 1 ? 2 : 1,
				   .explicit_targets = v == 1, .qk_norm = true, .qk_whole = true,
				   .sandwich = true, .post_only = true };
		failures += fd_report(&k, 9997 + (uint64_t)v * 79);
	}
	if (failures)
		fail_msg("%d OLMo-2 combinations above the tolerance %g", failures, FD_TOL);
}

/* RoPE scaling: linear and llama3 (whose pairs at d_head 4 over an
 * original context of 8 fall in the blended and the divided bands), and
 * longrope (its long table and attention factor), over both norms, all
 * dims or 4 of 8; every tensor within FD_TOL. */
static void test_fd_rope_scaling(void **state)
{
	(void)state;
	int failures = 0;
	char name[192];
	for (int v = 0; v < 6; v++) {
		struct combo k = combo_of(6 + v * 7 % 6); /* RoPE, LayerNorm, pre */
		k.norm = v % 2 ? NORM_RMS : NORM_LAYER;
		k.rope_scale = v < 2 ? ROPE_SCALE_LLAMA3 : v < 4 ? ROPE_SCALE_LINEAR
					 : ROPE_SCALE_LONGROPE;
		k.heads = v == 1 || v == 5 ? 2 : 0;
		k.kv = v == 1 || v == 5 ? 1 : k.kv;
		k.rotary = v == 1 || v == 5 ? 4 : 0;
		struct fd_result w = fd_check(&k, 9500 + (uint64_t)v * 41);
		combo_name(&k, name, sizeof name);
		bool bad = !(w.err < FD_TOL);
		print_message("%s %s rope %s  worst %.2e  %s[%zu] analytic %.6e numeric %.6e\n",
			      bad ? "FAIL" : "  ok", name, rope_scaling_name(k.rope_scale), w.err,
			      param_name((enum param_id)w.tensor), w.elem, (double)w.analytic,
			      (double)w.numeric);
		failures += bad;
	}
	if (failures)
		fail_msg("%d RoPE scaling combinations above the tolerance %g", failures, FD_TOL);
}

/* GPT-Neo's local layers: layer 0 or layer 1 local over 2 of the 5
 * tokens, native scale off, both placements. */
static void test_fd_neo(void **state)
{
	(void)state;
	int failures = 0;
	for (int v = 0; v < 4; v++) {
		struct combo k = combo_of(v * 7 % 12); /* LayerNorm, learned or RoPE */
		k.place = v / 2 ? PLACE_POST : PLACE_PRE;
		k.local_window = 2;
		k.local_bits = v % 2 ? 2u : 1u;
		k.no_scale = true;
		failures += fd_report(&k, 9500 + (uint64_t)v * 41);
	}
	if (failures)
		fail_msg("%d GPT-Neo combinations above the tolerance %g", failures, FD_TOL);
}

/* The finite differences run tens of thousands of forward passes over 10
 * tokens, where starting and joining threads costs more than the work: they
 * run on one thread (the other tests use two). */
/* BERT's parts: the embedding norm alone, the masked-LM head alone (its
 * transform, exact GELU, norm and output bias), and both with a
 * bidirectional mask, for each norm x placement, with and without biases
 * and tying: every tensor within FD_TOL. */
static void test_fd_bert(void **state)
{
	(void)state;
	int failures = 0;
	double worst = 0.0;
	char name[160];
	for (int idx = 0; idx < 24; idx++) {
		struct combo k;
		memset(&k, 0, sizeof k);
		k.norm = (enum norm_type)(idx % 2);
		k.place = (enum norm_place)((idx / 2) % 2);
		k.bias = (idx / 4) % 2 == 0;
		k.tied = (idx / 4) % 2 == 0 || idx % 3 == 0;
		int parts = (idx / 8) % 3; /* 0: emb norm, 1: MLM head, 2: both */
		k.emb_norm = parts != 1;
		k.mlm = parts != 0;
		k.mask = parts == 2 ? MASK_NONE : MASK_CAUSAL;
		k.pos = idx % 3 == 1 ? POS_ROPE : POS_LEARNED;
		k.mlp = MLP_GELU_EXACT;
		k.kv = TH;
		k.explicit_targets = idx % 2 == 0;
		struct fd_result w = fd_check(&k, 5000 + (uint64_t)idx * 13);
		combo_name(&k, name, sizeof name);
		bool bad = !(w.err < FD_TOL);
		print_message("%s %s  worst %.2e  %s[%zu] analytic %.6e numeric %.6e (max|num| %.2e)\n",
			      bad ? "FAIL" : "  ok", name, w.err, param_name((enum param_id)w.tensor),
			      w.elem, (double)w.analytic, (double)w.numeric, w.scale);
		if (!(w.err <= worst))
			worst = w.err;
		failures += bad;
	}
	print_message("  BERT's parts: worst relative error %.2e\n", worst);
	if (failures)
		fail_msg("%d BERT combinations above the tolerance %g", failures, FD_TOL);
}

static int one_thread(void **state)
{
	(void)state;
	engine_set_threads(1);
	return 0;
}

static int two_threads(void **state)
{
	(void)state;
	engine_set_threads(2);
	return 0;
}

static void test_fd_layernorm_pre(void **state) { (void)state; fd_group(NORM_LAYER, PLACE_PRE); }
static void test_fd_layernorm_post(void **state) { (void)state; fd_group(NORM_LAYER, PLACE_POST); }
static void test_fd_rmsnorm_pre(void **state) { (void)state; fd_group(NORM_RMS, PLACE_PRE); }
static void test_fd_rmsnorm_post(void **state) { (void)state; fd_group(NORM_RMS, PLACE_POST); }

/* max |a - b| / max |b| over n floats. */
static double rel_diff(const float *a, const float *b, size_t n)
{
	double md = 0.0, mb = 0.0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);
		md = d > md ? d : md;
		mb = fabs((double)b[i]) > mb ? fabs((double)b[i]) : mb;
	}
	return md / (mb > 1e-30 ? mb : 1e-30);
}

/* The loss is the mean over all targets of the batch, so the batch gradient
 * is the sum of each sequence's own (mean) gradient weighted by its share
 * n_b / n of the targets.  Also exercises a run filled at b < B. */
static void batch_check(const struct combo *k, uint64_t seed)
{
	struct model *m = tiny_model(k, seed);
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	struct run_options o;
	run_options_native(m, &o);
	int N = TB * TT, tokens[TB * TT], targets[TB * TT];
	make_batch(tokens, targets, true, N, seed + 1);
	if (k->explicit_targets) { /* uneven counts: 4 and 2 targets */
		targets[0] = -1;
		targets[TT + 1] = targets[TT + 2] = targets[TT + 4] = -1;
	}
	const int *tg = k->explicit_targets ? targets : NULL;
	size_t P = m->n_params;
	float *g = malloc(P * sizeof(float)), *gb = malloc(P * sizeof(float));
	float *sum = calloc(P, sizeof(float));

	gradients(m, &o, tokens, tg, TB, TT, r, s, g);
	int n = r->n_targets;
	for (int b = 0; b < TB; b++) {
		gradients(m, &o, tokens + b * TT, tg ? tg + b * TT : NULL, 1, TT, r, s, gb);
		float w = (float)r->n_targets / (float)n;
		for (size_t i = 0; i < P; i++)
			sum[i] += w * gb[i];
	}
	double d = rel_diff(sum, g, P);
	char name[128];
	combo_name(k, name, sizeof name);
	print_message("  batch = weighted sum of sequences, %s: rel diff %.2e\n", name, d);
	assert_true(d < 1e-5);
	free(g);
	free(gb);
	free(sum);
	backward_free(s);
	run_free(r);
	model_free(m);
}

static void test_batch_mean(void **state)
{
	(void)state;
	batch_check(&(struct combo){ .norm = NORM_LAYER, .place = PLACE_PRE, .pos = POS_LEARNED,
				     .mlp = MLP_GELU, .kv = 2, .bias = true, .tied = true,
				     .explicit_targets = true }, 7);
	batch_check(&(struct combo){ .norm = NORM_RMS, .place = PLACE_POST, .pos = POS_ROPE,
				     .mlp = MLP_SWIGLU, .kv = 1, .explicit_targets = true }, 8);
	batch_check(&(struct combo){ .norm = NORM_LAYER, .place = PLACE_POST, .pos = POS_ROPE,
				     .mlp = MLP_GELU, .kv = TH, .bias = true }, 9);
	batch_check(&(struct combo){ .norm = NORM_LAYER, .place = PLACE_POST, .pos = POS_LEARNED,
				     .mlp = MLP_GELU_EXACT, .kv = TH, .bias = true, .tied = true,
				     .explicit_targets = true, .mask = MASK_NONE, .emb_norm = true,
				     .mlm = true }, 10);
	batch_check(&(struct combo){ .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE,
				     .mlp = MLP_SWIGLU, .kv = 2, .qk_norm = true }, 12);
	/* Gemma 2's switches, and OLMo-2's */
	batch_check(&(struct combo){ .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE,
				     .mlp = MLP_GEGLU, .kv = 2, .tied = true, .explicit_targets = true,
				     .local_window = 3, .local_bits = 1u, .emb_scale = true,
				     .sandwich = true, .attn_cap = 2.0f, .final_cap = 3.0f }, 13);
	batch_check(&(struct combo){ .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE,
				     .mlp = MLP_SWIGLU, .kv = 1, .qk_norm = true, .qk_whole = true,
				     .sandwich = true, .post_only = true }, 14);
}

/* Gradients are added: two backward passes give twice one. */
static void test_accumulates(void **state)
{
	(void)state;
	struct combo k = { .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE, .mlp = MLP_SWIGLU,
			   .kv = 2, .bias = true, .tied = true };
	struct model *m = tiny_model(&k, 11);
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	struct run_options o;
	run_options_native(m, &o);
	int tokens[TB * TT];
	make_batch(tokens, NULL, false, TB * TT, 12);
	size_t P = m->n_params;
	float *g1 = malloc(P * sizeof(float)), *g2 = malloc(P * sizeof(float));
	gradients(m, &o, tokens, NULL, TB, TT, r, s, g1);
	struct err e = { "" };
	memcpy(g2, g1, P * sizeof(float));
	assert_int_equal(model_backward(m, &o, tokens, NULL, r, g2, s, &e), 0);
	for (size_t i = 0; i < P; i++)
		g1[i] *= 2.0f;
	assert_true(rel_diff(g2, g1, P) < 1e-6);

	/* and one thread gives what two give (no races in the row loops) */
	engine_set_threads(1);
	gradients(m, &o, tokens, NULL, TB, TT, r, s, g1);
	engine_set_threads(2);
	gradients(m, &o, tokens, NULL, TB, TT, r, s, g2);
	double d = rel_diff(g2, g1, P);
	print_message("  1 vs 2 threads: rel diff %.2e\n", d);
	assert_true(d < 1e-6);
	free(g1);
	free(g2);
	backward_free(s);
	run_free(r);
	model_free(m);
}

/* Expects model_backward to refuse (r, o) and leave grads untouched. */
static void expect_refusal(struct model *m, const struct run_options *o, const int *tokens,
			   struct run *r, struct backward_state *s, float *grads, const char *what)
{
	struct err e = { "" };
	int rc = model_backward(m, o, tokens, NULL, r, grads, s, &e);
	if (rc != -1)
		fail_msg("model_backward accepted %s", what);
	if (e.msg[0] == '\0')
		fail_msg("model_backward refused %s without a message", what);
	for (size_t i = 0; i < m->n_params; i++)
		if (grads[i] != 0.0f)
			fail_msg("model_backward refused %s but wrote gradients", what);
	print_message("  refused %s: %s\n", what, e.msg);
}

static void test_refuses(void **state)
{
	(void)state;
	struct combo k = { .norm = NORM_LAYER, .place = PLACE_PRE, .pos = POS_LEARNED, .mlp = MLP_GELU,
			   .kv = TH, .bias = true, .tied = true };
	struct model *m = tiny_model(&k, 13);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	float *grads = calloc(m->n_params, sizeof(float));
	int tokens[TB * TT];
	make_batch(tokens, NULL, false, TB * TT, 14);
	struct run_options nat;
	run_options_native(m, &nat);
	struct err e = { "" };

	/* runs without RUN_TRAIN */
	unsigned flags[] = { RUN_LOGITS, RUN_LOGITS | RUN_ATTN };
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		struct run *r = run_new(&m->cfg, TB, TT, flags[i]);
		assert_int_equal(model_forward(m, &nat, tokens, NULL, TB, TT, r, &e), 0);
		expect_refusal(m, &nat, tokens, r, s, grads, "a run without RUN_TRAIN");
		run_free(r);
	}

	/* non-native options, passed as made */
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	struct run_options o[6];
	for (int i = 0; i < 6; i++)
		o[i] = nat;
	o[0].kv_heads = 2;
	o[1].kv_heads = 1;
	o[2].placement = PLACE_POST;
	o[3].scale = false;
	o[4].mask = MASK_NONE;
	opt_set_ablated(&o[5], 1, true);
	static const char *what[6] = { "K/V heads 2", "K/V heads 1", "post placement",
				       "no scaling", "no mask", "an ablated head" };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(model_forward(m, &o[i], tokens, NULL, TB, TT, r, &e), 0);
		expect_refusal(m, &o[i], tokens, r, s, grads, what[i]);
	}
	/* a run made with other K/V heads, claimed to be native */
	assert_int_equal(model_forward(m, &o[0], tokens, NULL, TB, TT, r, &e), 0);
	expect_refusal(m, &nat, tokens, r, s, grads, "a K/V-converted run passed as native");
	struct run_options win = nat;
	win.mask = MASK_WINDOW;
	win.window = 2;
	assert_int_equal(model_forward(m, &win, tokens, NULL, TB, TT, r, &e), 0);
	expect_refusal(m, &win, tokens, r, s, grads, "a window mask");

	/* and the native run is accepted */
	assert_int_equal(model_forward(m, &nat, tokens, NULL, TB, TT, r, &e), 0);
	assert_int_equal(model_backward(m, &nat, tokens, NULL, r, grads, s, &e), 0);
	run_free(r);
	free(grads);
	backward_free(s);
	model_free(m);
}

/* A run or a state made for a model without sandwich norms or an
 * attention soft-cap, of the same shape, lacks what backward reads for
 * them: refused, nothing written. */
static void test_refuses_missing_keep(void **state)
{
	(void)state;
	struct combo k = { .norm = NORM_RMS, .place = PLACE_PRE, .pos = POS_ROPE, .mlp = MLP_GEGLU,
			   .kv = 2, .tied = true };
	struct model *plain = tiny_model(&k, 31);
	k.sandwich = true;
	k.attn_cap = 2.0f;
	struct model *m = tiny_model(&k, 31);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	struct backward_state *s_plain = backward_new(&plain->cfg, TB, TT);
	float *grads = calloc(m->n_params, sizeof(float));
	int tokens[TB * TT];
	make_batch(tokens, NULL, false, TB * TT, 32);
	struct run_options nat;
	run_options_native(m, &nat);
	struct err e = { "" };
	struct run *r_plain = run_new(&plain->cfg, TB, TT, RUN_TRAIN);
	assert_null(r_plain->attpost_in);
	assert_int_equal(model_forward(m, &nat, tokens, NULL, TB, TT, r_plain, &e), 0);
	expect_refusal(m, &nat, tokens, r_plain, s, grads, "a run without the sandwich inputs");
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	assert_non_null(r->attpost_in);
	assert_int_equal(model_forward(m, &nat, tokens, NULL, TB, TT, r, &e), 0);
	expect_refusal(m, &nat, tokens, r, s_plain, grads, "a state without the score scratch");
	assert_int_equal(model_backward(m, &nat, tokens, NULL, r, grads, s, &e), 0);
	run_free(r);
	run_free(r_plain);
	free(grads);
	backward_free(s);
	backward_free(s_plain);
	model_free(m);
	model_free(plain);
}

/* A model without an output head (a BertModel, head none) has no loss:
 * backward refuses it, naming the field, and writes nothing. */
static void test_refuses_headless(void **state)
{
	(void)state;
	struct combo k = { .norm = NORM_LAYER, .place = PLACE_POST, .pos = POS_LEARNED,
			   .mlp = MLP_GELU_EXACT, .kv = TH, .bias = true, .tied = true,
			   .mask = MASK_NONE, .emb_norm = true };
	struct model *base = tiny_model(&k, 21);
	struct model_config c = base->cfg;
	model_free(base);
	c.head = HEAD_NONE;
	struct err e = { "" };
	assert_int_equal(backward_supports(&c, &e), -1);
	assert_non_null(strstr(e.msg, "config head none"));
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	model_init_random(m, 22);
	struct backward_state *s = backward_new(&m->cfg, TB, TT);
	float *grads = calloc(m->n_params, sizeof(float));
	int tokens[TB * TT];
	make_batch(tokens, NULL, false, TB * TT, 23);
	struct run_options nat;
	run_options_native(m, &nat);
	struct run *r = run_new(&m->cfg, TB, TT, RUN_TRAIN);
	assert_int_equal(model_forward(m, &nat, tokens, NULL, TB, TT, r, &e), 0);
	expect_refusal(m, &nat, tokens, r, s, grads, "config head none");
	run_free(r);
	free(grads);
	backward_free(s);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fd_layernorm_pre, one_thread),
		cmocka_unit_test_setup(test_fd_layernorm_post, one_thread),
		cmocka_unit_test_setup(test_fd_rmsnorm_pre, one_thread),
		cmocka_unit_test_setup(test_fd_rmsnorm_post, one_thread),
		cmocka_unit_test_setup(test_fd_lab_switches, one_thread),
		cmocka_unit_test_setup(test_fd_neox, one_thread),
		cmocka_unit_test_setup(test_fd_qk_norm, one_thread),
		cmocka_unit_test_setup(test_fd_geglu, one_thread),
		cmocka_unit_test_setup(test_fd_gemma, one_thread),
		cmocka_unit_test_setup(test_fd_olmo2, one_thread),
		cmocka_unit_test_setup(test_fd_rope_scaling, one_thread),
		cmocka_unit_test_setup(test_fd_neo, one_thread),
		cmocka_unit_test_setup(test_fd_head_dim, one_thread),
		cmocka_unit_test_setup(test_batch_mean, two_threads),
		cmocka_unit_test_setup(test_accumulates, two_threads),
		cmocka_unit_test_setup(test_refuses, two_threads),
		cmocka_unit_test_setup(test_fd_bert, one_thread),
		cmocka_unit_test_setup(test_refuses_headless, one_thread),
		cmocka_unit_test_setup(test_refuses_missing_keep, one_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
