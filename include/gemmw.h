/*
 * gemmw.h — the product of many F32 input rows with weight rows read in
 * the width they are stored in: F32, F16 or BF16.  No F32 copy of a 16-bit
 * weight is made (held.c's tiles make one), each 16-bit row is converted
 * in registers beside the multiply-adds.  Built where the compiler targets
 * AVX-512F (gemmw_available); elsewhere held.c falls back to its tiles and
 * ops.c to OpenBLAS's sgemm.
 *
 * Shapes: in (N, IC) F32, rows IC apart; the weight rows lo .. hi - 1 of
 * w, each IC values of `type` (GGML_F32, GGML_F16 or GGML_BF16), rb bytes
 * apart; out (N, ldo) F32: out[i * ldo + r] for r in lo .. hi - 1.
 * Nothing is allocated; the caller owns every buffer.
 *
 * Each output element is one sum in a fixed order (for each chunk of 1024
 * columns of the multiple of 16, sixteen lanes added in a fixed tree, the
 * chunks' sums added in order, then the remaining columns in order),
 * whatever the tile it falls in and whatever N, so a product split over
 * threads by weight rows equals the one-thread product bit for bit, and a
 * row's product does not depend on the rows beside it.
 */
#ifndef ATTNSCOPE_GEMMW_H
#define ATTNSCOPE_GEMMW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether gemmw_rows is built here (AVX-512F); when false it must not be
 * called. */
bool gemmw_available(void);

void gemmw_rows(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int lo, int hi);

/* gemmw_rows over weight rows 0 .. rows - 1, split over the engine's two
 * threads (split.h) by weight rows: the same numbers as on one. */
void gemmw_split(float *out, int ldo, const float *in, int N, int IC, const unsigned char *w,
		 size_t rb, uint32_t type, int rows);

#endif
