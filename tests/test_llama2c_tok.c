/*
 * test_llama2c_tok.c — llama2.c's tokenizer.bin (src/tok-llama2c.c) with
 * ../shared/tokenizers/llama2c/tokenizer.bin (the Llama 2 vocabulary;
 * override the shared directory with ATTNSCOPE_SHARED).
 *
 * Expectations: tests/data/llama2c_expect.tsv, the same 305 strings as the
 * GPT-2 table, with the ids produced by an independent implementation,
 * llama-tokenizer-js 1.2.2 (npm; a JS Llama sentencepiece-BPE tokenizer
 * with its own bundled vocabulary and merge list), called as
 * encode(text, add_bos_token=false, add_preceding_space=true).  The
 * generator first checks that its 32000 pieces equal tokenizer.bin's (with
 * "▁" written as a space and BOS/EOS as "\n<s>\n"/"\n</s>\n", as llama2.c's
 * export writes them).  Regenerate with:
 *   mkdir -p /tmp/gen && cd /tmp/gen && npm install llama-tokenizer-js@1.2.2
 *   cd - && NODE_PATH=/tmp/gen/node_modules node tests/gen/gen_llama2c.js \
 *       ../shared/tokenizers/llama2c/tokenizer.bin > tests/data/llama2c_expect.tsv
 * Invalid UTF-8 rows: each bad byte is replaced by U+FFFD before encoding.
 * test_options checks struct tok_spm_opts (GGUF's Gemma reading) on a
 * small hand-made vocabulary whose ids follow from the rules by hand.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tok_expect.h"
#include "tokenizer.h"
#include "util.h"

static char bin_path[512];

static struct tokenizer *llama(void)
{
	static struct tokenizer *t;
	struct err e = { "" };

	if (!t) {
		snprintf(bin_path, sizeof bin_path, "%s/tokenizers/llama2c/tokenizer.bin",
			 tok_expect_shared_dir());
		t = tok_llama2c_load(bin_path, 0, &e);
		if (!t)
			print_error("cannot load %s: %s\n", bin_path, e.msg);
		assert_non_null(t);
	}
	return t;
}

/* ---------------------------------------------------------------- tests */

static void test_load(void **state)
{
	struct err e = { "" };
	struct tokenizer *t = llama();
	double t0 = now_ms();

	assert_string_equal(t->ops->kind, "llama2c");
	assert_int_equal(t->vocab_size, 32000);
	assert_int_equal(t->unk_id, 0);
	assert_int_equal(t->bos_id, 1);

	/* the piece count given by a model must be the file's */
	struct tokenizer *u = tok_llama2c_load(bin_path, 32000, &e);
	assert_non_null(u);
	tok_free(u);
	print_message("tokenizer.bin (32000 pieces) loaded in %.0f ms\n", now_ms() - t0);
	assert_null(tok_llama2c_load(bin_path, 31999, &e));
	assert_non_null(strstr(e.msg, "more than the model's 31999 pieces"));
	assert_null(tok_llama2c_load(bin_path, 32001, &e));
	assert_non_null(strstr(e.msg, "ends after 32000 pieces"));
}

static void test_expectations(void **state)
{
	assert_int_equal(tok_expect_check(llama(), "tests/data/llama2c_expect.tsv", 200), 0);
}

/* With add_bos the ids are BOS then the same ids, and decoding drops BOS
 * and the dummy prefix's space. */
static void test_bos(void **state)
{
	struct tokenizer *t = llama();
	int *a, na, *b, nb;
	const char *s = "Once upon a time";

	assert_int_equal(tok_encode(t, s, strlen(s), 0, &a, &na, NULL), 0);
	assert_int_equal(tok_encode(t, s, strlen(s), 1, &b, &nb, NULL), 0);
	assert_int_equal(nb, na + 1);
	assert_int_equal(b[0], 1);
	assert_memory_equal(a, b + 1, (size_t)na * sizeof *a);
	char *back = tok_decode(t, b, nb);
	assert_string_equal(back, s);
	free(back);
	free(a);
	free(b);
	/* an empty text has no tokens, BOS aside */
	assert_int_equal(tok_encode(t, "", 0, 1, &a, &na, NULL), 0);
	assert_int_equal(na, 1);
	free(a);
}

/* The leading-space rule: only the first piece and a piece after BOS lose
 * their space. */
static void test_leading_space(void **state)
{
	struct tokenizer *t = llama();
	/* 15043 = " Hello", 3186 = " world" */
	int ids[] = { 15043, 3186, 1, 15043, 2, 15043 };
	char *s = tok_decode(t, ids, 6);
	assert_string_equal(s, "Hello worldHello Hello");
	free(s);
	s = tok_decode(t, ids + 1, 1);
	assert_string_equal(s, "world");
	free(s);
}

