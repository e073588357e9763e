/*
 * gguf.c — the GGUF container (gguf.h): the header, the metadata, the
 * tensor directory, and reading strings, arrays and tensors back from the
 * file, each checked against the file's size before anything is allocated
 * for it.  Dequantization is quant.c's (engine).
 *
 * The header is read through a small buffered cursor over pread(); keys
 * and scalar values are kept, strings and arrays are passed over (their
 * offsets kept) and read again only when asked for, so that what is held
 * in memory is the keys and the tensor directory, whatever a file claims.
 */
#define _GNU_SOURCE
#include "gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"

/* Whether s[0..n) is valid UTF-8. */
static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int bad = 0;
		i += (size_t)utf8_decode(p + i, n - i, &cp, &bad);
		if (bad)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ the cursor */

#define BUF 8192

struct cur {
	int fd;
	uint64_t size, pos;	/* file size, next byte */
	uint64_t boff;		/* file offset of buf[0] */
	size_t blen;
	unsigned char buf[BUF];
};

/* Bytes left after the cursor. */
static uint64_t left(const struct cur *c)
{
	return c->size - c->pos;
}

/* Reads n bytes at the cursor into dst (NULL: skips them).  0, or -1 + e
 * naming what (for "the file ends inside WHAT"). */
static int take(struct cur *c, void *dst, uint64_t n, const char *what, struct err *e)
{
	if (n > left(c))
		return err_set(e, "the file ends inside %s (truncated?)", what);
	unsigned char *d = dst;
	while (n > 0) {
		if (c->pos < c->boff || c->pos >= c->boff + c->blen) {
			if (!d && n > BUF) { /* a long skip needs no reading */
				c->pos += n;
				return 0;
			}
			ssize_t r;
			do
				r = pread(c->fd, c->buf, BUF, (off_t)c->pos);
			while (r < 0 && errno == EINTR);
			if (r <= 0)
				return err_set(e, r < 0 ? "read failed: %s" : "the file ends inside %s "
					       "(truncated?)", r < 0 ? strerror(errno) : what);
			c->boff = c->pos;
			c->blen = (size_t)r;
		}
		uint64_t have = c->boff + c->blen - c->pos, k = have < n ? have : n;
		if (d) {
			memcpy(d, c->buf + (c->pos - c->boff), (size_t)k);
			d += k;
		}
		c->pos += k;
		n -= k;
	}
	return 0;
}

static int take_u32(struct cur *c, uint32_t *v, const char *what, struct err *e)
{
	unsigned char b[4];
	if (take(c, b, 4, what, e))
		return -1;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int take_u64(struct cur *c, uint64_t *v, const char *what, struct err *e)
{
	unsigned char b[8];
	if (take(c, b, 8, what, e))
		return -1;
	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = *v << 8 | b[i];
	return 0;
}

/* A string of at most max bytes, valid UTF-8 and without NUL, into a
 * malloc'd copy (*out). */
static int take_name(struct cur *c, uint64_t max, char **out, const char *what, struct err *e)
{
	uint64_t n;
	if (take_u64(c, &n, what, e))
		return -1;
	if (n == 0)
		return err_set(e, "%s is empty", what);
	if (n > max)
		return err_set(e, "%s is %" PRIu64 " bytes long, more than %" PRIu64, what, n, max);
	if (n > left(c))
		return err_set(e, "the file ends inside %s (truncated?)", what);
	char *s = xmalloc((size_t)n + 1);
	if (take(c, s, n, what, e)) {
		free(s);
		return -1;
	}
	s[n] = '\0';
	if (memchr(s, '\0', (size_t)n) || !utf8_valid(s, (size_t)n)) {
		free(s);
		return err_set(e, "%s is not valid UTF-8 text", what);
	}
	for (uint64_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			free(s);
			return err_set(e, "%s holds a control character", what);
		}
	*out = s;
	return 0;
}

/* --------------------------------------------------------------- values */

static const size_t vsize[GGUF_N_VTYPES] = {
	[GGUF_U8] = 1, [GGUF_I8] = 1, [GGUF_U16] = 2, [GGUF_I16] = 2, [GGUF_U32] = 4,
	[GGUF_I32] = 4, [GGUF_F32] = 4, [GGUF_BOOL] = 1, [GGUF_U64] = 8, [GGUF_I64] = 8,
	[GGUF_F64] = 8,
};

static const char *const vname[GGUF_N_VTYPES] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64",
	"i64", "f64",
};

