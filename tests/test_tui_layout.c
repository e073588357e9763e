/*
 * test_tui_layout.c — the visualizer's pure layout without a terminal:
 * screen regions, where every head's heatmap goes (and how much it is
 * pooled) for screen sizes from tiny to large and models from 1x1 to
 * 12x12 heads, scrolling that follows the selection, mouse hit tests, the
 * head and token views' windows, half-block and bar glyph choices, the
 * option cycles behind g and m, the status and hint lines, messages
 * wrapped to the screen's width, and the line editor with double-width
 * characters.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "tui-layout.h"
#include "tui-view.h"
#include "tui.h"

/* ------------------------------------------------------------- regions */

static void test_frame_80x24(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(24, 80, true, &f);
	assert_false(f.too_small);
	assert_int_equal(f.status.y, 0);
	assert_int_equal(f.status.w, 80);
	assert_int_equal(f.body.y, 1);
	assert_int_equal(f.body.h, 21);
	assert_int_equal(f.body.w, 80);
	assert_int_equal(f.side.w, 0); /* no side panel at 80 columns */
	assert_int_equal(f.info.y, 22);
	assert_int_equal(f.hints.y, 23);
}

static void test_frame_120x40(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(40, 120, true, &f);
	assert_int_equal(f.body.h, 37);
	assert_int_equal(f.side.w, TUI_SIDE_W);
	assert_int_equal(f.side.x + f.side.w, 120);
	assert_int_equal(f.body.w + 1 + f.side.w, 120);
	assert_int_equal(f.hints.y, 39);
	tui_frame_layout(40, 120, false, &f);
	assert_int_equal(f.side.w, 0);
	assert_int_equal(f.body.w, 120);
	tui_frame_layout(8, 30, true, &f);
	assert_true(f.too_small);
}

static void test_scroll(void **state)
{
	(void)state;
	assert_int_equal(tui_scroll(0, 10, 5, 4), 0);   /* all fit */
	assert_int_equal(tui_scroll(0, 10, 100, 5), 0);
	assert_int_equal(tui_scroll(0, 10, 100, 10), 1); /* just past the end */
	assert_int_equal(tui_scroll(50, 10, 100, 20), 20);
	assert_int_equal(tui_scroll(95, 10, 100, 99), 90); /* clamped */
	assert_int_equal(tui_scroll(30, 10, 100, 35), 30); /* visible: unchanged */
}

/* ---------------------------------------------------------------- grid */

static void test_title_width(void **state)
{
	(void)state;
	assert_int_equal(tui_grid_title_width(2, 4), 6);   /* "[1.3]" + mark */
	assert_int_equal(tui_grid_title_width(12, 12), 8); /* "[11.11]" + mark */
	assert_int_equal(tui_grid_title_width(1, 1), 6);
}

