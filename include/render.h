/*
 * render.h — pure text layout shared by the commands, the exports and the
 * TUI: a growable output buffer, shading scales, pooling a T x T attention
 * matrix into a smaller grid of character cells, display widths of token
 * labels (CJK double width), and whole layouts of one head and of every
 * head.  Nothing here prints, touches a terminal or calls ncurses: each
 * function appends to a `struct render_buf` that the caller writes.
 *
 * Shading (absolute attention weights in [0, 1]):
 *   a weight below RENDER_ZERO (0.01) is drawn as blank, so masked keys and
 *   negligible weights look empty; above it, a ramp of n glyphs has level
 *   1 + floor(v * (n - 1)) (clamped to n - 1):
 *     unicode  ' ' <0.01  '░' <0.25  '▒' <0.5  '▓' <0.75  '█'
 *     ascii    ' ' <0.01  '.' <1/9   ':' <2/9  ...        '@' >= 8/9
 *   ANSI output uses 256-colour backgrounds from a viridis-like ramp of 11
 *   steps (level round(v * 10)); SVG uses the continuous ramp.
 */
#ifndef ATTNSCOPE_RENDER_H
#define ATTNSCOPE_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* ---------------------------------------------------------------- buffer */

/* Bytes under construction; data is NUL-terminated once anything has been
 * appended (and after render_buf_init it is NULL with len 0). */
struct render_buf {
	char *data;
	size_t len, cap;
};

