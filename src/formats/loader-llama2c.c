/*
 * loader-llama2c.c — llama2.c checkpoints ("llama2c"), the legacy format
 * that llama2.c's run.c reads (its export.py --version 0, and the published
 * TinyStories stories*.bin files).
 *
 * Header: 7 int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size (negative: the classifier is not shared with the embedding),
 * seq_len.  Then float32 weights in run.c's order, each (out, in):
 *   token_embedding_table (V, dim)
 *   rms_att_weight (L, dim)
 *   wq (L, H*hs, dim)   wk (L, K*hs, dim)   wv (L, K*hs, dim)
 *   wo (L, dim, H*hs)
 *   rms_ffn_weight (L, dim)
 *   w1 (L, hidden, dim)  w2 (L, dim, hidden)  w3 (L, hidden, dim)
 *   rms_final_weight (dim)
 *   freq_cis_real, freq_cis_imag (seq_len * hs / 2 each; skipped: RoPE is
 *   computed, with run.c's convention, pairs (2i, 2i+1) at t * 10000^(-2i/hs))
 *   wcls (V, dim) when untied
 * Files written without the two freq_cis tables are accepted too (their
 * size says so).  Mapping: wq | wk | wv -> qkvw rows, wo -> attprojw,
 * w1 (gate) | w3 (up) -> fcw rows [0, F) | [F, 2F), w2 -> fcprojw,
 * rms_att -> ln1w, rms_ffn -> ln2w, rms_final -> lnfw, wcls -> lmhead.
 * Config: RMSNorm eps 1e-5, pre-norm, RoPE theta 10000, SwiGLU, no biases,
 * n_kv_head native (GQA: query head h reads K/V head h / (H / K)).
 * The magic-numbered export versions 1 and 2 ("ak42") are refused by name.
 *
 * Tokenizer: --tokenizer (tokenizer.bin, or a directory holding one), else
 * tokenizer.bin beside the model, else tok<V>.bin beside it (llama2.c's name
 * for custom vocabularies); it must have exactly V pieces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "loaders.h"

#define AK42_MAGIC 0x616b3432

/* Why a header is not a llama2.c one, or NULL when plausible. */
static const char *implausible(const int32_t h[7], char *buf, size_t n)
{
	int dim = h[0], hid = h[1], L = h[2], H = h[3], K = h[4], V = h[5], S = h[6];
	if (dim <= 0 || dim > CFG_MAX_DMODEL)
		snprintf(buf, n, "dim %d out of range", dim);
	else if (hid <= 0 || hid > CFG_MAX_DFF)
		snprintf(buf, n, "hidden_dim %d out of range", hid);
	else if (L <= 0 || L > CFG_MAX_LAYERS)
		snprintf(buf, n, "n_layers %d out of range", L);
	else if (H <= 0 || H > CFG_MAX_HEADS || dim % H)
		snprintf(buf, n, "n_heads %d does not divide dim %d", H, dim);
	else if (K <= 0 || K > H || H % K)
		snprintf(buf, n, "n_kv_heads %d does not divide n_heads %d", K, H);
	else if (V == 0 || V < -CFG_MAX_VOCAB || V > CFG_MAX_VOCAB)
		snprintf(buf, n, "vocab_size %d out of range", V);
	else if (S <= 0 || S > CFG_MAX_CONTEXT)
		snprintf(buf, n, "seq_len %d out of range", S);
	else
		return NULL;
	return buf;
}

static bool probe_llama2c(const char *path, char *why, size_t n)
{
	int32_t h[7];
	off_t size;
	char buf[96];
	if (!ld_read_ints(path, h, 7, &size)) {
		snprintf(why, n, "not a file of 28+ bytes");
		return false;
	}
	if ((uint32_t)h[0] == AK42_MAGIC)
		return true;
	const char *bad = implausible(h, buf, sizeof buf);
	if (bad)
		snprintf(why, n, "%s", bad);
	return !bad;
}

