/*
 * tool_mkhf — writes a seeded random Llama-family model twice: as a
 * Hugging Face directory (config.json, safetensors with HF's names and
 * rotate-half Q/K row order, GPT-2's vocab.json + merges.txt copied from
 * TOKDIR, or the tokenizer.json file given instead, whose vocabulary size
 * the model takes) and as an attnscope checkpoint of the same weights, so
 * that a test can check the HF loader gives the same numbers.
 *
 * usage: tool_mkhf OUTDIR REF.safetensors TOKDIR|TOKENIZER.json
 *                 [--qwen2 | --neox [--sequential] | --neo | --bert [--untied] [--gamma]
 *                 [--bare] | --roberta [--untied] [--bare] | --distilbert [--untied] [--bare]
 *                 | --llama3 | --phi3 [--partial] [--longrope] | --qwen3 | --gemma2
 *                 | --gemma3 [--mm | --mm2]
 *                 | --olmo2]
 *                 [--headdim N]
 *                 [--shards] [--tiny] [--dtype F32|F16|BF16]
 * RMSNorm, RoPE, SwiGLU, 2 layers, 4 heads, 2 K/V heads, d_model 32,
 * d_ff 48, context 64, untied; --qwen2 adds Q/K/V biases (model_type
 * qwen2); --headdim N writes config.json's head_dim N and, when N is not
 * d_model / heads, heads N wide (q_proj (4N, 32), o_proj (32, 4N));
 * --llama3 adds Llama 3.1's RoPE scaling in Llama 3.2's spelling, over an
 * original context of 16 (factor 8, low_freq_factor 1,
 * high_freq_factor 4), to both files; --shards splits the weights over two
 * files and an index.
 * --neox writes a GPT-NeoX (Pythia) model instead: LayerNorm with biases,
 * parallel blocks (--sequential: use_parallel_residual false), 4 heads of
 * 16 with RoPE over the first 4 (rotary_pct 0.25), exact GELU, d_ff 96,
 * untied, every head's [q; k; v] rows fused in query_key_value, and the
 * tokenizer as one tokenizer.json (ByteLevel, NFC) built from TOKDIR's pair.
 * --neo writes a GPT-Neo (TinyStories) model: LayerNorm with biases,
 * learned positions, tanh GELU, 4 heads of 8, intermediate_size null (d_ff
 * 4 * 32), tied, layer 0 global and layer 1 local over window_size 4 keys
 * (attention_types [[["global", "local"], 1]], and attention_layers as HF
 * saves it), unscaled scores, q_proj / k_proj / v_proj without biases and
 * out_proj with, every weight nn.Linear (out, in), the mask buffers
 * attn.attention.bias / masked_bias beside them, GPT-2's pair as the
 * tokenizer; config.json spelled as TinyStories-1M's (--tiny keeps 2
 * layers, so that one is local).
 * --bert writes a BertForMaskedLM model: post-norm LayerNorm (eps 1e-12)
 * blocks with biases, 4 heads of 8, exact GELU, d_ff 48, context 64, an
 * embedding LayerNorm, two token types (the checkpoint's position table
 * holds position + type 0, as the loader folds them), the masked-LM head
 * with its decoder tied (--untied: a decoder.weight of its own), GPT-2's
 * pair as the tokenizer; --gamma spells the LayerNorms gamma/beta, --bare
 * writes a BertModel (no "bert." prefix, no head, a pooler), which loads
 * without a head.
 * --roberta writes a RobertaForMaskedLM the same way (config.json in
 * roberta-base's spelling, layer_norm_eps 1e-5, one token type, the
 * lm_head.* head, the "roberta." prefix), but with the position table
 * offset as RoBERTa's: max_position_embeddings 66, pad_token_id 1, the
 * file's rows 0 and 1 noise no text reads, its row 2 + i the checkpoint's
 * row i (plus type 0); the vocabulary is TOKDIR's GPT-2 pair laid out as
 * roberta-base's (<s> <pad> </s> <unk> first, <mask> last) and <s> ... </s>
 * around the text.  --distilbert writes a DistilBertForMaskedLM
 * (distilbert-base-uncased's config spelling: dim, n_heads, hidden_dim;
 * q_lin / k_lin / v_lin / out_lin, sa_layer_norm, ffn.lin1 / lin2,
 * output_layer_norm; vocab_transform, vocab_layer_norm, vocab_projector;
 * no token types).  --bare: a RobertaModel / DistilBertModel, no prefix
 * and no head.  --tiny makes each model as small as it can be (1 layer,
 * d_model 8, 2 heads (Llama: 1 K/V head), d_ff 8, context 8; NeoX rotates
 * 2 of each head's 4 dims), for the fuzz seeds in fuzz/seeds/hf.
 * --phi3 writes a Phi-3 model in the Llama shape: fused qkv_proj ([q; k;
 * v], q and k heads in rotate-half order) and gate_up_proj ([gate; up]),
 * RMSNorm eps 1e-5, untied, sliding_window 6 (every layer local over 6
 * keys), config.json spelled as Phi-3-mini-4k-instruct's; --partial adds
 * partial_rotary_factor 0.5 (RoPE over 4 of each head's 8 dims) and ties
 * the output to the embeddings, as Phi-4-mini does; --longrope writes
 * config.json as Phi-3.5-mini-instruct spells it instead: LongRoPE
 * ("type": "longrope", short_factor and long_factor printed as the
 * doubles of float factors, as Phi-3.5's are) over an original context of
 * 4 of the 64 positions (attention factor sqrt(1 + ln 16 / ln 4)), and
 * sliding_window 262144, past the context (no local layers).
 * --qwen3 writes a Qwen3 model in the Llama layout: heads 2 * d_model /
 * heads wide (head_dim 16 over hidden 32, as Qwen3-0.6B's 128 over 1024 /
 * 16), self_attn.q_norm / k_norm (head_dim scales, rotate-half order),
 * no biases, tied (no lm_head), config.json spelled as Qwen3-0.6B's.
 * --gemma2 writes a Gemma 2 model (gemma2_config below): the four norms
 * per layer stored as scale - 1, GeGLU, tied, config.json spelled as
 * gemma-2-2b's; --gemma3 a Gemma 3 text model (gemma3_config below:
 * q_norm / k_norm stored as scale - 1 too), spelled as gemma-3-1b-it's;
 * with --mm as a Gemma3ForConditionalGeneration (gemma-3-4b-it's
 * config.json: model_type gemma3, the text model's keys in text_config
 * with those equal to Gemma3TextConfig's defaults left out, a
 * vision_config) whose text weights are named language_model.model.*, as
 * the Hub's files are, beside two vision tensors; --mm2 the same with
 * transformers' own names since 4.52 (model.language_model.*,
 * model.vision_tower.*).
 * --olmo2 writes an OLMo-2 model: no norm before the sub-blocks, the norms
 * after them, q_norm (H * D) and k_norm (K * D) over the whole projections,
 * rope_theta 500000, untied, spelled as OLMo-2-0425-1B's.
 */
#include <jansson.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "config.h"
#include "loaders.h"
#include "model.h"
#include "tok-hfjson.h"
#include "tok-wordpiece.h"
#include "tokenizer.h"
#include "util.h"

struct tensor {
	char name[160];
	float *data; /* owned */
	size_t rows, cols; /* cols 0: 1-D */
};

static struct tensor tens[64];
static int n_tens;

/* The sizes every family shares (--tiny shrinks them). */
static struct dims {
	int L, H, K, C, F, S;
} g = { 2, 4, 2, 32, 48, 64 };

static float *add(const char *name, size_t rows, size_t cols)
{
	struct tensor *t = &tens[n_tens++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rows = rows;
	t->cols = cols;
	t->data = xmalloc((rows * (cols ? cols : 1)) * sizeof(float));
	return t->data;
}

/* The dtype the weights are written in (--dtype): F32, F16 or BF16. */
static const char *out_dtype = "F32";

/* bfloat16 of f, rounded to nearest even (the values are finite). */
static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}

/* Tensor i's n values in out_dtype into f. */
static int write_values(FILE *f, const struct tensor *t)
{
	size_t n = t->rows * (t->cols ? t->cols : 1);
	if (!strcmp(out_dtype, "F32"))
		return fwrite(t->data, 4, n, f) == n;
	for (size_t i = 0; i < n; i++) {
		uint16_t h = !strcmp(out_dtype, "F16") ? f32_to_f16(t->data[i]) : to_bf16(t->data[i]);
		if (fwrite(&h, 2, 1, f) != 1)
			return 0;
	}
	return 1;
}

