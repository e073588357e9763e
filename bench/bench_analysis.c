/*
 * bench_analysis.c — what the analyses cost beside one forward pass with
 * attention capture (not a test: it never fails on a slow number, it only
 * reports; "misses" against a target is a finding, not a failure).
 *
 * On a GPT-2-small-shaped model (12 layers, 12 heads, d_model 768, d_ff
 * 3072, vocabulary 50257, context 1024, LayerNorm pre-norm, learned
 * positions, GELU, biases, tied; random weights) at T = 256, prints:
 *   1. the machine and the cblas_sgemm rate of this run;
 *   2. the baseline: model_forward with RUN_LOGITS | RUN_ATTN, its matmul
 *      FLOPs and their time at the sgemm rate;
 *   3. lens_run on a finished capture run (the lens alone, the pass not
 *      counted), and the matmul floor of its L output layers (the last
 *      depth reads the run's logits);
 *   4. heat_compute for each kind (weights, scores, norms, rollout): each
 *      call makes its own run and forward pass, so its time includes one;
 *   5. patch_run: two whole passes, then per site the corrupted pass
 *      resumed at the patched block and the output layer on the last row.
 *      At T = 256: the 144 head sites and then block 0's T residual rows
 *      (stopped through its progress callback; the rows timed apart),
 *      against a forward pass with capture; the whole run (heads and rows)
 *      at T = 16, with the sites batched (patch_run's choice) and one site
 *      a pass; the rows at T = 256 projected from the heads' cost per
 *      block rerun (a row's pass reruns the blocks after its layer on the
 *      rows from its position on).
 *   6. compose_run: every pair of heads' Q-, K- and V-composition (weights
 *      only), against 2 s, beside its double-precision multiply-adds at the
 *      sgemm rate;
 *   7. dla_run at the last position: it makes its own pass (no attention
 *      capture, no logits: the output layer runs on its one row), against
 *      one forward pass with capture.
 * Each row: median ms, its ratio to the baseline, the target beside it
 * and "meets" / "misses", the child's peak RSS (VmHWM) and the extra peak
 * memory: that minus the baseline child's VmHWM.
 *
 * Every measurement runs in its own forked child (its own VmHWM); medians
 * after one warm-up; the parent never computes.  Threads: the default (the
 * cores present), as bench_forward; --threads N runs everything with N;
 * --circuits runs rows 1, 2, 6 and 7 only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "compose.h"
#include "config.h"
#include "dla.h"
#include "heat.h"
#include "lens.h"
#include "model.h"
#include "patch.h"
#include "util.h"

#define T_RUN 256
#define T_PATCH 16       /* the whole patch_run is measured at this length */
#define MAX_REPS 5
#define MIN_REPS 3
#define ROW_BUDGET_MS 8000.0

/* Targets from the issue tracker. */
#define LENS_TARGET 2.0       /* lens_run within 2x one forward pass */
#define LENS_TARGET_MB 100.0  /* and under 100 MB beyond it */
#define HEAT_TARGET 1.2       /* each heat quantity within 1.2x the forward pass */
#define COMPOSE_TARGET_MS 2000.0 /* all pairs of GPT-2 small under 2 s */
#define DLA_TARGET 1.0        /* dla_run, its own pass included, within one forward pass */

static int threads; /* --threads; 0 = the default */
static bool circuits_only; /* --circuits: the forward pass, compose_run and dla_run only */

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	double median_ms, min_ms;
	int reps;
	double hwm;          /* VmHWM at the end of the child */
	double cpu_per_wall;
	double gflops;       /* sgemm child */
	double fwd_ms;       /* the forward pass timed in the same child (patch T=8: RUN_LOGITS) */
	double ratio;        /* median of (analysis / forward) over the interleaved pairs */
	int sites;           /* patch children: the sites patch_run patched */
	double rows0_ms;     /* patch heads child: block 0's residual rows, after the heads */
};

