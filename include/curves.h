/*
 * curves.h — training curves as text: the training record a model file
 * carries (model.h's train_meta, train-record.h's JSON) read into
 * series; plots of series in Unicode braille or ASCII; a heat strip of
 * per-layer gradient norms; and the series as CSV and SVG.
 *
 * Pure: nothing here prints, opens files, or knows sessions, commands or
 * terminals.  Plots and strips are laid out into a grid of character
 * cells (struct curves_grid), which the visualizer draws with colours and
 * curves_grid_text() turns into lines of text; CSV and SVG go into a
 * render_buf (render.h).  Lifetimes: a parsed record owns its series; a
 * grid owns its cells; specs only point at series the caller owns.
 *
 * A series is (name, steps, values): n points, x the training step, y the
 * value.  A NAN or infinite value is a missing point: not drawn, and the
 * line breaks there.
 *
 * Plot layout (curves_plot), every line at most `width` columns:
 *
 *   title                                 wrapped at blanks, when there is one
 *    4 ┤⠑⢄                                `height` rows: the y axis with
 *      │  ⠈⠢⢄⣀                            tick labels at round values,
 *    2 ┤      ⠉⠉⠒⠒⠤⠤⣀⣀                    then the plot area
 *      └──┬─────┬─────┬                   the x axis, ticks at round steps
 *      0  1000  2000  3000                their labels
 *   ● train loss  ■ val loss              the legend, wrapped to the width
 *
 * Braille cells hold 2 x 4 dots, so C x R cells of plot area are 2C x 4R
 * dots; ASCII (no braille) has one dot per cell, drawn with the series'
 * marker.  x runs from the smallest to the largest step of all the
 * series, y from the smallest to the largest value drawn: the smallest
 * lands on the bottom dot row, the largest on the top one (a single step
 * or a single value is drawn in the middle of a widened range).  Each
 * series joins consecutive points with straight lines of dots.  A sparse
 * series (at most one point per two columns: the validation loss) also
 * shows its marker at every point; every series shows it at its last
 * point, so that series tell apart without colour.  Where series overlap,
 * a cell shows the dots of all and the colour of the last one drawn.
 *
 * Scale: CURVES_LINEAR; CURVES_LOG (values <= 0 are missing points; ticks
 * at powers of ten, with 2x and 5x between them when fewer than two
 * powers fit); CURVES_AUTO is log when every value drawn is positive and
 * the largest is more than 10 times the smallest (the range spans more
 * than a decade), else linear.
 *
 * Heat strip layout (curves_heat): a title; one row per series ("layer 0"
 * ...) of step buckets shaded from the smallest to the largest value of
 * all rows (on a log scale when asked: gradient norms), ' ░▒▓█' (4
 * shades) or the ASCII ramp ' .:-=+*#%@' (9 shades), blank where a row
 * has no data; the x axis as in a plot; then a scale line naming the
 * value where each shade starts.  A bucket is the mean (log scale: the
 * geometric mean) of the points that fall in it; a bucket with no point
 * between two that have one repeats the one before.
 *
 * Sizes: any width and height are safe; when the plot area would be
 * narrower than CURVES_MIN_COLS or the strip has no room for a bucket,
 * the grid is one line saying how many columns are needed, cut to fit.
 */
#ifndef ATTNSCOPE_CURVES_H
#define ATTNSCOPE_CURVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render.h"
#include "train-record.h"
#include "util.h"

/* ---------------------------------------------------------------- series */

struct curve {
	char *name;     /* legend text, owned */
	double *step;   /* (n) x values, owned */
	double *value;  /* (n) y values, owned; NAN = missing */
	int n;
};

/* Makes c a series of n points (steps and values zeroed) named name.
 * Never fails (out of memory is fatal). */
void curve_init(struct curve *c, const char *name, int n);

/* Frees what c owns and zeroes it; a zeroed curve is fine. */
void curve_free(struct curve *c);

/* Replaces c's name by name (copied). */
void curve_rename(struct curve *c, const char *name);

/* ------------------------------------------------------ training record */

/*
 * A training record read into series.  From the record's "history"
 * object: loss, lr and grad_norm (and each layer of layer_grad_norm) by
 * history.step; from "val": loss by val.step.  A series the record lacks
 * has n = 0 (an old record without layer norms has n_layer = 0).
 */
struct curves_record {
	struct curve loss;    /* "train loss" */
	struct curve val;     /* "val loss" */
	struct curve lr;      /* "learning rate" */
	struct curve grad;    /* "grad norm": the global gradient norm */
	struct curve *layer;  /* (n_layer) "layer L": that layer's gradient norm */
	int n_layer;
	long every;           /* history.every: one stored step per `every` (1 when absent) */
	long steps;           /* steps asked for (-1 when absent) */
	long steps_done;      /* steps run (-1 when absent) */
	double final_train_loss; /* the record's own (mean of the last 10% of steps); NAN when absent */
	double final_val_loss;   /* NAN when absent */
};