/* Writes tensors [lo, hi) as one safetensors file. */
static int write_st(const char *path, int lo, int hi)
{
	char *hdr = xmalloc(65536);
	size_t n = 0, off = 0, es = strcmp(out_dtype, "F32") ? 2 : 4;
	n += (size_t)sprintf(hdr + n, "{");
	for (int i = lo; i < hi; i++) {
		size_t bytes = tens[i].rows * (tens[i].cols ? tens[i].cols : 1) * es;
		if (tens[i].cols)
			n += (size_t)sprintf(hdr + n, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu,%zu],"
					     "\"data_offsets\":[%zu,%zu]}", i > lo ? "," : "", tens[i].name,
					     out_dtype, tens[i].rows, tens[i].cols, off, off + bytes);
		else
			n += (size_t)sprintf(hdr + n, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu],"
					     "\"data_offsets\":[%zu,%zu]}", i > lo ? "," : "", tens[i].name,
					     out_dtype, tens[i].rows, off, off + bytes);
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
		ok = write_values(f, &tens[i]);
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

/* TOKDIR's vocab.json + merges.txt as one tokenizer.json, as Pythia ships. */
static int write_tokenizer_json(const char *tokdir, const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/vocab.json", tokdir);
	json_t *vocab = json_load_file(path, 0, NULL), *merges = json_array();
	snprintf(path, sizeof path, "%s/merges.txt", tokdir);
	struct err e;
	size_t len;
	char *text = read_file(path, &len, &e);
	if (!vocab || !text) {
		json_decref(vocab);
		json_decref(merges);
		free(text);
		return 1;
	}
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "#version", 8) != 0)
			json_array_append_new(merges, json_string(line));
	free(text);
	/* Pythia's shape: NFC, ByteLevel both ways, <|endoftext|> an added
	 * token, no BOS */
	json_t *root = json_pack("{s:[{s:i, s:s, s:b}], s:{s:s}, s:{s:s, s:b, s:b}, s:{s:s}, "
				 "s:{s:s, s:o, s:o}}",
				 "added_tokens", "id",
				 (int)json_integer_value(json_object_get(vocab, "<|endoftext|>")),
				 "content", "<|endoftext|>", "special", 1,
				 "normalizer", "type", "NFC",
				 "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0,
				 "trim_offsets", 1,
				 "decoder", "type", "ByteLevel",
				 "model", "type", "BPE", "vocab", vocab, "merges", merges);
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	int bad = !root || json_dump_file(root, path, JSON_COMPACT) != 0;
	json_decref(root);
	return bad;
}

/* The tokenizer both copies use: TOKDIR's GPT-2 pair; a tokenizer.json
 * given instead; or, for GPT-NeoX, the pair as a tokenizer.json written to
 * OUTDIR first, as Pythia ships it. */
static struct tokenizer *load_tokenizer(const char *tokdir, bool tokjson, bool neox,
					const char *dir, struct err *e)
{
	if (tokjson) { /* BERT's WordPiece, or a BPE tokenizer.json */
		struct tokenizer *t = tok_hfjson_load(tokdir, e);
		return t || !strstr(e->msg, "WordPiece") ? t : tok_wordpiece_load(tokdir, e);
	}
	if (!neox)
		return tok_bpe_load(tokdir, e);
	char path[4096];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	if (write_tokenizer_json(tokdir, dir)) {
		err_set(e, "cannot write %s", path);
		return NULL;
	}
	return tok_hfjson_load(path, e);
}

/* The GPT-NeoX tensors of m in HF's names and layout. */
static void neox_tensors(const struct model *m)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab_size;
	int H = c->n_head, D = cfg_d_head(c), R = cfg_rotary_dims(c);
	memcpy(add("gpt_neox.embed_in.weight", V, C), m->p[P_WTE], V * C * 4);
	for (int l = 0; l < c->n_layer; l++) {
		char nm[96];
		const float *qkv = m->p[P_QKVW] + l * 3 * C * C, *qb = m->p[P_QKVB] + l * 3 * C;
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "gpt_neox.layers.%d.%s", l, s), add(nm, rows, cols))
#define COPY(s, id, rows, cols) memcpy(T(s, rows, cols), m->p[id] + l * (rows) * ((cols) ? (cols) : 1), \
				       (rows) * ((cols) ? (cols) : 1) * 4)
		COPY("input_layernorm.weight", P_LN1W, C, 0);
		COPY("input_layernorm.bias", P_LN1B, C, 0);
		COPY("post_attention_layernorm.weight", P_LN2W, C, 0);
		COPY("post_attention_layernorm.bias", P_LN2B, C, 0);
		float *w = T("attention.query_key_value.weight", 3 * C, C);
		float *b = T("attention.query_key_value.bias", 3 * C, 0);
		for (size_t row = 0; row < 3 * C; row++) { /* HF row r is engine row neox_qkv_row(r) */
			size_t er = (size_t)neox_qkv_row((int)row, H, D, R);
			memcpy(w + row * C, qkv + er * C, C * 4);
			b[row] = qb[er];
		}
		COPY("attention.dense.weight", P_ATTPROJW, C, C);
		COPY("attention.dense.bias", P_ATTPROJB, C, 0);
		COPY("mlp.dense_h_to_4h.weight", P_FCW, F, C);
		COPY("mlp.dense_h_to_4h.bias", P_FCB, F, 0);
		COPY("mlp.dense_4h_to_h.weight", P_FCPROJW, C, F);
		COPY("mlp.dense_4h_to_h.bias", P_FCPROJB, C, 0);
#undef COPY
#undef T
	}
	memcpy(add("gpt_neox.final_layer_norm.weight", C, 0), m->p[P_LNFW], C * 4);
	memcpy(add("gpt_neox.final_layer_norm.bias", C, 0), m->p[P_LNFB], C * 4);
	memcpy(add("embed_out.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

/* The GPT-Neo tensors of m in HF's names and layout, with the mask buffers
 * HF's files carry (which the loader ignores). */
static void neo_tensors(const struct model *m)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab_size;
	size_t S = (size_t)c->context;
	memcpy(add("transformer.wte.weight", V, C), m->p[P_WTE], V * C * 4);
	memcpy(add("transformer.wpe.weight", S, C), m->p[P_WPE], S * C * 4);
	for (int l = 0; l < c->n_layer; l++) {
		char nm[96];
		const float *qkv = m->p[P_QKVW] + l * 3 * C * C;
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "transformer.h.%d.%s", l, s), add(nm, rows, cols))
#define COPY(s, id, rows, cols) memcpy(T(s, rows, cols), m->p[id] + l * (rows) * ((cols) ? (cols) : 1), \
				       (rows) * ((cols) ? (cols) : 1) * 4)
		COPY("ln_1.weight", P_LN1W, C, 0);
		COPY("ln_1.bias", P_LN1B, C, 0);
		memcpy(T("attn.attention.q_proj.weight", C, C), qkv, C * C * 4);
		memcpy(T("attn.attention.k_proj.weight", C, C), qkv + C * C, C * C * 4);
		memcpy(T("attn.attention.v_proj.weight", C, C), qkv + 2 * C * C, C * C * 4);
		COPY("attn.attention.out_proj.weight", P_ATTPROJW, C, C);
		COPY("attn.attention.out_proj.bias", P_ATTPROJB, C, 0);
		float *mask = T("attn.attention.bias", S, S);
		for (size_t i = 0; i < S * S; i++)
			mask[i] = i % S <= i / S;
		T("attn.attention.masked_bias", 1, 0)[0] = -1e9f;
		COPY("ln_2.weight", P_LN2W, C, 0);
		COPY("ln_2.bias", P_LN2B, C, 0);
		COPY("mlp.c_fc.weight", P_FCW, F, C);
		COPY("mlp.c_fc.bias", P_FCB, F, 0);
		COPY("mlp.c_proj.weight", P_FCPROJW, C, F);
		COPY("mlp.c_proj.bias", P_FCPROJB, C, 0);
