/*
 * tui-curves.c — the curves view: the loaded model's training curves
 * (curves.h) from the record in its file, the loss (train and val) by
 * default, and below it the gradient norm of each layer as a heat strip
 * when there is room for both.  c cycles the curve (loss, learning rate,
 * gradient norm), y the y scale (automatic, log, linear).  The record is
 * read again at each redraw (about a millisecond for the shipped models).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curves.h"
#include "utf8.h"

#define PLOT_MIN_ROWS 8 /* the strip is left out before the plot gets fewer rows */

static const char *const curve_names[] = { "loss", "learning rate", "gradient norm" };
static const char *const scale_names[] = { "auto", "log", "linear" };

/* The curves view's own state. */
struct curves_view {
	int what;  /* the curve: 0 loss, 1 learning rate, 2 grad norm */
	int scale; /* its y scale: 0 automatic, 1 log, 2 linear */
};

static void *curves_init(struct tui_state *t)
{
	(void)t;
	return xcalloc(1, sizeof(struct curves_view));
}

/* Series colours: the roles with a colour of their own. */
static const enum tui_role ink_roles[] = { TUI_ROLE_HINT, TUI_ROLE_LABEL, TUI_ROLE_GROUP,
					   TUI_ROLE_ABLATED };

/* Draws a laid-out grid with its top-left corner at (y, x). */
static void put_grid(const struct curves_grid *g, int y, int x)
{
	for (int r = 0; r < g->h; r++)
		for (int c = 0; c < g->w; c++) {
			const struct curves_cell *cell = &g->cell[(size_t)r * g->w + c];
			if (cell->cp == ' ' || cell->cp == 0)
				continue;
			char u[8];
			u[utf8_encode(cell->cp, u)] = '\0';
			if (cell->ink == CURVES_HEAT)
				tui_heat_glyph(y + r, x + c, u, cell->heat, false);
			else
				tui_put(y + r, x + c, 2, u, 0,
					cell->ink >= 0 ? ink_roles[cell->ink % 4] : TUI_ROLE_NONE);
		}
}

/* A line in the middle of r. */
static void note(const struct tui_rect *r, const char *msg)
{
	tui_put(r->y + r->h / 2, r->x + 2, r->w - 2, msg, TUI_A_BOLD, TUI_ROLE_NONE);
}

/* The heading: what is drawn, then how it was kept when that fits. */
static void heading(struct tui_state *t, const struct curves_view *cv, const struct tui_rect *r,
		    const struct curves_record *rec, bool log)
{
	const struct model *m = t->s->model;
	int x = r->x + tui_printf(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL, "%s: %s by step%s",
				  m->name ? m->name : "the model", curve_names[cv->what],
				  log ? ", log y" : "");
	char kept[128], more[192];
	curves_describe(rec, cv->what == 0, kept, sizeof kept);
	snprintf(more, sizeof more, "  (%s; c: curve, y: scale %s)", kept,
		 scale_names[cv->scale]);
	if (render_width(more) > r->x + r->w - x) /* the keys at least */
		snprintf(more, sizeof more, "  (c: curve, y: scale %s)", scale_names[cv->scale]);
	if (render_width(more) <= r->x + r->w - x)
		tui_put(r->y, x, r->x + r->w - x, more, TUI_A_DIM, TUI_ROLE_NONE);
}

/* The strip of per-layer gradient norms at the bottom of r, when the plot
 * keeps PLOT_MIN_ROWS rows; returns the rows it took. */
static int strip(const struct tui_rect *r, const struct curves_record *rec, bool ascii,
		 int plot_extra)
{
	if (rec->n_layer == 0)
		return 0;
	const struct curve **rows = xmalloc((size_t)rec->n_layer * sizeof *rows);
	for (int l = 0; l < rec->n_layer; l++)
		rows[l] = &rec->layer[l];
	struct curves_heat_spec hs = { .rows = rows, .n_rows = rec->n_layer, .width = r->w,
				       .log = true, .ascii = ascii };
	int need = curves_heat_rows(&hs) + 2; /* a blank row and the heading */
	if (r->h - need - plot_extra < PLOT_MIN_ROWS) {
		free(rows);
		return 0;
	}
	int y = r->y + r->h - need + 1;
	tui_put(y, r->x, r->w, "gradient norm of each layer by step (log shading)", TUI_A_BOLD,
		TUI_ROLE_LABEL);
	struct curves_grid g;
	curves_heat(&hs, &g);
	put_grid(&g, y + 1, r->x);
	curves_grid_free(&g);
	free(rows);
	return need;
}

static void curves_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	const struct curves_view *cv = data;
	const struct model *m = t->s->model;
	if (!m) {
		note(r, "No model loaded.  Press : and type  load NAME  (e.g. load shakespeare).");
		return;
	}
	struct curves_record rec;
	struct err e;
	if (!m->train_meta) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s has no training history (it was not trained by attnscope).",
			 m->name ? m->name : "The model");
		note(r, msg);
		return;
	}
	if (curves_parse(m->train_meta, strlen(m->train_meta), &rec, &e)) {
		note(r, e.msg);
		return;
	}
	if (rec.loss.n == 0) {
		note(r, "The training record has no steps.");
		curves_record_free(&rec);
		return;
	}
	const struct curve *series[2] = { &rec.loss, &rec.val };
	int n = 1;
	if (cv->what == 0 && rec.val.n)
		n = 2;
	else if (cv->what > 0)
		series[0] = cv->what == 1 ? &rec.lr : &rec.grad;
	static const enum curves_scale scales[] = { CURVES_AUTO, CURVES_LOG, CURVES_LINEAR };
	struct curves_plot_spec sp = {
		.series = series, .n_series = n, .width = r->w, .scale = scales[cv->scale],
		.ascii = !t->utf8,
	};
	if (sp.scale == CURVES_AUTO && cv->what > 0)
		sp.scale = cv->what == 2 ? CURVES_LOG : CURVES_LINEAR;
	int extra = curves_plot_extra_rows(&sp) + 1; /* and the heading */
	struct tui_rect body = *r;
	body.h -= strip(r, &rec, !t->utf8, extra);
	sp.height = body.h - extra;
	if (sp.height < 2 || series[0]->n == 0) {
		note(r, series[0]->n ? "Too small for the plot." : "The training record lacks this curve.");
		curves_record_free(&rec);
		return;
	}
	heading(t, cv, r, &rec, curves_plot_is_log(&sp));
	struct curves_grid g;
	curves_plot(&sp, &g);
	put_grid(&g, r->y + 1, r->x);
	curves_grid_free(&g);
	curves_record_free(&rec);
}

/* c: the next curve; y: the next y scale. */
static enum tui_key_result curves_key(struct tui_state *t, void *data, int ch, bool fn)
{
	(void)t;
	struct curves_view *cv = data;
	if (fn)
		return TUI_KEY_IGNORED;
	if (ch == 'c') {
		cv->what = (cv->what + 1) % 3;
		return TUI_KEY_REFRESH;
	}
	if (ch == 'y') {
		cv->scale = (cv->scale + 1) % 3;
		return TUI_KEY_REFRESH;
	}
	return TUI_KEY_IGNORED;
}

static const struct tui_hint curves_hints[] = {
	TUI_HINT_OPTIONS, { "c", "c", "curve" }, { "y", "y", "y scale" }, { "x", "x", "export" },
	TUI_HINT_END,
};

const struct tui_view_mode tui_curves_view = {
	.name = "curves",
	.export_what = "stats",
	.hints = curves_hints,
	.init = curves_init,
	.free = free,
	.draw = curves_draw,
	.key = curves_key,
};
