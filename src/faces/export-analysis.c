/*
 * export-analysis.c — the logit lens (lens.h) and the last activation
 * patching (patch.h) of the session's run as text, CSV, JSON or SVG
 * (export.h), and the shaded tables `lens` and `patch` print.
 */
#include "export.h"
#include "export-parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "lens.h"
#include "tokenizer.h"

#define SVG_CELL 14   /* pixels per cell */
#define SVG_LEFT 90   /* room for the row names */

static int imax_int(int a, int b)
{
	return a > b ? a : b;
}

static double clip01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Display columns of one position: 2 when a label there is wide. */
static int label_cols(char **lab, int first, int T)
{
	int cw = 1;
	for (int i = first; i < T; i++)
		cw = render_width(lab[i]) > 1 ? 2 : cw;
	return cw;
}

/* The position labels over a table whose row names take `left` columns. */
static void label_row(struct render_buf *b, char **lab, int first, int T, int cw, int left)
{
	render_buf_printf(b, "%-*s ", left, "");
	for (int i = first; i < T; i++)
		render_pad(b, lab[i], cw, RENDER_LEFT, true);
	render_buf_puts(b, "\n");
}

/* ------------------------------------------------------------------ lens */

void export_lens_table(const struct lens *ln, char **lab, int first, struct render_buf *b)
{
	int T = ln->T, cw = label_cols(lab, first, T);
	label_row(b, lab, first, T, cw, 11);
	for (int d = 0; d < ln->D; d++) {
		char name[32];
		lens_depth_name(d, name, sizeof name);
		render_buf_printf(b, "%-11s ", name);
		for (int i = first; i < T; i++)
			render_cell(b, RENDER_UNICODE, ln->p[(size_t)d * T + i], cw);
		render_buf_puts(b, "\n");
	}
	render_legend(b, RENDER_UNICODE, "probability");
	render_buf_puts(b, "\n");
}

static void lens_csv(const struct session *s, const struct lens *ln, char **lab,
		     struct render_buf *b)
{
	int T = ln->T;
	render_buf_puts(b, "\"depth\",\"position\",\"token\",\"prediction\",\"p\",\"top\"\n");
	for (int d = 0; d < ln->D; d++)
		for (int i = 0; i < T; i++) {
			char name[32], want[64], top[64];
			lens_depth_name(d, name, sizeof name);
			tok_label(s->model->tok, ln->final[i], want, sizeof want);
			tok_label(s->model->tok, ln->top[(size_t)d * T + i], top, sizeof top);
			ex_csv_quoted(b, name);
			render_buf_printf(b, ",%d,", i);
			ex_csv_quoted(b, lab[i]);
			render_buf_puts(b, ",");
			ex_csv_quoted(b, want);
			render_buf_printf(b, ",%.9g,", (double)ln->p[(size_t)d * T + i]);
			ex_csv_quoted(b, top);
			render_buf_puts(b, "\n");
		}
}

static json_t *token_obj(const struct session *s, int id)
{
	char lab[64];
	tok_label(s->model->tok, id, lab, sizeof lab);
	json_t *t = ju_check(json_object());
	ju_set(t, "id", json_integer(id));
	ju_set(t, "label", ex_json_str(lab));
	return t;
}

static void lens_json(const struct session *s, const struct lens *ln, char **lab,
		      struct render_buf *b)
{
	int T = ln->T;
	json_t *root = ex_json_head_obj(s, lab, true);
	json_object_del(root, "shape");
	json_t *depths = ju_check(json_array()), *pred = ju_check(json_array());
	json_t *p = ju_check(json_array()), *top = ju_check(json_array());
	for (int d = 0; d < ln->D; d++) {
		char name[32];
		lens_depth_name(d, name, sizeof name);
		ju_append(depths, json_string(name));
		json_t *prow = ju_check(json_array()), *trow = ju_check(json_array());
		for (int i = 0; i < T; i++) {
			ju_append(prow, ju_real((double)ln->p[(size_t)d * T + i]));
			ju_append(trow, token_obj(s, ln->top[(size_t)d * T + i]));
		}
		ju_append(p, prow);
		ju_append(top, trow);
	}
	for (int i = 0; i < T; i++)
		ju_append(pred, token_obj(s, ln->final[i]));
	ju_set(root, "depths", depths);
	ju_set(root, "prediction", pred);
	ju_set(root, "p", p);
	ju_set(root, "top", top);
	ex_json_emit(b, root);
}