/* Checks every property a grid layout must have in its area. */
static void check_grid(const struct tui_grid_layout *g, const struct tui_rect *a)
{
	assert_true(g->pool >= 1 && g->pool_x >= 1);
	assert_int_equal(g->n, (g->T + g->pool - 1) / g->pool);
	assert_int_equal(g->nx, (g->T + g->pool_x - 1) / g->pool_x);
	assert_true(g->side >= g->n && g->side <= TUI_GRID_MAX_ZOOM * g->n);
	assert_true(g->side_x >= g->nx && g->side_x <= TUI_GRID_MAX_ZOOM * g->nx);
	assert_int_equal(g->side % g->n, 0); /* every weight the same size */
	assert_int_equal(g->side_x % g->nx, 0);
	/* pixels cover every pooled cell, in order */
	assert_int_equal(tui_grid_pixel(g, 0), 0);
	assert_int_equal(tui_grid_pixel(g, g->side - 1), g->n - 1);
	assert_int_equal(tui_grid_column(g, 0), 0);
	assert_int_equal(tui_grid_column(g, g->side_x - 1), g->nx - 1);
	assert_true(g->cell_w >= g->side_x && g->cell_w >= g->title_w);
	int rows_avail = (a->h - g->header) / g->L - 1, cols_avail =
		(a->w - (g->H - 1) * TUI_GRID_GAP) / g->H;
	int least = g->T < TUI_GRID_MIN_N ? g->T : TUI_GRID_MIN_N;
	if (rows_avail * g->vsub >= least && cols_avail >= least && cols_avail >= g->title_w) {
		/* every head fits: on each axis the least pooling that fits (one
		 * less does not) */
		if (g->pool > 1)
			assert_true((g->T + g->pool - 2) / (g->pool - 1) > rows_avail * g->vsub);
		if (g->pool_x > 1 && (g->T + g->pool_x - 2) / (g->pool_x - 1) <= cols_avail)
			fail_msg("T %d in %dx%d, %dx%d heads: pool_x %d, but %d columns fit %d keys",
				 g->T, a->h, a->w, g->L, g->H, g->pool_x, cols_avail,
				 (g->T + g->pool_x - 2) / (g->pool_x - 1));
	} else {
		assert_int_equal(g->pool_x, g->pool); /* scrolling: pooled alike */
	}
	assert_int_equal(g->cell_h, 1 + (g->side + g->vsub - 1) / g->vsub + g->labels);
	if (g->labels) /* one column or more per key, and room for the row */
		assert_true(g->pool_x == 1 && g->cell_h * g->L + g->header <= a->h);
	assert_true(g->heads_vis >= 1 && g->heads_vis <= g->H);
	assert_true(g->layers_vis >= 1 && g->layers_vis <= g->L);
	for (int l = g->layer0; l < g->layer0 + g->layers_vis; l++)
		for (int h = g->head0; h < g->head0 + g->heads_vis; h++) {
			int y, x;
			assert_true(tui_grid_cell(g, l, h, &y, &x));
			/* inside the area, when one cell fits at all */
			if (g->cell_w <= a->w && g->cell_h + g->header <= a->h) {
				assert_true(x >= a->x && x + g->cell_w <= a->x + a->w);
				assert_true(y >= a->y + g->header && y + g->cell_h <= a->y + a->h);
			}
			/* every character of the cell maps back to it */
			int hl, hh;
			assert_true(tui_grid_hit(g, y, x, &hl, &hh));
			assert_int_equal(hl, l);
			assert_int_equal(hh, h);
			assert_true(tui_grid_hit(g, y + g->cell_h - 1, x + g->cell_w - 1, &hl, &hh));
			assert_int_equal(hl, l);
			assert_int_equal(hh, h);
			/* neighbours do not overlap */
			int y2, x2;
			if (tui_grid_cell(g, l, h + 1, &y2, &x2))
				assert_int_equal(x2, x + g->cell_w + TUI_GRID_GAP);
			if (tui_grid_cell(g, l + 1, h, &y2, &x2))
				assert_int_equal(y2, y + g->cell_h);
		}
	/* heads scrolled away are not drawn */
	int y, x;
	assert_false(tui_grid_cell(g, g->layer0 + g->layers_vis, g->head0, &y, &x));
	assert_false(tui_grid_cell(g, g->layer0, g->head0 + g->heads_vis, &y, &x));
}

static void test_grid_small_model_80x24(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(24, 80, true, &f);
	struct tui_grid_layout g;
	tui_grid_layout(&f.body, 2, 4, 11, 2, &g);
	check_grid(&g, &f.body);
	assert_int_equal(g.pool, 1); /* 11 tokens: not pooled */
	assert_int_equal(g.header, 1);
	assert_int_equal(g.heads_vis, 4);
	assert_int_equal(g.layers_vis, 2);
	assert_true(g.side >= 11);
	assert_int_equal(g.map_rows, (g.side + 1) / 2); /* two pixel rows per text row */
	int y, x;
	assert_true(tui_grid_cell(&g, 1, 3, &y, &x));
	assert_int_equal(y, 1 + 1 + g.cell_h);
	assert_int_equal(x, 3 * (g.cell_w + 1));
}

