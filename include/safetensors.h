/*
 * safetensors.h — the one reader of safetensors files, the container both
 * attnscope's checkpoints (checkpoint.c) and Hugging Face models
 * (loader-hf.c) come in.  A format is a map of names and shapes onto it.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON, then
 * the tensor data.  The JSON object maps each tensor name to
 *   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * (bytes [begin, end) of the data, which starts right after the header),
 * and may hold "__metadata__", which the reader hands over as it is.
 *
 * Lifetime: st_open() -> st_find() / st_read() -> st_close().  An open
 * file holds its descriptor and the parsed header; the tensors' names,
 * shapes and the metadata point into it and live until st_close().
 *
 * Nothing in the file is trusted.  st_open() refuses, with one line that
 * names the problem (and the tensor) but not the path, which the caller
 * adds:
 *   - a file shorter than 8 bytes, a header length past the end of the
 *     file, over 100 MB, or under 2 bytes;
 *   - a header that is not JSON, or not an object;
 *   - an entry that is not an object, a dtype that is not a string, or
 *     one other than F32, F16 and BF16 (unless st_checks.other_dtypes);
 *   - a shape that is not a list of at most ST_MAX_DIMS non-negative
 *     integers, or absurdly large;
 *   - data_offsets that are not two non-negative integers, begin after
 *     they end, run past the end of the data, or span another number of
 *     bytes than the shape's elements take;
 *   - two tensors whose bytes overlap.
 * st_read() then refuses NaN and Inf values, naming the element.
 *
 * Meant to grow here and nowhere else: a sharded model (several files and
 * a model.safetensors.index.json weight_map) is more files behind the same
 * st_file, and memory mapping is another way for st_read() to reach the
 * bytes (dtype_to_f32() in util.h converts from a byte buffer).
 */
#ifndef ATTNSCOPE_SAFETENSORS_H
#define ATTNSCOPE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util.h"

#define ST_MAX_DIMS 8

/* One tensor as its header entry describes it (checked by st_open()). */
struct st_tensor {
	const char *name;	/* its key in the header */
	enum dtype dtype;	/* DTYPE_OTHER: listed, never read */
	const char *dtype_name;	/* as written: "F32", "U8", ... */
	size_t esize;		/* bytes per element; 0 for a dtype safetensors lacks */
	int ndim;
	uint64_t shape[ST_MAX_DIMS];
	uint64_t n;		/* element count */
	uint64_t begin, end;	/* bytes [begin, end) of the data */
	bool read;		/* set by st_read() */
};

struct st_file {
	struct st_tensor *t;	/* t[0..n), in header order */
	int n;
	json_t *meta;		/* "__metadata__" as found (any JSON value), or NULL */
	/* private */
	int fd;
	uint64_t data_off;	/* 8 + header length */
	json_t *root;
};

/*
 * What a format adds to st_open()'s checks; every field may be 0.  The
 * hooks run while the header is read, so that a file is refused for the
 * first problem in the order the format sees them: its own marks first,
 * then each tensor's name, dtype, shape and bytes.
 */
struct st_checks {
	/* Called once with the metadata (NULL when absent) before any tensor
	 * entry is looked at: a format's marks and config.  0, or -1 + e. */
	int (*meta)(void *ctx, json_t *meta, struct err *e);
	/* Called with each tensor's name before its entry is read: 0 with the
	 * shape the tensor must have in shape[0..*ndim) (*ndim <= ST_MAX_DIMS;
	 * -1: any shape), or -1 + e for a name the format does not take. */
	int (*expect)(void *ctx, const char *name, uint64_t *shape, int *ndim, struct err *e);
	/* Who wants the shape expect() gives, for "tensor W has shape [2, 3],
	 * but EXPECT_BY needs [3, 2]": "the config". */
	const char *expect_by;
	/* true: tensors of another dtype (U8, I64, ...: a mask buffer) are
	 * listed as DTYPE_OTHER rather than refused; st_read() refuses them. */
	bool other_dtypes;
	void *ctx;
};

/* Opens and checks path (c may be NULL: no format checks).  0, or -1 with
 * one line in e (no path) and f closed. */
int st_open(struct st_file *f, const char *path, const struct st_checks *c, struct err *e);

/* Releases everything f holds and leaves it closed.  f is one st_open()
 * filled (either way it went), or one initialised { .fd = -1 }; closing
 * a closed f is a no-op. */
void st_close(struct st_file *f);

/* The tensor called name, or NULL when the file has none. */
struct st_tensor *st_find(const struct st_file *f, const char *name);

/* Reads tensor t of f as t->n floats into dst, converting F16 and BF16,
 * and marks it read.  0, or -1 + e: a DTYPE_OTHER tensor ("tensor W has
 * dtype U8, which attnscope does not read"), a read error, or a NaN/Inf
 * ("tensor W has a non-finite value at element K"). */
int st_read(struct st_file *f, struct st_tensor *t, float *dst, struct err *e);

/* st_read kept as stored: t's bytes (t->n elements of its dtype) into
 * dst, with st_read's checks and refusals. */
int st_read_stored(struct st_file *f, struct st_tensor *t, void *dst, struct err *e);

/* Rows row0 .. row0+rows-1 of t (along its first dimension) into dst,
 * converted and checked as st_read() does, a bad value named by its index
 * in the whole tensor; t is not marked read (the caller reading it in
 * parts does that).  0, or -1 + e.  The caller keeps row0 + rows within
 * shape[0]. */
int st_read_rows(struct st_file *f, const struct st_tensor *t, uint64_t row0, uint64_t rows,
		 float *dst, struct err *e);

/* The values of f's tensors that have bytes behind them (every dtype but
 * DTYPE_OTHER): what a config may be checked against before a model is
 * allocated for it. */
uint64_t st_values_held(const struct st_file *f);

/* "[2, 48, 16]" into buf (cut to size). */
void st_shape_str(char *buf, size_t size, const uint64_t *shape, int ndim);

#endif
