/*
 * tok-wordpiece.h — BERT's WordPiece tokenizer ("wordpiece",
 * src/text/tok-wordpiece.c), from a Hugging Face tokenizer.json whose
 * model.type is "WordPiece" or from a BERT vocab.txt.
 *
 * Encoding follows transformers.js (the reference of tests/test_wordpiece.c):
 *   1. invalid UTF-8 bytes become U+FFFD, one per byte (tokenizer.h);
 *   2. the added tokens ([CLS], [SEP], [MASK], [PAD], [UNK], ...) typed in
 *      the text are matched as typed, longest first at the leftmost
 *      position, and come out as their ids ("[mask]" is not [MASK]);
 *   3. every stretch between them goes through BertNormalizer:
 *        clean_text            drops U+0000, U+FFFD and the characters of
 *                              categories Cc, Cf and Co except \t \n \r,
 *                              and turns JavaScript white space into ' ';
 *        handle_chinese_chars  puts spaces around CJK ideographs (U+3400 ..
 *                              U+4DBF, U+4E00 .. U+9FFF, U+F900 .. U+FAFF:
 *                              transformers.js tests UTF-16 units, so the
 *                              supplementary-plane blocks BERT lists are not
 *                              separated, as there);
 *        lowercase             full Unicode lowercase (İ -> i + U+0307,
 *                              final sigma -> ς), as JavaScript's;
 *        strip_accents         NFD, then every Mn character dropped; null
 *                              follows lowercase;
 *      then BertPreTokenizer (split at white space; each punctuation
 *      character, Unicode P* or ASCII 33-47, 58-64, 91-96, 123-126, a word
 *      of its own) and the WordPiece model: a word of more than
 *      max_input_chars_per_word code points is the unk token; otherwise
 *      greedy longest match from the start, later pieces looked up with
 *      continuing_subword_prefix ("##") before them, and a word where some
 *      position matches nothing is one unk token.
 * tok_encode with add_bos gives [CLS] text [SEP]: bos_id and eos_id are the
 * special tokens of the post_processor (TemplateProcessing whose single is
 * [SpecialToken, Sequence A, SpecialToken], or BertProcessing's cls and
 * sep); a null post_processor adds nothing.
 * Pieces are the vocabulary's strings as they are ("##ing"); decode() joins
 * them as the WordPiece decoder does: a piece starting with the prefix is
 * glued to the one before without it, any other gets a space before it
 * (not the first), and with cleanup " ." " ?" " !" " ," lose their space.
 *
 * The Unicode tables are from Unicode WP_UNICODE_VERSION (14.0.0,
 * tests/gen/gen_wordpiece_unicode.py); canonical reordering of combining
 * marks that are not Mn (a few dozen, none Latin) is not done.
 * Refused by name with a one-line error: normalizer types other than
 * BertNormalizer (or null), pre_tokenizer types other than
 * BertPreTokenizer, post_processor types other than TemplateProcessing and
 * BertProcessing (or null) and templates of another shape, decoder types
 * other than WordPiece (or null), a model without unk_token or whose
 * unk_token is not in the vocab, an empty vocab, ids with gaps, added
 * tokens that are not model.vocab's token of their id, and added tokens
 * with single_word, lstrip or rstrip true.
 *
 * to_json stores the tokenizer.json text (a vocab.txt is stored as the
 * tokenizer.json it is read as), so tok_from_json rebuilds it.
 */
#ifndef ATTNSCOPE_TOK_WORDPIECE_H
#define ATTNSCOPE_TOK_WORDPIECE_H

#include <stddef.h>

#include "tokenizer.h"

/*
 * A WordPiece tokenizer from path: a tokenizer.json file (a name ending in
 * ".json"), a vocab.txt file, or a directory holding tokenizer.json or else
 * vocab.txt.  A vocab.txt takes do_lower_case (default true),
 * strip_accents (default: follow do_lower_case) and tokenize_chinese_chars
 * (default true) from the tokenizer_config.json beside it when there is
 * one.  NULL + a one-line e naming the file and the field on error (the
 * caller frees with tok_free).
 */
struct tokenizer *tok_wordpiece_load(const char *path, struct err *e);

/* The same from a tokenizer.json's text json[0..len); where names it in
 * messages.  The text is copied. */
struct tokenizer *tok_wordpiece_from_text(const char *json, size_t len, const char *where,
					  struct err *e);

/*
 * From a vocab.txt's text vocab[0..len) (one token a line, the id is the
 * line number from 0; "\r\n" endings, a leading UTF-8 byte order mark and
 * blank lines at the end accepted, as Hugging Face reads them), with the text of a
 * tokenizer_config.json (config, clen) or NULL.  [UNK] must be in the
 * vocabulary; [PAD], [UNK], [CLS], [SEP] and [MASK] are the added tokens,
 * and [CLS] ... [SEP] the template, when present.  An empty line within, a line
 * holding white space, a control character or invalid UTF-8, and a token
 * given twice are refused with the line number.
 */
struct tokenizer *tok_wordpiece_from_vocab(const char *vocab, size_t len, const char *config,
					   size_t clen, const char *where, struct err *e);

#endif
