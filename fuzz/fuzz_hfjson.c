/*
 * fuzz_hfjson.c — libFuzzer target for Hugging Face tokenizer.json files
 * (tok-hfjson.c).
 *
 * Each input is read twice: as a tokenizer.json file, which either loads or
 * is refused with a one-line message, and when it loads encodes a few
 * fixed texts; and as text, encoded by a fixed sentencepiece-style
 * tokenizer (Metaspace, added tokens with lstrip/rstrip, fuse_unk), by a
 * byte-level one with an NFC normalizer, a Split regex and byte fallback,
 * and by a Gemma-style one (Replace normalizer, a MergedWithPrevious Split,
 * byte fallback, added "\n" and "▁▁").
 * Checks beyond "no crash": messages are one line, ids stay in the
 * vocabulary, every piece is NUL-terminated within its buffer, a loaded
 * tokenizer survives the to_json round trip with the same ids, and NFC
 * (tok_nfc) of the text with invalid bytes replaced is valid UTF-8 that
 * NFC leaves as it is.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "render.h"
#include "tok-common.h"
#include "tok-hfjson.h"
#include "utf8.h"

static const char sp_json[] =
	"{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, "
	"{\"id\": 1, \"content\": \"<s>\", \"special\": true}, "
	"{\"id\": 7, \"content\": \"<x>\", \"special\": true, \"lstrip\": true, "
	"\"rstrip\": true}], "
	"\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
	"\"prepend\": \"\\u2581\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
	"\"content\": \"\\u2581\"}]}, "
	"\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, "
	"\"byte_fallback\": false, \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"\\u2581\": 2, "
	"\"a\": 3, \"b\": 4, \"\\u2581a\": 5, \"\\u2581ab\": 6, \"<x>\": 7}, "
	"\"merges\": [\"\\u2581 a\", \"\\u2581a b\"]}}";

/* Gemma-style: Replace " " by "\u2581", a MergedWithPrevious Split on " "
 * that has nothing left to split, byte fallback for a few bytes, added
 * tokens that are runs of "\u2581" and newlines. */
static const char gm_json[] =
	"{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, "
	"{\"id\": 1, \"content\": \"<bos>\", \"special\": true}, "
	"{\"id\": 2, \"content\": \"\\n\"}, {\"id\": 3, \"content\": \"\\u2581\\u2581\"}], "
	"\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
	"\"content\": \"\\u2581\"}, "
	"\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
	"\"behavior\": \"MergedWithPrevious\", \"invert\": false}, "
	"\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
	"{\"id\": \"<bos>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]}, "
	"\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
	"{\"String\": \"\\u2581\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, "
	"{\"type\": \"Fuse\"}]}, "
	"\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, "
	"\"byte_fallback\": true, \"vocab\": {\"<unk>\": 0, \"<bos>\": 1, \"\\n\": 2, "
	"\"\\u2581\\u2581\": 3, \"\\u2581\": 4, \"a\": 5, \"b\": 6, \"\\u2581a\": 7, "
	"\"<0xC3>\": 8, \"<0xA9>\": 9, \"<0xFF>\": 10, \"<0x0A>\": 11}, "
	"\"merges\": [[\"\\u2581\", \"\\u2581\"], [\"\\u2581\", \"a\"]]}}";

