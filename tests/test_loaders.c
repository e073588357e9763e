/*
 * test_loaders.c — the format table (loader.h): HF GPT-2 directories,
 * llama2.c and llm.c checkpoints, our safetensors; the hf: cache lookup;
 * one test per kind of damaged input.
 *
 * Fixtures are written at run time into a temp directory:
 *   - one tiny random GPT-2 (2 layers, 4 heads, d 32, context 16) with a
 *     tiny byte-level BPE vocabulary (265 tokens), written as an HF directory
 *     (Conv1D [in, out] weights), as an llm.c .bin (padded vocabulary with
 *     garbage rows) and as our safetensors: all three must load to the same
 *     weights bit for bit, give bit-identical logits and attention, and match
 *     tests/ref_forward within 1e-5 + 1e-4 |ref|;
 *   - tiny random llama2.c models (n_kv_heads 2 < n_heads 4, tied and
 *     untied) with a 300-piece tokenizer.bin: the loaded model matches the
 *     reference forward, and also a separate double-precision forward
 *     written here after llama2.c's run.c, on the weights as laid out in the
 *     file — which checks the layout mapping (wq/wk/wv, w1/w3, wcls) and the
 *     RoPE / RMSNorm / SwiGLU / GQA conventions independently.
 * Damaged inputs must fail with one line naming the problem (and run clean
 * under ASan: make BUILD=build-asan ... build-asan/tests/test_loaders).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint.h"
#include "config.h"
#include "loader.h"
#include "loaders.h"
#include "ops.h"
#include "model.h"
#include "ref_forward.h"
#include "tokenizer.h"
#include "util.h"

static char tmp[64];

/* ------------------------------------------------------------- helpers */

