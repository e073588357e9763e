/*
 * cmd-models.c — models: the models there are to load, from the models
 * directory and the local Hugging Face cache (resolve.h), each described
 * from its header or config.json alone (loader.h), never loaded.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "discover.h"
#include "loader.h"
#include "utf8.h"

/* "812 K", "1.2 M", "135 M", "1.5 B": a parameter count at a glance. */
static void format_count(double n, char *buf, size_t size)
{
	static const char *const units[] = { "", " K", " M", " B" };
	int u = 0;
	while (n >= 1000.0 && u < 3) {
		n /= 1000.0;
		u++;
	}
	snprintf(buf, size, n < 10 && u ? "%.1f%s" : "%.0f%s", n, units[u]);
}

/* Three significant digits with binary units: "3.18 MiB", "517 MiB". */
static void format_size(double bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (bytes >= 1000.0 && u < 4) {
		bytes /= 1024.0;
		u++;
	}
	snprintf(buf, size, bytes < 10 && u ? "%.2f %s" : bytes < 100 && u ? "%.1f %s" : "%.0f %s",
		 bytes, units[u]);
}

/* Whether path is the file or directory the session's model came from. */
static bool is_loaded(const struct session *s, const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];
	return s->model && s->model->path && realpath(path, a) && realpath(s->model->path, b) &&
	       !strcmp(a, b);
}

/* A GGUF file's line under its row: its architecture, the tensor type
 * holding most of its bytes, its size and which tool keeps it. */
static void print_gguf(struct session *s, const struct model_place *p)
{
	struct gguf_summary g;
	struct err e;
	if (gguf_summarize(p->path, &g, &e) != 0)
		return; /* not GGUF: the row says what it is */
	char bytes[16];
	format_size((double)g.file_bytes, bytes, sizeof bytes);
	fprintf(s->out, "    %s, %s, %s file (%s)\n", g.arch, g.quant, bytes, p->source);
}

static void print_place(struct session *s, const struct model_place *p, int name_w)
{
	char name[4 * 64 + 1], why[ERR_MAX];
	utf8_printable(p->name, strlen(p->name), name, sizeof name);
	struct model_config c;
	const char *format = NULL;
	struct err e;
	char mark = is_loaded(s, p->path) ? '*' : ' ';
	if ((int)strlen(name) > name_w) { /* a long name on a line of its own */
		fprintf(s->out, "%c %s\n", mark, name);
		name[0] = '\0';
		mark = ' ';
	}
	if (p->why) { /* a name that does not resolve: an Ollama manifest */
		utf8_printable(p->why, strlen(p->why), why, sizeof why);
		fprintf(s->out, "%c %-*.*s  (%s)\n    %.*s\n", mark, name_w, name_w, name, p->source,
			cmd_out_width(s) - 5, why);
		return;
	}
	if (model_describe(p->path, &c, &format, &e) != 0) {
		/* what a load would say, without the path it starts with */
		const char *msg = e.msg;
		size_t n = strlen(p->path);
		if (!strncmp(msg, p->path, n) && !strncmp(msg + n, ": ", 2))
			msg += n + 2;
		utf8_printable(msg, strlen(msg), why, sizeof why);
		fprintf(s->out, "%c %-*.*s  (%s)\n", mark, name_w, name_w, name,
			format ? format : "not a model");
		fprintf(s->out, "    %.*s\n", cmd_out_width(s) - 5, why);
		print_gguf(s, p);
		return;
	}
	char params[16], bytes[16];
	double mem;
	bool held;
	if (model_memory(p->path, &mem, &held, &e) != 0)
		mem = model_weight_bytes(&c);
	format_count((double)config_param_count(&c), params, sizeof params);
	format_size(mem, bytes, sizeof bytes);
	fprintf(s->out, "%c %-*.*s  %-11s %3d %3d %3d %5d %5d %6s %8s\n", mark, name_w, name_w,
		name, format, c.n_layer, c.n_head, c.n_kv_head, c.d_model, c.context, params, bytes);
	print_gguf(s, p);
}

static int models_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	(void)argv;
	(void)e;
	struct model_place *p;
	int n;
	model_places(&p, &n);
	const char *dir = models_dir();
	char hub[PATH_MAX];
	hf_hub_dir(hub, sizeof hub);
	fprintf(s->out, "models directory    %s\nHugging Face cache  %s\n",
		dir ? dir : "(none: no models/ here or beside attnscope)", hub);
	char ollama[PATH_MAX];
	ollama_dir(ollama, sizeof ollama);
	fprintf(s->out, "Ollama              %s\n", ollama);
	int name_w = 4;
	for (int i = 0; i < n; i++) {
		int w = (int)strlen(p[i].name);
		if (w > name_w)
			name_w = w;
	}
	int room = cmd_out_width(s) - 55; /* the columns after the name take 53 */
	if (name_w > room)
		name_w = room < 12 ? 12 : room;
	fprintf(s->out, "  %-*s  %-11s %3s %3s %3s %5s %5s %6s %8s\n", name_w, "name", "format",
		"L", "H", "KV", "d", "ctx", "params", "memory");
	for (int i = 0; i < n; i++)
		print_place(s, &p[i], name_w);
	if (n == 0)
		fprintf(s->out, "  (none)\n");
	else
		fprintf(s->out, "* loaded.  L layers, H query heads, KV key/value heads, d width, "
			"ctx context;\nmemory: the weights loaded, 16-bit and quantized tensors as "
			"stored, the rest as\nfloat32 (ATTNSCOPE_WEIGHTS=f32: all as float32).\n");
	model_places_free(p, n);
	return 0;
}

const struct cmd_entry cmd_models_entry = {
	.name = "models",
	.help = "list the models in models/, the Hugging Face cache, Ollama, LM Studio",
	.long_help =
		"Lists what load can open by name: the models directory ($ATTNSCOPE_MODELS when\n"
		"set, else models/) and the snapshots of the local Hugging Face cache\n"
		"($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub) as hf:ORG/NAME.  Each\n"
		"is described from its header or config.json without loading it: its format,\n"
		"layers, query and key/value heads, width, context, parameters and the memory\n"
		"its weights take loaded: F16, BF16 and quantized matrices are held as the\n"
		"files store them (ATTNSCOPE_WEIGHTS=f32 converts all to float32).  Also listed are the GGUF files other tools keep:\n"
		"Ollama's models ($OLLAMA_MODELS or ~/.ollama/models) by Ollama's names\n"
		"(qwen2.5:0.5b), LM Studio's (~/.lmstudio/models) as lmstudio:PUB/REPO/FILE and\n"
		"llama.cpp's cache ($LLAMA_CACHE or ~/.cache/llama.cpp) as llama.cpp:FILE, each\n"
		"with its architecture, main tensor type and file size.  What attnscope cannot\n"
		"open says why.  Nothing is downloaded.",
	.min_args = 0,
	.max_args = 0,
	.exec = models_exec,
};
