/*
 * test_roles.c — the role labels that go beyond one fixed key (heads.h):
 * offset k, the sink on any key, the delimiter role and the uniform
 * baseline the thresholds are set against.  Each builds an attention
 * pattern whose answer is known by construction, and each role has a
 * near miss that must stay "broad".
 *
 *  - offset: a pattern that looks exactly k back is "offset k" (k = 1:
 *    previous-token) with offset_weight 1; under mask none a pattern that
 *    looks 2 ahead is offset -2; a band that holds only half a row is not
 *    an offset head; k is bounded by (T-1)/2 so one far-back row does not
 *    make an offset head.
 *  - sink: every row after key 5 puts all its weight there: sink 5, with
 *    sink = (T - 6) / (T - 1); first_token stays the key-0 score.
 *  - delimiter: rows that attend to the latest delimiter (every 4th key)
 *    are "delimiter"; uniform attention on the same keys is broad (its
 *    delim equals delim_share exactly); a text that is mostly delimiters
 *    cannot give a delimiter head (the 2x lift is out of reach).
 *  - heads_is_delimiter: whitespace, newline, ASCII, general and CJK
 *    punctuation are delimiters; letters, CJK characters, BOS and <unk>
 *    are not.
 *  - heads_score_uniform: the baseline scores uniform attention under the
 *    mask (causal: prev = mean of 1/(i+1); none: every row sees T keys).
 *  - an encoder's roles (Clark et al. 2019): under mask none a pattern
 *    that looks 1 ahead is "next-token"; rows that put all their weight
 *    on [CLS] (key 0) are "cls", not "sink", and without the [CLS] flags
 *    the same pattern stays "sink"; rows on the two [SEP] keys are "sep";
 *    a [SEP] head at 0.46 is not one; uniform attention has spread 1 and
 *    its cls and sep equal their shares; a one-key pattern has spread 0.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heads.h"
#include "tokenizer.h"

#define EPS 1e-6

static float *zeros(int T)
{
	float *a = calloc((size_t)T * T, sizeof *a);
	assert_non_null(a);
	return a;
}

/* Row i puts 1 on i - k when that key exists, else on itself. */
static float *offset_pattern(int T, int k)
{
	float *a = zeros(T);
	for (int i = 0; i < T; i++) {
		int j = i - k >= 0 && i - k < T ? i - k : i;
		a[(size_t)i * T + j] = 1.0f;
	}
	return a;
}

/* Rows i >= k put `band` on key i - k and the rest evenly on keys 0..i;
 * earlier rows look at themselves. */
static float *band_pattern(int T, int k, float band)
{
	float *a = zeros(T);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		if (i < k) {
			row[i] = 1.0f;
			continue;
		}
		row[i - k] = band;
		for (int j = 0; j <= i; j++)
			row[j] += (1.0f - band) / (float)(i + 1);
	}
	return a;
}

