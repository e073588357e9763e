/*
 * test_checkpoint.c — safetensors save/load: exact round trips, F16/BF16
 * conversion, the config JSON, and one test per kind of damaged file, each
 * checking that loading fails with "PATH: problem" and leaks nothing.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint.h"
#include "config.h"
#include "model.h"
#include "tokenizer.h"
#include "util.h"

/* ---------------------------------------------------------------- fixture */

static char tmpdir[64];

static int group_setup(void **state)
{
	strcpy(tmpdir, "/tmp/attnscope-ckpt-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* Removes every file the tests wrote, then the directory. */
static int group_teardown(void **state)
{
	DIR *d = opendir(tmpdir);
	if (!d)
		return -1;
	struct dirent *de;
	char p[512];
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", tmpdir, de->d_name);
		unlink(p);
	}
	closedir(d);
	return rmdir(tmpdir);
}

static void tpath(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* Tiny configs: V=11, C=16, L=2, H=4, K=2, F=32, S=8, in eleven flavours
 * that between them make every optional tensor present and absent, and
 * GPT-NeoX's blocks, BERT's, GPT-Neo's local layers, Qwen3's q/k norm,
 * Gemma 2's switches, OLMo-2's blocks and Phi-3.5's LongRoPE. */
#define N_FLAVOURS 12
#define LONGROPE_FLAVOUR 10
#define FACTORS_FLAVOUR 11

static void tiny_config(struct model_config *c, int flavour)
{
	config_default(c);
	c->vocab_size = 11;
	c->d_model = 16;
	c->n_layer = 2;
	c->n_head = 4;
	c->n_kv_head = 2;
	c->d_ff = 32;
	c->context = 8;
	switch (flavour) {
	case 0: /* GPT-2: layernorm, pre, learned, gelu, bias, tied */
		break;
	case 1: /* Llama-ish: everything optional switched the other way */
		c->norm = NORM_RMS;
		c->placement = PLACE_POST;
		c->pos = POS_ROPE;
		c->mlp = MLP_SWIGLU;
		c->bias = false;
		c->tied = false;
		c->norm_eps = 1e-6f;
		c->rope_theta = 500000.0f;
		break;
	case 2: /* layernorm with RoPE, untied, full multi-head */
		c->pos = POS_ROPE;
		c->tied = false;
		c->n_kv_head = 4;
		break;
	case 3: /* rmsnorm with linear biases, SwiGLU, one K/V head */
		c->norm = NORM_RMS;
		c->mlp = MLP_SWIGLU;
		c->n_kv_head = 1;
		c->norm_eps = 3.25e-5f;
		break;
	case 4: /* GPT-NeoX: parallel blocks, RoPE over 2 of 4 dims, exact GELU */
		c->pos = POS_ROPE;
		c->rotary_dims = 2;
		c->parallel = true;
		c->mlp = MLP_GELU_EXACT;
		c->tied = false;
		break;
	case 5: /* BERT: post-norm encoder, embedding norm, masked-LM head */
		c->placement = PLACE_POST;
		c->mlp = MLP_GELU_EXACT;
		c->mask = MASK_NONE;
		c->emb_norm = true;
		c->head = HEAD_MLM;
		c->norm_eps = 1e-12f;
		break;
	case 6: /* GPT-Neo: layer 1 local over 3 keys, unscaled scores */
		c->local_window = 3;
		cfg_set_local(c, 1, true);
		c->scale = false;
		break;
	case 7: /* Qwen3: q/k norm, heads 8 wide over d_model 16, no biases */
		c->norm = NORM_RMS;
		c->pos = POS_ROPE;
		c->mlp = MLP_SWIGLU;
		c->bias = false;
		c->tied = false;
		c->head_dim = 8;
		c->qk_norm = true;
		break;
	case 8: /* Gemma 2: sqrt(C) embeddings, sandwich norms, soft-capping, GeGLU */
		c->norm = NORM_RMS;
		c->pos = POS_ROPE;
		c->mlp = MLP_GEGLU;
		c->bias = false;
		c->emb_scale = 4.0f;
		c->sandwich = true;
		c->attn_softcap = 50.0f;
		c->final_softcap = 30.0f;
		c->attn_scale_dim = 6;
		c->local_window = 3;
		cfg_set_local(c, 1, true);
		c->rope_local_theta = 12345.0f;
		break;
	case 9: /* OLMo-2: only the norms after the sub-blocks, whole-width q/k norm */
		c->norm = NORM_RMS;
		c->pos = POS_ROPE;
		c->mlp = MLP_SWIGLU;
		c->bias = false;
		c->sandwich = c->post_only = true;
		c->qk_norm = c->qk_norm_whole = true;
		break;
	case LONGROPE_FLAVOUR: /* Phi-3.5 / Phi-4-mini: LongRoPE on 6 of 8 dims */
		c->norm = NORM_RMS;
		c->pos = POS_ROPE;
		c->mlp = MLP_SWIGLU;
		c->bias = false;
		c->head_dim = 8;
		c->rotary_dims = 6;
		c->rope_scaling = ROPE_SCALE_LONGROPE;
		c->rope_orig_context = 4;
		c->rope_attn_factor = 1.1902381f; /* sqrt(1 + ln 32 / ln 4096) */
		for (int i = 0; i < 3; i++) {
			c->rope_short[i] = 1.0f + 0.0199999809f * (float)i;
			c->rope_long[i] = 1.08f + 12.3456789f * (float)i;
		}
		break;
	case FACTORS_FLAVOUR: /* a Llama 3.1 GGUF file: rope_freqs, one divisor per pair */
		c->norm = NORM_RMS;
		c->pos = POS_ROPE;
		c->mlp = MLP_SWIGLU;
		c->bias = false;
		c->rope_scaling = ROPE_SCALE_FACTORS;
		for (int i = 0; i < cfg_rotary_dims(c) / 2; i++)
			c->rope_short[i] = c->rope_long[i] = i ? 8.0f : 1.73593986f;
		break;
	}
}

/* A random model in which every tensor, biases and norm scales included,
 * holds distinct non-trivial values. */
static struct model *tiny_model(int flavour, uint64_t seed)
{
	struct model_config c;
	struct err e;
	tiny_config(&c, flavour);
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	model_init_random(m, seed);
	struct rng r;
	rng_seed(&r, seed ^ 0x5eed);
	for (size_t j = 0; j < m->n_params; j++)
		m->params[j] += 0.1f * rng_normal(&r);
	m->name = xstrdup("tiny");
	return m;
}

static bool cfg_equal(const struct model_config *a, const struct model_config *b)
{
	return a->vocab_size == b->vocab_size && a->d_model == b->d_model &&
	       a->n_layer == b->n_layer && a->n_head == b->n_head &&
	       a->n_kv_head == b->n_kv_head && a->d_ff == b->d_ff &&
	       a->context == b->context && a->norm == b->norm &&
	       a->norm_eps == b->norm_eps && a->placement == b->placement &&
	       a->pos == b->pos && a->rope_theta == b->rope_theta && a->mlp == b->mlp &&
	       a->bias == b->bias && a->tied == b->tied && a->residual == b->residual &&
	       a->scale == b->scale && a->mask == b->mask && a->parallel == b->parallel &&
	       a->emb_norm == b->emb_norm && a->head == b->head && a->qk_norm == b->qk_norm &&
	       a->head_dim == b->head_dim && a->emb_scale == b->emb_scale &&
	       a->sandwich == b->sandwich && a->attn_softcap == b->attn_softcap &&
	       a->final_softcap == b->final_softcap && a->attn_scale_dim == b->attn_scale_dim &&
	       a->rope_local_theta == b->rope_local_theta && a->post_only == b->post_only &&
	       a->qk_norm_whole == b->qk_norm_whole &&
	       cfg_rotary_dims(a) == cfg_rotary_dims(b) && a->local_window == b->local_window &&
	       memcmp(a->local, b->local, sizeof a->local) == 0 &&
	       a->rope_scaling == b->rope_scaling && a->rope_factor == b->rope_factor &&
	       a->rope_orig_context == b->rope_orig_context &&
	       cfg_rope_mscale(a) == cfg_rope_mscale(b) &&
	       ((a->rope_scaling != ROPE_SCALE_LONGROPE && a->rope_scaling != ROPE_SCALE_FACTORS) ||
		(!memcmp(a->rope_short, b->rope_short, sizeof(float) * (size_t)cfg_rotary_dims(a) / 2) &&
		 !memcmp(a->rope_long, b->rope_long, sizeof(float) * (size_t)cfg_rotary_dims(a) / 2)));
}

/* Fails unless the message is "PATH: ..." and mentions word. */
static void check_err(const struct err *e, const char *path, const char *word)
{
	size_t n = strlen(path);
	if (strncmp(e->msg, path, n) != 0 || e->msg[n] != ':' || !strstr(e->msg + n, word)) {
		print_error("message \"%s\" should start with \"%s:\" and mention \"%s\"\n",
			    e->msg, path, word);
		fail();
	}
	assert_null(strchr(e->msg, '\n'));
}

/* Loads path expecting failure with a message that mentions word. */
static void load_fails(const char *path, const char *word)
{
	struct err e = { "" };
	struct model *m = checkpoint_load(path, &e);
	if (m) {
		model_free(m);
		print_error("%s loaded, expected an error mentioning \"%s\"\n", path, word);
		fail();
	}
	check_err(&e, path, word);
}

static void write_bytes(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Writes a safetensors file from raw header text and data bytes. */
static void write_st_raw(const char *path, const char *hdr, size_t hlen,
			 const void *data, size_t dlen)
{
	unsigned char *buf = xmalloc(8 + hlen + dlen);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	memcpy(buf + 8, hdr, hlen);
	if (dlen)
		memcpy(buf + 8 + hlen, data, dlen);
	write_bytes(path, buf, 8 + hlen + dlen);
	free(buf);
}

/* Writes a safetensors file from a header object and data bytes. */
static void write_st(const char *path, const json_t *hdr, const void *data, size_t dlen)
{
	char *s = json_dumps(hdr, JSON_COMPACT);
	assert_non_null(s);
	write_st_raw(path, s, strlen(s), data, dlen);
	free(s);
}

/* A valid file to damage: a flavour's model saved as F32 (or F16) under
 * name, read back as a header object and the data bytes. */
struct parts {
	json_t *hdr;
	unsigned char *data;
	size_t dlen;
	char path[256];
};

static void parts_make(struct parts *p, const char *name, int flavour, enum ckpt_dtype dt)
{
	struct err e;
	struct model *m = tiny_model(flavour, 42);
	tpath(p->path, sizeof p->path, name);
	assert_int_equal(checkpoint_save(m, p->path, dt, &e), 0);
	model_free(m);

	size_t len;
	char *buf = read_file(p->path, &len, &e);
	assert_non_null(buf);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | (unsigned char)buf[i];
	json_error_t jerr;
	p->hdr = json_loadb(buf + 8, (size_t)hlen, 0, &jerr);
	assert_non_null(p->hdr);
	p->dlen = len - 8 - (size_t)hlen;
	p->data = xmalloc(p->dlen);
	memcpy(p->data, buf + 8 + hlen, p->dlen);
	free(buf);
}

static void parts_free(struct parts *p)
{
	json_decref(p->hdr);
	free(p->data);
}

/* Writes the (damaged) parts to name and expects loading to fail. */
static void parts_fail(const struct parts *p, const char *name, const char *word)
{
	char path[256];
	tpath(path, sizeof path, name);
	write_st(path, p->hdr, p->data, p->dlen);
	load_fails(path, word);
}

static json_t *meta_of(const struct parts *p)
{
	json_t *m = json_object_get(p->hdr, "__metadata__");
	assert_non_null(m);
	return m;
}

static json_t *tensor_of(const struct parts *p, const char *name)
{
	json_t *t = json_object_get(p->hdr, name);
	assert_non_null(t);
	return t;
}

static void set_offsets(const struct parts *p, const char *name, json_int_t b, json_int_t e)
{
	json_t *o = json_array();
	json_array_append_new(o, json_integer(b));
	json_array_append_new(o, json_integer(e));
	json_object_set_new(tensor_of(p, name), "data_offsets", o);
}

static json_int_t offset_of(const struct parts *p, const char *name, int k)
{
	json_t *o = json_object_get(tensor_of(p, name), "data_offsets");
	return json_integer_value(json_array_get(o, (size_t)k));
}

/* Replaces one key of the config text in the metadata. */
static void set_config_key(const struct parts *p, const char *key, json_t *value)
{
	json_t *meta = meta_of(p);
	json_t *cfg = json_loads(json_string_value(json_object_get(meta, "config")), 0, NULL);
	assert_non_null(cfg);
	if (value)
		json_object_set_new(cfg, key, value);
	else
		json_object_del(cfg, key);
	char *s = json_dumps(cfg, JSON_COMPACT);
	json_object_set_new(meta, "config", json_string(s));
	free(s);
	json_decref(cfg);
}

/* ------------------------------------------------------------- round trips */

/* F32 save then load gives back every parameter bit for bit, the same
 * config, name and training record, and the file's path; for every
 * flavour (so every optional tensor is both present and absent once). */
static void test_roundtrip_f32(void **state)
{
	for (int f = 0; f < N_FLAVOURS; f++) {
		struct err e = { "" };
		char path[256], name[64];
		snprintf(name, sizeof name, "rt32-%d.safetensors", f);
		tpath(path, sizeof path, name);
		struct model *m = tiny_model(f, 100 + (uint64_t)f);
		m->train_meta = xstrdup("{\"steps\":12,\"loss\":1.5}");
		assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), 0);

		struct model *l = checkpoint_load(path, &e);
		if (!l)
			print_error("%s\n", e.msg);
		assert_non_null(l);
		assert_true(cfg_equal(&m->cfg, &l->cfg));
		assert_int_equal(l->n_params, m->n_params);
		for (int i = 0; i < N_PARAMS; i++) {
			assert_int_equal(l->psize[i], m->psize[i]);
			if (m->psize[i])
				assert_memory_equal(l->p[i], m->p[i], m->psize[i] * sizeof(float));
		}
		assert_string_equal(l->name, "tiny");
		assert_string_equal(l->path, path);
		assert_string_equal(l->train_meta, m->train_meta);
		assert_null(l->tok);
		model_free(l);
		model_free(m);
	}
}

/* F16 save then load gives every parameter within F16 rounding of the
 * original (relative 1e-3, plus the subnormal step near zero). */
static void test_roundtrip_f16(void **state)
{
	for (int f = 0; f < N_FLAVOURS; f++) {
		struct err e = { "" };
		char path[256], name[64];
		snprintf(name, sizeof name, "rt16-%d.safetensors", f);
		tpath(path, sizeof path, name);
		struct model *m = tiny_model(f, 200 + (uint64_t)f);
		assert_int_equal(checkpoint_save(m, path, CKPT_F16, &e), 0);
		struct model *l = checkpoint_load(path, &e);
		assert_non_null(l);
		assert_true(cfg_equal(&m->cfg, &l->cfg));
		for (size_t j = 0; j < m->n_params; j++) {
			float a = m->params[j], b = l->params[j];
			if (fabsf(a - b) > 1e-3f * fabsf(a) + 6e-8f) {
				print_error("param %zu: %.9g became %.9g\n", j, (double)a, (double)b);
				fail();
			}
		}
		model_free(l);
		model_free(m);
	}
}

/* Saving is deterministic (same model, same bytes), the header is padded
 * with spaces so that the data starts at a multiple of 8, and an F32 file
 * holds exactly header + 4 bytes per parameter. */
static void test_save_deterministic(void **state)
{
	struct err e;
	char a[256], b[256];
	tpath(a, sizeof a, "det-a.safetensors");
	tpath(b, sizeof b, "det-b.safetensors");
	struct model *m = tiny_model(1, 7);
	assert_int_equal(checkpoint_save(m, a, CKPT_F32, &e), 0);
	assert_int_equal(checkpoint_save(m, b, CKPT_F32, &e), 0);
	size_t na, nb;
	char *x = read_file(a, &na, &e), *y = read_file(b, &nb, &e);
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(na, nb);
	assert_memory_equal(x, y, na);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | (unsigned char)x[i];
	assert_int_equal(hlen % 8, 0);
	assert_int_equal(na, 8 + hlen + m->n_params * 4);
	assert_true(x[8] == '{');
	size_t k = 8 + (size_t)hlen;
	while (x[k - 1] == ' ')
		k--;
	assert_true(x[k - 1] == '}');
	assert_true(8 + hlen - k < 8);
	free(x);
	free(y);
	model_free(m);
}

/* A model with a character tokenizer keeps it: the loaded tokenizer has
 * the same vocabulary size and serialises to the same JSON. */
static void test_roundtrip_tokenizer(void **state)
{
	struct err e = { "" };
	char path[256];
	tpath(path, sizeof path, "tok.safetensors");
	static const uint32_t cps[] = { 'a', 'b', 'c', ' ', '\n', 0xe9, 0x4e2d, '!', '?' };
	struct model *m = tiny_model(0, 3);
	m->tok = tok_char_new(cps, 9, 1, &e);
	assert_non_null(m->tok);
	assert_int_equal(m->tok->vocab_size, m->cfg.vocab_size);
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), 0);
	struct model *l = checkpoint_load(path, &e);
	if (!l)
		print_error("%s\n", e.msg);
	assert_non_null(l);
	assert_non_null(l->tok);
	assert_int_equal(l->tok->vocab_size, m->tok->vocab_size);
	char *j1 = m->tok->ops->to_json(m->tok), *j2 = l->tok->ops->to_json(l->tok);
	assert_string_equal(j1, j2);
	free(j1);
	free(j2);
	model_free(l);
	model_free(m);
}

