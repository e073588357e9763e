/*
 * discover-gguf.c — Ollama's manifests and blobs, LM Studio's folder and
 * llama.cpp's cache: names to GGUF paths, the listing of what each holds,
 * and a GGUF file's summary from its header (discover.h).
 */
#define _GNU_SOURCE
#include "discover.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf.h"
#include "loaders.h"
#include "json-util.h"
#include "utf8.h"

#define OLLAMA_HOST "registry.ollama.ai"
#define OLLAMA_NS   "library"
#define OLLAMA_MODEL_LAYER "application/vnd.ollama.image.model"
#define PART_MAX 128

/* Whether path (links followed) is a regular file. */
static bool is_reg(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *home(void)
{
	const char *h = getenv("HOME");
	return h && *h ? h : ".";
}

void ollama_dir(char *out, size_t size)
{
	const char *v = getenv("OLLAMA_MODELS");
	if (v && *v)
		snprintf(out, size, "%s", v);
	else
		snprintf(out, size, "%s/.ollama/models", home());
}

static void llamacpp_dir(char *out, size_t size)
{
	const char *v = getenv("LLAMA_CACHE"), *x = getenv("XDG_CACHE_HOME");
	if (v && *v)
		snprintf(out, size, "%s", v);
	else if (x && *x)
		snprintf(out, size, "%s/llama.cpp", x);
	else
		snprintf(out, size, "%s/.cache/llama.cpp", home());
}

/* LM Studio's folder: i = 0 the current one, 1 the older one. */
static void lmstudio_dir(int i, char *out, size_t size)
{
	snprintf(out, size, i == 0 ? "%s/.lmstudio/models" : "%s/.cache/lm-studio/models", home());
}

/* A part of a name: 1..PART_MAX of [A-Za-z0-9._-], starting with a letter
 * or digit (so never "." or ".."). */
static bool good_part(const char *s, size_t n)
{
	if (n == 0 || n > PART_MAX || !((s[0] >= 'a' && s[0] <= 'z') ||
					(s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
			return false;
	return true;
}

/* A path of parts below a root: "a/b/c.gguf", each part good. */
static bool good_rel(const char *s, int parts)
{
	int k = 0;
	for (const char *p = s;; k++) {
		const char *sl = strchr(p, '/');
		size_t n = sl ? (size_t)(sl - p) : strlen(p);
		if (!good_part(p, n))
			return false;
		if (!sl)
			return k + 1 == parts;
		p = sl + 1;
	}
}

/* ------------------------------------------------------------- Ollama */

struct oname {
	char host[PART_MAX + 1], ns[PART_MAX + 1], model[PART_MAX + 1], tag[PART_MAX + 1];
};

/* [[HOST/]NS/]MODEL[:TAG] into n; false when it is not such a name. */
static bool oname_parse(const char *spec, struct oname *n)
{
	const char *parts[3];
	size_t len[3];
	int k = 0;
	const char *p = spec, *colon = strrchr(spec, ':');
	if (colon && strchr(colon, '/'))
		return false;
	const char *end = colon ? colon : spec + strlen(spec);
	while (k < 3) {
		const char *sl = memchr(p, '/', (size_t)(end - p));
		parts[k] = p;
		len[k++] = sl ? (size_t)(sl - p) : (size_t)(end - p);
		if (!sl)
			break;
		p = sl + 1;
	}
	if (p + len[k - 1] != end)
		return false; /* four parts or more */
	for (int i = 0; i < k; i++)
		if (!good_part(parts[i], len[i]))
			return false;
	if (colon && !good_part(colon + 1, strlen(colon + 1)))
		return false;
	snprintf(n->host, sizeof n->host, "%.*s", k == 3 ? (int)len[0] : -1, k == 3 ? parts[0] :
		 OLLAMA_HOST);
	snprintf(n->ns, sizeof n->ns, "%.*s", k >= 2 ? (int)len[k - 2] : -1, k >= 2 ? parts[k - 2] :
		 OLLAMA_NS);
	snprintf(n->model, sizeof n->model, "%.*s", (int)len[k - 1], parts[k - 1]);
	snprintf(n->tag, sizeof n->tag, "%s", colon ? colon + 1 : "latest");
	return true;
}

/* The name as Ollama lists it: "qwen2.5:0.5b", "ns/name:tag", "host/ns/name:tag". */
static char *oname_str(const struct oname *n)
{
	char buf[4 * PART_MAX + 8];
	if (strcmp(n->host, OLLAMA_HOST))
		snprintf(buf, sizeof buf, "%s/%s/%s:%s", n->host, n->ns, n->model, n->tag);
	else if (strcmp(n->ns, OLLAMA_NS))
		snprintf(buf, sizeof buf, "%s/%s:%s", n->ns, n->model, n->tag);
	else
		snprintf(buf, sizeof buf, "%s:%s", n->model, n->tag);
	return xstrdup(buf);
}

/* The model layer's blob: checks the digest, then the file. */
static int blob_of(const char *root, const char *manifest, json_t *layer, char *out, size_t size,
		   struct err *e)
{
	json_t *d = json_object_get(layer, "digest"), *sz = json_object_get(layer, "size");
	const char *dg = json_is_string(d) ? json_string_value(d) : NULL;
	bool hex = dg && strlen(dg) == 71 && !strncmp(dg, "sha256:", 7);
	for (int i = 7; hex && i < 71; i++)
		hex = (dg[i] >= '0' && dg[i] <= '9') || (dg[i] >= 'a' && dg[i] <= 'f');
	if (!hex) {
		char shown[4 * 80 + 1] = "(none)";
		if (dg)
			utf8_printable(dg, strlen(dg) > 80 ? 80 : strlen(dg), shown, sizeof shown);
		return err_set(e, "%s: model layer digest %s is not sha256:<64 hex>",
			       manifest, shown);
	}
	int k = snprintf(out, size, "%s/blobs/sha256-%s", root, dg + 7);
	if (k < 0 || (size_t)k >= size)
		return err_set(e, "%s: blob path too long", manifest);
	struct stat st;
	if (stat(out, &st) != 0)
		return err_set(e, "%s: blob %s: %s", manifest, out,
			       errno == ENOENT ? "missing (`ollama pull` fetches it)" :
			       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(e, "%s: blob %s is %s, not a file", manifest, out,
			       file_kind(st.st_mode));
	if (json_is_integer(sz) && json_integer_value(sz) != (json_int_t)st.st_size)
		return err_set(e, "%s: blob %s holds %lld bytes, not %lld (partial download?)", manifest, out, (long long)st.st_size,
			       (long long)json_integer_value(sz));
	return 0;
}

/* Manifest at path -> its model blob.  0, or -1 + e. */
static int manifest_blob(const char *root, const char *path, char *out, size_t size,
			 struct err *e)
{
	json_error_t je;
	json_t *m = ju_load_file(path, 0, &je);
	if (!m) {
		if (je.line < 0)
			return err_set(e, "%s", je.text);
		err_set(e, "%s: not a JSON manifest (line %d: %s)", path, je.line, je.text);
		ld_one_line(e); /* jansson quotes the text near the error, newlines and all */
		return -1;
	}
	json_t *layers = json_object_get(m, "layers"), *found = NULL;
	size_t i;
	json_t *l;
	json_array_foreach(layers, i, l) {
		json_t *mt = json_object_get(l, "mediaType");
		if (json_is_string(mt) && !strcmp(json_string_value(mt), OLLAMA_MODEL_LAYER)) {
			found = l;
			break;
		}
	}
	int rc = found ? blob_of(root, path, found, out, size, e) :
		 err_set(e, "%s: no layer of mediaType " OLLAMA_MODEL_LAYER, path);
	json_decref(m);
	return rc;
}

static int ollama_resolve(const char *spec, char *out, size_t size, struct err *e)
{
	struct oname n;
	if (!oname_parse(spec, &n))
		return 1;
	char root[PATH_MAX], man[PATH_MAX + 4 * PART_MAX + 16];
	ollama_dir(root, sizeof root);
	snprintf(man, sizeof man, "%s/manifests/%s/%s/%s/%s", root, n.host, n.ns, n.model, n.tag);
	struct stat st;
	if (lstat(man, &st) != 0) {
		if (!strchr(spec, ':'))
			return 1;
		return err_set(e, "%s: no Ollama manifest %s (`ollama pull %s` fetches it; "
			       "$OLLAMA_MODELS says where Ollama keeps them)", spec, man, spec);
	}
	return manifest_blob(root, man, out, size, e);
}

/* msg as a listing shows it under the manifest's name: without the
 * manifest's path that starts it, root/ and root/blobs/ before paths, a blob's
 * digest cut to 12 digits.  malloc'd. */
static char *short_why(const char *msg, const char *root, const char *manifest)
{
	size_t rn = strlen(root), mn = strlen(manifest);
	if (!strncmp(msg, manifest, mn) && (msg[mn] == ':'))
		msg += mn + (msg[mn + 1] == ' ' ? 2 : 1);
	char *out = xmalloc(strlen(msg) + 1), *o = out;
	while (*msg) {
		if (!strncmp(msg, root, rn) && msg[rn] == '/') {
			msg += rn + 1;
			if (!strncmp(msg, "blobs/", 6))
				msg += 6;
			continue;
		}
		if (!strncmp(msg, "sha256-", 7) && strlen(msg) >= 71) {
			memcpy(o, msg, 19);
			o += 19;
			memcpy(o, "...", 3);
			o += 3;
			msg += 71;
			continue;
		}
		*o++ = *msg++;
	}
	*o = '\0';
	return out;
}

/* Every manifest under root/manifests/HOST/NS/MODEL/TAG. */
static void ollama_places(struct model_place **p, int *n, int *cap)
{
	char root[PATH_MAX], dir[PATH_MAX + 16];
	ollama_dir(root, sizeof root);
	snprintf(dir, sizeof dir, "%s/manifests", root);
	struct oname on;
	char *at[4] = { on.host, on.ns, on.model, on.tag };
	char path[5][PATH_MAX + 4 * PART_MAX + 32];
	DIR *d[4] = { NULL };
	int depth = 0;
	snprintf(path[0], sizeof path[0], "%s", dir);
	d[0] = opendir(dir);
	while (depth >= 0) {
		struct dirent *de = d[depth] ? readdir(d[depth]) : NULL;
		if (!de) {
			if (d[depth])
				closedir(d[depth]);
			d[depth--] = NULL;
			continue;
		}
		if (!good_part(de->d_name, strlen(de->d_name)))
			continue;
		size_t len = strlen(de->d_name), at_len = strlen(path[depth]);
		memcpy(at[depth], de->d_name, len + 1); /* good_part: at most PART_MAX */
		if (at_len + len + 2 > sizeof path[0])
			continue;
		memcpy(path[depth + 1], path[depth], at_len);
		path[depth + 1][at_len] = '/';
		memcpy(path[depth + 1] + at_len + 1, de->d_name, len + 1);
		if (depth < 3) {
			depth++;
			d[depth] = opendir(path[depth]);
			continue;
		}
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 16;
			*p = xrealloc(*p, (size_t)*cap * sizeof **p);
		}
		char blob[PATH_MAX];
		struct err e;
		bool ok = manifest_blob(root, path[4], blob, sizeof blob, &e) == 0;
		(*p)[(*n)++] = (struct model_place){ oname_str(&on), xstrdup(ok ? blob : path[4]),
						     "ollama",
						     ok ? NULL : short_why(e.msg, root, path[4]) };
	}
}

/* ---------------------------------------------- LM Studio, llama.cpp */

/* discover_resolve's work; its messages may quote spec as it is. */
static int resolve_spec(const char *spec, char *out, size_t size, struct err *e)
{
	char root[PATH_MAX];
	int k;
	if (!strncmp(spec, "lmstudio:", 9)) {
		if (!good_rel(spec + 9, 3))
			return err_set(e, "%s: expected lmstudio:PUBLISHER/REPO/FILE.gguf", spec);
		for (int i = 0; i < 2; i++) {
			lmstudio_dir(i, root, sizeof root);
			k = snprintf(out, size, "%s/%s", root, spec + 9);
			if (k > 0 && (size_t)k < size && is_reg(out))
				return 0;
		}
		lmstudio_dir(0, root, sizeof root);
		return err_set(e, "%s: not in LM Studio's folder %s (nor the older ~/.cache/lm-studio/models)",
			       spec, root);
	}
	if (!strncmp(spec, "llama.cpp:", 10)) {
		llamacpp_dir(root, sizeof root);
		if (!good_rel(spec + 10, 1))
			return err_set(e, "%s: expected llama.cpp:FILE.gguf", spec);
		k = snprintf(out, size, "%s/%s", root, spec + 10);
		if (k > 0 && (size_t)k < size && is_reg(out))
			return 0;
		return err_set(e, "%s: not in llama.cpp's cache %s ($LLAMA_CACHE)", spec, root);
	}
	return ollama_resolve(spec, out, size, e);
}

int discover_resolve(const char *spec, char *out, size_t size, struct err *e)
{
	int rc = resolve_spec(spec, out, size, e);
	if (rc < 0)
		ld_one_line(e); /* a name typed with control characters stays one line */
	return rc;
}

static bool is_gguf_name(const char *f)
{
	size_t n = strlen(f);
	return n > 5 && !strcmp(f + n - 5, ".gguf");
}

static void add_file(struct model_place **p, int *n, int *cap, const char *name,
		     const char *path, const char *source)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*p = xrealloc(*p, (size_t)*cap * sizeof **p);
	}
	(*p)[(*n)++] = (struct model_place){ xstrdup(name), xstrdup(path), source, NULL };
}

/* The *.gguf files of dir (depth 0), or of dir/A/B (depth 2), as
 * prefix + the path below dir. */
static void gguf_files(struct model_place **p, int *n, int *cap, const char *dir, int depth,
		       const char *prefix, const char *source)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *f = de->d_name;
		if (!good_part(f, strlen(f)))
			continue;
		char path[PATH_MAX + PART_MAX + 2], name[PART_MAX * 3 + 32];
		snprintf(path, sizeof path, "%s/%s", dir, f);
		if (depth > 0) {
			char pre[PART_MAX * 3 + 32];
			snprintf(pre, sizeof pre, "%s%s/", prefix, f);
			gguf_files(p, n, cap, path, depth - 1, pre, source);
		} else if (is_gguf_name(f) && is_reg(path)) {
			snprintf(name, sizeof name, "%s%s", prefix, f);
			add_file(p, n, cap, name, path, source);
		}
	}
	closedir(d);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct model_place *)a)->name, ((const struct model_place *)b)->name);
}

