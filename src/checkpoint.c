/*
 * checkpoint.c — models in one safetensors file (layout in checkpoint.h).
 *
 * Loading trusts nothing in the file: the header length, the header JSON,
 * the metadata, every tensor's dtype, shape and byte range are checked
 * against the config before the model is allocated, and the weights are
 * scanned for NaN/Inf after they are read.  The tensor data is read with
 * pread() straight into the model's weights (F32) or through a small
 * conversion buffer (F16, BF16), so a large file is never held twice.
 *
 * Saving streams the header and the data to a temp file next to the target,
 * which is renamed into place once everything is written and synced.
 */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "loaders.h"
#include "model.h"
#include "tokenizer.h"
#include "util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c copies little-endian tensor data as is: little-endian hosts only"
#endif

#define CKPT_FORMAT  "attnscope"
#define CKPT_VERSION "1"
#define META_KEY     "__metadata__"
#define SUFFIX       ".safetensors"

/* Largest header accepted (the limit the reference safetensors reader uses). */
#define HEADER_MAX ((uint64_t)100000000)

/* Elements converted per step when reading or writing 16-bit tensors. */
#define CHUNK 8192

/* ------------------------------------------------------------ config JSON */

/* Keys of the config object, in the order checkpoint_config_parse checks
 * them; any other key is an error. */
static const char *const cfg_keys[] = {
	"vocab_size", "d_model", "n_layer", "n_head", "n_kv_head", "d_ff",
	"context", "norm", "norm_eps", "placement", "pos", "rope_theta", "mlp",
	"bias", "tied", "residual", "scale", "mask",
};

/* The double with the fewest significant decimal digits that converts back
 * to f, so that 1e-5f is written as 1e-5 rather than 9.99999975e-06. */
static double float_shortest(float f)
{
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)f);
		if (strtof(buf, NULL) == f)
			return strtod(buf, NULL);
	}
	return (double)f;
}

/* Adds key -> value to obj, taking the reference; OOM is fatal.  A NULL
 * value (json_real of a non-finite number) leaves the key out. */
static void obj_set(json_t *obj, const char *key, json_t *value)
{
	if (value && json_object_set_new(obj, key, value) != 0)
		die("out of memory building JSON");
}

/* Serialises a JSON value; jansson only fails here when out of memory. */
static char *dump_json(const json_t *v, size_t flags)
{
	char *s = json_dumps(v, flags);
	if (!s)
		die("out of memory serialising JSON");
	return s;
}

static json_t *config_to_json(const struct model_config *c)
{
	json_t *o = json_object();
	if (!o)
		die("out of memory building JSON");
	obj_set(o, "vocab_size", json_integer(c->vocab_size));
	obj_set(o, "d_model", json_integer(c->d_model));
	obj_set(o, "n_layer", json_integer(c->n_layer));
	obj_set(o, "n_head", json_integer(c->n_head));
	obj_set(o, "n_kv_head", json_integer(c->n_kv_head));
	obj_set(o, "d_ff", json_integer(c->d_ff));
	obj_set(o, "context", json_integer(c->context));
	obj_set(o, "norm", json_string(norm_type_name(c->norm)));
	obj_set(o, "norm_eps", json_real(float_shortest(c->norm_eps)));
	obj_set(o, "placement", json_string(norm_place_name(c->placement)));
	obj_set(o, "pos", json_string(pos_type_name(c->pos)));
	obj_set(o, "rope_theta", json_real(float_shortest(c->rope_theta)));
	obj_set(o, "mlp", json_string(mlp_type_name(c->mlp)));
	obj_set(o, "bias", json_boolean(c->bias));
	obj_set(o, "tied", json_boolean(c->tied));
	/* the lab's switches, written only when off, so that ordinary models'
	 * configs stay as they were */
	if (!c->residual)
		obj_set(o, "residual", json_false());
	if (!c->scale)
		obj_set(o, "scale", json_false());
	if (c->mask != MASK_CAUSAL)
		obj_set(o, "mask", json_string(mask_kind_name(c->mask)));
	return o;
}

