/*
 * bench_common.h — what the benchmarks share: machine information, the
 * cblas_sgemm rate measurement, running a measurement in a forked child
 * (its own peak RSS, VmHWM), medians and spreads, and the paired rounds
 * every verdict is given from.
 *
 * Paired rounds: on a machine other work shares, a rate measured once and
 * a time measured later do not see the same load.  A bench interleaves
 * its reference with the measured work instead (sgemm_ref_ms, one product
 * right before each repetition, in the same process with the same
 * threads), takes the ratio of each round (work_i against reference_i),
 * and gives its verdict from the median of those ratios (spread_of: the
 * median and the min / max).  bench_summary_row appends the verdict to the
 * file $BENCH_SUMMARY (make bench sets it; bench/summary.sh prints the
 * table at the end).
 *
 * A header of static inline functions, not a .c file in bench/: the
 * Makefile builds and runs every .c file there as a benchmark of its own.
 */
#ifndef ATTNSCOPE_BENCH_COMMON_H
#define ATTNSCOPE_BENCH_COMMON_H

#include <cblas.h>
#include <errno.h>
#include <ftw.h>
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

static const double MB = 1024.0 * 1024.0;

/* ------------------------------------------------------------- utilities */

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts a copy, v is left as is). */
static inline double median(const double *v, int n)
{
	double *w = xmalloc((size_t)n * sizeof *w);
	memcpy(w, v, (size_t)n * sizeof *w);
	qsort(w, (size_t)n, sizeof *w, bench_cmp_double);
	double m = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
	free(w);
	return m;
}

static inline double minimum(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* CPU time of all threads of this process so far. */
static inline double cpu_time_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* CPU time since cpu0 / the wall time of the runs t[0..n). */
static inline double cpu_per_wall(const double *t, int n, double cpu0)
{
	double wall = 0;
	for (int i = 0; i < n; i++)
		wall += t[i];
	return (cpu_time_ms() - cpu0) / wall;
}

/* How many of `reps` measured runs fit in budget_ms after a warm-up run of
 * t_warm ms: fewer, never below min_reps (budget_ms <= 0: no budget). */
static inline int fit_reps(double t_warm, int reps, double budget_ms, int min_reps)
{
	if (budget_ms <= 0 || t_warm * reps <= budget_ms)
		return reps;
	int fit = (int)(budget_ms / t_warm);
	return fit > min_reps ? (fit < reps ? fit : reps) : min_reps;
}

/* A "Vm...:" field of /proc/self/status, in bytes (0 when unreadable). */
static inline double proc_status_bytes(const char *field)
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

/* ---------------------------------------------------------------- machine */

static inline void cpu_model(char *out, size_t len)
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

static inline double load_avg(void)
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

static inline int cpu_has_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	char line[8192];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			break;
		for (char *t = strtok(colon + 1, " \n"); t; t = strtok(NULL, " \n"))
			if (strcmp(t, flag) == 0)
				found = 1;
		break;
	}
	fclose(f);
	return found;
}

/* Prints the "machine" section: CPU, cores, load average, the OpenMP and
 * OpenBLAS environment, the OpenBLAS build and its thread count (call after
 * engine_set_threads(0)). */
static inline void print_machine(void)
{
	char cpu[256];
	cpu_model(cpu, sizeof cpu);
	int par = openblas_get_parallel();
	printf("machine\n");
	printf("  cpu:       %s (avx2 %s, avx512f %s, fma %s)\n", cpu,
	       cpu_has_flag("avx2") ? "yes" : "no", cpu_has_flag("avx512f") ? "yes" : "no",
	       cpu_has_flag("fma") ? "yes" : "no");
	printf("  cores:     %d (cpu_count)\n", cpu_count());
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
}

/* Prints the closing lines: the load average now and the time since t_start. */
static inline void print_end(double t_start)
{
	double l = load_avg();
	printf("\nload average at end %.2f on %d cores%s\n", l, cpu_count(),
	       l > 0.5 * cpu_count() ? ": other work was running, timings are pessimistic" : "");
	printf("total bench time %.1f s\n", (now_ms() - t_start) / 1e3);
}

/* ---------------------------------------------------------------- models */

