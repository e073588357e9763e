/*
 * tok_expect.h — tokenizer expectation tables (tests/data/gpt2_expect.tsv,
 * llama2c_expect.tsv, ...), shared by test_bpe.c, test_llama2c_tok.c and
 * test_hfjson.c.
 *
 * A table holds "hex TAB ids TAB bad TAB json" rows ('#' lines are
 * comments): the text's bytes in hex, the expected ids (space separated),
 * the expected count of invalid UTF-8 bytes, and the text as JSON (unused
 * here).  The ids "refused" mean that encoding must fail with a one-line
 * error.  An optional fifth field holds the expected decode in hex, for a
 * tokenizer whose decode is not the text (a Metaspace decoder drops a
 * leading space).  No cmocka here (support files are linked into the tools too):
 * failures are printed to stderr and counted; the caller asserts.
 */
#ifndef TOK_EXPECT_H
#define TOK_EXPECT_H

#include "tokenizer.h"

/* The shared directory: $ATTNSCOPE_SHARED, or "../shared". */
const char *tok_expect_shared_dir(void);

/* The decompressed text of tests/data/tokenizers/NAME.json.gz (malloc'd,
 * NUL-terminated, its length in *len), or NULL when gzip fails. */
char *tok_expect_gz_text(const char *name, size_t *len);

/*
 * Encodes every row of the table at path with t and checks the ids, the
 * bad-byte count and the round trip (decode(encode(s)) is s with every
 * invalid byte replaced by U+FFFD, or the row's fifth field).  An
 * unreadable or malformed table, or one with fewer than min_rows rows, is
 * one failure.  Returns the number of
 * failures (0 when everything matches), each reported on stderr.
 */
int tok_expect_check(const struct tokenizer *t, const char *path, int min_rows);

#endif