static void test_grid_256_tokens(void **state)
{
	(void)state;
	struct tui_frame f;
	struct tui_grid_layout g, big;
	tui_frame_layout(24, 80, true, &f);
	tui_grid_layout(&f.body, 4, 4, 256, 2, &g);
	check_grid(&g, &f.body);
	/* a 4x4 model fits whole at 80x24, pooled, and the pooling is the least
	 * that fits: one step less does not */
	assert_int_equal(g.heads_vis, 4);
	assert_int_equal(g.layers_vis, 4);
	assert_true(g.pool > 1);
	assert_true(4 * (1 + (g.side + 1) / 2) <= f.body.h - 1);
	int n_less = (256 + g.pool - 2) / (g.pool - 1);
	assert_true(4 * (1 + (n_less + 1) / 2) > f.body.h - 1 || 4 * n_less + 3 > f.body.w);

	/* a larger screen shows more of each matrix */
	tui_frame_layout(40, 120, true, &f);
	tui_grid_layout(&f.body, 4, 4, 256, 2, &big);
	check_grid(&big, &f.body);
	assert_int_equal(big.heads_vis, 4);
	assert_int_equal(big.layers_vis, 4);
	assert_true(big.pool < g.pool);
	assert_true(big.side > g.side);

	/* without half blocks (monochrome) one text row is one query row */
	struct tui_grid_layout mono;
	tui_frame_layout(24, 80, true, &f);
	tui_grid_layout(&f.body, 4, 4, 256, 1, &mono);
	check_grid(&mono, &f.body);
	assert_true(mono.pool >= g.pool);
}

/* Key labels go under each heatmap when the keys are not pooled and every
 * layer has a row to spare; never when the keys are pooled. */
static void test_grid_key_labels(void **state)
{
	(void)state;
	struct tui_frame f;
	struct tui_grid_layout g;
	tui_frame_layout(48, 160, false, &f);
	tui_grid_layout(&f.body, 2, 4, 11, 2, &g); /* 'hello world' on a 2x4 model */
	check_grid(&g, &f.body);
	assert_true(g.labels);
	assert_int_equal(g.pool_x, 1);
	tui_grid_layout(&f.body, 4, 4, 200, 2, &g); /* keys pooled: no labels */
	check_grid(&g, &f.body);
	assert_true(g.pool_x > 1);
	assert_false(g.labels);
	/* a tall grid with no row to spare: 12 layers in 24 rows */
	tui_frame_layout(24, 80, true, &f);
	tui_grid_layout(&f.body, 12, 2, 4, 2, &g);
	assert_false(g.labels);
}

static void test_grid_zoom(void **state)
{
	(void)state;
	/* a short text on a big screen is magnified, never beyond the limit */
	struct tui_rect a = { 1, 0, 60, 200 };
	struct tui_grid_layout g;
	tui_grid_layout(&a, 2, 4, 11, 2, &g);
	check_grid(&g, &a);
	assert_int_equal(g.pool, 1);
	assert_int_equal(g.side, 3 * 11);
	assert_int_equal(tui_grid_pixel(&g, 2), 0);
	assert_int_equal(tui_grid_pixel(&g, 3), 1);
	/* 80x24 has room for 4 heads of 19 columns: no whole magnification */
	struct tui_frame f;
	tui_frame_layout(24, 80, true, &f);
	tui_grid_layout(&f.body, 2, 4, 11, 2, &g);
	assert_int_equal(g.side, 11);
	/* 120x40 does (2x), when the side panel does not take the room */
	assert_false(tui_grid_side_panel(40, 120, 2, 4, 11, 2));
	tui_frame_layout(40, 120, false, &f);
	tui_grid_layout(&f.body, 2, 4, 11, 2, &g);
	assert_int_equal(g.side, 22);
	assert_int_equal(tui_grid_pixel(&g, 21), 10);
	/* with 256 tokens at 120x40 the panel would cost key resolution (the
	 * keys pooled 13x instead of 9x) and is left out; with 61 at 160x48
	 * it costs nothing and stays */
	assert_false(tui_grid_side_panel(40, 120, 4, 4, 256, 2));
	assert_true(tui_grid_side_panel(48, 160, 4, 4, 61, 2));
	assert_false(tui_grid_side_panel(24, 80, 4, 4, 256, 2)); /* no room for one */
}

static void test_grid_scrolls_large_model(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(24, 80, true, &f);
	struct tui_grid_layout g;
	tui_grid_layout(&f.body, 12, 12, 256, 2, &g);
	check_grid(&g, &f.body);
	assert_true(g.heads_vis < 12);
	assert_true(g.layers_vis < 12);
	assert_true(g.n >= TUI_GRID_MIN_N);
	tui_grid_follow(&g, 11, 11);
	assert_int_equal(g.layer0, 12 - g.layers_vis);
	assert_int_equal(g.head0, 12 - g.heads_vis);
	check_grid(&g, &f.body);
	int y, x;
	assert_true(tui_grid_cell(&g, 11, 11, &y, &x));
	assert_false(tui_grid_cell(&g, 0, 0, &y, &x));
	tui_grid_follow(&g, 0, 5);
	assert_int_equal(g.layer0, 0);
	assert_true(tui_grid_cell(&g, 0, 5, &y, &x));
}

