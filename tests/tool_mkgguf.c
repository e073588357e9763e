/*
 * tool_mkgguf — writes a GGUF file (tests/gguf_write.h) of an attnscope
 * checkpoint, or of a tiny seeded model, as llama.cpp's converter lays it
 * out for one architecture, with its 2-D weights in one tensor type and the
 * tokenizer metadata of a tokenizer's own files; or of a Gemma 2, Gemma 3,
 * OLMo-2 or Phi-3 Hugging Face directory (--convert), read as the
 * converter reads it; for tests/cli_gguf.sh and the fuzz seeds in
 * fuzz/seeds/gguf.
 *
 * usage: tool_mkgguf OUT.gguf (--from MODEL | --tiny | --convert HFDIR)
 *        --arch ARCH [--type TYPE] [--version 2|3] [--alignment N]
 *        [--tokdir DIR [--pad-vocab N] | --tokjson FILE --pre PRE [--bos NAME] |
 *         --tokbin FILE | --wordpiece FILE | --spmjson FILE]
 *   ARCH  llama, qwen2, qwen3, gpt2, gptneox, bert, gemma2, gemma3, olmo2 or
 *         phi3
 *         (--from refuses a model the architecture's file cannot hold as
 *         the converter writes it, ga_unheld: qwen3, gemma3 and olmo2 need
 *         the q/k norm, as tool_mkhf --qwen3, --gemma3 and --olmo2 write
 *         it, the others none; gemma's scale and sliding layers must be
 *         llama.cpp's)
 *   --from MODEL  any model attnscope opens (a checkpoint, an HF directory)
 *   --pad-vocab N  GPT-2's tokens then [PADi] ones of type unused up to N,
 *         as the converter pads a vocabulary smaller than the embedding
 *         (llama.cpp wants one token a row)
 *   --convert HFDIR  config.json and model.safetensors as
 *         convert_hf_to_gguf.py turns them: the keys of its model class,
 *         every tensor renamed, Gemma's 1 added to each *norm.weight, no
 *         row permutation (Phi-3's fused qkv_proj and gate_up_proj copied
 *         whole as attn_qkv and ffn_up), Gemma's lm_head left out, Phi-3's
 *         LongRoPE tables as rope_factors_long / rope_factors_short.weight
 *         with the attention factor Phi3MiniModel derives; without the
 *         engine's loaders, so that the file and the directory are two
 *         paths to one model.  A directory llama.cpp would run differently
 *         (a query_pre_attn_scalar or Gemma 3 sliding_window_pattern other
 *         than its fixed rules, OLMo 3's sliding_window, a Phi-3
 *         rope_scaling attention_factor or factor) is refused
 *   TYPE  f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k,
 *         q3_k, q4_k, q5_k, q6_k (rows that are not whole blocks stay F32)
 *   the tokenizer: GPT-2's vocab.json + merges.txt in DIR; a BPE
 *         tokenizer.json with the pre-tokenizer name PRE (llama-bpe, qwen2)
 *         and BOS NAME; a llama2.c tokenizer.bin; a WordPiece
 *         tokenizer.json; a SentencePiece-style BPE tokenizer.json
 *         (Gemma's) as a llama tokenizer with add_space_prefix false
 *         (gt_spm_json: scores from the merge ranks), which --tiny also
 *         takes, its model then that many tokens wide.  With none, --tiny
 *         writes its own small
 *         vocabulary of the kind the architecture's models use (llama,
 *         gemma2, gemma3: a SentencePiece-style one; bert: WordPiece;
 *         others: byte-level BPE)
 *         and --from and --convert write no tokenizer.  (--tiny writes
 *         its SentencePiece-style one without add_space_prefix for gemma2
 *         and gemma3.)
 * --tiny: 1 layer, d_model 32, 2 heads of 16 (the ga_gqa families: 1 K/V
 * head; qwen3's heads 32 wide, twice d_model / heads as Qwen3-0.6B's 128
 * over 1024 / 16, with the q/k norm; Gemma's, OLMo-2's and Phi-3's switches
 * as ga_model's: Phi-3's LongRoPE over an original context of 4), d_ff 32,
 * context 8, the vocabulary's size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <math.h>

#include "gguf.h"
#include "gguf_write.h"
#include "loader.h"
#include "model.h"
#include "safetensors.h"
#include "tok_expect.h"
#include "util.h"

static const struct { const char *name; uint32_t t; } types[] = {
	{ "f32", GGML_F32 },   { "f16", GGML_F16 },   { "bf16", GGML_BF16 }, { "q8_0", GGML_Q8_0 },
	{ "q4_0", GGML_Q4_0 }, { "q4_1", GGML_Q4_1 }, { "q5_0", GGML_Q5_0 }, { "q5_1", GGML_Q5_1 },
	{ "q2_k", GGML_Q2_K }, { "q3_k", GGML_Q3_K }, { "q4_k", GGML_Q4_K }, { "q5_k", GGML_Q5_K },
	{ "q6_k", GGML_Q6_K },
};

/* GPT-2's byte alphabet and 8 merges (264 tokens). */
static int tiny_bpe(struct gw *w)
{
	static const char *const merges[] = { "\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n",
					      "\xc4\xa0 a", "e r", "o n", "\xc4\xa0 c" };
	char *tok[264], buf[264][8];
	int32_t type[264];
	int next = 256;
	for (int b = 0; b < 256; b++) {
		int self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
		buf[b][utf8_encode((uint32_t)(self ? b : next++), buf[b])] = '\0';
	}
	for (int i = 0; i < 8; i++) {
		const char *sp = strchr(merges[i], ' ');
		snprintf(buf[256 + i], sizeof buf[0], "%.*s%s", (int)(sp - merges[i]), merges[i], sp + 1);
	}
	for (int i = 0; i < 264; i++) {
		tok[i] = buf[i];
		type[i] = 1;
	}
	gw_str(w, "tokenizer.ggml.model", "gpt2");
	gw_str(w, "tokenizer.ggml.pre", "gpt-2");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 264);
	gw_i32s(w, "tokenizer.ggml.token_type", type, 264);
	gw_strs(w, "tokenizer.ggml.merges", (char *const *)merges, NULL, 8);
	return 264;
}

