/*
 * test_curves.c — training curves (curves.h) on hand-made series: where
 * braille dots land (a rising line, the extremes, a log scale, missing
 * points), every width from 1 to 200 staying inside its lines (run under
 * ASan by make test-asan), the heat strip's shading, CSV that reads back
 * the values, SVG whose tags balance, and training records that are
 * malformed or cut short failing with one line instead of crashing.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curves.h"
#include "render.h"
#include "utf8.h"

/* ------------------------------------------------------------ helpers */

/* A series of n points: step[i] = x0 + i * dx, value f(i). */
static void make(struct curve *c, const char *name, int n, double x0, double dx,
		 double (*f)(int i, int n))
{
	curve_init(c, name, n);
	for (int i = 0; i < n; i++) {
		c->step[i] = x0 + i * dx;
		c->value[i] = f(i, n);
	}
}

static double rising(int i, int n) { (void)n; return 1.0 + i; }
static double hump(int i, int n) { return sin(M_PI * i / (n - 1)) * 10 - 3; }

static void plot(const struct curve *const *series, int n, int w, int h, enum curves_scale sc,
		 bool ascii, struct curves_grid *g)
{
	struct curves_plot_spec sp = { .series = series, .n_series = n, .width = w, .height = h,
				       .scale = sc, .ascii = ascii };
	curves_plot(&sp, g);
}

static uint32_t cp_at(const struct curves_grid *g, int y, int x)
{
	return g->cell[(size_t)y * g->w + x].cp;
}

/* The plot area of a grid laid out without a title: R rows from the top,
 * from the column after the x axis corner (found in row R) to the edge. */
static int area_left(const struct curves_grid *g, int R)
{
	for (int x = 0; x < g->w; x++)
		if (cp_at(g, R, x) == 0x2514 || cp_at(g, R, x) == '+')
			return x + 1;
	fail_msg("no x axis corner on row %d", R);
	return 0;
}

/* Whether braille dot (px, py) of the plot area is set. */
static bool dot_at(const struct curves_grid *g, int left, int px, int py)
{
	static const uint8_t bit[2][4] = { { 0x01, 0x02, 0x04, 0x40 }, { 0x08, 0x10, 0x20, 0x80 } };
	uint32_t cp = cp_at(g, py / 4, left + px / 2);
	return cp >= 0x2800 && cp <= 0x28ff && ((cp - 0x2800) & bit[px % 2][py % 4]);
}

/* Whether the cell holding dot column px, row py is a marker (no dots). */
static bool marker_at(const struct curves_grid *g, int left, int px, int py)
{
	uint32_t cp = cp_at(g, py / 4, left + px / 2);
	return cp != ' ' && (cp < 0x2800 || cp > 0x28ff);
}

/* Display width of every line of s must be <= w; returns the lines. */
static int check_widths(const char *s, int w)
{
	int n = 0;
	while (s && *s) {
		const char *e = strchr(s, '\n');
		assert_non_null(e);
		char *line = strndup(s, (size_t)(e - s));
		if (render_width(line) > (w > 0 ? w : 0))
			fail_msg("line wider than %d: '%s'", w, line);
		free(line);
		s = e + 1;
		n++;
	}
	return n;
}

static char *text_of(const struct curves_grid *g)
{
	struct render_buf b;
	render_buf_init(&b);
	curves_grid_text(g, false, &b);
	return b.data ? b.data : strdup("");
}

/* --------------------------------------------------------------- plots */

/* A series rising linearly puts its dots in rows that climb (never drop)
 * from left to right, with a dot in every dot column: the line is joined. */
static void test_rising_line(void **state)
{
	struct curve c;
	make(&c, "up", 200, 0, 1, rising);
	const struct curve *s[] = { &c };
	struct curves_grid g;
	int R = 10;
	plot(s, 1, 60, R, CURVES_LINEAR, false, &g);
	int left = area_left(&g, R), NX = (g.w - left) * 2, NY = R * 4;
	int prev_lo = NY, prev_hi = NY;
	for (int px = 0; px < NX; px++) {
		int lo = -1, hi = NY;
		if (marker_at(&g, left, px, 0))
			continue; /* the last point's marker */
		for (int py = 0; py < NY; py++)
			if (dot_at(&g, left, px, py)) {
				lo = py > lo ? py : lo;
				hi = py < hi ? py : hi;
			}
		assert_true(lo >= 0);
		assert_true(lo <= prev_lo && hi <= prev_hi);
		prev_lo = lo;
		prev_hi = hi;
	}
	assert_true(dot_at(&g, left, 0, NY - 1)); /* the first point: bottom left */
	curves_grid_free(&g);
	curve_free(&c);
}

