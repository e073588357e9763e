/*
 * lab-exps.c — the lab's experiments (lab.h): residual, norm, scaling,
 * mask, heads, gqa, fused.  Each builds its arms, trains or times them
 * with the machinery of lab.c, and fills a table in the tutorial's shape
 * and findings computed from the numbers.
 */
#include "lab-arm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "ops.h"
#include "train-record.h"
#include "train-run.h"

/* ----------------------------------------------------------------- common */

/* A small GPT-2-style config; vocab_size is set from the data later. */
static struct model_config small_config(int layers, int d_model, int heads, int context)
{
	struct model_config c;
	config_default(&c);
	c.n_layer = layers;
	c.d_model = d_model;
	c.n_head = c.n_kv_head = heads;
	c.d_ff = 4 * d_model;
	c.context = context;
	return c;
}

/* The training text, character vocabulary, windows of context T. */
static int load_data(const struct lab_ctx *ctx, int T, struct dataset *d, struct err *e)
{
	if (dataset_load(d, ctx->data, 1, 0.1, e))
		return -1;
	if (dataset_check_context(d, ctx->data, T, e) ||
	    dataset_set_windows(d, T, false, 0, 1, 1, false, e)) {
		dataset_free(d);
		return -1;
	}
	return 0;
}

static void hparams(struct train_hparams *hp, long steps, int batch)
{
	train_hparams_default(hp, steps);
	hp->batch = batch;
	hp->warmup = steps / 10;
	hp->val_batches = 4;
}

/* Mean of history column col over the last tenth of the steps (at least
 * one step). */
static double tail_mean(const struct trainer *t, int col)
{
	if (!t->hist_n)
		return NAN;
	size_t k = t->hist_n / 10 ? t->hist_n / 10 : 1;
	double s = 0;
	for (size_t i = t->hist_n - k; i < t->hist_n; i++)
		s += t->hist[i * (size_t)t->hw + col];
	return s / (double)k;
}

/* Trains one fresh arm and keeps its loss curve in out; on success *m
 * and *tr hold the model and its history (the caller frees both).  0, 1
 * cancelled, -1. */
static int fresh_arm(const struct lab_ctx *ctx, const char *exp, const char *label,
		     const struct model_config *c, const struct dataset *d,
		     const struct train_hparams *hp, struct model **m, struct trainer *tr,
		     struct lab_result *out, struct err *e)
{
	memset(tr, 0, sizeof *tr);
	*m = lab_model(c, d, 1337, e);
	if (!*m)
		return -1;
	int rc = lab_train(ctx, exp, label, *m, d, hp, tr, e);
	if (rc == 0)
		lab_curve(out, label, tr);
	return rc;
}

static void arm_free(struct model *m, struct trainer *tr)
{
	trainer_release(tr);
	model_free(m);
}

/* --------------------------------------------------------------- residual */

/* Gradient norm of every layer on one batch at initialisation. */
static int init_grads(const struct lab_ctx *ctx, const struct model_config *c,
		      const struct dataset *d, int batch, uint64_t seed, float *norms, struct err *e)
{
	struct model *m = lab_model(c, d, seed, e);
	if (!m)
		return -1;
	struct train_hparams hp;
	hparams(&hp, 1, batch);
	hp.seed = seed;
	struct trainer tr;
	struct train_spec spec = {
		.model = m, .dataset = d, .hp = hp, .val_every = -1, .threads = ctx->threads,
		.trainer = &tr,
	};
	struct train_outcome done;
	int rc = train_run(&spec, NULL, &done, e);
	if (rc == 0)
		memcpy(norms, tr.hist + HIST_LAYER0, (size_t)c->n_layer * sizeof(float));
	arm_free(m, &tr);
	return rc;
}