/* <unk>, <s>, </s>, 256 byte pieces and a few words, with scores. */
static int tiny_spm(struct gw *w)
{
	static const char *const words[] = { "\xe2\x96\x81t", "he", "\xe2\x96\x81the", "in",
					     "\xe2\x96\x81" "a" };
	char *tok[264], buf[264][16];
	float score[264];
	int32_t type[264];
	strcpy(buf[0], "<unk>");
	strcpy(buf[1], "<s>");
	strcpy(buf[2], "</s>");
	for (int b = 0; b < 256; b++)
		snprintf(buf[3 + b], sizeof buf[0], "<0x%02X>", b);
	for (int i = 0; i < 5; i++)
		snprintf(buf[259 + i], sizeof buf[0], "%s", words[i]);
	for (int i = 0; i < 264; i++) {
		tok[i] = buf[i];
		score[i] = i < 259 ? 0.0f : -(float)i;
		type[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
	}
	gw_str(w, "tokenizer.ggml.model", "llama");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 264);
	gw_f32s(w, "tokenizer.ggml.scores", score, 264);
	gw_i32s(w, "tokenizer.ggml.token_type", type, 264);
	gw_u32(w, "tokenizer.ggml.bos_token_id", 1);
	gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	return 264;
}

/* BERT's specials, the letters as words and as continuations, a few words. */
static int tiny_wordpiece(struct gw *w)
{
	static const char *const special[] = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" };
	char *tok[64], buf[64][16];
	int32_t type[64];
	int n = 0;
	for (int i = 0; i < 5; i++, n++) {
		strcpy(buf[n], special[i]);
		type[n] = 3;
	}
	for (char c = 'a'; c <= 'z'; c++, n++) {
		snprintf(buf[n], sizeof buf[0], "\xe2\x96\x81%c", c);
		type[n] = 1;
	}
	for (char c = 'a'; c <= 'z'; c++, n++) {
		snprintf(buf[n], sizeof buf[0], "%c", c);
		type[n] = 1;
	}
	static const char *const words[] = { "\xe2\x96\x81the", "\xe2\x96\x81,", "he" };
	for (int i = 0; i < 3; i++, n++) {
		strcpy(buf[n], words[i]);
		type[n] = 1;
	}
	for (int i = 0; i < n; i++)
		tok[i] = buf[i];
	gw_str(w, "tokenizer.ggml.model", "bert");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, (size_t)n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, (size_t)n);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 1);
	gw_u32(w, "tokenizer.ggml.cls_token_id", 2);
	gw_u32(w, "tokenizer.ggml.seperator_token_id", 3);
	return n;
}