/* A scalar of fixed size from bytes b into kv->v. */
static void scalar(struct gguf_kv *kv, const unsigned char *b)
{
	uint64_t u = 0;
	size_t n = vsize[kv->type];
	for (size_t i = n; i-- > 0;)
		u = u << 8 | b[i];
	float f;
	uint32_t u32 = (uint32_t)u;
	switch (kv->type) {
	case GGUF_I8: kv->v.i = (int8_t)u; break;
	case GGUF_I16: kv->v.i = (int16_t)u; break;
	case GGUF_I32: kv->v.i = (int32_t)u32; break;
	case GGUF_I64: memcpy(&kv->v.i, &u, 8); break;
	case GGUF_F32: memcpy(&f, &u32, 4); kv->v.f = f; break;
	case GGUF_F64: memcpy(&kv->v.f, &u, 8); break;
	default: kv->v.u = u; break;
	}
}

/* Passes over n strings, checking each fits. */
static int skip_strings(struct cur *c, uint64_t n, const char *what, struct err *e)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t len;
		if (take_u64(c, &len, what, e) || take(c, NULL, len, what, e))
			return -1;
	}
	return 0;
}

/* The value of kv (its type read) at the cursor. */
static int take_value(struct cur *c, struct gguf_kv *kv, const char *what, struct err *e)
{
	uint32_t t;
	if (kv->type == GGUF_STRING) {
		if (take_u64(c, &kv->n, what, e))
			return -1;
		kv->off = c->pos;
		return take(c, NULL, kv->n, what, e);
	}
	if (kv->type == GGUF_ARRAY) {
		if (take_u32(c, &t, what, e) || take_u64(c, &kv->n, what, e))
			return -1;
		if (t >= GGUF_N_VTYPES || t == GGUF_ARRAY)
			return err_set(e, "%s is an array of %s, which GGUF does not define", what,
				       t == GGUF_ARRAY ? "arrays" : "an unknown type");
		kv->arr_type = t;
		kv->off = c->pos;
		if (t == GGUF_STRING) {
			if (kv->n > left(c) / 8)
				return err_set(e, "%s claims %" PRIu64 " strings, more than the file "
					       "holds", what, kv->n);
			return skip_strings(c, kv->n, what, e);
		}
		if (kv->n > left(c) / vsize[t])
			return err_set(e, "%s claims %" PRIu64 " elements, more than the file holds",
				       what, kv->n);
		return take(c, NULL, kv->n * vsize[t], what, e);
	}
	unsigned char b[8];
	kv->off = c->pos;
	if (take(c, b, vsize[kv->type], what, e))
		return -1;
	scalar(kv, b);
	return 0;
}

static int read_kvs(struct cur *c, struct gguf_file *f, uint64_t n, struct err *e)
{
	f->kv = xcalloc((size_t)n ? (size_t)n : 1, sizeof *f->kv);
	for (uint64_t i = 0; i < n; i++) {
		struct gguf_kv *kv = &f->kv[i];
		char what[GGUF_MAX_NAME + 96];
		uint32_t t;
		snprintf(what, sizeof what, "key %" PRIu64, i);
		if (take_name(c, GGUF_MAX_KEY, &kv->key, what, e))
			return -1;
		f->n_kv = (int)i + 1;
		snprintf(what, sizeof what, "the value of \"%.*s\"", GGUF_MAX_NAME, kv->key);
		for (uint64_t j = 0; j < i; j++)
			if (!strcmp(f->kv[j].key, kv->key))
				return err_set(e, "key \"%.*s\" is given twice", GGUF_MAX_NAME, kv->key);
		if (take_u32(c, &t, what, e))
			return -1;
		if (t >= GGUF_N_VTYPES)
			return err_set(e, "%s has type %u, which GGUF does not define", what, t);
		kv->type = t;
		if (take_value(c, kv, what, e))
			return -1;
	}
	return 0;
}

