/*
 * loader.h — finds and opens a model given what a user typed.
 *
 * A spec is
 *   - a path to a file or directory;
 *   - a name resolved in the models/ directory (`shakespeare` ->
 *     models/shakespeare.safetensors; also models/NAME, a file or an HF
 *     directory), looked up in $ATTNSCOPE_MODELS when set, else first
 *     under the current directory and then beside the executable;
 *   - `hf:NAME` or `hf:ORG/NAME`: a snapshot in the local Hugging Face cache
 *     ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub;
 *     models--ORG--NAME/snapshots/<refs/main, else the newest>).  Nothing is
 *     ever downloaded.
 *
 * The format is found by content, through a table of formats (probe + load):
 *   "safetensors"  attnscope's own checkpoint (checkpoint.h)
 *   "hf-gpt2"      a Hugging Face GPT-2 directory: config.json,
 *                  model.safetensors, vocab.json + merges.txt or
 *                  tokenizer.json (or the model.safetensors file inside one)
 *   "hf-llama"     a Hugging Face Llama, Qwen2 or Mistral directory:
 *                  config.json, model.safetensors or a sharded
 *                  model.safetensors.index.json, a GPT-2-style byte-level
 *                  tokenizer (loaders.h: the rotate-half Q/K row order)
 *   "llama2c"      a llama2.c checkpoint (.bin, 7-int header), with
 *                  tokenizer.bin (or tok<V>.bin) beside it or --tokenizer
 *   "llmc"         an llm.c GPT-2 checkpoint (.bin, 256-int header, magic
 *                  20240326, version 3 = F32 or 5 = BF16, padded vocab), with
 *                  the GPT-2 tokenizer beside it or --tokenizer DIR
 * Every model comes out F32 in the engine's layout (config.h), loaded once.
 */
#ifndef ATTNSCOPE_LOADER_H
#define ATTNSCOPE_LOADER_H

#include <stddef.h>

#include "model.h"
#include "util.h"

/* Resolves spec to an existing path (file or directory) in out (size
 * bytes).  0, or -1 with a message listing where it looked, or saying what
 * spec is when it is neither ("/dev/zero: is a character device, not a
 * model file or directory"). */
int model_resolve(const char *spec, char *out, size_t size, struct err *e);

/* model_open_ex(spec, NULL, NULL, e): the tokenizer beside the model.
 * NULL with a one-line message on failure. */
struct model *model_open(const char *spec, struct err *e);

/*
 * As model_open, and:
 *   tokenizer: NULL, or a tokenizer file or directory to use instead of the
 *              one found beside the model (--tokenizer; an explicit choice,
 *              so it wins without a warning): for hf-gpt2 and llmc a
 *              directory with vocab.json + merges.txt or tokenizer.json, or
 *              one of those files; for llama2c a tokenizer.bin (or a
 *              directory holding one).  It must exist.  Refused for our own
 *              safetensors, which carry their tokenizer (the model's ids
 *              are that vocabulary's).
 *   format:    when not NULL, receives the format's name ("hf-gpt2", ...;
 *              a static string) on success.
 */
struct model *model_open_ex(const char *spec, const char *tokenizer, const char **format,
			    struct err *e);

/* A readable description of a format name ("Hugging Face GPT-2 directory"),
 * or the name itself when unknown. */
const char *model_format_desc(const char *format);

/* The models/ directory in use (for completion and listings), or NULL. */
const char *models_dir(void);

/*
 * Encodes text for model m (BOS first when the vocabulary has one).
 * Text longer than the model's context is refused with a message stating
 * the limit.  *bad_utf8 receives the number of invalid bytes replaced by
 * U+FFFD (the caller warns).  On success *ids is malloc'd (caller frees).
 */
int model_tokenize(const struct model *m, const char *text, size_t len, int **ids, int *n,
		   int *bad_utf8, struct err *e);
#endif
