/*
 * tui-circuits.c — the circuits view: composition scores (compose.h) as a
 * layer x head table around the selected head.  A head of an earlier
 * layer shows the score of the selected head reading it (A = that head,
 * B = the selection), a head of a later layer the score of it reading the
 * selection (A = the selection); the selection's own layer is blank.
 * Each cell is shaded from the kind's weakest pair to its strongest and
 * written beside its shade; below the table, the strongest heads the
 * selection reads and the strongest that read it, with their ratio to the
 * random baseline.  Arrows move the selection, c switches the kind
 * (Q, K, V).  The scores are computed once per model, sharing and
 * placement (they are weights only: the text does not change them).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-view.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"

#define CIRC_LIST 3 /* heads listed under "reads" and "read by" */

/* The circuits view's own state. */
struct circ_view {
	struct compose_result r; /* the scores (owned), valid when have */
	bool have;
	const struct model *m;   /* what they are of: the model, K/V heads, placement */
	int kv_heads;
	enum norm_place placement;
	char err[ERR_MAX];       /* compose_run's refusal for that model, or "" */
	enum compose_kind kind;  /* the kind shown */
	double top[COMPOSE_KINDS]; /* each kind's strongest score */
	double low[COMPOSE_KINDS]; /* and its weakest */
};

static void *circ_init(struct tui_state *t)
{
	(void)t;
	struct circ_view *cv = xcalloc(1, sizeof *cv);
	cv->kind = COMPOSE_K;
	return cv;
}

static void circ_free(void *data)
{
	struct circ_view *cv = data;
	if (cv)
		compose_free(&cv->r);
	free(cv);
}

/* The scores of the session's model under its options, computed when the
 * model, the sharing or the placement changed; NULL with cv->err set when
 * compose_run refused the model. */
static const struct compose_result *current(struct tui_state *t, struct circ_view *cv)
{
	struct session *s = t->s;
	if (cv->m == s->model && cv->kv_heads == s->opt.kv_heads && cv->placement == s->opt.placement)
		return cv->have ? &cv->r : NULL;
	compose_free(&cv->r);
	cv->have = false;
	cv->m = s->model;
	cv->kv_heads = s->opt.kv_heads;
	cv->placement = s->opt.placement;
	cv->err[0] = '\0';
	struct err e;
	if (compose_run(s->model, &s->opt, &cv->r, &e) != 0) {
		snprintf(cv->err, sizeof cv->err, "%s", e.msg);
		return NULL;
	}
	cv->have = true;
	for (int k = 0; k < COMPOSE_KINDS; k++) {
		cv->top[k] = 0;
		cv->low[k] = 1;
		for (int i = 0; i < cv->r.n; i++) {
			double v = cv->r.pairs[i].score[k];
			cv->top[k] = v > cv->top[k] ? v : cv->top[k];
			cv->low[k] = v < cv->low[k] ? v : cv->low[k];
		}
	}
	return &cv->r;
}

/* The index in r->pairs of A = la.ha, B = lb.hb (la < lb), in compose.h's
 * order: by A's layer and head, then B's. */
static int pair_index(const struct compose_result *r, int la, int ha, int lb, int hb)
{
	int L = r->L, H = r->H, i = 0;
	for (int l = 0; l < la; l++)
		i += H * (L - 1 - l) * H;
	return i + ha * (L - 1 - la) * H + (lb - la - 1) * H + hb;
}

/* The score shown for head l.h beside the selection sl.sh: it reading the
 * selection (later layer) or read by it (earlier); -1 in the same layer. */
static double cell_score(const struct compose_result *r, enum compose_kind k, int sl, int sh, int l,
			 int h)
{
	if (l == sl)
		return -1;
	int i = l < sl ? pair_index(r, l, h, sl, sh) : pair_index(r, sl, sh, l, h);
	return r->pairs[i].score[k];
}

/* The table from row y: a row per layer (scrolled so the selection's shows),
 * a cell per head; returns the next row. */
static int circ_table(struct tui_state *t, const struct circ_view *cv, const struct tui_rect *r, int y,
		      int rows)
{
	const struct compose_result *c = &cv->r;
	struct session *s = t->s;
	int lw = 9, shade = 2, gap = 1, num = 6;
	if (lw + c->H * (shade + num + gap) > r->w)
		gap = 0;
	if (lw + c->H * (shade + num + gap) > r->w)
		shade = 1;
	if (lw + c->H * (shade + num + gap) > r->w)
		num = 0, shade = 2, gap = 1; /* shades only */
	int cell = shade + num + gap, x0 = r->x + lw;
	for (int h = 0; h < c->H && x0 + (h + 1) * cell - gap <= r->x + r->w; h++) {
		char name[16];
		snprintf(name, sizeof name, shade + num > 2 ? "h%d" : "%d", h);
		tui_printf(y, x0 + h * cell, shade + num, TUI_A_DIM, TUI_ROLE_NONE, "%*s", shade + num, name);
	}
	y++;
	int l0 = s->sel_layer - rows + 1 > 0 ? s->sel_layer - rows + 1 : 0;
	for (int l = l0; l < c->L && l < l0 + rows; l++, y++) {
		tui_printf(y, r->x, lw, 0, TUI_ROLE_LABEL, "layer %d", l);
		for (int h = 0; h < c->H && x0 + (h + 1) * cell - gap <= r->x + r->w; h++) {
			int x = x0 + h * cell;
			if (l == s->sel_layer) {
				bool sel = h == s->sel_head;
				tui_printf(y, x, shade + num, sel ? TUI_A_REVERSE | TUI_A_BOLD : TUI_A_DIM,
					   sel ? TUI_ROLE_SELECT : TUI_ROLE_NONE, "%*s", shade + num,
					   sel ? (shade + num > 2 ? "sel" : "**") : "-");
				continue;
			}
			double v = cell_score(c, cv->kind, s->sel_layer, s->sel_head, l, h);
			double lo = cv->low[cv->kind], span = cv->top[cv->kind] - lo;
			tui_heat(t, y, x, shade, span > 0 ? (v - lo) / span : 0, 0);
			if (num)
				tui_printf(y, x + shade, num, 0, TUI_ROLE_NONE, " %5.3f", v);
		}
	}
	return y;
}

