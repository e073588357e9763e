/*
 * curves.c — training records (train-record.h) read into series, and
 * series drawn as braille or ASCII plots, heat strips, CSV and SVG (see
 * curves.h).  Every
 * character goes into a struct curves_grid through one bounds-checked
 * function (grid_put), so no size can make a layout write outside it.
 */
#define _GNU_SOURCE
#include "curves.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-record.h"
#include "utf8.h"

/* --------------------------------------------------------------- series */

void curve_init(struct curve *c, const char *name, int n)
{
	c->name = xstrdup(name ? name : "");
	c->n = n > 0 ? n : 0;
	c->step = xcalloc((size_t)c->n + 1, sizeof *c->step);
	c->value = xcalloc((size_t)c->n + 1, sizeof *c->value);
}

void curve_free(struct curve *c)
{
	free(c->name);
	free(c->step);
	free(c->value);
	memset(c, 0, sizeof *c);
}

void curve_rename(struct curve *c, const char *name)
{
	free(c->name);
	c->name = xstrdup(name ? name : "");
}

void curves_record_free(struct curves_record *r)
{
	curve_free(&r->loss);
	curve_free(&r->val);
	curve_free(&r->lr);
	curve_free(&r->grad);
	for (int l = 0; l < r->n_layer; l++)
		curve_free(&r->layer[l]);
	free(r->layer);
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------ training record */

/* Makes c (zeroed) the series `name` of steps[0..n) and the values v,
 * which it takes over; v NULL: an empty series (the record lacks it). */
static void take_series(struct curve *c, const char *name, const double *steps, double *v, int n)
{
	c->name = xstrdup(name);
	c->n = v ? n : 0;
	c->step = xmalloc(((size_t)c->n + 1) * sizeof *c->step);
	if (c->n)
		memcpy(c->step, steps, (size_t)c->n * sizeof *steps);
	c->value = v ? v : xcalloc(1, sizeof *c->value);
}

int curves_parse(const char *json, size_t len, struct curves_record *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	struct train_record t;
	if (train_record_parse(json, len, &t, e))
		return -1;
	take_series(&r->loss, "train loss", t.step, t.loss, t.n);
	take_series(&r->lr, "learning rate", t.step, t.lr, t.n);
	take_series(&r->grad, "grad norm", t.step, t.grad, t.n);
	t.loss = t.lr = t.grad = NULL;
	if (t.layer) {
		r->layer = xcalloc((size_t)t.n_layer + 1, sizeof *r->layer);
		r->n_layer = t.n_layer;
		for (int l = 0; l < t.n_layer; l++) {
			char name[32];
			snprintf(name, sizeof name, "layer %d", l);
			take_series(&r->layer[l], name, t.step, t.layer[l], t.n);
			t.layer[l] = NULL;
		}
	}
	take_series(&r->val, "val loss", t.val_step, t.val_loss, t.n_val);
	t.val_loss = NULL;
	r->every = t.every;
	r->steps = t.steps;
	r->steps_done = t.steps_done;
	r->final_train_loss = t.final_train_loss;
	r->final_val_loss = t.final_val_loss;
	train_record_free(&t);
	return 0;
}

void curves_describe(const struct curves_record *r, bool val, char *buf, size_t size)
{
	long steps = r->steps_done >= 0 ? r->steps_done
		     : r->loss.n ? (long)r->loss.step[r->loss.n - 1] : 0;
	long k = r->every;
	const char *th = k % 100 / 10 == 1 ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd"
		       : k % 10 == 3 ? "rd" : "th";
	int n;
	if (k > 1)
		n = snprintf(buf, size, "%ld steps, every %ld%s stored", steps, k, th);
	else
		n = snprintf(buf, size, "%ld steps, each stored", steps);
	if (val && r->val.n && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "; val %d time%s", r->val.n,
			 r->val.n == 1 ? "" : "s");
}

/* -------------------------------------------------------- scale and ticks */

/* A mapping of data values onto [0, 1]: linear or through log10. */
struct axis {
	bool log;
	double a, b; /* the range, transformed (a < b) */
};

static bool drawable(double v, bool log)
{
	return isfinite(v) && (!log || v > 0);
}

static double ax_tr(const struct axis *ax, double v)
{
	return ax->log ? log10(v) : v;
}

/* Where x lies from lo (0) to hi (1), clamped; halves keep a range of
 * opposite huge values from overflowing, and what cannot be told (a range
 * too fine for the halves) is 0. */
static double frac(double x, double lo, double hi)
{
	double f = (x * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5);
	return !(f >= 0) ? 0 : f > 1 ? 1 : f;
}

static double ax_frac(const struct axis *ax, double v)
{
	return frac(ax_tr(ax, v), ax->a, ax->b);
}

/* Sets ax to the range [lo, hi] of data values (lo <= hi); a single value
 * gets a range around it, with the value in the middle. */
static void ax_set(struct axis *ax, double lo, double hi, bool log)
{
	ax->log = log;
	ax->a = log ? log10(lo) : lo;
	ax->b = log ? log10(hi) : hi;
	if (ax->b > ax->a)
		return;
	double d = log ? 0.5 : fabs(ax->a) > 0 ? fabs(ax->a) * 0.1 : 1;
	double a = ax->a - d, b = ax->b + d;
	if (!isfinite(a) || !isfinite(b) || !(b > a)) {
		/* d overflowed or was lost against a huge value: one step each
		 * way, where there is a finite one */
		a = isfinite(nextafter(ax->a, -INFINITY)) ? nextafter(ax->a, -INFINITY) : ax->a;
		b = isfinite(nextafter(ax->b, INFINITY)) ? nextafter(ax->b, INFINITY) : ax->b;
	}
	ax->a = a;
	ax->b = b;
}

/* The range of every drawable x (steps) and y (values) of the series.
 * False when no point is drawable. */
static bool data_range(const struct curve *const *series, int n, bool log, double *x0, double *x1,
		       double *y0, double *y1)
{
	*x0 = *y0 = INFINITY;
	*x1 = *y1 = -INFINITY;
	for (int s = 0; s < n; s++)
		for (int i = 0; i < series[s]->n; i++) {
			double x = series[s]->step[i], y = series[s]->value[i];
			if (!isfinite(x) || !drawable(y, log))
				continue;
			*x0 = fmin(*x0, x);
			*x1 = fmax(*x1, x);
			*y0 = fmin(*y0, y);
			*y1 = fmax(*y1, y);
		}
	return *x0 <= *x1;
}

#define TICKS_MAX 64

struct ticks {
	int n;
	double v[TICKS_MAX];      /* data values */
	char label[TICKS_MAX][16];
};

/* A round step near range / n: 1, 2 or 5 times a power of ten. */
static double nice_step(double range, int n)
{
	double raw = range / (n > 0 ? n : 1);
	if (!(raw > 0) || !isfinite(raw))
		return 0;
	double mag = pow(10, floor(log10(raw))), f = raw / mag;
	return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/* Decimals that show multiples of step exactly (at most 6). */
static int step_decimals(double step)
{
	for (int d = 0; d < 6; d++) {
		double k = step * pow(10, d);
		if (fabs(k - round(k)) < 1e-6 * fmax(1, k))
			return d;
	}
	return 6;
}

static void tick_add(struct ticks *t, double v, const char *fmt, int prec)
{
	if (t->n == TICKS_MAX)
		return;
	if (v == 0)
		v = 0; /* no "-0" */
	snprintf(t->label[t->n], sizeof t->label[0], fmt, prec, v);
	t->v[t->n++] = v;
}

/* About n ticks at round values inside the axis' range (integers only
 * when asked); none when the range is too wide or too fine for a double. */
static void ticks_linear(const struct axis *ax, int n, bool integer, struct ticks *t)
{
	t->n = 0;
	double step = nice_step(ax->b - ax->a, n);
	if (integer && step < 1)
		step = 1;
	if (!(step > 0) || !isfinite(step))
		return;
	double k0 = ceil(ax->a / step), k1 = floor(ax->b / step);
	if (!(k1 >= k0) || !(k1 - k0 < TICKS_MAX))
		return;
	double big = fmax(fabs(ax->a), fabs(ax->b));
	bool fixed = big < 1e6 && step >= 1e-4;
	for (int i = 0; i <= (int)(k1 - k0); i++)
		tick_add(t, (k0 + i) * step, fixed ? "%.*f" : "%.*g", fixed ? step_decimals(step) : 3);
}

/* Powers of ten inside the range; 2x and 5x (then every multiple) when
 * fewer than two powers fit. */
static void ticks_log(const struct axis *ax, struct ticks *t)
{
	static const double sets[3][9] = { { 1 }, { 1, 2, 5 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9 } };
	static const int sizes[3] = { 1, 3, 9 };
	double k0 = floor(ax->a), k1 = ceil(ax->b);
	int every = 1;
	while ((k1 - k0) / every > TICKS_MAX / 2)
		every *= 2;
	for (int s = 0; s < 3; s++) {
		t->n = 0;
		for (double k = k0; k <= k1 && t->n < TICKS_MAX; k += every)
			for (int m = 0; m < sizes[s]; m++) {
				double v = sets[s][m] * pow(10, k), tv = log10(v);
				if (tv >= ax->a - 1e-9 && tv <= ax->b + 1e-9 && isfinite(v) && v > 0)
					tick_add(t, v, "%.*g", 3);
			}
		if (t->n >= 2 || every > 1)
			return;
	}
}

/* --------------------------------------------------------------- the grid */

static void grid_new(struct curves_grid *g, int w, int h)
{
	g->w = w > 0 ? w : 0;
	g->h = h > 0 ? h : 0;
	g->cell = xmalloc(((size_t)g->w * g->h + 1) * sizeof *g->cell);
	for (size_t i = 0; i < (size_t)g->w * g->h; i++)
		g->cell[i] = (struct curves_cell){ ' ', CURVES_TEXT, 0 };
}

void curves_grid_free(struct curves_grid *g)
{
	free(g->cell);
	memset(g, 0, sizeof *g);
}

/* The one place that writes cells: outside the grid is a no-op. */
static void grid_put(struct curves_grid *g, int y, int x, uint32_t cp, int ink, float heat)
{
	if (y < 0 || y >= g->h || x < 0 || x >= g->w)
		return;
	g->cell[(size_t)y * g->w + x] = (struct curves_cell){ cp, ink, heat };
}

/* Puts UTF-8 text at (y, x) in at most maxw columns (and the grid);
 * control characters show as '?', a wide character takes two cells and
 * is left out when it would cross the limit.  Returns the columns used. */
static int grid_text(struct curves_grid *g, int y, int x, int maxw, const char *s, int ink)
{
	int col = 0;
	if (maxw > g->w - x)
		maxw = g->w - x;
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	while (len > 0 && col < maxw) {
		uint32_t cp;
		int bad;
		int k = utf8_decode(p, len, &cp, &bad);
		p += k;
		len -= (size_t)k;
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			cp = '?';
		int w = render_cp_width(cp);
		if (w == 0)
			continue;
		if (col + w > maxw)
			break;
		grid_put(g, y, x + col, cp, ink, 0);
		if (w == 2)
			grid_put(g, y, x + col + 1, 0, ink, 0);
		col += w;
	}
	return col;
}

static uint32_t first_cp(const char *s)
{
	uint32_t cp;
	int bad;
	utf8_decode((const unsigned char *)s, strlen(s), &cp, &bad);
	return cp;
}

/* "(the plot needs N columns)", cut to the width. */
static void too_small(struct curves_grid *g, int width, const char *what, int need)
{
	char msg[64];
	snprintf(msg, sizeof msg, "(the %s needs %d columns)", what, need);
	grid_new(g, width, 1);
	grid_text(g, 0, 0, width, msg, CURVES_TEXT);
}

static const char *const markers_u[CURVES_INKS] = { "\u25cf", "\u25a0", "\u25b2", "\u25c6",
						    "\u25bc", "\u2605" };
static const char *const markers_a[CURVES_INKS] = { "*", "o", "+", "x", "#", "@" };

const char *curves_marker(int ink, bool ascii)
{
	int i = ((ink % CURVES_INKS) + CURVES_INKS) % CURVES_INKS;
	return ascii ? markers_a[i] : markers_u[i];
}

/* ----------------------------------------------------- legends and scales */

/* One item of a flowed line: pre, a one-column mark in its ink, text. */
struct item {
	const char *pre;   /* or NULL */
	const char *mark;  /* or NULL */
	int ink;
	float heat;
	char text[256];
};

static int item_width(const struct item *it)
{
	return (it->pre ? render_width(it->pre) : 0) + (it->mark ? 1 : 0) + render_width(it->text);
}

/* Draws one item at (y, x), cut at column `end`. */
static void item_put(struct curves_grid *g, int y, int x, int end, const struct item *it)
{
	if (it->pre)
		x += grid_text(g, y, x, end - x, it->pre, CURVES_TEXT);
	if (it->mark && x < end)
		grid_put(g, y, x++, first_cp(it->mark), it->ink, it->heat);
	grid_text(g, y, x, end - x, it->text, CURVES_TEXT);
}

/* Lays out items left to right, two blanks apart, wrapping at width (an
 * item wider than a line is cut).  With g, draws them from row y.
 * Returns the rows used: 0 for no items. */
static int flow(struct curves_grid *g, int y, const struct item *items, int n, int width)
{
	int rows = n > 0 ? 1 : 0, x = 0;
	for (int i = 0; i < n; i++) {
		int w = item_width(&items[i]);
		if (x > 0 && x + 2 + w > width) {
			rows++;
			x = 0;
		} else if (x > 0) {
			x += 2;
		}
		if (g)
			item_put(g, y + rows - 1, x, width, &items[i]);
		x += w;
	}
	return rows;
}

/* Lays out text word by word, one blank apart, wrapping at width (a word
 * wider than a line is cut).  With g, draws it from row y.  Returns the
 * rows used: 0 for NULL or no words. */
static int wrap(struct curves_grid *g, int y, const char *text, int width)
{
	int rows = 0, x = 0;
	for (const char *p = text ? text : ""; *p;) {
		size_t k = strcspn(p, " ");
		if (k == 0) {
			p++;
			continue;
		}
		char *word = xstrndup(p, k);
		int w = render_width(word);
		if (rows == 0 || (x > 0 && x + 1 + w > width)) {
			rows++;
			x = 0;
		} else {
			x++;
		}
		if (g)
			grid_text(g, y + rows - 1, x, width - x, word, CURVES_TEXT);
		x += w;
		p += k;
		free(word);
	}
	return rows;
}

void curves_wrap(const char *text, int width, struct render_buf *b)
{
	struct curves_grid g;
	grid_new(&g, width, wrap(NULL, 0, text, width));
	wrap(&g, 0, text, width);
	curves_grid_text(&g, false, b);
	curves_grid_free(&g);
}

/* The legend of a plot: each series' marker and name. */
static int legend(struct curves_grid *g, int y, const struct curves_plot_spec *sp)
{
	int n = sp->n_series > 0 ? sp->n_series : 0;
	struct item *it = xcalloc((size_t)n + 1, sizeof *it);
	for (int i = 0; i < n; i++) {
		it[i].mark = curves_marker(i, sp->ascii);
		it[i].ink = i;
		snprintf(it[i].text, sizeof it[i].text, " %s", sp->series[i]->name);
	}
	int rows = flow(g, y, it, n, sp->width);
	free(it);
	return rows;
}

/* --------------------------------------------------------------- x axis */

/* The x axis on row y, its corner at column x0 and C cells after it, and
 * the tick labels on row y + 1, each centred under its tick (or ending at
 * the edge) and left out when it would touch the one before.  dx: dots per
 * cell across (the step of a tick maps as a point does). */
static void x_axis(struct curves_grid *g, int y, int x0, int C, int dx, const struct axis *xa,
		   bool any, bool ascii)
{
	grid_put(g, y, x0, first_cp(ascii ? "+" : "\u2514"), CURVES_TEXT, 0);
	for (int c = 0; c < C; c++)
		grid_put(g, y, x0 + 1 + c, first_cp(ascii ? "-" : "\u2500"), CURVES_TEXT, 0);
	if (!any)
		return;
	struct ticks t;
	ticks_linear(xa, C / 10 < 2 ? 2 : C / 10 > 12 ? 12 : C / 10, true, &t);
	int end = -1, N = C * dx;
	for (int i = 0; i < t.n; i++) {
		int col = (int)lround(ax_frac(xa, t.v[i]) * (N - 1)) / dx;
		int w = (int)strlen(t.label[i]), start = x0 + 1 + col - w / 2;
		grid_put(g, y, x0 + 1 + col, first_cp(ascii ? "+" : "\u252c"), CURVES_TEXT, 0);
		start = start + w > g->w ? g->w - w : start; /* the last one ends at the edge */
		start = start < 0 ? 0 : start;
		if (start <= end || start + w > g->w)
			continue;
		grid_text(g, y + 1, start, w, t.label[i], CURVES_TEXT);
		end = start + w;
	}
}

/* ---------------------------------------------------------------- plots */

bool curves_plot_is_log(const struct curves_plot_spec *sp)
{
	if (sp->scale != CURVES_AUTO)
		return sp->scale == CURVES_LOG;
	double lo = INFINITY, hi = -INFINITY;
	for (int s = 0; s < sp->n_series; s++)
		for (int i = 0; i < sp->series[s]->n; i++) {
			double v = sp->series[s]->value[i];
			if (!isfinite(v))
				continue;
			if (v <= 0)
				return false;
			lo = fmin(lo, v);
			hi = fmax(hi, v);
		}
	return lo <= hi && hi > 10 * lo;
}

int curves_plot_extra_rows(const struct curves_plot_spec *sp)
{
	return wrap(NULL, 0, sp->title, sp->width) + 2 + legend(NULL, 0, sp);
}

/* The dots of a plot area: C x R cells of dx x dy dots each. */
struct canvas {
	int C, R, dx, dy;
	uint8_t *bits; /* (R, C) braille dot bits; ASCII: 1 for a dot */
	int *ink;      /* (R, C) the series that drew there last */
	int *mark;     /* (R, C) 1 + the series whose marker shows there, 0 none */
};

static void dot(struct canvas *cv, int px, int py, int ink)
{
	static const uint8_t bit[2][4] = { { 0x01, 0x02, 0x04, 0x40 }, { 0x08, 0x10, 0x20, 0x80 } };
	if (px < 0 || py < 0 || px >= cv->C * cv->dx || py >= cv->R * cv->dy)
		return;
	size_t i = (size_t)(py / cv->dy) * cv->C + px / cv->dx;
	cv->bits[i] |= cv->dx == 2 ? bit[px % 2][py % 4] : 1;
	cv->ink[i] = ink;
}

static void put_mark(struct canvas *cv, int px, int py, int ink)
{
	if (px >= 0 && py >= 0 && px < cv->C * cv->dx && py < cv->R * cv->dy)
		cv->mark[(size_t)(py / cv->dy) * cv->C + px / cv->dx] = 1 + ink;
}

/* A straight line of dots (Bresenham) from (x0, y0) to (x1, y1). */
static void line(struct canvas *cv, int x0, int y0, int x1, int y1, int ink)
{
	int dx = abs(x1 - x0), dy = -abs(y1 - y0);
	int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
	for (;;) {
		dot(cv, x0, y0, ink);
		if (x0 == x1 && y0 == y1)
			return;
		int e2 = 2 * err;
		if (e2 >= dy) {
			err += dy;
			x0 += sx;
		}
		if (e2 <= dx) {
			err += dx;
			y0 += sy;
		}
	}
}

/* The dot of a point: x left to right, y bottom (smallest) to top. */
static void to_dots(const struct canvas *cv, const struct axis *xa, const struct axis *ya,
		    double x, double y, int *px, int *py)
{
	int NX = cv->C * cv->dx, NY = cv->R * cv->dy;
	*px = (int)lround(ax_frac(xa, x) * (NX - 1));
	*py = NY - 1 - (int)lround(ax_frac(ya, y) * (NY - 1));
}

/* Series s: its dots joined by lines, broken at missing points; its
 * marker at every point when it is sparse, else at its last point. */
static void draw_series(struct canvas *cv, const struct curve *c, int s, const struct axis *xa,
			const struct axis *ya)
{
	int k = 0, px = 0, py = 0, lx = 0, ly = 0;
	bool pen = false;
	for (int i = 0; i < c->n; i++)
		k += isfinite(c->step[i]) && drawable(c->value[i], ya->log);
	bool sparse = k <= cv->C / 2;
	for (int i = 0; i < c->n; i++) {
		if (!isfinite(c->step[i]) || !drawable(c->value[i], ya->log)) {
			pen = false;
			continue;
		}
		to_dots(cv, xa, ya, c->step[i], c->value[i], &px, &py);
		if (pen)
			line(cv, lx, ly, px, py, s);
		else
			dot(cv, px, py, s);
		if (sparse)
			put_mark(cv, px, py, s);
		pen = true;
		lx = px;
		ly = py;
	}
	for (int i = c->n - 1; i >= 0 && !sparse; i--)
		if (isfinite(c->step[i]) && drawable(c->value[i], ya->log)) {
			to_dots(cv, xa, ya, c->step[i], c->value[i], &px, &py);
			put_mark(cv, px, py, s);
			break;
		}
}

/* The canvas into the grid from (y0, x0): braille patterns (or the
 * series' ASCII marker) in the ink of the last series there; markers. */
static void canvas_put(struct curves_grid *g, const struct canvas *cv, int y0, int x0, bool ascii)
{
	for (int r = 0; r < cv->R; r++)
		for (int c = 0; c < cv->C; c++) {
			size_t i = (size_t)r * cv->C + c;
			int m = cv->mark[i] - 1;
			if (m >= 0)
				grid_put(g, y0 + r, x0 + c, first_cp(curves_marker(m, ascii)), m, 0);
			else if (cv->bits[i])
				grid_put(g, y0 + r, x0 + c,
					 ascii ? first_cp(curves_marker(cv->ink[i], true)) : 0x2800u + cv->bits[i],
					 cv->ink[i], 0);
		}
}

/* The y axis: labels right-aligned in lw columns, a blank, then the axis
 * line with a tick on each labelled row (the first label of a row wins). */
static void y_axis(struct curves_grid *g, int y0, int R, int dy, int lw, const struct axis *ya,
		   const struct ticks *t, bool ascii)
{
	int NY = R * dy, done = -1;
	for (int r = 0; r < R; r++)
		grid_put(g, y0 + r, lw + 1, first_cp(ascii ? "|" : "\u2502"), CURVES_TEXT, 0);
	for (int i = 0; i < t->n; i++) {
		int r = (NY - 1 - (int)lround(ax_frac(ya, t->v[i]) * (NY - 1))) / dy;
		if (r == done)
			continue;
		int w = (int)strlen(t->label[i]);
		grid_text(g, y0 + r, lw - w, w, t->label[i], CURVES_TEXT);
		grid_put(g, y0 + r, lw + 1, first_cp(ascii ? "+" : "\u2524"), CURVES_TEXT, 0);
		done = r;
	}
}

void curves_plot(const struct curves_plot_spec *sp, struct curves_grid *g)
{
	bool log = curves_plot_is_log(sp), ascii = sp->ascii;
	double x0, x1, y0, y1;
	bool any = data_range(sp->series, sp->n_series, log, &x0, &x1, &y0, &y1);
	struct axis xa, ya;
	ax_set(&xa, any ? x0 : 0, any ? x1 : 1, false);
	ax_set(&ya, any ? y0 : 1, any ? y1 : 10, log);
	int R = sp->height, W = sp->width, lw = 0;
	struct ticks t = { 0 };
	if (any && R > 0 && log)
		ticks_log(&ya, &t);
	else if (any && R > 0)
		ticks_linear(&ya, R / 3 + 1 < 2 ? 2 : R / 3 + 1 > 10 ? 10 : R / 3 + 1, false, &t);
	for (int i = 0; i < t.n; i++)
		lw = (int)strlen(t.label[i]) > lw ? (int)strlen(t.label[i]) : lw;
	int C = W - lw - 2;
	if (C < CURVES_MIN_COLS || R < 1) {
		too_small(g, W, "plot", lw + 2 + CURVES_MIN_COLS);
		return;
	}
	int top = wrap(NULL, 0, sp->title, W);
	grid_new(g, W, curves_plot_extra_rows(sp) + R);
	wrap(g, 0, sp->title, W);

	struct canvas cv = { .C = C, .R = R, .dx = ascii ? 1 : 2, .dy = ascii ? 1 : 4 };
	cv.bits = xcalloc((size_t)C * R, sizeof *cv.bits);
	cv.ink = xcalloc((size_t)C * R, sizeof *cv.ink);
	cv.mark = xcalloc((size_t)C * R, sizeof *cv.mark);
	for (int s = 0; s < sp->n_series; s++)
		draw_series(&cv, sp->series[s], s, &xa, &ya);
	canvas_put(g, &cv, top, lw + 2, ascii);
	free(cv.bits);
	free(cv.ink);
	free(cv.mark);
	if (!any)
		grid_text(g, top + R / 2, lw + 2 + (C - 7) / 2, C, "no data", CURVES_TEXT);

	y_axis(g, top, R, ascii ? 1 : 4, lw, &ya, &t, ascii);
	x_axis(g, top + R, lw + 1, C, ascii ? 1 : 2, &xa, any, ascii);
	legend(g, top + R + 2, sp);
}

/* ------------------------------------------------------------ heat strip */

/* What a strip's layout needs, worked out once for counting its rows and
 * for drawing it. */
struct strip {
	int lw, C, ns;       /* label columns, bucket columns, shades */
	bool any;            /* some bucket has a value */
	struct axis xa;
	double lo, hi;       /* the buckets' range (log10 units when log) */
	double *v;           /* (n_rows, C) bucket values, NAN for none */
	struct item it[12];  /* the scale line */
	int n_items;
};

/* The buckets of row c into row[0..C): means of the points in each
 * (log10 units when log), a gap between two points repeating the bucket
 * before, NAN before the first point and after the last. */
static void strip_row(const struct curve *c, bool log, int C, const struct axis *xa, double *row,
		      double *cnt)
{
	int first = -1, last = -1;
	for (int j = 0; j < C; j++)
		row[j] = cnt[j] = 0;
	for (int i = 0; i < c->n; i++) {
		if (!isfinite(c->step[i]) || !drawable(c->value[i], log))
			continue;
		int j = (int)lround(ax_frac(xa, c->step[i]) * (C - 1));
		row[j] += log ? log10(c->value[i]) : c->value[i];
		cnt[j]++;
		first = first < 0 || j < first ? j : first;
		last = j > last ? j : last;
	}
	for (int j = 0; j < C; j++)
		row[j] = cnt[j] > 0 ? row[j] / cnt[j] : j > first && j < last ? row[j - 1] : NAN;
}

/* The scale line: where each shade starts, and the largest value. */
static void strip_scale(const struct curves_heat_spec *sp, struct strip *st)
{
	struct item *it = st->it;
	int n = 0;
	memset(st->it, 0, sizeof st->it);
	snprintf(it[n++].text, sizeof it[0].text, "scale%s:%s", sp->log ? " (log)" : "",
		 st->any ? "" : " no data");
	for (int k = 1; k <= st->ns && st->any; k++) {
		if (st->hi <= st->lo && k < st->ns)
			continue; /* one value: every cell has the darkest shade */
		double f = (double)(k - 1) / st->ns, v = st->lo * (1 - f) + st->hi * f;
		it[n].pre = "'";
		it[n].mark = render_glyph(sp->ascii ? RENDER_ASCII : RENDER_UNICODE, k);
		it[n].ink = CURVES_HEAT;
		it[n].heat = (float)k / st->ns;
		snprintf(it[n++].text, sizeof it[0].text, "' >=%.2g", sp->log ? pow(10, v) : v);
	}
	if (st->any)
		snprintf(it[n++].text, sizeof it[0].text, "max %.2g", sp->log ? pow(10, st->hi) : st->hi);
	st->n_items = n;
}

/* Fills st for sp; false (nothing allocated) when no bucket fits. */
static bool strip_prepare(const struct curves_heat_spec *sp, struct strip *st)
{
	memset(st, 0, sizeof *st);
	for (int r = 0; r < sp->n_rows; r++) {
		int w = render_width(sp->rows[r]->name);
		st->lw = w > st->lw ? w : st->lw;
	}
	st->lw = st->lw > 24 ? 24 : st->lw;
	st->C = sp->width - st->lw - 2;
	st->ns = render_levels(sp->ascii ? RENDER_ASCII : RENDER_UNICODE) - 1;
	if (st->C < 1)
		return false;
	double x0, x1, y0, y1;
	st->any = data_range(sp->rows, sp->n_rows, sp->log, &x0, &x1, &y0, &y1);
	ax_set(&st->xa, st->any ? x0 : 0, st->any ? x1 : 1, false);
	st->v = xmalloc(((size_t)sp->n_rows * st->C + 1) * sizeof *st->v);
	double *cnt = xmalloc((size_t)st->C * sizeof *cnt);
	st->lo = INFINITY;
	st->hi = -INFINITY;
	for (int r = 0; r < sp->n_rows; r++) {
		double *row = st->v + (size_t)r * st->C;
		strip_row(sp->rows[r], sp->log, st->C, &st->xa, row, cnt);
		for (int j = 0; j < st->C; j++)
			if (isfinite(row[j])) {
				st->lo = fmin(st->lo, row[j]);
				st->hi = fmax(st->hi, row[j]);
			}
	}
	free(cnt);
	st->any = st->lo <= st->hi;
	strip_scale(sp, st);
	return true;
}

int curves_heat_rows(const struct curves_heat_spec *sp)
{
	struct strip st;
	if (!strip_prepare(sp, &st))
		return 1;
	free(st.v);
	return wrap(NULL, 0, sp->title, sp->width) + sp->n_rows + 2 +
	       flow(NULL, 0, st.it, st.n_items, sp->width);
}

void curves_heat(const struct curves_heat_spec *sp, struct curves_grid *g)
{
	struct strip st;
	if (!strip_prepare(sp, &st)) {
		too_small(g, sp->width, "strip", st.lw + 3);
		return;
	}
	int W = sp->width, top = wrap(NULL, 0, sp->title, W), C = st.C;
	grid_new(g, W, top + sp->n_rows + 2 + flow(NULL, 0, st.it, st.n_items, W));
	wrap(g, 0, sp->title, W);
	for (int r = 0; r < sp->n_rows; r++) {
		grid_text(g, top + r, 0, st.lw, sp->rows[r]->name, CURVES_TEXT);
		grid_put(g, top + r, st.lw + 1, first_cp(sp->ascii ? "|" : "\u2502"), CURVES_TEXT, 0);
		for (int j = 0; j < C && st.any; j++) {
			double x = st.v[(size_t)r * C + j];
			if (!isfinite(x))
				continue;
			int k = st.hi > st.lo ? 1 + (int)(frac(x, st.lo, st.hi) * st.ns) : st.ns;
			k = k < 1 ? 1 : k > st.ns ? st.ns : k;
			const char *gl = render_glyph(sp->ascii ? RENDER_ASCII : RENDER_UNICODE, k);
			grid_put(g, top + r, st.lw + 2 + j, first_cp(gl), CURVES_HEAT, (float)k / st.ns);
		}
	}
	free(st.v);
	x_axis(g, top + sp->n_rows, st.lw + 1, C, 1, &st.xa, st.any, sp->ascii);
	flow(g, top + sp->n_rows + 2, st.it, st.n_items, W);
}

/* ------------------------------------------------------------------ text */

/* The ANSI colour of a cell ("" for none) into buf. */
static void cell_color(const struct curves_cell *c, char *buf, size_t size)
{
	static const int fg[CURVES_INKS] = { 36, 33, 35, 31, 32, 34 };
	buf[0] = '\0';
	if (c->cp == ' ')
		return;
	if (c->ink >= 0)
		snprintf(buf, size, "\x1b[%dm", fg[c->ink % CURVES_INKS]);
	else if (c->ink == CURVES_HEAT)
		snprintf(buf, size, "\x1b[38;5;%dm", render_color256(c->heat));
}

void curves_grid_text(const struct curves_grid *g, bool color, struct render_buf *b)
{
	for (int y = 0; y < g->h; y++) {
		const struct curves_cell *row = g->cell + (size_t)y * g->w;
		int end = g->w;
		while (end > 0 && (row[end - 1].cp == ' ' || row[end - 1].cp == 0))
			end--;
		char cur[24] = "";
		for (int x = 0; x < end; x++) {
			if (row[x].cp == 0)
				continue;
			if (color) {
				char want[24];
				cell_color(&row[x], want, sizeof want);
				if (strcmp(want, cur)) {
					render_buf_puts(b, want[0] ? want : "\x1b[0m");
					snprintf(cur, sizeof cur, "%s", want);
				}
			}
			char u[8];
			render_buf_put(b, u, (size_t)utf8_encode(row[x].cp, u));
		}
		if (cur[0])
			render_buf_puts(b, "\x1b[0m");
		render_buf_puts(b, "\n");
	}
}

/* ------------------------------------------------------------------- CSV */


/* A point of a series in step order: ties keep the series' order. */
struct point {
	double step;
	int i;
};

static int cmp_point(const void *a, const void *b)
{
	const struct point *p = a, *q = b;
	return p->step < q->step ? -1 : p->step > q->step ? 1 : p->i - q->i;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void fmt_step(double x, char *buf, size_t size)
{
	snprintf(buf, size, x == floor(x) && fabs(x) < 1e15 ? "%.0f" : "%.17g", x);
}

void curves_csv(const struct curve *const *series, int n, struct render_buf *b)
{
	size_t total = 0, m = 0;
	for (int s = 0; s < n; s++)
		total += (size_t)series[s]->n;
	double *steps = xmalloc((total + 1) * sizeof *steps);
	struct point **pts = xcalloc((size_t)n + 1, sizeof *pts);
	int *len = xcalloc((size_t)n + 1, sizeof *len), *pos = xcalloc((size_t)n + 1, sizeof *pos);
	for (int s = 0; s < n; s++) {
		const struct curve *c = series[s];
		pts[s] = xmalloc(((size_t)c->n + 1) * sizeof **pts);
		for (int i = 0; i < c->n; i++)
			if (isfinite(c->step[i])) {
				pts[s][len[s]++] = (struct point){ c->step[i], i };
				steps[m++] = c->step[i];
			}
		qsort(pts[s], (size_t)len[s], sizeof **pts, cmp_point);
	}
	qsort(steps, m, sizeof *steps, cmp_double);
	render_buf_puts(b, "step");
	for (int s = 0; s < n; s++) {
		render_buf_puts(b, ",");
		render_csv_field(b, series[s]->name);
	}
	render_buf_puts(b, "\n");
	for (size_t k = 0; k < m; k++) {
		if (k > 0 && steps[k] == steps[k - 1])
			continue;
		char f[32];
		fmt_step(steps[k], f, sizeof f);
		render_buf_puts(b, f);
		for (int s = 0; s < n; s++) {
			double v = NAN;
			for (; pos[s] < len[s] && pts[s][pos[s]].step <= steps[k]; pos[s]++) {
				double y = series[s]->value[pts[s][pos[s]].i];
				if (isfinite(y) && isnan(v))
					v = y; /* the first finite value at this step */
			}
			if (isfinite(v))
				render_buf_printf(b, ",%.9g", v);
			else
				render_buf_puts(b, ",");
		}
		render_buf_puts(b, "\n");
	}
	for (int s = 0; s < n; s++)
		free(pts[s]);
	free(pts);
	free(len);
	free(pos);
	free(steps);
}

/* ------------------------------------------------------------------- SVG */

#define SVG_W 760     /* drawing width */
#define SVG_TOP 48    /* the title block */
#define SVG_LEFT 80   /* room for the y tick labels */
#define SVG_RIGHT 24
#define SVG_PLOT_H 320
#define SVG_LEGEND 18 /* one legend row */

static const char *const svg_colors[CURVES_INKS] = { "#1f77b4", "#ff7f0e", "#2ca02c",
						     "#d62728", "#9467bd", "#8c564b" };

/* Text safe for XML: printable (utf8_printable), then escaped. */
static void xml_text(struct render_buf *b, const char *s)
{
	size_t n = strlen(s) * 4 + 1;
	char *c = xmalloc(n);
	utf8_printable(s, strlen(s), c, n);
	render_xml_escape(b, c);
	free(c);
}

/* Axes, grid lines and tick labels of the plot area. */
static void svg_axes(struct render_buf *b, const struct axis *xa, const struct axis *ya, bool any,
		     int pw)
{
	int y1 = SVG_TOP + SVG_PLOT_H;
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
			  "stroke=\"#000000\" stroke-width=\"1\"/>\n", SVG_LEFT, SVG_TOP, pw, SVG_PLOT_H);
	if (!any)
		return;
	struct ticks t;
	if (ya->log)
		ticks_log(ya, &t);
	else
		ticks_linear(ya, 6, false, &t);
	for (int i = 0; i < t.n; i++) {
		double y = y1 - ax_frac(ya, t.v[i]) * SVG_PLOT_H;
		render_buf_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n"
				  "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" "
				  "dominant-baseline=\"middle\">%s</text>\n",
				  SVG_LEFT, y, SVG_LEFT + pw, y, SVG_LEFT - 6, y, t.label[i]);
	}
	ticks_linear(xa, 8, true, &t);
	for (int i = 0; i < t.n; i++) {
		double x = SVG_LEFT + ax_frac(xa, t.v[i]) * pw;
		render_buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#dddddd\"/>\n"
				  "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
				  x, SVG_TOP, x, y1, x, y1 + 16, t.label[i]);
	}
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">"
			  "step</text>\n", SVG_LEFT + pw / 2, y1 + 32);
}

