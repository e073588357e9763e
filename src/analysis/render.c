/*
 * render.c — text layout of attention matrices: the output buffer, shading
 * ramps, pooling, label widths and the one-head and all-heads layouts.
 * Everything appends to a render_buf; nothing is printed here.
 */
#define _GNU_SOURCE
#include "render.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---------------------------------------------------------------- buffer */

void render_buf_init(struct render_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void render_buf_free(struct render_buf *b)
{
	free(b->data);
	render_buf_init(b);
}

/* Makes room for n more bytes plus the terminating NUL. */
static void buf_reserve(struct render_buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void render_buf_put(struct render_buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void render_buf_puts(struct render_buf *b, const char *s)
{
	render_buf_put(b, s, strlen(s));
}

void render_buf_printf(struct render_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void render_buf_repeat(struct render_buf *b, const char *s, int n)
{
	size_t k = strlen(s);
	for (int i = 0; i < n; i++)
		render_buf_put(b, s, k);
}

/* Removes trailing blanks before the end of the buffer (the end of the line
 * being built). */
static void buf_rtrim(struct render_buf *b, size_t floor)
{
	while (b->len > floor && b->data[b->len - 1] == ' ')
		b->len--;
	if (b->data)
		b->data[b->len] = '\0';
}

/* --------------------------------------------------------------- shading */

static const char *const unicode_ramp[] = { " ", "\u2591", "\u2592", "\u2593", "\u2588" };
static const char *const ascii_ramp[] = { " ", ".", ":", "-", "=", "+", "*", "#", "%", "@" };

/* xterm-256 indices from dark purple through teal and green to yellow,
 * chosen along viridis with increasing luminance. */
static const int ansi_ramp[] = { 53, 55, 61, 31, 36, 71, 77, 113, 149, 185, 226 };

/* viridis at t = 0, 1/8, ..., 1 */
static const unsigned char viridis[9][3] = {
	{ 0x44, 0x01, 0x54 }, { 0x48, 0x28, 0x78 }, { 0x3e, 0x49, 0x89 },
	{ 0x31, 0x68, 0x8e }, { 0x26, 0x82, 0x8e }, { 0x1f, 0x9e, 0x89 },
	{ 0x35, 0xb7, 0x79 }, { 0x6e, 0xce, 0x58 }, { 0xfd, 0xe7, 0x25 },
};

int render_level(double v, int n)
{
	if (!(v >= RENDER_ZERO) || n < 2)
		return 0;
	int k = 1 + (int)floor(v * (n - 1));
	return k > n - 1 ? n - 1 : k;
}

int render_levels(enum render_style st)
{
	switch (st) {
	case RENDER_ASCII:
		return (int)(sizeof ascii_ramp / sizeof *ascii_ramp);
	case RENDER_ANSI:
		return (int)(sizeof ansi_ramp / sizeof *ansi_ramp);
	default:
		return (int)(sizeof unicode_ramp / sizeof *unicode_ramp);
	}
}

const char *render_glyph(enum render_style st, int k)
{
	const char *const *ramp = st == RENDER_ASCII ? ascii_ramp : unicode_ramp;
	int n = st == RENDER_ASCII ? render_levels(RENDER_ASCII) : render_levels(RENDER_UNICODE);
	if (k < 0)
		k = 0;
	if (k > n - 1)
		k = n - 1;
	return ramp[k];
}

const char *render_shade(enum render_style st, double v)
{
	if (isnan(v)) /* a cell the mask hides */
		return st == RENDER_ASCII ? RENDER_MASKED_ASCII : RENDER_MASKED_UNICODE;
	if (st == RENDER_ANSI)
		st = RENDER_UNICODE;
	return render_glyph(st, render_level(v, render_levels(st)));
}

static double clamp01(double v)
{
	return !(v > 0.0) ? 0.0 : v > 1.0 ? 1.0 : v;
}

int render_color256(double v)
{
	int n = render_levels(RENDER_ANSI);
	return ansi_ramp[(int)floor(clamp01(v) * (n - 1) + 0.5)];
}

void render_rgb(double v, unsigned char rgb[3])
{
	double x = clamp01(v) * 8.0;
	int i = (int)x;
	if (i > 7)
		i = 7;
	double f = x - i;
	for (int k = 0; k < 3; k++)
		rgb[k] = (unsigned char)floor(viridis[i][k] + (viridis[i + 1][k] - viridis[i][k]) * f + 0.5);
}

void render_cell(struct render_buf *b, enum render_style st, double v, int width)
{
	if (st == RENDER_ANSI && isnan(v)) {
		render_buf_repeat(b, RENDER_MASKED_UNICODE, width);
	} else if (st == RENDER_ANSI) {
		render_buf_printf(b, "\x1b[48;5;%dm", render_color256(v));
		render_buf_repeat(b, " ", width);
		render_buf_puts(b, "\x1b[0m");
	} else {
		render_buf_repeat(b, render_shade(st, v), width);
	}
}

/* One cell of a change d in -1..1, cw (1 or 2) columns: the sign and the
 * tenths ("+3", "-#" for 0.95 or more), blank within 0.05; under ANSI on
 * a red (up) or blue (down) background as strong as the change. */
static void diverging_cell(struct render_buf *b, enum render_style st, double d, int cw)
{
	static const int up[5] = { 224, 217, 210, 203, 196 }, down[5] = { 189, 147, 111, 75, 33 };
	double a = fabs(d);
	if (isnan(d) || a < 0.05) {
		render_buf_repeat(b, isnan(d) ? render_shade(st, d) : " ", cw);
		return;
	}
	int tenths = (int)(a * 10 + 0.5), k = (int)ceil(a * 5) - 1;
	char cell[3] = { d > 0 ? '+' : '-', tenths >= 10 ? '#' : (char)('0' + tenths), 0 };
	if (cw < 2)
		cell[1] = 0;
	if (st == RENDER_ANSI)
		render_buf_printf(b, "\x1b[48;5;%dm%s\x1b[0m", (d > 0 ? up : down)[k < 0 ? 0 : k > 4 ? 4 : k], cell);
	else
		render_buf_puts(b, cell);
}

/* Appends n cells of values v, each cw columns wide.  ANSI colours are
 * switched only where they change and reset once after the row. */
static void cells_row(struct render_buf *b, enum render_style st, const float *v, int n, int cw)
{
	if (st != RENDER_ANSI) {
		for (int j = 0; j < n; j++)
			render_buf_repeat(b, render_shade(st, v[j]), cw);
		return;
	}
	int last = -1;
	for (int j = 0; j < n; j++) {
		if (isnan(v[j])) { /* masked: no colour */
			if (last != -2)
				render_buf_puts(b, "\x1b[0m");
			last = -2;
			render_buf_repeat(b, RENDER_MASKED_UNICODE, cw);
			continue;
		}
		int c = render_color256(v[j]);
		if (c != last)
			render_buf_printf(b, "\x1b[48;5;%dm", c);
		last = c;
		render_buf_repeat(b, " ", cw);
	}
	if (n > 0)
		render_buf_puts(b, "\x1b[0m");
}

/* The scale line; compact: single blanks and no blank before each bound,
 * for a map drawn narrower than the usual line. */
static void legend_line(struct render_buf *b, enum render_style st, const char *what, bool compact)
{
	if (st == RENDER_ANSI) {
		render_buf_puts(b, "scale: 0 ");
		for (int k = 0; k < render_levels(st); k++)
			render_cell(b, st, k / (double)(render_levels(st) - 1), 2);
		render_buf_printf(b, " 1 (%s)\n", what);
		return;
	}
	int n = render_levels(st);
	const char *gap = compact ? " " : "  ", *sp = compact ? "" : " ";
	render_buf_printf(b, "scale: '%s'%s<%.2f", render_glyph(st, 0), sp, RENDER_ZERO);
	for (int k = 1; k < n - 1; k++)
		render_buf_printf(b, "%s'%s'%s<%.2f", gap, render_glyph(st, k), sp, (double)k / (n - 1));
	render_buf_printf(b, "%s'%s'%s>=%.2f (%s)\n", gap, render_glyph(st, n - 1), sp,
			  (double)(n - 2) / (n - 1), what);
}

void render_wrap(struct render_buf *b, const char *text, int col, int indent, int width)
{
	const char *p = text;
	bool first = true;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, " ");
		char *word = xstrndup(p, n);
		int w = render_width(word);
		if (!first && col + 1 + w > width) {
			render_buf_puts(b, "\n");
			render_buf_repeat(b, " ", indent);
			col = indent;
		} else if (!first) {
			render_buf_puts(b, " ");
			col++;
		}
		render_buf_puts(b, word);
		free(word);
		col += w;
		p += n;
		first = false;
	}
	render_buf_puts(b, "\n");
}

void render_legend(struct render_buf *b, enum render_style st, const char *what)
{
	legend_line(b, st, what, false);
}

/* The legend of a heatmap of what (NULL: attention weight), naming the
 * masked glyph when any of the n values of v is NAN. */
static void legend_masked(struct render_buf *b, enum render_style st, const char *what,
			  const float *v, size_t n, bool compact)
{
	bool masked = false;
	for (size_t i = 0; v && i < n && !masked; i++)
		masked = isnan(v[i]);
	char buf[256];
	snprintf(buf, sizeof buf, "%s%s%s%s", what ? what : "attention weight",
		 masked ? "; '" : "", masked ? render_shade(st, NAN) : "", masked ? "' masked" : "");
	legend_line(b, st, buf, compact);
}

void render_csv_field(struct render_buf *b, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		render_buf_puts(b, s);
		return;
	}
	render_buf_puts(b, "\"");
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			render_buf_puts(b, "\"");
		render_buf_put(b, p, 1);
	}
	render_buf_puts(b, "\"");
}