static struct result in_child(child_fn fn, const void *arg)
{
	struct result res;
	run_in_child(fn, arg, threads, &res, sizeof res, res.msg, sizeof res.msg);
	return res;
}

static void sgemm_child(const void *arg, void *out)
{
	(void)arg;
	struct result *res = out;
	struct sgemm_rate sg = measure_sgemm();
	res->median_ms = sg.median_ms;
	res->min_ms = sg.min_ms;
	res->cpu_per_wall = sg.cpu_per_wall;
	res->gflops = sg.gflops;
	res->reps = SGEMM_REPS;
	res->ok = 1;
}

/* ------------------------------------------------------------- the jobs */

enum job_kind { FORWARD, LENS, HEAT, PATCH_HEADS, PATCH_FULL, COMPOSE, DLA };

struct job {
	const char *name;
	enum job_kind kind;
	enum heat_kind heat;
	int T;
	int batch; /* patch: patch_run's batch (0: its choice) */
};

/* The timing loop of every row: one warm-up, then up to MAX_REPS (fewer
 * when the warm-up says they would not fit ROW_BUDGET_MS, never below
 * MIN_REPS).  fn returns 0, or -1 with res->msg set. */
typedef int (*timed_fn)(void *ctx, struct result *res);

static int time_reps(timed_fn fn, void *ctx, struct result *res)
{
	double t[MAX_REPS], cpu0 = 0;
	int reps = MAX_REPS;
	for (int i = -1; i < reps; i++) {
		double t0 = now_ms();
		if (fn(ctx, res) != 0)
			return -1;
		double dt = now_ms() - t0;
		if (i < 0) {
			reps = fit_reps(dt, reps, ROW_BUDGET_MS, MIN_REPS);
			cpu0 = cpu_time_ms();
		} else {
			t[i] = dt;
		}
	}
	res->cpu_per_wall = cpu_per_wall(t, reps, cpu0);
	res->median_ms = median(t, reps);
	res->min_ms = minimum(t, reps);
	res->reps = reps;
	return 0;
}

struct ctx {
	struct model *m;
	struct run_options o;
	int *tokens, *corrupt;
	int T;
	struct run *run;
	enum heat_kind heat;
	volatile sig_atomic_t cancel;
	int batch;
	int stop_after; /* patch: cancel after this many sites (0: never) */
	int sites;
	int mark;       /* patch: the site count at which mark_ms is taken */
	double mark_ms;
};

static int do_forward(void *p, struct result *res)
{
	struct ctx *c = p;
	struct err e;
	if (model_forward(c->m, &c->o, c->tokens, NULL, 1, c->T, c->run, &e) != 0) {
		snprintf(res->msg, sizeof res->msg, "model_forward: %s", e.msg);
		return -1;
	}
	return 0;
}

/* The analysis rows: one call of fn alone (a warm-up; the child's VmHWM
 * after it is the analysis's peak), then a capture run if the child has
 * none, one warm-up pass, and `reps` pairs of (forward pass, fn), each
 * timed: the ratio of each pair is taken under the same load, and the
 * row's ratio is their median (other work on these cores comes and goes
 * within a run). */
static int time_pairs(timed_fn fn, struct ctx *c, struct result *res)
{
	double t0 = now_ms();
	if (fn(c, res) != 0)
		return -1;
	double warm = now_ms() - t0;
	res->hwm = proc_status_bytes("VmHWM");
	if (!c->run)
		c->run = run_new(&c->m->cfg, 1, c->T, RUN_LOGITS | RUN_ATTN);
	t0 = now_ms();
	if (do_forward(c, res) != 0)
		return -1;
	int reps = fit_reps(warm + now_ms() - t0, MAX_REPS, ROW_BUDGET_MS, MIN_REPS);
	double ta[MAX_REPS], tf[MAX_REPS], ratio[MAX_REPS];
	for (int i = 0; i < reps; i++) {
		t0 = now_ms();
		if (do_forward(c, res) != 0)
			return -1;
		double t1 = now_ms();
		if (fn(c, res) != 0)
			return -1;
		tf[i] = t1 - t0;
		ta[i] = now_ms() - t1;
		ratio[i] = ta[i] / tf[i];
	}
	res->median_ms = median(ta, reps);
	res->min_ms = minimum(ta, reps);
	res->fwd_ms = median(tf, reps);
	res->ratio = median(ratio, reps);
	res->reps = reps;
	return 0;
}

