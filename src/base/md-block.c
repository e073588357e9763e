/*
 * md-block.c — the 64-byte block buffering and padding SHA-1 and SHA-256
 * share (see md-block.h).
 */
#include "md-block.h"

#include <stdio.h>
#include <string.h>

void md_block_init(struct md_block *m)
{
	m->len = 0;
	m->fill = 0;
}

void md_block_update(struct md_block *m, uint32_t *h, md_block_fn fold, const void *data, size_t n)
{
	const unsigned char *p = data;
	m->len += n;
	while (n > 0) {
		if (m->fill == 0 && n >= 64) {
			fold(h, p);
			p += 64;
			n -= 64;
			continue;
		}
		size_t k = 64 - m->fill < n ? 64 - m->fill : n;
		memcpy(m->buf + m->fill, p, k);
		m->fill += k;
		p += k;
		n -= k;
		if (m->fill == 64) {
			fold(h, m->buf);
			m->fill = 0;
		}
	}
}

void md_block_final(struct md_block *m, uint32_t *h, md_block_fn fold, int n_words, char *hex)
{
	uint64_t bits = m->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padn = (m->fill < 56 ? 56 : 120) - m->fill;
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	md_block_update(m, h, fold, pad, padn);
	md_block_update(m, h, fold, lenb, 8);
	for (int i = 0; i < n_words; i++)
		snprintf(hex + 8 * i, 9, "%08x", h[i]);
}
