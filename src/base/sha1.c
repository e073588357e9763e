/*
 * sha1.c — SHA-1 after FIPS 180-4 section 6.1, and Git's blob id (see sha1.h).
 */
#include "sha1.h"

#include <stdio.h>
#include <string.h>

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

/* One 64-byte block into the state. */
static void sha1_block(struct sha1 *c, const unsigned char *p)
{
	uint32_t w[80], a = c->h[0], b = c->h[1], d = c->h[3], e = c->h[4], cc = c->h[2];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & cc) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ cc ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & cc) | (b & d) | (cc & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ cc ^ d;
			k = 0xca62c1d6;
		}
		uint32_t t = ROL(a, 5) + f + e + k + w[i];
		e = d;
		d = cc;
		cc = ROL(b, 30);
		b = a;
		a = t;
	}
	c->h[0] += a;
	c->h[1] += b;
	c->h[2] += cc;
	c->h[3] += d;
	c->h[4] += e;
}

void sha1_init(struct sha1 *c)
{
	static const uint32_t h0[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
					0xc3d2e1f0 };
	memcpy(c->h, h0, sizeof h0);
	c->len = 0;
	c->fill = 0;
}

void sha1_update(struct sha1 *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	c->len += n;
	while (n > 0) {
		if (c->fill == 0 && n >= 64) {
			sha1_block(c, p);
			p += 64;
			n -= 64;
			continue;
		}
		size_t k = 64 - c->fill < n ? 64 - c->fill : n;
		memcpy(c->buf + c->fill, p, k);
		c->fill += k;
		p += k;
		n -= k;
		if (c->fill == 64) {
			sha1_block(c, c->buf);
			c->fill = 0;
		}
	}
}

void sha1_final(struct sha1 *c, char hex[SHA1_HEX])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padn = (c->fill < 56 ? 56 : 120) - c->fill;
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(c, pad, padn);
	sha1_update(c, lenb, 8);
	for (int i = 0; i < 5; i++)
		snprintf(hex + 8 * i, 9, "%08x", c->h[i]);
}

void sha1_git_blob(struct sha1 *c, uint64_t size)
{
	char head[32];
	int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)size);
	sha1_init(c);
	sha1_update(c, head, (size_t)n + 1); /* with its NUL */
}
