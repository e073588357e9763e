/*
 * test_gguf.c — GGUF files (loader-gguf.c, gguf.c, quant.c,
 * gguf-vocab.c), written by tests/gguf_write.c:
 *   - hand-made blocks of every quantized type decode to the values the
 *     block layouts define (golden values worked out from the layouts);
 *   - every quantized type round-trips within the error its block predicts
 *     (gq_bound: half a step of the sub-block's stored grid, or the distance
 *     to the grid's ends), element by element;
 *   - ggml_dequantize (AVX2 for Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) gives the
 *     floats of ggml_dequantize_ref, the scalar reference, bit for bit on
 *     400 random blocks of every quantized type with random finite halves
 *     (subnormal and negative among them);
 *   - each architecture (llama, qwen2, qwen3, gpt2, gptneox, bert) in F32, F16 and
 *     BF16 loads to the config and weights of the same model's attnscope
 *     checkpoint written in the same type (BF16: a checkpoint of BF16
 *     tensors), and its attention and loss match to 1e-4;
 *   - each architecture in each quantized type holds every weight within
 *     its block's bound of the original, and its loss (decoders) or
 *     attention (BERT) within the tolerance stated per type;
 *   - the tokenizer rebuilt from tokenizer.ggml.* metadata gives the ids of
 *     the same tokenizer read from its own files, on every string of the
 *     expectation tables, for GPT-2, Llama 3, Qwen2.5, llama2.c (Llama 2's
 *     SentencePiece) and BERT; Gemma 2's and 3's (a llama tokenizer with
 *     add_space_prefix false, written from their tokenizer.json) on all
 *     but 4 named strings of their tables; pre "dbrx" as llama.cpp splits
 *     it;
 *   - heads wider or narrower than embedding_length / head_count
 *     (attention.key_length) load as their checkpoint does, Qwen3's q/k
 *     norm with them;
 *   - what the engine cannot run (RoPE scaling, experts, qwen3moe, other
 *     tokenizers) is refused by name, a Qwen3 file without its q/k norm
 *     names the missing tensor, and damaged files fail with one line
 *     naming the file and the problem.
 * Needs ../shared/tokenizers (or $ATTNSCOPE_SHARED) for GPT-2 and llama2.c.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint.h"
#include "config.h"
#include "gguf.h"
#include "gguf_write.h"
#include "loader.h"
#include "loaders.h"
#include "model.h"
#include "tok-hfjson.h"
#include "tok-wordpiece.h"
#include "tok_expect.h"
#include "tokenizer.h"
#include "util.h"

static char tmp[64];

static char *path_of(const char *name)
{
	static char bufs[4][256];
	static int k;
	char *b = bufs[k++ % 4];
	snprintf(b, sizeof bufs[0], "%s/%s", tmp, name);
	return b;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* ------------------------------------------------------ a tiny tokenizer */

/* GPT-2's byte-level alphabet and 8 merges, as test_loaders.c has it:
 * vocab.json + merges.txt in tmp, 265 tokens. */
