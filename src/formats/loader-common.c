/*
 * loader-common.c — what the model loaders share (loaders.h): paths, reads
 * that name what went wrong, float tensors in F32, F16 or BF16, filling a new
 * model from a file, and finding a GPT-2 tokenizer.  Below the format
 * table (loader.c) and every format (loader-*.c, checkpoint.c): it calls
 * none of them.
 */
#define _GNU_SOURCE
#include "loaders.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tok-hfjson.h"
#include "tokenizer.h"

bool ld_is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool ld_is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

char *ld_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = xmalloc(n);
	snprintf(s, n, "%s/%s", dir, name);
	return s;
}

char *ld_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

char *ld_basename(const char *path, const char *suffix)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *base = path;
	for (size_t i = 0; i < n; i++)
		if (path[i] == '/' && i + 1 < n)
			base = path + i + 1;
	size_t len = (size_t)(path + n - base), s = suffix ? strlen(suffix) : 0;
	if (s && len > s && strncmp(base + len - s, suffix, s) == 0)
		len -= s;
	return xstrndup(base, len);
}

int ld_pread(int fd, void *buf, size_t n, off_t off, struct err *e)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_set(e, "read failed: %s", strerror(errno));
		}
		if (r == 0)
			return err_set(e, "unexpected end of file (truncated?)");
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

/* Elements converted per read when a tensor is 16-bit. */
#define CHUNK 16384

/* The index of the first element of x[0..n) that is NaN or +-Inf, or n.
 * Each block is tested on its exponent bits with integer operations the
 * compiler vectorises (a per-element isfinite() branch ran at a fraction
 * of the read's speed); only a block that holds one is looked through. */
static size_t first_nonfinite(const float *x, size_t n)
{
	enum { BLOCK = 1024 };
	for (size_t i = 0; i < n; i += BLOCK) {
		size_t k = n - i < BLOCK ? n - i : BLOCK;
		uint32_t bad = 0;
		for (size_t j = 0; j < k; j++) {
			uint32_t u;
			memcpy(&u, x + i + j, sizeof u);
			bad |= (u & 0x7f800000u) == 0x7f800000u;
		}
		for (size_t j = 0; bad && j < k; j++)
			if (!isfinite(x[i + j]))
				return i + j;
	}
	return n;
}

int ld_read_floats_from(int fd, off_t off, float *dst, size_t n, enum dtype dt,
			const char *name, uint64_t first, struct err *e)
{
	if (dt == DTYPE_F32) { /* little-endian hosts: the bytes are the floats */
		if (ld_pread(fd, dst, n * sizeof(float), off, e))
			return -1;
	} else {
		unsigned char buf[CHUNK * 2];
		size_t es = dtype_size(dt);
		for (size_t i = 0; i < n; i += CHUNK) {
			size_t k = n - i < CHUNK ? n - i : CHUNK;
			if (ld_pread(fd, buf, k * es, off + (off_t)(i * es), e))
				return -1;
			dtype_to_f32(dst + i, buf, k, dt);
		}
	}
	size_t bad = first_nonfinite(dst, n);
	if (bad < n)
		return err_set(e, "tensor %s has a non-finite value at element %llu", name,
			       (unsigned long long)(first + bad));
	return 0;
}

int ld_read_stored(int fd, off_t off, void *dst, size_t n, enum dtype dt, const char *name,
		   struct err *e)
{
	size_t es = dtype_size(dt);
	if (ld_pread(fd, dst, n * es, off, e))
		return -1;
	if (dt == DTYPE_F32) {
		size_t bad = first_nonfinite(dst, n);
		return bad < n ? err_set(e, "tensor %s has a non-finite value at element %zu", name, bad)
			       : 0;
	}
	/* a 16-bit value is NaN or Inf when its exponent bits are all set */
	uint16_t mask = dt == DTYPE_F16 ? 0x7c00 : 0x7f80;
	const uint16_t *h = dst;
	for (size_t i = 0; i < n; i++)
		if ((h[i] & mask) == mask)
			return err_set(e, "tensor %s has a non-finite value at element %zu", name, i);
	return 0;
}

int ld_read_floats(int fd, off_t off, float *dst, size_t n, enum dtype dt, const char *name,
		   struct err *e)
{
	return ld_read_floats_from(fd, off, dst, n, dt, name, 0, e);
}

bool ld_read_ints(const char *path, int32_t *h, int n, off_t *size)
{
	int fd = open_regular(path, NULL);
	struct stat st;
	bool ok = false;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		*size = st.st_size;
		ok = pread(fd, h, (size_t)n * 4, 0) == (ssize_t)n * 4;
	}
	close(fd);
	return ok;
}

struct model *ld_load_model(const char *path, const struct model_config *cfg,
			    struct tokenizer *tok, const char *suffix, ld_read_fn read,
			    const void *ctx, struct err *e)
{
	struct model *m = model_new(cfg, e);
	int fd = -1;

	if (!m) {
		err_prefix(e, "%s", path);
		goto fail;
	}
	fd = open_regular(path, e);
	if (fd < 0) {
		err_prefix(e, "%s", path);
		goto fail;
	}
	if (read(fd, m, ctx, e)) {
		err_prefix(e, "%s", path);
		goto fail;
	}
	close(fd);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = ld_basename(path, suffix);
	return m;
fail:
	if (fd >= 0)
		close(fd);
	tok_free(tok);
	model_free(m);
	return NULL;
}

