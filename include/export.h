/*
 * export.h — one head, every head, or the run's numbers as text, ANSI,
 * CSV, JSON or SVG, built in memory (render.h's render_buf) so that the
 * caller decides where the bytes go (stdout, or a file written atomically).
 *
 * Exports of the same session are byte-identical on re-run: no timestamps,
 * no timings, fixed number formats (weights %.9g, i.e. every float digit).
 *
 * Formats:
 *   txt    Unicode shading ' ░▒▓█', token labels on both axes, a legend
 *   ascii  the same with ' .:-=+*#%@'
 *   ansi   256-colour backgrounds (a viridis-like ramp)
 *   csv    heatmap: a header of key labels (CSV-quoted), then one row per
 *          query token, its label first, then the T weights;
 *          grid: the same with "layer","head" columns first, one block of T
 *          rows per head; stats: one row per head with the run's numbers
 *          repeated (tidy data)
 *   json   {"model","tokens":[{"id","label"}],"shape":[T,T],"options":{...},
 *           "layer","head","weights":[[...]]}; grid: "heads":[{"layer",
 *           "head","ablated","weights"}]; stats: the numbers and "heads"
 *   svg    a standalone drawing: one rect per weight (class "c"), labels on
 *          both axes, a colour scale, the options in <title> and a heading
 */
#ifndef ATTNSCOPE_EXPORT_H
#define ATTNSCOPE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "lens.h"
#include "render.h"
#include "session.h"
#include "util.h"

enum export_format {
	EXPORT_TXT,
	EXPORT_ASCII,
	EXPORT_ANSI,
	EXPORT_CSV,
	EXPORT_JSON,
	EXPORT_SVG,
};

/* "txt", "ascii", "ansi", "csv", "json", "svg". */
const char *export_format_name(enum export_format f);

/* How many formats there are: 0 .. export_format_count() - 1. */
int export_format_count(void);

/* Parses a format name.  0, or -1 with a message listing the formats. */
int export_format_parse(const char *s, enum export_format *out, struct err *e);

/* The format a file name implies by its extension (.txt .csv .json .svg,
 * case-insensitive).  0, or -1 (no message) when it implies none. */
int export_format_from_path(const char *path, enum export_format *out);

/* The run options in words: "kv_heads 4 (native 4), norm pre, mask causal,
 * scale on, ablated none".  Writes into buf. */
void export_describe_options(const struct session *s, char *buf, size_t size);

/*
 * Each appends one export of the session's current run to out.  They need
 * a model and a text with a finished run (session_ready); otherwise, and
 * for a format the export does not have (stats: txt, ascii, csv, json
 * only), they return -1 with a one-line message and leave out unchanged.
 * layer/head must exist (see session_parse_head).
 */
int export_heatmap(const struct session *s, int layer, int head, enum export_format f,
		   struct render_buf *out, struct err *e);
/* The head's weights under the current options minus the native run's
 * (show diff): signed tenths in text, red / blue in SVG and ANSI, the
 * values in CSV and JSON ("diff"). */
int export_heatmap_diff(const struct session *s, int layer, int head, enum export_format f,
			struct render_buf *out, struct err *e);
int export_grid(const struct session *s, enum export_format f, struct render_buf *out,
		struct err *e);
int export_stats(const struct session *s, enum export_format f, struct render_buf *out,
		 struct err *e);

/*
 * The logit lens of the current run (lens.h): txt, the shaded table of
 * p(the model's prediction) by depth and position; csv, one row per depth
 * and position ("depth","position","token","prediction","p","top"); json,
 * "depths", "prediction" [{"id","label"}] per position, "p" [[...]] and
 * "top" [[{"id","label"}]] by depth; svg, the table as a figure.
 */
int export_lens(const struct session *s, enum export_format f, struct render_buf *out,
		struct err *e);

/*
 * The last `patch` of the current run (patch.h; an error when there is
 * none, or it patched an earlier run): txt, the heads' shares and the
 * shaded residual table; csv, one row per site ("site" head or resid,
 * "layer", "head", "position", "share"); json, the texts, answers, the
 * metric, "heads" [L][H] and "resid" [L][T]; svg, both as diverging maps.
 */
int export_patch(const struct session *s, enum export_format f, struct render_buf *out,
		 struct err *e);

/* The tables `lens` and `patch` print (positions from first on): the
 * lens's shaded p table; the heads' shares; the shaded residual table. */
void export_lens_table(const struct lens *ln, char **labels, int first, struct render_buf *out);
void export_patch_heads(const struct patch_result *r, struct render_buf *out);
void export_patch_resid(const struct patch_result *r, char **labels, int first,
			struct render_buf *out);

/* The stats as text (what `stats` prints): the summary numbers, then one
 * row per head (entropy in nats, max weight).  With timing, the forward
 * pass time is included (never in exports, which must reproduce). */
void export_stats_txt(const struct session *s, bool timing, struct render_buf *out);

#endif
