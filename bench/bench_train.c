/*
 * bench_train.c — training-step benchmark (not a test: it never fails on a
 * slow number, it only reports).
 *
 * Prints, in one run:
 *   1. the machine: CPU model, cores, load average, OpenBLAS build;
 *   2. the measured cblas_sgemm rate for a 1024x768x768 product (median),
 *      with the default thread count and with 1 thread;
 *   3. for a Shakespeare-sized model at B 16 x T 256 and a GPT-2-small-shaped
 *      one at B 4 x T 256, each with the default threads and with 1 thread:
 *      the median time of one full optimizer step as trainer_step (src/engine/trainer.c) does it
 *      (zero the gradients, forward with RUN_TRAIN, backward, global grad
 *      norm and clipping factor, AdamW update), tokens/s, the FLOPs of a
 *      step, the achieved GFLOP/s and its ratio to the sgemm rate measured
 *      with the same thread count in this run (against a target: pass or
 *      miss), the time of each phase, and peak RSS.
 *
 * Every measurement runs in its own forked child (so each has its own peak
 * RSS, VmHWM); the parent never computes.  Children send their numbers back
 * through a pipe.  Tokens are random (a seeded rng), weights are
 * model_init_random.  The load average is printed because other processes
 * on the same cores distort every number.
 *
 * Usage: bench_train [--only shakespeare|gpt2] [--threads N] [--steps N]
 *   --only     run just that model's rows (sgemm is always measured)
 *   --threads  run just that thread count: 0 (the default, cores present) or 1
 *   --steps    measured steps per row (default: up to 11 within a time
 *              budget for shakespeare, 5 for gpt2; never below 5 without
 *              this flag) — for profiling with perf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backward.h"
#include "bench_common.h"
#include "config.h"
#include "model.h"
#include "optim.h"
#include "util.h"

#define MAX_REPS 32
#define MIN_REPS 5
#define ROW_BUDGET_MS 6000.0 /* measured steps of one shakespeare row */

/* Phases of one step: zero grads, forward, backward, grad norm + AdamW. */
enum { PH_ZERO, PH_FWD, PH_BWD, PH_OPT, N_PH };

/* ------------------------------------------------------- fork a measurement */

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	int reps, warm;
	double median_ms, min_ms;   /* whole step */
	double phase_ms[N_PH];      /* median of each phase */
	double gflops;              /* sgemm child only */
	double cpu_per_wall;        /* CPU time of all threads / wall, measured steps */
	double load_start;          /* 1-min load average when the child started */
	double hwm;                 /* VmHWM at the end (peak RSS) */
	double rss_setup;           /* VmRSS after allocating everything, before step 1 */
	double params_bytes, run_bytes;
	double loss_first, loss_last;
	struct spread ratio;        /* paired: each step's GFLOP/s / the rate of the sgemm
				     * product timed right before it (min..max) */
};

/* Runs fn(arg) in a forked child with `threads` BLAS threads (0 = the
 * default) and returns its result. */
static struct result in_child(child_fn fn, const void *arg, int threads)
{
	struct result res;
	run_in_child(fn, arg, threads, &res, sizeof res, res.msg, sizeof res.msg);
	return res;
}

/* ---------------------------------------------------------------- sgemm */

static void sgemm_child(const void *arg, void *out)
{
	(void)arg;
	struct result *res = out;
	res->load_start = load_avg();
	struct sgemm_rate sg = measure_sgemm();
	res->cpu_per_wall = sg.cpu_per_wall;
	res->reps = SGEMM_REPS;
	res->warm = SGEMM_WARM;
	res->min_ms = sg.min_ms;
	res->median_ms = sg.median_ms;
	res->gflops = sg.gflops;
	res->hwm = proc_status_bytes("VmHWM");
	res->ok = 1;
}

/* ------------------------------------------------------------- training */

struct train_job {
	const char *name;
	struct model_config cfg;
	int B, T;
	int warm;       /* warm-up steps (not measured) */
	int reps;       /* measured steps wanted */
	int min_reps;   /* the time budget never goes below this */
	double budget_ms; /* 0: no budget */
	double target;  /* ratio to the sgemm rate to reach */
};