/* The smallest value lands on the bottom dot row, the largest on the top
 * one, whatever the series' sign. */
static void test_extremes(void **state)
{
	struct curve c;
	make(&c, "hump", 101, 10, 3, hump);
	c.value[100] = 0; /* the last point (its marker) is neither extreme */
	const struct curve *s[] = { &c };
	for (int R = 1; R <= 12; R += 11) {
		struct curves_grid g;
		plot(s, 1, 70, R, CURVES_LINEAR, false, &g);
		int left = area_left(&g, R), NX = (g.w - left) * 2, NY = R * 4;
		int top = NY, bottom = -1;
		for (int px = 0; px < NX; px++)
			for (int py = 0; py < NY; py++)
				if (dot_at(&g, left, px, py)) {
					top = py < top ? py : top;
					bottom = py > bottom ? py : bottom;
				}
		assert_int_equal(top, 0);
		assert_int_equal(bottom, NY - 1);
		/* the minimum (value -3) is the first point: bottom left */
		assert_true(dot_at(&g, left, 0, NY - 1));
		curves_grid_free(&g);
	}
	curve_free(&c);
}

/* On a log scale 1, 10 and 100 sit on evenly spaced rows, and those rows
 * carry the tick labels 1, 10 and 100. */
static void test_log_even(void **state)
{
	static const double v[] = { 1, 10, 100 };
	struct curve c;
	curve_init(&c, "decades", 3);
	for (int i = 0; i < 3; i++) {
		c.step[i] = i * 50;
		c.value[i] = v[i];
	}
	const struct curve *s[] = { &c };
	struct curves_plot_spec sp = { .series = s, .n_series = 1, .width = 40, .height = 9,
				       .scale = CURVES_AUTO };
	assert_true(curves_plot_is_log(&sp)); /* spans more than a decade */
	struct curves_grid g;
	curves_plot(&sp, &g);
	int left = area_left(&g, 9), rows[3];
	uint32_t mark = 0x25cf; /* ● */
	for (int i = 0, k = 0; i < 3; i++) {
		int col = i == 0 ? left : i == 1 ? left + (g.w - left) / 2 : g.w - 1;
		rows[k] = -1;
		for (int y = 0; y < 9; y++)
			for (int x = col - 1; x <= col && x < g.w; x++)
				if (cp_at(&g, y, x) == mark)
					rows[k] = y;
		assert_true(rows[k] >= 0);
		k++;
	}
	assert_int_equal(rows[0], 8);
	assert_int_equal(rows[2], 0);
	assert_int_equal(rows[0] - rows[1], rows[1] - rows[2]);
	char *t = text_of(&g);
	char *line = t;
	for (int y = 0; y < 9; y++) {
		const char *want = y == 0 ? "100 " : y == 4 ? " 10 " : y == 8 ? "  1 " : "    ";
		assert_memory_equal(line, want, 4);
		line = strchr(line, '\n') + 1;
	}
	free(t);
	curves_grid_free(&g);
	curve_free(&c);
	/* not for values <= 0, nor for less than a decade */
	curve_init(&c, "x", 2);
	c.step[1] = 1;
	c.value[0] = 0;
	c.value[1] = 100;
	assert_false(curves_plot_is_log(&sp));
	c.value[0] = 20;
	assert_false(curves_plot_is_log(&sp));
	curve_free(&c);
}

/* Missing points (NAN, infinite) are not drawn and break the line: no
 * dot in their columns, and the range comes from the finite values. */