/* --------------------------------------------------------------- tensors */

/* Which types attnscope reads, for messages. */
#define READ_TYPES "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K"

/* The element count and bytes of t from its shape and type. */
static int tensor_size(struct gguf_tensor *t, struct err *e)
{
	const char *tn = ggml_type_name(t->type);
	size_t bv = ggml_block_values(t->type), bb = ggml_block_bytes(t->type);
	if (!tn)
		return err_set(e, "tensor %s has ggml type %u, which attnscope does not know", t->name,
			       t->type);
	if (!bv)
		return err_set(e, "tensor %s has type %s, which attnscope does not read (" READ_TYPES
			       ")", t->name, tn);
	uint64_t n = 1;
	for (int d = 0; d < t->ndim; d++) {
		if (t->ne[d] && n > UINT64_MAX / 16 / t->ne[d])
			return err_set(e, "tensor %s has more elements than can be counted", t->name);
		n *= t->ne[d];
	}
	if (t->ne[0] % bv)
		return err_set(e, "tensor %s has rows of %" PRIu64 " values, not a whole number of "
			       "%s blocks (%zu values)", t->name, t->ne[0], tn, bv);
	t->n = n;
	t->bytes = n / bv * bb;
	return 0;
}

static int read_tensor_info(struct cur *c, struct gguf_file *f, uint64_t i, struct err *e)
{
	struct gguf_tensor *t = &f->t[i];
	char what[GGUF_MAX_NAME + 64], *name;
	uint32_t nd;
	snprintf(what, sizeof what, "the name of tensor %" PRIu64, i);
	if (take_name(c, GGUF_MAX_NAME, &name, what, e))
		return -1;
	memcpy(t->name, name, strlen(name) + 1);
	free(name);
	f->n_t = (int)i + 1;
	for (uint64_t j = 0; j < i; j++)
		if (!strcmp(f->t[j].name, t->name))
			return err_set(e, "tensor %s is listed twice", t->name);
	snprintf(what, sizeof what, "the entry of tensor %s", t->name);
	if (take_u32(c, &nd, what, e))
		return -1;
	if (nd < 1 || nd > GGUF_MAX_DIMS)
		return err_set(e, "tensor %s has %u dimensions (1 to %d)", t->name, nd, GGUF_MAX_DIMS);
	t->ndim = (int)nd;
	for (int d = 0; d < GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	for (uint32_t d = 0; d < nd; d++)
		if (take_u64(c, &t->ne[d], what, e))
			return -1;
	uint64_t off;
	if (take_u32(c, &t->type, what, e) || take_u64(c, &off, what, e))
		return -1;
	if (tensor_size(t, e))
		return -1;
	t->off = off; /* relative until the data offset is known */
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct gguf_tensor *x = *(const struct gguf_tensor *const *)a;
	const struct gguf_tensor *y = *(const struct gguf_tensor *const *)b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Refuses two tensors whose bytes overlap: what the tensors hold is then
 * at most the file, which bounds what a model may be allocated for them. */
static int no_overlap(const struct gguf_file *f, struct err *e)
{
	const struct gguf_tensor **s = xmalloc(((size_t)f->n_t + 1) * sizeof *s);
	int rc = 0;
	for (int i = 0; i < f->n_t; i++)
		s[i] = &f->t[i];
	qsort(s, (size_t)f->n_t, sizeof *s, by_offset);
	for (int i = 1; i < f->n_t && !rc; i++)
		if (s[i - 1]->off + s[i - 1]->bytes > s[i]->off)
			rc = err_set(e, "tensors %s and %s overlap in the file", s[i - 1]->name, s[i]->name);
	free(s);
	return rc;
}

/* Places each tensor's data after the header and checks it lies within
 * the file and apart from the others. */
static int place_tensors(struct gguf_file *f, uint64_t header_end, struct err *e)
{
	uint64_t a = f->alignment;
	f->data_off = (header_end + a - 1) / a * a;
	if (f->n_t > 0 && f->data_off > f->size)
		return err_set(e, "the file ends before its tensor data (truncated?)");
	for (int i = 0; i < f->n_t; i++) {
		struct gguf_tensor *t = &f->t[i];
		if (t->off % a)
			return err_set(e, "tensor %s: its offset %" PRIu64 " is not a multiple of the "
				       "alignment (%" PRIu64 ")", t->name, t->off, a);
		uint64_t room = f->size - f->data_off;
		if (t->off > room || t->bytes > room - t->off)
			return err_set(e, "tensor %s: its %" PRIu64 " bytes at offset %" PRIu64 " run "
				       "past the end of the file (%" PRIu64 " bytes of data)", t->name,
				       t->bytes, t->off, room);
		t->off += f->data_off;
	}
	return no_overlap(f, e);
}

/* general.alignment: a u32 power of two, 32 when absent. */
static int alignment(struct gguf_file *f, struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, "general.alignment");
	f->alignment = 32;
	if (!kv)
		return 0;
	if (kv->type != GGUF_U32)
		return err_set(e, "general.alignment is a %s, not a u32", vname[kv->type]);
	if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) || kv->v.u > (1u << 30))
		return err_set(e, "general.alignment %" PRIu64 " is not a power of two (up to 2^30)",
			       kv->v.u);
	f->alignment = (uint32_t)kv->v.u;
	return 0;
}

