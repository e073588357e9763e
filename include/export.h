/*
 * export.h — one head, one layer, every head, the run's numbers, the lens,
 * the last patching, the mask matrix, GQA's grouping or the last lab
 * experiment as text, ANSI, CSV, JSON, SVG or PNG, built in
 * memory (render.h's render_buf) so that the caller decides where the
 * bytes go (stdout, or a file written atomically).
 *
 * Exports of the same session are byte-identical on re-run: no timestamps,
 * no timings, fixed number formats (weights %.9g, i.e. every float digit).
 *
 * Formats:
 *   txt    Unicode shading ' ░▒▓█', token labels on both axes, a legend;
 *          a cell the mask hides is '·' (not a weight of 0, which is ' ')
 *   ascii  the same with ' .:-=+*#%@' (masked '/')
 *   ansi   256-colour backgrounds (a viridis-like ramp)
 *   csv    heatmap: a header of key labels (CSV-quoted), then one row per
 *          query token, its label first, then the T weights;
 *          grid: the same with "layer","head" columns first, one block of T
 *          rows per head; stats: one row per head with the run's numbers
 *          repeated (tidy data)
 *   json   {"model","tokens":[{"id","label"}],"shape":[T,T],"options":{...},
 *           "layer","head","weights":[[...]]}; grid: "heads":[{"layer",
 *           "head","ablated","weights"}]; stats: the numbers and "heads"
 *   svg    a standalone figure for slides: a heading and a plain-language
 *          subtitle (model, text, what the colour means), maps with token
 *          labels on both axes, every glyph upright, masked cells hatched
 *          (class "masked"), role badges, a legend; fonts with CJK
 *          fallbacks (render.h: RENDER_SVG_FONTS)
 *   png    the SVG rasterised by librsvg through cairo (export-png.c), at
 *          --scale pixels per SVG pixel; only to a file
 *
 * What can be exported (export_kinds[], one row each; each file says its
 * formats): heatmap L.H, layer L, grid, stats, lens, patch (export.c,
 * export-layer.c, export-analysis.c), mask (export-mask.c), groups
 * (export-groups.c; needs a model only), lab (export-lab.c; needs a `lab`
 * run in the session), circuits (export-circuits.c; needs a model only),
 * dla (export-dla.c; the last position of the text), why L.H I J
 * (export-why.c), qkov L.H (export-qkov.c).
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
	EXPORT_PNG,
};
#define EXPORT_N_FORMATS 7

/* The bit of format f in an export's format set. */
#define EXPORT_BIT(f) (1u << (f))

/* "txt", "ascii", "ansi", "csv", "json", "svg", "png". */
const char *export_format_name(enum export_format f);

/* How many formats there are: 0 .. export_format_count() - 1. */
int export_format_count(void);

/* Parses a format name.  0, or -1 with a message listing the formats. */
int export_format_parse(const char *s, enum export_format *out, struct err *e);

/* The format a file name implies by its extension (.txt .csv .json .svg
 * .png, case-insensitive).  0, or -1 (no message) when it implies none. */
int export_format_from_path(const char *path, enum export_format *out);

/* The run options in words: "kv_heads 4 (native 4), norm pre, mask causal,
 * scale on, ablated none", then ", pitfall NAME" under a pitfall.  Writes
 * into buf. */
void export_describe_options(const struct session *s, char *buf, size_t size);

/* ------------------------------------------------- the exports, by name */

/* What one export is asked for besides the session: the command's
 * argument and options.  Zeroed (but for layer/head) it is the plain
 * figure: no badges, no selection frame, scale 1. */
struct export_req {
	int layer, head;          /* heatmap L.H, why L.H, qkov L.H; layer L (head unused) */
	int qpos, kpos;           /* why L.H I J: I and J */
	bool diff;                /* heatmap --diff: minus the native run */
	bool selected;            /* --selected: frame (SVG) or bracket (text) the
				   * session's selected head */
	bool all;                 /* mask --all: every mask kind side by side */
	int scale;                /* png: pixels per SVG pixel, 1..EXPORT_MAX_SCALE
				   * (0 is 1) */
	const struct head_scores *roles; /* (L * H) session_head_scores, for role
					  * badges; NULL: no badges */
};

