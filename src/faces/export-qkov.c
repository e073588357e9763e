/*
 * export-qkov.c — `export qkov L.H`: one head's OV circuit (its copying
 * score and the D eigenvalues it is computed from) and, with a text, its
 * QK circuit on that text split by what the query and the key are made of
 * (qkov.h), the numbers `qkov` prints.
 *
 * txt / ascii / ansi: the copying score, the eigenvalues (re, im), then
 * the QK table (query class, key class, mean, spread) and the whole
 * score (and the capped score where the model caps, Gemma 2); csv: the QK table, a row per (query class, key class) and a last
 * row "whole", the means summing to the whole's (needs a text); json: the
 * head, copying score, eigenvalues and, with a text, the QK table (with
 * softcap, mean_capped and spread_capped where the model caps); svg:
 * the eigenvalues as points in the complex plane (right of the vertical
 * axis: copying) beside the QK table's means as a matrix of cells, red
 * where a class pair raises the score, blue where it lowers it.
 */
#include "export.h"
#include "export-parts.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "qkov.h"

/* What one export holds: the OV circuit and, with a text, the QK split. */
struct qkov_both {
	int layer, head;
	struct qkov_ov ov;
	bool text;
	struct qkov_qk qk;
};

static bool shown(const struct qkov_qk *qk, int a, int k)
{
	return qk->has_pos || (a != QK_POS && k != QK_POS);
}

/* ---------------------------------------------------------- the numbers */

static void qkov_text(const struct qkov_both *q, struct render_buf *out)
{
	const struct qkov_ov *ov = &q->ov;
	render_buf_printf(out, "qkov %d.%d: OV copying score %.4f (sum of positive real parts / sum "
			       "of |eigenvalue| of W_U W_OV W_E)\n%-6s %12s %12s\n",
			  q->layer, q->head, ov->copy, "eigen", "re", "im");
	for (int i = 0; i < ov->D; i++)
		render_buf_printf(out, "%-6d %+12.6f %+12.6f\n", i, ov->re[i], ov->im[i]);
	if (!q->text) {
		render_buf_puts(out, "(no text: the QK circuit needs one)\n");
		return;
	}
	const struct qkov_qk *qk = &q->qk;
	render_buf_printf(out, "\nQK circuit on the text (%d visible pairs)\n%-10s %-10s %10s %10s\n",
			  qk->pairs, "query", "key", "mean", "spread");
	for (int a = 0; a < QK_CLASSES; a++)
		for (int k = 0; k < QK_CLASSES; k++)
			if (shown(qk, a, k))
				render_buf_printf(out, "%-10s %-10s %+10.4f %10.4f\n", qk_class_name(a),
						  qk_class_name(k), qk->mean[a][k], qk->spread[a][k]);
	render_buf_printf(out, "%-21s %+10.4f %10.4f\n", "the whole score", qk->mean_score,
			  qk->spread_score);
	if (qk->softcap > 0) /* Gemma 2: what the softmax reads */
		render_buf_printf(out, "%-21s %+10.4f %10.4f\n", "the capped score", qk->mean_capped,
				  qk->spread_capped);
}

static void qkov_csv(const struct qkov_both *q, struct render_buf *out)
{
	const struct qkov_qk *qk = &q->qk;
	render_buf_puts(out, "\"query\",\"key\",\"mean\",\"spread\"\n");
	for (int a = 0; a < QK_CLASSES; a++)
		for (int k = 0; k < QK_CLASSES; k++)
			if (shown(qk, a, k))
				render_buf_printf(out, "\"%s\",\"%s\",%.9g,%.9g\n", qk_class_name(a),
						  qk_class_name(k), qk->mean[a][k], qk->spread[a][k]);
	render_buf_printf(out, "\"whole\",\"\",%.9g,%.9g\n", qk->mean_score, qk->spread_score);
}