struct flops {
	double params_ne;  /* non-embedding parameters (all but WTE, WPE, LMHEAD) */
	double dense, attn, out, total;
};
static struct flops step_flops(const struct model_config *c, int B, int T);

static void train_child(const void *arg, void *out)
{
	struct result *res = out;
	res->load_start = load_avg();
	const struct train_job *j = arg;
	struct err e;
	struct model *m = model_new(&j->cfg, &e);
	if (!m) {
		snprintf(res->msg, sizeof res->msg, "model_new: %s", e.msg);
		return;
	}
	model_init_random(m, 1234);
	int B = j->B, T = j->T, N = B * T, V = j->cfg.vocab_size;

	struct adamw opt;
	adamw_init(&opt, m, 0.1f);
	struct run *run = run_new(&j->cfg, B, T, RUN_TRAIN);
	struct backward_state *bs = backward_new(&j->cfg, B, T);
	float *grads = xmalloc_aligned(m->n_params * sizeof(float));
	memset(grads, 0, m->n_params * sizeof(float));
	int *tokens = xmalloc((size_t)N * sizeof(int));
	int *targets = xmalloc((size_t)N * sizeof(int));
	struct run_options o;
	run_options_native(m, &o);
	struct rng r;
	rng_seed(&r, 42);
	res->params_bytes = (double)m->n_params * sizeof(float);
	res->run_bytes = (double)run_bytes(run);
	res->rss_setup = proc_status_bytes("VmRSS");

	double t[MAX_REPS], ph[N_PH][MAX_REPS], ratio[MAX_REPS];
	int reps = j->reps < MAX_REPS ? j->reps : MAX_REPS;
	struct sgemm_ref ref;
	sgemm_ref_init(&ref);
	double flops = step_flops(&j->cfg, B, T).total, sg_ms = 0;
	double cpu0 = 0, t_warm = 0;
	for (int i = -j->warm; i < reps; i++) { /* i < 0: warm-up */
		if (i == 0) {
			/* Time budget: fewer steps (never below min_reps) when the
			 * last warm-up says the row would take longer. */
			reps = fit_reps(t_warm, reps, j->budget_ms, j->min_reps);
			cpu0 = cpu_time_ms();
		}
		/* a batch: B windows of T + 1 random tokens, as dataset_sample */
		for (int b = 0; b < B; b++) {
			int prev = (int)(rng_u32(&r) % (uint32_t)V);
			for (int k = 0; k < T; k++) {
				int next = (int)(rng_u32(&r) % (uint32_t)V);
				tokens[b * T + k] = prev;
				targets[b * T + k] = next;
				prev = next;
			}
		}
		double tp[N_PH + 1];
		sg_ms = sgemm_ref_ms(&ref); /* this step's reference, same threads */
		tp[0] = now_ms();
		memset(grads, 0, m->n_params * sizeof(float));
		tp[1] = now_ms();
		if (model_forward(m, &o, tokens, targets, B, T, run, &e) != 0) {
			snprintf(res->msg, sizeof res->msg, "model_forward: %s", e.msg);
			return;
		}
		tp[2] = now_ms();
		if (model_backward(m, &o, tokens, targets, run, grads, bs, &e) != 0) {
			snprintf(res->msg, sizeof res->msg, "model_backward: %s", e.msg);
			return;
		}
		tp[3] = now_ms();
		double gnorm = grad_norms(m, grads, NULL);
		adamw_update(&opt, m, grads, clip_scale(gnorm, 1.0f), 6e-4f);
		model_clear_cache(m);
		tp[4] = now_ms();
		if (!isfinite(run->loss) || !isfinite(gnorm)) {
			snprintf(res->msg, sizeof res->msg, "step %d: loss %g, grad norm %g not finite",
				 i, run->loss, gnorm);
			return;
		}
		if (i == -j->warm)
			res->loss_first = run->loss;
		res->loss_last = run->loss;
		double dt = tp[4] - tp[0];
		if (i < 0) {
			t_warm = dt;
			continue;
		}
		t[i] = dt;
		ratio[i] = 1.0 / floor_ratio(dt, sg_ms, flops);
		for (int p = 0; p < N_PH; p++)
			ph[p][i] = tp[p + 1] - tp[p];
	}
	res->cpu_per_wall = cpu_per_wall(t, reps, cpu0);
	res->hwm = proc_status_bytes("VmHWM");
	res->reps = reps;
	res->warm = j->warm;
	res->min_ms = minimum(t, reps);
	res->median_ms = median(t, reps);
	res->ratio = spread_of(ratio, reps);
	sgemm_ref_free(&ref);
	for (int p = 0; p < N_PH; p++)
		res->phase_ms[p] = median(ph[p], reps);
	res->ok = 1;
	free(tokens);
	free(targets);
	free(grads);
	backward_free(bs);
	run_free(run);
	adamw_free(&opt);
	model_free(m);
}

