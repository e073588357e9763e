/*
 * tui-patch.c — the patch view: the last `patch TEXT` (patch.h) of this
 * run as two shaded tables: the share of the clean-vs-corrupted logit
 * difference each head's output restores (layers down, heads across), and
 * the share the residual stream after each block restores at each
 * position (the selected position marked).  Shading clips the share to
 * 0..1 (a line under the title says so, with the ramp); the numbers are
 * the shares, each cell's shade beside its own number with a gap before
 * the next.  Left/right move the position.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>

#include "render.h"
#include "tokenizer.h"

static double clip01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The heads table from row y: a row per layer, a cell per head of its
 * share shaded and written, the cells apart so that each shade sits by
 * its own number.  Returns the next row. */
static int patch_heads(struct tui_state *t, const struct patch_result *p, const struct tui_rect *r, int y)
{
	/* a cell: the shade (2 columns, or 1), a blank, the share in 5, and
	 * a gap of 2 (or 1) before the next cell */
	int lw = 8, shade = 2, gap = 2;
	if (lw + p->H * (shade + 6 + gap) > r->w)
		gap = 1;
	if (lw + p->H * (shade + 6 + gap) > r->w)
		shade = 1;
	int cell = shade + 6 + gap, x0 = r->x + lw;
	for (int h = 0; h < p->H && x0 + h * cell < r->x + r->w; h++) { /* over the numbers */
		char name[16];
		snprintf(name, sizeof name, "h%d", h);
		tui_printf(y, x0 + h * cell, cell, TUI_A_DIM, TUI_ROLE_NONE, "%*s", shade + 6, name);
	}
	y++;
	for (int l = 0; l < p->L && y < r->y + r->h; l++, y++) {
		tui_printf(y, r->x, lw, 0, TUI_ROLE_LABEL, "layer %d", l);
		for (int h = 0; h < p->H && x0 + h * cell + shade + 6 <= r->x + r->w; h++) {
			double v = p->heads[l * p->H + h];
			tui_heat(t, y, x0 + h * cell, shade, clip01(v), 0);
			tui_printf(y, x0 + h * cell + shade, 6, 0, TUI_ROLE_NONE, " %5.2f", render_shown(v, 2));
		}
	}
	return y;
}

/* What the shading means, on row y: the ramp drawn from 0 to 1. */
static void patch_legend(struct tui_state *t, const struct tui_rect *r, int y)
{
	int x = r->x + tui_put(y, r->x, r->w, "shade ", TUI_A_DIM, TUI_ROLE_NONE);
	x += tui_heat_scale(t, y, x, r->x + r->w - x);
	tui_put(y, x, r->x + r->w - x, ": the share restored (below 0 blank, above 1 full)", TUI_A_DIM,
		TUI_ROLE_NONE);
}

static void patch_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	(void)data;
	struct session *s = t->s;
	if (!tui_need_run(s, r))
		return;
	const struct patch_result *p = &s->patch;
	int y = r->y;
	if (p->L == 0 || s->patch_gen != s->run_gen || p->T != s->n_tokens) {
		tui_put(y++, r->x, r->w, p->L ? "the last patch ran on another text or other options"
					      : "nothing patched yet",
			TUI_A_BOLD, TUI_ROLE_LABEL);
		tui_put(y, r->x, r->w, "press : and type  patch TEXT  (a corrupted text of as many tokens)",
			0, TUI_ROLE_NONE);
		return;
	}
	char ca[64], xa[64];
	tok_label(s->model->tok, p->clean_answer, ca, sizeof ca);
	tok_label(s->model->tok, p->corrupt_answer, xa, sizeof xa);
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "patching into \"%s\": clean answers '%s', corrupted '%s'; share restored", s->patch_text,
		   ca, xa);
	patch_legend(t, r, y++);
	y = patch_heads(t, p, r, y);
	/* residual stream: after block l (rows) at each position (columns),
	 * two columns a position when they fit */
	y++;
	if (y >= r->y + r->h)
		return;
	bool wide;
	char **lab = tui_token_labels(s, NULL, &wide);
	int lw = 9, T = p->T, q = s->sel_token;
	int cw = wide || lw + 2 * T <= r->w ? 2 : 1;
	int cols = (r->w - lw) / cw > 0 ? (r->w - lw) / cw : 1;
	int c0 = q - cols + 1 > 0 ? q - cols + 1 : 0, c1 = c0 + cols < T ? c0 + cols : T;
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "the stream after each block at one position (position %d: %.2f after the last)", q,
		   p->resid[(size_t)(p->L - 1) * T + q]);
	for (int i = c0; i < c1 && y < r->y + r->h; i++)
		tui_put(y, r->x + lw + (i - c0) * cw, cw, lab[i], i == q ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_BOLD,
			i == q ? TUI_ROLE_SELECT : TUI_ROLE_LABEL);
	y++;
	for (int l = 0; l < p->L && y < r->y + r->h; l++, y++) {
		tui_printf(y, r->x, lw, 0, TUI_ROLE_LABEL, "after %d", l);
		for (int i = c0; i < c1; i++)
			tui_heat(t, y, r->x + lw + (i - c0) * cw, cw, clip01(p->resid[(size_t)l * T + i]),
				 i == q ? TUI_A_BOLD : 0);
	}
	render_labels_free(lab, s->n_tokens);
}

static void patch_move(struct tui_state *t, void *data, int dy, int dx)
{
	(void)data;
	(void)dy;
	if (dx)
		tui_select_token(t, t->s->sel_token + dx);
}

static const struct tui_hint patch_hints[] = {
	TUI_HINT_OPTIONS, { "\u2190\u2192", "hl", "position" }, { ":", ":", "patch TEXT" },
	{ "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_patch_view = {
	.name = "patch",
	.export_what = "stats",
	.hints = patch_hints,
	.side = NULL,
	.draw = patch_draw,
	.arrows = patch_move,
};
