/*
 * tui-view.h — what the views of the visualizer share, and nothing but
 * the visualizer's own files includes (its entry for the rest of the
 * program is tui.h): the state the views read, the drawing helpers
 * (tui-draw.c), moving the selection, the numbers side panel
 * (tui-numbers.c), and what a view is (struct tui_view_mode) with the
 * table that lists them (tui-views.c).
 *
 * Attributes are TUI_A_* bits, turned into curses attributes by the
 * drawing helpers.
 */
#ifndef ATTNSCOPE_TUI_VIEW_H
#define ATTNSCOPE_TUI_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "session.h"
#include "tui-layout.h"
#include "util.h"

/* ---------------------------------------------------------------- state */

#define TUI_KEY_MS_KEEP 64 /* key-to-redraw times kept for the numbers view */

/* What every view reads: the session, the terminal's style, where the
 * screen's regions are, and the numbers of the last keys.  Each view's
 * own state is its data (struct tui_view_mode's init). */
struct tui_state {
	struct session *s;
	int view;             /* index into tui_views[] */
	bool standalone;
	bool utf8;            /* the locale is UTF-8: half blocks, CJK */
	int colors;           /* 256, 8, or 0 (monochrome) */
	int levels;           /* heat levels including blank: 11, 6, or the glyph ramp's */
	int vsub;             /* matrix rows per text row in the grid: 2 or 1 */
	struct tui_frame frame;
	void **data;          /* each view's data, by its index in tui_views[] (tui_views_init) */

	char ran[192];        /* the command the last option key ran, or "" */

	/* the row sums of the current run's weights (tui_row_sums) */
	struct row_sums row_sums;
	unsigned long row_sums_gen; /* the session's run_gen they are of, + 1 (0: none yet) */

	/* key-to-redraw times (ms), newest last */
	double key_ms[TUI_KEY_MS_KEEP];
	int n_key_ms;
	long keys_total;
};

/* -------------------------------------------------------------- drawing */

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
	TUI_ROLE_UP,       /* a weight that rose (head view, d) */
	TUI_ROLE_DOWN,     /* a weight that fell */
	TUI_N_ROLES
};

/* Drawing helpers (tui-draw.c).  All clip to the screen. */

/* Draws UTF-8 text at (y, x) in at most maxw columns (a character that
 * would cross the limit is not drawn); returns the columns used. */
int tui_put(int y, int x, int maxw, const char *utf8, unsigned attr, enum tui_role role);

