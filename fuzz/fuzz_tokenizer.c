/*
 * fuzz_tokenizer.c — libFuzzer target for the tokenizer layer.
 *
 * Each input is encoded with a small character tokenizer, decoded and
 * labelled id by id, used as sample text for tok_char_from_text(), and
 * parsed as tokenizer JSON.  Checks beyond "no crash": ids stay in range,
 * valid text over the vocabulary round-trips exactly, labels are
 * NUL-terminated valid UTF-8 within their buffer, and a JSON description
 * that parses serialises back to one that gives the same tokenizer.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

static const char vocab_text[] = "abc xyz\n\t\x7f\x01<>"
	"床前明月光，疑是地上霜。\xef\xbf\xbd\xf0\x9f\x98\x80";

/* Whether s[0..len) is valid UTF-8 (per utf8_decode). */
static int valid_utf8(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		int bad;

		i += (size_t)utf8_decode((const unsigned char *)s + i, len - i, &cp, &bad);
		if (bad)
			return 0;
	}
	return 1;
}

static void check_labels(const struct tokenizer *t, const int *ids, int n, size_t size)
{
	char buf[80];
	int i;

	for (i = 0; i < n; i++) {
		size_t len;

		memset(buf, 0x5a, sizeof buf);
		tok_label(t, ids[i], buf, size);
		len = strnlen(buf, size);
		CHECK(len < size);
		CHECK(size == sizeof buf || (unsigned char)buf[size] == 0x5a);
		CHECK(valid_utf8(buf, len));
	}
}

/* Encodes data with t and checks the result as described at the top. */
static void exercise(const struct tokenizer *t, const char *data, size_t size,
		     int add_bos, size_t label_size)
{
	struct err e = { "" };
	int *ids, n, nbad, i, has_unk = 0;
	/* add_bos puts BOS before the text and EOS after it, where t has them. */
	int head = add_bos && t->bos_id >= 0, tail = add_bos && t->eos_id >= 0;
	char *back;

	nbad = tok_encode(t, data, size, add_bos, &ids, &n, &e);
	CHECK(nbad >= 0 && (size_t)nbad <= size);
	CHECK((size_t)n <= size + (size_t)(head + tail) && n >= head + tail);
	CHECK(!head || ids[0] == t->bos_id);
	CHECK(!tail || ids[n - 1] == t->eos_id);
	for (i = 0; i < n; i++) {
		CHECK(ids[i] >= 0 && ids[i] < t->vocab_size);
		has_unk |= ids[i] == t->unk_id;
	}
	back = tok_decode(t, ids + head, n - head - tail);
	if (nbad == 0 && !has_unk)
		CHECK((size == 0 || memcmp(back, data, size) == 0) && back[size] == '\0');
	free(back);
	check_labels(t, ids, n, label_size);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tokenizer *tok;
	struct err e = { "" };
	struct tokenizer *t;
	size_t label_size = size ? 1 + data[0] % 80 : 80;
	char *json;

	if (!tok) {
		tok = tok_char_from_text(vocab_text, sizeof vocab_text - 1, 1, 1, &e);
		CHECK(tok);
	}
	exercise(tok, (const char *)data, size, size & 1, label_size);

	/* The input as sample text for a vocabulary of its own. */
	if (size <= 4096) {
		t = tok_char_from_text((const char *)data, size, size ? 1 + data[0] % 3 : 1,
				       size & 2, &e);
		CHECK(t);
		exercise(t, (const char *)data, size, 1, label_size);
		tok_free(t);
	}

	/* The input as a JSON description. */
	json = malloc(size + 1);
	CHECK(json);
	if (size)
		memcpy(json, data, size);
	json[size] = '\0';
	t = tok_from_json(json, &e);
	free(json);
	if (t) {
		struct tokenizer *u;
		char *again;

		json = t->ops->to_json(t);
		u = tok_from_json(json, &e);
		CHECK(u && u->vocab_size == t->vocab_size && u->bos_id == t->bos_id);
		again = u->ops->to_json(u);
		CHECK(strcmp(json, again) == 0);
		free(again);
		free(json);
		exercise(t, (const char *)data, size, 1, label_size);
		tok_free(u);
		tok_free(t);
	} else {
		fuzz_check_error(&e, NULL);
	}
	return 0;
}
