/*
 * test_bpe.c — GPT-2 byte-level BPE (src/text/tok-bpe.c) against
 * ../shared/tokenizers/gpt2 (override the shared directory with
 * ATTNSCOPE_SHARED).
 *
 * Expectations: tests/data/gpt2_expect.tsv, 305 strings (English, code,
 * whitespace runs, contractions, digits, emoji, CJK, odd-looking valid text
 * and invalid UTF-8) with the ids produced by an independent implementation,
 * OpenAI's tiktoken 1.0.22 (npm "tiktoken", its Rust core compiled to WASM;
 * encoding "gpt2", encode_ordinary), every row cross-checked against
 * gpt-3-encoder 1.1.4 (a JS port of GPT-2's encoder.py; no disagreement).
 * Regenerate with:
 *   mkdir -p /tmp/gen && cd /tmp/gen && npm install tiktoken@1.0.22 gpt-3-encoder@1.1.4
 *   cd - && NODE_PATH=/tmp/gen/node_modules node tests/gen/gen_gpt2.js > tests/data/gpt2_expect.tsv
 * Invalid UTF-8 rows: each bad byte is replaced by U+FFFD before encoding
 * (tokenizer.h), so those rows expect the ids of the replaced text and a
 * decode equal to the replaced text.
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

#include <jansson.h>

#include "tok_expect.h"
#include "tokenizer.h"
#include "util.h"

static char gpt2_dir[512];

static struct tokenizer *gpt2(void)
{
	static struct tokenizer *t;
	struct err e = { "" };

	if (!t) {
		snprintf(gpt2_dir, sizeof gpt2_dir, "%s/tokenizers/gpt2", tok_expect_shared_dir());
		t = tok_bpe_load(gpt2_dir, &e);
		if (!t)
			print_error("cannot load the GPT-2 tokenizer: %s\n", e.msg);
		assert_non_null(t);
	}
	return t;
}

/* ---------------------------------------------------------------- tests */

static void test_load(void **state)
{
	char dir[512];
	struct err e = { "" };
	double t0 = now_ms();

	snprintf(dir, sizeof dir, "%s/tokenizers/gpt2", tok_expect_shared_dir());
	struct tokenizer *t = tok_bpe_load(dir, &e);
	double ms = now_ms() - t0;

	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	print_message("GPT-2 vocabulary (50257 tokens, 50000 merges) loaded in %.0f ms\n", ms);
	assert_string_equal(t->ops->kind, "gpt2-bpe");
	assert_int_equal(t->vocab_size, 50257);
	assert_int_equal(t->bos_id, 50256);
	assert_int_equal(t->unk_id, -1);
	tok_free(t);
}

static void test_expectations(void **state)
{
	assert_int_equal(tok_expect_check(gpt2(), "tests/data/gpt2_expect.tsv", 200), 0);
}

static void test_pieces_and_labels(void **state)
{
	struct tokenizer *t = gpt2();
	char buf[64];
	int *ids, n;

	/* 262 is " the" ("Ġthe"): exact bytes, and a visible space in labels */
	assert_int_equal(tok_piece(t, 262, buf, sizeof buf), 4);
	assert_string_equal(buf, " the");
	tok_label(t, 262, buf, sizeof buf);
	assert_string_equal(buf, "\xe2\x90\xa3the");
	tok_piece(t, 50256, buf, sizeof buf);
	assert_string_equal(buf, "<|endoftext|>");
	tok_label(t, 198, buf, sizeof buf); /* "Ċ" = newline */
	assert_string_equal(buf, "\xe2\x8f\x8e");

	/* 床 (e5 ba 8a) is two tokens, e5 ba and 8a: partial UTF-8 shows as bytes */
	assert_int_equal(tok_encode(t, "\xe5\xba\x8a", 3, 0, &ids, &n, NULL), 0);
	assert_int_equal(n, 2);
	tok_label(t, ids[0], buf, sizeof buf);
	assert_string_equal(buf, "<e5 ba>");
	tok_label(t, ids[1], buf, sizeof buf);
	assert_string_equal(buf, "<8a>");
	free(ids);

	/* add_bos puts <|endoftext|> first */
	assert_int_equal(tok_encode(t, "Hi", 2, 1, &ids, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 50256);
	assert_int_equal(ids[1], 17250);
	free(ids);
}

/* Long runs of one character round-trip; the cache gives equal answers.
 * (Their speed is bench/bench_load's business, not a test's.) */
static void test_long_runs_and_cache(void **state)
{
	struct tokenizer *t = gpt2();
	size_t n = 200000;
	char *s = xmalloc(n + 1);
	static const char fill[] = { ' ', '7', 'a', '\n' };

	for (size_t k = 0; k < sizeof fill; k++) {
		memset(s, fill[k], n);
		s[n] = '\0';
		int *ids, m;
		assert_int_equal(tok_encode(t, s, n, 0, &ids, &m, NULL), 0);
		char *back = tok_decode(t, ids, m);
		assert_true(strcmp(back, s) == 0);
		free(back);
		free(ids);
	}
	free(s);

	const char *text = "The cache must not change anything: the the the, 123 123.";
	int *a, na, *b, nb;
	assert_int_equal(tok_encode(t, text, strlen(text), 0, &a, &na, NULL), 0);
	assert_int_equal(tok_encode(t, text, strlen(text), 0, &b, &nb, NULL), 0);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, (size_t)na * sizeof *a);
	free(a);
	free(b);
}

