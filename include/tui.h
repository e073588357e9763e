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
 * Keys: see tui_help_text() (`?` in the visualizer) and README.
 */
#ifndef ATTNSCOPE_TUI_H
#define ATTNSCOPE_TUI_H

#include <stdbool.h>

#include "session.h"
#include "tui-layout.h"
#include "util.h"

/* ------------------------------------------------------------- running */

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
int tui_run(struct session *s, enum tui_view first, unsigned flags, struct err *e);

/* Whether the visualizer is up (a nested `view` is refused). */
bool tui_active(void);

/* The `?` help: every key, one per line (static text). */
const char *tui_help_text(void);

/* ------------------------------------------------ internal: the views */

/*
 * What tui.c and the view drawing in tui-views.c share.  Not for other
 * modules.  Attributes are TUI_A_* bits, turned into curses attributes by
 * the drawing helpers.
 */
enum {
	TUI_A_BOLD = 1u << 0,
	TUI_A_REVERSE = 1u << 1,
	TUI_A_DIM = 1u << 2,
	TUI_A_UNDERLINE = 1u << 3,
};

/* Colour roles (pairs), used only when the terminal has colour. */
enum tui_role {
	TUI_ROLE_NONE,
	TUI_ROLE_STATUS,   /* the status line */
	TUI_ROLE_SELECT,   /* the selected head / cursor */
	TUI_ROLE_ABLATED,  /* ablation marks */
	TUI_ROLE_ERROR,    /* error messages */
	TUI_ROLE_HINT,     /* key names in the hint line */
	TUI_ROLE_GROUP,    /* rules joining heads that share a KV head */
	TUI_ROLE_LABEL,    /* axis labels and headings */
	TUI_N_ROLES
};

#define TUI_KEY_MS_KEEP 64 /* key-to-redraw times kept for the numbers view */

struct tui_state {
	struct session *s;
	enum tui_view view;
	bool standalone;
	bool utf8;            /* the locale is UTF-8: half blocks, CJK */
	int colors;           /* 256, 8, or 0 (monochrome) */
	int levels;           /* heat levels including blank: 11, 6, or the glyph ramp's */
	int vsub;             /* matrix rows per text row in the grid: 2 or 1 */
	struct tui_frame frame;

	/* per view: scroll positions and cursors */
	struct tui_grid_layout grid;
	int grid_layer0, grid_head0;
	struct tui_head_layout head;
	int head_key;         /* the key column of the head view's cursor */
	int head_row0, head_col0;
	struct tui_token_layout token;
	bool token_all;       /* token view lists every layer */
	int token_row0, token_key0;

	char ran[192];        /* the command the last option key ran, or "" */

	/* key-to-redraw times (ms), newest last */
	double key_ms[TUI_KEY_MS_KEEP];
	int n_key_ms;
	long keys_total;
};

/* Drawing helpers (tui-views.c).  All clip to the screen. */

/* Draws UTF-8 text at (y, x) in at most maxw columns (a character that
 * would cross the limit is not drawn); returns the columns used. */
int tui_put(int y, int x, int maxw, const char *utf8, unsigned attr, enum tui_role role);

/* printf into tui_put. */
int tui_printf(int y, int x, int maxw, unsigned attr, enum tui_role role, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Fills columns [x, x + w) of row y with blanks. */
void tui_blank(int y, int x, int w, unsigned attr, enum tui_role role);

/* Draws one cell of weight v, `w` columns wide, in the heat ramp (colour
 * background, or the shading glyph without colour). */
void tui_heat(const struct tui_state *t, int y, int x, int w, double v, unsigned attr);

/* The colour pairs (after start_color); no-op without colour. */
void tui_colors_init(struct tui_state *t);

/* The views, each drawing into r; and the numbers side panel. */
void tui_draw_grid(struct tui_state *t, const struct tui_rect *r);
void tui_draw_head(struct tui_state *t, const struct tui_rect *r);
void tui_draw_token(struct tui_state *t, const struct tui_rect *r);
void tui_draw_numbers(struct tui_state *t, const struct tui_rect *r);
void tui_draw_side(struct tui_state *t, const struct tui_rect *r);

/* Median of the kept key-to-redraw times (0 when none). */
double tui_key_ms_median(const struct tui_state *t);

#endif
