/*
 * loaders.h — private to the loader-*.c files (and checkpoint.c, the
 * attnscope safetensors loader, and safetensors.c, the container reader
 * both safetensors formats use): the format table's entries and the
 * helpers they share.  Users call model_open_ex() (loader.h).
 *
 * Each format has a probe, which looks at the content (never the name) and
 * answers "this is mine" or explains in a few words why not, and a load,
 * which returns a model or NULL with a one-line "PATH: problem".
 */
#ifndef ATTNSCOPE_LOADERS_H
#define ATTNSCOPE_LOADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "json-util.h"
#include "model.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "util.h"

struct load_opts {
	const char *tokenizer;	/* --tokenizer: a file or directory, or NULL */
	bool f32;		/* every weight as float32, none held as stored */
};

struct hf_family;

/* A format: its functions, or, for a Hugging Face family, hf (hf-family.h),
 * which ld_hf_probe / ld_hf_load / ld_hf_describe serve instead. */
struct model_format {
	const char *name;	/* "safetensors", "hf-gpt2", "llama2c", "llmc" */
	const char *desc;	/* for messages: "Hugging Face GPT-2 directory" */
	/* true when path is of this format; else a few words in why */
	bool (*probe)(const char *path, char *why, size_t why_size);
	struct model *(*load)(const char *path, const struct load_opts *o, struct err *e);
	/* Optional: the config alone, from the header or config.json, without
	 * reading weights or the tokenizer (listings, the memory estimate).
	 * 0, or -1 + e; may be NULL. */
	int (*describe)(const char *path, struct model_config *c, struct err *e);
	const struct hf_family *hf;	/* or NULL */
	/* Optional: the bytes and values of the files' tensors, from the
	 * headers alone (16-bit and quantized tensors are held as stored: the
	 * bytes a value they take loaded).  0, or -1 when the files cannot say. */
	int (*stored_bytes)(const char *path, double *bytes, double *values);
};

extern const struct model_format format_safetensors, format_hf_gpt2, format_hf_llama,
	format_hf_neox, format_hf_neo, format_hf_bert, format_hf_roberta, format_hf_distilbert,
	format_hf_phi3, format_hf_gemma, format_hf_gemma3mm, format_hf_olmo2, format_gguf,
	format_llama2c, format_llmc;

/* ----------------------------------------- RoPE row orders (hf-shards.c) */

/* Where row r of a Hugging Face Llama Q or K projection (heads of D rows,
 * rotate-half RoPE: pairs (i, i + D/2)) goes in the engine's layout
 * (interleaved RoPE: pairs (2i, 2i + 1)), within its head. */
int llama_rope_row(int r, int D);

/* Where row r of a Hugging Face GPT-NeoX query or key head (D rows,
 * rotate-half RoPE over the first R: pairs (i, i + R/2)) goes in the
 * engine's head (pairs (2i, 2i + 1) over the first R); rows R.. stay. */
int neox_rope_row(int r, int D, int R);

/* Where row r of GPT-NeoX's fused query_key_value weight goes in the
 * engine's: HF holds, per head h, [q_h; k_h; v_h] (D rows each); the
 * engine all H query heads, then all key heads, then all value heads,
 * with the query and key rows in neox_rope_row's order. */
int neox_qkv_row(int r, int H, int D, int R);

/* ------------------------------------- Hugging Face weights (hf-shards.c) */

#define LD_MAX_SHARDS 64

/* The open files of one model: model.safetensors, or its shards. */
struct ld_shards {
	struct st_file f[LD_MAX_SHARDS];
	char *path[LD_MAX_SHARDS]; /* each file's path, owned */
	int n;
};

/* Opens dir/model.safetensors, or every file dir/model.safetensors.index.json
 * names (tensors of other dtypes listed, refused when read).  0, or -1 + e
 * (no path prefix) with nothing left open. */
int ld_shards_open(const char *dir, struct ld_shards *s, struct err *e);

/* Opens the one safetensors file path as the whole set, likewise. */
int ld_shards_open_file(const char *path, struct ld_shards *s, struct err *e);

