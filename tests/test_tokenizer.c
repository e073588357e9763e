/*
 * test_tokenizer.c — UTF-8 coding, the character tokenizer, its JSON form,
 * and printable labels.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

#define POEM "床前明月光，疑是地上霜。"
#define EMOJI "\xf0\x9f\x98\x80\xf0\x9f\x8c\x99"	/* 😀🌙 */
#define MIXED "Hello, world!\n\t" POEM " " EMOJI " ~"

/* Decodes all of s into cps (at most max); returns the count. */
static int decode_all(const char *s, size_t len, uint32_t *cps, int max, int *nbad)
{
	size_t i = 0;
	int n = 0;

	*nbad = 0;
	while (i < len && n < max) {
		int bad;

		i += (size_t)utf8_decode((const unsigned char *)s + i, len - i, &cps[n++], &bad);
		*nbad += bad;
	}
	return n;
}

/* A char tokenizer over the code points of s in order of first appearance. */
static struct tokenizer *char_tok_of(const char *s, int with_bos)
{
	uint32_t cps[256], uniq[256];
	int n, nbad, i, j, k = 0;
	struct err e = { "" };
	struct tokenizer *t;

	n = decode_all(s, strlen(s), cps, 256, &nbad);
	assert_int_equal(nbad, 0);
	for (i = 0; i < n; i++) {
		for (j = 0; j < k && uniq[j] != cps[i]; j++)
			;
		if (j == k)
			uniq[k++] = cps[i];
	}
	t = tok_char_new(uniq, k, with_bos, &e);
	assert_non_null(t);
	return t;
}

/* ------------------------------------------------------------------ UTF-8 */

/* Every valid code point encodes to the shortest form of the right length
 * and decodes back to itself, consuming exactly the encoded bytes. */
static void test_utf8_round_trip_all(void **state)
{
	uint32_t cp;

	for (cp = 0; cp <= 0x10FFFF; cp++) {
		unsigned char buf[8] = { 0 };
		uint32_t back = 0;
		int len, bad = -1, expect;

		if (cp >= 0xD800 && cp <= 0xDFFF)
			continue;
		expect = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
		len = utf8_encode(cp, (char *)buf);
		assert_int_equal(len, expect);
		/* Trailing bytes after the sequence must not be consumed. */
		buf[len] = 'x';
		assert_int_equal(utf8_decode(buf, (size_t)len + 1, &back, &bad), len);
		assert_int_equal(back, cp);
		assert_int_equal(bad, 0);
	}
}

/* Code points that have no encoding (surrogates, > U+10FFFF) encode as
 * U+FFFD rather than as garbage. */
static void test_utf8_encode_invalid(void **state)
{
	static const uint32_t bad[] = { 0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF };
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char buf[4];

		assert_int_equal(utf8_encode(bad[i], buf), 3);
		assert_memory_equal(buf, "\xef\xbf\xbd", 3);
	}
}

/* Each class of invalid sequence decodes as U+FFFD, consumes one byte and
 * sets *bad; decoding then resyncs byte by byte. */
