/*
 * gguf-vocab.c — the tokenizer a GGUF file's tokenizer.ggml.* metadata
 * describes, rebuilt through the tokenizer modules (gguf.h), so that it
 * gives the ids the same model's tokenizer gives when read from its own
 * files:
 *   model "llama"  SentencePiece BPE with scores: tokens (U+2581 for a
 *                  space, <0xNN> byte tokens), scores, token_type; built as
 *                  the llama2.c tokenizer.bin holding the same pieces
 *                  (tok-llama2c.c: the dummy prefix space, merges by score,
 *                  byte fallback); BOS is bos_token_id unless add_bos_token
 *                  is false.  User-defined tokens (type 4) are cut out of
 *                  the typed text whole before the merges, as llama.cpp
 *                  does.  add_space_prefix false (Gemma's files) reads the
 *                  text as llama.cpp does with its special tokens parsed:
 *                  no dummy prefix, a typed U+2581 the same as a space, and
 *                  control and unknown tokens (<bos>, <start_of_turn>, ...)
 *                  cut out whole too, as the model's tokenizer.json has
 *                  them; with the prefix (Llama, Mistral, TinyLlama) a
 *                  typed "<s>" stays text, as llama2.c reads it.
 *   model "gpt2"   byte-level BPE: tokens and merges.  The pre-tokenizer
 *                  tokenizer.ggml.pre picks the split:
 *                    gpt-2 (or absent: files from before the key)  GPT-2's
 *                      vocab.json + merges.txt tokenizer (tok-bpe.c), with
 *                      <|endoftext|> as BOS as the GPT-2 loaders have it;
 *                    llama-bpe, llama3, llama-v3  Llama 3's tokenizer.json
 *                      (its Split pattern, ByteLevel, ignore_merges; BOS
 *                      unless add_bos_token is false);
 *                    qwen2  Qwen2's tokenizer.json (NFC, its Split pattern,
 *                      ByteLevel; BOS only when add_bos_token is true);
 *                    dbrx  (the converter's name for DBRX's cl100k-style
 *                      tokenizer) Llama 3's Split pattern and ByteLevel
 *                      without ignore_merges, BOS only when add_bos_token
 *                      is true, as llama.cpp splits it;
 *                  both as a tokenizer.json read by tok-hfjson.c, control
 *                  and user-defined tokens (token_type 3 and 4) its added
 *                  tokens.  Other pre-tokenizers are refused by name.
 *   model "bert"   WordPiece: the tokens as the converter writes them (a
 *                  word-start piece with U+2581 before it, a continuation
 *                  without its "##", control tokens as they are) turned back
 *                  into BERT's vocabulary and read as a WordPiece
 *                  tokenizer.json (tok-wordpiece.c): BertNormalizer with
 *                  tokenizer.ggml.normalizer.lowercase (true) and
 *                  strip_accents (as lowercase), [CLS] text [SEP] from
 *                  cls_token_id / seperator_token_id (else the tokens so
 *                  named), unknown_token_id's token as unk.
 * Other models (t5, rwkv, plamo2, ...) are refused by name.
 */
#define _GNU_SOURCE
#include "gguf.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "tok-hfjson.h"
#include "tok-wordpiece.h"
#include "tokenizer.h"
#include "utf8.h"

#define SP "\xe2\x96\x81" /* U+2581, sentencepiece's space */

enum { TT_NORMAL = 1, TT_UNKNOWN, TT_CONTROL, TT_USER, TT_UNUSED, TT_BYTE };

/* What tokenizer.ggml.* holds. */
struct vocab {
	char **tok;		/* n tokens */
	uint32_t *len;
	uint64_t n;
	double *type;		/* n token types, or NULL */
	double *score;		/* n scores, or NULL */
	char **merge;		/* nm merges "a b", or NULL */
	uint32_t *mlen;
	uint64_t nm;
	int64_t bos, eos, unk, sep, cls; /* -1 when absent */
	int add_bos;		/* -1 absent, 0, 1 */
};

static void vocab_free(struct vocab *v)
{
	free(v->tok);
	free(v->len);
	free(v->type);
	free(v->score);
	free(v->merge);
	free(v->mlen);
}

/* A token id key: -1 when absent, else within the vocabulary. */
static int token_id(const struct gguf_file *f, const char *key, uint64_t n, int64_t *id,
		    struct err *e)
{
	*id = -1;
	int rc = gguf_get_int(f, key, 0, (int64_t)n - 1, id, e);
	if (rc < 0)
		*id = -1;
	return rc < 0 ? -1 : 0;
}