/* Every combination stays inside its area, hit tests agree, and the
 * selection is always reachable. */
static void test_grid_many_sizes(void **state)
{
	(void)state;
	static const int Ls[] = { 1, 2, 4, 6, 12 }, Hs[] = { 1, 4, 8, 12 };
	static const int Ts[] = { 1, 2, 5, 11, 64, 256, 1000 };
	static const int sizes[][2] = { { 10, 40 }, { 24, 80 }, { 30, 100 }, { 40, 120 }, { 60, 200 } };
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
		for (size_t li = 0; li < sizeof Ls / sizeof *Ls; li++)
			for (size_t hi = 0; hi < sizeof Hs / sizeof *Hs; hi++)
				for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
					for (int vsub = 1; vsub <= 2; vsub++) {
						struct tui_frame f;
						tui_frame_layout(sizes[si][0], sizes[si][1], true, &f);
						struct tui_grid_layout g;
						int L = Ls[li], H = Hs[hi];
						tui_grid_layout(&f.body, L, H, Ts[ti], vsub, &g);
						check_grid(&g, &f.body);
						tui_grid_follow(&g, L - 1, H - 1);
						check_grid(&g, &f.body);
						int y, x;
						assert_true(tui_grid_cell(&g, L - 1, H - 1, &y, &x));
						/* when all fit, nothing is hidden */
						if (g.heads_vis == H && g.layers_vis == L) {
							assert_int_equal(g.head0, 0);
							assert_int_equal(g.layer0, 0);
						}
					}
}

static void test_grid_joined(void **state)
{
	(void)state;
	/* GQA 2 of 4 heads: 0-1 and 2-3 share */
	assert_true(tui_grid_joined(4, 2, 0));
	assert_false(tui_grid_joined(4, 2, 1));
	assert_true(tui_grid_joined(4, 2, 2));
	assert_false(tui_grid_joined(4, 2, 3));
	/* MHA: nothing joined; MQA: everything */
	for (int h = 0; h < 4; h++)
		assert_false(tui_grid_joined(4, 4, h));
	assert_true(tui_grid_joined(4, 1, 0));
	assert_true(tui_grid_joined(4, 1, 2));
	assert_false(tui_grid_joined(4, 1, 3));
	assert_false(tui_grid_joined(4, 3, 0)); /* not a divisor */
}

/* --------------------------------------------------------- head view */

static void test_head_layout(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(24, 80, false, &f);
	struct tui_head_layout h;
	tui_head_layout(&f.body, 11, 1, false, 10, 3, 0, 0, &h);
	assert_int_equal(h.cw, 2);
	assert_int_equal(h.rows_vis, 11);
	assert_int_equal(h.cols_vis, 11);
	assert_true(h.panel.w > 0);
	assert_true(h.panel.x >= h.matrix.x + h.matrix.w); /* the panel is beside the matrix */
	assert_true(h.panel.x + h.panel.w <= 80);
	assert_int_equal(h.keys.y + 1, h.matrix.y);
	int q, k;
	assert_true(tui_head_hit(&h, h.matrix.y + 10, h.matrix.x + 3 * 2 + 1, &q, &k));
	assert_int_equal(q, 10);
	assert_int_equal(k, 3);
	assert_false(tui_head_hit(&h, h.matrix.y - 1, h.matrix.x, &q, &k));

	/* 256 tokens: one column per key, scrolling to the cursor */
	tui_head_layout(&f.body, 256, 4, false, 200, 250, 0, 0, &h);
	assert_int_equal(h.cw, 1);
	assert_true(h.rows_vis < 256 && h.cols_vis < 256);
	assert_true(h.row0 <= 200 && 200 < h.row0 + h.rows_vis);
	assert_true(h.col0 <= 250 && 250 < h.col0 + h.cols_vis);
	assert_true(h.matrix.y + h.matrix.h <= f.body.y + f.body.h);
	assert_true(h.matrix.x + h.matrix.w <= 80);
	assert_true(tui_head_hit(&h, h.matrix.y, h.matrix.x, &q, &k));
	assert_int_equal(q, h.row0);
	assert_int_equal(k, h.col0);

	/* double-width labels keep two columns per key */
	tui_head_layout(&f.body, 256, 2, true, 0, 0, 0, 0, &h);
	assert_int_equal(h.cw, 2);
	/* labels longer than the limit are cut */
	tui_head_layout(&f.body, 20, 40, false, 0, 0, 0, 0, &h);
	assert_int_equal(h.label_w, TUI_HEAD_LABEL_MAX);
	/* a 24-character poem (double width) at 80 columns: the panel narrows
	 * so that every key shows, key 0 included, with the cursor on the last */
	tui_head_layout(&f.body, 24, 2, true, 23, 23, 0, 0, &h);
	assert_int_equal(h.cols_vis, 24);
	assert_int_equal(h.col0, 0);
	assert_true(h.panel.w >= TUI_PANEL_MIN_W && h.panel.w < TUI_PANEL_W);
	assert_true(h.panel.x >= h.matrix.x + h.matrix.w && h.panel.x + h.panel.w <= 80);
}

