/*
 * fuzz_llama2c.c — libFuzzer target for the llama2.c readers: the model
 * .bin (loader-llama2c.c) and tokenizer.bin (tok-llama2c.c).
 *
 * Each input is two files in one, separated by the line "--8<--"
 * (FUZZ_SEP in fuzz-common.h): model.bin, then tokenizer.bin (the rest of
 * the input), written to a private temporary directory.  The tokenizer is read on its own
 * first, as `--tokenizer FILE` would read it with any piece count, and
 * when it loads it must encode and decode a text with ids in range,
 * label every id on one NUL-terminated line, and survive the round trip
 * through its checkpoint JSON.  Then the model is opened through
 * model_open_ex() as `attnscope DIR/model.bin` would open it, which reads
 * tokenizer.bin beside it with exactly the model's vocab_size pieces.
 * Every failure is fine as long as it is one line; a model that loads must
 * be whole: valid config, finite weights, its tokenizer of vocab_size
 * pieces, and a forward pass over a few tokens that runs (the logits may
 * be Inf or NaN).
 *
 * The model's size must match its header exactly, so allocations follow
 * the input's size (no guard against huge headers is needed here).
 *
 * Seeds: fuzz/seeds/llama2c, two tiny models (dim 8, 1-2 layers, 2 heads;
 * tied with GQA and the freq_cis tables; untied MHA without them) with
 * vocabularies of 24-26 pieces: <unk>, BOS and EOS as llama2.c's export
 * writes them, six byte-fallback pieces and scored normal pieces.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return fuzz_initialize(argc, argv, true);
}

static const char sample[] = "Once upon a time, the hello \xc3\xa9t\xc3\xa9 床前 \xff\n";

/* Encodes the sample with t (fuzz_encode()) and, when that works, labels
 * every id (the first 4096) on one NUL-terminated line. */
static int *encode_sample(const struct tokenizer *t, int *n)
{
	char label[64];
	int *ids = fuzz_encode(t, sample, sizeof sample - 1, n);

	if (!ids)
		return NULL;
	for (int id = 0; id < t->vocab_size && id < 4096; id++) {
		memset(label, 0x5a, sizeof label);
		tok_label(t, id, label, sizeof label);
		CHECK(memchr(label, '\0', sizeof label) != NULL && !strchr(label, '\n'));
	}
	return ids;
}

/* tokenizer.bin alone, with any number of pieces. */
static void fuzz_tokenizer(const char *path)
{
	struct err e = { "" };
	struct tokenizer *t = tok_llama2c_load(path, 0, &e);
	int n;

	if (!t) {
		fuzz_check_error(&e, NULL);
		return;
	}
	CHECK(t->vocab_size >= 1);
	free(encode_sample(t, &n));
	char *json = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(json, &e);
	CHECK(u && u->vocab_size == t->vocab_size && u->bos_id == t->bos_id &&
	      u->unk_id == t->unk_id);
	char *again = u->ops->to_json(u);
	CHECK(strcmp(json, again) == 0);
	free(again);
	free(json);
	tok_free(u);
	tok_free(t);
}

/* A loaded model is whole: valid config, finite weights, its tokenizer of
 * exactly vocab_size pieces, and a forward pass over up to 8 tokens of the
 * sample (none when the tokenizer cannot encode it). */
static void exercise_model(struct model *m)
{
	int n = 0;

	fuzz_check_weights(m);
	CHECK(m->tok && m->tok->vocab_size == m->cfg.vocab_size);
	int *ids = encode_sample(m->tok, &n);
	fuzz_forward(m, ids, n);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *part[2];
	size_t len[2];
	char model[128], tok[128];

	fuzz_path(model, sizeof model, "model.bin");
	fuzz_path(tok, sizeof tok, "tokenizer.bin");
	int n_parts = fuzz_split(data, size, 2, part, len);
	fuzz_put_file(model, part[0], len[0]);
	if (n_parts == 2) {
		fuzz_put_file(tok, part[1], len[1]);
		fuzz_tokenizer(tok);
	}

	const char *format = NULL;
	struct model *m = fuzz_open_model(model, NULL, &format);
	if (m && !strcmp(format, "llama2c"))
		exercise_model(m);
	model_free(m); /* an edited header can look like another format */
	fuzz_empty_dir(fuzz_tmpdir);
	return 0;
}
