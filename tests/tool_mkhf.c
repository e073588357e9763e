/*
 * tool_mkhf — writes a seeded random Llama-family model twice: as a
 * Hugging Face directory (config.json, safetensors with HF's names and
 * rotate-half Q/K row order, GPT-2's vocab.json + merges.txt copied from
 * TOKDIR, or the tokenizer.json file given instead, whose vocabulary size
 * the model takes) and as an attnscope checkpoint of the same weights, so that a
 * test can check the HF loader gives the same numbers.
 *
 * usage: tool_mkhf OUTDIR REF.safetensors TOKDIR|TOKENIZER.json [--qwen2] [--shards]
 * RMSNorm, RoPE, SwiGLU, 2 layers, 4 heads, 2 K/V heads, d_model 32,
 * d_ff 48, context 64, untied; --qwen2 adds Q/K/V biases (model_type
 * qwen2); --shards splits the weights over two files and an index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "config.h"
#include "loaders.h"
#include "model.h"
#include "tok-hfjson.h"
#include "tokenizer.h"
#include "util.h"

struct tensor {
	char name[96];
	float *data; /* owned */
	size_t rows, cols; /* cols 0: 1-D */
};

static struct tensor tens[64];
static int n_tens;

static float *add(const char *name, size_t rows, size_t cols)
{
	struct tensor *t = &tens[n_tens++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rows = rows;
	t->cols = cols;
	t->data = xmalloc((rows * (cols ? cols : 1)) * sizeof(float));
	return t->data;
}

/* Writes tensors [lo, hi) as one safetensors file. */
static int write_st(const char *path, int lo, int hi)
{
	char *hdr = xmalloc(65536);
	size_t n = 0, off = 0;
	n += (size_t)sprintf(hdr + n, "{");
	for (int i = lo; i < hi; i++) {
		size_t bytes = tens[i].rows * (tens[i].cols ? tens[i].cols : 1) * 4;
		if (tens[i].cols)
			n += (size_t)sprintf(hdr + n, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu,%zu],"
					     "\"data_offsets\":[%zu,%zu]}", i > lo ? "," : "", tens[i].name,
					     tens[i].rows, tens[i].cols, off, off + bytes);
		else
			n += (size_t)sprintf(hdr + n, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu],"
					     "\"data_offsets\":[%zu,%zu]}", i > lo ? "," : "", tens[i].name,
					     tens[i].rows, off, off + bytes);
		off += bytes;
	}
	n += (size_t)sprintf(hdr + n, "}");
	while (n % 8)
		hdr[n++] = ' ';
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	uint64_t len = n;
	int ok = fwrite(&len, 8, 1, f) == 1 && fwrite(hdr, 1, n, f) == n;
	for (int i = lo; ok && i < hi; i++)
		ok = fwrite(tens[i].data, 4, tens[i].rows * (tens[i].cols ? tens[i].cols : 1), f) ==
		     tens[i].rows * (tens[i].cols ? tens[i].cols : 1);
	free(hdr);
	return fclose(f) != 0 || !ok;
}

