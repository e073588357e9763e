/*
 * test_sha1.c — SHA-1 (src/base/sha1.c) against the FIPS 180-4 examples
 * and NIST vectors ("", "abc", the 448- and 896-bit messages, one million
 * 'a's), each fed whole and in pieces of every size from 1 to 130 bytes
 * (the million in pieces of 1, 55, 56, 63, 64, 65 and 4099), and the Git
 * blob id against `git hash-object` of "", "hello world\n" and 100000 'x's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sha1.h"

static void digest_in_pieces(const char *msg, size_t len, size_t piece, bool git,
			     char hex[SHA1_HEX])
{
	struct sha1 c;
	if (git)
		sha1_git_blob(&c, len);
	else
		sha1_init(&c);
	for (size_t i = 0; i < len; i += piece)
		sha1_update(&c, msg + i, len - i < piece ? len - i : piece);
	sha1_final(&c, hex);
}

static void expect_as(const char *msg, size_t len, bool git, const char *want)
{
	char hex[SHA1_HEX];
	digest_in_pieces(msg, len, len ? len : 1, git, hex);
	assert_string_equal(hex, want);
	static const size_t few[] = { 1, 55, 56, 63, 64, 65, 4099 };
	size_t n = len <= 4096 ? 130 : sizeof few / sizeof few[0];
	for (size_t i = 0; i < n; i++) {
		digest_in_pieces(msg, len, len <= 4096 ? i + 1 : few[i], git, hex);
		assert_string_equal(hex, want);
	}
}

static void expect(const char *msg, size_t len, const char *want)
{
	expect_as(msg, len, false, want);
}

static void test_empty(void **state)
{
	expect("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

static void test_abc(void **state)
{
	expect("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
}

static void test_448_bits(void **state)
{
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_int_equal(strlen(m) * 8, 448);
	expect(m, strlen(m), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void test_896_bits(void **state)
{
	const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			"ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	assert_int_equal(strlen(m) * 8, 896);
	expect(m, strlen(m), "a49b2446a02c645bf419f995b67091253a04a259");
}

static void test_million_a(void **state)
{
	size_t n = 1000000;
	char *m = malloc(n);
	assert_non_null(m);
	memset(m, 'a', n);
	expect(m, n, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(m);
}

/* the ids `git hash-object --stdin` prints for the same bytes */
static void test_git_blob(void **state)
{
	expect_as("", 0, true, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	expect_as("hello world\n", 12, true, "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
	char *m = malloc(100000);
	assert_non_null(m);
	memset(m, 'x', 100000);
	expect_as(m, 100000, true, "56e0448612acbb706b96b7e8e46a210f15386a38");
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_abc),
		cmocka_unit_test(test_448_bits),
		cmocka_unit_test(test_896_bits),
		cmocka_unit_test(test_million_a),
		cmocka_unit_test(test_git_blob),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
