/*
 * tui-command.c — commands from the visualizer: a command line run
 * through the command table (cmd_run_line, or cmd_run on words already
 * split) with what it prints to s->out captured and its stderr watched
 * (tui-watch.c), then shown in the message (a few lines) or the pager
 * (more); and the keys that run one: an option key's command, `e` (the
 * text), `:` (any command) and `x` (an export of the view).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "export.h"
#include "render.h"
#include "text-input.h"

/* ------------------------------------------------------- running a line */

/* Runs one command line with its output captured.  show: display what
 * it printed (info line for one line, the pager for more); otherwise only
 * errors are shown.  With argv (argc words), runs those words through
 * cmd_run() instead of splitting line (which then only labels it).
 * Returns cmd_run_line's (or cmd_run's) result. */
static int run_command_argv(struct tui *t, const char *line, int argc, char **argv, bool show)
{
	struct session *s = t->s;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) {
		tui_screen_msg(t, TUI_MSG_ERROR, "error: cannot capture output: %s", strerror(errno));
		return -1;
	}
	FILE *keep = s->out;
	s->out = mem;
	if (s->cancel)
		*s->cancel = 0;
	struct err e;
	e.msg[0] = '\0';
	bool started = tui_watch_start(line, s->cancel);
	tui_term_command(s->cancel);
	int rc = argv ? cmd_run(s, argc, argv, &e) : cmd_run_line(s, line, &e);
	tui_term_command(NULL);
	tui_watch_stop(started);
	s->out = keep;
	fclose(mem);
	bool cancelled = s->cancel && *s->cancel;
	if (s->cancel)
		*s->cancel = 0;

	const struct render_buf *err_text = tui_watch_errors();
	struct render_buf all;
	render_buf_init(&all);
	if (len)
		render_buf_put(&all, buf, len);
	if (err_text->len)
		render_buf_put(&all, err_text->data, err_text->len);
	free(buf);
	const char *text = all.data ? all.data : "";
	int n_lines = 0;
	for (const char *p = text; *p; p++)
		n_lines += *p == '\n';
	if (all.len && text[all.len - 1] != '\n')
		n_lines++;
	/* the rows it takes on the screen, without its final newlines: a
	 * message up to TUI_MSG_LINES of them, the pager beyond */
	size_t k = all.len;
	while (k > 0 && text[k - 1] == '\n')
		k--;
	char *body = xmalloc(k + 1);
	memcpy(body, text, k);
	body[k] = '\0';
	int rows = k ? tui_wrap(body, COLS > 0 ? COLS : 80, NULL, 0) : 0;
	bool fits = k < sizeof t->msg && rows <= TUI_MSG_LINES;

	if (rc < 0 && cancelled) {
		tui_screen_msg(t, TUI_MSG_INFO, "cancelled: %s", e.msg[0] ? e.msg : line);
	} else if (rc < 0) {
		tui_screen_msg(t, TUI_MSG_ERROR, "error: %s", e.msg[0] ? e.msg : "the command failed");
		if (show && n_lines > 1)
			tui_pager(t, line, text);
	} else if (show && k && fits) {
		/* a few rows: over the bottom of the view until the next key */
		tui_screen_msg(t, TUI_MSG_INFO, "%s", body);
	} else if (show && k) {
		tui_pager(t, line, text);
		tui_screen_msg(t, TUI_MSG_INFO, "%s: %d line%s of output (shown in the pager)", line, n_lines,
			       n_lines == 1 ? "" : "s");
	} else if (show) {
		tui_screen_msg(t, TUI_MSG_INFO, "%s: done", line);
	} else if (err_text->len) {
		/* warnings of a key's command (e.g. invalid UTF-8 replaced) */
		size_t w = strcspn(err_text->data, "\n");
		tui_screen_msg(t, TUI_MSG_INFO, "%.*s", (int)(w < 1000 ? w : 1000), err_text->data);
	}
	free(body);
	render_buf_free(&all);
	return rc;
}

static int run_command(struct tui *t, const char *line, bool show)
{
	return run_command_argv(t, line, 0, NULL, show);
}

enum tui_result tui_command_key(struct tui *t, const char *line)
{
	snprintf(t->st.ran, sizeof t->st.ran, "%s", line);
	int rc = run_command(t, line, false);
	if (rc == CMD_QUIT)
		return TUI_QUIT;
	return TUI_REFRESH;
}

/* -------------------------------------------- the keys that ask for one */

