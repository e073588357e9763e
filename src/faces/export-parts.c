/*
 * export-parts.c — what the export modules share (export-parts.h): clean
 * text, CSV and JSON pieces, the options in words, and the SVG frame,
 * heading, colours, scales, maps, token labels, badges and legend.
 * Nothing here depends on the clock, so exports reproduce byte for byte.
 */
#include "export.h"
#include "export-parts.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "ops.h"
#include "utf8.h"

static int imax(int a, int b)
{
	return a > b ? a : b;
}

static int imin(int a, int b)
{
	return a < b ? a : b;
}

/* --------------------------------------------------------------- formats */

static const char *const format_names[EXPORT_N_FORMATS] = { "txt", "ascii", "ansi", "csv", "json",
							     "svg", "png" };
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
		    { "svg", EXPORT_SVG }, { "png", EXPORT_PNG } };
	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (!strcmp(ext, map[i].ext)) {
			*out = map[i].f;
			return 0;
		}
	return -1;
}

/* ------------------------------------------------------------------ text */

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

const char *ex_model_name(const struct session *s)
{
	if (s->model->name)
		return s->model->name;
	return s->model_spec ? s->model_spec : "model";
}

void ex_text_excerpt(const struct session *s, int cols, char *buf, size_t size)
{
	struct render_buf b;
	render_buf_init(&b);
	const unsigned char *p = (const unsigned char *)(s->text ? s->text : "");
	size_t len = strlen((const char *)p);
	int used = 0;
	while (len > 0) {
		uint32_t cp;
		int bad, k = utf8_decode(p, len, &cp, &bad);
		int w = bad ? 1 : cp == '\n' || cp == '\t' ? 1 : render_cp_width(cp);
		if (used + w > cols - 1 && (size_t)k < len) {
			render_buf_puts(&b, "\u2026");
			break;
		}
		if (bad)
			render_buf_puts(&b, "\xef\xbf\xbd");
		else if (cp == '\n')
			render_buf_puts(&b, "\u23ce");
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			render_buf_puts(&b, " ");
		else
			render_buf_put(&b, (const char *)p, (size_t)k);
		used += w;
		p += k;
		len -= (size_t)k;
	}
	snprintf(buf, size, "%s", b.data ? b.data : "");
	render_buf_free(&b);
}

void ex_mask_words(const struct run_options *o, char *buf, size_t size)
{
	switch (o->mask) {
	case MASK_NONE:
		snprintf(buf, size, "%s", "");
		break;
	case MASK_WINDOW:
		snprintf(buf, size, "masked by the window mask: keys after the query or more than %d "
			 "back (not a weight of 0)", o->window);
		break;
	case MASK_AFTER_SOFTMAX:
		snprintf(buf, size, "zeroed after the softmax (mask after-softmax): later keys, which "
			 "still shaped the normalisation");
		break;
	default:
		snprintf(buf, size, "masked by the causal mask: keys after the query (not a weight "
			 "of 0)");
		break;
	}
}

void ex_subtitle(const struct session *s, bool diff, char *buf, size_t size)
{
	char text[400], opts[512], colour[200];
	ex_text_excerpt(s, 60, text, sizeof text);
	export_describe_options(s, opts, sizeof opts);
	if (diff)
		snprintf(colour, sizeof colour, "the colour is how much the weight changed against "
			 "the model's native options (red: more attention, blue: less)");
	else if (s->heat != HEAT_WEIGHTS)
		snprintf(colour, sizeof colour, "the colour is the %s", heat_kind_legend(s->heat));
	else if (s->opt.mask == MASK_AFTER_SOFTMAX)
		snprintf(colour, sizeof colour, "the colour is the attention weight the row gives "
			 "the column, 0 to 1 (under mask after-softmax a row adds up to less than 1)");
	else
		snprintf(colour, sizeof colour, "the colour is the attention weight the row gives "
			 "the column, 0 to 1, and each row adds up to 1");
	snprintf(buf, size, "Model %s reading \u201c%s\u201d (%d tokens). Each row is a token "
		 "doing the looking (the query), each column a token it can look at (the "
		 "key); %s.\nOptions: %s.", ex_model_name(s), text, s->n_tokens, colour, opts);
}