/* A tokenizer with more tokens than the model's vocab_size is rejected:
 * its ids would index past the embedding. */
static void test_tokenizer_too_big(void **state)
{
	struct err e;
	char path[256];
	static const uint32_t cps[] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j' };
	struct model *m = tiny_model(0, 3);
	m->tok = tok_char_new(cps, 10, 1, &e); /* 12 ids, V = 11 */
	assert_non_null(m->tok);
	tpath(path, sizeof path, "tokbig.safetensors");
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), 0);
	model_free(m);
	load_fails(path, "vocab_size");
}

/* A hand-written file mixing BF16 (most tensors), F16 and F32 tensors,
 * with a hand-written config text and no name, tokenizer or training
 * record, loads with exactly the stored values; the name falls back to
 * the file's base name without ".safetensors". */
static void test_bf16_handwritten(void **state)
{
	struct model_config c;
	tiny_config(&c, 1);
	const char *cfg_text =
		"{\"d_model\":16,\"vocab_size\":11,\"n_layer\":2,\"n_head\":4,"
		"\"n_kv_head\":2,\"d_ff\":32,\"context\":8,\"norm\":\"rmsnorm\","
		"\"norm_eps\":1e-6,\"placement\":\"post\",\"pos\":\"rope\","
		"\"rope_theta\":500000,\"mlp\":\"swiglu\",\"bias\":false,\"tied\":false}";

	json_t *hdr = json_object(), *meta = json_object();
	json_object_set_new(meta, "format", json_string("attnscope"));
	json_object_set_new(meta, "version", json_string("1"));
	json_object_set_new(meta, "config", json_string(cfg_text));
	json_object_set_new(hdr, "__metadata__", meta);

	/* element k of every tensor is (k*7 % 33 - 16) / 64 + i/8, exact in
	 * all three types */
	unsigned char *data = xmalloc(config_param_count(&c) * 4);
	size_t off = 0;
	for (int i = N_PARAMS - 1; i >= 0; i--) { /* data in reverse order */
		size_t shape[3];
		int nd;
		size_t n = param_shape(&c, (enum param_id)i, shape, &nd);
		if (!n)
			continue;
		const char *dt = i == P_LMHEAD ? "F32" : i == P_FCW ? "F16" : "BF16";
		size_t es = i == P_LMHEAD ? 4 : 2;
		for (size_t k = 0; k < n; k++) {
			float v = (float)((int)(k * 7 % 33) - 16) / 64.0f + (float)i / 8.0f;
			uint32_t u;
			memcpy(&u, &v, 4);
			if (es == 4) {
				memcpy(data + off + k * 4, &v, 4);
				continue;
			}
			uint16_t h = i == P_FCW ? f32_to_f16(v) : (uint16_t)(u >> 16);
			assert_int_equal(u & 0xffff, 0); /* exact in BF16 */
			memcpy(data + off + k * 2, &h, 2);
		}
		json_t *t = json_object(), *sh = json_array(), *o = json_array();
		for (int d = 0; d < nd; d++)
			json_array_append_new(sh, json_integer((json_int_t)shape[d]));
		json_array_append_new(o, json_integer((json_int_t)off));
		json_array_append_new(o, json_integer((json_int_t)(off + n * es)));
		json_object_set_new(t, "dtype", json_string(dt));
		json_object_set_new(t, "shape", sh);
		json_object_set_new(t, "data_offsets", o);
		json_object_set_new(hdr, param_name((enum param_id)i), t);
		off += n * es;
	}
	char path[256];
	tpath(path, sizeof path, "bf16-model.safetensors");
	write_st(path, hdr, data, off);
	json_decref(hdr);
	free(data);

	struct err e = { "" };
	struct model *m = checkpoint_load(path, &e);
	if (!m)
		print_error("%s\n", e.msg);
	assert_non_null(m);
	assert_true(cfg_equal(&m->cfg, &c));
	for (int i = 0; i < N_PARAMS; i++)
		for (size_t k = 0; k < m->psize[i]; k++)
			assert_true(m->p[i][k] ==
				    (float)((int)(k * 7 % 33) - 16) / 64.0f + (float)i / 8.0f);
	assert_string_equal(m->name, "bf16-model");
	assert_null(m->tok);
	assert_null(m->train_meta);
	model_free(m);
}

