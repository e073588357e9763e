/*
 * maskmap.c — the mask matrix cell by cell (maskmap.h), by the rule of
 * ops.c's attention_from.
 */
#include "maskmap.h"

#include "ops.h"

enum mask_cell mask_cell(enum mask_kind mask, int window, int i, int j, int T, int key_len)
{
	int last = key_len < T ? key_len - 1 : T - 1;
	int lo, hi;
	mask_range(mask, window, i, T, &lo, &hi);
	int lo0 = lo, hi0 = hi;
	hi = hi < last ? hi : last;
	lo = lo < hi ? lo : hi;
	if (j >= lo && j <= hi)
		return MASK_CELL_SEEN;
	if (mask == MASK_AFTER_SOFTMAX)
		return j <= last ? MASK_CELL_ZEROED : MASK_CELL_PADDED;
	if (j < lo0 || j > hi0)
		return MASK_CELL_HIDDEN;
	return MASK_CELL_PADDED;
}

const char *mask_cell_name(enum mask_cell c)
{
	static const char *const names[MASK_CELL_KINDS] = { "seen", "hidden", "zeroed", "padded" };
	return (unsigned)c < MASK_CELL_KINDS ? names[c] : "?";
}
