/*
 * repl.c — the interactive prompt: GNU readline's callback interface in a
 * pselect() loop, so that signals are handled between keystrokes rather
 * than inside readline; history; completion generated from cmd_table[].
 *
 * While the prompt is up, SIGINT, SIGWINCH, SIGTSTP, SIGTERM, SIGHUP and
 * SIGQUIT are blocked everywhere except inside pselect(); their handler
 * only records them and the loop acts on them: Ctrl-C discards the line,
 * a resize tells readline, Ctrl-Z restores the terminal before stopping,
 * the others restore the terminal and end the program the usual way.
 * While a command runs, the process has its usual signal dispositions
 * except SIGINT, which sets *session.cancel.
 */
#define _GNU_SOURCE
#include "repl.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "cmd.h"
#include "loader.h"
#include "script.h"

#define HISTORY_MAX 1000

static struct session *cur; /* the session of the running REPL (for completion) */

/* ------------------------------------------------------ command interrupts */

static volatile sig_atomic_t *cancel_flag;
static struct sigaction saved_int;
static int interrupts_depth;

static void on_command_sigint(int sig)
{
	(void)sig;
	if (cancel_flag && *cancel_flag) {
		static const char msg[] = "\nattnscope: interrupted twice; leaving\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
		(void)w;
		_exit(130);
	}
	if (cancel_flag)
		*cancel_flag = 1;
}

void repl_interrupts_begin(struct session *s)
{
	if (interrupts_depth++ > 0)
		return;
	cancel_flag = s->cancel;
	if (cancel_flag)
		*cancel_flag = 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_command_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &saved_int);
}

void repl_interrupts_end(void)
{
	if (interrupts_depth == 0 || --interrupts_depth > 0)
		return;
	sigaction(SIGINT, &saved_int, NULL);
}

/* --------------------------------------------------------- prompt signals */

static const int prompt_sigs[] = { SIGINT, SIGWINCH, SIGTSTP, SIGTERM, SIGHUP, SIGQUIT };
#define N_PROMPT_SIGS (sizeof prompt_sigs / sizeof prompt_sigs[0])

static volatile sig_atomic_t pending[N_PROMPT_SIGS];
static struct sigaction prompt_saved[N_PROMPT_SIGS];
static sigset_t prompt_blocked, prompt_orig_mask;

static void on_prompt_signal(int sig)
{
	for (size_t i = 0; i < N_PROMPT_SIGS; i++)
		if (prompt_sigs[i] == sig)
			pending[i] = 1;
}

/* Installs the recording handler and blocks the signals (outside pselect). */
static void prompt_signals_on(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prompt_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&prompt_blocked);
	for (size_t i = 0; i < N_PROMPT_SIGS; i++) {
		pending[i] = 0;
		sigaddset(&prompt_blocked, prompt_sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &prompt_blocked, &prompt_orig_mask);
	for (size_t i = 0; i < N_PROMPT_SIGS; i++) {
		sigaction(prompt_sigs[i], &sa, &prompt_saved[i]);
		/* a signal the process was told to ignore (nohup) stays ignored */
		if (prompt_saved[i].sa_handler == SIG_IGN)
			sigaction(prompt_sigs[i], &prompt_saved[i], NULL);
	}
}

/* Unblocks (anything pending lands in the recording handler) and puts the
 * previous handlers back. */
static void prompt_signals_off(void)
{
	sigprocmask(SIG_SETMASK, &prompt_orig_mask, NULL);
	for (size_t i = 0; i < N_PROMPT_SIGS; i++)
		sigaction(prompt_sigs[i], &prompt_saved[i], NULL);
}

/* Delivers sig with its previous disposition (stop or terminate), then,
 * if the process is still here, goes back to recording it. */
static void redeliver(size_t i)
{
	int sig = prompt_sigs[i];
	struct sigaction mine;
	sigaction(sig, &prompt_saved[i], &mine);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	sigprocmask(SIG_BLOCK, &one, NULL);
	sigaction(sig, &mine, NULL);
}

/* ---------------------------------------------------------------- history */

static char history_file[PATH_MAX];

/* Creates dir and its parents (mode 0700); errors are left to the caller's
 * next step to notice. */