float *ex_masked_copy(const struct run_options *o, const float *a, int T)
{
	float *m = xmalloc((size_t)T * T * sizeof *m);
	for (int i = 0; i < T; i++) {
		int lo, hi;
		mask_range(o->mask, o->window, i, T, &lo, &hi);
		for (int j = 0; j < T; j++)
			m[(size_t)i * T + j] = j < lo || j > hi ? NAN : a[(size_t)i * T + j];
	}
	return m;
}

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
	snprintf(buf, size, "kv_heads %d (native %d), norm %s, mask %s, scale %s, ablated %s%s%s",
		 o->kv_heads, s->native.kv_heads, norm_place_name(o->placement), mask,
		 o->scale ? "on" : "off", n ? abl : "none", o->pitfall ? ", pitfall " : "",
		 o->pitfall ? pitfall_name(o->pitfall) : "");
}

void ex_to_ascii(struct render_buf *b, size_t from)
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

/* ------------------------------------------------------------------ json */

json_t *ex_json_str(const char *s)
{
	char *c = ex_clean_text(s);
	json_t *j = json_string(c);
	free(c);
	return j ? j : json_string("");
}

json_t *ex_json_head_obj(const struct session *s, char **labels, bool with_tokens)
{
	json_t *root = ju_check(json_object());
	ju_set(root, "model", ex_json_str(ex_model_name(s)));
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

void ex_json_emit(struct render_buf *b, json_t *root)
{
	char *txt = ju_dump(root, JSON_COMPACT | JSON_REAL_PRECISION(9));
	render_buf_puts(b, txt);
	render_buf_puts(b, "\n");
	free(txt);
	json_decref(root);
}

/* ------------------------------------------------------- svg: the frame */

void ex_xml_text(struct render_buf *b, const char *s)
{
	char *c = ex_clean_text(s);
	render_xml_escape(b, c);
	free(c);
}

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

int ex_text_px(int cols, int fs)
{
	return (cols * fs * 6 + 9) / 10;
}

void ex_svg_open(struct render_buf *b, int w, int h, const char *title)
{
	render_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			  "viewBox=\"0 0 %d %d\" font-family=\"" RENDER_SVG_FONTS "\">\n",
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

/* The 9 stops of the 0..1 ramp (or -1..+1, diverging), bottom to top. */
static void ramp_stops(struct render_buf *b, bool diverging)
{
	for (int k = 0; k <= 8; k++) {
		char col[8];
		if (diverging)
			ex_svg_diverging(col, k / 4.0 - 1);
		else
			ex_svg_color(col, k / 8.0);
		render_buf_printf(b, "<stop offset=\"%g%%\" stop-color=\"%s\"/>", k * 12.5, col);
	}
}

void ex_svg_scale(struct render_buf *b, int x, int y, int h, const char *what, bool diverging)
{
	render_buf_puts(b, "<defs><linearGradient id=\"ramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
	ramp_stops(b, diverging);
	render_buf_puts(b, "</linearGradient></defs>\n");
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" fill=\"url(#ramp)\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n",
			  x, y, h);
	static const char *const ticks[] = { "1", "0.5", "0" }, *const dticks[] = { "+1", "0", "-1" };
	for (int k = 0; k < 3; k++)
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" dominant-baseline=\"middle\">%s</text>\n",
				  x + 18, y + k * h / 2, diverging ? dticks[k] : ticks[k]);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\">%s</text>\n", x, y + h + 14, what);
}

#define FIG_TITLE_FS 18 /* the heading */
#define FIG_SUB_FS 13   /* the subtitle */
#define FIG_SUB_LH 18   /* subtitle line height */

/* The subtitle's lines wrapped to w pixels, '\n'-separated in out. */
static void wrap_subtitle(const char *subtitle, int w, struct render_buf *out)
{
	int cols = imax(20, (w - 24) * 10 / (FIG_SUB_FS * 6));
	const char *p = subtitle;
	while (p && *p) {
		size_t n = strcspn(p, "\n");
		char *para = xstrndup(p, n);
		render_wrap(out, para, 0, 0, cols);
		free(para);
		p += n;
		if (*p == '\n')
			p++;
	}
}