#define CURVES_MAX_LAYERS TRAIN_RECORD_MAX_LAYERS /* longest layer_grad_norm row accepted */

/*
 * Reads the JSON text of a training record (len bytes; need not be
 * NUL-terminated) with train_record_parse (train-record.h: what is
 * required, what is optional) into series.  0, or -1 with its one line in
 * e ("training record: history.loss has 9 values for 10 steps") and r
 * zeroed.  Free r with curves_record_free.
 */
int curves_parse(const char *json, size_t len, struct curves_record *r, struct err *e);

/* Frees what r owns and zeroes it; a zeroed record is fine. */
void curves_record_free(struct curves_record *r);

/* How the record was kept, for titles: "3000 steps, every 3rd stored"
 * ("each stored" when every = 1), then "; val 12 times" when val and the
 * record has validation losses.  Writes into buf. */
void curves_describe(const struct curves_record *r, bool val, char *buf, size_t size);

/* ------------------------------------------------------------ the grid */

#define CURVES_TEXT (-1) /* ink of axes, labels and titles */
#define CURVES_HEAT (-2) /* ink of heat strip cells (see heat) */
#define CURVES_INKS 6    /* series inks (colours and markers) before they repeat */

/* One character cell. */
struct curves_cell {
	uint32_t cp;  /* the character; 0 for the second column of a wide one */
	int ink;      /* series index (its colour) for its dots, markers and legend
		       * marker; CURVES_TEXT; or CURVES_HEAT */
	float heat;   /* CURVES_HEAT: the shade's place on the ramp, in (0, 1] */
};

/* h rows of w cells, row-major.  Free with curves_grid_free. */
struct curves_grid {
	int w, h;
	struct curves_cell *cell; /* (h, w), owned */
};

void curves_grid_free(struct curves_grid *g);

/*
 * Appends g as text, one line per row ending in '\n', trailing blanks
 * dropped.  With color, series cells are in ANSI colours (cyan, yellow,
 * magenta, red, green, blue, by ink modulo CURVES_INKS) and heat cells in
 * the 256-colour ramp of render_color256.
 */
void curves_grid_text(const struct curves_grid *g, bool color, struct render_buf *b);

/* Appends text wrapped at blanks to lines of at most width columns (a
 * word wider than that is cut), each ending in '\n'. */
void curves_wrap(const char *text, int width, struct render_buf *b);

/* Marker of series ink i (modulo CURVES_INKS): "●" "■" "▲" "◆" "▼" "★",
 * ASCII "*" "o" "+" "x" "#" "@". */
const char *curves_marker(int ink, bool ascii);

/* ---------------------------------------------------------------- plots */

enum curves_scale { CURVES_AUTO, CURVES_LINEAR, CURVES_LOG };

#define CURVES_MIN_COLS 8 /* narrowest plot area drawn */

struct curves_plot_spec {
	const struct curve *const *series; /* n_series series; ink i = index i */
	int n_series;
	int width;               /* columns of every line */
	int height;              /* rows of the plot area */
	enum curves_scale scale;
	bool ascii;              /* ASCII instead of braille and box drawing */
	const char *title;       /* first lines (wrapped), or NULL */
};

/* Lays out the plot into g (allocated here; the old contents are not
 * freed).  Never fails. */
void curves_plot(const struct curves_plot_spec *sp, struct curves_grid *g);

/* Whether sp's y axis is logarithmic (CURVES_AUTO decided). */
bool curves_plot_is_log(const struct curves_plot_spec *sp);

/* Rows curves_plot adds to sp->height: title, axis, labels and legend. */
int curves_plot_extra_rows(const struct curves_plot_spec *sp);

/* ----------------------------------------------------------- heat strip */

struct curves_heat_spec {
	const struct curve *const *rows; /* one series per row, named on the left */
	int n_rows;
	int width;               /* columns of every line */
	bool log;                /* shade by the logarithm (values <= 0 missing) */
	bool ascii;
	const char *title;       /* first lines (wrapped), or NULL */
};

/* Lays out the strip into g (allocated here).  Never fails. */
void curves_heat(const struct curves_heat_spec *sp, struct curves_grid *g);

/* Rows curves_heat lays out for sp (title, rows, axis, labels, scale). */
int curves_heat_rows(const struct curves_heat_spec *sp);

/* ----------------------------------------------------------- CSV and SVG */

/*
 * CSV: a header "step,NAME,..." (names quoted when they hold a comma,
 * quote or line break), then one row per step that any series has, in
 * ascending order: the step, then each series' value there (%.9g), empty
 * when the series has no finite value at that step.
 */
void curves_csv(const struct curve *const *series, int n, struct render_buf *b);

/*
 * SVG: a standalone drawing of the plot sp describes (its width and
 * height are ignored): the title, axes with the same ticks as the text
 * plot, one <path> per series (a missing point starts a new subpath), a
 * circle at each point of a sparse series, and a legend.
 */
void curves_svg(const struct curves_plot_spec *sp, struct render_buf *b);

#endif