void ld_one_line(struct err *e)
{
	if (!e)
		return;
	for (unsigned char *p = (unsigned char *)e->msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

struct tokenizer *ld_gpt2_tokenizer(const char *opt, const char *dir, struct err *e)
{
	/* --tokenizer DIR/vocab.json or DIR/merges.txt names the pair in DIR */
	char *pair_dir = NULL;
	if (opt && ld_is_file(opt)) {
		char *base = ld_basename(opt, NULL);
		if (!strcmp(base, "vocab.json") || !strcmp(base, "merges.txt"))
			pair_dir = ld_dirname(opt);
		free(base);
	}
	struct tokenizer *t = NULL;
	const char *where = pair_dir ? pair_dir : opt ? opt : dir;
	char *v = ld_join(where, "vocab.json"), *j = ld_join(where, "tokenizer.json");
	bool here = ld_is_file(where) || ld_is_file(v) || ld_is_file(j);
	free(v);
	free(j);
	if (!here) {
		if (opt)
			err_set(e, "--tokenizer %s: no GPT-2 tokenizer there (vocab.json and "
				"merges.txt, or tokenizer.json)", opt);
		else
			err_set(e, "no GPT-2 tokenizer beside the model (vocab.json and merges.txt, "
				"or tokenizer.json, in %s); give one with --tokenizer DIR", dir);
	} else {
		t = tok_bpe_load(where, e);
	}
	free(pair_dir);
	return t;
}

/* The tokenizer beside the model: tokenizer.json (tok-hfjson.c), else
 * GPT-2's vocab.json + merges.txt.  --tokenizer names another directory,
 * tokenizer.json file or vocab.json/merges.txt pair. */
struct tokenizer *ld_hf_tokenizer(const char *opt, const char *dir, struct err *e)
{
	char *tj = NULL;
	if (opt && ld_is_file(opt)) {
		char *base = ld_basename(opt, NULL);
		if (strcmp(base, "vocab.json") && strcmp(base, "merges.txt"))
			tj = xstrdup(opt);
		free(base);
	} else {
		tj = ld_join(opt ? opt : dir, "tokenizer.json");
		if (!ld_is_file(tj)) {
			free(tj);
			tj = NULL;
		}
	}
	if (!tj)
		return ld_gpt2_tokenizer(opt, dir, e);
	struct tokenizer *t = tok_hfjson_load(tj, e);
	free(tj);
	return t;
}

int ld_tokenizer_fits(const struct tokenizer *tok, int vocab_size, struct err *e)
{
	if (tok->vocab_size > vocab_size)
		return err_set(e, "the tokenizer has %d tokens but config.json's vocab_size is %d",
			       tok->vocab_size, vocab_size);
	return 0;
}

int ld_hf_rope_shape(json_t *o, struct model_config *c, struct err *e)
{
	if (ld_hf_shape(o, c, e) || LD_HF_INT(o, "num_key_value_heads", 0, &c->n_kv_head, e) < 0)
		return -1;
	if (c->n_layer > CFG_MAX_LAYERS)
		return err_set(e, "config.json: num_hidden_layers %d is more than %d", c->n_layer,
			       CFG_MAX_LAYERS);
	if (c->context > CFG_MAX_CONTEXT)
		c->context = CFG_MAX_CONTEXT;
	return 0;
}

int ld_hf_head_dim(json_t *o, struct model_config *c, int def, struct err *e)
{
	int hd = def;
	if (LD_HF_INT(o, "head_dim", 0, &hd, e) < 0)
		return -1;
	if (hd > CFG_MAX_HEAD_DIM)
		return err_set(e, "config.json: head_dim %d is more than %d", hd, CFG_MAX_HEAD_DIM);
	if (hd && (c->n_head < 1 || (int64_t)hd * c->n_head != c->d_model)) /* 64 bits: both may be 2^30 */
		c->head_dim = hd;
	return 0;
}

int ld_hf_shape(json_t *o, struct model_config *c, struct err *e)
{
	config_default(c);
	if (LD_HF_INT(o, "num_hidden_layers", JU_REQUIRED, &c->n_layer, e) < 0 ||
	    LD_HF_INT(o, "num_attention_heads", JU_REQUIRED, &c->n_head, e) < 0 ||
	    LD_HF_INT(o, "hidden_size", JU_REQUIRED, &c->d_model, e) < 0 ||
	    LD_HF_INT(o, "intermediate_size", JU_REQUIRED, &c->d_ff, e) < 0 ||
	    LD_HF_INT(o, "vocab_size", JU_REQUIRED, &c->vocab_size, e) < 0 ||
	    LD_HF_INT(o, "max_position_embeddings", JU_REQUIRED, &c->context, e) < 0)
		return -1;
	c->n_kv_head = c->n_head;
	return 0;
}
