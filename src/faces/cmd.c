/*
 * cmd.c — the command table, lookup with suggestions, the line splitter and
 * cmd_run(), the single entry point every face uses.
 */
#include "cmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "render.h"
#include "store.h"
#include "utf8.h"

extern const struct cmd_entry cmd_load_entry, cmd_text_entry, cmd_attn_entry, cmd_norm_entry,
	cmd_mask_entry, cmd_scale_entry, cmd_ablate_entry, cmd_restore_entry, cmd_reset_entry,
	cmd_echo_entry, cmd_pause_entry, cmd_help_entry, cmd_quit_entry, cmd_show_entry,
	cmd_top_entry, cmd_stats_entry, cmd_kv_entry, cmd_export_entry;
extern const struct cmd_entry cmd_heads_entry, cmd_sweep_entry, cmd_compare_entry;
extern const struct cmd_entry cmd_save_entry, cmd_sessions_entry, cmd_open_entry,
	cmd_replay_entry, cmd_measurements_entry;
extern const struct cmd_entry cmd_view_entry, cmd_generate_entry, cmd_lens_entry, cmd_patch_entry,
	cmd_dla_entry, cmd_circuits_entry, cmd_why_entry, cmd_qkov_entry;
extern const struct cmd_entry cmd_lab_entry, cmd_batch_entry, cmd_forget_entry, cmd_curves_entry,
	cmd_heat_entry, cmd_beside_entry, cmd_models_entry, cmd_expect_entry, cmd_tour_entry,
	cmd_pitfall_entry, cmd_pull_entry;

const struct cmd_entry *const cmd_table[] = {
	&cmd_load_entry,
	&cmd_models_entry,
	&cmd_pull_entry,
	&cmd_text_entry,
	&cmd_attn_entry,
	&cmd_norm_entry,
	&cmd_mask_entry,
	&cmd_scale_entry,
	&cmd_pitfall_entry,
	&cmd_ablate_entry,
	&cmd_restore_entry,
	&cmd_reset_entry,
	&cmd_show_entry,
	&cmd_heat_entry,
	&cmd_beside_entry,
	&cmd_top_entry,
	&cmd_generate_entry,
	&cmd_lens_entry,
	&cmd_patch_entry,
	&cmd_dla_entry,
	&cmd_circuits_entry,
	&cmd_why_entry,
	&cmd_qkov_entry,
	&cmd_batch_entry,
	&cmd_curves_entry,
	&cmd_stats_entry,
	&cmd_heads_entry,
	&cmd_sweep_entry,
	&cmd_compare_entry,
	&cmd_kv_entry,
	&cmd_lab_entry,
	&cmd_export_entry,
	&cmd_save_entry,
	&cmd_sessions_entry,
	&cmd_forget_entry,
	&cmd_open_entry,
	&cmd_replay_entry,
	&cmd_measurements_entry,
	&cmd_view_entry,
	&cmd_echo_entry,
	&cmd_expect_entry,
	&cmd_pause_entry,
	&cmd_tour_entry,
	&cmd_help_entry,
	&cmd_quit_entry,
	NULL,
};

/* ------------------------------------------------------------------ lookup */

const struct cmd_entry *cmd_find(const char *name, struct err *e)
{
	const struct cmd_entry *prefix = NULL;
	int n_prefix = 0;
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *c = cmd_table[i];
		if (!strcmp(c->name, name) || (c->alias && !strcmp(c->alias, name)))
			return c;
		if (name[0] && !strncmp(c->name, name, strlen(name))) {
			prefix = c;
			n_prefix++;
		}
	}
	if (n_prefix == 1)
		return prefix;
	char list[ERR_MAX / 2] = "";
	size_t n = 0;
	if (n_prefix > 1) {
		for (int i = 0; cmd_table[i]; i++)
			if (!strncmp(cmd_table[i]->name, name, strlen(name)) && n < sizeof list)
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
						      cmd_table[i]->name);
		err_set(e, "ambiguous command: %.64s, could be: %s", name, list);
		return NULL;
	}
	char shown[96];
	utf8_printable(name, strnlen(name, 64), shown, sizeof shown);
	int limit = strlen(name) <= 3 ? 1 : 2;
	for (int i = 0; cmd_table[i]; i++)
		if (edit_distance(name, cmd_table[i]->name) <= limit && n < sizeof list)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
					      cmd_table[i]->name);
	if (n)
		err_set(e, "unknown command: %s (did you mean: %s?)", shown, list);
	else
		err_set(e, "unknown command: %s (type help for the list)", shown);
	return NULL;
}

int cmd_parse_int(const char *arg, int lo, int hi, const char *what, int *out, struct err *e)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < lo || v > hi)
		return err_set(e, "%.32s: %s must be a whole number from %d to %d", arg, what, lo, hi);
	*out = (int)v;
	return 0;
}

