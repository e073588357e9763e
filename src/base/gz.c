/*
 * gz.c — files that may be gzip-compressed, read whole (gz.h).
 */
#include "gz.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

bool gz_is_gzip(const void *p, size_t n)
{
	const unsigned char *b = p;
	return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/* Inflates the n gzip bytes of in (every member) into a malloc'd buffer
 * NUL-terminated one past *len.  NULL with e set. */
static char *inflate_all(const char *path, const unsigned char *in, size_t n, size_t max,
			 const char *what, size_t *len, struct err *e)
{
	size_t cap = n < max / 3 ? n * 3 + 64 : max, used = 0;
	char *out = malloc(cap + 1);
	if (!out) {
		err_set(e, "%s: does not fit in memory inflated", path);
		return NULL;
	}
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 15 + 16) != Z_OK) /* 15 + 16: a gzip wrapper */
		die("zlib: inflateInit2 failed");
	size_t pos = 0;
	int rc = Z_OK;
	const char *why = NULL;
	while (!why) {
		if (used == cap) {
			if (cap >= max) {
				why = "big";
				break;
			}
			size_t grown = cap < max / 2 ? cap * 2 : max;
			char *more = realloc(out, grown + 1);
			if (!more) { /* too large to hold: a message, not an abort */
				why = "memory";
				break;
			}
			out = more;
			cap = grown;
		}
		size_t in_chunk = n - pos < UINT32_MAX ? n - pos : UINT32_MAX;
		size_t out_chunk = cap - used < UINT32_MAX ? cap - used : UINT32_MAX;
		z.next_in = (unsigned char *)in + pos;
		z.avail_in = (uInt)in_chunk;
		z.next_out = (unsigned char *)out + used;
		z.avail_out = (uInt)out_chunk;
		rc = inflate(&z, Z_NO_FLUSH);
		pos += in_chunk - z.avail_in;
		used += out_chunk - z.avail_out;
		if (rc == Z_STREAM_END) {
			if (pos == n)
				break;
			/* another member follows (as cat a.gz b.gz makes) */
			if (!gz_is_gzip(in + pos, n - pos) || inflateReset(&z) != Z_OK)
				why = "bytes after the end of the stream";
		} else if (rc == Z_BUF_ERROR && z.avail_out) { /* no input left to go on */
			why = "truncated";
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			why = z.msg ? z.msg : "inflate failed";
		}
	}
	inflateEnd(&z);
	if (why) {
		free(out);
		if (!strcmp(why, "big"))
			err_set(e, "%s: inflates to more than the %zu bytes %s may have", path, max,
				what ? what : "a file read whole");
		else if (!strcmp(why, "memory"))
			err_set(e, "%s: does not fit in memory inflated", path);
		else
			err_set(e, "%s: not a valid gzip file (%s)", path, why);
		return NULL;
	}
	out[used] = '\0';
	*len = used;
	return out;
}

char *gz_read_file(const char *path, size_t max, const char *what, size_t *len, struct err *e)
{
	size_t n;
	char *raw = read_file_max(path, max, what, &n, e);
	if (!raw || !gz_is_gzip(raw, n)) {
		if (raw && len)
			*len = n;
		return raw;
	}
	size_t m = 0;
	char *text = inflate_all(path, (const unsigned char *)raw, n, max, what, &m, e);
	free(raw);
	if (text && len)
		*len = m;
	return text;
}

/* ------------------------------------------------------------ streaming */

struct gz_stream {
	gzFile f;
};

struct gz_stream *gz_stream_open(int fd, const char *path, struct err *e)
{
	gzFile f = gzdopen(fd, "rb");
	if (!f) {
		close(fd);
		err_set(e, "%s: cannot read it through zlib", path);
		return NULL;
	}
	struct gz_stream *s = xmalloc(sizeof *s);
	s->f = f;
	return s;
}

long gz_stream_read(struct gz_stream *s, void *buf, size_t n, const char *path, struct err *e)
{
	unsigned chunk = n < (1u << 30) ? (unsigned)n : 1u << 30;
	int k = gzread(s->f, buf, chunk);
	if (k < 0) {
		int code;
		const char *why = gzerror(s->f, &code);
		if (code == Z_ERRNO)
			return err_set(e, "%s: read failed: %s", path, strerror(errno));
		return err_set(e, "%s: not a valid gzip file (%s)", path, why ? why : "inflate failed");
	}
	if (k == 0 && chunk) {
		int code;
		gzerror(s->f, &code);
		if (code == Z_BUF_ERROR) /* the stream ended before its trailer */
			return err_set(e, "%s: not a valid gzip file (truncated)", path);
	}
	return k;
}

void gz_stream_close(struct gz_stream *s)
{
	if (!s)
		return;
	gzclose_r(s->f);
	free(s);
}