#define TINY_V 265
static void write_tiny_bpe(void)
{
	static const char *const merges[][2] = {
		{ "\xc4\xa0", "t" }, { "h", "e" }, { "\xc4\xa0t", "he" }, { "i", "n" },
		{ "\xc4\xa0", "a" }, { "e", "r" }, { "o", "n" }, { "\xc4\xa0", "c" },
	};
	json_t *v = json_object();
	int next = 256;
	for (int b = 0; b < 256; b++) {
		int self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
		char s[4];
		s[utf8_encode((uint32_t)(self ? b : next++), s)] = '\0';
		json_object_set_new(v, s, json_integer(b));
	}
	char text[512] = "#version: 0.2\n";
	for (int i = 0; i < 8; i++) {
		char t[16];
		snprintf(t, sizeof t, "%s%s", merges[i][0], merges[i][1]);
		json_object_set_new(v, t, json_integer(256 + i));
		snprintf(text + strlen(text), sizeof text - strlen(text), "%s %s\n", merges[i][0],
			 merges[i][1]);
	}
	json_object_set_new(v, "<|endoftext|>", json_integer(TINY_V - 1));
	assert_int_equal(json_dump_file(v, path_of("vocab.json"), 0), 0);
	json_decref(v);
	FILE *f = fopen(path_of("merges.txt"), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof tmp, "/tmp/attnscope-gguf.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	write_tiny_bpe();
	engine_set_threads(1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* ---------------------------------------------------------------- helpers */

static struct model *open_ok(const char *path, const char *format)
{
	struct err e = { "" };
	const char *fmt = NULL;
	struct model *m = model_open_ex(path, NULL, &fmt, &e);
	if (!m)
		print_error("%s: %s\n", path, e.msg);
	assert_non_null(m);
	assert_string_equal(fmt, format);
	struct model_config c;
	assert_int_equal(model_describe(path, &c, &fmt, &e), 0);
	char *a = checkpoint_config_json(&m->cfg), *b = checkpoint_config_json(&c);
	assert_string_equal(a, b);
	free(a);
	free(b);
	return m;
}

/* Opening must fail with one line naming the file and holding word. */
static void open_fails(const char *path, const char *word)
{
	struct err e = { "" };
	struct model *m = model_open_ex(path, NULL, NULL, &e);
	if (m) {
		model_free(m);
		print_error("%s loaded, but should fail with \"%s\"\n", path, word);
		fail();
	}
	if (!strstr(e.msg, word) || strncmp(e.msg, path, strlen(path))) {
		print_error("message \"%s\" should name %s and say \"%s\"\n", e.msg, path, word);
		fail();
	}
	assert_null(strchr(e.msg, '\n'));
}

/* A model of architecture a with the tiny tokenizer, 4 heads (2 K/V heads
 * where the family has them) D wide (0: C / 4). */
static struct model *tiny_hd(enum ga a, int C, int F, int L, int D, uint64_t seed)
{
	struct err e;
	struct model *m = ga_model_hd(a, TINY_V, L, C, F, 4, ga_gqa(a) ? 2 : 4, D, 64, seed);
	m->tok = tok_bpe_load(tmp, &e);
	assert_non_null(m->tok);
	return m;
}

static struct model *tiny(enum ga a, int C, int F, int L, uint64_t seed)
{
	return tiny_hd(a, C, F, L, 0, seed);
}

/* Writes m as GGUF in type at path, with the tiny tokenizer's metadata. */
static void write_gguf(const struct model *m, enum ga a, uint32_t type, const char *path)
{
	struct gw *w = gw_new();
	ga_write_model(w, m, a, type);
	assert_int_equal(gt_gpt2_dir(w, tmp), 0);
	assert_int_equal(gw_write(w, path, 3, 0), 0);
	gw_free(w);
}

static const char text[] = "the cat sat on the mat in the hat";

/* Runs m on the text: attention (L, 1, H, T, T) and loss. */
static struct run *run_text(struct model *m, int *T)
{
	struct err e;
	int *ids, n, bad;
	assert_int_equal(model_tokenize(m, text, strlen(text), &ids, &n, &bad, &e), 0);
	struct run_options o;
	run_options_native(m, &o);
	struct run *r = run_new(&m->cfg, 1, n, RUN_LOGITS | RUN_ATTN);
	assert_int_equal(model_forward(m, &o, ids, NULL, 1, n, r, &e), 0);
	run_att_fill(r); /* read below as one block */
	free(ids);
	*T = n;
	return r;
}

static double max_diff(const float *a, const float *b, size_t n)
{
	double d = 0;
	for (size_t i = 0; i < n; i++)
		d = fmax(d, fabs((double)a[i] - b[i]));
	return d;
}

/* ------------------------------------------------------------- golden */

static void half_at(unsigned char *p, float x)
{
	uint16_t h = f32_to_f16(x);
	p[0] = (unsigned char)h;
	p[1] = (unsigned char)(h >> 8);
}

static void test_golden_blocks(void **state)
{
	(void)state;
	unsigned char b[256];
	float y[256];
	/* Q8_0: d 0.5, q = j - 16 */
	half_at(b, 0.5f);
	for (int j = 0; j < 32; j++)
		b[2 + j] = (unsigned char)(int8_t)(j - 16);
	ggml_dequantize(GGML_Q8_0, b, y, 1);
	assert_true(y[0] == -8.0f && y[31] == 7.5f);
	/* Q4_0: d 2, byte j holds j (low) and 15 - j (high) */
	half_at(b, 2.0f);
	for (int j = 0; j < 16; j++)
		b[2 + j] = (unsigned char)(j | (15 - j) << 4);
	ggml_dequantize(GGML_Q4_0, b, y, 1);
	assert_true(y[0] == -16 && y[15] == 14 && y[16] == 14 && y[31] == -16);
	/* Q4_1: d 1, m -3 */
	half_at(b, 1.0f);
	half_at(b + 2, -3.0f);
	for (int j = 0; j < 16; j++)
		b[4 + j] = (unsigned char)(j | (15 - j) << 4);
	ggml_dequantize(GGML_Q4_1, b, y, 1);
	assert_true(y[0] == -3 && y[15] == 12 && y[16] == 12 && y[31] == -3);
	/* Q5_0: d 1, qh bits 3 and 20, byte j = j | j << 4 */
	half_at(b, 1.0f);
	uint32_t qh = 1u << 3 | 1u << 20;
	memcpy(b + 2, &qh, 4);
	for (int j = 0; j < 16; j++)
		b[6 + j] = (unsigned char)(j | j << 4);
	ggml_dequantize(GGML_Q5_0, b, y, 1);
	assert_true(y[3] == 3 && y[4] == -12 && y[20] == 4 && y[19] == -13);
	/* Q5_1: d 0.5, m 1, the same bits */
	half_at(b, 0.5f);
	half_at(b + 2, 1.0f);
	memcpy(b + 4, &qh, 4);
	for (int j = 0; j < 16; j++)
		b[8 + j] = (unsigned char)(j | j << 4);
	ggml_dequantize(GGML_Q5_1, b, y, 1);
	assert_true(y[3] == 10.5f && y[20] == 11.0f && y[19] == 2.5f);
	/* Q2_K: scale byte j = (j % 15 + 1) | (j % 3) << 4, every qs byte 0b11100100
	 * (group g reads g), d 1, dmin 0.5: value v = sc * g - 0.5 mn */
	for (int j = 0; j < 16; j++)
		b[j] = (unsigned char)((j % 15 + 1) | (j % 3) << 4);
	memset(b + 16, 0xe4, 64);
	half_at(b + 80, 1.0f);
	half_at(b + 82, 0.5f);
	ggml_dequantize(GGML_Q2_K, b, y, 1);
	assert_true(y[37] == 2.0f);  /* sub-block 2: 3 * 1 - 0.5 * 2 */
	assert_true(y[200] == 26.0f); /* sub-block 12: 13 * 2 - 0 */
	assert_true(y[127] == 8 * 3 - 0.5f * 1); /* sub-block 7 */
	/* Q3_K: scales 6-bit: sub-block i's is i + 8 (stored + 32 = i + 40);
	 * qs all 0b11100100, hmask bit set for even l only; d 0.25 */
	memset(b, 0, 110);
	for (int l = 0; l < 32; l += 2)
		b[l] = 0xff;
	memset(b + 32, 0xe4, 64);
	for (int i = 0; i < 16; i++) {
		int u = i + 40;
		b[96 + (i < 8 ? i : i - 8)] |= (unsigned char)((u & 15) << (i < 8 ? 0 : 4));
		b[104 + i % 4] |= (unsigned char)((u >> 4) << (2 * (i / 4)));
	}
	half_at(b + 108, 0.25f);
	ggml_dequantize(GGML_Q3_K, b, y, 1);
	assert_true(y[0] == 0.0f);		    /* l 0 even: q 0 */
	assert_true(y[33] == 0.25f * 10 * (1 - 4)); /* group 1, l 1 odd, sub-block 2 */
	assert_true(y[226] == 0.25f * 22 * 3);      /* half 1, group 3, l 2, sub-block 14 */
	/* Q4_K: sub-block j's scale j + 1, min 2j (6-bit packing), qs byte =
	 * 0x5a (low 10, high 5), d 0.5, dmin 0.25 */
	memset(b, 0, 144);
	half_at(b, 0.5f);
	half_at(b + 2, 0.25f);
	for (int j = 0; j < 8; j++) {
		int sc = j + 1 + (j == 7 ? 40 : 0), mn = 2 * j + (j == 6 ? 50 : 0);
		if (j < 4) {
			b[4 + j] = (unsigned char)sc;
			b[8 + j] = (unsigned char)mn;
		} else {
			b[8 + j] = (unsigned char)((sc & 15) | (mn & 15) << 4);
			b[j] |= (unsigned char)((sc >> 4) << 6);
			b[4 + j] |= (unsigned char)((mn >> 4) << 6);
		}
	}
	memset(b + 16, 0x5a, 128);
	ggml_dequantize(GGML_Q4_K, b, y, 1);
	assert_true(y[0] == 0.5f * 1 * 10 - 0);
	assert_true(y[40] == 0.5f * 2 * 5 - 0.25f * 2);
	assert_true(y[200] == 0.5f * 7 * 10 - 0.25f * 62); /* sub-block 6: min 12 + 50 */
	assert_true(y[255] == 0.5f * 48 * 5 - 0.25f * 14); /* sub-block 7: scale 8 + 40 */
	/* Q6_K: ql = 0x21 (low 1, high 2), qh = 0b11100100 (quarter k reads k),
	 * scales int8 j - 8, d 1: q = low | k << 4 - 32 */
	memset(b, 0x21, 128);
	memset(b + 128, 0xe4, 64);
	for (int j = 0; j < 16; j++)
		b[192 + j] = (unsigned char)(int8_t)(j - 8);
	half_at(b + 208, 1.0f);
	ggml_dequantize(GGML_Q6_K, b, y, 1);
	assert_true(y[0] == (float)(-8 * (1 - 32)));		/* k 0, scale 0 */
	assert_true(y[50] == (float)(-5 * ((1 | 1 << 4) - 32)));	/* k 1, l 18: scale 3 */
	assert_true(y[70] == (float)(-4 * ((2 | 2 << 4) - 32)));	/* k 2, l 6: scale 4 */
	assert_true(y[255] == (float)(7 * ((2 | 3 << 4) - 32)));	/* half 1, k 3: scale 15 */
}

/* ------------------------------------------------------ quantizer bounds */

static const uint32_t quant_types[] = {
	GGML_Q8_0, GGML_Q4_0, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1,
	GGML_Q2_K, GGML_Q3_K, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K,
};
#define N_QUANT (sizeof quant_types / sizeof quant_types[0])

/* Quantizes x (n values), dequantizes it, and checks every value within
 * its block's bound; returns the largest error relative to the bound. */
static double check_bound(uint32_t t, const float *x, const float *got, size_t n,
			  const char *what)
{
	size_t bv = ggml_block_values(t), bb = ggml_block_bytes(t);
	unsigned char *q = xmalloc(n / bv * bb);
	float *bound = xmalloc(bv * sizeof *bound);
	gq_quantize(t, x, q, n);
	double worst = 0;
	for (size_t b = 0; b < n / bv; b++) {
		gq_bound(t, q + b * bb, x + b * bv, bound);
		for (size_t v = 0; v < bv; v++) {
			size_t i = b * bv + v;
			double err = fabs((double)x[i] - got[i]), lim = bound[v] * (1 + 1e-5) + 1e-7;
			if (err > lim) {
				print_error("%s %s: value %zu = %g came back %g, error %g > bound %g\n",
					    ggml_type_name(t), what, i, x[i], got[i], err, bound[v]);
				fail();
			}
			worst = fmax(worst, err / (bound[v] + 1e-12));
		}
	}
	free(q);
	free(bound);
	return worst;
}

static void test_quant_bounds(void **state)
{
	(void)state;
	size_t n = 64 * 512;
	float *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y);
	struct rng r;
	rng_seed(&r, 5);
	for (size_t i = 0; i < n; i++) /* rows of different scales, some outliers */
		x[i] = rng_normal(&r) * (0.01f + (float)(i / 512 % 8)) * (i % 97 == 0 ? 8.0f : 1.0f) +
		       (i / 512 % 5 == 0 ? 0.3f : 0.0f);
	for (size_t k = 0; k < N_QUANT; k++) {
		uint32_t t = quant_types[k];
		size_t bv = ggml_block_values(t), bb = ggml_block_bytes(t);
		unsigned char *q = xmalloc(n / bv * bb);
		gq_quantize(t, x, q, n);
		ggml_dequantize(t, q, y, n / bv);
		double worst = check_bound(t, x, y, n, "random rows"), rms = 0, ref = 0;
		for (size_t i = 0; i < n; i++) {
			rms += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
			ref += (double)x[i] * x[i];
		}
		printf("  %-5s worst error %.3f of its bound, relative RMS error %.4f\n",
		       ggml_type_name(t), worst, sqrt(rms / ref));
		free(q);
	}
	free(x);
	free(y);
}

/* ----------------------------------------------- fast against reference */

/* A random finite half: any sign and mantissa, the exponent 0 (zero or
 * subnormal) one time in four, else 1 .. 30. */
static uint16_t finite_half(struct rng *r)
{
	uint32_t u = rng_u32(r), e = u >> 16 & 3 ? 1 + (u >> 18) % 30 : 0;
	return (uint16_t)((u & 0x83ff) | e << 10);
}

/* ggml_dequantize (AVX2 where the build has it) equals ggml_dequantize_ref
 * bit for bit on 400 random blocks of each type (random bytes, every half
 * random and finite), from an odd address into an odd float, writing no
 * float past the last block's. */
static void test_fast_equals_ref(void **state)
{
	(void)state;
	enum { BLOCKS = 400 };
	/* the halves' offsets in a block, quant.h's layouts; -1: none */
	static const int halves[][2] = {
		[GGML_Q8_0] = { 0, -1 }, [GGML_Q4_0] = { 0, -1 }, [GGML_Q5_0] = { 0, -1 },
		[GGML_Q4_1] = { 0, 2 },  [GGML_Q5_1] = { 0, 2 },  [GGML_Q4_K] = { 0, 2 },
		[GGML_Q5_K] = { 0, 2 },  [GGML_Q2_K] = { 80, 82 }, [GGML_Q3_K] = { 108, -1 },
		[GGML_Q6_K] = { 208, -1 },
	};
	struct rng r;
	rng_seed(&r, 20261205);
	int subnormal = 0, negative = 0;
	for (size_t k = 0; k < N_QUANT; k++) {
		uint32_t t = quant_types[k];
		size_t bv = ggml_block_values(t), bb = ggml_block_bytes(t), n = BLOCKS * bv;
		unsigned char *raw = xmalloc(BLOCKS * bb + 1), *q = raw + 1;
		float *got = xmalloc((n + 2) * sizeof *got), *want = xmalloc(n * sizeof *want);
		for (size_t i = 0; i < BLOCKS * bb; i++)
			q[i] = (unsigned char)rng_u32(&r);
		for (size_t b = 0; b < BLOCKS; b++)
			for (int j = 0; j < 2 && halves[t][j] >= 0; j++) {
				uint16_t h = finite_half(&r);
				subnormal += (h & 0x7c00) == 0 && (h & 0x3ff);
				negative += h >> 15;
				q[b * bb + halves[t][j]] = (unsigned char)h;
				q[b * bb + halves[t][j] + 1] = (unsigned char)(h >> 8);
			}
		memset(got, 0xff, (n + 2) * sizeof *got); /* NaN: a float not written */
		ggml_dequantize(t, q, got + 1, BLOCKS);
		ggml_dequantize_ref(t, q, want, BLOCKS);
		uint32_t g0, gn;
		memcpy(&g0, &got[0], 4);
		memcpy(&gn, &got[n + 1], 4);
		if (g0 != 0xffffffffu || gn != 0xffffffffu)
			fail_msg("%s: ggml_dequantize wrote outside its blocks", ggml_type_name(t));
		for (size_t i = 0; i < n; i++)
			if (memcmp(&got[i + 1], &want[i], sizeof *want))
				fail_msg("%s: value %zu of block %zu is %.9g, the reference's %.9g",
					 ggml_type_name(t), i % bv, i / bv, (double)got[i + 1],
					 (double)want[i]);
		free(raw);
		free(got);
		free(want);
	}
	assert_true(subnormal > 100 && negative > 1000);
}

/* ------------------------------------------------ F32, F16, BF16 exactly */

static const char *const type_names[] = { [GGML_F32] = "F32", [GGML_F16] = "F16",
					  [GGML_BF16] = "BF16" };

/* The same weights from a checkpoint and a GGUF file: config, weights,
 * attention and loss within 1e-4 (the weights are the same floats).
 * head_dim nonzero: the model's heads are that wide instead (written as
 * attention.key_length / value_length).  L layers; edit, when not NULL,
 * changes the model's config in ways that keep its tensors (which layers
 * slide, ...) before it is written. */
static void compare_exact_edit(enum ga a, uint32_t t, int head_dim, int L,
			       void (*edit)(struct model_config *c))
{
	struct err e;
	struct model *m = tiny_hd(a, 32, ga_gqa(a) ? 48 : 64, L, head_dim, 40 + a);
	if (edit)
		edit(&m->cfg);
	const char *ck = path_of("ref.safetensors"), *gg = path_of("m.gguf");
	if (t == GGML_BF16) {
		assert_int_equal(gw_checkpoint_bf16(m, ck), 0);
	} else {
		if (t == GGML_F16)
			for (size_t i = 0; i < m->n_params; i++)
				m->params[i] = f16_to_f32(f32_to_f16(m->params[i]));
		assert_int_equal(checkpoint_save(m, ck, t == GGML_F16 ? CKPT_F16 : CKPT_F32, &e), 0);
	}
	write_gguf(m, a, t, gg);
	struct model *r = open_ok(ck, "safetensors"), *g = open_ok(gg, "gguf");
	char *cr = checkpoint_config_json(&r->cfg), *cg = checkpoint_config_json(&g->cfg);
	assert_string_equal(cr, cg);
	free(cr);
	free(cg);
	assert_int_equal(r->n_params, g->n_params);
	int T, T2;
	struct run *rr = run_text(r, &T), *rg = run_text(g, &T2); /* g held as stored, but F32 */
	assert_int_equal(model_is_held(g), t != GGML_F32 && a != GA_BERT); /* BERT's never are */
	assert_int_equal(model_to_f32(g, "the comparison", &e), 0);
	double dw = max_diff(r->params, g->params, r->n_params);
	assert_int_equal(T, T2);
	size_t na = (size_t)r->cfg.n_layer * r->cfg.n_head * T * T;
	double da = max_diff(rr->att, rg->att, na);
	double dl = cfg_has_head(&r->cfg) ? fabs(rr->loss - rg->loss) : 0;
	printf("  %-7s %-4s head_dim %d, %d layers: weights %.1e, attention %.1e, loss %.1e (loss "
	       "%.4f)\n", ga_name[a], type_names[t], cfg_d_head(&g->cfg), L, dw, da, dl,
	       cfg_has_head(&r->cfg) ? rr->loss : NAN);
	assert_int_equal(g->cfg.head_dim, head_dim);
	assert_true(dw <= 1e-4 && da <= 1e-4 && dl <= 1e-4);
	run_free(rr);
	run_free(rg);
	model_free(r);
	model_free(g);
	model_free(m);
}

static void compare_exact(enum ga a, uint32_t t, int head_dim)
{
	compare_exact_edit(a, t, head_dim, 2, NULL);
}

static void test_exact_types(void **state)
{
	(void)state;
	static const uint32_t types[] = { GGML_F32, GGML_F16, GGML_BF16 };
	for (int a = 0; a < GA_N; a++)
		for (int k = 0; k < 3; k++)
			compare_exact((enum ga)a, types[k], 0);
}

/* GGUF version 2 and a 64-byte alignment read as well. */
static void test_version2_alignment(void **state)
{
	(void)state;
	struct model *m = tiny(GA_LLAMA, 32, 48, 1, 7);
	struct gw *w = gw_new();
	ga_write_model(w, m, GA_LLAMA, GGML_F32);
	assert_int_equal(gt_gpt2_dir(w, tmp), 0);
	assert_int_equal(gw_write(w, path_of("v2.gguf"), 2, 64), 0);
	gw_free(w);
	struct model *g = open_ok(path_of("v2.gguf"), "gguf");
	assert_true(max_diff(m->params, g->params, m->n_params) == 0);
	model_free(g);
	model_free(m);
}

/* ------------------------------------------------------ quantized models */

/* The loss (decoders) or the attention (BERT) may move by at most three
 * times the relative RMS error of the weights (eps, measured on the
 * model's own matrices) plus 1e-3: on these random models a weight error
 * of relative size eps moves them by up to about twice eps (printed); a
 * layout error makes eps of order 1, and the element-wise bounds fail
 * first. */
static double tolerance(double eps)
{
	return 3 * eps + 1e-3;
}

static void compare_quant(enum ga a, uint32_t t, int head_dim)
{
	struct model *m = tiny_hd(a, 256, 512, 1, head_dim, 60 + a);
	const char *gg = path_of("q.gguf");
	write_gguf(m, a, t, gg);
	struct model *g = open_ok(gg, "gguf");
	int T;
	struct run *rm = run_text(m, &T), *rg = run_text(g, &T); /* g's matrices held quantized */
	struct err e;
	assert_int_equal(model_is_held(g), a != GA_BERT);
	assert_int_equal(model_to_f32(g, "the comparison", &e), 0);
	static const enum param_id mats[] = { P_WTE, P_WPE, P_QKVW, P_ATTPROJW, P_FCW, P_FCPROJW,
					      P_LMHEAD };
	double worst = 0, err2 = 0, ref2 = 0;
	bool quant[N_PARAMS] = { false };
	for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
		enum param_id p = mats[k];
		if (!m->psize[p])
			continue;
		quant[p] = true;
		worst = fmax(worst, check_bound(t, m->p[p], g->p[p], m->psize[p], param_name(p)));
		for (size_t i = 0; i < m->psize[p]; i++) {
			double d = (double)m->p[p][i] - g->p[p][i];
			err2 += d * d;
			ref2 += (double)m->p[p][i] * m->p[p][i];
		}
	}
	double eps = sqrt(err2 / ref2);
	for (int p = 0; p < N_PARAMS; p++) /* the vectors are stored as F32 */
		if (!quant[p] && m->psize[p])
			assert_true(max_diff(m->p[p], g->p[p], m->psize[p]) == 0);
	size_t na = (size_t)m->cfg.n_layer * m->cfg.n_head * T * T;
	double da = max_diff(rm->att, rg->att, na);
	double dl = cfg_has_head(&m->cfg) ? fabs(rm->loss - rg->loss) : da;
	printf("  %-7s %-4s head_dim %d: worst error %.3f of its bound, weights' relative RMS "
	       "error %.4f; attention %.2e, %s %.2e (limit %.4f)\n", ga_name[a], ggml_type_name(t),
	       cfg_d_head(&g->cfg), worst, eps, da, cfg_has_head(&m->cfg) ? "loss" : "attention", dl, tolerance(eps));
	assert_true(dl <= tolerance(eps));
	run_free(rm);
	run_free(rg);
	model_free(g);
	model_free(m);
}

static void test_quantized_models(void **state)
{
	(void)state;
	for (int a = 0; a < GA_N; a++)
		for (size_t k = 0; k < N_QUANT; k++)
			compare_quant((enum ga)a, quant_types[k], 0);
}

/* attention.key_length / value_length apart from embedding_length /
 * head_count (Qwen3's, Gemma's): heads of 16 and of 4 over 32 / 4 heads
 * load as their checkpoint does; Qwen3's heads twice embedding_length /
 * head_count wide (as Qwen3-0.6B's 128 over 1024 / 16) with their q/k norm,
 * exact in F32 and BF16, within the stated error in Q8_0 and Q4_K. */
static void test_head_dim(void **state)
{
	(void)state;
	compare_exact(GA_LLAMA, GGML_F32, 16);
	compare_exact(GA_QWEN2, GGML_F32, 4);
	compare_exact(GA_LLAMA, GGML_F16, 4);
	compare_exact(GA_QWEN3, GGML_F32, 16);
	compare_exact(GA_QWEN3, GGML_BF16, 16);
	compare_exact(GA_QWEN3, GGML_F32, 4);
	compare_quant(GA_QWEN3, GGML_Q8_0, 128);
	compare_quant(GA_QWEN3, GGML_Q4_K, 128);
	compare_exact(GA_GEMMA2, GGML_F32, 16); /* as gemma-2-2b's 256 over 2304 / 8 */
	compare_exact(GA_GEMMA3, GGML_BF16, 16);
	compare_quant(GA_GEMMA3, GGML_Q8_0, 128);
}

/* ------------------------------------------------------------ tokenizers */

/* The tokenizer of a metadata-only GGUF file written by w. */
static struct tokenizer *from_meta(struct gw *w)
{
	struct gguf_file f;
	struct err e = { "" };
	const char *p = path_of("tok.gguf");
	gw_str(w, "general.architecture", "llama");
	assert_int_equal(gw_write(w, p, 3, 0), 0);
	gw_free(w);
	assert_int_equal(gguf_open(&f, p, &e), 0);
	struct tokenizer *t = gguf_tokenizer(&f, &e);
	if (!t)
		print_error("%s\n", e.msg);
	assert_non_null(t);
	gguf_close(&f);
	return t;
}

/* t (from GGUF) and want (from the tokenizer's files) are the same: sizes,
 * special ids, every piece, and the ids of the table's strings. */
static void same_tokenizer(struct tokenizer *t, struct tokenizer *want, const char *table,
			   int rows)
{
	char path[512], a[256], b[256];
	assert_int_equal(t->vocab_size, want->vocab_size);
	assert_int_equal(t->bos_id, want->bos_id);
	assert_int_equal(t->eos_id, want->eos_id);
	for (int i = 0; i < t->vocab_size; i++) {
		int la = tok_piece(t, i, a, sizeof a), lb = tok_piece(want, i, b, sizeof b);
		if (la != lb || memcmp(a, b, (size_t)(la < 255 ? la : 255))) {
			print_error("%s: piece %d differs\n", table, i);
			fail();
		}
	}
	snprintf(path, sizeof path, "tests/data/%s_expect.tsv", table);
	assert_int_equal(tok_expect_check(t, path, rows), 0);
	assert_int_equal(tok_expect_check(want, path, rows), 0);
	struct err e;
	int *x, *y, nx, ny;
	static const char s[] = "Hello world, this is a test.";
	assert_true(tok_encode(t, s, strlen(s), 1, &x, &nx, &e) >= 0);
	assert_true(tok_encode(want, s, strlen(s), 1, &y, &ny, &e) >= 0);
	assert_int_equal(nx, ny);
	assert_memory_equal(x, y, (size_t)nx * sizeof *x);
	free(x);
	free(y);
	printf("  %-14s %d tokens: the same pieces, specials and ids\n", table, t->vocab_size);
	tok_free(t);
	tok_free(want);
}

static void test_tokenizers(void **state)
{
	(void)state;
	char dir[512];
	struct err e;
	size_t len;
	struct gw *w = gw_new();
	snprintf(dir, sizeof dir, "%s/tokenizers/gpt2", tok_expect_shared_dir());
	assert_int_equal(gt_gpt2_dir(w, dir), 0);
	same_tokenizer(from_meta(w), tok_bpe_load(dir, &e), "gpt2", 50);

	static const struct { const char *name, *pre, *bos, *table; } hf[] = {
		{ "llama3", "llama-bpe", "<|begin_of_text|>", "llama3" },
		{ "qwen2_5", "qwen2", NULL, "qwen2_5" },
	};
	for (int i = 0; i < 2; i++) {
		char *json = tok_expect_gz_text(hf[i].name, &len);
		assert_non_null(json);
		w = gw_new();
		assert_int_equal(gt_hf_json(w, json, len, hf[i].pre, hf[i].bos), 0);
		struct tokenizer *t = from_meta(w), *want = tok_hfjson_from_text(json, len, hf[i].name, &e);
		same_tokenizer(t, want, hf[i].table, 50);
		free(json);
	}

	snprintf(dir, sizeof dir, "%s/tokenizers/llama2c/tokenizer.bin", tok_expect_shared_dir());
	w = gw_new();
	assert_int_equal(gt_llama2c(w, dir), 0);
	same_tokenizer(from_meta(w), tok_llama2c_load(dir, 0, &e), "llama2c", 50);

	char *json = tok_expect_gz_text("bert_uncased", &len);
	assert_non_null(json);
	w = gw_new();
	assert_int_equal(gt_wordpiece_json(w, json, len), 0);
	same_tokenizer(from_meta(w), tok_wordpiece_from_text(json, len, "bert", &e), "bert_uncased",
		       50);
	free(json);
}

/* ids of text s[0 .. n) by t, without BOS (malloc'd, *k of them). */
static int *ids_of(const struct tokenizer *t, const char *s, size_t n, int *k)
{
	struct err e = { "" };
	int *ids = NULL;
	if (tok_encode(t, s, n, 0, &ids, k, &e) < 0)
		fail_msg("encoding failed: %s", e.msg);
	return ids;
}

/* The inputs of the table at path, each as its bytes (malloc'd; *n rows,
 * *len[i] bytes each). */
static char **table_inputs(const char *path, size_t **len, int *n)
{
	struct err e;
	size_t size;
	char *text = read_file(path, &size, &e), *save = NULL;
	assert_non_null(text);
	char **in = xmalloc(1024 * sizeof *in);
	*len = xmalloc(1024 * sizeof **len);
	*n = 0;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#')
			continue;
		size_t h = strcspn(l, "\t");
		assert_true(*n < 1024 && h % 2 == 0);
		in[*n] = xmalloc(h / 2 + 1);
		for (size_t i = 0; i < h / 2; i++) {
			unsigned x;
			assert_int_equal(sscanf(l + 2 * i, "%2x", &x), 1);
			in[*n][i] = (char)x;
		}
		(*len)[(*n)++] = h / 2;
	}
	free(text);
	return in;
}

