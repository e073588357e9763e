/*
 * tokenizer.h — text <-> token ids, behind one interface so that character,
 * byte-level BPE and sentencepiece-style vocabularies plug in alike.
 *
 * Text is UTF-8.  Invalid UTF-8 is never fatal: each bad byte decodes as
 * U+FFFD and the encoder reports how many it replaced.
 */
#ifndef ATTNSCOPE_TOKENIZER_H
#define ATTNSCOPE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "utf8.h"
#include "util.h"

struct tokenizer;

struct tokenizer_ops {
	const char *kind; /* "char", "gpt2-bpe", ... */
	/* Appends ids for text[0..len) to *ids (growing it, *cap its capacity).
	 * Returns the number of invalid UTF-8 bytes replaced, or -1 with e set. */
	int (*encode)(const struct tokenizer *t, const char *text, size_t len,
		      int **ids, int *n, int *cap, struct err *e);
	/* Exact bytes of one token, written to buf (NUL-terminated, truncated to
	 * size).  Returns the byte length, which may exceed size-1.  WordPiece
	 * gives the vocabulary's string ("##ing"); its decode drops the "##". */
	int (*piece)(const struct tokenizer *t, int id, char *buf, size_t size);
	/* JSON text describing the vocabulary for checkpoint metadata; malloc'd. */
	char *(*to_json)(const struct tokenizer *t);
	void (*free)(struct tokenizer *t);
	/* Optional: decodes a whole sequence when that is not the plain
	 * concatenation of pieces (sentencepiece drops the leading space of the
	 * first piece and of a piece after BOS).  Malloc'd.  NULL = concatenate. */
	char *(*decode)(const struct tokenizer *t, const int *ids, int n);
};

/* Ownership: ops->free releases impl; tok_free() then frees the struct.
 * Ids outside the vocabulary have an empty piece and the label "<bad id N>". */
struct tokenizer {
	const struct tokenizer_ops *ops;
	int vocab_size;
	int bos_id;  /* -1 when the vocabulary has none */
	int eos_id;  /* what tok_encode appends after the text with add_bos (BERT's
		      * [SEP] closing [CLS] ... [SEP], RoBERTa's </s> closing
		      * <s> ... </s>: "wordpiece", a tokenizer.json with
		      * RobertaProcessing or BertProcessing, a "gpt2-bpe" given
		      * tok_bpe_wrap); -1 when nothing goes after the text */
	int unk_id;  /* -1 when the vocabulary has none */
	void *impl;  /* owned by the implementation */
};

/*
 * Encodes text into a malloc'd id array (*ids, *n; caller frees *ids).
 * With add_bos and a BOS token in the vocabulary, it comes first, and
 * eos_id, when the tokenizer has one, comes last (BERT: [CLS] text [SEP]).
 * Returns the number of invalid UTF-8 bytes replaced by U+FFFD (>= 0),
 * or -1 with e set.
 */
int tok_encode(const struct tokenizer *t, const char *text, size_t len, int add_bos,
	       int **ids, int *n, struct err *e);

/* Exact bytes of token id into buf; see tokenizer_ops.piece. */
int tok_piece(const struct tokenizer *t, int id, char *buf, size_t size);

/* Decodes ids to a malloc'd UTF-8 string (exact bytes of the pieces). */
char *tok_decode(const struct tokenizer *t, const int *ids, int n);

/* A printable label for views: control characters escaped, space shown as
 * '␣', newline as '⏎', tab as '⇥', bytes that are not valid UTF-8 as
 * <e5 ba>.  Always NUL-terminated in buf. */
void tok_label(const struct tokenizer *t, int id, char *buf, size_t size);

/* Which tokens of ids (n of them, encoded from text[0 .. len) by t, with
 * BOS first when add_bos and t has one) are <unk> and where they came
 * from.  Returns the number of <unk> tokens (0 when t has none).  When src
 * is not NULL, src[i] is the code point that became <unk> token i, or -1
 * (not <unk>, or the source is not known: only a character tokenizer maps
 * one code point to one token).  The distinct code points, in order of
 * first appearance, go to cps (at most max_cps of them; *n_cps counts all
 * distinct ones).  cps may be NULL when max_cps is 0. */
int tok_unknown(const struct tokenizer *t, const char *text, size_t len, int add_bos,
		const int *ids, int n, int32_t *src, uint32_t *cps, int max_cps, int *n_cps);

/* Builds a tokenizer from the JSON written by to_json.  NULL + e on error. */
struct tokenizer *tok_from_json(const char *json, struct err *e);