static char *path_of(const char *fmt, ...)
{
	static char bufs[8][512];
	static int k;
	char *b = bufs[k++ % 8];
	va_list ap;
	int n = snprintf(b, sizeof bufs[0], "%s/", tmp);
	va_start(ap, fmt);
	vsnprintf(b + n, sizeof bufs[0] - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void write_text(const char *path, const char *s)
{
	write_bytes(path, s, strlen(s));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void rm_tree(const char *p)
{
	nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Opening must fail with one line that contains word. */
static void open_fails(const char *spec, const char *tokenizer, const char *word)
{
	struct err e = { "" };
	const char *fmt = NULL;
	struct model *m = model_open_ex(spec, tokenizer, &fmt, &e);
	if (m) {
		model_free(m);
		print_error("%s: loaded, but should fail with \"%s\"\n", spec, word);
		fail();
	}
	if (!strstr(e.msg, word)) {
		print_error("message \"%s\" should mention \"%s\"\n", e.msg, word);
		fail();
	}
	assert_null(strchr(e.msg, '\n'));
}

static struct model *open_ok(const char *spec, const char *tokenizer, const char *format)
{
	struct err e = { "" };
	const char *fmt = NULL;
	struct model *m = model_open_ex(spec, tokenizer, &fmt, &e);
	if (!m)
		print_error("%s: %s\n", spec, e.msg);
	assert_non_null(m);
	assert_non_null(fmt);
	assert_string_equal(fmt, format);

	/* model_describe (for listings and the memory estimate) reads the same
	 * config from the header alone */
	struct model_config c;
	const char *dfmt = NULL;
	if (model_describe(spec, &c, &dfmt, &e) != 0)
		print_error("describe %s: %s\n", spec, e.msg);
	assert_non_null(dfmt);
	assert_string_equal(dfmt, format);
	char *want = checkpoint_config_json(&m->cfg), *got = checkpoint_config_json(&c);
	assert_string_equal(got, want);
	free(want);
	free(got);
	return m;
}

/* ------------------------------------------------------ tiny tokenizers */

/* GPT-2's byte-to-unicode map, as UTF-8 strings. */
static void byte_strings(char out[256][4])
{
	int next = 256;
	for (int b = 0; b < 256; b++) {
		int self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
		int cp = self ? b : next++;
		int n = utf8_encode((uint32_t)cp, out[b]);
		out[b][n] = '\0';
	}
}

static const char *const tiny_merges[][2] = {
	{ "\xc4\xa0", "t" }, { "h", "e" }, { "\xc4\xa0t", "he" }, { "i", "n" },
	{ "\xc4\xa0", "a" }, { "e", "r" }, { "o", "n" }, { "\xc4\xa0", "c" },
};
#define N_MERGES 8
#define TINY_V (256 + N_MERGES + 1)

/* vocab.json and merges.txt of a 265-token byte-level BPE in dir. */
static void write_tiny_bpe(const char *dir)
{
	char bs[256][4], p[600];
	json_t *v = json_object();
	byte_strings(bs);
	for (int b = 0; b < 256; b++)
		json_object_set_new(v, bs[b], json_integer(b));
	char merges[1024] = "#version: 0.2\n";
	for (int i = 0; i < N_MERGES; i++) {
		char tok[32];
		snprintf(tok, sizeof tok, "%s%s", tiny_merges[i][0], tiny_merges[i][1]);
		json_object_set_new(v, tok, json_integer(256 + i));
		strcat(merges, tiny_merges[i][0]);
		strcat(merges, " ");
		strcat(merges, tiny_merges[i][1]);
		strcat(merges, "\n");
	}
	json_object_set_new(v, "<|endoftext|>", json_integer(TINY_V - 1));
	snprintf(p, sizeof p, "%s/vocab.json", dir);
	assert_int_equal(json_dump_file(v, p, 0), 0);
	json_decref(v);
	snprintf(p, sizeof p, "%s/merges.txt", dir);
	write_text(p, merges);
}

/* ------------------------------------------------------------ tiny GPT-2 */

#define C_ 32
#define L_ 2
#define H_ 4
#define S_ 16
#define F_ (4 * C_)

static struct model *gpt2_src;

static void tiny_gpt2_config(struct model_config *c)
{
	config_default(c);
	c->vocab_size = TINY_V;
	c->d_model = C_;
	c->n_layer = L_;
	c->n_head = c->n_kv_head = H_;
	c->d_ff = F_;
	c->context = S_;
}

static struct model *tiny_gpt2(void)
{
	struct model_config c;
	struct err e;
	tiny_gpt2_config(&c);
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	model_init_random(m, 1234);
	struct rng r;
	rng_seed(&r, 99);
	for (size_t j = 0; j < m->n_params; j++) /* non-trivial biases and norms */
		m->params[j] += 0.1f * rng_normal(&r);
	return m;
}

/* A safetensors writer for test files: tensors given in order. */
struct st_out {
	json_t *hdr;
	char *data;
	size_t len;
};

static void st_add(struct st_out *s, const char *name, const char *dtype, const float *x,
		   int ndim, const size_t *shape)
{
	size_t n = 1;
	json_t *t = json_object(), *sh = json_array(), *of = json_array();
	for (int d = 0; d < ndim; d++) {
		n *= shape[d];
		json_array_append_new(sh, json_integer((json_int_t)shape[d]));
	}
	size_t bytes = strcmp(dtype, "F32") == 0 ? 4 * n : 2 * n;
	s->data = xrealloc(s->data, s->len + bytes + 1);
	if (x && strcmp(dtype, "F32") == 0)
		memcpy(s->data + s->len, x, bytes);
	else if (x) /* F16 */
		for (size_t i = 0; i < n; i++) {
			uint16_t h = f32_to_f16(x[i]);
			memcpy(s->data + s->len + 2 * i, &h, 2);
		}
	else
		memset(s->data + s->len, 0, bytes);
	json_array_append_new(of, json_integer((json_int_t)s->len));
	json_array_append_new(of, json_integer((json_int_t)(s->len + bytes)));
	s->len += bytes;
	json_object_set_new(t, "dtype", json_string(dtype));
	json_object_set_new(t, "shape", sh);
	json_object_set_new(t, "data_offsets", of);
	json_object_set_new(s->hdr, name, t);
}

static void st_write(struct st_out *s, const char *path)
{
	char *h = json_dumps(s->hdr, JSON_COMPACT);
	uint64_t n = strlen(h);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)(n >> (8 * i));
	fwrite(w, 1, 8, f);
	fwrite(h, 1, n, f);
	if (s->len)
		fwrite(s->data, 1, s->len, f);
	fclose(f);
	free(h);
	json_decref(s->hdr);
	free(s->data);
}

/* Variations of the HF files, for damaged-input tests. */
enum hf_flaw {
	HF_OK, HF_PREFIX, HF_F16_BUFFERS, HF_MISSING_TENSOR, HF_TRANSPOSED, HF_EXTRA_TENSOR,
};

/* Writes m as model.safetensors in HF GPT-2 layout into dir. */
static void write_hf_weights(const struct model *m, const char *dir, enum hf_flaw flaw)
{
	struct st_out s = { json_object(), NULL, 0 };
	const char *pre = flaw == HF_PREFIX ? "transformer." : "";
	size_t C = C_, F = F_;
	char name[128], p[600];
	float *t = xmalloc(C * F * sizeof *t);
	size_t sh[2];

#define ADD(nm, x, d0, d1) do { sh[0] = d0; sh[1] = d1; \
	snprintf(name, sizeof name, "%s%s", pre, nm); \
	st_add(&s, name, "F32", x, (d1) != 0 ? 2 : 1, sh); } while (0)
	/* Conv1D: store W^T, [in, out] */
#define CONV(nm, w, in, out) do { \
	for (size_t i_ = 0; i_ < (in); i_++) \
		for (size_t o_ = 0; o_ < (out); o_++) \
			t[i_ * (out) + o_] = (w)[o_ * (in) + i_]; \
	if (flaw == HF_TRANSPOSED && strstr(nm, "c_attn")) \
		ADD(nm, t, out, in); \
	else \
		ADD(nm, t, in, out); } while (0)

	ADD("wte.weight", m->p[P_WTE], (size_t)TINY_V, C);
	ADD("wpe.weight", m->p[P_WPE], (size_t)S_, C);
	for (int l = 0; l < L_; l++) {
		char nm[96];
#define LN(s) (snprintf(nm, sizeof nm, "h.%d.%s", l, s), nm)
		ADD(LN("ln_1.weight"), m->p[P_LN1W] + l * C, C, 0);
		ADD(LN("ln_1.bias"), m->p[P_LN1B] + l * C, C, 0);
		CONV(LN("attn.c_attn.weight"), m->p[P_QKVW] + l * 3 * C * C, C, 3 * C);
		ADD(LN("attn.c_attn.bias"), m->p[P_QKVB] + l * 3 * C, 3 * C, 0);
		CONV(LN("attn.c_proj.weight"), m->p[P_ATTPROJW] + l * C * C, C, C);
		ADD(LN("attn.c_proj.bias"), m->p[P_ATTPROJB] + l * C, C, 0);
		ADD(LN("ln_2.weight"), m->p[P_LN2W] + l * C, C, 0);
		ADD(LN("ln_2.bias"), m->p[P_LN2B] + l * C, C, 0);
		CONV(LN("mlp.c_fc.weight"), m->p[P_FCW] + l * F * C, C, F);
		if (!(flaw == HF_MISSING_TENSOR && l == 1))
			ADD(LN("mlp.c_fc.bias"), m->p[P_FCB] + l * F, F, 0);
		CONV(LN("mlp.c_proj.weight"), m->p[P_FCPROJW] + l * C * F, F, C);
		ADD(LN("mlp.c_proj.bias"), m->p[P_FCPROJB] + l * C, C, 0);
		if (flaw == HF_F16_BUFFERS) { /* the mask buffers GPT-2 files carry */
			size_t bsh[4] = { 1, 1, S_, S_ };
			snprintf(name, sizeof name, "%s%s", pre, LN("attn.bias"));
			st_add(&s, name, "F16", NULL, 4, bsh);
			snprintf(name, sizeof name, "%s%s", pre, LN("attn.masked_bias"));
			st_add(&s, name, "F16", NULL, 0, bsh);
		}
#undef LN
	}
	ADD("ln_f.weight", m->p[P_LNFW], C, 0);
	ADD("ln_f.bias", m->p[P_LNFB], C, 0);
	if (flaw == HF_EXTRA_TENSOR)
		ADD("h.0.attn.rotary.weight", m->p[P_LNFB], C, 0);
#undef ADD
#undef CONV
	free(t);
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	st_write(&s, p);
}

static const char *gpt2_config_json =
	"{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\",\n"
	" \"activation_function\": \"gelu_new\", \"n_layer\": 2, \"n_head\": 4,\n"
	" \"n_embd\": 32, \"n_positions\": 16, \"n_ctx\": 16, \"n_inner\": null,\n"
	" \"layer_norm_epsilon\": 1e-05, \"vocab_size\": 265,\n"
	" \"tie_word_embeddings\": true, \"scale_attn_weights\": true}\n";

static void write_hf_dir(const char *dir, enum hf_flaw flaw, const char *config)
{
	char p[600];
	mkdir(dir, 0755);
	snprintf(p, sizeof p, "%s/config.json", dir);
	write_text(p, config ? config : gpt2_config_json);
	write_tiny_bpe(dir);
	write_hf_weights(gpt2_src, dir, flaw);
}

/* llm.c .bin: header, then our tensors with wte padded to Vp rows. */
static void write_llmc(const struct model *m, const char *path, int magic, int version,
		       size_t cut)
{
	int32_t h[256] = { 0 };
	int Vp = (TINY_V + 63) / 64 * 64;
	h[0] = magic;
	h[1] = version;
	h[2] = S_;
	h[3] = TINY_V;
	h[4] = L_;
	h[5] = H_;
	h[6] = C_;
	h[7] = Vp;
	size_t n = 1024 + 4 * (m->n_params + (size_t)(Vp - TINY_V) * C_);
	char *b = xmalloc(n), *o = b + 1024;
	memcpy(b, h, sizeof h);
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		memcpy(o, m->p[i], m->psize[i] * 4);
		o += m->psize[i] * 4;
		if (i == P_WTE) /* garbage padding rows: must be dropped */
			for (size_t j = 0; j < (size_t)(Vp - TINY_V) * C_; j++, o += 4) {
				float g = 1e3f + (float)j;
				memcpy(o, &g, 4);
			}
	}
	assert_true((size_t)(o - b) == n);
	write_bytes(path, b, n - cut);
	free(b);
}

static void assert_same_weights(const struct model *a, const struct model *b)
{
	assert_memory_equal(&a->cfg, &b->cfg, sizeof a->cfg);
	assert_int_equal(a->n_params, b->n_params);
	assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));
}

/* Runs m on tokens; returns a run with logits and attention. */
static struct run *forward(struct model *m, const int *tokens, int T)
{
	struct run_options o;
	struct err e = { "" };
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	run_options_native(m, &o);
	if (model_forward(m, &o, tokens, NULL, 1, T, r, &e) != 0)
		print_error("model_forward: %s\n", e.msg);
	assert_int_equal(r->t, T);
	run_att_fill(r); /* read as one block */
	return r;
}