void render_xml_escape(struct render_buf *b, const char *s)
{
	for (const char *p = s; *p; p++)
		switch (*p) {
		case '&': render_buf_puts(b, "&amp;"); break;
		case '<': render_buf_puts(b, "&lt;"); break;
		case '>': render_buf_puts(b, "&gt;"); break;
		case '"': render_buf_puts(b, "&quot;"); break;
		case '\'': render_buf_puts(b, "&apos;"); break;
		default: render_buf_put(b, p, 1);
		}
}

/* --------------------------------------------------------------- pooling */

int render_pool_factor(int n, int cells)
{
	if (cells <= 0 || n <= cells)
		return 1;
	return (n + cells - 1) / cells;
}

void render_pool(const float *m, int rows, int cols, int ld, int fy, int fx,
		 enum render_pool_mode mode, float *out)
{
	int orows = (rows + fy - 1) / fy, ocols = (cols + fx - 1) / fx;
	for (int oi = 0; oi < orows; oi++) {
		int i0 = oi * fy, i1 = i0 + fy < rows ? i0 + fy : rows;
		for (int oj = 0; oj < ocols; oj++) {
			int j0 = oj * fx, j1 = j0 + fx < cols ? j0 + fx : cols;
			double acc = mode == RENDER_POOL_MAX ? -INFINITY : 0.0;
			int seen = 0; /* cells that are not masked (NAN) */
			for (int i = i0; i < i1; i++)
				for (int j = j0; j < j1; j++) {
					double v = m[(size_t)i * ld + j];
					if (isnan(v))
						continue;
					seen++;
					if (mode == RENDER_POOL_MEAN)
						acc += v;
					else if (mode == RENDER_POOL_ABSMAX)
						acc = seen == 1 || fabs(v) > fabs(acc) ? v : acc;
					else if (v > acc)
						acc = v;
				}
			if (mode == RENDER_POOL_MEAN && seen)
				acc /= seen;
			out[(size_t)oi * ocols + oj] = seen ? (float)acc : NAN;
		}
	}
}