static int run_residual(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	static const int depths[3] = { 10, 20, 50 };
	int dm = ctx->quick ? 32 : 64, T = ctx->quick ? 32 : 64, B = ctx->quick ? 4 : 8;
	int seeds = ctx->quick ? 1 : 3;
	struct dataset d;
	if (load_data(ctx, T, &d, e))
		return -1;
	static const char *const head[] = { "depth", "first grad, residual", "first grad, none",
					    "none/residual", "last grad, none" };
	lab_table_header(&out->table, 5, head);
	float norms[2][50];
	double first[3][2] = { { 0 } }, deep[50] = { 0 }; /* depth 50, no residual: per layer */
	int rc = 0, done = 0;
	for (int i = 0; i < 3 && rc == 0; i++) {
		int L = depths[i];
		double last_none = 0;
		for (int res = 1; res >= 0 && rc == 0; res--) {
			struct model_config c = small_config(L, dm, 4, T);
			c.residual = res;
			for (int s = 0; s < seeds && rc == 0; s++) {
				if (ctx->cancel && *ctx->cancel) {
					rc = 1;
					break;
				}
				char line[128];
				snprintf(line, sizeof line, "lab residual: depth %d, %s, seed %d", L,
					 res ? "residual" : "none", s + 1);
				if (ctx->progress)
					ctx->progress(ctx->progress_ctx, line);
				rc = init_grads(ctx, &c, &d, B, 1337 + (uint64_t)s, norms[res], e);
				first[i][res] += norms[res][0] / seeds;
				if (!res)
					last_none += norms[res][L - 1] / seeds;
				for (int l = 0; !res && L == 50 && l < L; l++)
					deep[l] += norms[res][l] / seeds;
			}
			if (rc == 0 && !res && i == 2) {
				lab_finding(out, "Without residual connections at depth 50, gradient norms "
					    "by layer (first, 1/4, 1/2, 3/4, last): %.2g, %.2g, %.2g, %.2g, %.2g.",
					    deep[0], deep[12], deep[25], deep[37], deep[49]);
			}
		}
		if (rc)
			break;
		char a[32], b[32], r[32], l[32], dep[16];
		snprintf(dep, sizeof dep, "%d", L);
		snprintf(a, sizeof a, "%.3g", first[i][1]);
		snprintf(b, sizeof b, "%.3g", first[i][0]);
		snprintf(r, sizeof r, "%.3g", first[i][0] / first[i][1]);
		snprintf(l, sizeof l, "%.3g", last_none);
		lab_table_row(&out->table, dep, a, b, r, l);
		done++;
	}
	if (done == 3) {
		bool shrinks = first[0][0] > first[1][0] && first[1][0] > first[2][0];
		double spread_res = fmax(fmax(first[0][1], first[1][1]), first[2][1]) /
				    fmin(fmin(first[0][1], first[1][1]), first[2][1]);
		lab_finding(out, "Without residual connections the first layer's gradient %s with depth "
			    "(%.2g at 10 layers, %.2g at 50: %.3g times %s); with them it %s "
			    "(%.2g to %.2g, within a factor %.2f).",
			    shrinks ? "shrinks" : "does not shrink steadily", first[0][0], first[2][0],
			    first[2][0] > first[0][0] ? first[2][0] / first[0][0] : first[0][0] / first[2][0],
			    first[2][0] > first[0][0] ? "larger" : "smaller",
			    spread_res < 10 ? "stays of the same order" : "also changes",
			    first[0][1], first[2][1], spread_res);
		lab_finding(out, "At depth 50 the first layer's gradient is %.3g times larger with "
			    "residual connections than without.", first[2][1] / first[2][0]);
	}
	out->partial = rc == 1;
	dataset_free(&d);
	return rc;
}

/* ------------------------------------------------------------------- norm */

/* Blocks whose gradient norm stays below 1e-3 over the last tenth of the
 * steps. */
static int dead_blocks(const struct trainer *t, int L)
{
	int n = 0;
	for (int l = 0; l < L; l++)
		n += tail_mean(t, HIST_LAYER0 + l) < 1e-3;
	return n;
}

struct norm_arm {
	int depth;
	enum norm_place place;
	enum norm_type norm;
	double loss, val;
	int dead;
};