/* ------------------------------------------------------------- the file */

static int read_header(struct cur *c, struct gguf_file *f, struct err *e)
{
	unsigned char magic[4];
	uint64_t nt, nkv;
	if (take(c, magic, 4, "the magic", e))
		return -1;
	if (memcmp(magic, "GGUF", 4))
		return err_set(e, "not a GGUF file (it does not start with \"GGUF\")");
	if (take_u32(c, &f->version, "the header", e))
		return -1;
	if (f->version && !(f->version & 0xffff))
		return err_set(e, "a big-endian GGUF file (version %u byte-swapped), which attnscope "
			       "does not read", f->version >> 24);
	if (f->version == 1)
		return err_set(e, "GGUF version 1 is not supported (2 and 3 are): convert the model "
			       "again with a current llama.cpp");
	if (f->version != 2 && f->version != 3)
		return err_set(e, "GGUF version %u is not supported (2 and 3 are)", f->version);
	if (take_u64(c, &nt, "the header", e) || take_u64(c, &nkv, "the header", e))
		return -1;
	/* the smallest entries: a 1-byte key, type, a 1-byte value; a 1-byte
	 * name, 1 dim, its size, type and offset */
	if (nkv > GGUF_MAX_KV || nkv > left(c) / 14)
		return err_set(e, "the header claims %" PRIu64 " keys, more than %s", nkv,
			       nkv > GGUF_MAX_KV ? "attnscope reads (65536)" : "the file holds");
	if (nt > GGUF_MAX_TENSORS || nt > left(c) / 33)
		return err_set(e, "the header claims %" PRIu64 " tensors, more than %s", nt,
			       nt > GGUF_MAX_TENSORS ? "attnscope reads (65536)" : "the file holds");
	if (read_kvs(c, f, nkv, e) || alignment(f, e))
		return -1;
	f->t = xcalloc((size_t)nt ? (size_t)nt : 1, sizeof *f->t);
	for (uint64_t i = 0; i < nt; i++)
		if (read_tensor_info(c, f, i, e))
			return -1;
	return place_tensors(f, c->pos, e);
}

