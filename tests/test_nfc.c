/*
 * test_nfc.c — Unicode NFC (src/text/tok-nfc.c) against Node's
 * String.prototype.normalize("NFC").
 *
 * tests/data/nfc_expect.tsv (tests/gen/gen_nfc_expect.py says how to
 * regenerate it) holds 4866 strings of code points assigned in Unicode
 * 14.0.0 and their NFC form: hand-picked cases (orders of marks, blocked
 * compositions, singletons, exclusions, Hangul, Indic, Tibetan, kana,
 * musical symbols, CJK compatibility ideographs), every code point with a
 * canonical decomposition alone and decomposed, Hangul syllables both ways
 * and seeded random strings of starters and marks.  For every row:
 * tok_nfc(input) is the expected NFC byte for byte, tok_nfc of that is the
 * same again (idempotence), and when the quick check passes the input,
 * the expected form is the input.
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

#include "tok-common.h"
#include "utf8.h"
#include "util.h"

/* A row: input and expected NFC as UTF-8, and what the row is about. */
struct nfc_row {
	char in[512], want[512], what[96];
	size_t in_len, want_len;
	int line;
};

/* The space-separated hex code points of s as UTF-8 into out (size 512);
 * returns its length, or -1 on a malformed field. */
static int utf8_of_hex(const char *s, char *out)
{
	size_t n = 0;

	while (*s) {
		char *end;
		unsigned long cp = strtoul(s, &end, 16);

		if (end == s || cp > 0x10FFFF || n + 4 >= 512)
			return -1;
		n += (size_t)utf8_encode((uint32_t)cp, out + n);
		s = end + (*end == ' ');
	}
	out[n] = '\0';
	return (int)n;
}

/* Reads tests/data/nfc_expect.tsv; returns the row count (rows in *out,
 * which the caller frees), failing the test on a malformed file. */
static int read_rows(struct nfc_row **out)
{
	struct err e = { "" };
	size_t len;
	char *buf = read_file("tests/data/nfc_expect.tsv", &len, &e), *line, *next;
	struct nfc_row *rows = NULL;
	int n = 0, lineno = 0;

	if (!buf)
		print_error("%s\n", e.msg);
	assert_non_null(buf);
	for (line = buf; line && *line; line = next) {
		char *f1, *f2;
		int a, b;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (line[0] == '#')
			continue;
		f1 = strchr(line, '\t');
		f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
		if (!f2)
			fail_msg("nfc_expect.tsv:%d: fewer than 3 fields", lineno);
		*f1++ = '\0';
		*f2++ = '\0';
		rows = xrealloc(rows, (size_t)(n + 1) * sizeof *rows);
		a = utf8_of_hex(line, rows[n].in);
		b = utf8_of_hex(f1, rows[n].want);
		if (a < 0 || b < 0)
			fail_msg("nfc_expect.tsv:%d: bad code points", lineno);
		rows[n].in_len = (size_t)a;
		rows[n].want_len = (size_t)b;
		snprintf(rows[n].what, sizeof rows[n].what, "%s", f2);
		rows[n].line = lineno;
		n++;
	}
	free(buf);
	*out = rows;
	return n;
}

/* Prints s[0..len) as code points. */
static void print_cps(const char *label, const char *s, size_t len)
{
	print_error("  %s:", label);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int bad;

		i += (size_t)utf8_decode((const unsigned char *)s + i, len - i, &cp, &bad);
		print_error(" %04X", (unsigned)cp);
	}
	print_error("\n");
}

static bool same(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && !memcmp(a, b, al);
}

/* Checks one row; returns the number of failed checks (printed). */
static int check_row(const struct nfc_row *r)
{
	size_t n, n2;
	uint32_t cp;
	size_t at;
	char *got = tok_nfc(r->in, r->in_len, &n);
	char *again = tok_nfc(got, n, &n2);
	int bad = 0;

	if (!same(got, n, r->want, r->want_len) || got[n] != '\0') {
		print_error("nfc_expect.tsv:%d (%s): tok_nfc differs\n", r->line, r->what);
		print_cps("input", r->in, r->in_len);
		print_cps("got", got, n);
		print_cps("want", r->want, r->want_len);
		bad++;
	}
	if (!same(again, n2, got, n)) {
		print_error("nfc_expect.tsv:%d (%s): tok_nfc is not idempotent\n", r->line,
			    r->what);
		bad++;
	}
	if (tok_nfc_check(r->in, r->in_len, &cp, &at) &&
	    !same(r->in, r->in_len, r->want, r->want_len)) {
		print_error("nfc_expect.tsv:%d (%s): the quick check passes text NFC changes\n",
			    r->line, r->what);
		bad++;
	}
	free(got);
	free(again);
	return bad;
}

static void test_table(void **state)
{
	struct nfc_row *rows;
	int n = read_rows(&rows), failed = 0;

	(void)state;
	assert_true(n >= 4800);
	for (int i = 0; i < n; i++)
		failed += check_row(&rows[i]);
	if (failed)
		print_error("%d of %d rows' checks failed\n", failed, n);
	assert_int_equal(failed, 0);
	free(rows);
}

/* A run of 200,000 marks is sorted in linear time, stably: a + (U+0301
 * U+0323) x k is U+1EA1 (a with dot below), U+0323 x (k - 1), U+0301 x k. */
static void test_long_run(void **state)
{
	enum { K = 100000 };
	size_t len = 1 + 4 * (size_t)K, n;
	char *s = xmalloc(len + 1);

	(void)state;
	s[0] = 'a';
	for (size_t i = 0; i < K; i++)
		memcpy(s + 1 + 4 * i, "\xcc\x81\xcc\xa3", 4);
	char *got = tok_nfc(s, len, &n);
	assert_int_equal(n, 3 + 4 * (size_t)K - 2);
	assert_memory_equal(got, "\xe1\xba\xa1", 3);
	for (size_t i = 0; i < K - 1; i++)
		assert_memory_equal(got + 3 + 2 * i, "\xcc\xa3", 2);
	for (size_t i = 0; i < K; i++)
		assert_memory_equal(got + 3 + 2 * (K - 1) + 2 * i, "\xcc\x81", 2);
	free(got);
	free(s);
}

/* Text the quick check passes comes back as an equal copy; an invalid
 * byte is read as U+FFFD (a starter with no composite). */
static void test_copy_and_invalid(void **state)
{
	static const char ok[] = "caf\xc3\xa9 \xe4\xb8\xad";
	size_t n;
	char *got = tok_nfc(ok, sizeof ok - 1, &n);

	(void)state;
	assert_int_equal(n, sizeof ok - 1);
	assert_memory_equal(got, ok, n);
	assert_ptr_not_equal(got, ok);
	free(got);
	got = tok_nfc("\xff\xcc\x81", 3, &n);
	assert_int_equal(n, 5);
	assert_memory_equal(got, "\xef\xbf\xbd\xcc\x81", 5);
	free(got);
	got = tok_nfc("", 0, &n);
	assert_int_equal(n, 0);
	assert_int_equal(got[0], '\0');
	free(got);
	assert_string_equal(tok_nfc_unicode_version(), "14.0.0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_long_run),
		cmocka_unit_test(test_copy_and_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