static void test_labels(void **state)
{
	struct tokenizer *t = llama();
	char buf[64];

	tok_label(t, 1, buf, sizeof buf);
	assert_string_equal(buf, "<s>");
	tok_label(t, 2, buf, sizeof buf);
	assert_string_equal(buf, "</s>");
	tok_label(t, 0, buf, sizeof buf);
	assert_string_equal(buf, "<unk>");
	tok_label(t, 15043, buf, sizeof buf);
	assert_string_equal(buf, "\xe2\x90\xa3Hello");
	/* byte pieces: <0x0A> is a newline, <0xE5> a lone lead byte */
	assert_int_equal(tok_piece(t, 3 + 0x0A, buf, sizeof buf), 1);
	assert_int_equal(buf[0], '\n');
	tok_label(t, 3 + 0x0A, buf, sizeof buf);
	assert_string_equal(buf, "\xe2\x8f\x8e");
	tok_label(t, 3 + 0xE5, buf, sizeof buf);
	assert_string_equal(buf, "<e5>");
}

/* Byte fallback for a character without a piece, and the text "<s>" is not
 * BOS. */
static void test_byte_fallback(void **state)
{
	struct tokenizer *t = llama();
	int *ids, n;

	/* U+1F642 is not a piece: the dummy space, then its four bytes */
	assert_int_equal(tok_encode(t, "\xf0\x9f\x99\x82", 4, 0, &ids, &n, NULL), 0);
	assert_int_equal(n, 5);
	assert_int_equal(ids[1], 3 + 0xF0);
	assert_int_equal(ids[4], 3 + 0x82);
	free(ids);
	assert_int_equal(tok_encode(t, "<s>", 3, 0, &ids, &n, NULL), 0);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(ids[i], 1);
	free(ids);
}

static void test_long_text(void **state)
{
	struct tokenizer *t = llama();
	size_t n = 100000;
	char *s = xmalloc(n + 1);
	static const char *words[] = { "the ", "cat ", "sat ", "on ", "a ", "mat. ", "床", "\n" };
	size_t at = 0;

	for (int k = 0; at < n - 8; k++) {
		const char *w = words[(k * 7 + k / 3) % 8];
		memcpy(s + at, w, strlen(w));
		at += strlen(w);
	}
	s[at] = '\0';
	double t0 = now_ms();
	int *ids, m;
	assert_int_equal(tok_encode(t, s, at, 0, &ids, &m, NULL), 0);
	double ms = now_ms() - t0;
	print_message("%zu bytes encoded to %d tokens in %.0f ms\n", at, m, ms);
	char *back = tok_decode(t, ids, m);
	assert_string_equal(back, s);
	free(back);
	free(ids);
	free(s);
}

static void test_json_round_trip(void **state)
{
	struct tokenizer *t = llama();
	struct err e = { "" };
	char *json = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(json, &e);

	free(json);
	if (!u)
		print_error("%s\n", e.msg);
	assert_non_null(u);
	assert_int_equal(u->vocab_size, 32000);
	assert_int_equal(u->bos_id, 1);
	assert_int_equal(tok_expect_check(u, "tests/data/llama2c_expect.tsv", 200), 0);
	tok_free(u);
}

/* ------------------------------------------------ struct tok_spm_opts */

/* A small vocabulary as a tokenizer.bin image (malloc'd, *len bytes):
 * <unk> <s> </s>, " ", "a", "b", " a" (score -1), "ab" (-2), then "<x"
 * and "x>a" and "  " (8, 9, 10: whole pieces in the tests), "x"; single
 * characters score -10. */
static unsigned char *small_bin(size_t *len)
{
	static const char *const p[] = { "<unk>", "<s>", "</s>", " ", "a", "b", " a", "ab",
					 "<x", "x>a", "  ", "x" };
	unsigned char *buf = xmalloc(1024), *o = buf + 4;
	int32_t maxlen = 5;

	memcpy(buf, &maxlen, 4);
	for (int i = 0; i < 12; i++) {
		float sc = i == 6 ? -1.0f : i == 7 ? -2.0f : -10.0f;
		int32_t l = (int32_t)strlen(p[i]);

		memcpy(o, &sc, 4);
		memcpy(o + 4, &l, 4);
		memcpy(o + 8, p[i], (size_t)l);
		o += 8 + l;
	}
	*len = (size_t)(o - buf);
	return buf;
}

static struct tokenizer *small(bool no_prefix, bool space_mark)
{
	static const int whole[] = { 8, 9, 10 };
	struct tok_spm_opts o = { no_prefix, space_mark, whole, 3 };
	struct err e = { "" };
	size_t len;
	unsigned char *buf = small_bin(&len);
	struct tokenizer *t = tok_llama2c_from_bin_opts(buf, len, 12, &o, "small", &e);

	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	return t;
}

