/*
 * tui-head.c — the head view: one head's attention with token labels on
 * both axes, a cursor on one query row and one key column, scrolling to
 * follow it.  Up/down move the query, left/right the key, PgUp/PgDn a page
 * of queries; a click puts the cursor on a cell.
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

/* The head view's own state: its cursor's key column (the query row is
 * the session's selected token) and its scrolling. */
struct head {
	struct tui_head_layout layout; /* where the last draw put the cells (clicks, pages) */
	int key;                       /* the key column of the cursor */
	bool diff;                     /* it shows run minus native (d) */
	int row0, col0;                /* the first query row and key column shown */
};

/* A new model or text: the cursor on the selected token, no scrolling. */
static void head_reset(struct tui_state *t, void *data)
{
	struct head *hv = data;
	hv->key = t->s->sel_token;
	hv->row0 = hv->col0 = 0;
}

static void *head_init(struct tui_state *t)
{
	struct head *hv = xcalloc(1, sizeof *hv);
	head_reset(t, hv);
	return hv;
}

/* The map's legend in the panel from row y (up to end): the ramp's scale
 * (or the diff's), how the map is shaded when it is not the weights
 * themselves (the row of query q for scores, from raw (T, T)), and the
 * masked glyph when any cell of disp (T, T) is masked.  Returns the next
 * row. */
static int head_legend(struct tui_state *t, const struct tui_rect *p, int y, int end, const float *raw,
		       const float *disp, int T, int q, bool diff)
{
	enum heat_kind kind = t->s->heat;
	if (y < end)
		tui_put(y++, p->x, p->w, "rows: query, columns: key", TUI_A_DIM, TUI_ROLE_NONE);
	if (diff) {
		if (y < end)
			tui_put(y++, p->x, p->w, "+k/-k: k tenths up/down", TUI_A_DIM, TUI_ROLE_NONE);
		return y;
	}
	if (kind == HEAT_SCORES && y + 1 < end) {
		const float *row = raw + (size_t)q * T;
		double lo = INFINITY, hi = -INFINITY;
		for (int j = 0; j < T; j++)
			if (!isnan(row[j])) {
				lo = row[j] < lo ? row[j] : lo;
				hi = row[j] > hi ? row[j] : hi;
			}
		tui_printf(y++, p->x, p->w, TUI_A_DIM, TUI_ROLE_NONE, "map: each row's scores,");
		tui_printf(y++, p->x, p->w, TUI_A_DIM, TUI_ROLE_NONE, "min..max %s 0..1; row %d:",
			   tui_utf8() ? "\u2192" : "->", q);
		if (y < end && lo <= hi)
			tui_printf(y++, p->x, p->w, TUI_A_DIM, TUI_ROLE_NONE, " %.3f..%.3f", lo, hi);
	} else if (kind == HEAT_NORMS && y < end) {
		tui_put(y++, p->x, p->w, "map: shares of its row", TUI_A_DIM, TUI_ROLE_NONE);
	} else if (kind == HEAT_ROLLOUT && y < end) {
		tui_put(y++, p->x, p->w, "map: as is, rows sum to 1", TUI_A_DIM, TUI_ROLE_NONE);
	}
	if (y < end) { /* the scale: 0, 0.1, ..., 1 */
		tui_put(y, p->x, p->w, "0 ", TUI_A_DIM, TUI_ROLE_NONE);
		for (int i = 0; i <= 10 && 2 + i * 2 < p->w - 2; i++)
			tui_heat(t, y, p->x + 2 + i * 2, 2, i / 10.0, 0);
		tui_put(y, p->x + 24, p->w - 24, " 1", TUI_A_DIM, TUI_ROLE_NONE);
		y++;
	}
	bool masked = false;
	for (size_t k = 0; k < (size_t)T * T && !masked; k++)
		masked = isnan(disp[k]);
	if (masked && y < end) {
		tui_heat(t, y, p->x, 1, NAN, 0);
		tui_put(y++, p->x + 1, p->w - 1, " masked: a key the query", TUI_A_DIM, TUI_ROLE_NONE);
		if (y < end)
			tui_put(y++, p->x, p->w, "  may not see (no score)", TUI_A_DIM, TUI_ROLE_NONE);
	}
	return y;
}

