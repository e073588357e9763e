/*
 * bench_forward.c — forward-pass benchmark (not a test: it never fails on a
 * slow number, it only reports).
 *
 * Prints, in one run:
 *   1. the machine: CPU model, cores, OpenBLAS build and thread count;
 *   2. the measured cblas_sgemm rate for a 1024x768x768 product;
 *   3. forward time, matmul FLOPs, achieved GFLOP/s, the ratio of forward time
 *      to the time the matmul FLOPs would take at the measured sgemm rate,
 *      run buffer bytes and peak RSS, without and with attention capture,
 *      for a Shakespeare-sized model and a GPT-2-small-shaped one;
 *   4. the "key-to-redraw" number: the Shakespeare shape at T = 64.
 *
 * Every measurement runs in its own forked child so that each gets its own
 * peak RSS (VmHWM); the parent only sets thread counts and never computes.
 * Children send their numbers back through a pipe.  The load average is
 * printed because other processes on the same cores distort every number
 * (the default OpenMP/OpenBLAS spin-waiting makes that much worse).
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "model.h"
#include "util.h"

#define SGEMM_M 1024
#define SGEMM_N 768
#define SGEMM_K 768
#define SGEMM_WARM 3
#define SGEMM_REPS 15
#define MAX_REPS 16
#define MIN_REPS 5
#define ROW_BUDGET_MS 4000.0 /* per shakespeare row; gpt2 rows always run MIN_REPS */

static const double MB = 1024.0 * 1024.0;

/* ------------------------------------------------------------- utilities */

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

/* A "Vm...:" field of /proc/self/status, in bytes (0 when unreadable). */
static double proc_status_bytes(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	size_t n = strlen(field);
	double kb = 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			kb = strtod(line + n + 1, NULL);
			break;
		}
	fclose(f);
	return kb * 1024.0;
}

static void cpu_model(char *out, size_t len)
{
	snprintf(out, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');
			if (p) {
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				p[strcspn(p, "\n")] = 0;
				snprintf(out, len, "%s", p);
			}
			break;
		}
	fclose(f);
}

static double cpu_time_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static int cpu_has_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	char line[8192];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		for (char *t = strtok(strchr(line, ':') + 1, " \n"); t; t = strtok(NULL, " \n"))
			if (strcmp(t, flag) == 0)
				found = 1;
		break;
	}
	fclose(f);
	return found;
}

/* ------------------------------------------------------- fork a measurement */

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	double median_ms, min_ms;
	int reps;
	double run_bytes;
	double params_bytes;
	double rss_model;  /* VmRSS after building the model, before the run */
	double hwm;        /* VmHWM after the timed passes */
	double loss;
	double gflops;     /* sgemm child only */
	double cpu_per_wall; /* CPU time of all threads / wall time over the timed passes */
};

typedef void (*child_fn)(const void *arg, struct result *res);