/* -------------------------------------------------------- token view */

static void test_token_layout(void **state)
{
	(void)state;
	struct tui_frame f;
	tui_frame_layout(24, 80, false, &f);
	struct tui_token_layout t;
	/* one layer of 4 heads */
	tui_token_layout(&f.body, 1, 4, 11, 4, false, 10, 2, 0, 0, &t);
	assert_int_equal(t.n_rows, 4);
	assert_int_equal(t.rows_vis, 4);
	assert_int_equal(t.keys_vis, 11);
	assert_int_equal(tui_token_row_y(&t, 0), t.bars.y);
	assert_int_equal(tui_token_row_y(&t, 3), t.bars.y + 3);
	assert_true(t.right.w > 0 && t.right.x >= t.bars.x + t.bars.w);
	int row, key;
	assert_true(tui_token_hit(&t, t.bars.y + 2, t.bars.x + t.cw * 5, &row, &key));
	assert_int_equal(row, 2);
	assert_int_equal(key, 5);

	/* every layer: a blank row between layers */
	tui_token_layout(&f.body, 3, 4, 11, 4, false, 10, 5, 0, 0, &t);
	assert_int_equal(t.n_rows, 12);
	assert_int_equal(tui_token_row_y(&t, 4), t.bars.y + 5);
	assert_false(tui_token_hit(&t, t.bars.y + 4, t.bars.x, &row, &key)); /* the gap */
	assert_true(tui_token_hit(&t, t.bars.y + 5, t.bars.x - 1, &row, &key));
	assert_int_equal(row, 4);
	assert_int_equal(key, -1);

	/* many heads scroll to the selected one; long texts to the query */
	tui_token_layout(&f.body, 12, 12, 256, 6, false, 200, 143, 0, 0, &t);
	assert_true(t.rows_vis < t.n_rows + 11);
	assert_true(tui_token_row_y(&t, 143) >= t.bars.y);
	assert_int_equal(tui_token_row_y(&t, 0), -1);
	assert_true(t.key0 <= 200 && 200 < t.key0 + t.keys_vis);
	assert_true(t.bars.x + t.bars.w <= 80);
}

/* ------------------------------------------------------------- glyphs */

static void test_half_cells(void **state)
{
	(void)state;
	struct tui_half c;
	tui_half_cell(0, 0, &c);
	assert_int_equal(c.glyph, 0);
	tui_half_cell(5, 0, &c); /* upper half only: '▀' on the default background */
	assert_int_equal(c.glyph, 1);
	assert_int_equal(c.fg, 5);
	assert_int_equal(c.bg, 0);
	tui_half_cell(0, 7, &c); /* lower only: '▄' */
	assert_int_equal(c.glyph, 2);
	assert_int_equal(c.fg, 7);
	tui_half_cell(4, 4, &c); /* both the same: '█' */
	assert_int_equal(c.glyph, 3);
	assert_int_equal(c.fg, 4);
	tui_half_cell(3, 9, &c); /* different: '▀' fg top, bg bottom */
	assert_int_equal(c.glyph, 1);
	assert_int_equal(c.fg, 3);
	assert_int_equal(c.bg, 9);

	assert_int_equal(tui_level(0.0, 11), 0);
	assert_int_equal(tui_level(0.005, 11), 0); /* below RENDER_ZERO: blank */
	assert_int_equal(tui_level(0.02, 11), 1);
	assert_int_equal(tui_level(1.0, 11), 10);
	assert_int_equal(tui_bar_level(0.0), 0);
	assert_int_equal(tui_bar_level(0.02), 1);
	assert_int_equal(tui_bar_level(0.5), 5);
	assert_int_equal(tui_bar_level(1.0), 8);
}

