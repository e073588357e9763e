/*
 * tui-numbers.c — the numbers view (the run's loss, KL, top-1, KV bytes
 * and timings, the selected head's role and top keys, the next-token
 * table against the baseline, every head's entropy) and the compact side
 * panel the other views show beside their body when there is room.
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

/* The run's numbers, one per row from y; returns the next row.  compact:
 * for the side panel. */
static int draw_run_numbers(struct tui_state *t, int y, int x, int w, int y_end, bool compact)
{
	struct session *s = t->s;
	const struct run *run = s->run, *base = s->base;
	char cur[32], nat[32];
	double kvc = session_kv_bytes(s, &s->opt), kvn = session_kv_bytes(s, &s->native);
	format_bytes(kvc, cur, sizeof cur);
	format_bytes(kvn, nat, sizeof nat);
	int lw = compact ? 9 : 13;
#define ROW(label, ...) \
	do { \
		if (y < y_end) { \
			tui_put(y, x, lw, label, 0, TUI_ROLE_LABEL); \
			tui_printf(y, x + lw, w - lw, 0, TUI_ROLE_NONE, __VA_ARGS__); \
		} \
		y++; \
	} while (0)
	bool head = cfg_has_head(&s->model->cfg);
	char where[96];
	if (head && session_nonfinite_text(s, where, sizeof where)) {
		/* what a NaN makes of the loss and the comparisons, and where it began */
		ROW(compact ? "NaN" : "first NaN", "%s", where);
		ROW("loss", compact ? "NaN" : "NaN (a mean over positions, some of them NaN)");
		ROW(compact ? "KL" : "KL vs base", "NaN");
		ROW(compact ? "top-1" : "top-1 agree", compact ? "-" : "- (NaN logits predict nothing)");
	} else if (!head) {
		ROW("loss", "- (no output head)");
		ROW("drift", compact ? "%.4f" : "%.6f of the output vs base (mean ||h - h_base|| / ||h_base||)",
		    s->cmp.drift);
	} else if (isnan(run->loss)) {
		ROW("loss", "- (needs 2 tokens)");
	} else if (compact) {
		ROW("loss", "%.4f (%+.4f)", run->loss, s->cmp.delta_loss);
		ROW("ppl", "%.2f", exp(run->loss));
	} else {
		ROW("loss", "%.4f nats   baseline %.4f   change %+.4f", run->loss, base->loss, s->cmp.delta_loss);
		ROW("perplexity", "%.3f   baseline %.3f", exp(run->loss), exp(base->loss));
	}
	if (head && !where[0]) {
		ROW(compact ? "KL" : "KL vs base", compact ? "%.4f" : "%.6f nats (mean over positions)", s->cmp.kl);
		ROW(compact ? "top-1" : "top-1 agree", compact ? "%.1f%%" : "%.1f%% of positions predict what the baseline does",
		    100.0 * s->cmp.top1_agree);
	}
	if (tui_rows_short(t)) { /* the mask after the softmax: rows lose weight */
		const struct row_sums *rs = tui_row_sums(t);
		if (compact)
			ROW("row sum", "%.3f mean, not 1", rs->mean);
		else
			ROW("row sums", "%.3f on average, %.3f at least (head %d.%d, query %d): not 1, the mask "
			    "came after the softmax", rs->mean, rs->min, rs->min_layer, rs->min_head, rs->min_query);
	}
	if (compact) {
		ROW("KV", "%s", cur);
		ROW("native", "%s", nat);
	} else {
		ROW("KV cache", "current %s (%.0f B)   native %s (%.0f B)", cur, kvc, nat, kvn);
	}
	ROW("forward", compact ? "%.2f ms" : "%.2f ms (the last pass)", run->forward_ms);
	double last = tui_last_key_ms(t);
	if (isnan(last))
		ROW(compact ? "redraw" : "key\u2192redraw", "- (press a key)");
	else if (compact)
		ROW("redraw", "%.1f ms", last);
	else
		ROW("key\u2192redraw", "%.1f ms last   median %.1f ms over %d key%s", last,
		    tui_key_ms_median(t), t->n_key_ms < TUI_KEY_MS_KEEP ? t->n_key_ms : TUI_KEY_MS_KEEP,
		    t->n_key_ms == 1 ? "" : "s");
	if (!compact && t->ran[0])
		ROW("last key ran", "%s  (the same command works at the prompt)", t->ran);
#undef ROW
	return y;
}