#undef COPY
#undef T
	}
	memcpy(add("transformer.ln_f.weight", C, 0), m->p[P_LNFW], C * 4);
	memcpy(add("transformer.ln_f.bias", C, 0), m->p[P_LNFB], C * 4);
}

/* n rows of cols values each (cols 0: one value) in the file's rotate-half
 * order: its row r is src's row llama_rope_row(r, D), each value less
 * minus (1 for Gemma's norms, stored as scale - 1). */
static void hf_rope_rows(float *dst, const float *src, size_t n, size_t cols, size_t D,
			 float minus)
{
	size_t w = cols ? cols : 1;
	for (size_t r = 0; r < n; r++) {
		const float *from = src + (size_t)llama_rope_row((int)r, (int)D) * w;
		for (size_t j = 0; j < w; j++)
			dst[r * w + j] = from[j] - minus;
	}
}

/* A norm's C scales under name, each less minus (Gemma's scale - 1: exact
 * for scales in [0.5, 2] by Sterbenz, so the loader's + 1 gives them
 * back). */
static void hf_norm(const char *name, const float *w, size_t C, float minus)
{
	float *t = add(name, C, 0);
	for (size_t j = 0; j < C; j++)
		t[j] = w[j] - minus;
}

/* The tensors of a model in the Llama layout, in HF's names and order, as
 * m's config has them: Llama; Qwen2's Q/K/V biases; Qwen3's and Gemma 3's
 * q/k norm (one head's scales, or OLMo-2's whole projections'); the
 * sandwich norms (Gemma, OLMo-2: pre_feedforward_layernorm is then the
 * norm before the MLP); no norm before the sub-blocks (OLMo-2); gemma:
 * every norm stored as scale - 1.  lm_head only when untied. */
static void llama_tensors(const struct model *m, bool gemma)
{
	size_t C = (size_t)g.C, F = (size_t)g.F, H = (size_t)g.H, K = (size_t)g.K, L = (size_t)g.L;
	size_t D = (size_t)cfg_d_head(&m->cfg), A = H * D; /* o_proj is (C, H * head_dim) */
	size_t V = (size_t)m->cfg.vocab_size, QKV = (H + 2 * K) * D;
	float minus = gemma ? 1.0f : 0.0f;
	memcpy(add("model.embed_tokens.weight", V, C), m->p[P_WTE], V * C * 4);
	for (size_t l = 0; l < L; l++) {
		char nm[96];
		const float *qkv = m->p[P_QKVW] + l * QKV * C;
		const float *qb = m->p[P_QKVB] ? m->p[P_QKVB] + l * QKV : NULL;
#define N_(s) (snprintf(nm, sizeof nm, "model.layers.%zu.%s", l, s), nm)
		if (m->p[P_LN1W])
			hf_norm(N_("input_layernorm.weight"), m->p[P_LN1W] + l * C, C, minus);
		hf_rope_rows(add(N_("self_attn.q_proj.weight"), H * D, C), qkv, H * D, C, D, 0);
		hf_rope_rows(add(N_("self_attn.k_proj.weight"), K * D, C), qkv + H * D * C, K * D, C, D, 0);
		memcpy(add(N_("self_attn.v_proj.weight"), K * D, C), qkv + (H + K) * D * C, K * D * C * 4);
		if (m->cfg.qk_norm) {
			size_t nq = m->psize[P_QNORMW] / L, nk = m->psize[P_KNORMW] / L;
			hf_rope_rows(add(N_("self_attn.q_norm.weight"), nq, 0), m->p[P_QNORMW] + l * nq,
				     nq, 0, D, minus);
			hf_rope_rows(add(N_("self_attn.k_norm.weight"), nk, 0), m->p[P_KNORMW] + l * nk,
				     nk, 0, D, minus);
		}
		if (qb) {
			hf_rope_rows(add(N_("self_attn.q_proj.bias"), H * D, 0), qb, H * D, 0, D, 0);
			hf_rope_rows(add(N_("self_attn.k_proj.bias"), K * D, 0), qb + H * D, K * D, 0, D, 0);
			memcpy(add(N_("self_attn.v_proj.bias"), K * D, 0), qb + (H + K) * D, K * D * 4);
		}
		memcpy(add(N_("self_attn.o_proj.weight"), C, A), m->p[P_ATTPROJW] + l * C * A, C * A * 4);
		if (m->p[P_ATTPOSTW])
			hf_norm(N_("post_attention_layernorm.weight"), m->p[P_ATTPOSTW] + l * C, C, minus);
		if (m->p[P_LN2W])
			hf_norm(m->cfg.sandwich ? N_("pre_feedforward_layernorm.weight")
						: N_("post_attention_layernorm.weight"),
				m->p[P_LN2W] + l * C, C, minus);
		memcpy(add(N_("mlp.gate_proj.weight"), F, C), m->p[P_FCW] + l * 2 * F * C, F * C * 4);
		memcpy(add(N_("mlp.up_proj.weight"), F, C), m->p[P_FCW] + l * 2 * F * C + F * C, F * C * 4);
		memcpy(add(N_("mlp.down_proj.weight"), C, F), m->p[P_FCPROJW] + l * C * F, C * F * 4);
		if (m->p[P_MLPPOSTW])
			hf_norm(N_("post_feedforward_layernorm.weight"), m->p[P_MLPPOSTW] + l * C, C, minus);
#undef N_
	}
	hf_norm("model.norm.weight", m->p[P_LNFW], C, minus);
	if (!m->cfg.tied)
		memcpy(add("lm_head.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

/* config.json spelled as OLMo-2-0425-1B's. */
static void write_olmo2_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"Olmo2ForCausalLM\"], \"attention_bias\": false, "
		   "\"attention_dropout\": 0.0, \"eos_token_id\": 0, \"hidden_act\": \"silu\", "
		   "\"hidden_size\": %d, \"initializer_range\": 0.02, \"intermediate_size\": %d, "
		   "\"max_position_embeddings\": %d, \"model_type\": \"olmo2\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, \"num_key_value_heads\": %d, "
		   "\"pad_token_id\": 0, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, "
		   "\"rope_theta\": 500000, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\", "
		   "\"transformers_version\": \"4.51.3\", \"use_cache\": true, \"vocab_size\": %d}\n",
		c->d_model, c->d_ff, c->context, c->n_head, c->n_layer, c->n_kv_head, c->vocab_size);
}

/* A LayerNorm pair in BERT's spelling: weight/bias, or gamma/beta. */
static void bert_norm(const char *base, const float *w, const float *b, size_t C, bool gamma)
{
	char nm[128];
	snprintf(nm, sizeof nm, "%s.%s", base, gamma ? "gamma" : "weight");
	memcpy(add(nm, C, 0), w, C * 4);
	snprintf(nm, sizeof nm, "%s.%s", base, gamma ? "beta" : "bias");
	memcpy(add(nm, C, 0), b, C * 4);
}

/* How a BERT-like encoder's files differ: the prefix, the token types,
 * and the rows of the position table before position 0 (RoBERTa's). */
struct bert_style {
	const char *pre;	/* "bert.", "roberta.", or "" (a bare model) */
	size_t types;		/* rows of token_type_embeddings */
	size_t pos_off;		/* RoBERTa: pad_token_id + 1 = 2 */
};

/* The BERT (or RoBERTa) embeddings and encoder of m in HF's names and
 * layout; types (st->types, C) are the token type embeddings, which the
 * caller folds into m's positions after.  The position table has pos_off
 * rows of noise first: engine row i is the file's row pos_off + i. */
static void bert_tensors(const struct model *m, const float *types, bool gamma,
			 const struct bert_style *st, struct rng *r)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab_size;
	size_t S = (size_t)c->context, off = st->pos_off;
	const char *pre = st->pre;
	char nm[160], base[96];
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "%s%s", pre, s), add(nm, rows, cols))
	memcpy(T("embeddings.word_embeddings.weight", V, C), m->p[P_WTE], V * C * 4);
	float *pos = T("embeddings.position_embeddings.weight", S + off, C);
	for (size_t i = 0; i < off * C; i++) /* rows no text position reads */
		pos[i] = 0.5f * rng_normal(r);
	memcpy(pos + off * C, m->p[P_WPE], S * C * 4);
	memcpy(T("embeddings.token_type_embeddings.weight", st->types, C), types, st->types * C * 4);
	snprintf(base, sizeof base, "%sembeddings.LayerNorm", pre);
	bert_norm(base, m->p[P_LNEW], m->p[P_LNEB], C, gamma);
	T("embeddings.position_ids", 1, S); /* a buffer older files carry */
	for (size_t i = 0; i < S; i++)
		tens[n_tens - 1].data[i] = (float)i;
	for (int l = 0; l < c->n_layer; l++) {
		const float *qkv = m->p[P_QKVW] + l * 3 * C * C, *qb = m->p[P_QKVB] + l * 3 * C;
		static const char *const part[3] = { "query", "key", "value" };
		char ln[96];
		for (int i = 0; i < 3; i++) {
			snprintf(ln, sizeof ln, "encoder.layer.%d.attention.self.%s.weight", l, part[i]);
			memcpy(T(ln, C, C), qkv + i * C * C, C * C * 4);
			snprintf(ln, sizeof ln, "encoder.layer.%d.attention.self.%s.bias", l, part[i]);
			memcpy(T(ln, C, 0), qb + i * C, C * 4);
		}
#define COPY(s, id, rows, cols) (snprintf(ln, sizeof ln, "encoder.layer.%d.%s", l, s), \
				 memcpy(T(ln, rows, cols), m->p[id] + l * (rows) * ((cols) ? (cols) : 1), \
					(rows) * ((cols) ? (cols) : 1) * 4))
		COPY("attention.output.dense.weight", P_ATTPROJW, C, C);
		COPY("attention.output.dense.bias", P_ATTPROJB, C, 0);
		snprintf(base, sizeof base, "%sencoder.layer.%d.attention.output.LayerNorm", pre, l);
		bert_norm(base, m->p[P_LN1W] + l * C, m->p[P_LN1B] + l * C, C, gamma);
		COPY("intermediate.dense.weight", P_FCW, F, C);
		COPY("intermediate.dense.bias", P_FCB, F, 0);
		COPY("output.dense.weight", P_FCPROJW, C, F);
		COPY("output.dense.bias", P_FCPROJB, C, 0);
		snprintf(base, sizeof base, "%sencoder.layer.%d.output.LayerNorm", pre, l);
		bert_norm(base, m->p[P_LN2W] + l * C, m->p[P_LN2B] + l * C, C, gamma);