/* Compact, sorted keys, floats with 9 significant digits (enough for any
 * float, and exact for the shortest forms built above).  A non-finite
 * float is left out (JSON has no NaN), which the parser then rejects. */
char *checkpoint_config_json(const struct model_config *c)
{
	json_t *o = config_to_json(c);
	char *s = dump_json(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
	json_decref(o);
	return s;
}

/* Looks up a key that must be present. */
static json_t *cfg_get(json_t *o, const char *key, struct err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		err_set(e, "config: missing key \"%s\"", key);
	return v;
}

static int cfg_int(json_t *o, const char *key, int *out, struct err *e)
{
	json_t *v = cfg_get(o, key, e);
	if (!v)
		return -1;
	if (!json_is_integer(v))
		return err_set(e, "config: \"%s\" must be an integer", key);
	json_int_t x = json_integer_value(v);
	if (x < INT_MIN || x > INT_MAX)
		return err_set(e, "config: \"%s\" is out of range (%" JSON_INTEGER_FORMAT ")",
			       key, x);
	*out = (int)x;
	return 0;
}

static int cfg_float(json_t *o, const char *key, float *out, struct err *e)
{
	json_t *v = cfg_get(o, key, e);
	if (!v)
		return -1;
	if (!json_is_number(v))
		return err_set(e, "config: \"%s\" must be a number", key);
	double x = json_number_value(v);
	if (!isfinite(x) || fabs(x) > FLT_MAX)
		return err_set(e, "config: \"%s\" is out of range (%g)", key, x);
	*out = (float)x;
	return 0;
}

static int cfg_bool(json_t *o, const char *key, bool *out, struct err *e)
{
	json_t *v = cfg_get(o, key, e);
	if (!v)
		return -1;
	if (!json_is_boolean(v))
		return err_set(e, "config: \"%s\" must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

static const char *cfg_str(json_t *o, const char *key, struct err *e)
{
	json_t *v = cfg_get(o, key, e);
	if (!v)
		return NULL;
	if (!json_is_string(v)) {
		err_set(e, "config: \"%s\" must be a string", key);
		return NULL;
	}
	return json_string_value(v);
}

/* Each enum field: fetch the string, then its parser; on an unknown name
 * the message quotes it (truncated, it comes from the file). */
#define CFG_ENUM(obj, key, parse, out, e) do {					\
	const char *s_ = cfg_str(obj, key, e);					\
	if (!s_)								\
		return -1;							\
	if (parse(s_, out) != 0)						\
		return err_set(e, "config: \"%s\" has unknown value \"%.40s\"", key, s_); \
} while (0)

static int config_from_json(json_t *o, struct model_config *c, struct err *e)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		size_t k;
		for (k = 0; k < sizeof cfg_keys / sizeof cfg_keys[0]; k++)
			if (strcmp(key, cfg_keys[k]) == 0)
				break;
		if (k == sizeof cfg_keys / sizeof cfg_keys[0])
			return err_set(e, "config: unknown key \"%.40s\"", key);
	}
	if (cfg_int(o, "vocab_size", &c->vocab_size, e) ||
	    cfg_int(o, "d_model", &c->d_model, e) ||
	    cfg_int(o, "n_layer", &c->n_layer, e) ||
	    cfg_int(o, "n_head", &c->n_head, e) ||
	    cfg_int(o, "n_kv_head", &c->n_kv_head, e) ||
	    cfg_int(o, "d_ff", &c->d_ff, e) ||
	    cfg_int(o, "context", &c->context, e))
		return -1;
	CFG_ENUM(o, "norm", norm_type_parse, &c->norm, e);
	if (cfg_float(o, "norm_eps", &c->norm_eps, e))
		return -1;
	CFG_ENUM(o, "placement", norm_place_parse, &c->placement, e);
	CFG_ENUM(o, "pos", pos_type_parse, &c->pos, e);
	if (cfg_float(o, "rope_theta", &c->rope_theta, e))
		return -1;
	CFG_ENUM(o, "mlp", mlp_type_parse, &c->mlp, e);
	if (cfg_bool(o, "bias", &c->bias, e) || cfg_bool(o, "tied", &c->tied, e))
		return -1;
	/* optional: absent means an ordinary model */
	c->residual = c->scale = true;
	c->mask = MASK_CAUSAL;
	if ((json_object_get(o, "residual") && cfg_bool(o, "residual", &c->residual, e)) ||
	    (json_object_get(o, "scale") && cfg_bool(o, "scale", &c->scale, e)))
		return -1;
	if (json_object_get(o, "mask"))
		CFG_ENUM(o, "mask", mask_kind_parse, &c->mask, e);
	return 0;
}