/* The Shakespeare-sized shape (LayerNorm, pre-norm, learned positions,
 * GELU, biases, tied) with the given vocabulary. */
static inline void shakespeare_cfg(struct model_config *c, int vocab)
{
	config_default(c);
	c->vocab_size = vocab;
	c->d_model = 128;
	c->n_layer = 4;
	c->n_head = 4;
	c->n_kv_head = 4;
	c->d_ff = 512;
	c->context = 256;
}

/* The GPT-2-small shape (LayerNorm, pre-norm, learned positions, GELU,
 * biases, tied). */
static inline void gpt2_cfg(struct model_config *c)
{
	config_default(c);
	c->vocab_size = 50257;
	c->d_model = 768;
	c->n_layer = 12;
	c->n_head = 12;
	c->n_kv_head = 12;
	c->d_ff = 3072;
	c->context = 1024;
}

/* The stories15M shape of llama2.c (RMSNorm, pre-norm, RoPE, SwiGLU, no
 * biases, tied) with kv_heads key/value heads (the original has 6). */
static inline void stories15m_cfg(struct model_config *c, int kv_heads)
{
	config_default(c);
	c->vocab_size = 32000;
	c->d_model = 288;
	c->n_layer = 6;
	c->n_head = 6;
	c->n_kv_head = kv_heads;
	c->d_ff = 768;
	c->context = 256;
	c->norm = NORM_RMS;
	c->pos = POS_ROPE;
	c->mlp = MLP_SWIGLU;
	c->bias = false;
	c->tied = true;
}

/* n token ids below V from seed: the same ids for the same seed. */
static inline void random_tokens(int *out, int n, int V, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	for (int i = 0; i < n; i++)
		out[i] = (int)(rng_u32(&r) % (uint32_t)V);
}

/* Matmul FLOPs of one forward pass over T tokens (B = 1, native K/V heads):
 * projections, MLP, output layer, and QK^T and AV over the full T x T. */
static inline double forward_flops(const struct model_config *c, int T)
{
	double C = c->d_model, V = c->vocab_size, H = c->n_head, D = cfg_d_head(c);
	double QKV = cfg_qkv_rows(c, c->n_kv_head), FF = cfg_ff_rows(c), F = c->d_ff;
	double t = T;
	double layer = 2 * t * C * QKV + 2 * t * C * C + 2 * t * C * FF + 2 * t * F * C +
		       2.0 * 2.0 * t * t * D * H;
	return c->n_layer * layer + 2 * t * C * V;
}

/* Weight floats one decoder step multiplies its row through (native K/V
 * heads): every block's QKV, output and MLP matrices and the output layer,
 * each read once per token. */
static inline double step_weight_floats(const struct model_config *c)
{
	double C = c->d_model, V = c->vocab_size;
	double QKV = cfg_qkv_rows(c, c->n_kv_head), FF = cfg_ff_rows(c), F = c->d_ff;
	return c->n_layer * (C * QKV + C * C + C * FF + F * C) + C * V;
}

/* Matmul FLOPs of one decoder step at position pos: 2 per weight, and
 * q.k and the weighted sum of values over the pos + 1 keys it sees. */
static inline double decode_step_flops(const struct model_config *c, int pos)
{
	double D = cfg_d_head(c), H = c->n_head;
	return 2 * step_weight_floats(c) + c->n_layer * 2.0 * 2.0 * (pos + 1) * D * H;
}

/* ------------------------------------------------------------------ sgemm */

struct sgemm_rate {
	double median_ms, min_ms;
	double cpu_per_wall;
	double gflops;      /* at the median time */
	double best_gflops; /* at the min time */
};

/* Times SGEMM_REPS products of SGEMM_M x SGEMM_N x SGEMM_K after SGEMM_WARM
 * warm-up ones, in the layout matmul_forward uses: out = inp w^T. */