static void qkov_json(const struct session *s, const struct qkov_both *q, struct render_buf *out)
{
	json_t *root = ex_json_head_obj(s, NULL, false);
	ju_set(root, "layer", ju_check(json_integer(q->layer)));
	ju_set(root, "head", ju_check(json_integer(q->head)));
	ju_set(root, "copy", ju_real(q->ov.copy));
	json_t *eig = ju_check(json_array());
	for (int i = 0; i < q->ov.D; i++) {
		json_t *o = ju_check(json_object());
		ju_set(o, "re", ju_real(q->ov.re[i]));
		ju_set(o, "im", ju_real(q->ov.im[i]));
		ju_append(eig, o);
	}
	ju_set(root, "eigenvalues", eig);
	if (q->text) {
		const struct qkov_qk *qk = &q->qk;
		json_t *o = ju_check(json_object()), *cells = ju_check(json_array());
		ju_set(o, "pairs", ju_check(json_integer(qk->pairs)));
		ju_set(o, "mean_score", ju_real(qk->mean_score));
		ju_set(o, "spread_score", ju_real(qk->spread_score));
		if (qk->softcap > 0) { /* Gemma 2: the capped score the softmax reads */
			ju_set(o, "softcap", ju_real(qk->softcap));
			ju_set(o, "mean_capped", ju_real(qk->mean_capped));
			ju_set(o, "spread_capped", ju_real(qk->spread_capped));
		}
		for (int a = 0; a < QK_CLASSES; a++)
			for (int k = 0; k < QK_CLASSES; k++) {
				if (!shown(qk, a, k))
					continue;
				json_t *c = ju_check(json_object());
				ju_set(c, "query", ex_json_str(qk_class_name(a)));
				ju_set(c, "key", ex_json_str(qk_class_name(k)));
				ju_set(c, "mean", ju_real(qk->mean[a][k]));
				ju_set(c, "spread", ju_real(qk->spread[a][k]));
				ju_append(cells, c);
			}
		ju_set(o, "cells", cells);
		ju_set(root, "qk", o);
	}
	ex_json_emit(out, root);
}

/* ------------------------------------------------------------------ svg */

#define PLANE 260 /* the complex plane's side */
#define QK_CELL 74
#define QK_GAP 130

/* The eigenvalues in the complex plane at x0, y0, one scale on both axes. */
static void plane(struct render_buf *b, const struct qkov_ov *ov, int x0, int y0)
{
	double big = 0;
	for (int i = 0; i < ov->D; i++) {
		big = fabs(ov->re[i]) > big ? fabs(ov->re[i]) : big;
		big = fabs(ov->im[i]) > big ? fabs(ov->im[i]) : big;
	}
	big = big > 0 ? big * 1.1 : 1;
	int c = PLANE / 2;
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff4f0\"/>\n"
			  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888888\"/>\n"
			  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888888\"/>\n",
			  x0 + c, y0, c, PLANE, x0, y0 + c, x0 + PLANE, y0 + c, x0 + c, y0, x0 + c,
			  y0 + PLANE);
	char red[8], blue[8];
	ex_svg_diverging(red, 0.8);
	ex_svg_diverging(blue, -0.8);
	for (int i = 0; i < ov->D; i++) {
		double px = x0 + c + ov->re[i] / big * c, py = y0 + c - ov->im[i] / big * c;
		render_buf_printf(b, "<circle class=\"eig\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">"
				  "<title>%+.4f %+.4fi</title></circle>\n", px, py,
				  ov->re[i] > 0 ? red : blue, ov->re[i], ov->im[i]);
	}
	ex_svg_frame(b, x0, y0, PLANE, PLANE, false);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">re "
			  "%+.3g</text>\n<text x=\"%d\" y=\"%d\" font-size=\"10\">%+.3g</text>\n"
			  "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">im %+.3g</text>\n",
			  x0 + PLANE, y0 + PLANE + 13, big, x0, y0 + PLANE + 13, -big, x0 + c, y0 - 4,
			  big);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\">copying score %.3f</text>\n",
			  x0, y0 + PLANE + 30, ov->copy);
}

