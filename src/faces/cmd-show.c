/*
 * cmd-show.c — commands that look at the current run without changing how
 * it is computed: show (grid, head, token, tokens), top, stats, export.
 * Layout comes from render.c and export.c; these functions only choose
 * what to lay out, print it to s->out, and move the selection.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "decode.h"
#include "cmd.h"
#include "export.h"
#include "export-parts.h"
#include "render.h"
#include "tokenizer.h"

#define TOP_MAX 100      /* largest K of `top` */
#define SHOW_TOKEN_K 3   /* keys listed per head by `show token` */
#define GRID_CELL 16     /* largest side of a head in `show grid` */
#define LABEL_COLS 12    /* widest token label in tables */

/* ---------------------------------------------------------------- helpers */

/* Writes a finished buffer to s->out. */
static void emit(struct session *s, struct render_buf *b)
{
	if (b->len)
		fwrite(b->data, 1, b->len, s->out);
	render_buf_free(b);
}

static int parse_token(const struct session *s, const char *arg, int *out, struct err *e)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end)
		return err_set(e, "%.32s: not a token index (see: show tokens)", arg);
	if (v < 0 || v >= s->n_tokens)
		return err_set(e, "token %.32s does not exist (tokens 0-%d)", arg, s->n_tokens - 1);
	*out = (int)v;
	return 0;
}

/* Widest label among ids (at most LABEL_COLS). */
static int label_cols(char **labels, int n)
{
	int w = 1;
	for (int i = 0; i < n; i++) {
		int k = render_width(labels[i]);
		w = k > w ? k : w;
	}
	return w < LABEL_COLS ? w : LABEL_COLS;
}

/* ------------------------------------------------------------------- show */

static void show_grid(struct session *s, struct render_buf *b)
{
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head;
	const float **att = xmalloc((size_t)L * H * sizeof *att);
	bool *abl = xmalloc((size_t)L * H * sizeof *abl);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			att[l * H + h] = session_att(s, l, h);
			abl[l * H + h] = session_head_ablated(s, l, h);
		}
	/* role badges; a failed induction pass only costs the badges */
	struct err e;
	const struct head_scores *sc = session_head_scores(s, &e);
	char (*badge)[16] = xcalloc((size_t)L * H, sizeof *badge);
	const char **badges = xmalloc((size_t)L * H * sizeof *badges);
	for (int i = 0; i < L * H; i++) {
		if (sc && sc[i].role != HEAD_BROAD)
			heads_badge_text(&sc[i], badge[i], sizeof badge[i]);
		badges[i] = badge[i];
	}
	struct render_grid_spec sp = {
		.att = att, .L = L, .H = H, .T = s->n_tokens, .ablated = abl, .badges = badges,
		.sel_layer = s->sel_layer, .sel_head = s->sel_head,
		.style = (enum render_style)cmd_style(s), .cell = GRID_CELL, .max_width = cmd_out_width(s),
		.what = heat_kind_legend(s->heat),
	};
	render_grid(b, &sp);
	if (sc)
		render_buf_puts(b, EX_BADGE_LEGEND);
	free(badges);
	free(badge);
	free(att);
	free(abl);
}

