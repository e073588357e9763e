/*
 * bench_load.c — loading benchmark (not a test: it reports, never fails on
 * a slow number).
 *
 * Writes a GPT-2-small-shaped Hugging Face directory (12 layers, 12 heads,
 * 768 wide, context 1024, vocab 50257; random weights, F32, Conv1D layout,
 * with the attn.bias mask buffers real GPT-2 files carry) to a temp
 * directory, with the GPT-2 tokenizer from ../shared/tokenizers/gpt2
 * (ATTNSCOPE_SHARED overrides ../shared), then reports:
 *   - the measured cblas_sgemm rate (1024x768x768);
 *   - model_open_ex time (warm page cache) and its read rate, the best of
 *     LOADS loads, and their median rate as a `make bench` summary row;
 *   - forward time with attention capture at T = 256 and T = 1024, the
 *     matmul GFLOP/s that implies, and the ratio to what the matmul FLOPs
 *     would take at the sgemm rate; run buffer bytes and peak RSS.
 * The directory is removed at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_gpt2dir.h"
#include "loader.h"
#include "model.h"
#include "tokenizer.h"
#include "util.h"

#define LOADS 5 /* loads timed; the summary row is their median rate (issue 28: >= 1 GB/s) */

static const char *dir; /* the scratch directory (bench_tmpdir) */

int main(void)
{
	char path[600], vocab[600];
	struct model_config g; /* the shape bench_gpt2dir.h writes */
	gpt2_cfg(&g);
	const char *shared = bench_gpt2_shared(vocab, sizeof vocab);
	if (!shared) {
		printf("bench_load: skipped (no GPT-2 tokenizer at %s)\n", vocab);
		return 0;
	}
	engine_set_threads(0);
	if (!(dir = bench_tmpdir("load"))) {
		perror("mkdtemp");
		return 1;
	}

	printf("bench_load: GPT-2-small-shaped HF directory (L %d, H %d, C %d, S %d, V %d), "
	       "%d cores\n", g.n_layer, g.n_head, g.d_model, g.context, g.vocab_size, cpu_count());
	double gf = measure_sgemm().best_gflops;
	printf("  sgemm 1024x768x768           %8.1f GFLOP/s\n", gf);

	double t0 = now_ms();
	if (gpt2dir_write(dir, shared, path, sizeof path) != 0) {
		fprintf(stderr, "bench_load: cannot write %s\n", dir);
		return 1;
	}
	struct stat st;
	stat(path, &st);
	printf("  wrote %.0f MB in            %8.0f ms\n", st.st_size / 1e6, now_ms() - t0);

	struct err e = { "" };
	const char *fmt = NULL;
	double best = 1e30, rate[LOADS];
	struct model *m = NULL;
	for (int rep = 0; rep < LOADS; rep++) {
		model_free(m);
		t0 = now_ms();
		m = model_open_ex(dir, NULL, &fmt, &e);
		double ms = now_ms() - t0;
		if (!m) {
			fprintf(stderr, "bench_load: %s\n", e.msg);
			return 1;
		}
		rate[rep] = st.st_size / (ms * 1e6);
		if (ms < best)
			best = ms;
	}
	printf("  load (%s, warm cache)   %8.0f ms  (%.2f GB/s, %zu parameters)\n", fmt, best,
	       st.st_size / (best * 1e6), m->n_params);
	bench_summary_row("load GPT-2-small HF directory, warm cache: GB/s / 1 GB/s",
			  spread_of(rate, LOADS), false, 1.0);

	/* matmul FLOPs of one forward: projections, the LM head, QK^T and AV */
	static const int Ts[] = { 256, 1024 };
	for (int k = 0; k < 2; k++) {
		int T = Ts[k];
		int *tokens = xmalloc((size_t)T * sizeof *tokens);
		for (int i = 0; i < T; i++)
			tokens[i] = (i * 7919 + 13) % g.vocab_size;
		struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
		struct run_options o;
		run_options_native(m, &o);
		double times[3];
		for (int rep = 0; rep < 3; rep++) {
			t0 = now_ms();
			if (model_forward(m, &o, tokens, NULL, 1, T, r, &e) != 0) {
				fprintf(stderr, "bench_load: forward: %s\n", e.msg);
				return 1;
			}
			times[rep] = now_ms() - t0;
		}
		double med = median(times, 3);
		double C = g.d_model, L = g.n_layer;
		double flops = 2.0 * T * (L * (3.0 * C * C + C * C + 2.0 * g.d_ff * C) +
					  (double)g.vocab_size * C) + 4.0 * L * (double)T * T * C;
		printf("  forward T=%-4d + attention   %8.0f ms  (%.1f GFLOP/s; %.2fx the sgemm time; "
		       "run %.0f MB)\n", T, med, flops / (med * 1e6), med / (flops / (gf * 1e6)),
		       run_bytes(r) / 1048576.0);
		run_free(r);
		free(tokens);
	}
	printf("  peak RSS                     %8.0f MB\n", proc_status_bytes("VmHWM") / MB);
	model_free(m);
	return 0;
}