static int run_norm(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	int dm = ctx->quick ? 32 : 64, T = ctx->quick ? 32 : 64, B = 8;
	long steps = ctx->quick ? 40 : 200;
	struct norm_arm arms[8];
	int n = 0;
	static const int full_depths[3] = { 4, 16, 32 }, quick_depths[2] = { 4, 12 };
	const int *depths = ctx->quick ? quick_depths : full_depths;
	int nd = ctx->quick ? 2 : 3;
	for (int i = 0; i < nd; i++)
		for (int p = 0; p < 2; p++)
			arms[n++] = (struct norm_arm){ .depth = depths[i],
						       .place = p ? PLACE_POST : PLACE_PRE,
						       .norm = NORM_LAYER };
	arms[n++] = (struct norm_arm){ .depth = 4, .place = PLACE_PRE, .norm = NORM_RMS };
	arms[n++] = (struct norm_arm){ .depth = 4, .place = PLACE_POST, .norm = NORM_RMS };

	struct dataset d;
	if (load_data(ctx, T, &d, e))
		return -1;
	static const char *const head[] = { "depth", "norm", "placement", "final loss", "held-out",
					    "dead blocks" };
	lab_table_header(&out->table, 6, head);
	int rc = 0, done = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		struct norm_arm *a = &arms[i];
		struct model_config c = small_config(a->depth, dm, 4, T);
		c.placement = a->place;
		c.norm = a->norm;
		struct train_hparams hp;
		hparams(&hp, steps, B);
		char label[64];
		snprintf(label, sizeof label, "%s-norm %s, %d layers", norm_place_name(a->place),
			 norm_type_name(a->norm), a->depth);
		struct model *m;
		struct trainer tr;
		rc = fresh_arm(ctx, "norm", label, &c, &d, &hp, &m, &tr, out, e);
		if (rc == 0) {
			a->loss = tail_mean(&tr, HIST_LOSS);
			a->dead = dead_blocks(&tr, a->depth);
			struct run_options o;
			run_options_native(m, &o);
			rc = lab_held_out(m, &o, &d, B, 4, &a->val, e);
		}
		arm_free(m, &tr);
		if (rc)
			break;
		char dep[16], l[32], v[32], dead[32];
		snprintf(dep, sizeof dep, "%d", a->depth);
		snprintf(dead, sizeof dead, "%d of %d", a->dead, a->depth);
		lab_table_row(&out->table, dep, norm_type_name(a->norm), norm_place_name(a->place),
			      lab_num(l, sizeof l, a->loss, 3), lab_num(v, sizeof v, a->val, 3), dead);
		done++;
	}
	if (done == n) {
		for (int i = 0; i < 2 * nd; i += 2) {
			struct norm_arm *pre = &arms[i], *post = &arms[i + 1];
			lab_finding(out, "%d layers: post-norm %s pre-norm (held-out %.3f vs %.3f); "
				    "blocks with gradient norm < 1e-3: post %d, pre %d.", pre->depth,
				    post->val < pre->val ? "beats" : "trails", post->val, pre->val,
				    post->dead, pre->dead);
		}
		lab_finding(out, "RMSNorm vs LayerNorm at 4 layers, pre-norm: %.3f vs %.3f held-out; "
			    "post-norm: %.3f vs %.3f.", arms[n - 2].val, arms[0].val, arms[n - 1].val,
			    arms[1].val);
	}
	out->partial = rc == 1;
	dataset_free(&d);
	return rc;
}

/* ---------------------------------------------------------------- scaling */