/* Position labels over a row of cells starting at x0 and ending at
 * y_bottom, every glyph upright (export-parts.h: ex_svg_key_labels); the
 * room they take is ex_svg_key_labels_h(lab, T, SVG_CELL). */
static void svg_position_labels(struct render_buf *b, char **lab, int T, int x0, int y_bottom)
{
	ex_svg_key_labels(b, lab, T, x0, y_bottom, SVG_CELL);
}

/* Rows of cells: names[r] on the left, v[r * cols + c] coloured by color. */
static void svg_cells(struct render_buf *b, int x0, int y0, int rows, int cols,
		      const double *v, char names[][32], void (*color)(char[8], double))
{
	for (int r = 0; r < rows; r++) {
		int y = y0 + r * SVG_CELL;
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\" "
				  "dominant-baseline=\"middle\">%s</text>\n",
				  x0 - 6, y + SVG_CELL / 2, names[r]);
		for (int c = 0; c < cols; c++) {
			char col[8];
			double x = v[(size_t)r * cols + c];
			color(col, x);
			render_buf_printf(b, "<rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
					  "fill=\"%s\"><title>%s, %d: %.2f</title></rect>\n",
					  x0 + c * SVG_CELL, y, SVG_CELL, SVG_CELL, col, names[r], c,
					  render_shown(x, 2));
		}
	}
}

static void lens_svg(const struct session *s, const struct lens *ln, char **lab,
		     struct render_buf *b)
{
	int T = ln->T, D = ln->D;
	char opts[256], l1[128], l2[128];
	export_describe_options(s, opts, sizeof opts);
	snprintf(l1, sizeof l1, "logit lens, %d tokens", T);
	snprintf(l2, sizeof l2, "p(the model's prediction) by depth (rows) and position (columns)");
	int w = imax_int(SVG_LEFT + T * SVG_CELL + 100, ex_svg_heading_width(l1, l2, opts));
	int kh = ex_svg_key_labels_h(lab, T, SVG_CELL), top = SVG_HEAD_H + kh;
	int h = top + imax_int(D * SVG_CELL, 60) + 30;
	ex_svg_open(b, w, h, opts);
	ex_svg_heading(b, l1, l2, opts);
	double *v = xmalloc((size_t)D * T * sizeof *v);
	char (*names)[32] = xmalloc((size_t)D * sizeof *names);
	for (int d = 0; d < D; d++) {
		lens_depth_name(d, names[d], sizeof names[d]);
		for (int i = 0; i < T; i++)
			v[(size_t)d * T + i] = ln->p[(size_t)d * T + i];
	}
	svg_position_labels(b, lab, T, SVG_LEFT, top);
	svg_cells(b, SVG_LEFT, top, D, T, v, names, ex_svg_color);
	ex_svg_scale(b, SVG_LEFT + T * SVG_CELL + 20, top, imax_int(D * SVG_CELL, 60),
		     "probability", false);
	render_buf_puts(b, "</svg>\n");
	free(v);
	free(names);
}

