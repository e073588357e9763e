/*
 * test_maskmap.c — the mask matrix (maskmap.h) against the engine's own
 * attention (ops.h: attention_forward) on seeded random queries and keys:
 * for every mask (causal, none, window 0, 1, 3, after-softmax), for
 * sequences with and without padding (key_len), a cell the map calls seen
 * has a positive weight and every other cell a weight of exactly 0; rows
 * sum to 1 over the seen cells, except under after-softmax, where a row
 * with zeroed cells sums to less than 1.  Also the states' names and a few
 * cells worked out by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "maskmap.h"
#include "ops.h"

enum { B = 3, T = 11, H = 2, G = 1, D = 4 };

static float frand(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return (float)((*s >> 40) & 0xffff) / 65536.0f - 0.5f;
}

static void test_agrees_with_attention(void **state)
{
	(void)state;
	static const struct { enum mask_kind mask; int window; } cases[] = {
		{ MASK_CAUSAL, 0 }, { MASK_NONE, 0 }, { MASK_WINDOW, 0 }, { MASK_WINDOW, 1 },
		{ MASK_WINDOW, 3 }, { MASK_AFTER_SOFTMAX, 0 },
	};
	const int key_len[B] = { T, 7, 1 }; /* unpadded, 4 pads, all pads but one */
	int ld = (H + 2 * G) * D;
	float *qkv = malloc(sizeof *qkv * B * T * ld);
	float *out = malloc(sizeof *out * B * T * H * D);
	float *att = malloc(sizeof *att * B * H * T * T);
	uint64_t seed = 42;
	for (int k = 0; k < B * T * ld; k++)
		qkv[k] = frand(&seed);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		attention_forward(out, att, qkv, B, T, H, G, D, cases[c].mask, cases[c].window, 0.5f,
				  key_len);
		int zeroed_rows = 0;
		for (int b = 0; b < B; b++)
			for (int h = 0; h < H; h++)
				for (int i = 0; i < T; i++) {
					const float *row = att + (((size_t)b * H + h) * T + i) * T;
					double sum = 0;
					int zeroed = 0;
					for (int j = 0; j < T; j++) {
						enum mask_cell m = mask_cell(cases[c].mask, cases[c].window, i,
									     j, T, key_len[b]);
						if (m == MASK_CELL_SEEN) {
							if (!(row[j] > 0))
								fail_msg("case %zu b %d i %d j %d: seen, weight %g",
									 c, b, i, j, (double)row[j]);
							sum += row[j];
						} else if (row[j] != 0) {
							fail_msg("case %zu b %d i %d j %d: %s, weight %g", c, b, i,
								 j, mask_cell_name(m), (double)row[j]);
						}
						zeroed += m == MASK_CELL_ZEROED;
					}
					if (zeroed) {
						assert_true(sum < 1 - 1e-6);
						zeroed_rows++;
					} else {
						assert_true(fabs(sum - 1) <= 1e-5);
					}
				}
		/* zeroed cells exist under after-softmax only */
		assert_int_equal(zeroed_rows > 0, cases[c].mask == MASK_AFTER_SOFTMAX);
	}
	free(qkv);
	free(out);
	free(att);
}

static void test_by_hand(void **state)
{
	(void)state;
	/* causal, 5 tokens: the diagonal is seen, above it hidden */
	assert_int_equal(mask_cell(MASK_CAUSAL, 0, 2, 2, 5, 5), MASK_CELL_SEEN);
	assert_int_equal(mask_cell(MASK_CAUSAL, 0, 2, 3, 5, 5), MASK_CELL_HIDDEN);
	/* window 1: two keys, i-1 and i */
	assert_int_equal(mask_cell(MASK_WINDOW, 1, 3, 1, 5, 5), MASK_CELL_HIDDEN);
	assert_int_equal(mask_cell(MASK_WINDOW, 1, 3, 2, 5, 5), MASK_CELL_SEEN);
	/* none with 3 real tokens of 5: the pads are padded, for every query */
	assert_int_equal(mask_cell(MASK_NONE, 0, 0, 3, 5, 3), MASK_CELL_PADDED);
	assert_int_equal(mask_cell(MASK_NONE, 0, 4, 2, 5, 3), MASK_CELL_SEEN);
	/* causal with pads: a pad query sees the real keys, not the pads
	 * before it; what lies after it is the causal mask's */
	assert_int_equal(mask_cell(MASK_CAUSAL, 0, 4, 3, 5, 3), MASK_CELL_PADDED);
	assert_int_equal(mask_cell(MASK_CAUSAL, 0, 3, 4, 5, 3), MASK_CELL_HIDDEN);
	/* window 1, a pad query far past the text: the last real key */
	assert_int_equal(mask_cell(MASK_WINDOW, 1, 4, 1, 5, 2), MASK_CELL_SEEN);
	assert_int_equal(mask_cell(MASK_WINDOW, 1, 4, 0, 5, 2), MASK_CELL_HIDDEN);
	/* after-softmax: later keys are zeroed, not hidden */
	assert_int_equal(mask_cell(MASK_AFTER_SOFTMAX, 0, 1, 4, 5, 5), MASK_CELL_ZEROED);
	assert_int_equal(mask_cell(MASK_AFTER_SOFTMAX, 0, 1, 4, 5, 4), MASK_CELL_PADDED);
	assert_string_equal(mask_cell_name(MASK_CELL_ZEROED), "zeroed");
	assert_string_equal(mask_cell_name(MASK_CELL_PADDED), "padded");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agrees_with_attention),
		cmocka_unit_test(test_by_hand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