#undef COPY
	}
#undef T
}

/* A bare model's pooler, filled with the head's transform (unused). */
static void pooler(const struct model *m)
{
	size_t C = (size_t)m->cfg.d_model;
	add("pooler.dense.weight", C, C);
	memcpy(add("pooler.dense.bias", C, 0), m->p[P_HEADB], C * 4);
	memcpy(tens[n_tens - 2].data, m->p[P_HEADW], C * C * 4);
}

/* BertForMaskedLM's head (cls.predictions.*). */
static void bert_head(const struct model *m, bool gamma)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, V = (size_t)c->vocab_size;
	memcpy(add("cls.predictions.transform.dense.weight", C, C), m->p[P_HEADW], C * C * 4);
	memcpy(add("cls.predictions.transform.dense.bias", C, 0), m->p[P_HEADB], C * 4);
	bert_norm("cls.predictions.transform.LayerNorm", m->p[P_HEADLNW], m->p[P_HEADLNB], C, gamma);
	memcpy(add("cls.predictions.bias", V, 0), m->p[P_OUTB], V * 4);
	memcpy(add("cls.predictions.decoder.bias", V, 0), m->p[P_OUTB], V * 4);
	if (!c->tied)
		memcpy(add("cls.predictions.decoder.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

/* RobertaForMaskedLM's head (lm_head.*), decoder.bias a copy of bias. */
static void roberta_head(const struct model *m)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, V = (size_t)c->vocab_size;
	memcpy(add("lm_head.dense.weight", C, C), m->p[P_HEADW], C * C * 4);
	memcpy(add("lm_head.dense.bias", C, 0), m->p[P_HEADB], C * 4);
	memcpy(add("lm_head.layer_norm.weight", C, 0), m->p[P_HEADLNW], C * 4);
	memcpy(add("lm_head.layer_norm.bias", C, 0), m->p[P_HEADLNB], C * 4);
	memcpy(add("lm_head.bias", V, 0), m->p[P_OUTB], V * 4);
	memcpy(add("lm_head.decoder.bias", V, 0), m->p[P_OUTB], V * 4);
	if (!c->tied)
		memcpy(add("lm_head.decoder.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

/* The DistilBERT tensors of m in HF's names and layout (bare: a
 * DistilBertModel, no prefix and no head). */
static void distilbert_tensors(const struct model *m, bool bare)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, V = (size_t)c->vocab_size;
	size_t S = (size_t)c->context;
	const char *pre = bare ? "" : "distilbert.";
	char nm[160];
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "%s%s", pre, s), add(nm, rows, cols))
	memcpy(T("embeddings.word_embeddings.weight", V, C), m->p[P_WTE], V * C * 4);
	memcpy(T("embeddings.position_embeddings.weight", S, C), m->p[P_WPE], S * C * 4);
	memcpy(T("embeddings.LayerNorm.weight", C, 0), m->p[P_LNEW], C * 4);
	memcpy(T("embeddings.LayerNorm.bias", C, 0), m->p[P_LNEB], C * 4);
	for (int l = 0; l < c->n_layer; l++) {
		const float *qkv = m->p[P_QKVW] + l * 3 * C * C, *qb = m->p[P_QKVB] + l * 3 * C;
		static const char *const lin[3] = { "q_lin", "k_lin", "v_lin" };
		char ln[96];
		for (int i = 0; i < 3; i++) { /* engine rows: H*D query, then key, then value */
			snprintf(ln, sizeof ln, "transformer.layer.%d.attention.%s.weight", l, lin[i]);
			memcpy(T(ln, C, C), qkv + i * C * C, C * C * 4);
			snprintf(ln, sizeof ln, "transformer.layer.%d.attention.%s.bias", l, lin[i]);
			memcpy(T(ln, C, 0), qb + i * C, C * 4);
		}
#define COPY(s, id, rows, cols) (snprintf(ln, sizeof ln, "transformer.layer.%d.%s", l, s), \
				 memcpy(T(ln, rows, cols), m->p[id] + l * (rows) * ((cols) ? (cols) : 1), \
					(rows) * ((cols) ? (cols) : 1) * 4))
		COPY("attention.out_lin.weight", P_ATTPROJW, C, C);
		COPY("attention.out_lin.bias", P_ATTPROJB, C, 0);
		COPY("sa_layer_norm.weight", P_LN1W, C, 0);
		COPY("sa_layer_norm.bias", P_LN1B, C, 0);
		COPY("ffn.lin1.weight", P_FCW, F, C);
		COPY("ffn.lin1.bias", P_FCB, F, 0);
		COPY("ffn.lin2.weight", P_FCPROJW, C, F);
		COPY("ffn.lin2.bias", P_FCPROJB, C, 0);
		COPY("output_layer_norm.weight", P_LN2W, C, 0);
		COPY("output_layer_norm.bias", P_LN2B, C, 0);
#undef COPY
	}
#undef T
	if (bare)
		return;
	memcpy(add("vocab_transform.weight", C, C), m->p[P_HEADW], C * C * 4);
	memcpy(add("vocab_transform.bias", C, 0), m->p[P_HEADB], C * 4);
	memcpy(add("vocab_layer_norm.weight", C, 0), m->p[P_HEADLNW], C * 4);
	memcpy(add("vocab_layer_norm.bias", C, 0), m->p[P_HEADLNB], C * 4);
	memcpy(add("vocab_projector.bias", V, 0), m->p[P_OUTB], V * 4);
	if (!c->tied)
		memcpy(add("vocab_projector.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

static void bert_config(struct model_config *c, bool untied)
{
	c->n_layer = g.L;
	c->n_head = g.H;
	c->n_kv_head = g.H;
	c->d_model = g.C;
	c->d_ff = g.F;
	c->context = g.S;
	c->norm = NORM_LAYER;
	c->norm_eps = 1e-12f;
	c->placement = PLACE_POST;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU_EXACT;
	c->mask = MASK_NONE;
	c->emb_norm = true;
	c->head = HEAD_MLM;
	c->bias = true;
	c->tied = !untied;
}

static void write_bert_config(FILE *f, const struct model_config *c, bool bare)
{
	fprintf(f, "{\"architectures\": [\"%s\"], \"model_type\": \"bert\", "
		   "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
		   "\"num_attention_heads\": %d, \"vocab_size\": %d, \"max_position_embeddings\": %d, "
		   "\"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12, \"hidden_act\": \"gelu\", "
		   "\"position_embedding_type\": \"absolute\", \"hidden_dropout_prob\": 0.1, "
		   "\"attention_probs_dropout_prob\": 0.1, \"initializer_range\": 0.02, "
		   "\"pad_token_id\": 0, \"use_cache\": true, \"classifier_dropout\": null, "
		   "\"torch_dtype\": \"float32\"}\n",
		bare ? "BertModel" : "BertForMaskedLM", c->d_model, c->d_ff, c->n_layer, c->n_head,
		c->vocab_size, c->context);
}

/* config.json in roberta-base's spelling (distilroberta-base's keys too). */
static void write_roberta_config(FILE *f, const struct model_config *c, bool bare)
{
	fprintf(f, "{\"architectures\": [\"%s\"], \"attention_probs_dropout_prob\": 0.1, "
		   "\"bos_token_id\": 0, \"eos_token_id\": 2, \"hidden_act\": \"gelu\", "
		   "\"hidden_dropout_prob\": 0.1, \"hidden_size\": %d, \"initializer_range\": 0.02, "
		   "\"intermediate_size\": %d, \"layer_norm_eps\": 1e-05, "
		   "\"max_position_embeddings\": %d, \"model_type\": \"roberta\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, \"pad_token_id\": 1, "
		   "\"type_vocab_size\": 1, \"vocab_size\": %d}\n",
		bare ? "RobertaModel" : "RobertaForMaskedLM", c->d_model, c->d_ff, c->context + 2,
		c->n_head, c->n_layer, c->vocab_size);
}

/* config.json in distilbert-base-uncased's spelling. */
static void write_distilbert_config(FILE *f, const struct model_config *c, bool bare)
{
	fprintf(f, "{\"activation\": \"gelu\", \"architectures\": [\"%s\"], "
		   "\"attention_dropout\": 0.1, \"dim\": %d, \"dropout\": 0.1, \"hidden_dim\": %d, "
		   "\"initializer_range\": 0.02, \"max_position_embeddings\": %d, "
		   "\"model_type\": \"distilbert\", \"n_heads\": %d, \"n_layers\": %d, "
		   "\"pad_token_id\": 0, \"qa_dropout\": 0.1, \"seq_classif_dropout\": 0.2, "
		   "\"sinusoidal_pos_embds\": false, \"tie_weights_\": true, \"vocab_size\": %d}\n",
		bare ? "DistilBertModel" : "DistilBertForMaskedLM", c->d_model, c->d_ff, c->context,
		c->n_head, c->n_layer, c->vocab_size);
}

/* RoBERTa's vocabulary from TOKDIR's GPT-2 pair, as roberta-base lays it
 * out: <s> <pad> </s> <unk> as ids 0..3, GPT-2's tokens after them (id + 4),
 * <mask> last; vocab.json + merges.txt written to dir, then loaded with
 * <s> ... </s> around the text. */
static struct tokenizer *roberta_tokenizer(const char *tokdir, const char *dir, struct err *e)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/vocab.json", tokdir);
	json_t *gpt2 = json_load_file(path, 0, NULL), *v = json_object();
	if (!gpt2) {
		err_set(e, "cannot read %s", path);
		json_decref(v);
		return NULL;
	}
	static const char *const sp[4] = { "<s>", "<pad>", "</s>", "<unk>" };
	for (int i = 0; i < 4; i++)
		json_object_set_new(v, sp[i], json_integer(i));
	const char *k;
	json_t *id;
	json_object_foreach(gpt2, k, id)
		json_object_set_new(v, k, json_integer(json_integer_value(id) + 4));
	json_object_set_new(v, "<mask>", json_integer((json_int_t)json_object_size(gpt2) + 4));
	json_decref(gpt2);
	snprintf(path, sizeof path, "%s/vocab.json", dir);
	int bad = json_dump_file(v, path, JSON_COMPACT) != 0;
	json_decref(v);
	char from[4096];
	snprintf(from, sizeof from, "%s/merges.txt", tokdir);
	snprintf(path, sizeof path, "%s/merges.txt", dir);
	if (bad || copy_file(from, path)) {
		err_set(e, "cannot write %s", dir);
		return NULL;
	}
	struct tokenizer *t = tok_bpe_load(dir, e);
	if (t && tok_bpe_wrap(t, "<s>", "</s>", e)) {
		tok_free(t);
		t = NULL;
	}
	return t;
}

/* The engine row of HF row i within one head of D dims whose first R turn:
 * HF turns pairs (i, i + R/2), the engine (2i, 2i + 1); dims from R on
 * stay (written here apart from the loader's neox_rope_row). */
static size_t phi3_engine_row(size_t i, size_t D, size_t R)
{
	size_t d = i % D, head = i - d;
	if (d >= R)
		return i;
	return head + (d < R / 2 ? 2 * d : 2 * (d - R / 2) + 1);
}

/* Phi-3's layout: qkv_proj rows [q; k; v] with the q and k heads in
 * rotate-half order, gate_up_proj rows [gate; up], lm_head when untied. */
static void phi3_tensors(const struct model *m)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, H = (size_t)c->n_head;
	size_t K = (size_t)c->n_kv_head, D = C / H, R = (size_t)cfg_rotary_dims(c);
	size_t V = (size_t)c->vocab_size, QKV = (H + 2 * K) * D;
	memcpy(add("model.embed_tokens.weight", V, C), m->p[P_WTE], V * C * 4);
	for (int l = 0; l < c->n_layer; l++) {
		char nm[96];
		const float *qkv = m->p[P_QKVW] + l * QKV * C;
#define T(s, rows, cols) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, s), add(nm, rows, cols))
		memcpy(T("input_layernorm.weight", C, 0), m->p[P_LN1W] + l * C, C * 4);
		float *w = T("self_attn.qkv_proj.weight", QKV, C);
		for (size_t row = 0; row < QKV; row++) { /* q and k rows turn; v rows stay */
			size_t er = row < (H + K) * D ? phi3_engine_row(row, D, R) : row;
			memcpy(w + row * C, qkv + er * C, C * 4);
		}
		memcpy(T("self_attn.o_proj.weight", C, C), m->p[P_ATTPROJW] + l * C * C, C * C * 4);
		memcpy(T("post_attention_layernorm.weight", C, 0), m->p[P_LN2W] + l * C, C * 4);
		memcpy(T("mlp.gate_up_proj.weight", 2 * F, C), m->p[P_FCW] + l * 2 * F * C, 2 * F * C * 4);
		memcpy(T("mlp.down_proj.weight", C, F), m->p[P_FCPROJW] + l * C * F, C * F * 4);
#undef T
	}
	memcpy(add("model.norm.weight", C, 0), m->p[P_LNFW], C * 4);
	if (!c->tied)
		memcpy(add("lm_head.weight", V, C), m->p[P_LMHEAD], V * C * 4);
}

/* --phi3: a sliding window of 6 keys on every layer; --partial: RoPE over
 * half of each head (partial_rotary_factor 0.5) and tied, as Phi-4-mini. */
static void phi3_config(struct model_config *c, bool partial)
{
	c->norm_eps = 1e-5f;
	c->local_window = 6;
	for (int l = 0; l < c->n_layer; l++)
		cfg_set_local(c, l, true);
	if (partial) {
		c->rotary_dims = cfg_d_head(c) / 2;
		c->tied = true;
	}
}

/* --longrope: Phi-3.5-mini's LongRoPE over an original context of 4, the
 * factor context / 4 (16; --tiny: 2) giving the attention factor; no
 * sliding window. */
static void phi3_longrope(struct model_config *c)
{
	c->local_window = 0;
	memset(c->local, 0, sizeof c->local);
	c->rope_scaling = ROPE_SCALE_LONGROPE;
	c->rope_orig_context = 4;
	c->rope_attn_factor = (float)sqrt(1.0 + log(c->context / 4.0) / log(4.0));
	for (int i = 0; i < cfg_rotary_dims(c) / 2; i++) {
		c->rope_short[i] = 1.0f + 0.02f * (float)i;
		c->rope_long[i] = 1.08f + 3.7f * (float)(i * i);
	}
}

/* A LongRoPE table as Phi-3.5's config.json prints it: each float's
 * double in full ("1.0199999809265137"), whole ones as "1.0". */
static void write_factors(FILE *f, const char *key, const float *t, int n)
{
	fprintf(f, "\"%s\": [", key);
	for (int i = 0; i < n; i++)
		fprintf(f, t[i] == floorf(t[i]) ? "%s%.1f" : "%s%.17g", i ? ", " : "", (double)t[i]);
	fprintf(f, "]");
}

/* config.json spelled as Phi-3.5-mini-instruct's (--longrope). */
static void write_phi35_config(FILE *f, const struct model_config *c, bool partial)
{
	fprintf(f, "{\"_name_or_path\": \"Phi-3.5-mini-instruct\", \"architectures\": "
		   "[\"Phi3ForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": 1, "
		   "\"embd_pdrop\": 0.0, \"eos_token_id\": 0, \"hidden_act\": \"silu\", "
		   "\"hidden_size\": %d, \"initializer_range\": 0.02, \"intermediate_size\": %d, "
		   "\"max_position_embeddings\": %d, \"model_type\": \"phi3\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, "
		   "\"num_key_value_heads\": %d, \"original_max_position_embeddings\": %d, "
		   "\"pad_token_id\": 0, \"resid_pdrop\": 0.0, \"rms_norm_eps\": 1e-05, "
		   "\"rope_scaling\": {", c->d_model, c->d_ff, c->context, c->n_head, c->n_layer,
		c->n_kv_head, c->rope_orig_context);
	write_factors(f, "long_factor", c->rope_long, cfg_rotary_dims(c) / 2);
	fprintf(f, ", ");
	write_factors(f, "short_factor", c->rope_short, cfg_rotary_dims(c) / 2);
	fprintf(f, ", \"type\": \"longrope\"}, \"rope_theta\": 10000.0, \"sliding_window\": 262144, "
		   "\"tie_word_embeddings\": %s,%s \"torch_dtype\": \"bfloat16\", "
		   "\"transformers_version\": \"4.43.3\", \"use_cache\": true, "
		   "\"attention_bias\": false, \"vocab_size\": %d}\n", c->tied ? "true" : "false",
		partial ? " \"partial_rotary_factor\": 0.5," : "", c->vocab_size);
}

/* config.json spelled as Phi-3-mini-4k-instruct's. */
static void write_phi3_config(FILE *f, const struct model_config *c, bool partial)
{
	fprintf(f, "{\"_name_or_path\": \"Phi-3-mini-4k-instruct\", \"architectures\": "
		   "[\"Phi3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0, "
		   "\"bos_token_id\": 1, \"embd_pdrop\": 0.0, \"eos_token_id\": 0, "
		   "\"hidden_act\": \"silu\", \"hidden_size\": %d, \"initializer_range\": 0.02, "
		   "\"intermediate_size\": %d, \"max_position_embeddings\": %d, \"model_type\": \"phi3\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, \"num_key_value_heads\": %d, "
		   "\"original_max_position_embeddings\": %d, \"pad_token_id\": 0, \"resid_pdrop\": 0.0, "
		   "\"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0, "
		   "\"sliding_window\": %d, \"tie_word_embeddings\": %s,%s \"torch_dtype\": \"float32\", "
		   "\"transformers_version\": \"4.40.2\", \"use_cache\": true, \"vocab_size\": %d}\n",
		c->d_model, c->d_ff, c->context, c->n_head, c->n_layer, c->n_kv_head, c->context,
		c->local_window, c->tied ? "true" : "false",
		partial ? " \"partial_rotary_factor\": 0.5," : "", c->vocab_size);
}

/* Gemma 2's switches on the Llama shape: heads 16 wide (64 over hidden
 * 32, as gemma-2-2b's 8 x 256 over 2304), query_pre_attn_scalar 24,
 * soft-capping at 4 (scores) and 2 (logits) so that it acts on these
 * weights, the even layers local over 4 keys, tied. */
static void gemma2_config(struct model_config *c)
{
	c->mlp = MLP_GEGLU;
	c->tied = true;
	c->head_dim = 2 * c->d_model / c->n_head;
	c->sandwich = true;
	c->emb_scale = (float)sqrt((double)c->d_model);
	c->attn_scale_dim = 24;
	c->attn_softcap = 4.0f;
	c->final_softcap = 2.0f;
	c->local_window = 4;
	for (int l = 0; l < c->n_layer; l += 2)
		cfg_set_local(c, l, true);
}

/* Gemma 3 on gemma2_config: the q/k norm, no soft-capping, the global
 * layers on RoPE base 1000000 scaled linearly by 8, the local ones on
 * 10000 unscaled; sliding_window_pattern 2 (layer 0 local, layer 1 global). */
static void gemma3_config(struct model_config *c)
{
	gemma2_config(c);
	c->qk_norm = true;
	c->attn_softcap = c->final_softcap = 0.0f;
	c->rope_theta = 1e6f;
	c->rope_scaling = ROPE_SCALE_LINEAR;
	c->rope_factor = 8.0f;
	c->rope_local_theta = 10000.0f;
}

/* config.json spelled as gemma-3-1b-it's. */
static void write_gemma3_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, "
		   "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": null, \"bos_token_id\": 2, "
		   "\"cache_implementation\": \"hybrid\", \"eos_token_id\": [1, 106], "
		   "\"final_logit_softcapping\": null, \"head_dim\": %d, "
		   "\"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": %d, "
		   "\"initializer_range\": 0.02, \"intermediate_size\": %d, \"max_position_embeddings\": %d, "
		   "\"model_type\": \"gemma3_text\", \"num_attention_heads\": %d, \"num_hidden_layers\": %d, "
		   "\"num_key_value_heads\": %d, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 24, "
		   "\"rms_norm_eps\": 1e-06, \"rope_local_base_freq\": 10000, "
		   "\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, \"rope_theta\": 1000000, "
		   "\"sliding_window\": 4, \"sliding_window_pattern\": 2, \"torch_dtype\": \"float32\", "
		   "\"transformers_version\": \"4.50.0.dev0\", \"use_cache\": true, \"vocab_size\": %d}\n",
		cfg_d_head(c), c->d_model, c->d_ff, c->context, c->n_head, c->n_layer, c->n_kv_head,
		c->vocab_size);
}

