/*
 * text-input.c — escapes in typed text and passages of files for `text`
 * (see text-input.h).  A passage is read from the front of its file as
 * far as it needs, never the whole file.
 */
#include "text-input.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gz.h"

char *text_unescape(const char *s)
{
	size_t n = strlen(s), w = 0;
	char *out = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && (s[i + 1] == 'n' || s[i + 1] == 't' || s[i + 1] == '\\')) {
			char k = s[++i];
			c = k == 'n' ? '\n' : k == 't' ? '\t' : '\\';
		}
		out[w++] = c;
	}
	out[w] = '\0';
	return out;
}

char *text_escape(const char *s)
{
	size_t n = strlen(s), w = 0;
	char *out = xmalloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' || c == '\n' || c == '\t') {
			out[w++] = '\\';
			c = c == '\n' ? 'n' : c == '\t' ? 't' : '\\';
		}
		out[w++] = c;
	}
	out[w] = '\0';
	return out;
}

/* Byte offset of character k of s[0 .. len) (len when k is past the end);
 * *count gets the characters counted on the way (<= k). */
static size_t char_offset(const char *s, size_t len, long k, long *count)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t p = 0;
	long c = 0;
	while (p < len && c < k) {
		uint32_t cp;
		int bad;
		p += (size_t)utf8_decode(u + p, len - p, &cp, &bad);
		c++;
	}
	*count = c;
	return p;
}

/* Tokens t makes of s[0 .. len), BOS left out; -1 on an encoder error. */
static int count_tokens(const struct tokenizer *t, const char *s, size_t len)
{
	int *ids = NULL, n = 0;
	struct err e;
	if (tok_encode(t, s, len, 0, &ids, &n, &e) < 0)
		n = -1;
	free(ids);
	return n;
}

/* A file read from the front as far as a passage needs: buf[0 .. len)
 * holds the bytes from the current position on. */
struct reader {
	struct gz_stream *in; /* inflated as read when the file is gzip */
	char *buf;
	size_t len, cap;
	unsigned long long at; /* the file offset of buf[0] */
	bool eof;
};

#define READ_CHUNK ((size_t)1 << 16)

/* Reads until r holds at least want bytes or the file ends: 0, or -1 + e. */
static int fill(struct reader *r, size_t want, const char *path, struct err *e)
{
	while (r->len < want && !r->eof) {
		if (r->cap < want) {
			r->cap = want > 2 * r->cap ? want : 2 * r->cap;
			r->buf = xrealloc(r->buf, r->cap + 1);
		}
		long k = gz_stream_read(r->in, r->buf + r->len, r->cap - r->len, path, e);
		if (k < 0)
			return -1;
		r->eof = k == 0;
		r->len += (size_t)k;
	}
	return 0;
}

/* Drops r's first p bytes. */
static void drop(struct reader *r, size_t p)
{
	if (r->len > p)
		memmove(r->buf, r->buf + p, r->len - p);
	r->len -= p;
	r->at += p;
}

/* Drops the first k characters from r, reading on in chunks (memory stays
 * one chunk); *count gets the characters dropped (< k at the end of the
 * file).  0, or -1 + e. */
static int skip_chars(struct reader *r, long k, long *count, const char *path, struct err *e)
{
	const unsigned char *u;
	size_t p = 0;
	long c = 0;
	for (;;) {
		if (r->len - p < 4 && !r->eof) { /* a character may continue past len */
			drop(r, p);
			p = 0;
			if (fill(r, READ_CHUNK, path, e))
				return -1;
		}
		if (c >= k || p >= r->len)
			break;
		uint32_t cp;
		int bad;
		u = (const unsigned char *)r->buf;
		p += (size_t)utf8_decode(u + p, r->len - p, &cp, &bad);
		c++;
	}
	drop(r, p);
	*count = c;
	return 0;
}

/* The longest prefix of r's characters that t encodes into at most
 * max_tokens tokens, in characters (0: not even one), by bisection over
 * its length: first doubling a window from max_tokens characters (a token
 * spells one character or more) until it holds too many tokens or the
 * file ends, reading only what the window needs.  *cap gets the bytes the
 * window held; -1 + e on a read error. */
static long fitting_prefix(const struct tokenizer *t, struct reader *r, int max_tokens,
			   size_t *cap, const char *path, struct err *e)
{
	long avail, lo = 0; /* a prefix of lo characters fits */
	if (fill(r, 4 * (size_t)max_tokens + 4, path, e))
		return -1;
	*cap = char_offset(r->buf, r->len, max_tokens, &avail);
	for (;;) {
		int n = count_tokens(t, r->buf, *cap);
		if (n < 0 || n > max_tokens)
			break;
		lo = avail;
		if ((*cap >= r->len && r->eof) || avail > LONG_MAX / 16)
			break;
		if (fill(r, 8 * (size_t)avail + 4, path, e)) /* the bytes of 2 x avail characters */
			return -1;
		*cap = char_offset(r->buf, r->len, 2 * avail, &avail);
	}
	long hi = avail; /* an upper bound */
	while (lo < hi) {
		long mid = lo + (hi - lo + 1) / 2, got;
		int n = count_tokens(t, r->buf, char_offset(r->buf, *cap, mid, &got));
		if (n >= 0 && n <= max_tokens)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int text_passage(const struct tokenizer *t, const char *path, long offset, int max_tokens,
		 struct text_passage *p, struct err *e)
{
	memset(p, 0, sizeof *p);
	struct reader r = { 0 };
	struct stat st;
	int rc = -1, fd = open_regular(path, e);
	if (fd < 0)
		return err_prefix(e, "%s", path);
	if (fstat(fd, &st) != 0) {
		close(fd);
		return err_set(e, "%s: %s", path, strerror(errno));
	}
	if (!(r.in = gz_stream_open(fd, path, e)))
		return -1;
	p->file_bytes = (long long)st.st_size;
	if (skip_chars(&r, offset < 0 ? 0 : offset, &p->first, path, e) ||
	    fill(&r, 1, path, e))
		goto out;
	if (offset < 0 || r.len == 0) {
		err_set(e, "%s: offset %ld is past the end of its %ld characters", path, offset,
			p->first);
		goto out;
	}
	size_t cap;
	long lo = fitting_prefix(t, &r, max_tokens, &cap, path, e), got;
	if (lo < 0)
		goto out;
	if (lo == 0) {
		err_set(e, "%s: the character at offset %ld takes more than %d token%s", path, offset,
			max_tokens, max_tokens == 1 ? "" : "s");
		goto out;
	}
	size_t bytes = char_offset(r.buf, cap, lo, &got);
	const char *nul = memchr(r.buf, '\0', bytes); /* only the passage is looked at */
	if (nul) {
		err_set(e, "%s: NUL byte at offset %llu; not a text file", path,
			r.at + (unsigned long long)(nul - r.buf));
		goto out;
	}
	p->text = xstrndup(r.buf, bytes);
	p->chars = lo;
	p->tokens = count_tokens(t, r.buf, bytes);
	rc = 0;
out:
	gz_stream_close(r.in);
	free(r.buf);
	return rc;
}
