/*
 * tui-draw.c — what every view of the visualizer uses (ncursesw): text
 * clipped to the screen, heat cells and half blocks, bars, token labels
 * cut to a width, and moving the selection.  The views themselves are
 * the files tui-view.h lists.
 *
 * Heat: 256 colours use the render ramp (render_color256) over 10 levels,
 * 8 colours a blue-cyan-green-yellow-white ramp over 5; level 0 (weights
 * below RENDER_ZERO) is the terminal's own background.  In the grid, half
 * blocks ('▀' with the upper row as foreground and the lower row as
 * background) show two query rows per text row.  Elsewhere, and in the
 * grid without colour (one query row per text row), the shading glyphs of
 * render.h (' ░▒▓█', or ASCII) show the weight, in the ramp's colour when
 * there is colour, so that it reads anywhere and survives copying.
 *
 * A masked cell (a NAN value: a key the mask hides from the query) is
 * never a level of the ramp: it is the masked glyph of render.h ('·', or
 * '/'), on a grey background with 256 colours; a half block whose two
 * halves are masked is that glyph too, and a masked half beside a shaded
 * one is grey with 256 colours (blank with fewer).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "analysis.h"
#include "render.h"
#include "tokenizer.h"

/* ------------------------------------------------------------ drawing */

#define HEAT_PAIR0 16 /* heat pairs: HEAT_PAIR0 + fg * stride + bg */
#define MASKED_GREY 238 /* xterm-256 grey of masked cells */

static bool g_utf8 = true;
static int g_colors;     /* 0, 8 or 256 */
static int g_levels = 5; /* heat levels including blank */
static int g_masked;     /* the colour index of a masked cell: g_levels (grey) with 256 colours, else 0 */
static int g_stride = 5; /* colour indexes: the levels, and the masked one with 256 colours */
static bool g_default_bg;

static const short ramp8[] = { COLOR_BLUE, COLOR_CYAN, COLOR_GREEN, COLOR_YELLOW, COLOR_WHITE };

/* Terminal colour of heat level k (level 0: the default background; g_masked
 * with 256 colours: grey). */
static short level_color(int k)
{
	if (k <= 0)
		return g_default_bg ? -1 : COLOR_BLACK;
	if (g_colors >= 256)
		return k >= g_levels ? MASKED_GREY : (short)render_color256((double)k / (g_levels - 1));
	return ramp8[k - 1 < 5 ? k - 1 : 4];
}

static short heat_pair(int fg, int bg)
{
	return (short)(HEAT_PAIR0 + fg * g_stride + bg);
}

/* The colour index of value v: its heat level, or g_masked for NAN. */
static int color_index(double v)
{
	return isnan(v) ? g_masked : tui_level(v, g_levels);
}

void tui_colors_init(struct tui_state *t)
{
	g_utf8 = t->utf8;
	g_colors = t->colors;
	g_levels = t->colors >= 256 ? 11 : t->colors >= 8 ? 6 : render_levels(t->utf8 ? RENDER_UNICODE : RENDER_ASCII);
	t->levels = g_levels;
	g_masked = g_colors >= 256 ? g_levels : 0;
	g_stride = g_colors >= 256 ? g_levels + 1 : g_levels;
	if (!g_colors)
		return;
	g_default_bg = use_default_colors() == OK;
	short bg = g_default_bg ? -1 : COLOR_BLACK;
	init_pair(TUI_ROLE_STATUS, COLOR_WHITE, COLOR_BLUE);
	init_pair(TUI_ROLE_SELECT, COLOR_BLACK, COLOR_YELLOW);
	init_pair(TUI_ROLE_ABLATED, COLOR_RED, bg);
	init_pair(TUI_ROLE_ERROR, COLOR_RED, bg);
	init_pair(TUI_ROLE_HINT, COLOR_CYAN, bg);
	init_pair(TUI_ROLE_GROUP, COLOR_MAGENTA, bg);
	init_pair(TUI_ROLE_LABEL, COLOR_YELLOW, bg);
	init_pair(TUI_ROLE_UP, COLOR_RED, bg);
	init_pair(TUI_ROLE_DOWN, COLOR_BLUE, bg);
	for (int f = 0; f < g_stride; f++)
		for (int b = 0; b < g_stride; b++)
			init_pair(heat_pair(f, b), f ? level_color(f) : (g_default_bg ? -1 : COLOR_WHITE),
				  level_color(b));
}

