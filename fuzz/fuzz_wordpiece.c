/*
 * fuzz_wordpiece.c — libFuzzer target for BERT's WordPiece tokenizer
 * (tok-wordpiece.c).
 *
 * Each input is read three times: as a tokenizer.json file and as a
 * vocab.txt, each of which either loads or is refused with a one-line
 * message and, when it loads, encodes a few fixed texts and survives the
 * to_json round trip with the same ids; and as text, encoded by a fixed
 * small BERT-style tokenizer (every normalizer option on, added tokens,
 * max_input_chars_per_word 8).  Checks beyond "no crash": messages are one
 * line, ids stay in the vocabulary, [CLS] comes first and [SEP] last with
 * add_bos, and every piece is NUL-terminated within its buffer.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "tok-wordpiece.h"

static const char fixed_json[] =
	"{\"added_tokens\": [{\"id\": 0, \"content\": \"[UNK]\", \"special\": true}, "
	"{\"id\": 1, \"content\": \"[CLS]\", \"special\": true}, "
	"{\"id\": 2, \"content\": \"[SEP]\", \"special\": true}, "
	"{\"id\": 3, \"content\": \"[MASK]\", \"special\": true}], "
	"\"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
	"\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true}, "
	"\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, "
	"\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 2], "
	"\"cls\": [\"[CLS]\", 1]}, "
	"\"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true}, "
	"\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
	"\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 8, "
	"\"vocab\": {\"[UNK]\": 0, \"[CLS]\": 1, \"[SEP]\": 2, \"[MASK]\": 3, \"a\": 4, "
	"\"b\": 5, \"##a\": 6, \"##b\": 7, \"ab\": 8, \"##ab\": 9, \".\": 10, \"\\u4e2d\": 11, "
	"\"e\": 12, \"##e\": 13, \"\\u03c3\": 14, \"\\u03c2\": 15, \"##\\u03c2\": 16}}}";

static struct tokenizer *fixed;

static void check_encode(const struct tokenizer *t, const char *text, size_t len)
{
	struct err e = { "" };
	int *ids = NULL, n = 0;
	int bad = tok_encode(t, text, len, 1, &ids, &n, &e);

	if (bad < 0) {
		CHECK(e.msg[0] && !strchr(e.msg, '\n'));
		return;
	}
	CHECK(t->bos_id < 0 || (n >= 1 && ids[0] == t->bos_id));
	CHECK(t->eos_id < 0 || (n >= 1 && ids[n - 1] == t->eos_id));
	for (int i = 0; i < n; i++) {
		char buf[16];

		CHECK(ids[i] >= 0 && ids[i] < t->vocab_size);
		memset(buf, 0x5a, sizeof buf);
		tok_piece(t, ids[i], buf, 8);
		CHECK(strnlen(buf, 8) < 8 && (unsigned char)buf[8] == 0x5a);
	}
	char *back = tok_decode(t, ids, n);
	CHECK(back != NULL);
	free(back);
	free(ids);
}

/* Encodes samples with t and checks the to_json round trip; frees t. */
static void check_loaded(struct tokenizer *t)
{
	static const char *const samples[] = { "hello world", "Ab.AB \xe4\xb8\xad", "[MASK]ab",
					       "\xce\xa3\xce\xa3 \xc3\xa9\xff", "" };
	struct err e = { "" };

	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++)
		check_encode(t, samples[i], strlen(samples[i]));
	char *desc = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(desc, &e);
	CHECK(u != NULL);
	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
		int *a = NULL, *b = NULL, na = 0, nb = 0;
		int ra = tok_encode(t, samples[i], strlen(samples[i]), 1, &a, &na, &e);
		int rb = tok_encode(u, samples[i], strlen(samples[i]), 1, &b, &nb, &e);

		CHECK(ra == rb && na == nb && (na == 0 || !memcmp(a, b, (size_t)na * sizeof *a)));
		free(a);
		free(b);
	}
	free(desc);
	tok_free(u);
	tok_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { "" };
	const char *text = (const char *)data;
	struct tokenizer *t;

	if (!fixed) {
		fixed = tok_wordpiece_from_text(fixed_json, sizeof fixed_json - 1, "fixed", &e);
		CHECK(fixed != NULL);
	}
	check_encode(fixed, text, size);
	if ((t = tok_wordpiece_from_text(text, size, "tokenizer.json", &e)))
		check_loaded(t);
	else
		CHECK(e.msg[0] && !strchr(e.msg, '\n'));
	if ((t = tok_wordpiece_from_vocab(text, size, NULL, 0, "vocab.txt", &e)))
		check_loaded(t);
	else
		CHECK(e.msg[0] && !strchr(e.msg, '\n'));
	return 0;
}