/* The selected head's entropy and top keys at the selected token. */
static int draw_head_numbers(struct tui_state *t, int y, int x, int w, int y_end, bool compact)
{
	struct session *s = t->s;
	int l = s->sel_layer, hd = s->sel_head, T = s->n_tokens, q = s->sel_token;
	char **lab = tui_token_labels(s, NULL, NULL);
	double ent, mx;
	head_entropy(s->run, l, hd, &ent, &mx);
	struct err se;
	const struct head_scores *sc = session_head_scores(s, &se);
	char role[32] = "";
	if (sc)
		heads_role_text(&sc[l * s->model->cfg.n_head + hd], role, sizeof role);
	if (y < y_end)
		tui_printf(y, x, w, TUI_A_BOLD, TUI_ROLE_LABEL, "head %d.%d%s%s%s", l, hd,
			   session_head_ablated(s, l, hd) ? " (ablated)" : "", *role ? ": " : "", role);
	y++;
	if (sc && !compact && y < y_end) {
		char why[256];
		heads_explain(s->model->tok, s->tokens, T, &s->opt, &sc[l * s->model->cfg.n_head + hd],
			      why, sizeof why);
		tui_printf(y++, x, w, 0, TUI_ROLE_NONE, "  %s", strchr(why, ':') ? strchr(why, ':') + 2 : why);
	}
	if (y < y_end)
		tui_printf(y, x, w, 0, TUI_ROLE_NONE, compact ? " entropy %.3f, max %.3f" : "  entropy %.4f nats, max %.3f", ent, mx);
	y++;
	/* the strongest keys by value as computed; bars as the map shades them */
	const float *row = session_heat_values(s, l, hd) + (size_t)q * T;
	const float *drow = session_att(s, l, hd) + (size_t)q * T;
	int best[TUI_HEAD_TOPK];
	int m = tui_top_keys(row, T, compact ? 3 : TUI_HEAD_TOPK, best);
	char ql[64];
	tui_short_label(lab[q], 8, ql, sizeof ql);
	if (y < y_end && s->heat == HEAT_WEIGHTS)
		tui_printf(y, x, w, 0, TUI_ROLE_NONE, compact ? " token %d '%s' attends to:" : "  token %d '%s' attends most to:", q, ql);
	else if (y < y_end)
		tui_printf(y, x, w, 0, TUI_ROLE_NONE, compact ? " token %d '%s', %s:" : "  token %d '%s', %s:", q, ql,
			   heat_kind_value(s->heat));
	y++;
	for (int i = 0; i < m && y < y_end; i++, y++) {
		char kl[64];
		tui_short_label(lab[best[i]], 6, kl, sizeof kl);
		int xx = x + tui_printf(y, x, w, 0, TUI_ROLE_NONE, "  %4d ", best[i]);
		tui_put(y, xx, 6, kl, TUI_A_BOLD, TUI_ROLE_LABEL);
		xx = x + 14;
		xx += tui_printf(y, xx, x + w - xx, 0, TUI_ROLE_NONE, "%.3f ", (double)row[best[i]]);
		tui_put_bar(y, xx, (x + w - xx) < 10 ? x + w - xx : 10, drow[best[i]], TUI_ROLE_NONE);
	}
	render_labels_free(lab, T);
	return y;
}

/* Next-token top-k at the selected token, with the baseline's beside it
 * (narrow: columns at 0, 3, 10 | 17, 24; wide: 2, 5, 14 | 23, 32). */
static int draw_next_tokens(struct tui_state *t, int y, int x, int w, int y_end, int k)
{
	struct session *s = t->s;
	if (!cfg_has_head(&s->model->cfg))
		return y;
	int q = s->sel_token;
	int ids[8], bids[8];
	double p[8], bp[8];
	if (k > 8)
		k = 8;
	bool narrow = w < 40;
	int cn = narrow ? 0 : 2, ct = narrow ? 3 : 5, cp = narrow ? 10 : 14;
	int cbt = narrow ? 17 : 23, cbp = narrow ? 24 : 32, tw = narrow ? 6 : 8;
	int n = top_tokens(s->run, q, k, ids, p);
	int bn = top_tokens(s->base, q, k, bids, bp);
	char lab[96], cut[32];
	tok_label(s->model->tok, s->tokens[q], lab, sizeof lab);
	tui_short_label(lab, 8, cut, sizeof cut);
	if (y < y_end)
		tui_printf(y, x, w, TUI_A_BOLD, TUI_ROLE_LABEL,
			   cfg_is_encoder(&s->model->cfg) ? "token at %d '%s'" : "next token after %d '%s'",
			   q, cut);
	y++;
	if (y < y_end) {
		tui_put(y, x + ct, w - ct, "run", TUI_A_DIM, TUI_ROLE_NONE);
		tui_put(y, x + cp, w - cp, "p", TUI_A_DIM, TUI_ROLE_NONE);
		tui_put(y, x + cbt, w - cbt, "baseline", TUI_A_DIM, TUI_ROLE_NONE);
	}
	y++;
	for (int i = 0; i < (n > bn ? n : bn) && y < y_end; i++, y++) {
		tui_printf(y, x + cn, w - cn, 0, TUI_ROLE_NONE, "%d", i + 1);
		if (i < n) {
			tok_label(s->model->tok, ids[i], lab, sizeof lab);
			tui_short_label(lab, tw, cut, sizeof cut);
			tui_put(y, x + ct, tw, cut, TUI_A_BOLD, TUI_ROLE_LABEL);
			tui_printf(y, x + cp, w - cp, 0, TUI_ROLE_NONE, "%.3f", p[i]);
		}
		if (i < bn && w >= cbp + 5) {
			tok_label(s->model->tok, bids[i], lab, sizeof lab);
			tui_short_label(lab, tw, cut, sizeof cut);
			tui_put(y, x + cbt, tw, cut, TUI_A_BOLD, TUI_ROLE_LABEL);
			tui_printf(y, x + cbp, w - cbp, 0, TUI_ROLE_NONE, "%.3f", bp[i]);
		}
	}
	return y;
}

