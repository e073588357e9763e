/*
 * export-circuits.c — `export circuits`: the composition scores of every
 * pair of heads (compose.h) under the session's sharing and placement.
 *
 * txt / ascii: the baseline, then a line per pair (A, B, Q, K, V); csv:
 * the same columns, a row per pair, and a last row "baseline"; json: the
 * model's shape, the baseline and the pairs; svg: three heatmaps side by
 * side, one per kind, later head B down and earlier head A across (the
 * pairs with A not before B blank), each cell shaded by its score over
 * the strongest of all three kinds, with a scale, a legend in words and
 * the strongest pair of each kind named under its map.
 */
#include "export.h"
#include "export-parts.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "json-util.h"

/* ---------------------------------------------------------- the numbers */

static void circ_text(const struct session *s, const struct compose_result *r,
		      struct render_buf *out)
{
	render_buf_printf(out, "composition scores of %s: %d layers x %d heads, %d K/V heads, %s\n",
			  ex_model_name(s), r->L, r->H, r->G,
			  s->opt.placement == PLACE_PRE ? "input norm gains folded in" : "no norm folded");
	render_buf_printf(out, "random baseline: Q %.4f  K %.4f  V %.4f\n", r->baseline[COMPOSE_Q],
			  r->baseline[COMPOSE_K], r->baseline[COMPOSE_V]);
	render_buf_printf(out, "%-6s %-6s %8s %8s %8s\n", "A", "B", "Q", "K", "V");
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		char a[16], b[16];
		snprintf(a, sizeof a, "%d.%d", p->la, p->ha);
		snprintf(b, sizeof b, "%d.%d", p->lb, p->hb);
		render_buf_printf(out, "%-6s %-6s %8.4f %8.4f %8.4f\n", a, b, p->score[COMPOSE_Q],
				  p->score[COMPOSE_K], p->score[COMPOSE_V]);
	}
}

static void circ_csv(const struct compose_result *r, struct render_buf *out)
{
	render_buf_puts(out, "\"A\",\"B\",\"Q\",\"K\",\"V\"\n");
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		render_buf_printf(out, "\"%d.%d\",\"%d.%d\",%.9g,%.9g,%.9g\n", p->la, p->ha, p->lb, p->hb,
				  p->score[COMPOSE_Q], p->score[COMPOSE_K], p->score[COMPOSE_V]);
	}
	render_buf_printf(out, "\"baseline\",\"\",%.9g,%.9g,%.9g\n", r->baseline[COMPOSE_Q],
			  r->baseline[COMPOSE_K], r->baseline[COMPOSE_V]);
}

static json_t *kinds_obj(const double *v)
{
	json_t *o = ju_check(json_object());
	for (int k = 0; k < COMPOSE_KINDS; k++)
		ju_set(o, compose_kind_name((enum compose_kind)k), ju_real(v[k]));
	return o;
}

static void circ_json(const struct session *s, const struct compose_result *r,
		      struct render_buf *out)
{
	json_t *root = ju_check(json_object());
	ju_set(root, "model", ex_json_str(ex_model_name(s)));
	ju_set(root, "layers", ju_check(json_integer(r->L)));
	ju_set(root, "heads", ju_check(json_integer(r->H)));
	ju_set(root, "kv_heads", ju_check(json_integer(r->G)));
	ju_set(root, "norm_folded", ju_check(json_boolean(s->opt.placement == PLACE_PRE)));
	ju_set(root, "baseline", kinds_obj(r->baseline));
	json_t *pairs = ju_check(json_array());
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		json_t *o = kinds_obj(p->score);
		char a[16], b[16];
		snprintf(a, sizeof a, "%d.%d", p->la, p->ha);
		snprintf(b, sizeof b, "%d.%d", p->lb, p->hb);
		ju_set(o, "A", ex_json_str(a));
		ju_set(o, "B", ex_json_str(b));
		ju_append(pairs, o);
	}
	ju_set(root, "pairs", pairs);
	ex_json_emit(out, root);
}

/* ------------------------------------------------------------------ svg */

#define MAP_GAP 90

/* The cell size: maps of n x n cells near 360 pixels, 4 to 40 a cell. */
static int cell_px(int n)
{
	int cs = 360 / n;
	return cs < 4 ? 4 : cs > 40 ? 40 : cs;
}

/* Axis labels of one map at x0, y0 (n = (L - 1) H cells a side): every
 * head "L.H" when cells are 14 px or more, else each layer's name at the
 * middle of its block; rows are B (layers 1 ..), columns A (layers 0 ..). */
static void map_labels(struct render_buf *o, const struct compose_result *r, int x0, int y0, int cs)
{
	int n = (r->L - 1) * r->H;
	bool each = cs >= 14;
	for (int i = 0; i < n; i++) {
		if (!each && i % r->H)
			continue;
		int l = i / r->H, h = i % r->H;
		int off = each ? i * cs + cs / 2 : i * cs + r->H * cs / 2;
		char a[24], b[24];
		if (each) {
			snprintf(a, sizeof a, "%d.%d", l, h);
			snprintf(b, sizeof b, "%d.%d", l + 1, h);
		} else {
			snprintf(a, sizeof a, "layer %d", l);
			snprintf(b, sizeof b, "layer %d", l + 1);
		}
		render_buf_printf(o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s"
				  "</text>\n", x0 + off, y0 - 4, a);
		render_buf_printf(o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%s"
				  "</text>\n", x0 - 4, y0 + off + 3, b);
	}
}