static void check_close(const char *what, const float *got, const double *ref, size_t n)
{
	size_t bad = 0;
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double err = fabs((double)got[i] - ref[i]), tol = 1e-5 + 1e-4 * fabs(ref[i]);
		if (err > tol) {
			if (!bad)
				print_error("%s[%zu] = %.9g, reference %.9g\n", what, i, (double)got[i],
					    ref[i]);
			bad++;
		}
		if (err > worst)
			worst = err;
	}
	if (bad)
		print_error("%s: %zu of %zu values off (worst %.3g)\n", what, bad, n, worst);
	assert_int_equal(bad, 0);
}

/* model_forward vs tests/ref_forward: logits and attention. */
static void check_reference(struct model *m, const int *tokens, int T)
{
	struct run_options o;
	const struct model_config *c = &m->cfg;
	double *lg = xmalloc((size_t)T * c->vocab_size * sizeof *lg);
	double *att = xmalloc((size_t)c->n_layer * c->n_head * T * T * sizeof *att);
	run_options_native(m, &o);
	assert_int_equal(ref_forward(m, &o, tokens, T, lg, att, NULL), 0);
	struct run *r = forward(m, tokens, T);
	check_close("logits", run_logits(r), lg, (size_t)T * c->vocab_size);
	check_close("attention", r->att, att, (size_t)c->n_layer * c->n_head * T * T);
	run_free(r);
	free(lg);
	free(att);
}

/* ------------------------------------------------------------------ GPT-2 */

static void test_gpt2_three_formats(void **state)
{
	char *hf = xstrdup(path_of("hf"));
	char *llmc_dir = xstrdup(path_of("llmc"));
	char *llmc = xstrdup(path_of("llmc/gpt2_tiny.bin"));
	char *ours = xstrdup(path_of("tiny.safetensors"));
	struct err e = { "" };

	write_hf_dir(hf, HF_OK, NULL);
	mkdir(llmc_dir, 0755);
	write_llmc(gpt2_src, llmc, 20240326, 3, 0);
	write_tiny_bpe(llmc_dir);

	struct model *a = open_ok(hf, NULL, "hf-gpt2");
	struct model *b = open_ok(llmc, NULL, "llmc");
	assert_string_equal(a->tok->ops->kind, "gpt2-bpe");
	assert_string_equal(model_format_desc("hf-gpt2"), "Hugging Face GPT-2 directory");

	/* our own safetensors, from the same tensors and the HF tokenizer */
	struct model *src = tiny_gpt2();
	src->tok = tok_bpe_load(hf, &e);
	assert_non_null(src->tok);
	src->name = xstrdup("tiny");
	assert_int_equal(checkpoint_save(src, ours, CKPT_F32, &e), 0);
	model_free(src);
	struct model *c = open_ok(ours, NULL, "safetensors");

	assert_same_weights(gpt2_src, a);
	assert_same_weights(gpt2_src, b);
	assert_same_weights(gpt2_src, c);

	/* the same tokenizer everywhere */
	const char *text = "the cat in the hat";
	int *ia, *ib, *ic, na, nb, nc;
	assert_int_equal(model_tokenize(a, text, strlen(text), &ia, &na, NULL, &e), 0);
	assert_int_equal(model_tokenize(b, text, strlen(text), &ib, &nb, NULL, &e), 0);
	assert_int_equal(model_tokenize(c, text, strlen(text), &ic, &nc, NULL, &e), 0);
	assert_int_equal(na, nb);
	assert_int_equal(na, nc);
	assert_memory_equal(ia, ib, (size_t)na * sizeof *ia);
	assert_memory_equal(ia, ic, (size_t)na * sizeof *ia);
	assert_int_equal(ia[0], TINY_V - 1); /* <|endoftext|> first */
	char *back = tok_decode(a->tok, ia + 1, na - 1);
	assert_string_equal(back, text);
	free(back);

	/* bit-identical logits and attention; and the reference */
	int T = 14, tokens[14];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 37 + 5) % TINY_V;
	struct run *ra = forward(a, tokens, T), *rb = forward(b, tokens, T), *rc = forward(c, tokens, T);
	size_t nl = (size_t)T * TINY_V, nat = (size_t)L_ * H_ * T * T;
	assert_memory_equal(run_logits(ra), run_logits(rb), nl * sizeof(float));
	assert_memory_equal(run_logits(ra), run_logits(rc), nl * sizeof(float));
	assert_memory_equal(ra->att, rb->att, nat * sizeof(float));
	assert_memory_equal(ra->att, rc->att, nat * sizeof(float));
	run_free(ra);
	run_free(rb);
	run_free(rc);
	check_reference(a, tokens, T);
	check_reference(a, ia, na);

	free(ia);
	free(ib);
	free(ic);
	model_free(a);
	model_free(b);
	model_free(c);
	free(hf);
	free(llmc_dir);
	free(llmc);
	free(ours);
}

/* The "transformer." prefix, F16 mask buffers, tokenizer.json instead of
 * vocab.json + merges.txt, the model.safetensors file named directly, BF16
 * llm.c weights. */
static void test_gpt2_variants(void **state)
{
	char *dir = xstrdup(path_of("hf-prefix"));
	write_hf_dir(dir, HF_PREFIX, NULL);
	struct model *m = open_ok(dir, NULL, "hf-gpt2");
	assert_same_weights(gpt2_src, m);
	model_free(m);
	free(dir);

	dir = xstrdup(path_of("hf-buffers"));
	write_hf_dir(dir, HF_F16_BUFFERS, NULL);
	m = open_ok(dir, NULL, "hf-gpt2");
	assert_same_weights(gpt2_src, m);
	model_free(m);
	/* the weights file named directly */
	m = open_ok(path_of("hf-buffers/model.safetensors"), NULL, "hf-gpt2");
	assert_same_weights(gpt2_src, m);
	assert_string_equal(m->name, "hf-buffers");
	model_free(m);

	/* tokenizer.json: replace vocab.json + merges.txt */
	struct err e = { "" };
	struct tokenizer *t = tok_bpe_load(dir, &e);
	assert_non_null(t);
	char *json = t->ops->to_json(t);
	json_t *ours = json_loads(json, 0, NULL), *root = json_object(), *model = json_object();
	free(json);
	json_object_set_new(model, "type", json_string("BPE"));
	json_object_set(model, "vocab", json_object_get(ours, "vocab"));
	json_object_set(model, "merges", json_object_get(ours, "merges"));
	json_object_set_new(root, "model", model);
	char tj[600];
	snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
	assert_int_equal(json_dump_file(root, tj, 0), 0);
	json_decref(root);
	json_decref(ours);
	tok_free(t);
	unlink(path_of("hf-buffers/vocab.json"));
	unlink(path_of("hf-buffers/merges.txt"));
	m = open_ok(dir, NULL, "hf-gpt2");
	assert_int_equal(m->tok->vocab_size, TINY_V);
	model_free(m);
	free(dir);

	/* BF16 llm.c (version 5): the loaded weights are the BF16 roundings */
	struct model *b16 = tiny_gpt2();
	for (size_t i = 0; i < b16->n_params; i++) {
		uint32_t u;
		memcpy(&u, &b16->params[i], 4);
		u &= 0xffff0000u;
		memcpy(&b16->params[i], &u, 4);
	}
	int32_t h[256] = { 20240326, 5, S_, TINY_V, L_, H_, C_, TINY_V };
	size_t n = 1024 + 2 * b16->n_params;
	char *buf = xmalloc(n);
	memcpy(buf, h, sizeof h);
	for (size_t i = 0; i < b16->n_params; i++) {
		uint32_t u;
		memcpy(&u, &b16->params[i], 4);
		uint16_t hi = (uint16_t)(u >> 16);
		memcpy(buf + 1024 + 2 * i, &hi, 2);
	}
	write_bytes(path_of("llmc/bf16.bin"), buf, n);
	free(buf);
	m = open_ok(path_of("llmc/bf16.bin"), NULL, "llmc");
	assert_memory_equal(m->params, b16->params, b16->n_params * 4);
	model_free(m);
	model_free(b16);
}

