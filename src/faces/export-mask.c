/*
 * export-mask.c — `export mask [--all]` and `show mask`: the mask matrix
 * (maskmap.h) over the current tokens, which keys (columns) each query
 * (row) sees, as text, CSV, JSON or a figure (export.h).
 *
 * One panel for the current mask (on a model with local layers, GPT-Neo's,
 * one for its global layers and one for its local ones, whose window holds
 * whatever the run's mask), or with --all five side by side:
 * causal; window W (the current window, else max(2, T/8)); none;
 * after-softmax, drawn with the weights the selected head gets under it
 * (the current run's when that is the mask, else one forward pass of the
 * same tokens with only the mask changed) and each row's sum, which falls
 * below 1; padding: the tokens followed by P = max(2, T/4) pads under
 * mask none with a padding mask (padding.h), where it shows the most.
 * Cells: seen (blue, '█'), hidden by the mask ('·', grey hatching),
 * zeroed after the softmax ('×', red hatching), hidden by the padding mask
 * ('░', brown hatching).
 */
#include "export.h"
#include "export-parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "maskmap.h"
#include "utf8.h"

#define MAX_PANELS 5

/* One matrix of the figure. */
struct panel {
	char name[32];          /* "causal", "window 3", ... */
	char what[160];         /* a line saying what it shows */
	enum mask_kind mask;
	int window;
	int T, key_len;         /* tokens, of which the first key_len are real */
	char **labels;          /* T labels (borrowed from struct mask_fig) */
	bool current;           /* the session's mask */
	float *w;               /* (T, T) weights shown in the seen cells, or NULL; owned */
	int w_layer, w_head;    /* whose weights */
};

struct mask_fig {
	struct panel p[MAX_PANELS];
	int n;
	char **labels;          /* T + pads labels: the tokens', then "pad"; owned */
	int n_labels;
};

static const char *const cell_glyph[MASK_CELL_KINDS] = { "\u2588", "\u00b7", "\u00d7", "\u2591" };
static const char *const cell_ascii[MASK_CELL_KINDS] = { "#", ".", "x", "p" };
static const char *const cell_words[MASK_CELL_KINDS] = {
	"seen", "hidden by the mask", "zeroed after the softmax", "hidden by the padding mask",
};

/* The selected head's weights under after-softmax, (T, T) malloc'd: the
 * current run's, or a pass with the mask changed.  NULL when it fails. */
static float *after_softmax_weights(const struct session *s, int l, int h)
{
	int T = s->n_tokens;
	float *w = xmalloc((size_t)T * T * sizeof *w);
	if (s->opt.mask == MASK_AFTER_SOFTMAX) {
		memcpy(w, run_att(s->run, l, 0, h), (size_t)T * T * sizeof *w);
		return w;
	}
	struct run_options o = s->opt;
	o.mask = MASK_AFTER_SOFTMAX;
	struct run *r = run_new(&s->model->cfg, 1, T, RUN_ATTN);
	struct err e;
	if (model_forward(s->model, &o, s->tokens, NULL, 1, T, r, &e) != 0) {
		free(w);
		w = NULL;
	} else {
		memcpy(w, run_att(r, l, 0, h), (size_t)T * T * sizeof *w);
	}
	run_free(r);
	return w;
}

static void add_panel(struct mask_fig *f, const struct session *s, enum mask_kind mask, int window,
		      int pads)
{
	struct panel *p = &f->p[f->n++];
	int T = s->n_tokens;
	memset(p, 0, sizeof *p);
	p->mask = mask;
	p->window = window;
	p->T = T + pads;
	p->key_len = T;
	p->labels = f->labels;
	p->current = !pads && mask == s->opt.mask && (mask != MASK_WINDOW || window == s->opt.window);
	if (mask == MASK_WINDOW)
		snprintf(p->name, sizeof p->name, "window %d", window);
	else
		snprintf(p->name, sizeof p->name, "%s", pads ? "padding" : mask_kind_name(mask));
	switch (mask) {
	case MASK_CAUSAL:
		snprintf(p->what, sizeof p->what, "each token sees itself and the tokens before it");
		break;
	case MASK_NONE:
		if (pads)
			snprintf(p->what, sizeof p->what, "the text and %d pads, mask none: the padding "
				 "mask hides the pads from every query", pads);
		else
			snprintf(p->what, sizeof p->what, "every token sees every token");
		break;
	case MASK_WINDOW:
		snprintf(p->what, sizeof p->what, "each token sees itself and at most %d tokens back",
			 window);
		break;
	default: {
		/* the selected head, or 0.0 when the selection is not this model's */
		const struct model_config *c = &s->model->cfg;
		bool ok = s->sel_layer >= 0 && s->sel_layer < c->n_layer && s->sel_head >= 0 &&
			  s->sel_head < c->n_head;
		p->w_layer = ok ? s->sel_layer : 0;
		p->w_head = ok ? s->sel_head : 0;
		p->w = after_softmax_weights(s, p->w_layer, p->w_head);
		snprintf(p->what, sizeof p->what, "softmax over every key, then later keys zeroed: "
			 "head %d.%d's weights, rows summing to less than 1", p->w_layer, p->w_head);
		break;
	}
	}
}