/* One series: a path (a missing point starts a new subpath), and a
 * circle at each point when it is sparse. */
static void svg_series(struct render_buf *b, const struct curve *c, int s, const struct axis *xa,
		       const struct axis *ya, int pw)
{
	const char *col = svg_colors[s % CURVES_INKS];
	int k = 0;
	for (int i = 0; i < c->n; i++)
		k += isfinite(c->step[i]) && drawable(c->value[i], ya->log);
	render_buf_printf(b, "<path class=\"series\" fill=\"none\" stroke=\"%s\" "
			  "stroke-width=\"1.5\" d=\"", col);
	bool pen = false;
	for (int i = 0; i < c->n; i++) {
		if (!isfinite(c->step[i]) || !drawable(c->value[i], ya->log)) {
			pen = false;
			continue;
		}
		double x = SVG_LEFT + ax_frac(xa, c->step[i]) * pw;
		double y = SVG_TOP + SVG_PLOT_H - ax_frac(ya, c->value[i]) * SVG_PLOT_H;
		render_buf_printf(b, "%s%.1f %.1f ", pen ? "L" : "M", x, y);
		pen = true;
	}
	render_buf_puts(b, "\"/>\n");
	if (k > pw / 8)
		return;
	for (int i = 0; i < c->n; i++)
		if (isfinite(c->step[i]) && drawable(c->value[i], ya->log))
			render_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
					  SVG_LEFT + ax_frac(xa, c->step[i]) * pw,
					  SVG_TOP + SVG_PLOT_H - ax_frac(ya, c->value[i]) * SVG_PLOT_H, col);
}