/* ------------------------------------------------------------ options */

static void test_sharing_cycle(void **state)
{
	(void)state;
	/* 8 heads: MHA -> GQA 4 -> GQA 2 -> MQA -> MHA */
	assert_int_equal(tui_next_kv_heads(8, 8), 4);
	assert_int_equal(tui_next_kv_heads(8, 4), 2);
	assert_int_equal(tui_next_kv_heads(8, 2), 1);
	assert_int_equal(tui_next_kv_heads(8, 1), 8);
	/* 6 heads: 6 -> 3 -> 2 -> 1 */
	assert_int_equal(tui_next_kv_heads(6, 6), 3);
	assert_int_equal(tui_next_kv_heads(6, 3), 2);
	assert_int_equal(tui_next_kv_heads(6, 2), 1);
	assert_int_equal(tui_next_kv_heads(1, 1), 1);
	char buf[64];
	tui_sharing_command(4, 4, buf, sizeof buf);
	assert_string_equal(buf, "attn gqa 2");
	tui_sharing_command(4, 2, buf, sizeof buf);
	assert_string_equal(buf, "attn mqa");
	tui_sharing_command(4, 1, buf, sizeof buf);
	assert_string_equal(buf, "attn mha");
	tui_sharing_name(4, 4, buf, sizeof buf);
	assert_string_equal(buf, "MHA");
	tui_sharing_name(8, 2, buf, sizeof buf);
	assert_string_equal(buf, "GQA 2");
	tui_sharing_name(8, 1, buf, sizeof buf);
	assert_string_equal(buf, "MQA");
}

static void test_mask_cycle(void **state)
{
	(void)state;
	char buf[64];
	tui_mask_command(MASK_CAUSAL, buf, sizeof buf);
	assert_string_equal(buf, "mask none");
	tui_mask_command(MASK_NONE, buf, sizeof buf);
	assert_string_equal(buf, "mask window 4");
	tui_mask_command(MASK_WINDOW, buf, sizeof buf);
	assert_string_equal(buf, "mask after-softmax");
	tui_mask_command(MASK_AFTER_SOFTMAX, buf, sizeof buf);
	assert_string_equal(buf, "mask causal");
}

static void test_status_text(void **state)
{
	(void)state;
	struct run_options o;
	memset(&o, 0, sizeof o);
	o.kv_heads = 4;
	o.placement = PLACE_PRE;
	o.mask = MASK_CAUSAL;
	o.scale = true;
	char buf[256];
	tui_status_text("shakespeare", 2, 4, &o, true, true, buf, sizeof buf);
	assert_string_equal(buf, "shakespeare 2\u00d74 \u2502 MHA \u2502 pre-norm \u2502 causal \u2502 scale on \u2502 no ablations");
	o.kv_heads = 1;
	o.placement = PLACE_POST;
	o.mask = MASK_WINDOW;
	o.window = 4;
	o.scale = false;
	opt_set_ablated(&o, 0, true);
	opt_set_ablated(&o, 6, true);
	tui_status_text("m", 2, 4, &o, false, true, buf, sizeof buf);
	assert_string_equal(buf, "m 2x4 | MQA | post-norm | window 4 | scale off | ablated 0.0 1.2");
	tui_status_text("m", 2, 4, &o, false, false, buf, sizeof buf);
	assert_string_equal(buf, "m | MQA | post-norm | window 4 | scale off | ablated 0.0 1.2");
	for (int b = 0; b < 8; b++)
		opt_set_ablated(&o, b, true);
	o.mask = MASK_NONE;
	tui_status_text("m", 2, 4, &o, false, true, buf, sizeof buf);
	assert_non_null(strstr(buf, "8 heads ablated"));
	assert_non_null(strstr(buf, "no mask"));
	o.pitfall = PITFALL_MASK_ONE_HEAD;
	tui_status_text("m", 2, 4, &o, false, false, buf, sizeof buf);
	assert_string_equal(buf, "m | MQA | post-norm | no mask | scale off | 8 heads ablated | "
			    "pitfall mask-one-head");
}