static void mkdir_parents(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0700);
		*p = '/';
	}
	mkdir(dir, 0700);
}

/* Finds (and creates the directory of) the history file; "" when there is
 * no usable home.  Failures are silent: history is a convenience. */
static void history_open(void)
{
	char dir[PATH_MAX];
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	if (!home || !home[0]) {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(dir, sizeof dir, "%s/attnscope", xdg);
	else if (home && home[0])
		n = snprintf(dir, sizeof dir, "%s/.local/share/attnscope", home);
	else
		return;
	if (n < 0 || (size_t)n + sizeof "/history" > sizeof dir)
		return;
	mkdir_parents(dir);
	n = snprintf(history_file, sizeof history_file, "%s/history", dir);
	if (n < 0 || (size_t)n >= sizeof history_file) {
		history_file[0] = '\0';
		return;
	}
	using_history();
	if (read_history(history_file) != 0 && write_history(history_file) != 0)
		history_file[0] = '\0';
}

static void history_remember(const char *line)
{
	if (!line[0] || strspn(line, " \t") == strlen(line))
		return;
	HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
	if (last && !strcmp(last->line, line))
		return;
	add_history(line);
	if (history_file[0])
		append_history(1, history_file);
}

static void history_close(void)
{
	if (history_file[0])
		history_truncate_file(history_file, HISTORY_MAX);
}

/* ------------------------------------------------------------- completion */

/* What cmd_complete() offered for the word readline is completing. */
static struct cmd_cands cands;

static char *generate(const char *text, int state)
{
	static int next;
	(void)text; /* cands holds only the words that start with it */
	if (state == 0)
		next = 0;
	return next < cands.n ? xstrdup(cands.v[next++]) : NULL;
}

/* readline's hook: words break at blanks only, as cmd_complete() reads
 * them; a directory completed alone gets no space after its '/'. */
static char **complete(const char *text, int start, int end)
{
	(void)start;
	rl_attempted_completion_over = 1; /* no readline file names: cands has them */
	cmd_cands_free(&cands);
	cmd_complete(cur, rl_line_buffer, (size_t)end, &cands);
	if (cands.n == 1 && cands.v[0][strlen(cands.v[0]) - 1] == '/')
		rl_completion_suppress_append = 1;
	return rl_completion_matches(text, generate);
}

/* ------------------------------------------------------------------- loop */

static char *line_read;
static bool line_done;

static void on_line(char *line)
{
	line_read = line;
	line_done = true;
	rl_callback_handler_remove();
}

/* "MODEL [VARIANT]> " ("attnscope> " with no model), with " (NOTE)" before
 * the '>' when the session has a storage note such as "not recording". */
static void build_prompt(const struct session *s, char *buf, size_t size)
{
	char variant[256] = "", note[sizeof s->store_note + 4] = "";
	const char *name = "attnscope";
	if (s->model) {
		session_variant(s, variant, sizeof variant);
		name = s->model->name ? s->model->name : s->model_spec ? s->model_spec : "model";
	}
	if (s->store_note[0])
		snprintf(note, sizeof note, " (%s)", s->store_note);
	snprintf(buf, size, "%s%s%s%s%s> ", name, variant[0] ? " [" : "", variant,
		 variant[0] ? "]" : "", note);
}

/* Ctrl-C at the prompt: show ^C, forget the line, draw a fresh prompt. */
static void cancel_line(void)
{
	rl_callback_sigcleanup();
	rl_free_line_state();
	rl_echo_signal_char(SIGINT);
	rl_replace_line("", 0);
	rl_point = rl_end = rl_mark = 0;
	rl_crlf();
	rl_on_new_line();
	rl_redisplay();
}

/* Acts on signals recorded while waiting for input.  A terminating signal
 * restores the terminal and ends the process with its usual disposition. */
static void handle_pending(void)
{
	for (size_t i = 0; i < N_PROMPT_SIGS; i++) {
		if (!pending[i])
			continue;
		pending[i] = 0;
		switch (prompt_sigs[i]) {
		case SIGINT:
			cancel_line();
			break;
		case SIGWINCH:
			rl_resize_terminal();
			break;
		case SIGTSTP:
			rl_deprep_terminal();
			redeliver(i);
			rl_prep_terminal(1);
			rl_forced_update_display();
			break;
		default: /* SIGTERM, SIGHUP, SIGQUIT */
			rl_callback_handler_remove();
			if (prompt_sigs[i] != SIGHUP)
				rl_crlf(); /* leave the shell's message its own line */
			history_close();
			redeliver(i);
			break;
		}
	}
}

/* Waits for one line; NULL at end of input.  The caller frees it. */
static char *read_line(const char *prompt)
{
	prompt_signals_on();
	line_done = false;
	line_read = NULL;
	rl_callback_handler_install(prompt, on_line);
	int fd = fileno(rl_instream ? rl_instream : stdin);
	while (!line_done) {
		fd_set rfds;
		FD_ZERO(&rfds);
		FD_SET(fd, &rfds);
		int r = pselect(fd + 1, &rfds, NULL, NULL, NULL, &prompt_orig_mask);
		if (r < 0) {
			if (errno == EINTR) {
				handle_pending();
				continue;
			}
			rl_callback_handler_remove();
			break;
		}
		rl_callback_read_char();
	}
	prompt_signals_off();
	return line_read;
}

/* ------------------------------------------------------------------ pager */

/* The pager for output taller than the terminal: $ATTNSCOPE_PAGER, else
 * $PAGER, else `less -FRX`; NULL when it is set empty or to cat, or its
 * program is not on PATH (the output then goes straight to the terminal). */
static const char *pager_command(void)
{
	const char *p = getenv("ATTNSCOPE_PAGER");
	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less -FRX";
	while (*p == ' ')
		p++;
	size_t n = strcspn(p, " \t");
	if (n == 0 || n >= 256 || (n == 3 && !strncmp(p, "cat", 3)))
		return NULL;
	char prog[256];
	memcpy(prog, p, n);
	prog[n] = '\0';
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? p : NULL;
	const char *path = getenv("PATH");
	for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
		size_t k = strcspn(d, ":");
		char full[PATH_MAX];
		if (k > 0 && snprintf(full, sizeof full, "%.*s/%s", (int)k, d, prog) < (int)sizeof full &&
		    access(full, X_OK) == 0)
			return p;
		d += k + (d[k] == ':');
	}
	return NULL;
}

