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

#include "tokenizer.h"
#include "util.h"

static char bin_path[512];

static const char *shared_dir(void)
{
	const char *s = getenv("ATTNSCOPE_SHARED");
	return s && *s ? s : "../shared";
}

static struct tokenizer *llama(void)
{
	static struct tokenizer *t;
	struct err e = { "" };

	if (!t) {
		snprintf(bin_path, sizeof bin_path, "%s/tokenizers/llama2c/tokenizer.bin",
			 shared_dir());
		t = tok_llama2c_load(bin_path, 0, &e);
		if (!t)
			print_error("cannot load %s: %s\n", bin_path, e.msg);
		assert_non_null(t);
	}
	return t;
}

/* ------------------------------------------------------------ the table */

struct row {
	unsigned char *text;
	size_t len;
	int *ids;
	int n;
	int bad;
	int line;
};

static int hexv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Reads "hex TAB ids TAB bad TAB json" rows; returns the row count. */
static int read_table(const char *path, struct row **out)
{
	struct err e = { "" };
	size_t len;
	char *buf = read_file(path, &len, &e), *save = NULL, *line;
	struct row *rows = NULL;
	int n = 0, lineno = 0;

	if (!buf)
		print_error("%s\n", e.msg);
	assert_non_null(buf);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = { line, NULL, NULL, NULL };
		struct row r = { 0 };

		lineno++;
		if (line[0] == '#')
			continue;
		for (int k = 1; k < 4; k++) {
			f[k] = strchr(f[k - 1], '\t');
			assert_non_null(f[k]);
			*f[k]++ = '\0';
		}
		r.len = strlen(f[0]) / 2;
		r.text = xmalloc(r.len + 1);
		for (size_t i = 0; i < r.len; i++)
			r.text[i] = (unsigned char)(hexv(f[0][2 * i]) * 16 + hexv(f[0][2 * i + 1]));
		r.text[r.len] = '\0';
		r.ids = xmalloc((strlen(f[1]) + 1) * sizeof *r.ids);
		for (char *p = f[1]; *p;) {
			char *end;
			r.ids[r.n++] = (int)strtol(p, &end, 10);
			assert_true(end > p);
			p = end;
			while (*p == ' ')
				p++;
		}
		r.bad = atoi(f[2]);
		r.line = lineno;
		rows = xrealloc(rows, (size_t)(n + 1) * sizeof *rows);
		rows[n++] = r;
	}
	free(buf);
	*out = rows;
	return n;
}

static void free_table(struct row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free(rows[i].text);
		free(rows[i].ids);
	}
	free(rows);
}

/* The text with every invalid byte replaced by U+FFFD (tokenizer.h);
 * its length (texts may hold NUL bytes) in *out_len. */
static char *replaced(const unsigned char *s, size_t len, size_t *out_len)
{
	char *out = xmalloc(3 * len + 1);
	size_t i = 0, o = 0;

	while (i < len) {
		uint32_t cp;
		int bad, k = utf8_decode(s + i, len - i, &cp, &bad);
		o += (size_t)utf8_encode(cp, out + o);
		i += (size_t)k;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

static void print_ids(const char *what, const int *ids, int n)
{
	print_error("  %s:", what);
	for (int i = 0; i < n; i++)
		print_error(" %d", ids[i]);
	print_error("\n");
}

/* Encodes every row with t and checks ids, the bad count and the round trip. */
static void check_table(const struct tokenizer *t, const char *path)
{
	struct row *rows;
	int n = read_table(path, &rows), failures = 0;

	assert_true(n >= 200);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		struct err e = { "" };
		int *ids, k;
		int bad = tok_encode(t, (const char *)r->text, r->len, 0, &ids, &k, &e);

		assert_true(bad >= 0);
		if (k != r->n || memcmp(ids, r->ids, (size_t)k * sizeof *ids) != 0 ||
		    bad != r->bad) {
			print_error("%s:%d: \"%s\" encodes differently (bad %d, expected %d)\n",
				    path, r->line, r->text, bad, r->bad);
			print_ids("got     ", ids, k);
			print_ids("expected", r->ids, r->n);
			failures++;
		}
		char *back = tok_decode(t, ids, k);
		size_t wlen;
		char *want = replaced(r->text, r->len, &wlen);
		/* decode's output is NUL-terminated; compare wlen bytes and the NUL */
		if (memcmp(back, want, wlen + 1) != 0 || (r->bad == 0 && wlen != r->len)) {
			print_error("%s:%d: decode(encode(s)) = \"%s\", expected \"%s\"\n", path,
				    r->line, back, want);
			failures++;
		}
		free(want);
		free(back);
		free(ids);
	}
	free_table(rows, n);
	assert_int_equal(failures, 0);
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
	check_table(llama(), "tests/data/llama2c_expect.tsv");
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
	check_table(u, "tests/data/llama2c_expect.tsv");
	tok_free(u);
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
		cmocka_unit_test(test_damaged),
	};
	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
