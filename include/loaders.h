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

#include "model.h"
#include "tokenizer.h"
#include "util.h"

struct load_opts {
	const char *tokenizer;	/* --tokenizer: a file or directory, or NULL */
};

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
};

extern const struct model_format format_safetensors, format_hf_gpt2, format_hf_llama,
	format_llama2c, format_llmc;

/* Where row r of a Hugging Face Llama Q or K projection (heads of D rows,
 * rotate-half RoPE: pairs (i, i + D/2)) goes in the engine's layout
 * (interleaved RoPE: pairs (2i, 2i + 1)), within its head. */
int llama_rope_row(int r, int D);

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

#endif
