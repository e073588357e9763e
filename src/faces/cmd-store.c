/*
 * cmd-store.c — the session database at the prompt: save, sessions, open,
 * replay, measurements, and `compare ID ID` (store_cmd_compare, called by
 * the compare command for anything but `compare variants`).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "loader.h"
#include "store.h"
#include "utf8.h"

static int need_store(const struct session *s, struct err *e)
{
	if (s->store)
		return 0;
	if (s->store_note[0])
		return err_set(e, "no session database (%s: the database could not be opened, see the "
			       "warning at start)", s->store_note);
	return err_set(e, "no session database (attnscope was started with --no-db)");
}

/* Characters (not bytes) a UTF-8 string of len bytes shows as. */
static int width_of(const char *p, size_t len)
{
	int w = 0;
	for (size_t i = 0; i < len; i++)
		w += ((unsigned char)p[i] & 0xc0) != 0x80;
	return w;
}

/* Prints len bytes made safe for a terminal (utf8_printable: control
 * characters and invalid UTF-8 as \xNN), cut to at most max bytes (at a
 * UTF-8 character boundary) with "..." when longer; returns the characters
 * printed. */
static int put_safe(FILE *f, const char *p, size_t len, size_t max)
{
	size_t n = len;
	bool cut = false;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
			n--;
		cut = true;
	}
	char *buf = xmalloc(4 * n + 1);
	size_t k = utf8_printable(p, n, buf, 4 * n + 1);
	fputs(buf, f);
	int w = width_of(buf, k) + (cut ? 3 : 0);
	free(buf);
	if (cut)
		fputs("...", f);
	return w;
}

/* put_safe padded with blanks to `col` characters, cut short enough that
 * at least one blank always separates it from the next column. */
static void put_col(FILE *f, const char *p, size_t max, int col)
{
	if (!p)
		p = "-";
	if (col >= 5 && max + 4 > (size_t)col)
		max = (size_t)col - 4;
	int w = put_safe(f, p, strlen(p), max);
	for (; w < col; w++)
		fputc(' ', f);
}

static void put_csv(FILE *f, const char *p, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '"')
			fputc('"', f);
		fputc(p[i], f);
	}
	fputc('"', f);
}

static void put_csv_num(FILE *f, double v)
{
	if (!isnan(v))
		fprintf(f, "%.9g", v);
}

static int parse_count(const char *arg, const char *what, int64_t *out, struct err *e)
{
	char *end;
	long long v = strtoll(arg, &end, 10);
	if (end == arg || *end || v < 1)
		return err_set(e, "%s: %s must be a whole number from 1", arg, what);
	*out = v;
	return 0;
}

/* The argument of a CMD_RAW command without trailing blanks. */
static size_t raw_len(const char *arg)
{
	size_t n = strlen(arg);
	while (n > 0 && (arg[n - 1] == ' ' || arg[n - 1] == '\t'))
		n--;
	return n;
}

/* ------------------------------------------------------------------- save */

static int save_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (need_store(s, e))
		return -1;
	const char *name = NULL;
	size_t len = 0;
	if (argc > 1 && raw_len(argv[1]) > 0) {
		name = argv[1];
		len = raw_len(argv[1]);
	}
	if (store_save(s, name, len, e) != 0)
		return -1;
	if (s->quiet)
		return 0;
	fprintf(s->out, "saved session %lld", (long long)store_session_id(s->store));
	if (name) {
		fputs(" \"", s->out);
		put_safe(s->out, name, len, 200);
		fputc('"', s->out);
	}
	if (s->model) {
		char variant[256];
		session_variant(s, variant, sizeof variant);
		fprintf(s->out, ": %s, %d tokens%s%s", s->model->name ? s->model->name : s->model_spec,
			s->n_tokens, variant[0] ? ", " : "", variant);
	}
	fprintf(s->out, " (open %lld restores it)\n", (long long)store_session_id(s->store));
	return 0;
}

const struct cmd_entry cmd_save_entry = {
	.name = "save",
	.usage = "[NAME]",
	.help = "name this session and keep its state (model, text, options, view) in the database",
	.long_help = "NAME is the rest of the line, literally (not a number: numbers are ids).\n"
		     "Saving again updates the state; open NAME brings back the latest save of\n"
		     "that name. Every command and measurement is recorded as it runs anyway;\n"
		     "save marks the state to come back to.",
	.flags = CMD_RAW,
	.min_args = 0,
	.max_args = 1,
	.exec = save_exec,
};

/* --------------------------------------------------------------- sessions */

extern const struct cmd_entry cmd_sessions_entry;