/*
 * Gemma 2's and 3's tokenizer rebuilt from GGUF metadata (llama model,
 * add_space_prefix false) against the same model's tokenizer.json read by
 * tok-hfjson.c, which matches transformers.js on the shared tables.  No
 * tokenizer.model is in the repository, so gt_spm_json writes the metadata
 * from the tokenizer.json: the tokens in id order, typed as the converter
 * types them (added special tokens control, <unk> unknown, other added
 * tokens user-defined with U+2581 written as a space, <0xNN> byte, the
 * rest normal), and each normal piece scored -(rank of the first merge in
 * tokenizer.json's list that produces it), pieces no merge produces
 * (single characters) below all, so that merging the best-scored pair
 * first picks the merge of lowest rank.  Checked: the same vocabulary
 * size and BOS, and the same ids on every string of the table but the
 * ones named in differ[] (below), and BOS first with add_bos; the
 * tokenizer written to JSON (a checkpoint's copy) and read back gives the
 * same ids on every string.
 */
static void gemma_tokenizer(const char *name, int vocab, const char *const *differ, int nd)
{
	char path[256];
	size_t len, *rl;
	int rows, ndiff = 0;
	struct err e = { "" };
	char *json = tok_expect_gz_text(name, &len);
	assert_non_null(json);
	struct gw *w = gw_new();
	assert_int_equal(gt_spm_json(w, json, len), vocab);
	struct tokenizer *t = from_meta(w), *want = tok_hfjson_from_text(json, len, name, &e);
	assert_non_null(want);
	free(json);
	char *dump = t->ops->to_json(t);
	struct tokenizer *back = tok_from_json(dump, &e);
	free(dump);
	assert_non_null(back);
	assert_int_equal(t->vocab_size, vocab);
	assert_int_equal(want->vocab_size, vocab);
	assert_int_equal(t->bos_id, want->bos_id);
	assert_int_equal(back->bos_id, t->bos_id);
	snprintf(path, sizeof path, "tests/data/%s_expect.tsv", name);
	char **in = table_inputs(path, &rl, &rows);
	assert_true(rows >= 300);
	for (int r = 0; r < rows; r++) {
		int na, nb, nc;
		int *a = ids_of(t, in[r], rl[r], &na), *b = ids_of(want, in[r], rl[r], &nb);
		int *c = ids_of(back, in[r], rl[r], &nc);
		bool same = na == nb && !memcmp(a, b, (size_t)na * sizeof *a), listed = false;
		for (int k = 0; k < nd; k++)
			listed |= strlen(differ[k]) == rl[r] && !memcmp(differ[k], in[r], rl[r]);
		if (same == listed) {
			print_error("%s: row %d (\"%.*s\") %s\n", name, r, (int)rl[r], in[r],
				    same ? "is listed as differing but is the same"
					 : "differs from tokenizer.json");
			ndiff++;
		}
		for (int k = 0; listed && k < na; k++) { /* llama.cpp's: no run of spaces */
			char pc[16];
			if (tok_piece(t, a[k], pc, sizeof pc) >= 0 && strstr(pc, "  ")) {
				print_error("%s: row %d: piece %d is \"%s\"\n", name, r, k, pc);
				ndiff++;
			}
		}
		if (nc != na || memcmp(a, c, (size_t)na * sizeof *a)) {
			print_error("%s: row %d differs once read back from JSON\n", name, r);
			ndiff++;
		}
		free(a), free(b), free(c), free(in[r]);
	}
	free(in);
	free(rl);
	int *x = NULL, nx;
	assert_true(tok_encode(t, "Hi", 2, 1, &x, &nx, &e) >= 0);
	assert_true(nx >= 2 && x[0] == want->bos_id);
	free(x);
	printf("  %-14s %d tokens: the same ids as tokenizer.json on %d of %d rows (the %d "
	       "listed differ)\n", name, vocab, rows - nd, rows, nd);
	tok_free(t);
	tok_free(want);
	tok_free(back);
	assert_int_equal(ndiff, 0);
}