/* Runs fn(arg) in a forked child and returns its result. */
static struct result in_child(child_fn fn, const void *arg)
{
	struct result res;
	memset(&res, 0, sizeof res);
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(res.msg, sizeof res.msg, "pipe: %s", strerror(errno));
		return res;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(res.msg, sizeof res.msg, "fork: %s", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return res;
	}
	if (pid == 0) {
		close(fd[0]);
		engine_set_threads(0);
		fn(arg, &res);
		ssize_t w = write(fd[1], &res, sizeof res);
		_exit(w == (ssize_t)sizeof res ? 0 : 1);
	}
	close(fd[1]);
	size_t got = 0;
	while (got < sizeof res) {
		ssize_t n = read(fd[0], (char *)&res + got, sizeof res - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got != sizeof res) {
		memset(&res, 0, sizeof res);
		if (WIFSIGNALED(st))
			snprintf(res.msg, sizeof res.msg, "child killed by signal %d", WTERMSIG(st));
		else
			snprintf(res.msg, sizeof res.msg, "child exited %d without a result",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	return res;
}

/* ---------------------------------------------------------------- sgemm */

static void sgemm_child(const void *arg, struct result *res)
{
	(void)arg;
	int M = SGEMM_M, N = SGEMM_N, K = SGEMM_K;
	float *a = xmalloc_aligned((size_t)M * K * sizeof(float));
	float *b = xmalloc_aligned((size_t)N * K * sizeof(float));
	float *c = xmalloc_aligned((size_t)M * N * sizeof(float));
	struct rng r;
	rng_seed(&r, 7);
	for (size_t i = 0; i < (size_t)M * K; i++)
		a[i] = rng_uniform(&r) - 0.5f;
	for (size_t i = 0; i < (size_t)N * K; i++)
		b[i] = rng_uniform(&r) - 0.5f;
	double t[SGEMM_REPS], cpu0 = 0;
	/* The same layout matmul_forward uses: out = inp w^T. */
	for (int i = 0; i < SGEMM_WARM + SGEMM_REPS; i++) {
		double t0 = now_ms();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K,
			    1.0f, a, K, b, K, 0.0f, c, N);
		double dt = now_ms() - t0;
		if (i >= SGEMM_WARM)
			t[i - SGEMM_WARM] = dt;
		else if (i == SGEMM_WARM - 1)
			cpu0 = cpu_time_ms();
	}
	double wall = 0;
	for (int i = 0; i < SGEMM_REPS; i++)
		wall += t[i];
	res->cpu_per_wall = (cpu_time_ms() - cpu0) / wall;
	res->reps = SGEMM_REPS;
	res->min_ms = t[0];
	for (int i = 1; i < SGEMM_REPS; i++)
		res->min_ms = t[i] < res->min_ms ? t[i] : res->min_ms;
	res->median_ms = median(t, SGEMM_REPS);
	res->gflops = 2.0 * M * N * K / (res->median_ms * 1e6);
	res->ok = 1;
	free(a);
	free(b);
	free(c);
}

/* -------------------------------------------------------------- forward */

struct fwd_job {
	const char *name;
	struct model_config cfg;
	int T;
	unsigned flags;
	int reps;
};

static void forward_child(const void *arg, struct result *res)
{
	const struct fwd_job *j = arg;
	struct err e;
	struct model *m = model_new(&j->cfg, &e);
	if (!m) {
		snprintf(res->msg, sizeof res->msg, "model_new: %s", e.msg);
		return;
	}
	model_init_random(m, 1234);
	res->params_bytes = (double)m->n_params * sizeof(float);
	res->rss_model = proc_status_bytes("VmRSS");

	int *tokens = xmalloc((size_t)j->T * sizeof(int));
	struct rng r;
	rng_seed(&r, 42);
	for (int i = 0; i < j->T; i++)
		tokens[i] = (int)(rng_u32(&r) % (uint32_t)j->cfg.vocab_size);

	struct run *run = run_new(&j->cfg, 1, j->T, j->flags);
	res->run_bytes = (double)run_bytes(run);
	struct run_options o;
	run_options_native(m, &o);

	double t[MAX_REPS];
	int reps = j->reps < MAX_REPS ? j->reps : MAX_REPS;
	double cpu0 = 0, t_warm = 0;
	for (int i = -1; i < reps; i++) { /* i = -1: warm-up */
		/* Time budget: fewer passes (never below MIN_REPS) when the
		 * warm-up says this row would take longer than ROW_BUDGET_MS. */
		if (i == 0 && t_warm * reps > ROW_BUDGET_MS) {
			int fit = (int)(ROW_BUDGET_MS / t_warm);
			reps = fit > MIN_REPS ? (fit < reps ? fit : reps) : MIN_REPS;
		}
		double t0 = now_ms();
		if (model_forward(m, &o, tokens, NULL, 1, j->T, run, &e) != 0) {
			snprintf(res->msg, sizeof res->msg, "model_forward: %s", e.msg);
			return;
		}
		double dt = now_ms() - t0;
		if (i >= 0) {
			t[i] = dt;
		} else {
			t_warm = dt;
			cpu0 = cpu_time_ms();
		}
	}
	double wall = 0;
	for (int i = 0; i < reps; i++)
		wall += t[i];
	res->cpu_per_wall = (cpu_time_ms() - cpu0) / wall;
	res->loss = run->loss;
	res->hwm = proc_status_bytes("VmHWM");
	res->reps = reps;
	res->min_ms = t[0];
	for (int i = 1; i < reps; i++)
		res->min_ms = t[i] < res->min_ms ? t[i] : res->min_ms;
	res->median_ms = median(t, reps);
	res->ok = 1;
	run_free(run);
	free(tokens);
	model_free(m);
}

/* Matmul FLOPs of one forward pass over T tokens (B = 1, native K/V heads). */
static double forward_flops(const struct model_config *c, int T)
{
	double C = c->d_model, V = c->vocab_size, H = c->n_head, D = cfg_d_head(c);
	double QKV = cfg_qkv_rows(c, c->n_kv_head), FF = cfg_ff_rows(c), F = c->d_ff;
	double t = T;
	double layer = 2 * t * C * QKV + 2 * t * C * C + 2 * t * C * FF + 2 * t * F * C +
		       2.0 * 2.0 * t * t * D * H;
	return c->n_layer * layer + 2 * t * C * V;
}

/* ----------------------------------------------------------------- main */

static void shakespeare_cfg(struct model_config *c)
{
	config_default(c);
	c->vocab_size = 65;
	c->d_model = 128;
	c->n_layer = 4;
	c->n_head = 4;
	c->n_kv_head = 4;
	c->d_ff = 512;
	c->context = 256;
}

static void gpt2_cfg(struct model_config *c)
{
	config_default(c); /* LayerNorm, pre-norm, learned positions, GELU, biases, tied */
	c->vocab_size = 50257;
	c->d_model = 768;
	c->n_layer = 12;
	c->n_head = 12;
	c->n_kv_head = 12;
	c->d_ff = 3072;
	c->context = 1024;
}

struct row {
	struct fwd_job job;
	struct result res;
	double flops;
};

static void print_header(void)
{
	printf("  %-12s %5s %-4s %9s %9s %8s %8s %8s %7s %9s %9s %9s %4s\n", "model", "T", "attn",
	       "median ms", "min ms", "cpu/wall", "GFLOP", "GFLOP/s", "ratio", "run MB", "peak RSS",
	       "model RSS", "reps");
}

static void print_row(const struct row *w, double sgemm_gflops)
{
	const struct result *s = &w->res;
	const char *cap = (w->job.flags & RUN_ATTN) ? "yes" : "no";
	if (!s->ok) {
		printf("  %-12s %5d %-4s  FAILED: %s\n", w->job.name, w->job.T, cap, s->msg);
		return;
	}
	double gf = w->flops / 1e9;
	double ideal_ms = w->flops / (sgemm_gflops * 1e9) * 1e3;
	printf("  %-12s %5d %-4s %9.2f %9.2f %8.2f %8.2f %8.1f %6.2fx %9.1f %9.1f %9.1f %4d\n",
	       w->job.name, w->job.T, cap, s->median_ms, s->min_ms, s->cpu_per_wall, gf,
	       gf / (s->median_ms / 1e3), s->median_ms / ideal_ms, s->run_bytes / MB,
	       s->hwm / MB, s->rss_model / MB, s->reps);
	fflush(stdout);
}

int main(void)
{
	double t_start = now_ms();
	char cpu[256];
	cpu_model(cpu, sizeof cpu);
	engine_set_threads(0);
	printf("bench_forward — forward pass of attnscope (B = 1, random weights, native options)\n\n");
	printf("machine\n");
	printf("  cpu:       %s (avx2 %s, avx512f %s, fma %s)\n", cpu,
	       cpu_has_flag("avx2") ? "yes" : "no", cpu_has_flag("avx512f") ? "yes" : "no",
	       cpu_has_flag("fma") ? "yes" : "no");
	printf("  cores:     %d (cpu_count)\n", cpu_count());
	int par = openblas_get_parallel();
	printf("  load:      %.2f (1-min load average at start; other processes share these cores)\n",
	       load_avg());
	static const char *envs[] = { "OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT",
				      "OPENBLAS_NUM_THREADS" };
	for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++)
		if (getenv(envs[i]))
			printf("  env:       %s=%s\n", envs[i], getenv(envs[i]));
	printf("  openblas:  %s\n", openblas_get_config());
	printf("             core %s, %s threading, %d threads after engine_set_threads(0)\n",
	       openblas_get_corename(),
	       par == 0 ? "no" : par == 1 ? "pthreads" : par == 2 ? "OpenMP" : "unknown",
	       openblas_get_num_threads());

	struct result sg = in_child(sgemm_child, NULL);
	if (!sg.ok) {
		printf("sgemm: FAILED: %s\n", sg.msg);
		return 1;
	}
	printf("\nsgemm %dx%dx%d (RowMajor, A x B^T as matmul_forward): median %.3f ms, min %.3f ms\n"
	       "  of %d after %d warm-up, cpu/wall %.2f -> %.1f GFLOP/s (median), %.1f GFLOP/s (best)\n",
	       SGEMM_M, SGEMM_N, SGEMM_K, sg.median_ms, sg.min_ms, SGEMM_REPS, SGEMM_WARM,
	       sg.cpu_per_wall, sg.gflops, 2.0 * SGEMM_M * SGEMM_N * SGEMM_K / (sg.min_ms * 1e6));

	struct model_config shk, gpt;
	shakespeare_cfg(&shk);
	gpt2_cfg(&gpt);
	/* Smallest first; each row in its own child process (own peak RSS). */
	struct row rows[] = {
		{ { "shakespeare", shk, 64, RUN_LOGITS, 11 }, { 0 }, 0 },
		{ { "shakespeare", shk, 64, RUN_LOGITS | RUN_ATTN, 11 }, { 0 }, 0 },
		{ { "shakespeare", shk, 256, RUN_LOGITS, 11 }, { 0 }, 0 },
		{ { "shakespeare", shk, 256, RUN_LOGITS | RUN_ATTN, 11 }, { 0 }, 0 },
		{ { "gpt2-small", gpt, 256, RUN_LOGITS, 5 }, { 0 }, 0 },
		{ { "gpt2-small", gpt, 256, RUN_LOGITS | RUN_ATTN, 5 }, { 0 }, 0 },
		{ { "gpt2-small", gpt, 1024, RUN_LOGITS, 5 }, { 0 }, 0 },
		{ { "gpt2-small", gpt, 1024, RUN_LOGITS | RUN_ATTN, 5 }, { 0 }, 0 },
	};
	int nrows = (int)(sizeof rows / sizeof rows[0]);

	printf("\nforward, B = 1: median (and min) of `reps` passes after 1 warm-up\n"
	       "  attn     RUN_LOGITS|RUN_ATTN (yes) or RUN_LOGITS (no)\n"
	       "  cpu/wall CPU time of all threads / wall time (spin-waiting counts as CPU)\n"
	       "  GFLOP    matmul FLOPs (projections, MLP, output layer, QK^T and AV over full T x T)\n"
	       "  ratio    forward time / (GFLOP / measured sgemm rate); target for gpt2 T=256: <= 1.5x\n"
	       "  run MB   run_bytes(); peak RSS = VmHWM of the child process measuring this row;\n"
	       "  model RSS = its VmRSS after model_init_random, before run_new (all MB = 2^20 bytes)\n");
	print_header();
	for (int i = 0; i < nrows; i++) {
		rows[i].flops = forward_flops(&rows[i].job.cfg, rows[i].job.T);
		rows[i].res = in_child(forward_child, &rows[i].job);
		print_row(&rows[i], sg.gflops);
	}

	printf("\n");
	/* key-to-redraw: the Shakespeare shape at T = 64 */
	if (rows[0].res.ok && rows[1].res.ok)
		printf("key-to-redraw (shakespeare, T=64, typed sentence): forward %.3f ms without capture, "
		       "%.3f ms with capture\n", rows[0].res.median_ms, rows[1].res.median_ms);

	const struct row *b256 = &rows[5];
	if (b256->res.ok) {
		double ideal_ms = b256->flops / (sg.gflops * 1e9) * 1e3;
		double ratio = b256->res.median_ms / ideal_ms;
		printf("gpt2-small T=256 capture: %.1f ms vs %.1f ms of matmul at %.1f GFLOP/s\n",
		       b256->res.median_ms, ideal_ms, sg.gflops);
		printf("target: <= 1.5x matmul time at sgemm rate: %.2fx (%s)\n", ratio,
		       ratio <= 1.5 ? "pass" : "miss");
	}

	const struct row *n1024 = &rows[6], *c1024 = &rows[7];
	if (n1024->res.ok && c1024->res.ok) {
		const struct model_config *c = &c1024->job.cfg;
		double T = c1024->job.T;
		double heads = (double)c->n_layer * c->n_head;
		double mats = heads * T * T * sizeof(float);
		double one_layer = (double)c->n_head * T * T * sizeof(float);
		double delta_run = c1024->res.run_bytes - n1024->res.run_bytes;
		double att_buf = delta_run + one_layer; /* without capture one layer is kept */
		double delta_rss = c1024->res.hwm - n1024->res.hwm;
		printf("gpt2-small T=1024 capture: attention buffer %.1f MB (run_bytes delta %.1f MB + the "
		       "one layer kept without capture %.1f MB)\n",
		       att_buf / MB, delta_run / MB, one_layer / MB);
		printf("  vs %.0f T x T float matrices = %.1f MB: %.3fx; peak RSS capture - no capture = %.1f MB "
		       "(the %.0f extra matrices are %.1f MB)\n",
		       heads, mats / MB, att_buf / mats, delta_rss / MB, heads - c->n_head,
		       (mats - one_layer) / MB);
	}
	double l = load_avg();
	printf("\nload average at end %.2f on %d cores%s\n", l, cpu_count(),
	       l > 0.5 * cpu_count() ? ": other work was running, timings are pessimistic" : "");
	printf("total bench time %.1f s\n", (now_ms() - t_start) / 1e3);
	return 0;
}