static void show_head(struct session *s, int l, int h, struct render_buf *b)
{
	char opts[512], title[1024];
	export_describe_options(s, opts, sizeof opts);
	snprintf(title, sizeof title, "head %d.%d (layer %d, head %d)%s%s%s, %d tokens; options: %s", l, h,
		 l, h, session_head_ablated(s, l, h) ? " ablated (output zeroed; attention shown)" : "",
		 s->heat != HEAT_WEIGHTS ? ": " : "", s->heat != HEAT_WEIGHTS ? heat_kind_name(s->heat) : "",
		 s->n_tokens, opts);
	char **labels = session_labels(s);
	int width = cmd_out_width(s);
	render_wrap(b, title, 0, 2, width); /* at the terminal's width, between words */
	struct render_head_spec sp = {
		.att = session_att(s, l, h), .T = s->n_tokens, .labels = labels,
		.style = (enum render_style)cmd_style(s), .max_width = width,
		.what = heat_kind_legend(s->heat),
	};
	render_head(b, &sp);
	render_labels_free(labels, s->n_tokens);
	struct err e;
	const struct head_scores *sc = session_head_scores(s, &e);
	if (sc) {
		char why[256];
		heads_explain(s->model->tok, s->tokens, s->n_tokens, &s->opt,
			      &sc[l * s->model->cfg.n_head + h], why, sizeof why);
		char line[300];
		snprintf(line, sizeof line, "role %s", why);
		render_wrap(b, line, 0, 2, width);
	}
	s->sel_layer = l;
	s->sel_head = h;
	s->dirty |= DIRTY_SELECT;
}

/* Head l.h's weights in this run minus the baseline's (the native run on
 * the same tokens): what an option or ablation changed. */
static void show_diff(struct session *s, int l, int h, struct render_buf *b)
{
	int T = s->n_tokens;
	const float *a = run_att(s->run, l, 0, h), *base = run_att(s->base, l, 0, h);
	float *d = session_diff(s, l, h);
	double worst = 0;
	int wi = 0, wj = 0;
	for (int i = 0; i < T; i++)
		for (int j = 0; j < T; j++) {
			size_t k = (size_t)i * T + j;
			if (fabs(d[k]) > fabs(worst)) {
				worst = d[k];
				wi = i;
				wj = j;
			}
		}
	char opts[256], title[512];
	session_variant(s, opts, sizeof opts);
	snprintf(title, sizeof title, "head %d.%d: weights under %s minus the native run's, %d tokens",
		 l, h, opts[0] ? opts : "the native options (nothing differs)", T);
	char **labels = session_labels(s);
	struct render_head_spec sp = {
		.att = d, .T = T, .labels = labels, .style = (enum render_style)cmd_style(s),
		.max_width = cmd_out_width(s), .title = title, .diverging = true,
		.what = "the weight under these options is",
	};
	render_head(b, &sp);
	if (worst != 0)
		render_buf_printf(b, "largest change %+.3f: query %d '%s' on key %d '%s' (%.3f -> %.3f)\n",
				  worst, wi, labels[wi], wj, labels[wj], (double)base[(size_t)wi * T + wj],
				  (double)a[(size_t)wi * T + wj]);
	render_labels_free(labels, T);
	free(d);
	s->sel_layer = l;
	s->sel_head = h;
	s->dirty |= DIRTY_SELECT;
}

static void show_token(struct session *s, int q, struct render_buf *b)
{
	const struct model_config *c = &s->model->cfg;
	int T = s->n_tokens, k = T < SHOW_TOKEN_K ? T : SHOW_TOKEN_K;
	char **labels = session_labels(s);
	int lw = label_cols(labels, T), iw = snprintf(NULL, 0, "%d", T - 1);
	render_buf_printf(b, "token %d \"%s\" (id %d) attends to, strongest keys first (index label %s):\n",
			  q, labels[q], s->tokens[q],
			  s->heat == HEAT_WEIGHTS ? "weight" : heat_kind_legend(s->heat));
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++) {
			const float *row = session_att(s, l, h) + (size_t)q * T;
			int best[SHOW_TOKEN_K];
			int n = 0;
			/* insertion into the top-k list; earlier keys win ties; masked keys never */
			for (int j = 0; j < T; j++) {
				if (isnan(row[j]) || (n == k && row[j] <= row[best[n - 1]]))
					continue;
				int i = n < k ? n++ : n - 1;
				while (i > 0 && row[best[i - 1]] < row[j]) {
					best[i] = best[i - 1];
					i--;
				}
				best[i] = j;
			}
			render_buf_printf(b, "  %d.%d%s", l, h, session_head_ablated(s, l, h) ? " \u2717" : "  ");
			for (int i = 0; i < n; i++) {
				render_buf_printf(b, "   %*d ", iw, best[i]);
				render_pad(b, labels[best[i]], lw, RENDER_LEFT, false);
				render_buf_printf(b, " %.3f", (double)row[best[i]]);
			}
			render_buf_puts(b, "\n");
		}
	if (opt_ablated_count(&s->opt))
		render_buf_puts(b, "(\u2717 ablated: output zeroed, attention shown)\n");
	render_labels_free(labels, T);
	s->sel_token = q;
	s->dirty |= DIRTY_SELECT;
}

