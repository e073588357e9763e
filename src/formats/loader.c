/*
 * loader.c — resolving model specs to files and opening them through the
 * format table (loader.h): attnscope safetensors here, the others in
 * loader-hf.c, loader-hf-llama.c, loader-hf-neox.c, loader-hf-neo.c, loader-hf-bert.c,
 * loader-hf-roberta.c, loader-hf-distilbert.c,
 * loader-gguf.c, loader-llama2c.c and loader-llmc.c.  The helpers they share
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
#include "hf-family.h"
#include "json-util.h"
#include "loaders.h"
#include "tokenizer.h"

/* ------------------------------------------------ attnscope safetensors */

/* A safetensors file: an 8-byte header length that fits the file, then '{'. */
static bool probe_safetensors(const char *path, char *why, size_t n)
{
	struct err e;
	int fd = open_regular(path, &e);
	unsigned char b[9];
	struct stat st;
	bool ok = false;

	if (fd < 0) {
		snprintf(why, n, "%s", e.msg);
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

static int describe_safetensors(const char *path, struct model_config *c, struct err *e)
{
	return checkpoint_describe(path, c, e);
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
	describe_safetensors, NULL, NULL,
};

/* The HF probe comes before ours: it claims a model.safetensors file only
 * when it has GPT-2's names and a config.json beside it. */
static const struct model_format *const formats[] = {
	&format_hf_llama, &format_hf_neox, &format_hf_neo, &format_hf_bert, &format_hf_roberta,
	&format_hf_distilbert, &format_hf_phi3, &format_hf_gemma, &format_hf_gemma3mm,
	&format_hf_olmo2, &format_hf_gpt2, &format_gguf, &format_safetensors, &format_llmc,
	&format_llama2c,
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static bool fmt_probe(const struct model_format *f, const char *path, char *why, size_t n)
{
	return f->hf ? ld_hf_probe(f->hf, path, why, n) : f->probe(path, why, n);
}

static struct model *fmt_load(const struct model_format *f, const char *path,
			      const struct load_opts *o, struct err *e)
{
	return f->hf ? ld_hf_load(f->hf, path, o, e) : f->load(path, o, e);
}

/* -1 + e, or (no describe) 1. */
static int fmt_describe(const struct model_format *f, const char *path, struct model_config *c,
			struct err *e)
{
	if (f->hf)
		return ld_hf_describe(f->hf, path, c, e);
	return f->describe ? f->describe(path, c, e) : 1;
}

/* "gpt2, llama, ... and bert": the model_type values the families claim. */
static void family_types(char *buf, size_t size)
{
	const char *name[64];
	size_t n = 0, k = 0;
	for (size_t i = 0; i < N_FORMATS; i++)
		for (size_t j = 0; formats[i]->hf && formats[i]->hf->types[j] && n < 64; j++)
			name[n++] = formats[i]->hf->types[j];
	buf[0] = '\0';
	for (size_t i = 0; i < n && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s",
				      i == 0 ? "" : i + 1 == n ? " and " : ", ", name[i]);
}

/* A directory whose config.json names a model_type no family claims:
 * -1 + e saying so, with the ones that are; else 0. */
static int unknown_family(const char *path, struct err *e)
{
	char *cfg = ld_join(path, "config.json");
	json_t *root = ld_is_dir(path) ? ju_load_file(cfg, 0, NULL) : NULL;
	json_t *t = json_object_get(root, "model_type");
	int rc = 0;
	if (json_is_string(t)) {
		char list[256];
		family_types(list, sizeof list);
		rc = err_set(e, "%s: config.json: model_type \"%.40s\" is not supported (%s are)",
			     path, json_string_value(t), list);
		ld_one_line(e);
	}
	json_decref(root);
	free(cfg);
	return rc;
}

const char *model_format_desc(const char *format)
{
	for (size_t i = 0; format && i < N_FORMATS; i++)
		if (strcmp(formats[i]->name, format) == 0)
			return formats[i]->desc;
	return format ? format : "?";
}

/* ---------------------------------------------------------------- opening */

double model_weight_bytes(const struct model_config *c)
{
	return 4.0 * (double)config_param_count(c);
}

static const struct model_format *format_of(const char *path, char whys[][96]);

/* Whether ATTNSCOPE_WEIGHTS=f32 asks for every weight as float32. */
static bool weights_f32(void)
{
	const char *w = getenv("ATTNSCOPE_WEIGHTS");
	return w && !strcmp(w, "f32");
}

/* The bytes a load of path takes for config c: its parameters at the
 * files' bytes a value when the format keeps them as stored and that is
 * under 4, else float32's.  *held says which. */
static double load_bytes(const char *path, const struct model_format *fmt,
			 const struct model_config *c, bool *held)
{
	double f32 = model_weight_bytes(c), b, v;
	int (*stored)(const char *, double *, double *) =
		fmt->hf ? ld_hf_stored_bytes : fmt->stored_bytes;
	*held = !weights_f32() && stored && stored(path, &b, &v) == 0 && v > 0 && b < 4 * v;
	return *held ? f32 / 4 * (b / v) : f32;
}

/* Refuses, before a weight is read, a model whose weights will not fit. */
static int check_fits(const char *path, const struct model_format *fmt, struct err *e)
{
	struct model_config c;
	struct err ignore;
	bool held;
	if (fmt_describe(fmt, path, &c, &ignore))
		return 0; /* the load names what is wrong */
	double need = load_bytes(path, fmt, &c, &held), avail = mem_available();
	if (avail < 0 || need <= avail)
		return 0;
	char n[32], a[32];
	format_bytes(need, n, sizeof n);
	format_bytes(avail, a, sizeof a);
	return err_set(e, "%s: its %zu parameters need %s %s, and %s of memory is available; it "
		       "will not fit", path, config_param_count(&c), n,
		       held ? "held as the files store them" : "as float32", a);
}

int model_memory(const char *path, double *bytes, bool *held, struct err *e)
{
	char whys[N_FORMATS][96];
	struct model_config c;
	const struct model_format *fmt = format_of(path, whys);
	if (!fmt)
		return err_set(e, "%s: not a model format attnscope knows", path);
	if (fmt_describe(fmt, path, &c, e))
		return -1;
	*bytes = load_bytes(path, fmt, &c, held);
	return 0;
}

static const struct model_format *format_of(const char *path, char whys[][96])
{
	for (size_t i = 0; i < N_FORMATS; i++) {
		whys[i][0] = '\0';
		if (fmt_probe(formats[i], path, whys[i], sizeof whys[i]))
			return formats[i];
	}
	return NULL;
}

/* "PATH: not a model format attnscope knows (one reason per format)";
 * formats in a row with the same reason (the Hugging Face families) share
 * one: "hf-llama, hf-neox: REASON". */
static int unknown_format(const char *path, char whys[][96], struct err *e)
{
	char msg[ERR_MAX];
	size_t k = (size_t)snprintf(msg, sizeof msg, "%s: not a model format attnscope knows (", path);
	for (size_t i = 0; i < N_FORMATS && k < sizeof msg; i++) {
		bool more = i + 1 < N_FORMATS && !strcmp(whys[i], whys[i + 1]);
		bool first = i == 0 || strcmp(whys[i - 1], whys[i]);
		k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s%s%s", i == 0 ? "" : first ? "; " : ", ",
				      formats[i]->name, more ? "" : ": ", more ? "" : whys[i]);
	}
	if (k < sizeof msg)
		snprintf(msg + k, sizeof msg - k, ")");
	err_set(e, "%s", msg);
	ld_one_line(e);
	return -1;
}

int model_describe(const char *spec, struct model_config *c, const char **format,
		   struct err *e)
{
	char path[PATH_MAX];
	char whys[N_FORMATS][96];
	if (model_resolve(spec, path, sizeof path, e) != 0)
		return -1;
	const struct model_format *fmt = format_of(path, whys);
	if (!fmt)
		return unknown_family(path, e) ? -1 : unknown_format(path, whys, e);
	if (format)
		*format = fmt->name;
	int rc = fmt_describe(fmt, path, c, e);
	if (rc > 0)
		return err_set(e, "%s: a %s cannot be described without loading it", path, fmt->desc);
	if (rc) {
		ld_one_line(e);
		return -1;
	}
	return 0;
}

struct model *model_open_ex(const char *spec, const char *tokenizer, const char **format,
			    struct err *e)
{
	char path[PATH_MAX];
	char whys[N_FORMATS][96];
	struct load_opts o = { .tokenizer = tokenizer, .f32 = weights_f32() };

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
	const struct model_format *fmt = format_of(path, whys);
	if (!fmt) {
		if (!unknown_family(path, e))
			unknown_format(path, whys, e);
		return NULL;
	}
	if (check_fits(path, fmt, e))
		return NULL;
	struct model *m = fmt_load(fmt, path, &o, e);
	if (m && format)
		*format = fmt->name;
	if (!m)
		ld_one_line(e);
	return m;
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