void render_buf_init(struct render_buf *b);
/* Frees the bytes and re-initialises; a zeroed buffer is fine. */
void render_buf_free(struct render_buf *b);
void render_buf_put(struct render_buf *b, const char *s, size_t n);
void render_buf_puts(struct render_buf *b, const char *s);
void render_buf_printf(struct render_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends s n times (nothing when n <= 0). */
void render_buf_repeat(struct render_buf *b, const char *s, int n);

/* --------------------------------------------------------------- shading */

enum render_style {
	RENDER_UNICODE, /* ' ░▒▓█' */
	RENDER_ASCII,   /* ' .:-=+*#%@' */
	RENDER_ANSI,    /* 256-colour backgrounds */
};

#define RENDER_ZERO 0.01 /* weights below this are drawn blank */

/* Shading level of v on a ramp of n levels (0 = blank .. n-1 = full);
 * NaN and v < RENDER_ZERO are 0. */
int render_level(double v, int n);

/* Number of glyph levels of a style (5 unicode, 10 ascii, 11 ANSI). */
int render_levels(enum render_style st);

/* Glyph of level k for the unicode or ascii ramp (a UTF-8 string). */
const char *render_glyph(enum render_style st, int k);

/* A cell the attention mask hides (a NAN value): not a zero weight. */
#define RENDER_MASKED_UNICODE "\u00b7"
#define RENDER_MASKED_ASCII "/"

/* Glyph for value v (unicode or ascii ramp); NAN is a masked cell. */
const char *render_shade(enum render_style st, double v);

/* xterm-256 colour index for v (11-step perceptual ramp). */
int render_color256(double v);

/* Continuous perceptual ramp (viridis) for v in [0, 1]. */
void render_rgb(double v, unsigned char rgb[3]);

/* Appends one cell of value v, `width` columns wide: the glyph repeated
 * (unicode/ascii), or blanks on the ramp's background colour (ANSI, with
 * the colour reset after the cell); NAN draws the masked glyph. */
void render_cell(struct render_buf *b, enum render_style st, double v, int width);

/* Appends the shading legend, one line ending in '\n', e.g.
 * "scale: ' ' <0.01  '░' <0.25  '▒' <0.50  '▓' <0.75  '█' >=0.75 (WHAT)",
 * what naming the quantity ("attention weight"). */
void render_legend(struct render_buf *b, enum render_style st, const char *what);

/* Appends s as one CSV field: as it is, or quoted (quotes doubled) when it
 * holds a comma, a quote or a line break. */
void render_csv_field(struct render_buf *b, const char *s);

/* Appends s with XML's five special characters escaped (SVG text and
 * attributes); s should already be printable. */
void render_xml_escape(struct render_buf *b, const char *s);

/* The font-family of every SVG attnscope writes: DejaVu Sans Mono for
 * Latin text, then CJK monospace and sans fonts for the characters it
 * lacks (a renderer takes the first installed font that has a glyph),
 * then the generic monospace.  In single quotes, for a double-quoted
 * attribute. */
#define RENDER_SVG_FONTS "'DejaVu Sans Mono', 'Noto Sans Mono CJK SC', 'Noto Sans CJK SC', " \
			 "'WenQuanYi Zen Hei Mono', 'Source Han Sans SC', monospace"

/* --------------------------------------------------------------- pooling */

enum render_pool_mode {
	RENDER_POOL_MAX,  /* a cell shows its strongest weight: patterns stay sharp */
	RENDER_POOL_ABSMAX, /* the entry farthest from 0, sign kept (changes) */
	RENDER_POOL_MEAN, /* a cell shows the average of the weights it covers */
};

/* Factor that fits n items into at most `cells` cells: ceil(n / cells),
 * at least 1 (cells <= 0 means no limit, factor 1). */
int render_pool_factor(int n, int cells);

/* Pools a rows x cols matrix m (row stride ld floats) by fy rows and fx
 * columns per cell into out, which receives ceil(rows/fy) x ceil(cols/fx)
 * values (row-major, stride ceil(cols/fx)).  Edge cells cover what is
 * left; a mean is taken over the entries a cell actually covers.  NAN
 * entries (masked) are left out; a cell of nothing but them is NAN. */
void render_pool(const float *m, int rows, int cols, int ld, int fy, int fx,
		 enum render_pool_mode mode, float *out);

/* Maps a rows x cols matrix into a grid of at most max_rows x max_cols
 * cells (a limit <= 0 is no limit).  With `square` both axes use the
 * larger factor (a square matrix stays square).  out must hold
 * min(rows, max_rows) * min(cols, max_cols) floats.  Stores the factors and
 * the pooled size (any pointer may be NULL). */
void render_fit(const float *m, int rows, int cols, int ld, int max_rows, int max_cols,
		bool square, enum render_pool_mode mode, float *out, int *fy, int *fx,
		int *out_rows, int *out_cols);

/* ---------------------------------------------------------------- labels */

/* Display columns of one code point: 2 for East Asian wide and fullwidth
 * characters, 0 for combining marks, else 1.  Uses wcwidth() (the caller
 * sets a UTF-8 locale) with a built-in table as the fallback where the
 * locale does not know the character, so layouts agree across locales. */
int render_cp_width(uint32_t cp);

/* Display columns of a UTF-8 string (invalid bytes count 1 each). */
int render_width(const char *s);

enum render_align { RENDER_LEFT, RENDER_RIGHT, RENDER_CENTER };

/* Appends text (words separated by blanks) starting at column col of the
 * current line, wrapped between words to width display columns;
 * continuation lines start with indent blanks; ends the line.  A word
 * longer than a line stays whole. */
void render_wrap(struct render_buf *b, const char *text, int col, int indent, int width);

/* Appends s in exactly w display columns: padded with blanks, or cut to
 * fit with a final '…' (or '~' when ascii_only) when it is wider. */
void render_pad(struct render_buf *b, const char *s, int w, enum render_align a,
		bool ascii_only);

/* Labels of n token ids (tok_label: whitespace visible, controls escaped):
 * a malloc'd array of n malloc'd strings; free with render_labels_free. */
char **render_labels(const struct tokenizer *t, const int *ids, int n);
void render_labels_free(char **labels, int n);

/* --------------------------------------------------------------- layouts */

/* One head: rows are query tokens (index and label on the left), columns
 * are key tokens (labels along the top, stacked vertically when wider than
 * a cell), then the legend.  Cells are 2 columns wide when that fits in
 * max_width (0 = no limit), else 1 (when no key label is double width);
 * when even that is too wide the matrix is max-pooled and the axes show
 * token index ranges instead of labels (the title says "pooled N×").
 * Ends with '\n'. */
struct render_head_spec {
	const float *att;          /* (T, T) row = query, column = key */
	int T;
	char *const *labels;       /* T labels */
	enum render_style style;
	int max_width;             /* 0 = no limit */
	const char *title;         /* first line, or NULL for none */
	const char *what;          /* the legend's quantity; NULL: "attention weight" */
	bool diverging;            /* att holds changes in -1..1 (show diff): each cell is
				    * its sign and tenths ("+3", "-7"), coloured red / blue
				    * under ANSI; blank within 0.05 */
};
void render_head(struct render_buf *b, const struct render_head_spec *sp);

/* Every head as a small heatmap, layers down and heads across (wrapped to
 * max_width, 0 = no limit), each max-pooled to at most cell x cell
 * characters; ablated heads are titled "L.H x" ("✗" in unicode), the
 * selected head "[L.H]".  A line before the grid states the size and the
 * pooling; a legend follows.  Ends with '\n'. */
struct render_grid_spec {
	const float *const *att;   /* L * H pointers to (T, T), index l * H + h */
	int L, H, T;
	const bool *ablated;       /* L * H flags, or NULL */
	const char *const *badges; /* L * H role badges after each title ("" none), or NULL */
	int sel_layer, sel_head;   /* -1 for no selection */
	enum render_style style;
	int cell;                  /* largest heatmap side in characters (>= 1) */
	int max_width;             /* 0 = no limit */
	const char *what;          /* the legend's quantity; NULL: "attention weight" */
};
void render_grid(struct render_buf *b, const struct render_grid_spec *sp);

/* v as it should print with the given decimals: 0 where it would round
 * to zero, so that rounding noise never prints as -0.00. */
static inline double render_shown(double v, int decimals)
{
	double half = 0.5;
	for (int i = 0; i < decimals; i++)
		half /= 10.0;
	return v < half && v > -half ? 0.0 : v;
}

#endif
