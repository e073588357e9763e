/*
 * quant.h — ggml's tensor element types (the numbers GGUF files carry):
 * their block sizes and names, and their values as floats.  The loaders
 * read files through it and the engine's held weights (held.h) are kept in
 * these types and converted a row or a tile at a time.
 */
#ifndef ATTNSCOPE_QUANT_H
#define ATTNSCOPE_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* The ggml tensor types attnscope reads (the numbers are ggml's). */
enum ggml_type_id {
	GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6,
	GGML_Q5_1 = 7, GGML_Q8_0 = 8, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12,
	GGML_Q5_K = 13, GGML_Q6_K = 14, GGML_BF16 = 30
};

/*
 * The block layouts, as ggml defines them (d, m, dmin are IEEE halves; K
 * types have 256 values in a super-block of sub-blocks):
 *   F32, F16, BF16  one value a block
 *   Q8_0  32 values: d, int8 q[32]; x = d q
 *   Q4_0  32 values: d, 16 bytes; value j < 16 the low nibble of byte j,
 *         j + 16 its high nibble; x = d (q - 8)
 *   Q4_1  as Q4_0 with d, m first; x = d q + m
 *   Q5_0  d, u32 qh (bit j the fifth bit of value j), nibbles as Q4_0;
 *         x = d (q - 16)
 *   Q5_1  d, m, qh, nibbles; x = d q + m
 *   Q2_K  16 sub-blocks of 16: scales[16] (low nibble scale, high nibble
 *         min), qs[64], d, dmin; x = d sc q - dmin mn, q of 2 bits
 *   Q3_K  hmask[32], qs[64], 12 bytes of 6-bit scales, d; x = d (sc - 32)
 *         (q - 4 when the hmask bit is clear)
 *   Q4_K  d, dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of
 *         32, qs[128]; x = d sc q - dmin mn
 *   Q5_K  as Q4_K with qh[32] before qs, the fifth bit of each value
 *   Q6_K  ql[128], qh[64], int8 scales[16], d; x = d sc (q - 32)
 * quant.c gives the bit positions of each.
 */

/* Values per block and bytes per block of ggml type t; 0 for a type
 * attnscope does not read. */
size_t ggml_block_values(uint32_t t);
size_t ggml_block_bytes(uint32_t t);

/* The type's name ("Q4_K"), or NULL for a number ggml does not define;
 * named too are the types ggml has and attnscope does not read. */
const char *ggml_type_name(uint32_t t);

/* Dequantizes n_blocks blocks of type t (a type attnscope reads) at src
 * into dst (n_blocks * ggml_block_values(t) floats).  A type it does not
 * read is a broken invariant (die). */
void ggml_dequantize(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks);

/* The index of the first of n_blocks blocks of type t at src that holds a
 * value that is not finite, or n_blocks: read off the bits, nothing
 * converted.  For the block types, the block's halves (d, m, dmin) decide:
 * its quants are small integers, so every value of a block is finite when
 * its halves are (at most 65504 x 127 x 32 in magnitude), and none is when
 * one is not (Inf times 0 is NaN), so that block's first value is the
 * first one that is not finite.  A type attnscope does not read is a
 * broken invariant (die). */
size_t ggml_first_nonfinite(uint32_t t, const unsigned char *src, size_t n_blocks);

/* The same conversion by the portable scalar code alone: the reference.
 * Where the build has AVX2 and F16C, ggml_dequantize converts Q8_0, Q4_0,
 * Q4_K, Q5_K and Q6_K eight values at a time, and must give exactly these
 * floats (bit for bit) for every block whose halves are finite. */
void ggml_dequantize_ref(uint32_t t, const unsigned char *src, float *dst, size_t n_blocks);

#endif