static int sessions_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_sessions_entry, argc, argv, &a, e) != 0)
		return -1;
	bool named = cmd_has(&cmd_sessions_entry, &a, "--named");
	int last = (int)cmd_num(&cmd_sessions_entry, &a, "--last", 0);
	if (need_store(s, e))
		return -1;
	struct store_session_info *v;
	int n;
	if (store_list_sessions(s->store, &v, &n, e) != 0)
		return -1;
	if (n == 0) {
		fprintf(s->out, "no sessions in %s yet\n", store_path(s->store));
		store_sessions_free(v, 0);
		return 0;
	}
	int64_t cur = store_session_id(s->store);
	/* the rows shown: named ones only with --named, the last N with --last */
	int first = 0, shown = 0;
	for (int i = n - 1; i >= 0; i--) {
		if (named && !v[i].name)
			continue;
		if (last && shown == last)
			break;
		shown++;
		first = i;
	}
	if (shown == 0) {
		fprintf(s->out, "no named sessions in %s (save NAME names this one)\n",
			store_path(s->store));
		store_sessions_free(v, n);
		return 0;
	}
	fprintf(s->out, "%6s  %-20s %-16s  %-16s %8s %12s  %s\n", "id", "name", "created (UTC)",
		"model", "commands", "measurements", "saved");
	bool cur_shown = false;
	for (int i = first; i < n; i++) {
		const struct store_session_info *r = &v[i];
		if (named && !r->name)
			continue;
		cur_shown |= r->id == cur;
		fprintf(s->out, "%5lld%c  ", (long long)r->id, r->id == cur ? '*' : ' ');
		if (r->name) {
			/* names may hold any bytes, NULs included */
			char *nm = xstrndup(r->name, r->name_len);
			put_col(s->out, nm, 17, 20);
			free(nm);
		} else {
			put_col(s->out, "-", 17, 20);
		}
		fprintf(s->out, " %-16.16s  ", r->created_at ? r->created_at : "-");
		put_col(s->out, r->model, 13, 16);
		fprintf(s->out, " %8lld %12lld  %.16s\n", (long long)r->n_commands,
			(long long)r->n_measurements, r->saved_at ? r->saved_at : "-");
	}
	if (cur_shown)
		fprintf(s->out, "(* this session)\n");
	if (shown < n)
		fprintf(s->out, "(%d of %d sessions; sessions without options lists them all)\n", shown, n);
	store_sessions_free(v, n);
	return 0;
}

static int forget_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (need_store(s, e))
		return -1;
	int64_t id, nc, nm;
	char *ref = xstrndup(argv[1], raw_len(argv[1])); /* the name as typed, as open takes it */
	int rc = store_find_session(s->store, ref, &id, e);
	free(ref);
	if (rc != 0 || store_forget_session(s->store, id, &nc, &nm, e) != 0)
		return -1;
	if (!s->quiet)
		fprintf(s->out, "forgot session %lld: %lld command%s, %lld measurement%s\n",
			(long long)id, (long long)nc, nc == 1 ? "" : "s", (long long)nm,
			nm == 1 ? "" : "s");
	return 0;
}

const struct cmd_entry cmd_forget_entry = {
	.name = "forget",
	.usage = "ID|NAME",
	.help = "delete a recorded session and everything recorded in it",
	.long_help = "Deletes the session (by id, or by name: the latest with that name) with its\n"
		     "commands, measurements, head scores, sweeps and lab runs, in one\n"
		     "transaction.  The session being recorded now cannot be forgotten.  The\n"
		     "name is the rest of the line as typed, quotes and backslashes included,\n"
		     "as save and open take it.",
	.flags = CMD_RAW,
	.min_args = 1,
	.max_args = 1,
	.exec = forget_exec,
};

