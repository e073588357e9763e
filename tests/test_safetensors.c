/*
 * test_safetensors.c — the safetensors reader (safetensors.h) on files
 * written here byte by byte: what each dtype reads as, each kind of broken
 * container refused with a message that names the problem and the tensor,
 * the metadata handed over, lookups, and the hooks a format adds.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "loaders.h"
#include "safetensors.h"
#include "util.h"

/* ---------------------------------------------------------------- fixture */

static char tmpdir[64];

static int group_setup(void **state)
{
	strcpy(tmpdir, "/tmp/attnscope-st-XXXXXX");
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

/* Writes raw bytes to tmpdir/name; returns the path (a static buffer,
 * good until the next call). */
static const char *put_bytes(const char *name, const void *buf, size_t n)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* A safetensors file: the length word of hdr, hdr, then dlen data bytes. */
static const char *put(const char *name, const char *hdr, const void *data, size_t dlen)
{
	size_t hlen = strlen(hdr);
	unsigned char *buf = xmalloc(8 + hlen + dlen);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	memcpy(buf + 8, hdr, hlen);
	if (dlen)
		memcpy(buf + 8 + hlen, data, dlen);
	const char *path = put_bytes(name, buf, 8 + hlen + dlen);
	free(buf);
	return path;
}

/* n 16-bit values as little-endian bytes into out[0..2n). */
static void le16(unsigned char *out, const uint16_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = (unsigned char)(v[i] & 0xff);
		out[2 * i + 1] = (unsigned char)(v[i] >> 8);
	}
}

/* Opens path, which must succeed. */
static void open_ok(struct st_file *f, const char *path, const struct st_checks *c)
{
	struct err e = { "" };
	if (st_open(f, path, c, &e) != 0) {
		print_error("%s: %s\n", path, e.msg);
		fail();
	}
}

/* Opening path must fail with one line that holds want, leaving f closed. */
static void open_fails(const char *path, const struct st_checks *c, const char *want)
{
	struct err e = { "" };
	struct st_file f;
	if (st_open(&f, path, c, &e) == 0) {
		st_close(&f);
		print_error("%s opened, expected \"%s\"\n", path, want);
		fail();
	}
	if (!strstr(e.msg, want)) {
		print_error("message \"%s\" should hold \"%s\"\n", e.msg, want);
		fail();
	}
	assert_null(strchr(e.msg, '\n'));
	assert_int_equal(f.fd, -1);
	assert_null(f.t);
	assert_null(f.root);
	st_close(&f); /* a no-op on a failed open */
}

/* Reading tensor name of path must fail with a message holding want. */
static void read_fails(const char *path, const struct st_checks *c, const char *name,
		       const char *want)
{
	struct err e = { "" };
	struct st_file f;
	open_ok(&f, path, c);
	struct st_tensor *t = st_find(&f, name);
	assert_non_null(t);
	float *dst = xmalloc((size_t)t->n * sizeof *dst + 1);
	assert_int_equal(st_read(&f, t, dst, &e), -1);
	if (!strstr(e.msg, want)) {
		print_error("message \"%s\" should hold \"%s\"\n", e.msg, want);
		fail();
	}
	assert_false(t->read);
	free(dst);
	st_close(&f);
}

/* Same bits (so -0.0 differs from 0.0 and NaN equals itself). */
static void assert_same_floats(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) {
			print_error("element %zu: %.9g, expected %.9g\n", i, (double)a[i],
				    (double)b[i]);
			fail();
		}
}

/* The one tensor of the file path reads as dtype dt and gives want[0..n). */
static void read_expect(const char *path, enum dtype dt, const float *want, size_t n)
{
	struct st_file f;
	struct err e = { "" };
	float *got = xmalloc(n * sizeof *got);

	open_ok(&f, path, NULL);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.t[0].dtype, dt);
	assert_int_equal(f.t[0].n, n);
	assert_int_equal(st_read(&f, &f.t[0], got, &e), 0);
	assert_same_floats(got, want, n);
	free(got);
	st_close(&f);
}