static void numbers_draw(struct tui_state *t, void *data, const struct tui_rect *r)
{
	(void)data;
	struct session *s = t->s;
	if (!session_ready(s)) {
		tui_need_run(s, r);
		return;
	}
	const struct model_config *c = &s->model->cfg;
	int y = r->y, end = r->y + r->h;
	char opts[256], nat[32];
	tui_sharing_name(c->n_head, s->native.kv_heads, nat, sizeof nat);
	tui_printf(y++, r->x, r->w, TUI_A_BOLD, TUI_ROLE_LABEL,
		   "%s: %d layers %s %d heads (native %s), d_head %d, context %d; %d tokens",
		   s->model->name ? s->model->name : "model", c->n_layer, tui_times_sign(), c->n_head, nat,
		   cfg_d_head(c), c->context, s->n_tokens);
	session_variant(s, opts, sizeof opts);
	tui_printf(y++, r->x, r->w, 0, TUI_ROLE_NONE, "options vs native: %s", opts[0] ? opts : "none (the baseline)");
	y = draw_run_numbers(t, y, r->x, r->w, end, false);
	y++;
	char where[96];
	if (session_nonfinite_text(s, where, sizeof where)) { /* NaN scores: none shown */
		tui_put(y, r->x, r->w, "The heads' scores, the next tokens and the entropies are NaN from "
			"there on: not shown.", TUI_A_DIM, TUI_ROLE_NONE);
		return;
	}
	bool two_cols = r->w >= 76;
	int y2 = y;
	y = draw_head_numbers(t, y, r->x, two_cols ? 38 : r->w, end, false);
	if (two_cols)
		draw_next_tokens(t, y2, r->x + 40, r->w - 40, end, 5);
	else
		y = draw_next_tokens(t, y + 1, r->x, r->w, end, 5);

	/* every head's entropy, when there is room */
	int L = c->n_layer, H = c->n_head;
	if (y2 > y)
		y = y2;
	y = (two_cols ? (y > y2 + 7 ? y : y2 + 7) : y) + 1;
	if (end - y >= L + 2 && r->w >= 8 + 7 * H) {
		tui_put(y++, r->x, r->w, "entropy by head (nats, mean over queries)", TUI_A_BOLD, TUI_ROLE_LABEL);
		int x = r->x + tui_put(y, r->x, 8, "layer", TUI_A_DIM, TUI_ROLE_NONE);
		for (int h = 0; h < H; h++)
			tui_printf(y, r->x + 8 + 7 * h, 7, TUI_A_DIM, TUI_ROLE_NONE, "%6d", h);
		(void)x;
		y++;
		for (int l = 0; l < L && y < end; l++, y++) {
			tui_printf(y, r->x, 8, TUI_A_DIM, TUI_ROLE_NONE, "%5d", l);
			for (int h = 0; h < H; h++) {
				double e, m;
				head_entropy(s->run, l, h, &e, &m);
				bool sel = l == s->sel_layer && h == s->sel_head;
				tui_printf(y, r->x + 8 + 7 * h, 7, sel ? TUI_A_REVERSE : 0,
					   sel ? TUI_ROLE_SELECT : session_head_ablated(s, l, h) ? TUI_ROLE_ABLATED : TUI_ROLE_NONE,
					   "%6.3f", e);
			}
		}
	}
}

void tui_draw_side(struct tui_state *t, const struct tui_rect *r)
{
	struct session *s = t->s;
	if (!session_ready(s))
		return;
	/* a rule on the left */
	for (int y = r->y; y < r->y + r->h; y++)
		tui_put(y, r->x - 1, 1, tui_utf8() ? "\u2502" : "|", TUI_A_DIM, TUI_ROLE_NONE);
	int y = r->y, end = r->y + r->h, x = r->x + 1, w = r->w - 1;
	y = draw_run_numbers(t, y, x, w, end, true);
	y++;
	char where[96];
	if (session_nonfinite_text(s, where, sizeof where))
		return;
	y = draw_head_numbers(t, y, x, w, end, true);
	y++;
	draw_next_tokens(t, y, x, w, end, 5);
}

static void numbers_move(struct tui_state *t, void *data, int dy, int dx)
{
	(void)data;
	tui_select_head(t, t->s->sel_layer + dy, t->s->sel_head + dx);
}

static const struct tui_hint numbers_hints[] = {
	TUI_HINT_OPTIONS, { "\u2190\u2193\u2191\u2192", "hjkl", "head" }, { "< >", "< >", "token" },
	{ "x", "x", "export" }, TUI_HINT_END,
};

const struct tui_view_mode tui_numbers_view = {
	.name = "numbers",
	.export_what = "stats",
	.hints = numbers_hints,
	.numbers = true,
	.draw = numbers_draw,
	.arrows = numbers_move,
};