/* t's ids of text are want[0 .. n). */
static void ids_are(const struct tokenizer *t, const char *text, const int *want, int n)
{
	struct err e = { "" };
	int *ids = NULL, k;

	assert_true(tok_encode(t, text, strlen(text), 0, &ids, &k, &e) >= 0);
	if (k != n || memcmp(ids, want, (size_t)n * sizeof *ids)) {
		print_error("\"%s\": %d ids:", text, k);
		for (int i = 0; i < k; i++)
			print_error(" %d", ids[i]);
		print_error("\n");
		fail();
	}
	free(ids);
}

/* The options: whole pieces are cut out before the merges, the longest
 * first even when a shorter one starts further left ("<x>a": "x>a", not
 * "<x"; "<" then has no piece: <unk>); with the dummy prefix, each run of
 * text after a whole piece gets it again (llama.cpp's rule); without it,
 * no space is added and decoding keeps the leading space; a typed U+2581
 * reads as a space only with space_mark; a run of spaces that is a whole
 * piece is cut out as one; the options survive to_json; a whole piece
 * that is no piece is refused in one line. */
static void test_options(void **state)
{
	(void)state;
	struct tokenizer *t = small(false, false);
	ids_are(t, "<x>a", (int[]){ 3, 0, 9 }, 3); /* the prefix " ", "<" as <unk> */
	ids_are(t, "ax>aa", (int[]){ 6, 9, 6 }, 3);
	tok_free(t);

	t = small(true, true);
	ids_are(t, "<x>a", (int[]){ 0, 9 }, 2);
	ids_are(t, "ax>aa", (int[]){ 4, 9, 4 }, 3);
	ids_are(t, "\xe2\x96\x81" "ab", (int[]){ 6, 5 }, 2);
	ids_are(t, "a  b", (int[]){ 4, 10, 5 }, 3);
	char *d = tok_decode(t, (int[]){ 6, 5 }, 2);
	assert_string_equal(d, " ab");
	free(d);
	t->bos_id = 1;
	char *json = t->ops->to_json(t);
	struct err e = { "" };
	struct tokenizer *u = tok_from_json(json, &e);
	free(json);
	assert_non_null(u);
	assert_int_equal(u->bos_id, 1);
	ids_are(u, "<x>a", (int[]){ 0, 9 }, 2);
	ids_are(u, "\xe2\x96\x81" "ab", (int[]){ 6, 5 }, 2);
	tok_free(u);
	tok_free(t);

	t = small(true, false);
	ids_are(t, "\xe2\x96\x81" "a", (int[]){ 0, 0, 0, 4 }, 4);
	tok_free(t);

	static const int bad[] = { 12 };
	struct tok_spm_opts o = { false, false, bad, 1 };
	size_t len;
	unsigned char *buf = small_bin(&len);
	assert_null(tok_llama2c_from_bin_opts(buf, len, 12, &o, "small", &e));
	assert_non_null(strstr(e.msg, "small: whole piece 12 is not one of the 12 pieces"));
}

/* Damaged files: one line, no crash. */
static void test_damaged(void **state)
{
	char dir[] = "/tmp/attnscope-l2ct-XXXXXX", path[600];
	struct err e = { "" };
	size_t len;
	char *buf = read_file(bin_path, &len, &e);

	assert_non_null(buf);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/tokenizer.bin", dir);
	/* truncated in the middle of a piece */
	assert_int_equal(write_file_atomic(path, buf, len - 3, &e), 0);
	assert_null(tok_llama2c_load(path, 0, &e));
	assert_non_null(strstr(e.msg, "cut short"));
	assert_null(strchr(e.msg, '\n'));
	/* a negative length */
	memcpy(buf + 8, "\xff\xff\xff\xff", 4);
	assert_int_equal(write_file_atomic(path, buf, len, &e), 0);
	assert_null(tok_llama2c_load(path, 0, &e));
	assert_non_null(strstr(e.msg, "piece 0 has length -1"));
	/* too short for the header */
	assert_int_equal(write_file_atomic(path, buf, 2, &e), 0);
	assert_null(tok_llama2c_load(path, 0, &e));
	assert_non_null(strstr(e.msg, "too short"));
	unlink(path);
	rmdir(dir);
	free(buf);
	/* bad JSON data */
	assert_null(tok_from_json("{\"type\":\"llama2c\",\"pieces\":3,\"data\":\"@@@@\"}", &e));
	assert_non_null(strstr(e.msg, "base64"));
}

static int group_teardown(void **state)
{
	tok_free(llama());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_expectations),
		cmocka_unit_test(test_bos),
		cmocka_unit_test(test_leading_space),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_byte_fallback),
		cmocka_unit_test(test_long_text),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_damaged),
	};
	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