/* The rows where U+2581 is typed beside U+2581 or a space: tokenizer.json
 * matches its added token "▁▁" (and "▁▁▁") in the typed text, and its BPE
 * merges spaces into them; the converter writes those user-defined tokens
 * with spaces ("  "), so llama.cpp matches typed spaces instead, and its
 * merges never make them (the merged text holds U+2581, the token spaces):
 * the typed "▁"s are never one piece, and no piece of these rows is a run
 * of spaces, as llama.cpp gives too. */
#define SP_ "\xe2\x96\x81"
static const char *const gemma_differ[] = {
	SP_ SP_, SP_ SP_ SP_, "a" SP_ SP_ "b", " " SP_ " ",
};

static void test_gemma_tokenizers(void **state)
{
	(void)state;
	gemma_tokenizer("gemma2", 256000, gemma_differ, 4);
	gemma_tokenizer("gemma3", 262145, gemma_differ, 4);
}

/*
 * tokenizer.ggml.pre "dbrx" (what llama.cpp's converter names the DBRX
 * tokenizer; llama.cpp splits it with Llama 3's pattern, without Llama 3's
 * ignore_merges, and adds BOS only when add_bos_token says so): Llama 3's
 * tokens and merges written with that name and no BOS give, on every
 * string of Llama 3's table, the ids of Llama 3's tokenizer.json with
 * ignore_merges false and no post-processor.  Its strings include words
 * that are one token yet not reachable by the merges alone, so the
 * ignore_merges switch shows (counted: at least one row differs from
 * Llama 3's own tokenizer).
 */