/* to_json -> tok_from_json gives the same tokenizer. */
static void test_json_round_trip(void **state)
{
	struct tokenizer *t = gpt2();
	struct err e = { "" };
	char *json = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(json, &e);

	free(json);
	if (!u)
		print_error("%s\n", e.msg);
	assert_non_null(u);
	assert_int_equal(u->vocab_size, t->vocab_size);
	assert_int_equal(u->bos_id, t->bos_id);
	for (int id = 0; id < t->vocab_size; id++) {
		char a[256], b[256];
		int la = tok_piece(t, id, a, sizeof a), lb = tok_piece(u, id, b, sizeof b);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, (size_t)la);
	}
	assert_int_equal(tok_expect_check(u, "tests/data/gpt2_expect.tsv", 200), 0);
	tok_free(u);
}

/* RoBERTa's wrapping (tok_bpe_wrap): <s> ... </s> around the text with
 * add_bos, nothing without; kept through to_json; a vocabulary without
 * the pieces is refused and left as it was. */
static void test_wrap(void **state)
{
	struct err e = { "" };
	char path[600];
	(void)state;
	gpt2();
	snprintf(path, sizeof path, "%s/vocab.json", gpt2_dir);
	json_t *vocab = json_load_file(path, 0, NULL); /* GPT-2's bytes, <s> and </s> after */
	assert_non_null(vocab);
	json_object_set_new(vocab, "<s>", json_integer(50257));
	json_object_set_new(vocab, "</s>", json_integer(50258));
	json_t *root = json_pack("{s:s, s:o, s:[]}", "type", "gpt2-bpe", "vocab", vocab, "merges");
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tokenizer *t = tok_from_json(text, &e);
	free(text);
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	assert_int_equal(tok_bpe_wrap(t, "<s>", "<mask>", &e), -1);
	assert_non_null(strstr(e.msg, "the vocabulary has no <mask>"));
	assert_int_equal(t->eos_id, -1);
	assert_int_equal(tok_bpe_wrap(t, "<s>", "</s>", &e), 0);
	for (int round = 0; round < 2; round++) {
		int *ids, n; /* no merges: one id a byte, 'h' 71 and 'i' 72 */
		assert_int_equal(tok_encode(t, "hih", 3, 1, &ids, &n, &e), 0);
		assert_int_equal(n, 5);
		int want[5] = { 50257, 71, 72, 71, 50258 };
		for (int i = 0; i < 5; i++)
			assert_int_equal(ids[i], want[i]);
		free(ids);
		assert_int_equal(tok_encode(t, "hih", 3, 0, &ids, &n, &e), 0);
		assert_int_equal(n, 3);
		free(ids);
		char *json = t->ops->to_json(t);
		tok_free(t);
		t = tok_from_json(json, &e); /* the second round: as a checkpoint keeps it */
		free(json);
		assert_non_null(t);
	}
	tok_free(t);
	vocab = json_load_file(path, 0, NULL); /* an eos past the vocabulary: refused */
	root = json_pack("{s:s, s:o, s:[], s:i, s:i}", "type", "gpt2-bpe", "vocab", vocab, "merges",
			 "bos", 0, "eos", 50257);
	text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	t = tok_from_json(text, &e);
	free(text);
	assert_null(t);
	assert_non_null(strstr(e.msg, "\"bos\" and \"eos\" must both be ids below 50257"));
}

/* A tokenizer.json (merges as "A B" strings, then as [A, B] pairs) built
 * from vocab.json and merges.txt encodes like them. */
static void test_tokenizer_json(void **state)
{
	char path[600], dir[] = "/tmp/attnscope-bpe-XXXXXX";
	struct err e = { "" };
	json_error_t jerr;
	size_t len;

	gpt2();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/vocab.json", gpt2_dir);
	json_t *vocab = json_load_file(path, 0, &jerr);
	assert_non_null(vocab);
	snprintf(path, sizeof path, "%s/merges.txt", gpt2_dir);
	char *text = read_file(path, &len, &e);
	assert_non_null(text);
	for (int form = 0; form < 2; form++) {
		json_t *merges = json_array(), *model = json_object(), *root = json_object();
		char *save = NULL;
		char *copy = xstrdup(text);
		for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (line[0] == '#')
				continue;
			if (form == 0) {
				json_array_append_new(merges, json_string(line));
			} else {
				char *sp = strchr(line, ' ');
				*sp = '\0';
				json_t *pair = json_array();
				json_array_append_new(pair, json_string(line));
				json_array_append_new(pair, json_string(sp + 1));
				json_array_append_new(merges, pair);
			}
		}
		free(copy);
		json_object_set_new(model, "type", json_string("BPE"));
		json_object_set(model, "vocab", vocab);
		json_object_set_new(model, "merges", merges);
		json_object_set_new(root, "model", model);
		snprintf(path, sizeof path, "%s/tokenizer.json", dir);
		assert_int_equal(json_dump_file(root, path, JSON_COMPACT), 0);
		json_decref(root);

		/* by file, then by directory (no vocab.json there) */
		struct tokenizer *u = tok_bpe_load(path, &e);
		if (!u)
			print_error("%s\n", e.msg);
		assert_non_null(u);
		assert_int_equal(tok_expect_check(u, "tests/data/gpt2_expect.tsv", 200), 0);
		tok_free(u);
		u = tok_bpe_load(dir, &e);
		assert_non_null(u);
		assert_int_equal(u->vocab_size, 50257);
		tok_free(u);
		unlink(path);
	}
	free(text);
	json_decref(vocab);
	rmdir(dir);
}

static int group_teardown(void **state)
{
	tok_free(gpt2());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_expectations),
		cmocka_unit_test(test_pieces_and_labels),
		cmocka_unit_test(test_long_runs_and_cache),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_tokenizer_json),
		cmocka_unit_test(test_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
