/*
 * export-lab.c — `export lab`: the last `lab` experiment of the session
 * (s->lab, lab.h) as a plot of its arms (export.h): the table's columns
 * the experiment names (struct lab_plot) as horizontal bars, one group per
 * arm with the value printed at each bar's end, on a linear axis from 0 or
 * a logarithmic one; and, for experiments that train, every arm's
 * training loss by step (curves.h), then the findings.
 *
 * txt / ascii: the table, the bars in block characters, the curves as a
 * braille (ASCII) plot, the findings; csv: one row per bar and per curve
 * point ("arm","measure","step","value"); json: the lab run's record
 * (table, findings, curves); svg: the figure.
 */
#include "export.h"
#include "export-parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curves.h"
#include "lab.h"

#define MAX_ARMS 16
#define MAX_VALS 4

/* The table's plotted numbers. */
struct bars {
	int n_arms, n_vals;
	char arm[MAX_ARMS][96];
	const char *measure[MAX_VALS];  /* column names (the plot spec's strings) */
	double v[MAX_ARMS][MAX_VALS];   /* NAN: no number there */
	double lo, hi;                  /* axis range */
	double step;                    /* linear: between ticks */
	bool log;
};

static int column(const struct lab_table *t, const char *name)
{
	for (int j = 0; j < t->cols; j++)
		if (!strcmp(t->cells[j], name))
			return j;
	return -1;
}

/* The number a cell holds, or NAN ("-", "", "3 of 4"). */
static double number(const char *cell)
{
	char *end;
	double v = strtod(cell, &end);
	return end != cell && *end == '\0' && isfinite(v) ? v : NAN;
}

/* The tick step of a linear axis from 0 to hi: 1, 2 or 5 times a power
 * of ten, the smallest that needs at most 8 ticks. */
static double nice_step(double hi)
{
	double p = pow(10, floor(log10(hi)) - 1);
	static const double m[] = { 1, 2, 5, 10, 20, 50, 100 };
	for (size_t i = 0; i < sizeof m / sizeof *m; i++)
		if (hi / (m[i] * p) <= 8)
			return m[i] * p;
	return 100 * p;
}

/* A round axis for [lo, hi]: from 0 (linear) or the decade below lo
 * (log) to the round value or decade above hi. */
static void axis(struct bars *b)
{
	double lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < b->n_arms; i++)
		for (int k = 0; k < b->n_vals; k++)
			if (isfinite(b->v[i][k]) && (!b->log || b->v[i][k] > 0)) {
				lo = fmin(lo, b->v[i][k]);
				hi = fmax(hi, b->v[i][k]);
			}
	if (!isfinite(lo)) {
		b->lo = b->log ? 1 : 0;
		b->hi = b->log ? 10 : 1;
		return;
	}
	if (b->log) {
		b->lo = pow(10, floor(log10(lo)));
		b->hi = pow(10, ceil(log10(hi)));
		if (b->hi <= b->lo)
			b->hi = b->lo * 10;
		return;
	}
	b->lo = 0;
	b->step = nice_step(hi > 0 ? hi : 1);
	b->hi = ceil(hi / b->step) * b->step;
	if (b->hi <= 0)
		b->hi = b->step;
}

static void bars_of(const struct lab_result *r, const struct lab_plot *p, struct bars *b)
{
	const struct lab_table *t = &r->table;
	memset(b, 0, sizeof *b);
	b->log = p->log;
	int lab[4], n_lab = 0;
	for (int k = 0; k < 4 && p->labels[k]; k++)
		if ((lab[n_lab] = column(t, p->labels[k])) >= 0)
			n_lab++;
	int val[MAX_VALS];
	for (int k = 0; k < MAX_VALS && p->values[k]; k++)
		if ((val[b->n_vals] = column(t, p->values[k])) >= 0)
			b->measure[b->n_vals++] = p->values[k];
	for (int i = 1; i < t->rows && b->n_arms < MAX_ARMS; i++) {
		char *name = b->arm[b->n_arms];
		size_t len = 0;
		for (int k = 0; k < n_lab; k++) {
			const char *c = t->cells[(size_t)i * t->cols + lab[k]];
			const char *h = t->cells[lab[k]];
			len += (size_t)snprintf(name + len, sizeof b->arm[0] - len, "%s%s%s%s",
						len ? ", " : "", isnan(number(c)) ? "" : h,
						isnan(number(c)) ? "" : " ", c);
			if (len >= sizeof b->arm[0])
				break;
		}
		for (int k = 0; k < b->n_vals; k++)
			b->v[b->n_arms][k] = number(t->cells[(size_t)i * t->cols + val[k]]);
		b->n_arms++;
	}
	axis(b);
}