static void test_dbrx_pre(void **state)
{
	(void)state;
	size_t len, *rl;
	int rows, changed = 0;
	struct err e = { "" };
	char *json = tok_expect_gz_text("llama3", &len);
	assert_non_null(json);
	struct gw *w = gw_new();
	assert_int_equal(gt_hf_json(w, json, len, "dbrx", NULL), 0);
	struct tokenizer *t = from_meta(w), *l3 = tok_hfjson_from_text(json, len, "llama3", &e);
	json_t *root = json_loadb(json, len, 0, NULL);
	free(json);
	assert_non_null(root);
	json_object_set_new(json_object_get(root, "model"), "ignore_merges", json_false());
	json_object_del(root, "post_processor");
	char *edited = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	struct tokenizer *want = tok_hfjson_from_text(edited, strlen(edited), "dbrx", &e);
	free(edited);
	assert_non_null(want);
	int *x = NULL, nx;
	assert_true(tok_encode(t, "Hi", 2, 1, &x, &nx, &e) >= 0); /* no BOS */
	assert_true(nx == 1 && x[0] != 128000);
	free(x);
	char **in = table_inputs("tests/data/llama3_expect.tsv", &rl, &rows);
	for (int r = 0; r < rows; r++) {
		int na, nb, nc;
		int *a = ids_of(t, in[r], rl[r], &na), *b = ids_of(want, in[r], rl[r], &nb);
		int *c = ids_of(l3, in[r], rl[r], &nc);
		if (na != nb || memcmp(a, b, (size_t)na * sizeof *a))
			fail_msg("dbrx: row %d (\"%.*s\") differs", r, (int)rl[r], in[r]);
		changed += nc != na || memcmp(a, c, (size_t)na * sizeof *a);
		free(a), free(b), free(c), free(in[r]);
	}
	free(in);
	free(rl);
	printf("  dbrx: %d rows as the tokenizer.json without ignore_merges, %d of them unlike "
	       "Llama 3's\n", rows, changed);
	assert_true(changed > 0);
	tok_free(t);
	tok_free(want);
	tok_free(l3);
}

/* What the engine cannot run is refused by name: a file of architecture
 * a (its model's config edited by edit, when not NULL, in ways that keep
 * its tensors) with the keys extra writes before the model's. */
static void refused_as(enum ga a, void (*edit)(struct model_config *c),
		       void (*extra)(struct gw *w), bool tokenizer, const char *word)
{
	struct model *m = tiny(a, 32, 48, 1, 3);
	if (edit)
		edit(&m->cfg);
	struct gw *w = gw_new();
	extra(w);
	ga_write_model(w, m, a, GGML_F32);
	if (tokenizer)
		assert_int_equal(gt_gpt2_dir(w, tmp), 0);
	assert_int_equal(gw_write(w, path_of("refused.gguf"), 3, 0), 0);
	gw_free(w);
	model_free(m);
	open_fails(path_of("refused.gguf"), word);
}

static void refused(void (*extra)(struct gw *w), bool tokenizer, const char *word)
{
	refused_as(GA_LLAMA, NULL, extra, tokenizer, word);
}

static void scaling(struct gw *w) { gw_str(w, "llama.rope.scaling.type", "yarn"); }
static void experts(struct gw *w) { gw_u32(w, "llama.expert_count", 8); }
static void key_len(struct gw *w)
{
	gw_u32(w, "llama.attention.key_length", 16);
	gw_u32(w, "llama.attention.value_length", 8);
}
static void freqs(struct gw *w)
{
	float f[3] = { 1, 1, 1 };
	gw_tensor(w, "rope_freqs.weight", GGML_F32, 0, 3, f);
}
static void t5(struct gw *w)
{
	char *tok[] = { "a" };
	gw_str(w, "tokenizer.ggml.model", "t5");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 1);
}
static void pre(struct gw *w)
{
	char *tok[] = { "a", "b", "ab" }, *merge[] = { "a b" };
	gw_str(w, "tokenizer.ggml.model", "gpt2");
	gw_str(w, "tokenizer.ggml.pre", "deepseek-llm");
	gw_strs(w, "tokenizer.ggml.tokens", tok, NULL, 3);
	gw_strs(w, "tokenizer.ggml.merges", merge, NULL, 1);
}
static void none(struct gw *w) { (void)w; }

static void test_refused(void **state)
{
	(void)state;
	refused(scaling, true, "llama.rope.scaling.type \"yarn\" is not supported (RoPE scaling)");
	refused(experts, true, "llama.expert_count 8: mixtures of experts are not supported");
	refused(key_len, true, "llama.attention.key_length 16 differs from attention.value_length 8");
	/* a llama file's rope_freqs holds one divisor per pair: 4 for heads of 8 */
	refused(freqs, true, "tensor rope_freqs.weight has shape [3], but the metadata needs [4]");
	refused_as(GA_QWEN2, NULL, freqs, true, "rope_freqs.weight (scaled RoPE frequencies) is "
		   "supported for llama only, not qwen2");
	refused(t5, false, "tokenizer.ggml.model \"t5\" is not supported (llama, gpt2 and bert are)");
	refused(pre, false, "tokenizer.ggml.pre \"deepseek-llm\" is not supported");
	refused(none, false, "no tokenizer.ggml.model: the file has no tokenizer; give one with "
		"--tokenizer");
}

/* ---------------------------------------------------------- damaged files */

/* A valid tiny llama GGUF file's bytes. */
static unsigned char *valid_file(size_t *len)
{
	struct model *m = tiny(GA_LLAMA, 32, 48, 2, 9);
	struct gw *w = gw_new();
	ga_write_model(w, m, GA_LLAMA, GGML_F32);
	assert_int_equal(gt_gpt2_dir(w, tmp), 0);
	unsigned char *b = gw_bytes(w, 3, 0, len);
	gw_free(w);
	model_free(m);
	return b;
}

/* Where the bytes after the GGUF string s (its u64 length, then s) are. */
static unsigned char *after(unsigned char *b, size_t len, const char *s)
{
	size_t n = strlen(s);
	for (unsigned char *p = b + 8; p + n <= b + len; p++) {
		uint64_t l;
		memcpy(&l, p - 8, 8);
		if (l == n && !memcmp(p, s, n))
			return p + n;
	}
	fail_msg("no string \"%s\" in the file", s);
	return NULL;
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Writes the first n bytes of b, with the change made by the caller, and
 * checks the one-line message. */
static void damaged(const unsigned char *b, size_t n, const char *word)
{
	const char *p = path_of("bad.gguf");
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
	open_fails(p, word);
}

/* A held tensor with one value that is not finite is refused in one line
 * naming the tensor and the element: for the block types, the first of
 * the block whose d half is Inf (every value of that block is then not
 * finite, and none before it); for F16 and BF16, the value itself. */
static void test_held_nonfinite(void **state)
{
	(void)state;
	static const struct { uint32_t type; size_t at; uint64_t want; } cases[] = {
		{ GGML_Q8_0, 3 * 34, 96 },    /* block 3's d */
		{ GGML_Q4_K, 1 * 144 + 2, 256 }, /* block 1's dmin */
		{ GGML_Q6_K, 2 * 210 + 208, 512 },
		{ GGML_F16, 2 * 97, 97 },
		{ GGML_BF16, 2 * 97, 97 },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct model *m = tiny(GA_LLAMA, 256, 256, 1, 40 + k);
		const char *p = path_of("nonfinite.gguf");
		write_gguf(m, GA_LLAMA, cases[k].type, p);
		model_free(m);
		struct gguf_file f;
		struct err e = { "" };
		assert_int_equal(gguf_open(&f, p, &e), 0);
		const struct gguf_tensor *t = gguf_find_tensor(&f, "blk.0.ffn_down.weight");
		assert_non_null(t);
		assert_int_equal(t->type, cases[k].type);
		uint64_t off = t->off + cases[k].at;
		gguf_close(&f);
		/* Inf in the value's layout: F16 and the halves 0x7C00, BF16 0x7F80 */
		unsigned char inf[2] = { 0x00, cases[k].type == GGML_BF16 ? 0x7F : 0x7C };
		if (cases[k].type == GGML_BF16)
			inf[0] = 0x80;
		FILE *fp = fopen(p, "r+b");
		assert_non_null(fp);
		assert_int_equal(fseek(fp, (long)off, SEEK_SET), 0);
		assert_int_equal(fwrite(inf, 1, 2, fp), 2);
		assert_int_equal(fclose(fp), 0);
		char want[128];
		snprintf(want, sizeof want,
			 "tensor blk.0.ffn_down.weight has a non-finite value at element %" PRIu64,
			 cases[k].want);
		assert_null(model_open_ex(p, NULL, NULL, &e));
		if (!strstr(e.msg, want))
			fail_msg("%s: \"%s\", want \"%s\"", ggml_type_name(cases[k].type), e.msg, want);
		assert_null(strchr(e.msg, '\n'));
	}
}

static void test_damaged(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len), *c = xmalloc(len);
#define FRESH() memcpy(c, b, len)
	FRESH();
	damaged(c, 30, "the header claims 18 keys, more than the file holds");
	put64(c + 8, 0);
	put64(c + 16, 1);
	damaged(c, 40, "the file ends inside key 0 (truncated?)");
	damaged(c, 3, "no \"GGUF\" magic");
	c[3] = 'X';
	damaged(c, len, "no \"GGUF\" magic");
	FRESH();
	put32(c + 4, 1);
	damaged(c, len, "GGUF version 1 is not supported (2 and 3 are)");
	put32(c + 4, 9);
	damaged(c, len, "GGUF version 9 is not supported");
	put32(c + 4, 3u << 24);
	damaged(c, len, "big-endian");
	FRESH();
	put64(c + 16, 1ull << 40);
	damaged(c, len, "the header claims 1099511627776 keys, more than attnscope reads");
	FRESH();
	put64(c + 8, 5000);
	damaged(c, len, "the header claims 5000 tensors, more than the file holds");
	FRESH();
	put64(c + 24, 1ull << 62);
	damaged(c, len, "key 0 is 4611686018427387904 bytes long, more than 65535");
	FRESH();
	put64(after(c, len, "tokenizer.ggml.tokens") + 8, 1ull << 50);
	damaged(c, len, "claims 1125899906842624 strings, more than the file holds");
	FRESH();
	put32(after(c, len, "general.architecture"), 77);
	damaged(c, len, "the value of \"general.architecture\" has type 77, which GGUF does not "
		"define");
	FRESH();
	after(c, len, "general.name")[-1] = (unsigned char)0xff;
	damaged(c, len, "key 1 is not valid UTF-8 text");
	FRESH();
	memcpy(after(c, len, "general.architecture") + 12, "gemma", 5);
	damaged(c, len, "general.architecture \"gemma\" is not supported");
	/* tensor entries: u32 dims, ne[dims], u32 type, u64 offset */
	FRESH();
	unsigned char *q = after(c, len, "output.weight");
	put64(q + 4 + 16 + 4, 1ull << 40);
	damaged(c, len, "tensor output.weight: its 33920 bytes at offset 1099511627776 run past the "
		"end of the file");
	FRESH();
	put32(q + 4 + 16, 99);
	damaged(c, len, "tensor output.weight has ggml type 99, which attnscope does not know");
	put32(q + 4 + 16, 16);
	damaged(c, len, "tensor output.weight has type IQ2_XXS, which attnscope does not read");
	FRESH();
	put64(q + 4 + 16 + 4, 0);
	damaged(c, len, "tensors token_embd.weight and output.weight overlap in the file");
	FRESH();
	uint64_t off;
	memcpy(&off, q + 4 + 16 + 4, 8);
	put64(q + 4 + 16 + 4, off + 4);
	damaged(c, len, "tensor output.weight: its offset");
	FRESH();
	put64(after(c, len, "blk.0.attn_q.weight") + 4 + 8, 16);
	damaged(c, len, "tensor blk.0.attn_q.weight has shape [32, 16], but the metadata needs [32, 32]");
	FRESH();
	memcpy(after(c, len, "blk.1.ffn_up.weight") - 6, "uq", 2);
	damaged(c, len, "missing tensor blk.1.ffn_up.weight");
	FRESH();
	damaged(c, len - 100, "run past the end of the file");
	FRESH();
	put32(after(c, len, "blk.0.attn_q.weight"), 7);
	damaged(c, len, "tensor blk.0.attn_q.weight has 7 dimensions (1 to 4)");
#undef FRESH
	free(b);
	free(c);
}