static void show_tokens(struct session *s, struct render_buf *b)
{
	int T = s->n_tokens;
	char **labels = session_labels(s);
	render_buf_puts(b, "index     id  label\n");
	for (int i = 0; i < T; i++)
		render_buf_printf(b, "%5d  %5d  %s\n", i, s->tokens[i], labels[i]);
	render_labels_free(labels, T);
}

static int show_exec(struct session *s, int argc, char **argv, struct err *e)
{
	const char *what = argv[1];
	bool is_diff = !strcmp(what, "diff");
	bool is_head = !strcmp(what, "head") || is_diff, is_token = !strcmp(what, "token");
	bool is_mask = !strcmp(what, "mask"), is_groups = !strcmp(what, "groups");
	if (!(((is_head || is_token) && argc == 3) ||
	      ((!strcmp(what, "grid") || !strcmp(what, "tokens") || is_mask || is_groups) &&
	       argc == 2)))
		return err_set(e, "usage: show grid | show head L.H|ROLE | show diff L.H|ROLE | "
			       "show token I | show tokens | show mask | show groups");
	struct render_buf b;
	render_buf_init(&b);
	if (is_mask || is_groups) { /* the text forms of export mask and export groups */
		struct export_req r = { 0 };
		if ((is_mask ? export_mask : export_groups)(s, &r, EXPORT_TXT, &b, e) != 0) {
			render_buf_free(&b);
			return -1;
		}
		emit(s, &b);
		return 0;
	}
	if (session_need_run(s, e))
		return -1;
	if (s->run->nonfinite.site) { /* NaN heatmaps are garbage: say where it started */
		char line[256];
		session_summary(s, line, sizeof line);
		return err_set(e, "nothing to draw: %s", line);
	}
	if (is_head) {
		int l, h;
		enum head_role role;
		if (heads_role_parse(argv[2], &role) == 0) {
			/* a role: the head that has it most strongly on this text */
			const struct head_scores *sc = session_head_scores(s, e);
			if (!sc) {
				render_buf_free(&b);
				return -1;
			}
			int H = s->model->cfg.n_head, i = heads_strongest(sc, s->model->cfg.n_layer * H, role);
			if (i < 0) {
				render_buf_free(&b);
				return err_set(e, "no head is labelled %s on this text (heads shows every "
					       "head's role)", heads_role_name(role));
			}
			l = i / H;
			h = i % H;
			render_buf_printf(&b, "the strongest %s head on this text: %d.%d\n",
					  heads_role_name(role), l, h);
		} else if (session_parse_head(s, argv[2], &l, &h, e) != 0) {
			render_buf_free(&b);
			return -1;
		}
		if (is_diff)
			show_diff(s, l, h, &b);
		else
			show_head(s, l, h, &b);
	} else if (is_token) {
		int q;
		if (parse_token(s, argv[2], &q, e) != 0)
			return -1;
		show_token(s, q, &b);
	} else if (!strcmp(what, "grid")) {
		show_grid(s, &b);
	} else {
		show_tokens(s, &b);
	}
	emit(s, &b);
	return 0;
}

static const char *const show_words[] = { "grid", "head", "diff", "token", "tokens", "mask",
					  "groups", NULL };