void render_fit(const float *m, int rows, int cols, int ld, int max_rows, int max_cols,
		bool square, enum render_pool_mode mode, float *out, int *fy, int *fx,
		int *out_rows, int *out_cols)
{
	int py = render_pool_factor(rows, max_rows), px = render_pool_factor(cols, max_cols);
	if (square)
		py = px = py > px ? py : px;
	render_pool(m, rows, cols, ld, py, px, mode, out);
	if (fy)
		*fy = py;
	if (fx)
		*fx = px;
	if (out_rows)
		*out_rows = (rows + py - 1) / py;
	if (out_cols)
		*out_cols = (cols + px - 1) / px;
}

/* ---------------------------------------------------------------- labels */

/* East Asian wide and fullwidth ranges (and wide emoji), for locales whose
 * wcwidth() does not know them. */
static bool is_wide(uint32_t c)
{
	return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
	       (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
	       (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
	       (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
	       (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
	       (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
	       (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

static bool is_combining(uint32_t c)
{
	return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
	       (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
	       (c >= 0xFE20 && c <= 0xFE2F) || c == 0x200B || c == 0x200D;
}

int render_cp_width(uint32_t cp)
{
	if (cp < 0x80)
		return 1;
	int w = wcwidth((wchar_t)cp);
	if (w >= 0)
		return w > 2 ? 2 : w;
	if (is_wide(cp))
		return 2;
	return is_combining(cp) ? 0 : 1;
}

/* Decodes the next unit of s: a code point (or one invalid byte, width 1).
 * Returns its byte length (0 at the end) and its display width in *w. */
static int next_cp(const char *s, int *w)
{
	size_t len = strnlen(s, 4);
	if (len == 0)
		return 0;
	uint32_t cp;
	int bad;
	int k = utf8_decode((const unsigned char *)s, len, &cp, &bad);
	*w = bad ? 1 : render_cp_width(cp);
	return k;
}

int render_width(const char *s)
{
	int total = 0, w, k;
	while ((k = next_cp(s, &w)) > 0) {
		total += w;
		s += k;
	}
	return total;
}

void render_pad(struct render_buf *b, const char *s, int w, enum render_align a,
		bool ascii_only)
{
	if (w <= 0)
		return;
	int sw = render_width(s);
	if (sw <= w) {
		int pad = w - sw;
		int before = a == RENDER_RIGHT ? pad : a == RENDER_CENTER ? pad / 2 : 0;
		render_buf_repeat(b, " ", before);
		render_buf_puts(b, s);
		render_buf_repeat(b, " ", pad - before);
		return;
	}
	/* cut: whole code points up to w - 1 columns, then the ellipsis */
	int used = 0, cw, k;
	while ((k = next_cp(s, &cw)) > 0 && used + cw <= w - 1) {
		render_buf_put(b, s, (size_t)k);
		used += cw;
		s += k;
	}
	render_buf_puts(b, ascii_only ? "~" : "\u2026");
	render_buf_repeat(b, " ", w - 1 - used);
}

char **render_labels(const struct tokenizer *t, const int *ids, int n)
{
	char **v = xcalloc(n > 0 ? (size_t)n : 1, sizeof *v);
	char buf[96];
	for (int i = 0; i < n; i++) {
		if (t)
			tok_label(t, ids[i], buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "%d", ids[i]);
		v[i] = xstrdup(buf);
	}
	return v;
}

void render_labels_free(char **labels, int n)
{
	if (!labels)
		return;
	for (int i = 0; i < n; i++)
		free(labels[i]);
	free(labels);
}

/* ------------------------------------------------------------ one head */

#define HEAD_LABEL_COLS 12 /* widest query label on the left */
#define HEAD_LABEL_ROWS 6  /* most rows a stacked key label takes */

static int digits(int n)
{
	int d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* Box-drawing pieces of one style. */
struct frame {
	const char *tl, *tr, *bl, *br, *h, *v;
};

static const struct frame frame_light = { "\u250c", "\u2510", "\u2514", "\u2518", "\u2500", "\u2502" };
static const struct frame frame_heavy = { "\u2554", "\u2557", "\u255a", "\u255d", "\u2550", "\u2551" };
static const struct frame frame_ascii = { "+", "+", "+", "+", "-", "|" };
static const struct frame frame_ascii_sel = { "#", "#", "#", "#", "=", "#" };

static const struct frame *frame_for(enum render_style st, bool selected)
{
	if (st == RENDER_ASCII)
		return selected ? &frame_ascii_sel : &frame_ascii;
	return selected ? &frame_heavy : &frame_light;
}

/*
 * Splits a label into rows of at most cw display columns (a code point
 * wider than cw still gets a row of its own; zero-width code points stay
 * with the one before).  Stores up to max_rows row strings in rows[] (each
 * malloc'd) and returns the number of rows; when the label needs more, the
 * last row is an ellipsis.
 */
static int stack_label(const char *s, int cw, int max_rows, bool ascii_only, char **rows)
{
	int n = 0;
	struct render_buf row;
	render_buf_init(&row);
	int used = 0, w, k;
	while ((k = next_cp(s, &w)) > 0) {
		if (used > 0 && w > 0 && used + w > cw) {
			if (n == max_rows - 1) {
				render_buf_free(&row);
				rows[n++] = xstrdup(ascii_only ? "~" : "\u2026");
				return n;
			}
			rows[n++] = xstrdup(row.data);
			render_buf_free(&row);
			used = 0;
		}
		render_buf_put(&row, s, (size_t)k);
		used += w;
		s += k;
	}
	if (row.len)
		rows[n++] = xstrdup(row.data);
	render_buf_free(&row);
	return n;
}

/* Whether any code point of s is double width. */
static bool has_wide(const char *s)
{
	int w, k;
	while ((k = next_cp(s, &w)) > 0) {
		if (w > 1)
			return true;
		s += k;
	}
	return false;
}

/* render_head's column header: the key labels stacked (f == 1), or the
 * start index of each pooled column, stacked. */
static void head_columns(struct render_buf *b, const struct render_head_spec *sp, int left,
			 int cw, int f, int n)
{
	int T = sp->T;
	bool ascii = sp->style == RENDER_ASCII;
	if (f == 1) {
		char *(*stack)[HEAD_LABEL_ROWS] = xcalloc((size_t)(T > 0 ? T : 1), sizeof *stack);
		int *nrows = xcalloc((size_t)(T > 0 ? T : 1), sizeof *nrows), hrows = 1;
		for (int j = 0; j < T; j++) {
			nrows[j] = stack_label(sp->labels[j], cw, HEAD_LABEL_ROWS, ascii, stack[j]);
			hrows = nrows[j] > hrows ? nrows[j] : hrows;
		}
		for (int r = 0; r < hrows; r++) {
			size_t start = b->len;
			render_buf_repeat(b, " ", left + 1);
			for (int j = 0; j < T; j++) {
				int k = r - (hrows - nrows[j]); /* labels end on the last header row */
				render_pad(b, k >= 0 ? stack[j][k] : "", cw, RENDER_LEFT, ascii);
			}
			buf_rtrim(b, start);
			render_buf_puts(b, "\n");
		}
		for (int j = 0; j < T; j++)
			for (int k = 0; k < nrows[j]; k++)
				free(stack[j][k]);
		free(stack);
		free(nrows);
	} else {
		int dw = digits((n - 1) * f);
		for (int r = 0; r < dw; r++) {
			size_t start = b->len;
			render_buf_repeat(b, " ", left + 1);
			for (int c = 0; c < n; c++) {
				/* digit r (from the left, dw digits) of the start index */
				int v = c * f, d = dw - 1 - r;
				while (d-- > 0)
					v /= 10;
				bool lead = r < dw - digits(c * f);
				render_buf_put(b, lead ? " " : (char[1]){ (char)('0' + v % 10) }, 1);
			}
			buf_rtrim(b, start);
			render_buf_puts(b, "\n");
		}
	}
}

void render_head(struct render_buf *b, const struct render_head_spec *sp)
{
	int T = sp->T;
	enum render_style st = sp->style;
	bool ascii = st == RENDER_ASCII;
	const struct frame *fr = frame_for(st, false);
	int iw = digits(T > 0 ? T - 1 : 0);
	int lw = 1;
	bool wide = false;
	for (int i = 0; i < T; i++) {
		int w = render_width(sp->labels[i]);
		lw = w > lw ? w : lw;
		wide |= has_wide(sp->labels[i]);
	}
	if (lw > HEAD_LABEL_COLS)
		lw = HEAD_LABEL_COLS;

	/* cell width 2, else 1, else pooled */
	int left = iw + 1 + lw + 1, cw = 2, f = 1;
	if (sp->max_width > 0 && left + 2 + 2 * T > sp->max_width) {
		cw = 1;
		if (wide || left + 2 + T > sp->max_width) {
			left = 2 * iw + 2;
			int avail = sp->max_width - left - 2;
			f = render_pool_factor(T, avail > 0 ? avail : 1);
			if (f == 1)
				f = 2;
		}
	}
	int n = (T + f - 1) / f;

	if (sp->title)
		render_buf_printf(b, "%s\n", sp->title);
	if (f > 1) {
		const char *times = ascii ? "x" : "\u00d7";
		if (sp->max_width > 0 && sp->max_width < 84) /* the short form where room is short */
			render_buf_printf(b, "pooled %d%s (max of %d%s%d)\n", f, times, f, times, f);
		else
			render_buf_printf(b, "pooled %d%s (each cell: the strongest of %d%s%d weights; axes "
					     "show token index ranges)\n", f, times, f, times, f);
	}

	head_columns(b, sp, left, cw, f, n);

	float *pooled = NULL;
	const float *m = sp->att;
	if (f > 1) {
		pooled = xmalloc((size_t)n * n * sizeof *pooled);
		render_pool(sp->att, T, T, T, f, f, sp->diverging ? RENDER_POOL_ABSMAX : RENDER_POOL_MAX,
			    pooled);
		m = pooled;
	}
	render_buf_repeat(b, " ", left);
	render_buf_puts(b, fr->tl);
	render_buf_repeat(b, fr->h, n * cw);
	render_buf_printf(b, "%s\n", fr->tr);
	for (int i = 0; i < n; i++) {
		if (f == 1) {
			render_buf_printf(b, "%*d ", iw, i);
			render_pad(b, sp->labels[i], lw, RENDER_LEFT, ascii);
			render_buf_puts(b, " ");
		} else {
			char range[40];
			int hi = (i + 1) * f - 1 < T - 1 ? (i + 1) * f - 1 : T - 1;
			if (hi > i * f)
				snprintf(range, sizeof range, "%d-%d", i * f, hi);
			else
				snprintf(range, sizeof range, "%d", hi);
			render_buf_printf(b, "%*s ", left - 1, range);
		}
		render_buf_puts(b, fr->v);
		if (sp->diverging)
			for (int j = 0; j < n; j++)
				diverging_cell(b, st, m[(size_t)i * n + j], cw);
		else
			cells_row(b, st, m + (size_t)i * n, n, cw);
		render_buf_printf(b, "%s\n", fr->v);
	}
	render_buf_repeat(b, " ", left);
	render_buf_puts(b, fr->bl);
	render_buf_repeat(b, fr->h, n * cw);
	render_buf_printf(b, "%s\n", fr->br);
	/* where the map is drawn narrow, the legend takes two short lines */
	bool narrow = sp->max_width > 0 && sp->max_width < 100;
	render_buf_printf(b, "rows: query tokens, columns: key tokens%s", narrow ? "\n" : "; ");
	if (sp->diverging)
		render_buf_printf(b, "cells: +k / -k, %s about k tenths higher / lower ('#' ten); "
				  "blank: within 0.05\n", sp->what ? sp->what : "the weight");
	else
		legend_masked(b, st, sp->what, sp->att, (size_t)sp->T * sp->T, narrow);
	free(pooled);
}

/* ------------------------------------------------------------- all heads */

/* Title of head (l, h) in the grid. */
static void grid_title(const struct render_grid_spec *sp, int l, int h, char *buf, size_t size)
{
	bool sel = l == sp->sel_layer && h == sp->sel_head;
	bool abl = sp->ablated && sp->ablated[l * sp->H + h];
	const char *badge = sp->badges ? sp->badges[l * sp->H + h] : "";
	snprintf(buf, size, "%s%d.%d%s%s%s%s", sel ? "[" : "", l, h, sel ? "]" : "",
		 abl ? (sp->style == RENDER_ASCII ? " x" : " \u2717") : "", *badge ? " " : "", badge);
}

void render_grid(struct render_buf *b, const struct render_grid_spec *sp)
{
	int L = sp->L, H = sp->H, T = sp->T;
	enum render_style st = sp->style;
	bool ascii = st == RENDER_ASCII;
	const char *times = ascii ? "x" : "\u00d7";
	int f = render_pool_factor(T, sp->cell > 0 ? sp->cell : 1);
	int n = (T + f - 1) / f;

	/* every block has the inner width of the widest of cells and titles */
	int bw = n;
	char title[64];
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			grid_title(sp, l, h, title, sizeof title);
			int w = render_width(title);
			bw = w > bw ? w : bw;
		}
	int per_band = H;
	if (sp->max_width > 0) {
		per_band = (sp->max_width + 1) / (bw + 3);
		if (per_band < 1)
			per_band = 1;
		if (per_band > H)
			per_band = H;
		/* balance the bands: 4 heads in bands of 3 become 2 + 2 */
		int bands = (H + per_band - 1) / per_band;
		per_band = (H + bands - 1) / bands;
	}

	render_buf_printf(b, "%d layer%s %s %d head%s, %d token%s", L, L == 1 ? "" : "s", times, H,
			  H == 1 ? "" : "s", T, T == 1 ? "" : "s");
	if (f > 1)
		render_buf_printf(b, ", pooled %d%s (each cell: the strongest of %d%s%d weights)\n", f,
				  times, f, times, f);
	else
		render_buf_puts(b, ", not pooled (one cell per weight)\n");

	size_t nn = (size_t)n * n;
	float *pooled = xmalloc((size_t)per_band * nn * sizeof *pooled);
	for (int l = 0; l < L; l++)
		for (int h0 = 0; h0 < H; h0 += per_band) {
			int h1 = h0 + per_band < H ? h0 + per_band : H;
			for (int h = h0; h < h1; h++)
				render_pool(sp->att[l * H + h], T, T, T, f, f, RENDER_POOL_MAX,
					    pooled + (size_t)(h - h0) * nn);
			/* top borders with titles */
			for (int h = h0; h < h1; h++) {
				const struct frame *fr = frame_for(st, l == sp->sel_layer && h == sp->sel_head);
				grid_title(sp, l, h, title, sizeof title);
				render_buf_puts(b, h > h0 ? " " : "");
				render_buf_puts(b, fr->tl);
				render_buf_puts(b, title);
				render_buf_repeat(b, fr->h, bw - render_width(title));
				render_buf_puts(b, fr->tr);
			}
			render_buf_puts(b, "\n");
			for (int i = 0; i < n; i++) {
				for (int h = h0; h < h1; h++) {
					const struct frame *fr = frame_for(st, l == sp->sel_layer && h == sp->sel_head);
					const float *p = pooled + (size_t)(h - h0) * nn + (size_t)i * n;
					render_buf_puts(b, h > h0 ? " " : "");
					render_buf_puts(b, fr->v);
					cells_row(b, st, p, n, 1);
					render_buf_repeat(b, " ", bw - n);
					render_buf_puts(b, fr->v);
				}
				render_buf_puts(b, "\n");
			}
			for (int h = h0; h < h1; h++) {
				const struct frame *fr = frame_for(st, l == sp->sel_layer && h == sp->sel_head);
				render_buf_puts(b, h > h0 ? " " : "");
				render_buf_puts(b, fr->bl);
				render_buf_repeat(b, fr->h, bw);
				render_buf_puts(b, fr->br);
			}
			render_buf_puts(b, "\n");
		}
	free(pooled);
	render_buf_printf(b, "heads are LAYER.HEAD; [L.H] selected, %s ablated; rows: query, columns: key\n",
			  ascii ? "x" : "\u2717");
	bool masked = false;
	for (int k = 0; k < sp->L * sp->H && !masked; k++)
		for (size_t i = 0; i < (size_t)sp->T * sp->T && !masked; i++)
			masked = isnan(sp->att[k][i]);
	legend_masked(b, st, sp->what, masked ? (const float[]){ NAN } : NULL, 1, false);
}
