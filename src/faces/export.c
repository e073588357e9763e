/*
 * export.c — heatmaps, grids and run statistics as txt, ascii, ansi, csv,
 * json (jansson) and svg, built into a render_buf.  Nothing here depends on
 * the clock, so exports of one session reproduce byte for byte.
 */
#include "export.h"
#include "export-parts.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis.h"
#include "json-util.h"
#include "tokenizer.h"

/* --------------------------------------------------------------- formats */

static const char *const format_names[] = { "txt", "ascii", "ansi", "csv", "json", "svg" };
#define N_FORMATS ((int)(sizeof format_names / sizeof *format_names))

const char *export_format_name(enum export_format f)
{
	return (int)f >= 0 && (int)f < N_FORMATS ? format_names[f] : "?";
}

int export_format_count(void)
{
	return N_FORMATS;
}

int export_format_parse(const char *s, enum export_format *out, struct err *e)
{
	for (int i = 0; i < N_FORMATS; i++)
		if (!strcmp(s, format_names[i])) {
			*out = (enum export_format)i;
			return 0;
		}
	char list[128] = "";
	for (int i = 0; i < N_FORMATS; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
			 i == 0 ? "" : i == N_FORMATS - 1 ? " or " : ", ", format_names[i]);
	return err_set(e, "%.64s: unknown format (use %s)", s, list);
}

int export_format_from_path(const char *path, enum export_format *out)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash))
		return -1;
	char ext[8];
	size_t n = strlen(dot + 1);
	if (n == 0 || n >= sizeof ext)
		return -1;
	for (size_t i = 0; i <= n; i++)
		ext[i] = (char)tolower((unsigned char)dot[1 + i]);
	static const struct {
		const char *ext;
		enum export_format f;
	} map[] = { { "txt", EXPORT_TXT }, { "csv", EXPORT_CSV }, { "json", EXPORT_JSON },
		    { "svg", EXPORT_SVG } };
	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (!strcmp(ext, map[i].ext)) {
			*out = map[i].f;
			return 0;
		}
	return -1;
}

/* --------------------------------------------------------------- helpers */

/* A copy of s that is valid UTF-8 without control characters (bad bytes
 * become U+FFFD, controls '?'), safe for JSON strings and XML text. */
char *ex_clean_text(const char *s)
{
	struct render_buf b;
	render_buf_init(&b);
	size_t len = strlen(s);
	const unsigned char *p = (const unsigned char *)s;
	while (len > 0) {
		uint32_t cp;
		int bad, k = utf8_decode(p, len, &cp, &bad);
		if (bad)
			render_buf_puts(&b, "\xef\xbf\xbd");
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			render_buf_puts(&b, "?");
		else
			render_buf_put(&b, (const char *)p, (size_t)k);
		p += k;
		len -= (size_t)k;
	}
	char *out = xstrdup(b.data ? b.data : "");
	render_buf_free(&b);
	return out;
}

static const char *model_name(const struct session *s)
{
	if (s->model->name)
		return s->model->name;
	return s->model_spec ? s->model_spec : "model";
}

void export_describe_options(const struct session *s, char *buf, size_t size)
{
	if (!s->model) {
		snprintf(buf, size, "no model");
		return;
	}
	const struct run_options *o = &s->opt;
	const struct model_config *c = &s->model->cfg;
	char mask[32], abl[256] = "";
	if (o->mask == MASK_WINDOW)
		snprintf(mask, sizeof mask, "window %d", o->window);
	else
		snprintf(mask, sizeof mask, "%s", mask_kind_name(o->mask));
	size_t n = 0;
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++)
			if (session_head_ablated(s, l, h) && n + 16 < sizeof abl)
				n += (size_t)snprintf(abl + n, sizeof abl - n, "%s%d.%d", n ? " " : "", l, h);
	snprintf(buf, size, "kv_heads %d (native %d), norm %s, mask %s, scale %s, ablated %s",
		 o->kv_heads, s->native.kv_heads, norm_place_name(o->placement), mask,
		 o->scale ? "on" : "off", n ? abl : "none");
}

