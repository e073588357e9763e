/*
 * export-parts.h — the pieces the export modules share (export.c for the
 * heatmaps, grid and stats; export-analysis.c for the lens and patching):
 * text made safe for JSON and XML, CSV quoting, the JSON header of a
 * session, and the SVG frame, heading, colours and scale.  Every function
 * appends to a render_buf (render.h) or returns a new value the caller
 * owns; none fails but for out-of-memory (fatal).
 */
#ifndef ATTNSCOPE_EXPORT_PARTS_H
#define ATTNSCOPE_EXPORT_PARTS_H

#include <stdbool.h>

#include <jansson.h>

#include "render.h"
#include "session.h"

/* Height of the heading block ex_svg_heading draws. */
#define SVG_HEAD_H 64

/* A malloc'd copy of s that is valid UTF-8 without control characters
 * (bad bytes become U+FFFD, controls '?'), safe for JSON and XML. */
char *ex_clean_text(const char *s);

/* s in double quotes, inner quotes doubled (RFC 4180). */
void ex_csv_quoted(struct render_buf *b, const char *s);

/* A JSON string of ex_clean_text(s) (a new reference). */
json_t *ex_json_str(const char *s);

/* A new object with "model", "options" and, with_tokens, "tokens"
 * [{"id","label"}] and "shape" [T, T] of session s (labels: its token
 * labels). */
json_t *ex_json_head_obj(const struct session *s, char **labels, bool with_tokens);

/* Appends root as compact JSON (9 significant digits) and a newline, and
 * releases root. */
void ex_json_emit(struct render_buf *b, json_t *root);

/* s as XML text (made clean, then escaped). */
void ex_xml_text(struct render_buf *b, const char *s);

/* "#rrggbb" into out: the heatmap ramp for v in 0..1 (grey for NaN, a
 * masked cell), or the diverging ramp for d in -1..1 (white at 0, red up,
 * blue down). */
void ex_svg_color(char out[8], double v);
void ex_svg_diverging(char out[8], double d);

/* The <svg> element of w x h pixels with title and a white background. */
void ex_svg_open(struct render_buf *b, int w, int h, const char *title);

/* A bold heading line and two smaller ones at the top (SVG_HEAD_H tall),
 * and the width they need. */
void ex_svg_heading(struct render_buf *b, const char *line1, const char *line2,
		    const char *line3);
int ex_svg_heading_width(const char *line1, const char *line2, const char *line3);

/* A vertical colour scale at x, y, h pixels tall, named what: 0..1, or
 * -1..+1 when diverging. */
void ex_svg_scale(struct render_buf *b, int x, int y, int h, const char *what, bool diverging);

#endif