/* Curses attributes and pair for TUI_A_* bits and a role.  Without colour
 * the roles that need to stand out get an attribute instead. */
static attr_t attrs_of(unsigned a, enum tui_role role, short *pair)
{
	attr_t r = A_NORMAL;
	if (a & TUI_A_BOLD)
		r |= A_BOLD;
	if (a & TUI_A_REVERSE)
		r |= A_REVERSE;
	if (a & TUI_A_DIM)
		r |= A_DIM;
	if (a & TUI_A_UNDERLINE)
		r |= A_UNDERLINE;
	*pair = 0;
	if (g_colors) {
		*pair = (short)role;
	} else {
		switch (role) {
		case TUI_ROLE_STATUS:
		case TUI_ROLE_SELECT:
			r |= A_REVERSE;
			break;
		case TUI_ROLE_ABLATED:
		case TUI_ROLE_ERROR:
		case TUI_ROLE_LABEL:
			r |= A_BOLD;
			break;
		default:
			break;
		}
	}
	return r;
}

/* Puts one code point of display width w at (y, x). */
static void put_cp(int y, int x, uint32_t cp, int w, attr_t at, short pair)
{
	wchar_t ws[2] = { (wchar_t)cp, 0 };
	if (cp < 0x20 || cp == 0x7f || (!g_utf8 && cp >= 0x80)) {
		ws[0] = L'?';
		w = w < 1 ? 1 : w;
		for (int i = 0; i < w; i++) {
			cchar_t c;
			setcchar(&c, ws, at, pair, NULL);
			mvadd_wch(y, x + i, &c);
		}
		return;
	}
	cchar_t c;
	setcchar(&c, ws, at, pair, NULL);
	mvadd_wch(y, x, &c);
}

/* The first code point of a UTF-8 glyph. */
static wchar_t glyph_wc(const char *g)
{
	uint32_t cp;
	int bad;
	utf8_decode((const unsigned char *)g, strlen(g), &cp, &bad);
	return (wchar_t)cp;
}

int tui_put(int y, int x, int maxw, const char *s, unsigned attr, enum tui_role role)
{
	if (y < 0 || y >= LINES || x < 0 || !s)
		return 0;
	int limit = x + maxw < COLS ? x + maxw : COLS;
	short pair;
	attr_t at = attrs_of(attr, role, &pair);
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	int col = x;
	while (len > 0) {
		uint32_t cp;
		int bad;
		int k = utf8_decode(p, len, &cp, &bad);
		p += k;
		len -= (size_t)k;
		int w = bad ? 1 : render_cp_width(cp);
		if (w == 0)
			continue; /* combining marks: dropped rather than misplaced */
		if (col + w > limit)
			break;
		put_cp(y, col, cp, w, at, pair);
		col += w;
	}
	return col - x;
}

int tui_printf(int y, int x, int maxw, unsigned attr, enum tui_role role, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return tui_put(y, x, maxw, buf, attr, role);
}

void tui_blank(int y, int x, int w, unsigned attr, enum tui_role role)
{
	if (y < 0 || y >= LINES)
		return;
	short pair;
	attr_t at = attrs_of(attr, role, &pair);
	cchar_t c;
	setcchar(&c, L" ", at, pair, NULL);
	for (int i = x; i < x + w && i < COLS; i++)
		if (i >= 0)
			mvadd_wch(y, i, &c);
}

void tui_heat(const struct tui_state *t, int y, int x, int w, double v, unsigned attr)
{
	(void)t;
	if (y < 0 || y >= LINES)
		return;
	short pair;
	attr_t at = attrs_of(attr, TUI_ROLE_NONE, &pair);
	/* the shading glyph, and with colour also the ramp's colour, so that
	 * the weight reads in every terminal and survives copying the text */
	wchar_t ws[2] = { glyph_wc(render_shade(g_utf8 ? RENDER_UNICODE : RENDER_ASCII, v)), 0 };
	cchar_t c;
	short pr = 0;
	if (g_colors)
		pr = isnan(v) ? heat_pair(0, g_masked) : heat_pair(tui_level(v, g_levels), 0);
	setcchar(&c, ws, at, pr, NULL);
	for (int i = x; i < x + w && i < COLS; i++)
		if (i >= 0)
			mvadd_wch(y, i, &c);
}