static void test_utf8_invalid_classes(void **state)
{
	static const struct {
		const char *what, *s;
		size_t len;
	} cases[] = {
		{ "overlong 2-byte C0", "\xc0\x80", 2 },
		{ "overlong 2-byte C1", "\xc1\xbf", 2 },
		{ "overlong 3-byte", "\xe0\x80\x80", 3 },
		{ "overlong 3-byte max", "\xe0\x9f\xbf", 3 },
		{ "overlong 4-byte", "\xf0\x80\x80\x80", 4 },
		{ "overlong 4-byte max", "\xf0\x8f\xbf\xbf", 4 },
		{ "surrogate D800", "\xed\xa0\x80", 3 },
		{ "surrogate DFFF", "\xed\xbf\xbf", 3 },
		{ "U+110000", "\xf4\x90\x80\x80", 4 },
		{ "F5 lead", "\xf5\x80\x80\x80", 4 },
		{ "F7 lead", "\xf7\xbf\xbf\xbf", 4 },
		{ "truncated 2-byte", "\xc3", 1 },
		{ "truncated 3-byte", "\xe5\xba", 2 },
		{ "truncated 4-byte", "\xf0\x9f\x98", 3 },
		{ "truncated before ASCII", "\xe5\xba" "A", 3 },
		{ "lone continuation 80", "\x80", 1 },
		{ "lone continuation BF", "\xbf", 1 },
		{ "FF", "\xff", 1 },
		{ "FE", "\xfe", 1 },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const unsigned char *s = (const unsigned char *)cases[i].s;
		uint32_t cp = 0;
		int bad = 0;

		if (utf8_decode(s, cases[i].len, &cp, &bad) != 1 || cp != 0xFFFD || bad != 1)
			fail_msg("%s: not rejected byte-wise", cases[i].what);
	}

	/* Resync: the 'A' after a truncated sequence survives. */
	{
		uint32_t cps[8];
		int nbad, n = decode_all("\xe5\xba" "A", 3, cps, 8, &nbad);

		assert_int_equal(n, 3);
		assert_int_equal(nbad, 2);
		assert_int_equal(cps[0], 0xFFFD);
		assert_int_equal(cps[1], 0xFFFD);
		assert_int_equal(cps[2], 'A');
	}
	/* An empty input consumes nothing. */
	{
		uint32_t cp;
		int bad;

		assert_int_equal(utf8_decode((const unsigned char *)"", 0, &cp, &bad), 0);
	}
}

/* -------------------------------------------------------- char tokenizer */

/* Encoding then decoding ASCII + CJK + emoji gives back the same bytes, with
 * one id per code point and no replacements. */
