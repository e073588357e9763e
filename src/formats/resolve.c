/*
 * resolve.c — model specs to paths, the models directory and the local
 * Hugging Face cache, the list of models found in both, and the data and
 * demos that ship with the program (resolve.h).
 */
#define _GNU_SOURCE
#include "resolve.h"

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discover.h"
#include "loaders.h"

/* The directory of the running executable into out ("" when unknown). */
static void exe_dir(char *out, size_t size)
{
	char exe[PATH_MAX];
	out[0] = '\0';
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(out, size, "%s", exe);
}

const char *models_dir(void)
{
	static char dir[PATH_MAX + 8];
	const char *env = getenv("ATTNSCOPE_MODELS");
	if (env && *env)
		return ld_is_dir(env) ? env : NULL;
	if (ld_is_dir("models"))
		return "models";
	char exe[PATH_MAX];
	exe_dir(exe, sizeof exe);
	if (!exe[0])
		return NULL;
	snprintf(dir, sizeof dir, "%s/models", exe);
	return ld_is_dir(dir) ? dir : NULL;
}

/* A file that ships with the program: name in $env when that is set, else
 * dir/name under the current directory, else dir/name beside the
 * executable.  what names the kind of file in messages. */
static int shipped_file(const char *env_name, const char *dir, const char *name, char *out,
			size_t size, struct err *e)
{
	const char *env = getenv(env_name);
	if (env && *env) {
		snprintf(out, size, "%s/%s", env, name);
		if (ld_is_file(out))
			return 0;
		return err_set(e, "no %s in $%s (%s)", name, env_name, env);
	}
	snprintf(out, size, "%s/%s", dir, name);
	if (ld_is_file(out))
		return 0;
	char exe[PATH_MAX];
	exe_dir(exe, sizeof exe);
	if (exe[0]) {
		snprintf(out, size, "%s/%s/%s", exe, dir, name);
		if (ld_is_file(out))
			return 0;
	}
	return err_set(e, "no %s in %s/ here or beside the program%s%s", name, dir,
		       exe[0] ? " in " : "", exe);
}

int data_file(const char *name, char *out, size_t size, struct err *e)
{
	return shipped_file("ATTNSCOPE_DATA", "data", name, out, size, e);
}

int demo_file(const char *name, char *out, size_t size, struct err *e)
{
	return shipped_file("ATTNSCOPE_DEMOS", "sessions/demos", name, out, size, e);
}

void hf_hub_dir(char *out, size_t size)
{
	const char *v = getenv("HF_HUB_CACHE");
	if (v && *v) {
		snprintf(out, size, "%s", v);
		return;
	}
	v = getenv("HF_HOME");
	if (v && *v) {
		snprintf(out, size, "%s/hub", v);
		return;
	}
	v = getenv("XDG_CACHE_HOME");
	if (v && *v) {
		snprintf(out, size, "%s/huggingface/hub", v);
		return;
	}
	v = getenv("HOME");
	snprintf(out, size, "%s/.cache/huggingface/hub", v && *v ? v : ".");
}

/* hf:NAME or hf:ORG/NAME -> a snapshot directory holding config.json:
 * the one refs/main names, else the most recently modified. */
