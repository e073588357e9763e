/*
 * sha1.h — SHA-1 (FIPS 180-4), fed in pieces of any size, and the Git blob
 * id built on it (what the Hugging Face hub gives as the ETag of a file
 * kept in Git rather than LFS).
 *
 * A `struct sha1` lives on the caller's stack: sha1_init, then sha1_update
 * as often as needed, then sha1_final for the digest in lowercase hex.
 * Nothing is allocated and nothing fails.  SHA-1 is used here to check a
 * download against the id the server names, not for security.
 */
#ifndef ATTNSCOPE_SHA1_H
#define ATTNSCOPE_SHA1_H

#include <stddef.h>
#include <stdint.h>

#include "md-block.h"

/* bytes of a hex digest with its NUL */
#define SHA1_HEX 41

struct sha1 {
	uint32_t h[5];          /* the chaining state */
	struct md_block m;      /* bytes fed, a block not yet full */
};

void sha1_init(struct sha1 *c);

/* Feeds n bytes at p (n 0: nothing). */
void sha1_update(struct sha1 *c, const void *p, size_t n);

/* Pads, and writes the digest of everything fed as 40 hex digits and a NUL.
 * c is spent (sha1_init again to reuse it). */
void sha1_final(struct sha1 *c, char hex[SHA1_HEX]);

/* Starts c on a Git blob of size bytes: feeds "blob SIZE\0", after which
 * the content's bytes are fed with sha1_update and sha1_final gives the
 * blob id (`git hash-object`). */
void sha1_git_blob(struct sha1 *c, uint64_t size);

#endif