const struct cmd_entry cmd_show_entry = {
	.name = "show",
	.usage = "grid | head L.H|ROLE | diff L.H|ROLE | token I | tokens | mask | groups",
	.help = "print every head's heatmap, one head, what the options changed in one head, one token's keys, the tokens, the mask, or the K/V groups",
	.long_help = "show grid      every head as a small heatmap (max-pooled to fit; [L.H] is the\n"
		     "               selected head, \u2717 an ablated one)\n"
		     "show head L.H  one head: rows are query tokens, columns key tokens; selects it\n"
		     "show head ROLE the head `heads` gives ROLE (previous-token, offset, sink,\n"
		     "               delimiter, self, local, induction) most strongly on this text\n"
		     "show diff L.H  the head's weights under the current options minus the native\n"
		     "               run's on the same text: +k / -k is about k tenths up / down\n"
		     "               (red / blue in colour), blank within 0.05; selects it\n"
		     "show token I   the 3 keys token I attends to most in every head; selects it\n"
		     "show tokens    index, id and label of every token (\u2423 space, \u23ce newline)\n"
		     "show mask      which keys each query sees under the current mask (export mask\n"
		     "               writes it as a figure; --all there shows every mask)\n"
		     "show groups    which query heads read which K/V head under the current attn,\n"
		     "               and the KV-cache size of each setting (export groups: a figure)\n"
		     "Shading is what `heat` chooses (the attention weight by default): ' ' <0.01\n"
		     "'\u2591' <0.25 '\u2592' <0.5 '\u2593' <0.75 '\u2588'.",
	.complete = COMPLETE_WORDS,
	.words = show_words,
	.min_args = 1,
	.max_args = 2,
	.exec = show_exec,
};

/* -------------------------------------------------------------------- top */

/* A line under the table when a shown id is one the tokenizer has no text
 * for (its vocabulary is smaller than the model's; decoder_ids). */
static void top_note_beyond(const struct model *m, const int *ids, int n, const int *bids,
			    int bn, struct render_buf *b)
{
	int nt = decoder_ids(m), beyond = 0;

	for (int r = 0; r < n; r++)
		beyond += ids[r] >= nt;
	for (int r = 0; r < bn; r++)
		beyond += bids[r] >= nt;
	if (beyond)
		render_buf_printf(b, "<bad id N>: ids %d..%d have no token in the tokenizer (%d "
				  "tokens; the model's vocabulary is %d); generate never draws them\n",
				  nt, m->cfg.vocab_size - 1, nt, m->cfg.vocab_size);
}