/* Tensor name of the open file f holds rows x cols values (cols 1: a
 * vector) whose row r is the engine's row first + r' of p in m, r' being r
 * itself or, with rope, HF's rotate-half order (row r of each D-row head is
 * the engine's row llama_rope_row(r, D): hf-shards.c's, the HF loader's
 * map), exactly. */
static void same_rows(struct gguf_file *f, const char *name, const struct model *m,
		      enum param_id p, size_t first, size_t rows, size_t cols, bool rope)
{
	struct err e = { "" };
	size_t D = (size_t)cfg_d_head(&m->cfg);
	struct gguf_tensor *g = gguf_find_tensor(f, name);
	if (!g)
		fail_msg("no tensor %s", name);
	float *x = xmalloc(rows * cols * sizeof *x);
	assert_int_equal(g->n, rows * cols);
	assert_int_equal(gguf_read_tensor(f, g, x, &e), 0);
	for (size_t r = 0; r < rows; r++) {
		size_t er = first + (rope ? r / D * D + (size_t)llama_rope_row((int)(r % D), (int)D) : r);
		if (memcmp(x + r * cols, m->p[p] + er * cols, cols * sizeof *x)) {
			print_error("%s row %zu is not the engine's row %zu\n", name, r, er);
			fail();
		}
	}
	free(x);
}

/* Qwen3's tensors as the converter lays them: it copies HF's q_proj,
 * k_proj, q_norm and k_norm as they are (no permutation; llama.cpp turns
 * Qwen3 with NeoX RoPE), so file row r of each Q or K head, and entry r of
 * each norm, is the engine's row llama_rope_row(r, D); attention.key_length
 * is the heads' width. */
static void test_qwen3_layout(void **state)
{
	(void)state;
	struct model *m = tiny_hd(GA_QWEN3, 32, 48, 1, 16, 17);
	const char *p = path_of("layout.gguf");
	write_gguf(m, GA_QWEN3, GGML_F32, p);
	const struct model_config *c = &m->cfg;
	assert_true(c->n_head == 4 && c->n_kv_head == 2 && cfg_d_head(c) == 16 && c->d_model == 32);
	struct gguf_file f;
	struct err e = { "" };
	assert_int_equal(gguf_open(&f, p, &e), 0);
	int64_t kl = 0;
	assert_int_equal(gguf_get_int(&f, "qwen3.attention.key_length", 1, 1 << 20, &kl, &e), 0);
	assert_int_equal(kl, 16);
	same_rows(&f, "blk.0.attn_q.weight", m, P_QKVW, 0, 4 * 16, 32, true);
	same_rows(&f, "blk.0.attn_k.weight", m, P_QKVW, 4 * 16, 2 * 16, 32, true);
	same_rows(&f, "blk.0.attn_q_norm.weight", m, P_QNORMW, 0, 16, 1, true);
	same_rows(&f, "blk.0.attn_k_norm.weight", m, P_KNORMW, 0, 16, 1, true);
	gguf_close(&f);
	model_free(m);
}

/* The value of the number key k of f, or NAN when it is absent. */
static double key_num(const struct gguf_file *f, const char *k)
{
	struct err e = { "" };
	double v;
	int rc = gguf_get_float(f, k, &v, &e);
	assert_true(rc >= 0);
	return rc ? NAN : v;
}

/* Gemma 2's, Gemma 3's and OLMo-2's tensors and keys as the converter
 * writes them: Q and K rows, and the q/k norms' entries, in HF's
 * rotate-half order (no permutation: llama.cpp turns these with NeoX RoPE),
 * Gemma 3's q/k norm one head's D, OLMo-2's the whole H * D and K * D;
 * Gemma's norms under llama.cpp's names (attn_norm, post_attention_norm,
 * ffn_norm for pre_feedforward_layernorm, post_ffw_norm) holding the scale
 * itself (the converter stores 1 + HF's weight, and the engine's scales
 * are those: near 1 here, where HF's weights would be near 0), no output
 * (tied); OLMo-2's only after the sub-blocks, and its own output; the keys
 * of each converter class (Gemma 2: key_length, both caps, sliding_window
 * and no RoPE key; Gemma 3: rope.freq_base of the global layers and their
 * linear scaling, sliding_window, no score cap; OLMo-2: rope.freq_base,
 * no key_length). */
static void test_fams_layout(void **state)
{
	(void)state;
	static const enum ga fams[3] = { GA_GEMMA2, GA_GEMMA3, GA_OLMO2 };
	for (int i = 0; i < 3; i++) {
		enum ga a = fams[i];
		char k[128];
		struct model *m = tiny_hd(a, 32, 48, 1, a == GA_OLMO2 ? 0 : 16, 21);
		const char *p = path_of("layout.gguf");
		write_gguf(m, a, GGML_F32, p);
		const struct model_config *c = &m->cfg;
		size_t D = (size_t)cfg_d_head(c), H = 4, K = 2, C = 32;
		size_t qn = a == GA_OLMO2 ? H * D : D, kn = a == GA_OLMO2 ? K * D : D;
		struct gguf_file f;
		struct err e = { "" };
		assert_int_equal(gguf_open(&f, p, &e), 0);
		same_rows(&f, "blk.0.attn_q.weight", m, P_QKVW, 0, H * D, C, true);
		same_rows(&f, "blk.0.attn_k.weight", m, P_QKVW, H * D, K * D, C, true);
		same_rows(&f, "blk.0.attn_v.weight", m, P_QKVW, (H + K) * D, K * D, C, false);
		if (a != GA_GEMMA2) {
			same_rows(&f, "blk.0.attn_q_norm.weight", m, P_QNORMW, 0, qn, 1, true);
			same_rows(&f, "blk.0.attn_k_norm.weight", m, P_KNORMW, 0, kn, 1, true);
		}
		same_rows(&f, "blk.0.post_attention_norm.weight", m, P_ATTPOSTW, 0, C, 1, false);
		same_rows(&f, "blk.0.post_ffw_norm.weight", m, P_MLPPOSTW, 0, C, 1, false);
		same_rows(&f, "output_norm.weight", m, P_LNFW, 0, C, 1, false);
		if (a != GA_OLMO2) {
			same_rows(&f, "blk.0.attn_norm.weight", m, P_LN1W, 0, C, 1, false);
			same_rows(&f, "blk.0.ffn_norm.weight", m, P_LN2W, 0, C, 1, false);
			double mean = 0;
			for (size_t j = 0; j < C; j++)
				mean += m->p[P_LN1W][j] / (double)C;
			assert_true(mean > 0.5 && mean < 1.5);
		} else {
			assert_null(gguf_find_tensor(&f, "blk.0.attn_norm.weight"));
			assert_null(gguf_find_tensor(&f, "blk.0.ffn_norm.weight"));
		}
		assert_true((gguf_find_tensor(&f, "output.weight") != NULL) == (a == GA_OLMO2));
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", ga_name[a], s), k)
		assert_true(a == GA_OLMO2 ? isnan(key_num(&f, KEY("attention.key_length")))
					  : key_num(&f, KEY("attention.key_length")) == 16);
		assert_true(a == GA_GEMMA2 ? key_num(&f, KEY("attn_logit_softcapping")) == 4 &&
						     key_num(&f, KEY("final_logit_softcapping")) == 2 &&
						     isnan(key_num(&f, KEY("rope.freq_base")))
					   : isnan(key_num(&f, KEY("attn_logit_softcapping"))));
		if (a == GA_GEMMA3) {
			char *type = NULL;
			assert_int_equal(gguf_get_str(&f, KEY("rope.scaling.type"), 16, &type, &e), 0);
			assert_string_equal(type, "linear");
			free(type);
			assert_true(key_num(&f, KEY("rope.scaling.factor")) == 8 &&
				    key_num(&f, KEY("rope.freq_base")) == 1e6);
		}
		assert_true(a == GA_OLMO2 ? isnan(key_num(&f, KEY("attention.sliding_window"))) &&
						    key_num(&f, KEY("rope.freq_base")) == 500000
					  : key_num(&f, KEY("attention.sliding_window")) == 4);
#undef KEY
		gguf_close(&f);
		printf("  %-7s the file's rows, norms and keys are the converter's\n", ga_name[a]);
		model_free(m);
	}
}

/* Gemma 3 without sliding layers: the converter writes no
 * attention.sliding_window (sliding_window_pattern 1), and every layer
 * turns on the global base, scaled. */
static void no_window(struct model_config *c)
{
	c->local_window = 0;
	memset(c->local, 0, sizeof c->local);
	c->rope_local_theta = 0.0f;
}

/* The config a GGUF file of architecture a, L layers, heads D wide (0:
 * C / H), edited by edit (or not), loads to. */