/* hf:ORG/NAME from a cache laid out like huggingface_hub's. */
static void test_hf_cache(void **state)
{
	char *home = xstrdup(path_of("hfhome"));
	char *snap = xstrdup(path_of("hfhome/hub/models--test--tiny/snapshots/abc123"));
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "mkdir -p %s %s/hub/models--test--tiny/refs && "
		 "printf abc123 > %s/hub/models--test--tiny/refs/main", snap, home, home);
	assert_int_equal(system(cmd), 0);
	write_hf_dir(snap, HF_OK, NULL);
	char *old = getenv("HF_HOME") ? xstrdup(getenv("HF_HOME")) : NULL;
	setenv("HF_HOME", home, 1);
	unsetenv("HF_HUB_CACHE");

	struct model *m = open_ok("hf:test/tiny", NULL, "hf-gpt2");
	assert_string_equal(m->name, "test/tiny");
	assert_same_weights(gpt2_src, m);
	model_free(m);
	open_fails("hf:gpt2", NULL, "not in the local Hugging Face cache");
	open_fails("hf:", NULL, "expected hf:NAME or hf:ORG/NAME");
	/* without refs/main: the newest snapshot */
	snprintf(cmd, sizeof cmd, "rm %s/hub/models--test--tiny/refs/main", home);
	assert_int_equal(system(cmd), 0);
	m = open_ok("hf:test/tiny", NULL, "hf-gpt2");
	model_free(m);

	if (old)
		setenv("HF_HOME", old, 1);
	else
		unsetenv("HF_HOME");
	free(old);
	free(home);
	free(snap);
}

/* The GPT-2 tokenizer of an llm.c file from --tokenizer. */
static void test_llmc_tokenizer_option(void **state)
{
	char *dir = xstrdup(path_of("llmc-bare"));
	mkdir(dir, 0755);
	char *bin = xstrdup(path_of("llmc-bare/m.bin"));
	write_llmc(gpt2_src, bin, 20240326, 3, 0);
	open_fails(bin, NULL, "no GPT-2 tokenizer beside the model");
	struct model *m = open_ok(bin, path_of("hf"), "llmc");
	assert_same_weights(gpt2_src, m);
	model_free(m);
	open_fails(bin, path_of("nowhere"), "--tokenizer");
	free(dir);
	free(bin);
}

/* --tokenizer is refused for our own checkpoints (their ids are their own
 * vocabulary's); DIR/vocab.json or DIR/merges.txt names the pair in DIR;
 * model_open() uses the tokenizer beside the model.  A FIFO or a device, as the model or the tokenizer, is named
 * for what it is (and never opened: a FIFO would block). */
static void test_tokenizer_choice_and_special_files(void **state)
{
	char *bin = xstrdup(path_of("llmc-bare/m.bin"));
	char *hf = xstrdup(path_of("hf"));
	open_fails(path_of("tiny.safetensors"), hf, "carries its own tokenizer");
	struct model *m = open_ok(bin, path_of("hf/vocab.json"), "llmc");
	model_free(m);
	m = open_ok(bin, path_of("hf/merges.txt"), "llmc");
	model_free(m);

	struct err e = { "" };
	assert_null(model_open(bin, &e));
	assert_non_null(strstr(e.msg, "give one with --tokenizer"));

	char *fifo = xstrdup(path_of("fifo"));
	assert_int_equal(mkfifo(fifo, 0600), 0);
	open_fails(fifo, NULL, "fifo: is a FIFO, not a model file or directory");
	open_fails("/dev/zero", NULL, "/dev/zero: is a character device, not a model file");
	open_fails(bin, fifo, "--tokenizer");
	open_fails(bin, fifo, "fifo: is a FIFO, not a tokenizer file or directory");
	free(fifo);
	free(hf);
	free(bin);
}

/* --------------------------------------------------------------- llama2.c */

#define LD 32
#define LHID 64
#define LL 2
#define LH 4
#define LK 2
#define LS 16
#define LV 300
#define LHS (LD / LH)

/* A 300-piece tokenizer.bin: <unk>, <s>, </s>, 256 bytes, " ", a..z, and
 * some merges, with sentencepiece-like scores. */
static void write_tiny_llama_tok(const char *path, int n)
{
	static const char *const extra[] = {
		"he", " t", " the", "in", " a", "er", "on", " c", "at", " cat", "an", "th",
	};
	FILE *f = fopen(path, "wb");
	int32_t max = 8;
	assert_non_null(f);
	fwrite(&max, 4, 1, f);
	for (int i = 0; i < n; i++) {
		char piece[16];
		if (i == 0)
			strcpy(piece, "<unk>");
		else if (i == 1)
			strcpy(piece, "\n<s>\n");
		else if (i == 2)
			strcpy(piece, "\n</s>\n");
		else if (i < 259)
			snprintf(piece, sizeof piece, "<0x%02X>", i - 3);
		else if (i == 259)
			strcpy(piece, " ");
		else if (i < 286)
			snprintf(piece, sizeof piece, "%c", 'a' + i - 260);
		else if (i < 286 + 12)
			strcpy(piece, extra[i - 286]);
		else
			snprintf(piece, sizeof piece, "x%d", i); /* fillers */
		float score = i < 259 ? 0.0f : -(float)i;
		int32_t len = (int32_t)strlen(piece);
		fwrite(&score, 4, 1, f);
		fwrite(&len, 4, 1, f);
		fwrite(piece, 1, (size_t)len, f);
	}
	fclose(f);
}

/* The weights in llama2.c's own terms. */
struct l2c_weights {
	float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
	bool tied;
};

static float *randv(struct rng *r, size_t n, float scale, float offset)
{
	float *x = xmalloc(n * sizeof *x);
	for (size_t i = 0; i < n; i++)
		x[i] = offset + scale * rng_normal(r);
	return x;
}

static void l2c_make(struct l2c_weights *w, bool tied, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	size_t kv = (size_t)LK * LHS;
	w->tied = tied;
	w->emb = randv(&r, (size_t)LV * LD, 0.5f, 0);
	w->rms_att = randv(&r, (size_t)LL * LD, 0.1f, 1);
	w->wq = randv(&r, (size_t)LL * LD * LD, 0.2f, 0);
	w->wk = randv(&r, (size_t)LL * kv * LD, 0.2f, 0);
	w->wv = randv(&r, (size_t)LL * kv * LD, 0.2f, 0);
	w->wo = randv(&r, (size_t)LL * LD * LD, 0.1f, 0);
	w->rms_ffn = randv(&r, (size_t)LL * LD, 0.1f, 1);
	w->w1 = randv(&r, (size_t)LL * LHID * LD, 0.2f, 0);
	w->w2 = randv(&r, (size_t)LL * LD * LHID, 0.1f, 0);
	w->w3 = randv(&r, (size_t)LL * LHID * LD, 0.2f, 0);
	w->rms_final = randv(&r, LD, 0.1f, 1);
	w->wcls = tied ? NULL : randv(&r, (size_t)LV * LD, 0.3f, 0);
}