#define EXPORT_MAX_SCALE 4
#define EXPORT_MAX_PNG_SIDE 16384 /* larger figures stay SVG (one line says so) */

/* One thing export can write.  write appends the export of session s in
 * format f (never EXPORT_PNG: export_run makes that from the SVG) to out.
 * It needs a model and a text with a finished run unless it says
 * otherwise, and returns 0, or -1 with a one-line message and out as it
 * was. */
struct export_kind {
	const char *name;         /* "heatmap" */
	const char *arg;          /* its positional arguments for usage ("L.H", "L", "L.H I J"),
				   * or NULL */
	unsigned formats;         /* EXPORT_BIT of every format it writes */
	const char *help;         /* a few words naming it (an unknown export's message) */
	bool roles;               /* shows role badges: the command passes the roles */
	int (*write)(const struct session *s, const struct export_req *r, enum export_format f,
		     struct render_buf *out, struct err *e);
};

/* Every export, in help's order; the name of the last is NULL. */
extern const struct export_kind export_kinds[];

/* The export called name, or NULL. */
const struct export_kind *export_find(const char *name);

/* How many positional arguments k takes after its name: the words of k->arg. */
int export_arg_words(const struct export_kind *k);

/* The formats of k as "txt, csv, json, svg or png" into buf. */
void export_formats_text(const struct export_kind *k, char *buf, size_t size);

/*
 * Runs export k in format f into out: refuses a format k does not have
 * ("export NAME: --format F is not one of its formats (txt, ... or png)"),
 * and makes PNG by rasterising the SVG (export_png).  0, or -1 with a
 * one-line message and out unchanged.
 */
int export_run(const struct export_kind *k, const struct session *s, const struct export_req *r,
	       enum export_format f, struct render_buf *out, struct err *e);

/*
 * Rasterises the SVG document svg (len bytes) with librsvg onto a cairo
 * image surface of its width x height times scale (1..EXPORT_MAX_SCALE)
 * pixels, white where the drawing leaves it transparent, and appends the
 * PNG bytes (8-bit RGB, no alpha) to out.  0, or -1 with a one-line
 * message (an SVG librsvg cannot read, a side over EXPORT_MAX_PNG_SIDE
 * pixels) and out unchanged.
 */
int export_png(const char *svg, size_t len, int scale, struct render_buf *out, struct err *e);

/* The write functions of export_kinds' rows (export_heatmap_req and
 * export_grid_req are export_heatmap and export_grid with a request). */
int export_layer(const struct session *s, const struct export_req *r, enum export_format f,
		 struct render_buf *out, struct err *e);
int export_mask(const struct session *s, const struct export_req *r, enum export_format f,
		struct render_buf *out, struct err *e);
int export_groups(const struct session *s, const struct export_req *r, enum export_format f,
		  struct render_buf *out, struct err *e);
int export_lab(const struct session *s, const struct export_req *r, enum export_format f,
	       struct render_buf *out, struct err *e);
int export_circuits(const struct session *s, const struct export_req *r, enum export_format f,
		    struct render_buf *out, struct err *e);
int export_dla(const struct session *s, const struct export_req *r, enum export_format f,
	       struct render_buf *out, struct err *e);
int export_why(const struct session *s, const struct export_req *r, enum export_format f,
	       struct render_buf *out, struct err *e);
int export_qkov(const struct session *s, const struct export_req *r, enum export_format f,
		struct render_buf *out, struct err *e);
int export_heatmap_req(const struct session *s, const struct export_req *r,
		       enum export_format f, struct render_buf *out, struct err *e);
int export_grid_req(const struct session *s, const struct export_req *r, enum export_format f,
		    struct render_buf *out, struct err *e);

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