/* ------------------------------------------------------------- config JSON */

/* Config -> JSON -> config is exact for every flavour, the text is the
 * same on every call, and short floats stay short ("1e-5", not
 * "9.99999975e-06"). */
static void test_config_json_roundtrip(void **state)
{
	for (int f = 0; f < N_FLAVOURS; f++) {
		struct model_config c, d;
		struct err e = { "" };
		tiny_config(&c, f);
		char *s = checkpoint_config_json(&c), *t = checkpoint_config_json(&c);
		assert_string_equal(s, t);
		memset(&d, 0xff, sizeof d);
		if (checkpoint_config_parse(s, &d, &e) != 0)
			print_error("%s: %s\n", s, e.msg);
		assert_true(cfg_equal(&c, &d));
		if (f == 0) /* an ordinary config has no key of the optional ones */
			assert_non_null(strstr(s, "\"norm_eps\":1e-5,"));
		if (f != 4) {
			assert_null(strstr(s, "parallel"));
			if (f != LONGROPE_FLAVOUR)
				assert_null(strstr(s, "rotary_dims"));
		} else {
			assert_non_null(strstr(s, "\"parallel\":true"));
			assert_non_null(strstr(s, "\"rotary_dims\":2"));
			assert_non_null(strstr(s, "\"mlp\":\"gelu-exact\""));
		}
		if (f != 6 && f != 8) { /* old checkpoints, without these keys, read as no local layers */
			assert_null(strstr(s, "local_"));
			assert_int_equal(d.local_window, 0);
		} else {
			assert_non_null(strstr(s, "\"local_layers\":[1],\"local_window\":3"));
		}
		if (f != 7 && f != 9)
			assert_null(strstr(s, "qk_norm"));
		else
			assert_non_null(strstr(s, "\"qk_norm\":true"));
		if (f == 9) /* OLMo-2 */
			assert_non_null(strstr(s, "\"post_only\":true"));
		if (f == FACTORS_FLAVOUR) { /* one table, under its own key */
			assert_non_null(strstr(s, "\"rope_factors\":[1.7359399,8.0]"));
			assert_non_null(strstr(s, "\"rope_scaling\":\"factors\""));
		}
		if (f != LONGROPE_FLAVOUR) {
			assert_null(strstr(s, "rope_short"));
		} else { /* the tables as written, short floats short */
			assert_non_null(strstr(s, "\"rope_scaling\":\"longrope\""));
			assert_non_null(strstr(s, "\"rope_short\":[1.0,1.02,1.04]"));
			assert_null(strstr(s, "rope_factor"));
		}
		if (f != 8 && f != 9)
			assert_null(strstr(s, "sandwich"));
		else
			assert_non_null(strstr(s, "\"sandwich\":true"));
		if (f != 8) {
			assert_null(strstr(s, "softcap"));
		} else {
			assert_non_null(strstr(s, "\"attn_softcap\":50.0,"));
			assert_non_null(strstr(s, "\"mlp\":\"geglu\""));
		}
		if (f != 5) {
			assert_null(strstr(s, "emb_norm"));
			assert_null(strstr(s, "\"head\""));
		} else {
			assert_non_null(strstr(s, "\"emb_norm\":true"));
			assert_non_null(strstr(s, "\"head\":\"mlm\""));
		}
		free(s);
		free(t);
	}
}