static const struct cmd_opt sessions_opts[] = {
	{ "--named", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--last", CMD_OPT_INT, "N", 1, 1e9, "the number of sessions" },
	{ NULL },
};

const struct cmd_entry cmd_sessions_entry = {
	.name = "sessions",
	.usage = "",
	.opts = sessions_opts,
	.help = "list the recorded sessions: id, name, date, model, commands, measurements",
	.min_args = 0,
	.max_args = 0,
	.exec = sessions_exec,
};

/* --------------------------------------------------------- restoring state */

/* The file to load for a saved state: the model as typed when it still
 * resolves to the same file (by sha256), else the saved absolute path.
 * load_arg points into spec or path. */
static int pick_model(struct session *s, const struct store_state *ss, const char **load_arg,
		      struct err *e)
{
	char resolved[PATH_MAX];
	const char *cand[2] = { NULL, NULL }, *arg[2] = { NULL, NULL };
	int n = 0;
	if (ss->model_spec && model_resolve(ss->model_spec, resolved, sizeof resolved, NULL) == 0) {
		cand[n] = resolved;
		arg[n++] = ss->model_spec;
	}
	if (ss->model_path && access(ss->model_path, R_OK) == 0) {
		cand[n] = ss->model_path;
		arg[n++] = ss->model_path;
	}
	if (n == 0)
		return err_set(e, "model %s not found (it was loaded from %s)",
			       ss->model_spec ? ss->model_spec : "?",
			       ss->model_path ? ss->model_path : "an unknown file");
	if (ss->model_sha256) {
		for (int i = 0; i < n; i++) {
			char hex[65];
			if (store_file_sha256(s->store, cand[i], hex, NULL) == 0 &&
			    !strcmp(hex, ss->model_sha256)) {
				*load_arg = arg[i];
				return 0;
			}
		}
		fprintf(stderr, "attnscope: warning: %s is not the file the session used (its sha256 "
			"differs): the attention may differ\n", cand[0]);
	}
	*load_arg = arg[0];
	return 0;
}

/* Brings the session to a recorded state: loads the model (always afresh,
 * as a new process would), sets the text, the options and the view. */
static int restore_state(struct session *s, const struct store_state *ss, struct err *e)
{
	if (!ss->model_spec && !ss->model_path) {
		/* no model then: start from an empty text and native options */
		if (!s->model)
			return 0;
		if (session_set_text(s, "", e) != 0)
			return -1;
		return session_set_options(s, &s->native, e);
	}
	const char *load_arg = NULL;
	if (pick_model(s, ss, &load_arg, e) != 0)
		return -1;
	if (session_load(s, load_arg, NULL, e) != 0) {
		/* the current text may not suit that model: try again without it */
		if (!s->text)
			return -1;
		char *old = xstrdup(s->text);
		struct err e2;
		if (session_set_text(s, "", &e2) != 0 || session_load(s, load_arg, NULL, e) != 0) {
			if (s->model)
				session_set_text(s, old, &e2);
			free(old);
			return -1;
		}
		free(old);
	}
	if (session_set_text(s, ss->text ? ss->text : "", e) != 0)
		return err_prefix(e, "the saved text");
	struct run_options o = s->native;
	if (ss->opt.kv_heads > 0)
		o.kv_heads = ss->opt.kv_heads;
	o.placement = ss->opt.placement;
	o.mask = ss->opt.mask;
	o.window = ss->opt.window;
	o.scale = ss->opt.scale;
	o.pitfall = ss->opt.pitfall;
	memset(o.ablated, 0, sizeof o.ablated);
	char *list = xstrdup(ss->ablated_list ? ss->ablated_list : "");
	char *save = NULL;
	for (char *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		int l, h;
		if (session_parse_head(s, tok, &l, &h, e) != 0) {
			free(list);
			return err_prefix(e, "the saved ablations");
		}
		opt_set_ablated(&o, l * s->model->cfg.n_head + h, true);
	}
	free(list);
	if (session_set_options(s, &o, e) != 0)
		return err_prefix(e, "the saved options");
	const struct model_config *c = &s->model->cfg;
	s->sel_layer = ss->sel_layer >= 0 && ss->sel_layer < c->n_layer ? ss->sel_layer : 0;
	s->sel_head = ss->sel_head >= 0 && ss->sel_head < c->n_head ? ss->sel_head : 0;
	s->sel_token = ss->sel_token >= 0 && ss->sel_token < s->n_tokens ? ss->sel_token
					       : (s->n_tokens > 0 ? s->n_tokens - 1 : 0);
	s->dirty |= DIRTY_SELECT;
	return 0;
}

/* ------------------------------------------------------------------- open */

static int open_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (need_store(s, e))
		return -1;
	char *ref = xstrndup(argv[1], raw_len(argv[1]));
	int64_t id;
	struct store_state ss;
	int rc = store_find_session(s->store, ref, &id, e);
	free(ref);
	if (rc != 0 || store_get_state(s->store, id, true, &ss, e) != 0)
		return -1;
	/* one measurement for the restored state, not one per step */
	store_suppress(s->store, 1);
	rc = restore_state(s, &ss, e);
	store_suppress(s->store, -1);
	if (rc != 0) {
		err_prefix(e, "open %lld", (long long)id);
		store_state_free(&ss);
		return -1;
	}
	if (s->store && session_ready(s))
		store_measure(s);
	if (s->threads != ss.threads)
		fprintf(stderr, "attnscope: note: session %lld ran with --threads %d, this one with %d: "
			"the last digits of the weights may differ\n", (long long)id, ss.threads,
			s->threads);
	if (!s->quiet) {
		char variant[256];
		session_variant(s, variant, sizeof variant);
		fprintf(s->out, "opened session %lld: %s, %d tokens%s%s\n", (long long)id,
			s->model && s->model->name ? s->model->name : (ss.model ? ss.model : "no model"),
			s->n_tokens, variant[0] ? ", " : "", variant);
		if (session_ready(s)) {
			char line[256];
			session_summary(s, line, sizeof line);
			fprintf(s->out, "%s\n", line);
		}
	}
	store_state_free(&ss);
	return 0;
}

