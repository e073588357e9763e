/*
 * bench_hf.c — what a real-sized model costs with its weights held as
 * stored and as F32 (not a test: it reports, never fails on a slow number;
 * "misses" against a target is a finding, not a failure).
 *
 * Shapes (shapes[] below): Qwen2.5-0.5B, Llama-3.2-1B and gemma-2-2b by
 * default; Llama-3-8B (32 layers, 4096 wide, 32 query / 8 K/V heads, d_ff
 * 14336, vocabulary 128256, untied: 16 GB of BF16 files and a 4.5 GB Q4_K
 * file) only when asked: named on the command line (bench_hf Llama-3-8B;
 * any names pick those shapes alone), or BENCH_HF_8B=1 in the environment
 * (BENCH_HF_8B=1 make bench: the default shapes and it).  For each shape,
 * in a temp directory under /tmp (each model removed once measured, the
 * directory at exit), the sgemm rate first and once:
 *   1. a Hugging Face directory of the shape: config.json spelled as the
 *      model's own (Qwen2.5-0.5B: model_type qwen2, Q/K/V biases, tied;
 *      the Llama shapes: model_type llama, rope_theta 500000 and the llama3
 *      rope_scaling, Llama-3.2-1B's factor 32 and tied, Llama-3-8B's
 *      (Llama 3.1 8B's config.json) factor 8 and untied; gemma-2-2b:
 *      model_type gemma2, the four norms per layer stored as scale - 1,
 *      soft-capping, sliding layers, tied), random BF16 weights streamed
 *      tensor by tensor (CHUNK values at a time: never the model in memory)
 *      into two shards named by a model.safetensors.index.json, and GPT-2's
 *      vocab.json + merges.txt from $ATTNSCOPE_SHARED/tokenizers/gpt2
 *      (default ../shared; the bench is skipped when absent);
 *   2. model_open_ex on it in forked children, LOAD_REPS of them (1 for
 *      Llama-3-8B), with the weights held as stored (the loader's default)
 *      and then with ATTNSCOPE_WEIGHTS=f32 (every weight as F32; not for
 *      Llama-3-8B, whose 32 GB as F32 do not fit a 24 GB machine): best and
 *      median time, and each child's extra memory (VmHWM after the load
 *      minus VmRSS before it) against the file bytes and the F32 parameter
 *      bytes, with what the model holds (model_bytes, model_held_types).
 *      The page cache is warm for the small shapes; 16 GB of files beside
 *      16 GB of held weights are not all cached on a 24 GB machine;
 *   3. model_forward with RUN_LOGITS | RUN_ATTN at T = 256 (B = 1, tokens
 *      below the tokenizer's vocabulary), in one more child per mode that
 *      loads the model: median (min) ms of up to MAX_REPS passes after one
 *      warm-up; held: the native options and the GQA conversions "attn mha"
 *      (kv_heads = H) and "attn mqa" (kv_heads = 1), native alone for
 *      Llama-3-8B (the conversions are F32 QKV rows, 2.3 and 6.4 GB there);
 *      f32: native.  The matmul FLOPs of each pass with the K/V heads the
 *      engine computes with (run_kv_heads), the ratio of the time to those
 *      FLOPs at the sgemm rate, and the paired ratio the verdict is on:
 *      each pass follows an sgemm measurement in the same child, and the
 *      ratio is the median over the passes of (pass time / its FLOPs at the
 *      rate just measured), so that other work on these cores weighs on
 *      both sides alike (target: within 1.3x).  Held products convert
 *      their weights a tile at a time to F32 for sgemm (held.c), so the
 *      floor is the same sgemm rate for both modes.  The child's peak RSS
 *      (VmHWM) after the native passes is the peak of a process that loads
 *      the model and runs it with capture: against the file bytes, and the
 *      issue's target, peak <= 1.2 x the file bytes + the capture (the
 *      run's buffers, run_bytes);
 *   4. for the Llama shapes, a GGUF file of the same shape as llama.cpp's
 *      converter lays it out (architecture llama, rope_freqs.weight
 *      computed from the llama3 rule, F32 norms, every matrix Q4_K: random
 *      quants and scales with finite fp16 d and dmin, about N(0, 0.02)),
 *      streamed likewise, read with GPT-2's tokenizer (model_open_ex's
 *      tokenizer, as --tokenizer): load and the native forward as in 2 and
 *      3, and whether the loader holds the Q4_K weights or dequantizes them
 *      to F32 (what the loader of this branch does, printed);
 *   5. summary rows (bench_summary_row, bench_summary_text): per mode the
 *      paired forward ratio and peak / file bytes against 1.2 + capture /
 *      file; held against f32 load time and forward (paired ratios); a
 *      load model_open_ex refuses (the memory check, the config's limits:
 *      config_validate takes at most 4e9 parameters, so Llama-3-8B is
 *      refused until it takes more) as "refused";
 *   6. for Qwen2.5-0.5B, where LLAMA_BENCH names a llama-bench binary
 *      (bench_llama.h): the directory written again as an F16 GGUF file
 *      (tests/tool_mkgguf), held as F16 here, and llama.cpp's pp256 on the
 *      same file beside decoder_prefill of 256 tokens (the same work: keys
 *      and values kept, the last position's logits), paired per round;
 *   7. the load average at the end and the total bench time.
 * The parent only writes the files and prints; every measurement runs in a
 * forked child (its own VmHWM).  Threads: the default (the cores present).
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_llama.h"
#include "config.h"
#include "loader.h"
#include "model.h"
#include "quant.h"
#include "tokenizer.h"
#include "util.h"

/* The architectures written; each a config.json and a tensor list. */
enum family { FAM_QWEN2, FAM_LLAMA3, FAM_GEMMA2 };

/* A published model's shape, from its config.json: L layers, d_model C,
 * H query and G key/value heads of D, d_ff F, vocabulary V, context S;
 * the output layer tied to the embedding or not; Llama 3's rope_scaling
 * factor (original context 8192); big: only when asked. */
struct shape {
	const char *name;
	enum family fam;
	int L, C, H, G, D, F, V, S;
	bool tied;
	float rope_factor;
	bool big;
};