/* The config parser rejects missing keys, wrong types, integers outside
 * int, unknown names and keys, and non-JSON, naming the key; and leaves
 * the output untouched on failure. */
static void test_config_parse_errors(void **state)
{
	static const struct {
		const char *key, *value, *word;
	} cases[] = {
		{ "n_layer", NULL, "missing key \"n_layer\"" },
		{ "d_model", "\"16\"", "\"d_model\" must be an integer" },
		{ "d_model", "16.0", "\"d_model\" must be an integer" },
		{ "n_head", "4294967300", "\"n_head\" is out of range" },
		{ "context", "-2147483649", "\"context\" is out of range" },
		{ "norm_eps", "\"small\"", "\"norm_eps\" must be a number" },
		{ "norm_eps", "1e300", "\"norm_eps\" is out of range" },
		{ "bias", "1", "\"bias\" must be true or false" },
		{ "norm", "\"batchnorm\"", "\"norm\" has unknown value \"batchnorm\"" },
		{ "mlp", "3", "\"mlp\" must be a string" },
		{ "extra", "1", "unknown key \"extra\"" },
		{ "n_kv_head", "3", "n_kv_head" }, /* config_validate */
		{ "parallel", "1", "\"parallel\" must be true or false" },
		{ "rotary_dims", "\"2\"", "\"rotary_dims\" must be an integer" },
		{ "rotary_dims", "2", "rotary_dims 2 needs RoPE" }, /* learned positions */
		{ "mlp", "\"gelu_new\"", "\"mlp\" has unknown value \"gelu_new\"" },
		{ "emb_norm", "1", "\"emb_norm\" must be true or false" },
		{ "qk_norm", "\"yes\"", "\"qk_norm\" must be true or false" },
		{ "attn_softcap", "-1", "soft-capping -1" }, /* config_validate */
		{ "emb_scale", "\"x\"", "\"emb_scale\" must be a number" },
		{ "head", "\"pooler\"", "\"head\" has unknown value \"pooler\"" },
		{ "local_window", "3", "local_window needs \"local_layers\"" },
		{ "local_layers", "[1]", "local layers but no local_window" }, /* config_validate */
		{ "local_layers", "[\"1\"]", "local_layers[0] is not a layer" },
		{ "local_window", "-1", "\"local_window\" is out of range" },
	};
	struct model_config c, out;
	tiny_config(&c, 0);
	char *base = checkpoint_config_json(&c);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		json_t *o = json_loads(base, 0, NULL);
		assert_non_null(o);
		if (cases[k].value) {
			json_t *v = json_loads(cases[k].value, JSON_DECODE_ANY, NULL);
			assert_non_null(v);
			json_object_set_new(o, cases[k].key, v);
		} else {
			json_object_del(o, cases[k].key);
		}
		char *s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		struct err e = { "" };
		memset(&out, 0x5a, sizeof out);
		assert_int_equal(checkpoint_config_parse(s, &out, &e), -1);
		if (!strstr(e.msg, cases[k].word)) {
			print_error("%s -> \"%s\", expected \"%s\"\n", s, e.msg, cases[k].word);
			fail();
		}
		assert_int_equal(out.d_model, 0x5a5a5a5a);
		free(s);
	}
	free(base);

	struct err e = { "" };
	assert_int_equal(checkpoint_config_parse("{\"d_model\":", &out, &e), -1);
	assert_non_null(strstr(e.msg, "invalid JSON"));
	assert_int_equal(checkpoint_config_parse("[1, 2]", &out, &e), -1);
	assert_non_null(strstr(e.msg, "not a JSON object"));
}

