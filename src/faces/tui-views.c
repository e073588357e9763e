/*
 * tui-views.c — the visualizer's views in order, the table behind the keys
 * 1..n, Tab and `view NAME` (tui-view.h lists them).  A new view is a file
 * with its struct tui_view_mode, declared and listed here.
 */
#include "tui-view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

extern const struct tui_view_mode tui_grid_view, tui_head_view, tui_token_view, tui_numbers_view,
	tui_lens_view, tui_curves_view, tui_patch_view, tui_circuits_view;

const struct tui_view_mode *const tui_views[] = {
	&tui_grid_view,
	&tui_head_view,
	&tui_token_view,
	&tui_numbers_view,
	&tui_lens_view,
	&tui_curves_view,
	&tui_patch_view,
	&tui_circuits_view,
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

void tui_views_init(struct tui_state *t)
{
	t->data = xcalloc((size_t)tui_n_views, sizeof *t->data);
	for (int v = 0; v < tui_n_views; v++)
		if (tui_views[v]->init)
			t->data[v] = tui_views[v]->init(t);
}

void tui_views_free(struct tui_state *t)
{
	if (!t->data)
		return;
	for (int v = 0; v < tui_n_views; v++)
		if (tui_views[v]->free)
			tui_views[v]->free(t->data[v]);
	free(t->data);
	t->data = NULL;
}

void tui_views_reset(struct tui_state *t)
{
	for (int v = 0; v < tui_n_views; v++)
		if (tui_views[v]->reset)
			tui_views[v]->reset(t, t->data[v]);
}