/* Whether any command of line prints as it goes (CMD_STREAMS), so that
 * its output must not wait for the pager.  Looks at the first word of each
 * ';'-separated part; an unknown word streams nothing. */
static bool line_streams(const char *line)
{
	for (const char *p = line; p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		size_t n = strcspn(p, " \t;");
		char name[32];
		if (n > 0 && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = '\0';
			const struct cmd_entry *c = cmd_find(name, NULL);
			if (c && (c->flags & CMD_STREAMS))
				return true;
			if (c && (c->flags & CMD_RAW)) /* the rest of the line is its text */
				return false;
		}
		p = strchr(p, ';');
		if (p)
			p++;
	}
	return false;
}

/* Rows the bytes take on a terminal `cols` wide (a UTF-8 character is one
 * column: wide ones only make a long output a little longer). */
static int output_rows(const char *buf, size_t len, int cols)
{
	int rows = 0, col = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n') {
			rows++;
			col = 0;
		} else if ((c & 0xc0) != 0x80 && ++col > cols) {
			rows++;
			col = 1;
		}
	}
	return rows + (col > 0);
}

/* Shows the bytes through the pager when they are taller than the
 * terminal, else writes them to standard output.  0, or -1 when they could
 * not be written (oe set). */
static int page_output(const char *buf, size_t len, const char *pager, struct err *oe)
{
	struct winsize ws;
	int rows = 24, cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
		rows = ws.ws_row;
		cols = ws.ws_col > 0 ? ws.ws_col : cols;
	}
	if (output_rows(buf, len, cols) < rows) {
		fwrite(buf, 1, len, stdout);
		return stream_flush(stdout, oe);
	}
	fflush(stdout);
	/* the pager owns Ctrl-C and may stop reading early (q) */
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_pipe;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGPIPE, &ign, &old_pipe);
	FILE *p = popen(pager, "w");
	if (p) {
		fwrite(buf, 1, len, p);
		pclose(p);
	} else {
		fwrite(buf, 1, len, stdout);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	return stream_flush(stdout, oe);
}