/* A longrope config with key set to value (NULL: removed) is refused with
 * a message that holds word, and leaves the output untouched. */
static void refuse_longrope_edit(const char *key, const char *value, const char *word)
{
	struct model_config c, out;
	tiny_config(&c, LONGROPE_FLAVOUR);
	char *base = checkpoint_config_json(&c);
	json_t *o = json_loads(base, 0, NULL);
	assert_non_null(o);
	if (value)
		json_object_set_new(o, key, json_loads(value, JSON_DECODE_ANY, NULL));
	else
		json_object_del(o, key);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	struct err e = { "" };
	memset(&out, 0x5a, sizeof out);
	assert_int_equal(checkpoint_config_parse(s, &out, &e), -1);
	if (!strstr(e.msg, word) || strchr(e.msg, '\n')) {
		print_error("%s -> \"%s\", expected \"%s\" in one line\n", s, e.msg, word);
		fail();
	}
	assert_int_equal(out.d_model, 0x5a5a5a5a);
	free(s);
	free(base);
}

/* LongRoPE's keys, damaged, are refused by name: a table of another
 * length than R/2, a factor of 0, below 0 or not a number, a factor too
 * large for a float, a missing table, attention factor or original
 * context. */
static void test_longrope_config_errors(void **state)
{
	(void)state;
	refuse_longrope_edit("rope_short", "[1, 2]", "rope_short holds 2 factors, not the 3 of rotary dims 6");
	refuse_longrope_edit("rope_long", "[1, 2, 3, 4]", "rope_long holds 4 factors, not the 3");
	refuse_longrope_edit("rope_long", "[1, -2, 3]", "rope_long[1] = -2 must be above 0");
	refuse_longrope_edit("rope_short", "[0, 1, 1]", "rope_short[0] = 0 must be above 0");
	refuse_longrope_edit("rope_short", "[1, \"x\", 1]", "\"rope_short\"[1] must be a number");
	refuse_longrope_edit("rope_short", "[1, 1e300, 1]", "\"rope_short\"[1] must be a number");
	refuse_longrope_edit("rope_long", "3", "\"rope_long\" must be an array of numbers");
	refuse_longrope_edit("rope_long", NULL, "missing key \"rope_long\"");
	refuse_longrope_edit("rope_attn_factor", NULL, "missing key \"rope_attn_factor\"");
	refuse_longrope_edit("rope_attn_factor", "0", "rope_attn_factor 0 must be in (0, 1e6)");
	refuse_longrope_edit("rope_orig_context", NULL, "missing key \"rope_orig_context\"");
	refuse_longrope_edit("rope_orig_context", "0", "rope_orig_context 0 must be in 1..2^30");
	refuse_longrope_edit("rope_scaling", "\"yarn\"", "\"rope_scaling\" has unknown value \"yarn\"");
}