/* The panel beside the map: query q (what a is its label) of head l.hd,
 * what its weights sum to and their entropy, its strongest keys by raw
 * value (heat.v; the bars shade disp, the map's values), or the run minus
 * native when diff; with room the head's entropy and the legend. */
static void head_panel(struct tui_state *t, const struct tui_rect *p, char **lab, const float *disp,
		       int T, int q, const char *a, int l, int hd, bool diff)
{
	struct session *s = t->s;
	int y = p->y, end = p->y + p->h, best[TUI_HEAD_TOPK];
	const float *raw = diff ? disp : session_heat_values(s, l, hd);
	const float *row = raw + (size_t)q * T, *drow = disp + (size_t)q * T;
	const float *w = run_att(s->run, l, 0, hd) + (size_t)q * T;
	int m = tui_top_keys(row, T, TUI_HEAD_TOPK, best);
	tui_printf(y++, p->x, p->w, TUI_A_BOLD, TUI_ROLE_LABEL, "query %d '%s'", q, a);
	double sum = attention_row_sum(s->run, l, hd, q);
	if (y < end)
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, " its weights sum to %.3f", sum);
	if (tui_rows_short(t) && y < end)
		tui_printf(y++, p->x, p->w, TUI_A_DIM, TUI_ROLE_NONE, " all rows: mean %.3f",
			   tui_row_sums(t)->mean);
	if (y < end)
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, " their entropy %.2f nats", row_entropy(w, T));
	if (y < end)
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, diff ? "its largest rises:" : "strongest keys, %s:",
			   heat_kind_value(s->heat));
	for (int i = 0; i < m && y < end; i++, y++) {
		char kl[64];
		tui_short_label(lab[best[i]], 6, kl, sizeof kl);
		int xx = p->x + tui_printf(y, p->x, p->w, 0, TUI_ROLE_NONE, "%4d ", best[i]);
		xx += tui_put(y, xx, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
		xx = p->x + 12;
		xx += tui_printf(y, xx, p->x + p->w - xx, 0, TUI_ROLE_NONE, "%.3f ", (double)row[best[i]]);
		tui_put_bar(y, xx, p->x + p->w - xx, drow[best[i]], TUI_ROLE_NONE);
	}
	if (p->h > TUI_PANEL_ROWS && y + 2 < end) {
		double he, hm;
		head_entropy(s->run, l, hd, &he, &hm);
		y++;
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, "head entropy %.3f nats", he);
		tui_printf(y++, p->x, p->w, 0, TUI_ROLE_NONE, "max weight   %.3f", hm);
		if (y + 1 < end)
			head_legend(t, p, y + 1, end, raw, disp, T, q, diff);
	}
}