static const struct shape shapes[] = {
	{ "Qwen2.5-0.5B", FAM_QWEN2, 24, 896, 14, 2, 64, 4864, 151936, 32768, true, 0, false },
	{ "Llama-3.2-1B", FAM_LLAMA3, 16, 2048, 32, 8, 64, 8192, 128256, 131072, true, 32, false },
	{ "gemma-2-2b", FAM_GEMMA2, 26, 2304, 8, 4, 256, 9216, 256000, 8192, true, 0, false },
	{ "Llama-3-8B", FAM_LLAMA3, 32, 4096, 32, 8, 128, 14336, 128256, 131072, false, 8, true },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define MAX_TENSORS (14 * 26 + 2) /* gemma-2-2b's: 13 a layer, 26 layers */

static const struct shape *sh; /* the shape being measured */

#define T_RUN 256
#define LOAD_REPS 3
#define MAX_REPS 5
#define MIN_REPS 3
#define ROW_BUDGET_MS 15000.0 /* per forward variant, after its warm-up */

/* Targets from the issue tracker. */
#define FWD_TARGET 1.3	/* forward with capture within 1.3x its matmul FLOPs at the sgemm rate */
#define PEAK_FILES 1.2	/* peak RSS <= 1.2x the file bytes + the capture */

#define N_SHARDS 2
#define CHUNK (1 << 20)	  /* values (or Q4_K blocks / 64) generated and written at a time */
#define GGUF_ALIGN 32	  /* general.alignment */
#define Q4K_BYTES 144	  /* one Q4_K block of 256 values */

static const char *dir;	      /* the shape's directory, written and loaded */
static const char *load_path; /* what model_open_ex opens: dir or the GGUF file */
static const char *load_tok;  /* its tokenizer argument (NULL: beside the model) */

/* ------------------------------------------------------- the tensors */

struct tensor {
	char name[80];
	size_t d0, d1;	/* rows, cols (d1 = 0: one dimension) */
	uint32_t type;	/* GGML_BF16 (the directory), GGML_Q4_K or GGML_F32 (GGUF) */
	float scale, offset;
	int shard;
	size_t off;	/* data offset inside its shard or after the GGUF header */
};

static struct tensor ts[MAX_TENSORS];
static int nt;

static void add_typed(const char *name, size_t d0, size_t d1, uint32_t type, float scale,
		      float offset)
{
	if (nt == MAX_TENSORS)
		die("bench_hf: more than %d tensors", MAX_TENSORS);
	struct tensor *t = &ts[nt++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->d0 = d0;
	t->d1 = d1;
	t->type = type;
	t->scale = scale;
	t->offset = offset;
}

static void add(const char *name, size_t d0, size_t d1, float scale, float offset)
{
	add_typed(name, d0, d1, GGML_BF16, scale, offset);
}

static size_t tensor_bytes(const struct tensor *t)
{
	size_t n = t->d0 * (t->d1 ? t->d1 : 1);
	return n / ggml_block_values(t->type) * ggml_block_bytes(t->type);
}

static void shard_name(char *out, size_t n, int k)
{
	snprintf(out, n, "model-%05d-of-%05d.safetensors", k + 1, N_SHARDS);
}

/* One layer's tensors as a Qwen2 (biases), Llama or Gemma 2 (the
 * sandwich norms; every norm stored as scale - 1) checkpoint names them. */
static void layer_tensors(int l)
{
	const struct shape *z = sh;
	char name[80];
	bool gemma = z->fam == FAM_GEMMA2, bias = z->fam == FAM_QWEN2;
	float one = gemma ? 0.0f : 1.0f; /* a norm's offset */
#define N(s) (snprintf(name, sizeof name, "model.layers.%d.%s", l, s), name)
	add(N("input_layernorm.weight"), z->C, 0, 0.05f, one);
	add(N("self_attn.q_proj.weight"), z->H * z->D, z->C, 0.02f, 0);
	if (bias)
		add(N("self_attn.q_proj.bias"), z->H * z->D, 0, 0.02f, 0);
	add(N("self_attn.k_proj.weight"), z->G * z->D, z->C, 0.02f, 0);
	if (bias)
		add(N("self_attn.k_proj.bias"), z->G * z->D, 0, 0.02f, 0);
	add(N("self_attn.v_proj.weight"), z->G * z->D, z->C, 0.02f, 0);
	if (bias)
		add(N("self_attn.v_proj.bias"), z->G * z->D, 0, 0.02f, 0);
	add(N("self_attn.o_proj.weight"), z->C, z->H * z->D, 0.02f, 0);
	add(N("post_attention_layernorm.weight"), z->C, 0, 0.05f, one);
	if (gemma)
		add(N("pre_feedforward_layernorm.weight"), z->C, 0, 0.05f, one);
	add(N("mlp.gate_proj.weight"), z->F, z->C, 0.02f, 0);
	add(N("mlp.up_proj.weight"), z->F, z->C, 0.02f, 0);
	add(N("mlp.down_proj.weight"), z->C, z->F, 0.02f, 0);
	if (gemma)
		add(N("post_feedforward_layernorm.weight"), z->C, 0, 0.05f, one);
#undef N
}

/* The shape's tensor table (lm_head when untied), split into shards of
 * about equal bytes in file order; the BF16 data bytes in all. */
static size_t list_tensors(void)
{
	nt = 0;
	add("model.embed_tokens.weight", sh->V, sh->C, 0.02f, 0);
	for (int l = 0; l < sh->L; l++)
		layer_tensors(l);
	add("model.norm.weight", sh->C, 0, 0.05f, sh->fam == FAM_GEMMA2 ? 0.0f : 1.0f);
	if (!sh->tied)
		add("lm_head.weight", sh->V, sh->C, 0.02f, 0);

	size_t total = 0, at = 0;
	for (int i = 0; i < nt; i++)
		total += tensor_bytes(&ts[i]);
	int shard = 0;
	size_t off = 0;
	for (int i = 0; i < nt; i++) {
		size_t b = tensor_bytes(&ts[i]);
		if (shard < N_SHARDS - 1 && at > 0 && at + b > total / N_SHARDS * (shard + 1)) {
			shard++;
			off = 0;
		}
		ts[i].shard = shard;
		ts[i].off = off;
		off += b;
		at += b;
	}
	return total;
}

/* ------------------------------------------------------- the directory */

/* float to bfloat16, rounding to nearest even (the values are finite) */
static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* Writes shard k: its safetensors header, then its tensors' random BF16
 * data generated CHUNK values at a time from r (uniform, with the
 * tensor's standard deviation around its offset). */
static int write_shard(int k, struct rng *r, uint16_t *buf)
{
	char path[160], file[64];
	shard_name(file, sizeof file, k);
	snprintf(path, sizeof path, "%s/%s", dir, file);
	size_t cap = 64 + (size_t)nt * 200, len = 0;
	char *hdr = xmalloc(cap);
	len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int i = 0; i < nt; i++) {
		const struct tensor *t = &ts[i];
		if (t->shard != k)
			continue;
		len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%zu",
					t->name, t->d0);
		if (t->d1)
			len += (size_t)snprintf(hdr + len, cap - len, ",%zu", t->d1);
		len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", t->off,
					t->off + tensor_bytes(t));
	}
	len += (size_t)snprintf(hdr + len, cap - len, "}");
	while (len % 8)
		hdr[len++] = ' ';
	FILE *f = fopen(path, "wb");
	if (!f) {
		free(hdr);
		return -1;
	}
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)((uint64_t)len >> (8 * i));
	int bad = fwrite(w, 1, 8, f) != 8 || fwrite(hdr, 1, len, f) != len;
	free(hdr);
	for (int i = 0; i < nt && !bad; i++) {
		const struct tensor *t = &ts[i];
		if (t->shard != k)
			continue;
		size_t total = tensor_bytes(t) / 2;
		for (size_t at = 0; at < total && !bad; at += CHUNK) {
			size_t n = total - at < CHUNK ? total - at : CHUNK;
			for (size_t j = 0; j < n; j++) /* uniform, same variance as the scale */
				buf[j] = to_bf16(t->offset + t->scale * 3.4641f * (rng_uniform(r) - 0.5f));
			bad = fwrite(buf, 2, n, f) != n;
		}
	}
	return fclose(f) != 0 || bad ? -1 : 0;
}