static void test_offset(void **state)
{
	(void)state;
	int T = 24;
	for (int k = 1; k <= 6; k++) {
		float *a = offset_pattern(T, k);
		struct head_scores s;
		heads_score_pattern(a, T, NULL, &s);
		assert_int_equal(s.offset, k);
		assert_true(fabs(s.offset_weight - 1.0) < EPS);
		assert_int_equal(s.role, k == 1 ? HEAD_PREV_TOKEN : HEAD_OFFSET);
		char role[32], badge[16];
		heads_role_text(&s, role, sizeof role);
		heads_badge_text(&s, badge, sizeof badge);
		if (k == 1) {
			assert_string_equal(role, "previous-token");
			assert_string_equal(badge, "prev");
		} else {
			char want[32];
			snprintf(want, sizeof want, "offset %d", k);
			assert_string_equal(role, want);
			snprintf(want, sizeof want, "off%d", k);
			assert_string_equal(badge, want);
		}
		assert_true(fabs(s.prev_token - (k == 1 ? 1.0 : 0.0)) < EPS);
		free(a);
	}

	/* looking 2 ahead, as a bidirectional model may */
	float *a = offset_pattern(T, -2);
	struct heads_keys none = { .mask = MASK_NONE };
	struct head_scores s;
	heads_score_pattern(a, T, &none, &s);
	assert_int_equal(s.offset, -2);
	assert_int_equal(s.role, HEAD_OFFSET);
	free(a);

	/* a band 5 back holding a share of each row, the rest uniform: an
	 * offset head just above half, not one below */
	a = band_pattern(T, 5, 0.5f);
	heads_score_pattern(a, T, NULL, &s);
	assert_int_equal(s.offset, 5);
	assert_true(s.offset_weight > 0.5 && s.offset_weight < 0.55);
	free(a);
	a = band_pattern(T, 5, 0.45f);
	heads_score_pattern(a, T, NULL, &s);
	assert_int_equal(s.offset, 5);
	assert_true(s.offset_weight < 0.5);
	assert_int_equal(s.role, HEAD_BROAD);
	free(a);

	/* only the last row looks far back (T-1): k stays within (T-1)/2 */
	a = offset_pattern(T, 0);
	a[(size_t)(T - 1) * T + T - 1] = 0.0f;
	a[(size_t)(T - 1) * T + 0] = 1.0f;
	heads_score_pattern(a, T, NULL, &s);
	assert_true(abs(s.offset) <= (T - 1) / 2);
	assert_int_equal(s.role, HEAD_SELF);
	free(a);
}

static void test_sink_any_key(void **state)
{
	(void)state;
	int T = 20, key = 5;
	float *a = zeros(T);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		if (i > key)
			row[key] = 1.0f;
		else
			for (int j = 0; j <= i; j++)
				row[j] = 1.0f / (float)(i + 1);
	}
	struct head_scores s;
	heads_score_pattern(a, T, NULL, &s);
	assert_int_equal(s.sink_key, key);
	/* rows 6..19 give 1 each; rows 1..4 cannot see key 5 and row 5 is the key itself */
	assert_true(fabs(s.sink - (double)(T - key - 1) / (T - 1)) < EPS);
	assert_int_equal(s.role, HEAD_SINK);
	double first = 0;
	for (int i = 1; i <= key; i++)
		first += 1.0 / (i + 1);
	assert_true(fabs(s.first_token - first / (T - 1)) < EPS);
	free(a);

	/* the same key held by fewer than half of the rows: not a sink */
	key = 10;
	a = zeros(T);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		if (i > key)
			row[key] = 1.0f;
		else
			for (int j = 0; j <= i; j++)
				row[j] = 1.0f / (float)(i + 1);
	}
	heads_score_pattern(a, T, NULL, &s);
	assert_int_equal(s.sink_key, key);
	assert_true(s.sink < 0.5);
	assert_int_equal(s.role, HEAD_BROAD);
	free(a);
}

/* Delimiters at keys 3, 7, 11, ...; row i attends to the latest one at or
 * before i, or uniformly before the first. */
