/*
 * tui-layout.h — pure layout for the visualizer: where the regions of the
 * screen go, where each head's heatmap goes in the grid (and how much the
 * T x T matrices are pooled to fit), the head and token views' scrolling
 * windows, what the status and key-hint lines say, the next option a key
 * cycles to, and a small UTF-8 line editor.  Nothing here touches a
 * terminal or ncurses, so every function is unit-tested on plain numbers
 * (tests/test_tui_layout.c).
 *
 * Coordinates are screen rows (y) and columns (x) from the top left, as in
 * curses.  Widths are display columns (CJK characters count 2).
 *
 * Screen (at least TUI_MIN_COLS x TUI_MIN_ROWS):
 *   row 0           status line: model, sharing, norm, mask, scale, ablations
 *   rows 1..R-3     body: the current view (and, from TUI_SIDE_MIN_COLS
 *                   columns, a side panel of numbers on the right)
 *   row R-2         info line: the run's numbers, or the last message
 *   row R-1         key hints
 */
#ifndef ATTNSCOPE_TUI_LAYOUT_H
#define ATTNSCOPE_TUI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* ------------------------------------------------------------- regions */

#define TUI_MIN_COLS 40       /* below this the screen says "too small" */
#define TUI_MIN_ROWS 10
#define TUI_SIDE_MIN_COLS 112 /* a side panel from this width on */
#define TUI_SIDE_W 32         /* its width (a blank column separates it) */

struct tui_rect {
	int y, x, h, w;
};

struct tui_frame {
	int rows, cols;
	bool too_small;          /* nothing but a message fits */
	struct tui_rect status;  /* row 0 */
	struct tui_rect body;    /* the view */
	struct tui_rect side;    /* w == 0 when there is no side panel */
	struct tui_rect info;    /* row rows-2 */
	struct tui_rect hints;   /* row rows-1 */
};

/* Splits a rows x cols screen; want_side asks for the side panel (it is
 * given only from TUI_SIDE_MIN_COLS columns). */
void tui_frame_layout(int rows, int cols, bool want_side, struct tui_frame *f);

/* Whether (y, x) lies inside r. */
bool tui_rect_has(const struct tui_rect *r, int y, int x);

/* First index of a window of `visible` items out of `total` that keeps
 * `sel` visible, moving `first` as little as possible (0 when all fit). */
int tui_scroll(int first, int visible, int total, int sel);

/* ---------------------------------------------------------------- grid */

#define TUI_GRID_GAP 1   /* columns between two heads */
#define TUI_GRID_MIN_N 6 /* a heatmap is never pooled below this side... */
#define TUI_GRID_MAX_ZOOM 3 /* ...nor stretched beyond 3 pixels per cell */

/*
 * The grid: layers down, heads across.  Each head is a title row (its id,
 * drawn over a rule that joins the heads sharing a KV head) and below it a
 * heatmap of `map_rows` text rows.  With half blocks (vsub 2) one text row
 * shows two query rows.  The matrix is max-pooled to n x nx (each pooled
 * cell the strongest of pool queries x pool_x keys), on each axis the
 * least pooling with which every head fits, so a wide screen shows the keys
 * finer than the height allows the queries; then magnified by a whole
 * factor up to TUI_GRID_MAX_ZOOM per axis: `side` pixels down (half-rows
 * or rows, side = n, 2n or 3n) and `side_x` columns across, pixel p showing
 * pooled row p * n / side and column px * nx / side_x.  When not every
 * head fits even at TUI_GRID_MIN_N, heads or layers scroll (heads_vis < H,
 * layers_vis < L), the grid follows the selection and both axes pool alike.
 * When the keys are not pooled and every layer has a row to spare, each
 * heatmap gets its key labels underneath (`labels`).
 */
struct tui_grid_layout {
	int L, H, T;
	int vsub;         /* matrix rows per text row: 2 (half blocks) or 1 */
	int pool;         /* queries per pooled cell (>= 1) */
	int pool_x;       /* keys per pooled cell (>= 1) */
	int n;            /* pooled rows, ceil(T / pool) */
	int nx;           /* pooled columns, ceil(T / pool_x) */
	int side;         /* heatmap height in pixels (n, 2n or 3n) */
	int side_x;       /* heatmap width in columns (nx, 2nx or 3nx) */
	int map_rows;     /* text rows of a heatmap, ceil(side / vsub) */
	int title_w;      /* widest head title */
	int cell_w;       /* columns of one head: max(side_x, title_w) */
	bool labels;      /* a row of key labels under each heatmap: keys not
			   * pooled and a spare row for every layer */
	int cell_h;       /* rows of one head: 1 + map_rows (+ 1 with labels) */
	int header;       /* rows above the grid (the line stating the pooling) */
	int heads_vis, layers_vis;
	int head0, layer0; /* first head and layer shown */
	struct tui_rect area;
};

/* Display width of the widest head title, "[L.H]" plus the ablation mark,
 * for L layers and H heads. */
int tui_grid_title_width(int L, int H);