/* --------------------------------------------- the converter in miniature */

/* HF's per-layer names (after "model.layers.N.") and llama.cpp's (after
 * "blk.N."), as gguf-py's tensor map has them for Gemma 2, Gemma 3 and
 * OLMo-2: post_attention_layernorm is their norm after attention (Llama's
 * would be ffn_norm), pre_feedforward_layernorm Gemma's norm before the MLP. */
static const char *const layer_names[][2] = {
	{ "input_layernorm", "attn_norm" },
	{ "self_attn.q_proj", "attn_q" },
	{ "self_attn.k_proj", "attn_k" },
	{ "self_attn.v_proj", "attn_v" },
	{ "self_attn.o_proj", "attn_output" },
	{ "self_attn.q_norm", "attn_q_norm" },
	{ "self_attn.k_norm", "attn_k_norm" },
	{ "post_attention_layernorm", "post_attention_norm" },
	{ "pre_feedforward_layernorm", "ffn_norm" },
	{ "mlp.gate_proj", "ffn_gate" },
	{ "mlp.up_proj", "ffn_up" },
	{ "mlp.down_proj", "ffn_down" },
	{ "post_feedforward_layernorm", "post_ffw_norm" },
};

/* The same for Phi-3: its fused projections, and post_attention_layernorm
 * as the norm before the MLP (Llama's ffn_norm). */
static const char *const phi3_names[][2] = {
	{ "input_layernorm", "attn_norm" },
	{ "self_attn.qkv_proj", "attn_qkv" },
	{ "self_attn.o_proj", "attn_output" },
	{ "post_attention_layernorm", "ffn_norm" },
	{ "mlp.gate_up_proj", "ffn_up" },
	{ "mlp.down_proj", "ffn_down" },
};

/* llama.cpp's name of HF's tensor hf of architecture a into out; 0, or -1
 * for a name the converter does not map. */
static int gguf_name(const char *hf, enum ga a, char *out, size_t n)
{
	const char *const(*names)[2] = a == GA_PHI3 ? phi3_names : layer_names;
	size_t nn = a == GA_PHI3 ? sizeof phi3_names / sizeof phi3_names[0]
				 : sizeof layer_names / sizeof layer_names[0];
	static const char *const whole[][2] = {
		{ "model.embed_tokens.weight", "token_embd.weight" },
		{ "model.norm.weight", "output_norm.weight" },
		{ "lm_head.weight", "output.weight" },
	};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
		if (!strcmp(hf, whole[i][0]))
			return snprintf(out, n, "%s", whole[i][1]) < 0 ? -1 : 0;
	int l, at = 0;
	if (sscanf(hf, "model.layers.%d.%n", &l, &at) != 1 || !at)
		return -1;
	const char *rest = hf + at, *dot = strrchr(rest, '.');
	for (size_t i = 0; dot && i < nn; i++)
		if (strlen(names[i][0]) == (size_t)(dot - rest) &&
		    !strncmp(rest, names[i][0], (size_t)(dot - rest)))
			return snprintf(out, n, "blk.%d.%s%s", l, names[i][1], dot) < 0 ? -1 : 0;
	return -1;
}

/* A number of config.json (def when absent or null). */
static double cfg_num(json_t *o, const char *key, double def)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : def;
}

/* Phi-3's LongRoPE as Phi3MiniModel reads it: rope_scaling's type
 * ("longrope", or "su"), long_factor and short_factor; the attention
 * factor it derives from max_position_embeddings over
 * original_max_position_embeddings (which it requires), so a config that
 * says another (rope_scaling's attention_factor or factor) is not
 * converted.  Why not, or NULL. */