static int do_lens(void *p, struct result *res)
{
	struct ctx *c = p;
	(void)res;
	struct lens l;
	lens_run(c->m, c->run, &l);
	lens_free(&l);
	return 0;
}

static int do_heat(void *p, struct result *res)
{
	struct ctx *c = p;
	struct err e;
	struct heat h;
	if (heat_compute(c->m, &c->o, c->tokens, c->T, c->heat, &h, &e) != 0) {
		snprintf(res->msg, sizeof res->msg, "heat_compute: %s", e.msg);
		return -1;
	}
	heat_free(&h);
	return 0;
}

static int do_compose(void *p, struct result *res)
{
	struct ctx *c = p;
	struct err e;
	struct compose_result r;
	if (compose_run(c->m, &c->o, &r, &e) != 0) {
		snprintf(res->msg, sizeof res->msg, "compose_run: %s", e.msg);
		return -1;
	}
	compose_free(&r);
	return 0;
}

static int do_dla(void *p, struct result *res)
{
	struct ctx *c = p;
	struct err e;
	struct dla_result r;
	if (dla_run(c->m, &c->o, c->tokens, c->T, c->T - 1, -1, &r, &e) != 0) {
		snprintf(res->msg, sizeof res->msg, "dla_run: %s", e.msg);
		return -1;
	}
	dla_free(&r);
	return 0;
}

static void patch_progress(void *p, int done, int total)
{
	struct ctx *c = p;
	(void)total;
	c->sites = done;
	if (done == c->mark)
		c->mark_ms = now_ms();
	if (c->stop_after && done >= c->stop_after)
		c->cancel = 1;
}

/* patch_run on c->tokens and c->corrupt (stopped after c->stop_after
 * sites when set); while the two texts predict the same token at the last
 * position, the corrupted last token is changed. */
static int do_patch(void *p, struct result *res)
{
	struct ctx *c = p;
	const struct model_config *cfg = &c->m->cfg;
	struct err e;
	for (int tries = 0; tries < 16; tries++) {
		struct patch_result pr;
		c->cancel = 0;
		c->sites = 0;
		int rc = patch_run(c->m, &c->o, c->tokens, c->corrupt, c->T, c->batch, &c->cancel, patch_progress,
				   c, &pr, &e);
		if (rc == 0) {
			patch_free(&pr);
			return 0;
		}
		if (c->cancel && strstr(e.msg, "cancelled"))
			return 0;
		if (!strstr(e.msg, "same next token"))
			break;
		c->corrupt[c->T - 1] = (c->corrupt[c->T - 1] + 7919) % cfg->vocab_size;
	}
	snprintf(res->msg, sizeof res->msg, "patch_run: %s", e.msg);
	return -1;
}