/* The config a plausible header describes: run.c's model. */
static void header_config(const int32_t h[7], struct model_config *c)
{
	config_default(c);
	c->d_model = h[0];
	c->d_ff = h[1];
	c->n_layer = h[2];
	c->n_head = h[3];
	c->n_kv_head = h[4];
	c->vocab_size = h[5] > 0 ? h[5] : -h[5];
	c->context = h[6];
	c->norm = NORM_RMS;
	c->norm_eps = 1e-5f;
	c->placement = PLACE_PRE;
	c->pos = POS_ROPE;
	c->rope_theta = 10000.0f;
	c->mlp = MLP_SWIGLU;
	c->bias = false;
	c->tied = h[5] > 0;
}

static int describe_llama2c(const char *path, struct model_config *c, struct err *e)
{
	int32_t h[7];
	off_t size;
	char buf[96];
	if (!ld_read_ints(path, h, 7, &size))
		return err_set(e, "%s: cannot read a llama2.c header", path);
	const char *bad = (uint32_t)h[0] == AK42_MAGIC ? "export version 2 (\"ak42\")"
						       : implausible(h, buf, sizeof buf);
	if (bad)
		return err_set(e, "%s: not a llama2.c checkpoint this build reads: %s", path, bad);
	header_config(h, c);
	if (config_validate(c, e))
		return err_prefix(e, "%s: header", path);
	return 0;
}

/* The tokenizer: --tokenizer, else beside the model. */
static struct tokenizer *find_tokenizer(const char *opt, const char *dir, int V, struct err *e)
{
	char name[32], *p = NULL;
	struct tokenizer *t;
	if (opt) {
		p = ld_is_dir(opt) ? ld_join(opt, "tokenizer.bin") : xstrdup(opt);
		if (!ld_is_file(p)) {
			err_set(e, "--tokenizer %s: no tokenizer.bin there", opt);
			free(p);
			return NULL;
		}
	} else {
		p = ld_join(dir, "tokenizer.bin");
		if (!ld_is_file(p)) {
			free(p);
			snprintf(name, sizeof name, "tok%d.bin", V);
			p = ld_join(dir, name);
			if (!ld_is_file(p)) {
				err_set(e, "no tokenizer.bin (or %s) beside the model in %s; give one "
					"with --tokenizer FILE", name, dir);
				free(p);
				return NULL;
			}
		}
	}
	t = tok_llama2c_load(p, V, e);
	free(p);
	return t;
}

/* Copies rows of one per-layer matrix from the file. */
static int read_layers(int fd, off_t *off, float *dst, size_t dst_stride, size_t per_layer,
		       int L, const char *name, struct err *e)
{
	for (int l = 0; l < L; l++) {
		if (ld_read_floats(fd, *off, dst + (size_t)l * dst_stride, per_layer, DTYPE_F32,
				   name, e))
			return -1;
		*off += (off_t)(per_layer * 4);
	}
	return 0;
}

/* What read_weights needs of the header. */
struct l2c_shape {
	size_t C, F, D;		/* dim, hidden_dim, head size */
	int L, H, K, V;
	bool tied, has_freq;
	unsigned long long freq;	/* floats of the two freq_cis tables */
};