/* Closes every file; a closed set is a no-op. */
void ld_shards_close(struct ld_shards *s);

/* The tensor called name and its file, or NULL. */
struct st_tensor *ld_shards_find(struct ld_shards *s, const char *name, struct st_file **in);

/* Reads name, shaped {d0, d1} (d1 = 0: 1-D), into dst: 0, or -1 + e for
 * a missing tensor, another shape ("... but config.json needs ...") or
 * a bad value. */
int ld_shards_read(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1, float *dst,
		   struct err *e);

/* ld_shards_read kept as stored: the bytes of name (of its dtype, in
 * *dt) into dst, NaN/Inf refused.  0, or -1 + e as ld_shards_read. */
int ld_shards_read_stored(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1,
			  void *dst, enum dtype *dt, struct err *e);

/* Reads name, shaped {d0, d1} as ld_shards_read checks, transposed into
 * dst (d1, d0): dst[o * d0 + i] = name[i][o] (a Conv1D weight stored
 * [in, out] into the engine's (out, in)).  Read a block of rows at a time
 * and transposed from the cache, never held whole beside dst.  0, or -1
 * + e as ld_shards_read (a bad value named by its index in the file's
 * tensor). */
int ld_shards_read_t(struct ld_shards *s, const char *name, uint64_t d0, uint64_t d1,
		     float *dst, struct err *e);

/* The values of every shard's tensors that have bytes behind them
 * (st_values_held): what a config may be checked against before a model
 * is allocated for it. */
uint64_t ld_shards_values(const struct ld_shards *s);

/* Refuses, before a model is allocated for it, a config.json that needs
 * more weights (need) than the shards hold by over slack (a shortfall
 * within it, a few missing tensors, is left to be named when read): 0,
 * or -1 + e. */
int ld_shards_check_size(const struct ld_shards *s, double need, double slack, struct err *e);

/* With a tied config: the file's output-layer tensor t (lm_head.weight,
 * embed_out.weight) must be a copy of the embeddings emb (named for the
 * message), read into wte (V x C).  Read a row at a time and compared;
 * 0 with t marked read, or -1 + e: "lm_head.weight differs from
 * model.embed_tokens.weight at row R, but config.json ties them (TIE);
 * set ..." (TIE says why the config ties: "tie_word_embeddings true"). */
int ld_tied_copy(struct st_file *f, struct st_tensor *t, const char *emb, const struct model *m,
		 uint64_t V, uint64_t C, const char *tie, struct err *e);

/* ld_tied_copy() of the tensor head when the shards hold one, else 0. */
int ld_shards_tied(struct ld_shards *s, const char *head, const char *emb, const struct model *m,
		   uint64_t V, uint64_t C, const char *tie, struct err *e);

/* 0 when every tensor has been read but those whose name contains one of
 * ignored (NULL-ended; may be NULL), else -1 + e naming the first other. */
int ld_shards_all_read(const struct ld_shards *s, const char *const *ignored, struct err *e);

/* ------------------------------------------ helpers (loader-common.c) */

bool ld_is_file(const char *p);
bool ld_is_dir(const char *p);
/* malloc'd "dir/name". */
char *ld_join(const char *dir, const char *name);
/* malloc'd directory part of path ("." when none). */
char *ld_dirname(const char *path);
/* malloc'd last path component, without suffix when it ends with one. */
char *ld_basename(const char *path, const char *suffix);

/* Reads exactly n bytes at off; 0, or -1 + e.  A short read (the file
 * shrank since it was checked) is reported as truncation. */
int ld_pread(int fd, void *buf, size_t n, off_t off, struct err *e);

/* Reads n little-endian elements of type dt (F32, F16 or BF16; util.h)
 * at off into dst as floats; rejects NaN/Inf, naming the tensor.  0, or
 * -1 + e. */
int ld_read_floats(int fd, off_t off, float *dst, size_t n, enum dtype dt, const char *name,
		   struct err *e);
/* The same for elements first .. first+n-1 of a tensor read in parts
 * (off is element first's): a bad value is named by its index in the
 * whole tensor. */
