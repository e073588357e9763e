/*
 * sha1.c — SHA-1 after FIPS 180-4 section 6.1, and Git's blob id (see sha1.h).
 */
#include "sha1.h"

#include <stdio.h>
#include <string.h>

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

/* One 64-byte block into the state. */
static void sha1_block(uint32_t *h, const unsigned char *p)
{
	uint32_t w[80], a = h[0], b = h[1], d = h[3], e = h[4], cc = h[2];
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
	h[0] += a;
	h[1] += b;
	h[2] += cc;
	h[3] += d;
	h[4] += e;
}

void sha1_init(struct sha1 *c)
{
	static const uint32_t h0[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
					0xc3d2e1f0 };
	memcpy(c->h, h0, sizeof h0);
	md_block_init(&c->m);
}

void sha1_update(struct sha1 *c, const void *data, size_t n)
{
	md_block_update(&c->m, c->h, sha1_block, data, n);
}

void sha1_final(struct sha1 *c, char hex[SHA1_HEX])
{
	md_block_final(&c->m, c->h, sha1_block, 5, hex);
}

void sha1_git_blob(struct sha1 *c, uint64_t size)
{
	char head[32];
	int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)size);
	sha1_init(c);
	sha1_update(c, head, (size_t)n + 1); /* with its NUL */
}