int ex_svg_wrapped(struct render_buf *b, int x, int y, int fs, int width, const char *text,
		   bool draw)
{
	struct render_buf lines;
	render_buf_init(&lines);
	render_wrap(&lines, text, 0, 0, imax(8, width * 10 / (fs * 6)));
	int n = 0;
	const char *p = lines.data ? lines.data : "";
	while (*p) {
		size_t len = strcspn(p, "\n");
		if (draw) {
			char *line = xstrndup(p, len);
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\">", x,
					  y + n * (fs + 3), fs);
			ex_xml_text(b, line);
			render_buf_puts(b, "</text>\n");
			free(line);
		}
		n++;
		p += len + (p[len] == '\n');
	}
	render_buf_free(&lines);
	return n;
}

void ex_svg_figure(struct render_buf *out, int w, int body_h, const char *tooltip,
		   const char *heading, const char *subtitle, const struct render_buf *body)
{
	struct render_buf lines;
	render_buf_init(&lines);
	wrap_subtitle(subtitle, w, &lines);
	int n = 0;
	for (size_t i = 0; i < lines.len; i++)
		n += lines.data[i] == '\n';
	int head_h = 36 + n * FIG_SUB_LH + 12;
	ex_svg_open(out, w, head_h + body_h + 12, tooltip);
	render_buf_puts(out, "<defs>\n<pattern id=\"masked\" width=\"6\" height=\"6\" "
			     "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
			     "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/><line x1=\"0\" y1=\"0\" "
			     "x2=\"0\" y2=\"6\" stroke=\"#9a9a9a\" stroke-width=\"2\"/></pattern>\n"
			     "<linearGradient id=\"ramp-h\" x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\">");
	ramp_stops(out, false);
	render_buf_puts(out, "</linearGradient>\n<linearGradient id=\"ramp-d\" x1=\"0\" y1=\"0\" "
			     "x2=\"1\" y2=\"0\">");
	ramp_stops(out, true);
	render_buf_puts(out, "</linearGradient>\n</defs>\n");
	render_buf_printf(out, "<text class=\"heading\" x=\"12\" y=\"26\" font-size=\"%d\" "
			  "font-weight=\"bold\">", FIG_TITLE_FS);
	ex_xml_text(out, heading);
	render_buf_puts(out, "</text>\n");
	const char *p = lines.data ? lines.data : "";
	for (int k = 0; k < n; k++) {
		size_t len = strcspn(p, "\n");
		char *line = xstrndup(p, len);
		render_buf_printf(out, "<text class=\"subtitle\" x=\"12\" y=\"%d\" font-size=\"%d\" "
				  "fill=\"#333333\">", 36 + (k + 1) * FIG_SUB_LH - 4, FIG_SUB_FS);
		ex_xml_text(out, line);
		render_buf_puts(out, "</text>\n");
		free(line);
		p += len + 1;
	}
	render_buf_free(&lines);
	render_buf_printf(out, "<g transform=\"translate(0 %d)\">\n", head_h);
	if (body->len)
		render_buf_put(out, body->data, body->len);
	render_buf_puts(out, "</g>\n</svg>\n");
}

/* --------------------------------------------------------- svg: the maps */

