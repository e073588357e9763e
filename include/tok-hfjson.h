/*
 * tok-hfjson.h — Hugging Face tokenizer.json files whose model is BPE
 * ("hf-tokenizer-json", src/text/tok-hfjson.c): Llama 3, Qwen2/2.5, Qwen3,
 * Mistral, Llama 2 / TinyLlama and Gemma 2 / Gemma 3 style sentencepiece
 * BPE, GPT-2.
 *
 * Encoding follows transformers.js (the reference of tests/test_hfjson.c):
 *   1. invalid UTF-8 bytes become U+FFFD, one per byte (tokenizer.h);
 *   2. the added tokens of "added_tokens" (special or not) typed in the
 *      text are matched, longest first at the leftmost position, and come
 *      out as their ids: "<|endoftext|>" typed in a Qwen2 prompt is that
 *      token, as transformers.js's encode does.  They are matched in the
 *      text as typed ("normalized" is ignored, as there); lstrip and rstrip
 *      drop the white space before and after them;
 *   3. every stretch between them goes through the normalizer, the
 *      pre-tokenizer and the BPE model.
 * Supported:
 *   normalizer     null; NFC (tok_nfc, Unicode 14.0.0); Prepend; Replace of
 *                  a String; Sequence of these.
 *   pre_tokenizer  null; ByteLevel (add_prefix_space, use_regex with GPT-2's
 *                  pattern); Split with a Regex or String pattern, behavior
 *                  Isolated, invert false (the pattern is read as a
 *                  JavaScript u-mode regex and run by PCRE2); Digits
 *                  (individual_digits; ASCII digits, as JavaScript's \d);
 *                  Metaspace with split false; Sequence of these; Split
 *                  with behavior MergedWithPrevious only on a one-character
 *                  String that the last normalizer Replaces, where it never
 *                  splits (Gemma's " ", replaced by "▁": transformers.js
 *                  splits that behavior as Isolated, tokenizers merges the
 *                  match into the piece before, so they agree only there).
 *   model          BPE: vocab, merges as "a b" strings or ["a", "b"]
 *                  pairs, byte_fallback (<0xNN> tokens), unk_token,
 *                  fuse_unk, ignore_merges; continuing_subword_prefix and
 *                  end_of_word_suffix only when null or "".
 *   decoder        null; ByteLevel; Metaspace; Sequence of Replace,
 *                  ByteFallback, Fuse and Strip (sentencepiece style).
 * Refused by name with a one-line error ("pre_tokenizer Whitespace is not
 * supported yet"): every other type or option, including model types
 * WordPiece and Unigram, Split behaviours other than Isolated (and
 * MergedWithPrevious above), invert,
 * Metaspace split true or without add_prefix_space (transformers.js and
 * tokenizers disagree there), dropout, added tokens with single_word true,
 * a merge naming a token that is not in the vocab, and a text character
 * with no token when there is neither byte_fallback nor unk_token.
 *
 * Pieces are exact bytes: ByteLevel vocabularies are unmapped from GPT-2's
 * byte-to-unicode table; sentencepiece ones turn "▁" into a space and
 * <0xNN> into that byte, added tokens too (Gemma's "▁▁" is two spaces, as
 * transformers.js's Replace decoder makes it); under ByteLevel, added
 * tokens are their content.  decode() drops
 * the space that a Prepend normalizer or Metaspace put before the text,
 * from the first piece and from the piece after BOS (as tok-llama2c.c).
 * BOS is the special token the post_processor's template puts first, else
 * an added special token named <|begin_of_text|>, <s> or <bos>; unk_id is
 * the model's unk_token.
 *
 * to_json stores the whole tokenizer.json text, so a checkpoint or session
 * rebuilds the same tokenizer with tok_from_json.
 */
#ifndef ATTNSCOPE_TOK_HFJSON_H
#define ATTNSCOPE_TOK_HFJSON_H

#include <stddef.h>

#include "tokenizer.h"

/* A tokenizer from the tokenizer.json file at path.  NULL + a one-line e
 * naming the file and the field on error (the caller frees with
 * tok_free). */
struct tokenizer *tok_hfjson_load(const char *path, struct err *e);

/* The same from the file's text json[0..len); where names it in messages.
 * The text is copied. */
struct tokenizer *tok_hfjson_from_text(const char *json, size_t len, const char *where,
				       struct err *e);

#endif