static int run_scaling(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	int dm = ctx->quick ? 64 : 128, T = ctx->quick ? 32 : 64, B = 8;
	long steps = ctx->quick ? 60 : 1000;
	struct dataset d;
	if (load_data(ctx, T, &d, e))
		return -1;
	static const char *const head[] = { "scores", "d_head", "loss at 1/4", "final loss",
					    "held-out", "attention entropy" };
	lab_table_header(&out->table, 6, head);
	double val[2] = { NAN, NAN }, ent[2] = { NAN, NAN }, q[2] = { NAN, NAN };
	int rc = 0, done = 0;
	for (int s = 1; s >= 0 && rc == 0; s--) {
		struct model_config c = small_config(2, dm, 2, T);
		c.scale = s;
		struct train_hparams hp;
		hparams(&hp, steps, B);
		struct model *m;
		struct trainer tr;
		rc = fresh_arm(ctx, "scaling", s ? "scaled by 1/sqrt(d_head)" : "unscaled", &c, &d, &hp,
			       &m, &tr, out, e);
		double fin = NAN;
		if (rc == 0) {
			size_t k = tr.hist_n / 4;
			q[s] = tr.hist[k * (size_t)tr.hw + HIST_LOSS];
			fin = tail_mean(&tr, HIST_LOSS);
			struct run_options o;
			run_options_native(m, &o);
			rc = lab_held_out(m, &o, &d, B, 4, &val[s], e);
			ent[s] = lab_attention_entropy(m, &d, e);
		}
		arm_free(m, &tr);
		if (rc)
			break;
		char a[32], b[32], v[32], en[32], dh[16];
		snprintf(dh, sizeof dh, "%d", dm / 2);
		lab_table_row(&out->table, s ? "QK^T / sqrt(d)" : "QK^T", dh, lab_num(a, sizeof a, q[s], 3),
			      lab_num(b, sizeof b, fin, 3), lab_num(v, sizeof v, val[s], 3),
			      lab_num(en, sizeof en, ent[s], 3));
		done++;
	}
	if (done == 2) {
		double uniform = 0; /* mean over causal rows of log(keys visible) */
		for (int i = 1; i <= T; i++)
			uniform += log((double)i) / T;
		const char *verdict = val[0] > val[1] + 0.02 ? "worse, as the tutorial says"
				      : val[0] < val[1] - 0.02 ? "better: not what the tutorial predicts"
								: "about the same (within 0.02)";
		lab_finding(out, "Without the scaling the held-out loss is %.3f against %.3f, %s; "
			    "attention is %s (mean entropy %.2f vs %.2f nats; spread evenly over the "
			    "visible keys it would be %.2f).", val[0], val[1], verdict,
			    ent[0] < ent[1] ? "sharper" : "not sharper", ent[0], ent[1], uniform);
		lab_finding(out, "A quarter of the way in: %.3f unscaled vs %.3f scaled.", q[0], q[1]);
	}
	out->partial = rc == 1;
	dataset_free(&d);
	return rc;
}

/* ------------------------------------------------------------------- mask */

static int run_mask(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	static const enum mask_kind masks[3] = { MASK_CAUSAL, MASK_AFTER_SOFTMAX, MASK_NONE };
	int dm = ctx->quick ? 32 : 64, T = ctx->quick ? 32 : 64, B = 8;
	long steps = ctx->quick ? 150 : 2000;
	struct dataset d;
	if (load_data(ctx, T, &d, e))
		return -1;
	static const char *const head[] = { "trained with", "training loss", "held-out, own mask",
					    "held-out, causal" };
	lab_table_header(&out->table, 4, head);
	double train[3], own[3], causal[3];
	int rc = 0, done = 0;
	for (int i = 0; i < 3 && rc == 0; i++) {
		struct model_config c = small_config(2, dm, 4, T);
		c.mask = masks[i];
		struct train_hparams hp;
		hparams(&hp, steps, B);
		char label[64];
		snprintf(label, sizeof label, "mask %s", mask_kind_name(masks[i]));
		struct model *m;
		struct trainer tr;
		rc = fresh_arm(ctx, "mask", label, &c, &d, &hp, &m, &tr, out, e);
		if (rc == 0) {
			train[i] = tail_mean(&tr, HIST_LOSS);
			struct run_options o;
			run_options_native(m, &o);
			rc = lab_held_out(m, &o, &d, B, 4, &own[i], e);
			o.mask = MASK_CAUSAL;
			if (rc == 0)
				rc = lab_held_out(m, &o, &d, B, 4, &causal[i], e);
		}
		arm_free(m, &tr);
		if (rc)
			break;
		char a[32], b[32], cz[32];
		lab_table_row(&out->table, mask_kind_name(masks[i]), lab_num(a, sizeof a, train[i], 3),
			      lab_num(b, sizeof b, own[i], 3), lab_num(cz, sizeof cz, causal[i], 3));
		done++;
	}
	if (done == 3) {
		static const char *const how[3] = { "", "the normalisation still carries the later "
						    "tokens' scores", "each position can attend to the "
						    "token it must predict" };
		for (int i = 1; i < 3; i++) {
			double gap = train[0] - train[i];
			char verdict[160];
			if (gap > 0.02)
				snprintf(verdict, sizeof verdict, "%.3f lower: %s", gap, how[i]);
			else if (gap >= -0.02)
				snprintf(verdict, sizeof verdict, "about the same (within 0.02, "
					 "run-to-run noise here)");
			else
				snprintf(verdict, sizeof verdict, "higher: at this size it has not "
					 "learned to use what it sees");
			lab_finding(out, "Trained with mask %s: training loss %.3f against %.3f causal, "
				    "%s.  Run causally, as text is generated, its held-out loss is %.3f "
				    "(the causal model's: %.3f).", mask_kind_name(masks[i]), train[i],
				    train[0], verdict, causal[i], causal[0]);
		}
	}
	out->partial = rc == 1;
	dataset_free(&d);
	return rc;
}

