/*
 * fuzz_gguf.c — libFuzzer target for GGUF files: the container (gguf.c),
 * the dequantizers (quant.c), the tokenizer rebuilt from the metadata
 * (gguf-vocab.c) and the format (loader-gguf.c).
 *
 * Each input is written as model.gguf in a private temporary directory and
 *   1. opened with gguf_open(); when that succeeds, every key is read with
 *      the getter of its type (strings, string and number arrays), every
 *      tensor is read (dequantized), and the tokenizer is rebuilt
 *      (gguf_tokenizer), which must encode FUZZ_TEXT when it is built;
 *   2. loaded through model_open_ex() as `attnscope DIR/model.gguf` would
 *      load it: a model that loads must be whole (fuzz_exercise_model: a
 *      valid config, finite weights, a tokenizer within the vocabulary, a
 *      forward pass over a few tokens).
 * Every failure is fine as long as it is one line.
 *
 * Allocations follow the input's size: the reader keeps keys and offsets,
 * checks every count against the bytes left before allocating for it, and
 * refuses overlapping tensors, so what they hold is at most the file; the
 * loader refuses metadata that asks for far more weights than that.  An
 * out-of-memory report is a finding.
 *
 * Seeds: fuzz/seeds/gguf, written by `tool_mkgguf --tiny` (1 layer, d_model
 * 32, 2 heads of 16, context 8): llama in F32 and Q8_0 with a small
 * SentencePiece-style vocabulary (model llama: <unk>, <s>, </s>, 256 byte
 * pieces, 5 words), gemma2 in Q8_0 and gemma3 in F16 with the same
 * vocabulary (their sandwich norms, caps, a sliding layer; Gemma 3's q/k
 * norm and linear RoPE scaling), qwen2 in Q4_0, qwen3 in Q8_0 (heads 32
 * wide, key_length apart from embedding_length / head_count, with the q/k
 * norm), olmo2 in Q5_0 (norms after the sub-blocks, whole-width q/k
 * norms), phi3 in Q8_0 (the fused attn_qkv and ffn_up, RoPE over half of
 * each head, LongRoPE's rope_factors_long / _short), gpt2 in F16 and gptneox in BF16 with a byte-level BPE (model
 * gpt2, pre gpt-2: 256 bytes and 8 merges), bert in Q5_1 with a small
 * WordPiece vocabulary; gemma3 in Q8_0 with a Gemma-style vocabulary (17
 * tokens, add_space_prefix false, control and user-defined tokens matched
 * whole: tool_mkgguf --spmjson);
 * llama in version 2 with alignment 64; and damaged copies (a cut header,
 * a huge array count, an offset past the end, an unknown type, a gemma2
 * block_count of 300, past the layers the engine takes).
 * tests/cli_gguf.sh checks that the valid ones load and the damaged ones
 * fail on one line.
 *
 *   make build-fuzz/fuzz_gguf && build-fuzz/fuzz_gguf fuzz/seeds/gguf
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "gguf.h"

static char model_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, true);
	fuzz_path(model_path, sizeof model_path, "model.gguf");
	return 0;
}

/* Every key through its getter, every tensor read; one-line failures. */
static void read_everything(struct gguf_file *f)
{
	for (int i = 0; i < f->n_kv; i++) {
		const struct gguf_kv *kv = &f->kv[i];
		struct err e = { "" };
		int64_t n;
		double x;
		bool b;
		char *s = NULL, **v = NULL;
		uint32_t *len = NULL;
		uint64_t k;
		double *d = NULL;
		int rc = kv->type == GGUF_STRING ? gguf_get_str(f, kv->key, 1 << 20, &s, &e)
			 : kv->type == GGUF_BOOL ? gguf_get_bool(f, kv->key, &b, &e)
			 : kv->type == GGUF_F32 || kv->type == GGUF_F64 ? gguf_get_float(f, kv->key, &x, &e)
			 : kv->type != GGUF_ARRAY ? gguf_get_int(f, kv->key, INT64_MIN, INT64_MAX, &n, &e)
			 : kv->arr_type == GGUF_STRING
				 ? gguf_get_strings(f, kv->key, 1 << 20, &v, &len, &k, &e)
				 : gguf_get_numbers(f, kv->key, 1 << 20, &d, &k, &e);
		CHECK(rc <= 0);
		if (rc < 0)
			fuzz_check_error(&e, NULL);
		free(s);
		free(v);
		free(len);
		free(d);
	}
	for (int i = 0; i < f->n_t; i++) {
		struct err e = { "" };
		float *dst = xmalloc((size_t)f->t[i].n * sizeof *dst + 1);
		if (gguf_read_tensor(f, &f->t[i], dst, &e))
			fuzz_check_error(&e, NULL);
		free(dst);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf_file f;
	struct err e = { "" };
	fuzz_put_file(model_path, data, size);
	if (gguf_open(&f, model_path, &e) == 0) {
		read_everything(&f);
		struct tokenizer *t = gguf_tokenizer(&f, &e);
		if (t) {
			int n;
			free(fuzz_encode(t, FUZZ_TEXT, sizeof FUZZ_TEXT - 1, &n));
			tok_free(t);
		} else {
			fuzz_check_error(&e, NULL);
		}
		gguf_close(&f);
	} else {
		fuzz_check_error(&e, NULL);
	}
	const char *format = NULL;
	struct model *m = fuzz_open_model(model_path, NULL, &format);
	if (m && !strcmp(format, "gguf")) /* an edited magic can make another format */
		fuzz_exercise_model(m);
	model_free(m);
	return 0;
}
