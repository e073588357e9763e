/*
 * tui-int.h — what the files of the visualizer's loop share, and nothing
 * outside them includes (the rest of the program uses tui.h, the views
 * tui-view.h).  The files, each using only those before it and the views:
 *
 *   tui-term.c     the terminal: curses mode on and off, colours and
 *                  glyphs, restored on every way out (signals, exit())
 *   tui-input.c    keys: the terminal's bytes as characters and function
 *                  keys, and bytes given back to be read again
 *   tui-watch.c    a running command's stderr on a pseudo-terminal, read
 *                  by a thread that shows its progress and takes Esc
 *   tui-screen.c   the screen: status line, the view, the side panel, the
 *                  info line (the message or the run's numbers), hints
 *   tui-pager.c    a scrollable window over text (long output, the help)
 *   tui-edit.c     the line prompt: editing, history, Tab completion
 *   tui-command.c  command lines run with their output captured, and the
 *                  keys that run one (option keys, e, :, x)
 *   tui.c          tui_run: the loop, what each key does, the help
 *
 * All drawing and reading of keys happens on the thread that runs
 * tui_run, except the watcher's progress line while a command runs.
 */
#ifndef ATTNSCOPE_TUI_INT_H
#define ATTNSCOPE_TUI_INT_H

#include <signal.h>
#include <stdbool.h>
#include <wchar.h>

#include "render.h"
#include "tui-view.h"
#include "util.h"

/* ---------------------------------------------------------------- state */

/* What a key handler returns (after htop): what changed on screen. */
enum tui_result {
	TUI_HANDLED, /* nothing changed on screen */
	TUI_REFRESH, /* draw again */
	TUI_REDRAW,  /* repaint the whole terminal */
	TUI_BACK,    /* q: leave the visualizer */
	TUI_QUIT,    /* :quit: leave and end the program */
};

enum tui_msg_kind { TUI_MSG_NONE, TUI_MSG_INFO, TUI_MSG_ERROR };

#define TUI_HISTORY_MAX 100
#define TUI_MSG_LINES 4 /* output up to this many rows (wrapped to the screen) is shown without the pager */

/* The visualizer while it runs (tui_run makes it and frees it). */
struct tui {
	struct tui_state st;    /* what the views see */
	struct session *s;
	char msg[1024];         /* the message over the info line, until the next key */
	enum tui_msg_kind msg_kind;
	double key_t0;          /* when the key being handled arrived */
	bool measure;           /* time this key's redraw */
	char *history[TUI_HISTORY_MAX]; /* the `:` lines run, oldest first (owned) */
	int n_history;
	volatile sig_atomic_t local_cancel;
	bool gone;              /* the terminal hung up: leave */
};

/* -------------------------------------------- the terminal (tui-term.c) */

/*
 * Takes the terminal: curses mode (made once per process, resumed on later
 * entries), raw keys, the mouse when it reports, the alternate screen,
 * and st's style (utf8, colors, vsub, the colour pairs) chosen for it.
 * From here until tui_term_leave() the signals that end the program
 * restore the terminal first, as does exit().  0, or -1 with a message
 * (no terminal, no TERM, no cursor addressing) and the terminal as it was.
 */
int tui_term_enter(struct tui_state *st, struct err *e);

/* Gives the terminal back as it was and the signals their old actions. */
void tui_term_leave(void);

/* Ctrl-Z: the terminal given back and the process stopped; when it goes
 * on, curses mode again at the terminal's size (the caller repaints). */
void tui_term_suspend(void);

/* A command runs (NULL: none now): a first SIGINT from outside sets
 * *cancel instead of ending the program. */
void tui_term_command(volatile sig_atomic_t *cancel);

/* A command's standard error goes to a pseudo-terminal: the real stderr
 * (saved; -1: not redirected) and the end that reads back what the
 * command wrote (master; -1: none), so that a fatal signal or exit()
 * puts the real one back and shows what the command wrote last. */
void tui_term_stderr(int saved, int master);

/* --------------------------------------------------- keys (tui-input.c) */

#define TUI_GIVE_BACK_MAX 64 /* bytes given back at once at most; curses' queue holds about 137 */

/* Reads one key, waiting for it: a wide character, or a function key
 * (KEY_*) when *fn; t->key_t0 is when it came.  OK, or ERR when there was
 * none (a signal; t->gone when the terminal hung up) or a byte that
 * starts no character was dropped (the bytes after it are read again). */
int tui_key_read(struct tui *t, wint_t *ch, bool *fn);

