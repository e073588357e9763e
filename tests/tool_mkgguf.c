/*
 * tool_mkgguf — writes a GGUF file (tests/gguf_write.h) of an attnscope
 * checkpoint, or of a tiny seeded model, as llama.cpp's converter lays it
 * out for one architecture, with its 2-D weights in one tensor type and the
 * tokenizer metadata of a tokenizer's own files; for tests/cli_gguf.sh and
 * the fuzz seeds in fuzz/seeds/gguf.
 *
 * usage: tool_mkgguf OUT.gguf (--from REF.safetensors | --tiny) --arch ARCH
 *        [--type TYPE] [--version 2|3] [--alignment N]
 *        [--tokdir DIR | --tokjson FILE --pre PRE [--bos NAME] |
 *         --tokbin FILE | --wordpiece FILE]
 *   ARCH  llama, qwen2, qwen3, gpt2, gptneox or bert (qwen3 --from needs
 *         a checkpoint with the q/k norm, as tool_mkhf --qwen3 writes;
 *         the others one without)
 *   TYPE  f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k,
 *         q3_k, q4_k, q5_k, q6_k (rows that are not whole blocks stay F32)
 *   the tokenizer: GPT-2's vocab.json + merges.txt in DIR; a BPE
 *         tokenizer.json with the pre-tokenizer name PRE (llama-bpe, qwen2)
 *         and BOS NAME; a llama2.c tokenizer.bin; a WordPiece
 *         tokenizer.json.  With none, --tiny writes its own small
 *         vocabulary of the kind the architecture's models use (llama: a
 *         SentencePiece-style one; bert: WordPiece; others: byte-level BPE)
 *         and --from writes no tokenizer.
 * --tiny: 1 layer, d_model 32, 2 heads of 16 (llama/qwen2/qwen3: 1 K/V
 * head; qwen3's heads 32 wide, twice d_model / heads as Qwen3-0.6B's 128
 * over 1024 / 16, with the q/k norm), d_ff 32, context 8, the
 * vocabulary's size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "gguf_write.h"
#include "loader.h"
#include "model.h"
#include "tok_expect.h"
#include "util.h"

static const struct { const char *name; uint32_t t; } types[] = {
	{ "f32", GGML_F32 },   { "f16", GGML_F16 },   { "bf16", GGML_BF16 }, { "q8_0", GGML_Q8_0 },
	{ "q4_0", GGML_Q4_0 }, { "q4_1", GGML_Q4_1 }, { "q5_0", GGML_Q5_0 }, { "q5_1", GGML_Q5_1 },
	{ "q2_k", GGML_Q2_K }, { "q3_k", GGML_Q3_K }, { "q4_k", GGML_Q4_K }, { "q5_k", GGML_Q5_K },
	{ "q6_k", GGML_Q6_K },
};

/* GPT-2's byte alphabet and 8 merges (264 tokens). */
static int tiny_bpe(struct gw *w)
{
	static const char *const merges[] = { "\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n",
					      "\xc4\xa0 a", "e r", "o n", "\xc4\xa0 c" };
	char *tok[264], buf[264][8];
	int32_t type[264];
	int next = 256;
	for (int b = 0; b < 256; b++) {
		int self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
		buf[b][utf8_encode((uint32_t)(self ? b : next++), buf[b])] = '\0';
	}
	for (int i = 0; i < 8; i++) {
		const char *sp = strchr(merges[i], ' ');
		snprintf(buf[256 + i], sizeof buf[0], "%.*s%s", (int)(sp - merges[i]), merges[i], sp + 1);
	}
	for (int i = 0; i < 264; i++) {
		tok[i] = buf[i];
		type[i] = 1;
	}
	gw_str(w, "tokenizer.ggml.model", "gpt2");
	gw_str(w, "tokenizer.ggml.pre", "gpt-2");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 264);
	gw_i32s(w, "tokenizer.ggml.token_type", type, 264);
	gw_strs(w, "tokenizer.ggml.merges", (char *const *)merges, NULL, 8);
	return 264;
}

/* <unk>, <s>, </s>, 256 byte pieces and a few words, with scores. */
static int tiny_spm(struct gw *w)
{
	static const char *const words[] = { "\xe2\x96\x81t", "he", "\xe2\x96\x81the", "in",
					     "\xe2\x96\x81" "a" };
	char *tok[264], buf[264][16];
	float score[264];
	int32_t type[264];
	strcpy(buf[0], "<unk>");
	strcpy(buf[1], "<s>");
	strcpy(buf[2], "</s>");
	for (int b = 0; b < 256; b++)
		snprintf(buf[3 + b], sizeof buf[0], "<0x%02X>", b);
	for (int i = 0; i < 5; i++)
		snprintf(buf[259 + i], sizeof buf[0], "%s", words[i]);
	for (int i = 0; i < 264; i++) {
		tok[i] = buf[i];
		score[i] = i < 259 ? 0.0f : -(float)i;
		type[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
	}
	gw_str(w, "tokenizer.ggml.model", "llama");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 264);
	gw_f32s(w, "tokenizer.ggml.scores", score, 264);
	gw_i32s(w, "tokenizer.ggml.token_type", type, 264);
	gw_u32(w, "tokenizer.ggml.bos_token_id", 1);
	gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	return 264;
}

