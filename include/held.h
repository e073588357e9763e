/*
 * held.h — weight matrices kept in the element type their file stores
 * (F16, BF16 or one of ggml's block types: quant.h) instead of F32, and
 * the products that read them: out = in · W^T in F32, W's rows converted
 * a tile at a time (many rows of input) or a row at a time beside the dot
 * products (a few rows: a decoder step).  A 16-bit matrix takes half the
 * memory of F32, a Q4_K one about a seventh.
 *
 * A held matrix is one layer's weight of (rows, cols), in parts: rows
 * r0 .. r0 + n - 1 of one type each, so that a fused QKV made from three
 * tensors of a file may mix types (a Q4_K_M file's V rows are often Q6_K).
 * Every row is whole blocks of its type (cols a multiple of its block
 * values).  The rows are in the engine's order: a loader moves them
 * (RoPE's row permutation) as it fills them.
 *
 * Ownership: a held matrix owns its parts' bytes, one allocation a part;
 * held_free releases them and accepts a half-built or zeroed matrix.  The
 * products keep one scratch tile per process, grown to the largest asked
 * for (held_scratch_free releases it); the engine is single-threaded
 * around them (OpenBLAS threads inside the products only).
 */
#ifndef ATTNSCOPE_HELD_H
#define ATTNSCOPE_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HELD_MAX_PARTS 4

struct held_part {
	uint32_t type;		/* enum ggml_type_id (quant.h) */
	int r0, rows;		/* the matrix rows it holds */
	size_t row_bytes;	/* bytes of one row in its type */
	unsigned char *data;	/* rows * row_bytes; owned */
};

struct held_mat {
	int rows, cols;		/* OC, IC of the products */
	int n_parts;
	struct held_part part[HELD_MAX_PARTS]; /* in the order added */
};

/* Bytes of one row of cols values of type t; 0 when t is not a type
 * attnscope reads or cols is not whole blocks of it. */
size_t held_row_bytes(uint32_t t, int cols);

/* Adds a part of n rows from row r0 in type t to h (rows and cols set)
 * and returns its bytes, uninitialised, for the caller to fill (n *
 * held_row_bytes(t, cols)).  NULL when the rows leave the matrix, overlap
 * a part already added, the type cannot hold a row, or h has
 * HELD_MAX_PARTS parts. */
unsigned char *held_add_part(struct held_mat *h, int r0, int n, uint32_t t);

/* Whether h's parts cover each of its rows once. */
bool held_complete(const struct held_mat *h);

/* Rows r0 .. r0 + n - 1 of h as F32 into dst (n, cols). */
void held_rows(const struct held_mat *h, int r0, int n, float *dst);

/* out (N, rows) = in (N, cols) · h^T, plus bias (rows) when not NULL; h
 * complete (held_complete: a loader checks). */
void held_matmul(float *out, const float *in, const struct held_mat *h, const float *bias,
		 int N);

/* Whether held_matmul's products of many rows use gemmw.h (the default
 * where it is built: F16 / BF16 parts read in their width, the other
 * types' F32 tiles multiplied there too) or F32 tiles for every type and
 * OpenBLAS's sgemm: for benchmarks and tests that compare the two. */
void held_use_gemmw(bool on);

/* Bytes of h's parts. */
size_t held_bytes(const struct held_mat *h);

/* The type of h's parts when they share one, else (uint32_t)-1. */
uint32_t held_type(const struct held_mat *h);

void held_free(struct held_mat *h);
void held_scratch_free(void);

#endif