/* config.json spelled as gemma-3-4b-it's: the text model's keys that
 * differ from Gemma3TextConfig's defaults in text_config (rms_norm_eps,
 * rope_theta and rope_local_base_freq left out), a SigLIP vision_config. */
static void write_gemma3mm_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], "
		   "\"boi_token_index\": 255999, \"eoi_token_index\": 256000, \"eos_token_id\": [1, 106], "
		   "\"image_token_index\": 262144, \"initializer_range\": 0.02, "
		   "\"mm_tokens_per_image\": 256, \"model_type\": \"gemma3\", \"text_config\": {"
		   "\"head_dim\": %d, \"hidden_size\": %d, \"intermediate_size\": %d, "
		   "\"max_position_embeddings\": %d, \"model_type\": \"gemma3_text\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, \"num_key_value_heads\": %d, "
		   "\"query_pre_attn_scalar\": 24, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": "
		   "\"linear\"}, \"sliding_window\": 4, \"sliding_window_pattern\": 2, \"vocab_size\": %d}, "
		   "\"torch_dtype\": \"float32\", \"transformers_version\": \"4.50.0.dev0\", "
		   "\"vision_config\": {\"hidden_size\": 1152, \"image_size\": 896, "
		   "\"intermediate_size\": 4304, \"model_type\": \"siglip_vision_model\", "
		   "\"num_attention_heads\": 16, \"num_hidden_layers\": 27, \"patch_size\": 14, "
		   "\"vision_use_head\": false}}\n",
		cfg_d_head(c), c->d_model, c->d_ff, c->context, c->n_head, c->n_layer, c->n_kv_head,
		c->vocab_size);
}