/* ------------------------------------------------------------------ dtypes */

/* F32 data reads back bit for bit (through the reader, and through the
 * conversion from bytes at an odd address), and the entry's dtype, shape,
 * element count and byte range are as written. */
static void test_f32_values(void **state)
{
	const float x[4] = { 1.5f, -2.25f, -0.0f, 3.0e38f };
	const char *p = put("f32.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],"
			    "\"data_offsets\":[0,16]}}", x, sizeof x);
	struct st_file f;
	float got[4];
	struct err e = { "" };

	open_ok(&f, p, NULL);
	assert_int_equal(f.n, 1);
	struct st_tensor *t = &f.t[0];
	assert_string_equal(t->name, "w");
	assert_int_equal(t->dtype, DTYPE_F32);
	assert_string_equal(t->dtype_name, "F32");
	assert_int_equal(t->esize, 4);
	assert_int_equal(t->ndim, 2);
	assert_int_equal(t->shape[0], 2);
	assert_int_equal(t->shape[1], 2);
	assert_int_equal(t->n, 4);
	assert_int_equal(t->begin, 0);
	assert_int_equal(t->end, 16);
	assert_false(t->read);
	assert_int_equal(st_read(&f, t, got, &e), 0);
	assert_true(t->read);
	assert_same_floats(got, x, 4);
	st_close(&f);

	unsigned char odd[sizeof x + 1];
	memcpy(odd + 1, x, sizeof x);
	memset(got, 0, sizeof got);
	dtype_to_f32(got, odd + 1, 4, DTYPE_F32);
	assert_same_floats(got, x, 4);
}

/* F16 reads as the floats it stands for: normal values of both signs, the
 * largest (65504), subnormals (2^-24 and 1023 * 2^-24, either sign) and
 * negative zero, exactly; Inf converts to Inf, which the reader refuses
 * naming the tensor and the element. */
static void test_f16_values(void **state)
{
	const uint16_t h[8] = { 0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001, 0x03ff, 0x8001, 0x8000 };
	const float want[8] = {
		1.0f, -2.0f, 0.333251953125f, 65504.0f, ldexpf(1, -24), ldexpf(1023, -24),
		-ldexpf(1, -24), -0.0f,
	};
	unsigned char bytes[16];
	float got[2];

	le16(bytes, h, 8);
	read_expect(put("f16.st", "{\"h\":{\"dtype\":\"F16\",\"shape\":[8],"
			"\"data_offsets\":[0,16]}}", bytes, sizeof bytes), DTYPE_F16, want, 8);

	/* the conversion alone, from an odd address */
	const uint16_t inf[2] = { 0x7c00, 0xfc00 };
	unsigned char odd[5];
	le16(odd + 1, inf, 2);
	dtype_to_f32(got, odd + 1, 2, DTYPE_F16);
	assert_true(isinf(got[0]) && got[0] > 0);
	assert_true(isinf(got[1]) && got[1] < 0);

	const uint16_t bad[3] = { 0x3c00, 0x3c00, 0x7c00 };
	le16(bytes, bad, 3);
	const char *p = put("f16-inf.st", "{\"h\":{\"dtype\":\"F16\",\"shape\":[3],"
			    "\"data_offsets\":[0,6]}}", bytes, 6);
	read_fails(p, NULL, "h", "tensor h has a non-finite value at element 2");
}

/* BF16 reads as the top half of an F32: 1, -3, 3.140625, the largest
 * finite value, a subnormal (2^-133) and negative zero, exactly; Inf
 * converts to Inf and is refused. */