static struct model_config described(enum ga a, int L, int D, void (*edit)(struct model_config *))
{
	struct model *m = tiny_hd(a, 32, 48, L, D, 23);
	if (edit)
		edit(&m->cfg);
	write_gguf(m, a, GGML_F32, path_of("layers.gguf"));
	model_free(m);
	struct model_config c;
	const char *fmt;
	struct err e = { "" };
	if (model_describe(path_of("layers.gguf"), &c, &fmt, &e))
		fail_msg("%s", e.msg);
	return c;
}

/* Which layers slide, on which RoPE, and the scores' scale, as llama.cpp
 * decides them from the layer count, which the keys do not say: Gemma 3's
 * layer l slides when l % 6 < 5 (of 7, layer 5 is global), on base 10000
 * unscaled, the global ones on rope.freq_base scaled by the factor; with no
 * attention.sliding_window every layer is global; Gemma 2's even layers
 * slide; the 27B models' layer counts (Gemma 2: 46, Gemma 3: 62) scale
 * the scores by (hidden / heads)^-1/2, the others by the head width's.
 * Each loads to the weights, attention and loss of its checkpoint. */
static void test_gemma_layers(void **state)
{
	(void)state;
	struct model_config c = described(GA_GEMMA3, 7, 0, NULL);
	for (int l = 0; l < 7; l++)
		assert_true(cfg_layer_local(&c, l) == (l != 5));
	assert_true(c.local_window == 4 && c.rope_local_theta == 10000.0f && c.rope_theta == 1e6f &&
		    c.rope_scaling == ROPE_SCALE_LINEAR && c.rope_factor == 8.0f);
	c = described(GA_GEMMA3, 2, 0, no_window);
	assert_true(c.local_window == 0 && !cfg_layer_local(&c, 0) && c.rope_local_theta == 0.0f);
	c = described(GA_GEMMA2, 3, 0, NULL);
	assert_true(cfg_layer_local(&c, 0) && !cfg_layer_local(&c, 1) && cfg_layer_local(&c, 2));
	assert_true(c.rope_theta == 10000.0f && c.attn_softcap == 4.0f && c.final_softcap == 2.0f);
	c = described(GA_GEMMA2, 45, 16, NULL);
	assert_int_equal(c.attn_scale_dim, 0);
	c = described(GA_GEMMA2, 46, 16, NULL);
	assert_int_equal(c.attn_scale_dim, 8);
	c = described(GA_GEMMA3, 62, 16, NULL);
	assert_int_equal(c.attn_scale_dim, 8);
	compare_exact_edit(GA_GEMMA3, GGML_F32, 0, 7, NULL);
	compare_exact_edit(GA_GEMMA3, GGML_F32, 0, 2, no_window);
	compare_exact_edit(GA_GEMMA2, GGML_F32, 16, 46, NULL);
	compare_exact_edit(GA_GEMMA3, GGML_BF16, 16, 62, NULL);
}

/* A Qwen3 file with Q/K/V and output biases (llama.cpp reads them when
 * they are there; Qwen3's own have none) loads them, permuted as the rows
 * are: the same weights and attention as the model written. */
static void test_qwen3_bias(void **state)
{
	(void)state;
	struct err e;
	struct model *t = tiny_hd(GA_QWEN3, 32, 48, 2, 16, 19);
	struct model_config c = t->cfg;
	c.bias = true;
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	model_init_random(m, 19);
	struct rng r;
	rng_seed(&r, 20);
	for (size_t i = 0; i < m->n_params; i++)
		m->params[i] += 0.05f * rng_normal(&r);
	/* the MLP's biases have no GGUF tensor in a SwiGLU model */
	memset(m->p[P_FCB], 0, m->psize[P_FCB] * sizeof(float));
	memset(m->p[P_FCPROJB], 0, m->psize[P_FCPROJB] * sizeof(float));
	m->tok = t->tok;
	t->tok = NULL;
	model_free(t);
	write_gguf(m, GA_QWEN3, GGML_F32, path_of("bias.gguf"));
	struct model *g = open_ok(path_of("bias.gguf"), "gguf");
	assert_true(g->cfg.bias && g->cfg.qk_norm);
	assert_int_equal(g->n_params, m->n_params);
	double dw = max_diff(m->params, g->params, m->n_params);
	int T;
	struct run *rm = run_text(m, &T), *rg = run_text(g, &T);
	double da = max_diff(rm->att, rg->att, (size_t)c.n_layer * c.n_head * T * T);
	printf("  qwen3 with biases: weights %.1e, attention %.1e, loss %.1e\n", dw, da,
	       fabs(rm->loss - rg->loss));
	assert_true(dw == 0 && da <= 1e-4 && fabs(rm->loss - rg->loss) <= 1e-4);
	run_free(rm);
	run_free(rg);
	model_free(g);
	model_free(m);
}

/* Qwen3: a file without blk.0.attn_q_norm (its name changed in place) is
 * refused naming the tensor; one without attn_k_norm likewise; the
 * mixture-of-experts qwen3moe is refused by name. */
static void test_qwen3_refused(void **state)
{
	(void)state;
	struct model *m = tiny(GA_QWEN3, 32, 48, 2, 13);
	struct gw *w = gw_new();
	ga_write_model(w, m, GA_QWEN3, GGML_F32);
	assert_int_equal(gt_gpt2_dir(w, tmp), 0);
	size_t len;
	unsigned char *b = gw_bytes(w, 3, 0, &len), *c = xmalloc(len);
	gw_free(w);
	model_free(m);
	static const struct { const char *name, *missing; } cut[] = {
		{ "blk.0.attn_q_norm.weight", "missing tensor blk.0.attn_q_norm.weight" },
		{ "blk.1.attn_k_norm.weight", "missing tensor blk.1.attn_k_norm.weight" },
	};
	for (int i = 0; i < 2; i++) {
		memcpy(c, b, len);
		/* blk.N.attn_X_norm -> blk.N.attn_X_morm: not read as the norm */
		after(c, len, cut[i].name)[-11] = 'm';
		damaged(c, len, cut[i].missing);
	}
	free(b);
	free(c);
	w = gw_new();
	gw_str(w, "general.architecture", "qwen3moe");
	gw_u32(w, "qwen3moe.expert_count", 128);
	assert_int_equal(gw_write(w, path_of("moe.gguf"), 3, 0), 0);
	gw_free(w);
	open_fails(path_of("moe.gguf"), "general.architecture \"qwen3moe\" is not supported");
}

/* A Qwen3-Reranker file (the converter adds cls.output, the output
 * layer's "yes" and "no" rows) loads as the language model: the same
 * attention and loss as the file without it; in a llama file the tensor
 * is still refused as unexpected. */
static void test_qwen3_reranker(void **state)
{
	(void)state;
	static const enum ga arch[2] = { GA_QWEN3, GA_LLAMA };
	for (int k = 0; k < 2; k++) {
		struct model *m = tiny(arch[k], 32, 48, 2, 23);
		struct gw *w = gw_new();
		ga_write_model(w, m, arch[k], GGML_F32);
		gw_tensor(w, "cls.output.weight", GGML_F32, 2, 32, m->p[P_WTE]);
		gw_u32(w, k ? "llama.pooling_type" : "qwen3.pooling_type", 4); /* rank */
		assert_int_equal(gt_gpt2_dir(w, tmp), 0);
		assert_int_equal(gw_write(w, path_of("rerank.gguf"), 3, 0), 0);
		gw_free(w);
		if (k) {
			open_fails(path_of("rerank.gguf"), "cls.output.weight");
			model_free(m);
			break;
		}
		struct model *g = open_ok(path_of("rerank.gguf"), "gguf");
		int T;
		struct run *rm = run_text(m, &T), *rg = run_text(g, &T);
		double da = max_diff(rm->att, rg->att, (size_t)m->cfg.n_layer * m->cfg.n_head * T * T);
		printf("  qwen3 reranker: attention %.1e, loss %.1e\n", da, fabs(rm->loss - rg->loss));
		assert_true(da <= 1e-4 && fabs(rm->loss - rg->loss) <= 1e-4);
		run_free(rm);
		run_free(rg);
		model_free(g);
		model_free(m);
	}
}

static void olmo3_window(struct gw *w) { gw_u32(w, "olmo2.attention.sliding_window", 4096); }
static void gemma2_linear(struct gw *w)
{
	gw_str(w, "gemma2.rope.scaling.type", "linear");
	gw_f32(w, "gemma2.rope.scaling.factor", 8);
}
static void gemma3_yarn(struct gw *w) { gw_str(w, "gemma3.rope.scaling.type", "yarn"); }
static void gemma3_linear(struct gw *w) { gw_str(w, "gemma3.rope.scaling.type", "linear"); }
static void unscaled(struct model_config *c)
{
	c->rope_scaling = ROPE_SCALE_NONE;
	c->rope_factor = 1.0f;
}

/* Gemma 2, Gemma 3 and OLMo-2 files without a tensor of their own (its
 * name changed in place, "norm" to "morm") are refused naming it, on one
 * line; OLMo 3's sliding window in an olmo2 file, RoPE scaling other than
 * Gemma 3's linear, and Gemma 3's linear without its factor, by name. */
static void test_fams_refused(void **state)
{
	(void)state;
	static const struct { enum ga a; const char *name; } cut[] = {
		{ GA_GEMMA2, "blk.1.attn_norm.weight" },
		{ GA_GEMMA2, "blk.1.post_attention_norm.weight" },
		{ GA_GEMMA2, "blk.0.ffn_norm.weight" },
		{ GA_GEMMA2, "blk.0.post_ffw_norm.weight" },
		{ GA_GEMMA3, "blk.0.attn_q_norm.weight" },
		{ GA_GEMMA3, "blk.1.attn_k_norm.weight" },
		{ GA_GEMMA3, "blk.1.post_ffw_norm.weight" },
		{ GA_OLMO2, "blk.0.attn_q_norm.weight" },
		{ GA_OLMO2, "blk.1.attn_k_norm.weight" },
		{ GA_OLMO2, "blk.0.post_attention_norm.weight" },
		{ GA_OLMO2, "blk.1.post_ffw_norm.weight" },
	};
	for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
		struct model *m = tiny(cut[i].a, 32, 48, 2, 13);
		struct gw *w = gw_new();
		ga_write_model(w, m, cut[i].a, GGML_F32);
		assert_int_equal(gt_gpt2_dir(w, tmp), 0);
		size_t len;
		unsigned char *b = gw_bytes(w, 3, 0, &len);
		gw_free(w);
		model_free(m);
		after(b, len, cut[i].name)[-11] = 'm'; /* ...norm.weight -> ...morm.weight */
		char word[96];
		snprintf(word, sizeof word, "missing tensor %s", cut[i].name);
		damaged(b, len, word);
		free(b);
	}
	refused_as(GA_OLMO2, NULL, olmo3_window, true, "olmo2.attention.sliding_window 4096: OLMo "
		   "3's sliding-window layers are not supported");
	refused_as(GA_GEMMA2, NULL, gemma2_linear, true, "gemma2.rope.scaling.type \"linear\" is not "
		   "supported (RoPE scaling)");
	refused_as(GA_GEMMA3, unscaled, gemma3_yarn, true, "gemma3.rope.scaling.type \"yarn\" is not "
		   "supported (RoPE scaling)");
	refused_as(GA_GEMMA3, unscaled, gemma3_linear, true, "missing key gemma3.rope.scaling.factor");
}