static const char *phi3_not_held(json_t *o)
{
	if (!json_is_number(json_object_get(o, "original_max_position_embeddings")))
		return "original_max_position_embeddings is missing (Phi3MiniModel needs it)";
	json_t *rs = json_object_get(o, "rope_scaling");
	if (!json_is_object(rs))
		return NULL;
	const char *t = json_string_value(json_object_get(rs, "type"));
	if (!t)
		t = json_string_value(json_object_get(rs, "rope_type"));
	if (!t || (strcmp(t, "longrope") && strcmp(t, "su")))
		return "rope_scaling is not longrope (or su): not converted here";
	if (json_object_get(rs, "attention_factor") || json_object_get(rs, "factor"))
		return "rope_scaling's attention_factor or factor: the converter derives the attention "
		       "factor from max_position_embeddings / original_max_position_embeddings";
	if (!json_is_array(json_object_get(rs, "long_factor")) ||
	    !json_is_array(json_object_get(rs, "short_factor")))
		return "rope_scaling lacks long_factor or short_factor";
	return NULL;
}

/* Why llama.cpp cannot hold the directory's model as transformers runs it
 * (the converter would write it anyway, and llama.cpp run another model),
 * or NULL.  D is the heads' width. */
static const char *not_held(json_t *o, enum ga a, int L, int C, int H, int D)
{
	if (a == GA_PHI3)
		return phi3_not_held(o);
	if (a == GA_OLMO2)
		return json_is_number(json_object_get(o, "sliding_window"))
		       ? "sliding_window (OLMo 3's) is not converted here" : NULL;
	bool g3 = a == GA_GEMMA3;
	if (cfg_num(o, "query_pre_attn_scalar", 256) != ga_gemma_scale(a, L, C, H, D))
		return "query_pre_attn_scalar is not what llama.cpp derives (head_dim, or hidden / "
		       "heads at the 27B layer counts)";
	if (json_object_get(o, "layer_types"))
		return "layer_types: llama.cpp slides layers by its own pattern";
	if (!g3)
		return cfg_num(o, "rope_theta", 10000) != 10000 ? "Gemma 2's rope_theta is not 10000, "
		       "and the converter writes none" : NULL;
	double pattern = cfg_num(o, "sliding_window_pattern", 6);
	if (pattern != 6 && pattern != 1)
		return "sliding_window_pattern is neither 6 (llama.cpp's) nor 1 (none)";
	if (cfg_num(o, "rope_local_base_freq", 10000) != 10000)
		return "rope_local_base_freq is not 10000 (llama.cpp's)";
	json_t *rs = json_object_get(o, "rope_scaling");
	if (json_is_object(rs) && strcmp(json_string_value(json_object_get(rs, "rope_type")) ?
					 json_string_value(json_object_get(rs, "rope_type")) : "",
					 "linear"))
		return "rope_scaling is not linear";
	return NULL;
}

/* The keys convert_hf_to_gguf.py writes for a Gemma 2 (Gemma2Model), Gemma 3
 * (Gemma3Model, on TextModel's) or OLMo-2 (TextModel's) config.json. */
static void convert_keys(struct gw *w, json_t *o, enum ga a, int L, int C, int F, int H, int D)
{
	char k[128];
	bool g3 = a == GA_GEMMA3;
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", ga_name[a], s), k)
	gw_str(w, "general.architecture", ga_name[a]);
	gw_u32(w, KEY("block_count"), (uint32_t)L);
	gw_u32(w, KEY("context_length"), (uint32_t)cfg_num(o, "max_position_embeddings", 131072));
	gw_u32(w, KEY("embedding_length"), (uint32_t)C);
	gw_u32(w, KEY("feed_forward_length"), (uint32_t)F);
	gw_u32(w, KEY("attention.head_count"), (uint32_t)H);
	gw_u32(w, KEY("attention.head_count_kv"), (uint32_t)cfg_num(o, "num_key_value_heads", H));
	gw_f32(w, KEY("attention.layer_norm_rms_epsilon"), (float)cfg_num(o, "rms_norm_eps", 1e-6));
	if (a != GA_OLMO2) {
		gw_u32(w, KEY("attention.key_length"), (uint32_t)D);
		gw_u32(w, KEY("attention.value_length"), (uint32_t)D);
	}
	if (a == GA_GEMMA2) {
		gw_f32(w, KEY("attn_logit_softcapping"), (float)cfg_num(o, "attn_logit_softcapping", 50));
		gw_f32(w, KEY("final_logit_softcapping"), (float)cfg_num(o, "final_logit_softcapping", 30));
		gw_u32(w, KEY("attention.sliding_window"), (uint32_t)cfg_num(o, "sliding_window", 4096));
		return;
	}
	gw_f32(w, KEY("rope.freq_base"), (float)cfg_num(o, "rope_theta", g3 ? 1e6 : 10000));
	if (!g3)
		return;
	json_t *rs = json_object_get(o, "rope_scaling");
	if (json_is_object(rs)) {
		gw_str(w, KEY("rope.scaling.type"), "linear");
		gw_f32(w, KEY("rope.scaling.factor"), (float)cfg_num(rs, "factor", 1));
	}
	if (cfg_num(o, "final_logit_softcapping", 0) != 0)
		gw_f32(w, KEY("final_logit_softcapping"), (float)cfg_num(o, "final_logit_softcapping", 0));
	if (cfg_num(o, "sliding_window_pattern", 6) != 1)
		gw_u32(w, KEY("attention.sliding_window"), (uint32_t)cfg_num(o, "sliding_window", 4096));
#undef KEY
}