/* Where v falls on the axis, 0..1. */
static double frac(const struct bars *b, double v)
{
	double f = b->log ? (log10(v) - log10(b->lo)) / (log10(b->hi) - log10(b->lo))
			  : (v - b->lo) / (b->hi - b->lo);
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* A value as the bars print it: 4 significant digits. */
static void shown(double v, char *buf, size_t size)
{
	snprintf(buf, size, "%.4g", v);
}

/* ------------------------------------------------------------------ text */

#define TEXT_BAR 40 /* columns of the longest bar */

static void lab_text(const struct session *s, const struct lab_experiment *x, const struct bars *b,
		     bool ascii, struct render_buf *out)
{
	const struct lab_result *r = &s->lab;
	const struct lab_table *t = &r->table;
	render_buf_printf(out, "lab %s (%s)%s: %s\n", x->name, r->quick ? "quick" : "full",
			  r->partial ? ", stopped early" : "", x->claim);
	int w[16] = { 0 }; /* as `lab` prints it: columns as wide as their widest cell */
	for (int j = 0; j < t->cols && j < 16; j++)
		for (int i = 0; i < t->rows; i++) {
			int n = render_width(t->cells[(size_t)i * t->cols + j]);
			w[j] = n > w[j] ? n : w[j];
		}
	for (int i = 0; i < t->rows; i++) {
		render_buf_puts(out, " ");
		for (int j = 0; j < t->cols && j < 16; j++) {
			render_buf_puts(out, " ");
			render_pad(out, t->cells[(size_t)i * t->cols + j], w[j],
				   j ? RENDER_RIGHT : RENDER_LEFT, ascii);
		}
		render_buf_puts(out, "\n");
	}
	int aw = 1, mw = 1;
	for (int i = 0; i < b->n_arms; i++)
		aw = render_width(b->arm[i]) > aw ? render_width(b->arm[i]) : aw;
	for (int k = 0; k < b->n_vals; k++)
		mw = render_width(b->measure[k]) > mw ? render_width(b->measure[k]) : mw;
	render_buf_printf(out, "\n%s, %s axis from %g:\n", x->plot.axis, b->log ? "log" : "linear",
			  b->lo);
	for (int i = 0; i < b->n_arms; i++)
		for (int k = 0; k < b->n_vals; k++) {
			render_buf_puts(out, "  ");
			render_pad(out, k ? "" : b->arm[i], aw, RENDER_LEFT, ascii);
			render_buf_puts(out, "  ");
			render_pad(out, b->measure[k], mw, RENDER_LEFT, ascii);
			double v = b->v[i][k];
			if (isnan(v)) {
				render_buf_puts(out, "  -\n");
				continue;
			}
			char num[32];
			shown(v, num, sizeof num);
			int n = (int)(frac(b, v) * TEXT_BAR + 0.5);
			render_buf_puts(out, "  ");
			render_buf_repeat(out, ascii ? "#" : "\u2588", n);
			render_buf_printf(out, "%s%s\n", n ? " " : "", num);
		}
	if (r->n_curves) {
		const struct curve *c[LAB_MAX_CURVES];
		for (int i = 0; i < r->n_curves; i++)
			c[i] = &r->curves[i];
		struct curves_plot_spec sp = {
			.series = c, .n_series = r->n_curves, .width = 80, .height = 12,
			.scale = CURVES_LINEAR, .ascii = ascii,
			.title = "training loss of each arm, by step",
		};
		struct curves_grid g;
		curves_plot(&sp, &g);
		render_buf_puts(out, "\n");
		curves_grid_text(&g, false, out);
		curves_grid_free(&g);
	}
	for (int i = 0; i < r->n_findings; i++) {
		render_buf_puts(out, i ? "- " : "\n- ");
		render_wrap(out, r->findings[i], 2, 2, 80);
	}
}

static void lab_csv(const struct lab_result *r, const struct bars *b, struct render_buf *out)
{
	render_buf_puts(out, "\"arm\",\"measure\",\"step\",\"value\"\n");
	for (int i = 0; i < b->n_arms; i++)
		for (int k = 0; k < b->n_vals; k++)
			if (!isnan(b->v[i][k])) {
				ex_csv_quoted(out, b->arm[i]);
				render_buf_puts(out, ",");
				ex_csv_quoted(out, b->measure[k]);
				render_buf_printf(out, ",,%.9g\n", b->v[i][k]);
			}
	for (int i = 0; i < r->n_curves; i++)
		for (int k = 0; k < r->curves[i].n; k++) {
			ex_csv_quoted(out, r->curves[i].name);
			render_buf_printf(out, ",\"training loss\",%.0f,%.9g\n", r->curves[i].step[k],
					  r->curves[i].value[k]);
		}
}

/* ------------------------------------------------------------------- svg */

static const char *const bar_colors[MAX_VALS] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd" };

#define BAR_H 16
#define BAR_GAP 3
#define GROUP_GAP 14

/* The bars at y in a drawing w wide; their height. */
static int svg_bars(struct render_buf *o, const struct lab_experiment *x, const struct bars *b,
		    int y, int w)
{
	int aw = 0;
	for (int i = 0; i < b->n_arms; i++)
		aw = ex_text_px(render_width(b->arm[i]), 12) > aw ? ex_text_px(render_width(b->arm[i]), 12)
								   : aw;
	int x0 = 20 + aw + 10, pw = w - x0 - 90, yy = y + 24;
	render_buf_printf(o, "<text x=\"20\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", y + 14);
	ex_xml_text(o, x->plot.axis);
	render_buf_printf(o, " (%s axis)</text>\n", b->log ? "log" : "linear");
	for (int i = 0; i < b->n_arms; i++) {
		int gy = yy;
		for (int k = 0; k < b->n_vals; k++, yy += BAR_H + BAR_GAP) {
			double v = b->v[i][k];
			if (isnan(v) || (b->log && v <= 0))
				continue;
			int len = (int)(frac(b, v) * pw + 0.5);
			char num[32];
			shown(v, num, sizeof num);
			render_buf_printf(o, "<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
					  "fill=\"%s\"><title>", x0, yy, len > 1 ? len : 1, BAR_H,
					  bar_colors[k]);
			ex_xml_text(o, b->arm[i]);
			render_buf_puts(o, ", ");
			ex_xml_text(o, b->measure[k]);
			render_buf_printf(o, ": %s</title></rect>\n<text x=\"%d\" y=\"%d\" font-size=\"11\">%s"
					  "</text>\n", num, x0 + len + 4, yy + BAR_H - 4, num);
		}
		render_buf_printf(o, "<text class=\"arm\" x=\"%d\" y=\"%d\" font-size=\"12\" "
				  "text-anchor=\"end\">", x0 - 8, gy + (yy - gy) / 2 + 2);
		ex_xml_text(o, b->arm[i]);
		render_buf_puts(o, "</text>\n");
		yy += GROUP_GAP;
	}
	/* the axis: ticks at decades (log) or fifths of the range (linear) */
	render_buf_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", x0,
			  y + 20, x0, yy);
	render_buf_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", x0, yy,
			  x0 + pw, yy);
	/* log: every k-th decade, at most 8 ticks */
	int decades = b->log ? (int)(log10(b->hi / b->lo) + 0.5) : 0, every = (decades + 7) / 8;
	int ticks = b->log ? decades / (every ? every : 1) : (int)(b->hi / b->step + 0.5);
	for (int k = 0; k <= ticks; k++) {
		double v = b->log ? b->lo * pow(10, k * every) : b->step * k;
		int tx = x0 + (int)(frac(b, v) * pw + 0.5);
		render_buf_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>"
				  "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
				  tx, yy, tx, yy + 4, tx, yy + 16, v);
	}
	yy += 26;
	for (int k = 0; k < b->n_vals; k++) { /* which colour is which column */
		int lx = x0 + k * 220;
		render_buf_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"%s\"/>"
				  "<text x=\"%d\" y=\"%d\" font-size=\"12\">", lx, yy, bar_colors[k], lx + 20,
				  yy + 11);
		ex_xml_text(o, b->measure[k]);
		render_buf_puts(o, "</text>\n");
	}
	return yy + 20 - y;
}

