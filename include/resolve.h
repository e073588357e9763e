/*
 * resolve.h — from what a user typed to a model's path, the models there
 * are to choose from, and where the data and the demos that ship with the
 * program are.
 *
 * A spec is
 *   - a path to a file or directory;
 *   - a name resolved in the models directory (`shakespeare` ->
 *     models/shakespeare.safetensors; also models/NAME, a file or an HF
 *     directory, and models/NAME.bin): $ATTNSCOPE_MODELS when set, else
 *     models/ under the current directory, else models/ beside the
 *     executable;
 *   - `hf:NAME` or `hf:ORG/NAME`: a snapshot in the local Hugging Face cache
 *     ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
 *     else ~/.cache/huggingface/hub; models--ORG--NAME/snapshots/<refs/main,
 *     else the newest>); `ORG/NAME` too when it is neither a file nor
 *     an Ollama name;
 *   - a GGUF file another tool keeps: an Ollama name (`qwen2.5:0.5b`),
 *     `lmstudio:PUB/REPO/FILE.gguf`, `llama.cpp:FILE.gguf` (discover.h).
 * In that order: a path, the models directory, Ollama, the cache.
 * Nothing here downloads.
 * Whether a path holds a model attnscope reads is the loader's question
 * (loader.h); nothing here opens a weight file.
 */
#ifndef ATTNSCOPE_RESOLVE_H
#define ATTNSCOPE_RESOLVE_H

#include <stddef.h>

#include "util.h"

/* Resolves spec to an existing path (file or directory) in out (size
 * bytes).  0, or -1 with a message listing where it looked (with the
 * nearest names there, "did you mean shakespeare-gqa?", for a mistyped
 * name), or saying what spec is when it is neither ("/dev/zero: is a
 * character device, not a model file or directory"). */
int model_resolve(const char *spec, char *out, size_t size, struct err *e);

/* The models directory in use (for completion and listings), or NULL. */
const char *models_dir(void);

/* A data file that ships with the program (data/README.md lists them:
 * the lab's training text, the corpora of `make models`): name in
 * $ATTNSCOPE_DATA when that is set, else data/NAME under the current
 * directory, else data/NAME beside the executable (as models_dir finds
 * models/).  0 with the path in out, or -1 with a message saying where it
 * looked. */
int data_file(const char *name, char *out, size_t size, struct err *e);

/* A demo command file that ships with the program (sessions/demos/NAME,
 * the tour's lessons): in $ATTNSCOPE_DEMOS when that is set, else
 * sessions/demos/ under the current directory, else beside the
 * executable.  0 with the path in out, or -1 with a message saying where
 * it looked. */
int demo_file(const char *name, char *out, size_t size, struct err *e);

/* The hub directory of the local Hugging Face cache (which may not exist). */
void hf_hub_dir(char *out, size_t size);

/* A place a model may be: every entry of models_dir() but hidden ones and
 * the sidecars attnscope writes (*.optim), then every repository of the
 * Hugging Face cache with a snapshot holding config.json, then what
 * discover_places() finds. */
struct model_place {
	char *name;		/* what load takes: "shakespeare", "hf:ORG/NAME" */
	char *path;		/* the resolved file or directory */
	const char *source;	/* "models", "hf cache", "ollama", "lm studio",
				   "llama.cpp" (static) */
	char *why;		/* NULL, or why the name does not resolve (owned) */
};

/* Fills *out with n places (malloc'd; free with model_places_free), the
 * models directory's sorted by name, then the cache's.  Never fails: an
 * unreadable directory contributes nothing. */
void model_places(struct model_place **out, int *n);
void model_places_free(struct model_place *p, int n);

/* Up to three names of model_places() near spec (a small edit distance,
 * or spec a prefix of the name), nearest first, as "a, b or c" in out.
 * Returns how many; 0 leaves out "". */
int model_suggest(const char *spec, char *out, size_t size);

#endif
