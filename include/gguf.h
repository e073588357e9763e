/*
 * gguf.h — the one reader of GGUF files (llama.cpp's container, which
 * Ollama and LM Studio use), versions 2 and 3, and the dequantization of
 * the tensor types it holds (quant.h).  loader-gguf.c maps a model
 * onto it; gguf-vocab.c rebuilds the tokenizer its metadata describes.
 *
 * Layout (little-endian):
 *   "GGUF", u32 version, u64 tensor count, u64 key/value count;
 *   each key/value: string key, u32 value type, the value (an array is u32
 *   element type, u64 count, the elements);
 *   each tensor: string name, u32 dims, u64 ne[dims] (ne[0] the row, the
 *   fastest-moving index), u32 ggml type, u64 offset into the data;
 *   padding to general.alignment (u32, a power of two; 32 when absent),
 *   then the data.  A string is u64 length and that many bytes.
 * A tensor of ne = [cols, rows] is rows x cols in row-major order: a
 * PyTorch weight (out, in) is stored as ne = [in, out].
 *
 * Lifetime: gguf_open() -> lookups and reads -> gguf_close().  An open file
 * holds its descriptor, its keys and scalar values, and its tensor
 * directory; strings and arrays stay in the file until asked for.
 *
 * Nothing in the file is trusted.  gguf_open() refuses, with one line that
 * names the problem (and the key or tensor) but not the path, which the
 * caller adds: a bad magic, a version other than 2 and 3 (or a big-endian
 * file), counts the file cannot hold or above GGUF_MAX_KV / GGUF_MAX_TENSORS,
 * a key or tensor name that runs past the end, is empty, too long, not
 * UTF-8, holds a control character or is given twice, an unknown value type, nested arrays, an alignment
 * that is not a u32 power of two, more than 4 dimensions, element counts
 * that overflow, a ggml type that is not one attnscope reads (named), a
 * row not a whole number of blocks, an offset not a multiple of the
 * alignment, data that runs past the end of the file, and two tensors
 * whose bytes overlap (so that what the tensors hold is at most the file).  Every string
 * and array read after is checked against the file again, and
 * gguf_read_tensor() refuses NaN and Inf.
 */
#ifndef ATTNSCOPE_GGUF_H
#define ATTNSCOPE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "util.h"

#define GGUF_MAX_KV      65536	/* real files hold a few dozen keys */
#define GGUF_MAX_TENSORS 65536	/* and a few hundred to a few thousand tensors */
#define GGUF_MAX_KEY     65535	/* bytes in a key */
#define GGUF_MAX_NAME    63	/* bytes in a tensor name (ggml's limit) */
#define GGUF_MAX_DIMS    4

/* Value types of the metadata. */
enum gguf_vtype {
	GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL,
	GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_N_VTYPES
};

/* One key and its value.  Numbers and bools are held (v); a string is
 * n bytes at off; an array n elements of arr_type, the first at off. */
struct gguf_kv {
	char *key;		/* NUL-terminated, valid UTF-8; owned */
	enum gguf_vtype type;
	enum gguf_vtype arr_type; /* arrays only */
	uint64_t n;
	uint64_t off;		/* absolute file offset */
	union {
		uint64_t u;	/* unsigned types and bools */
		int64_t i;	/* signed types */
		double f;	/* F32, F64 */
	} v;
};

/* One tensor of the directory. */
struct gguf_tensor {
	char name[GGUF_MAX_NAME + 1];
	uint32_t type;		/* enum ggml_type_id */
	int ndim;
	uint64_t ne[GGUF_MAX_DIMS]; /* 1 past ndim */
	uint64_t n;		/* elements */
	uint64_t off;		/* absolute file offset of its data */
	uint64_t bytes;
	bool read;		/* set by gguf_read_tensor() */
};

struct gguf_file {
	uint32_t version;
	uint32_t alignment;
	uint64_t size;		/* of the file */
	uint64_t data_off;	/* where the data starts */
	struct gguf_kv *kv;
	int n_kv;
	struct gguf_tensor *t;
	int n_t;
	int fd;			/* -1 when closed */
};