/* The curves (curves_svg's drawing, nested) at y; their height. */
static int svg_curves(struct render_buf *o, const struct lab_result *r, int y)
{
	if (!r->n_curves)
		return 0;
	const struct curve *c[LAB_MAX_CURVES];
	for (int i = 0; i < r->n_curves; i++)
		c[i] = &r->curves[i];
	struct curves_plot_spec sp = {
		.series = c, .n_series = r->n_curves, .scale = CURVES_LINEAR,
		.title = "Training loss of each arm, by step",
	};
	render_buf_printf(o, "<g class=\"curves\" transform=\"translate(0 %d)\">\n", y);
	curves_svg(&sp, o);
	render_buf_puts(o, "</g>\n");
	return 48 + 320 + 48 + 18 * r->n_curves; /* curves.c's SVG_TOP, plot, axis and legend */
}

static void lab_svg(const struct session *s, const struct lab_experiment *x, const struct bars *b,
		    struct render_buf *out)
{
	const struct lab_result *r = &s->lab;
	int w = 900;
	struct render_buf body;
	render_buf_init(&body);
	int h = svg_bars(&body, x, b, 0, w);
	h += svg_curves(&body, r, h + 10) + 10;
	if (r->n_findings) {
		render_buf_printf(&body, "<text x=\"20\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">"
				  "What the numbers say</text>\n", h + 20);
		h += 30;
		for (int i = 0; i < r->n_findings; i++) {
			char line[1100];
			snprintf(line, sizeof line, "\u2022 %s", r->findings[i]);
			h += 16 * ex_svg_wrapped(&body, 20, h + 12, 13, w - 40, line, true) + 4;
		}
	}
	char heading[256], sub[1200];
	snprintf(heading, sizeof heading, "lab %s: %s", x->name, x->claim);
	snprintf(sub, sizeof sub, "What was run (%s size%s): %s, on this machine. Bars: the table's "
		 "columns, one group per arm, the number at each bar's end.%s", r->quick ? "quick" : "full",
		 r->partial ? ", stopped early" : "", x->measures,
		 r->n_curves ? " Lines: each arm's training loss by step." : "");
	ex_svg_figure(out, w, h + 10, heading, heading, sub, &body);
	render_buf_free(&body);
}

int export_lab(const struct session *s, const struct export_req *r, enum export_format f,
	       struct render_buf *out, struct err *e)
{
	(void)r;
	const struct lab_experiment *x = s->lab.table.rows ? lab_find(s->lab_name) : NULL;
	if (!x)
		return err_set(e, "export lab: no lab experiment has run in this session (try: lab "
			       "heads --quick)");
	if (f == EXPORT_PNG)
		return err_set(e, "export lab: png is made from the svg (export_run)");
	struct bars b;
	bars_of(&s->lab, &x->plot, &b);
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV:
		lab_csv(&s->lab, &b, out);
		break;
	case EXPORT_JSON:
		render_buf_puts(out, s->lab.json ? s->lab.json : "{}");
		render_buf_puts(out, "\n");
		break;
	case EXPORT_SVG:
		lab_svg(s, x, &b, out);
		break;
	default:
		lab_text(s, x, &b, f == EXPORT_ASCII, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	return 0;
}
