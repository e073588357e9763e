/*
 * tui-term.c — the visualizer's terminal: entering curses mode (newterm
 * once per process, set_term on later entries), choosing colours and
 * glyphs for the terminal and the locale, leaving it, Ctrl-Z, and
 * restoring the terminal on every way out: SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT and SIGABRT (the handler writes the bytes that leave curses
 * mode, collected from terminfo on entry, then the signal takes its usual
 * action) and exit() (atexit).  A first SIGINT while a command runs
 * cancels the command instead.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <langinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static SCREEN *g_screen;         /* made once per process, reused by later entries */
static bool g_colors_started;
static volatile sig_atomic_t g_active;      /* curses mode is on */
static volatile sig_atomic_t *g_cmd_cancel; /* a command is running: its cancel flag */
static struct termios g_saved_tio;
static bool g_have_tio;
static char g_restore[512];      /* bytes that leave curses mode, for the signal path */
static size_t g_restore_len;
static int g_saved_stderr = -1;  /* the real stderr while a command's goes to the pty */
static int g_err_master = -1;    /* where a running command's stderr can be read back */
static bool g_mouse;

static const int g_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT };
#define N_SIGS (sizeof g_sigs / sizeof g_sigs[0])
static struct sigaction g_old_sa[N_SIGS];

void tui_term_command(volatile sig_atomic_t *cancel)
{
	g_cmd_cancel = cancel;
}

void tui_term_stderr(int saved, int master)
{
	g_saved_stderr = saved;
	g_err_master = master;
}

/* ------------------------------------------------------ the signal path */

/* Async-signal-safe: put the terminal back as it was before curses. */
static void emergency_restore(void)
{
	if (!g_active)
		return;
	g_active = 0;
	if (g_restore_len) {
		ssize_t w = write(STDOUT_FILENO, g_restore, g_restore_len);
		(void)w;
	}
	if (g_have_tio)
		tcsetattr(STDOUT_FILENO, TCSADRAIN, &g_saved_tio);
	if (g_saved_stderr >= 0) {
		/* what the command wrote last (e.g. a fatal message) goes to
		 * the real stderr, after the screen is back */
		dup2(g_saved_stderr, STDERR_FILENO);
		char buf[4096];
		ssize_t n;
		while (g_err_master >= 0 && (n = read(g_err_master, buf, sizeof buf)) > 0) {
			ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
			(void)w;
		}
	}
}

static void on_signal(int sig)
{
	if (sig == SIGINT && g_cmd_cancel && !*g_cmd_cancel) {
		*g_cmd_cancel = 1; /* first Ctrl-C from outside: cancel the running command */
		return;
	}
	emergency_restore();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
}

static void at_exit_restore(void)
{
	if (g_active) {
		g_active = 0;
		if (g_saved_stderr >= 0)
			dup2(g_saved_stderr, STDERR_FILENO);
		endwin();
	}
}

static void signals_on(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_SIGS; i++) {
		sigaction(g_sigs[i], &sa, &g_old_sa[i]);
		/* a signal the process ignores (nohup) stays ignored */
		if (g_old_sa[i].sa_handler == SIG_IGN)
			sigaction(g_sigs[i], &g_old_sa[i], NULL);
	}
}

static void signals_off(void)
{
	for (size_t i = 0; i < N_SIGS; i++)
		sigaction(g_sigs[i], &g_old_sa[i], NULL);
}

/* Appends terminfo capability `cap` to the restore bytes. */
static void restore_add(const char *cap)
{
	const char *v = tigetstr(cap);
	if (!v || v == (char *)-1)
		return;
	size_t n = strlen(v);
	if (g_restore_len + n < sizeof g_restore) {
		memcpy(g_restore + g_restore_len, v, n);
		g_restore_len += n;
	}
}

static void restore_add_raw(const char *v)
{
	size_t n = strlen(v);
	if (g_restore_len + n < sizeof g_restore) {
		memcpy(g_restore + g_restore_len, v, n);
		g_restore_len += n;
	}
}

/* ------------------------------------------------- entering and leaving */

/* Picks colour depth and glyphs for this terminal. */
static void choose_style(struct tui_state *t)
{
	const char *codeset = nl_langinfo(CODESET);
	t->utf8 = codeset && (!strcmp(codeset, "UTF-8") || !strcmp(codeset, "utf8"));
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");
	bool no_color = (nc && nc[0]) || !term || !strcmp(term, "dumb") || !has_colors();
	t->colors = 0;
	if (!no_color) {
		if (!g_colors_started) {
			start_color();
			g_colors_started = true;
		}
		if (COLORS >= 256 && COLOR_PAIRS >= 16 + 11 * 11)
			t->colors = 256;
		else if (COLORS >= 8 && COLOR_PAIRS >= 16 + 6 * 6)
			t->colors = 8;
	}
	t->vsub = t->colors && t->utf8 ? 2 : 1;
	tui_colors_init(t);
}

/* Makes curses aware of a size change that happened while it was off. */
static void sync_size(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 &&
	    (ws.ws_row != LINES || ws.ws_col != COLS))
		resizeterm(ws.ws_row, ws.ws_col);
}

int tui_term_enter(struct tui_state *st, struct err *e)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return err_set(e, "the visualizer needs a terminal (standard input and output are not one)");
	const char *term = getenv("TERM");
	if (!term || !term[0])
		return err_set(e, "TERM is not set: the visualizer needs to know the terminal");
	fflush(stdout);
	fflush(stderr);
	g_have_tio = tcgetattr(STDOUT_FILENO, &g_saved_tio) == 0;
	if (!g_screen) {
		g_screen = newterm(NULL, stdout, stdin);
		if (!g_screen)
			return err_set(e, "cannot drive the terminal type %s (no terminfo entry?)", term);
		const char *cup = tigetstr("cup");
		if (!cup || cup == (char *)-1) {
			endwin();
			delscreen(g_screen);
			g_screen = NULL;
			if (g_have_tio)
				tcsetattr(STDOUT_FILENO, TCSADRAIN, &g_saved_tio);
			return err_set(e, "the terminal (TERM=%s) cannot move the cursor; the visualizer needs one "
					  "that can, such as xterm (the REPL and scripts work anywhere)", term);
		}
		static bool registered;
		if (!registered) {
			atexit(at_exit_restore);
			registered = true;
		}
	} else {
		set_term(g_screen);
		reset_prog_mode();
		sync_size();
	}
	set_escdelay(25);
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	intrflush(stdscr, FALSE);
	curs_set(0);
	choose_style(st);
	g_mouse = mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL) != 0;
	mouseinterval(0);

	g_restore_len = 0;
	restore_add("sgr0");
	if (g_mouse)
		restore_add_raw("\033[?1000l\033[?1002l\033[?1006l");
	restore_add("rmkx");
	restore_add("cnorm");
	restore_add("rmcup");
	g_active = 1;
	signals_on();
	clearok(curscr, TRUE);
	return 0;
}

void tui_term_leave(void)
{
	signals_off();
	if (g_mouse)
		mousemask(0, NULL);
	curs_set(1);
	erase();
	refresh();
	endwin();
	g_active = 0;
	fflush(stdout);
}

void tui_term_suspend(void)
{
	def_prog_mode();
	endwin();
	g_active = 0;
	raise(SIGSTOP);
	g_active = 1;
	reset_prog_mode();
	sync_size();
	clearok(curscr, TRUE);
}