static void l2c_free(struct l2c_weights *w)
{
	float **all[] = { &w->emb, &w->rms_att, &w->wq, &w->wk, &w->wv, &w->wo, &w->rms_ffn,
			  &w->w1, &w->w2, &w->w3, &w->rms_final, &w->wcls };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		free(*all[i]);
}

/* Writes the legacy .bin; cut bytes are dropped from the end. */
static void l2c_write(const struct l2c_weights *w, const char *path, size_t cut)
{
	int32_t h[7] = { LD, LHID, LL, LH, LK, w->tied ? LV : -LV, LS };
	size_t kv = (size_t)LK * LHS, freq = (size_t)LS * LHS / 2;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fwrite(h, 4, 7, f);
	fwrite(w->emb, 4, (size_t)LV * LD, f);
	fwrite(w->rms_att, 4, (size_t)LL * LD, f);
	fwrite(w->wq, 4, (size_t)LL * LD * LD, f);
	fwrite(w->wk, 4, (size_t)LL * kv * LD, f);
	fwrite(w->wv, 4, (size_t)LL * kv * LD, f);
	fwrite(w->wo, 4, (size_t)LL * LD * LD, f);
	fwrite(w->rms_ffn, 4, (size_t)LL * LD, f);
	fwrite(w->w1, 4, (size_t)LL * LHID * LD, f);
	fwrite(w->w2, 4, (size_t)LL * LD * LHID, f);
	fwrite(w->w3, 4, (size_t)LL * LHID * LD, f);
	fwrite(w->rms_final, 4, LD, f);
	for (size_t i = 0; i < 2 * freq; i++) { /* freq_cis: garbage, must be skipped */
		float g = 7.0f + (float)i;
		fwrite(&g, 4, 1, f);
	}
	if (!w->tied)
		fwrite(w->wcls, 4, (size_t)LV * LD, f);
	fclose(f);
	write_bytes(path, buf, len - cut);
	free(buf);
}

/* y = W x, W (n, d) row-major: run.c's matmul(xout, x, w, d, n) */
static void matvec(double *y, const double *x, const float *w, int rows, int cols)
{
	for (int i = 0; i < rows; i++) {
		double s = 0;
		for (int j = 0; j < cols; j++)
			s += (double)w[(size_t)i * cols + j] * x[j];
		y[i] = s;
	}
}

static void rmsnorm(double *o, const double *x, const float *w, int n)
{
	double ss = 0;
	for (int j = 0; j < n; j++)
		ss += x[j] * x[j];
	ss = 1.0 / sqrt(ss / n + 1e-5);
	for (int j = 0; j < n; j++)
		o[j] = (double)w[j] * (ss * x[j]);
}

/* llama2.c's run.c forward, token by token with a KV cache, in double. */
static void runc_forward(const struct l2c_weights *w, const int *tokens, int T, double *logits)
{
	int kvd = LK * LHS, kvmul = LH / LK;
	double x[LD], xb[LD], xb2[LD], q[LD], k[LD], v[LD], hb[LHID], hb2[LHID], att[LS];
	double *kc = xcalloc((size_t)LL * LS * kvd, sizeof *kc);
	double *vc = xcalloc((size_t)LL * LS * kvd, sizeof *vc);
	for (int pos = 0; pos < T; pos++) {
		for (int i = 0; i < LD; i++)
			x[i] = w->emb[(size_t)tokens[pos] * LD + i];
		for (int l = 0; l < LL; l++) {
			rmsnorm(xb, x, w->rms_att + l * LD, LD);
			matvec(q, xb, w->wq + (size_t)l * LD * LD, LD, LD);
			matvec(k, xb, w->wk + (size_t)l * kvd * LD, kvd, LD);
			matvec(v, xb, w->wv + (size_t)l * kvd * LD, kvd, LD);
			for (int i = 0; i < LD; i += 2) {
				int hd = i % LHS;
				double freq = 1.0 / pow(10000.0, hd / (double)LHS);
				double val = pos * freq, fcr = cos(val), fci = sin(val);
				int rotn = i < kvd ? 2 : 1;
				for (int s = 0; s < rotn; s++) {
					double *vec = s == 0 ? q : k;
					double v0 = vec[i], v1 = vec[i + 1];
					vec[i] = v0 * fcr - v1 * fci;
					vec[i + 1] = v0 * fci + v1 * fcr;
				}
			}
			memcpy(kc + ((size_t)l * LS + pos) * kvd, k, sizeof k);
			memcpy(vc + ((size_t)l * LS + pos) * kvd, v, sizeof v);
			for (int h = 0; h < LH; h++) {
				const double *qh = q + h * LHS;
				double mx = -1e300, sum = 0;
				for (int t = 0; t <= pos; t++) {
					const double *kh = kc + ((size_t)l * LS + t) * kvd + (h / kvmul) * LHS;
					double s = 0;
					for (int i = 0; i < LHS; i++)
						s += qh[i] * kh[i];
					att[t] = s / sqrt((double)LHS);
					mx = att[t] > mx ? att[t] : mx;
				}
				for (int t = 0; t <= pos; t++)
					sum += (att[t] = exp(att[t] - mx));
				for (int i = 0; i < LHS; i++) {
					double acc = 0;
					for (int t = 0; t <= pos; t++)
						acc += att[t] / sum *
						       vc[((size_t)l * LS + t) * kvd + (h / kvmul) * LHS + i];
					xb[h * LHS + i] = acc;
				}
			}
			matvec(xb2, xb, w->wo + (size_t)l * LD * LD, LD, LD);
			for (int i = 0; i < LD; i++)
				x[i] += xb2[i];
			rmsnorm(xb, x, w->rms_ffn + l * LD, LD);
			matvec(hb, xb, w->w1 + (size_t)l * LHID * LD, LHID, LD);
			matvec(hb2, xb, w->w3 + (size_t)l * LHID * LD, LHID, LD);
			for (int i = 0; i < LHID; i++)
				hb[i] = hb[i] / (1.0 + exp(-hb[i])) * hb2[i];
			matvec(xb, hb, w->w2 + (size_t)l * LD * LHID, LD, LHID);
			for (int i = 0; i < LD; i++)
				x[i] += xb[i];
		}
		rmsnorm(xb, x, w->rms_final, LD);
		matvec(logits + (size_t)pos * LV, xb, w->tied ? w->emb : w->wcls, LV, LD);
	}
	free(kc);
	free(vc);
}