/* Labels of the session's tokens (render_labels_free). */
/* The token labels of s (render_labels_free them) and, in opts, its options. */
static char **labels_and_options(const struct session *s, char *opts, size_t size)
{
	export_describe_options(s, opts, size);
	return session_labels(s);
}

/* ----------------------------------------------------------------- ascii */

/* Rewrites b from byte `from` on as ASCII, in place, keeping every
 * character's width: the space and newline labels become '_' and '$', any
 * other character one '?' per column it takes. */
static void to_ascii(struct render_buf *b, size_t from)
{
	size_t w = from;
	for (size_t r = from; r < b->len;) {
		unsigned char c = (unsigned char)b->data[r];
		if (c < 0x80) {
			b->data[w++] = b->data[r++];
			continue;
		}
		uint32_t cp;
		int bad;
		int n = utf8_decode((const unsigned char *)b->data + r, b->len - r, &cp, &bad);
		r += (size_t)n;
		if (cp == 0x2423)
			b->data[w++] = '_';
		else if (cp == 0x23CE)
			b->data[w++] = '$';
		else
			for (int k = render_cp_width(cp); k > 0; k--)
				b->data[w++] = '?';
	}
	b->len = w;
	if (b->data)
		b->data[w] = '\0';
}

/* ------------------------------------------------------------------- csv */

void ex_csv_quoted(struct render_buf *b, const char *s)
{
	render_buf_puts(b, "\"");
	for (const char *q; (q = strchr(s, '"')); s = q + 1) {
		render_buf_put(b, s, (size_t)(q - s));
		render_buf_puts(b, "\"\"");
	}
	render_buf_puts(b, s);
	render_buf_puts(b, "\"");
}

static void csv_header(struct render_buf *b, char **labels, int T, bool with_head)
{
	if (with_head)
		render_buf_puts(b, "\"layer\",\"head\",");
	ex_csv_quoted(b, "query\\key");
	for (int j = 0; j < T; j++) {
		render_buf_puts(b, ",");
		ex_csv_quoted(b, labels[j]);
	}
	render_buf_puts(b, "\n");
}

/* One block of T rows for head (l, h); the layer/head columns when asked. */
static void csv_rows(struct render_buf *b, const float *a, char **labels, int T, int l, int h,
		     bool with_head)
{
	for (int i = 0; i < T; i++) {
		if (with_head)
			render_buf_printf(b, "%d,%d,", l, h);
		ex_csv_quoted(b, labels[i]);
		for (int j = 0; j < T; j++) /* a masked cell (NAN) is empty */
			if (isnan(a[(size_t)i * T + j]))
				render_buf_puts(b, ",");
			else
				render_buf_printf(b, ",%.9g", (double)a[(size_t)i * T + j]);
		render_buf_puts(b, "\n");
	}
}

/* ------------------------------------------------------------------ json */

json_t *ex_json_str(const char *s)
{
	char *c = ex_clean_text(s);
	json_t *j = json_string(c);
	free(c);
	return j ? j : json_string("");
}

