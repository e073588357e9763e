/*
 * fuzz_hf.c — libFuzzer target for the Hugging Face GPT-2 directory reader
 * (loader-hf.c: config.json and model.safetensors) and the GPT-2 BPE
 * tokenizer files it reads through tok_bpe_load() (vocab.json and
 * merges.txt, or tokenizer.json).
 *
 * Each input is a directory in one: its parts, separated by the line
 * "--8<--" (FUZZ_SEP in fuzz-common.h), are written to a private temporary
 * directory as
 *   config.json, vocab.json, merges.txt, model.safetensors, tokenizer.json
 * (an empty or missing part leaves its file out; a sixth part, if any, is
 * the rest of tokenizer.json).  The loader is then called as `attnscope
 * DIR` would call it, through model_open_ex(): on the directory, or, when
 * the input's length is odd, on DIR/model.safetensors (the HF probe takes
 * such a file only with GPT-2's names and config.json beside it, else the
 * attnscope reader gets it); with bit 1 of the length set and a
 * tokenizer.json present, that file is passed as --tokenizer.
 *
 * Every failure is fine as long as it is one line.  A model that loads must
 * be whole: a valid config, finite weights, a tokenizer that fits the
 * vocabulary and encodes, and a forward pass over a few tokens that runs
 * (fuzz_exercise_model() in fuzz-common.h; the logits may be Inf or NaN).
 *
 * config.json alone gives the size of the model, and a few edited digits
 * ask for gigabytes.  The loader refuses a config.json that describes more
 * parameters than model.safetensors holds before it allocates the model,
 * so what it allocates follows the input's size and no bound is needed
 * here: an out-of-memory report from libFuzzer is a finding.
 *
 * Seeds: fuzz/seeds/hf, three tiny GPT-2s (1-2 layers, 2 heads, n_embd 4
 * or 8, context 4 or 8) over a byte-level vocabulary of 256 bytes, 3 merges
 * and <|endoftext|>: F32 with the "transformer." prefix and attn.bias
 * buffers; F16, untied (lm_head.weight) with n_inner; BF16 with the
 * tokenizer as tokenizer.json.  And one for each other loader, written by
 * `tool_mkhf ... --tiny` over the same vocabulary (1 layer, d_model 8, 2
 * heads, context 8; each a directory: an even length, bit 1 clear):
 * llama-tiny-untied (and llama3-tiny-rope-scaling, the same with Llama
 * 3.1's rope_scaling over an original context of 4), qwen2-tiny-qkv-bias,
 * qwen3-tiny-qk-norm (Qwen3's q_norm / k_norm, heads 8 wide over d_model
 * 8 / 2 heads: tool_mkhf --qwen3 --tiny),
 * neox-tiny-tokenizer-json (tokenizer.json, no vocab.json/merges.txt),
 * neo-tiny-local (GPT-Neo, 2 layers, layer 1 local over 4 keys, the mask
 * buffers), phi3-tiny-partial-window (Phi-3's fused qkv_proj and
 * gate_up_proj, partial_rotary_factor 0.5, tied, sliding_window 6: tool_mkhf
 * --phi3 --partial --tiny), phi3-tiny-longrope (Phi-3.5's LongRoPE, short and
 * long tables over an original context of 4: --phi3 --longrope --tiny),
 * gemma2-tiny-sandwich-softcap (Gemma 2's four
 * norms stored as scale - 1, GeGLU, soft-capping, query_pre_attn_scalar,
 * layer 0 sliding over 4 keys: tool_mkhf --gemma2 --tiny),
 * gemma3-tiny-qk-norm-local-base (Gemma 3's q/k norm, no caps, the local
 * layer's own RoPE base, linear scaling: --gemma3 --tiny),
 * gemma3mm-tiny-language-model (the same as a Gemma 3 multimodal
 * directory: text_config, language_model.model.* names, two vision
 * tensors: --gemma3 --mm --tiny),
 * olmo2-tiny-post-norms (OLMo-2's norms after the sub-blocks only and its
 * whole-width q/k norm: --olmo2 --tiny), bert-tiny-mlm (tied decoder), roberta-tiny-mlm
 * (positions from the file's row 2, <s> ... </s>) and distilbert-tiny-mlm
 * (over the byte-level pair, not WordPiece).  tests/test_loaders.c checks
 * that each loads.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

static const char *const part_names[] = {
	"config.json", "vocab.json", "merges.txt", "model.safetensors", "tokenizer.json",
};
#define N_PARTS ((int)(sizeof part_names / sizeof part_names[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return fuzz_initialize(argc, argv, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *part[N_PARTS];
	size_t len[N_PARTS];
	char path[128], tokpath[128];
	bool has_tok = false;

	int n_parts = fuzz_split(data, size, N_PARTS, part, len);
	for (int i = 0; i < n_parts; i++)
		if (len[i] > 0) {
			fuzz_path(path, sizeof path, part_names[i]);
			fuzz_put_file(path, part[i], len[i]);
			has_tok |= i == N_PARTS - 1;
		}

	if (size & 1)
		fuzz_path(path, sizeof path, "model.safetensors");
	else
		snprintf(path, sizeof path, "%s", fuzz_tmpdir);
	fuzz_path(tokpath, sizeof tokpath, "tokenizer.json");
	const char *format = NULL;
	struct model *m = fuzz_open_model(path, has_tok && (size & 2) ? tokpath : NULL, &format);
	if (m) {
		/* a directory with config.json: one of the Hugging Face loaders */
		CHECK(format && (!strncmp(format, "hf-", 3) || !strcmp(format, "safetensors")));
		CHECK(m->tok || strncmp(format, "hf-", 3));
		fuzz_exercise_model(m);
		model_free(m);
	}
	fuzz_empty_dir(fuzz_tmpdir);
	return 0;
}