static void test_delimiter(void **state)
{
	(void)state;
	int T = 32;
	bool delim[32];
	for (int j = 0; j < T; j++)
		delim[j] = j % 4 == 3;
	struct heads_keys keys = { .delim = delim, .mask = MASK_CAUSAL };
	float *a = zeros(T);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		int last = -1;
		for (int j = 0; j <= i; j++)
			if (delim[j])
				last = j;
		if (last >= 0)
			row[last] = 1.0f;
		else
			for (int j = 0; j <= i; j++)
				row[j] = 1.0f / (float)(i + 1);
	}
	struct head_scores s, u;
	heads_score_pattern(a, T, &keys, &s);
	assert_true(fabs(s.delim - (double)(T - 3) / (T - 1)) < EPS); /* rows 3..31 */
	assert_true(s.delim_share > 0.15 && s.delim_share < 0.3);
	assert_true(s.offset_weight < 0.5 && s.sink < 0.5);
	assert_int_equal(s.role, HEAD_DELIM);
	char badge[16];
	heads_badge_text(&s, badge, sizeof badge);
	assert_string_equal(badge, "delim");

	/* uniform attention puts exactly the delimiters' share on them */
	heads_score_uniform(T, &keys, &u);
	assert_true(fabs(u.delim - u.delim_share) < EPS);
	assert_true(fabs(u.delim_share - s.delim_share) < EPS);
	assert_int_equal(u.role, HEAD_BROAD);

	/* without delimiter flags the same head is no delimiter head (it looks
	 * 0..3 back, so it is local) */
	heads_score_pattern(a, T, NULL, &s);
	assert_true(s.delim == 0.0);
	assert_int_equal(s.role, HEAD_LOCAL);
	free(a);

	/* a text that is 3/4 delimiters: all weight on them is no lift */
	for (int j = 0; j < T; j++)
		delim[j] = j % 4 != 0;
	a = zeros(T);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		int n = 0;
		for (int j = 0; j <= i; j++)
			n += delim[j];
		for (int j = 0; j <= i; j++)
			row[j] = n ? (delim[j] ? 1.0f / (float)n : 0.0f) : 1.0f / (float)(i + 1);
	}
	heads_score_pattern(a, T, &keys, &s);
	assert_true(s.delim > 0.9);
	assert_true(s.delim < 2 * s.delim_share);
	assert_int_equal(s.role, HEAD_BROAD);
	free(a);
}

static void test_is_delimiter(void **state)
{
	(void)state;
	static const char *const yes[] = { " ", "\n", "\t", ",", ".", "!", "?", ":", ";", "'", "-",
					   "\xef\xbc\x8c" /* ， */, "\xe3\x80\x82" /* 。 */,
					   "\xe2\x80\x94" /* — */, "\xc2\xbf" /* ¿ */ };
	static const char *const no[] = { "a", "Z", "7", "\xe6\x98\x8e" /* 明 */,
					  "\xc3\xa9" /* é */ };
	uint32_t cps[32];
	int n = 0;
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		int bad;
		utf8_decode((const unsigned char *)yes[i], strlen(yes[i]), &cps[n++], &bad);
	}
	for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
		int bad;
		utf8_decode((const unsigned char *)no[i], strlen(no[i]), &cps[n++], &bad);
	}
	struct err e;
	struct tokenizer *t = tok_char_new(cps, n, 1, &e);
	assert_non_null(t);
	/* ids: 0 <unk>, 1 <bos>, then the code points in order */
	int ny = (int)(sizeof yes / sizeof *yes);
	for (int i = 0; i < n; i++)
		assert_int_equal(heads_is_delimiter(t, 2 + i), i < ny);
	assert_false(heads_is_delimiter(t, t->bos_id));
	assert_false(heads_is_delimiter(t, t->unk_id));
	int ids[3] = { 2, 2 + ny, t->unk_id };
	bool out[3];
	heads_delimiters(t, ids, 3, out);
	assert_true(out[0] && !out[1] && !out[2]);
	tok_free(t);
}

/* Rows put w on the keys flagged in on[], shared evenly, the rest of the
 * row evenly over every key (mask none). */
static float *keys_pattern(int T, const bool *on, float w)
{
	float *a = zeros(T);
	int n = 0;
	for (int j = 0; j < T; j++)
		n += on[j];
	for (int i = 0; i < T; i++)
		for (int j = 0; j < T; j++)
			a[(size_t)i * T + j] = (1.0f - w) / (float)T + (on[j] ? w / (float)n : 0.0f);
	return a;
}