/* "model", "tokens" (when with_tokens), "shape", "options" of a session. */
json_t *ex_json_head_obj(const struct session *s, char **labels, bool with_tokens)
{
	json_t *root = ju_check(json_object());
	ju_set(root, "model", ex_json_str(model_name(s)));
	int T = s->n_tokens;
	if (with_tokens) {
		json_t *toks = ju_check(json_array());
		for (int i = 0; i < T; i++) {
			json_t *t = ju_check(json_object());
			ju_set(t, "id", json_integer(s->tokens[i]));
			ju_set(t, "label", ex_json_str(labels[i]));
			ju_append(toks, t);
		}
		ju_set(root, "tokens", toks);
		json_t *shape = ju_check(json_array());
		ju_append(shape, json_integer(T));
		ju_append(shape, json_integer(T));
		ju_set(root, "shape", shape);
	}
	const struct run_options *o = &s->opt;
	const struct model_config *c = &s->model->cfg;
	json_t *opt = ju_check(json_object());
	ju_set(opt, "kv_heads", json_integer(o->kv_heads));
	ju_set(opt, "placement", json_string(norm_place_name(o->placement)));
	ju_set(opt, "mask", json_string(mask_kind_name(o->mask)));
	ju_set(opt, "window", o->mask == MASK_WINDOW ? json_integer(o->window) : json_null());
	ju_set(opt, "scale", json_boolean(o->scale));
	json_t *abl = ju_check(json_array());
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++)
			if (session_head_ablated(s, l, h)) {
				char id[32];
				snprintf(id, sizeof id, "%d.%d", l, h);
				ju_append(abl, json_string(id));
			}
	ju_set(opt, "ablated", abl);
	ju_set(root, "options", opt);
	return root;
}

static json_t *json_matrix(const float *a, int T)
{
	json_t *rows = ju_check(json_array());
	for (int i = 0; i < T; i++) {
		json_t *row = ju_check(json_array());
		for (int j = 0; j < T; j++)
			ju_append(row, ju_real((double)a[(size_t)i * T + j]));
		ju_append(rows, row);
	}
	return rows;
}

/* Appends root as compact JSON plus a newline and releases it. */
void ex_json_emit(struct render_buf *b, json_t *root)
{
	char *txt = ju_dump(root, JSON_COMPACT | JSON_REAL_PRECISION(9));
	render_buf_puts(b, txt);
	render_buf_puts(b, "\n");
	free(txt);
	json_decref(root);
}

/* ------------------------------------------------------------------- svg */

void ex_xml_text(struct render_buf *b, const char *s)
{
	char *c = ex_clean_text(s);
	render_xml_escape(b, c);
	free(c);
}

/* A change in -1..1: white at 0, red up, blue down. */
void ex_svg_diverging(char out[8], double d)
{
	if (isnan(d)) {
		snprintf(out, 8, "#d9d9d9");
		return;
	}
	double a = fabs(d) > 1 ? 1 : fabs(d);
	int hi = 255, lo = (int)floor(255 * (1 - a) + 0.5);
	snprintf(out, 8, "#%02x%02x%02x", d > 0 ? hi : lo, lo, d > 0 ? lo : hi);
}

void ex_svg_color(char out[8], double v)
{
	if (isnan(v)) { /* a masked cell */
		snprintf(out, 8, "#d9d9d9");
		return;
	}
	unsigned char rgb[3];
	render_rgb(v, rgb);
	snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

void ex_svg_open(struct render_buf *b, int w, int h, const char *title)
{
	render_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			  "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans Mono, monospace\">\n",
			  w, h, w, h);
	render_buf_puts(b, "<title>");
	ex_xml_text(b, title);
	render_buf_puts(b, "</title>\n");
	render_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}


/* Width the heading needs: about 10 px per character of the 16 px bold line
 * and 7 px per character of the 11 px lines. */
int ex_svg_heading_width(const char *line1, const char *line2, const char *line3)
{
	int a = render_width(line1) * 10, b = render_width(line2) * 7, c = render_width(line3) * 7;
	int w = a > b ? a : b;
	return (w > c ? w : c) + 20;
}