/* printf into tui_put. */
int tui_printf(int y, int x, int maxw, unsigned attr, enum tui_role role, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Fills columns [x, x + w) of row y with blanks. */
void tui_blank(int y, int x, int w, unsigned attr, enum tui_role role);

/* Draws one cell of weight v, `w` columns wide, in the heat ramp (the
 * shading glyph, in the ramp's colour with colour); NAN is a masked cell
 * (the masked glyph, on grey with 256 colours). */
void tui_heat(const struct tui_state *t, int y, int x, int w, double v, unsigned attr);

/* The heat ramp's scale at (y, x) in at most w columns: "0 ", a cell of
 * every level (t->levels) from blank to full, " 1".  Returns the columns
 * used (0 when it does not fit). */
int tui_heat_scale(const struct tui_state *t, int y, int x, int w);

/* The colour pairs (after start_color); no-op without colour. */
void tui_colors_init(struct tui_state *t);

/* Draws one glyph in the heat colour of v (bold when asked) when the
 * terminal has colour, else plain. */
void tui_heat_glyph(int y, int x, const char *glyph, double v, bool bold);

/* A change d in -1..1 in w (1 or 2) columns at (y, x): its sign and
 * tenths ("+3", "-#" from 0.95), red when up, blue when down, bold from
 * 0.5; blank within 0.05. */
void tui_change(int y, int x, int w, double d, unsigned attr);

/* One half-block character for the weights of two query rows, top and
 * bottom (NAN: masked; both masked: the masked glyph; a half with nothing
 * to show is given 0, blank). */
void tui_half_block(int y, int x, double top, double bottom);

/* Whether the locale is UTF-8; the ablation mark ('✗' or 'x') and the
 * times sign ('×' or 'x') that follow from it. */
bool tui_utf8(void);
const char *tui_mark_ablated(void);
const char *tui_times_sign(void);

/* Draws the "no model / no text" note in r, or where a NaN started when
 * the run has one (session_nonfinite_text): NaN attention is not drawn.
 * True when the view can draw. */
bool tui_need_run(const struct session *s, const struct tui_rect *r);

/* Labels of the session's tokens (render_labels_free them); their widest
 * width and whether any is double width (either may be NULL). */
char **tui_token_labels(const struct session *s, int *widest, bool *wide);

/* The k strongest keys of a row of n values, strongest first (earlier
 * keys win ties); masked keys (NAN) are never among them.  Returns how
 * many (fewer than k when fewer keys are visible). */
int tui_top_keys(const float *row, int n, int k, int *best);

/* A bar of `w` columns for v in [0, 1] in eighths ('▏'..'█'), ASCII '#'. */
void tui_put_bar(int y, int x, int w, double v, enum tui_role role);

/* A label cut to `w` columns with '…' into buf. */
void tui_short_label(const char *label, int w, char *buf, size_t size);

/* What the rows of the current run's weights sum to (analysis.h), computed
 * once per run; needs session_ready(). */
const struct row_sums *tui_row_sums(struct tui_state *t);

/* Whether the current run's rows of weights may sum to less than 1 (the
 * mask after the softmax): then the views say what they sum to. */
bool tui_rows_short(const struct tui_state *t);

/* Median and newest of the kept key-to-redraw times (0 / NAN when none). */
double tui_key_ms_median(const struct tui_state *t);
double tui_last_key_ms(const struct tui_state *t);

/* --------------------------------------------- selection and side panel */

/* Selection shared by the views (tui-draw.c), clamped to the model and
 * the text; each marks the session DIRTY_SELECT. */
void tui_select_head(struct tui_state *t, int l, int h);
void tui_step_head(struct tui_state *t, int d); /* layer-major, wrapping */
void tui_select_token(struct tui_state *t, int q);

/* The numbers side panel (tui-numbers.c), beside the views that want it. */
void tui_draw_side(struct tui_state *t, const struct tui_rect *r);

/* ----------------------------------------------------------- view modes */

/*
 * A view of the visualizer (after tmux's window modes): what the body
 * shows and what moving and clicking do there.  Each lives in its own file
 * and is listed once in tui_views[] (tui-views.c), whose order gives the
 * keys 1..n (Tab steps through them; `view NAME` opens one):
 *
 *   1 "grid"     tui-grid.c     every layer x head as a small heatmap
 *   2 "head"     tui-head.c     one head, token labels on both axes
 *   3 "token"    tui-token.c    one query token across the heads
 *   4 "numbers"  tui-numbers.c  the run's numbers (and the side panel)
 *   5 "lens"     tui-lens.c     the logit lens, depth by position
 *   6 "curves"   tui-curves.c   the model's training curves
 *   7 "patch"    tui-patch.c    the last activation patching
 *   8 "circuits" tui-circuits.c composition between heads around the selection
 *
 * A view's state is its own (after tmux's mode data): a struct of the
 * view's file that init makes, given to every handler as `data`.
 * Handlers change only that state and the session's selection.  A new
 * view is its file, its line above, and its line in tui_views[]: the `?`
 * help, completion and `view`'s messages take the views from the table.
 */
enum tui_key_result { TUI_KEY_IGNORED, TUI_KEY_HANDLED, TUI_KEY_REFRESH };

struct tui_view_mode {
	const char *name;            /* "grid", ...: `view NAME`, the status line */
	const char *export_what;     /* what `x` exports: "grid", "heatmap" or "stats" */
	const struct tui_hint *hints; /* the hint line, most useful first */
	bool numbers;                /* it shows the numbers (redrawn after each key's timing) */
	/* its state: init makes it when the visualizer starts and free
	 * frees it when it ends (both NULL: a view without state, whose
	 * data is NULL) */
	void *(*init)(struct tui_state *t);
	void (*free)(void *data);
	/* a new model or text: cursors and scrolling start over (NULL: none) */
	void (*reset)(struct tui_state *t, void *data);
	/* whether the side panel sits beside the body (NULL: never) */
	bool (*side)(struct tui_state *t, void *data);
	void (*draw)(struct tui_state *t, void *data, const struct tui_rect *r);
	/* arrows, hjkl and the wheel: dy, dx in {-1, 0, 1} (NULL: the head) */
	void (*arrows)(struct tui_state *t, void *data, int dy, int dx);
	/* a left click at (y, x): TUI_KEY_REFRESH when it changed something;
	 * *open is set when it asks for the head view */
	enum tui_key_result (*click)(struct tui_state *t, void *data, int y, int x, bool *open);
	/* keys of its own (PgUp/PgDn, z); NULL: none */
	enum tui_key_result (*key)(struct tui_state *t, void *data, int ch, bool fn);
};

/* The views in order, and how many. */
extern const struct tui_view_mode *const tui_views[];
extern const int tui_n_views;

/* Every view's data in t->data (init), freed again (free; t->data goes
 * too), and started over for a new model or text (reset). */
void tui_views_init(struct tui_state *t);
void tui_views_free(struct tui_state *t);
void tui_views_reset(struct tui_state *t);

/* A view mode's side: the side panel whenever there is room (tui-draw.c). */
bool tui_side_always(struct tui_state *t, void *data);

#endif