int gguf_open(struct gguf_file *f, const char *path, struct err *e)
{
	memset(f, 0, sizeof *f);
	f->fd = open_regular(path, e);
	if (f->fd < 0)
		return -1;
	struct stat st;
	if (fstat(f->fd, &st) != 0) {
		err_set(e, "%s", strerror(errno));
		gguf_close(f);
		return -1;
	}
	f->size = (uint64_t)st.st_size;
	struct cur *c = xmalloc(sizeof *c);
	c->fd = f->fd;
	c->size = f->size;
	c->pos = c->boff = 0;
	c->blen = 0;
	int rc = read_header(c, f, e);
	free(c);
	if (rc)
		gguf_close(f);
	return rc;
}

void gguf_close(struct gguf_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	for (int i = 0; f->kv && i < f->n_kv; i++)
		free(f->kv[i].key);
	free(f->kv);
	free(f->t);
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

bool gguf_probe(const char *path)
{
	int fd = open_regular(path, NULL);
	unsigned char b[4];
	bool ok = fd >= 0 && pread(fd, b, 4, 0) == 4 && !memcmp(b, "GGUF", 4);
	if (fd >= 0)
		close(fd);
	return ok;
}

const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key)
{
	for (int i = 0; i < f->n_kv; i++)
		if (!strcmp(f->kv[i].key, key))
			return &f->kv[i];
	return NULL;
}

struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name)
{
	for (int i = 0; i < f->n_t; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

void gguf_shape_str(const struct gguf_tensor *t, char *buf, size_t size)
{
	size_t k = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < t->ndim && k < size; d++)
		k += (size_t)snprintf(buf + k, size - k, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
}

/* ------------------------------------------------------------- getters */

static bool is_int(enum gguf_vtype t)
{
	return t <= GGUF_I32 || t == GGUF_U64 || t == GGUF_I64;
}

static bool is_signed(enum gguf_vtype t)
{
	return t == GGUF_I8 || t == GGUF_I16 || t == GGUF_I32 || t == GGUF_I64;
}

int gguf_get_int(const struct gguf_file *f, const char *key, int64_t lo, int64_t hi,
		 int64_t *out, struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv)
		return 1;
	if (!is_int(kv->type))
		return err_set(e, "%s is a%s %s, not an integer", key,
			       kv->type == GGUF_ARRAY ? "n" : "", vname[kv->type]);
	bool neg = is_signed(kv->type) && kv->v.i < 0;
	if (neg ? kv->v.i < lo : kv->v.u > (uint64_t)hi || (int64_t)kv->v.u < lo) {
		if (neg)
			return err_set(e, "%s is %" PRId64 ", outside %" PRId64 "..%" PRId64, key,
				       kv->v.i, lo, hi);
		return err_set(e, "%s is %" PRIu64 ", outside %" PRId64 "..%" PRId64, key, kv->v.u,
			       lo, hi);
	}
	*out = neg ? kv->v.i : (int64_t)kv->v.u;
	return 0;
}

int gguf_get_float(const struct gguf_file *f, const char *key, double *out, struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv)
		return 1;
	double x;
	if (kv->type == GGUF_F32 || kv->type == GGUF_F64)
		x = kv->v.f;
	else if (is_int(kv->type))
		x = is_signed(kv->type) ? (double)kv->v.i : (double)kv->v.u;
	else
		return err_set(e, "%s is a%s %s, not a number", key,
			       kv->type == GGUF_ARRAY ? "n" : "", vname[kv->type]);
	if (!isfinite(x))
		return err_set(e, "%s is not a finite number", key);
	*out = x;
	return 0;
}