/* A bold heading and two smaller lines (what and options) at the top. */
void ex_svg_heading(struct render_buf *b, const char *line1, const char *line2,
			const char *line3)
{
	render_buf_puts(b, "<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">");
	ex_xml_text(b, line1);
	render_buf_puts(b, "</text>\n<text x=\"10\" y=\"40\" font-size=\"11\" fill=\"#333333\">");
	ex_xml_text(b, line2);
	render_buf_puts(b, "</text>\n<text x=\"10\" y=\"55\" font-size=\"11\" fill=\"#333333\">");
	ex_xml_text(b, line3);
	render_buf_puts(b, "</text>\n");
}

/* What an SVG's colour scale is named. */
static const char *scale_name(const struct session *s)
{
	return s->heat == HEAT_WEIGHTS ? "weight" : heat_kind_name(s->heat);
}

/* A vertical colour scale (1 at the top, 0 or, diverging, -1 at the
 * bottom) at x, y of height h, named what. */
void ex_svg_scale(struct render_buf *b, int x, int y, int h, const char *what, bool diverging)
{
	render_buf_puts(b, "<defs><linearGradient id=\"ramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
	for (int k = 0; k <= 8; k++) {
		char col[8];
		if (diverging)
			ex_svg_diverging(col, k / 4.0 - 1);
		else
			ex_svg_color(col, k / 8.0);
		render_buf_printf(b, "<stop offset=\"%g%%\" stop-color=\"%s\"/>", k * 12.5, col);
	}
	render_buf_puts(b, "</linearGradient></defs>\n");
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" fill=\"url(#ramp)\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n",
			  x, y, h);
	static const char *const ticks[] = { "1", "0.5", "0" }, *const dticks[] = { "+1", "0", "-1" };
	for (int k = 0; k < 3; k++)
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" dominant-baseline=\"middle\">%s</text>\n",
				  x + 18, y + k * h / 2, diverging ? dticks[k] : ticks[k]);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\">%s</text>\n", x, y + h + 14, what);
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

/* One head's map a (T, T) as a figure; diverging: a holds changes in
 * -1..1 (export heatmap --diff). */
static void svg_heatmap(struct render_buf *b, const struct session *s, int layer, int head,
			char **labels, const char *opts, const float *a, bool diverging)
{
	int T = s->n_tokens;
	int cs = imax(4, 640 / T > 20 ? 20 : 640 / T);
	int fs = cs >= 12 ? 11 : imax(4, cs - 1);
	int lw = 1;
	for (int i = 0; i < T; i++) {
		int w = render_width(labels[i]);
		lw = w > lw ? w : lw;
	}
	if (lw > 12)
		lw = 12;
	int iw = T > 1 ? (int)floor(log10(T - 1)) + 1 : 1;
	int cw = (fs * 13 + 19) / 20; /* approximate advance of a monospace glyph */
	int left = 16 + (iw + 1 + lw) * cw;
	int top = SVG_HEAD_H + lw * cw + 8;
	int side = T * cs, barh = imax(100, side < 240 ? side : 240);

	char line1[256], line2[128], line3[600], title[1024];
	snprintf(line1, sizeof line1, "%s of head %d.%d (layer %d, head %d)%s: %s",
		 diverging ? "Change in the attention" : "Attention", layer, head, layer, head,
		 session_head_ablated(s, layer, head) ? " [ablated]" : "", model_name(s));
	snprintf(line2, sizeof line2, "%d tokens; rows: query tokens, columns: key tokens", T);
	snprintf(line3, sizeof line3, "options: %s", opts);
	snprintf(title, sizeof title, "attnscope: %s; %d tokens; %s", line1, T, line3);
	int w = imax(left + side + 70, ex_svg_heading_width(line1, line2, line3));
	int h = imax(top + side, top + barh + 20) + 24;
	ex_svg_open(b, w, h, title);
	ex_svg_heading(b, line1, line2, line3);

	/* key labels, rotated to read upwards, ending just above the matrix */
	render_buf_printf(b, "<g font-size=\"%d\">\n", fs);
	for (int j = 0; j < T; j++) {
		int x = left + j * cs + cs / 2 + fs / 3, y = top - 4;
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" transform=\"rotate(-90 %d %d)\">", x, y, x, y);
		ex_xml_text(b, labels[j]);
		render_buf_puts(b, "</text>\n");
	}
	/* query labels, right-aligned against the matrix */
	for (int i = 0; i < T; i++) {
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" dominant-baseline=\"middle\">%d ",
				  left - 4, top + i * cs + cs / 2, i);
		ex_xml_text(b, labels[i]);
		render_buf_puts(b, "</text>\n");
	}
	render_buf_puts(b, "</g>\n<g>\n");
	for (int i = 0; i < T; i++)
		for (int j = 0; j < T; j++) {
			char col[8];
			if (diverging)
				ex_svg_diverging(col, a[(size_t)i * T + j]);
			else
				ex_svg_color(col, a[(size_t)i * T + j]);
			render_buf_printf(b, "<rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
					  left + j * cs, top + i * cs, cs, cs, col);
		}
	render_buf_puts(b, "</g>\n");
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n",
			  left, top, side, side);
	ex_svg_scale(b, left + side + 16, top, barh, diverging ? "change" : scale_name(s), diverging);
	render_buf_puts(b, "</svg>\n");
}

