/*
 * tui.h — the full-screen visualizer (ncursesw): every head of every layer
 * for the text on screen, changing the moment an option changes.
 *
 * Entered with `view` from the REPL or a script (`q` returns), or with
 * `attnscope --tui` (`q` quits).  Every change a key makes is a command
 * run through cmd_run_line() with the one command table, exactly as if it
 * were typed at the prompt (and recorded the same way); `:` runs any
 * command.  While the visualizer is up, what commands print to s->out is
 * captured (open_memstream) and shown in the message line or a pager, and
 * what they write to standard error goes through a pseudo-terminal that
 * the visualizer reads (progress lines such as `sweep 12/73` are shown as
 * they come; Esc or Ctrl-C sets *s->cancel).
 *
 * Terminal: ncursesw in the locale's encoding (UTF-8 for the half-block
 * heatmaps and CJK labels; other locales fall back to ASCII), the
 * alternate screen, raw keys, the mouse when the terminal reports it.
 * Colour: a 256-colour ramp, an 8-colour one, or none (shading glyphs)
 * when the terminal has no colour, NO_COLOR is set or TERM is dumb-like.
 * The terminal is restored on every way out: q, :quit, errors, exit(),
 * and SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGABRT (restored in the
 * handler, then the signal's usual action).
 *
 * Keys: `?` in the visualizer (the help in tui.c) and docs/visualizer.md.
 * The views and what they share are tui-view.h; the modules of the
 * visualizer itself share src/faces/tui-int.h.
 */
#ifndef ATTNSCOPE_TUI_H
#define ATTNSCOPE_TUI_H

#include <stdbool.h>

#include "session.h"
#include "util.h"

enum {
	TUI_STANDALONE = 1u << 0, /* started with --tui: q quits the program */
};

/*
 * Runs the visualizer on s until q (returns 0) or `:quit` (returns
 * CMD_QUIT, cmd.h), starting in view `first`.  Standard input and output
 * must be a terminal that can address the cursor; otherwise -1 with a
 * message and nothing changed.  s->out, s->interactive and the signal
 * dispositions are as before when it returns.
 */
int tui_run(struct session *s, int first, unsigned flags, struct err *e);

/* The name of view v (tui-view.h lists them; "?" for none) and the view
 * a name or a number 1..n names: 0, or -1 when unknown. */
const char *tui_view_name(int v);
int tui_view_parse(const char *s, int *out);

/* Whether the visualizer is up (a nested `view` is refused). */
bool tui_active(void);

#endif