const struct cmd_entry cmd_open_entry = {
	.name = "open",
	.usage = "ID|NAME",
	.help = "bring back a saved session: model, text, options and view, run again",
	.long_help = "The model file is loaded afresh (by the name it was loaded with when that\n"
		     "is still the same file, by sha256, else from the saved path) and the\n"
		     "forward pass runs again: with the same build and --threads the attention\n"
		     "is identical to the saved one. The commands that follow are recorded in\n"
		     "this session, not the opened one.",
	.flags = CMD_RAW,
	.min_args = 1,
	.max_args = 1,
	.exec = open_exec,
};

/* ----------------------------------------------------------------- replay */

/* The command a recorded line runs ("" when it does not split or is not a
 * command). */
static const char *line_command(const char *line)
{
	int argc;
	char **argv;
	if (cmd_split(line, &argc, &argv, NULL) != 0)
		return "";
	const struct cmd_entry *c = argc ? cmd_find(argv[0], NULL) : NULL;
	cmd_free_argv(argc, argv);
	return c ? c->name : "";
}

/* Whether a command line writes a file of the user's: an --out, --csv or
 * --svg option (export, lab, curves). */
static bool line_writes_file(const char *line)
{
	int argc;
	char **argv;
	if (cmd_split(line, &argc, &argv, NULL) != 0)
		return false;
	bool writes = false;
	static const char *const opts[] = { "--out", "--csv", "--svg" };
	for (int i = 1; i < argc && !writes; i++)
		for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
			size_t n = strlen(opts[k]);
			if (!strncmp(argv[i], opts[k], n) && (argv[i][n] == '\0' || argv[i][n] == '='))
				writes = true;
		}
	cmd_free_argv(argc, argv);
	return writes;
}

#define REPLAY_WRITE " --write"

static int replay_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (need_store(s, e))
		return -1;
	if (store_replaying(s->store))
		return err_set(e, "replay cannot run inside a replay");
	size_t len = raw_len(argv[1]), wl = strlen(REPLAY_WRITE);
	bool write = len > wl && !strncmp(argv[1] + len - wl, REPLAY_WRITE, wl);
	if (write)
		len -= wl;
	while (len > 0 && (argv[1][len - 1] == ' ' || argv[1][len - 1] == '\t'))
		len--;
	char *ref = xstrndup(argv[1], len);
	int64_t id;
	int rc = store_find_session(s->store, ref, &id, e);
	free(ref);
	if (rc != 0)
		return -1;
	struct store_command *cmds;
	int n;
	struct store_state start;
	if (store_get_commands(s->store, id, &cmds, &n, e) != 0)
		return -1;
	if (store_get_state(s->store, id, false, &start, e) != 0) {
		store_commands_free(cmds, n);
		return -1;
	}
	bool interactive = s->interactive;
	s->interactive = false; /* batch: pause does not wait */
	store_set_replaying(s->store, true);
	store_suppress(s->store, 1);
	rc = restore_state(s, &start, e);
	store_suppress(s->store, -1);
	if (rc != 0)
		err_prefix(e, "replay %lld: the state it started in", (long long)id);
	int ran = 0, skipped = 0, not_ok = 0, unwritten = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		const struct store_command *c = &cmds[i];
		if (strlen(c->line) != c->line_len) { /* cannot come from a command line */
			skipped++;
			continue;
		}
		if (c->ok != 1) {
			not_ok++;
			continue;
		}
		const char *name = line_command(c->line);
		/* a tour line's lessons were recorded line by line after it */
		if (!strcmp(name, "replay") || !strcmp(name, "save") || !strcmp(name, "quit") ||
		    !strcmp(name, "tour")) {
			skipped++;
			continue;
		}
		if (!write && line_writes_file(c->line)) {
			if (!s->quiet) {
				fputs("> (not run: it writes a file; replay ... --write runs it) ", s->out);
				put_safe(s->out, c->line, c->line_len, 4096);
				fputc('\n', s->out);
			}
			unwritten++;
			continue;
		}
		if (s->cancel && *s->cancel) {
			rc = err_set(e, "replay %lld: interrupted", (long long)id);
			break;
		}
		if (!s->quiet) {
			fputs("> ", s->out);
			put_safe(s->out, c->line, c->line_len, 4096);
			fputc('\n', s->out);
		}
		struct err e2;
		e2.msg[0] = '\0';
		if (cmd_run_line(s, c->line, &e2) < 0) {
			err_set(e, "replay %lld: command %lld `%.100s` failed: %s", (long long)id,
				(long long)c->seq, c->line, e2.msg);
			rc = -1;
			break;
		}
		ran++;
	}
	store_set_replaying(s->store, false);
	s->interactive = interactive;
	if (rc == 0 && !s->quiet) {
		fprintf(s->out, "replayed session %lld: %d command%s run", (long long)id, ran,
			ran == 1 ? "" : "s");
		if (skipped)
			fprintf(s->out, ", %d skipped (save, replay, quit, tour)", skipped);
		if (not_ok)
			fprintf(s->out, ", %d not run (failed or unfinished when recorded)", not_ok);
		if (unwritten)
			fprintf(s->out, ", %d not run because %s a file (--write runs %s)", unwritten,
				unwritten == 1 ? "it writes" : "they write", unwritten == 1 ? "it" : "them");
		fputc('\n', s->out);
	}
	store_state_free(&start);
	store_commands_free(cmds, n);
	return rc;
}