static void svg_grid(struct render_buf *b, const struct session *s, const char *opts)
{
	int T = s->n_tokens, L = s->model->cfg.n_layer, H = s->model->cfg.n_head;
	int cs = imax(2, 128 / T > 8 ? 8 : 128 / T);
	int side = T * cs, gap = 18, top = SVG_HEAD_H;
	int bw = imax(side, 80);
	char line1[256], line2[128], line3[600], title[1024], zero[8];
	snprintf(line1, sizeof line1, "Attention of every head: %s (%d layers x %d heads)", model_name(s),
		 L, H);
	snprintf(line2, sizeof line2, "%d tokens; rows: query tokens, columns: key tokens; red frame: selected head", T);
	snprintf(line3, sizeof line3, "options: %s", opts);
	snprintf(title, sizeof title, "attnscope: %s; %d tokens; %s", line1, T, line3);
	int w = imax(16 + H * (bw + gap) + 60, ex_svg_heading_width(line1, line2, line3));
	int h = top + L * (side + gap + 14) + 30;
	ex_svg_open(b, w, h, title);
	ex_svg_heading(b, line1, line2, line3);
	ex_svg_color(zero, 0.0);
	for (int l = 0; l < L; l++)
		for (int hd = 0; hd < H; hd++) {
			int x0 = 16 + hd * (bw + gap), y0 = top + l * (side + gap + 14) + 14;
			bool sel = l == s->sel_layer && hd == s->sel_head;
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\"%s>%d.%d%s%s</text>\n", x0,
					  y0 - 4, sel ? " font-weight=\"bold\"" : "", l, hd,
					  session_head_ablated(s, l, hd) ? " ablated" : "", sel ? " (selected)" : "");
			/* the background carries weight 0; only other cells get a rect */
			render_buf_printf(b, "<g><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
					  x0, y0, side, side, zero);
			const float *a = session_att(s, l, hd);
			for (int i = 0; i < T; i++)
				for (int j = 0; j < T; j++) {
					char col[8];
					ex_svg_color(col, a[(size_t)i * T + j]);
					if (strcmp(col, zero))
						render_buf_printf(b, "<rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
								  x0 + j * cs, y0 + i * cs, cs, cs, col);
				}
			render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"/></g>\n",
					  x0, y0, side, side, sel ? "#d62728" : "#000000", sel ? "2" : "0.5");
		}
	ex_svg_scale(b, 16 + H * (bw + gap), top + 14, 100, scale_name(s), false);
	render_buf_puts(b, "</svg>\n");
}

/* --------------------------------------------------------------- exports */

static enum render_style text_style(enum export_format f)
{
	return f == EXPORT_ASCII ? RENDER_ASCII : f == EXPORT_ANSI ? RENDER_ANSI : RENDER_UNICODE;
}