static int hf_resolve(const char *spec, char *out, size_t size, struct err *e)
{
	const char *id = spec + 3;
	char hub[PATH_MAX], repo[PATH_MAX + 272], snaps[PATH_MAX + 288], ref[256];
	size_t n = strlen(id);

	if (n == 0 || n > 200 || id[0] == '/' || id[n - 1] == '/' || strstr(id, "..") ||
	    strchr(id, '/') != strrchr(id, '/'))
		return err_set(e, "%s: expected hf:NAME or hf:ORG/NAME", spec);
	hf_hub_dir(hub, sizeof hub);
	char flat[256];
	size_t k = 0;
	for (const char *p = id; *p && k + 3 < sizeof flat; p++) {
		if (*p == '/') {
			flat[k++] = '-';
			flat[k++] = '-';
		} else {
			flat[k++] = *p;
		}
	}
	flat[k] = '\0';
	snprintf(repo, sizeof repo, "%s/models--%s", hub, flat);
	snprintf(snaps, sizeof snaps, "%s/snapshots", repo);

	/* refs/main first */
	char refpath[PATH_MAX + 288];
	snprintf(refpath, sizeof refpath, "%s/refs/main", repo);
	int fd = open_regular(refpath, NULL);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	if (fd >= 0 && !f)
		close(fd);
	if (f) {
		if (fgets(ref, sizeof ref, f)) {
			ref[strcspn(ref, "\r\n")] = '\0';
			int k = snprintf(out, size, "%s/%s", snaps, ref);
			char *cfg = ld_join(out, "config.json");
			bool ok = ref[0] && !strchr(ref, '/') && k > 0 && (size_t)k < size &&
				  ld_is_file(cfg);
			free(cfg);
			if (ok) {
				fclose(f);
				return 0;
			}
		}
		fclose(f);
	}
	DIR *d = opendir(snaps);
	double best = -1;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char *dir = ld_join(snaps, de->d_name), *cfg = ld_join(dir, "config.json");
			struct stat st;
			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && ld_is_file(cfg) &&
			    (double)st.st_mtime > best && strlen(dir) < size) {
				best = (double)st.st_mtime;
				snprintf(out, size, "%s", dir);
			}
			free(dir);
			free(cfg);
		}
		closedir(d);
	}
	if (best >= 0)
		return 0;
	return err_set(e, "%s: not in the local Hugging Face cache (no snapshot with config.json "
		       "in %s); attnscope never downloads: fetch it once with network access, "
		       "e.g. `huggingface-cli download %s`, or set HF_HOME", spec, snaps, id);
}

/* ORG/NAME, when the Hugging Face cache has a snapshot of it (as `pull`
 * leaves it): true with the snapshot in out. */
static bool hf_cached(const char *spec, char *out, size_t size)
{
	const char *sl = strchr(spec, '/');
	if (!sl || sl == spec || !sl[1] || strchr(sl + 1, '/') || strlen(spec) > 200)
		return false;
	char hf[208];
	snprintf(hf, sizeof hf, "hf:%s", spec);
	return hf_resolve(hf, out, size, NULL) == 0;
}

int model_resolve(const char *spec, char *out, size_t size, struct err *e)
{
	if (strncmp(spec, "hf:", 3) == 0)
		return hf_resolve(spec, out, size, e);
	if (!strncmp(spec, "lmstudio:", 9) || !strncmp(spec, "llama.cpp:", 10))
		return discover_resolve(spec, out, size, e);
	if (file_refuse_special(spec, true, "a model file or directory", e))
		return -1;
	if (ld_is_file(spec) || ld_is_dir(spec)) {
		if (strlen(spec) >= size)
			return err_set(e, "%.60s...: path too long", spec);
		snprintf(out, size, "%s", spec);
		return 0;
	}
	const char *dir = models_dir();
	if (dir && !strchr(spec, '/')) {
		static const char *const suffixes[] = { ".safetensors", "", ".bin" };
		for (size_t i = 0; i < 3; i++) {
			int n = snprintf(out, size, "%s/%s%s", dir, spec, suffixes[i]);
			if (n > 0 && (size_t)n < size && (ld_is_file(out) || ld_is_dir(out)))
				return 0;
		}
	}
	int rc = discover_resolve(spec, out, size, e);
	if (rc <= 0)
		return rc;
	if (hf_cached(spec, out, size))
		return 0;
	if (dir && !strchr(spec, '/')) {
		char near[256];
		if (model_suggest(spec, near, sizeof near))
			return err_set(e, "%s: no such model file, and no %s/%s.safetensors; did you "
				       "mean %s? (`models` lists them)", spec, dir, spec, near);
		return err_set(e, "%s: no such model file, and no %s/%s.safetensors (`models` "
			       "lists the models there are)", spec, dir, spec);
	}
	return err_set(e, "%s: no such model file", spec);
}