struct ranked_head {
	double v;
	int l, h;
};

static int by_v(const void *a, const void *b)
{
	const struct ranked_head *x = a, *y = b;
	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->l != y->l ? x->l - y->l : x->h - y->h;
}

/* One line at y: the CIRC_LIST strongest heads of the layers before the
 * selection's (earlier true) or after it, with score and ratio to the
 * baseline. */
static void circ_list(struct tui_state *t, const struct circ_view *cv, const struct tui_rect *r, int y,
		      bool earlier)
{
	const struct compose_result *c = &cv->r;
	int sl = t->s->sel_layer, sh = t->s->sel_head, n = 0;
	struct ranked_head *v = xmalloc((size_t)c->L * c->H * sizeof *v);
	for (int l = earlier ? 0 : sl + 1; l < (earlier ? sl : c->L); l++)
		for (int h = 0; h < c->H; h++)
			v[n++] = (struct ranked_head){ cell_score(c, cv->kind, sl, sh, l, h), l, h };
	qsort(v, (size_t)n, sizeof *v, by_v);
	int x = r->x + tui_printf(y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL, "%-9s",
				  earlier ? "reads" : "read by");
	if (n == 0)
		tui_put(y, x, r->x + r->w - x, earlier ? "nothing: layer 0 reads only the embeddings"
						       : "nothing: no later layer",
			TUI_A_DIM, TUI_ROLE_NONE);
	for (int i = 0; i < n && i < CIRC_LIST; i++)
		x += tui_printf(y, x, r->x + r->w - x, 0, TUI_ROLE_NONE, "%d.%d %.3f (%.2fx)   ", v[i].l,
				v[i].h, v[i].v, v[i].v / c->baseline[cv->kind]);
	free(v);
}

static void circ_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	struct circ_view *cv = data;
	struct session *s = t->s;
	int y = r->y;
	if (!s->model) {
		tui_put(y, r->x, r->w, "no model: press : and type  load NAME", TUI_A_BOLD, TUI_ROLE_LABEL);
		return;
	}
	const struct compose_result *c = current(t, cv);
	if (!c) {
		tui_printf(y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_ERROR, "circuits: %s", cv->err);
		return;
	}
	const char *k = compose_kind_name(cv->kind);
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "%s-composition around %d.%d: earlier layers what it reads, later who reads it", k,
		   s->sel_layer, s->sel_head);
	int x = r->x + tui_put(y, r->x, r->w, "shade ", TUI_A_DIM, TUI_ROLE_NONE);
	x += tui_heat_scale(t, y, x, r->x + r->w - x);
	tui_printf(y++, x, r->x + r->w - x, TUI_A_DIM, TUI_ROLE_NONE,
		   ": %s pairs from %.3f to %.3f; random baseline %.3f", k,
		   cv->low[cv->kind], cv->top[cv->kind], c->baseline[cv->kind]);
	int rows = r->y + r->h - y - 4; /* the heading row, a blank and the two lists */
	rows = rows < 1 ? 1 : rows;
	y = circ_table(t, cv, r, y, rows) + 1;
	if (y < r->y + r->h)
		circ_list(t, cv, r, y++, true);
	if (y < r->y + r->h)
		circ_list(t, cv, r, y, false);
}

static enum tui_key_result circ_key(struct tui_state *t, void *data, int ch, bool fn)
{
	struct circ_view *cv = data;
	if (fn || ch != 'c' || !t->s->model)
		return TUI_KEY_IGNORED;
	cv->kind = (enum compose_kind)((cv->kind + 1) % COMPOSE_KINDS);
	return TUI_KEY_REFRESH;
}

static const struct tui_hint circ_hints[] = {
	TUI_HINT_OPTIONS, { "c", "c", "kind Q/K/V" }, { "\u2191\u2193\u2190\u2192", "hjkl", "head" },
	{ "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_circuits_view = {
	.name = "circuits",
	.export_what = "circuits",
	.hints = circ_hints,
	.init = circ_init,
	.free = circ_free,
	.side = NULL,
	.draw = circ_draw,
	.key = circ_key,
};