/* The QK means as a matrix of cells at x0, y0. */
static void qk_cells(struct render_buf *b, const struct qkov_qk *qk, int x0, int y0)
{
	double big = 0;
	for (int a = 0; a < QK_CLASSES; a++)
		for (int k = 0; k < QK_CLASSES; k++)
			if (shown(qk, a, k))
				big = fabs(qk->mean[a][k]) > big ? fabs(qk->mean[a][k]) : big;
	big = big > 0 ? big : 1;
	int row = 0;
	for (int a = 0; a < QK_CLASSES; a++) {
		if (!shown(qk, a, a))
			continue;
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s"
				  "</text>\n", x0 - 6, y0 + row * QK_CELL + QK_CELL / 2 + 4, qk_class_name(a));
		int col = 0;
		for (int k = 0; k < QK_CLASSES; k++) {
			if (!shown(qk, a, k))
				continue;
			if (row == 0)
				render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" "
						  "text-anchor=\"middle\">%s</text>\n",
						  x0 + col * QK_CELL + QK_CELL / 2, y0 - 6, qk_class_name(k));
			char c[8];
			double v = qk->mean[a][k];
			ex_svg_diverging(c, v / big);
			render_buf_printf(b, "<rect class=\"qk\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
					  "fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"11\" "
					  "text-anchor=\"middle\"%s>%+.3f</text>\n", x0 + col * QK_CELL,
					  y0 + row * QK_CELL, QK_CELL, QK_CELL, c, x0 + col * QK_CELL + QK_CELL / 2,
					  y0 + row * QK_CELL + QK_CELL / 2 + 4,
					  fabs(v / big) > 0.6 ? " fill=\"#ffffff\"" : "", v);
			col++;
		}
		row++;
	}
	ex_svg_frame(b, x0, y0, row * QK_CELL, row * QK_CELL, false);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\">mean score %+.3f over %d "
			  "pairs</text>\n", x0, y0 + row * QK_CELL + 16, qk->mean_score, qk->pairs);
}

static void qkov_svg(const struct session *s, const struct qkov_both *q, struct render_buf *out)
{
	struct render_buf body;
	render_buf_init(&body);
	int x0 = 30, y0 = 36, qx = x0 + PLANE + QK_GAP;
	render_buf_printf(&body, "<text x=\"%d\" y=\"14\" font-size=\"13\" font-weight=\"bold\">OV: "
			  "eigenvalues of W_U W_OV W_E</text>\n", x0);
	plane(&body, &q->ov, x0, y0);
	int w = x0 + PLANE + 40;
	if (q->text) {
		render_buf_printf(&body, "<text x=\"%d\" y=\"14\" font-size=\"13\" font-weight=\"bold\">QK "
				  "on the text: the mean terms</text>\n",
				  qx - 70);
		qk_cells(&body, &q->qk, qx, y0 + 10);
		w = qx + QK_CLASSES * QK_CELL + 30;
	}
	w = w < 520 ? 520 : w;
	int h = y0 + PLANE + 44;
	char heading[256], sub[1200];
	snprintf(heading, sizeof heading, "The circuits of head %d.%d: %s", q->layer, q->head,
		 ex_model_name(s));
	snprintf(sub, sizeof sub,
		 "OV: the %d nonzero eigenvalues of the full OV circuit W_U W_OV W_E (norm gains folded "
		 "in, biases and per-token norm scales left out); red points, right of the vertical "
		 "axis, have a positive real part: a head that copies the token it attends to has "
		 "mostly those. Copying score %.3f (1: a pure copier). %s",
		 q->ov.D, q->ov.copy,
		 q->text ? "QK: each visible score of the head on the current text split by what the "
			   "query and the key are made of (token, position, the rest: earlier heads, "
			   "MLPs, biases), norms frozen at each position's scale; the cells are the mean "
			   "terms, the query's class down and the key's across, summing to the mean score."
			 : "Set a text to see the QK circuit on it.");
	ex_svg_figure(out, w, h, heading, heading, sub, &body);
	render_buf_free(&body);
}

int export_qkov(const struct session *s, const struct export_req *req, enum export_format f,
		struct render_buf *out, struct err *e)
{
	if (!s->model)
		return err_set(e, "export qkov: no model loaded (try: load induction)");
	if (f == EXPORT_PNG)
		return err_set(e, "export qkov: png is made from the svg (export_run)");
	struct qkov_both q = { .layer = req->layer, .head = req->head, .text = session_ready(s) };
	if (f == EXPORT_CSV && !q.text)
		return err_set(e, "export qkov: csv is the QK circuit on the text, and there is none "
			       "(try: text the cat sat; or --format json for the OV circuit alone)");
	if (qkov_ov_run(s->model, &s->opt, q.layer, q.head, &q.ov, e) != 0)
		return -1;
	if (q.text && qkov_qk_run(s->model, &s->opt, s->tokens, s->n_tokens, q.layer, q.head, &q.qk,
				  e) != 0) {
		qkov_ov_free(&q.ov);
		return -1;
	}
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV: qkov_csv(&q, out); break;
	case EXPORT_JSON: qkov_json(s, &q, out); break;
	case EXPORT_SVG: qkov_svg(s, &q, out); break;
	default:
		qkov_text(&q, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	qkov_ov_free(&q.ov);
	return 0;
}
