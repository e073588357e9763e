/*
 * sha256.h — SHA-256 (FIPS 180-4), fed in pieces of any size.
 *
 * A `struct sha256` lives on the caller's stack: sha256_init, then
 * sha256_update as often as needed, then sha256_final for the digest in
 * lowercase hex.  Nothing is allocated and nothing fails.
 */
#ifndef ATTNSCOPE_SHA256_H
#define ATTNSCOPE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "md-block.h"

/* bytes of a hex digest with its NUL */
#define SHA256_HEX 65

struct sha256 {
	uint32_t h[8];          /* the chaining state */
	struct md_block m;      /* bytes fed, a block not yet full */
};

void sha256_init(struct sha256 *c);

/* Feeds n bytes at p (n 0: nothing). */
void sha256_update(struct sha256 *c, const void *p, size_t n);

/* Pads, and writes the digest of everything fed as 64 hex digits and a NUL.
 * c is spent (sha256_init again to reuse it). */
void sha256_final(struct sha256 *c, char hex[SHA256_HEX]);

#endif