/* "layers 1, 3, 5" of the layers that are (local) or are not local
 * (config.h: local_window) into buf, or "N layers" when the list is long;
 * returns how many there are. */
static int layer_list(const struct model_config *c, bool local, char *buf, size_t size)
{
	char list[80];
	size_t at = 0;
	int n = 0;
	for (int l = 0; l < c->n_layer; l++) {
		if (cfg_layer_local(c, l) != local)
			continue;
		if (at < sizeof list)
			at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", n ? ", " : "", l);
		n++;
	}
	if (at >= sizeof list)
		snprintf(buf, size, "%d layers", n);
	else
		snprintf(buf, size, "layer%s %s", n == 1 ? "" : "s", list);
	return n;
}

/* Puts "WHO: " before p's line. */
static void panel_who(struct panel *p, const char *who)
{
	char what[sizeof p->what];
	int n = snprintf(what, sizeof what, "%s: %s", who, p->what);
	if (n < 0 || (size_t)n >= sizeof what)
		strcpy(what + sizeof what - 4, "...");
	memcpy(p->what, what, sizeof what);
}

/* The current mask's panel, or on a model with local layers (GPT-Neo) one
 * for its global layers (when it has any) and one for its local layers,
 * under the window layer_mask gives them (model.h). */
static void add_current(struct mask_fig *f, const struct session *s)
{
	const struct model_config *c = &s->model->cfg;
	char global[96], local[96];
	int n_local = layer_list(c, true, local, sizeof local);
	if (!n_local) {
		add_panel(f, s, s->opt.mask, s->opt.window, 0);
		return;
	}
	if (layer_list(c, false, global, sizeof global)) {
		add_panel(f, s, s->opt.mask, s->opt.window, 0);
		panel_who(&f->p[f->n - 1], global);
	}
	int first = 0, w;
	while (!cfg_layer_local(c, first))
		first++;
	enum mask_kind m = layer_mask(c, &s->opt, first, &w);
	add_panel(f, s, m, w, 0);
	f->p[f->n - 1].current = true;
	snprintf(local + strlen(local), sizeof local - strlen(local), " (local)");
	panel_who(&f->p[f->n - 1], local);
}

/* The panels export mask draws: the current mask, or every kind. */
static void build(const struct session *s, bool all, struct mask_fig *f)
{
	int T = s->n_tokens, pads = all ? (T / 4 > 2 ? T / 4 : 2) : 0;
	memset(f, 0, sizeof *f);
	f->n_labels = T + pads;
	char **lab = session_labels(s);
	f->labels = xmalloc((size_t)f->n_labels * sizeof *f->labels);
	for (int i = 0; i < f->n_labels; i++)
		f->labels[i] = i < T ? lab[i] : xstrdup("pad");
	free(lab); /* the strings moved to f->labels */
	if (!all) {
		add_current(f, s);
		return;
	}
	int w = s->opt.mask == MASK_WINDOW ? s->opt.window : (T / 8 > 2 ? T / 8 : 2);
	add_panel(f, s, MASK_CAUSAL, 0, 0);
	add_panel(f, s, MASK_WINDOW, w, 0);
	add_panel(f, s, MASK_NONE, 0, 0);
	add_panel(f, s, MASK_AFTER_SOFTMAX, 0, 0);
	add_panel(f, s, MASK_NONE, 0, pads);
}

static void fig_free(struct mask_fig *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->p[i].w);
	render_labels_free(f->labels, f->n_labels);
}

static enum mask_cell cell(const struct panel *p, int i, int j)
{
	return mask_cell(p->mask, p->window, i, j, p->T, p->key_len);
}

/* ------------------------------------------------------------------ text */