static void test_bf16_values(void **state)
{
	const uint16_t h[6] = { 0x3f80, 0xc040, 0x4049, 0x7f7f, 0x0001, 0x8000 };
	const float want[6] = {
		1.0f, -3.0f, 3.140625f, ldexpf(255, 120), ldexpf(1, -133), -0.0f,
	};
	unsigned char bytes[12];
	float got[1];

	le16(bytes, h, 6);
	read_expect(put("bf16.st", "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3,2],"
			"\"data_offsets\":[0,12]}}", bytes, sizeof bytes), DTYPE_BF16, want, 6);

	const uint16_t inf = 0xff80;
	le16(bytes, &inf, 1);
	dtype_to_f32(got, bytes, 1, DTYPE_BF16);
	assert_true(isinf(got[0]) && got[0] < 0);
	const char *p = put("bf16-inf.st", "{\"b\":{\"dtype\":\"BF16\",\"shape\":[1],"
			    "\"data_offsets\":[0,2]}}", bytes, 2);
	read_fails(p, NULL, "b", "tensor b has a non-finite value at element 0");
}

/* A dtype other than F32, F16 and BF16 is refused naming the tensor and
 * the dtype; with other_dtypes it is listed (its size known for I64,
 * unknown for a made-up name) and st_read refuses it instead. */
static void test_unknown_dtype(void **state)
{
	const unsigned char zeros[16] = { 0 };
	const char *p = put("i64.st", "{\"ids\":{\"dtype\":\"I64\",\"shape\":[2],"
			    "\"data_offsets\":[0,16]}}", zeros, 16);
	open_fails(p, NULL, "tensor ids has unsupported dtype \"I64\"");

	const struct st_checks lax = { .other_dtypes = true };
	struct st_file f;
	open_ok(&f, p, &lax);
	assert_int_equal(f.t[0].dtype, DTYPE_OTHER);
	assert_int_equal(f.t[0].esize, 8);
	st_close(&f);
	read_fails(p, &lax, "ids", "tensor ids has dtype I64, which attnscope does not read");

	p = put("q4.st", "{\"q\":{\"dtype\":\"Q4\",\"shape\":[5],"
		"\"data_offsets\":[0,3]}}", zeros, 3);
	open_fails(p, NULL, "tensor q has unsupported dtype \"Q4\"");
	open_ok(&f, p, &lax);
	assert_int_equal(f.t[0].esize, 0);
	st_close(&f);

	p = put("dtnum.st", "{\"q\":{\"dtype\":4,\"shape\":[1],"
		"\"data_offsets\":[0,4]}}", zeros, 4);
	open_fails(p, &lax, "tensor q: dtype missing or not a string");
}

/* ------------------------------------------------------------ broken files */

/* A file cut short is refused: shorter than the length word, a header
 * length past the end of the file, and data that ends before a tensor's
 * range does (naming the tensor). */
static void test_truncated(void **state)
{
	const unsigned char five[5] = { 2, 0, 0, 0, 0 };
	open_fails(put_bytes("short.st", five, 5), NULL, "file too short (5 bytes; truncated?)");

	unsigned char w[20] = { 100 };
	open_fails(put_bytes("hlen.st", w, sizeof w), NULL,
		   "header length 100 runs past the end of the file (20 bytes; truncated?)");

	const float x[2] = { 1, 2 };
	const char *p = put("cut.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],"
			    "\"data_offsets\":[0,16]}}", x, sizeof x);
	open_fails(p, NULL, "tensor w: data_offsets [0, 16] run past the end of the data "
		   "(8 bytes; truncated?)");
}

/* A header that is not JSON, not an object, or too short to be either is
 * refused saying so. */
static void test_bad_header(void **state)
{
	open_fails(put("nojson.st", "{\"w\": nope}", NULL, 0), NULL, "header is not valid JSON");
	open_fails(put("array.st", "[1, 2]", NULL, 0), NULL, "header is not a JSON object");
	open_fails(put("scalar.st", "42", NULL, 0), NULL, "header is not a JSON object");
	open_fails(put("one.st", "{", NULL, 0), NULL, "header of 1 bytes is too short for JSON");
	open_fails(put("entry.st", "{\"w\": [1]}", NULL, 0), NULL,
		   "tensor w: entry is not an object");
}