/* Whether more keys are waiting at the terminal (a paste, a held key):
 * then the screen is drawn once they are read. */
bool tui_key_pending(void);

/* Whether curses may hold bytes of its own (given back, or read ahead
 * after an Esc); when not, the terminal's bytes can be read directly, in
 * order (a paste in a prompt). */
bool tui_key_held(void);

/* Gives back the first bytes of p[0, n) that fit (TUI_GIVE_BACK_MAX), in
 * order, to be read before the terminal's; the rest are dropped. */
void tui_key_unget(const unsigned char *p, int n);

/* ------------------------------------- a command's stderr (tui-watch.c) */

/* Opens the pseudo-terminal (or a pipe) the commands of one visualizer
 * session write their stderr to; without either, commands keep the real
 * stderr.  tui_watch_close() closes it and frees what it kept. */
void tui_watch_open(void);
void tui_watch_close(void);

/*
 * Starts watching the command `line` (shown in the progress line): its
 * stderr goes to the pty, and a thread shows its progress and reads the
 * keyboard (Esc or Ctrl-C sets *cancel).  Returns whether the thread
 * started; pass that to tui_watch_stop() after the command, which puts
 * stderr back, reads what is left and gives the other keys typed
 * meanwhile back to curses, in order.  No curses calls between the two.
 */
bool tui_watch_start(const char *line, volatile sig_atomic_t *cancel);
void tui_watch_stop(bool started);

/* The lines of text the last watched command wrote to stderr (progress
 * lines ending in '\r' left out); valid until the next start. */
const struct render_buf *tui_watch_errors(void);

/* -------------------------------------------- the screen (tui-screen.c) */

/* Sets the message the info line shows until the next key, wrapped to the
 * screen's width (tui_wrap) and growing upwards over the view as far as it
 * needs (a whole t->msg fits from 80x24); TUI_MSG_ERROR in the error
 * colour. */
void tui_screen_msg(struct tui *t, enum tui_msg_kind k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Draws the whole screen for the current view into curses' buffer (the
 * caller refresh()es); t->st.frame is where each region went. */
void tui_screen_draw(struct tui *t);

/* Draws the info line in r: the message, else the run's numbers (with the
 * last key-to-redraw time). */
void tui_screen_info(struct tui *t, const struct tui_rect *r);

/* ---------------------------------------------- the pager (tui-pager.c) */

/* Shows text under title in a window over the whole screen until q, Esc
 * or Enter (or the terminal hangs up: t->gone); the next refresh then
 * repaints the whole terminal. */
void tui_pager(struct tui *t, const char *title, const char *text);

/* ----------------------------------------- the line prompt (tui-edit.c) */

enum tui_prompt_kind {
	TUI_PROMPT_TEXT,    /* the text: Ctrl-O inserts a newline */
	TUI_PROMPT_COMMAND, /* a command: Tab completes, Up/Down browse the history */
	TUI_PROMPT_PLAIN,   /* anything else (an export's format and file) */
};

/*
 * Edits one line, starting from initial, on the info row under the
 * screen, prompt before it and what the keys do on the bottom row.  Enter
 * returns the line (malloc'd UTF-8, the caller frees it); Esc, Ctrl-C or
 * Ctrl-G, and a terminal that hung up, return NULL.
 */
char *tui_edit_line(struct tui *t, const char *prompt, const char *initial, enum tui_prompt_kind kind);

/* Adds a command line to the history Up/Down browse (not a blank line
 * nor the newest one again; the oldest goes at TUI_HISTORY_MAX). */
void tui_edit_history_add(struct tui *t, const char *line);

/* --------------------------------------------- commands (tui-command.c) */

/*
 * Each runs a command line through the command table with its output
 * captured, as the REPL would run it (recorded the same way), and returns
 * TUI_QUIT after `quit`, else what to draw.  Errors go to the message.
 *
 * tui_command_key: an option key's command (g, n, m, ...), shown at the
 * end of the info line (t->st.ran); only errors and warnings are shown.
 * tui_command_text (e): the text, edited in the prompt, as `text ...`.
 * tui_command_line (:): any command from the prompt, into the history;
 * what it prints goes to the message or the pager.
 * tui_command_export (x): `export` of what the view shows, asking for
 * the format and the file.
 */
enum tui_result tui_command_key(struct tui *t, const char *line);
enum tui_result tui_command_text(struct tui *t);
enum tui_result tui_command_line(struct tui *t);
enum tui_result tui_command_export(struct tui *t);

#endif
