/*
 * tui-views.c — drawing the visualizer's views with ncursesw: the grid of
 * every head, one head with token labels, one token across heads, the
 * numbers, and the side panel.  Where things go comes from tui-layout.c;
 * what is drawn comes from the session's current run and the analysis
 * functions.  Nothing here changes the session except the scroll
 * positions kept in struct tui_state.
 *
 * Heat: 256 colours use the render ramp (render_color256) over 10 levels,
 * 8 colours a blue-cyan-green-yellow-white ramp over 5; level 0 (weights
 * below RENDER_ZERO) is the terminal's own background.  In the grid, half
 * blocks ('▀' with the upper row as foreground and the lower row as
 * background) show two query rows per text row.  Elsewhere, and in the
 * grid without colour (one query row per text row), the shading glyphs of
 * render.h (' ░▒▓█', or ASCII) show the weight, in the ramp's colour when
 * there is colour, so that it reads anywhere and survives copying.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui.h"

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

#define HEAT_PAIR0 16 /* heat pairs: HEAT_PAIR0 + fg * levels + bg */

static bool g_utf8 = true;
static int g_colors;     /* 0, 8 or 256 */
static int g_levels = 5; /* heat levels including blank */
static bool g_default_bg;

static const short ramp8[] = { COLOR_BLUE, COLOR_CYAN, COLOR_GREEN, COLOR_YELLOW, COLOR_WHITE };

/* Terminal colour of heat level k (level 0: the default background). */
static short level_color(int k)
{
	if (k <= 0)
		return g_default_bg ? -1 : COLOR_BLACK;
	if (g_colors >= 256)
		return (short)render_color256((double)k / (g_levels - 1));
	return ramp8[k - 1 < 5 ? k - 1 : 4];
}

static short heat_pair(int fg, int bg)
{
	return (short)(HEAT_PAIR0 + fg * g_levels + bg);
}

void tui_colors_init(struct tui_state *t)
{
	g_utf8 = t->utf8;
	g_colors = t->colors;
	g_levels = t->colors >= 256 ? 11 : t->colors >= 8 ? 6 : render_levels(t->utf8 ? RENDER_UNICODE : RENDER_ASCII);
	t->levels = g_levels;
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
	for (int f = 0; f < g_levels; f++)
		for (int b = 0; b < g_levels; b++)
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
	const char *g = render_shade(g_utf8 ? RENDER_UNICODE : RENDER_ASCII, v);
	uint32_t cp;
	int bad;
	utf8_decode((const unsigned char *)g, strlen(g), &cp, &bad);
	wchar_t ws[2] = { (wchar_t)cp, 0 };
	cchar_t c;
	setcchar(&c, ws, at, g_colors ? heat_pair(tui_level(v, g_levels), 0) : 0, NULL);
	for (int i = x; i < x + w && i < COLS; i++)
		if (i >= 0)
			mvadd_wch(y, i, &c);
}

/* One half-block character for weights top and bottom (NAN: nothing). */
static void half_cell(int y, int x, double top, double bottom)
{
	if (y < 0 || y >= LINES || x < 0 || x >= COLS)
		return;
	struct tui_half hc;
	tui_half_cell(isnan(top) ? 0 : tui_level(top, g_levels),
		      isnan(bottom) ? 0 : tui_level(bottom, g_levels), &hc);
	static const wchar_t glyphs[4] = { L' ', L'\u2580', L'\u2584', L'\u2588' };
	wchar_t ws[2] = { glyphs[hc.glyph], 0 };
	cchar_t c;
	setcchar(&c, ws, A_NORMAL, heat_pair(hc.fg, hc.bg), NULL);
	mvadd_wch(y, x, &c);
}

/* ------------------------------------------------------------ helpers */

static const char *mark_ablated(void) { return g_utf8 ? "\u2717" : "x"; }
static const char *times_sign(void) { return g_utf8 ? "\u00d7" : "x"; }

/* Draws the "no model / no text" note in r; true when the view can draw. */
static bool need_run(const struct session *s, const struct tui_rect *r)
{
	if (session_ready(s))
		return true;
	const char *msg = !s->model ? "No model loaded.  Press : and type  load NAME  (e.g. load shakespeare)."
				    : "No text yet.  Press e and type some text, then Enter.";
	tui_put(r->y + r->h / 2, r->x + 2, r->w - 2, msg, TUI_A_BOLD, TUI_ROLE_NONE);
	return false;
}