static int read_vocab(const struct gguf_file *f, struct vocab *v, struct err *e)
{
	uint64_t k;
	int rc = gguf_get_strings(f, "tokenizer.ggml.tokens", CFG_MAX_VOCAB, &v->tok, &v->len, &v->n, e);
	if (rc)
		return rc < 0 ? -1 : err_set(e, "no tokenizer.ggml.tokens: the file has no "
					     "tokenizer; give one with --tokenizer");
	if (v->n == 0)
		return err_set(e, "tokenizer.ggml.tokens is empty");
	rc = gguf_get_numbers(f, "tokenizer.ggml.token_type", v->n, &v->type, &k, e);
	if (rc < 0 || (rc == 0 && k != v->n))
		return rc < 0 ? -1 : err_set(e, "tokenizer.ggml.token_type has %" PRIu64 " entries "
					     "for %" PRIu64 " tokens", k, v->n);
	rc = gguf_get_numbers(f, "tokenizer.ggml.scores", v->n, &v->score, &k, e);
	if (rc < 0 || (rc == 0 && k != v->n))
		return rc < 0 ? -1 : err_set(e, "tokenizer.ggml.scores has %" PRIu64 " entries for "
					     "%" PRIu64 " tokens", k, v->n);
	rc = gguf_get_strings(f, "tokenizer.ggml.merges", 1u << 24, &v->merge, &v->mlen, &v->nm, e);
	if (rc < 0)
		return -1;
	bool b;
	rc = gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b, e);
	if (rc < 0)
		return -1;
	v->add_bos = rc ? -1 : b;
	if (token_id(f, "tokenizer.ggml.bos_token_id", v->n, &v->bos, e) ||
	    token_id(f, "tokenizer.ggml.eos_token_id", v->n, &v->eos, e) ||
	    token_id(f, "tokenizer.ggml.unknown_token_id", v->n, &v->unk, e) ||
	    token_id(f, "tokenizer.ggml.seperator_token_id", v->n, &v->sep, e) ||
	    token_id(f, "tokenizer.ggml.cls_token_id", v->n, &v->cls, e))
		return -1;
	return 0;
}

static int ttype(const struct vocab *v, uint64_t i)
{
	double t = v->type ? v->type[i] : TT_NORMAL;
	return t >= 0 && t <= TT_BYTE ? (int)t : 0; /* 0: not a type GGUF defines */
}

/* A token as a JSON string, or an error naming it when it is not UTF-8. */
static json_t *token_json(const struct vocab *v, uint64_t i, const char *prefix, size_t skip,
			  struct err *e)
{
	size_t pl = strlen(prefix), l = v->len[i] - skip;
	char *s = xmalloc(pl + l + 1);
	memcpy(s, prefix, pl);
	memcpy(s + pl, v->tok[i] + skip, l);
	json_t *j = json_stringn(s, pl + l);
	free(s);
	if (!j)
		err_set(e, "tokenizer.ggml.tokens: token %" PRIu64 " is not valid UTF-8", i);
	return j;
}

/* ------------------------------------------------------- SentencePiece */

/* The pieces as a llama2.c tokenizer.bin: int32 max length, then score,
 * length and bytes of each, "▁" written as a space. */