/* A block_count past the engine's CFG_MAX_LAYERS is refused by its key
 * before anything reads layers: Gemma 2 and Phi-3 mark their sliding
 * layers from it (a count of 300 once wrote past the layer bitmap). */
static void test_block_count(void **state)
{
	(void)state;
	static const enum ga fam[] = { GA_GEMMA2, GA_PHI3, GA_LLAMA };
	static const uint32_t count[] = { CFG_MAX_LAYERS + 1, 300, 0x7fffffff };
	for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
		for (size_t j = 0; j < sizeof count / sizeof count[0]; j++) {
			struct model *m = tiny(fam[i], 32, 48, 2, 13);
			struct gw *w = gw_new();
			ga_write_model(w, m, fam[i], GGML_F32);
			assert_int_equal(gt_gpt2_dir(w, tmp), 0);
			size_t len;
			unsigned char *b = gw_bytes(w, 3, 0, &len);
			gw_free(w);
			char key[64], word[128];
			snprintf(key, sizeof key, "%s.block_count", ga_name[fam[i]]);
			unsigned char *v = after(b, len, key) + 4; /* past its type */
			memcpy(v, &count[j], 4);
			snprintf(word, sizeof word, "%s is %u, outside 1..%d", key,
				 (unsigned)count[j], CFG_MAX_LAYERS);
			damaged(b, len, word);
			free(b);
			model_free(m);
		}
}

/* Phi-3's tensors and keys as Phi3MiniModel writes them: the fused
 * attn_qkv [q; k; v] with each q and k head's first R rows in HF's
 * rotate-half order (row d < R/2 of a head is the engine's row 2d, row
 * R/2 + d its 2d + 1, rows from R on as they are: no permutation, llama.cpp
 * turns Phi-3 with NeoX RoPE), ffn_up holding [gate; up] and no ffn_gate,
 * rope.dimension_count R (partial, as Phi-4-mini), the window 0 for none,
 * the original context and attention factor, and the LongRoPE tables. */
static void test_phi3_layout(void **state)
{
	(void)state;
	struct model *m = tiny(GA_PHI3, 32, 48, 1, 19);
	const char *p = path_of("layout.gguf");
	write_gguf(m, GA_PHI3, GGML_F32, p);
	const struct model_config *c = &m->cfg;
	size_t D = (size_t)cfg_d_head(c), R = (size_t)cfg_rotary_dims(c), H = 4, K = 2, C = 32;
	size_t F = 48, QKV = (H + 2 * K) * D;
	assert_true(R == D / 2 && c->rope_scaling == ROPE_SCALE_LONGROPE);
	struct gguf_file f;
	struct err e = { "" };
	assert_int_equal(gguf_open(&f, p, &e), 0);
	float *x = xmalloc(2 * F * C * sizeof *x);
	struct gguf_tensor *t = gguf_find_tensor(&f, "blk.0.attn_qkv.weight");
	assert_non_null(t);
	assert_int_equal(t->n, QKV * C);
	assert_int_equal(gguf_read_tensor(&f, t, x, &e), 0);
	for (size_t r = 0; r < QKV; r++) {
		size_t d = r % D, er = r;
		if (r < (H + K) * D && d < R)
			er = r - d + (d < R / 2 ? 2 * d : 2 * (d - R / 2) + 1);
		if (memcmp(x + r * C, m->p[P_QKVW] + er * C, C * sizeof *x))
			fail_msg("attn_qkv row %zu is not the engine's row %zu", r, er);
	}
	t = gguf_find_tensor(&f, "blk.0.ffn_up.weight");
	assert_non_null(t);
	assert_true(t->ndim == 2 && t->ne[0] == C && t->ne[1] == 2 * F);
	assert_int_equal(gguf_read_tensor(&f, t, x, &e), 0);
	assert_memory_equal(x, m->p[P_FCW], 2 * F * C * sizeof *x);
	assert_null(gguf_find_tensor(&f, "blk.0.ffn_gate.weight"));
	assert_non_null(gguf_find_tensor(&f, "output.weight"));
	static const char *const tab[2] = { "rope_factors_long.weight", "rope_factors_short.weight" };
	const float *want[2] = { c->rope_long, c->rope_short };
	for (int i = 0; i < 2; i++) {
		t = gguf_find_tensor(&f, tab[i]);
		assert_non_null(t);
		assert_true(t->ndim == 1 && t->ne[0] == R / 2);
		assert_int_equal(gguf_read_tensor(&f, t, x, &e), 0);
		assert_memory_equal(x, want[i], R / 2 * sizeof *x);
	}
	assert_true(key_num(&f, "phi3.rope.dimension_count") == (double)R &&
		    key_num(&f, "phi3.attention.sliding_window") == 0 &&
		    key_num(&f, "phi3.rope.scaling.original_context_length") == 4 &&
		    key_num(&f, "phi3.rope.scaling.attn_factor") == (double)c->rope_attn_factor &&
		    isnan(key_num(&f, "phi3.rope.scaling.factor")));
	free(x);
	gguf_close(&f);
	model_free(m);
}

static void phi3_unscaled(struct model_config *c) { c->rope_scaling = ROPE_SCALE_NONE; }
static void phi3_attn_only(struct gw *w) { gw_f32(w, "phi3.rope.scaling.attn_factor", 1.2f); }
static void phi3_tables(struct gw *w, size_t n, float first)
{
	float t[3] = { first, 2.0f, 3.0f };
	gw_f32(w, "phi3.rope.scaling.attn_factor", 1.2f);
	gw_tensor(w, "rope_factors_long.weight", GGML_F32, 0, n, t);
	gw_tensor(w, "rope_factors_short.weight", GGML_F32, 0, n, t);
}
static void phi3_three(struct gw *w) { phi3_tables(w, 3, 1.0f); }
static void phi3_zero(struct gw *w) { phi3_tables(w, 2, 0.0f); }
static void phi3_yarn(struct gw *w) { gw_str(w, "phi3.rope.scaling.type", "yarn"); }
static void llama_longrope(struct gw *w)
{
	float t[4] = { 1, 1, 1, 1 };
	gw_tensor(w, "rope_factors_long.weight", GGML_F32, 0, 4, t);
}

/* Damaged Phi-3 LongRoPE is refused on one line naming what is wrong: a
 * table missing beside the other (renamed in place), both missing when
 * rope.scaling.attn_factor asks for LongRoPE, a table of 3 factors where
 * the 4 turned dims have 2 pairs, a factor of 0; yarn scaling; LongRoPE's
 * tables in a llama file. */
static void test_phi3_refused(void **state)
{
	(void)state;
	static const char *const tab[2] = { "rope_factors_long.weight", "rope_factors_short.weight" };
	for (int i = 0; i < 2; i++) {
		struct model *m = tiny(GA_PHI3, 32, 48, 1, 13);
		struct gw *w = gw_new();
		ga_write_model(w, m, GA_PHI3, GGML_F32);
		assert_int_equal(gt_gpt2_dir(w, tmp), 0);
		size_t len;
		unsigned char *b = gw_bytes(w, 3, 0, &len);
		gw_free(w);
		model_free(m);
		after(b, len, tab[i])[-8] = 'x'; /* ..._long -> ..._lonx, ..._short -> ..._shorx */
		char word[128];
		snprintf(word, sizeof word, "missing tensor %s: %s asks for LongRoPE", tab[i], tab[!i]);
		damaged(b, len, word);
		free(b);
	}
	refused_as(GA_PHI3, phi3_unscaled, phi3_attn_only, true, "missing tensor "
		   "rope_factors_long.weight: phi3.rope.scaling.attn_factor asks for LongRoPE");
	refused_as(GA_PHI3, phi3_unscaled, phi3_three, true, "tensor rope_factors_long.weight has "
		   "shape [3], but the metadata needs [2]");
	refused_as(GA_PHI3, phi3_unscaled, phi3_zero, true, "tensor rope_factors_long.weight: "
		   "factor 0 is 0, not above 0");
	refused_as(GA_PHI3, NULL, phi3_yarn, true, "phi3.rope.scaling.type \"yarn\" is not supported");
	refused_as(GA_LLAMA, NULL, llama_longrope, true, "tensor rope_factors_long.weight (LongRoPE) "
		   "is supported for phi3 only, not llama");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_blocks),
		cmocka_unit_test(test_quant_bounds),
		cmocka_unit_test(test_fast_equals_ref),
		cmocka_unit_test(test_exact_types),
		cmocka_unit_test(test_head_dim),
		cmocka_unit_test(test_version2_alignment),
		cmocka_unit_test(test_quantized_models),
		cmocka_unit_test(test_tokenizers),
		cmocka_unit_test(test_gemma_tokenizers),
		cmocka_unit_test(test_dbrx_pre),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_qwen3_layout),
		cmocka_unit_test(test_fams_layout),
		cmocka_unit_test(test_gemma_layers),
		cmocka_unit_test(test_qwen3_bias),
		cmocka_unit_test(test_qwen3_refused),
		cmocka_unit_test(test_qwen3_reranker),
		cmocka_unit_test(test_fams_refused),
		cmocka_unit_test(test_block_count),
		cmocka_unit_test(test_phi3_layout),
		cmocka_unit_test(test_phi3_refused),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_held_nonfinite),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