void cmd_usage(const struct cmd_entry *c, char *buf, size_t size)
{
	snprintf(buf, size, "usage: ");
	if (size > 7)
		cmd_synopsis(c, buf + 7, size - 7);
}

void cmd_synopsis(const struct cmd_entry *c, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s%s%s", c->name, c->usage && c->usage[0] ? " " : "",
				    c->usage ? c->usage : "");
	for (int i = 0; c->opts && c->opts[i].name && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, " [%s%s%s]", c->opts[i].name,
				      c->opts[i].arg ? " " : "", c->opts[i].arg ? c->opts[i].arg : "");
}

/* ---------------------------------------------------------- declared options */

int cmd_opt_index(const struct cmd_entry *c, const char *name)
{
	for (int i = 0; c->opts && c->opts[i].name; i++)
		if (!strcmp(c->opts[i].name, name))
			return i;
	return -1;
}

static int usage_error(const struct cmd_entry *c, struct err *e)
{
	char u[512];
	cmd_usage(c, u, sizeof u);
	return err_set(e, "%s", u);
}

/* Checks and stores the value v of option i. */
static int opt_value(const struct cmd_opt *o, int i, const char *v, struct cmd_args *a,
		     struct err *e)
{
	const char *what = o->what ? o->what : o->name;
	if (o->kind == CMD_OPT_WORD) {
		if (!v[0])
			return err_set(e, "%s needs a value", o->name);
		a->str[i] = v;
		return 0;
	}
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	bool whole = o->kind == CMD_OPT_INT;
	if (end == v || *end || errno == ERANGE || !isfinite(x) || x < o->lo || x > o->hi ||
	    (whole && x != floor(x)))
		return err_set(e, "%.32s: %s must be a %s from %g to %g", v, what,
			       whole ? "whole number" : "number", o->lo, o->hi);
	a->num[i] = x;
	return 0;
}

int cmd_args_parse(const struct cmd_entry *c, int argc, char **argv, struct cmd_args *a,
		   struct err *e)
{
	memset(a, 0, sizeof *a);
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i];
		const char *eq = strncmp(w, "--", 2) ? NULL : strchr(w, '=');
		char name[64];
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - w) : (int)strlen(w), w);
		int k = strncmp(w, "--", 2) || !w[2] ? -1 : cmd_opt_index(c, name);
		if (k < 0) {
			if (!strncmp(w, "--", 2) && w[2])
				return usage_error(c, e); /* an option it does not have */
			if (a->n_pos == CMD_MAX_POS)
				return usage_error(c, e);
			a->pos[a->n_pos++] = w;
			continue;
		}
		const struct cmd_opt *o = &c->opts[k];
		a->given[k] = true;
		if (o->kind == CMD_OPT_FLAG) {
			if (eq)
				return usage_error(c, e);
			continue;
		}
		const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!v)
			return usage_error(c, e);
		if (opt_value(o, k, v, a, e) != 0)
			return -1;
	}
	if (a->n_pos < c->min_args || (c->max_args >= 0 && a->n_pos > c->max_args))
		return usage_error(c, e);
	return 0;
}

bool cmd_has(const struct cmd_entry *c, const struct cmd_args *a, const char *name)
{
	int k = cmd_opt_index(c, name);
	if (k < 0)
		die("%s has no option %s", c->name, name);
	return a->given[k];
}

double cmd_num(const struct cmd_entry *c, const struct cmd_args *a, const char *name, double def)
{
	return cmd_has(c, a, name) ? a->num[cmd_opt_index(c, name)] : def;
}

const char *cmd_str(const struct cmd_entry *c, const struct cmd_args *a, const char *name)
{
	return cmd_has(c, a, name) ? a->str[cmd_opt_index(c, name)] : NULL;
}

int cmd_run(struct session *s, int argc, char **argv, struct err *e)
{
	if (argc < 1)
		return 0;
	const struct cmd_entry *c = cmd_find(argv[0], e);
	if (!c)
		return -1;
	int nargs = argc - 1;
	if (!c->opts && (nargs < c->min_args || (c->max_args >= 0 && nargs > c->max_args))) {
		char u[256];
		cmd_usage(c, u, sizeof u);
		return err_set(e, "%s", u);
	}
	if ((c->flags & CMD_LOGITS) && session_need_head(s, c->name, e))
		return -1;
	int reads = in_use_new("a file this command reads");
	in_use_record(reads, true);
	const struct model *m = s->model;
	bool held = m && model_is_held(m);
	int rc = c->exec(s, argc, argv, e);
	in_use_drop(reads);
	if (held && s->model == m && !model_is_held(m) && !s->quiet) {
		char mem[32];
		format_bytes(model_bytes(m), mem, sizeof mem);
		fprintf(s->out, "(%s reads the weights as float32: they take %s now)\n", c->name, mem);
	}
	return rc;
}

