/*
 * export-dla.c — `export dla`: the direct logit attribution (dla.h) of
 * the model's prediction at the text's last position, every part of the
 * residual stream with its direct share of that logit.
 *
 * txt / ascii: the parts in dla.h's order, then the sum, the model's
 * logit and what is left out (for soft-capped logits: the logit before
 * the cap, the cap's change and the model's logit); csv: a row per part
 * ("part", "layer", "head", "logit"; layer and head empty where they do
 * not apply); json: the token, position, frozen scale, logit, sum, left
 * out, softcap and capped_logit where the model caps, the sandwich norms'
 * frozen scales (sandwich_rstd, one per layer) and the parts;
 * svg: a bar per part from a zero line (red adds to the logit, blue takes
 * away), its value at its end, in dla.h's order (token, position, each
 * layer's heads, the MLPs, the biases).
 */
#include "export.h"
#include "export-parts.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dla.h"
#include "json-util.h"
#include "tokenizer.h"

/* ---------------------------------------------------------- the numbers */

static void dla_text(const struct dla_result *d, const char *tok, struct render_buf *out)
{
	render_buf_printf(out, "direct logit attribution of '%s' (%s) at position %d; final norm "
			       "scale frozen at %.6g\n",
			  tok, d->predicted ? "the prediction" : "named", d->pos, d->rstd);
	for (int i = 0; i < d->n; i++) {
		char name[32];
		dla_part_name(&d->parts[i], name, sizeof name);
		render_buf_printf(out, "%-17s %+10.4f\n", name, d->parts[i].logit);
	}
	render_buf_printf(out, "%-17s %+10.4f\n%-17s %+10.4f\n%-17s %+10.6f\n", "sum", d->sum,
			  d->softcap > 0 ? "logit before cap" : "the model's logit", d->logit, "left out",
			  d->left_out);
	if (d->softcap > 0)
		render_buf_printf(out, "%-17s %+10.4f\n%-17s %+10.4f\n", "the cap's change",
				  d->capped - d->logit, "the model's logit", d->capped);
}

static void dla_csv(const struct dla_result *d, struct render_buf *out)
{
	render_buf_puts(out, "\"part\",\"layer\",\"head\",\"logit\"\n");
	for (int i = 0; i < d->n; i++) {
		const struct dla_part *p = &d->parts[i];
		char name[32];
		dla_part_name(p, name, sizeof name);
		ex_csv_quoted(out, name);
		render_buf_puts(out, ",");
		if (p->layer >= 0)
			render_buf_printf(out, "%d", p->layer);
		render_buf_puts(out, ",");
		if (p->head >= 0)
			render_buf_printf(out, "%d", p->head);
		render_buf_printf(out, ",%.9g\n", p->logit);
	}
}

static void dla_json(const struct dla_result *d, const char *tok, struct render_buf *out)
{
	json_t *root = ju_check(json_object());
	ju_set(root, "token", ex_json_str(tok));
	ju_set(root, "token_id", ju_check(json_integer(d->token)));
	ju_set(root, "predicted", ju_check(json_boolean(d->predicted)));
	ju_set(root, "position", ju_check(json_integer(d->pos)));
	ju_set(root, "rstd", ju_real(d->rstd));
	ju_set(root, "logit", ju_real(d->logit));
	ju_set(root, "sum", ju_real(d->sum));
	ju_set(root, "left_out", ju_real(d->left_out));
	if (d->softcap > 0) { /* Gemma 2: logit is before the cap, capped the model's */
		ju_set(root, "softcap", ju_real(d->softcap));
		ju_set(root, "capped_logit", ju_real(d->capped));
	}
	if (d->post_rstd) { /* the attention's sandwich norm of each layer, at the position */
		json_t *post = ju_check(json_array());
		for (int l = 0; l < d->n_layer; l++)
			ju_append(post, ju_real(d->post_rstd[l]));
		ju_set(root, "sandwich_rstd", post);
	}
	json_t *parts = ju_check(json_array());
	for (int i = 0; i < d->n; i++) {
		const struct dla_part *p = &d->parts[i];
		char name[32];
		dla_part_name(p, name, sizeof name);
		json_t *o = ju_check(json_object());
		ju_set(o, "part", ex_json_str(name));
		ju_set(o, "layer", p->layer >= 0 ? ju_check(json_integer(p->layer)) : json_null());
		ju_set(o, "head", p->head >= 0 ? ju_check(json_integer(p->head)) : json_null());
		ju_set(o, "logit", ju_real(p->logit));
		ju_append(parts, o);
	}
	ju_set(root, "parts", parts);
	ex_json_emit(out, root);
}