/* run.c's order into our layout (the mapping above). */
static int read_weights(int fd, struct model *m, const void *ctx, struct err *e)
{
	const struct l2c_shape *s = ctx;
	size_t C = s->C, F = s->F, D = s->D, V = (size_t)s->V;
	int L = s->L, H = s->H, K = s->K;
	size_t qkv = (size_t)(H + 2 * K) * D; /* rows of one layer's fused qkvw */
	off_t off = 28;
	int rc = ld_read_floats(fd, off, m->p[P_WTE], V * C, DTYPE_F32,
				"token_embedding_table", e);
	off += (off_t)(V * C * 4);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_LN1W], C, C, L, "rms_att_weight", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_QKVW], qkv * C, (size_t)H * D * C, L, "wq", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_QKVW] + (size_t)H * D * C, qkv * C,
				   (size_t)K * D * C, L, "wk", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_QKVW] + (size_t)(H + K) * D * C, qkv * C,
				   (size_t)K * D * C, L, "wv", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_ATTPROJW], C * C, C * C, L, "wo", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_LN2W], C, C, L, "rms_ffn_weight", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_FCW], 2 * F * C, F * C, L, "w1", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_FCPROJW], C * F, C * F, L, "w2", e);
	rc = rc ? rc : read_layers(fd, &off, m->p[P_FCW] + F * C, 2 * F * C, F * C, L, "w3", e);
	rc = rc ? rc : ld_read_floats(fd, off, m->p[P_LNFW], C, DTYPE_F32,
					      "rms_final_weight", e);
	off += (off_t)(C * 4);
	if (s->has_freq)
		off += (off_t)(s->freq * 4);
	if (!rc && !s->tied)
		rc = ld_read_floats(fd, off, m->p[P_LMHEAD], V * C, DTYPE_F32, "wcls", e);
	return rc;
}

static struct model *load_llama2c(const char *path, const struct load_opts *o, struct err *e)
{
	int32_t h[7];
	off_t size = 0;
	char buf[96];
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	char *dir = ld_dirname(path);

	if (!ld_read_ints(path, h, 7, &size)) {
		err_set(e, "%s: cannot read a llama2.c header", path);
		goto fail;
	}
	if ((uint32_t)h[0] == AK42_MAGIC) {
		err_set(e, "%s: llama2.c export version %d (magic \"ak42\") is not supported; "
			"export with --version 0 (the legacy format run.c reads)", path, h[1]);
		goto fail;
	}
	const char *bad = implausible(h, buf, sizeof buf);
	if (bad) {
		err_set(e, "%s: not a llama2.c checkpoint: %s", path, bad);
		goto fail;
	}
	int dim = h[0], hid = h[1], L = h[2], H = h[3], K = h[4], S = h[6];
	bool tied = h[5] > 0;
	int V = tied ? h[5] : -h[5];
	int hs = dim / H;
	struct model_config cfg;
	header_config(h, &cfg);
	if (config_validate(&cfg, e) != 0) {
		err_prefix(e, "%s: header", path);
		goto fail;
	}
	unsigned long long freq = 2ull * (unsigned long long)S * (unsigned long long)(hs / 2);
	unsigned long long np = config_param_count(&cfg);
	unsigned long long with = 28 + 4 * (np + freq), without = 28 + 4 * np;
	bool has_freq = (unsigned long long)size == with;
	if (!has_freq && (unsigned long long)size != without) {
		err_set(e, "%s: %lld bytes, but its header (dim %d, hidden %d, %d layers, %d heads, "
			"%d kv heads, vocab %d%s, seq_len %d) implies %llu: %s", path,
			(long long)size, dim, hid, L, H, K, V, tied ? "" : " untied", S, with,
			(unsigned long long)size < with ? "truncated?" : "trailing data");
		goto fail;
	}
	tok = find_tokenizer(o->tokenizer, dir, V, e);
	if (!tok) {
		err_prefix(e, "%s", path);
		goto fail;
	}
	struct l2c_shape shape = {
		(size_t)dim, (size_t)hid, (size_t)hs, L, H, K, V, tied, has_freq, freq,
	};
	m = ld_load_model(path, &cfg, tok, ".bin", read_weights, &shape, e);
	free(dir);
	return m;
fail:
	tok_free(tok);
	free(dir);
	return NULL;
}

const struct model_format format_llama2c = {
	"llama2c", "llama2.c checkpoint", probe_llama2c, load_llama2c,
	describe_llama2c, NULL, NULL,
};
