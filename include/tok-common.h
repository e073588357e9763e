/*
 * tok-common.h — private to the tokenizer modules: the helpers the
 * tok-*.c kinds share, and the builders tokenizer.c's table calls.  Users
 * call the tokenizer API (tokenizer.h).
 *
 * None of these fail in a way the caller must handle: allocation failure
 * and jansson running out of memory are fatal (die()), as elsewhere.
 */
#ifndef ATTNSCOPE_TOK_COMMON_H
#define ATTNSCOPE_TOK_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util.h"

/* Each kind's builder from its parsed JSON description (tokenizer.c's
 * table calls them; defined in tok-char.c, tok-bpe.c, tok-llama2c.c,
 * tok-hfjson.c, tok-wordpiece.c).
 * NULL + e on a bad description. */
struct tokenizer *tok_char_from_json(const json_t *root, struct err *e);
struct tokenizer *tok_bpe_from_json(const json_t *root, struct err *e);
struct tokenizer *tok_llama2c_from_json(const json_t *root, struct err *e);
struct tokenizer *tok_hfjson_from_json(const json_t *root, struct err *e);
struct tokenizer *tok_wordpiece_from_json(const json_t *root, struct err *e);

/* FNV-1a over n bytes (the vocabulary hash tables' hash). */
uint32_t tok_hash_bytes(const char *s, size_t n);

/*
 * Vocabulary hash table: byte strings -> ids, open addressing with linear
 * probing over mask + 1 slots, -1 free.  Piece id spells
 * blob[off[id] .. off[id + 1]).
 */
/* A malloc'd table of at least 2n slots (a power of two, at least 16), all
 * free; *mask = slots - 1.  The caller frees it with free(). */
int32_t *tok_vtab_new(size_t n, uint32_t *mask);
/* Id of the piece spelled by s[0..n), or -1 when there is none. */
int tok_vtab_find(const int32_t *vtab, uint32_t mask, const char *blob, const uint32_t *off,
		  const char *s, size_t n);
/* Enters id under s[0..n) (in the first free slot: the table must have
 * one; an earlier entry of the same bytes keeps winning tok_vtab_find). */
void tok_vtab_add(int32_t *vtab, uint32_t mask, const char *s, size_t n, int32_t id);

/* The piece op's contract (tokenizer_ops.piece): copies the len bytes at p
 * into buf, cut to size - 1 and NUL-terminated (nothing when size is 0),
 * and returns len. */
int tok_copy_piece(const char *p, size_t len, char *buf, size_t size);

/* Serialises root compactly, keys in order (every kind's to_json), into
 * a malloc'd string (the caller frees it with free()) and drops the
 * reference to root.  Builders use json-util.h, which dies when jansson
 * runs out of memory. */
char *tok_json_dump(json_t *root);

/* {"type": type, "json": the source file's text}: the to_json of a kind
 * rebuilt from the file it was read from (tokenizer.json, vocab.txt). */
char *tok_source_json(const char *type, const char *json, size_t len);

/*
 * Whether the adjacent tokens a, b merge: when they do, sets *key (lower
 * merges first; equal keys merge leftmost first) and *out (the merged id)
 * and returns true.  ctx is the caller's.
 */
typedef bool (*tok_merge_fn)(const void *ctx, int a, int b, double *key, int *out);

/*
 * Pairwise merging, as BPE and sentencepiece do it: repeatedly merges the
 * adjacent pair of tok[0..n) that merge() ranks first (lowest key, then
 * leftmost) until no adjacent pair merges, in O(n log n).  Leaves the
 * resulting ids in tok[0..k) and returns k (0 when n <= 0).  Allocates
 * and frees its own scratch; tok stays the caller's.
 */
int tok_merge_pairs(int *tok, int n, tok_merge_fn merge, const void *ctx);

/*
 * Unicode Normalization Form C (UAX #15; tok-nfc.c, with the tables of
 * tok_nfc_unicode_version(), Unicode 14.0.0).  The text s[0..len) is
 * UTF-8 and should be valid (tokenizers pass it after
 * tok_replace_invalid); an invalid byte is read as U+FFFD.
 *
 * tok_nfc_check: whether NFC certainly leaves the text unchanged, by the
 * quick check.  False, with the first code point in doubt and its byte
 * offset in *cp and *at, when the text holds a code point NFC may compose
 * or replace, or combining marks out of canonical order (NFC may still
 * leave such text as it is).
 *
 * tok_nfc: the NFC form of the text (canonical decomposition, canonical
 * ordering, canonical composition), as a malloc'd NUL-terminated string of
 * *out_len bytes the caller frees.  Text the quick check passes is copied
 * unchanged.  Never NULL (running out of memory is fatal).
 */
bool tok_nfc_check(const char *s, size_t len, uint32_t *cp, size_t *at);
char *tok_nfc(const char *s, size_t len, size_t *out_len);

/* The full canonical decomposition of one code point (Unicode's NFD of it
 * alone; Hangul syllables by arithmetic) into out, cp itself when it has
 * none; returns the count, at most TOK_NFD_MAX.  The tables of
 * tok_nfc_unicode_version(). */
#define TOK_NFD_MAX 4
int tok_nfd_char(uint32_t cp, uint32_t out[TOK_NFD_MAX]);
const char *tok_nfc_unicode_version(void);

/* GPT-2's bytes_to_unicode(): bytes ! .. ~, ¡ .. ¬ and ® .. ÿ map to their
 * own code points, the remaining 68 to 256, 257, ... in byte order; u2b is
 * the inverse (-1 for code points no byte maps to). */
void tok_gpt2_byte_map(uint32_t b2u[256], int16_t u2b[324]);

/* text[0..len) with each invalid UTF-8 byte replaced by U+FFFD: a malloc'd
 * copy (NUL-terminated, *out_len bytes), or NULL when every byte is valid
 * (*out_len = len).  *nbad counts the replaced bytes. */
char *tok_replace_invalid(const char *text, size_t len, size_t *out_len, int *nbad);

/*
 * A BPE merge table: the pair of ids (a, b) -> its rank (lower merges
 * first) and the id it merges into; open addressing over mask + 1 slots.
 */
struct tok_merges {
	uint64_t *key;		/* (a << 32 | b) + 1, 0 free */
	int32_t *rank, *out;
	uint32_t mask;
};
/* Room for n merges (at least 2n + 2 slots). */
void tok_merges_init(struct tok_merges *m, size_t n);
/* Adds (a, b) -> out at rank; false, changing nothing, when the pair is
 * there already (a repeated merge keeps its first, better rank). */
bool tok_merges_add(struct tok_merges *m, int a, int b, int rank, int out);
/* The rank of merging (a, b) with the result in *out, or -1 when the pair
 * does not merge. */
int tok_merges_find(const struct tok_merges *m, int a, int b, int *out);
void tok_merges_free(struct tok_merges *m);

/* The largest tokenizer file read whole (vocab.txt, merges.txt,
 * tokenizer.bin): 256 MiB, far above any published one; a larger file is
 * refused by its size before it is read (read_file_max). */
#define TOK_FILE_MAX ((size_t)256 << 20)

#endif
