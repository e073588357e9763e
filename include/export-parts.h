/*
 * export-parts.h — the pieces the export modules share (export.c for the
 * heatmaps, grid and stats; export-layer.c, export-mask.c, export-groups.c,
 * export-lab.c for the figures; export-analysis.c for the lens and
 * patching): text made safe for JSON and XML, CSV quoting, the JSON header
 * of a session, the run options in words, and the SVG frame, heading,
 * colours, scales, token labels, masked cells and legend.  Every function
 * appends to a render_buf (render.h) or returns a new value the caller
 * owns; none fails but for out-of-memory (fatal).
 *
 * SVG geometry: one unit is one pixel of the PNG at --scale 1.  Text
 * widths are estimated for a monospace font: 0.6 em per display column
 * (render_width: 2 columns for a CJK character), which is DejaVu Sans
 * Mono's advance; the CJK fallbacks are about 1 em, i.e. 2 columns.
 */
#ifndef ATTNSCOPE_EXPORT_PARTS_H
#define ATTNSCOPE_EXPORT_PARTS_H

#include <stdbool.h>

#include <jansson.h>

#include "export.h"
#include "heads.h"
#include "render.h"
#include "session.h"

/* Height of the heading block ex_svg_heading draws. */
#define SVG_HEAD_H 64

/* ------------------------------------------------------------------ text */

/* A malloc'd copy of s that is valid UTF-8 without control characters
 * (bad bytes become U+FFFD, controls '?'), safe for JSON and XML. */
char *ex_clean_text(const char *s);

/* The model's name as exports print it (its own, else what was typed). */
const char *ex_model_name(const struct session *s);

/* The session's text for a heading: clean, newlines as ⏎, cut to at most
 * cols display columns with a final '…'.  Writes into buf. */
void ex_text_excerpt(const struct session *s, int cols, char *buf, size_t size);

/* What the current mask hides, in words for a legend ("the causal mask
 * hides the keys after each query: masked, not a weight of 0"), or ""
 * under mask none.  Writes into buf. */
void ex_mask_words(const struct run_options *o, char *buf, size_t size);

/* A malloc'd (T, T) copy of a with every cell the mask of o hides set to
 * NAN (the text layouts draw those as masked, render.h). */
float *ex_masked_copy(const struct run_options *o, const float *a, int T);

/* The plain-language subtitle of an attention figure: which model read
 * which text, what rows, columns and the colour are (diff: the change
 * against the native run), then the options.  Paragraphs separated by
 * '\n' (ex_svg_figure wraps them).  Writes into buf. */
void ex_subtitle(const struct session *s, bool diff, char *buf, size_t size);

/* Rewrites b from byte `from` on as ASCII, in place, keeping every
 * character's width: the space and newline labels become '_' and '$', any
 * other character one '?' per column it takes (--format ascii). */
void ex_to_ascii(struct render_buf *b, size_t from);

/* s in double quotes, inner quotes doubled (RFC 4180). */
void ex_csv_quoted(struct render_buf *b, const char *s);

/* ------------------------------------------------------------------ json */

/* A JSON string of ex_clean_text(s) (a new reference). */
json_t *ex_json_str(const char *s);

/* A new object with "model", "options" and, with_tokens, "tokens"
 * [{"id","label"}] and "shape" [T, T] of session s (labels: its token
 * labels). */
json_t *ex_json_head_obj(const struct session *s, char **labels, bool with_tokens);

/* Appends root as compact JSON (9 significant digits) and a newline, and
 * releases root. */
void ex_json_emit(struct render_buf *b, json_t *root);

/* ------------------------------------------------------------------- svg */

/* s as XML text (made clean, then escaped). */
void ex_xml_text(struct render_buf *b, const char *s);

/* "#rrggbb" into out: the heatmap ramp for v in 0..1 (grey for NaN, a
 * masked cell), or the diverging ramp for d in -1..1 (white at 0, red up,
 * blue down). */
void ex_svg_color(char out[8], double v);
void ex_svg_diverging(char out[8], double d);

/* Pixels of a text of `cols` display columns at font size fs. */
int ex_text_px(int cols, int fs);

/* The <svg> element of w x h pixels with title and a white background
 * (font-family RENDER_SVG_FONTS). */
void ex_svg_open(struct render_buf *b, int w, int h, const char *title);

/* A bold heading line and two smaller ones at the top (SVG_HEAD_H tall),
 * and the width they need. */
void ex_svg_heading(struct render_buf *b, const char *line1, const char *line2,
		    const char *line3);
