/*
 * tui-screen.c — the visualizer's screen, drawn whole from the state
 * (curses sends only what changed): the status line (model, sharing,
 * norm, mask, scale, ablations, what the heatmaps show, the view), the
 * current view's body, the side panel beside it when the view wants one
 * and there is room, the info line (the message, else the run's numbers)
 * and the key hints; and the message itself.  Regions come from
 * tui_frame_layout (tui-layout.h).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "render.h"

void tui_screen_msg(struct tui *t, enum tui_msg_kind k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof t->msg, fmt, ap);
	va_end(ap);
	t->msg_kind = k;
}

static void draw_status(struct tui *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	tui_blank(r->y, r->x, r->w, TUI_A_BOLD, TUI_ROLE_STATUS);
	char line[512], right[64];
	snprintf(right, sizeof right, " %d %s ", t->st.view + 1, tui_views[t->st.view]->name);
	int rw = render_width(right);
	if (s->model) {
		const struct model_config *c = &s->model->cfg;
		const char *name = s->model->name ? s->model->name : s->model_spec ? s->model_spec : "model";
		tui_status_text(name, c->n_layer, c->n_head, &s->opt, t->st.utf8, true, line, sizeof line);
		if (render_width(line) > r->w - rw - 2) /* the sizes are in the views too */
			tui_status_text(name, c->n_layer, c->n_head, &s->opt, t->st.utf8, false, line,
					sizeof line);
		if (s->heat != HEAT_WEIGHTS) { /* what the heatmaps show, after the model */
			const char *sep = t->st.utf8 ? " \u2502 " : " | ";
			char *at = strstr(line, sep), rest[sizeof line];
			if (at) {
				snprintf(rest, sizeof rest, "%s", at);
				snprintf(at, sizeof line - (size_t)(at - line), "%s%s%s", sep,
					 heat_kind_name(s->heat), rest);
			}
		}
	} else {
		snprintf(line, sizeof line, "attnscope: no model loaded");
	}
	tui_put(r->y, r->x + 1, r->w - rw - 2, line, TUI_A_BOLD, TUI_ROLE_STATUS);
	tui_put(r->y, r->x + r->w - rw, rw, right, TUI_A_BOLD | TUI_A_REVERSE, TUI_ROLE_STATUS);
}