/* data_offsets outside the data are refused naming the tensor: beginning
 * after they end, ending past the data, or not two non-negative integers. */
static void test_offsets_outside(void **state)
{
	const unsigned char zeros[16] = { 0 };
	open_fails(put("rev.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
		       "\"data_offsets\":[8,4]}}", zeros, 16), NULL,
		   "tensor w: data_offsets [8, 4] begin after they end");
	open_fails(put("past.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
		       "\"data_offsets\":[16,20]}}", zeros, 16), NULL,
		   "tensor w: data_offsets [16, 20] run past the end of the data (16 bytes");
	const char *bad[] = { "[-4,0]", "[0]", "[0,4,4]", "\"0-4\"", "[0,4.0]" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char hdr[128];
		snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
			 "\"data_offsets\":%s}}", bad[i]);
		open_fails(put("offs.st", hdr, zeros, 16), NULL,
			   "tensor w: data_offsets must be two non-negative integers");
	}
}

/* Two tensors that share bytes are refused naming both and their ranges;
 * an empty tensor holds no bytes and overlaps nothing. */
static void test_overlap(void **state)
{
	const unsigned char zeros[16] = { 0 };
	open_fails(put("overlap.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
		       "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
		       "\"data_offsets\":[4,12]}}", zeros, 16), NULL,
		   "tensors a [0, 8) and b [4, 12) overlap");
	open_fails(put("same.st", "{\"b\":{\"dtype\":\"F16\",\"shape\":[4],"
		       "\"data_offsets\":[8,16]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
		       "\"data_offsets\":[8,16]}}", zeros, 16), NULL, "overlap");

	struct st_file f;
	open_ok(&f, put("empty.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
			"\"data_offsets\":[0,8]},\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],"
			"\"data_offsets\":[4,4]}}", zeros, 8), NULL);
	assert_int_equal(st_find(&f, "e")->n, 0);
	st_close(&f);
}

/* A shape whose element count does not match the byte range, a shape that
 * is not a list of non-negative integers, and one too large to count are
 * refused naming the tensor; a name with a newline stays on one line. */