/* ------------------------------------------------------------ damaged files */

/* A file cut short anywhere — empty, inside the length word, inside the
 * header, inside the data, one byte short — fails with "truncated?". */
static void test_truncated(void **state)
{
	struct err e;
	struct parts p;
	parts_make(&p, "trunc-src.safetensors", 0, CKPT_F32);
	size_t len;
	char *buf = read_file(p.path, &len, &e);
	assert_non_null(buf);
	size_t hlen = len - 8 - p.dlen;
	const size_t cuts[] = { 0, 4, 7, 8, 8 + hlen / 2, 8 + hlen, 8 + hlen + p.dlen / 2,
				len - 1 };
	for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
		char path[256], name[64];
		snprintf(name, sizeof name, "trunc-%zu.safetensors", cuts[k]);
		tpath(path, sizeof path, name);
		write_bytes(path, buf, cuts[k]);
		load_fails(path, "truncated");
	}
	free(buf);
	parts_free(&p);
}

/* A header length past the end of the file is rejected before anything
 * is allocated for it, and so is an absurd one in a (sparse) file that
 * is big enough to hold it. */
static void test_header_length_past_end(void **state)
{
	struct err e;
	struct parts p;
	parts_make(&p, "hlen-src.safetensors", 0, CKPT_F32);
	size_t len;
	unsigned char *buf = (unsigned char *)read_file(p.path, &len, &e);
	assert_non_null(buf);
	const uint64_t lens[] = { len - 8 + 1, (uint64_t)1 << 40, UINT64_MAX };
	char path[256];
	tpath(path, sizeof path, "hlen.safetensors");
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		for (int i = 0; i < 8; i++)
			buf[i] = (unsigned char)(lens[k] >> (8 * i));
		write_bytes(path, buf, len);
		load_fails(path, "past the end of the file");
	}
	free(buf);
	parts_free(&p);

	/* 150 MB of header in a 200 MB file of holes */
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)((uint64_t)150000000 >> (8 * i));
	tpath(path, sizeof path, "hlen-absurd.safetensors");
	write_bytes(path, w, 8);
	assert_int_equal(truncate(path, 200000000), 0);
	load_fails(path, "absurd");
	unlink(path);
}

/* A header that is not JSON fails with "not valid JSON". */
static void test_header_not_json(void **state)
{
	char path[256];
	tpath(path, sizeof path, "notjson.safetensors");
	const char *h = "{\"wte\": nope}   ";
	write_st_raw(path, h, strlen(h), "\0\0\0\0", 4);
	load_fails(path, "not valid JSON");

	const char zeros[16] = { 0 };
	write_st_raw(path, zeros, sizeof zeros, NULL, 0);
	load_fails(path, "not valid JSON");
}

/* A header that is JSON but not an object fails with "not a JSON object". */
static void test_header_not_object(void **state)
{
	char path[256];
	tpath(path, sizeof path, "notobj.safetensors");
	const char *hs[] = { "[1, 2, 3]", "42      ", "\"attnscope\"", "null" };
	for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++) {
		write_st_raw(path, hs[k], strlen(hs[k]), NULL, 0);
		load_fails(path, "not a JSON object");
	}
}

/* A tensor with a dtype this build does not read ("F64", "Q4", a number,
 * a name with a newline) fails naming the dtype, on one line. */
static void test_unknown_dtype(void **state)
{
	struct parts p;
	parts_make(&p, "dtype-src.safetensors", 0, CKPT_F32);
	json_object_set_new(tensor_of(&p, "qkvw"), "dtype", json_string("F64"));
	parts_fail(&p, "dtype-f64.safetensors", "unsupported dtype \"F64\"");
	json_object_set_new(tensor_of(&p, "qkvw"), "dtype", json_string("Q4"));
	parts_fail(&p, "dtype-q4.safetensors", "unsupported dtype \"Q4\"");
	json_object_set_new(tensor_of(&p, "qkvw"), "dtype", json_integer(4));
	parts_fail(&p, "dtype-int.safetensors", "dtype");
	/* a name from the file cannot break the message into lines */
	json_object_set_new(tensor_of(&p, "qkvw"), "dtype", json_string("F\n64"));
	parts_fail(&p, "dtype-nl.safetensors", "unsupported dtype \"F?64\"");
	parts_free(&p);
}

/* A tensor whose shape differs from the config's fails naming the tensor,
 * the shape found and the one expected; so do a shape with the wrong
 * number of dimensions and one that is not a list of integers. */
static void test_shape_mismatch(void **state)
{
	struct parts p;
	parts_make(&p, "shape-src.safetensors", 0, CKPT_F32);
	/* H=4, K=2, D=4: QKV = (4 + 2*2) * 4 = 32 rows */
	json_object_set_new(tensor_of(&p, "qkvw"), "shape", json_pack("[iii]", 2, 48, 16));
	parts_fail(&p, "shape-a.safetensors", "tensor qkvw has shape [2, 48, 16], but the "
		   "config needs [2, 32, 16]");
	json_object_set_new(tensor_of(&p, "qkvw"), "shape", json_pack("[ii]", 64, 16));
	parts_fail(&p, "shape-b.safetensors", "[64, 16]");
	json_object_set_new(tensor_of(&p, "qkvw"), "shape", json_pack("[isi]", 2, "32", 16));
	parts_fail(&p, "shape-c.safetensors", "qkvw: shape is not a list");
	parts_free(&p);
}

/* data_offsets that end past the data, begin after they end, are not two
 * non-negative integers, or span a size other than elements * dtype size
 * are each rejected naming the tensor. */
