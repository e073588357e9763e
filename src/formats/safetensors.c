/*
 * safetensors.c — the one safetensors reader (layout, checks and
 * lifetimes in safetensors.h).
 *
 * st_open() reads the header with pread() and keeps the parsed JSON: the
 * tensor table points into it.  Entries are checked in header order, each
 * in the order name (the format's expect hook), dtype, shape, bytes; the
 * overlap check comes last, over all of them.  st_read() reads a tensor
 * straight into the caller's floats (F32) or through a small conversion
 * buffer (F16, BF16; ld_read_floats in loader-common.c), so a large file is
 * never held twice.
 */
#define _GNU_SOURCE
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loaders.h"

#define META_KEY "__metadata__"

/* Largest header accepted (the limit the reference safetensors reader uses). */
#define HEADER_MAX ((uint64_t)100000000)

/* Every dtype of the format with its size; F32, F16 and BF16 are read, the
 * others only listed (st_checks.other_dtypes). */
static const struct {
	const char *name;
	size_t size;
	enum dtype dtype;
} dtypes[] = {
	{ "F32", 4, DTYPE_F32 }, { "F16", 2, DTYPE_F16 }, { "BF16", 2, DTYPE_BF16 },
	{ "F64", 8, DTYPE_OTHER }, { "I64", 8, DTYPE_OTHER }, { "U64", 8, DTYPE_OTHER },
	{ "I32", 4, DTYPE_OTHER }, { "U32", 4, DTYPE_OTHER }, { "I16", 2, DTYPE_OTHER },
	{ "U16", 2, DTYPE_OTHER }, { "I8", 1, DTYPE_OTHER }, { "U8", 1, DTYPE_OTHER },
	{ "BOOL", 1, DTYPE_OTHER }, { "F8_E4M3", 1, DTYPE_OTHER }, { "F8_E5M2", 1, DTYPE_OTHER },
};