static void test_nan_skipped(void **state)
{
	struct curve c;
	make(&c, "gap", 100, 0, 1, rising);
	for (int i = 40; i < 60; i++)
		c.value[i] = i % 2 ? NAN : INFINITY;
	c.value[10] = -INFINITY;
	const struct curve *s[] = { &c };
	struct curves_grid g;
	int R = 8;
	plot(s, 1, 50 + 5, R, CURVES_LINEAR, false, &g);
	int left = area_left(&g, R);
	assert_int_equal((g.w - left) * 2, 100); /* one dot column per step */
	for (int px = 0; px < 100; px++) {
		bool any = false;
		for (int py = 0; py < R * 4; py++)
			any |= dot_at(&g, left, px, py);
		if ((px >= 40 && px < 60) || px == 10)
			assert_false(any);
		else if (px < 98)
			assert_true(any);
	}
	assert_true(dot_at(&g, left, 0, R * 4 - 1)); /* 1: the smallest finite value */
	curves_grid_free(&g);

	/* nothing finite: the axes and "no data" */
	for (int i = 0; i < 100; i++)
		c.value[i] = NAN;
	plot(s, 1, 40, 6, CURVES_AUTO, false, &g);
	char *t = text_of(&g);
	assert_non_null(strstr(t, "no data"));
	free(t);
	curves_grid_free(&g);
	curve_free(&c);
}

/* One point, and a constant series, are drawn in the middle: one marker,
 * no dots, no crash. */
static void test_single_and_constant(void **state)
{
	struct curve c;
	curve_init(&c, "one", 1);
	c.step[0] = 7;
	c.value[0] = 3.5;
	const struct curve *s[] = { &c };
	struct curves_grid g;
	for (int sc = CURVES_AUTO; sc <= CURVES_LOG; sc++) {
		plot(s, 1, 41, 9, sc, false, &g);
		int left = area_left(&g, 9), marks = 0, my = -1;
		for (int y = 0; y < 9; y++)
			for (int x = left; x < g.w; x++)
				if (cp_at(&g, y, x) != ' ') {
					marks++;
					my = y;
				}
		assert_int_equal(marks, 1);
		assert_int_equal(my, 4);
		curves_grid_free(&g);
	}
	curve_free(&c);

	struct curve k;
	make(&k, "flat", 50, 0, 2, rising);
	for (int i = 0; i < 50; i++)
		k.value[i] = 0;
	s[0] = &k;
	plot(s, 1, 60, 5, CURVES_LINEAR, false, &g);
	int left = area_left(&g, 5);
	for (int px = 0; px < 2 * (g.w - left) - 2; px++)
		for (int py = 0; py < 20; py++)
			if (dot_at(&g, left, px, py))
				assert_true(py == 9 || py == 10);
	curves_grid_free(&g);
	curve_free(&k);
}

/* The legend names every series after its marker; ASCII uses ASCII
 * markers and no braille. */
static void test_legend_ascii(void **state)
{
	struct curve a, b;
	make(&a, "train loss", 300, 1, 1, rising);
	make(&b, "val loss", 12, 25, 25, rising);
	const struct curve *s[] = { &a, &b };
	struct curves_grid g;
	plot(s, 2, 80, 10, CURVES_AUTO, false, &g);
	char *t = text_of(&g);
	assert_non_null(strstr(t, "\u25cf train loss  \u25a0 val loss"));
	free(t);
	curves_grid_free(&g);
	plot(s, 2, 80, 10, CURVES_AUTO, true, &g);
	t = text_of(&g);
	assert_non_null(strstr(t, "* train loss  o val loss"));
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		assert_true(*p < 0x80);
	free(t);
	curves_grid_free(&g);
	curve_free(&a);
	curve_free(&b);
}

/* ------------------------------------------------------------- sizes */

static double wild(int i, int n)
{
	static const double v[] = { 1e308, -1e308, 1e-300, 0, -5, 2, NAN, INFINITY, 3e-320, 7 };
	(void)n;
	return v[i % 10];
}

/* Every width from 1 to 200 (and heights 0 to 4 and 16): lines never wider
 * than the width, for awkward series (empty, one point, constant,
 * extreme and missing values) in braille and ASCII, plots and strips.
 * Under ASan this is also the check that no cell is written outside. */