/* Parses and validates; *c is only written on success.  Messages start
 * with "config: " (the caller adds where the text came from). */
int checkpoint_config_parse(const char *json, struct model_config *c, struct err *e)
{
	json_error_t jerr;
	json_t *o = json_loads(json, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!o) {
		err_set(e, "config: invalid JSON (line %d, column %d: %s)",
			jerr.line, jerr.column, jerr.text);
		ld_one_line(e);
		return -1;
	}
	struct model_config tmp;
	memset(&tmp, 0, sizeof tmp);
	int rc;
	if (!json_is_object(o))
		rc = err_set(e, "config: not a JSON object");
	else
		rc = config_from_json(o, &tmp, e);
	json_decref(o);
	if (rc) {
		ld_one_line(e);
		return -1;
	}
	if (config_validate(&tmp, e) != 0) /* its messages start "config: " */
		return -1;
	*c = tmp;
	return 0;
}

/* ------------------------------------------------------------ dtypes */

enum st_dtype { ST_F32, ST_F16, ST_BF16 };

static const struct {
	const char *name;
	size_t size;
} st_dtypes[] = {
	[ST_F32]  = { "F32", 4 },
	[ST_F16]  = { "F16", 2 },
	[ST_BF16] = { "BF16", 2 },
};

static int st_dtype_parse(const char *s, enum st_dtype *out)
{
	for (int i = 0; i < (int)(sizeof st_dtypes / sizeof st_dtypes[0]); i++) {
		if (strcmp(s, st_dtypes[i].name) == 0) {
			*out = (enum st_dtype)i;
			return 0;
		}
	}
	return -1;
}

/* Index of the first NaN or Inf in x[0..n), or n when all are finite. */
static size_t first_nonfinite(const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return i;
	return n;
}

