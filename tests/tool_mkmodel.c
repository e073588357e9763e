/*
 * tool_mkmodel — writes a small seeded random-weight character model, so
 * that CLI tests and golden files do not depend on trained weights.
 *
 * usage: tool_mkmodel OUT.safetensors [--seed N] [--layers L] [--heads H]
 *                     [--kv-heads K] [--d-model C] [--context S]
 *                     [--chars "abc..."] [--norm rmsnorm] [--placement post]
 *                     [--pos rope] [--mlp swiglu] [--zero-char X]
 * --zero-char X embeds character X as zeros (with RMSNorm and RoPE a row
 * whose mean square is 0: the eps0 pitfall's NaN).  The vocabulary is <unk> plus the characters given (default: printable
 * ASCII, space and newline).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "model.h"
#include "tokenizer.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') { /* never write a model named --help */
		fprintf(stderr, "usage: tool_mkmodel OUT [--seed N] [--layers L] [--heads H] ...\n");
		return 2;
	}
	struct model_config c;
	config_default(&c);
	c.d_model = 32;
	c.n_layer = 2;
	c.n_head = 4;
	c.n_kv_head = 4;
	c.d_ff = 64;
	c.context = 64;
	unsigned long seed = 1;
	const char *chars = NULL, *zero_char = NULL;
	for (int i = 2; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--seed")) seed = strtoul(v, NULL, 10);
		else if (!strcmp(k, "--layers")) c.n_layer = atoi(v);
		else if (!strcmp(k, "--heads")) c.n_head = c.n_kv_head = atoi(v);
		else if (!strcmp(k, "--kv-heads")) c.n_kv_head = atoi(v);
		else if (!strcmp(k, "--d-model")) c.d_model = atoi(v), c.d_ff = 2 * atoi(v);
		else if (!strcmp(k, "--context")) c.context = atoi(v);
		else if (!strcmp(k, "--chars")) chars = v;
		else if (!strcmp(k, "--norm")) norm_type_parse(v, &c.norm);
		else if (!strcmp(k, "--placement")) norm_place_parse(v, &c.placement);
		else if (!strcmp(k, "--pos")) pos_type_parse(v, &c.pos);
		else if (!strcmp(k, "--mlp")) mlp_type_parse(v, &c.mlp);
		else if (!strcmp(k, "--zero-char")) zero_char = v;
		else {
			fprintf(stderr, "tool_mkmodel: unknown option %s\n", k);
			return 2;
		}
	}
	uint32_t cps[4096];
	int n = 0;
	if (chars) {
		const unsigned char *p = (const unsigned char *)chars;
		size_t len = strlen(chars);
		while (len > 0 && n < 4096) {
			int bad;
			int k = utf8_decode(p, len, &cps[n], &bad);
			int dup = 0;
			for (int j = 0; j < n; j++)
				dup |= cps[j] == cps[n];
			if (!dup)
				n++;
			p += k;
			len -= (size_t)k;
		}
	} else {
		cps[n++] = '\n';
		for (uint32_t ch = ' '; ch < 127; ch++)
			cps[n++] = ch;
	}
	struct err e;
	struct tokenizer *t = tok_char_new(cps, n, 0, &e);
	if (!t) {
		fprintf(stderr, "tool_mkmodel: %s\n", e.msg);
		return 1;
	}
	c.vocab_size = t->vocab_size;
	struct model *m = model_new(&c, &e);
	if (!m) {
		fprintf(stderr, "tool_mkmodel: %s\n", e.msg);
		tok_free(t);
		return 1;
	}
	m->tok = t;
	model_init_random(m, seed);
	/* larger weights than GPT-2's init so that heads attend distinctly */
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 20.0f;
	int *ids = NULL, n_ids = 0;
	if (zero_char && tok_encode(t, zero_char, strlen(zero_char), 0, &ids, &n_ids, &e) >= 0 &&
	    n_ids > 0)
		memset(m->p[P_WTE] + (size_t)ids[0] * c.d_model, 0, (size_t)c.d_model * sizeof(float));
	free(ids);
	const char *slash = strrchr(argv[1], '/');
	m->name = xstrdup(slash ? slash + 1 : argv[1]);
	char *dot = strstr(m->name, ".safetensors");
	if (dot)
		*dot = '\0';
	if (checkpoint_save(m, argv[1], CKPT_F32, &e) != 0) {
		fprintf(stderr, "tool_mkmodel: %s\n", e.msg);
		model_free(m);
		return 1;
	}
	model_free(m);
	return 0;
}