/* The text model's tensors renamed as a multimodal file holds them (its
 * "model." becomes prefix), and two of the vision model's beside them
 * (noise: the loader passes them over). */
static void gemma3mm_tensors(const char *prefix, const char *vision)
{
	for (int i = 0; i < n_tens; i++) {
		char nm[160];
		snprintf(nm, sizeof nm, "%s%s", prefix, tens[i].name + strlen("model."));
		snprintf(tens[i].name, sizeof tens[i].name, "%s", nm);
	}
	char nm[160];
	snprintf(nm, sizeof nm, "%svision_tower.vision_model.post_layernorm.weight", vision);
	float *v = add(nm, 8, 0);
	snprintf(nm, sizeof nm, "%smulti_modal_projector.mm_input_projection_weight", vision);
	float *p = add(nm, 8, 4);
	for (int i = 0; i < 32; i++)
		p[i] = v[i % 8] = 0.5f + (float)i;
}

/* config.json spelled as gemma-2-2b's (layer_types left out: the even
 * layers slide, as transformers sets them). */
static void write_gemma2_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"Gemma2ForCausalLM\"], \"attention_bias\": false, "
		   "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": 4.0, \"bos_token_id\": 2, "
		   "\"cache_implementation\": \"hybrid\", \"eos_token_id\": 1, "
		   "\"final_logit_softcapping\": 2.0, \"head_dim\": %d, \"hidden_act\": \"gelu_pytorch_tanh\", "
		   "\"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": %d, "
		   "\"initializer_range\": 0.02, \"intermediate_size\": %d, \"max_position_embeddings\": %d, "
		   "\"model_type\": \"gemma2\", \"num_attention_heads\": %d, \"num_hidden_layers\": %d, "
		   "\"num_key_value_heads\": %d, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 24, "
		   "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"sliding_window\": 4, "
		   "\"torch_dtype\": \"float32\", \"transformers_version\": \"4.42.4\", \"use_cache\": true, "
		   "\"vocab_size\": %d}\n",
		cfg_d_head(c), c->d_model, c->d_ff, c->context, c->n_head, c->n_layer, c->n_kv_head,
		c->vocab_size);
}