/* ------------------------------------------------------------------ heads */

/* The arms: head counts at one width, from one head of d_model features
 * down to heads of 2 (64 -> 32 -> 16 -> 8 -> 2 at the full size's width
 * 64; 32 -> ... -> 2 at the quick size's 32), and one count that does not
 * divide the width, which the lab refuses (config_check_heads). */
#define HEADS_ARMS 5
#define HEADS_BAD 3

/* The finding: the best arm against one head, head dimension 8 and head
 * dimension 2, then the refused count's message. */
static void heads_finding(struct lab_result *out, int dm, const int *heads, const double *val,
			  size_t params, const char *refusal)
{
	int best = 0, d8 = 0;
	for (int i = 1; i < HEADS_ARMS; i++) {
		best = val[i] < val[best] ? i : best;
		d8 = dm / heads[i] == 8 ? i : d8;
	}
	int last = HEADS_ARMS - 1;
	double worst = val[0];
	for (int i = 1; i < HEADS_ARMS; i++)
		worst = fmax(worst, val[i]);
	lab_finding(out, "Same width %d, same parameter count (%zu): the best held-out loss is "
		    "%.3f with %d head%s (d_head %d); d_head %d gets %.3f, d_head 8 gets %.3f, "
		    "d_head %d gets %.3f.%s", dm, params, val[best], heads[best],
		    heads[best] > 1 ? "s" : "", dm / heads[best], dm, val[0], val[d8],
		    dm / heads[last], val[last],
		    worst - val[best] < 0.02 ? "  All are within 0.02, the size of run-to-run "
					       "noise here: at this scale the number of heads "
					       "hardly matters."
		    : best == 0 ? "  One head does best: not what the tutorial predicts, at this "
				  "size (2 layers)." : "");
	lab_finding(out, "%d heads at d_model %d are refused before training: %s", HEADS_BAD, dm,
		    refusal);
}

static int run_heads(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	int dm = ctx->quick ? 32 : 64, T = ctx->quick ? 32 : 64, B = 8;
	const int heads[HEADS_ARMS] = { 1, 2, 4, 8, dm / 2 };
	long steps = ctx->quick ? 60 : 1500;
	struct dataset d;
	if (load_data(ctx, T, &d, e))
		return -1;
	static const char *const head[] = { "heads", "d_head", "parameters", "final loss", "held-out" };
	lab_table_header(&out->table, 5, head);
	double val[HEADS_ARMS];
	size_t params = 0;
	int rc = 0, done = 0;
	for (int i = 0; i < HEADS_ARMS && rc == 0; i++) {
		struct model_config c = small_config(2, dm, heads[i], T);
		struct train_hparams hp;
		hparams(&hp, steps, B);
		char label[32];
		snprintf(label, sizeof label, "%d head%s", heads[i], heads[i] > 1 ? "s" : "");
		struct model *m;
		struct trainer tr;
		rc = fresh_arm(ctx, "heads", label, &c, &d, &hp, &m, &tr, out, e);
		double fin = NAN;
		if (rc == 0) {
			fin = tail_mean(&tr, HIST_LOSS);
			params = m->n_params;
			struct run_options o;
			run_options_native(m, &o);
			rc = lab_held_out(m, &o, &d, B, 4, &val[i], e);
		}
		arm_free(m, &tr);
		if (rc)
			break;
		char h[16], dh[16], p[32], f[32], v[32];
		snprintf(h, sizeof h, "%d", heads[i]);
		snprintf(dh, sizeof dh, "%d", dm / heads[i]);
		snprintf(p, sizeof p, "%zu", params);
		lab_table_row(&out->table, h, dh, p, lab_num(f, sizeof f, fin, 3),
			      lab_num(v, sizeof v, val[i], 3));
		done++;
	}
	if (done == HEADS_ARMS) {
		struct model_config c = small_config(2, dm, HEADS_BAD, T);
		struct err refused = { 0 };
		struct model *m = lab_model(&c, &d, 1337, &refused);
		if (m) { /* a broken invariant: the shape must not build */
			model_free(m);
			dataset_free(&d);
			return err_set(e, "lab heads: %d heads at d_model %d were not refused",
				       HEADS_BAD, dm);
		}
		heads_finding(out, dm, heads, val, params, refused.msg);
	}
	out->partial = rc == 1;
	dataset_free(&d);
	return rc;
}