static int top_exec(struct session *s, int argc, char **argv, struct err *e)
{
	int k = 5, pos = -1, i = 1;
	if (i < argc && strcmp(argv[i], "at")) {
		if (cmd_parse_int(argv[i], 1, TOP_MAX, "K", &k, e))
			return -1;
		i++;
	}
	if (i < argc) {
		if (strcmp(argv[i], "at") || i + 2 != argc)
			return err_set(e, "usage: top [K] [at I]");
		if (session_need_run(s, e) || parse_token(s, argv[i + 1], &pos, e))
			return -1;
	}
	if (session_need_run(s, e))
		return -1;
	int T = s->n_tokens;
	if (pos < 0)
		pos = T - 1;
	int ids[TOP_MAX], bids[TOP_MAX];
	double p[TOP_MAX], bp[TOP_MAX];
	int n = top_tokens(s->run, pos, k, ids, p);
	bool variant = !run_options_equal(&s->opt, &s->native);

	char lab[96], ctx[96];
	tok_label(s->model->tok, s->tokens[pos], ctx, sizeof ctx);
	int lw = 5;
	for (int r = 0; r < n; r++) {
		tok_label(s->model->tok, ids[r], lab, sizeof lab);
		int w = render_width(lab);
		lw = w > lw ? w : lw;
	}
	int bn = 0;
	if (variant) {
		bn = top_tokens(s->base, pos, k, bids, bp);
		for (int r = 0; r < bn; r++) {
			tok_label(s->model->tok, bids[r], lab, sizeof lab);
			int w = render_width(lab);
			lw = w > lw ? w : lw;
		}
	}
	lw = lw < LABEL_COLS ? lw : LABEL_COLS;

	struct render_buf b;
	render_buf_init(&b);
	if (cfg_is_encoder(&s->model->cfg)) /* BERT's head predicts the token at pos */
		render_buf_printf(&b, "token at position %d \"%s\" as the encoder predicts it", pos, ctx);
	else
		render_buf_printf(&b, "next token after position %d \"%s\"", pos, ctx);
	if (variant) {
		char v[256];
		session_variant(s, v, sizeof v);
		render_buf_printf(&b, " (%d tokens), options %s vs the native baseline:\n", T, v);
		render_buf_printf(&b, "%4s  ", "#");
		render_pad(&b, "token", lw, RENDER_LEFT, false);
		render_buf_puts(&b, "  p        base p   | baseline's own top\n");
	} else {
		render_buf_printf(&b, " (%d tokens):\n", T);
		render_buf_printf(&b, "%4s  ", "#");
		render_pad(&b, "token", lw, RENDER_LEFT, false);
		render_buf_puts(&b, "  p\n");
	}
	int rows = n > bn ? n : bn;
	for (int r = 0; r < rows; r++) {
		size_t start = b.len;
		render_buf_printf(&b, "%4d  ", r + 1);
		if (r < n) {
			tok_label(s->model->tok, ids[r], lab, sizeof lab);
			render_pad(&b, lab, lw, RENDER_LEFT, false);
			render_buf_printf(&b, "  %.4f", p[r]);
			if (variant)
				render_buf_printf(&b, "   %.4f", token_prob(s->base, pos, ids[r]));
		} else {
			render_buf_repeat(&b, " ", lw + 8 + (variant ? 9 : 0));
		}
		if (variant && r < bn) {
			tok_label(s->model->tok, bids[r], lab, sizeof lab);
			render_buf_puts(&b, "   | ");
			render_pad(&b, lab, lw, RENDER_LEFT, false);
			render_buf_printf(&b, "  %.4f", bp[r]);
		}
		while (b.len > start && b.data[b.len - 1] == ' ')
			b.data[--b.len] = '\0';
		render_buf_puts(&b, "\n");
	}
	top_note_beyond(s->model, ids, n, bids, bn, &b);
	emit(s, &b);
	return 0;
}

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.flags = CMD_LOGITS,
	.usage = "[K] [at I]",
	.help = "the K (default 5) most likely next tokens at position I (default: the last)",
	.long_help = "When the options differ from the model's native ones, each token's probability\n"
		     "under the native baseline is shown beside it, with the baseline's own top K.",
	.min_args = 0,
	.max_args = 3,
	.exec = top_exec,
};

/* ------------------------------------------------------------------ stats */

static int stats_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	(void)argv;
	if (session_need_run(s, e))
		return -1;
	struct render_buf b;
	render_buf_init(&b);
	export_stats_txt(s, true, &b);
	emit(s, &b);
	return 0;
}

const struct cmd_entry cmd_stats_entry = {
	.name = "stats",
	.usage = "",
	.help = "loss, perplexity, KL and top-1 agreement vs the baseline, KV bytes, and per-head entropy",
	.min_args = 0,
	.max_args = 0,
	.exec = stats_exec,
};

/* ----------------------------------------------------------------- export */

extern const struct cmd_entry cmd_export_entry;

/* The request of export k from the command's arguments: the head or the
 * layer, and the options only some exports take.  0 or -1. */