enum tui_result tui_command_text(struct tui *t)
{
	struct session *s = t->s;
	if (!s->model) {
		tui_screen_msg(t, TUI_MSG_ERROR, "error: no model loaded (press : and type load NAME)");
		return TUI_REFRESH;
	}
	char *text = tui_edit_line(t, "text: ", s->text ? s->text : "", TUI_PROMPT_TEXT);
	if (!text)
		return TUI_REFRESH;
	t->measure = true;
	/* the command line holds the text with its escapes (text-input.h), so
	 * that newlines, tabs and backslashes come back exactly */
	char *esc = text_escape(text);
	size_t n = strlen(esc);
	char *line = xmalloc(n + 6);
	memcpy(line, "text ", 5);
	memcpy(line + 5, esc, n + 1);
	free(esc);
	int rc;
	if (text[0] && text[0] != ' ' && text[0] != '\t' && text[0] != '#') {
		rc = run_command(t, line, false);
	} else {
		/* what the line splitter would drop (leading blanks, a leading
		 * '#') or refuse (nothing): the words themselves, escaped as on
		 * the line */
		char *argv[] = { "text", line + 5, NULL };
		rc = run_command_argv(t, line, 2, argv, false);
	}
	snprintf(t->st.ran, sizeof t->st.ran, "text ...");
	free(line);
	free(text);
	return rc == CMD_QUIT ? TUI_QUIT : TUI_REFRESH;
}

enum tui_result tui_command_line(struct tui *t)
{
	char *line = tui_edit_line(t, ":", "", TUI_PROMPT_COMMAND);
	if (!line)
		return TUI_REFRESH;
	tui_edit_history_add(t, line);
	t->measure = true;
	tui_screen_draw(t); /* the prompt goes; progress shows in the info line */
	refresh();
	int rc = run_command(t, line, true);
	free(line);
	if (rc == CMD_QUIT)
		return TUI_QUIT;
	return TUI_REDRAW;
}

enum tui_result tui_command_export(struct tui *t)
{
	struct session *s = t->s;
	if (!session_ready(s)) {
		tui_screen_msg(t, TUI_MSG_ERROR, "error: nothing to export yet");
		return TUI_REFRESH;
	}
	const char *what = tui_views[t->st.view]->export_what;
	char ask[128] = "export format (";
	for (int i = 0; i < export_format_count(); i++)
		snprintf(ask + strlen(ask), sizeof ask - strlen(ask), "%s%s", i ? " " : "",
			 export_format_name((enum export_format)i));
	snprintf(ask + strlen(ask), sizeof ask - strlen(ask), "): ");
	char *fmt = tui_edit_line(t, ask, "txt", TUI_PROMPT_PLAIN);
	if (!fmt)
		return TUI_REFRESH;
	/* the file's extension is the format's name where a name implies it */
	char probe[32];
	enum export_format f;
	snprintf(probe, sizeof probe, "x.%.24s", fmt);
	const char *ext = export_format_from_path(probe, &f) == 0 ? fmt : "txt";
	char def[128];
	if (!strcmp(what, "heatmap"))
		snprintf(def, sizeof def, "attnscope-head-%d.%d.%s", s->sel_layer, s->sel_head, ext);
	else
		snprintf(def, sizeof def, "attnscope-%s.%s", what, ext);
	char *file = tui_edit_line(t, "export to file: ", def, TUI_PROMPT_PLAIN);
	if (!file) {
		free(fmt);
		return TUI_REFRESH;
	}
	/* quote the file name for cmd_split: "..." with \" and \\ escaped */
	struct render_buf q;
	render_buf_init(&q);
	render_buf_puts(&q, "\"");
	for (const char *p = file; *p; p++) {
		if (*p == '"' || *p == '\\')
			render_buf_puts(&q, "\\");
		render_buf_put(&q, p, 1);
	}
	render_buf_puts(&q, "\"");
	char head[32] = "";
	if (!strcmp(what, "heatmap"))
		snprintf(head, sizeof head, " %d.%d", s->sel_layer, s->sel_head);
	size_t need = strlen(what) + strlen(head) + strlen(fmt) + q.len + 64;
	char *line = xmalloc(need);
	snprintf(line, need, "export %s%s --format %s --out %s", what, head, fmt, q.data);
	t->measure = true;
	run_command(t, line, true);
	free(line);
	free(fmt);
	free(file);
	render_buf_free(&q);
	return TUI_REFRESH;
}