const struct cmd_entry cmd_replay_entry = {
	.name = "replay",
	.usage = "ID|NAME [--write]",
	.help = "run a recorded session's commands again, from the state it started in",
	.long_help = "Restores the model, text and options the session started with, then runs\n"
		     "its command log in order, as a script in batch mode (pause does not wait,\n"
		     "the first failing command stops the replay). Skipped: replay, save and quit\n"
		     "lines, tour lines (the lesson's commands are in the log after them),\n"
		     "and commands that failed or never finished when they were recorded\n"
		     "(they changed nothing), and, unless --write is given, commands that write a\n"
		     "file (--out, --csv, --svg), so that a replay never overwrites one unasked.\n"
		     "open lines run. The commands are recorded in this session.",
	.flags = CMD_RAW,
	.min_args = 1,
	.max_args = 1,
	.exec = replay_exec,
};

/* ----------------------------------------------------------- measurements */

static void put_num(FILE *f, const char *fmt, double v, int width)
{
	if (isnan(v))
		fprintf(f, "%*s", width, "-");
	else
		fprintf(f, fmt, width, v);
}

static void print_csv(FILE *f, const struct store_measurement *v, int n)
{
	fputs("id,session_id,command_seq,created_at,model,model_sha256,variant,kv_heads,norm,mask,"
	      "mask_window,scale,ablated,text,n_tokens,forward_ms,kv_cache_bytes,loss,base_loss,"
	      "delta_loss,ppl,kl_vs_baseline,top1_agree,threads,pitfall\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct store_measurement *m = &v[i];
		fprintf(f, "%lld,%lld,", (long long)m->id, (long long)m->session_id);
		if (m->command_seq)
			fprintf(f, "%lld", (long long)m->command_seq);
		fputc(',', f);
		const char *strs[] = { m->created_at, m->model, m->model_sha256, m->variant };
		for (int k = 0; k < 4; k++) {
			if (strs[k])
				put_csv(f, strs[k], strlen(strs[k]));
			fputc(',', f);
		}
		fprintf(f, "%d,", m->kv_heads);
		put_csv(f, m->norm ? m->norm : "", m->norm ? strlen(m->norm) : 0);
		fputc(',', f);
		put_csv(f, m->mask ? m->mask : "", m->mask ? strlen(m->mask) : 0);
		fputc(',', f);
		if (m->window >= 0)
			fprintf(f, "%d", m->window);
		fprintf(f, ",%d,", m->scale);
		put_csv(f, m->ablated ? m->ablated : "", m->ablated ? strlen(m->ablated) : 0);
		fputc(',', f);
		put_csv(f, m->text ? m->text : "", m->text_len);
		fprintf(f, ",%d,", m->n_tokens);
		const double nums[] = { m->forward_ms, m->kv_cache_bytes, m->loss, m->base_loss,
					m->delta_loss, m->ppl, m->kl_vs_baseline, m->top1_agree };
		for (int k = 0; k < 8; k++) {
			put_csv_num(f, nums[k]);
			fputc(',', f);
		}
		fprintf(f, "%d,", m->threads);
		if (m->pitfall)
			put_csv(f, m->pitfall, strlen(m->pitfall));
		fputc('\n', f);
	}
}

/* The table at a terminal narrower than the full one: id, variant and
 * the numbers, the text cut to the width that is left. */