static int export_request(struct session *s, const struct export_kind *k, const struct cmd_args *a,
			  struct export_req *r, struct err *e)
{
	const struct cmd_entry *c = &cmd_export_entry;
	memset(r, 0, sizeof *r);
	r->diff = cmd_has(c, a, "--diff");
	r->selected = cmd_has(c, a, "--selected");
	r->all = cmd_has(c, a, "--all");
	r->scale = (int)cmd_num(c, a, "--scale", 1);
	if (r->diff && strcmp(k->name, "heatmap"))
		return err_set(e, "export: --diff goes with heatmap L.H");
	if (r->selected && strcmp(k->name, "grid") && strcmp(k->name, "layer"))
		return err_set(e, "export: --selected goes with grid and layer L");
	if (r->all && strcmp(k->name, "mask"))
		return err_set(e, "export: --all goes with mask");
	if (!k->arg)
		return 0;
	const char *arg = a->pos[1];
	/* qkov's OV circuit reads the weights alone; every other argument names a run's head */
	if (strcmp(k->name, "qkov") ? session_need_run(s, e) : session_need_model(s, e))
		return -1;
	if (!strcmp(k->arg, "L.H I J"))
		return session_parse_head(s, arg, &r->layer, &r->head, e) ||
		       cmd_parse_int(a->pos[2], 0, s->n_tokens - 1, "the query position", &r->qpos, e) ||
		       cmd_parse_int(a->pos[3], 0, s->n_tokens - 1, "the key position", &r->kpos, e) ? -1 : 0;
	if (!strcmp(k->arg, "L.H"))
		return session_parse_head(s, arg, &r->layer, &r->head, e);
	if (cmd_parse_int(arg, 0, 1 << 20, "the layer", &r->layer, e))
		return -1;
	if (r->layer >= s->model->cfg.n_layer)
		return err_set(e, "layer %d does not exist (layers 0-%d)", r->layer,
			       s->model->cfg.n_layer - 1);
	return 0;
}

static int export_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_export_entry, argc, argv, &a, e) != 0)
		return -1;
	const struct export_kind *k = a.n_pos ? export_find(a.pos[0]) : NULL;
	if (a.n_pos && !k) { /* name every export, in the table's words */
		char list[ERR_MAX];
		size_t n = 0;
		for (const struct export_kind *x = export_kinds; x->name && n < sizeof list; x++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s%s%s: %s", n ? "; " : "",
					      x->name, x->arg ? " " : "", x->arg ? x->arg : "", x->help);
		return err_set(e, "export: %.32s is not an export (%s)", a.pos[0], list);
	}
	if (!k || a.n_pos != 1 + export_arg_words(k)) {
		char u[256];
		cmd_usage(&cmd_export_entry, u, sizeof u);
		return err_set(e, "%s", u);
	}
	const char *fmt = cmd_str(&cmd_export_entry, &a, "--format");
	const char *path = cmd_str(&cmd_export_entry, &a, "--out");
	enum export_format f = EXPORT_TXT;
	if (fmt) {
		if (export_format_parse(fmt, &f, e) != 0)
			return -1;
	} else if (path) {
		export_format_from_path(path, &f); /* stays txt when the name says nothing */
	}
	if (path && !path[0])
		return err_set(e, "export: --out needs a file name");
	if (f == EXPORT_PNG && !path)
		return err_set(e, "export: png is an image; give a file with --out FILE.png");
	struct export_req r;
	if (export_request(s, k, &a, &r, e) != 0)
		return -1;
	if (k->roles && session_ready(s)) {
		struct err ignored; /* a failed induction pass only costs the badges */
		r.roles = session_head_scores(s, &ignored);
	}

	struct render_buf b;
	render_buf_init(&b);
	if (export_run(k, s, &r, f, &b, e) != 0) {
		render_buf_free(&b);
		return -1;
	}
	if (!path) {
		emit(s, &b);
		return 0;
	}
	if (write_file_atomic(path, b.data ? b.data : "", b.len, e) != 0) {
		render_buf_free(&b);
		return err_prefix(e, "export");
	}
	char desc[64];
	if (!strcmp(k->name, "heatmap"))
		snprintf(desc, sizeof desc, "heatmap %d.%d%s", r.layer, r.head, r.diff ? " diff" : "");
	else if (!strcmp(k->name, "layer"))
		snprintf(desc, sizeof desc, "layer %d", r.layer);
	else if (!strcmp(k->name, "why"))
		snprintf(desc, sizeof desc, "why %d.%d %d %d", r.layer, r.head, r.qpos, r.kpos);
	else if (!strcmp(k->name, "qkov"))
		snprintf(desc, sizeof desc, "qkov %d.%d", r.layer, r.head);
	else
		snprintf(desc, sizeof desc, "%s%s", k->name, r.all ? " all" : "");
	if (!s->quiet)
		fprintf(s->out, "wrote %s (%s, %s, %zu bytes)\n", path, desc, export_format_name(f), b.len);
	render_buf_free(&b);
	return 0;
}