int ld_read_floats_from(int fd, off_t off, float *dst, size_t n, enum dtype dt,
			const char *name, uint64_t first, struct err *e);

/* ld_read_floats kept in type dt: n elements (n * dtype_size(dt) bytes)
 * at off into dst as stored, NaN/Inf rejected the same way. */
int ld_read_stored(int fd, off_t off, void *dst, size_t n, enum dtype dt, const char *name,
		   struct err *e);

/* Reads the first n int32 of the regular file path (as stored) into h and
 * its size into *size.  false when path is not a regular file that can be
 * opened or is shorter than n int32 (*size is set once the file is seen). */
bool ld_read_ints(const char *path, int32_t *h, int n, off_t *size);

/* Fills a new model's weights from the open file (fd is ld_load_model's
 * and closed by it); 0, or -1 + e (no path prefix). */
typedef int (*ld_read_fn)(int fd, struct model *m, const void *ctx, struct err *e);

/* Allocates the model of cfg, opens path and lets read() fill its weights,
 * then gives it tok and names it after path less suffix (ld_basename).
 * The model takes tok; on failure tok is freed too and NULL + e
 * ("PATH: problem") is returned.  The caller frees the returned model
 * (model_free). */
struct model *ld_load_model(const char *path, const struct model_config *cfg,
			    struct tokenizer *tok, const char *suffix, ld_read_fn read,
			    const void *ctx, struct err *e);

/* Keeps a message on one line: names and JSON error excerpts quoted from
 * a file may hold control characters (a "\n" escape in a key, say), which
 * become '?'.  e may be NULL. */
void ld_one_line(struct err *e);

/* GPT-2 tokenizer for a .bin or HF model: from opt (file or directory) when
 * given, else from dir.  NULL + e when none is found or it is broken. */
struct tokenizer *ld_gpt2_tokenizer(const char *opt, const char *dir, struct err *e);

/* A Hugging Face directory's tokenizer: its tokenizer.json (tok-hfjson.h),
 * else GPT-2's vocab.json + merges.txt (ld_gpt2_tokenizer).  opt
 * (--tokenizer) names another directory, tokenizer.json file or
 * vocab.json/merges.txt pair.  NULL + a one-line e on failure. */
struct tokenizer *ld_hf_tokenizer(const char *opt, const char *dir, struct err *e);

/* An integer field of a Hugging Face config.json (1 .. 2^30; absent or
 * null leaves *out, unless flags has JU_REQUIRED: json-util.h). */
#define LD_HF_INT(o, key, flags, out, e) \
	ju_get_int(o, key, "config.json", JU_NULL_ABSENT | (flags), 1, 1 << 30, out, e)

/* config_default(c), then the shape every HF family but GPT-2 spells the
 * same way: num_hidden_layers, num_attention_heads (also the K/V heads
 * until the family says otherwise), hidden_size, intermediate_size,
 * vocab_size, max_position_embeddings, each required.  0, or -1 + e. */
int ld_hf_shape(json_t *o, struct model_config *c, struct err *e);

/* ld_hf_shape of a RoPE decoder, with num_key_value_heads (default: the
 * heads), at most CFG_MAX_LAYERS layers, and a max_position_embeddings
 * above CFG_MAX_CONTEXT cut to it (RoPE holds no table: shorter texts are
 * exact).  0, or -1 + e. */
int ld_hf_rope_shape(json_t *o, struct model_config *c, struct err *e);

/* config.json's head_dim (def when absent) into c->head_dim: each head's
 * width apart from hidden_size / num_attention_heads (Mistral-Nemo, Qwen3,
 * Gemma); the same as it, or absent with def 0, stays 0 (config.h).
 * After ld_hf_shape.  0, or -1 + e (not an integer, above
 * CFG_MAX_HEAD_DIM). */
int ld_hf_head_dim(json_t *o, struct model_config *c, int def, struct err *e);

/* 0 when tokenizer tok fits a vocabulary of vocab_size (config.json's),
 * else -1 + e with both numbers. */
int ld_tokenizer_fits(const struct tokenizer *tok, int vocab_size, struct err *e);

#endif