/* Labels of the session's tokens; their widest width and whether any is
 * double width. */
static char **token_labels(const struct session *s, int *widest, bool *wide)
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

/* The k strongest keys of a row of n weights, strongest first (earlier
 * keys win ties).  Returns how many. */
static int top_keys(const float *row, int n, int k, int *best)
{
	int m = 0;
	for (int j = 0; j < n; j++) {
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

/* A bar of `w` columns for v in [0, 1] in eighths ('▏'..'█'), ASCII '#'. */
static void put_bar(int y, int x, int w, double v, enum tui_role role)
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

/* Short label for a token: cut to `w` columns with '…'. */
static void short_label(const char *label, int w, char *buf, size_t size)
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

static double last_key_ms(const struct tui_state *t)
{
	int n = t->n_key_ms < TUI_KEY_MS_KEEP ? t->n_key_ms : TUI_KEY_MS_KEEP;
	return n ? t->key_ms[n - 1] : NAN;
}

/* ---------------------------------------------------------------- grid */

void tui_draw_grid(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!need_run(s, r))
		return;
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, T = s->n_tokens, G = s->opt.kv_heads;
	struct tui_grid_layout *g = &t->grid;
	tui_grid_layout(r, L, H, T, t->vsub, g);
	g->layer0 = t->grid_layer0;
	g->head0 = t->grid_head0;
	tui_grid_follow(g, s->sel_layer, s->sel_head);
	t->grid_layer0 = g->layer0;
	t->grid_head0 = g->head0;

	/* the line stating the size and the pooling */
	if (g->header) {
		char line[512];
		size_t n = (size_t)snprintf(line, sizeof line, "%d%s%d heads, %d token%s, ", L, times_sign(), H,
					    T, T == 1 ? "" : "s");
		if (g->pool > 1)
			n += (size_t)snprintf(line + n, sizeof line - n, "pooled %d%s (max of %d%s%d)", g->pool,
					      times_sign(), g->pool, times_sign(), g->pool);
		else
			n += (size_t)snprintf(line + n, sizeof line - n, "not pooled");
		if (t->vsub == 2 && n < sizeof line)
			n += (size_t)snprintf(line + n, sizeof line - n, ", %s = 2 query rows",
					      g_utf8 ? "\u2580\u2584" : "half blocks");
		if (G < H && n < sizeof line)
			n += (size_t)snprintf(line + n, sizeof line - n, ", %s = shared KV head",
					      g_utf8 ? "\u2500\u2500" : "--");
		if ((g->layers_vis < L || g->heads_vis < H) && n < sizeof line)
			snprintf(line + n, sizeof line - n, "; showing layers %d-%d, heads %d-%d",
				 g->layer0, g->layer0 + g->layers_vis - 1, g->head0,
				 g->head0 + g->heads_vis - 1);
		tui_put(r->y, r->x, r->w, line, 0, TUI_ROLE_LABEL);
	}

	int n = g->n;
	float *pooled = xmalloc((size_t)n * n * sizeof *pooled);
	const char *rule = g_utf8 ? "\u2500" : "-";
	struct err se;
	const struct head_scores *sc = session_head_scores(s, &se); /* badges; NULL: none */
	for (int l = g->layer0; l < g->layer0 + g->layers_vis && l < L; l++)
		for (int h = g->head0; h < g->head0 + g->heads_vis && h < H; h++) {
			int y, x;
			if (!tui_grid_cell(g, l, h, &y, &x))
				continue;
			bool sel = l == s->sel_layer && h == s->sel_head;
			bool abl = session_head_ablated(s, l, h);
			bool joined = tui_grid_joined(H, G, h) && h + 1 < g->head0 + g->heads_vis;
			enum tui_role rrole = G < H ? TUI_ROLE_GROUP : TUI_ROLE_NONE;
			/* title over the rule */
			for (int i = 0; i < g->cell_w + (joined ? TUI_GRID_GAP : 0); i++)
				tui_put(y, x + i, 1, rule, 0, rrole);
			char title[32];
			snprintf(title, sizeof title, sel ? "[%d.%d]" : "%d.%d", l, h);
			int tw = tui_put(y, x, g->cell_w, title, sel ? TUI_A_BOLD | TUI_A_REVERSE : TUI_A_BOLD,
					 sel ? TUI_ROLE_SELECT : TUI_ROLE_NONE);
			if (abl)
				tw += tui_put(y, x + tw, 1, mark_ablated(), TUI_A_BOLD, TUI_ROLE_ABLATED);
			if (sc && sc[l * H + h].role != HEAD_BROAD) {
				char badge[16];
				heads_badge_text(&sc[l * H + h], badge, sizeof badge);
				/* cut to the cell ("delim" -> "del" in an 8-column cell) */
				if (g->cell_w - tw - 1 >= 3) {
					tui_put(y, x + tw, 1, " ", 0, TUI_ROLE_NONE);
					tui_put(y, x + tw + 1, g->cell_w - tw - 1, badge, 0, TUI_ROLE_LABEL);
				}
			}
			/* the heatmap */
			render_pool(run_att(s->run, l, 0, h), T, T, T, g->pool, g->pool, RENDER_POOL_MAX,
				    pooled);
			for (int row = 0; row < g->map_rows; row++) {
				int yy = y + 1 + row;
				for (int px = 0; px < g->side; px++) {
					int cj = tui_grid_pixel(g, px);
					if (t->vsub == 2) {
						int p0 = 2 * row, p1 = 2 * row + 1;
						double top = p0 < g->side ? pooled[(size_t)tui_grid_pixel(g, p0) * n + cj] : NAN;
						double bot = p1 < g->side ? pooled[(size_t)tui_grid_pixel(g, p1) * n + cj] : NAN;
						half_cell(yy, x + px, top, bot);
					} else {
						tui_heat(t, yy, x + px, 1, pooled[(size_t)tui_grid_pixel(g, row) * n + cj], 0);
					}
				}
			}
		}
	free(pooled);
}

/* ------------------------------------------------------------ head view */

void tui_draw_head(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!need_run(s, r))
		return;
	int T = s->n_tokens, l = s->sel_layer, hd = s->sel_head;
	int lw;
	bool wide;
	char **lab = token_labels(s, &lw, &wide);
	if (t->head_key >= T)
		t->head_key = T - 1;
	if (t->head_key < 0)
		t->head_key = 0;
	int q = s->sel_token, k = t->head_key;
	struct tui_head_layout *h = &t->head;
	tui_head_layout(r, T, lw, wide, q, k, t->head_row0, t->head_col0, h);
	t->head_row0 = h->row0;
	t->head_col0 = h->col0;
	const float *att = run_att(s->run, l, 0, hd);
	char a[64], b[64];

	/* title */
	short_label(lab[q], 12, a, sizeof a);
	short_label(lab[k], 12, b, sizeof b);
	int x = r->x;
	x += tui_printf(r->y, x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL, "head %d.%d", l, hd);
	if (session_head_ablated(s, l, hd))
		x += tui_printf(r->y, x, r->x + r->w - x, TUI_A_BOLD, TUI_ROLE_ABLATED, " %s ablated",
				mark_ablated());
	tui_printf(r->y, x, r->x + r->w - x, 0, TUI_ROLE_NONE,
		   "  %d tokens%s  query %d '%s' %s key %d '%s': %.3f", T,
		   h->rows_vis < T || h->cols_vis < T ? " (scrolls)" : "", q, a, g_utf8 ? "\u2192" : "->",
		   k, b, (double)att[(size_t)q * T + k]);

	/* ruler: key indexes every 5 (cw 2) or 10 columns */
	int step = h->cw == 2 ? 5 : 10;
	for (int j = h->col0; j < h->col0 + h->cols_vis; j++)
		if (j % step == 0) {
			int xx = h->ruler.x + (j - h->col0) * h->cw;
			tui_printf(h->ruler.y, xx, h->ruler.x + h->ruler.w - xx, TUI_A_DIM, TUI_ROLE_NONE, "%d", j);
		}
	/* key labels */
	for (int j = h->col0; j < h->col0 + h->cols_vis; j++) {
		int xx = h->keys.x + (j - h->col0) * h->cw;
		bool cur = j == k;
		if (cur)
			tui_blank(h->keys.y, xx, h->cw, TUI_A_REVERSE, TUI_ROLE_SELECT);
		tui_put(h->keys.y, xx, h->cw, lab[j], cur ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_BOLD,
			cur ? TUI_ROLE_SELECT : TUI_ROLE_LABEL);
	}
	/* rows */
	for (int i = h->row0; i < h->row0 + h->rows_vis; i++) {
		int y = h->matrix.y + (i - h->row0);
		bool cur = i == q;
		unsigned at = cur ? TUI_A_REVERSE | TUI_A_BOLD : 0;
		enum tui_role role = cur ? TUI_ROLE_SELECT : TUI_ROLE_NONE;
		tui_printf(y, r->x, h->idx_w, at, role, "%*d", h->idx_w, i);
		tui_blank(y, r->x + h->idx_w, 1, 0, TUI_ROLE_NONE);
		int xx = r->x + h->idx_w + 1;
		if (cur)
			tui_blank(y, xx, h->label_w, at, role);
		char cut[96];
		short_label(lab[i], h->label_w, cut, sizeof cut);
		tui_put(y, xx, h->label_w, cut, at | (cur ? 0 : TUI_A_BOLD), cur ? role : TUI_ROLE_LABEL);
		const float *row = att + (size_t)i * T;
		for (int j = h->col0; j < h->col0 + h->cols_vis; j++)
			tui_heat(t, y, h->matrix.x + (j - h->col0) * h->cw, h->cw, row[j],
				 cur && j == k ? TUI_A_REVERSE : 0);
	}

	/* panel: the cursor row's strongest keys */
	if (h->panel.w > 0) {
		const struct tui_rect *p = &h->panel;
		int y = p->y, best[TUI_HEAD_TOPK];
		const float *row = att + (size_t)q * T;
		int m = top_keys(row, T, TUI_HEAD_TOPK, best);
		double ent = 0;
		for (int j = 0; j < T; j++)
			if (row[j] > 0)
				ent -= row[j] * log(row[j]);
		bool side = p->h > TUI_PANEL_ROWS;
		tui_printf(y++, p->x, p->w, TUI_A_BOLD, TUI_ROLE_LABEL, "query %d '%s'", q, a);
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, "its keys (entropy %.2f):", ent);
		for (int i = 0; i < m && y < p->y + p->h; i++) {
			char kl[64];
			short_label(lab[best[i]], 6, kl, sizeof kl);
			int xx = p->x + tui_printf(y, p->x, p->w, 0, TUI_ROLE_NONE, "%4d ", best[i]);
			xx += tui_put(y, xx, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
			xx = p->x + 12;
			xx += tui_printf(y, xx, p->x + p->w - xx, 0, TUI_ROLE_NONE, "%.3f ", (double)row[best[i]]);
			put_bar(y, xx, p->x + p->w - xx, row[best[i]], TUI_ROLE_NONE);
			y++;
		}
		if (side && y + 2 < p->y + p->h) {
			double he, hm;
			head_entropy(s->run, l, hd, &he, &hm);
			y++;
			tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, "head entropy %.3f nats", he);
			tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, "max weight   %.3f", hm);
			if (y + 1 < p->y + p->h) {
				y++;
				tui_put(y++, p->x, p->w, "rows: query, columns: key", TUI_A_DIM, TUI_ROLE_NONE);
				/* the scale: weights 0, 0.1, ..., 1 */
				tui_put(y, p->x, p->w, "0 ", TUI_A_DIM, TUI_ROLE_NONE);
				for (int i = 0; i <= 10 && 2 + i * 2 < p->w - 2; i++)
					tui_heat(t, y, p->x + 2 + i * 2, 2, i / 10.0, 0);
				tui_put(y, p->x + 24, p->w - 24, " 1", TUI_A_DIM, TUI_ROLE_NONE);
			}
		}
	}
	render_labels_free(lab, T);
}