/* The k-th glyph (code point) of s into g, "" past its end. */
static void glyph_at(const char *s, int k, char g[8])
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	g[0] = '\0';
	for (int i = 0; len > 0; i++) {
		uint32_t cp;
		int bad, n = utf8_decode(p, len, &cp, &bad);
		if (i == k) {
			snprintf(g, 8, "%.*s", n, (const char *)p);
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

#define TEXT_STACK 4 /* glyphs of a stacked key label */

/* One panel as text: key labels over the columns (stacked one glyph a
 * row when a label is wider than a column, at most TEXT_STACK), then
 * "I label │cells│" rows of cw columns a cell (2 when a label is wide). */
static void panel_text(struct render_buf *b, const struct panel *p, bool ascii)
{
	int T = p->T, cw = 1, lw = 1, deep = 1;
	for (int i = 0; i < T; i++) {
		char g[8];
		for (int k = 0; glyph_at(p->labels[i], k, g), g[0]; k++)
			cw = render_width(g) > cw ? render_width(g) : cw;
		int w = render_width(p->labels[i]);
		lw = w > lw ? (w > 12 ? 12 : w) : lw;
	}
	for (int i = 0; i < T; i++) {
		char g[8];
		int n = 0;
		while (glyph_at(p->labels[i], n, g), g[0])
			n++;
		if (render_width(p->labels[i]) > cw)
			deep = n > deep ? (n > TEXT_STACK ? TEXT_STACK : n) : deep;
	}
	int iw = snprintf(NULL, 0, "%d", T - 1), left = iw + 1 + lw + 1;
	render_buf_printf(b, "mask %s%s, %d tokens: %s\n", p->name, p->current ? " (current)" : "",
			  T, p->what);
	for (int r = 0; r < deep; r++) {
		render_buf_repeat(b, " ", left + 1);
		for (int j = 0; j < T; j++) {
			char g[8];
			glyph_at(p->labels[j], r, g);
			render_pad(b, deep == 1 ? p->labels[j] : g, cw, RENDER_LEFT, ascii);
		}
		render_buf_puts(b, "\n");
	}
	for (int i = 0; i < T; i++) {
		render_buf_printf(b, "%*d ", iw, i);
		render_pad(b, p->labels[i], lw, RENDER_LEFT, ascii);
		render_buf_puts(b, ascii ? " |" : " \u2502");
		for (int j = 0; j < T; j++)
			render_buf_repeat(b, (ascii ? cell_ascii : cell_glyph)[cell(p, i, j)], cw);
		render_buf_puts(b, ascii ? "|" : "\u2502");
		if (p->w) {
			double sum = 0;
			for (int j = 0; j < T; j++)
				sum += p->w[(size_t)i * T + j];
			render_buf_printf(b, " %.2f", sum);
		}
		render_buf_puts(b, "\n");
	}
	bool seen[MASK_CELL_KINDS] = { false };
	for (int i = 0; i < T; i++)
		for (int j = 0; j < T; j++)
			seen[cell(p, i, j)] = true;
	render_buf_puts(b, "cells:");
	for (int k = 0; k < MASK_CELL_KINDS; k++)
		if (seen[k])
			render_buf_printf(b, "  %s %s", (ascii ? cell_ascii : cell_glyph)[k], cell_words[k]);
	render_buf_printf(b, "%s\n", p->w ? "; numbers: the sum of the row's weights" : "");
}

/* ------------------------------------------------------------- csv, json */

static void mask_csv(const struct mask_fig *f, struct render_buf *b)
{
	render_buf_puts(b, "\"mask\",\"query\",\"label\"");
	int T = f->n_labels;
	for (int j = 0; j < T; j++)
		render_buf_printf(b, ",\"%d\"", j);
	render_buf_puts(b, "\n");
	for (int k = 0; k < f->n; k++) {
		const struct panel *p = &f->p[k];
		for (int i = 0; i < p->T; i++) {
			ex_csv_quoted(b, p->name);
			render_buf_printf(b, ",%d,", i);
			ex_csv_quoted(b, p->labels[i]);
			for (int j = 0; j < T; j++)
				render_buf_printf(b, ",%s", j < p->T ? mask_cell_name(cell(p, i, j)) : "");
			render_buf_puts(b, "\n");
		}
	}
}

static void mask_json(const struct session *s, const struct mask_fig *f, struct render_buf *b)
{
	char **lab = session_labels(s);
	json_t *root = ex_json_head_obj(s, lab, true);
	render_labels_free(lab, s->n_tokens);
	json_object_del(root, "shape");
	json_t *masks = ju_check(json_array());
	for (int k = 0; k < f->n; k++) {
		const struct panel *p = &f->p[k];
		json_t *o = ju_check(json_object()), *rows = ju_check(json_array());
		ju_set(o, "name", json_string(p->name));
		ju_set(o, "mask", json_string(mask_kind_name(p->mask)));
		ju_set(o, "window", p->mask == MASK_WINDOW ? json_integer(p->window) : json_null());
		ju_set(o, "tokens", json_integer(p->T));
		ju_set(o, "real_tokens", json_integer(p->key_len));
		ju_set(o, "current", json_boolean(p->current));
		for (int i = 0; i < p->T; i++) {
			json_t *row = ju_check(json_array());
			for (int j = 0; j < p->T; j++)
				ju_append(row, json_string(mask_cell_name(cell(p, i, j))));
			ju_append(rows, row);
		}
		ju_set(o, "cells", rows);
		if (p->w) {
			json_t *sums = ju_check(json_array());
			for (int i = 0; i < p->T; i++) {
				double sum = 0;
				for (int j = 0; j < p->T; j++)
					sum += p->w[(size_t)i * p->T + j];
				ju_append(sums, ju_real(sum));
			}
			char head[32];
			snprintf(head, sizeof head, "%d.%d", p->w_layer, p->w_head);
			ju_set(o, "head", json_string(head));
			ju_set(o, "row_sums", sums);
		}
		ju_append(masks, o);
	}
	ju_set(root, "masks", masks);
	ex_json_emit(b, root);
}

/* ------------------------------------------------------------------- svg */

static const char *const cell_fill[MASK_CELL_KINDS] = { "#3b6fb6", "url(#masked)", "url(#zeroed)",
							"url(#padded)" };

/* The cells of one panel at x0, y0; the after-softmax panel's seen cells
 * in the weight's colour and a strip of row sums at its right. */
static void panel_cells(struct render_buf *b, const struct panel *p, int x0, int y0, int cs)
{
	int T = p->T;
	render_buf_puts(b, "<g class=\"map\">\n");
	for (int i = 0; i < T; i++)
		for (int j = 0; j < T; j++) {
			enum mask_cell c = cell(p, i, j);
			char col[8];
			const char *fill = cell_fill[c];
			if (c == MASK_CELL_SEEN && p->w) {
				ex_svg_color(col, p->w[(size_t)i * T + j]);
				fill = col;
			}
			render_buf_printf(b, "<rect class=\"%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
					  "fill=\"%s\"/>\n", mask_cell_name(c), x0 + j * cs, y0 + i * cs, cs,
					  cs, fill);
		}
	render_buf_puts(b, "</g>\n");
	ex_svg_frame(b, x0, y0, T * cs, T * cs, false);
	if (!p->w)
		return;
	int x = x0 + T * cs + 6;
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\">sum</text>\n", x, y0 - 3);
	for (int i = 0; i < T; i++) {
		double sum = 0;
		for (int j = 0; j < T; j++)
			sum += p->w[(size_t)i * T + j];
		char col[8];
		ex_svg_color(col, sum);
		render_buf_printf(b, "<rect class=\"rowsum\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				  "fill=\"%s\"><title>row %d: %.3f</title></rect>\n", x, y0 + i * cs,
				  cs + 4, cs, col, i, sum);
	}
	ex_svg_frame(b, x, y0, cs + 4, T * cs, false);
}

/* The swatches under the figure: one per cell state, and the ramp when a
 * panel shows weights. */
static int mask_legend(struct render_buf *b, int y, const bool *present, bool weights)
{
	render_buf_puts(b, "<g class=\"legend\" font-size=\"12\">\n");
	int row = 0;
	for (int k = 0; k < MASK_CELL_KINDS; k++) {
		if (!present[k])
			continue;
		int yy = y + row++ * 22;
		render_buf_printf(b, "<rect class=\"%s\" x=\"30\" y=\"%d\" width=\"28\" height=\"14\" "
				  "fill=\"%s\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n<text x=\"64\" "
				  "y=\"%d\">%s%s</text>\n", mask_cell_name((enum mask_cell)k), yy + 1,
				  cell_fill[k], yy + 12, cell_words[k],
				  k == MASK_CELL_SEEN && weights ? " (after-softmax: coloured by its weight)"
				  : k == MASK_CELL_HIDDEN ? ": removed before the softmax, not a weight of 0"
				  : k == MASK_CELL_ZEROED ? ": it still took part in the softmax" : "");
	}
	int h = row * 22;
	if (weights) {
		struct ex_legend lg = { .what = "attention weight, and each row's sum (the strip)" };
		ex_svg_legend(b, 0, y + h, &lg);
		h += ex_svg_legend_h(&lg);
	}
	render_buf_puts(b, "</g>\n");
	return h;
}

static void mask_svg(const struct session *s, const struct mask_fig *f, struct render_buf *out)
{
	int n = f->n, cols = n > 1 ? 3 : 1, rows = (n + cols - 1) / cols;
	int T = f->n_labels, side_px = n > 1 ? 300 : 480;
	int cs = T ? side_px / T : 4;
	cs = cs < 3 ? 3 : cs > 16 ? 16 : cs;
	int qw = ex_svg_query_labels_w(f->labels, T, cs, false);
	int kh = ex_svg_key_labels_h(f->labels, T, cs);
	int pw = qw + T * cs + cs + 40, tw = T * cs + cs + 20, lines = 1;
	for (int k = 0; k < n; k++) {
		int m = ex_svg_wrapped(NULL, 0, 0, 11, tw, f->p[k].what, false);
		lines = m > lines ? m : lines;
	}
	int head = 22 + lines * 14 + 4, ph = head + kh + T * cs + 24;
	bool weights = false, present[MASK_CELL_KINDS] = { false };
	for (int k = 0; k < n; k++) {
		const struct panel *p = &f->p[k];
		weights |= p->w != NULL;
		for (int i = 0; i < p->T; i++)
			for (int j = 0; j < p->T; j++)
				present[cell(p, i, j)] = true;
	}
	struct render_buf b;
	render_buf_init(&b);
	render_buf_puts(&b, "<defs><pattern id=\"zeroed\" width=\"6\" height=\"6\" "
			    "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(-45)\"><rect "
			    "width=\"6\" height=\"6\" fill=\"#fbe3e3\"/><line x1=\"0\" y1=\"0\" x2=\"0\" "
			    "y2=\"6\" stroke=\"#d62728\" stroke-width=\"2\"/></pattern>\n<pattern "
			    "id=\"padded\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\"><rect "
			    "width=\"5\" height=\"5\" fill=\"#f3ead9\"/><circle cx=\"2.5\" cy=\"2.5\" "
			    "r=\"1.2\" fill=\"#8c564b\"/></pattern></defs>\n");
	for (int k = 0; k < n; k++) {
		const struct panel *p = &f->p[k];
		int x0 = 16 + (k % cols) * pw + qw, y0 = (k / cols) * ph;
		int top = y0 + head + kh;
		render_buf_printf(&b, "<g class=\"panel\">\n<text x=\"%d\" y=\"%d\" font-size=\"14\" "
				  "font-weight=\"bold\">%s %s%s</text>\n", x0, y0 + 15,
				  p->key_len < p->T ? "the" : "mask", p->name,
				  p->key_len < p->T ? " mask" : p->current ? " (current)" : "");
		ex_svg_wrapped(&b, x0, y0 + 31, 11, tw, p->what, true);
		ex_svg_key_labels(&b, p->labels, p->T, x0, top, cs);
		ex_svg_query_labels(&b, p->labels, p->T, x0, top, cs, false);
		panel_cells(&b, p, x0, top, cs);
		render_buf_puts(&b, "</g>\n");
	}
	int lh = mask_legend(&b, rows * ph, present, weights);
	char heading[256], sub[1200], text[200], opts[512];
	snprintf(heading, sizeof heading, "%s: which keys each query sees%s", n > 1 ? "Attention masks"
		 : "The attention mask", n > 1 ? ", mask by mask" : "");
	ex_text_excerpt(s, 60, text, sizeof text);
	export_describe_options(s, opts, sizeof opts);
	snprintf(sub, sizeof sub, "Model %s reading \u201c%s\u201d (%d tokens). Each row is a token "
		 "doing the looking (the query), each column a token it might look at (the key): "
		 "blue where it may, patterned where the mask stops it.\nOptions: %s.",
		 ex_model_name(s), text, s->n_tokens, opts);
	int w = 16 + cols * pw;
	w = w < 820 ? 820 : w;
	ex_svg_figure(out, w, rows * ph + lh, heading, heading, sub, &b);
	render_buf_free(&b);
}

int export_mask(const struct session *s, const struct export_req *r, enum export_format f,
		struct render_buf *out, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	if (f == EXPORT_PNG)
		return err_set(e, "export mask: png is made from the svg (export_run)");
	struct mask_fig fig;
	build(s, r->all, &fig);
	switch (f) {
	case EXPORT_CSV:
		mask_csv(&fig, out);
		break;
	case EXPORT_JSON:
		mask_json(s, &fig, out);
		break;
	case EXPORT_SVG:
		mask_svg(s, &fig, out);
		break;
	default: {
		size_t start = out->len;
		for (int k = 0; k < fig.n; k++) {
			if (k)
				render_buf_puts(out, "\n");
			panel_text(out, &fig.p[k], f == EXPORT_ASCII);
		}
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	}
	fig_free(&fig);
	return 0;
}
