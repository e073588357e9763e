/*
 * tool_mkbin — writes a small seeded random-weight checkpoint in a foreign
 * format, without a tokenizer beside it, so that CLI tests can load llm.c
 * and llama2.c files with --tokenizer.
 *
 * usage: tool_mkbin llmc OUT.bin [--vocab V] [--padded VP] [--seed N]
 *        tool_mkbin llama2c OUT.bin [--vocab V] [--seed N]
 * llmc: llm.c GPT-2, version 3 (F32), maxT 64, 2 layers, 2 heads, C 16,
 * vocabulary V (default 50257, GPT-2's) padded to VP (default: V rounded
 * up to a multiple of 128).  llama2c: the legacy format without the
 * freq_cis tables, dim 16, hidden 32, 2 layers, 2 heads, 2 K/V heads,
 * seq_len 64, shared classifier, vocabulary V (default 32000, Llama 2's).
 * The sizes come from the same config_param_count the loaders check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

/* Writes n little-endian int32 then count floats drawn from r. */
static int write_bin(const char *path, const int32_t *h, size_t n, size_t count, uint64_t seed)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return 1;
	}
	struct rng r;
	rng_seed(&r, seed);
	int ok = fwrite(h, sizeof *h, n, f) == n;
	for (size_t i = 0; ok && i < count; i++) {
		float x = 0.1f * rng_normal(&r);
		ok = fwrite(&x, sizeof x, 1, f) == 1;
	}
	if (fclose(f) != 0 || !ok) {
		fprintf(stderr, "tool_mkbin: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "llmc") && strcmp(argv[1], "llama2c"))) {
		fprintf(stderr, "usage: tool_mkbin llmc|llama2c OUT.bin [--vocab V] [--padded VP] "
			"[--seed N]\n");
		return 2;
	}
	bool llmc = !strcmp(argv[1], "llmc");
	long vocab = llmc ? 50257 : 32000, padded = 0;
	unsigned long seed = 1;
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--vocab"))
			vocab = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--padded"))
			padded = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoul(argv[i + 1], NULL, 10);
		else {
			fprintf(stderr, "tool_mkbin: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	struct model_config c;
	config_default(&c);
	c.vocab_size = (int)vocab;
	c.context = 64;
	c.n_layer = 2;
	c.n_head = c.n_kv_head = 2;
	c.d_model = 16;
	if (llmc) {
		/* the config loader-llmc.c builds from the header */
		if (padded == 0)
			padded = (vocab + 127) / 128 * 128;
		c.d_ff = 4 * c.d_model;
		int32_t h[256] = { 20240326, 3, c.context, (int32_t)vocab, c.n_layer, c.n_head,
				   c.d_model, (int32_t)padded };
		size_t count = config_param_count(&c) + (size_t)(padded - vocab) * (size_t)c.d_model;
		return write_bin(argv[2], h, 256, count, seed);
	}
	/* the config loader-llama2c.c builds from the header */
	c.d_ff = 32;
	c.norm = NORM_RMS;
	c.pos = POS_ROPE;
	c.mlp = MLP_SWIGLU;
	c.bias = false;
	c.tied = true;
	int32_t h[7] = { c.d_model, c.d_ff, c.n_layer, c.n_head, c.n_kv_head, (int32_t)vocab,
			 c.context };
	return write_bin(argv[2], h, 7, config_param_count(&c), seed);
}
