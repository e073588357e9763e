/*
 * loader.c — resolving model specs to files and opening them through the
 * format table (loader.h): attnscope safetensors here, the others in
 * loader-hf.c, loader-hf-llama.c, loader-hf-neox.c, loader-llama2c.c and
 * loader-llmc.c.  The helpers they share
 * are in loader-common.c, below all of them (loaders.h).
 */
#define _GNU_SOURCE
#include "loader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "loaders.h"
#include "tokenizer.h"

/* ------------------------------------------------ attnscope safetensors */

/* A safetensors file: an 8-byte header length that fits the file, then '{'. */
static bool probe_safetensors(const char *path, char *why, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char b[9];
	struct stat st;
	bool ok = false;

	if (fd < 0) {
		snprintf(why, n, "cannot open");
		return false;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 10 &&
	    pread(fd, b, 9, 0) == 9) {
		uint64_t len = 0;
		for (int i = 7; i >= 0; i--)
			len = len << 8 | b[i];
		ok = len >= 2 && len <= (uint64_t)st.st_size - 8 && b[8] == '{';
		if (!ok)
			snprintf(why, n, "no safetensors header");
	} else {
		snprintf(why, n, "not a regular file of 10+ bytes");
	}
	close(fd);
	return ok;
}

static struct model *load_safetensors(const char *path, const struct load_opts *o,
				      struct err *e)
{
	if (o->tokenizer) { /* its ids are the model's own: another vocabulary cannot fit */
		err_set(e, "--tokenizer %s: %s is an attnscope checkpoint, which carries its own "
			"tokenizer (--tokenizer is for llm.c, llama2.c and Hugging Face models)",
			o->tokenizer, path);
		return NULL;
	}
	return checkpoint_load(path, e);
}

const struct model_format format_safetensors = {
	"safetensors", "attnscope safetensors checkpoint", probe_safetensors, load_safetensors,
};

/* The HF probe comes before ours: it claims a model.safetensors file only
 * when it has GPT-2's names and a config.json beside it. */
static const struct model_format *const formats[] = {
	&format_hf_llama, &format_hf_neox, &format_hf_gpt2, &format_safetensors, &format_llmc,
	&format_llama2c,
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

const char *model_format_desc(const char *format)
{
	for (size_t i = 0; format && i < N_FORMATS; i++)
		if (strcmp(formats[i]->name, format) == 0)
			return formats[i]->desc;
	return format ? format : "?";
}

/* -------------------------------------------------------------- resolving */

const char *models_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("ATTNSCOPE_MODELS");
	if (env && *env)
		return ld_is_dir(env) ? env : NULL;
	if (ld_is_dir("models"))
		return "models";
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	snprintf(dir, sizeof dir, "%.*s/models", (int)(sizeof dir - 8), exe);
	return ld_is_dir(dir) ? dir : NULL;
}

/* The hub directory of the local Hugging Face cache. */
static void hf_hub_dir(char *out, size_t size)
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
	FILE *f = fopen(refpath, "r");
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

int model_resolve(const char *spec, char *out, size_t size, struct err *e)
{
	if (strncmp(spec, "hf:", 3) == 0)
		return hf_resolve(spec, out, size, e);
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
	if (dir && !strchr(spec, '/'))
		return err_set(e, "%s: no such model file, and no %s/%s.safetensors", spec, dir, spec);
	return err_set(e, "%s: no such model file", spec);
}

/* ---------------------------------------------------------------- opening */

struct model *model_open_ex(const char *spec, const char *tokenizer, const char **format,
			    struct err *e)
{
	char path[PATH_MAX];
	char whys[N_FORMATS][96];
	struct load_opts o = { tokenizer };

	if (model_resolve(spec, path, sizeof path, e) != 0)
		return NULL;
	struct err te;
	if (tokenizer && file_refuse_special(tokenizer, true, "a tokenizer file or directory", &te)) {
		err_set(e, "--tokenizer %s", te.msg);
		return NULL;
	}
	if (tokenizer && !ld_is_file(tokenizer) && !ld_is_dir(tokenizer)) {
		err_set(e, "--tokenizer %s: no such file or directory", tokenizer);
		return NULL;
	}
	for (size_t i = 0; i < N_FORMATS; i++) {
		whys[i][0] = '\0';
		if (!formats[i]->probe(path, whys[i], sizeof whys[i]))
			continue;
		struct model *m = formats[i]->load(path, &o, e);
		if (m && format)
			*format = formats[i]->name;
		if (!m)
			ld_one_line(e);
		return m;
	}
	char msg[ERR_MAX];
	size_t k = (size_t)snprintf(msg, sizeof msg, "%s: not a model format attnscope knows (", path);
	for (size_t i = 0; i < N_FORMATS && k < sizeof msg; i++)
		k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s: %s", i ? "; " : "",
				      formats[i]->name, whys[i]);
	if (k < sizeof msg)
		snprintf(msg + k, sizeof msg - k, ")");
	err_set(e, "%s", msg);
	ld_one_line(e);
	return NULL;
}

struct model *model_open(const char *spec, struct err *e)
{
	return model_open_ex(spec, NULL, NULL, e);
}

int model_tokenize(const struct model *m, const char *text, size_t len, int **ids, int *n,
		   int *bad_utf8, struct err *e)
{
	*ids = NULL;
	*n = 0;
	if (!m->tok)
		return err_set(e, "model %s has no tokenizer", m->name ? m->name : "?");
	int bad = tok_encode(m->tok, text, len, 1, ids, n, e);
	if (bad < 0)
		return -1;
	if (*n > m->cfg.context) {
		int got = *n;
		free(*ids);
		*ids = NULL;
		*n = 0;
		return err_set(e, "text is %d tokens; the model's context is %d (shorten it by %d)",
			       got, m->cfg.context, got - m->cfg.context);
	}
	if (bad_utf8)
		*bad_utf8 = bad;
	return 0;
}