static void test_offsets_out_of_range(void **state)
{
	struct parts p;
	parts_make(&p, "offs-src.safetensors", 0, CKPT_F32);
	json_int_t b = offset_of(&p, "lnfb", 0), e = offset_of(&p, "lnfb", 1);
	json_int_t d = (json_int_t)p.dlen;

	set_offsets(&p, "lnfb", d - (e - b) + 4, d + 4);
	parts_fail(&p, "offs-end.safetensors", "lnfb: data_offsets");
	parts_fail(&p, "offs-end2.safetensors", "past the end of the data");
	set_offsets(&p, "lnfb", e, b);
	parts_fail(&p, "offs-rev.safetensors", "begin after");
	set_offsets(&p, "lnfb", b, b + 4);
	parts_fail(&p, "offs-span.safetensors", "span 4 bytes");
	set_offsets(&p, "lnfb", -4, e - b - 4);
	parts_fail(&p, "offs-neg.safetensors", "two non-negative integers");
	json_object_set_new(tensor_of(&p, "lnfb"), "data_offsets", json_pack("[i]", b));
	parts_fail(&p, "offs-one.safetensors", "two non-negative integers");
	json_object_set_new(tensor_of(&p, "lnfb"), "data_offsets", json_pack("[iii]", b, e, e));
	parts_fail(&p, "offs-three.safetensors", "two non-negative integers");
	json_object_set_new(tensor_of(&p, "lnfb"), "data_offsets", json_string("0-64"));
	parts_fail(&p, "offs-str.safetensors", "two non-negative integers");
	parts_free(&p);
}

/* Two tensors whose byte ranges overlap (equal, or shifted by one float)
 * fail naming both. */
static void test_overlapping_offsets(void **state)
{
	struct parts p;
	parts_make(&p, "overlap-src.safetensors", 0, CKPT_F32);
	json_int_t b = offset_of(&p, "ln1w", 0), e = offset_of(&p, "ln1w", 1);
	set_offsets(&p, "ln2w", b, e); /* same shape (L, C) */
	parts_fail(&p, "overlap-same.safetensors", "overlap");
	parts_fail(&p, "overlap-names.safetensors", "ln1w");
	set_offsets(&p, "ln2w", b + 4, e + 4);
	parts_fail(&p, "overlap-shift.safetensors", "ln2w");
	parts_free(&p);
}

/* A tensor the config needs but the file lacks fails naming it. */
static void test_missing_tensor(void **state)
{
	struct parts p;
	parts_make(&p, "missing-src.safetensors", 0, CKPT_F32);
	json_object_del(p.hdr, "lnfb");
	parts_fail(&p, "missing.safetensors", "missing tensor \"lnfb\"");
	parts_free(&p);
}

/* A tensor name the config does not use — unknown, or a real tensor that
 * this config has none of (wpe with RoPE) — is an error. */
static void test_unexpected_tensor(void **state)
{
	struct parts p;
	parts_make(&p, "extra-src.safetensors", 1, CKPT_F32);
	json_t *copy = json_deep_copy(tensor_of(&p, "lnfw"));
	json_object_set_new(p.hdr, "foo", copy);
	parts_fail(&p, "extra-foo.safetensors", "unexpected tensor \"foo\"");
	json_object_del(p.hdr, "foo");
	json_object_set_new(p.hdr, "wpe", json_deep_copy(tensor_of(&p, "lnfw")));
	parts_fail(&p, "extra-wpe.safetensors", "unexpected tensor \"wpe\"");
	parts_free(&p);
}

/* A NaN weight fails naming the tensor and the element index, in F32 and
 * in F16 data. */
static void test_nan_weight(void **state)
{
	struct parts p;
	parts_make(&p, "nan-src.safetensors", 0, CKPT_F32);
	float nan = NAN;
	memcpy(p.data + offset_of(&p, "qkvw", 0) + 5 * 4, &nan, 4);
	parts_fail(&p, "nan.safetensors", "tensor qkvw has a non-finite value at element 5");
	parts_free(&p);

	parts_make(&p, "nan16-src.safetensors", 1, CKPT_F16);
	uint16_t h = 0x7e00;
	memcpy(p.data + offset_of(&p, "lmhead", 0) + 175 * 2, &h, 2);
	parts_fail(&p, "nan16.safetensors", "tensor lmhead has a non-finite value at element 175");
	parts_free(&p);
}

/* An infinite weight (either sign) fails naming tensor and element, in
 * F32 and in F16 data. */
static void test_inf_weight(void **state)
{
	struct parts p;
	parts_make(&p, "inf-src.safetensors", 0, CKPT_F32);
	float inf = -INFINITY;
	memcpy(p.data + offset_of(&p, "wte", 0), &inf, 4);
	parts_fail(&p, "inf.safetensors", "tensor wte has a non-finite value at element 0");
	parts_free(&p);

	parts_make(&p, "inf16-src.safetensors", 3, CKPT_F16);
	uint16_t h = 0x7c00;
	json_int_t n = (offset_of(&p, "fcw", 1) - offset_of(&p, "fcw", 0)) / 2;
	memcpy(p.data + offset_of(&p, "fcw", 0) + (n - 1) * 2, &h, 2);
	char want[96];
	snprintf(want, sizeof want, "tensor fcw has a non-finite value at element %lld",
		 (long long)(n - 1));
	parts_fail(&p, "inf16.safetensors", want);
	parts_free(&p);
}

/* Absurd config sizes in the metadata (d_model 2^31, n_head 0, d_model
 * not divisible by n_head, a huge vocabulary) and a config that is
 * missing or not JSON fail with the key named. */
static void test_absurd_config(void **state)
{
	struct parts p;
	parts_make(&p, "cfg-src.safetensors", 0, CKPT_F32);

	set_config_key(&p, "d_model", json_integer((json_int_t)1 << 31));
	parts_fail(&p, "cfg-dmodel.safetensors", "d_model");
	set_config_key(&p, "d_model", json_integer(16));

	set_config_key(&p, "n_head", json_integer(0));
	parts_fail(&p, "cfg-nhead.safetensors", "n_head");

	set_config_key(&p, "n_head", json_integer(4));
	set_config_key(&p, "d_model", json_integer(18));
	parts_fail(&p, "cfg-div.safetensors", "divisible");
	set_config_key(&p, "d_model", json_integer(16));

	set_config_key(&p, "vocab_size", json_integer(1 << 30));
	parts_fail(&p, "cfg-vocab.safetensors", "vocab_size");
	set_config_key(&p, "vocab_size", json_integer(11));

	set_config_key(&p, "n_layer", NULL);
	parts_fail(&p, "cfg-nolayer.safetensors", "missing key \"n_layer\"");

	json_object_set_new(meta_of(&p), "config", json_string("{d_model: 16}"));
	parts_fail(&p, "cfg-notjson.safetensors", "config: invalid JSON");
	json_object_del(meta_of(&p), "config");
	parts_fail(&p, "cfg-none.safetensors", "no \"config\"");
	parts_free(&p);
}