static int write_index(size_t total)
{
	char path[160], file[64];
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\n  \"metadata\": {\"total_size\": %zu},\n  \"weight_map\": {", total);
	for (int i = 0; i < nt; i++) {
		shard_name(file, sizeof file, ts[i].shard);
		fprintf(f, "%s\n    \"%s\": \"%s\"", i ? "," : "", ts[i].name, file);
	}
	fprintf(f, "\n  }\n}\n");
	return fclose(f);
}

/* The shape's config.json, spelled as its model's (fields the loader
 * ignores included). */
static void print_config(FILE *f)
{
	const struct shape *z = sh;
	switch (z->fam) {
	case FAM_QWEN2:
		fprintf(f, "{\n  \"architectures\": [\"Qwen2ForCausalLM\"],\n  \"attention_dropout\": 0.0,\n"
			   "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151643,\n"
			   "  \"hidden_act\": \"silu\",\n  \"hidden_size\": %d,\n  \"head_dim\": %d,\n"
			   "  \"initializer_range\": 0.02,\n  \"intermediate_size\": %d,\n"
			   "  \"max_position_embeddings\": %d,\n  \"max_window_layers\": %d,\n"
			   "  \"model_type\": \"qwen2\",\n  \"num_attention_heads\": %d,\n"
			   "  \"num_hidden_layers\": %d,\n  \"num_key_value_heads\": %d,\n"
			   "  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 1000000.0,\n"
			   "  \"sliding_window\": %d,\n  \"tie_word_embeddings\": true,\n"
			   "  \"torch_dtype\": \"bfloat16\",\n  \"use_cache\": true,\n"
			   "  \"use_sliding_window\": false,\n  \"vocab_size\": %d\n}\n",
			z->C, z->D, z->F, z->S, z->L, z->H, z->L, z->G, z->S, z->V);
		break;
	case FAM_LLAMA3:
		fprintf(f, "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, "
			   "\"attention_dropout\": 0.0, \"bos_token_id\": 128000, \"eos_token_id\": 128001, "
			   "\"head_dim\": %d, \"hidden_act\": \"silu\", \"hidden_size\": %d, "
			   "\"initializer_range\": 0.02, \"intermediate_size\": %d, "
			   "\"max_position_embeddings\": %d, \"mlp_bias\": false, \"model_type\": \"llama\", "
			   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, "
			   "\"num_key_value_heads\": %d, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, "
			   "\"rope_scaling\": {\"factor\": %.1f, \"high_freq_factor\": 4.0, "
			   "\"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192, "
			   "\"rope_type\": \"llama3\"}, \"rope_theta\": 500000.0, "
			   "\"tie_word_embeddings\": %s, \"torch_dtype\": \"bfloat16\", "
			   "\"transformers_version\": \"4.45.0.dev0\", \"use_cache\": true, "
			   "\"vocab_size\": %d}\n",
			z->D, z->C, z->F, z->S, z->H, z->L, z->G, (double)z->rope_factor,
			z->tied ? "true" : "false", z->V);
		break;
	case FAM_GEMMA2:
		fprintf(f, "{\"architectures\": [\"Gemma2ForCausalLM\"], \"attention_bias\": false, "
			   "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": 50.0, \"bos_token_id\": 2, "
			   "\"cache_implementation\": \"hybrid\", \"eos_token_id\": 1, "
			   "\"final_logit_softcapping\": 30.0, \"head_dim\": %d, "
			   "\"hidden_act\": \"gelu_pytorch_tanh\", \"hidden_activation\": \"gelu_pytorch_tanh\", "
			   "\"hidden_size\": %d, \"initializer_range\": 0.02, \"intermediate_size\": %d, "
			   "\"max_position_embeddings\": %d, \"model_type\": \"gemma2\", "
			   "\"num_attention_heads\": %d, \"num_hidden_layers\": %d, "
			   "\"num_key_value_heads\": %d, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, "
			   "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"sliding_window\": 4096, "
			   "\"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.42.4\", "
			   "\"use_cache\": true, \"vocab_size\": %d}\n",
			z->D, z->C, z->F, z->S, z->H, z->L, z->G, z->V);
		break;
	}
}

static int write_config(void)
{
	char path[160];
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	print_config(f);
	return fclose(f);
}

/* Writes the whole directory; its bytes on disk (config, index, shards) in
 * *bytes, the BF16 data bytes in *data.  0 or -1. */
static int write_dir(const char *shared, double *bytes, double *data)
{
	size_t total = list_tensors();
	struct rng r;
	rng_seed(&r, 42);
	uint16_t *buf = xmalloc(CHUNK * sizeof *buf);
	int rc = write_config() || write_index(total) || bench_link_gpt2_tokenizer(shared, dir) ? -1 : 0;
	for (int k = 0; k < N_SHARDS && rc == 0; k++)
		rc = write_shard(k, &r, buf);
	free(buf);
	*data = (double)total;
	*bytes = 0;
	static const char *const small[] = { "config.json", "model.safetensors.index.json" };
	for (int k = 0; k < N_SHARDS + 2 && rc == 0; k++) {
		char path[160], file[64];
		if (k < 2)
			snprintf(file, sizeof file, "%s", small[k]);
		else
			shard_name(file, sizeof file, k - 2);
		snprintf(path, sizeof path, "%s/%s", dir, file);
		struct stat st;
		if (stat(path, &st) != 0)
			return -1;
		*bytes += (double)st.st_size;
	}
	return rc;
}

/* ------------------------------------------------------- the GGUF file */

/* The GGUF tensors of a Llama shape as llama.cpp's converter names them:
 * every matrix Q4_K, the norms F32, rope_freqs.weight the llama3 rule's
 * divisors; offsets aligned to GGUF_ALIGN.  The data bytes after the
 * header. */
static size_t list_gguf(void)
{
	const struct shape *z = sh;
	char name[80];
	nt = 0;
	add_typed("token_embd.weight", z->V, z->C, GGML_Q4_K, 0, 0);
	for (int l = 0; l < z->L; l++) {
#define N(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
		add_typed(N("attn_norm.weight"), z->C, 0, GGML_F32, 0.05f, 1.0f);
		add_typed(N("attn_q.weight"), z->H * z->D, z->C, GGML_Q4_K, 0, 0);
		add_typed(N("attn_k.weight"), z->G * z->D, z->C, GGML_Q4_K, 0, 0);
		add_typed(N("attn_v.weight"), z->G * z->D, z->C, GGML_Q4_K, 0, 0);
		add_typed(N("attn_output.weight"), z->C, z->H * z->D, GGML_Q4_K, 0, 0);
		add_typed(N("ffn_norm.weight"), z->C, 0, GGML_F32, 0.05f, 1.0f);
		add_typed(N("ffn_gate.weight"), z->F, z->C, GGML_Q4_K, 0, 0);
		add_typed(N("ffn_up.weight"), z->F, z->C, GGML_Q4_K, 0, 0);
		add_typed(N("ffn_down.weight"), z->C, z->F, GGML_Q4_K, 0, 0);
#undef N
	}
	add_typed("output_norm.weight", z->C, 0, GGML_F32, 0.05f, 1.0f);
	if (!z->tied)
		add_typed("output.weight", z->V, z->C, GGML_Q4_K, 0, 0);
	add_typed("rope_freqs.weight", (size_t)z->D / 2, 0, GGML_F32, 0, 0);
	size_t off = 0;
	for (int i = 0; i < nt; i++) {
		off = (off + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
		ts[i].off = off;
		off += tensor_bytes(&ts[i]);
	}
	return off;
}

static void put_u32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f); /* little-endian machines only, as the reader */
}