/* ------------------------------------------------------------ listing */

struct places {
	struct model_place *p;
	int n, cap;
};

static void places_add(struct places *v, char *name, char *path, const char *source)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 16;
		v->p = xrealloc(v->p, (size_t)v->cap * sizeof *v->p);
	}
	v->p[v->n++] = (struct model_place){ name, path, source, NULL };
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct model_place *)a)->name, ((const struct model_place *)b)->name);
}

/* The models directory: NAME.safetensors is "NAME", as load takes it;
 * other entries keep their file name. */
static void places_in_models_dir(struct places *v)
{
	const char *dir = models_dir();
	DIR *d = dir ? opendir(dir) : NULL;
	if (!d)
		return;
	int first = v->n;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *f = de->d_name;
		if (f[0] == '.' || has_suffix(f, ".optim") || has_suffix(f, ".tmp"))
			continue;
		char *path = ld_join(dir, f);
		if (!ld_is_file(path) && !ld_is_dir(path)) {
			free(path);
			continue;
		}
		size_t n = strlen(f);
		char *name = has_suffix(f, ".safetensors") ? xstrndup(f, n - 12) : xstrdup(f);
		places_add(v, name, path, "models");
	}
	closedir(d);
	if (v->n > first) /* v->p is NULL while nothing has been added */
		qsort(v->p + first, (size_t)(v->n - first), sizeof *v->p, by_name);
}

/* The cache: models--ORG--NAME with a snapshot holding config.json. */
static void places_in_hf_cache(struct places *v)
{
	char hub[PATH_MAX];
	hf_hub_dir(hub, sizeof hub);
	DIR *d = opendir(hub);
	if (!d)
		return;
	int first = v->n;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "models--", 8) || !de->d_name[8])
			continue;
		char spec[300] = "hf:", path[PATH_MAX];
		size_t k = 3;
		for (const char *p = de->d_name + 8; *p && k + 1 < sizeof spec; p++) {
			if (p[0] == '-' && p[1] == '-') { /* ORG--NAME -> ORG/NAME */
				spec[k++] = '/';
				p++;
			} else {
				spec[k++] = *p;
			}
		}
		spec[k] = '\0';
		if (model_resolve(spec, path, sizeof path, NULL) == 0)
			places_add(v, xstrdup(spec), xstrdup(path), "hf cache");
	}
	closedir(d);
	if (v->n > first) /* v->p is NULL while nothing has been added */
		qsort(v->p + first, (size_t)(v->n - first), sizeof *v->p, by_name);
}

void model_places(struct model_place **out, int *n)
{
	struct places v = { NULL, 0, 0 };
	places_in_models_dir(&v);
	places_in_hf_cache(&v);
	discover_places(&v.p, &v.n, &v.cap);
	*out = v.p;
	*n = v.n;
}

void model_places_free(struct model_place *p, int n)
{
	for (int i = 0; i < n; i++) {
		free(p[i].name);
		free(p[i].path);
		free(p[i].why);
	}
	free(p);
}

int model_suggest(const char *spec, char *out, size_t size)
{
	struct model_place *p;
	int n, best[3], dist[3], k = 0;
	model_places(&p, &n);
	size_t len = strlen(spec);
	int limit = len < 6 ? 1 : (int)len / 3;
	for (int i = 0; i < n; i++) {
		const char *name = p[i].name;
		int d = edit_distance(spec, name);
		if (len >= 3 && !strncasecmp(name, spec, len))
			d = 0; /* a prefix: "shakes" */
		if (d > limit)
			continue;
		int at = k < 3 ? k++ : 3; /* insertion sort into the three nearest */
		while (at > 0 && dist[at - 1] > d) {
			if (at < 3) {
				best[at] = best[at - 1];
				dist[at] = dist[at - 1];
			}
			at--;
		}
		if (at < 3) {
			best[at] = i;
			dist[at] = d;
		}
	}
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; i < k && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 i == 0 ? "" : i == k - 1 ? " or " : ", ", p[best[i]].name);
	model_places_free(p, n);
	return k;
}