/* -------------------------------------------------------------------- gqa */

/* A copy of src with G key/value heads (the explorer's conversion). */
static struct model *converted(struct model *src, int G, struct err *e)
{
	struct model_config c = src->cfg;
	c.n_kv_head = G;
	if (model_to_f32(src, "the lab's conversion", e))
		return NULL;
	struct model *m = model_new(&c, e);
	if (!m)
		return NULL;
	const float *w, *b;
	model_qkv_for(src, G, &w, &b);
	for (int i = 0; i < N_PARAMS; i++)
		if (m->psize[i])
			memcpy(m->p[i], i == P_QKVW ? w : i == P_QKVB ? b : src->p[i],
			       m->psize[i] * sizeof(float));
	model_clear_cache(m);
	return m;
}

static int run_gqa(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	struct model *base = model_open(ctx->base_model, e);
	if (!base)
		return err_prefix(e, "lab gqa");
	int B = ctx->quick ? 4 : 8, nb = ctx->quick ? 2 : 8;
	long steps = ctx->quick ? 10 : 150;
	struct dataset d;
	struct tokenizer *tok = base->tok;
	base->tok = NULL;
	if (dataset_load_tok(&d, ctx->data, tok, 0.1, e)) {
		model_free(base);
		return -1;
	}
	int rc = 0;
	if (dataset_check_context(&d, ctx->data, base->cfg.context, e) ||
	    dataset_set_windows(&d, base->cfg.context, false, 0, 1, 1, false, e)) {
		dataset_free(&d);
		model_free(base);
		return -1;
	}
	static const char *const head[] = { "model", "K/V heads", "held-out", "uptrained",
					    "natively trained" };
	lab_table_header(&out->table, 5, head);
	engine_set_threads(ctx->threads);
	struct run_options o;
	run_options_native(base, &o);
	double native = NAN, natgqa = NAN;
	rc = lab_held_out(base, &o, &d, B, nb, &native, e);
	struct model *nat = NULL;
	if (rc == 0 && ctx->native_gqa) {
		struct err ignore;
		nat = model_open(ctx->native_gqa, &ignore);
		if (nat && nat->cfg.vocab_size == base->cfg.vocab_size) {
			run_options_native(nat, &o);
			rc = lab_held_out(nat, &o, &d, B, nb, &natgqa, e);
		}
	}
	char a[32], b[32], c3[32], k[16];
	snprintf(k, sizeof k, "%d", base->cfg.n_kv_head);
	if (rc == 0)
		lab_table_row(&out->table, "native", k, lab_num(a, sizeof a, native, 3), "", "");
	int Gs[2] = { base->cfg.n_head / 2, 1 };
	double before[2] = { NAN, NAN }, after[2] = { NAN, NAN };
	int done = 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		struct model *m = converted(base, Gs[i], e);
		if (!m) {
			rc = -1;
			break;
		}
		run_options_native(m, &o);
		rc = lab_held_out(m, &o, &d, B, nb, &before[i], e);
		struct train_hparams hp;
		hparams(&hp, steps, B);
		hp.lr = 1e-3;
		char label[64];
		snprintf(label, sizeof label, "%s uptraining", Gs[i] == 1 ? "MQA" : "GQA");
		struct trainer tr;
		memset(&tr, 0, sizeof tr);
		if (rc == 0)
			rc = lab_train(ctx, "gqa", label, m, &d, &hp, &tr, e);
		if (rc == 0) {
			lab_curve(out, label, &tr);
			rc = lab_held_out(m, &o, &d, B, nb, &after[i], e);
		}
		arm_free(m, &tr);
		if (rc)
			break;
		snprintf(k, sizeof k, "%d", Gs[i]);
		lab_table_row(&out->table, Gs[i] == 1 ? "MQA, mean-pooled" : "GQA, mean-pooled", k,
			      lab_num(a, sizeof a, before[i], 3), lab_num(b, sizeof b, after[i], 3),
			      Gs[i] == base->cfg.n_head / 2 ? lab_num(c3, sizeof c3, natgqa, 3) : "");
		done++;
	}
	if (done == 2) {
		/* the share of the original run's steps, from its training record */
		double frac = 0;
		struct train_record rec;
		struct err ignored;
		if (base->train_meta && train_record_parse(base->train_meta, strlen(base->train_meta),
							    &rec, &ignored) == 0) {
			if (rec.steps_done > 0)
				frac = 100.0 * (double)steps / (double)rec.steps_done;
			train_record_free(&rec);
		}
		char share[64] = "";
		if (frac > 0)
			snprintf(share, sizeof share, " (%.1f%% of the original run's steps)", frac);
		lab_finding(out, "Mean-pooling to %d K/V heads takes the held-out loss from %.3f to %.3f; "
			    "%ld steps of uptraining%s bring it to %.3f.", Gs[0], native, before[0],
			    steps, share, after[0]);
		lab_finding(out, "MQA: %.3f after conversion, %.3f after the same uptraining.", before[1],
			    after[1]);
		if (isfinite(natgqa))
			lab_finding(out, "The natively trained GQA-%d model scores %.3f.", Gs[0], natgqa);
	}
	out->partial = rc == 1;
	model_free(nat);
	dataset_free(&d);
	model_free(base);
	return rc;
}

