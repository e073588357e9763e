/*
 * fuzz_curves.c — libFuzzer target for the training-record reader,
 * curves_parse(), and everything `curves` does with what it read
 * (curves.h).
 *
 * The input is the JSON text of a training record (model.h's train_meta,
 * which a model file may carry in any shape: the loader only checks that
 * it is JSON).  Every failure is fine as long as it is one line and the
 * record comes back empty.  A record that reads must have series of
 * consistent lengths (every history series as long as the steps, or
 * empty), finite steps, and layers named in order; then its loss and val
 * plotted at a few widths and heights (braille and ASCII, every scale),
 * its layers as a heat strip, and its series as CSV and SVG must never
 * give a line wider than asked or a grid of another height than the one
 * announced.
 *
 * Seeds: fuzz/seeds/curves, the records of two `attnscope train` runs on
 * a three-line text (1 layer, 12 steps; 2 layers, 40 steps with
 * validation every 10), and a hand-made one with nulls.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "curves.h"
#include "render.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return fuzz_initialize(argc, argv, false);
}

/* Every line of the grid's text is at most w columns, one line per row;
 * in colour it is the same text once the colour codes are taken out. */
static void check_grid(const struct curves_grid *g, int w)
{
	struct render_buf plain, color;
	render_buf_init(&plain);
	render_buf_init(&color);
	curves_grid_text(g, false, &plain);
	curves_grid_text(g, true, &color);
	int lines = 0;
	for (char *p = plain.data; p && *p; lines++) {
		char *e = strchr(p, '\n');
		CHECK(e);
		*e = '\0';
		CHECK(render_width(p) <= w);
		*e = '\n';
		p = e + 1;
	}
	CHECK(lines == g->h);
	size_t k = 0;
	for (size_t i = 0; i < color.len; i++) {
		if (color.data[i] == '\x1b') {
			CHECK(color.data[i + 1] == '[');
			i += strcspn(color.data + i, "m");
			continue;
		}
		CHECK(k < plain.len && color.data[i] == plain.data[k++]);
	}
	CHECK(k == plain.len);
	render_buf_free(&plain);
	render_buf_free(&color);
}

static void check_series(const struct curve *c, int n)
{
	CHECK(c->name && c->step && c->value);
	CHECK(c->n == n || c->n == 0);
	for (int i = 0; i < c->n; i++)
		CHECK(isfinite(c->step[i]));
}

static void draw(const struct curves_record *r)
{
	static const int widths[] = { 1, 13, 80 }, heights[] = { 0, 3, 16 };
	const struct curve *s[] = { &r->loss, &r->val, &r->lr, &r->grad };
	const struct curve **layers = malloc(((size_t)r->n_layer + 1) * sizeof *layers);
	CHECK(layers);
	for (int l = 0; l < r->n_layer; l++)
		layers[l] = &r->layer[l];
	for (int wi = 0; wi < 3; wi++)
		for (int hi = 0; hi < 3; hi++)
			for (int sc = CURVES_AUTO; sc <= CURVES_LOG; sc++) {
				struct curves_plot_spec sp = {
					.series = s, .n_series = 4, .width = widths[wi],
					.height = heights[hi], .scale = sc, .ascii = (wi + hi) % 2,
					.title = "a title",
				};
				struct curves_grid g;
				curves_plot(&sp, &g);
				check_grid(&g, sp.width);
				if (g.h > 1)
					CHECK(g.h == sp.height + curves_plot_extra_rows(&sp));
				curves_grid_free(&g);
				if (hi || sc != CURVES_AUTO)
					continue;
				struct curves_heat_spec hs = { .rows = layers, .n_rows = r->n_layer,
							       .width = widths[wi], .log = wi % 2,
							       .ascii = wi == 2, .title = "layers" };
				curves_heat(&hs, &g);
				check_grid(&g, hs.width);
				CHECK(g.h == curves_heat_rows(&hs));
				curves_grid_free(&g);
			}
	struct render_buf b;
	render_buf_init(&b);
	curves_csv(s, 4, &b);
	struct curves_plot_spec sp = { .series = s, .n_series = 4, .title = "svg" };
	curves_svg(&sp, &b);
	CHECK(b.data && strstr(b.data, "</svg>\n"));
	render_buf_free(&b);
	free(layers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct curves_record r;
	struct err e = { "" };
	if (curves_parse((const char *)data, size, &r, &e) != 0) {
		fuzz_check_error(&e, "training record: ");
		CHECK(r.loss.n == 0 && !r.loss.step && !r.layer && r.n_layer == 0);
		return 0;
	}
	int n = r.loss.n;
	check_series(&r.loss, n);
	check_series(&r.lr, n);
	check_series(&r.grad, n);
	check_series(&r.val, r.val.n);
	CHECK(r.every >= 1 && r.n_layer >= 0 && r.n_layer <= CURVES_MAX_LAYERS);
	for (int l = 0; l < r.n_layer; l++) {
		char name[32];
		snprintf(name, sizeof name, "layer %d", l);
		CHECK(!strcmp(r.layer[l].name, name));
		check_series(&r.layer[l], n);
	}
	draw(&r);
	curves_record_free(&r);
	return 0;
}