static inline struct sgemm_rate measure_sgemm(void)
{
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
	for (int i = 0; i < SGEMM_WARM + SGEMM_REPS; i++) {
		if (i == SGEMM_WARM)
			cpu0 = cpu_time_ms();
		double t0 = now_ms();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K,
			    1.0f, a, K, b, K, 0.0f, c, N);
		double dt = now_ms() - t0;
		if (i >= SGEMM_WARM)
			t[i - SGEMM_WARM] = dt;
	}
	struct sgemm_rate s;
	s.cpu_per_wall = cpu_per_wall(t, SGEMM_REPS, cpu0);
	s.min_ms = minimum(t, SGEMM_REPS);
	s.median_ms = median(t, SGEMM_REPS);
	s.gflops = 2.0 * M * N * K / (s.median_ms * 1e6);
	s.best_gflops = 2.0 * M * N * K / (s.min_ms * 1e6);
	free(a);
	free(b);
	free(c);
	return s;
}

/* ------------------------------------------------ paired rounds, summary */

/* The median and the extremes of n values. */
struct spread {
	double med, min, max;
	int n;
};

static inline struct spread spread_of(const double *v, int n)
{
	struct spread s = { 0, 0, 0, n };
	if (n <= 0)
		return s;
	s.med = median(v, n);
	s.min = minimum(v, n);
	s.max = v[0];
	for (int i = 1; i < n; i++)
		s.max = v[i] > s.max ? v[i] : s.max;
	return s;
}

/* The sgemm reference of paired rounds: the product of measure_sgemm, its
 * operands kept so that one product can be timed between repetitions. */
struct sgemm_ref {
	float *a, *b, *c;
};

static inline void sgemm_ref_init(struct sgemm_ref *r)
{
	int M = SGEMM_M, N = SGEMM_N, K = SGEMM_K;
	r->a = xmalloc_aligned((size_t)M * K * sizeof(float));
	r->b = xmalloc_aligned((size_t)N * K * sizeof(float));
	r->c = xmalloc_aligned((size_t)M * N * sizeof(float));
	struct rng g;
	rng_seed(&g, 7);
	for (size_t i = 0; i < (size_t)M * K; i++)
		r->a[i] = rng_uniform(&g) - 0.5f;
	for (size_t i = 0; i < (size_t)N * K; i++)
		r->b[i] = rng_uniform(&g) - 0.5f;
	memset(r->c, 0, (size_t)M * N * sizeof(float));
}

/* Milliseconds of one product (out = a b^T, as matmul_forward). */
static inline double sgemm_ref_ms(struct sgemm_ref *r)
{
	double t0 = now_ms();
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, SGEMM_M, SGEMM_N, SGEMM_K, 1.0f, r->a,
		    SGEMM_K, r->b, SGEMM_K, 0.0f, r->c, SGEMM_N);
	return now_ms() - t0;
}

static inline void sgemm_ref_free(struct sgemm_ref *r)
{
	free(r->a);
	free(r->b);
	free(r->c);
	r->a = r->b = r->c = NULL;
}

/* The FLOPs of the reference product. */
static inline double sgemm_ref_flops(void)
{
	return 2.0 * SGEMM_M * SGEMM_N * SGEMM_K;
}

/* work_ms over the time `flops` take at the rate of a reference product
 * that took sgemm_ms: one round's ratio to the matmul floor. */
static inline double floor_ratio(double work_ms, double sgemm_ms, double flops)
{
	return work_ms / (sgemm_ms * flops / sgemm_ref_flops());
}

/* "meets" or "misses": value against target, lower (le) or higher better. */
static inline const char *verdict(double value, bool le, double target)
{
	return (le ? value <= target : value >= target) ? "meets" : "misses";
}

/* Appends one row of the make bench summary to $BENCH_SUMMARY (nothing
 * when unset): name, the median of r with its min and max over r.n
 * rounds (r.n 0: no value, printed "-"), the target as text ("<= 1.25",
 * or "-" for none), the verdict as text ("meets", "misses", or "info"
 * for a figure with no target, "refused" for a load refused) and the
 * load average now.  Tab-separated, one line; bench/summary.sh prints
 * them as a table. */