/* export_heatmap, or with diff its change against the native run. */
static int heatmap(const struct session *s, int layer, int head, enum export_format f, bool diff,
		   struct render_buf *out, struct err *e)
{
	size_t start = out->len;
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
		return err_set(e, "head %d.%d does not exist (layers 0-%d, heads 0-%d)", layer, head,
			       c->n_layer - 1, c->n_head - 1);
	int T = s->n_tokens;
	float *d = diff ? session_diff(s, layer, head) : NULL;
	const float *a = d ? d : session_att(s, layer, head);
	const float *raw = d ? d : session_heat_values(s, layer, head);
	const char *key = d ? "diff" : s->heat == HEAT_WEIGHTS ? "weights" : heat_kind_name(s->heat);
	char opts[512];
	char **labels = labels_and_options(s, opts, sizeof opts);

	switch (f) {
	case EXPORT_TXT:
	case EXPORT_ASCII:
	case EXPORT_ANSI: {
		char title[1024];
		snprintf(title, sizeof title, "head %d.%d (layer %d, head %d)%s%s%s, model %s, %d tokens\noptions: %s",
			 layer, head, layer, head,
			 session_head_ablated(s, layer, head) ? " ablated (output zeroed; attention shown)" : "",
			 d || s->heat != HEAT_WEIGHTS ? ": " : "",
			 d ? "weights minus the native run's" : s->heat != HEAT_WEIGHTS ? key : "",
			 model_name(s), T, opts);
		struct render_head_spec sp = {
			.att = a, .T = T, .labels = labels, .style = text_style(f),
			.max_width = 0, .title = title,
			.what = d ? "the weight is" : heat_kind_legend(s->heat), .diverging = d != NULL,
		};
		render_head(out, &sp);
		break;
	}
	case EXPORT_CSV:
		csv_header(out, labels, T, false);
		csv_rows(out, raw, labels, T, layer, head, false);
		break;
	case EXPORT_JSON: {
		json_t *root = ex_json_head_obj(s, labels, true);
		ju_set(root, "layer", json_integer(layer));
		ju_set(root, "head", json_integer(head));
		if (s->heat != HEAT_WEIGHTS && !d) /* the weights' JSON stays as it always was */
			ju_set(root, "heat", json_string(heat_kind_name(s->heat)));
		ju_set(root, key, json_matrix(raw, T));
		ex_json_emit(out, root);
		break;
	}
	case EXPORT_SVG:
		svg_heatmap(out, s, layer, head, labels, opts, a, d != NULL);
		break;
	}
	render_labels_free(labels, T);
	free(d);
	if (f == EXPORT_ASCII)
		to_ascii(out, start);
	return 0;
}

int export_heatmap(const struct session *s, int layer, int head, enum export_format f,
		   struct render_buf *out, struct err *e)
{
	return heatmap(s, layer, head, f, false, out, e);
}

int export_heatmap_diff(const struct session *s, int layer, int head, enum export_format f,
			struct render_buf *out, struct err *e)
{
	return heatmap(s, layer, head, f, true, out, e);
}

int export_grid(const struct session *s, enum export_format f, struct render_buf *out,
		struct err *e)
{
	size_t start = out->len;
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	int T = s->n_tokens, L = c->n_layer, H = c->n_head;
	char opts[512];
	char **labels = labels_and_options(s, opts, sizeof opts);