void tui_screen_info(struct tui *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	tui_blank(r->y, r->x, r->w, 0, TUI_ROLE_NONE);
	if (t->msg_kind != TUI_MSG_NONE) {
		/* wrapped to the width: one row on the info row, more grow
		 * upwards over the view (up to under the status line; a
		 * message of sizeof t->msg fits whole from 80x24) */
		struct tui_span rows[sizeof t->msg];
		int n = tui_wrap(t->msg, r->w, rows, (int)(sizeof rows / sizeof rows[0]));
		int max = r->y > 1 ? r->y : 1;
		bool cut = n > max; /* only on screens smaller than 80x24 */
		if (cut)
			n = max;
		for (int i = 0; i < n; i++) {
			int y = r->y - (n - 1) + i;
			char row[sizeof t->msg];
			snprintf(row, sizeof row, "%.*s", rows[i].len, t->msg + rows[i].off);
			tui_blank(y, r->x, r->w, 0, TUI_ROLE_NONE);
			tui_put(y, r->x, r->w, row, t->msg_kind == TUI_MSG_ERROR ? TUI_A_BOLD : 0,
				t->msg_kind == TUI_MSG_ERROR ? TUI_ROLE_ERROR : TUI_ROLE_NONE);
		}
		if (cut)
			tui_put(r->y, r->x + r->w - 1, 1, t->st.utf8 ? "\u2026" : "+", TUI_A_BOLD, TUI_ROLE_NONE);
		return;
	}
	if (!session_ready(s)) {
		session_summary(s, t->msg, sizeof t->msg);
		tui_put(r->y, r->x, r->w, t->msg, 0, TUI_ROLE_NONE);
		t->msg[0] = '\0';
		return;
	}
	char kv[32], loss[48], key[32] = "";
	format_bytes(session_kv_bytes(s, &s->opt), kv, sizeof kv);
	if (!cfg_has_head(&s->model->cfg)) { /* the summary line: drift, no KL */
		session_summary(s, t->msg, sizeof t->msg);
		tui_put(r->y, r->x, r->w, t->msg, 0, TUI_ROLE_NONE);
		t->msg[0] = '\0';
		return;
	}
	char where[96];
	if (session_nonfinite_text(s, where, sizeof where)) { /* the summary says where */
		session_summary(s, t->msg, sizeof t->msg);
		tui_put(r->y, r->x, r->w, t->msg, 0, TUI_ROLE_NONE);
		t->msg[0] = '\0';
		return;
	}
	if (isnan(s->run->loss))
		snprintf(loss, sizeof loss, "loss -");
	else
		snprintf(loss, sizeof loss, "loss %.3f (%+.3f)", s->run->loss, s->cmp.delta_loss);
	int nk = t->st.n_key_ms < TUI_KEY_MS_KEEP ? t->st.n_key_ms : TUI_KEY_MS_KEEP;
	if (nk)
		snprintf(key, sizeof key, "  key %.1f ms", t->st.key_ms[nk - 1]);
	/* narrow screens: the token count is in the views' headings, and the
	 * command a key ran only in the numbers view */
	bool wide = r->w >= 100;
	char tok[32] = "", agree[16];
	if (wide)
		snprintf(tok, sizeof tok, "%d tok  ", s->n_tokens);
	double a = 100.0 * s->cmp.top1_agree;
	snprintf(agree, sizeof agree, a == 100.0 || a == 0.0 ? "%.0f%%" : "%.1f%%", a);
	char line[512];
	int n = snprintf(line, sizeof line, "%s%s  KL %.4f  top-1 %s  KV %s  fwd %.1f ms%s", tok, loss,
			 s->cmp.kl, agree, kv, s->run->forward_ms, key);
	if (wide && t->st.ran[0] && n > 0 && (size_t)n < sizeof line)
		snprintf(line + n, sizeof line - (size_t)n, "  %s %s", t->st.utf8 ? "\u2190" : "<-", t->st.ran);
	tui_put(r->y, r->x, r->w, line, 0, TUI_ROLE_NONE);
}

static void draw_hints(struct tui *t, const struct tui_rect *r)
{
	char line[512];
	tui_hints_text(tui_views[t->st.view]->hints, !t->st.standalone, t->st.utf8, r->w, line,
		       sizeof line);
	/* keys in the hint colour, their words plain: draw word by word */
	int x = r->x;
	const char *p = line;
	bool key = true;
	while (*p && x < r->x + r->w) {
		if (*p == ' ') {
			int n = 0;
			while (p[n] == ' ')
				n++;
			key = n >= 2; /* two blanks separate hints; one separates key and word */
			x += n;
			p += n;
			continue;
		}
		size_t k = strcspn(p, " ");
		char word[64];
		snprintf(word, sizeof word, "%.*s", (int)(k < 63 ? k : 63), p);
		x += tui_put(r->y, x, r->x + r->w - x, word, key ? TUI_A_BOLD : TUI_A_DIM,
			     key ? TUI_ROLE_HINT : TUI_ROLE_NONE);
		p += k;
	}
}

void tui_screen_draw(struct tui *t)
{
	struct tui_state *st = &t->st;
	erase();
	const struct tui_view_mode *v = tui_views[st->view];
	bool side = v->side && v->side(st, st->data[st->view]);
	tui_frame_layout(LINES, COLS, side, &st->frame);
	const struct tui_frame *f = &st->frame;
	if (f->too_small) {
		tui_printf(0, 0, COLS, TUI_A_BOLD, TUI_ROLE_NONE, "%dx%d is too small", COLS, LINES);
		tui_printf(1, 0, COLS, 0, TUI_ROLE_NONE, "need %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS);
		tui_printf(2, 0, COLS, 0, TUI_ROLE_NONE, "q %s", st->standalone ? "quits" : "returns");
		return;
	}
	draw_status(t, &f->status);
	v->draw(st, st->data[st->view], &f->body);
	if (f->side.w > 0)
		tui_draw_side(st, &f->side);
	tui_screen_info(t, &f->info);
	draw_hints(t, &f->hints);
}
