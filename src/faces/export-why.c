/*
 * export-why.c — `export why L.H I J`: the pre-softmax score of query I on
 * key J in head L.H split into (query part, key part) terms (why.h), the
 * numbers `why` prints.
 *
 * txt / ascii / ansi: the head, positions and score, then a line per part
 * (its query side, key side and contrast at the key), then every nonzero
 * term, the largest first, the sum, the pass's score and what is left
 * out (for soft-capped scores, the cap's change and the capped score);
 * csv: a row per term ("query part", "key part", "term"), n x n of
 * them, summing to the score (before any cap); json: the head, positions,
 * score, sum, left out, scale, the frozen norm scales (the sandwich norms'
 * per layer), softcap and capped_score where the model caps, the parts (name, query, key,
 * key_mean) and the terms as an n x n array (row: query part); svg: the
 * terms as a matrix of cells, query parts down and key parts across, red
 * where a term raises the score and blue where it lowers it, each value
 * written in its cell, each row's sum (the query side) at its right and
 * each column's (the key side) under it.
 */
#include "export.h"
#include "export-parts.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "why.h"

/* ---------------------------------------------------------- the numbers */

static void why_text(const struct why_result *w, char **lab, struct render_buf *out)
{
	render_buf_printf(out, "why %d.%d: query %d '%s' on key %d '%s' (K/V head %d); score %+.4f, "
			       "mean over the keys query %d sees %+.4f\n",
			  w->layer, w->head, w->qpos, lab[w->qpos], w->kpos, lab[w->kpos], w->kv_head,
			  w->score, w->qpos, w->mean_score);
	render_buf_printf(out, "%-14s %10s %10s %10s\n", "part", "query", "key", "contrast");
	for (int a = 0; a < w->n; a++) {
		char name[32];
		why_part_name(&w->parts[a], name, sizeof name);
		const struct why_part *p = &w->parts[a];
		render_buf_printf(out, "%-14s %+10.4f %+10.4f %+10.4f\n", name, render_shown(p->query, 4),
				  render_shown(p->key, 4), render_shown(p->key - p->key_mean, 4));
	}
	size_t nn = (size_t)w->n * w->n;
	int *order = xmalloc(nn * sizeof *order);
	why_rank(w->terms, (int)nn, order);
	render_buf_printf(out, "\n%-14s %-14s %10s\n", "query part", "key part", "term");
	for (size_t i = 0; i < nn && w->terms[order[i]] != 0.0; i++) {
		char qn[32], kn[32];
		why_part_name(&w->parts[order[i] / w->n], qn, sizeof qn);
		why_part_name(&w->parts[order[i] % w->n], kn, sizeof kn);
		render_buf_printf(out, "%-14s %-14s %+10.4f\n", qn, kn, render_shown(w->terms[order[i]], 4));
	}
	free(order);
	render_buf_printf(out, "%-29s %+10.4f\n%-29s %+10.4f\n%-29s %+10.6f\n", "sum of the terms",
			  w->sum, "the pass's score", w->score, "left out", w->left_out);
	if (w->softcap > 0)
		render_buf_printf(out, "%-29s %+10.4f\n%-29s %+10.4f\n", "the soft-cap's change",
				  w->capped - w->score, "the capped score", w->capped);
}

static void why_csv(const struct why_result *w, struct render_buf *out)
{
	render_buf_puts(out, "\"query part\",\"key part\",\"term\"\n");
	for (int a = 0; a < w->n; a++)
		for (int b = 0; b < w->n; b++) {
			char qn[32], kn[32];
			why_part_name(&w->parts[a], qn, sizeof qn);
			why_part_name(&w->parts[b], kn, sizeof kn);
			ex_csv_quoted(out, qn);
			render_buf_puts(out, ",");
			ex_csv_quoted(out, kn);
			render_buf_printf(out, ",%.9g\n", w->terms[(size_t)a * w->n + b]);
		}
}

