/*
 * test_sha256.c — SHA-256 (src/base/sha256.c) against the FIPS 180-4
 * examples and the NIST test vectors: "", "abc", the 448-bit
 * "abcdbcdecdefdefg..." message, the 896-bit one, and one million 'a's;
 * each fed whole and in pieces of every size from 1 to 130 bytes (the
 * million in pieces of 1, 55, 56, 63, 64, 65 and 4099), so that every way
 * of filling and crossing a block is taken.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static void digest_in_pieces(const char *msg, size_t len, size_t piece, char hex[SHA256_HEX])
{
	struct sha256 c;
	sha256_init(&c);
	for (size_t i = 0; i < len; i += piece)
		sha256_update(&c, msg + i, len - i < piece ? len - i : piece);
	sha256_final(&c, hex);
}

static void expect(const char *msg, size_t len, const char *want)
{
	char hex[SHA256_HEX];
	digest_in_pieces(msg, len, len ? len : 1, hex);
	assert_string_equal(hex, want);
	static const size_t few[] = { 1, 55, 56, 63, 64, 65, 4099 };
	size_t n = len <= 4096 ? 130 : sizeof few / sizeof few[0];
	for (size_t i = 0; i < n; i++) {
		digest_in_pieces(msg, len, len <= 4096 ? i + 1 : few[i], hex);
		assert_string_equal(hex, want);
	}
}

static void test_empty(void **state)
{
	expect("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
	expect("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_448_bits(void **state)
{
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_int_equal(strlen(m) * 8, 448);
	expect(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bits(void **state)
{
	const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			"ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	assert_int_equal(strlen(m) * 8, 896);
	expect(m, strlen(m), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a(void **state)
{
	size_t n = 1000000;
	char *m = malloc(n);
	assert_non_null(m);
	memset(m, 'a', n);
	expect(m, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