static void test_encoder_roles(void **state)
{
	(void)state;
	enum { N = 20 };
	int T = N;
	struct head_scores s;
	bool cls[N] = { false }, sep[N] = { false };
	cls[0] = true;
	sep[9] = sep[T - 1] = true;
	struct heads_keys keys = { .cls = cls, .sep = sep, .mask = MASK_NONE };

	float *a = offset_pattern(T, -1);
	heads_score_pattern(a, T, &keys, &s);
	assert_int_equal(s.offset, -1);
	assert_int_equal(s.role, HEAD_NEXT_TOKEN);
	char role[32], badge[16];
	heads_role_text(&s, role, sizeof role);
	heads_badge_text(&s, badge, sizeof badge);
	assert_string_equal(role, "next-token");
	assert_string_equal(badge, "next");
	free(a);

	a = keys_pattern(T, cls, 1.0f);
	heads_score_pattern(a, T, &keys, &s);
	assert_true(fabs(s.cls - 1.0) < EPS);
	assert_true(fabs(s.cls_share - 1.0 / T) < EPS);
	assert_int_equal(s.role, HEAD_CLS);
	struct heads_keys plain = { .mask = MASK_NONE };
	heads_score_pattern(a, T, &plain, &s);
	assert_true(s.cls == 0.0);
	assert_int_equal(s.role, HEAD_SINK);
	free(a);

	a = keys_pattern(T, sep, 0.8f);
	heads_score_pattern(a, T, &keys, &s);
	assert_true(fabs(s.sep - (0.8 + 0.2 * 2 / T)) < EPS);
	assert_true(fabs(s.sep_share - 2.0 / T) < EPS);
	assert_int_equal(s.role, HEAD_SEP);
	free(a);
	a = keys_pattern(T, sep, 0.4f); /* sep 0.46 */
	heads_score_pattern(a, T, &keys, &s);
	assert_true(s.sep < 0.5);
	assert_int_equal(s.role, HEAD_BROAD);
	free(a);

	struct head_scores u;
	heads_score_uniform(T, &keys, &u);
	assert_true(fabs(u.spread - 1.0) < EPS);
	assert_true(fabs(u.cls - u.cls_share) < EPS);
	assert_true(fabs(u.sep - u.sep_share) < EPS);
	assert_int_equal(u.role, HEAD_BROAD);
	a = offset_pattern(T, 3);
	heads_score_pattern(a, T, &keys, &s);
	assert_true(fabs(s.spread) < EPS);
	free(a);
	enum head_role r;
	assert_int_equal(heads_role_parse("sep", &r), 0);
	assert_int_equal(r, HEAD_SEP);
	assert_int_equal(heads_role_parse("next-token", &r), 0);
	assert_int_equal(r, HEAD_NEXT_TOKEN);
}

static void test_uniform_baseline(void **state)
{
	(void)state;
	int T = 16;
	struct head_scores c, n, w;
	struct heads_keys causal = { .mask = MASK_CAUSAL }, none = { .mask = MASK_NONE },
			  window = { .mask = MASK_WINDOW, .window = 1 };
	heads_score_uniform(T, &causal, &c);
	heads_score_uniform(T, &none, &n);
	heads_score_uniform(T, &window, &w);
	double prev = 0;
	for (int i = 1; i < T; i++)
		prev += 1.0 / (i + 1);
	assert_true(fabs(c.prev_token - prev / (T - 1)) < EPS);
	assert_true(fabs(n.prev_token - 1.0 / T) < EPS);
	/* mask none: key 0 gets 1/T from each of rows 1..T-1; other keys lose their own row */
	assert_true(fabs(n.sink - 1.0 / T) < EPS);
	assert_int_equal(n.sink_key, 0);
	assert_true(fabs(w.prev_token - 0.5) < EPS); /* a window of 1: keys i-1 and i */
	assert_int_equal(c.role, HEAD_BROAD);
	assert_int_equal(n.role, HEAD_BROAD);
	assert_int_equal(w.role, HEAD_BROAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset),
		cmocka_unit_test(test_sink_any_key),
		cmocka_unit_test(test_delimiter),
		cmocka_unit_test(test_is_delimiter),
		cmocka_unit_test(test_uniform_baseline),
		cmocka_unit_test(test_encoder_roles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