/* ------------------------------------------------------------------ fused */

/* Median of n doubles (sorts them). */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Milliseconds for the Q, K and V projections of N rows of C: one fused
 * product with 3C outputs, or one product of D outputs per head and per
 * Q/K/V (3H products), medians of reps timings. */
static void time_qkv(int N, int C, int H, int reps, double *fused, double *loop)
{
	int D = C / H;
	float *x = xmalloc_aligned((size_t)N * C * sizeof(float));
	float *w = xmalloc_aligned((size_t)3 * C * C * sizeof(float));
	float *y = xmalloc_aligned((size_t)N * 3 * C * sizeof(float));
	for (size_t i = 0; i < (size_t)N * C; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < (size_t)3 * C * C; i++)
		w[i] = (float)((i * 40503u) % 1000) / 50000.0f - 0.01f;
	double tf[32], tl[32];
	for (int r = 0; r < reps; r++) {
		double t0 = now_ms();
		matmul_forward(y, x, w, NULL, N, C, 3 * C);
		double t1 = now_ms();
		for (int k = 0; k < 3 * H; k++) /* one small projection per head */
			matmul_forward(y + (size_t)k * N * D, x, w + (size_t)k * D * C, NULL, N, C, D);
		double t2 = now_ms();
		tf[r] = t1 - t0;
		tl[r] = t2 - t1;
	}
	*fused = median(tf, reps);
	*loop = median(tl, reps);
	free(x);
	free(w);
	free(y);
}

