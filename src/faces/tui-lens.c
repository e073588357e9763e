/*
 * tui-lens.c — the lens view: the logit lens (lens.h) as a depth x
 * position table, each cell shaded by the probability that depth's lens
 * gives the model's own prediction at that position, a legend of the
 * shades and the rows, and below it the selected position's most likely
 * token at every depth.  Left/right move the position; the lens is
 * computed once per run.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>

#include "lens.h"
#include "render.h"
#include "tokenizer.h"

/* The lens view's own state. */
struct lens_view {
	struct lens *lens;     /* the lens of the run (owned), or NULL before the first */
	unsigned long gen;     /* the session's run_gen it was computed for */
	int col0;              /* the first position shown */
};

static void *lens_init(struct tui_state *t)
{
	(void)t;
	return xcalloc(1, sizeof(struct lens_view));
}

static void lens_view_free(void *data)
{
	struct lens_view *lv = data;
	if (lv && lv->lens) {
		lens_free(lv->lens);
		free(lv->lens);
	}
	free(lv);
}

/* The lens of the session's current run, computed when the run changed. */
static const struct lens *current_lens(struct tui_state *t, struct lens_view *lv)
{
	struct session *s = t->s;
	if (!lv->lens || lv->gen != s->run_gen) {
		if (lv->lens)
			lens_free(lv->lens);
		else
			lv->lens = xcalloc(1, sizeof *lv->lens);
		lens_run(s->model, s->run, lv->lens);
		lv->gen = s->run_gen;
	}
	return lv->lens;
}

static void lens_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	struct lens_view *lv = data;
	struct session *s = t->s;
	if (!tui_need_run(s, r))
		return;
	if (!cfg_has_head(&s->model->cfg)) {
		tui_put(r->y, r->x, r->w, "no output head (a BertModel): the lens needs one", TUI_A_DIM,
			TUI_ROLE_NONE);
		return;
	}
	const struct lens *ln = current_lens(t, lv);
	int T = ln->T, D = ln->D, q = s->sel_token;
	bool wide;
	char **lab = tui_token_labels(s, NULL, &wide);
	int cw = wide ? 2 : 1, lw = 11;
	int cols = (r->w - lw) / cw;
	if (cols < 1)
		cols = 1;
	/* keep the selected position in view */
	if (q < lv->col0)
		lv->col0 = q;
	if (q >= lv->col0 + cols)
		lv->col0 = q - cols + 1;
	if (lv->col0 > T - cols)
		lv->col0 = T - cols > 0 ? T - cols : 0;
	int c0 = lv->col0, c1 = c0 + cols < T ? c0 + cols : T, y = r->y;

	char want[64];
	tok_label(s->model->tok, ln->final[q], want, sizeof want);
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "logit lens: p(the model's prediction) by depth; position %d '%s' predicts '%s'", q,
		   lab[q], want);
	for (int i = c0; i < c1; i++)
		tui_put(y, r->x + lw + (i - c0) * cw, cw, lab[i], i == q ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_BOLD,
			i == q ? TUI_ROLE_SELECT : TUI_ROLE_LABEL);
	y++;
	for (int d = 0; d < D && y < r->y + r->h; d++, y++) {
		char name[32];
		snprintf(name, sizeof name, d ? "after %d" : "embeddings", d - 1);
		tui_put(y, r->x, lw, name, 0, TUI_ROLE_LABEL);
		for (int i = c0; i < c1; i++)
			tui_heat(t, y, r->x + lw + (i - c0) * cw, cw, ln->p[(size_t)d * T + i],
				 i == q ? TUI_A_BOLD : 0);
	}
	/* what the shades and the rows are */
	if (y < r->y + r->h) {
		int x = r->x + tui_put(y, r->x, r->w, "shade ", TUI_A_DIM, TUI_ROLE_NONE);
		x += tui_heat_scale(t, y, x, r->x + r->w - x);
		tui_put(y++, x, r->x + r->w - x, ": p each depth gives the model's final prediction", TUI_A_DIM,
			TUI_ROLE_NONE);
	}
	if (y < r->y + r->h)
		tui_put(y++, r->x, r->w, "rows: the embeddings, then the stream after each block (the last is the output)",
			TUI_A_DIM, TUI_ROLE_NONE);
	/* the selected position, depth by depth */
	y++;
	if (y < r->y + r->h)
		tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   "at position %d: each depth's most likely next token", q);
	for (int d = 0; d < D && y < r->y + r->h; d++, y++) {
		char name[32], top[64];
		snprintf(name, sizeof name, d ? "after %d" : "embeddings", d - 1);
		tok_label(s->model->tok, ln->top[(size_t)d * T + q], top, sizeof top);
		tui_put(y, r->x, lw, name, 0, TUI_ROLE_LABEL);
		int x = r->x + lw + tui_put(y, r->x + lw, 12, top, TUI_A_BOLD, TUI_ROLE_NONE);
		tui_printf(y, x, r->x + r->w - x, 0, TUI_ROLE_NONE, "  p(%s) %.3f", want,
			   (double)ln->p[(size_t)d * T + q]);
	}
	render_labels_free(lab, T);
}

static void lens_arrows(struct tui_state *t, void *data, int dy, int dx)
{
	(void)data;
	if (dx)
		tui_select_token(t, t->s->sel_token + dx);
	if (dy)
		tui_step_head(t, dy);
}

static const struct tui_hint lens_hints[] = {
	TUI_HINT_OPTIONS, { "\u2190\u2192", "hl", "position" }, { "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_lens_view = {
	.name = "lens",
	.export_what = "stats",
	.hints = lens_hints,
	.init = lens_init,
	.free = lens_view_free,
	.draw = lens_draw,
	.arrows = lens_arrows,
};