/* ------------------------------------------------------------ step FLOPs */


/* FLOPs of one training step (forward + backward) over B x T tokens:
 *   dense 6 * P_ne * B*T
 *   attn  3 * 2 * 2 * T*T * C * L * B  (forward QK^T and AV over the full
 *         T x T, as attention_forward computes them; backward twice that)
 *   out   6 * B*T * C * V              (output layer, forward + backward) */
static struct flops step_flops(const struct model_config *c, int B, int T)
{
	struct flops f;
	size_t shape[3];
	int nd;
	double p = 0;
	for (int i = 0; i < N_PARAMS; i++)
		if (i != P_WTE && i != P_WPE && i != P_LMHEAD)
			p += (double)param_shape(c, (enum param_id)i, shape, &nd);
	double bt = (double)B * T, C = c->d_model, L = c->n_layer, V = c->vocab_size;
	f.params_ne = p;
	f.dense = 6.0 * p * bt;
	f.attn = 3.0 * 2.0 * 2.0 * (double)T * T * C * L * B;
	f.out = 6.0 * bt * C * V;
	f.total = f.dense + f.attn + f.out;
	return f;
}

/* ----------------------------------------------------------------- main */

struct row {
	struct train_job job;
	int threads;      /* 0 = default */
	struct result res;
	struct flops fl;
	double sgemm;     /* GFLOP/s of the sgemm with the same threads */
};

