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
#include "loader.h"
#include "model.h"
#include "tokenizer.h"
#include "util.h"

#define V 50257
#define C 768
#define L 12
#define H 12
#define S 1024
#define F (4 * C)
#define LOADS 5 /* loads timed; the summary row is their median rate (issue 28: >= 1 GB/s) */

static const char *dir; /* the scratch directory (bench_tmpdir) */

struct tensor {
	char name[64];
	size_t d[4];
	int nd;
	const char *dtype;
	float scale, offset;
};

static struct tensor ts[16 * L + 8];
static int nt;

static void add(const char *name, int nd, size_t d0, size_t d1, size_t d2, size_t d3,
		float scale, float offset)
{
	struct tensor *t = &ts[nt++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->nd = nd;
	t->d[0] = d0;
	t->d[1] = d1;
	t->d[2] = d2;
	t->d[3] = d3;
	t->dtype = "F32";
	t->scale = scale;
	t->offset = offset;
}

static size_t count(const struct tensor *t)
{
	size_t n = 1;
	for (int i = 0; i < t->nd; i++)
		n *= t->d[i];
	return n;
}

/* Writes model.safetensors, streaming random data tensor by tensor. */
static int write_weights(const char *path)
{
	char name[64];
	add("wte.weight", 2, V, C, 0, 0, 0.02f, 0);
	add("wpe.weight", 2, S, C, 0, 0, 0.01f, 0);
	for (int l = 0; l < L; l++) {
#define N(s) (snprintf(name, sizeof name, "h.%d.%s", l, s), name)
		add(N("ln_1.weight"), 1, C, 0, 0, 0, 0.05f, 1);
		add(N("ln_1.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		add(N("attn.bias"), 4, 1, 1, S, S, 0, 1);
		add(N("attn.c_attn.weight"), 2, C, 3 * C, 0, 0, 0.02f, 0);
		add(N("attn.c_attn.bias"), 1, 3 * C, 0, 0, 0, 0.02f, 0);
		add(N("attn.c_proj.weight"), 2, C, C, 0, 0, 0.004f, 0);
		add(N("attn.c_proj.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		add(N("ln_2.weight"), 1, C, 0, 0, 0, 0.05f, 1);
		add(N("ln_2.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		add(N("mlp.c_fc.weight"), 2, C, F, 0, 0, 0.02f, 0);
		add(N("mlp.c_fc.bias"), 1, F, 0, 0, 0, 0.02f, 0);
		add(N("mlp.c_proj.weight"), 2, F, C, 0, 0, 0.004f, 0);
		add(N("mlp.c_proj.bias"), 1, C, 0, 0, 0, 0.02f, 0);
#undef N
	}
	add("ln_f.weight", 1, C, 0, 0, 0, 0.05f, 1);
	add("ln_f.bias", 1, C, 0, 0, 0, 0.02f, 0);

	size_t cap = 64 + (size_t)nt * 160, len = 0, off = 0;
	char *hdr = xmalloc(cap);
	len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int i = 0; i < nt; i++) {
		size_t bytes = count(&ts[i]) * 4;
		len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
					ts[i].name, ts[i].dtype);
		for (int d = 0; d < ts[i].nd; d++)
			len += (size_t)snprintf(hdr + len, cap - len, "%s%zu", d ? "," : "", ts[i].d[d]);
		len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off,
					off + bytes);
		off += bytes;
	}
	len += (size_t)snprintf(hdr + len, cap - len, "}");
	while (len % 8)
		hdr[len++] = ' ';
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	uint64_t n = len;
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)(n >> (8 * i));
	fwrite(w, 1, 8, f);
	fwrite(hdr, 1, len, f);
	free(hdr);
	struct rng r;
	rng_seed(&r, 42);
	float *buf = xmalloc(1 << 20 << 2);
	for (int i = 0; i < nt; i++) {
		size_t total = count(&ts[i]);
		for (size_t at = 0; at < total; at += 1 << 20) {
			size_t k = total - at < (1 << 20) ? total - at : (1 << 20);
			for (size_t j = 0; j < k; j++) /* uniform, same variance as the scale */
				buf[j] = ts[i].offset + ts[i].scale * 3.4641f * (rng_uniform(&r) - 0.5f);
			if (fwrite(buf, 4, k, f) != k) {
				fclose(f);
				free(buf);
				return -1;
			}
		}
	}
	free(buf);
	return fclose(f);
}

int main(void)
{
	const char *shared = getenv("ATTNSCOPE_SHARED");
	char path[600], vocab[600];
	shared = shared && *shared ? shared : "../shared";
	snprintf(vocab, sizeof vocab, "%s/tokenizers/gpt2/vocab.json", shared);
	if (access(vocab, R_OK) != 0) {
		printf("bench_load: skipped (no GPT-2 tokenizer at %s)\n", vocab);
		return 0;
	}
	engine_set_threads(0);
	if (!(dir = bench_tmpdir("load"))) {
		perror("mkdtemp");
		return 1;
	}

	printf("bench_load: GPT-2-small-shaped HF directory (L %d, H %d, C %d, S %d, V %d), "
	       "%d cores\n", L, H, C, S, V, cpu_count());
	double gf = measure_sgemm().best_gflops;
	printf("  sgemm 1024x768x768           %8.1f GFLOP/s\n", gf);

	double t0 = now_ms();
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2LMHeadModel\"], "
		   "\"activation_function\": \"gelu_new\", \"n_layer\": %d, \"n_head\": %d, "
		   "\"n_embd\": %d, \"n_positions\": %d, \"n_ctx\": %d, \"vocab_size\": %d, "
		   "\"layer_norm_epsilon\": 1e-05}\n", L, H, C, S, S, V);
	fclose(f);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	if (write_weights(path) != 0 || bench_link_gpt2_tokenizer(shared, dir) != 0) {
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
			tokens[i] = (i * 7919 + 13) % V;
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
		double flops = 2.0 * T * ((double)L * (3.0 * C * C + C * C + 2.0 * F * C) +
					  (double)V * C) + 4.0 * L * (double)T * T * C;
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