void discover_places(struct model_place **p, int *n, int *cap)
{
	int first = *n;
	ollama_places(p, n, cap);
	char root[PATH_MAX];
	for (int i = 0; i < 2; i++) {
		lmstudio_dir(i, root, sizeof root);
		gguf_files(p, n, cap, root, 2, "lmstudio:", "lm studio");
	}
	llamacpp_dir(root, sizeof root);
	gguf_files(p, n, cap, root, 0, "llama.cpp:", "llama.cpp");
	if (*n > first) /* *p is NULL while nothing has been added */
		qsort(*p + first, (size_t)(*n - first), sizeof **p, by_name);
}

/* ------------------------------------------------------------- summary */

int gguf_summarize(const char *path, struct gguf_summary *s, struct err *e)
{
	struct gguf_file f = { .fd = -1 };
	if (gguf_open(&f, path, e) != 0)
		return -1;
	char *arch = NULL;
	struct err ignore;
	snprintf(s->arch, sizeof s->arch, "?");
	if (gguf_get_str(&f, "general.architecture", 48, &arch, &ignore) == 0)
		utf8_printable(arch, strlen(arch), s->arch, sizeof s->arch);
	free(arch);
	uint64_t bytes[64] = { 0 };
	for (int i = 0; i < f.n_t; i++)
		if (f.t[i].type < 64)
			bytes[f.t[i].type] += f.t[i].bytes;
	int best = -1;
	for (int t = 0; t < 64; t++)
		if (bytes[t] && (best < 0 || bytes[t] > bytes[best]))
			best = t;
	const char *q = best >= 0 ? ggml_type_name((uint32_t)best) : NULL;
	snprintf(s->quant, sizeof s->quant, "%s", q ? q : "-");
	s->file_bytes = f.size;
	gguf_close(&f);
	return 0;
}