static void test_llama2c(void **state)
{
	char *dir = xstrdup(path_of("l2c"));
	mkdir(dir, 0755);
	write_tiny_llama_tok(path_of("l2c/tokenizer.bin"), LV);
	for (int tied = 1; tied >= 0; tied--) {
		struct l2c_weights w;
		l2c_make(&w, tied, 77 + (uint64_t)tied);
		char *bin = xstrdup(path_of("l2c/stories%s.bin", tied ? "" : "-untied"));
		l2c_write(&w, bin, 0);
		struct model *m = open_ok(bin, NULL, "llama2c");
		assert_int_equal(m->cfg.n_kv_head, LK);
		assert_int_equal(m->cfg.norm, NORM_RMS);
		assert_int_equal(m->cfg.pos, POS_ROPE);
		assert_int_equal(m->cfg.mlp, MLP_SWIGLU);
		assert_int_equal(m->cfg.tied, tied);
		assert_false(m->cfg.bias);
		assert_string_equal(m->tok->ops->kind, "llama2c");

		const char *text = "the cat sat on a mat";
		int *ids, n;
		struct err e = { "" };
		assert_int_equal(model_tokenize(m, text, strlen(text), &ids, &n, NULL, &e), 0);
		assert_int_equal(ids[0], 1);
		assert_int_equal(ids[1], 288); /* " the": " t" + "he" */
		char *back = tok_decode(m->tok, ids, n);
		assert_string_equal(back, text);
		free(back);

		int T = 12, tokens[12];
		for (int i = 0; i < T; i++)
			tokens[i] = (i * 53 + 11) % LV;
		check_reference(m, tokens, T);
		check_reference(m, ids, n);

		/* against run.c's forward on the file's own layout */
		double *ref = xmalloc((size_t)T * LV * sizeof *ref);
		runc_forward(&w, tokens, T, ref);
		struct run *r = forward(m, tokens, T);
		check_close("logits vs run.c", run_logits(r), ref, (size_t)T * LV);
		run_free(r);
		free(ref);
		free(ids);
		model_free(m);
		l2c_free(&w);
		free(bin);
	}
	/* tok<V>.bin and --tokenizer */
	rename(path_of("l2c/tokenizer.bin"), path_of("l2c/tok300.bin"));
	struct model *m = open_ok(path_of("l2c/stories.bin"), NULL, "llama2c");
	model_free(m);
	rename(path_of("l2c/tok300.bin"), path_of("elsewhere.bin"));
	open_fails(path_of("l2c/stories.bin"), NULL, "no tokenizer.bin");
	m = open_ok(path_of("l2c/stories.bin"), path_of("elsewhere.bin"), "llama2c");
	model_free(m);
	rename(path_of("elsewhere.bin"), path_of("l2c/tokenizer.bin"));
	free(dir);
}

/* ----------------------------------------------------------- damaged input */

static void test_damaged_config(void **state)
{
	static const struct {
		const char *config, *word;
	} cases[] = {
		{ "{\"n_layer\": 2, \"n_embd\": 32, \"n_positions\": 16, \"vocab_size\": 265}",
		  "config.json: missing key \"n_head\"" },
		{ "{\"n_layer\": 2, \"n_head\": \"4\", \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 265}", "config.json: \"n_head\" must be an integer" },
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 265, \"layer_norm_epsilon\": \"small\"}",
		  "\"layer_norm_epsilon\" must be a number" },
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 265, \"tie_word_embeddings\": 1}",
		  "\"tie_word_embeddings\" must be true or false" },
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"vocab_size\": 265}",
		  "missing key \"n_positions\"" },
		{ "{\"n_layer\": 2, \"n_head\": 5, \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 265}", "not divisible by n_head" },
		{ "{\"model_type\": \"gptj\", \"n_layer\": 2}", "model_type \"gptj\" is not supported" },
		/* the refusal names every family of the format table */
		{ "{\"model_type\": \"gptj\"}",
		  "(llama, qwen2, qwen3, mistral, gpt_neox, gpt_neo, bert, roberta, distilbert, phi3, gemma2, gemma3_text, gemma3, olmo2 and gpt2 are)" },
		{ "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 2}",
		  "config.json: missing key \"num_attention_heads\"" },
		{ "{\"model_type\": \"llama\", \"num_hidden_layers\": 2}", "missing key \"num_attention_heads\"" },
		/* config products are taken in 64 bits: 256 x (2^24 + 2) is not 512
		 * (Phi-3 reads only head_dim = hidden / heads) */
		{ "{\"model_type\": \"phi3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 256, "
		  "\"hidden_size\": 512, \"intermediate_size\": 48, \"vocab_size\": 265, "
		  "\"max_position_embeddings\": 16, \"head_dim\": 16777218}",
		  "config.json: head_dim 16777218 is not hidden_size / num_attention_heads (2)" },
		/* nor 4 x 2^30 an overflow (UBSan) */
		{ "{\"model_type\": \"phi3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		  "\"hidden_size\": 32, \"intermediate_size\": 48, \"vocab_size\": 265, "
		  "\"max_position_embeddings\": 16, \"head_dim\": 1073741824}",
		  "config.json: head_dim 1073741824 is not hidden_size / num_attention_heads (8)" },
		/* Llama's head_dim may differ from hidden / heads, up to the engine's bound */
		{ "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		  "\"hidden_size\": 32, \"intermediate_size\": 48, \"vocab_size\": 265, "
		  "\"max_position_embeddings\": 16, \"head_dim\": 1073741824}",
		  "config.json: head_dim 1073741824 is more than 4096" },
		/* GPT-2's d_ff of 4 x n_embd: no overflow (UBSan) before n_embd is refused */
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 1073741824, \"n_positions\": 16, "
		  "\"vocab_size\": 265}", "config.json: config: d_model = 1073741824 is outside" },
		/* a Llama config.json without model_type: said so, not GPT-2's missing key */
		{ "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 32, "
		  "\"intermediate_size\": 48, \"vocab_size\": 265, \"max_position_embeddings\": 16}",
		  "config.json: no \"model_type\", and no \"n_layer\" for GPT-2, the family assumed" },
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 265, \"activation_function\": \"relu\"}",
		  "activation_function \"relu\" is not supported" },
		{ "[1, 2]", "config.json: not a JSON object" },
		{ "{\"n_layer\": 2,\n", "config.json: invalid JSON" },
		{ "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 32, \"n_positions\": 16, "
		  "\"vocab_size\": 100}", "the tokenizer has 265 tokens but config.json's vocab_size is 100" },
	};
	char *dir = xstrdup(path_of("bad-config"));
	write_hf_dir(dir, HF_OK, NULL);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_text(path_of("bad-config/config.json"), cases[i].config);
		open_fails(dir, NULL, cases[i].word);
	}
	unlink(path_of("bad-config/config.json"));
	open_fails(dir, NULL, "not a model format attnscope knows");
	free(dir);
}

static void test_damaged_safetensors(void **state)
{
	char *dir = xstrdup(path_of("bad-st"));
	write_hf_dir(dir, HF_MISSING_TENSOR, NULL);
	open_fails(dir, NULL, "missing tensor \"h.1.mlp.c_fc.bias\"");
	write_hf_weights(gpt2_src, dir, HF_TRANSPOSED);
	open_fails(dir, NULL, "h.0.attn.c_attn.weight has shape [96, 32], transposed");
	write_hf_weights(gpt2_src, dir, HF_EXTRA_TENSOR);
	open_fails(dir, NULL, "unexpected tensor \"h.0.attn.rotary.weight\"");
	/* truncated data */
	write_hf_weights(gpt2_src, dir, HF_OK);
	char *st = path_of("bad-st/model.safetensors");
	assert_int_equal(truncate(st, 4000), 0);
	open_fails(dir, NULL, "truncated");
	assert_int_equal(truncate(st, 4), 0);
	open_fails(dir, NULL, "too short");
	/* header not JSON */
	write_bytes(st, "\x10\0\0\0\0\0\0\0{not json at all", 24);
	open_fails(dir, NULL, "header is not valid JSON");
	unlink(st);
	open_fails(dir, NULL, "no model.safetensors");
	/* weights only in PyTorch's pickle: said what to do */
	char *pt = path_of("bad-st/pytorch_model.bin");
	write_text(pt, "not read");
	open_fails(dir, NULL, "pytorch_model.bin is a pickle attnscope does not read");
	unlink(pt);
	free(dir);
}