/* ------------------------------------------------------------------ output */

void cmd_progress(void *ctx, int done, int total)
{
	if (done < total)
		fprintf(stderr, "\r%s %d/%d", (const char *)ctx, done, total);
	else
		fprintf(stderr, "\r%*s\r", 32, "");
	fflush(stderr);
}

bool cmd_progress_shown(void)
{
	return isatty(STDERR_FILENO);
}

/* The terminal s->out is shown on, or -1. */
static int out_fd(const struct session *s)
{
	int fd = s->out_paged ? STDOUT_FILENO : s->out ? fileno(s->out) : -1;
	return fd >= 0 && isatty(fd) ? fd : -1;
}

bool cmd_out_tty(const struct session *s)
{
	return out_fd(s) >= 0;
}

int cmd_out_width(const struct session *s)
{
	int fd = out_fd(s);
	struct winsize ws;
	if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	int n = c ? atoi(c) : 0;
	return n > 0 ? n : 80;
}

int cmd_style(const struct session *s)
{
	const char *term = getenv("TERM"), *ct = getenv("COLORTERM"), *nc = getenv("NO_COLOR");
	bool many = (term && strstr(term, "256color")) || (ct && *ct);
	if (cmd_out_tty(s) && many && !(nc && *nc))
		return RENDER_ANSI;
	return RENDER_UNICODE;
}

void cmd_wrap(FILE *f, const char *text, int col, int indent, int width)
{
	struct render_buf b;
	render_buf_init(&b);
	render_wrap(&b, text, col, indent, width);
	fwrite(b.data, 1, b.len, f);
	render_buf_free(&b);
}

/* --------------------------------------------------------------- splitting */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int cmd_split(const char *line, int *argc, char ***argv, struct err *e)
{
	int n = 0, cap = 8;
	char **v = xmalloc((size_t)cap * sizeof *v);
	size_t len = strlen(line);
	char *word = xmalloc(len + 1);
	const char *p = line;

	for (;;) {
		/* after the command name, a CMD_RAW command takes the rest verbatim */
		if (n == 1) {
			const struct cmd_entry *c = cmd_find(v[0], NULL);
			if (c && (c->flags & CMD_RAW)) {
				if (is_blank(*p))
					p++;
				size_t k = strlen(p);
				while (k > 0 && (p[k - 1] == '\n' || p[k - 1] == '\r'))
					k--;
				if (k > 0)
					v[n++] = xstrndup(p, k);
				break;
			}
		}
		while (is_blank(*p))
			p++;
		if (!*p || *p == '#')
			break;
		if (n + 2 > cap) {
			cap *= 2;
			v = xrealloc(v, (size_t)cap * sizeof *v);
		}
		size_t w = 0;
		char quote = 0;
		while (*p && (quote || !is_blank(*p))) {
			if (quote) {
				if (*p == quote) {
					quote = 0;
				} else if (*p == '\\' && quote == '"' && (p[1] == '"' || p[1] == '\\')) {
					word[w++] = *++p;
				} else {
					word[w++] = *p;
				}
			} else if (*p == '\'' || *p == '"') {
				quote = *p;
			} else if (*p == '\\' && p[1] && strchr(" \t'\"\\#", p[1])) {
				word[w++] = *++p;
			} else { /* a backslash before any other character stays */
				word[w++] = *p;
			}
			p++;
		}
		if (quote) {
			for (int i = 0; i < n; i++)
				free(v[i]);
			free(v);
			free(word);
			return err_set(e, "unbalanced %c quote", quote);
		}
		v[n++] = xstrndup(word, w);
	}
	free(word);
	v[n] = NULL;
	*argc = n;
	*argv = v;
	return 0;
}

void cmd_free_argv(int argc, char **argv)
{
	if (!argv)
		return;
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

static int run_line(struct session *s, const char *line, struct err *e)
{
	int argc;
	char **argv;
	if (cmd_split(line, &argc, &argv, e) != 0)
		return -1;
	int rc = argc ? cmd_run(s, argc, argv, e) : 0;
	cmd_free_argv(argc, argv);
	return rc;
}

/* With a session database, every line is recorded as it starts and its
 * outcome when it ends (store.h). */
int cmd_run_line(struct session *s, const char *line, struct err *e)
{
	if (!s->store)
		return run_line(s, line, e);
	struct err local;
	if (!e)
		e = &local;
	e->msg[0] = '\0';
	int64_t seq = store_command_begin(s, line);
	int rc = run_line(s, line, e);
	store_command_end(s, seq, rc, e->msg);
	return rc;
}