static void print_compact(FILE *f, const struct store_measurement *v, int n, int width)
{
	fprintf(f, "%6s %-16s %6s %9s %9s %8s %6s  %s\n", "id", "variant", "tokens", "loss", "dloss",
		"KL", "top-1", "text");
	int left = width - 72 > 8 ? width - 72 : 8; /* room for "..." */
	for (int i = 0; i < n; i++) {
		const struct store_measurement *m = &v[i];
		fprintf(f, "%6lld ", (long long)m->id);
		put_col(f, m->variant, 16, 17);
		fprintf(f, "%6d ", m->n_tokens);
		put_num(f, "%*.4f", m->loss, 9);
		if (isnan(m->delta_loss))
			fprintf(f, " %9s ", "-");
		else
			fprintf(f, " %+9.4f ", m->delta_loss);
		put_num(f, "%*.4f", m->kl_vs_baseline, 8);
		if (isnan(m->top1_agree))
			fprintf(f, " %6s  ", "-");
		else
			fprintf(f, " %5.1f%%  ", 100.0 * m->top1_agree);
		put_safe(f, m->text ? m->text : "", m->text ? m->text_len : 0, (size_t)left);
		fputc('\n', f);
	}
}

static void print_table(FILE *f, const struct store_measurement *v, int n)
{
	fprintf(f, "%6s %5s  %-19s %-14s %-24s %6s %9s %9s %8s %6s %10s %8s  %s\n", "id", "sess",
		"created (UTC)", "model", "variant", "tokens", "loss", "dloss", "KL", "top-1", "KV",
		"ms", "text");
	for (int i = 0; i < n; i++) {
		const struct store_measurement *m = &v[i];
		fprintf(f, "%6lld %5lld  %.19s ", (long long)m->id, (long long)m->session_id,
			m->created_at ? m->created_at : "-");
		put_col(f, m->model, 11, 14);
		fputc(' ', f);
		put_col(f, m->variant, 21, 24);
		fprintf(f, " %6d ", m->n_tokens);
		put_num(f, "%*.4f", m->loss, 9);
		fputc(' ', f);
		if (isnan(m->delta_loss))
			fprintf(f, "%9s", "-");
		else
			fprintf(f, "%+9.4f", m->delta_loss);
		fputc(' ', f);
		put_num(f, "%*.4f", m->kl_vs_baseline, 8);
		fputc(' ', f);
		if (isnan(m->top1_agree))
			fprintf(f, "%6s", "-");
		else
			fprintf(f, "%5.1f%%", 100.0 * m->top1_agree);
		char kv[32] = "-";
		if (!isnan(m->kv_cache_bytes))
			format_bytes(m->kv_cache_bytes, kv, sizeof kv);
		fprintf(f, " %10s ", kv);
		put_num(f, "%*.1f", m->forward_ms, 8);
		fputs("  ", f);
		put_safe(f, m->text ? m->text : "", m->text_len, 30);
		fputc('\n', f);
	}
}

extern const struct cmd_entry cmd_measurements_entry;

static int measurements_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_measurements_entry, argc, argv, &a, e) != 0)
		return -1;
	if (need_store(s, e))
		return -1;
	const struct cmd_entry *c = &cmd_measurements_entry;
	bool csv = cmd_has(c, &a, "--csv");
	int64_t session = 0, last = -1;
	if (cmd_has(c, &a, "--session") &&
	    store_find_session(s->store, cmd_str(c, &a, "--session"), &session, e) != 0)
		return -1;
	if (cmd_has(c, &a, "--last") && parse_count(cmd_str(c, &a, "--last"), "--last", &last, e) != 0)
		return -1;
	/* a table on screen shows the last 20 unless told; CSV gives everything */
	bool defaulted = !csv && last < 0;
	if (defaulted)
		last = 20;
	struct store_measurement *v;
	int n;
	if (store_get_measurements(s->store, session, last, &v, &n, e) != 0)
		return -1;
	if (csv) {
		print_csv(s->out, v, n);
	} else if (n == 0) {
		fprintf(s->out, "no measurements%s\n", session ? " in that session" : " yet");
	} else if (cmd_out_tty(s) && cmd_out_width(s) < 150) {
		print_compact(s->out, v, n, cmd_out_width(s));
	} else {
		print_table(s->out, v, n);
		int64_t total = 0;
		if (defaulted && store_count_measurements(s->store, session, &total, NULL) == 0 &&
		    total > n)
			fprintf(s->out, "(the last %d of %lld: --last N or --csv for more)\n", n,
				(long long)total);
	}
	store_measurements_free(v, n);
	return 0;
}