/* ------------------------------------------------------------------ svg */

#define BAR_H 12
#define BAR_STEP 15
#define NAME_W 110
#define PLOT_W 560

static void dla_svg(const struct session *s, const struct dla_result *d, const char *tok,
		    struct render_buf *out)
{
	double big = 0;
	for (int i = 0; i < d->n; i++)
		big = fabs(d->parts[i].logit) > big ? fabs(d->parts[i].logit) : big;
	big = big > 0 ? big : 1;
	int w = 20 + NAME_W + PLOT_W + 90, zx = 20 + NAME_W + PLOT_W / 2, half = PLOT_W / 2 - 50;
	struct render_buf body;
	render_buf_init(&body);
	int y = 10;
	for (int i = 0; i < d->n; i++, y += BAR_STEP) {
		const struct dla_part *p = &d->parts[i];
		char name[32], c[8];
		dla_part_name(p, name, sizeof name);
		int len = (int)(fabs(p->logit) / big * half + 0.5);
		int x = p->logit < 0 ? zx - len : zx;
		ex_svg_diverging(c, p->logit < 0 ? -0.8 : 0.8);
		render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">",
				  20 + NAME_W - 6, y + BAR_H - 2);
		ex_xml_text(&body, name);
		render_buf_printf(&body, "</text>\n<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%d\" "
				  "height=\"%d\" fill=\"%s\"><title>", x, y, len > 1 ? len : 1, BAR_H, c);
		ex_xml_text(&body, name);
		render_buf_printf(&body, ": %+.4f</title></rect>\n<text x=\"%d\" y=\"%d\" font-size=\"10\" "
				  "text-anchor=\"%s\">%+.3f</text>\n", p->logit, p->logit < 0 ? x - 3 : x + len + 3,
				  y + BAR_H - 2, p->logit < 0 ? "end" : "start", p->logit);
	}
	render_buf_printf(&body, "<line x1=\"%d\" y1=\"4\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n",
			  zx, zx, y);
	char red[8], blue[8];
	ex_svg_diverging(red, 0.8);
	ex_svg_diverging(blue, -0.8);
	y += 14;
	render_buf_printf(&body, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"%s\"/>"
			  "<text x=\"%d\" y=\"%d\" font-size=\"12\">raises the logit</text>\n"
			  "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"%s\"/>"
			  "<text x=\"%d\" y=\"%d\" font-size=\"12\">lowers it</text>\n",
			  20 + NAME_W, y, red, 20 + NAME_W + 20, y + 11, 20 + NAME_W + 170, y, blue,
			  20 + NAME_W + 190, y + 11);
	y += 30;
	char heading[256], sub[1200], cap[160] = "";
	snprintf(heading, sizeof heading, "Direct logit attribution: '%s' at position %d, %s", tok,
		 d->pos, ex_model_name(s));
	if (d->softcap > 0) /* Gemma 2: the parts split the logit before the cap */
		snprintf(cap, sizeof cap, " before its cap; capped, %g tanh(logit / %g), it is %.4f",
			 d->softcap, d->softcap, d->capped);
	snprintf(sub, sizeof sub,
		 "What each part of the residual stream adds directly to the logit of '%s' (%s), read "
		 "straight through the output layer with the final norm's scale frozen at this "
		 "position's. The %d parts sum to %.4f; the model's logit is %.4f%s (%.1e left out, "
		 "float rounding).",
		 tok, d->predicted ? "the model's prediction" : "a named token", d->n, d->sum, d->logit,
		 cap, fabs(d->left_out));
	ex_svg_figure(out, w, y, heading, heading, sub, &body);
	render_buf_free(&body);
}

int export_dla(const struct session *s, const struct export_req *req, enum export_format f,
	       struct render_buf *out, struct err *e)
{
	(void)req;
	if (!s->model || s->n_tokens == 0)
		return err_set(e, "export dla: no text yet (try: text the cat sat)");
	if (f == EXPORT_PNG)
		return err_set(e, "export dla: png is made from the svg (export_run)");
	struct dla_result d;
	if (dla_run(s->model, &s->opt, s->tokens, s->n_tokens, s->n_tokens - 1, -1, &d, e) != 0)
		return -1;
	char tok[64];
	tok_label(s->model->tok, d.token, tok, sizeof tok);
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV: dla_csv(&d, out); break;
	case EXPORT_JSON: dla_json(&d, tok, out); break;
	case EXPORT_SVG: dla_svg(s, &d, tok, out); break;
	default:
		dla_text(&d, tok, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	dla_free(&d);
	return 0;
}