void ex_svg_map(struct render_buf *b, const struct ex_map *m, int x0, int y0, int cs)
{
	int T = m->T;
	char zero[8];
	if (m->diverging)
		ex_svg_diverging(zero, 0.0);
	else
		ex_svg_color(zero, 0.0);
	render_buf_puts(b, "<g class=\"map\">\n");
	if (!m->every_cell)
		render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
				  x0, y0, T * cs, T * cs, zero);
	for (int i = 0; i < T; i++) {
		int lo, hi, y = y0 + i * cs;
		mask_range(m->o->mask, m->o->window, i, T, &lo, &hi);
		for (int j = lo; j <= hi; j++) {
			double v = m->a[(size_t)i * T + j];
			char col[8];
			if (isnan(v)) { /* hidden although in range (a heat kind's own mask) */
				render_buf_printf(b, "<rect class=\"masked\" x=\"%d\" y=\"%d\" width=\"%d\" "
						  "height=\"%d\" fill=\"url(#masked)\"/>\n",
						  x0 + j * cs, y, cs, cs);
				continue;
			}
			if (m->diverging)
				ex_svg_diverging(col, v);
			else
				ex_svg_color(col, v);
			if (m->every_cell || strcmp(col, zero))
				render_buf_printf(b, "<rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" "
						  "height=\"%d\" fill=\"%s\"/>\n", x0 + j * cs, y, cs, cs, col);
		}
		if (lo > 0)
			render_buf_printf(b, "<rect class=\"masked\" x=\"%d\" y=\"%d\" width=\"%d\" "
					  "height=\"%d\" fill=\"url(#masked)\"/>\n", x0, y, lo * cs, cs);
		if (hi < T - 1)
			render_buf_printf(b, "<rect class=\"masked\" x=\"%d\" y=\"%d\" width=\"%d\" "
					  "height=\"%d\" fill=\"url(#masked)\"/>\n", x0 + (hi + 1) * cs, y,
					  (T - 1 - hi) * cs, cs);
	}
	render_buf_puts(b, "</g>\n");
}

void ex_svg_frame(struct render_buf *b, int x, int y, int w, int h, bool selected)
{
	if (selected)
		render_buf_printf(b, "<rect class=\"selected\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				  "fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n", x - 1, y - 1,
				  w + 2, h + 2);
	else
		render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
				  "stroke=\"#000000\" stroke-width=\"0.5\"/>\n", x, y, w, h);
}

/* ------------------------------------------------------- svg: the labels */

#define LABEL_MIN_CELL 7  /* cells below this get index ticks, not labels */
#define LABEL_MAX_FS 12
#define LABEL_STACK 4     /* glyphs of a stacked key label before '…' */

/* Whether any label holds a double-width character. */
static bool any_wide(char **labels, int T)
{
	for (int i = 0; i < T; i++) {
		const unsigned char *p = (const unsigned char *)labels[i];
		size_t len = strlen(labels[i]);
		while (len > 0) {
			uint32_t cp;
			int bad, k = utf8_decode(p, len, &cp, &bad);
			if (!bad && render_cp_width(cp) == 2)
				return true;
			p += k;
			len -= (size_t)k;
		}
	}
	return false;
}

int ex_label_fs(char **labels, int T, int cs)
{
	if (cs < LABEL_MIN_CELL)
		return 10;
	/* a glyph (two columns when wide) must fit its cell */
	int fit = any_wide(labels, T) ? cs * 10 / 12 : cs * 10 / 6;
	return imin(LABEL_MAX_FS, imin(cs, fit));
}

/* Every k-th index is labelled when cells are too small for labels: k
 * such that k cells hold the widest index. */
static int tick_every(int T, int cs, int fs)
{
	int digits = T > 1 ? (int)floor(log10(T - 1)) + 1 : 1;
	int need = ex_text_px(digits, fs) + 6;
	static const int steps[] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
		if (steps[i] * cs >= need)
			return steps[i];
	return 1000;
}

/* The glyphs of s (code points), at most max; *cut when more followed. */
static int glyphs(const char *s, char out[][8], int max, bool *cut)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	int n = 0;
	*cut = false;
	while (len > 0) {
		uint32_t cp;
		int bad, k = utf8_decode(p, len, &cp, &bad);
		if (n == max) {
			*cut = true;
			break;
		}
		int w = utf8_encode(bad ? 0xfffd : cp, out[n]);
		out[n++][w] = '\0';
		p += k;
		len -= (size_t)k;
	}
	return n;
}

/* Whether label s lies horizontally over a cell of cs pixels at fs. */
static bool fits(const char *s, int cs, int fs)
{
	return ex_text_px(render_width(s), fs) <= cs + 1;
}

int ex_svg_key_labels_h(char **labels, int T, int cs)
{
	int fs = ex_label_fs(labels, T, cs);
	if (cs < LABEL_MIN_CELL)
		return fs + 6;
	int most = 1;
	for (int i = 0; i < T; i++)
		if (!fits(labels[i], cs, fs)) {
			char g[LABEL_STACK + 1][8];
			bool cut;
			int n = glyphs(labels[i], g, LABEL_STACK, &cut);
			most = imax(most, n + cut);
		}
	return most * (fs + 1) + 5;
}