static void test_every_width(void **state)
{
	struct curve c[6];
	char wide[128] = "x"; /* double-width characters at odd and (below) even columns */
	for (int i = 0; i < 20; i++)
		strcat(wide, "\xe5\xba\x8a");
	make(&c[0], "wild", 40, -1e15, 7e13, wild);
	make(&c[1], "one", 1, 5, 1, rising);
	make(&c[2], "empty", 0, 0, 1, rising);
	make(&c[3], "\xe5\xba\x8a\xe5\x89\x8d \xff long name that wraps", 30, 0, 1, rising);
	make(&c[4], "huge steps", 30, 1e300, 1e298, rising);
	make(&c[5], wide, 3, 0, 1, rising);
	const struct curve *s[] = { &c[0], &c[1], &c[2], &c[3], &c[4], &c[5] };
	static const int heights[] = { 0, 1, 2, 3, 4, 16 };
	for (int w = 1; w <= 200; w++)
		for (int hi = 0; hi < 6; hi++)
			for (int ascii = 0; ascii < 2; ascii++)
				for (int sc = CURVES_AUTO; sc <= CURVES_LOG; sc++) {
					struct curves_plot_spec sp = {
						.series = s, .n_series = 6, .width = w,
						.height = heights[hi], .scale = sc, .ascii = ascii,
						.title = hi % 2 ? "a title long enough to wrap" : hi ? wide : NULL,
					};
					struct curves_grid g;
					curves_plot(&sp, &g);
					char *t = text_of(&g);
					assert_int_equal(check_widths(t, w), g.h);
					free(t);
					curves_grid_free(&g);
					if (hi || sc != CURVES_AUTO)
						continue;
					struct curves_heat_spec hs = { .rows = s, .n_rows = 6, .width = w,
								       .log = w % 2, .ascii = ascii,
								       .title = "strip" };
					curves_heat(&hs, &g);
					t = text_of(&g);
					assert_int_equal(check_widths(t, w), g.h);
					assert_int_equal(g.h, curves_heat_rows(&hs));
					free(t);
					curves_grid_free(&g);
				}
	for (int i = 0; i < 6; i++)
		curve_free(&c[i]);
}

/* --------------------------------------------------------- heat strip */

static double grows(int i, int n) { return 0.1 * pow(100, (double)i / (n - 1)); }
static double ones(int i, int n) { (void)i; (void)n; return 1; }

/* Rows are the series; a row rising over two decades goes from the
 * lightest shade to the darkest without ever getting lighter; a constant
 * row keeps one shade; the scale line names where each shade starts. */
static void test_heat_strip(void **state)
{
	struct curve c[2];
	make(&c[0], "layer 0", 500, 1, 1, grows);
	make(&c[1], "layer 1", 500, 1, 1, ones);
	const struct curve *s[] = { &c[0], &c[1] };
	for (int ascii = 0; ascii < 2; ascii++) {
		struct curves_heat_spec hs = { .rows = s, .n_rows = 2, .width = 70, .log = true,
					       .ascii = ascii };
		struct curves_grid g;
		curves_heat(&hs, &g);
		int ns = ascii ? 9 : 4, last = 0, x0 = 9;
		float first1 = g.cell[(size_t)1 * g.w + x0].heat;
		for (int x = x0; x < g.w; x++) {
			const struct curves_cell *a = &g.cell[x], *b = &g.cell[(size_t)g.w + x];
			assert_int_equal(a->ink, CURVES_HEAT);
			int k = (int)lroundf(a->heat * ns);
			assert_true(k >= last);
			last = k;
			assert_true(b->heat == first1);
		}
		assert_int_equal(lroundf(g.cell[x0].heat * ns), 1);
		assert_int_equal(last, ns);
		char *t = text_of(&g);
		assert_non_null(strstr(t, "layer 0 "));
		assert_non_null(strstr(t, ascii ? "scale (log):  '.' >=0.1" : "scale (log):  '\u2591' >=0.1"));
		const char *mx = strstr(t, "max ");
		assert_non_null(mx);
		assert_true(atof(mx + 4) > 9.5 && atof(mx + 4) <= 10); /* the last bucket's mean */
		free(t);
		curves_grid_free(&g);
	}
	curve_free(&c[0]);
	curve_free(&c[1]);
}

/* ---------------------------------------------------------- CSV, SVG */

static double halves(int i, int n) { (void)n; return 0.5 * i + 0.125; }

/* CSV has the header, one row per step of any series in ascending order,
 * and reads back every value (an empty cell where a series has none). */
