/*
 * utf8.c — decoding and encoding UTF-8 one code point at a time, shared
 * by the tokenizers, the renderers and the store (see utf8.h).
 */
#include "utf8.h"

#include <stdio.h>
#include <string.h>

/* Marks the byte at s[0] as invalid: U+FFFD, one byte consumed. */
static int utf8_bad(uint32_t *cp, int *bad)
{
	*cp = 0xFFFD;
	if (bad)
		*bad = 1;
	return 1;
}

int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp, int *bad)
{
	uint32_t c, min;
	int need, i;

	if (bad)
		*bad = 0;
	if (len == 0) {
		/* Nothing to decode: no byte consumed. */
		*cp = 0xFFFD;
		if (bad)
			*bad = 1;
		return 0;
	}
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		min = 0x80;
		c &= 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		min = 0x800;
		c &= 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		min = 0x10000;
		c &= 0x07;
	} else {
		/* Continuation byte, C0/C1 (always overlong) or F5..FF. */
		return utf8_bad(cp, bad);
	}
	if (len < (size_t)need + 1)
		return utf8_bad(cp, bad);
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return utf8_bad(cp, bad);
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return utf8_bad(cp, bad);
	*cp = c;
	return need + 1;
}

int utf8_encode(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;

	/* Surrogates and values past U+10FFFF have no encoding. */
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		cp = 0xFFFD;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xC0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t utf8_printable(const char *s, size_t len, char *buf, size_t size)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t w = 0;
	if (size == 0)
		return 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int bad;
		int k = utf8_decode(u + i, len - i, &cp, &bad);
		char piece[20];
		size_t n;
		if (bad || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			/* each byte of it, as \xNN */
			n = 0;
			for (int b = 0; b < k && n + 4 < sizeof piece; b++)
				n += (size_t)snprintf(piece + n, sizeof piece - n, "\\x%02x", u[i + b]);
		} else if (cp == '\\') {
			memcpy(piece, "\\\\", 2);
			n = 2;
		} else {
			memcpy(piece, u + i, (size_t)k);
			n = (size_t)k;
		}
		if (w + n + 1 > size)
			break;
		memcpy(buf + w, piece, n);
		w += n;
		i += (size_t)k;
	}
	buf[w] = '\0';
	return w;
}