int export_lens(const struct session *s, enum export_format f, struct render_buf *out,
		struct err *e)
{
	if (session_need_run(s, e) || session_need_head(s, "export lens", e))
		return -1;
	if (f == EXPORT_ASCII || f == EXPORT_ANSI)
		return err_set(e, "export lens: --format %s is not one of its formats (txt, csv, json, "
			       "svg)", export_format_name(f));
	struct lens ln;
	lens_run(s->model, s->run, &ln);
	char **lab = session_labels(s);
	if (f == EXPORT_TXT) {
		char opts[256];
		export_describe_options(s, opts, sizeof opts);
		render_buf_printf(out, "logit lens, %d tokens (options %s): p(the model's prediction) "
				       "by depth (rows) and position (columns)\n", ln.T, opts);
		export_lens_table(&ln, lab, 0, out);
	} else if (f == EXPORT_CSV) {
		lens_csv(s, &ln, lab, out);
	} else if (f == EXPORT_JSON) {
		lens_json(s, &ln, lab, out);
	} else {
		lens_svg(s, &ln, lab, out);
	}
	render_labels_free(lab, s->n_tokens);
	lens_free(&ln);
	return 0;
}

/* ----------------------------------------------------------------- patch */

void export_patch_heads(const struct patch_result *r, struct render_buf *b)
{
	render_buf_puts(b, "each head's output at every position (rows: layers, columns: heads):\n"
			   "layer ");
	for (int h = 0; h < r->H; h++)
		render_buf_printf(b, " %6d", h);
	render_buf_puts(b, "\n");
	for (int l = 0; l < r->L; l++) {
		render_buf_printf(b, "%5d ", l);
		for (int h = 0; h < r->H; h++) {
			double v = r->heads[l * r->H + h];
			render_buf_printf(b, " %6.3f", render_shown(v, 3));
		}
		render_buf_puts(b, "\n");
	}
}

void export_patch_resid(const struct patch_result *r, char **lab, int first,
			struct render_buf *b)
{
	int T = r->T, cw = label_cols(lab, first, T);
	render_buf_printf(b, "\nthe residual stream after each block, one position at a time "
			     "(rows: blocks, columns: positions%s):\n",
			  first ? ", the last 64" : "");
	label_row(b, lab, first, T, cw, 8);
	for (int l = 0; l < r->L; l++) {
		render_buf_printf(b, "after %-2d ", l);
		for (int i = first; i < T; i++)
			render_cell(b, RENDER_UNICODE, clip01(r->resid[(size_t)l * T + i]), cw);
		render_buf_puts(b, "\n");
	}
	render_legend(b, RENDER_UNICODE, "share restored, clipped to 0..1");
}

static void patch_csv(const struct patch_result *r, struct render_buf *b)
{
	render_buf_puts(b, "\"site\",\"layer\",\"head\",\"position\",\"share\"\n");
	for (int l = 0; l < r->L; l++)
		for (int h = 0; h < r->H; h++)
			render_buf_printf(b, "\"head\",%d,%d,,%.9g\n", l, h, r->heads[l * r->H + h]);
	for (int l = 0; l < r->L; l++)
		for (int i = 0; i < r->T; i++)
			render_buf_printf(b, "\"resid\",%d,,%d,%.9g\n", l, i,
					  r->resid[(size_t)l * r->T + i]);
}

static json_t *real_rows(const double *v, int rows, int cols)
{
	json_t *a = ju_check(json_array());
	for (int i = 0; i < rows; i++) {
		json_t *row = ju_check(json_array());
		for (int j = 0; j < cols; j++)
			ju_append(row, ju_real(v[(size_t)i * cols + j]));
		ju_append(a, row);
	}
	return a;
}

static void patch_json(const struct session *s, const struct patch_result *r, char **lab,
		       struct render_buf *b)
{
	json_t *root = ex_json_head_obj(s, lab, true);
	json_object_del(root, "shape");
	ju_set(root, "clean_text", ex_json_str(s->text ? s->text : ""));
	ju_set(root, "corrupted_text", ex_json_str(s->patch_text ? s->patch_text : ""));
	ju_set(root, "metric", json_string("share = (LD(patched) - LD(corrupted)) / (LD(clean) - "
					   "LD(corrupted)), LD = logit[clean answer] - "
					   "logit[corrupted answer] at the last position"));
	ju_set(root, "clean_answer", token_obj(s, r->clean_answer));
	ju_set(root, "corrupted_answer", token_obj(s, r->corrupt_answer));
	ju_set(root, "ld_clean", ju_real(r->ld_clean));
	ju_set(root, "ld_corrupted", ju_real(r->ld_corrupt));
	ju_set(root, "heads", real_rows(r->heads, r->L, r->H));
	ju_set(root, "resid", real_rows(r->resid, r->L, r->T));
	ex_json_emit(b, root);
}