static void usage(void)
{
	fprintf(stderr, "usage: bench_train [--only shakespeare|gpt2] [--threads N] [--steps N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int only_threads = -1, steps = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			only_threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else
			usage();
	}
	if (only && strcmp(only, "shakespeare") != 0 && strcmp(only, "gpt2") != 0)
		usage();
	if (steps < 0 || steps > MAX_REPS || only_threads < -1)
		usage();

	double t_start = now_ms();
	engine_set_threads(0);
	int def_threads = openblas_get_num_threads();
	printf("bench_train — one optimizer step of attnscope training (random tokens, random init)\n\n");
	print_machine();

	/* sgemm with the default threads and with 1 */
	int thread_counts[2] = { 0, 1 };
	double sgemm_rate[2] = { 0, 0 };
	printf("\nsgemm %dx%dx%d (RowMajor, A x B^T as matmul_forward), median of %d after %d warm-up,\n"
	       "each thread count in its own child process\n",
	       SGEMM_M, SGEMM_N, SGEMM_K, SGEMM_REPS, SGEMM_WARM);
	printf("  %-8s %9s %9s %8s %10s %10s %6s\n", "threads", "median ms", "min ms", "cpu/wall",
	       "GFLOP/s", "best GF/s", "load");
	for (int k = 0; k < 2; k++) {
		struct result sg = in_child(sgemm_child, NULL, thread_counts[k]);
		if (!sg.ok) {
			printf("  sgemm (%d threads): FAILED: %s\n", thread_counts[k], sg.msg);
			return 1;
		}
		sgemm_rate[k] = sg.gflops;
		printf("  %-8d %9.3f %9.3f %8.2f %10.1f %10.1f %6.2f\n",
		       thread_counts[k] ? thread_counts[k] : def_threads, sg.median_ms, sg.min_ms,
		       sg.cpu_per_wall, sg.gflops, 2.0 * SGEMM_M * SGEMM_N * SGEMM_K / (sg.min_ms * 1e6),
		       sg.load_start);
		fflush(stdout);
	}

	struct model_config shk, gpt;
	shakespeare_cfg(&shk, 66);
	gpt2_cfg(&gpt);
	struct train_job jobs[2] = {
		{ "shakespeare", shk, 16, 256, 2, 11, MIN_REPS, ROW_BUDGET_MS, 0.35 },
		{ "gpt2-small", gpt, 4, 256, 1, 5, MIN_REPS, 0, 0.55 },
	};
	if (steps > 0)
		for (int i = 0; i < 2; i++) {
			jobs[i].reps = steps;
			jobs[i].min_reps = steps;
			jobs[i].budget_ms = 0;
		}
	struct row rows[4];
	int nrows = 0;
	for (int i = 0; i < 2; i++) {
		if (only && strncmp(jobs[i].name, only, strlen(only)) != 0)
			continue;
		for (int k = 0; k < 2; k++) {
			if (only_threads >= 0 && thread_counts[k] != only_threads)
				continue;
			struct row *w = &rows[nrows++];
			memset(w, 0, sizeof *w);
			w->job = jobs[i];
			w->threads = thread_counts[k];
			w->sgemm = sgemm_rate[k];
			w->fl = step_flops(&w->job.cfg, w->job.B, w->job.T);
		}
	}

	printf("\nshapes (LayerNorm pre-norm, learned positions, GELU, biases, tied embeddings)\n");
	for (int i = 0; i < 2; i++) {
		const struct train_job *j = &jobs[i];
		const struct model_config *c = &j->cfg;
		struct flops f = step_flops(c, j->B, j->T);
		printf("  %-12s V %d, L %d, H %d, C %d, F %d, context %d; %zu params (%.0f non-embedding);"
		       " B %d x T %d\n",
		       j->name, c->vocab_size, c->n_layer, c->n_head, c->d_model, c->d_ff, c->context,
		       config_param_count(c), f.params_ne, j->B, j->T);
	}
	printf("\nFLOPs of one step = 6 * P_ne * B*T                   (dense: every non-embedding param,\n"
	       "                                                      forward 2 + backward 4 per token)\n"
	       "                  + 3 * 2 * 2 * T*T * C * L * B       (attention: QK^T and AV over the full\n"
	       "                                                      T x T forward, backward twice that)\n"
	       "                  + 6 * B*T * C * V                   (output layer, forward + backward)\n"
	       "  P_ne = parameters other than WTE, WPE (and LMHEAD); norms and biases counted as dense\n");
	for (int i = 0; i < 2; i++) {
		struct flops f = step_flops(&jobs[i].cfg, jobs[i].B, jobs[i].T);
		printf("  %-12s %.2f GFLOP = %.2f dense + %.2f attention + %.2f output layer\n",
		       jobs[i].name, f.total / 1e9, f.dense / 1e9, f.attn / 1e9, f.out / 1e9);
	}

	printf("\ntraining step: zero grads, model_forward (RUN_TRAIN), model_backward, grad_norms +\n"
	       "clip_scale, adamw_update; median (and min) of `reps` steps after `warm` warm-up steps,\n"
	       "each row in its own child process\n"
	       "  ratio     achieved GFLOP/s / sgemm GFLOP/s with the same thread count, paired: the\n"
	       "            median over the steps of each step's rate / the rate of one sgemm product\n"
	       "            timed right before it in the same child; the verdict is on it\n"
	       "  min..max  the spread of those per-step ratios\n"
	       "  sgemm     the rate of the separate sgemm child above (for scale)\n"
	       "  cpu/wall  CPU time of all threads / wall time over the measured steps (near 1 with\n"
	       "            several threads: they did not run in parallel; below 1: the process waited)\n"
	       "  peak RSS  VmHWM of the child (MB = 2^20 bytes); state = params + grads + 2 AdamW moments\n");
	printf("  %-12s %3s %8s %9s %9s %9s %8s %8s %8s %13s %6s %-6s %8s %8s %8s %6s %5s\n", "model",
	       "thr", "B x T", "median ms", "min ms", "tokens/s", "GFLOP/s", "sgemm", "ratio",
	       "min..max", "target", "",
	       "cpu/wall", "peak RSS", "state MB", "run MB", "reps");
	for (int i = 0; i < nrows; i++) {
		struct row *w = &rows[i];
		w->res = in_child(train_child, &w->job, w->threads);
		const struct result *s = &w->res;
		int thr = w->threads ? w->threads : def_threads;
		char bt[32];
		snprintf(bt, sizeof bt, "%dx%d", w->job.B, w->job.T);
		if (!s->ok) {
			printf("  %-12s %3d %8s  FAILED: %s\n", w->job.name, thr, bt, s->msg);
			continue;
		}
		double gfs = w->fl.total / (s->median_ms * 1e6);
		double ratio = s->ratio.med;
		printf("  %-12s %3d %8s %9.1f %9.1f %9.0f %8.1f %8.1f %7.1f%% %5.1f..%-5.1f%% %5.0f%% %-6s "
		       "%8.2f %8.1f %8.1f %6.1f %2d+%d\n",
		       w->job.name, thr, bt, s->median_ms, s->min_ms,
		       (double)w->job.B * w->job.T / (s->median_ms / 1e3), gfs, w->sgemm, 100 * ratio,
		       100 * s->ratio.min, 100 * s->ratio.max, 100 * w->job.target,
		       verdict(ratio, false, w->job.target), s->cpu_per_wall,
		       s->hwm / MB, 4 * s->params_bytes / MB, s->run_bytes / MB, s->reps, s->warm);
		fflush(stdout);
	}

	printf("\nphases (median ms of each; forward counts 1/3 of the step FLOPs, backward 2/3)\n");
	printf("  %-12s %3s %9s %9s %9s %11s %10s %10s %12s %12s %6s\n", "model", "thr", "zero",
	       "forward", "backward", "norm+adamw", "fwd GF/s", "bwd GF/s", "fwd/sgemm", "bwd/sgemm",
	       "load");
	for (int i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];
		const struct result *s = &w->res;
		if (!s->ok)
			continue;
		int thr = w->threads ? w->threads : def_threads;
		double fwd = w->fl.total / 3 / (s->phase_ms[PH_FWD] * 1e6);
		double bwd = 2 * w->fl.total / 3 / (s->phase_ms[PH_BWD] * 1e6);
		printf("  %-12s %3d %9.1f %9.1f %9.1f %11.1f %10.1f %10.1f %11.1f%% %11.1f%% %6.2f\n",
		       w->job.name, thr, s->phase_ms[PH_ZERO], s->phase_ms[PH_FWD], s->phase_ms[PH_BWD],
		       s->phase_ms[PH_OPT], fwd, bwd, 100 * fwd / w->sgemm, 100 * bwd / w->sgemm,
		       s->load_start);
	}

	printf("\nsanity: loss of the first warm-up step and of the last step (random tokens, a new batch\n"
	       "each step: nothing to learn, so ~ln V; this only checks that every step stays finite)\n");
	for (int i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];
		if (w->res.ok)
			printf("  %-12s %d thr: %.4f -> %.4f (ln V = %.4f)\n", w->job.name,
			       w->threads ? w->threads : def_threads, w->res.loss_first, w->res.loss_last,
			       log((double)w->job.cfg.vocab_size));
	}

	printf("\ntargets: achieved / sgemm >= 35%% for shakespeare, >= 55%% for gpt2-small (paired)\n");
	for (int i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];
		if (!w->res.ok)
			continue;
		char name[64];
		int thr = w->threads ? w->threads : def_threads;
		snprintf(name, sizeof name, "train %s %d thread%s: rate / sgemm", w->job.name, thr,
			 thr == 1 ? "" : "s");
		bench_summary_row(name, w->res.ratio, false, w->job.target);
	}
	print_end(t_start);
	return 0;
}