static void job_child(const void *arg, void *out)
{
	const struct job *j = arg;
	struct result *res = out;
	struct model_config cfg;
	gpt2_cfg(&cfg);
	struct err e;
	struct ctx c = { .T = j->T, .heat = j->heat, .batch = j->batch };
	c.m = model_new(&cfg, &e);
	if (!c.m) {
		snprintf(res->msg, sizeof res->msg, "model_new: %s", e.msg);
		return;
	}
	model_init_random(c.m, 1234);
	run_options_native(c.m, &c.o);
	c.tokens = xmalloc((size_t)j->T * sizeof *c.tokens);
	c.corrupt = xmalloc((size_t)j->T * sizeof *c.corrupt);
	random_tokens(c.tokens, j->T, cfg.vocab_size, 42);
	memcpy(c.corrupt, c.tokens, (size_t)j->T * sizeof *c.corrupt);
	c.corrupt[j->T - 1] = (c.tokens[j->T - 1] + 1) % cfg.vocab_size;

	int rc = 0;
	switch (j->kind) {
	case FORWARD:
		c.run = run_new(&cfg, 1, j->T, RUN_LOGITS | RUN_ATTN);
		rc = time_reps(do_forward, &c, res);
		res->fwd_ms = res->median_ms;
		res->ratio = 1.0;
		res->hwm = proc_status_bytes("VmHWM");
		break;
	case LENS: /* one capture pass, then the lens of it, timed alone */
		c.run = run_new(&cfg, 1, j->T, RUN_LOGITS | RUN_ATTN);
		rc = do_forward(&c, res);
		if (rc == 0)
			rc = time_pairs(do_lens, &c, res);
		break;
	case HEAT:
		rc = time_pairs(do_heat, &c, res);
		break;
	case COMPOSE:
		rc = time_pairs(do_compose, &c, res);
		break;
	case DLA:
		rc = time_pairs(do_dla, &c, res);
		break;
	case PATCH_HEADS: /* the forward pass with capture, then patch_run over the heads and
			   * block 0's residual rows (timed apart) */
	case PATCH_FULL: { /* the forward pass at T_PATCH, then the whole patch_run */
		c.run = run_new(&cfg, 1, j->T, RUN_LOGITS | RUN_ATTN);
		rc = time_reps(do_forward, &c, res);
		if (rc != 0)
			break;
		res->fwd_ms = res->median_ms;
		c.mark = cfg.n_layer * cfg.n_head;
		c.stop_after = j->kind == PATCH_HEADS ? c.mark + j->T : 0;
		double t0 = now_ms();
		rc = do_patch(&c, res);
		double t1 = now_ms();
		if (j->kind == PATCH_HEADS) { /* the heads; then block 0's rows */
			res->rows0_ms = t1 - c.mark_ms;
			t1 = c.mark_ms;
		}
		res->median_ms = res->min_ms = t1 - t0;
		res->ratio = res->median_ms / res->fwd_ms;
		res->reps = 1;
		res->hwm = proc_status_bytes("VmHWM");
		break;
	}
	}
	res->sites = c.sites;
	res->ok = rc == 0;
	run_free(c.run);
	free(c.tokens);
	free(c.corrupt);
	model_free(c.m);
}

/* ----------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr, "usage: bench_analysis [--threads N] [--circuits]\n");
}

/* One row: name, times, the forward pass of the same child and the
 * paired ratio, target and verdict, memory against the baseline child. */