static void head_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	struct head *hv = data;
	struct session *s = t->s;
	if (!tui_need_run(s, r))
		return;
	int T = s->n_tokens, l = s->sel_layer, hd = s->sel_head;
	int lw;
	bool wide;
	char **lab = tui_token_labels(s, &lw, &wide);
	if (hv->key >= T)
		hv->key = T - 1;
	if (hv->key < 0)
		hv->key = 0;
	int q = s->sel_token, k = hv->key;
	struct tui_head_layout *h = &hv->layout;
	tui_head_layout(r, T, lw, wide, q, k, hv->row0, hv->col0, h);
	hv->row0 = h->row0;
	hv->col0 = h->col0;
	float *diff = hv->diff ? session_diff(s, l, hd) : NULL;
	const float *att = diff ? diff : session_att(s, l, hd);
	char a[64], b[64];

	/* title */
	tui_short_label(lab[q], 12, a, sizeof a);
	tui_short_label(lab[k], 12, b, sizeof b);
	int x = r->x;
	x += tui_printf(r->y, x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL, "head %d.%d", l, hd);
	if (session_head_ablated(s, l, hd))
		x += tui_printf(r->y, x, r->x + r->w - x, TUI_A_BOLD, TUI_ROLE_ABLATED, " %s ablated",
				tui_mark_ablated());
	if (diff)
		x += tui_printf(r->y, x, r->x + r->w - x, TUI_A_BOLD, TUI_ROLE_UP, " minus native");
	/* the cursor's cell as the panel lists values: raw, or masked */
	char val[48];
	double v = diff ? att[(size_t)q * T + k] : session_heat_values(s, l, hd)[(size_t)q * T + k];
	if (isnan(v))
		snprintf(val, sizeof val, "masked");
	else if (diff || s->heat == HEAT_WEIGHTS)
		snprintf(val, sizeof val, diff ? "%+.3f" : "%.3f", v);
	else
		snprintf(val, sizeof val, "%s %.3f", heat_kind_value(s->heat), v);
	tui_printf(r->y, x, r->x + r->w - x, 0, TUI_ROLE_NONE, "  %d tokens%s  query %d '%s' %s key %d '%s': %s",
		   T, h->rows_vis < T || h->cols_vis < T ? " (scrolls)" : "", q, a,
		   tui_utf8() ? "\u2192" : "->", k, b, val);

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
		tui_short_label(lab[i], h->label_w, cut, sizeof cut);
		tui_put(y, xx, h->label_w, cut, at | (cur ? 0 : TUI_A_BOLD), cur ? role : TUI_ROLE_LABEL);
		const float *row = att + (size_t)i * T;
		for (int j = h->col0; j < h->col0 + h->cols_vis; j++)
			if (diff)
				tui_change(y, h->matrix.x + (j - h->col0) * h->cw, h->cw, row[j],
					   cur && j == k ? TUI_A_REVERSE : 0);
			else
				tui_heat(t, y, h->matrix.x + (j - h->col0) * h->cw, h->cw, row[j],
					 cur && j == k ? TUI_A_REVERSE : 0);
	}

	if (h->panel.w > 0)
		head_panel(t, &h->panel, lab, att, T, q, a, l, hd, diff != NULL);
	render_labels_free(lab, T);
	free(diff);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void head_move(struct tui_state *t, void *data, int dy, int dx)
{
	struct head *hv = data;
	struct session *s = t->s;
	if (dy)
		tui_select_token(t, s->sel_token + dy);
	if (dx)
		hv->key = clampi(hv->key + dx, 0, s->n_tokens - 1);
}

static enum tui_key_result head_click(struct tui_state *t, void *data, int y, int x, bool *open)
{
	(void)open;
	struct head *hv = data;
	int q, k;
	if (!tui_head_hit(&hv->layout, y, x, &q, &k))
		return TUI_KEY_IGNORED;
	tui_select_token(t, q);
	hv->key = k;
	return TUI_KEY_REFRESH;
}

static enum tui_key_result head_key(struct tui_state *t, void *data, int ch, bool fn)
{
	struct head *hv = data;
	if (!fn && ch == 'd') { /* the weights, or what the options changed in them */
		hv->diff = !hv->diff;
		return TUI_KEY_REFRESH;
	}
	if (!fn || (ch != KEY_PPAGE && ch != KEY_NPAGE) || !session_ready(t->s))
		return TUI_KEY_IGNORED;
	int page = hv->layout.rows_vis > 1 ? hv->layout.rows_vis - 1 : 1;
	tui_select_token(t, t->s->sel_token + (ch == KEY_PPAGE ? -page : page));
	return TUI_KEY_REFRESH;
}

static const struct tui_hint head_hints[] = {
	TUI_HINT_OPTIONS, { "\u2191\u2193", "jk", "query" }, { "\u2190\u2192", "hl", "key" },
	{ "[ ]", "[ ]", "head" }, { "d", "d", "diff" }, { "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_head_view = {
	.name = "head",
	.export_what = "heatmap",
	.hints = head_hints,
	.init = head_init,
	.free = free,
	.reset = head_reset,
	.side = tui_side_always,
	.draw = head_draw,
	.arrows = head_move,
	.click = head_click,
	.key = head_key,
};
