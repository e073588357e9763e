/*
 * tui-patch.c — the patch view: the last `patch TEXT` (patch.h) of this
 * run as two shaded tables: the share of the clean-vs-corrupted logit
 * difference each head's output restores (layers down, heads across), and
 * the share the residual stream after each block restores at each
 * position (the selected position marked).  Shading clips the share to
 * 0..1; the numbers are the shares.  Left/right move the position.
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
	/* heads: L rows x H cells of 7 columns */
	int cell = 8, x0 = r->x + 8;
	for (int h = 0; h < p->H && x0 + h * cell < r->x + r->w; h++)
		tui_printf(y, x0 + h * cell, cell, TUI_A_DIM, TUI_ROLE_NONE, "    h%d", h);
	y++;
	for (int l = 0; l < p->L && y < r->y + r->h; l++, y++) {
		tui_printf(y, r->x, 8, 0, TUI_ROLE_LABEL, "layer %d", l);
		for (int h = 0; h < p->H && x0 + h * cell + cell <= r->x + r->w; h++) {
			double v = p->heads[l * p->H + h];
			tui_heat(t, y, x0 + h * cell, 2, clip01(v), 0);
			tui_printf(y, x0 + h * cell + 2, cell - 2, 0, TUI_ROLE_NONE, " %5.2f",
				   render_shown(v, 2));
		}
	}
	/* residual stream: after block l (rows) at each position (columns) */
	y++;
	if (y >= r->y + r->h)
		return;
	bool wide;
	char **lab = tui_token_labels(s, NULL, &wide);
	int cw = wide ? 2 : 1, lw = 9, T = p->T, q = s->sel_token;
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
