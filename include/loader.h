/*
 * loader.h — opens a model given what a user typed.
 *
 * A spec is resolved to a path as resolve.h says.
 *
 * The format is found by content, through a table of formats (probe + load):
 *   "safetensors"  attnscope's own checkpoint (checkpoint.h)
 *   "hf-gpt2"      a Hugging Face GPT-2 directory: config.json,
 *                  model.safetensors, vocab.json + merges.txt or
 *                  tokenizer.json (or the model.safetensors file inside one)
 *   "hf-llama"     a Hugging Face Llama, Qwen2, Qwen3 or Mistral directory:
 *                  config.json, model.safetensors or a sharded
 *                  model.safetensors.index.json, tokenizer.json or a
 *                  GPT-2-style byte-level tokenizer (loaders.h: the rotate-half Q/K row order)
 *   "hf-neox"      a Hugging Face GPT-NeoX (Pythia) directory: parallel
 *                  blocks, partial rotary, the fused per-head query_key_value
 *   "hf-neo"       a Hugging Face GPT-Neo directory (TinyStories,
 *                  gpt-neo-125M): global and local attention layers,
 *                  unscaled scores, separate q/k/v projections, GPT-2's
 *                  tokenizer
 *   "hf-phi3"      a Hugging Face Phi-3 directory (Phi-3-mini-4k): fused
 *                  qkv_proj and gate_up_proj, partial rotary, the sliding
 *                  window as every layer local, tokenizer.json
 *   "hf-gemma"     a Hugging Face Gemma 2 or Gemma 3 text directory: the
 *                  (1 + w) norms around both sub-blocks, GeGLU, sqrt(C)
 *                  embeddings, soft-capping, sliding layers, Gemma 3's
 *                  q/k norm and local RoPE base, tokenizer.json
 *   "hf-gemma3"    the text model of a Hugging Face Gemma 3 multimodal
 *                  directory (Gemma3ForConditionalGeneration): text_config,
 *                  language_model.model.* or model.language_model.*
 *   "hf-olmo2"     a Hugging Face OLMo-2 directory: norms after the
 *                  sub-blocks only, whole-width q/k norms, tokenizer.json
 *   "hf-bert"      a Hugging Face BERT directory (BertForMaskedLM, or a
 *                  BertModel without its head), WordPiece tokenizer
 *   "hf-roberta"   a Hugging Face RoBERTa directory (RobertaForMaskedLM or
 *                  RobertaModel): BERT's encoder, positions from row
 *                  pad_token_id + 1, byte-level BPE with <s> ... </s>
 *   "hf-distilbert" a Hugging Face DistilBERT directory
 *                  (DistilBertForMaskedLM or DistilBertModel): BERT's
 *                  blocks in its own names, no token types, WordPiece
 *                  (the hf-* formats are families of one loader,
 *                  hf-family.h: each reads model.safetensors, its shards,
 *                  or a safetensors file with the family's names and a
 *                  config.json beside it)
 *   "gguf"         a GGUF file (llama.cpp, Ollama, LM Studio), versions 2
 *                  and 3: Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3 (text),
 *                  OLMo-2, Phi-3, GPT-2, GPT-NeoX or BERT, tensors in F32, F16,
 *                  BF16, Q8_0, Q4_0/1, Q5_0/1 or
 *                  Q2_K..Q6_K dequantized, the tokenizer from its metadata
 *                  (loader-gguf.c; --tokenizer gives another)
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
#include "resolve.h"
#include "util.h"

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

/* The config of the model spec names, from its header or config.json
 * alone (no weights are read), and its format's name.  0, or -1 with the
 * message model_open_ex() would give for a spec it cannot resolve or
 * recognise. */
int model_describe(const char *spec, struct model_config *c, const char **format,
		   struct err *e);

/* Bytes the engine needs to hold a model of config c with its weights as
 * float32. */
double model_weight_bytes(const struct model_config *c);

/* The memory the weights of the model file or directory path take once
 * loaded: held as the files store them (F16, BF16, quantized; *held true)
 * where the format keeps them so, else as float32 (model_weight_bytes).
 * ATTNSCOPE_WEIGHTS=f32 in the environment holds nothing.  0, or -1 + e
 * when path is no model attnscope can describe. */
int model_memory(const char *path, double *bytes, bool *held, struct err *e);
/* (model_open_ex compares that with the memory available before reading
 * any weight, and refuses with both numbers.) */

/*
 * Encodes text for model m (BOS first when the vocabulary has one).
 * Text longer than the model's context is refused with a message stating
 * the limit.  *bad_utf8 receives the number of invalid bytes replaced by
 * U+FFFD (the caller warns).  On success *ids is malloc'd (caller frees).
 */
int model_tokenize(const struct model *m, const char *text, size_t len, int **ids, int *n,
		   int *bad_utf8, struct err *e);
#endif
