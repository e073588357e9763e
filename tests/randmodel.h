/*
 * randmodel.h — seeded random models for the unit tests: the GPT-2 family
 * (LayerNorm, learned positions, GELU, biases, tied) or the Llama family
 * (RMSNorm, RoPE, SwiGLU, no biases, untied), d_model 32, d_ff 48,
 * context 16, with the QKV weights scaled up so that attention is sharp
 * enough to differ from uniform.  No tokenizer.
 */
#ifndef ATTNSCOPE_TEST_RANDMODEL_H
#define ATTNSCOPE_TEST_RANDMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/* A model of L layers, 4 query heads and kv_heads K/V heads over V tokens
 * (llama: the Llama family), initialised from seed, QKV weights times
 * qkv_gain.  Aborts when the shape is invalid (a broken fixture). */
struct model *randmodel_new(bool llama, int L, int kv_heads, int V, float qkv_gain, uint64_t seed);

/* The same with heads head_dim wide (0: d_model / 4), so that the heads'
 * width 4 * head_dim can differ from d_model. */
struct model *randmodel_new_hd(bool llama, int L, int kv_heads, int V, float qkv_gain,
			       uint64_t seed, int head_dim);

/* A model of config c holding base's weights where the shapes agree, the
 * scales of the q/k and sandwich norms c adds 1 + 0.3 N(0, 1) from seed
 * (any other new tensor 0); base is freed. */
struct model *randmodel_rebuild(struct model *base, const struct model_config *c, uint64_t seed);

/* randmodel_rebuild with Qwen3's q/k norm added (config qk_norm). */
struct model *randmodel_qk_norm(struct model *base, uint64_t seed);

#endif