/* Phi3MiniModel's keys (set_gguf_parameters) and, for LongRoPE, its extra
 * tensors (generate_extra_tensors): rope.dimension_count
 * int(partial_rotary_factor * hidden) // heads, the original context
 * always, sliding_window (0 for none), and with long_factor the attention
 * factor sqrt(1 + ln s / ln original) (1 when s = max_position_embeddings /
 * original is not above 1) beside rope_factors_long.weight and
 * rope_factors_short.weight, R/2 factors each.  0, or -1 with a message. */
static int phi3_keys(struct gw *w, json_t *o, int L, int C, int F, int H)
{
	double rot = cfg_num(o, "partial_rotary_factor", 1.0);
	int R = (int)(rot * C) / H, max_pos = (int)cfg_num(o, "max_position_embeddings", 4096);
	int orig = (int)cfg_num(o, "original_max_position_embeddings", 0);
	gw_str(w, "general.architecture", "phi3");
	gw_u32(w, "phi3.context_length", (uint32_t)max_pos);
	gw_u32(w, "phi3.rope.scaling.original_context_length", (uint32_t)orig);
	gw_u32(w, "phi3.embedding_length", (uint32_t)C);
	gw_u32(w, "phi3.feed_forward_length", (uint32_t)F);
	gw_u32(w, "phi3.block_count", (uint32_t)L);
	gw_u32(w, "phi3.attention.head_count", (uint32_t)H);
	gw_u32(w, "phi3.attention.head_count_kv", (uint32_t)cfg_num(o, "num_key_value_heads", H));
	gw_f32(w, "phi3.attention.layer_norm_rms_epsilon", (float)cfg_num(o, "rms_norm_eps", 1e-5));
	gw_u32(w, "phi3.rope.dimension_count", (uint32_t)R);
	gw_f32(w, "phi3.rope.freq_base", (float)cfg_num(o, "rope_theta", 10000));
	gw_u32(w, "phi3.attention.sliding_window", (uint32_t)cfg_num(o, "sliding_window", 0));
	json_t *rs = json_object_get(o, "rope_scaling");
	json_t *lf = json_object_get(rs, "long_factor"), *sf = json_object_get(rs, "short_factor");
	if (!json_is_array(lf) || !json_array_size(lf))
		return 0;
	if ((int)json_array_size(lf) != R / 2 || (int)json_array_size(sf) != R / 2 || R / 2 > 512) {
		fprintf(stderr, "tool_mkgguf: long_factor and short_factor must hold %d factors\n", R / 2);
		return -1;
	}
	double scale = (double)max_pos / orig;
	double attn = scale > 1.0 ? sqrt(1.0 + log(scale) / log((double)orig)) : 1.0;
	gw_f32(w, "phi3.rope.scaling.attn_factor", (float)attn);
	float t[2][512];
	for (int i = 0; i < R / 2 && i < 512; i++) {
		t[0][i] = (float)json_number_value(json_array_get(lf, (size_t)i));
		t[1][i] = (float)json_number_value(json_array_get(sf, (size_t)i));
	}
	gw_tensor(w, "rope_factors_long.weight", GGML_F32, 0, (size_t)R / 2, t[0]);
	gw_tensor(w, "rope_factors_short.weight", GGML_F32, 0, (size_t)R / 2, t[1]);
	return 0;
}

/* Every tensor of dir/model.safetensors under llama.cpp's name, its values
 * as they are (no row permutation: llama.cpp turns these families with NeoX
 * RoPE) but Gemma's *norm.weight, to which the converter adds 1; Gemma's
 * lm_head left out (llama.cpp ties it); 2-D weights in type, vectors F32. */