static void test_csv_roundtrip(void **state)
{
	struct curve a, b;
	make(&a, "train loss", 10, 1, 1, halves);          /* steps 1..10 */
	make(&b, "val, \"quoted\"", 6, 2, 2, halves);       /* steps 2..12 */
	b.value[2] = NAN;                                    /* step 6 */
	const struct curve *s[] = { &a, &b };
	struct render_buf out;
	render_buf_init(&out);
	curves_csv(s, 2, &out);
	const char *p = out.data;
	const char *hdr = "step,train loss,\"val, \"\"quoted\"\"\"\n";
	assert_memory_equal(p, hdr, strlen(hdr));
	p += strlen(hdr);
	int rows = 0;
	for (int step = 1; step <= 12; step++) {
		if (step == 11)
			continue; /* neither series has it */
		rows++;
		char *end;
		assert_int_equal((int)strtol(p, &end, 10), step);
		p = end;
		for (int k = 0; k < 2; k++) {
			const struct curve *c = s[k];
			assert_int_equal(*p, ',');
			p++;
			double want = NAN;
			for (int i = 0; i < c->n; i++)
				if (c->step[i] == step)
					want = c->value[i];
			if (isnan(want)) {
				assert_true(*p == ',' || *p == '\n');
				continue;
			}
			double got = strtod(p, &end);
			assert_true(end > p && fabs(got - want) <= 1e-9 * fabs(want));
			p = end;
		}
		assert_int_equal(*p, '\n');
		p++;
	}
	assert_int_equal(*p, '\0');
	assert_int_equal(rows, 11);
	render_buf_free(&out);
	curve_free(&a);
	curve_free(&b);
}

/* Tags balance (every open tag closed in order, or self-closed), there is
 * one <path> per series, and names with markup characters are escaped. */
static void test_svg_wellformed(void **state)
{
	struct curve c[3];
	make(&c[0], "a <b> & 'c'", 300, 1, 1, rising);
	make(&c[1], "val", 12, 25, 25, hump);
	make(&c[2], "nothing", 0, 0, 1, rising);
	c[0].value[100] = NAN;
	const struct curve *s[] = { &c[0], &c[1], &c[2] };
	struct curves_plot_spec sp = { .series = s, .n_series = 3, .scale = CURVES_AUTO,
				       .title = "title \"x\" <y>" };
	struct render_buf out;
	render_buf_init(&out);
	curves_svg(&sp, &out);
	char stack[64][32];
	int depth = 0, paths = 0;
	for (const char *p = out.data; (p = strchr(p, '<')); p++) {
		const char *e = strchr(p, '>');
		assert_non_null(e);
		bool close = p[1] == '/', self = e[-1] == '/';
		char name[32];
		size_t k = strcspn(p + 1 + close, " />");
		assert_true(k > 0 && k < sizeof name);
		memcpy(name, p + 1 + close, k);
		name[k] = '\0';
		paths += !close && !strcmp(name, "path");
		if (close) {
			assert_true(depth > 0);
			assert_string_equal(stack[--depth], name);
		} else if (!self) {
			assert_true(depth < 64);
			strcpy(stack[depth++], name);
		}
		for (const char *q = p + 1; q < e; q++)
			assert_true(*q != '<'); /* no markup inside a tag */
	}
	assert_int_equal(depth, 0);
	assert_int_equal(paths, 3);
	assert_non_null(strstr(out.data, "a &lt;b&gt; &amp; &apos;c&apos;"));
	assert_non_null(strstr(out.data, "<svg "));
	render_buf_free(&out);
	for (int i = 0; i < 3; i++)
		curve_free(&c[i]);
}

/* ---------------------------------------------------------- records */

static const char record[] =
	"{\"command\":\"attnscope train\",\"steps\":7,\"steps_done\":7,"
	"\"final_train_loss\":2.5,\"final_val_loss\":null,"
	"\"history\":{\"every\":3,\"step\":[1,4,7],\"loss\":[4.5,3.25,null],"
	"\"lr\":[0.001,0.002,0.003],\"grad_norm\":[1.5,1,0.5],"
	"\"layer_grad_norm\":[[1,2],[3,4],[5,null]]},"
	"\"val\":{\"step\":[5],\"loss\":[3.5]}}";

/* A record reads into its series: names, steps, values (null -> NAN),
 * the layers, and the numbers around them. */