/* BERT's specials, the letters as words and as continuations, a few words. */
static int tiny_wordpiece(struct gw *w)
{
	static const char *const special[] = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" };
	char *tok[64], buf[64][16];
	int32_t type[64];
	int n = 0;
	for (int i = 0; i < 5; i++, n++) {
		strcpy(buf[n], special[i]);
		type[n] = 3;
	}
	for (char c = 'a'; c <= 'z'; c++, n++) {
		snprintf(buf[n], sizeof buf[0], "\xe2\x96\x81%c", c);
		type[n] = 1;
	}
	for (char c = 'a'; c <= 'z'; c++, n++) {
		snprintf(buf[n], sizeof buf[0], "%c", c);
		type[n] = 1;
	}
	static const char *const words[] = { "\xe2\x96\x81the", "\xe2\x96\x81,", "he" };
	for (int i = 0; i < 3; i++, n++) {
		strcpy(buf[n], words[i]);
		type[n] = 1;
	}
	for (int i = 0; i < n; i++)
		tok[i] = buf[i];
	gw_str(w, "tokenizer.ggml.model", "bert");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, (size_t)n);
	gw_i32s(w, "tokenizer.ggml.token_type", type, (size_t)n);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 1);
	gw_u32(w, "tokenizer.ggml.cls_token_id", 2);
	gw_u32(w, "tokenizer.ggml.seperator_token_id", 3);
	return n;
}

static int usage(void)
{
	fprintf(stderr, "usage: tool_mkgguf OUT.gguf (--from REF.safetensors | --tiny) --arch ARCH "
		"[--type TYPE] [--version 2|3] [--alignment N] [--tokdir DIR | --tokjson FILE "
		"--pre PRE [--bos NAME] | --tokbin FILE | --wordpiece FILE]\n");
	return 2;
}

/* The tokenizer metadata the options name; 0 or -1. */
static int tokenizer(struct gw *w, const char *const *opt)
{
	/* opt: tokdir, tokjson, pre, bos, tokbin, wordpiece */
	size_t len;
	struct err e;
	if (opt[0])
		return gt_gpt2_dir(w, opt[0]);
	if (opt[4])
		return gt_llama2c(w, opt[4]);
	const char *json = opt[1] ? opt[1] : opt[5];
	if (!json)
		return 0;
	char *text = read_file(json, &len, &e);
	if (!text)
		return fprintf(stderr, "tool_mkgguf: %s\n", e.msg), -1;
	int rc = opt[1] ? gt_hf_json(w, text, len, opt[2] ? opt[2] : "llama-bpe", opt[3])
			: gt_wordpiece_json(w, text, len);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *out = argv[1], *from = NULL, *arch = NULL, *opt[6] = { NULL };
	static const char *const tokflags[] = { "--tokdir", "--tokjson", "--pre", "--bos",
						"--tokbin", "--wordpiece" };
	uint32_t type = GGML_F32, version = 3, align = 0;
	bool tiny = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int k;
		if (!strcmp(a, "--tiny")) {
			tiny = true;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--from"))
			from = v;
		else if (!strcmp(a, "--arch"))
			arch = v;
		else if (!strcmp(a, "--version"))
			version = (uint32_t)atoi(v);
		else if (!strcmp(a, "--alignment"))
			align = (uint32_t)atoi(v);
		else if (!strcmp(a, "--type")) {
			for (k = 0; k < (int)(sizeof types / sizeof types[0]) && strcmp(types[k].name, v); k++)
				;
			if (k == (int)(sizeof types / sizeof types[0]))
				return usage();
			type = types[k].t;
		} else {
			for (k = 0; k < 6 && strcmp(tokflags[k], a); k++)
				;
			if (k == 6)
				return usage();
			opt[k] = v;
		}
	}
	int ga = 0;
	while (arch && ga < GA_N && strcmp(ga_name[ga], arch))
		ga++;
	if (!arch || ga == GA_N || !(from || tiny))
		return usage();
	struct gw *w = gw_new();
	struct model *m = NULL;
	struct err e;
	int V = 0;
	bool own = !opt[0] && !opt[1] && !opt[4] && !opt[5];
	if (tiny && own)
		V = ga == GA_LLAMA ? tiny_spm(w) : ga == GA_BERT ? tiny_wordpiece(w) : tiny_bpe(w);
	else if (tokenizer(w, opt))
		return 1;
	if (tiny) {
		if (!V) {
			fprintf(stderr, "tool_mkgguf: --tiny writes its own vocabulary\n");
			return 2;
		}
		m = ga_model_hd((enum ga)ga, V, 1, 32, 32, 2, 1, ga == GA_QWEN3 ? 32 : 0, 8, 11);
	} else {
		m = model_open(from, &e);
		if (!m) {
			fprintf(stderr, "tool_mkgguf: %s\n", e.msg);
			return 1;
		}
		if (m->cfg.qk_norm != (ga == GA_QWEN3)) {
			fprintf(stderr, "tool_mkgguf: %s %s\n", from, m->cfg.qk_norm
				? "has the q/k norm, which only --arch qwen3 holds"
				: "has no q/k norm, which --arch qwen3 needs (tool_mkhf --qwen3 writes one)");
			model_free(m);
			gw_free(w);
			return 1;
		}
	}
	ga_write_model(w, m, (enum ga)ga, type);
	int bad = gw_write(w, out, version, align);
	if (bad)
		fprintf(stderr, "tool_mkgguf: cannot write %s\n", out);
	gw_free(w);
	model_free(m);
	return bad ? 1 : 0;
}