/* Lays out L x H heads of T tokens in area (see above).  vsub is 2 or 1. */
void tui_grid_layout(const struct tui_rect *area, int L, int H, int T, int vsub,
		     struct tui_grid_layout *g);

/* Whether the grid view on a rows x cols screen gets the side panel of
 * numbers: only when it costs the heatmaps nothing (same size, as many
 * heads shown as without it). */
bool tui_grid_side_panel(int rows, int cols, int L, int H, int T, int vsub);

/* Scrolls the grid so that head (l, h) is visible. */
void tui_grid_follow(struct tui_grid_layout *g, int l, int h);

/* Top-left of head (l, h)'s title row; false when it is scrolled away. */
bool tui_grid_cell(const struct tui_grid_layout *g, int l, int h, int *y, int *x);

/* The head under screen position (y, x) (title, heatmap or the gap to its
 * right); false when there is none. */
bool tui_grid_hit(const struct tui_grid_layout *g, int y, int x, int *l, int *h);

/* Pooled row shown by heatmap pixel row p. */
static inline int tui_grid_pixel(const struct tui_grid_layout *g, int p)
{
	return (int)((long)p * g->n / g->side);
}

/* Pooled column shown by heatmap column px. */
static inline int tui_grid_column(const struct tui_grid_layout *g, int px)
{
	return (int)((long)px * g->nx / g->side_x);
}

/* Whether heads h and h + 1 share a KV head under G key/value heads
 * (their title rule is joined across the gap).  Never under MHA. */
bool tui_grid_joined(int H, int G, int h);

/* --------------------------------------------------------- head view */

#define TUI_HEAD_LABEL_MAX 10 /* widest query label on the left */
#define TUI_PANEL_W 26        /* the cursor's top keys, on the right... */
#define TUI_PANEL_MIN_W 22    /* ...narrowed to this when that shows every key */
#define TUI_PANEL_ROWS 7      /* ...or below the matrix when narrow */
#define TUI_HEAD_TOPK 5

/*
 * One head's matrix: rows are query tokens (index and label on the left),
 * columns key tokens (an index ruler and their labels on top), one row per
 * query and cw columns per key (2 when a label is double width or there is
 * room, else 1).  Rows and columns scroll to keep the cursor (query q, key
 * k) visible; a panel lists the cursor row's strongest keys.
 */
struct tui_head_layout {
	int T;
	int idx_w, label_w, cw;
	int rows_vis, cols_vis;
	int row0, col0;
	struct tui_rect title;   /* one row: head id, sizes, the cursor's weight */
	struct tui_rect ruler;   /* key indexes */
	struct tui_rect keys;    /* key labels */
	struct tui_rect matrix;  /* rows_vis x (cols_vis * cw) cells */
	struct tui_rect panel;   /* the cursor row's top keys (w 0: none) */
};

/* label_w: widest label (capped at TUI_HEAD_LABEL_MAX here); wide: whether
 * any label has a double-width character.  row0/col0: the previous scroll
 * position (updated to keep q and k visible). */
void tui_head_layout(const struct tui_rect *area, int T, int label_w, bool wide, int q, int k,
		     int row0, int col0, struct tui_head_layout *h);

/* The (query, key) cell under (y, x); false outside the matrix. */
bool tui_head_hit(const struct tui_head_layout *h, int y, int x, int *q, int *k);

/* -------------------------------------------------------- token view */

/*
 * One query token's attention: a row per head (of one layer, or of every
 * layer with a blank row between layers), a column per key with a bar whose
 * height is the weight, and the head's strongest key on the right.  Keys
 * scroll to keep the query visible (its causal keys end there).
 */
struct tui_token_layout {
	int n_rows;        /* heads listed */
	int rows_vis, row0;
	int cw, keys_vis, key0;
	int left_w, right_w;
	struct tui_rect title, ruler, keys, bars, context;
	struct tui_rect right;  /* each head's strongest key (w 0: none) */
	int layer_gap;     /* 1 when layers are separated by a blank row */
	int H;             /* heads per layer (row i is head i % H of layer i / H) */
};

/* n_layers: how many layers are listed (1 or L); label_w: columns of the
 * widest row label ("1.3✗"); wide: whether a key label is double width;
 * q: the query token; sel_row: the selected head's row; row0/key0: the
 * previous scroll position (row0 counts screen rows, blank ones included). */
void tui_token_layout(const struct tui_rect *area, int n_layers, int H, int T, int label_w,
		      bool wide, int q, int sel_row, int row0, int key0, struct tui_token_layout *t);

/* Screen row of listed head row i (-1 when scrolled away). */
int tui_token_row_y(const struct tui_token_layout *t, int i);

/* The listed head row under screen row y and the key under column x (-1
 * when x is not on a key); false when y is not on a head's row. */
bool tui_token_hit(const struct tui_token_layout *t, int y, int x, int *row, int *key);

/* ------------------------------------------------------------- glyphs */

/* Heat level of weight v on a ramp of n levels: 0 (blank, below
 * RENDER_ZERO) to n - 1 (render_level). */
int tui_level(double v, int n);