/* One kind's map at x0, y0; the score of each pair over top. */
static void map_cells(struct render_buf *o, const struct compose_result *r, enum compose_kind k,
		      double top, int x0, int y0, int cs)
{
	int n = (r->L - 1) * r->H;
	render_buf_printf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n",
			  x0, y0, n * cs, n * cs);
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		int row = (p->lb - 1) * r->H + p->hb, col = p->la * r->H + p->ha;
		char c[8];
		ex_svg_color(c, top > 0 ? p->score[k] / top : 0);
		render_buf_printf(o, "<rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				  "fill=\"%s\"><title>%s %d.%d -> %d.%d: %.4f</title></rect>\n",
				  x0 + col * cs, y0 + row * cs, cs, cs, c, compose_kind_name(k), p->la,
				  p->ha, p->lb, p->hb, p->score[k]);
	}
	for (int l = 1; l < r->L - 1; l++) /* layer boundaries */
		render_buf_printf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ffffff\"/>"
				  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ffffff\"/>\n",
				  x0 + l * r->H * cs, y0, x0 + l * r->H * cs, y0 + n * cs, x0,
				  y0 + l * r->H * cs, x0 + n * cs, y0 + l * r->H * cs);
	ex_svg_frame(o, x0, y0, n * cs, n * cs, false);
}

static const char *const kind_title[COMPOSE_KINDS] = {
	"Q: B's queries read A", "K: B's keys read A", "V: B's values read A",
};

static void circ_svg(const struct session *s, const struct compose_result *r, struct render_buf *out)
{
	int n = (r->L - 1) * r->H, cs = cell_px(n), side = n * cs, lab = cs >= 14 ? 34 : 52;
	double top = 0;
	int best[COMPOSE_KINDS] = { 0 };
	for (int k = 0; k < COMPOSE_KINDS; k++)
		for (int i = 0; i < r->n; i++) {
			top = r->pairs[i].score[k] > top ? r->pairs[i].score[k] : top;
			if (r->pairs[i].score[k] > r->pairs[best[k]].score[k])
				best[k] = i;
		}
	int w = 20 + COMPOSE_KINDS * (lab + side + MAP_GAP) + 130;
	struct render_buf body;
	render_buf_init(&body);
	int y0 = 40;
	for (int k = 0; k < COMPOSE_KINDS; k++) {
		int x0 = 20 + lab + k * (lab + side + MAP_GAP);
		const struct compose_pair *p = &r->pairs[best[k]];
		render_buf_printf(&body, "<text x=\"%d\" y=\"14\" font-size=\"13\" font-weight=\"bold\">%s"
				  "</text>\n", x0, kind_title[k]);
		map_labels(&body, r, x0, y0, cs);
		map_cells(&body, r, (enum compose_kind)k, top, x0, y0, cs);
		render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\">strongest %d.%d \u2192 "
				  "%d.%d: %.3f</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\">random "
				  "baseline %.3f</text>\n", x0, y0 + side + 18, p->la, p->ha, p->lb, p->hb,
				  p->score[k], x0, y0 + side + 32, r->baseline[k]);
	}
	char what[64];
	snprintf(what, sizeof what, "score / %.3f", top);
	ex_svg_scale(&body, w - 120, y0, side > 120 ? side : 120, what, false);
	int h = y0 + (side > 120 ? side : 120) + 44;
	char heading[256], sub[1024];
	snprintf(heading, sizeof heading, "Composition between heads: %s", ex_model_name(s));
	snprintf(sub, sizeof sub,
		 "How much each later head B (rows) reads what an earlier head A (columns) writes, "
		 "through its queries, keys or values: ||M W_OV(A)|| / (||M|| ||W_OV(A)||) from the "
		 "weights alone (Elhage et al. 2021), %d K/V heads, %s. Colour: the score over the "
		 "strongest pair of any kind, one scale for the three maps; grey: A not before B. "
		 "Random matrices of these shapes score about %.3f.",
		 r->G, s->opt.placement == PLACE_PRE ? "each layer's input norm folded in" : "post-norm, nothing folded",
		 r->baseline[COMPOSE_K]);
	ex_svg_figure(out, w, h, heading, heading, sub, &body);
	render_buf_free(&body);
}

int export_circuits(const struct session *s, const struct export_req *req, enum export_format f,
		    struct render_buf *out, struct err *e)
{
	(void)req;
	if (!s->model)
		return err_set(e, "export circuits: no model loaded (try: load induction)");
	if (f == EXPORT_PNG)
		return err_set(e, "export circuits: png is made from the svg (export_run)");
	struct compose_result r;
	if (compose_run(s->model, &s->opt, &r, e) != 0)
		return -1;
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV: circ_csv(&r, out); break;
	case EXPORT_JSON: circ_json(s, &r, out); break;
	case EXPORT_SVG: circ_svg(s, &r, out); break;
	default:
		circ_text(s, &r, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	compose_free(&r);
	return 0;
}