static void test_shape_vs_bytes(void **state)
{
	const unsigned char zeros[16] = { 0 };
	open_fails(put("span.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), NULL,
		   "tensor w: data_offsets span 8 bytes, but 3 F32 elements take 12");
	open_fails(put("span16.st", "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,2],"
		       "\"data_offsets\":[0,16]}}", zeros, 16), NULL,
		   "tensor w: data_offsets span 16 bytes, but 4 BF16 elements take 8");
	open_fails(put("shape-str.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), NULL,
		   "tensor w: shape is not a list of at most 8 non-negative integers");
	open_fails(put("shape-neg.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), NULL,
		   "tensor w: shape is not a list");
	open_fails(put("shape-9.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), NULL,
		   "tensor w: shape is not a list");
	open_fails(put("shape-big.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":"
		       "[4294967296,4294967296],\"data_offsets\":[0,8]}}", zeros, 16), NULL,
		   "tensor w: shape is absurdly large");
	open_fails(put("shape-nl.st", "{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[3],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), NULL, "tensor a?b: data_offsets span");
}

/* ------------------------------------------------------ metadata and find */

/* __metadata__ is handed over as it is (an object of strings here), is no
 * tensor, and is NULL when the file has none. */
static void test_metadata(void **state)
{
	const float x[1] = { 7 };
	struct st_file f;
	open_ok(&f, put("meta.st", "{\"__metadata__\":{\"format\":\"demo\",\"n\":\"3\"},"
			"\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
			x, sizeof x), NULL);
	assert_int_equal(f.n, 1);
	assert_true(json_is_object(f.meta));
	assert_string_equal(json_string_value(json_object_get(f.meta, "format")), "demo");
	assert_null(st_find(&f, "__metadata__"));
	st_close(&f);

	open_ok(&f, put("nometa.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
			"\"data_offsets\":[0,4]}}", x, sizeof x), NULL);
	assert_null(f.meta);
	st_close(&f);
}

/* st_find returns the tensor of that exact name, and NULL for a name the
 * file does not have (a prefix, a longer name, the empty name). */
static void test_find(void **state)
{
	const float x[3] = { 1, 2, 3 };
	struct st_file f;
	open_ok(&f, put("find.st", "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
			"\"data_offsets\":[0,4]},\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2],"
			"\"data_offsets\":[4,12]}}", x, sizeof x), NULL);
	assert_int_equal(f.n, 2);
	struct st_tensor *t = st_find(&f, "wpe.weight");
	assert_non_null(t);
	assert_string_equal(t->name, "wpe.weight");
	assert_int_equal(t->n, 2);
	assert_ptr_equal(st_find(&f, "wte.weight"), &f.t[0]);
	assert_null(st_find(&f, "missing"));
	assert_null(st_find(&f, "wte"));
	assert_null(st_find(&f, "wte.weight2"));
	assert_null(st_find(&f, ""));
	st_close(&f);
}

/* ---------------------------------------------------------------- hooks */

struct hook_log {
	int meta_calls, expect_calls;
	bool refuse_meta;
};

static int hook_meta(void *ctx, json_t *meta, struct err *e)
{
	struct hook_log *h = ctx;
	h->meta_calls++;
	if (h->refuse_meta)
		return err_set(e, "not ours (%s)", meta ? "metadata" : "none");
	return 0;
}

/* Takes "w" as [2, 2] and "any" in any shape. */
static int hook_expect(void *ctx, const char *name, uint64_t *shape, int *ndim,
		       struct err *e)
{
	struct hook_log *h = ctx;
	h->expect_calls++;
	if (strcmp(name, "any") == 0) {
		*ndim = -1;
		return 0;
	}
	if (strcmp(name, "w") != 0)
		return err_set(e, "unexpected tensor \"%s\"", name);
	shape[0] = shape[1] = 2;
	*ndim = 2;
	return 0;
}

/* The format's hooks run in its order: the metadata before any entry (its
 * refusal is the message, and no entry is looked at), each name before its
 * entry (an unknown name is refused even where its entry is broken), then
 * the expected shape, named in the message with who expects it. */
static void test_hooks(void **state)
{
	const unsigned char zeros[16] = { 0 };
	struct hook_log log = { 0 };
	const struct st_checks c = {
		.meta = hook_meta, .expect = hook_expect, .expect_by = "the config", .ctx = &log,
	};
	struct st_file f;

	open_ok(&f, put("hook-ok.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],"
			"\"data_offsets\":[0,16]},\"any\":{\"dtype\":\"F32\",\"shape\":[0],"
			"\"data_offsets\":[0,0]}}", zeros, 16), &c);
	assert_int_equal(log.meta_calls, 1);
	assert_int_equal(log.expect_calls, 2);
	st_close(&f);

	log = (struct hook_log){ .refuse_meta = true };
	open_fails(put("hook-meta.st", "{\"w\": 1}", NULL, 0), &c, "not ours (none)");
	assert_int_equal(log.expect_calls, 0);

	log = (struct hook_log){ 0 };
	open_fails(put("hook-name.st", "{\"v\": 1}", NULL, 0), &c, "unexpected tensor \"v\"");
	open_fails(put("hook-shape.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],"
		       "\"data_offsets\":[0,8]}}", zeros, 16), &c,
		   "tensor w has shape [4], but the config needs [2, 2]");
	open_fails(put("hook-list.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":4,"
		       "\"data_offsets\":[0,16]}}", zeros, 16), &c,
		   "tensor w: shape is not a list of at most 8 non-negative integers "
		   "(expected [2, 2])");
}

/* ------------------------------------------------- transposed, in blocks */

/* ld_shards_read_t (a Conv1D weight [in, out] into the engine's (out, in))
 * on a matrix larger than one of its blocks, with a short last block and a
 * width that is no multiple of its 16-column tiles: every element lands at
 * its transposed place, as a naive transpose puts it, in F32 and in BF16;
 * st_read_rows reads a middle run of rows as they are; a NaN in the second
 * block is named by its index in the file's tensor, not in the block. */
static void test_read_transposed(void **state)
{
	enum { D0 = 700, D1 = 100 }; /* 280 KB: more than one 256 KB block */
	float *x = xmalloc((size_t)D0 * D1 * sizeof *x), *got = xmalloc(sizeof(float) * D0 * D1);
	uint16_t *h = xmalloc((size_t)D0 * D1 * sizeof *h);
	for (size_t i = 0; i < (size_t)D0 * D1; i++) {
		h[i] = (uint16_t)(0x3f80 + i % 113 + ((i % 7) << 8)); /* BF16, exact in F32 */
		uint32_t u = (uint32_t)h[i] << 16;
		memcpy(&x[i], &u, sizeof u);
	}
	char hdr[256];
	snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":"
		 "[0,%zu]},\"b\":{\"dtype\":\"BF16\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
		 D0, D1, sizeof(float) * D0 * D1, D0, D1, sizeof(float) * D0 * D1,
		 sizeof(float) * D0 * D1 + sizeof(uint16_t) * D0 * D1);
	size_t nb = (sizeof(float) + sizeof(uint16_t)) * D0 * D1;
	unsigned char *data = xmalloc(nb);
	memcpy(data, x, sizeof(float) * D0 * D1);
	memcpy(data + sizeof(float) * D0 * D1, h, sizeof(uint16_t) * D0 * D1);
	const char *p = put("t.st", hdr, data, nb);
	struct ld_shards s = { .n = 0 };
	struct err e = { "" };
	assert_int_equal(ld_shards_open_file(p, &s, &e), 0);
	static const char *const names[] = { "w", "b" };
	for (int k = 0; k < 2; k++) {
		memset(got, 0, sizeof(float) * D0 * D1);
		assert_int_equal(ld_shards_read_t(&s, names[k], D0, D1, got, &e), 0);
		for (size_t i = 0; i < D0; i++)
			for (size_t o = 0; o < D1; o++)
				if (got[o * D0 + i] != x[i * D1 + o])
					fail_msg("%s: (%zu, %zu) holds %g, not %g", names[k], o, i,
						 got[o * D0 + i], x[i * D1 + o]);
	}
	struct st_file *f;
	struct st_tensor *t = ld_shards_find(&s, "w", &f);
	assert_int_equal(st_read_rows(f, t, 650, 30, got, &e), 0);
	assert_same_floats(got, x + 650 * D1, 30 * D1);
	ld_shards_close(&s);

	x[680 * D1 + 7] = NAN;
	memcpy(data, x, sizeof(float) * D0 * D1);
	p = put("t-nan.st", hdr, data, nb);
	assert_int_equal(ld_shards_open_file(p, &s, &e), 0);
	assert_int_equal(ld_shards_read_t(&s, "w", D0, D1, got, &e), -1);
	assert_string_equal(e.msg, "tensor w has a non-finite value at element 68007");
	ld_shards_close(&s);
	free(x);
	free(h);
	free(got);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f32_values),
		cmocka_unit_test(test_f16_values),
		cmocka_unit_test(test_bf16_values),
		cmocka_unit_test(test_unknown_dtype),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_header),
		cmocka_unit_test(test_offsets_outside),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_shape_vs_bytes),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_read_transposed),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