void st_shape_str(char *buf, size_t size, const uint64_t *shape, int ndim)
{
	size_t len = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < ndim && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu64, d ? ", " : "", shape[d]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

/* ---------------------------------------------------------------- header */

/* The length word, checked against the file size, and the JSON object
 * after it into f->root; *data_size gets what follows the header. */
static int read_header(struct st_file *f, uint64_t *data_size, struct err *e)
{
	struct stat st;
	unsigned char w[8];
	uint64_t fsize, n = 0;

	if (fstat(f->fd, &st) != 0)
		return err_set(e, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(e, "not a regular file");
	fsize = (uint64_t)st.st_size;
	if (fsize < 8)
		return err_set(e, "file too short (%" PRIu64 " bytes; truncated?): a safetensors "
			       "file starts with an 8-byte header length", fsize);
	if (ld_pread(f->fd, w, 8, 0, e))
		return -1;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | w[i];
	if (n > fsize - 8)
		return err_set(e, "header length %" PRIu64 " runs past the end of the file "
			       "(%" PRIu64 " bytes; truncated?)", n, fsize);
	if (n > HEADER_MAX)
		return err_set(e, "header length %" PRIu64 " is absurd (limit %" PRIu64 ")",
			       n, HEADER_MAX);
	if (n < 2)
		return err_set(e, "header of %" PRIu64 " bytes is too short for JSON", n);

	char *hdr = xmalloc((size_t)n);
	if (ld_pread(f->fd, hdr, (size_t)n, 8, e)) {
		free(hdr);
		return -1;
	}
	json_error_t jerr;
	f->root = json_loadb(hdr, (size_t)n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	free(hdr);
	if (!f->root)
		return err_set(e, "header is not valid JSON (line %d, column %d: %s)",
			       jerr.line, jerr.column, jerr.text);
	if (!json_is_object(f->root))
		return err_set(e, "header is not a JSON object");
	f->data_off = 8 + n;
	*data_size = fsize - 8 - n;
	return 0;
}

/* ---------------------------------------------------------------- entries */

/* A JSON array of at most max non-negative integers into out[0..*n).
 * -1 (no message) when it is anything else. */
static int json_uints(const json_t *a, uint64_t *out, size_t max, size_t *n)
{
	if (!json_is_array(a) || json_array_size(a) > max)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return -1;
		out[i] = (uint64_t)json_integer_value(v);
	}
	*n = json_array_size(a);
	return 0;
}

static int parse_dtype(struct st_tensor *t, const json_t *v, bool other_ok, struct err *e)
{
	json_t *dt = json_object_get(v, "dtype");
	if (!json_is_string(dt))
		return err_set(e, "tensor %.60s: dtype missing or not a string", t->name);
	t->dtype_name = json_string_value(dt);
	t->dtype = DTYPE_OTHER;
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (strcmp(t->dtype_name, dtypes[i].name) == 0) {
			t->dtype = dtypes[i].dtype;
			t->esize = dtypes[i].size;
		}
	if (t->dtype == DTYPE_OTHER && !other_ok)
		return err_set(e, "tensor %.60s has unsupported dtype \"%.20s\" (this build reads "
			       "F32, F16 and BF16)", t->name, t->dtype_name);
	return 0;
}

/* The shape, compared with want[0..want_nd) when want_nd >= 0 (by: who
 * wants it), and the element count. */
static int parse_shape(struct st_tensor *t, const json_t *v, const uint64_t *want, int want_nd,
		       const char *by, struct err *e)
{
	char ws[128] = "", exp[144] = "", gs[128];
	size_t nd = 0;
	if (want_nd >= 0) {
		st_shape_str(ws, sizeof ws, want, want_nd);
		snprintf(exp, sizeof exp, " (expected %s)", ws);
	}
	if (json_uints(json_object_get(v, "shape"), t->shape, ST_MAX_DIMS, &nd) != 0)
		return err_set(e, "tensor %.60s: shape is not a list of at most %d non-negative "
			       "integers%s", t->name, ST_MAX_DIMS, exp);
	t->ndim = (int)nd;
	bool same = want_nd == t->ndim;
	for (int d = 0; same && d < t->ndim; d++)
		same = t->shape[d] == want[d];
	if (want_nd >= 0 && !same) {
		st_shape_str(gs, sizeof gs, t->shape, t->ndim);
		return err_set(e, "tensor %.60s has shape %s, but %s needs %s", t->name, gs,
			       by ? by : "the format", ws);
	}
	t->n = 1;
	for (int d = 0; d < t->ndim; d++) {
		/* n * esize must fit, whatever the dtype */
		if (t->shape[d] && t->n > UINT64_MAX / 16 / t->shape[d])
			return err_set(e, "tensor %.60s: shape is absurdly large", t->name);
		t->n *= t->shape[d];
	}
	return 0;
}

/* data_offsets: two integers, in order, inside the data, as many bytes as
 * the elements take (when the dtype's size is known). */
static int parse_range(struct st_tensor *t, const json_t *v, uint64_t data_size, struct err *e)
{
	uint64_t off[2];
	size_t n = 0;
	if (json_uints(json_object_get(v, "data_offsets"), off, 2, &n) != 0 || n != 2)
		return err_set(e, "tensor %.60s: data_offsets must be two non-negative integers",
			       t->name);
	t->begin = off[0];
	t->end = off[1];
	if (t->begin > t->end)
		return err_set(e, "tensor %.60s: data_offsets [%" PRIu64 ", %" PRIu64 "] begin "
			       "after they end", t->name, t->begin, t->end);
	if (t->end > data_size)
		return err_set(e, "tensor %.60s: data_offsets [%" PRIu64 ", %" PRIu64 "] run past "
			       "the end of the data (%" PRIu64 " bytes; truncated?)",
			       t->name, t->begin, t->end, data_size);
	if (t->esize && t->end - t->begin != t->n * t->esize)
		return err_set(e, "tensor %.60s: data_offsets span %" PRIu64 " bytes, but %" PRIu64
			       " %s elements take %" PRIu64, t->name, t->end - t->begin, t->n,
			       t->dtype_name, t->n * t->esize);
	return 0;
}

static int parse_entry(const char *name, const json_t *v, const struct st_checks *c,
		       uint64_t data_size, struct st_tensor *t, struct err *e)
{
	uint64_t want[ST_MAX_DIMS];
	int want_nd = -1;

	t->name = name;
	if (c && c->expect && c->expect(c->ctx, name, want, &want_nd, e))
		return -1;
	if (want_nd > ST_MAX_DIMS)
		die("safetensors: expected shape of %d dimensions for %s", want_nd, name);
	if (!json_is_object(v))
		return err_set(e, "tensor %.60s: entry is not an object", name);
	if (parse_dtype(t, v, c && c->other_dtypes, e) ||
	    parse_shape(t, v, want, want_nd, c ? c->expect_by : NULL, e) ||
	    parse_range(t, v, data_size, e))
		return -1;
	return 0;
}

static int cmp_begin(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x > y) - (x < y); /* header order */
}

/* No two tensors share a byte (empty ones and dtypes of unknown size hold
 * none). */
static int check_overlaps(const struct st_file *f, struct err *e)
{
	struct st_tensor **s = xmalloc(((size_t)f->n + 1) * sizeof *s);
	int k = 0, rc = 0;
	for (int i = 0; i < f->n; i++)
		if (f->t[i].esize && f->t[i].end > f->t[i].begin)
			s[k++] = &f->t[i];
	qsort(s, (size_t)k, sizeof *s, cmp_begin);
	for (int i = 1; i < k && !rc; i++) {
		const struct st_tensor *a = s[i - 1], *b = s[i];
		if (b->begin < a->end)
			rc = err_set(e, "tensors %.60s [%" PRIu64 ", %" PRIu64 ") and %.60s [%" PRIu64
				     ", %" PRIu64 ") overlap", a->name, a->begin, a->end, b->name,
				     b->begin, b->end);
	}
	free(s);
	return rc;
}

/* The metadata to the format's hook, then every tensor entry. */
static int read_entries(struct st_file *f, const struct st_checks *c, uint64_t data_size,
			struct err *e)
{
	const char *key;
	json_t *v;

	f->meta = json_object_get(f->root, META_KEY);
	if (c && c->meta && c->meta(c->ctx, f->meta, e))
		return -1;
	f->t = xcalloc(json_object_size(f->root) + 1, sizeof *f->t);
	json_object_foreach(f->root, key, v) {
		if (strcmp(key, META_KEY) == 0)
			continue;
		if (parse_entry(key, v, c, data_size, &f->t[f->n], e))
			return -1;
		f->n++;
	}
	return check_overlaps(f, e);
}

/* ------------------------------------------------------------------ API */

int st_open(struct st_file *f, const char *path, const struct st_checks *c, struct err *e)
{
	uint64_t data_size = 0;

	memset(f, 0, sizeof *f);
	f->fd = open_regular(path, e); /* a FIFO is refused, not waited on */
	if (f->fd < 0)
		return -1;
	if (read_header(f, &data_size, e) || read_entries(f, c, data_size, e)) {
		ld_one_line(e); /* names and JSON excerpts come from the file */
		st_close(f);
		return -1;
	}
	return 0;
}

void st_close(struct st_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	json_decref(f->root);
	free(f->t);
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

/* st_read's work: t's values into dst as floats, or as stored. */
static int read_tensor(struct st_file *f, struct st_tensor *t, void *dst, bool stored,
		       struct err *e)
{
	int rc;
	off_t off = (off_t)(f->data_off + t->begin);
	if (t->dtype == DTYPE_OTHER)
		rc = err_set(e, "tensor %.60s has dtype %.20s, which attnscope does not read (F32, "
			     "F16 and BF16 only)", t->name, t->dtype_name);
	else if (stored)
		rc = ld_read_stored(f->fd, off, dst, (size_t)t->n, t->dtype, t->name, e);
	else
		rc = ld_read_floats(f->fd, off, dst, (size_t)t->n, t->dtype, t->name, e);
	if (rc) {
		ld_one_line(e);
		return -1;
	}
	t->read = true;
	return 0;
}

int st_read(struct st_file *f, struct st_tensor *t, float *dst, struct err *e)
{
	return read_tensor(f, t, dst, false, e);
}

int st_read_stored(struct st_file *f, struct st_tensor *t, void *dst, struct err *e)
{
	return read_tensor(f, t, dst, true, e);
}

int st_read_rows(struct st_file *f, const struct st_tensor *t, uint64_t row0, uint64_t rows,
		 float *dst, struct err *e)
{
	uint64_t w = t->ndim > 1 ? t->n / (t->shape[0] ? t->shape[0] : 1) : 1;
	int rc;

	if (t->dtype == DTYPE_OTHER)
		rc = err_set(e, "tensor %.60s has dtype %.20s, which attnscope does not read (F32, "
			     "F16 and BF16 only)", t->name, t->dtype_name);
	else
		rc = ld_read_floats_from(f->fd, (off_t)(f->data_off + t->begin + row0 * w * t->esize),
					 dst, (size_t)(rows * w), t->dtype, t->name, row0 * w, e);
	if (rc)
		ld_one_line(e);
	return rc ? -1 : 0;
}

uint64_t st_values_held(const struct st_file *f)
{
	uint64_t held = 0;
	for (int i = 0; i < f->n; i++)
		if (f->t[i].esize && held <= UINT64_MAX - f->t[i].n)
			held += f->t[i].n;
	return held;
}