static void test_parse(void **state)
{
	struct curves_record r;
	struct err e = { "" };
	assert_int_equal(curves_parse(record, strlen(record), &r, &e), 0);
	assert_string_equal(r.loss.name, "train loss");
	assert_int_equal(r.loss.n, 3);
	assert_true(r.loss.step[2] == 7 && r.loss.value[1] == 3.25 && isnan(r.loss.value[2]));
	assert_true(r.lr.n == 3 && r.lr.value[2] == 0.003);
	assert_true(r.grad.n == 3 && r.grad.value[0] == 1.5);
	assert_int_equal(r.n_layer, 2);
	assert_string_equal(r.layer[1].name, "layer 1");
	assert_true(r.layer[1].value[1] == 4 && isnan(r.layer[1].value[2]));
	assert_true(r.val.n == 1 && r.val.step[0] == 5 && r.val.value[0] == 3.5);
	assert_true(r.every == 3 && r.steps == 7 && r.steps_done == 7);
	assert_true(r.final_train_loss == 2.5 && isnan(r.final_val_loss));
	char d[128];
	curves_describe(&r, true, d, sizeof d);
	assert_string_equal(d, "7 steps, every 3rd stored; val 1 time");
	curves_record_free(&r);

	/* only the required parts */
	const char *min = "{\"history\":{\"step\":[],\"loss\":[]}}";
	assert_int_equal(curves_parse(min, strlen(min), &r, &e), 0);
	assert_true(r.loss.n == 0 && r.val.n == 0 && r.n_layer == 0 && r.every == 1);
	curves_record_free(&r);
}

/* Malformed records and every truncation of a good one fail with one
 * line (no crash, nothing left allocated for the caller to free). */
static void test_parse_errors(void **state)
{
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ "", "invalid JSON" },
		{ "[1,2]", "not a JSON object" },
		{ "{}", "no \"history\" object" },
		{ "{\"history\":[]}", "no \"history\" object" },
		{ "{\"history\":{\"loss\":[]}}", "history.step is missing" },
		{ "{\"history\":{\"step\":[1],\"loss\":[1,2]}}", "history.loss has 2 values for 1 steps" },
		{ "{\"history\":{\"step\":[null],\"loss\":[1]}}", "history.step[0] is not a step number" },
		{ "{\"history\":{\"step\":[1],\"loss\":[\"x\"]}}", "history.loss[0] is not a number" },
		{ "{\"history\":{\"step\":[1],\"loss\":1}}", "history.loss is not an array" },
		{ "{\"history\":{\"step\":[1,2],\"loss\":[1,2],\"layer_grad_norm\":[[1],[1,2]]}}",
		  "history.layer_grad_norm[1] is not a row of 1 numbers" },
		{ "{\"history\":{\"step\":[1],\"loss\":[1]},\"val\":{\"step\":[1]}}", "val.loss is missing" },
		{ "{\"history\":{\"step\":[1],\"loss\":[1]},\"val\":3}", "\"val\" is not an object" },
		{ "{\"a\":\"\x01\n\"}", "invalid JSON" },
	};
	struct curves_record r;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct err e = { "" };
		assert_int_equal(curves_parse(bad[i].json, strlen(bad[i].json), &r, &e), -1);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("'%s': got '%s'", bad[i].json, e.msg);
		assert_null(strchr(e.msg, '\n'));
		assert_true(r.loss.n == 0 && !r.layer && !r.loss.step);
	}
	for (size_t len = 0; len < sizeof record - 1; len++) {
		struct err e = { "" };
		assert_int_equal(curves_parse(record, len, &r, &e), -1);
		assert_true(e.msg[0] && !strchr(e.msg, '\n'));
	}
}

/* Wrapped text keeps words whole and lines within the width. */
static void test_wrap(void **state)
{
	struct render_buf b;
	render_buf_init(&b);
	curves_wrap("shakespeare: final train loss 1.4494 (the mean of the last 10% of steps)", 20, &b);
	assert_string_equal(b.data, "shakespeare: final\ntrain loss 1.4494\n(the mean of the\n"
				    "last 10% of steps)\n");
	render_buf_free(&b);
}

int main(void)
{
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rising_line),
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_log_even),
		cmocka_unit_test(test_nan_skipped),
		cmocka_unit_test(test_single_and_constant),
		cmocka_unit_test(test_legend_ascii),
		cmocka_unit_test(test_every_width),
		cmocka_unit_test(test_heat_strip),
		cmocka_unit_test(test_csv_roundtrip),
		cmocka_unit_test(test_svg_wellformed),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
