/*
 * fuzz_ollama.c — libFuzzer target for Ollama names and manifests
 * (discover-gguf.c).
 *
 * An input is a name, a newline, and a manifest.  The manifest is written
 * as manifests/registry.ollama.ai/library/m/latest of a private Ollama
 * directory ($OLLAMA_MODELS) whose blobs/ holds one small file under a
 * digest seed manifests may name; then
 *   1. the name is resolved (discover_resolve): any text, Ollama's name
 *      grammar or not, "lmstudio:" and "llama.cpp:" names included;
 *   2. "m" is resolved, which reads the manifest;
 *   3. the directory is listed (discover_places), as `models` lists it.
 * A resolution that succeeds must name a path inside the Ollama directory,
 * the LM Studio folder or the llama.cpp cache; a failure must be one line.
 *
 * Seeds: fuzz/seeds/ollama, a manifest as `ollama pull` writes it naming
 * the blob, and the hostile kinds tests/cli_discover.sh builds (a digest
 * with ../, no model layer, a cut JSON text, a JSON error jansson quotes
 * with a newline in it: json-error-quotes-newline).
 *
 *   make build-fuzz/fuzz_ollama && build-fuzz/fuzz_ollama fuzz/seeds/ollama
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include <sys/stat.h>

#include "discover.h"

#define BLOB "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char root[PATH_MAX], manifest[PATH_MAX + 64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, false);
	char dir[PATH_MAX + 64], blob[PATH_MAX + 96];
	fuzz_path(root, sizeof root, "ollama");
	snprintf(dir, sizeof dir, "%s/blobs", root);
	CHECK(mkdir(root, 0700) == 0 && mkdir(dir, 0700) == 0);
	snprintf(blob, sizeof blob, "%s/" BLOB, dir);
	fuzz_put_file(blob, "GGUF", 4);
	snprintf(dir, sizeof dir, "%s/manifests", root);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(dir, sizeof dir, "%s/manifests/registry.ollama.ai", root);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(dir, sizeof dir, "%s/manifests/registry.ollama.ai/library", root);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(dir, sizeof dir, "%s/manifests/registry.ollama.ai/library/m", root);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(manifest, sizeof manifest, "%s/latest", dir);
	setenv("OLLAMA_MODELS", root, 1);
	setenv("HOME", root, 1); /* LM Studio and llama.cpp: nothing there */
	unsetenv("LLAMA_CACHE");
	unsetenv("XDG_CACHE_HOME");
	return 0;
}

static void resolve(const char *name)
{
	char out[PATH_MAX];
	struct err e = { "" };
	int rc = discover_resolve(name, out, sizeof out, &e);
	if (rc == 0)
		CHECK(!strncmp(out, root, strlen(root)) && !strstr(out, "/../"));
	else if (rc < 0)
		CHECK(e.msg[0] != '\0' && !strchr(e.msg, '\n'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t n = nl ? (size_t)(nl - (const char *)data) : size;
	char name[512];
	if (n >= sizeof name)
		n = sizeof name - 1;
	memcpy(name, data, n);
	name[n] = '\0';
	size_t off = nl ? (size_t)(nl - (const char *)data) + 1 : size;
	fuzz_put_file(manifest, data + off, size - off);
	if (strlen(name) == n) /* a name with a NUL in it is no C string to pass */
		resolve(name);
	resolve("m");
	struct model_place *p = NULL;
	int np = 0, cap = 0;
	discover_places(&p, &np, &cap);
	CHECK(np == 1 && !strcmp(p[0].name, "m:latest"));
	CHECK(!p[0].why || (p[0].why[0] && !strchr(p[0].why, '\n')));
	model_places_free(p, np);
	return 0;
}