static void print_row(const char *name, const struct result *r, double base_hwm,
		      const char *target, const char *verdict)
{
	if (!r->ok) {
		printf("  %-16s FAILED: %s\n", name, r->msg);
		return;
	}
	printf("  %-16s %9.1f %9.1f %9.1f %7.2fx %-20s %-7s %8.1f %+9.1f %4d\n", name, r->median_ms,
	       r->min_ms, r->fwd_ms, r->ratio, target, verdict, r->hwm / MB, (r->hwm - base_hwm) / MB,
	       r->reps);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			threads = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--circuits") == 0) {
			circuits_only = true;
		} else {
			usage();
			return 2;
		}
	}
	if (threads < 0) {
		usage();
		return 2;
	}
	double t_start = now_ms();
	engine_set_threads(threads);
	printf("bench_analysis — the analyses beside one forward pass with capture (GPT-2-small "
	       "shape, random weights, T = %d)\n\n", T_RUN);
	print_machine();
	if (threads)
		printf("  threads:   %d (--threads) in every child\n", threads);

	struct result sg = in_child(sgemm_child, NULL);
	if (!sg.ok) {
		printf("sgemm: FAILED: %s\n", sg.msg);
		return 1;
	}
	printf("\nsgemm %dx%dx%d: median %.3f ms, min %.3f ms of %d, cpu/wall %.2f -> %.1f GFLOP/s "
	       "(median)\n",
	       SGEMM_M, SGEMM_N, SGEMM_K, sg.median_ms, sg.min_ms, sg.reps, sg.cpu_per_wall,
	       sg.gflops);

	struct model_config cfg;
	gpt2_cfg(&cfg);
	int L = cfg.n_layer, H = cfg.n_head;

	printf("\nmedian (min) ms of `reps` after 1 warm-up.  Each analysis child also times the\n"
	       "forward pass with capture, interleaved: fwd ms is its median there, ratio the median\n"
	       "of (analysis / forward) over the pairs (other work on these cores comes and goes).\n"
	       "peak MB = the child's VmHWM after one analysis call (before its own capture run for\n"
	       "the pairs), extra MB = that minus the forward child's VmHWM (MB = 2^20 bytes)\n");
	printf("  %-16s %9s %9s %9s %8s %-20s %-7s %8s %9s %4s\n", "", "median ms", "min ms",
	       "fwd ms", "ratio", "target", "", "peak MB", "extra MB", "reps");

	struct job fj = { "forward+capture", FORWARD, 0, T_RUN, 0 };
	struct result fw = in_child(job_child, &fj);
	if (!fw.ok) {
		printf("  forward: FAILED: %s\n", fw.msg);
		print_end(t_start);
		return 1;
	}
	print_row(fj.name, &fw, fw.hwm, "(the baseline)", "");

	char tgt[64];
	struct result ln = { 0 }, hr[HEAT_KINDS] = { { 0 } }, ps = { 0 }, pr = { 0 }, pr1 = { 0 };
	if (circuits_only)
		goto circuits;

	/* lens: time and memory targets */
	struct job lj = { "lens_run", LENS, 0, T_RUN, 0 };
	ln = in_child(job_child, &lj);
	snprintf(tgt, sizeof tgt, "<= %.1fx, < %.0f MB", LENS_TARGET, LENS_TARGET_MB);
	bool lens_ok = ln.ok && ln.ratio <= LENS_TARGET && (ln.hwm - fw.hwm) / MB < LENS_TARGET_MB;
	print_row(lj.name, &ln, fw.hwm, tgt, lens_ok ? "meets" : "misses");

	/* heat kinds */
	for (int k = 0; k < HEAT_KINDS; k++) {
		char name[32];
		snprintf(name, sizeof name, "heat %s", heat_kind_name((enum heat_kind)k));
		struct job hj = { name, HEAT, (enum heat_kind)k, T_RUN, 0 };
		hr[k] = in_child(job_child, &hj);
		snprintf(tgt, sizeof tgt, "<= %.1fx", HEAT_TARGET);
		bool ok = hr[k].ok && hr[k].ratio <= HEAT_TARGET;
		print_row(name, &hr[k], fw.hwm, tgt, ok ? "meets" : "misses");
	}

	/* patch: the heads at T_RUN, the whole run at T_PATCH */
	struct job ph = { "patch heads", PATCH_HEADS, 0, T_RUN, 0 };
	ps = in_child(job_child, &ph);
	print_row(ph.name, &ps, fw.hwm, "(report)", "");
	char fname[32];
	snprintf(fname, sizeof fname, "patch_run T=%d", T_PATCH);
	struct job pf = { fname, PATCH_FULL, 0, T_PATCH, 0 };
	pr = in_child(job_child, &pf);
	print_row(pf.name, &pr, fw.hwm, "(report)", "");
	struct job pf1 = { "  one site a pass", PATCH_FULL, 0, T_PATCH, 1 };
	pr1 = in_child(job_child, &pf1);
	print_row(pf1.name, &pr1, fw.hwm, "(report)", "");