	switch (f) {
	case EXPORT_TXT:
	case EXPORT_ASCII:
	case EXPORT_ANSI: {
		const float **att = xmalloc((size_t)L * H * sizeof *att);
		bool *abl = xmalloc((size_t)L * H * sizeof *abl);
		for (int l = 0; l < L; l++)
			for (int h = 0; h < H; h++) {
				att[l * H + h] = session_att(s, l, h);
				abl[l * H + h] = session_head_ablated(s, l, h);
			}
		render_buf_printf(out, "model %s, %d tokens\noptions: %s\n", model_name(s), T, opts);
		struct render_grid_spec sp = {
			.att = att, .L = L, .H = H, .T = T, .ablated = abl,
			.sel_layer = s->sel_layer, .sel_head = s->sel_head,
			.style = text_style(f), .cell = 16, .max_width = 0,
			.what = heat_kind_legend(s->heat),
		};
		render_grid(out, &sp);
		free(att);
		free(abl);
		break;
	}
	case EXPORT_CSV:
		csv_header(out, labels, T, true);
		for (int l = 0; l < L; l++)
			for (int h = 0; h < H; h++)
				csv_rows(out, session_heat_values(s, l, h), labels, T, l, h, true);
		break;
	case EXPORT_JSON: {
		json_t *root = ex_json_head_obj(s, labels, true);
		json_t *heads = ju_check(json_array());
		for (int l = 0; l < L; l++)
			for (int h = 0; h < H; h++) {
				json_t *o = ju_check(json_object());
				ju_set(o, "layer", json_integer(l));
				ju_set(o, "head", json_integer(h));
				ju_set(o, "ablated", json_boolean(session_head_ablated(s, l, h)));
				ju_set(o, s->heat == HEAT_WEIGHTS ? "weights" : heat_kind_name(s->heat),
				       json_matrix(session_heat_values(s, l, h), T));
				ju_append(heads, o);
			}
		ju_set(root, "heads", heads);
		ex_json_emit(out, root);
		break;
	}
	case EXPORT_SVG:
		svg_grid(out, s, opts);
		break;
	}
	render_labels_free(labels, T);
	if (f == EXPORT_ASCII)
		to_ascii(out, start);
	return 0;
}

/* ----------------------------------------------------------------- stats */

/* The summary numbers of the session's run. */
struct summary {
	double loss, base_loss, ppl, kl, top1, dloss, kv, kv_native;
};

static void summarize(const struct session *s, struct summary *m)
{
	m->loss = s->run->loss;
	m->base_loss = s->base->loss;
	m->ppl = exp(m->loss);
	m->kl = s->cmp.kl;
	m->top1 = s->cmp.top1_agree;
	m->dloss = s->cmp.delta_loss;
	m->kv = session_kv_bytes(s, &s->opt);
	m->kv_native = session_kv_bytes(s, &s->native);
}

void export_stats_txt(const struct session *s, bool timing, struct render_buf *b)
{
	struct summary m;
	summarize(s, &m);
	const struct model_config *c = &s->model->cfg;
	char opts[512], kv[32], kvn[32];
	export_describe_options(s, opts, sizeof opts);
	format_bytes(m.kv, kv, sizeof kv);
	format_bytes(m.kv_native, kvn, sizeof kvn);
	render_buf_printf(b, "model         %s\n", model_name(s));
	render_buf_printf(b, "options       %s\n", opts);
	render_buf_printf(b, "tokens        %d\n", s->n_tokens);
	if (!cfg_has_head(c)) {
		render_buf_puts(b, "loss          - (no output head: loss, KL and top-1 need one)\n");
		render_buf_printf(b, "drift         %.6f (||h - h_base|| / ||h_base|| of the output, mean "
				  "over positions)\n", s->cmp.drift);
	} else if (isnan(m.loss)) {
		render_buf_puts(b, "loss          - (one token: nothing to predict)\n");
		render_buf_puts(b, "perplexity    -\n");
	} else {
		render_buf_printf(b, "loss          %.4f nats (baseline %.4f, delta %+.4f)\n", m.loss,
				  m.base_loss, m.dloss);
		render_buf_printf(b, "perplexity    %.3f\n", m.ppl);
	}
	if (cfg_has_head(c)) {
		render_buf_printf(b, "KL vs base    %.6f nats (mean over positions)\n", m.kl);
		render_buf_printf(b, "top-1 agree   %.1f%%\n", 100.0 * m.top1);
	}
	render_buf_printf(b, "KV cache      %s (native %s; float32, %d tokens)\n", kv, kvn, s->n_tokens);
	if (timing)
		render_buf_printf(b, "forward       %.2f ms\n", s->run->forward_ms);
	render_buf_puts(b, "\nlayer  head  entropy  max_weight\n");
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++) {
			double ent, mx;
			head_entropy(s->run, l, h, &ent, &mx);
			render_buf_printf(b, "%5d  %4d  %7.4f  %10.4f%s\n", l, h, ent, mx,
					  session_head_ablated(s, l, h) ? "  ablated" : "");
		}
	render_buf_puts(b, "(entropy: mean over query rows, nats)\n");
}