int tui_heat_scale(const struct tui_state *t, int y, int x, int w)
{
	int n = t->levels > 1 ? t->levels : 2;
	if (w < n + 4)
		return 0;
	tui_put(y, x, 2, "0 ", TUI_A_DIM, TUI_ROLE_NONE);
	for (int k = 0; k < n; k++) /* the middle of level k */
		tui_heat(t, y, x + 2 + k, 1, k ? (k - 0.5) / (n - 1) : 0.0, 0);
	tui_put(y, x + 2 + n, 2, " 1", TUI_A_DIM, TUI_ROLE_NONE);
	return n + 4;
}

void tui_change(int y, int x, int w, double d, unsigned attr)
{
	double a = fabs(d);
	if (isnan(d) || a < 0.05) {
		tui_blank(y, x, w, attr, TUI_ROLE_NONE);
		return;
	}
	int tenths = (int)(a * 10 + 0.5);
	char cell[3] = { d > 0 ? '+' : '-', tenths >= 10 ? '#' : (char)('0' + tenths), 0 };
	if (w < 2)
		cell[1] = 0;
	tui_put(y, x, w, cell, attr | (a >= 0.5 ? TUI_A_BOLD : 0), d > 0 ? TUI_ROLE_UP : TUI_ROLE_DOWN);
}

void tui_heat_glyph(int y, int x, const char *glyph, double v, bool bold)
{
	if (y < 0 || y >= LINES || x < 0 || x >= COLS)
		return;
	if (!g_colors) {
		tui_put(y, x, 1, glyph, 0, TUI_ROLE_NONE);
		return;
	}
	wchar_t ws[2] = { glyph_wc(glyph), 0 };
	cchar_t cc;
	setcchar(&cc, ws, bold ? A_BOLD : A_NORMAL, heat_pair(tui_level(v, g_levels), 0), NULL);
	mvadd_wch(y, x, &cc);
}

void tui_half_block(int y, int x, double top, double bottom)
{
	if (y < 0 || y >= LINES || x < 0 || x >= COLS)
		return;
	cchar_t c;
	if (isnan(top) && isnan(bottom)) { /* both masked: the masked glyph */
		wchar_t ws[2] = { glyph_wc(render_shade(g_utf8 ? RENDER_UNICODE : RENDER_ASCII, NAN)), 0 };
		setcchar(&c, ws, A_NORMAL, heat_pair(0, g_masked), NULL);
		mvadd_wch(y, x, &c);
		return;
	}
	struct tui_half hc;
	tui_half_cell(color_index(top), color_index(bottom), &hc);
	static const wchar_t glyphs[4] = { L' ', L'\u2580', L'\u2584', L'\u2588' };
	wchar_t ws[2] = { glyphs[hc.glyph], 0 };
	setcchar(&c, ws, A_NORMAL, heat_pair(hc.fg, hc.bg), NULL);
	mvadd_wch(y, x, &c);
}

/* ------------------------------------------------------------ helpers */

bool tui_utf8(void) { return g_utf8; }
const char *tui_mark_ablated(void) { return g_utf8 ? "\u2717" : "x"; }
const char *tui_times_sign(void) { return g_utf8 ? "\u00d7" : "x"; }

bool tui_need_run(const struct session *s, const struct tui_rect *r)
{
	char where[96];
	if (session_ready(s) && session_nonfinite_text(s, where, sizeof where)) {
		/* NaN weights would draw as masked or arbitrary cells: say where
		 * the NaN started instead */
		int y = r->y + r->h / 2 - 1;
		tui_printf(y, r->x + 2, r->w - 2, TUI_A_BOLD, TUI_ROLE_ERROR,
			   "The run has a NaN: first NaN %s.", where);
		tui_put(y + 1, r->x + 2, r->w - 2,
			"What depends on it is NaN too, so no heatmap is drawn.", 0, TUI_ROLE_NONE);
		tui_put(y + 2, r->x + 2, r->w - 2,
			"Tab to the numbers view for the rest; r (reset) runs the model again.", TUI_A_DIM,
			TUI_ROLE_NONE);
		return false;
	}
	if (session_ready(s))
		return true;
	const char *msg = !s->model ? "No model loaded.  Press : and type  load NAME  (e.g. load shakespeare)."
				    : "No text yet.  Press e and type some text, then Enter.";
	tui_put(r->y + r->h / 2, r->x + 2, r->w - 2, msg, TUI_A_BOLD, TUI_ROLE_NONE);
	return false;
}