/* Qwen3-0.6B's config.json spelling: head_dim apart from hidden_size /
 * heads, no biases, tied, no sliding window. */
static void write_qwen3_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, "
		   "\"attention_dropout\": 0.0, \"bos_token_id\": 0, \"eos_token_id\": 0, "
		   "\"head_dim\": %d, \"hidden_act\": \"silu\", \"hidden_size\": %d, "
		   "\"initializer_range\": 0.02, \"intermediate_size\": %d, "
		   "\"max_position_embeddings\": %d, \"max_window_layers\": %d, \"model_type\": \"qwen3\", "
		   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, \"num_key_value_heads\": %d, "
		   "\"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 10000, "
		   "\"sliding_window\": null, \"tie_word_embeddings\": true, \"torch_dtype\": \"float32\", "
		   "\"transformers_version\": \"4.51.0\", \"use_cache\": true, \"use_sliding_window\": false, "
		   "\"vocab_size\": %d}\n",
		cfg_d_head(c), c->d_model, c->d_ff, c->context, c->n_layer, c->n_head, c->n_layer,
		c->n_kv_head, c->vocab_size);
}

static void neox_config(struct model_config *c, bool sequential)
{
	bool tiny = g.C < 32;
	c->n_layer = g.L;
	c->n_head = g.H;
	c->n_kv_head = g.H;
	c->d_model = tiny ? g.C : 64;
	c->d_ff = tiny ? g.F : 96;
	c->context = g.S;
	c->norm = NORM_LAYER;
	c->norm_eps = 1e-5f;
	c->pos = POS_ROPE;
	c->rope_theta = 10000.0f;
	c->rotary_dims = tiny ? 2 : 4;
	c->mlp = MLP_GELU_EXACT;
	c->parallel = !sequential;
	c->bias = true;
	c->tied = false;
}

static void write_neox_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"model_type\": \"gpt_neox\", "
		   "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
		   "\"num_attention_heads\": %d, \"vocab_size\": %d, \"max_position_embeddings\": %d, "
		   "\"layer_norm_eps\": 1e-05, \"rotary_pct\": %g, \"rotary_emb_base\": 10000, "
		   "\"hidden_act\": \"gelu\", \"use_parallel_residual\": %s, "
		   "\"tie_word_embeddings\": false, \"attention_bias\": true, \"rope_scaling\": null, "
		   "\"bos_token_id\": 0, \"eos_token_id\": 0, \"torch_dtype\": \"float32\"}\n",
		c->d_model, c->d_ff, c->n_layer, c->n_head, c->vocab_size, c->context,
		(double)c->rotary_dims / cfg_d_head(c), c->parallel ? "true" : "false");
}

/* GPT-Neo: layer 0 global, the rest alternating (layer 1 local), window 4. */
static void neo_config(struct model_config *c)
{
	c->n_layer = c->n_layer < 2 ? 2 : c->n_layer; /* --tiny: still one local layer */
	c->n_kv_head = c->n_head;
	c->d_ff = 4 * c->d_model;
	c->norm = NORM_LAYER;
	c->norm_eps = 1e-5f;
	c->pos = POS_LEARNED;
	c->mlp = MLP_GELU;
	c->bias = true;
	c->tied = true;
	c->scale = false;
	c->local_window = 4;
	for (int l = 1; l < c->n_layer; l += 2)
		cfg_set_local(c, l, true);
}

