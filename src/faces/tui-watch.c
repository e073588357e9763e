/*
 * tui-watch.c — a command's standard error while the visualizer runs it.
 * Its stderr goes to a pseudo-terminal (so that commands that show
 * progress only at a terminal still do; a pipe when there is no pty) and
 * a watcher thread reads it, shows the latest progress line in the info
 * line (from 150 ms on, with the time taken), and reads the keyboard: Esc
 * or Ctrl-C sets the command's cancel flag, other keys are kept and given
 * back to curses afterwards.  Lines of text the command wrote are kept for
 * the caller.  The main thread does no curses calls until it has joined
 * the watcher.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* One visualizer's watcher: its pty, and what the running command wrote. */
struct watcher {
	pthread_t th;
	int wake[2];
	int master, slave;  /* pty (or pipe) ends; -1 when unavailable */
	int saved_stderr;   /* the real stderr while the command's goes to the pty, or -1 */
	volatile sig_atomic_t *cancel; /* what Esc and Ctrl-C set */
	double t0;
	char what[96];
	char line[256];
	size_t line_len;
	char progress[256];
	struct render_buf err_text;
	bool cancel_seen;
	/* other keys typed meanwhile, given back afterwards: whole reads, as
	 * many as curses takes back (tui_key_unget) */
	unsigned char typed[TUI_GIVE_BACK_MAX];
	int n_typed;
	bool typed_full; /* a read did not fit: it and later keys were dropped */
};

static struct watcher g_w = { .master = -1, .slave = -1, .saved_stderr = -1, .wake = { -1, -1 } };

void tui_watch_open(void)
{
	struct watcher *w = &g_w;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	char name[128];
	int sl = -1;
	if (m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, name, sizeof name) == 0)
		sl = open(name, O_RDWR | O_NOCTTY);
	if (sl >= 0) {
		struct termios tio;
		if (tcgetattr(sl, &tio) == 0) {
			cfmakeraw(&tio);
			tcsetattr(sl, TCSANOW, &tio);
		}
		struct winsize ws = { .ws_row = (unsigned short)LINES, .ws_col = (unsigned short)COLS };
		ioctl(sl, TIOCSWINSZ, &ws);
	} else {
		if (m >= 0)
			close(m);
		int p[2];
		if (pipe(p) != 0) {
			w->master = w->slave = -1;
			return;
		}
		m = p[0];
		sl = p[1];
	}
	fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
	fcntl(m, F_SETFD, FD_CLOEXEC);
	fcntl(sl, F_SETFD, FD_CLOEXEC);
	w->master = m;
	w->slave = sl;
	tui_term_stderr(w->saved_stderr, m);
}

void tui_watch_close(void)
{
	struct watcher *w = &g_w;
	tui_term_stderr(w->saved_stderr, -1);
	if (w->master >= 0)
		close(w->master);
	if (w->slave >= 0)
		close(w->slave);
	w->master = w->slave = -1;
	render_buf_free(&w->err_text);
}

/* Takes bytes written to the command's stderr: '\r' starts the line over
 * (a progress line), '\n' ends a line of text. */
static void watch_feed(struct watcher *w, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\r' || c == '\n') {
			w->line[w->line_len] = '\0';
			bool blank = strspn(w->line, " \t") == w->line_len;
			if (!blank) {
				if (c == '\n') {
					render_buf_puts(&w->err_text, w->line);
					render_buf_puts(&w->err_text, "\n");
				} else {
					snprintf(w->progress, sizeof w->progress, "%s", w->line);
				}
			}
			w->line_len = 0;
		} else if (w->line_len + 1 < sizeof w->line) {
			w->line[w->line_len++] = c;
		}
	}
	w->line[w->line_len] = '\0';
	if (w->line_len && strspn(w->line, " \t") != w->line_len)
		snprintf(w->progress, sizeof w->progress, "%s", w->line);
}

static void watch_drain(struct watcher *w)
{
	char buf[4096];
	ssize_t n;
	while (w->master >= 0 && (n = read(w->master, buf, sizeof buf)) > 0)
		watch_feed(w, buf, (size_t)n);
}

/* Reads what was typed while the command runs: Esc alone or Ctrl-C
 * cancels it; other keys are kept while they fit (a read whole or not at
 * all, so that no key's bytes are cut), later ones dropped. */