/* the exports (export_kinds[]); formats complete after --format (cmd-complete.c) */
static const char *const export_words[] = { "heatmap", "layer", "grid", "stats", "lens", "patch",
					    "mask", "groups", "lab", "circuits", "dla",
					    "why", "qkov", NULL };
static const struct cmd_opt export_opts[] = {
	{ "--format", CMD_OPT_WORD, "txt|ascii|ansi|csv|json|svg|png", 0, 0, "the format" },
	{ "--out", CMD_OPT_WORD, "FILE", 0, 0, "the file" },
	{ "--diff", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--selected", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--all", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--scale", CMD_OPT_INT, "N", 1, EXPORT_MAX_SCALE, "the PNG scale" },
	{ NULL },
};
const struct cmd_entry cmd_export_entry = {
	.name = "export",
	.usage = "heatmap L.H | layer L | grid | stats | lens | patch | mask | groups | lab | circuits | dla | why L.H I J | qkov L.H",
	.opts = export_opts,
	.help = "write one head, a layer, every head, the numbers, the lens, the last patch, the "
		"mask, GQA's groups, the last lab run, composition scores, the last position's logit "
		"attribution, one score's parts (why) or one head's circuits (qkov) as text, CSV, "
		"JSON, SVG or PNG",
	.long_help = "Writes to standard output, or atomically to FILE with --out. Without --format\n"
		     "the format follows FILE's extension (.csv .json .svg .png .txt), else txt.\n"
		     "txt/ascii/ansi: shaded heatmaps with token labels ('\u00b7' masked); csv: one row\n"
		     "per query token (full-precision weights); json: tokens, shape, options and\n"
		     "weights; svg: a standalone figure for slides (a subtitle saying what it shows,\n"
		     "token labels on both axes, masked cells hatched, role badges, a legend); png:\n"
		     "that figure as an image (librsvg), --scale N pixels per SVG pixel (1-4), only\n"
		     "to a file. heatmap L.H: one head (--diff: minus the native run). layer L: every\n"
		     "head of layer L, each with the tokens on both axes. grid: every head\n"
		     "(--selected frames the selected head). stats: txt, csv or json. lens: p(the\n"
		     "model's prediction) by depth and position. patch: the last `patch TEXT` of this\n"
		     "run. mask: which keys each query may see under the current mask (--all: causal,\n"
		     "window, none, after-softmax with the selected head's weights, and padding\n"
		     "side by side). groups: which query heads read which K/V head under the current\n"
		     "attn, and the KV-cache bytes (a model is enough). lab: the last `lab` run's\n"
		     "arms, the table's losses as bars and each arm's training loss by step. why L.H\n"
		     "I J: the score of query I on key J split into (query part, key part) terms, as\n"
		     "why prints it. qkov L.H: the OV circuit's eigenvalues and copying score, and\n"
		     "with a text the QK circuit's token/position split, as qkov prints them. Exports\n"
		     "of the same run are byte-identical (no timestamps or timings).",
	.complete = COMPLETE_WORDS,
	.words = export_words,
	.min_args = 1,
	.max_args = 4,
	.exec = export_exec,
};