/* Opens and checks path (above).  0, or -1 with one line in e (no path)
 * and f closed. */
int gguf_open(struct gguf_file *f, const char *path, struct err *e);

/* Releases everything; f is one gguf_open() filled (either way it went) or
 * one set to { .fd = -1 }; closing a closed f is a no-op. */
void gguf_close(struct gguf_file *f);

/* Whether the first bytes of the regular file at path are "GGUF". */
bool gguf_probe(const char *path);

/* The key/value called key, or NULL. */
const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key);

/*
 * Typed getters.  Each returns 0 with *out set, 1 when the key is absent
 * (*out untouched), or -1 + e: "KEY is a string, not an integer",
 * "KEY is N, outside LO..HI".
 *   gguf_get_int    any integer type, in [lo, hi]
 *   gguf_get_float  F32 or F64 (an integer type too), finite
 *   gguf_get_bool   BOOL
 *   gguf_get_str    a STRING of at most max bytes, valid UTF-8 without NUL,
 *                   read into a malloc'd NUL-terminated copy (the caller
 *                   frees; it may hold control characters: quote it with
 *                   utf8_printable() in a message)
 */
int gguf_get_int(const struct gguf_file *f, const char *key, int64_t lo, int64_t hi,
		 int64_t *out, struct err *e);
int gguf_get_float(const struct gguf_file *f, const char *key, double *out, struct err *e);
int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, struct err *e);
int gguf_get_str(const struct gguf_file *f, const char *key, size_t max, char **out,
		 struct err *e);

/*
 * Arrays.  gguf_get_strings reads the string array key (at most max
 * elements, each at most GGUF_STRING_MAX bytes) as one malloc'd block:
 * *s gets n pointers to NUL-terminated strings (lengths in *len, may hold
 * NULs), all freed by free(*s) and free(*len).  gguf_get_numbers reads a
 * numeric array (any integer or float type) of at most max elements into
 * a malloc'd double array.  Each returns 0 with *n set, 1 when absent,
 * -1 + e for another type, too many elements or a read past the end.
 */
#define GGUF_STRING_MAX (1u << 16)
int gguf_get_strings(const struct gguf_file *f, const char *key, uint64_t max, char ***s,
		     uint32_t **len, uint64_t *n, struct err *e);
int gguf_get_numbers(const struct gguf_file *f, const char *key, uint64_t max, double **v,
		     uint64_t *n, struct err *e);

/* The tensor called name, or NULL. */
struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* Reads tensor t as t->n floats into dst, dequantized, and marks it read.
 * 0, or -1 + e: a read error ("unexpected end of file (truncated?)") or a
 * NaN/Inf ("tensor W has a non-finite value at element K"). */
int gguf_read_tensor(const struct gguf_file *f, struct gguf_tensor *t, float *dst,
		     struct err *e);

/* gguf_read_tensor kept as stored: t's t->bytes bytes into dst (its rows
 * whole blocks of its type), NaN and Inf refused as there, by the same
 * element (read off the blocks' bits, ggml_first_nonfinite: nothing is
 * converted), and t marked read.  0, or -1 + e. */
int gguf_read_stored(const struct gguf_file *f, struct gguf_tensor *t, void *dst,
		     struct err *e);

/* "[2, 48, 16]", ne[0] first, into buf (cut to size). */
void gguf_shape_str(const struct gguf_tensor *t, char *buf, size_t size);

/* ------------------------------------------------ tokenizer (gguf-vocab.c) */

struct tokenizer;

/* The tokenizer tokenizer.ggml.* describes (the models llama, gpt2 and
 * bert; gguf-vocab.c says how each is rebuilt).  NULL + a one-line e
 * naming the key on failure or when the file has none. */
struct tokenizer *gguf_tokenizer(const struct gguf_file *f, struct err *e);

#endif