void ex_svg_key_labels(struct render_buf *b, char **labels, int T, int x0, int y_bottom, int cs)
{
	int fs = ex_label_fs(labels, T, cs);
	render_buf_printf(b, "<g class=\"keys\" font-size=\"%d\" text-anchor=\"middle\">\n", fs);
	if (cs < LABEL_MIN_CELL) {
		int k = tick_every(T, cs, fs);
		for (int j = 0; j < T; j += k)
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\">%d</text>\n", x0 + j * cs + cs / 2,
					  y_bottom - 3, j);
		render_buf_puts(b, "</g>\n");
		return;
	}
	for (int j = 0; j < T; j++) {
		int x = x0 + j * cs + cs / 2;
		if (fits(labels[j], cs, fs)) {
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\">", x, y_bottom - 3);
			ex_xml_text(b, labels[j]);
			render_buf_puts(b, "</text>\n");
			continue;
		}
		/* upright glyphs, one under the other, the last just above the map */
		char g[LABEL_STACK + 1][8];
		bool cut;
		int n = glyphs(labels[j], g, LABEL_STACK, &cut);
		if (cut)
			snprintf(g[n++], sizeof g[0], "\u2026");
		int y = y_bottom - 3 - (n - 1) * (fs + 1);
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\">", x, y);
		for (int k = 0; k < n; k++) {
			render_buf_printf(b, "<tspan x=\"%d\" y=\"%d\">", x, y + k * (fs + 1));
			ex_xml_text(b, g[k]);
			render_buf_puts(b, "</tspan>");
		}
		render_buf_puts(b, "</text>\n");
	}
	render_buf_puts(b, "</g>\n");
}

#define QUERY_LABEL_COLS 12 /* widest query label, display columns */

int ex_svg_query_labels_w(char **labels, int T, int cs, bool index)
{
	int fs = ex_label_fs(labels, T, cs);
	int digits = T > 1 ? (int)floor(log10(T - 1)) + 1 : 1;
	if (cs < LABEL_MIN_CELL)
		return ex_text_px(digits, fs) + 8;
	int w = 1;
	for (int i = 0; i < T; i++)
		w = imax(w, imin(QUERY_LABEL_COLS, render_width(labels[i])));
	return ex_text_px(w + (index ? digits + 1 : 0), fs) + 8;
}

void ex_svg_query_labels(struct render_buf *b, char **labels, int T, int x_right, int y0, int cs,
			 bool index)
{
	int fs = ex_label_fs(labels, T, cs);
	render_buf_printf(b, "<g class=\"queries\" font-size=\"%d\" text-anchor=\"end\">\n", fs);
	int k = cs < LABEL_MIN_CELL ? tick_every(T, cs, fs) : 1;
	for (int i = 0; i < T; i += k) {
		/* the baseline a third of the font below the row's middle */
		render_buf_printf(b, "<text x=\"%d\" y=\"%d\">", x_right - 4, y0 + i * cs + cs / 2 + fs / 3);
		if (cs < LABEL_MIN_CELL) {
			render_buf_printf(b, "%d</text>\n", i);
			continue;
		}
		if (index)
			render_buf_printf(b, "%d ", i);
		struct render_buf cut;
		render_buf_init(&cut);
		int w = render_width(labels[i]);
		render_pad(&cut, labels[i], imin(w, QUERY_LABEL_COLS), RENDER_LEFT, false);
		ex_xml_text(b, cut.data ? cut.data : "");
		render_buf_free(&cut);
		render_buf_puts(b, "</text>\n");
	}
	render_buf_puts(b, "</g>\n");
}

/* ------------------------------------------------- svg: badges, legend */