/* ----------------------------------------------------------- token view */

void tui_draw_token(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!need_run(s, r))
		return;
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, T = s->n_tokens, q = s->sel_token;
	int lw;
	bool wide;
	char **lab = token_labels(s, &lw, &wide);
	int n_layers = t->token_all ? L : 1;
	int first_layer = t->token_all ? 0 : s->sel_layer;
	int sel_row = t->token_all ? s->sel_layer * H + s->sel_head : s->sel_head;
	struct tui_token_layout *tk = &t->token;
	int label_w = tui_grid_title_width(L, H) - 2;
	tui_token_layout(r, n_layers, H, T, label_w, wide, q, sel_row, t->token_row0, t->token_key0, tk);
	t->token_row0 = tk->row0;
	t->token_key0 = tk->key0;

	char a[64];
	short_label(lab[q], 12, a, sizeof a);
	if (t->token_all)
		tui_printf(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   "token %d '%s' %s keys, in every head of every layer (z: one layer)", q, a,
			   g_utf8 ? "\u2192" : "->");
	else
		tui_printf(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   "token %d '%s' %s keys, in every head of layer %d (z: all layers)", q, a,
			   g_utf8 ? "\u2192" : "->", first_layer);
	int step = tk->cw == 2 ? 5 : 10;
	for (int j = tk->key0; j < tk->key0 + tk->keys_vis; j++) {
		int xx = tk->keys.x + (j - tk->key0) * tk->cw;
		if (j % step == 0)
			tui_printf(tk->ruler.y, xx, tk->ruler.x + tk->ruler.w - xx, TUI_A_DIM, TUI_ROLE_NONE, "%d", j);
		bool cur = j == q;
		if (cur)
			tui_blank(tk->keys.y, xx, tk->cw, TUI_A_REVERSE, TUI_ROLE_SELECT);
		tui_put(tk->keys.y, xx, tk->cw, lab[j], cur ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_BOLD,
			cur ? TUI_ROLE_SELECT : TUI_ROLE_LABEL);
	}
	static const char *const bars_u[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char *const bars_a[] = { " ", ".", ".", ":", ":", "|", "|", "#", "#" };
	for (int i = 0; i < tk->n_rows; i++) {
		int y = tui_token_row_y(tk, i);
		if (y < 0)
			continue;
		int l = first_layer + i / H, h = i % H;
		bool sel = l == s->sel_layer && h == s->sel_head;
		char id[32];
		snprintf(id, sizeof id, "%d.%d", l, h);
		int xx = r->x + tui_put(y, r->x, tk->left_w, id, sel ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_BOLD,
					sel ? TUI_ROLE_SELECT : TUI_ROLE_NONE);
		if (session_head_ablated(s, l, h))
			tui_put(y, xx, 1, mark_ablated(), TUI_A_BOLD, TUI_ROLE_ABLATED);
		const float *row = run_att(s->run, l, 0, h) + (size_t)q * T;
		for (int j = tk->key0; j < tk->key0 + tk->keys_vis; j++) {
			int lev = tui_bar_level(row[j]);
			int xj = tk->bars.x + (j - tk->key0) * tk->cw;
			for (int k = 0; k < tk->cw; k++) {
				if (g_colors && lev > 0) {
					short pair = heat_pair(tui_level(row[j], g_levels), 0);
					wchar_t ws[2];
					const char *gl = g_utf8 ? bars_u[lev] : bars_a[lev];
					uint32_t cp;
					int bad;
					utf8_decode((const unsigned char *)gl, strlen(gl), &cp, &bad);
					ws[0] = (wchar_t)cp;
					ws[1] = 0;
					cchar_t cc;
					setcchar(&cc, ws, j == q ? A_BOLD : A_NORMAL, pair, NULL);
					if (xj + k < COLS)
						mvadd_wch(y, xj + k, &cc);
				} else {
					tui_put(y, xj + k, 1, g_utf8 ? bars_u[lev] : bars_a[lev], 0, TUI_ROLE_NONE);
				}
			}
		}
		if (tk->right.w > 0) {
			int best;
			top_keys(row, T, 1, &best);
			char kl[32];
			short_label(lab[best], 6, kl, sizeof kl);
			int rx = tk->right.x;
			int used = tui_printf(y, rx, tk->right.w, 0, TUI_ROLE_NONE, "%s%4d ",
					      g_utf8 ? "\u2192" : ">", best);
			used += tui_put(y, rx + used, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
			tui_printf(y, rx + 12, tk->right.w - 12, 0, TUI_ROLE_NONE, " %.2f", (double)row[best]);
		}
	}
	/* the text around the query token */
	if (tk->context.w > 0) {
		int y = tk->context.y, w = tk->context.w - 8;
		int x = r->x + tui_put(y, r->x, 8, "text: ", TUI_A_DIM, TUI_ROLE_NONE);
		/* start far enough back that the query sits about two thirds in */
		int start = q, used = render_width(lab[q]);
		while (start > 0 && used + render_width(lab[start - 1]) <= (2 * w) / 3) {
			start--;
			used += render_width(lab[start]);
		}
		for (int i = start; i < T && x < r->x + r->w; i++) {
			int lwid = render_width(lab[i]);
			if (x + lwid > r->x + r->w)
				break;
			x += tui_put(y, x, lwid, lab[i], i == q ? TUI_A_REVERSE | TUI_A_BOLD : 0,
				     i == q ? TUI_ROLE_SELECT : TUI_ROLE_NONE);
		}
	}
	render_labels_free(lab, T);
}

/* -------------------------------------------------------- numbers view */

/* The run's numbers, one per row from y; returns the next row.  compact:
 * for the side panel. */
static int draw_run_numbers(struct tui_state *t, int y, int x, int w, int y_end, bool compact)
{
	struct session *s = t->s;
	const struct run *run = s->run, *base = s->base;
	char cur[32], nat[32];
	double kvc = session_kv_bytes(s, &s->opt), kvn = session_kv_bytes(s, &s->native);
	format_bytes(kvc, cur, sizeof cur);
	format_bytes(kvn, nat, sizeof nat);
	int lw = compact ? 9 : 13;
#define ROW(label, ...) \
	do { \
		if (y < y_end) { \
			tui_put(y, x, lw, label, 0, TUI_ROLE_LABEL); \
			tui_printf(y, x + lw, w - lw, 0, TUI_ROLE_NONE, __VA_ARGS__); \
		} \
		y++; \
	} while (0)
	if (isnan(run->loss)) {
		ROW("loss", "- (needs 2 tokens)");
	} else if (compact) {
		ROW("loss", "%.4f (%+.4f)", run->loss, s->cmp.delta_loss);
		ROW("ppl", "%.2f", exp(run->loss));
	} else {
		ROW("loss", "%.4f nats   baseline %.4f   change %+.4f", run->loss, base->loss, s->cmp.delta_loss);
		ROW("perplexity", "%.3f   baseline %.3f", exp(run->loss), exp(base->loss));
	}
	ROW(compact ? "KL" : "KL vs base", compact ? "%.4f" : "%.6f nats (mean over positions)", s->cmp.kl);
	ROW(compact ? "top-1" : "top-1 agree", compact ? "%.1f%%" : "%.1f%% of positions predict what the baseline does",
	    100.0 * s->cmp.top1_agree);
	if (compact) {
		ROW("KV", "%s", cur);
		ROW("native", "%s", nat);
	} else {
		ROW("KV cache", "current %s (%.0f B)   native %s (%.0f B)", cur, kvc, nat, kvn);
	}
	ROW("forward", "%.2f ms (the last pass)", run->forward_ms);
	double last = last_key_ms(t);
	if (isnan(last))
		ROW(compact ? "redraw" : "key\u2192redraw", "- (press a key)");
	else if (compact)
		ROW("redraw", "%.1f ms", last);
	else
		ROW("key\u2192redraw", "%.1f ms last   median %.1f ms over %d key%s", last,
		    tui_key_ms_median(t), t->n_key_ms < TUI_KEY_MS_KEEP ? t->n_key_ms : TUI_KEY_MS_KEEP,
		    t->n_key_ms == 1 ? "" : "s");
	if (!compact && t->ran[0])
		ROW("last key ran", "%s  (the same command works at the prompt)", t->ran);
#undef ROW
	return y;
}

/* The selected head's entropy and top keys at the selected token. */
static int draw_head_numbers(struct tui_state *t, int y, int x, int w, int y_end, bool compact)
{
	struct session *s = t->s;
	int l = s->sel_layer, hd = s->sel_head, T = s->n_tokens, q = s->sel_token;
	char **lab = token_labels(s, NULL, NULL);
	double ent, mx;
	head_entropy(s->run, l, hd, &ent, &mx);
	struct err se;
	const struct head_scores *sc = session_head_scores(s, &se);
	char role[32] = "";
	if (sc)
		heads_role_text(&sc[l * s->model->cfg.n_head + hd], role, sizeof role);
	if (y < y_end)
		tui_printf(y, x, w, TUI_A_BOLD, TUI_ROLE_LABEL, "head %d.%d%s%s%s", l, hd,
			   session_head_ablated(s, l, hd) ? " (ablated)" : "", *role ? ": " : "", role);
	y++;
	if (sc && !compact && y < y_end) {
		char why[256];
		heads_explain(s->model->tok, s->tokens, T, &s->opt, &sc[l * s->model->cfg.n_head + hd],
			      why, sizeof why);
		tui_printf(y++, x, w, 0, TUI_ROLE_NONE, "  %s", strchr(why, ':') ? strchr(why, ':') + 2 : why);
	}
	if (y < y_end)
		tui_printf(y, x, w, 0, TUI_ROLE_NONE, compact ? " entropy %.3f, max %.3f" : "  entropy %.4f nats, max %.3f", ent, mx);
	y++;
	const float *row = run_att(s->run, l, 0, hd) + (size_t)q * T;
	int best[TUI_HEAD_TOPK];
	int m = top_keys(row, T, compact ? 3 : TUI_HEAD_TOPK, best);
	char ql[64];
	short_label(lab[q], 8, ql, sizeof ql);
	if (y < y_end)
		tui_printf(y, x, w, 0, TUI_ROLE_NONE, compact ? " token %d '%s' attends to:" : "  token %d '%s' attends most to:", q, ql);
	y++;
	for (int i = 0; i < m && y < y_end; i++, y++) {
		char kl[64];
		short_label(lab[best[i]], 6, kl, sizeof kl);
		int xx = x + tui_printf(y, x, w, 0, TUI_ROLE_NONE, "  %4d ", best[i]);
		tui_put(y, xx, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
		xx = x + 14;
		xx += tui_printf(y, xx, x + w - xx, 0, TUI_ROLE_NONE, "%.3f ", (double)row[best[i]]);
		put_bar(y, xx, (x + w - xx) < 10 ? x + w - xx : 10, row[best[i]], TUI_ROLE_NONE);
	}
	render_labels_free(lab, T);
	return y;
}

/* Next-token top-k at the selected token, with the baseline's beside it
 * (narrow: columns at 0, 3, 10 | 17, 24; wide: 2, 5, 14 | 23, 32). */
static int draw_next_tokens(struct tui_state *t, int y, int x, int w, int y_end, int k)
{
	struct session *s = t->s;
	int q = s->sel_token;
	int ids[8], bids[8];
	double p[8], bp[8];
	if (k > 8)
		k = 8;
	bool narrow = w < 40;
	int cn = narrow ? 0 : 2, ct = narrow ? 3 : 5, cp = narrow ? 10 : 14;
	int cbt = narrow ? 17 : 23, cbp = narrow ? 24 : 32, tw = narrow ? 6 : 8;
	int n = top_tokens(s->run, q, k, ids, p);
	int bn = top_tokens(s->base, q, k, bids, bp);
	char lab[96], cut[32];
	tok_label(s->model->tok, s->tokens[q], lab, sizeof lab);
	short_label(lab, 8, cut, sizeof cut);
	if (y < y_end)
		tui_printf(y, x, w, TUI_A_BOLD, TUI_ROLE_LABEL, "next token after %d '%s'", q, cut);
	y++;
	if (y < y_end) {
		tui_put(y, x + ct, w - ct, "run", TUI_A_DIM, TUI_ROLE_NONE);
		tui_put(y, x + cp, w - cp, "p", TUI_A_DIM, TUI_ROLE_NONE);
		tui_put(y, x + cbt, w - cbt, "baseline", TUI_A_DIM, TUI_ROLE_NONE);
	}
	y++;
	for (int i = 0; i < (n > bn ? n : bn) && y < y_end; i++, y++) {
		tui_printf(y, x + cn, w - cn, 0, TUI_ROLE_NONE, "%d", i + 1);
		if (i < n) {
			tok_label(s->model->tok, ids[i], lab, sizeof lab);
			short_label(lab, tw, cut, sizeof cut);
			tui_put(y, x + ct, tw, cut, TUI_A_BOLD, TUI_ROLE_LABEL);
			tui_printf(y, x + cp, w - cp, 0, TUI_ROLE_NONE, "%.3f", p[i]);
		}
		if (i < bn && w >= cbp + 5) {
			tok_label(s->model->tok, bids[i], lab, sizeof lab);
			short_label(lab, tw, cut, sizeof cut);
			tui_put(y, x + cbt, tw, cut, TUI_A_BOLD, TUI_ROLE_LABEL);
			tui_printf(y, x + cbp, w - cbp, 0, TUI_ROLE_NONE, "%.3f", bp[i]);
		}
	}
	return y;
}

void tui_draw_numbers(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!need_run(s, r))
		return;
	const struct model_config *c = &s->model->cfg;
	int y = r->y, end = r->y + r->h;
	char opts[256], nat[32];
	tui_sharing_name(c->n_head, s->native.kv_heads, nat, sizeof nat);
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "%s: %d layers %s %d heads (native %s), d_head %d, context %d; %d tokens",
		   s->model->name ? s->model->name : "model", c->n_layer, times_sign(), c->n_head, nat,
		   cfg_d_head(c), c->context, s->n_tokens);
	session_variant(s, opts, sizeof opts);
	tui_printf(y++, r->x, r->w, 0, TUI_ROLE_NONE, "options vs native: %s", opts[0] ? opts : "none (the baseline)");
	y = draw_run_numbers(t, y, r->x, r->w, end, false);
	y++;
	bool two_cols = r->w >= 76;
	int y2 = y;
	y = draw_head_numbers(t, y, r->x, two_cols ? 38 : r->w, end, false);
	if (two_cols)
		draw_next_tokens(t, y2, r->x + 40, r->w - 40, end, 5);
	else
		y = draw_next_tokens(t, y + 1, r->x, r->w, end, 5);

	/* every head's entropy, when there is room */
	int L = c->n_layer, H = c->n_head;
	if (y2 > y)
		y = y2;
	y = (two_cols ? (y > y2 + 7 ? y : y2 + 7) : y) + 1;
	if (end - y >= L + 2 && r->w >= 8 + 7 * H) {
		tui_put(y++, r->x, r->w, "entropy by head (nats, mean over queries)", TUI_A_BOLD, TUI_ROLE_LABEL);
		int x = r->x + tui_put(y, r->x, 8, "layer", TUI_A_DIM, TUI_ROLE_NONE);
		for (int h = 0; h < H; h++)
			tui_printf(y, r->x + 8 + 7 * h, 7, TUI_A_DIM, TUI_ROLE_NONE, "%6d", h);
		(void)x;
		y++;
		for (int l = 0; l < L && y < end; l++, y++) {
			tui_printf(y, r->x, 8, TUI_A_DIM, TUI_ROLE_NONE, "%5d", l);
			for (int h = 0; h < H; h++) {
				double e, m;
				head_entropy(s->run, l, h, &e, &m);
				bool sel = l == s->sel_layer && h == s->sel_head;
				tui_printf(y, r->x + 8 + 7 * h, 7, sel ? TUI_A_REVERSE : 0,
					   sel ? TUI_ROLE_SELECT : session_head_ablated(s, l, h) ? TUI_ROLE_ABLATED : TUI_ROLE_NONE,
					   "%6.3f", e);
			}
		}
	}
}

void tui_draw_side(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!session_ready(s))
		return;
	/* a rule on the left */
	for (int y = r->y; y < r->y + r->h; y++)
		tui_put(y, r->x - 1, 1, g_utf8 ? "\u2502" : "|", TUI_A_DIM, TUI_ROLE_NONE);
	int y = r->y, end = r->y + r->h, x = r->x + 1, w = r->w - 1;
	y = draw_run_numbers(t, y, x, w, end, true);
	y++;
	y = draw_head_numbers(t, y, x, w, end, true);
	y++;
	draw_next_tokens(t, y, x, w, end, 5);
}