static int run_fused(const struct lab_ctx *ctx, struct lab_result *out, struct err *e)
{
	(void)e;
	struct shape { const char *name; int N, C, H; } shapes[3] = {
		{ "shakespeare (256 x 128, 4 heads)", 256, 128, 4 },
		{ "GPT-2 small (1024 x 768, 12 heads)", 1024, 768, 12 },
		{ "one token (1 x 768, 12 heads)", 1, 768, 12 },
	};
	int reps = ctx->quick ? 5 : 21;
	static const char *const head[] = { "shape", "fused QKV ms", "per-head loop ms",
					    "loop / fused" };
	lab_table_header(&out->table, 4, head);
	engine_set_threads(ctx->threads);
	double ratio[3];
	for (int i = 0; i < 3; i++) {
		if (ctx->cancel && *ctx->cancel) {
			out->partial = true;
			return 1;
		}
		double f, l;
		time_qkv(shapes[i].N, shapes[i].C, shapes[i].H, reps, &f, &l);
		ratio[i] = l / f;
		char a[32], b[32], r[32];
		snprintf(a, sizeof a, "%.3f", f);
		snprintf(b, sizeof b, "%.3f", l);
		snprintf(r, sizeof r, "%.2f", ratio[i]);
		lab_table_row(&out->table, shapes[i].name, a, b, r);
	}
	lab_finding(out, "On this CPU the per-head loop takes %.2f, %.2f and %.2f times the fused "
		    "projection (medians of %d runs); the tutorial measured 3.6 times on a GPU, where "
		    "each small product also pays a kernel launch.", ratio[0], ratio[1], ratio[2], reps);
	return 0;
}

/* ---------------------------------------------------------------- registry */

const struct lab_experiment lab_experiments[] = {
	{ "residual", "residual connections keep gradients alive as depth grows",
	  "the first layer's gradient norm at initialisation, at depth 10, 20 and 50, with and "
	  "without residual connections", 1, 6, run_residual,
	  { { "depth" }, { "first grad, residual", "first grad, none" },
	    "the first layer's gradient norm at initialisation", true } },
	{ "norm", "pre-norm trains more stably than post-norm, deep stacks most of all",
	  "pre- vs post-norm at several depths (final and held-out loss, blocks whose gradient "
	  "died), and LayerNorm vs RMSNorm", 2, 95, run_norm,
	  { { "depth", "norm", "placement" }, { "final loss", "held-out" },
	    "loss, nats per token", false } },
	{ "scaling", "without 1/sqrt(d_k) the softmax saturates and training stalls",
	  "the same model trained with and without the scaling: loss and attention entropy",
	  1, 140, run_scaling,
	  { { "scores" }, { "final loss", "held-out", "attention entropy" },
	    "loss and entropy, nats", false } },
	{ "mask", "a mask applied after the softmax, or none, leaks the future",
	  "models trained causal, after-softmax and unmasked: training loss, and held-out loss "
	  "when run causally", 1, 110, run_mask,
	  { { "trained with" }, { "training loss", "held-out, own mask", "held-out, causal" },
	    "loss, nats per token", false } },
	{ "heads", "several heads beat one head of the same total width",
	  "1, 2, 4, 8 and d_model / 2 heads at one d_model (same parameter count): head dimension "
	  "64 down to 2 (quick: 32 down to 2), and 3 heads, which do not divide it, refused", 1, 135,
	  run_heads,
	  { { "heads" }, { "final loss", "held-out" }, "loss, nats per token", false } },
	{ "gqa", "MHA converts to GQA by mean-pooling K/V heads, and a little uptraining recovers it",
	  "shakespeare converted to GQA-2 and MQA, held-out loss before and after uptraining, "
	  "beside the natively trained GQA model", 2, 50, run_gqa,
	  { { "model" }, { "held-out", "uptrained", "natively trained" },
	    "held-out loss, nats per token", false } },
	{ "fused", "one fused QKV projection is faster than a loop over heads (3.6x on a GPU)",
	  "times the Q, K, V projections fused and per head on this CPU", 1, 1, run_fused,
	  { { "shape" }, { "fused QKV ms", "per-head loop ms" }, "milliseconds", true } },
	{ NULL, NULL, NULL, 0, 0, NULL, { { NULL }, { NULL }, NULL, false } },
};

const struct lab_experiment *lab_find(const char *name)
{
	for (const struct lab_experiment *x = lab_experiments; x->name; x++)
		if (strcmp(x->name, name) == 0)
			return x;
	return NULL;
}
