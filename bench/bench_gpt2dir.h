/*
 * bench_gpt2dir.h — a GPT-2-small-shaped Hugging Face directory for the
 * benchmarks that load one (bench_load, bench_firstpass): 12 layers, 12
 * heads, 768 wide, context 1024, vocabulary 50257; random weights, F32,
 * Conv1D layout, with the attn.bias mask buffers real GPT-2 files carry,
 * and GPT-2's tokenizer linked from SHARED/tokenizers/gpt2.  548 MB.
 * Static functions: one including file a program.
 */
#ifndef ATTNSCOPE_BENCH_GPT2DIR_H
#define ATTNSCOPE_BENCH_GPT2DIR_H

#include <stdint.h>
#include <stdio.h>

#include "bench_common.h"
#include "util.h"

#define GPT2DIR_MAX_TENSORS (13 * 12 + 4) /* GPT-2 small's: 13 a layer, 4 more */

struct gpt2dir_tensor {
	char name[64];
	size_t d[4];
	int nd;
	const char *dtype;
	float scale, offset;
};

static struct gpt2dir_tensor gpt2dir_ts[GPT2DIR_MAX_TENSORS];
static int gpt2dir_nt;

static void gpt2dir_add(const char *name, int nd, size_t d0, size_t d1, size_t d2, size_t d3,
			float scale, float offset)
{
	if (gpt2dir_nt == GPT2DIR_MAX_TENSORS)
		die("bench_gpt2dir.h: more tensors than GPT-2 small has");
	struct gpt2dir_tensor *t = &gpt2dir_ts[gpt2dir_nt++];
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

static size_t gpt2dir_count(const struct gpt2dir_tensor *t)
{
	size_t n = 1;
	for (int i = 0; i < t->nd; i++)
		n *= t->d[i];
	return n;
}

/* Writes model.safetensors of shape c, streaming random data tensor by
 * tensor. */
static int gpt2dir_weights(const char *path, const struct model_config *c)
{
	size_t V = c->vocab_size, C = c->d_model, S = c->context, F = c->d_ff;
	char name[64];
	gpt2dir_nt = 0;
	gpt2dir_add("wte.weight", 2, V, C, 0, 0, 0.02f, 0);
	gpt2dir_add("wpe.weight", 2, S, C, 0, 0, 0.01f, 0);
	for (int l = 0; l < c->n_layer; l++) {
#define N(s) (snprintf(name, sizeof name, "h.%d.%s", l, s), name)
		gpt2dir_add(N("ln_1.weight"), 1, C, 0, 0, 0, 0.05f, 1);
		gpt2dir_add(N("ln_1.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		gpt2dir_add(N("attn.bias"), 4, 1, 1, S, S, 0, 1);
		gpt2dir_add(N("attn.c_attn.weight"), 2, C, 3 * C, 0, 0, 0.02f, 0);
		gpt2dir_add(N("attn.c_attn.bias"), 1, 3 * C, 0, 0, 0, 0.02f, 0);
		gpt2dir_add(N("attn.c_proj.weight"), 2, C, C, 0, 0, 0.004f, 0);
		gpt2dir_add(N("attn.c_proj.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		gpt2dir_add(N("ln_2.weight"), 1, C, 0, 0, 0, 0.05f, 1);
		gpt2dir_add(N("ln_2.bias"), 1, C, 0, 0, 0, 0.02f, 0);
		gpt2dir_add(N("mlp.c_fc.weight"), 2, C, F, 0, 0, 0.02f, 0);
		gpt2dir_add(N("mlp.c_fc.bias"), 1, F, 0, 0, 0, 0.02f, 0);
		gpt2dir_add(N("mlp.c_proj.weight"), 2, F, C, 0, 0, 0.004f, 0);
		gpt2dir_add(N("mlp.c_proj.bias"), 1, C, 0, 0, 0, 0.02f, 0);
#undef N
	}
	gpt2dir_add("ln_f.weight", 1, C, 0, 0, 0, 0.05f, 1);
	gpt2dir_add("ln_f.bias", 1, C, 0, 0, 0, 0.02f, 0);

	size_t cap = 64 + (size_t)gpt2dir_nt * 160, len = 0, off = 0;
	char *hdr = xmalloc(cap);
	len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int i = 0; i < gpt2dir_nt; i++) {
		size_t bytes = gpt2dir_count(&gpt2dir_ts[i]) * 4;
		len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
					gpt2dir_ts[i].name, gpt2dir_ts[i].dtype);
		for (int d = 0; d < gpt2dir_ts[i].nd; d++)
			len += (size_t)snprintf(hdr + len, cap - len, "%s%zu", d ? "," : "", gpt2dir_ts[i].d[d]);
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
	for (int i = 0; i < gpt2dir_nt; i++) {
		size_t total = gpt2dir_count(&gpt2dir_ts[i]);
		for (size_t at = 0; at < total; at += 1 << 20) {
			size_t k = total - at < (1 << 20) ? total - at : (1 << 20);
			for (size_t j = 0; j < k; j++) /* uniform, same variance as the scale */
				buf[j] = gpt2dir_ts[i].offset + gpt2dir_ts[i].scale * 3.4641f * (rng_uniform(&r) - 0.5f);
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

/* Writes config.json and model.safetensors of GPT-2 small's shape
 * (bench_common.h gpt2_cfg; d_ff 4 * d_model, as config.json implies)
 * into dir and links the tokenizer from shared; the weights' path into
 * path (n bytes).  0, or -1 when a file cannot be written. */
static int gpt2dir_write(const char *dir, const char *shared, char *path, size_t n)
{
	struct model_config c;
	gpt2_cfg(&c);
	snprintf(path, n, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2LMHeadModel\"], "
		   "\"activation_function\": \"gelu_new\", \"n_layer\": %d, \"n_head\": %d, "
		   "\"n_embd\": %d, \"n_positions\": %d, \"n_ctx\": %d, \"vocab_size\": %d, "
		   "\"layer_norm_epsilon\": 1e-05}\n", c.n_layer, c.n_head, c.d_model, c.context,
		c.context, c.vocab_size);
	if (fclose(f) != 0)
		return -1;
	snprintf(path, n, "%s/model.safetensors", dir);
	if (gpt2dir_weights(path, &c) != 0)
		return -1;
	return bench_link_gpt2_tokenizer(shared, dir);
}

#endif