static struct tokenizer *spm(const struct gguf_file *f, const struct vocab *v, struct err *e)
{
	bool prefix = true;
	if (gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &prefix, e) < 0)
		return NULL;
	if (!v->score)
		return err_set(e, "tokenizer.ggml.scores is missing (the llama tokenizer merges by "
			       "score)"), NULL;
	size_t total = 4;
	for (uint64_t i = 0; i < v->n; i++)
		total += 8 + v->len[i];
	unsigned char *buf = xmalloc(total), *o = buf + 4;
	int32_t maxlen = 1;
	for (uint64_t i = 0; i < v->n; i++) {
		double d = v->score[i];
		float sc = d > FLT_MAX ? FLT_MAX : d >= -FLT_MAX ? (float)d : -FLT_MAX; /* NaN: last */
		unsigned char *lenp = o + 4, *p = o + 8;
		memcpy(o, &sc, 4);
		for (uint32_t j = 0; j < v->len[i];) {
			if (v->len[i] - j >= 3 && !memcmp(v->tok[i] + j, SP, 3)) {
				*p++ = ' ';
				j += 3;
			} else {
				*p++ = (unsigned char)v->tok[i][j++];
			}
		}
		int32_t l = (int32_t)(p - o - 8);
		memcpy(lenp, &l, 4);
		maxlen = l > maxlen ? l : maxlen;
		o = p;
	}
	memcpy(buf, &maxlen, 4);
	/* user-defined tokens always; control and unknown ones too without the
	 * prefix (Gemma's files, whose tokenizer.json matches them) */
	int *whole = xmalloc((v->n + 1) * sizeof *whole), nw = 0;
	for (uint64_t i = 0; i < v->n; i++) {
		int tt = ttype(v, i);
		if (tt == TT_USER || (!prefix && (tt == TT_CONTROL || tt == TT_UNKNOWN)))
			whole[nw++] = (int)i;
	}
	struct tok_spm_opts opts = { .no_prefix = !prefix, .space_mark = !prefix, .whole = whole,
				     .n_whole = nw };
	struct tokenizer *t = tok_llama2c_from_bin_opts(buf, (size_t)(o - buf), (int)v->n,
							nw || !prefix ? &opts : NULL,
							"tokenizer.ggml.tokens", e);
	free(whole);
	if (!t)
		return NULL;
	if (v->bos >= 0)
		t->bos_id = (int)v->bos;
	if (v->add_bos == 0)
		t->bos_id = -1;
	if (v->unk >= 0)
		t->unk_id = (int)v->unk;
	return t;
}

/* ------------------------------------------------------ byte-level BPE */

/* GPT-2's: the vocab.json and merges of tok-bpe.c. */
static struct tokenizer *gpt2_bpe(const struct vocab *v, json_t *merges, struct err *e)
{
	json_t *root = ju_check(json_object()), *vocab = ju_check(json_object());
	struct tokenizer *t = NULL;
	for (uint64_t i = 0; i < v->n; i++) {
		json_t *k = token_json(v, i, "", 0, e);
		if (!k)
			goto out;
		ju_set(vocab, json_string_value(k), json_integer((json_int_t)i));
		json_decref(k);
	}
	ju_set(root, "type", json_string("gpt2-bpe"));
	ju_set(root, "vocab", vocab);
	ju_set(root, "merges", json_incref(merges));
	vocab = NULL;
	char *text = ju_dump(root, JSON_COMPACT);
	t = tok_from_json(text, e);
	free(text);
	if (!t)
		err_prefix(e, "tokenizer.ggml.tokens/merges");
out:
	json_decref(vocab);
	json_decref(root);
	return t;
}

/* The Split patterns of the tokenizer.json files GGUF's pre names stand for. */
static const char llama3_re[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
	"[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char qwen2_re[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
	"[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* model.vocab and added_tokens from the tokens. */
static int hf_vocab(const struct vocab *v, json_t *model, json_t *added, struct err *e)
{
	json_t *vocab = ju_check(json_object());
	ju_set(model, "vocab", vocab);
	for (uint64_t i = 0; i < v->n; i++) {
		json_t *k = token_json(v, i, "", 0, e);
		if (!k)
			return -1;
		ju_set(vocab, json_string_value(k), json_integer((json_int_t)i));
		int tt = ttype(v, i);
		if (tt == TT_CONTROL || tt == TT_USER) {
			json_t *a = ju_check(json_object());
			ju_set(a, "id", json_integer((json_int_t)i));
			ju_set(a, "content", k);
			ju_set(a, "special", json_boolean(tt == TT_CONTROL));
			ju_append(added, a);
		} else {
			json_decref(k);
		}
	}
	return 0;
}

/* The tokenizer.json pipelines GGUF's pre names stand for. */
enum hf_pre { PRE_LLAMA3, PRE_QWEN2, PRE_DBRX };

/* Llama 3's, Qwen2's or DBRX's tokenizer.json from the tokens and merges. */
static struct tokenizer *hf_bpe(const struct vocab *v, json_t *merges, enum hf_pre pre,
				struct err *e)
{
	bool llama3 = pre == PRE_LLAMA3;
	json_t *root = ju_check(json_object()), *model = ju_check(json_object());
	json_t *added = ju_check(json_array());
	struct tokenizer *t = NULL;
	ju_set(root, "added_tokens", added);
	ju_set(root, "model", model);
	ju_set(model, "type", json_string("BPE"));
	ju_set(model, "merges", json_incref(merges));
	ju_set(model, "ignore_merges", json_boolean(llama3));
	if (hf_vocab(v, model, added, e))
		goto out;
	ju_set(root, "normalizer", pre != PRE_QWEN2 ? json_null()
						    : json_pack("{s:s}", "type", "NFC"));
	ju_set(root, "pre_tokenizer",
	       json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}", "type",
			 "Sequence", "pretokenizers", "type", "Split", "pattern", "Regex",
			 pre != PRE_QWEN2 ? llama3_re : qwen2_re, "behavior", "Isolated", "invert", 0,
			 "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex",
			 0));
	ju_set(root, "decoder", json_pack("{s:s}", "type", "ByteLevel"));
	bool bos = v->add_bos < 0 ? llama3 : v->add_bos;
	if (bos && v->bos >= 0) {
		json_t *name = token_json(v, (uint64_t)v->bos, "", 0, e);
		if (!name)
			goto out;
		ju_set(root, "post_processor",
		       json_pack("{s:s, s:[{s:{s:o, s:i}}, {s:{s:s, s:i}}]}", "type",
				 "TemplateProcessing", "single", "SpecialToken", "id", name, "type_id",
				 0, "Sequence", "id", "A", "type_id", 0));
		if (ttype(v, (uint64_t)v->bos) != TT_CONTROL && ttype(v, (uint64_t)v->bos) != TT_USER) {
			err_set(e, "tokenizer.ggml.bos_token_id %" PRId64 " is not a control token",
				v->bos);
			goto out;
		}
	}
	char *text = ju_dump(root, JSON_COMPACT);
	t = tok_hfjson_from_text(text, strlen(text), "tokenizer.ggml.tokens/merges", e);
	free(text);
	if (t && !bos) /* not the reader's guess by name */
		t->bos_id = -1;
