/*
 * tui-grid.c — the grid view: every layer x head as a small heatmap,
 * pooled to fit (half blocks give two query rows per text row with
 * colour), the selected head framed, ablated heads marked, heads that
 * share a K/V head joined by their rule, role badges on the titles.
 * Arrows move between heads; a click selects a head, a second one opens
 * it in the head view.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "heat.h"
#include "render.h"
#include "tokenizer.h"

/* The grid view's own state. */
struct grid {
	struct tui_grid_layout layout; /* where the last draw put the heads (clicks) */
	int layer0, head0;             /* the first layer and head shown */
};

static void *grid_init(struct tui_state *t)
{
	(void)t;
	return xcalloc(1, sizeof(struct grid));
}

/* A new model or text: the first layer and head again. */
static void grid_reset(struct tui_state *t, void *data)
{
	(void)t;
	struct grid *gd = data;
	gd->layer0 = gd->head0 = 0;
}

/* The colour scale at the right end of the header line, when the line
 * leaves room: "0 ░▒▓█ 1 attention weight" in the heatmaps' own cells. */
static void grid_legend(const struct tui_state *t, const struct tui_rect *r, int used)
{
	const char *what = heat_kind_legend(t->s->heat);
	int steps = 9, w = 2 + steps + 3 + render_width(what);
	if (used + 2 + w > r->w)
		return;
	int x = r->x + r->w - w;
	tui_put(r->y, x, 2, "0 ", 0, TUI_ROLE_LABEL);
	for (int i = 0; i < steps; i++)
		tui_heat(t, r->y, x + 2 + i, 1, i / (double)(steps - 1), 0);
	tui_put(r->y, x + 2 + steps, w - 2 - steps, " 1 ", 0, TUI_ROLE_LABEL);
	tui_put(r->y, x + 5 + steps, w - 5 - steps, what, 0, TUI_ROLE_LABEL);
}

/* One piece of the line over the grid: its separator before it, its
 * text, and whether the masked glyph and "masked" follow it. */
#define GRID_PIECES 6 /* at most: row sums, the map, pooling, half blocks, shared KV, scrolling */
struct grid_piece {
	const char *sep;
	char text[96];
	bool masked;
};

/* The pieces of the line over the grid after its size, most important
 * first: what the map shows when it is not plain weights (what the rows
 * sum to under the mask after the softmax, how other kinds than weights
 * are shaded), then how it is pooled and drawn.  Returns how many. */
static int grid_pieces(struct tui_state *t, const struct tui_grid_layout *g, int G, struct grid_piece *pc)
{
	enum heat_kind kind = t->s->heat;
	const char *x = tui_times_sign(), *arrow = tui_utf8() ? "\u2192" : "->";
	int n = 0;
	size_t sz = sizeof pc[0].text;
	memset(pc, 0, GRID_PIECES * sizeof *pc);
	if (tui_rows_short(t)) {
		pc[n].sep = "; ";
		snprintf(pc[n++].text, sz, "rows of weights sum to %.3f on average, not 1", tui_row_sums(t)->mean);
	}
	if (kind != HEAT_WEIGHTS) {
		pc[n].sep = "; ";
		pc[n].masked = kind == HEAT_SCORES;
		if (kind == HEAT_SCORES)
			snprintf(pc[n++].text, sz, "map: each row's scores, min..max %s 0..1,", arrow);
		else
			snprintf(pc[n++].text, sz, "%s", kind == HEAT_NORMS ? "map: norms as shares of their row"
									: "map: rollout from the input");
	}
	pc[n].sep = ", ";
	if (g->pool > 1 && g->pool == g->pool_x)
		snprintf(pc[n++].text, sz, "pooled %d%s (max of %d%s%d)", g->pool, x, g->pool, x, g->pool);
	else if (g->pool > 1 || g->pool_x > 1)
		snprintf(pc[n++].text, sz, "pooled: max of %d quer%s %s %d key%s", g->pool,
			 g->pool == 1 ? "y" : "ies", x, g->pool_x, g->pool_x == 1 ? "" : "s");
	else
		snprintf(pc[n++].text, sz, "not pooled");
	if (t->vsub == 2) {
		pc[n].sep = ", ";
		snprintf(pc[n++].text, sz, "%s = 2 query rows", tui_utf8() ? "\u2580\u2584" : "half blocks");
	}
	if (G < g->H) {
		pc[n].sep = ", ";
		snprintf(pc[n++].text, sz, "%s = shared KV head", tui_utf8() ? "\u2500\u2500" : "--");
	}
	if (g->layers_vis < g->L || g->heads_vis < g->H) {
		pc[n].sep = "; ";
		snprintf(pc[n++].text, sz, "showing layers %d-%d, heads %d-%d", g->layer0,
			 g->layer0 + g->layers_vis - 1, g->head0, g->head0 + g->heads_vis - 1);
	}
	return n;
}

/* The line over the grid: its size, then each of grid_pieces that fits,
 * in order, and the colour scale at the right end when there is room. */