static void why_json(const struct session *s, const struct why_result *w, char **lab,
		     struct render_buf *out)
{
	json_t *root = ex_json_head_obj(s, lab, false);
	ju_set(root, "layer", ju_check(json_integer(w->layer)));
	ju_set(root, "head", ju_check(json_integer(w->head)));
	ju_set(root, "kv_head", ju_check(json_integer(w->kv_head)));
	ju_set(root, "query", ju_check(json_integer(w->qpos)));
	ju_set(root, "key", ju_check(json_integer(w->kpos)));
	ju_set(root, "score", ju_real(w->score));
	ju_set(root, "sum", ju_real(w->sum));
	ju_set(root, "left_out", ju_real(w->left_out));
	ju_set(root, "mean_score", ju_real(w->mean_score));
	ju_set(root, "scale", ju_real(w->scale));
	ju_set(root, "rstd_query", isnan(w->rstd_q) ? json_null() : ju_real(w->rstd_q));
	ju_set(root, "rstd_key", isnan(w->rstd_k) ? json_null() : ju_real(w->rstd_k));
	if (!isnan(w->qn_rstd_q)) { /* Qwen3's, Gemma 3's, OLMo-2's q/k norm */
		ju_set(root, "qk_norm_rstd_query", ju_real(w->qn_rstd_q));
		ju_set(root, "qk_norm_rstd_key", ju_real(w->qn_rstd_k));
	}
	if (w->post_rstd) { /* the sandwich norms: [at the query, at the key] per layer */
		json_t *post = ju_check(json_array());
		for (int l = 0; l < w->layer; l++) {
			json_t *pair = ju_check(json_array());
			ju_append(pair, ju_real(w->post_rstd[2 * l]));
			ju_append(pair, ju_real(w->post_rstd[2 * l + 1]));
			ju_append(post, pair);
		}
		ju_set(root, "sandwich_rstd", post);
	}
	if (w->softcap > 0) { /* Gemma 2: the softmax read capped, not score */
		ju_set(root, "softcap", ju_real(w->softcap));
		ju_set(root, "capped_score", ju_real(w->capped));
	}
	json_t *parts = ju_check(json_array()), *terms = ju_check(json_array());
	for (int a = 0; a < w->n; a++) {
		char name[32];
		why_part_name(&w->parts[a], name, sizeof name);
		json_t *o = ju_check(json_object());
		ju_set(o, "part", ex_json_str(name));
		ju_set(o, "query", ju_real(w->parts[a].query));
		ju_set(o, "key", ju_real(w->parts[a].key));
		ju_set(o, "key_mean", ju_real(w->parts[a].key_mean));
		ju_append(parts, o);
		json_t *row = ju_check(json_array());
		for (int b = 0; b < w->n; b++)
			ju_append(row, ju_real(w->terms[(size_t)a * w->n + b]));
		ju_append(terms, row);
	}
	ju_set(root, "parts", parts);
	ju_set(root, "terms", terms);
	ex_json_emit(out, root);
}

/* ------------------------------------------------------------------ svg */

#define CELL_W 58 /* at least; wider when a part's name needs it */
#define CELL_H 22
#define NAME_W 96

/* The part names along the top (each upright, in its column) and down the
 * left side, at the matrix's corner x0, y0. */
static void names(struct render_buf *b, const struct why_result *w, int x0, int y0, int cw)
{
	for (int a = 0; a < w->n; a++) {
		char name[32];
		why_part_name(&w->parts[a], name, sizeof name);
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">",
				  x0 + a * cw + cw / 2, y0 - 6);
		ex_xml_text(b, name);
		render_buf_printf(b, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" "
				  "text-anchor=\"end\">", x0 - 6, y0 + a * CELL_H + CELL_H / 2 + 4);
		ex_xml_text(b, name);
		render_buf_puts(b, "</text>\n");
	}
}

/* One cell at x, y, cw wide: its colour v / big, its value in it. */
static void cell(struct render_buf *b, int x, int y, int cw, double v, double big)
{
	char c[8];
	ex_svg_diverging(c, v / big);
	render_buf_printf(b, "<rect class=\"t\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			  "fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\""
			  "%s>%+.2f</text>\n", x, y, cw, CELL_H, c, x + cw / 2,
			  y + CELL_H / 2 + 4, fabs(v / big) > 0.6 ? " fill=\"#ffffff\"" : "", v);
}