static void watch_keys(struct watcher *w)
{
	unsigned char k[256]; /* a burst (a held key) in one read, not cut in a key */
	ssize_t n = read(STDIN_FILENO, k, sizeof k);
	if (n <= 0)
		return;
	bool cancel = n == 1 && k[0] == 27; /* a lone Esc, not an arrow key's sequence */
	for (ssize_t i = 0; i < n; i++)
		cancel |= k[i] == 3;
	if (cancel) {
		if (w->cancel) {
			*w->cancel = 1;
			w->cancel_seen = true;
		}
		return;
	}
	if (w->typed_full || w->n_typed + n > (int)sizeof w->typed) {
		w->typed_full = true;
		return;
	}
	memcpy(w->typed + w->n_typed, k, (size_t)n);
	w->n_typed += (int)n;
}

static void *watch_thread(void *arg)
{
	struct watcher *w = arg;
	bool keyboard = true; /* false once the terminal hangs up */
	for (;;) {
		struct pollfd fds[3] = {
			{ .fd = w->wake[0], .events = POLLIN },
			{ .fd = keyboard ? STDIN_FILENO : -1, .events = POLLIN },
			{ .fd = w->master, .events = POLLIN },
		};
		int r = poll(fds, w->master >= 0 ? 3 : 2, 100);
		if (r > 0 && (fds[0].revents & POLLIN))
			break;
		if (r > 0 && (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) && !(fds[1].revents & POLLIN))
			keyboard = false;
		if (r > 0 && (fds[1].revents & POLLIN))
			watch_keys(w);
		if (r > 0 && w->master >= 0 && (fds[2].revents & POLLIN))
			watch_drain(w);
		double el = now_ms() - w->t0;
		if (el >= 150) {
			/* the main thread makes no curses calls until it joins us */
			int y = LINES - 2;
			char line[512];
			snprintf(line, sizeof line, "%s %s  %s  %.1f s  (%s)", w->cancel_seen ? "cancelling" : "running",
				 w->what, w->progress, el / 1000.0, "Esc or Ctrl-C cancels");
			tui_blank(y, 0, COLS, TUI_A_BOLD, TUI_ROLE_STATUS);
			tui_put(y, 1, COLS - 2, line, TUI_A_BOLD, TUI_ROLE_STATUS);
			refresh();
		}
	}
	return NULL;
}

bool tui_watch_start(const char *line, volatile sig_atomic_t *cancel)
{
	struct watcher *w = &g_w;
	w->t0 = now_ms();
	w->cancel = cancel;
	/* the command as typed, cut to leave room for the progress on the line */
	if (strlen(line) > 32)
		snprintf(w->what, sizeof w->what, "%.29s...", line);
	else
		snprintf(w->what, sizeof w->what, "%s", line);
	w->line_len = 0;
	w->progress[0] = '\0';
	w->cancel_seen = false;
	w->n_typed = 0;
	w->typed_full = false;
	render_buf_free(&w->err_text);
	if (pipe(w->wake) != 0)
		return false;
	fflush(stderr);
	if (w->slave >= 0) {
		w->saved_stderr = dup(STDERR_FILENO);
		tui_term_stderr(w->saved_stderr, w->master);
		if (w->saved_stderr >= 0)
			dup2(w->slave, STDERR_FILENO);
	}
	if (pthread_create(&w->th, NULL, watch_thread, w) != 0) {
		close(w->wake[0]);
		close(w->wake[1]);
		w->wake[0] = w->wake[1] = -1;
		return false;
	}
	return true;
}

void tui_watch_stop(bool started)
{
	struct watcher *w = &g_w;
	fflush(stderr);
	if (started) {
		ssize_t n = write(w->wake[1], "x", 1);
		(void)n;
		pthread_join(w->th, NULL);
		close(w->wake[0]);
		close(w->wake[1]);
		w->wake[0] = w->wake[1] = -1;
	}
	if (w->saved_stderr >= 0) {
		dup2(w->saved_stderr, STDERR_FILENO);
		close(w->saved_stderr);
		w->saved_stderr = -1;
		tui_term_stderr(-1, w->master);
	}
	watch_drain(w);
	/* keys typed during the command, in order */
	tui_key_unget(w->typed, w->n_typed);
	w->n_typed = 0;
}

const struct render_buf *tui_watch_errors(void)
{
	return &g_w.err_text;
}