/* run_line's result when the output (the command's or the prompt's) could
 * not be written: the REPL ends with status 1. */
#define LINE_OUTPUT_LOST (-2)

/* Runs one command line at the prompt and prints its error.  Returns
 * cmd_run_line's result, or LINE_OUTPUT_LOST after printing
 * "attnscope: error writing standard output: REASON". */
static int run_line(struct session *s, const char *line)
{
	struct err e, oe;
	e.msg[0] = '\0';
	/* at a terminal, a command's output goes through the pager when it is
	 * taller than the screen (help, heads, measurements, ...) */
	const char *pager = s->out == stdout && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO) &&
			    !line_streams(line) ? pager_command() : NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = pager ? open_memstream(&buf, &len) : NULL;
	if (mem) {
		s->out = mem;
		s->out_paged = true;
	}
	repl_interrupts_begin(s);
	int rc = cmd_run_line(s, line, &e);
	bool lost;
	if (mem) {
		s->out = stdout;
		s->out_paged = false;
		fclose(mem);
		lost = page_output(buf, len, pager, &oe) != 0;
		free(buf);
	} else {
		lost = stream_flush(s->out, &oe) != 0;
	}
	bool interrupted = s->cancel && *s->cancel;
	repl_interrupts_end();
	clearerr(stdin); /* pause's getchar() may have seen EINTR */
	if (rc < 0) {
		fprintf(stderr, "error: %s\n", e.msg[0] ? e.msg : "the command failed");
		script_note_no_model(s, stderr);
	} else if (interrupted) {
		fprintf(stderr, "\ninterrupted\n"); /* after the terminal's "^C" */
	}
	if (lost) {
		fprintf(stderr, "attnscope: %s\n", oe.msg);
		rc = LINE_OUTPUT_LOST;
	}
	fflush(stderr);
	return rc;
}

/* Whether a pasted block's first word is the text command (which takes
 * the rest of the line, newlines included). */
static bool block_is_one_command(const char *block)
{
	const char *p = block;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, " \t\n");
	char name[32];
	if (n == 0 || n >= sizeof name)
		return false;
	memcpy(name, p, n);
	name[n] = '\0';
	const struct cmd_entry *c = cmd_find(name, NULL);
	return c && !strcmp(c->name, "text");
}

int repl_run(struct session *s)
{
	cur = s;
	rl_readline_name = "attnscope";
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_attempted_completion_function = complete;
	rl_completer_word_break_characters = " \t";
	rl_instream = stdin;
	rl_outstream = stdout;
	/* a paste arrives whole, newlines included (see the loop below) */
	rl_variable_bind("enable-bracketed-paste", "on");
	history_open();
	if (!s->model)
		script_note_no_model(s, stderr);

	char prompt[512];
	int status = 0;
	for (;;) {
		build_prompt(s, prompt, sizeof prompt);
		struct err oe;
		if (stream_flush(s->out, &oe) != 0) { /* the banner, or the last prompt */
			fprintf(stderr, "attnscope: %s\n", oe.msg);
			status = 1;
			break;
		}
		char *line = read_line(prompt);
		if (!line) {
			fputc('\n', stdout);
			break;
		}
		history_remember(line);
		/* a pasted block arrives as one line with newlines: a block that
		 * starts with `text` is one text, newlines included; any other
		 * runs line by line */
		int rc = 0;
		if (strchr(line, '\n') && block_is_one_command(line)) {
			rc = run_line(s, line);
		} else {
			char *save = NULL;
			for (char *part = strtok_r(line, "\n", &save); part;
			     part = strtok_r(NULL, "\n", &save))
				if ((rc = run_line(s, part)) == CMD_QUIT || rc == LINE_OUTPUT_LOST)
					break;
		}
		free(line);
		if (rc == CMD_QUIT)
			break;
		if (rc == LINE_OUTPUT_LOST) {
			status = 1;
			break;
		}
	}
	history_close();
	cmd_cands_free(&cands);
	cur = NULL;
	return status;
}