static int convert_tensors(struct gw *w, const char *dir, enum ga a, uint32_t type)
{
	char path[4096], name[160];
	struct st_file f;
	struct err e;
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	if (st_open(&f, path, NULL, &e))
		return fprintf(stderr, "tool_mkgguf: %s: %s\n", path, e.msg), -1;
	int rc = 0;
	for (int i = 0; !rc && i < f.n; i++) {
		struct st_tensor *t = &f.t[i];
		size_t nl = strlen(t->name);
		bool gemma = a != GA_OLMO2 && a != GA_PHI3;
		bool norm = nl > 11 && !strcmp(t->name + nl - 11, "norm.weight");
		if ((gemma && !strcmp(t->name, "lm_head.weight")) ||
		    (nl > 21 && !strcmp(t->name + nl - 21, ".rotary_emb.inv_freq")))
			continue;
		if (gguf_name(t->name, a, name, sizeof name) || t->ndim < 1 || t->ndim > 2) {
			fprintf(stderr, "tool_mkgguf: %s: tensor %s is not converted here\n", path, t->name);
			rc = -1;
			break;
		}
		float *x = xmalloc((size_t)t->n * sizeof *x);
		rc = st_read(&f, t, x, &e);
		for (uint64_t j = 0; !rc && gemma && norm && j < t->n; j++)
			x[j] += 1.0f;
		if (!rc)
			gw_tensor(w, name, t->ndim == 2 ? type : GGML_F32, t->ndim == 2 ? t->shape[0] : 0,
				  t->shape[t->ndim - 1], x);
		else
			fprintf(stderr, "tool_mkgguf: %s: %s\n", path, e.msg);
		free(x);
	}
	st_close(&f);
	return rc;
}

/* A Gemma 2, Gemma 3 or OLMo-2 Hugging Face directory as the converter
 * writes it (keys and tensors; the tokenizer is the options'). 0 or -1. */
static int convert(struct gw *w, const char *dir, enum ga a, uint32_t type)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	json_t *o = json_load_file(path, 0, NULL);
	if (!json_is_object(o) ||
	    (a != GA_GEMMA2 && a != GA_GEMMA3 && a != GA_OLMO2 && a != GA_PHI3)) {
		fprintf(stderr, "tool_mkgguf: --convert takes a Gemma 2, Gemma 3, OLMo-2 or Phi-3 "
			"directory (%s)\n", path);
		json_decref(o);
		return -1;
	}
	int L = (int)cfg_num(o, "num_hidden_layers", 0), C = (int)cfg_num(o, "hidden_size", 0);
	int F = (int)cfg_num(o, "intermediate_size", 0), H = (int)cfg_num(o, "num_attention_heads", 1);
	int D = (int)cfg_num(o, "head_dim", a == GA_OLMO2 || a == GA_PHI3 ? C / H : 256);
	const char *why = not_held(o, a, L, C, H, D);
	if (why) {
		fprintf(stderr, "tool_mkgguf: %s: %s\n", path, why);
		json_decref(o);
		return -1;
	}
	if (a == GA_PHI3 ? phi3_keys(w, o, L, C, F, H) : (convert_keys(w, o, a, L, C, F, H, D), 0)) {
		json_decref(o);
		return -1;
	}
	json_decref(o);
	return convert_tensors(w, dir, a, type);
}

static int usage(void)
{
	fprintf(stderr, "usage: tool_mkgguf OUT.gguf (--from MODEL | --tiny | --convert HFDIR) --arch "
		"ARCH [--type TYPE] [--version 2|3] [--alignment N] [--tokdir DIR [--pad-vocab N] | --tokjson FILE "
		"--pre PRE [--bos NAME] | --tokbin FILE | --wordpiece FILE | --spmjson FILE]\n");
	return 2;
}

/* The tokenizer metadata the options name; 0 (--spmjson: the number of
 * tokens) or -1. */
