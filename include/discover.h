/*
 * discover.h — the GGUF files other local tools keep: Ollama's manifests
 * and blobs, LM Studio's models folder and llama.cpp's download cache,
 * named the way each tool names them, and what a GGUF header says about
 * one without reading its weights.
 *
 * Where each keeps them:
 *   Ollama     $OLLAMA_MODELS, else ~/.ollama/models.  A model HOST/NS/NAME
 *              with tag TAG is the JSON manifest
 *              manifests/HOST/NS/NAME/TAG; its layer of mediaType
 *              application/vnd.ollama.image.model names a digest
 *              "sha256:<64 hex>" stored as blobs/sha256-<64 hex>.  Names
 *              are written as Ollama writes them: "qwen2.5:0.5b" (host
 *              registry.ollama.ai, namespace library), "NS/NAME:TAG" (the
 *              default host), "HOST/NS/NAME:TAG"; the tag defaults to
 *              "latest".
 *   LM Studio  ~/.lmstudio/models/PUBLISHER/REPO/FILE.gguf, and the older
 *              ~/.cache/lm-studio/models; named "lmstudio:PUBLISHER/REPO/FILE.gguf".
 *   llama.cpp  $LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp, else
 *              ~/.cache/llama.cpp: FILE.gguf at its top, named
 *              "llama.cpp:FILE.gguf".
 * Nothing here writes, downloads or follows a name outside these roots: a
 * name or digest holding "..", "/" where none belongs or other characters
 * is refused before any path is built.
 */
#ifndef ATTNSCOPE_DISCOVER_H
#define ATTNSCOPE_DISCOVER_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"
#include "util.h"

/* Ollama's models directory (which may not exist). */
void ollama_dir(char *out, size_t size);

/*
 * Resolves spec as one of the names above to the GGUF file it names, in
 * out (size bytes).  Returns 1 when spec is no such name, or an Ollama
 * name without ':' whose manifest does not exist (the caller goes on
 * looking elsewhere; out and e untouched); 0 with the path; -1 with one
 * line in e saying what is wrong and where: a manifest that is not JSON
 * (with its line), has no model layer, names a digest that is not
 * sha256:<64 hex>, a blob that is missing, of another size than the
 * manifest says, a FIFO or a symbolic-link loop.
 */
int discover_resolve(const char *spec, char *out, size_t size, struct err *e);

/* Appends to *p (n entries, cap allocated; realloc'd) the places of
 * Ollama (every manifest, sorted by name), LM Studio and the llama.cpp
 * cache, with source "ollama", "lm studio" or "llama.cpp".  A manifest
 * that does not resolve is listed with its path and why set. */
void discover_places(struct model_place **p, int *n, int *cap);

/* What a GGUF header tells without reading a weight. */
struct gguf_summary {
	char arch[64];		/* general.architecture, "?" when absent */
	char quant[16];		/* the tensor type holding the most bytes: "Q4_K" */
	uint64_t file_bytes;
};

/* Fills s from the GGUF file at path.  0, or -1 with a one-line e (no path). */
int gguf_summarize(const char *path, struct gguf_summary *s, struct err *e);

#endif
