/*
 * tui-layout.c — where things go on the visualizer's screen, computed from
 * plain numbers (screen size, layers, heads, tokens, selection), plus the
 * texts of the status and hint lines, the option cycles and a line editor.
 * No terminal, no ncurses: tests/test_tui_layout.c checks all of it.
 */
#include "tui-layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "tokenizer.h"

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static int digits(int n)
{
	int d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* ------------------------------------------------------------- regions */

void tui_frame_layout(int rows, int cols, bool want_side, struct tui_frame *f)
{
	memset(f, 0, sizeof *f);
	f->rows = rows;
	f->cols = cols;
	f->too_small = rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS;
	if (f->too_small) {
		f->body = (struct tui_rect){ 0, 0, imax(rows, 0), imax(cols, 0) };
		return;
	}
	f->status = (struct tui_rect){ 0, 0, 1, cols };
	f->info = (struct tui_rect){ rows - 2, 0, 1, cols };
	f->hints = (struct tui_rect){ rows - 1, 0, 1, cols };
	f->body = (struct tui_rect){ 1, 0, rows - 3, cols };
	if (want_side && cols >= TUI_SIDE_MIN_COLS) {
		f->side = (struct tui_rect){ 1, cols - TUI_SIDE_W, rows - 3, TUI_SIDE_W };
		f->body.w = cols - TUI_SIDE_W - 1;
	}
}

bool tui_rect_has(const struct tui_rect *r, int y, int x)
{
	return y >= r->y && y < r->y + r->h && x >= r->x && x < r->x + r->w;
}

int tui_scroll(int first, int visible, int total, int sel)
{
	if (visible <= 0 || total <= visible)
		return 0;
	if (sel < first)
		first = sel;
	if (sel >= first + visible)
		first = sel - visible + 1;
	return clampi(first, 0, total - visible);
}

/* ---------------------------------------------------------------- grid */

int tui_grid_title_width(int L, int H)
{
	/* "[" L "." H "]" and the one-column ablation mark */
	return digits(imax(L - 1, 0)) + 1 + digits(imax(H - 1, 0)) + 2 + 1;
}

/* Fills the sizes that follow from pool and side. */
/* Pooling by pool (queries) and pool_x (keys), magnified to side pixels
 * down and side_x columns across (at least the pooled sizes). */
static void grid_sizes(struct tui_grid_layout *g, int pool, int side, int pool_x, int side_x)
{
	g->pool = pool;
	g->n = ceil_div(g->T, pool);
	g->side = side > g->n ? side : g->n;
	g->pool_x = pool_x;
	g->nx = ceil_div(g->T, pool_x);
	g->side_x = side_x > g->nx ? side_x : g->nx;
	g->map_rows = ceil_div(g->side, g->vsub);
	g->cell_w = imax(g->side_x, g->title_w);
	g->cell_h = 1 + g->map_rows;
}

void tui_grid_layout(const struct tui_rect *area, int L, int H, int T, int vsub,
		     struct tui_grid_layout *g)
{
	memset(g, 0, sizeof *g);
	g->L = imax(L, 1);
	g->H = imax(H, 1);
	g->T = imax(T, 1);
	g->vsub = vsub == 2 ? 2 : 1;
	g->area = *area;
	g->header = area->h >= 4 ? 1 : 0;
	g->title_w = tui_grid_title_width(g->L, g->H);
	int w = area->w, h = area->h - g->header;

	/* the largest heatmap side (in pixels) with every head and layer shown */
	int side_w = (w - (g->H - 1) * TUI_GRID_GAP) / g->H;
	int side_h = (h / g->L - 1) * g->vsub;
	int cap = imin(side_w, side_h);
	if (g->title_w <= side_w && cap >= imin(g->T, TUI_GRID_MIN_N)) {
		/* on each axis the least pooling that fits, then magnified by a
		 * whole factor (up to 3x) so that every weight is drawn the same
		 * size; the keys take the width the queries cannot use */
		int pool = ceil_div(g->T, side_h), pool_x = ceil_div(g->T, side_w);
		int n = ceil_div(g->T, pool), nx = ceil_div(g->T, pool_x);
		int zoom = imin(TUI_GRID_MAX_ZOOM, side_h / n);
		int zoom_x = imin(TUI_GRID_MAX_ZOOM, side_w / nx);
		if (pool == 1 && pool_x == 1) /* magnified alike: square cells */
			zoom = zoom_x = imin(zoom, zoom_x);
		grid_sizes(g, pool, n * zoom, pool_x, nx * zoom_x);
		if (pool_x == 1 && h / g->L >= g->cell_h + 1) {
			g->labels = true;
			g->cell_h++;
		}
	} else {
		/* scroll: as large as both directions allow, but no smaller than
		 * TUI_GRID_MIN_N (or T), pooled alike on both axes */
		int n = imin(imax(TUI_GRID_MIN_N, cap), g->T), pool = ceil_div(g->T, n);
		grid_sizes(g, pool, 0, pool, 0);
	}
	g->heads_vis = clampi((w + TUI_GRID_GAP) / (g->cell_w + TUI_GRID_GAP), 1, g->H);
	g->layers_vis = clampi(h / g->cell_h, 1, g->L);
}

bool tui_grid_side_panel(int rows, int cols, int L, int H, int T, int vsub)
{
	struct tui_frame with, without;
	tui_frame_layout(rows, cols, true, &with);
	if (with.too_small || with.side.w == 0)
		return false;
	tui_frame_layout(rows, cols, false, &without);
	struct tui_grid_layout a, b;
	tui_grid_layout(&with.body, L, H, T, vsub, &a);
	tui_grid_layout(&without.body, L, H, T, vsub, &b);
	bool a_all = a.heads_vis == a.H && a.layers_vis == a.L;
	bool b_all = b.heads_vis == b.H && b.layers_vis == b.L;
	return a_all == b_all && a.side >= b.side && a.side_x >= b.side_x;
}

void tui_grid_follow(struct tui_grid_layout *g, int l, int h)
{
	g->layer0 = tui_scroll(g->layer0, g->layers_vis, g->L, l);
	g->head0 = tui_scroll(g->head0, g->heads_vis, g->H, h);
}

bool tui_grid_cell(const struct tui_grid_layout *g, int l, int h, int *y, int *x)
{
	if (l < g->layer0 || l >= g->layer0 + g->layers_vis || h < g->head0 ||
	    h >= g->head0 + g->heads_vis || l >= g->L || h >= g->H)
		return false;
	*y = g->area.y + g->header + (l - g->layer0) * g->cell_h;
	*x = g->area.x + (h - g->head0) * (g->cell_w + TUI_GRID_GAP);
	return true;
}

bool tui_grid_hit(const struct tui_grid_layout *g, int y, int x, int *l, int *h)
{
	int dy = y - g->area.y - g->header, dx = x - g->area.x;
	if (dy < 0 || dx < 0 || x >= g->area.x + g->area.w)
		return false;
	int li = dy / g->cell_h, hi = dx / (g->cell_w + TUI_GRID_GAP);
	if (li >= g->layers_vis || hi >= g->heads_vis)
		return false;
	if (g->layer0 + li >= g->L || g->head0 + hi >= g->H)
		return false;
	*l = g->layer0 + li;
	*h = g->head0 + hi;
	return true;
}

bool tui_grid_joined(int H, int G, int h)
{
	if (G <= 0 || G >= H || H % G || h < 0 || h + 1 >= H)
		return false;
	int per = H / G;
	return h / per == (h + 1) / per;
}

/* --------------------------------------------------------- head view */

void tui_head_layout(const struct tui_rect *area, int T, int label_w, bool wide, int q, int k,
		     int row0, int col0, struct tui_head_layout *h)
{
	memset(h, 0, sizeof *h);
	T = imax(T, 1);
	h->T = T;
	h->idx_w = digits(T - 1);
	h->label_w = clampi(label_w, 1, TUI_HEAD_LABEL_MAX);
	int left = h->idx_w + 1 + h->label_w + 1;
	int header = 3;
	int cw_min = wide ? 2 : 1;
	int mat_w, mat_h;
	/* a narrower panel when that is what it takes to show every key */
	int pw = TUI_PANEL_W, spare = area->w - left - 2 * T - 1;
	if (spare < TUI_PANEL_W && spare >= TUI_PANEL_MIN_W)
		pw = spare;
	if (area->w - left - (pw + 1) >= imin(T * cw_min, 16)) {
		h->panel = (struct tui_rect){ area->y + 1, area->x + area->w - pw, area->h - 1, pw };
		mat_w = area->w - left - pw - 1;
		mat_h = area->h - header;
	} else if (area->h - header - TUI_PANEL_ROWS >= 3) {
		h->panel = (struct tui_rect){ area->y + area->h - TUI_PANEL_ROWS, area->x, TUI_PANEL_ROWS,
					      area->w };
		mat_w = area->w - left;
		mat_h = area->h - header - TUI_PANEL_ROWS;
	} else {
		mat_w = area->w - left;
		mat_h = area->h - header;
	}
	h->cw = wide || 2 * T <= mat_w ? 2 : 1;
	h->cols_vis = clampi(mat_w / h->cw, 1, T);
	h->rows_vis = clampi(mat_h, 1, T);
	h->row0 = tui_scroll(row0, h->rows_vis, T, clampi(q, 0, T - 1));
	h->col0 = tui_scroll(col0, h->cols_vis, T, clampi(k, 0, T - 1));
	/* a panel on the right sits just after the matrix */
	if (h->panel.w > 0 && h->panel.h > TUI_PANEL_ROWS) {
		int px = area->x + left + h->cols_vis * h->cw + 3;
		if (px < h->panel.x)
			h->panel.x = px;
	}
	h->title = (struct tui_rect){ area->y, area->x, 1, area->w };
	h->ruler = (struct tui_rect){ area->y + 1, area->x + left, 1, h->cols_vis * h->cw };
	h->keys = (struct tui_rect){ area->y + 2, area->x + left, 1, h->cols_vis * h->cw };
	h->matrix = (struct tui_rect){ area->y + header, area->x + left, h->rows_vis,
				       h->cols_vis * h->cw };
}

bool tui_head_hit(const struct tui_head_layout *h, int y, int x, int *q, int *k)
{
	if (!tui_rect_has(&h->matrix, y, x))
		return false;
	*q = h->row0 + (y - h->matrix.y);
	*k = h->col0 + (x - h->matrix.x) / h->cw;
	return *q < h->T && *k < h->T;
}

/* -------------------------------------------------------- token view */

void tui_token_layout(const struct tui_rect *area, int n_layers, int H, int T, int label_w,
		      bool wide, int q, int sel_row, int row0, int key0, struct tui_token_layout *t)
{
	memset(t, 0, sizeof *t);
	T = imax(T, 1);
	H = imax(H, 1);
	n_layers = imax(n_layers, 1);
	t->H = H;
	t->n_rows = n_layers * H;
	t->layer_gap = n_layers > 1 ? 1 : 0;
	t->left_w = label_w + 1;
	t->right_w = area->w >= 60 ? 18 : 0;
	int header = 3;
	bool context = area->h >= 8;
	int keys_w = area->w - t->left_w - t->right_w;
	t->cw = wide || 2 * T <= keys_w ? 2 : 1;
	t->keys_vis = clampi(keys_w / t->cw, 1, T);
	t->key0 = tui_scroll(key0, t->keys_vis, T, clampi(q, 0, T - 1));

	int total = t->n_rows + t->layer_gap * (n_layers - 1);
	t->rows_vis = clampi(area->h - header - (context ? 2 : 0), 1, total);
	sel_row = clampi(sel_row, 0, t->n_rows - 1);
	int d_sel = sel_row + t->layer_gap * (sel_row / H);
	t->row0 = tui_scroll(row0, t->rows_vis, total, d_sel);

	int kx = area->x + t->left_w;
	t->title = (struct tui_rect){ area->y, area->x, 1, area->w };
	t->ruler = (struct tui_rect){ area->y + 1, kx, 1, t->keys_vis * t->cw };
	t->keys = (struct tui_rect){ area->y + 2, kx, 1, t->keys_vis * t->cw };
	t->bars = (struct tui_rect){ area->y + header, kx, t->rows_vis, t->keys_vis * t->cw };
	if (t->right_w > 0)
		t->right = (struct tui_rect){ area->y + header, kx + t->keys_vis * t->cw + 1, t->rows_vis,
					      t->right_w };
	if (context)
		t->context = (struct tui_rect){ area->y + header + t->rows_vis + 1, area->x, 1, area->w };
}

int tui_token_row_y(const struct tui_token_layout *t, int i)
{
	int d = i + t->layer_gap * (i / t->H);
	if (i < 0 || i >= t->n_rows || d < t->row0 || d >= t->row0 + t->rows_vis)
		return -1;
	return t->bars.y + d - t->row0;
}

bool tui_token_hit(const struct tui_token_layout *t, int y, int x, int *row, int *key)
{
	int d = y - t->bars.y;
	if (d < 0 || d >= t->rows_vis)
		return false;
	d += t->row0;
	int i;
	if (t->layer_gap) {
		if (d % (t->H + 1) == t->H)
			return false;
		i = d - d / (t->H + 1);
	} else {
		i = d;
	}
	if (i >= t->n_rows)
		return false;
	*row = i;
	int dx = x - t->bars.x;
	*key = dx >= 0 && dx < t->bars.w ? t->key0 + dx / t->cw : -1;
	return true;
}

/* ------------------------------------------------------------- glyphs */

int tui_level(double v, int n)
{
	return render_level(v, n);
}

void tui_half_cell(int top, int bottom, struct tui_half *out)
{
	out->fg = out->bg = 0;
	if (top == 0 && bottom == 0) {
		out->glyph = 0;
	} else if (bottom == 0) {
		out->glyph = 1;
		out->fg = top;
	} else if (top == 0) {
		out->glyph = 2;
		out->fg = bottom;
	} else if (top == bottom) {
		out->glyph = 3;
		out->fg = top;
	} else {
		out->glyph = 1;
		out->fg = top;
		out->bg = bottom;
	}
}

int tui_bar_level(double v)
{
	if (!(v >= RENDER_ZERO))
		return 0;
	int k = 1 + (int)(v * 8.0);
	return k > 8 ? 8 : k;
}

/* ------------------------------------------------------------ options */

int tui_next_kv_heads(int H, int cur)
{
	if (H <= 1)
		return 1;
	for (int g = imin(cur, H + 1) - 1; g >= 1; g--)
		if (H % g == 0)
			return g;
	return H;
}

void tui_sharing_name(int H, int G, char *buf, size_t size)
{
	if (G >= H)
		snprintf(buf, size, "MHA");
	else if (G == 1)
		snprintf(buf, size, "MQA");
	else
		snprintf(buf, size, "GQA %d", G);
}

void tui_sharing_command(int H, int cur, char *buf, size_t size)
{
	int g = tui_next_kv_heads(H, cur);
	if (g >= H)
		snprintf(buf, size, "attn mha");
	else if (g == 1)
		snprintf(buf, size, "attn mqa");
	else
		snprintf(buf, size, "attn gqa %d", g);
}

void tui_mask_command(enum mask_kind mask, char *buf, size_t size)
{
	if (mask == MASK_CAUSAL)
		snprintf(buf, size, "mask none");
	else if (mask == MASK_NONE)
		snprintf(buf, size, "mask window %d", TUI_WINDOW);
	else if (mask == MASK_WINDOW)
		snprintf(buf, size, "mask after-softmax");
	else
		snprintf(buf, size, "mask causal");
}

#define STATUS_ABLATED_LIST 4 /* ablations listed by id up to this many */

void tui_status_text(const char *name, int L, int H, const struct run_options *o, bool unicode,
		     bool dims, char *buf, size_t size)
{
	const char *sep = unicode ? " \u2502 " : " | ";
	const char *times = unicode ? "\u00d7" : "x";
	char share[32], mask[32], abl[128];
	tui_sharing_name(H, o->kv_heads, share, sizeof share);
	if (o->mask == MASK_CAUSAL)
		snprintf(mask, sizeof mask, "causal");
	else if (o->mask == MASK_NONE)
		snprintf(mask, sizeof mask, "no mask");
	else if (o->mask == MASK_AFTER_SOFTMAX)
		snprintf(mask, sizeof mask, "mask after softmax");
	else
		snprintf(mask, sizeof mask, "window %d", o->window);
	int n_abl = opt_ablated_count(o);
	if (n_abl == 0) {
		snprintf(abl, sizeof abl, "no ablations");
	} else if (n_abl > STATUS_ABLATED_LIST) {
		snprintf(abl, sizeof abl, "%d heads ablated", n_abl);
	} else {
		size_t n = (size_t)snprintf(abl, sizeof abl, "ablated");
		for (int bit = 0; bit < L * H && bit < ABLATE_WORDS * 64 && n < sizeof abl; bit++)
			if (opt_is_ablated(o, bit))
				n += (size_t)snprintf(abl + n, sizeof abl - n, " %d.%d", bit / H, bit % H);
	}
	char size_text[32] = "";
	if (dims)
		snprintf(size_text, sizeof size_text, " %d%s%d", L, times, H);
	char pit[40] = "";
	if (o->pitfall != PITFALL_NONE)
		snprintf(pit, sizeof pit, "%spitfall %s", sep, pitfall_name(o->pitfall));
	snprintf(buf, size, "%s%s%s%s%s%s-norm%s%s%sscale %s%s%s%s", name, size_text, sep, share, sep,
		 norm_place_name(o->placement), sep, mask, sep, o->scale ? "on" : "off", sep, abl,
		 pit);
}

/* ------------------------------------------------------------ messages */

/* Display width of the code point at p (len bytes left), its byte count
 * in *k. */
static int cp_at(const char *p, size_t len, int *k)
{
	uint32_t cp;
	int bad;
	*k = utf8_decode((const unsigned char *)p, len, &cp, &bad);
	return bad ? 1 : render_cp_width(cp);
}

int tui_wrap(const char *text, int width, struct tui_span *rows, int max)
{
	int n = 0, len = (int)strlen(text), i = 0, k;
	width = imax(width, 1);
	for (;;) {
		/* as many characters from i as fit, and the last blank among them */
		int j = i, cols = 0, brk = -1, end, next;
		while (j < len && text[j] != '\n') {
			int w = cp_at(text + j, (size_t)(len - j), &k);
			if (cols + w > width)
				break;
			if (text[j] == ' ')
				brk = j;
			cols += w;
			j += k;
		}
		if (j >= len || text[j] == '\n') { /* the rest of the line fits */
			end = j;
			next = j < len ? j + 1 : len;
		} else { /* full: break at a blank, else cut the word */
			end = text[j] == ' ' ? j : brk > i ? brk : j;
			if (end == i) /* a character wider than the row: alone on it */
				cp_at(text + i, (size_t)(len - i), &k), end = i + k;
			next = end;
			while (next < len && text[next] == ' ')
				next++;
			if (next < len && text[next] == '\n')
				next++;
		}
		while (end > i && text[end - 1] == ' ')
			end--;
		if (n < max)
			rows[n] = (struct tui_span){ i, end - i };
		n++;
		if (next >= len)
			return n;
		i = next;
	}
}

/* ------------------------------------------------------------- hints */

void tui_hints_text(const struct tui_hint *list, bool back, bool unicode, int width, char *buf,
		    size_t size)
{
	char tail[48];
	snprintf(tail, sizeof tail, "? help  q %s", back ? "back" : "quit");
	int tail_w = render_width(tail);
	size_t n = 0;
	int used = 0;
	buf[0] = '\0';
	for (int i = 0; list[i].what; i++) {
		const char *key = unicode ? list[i].key_u : list[i].key_a;
		char item[64];
		snprintf(item, sizeof item, "%s %s", key, list[i].what);
		int w = render_width(item) + 2;
		if (used + w + tail_w > width)
			continue;
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s  ", item);
		used += w;
	}
	if (used + tail_w <= width && n < size)
		snprintf(buf + n, size - n, "%s", tail);
}

/* --------------------------------------------------------- line editor */

static void line_reserve(struct tui_line *l, int n)
{
	if (n <= l->cap)
		return;
	int cap = l->cap ? l->cap : 32;
	while (cap < n)
		cap *= 2;
	l->cp = xrealloc(l->cp, (size_t)cap * sizeof *l->cp);
	l->cap = cap;
}

void tui_line_init(struct tui_line *l, const char *utf8)
{
	memset(l, 0, sizeof *l);
	line_reserve(l, 32);
	tui_line_set(l, utf8);
}

void tui_line_free(struct tui_line *l)
{
	free(l->cp);
	memset(l, 0, sizeof *l);
}

void tui_line_set(struct tui_line *l, const char *utf8)
{
	l->n = l->cur = 0;
	if (!utf8)
		return;
	size_t len = strlen(utf8);
	const unsigned char *p = (const unsigned char *)utf8;
	while (len > 0) {
		uint32_t cp;
		int bad;
		int k = utf8_decode(p, len, &cp, &bad);
		line_reserve(l, l->n + 1);
		l->cp[l->n++] = cp;
		p += k;
		len -= (size_t)k;
	}
	l->cur = l->n;
}

void tui_line_insert(struct tui_line *l, uint32_t cp)
{
	line_reserve(l, l->n + 1);
	memmove(l->cp + l->cur + 1, l->cp + l->cur, (size_t)(l->n - l->cur) * sizeof *l->cp);
	l->cp[l->cur++] = cp;
	l->n++;
}

/* Removes code points [from, to). */
static void line_cut(struct tui_line *l, int from, int to)
{
	if (from >= to)
		return;
	memmove(l->cp + from, l->cp + to, (size_t)(l->n - to) * sizeof *l->cp);
	l->n -= to - from;
	if (l->cur >= to)
		l->cur -= to - from;
	else if (l->cur > from)
		l->cur = from;
}

void tui_line_backspace(struct tui_line *l)
{
	if (l->cur > 0)
		line_cut(l, l->cur - 1, l->cur);
}

void tui_line_delete(struct tui_line *l)
{
	if (l->cur < l->n)
		line_cut(l, l->cur, l->cur + 1);
}

void tui_line_left(struct tui_line *l)
{
	if (l->cur > 0)
		l->cur--;
}

void tui_line_right(struct tui_line *l)
{
	if (l->cur < l->n)
		l->cur++;
}

void tui_line_home(struct tui_line *l) { l->cur = 0; }
void tui_line_end(struct tui_line *l) { l->cur = l->n; }
void tui_line_kill_start(struct tui_line *l) { line_cut(l, 0, l->cur); }
void tui_line_kill_end(struct tui_line *l) { line_cut(l, l->cur, l->n); }

void tui_line_kill_word(struct tui_line *l)
{
	int i = l->cur;
	while (i > 0 && l->cp[i - 1] == ' ')
		i--;
	while (i > 0 && l->cp[i - 1] != ' ')
		i--;
	line_cut(l, i, l->cur);
}

char *tui_line_utf8(const struct tui_line *l)
{
	char *s = xmalloc((size_t)l->n * 4 + 1);
	size_t k = 0;
	for (int i = 0; i < l->n; i++)
		k += (size_t)utf8_encode(l->cp[i], s + k);
	s[k] = '\0';
	return s;
}

int tui_line_width(const struct tui_line *l, int from, int to)
{
	int w = 0;
	for (int i = imax(from, 0); i < to && i < l->n; i++)
		w += render_cp_width(l->cp[i]);
	return w;
}

int tui_line_scroll(const struct tui_line *l, int first, int width)
{
	first = clampi(first, 0, l->cur);
	/* back from the cursor while the columns fit: as many steps as the
	 * width shows, however far the cursor went since (a paste) */
	int lo = l->cur, w = 0;
	while (lo > first && w + render_cp_width(l->cp[lo - 1]) <= width - 1) {
		w += render_cp_width(l->cp[lo - 1]);
		lo--;
	}
	return lo;
}
