/*
 * gguf_write.h — writes GGUF files for the tests (test_gguf.c,
 * tool_mkgguf.c, the fuzz seeds): a small writer of the container, a
 * reference quantizer for every type attnscope reads with the error bound
 * its block predicts, an attnscope model written in llama.cpp's names and
 * layout for each architecture loader-gguf.c takes, and tokenizer metadata
 * from a tokenizer's own files.  No cmocka here (support files are linked
 * into the tools too): failures abort with a message (a broken fixture).
 *
 * The quantizers are this file's own: each picks the block's scales as
 * ggml's reference quantizers do in spirit (the largest magnitude, or the
 * range, over the levels), rounds the scales to what the block stores,
 * then puts every value on the nearest level of the stored grid.  So the
 * error of each value is at most half a step of its sub-block's grid (the
 * step being the product of the stored scales), or its distance to the
 * grid's ends when it lies outside them: gq_bound() gives that bound for
 * a block as stored, from the block's bytes alone.
 */
#ifndef ATTNSCOPE_TEST_GGUF_WRITE_H
#define ATTNSCOPE_TEST_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* ------------------------------------------------------------- container */

struct gw;

/* A new file in memory: GGUF version 3 (gw_write can say otherwise). */
struct gw *gw_new(void);
void gw_free(struct gw *w);

void gw_u32(struct gw *w, const char *key, uint32_t v);
void gw_i32(struct gw *w, const char *key, int32_t v);
void gw_f32(struct gw *w, const char *key, float v);
void gw_bool(struct gw *w, const char *key, bool v);
void gw_str(struct gw *w, const char *key, const char *v);
void gw_strs(struct gw *w, const char *key, char *const *v, const uint32_t *len, size_t n);
void gw_f32s(struct gw *w, const char *key, const float *v, size_t n);
void gw_i32s(struct gw *w, const char *key, const int32_t *v, size_t n);

/* A tensor of rows x cols values (rows 0: a vector of cols), stored as
 * ggml type `type` (quantized by gq_quantize for the block types). */
void gw_tensor(struct gw *w, const char *name, uint32_t type, size_t rows, size_t cols,
	       const float *x);

/* The file's bytes (malloc'd, *len of them) with tensor data aligned to
 * `alignment` (32 when 0; written as general.alignment unless 32). */
unsigned char *gw_bytes(struct gw *w, uint32_t version, uint32_t alignment, size_t *len);

/* gw_bytes() written to path; 0 or -1. */
int gw_write(struct gw *w, const char *path, uint32_t version, uint32_t alignment);

/* ------------------------------------------------------------- quantizer */

/* Quantizes n values (a whole number of blocks) of x into out (n / values
 * * bytes of the type); F32, F16 and BF16 are stored as they are. */
void gq_quantize(uint32_t type, const float *x, unsigned char *out, size_t n);

/* For one stored block of type t and the values x it was made from, the
 * bound of each value's error (the block's values of them into bound). */
void gq_bound(uint32_t t, const unsigned char *block, const float *x, float *bound);

/* ---------------------------------------------------------------- models */

/* The architectures of loader-gguf.c. */
enum ga {
	GA_LLAMA, GA_QWEN2, GA_QWEN3, GA_GPT2, GA_NEOX, GA_BERT, GA_GEMMA2, GA_GEMMA3, GA_OLMO2,
	GA_PHI3, GA_N
};
extern const char *const ga_name[GA_N];

/* Whether architecture a has K/V heads of its own (GQA): the Llama layout's
 * families, not GPT-2's, NeoX's or BERT's. */
bool ga_gqa(enum ga a);

/* A seeded random model of architecture a (weights well away from their
 * init, the q/k norm's scales too, the biases the family does not have
 * zero), L layers, d_model C, d_ff F, H heads (K K/V heads where ga_gqa),
 * context S (above 4), V tokens; tied for GPT-2 and Gemma, untied
 * otherwise; NeoX turns half of each head; Qwen3 has the q/k norm and no
 * biases; Gemma 2 and 3, OLMo-2 and Phi-3 their switches as gguf_write.c's
 * ga_family() sets them (Gemma's sliding layers over 4 keys; Phi-3's
 * LongRoPE over half of each head). */
struct model *ga_model(enum ga a, int V, int L, int C, int F, int H, int K, int S,
		       uint64_t seed);