char **tui_token_labels(const struct session *s, int *widest, bool *wide)
{
	char **lab = session_labels(s);
	int w = 1;
	bool wd = false;
	for (int i = 0; i < s->n_tokens; i++) {
		int k = render_width(lab[i]);
		w = k > w ? k : w;
		const unsigned char *p = (const unsigned char *)lab[i];
		size_t len = strlen(lab[i]);
		while (len > 0) {
			uint32_t cp;
			int bad;
			int n = utf8_decode(p, len, &cp, &bad);
			wd |= !bad && render_cp_width(cp) > 1;
			p += n;
			len -= (size_t)n;
		}
	}
	if (widest)
		*widest = w;
	if (wide)
		*wide = wd;
	return lab;
}

int tui_top_keys(const float *row, int n, int k, int *best)
{
	int m = 0;
	for (int j = 0; j < n; j++) {
		if (isnan(row[j])) /* masked: not a key the query sees */
			continue;
		if (m == k && row[j] <= row[best[m - 1]])
			continue;
		int i = m < k ? m++ : m - 1;
		while (i > 0 && row[best[i - 1]] < row[j]) {
			best[i] = best[i - 1];
			i--;
		}
		best[i] = j;
	}
	return m;
}

void tui_put_bar(int y, int x, int w, double v, enum tui_role role)
{
	if (!(v > 0))
		return;
	int eighths = (int)lround(v * w * 8);
	char buf[128] = "";
	size_t n = 0;
	static const char *const part[] = { "", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589" };
	for (int i = 0; i < eighths / 8 && n + 4 < sizeof buf; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", g_utf8 ? "\u2588" : "#");
	if (eighths % 8 && g_utf8 && n + 4 < sizeof buf)
		snprintf(buf + n, sizeof buf - n, "%s", part[eighths % 8]);
	tui_put(y, x, w, buf, 0, role);
}

void tui_short_label(const char *label, int w, char *buf, size_t size)
{
	struct render_buf b;
	render_buf_init(&b);
	if (render_width(label) <= w)
		render_buf_puts(&b, label);
	else
		render_pad(&b, label, w, RENDER_LEFT, !g_utf8);
	snprintf(buf, size, "%s", b.data ? b.data : "");
	render_buf_free(&b);
	/* drop trailing pad blanks */
	size_t k = strlen(buf);
	while (k > 0 && buf[k - 1] == ' ')
		buf[--k] = '\0';
}

const struct row_sums *tui_row_sums(struct tui_state *t)
{
	if (t->row_sums_gen != t->s->run_gen + 1) {
		attention_row_sums(t->s->run, &t->row_sums);
		t->row_sums_gen = t->s->run_gen + 1;
	}
	return &t->row_sums;
}

bool tui_rows_short(const struct tui_state *t)
{
	return t->s->run && t->s->run->opt.mask == MASK_AFTER_SOFTMAX;
}

double tui_key_ms_median(const struct tui_state *t)
{
	int n = t->n_key_ms < TUI_KEY_MS_KEEP ? t->n_key_ms : TUI_KEY_MS_KEEP;
	if (n == 0)
		return 0.0;
	double v[TUI_KEY_MS_KEEP];
	memcpy(v, t->key_ms, (size_t)n * sizeof *v);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tui_last_key_ms(const struct tui_state *t)
{
	int n = t->n_key_ms < TUI_KEY_MS_KEEP ? t->n_key_ms : TUI_KEY_MS_KEEP;
	return n ? t->key_ms[n - 1] : NAN;
}

/* ---------------------------------------------------------- selection */

static int clamp_sel(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void tui_select_head(struct tui_state *t, int l, int h)
{
	struct session *s = t->s;
	if (!s->model)
		return;
	const struct model_config *c = &s->model->cfg;
	s->sel_layer = clamp_sel(l, 0, c->n_layer - 1);
	s->sel_head = clamp_sel(h, 0, c->n_head - 1);
	s->dirty |= DIRTY_SELECT;
}

void tui_step_head(struct tui_state *t, int d)
{
	struct session *s = t->s;
	if (!s->model)
		return;
	int L = s->model->cfg.n_layer, H = s->model->cfg.n_head, n = L * H;
	int i = ((s->sel_layer * H + s->sel_head + d) % n + n) % n;
	tui_select_head(t, i / H, i % H);
}

void tui_select_token(struct tui_state *t, int q)
{
	struct session *s = t->s;
	if (s->n_tokens <= 0)
		return;
	s->sel_token = clamp_sel(q, 0, s->n_tokens - 1);
	s->dirty |= DIRTY_SELECT;
}

bool tui_side_always(struct tui_state *t, void *data)
{
	(void)t;
	(void)data;
	return true;
}