/* Without the format mark — no metadata, metadata not an object, no
 * "format", another format, a non-string value — the file is "not an
 * attnscope checkpoint". */
static void test_format_missing(void **state)
{
	struct parts p;
	parts_make(&p, "fmt-src.safetensors", 0, CKPT_F32);
	json_object_del(meta_of(&p), "format");
	parts_fail(&p, "fmt-none.safetensors", "not an attnscope checkpoint (format missing)");
	json_object_set_new(meta_of(&p), "format", json_string("pt"));
	parts_fail(&p, "fmt-pt.safetensors", "not an attnscope checkpoint (format \"pt\")");
	json_object_set_new(meta_of(&p), "format", json_integer(1));
	parts_fail(&p, "fmt-int.safetensors", "\"format\" is not a string");
	json_object_set_new(p.hdr, "__metadata__", json_array());
	parts_fail(&p, "fmt-arr.safetensors", "not an attnscope checkpoint");
	json_object_del(p.hdr, "__metadata__");
	parts_fail(&p, "fmt-nometa.safetensors", "not an attnscope checkpoint");
	parts_free(&p);
}

/* Version "2" fails saying which version this build reads and what to do;
 * a missing version fails too. */
static void test_version_2(void **state)
{
	struct parts p;
	parts_make(&p, "ver-src.safetensors", 0, CKPT_F32);
	json_object_set_new(meta_of(&p), "version", json_string("2"));
	parts_fail(&p, "ver2.safetensors", "unsupported version 2; this build reads version 1");
	parts_fail(&p, "ver2b.safetensors", "re-save it");
	json_object_del(meta_of(&p), "version");
	parts_fail(&p, "ver-none.safetensors", "version missing");
	parts_free(&p);
}

/* The optional metadata is checked too: a training record or tokenizer
 * that is not JSON, or a name that is not a string, fails naming it. */
static void test_bad_optional_metadata(void **state)
{
	struct parts p;
	parts_make(&p, "opt-src.safetensors", 0, CKPT_F32);
	json_object_set_new(meta_of(&p), "training", json_string("{\"steps\":"));
	parts_fail(&p, "opt-train.safetensors", "metadata \"training\" is not valid JSON");
	json_object_set_new(meta_of(&p), "training", json_string("{\"steps\":3}"));
	json_object_set_new(meta_of(&p), "tokenizer", json_string("{\"type\":"));
	parts_fail(&p, "opt-tok.safetensors", "tokenizer");
	json_object_set_new(meta_of(&p), "tokenizer", json_string("{\"type\":\"klingon\"}"));
	parts_fail(&p, "opt-tok2.safetensors", "klingon");
	json_object_del(meta_of(&p), "tokenizer");
	json_object_set_new(meta_of(&p), "name", json_true());
	parts_fail(&p, "opt-name.safetensors", "metadata \"name\" is not a string");
	parts_free(&p);
}

/* A file that does not exist, or a directory, fails with the path. */
static void test_not_a_file(void **state)
{
	char path[256];
	tpath(path, sizeof path, "does-not-exist.safetensors");
	load_fails(path, "No such file");
	load_fails(tmpdir, "not a regular file");
}

/* ------------------------------------------------------------------ saving */

/* Saving into a directory that does not exist fails with "PATH: ..." and
 * creates nothing. */
static void test_save_no_dir(void **state)
{
	struct err e = { "" };
	char path[256];
	tpath(path, sizeof path, "no/such/dir/model.safetensors");
	struct model *m = tiny_model(0, 1);
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), -1);
	check_err(&e, path, "No such file");
	assert_int_equal(access(path, F_OK), -1);
	model_free(m);
}

/* Saving refuses weights the loader would refuse (NaN/Inf) and, for F16,
 * values F16 cannot hold; nothing is written, and F32 still works for the
 * large value. */
static void test_save_rejects_unstorable(void **state)
{
	struct err e = { "" };
	char path[256];
	tpath(path, sizeof path, "unstorable.safetensors");
	struct model *m = tiny_model(0, 1);

	m->p[P_FCW][3] = 1e6f;
	assert_int_equal(checkpoint_save(m, path, CKPT_F16, &e), -1);
	check_err(&e, path, "fcw element 3");
	check_err(&e, path, "F16 range");
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), 0);
	unlink(path);

	m->p[P_LNFW][1] = NAN;
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), -1);
	check_err(&e, path, "tensor lnfw has a non-finite value at element 1");
	assert_int_equal(access(path, F_OK), -1);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_f32),
		cmocka_unit_test(test_roundtrip_f16),
		cmocka_unit_test(test_save_deterministic),
		cmocka_unit_test(test_roundtrip_tokenizer),
		cmocka_unit_test(test_tokenizer_too_big),
		cmocka_unit_test(test_bf16_handwritten),
		cmocka_unit_test(test_config_json_roundtrip),
		cmocka_unit_test(test_config_parse_errors),
		cmocka_unit_test(test_longrope_config_errors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_header_length_past_end),
		cmocka_unit_test(test_header_not_json),
		cmocka_unit_test(test_header_not_object),
		cmocka_unit_test(test_unknown_dtype),
		cmocka_unit_test(test_shape_mismatch),
		cmocka_unit_test(test_offsets_out_of_range),
		cmocka_unit_test(test_overlapping_offsets),
		cmocka_unit_test(test_missing_tensor),
		cmocka_unit_test(test_unexpected_tensor),
		cmocka_unit_test(test_nan_weight),
		cmocka_unit_test(test_inf_weight),
		cmocka_unit_test(test_absurd_config),
		cmocka_unit_test(test_format_missing),
		cmocka_unit_test(test_version_2),
		cmocka_unit_test(test_bad_optional_metadata),
		cmocka_unit_test(test_not_a_file),
		cmocka_unit_test(test_save_no_dir),
		cmocka_unit_test(test_save_rejects_unstorable),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
