/*
 * tui-views.c — the visualizer's views in order (1 grid, 2 head, 3 token,
 * 4 numbers, 5 lens: the keys 1-5, Tab, `view NAME`), and the selection
 * the views share.  A new view is a file with its struct tui_view_mode and one line
 * here.
 */
#include "tui.h"

#include <stdio.h>
#include <string.h>

extern const struct tui_view_mode tui_grid_view, tui_head_view, tui_token_view, tui_numbers_view,
	tui_lens_view;

const struct tui_view_mode *const tui_views[] = {
	&tui_grid_view,
	&tui_head_view,
	&tui_token_view,
	&tui_numbers_view,
	&tui_lens_view,
};
const int tui_n_views = (int)(sizeof tui_views / sizeof tui_views[0]);

const char *tui_view_name(int v)
{
	return v >= 0 && v < tui_n_views ? tui_views[v]->name : "?";
}

int tui_view_parse(const char *s, int *out)
{
	for (int v = 0; v < tui_n_views; v++) {
		char num[16];
		snprintf(num, sizeof num, "%d", v + 1);
		if (!strcmp(s, tui_views[v]->name) || !strcmp(s, num)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void tui_select_head(struct tui_state *t, int l, int h)
{
	struct session *s = t->s;
	if (!s->model)
		return;
	const struct model_config *c = &s->model->cfg;
	s->sel_layer = clampi(l, 0, c->n_layer - 1);
	s->sel_head = clampi(h, 0, c->n_head - 1);
	s->dirty |= DIRTY_SELECT;
}

void tui_step_head(struct tui_state *t, int d)
{
	struct session *s = t->s;
	if (!s->model)
		return;
	int L = s->model->cfg.n_layer, H = s->model->cfg.n_head, n = L * H;
	int i = ((s->sel_layer * H + s->sel_head + d) % n + n) % n;
	tui_select_head(t, i / H, i % H);
}

void tui_select_token(struct tui_state *t, int q)
{
	struct session *s = t->s;
	if (s->n_tokens <= 0)
		return;
	s->sel_token = clampi(q, 0, s->n_tokens - 1);
	s->dirty |= DIRTY_SELECT;
}