static int tokenizer(struct gw *w, const char *const *opt, size_t pad_to)
{
	/* opt: tokdir, tokjson, pre, bos, tokbin, wordpiece, spmjson */
	size_t len;
	struct err e;
	if (opt[0])
		return gt_gpt2_dir_padded(w, opt[0], pad_to);
	if (opt[4])
		return gt_llama2c(w, opt[4]);
	const char *json = opt[1] ? opt[1] : opt[5] ? opt[5] : opt[6];
	if (!json)
		return 0;
	char *text = read_file(json, &len, &e);
	if (!text)
		return fprintf(stderr, "tool_mkgguf: %s\n", e.msg), -1;
	int rc = opt[1]	  ? gt_hf_json(w, text, len, opt[2] ? opt[2] : "llama-bpe", opt[3])
		 : opt[5] ? gt_wordpiece_json(w, text, len)
			  : gt_spm_json(w, text, len);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *out = argv[1], *from = NULL, *hfdir = NULL, *arch = NULL, *opt[7] = { NULL };
	static const char *const tokflags[] = { "--tokdir", "--tokjson", "--pre", "--bos",
						"--tokbin", "--wordpiece", "--spmjson" };
	uint32_t type = GGML_F32, version = 3, align = 0;
	size_t pad_to = 0;
	bool tiny = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int k;
		if (!strcmp(a, "--tiny")) {
			tiny = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--from"))
			from = v;
		else if (!strcmp(a, "--convert"))
			hfdir = v;
		else if (!strcmp(a, "--arch"))
			arch = v;
		else if (!strcmp(a, "--version"))
			version = (uint32_t)atoi(v);
		else if (!strcmp(a, "--alignment"))
			align = (uint32_t)atoi(v);
		else if (!strcmp(a, "--pad-vocab"))
			pad_to = (size_t)atol(v);
		else if (!strcmp(a, "--type")) {
			for (k = 0; k < (int)(sizeof types / sizeof types[0]) && strcmp(types[k].name, v); k++)
				;
			if (k == (int)(sizeof types / sizeof types[0]))
				return usage();
			type = types[k].t;
		} else {
			for (k = 0; k < 7 && strcmp(tokflags[k], a); k++)
				;
			if (k == 7)
				return usage();
			opt[k] = v;
		}
	}
	int ga = 0;
	while (arch && ga < GA_N && strcmp(ga_name[ga], arch))
		ga++;
	if (!arch || ga == GA_N || !(from || tiny || hfdir))
		return usage();
	struct gw *w = gw_new();
	struct model *m = NULL;
	struct err e;
	int V = 0;
	bool own = !opt[0] && !opt[1] && !opt[4] && !opt[5] && !opt[6];
	bool spm = ga == GA_LLAMA || ga == GA_GEMMA2 || ga == GA_GEMMA3;
	if (tiny && own)
		V = spm ? tiny_spm(w) : ga == GA_BERT ? tiny_wordpiece(w) : tiny_bpe(w);
	else if ((V = tokenizer(w, opt, pad_to)) < 0) /* 0 but for --spmjson */
		return 1;
	if (hfdir) {
		int bad = convert(w, hfdir, (enum ga)ga, type);
		if (!bad && (bad = gw_write(w, out, version, align)))
			fprintf(stderr, "tool_mkgguf: cannot write %s\n", out);
		gw_free(w);
		return bad ? 1 : 0;
	}
	if (tiny) {
		if (!V) {
			fprintf(stderr, "tool_mkgguf: --tiny writes its own vocabulary\n");
			return 2;
		}
		m = ga_model_hd((enum ga)ga, V, 1, 32, 32, 2, 1, ga == GA_QWEN3 ? 32 : 0, 8, 11);
	} else {
		m = model_open(from, &e);
		/* the writer reads every weight as F32 (a 16-bit directory loads held) */
		if (m && model_to_f32(m, "the GGUF writer", &e) != 0) {
			model_free(m);
			m = NULL;
		}
		if (!m) {
			fprintf(stderr, "tool_mkgguf: %s\n", e.msg);
			return 1;
		}
		const char *why = ga_unheld(&m->cfg, (enum ga)ga);
		if (why) {
			fprintf(stderr, "tool_mkgguf: %s cannot be written as %s: %s\n", from, arch, why);
			model_free(m);
			gw_free(w);
			return 1;
		}
	}
	ga_write_model(w, m, (enum ga)ga, type);
	int bad = gw_write(w, out, version, align);
	if (bad)
		fprintf(stderr, "tool_mkgguf: cannot write %s\n", out);
	gw_free(w);
	model_free(m);
	return bad ? 1 : 0;
}