/* config.json in TinyStories-1M's spelling (its keys, in its order). */
static void write_neo_config(FILE *f, const struct model_config *c)
{
	fprintf(f, "{\"activation_function\": \"gelu_new\", \"architectures\": "
		   "[\"GPTNeoForCausalLM\"], \"attention_dropout\": 0, \"attention_layers\": [");
	for (int l = 0; l < c->n_layer; l++)
		fprintf(f, "%s\"%s\"", l ? ", " : "", cfg_layer_local(c, l) ? "local" : "global");
	fprintf(f, "], \"attention_types\": [[[\"global\", \"local\"], %d]%s], \"bos_token_id\": 50256, "
		   "\"embed_dropout\": 0, \"eos_token_id\": 50256, \"gradient_checkpointing\": false, "
		   "\"hidden_size\": %d, \"initializer_range\": 0.02, \"intermediate_size\": null, "
		   "\"layer_norm_epsilon\": 1e-05, \"max_position_embeddings\": %d, "
		   "\"model_type\": \"gpt_neo\", \"num_heads\": %d, \"num_layers\": %d, "
		   "\"resid_dropout\": 0, \"summary_activation\": null, \"summary_first_dropout\": 0.1, "
		   "\"summary_proj_to_labels\": true, \"summary_type\": \"cls_index\", "
		   "\"summary_use_proj\": true, \"torch_dtype\": \"float32\", "
		   "\"transformers_version\": \"4.28.0.dev0\", \"use_cache\": true, "
		   "\"vocab_size\": %d, \"window_size\": %d}\n",
		c->n_layer / 2, c->n_layer % 2 ? ", [[\"global\"], 1]" : "", c->d_model, c->context, c->n_head, c->n_layer,
		c->vocab_size, c->local_window);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: tool_mkhf OUTDIR REF.safetensors TOKDIR|TOKENIZER.json "
			"[--qwen2 | --neox [--sequential] | --neo | --bert [--untied] [--gamma] [--bare] | "
			"--roberta [--untied] [--bare] | --distilbert [--untied] [--bare] | --llama3 | "
			"--phi3 [--partial] [--longrope] | --qwen3 | --gemma2 | --gemma3 [--mm | --mm2] | "
			"--olmo2] "
			"[--headdim N] "
			"[--shards] [--tiny] [--dtype F32|F16|BF16]\n");
		return 2;
	}
	const char *dir = argv[1], *ref = argv[2], *tokdir = argv[3];
	bool qwen = false, shards = false, neox = false, sequential = false, neo = false;
	bool bert = false, untied = false, gamma = false, bare = false, llama3 = false;
	bool roberta = false, distil = false, phi3 = false, partial = false, qwen3 = false;
	bool gemma2 = false, gemma3 = false, olmo2 = false, mm = false, mm2 = false;
	bool longrope = false;
	int headdim = 0; /* Llama / Qwen2: config.json's head_dim (0: not written) */
	for (int i = 4; i < argc; i++) {
		qwen |= !strcmp(argv[i], "--qwen2");
		shards |= !strcmp(argv[i], "--shards");
		neox |= !strcmp(argv[i], "--neox");
		neo |= !strcmp(argv[i], "--neo");
		sequential |= !strcmp(argv[i], "--sequential");
		bert |= !strcmp(argv[i], "--bert");
		untied |= !strcmp(argv[i], "--untied");
		gamma |= !strcmp(argv[i], "--gamma");
		bare |= !strcmp(argv[i], "--bare");
		roberta |= !strcmp(argv[i], "--roberta");
		distil |= !strcmp(argv[i], "--distilbert");
		llama3 |= !strcmp(argv[i], "--llama3");
		phi3 |= !strcmp(argv[i], "--phi3");
		qwen3 |= !strcmp(argv[i], "--qwen3");
		gemma2 |= !strcmp(argv[i], "--gemma2");
		gemma3 |= !strcmp(argv[i], "--gemma3");
		mm |= !strcmp(argv[i], "--mm");
		mm2 |= !strcmp(argv[i], "--mm2");
		olmo2 |= !strcmp(argv[i], "--olmo2");
		partial |= !strcmp(argv[i], "--partial");
		longrope |= !strcmp(argv[i], "--longrope");
		if (!strcmp(argv[i], "--headdim") && i + 1 < argc)
			headdim = atoi(argv[++i]);
		if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
			out_dtype = argv[++i];
		if (strcmp(out_dtype, "F32") && strcmp(out_dtype, "F16") && strcmp(out_dtype, "BF16")) {
			fprintf(stderr, "tool_mkhf: --dtype takes F32, F16 or BF16\n");
			return 2;
		}
		if (!strcmp(argv[i], "--tiny"))
			g = (struct dims){ 1, 2, 1, 8, 8, 8 };
	}
	struct err e;
	/* TOKDIR is GPT-2's vocab.json + merges.txt, or a tokenizer.json file */
	size_t tl = strlen(tokdir);
	bool tokjson = tl >= 5 && !strcmp(tokdir + tl - 5, ".json");
	struct tokenizer *tok = roberta ? roberta_tokenizer(tokdir, dir, &e)
				    : load_tokenizer(tokdir, tokjson, neox, dir, &e);
	if (!tok) {
		fprintf(stderr, "tool_mkhf: %s\n", e.msg);
		return 1;
	}
	struct model_config c;
	config_default(&c);
	c.vocab_size = tok->vocab_size;
	c.n_layer = g.L;
	c.n_head = g.H;
	c.n_kv_head = g.K;
	c.d_model = g.C;
	c.d_ff = g.F;
	c.context = g.S;
	c.norm = NORM_RMS;
	c.norm_eps = 1e-6f;
	c.pos = POS_ROPE;
	c.rope_theta = 10000.0f;
	c.mlp = MLP_SWIGLU;
	c.bias = qwen;
	c.tied = false;
	if (neox)
		neox_config(&c, sequential);
	if (bert || roberta || distil)
		bert_config(&c, untied);
	if (roberta)
		c.norm_eps = 1e-5f;
	if (llama3) {
		c.rope_scaling = ROPE_SCALE_LLAMA3;
		c.rope_factor = 8.0f;
		c.rope_low_freq = 1.0f;
		c.rope_high_freq = 4.0f;
		c.rope_orig_context = 16;
	}
	if (neo)
		neo_config(&c);
	if (phi3)
		phi3_config(&c, partial);
	if (phi3 && longrope)
		phi3_longrope(&c);
	if (gemma2)
		gemma2_config(&c);
	if (gemma3)
		gemma3_config(&c);
	if (olmo2) { /* OLMo-2's blocks on the Llama shape, its RoPE base */
		c.sandwich = c.post_only = c.qk_norm = c.qk_norm_whole = true;
		c.rope_theta = 500000.0f;
	}
	if (qwen3) { /* heads twice as wide as hidden / heads, as Qwen3-0.6B's */
		c.qk_norm = true;
		c.tied = true;
		c.head_dim = 2 * c.d_model / c.n_head;
	}
	if (headdim > 0 && headdim * c.n_head != c.d_model) /* hidden / heads: as without the key */
		c.head_dim = headdim;
	struct model *m = model_new(&c, &e);
	if (!m) {
		fprintf(stderr, "tool_mkhf: %s\n", e.msg);
		return 1;
	}
	model_init_random(m, 77);
	struct rng r;
	rng_seed(&r, 78);
	for (size_t i = 0; i < m->n_params; i++) /* weights far from their init */
		m->params[i] += 0.05f * rng_normal(&r);
	if (qwen) /* Qwen2 has biases on Q, K and V only */
		for (int i = 0; i < N_PARAMS; i++)
			if (i != P_QKVB && (i == P_ATTPROJB || i == P_FCB || i == P_FCPROJB) && m->p[i])
				memset(m->p[i], 0, m->psize[i] * sizeof(float));
	if (neo) /* GPT-Neo's Q/K/V have no bias */
		memset(m->p[P_QKVB], 0, m->psize[P_QKVB] * sizeof(float));
	m->tok = tok;
	m->name = xstrdup("ref");
	if (bert || roberta) { /* HF's tensors first, then type 0 folded into the positions */
		size_t C = (size_t)c.d_model;
		struct bert_style st = { bare ? "" : bert ? "bert." : "roberta.", bert ? 2 : 1,
					 bert ? 0 : 2 };
		float types[2 * 32];
		for (size_t i = 0; i < 2 * C; i++)
			types[i] = 0.05f * rng_normal(&r);
		bert_tensors(m, types, gamma, &st, &r);
		if (bare)
			pooler(m);
		else if (bert)
			bert_head(m, gamma);
		else
			roberta_head(m);
		for (size_t i = 0; i < (size_t)c.context; i++)
			for (size_t j = 0; j < C; j++)
				m->p[P_WPE][i * C + j] += types[j];
	}
	if (checkpoint_save(m, ref, CKPT_F32, &e)) {
		fprintf(stderr, "tool_mkhf: %s\n", e.msg);
		return 1;
	}

	if (neox)
		neox_tensors(m);
	else if (neo)
		neo_tensors(m);
	else if (distil)
		distilbert_tensors(m, bare);
	else if (phi3)
		phi3_tensors(m);
	else if (!bert && !roberta) /* the Llama layout, as the config has it */
		llama_tensors(m, gemma2 || gemma3);
	if (gemma3 && (mm || mm2))
		gemma3mm_tensors(mm2 ? "model.language_model." : "language_model.model.",
				 mm2 ? "model." : "");

	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	char hd_key[40] = "";
	if (headdim > 0)
		snprintf(hd_key, sizeof hd_key, "\"head_dim\": %d, ", headdim);
	if (neox)
		write_neox_config(f, &c);
	else if (neo)
		write_neo_config(f, &c);
	else if (bert)
		write_bert_config(f, &c, bare);
	else if (roberta)
		write_roberta_config(f, &c, bare);
	else if (distil)
		write_distilbert_config(f, &c, bare);
	else if (phi3 && longrope)
		write_phi35_config(f, &c, partial);
	else if (phi3)
		write_phi3_config(f, &c, partial);
	else if (qwen3)
		write_qwen3_config(f, &c);
	else if (gemma2)
		write_gemma2_config(f, &c);
	else if (gemma3 && (mm || mm2))
		write_gemma3mm_config(f, &c);
	else if (gemma3)
		write_gemma3_config(f, &c);
	else if (olmo2)
		write_olmo2_config(f, &c);
	else
		fprintf(f, "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": %d, "
		   "\"intermediate_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
		   "\"num_key_value_heads\": %d, \"vocab_size\": %d, \"max_position_embeddings\": %d, "
		   "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"hidden_act\": \"silu\", "
		   "\"tie_word_embeddings\": false, %s\"rope_scaling\": %s}\n",
		qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM", qwen ? "qwen2" : "llama", c.d_model,
		c.d_ff, c.n_layer, c.n_head, c.n_kv_head, c.vocab_size, c.context, hd_key,
		llama3 ? "{\"factor\": 8.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
			 "\"original_max_position_embeddings\": 16, \"rope_type\": \"llama3\"}" : "null");
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
	for (int i = 0; i < 2 && !neox && !tokjson && !roberta; i++) {
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