static int copy_file(const char *from, const char *to)
{
	struct err e;
	size_t len;
	char *s = read_file(from, &len, &e);
	if (!s)
		return 1;
	FILE *f = fopen(to, "wb");
	int ok = f && fwrite(s, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	free(s);
	return !ok;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: tool_mkhf OUTDIR REF.safetensors TOKDIR|TOKENIZER.json [--qwen2] [--shards]\n");
		return 2;
	}
	const char *dir = argv[1], *ref = argv[2], *tokdir = argv[3];
	bool qwen = false, shards = false;
	for (int i = 4; i < argc; i++) {
		qwen |= !strcmp(argv[i], "--qwen2");
		shards |= !strcmp(argv[i], "--shards");
	}
	struct err e;
	/* TOKDIR is GPT-2's vocab.json + merges.txt, or a tokenizer.json file */
	size_t tl = strlen(tokdir);
	bool tokjson = tl >= 5 && !strcmp(tokdir + tl - 5, ".json");
	struct tokenizer *tok = tokjson ? tok_hfjson_load(tokdir, &e) : tok_bpe_load(tokdir, &e);
	if (!tok) {
		fprintf(stderr, "tool_mkhf: %s\n", e.msg);
		return 1;
	}
	struct model_config c;
	config_default(&c);
	c.vocab_size = tok->vocab_size;
	c.n_layer = 2;
	c.n_head = 4;
	c.n_kv_head = 2;
	c.d_model = 32;
	c.d_ff = 48;
	c.context = 64;
	c.norm = NORM_RMS;
	c.norm_eps = 1e-6f;
	c.pos = POS_ROPE;
	c.rope_theta = 10000.0f;
	c.mlp = MLP_SWIGLU;
	c.bias = qwen;
	c.tied = false;
	struct model *m = model_new(&c, &e);
	model_init_random(m, 77);
	struct rng r;
	rng_seed(&r, 78);
	for (size_t i = 0; i < m->n_params; i++) /* weights far from their init */
		m->params[i] += 0.05f * rng_normal(&r);
	if (qwen) /* Qwen2 has biases on Q, K and V only */
		for (int i = 0; i < N_PARAMS; i++)
			if (i != P_QKVB && (i == P_ATTPROJB || i == P_FCB || i == P_FCPROJB) && m->p[i])
				memset(m->p[i], 0, m->psize[i] * sizeof(float));
	m->tok = tok;
	m->name = xstrdup("ref");
	if (checkpoint_save(m, ref, CKPT_F32, &e)) {
		fprintf(stderr, "tool_mkhf: %s\n", e.msg);
		return 1;
	}

	size_t C = 32, F = 48, D = 8, H = 4, K = 2, V = (size_t)c.vocab_size, QKV = (H + 2 * K) * D;
	memcpy(add("model.embed_tokens.weight", V, C), m->p[P_WTE], V * C * 4);
	for (int l = 0; l < 2; l++) {
		char nm[96];
		const float *qkv = m->p[P_QKVW] + l * QKV * C;
		const float *qb = qwen ? m->p[P_QKVB] + l * QKV : NULL;
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, s), add(nm, rows, cols))
		memcpy(T("input_layernorm.weight", C, 0), m->p[P_LN1W] + l * C, C * 4);
		float *q = T("self_attn.q_proj.weight", H * D, C), *k = T("self_attn.k_proj.weight", K * D, C);
		for (size_t row = 0; row < H * D; row++) /* HF row r is engine row llama_rope_row(r) */
			memcpy(q + row * C, qkv + (size_t)llama_rope_row((int)row, (int)D) * C, C * 4);
		for (size_t row = 0; row < K * D; row++)
			memcpy(k + row * C, qkv + (H * D + (size_t)llama_rope_row((int)row, (int)D)) * C, C * 4);
		memcpy(T("self_attn.v_proj.weight", K * D, C), qkv + (H + K) * D * C, K * D * C * 4);
		if (qb) {
			float *bq = T("self_attn.q_proj.bias", H * D, 0), *bk = T("self_attn.k_proj.bias", K * D, 0);
			for (size_t row = 0; row < H * D; row++)
				bq[row] = qb[llama_rope_row((int)row, (int)D)];
			for (size_t row = 0; row < K * D; row++)
				bk[row] = qb[H * D + (size_t)llama_rope_row((int)row, (int)D)];
			memcpy(T("self_attn.v_proj.bias", K * D, 0), qb + (H + K) * D, K * D * 4);
		}
		memcpy(T("self_attn.o_proj.weight", C, C), m->p[P_ATTPROJW] + l * C * C, C * C * 4);
		memcpy(T("post_attention_layernorm.weight", C, 0), m->p[P_LN2W] + l * C, C * 4);
		memcpy(T("mlp.gate_proj.weight", F, C), m->p[P_FCW] + l * 2 * F * C, F * C * 4);
		memcpy(T("mlp.up_proj.weight", F, C), m->p[P_FCW] + l * 2 * F * C + F * C, F * C * 4);
		memcpy(T("mlp.down_proj.weight", C, F), m->p[P_FCPROJW] + l * C * F, C * F * 4);
#undef T
	}
	memcpy(add("model.norm.weight", C, 0), m->p[P_LNFW], C * 4);
	memcpy(add("lm_head.weight", V, C), m->p[P_LMHEAD], V * C * 4);

	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": 32, "
		   "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		   "\"num_key_value_heads\": 2, \"vocab_size\": %d, \"max_position_embeddings\": 64, "
		   "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"hidden_act\": \"silu\", "
		   "\"tie_word_embeddings\": false, \"rope_scaling\": null}\n",
		qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM", qwen ? "qwen2" : "llama", c.vocab_size);
	int bad = fclose(f) != 0;
	if (shards) {
		int half = n_tens / 2;
		snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dir);
		bad |= write_st(path, 0, half);
		snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
		bad |= write_st(path, half, n_tens);
		snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
		f = fopen(path, "w");
		if (!f)
			return 1;
		fprintf(f, "{\"metadata\": {}, \"weight_map\": {");
		for (int i = 0; i < n_tens; i++)
			fprintf(f, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "",
				tens[i].name, i < half ? 1 : 2);
		fprintf(f, "}}\n");
		bad |= fclose(f) != 0;
	} else {
		snprintf(path, sizeof path, "%s/model.safetensors", dir);
		bad |= write_st(path, 0, n_tens);
	}
	char from[4096], to[4096];
	static const char *const files[] = { "vocab.json", "merges.txt" };
	if (tokjson) {
		snprintf(to, sizeof to, "%s/tokenizer.json", dir);
		bad |= copy_file(tokdir, to);
	}
	for (int i = 0; i < 2 && !tokjson; i++) {
		snprintf(from, sizeof from, "%s/%s", tokdir, files[i]);
		snprintf(to, sizeof to, "%s/%s", dir, files[i]);
		bad |= copy_file(from, to);
	}
	for (int i = 0; i < n_tens; i++)
		free(tens[i].data);
	model_free(m);
	if (bad)
		fprintf(stderr, "tool_mkhf: cannot write %s\n", dir);
	return bad;
}