/* ------------------------------------------------------------ messages */

/* The rows tui_wrap makes of text at width, joined by '|'. */
static void wrapped(const char *text, int width, char *out, size_t size)
{
	struct tui_span rows[32];
	int n = tui_wrap(text, width, rows, 32);
	size_t k = 0;
	out[0] = '\0';
	for (int i = 0; i < n && i < 32 && k < size; i++) {
		assert_true(rows[i].len >= 0);
		k += (size_t)snprintf(out + k, size - k, "%s%.*s", i ? "|" : "", rows[i].len, text + rows[i].off);
	}
}

static void test_wrap(void **state)
{
	(void)state;
	char buf[512];
	wrapped("error: both texts lead to the same next token", 20, buf, sizeof buf);
	assert_string_equal(buf, "error: both texts|lead to the same|next token");
	wrapped("abc def", 7, buf, sizeof buf);
	assert_string_equal(buf, "abc def");
	wrapped("abc def", 3, buf, sizeof buf); /* the blank at the break goes */
	assert_string_equal(buf, "abc|def");
	wrapped("abcdefgh", 3, buf, sizeof buf); /* a long word is cut */
	assert_string_equal(buf, "abc|def|gh");
	wrapped("one\n\ntwo  three\n", 5, buf, sizeof buf);
	assert_string_equal(buf, "one||two|three");
	wrapped("", 10, buf, sizeof buf);
	assert_string_equal(buf, "");
	assert_int_equal(tui_wrap("", 10, NULL, 0), 1);
	/* display columns: CJK counts 2; a character wider than the row is
	 * alone on its own */
	wrapped("床前明月光", 4, buf, sizeof buf);
	assert_string_equal(buf, "床前|明月|光");
	wrapped("床前", 1, buf, sizeof buf);
	assert_string_equal(buf, "床|前");
	/* every byte of a long message is on some row, none past the width */
	char msg[1024];
	int n = 0;
	for (int i = 0; n < 1000; i++)
		n += snprintf(msg + n, sizeof msg - (size_t)n, "word%d ", i);
	struct tui_span rows[64];
	int nr = tui_wrap(msg, 80, rows, 64);
	assert_true(nr <= 64);
	size_t kept = 0;
	for (int i = 0; i < nr; i++) {
		char row[128];
		snprintf(row, sizeof row, "%.*s", rows[i].len, msg + rows[i].off);
		assert_true(render_width(row) <= 80);
		for (const char *p = row; *p; p++)
			kept += *p != ' ';
	}
	size_t want = 0;
	for (const char *p = msg; *p; p++)
		want += *p != ' ';
	assert_int_equal(kept, want);
	assert_int_equal(tui_wrap(msg, 80, rows, 2), nr); /* the count whatever max is */
}

static void test_hints(void **state)
{
	(void)state;
	char buf[512];
	for (int v = 0; v < tui_n_views; v++) {
		const struct tui_hint *hints = tui_views[v]->hints;
		tui_hints_text(hints, true, true, 80, buf, sizeof buf);
		assert_true(render_width(buf) <= 80);
		assert_non_null(strstr(buf, "? help  q back"));
		assert_non_null(strstr(buf, "g share"));
		assert_non_null(strstr(buf, "a ablate"));
		tui_hints_text(hints, false, false, 40, buf, sizeof buf);
		assert_true(render_width(buf) <= 40);
		assert_non_null(strstr(buf, "q quit"));
		tui_hints_text(hints, false, true, 300, buf, sizeof buf);
		assert_non_null(strstr(buf, "x export"));
		assert_non_null(strstr(buf, "Tab view"));
	}
	/* the views in order, by name and by number */
	static const char *const names[] = { "grid", "head", "token", "numbers", "lens", "curves",
					     "patch", "circuits" };
	assert_int_equal(tui_n_views, 8);
	for (int v = 0; v < 8; v++) {
		int got = -1;
		char num[16];
		snprintf(num, sizeof num, "%d", v + 1);
		assert_int_equal(tui_view_parse(names[v], &got), 0);
		assert_int_equal(got, v);
		assert_int_equal(tui_view_parse(num, &got), 0);
		assert_int_equal(got, v);
		assert_string_equal(tui_view_name(v), names[v]);
	}
	int v;
	assert_int_equal(tui_view_parse("9", &v), -1);
	assert_int_equal(tui_view_parse("rollout", &v), -1);
	assert_string_equal(tui_view_name(8), "?");
}