static inline void bench_summary_text(const char *name, struct spread r, const char *target,
				      const char *verdict_text)
{
	if (r.n > 0)
		printf("summary: %s: %.3fx (%.3f..%.3f over %d rounds), target %s%s: %s\n", name, r.med,
		       r.min, r.max, r.n, target, strcmp(target, "-") ? "x" : "", verdict_text);
	else
		printf("summary: %s: -, %s\n", name, verdict_text);
	const char *path = getenv("BENCH_SUMMARY");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "a");
	if (!f) {
		fprintf(stderr, "bench: cannot append to %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "%s\t%.3f\t%.3f..%.3f\t%d\t%s\t%s\t%.2f\n", name, r.med, r.min, r.max, r.n,
		target, verdict_text, load_avg());
	fclose(f);
}

/* bench_summary_text of the median of paired ratios r against target,
 * lower (le) or higher better: "meets" or "misses". */
static inline void bench_summary_row(const char *name, struct spread r, bool le, double target)
{
	char t[32];
	snprintf(t, sizeof t, "%s %.2f", le ? "<=" : ">=", target);
	bench_summary_text(name, r, t, verdict(r.med, le, target));
}

/* ------------------------------------------------------- fork a measurement */

typedef void (*child_fn)(const void *arg, void *res);

/* Runs fn(arg, res) in a forked child with `threads` BLAS threads (0 = the
 * default); res (size bytes, zeroed first) receives the child's result
 * through a pipe.  When there is none, res is zeroed and msg (msg_size
 * bytes inside res) says why. */
static inline void run_in_child(child_fn fn, const void *arg, int threads, void *res,
				size_t size, char *msg, size_t msg_size)
{
	memset(res, 0, size);
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(msg, msg_size, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(msg, msg_size, "fork: %s", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		close(fd[0]);
		engine_set_threads(threads);
		fn(arg, res);
		ssize_t w = write(fd[1], res, size);
		_exit(w == (ssize_t)size ? 0 : 1);
	}
	close(fd[1]);
	size_t got = 0;
	while (got < size) {
		ssize_t n = read(fd[0], (char *)res + got, size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got != size) {
		memset(res, 0, size);
		if (WIFSIGNALED(st))
			snprintf(msg, msg_size, "child killed by signal %d", WTERMSIG(st));
		else
			snprintf(msg, msg_size, "child exited %d without a result",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

/* ------------------------------------------------- a scratch directory */

/* The path of this process's scratch directory ("" until bench_tmpdir). */
static inline char *bench_dir(void)
{
	static char path[64];
	return path;
}

static inline int bench_rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void bench_dir_remove(void)
{
	if (bench_dir()[0])
		nftw(bench_dir(), bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes /tmp/attnscope-bench-NAME-XXXXXX, removed with what it holds when
 * the process exits; returns its path (bench_dir()), or NULL with errno
 * set. */
static inline const char *bench_tmpdir(const char *name)
{
	char *d = bench_dir();
	snprintf(d, 64, "/tmp/attnscope-bench-%.20s-XXXXXX", name);
	if (!mkdtemp(d)) {
		d[0] = '\0';
		return NULL;
	}
	atexit(bench_dir_remove);
	return d;
}

/* The directory holding tokenizers/gpt2 ($ATTNSCOPE_SHARED, else
 * ../shared), or NULL when its vocab.json cannot be read; the path
 * looked at is left in vocab (n bytes) for the message. */
static inline const char *bench_gpt2_shared(char *vocab, size_t n)
{
	const char *shared = getenv("ATTNSCOPE_SHARED");
	shared = shared && *shared ? shared : "../shared";
	snprintf(vocab, n, "%s/tokenizers/gpt2/vocab.json", shared);
	return access(vocab, R_OK) == 0 ? shared : NULL;
}

/* Links GPT-2's vocab.json and merges.txt from SHARED/tokenizers/gpt2 into
 * dir (a model directory's tokenizer).  0, or -1 with errno set. */
static inline int bench_link_gpt2_tokenizer(const char *shared, const char *dir)
{
	static const char *const files[] = { "vocab.json", "merges.txt" };
	for (int i = 0; i < 2; i++) {
		char from[600], to[600];
		snprintf(from, sizeof from, "%s/tokenizers/gpt2/%s", shared, files[i]);
		snprintf(to, sizeof to, "%s/%s", dir, files[i]);
		char *abs = realpath(from, NULL);
		if (!abs || symlink(abs, to) != 0) {
			free(abs);
			return -1;
		}
		free(abs);
	}
	return 0;
}

#endif