int ex_svg_heading_width(const char *line1, const char *line2, const char *line3);

/* A vertical colour scale at x, y, h pixels tall, named what: 0..1, or
 * -1..+1 when diverging. */
void ex_svg_scale(struct render_buf *b, int x, int y, int h, const char *what, bool diverging);

/*
 * A whole figure: <svg> of width w, <title> tooltip, the shared <defs>
 * (the masked hatch "masked", the horizontal ramps "ramp-h" and
 * "ramp-d"), a bold heading and under it the subtitle (paragraphs
 * separated by '\n', each wrapped to w), then body translated below them;
 * body_h is the body's height.  Appends to out.
 */
void ex_svg_figure(struct render_buf *out, int w, int body_h, const char *tooltip,
		   const char *heading, const char *subtitle, const struct render_buf *body);

/* text at font size fs wrapped to width pixels, one <text> per line from
 * baseline y down (fs + 3 apart) when draw; the number of lines. */
int ex_svg_wrapped(struct render_buf *b, int x, int y, int fs, int width, const char *text,
		   bool draw);

/* One (T, T) map drawn at x0, y0 with cells of cs pixels. */
struct ex_map {
	const float *a;              /* (T, T) row = query, column = key */
	int T;
	const struct run_options *o; /* the mask: the cells it hides are hatched
				      * (class "masked", one rect per run of a row) */
	bool diverging;              /* a holds changes in -1..1 */
	bool every_cell;             /* a rect (class "c") for every visible cell; else
				      * a background of the colour of 0 and rects for
				      * the other cells only (smaller files) */
};
void ex_svg_map(struct render_buf *b, const struct ex_map *m, int x0, int y0, int cs);

/*
 * Token labels of a map of T tokens with cells of cs pixels, every glyph
 * upright: key labels centred over their columns, horizontal when they
 * fit, else stacked one character under the other (at most 4, then '…');
 * query labels right-aligned against the rows ("I label" with index).
 * Cells under 7 pixels get the index of every k-th token instead.  The
 * label font size is ex_label_fs.  key_h / query_w: the room they take.
 */
int ex_label_fs(char **labels, int T, int cs);
int ex_svg_key_labels_h(char **labels, int T, int cs);
void ex_svg_key_labels(struct render_buf *b, char **labels, int T, int x0, int y_bottom, int cs);
int ex_svg_query_labels_w(char **labels, int T, int cs, bool index);
void ex_svg_query_labels(struct render_buf *b, char **labels, int T, int x_right, int y0, int cs,
			 bool index);

/* A frame around a map: thin black, or, for a marked head (--selected),
 * 2 px red (class "selected"). */
void ex_svg_frame(struct render_buf *b, int x, int y, int w, int h, bool selected);

/* A head's role badge (heads.h: heads_role_text, "previous-token",
 * "offset 3") as a grey pill at x, y (its baseline); its width.  Nothing
 * for a broad head or NULL scores (width 0). */
int ex_svg_badge(struct render_buf *b, int x, int y, const struct head_scores *sc);

/* The legend under a figure: the colour ramp and what it shades; the
 * hatched swatch and what the mask hides; a line on the role badges (an
 * example badge, or that every head shown is broad).  Its height and the
 * width it needs. */
struct ex_legend {
	const char *what;                /* the ramp's quantity ("attention weight") */
	bool diverging;                  /* -1..+1 instead of 0..1 */
	const char *masked;              /* what the hatched swatch means, or NULL/"" */
	const struct head_scores *roles; /* (n_roles) the heads shown, or NULL: no line */
	int n_roles;
};
int ex_svg_legend_h(const struct ex_legend *lg);
int ex_svg_legend_w(const struct ex_legend *lg);
void ex_svg_legend(struct render_buf *b, int x, int y, const struct ex_legend *lg);

/* The role badges of every head for the text layouts (render_grid_spec's
 * badges, "" for a broad head): L * H pointers into one allocation; free
 * the result.  NULL when scores is NULL. */
const char **ex_badges(const struct head_scores *scores, int n);

/* Layers l0 .. l1-1 of the grid export (export.c) in format f (not png):
 * what `export layer L` writes in its text, CSV and JSON forms.  The
 * caller checked session_ready and the layers.  Never fails. */
int export_grid_range(const struct session *s, const struct export_req *r, int l0, int l1,
		      enum export_format f, struct render_buf *out);

/* The line under a text grid naming the badges. */
#define EX_BADGE_LEGEND "badges: the role `heads` gives (prev previous-token, offK offset K, " \
			"sink, delim delimiter, self, local, ind induction)\n"

#endif