int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out, struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv)
		return 1;
	if (kv->type != GGUF_BOOL)
		return err_set(e, "%s is a%s %s, not a bool", key, kv->type == GGUF_ARRAY ? "n" : "",
			       vname[kv->type]);
	*out = kv->v.u != 0;
	return 0;
}

/* Reads n bytes at off into dst, or says the file ends there. */
static int read_at(const struct gguf_file *f, void *dst, uint64_t n, uint64_t off, struct err *e)
{
	if (off > f->size || n > f->size - off)
		return err_set(e, "unexpected end of file (truncated?)");
	unsigned char *d = dst;
	while (n > 0) {
		size_t k = n > (1u << 30) ? 1u << 30 : (size_t)n;
		ssize_t r = pread(f->fd, d, k, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return err_set(e, r < 0 ? "read failed: %s" : "unexpected end of file "
				       "(truncated?)%s", r < 0 ? strerror(errno) : "");
		d += r;
		off += (uint64_t)r;
		n -= (uint64_t)r;
	}
	return 0;
}

int gguf_get_str(const struct gguf_file *f, const char *key, size_t max, char **out,
		 struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	if (!kv)
		return 1;
	if (kv->type != GGUF_STRING)
		return err_set(e, "%s is a%s %s, not a string", key, kv->type == GGUF_ARRAY ? "n" : "",
			       vname[kv->type]);
	if (kv->n > max)
		return err_set(e, "%s is %" PRIu64 " bytes long, more than %zu", key, kv->n, max);
	char *s = xmalloc((size_t)kv->n + 1);
	if (read_at(f, s, kv->n, kv->off, e)) {
		free(s);
		return -1;
	}
	s[kv->n] = '\0';
	if (memchr(s, '\0', (size_t)kv->n) || !utf8_valid(s, (size_t)kv->n)) {
		free(s);
		return err_set(e, "%s is not valid UTF-8 text", key);
	}
	*out = s;
	return 0;
}

/* The array key of n elements at most max, or an error. */
static const struct gguf_kv *array_of(const struct gguf_file *f, const char *key, uint64_t max,
				      bool strings, int *rc, struct err *e)
{
	const struct gguf_kv *kv = gguf_find(f, key);
	*rc = 1;
	if (!kv)
		return NULL;
	*rc = -1;
	if (kv->type != GGUF_ARRAY)
		err_set(e, "%s is a %s, not an array", key, vname[kv->type]);
	else if (strings != (kv->arr_type == GGUF_STRING) || kv->arr_type == GGUF_BOOL)
		err_set(e, "%s is an array of %s, not of %s", key, vname[kv->arr_type],
			strings ? "strings" : "numbers");
	else if (kv->n > max)
		err_set(e, "%s has %" PRIu64 " elements, more than %" PRIu64, key, kv->n, max);
	else
		return *rc = 0, kv;
	return NULL;
}

int gguf_get_strings(const struct gguf_file *f, const char *key, uint64_t max, char ***s,
		     uint32_t **len, uint64_t *n, struct err *e)
{
	int rc;
	const struct gguf_kv *kv = array_of(f, key, max, true, &rc, e);
	if (!kv)
		return rc;
	struct cur *c = xmalloc(sizeof *c);
	*c = (struct cur){ .fd = f->fd, .size = f->size, .pos = kv->off };
	/* first pass: the lengths, which bound the block */
	uint64_t total = 0;
	uint32_t *l = xmalloc(((size_t)kv->n ? (size_t)kv->n : 1) * sizeof *l);
	for (uint64_t i = 0; i < kv->n && rc == 0; i++) {
		uint64_t k;
		if (take_u64(c, &k, key, e) || take(c, NULL, k, key, e))
			rc = -1;
		else if (k > GGUF_STRING_MAX)
			rc = err_set(e, "%s: string %" PRIu64 " is %" PRIu64 " bytes long, more than %u",
				     key, i, k, GGUF_STRING_MAX);
		else
			total += (l[i] = (uint32_t)k) + 1;
	}
	char **p = NULL;
	if (rc == 0) {
		p = xmalloc((size_t)kv->n * sizeof *p + (size_t)total + 1);
		char *at = (char *)(p + kv->n);
		c->pos = kv->off;
		for (uint64_t i = 0; i < kv->n && rc == 0; i++) {
			uint64_t k = 0;
			p[i] = at;
			if (take_u64(c, &k, key, e) || k != l[i] || take(c, at, k, key, e)) {
				rc = err_set(e, "%s: string %" PRIu64 " changed while read", key, i);
				break;
			}
			at[k] = '\0';
			at += k + 1;
		}
	}
	free(c);
	if (rc) {
		free(p);
		free(l);
		return -1;
	}
	*s = p;
	*len = l;
	*n = kv->n;
	return 0;
}

int gguf_get_numbers(const struct gguf_file *f, const char *key, uint64_t max, double **v,
		     uint64_t *n, struct err *e)
{
	int rc;
	const struct gguf_kv *kv = array_of(f, key, max, false, &rc, e);
	if (!kv)
		return rc;
	size_t es = vsize[kv->arr_type];
	unsigned char *raw = xmalloc((size_t)kv->n * es + 1);
	double *out = xmalloc(((size_t)kv->n ? (size_t)kv->n : 1) * sizeof *out);
	if (read_at(f, raw, kv->n * es, kv->off, e)) {
		free(raw);
		free(out);
		return -1;
	}
	struct gguf_kv one = { .type = kv->arr_type };
	for (uint64_t i = 0; i < kv->n; i++) {
		scalar(&one, raw + i * es);
		out[i] = one.type == GGUF_F32 || one.type == GGUF_F64 ? one.v.f
			 : is_signed(one.type)			      ? (double)one.v.i
								      : (double)one.v.u;
	}
	free(raw);
	*v = out;
	*n = kv->n;
	return 0;
}

/* ---------------------------------------------------------------- tensors */

#define CHUNK (1u << 20) /* bytes dequantized at a time */

int gguf_read_stored(const struct gguf_file *f, struct gguf_tensor *t, void *dst,
		     struct err *e)
{
	size_t bv = ggml_block_values(t->type), bb = ggml_block_bytes(t->type);
	uint64_t blocks = t->bytes / bb;
	if (read_at(f, dst, t->bytes, t->off, e))
		return -1;
	/* read off the bits (quant.h): the first block holding a value that
	 * is not finite holds it first */
	size_t bad = ggml_first_nonfinite(t->type, dst, (size_t)blocks);
	if (bad < blocks)
		return err_set(e, "tensor %s has a non-finite value at element %" PRIu64, t->name,
			       (uint64_t)bad * bv);
	t->read = true;
	return 0;
}

int gguf_read_tensor(const struct gguf_file *f, struct gguf_tensor *t, float *dst,
		     struct err *e)
{
	size_t bv = ggml_block_values(t->type), bb = ggml_block_bytes(t->type);
	uint64_t blocks = t->bytes / bb, per = CHUNK / bb;
	per = per < blocks ? per : blocks;
	unsigned char *buf = xmalloc((size_t)(per * bb) + 1);
	int rc = 0;
	for (uint64_t b = 0; b < blocks && rc == 0; b += per) {
		uint64_t k = blocks - b < per ? blocks - b : per;
		rc = read_at(f, buf, k * bb, t->off + b * bb, e);
		if (rc == 0)
			ggml_dequantize(t->type, buf, dst + b * bv, (size_t)k);
	}
	free(buf);
	for (uint64_t i = 0; rc == 0 && i < t->n; i++)
		if (!isfinite(dst[i]))
			rc = err_set(e, "tensor %s has a non-finite value at element %" PRIu64, t->name, i);
	if (rc == 0)
		t->read = true;
	return rc;
}