void curves_svg(const struct curves_plot_spec *sp, struct render_buf *b)
{
	bool log = curves_plot_is_log(sp);
	double x0, x1, y0, y1;
	bool any = data_range(sp->series, sp->n_series, log, &x0, &x1, &y0, &y1);
	struct axis xa, ya;
	ax_set(&xa, any ? x0 : 0, any ? x1 : 1, false);
	ax_set(&ya, any ? y0 : 0, any ? y1 : 1, log);
	int pw = SVG_W - SVG_LEFT - SVG_RIGHT;
	int h = SVG_TOP + SVG_PLOT_H + 48 + SVG_LEGEND * sp->n_series;
	render_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			  "viewBox=\"0 0 %d %d\" font-family=\"" RENDER_SVG_FONTS "\">\n",
			  SVG_W, h, SVG_W, h);
	render_buf_puts(b, "<title>");
	xml_text(b, sp->title ? sp->title : "training curves");
	render_buf_puts(b, "</title>\n");
	render_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
			  SVG_W, h);
	render_buf_puts(b, "<text x=\"10\" y=\"22\" font-size=\"14\" font-weight=\"bold\">");
	xml_text(b, sp->title ? sp->title : "training curves");
	render_buf_printf(b, "</text>\n<text x=\"10\" y=\"38\" font-size=\"11\" fill=\"#333333\">"
			  "y: %s scale</text>\n", log ? "log" : "linear");
	svg_axes(b, &xa, &ya, any, pw);
	for (int s = 0; s < sp->n_series; s++)
		svg_series(b, sp->series[s], s, &xa, &ya, pw);
	for (int s = 0; s < sp->n_series; s++) {
		int y = SVG_TOP + SVG_PLOT_H + 48 + SVG_LEGEND * s;
		render_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
				  "stroke-width=\"3\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" "
				  "dominant-baseline=\"middle\">", SVG_LEFT, y - 4, SVG_LEFT + 24, y - 4,
				  svg_colors[s % CURVES_INKS], SVG_LEFT + 32, y - 4);
		xml_text(b, sp->series[s]->name);
		render_buf_puts(b, "</text>\n");
	}
	render_buf_puts(b, "</svg>\n");
}
