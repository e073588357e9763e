/*
 * text-input.c — escapes in typed text and passages of files for `text`
 * (see text-input.h).
 */
#include "text-input.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

int text_passage(const struct tokenizer *t, const char *path, long offset, int max_tokens,
		 struct text_passage *p, struct err *e)
{
	memset(p, 0, sizeof *p);
	size_t len;
	char *all = gz_read_file(path, &len, e);
	if (!all)
		return -1;
	long total;
	char_offset(all, len, len + 1, &total);
	size_t start = char_offset(all, len, offset, &p->first);
	if (offset < 0 || start >= len) {
		free(all);
		return err_set(e, "%s: offset %ld is past the end of its %ld characters", path, offset,
			       total);
	}
	/* the longest prefix that fits, by bisection over its length in
	 * characters: first doubling a window from max_tokens characters
	 * (a token spells one character or more) until it holds too many
	 * tokens or the file ends */
	const char *rest = all + start;
	long avail, lo = 0; /* a prefix of lo characters fits */
	size_t cap = char_offset(rest, len - start, max_tokens, &avail);
	for (;;) {
		int n = count_tokens(t, rest, cap);
		if (n < 0 || n > max_tokens)
			break;
		lo = avail;
		if (cap >= len - start || avail > LONG_MAX / 4)
			break;
		cap = char_offset(rest, len - start, 2 * avail, &avail);
	}
	long hi = avail; /* an upper bound */
	while (lo < hi) {
		long mid = lo + (hi - lo + 1) / 2, got;
		int n = count_tokens(t, rest, char_offset(rest, cap, mid, &got));
		if (n >= 0 && n <= max_tokens)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo == 0) {
		free(all);
		return err_set(e, "%s: the character at offset %ld takes more than %d token%s", path,
			       offset, max_tokens, max_tokens == 1 ? "" : "s");
	}
	long got;
	size_t bytes = char_offset(rest, cap, lo, &got);
	if (memchr(rest, '\0', bytes)) {
		size_t at = start + (size_t)((const char *)memchr(rest, '\0', bytes) - rest);
		free(all);
		return err_set(e, "%s: NUL byte at offset %zu; not a text file", path, at);
	}
	p->text = xstrndup(rest, bytes);
	p->chars = lo;
	p->file_chars = total;
	p->tokens = count_tokens(t, rest, bytes);
	free(all);
	return 0;
}