/* ga_model() with heads D wide (config head_dim; 0: C / H). */
struct model *ga_model_hd(enum ga a, int V, int L, int C, int F, int H, int K, int D, int S,
			  uint64_t seed);

/* llama.cpp's rules for Gemma 2 and 3 (a: GA_GEMMA2 or GA_GEMMA3), which no
 * GGUF key holds: the width whose 1/sqrt scales the scores of a model of
 * L layers, hidden C, H heads D wide (C / H at the 27B models' layer
 * counts, 46 and 62; D otherwise: HF's query_pre_attn_scalar), and
 * whether layer l slides (l % 2 < 1; Gemma 3: l % 6 < 5). */
int ga_gemma_scale(enum ga a, int L, int C, int H, int D);
bool ga_gemma_sliding(enum ga a, int l);

/* Why a GGUF file of architecture a cannot hold a model of config c as the
 * converter writes it and llama.cpp reads it (a static sentence), or NULL:
 * the q/k norm and the norms around the sub-blocks must be the
 * architecture's; Gemma's scale must be llama.cpp's (1/sqrt(head_dim), or
 * hidden / heads at the 27B layer counts), its sliding layers llama.cpp's
 * fixed pattern, its output tied, and its RoPE and caps the ones the
 * converter writes (Gemma 2: base 10000; Gemma 3: no score cap, local
 * base 10000); Phi-3's sliding window must be on every layer or none,
 * its RoPE unscaled or LongRoPE. */
const char *ga_unheld(const struct model_config *c, enum ga a);

/* The metadata and tensors of model m as llama.cpp's converter writes them
 * for architecture a, the 2-D weights in type `type`, the vectors F32
 * (Gemma's norm scales as the engine holds them: the converter stores
 * 1 + HF's weight; a llama model's Llama 3.1 scaling as the tensor
 * rope_freqs.weight, one divisor per pair, as the converter computes it;
 * Phi-3's LongRoPE as rope_factors_long / rope_factors_short.weight with
 * rope.scaling.attn_factor; its q and k rows in rotate-half order in the
 * fused attn_qkv, its ffn_up [gate; up]).
 * A model ga_unheld() refuses is a broken fixture. */
void ga_write_model(struct gw *w, const struct model *m, enum ga a, uint32_t type);

/* ------------------------------------------------------------ tokenizers */

/*
 * tokenizer.ggml.* for the tokenizer in src, as convert_hf_to_gguf.py
 * writes it:
 *   a directory with GPT-2's vocab.json + merges.txt: model gpt2, pre gpt-2;
 *   a BPE tokenizer.json (text json): model gpt2, pre `pre` (llama-bpe,
 *     qwen2), added tokens as control (special) or user-defined, BOS the
 *     token named bos (or NULL);
 *   a llama2.c tokenizer.bin: model llama, spaces as U+2581, scores, byte
 *     and control types, BOS 1, EOS 2, UNK 0;
 *   a SentencePiece-style BPE tokenizer.json (Gemma's, no tokenizer.model):
 *     model llama, add_space_prefix false, BOS <bos> added, the tokens in
 *     id order typed as the converter types tokenizer.model's pieces and
 *     the added tokens (special: control, <unk> unknown; others
 *     user-defined, U+2581 written as a space; score -1000), <0xNN> byte,
 *     the rest normal, each scored -(rank of the first merge producing
 *     it), -(merges + 1) when none does, so that SentencePiece's merge by
 *     highest score picks what the merge list picks by lowest rank;
 *   a WordPiece tokenizer.json: model bert, the phantom-space tokens.
 * 0 (gt_spm_json: the number of tokens), or -1 with a message on stderr.
 */
int gt_gpt2_dir(struct gw *w, const char *dir);
/* The same, its token list padded to pad_to entries with [PADi] tokens of
 * type unused, as llama.cpp's converter pads a vocabulary smaller than
 * the embedding (nothing added when pad_to is not larger). */
int gt_gpt2_dir_padded(struct gw *w, const char *dir, size_t pad_to);
int gt_hf_json(struct gw *w, const char *json, size_t len, const char *pre, const char *bos);
int gt_llama2c(struct gw *w, const char *path);
int gt_spm_json(struct gw *w, const char *json, size_t len);
int gt_wordpiece_json(struct gw *w, const char *json, size_t len);

/* Writes m as an attnscope checkpoint whose tensors are BF16 (every weight
 * is first rounded to BF16 in m).  0 or -1. */
int gw_checkpoint_bf16(struct model *m, const char *path);

#endif