/* CSV cell of a number, empty when it is not finite. */
static void csv_number(struct render_buf *b, double v)
{
	if (isfinite(v))
		render_buf_printf(b, "%.9g", v);
}

int export_stats(const struct session *s, enum export_format f, struct render_buf *out,
		 struct err *e)
{
	if (f == EXPORT_ANSI || f == EXPORT_SVG)
		return err_set(e, "export stats: format %s is not available (use txt, ascii, csv or json)",
			       export_format_name(f));
	size_t start = out->len;
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	struct summary m;
	summarize(s, &m);
	char opts[512];
	export_describe_options(s, opts, sizeof opts);

	if (f == EXPORT_TXT || f == EXPORT_ASCII) {
		export_stats_txt(s, false, out);
		if (f == EXPORT_ASCII)
			to_ascii(out, start);
		return 0;
	}
	if (f == EXPORT_CSV) {
		render_buf_puts(out, "model,options,tokens,loss,baseline_loss,delta_loss,perplexity,"
				     "kl_vs_baseline,top1_agree,kv_cache_bytes,kv_cache_bytes_native,"
				     "layer,head,entropy,max_weight,ablated\n");
		char *name = ex_clean_text(model_name(s));
		for (int l = 0; l < c->n_layer; l++)
			for (int h = 0; h < c->n_head; h++) {
				double ent, mx;
				head_entropy(s->run, l, h, &ent, &mx);
				ex_csv_quoted(out, name);
				render_buf_puts(out, ",");
				ex_csv_quoted(out, opts);
				render_buf_printf(out, ",%d,", s->n_tokens);
				const double nums[] = { m.loss, m.base_loss, m.dloss, m.ppl, m.kl, m.top1 };
				for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) {
					csv_number(out, nums[k]);
					render_buf_puts(out, ",");
				}
				render_buf_printf(out, "%.0f,%.0f,%d,%d,%.9g,%.9g,%d\n", m.kv, m.kv_native, l, h,
						  ent, mx, session_head_ablated(s, l, h) ? 1 : 0);
			}
		free(name);
		return 0;
	}
	/* json */
	json_t *root = ex_json_head_obj(s, NULL, false);
	ju_set(root, "n_tokens", json_integer(s->n_tokens));
	ju_set(root, "loss", ju_real(m.loss));
	ju_set(root, "baseline_loss", ju_real(m.base_loss));
	ju_set(root, "delta_loss", ju_real(m.dloss));
	ju_set(root, "perplexity", ju_real(m.ppl));
	ju_set(root, "kl_vs_baseline", ju_real(m.kl));
	ju_set(root, "top1_agree", ju_real(m.top1));
	ju_set(root, "output_drift", ju_real(s->cmp.drift));
	ju_set(root, "kv_cache_bytes", json_integer((json_int_t)m.kv));
	ju_set(root, "kv_cache_bytes_native", json_integer((json_int_t)m.kv_native));
	json_t *heads = ju_check(json_array());
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++) {
			double ent, mx;
			head_entropy(s->run, l, h, &ent, &mx);
			json_t *o = ju_check(json_object());
			ju_set(o, "layer", json_integer(l));
			ju_set(o, "head", json_integer(h));
			ju_set(o, "entropy", ju_real(ent));
			ju_set(o, "max_weight", ju_real(mx));
			ju_set(o, "ablated", json_boolean(session_head_ablated(s, l, h)));
			ju_append(heads, o);
		}
	ju_set(root, "heads", heads);
	ex_json_emit(out, root);
	return 0;
}