/* What a half-block character shows for the levels of its top and bottom
 * halves: glyph 0 ' ', 1 '▀' (fg top, bg bottom), 2 '▄' (fg bottom, bg
 * default), 3 '█' (fg).  Level 0 is the default background. */
struct tui_half {
	int glyph, fg, bg;
};
void tui_half_cell(int top, int bottom, struct tui_half *out);

/* Bar height 0..8 for weight v (eighths of a cell: ' ', '▁' .. '█'). */
int tui_bar_level(double v);

/* ------------------------------------------------------------ options */

#define TUI_WINDOW 4 /* the window `m` cycles to */

/* The KV-head count after cur when cycling MHA -> GQA (each divisor of H
 * between 1 and H, descending) -> MQA -> MHA. */
int tui_next_kv_heads(int H, int cur);

/* The command that `g` runs from kv heads cur ("attn gqa 2", "attn mqa",
 * "attn mha"). */
void tui_sharing_command(int H, int cur, char *buf, size_t size);

/* The command `m` runs: causal -> none -> window TUI_WINDOW -> after-softmax
 * -> causal. */
void tui_mask_command(enum mask_kind mask, char *buf, size_t size);

/* "MHA", "GQA 2" or "MQA" for G of H heads. */
void tui_sharing_name(int H, int G, char *buf, size_t size);

/* The status line: "NAME LxH | MHA | pre-norm | causal | scale on | no
 * ablations" (separators " │ " and "×" in unicode; without dims no "LxH").
 * o: the current options; ablations listed as L.H up to a few, then
 * counted; a pitfall adds " | pitfall NAME" at the end. */
void tui_status_text(const char *name, int L, int H, const struct run_options *o, bool unicode,
		     bool dims, char *buf, size_t size);

/* ------------------------------------------------------------ messages */

/* One row of wrapped text: bytes [off, off + len) of it. */
struct tui_span {
	int off, len;
};

/*
 * Wraps UTF-8 text into rows of at most width display columns (width >=
 * 1): each '\n' ends a row, a row breaks after the last blank that fits
 * (the blanks at the break are left out), and a word longer than a row is
 * cut where the row is full.  Fills the first max rows into rows (which
 * may be NULL when max is 0) and returns how many rows there are in all.
 */
int tui_wrap(const char *text, int width, struct tui_span *rows, int max);

/* ------------------------------------------------------------- hints */

/* One "KEY what" pair of the hint line: the key as shown in UTF-8 and in
 * ASCII.  A list ends with TUI_HINT_END. */
struct tui_hint {
	const char *key_u, *key_a;
	const char *what;
};

#define TUI_HINT_END { NULL, NULL, NULL }

/* The option keys every view lists first (they fit at 80 columns); moving
 * and the view's own keys follow where there is room; `?` lists all. */
#define TUI_HINT_OPTIONS \
	{ "g", "g", "share" }, { "n", "n", "norm" }, { "m", "m", "mask" }, { "s", "s", "scale" }, \
	{ "a", "a", "ablate" }, { "A", "A", "all" }, { "e", "e", "text" }, { ":", ":", "cmd" }, \
	{ "r", "r", "reset" }, { "Tab", "Tab", "view" }

/* The key-hint line of a view's list in at most width columns: as many
 * "KEY what" pairs as fit, in order, two blanks apart, then "? help  q
 * back" (or "q quit").  `back` says whether q returns to a prompt. */
void tui_hints_text(const struct tui_hint *list, bool back, bool unicode, int width, char *buf,
		    size_t size);

/* --------------------------------------------------------- line editor */

/* A line of code points with a cursor, for the `e`, `:` and `x` prompts. */
struct tui_line {
	uint32_t *cp; /* owned */
	int n, cap;
	int cur;      /* 0..n */
};

/* Starts from utf8 (may be NULL); the cursor goes to the end.  Invalid
 * bytes become U+FFFD. */
void tui_line_init(struct tui_line *l, const char *utf8);
void tui_line_free(struct tui_line *l);
void tui_line_set(struct tui_line *l, const char *utf8);
void tui_line_insert(struct tui_line *l, uint32_t cp);
void tui_line_backspace(struct tui_line *l);
void tui_line_delete(struct tui_line *l);
void tui_line_left(struct tui_line *l);
void tui_line_right(struct tui_line *l);
void tui_line_home(struct tui_line *l);
void tui_line_end(struct tui_line *l);
void tui_line_kill_start(struct tui_line *l); /* Ctrl-U */
void tui_line_kill_end(struct tui_line *l);   /* Ctrl-K */
void tui_line_kill_word(struct tui_line *l);  /* Ctrl-W */

/* The line as malloc'd UTF-8 (caller frees). */
char *tui_line_utf8(const struct tui_line *l);

/* Display columns of code points [from, to). */
int tui_line_width(const struct tui_line *l, int from, int to);

/* First code point to show so that the cursor fits in `width` columns
 * (one column kept for the cursor at the end), moving `first` as little as
 * possible. */
int tui_line_scroll(const struct tui_line *l, int first, int width);

#endif