static void why_svg(const struct session *s, const struct why_result *w, char **lab,
		    struct render_buf *out)
{
	int n = w->n;
	double big = 0;
	for (size_t i = 0; i < (size_t)n * n; i++)
		big = fabs(w->terms[i]) > big ? fabs(w->terms[i]) : big;
	big = big > 0 ? big : 1;
	int cw = CELL_W;
	for (int a = 0; a < n; a++) {
		char name[32];
		why_part_name(&w->parts[a], name, sizeof name);
		int px = ex_text_px((int)strlen(name), 11) + 10;
		cw = px > cw ? px : cw;
	}
	int x0 = 20 + NAME_W, y0 = 52, side_x = x0 + n * cw + 8;
	struct render_buf body;
	render_buf_init(&body);
	render_buf_printf(&body, "<text x=\"%d\" y=\"14\" font-size=\"12\" font-weight=\"bold\">key "
			  "part (at key %d) \u2192</text>\n<text x=\"20\" y=\"%d\" font-size=\"12\" "
			  "font-weight=\"bold\">query part (at query %d) \u2193</text>\n",
			  x0, w->kpos, y0 - 22, w->qpos);
	names(&body, w, x0, y0, cw);
	for (int a = 0; a < n; a++)
		for (int k = 0; k < n; k++)
			cell(&body, x0 + k * cw, y0 + a * CELL_H, cw, w->terms[(size_t)a * n + k], big);
	ex_svg_frame(&body, x0, y0, n * cw, n * CELL_H, false);
	/* the margins: each row's sum (query side), each column's (key side) */
	render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\">query side</text>\n",
			  side_x + 2, y0 - 6);
	for (int a = 0; a < n; a++)
		render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%+.3f</text>\n", side_x + 2,
				  y0 + a * CELL_H + CELL_H / 2 + 4, w->parts[a].query);
	int ky = y0 + n * CELL_H + 16;
	render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">key "
			  "side</text>\n", x0 - 6, ky);
	for (int k = 0; k < n; k++)
		render_buf_printf(&body, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">"
				  "%+.3f</text>\n", x0 + k * cw + cw / 2, ky, w->parts[k].key);
	int wd = side_x + 90, h = ky + 16;
	char heading[256], sub[1400], cap[160] = "";
	if (w->softcap > 0) /* Gemma 2: the softmax reads the capped score */
		snprintf(cap, sizeof cap, " The softmax reads it capped, %g tanh(score / %g) = %+.4f.",
			 w->softcap, w->softcap, w->capped);
	snprintf(heading, sizeof heading, "Why %d.%d attends: query %d '%s' on key %d '%s', %s",
		 w->layer, w->head, w->qpos, lab[w->qpos], w->kpos, lab[w->kpos], ex_model_name(s));
	snprintf(sub, sizeof sub,
		 "The pre-softmax score %+.4f split into one term per (query part, key part): the "
		 "parts are the token and position embeddings, each earlier head's and MLP's output "
		 "and the biases and norm shifts, each norm frozen at its position's scale. A row's sum "
		 "is that part's query side, a column's its key side. Red raises the score, blue lowers "
		 "it (colour: the term over the largest, %.3f). The %d terms sum to %+.4f (%.1e left "
		 "out, float rounding).%s",
		 w->score, big, n * n, w->sum, fabs(w->left_out), cap);
	ex_svg_figure(out, wd, h, heading, heading, sub, &body);
	render_buf_free(&body);
}

int export_why(const struct session *s, const struct export_req *req, enum export_format f,
	       struct render_buf *out, struct err *e)
{
	if (!session_ready(s))
		return err_set(e, "export why: no text yet (try: text the cat sat)");
	if (f == EXPORT_PNG)
		return err_set(e, "export why: png is made from the svg (export_run)");
	struct why_result w;
	if (why_run(s->model, &s->opt, s->tokens, s->n_tokens, req->layer, req->head, req->qpos,
		    req->kpos, &w, e) != 0)
		return -1;
	char **lab = session_labels(s);
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV: why_csv(&w, out); break;
	case EXPORT_JSON: why_json(s, &w, lab, out); break;
	case EXPORT_SVG: why_svg(s, &w, lab, out); break;
	default:
		why_text(&w, lab, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	render_labels_free(lab, s->n_tokens);
	why_free(&w);
	return 0;
}