static void test_damaged_tokenizer_files(void **state)
{
	char *dir = xstrdup(path_of("bad-tok"));
	write_hf_dir(dir, HF_OK, NULL);
	char *mp = path_of("bad-tok/merges.txt");
	write_text(mp, "#version: 0.2\n\xc4\xa0 t\nh e x\n");
	open_fails(dir, NULL, "merges.txt:3: malformed line");
	write_text(mp, "#version: 0.2\nq z\n");
	open_fails(dir, NULL, "merges.txt:2: the merge of \"q\" and \"z\" is not in the vocabulary");
	write_tiny_bpe(dir);
	char *vp = path_of("bad-tok/vocab.json");
	write_text(vp, "[\"a\", \"b\"]");
	open_fails(dir, NULL, "vocab.json: not a JSON object");
	write_text(vp, "{\"a\": \"zero\"}");
	open_fails(dir, NULL, "is not an integer");
	write_text(vp, "{\"a\": 0, \"b\": 0}");
	open_fails(dir, NULL, "id 0 is given to both");
	write_text(vp, "{\"a\": 0, ");
	open_fails(dir, NULL, "vocab.json: invalid JSON");
	write_text(vp, "{\"a\": 0}");
	open_fails(dir, NULL, "no token for byte 0x00");
	unlink(vp);
	open_fails(dir, NULL, "no GPT-2 tokenizer");
	free(dir);
}

static void test_damaged_llama2c(void **state)
{
	struct l2c_weights w;
	l2c_make(&w, true, 5);
	mkdir(path_of("bad-l2c"), 0755);
	write_tiny_llama_tok(path_of("bad-l2c/tokenizer.bin"), LV);
	char *bin = xstrdup(path_of("bad-l2c/m.bin"));
	l2c_write(&w, bin, 1000);
	open_fails(bin, NULL, "implies");
	open_fails(bin, NULL, "truncated?");
	l2c_write(&w, bin, 0);
	FILE *f = fopen(bin, "ab");
	fputs("junk", f);
	fclose(f);
	open_fails(bin, NULL, "trailing data");
	/* tokenizer with the wrong number of pieces */
	l2c_write(&w, bin, 0);
	write_tiny_llama_tok(path_of("bad-l2c/tokenizer.bin"), LV - 10);
	open_fails(bin, NULL, "ends after 290 pieces, but the model's vocabulary has 300");
	/* the "ak42" export versions */
	int32_t v1[64] = { 0x616b3432, 1, LD, LHID, LL, LH, LK, LV, LS };
	write_bytes(bin, v1, sizeof v1);
	open_fails(bin, NULL, "export version 1");
	/* not any format */
	write_text(bin, "hello, this is just some text that is not a model at all");
	open_fails(bin, NULL, "not a model format attnscope knows");
	l2c_free(&w);
	free(bin);
}

static void test_damaged_llmc(void **state)
{
	mkdir(path_of("bad-llmc"), 0755);
	write_tiny_bpe(path_of("bad-llmc"));
	char *bin = xstrdup(path_of("bad-llmc/m.bin"));
	write_llmc(gpt2_src, bin, 20240325, 3, 0);
	open_fails(bin, NULL, "llmc: magic 20240325, not 20240326");
	write_llmc(gpt2_src, bin, 20240326, 4, 0);
	open_fails(bin, NULL, "llm.c checkpoint version 4 is not supported");
	write_llmc(gpt2_src, bin, 20240326, 1, 0);
	open_fails(bin, NULL, "version 1 is not supported");
	write_llmc(gpt2_src, bin, 20240326, 3, 100);
	open_fails(bin, NULL, "truncated?");
	int32_t h[8] = { 20240326, 3, 16 };
	write_bytes(bin, h, sizeof h);
	open_fails(bin, NULL, "shorter than llm.c's 1024-byte header");
	int32_t t[256] = { 20240328, 2, 50257 };
	write_bytes(bin, t, sizeof t);
	open_fails(bin, NULL, "an llm.c tokenizer file, not a model");
	free(bin);
}

/* ------------------------------------------------------------------ main */

/* ------------------------------------------------------------- fuzz seeds */

/* Each Hugging Face loader has a fuzz seed of its own (fuzz/seeds/hf, in
 * fuzz_hf.c's layout: config.json, vocab.json, merges.txt,
 * model.safetensors, tokenizer.json, split at "\n--8<--\n"), and each
 * seed is a valid directory its loader takes: the fuzzer starts inside
 * every loader, not at its first refusal.  Its model.safetensors, named
 * on its own, opens as the same model through the same family. */
static void test_fuzz_seeds(void **state)
{
	static const struct {
		const char *seed, *format;
	} seeds[] = {
		{ "llama-tiny-untied", "hf-llama" },
		{ "llama3-tiny-rope-scaling", "hf-llama" },
		{ "qwen2-tiny-qkv-bias", "hf-llama" },
		{ "qwen3-tiny-qk-norm", "hf-llama" },
		{ "neox-tiny-tokenizer-json", "hf-neox" },
		{ "neo-tiny-local", "hf-neo" },
		{ "phi3-tiny-partial-window", "hf-phi3" },
		{ "phi3-tiny-longrope", "hf-phi3" },
		{ "gemma2-tiny-sandwich-softcap", "hf-gemma" },
		{ "gemma3-tiny-qk-norm-local-base", "hf-gemma" },
		{ "gemma3mm-tiny-language-model", "hf-gemma3" },
		{ "olmo2-tiny-post-norms", "hf-olmo2" },
		{ "bert-tiny-mlm", "hf-bert" },
		{ "roberta-tiny-mlm", "hf-roberta" },
		{ "distilbert-tiny-mlm", "hf-distilbert" },
	};
	static const char *const names[] = { "config.json", "vocab.json", "merges.txt",
					      "model.safetensors", "tokenizer.json" };
	static const char sep[] = "\n--8<--\n";
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		char path[128], *dir = xstrdup(path_of("seed-%zu", i));
		snprintf(path, sizeof path, "fuzz/seeds/hf/%s", seeds[i].seed);
		struct err e;
		size_t len;
		char *data = read_file(path, &len, &e);
		if (!data)
			print_error("%s\n", e.msg);
		assert_non_null(data);
		assert_true(len <= 32768 && len % 2 == 0); /* small; the directory, not its file */
		mkdir(dir, 0755);
		const char *p = data, *end = data + len;
		for (int k = 0; k < 5 && p <= end; k++) {
			const char *s = k < 4 ? memmem(p, (size_t)(end - p), sep, sizeof sep - 1) : NULL;
			size_t n = (size_t)((s ? s : end) - p);
			if (n)
				write_bytes(path_of("seed-%zu/%s", i, names[k]), p, n);
			p = s ? s + sizeof sep - 1 : end + 1;
		}
		struct model *m = open_ok(dir, NULL, seeds[i].format);
		/* the weights file inside the directory is the same model */
		struct model *f = open_ok(path_of("seed-%zu/model.safetensors", i), NULL,
					  seeds[i].format);
		for (int t = 0; t < N_PARAMS; t++) {
			assert_int_equal(f->psize[t], m->psize[t]);
			if (m->psize[t])
				assert_memory_equal(f->p[t], m->p[t], m->psize[t] * sizeof(float));
		}
		model_free(f);
		model_free(m);
		rm_tree(dir);
		free(data);
		free(dir);
	}
}