circuits: /* composition and attribution */
	struct job cj = { "compose_run", COMPOSE, 0, T_RUN, 0 };
	struct result cr = in_child(job_child, &cj);
	snprintf(tgt, sizeof tgt, "< %.0f ms", COMPOSE_TARGET_MS);
	print_row(cj.name, &cr, fw.hwm, tgt, cr.ok && cr.median_ms < COMPOSE_TARGET_MS ? "meets" : "misses");
	struct job dj = { "dla_run", DLA, 0, T_RUN, 0 };
	struct result dr = in_child(job_child, &dj);
	snprintf(tgt, sizeof tgt, "<= %.1fx", DLA_TARGET);
	print_row(dj.name, &dr, fw.hwm, tgt, dr.ok && dr.ratio <= DLA_TARGET ? "meets" : "misses");

	/* ---- what the rows mean */
	double floor_fw = forward_flops(&cfg, T_RUN) / (sg.gflops * 1e9) * 1e3;
	/* depths 0 .. L-1: the last reads the run's own logits */
	double lens_flops = L * 2.0 * T_RUN * cfg.d_model * cfg.vocab_size;
	double floor_lens = lens_flops / (sg.gflops * 1e9) * 1e3;
	printf("\nforward+capture: %.1f GFLOP of matmul = %.1f ms at the sgemm rate; measured %.2fx "
	       "that (cpu/wall %.2f)\n",
	       forward_flops(&cfg, T_RUN) / 1e9, floor_fw, fw.median_ms / floor_fw, fw.cpu_per_wall);
	if (ln.ok)
		printf("lens_run: %d depths x the output layer (%d x %d x %d; depth %d reads the run's "
		       "own logits) = %.1f GFLOP = %.1f ms at the\n"
		       "  sgemm rate, %.2fx the forward pass's floor: the %.1fx target is out of reach of "
		       "this lens at any kernel speed;\n"
		       "  measured %.2fx its floor; forward + lens = %.2fx the forward pass; time %s, extra "
		       "memory %+.1f MB %s\n",
		       L, T_RUN, cfg.d_model, cfg.vocab_size, L, lens_flops / 1e9, floor_lens,
		       floor_lens / floor_fw, LENS_TARGET, ln.median_ms / floor_lens,
		       1.0 + ln.ratio, ln.ratio <= LENS_TARGET ? "meets" : "misses",
		       (ln.hwm - fw.hwm) / MB, (ln.hwm - fw.hwm) / MB < LENS_TARGET_MB ? "meets" : "misses");
	if (!circuits_only) {
		printf("heat_compute makes its own forward pass each call, so its ratio includes one pass: "
		       "one without logits that\n"
		       "  keeps no layer (each layer's quantity is computed at its heads site from what the "
		       "run holds then);\n"
		       "  median ms minus the capture pass of the same child:");
		for (int k = 0; k < HEAT_KINDS; k++)
			if (hr[k].ok)
				printf(" %s %+.0f ms", heat_kind_name((enum heat_kind)k),
				       hr[k].median_ms - hr[k].fwd_ms);
		printf("\n");
	}
	/* block reruns: a head at layer l reruns L - l blocks on every row; a
	 * residual row t after block l the L - 1 - l blocks after it on rows
	 * t .. T-1, (T - t) / T of a block on average (T + 1) / 2T */
	double head_blocks = H * L * (L + 1) / 2.0;
	double row_blocks = (double)T_RUN * L * (L - 1) / 2.0 * (T_RUN + 1) / (2.0 * T_RUN);
	if (ps.ok && ps.sites == L * H + T_RUN) {
		double per_block = ps.median_ms / head_blocks;
		printf("patch_run over the %d heads (T=%d): %.1f s = %.1fx one forward pass with capture "
		       "(%.0f ms, the same child),\n"
		       "  %.2fx a pass per head: each reruns only the blocks from its layer on (%.1f of %d "
		       "on average) and the output layer on one row;\n"
		       "  whole passes would cost %d passes.  The %d x %d residual rows rerun the blocks "
		       "after theirs from their row on,\n"
		       "  %.0f blocks' worth in all: ~%.0f s more at %.1f ms a block (projected);\n"
		       "  measured in the same child: block 0's %d rows (the most, %d blocks each) %.1f s, "
		       "projected %.1f s\n",
		       L * H, T_RUN, ps.median_ms / 1e3, ps.ratio, ps.fwd_ms, ps.ratio / (L * H),
		       (L + 1) / 2.0, L, L * H, L, T_RUN, row_blocks, row_blocks * per_block / 1e3, per_block,
		       T_RUN, L - 1, ps.rows0_ms / 1e3,
		       per_block * (L - 1) * (T_RUN + 1) / 2.0 / 1e3);
	} else if (ps.ok) {
		printf("patch heads: stopped after %d sites, not %d\n", ps.sites, L * H + T_RUN);
	}
	if (pr.ok && pr1.ok)
		printf("patch_run (T=%d, whole: 2 passes + %d heads + %d x %d rows): %.0f ms = %.1fx one "
		       "forward pass at T=%d (%.2f ms);\n"
		       "  batching the sites (up to 512 rows, %d sites a pass) is %.1fx faster than one site "
		       "a pass (%.0f ms, %.1fx)\n",
		       T_PATCH, L * H, L, T_PATCH, pr.median_ms, pr.ratio, T_PATCH, pr.fwd_ms, H,
		       pr1.median_ms / pr.median_ms, pr1.median_ms, pr1.ratio);
	if (cr.ok) {
		/* compose.c's products: the Grams and factors (8 of D x C x D a head),
		 * the upper-triangle blocks of 4 factors a head (C^2 D / 2 each), the
		 * pair products (3 kinds x H^2 L (L-1)/2 pairs x C^2 / 2, the unused
		 * la >= lb entries of each group's product left out) */
		double C = cfg.d_model, D = C / H, n = H * H * L * (L - 1) / 2.0;
		double fl = 2.0 * (8.0 * L * H * D * D * C + 4.0 * L * H * C * C * D / 2 +
				   3.0 * n * C * C / 2);
		double floor_c = fl / (sg.gflops * 1e9) * 1e3;
		printf("compose_run: %d pairs x 3 kinds, %.1f GFLOP of double products (at least) = %.0f "
		       "ms at the sgemm rate;\n"
		       "  measured %.0f ms = %.1fx that (double runs at about half the float rate), "
		       "%.2fx one forward pass with capture; %s the %.0f ms target\n",
		       (int)n, fl / 1e9, floor_c, cr.median_ms, cr.median_ms / floor_c, cr.ratio,
		       cr.median_ms < COMPOSE_TARGET_MS ? "meets" : "misses", COMPOSE_TARGET_MS);
	}
	if (dr.ok) {
		/* the output layer on all T rows, which dla_run leaves out but one */
		double out_fl = 2.0 * T_RUN * cfg.d_model * cfg.vocab_size;
		printf("dla_run: its own pass (a hook keeps the heads' outputs at the position; the "
		       "output layer on that row only)\n"
		       "  and the split: %.2fx one forward pass with capture (%.0f ms against %.0f ms, "
		       "same child); %s the %.1fx target;\n"
		       "  the %d rows' output layer it leaves out is %.1f of the pass's %.1f GFLOP "
		       "(%.0f%%)\n",
		       dr.ratio, dr.median_ms, dr.fwd_ms, dr.ratio <= DLA_TARGET ? "meets" : "misses",
		       DLA_TARGET, T_RUN - 1, out_fl * (T_RUN - 1) / T_RUN / 1e9,
		       forward_flops(&cfg, T_RUN) / 1e9,
		       100.0 * out_fl * (T_RUN - 1) / T_RUN / forward_flops(&cfg, T_RUN));
	}
	print_end(t_start);
	return 0;
}
