/*
 * md-block.h — what SHA-1 and SHA-256 share (FIPS 180-4 section 5.1.1 and
 * 6): the message cut into 64-byte blocks, each folded into a state of
 * 32-bit words by the hash's own block function, then padded with a 0x80
 * byte, zeros and the length in bits as 8 big-endian bytes.
 *
 * A `struct md_block` sits inside the hash's own struct beside its state;
 * nothing is allocated and nothing fails.
 */
#ifndef ATTNSCOPE_MD_BLOCK_H
#define ATTNSCOPE_MD_BLOCK_H

#include <stddef.h>
#include <stdint.h>

struct md_block {
	uint64_t len;           /* bytes fed so far */
	unsigned char buf[64];  /* a block not yet full */
	size_t fill;            /* bytes in buf */
};

/* Folds one 64-byte block p into the state h. */
typedef void (*md_block_fn)(uint32_t *h, const unsigned char *p);

/* Empties m. */
void md_block_init(struct md_block *m);

/* Feeds n bytes at p, calling fold(h, block) for each block completed. */
void md_block_update(struct md_block *m, uint32_t *h, md_block_fn fold, const void *p, size_t n);

/* Pads what was fed and folds the last block(s); writes the n_words words
 * of h as 8 lowercase hex digits each and a NUL into hex. */
void md_block_final(struct md_block *m, uint32_t *h, md_block_fn fold, int n_words, char *hex);

#endif
