/*
 * cmd-complete.c — what Tab offers, for both editors: the REPL's readline
 * and the visualizer's `:` prompt call cmd_complete() and differ only in
 * how they show the result.  Every list comes from where it is defined:
 * command names and options from cmd_table[], a command's words from its
 * entry (or its more_words hook), export formats from export.c, models
 * from resolve.c, head ids from the loaded model.
 */
#include "cmd.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"
#include "heads.h"
#include "resolve.h"

void cmd_cands_add(struct cmd_cands *c, const char *w)
{
	if (strncmp(w, c->word, strlen(c->word)) != 0)
		return;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->v[i], w))
			return;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 32;
		c->v = xrealloc(c->v, (size_t)c->cap * sizeof *c->v);
	}
	c->v[c->n++] = xstrdup(w);
}

void cmd_cands_free(struct cmd_cands *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	free(c->word);
	memset(c, 0, sizeof *c);
}

static void add_list(struct cmd_cands *c, const char *const *words)
{
	for (int i = 0; words && words[i]; i++)
		cmd_cands_add(c, words[i]);
}

static void add_commands(struct cmd_cands *c)
{
	for (int i = 0; cmd_table[i]; i++)
		cmd_cands_add(c, cmd_table[i]->name);
}

static void add_formats(struct cmd_cands *c)
{
	for (int f = 0; f < export_format_count(); f++)
		cmd_cands_add(c, export_format_name((enum export_format)f));
}

/* Head ids "L.H" of the loaded model and the role names (a role stands
 * for its strongest head wherever a head is asked for). */
static void add_heads(const struct session *s, struct cmd_cands *c)
{
	for (int r = 0; r < HEAD_N_ROLES; r++)
		cmd_cands_add(c, heads_role_name((enum head_role)r));
	if (!s || !s->model)
		return;
	char id[32];
	for (int l = 0; l < s->model->cfg.n_layer; l++)
		for (int h = 0; h < s->model->cfg.n_head; h++) {
			snprintf(id, sizeof id, "%d.%d", l, h);
			cmd_cands_add(c, id);
		}
}

static void add_models(struct cmd_cands *c)
{
	struct model_place *p;
	int n;
	model_places(&p, &n);
	for (int i = 0; i < n; i++)
		cmd_cands_add(c, p[i].name);
	model_places_free(p, n);
}

/* The --options a command declares, and those its usage line names
 * ("[--layers N --heads N]"). */
static void add_options(const struct cmd_entry *e, struct cmd_cands *c)
{
	for (int i = 0; e->opts && e->opts[i].name; i++)
		cmd_cands_add(c, e->opts[i].name);
	for (const char *p = e->usage ? strstr(e->usage, "--") : NULL; p; p = strstr(p, "--")) {
		size_t n = 2;
		while (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9'))
			n++;
		if (n > 2) {
			char *w = xstrndup(p, n);
			cmd_cands_add(c, w);
			free(w);
		}
		p += n;
	}
}

/* a, b and c in one malloc'd string. */
static char *cat3(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *r = xmalloc(la + lb + lc + 1);
	memcpy(r, a, la);
	memcpy(r + la, b, lb);
	memcpy(r + la + lb, c, lc + 1);
	return r;
}

/* Paths that start with the word: the entries of its directory part ("~/"
 * is the home directory), directories with a '/' after them, dot files only
 * when the name part starts with '.'. */
static void add_files(struct cmd_cands *c)
{
	const char *slash = strrchr(c->word, '/');
	size_t dlen = slash ? (size_t)(slash - c->word) + 1 : 0;
	char *dir = xstrndup(c->word, dlen); /* as typed, with its '/' */
	const char *home = getenv("HOME");
	char *open_as = !strncmp(dir, "~/", 2) && home ? cat3(home, dir + 1, "")
				 : xstrdup(dlen ? dir : ".");
	const char *base = c->word + dlen;
	DIR *d = opendir(open_as);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (de->d_name[0] == '.' && base[0] != '.') ||
		    strncmp(de->d_name, base, strlen(base)) != 0)
			continue;
		char *full = cat3(open_as, "/", de->d_name);
		struct stat st;
		bool is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
		char *w = cat3(dir, de->d_name, is_dir ? "/" : "");
		cmd_cands_add(c, w);
		free(w);
		free(full);
	}
	if (d)
		closedir(d);
	free(open_as);
	free(dir);
}

/* Whether the option prev of command e takes a file ("--out FILE"). */
static bool takes_file(const struct cmd_entry *e, const char *prev)
{
	if (!strcmp(prev, "-o"))
		return true;
	for (int i = 0; e->opts && e->opts[i].name; i++)
		if (!strcmp(e->opts[i].name, prev))
			return e->opts[i].arg && strstr(e->opts[i].arg, "FILE");
	return false;
}

/* Candidates for argument n (1 = the first after the name) of command e,
 * by its complete kind: WORDS, MODEL and COMMAND only for the first. */
static void add_arguments(const struct session *s, const struct cmd_entry *e, int n,
			  struct cmd_cands *c)
{
	switch (e->complete) {
	case COMPLETE_WORDS:
		if (n == 1) {
			add_list(c, e->words);
			if (e->more_words)
				e->more_words(c);
		}
		break;
	case COMPLETE_MODEL:
		if (n == 1) {
			add_models(c);
			add_files(c);
		}
		break;
	case COMPLETE_HEAD:
		add_list(c, e->words);
		add_heads(s, c);
		break;
	case COMPLETE_FILE:
		add_files(c);
		break;
	case COMPLETE_COMMAND:
		if (n == 1)
			add_commands(c);
		break;
	case COMPLETE_NONE:
		break;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void cmd_complete(const struct session *s, const char *line, size_t cursor, struct cmd_cands *out)
{
	memset(out, 0, sizeof *out);
	size_t start = cursor;
	while (start > 0 && line[start - 1] != ' ' && line[start - 1] != '\t')
		start--;
	out->start = start;
	out->word = xstrndup(line + start, cursor - start);
	char *before = xstrndup(line, start);
	int argc = 0;
	char **argv = NULL;
	struct err e;
	if (cmd_split(before, &argc, &argv, &e) != 0) { /* inside an open quote */
		free(before);
		return;
	}
	free(before);
	const struct cmd_entry *c = argc > 0 ? cmd_find(argv[0], NULL) : NULL;
	const char *prev = argc > 0 ? argv[argc - 1] : "";
	if (argc == 0)
		add_commands(out);
	else if (!c || c->flags & CMD_RAW)
		; /* free text: nothing to offer */
	else if (!strcmp(prev, "--format"))
		add_formats(out);
	else if (argc >= 2 && takes_file(c, prev))
		add_files(out);
	else if (out->word[0] == '-')
		add_options(c, out);
	else if (argc >= 2 && (!strcmp(prev, "head") || !strcmp(prev, "heatmap") || !strcmp(prev, "diff")))
		add_heads(s, out);
	else
		add_arguments(s, c, argc, out);
	cmd_free_argv(argc, argv);
	if (out->n > 1)
		qsort(out->v, (size_t)out->n, sizeof *out->v, by_name);
}

size_t cmd_cands_common(const struct cmd_cands *c)
{
	if (c->n == 0)
		return 0;
	size_t common = strlen(c->v[0]);
	for (int i = 1; i < c->n; i++) {
		size_t k = 0;
		while (k < common && c->v[i][k] == c->v[0][k])
			k++;
		common = k;
	}
	return common;
}