static const struct cmd_opt measurements_opts[] = {
	{ "--csv", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--session", CMD_OPT_WORD, "ID|NAME", 0, 0, "the session" },
	{ "--last", CMD_OPT_WORD, "N", 0, 0, "--last" },
	{ NULL },
};

const struct cmd_entry cmd_measurements_entry = {
	.name = "measurements",
	.usage = "",
	.opts = measurements_opts,
	.help = "the recorded runs: options, text, loss, KL, top-1, KV bytes, time",
	.long_help = "One row per finished forward pass. On screen the last 20 unless --last N is\n"
		     "given; --csv prints every row (or the last N) as CSV with a header, for a\n"
		     "spreadsheet or pandas. --session limits the rows to one session. The\n"
		     "per-head numbers are in the head_stats table of the database.",
	.min_args = 0,
	.max_args = 0,
	.exec = measurements_exec,
};

/* ---------------------------------------------------------------- compare */

/* A measurement id, or s:ID / s:NAME for a session's latest measurement. */
static int find_measurement(struct session *s, const char *ref, struct store_measurement *m,
			    struct err *e)
{
	if (!strncmp(ref, "s:", 2)) {
		int64_t sid;
		if (store_find_session(s->store, ref + 2, &sid, e) != 0)
			return -1;
		struct store_measurement *v;
		int n;
		if (store_get_measurements(s->store, sid, 1, &v, &n, e) != 0)
			return -1;
		if (n == 0) {
			store_measurements_free(v, n);
			return err_set(e, "session %lld has no measurements", (long long)sid);
		}
		*m = v[0];
		free(v);
		return 0;
	}
	int64_t id = 0;
	if (parse_count(ref, "a measurement id", &id, NULL) != 0)
		return err_set(e, "%.100s: not a measurement id (a number from measurements, or "
			       "s:ID / s:NAME for a session's latest)", ref);
	return store_get_measurement(s->store, id, m, e);
}

static void cmp_str(FILE *f, const char *label, const char *a, size_t la, const char *b,
		    size_t lb)
{
	fprintf(f, "%-16s ", label);
	char *x = xstrndup(a ? a : "-", a ? la : 1), *y = xstrndup(b ? b : "-", b ? lb : 1);
	put_col(f, x, 24, 26);
	put_col(f, y, 24, 26);
	bool same = la == lb && (a == b || (a && b && !memcmp(a, b, la)));
	fputs(same ? "" : "differs", f);
	fputc('\n', f);
	free(x);
	free(y);
}

static void cmp_num(FILE *f, const char *label, double a, double b, const char *fmt, double scale,
		    const char *unit)
{
	char x[48], y[48], d[48] = "";
	if (isnan(a))
		snprintf(x, sizeof x, "-");
	else
		snprintf(x, sizeof x, fmt, a * scale);
	if (isnan(b))
		snprintf(y, sizeof y, "-");
	else
		snprintf(y, sizeof y, fmt, b * scale);
	if (!isnan(a) && !isnan(b) && a != b) {
		char dfmt[16];
		snprintf(dfmt, sizeof dfmt, "%%+%s", fmt + 1);
		snprintf(d, sizeof d, dfmt, (b - a) * scale);
		strncat(d, unit, sizeof d - strlen(d) - 1);
	}
	strncat(x, unit, sizeof x - strlen(x) - 1);
	strncat(y, unit, sizeof y - strlen(y) - 1);
	fprintf(f, "%-16s %-26s%-26s%s\n", label, x, y, d);
}

/* The heads whose entropy changed most between two measurements of the
 * same shape. */
static void cmp_heads(struct session *s, int64_t a, int64_t b)
{
	struct store_head_row *ra, *rb;
	int na, nb;
	if (store_get_head_stats(s->store, a, &ra, &na, NULL) != 0)
		return;
	if (store_get_head_stats(s->store, b, &rb, &nb, NULL) != 0) {
		store_head_rows_free(ra, na);
		return;
	}
	bool same = na == nb && na > 0;
	for (int i = 0; same && i < na; i++)
		same = ra[i].layer == rb[i].layer && ra[i].head == rb[i].head;
	if (same) {
		int top[5], nt = 0;
		for (int k = 0; k < 5; k++) {
			int best = -1;
			double bd = 0.0;
			for (int i = 0; i < na; i++) {
				double d = fabs(rb[i].entropy - ra[i].entropy);
				bool taken = false;
				for (int j = 0; j < nt; j++)
					taken |= top[j] == i;
				if (!taken && !isnan(d) && d > bd) {
					bd = d;
					best = i;
				}
			}
			if (best < 0 || bd < 5e-5)
				break;
			top[nt++] = best;
		}
		if (nt == 0) {
			fprintf(s->out, "head entropies: no change\n");
		} else {
			fprintf(s->out, "largest head entropy changes (nats):");
			for (int j = 0; j < nt; j++)
				fprintf(s->out, "  %d.%d %+.4f", ra[top[j]].layer, ra[top[j]].head,
					rb[top[j]].entropy - ra[top[j]].entropy);
			fputc('\n', s->out);
		}
	}
	store_head_rows_free(ra, na);
	store_head_rows_free(rb, nb);
}

int store_cmd_compare(struct session *s, int argc, char **argv, struct err *e)
{
	if (argc != 3)
		return err_set(e, "usage: compare ID ID (measurement ids, or s:ID / s:NAME for a "
			       "session's latest) | compare variants");
	if (need_store(s, e))
		return -1;
	struct store_measurement a, b;
	if (find_measurement(s, argv[1], &a, e) != 0)
		return -1;
	if (find_measurement(s, argv[2], &b, e) != 0) {
		store_measurement_free(&a);
		return -1;
	}
	FILE *f = s->out;
	char ha[32], hb[32];
	snprintf(ha, sizeof ha, "#%lld (session %lld)", (long long)a.id, (long long)a.session_id);
	snprintf(hb, sizeof hb, "#%lld (session %lld)", (long long)b.id, (long long)b.session_id);
	fprintf(f, "%-16s %-26s%-26s%s\n", "measurement", ha, hb, "difference (right - left)");
	cmp_str(f, "created (UTC)", a.created_at, a.created_at ? strlen(a.created_at) : 0,
		b.created_at, b.created_at ? strlen(b.created_at) : 0);
	cmp_str(f, "model", a.model, a.model ? strlen(a.model) : 0, b.model,
		b.model ? strlen(b.model) : 0);
	if (a.model_sha256 && b.model_sha256 && strcmp(a.model_sha256, b.model_sha256))
		fprintf(f, "%-16s %-26.12s%-26.12s%s\n", "model sha256", a.model_sha256,
			b.model_sha256, "differs");
	cmp_str(f, "variant", a.variant, a.variant ? strlen(a.variant) : 0, b.variant,
		b.variant ? strlen(b.variant) : 0);
	cmp_num(f, "kv_heads", a.kv_heads, b.kv_heads, "%.0f", 1.0, "");
	cmp_str(f, "norm", a.norm, a.norm ? strlen(a.norm) : 0, b.norm, b.norm ? strlen(b.norm) : 0);
	char ma[32], mb[32];
	snprintf(ma, sizeof ma, a.window >= 0 ? "%s %d" : "%s", a.mask ? a.mask : "-", a.window);
	snprintf(mb, sizeof mb, b.window >= 0 ? "%s %d" : "%s", b.mask ? b.mask : "-", b.window);
	cmp_str(f, "mask", ma, strlen(ma), mb, strlen(mb));
	cmp_str(f, "scale", a.scale ? "on" : "off", a.scale ? 2 : 3, b.scale ? "on" : "off",
		b.scale ? 2 : 3);
	const char *aa = a.ablated && a.ablated[0] ? a.ablated : "none";
	const char *ab = b.ablated && b.ablated[0] ? b.ablated : "none";
	cmp_str(f, "ablated", aa, strlen(aa), ab, strlen(ab));
	cmp_str(f, "text", a.text, a.text_len, b.text, b.text_len);
	cmp_num(f, "tokens", a.n_tokens, b.n_tokens, "%.0f", 1.0, "");
	cmp_num(f, "loss", a.loss, b.loss, "%.6f", 1.0, "");
	cmp_num(f, "baseline loss", a.base_loss, b.base_loss, "%.6f", 1.0, "");
	cmp_num(f, "loss - baseline", a.delta_loss, b.delta_loss, "%.6f", 1.0, "");
	cmp_num(f, "perplexity", a.ppl, b.ppl, "%.4f", 1.0, "");
	cmp_num(f, "KL vs baseline", a.kl_vs_baseline, b.kl_vs_baseline, "%.6f", 1.0, "");
	cmp_num(f, "top-1 agreement", a.top1_agree, b.top1_agree, "%.2f", 100.0, "%");
	cmp_num(f, "KV cache bytes", a.kv_cache_bytes, b.kv_cache_bytes, "%.0f", 1.0, "");
	cmp_num(f, "forward ms", a.forward_ms, b.forward_ms, "%.2f", 1.0, "");
	if (a.text_len != b.text_len || (a.text_len && memcmp(a.text, b.text, a.text_len)))
		fprintf(f, "(the texts differ: the numbers are not measured on the same tokens)\n");
	cmp_heads(s, a.id, b.id);
	store_measurement_free(&a);
	store_measurement_free(&b);
	return 0;
}