static void test_char_round_trip(void **state)
{
	struct tokenizer *t = char_tok_of(MIXED, 0);
	uint32_t cps[256];
	struct err e = { "" };
	int *ids, n, nbad, ncp, i;
	char *back;

	ncp = decode_all(MIXED, strlen(MIXED), cps, 256, &nbad);
	assert_int_equal(tok_encode(t, MIXED, strlen(MIXED), 0, &ids, &n, &e), 0);
	assert_int_equal(n, ncp);
	for (i = 0; i < n; i++) {
		assert_true(ids[i] > 0 && ids[i] < t->vocab_size);
		assert_int_equal(tok_char_codepoint(t, ids[i]), cps[i]);
	}
	back = tok_decode(t, ids, n);
	assert_string_equal(back, MIXED);
	free(back);
	free(ids);

	/* Empty text encodes to nothing. */
	assert_int_equal(tok_encode(t, "", 0, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 0);
	back = tok_decode(t, ids, n);
	assert_string_equal(back, "");
	free(back);
	free(ids);
	tok_free(t);
}

/* Ids follow the documented layout: unk 0, bos 1 when asked, then the code
 * points in the order given (not sorted). */
static void test_char_id_layout(void **state)
{
	static const uint32_t cps[] = { 'z', 0x4E00, 'a' };
	struct err e = { "" };
	struct tokenizer *t = tok_char_new(cps, 3, 1, &e);
	char buf[16];

	assert_non_null(t);
	assert_int_equal(t->vocab_size, 5);
	assert_int_equal(t->unk_id, 0);
	assert_int_equal(t->bos_id, 1);
	assert_int_equal(tok_char_codepoint(t, 0), -1);
	assert_int_equal(tok_char_codepoint(t, 1), -1);
	assert_int_equal(tok_char_codepoint(t, 2), 'z');
	assert_int_equal(tok_char_codepoint(t, 3), 0x4E00);
	assert_int_equal(tok_char_codepoint(t, 4), 'a');
	assert_int_equal(tok_char_codepoint(t, 5), -1);
	assert_int_equal(tok_char_codepoint(t, -1), -1);
	assert_int_equal(tok_piece(t, 0, buf, sizeof buf), 5);
	assert_string_equal(buf, "<unk>");
	assert_int_equal(tok_piece(t, 1, buf, sizeof buf), 5);
	assert_string_equal(buf, "<bos>");
	assert_int_equal(tok_piece(t, 3, buf, sizeof buf), 3);
	assert_string_equal(buf, "一");
	tok_free(t);

	t = tok_char_new(cps, 3, 0, &e);
	assert_non_null(t);
	assert_int_equal(t->vocab_size, 4);
	assert_int_equal(t->bos_id, -1);
	assert_int_equal(tok_char_codepoint(t, 1), 'z');
	tok_free(t);

	/* An empty vocabulary still has its specials. */
	t = tok_char_new(NULL, 0, 1, &e);
	assert_non_null(t);
	assert_int_equal(t->vocab_size, 2);
	tok_free(t);
}

/* tok_piece returns the full length even when truncating, and always
 * NUL-terminates; ids outside the vocabulary have no bytes. */
static void test_char_piece_truncation(void **state)
{
	struct tokenizer *t = char_tok_of("x" EMOJI, 0);
	char buf[8];

	memset(buf, '#', sizeof buf);
	assert_int_equal(tok_piece(t, 2, buf, 3), 4);
	assert_int_equal(buf[2], '\0');
	assert_int_equal(buf[3], '#');
	assert_int_equal(tok_piece(t, 0, buf, 1), 5);
	assert_int_equal(buf[0], '\0');
	assert_int_equal(tok_piece(t, 99, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	assert_int_equal(tok_piece(t, -1, buf, sizeof buf), 0);
	tok_free(t);
}

/* Code points outside the vocabulary encode as unk without being counted
 * as invalid. */
static void test_char_unseen_is_unk(void **state)
{
	struct tokenizer *t = char_tok_of("ab", 1);
	struct err e = { "" };
	int *ids, n;

	assert_int_equal(tok_encode(t, "a明b😀", strlen("a明b😀"), 0, &ids, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], t->unk_id);
	assert_int_equal(ids[2], 3);
	assert_int_equal(ids[3], t->unk_id);
	free(ids);
	tok_free(t);
}

/* Invalid UTF-8 never fails: each bad byte becomes U+FFFD (its own id when
 * the vocabulary has one, else unk) and the return value counts them. */
static void test_char_invalid_utf8(void **state)
{
	static const char text[] = "a\xff" "b\xe5\xba" "\xc0\xaf";
	struct tokenizer *t = char_tok_of("ab", 0);
	struct err e = { "" };
	int *ids, n, i;
	char *back;

	assert_int_equal(tok_encode(t, text, sizeof text - 1, 0, &ids, &n, &e), 5);
	assert_int_equal(n, 7);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 0);
	assert_int_equal(ids[2], 2);
	for (i = 3; i < 7; i++)
		assert_int_equal(ids[i], 0);
	free(ids);
	tok_free(t);

	t = char_tok_of("ab\xef\xbf\xbd", 0);	/* vocabulary includes U+FFFD */
	assert_int_equal(tok_encode(t, text, sizeof text - 1, 0, &ids, &n, &e), 5);
	assert_int_equal(n, 7);
	assert_int_equal(tok_char_codepoint(t, ids[1]), 0xFFFD);
	back = tok_decode(t, ids, n);
	assert_string_equal(back, "a\xef\xbf\xbd" "b" "\xef\xbf\xbd\xef\xbf\xbd"
			    "\xef\xbf\xbd\xef\xbf\xbd");
	free(back);
	free(ids);

	/* An embedded NUL is an ordinary (unseen) character. */
	assert_int_equal(tok_encode(t, "a\0b", 3, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[1], t->unk_id);
	free(ids);
	tok_free(t);
}

/* BOS comes first only when asked for and when the vocabulary has one. */
static void test_char_bos(void **state)
{
	struct tokenizer *with = char_tok_of("ab", 1), *without = char_tok_of("ab", 0);
	struct err e = { "" };
	int *ids, n;

	assert_int_equal(tok_encode(with, "ab", 2, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], with->bos_id);
	assert_int_equal(ids[1], 2);
	free(ids);

	assert_int_equal(tok_encode(with, "ab", 2, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 2);
	free(ids);

	assert_int_equal(tok_encode(without, "ab", 2, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 1);
	free(ids);

	/* BOS alone for empty text. */
	assert_int_equal(tok_encode(with, "", 0, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], with->bos_id);
	free(ids);

	tok_free(with);
	tok_free(without);
}

/* tok_char_new rejects duplicates and invalid code points with a message
 * naming the code point. */
static void test_char_new_rejects(void **state)
{
	static const uint32_t dup[] = { 'a', 0x4E00, 'b', 0x4E00 };
	static const uint32_t sur[] = { 'a', 0xDC00 };
	static const uint32_t big[] = { 0x110000 };
	struct err e = { "" };

	assert_null(tok_char_new(dup, 4, 0, &e));
	assert_non_null(strstr(e.msg, "U+4E00"));
	assert_non_null(strstr(e.msg, "twice"));
	e.msg[0] = '\0';
	assert_null(tok_char_new(sur, 2, 1, &e));
	assert_non_null(strstr(e.msg, "U+DC00"));
	e.msg[0] = '\0';
	assert_null(tok_char_new(big, 1, 1, &e));
	assert_non_null(strstr(e.msg, "U+110000"));
	e.msg[0] = '\0';
	assert_null(tok_char_new(big, -1, 1, &e));
	assert_true(e.msg[0] != '\0');
	/* Errors can be ignored by passing NULL. */
	assert_null(tok_char_new(dup, 4, 0, NULL));
}

/* A 10k-entry vocabulary given in shuffled order maps every code point to
 * its own id (exercises the sorted lookup beyond ASCII). */
static void test_char_large_vocab(void **state)
{
	enum { N = 10000 };
	uint32_t *cps = malloc(N * sizeof *cps);
	char *text = malloc(N * 4 + 1);
	struct err e = { "" };
	struct tokenizer *t;
	size_t len = 0;
	int *ids, n, i;
	uint32_t seed = 12345;

	for (i = 0; i < N; i++)
		cps[i] = 0x4E00 + (uint32_t)i;
	for (i = N - 1; i > 0; i--) {
		int j;
		uint32_t tmp;

		seed = seed * 1103515245u + 12345u;
		j = (int)((seed >> 8) % (uint32_t)(i + 1));
		tmp = cps[i];
		cps[i] = cps[j];
		cps[j] = tmp;
	}
	t = tok_char_new(cps, N, 1, &e);
	assert_non_null(t);
	for (i = 0; i < N; i++)
		len += (size_t)utf8_encode(0x4E00 + (uint32_t)i, text + len);
	assert_int_equal(tok_encode(t, text, len, 0, &ids, &n, &e), 0);
	assert_int_equal(n, N);
	for (i = 0; i < N; i++)
		assert_int_equal(tok_char_codepoint(t, ids[i]), 0x4E00 + i);
	free(ids);
	tok_free(t);
	free(text);
	free(cps);
}

/* ------------------------------------------------------------------- JSON */

/* to_json is compact and deterministic, and tok_from_json gives back a
 * tokenizer with the same vocabulary, specials and encodings. */
static void test_json_round_trip(void **state)
{
	static const uint32_t cps[] = { 'b', 0x4E00, 'a', 0x1F600 };
	struct err e = { "" };
	struct tokenizer *t = tok_char_new(cps, 4, 1, &e), *u;
	char *json, *json2;
	int *a, *b, na, nb, with_bos;

	json = t->ops->to_json(t);
	assert_string_equal(json, "{\"type\":\"char\",\"bos\":true,\"chars\":[98,19968,97,128512]}");
	tok_free(t);
	free(json);

	for (with_bos = 0; with_bos <= 1; with_bos++) {
		t = char_tok_of(MIXED, with_bos);
		json = t->ops->to_json(t);
		u = tok_from_json(json, &e);
		assert_non_null(u);
		assert_string_equal(u->ops->kind, "char");
		assert_int_equal(u->vocab_size, t->vocab_size);
		assert_int_equal(u->bos_id, t->bos_id);
		assert_int_equal(u->unk_id, t->unk_id);
		assert_int_equal(tok_encode(t, MIXED "?", strlen(MIXED) + 1, 1, &a, &na, &e), 0);
		assert_int_equal(tok_encode(u, MIXED "?", strlen(MIXED) + 1, 1, &b, &nb, &e), 0);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, (size_t)na * sizeof *a);
		json2 = u->ops->to_json(u);
		assert_string_equal(json, json2);
		free(a);
		free(b);
		free(json);
		free(json2);
		tok_free(t);
		tok_free(u);
	}
}

/* tok_from_json rejects malformed descriptions with a one-line message
 * that says what is wrong. */
static void test_json_rejects(void **state)
{
	static const struct {
		const char *json, *expect;
	} cases[] = {
		{ "not json", "line 1" },
		{ "", "line" },
		{ "[1,2]", "object" },
		{ "{\"bos\":true,\"chars\":[]}", "\"type\"" },
		{ "{\"type\":7,\"bos\":true,\"chars\":[]}", "\"type\"" },
		{ "{\"type\":\"sentencepiece\",\"bos\":true,\"chars\":[]}", "unknown type \"sentencepiece\"" },
		{ "{\"type\":\"wordpiece\",\"bos\":true,\"chars\":[]}", "\"json\" (the tokenizer.json text) is missing" },
		{ "{\"type\":\"char\\u0000x\",\"bos\":true,\"chars\":[]}", "line 1" },
		{ "{\"type\":\"char\",\"chars\":[]}", "\"bos\"" },
		{ "{\"type\":\"char\",\"bos\":1,\"chars\":[]}", "\"bos\"" },
		{ "{\"type\":\"char\",\"bos\":true}", "\"chars\"" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":\"abc\"}", "\"chars\"" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[97,\"b\"]}", "chars[1] is not an integer" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[97,98.5]}", "chars[1] is not an integer" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[97,98,97]}", "U+0061 appears twice" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[97,55296]}", "chars[1] = 55296" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[1114112]}", "chars[0] = 1114112" },
		{ "{\"type\":\"char\",\"bos\":true,\"chars\":[-1]}", "chars[0] = -1" },
		{ "{\"type\":\"char\",\"type\":\"char\",\"bos\":true,\"chars\":[]}", "duplicate" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct err e = { "" };
		struct tokenizer *t = tok_from_json(cases[i].json, &e);

		if (t) {
			tok_free(t);
			fail_msg("accepted: %s", cases[i].json);
		}
		if (!strstr(e.msg, cases[i].expect))
			fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].json,
				 e.msg, cases[i].expect);
		if (strchr(e.msg, '\n'))
			fail_msg("%s: message is not one line", cases[i].json);
	}
	assert_null(tok_from_json(NULL, NULL));
}

/* ----------------------------------------------------------------- labels */

/* A tokenizer whose pieces are arbitrary bytes, as byte-level BPE allows. */
static const struct {
	const char *s;
	int len;
} fake_pieces[] = {
	{ "<unk>", 5 },
	{ "\xe5\xba", 2 },		/* the first two bytes of 库 */
	{ "a\xff" "b", 3 },
	{ "\xe5\xba\x93\xe5", 4 },	/* 库 then a stray lead byte */
	{ " the\n", 5 },
};

static int fake_piece(const struct tokenizer *t, int id, char *buf, size_t size)
{
	size_t len = (size_t)fake_pieces[id].len;

	if (size) {
		size_t k = len < size - 1 ? len : size - 1;

		memcpy(buf, fake_pieces[id].s, k);
		buf[k] = '\0';
	}
	return (int)len;
}

static const struct tokenizer_ops fake_ops = {
	.kind = "fake",
	.piece = fake_piece,
};

static struct tokenizer fake_tok = {
	.ops = &fake_ops,
	.vocab_size = 5,
	.bos_id = -1,
	.unk_id = 0,
};

static void label_of(const struct tokenizer *t, uint32_t cp, char *buf, size_t size)
{
	int id;

	for (id = 0; id < t->vocab_size; id++) {
		if (tok_char_codepoint(t, id) == (int32_t)cp) {
			tok_label(t, id, buf, size);
			return;
		}
	}
	fail_msg("U+%04X not in vocabulary", (unsigned)cp);
}

/* Labels: whitespace as ␣ ⏎ ⇥, C0 controls as control pictures, DEL as
 * <7f>, specials by name, CJK as itself, invalid bytes as hex. */
static void test_label(void **state)
{
	static const uint32_t cps[] = { ' ', '\n', '\t', 0x07, 0x00, '\r', 0x7F,
					0x85, 0x5E93, 'x', 0x1F600 };
	struct err e = { "" };
	struct tokenizer *t = tok_char_new(cps, sizeof cps / sizeof cps[0], 1, &e);
	char buf[64];

	assert_non_null(t);
	label_of(t, ' ', buf, sizeof buf);
	assert_string_equal(buf, "␣");
	label_of(t, '\n', buf, sizeof buf);
	assert_string_equal(buf, "⏎");
	label_of(t, '\t', buf, sizeof buf);
	assert_string_equal(buf, "⇥");
	label_of(t, 0x07, buf, sizeof buf);
	assert_string_equal(buf, "␇");
	label_of(t, 0x00, buf, sizeof buf);
	assert_string_equal(buf, "␀");
	label_of(t, '\r', buf, sizeof buf);
	assert_string_equal(buf, "␍");
	label_of(t, 0x7F, buf, sizeof buf);
	assert_string_equal(buf, "<7f>");
	label_of(t, 0x85, buf, sizeof buf);
	assert_string_equal(buf, "<U+0085>");
	label_of(t, 0x5E93, buf, sizeof buf);
	assert_string_equal(buf, "库");
	label_of(t, 'x', buf, sizeof buf);
	assert_string_equal(buf, "x");
	label_of(t, 0x1F600, buf, sizeof buf);
	assert_string_equal(buf, "😀");
	tok_label(t, t->unk_id, buf, sizeof buf);
	assert_string_equal(buf, "<unk>");
	tok_label(t, t->bos_id, buf, sizeof buf);
	assert_string_equal(buf, "<bos>");
	tok_label(t, t->vocab_size, buf, sizeof buf);
	assert_string_equal(buf, "<bad id 13>");
	tok_free(t);

	tok_label(&fake_tok, 1, buf, sizeof buf);
	assert_string_equal(buf, "<e5 ba>");
	tok_label(&fake_tok, 2, buf, sizeof buf);
	assert_string_equal(buf, "a<ff>b");
	tok_label(&fake_tok, 3, buf, sizeof buf);
	assert_string_equal(buf, "库<e5>");
	tok_label(&fake_tok, 4, buf, sizeof buf);
	assert_string_equal(buf, "␣the⏎");
}

/* However small the buffer, a label is a NUL-terminated prefix of the full
 * label that ends on a whole unit (never inside a code point or hex escape),
 * and nothing past size is written. */
static void test_label_truncation(void **state)
{
	static const uint32_t cps[] = { 0x5E93 };
	struct err e = { "" };
	struct tokenizer *c = tok_char_new(cps, 1, 0, &e);
	struct {
		const struct tokenizer *t;
		int id, hex;
	} cases[] = { { c, 1, 0 }, { c, 0, 0 }, { &fake_tok, 1, 1 },
		      { &fake_tok, 3, 1 }, { &fake_tok, 4, 0 } };
	size_t i, size;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char full[64], buf[64];

		tok_label(cases[i].t, cases[i].id, full, sizeof full);
		for (size = 1; size <= strlen(full) + 1; size++) {
			size_t len, k;
			int nbad, opened;
			uint32_t tmp[64];

			memset(buf, '#', sizeof buf);
			tok_label(cases[i].t, cases[i].id, buf, size);
			len = strlen(buf);
			assert_true(len < size);
			assert_int_equal(buf[size], '#');
			assert_memory_equal(buf, full, len);
			decode_all(buf, len, tmp, 64, &nbad);
			assert_int_equal(nbad, 0);
			/* A hex escape is never cut: each '<' has its '>'. */
			for (k = 0, opened = 0; k < len && cases[i].hex; k++)
				opened += (buf[k] == '<') - (buf[k] == '>');
			assert_int_equal(opened, 0);
		}
		/* Size is the exact length + 1: the whole label fits. */
		tok_label(cases[i].t, cases[i].id, buf, strlen(full) + 1);
		assert_string_equal(buf, full);
	}
	/* Size 0 writes nothing. */
	{
		char one = '#';

		tok_label(c, 1, &one, 0);
		assert_int_equal(one, '#');
	}
	tok_free(c);
}

/* ------------------------------------------------------ building from text */

/* tok_char_from_text keeps code points seen at least min_count times, in
 * code point order; the rest encode as unk. */
static void test_char_from_text(void **state)
{
	static const char text[] = "bbbaac明明明月\xff\xff\xff";
	struct err e = { "" };
	struct tokenizer *t = tok_char_from_text(text, sizeof text - 1, 2, 1, &e);
	char *json;
	int *ids, n;

	assert_non_null(t);
	json = t->ops->to_json(t);
	/* a, b, 明 and U+FFFD (three invalid bytes) qualify; c and 月 do not. */
	assert_string_equal(json, "{\"type\":\"char\",\"bos\":true,\"chars\":[97,98,26126,65533]}");
	free(json);
	assert_int_equal(tok_encode(t, "ac月b", strlen("ac月b"), 0, &ids, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], t->unk_id);
	assert_int_equal(ids[2], t->unk_id);
	assert_int_equal(ids[3], 3);
	free(ids);
	tok_free(t);

	/* min_count 1 (and anything below) keeps every code point. */
	t = tok_char_from_text(text, sizeof text - 1, 0, 0, &e);
	assert_non_null(t);
	assert_int_equal(t->vocab_size, 1 + 6);
	tok_free(t);

	/* Empty text gives the specials only. */
	t = tok_char_from_text("", 0, 1, 1, &e);
	assert_non_null(t);
	assert_int_equal(t->vocab_size, 2);
	tok_free(t);
}

/* With many distinct code points (10k CJK, each twice, in descending order,
 * plus one seen once), counting stays exact and the order ascending. */
static void test_char_from_text_many(void **state)
{
	enum { N = 10000 };
	char *text = malloc(2 * N * 3 + 4);
	struct err e = { "" };
	struct tokenizer *t;
	size_t len = 0;
	int i;

	for (i = N - 1; i >= 0; i--) {
		len += (size_t)utf8_encode(0x4E00 + (uint32_t)i, text + len);
		len += (size_t)utf8_encode(0x4E00 + (uint32_t)i, text + len);
	}
	len += (size_t)utf8_encode(0x1F600, text + len);
	t = tok_char_from_text(text, len, 2, 0, &e);
	assert_non_null(t);
	assert_int_equal(t->vocab_size, 1 + N);
	for (i = 0; i < N; i++)
		assert_int_equal(tok_char_codepoint(t, 1 + i), 0x4E00 + i);
	tok_free(t);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_round_trip_all),
		cmocka_unit_test(test_utf8_encode_invalid),
		cmocka_unit_test(test_utf8_invalid_classes),
		cmocka_unit_test(test_char_round_trip),
		cmocka_unit_test(test_char_id_layout),
		cmocka_unit_test(test_char_piece_truncation),
		cmocka_unit_test(test_char_unseen_is_unk),
		cmocka_unit_test(test_char_invalid_utf8),
		cmocka_unit_test(test_char_bos),
		cmocka_unit_test(test_char_new_rejects),
		cmocka_unit_test(test_char_large_vocab),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_rejects),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_label_truncation),
		cmocka_unit_test(test_char_from_text),
		cmocka_unit_test(test_char_from_text_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