static void grid_header(struct tui_state *t, const struct tui_rect *r, const struct tui_grid_layout *g,
			int G)
{
	struct grid_piece pc[GRID_PIECES];
	int n = grid_pieces(t, g, G, pc);
	int used = tui_printf(r->y, r->x, r->w, 0, TUI_ROLE_LABEL, "%d%s%d heads, %d token%s", g->L,
			      tui_times_sign(), g->H, g->T, g->T == 1 ? "" : "s");
	for (int i = 0; i < n; i++) {
		int w = 2 + render_width(pc[i].text) + (pc[i].masked ? 9 : 0); /* " · masked" */
		if (used + w > r->w)
			continue;
		used += tui_put(r->y, r->x + used, r->w - used, pc[i].sep, 0, TUI_ROLE_LABEL);
		used += tui_put(r->y, r->x + used, r->w - used, pc[i].text, 0, TUI_ROLE_LABEL);
		if (pc[i].masked) {
			tui_heat(t, r->y, r->x + used + 1, 1, NAN, 0);
			used += 2 + tui_put(r->y, r->x + used + 2, r->w - used - 2, " masked", 0, TUI_ROLE_LABEL);
		}
	}
	grid_legend(t, r, used);
}

static void grid_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	struct grid *gd = data;
	struct session *s = t->s;
	if (!tui_need_run(s, r))
		return;
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, T = s->n_tokens, G = s->opt.kv_heads;
	struct tui_grid_layout *g = &gd->layout;
	tui_grid_layout(r, L, H, T, t->vsub, g);
	g->layer0 = gd->layer0;
	g->head0 = gd->head0;
	tui_grid_follow(g, s->sel_layer, s->sel_head);
	gd->layer0 = g->layer0;
	gd->head0 = g->head0;

	if (g->header)
		grid_header(t, r, g, G);

	int nx = g->nx, lw;
	bool wide;
	float *pooled = xmalloc((size_t)g->n * nx * sizeof *pooled);
	char **lab = g->labels ? tui_token_labels(s, &lw, &wide) : NULL;
	const char *rule = tui_utf8() ? "\u2500" : "-";
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
				tw += tui_put(y, x + tw, 1, tui_mark_ablated(), TUI_A_BOLD, TUI_ROLE_ABLATED);
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
			render_pool(session_att(s, l, h), T, T, T, g->pool, g->pool_x, RENDER_POOL_MAX,
				    pooled);
			for (int row = 0; row < g->map_rows; row++) {
				int yy = y + 1 + row;
				for (int px = 0; px < g->side_x; px++) {
					int cj = tui_grid_column(g, px);
					if (t->vsub == 2) {
						int p0 = 2 * row, p1 = 2 * row + 1;
						/* below the map's last pixel row: blank (NAN is masked) */
						double top = p0 < g->side ? pooled[(size_t)tui_grid_pixel(g, p0) * nx + cj] : 0.0;
						double bot = p1 < g->side ? pooled[(size_t)tui_grid_pixel(g, p1) * nx + cj] : 0.0;
						tui_half_block(yy, x + px, top, bot);
					} else {
						tui_heat(t, yy, x + px, 1, pooled[(size_t)tui_grid_pixel(g, row) * nx + cj], 0);
					}
				}
			}
			/* the keys, each under its own columns */
			for (int j = 0; lab && j < T; j++) {
				int zx = g->side_x / T;
				tui_put(y + 1 + g->map_rows, x + j * zx, zx, lab[j], TUI_A_DIM, TUI_ROLE_LABEL);
			}
		}
	free(pooled);
	if (lab)
		render_labels_free(lab, T);
}

/* The side panel when the grid leaves room for it (always before a run). */
static bool grid_side(struct tui_state *t, void *data)
{
	(void)data;
	struct session *s = t->s;
	return !session_ready(s) || tui_grid_side_panel(LINES, COLS, s->model->cfg.n_layer,
							s->model->cfg.n_head, s->n_tokens, t->vsub);
}

static void grid_move(struct tui_state *t, void *data, int dy, int dx)
{
	(void)data;
	tui_select_head(t, t->s->sel_layer + dy, t->s->sel_head + dx);
}

static enum tui_key_result grid_click(struct tui_state *t, void *data, int y, int x, bool *open)
{
	struct grid *gd = data;
	int l, h;
	if (!tui_grid_hit(&gd->layout, y, x, &l, &h))
		return TUI_KEY_IGNORED;
	*open = l == t->s->sel_layer && h == t->s->sel_head; /* a second click opens it */
	tui_select_head(t, l, h);
	return TUI_KEY_REFRESH;
}

static const struct tui_hint grid_hints[] = {
	TUI_HINT_OPTIONS, { "\u23ce", "Enter", "open" }, { "\u2190\u2193\u2191\u2192", "hjkl", "head" },
	{ "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_grid_view = {
	.name = "grid",
	.export_what = "grid",
	.hints = grid_hints,
	.init = grid_init,
	.free = free,
	.reset = grid_reset,
	.side = grid_side,
	.draw = grid_draw,
	.arrows = grid_move,
	.click = grid_click,
};