out:
	json_decref(root);
	return t;
}

static struct tokenizer *bpe(const struct gguf_file *f, const struct vocab *v, struct err *e)
{
	if (!v->merge)
		return err_set(e, "tokenizer.ggml.merges is missing (a gpt2 tokenizer needs them)"),
		       NULL;
	char *pre = NULL;
	if (gguf_get_str(f, "tokenizer.ggml.pre", 64, &pre, e) < 0)
		return NULL;
	json_t *merges = ju_check(json_array());
	struct tokenizer *t = NULL;
	for (uint64_t i = 0; i < v->nm; i++) {
		json_t *m = json_stringn(v->merge[i], v->mlen[i]);
		if (!m) {
			err_set(e, "tokenizer.ggml.merges: merge %" PRIu64 " is not valid UTF-8", i);
			goto out;
		}
		ju_append(merges, m);
	}
	if (!pre || !strcmp(pre, "gpt-2") || !strcmp(pre, "gpt2"))
		t = gpt2_bpe(v, merges, e);
	else if (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3") || !strcmp(pre, "llama-v3"))
		t = hf_bpe(v, merges, PRE_LLAMA3, e);
	else if (!strcmp(pre, "qwen2"))
		t = hf_bpe(v, merges, PRE_QWEN2, e);
	else if (!strcmp(pre, "dbrx"))
		t = hf_bpe(v, merges, PRE_DBRX, e);
	else {
		char shown[160];
		utf8_printable(pre, strlen(pre), shown, sizeof shown);
		err_set(e, "tokenizer.ggml.pre \"%s\" is not supported (gpt-2, llama-bpe, qwen2 and "
			"dbrx are)", shown);
	}
out:
	json_decref(merges);
	free(pre);
	return t;
}

/* ----------------------------------------------------------- WordPiece */

/* The id of the control token named s, or -1. */
static int64_t named(const struct vocab *v, const char *s)
{
	for (uint64_t i = 0; i < v->n; i++)
		if (v->len[i] == strlen(s) && !memcmp(v->tok[i], s, v->len[i]))
			return (int64_t)i;
	return -1;
}

/* BERT's vocabulary back from the converter's phantom-space tokens. */
static int wp_vocab(const struct vocab *v, json_t *vocab, json_t *added, struct err *e)
{
	for (uint64_t i = 0; i < v->n; i++) {
		bool ctl = ttype(v, i) == TT_CONTROL, sp = v->len[i] >= 3 && !memcmp(v->tok[i], SP, 3);
		json_t *k = token_json(v, i, ctl || sp ? "" : "##", sp && !ctl ? 3 : 0, e);
		if (!k)
			return -1;
		if (json_string_length(k) == 0 || json_object_get(vocab, json_string_value(k))) {
			json_decref(k);
			return err_set(e, "tokenizer.ggml.tokens: token %" PRIu64 " is empty or given "
				       "twice as a WordPiece token", i);
		}
		ju_set(vocab, json_string_value(k), json_integer((json_int_t)i));
		if (ctl) {
			json_t *a = json_pack("{s:i, s:O, s:b}", "id", (json_int_t)i, "content", k,
					      "special", 1);
			ju_append(added, ju_check(a));
		}
		json_decref(k);
	}
	return 0;
}

static struct tokenizer *wordpiece(const struct gguf_file *f, const struct vocab *v,
				   struct err *e)
{
	bool lower = true, strip;
	if (gguf_get_bool(f, "tokenizer.ggml.normalizer.lowercase", &lower, e) < 0)
		return NULL;
	strip = lower;
	if (gguf_get_bool(f, "tokenizer.ggml.normalizer.strip_accents", &strip, e) < 0)
		return NULL;
	int64_t cls = v->cls >= 0 ? v->cls : v->bos >= 0 ? v->bos : named(v, "[CLS]");
	int64_t sep = v->sep >= 0 ? v->sep : v->eos >= 0 ? v->eos : named(v, "[SEP]");
	int64_t unk = v->unk >= 0 ? v->unk : named(v, "[UNK]");
	if (unk < 0)
		return err_set(e, "no unknown_token_id and no [UNK] token (WordPiece needs one)"), NULL;
	json_t *root = ju_check(json_object()), *model = ju_check(json_object());
	json_t *vocab = ju_check(json_object()), *added = ju_check(json_array());
	struct tokenizer *t = NULL;
	ju_set(root, "added_tokens", added);
	ju_set(root, "model", model);
	ju_set(model, "type", json_string("WordPiece"));
	ju_set(model, "vocab", vocab);
	ju_set(model, "continuing_subword_prefix", json_string("##"));
	ju_set(model, "max_input_chars_per_word", json_integer(100));
	if (wp_vocab(v, vocab, added, e))
		goto out;
	/* the vocabulary's own spelling of the unk token */
	void *it = json_object_iter(vocab);
	for (; it; it = json_object_iter_next(vocab, it))
		if (json_integer_value(json_object_iter_value(it)) == unk)
			ju_set(model, "unk_token", json_string(json_object_iter_key(it)));
	ju_set(root, "normalizer",
	       json_pack("{s:s, s:b, s:b, s:b, s:b}", "type", "BertNormalizer", "clean_text", 1,
			 "handle_chinese_chars", 1, "lowercase", lower, "strip_accents", strip));
	ju_set(root, "pre_tokenizer", json_pack("{s:s}", "type", "BertPreTokenizer"));
	ju_set(root, "decoder", json_pack("{s:s, s:s, s:b}", "type", "WordPiece", "prefix", "##",
					  "cleanup", 1));
	if (cls >= 0 && sep >= 0)
		ju_set(root, "post_processor",
		       json_pack("{s:s, s:[s#, i], s:[s#, i]}", "type", "BertProcessing", "cls",
				 v->tok[cls], (int)v->len[cls], (int)cls, "sep", v->tok[sep],
				 (int)v->len[sep], (int)sep));
	char *text = ju_dump(root, JSON_COMPACT);
	t = tok_wordpiece_from_text(text, strlen(text), "tokenizer.ggml.tokens", e);
	free(text);
out:
	json_decref(root);
	return t;
}

/* ---------------------------------------------------------------- entry */

struct tokenizer *gguf_tokenizer(const struct gguf_file *f, struct err *e)
{
	char *model = NULL;
	struct vocab v = { .bos = -1 };
	struct tokenizer *t = NULL;
	int rc = gguf_get_str(f, "tokenizer.ggml.model", 64, &model, e);
	if (rc) {
		if (rc > 0)
			err_set(e, "no tokenizer.ggml.model: the file has no tokenizer; give one with "
				"--tokenizer");
		return NULL;
	}
	if (strcmp(model, "llama") && strcmp(model, "gpt2") && strcmp(model, "bert")) {
		char shown[160];
		utf8_printable(model, strlen(model), shown, sizeof shown);
		err_set(e, "tokenizer.ggml.model \"%s\" is not supported (llama, gpt2 and bert are)",
			shown);
		free(model);
		return NULL;
	}
	if (read_vocab(f, &v, e) == 0)
		t = !strcmp(model, "llama") ? spm(f, &v, e)
		    : !strcmp(model, "gpt2") ? bpe(f, &v, e)
					     : wordpiece(f, &v, e);
	vocab_free(&v);
	free(model);
	if (!t) /* the tokenizer modules quote tokens, which may hold control bytes */
		ld_one_line(e);
	return t;
}