static void put_u64(FILE *f, uint64_t v)
{
	fwrite(&v, 8, 1, f);
}

static void put_str(FILE *f, const char *s)
{
	put_u64(f, strlen(s));
	fwrite(s, 1, strlen(s), f);
}

enum { GV_U32 = 4, GV_F32 = 6, GV_STRING = 8 }; /* gguf.h's value types */

static void kv_u32(FILE *f, const char *key, uint32_t v)
{
	put_str(f, key);
	put_u32(f, GV_U32);
	put_u32(f, v);
}

static void kv_f32(FILE *f, const char *key, float v)
{
	put_str(f, key);
	put_u32(f, GV_F32);
	fwrite(&v, 4, 1, f);
}

static void kv_str(FILE *f, const char *key, const char *v)
{
	put_str(f, key);
	put_u32(f, GV_STRING);
	put_str(f, v);
}

/* The metadata llama.cpp's converter writes for a Llama 3 model (its
 * tokenizer left out: GPT-2's is given to the loader). */
static void gguf_header(FILE *f)
{
	const struct shape *z = sh;
	fwrite("GGUF", 1, 4, f);
	put_u32(f, 3);
	put_u64(f, (uint64_t)nt);
	put_u64(f, 14);
	kv_str(f, "general.architecture", "llama");
	kv_str(f, "general.name", z->name);
	kv_u32(f, "general.file_type", 14); /* MOSTLY_Q4_K_S: every matrix Q4_K */
	kv_u32(f, "general.alignment", GGUF_ALIGN);
	kv_u32(f, "llama.block_count", (uint32_t)z->L);
	kv_u32(f, "llama.context_length", (uint32_t)z->S);
	kv_u32(f, "llama.embedding_length", (uint32_t)z->C);
	kv_u32(f, "llama.feed_forward_length", (uint32_t)z->F);
	kv_u32(f, "llama.attention.head_count", (uint32_t)z->H);
	kv_u32(f, "llama.attention.head_count_kv", (uint32_t)z->G);
	kv_f32(f, "llama.rope.freq_base", 500000.0f);
	kv_f32(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
	kv_u32(f, "llama.rope.dimension_count", (uint32_t)z->D);
	kv_u32(f, "llama.vocab_size", (uint32_t)z->V);
	for (int i = 0; i < nt; i++) {
		const struct tensor *t = &ts[i];
		put_str(f, t->name);
		put_u32(f, t->d1 ? 2 : 1);
		put_u64(f, t->d1 ? t->d1 : t->d0); /* ne[0]: the row */
		if (t->d1)
			put_u64(f, t->d0);
		put_u32(f, t->type);
		put_u64(f, t->off);
	}
}

/* The llama3 rule's divisor of each of the n = D / 2 rotary pairs, as the
 * converter computes rope_freqs (theta 500000, original context 8192, low
 * and high frequency factors 1 and 4). */
static void llama3_divisors(float *out, int n)
{
	double theta = 500000.0, orig = 8192.0, lo = 1.0, hi = 4.0, k = sh->rope_factor;
	for (int i = 0; i < n; i++) {
		double wave = 2.0 * 3.14159265358979323846 * pow(theta, 2.0 * i / (2.0 * n));
		if (wave < orig / hi)
			out[i] = 1.0f;
		else if (wave > orig / lo)
			out[i] = (float)k;
		else {
			double s = (orig / wave - lo) / (hi - lo);
			out[i] = (float)(1.0 / ((1.0 - s) / k + s));
		}
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n random Q4_K blocks: random scales, mins and quants, d about 1e-4 and
 * dmin 7.5 d (finite halves), so that d sc q - dmin mn is centred near 0
 * with a spread of about 0.02. */
static void q4k_blocks(unsigned char *out, size_t n, uint64_t *s)
{
	for (size_t b = 0; b < n; b++, out += Q4K_BYTES) {
		for (int i = 0; i < Q4K_BYTES; i += 8) {
			uint64_t r = xorshift(s);
			memcpy(out + i, &r, 8);
		}
		float d = 1e-4f * (0.75f + 0.5f * (float)out[4] / 255.0f);
		uint16_t hd = f32_to_f16(d), hm = f32_to_f16(7.5f * d);
		memcpy(out, &hd, 2);
		memcpy(out + 2, &hm, 2);
	}
}

/* Writes the data of tensor t at its offset (padding before it). */
static int gguf_tensor_data(FILE *f, const struct tensor *t, size_t *at, void *buf,
			    struct rng *r, uint64_t *s)
{
	static const unsigned char zero[GGUF_ALIGN];
	if (t->off > *at && fwrite(zero, 1, t->off - *at, f) != t->off - *at)
		return -1;
	*at = t->off + tensor_bytes(t);
	if (t->type == GGML_Q4_K) {
		size_t blocks = tensor_bytes(t) / Q4K_BYTES, per = CHUNK / 64;
		for (size_t b = 0; b < blocks; b += per) {
			size_t n = blocks - b < per ? blocks - b : per;
			q4k_blocks(buf, n, s);
			if (fwrite(buf, Q4K_BYTES, n, f) != n)
				return -1;
		}
		return 0;
	}
	float *x = buf; /* F32 vectors: a norm's scales or rope_freqs */
	if (!strcmp(t->name, "rope_freqs.weight"))
		llama3_divisors(x, (int)t->d0);
	else
		for (size_t j = 0; j < t->d0; j++)
			x[j] = t->offset + t->scale * 3.4641f * (rng_uniform(r) - 0.5f);
	return fwrite(x, 4, t->d0, f) == t->d0 ? 0 : -1;
}

/* Writes path: the header, padding, then every tensor's data.  Its bytes
 * in *bytes.  0 or -1. */
static int write_gguf(const char *path, double *bytes)
{
	list_gguf();
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	gguf_header(f);
	long h = ftell(f);
	size_t at = 0;
	for (size_t pad = (GGUF_ALIGN - (size_t)h % GGUF_ALIGN) % GGUF_ALIGN; pad; pad--)
		fputc(0, f);
	void *buf = xmalloc((size_t)CHUNK / 64 * Q4K_BYTES > (size_t)CHUNK * 4 ?
			    (size_t)CHUNK / 64 * Q4K_BYTES : (size_t)CHUNK * 4);
	struct rng r;
	rng_seed(&r, 43);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	int rc = 0;
	for (int i = 0; i < nt && rc == 0; i++)
		rc = gguf_tensor_data(f, &ts[i], &at, buf, &r, &s);
	free(buf);
	int bad = ferror(f);
	rc = fclose(f) != 0 || bad || rc ? -1 : 0;
	struct stat st;
	if (rc == 0 && stat(path, &st) != 0)
		rc = -1;
	*bytes = rc ? 0 : (double)st.st_size;
	return rc;
}

/* ------------------------------------------------------- the children */

#define N_VARIANTS 3

struct variant {
	const char *name;
	int kv_asked; /* 0: the native options */
	int kv_used;  /* run_kv_heads */
	double median_ms, min_ms, warm_ms, cpu_per_wall, run_bytes;
	double flops;     /* matmul FLOPs of one pass with kv_used K/V heads */
	struct spread paired; /* over the passes of (pass ms / its FLOPs at the
			       * sgemm rate measured just before it) */
	double sgemm_med; /* median of those sgemm rates, GFLOP/s */
	int reps;
};

/* What a child is asked: the weights as F32 (ATTNSCOPE_WEIGHTS=f32) or as
 * the loader holds them by default, and the forward variants to time
 * after the load (nv of v; 0: the load alone). */
struct job {
	bool f32;
	int nv;
	struct variant v[N_VARIANTS];
};

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	struct sgemm_rate sg;
	/* load */
	double load_ms, rss_before, rss_after, hwm, n_params, model_bytes;
	int held;	   /* model_is_held */
	char types[48];	   /* model_held_types: "BF16 held", "Q4_K held" or "" */
	char format[32];
	/* forward */
	struct variant v[N_VARIANTS];
	double native_hwm; /* VmHWM after the native passes: the load and a run with capture */
	double fwd_hwm;	   /* after every variant */
	/* beside llama.cpp: its pp ms and our decoder_prefill ms (medians), and
	 * the paired ratio ours / its time over ll_rounds rounds */
	double ll_pp_ms, pre_ms;
	struct spread vs_pp;
	int ll_rounds;
};

static struct result in_child(child_fn fn, const void *arg)
{
	struct result res;
	run_in_child(fn, arg, 0, &res, sizeof res, res.msg, sizeof res.msg);
	return res;
}

static void sgemm_child(const void *arg, void *out)
{
	(void)arg;
	struct result *res = out;
	res->sg = measure_sgemm();
	res->ok = 1;
}

/* Opens load_path with the weights as F32 or as the loader holds them;
 * the time, RSS before and after, VmHWM and what the model holds in res. */
static struct model *load(struct result *res, bool f32)
{
	struct err e;
	const char *fmt = NULL;
	if (f32)
		setenv("ATTNSCOPE_WEIGHTS", "f32", 1);
	else
		unsetenv("ATTNSCOPE_WEIGHTS");
	res->rss_before = proc_status_bytes("VmRSS");
	double t0 = now_ms();
	struct model *m = model_open_ex(load_path, load_tok, &fmt, &e);
	res->load_ms = now_ms() - t0;
	res->hwm = proc_status_bytes("VmHWM");
	res->rss_after = proc_status_bytes("VmRSS");
	if (!m) {
		snprintf(res->msg, sizeof res->msg, "model_open_ex: %s", e.msg);
		return NULL;
	}
	res->n_params = (double)m->n_params;
	res->model_bytes = model_bytes(m);
	res->held = model_is_held(m);
	model_held_types(m, res->types, sizeof res->types);
	snprintf(res->format, sizeof res->format, "%s", fmt);
	return m;
}

static void load_child(const void *arg, void *out)
{
	const struct job *j = arg;
	struct result *res = out;
	struct model *m = load(res, j->f32);
	res->ok = m != NULL;
	model_free(m);
}

/* Times one variant: a warm-up pass (which converts the K/V heads when
 * they differ from the native ones), then up to MAX_REPS passes within
 * ROW_BUDGET_MS, never below MIN_REPS, each after an sgemm measurement
 * (other work on these cores comes and goes: the pair sees the same
 * load).  0, or -1 with res->msg set. */
static int time_variant(struct model *m, const int *tokens, struct variant *v, struct result *res)
{
	struct run_options o;
	run_options_native(m, &o);
	if (v->kv_asked)
		o.kv_heads = v->kv_asked;
	v->kv_used = run_kv_heads(m, &o);
	struct model_config c = m->cfg;
	c.n_kv_head = v->kv_used;
	v->flops = forward_flops(&c, T_RUN);
	struct run *r = run_new(&m->cfg, 1, T_RUN, RUN_LOGITS | RUN_ATTN);
	v->run_bytes = (double)run_bytes(r);
	struct err e;
	double t[MAX_REPS], rate[MAX_REPS], ratio[MAX_REPS], cpu = 0, wall = 0;
	int reps = MAX_REPS, rc = 0;
	for (int i = -1; i < reps && rc == 0; i++) { /* i = -1: warm-up */
		if (i >= 0)
			rate[i] = measure_sgemm().gflops;
		double cpu0 = cpu_time_ms(), t0 = now_ms();
		rc = model_forward(m, &o, tokens, NULL, 1, T_RUN, r, &e);
		double dt = now_ms() - t0;
		if (i < 0) {
			v->warm_ms = dt;
			reps = fit_reps(dt, reps, ROW_BUDGET_MS, MIN_REPS);
		} else {
			t[i] = dt;
			cpu += cpu_time_ms() - cpu0;
			wall += dt;
			ratio[i] = dt / (v->flops / (rate[i] * 1e9) * 1e3);
		}
	}
	run_free(r);
	if (rc != 0) {
		snprintf(res->msg, sizeof res->msg, "model_forward (%s): %s", v->name, e.msg);
		return -1;
	}
	v->reps = reps;
	v->median_ms = median(t, reps);
	v->min_ms = minimum(t, reps);
	v->cpu_per_wall = cpu / wall;
	v->paired = spread_of(ratio, reps);
	v->sgemm_med = median(rate, reps);
	return 0;
}

static void forward_child(const void *arg, void *out)
{
	const struct job *j = arg;
	struct result *res = out;
	struct model *m = load(res, j->f32);
	if (!m)
		return;
	int *tokens = xmalloc(T_RUN * sizeof *tokens);
	random_tokens(tokens, T_RUN, m->tok->vocab_size, 42);
	int rc = 0;
	for (int k = 0; k < j->nv && rc == 0; k++) {
		res->v[k] = j->v[k];
		rc = time_variant(m, tokens, &res->v[k], res);
		if (k == 0)
			res->native_hwm = proc_status_bytes("VmHWM");
	}
	res->fwd_hwm = proc_status_bytes("VmHWM");
	res->ok = rc == 0;
	free(tokens);
	model_free(m);
}

/* ------------------------------------------------------------ reports */

/* One mode's load: times and memory over its children. */
struct load_sum {
	double best, med, extra_max, f32_bytes, model_bytes;
	int held;
	char types[48], format[32];
	char msg[ERR_MAX + 32]; /* why it failed */
};

/* One mode's forward child: its native pass and the child's peak. */
struct fwd_sum {
	struct spread paired;
	double median_ms, run_bytes, native_hwm;
};

static const char *mode_name(bool f32)
{
	return f32 ? "as F32 (ATTNSCOPE_WEIGHTS=f32)" : "as the loader holds them (the default)";
}

/* Loads load_path once in each of reps children and reports the time and
 * memory.  0, or -1 with s->msg set. */
static int report_load(bool f32, int reps, double file_bytes, struct load_sum *s)
{
	struct job j = { .f32 = f32 };
	printf("\nmodel_open_ex, weights %s, one load in each of %d child%s\n"
	       "  (MB = 2^20 bytes; extra = VmHWM after the load - VmRSS before it; "
	       "MemAvailable now %.1f MB)\n", mode_name(f32), reps, reps == 1 ? "" : "ren",
	       mem_available() / MB);
	struct result ld[LOAD_REPS];
	double t[LOAD_REPS];
	*s = (struct load_sum){ 0 };
	for (int i = 0; i < reps; i++) {
		ld[i] = in_child(load_child, &j);
		if (!ld[i].ok) {
			snprintf(s->msg, sizeof s->msg, "%s", ld[i].msg);
			printf("  load %d: %s\n", i + 1, ld[i].msg);
			return -1;
		}
		t[i] = ld[i].load_ms;
		double extra = ld[i].hwm - ld[i].rss_before;
		s->extra_max = extra > s->extra_max ? extra : s->extra_max;
		printf("  load %d: %8.0f ms  RSS before %7.1f MB, after %7.1f MB, peak %7.1f MB, "
		       "extra %7.1f MB\n", i + 1, ld[i].load_ms, ld[i].rss_before / MB,
		       ld[i].rss_after / MB, ld[i].hwm / MB, extra / MB);
	}
	s->best = minimum(t, reps);
	s->med = median(t, reps);
	s->f32_bytes = ld[0].n_params * 4.0;
	s->model_bytes = ld[0].model_bytes;
	s->held = ld[0].held;
	snprintf(s->types, sizeof s->types, "%s", ld[0].types);
	snprintf(s->format, sizeof s->format, "%s", ld[0].format);
	printf("  format %s, %.0f parameters; weights in memory %.1f MB (%s)\n"
	       "  best %.0f ms, median %.0f ms (%.0f MB/s of the files at the best)\n"
	       "  memory: largest extra %.1f MB = %.3fx the files (%.1f MB) = %.3fx the F32 "
	       "parameters (%.1f MB)\n",
	       s->format, ld[0].n_params, s->model_bytes / MB,
	       s->held ? s->types : "every weight F32", s->best, s->med,
	       file_bytes / MB / (s->best / 1e3), s->extra_max / MB, s->extra_max / file_bytes,
	       file_bytes / MB, s->extra_max / s->f32_bytes, s->f32_bytes / MB);
	return 0;
}

static void print_forward_legend(bool f32, double load_ms, double gflops)
{
	printf("\nmodel_forward, weights %s, B = 1, T = %d, RUN_LOGITS | RUN_ATTN\n"
	       "  (one child: load %.0f ms, then each row's warm-up and passes)\n"
	       "  median (min) ms of `reps` after 1 warm-up (warm ms: it converts the K/V heads when "
	       "they change);\n"
	       "  kv       K/V heads asked -> computed (run_kv_heads); GFLOP = matmul FLOPs with those\n"
	       "  cpu/wall CPU time of all threads / wall time over the passes\n"
	       "  ratio    median ms / (GFLOP at the %.1f GFLOP/s measured first)\n"
	       "  paired   each pass follows an sgemm measurement (median rate: sgemm): the median of "
	       "(pass ms / GFLOP\n"
	       "           at that rate); other work on these cores comes and goes, the pair sees the "
	       "same load;\n"
	       "           the verdict is on it, target <= %.1fx\n",
	       mode_name(f32), T_RUN, load_ms, gflops, FWD_TARGET);
	printf("  %-9s %7s %9s %9s %9s %8s %7s %8s %7s %8s %7s %-7s %7s %4s\n", "", "kv", "median ms",
	       "min ms", "warm ms", "cpu/wall", "GFLOP", "GFLOP/s", "ratio", "sgemm", "paired", "",
	       "run MB", "reps");
}

/* The forward pass with capture in one child (nv variants: native first)
 * and where the FLOPs go.  0, or -1 (printed). */
static int report_forward(bool f32, int nv, double gflops, struct fwd_sum *s)
{
	const struct shape *z = sh;
	struct job j = { .f32 = f32, .nv = nv, .v = {
		{ .name = "native", .kv_asked = 0 },
		{ .name = "attn mha", .kv_asked = z->H },
		{ .name = "attn mqa", .kv_asked = 1 },
	} };
	struct result fw = in_child(forward_child, &j);
	if (!fw.ok) {
		printf("bench_hf: forward (weights %s): %s\n", mode_name(f32), fw.msg);
		return -1;
	}
	print_forward_legend(f32, fw.load_ms, gflops);
	for (int k = 0; k < nv; k++) {
		const struct variant *v = &fw.v[k];
		char kv[16];
		snprintf(kv, sizeof kv, "%d->%d", v->kv_asked ? v->kv_asked : z->G, v->kv_used);
		printf("  %-9s %7s %9.1f %9.1f %9.1f %8.2f %7.1f %8.1f %6.2fx %8.1f %6.2fx %-7s %7.1f %4d\n",
		       v->name, kv, v->median_ms, v->min_ms, v->warm_ms, v->cpu_per_wall, v->flops / 1e9,
		       v->flops / 1e9 / (v->median_ms / 1e3), v->median_ms / (v->flops / (gflops * 1e6)),
		       v->sgemm_med, v->paired.med, verdict(v->paired.med, true, FWD_TARGET),
		       v->run_bytes / MB, v->reps);
	}
	const struct variant *nat = &fw.v[0];
	double t = T_RUN, L = z->L, qkv = 2 * t * z->C * (z->H + 2 * z->G) * z->D;
	double proj = 2 * t * (z->H * z->D) * z->C, mlp = 2 * t * z->C * 3.0 * z->F;
	double att = 2.0 * 2.0 * t * t * z->H * z->D, head = 2 * t * z->C * z->V;
	printf("  native matmul FLOPs: QKV %.1f%%, o_proj %.1f%%, MLP %.1f%%, attention %.1f%% "
	       "(all %d layers), LM head %.1f%% (%d x %d x %d)\n",
	       100 * L * qkv / nat->flops, 100 * L * proj / nat->flops, 100 * L * mlp / nat->flops,
	       100 * L * att / nat->flops, z->L, 100 * head / nat->flops, T_RUN, z->C, z->V);
	printf("  forward child peak RSS (VmHWM): %.1f MB after the native passes, %.1f MB after "
	       "every row\n", fw.native_hwm / MB, fw.fwd_hwm / MB);
	s->paired = nat->paired;
	s->median_ms = nat->median_ms;
	s->run_bytes = nat->run_bytes;
	s->native_hwm = fw.native_hwm;
	return 0;
}

/* The memory verdict of one mode: the peak of the child that loaded and
 * ran the native passes against PEAK_FILES x the files + the capture (the
 * run's buffers); a summary row under name. */
static void report_peak(const char *name, double peak, double file_bytes, double capture)
{
	double limit = PEAK_FILES * file_bytes + capture;
	printf("  peak %.1f MB = %.3fx the files (%.1f MB); target <= %.1fx the files + the capture "
	       "(%.1f MB) = %.1f MB = %.3fx the files: %s\n", peak / MB, peak / file_bytes,
	       file_bytes / MB, PEAK_FILES, capture / MB, limit / MB, limit / file_bytes,
	       peak <= limit ? "meets" : "misses");
	char target[32];
	snprintf(target, sizeof target, "<= %.2f", limit / file_bytes);
	double r = peak / file_bytes;
	bench_summary_text(name, (struct spread){ r, r, r, 1 }, target,
			   peak <= limit ? "meets" : "misses");
}

/* Loads and runs load_path with the weights as the loader holds them and,
 * when f32_too, as F32: the load, forward and memory rows, summary rows
 * named from `what` ("hf Llama-3.2-1B BF16").  0, or -1 after a load or a
 * pass that failed (printed; a load model_open_ex refuses, for its memory
 * check or the config's limits, is a "refused" row, a child that died a
 * "failed" one). */
static int measure(const char *what, double file_bytes, bool f32_too, int nv, double gflops)
{
	int reps = sh->big ? 1 : LOAD_REPS;
	struct load_sum ls[2];
	struct fwd_sum fs[2];
	char name[128];
	for (int mode = 0; mode < (f32_too ? 2 : 1); mode++) {
		bool f32 = mode == 1;
		if (report_load(f32, reps, file_bytes, &ls[mode]) != 0) {
			snprintf(name, sizeof name, "%s %s load", what, f32 ? "f32" : "default");
			bench_summary_text(name, (struct spread){ 0 }, "-",
					   strncmp(ls[mode].msg, "model_open_ex", 13) ? "failed" : "refused");
			return -1;
		}
		if (report_forward(f32, f32 ? 1 : nv, gflops, &fs[mode]) != 0)
			return -1;
		const char *tag = f32 ? "F32" : ls[mode].held ? "held" : "F32";
		snprintf(name, sizeof name, "%s %s fwd+capture T=%d / floor", what, tag, T_RUN);
		bench_summary_row(name, fs[mode].paired, true, FWD_TARGET);
		snprintf(name, sizeof name, "%s %s peak / file", what, tag);
		report_peak(name, fs[mode].native_hwm, file_bytes, fs[mode].run_bytes);
	}
	if (!f32_too)
		return 0;
	double lr = ls[0].best / ls[1].best, fr = fs[0].paired.med / fs[1].paired.med;
	printf("\n%s held against F32: load %.0f / %.0f ms = %.2fx (best of each); forward %.1f / "
	       "%.1f ms = %.2fx (medians), paired ratios %.3fx / %.3fx = %.2fx; peak %.1f / %.1f MB "
	       "= %.2fx\n", what, ls[0].best, ls[1].best, lr, fs[0].median_ms, fs[1].median_ms,
	       fs[0].median_ms / fs[1].median_ms, fs[0].paired.med, fs[1].paired.med, fr,
	       fs[0].native_hwm / MB, fs[1].native_hwm / MB, fs[0].native_hwm / fs[1].native_hwm);
	snprintf(name, sizeof name, "%s load held / F32", what);
	bench_summary_text(name, (struct spread){ lr, lr, lr, 1 }, "-", "info");
	snprintf(name, sizeof name, "%s fwd held / F32 (paired)", what);
	bench_summary_text(name, (struct spread){ fr, fr, fr, 1 }, "-", "info");
	return 0;
}

/* ------------------------------------------------------ beside llama.cpp */

#define LL_ROUNDS 5
static char ll_gguf[600]; /* the shape as an F16 GGUF file, for both programs */

/* In a child: load_path (the F16 GGUF file, held as F16) and, LL_ROUNDS
 * times, llama-bench's prompt of T_RUN tokens on the same file, then
 * decoder_prefill of T_RUN tokens (after one warm-up, as llama-bench has):
 * the same work, the keys and values kept and the last position's logits. */
static void llama_child(const void *arg, void *out)
{
	(void)arg;
	struct result *res = out;
	struct model *m = load(res, false);
	if (!m)
		return;
	struct run_options o;
	run_options_native(m, &o);
	int tok[T_RUN], cores = (int)sysconf(_SC_NPROCESSORS_ONLN), n = 0;
	random_tokens(tok, T_RUN, m->cfg.vocab_size, 3);
	double ll[LL_ROUNDS], pre[LL_ROUNDS], ratio[LL_ROUNDS], tg;
	for (int i = 0; i < LL_ROUNDS; i++)
		if (llama_bench_once(llama_bench_path(), ll_gguf, T_RUN, 0, cores, &ll[n], &tg) == 0 &&
		    llama_prefill_ms(m, &o, tok, T_RUN, &pre[n]) == 0) {
			ratio[n] = pre[n] / ll[n];
			n++;
		}
	model_free(m);
	if (!n) {
		snprintf(res->msg, sizeof res->msg, "llama-bench or decoder_prefill failed every round");
		return;
	}
	res->ll_pp_ms = median(ll, n);
	res->pre_ms = median(pre, n);
	res->vs_pp = spread_of(ratio, n);
	res->ll_rounds = n;
	res->ok = 1;
}

/* Shape sh's directory as an F16 GGUF file (tests/tool_mkgguf, GPT-2's
 * tokenizer padded to the vocabulary as llama.cpp wants), then the
 * prompt of T_RUN tokens by llama-bench and by decoder_prefill on it
 * (llama_child), paired.  Where LLAMA_BENCH names no llama-bench, says
 * so.  The file is removed after. */
static void llama_shape(const char *root, const char *shared, const char *self)
{
	if (!llama_bench_path()) {
		printf("\nllama.cpp: not measured (LLAMA_BENCH does not name a llama-bench binary)\n");
		return;
	}
	char tok[600], vocab[32];
	snprintf(ll_gguf, sizeof ll_gguf, "%s/%s-F16.gguf", root, sh->name);
	snprintf(tok, sizeof tok, "%s/tokenizers/gpt2", shared);
	snprintf(vocab, sizeof vocab, "%d", sh->V);
	const char *args[] = { "--from", dir, "--arch", "qwen2", "--type", "f16", "--tokdir", tok,
			       "--pad-vocab", vocab, NULL };
	printf("\n== %s, F16 GGUF, beside llama.cpp ==\n", sh->name);
	if (llama_write_gguf(self, ll_gguf, args) != 0) {
		printf("  cannot write %s with tests/tool_mkgguf (make test builds it)\n", ll_gguf);
		return;
	}
	load_path = ll_gguf;
	load_tok = NULL;
	struct result r = in_child(llama_child, NULL);
	load_path = dir;
	remove(ll_gguf);
	if (!r.ok) {
		printf("  FAILED: %s\n", r.msg);
		return;
	}
	printf("  %s, weights %s; llama-bench -p %d (its own warm-up, one timed run a round) and\n"
	       "  decoder_prefill of %d tokens (one warm-up, then timed), %d rounds:\n"
	       "    llama.cpp pp%d      %8.1f ms = %6.1f tokens/s\n"
	       "    decoder_prefill    %8.1f ms = %6.1f tokens/s\n"
	       "    ours / llama.cpp's time, paired: %.3f (%.3f..%.3f)\n",
	       sh->name, r.types[0] ? r.types : "as F32", T_RUN, T_RUN, r.ll_rounds, T_RUN, r.ll_pp_ms,
	       T_RUN / (r.ll_pp_ms / 1e3), r.pre_ms, T_RUN / (r.pre_ms / 1e3), r.vs_pp.med,
	       r.vs_pp.min, r.vs_pp.max);
	char name[96];
	snprintf(name, sizeof name, "%s F16 held prefill %d / llama.cpp pp%d", sh->name, T_RUN,
		 T_RUN);
	bench_summary_row(name, r.vs_pp, true, 1.0);
}

/* ----------------------------------------------------------------- main */

static void remove_tree(const char *path)
{
	nftw(path, bench_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes the directory of shape sh under root and reports it; its bytes
 * (config, index, shards) in *file_bytes.  0 or -1. */
static int write_shape(const char *root, const char *shared, double *file_bytes)
{
	static char path[256];
	const struct shape *z = sh;
	snprintf(path, sizeof path, "%s/%s", root, z->name);
	if (mkdir(path, 0755) != 0) {
		perror("bench_hf: mkdir");
		return -1;
	}
	dir = path;
	double t0 = now_ms(), bf16_bytes = 0;
	if (write_dir(shared, file_bytes, &bf16_bytes) != 0) {
		printf("bench_hf: cannot write the model directory in %s\n", dir);
		return -1;
	}
	double write_ms = now_ms() - t0;
	printf("\n== %s ==\ndirectory %s: L %d, C %d, H %d, G %d, D %d, F %d, V %d, "
	       "max_position_embeddings %d, %s\n"
	       "  wrote %.1f MB (%d tensors, %.1f MB of BF16 data in %d shards) in %.0f ms "
	       "(%.0f MB/s, random numbers included)\n",
	       z->name, dir, z->L, z->C, z->H, z->G, z->D, z->F, z->V, z->S,
	       z->tied ? "tied" : "untied", *file_bytes / MB, nt, bf16_bytes / MB, N_SHARDS, write_ms,
	       *file_bytes / MB / (write_ms / 1e3));
	return 0;
}

/* Shape sh as a Q4_K GGUF file under root, measured with GPT-2's tokenizer
 * from shared, then removed.  0 or -1. */
static int gguf_shape(const char *root, const char *shared, double gflops)
{
	static char path[256], tok[600];
	snprintf(path, sizeof path, "%s/%s-Q4_K.gguf", root, sh->name);
	snprintf(tok, sizeof tok, "%s/tokenizers/gpt2", shared);
	double t0 = now_ms(), bytes = 0;
	if (write_gguf(path, &bytes) != 0) {
		printf("bench_hf: cannot write %s\n", path);
		remove(path);
		return -1;
	}
	double write_ms = now_ms() - t0;
	printf("\n== %s, GGUF ==\n%s: llama, every matrix Q4_K, %s\n"
	       "  wrote %.1f MB (%d tensors) in %.0f ms (%.0f MB/s, random bytes included); "
	       "tokenizer %s\n", sh->name, path, sh->tied ? "tied" : "untied", bytes / MB, nt,
	       write_ms, bytes / MB / (write_ms / 1e3), tok);
	load_path = path;
	load_tok = tok;
	char what[96];
	snprintf(what, sizeof what, "gguf %s Q4_K", sh->name);
	int rc = measure(what, bytes, false, 1, gflops);
	remove(path);
	return rc;
}

/* The shapes named on the command line; without any, the default ones
 * and, with BENCH_HF_8B set (not 0), the big ones.  0, or -1 after naming
 * one that is not in the table. */
static int pick_shapes(int argc, char **argv, bool *on)
{
	const char *b = getenv("BENCH_HF_8B");
	bool big = b && *b && strcmp(b, "0");
	for (int k = 0; k < N_SHAPES; k++)
		on[k] = argc < 2 && (!shapes[k].big || big);
	for (int i = 1; i < argc; i++) {
		int k = 0;
		while (k < N_SHAPES && strcasecmp(argv[i], shapes[k].name))
			k++;
		if (k == N_SHAPES) {
			fprintf(stderr, "bench_hf: no shape %s (Qwen2.5-0.5B, Llama-3.2-1B, gemma-2-2b, "
				"Llama-3-8B)\n", argv[i]);
			return -1;
		}
		on[k] = true;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bool on[N_SHAPES];
	if (pick_shapes(argc, argv, on))
		return 2;
	char vocab[600];
	const char *shared = bench_gpt2_shared(vocab, sizeof vocab);
	if (!shared) {
		printf("bench_hf: skipped (no GPT-2 tokenizer at %s)\n", vocab);
		return 0;
	}
	double t_start = now_ms();
	engine_set_threads(0);
	printf("bench_hf — published shapes as Hugging Face BF16 directories (2 shards) and, for the "
	       "Llama shapes, Q4_K GGUF files, random weights: loading, held and as F32, and a "
	       "forward pass with capture at T = %d\n\n", T_RUN);
	print_machine();

	struct result sg = in_child(sgemm_child, NULL);
	if (!sg.ok) {
		printf("bench_hf: sgemm: %s\n", sg.msg);
		return 1;
	}
	double gflops = sg.sg.gflops;
	printf("\nsgemm %dx%dx%d: median %.3f ms, min %.3f ms of %d, cpu/wall %.2f -> %.1f GFLOP/s "
	       "(median; the rate below), %.1f (best)\n",
	       SGEMM_M, SGEMM_N, SGEMM_K, sg.sg.median_ms, sg.sg.min_ms, SGEMM_REPS,
	       sg.sg.cpu_per_wall, gflops, sg.sg.best_gflops);
	const char *root = bench_tmpdir("hf");
	if (!root) {
		perror("bench_hf: mkdtemp");
		return 1;
	}
	for (int k = 0; k < N_SHAPES; k++) {
		if (!on[k])
			continue;
		sh = &shapes[k];
		double file_bytes = 0;
		if (write_shape(root, shared, &file_bytes))
			return 1;
		load_path = dir;
		load_tok = NULL;
		char what[96];
		snprintf(what, sizeof what, "hf %s BF16", sh->name);
		/* the big shape: no F32 mode (it does not fit), the native pass alone */
		int rc = measure(what, file_bytes, !sh->big, sh->big ? 1 : N_VARIANTS, gflops);
		if (!rc && sh->fam == FAM_QWEN2)
			llama_shape(root, shared, argv[0]);
		remove_tree(dir);
		if (rc && !sh->big)
			return 1;
		if (sh->fam == FAM_LLAMA3 && gguf_shape(root, shared, gflops) && !sh->big)
			return 1;
	}
	print_end(t_start);
	return 0;
}