/* --------------------------------------------------------- line editor */

static void test_line_editor(void **state)
{
	(void)state;
	struct tui_line l;
	tui_line_init(&l, "ab\u5e8ac");
	assert_int_equal(l.n, 4);
	assert_int_equal(l.cur, 4);
	assert_int_equal(tui_line_width(&l, 0, l.n), 5); /* 床 is two columns */
	tui_line_left(&l);
	tui_line_backspace(&l); /* removes 床 */
	char *s = tui_line_utf8(&l);
	assert_string_equal(s, "abc");
	free(s);
	tui_line_insert(&l, 0x6708); /* 月 before c */
	s = tui_line_utf8(&l);
	assert_string_equal(s, "ab\u6708c");
	free(s);
	tui_line_home(&l);
	tui_line_delete(&l);
	tui_line_end(&l);
	tui_line_insert(&l, ' ');
	tui_line_insert(&l, 'x');
	tui_line_insert(&l, 'y');
	tui_line_kill_word(&l);
	s = tui_line_utf8(&l);
	assert_string_equal(s, "b\u6708c ");
	free(s);
	tui_line_home(&l);
	tui_line_right(&l);
	tui_line_kill_end(&l);
	tui_line_kill_start(&l);
	assert_int_equal(l.n, 0);
	tui_line_backspace(&l); /* harmless on empty */
	tui_line_left(&l);
	assert_int_equal(l.cur, 0);

	/* scrolling keeps the cursor in view, counting double widths */
	tui_line_set(&l, "\u5e8a\u524d\u660e\u6708\u5149"); /* 床前明月光: 10 columns */
	int first = tui_line_scroll(&l, 0, 4);
	assert_true(tui_line_width(&l, first, l.cur) <= 3);
	assert_int_equal(first, 4);
	tui_line_home(&l);
	assert_int_equal(tui_line_scroll(&l, first, 4), 0);
	tui_line_set(&l, "abc");
	assert_int_equal(tui_line_scroll(&l, 0, 80), 0);
	/* a paste of a million characters read before the next draw: from 0 to
	 * the end in one call, which looks back only the width shown */
	tui_line_set(&l, "");
	for (int i = 0; i < 1000000; i++)
		tui_line_insert(&l, 'a');
	assert_int_equal(tui_line_scroll(&l, 0, 80), 1000000 - 79);
	tui_line_set(&l, "\xff" "a"); /* invalid byte: U+FFFD */
	assert_int_equal(l.n, 2);
	assert_int_equal((int)l.cp[0], 0xFFFD);
	tui_line_free(&l);
	tui_line_free(&l); /* twice is harmless */
}

int main(void)
{
	setlocale(LC_ALL, "");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_80x24),
		cmocka_unit_test(test_frame_120x40),
		cmocka_unit_test(test_scroll),
		cmocka_unit_test(test_title_width),
		cmocka_unit_test(test_grid_small_model_80x24),
		cmocka_unit_test(test_grid_256_tokens),
		cmocka_unit_test(test_grid_zoom),
		cmocka_unit_test(test_grid_key_labels),
		cmocka_unit_test(test_grid_scrolls_large_model),
		cmocka_unit_test(test_grid_many_sizes),
		cmocka_unit_test(test_grid_joined),
		cmocka_unit_test(test_head_layout),
		cmocka_unit_test(test_token_layout),
		cmocka_unit_test(test_half_cells),
		cmocka_unit_test(test_sharing_cycle),
		cmocka_unit_test(test_mask_cycle),
		cmocka_unit_test(test_status_text),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_hints),
		cmocka_unit_test(test_line_editor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