/* Byte-level: the 256 byte characters of GPT-2's map are built below. */
static char *bytelevel_json(void)
{
	struct render_buf b;
	render_buf_init(&b);
	render_buf_puts(&b, "{\"normalizer\": {\"type\": \"NFC\"}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
			    "{\"type\": \"Split\", \"pattern\": {\"Regex\": "
			    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
			    "\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
			    "\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
			    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}, "
			    "\"decoder\": {\"type\": \"ByteLevel\"}, "
			    "\"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": {");
	int next = 256;
	for (int c = 0; c < 256; c++) {
		bool self = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
		uint32_t cp = self ? (uint32_t)c : (uint32_t)next++;
		char u[8];
		u[utf8_encode(cp, u)] = '\0';
		render_buf_printf(&b, "%s\"%s%s\": %d", c ? ", " : "",
				  cp == '"' || cp == '\\' ? "\\" : "", u, c);
	}
	render_buf_puts(&b, ", \"he\": 256, \"ll\": 257, \"hell\": 258, \"\\u0120the\": 259, "
			    "\"\\u0120t\": 260, \"th\": 261}, \"merges\": [\"h e\", \"l l\", \"he ll\", "
			    "\"t h\", \"\\u0120 t\", \"\\u0120t he\"]}}");
	char *s = xstrdup(b.data);
	render_buf_free(&b);
	return s;
}

static struct tokenizer *fixed_sp, *fixed_bl, *fixed_gm;

/* NFC of text[0..len) (invalid bytes as U+FFFD) is valid UTF-8, and NFC
 * again leaves it unchanged. */
static void check_nfc(const char *text, size_t len)
{
	size_t clen, n, n2;
	int nbad;
	char *valid = tok_replace_invalid(text, len, &clen, &nbad);
	const char *s = valid ? valid : text;
	char *once = tok_nfc(s, clen, &n);
	char *twice = tok_nfc(once, n, &n2);
	char *bad = tok_replace_invalid(once, n, &clen, &nbad);

	CHECK(!bad && once[n] == '\0');
	CHECK(n2 == n && !memcmp(once, twice, n));
	free(valid);
	free(once);
	free(twice);
}

static void check_encode(const struct tokenizer *t, const char *text, size_t len)
{
	struct err e = { "" };
	int *ids = NULL, n = 0;
	int bad = tok_encode(t, text, len, 1, &ids, &n, &e);
	if (bad < 0) {
		CHECK(e.msg[0] && !strchr(e.msg, '\n'));
		return;
	}
	for (int i = 0; i < n; i++) {
		CHECK(ids[i] >= 0 && ids[i] < t->vocab_size);
		char buf[16];
		memset(buf, 0x5a, sizeof buf);
		tok_piece(t, ids[i], buf, 8);
		CHECK(strnlen(buf, 8) < 8 && (unsigned char)buf[8] == 0x5a);
	}
	char *back = tok_decode(t, ids, n);
	CHECK(back != NULL);
	free(back);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { "" };
	if (!fixed_sp) {
		fixed_sp = tok_hfjson_from_text(sp_json, sizeof sp_json - 1, "fixed", &e);
		char *bl = bytelevel_json();
		fixed_bl = tok_hfjson_from_text(bl, strlen(bl), "fixed", &e);
		free(bl);
		fixed_gm = tok_hfjson_from_text(gm_json, sizeof gm_json - 1, "fixed", &e);
		CHECK(fixed_sp && fixed_bl && fixed_gm);
	}
	const char *text = (const char *)data;
	check_nfc(text, size);
	check_encode(fixed_sp, text, size);
	check_encode(fixed_bl, text, size);
	check_encode(fixed_gm, text, size);

	struct tokenizer *t = tok_hfjson_from_text(text, size, "tokenizer.json", &e);
	if (!t) {
		CHECK(e.msg[0] && !strchr(e.msg, '\n'));
		return 0;
	}
	static const char *const samples[] = { "hello world", " a  b\n", "<s>ab <x> ab",
					       "\xe5\xba\x8a\xe5\x89\x8d 123 \xff",
					       "Vie\xcc\xa3\xcc\x82t \xe1\x84\x92\xe1\x85\xa1", "" };
	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++)
		check_encode(t, samples[i], strlen(samples[i]));
	/* the round trip through a checkpoint's description */
	char *desc = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(desc, &e);
	CHECK(u != NULL);
	int *a = NULL, *b = NULL, na = 0, nb = 0;
	int ra = tok_encode(t, "hello world", 11, 0, &a, &na, &e);
	int rb = tok_encode(u, "hello world", 11, 0, &b, &nb, &e);
	CHECK(ra == rb && na == nb && (na == 0 || !memcmp(a, b, (size_t)na * sizeof *a)));
	free(a);
	free(b);
	free(desc);
	tok_free(u);
	tok_free(t);
	return 0;
}