int ex_svg_badge(struct render_buf *b, int x, int y, const struct head_scores *sc)
{
	if (!sc || sc->role == HEAD_BROAD)
		return 0;
	char role[48];
	heads_role_text(sc, role, sizeof role);
	int w = ex_text_px(render_width(role), 11) + 10;
	render_buf_printf(b, "<g class=\"badge\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"15\" "
			  "rx=\"7\" fill=\"#e8eef7\" stroke=\"#5b7bb0\" stroke-width=\"0.8\"/>"
			  "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#1f3f73\">",
			  x, y - 11, w, x + 5, y);
	ex_xml_text(b, role);
	render_buf_puts(b, "</text></g>\n");
	return w;
}

#define LEGEND_ROW 22
#define LEGEND_FS 12
#define LEGEND_TEXT_X 64 /* where a row's words start, after its swatch */

static const char legend_roles[] = "badge = the role `heads` gives the head on this text "
				   "(none: broad)";
static const char legend_no_roles[] = "no badges: `heads` calls every head here broad on this "
				      "text";

/* Whether any head of scores[0 .. n) has a role other than broad. */
static bool any_role(const struct head_scores *scores, int n)
{
	for (int i = 0; scores && i < n; i++)
		if (scores[i].role != HEAD_BROAD)
			return true;
	return false;
}

int ex_svg_legend_h(const struct ex_legend *lg)
{
	return LEGEND_ROW * (1 + (lg->masked && lg->masked[0]) + (lg->roles != NULL)) + 4;
}

int ex_svg_legend_w(const struct ex_legend *lg)
{
	int w = 220 + ex_text_px(10 + render_width(lg->what), LEGEND_FS);
	if (lg->masked && lg->masked[0])
		w = imax(w, LEGEND_TEXT_X + ex_text_px(10 + render_width(lg->masked), LEGEND_FS));
	if (lg->roles)
		w = imax(w, LEGEND_TEXT_X + 100 + ex_text_px((int)sizeof legend_roles, LEGEND_FS));
	return w + 24;
}

void ex_svg_legend(struct render_buf *b, int x, int y, const struct ex_legend *lg)
{
	render_buf_printf(b, "<g class=\"legend\" font-size=\"%d\">\n", LEGEND_FS);
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", x + 26, y + 12,
			  lg->diverging ? "-1" : "0");
	render_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"160\" height=\"14\" fill=\"url(#%s)\" "
			  "stroke=\"#000000\" stroke-width=\"0.5\"/>\n", x + 30, y + 1,
			  lg->diverging ? "ramp-d" : "ramp-h");
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\">%s  colour = ", x + 194, y + 12,
			  lg->diverging ? "+1" : "1");
	ex_xml_text(b, lg->what);
	render_buf_puts(b, "</text>\n");
	int row = 1;
	if (lg->masked && lg->masked[0]) {
		int yy = y + row++ * LEGEND_ROW;
		render_buf_printf(b, "<rect class=\"masked\" x=\"%d\" y=\"%d\" width=\"28\" height=\"14\" "
				  "fill=\"url(#masked)\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n"
				  "<text x=\"%d\" y=\"%d\">hatched = ", x + 30, yy + 1,
				  x + LEGEND_TEXT_X, yy + 12);
		ex_xml_text(b, lg->masked);
		render_buf_puts(b, "</text>\n");
	}
	if (lg->roles) {
		int yy = y + row * LEGEND_ROW;
		int n = lg->n_roles;
		if (any_role(lg->roles, n)) {
			/* the first role shown stands as the example */
			int i = 0;
			while (lg->roles[i].role == HEAD_BROAD)
				i++;
			int w = ex_svg_badge(b, x + 30, yy + 12, &lg->roles[i]);
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 36 + w, yy + 12,
					  legend_roles);
		} else {
			render_buf_printf(b, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 30, yy + 12,
					  legend_no_roles);
		}
	}
	render_buf_puts(b, "</g>\n");
}

const char **ex_badges(const struct head_scores *scores, int n)
{
	if (!scores)
		return NULL;
	/* n pointers, then n strings of 16 bytes, in one block */
	const char **p = xcalloc((size_t)n, sizeof *p + 16);
	char *text = (char *)(p + n);
	for (int i = 0; i < n; i++) {
		if (scores[i].role != HEAD_BROAD)
			heads_badge_text(&scores[i], text + (size_t)i * 16, 16);
		p[i] = text + (size_t)i * 16;
	}
	return p;
}