/* "[2, 48, 16]" */
static void fmt_shape(char *buf, size_t size, const size_t *shape, int ndim)
{
	size_t len = 0;
	len += (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < ndim && len < size; d++)
		len += (size_t)snprintf(buf + len, size - len, "%s%zu", d ? ", " : "", shape[d]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

/* ------------------------------------------------------------------ load */

/* One tensor of the file, as checked against the config. */
struct st_tensor {
	enum param_id id;
	enum st_dtype dtype;
	uint64_t begin, end;   /* bytes, relative to the start of the data */
	size_t n;              /* element count */
};

/* Reads the header: the length word, checked against the file size, and
 * the JSON text, NUL-terminated, into a malloc'd *hdr. */
static int read_header(int fd, uint64_t fsize, char **hdr, uint64_t *hlen, struct err *e)
{
	unsigned char w[8];
	if (fsize < 8)
		return err_set(e, "file too short (%" PRIu64 " bytes; truncated?): a safetensors "
			       "file starts with an 8-byte header length", fsize);
	if (ld_pread(fd, w, 8, 0, e))
		return -1;
	uint64_t n = 0;
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
	char *buf = xmalloc((size_t)n + 1);
	if (ld_pread(fd, buf, (size_t)n, 8, e)) {
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	*hdr = buf;
	*hlen = n;
	return 0;
}

/* A metadata value that must be a string when present; NULL when absent. */
static int meta_str(json_t *meta, const char *key, const char **out, struct err *e)
{
	json_t *v = json_object_get(meta, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return err_set(e, "metadata \"%s\" is not a string", key);
	*out = json_string_value(v);
	return 0;
}

/* Checks the format and version marks and parses the config. */
static int check_metadata(json_t *root, struct model_config *cfg, struct err *e)
{
	json_t *meta = json_object_get(root, META_KEY);
	if (!meta)
		return err_set(e, "not an attnscope checkpoint (format missing: no %s)", META_KEY);
	if (!json_is_object(meta))
		return err_set(e, "not an attnscope checkpoint (format missing: %s is not an object)",
			       META_KEY);
	const char *key;
	json_t *v;
	json_object_foreach(meta, key, v) {
		if (!json_is_string(v))
			return err_set(e, "metadata \"%.40s\" is not a string", key);
	}
	const char *format, *version, *config;
	meta_str(meta, "format", &format, e);
	if (!format)
		return err_set(e, "not an attnscope checkpoint (format missing)");
	if (strcmp(format, CKPT_FORMAT) != 0)
		return err_set(e, "not an attnscope checkpoint (format \"%.40s\")", format);
	meta_str(meta, "version", &version, e);
	if (!version)
		return err_set(e, "not an attnscope checkpoint (version missing)");
	if (strcmp(version, CKPT_VERSION) != 0)
		return err_set(e, "unsupported version %.20s; this build reads version "
			       CKPT_VERSION " \xe2\x80\x94 re-save it with a matching attnscope",
			       version);
	meta_str(meta, "config", &config, e);
	if (!config)
		return err_set(e, "metadata has no \"config\"");
	return checkpoint_config_parse(config, cfg, e);
}

/* Reads a JSON array of non-negative integers into out[0..*n), at most max.
 * Returns -1 (without a message) when it is anything else. */
static int json_uints(json_t *a, uint64_t *out, size_t max, size_t *n)
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

/* Checks one tensor entry against the config and the data section size. */
static int check_tensor(const char *name, json_t *v, const struct model_config *cfg,
			uint64_t data_size, struct st_tensor *t, struct err *e)
{
	if (!json_is_object(v))
		return err_set(e, "tensor %s: entry is not an object", name);

	json_t *jd = json_object_get(v, "dtype");
	if (!json_is_string(jd))
		return err_set(e, "tensor %s: dtype missing or not a string", name);
	if (st_dtype_parse(json_string_value(jd), &t->dtype) != 0)
		return err_set(e, "tensor %s has unsupported dtype \"%.20s\" (this build reads "
			       "F32, F16 and BF16)", name, json_string_value(jd));

	size_t want[3], got_n = 0;
	int ndim;
	uint64_t got[8];
	t->n = param_shape(cfg, t->id, want, &ndim);
	char ws[96], gs[96];
	fmt_shape(ws, sizeof ws, want, ndim);
	if (json_uints(json_object_get(v, "shape"), got, 8, &got_n) != 0)
		return err_set(e, "tensor %s: shape is not a list of at most 8 non-negative "
			       "integers (expected %s)", name, ws);
	bool same = got_n == (size_t)ndim;
	for (size_t d = 0; same && d < got_n; d++)
		same = got[d] == want[d];
	if (!same) {
		size_t gz[8];
		for (size_t d = 0; d < got_n; d++)
			gz[d] = (size_t)got[d];
		fmt_shape(gs, sizeof gs, gz, (int)got_n);
		return err_set(e, "tensor %s has shape %s, but the config needs %s", name, gs, ws);
	}

	uint64_t off[2];
	size_t n_off = 0;
	if (json_uints(json_object_get(v, "data_offsets"), off, 2, &n_off) != 0 || n_off != 2)
		return err_set(e, "tensor %s: data_offsets must be two non-negative integers", name);
	t->begin = off[0];
	t->end = off[1];
	if (t->begin > t->end)
		return err_set(e, "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] begin after "
			       "they end", name, t->begin, t->end);
	if (t->end > data_size)
		return err_set(e, "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] run past the "
			       "end of the data (%" PRIu64 " bytes; truncated?)",
			       name, t->begin, t->end, data_size);
	uint64_t bytes = (uint64_t)t->n * st_dtypes[t->dtype].size;
	if (t->end - t->begin != bytes)
		return err_set(e, "tensor %s: data_offsets span %" PRIu64 " bytes, but %zu %s "
			       "elements take %" PRIu64, name, t->end - t->begin, t->n,
			       st_dtypes[t->dtype].name, bytes);
	return 0;
}

static int cmp_begin(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (int)x->id - (int)y->id;
}

/* Checks every tensor entry of the header: names, dtypes, shapes, ranges,
 * no overlap, none missing.  Fills t[0..*nt) in param order. */
static int check_tensors(json_t *root, const struct model_config *cfg, uint64_t data_size,
			 struct st_tensor *t, int *nt, struct err *e)
{
	int slot[N_PARAMS];
	int n = 0;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		slot[i] = -1;
		if (param_shape(cfg, (enum param_id)i, shape, &ndim) > 0)
			slot[i] = n++;
	}
	bool seen[N_PARAMS] = { false };

	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (strcmp(key, META_KEY) == 0)
			continue;
		int id;
		for (id = 0; id < N_PARAMS; id++)
			if (strcmp(key, param_name((enum param_id)id)) == 0)
				break;
		if (id == N_PARAMS)
			return err_set(e, "unexpected tensor \"%.40s\"", key);
		if (slot[id] < 0)
			return err_set(e, "unexpected tensor \"%s\" (this config has none)", key);
		struct st_tensor *ti = &t[slot[id]];
		ti->id = (enum param_id)id;
		if (check_tensor(key, v, cfg, data_size, ti, e))
			return -1;
		seen[id] = true;
	}
	for (int i = 0; i < N_PARAMS; i++)
		if (slot[i] >= 0 && !seen[i])
			return err_set(e, "missing tensor \"%s\"", param_name((enum param_id)i));

	struct st_tensor *sorted = xmalloc((size_t)n * sizeof *sorted);
	memcpy(sorted, t, (size_t)n * sizeof *sorted);
	qsort(sorted, (size_t)n, sizeof *sorted, cmp_begin);
	int rc = 0;
	for (int i = 1; i < n && !rc; i++) {
		const struct st_tensor *a = &sorted[i - 1], *b = &sorted[i];
		if (b->begin < a->end)
			rc = err_set(e, "tensors %s [%" PRIu64 ", %" PRIu64 ") and %s [%" PRIu64 ", %"
				     PRIu64 ") overlap", param_name(a->id), a->begin, a->end,
				     param_name(b->id), b->begin, b->end);
	}
	free(sorted);
	*nt = n;
	return rc;
}

/* Reads one tensor into dst (t->n floats), converting 16-bit types, then
 * rejects NaN/Inf. */
static int read_tensor(int fd, off_t data_off, const struct st_tensor *t, float *dst,
		       struct err *e)
{
	off_t off = data_off + (off_t)t->begin;
	if (t->dtype == ST_F32) {
		if (ld_pread(fd, dst, t->n * sizeof(float), off, e))
			return -1;
	} else {
		uint16_t buf[CHUNK];
		for (size_t i = 0; i < t->n; i += CHUNK) {
			size_t k = t->n - i < CHUNK ? t->n - i : CHUNK;
			if (ld_pread(fd, buf, k * 2, off + (off_t)(i * 2), e))
				return -1;
			if (t->dtype == ST_F16)
				for (size_t j = 0; j < k; j++)
					dst[i + j] = f16_to_f32(buf[j]);
			else
				for (size_t j = 0; j < k; j++)
					dst[i + j] = bf16_to_f32(buf[j]);
		}
	}
	size_t bad = first_nonfinite(dst, t->n);
	if (bad < t->n)
		return err_set(e, "tensor %s has a non-finite value at element %zu",
			       param_name(t->id), bad);
	return 0;
}

/* The file's base name without ".safetensors" (the whole base name when
 * that would leave nothing). */
static char *name_from_path(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base), s = strlen(SUFFIX);
	if (n > s && strcmp(base + n - s, SUFFIX) == 0)
		n -= s;
	return xstrndup(base, n);
}

/* Everything after the file is open; messages without the path. */
static struct model *load_fd(int fd, const char *path, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		err_set(e, "%s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(e, "not a regular file");
		return NULL;
	}
	uint64_t fsize = (uint64_t)st.st_size;

	char *hdr = NULL;
	uint64_t hlen = 0;
	if (read_header(fd, fsize, &hdr, &hlen, e))
		return NULL;

	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	struct st_tensor t[N_PARAMS];
	struct model_config cfg;
	json_error_t jerr;
	int nt = 0;
	json_t *root = json_loadb(hdr, (size_t)hlen, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
				  &jerr);
	free(hdr);
	if (!root) {
		err_set(e, "header is not valid JSON (line %d, column %d: %s)",
			jerr.line, jerr.column, jerr.text);
		goto fail;
	}
	if (!json_is_object(root)) {
		err_set(e, "header is not a JSON object");
		goto fail;
	}
	if (check_metadata(root, &cfg, e))
		goto fail;
	if (check_tensors(root, &cfg, fsize - 8 - hlen, t, &nt, e))
		goto fail;

	json_t *meta = json_object_get(root, META_KEY);
	const char *tok_json, *training, *name;
	meta_str(meta, "tokenizer", &tok_json, e);
	meta_str(meta, "training", &training, e);
	meta_str(meta, "name", &name, e);
	if (training) {
		json_t *tj = json_loads(training, JSON_DECODE_ANY, &jerr);
		if (!tj) {
			err_set(e, "metadata \"training\" is not valid JSON (line %d, column %d: %s)",
				jerr.line, jerr.column, jerr.text);
			goto fail;
		}
		json_decref(tj);
	}
	if (tok_json) {
		tok = tok_from_json(tok_json, e); /* messages start "tokenizer" */
		if (!tok)
			goto fail;
		if (tok->vocab_size > cfg.vocab_size) {
			err_set(e, "tokenizer has %d tokens but the model's vocab_size is %d",
				tok->vocab_size, cfg.vocab_size);
			goto fail;
		}
	}

	m = model_new(&cfg, e);
	if (!m)
		goto fail;
	for (int i = 0; i < nt; i++) {
		if (m->psize[t[i].id] != t[i].n || !m->p[t[i].id])
			die("checkpoint: model_new sized tensor %s unlike param_shape",
			    param_name(t[i].id));
		if (read_tensor(fd, (off_t)(8 + hlen), &t[i], m->p[t[i].id], e))
			goto fail;
	}
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = name && *name ? xstrdup(name) : name_from_path(path);
	m->train_meta = training ? xstrdup(training) : NULL;
	json_decref(root);
	return m;

fail:
	/* the tokenizer is only attached to m on success */
	if (tok)
		tok_free(tok);
	model_free(m);
	json_decref(root);
	return NULL;
}

struct model *checkpoint_load(const char *path, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_set(e, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct model *m = load_fd(fd, path, e);
	close(fd);
	if (!m) {
		err_prefix(e, "%s", path);
		ld_one_line(e);
	}
	return m;
}

/* ------------------------------------------------------------------ save */

static int write_all(int fd, const void *buf, size_t n, struct err *e)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return err_set(e, "write failed: %s", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Sets a string metadata value; jansson refuses invalid UTF-8. */
static int meta_set(json_t *meta, const char *key, const char *value, struct err *e)
{
	json_t *s = json_string(value);
	if (!s)
		return err_set(e, "metadata \"%s\" is not valid UTF-8", key);
	obj_set(meta, key, s);
	return 0;
}

/* Checks that every tensor can be stored: finite, and within F16 range
 * when writing F16. */
static int check_saveable(const struct model *m, enum ckpt_dtype dtype, struct err *e)
{
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		if (n == 0)
			continue;
		if (!m->p[i] || m->psize[i] != n)
			die("checkpoint_save: tensor %s does not match the config",
			    param_name((enum param_id)i));
		const float *x = m->p[i];
		size_t bad = first_nonfinite(x, n);
		if (bad < n)
			return err_set(e, "tensor %s has a non-finite value at element %zu",
				       param_name((enum param_id)i), bad);
		if (dtype != CKPT_F16)
			continue;
		for (size_t j = 0; j < n; j++)
			if ((f32_to_f16(x[j]) & 0x7c00) == 0x7c00)
				return err_set(e, "tensor %s element %zu (%g) is out of F16 range; "
					       "save as F32", param_name((enum param_id)i), j,
					       (double)x[j]);
	}
	return 0;
}

/* The header JSON, padded with spaces to a multiple of 8 bytes. */
static char *build_header(const struct model *m, enum ckpt_dtype dtype, size_t *len,
			  struct err *e)
{
	json_t *root = json_object(), *meta = json_object();
	if (!root || !meta)
		die("out of memory building JSON");
	obj_set(root, META_KEY, meta);

	char *cj = checkpoint_config_json(&m->cfg);
	char *tj = m->tok ? m->tok->ops->to_json(m->tok) : NULL;
	int rc = meta_set(meta, "format", CKPT_FORMAT, e);
	rc = rc ? rc : meta_set(meta, "version", CKPT_VERSION, e);
	rc = rc ? rc : meta_set(meta, "config", cj, e);
	if (!rc && tj)
		rc = meta_set(meta, "tokenizer", tj, e);
	if (!rc && m->train_meta)
		rc = meta_set(meta, "training", m->train_meta, e);
	if (!rc && m->name)
		rc = meta_set(meta, "name", m->name, e);
	free(cj);
	free(tj);
	if (rc) {
		json_decref(root);
		return NULL;
	}

	size_t esize = dtype == CKPT_F16 ? 2 : 4;
	uint64_t off = 0;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		if (n == 0)
			continue;
		json_t *t = json_object(), *sh = json_array(), *offs = json_array();
		if (!t || !sh || !offs)
			die("out of memory building JSON");
		for (int d = 0; d < ndim; d++)
			if (json_array_append_new(sh, json_integer((json_int_t)shape[d])))
				die("out of memory building JSON");
		if (json_array_append_new(offs, json_integer((json_int_t)off)) ||
		    json_array_append_new(offs, json_integer((json_int_t)(off + n * esize))))
			die("out of memory building JSON");
		obj_set(t, "dtype", json_string(dtype == CKPT_F16 ? "F16" : "F32"));
		obj_set(t, "shape", sh);
		obj_set(t, "data_offsets", offs);
		obj_set(root, param_name((enum param_id)i), t);
		off += n * esize;
	}

	char *s = dump_json(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	size_t n = strlen(s), padded = (n + 7) & ~(size_t)7;
	s = xrealloc(s, padded + 1);
	memset(s + n, ' ', padded - n);
	s[padded] = '\0';
	*len = padded;
	return s;
}

/* Writes the length word, the header and the tensors in param order. */
static int write_checkpoint(int fd, const struct model *m, enum ckpt_dtype dtype,
			    const char *hdr, size_t hlen, struct err *e)
{
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	if (write_all(fd, w, 8, e) || write_all(fd, hdr, hlen, e))
		return -1;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		const float *x = m->p[i];
		if (n == 0)
			continue;
		if (dtype == CKPT_F32) {
			if (write_all(fd, x, n * sizeof(float), e))
				return -1;
			continue;
		}
		uint16_t buf[CHUNK];
		for (size_t j = 0; j < n; j += CHUNK) {
			size_t k = n - j < CHUNK ? n - j : CHUNK;
			for (size_t q = 0; q < k; q++)
				buf[q] = f32_to_f16(x[j + q]);
			if (write_all(fd, buf, k * 2, e))
				return -1;
		}
	}
	return 0;
}

int checkpoint_save(const struct model *m, const char *path, enum ckpt_dtype dtype,
		    struct err *e)
{
	if (dtype != CKPT_F32 && dtype != CKPT_F16)
		return err_set(e, "%s: unknown checkpoint dtype %d", path, (int)dtype);
	if (check_saveable(m, dtype, e))
		return err_prefix(e, "%s", path);
	size_t hlen;
	char *hdr = build_header(m, dtype, &hlen, e);
	if (!hdr)
		return err_prefix(e, "%s", path);

	/* out_open and out_commit name the path in their messages */
	struct out_file o;
	int rc = out_open(&o, path, e);
	if (rc == 0 && write_checkpoint(o.fd, m, dtype, hdr, hlen, e)) {
		err_prefix(e, "%s", path);
		out_abort(&o);
		rc = -1;
	}
	if (rc == 0)
		rc = out_commit(&o, e);
	free(hdr);
	return rc;
}