static void patch_svg(const struct session *s, const struct patch_result *r, char **lab,
		      struct render_buf *b)
{
	int L = r->L, H = r->H, T = r->T;
	char opts[256], l1[160], l2[320], ca[64], xa[64];
	export_describe_options(s, opts, sizeof opts);
	tok_label(s->model->tok, r->clean_answer, ca, sizeof ca);
	tok_label(s->model->tok, r->corrupt_answer, xa, sizeof xa);
	snprintf(l1, sizeof l1, "activation patching, %d tokens", T);
	snprintf(l2, sizeof l2, "share of logit('%s') - logit('%s') restored: heads (top), "
			      "residual stream by position (below)", ca, xa);
	int heads_h = L * SVG_CELL + 30, grid_w = (T > H ? T : H) * SVG_CELL;
	int w = imax_int(SVG_LEFT + grid_w + 80, ex_svg_heading_width(l1, l2, opts));
	int kh = ex_svg_key_labels_h(lab, T, SVG_CELL);
	int h = SVG_HEAD_H + heads_h + kh + L * SVG_CELL + 30;
	ex_svg_open(b, w, h, opts);
	ex_svg_heading(b, l1, l2, opts);
	char (*names)[32] = xmalloc((size_t)L * sizeof *names);
	for (int l = 0; l < L; l++)
		snprintf(names[l], sizeof names[l], "layer %d", l);
	svg_cells(b, SVG_LEFT, SVG_HEAD_H, L, H, r->heads, names, ex_svg_diverging);
	for (int hd = 0; hd < H; hd++)
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d</text>\n",
				  SVG_LEFT + hd * SVG_CELL + SVG_CELL / 2, SVG_HEAD_H + L * SVG_CELL + 12,
				  hd);
	for (int l = 0; l < L; l++)
		snprintf(names[l], sizeof names[l], "after %d", l);
	int y1 = SVG_HEAD_H + heads_h + kh;
	svg_cells(b, SVG_LEFT, y1, L, T, r->resid, names, ex_svg_diverging);
	svg_position_labels(b, lab, T, SVG_LEFT, y1);
	ex_svg_scale(b, SVG_LEFT + grid_w + 20, SVG_HEAD_H, imax_int(L * SVG_CELL, 60), "share",
		     true);
	render_buf_puts(b, "</svg>\n");
	free(names);
}

int export_patch(const struct session *s, enum export_format f, struct render_buf *out,
		 struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	const struct patch_result *r = &s->patch;
	if (r->L == 0 || s->patch_gen != s->run_gen)
		return err_set(e, "export patch: no patching of the current run yet (try: patch TEXT, "
			       "a corrupted text of the same number of tokens)");
	if (f == EXPORT_ASCII || f == EXPORT_ANSI)
		return err_set(e, "export patch: --format %s is not one of its formats (txt, csv, "
			       "json, svg)", export_format_name(f));
	char **lab = session_labels(s);
	if (f == EXPORT_TXT) {
		char opts[256];
		export_describe_options(s, opts, sizeof opts);
		render_buf_printf(out, "activation patching, %d tokens (options %s): share of the "
				       "clean-vs-corrupted logit difference restored, clean %.3f, "
				       "corrupted %.3f\n", r->T, opts, r->ld_clean, r->ld_corrupt);
		export_patch_heads(r, out);
		export_patch_resid(r, lab, 0, out);
	} else if (f == EXPORT_CSV) {
		patch_csv(r, out);
	} else if (f == EXPORT_JSON) {
		patch_json(s, r, lab, out);
	} else {
		patch_svg(s, r, lab, out);
	}
	render_labels_free(lab, s->n_tokens);
	return 0;
}
