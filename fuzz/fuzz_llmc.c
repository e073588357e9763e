/*
 * fuzz_llmc.c — libFuzzer target for the llm.c GPT-2 checkpoint reader
 * (loader-llmc.c).
 *
 * Each input is written as model.bin in a private temporary directory and
 * opened through model_open_ex() as `attnscope DIR/model.bin` would open
 * it.  Beside it lies a fixed GPT-2 tokenizer written once at start
 * (vocab.json: the 256 byte tokens and <|endoftext|>, 257 ids; merges.txt:
 * no merges), so that the fuzzer spends its time on the checkpoint; the
 * tokenizer files have their own target (fuzz_hf).  Every failure is fine
 * as long as it is one line; a model that loads must be whole: valid
 * config, finite weights, the tokenizer within the vocabulary, and a
 * forward pass over a few tokens that runs (the logits may be Inf or NaN).
 *
 * The file's size must match its header exactly, so allocations follow
 * the input's size (no guard against huge headers is needed here).
 *
 * Seeds: fuzz/seeds/llmc, two tiny checkpoints with V 257: version 3
 * (F32; maxT 8, 1 layer, 2 heads, C 8, padded to 264) and version 5 (BF16;
 * maxT 4, 2 layers, 2 heads, C 4, padded to 260).
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include <jansson.h>

static char model_path[128], vocab_path[128], merges_path[128];

/* GPT-2's byte-level vocabulary without merges: byte b is the token
 * spelled by its printable stand-in (itself for printable Latin-1, else
 * U+0100 onwards), with id b; <|endoftext|> is 256. */
static void write_tokenizer(void)
{
	json_t *v = json_object();
	int other = 0;

	CHECK(v != NULL);
	for (int b = 0; b < 256; b++) {
		bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
		char key[5];
		key[utf8_encode(printable ? (uint32_t)b : 256u + (uint32_t)other++, key)] = '\0';
		CHECK(json_object_set_new(v, key, json_integer(b)) == 0);
	}
	CHECK(json_object_set_new(v, "<|endoftext|>", json_integer(256)) == 0);
	CHECK(json_dump_file(v, vocab_path, 0) == 0);
	json_decref(v);
	fuzz_put_file(merges_path, "#version: 0.2\n", 14);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, true);
	fuzz_path(model_path, sizeof model_path, "model.bin");
	fuzz_path(vocab_path, sizeof vocab_path, "vocab.json");
	fuzz_path(merges_path, sizeof merges_path, "merges.txt");
	write_tokenizer();
	return 0;
}

/* A loaded model is whole: valid config, finite weights, the tokenizer
 * within the vocabulary, which encodes FUZZ_TEXT, and a forward pass over
 * up to 8 of its tokens runs. */
static void exercise_model(struct model *m)
{
	int n = 0;

	fuzz_check_weights(m);
	CHECK(m->tok && m->tok->vocab_size == 257 && m->tok->vocab_size <= m->cfg.vocab_size);
	int *ids = fuzz_encode(m->tok, FUZZ_TEXT, sizeof FUZZ_TEXT - 1, &n);
	CHECK(ids != NULL);
	fuzz_forward(m, ids, n);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *format = NULL;

	fuzz_put_file(model_path, data, size);
	struct model *m = fuzz_open_model(model_path, NULL, &format);
	if (m && !strcmp(format, "llmc"))
		exercise_model(m);
	model_free(m); /* an edited header can look like another format */
	return 0;
}