void tok_free(struct tokenizer *t);

/* ---------------------------------------------------- character tokenizer */

/*
 * A character-level vocabulary over Unicode code points.  `specials` picks
 * the whole tokens before the characters:
 *   TOK_CHAR_PLAIN  0 = "<unk>"
 *   TOK_CHAR_BOS    0 = "<unk>", 1 = "<bos>" (bos_id)
 *   TOK_CHAR_MLM    0 = "<unk>", 1 = "[CLS]" (bos_id), 2 = "[SEP]" (eos_id),
 *                   3 = "[MASK]" (tok_char_mask_id): a masked-LM encoder's,
 *                   so tok_encode with add_bos gives [CLS] text [SEP]
 * then one id per code point in the order given.  cps need not be sorted;
 * duplicates are an error.  Under TOK_CHAR_MLM a typed "[MASK]" encodes
 * to its id, as BERT's tokenizers read it (so `text To be, or [MASK]ot`
 * asks the encoder for the hidden letter); no other special token is ever
 * produced by encoding text: a typed "[CLS]" is its five characters, so
 * no text can fake the model's markers.  (0 and 1 are the values of the
 * former with_bos flag.)
 */
enum { TOK_CHAR_PLAIN = 0, TOK_CHAR_BOS = 1, TOK_CHAR_MLM = 2 };
struct tokenizer *tok_char_new(const uint32_t *cps, int n, int specials, struct err *e);

/* The id of "[MASK]" of a TOK_CHAR_MLM character vocabulary, else -1. */
int tok_char_mask_id(const struct tokenizer *t);

/* The number of special ids before the characters (1, 2 or 4) of a
 * character vocabulary, else -1. */
int tok_char_specials(const struct tokenizer *t);

/* A character vocabulary from a text: every code point occurring at least
 * min_count times (invalid UTF-8 counts as U+FFFD), in code point order;
 * rarer ones will encode as <unk>.  NULL + e when the text is empty. */
struct tokenizer *tok_char_from_text(const char *text, size_t len, int min_count,
				     int specials, struct err *e);

/* Code point of a character token, or -1 for special tokens. */
int32_t tok_char_codepoint(const struct tokenizer *t, int id);

/* ------------------------------------------- GPT-2 byte-level BPE, llama2.c */

/* GPT-2 byte-level BPE ("gpt2-bpe", src/text/tok-bpe.c) from a Hugging Face
 * directory holding vocab.json and merges.txt, or tokenizer.json; path may
 * also name a tokenizer.json file.  NULL + one-line e on error. */
struct tokenizer *tok_bpe_load(const char *path, struct err *e);

/* Makes a "gpt2-bpe" tokenizer put the pieces bos and eos around the text
 * (tok_encode with add_bos: RoBERTa's <s> ... </s>), kept through to_json.
 * 0, or -1 + e when the vocabulary lacks either (t unchanged). */
int tok_bpe_wrap(struct tokenizer *t, const char *bos, const char *eos, struct err *e);

/* A llama2.c tokenizer.bin ("llama2c", src/tok-llama2c.c).  n_pieces > 0
 * reads exactly that many pieces (a model's vocab_size) and refuses a file
 * with fewer or more; 0 reads to the end of the file. */
struct tokenizer *tok_llama2c_load(const char *path, int n_pieces, struct err *e);

/* The same from a tokenizer.bin image buf[0..len) (malloc'd; the
 * tokenizer takes it, and frees it on failure too); where names it in
 * messages. */
struct tokenizer *tok_llama2c_from_bin(unsigned char *buf, size_t len, int n_pieces,
				       const char *where, struct err *e);

/* What llama.cpp's reading of a GGUF SentencePiece vocabulary has beyond
 * llama2.c's (Gemma's files; src/text/tok-llama2c.c says how each works). */
struct tok_spm_opts {
	bool no_prefix;		/* no dummy prefix space (add_space_prefix false) */
	bool space_mark;	/* a typed U+2581 reads as a space */
	const int *whole;	/* n_whole piece ids cut out of the typed text whole,
				 * before the merges (user-defined and control tokens) */
	int n_whole;
};

/* tok_llama2c_from_bin() with the options o (copied; NULL: none).  A whole
 * piece that is no piece, or is empty, is an error. */
struct tokenizer *tok_llama2c_from_bin_opts(unsigned char *buf, size_t len, int n_pieces,
					    const struct tok_spm_opts *o, const char *where,
					    struct err *e);

#endif
