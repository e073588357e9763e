/*
 * maskmap.h — which keys each query sees, cell by cell: the mask matrix
 * `show mask` and `export mask` draw.  The rule is the one the engine's
 * attention applies (ops.h: attention_forward with mask_range and a
 * padding mask key_len), restated per cell; tests/test_maskmap.c checks
 * the two against each other on random inputs.
 *
 * For query i of T tokens of which the first key_len are real (key_len =
 * T: no padding), last = key_len - 1 is the last real key, and
 * mask_range gives [lo, hi]; the engine narrows it to hi = min(hi, last),
 * lo = min(lo, hi) (a pad query with nothing left sees the last real
 * key), then:
 *   SEEN    lo <= j <= hi: in the softmax, its weight kept;
 *   ZEROED  under MASK_AFTER_SOFTMAX, j <= last outside [lo, hi]: in the
 *           softmax over 0 .. last, then set to 0 (the pitfall: it still
 *           shaped the normalisation, and the row sums to less than 1);
 *   HIDDEN  outside mask_range's [lo, hi] for T unpadded keys: the
 *           attention mask removes it before the softmax;
 *   PADDED  any other cell: a pad key (j > last) the padding mask hides.
 * Pure: no allocation, nothing printed.
 */
#ifndef ATTNSCOPE_MASKMAP_H
#define ATTNSCOPE_MASKMAP_H

#include "config.h"

enum mask_cell {
	MASK_CELL_SEEN,
	MASK_CELL_HIDDEN,
	MASK_CELL_ZEROED,
	MASK_CELL_PADDED,
	MASK_CELL_KINDS,
};

/* The state of key j for query i (0 <= i, j < T, 1 <= key_len <= T). */
enum mask_cell mask_cell(enum mask_kind mask, int window, int i, int j, int T, int key_len);

/* "seen", "hidden", "zeroed", "padded". */
const char *mask_cell_name(enum mask_cell c);

#endif
