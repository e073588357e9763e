/*
 * tui-token.c — the token view: one query token's attention across the
 * heads of one layer (or every layer, z), one bar row per head over the
 * keys (masked keys marked), the strongest key at the end with its value
 * as computed (heat.h: a raw score, a norm).  Left/right move the token,
 * up/down the head; a click selects a head and a key token.
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
#include "render.h"
#include "tokenizer.h"

/* The token view's own state. */
struct token {
	struct tui_token_layout layout; /* where the last draw put the rows (clicks) */
	bool all;                       /* every layer's heads, not the selected layer's (z) */
	int row0, key0;                 /* the first head row and key shown */
};

static void *token_init(struct tui_state *t)
{
	(void)t;
	return xcalloc(1, sizeof(struct token));
}

/* A new model or text: no scrolling. */
static void token_reset(struct tui_state *t, void *data)
{
	(void)t;
	struct token *tv = data;
	tv->row0 = tv->key0 = 0;
}

static void token_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	struct token *tv = data;
	struct session *s = t->s;
	if (!tui_need_run(s, r))
		return;
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, T = s->n_tokens, q = s->sel_token;
	int lw;
	bool wide;
	char **lab = tui_token_labels(s, &lw, &wide);
	int n_layers = tv->all ? L : 1;
	int first_layer = tv->all ? 0 : s->sel_layer;
	int sel_row = tv->all ? s->sel_layer * H + s->sel_head : s->sel_head;
	struct tui_token_layout *tk = &tv->layout;
	int label_w = tui_grid_title_width(L, H) - 2;
	tui_token_layout(r, n_layers, H, T, label_w, wide, q, sel_row, tv->row0, tv->key0, tk);
	tv->row0 = tk->row0;
	tv->key0 = tk->key0;

	char a[64];
	tui_short_label(lab[q], 12, a, sizeof a);
	if (tv->all)
		tui_printf(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   "token %d '%s' %s keys, in every head of every layer (z: one layer)", q, a,
			   tui_utf8() ? "\u2192" : "->");
	else
		tui_printf(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   "token %d '%s' %s keys, in every head of layer %d (z: all layers)", q, a,
			   tui_utf8() ? "\u2192" : "->", first_layer);
	if (tk->right.w > 0) /* what the right column lists: a value as computed */
		tui_printf(tk->keys.y, tk->right.x, tk->right.w, TUI_A_DIM, TUI_ROLE_NONE, "top key, %s",
			   heat_kind_value(s->heat));
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
			tui_put(y, xx, 1, tui_mark_ablated(), TUI_A_BOLD, TUI_ROLE_ABLATED);
		const float *row = session_att(s, l, h) + (size_t)q * T;
		for (int j = tk->key0; j < tk->key0 + tk->keys_vis; j++) {
			int lev = tui_bar_level(row[j]);
			int xj = tk->bars.x + (j - tk->key0) * tk->cw;
			for (int k = 0; k < tk->cw; k++) {
				const char *gl = tui_utf8() ? bars_u[lev] : bars_a[lev];
				if (isnan(row[j]))
					tui_heat(t, y, xj + k, 1, NAN, 0);
				else if (lev > 0)
					tui_heat_glyph(y, xj + k, gl, row[j], j == q);
				else
					tui_put(y, xj + k, 1, gl, 0, TUI_ROLE_NONE);
			}
		}
		int best;
		if (tk->right.w > 0 && tui_top_keys(row, T, 1, &best) == 1) {
			char kl[32];
			tui_short_label(lab[best], 6, kl, sizeof kl);
			int rx = tk->right.x;
			int used = tui_printf(y, rx, tk->right.w, 0, TUI_ROLE_NONE, "%s%4d ",
					      tui_utf8() ? "\u2192" : ">", best);
			used += tui_put(y, rx + used, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
			/* the value as computed (a raw score, a norm), as the panels list it */
			tui_printf(y, rx + 12, tk->right.w - 12, 0, TUI_ROLE_NONE, " %.2f",
				   (double)session_heat_values(s, l, h)[(size_t)q * T + best]);
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

static void token_move(struct tui_state *t, void *data, int dy, int dx)
{
	(void)data;
	if (dx)
		tui_select_token(t, t->s->sel_token + dx);
	if (dy)
		tui_step_head(t, dy);
}

static enum tui_key_result token_click(struct tui_state *t, void *data, int y, int x, bool *open)
{
	(void)open;
	struct token *tv = data;
	int q, k;
	if (!tui_token_hit(&tv->layout, y, x, &q, &k))
		return TUI_KEY_IGNORED;
	int H = t->s->model->cfg.n_head;
	int first = tv->all ? 0 : t->s->sel_layer;
	tui_select_head(t, first + q / H, q % H);
	if (k >= 0)
		tui_select_token(t, k);
	return TUI_KEY_REFRESH;
}

static enum tui_key_result token_key(struct tui_state *t, void *data, int ch, bool fn)
{
	(void)t;
	struct token *tv = data;
	if (fn || ch != 'z')
		return TUI_KEY_IGNORED;
	tv->all = !tv->all;
	return TUI_KEY_REFRESH;
}

static const struct tui_hint token_hints[] = {
	TUI_HINT_OPTIONS, { "\u2190\u2192", "hl", "token" }, { "\u2191\u2193", "jk", "head" },
	{ "z", "z", "layers" }, { "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_token_view = {
	.name = "token",
	.export_what = "grid",
	.hints = token_hints,
	.init = token_init,
	.free = free,
	.reset = token_reset,
	.side = tui_side_always,
	.draw = token_draw,
	.arrows = token_move,
	.click = token_click,
	.key = token_key,
};
