/*
 * export-layer.c — `export layer L`: every head of one layer in one
 * figure (export.h), in the tutorial's style: one small heatmap per head,
 * the tokens on both axes, each head titled with its role badge, one
 * legend for all.  Its text, CSV and JSON forms are the grid's rows of
 * that layer (export.c: export_grid_range).
 *
 * Layout: heads in ceil(sqrt(H)) columns (2 x 2 for 4 heads, 4 x 3 for
 * 12: about square, so that a slide shows the labels large), each panel
 *
 *     head L.H [role]
 *     key labels (upright)
 *     query labels | map of T x T cells of cs pixels
 *
 * with cs = LAYER_SIDE / T clamped to 3..28 pixels.
 */
#include "export.h"
#include "export-parts.h"

#include <stdio.h>
#include <stdlib.h>

#define LAYER_SIDE 420 /* pixels a map aims at */
#define LAYER_GAP 28   /* between panels */
#define LAYER_TITLE 22 /* the head's title row */

static int clamp(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The whole figure of layer l into out. */
static void svg_layer(const struct session *s, const struct export_req *r, int l,
		      struct render_buf *out)
{
	int T = s->n_tokens, H = s->model->cfg.n_head;
	int cols = 1;
	while (cols * cols < H)
		cols++;
	int rows = (H + cols - 1) / cols;
	int cs = clamp(LAYER_SIDE / T, 3, 28), side = T * cs;
	char **labels = session_labels(s);
	int qw = ex_svg_query_labels_w(labels, T, cs, false), kh = ex_svg_key_labels_h(labels, T, cs);
	int pw = qw + side + LAYER_GAP, ph = LAYER_TITLE + kh + side + LAYER_GAP;
	char heading[256], sub[1400], tip[1024], mask[256], opts[512];
	snprintf(heading, sizeof heading, "Layer %d of %s: its %d attention heads", l,
		 ex_model_name(s), H);
	ex_subtitle(s, false, sub, sizeof sub);
	export_describe_options(s, opts, sizeof opts);
	snprintf(tip, sizeof tip, "attnscope: %s; %d tokens; options: %s", heading, T, opts);
	ex_mask_words(&s->opt, mask, sizeof mask);
	struct ex_legend lg = { .what = heat_kind_legend(s->heat), .masked = mask,
				.roles = r->roles ? r->roles + l * H : NULL, .n_roles = H };
	int w = 16 + cols * pw, body_h = rows * ph + ex_svg_legend_h(&lg);
	w = w < 760 ? 760 : w;
	w = w < 16 + ex_svg_legend_w(&lg) ? 16 + ex_svg_legend_w(&lg) : w;

	struct render_buf b;
	render_buf_init(&b);
	for (int h = 0; h < H; h++) {
		int x0 = 16 + (h % cols) * pw + qw, y0 = (h / cols) * ph;
		int top = y0 + LAYER_TITLE + kh;
		bool sel = r->selected && l == s->sel_layer && h == s->sel_head;
		bool abl = session_head_ablated(s, l, h);
		char name[48];
		snprintf(name, sizeof name, "head %d.%d%s", l, h, abl ? " (ablated)" : "");
		render_buf_printf(&b, "<g class=\"head\">\n<text x=\"%d\" y=\"%d\" font-size=\"14\" "
				  "font-weight=\"bold\">%s</text>\n", x0, y0 + 15, name);
		if (r->roles)
			ex_svg_badge(&b, x0 + ex_text_px(render_width(name), 14) + 8, y0 + 15,
				     &r->roles[l * H + h]);
		ex_svg_key_labels(&b, labels, T, x0, top, cs);
		ex_svg_query_labels(&b, labels, T, x0, top, cs, false);
		struct ex_map m = { .a = session_att(s, l, h), .T = T, .o = &s->opt };
		ex_svg_map(&b, &m, x0, top, cs);
		ex_svg_frame(&b, x0, top, side, side, sel);
		render_buf_puts(&b, "</g>\n");
	}
	ex_svg_legend(&b, 16, rows * ph, &lg);
	ex_svg_figure(out, w, body_h, tip, heading, sub, &b);
	render_buf_free(&b);
	render_labels_free(labels, T);
}

int export_layer(const struct session *s, const struct export_req *r, enum export_format f,
		 struct render_buf *out, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	int L = s->model->cfg.n_layer;
	if (r->layer < 0 || r->layer >= L)
		return err_set(e, "layer %d does not exist (layers 0-%d)", r->layer, L - 1);
	if (f == EXPORT_PNG)
		return err_set(e, "export layer: png is made from the svg (export_run)");
	if (f != EXPORT_SVG)
		return export_grid_range(s, r, r->layer, r->layer + 1, f, out);
	svg_layer(s, r, r->layer, out);
	return 0;
}