static int setup(void **state)
{
	strcpy(tmp, "/tmp/attnscope-loaders-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	gpt2_src = tiny_gpt2();
	return 0;
}

static int teardown(void **state)
{
	model_free(gpt2_src);
	rm_tree(tmp);
	return 0;
}

/* Hugging Face's Llama turns each head's dimension pairs (i, i + D/2) by
 * pos * theta^(-2i/D) (rotate-half); the engine turns (2i, 2i + 1) by the
 * same angle.  With the rows permuted as the hf-llama loader permutes them
 * (llama_rope_row), the engine's rotation of the permuted vector is the
 * permuted HF rotation, computed here from HF's formula in double. */
static void test_llama_rope_layout(void **state)
{
	(void)state;
	enum { D = 16 };
	struct rng r;
	rng_seed(&r, 5);
	for (int pos = 0; pos < 40; pos += 7) {
		double hf[D], out[D];
		float engine[D];
		for (int i = 0; i < D; i++)
			hf[i] = rng_normal(&r);
		for (int i = 0; i < D / 2; i++) {
			double a = pos * pow(10000.0, -2.0 * i / D), c = cos(a), s = sin(a);
			out[i] = hf[i] * c - hf[i + D / 2] * s;
			out[i + D / 2] = hf[i + D / 2] * c + hf[i] * s;
		}
		for (int i = 0; i < D; i++)
			engine[llama_rope_row(i, D)] = (float)hf[i];
		float freq[D / 2];
		for (int i = 0; i < D / 2; i++)
			freq[i] = powf(10000.0f, -2.0f * (float)i / (float)D);
		rope_rotate(engine, 1, D, D, pos, freq, 1.0f);
		for (int i = 0; i < D; i++)
			assert_true(fabs(engine[llama_rope_row(i, D)] - out[i]) < 1e-4);
	}
	/* a permutation within each head */
	int seen[3 * D] = { 0 };
	for (int i = 0; i < 3 * D; i++) {
		int j = llama_rope_row(i, D);
		assert_true(j / D == i / D);
		seen[j]++;
	}
	for (int i = 0; i < 3 * D; i++)
		assert_int_equal(seen[i], 1);
}

/* Hugging Face's GPT-NeoX turns, in each head of D dims, only the first
 * R = rotary_pct * D: pairs (i, i + R/2) by pos * base^(-2i/R), dims R..D-1
 * passed through (rotate-half over the rotary slice).  Computed here from
 * that formula in double, it must equal the engine's partial rotation
 * (pairs (2i, 2i + 1) over the first R) of the vector permuted as the
 * hf-neox loader permutes its rows (neox_rope_row), in two heads at once. */
static void test_neox_rope_layout(void **state)
{
	(void)state;
	enum { D = 16 };
	static const int Rs[3] = { 4, 8, 16 };
	struct rng r;
	rng_seed(&r, 6);
	for (int ri = 0; ri < 3; ri++) {
		int R = Rs[ri];
		for (int pos = 0; pos < 40; pos += 7) {
			double hf[2 * D], out[2 * D];
			float engine[2 * D];
			for (int i = 0; i < 2 * D; i++)
				out[i] = hf[i] = rng_normal(&r);
			for (int h = 0; h < 2; h++)
				for (int i = 0; i < R / 2; i++) {
					double a = pos * pow(10000.0, -2.0 * i / R), c = cos(a), s = sin(a);
					const double *x = hf + h * D;
					out[h * D + i] = x[i] * c - x[i + R / 2] * s;
					out[h * D + i + R / 2] = x[i + R / 2] * c + x[i] * s;
				}
			for (int i = 0; i < 2 * D; i++)
				engine[neox_rope_row(i, D, R)] = (float)hf[i];
			float freq[D / 2];
			for (int i = 0; i < R / 2; i++)
				freq[i] = powf(10000.0f, -2.0f * (float)i / (float)R);
			rope_rotate(engine, 2, D, R, pos, freq, 1.0f);
			for (int i = 0; i < 2 * D; i++)
				if (!(fabs(engine[neox_rope_row(i, D, R)] - out[i]) < 1e-4))
					fail_msg("R %d pos %d dim %d: engine %g, HF %g", R, pos, i,
						 (double)engine[neox_rope_row(i, D, R)], out[i]);
		}
		int seen[3 * D] = { 0 }; /* a permutation within each head, fixed past R */
		for (int i = 0; i < 3 * D; i++) {
			int j = neox_rope_row(i, D, R);
			assert_true(j / D == i / D);
			if (i % D >= R)
				assert_int_equal(j, i);
			seen[j]++;
		}
		for (int i = 0; i < 3 * D; i++)
			assert_int_equal(seen[i], 1);
	}
	/* R = D is Llama's rotate-half */
	for (int i = 0; i < 3 * D; i++)
		assert_int_equal(neox_rope_row(i, D, D), llama_rope_row(i, D));
}

/* GPT-NeoX's query_key_value rows come per head, [q_h; k_h; v_h]; the
 * engine wants every query head, then every key head, then every value
 * head, with q and k rows in the rotary order.  A hand-made tensor of
 * H = 2 heads of D = 6 dims, R = 4 rotary, each row holding its name
 * (100 part + 10 head + dim), against the engine layout written out by
 * hand: within q and k heads dims 0 2 1 3 4 5 (pairs (0, 2), (1, 3) of
 * HF become (0, 1), (2, 3)), v heads as they are. */
static void test_neox_qkv_layout(void **state)
{
	(void)state;
	enum { H = 2, D = 6, R = 4, ROWS = 3 * H * D };
	float hf[ROWS], engine[ROWS];
	for (int h = 0; h < H; h++)
		for (int part = 0; part < 3; part++)
			for (int d = 0; d < D; d++)
				hf[h * 3 * D + part * D + d] = (float)(100 * part + 10 * h + d);
	static const float want[ROWS] = {
		0, 2, 1, 3, 4, 5,             /* q head 0 */
		10, 12, 11, 13, 14, 15,       /* q head 1 */
		100, 102, 101, 103, 104, 105, /* k head 0 */
		110, 112, 111, 113, 114, 115, /* k head 1 */
		200, 201, 202, 203, 204, 205, /* v head 0 */
		210, 211, 212, 213, 214, 215, /* v head 1 */
	};
	for (int i = 0; i < ROWS; i++)
		engine[i] = -1.0f;
	for (int r = 0; r < ROWS; r++)
		engine[neox_qkv_row(r, H, D, R)] = hf[r];
	for (int i = 0; i < ROWS; i++)
		if (engine[i] != want[i])
			fail_msg("engine row %d holds %g, want %g", i, (double)engine[i], (double)want[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpt2_three_formats),
		cmocka_unit_test(test_gpt2_variants),
		cmocka_unit_test(test_hf_cache),
		cmocka_unit_test(test_llmc_tokenizer_option),
		cmocka_unit_test(test_tokenizer_choice_and_special_files),
		cmocka_unit_test(test_llama2c),
		cmocka_unit_test(test_llama_rope_layout),
		cmocka_unit_test(test_neox_rope_layout),
		cmocka_unit_test(test_neox_qkv_layout),
		cmocka_unit_test(test_damaged_config),
		cmocka_unit_test(test_damaged_safetensors),
		cmocka_unit_test(test_damaged_tokenizer_files),
		cmocka_unit_test(test_damaged_llama2c),
		cmocka_unit_test(test_damaged_llmc),
		cmocka_unit_test(test_fuzz_seeds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
