/*
 * cmd-curves.c — curves [loss | lr | grad | layers] [MODEL...]: the
 * training record a model file carries (curves.h), drawn in the terminal:
 * the loaded model's curves, and those of every model named, on the same
 * axes; or, with --run ID, the steps `train --db` recorded for that run in
 * the session database (store.h).  --csv and --svg write the same series
 * as data and as a figure.
 */
#define _GNU_SOURCE
#include <langinfo.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "curves.h"
#include "loader.h"
#include "store.h"

#define CURVES_MODELS 6    /* models on one plot */
#define CURVES_HEIGHT 16   /* rows of the plot area unless --height */
#define CURVES_SERIES (CURVES_MODELS * CURVES_MAX_LAYERS)

extern const struct cmd_entry cmd_curves_entry;

enum what { WHAT_LOSS, WHAT_LR, WHAT_GRAD, WHAT_LAYERS };
static const char *const what_names[] = { "loss", "lr", "grad", "layers", NULL };

/* One model's record and the name its legend entries carry. */
struct source {
	char name[128];
	struct curves_record rec;
};

struct sources {
	int n;
	struct source v[CURVES_MODELS];
};

static void sources_free(struct sources *ss)
{
	for (int i = 0; i < ss->n; i++)
		curves_record_free(&ss->v[i].rec);
	ss->n = 0;
}

/* Adds model m's record as a source.  0, or -1 when m has none. */
static int add_model(struct sources *ss, const struct model *m, struct err *e)
{
	const char *name = m->name ? m->name : "the model";
	if (!m->train_meta)
		return err_set(e, "%s has no training history (it was not trained by attnscope)", name);
	if (ss->n == CURVES_MODELS)
		return err_set(e, "curves: at most %d models on one plot", CURVES_MODELS);
	struct source *src = &ss->v[ss->n];
	if (curves_parse(m->train_meta, strlen(m->train_meta), &src->rec, e))
		return err_prefix(e, "%s", name);
	if (src->rec.loss.n == 0) {
		curves_record_free(&src->rec);
		return err_set(e, "%s: its training record has no steps", name);
	}
	snprintf(src->name, sizeof src->name, "%s", name);
	ss->n++;
	return 0;
}

/* r from the steps a `train --db` run recorded: every step, val where
 * it was measured, the final train loss as train.c computes it (the mean
 * of the last 10% of steps). */
static void record_of_rows(const struct store_train_row *v, int n, struct curves_record *r)
{
	int k = 0, L = 0;
	for (int i = 0; i < n; i++) {
		k += isfinite(v[i].val_loss);
		L = v[i].n_layers > L ? v[i].n_layers : L;
	}
	L = L > CURVES_MAX_LAYERS ? CURVES_MAX_LAYERS : L;
	memset(r, 0, sizeof *r);
	curve_init(&r->loss, "train loss", n);
	curve_init(&r->lr, "learning rate", n);
	curve_init(&r->grad, "grad norm", n);
	curve_init(&r->val, "val loss", k);
	r->layer = xcalloc((size_t)L + 1, sizeof *r->layer);
	r->n_layer = L;
	for (int l = 0; l < L; l++) {
		char name[32];
		snprintf(name, sizeof name, "layer %d", l);
		curve_init(&r->layer[l], name, n);
	}
	double sum = 0;
	int tail = n / 10 > 1 ? n / 10 : 1;
	for (int i = 0, j = 0; i < n; i++) {
		double x = (double)v[i].step;
		r->loss.step[i] = r->lr.step[i] = r->grad.step[i] = x;
		r->loss.value[i] = v[i].loss;
		r->lr.value[i] = v[i].lr;
		r->grad.value[i] = v[i].grad_norm;
		for (int l = 0; l < L; l++) {
			r->layer[l].step[i] = x;
			r->layer[l].value[i] = l < v[i].n_layers ? v[i].layer_grad_norms[l] : NAN;
		}
		if (isfinite(v[i].val_loss)) {
			r->val.step[j] = x;
			r->val.value[j++] = v[i].val_loss;
		}
		sum += i >= n - tail ? v[i].loss : 0;
	}
	r->every = 1;
	r->steps = -1;
	r->steps_done = n ? (long)v[n - 1].step : 0;
	r->final_train_loss = n ? sum / tail : NAN;
	r->final_val_loss = k ? r->val.value[k - 1] : NAN;
}

/* The run the session database recorded as training_runs id. */
static int add_run(struct sources *ss, struct session *s, int64_t id, struct err *e)
{
	if (!s->store)
		return err_set(e, "curves --run: no session database (attnscope was started with "
			       "--no-db, or the database could not be opened)");
	struct store_train_row *rows;
	int n;
	char *status, *path; /* the run's; the name says when it did not finish */
	if (store_get_training_steps(s->store, id, &rows, &n, &status, &path, e))
		return -1;
	int rc = 0;
	if (n == 0)
		rc = err_set(e, "training run %lld recorded no steps", (long long)id);
	if (!rc) {
		struct source *src = &ss->v[ss->n++];
		record_of_rows(rows, n, &src->rec);
		snprintf(src->name, sizeof src->name, "run %lld%s%s%s", (long long)id,
			 status && strcmp(status, "done") ? " (" : "",
			 status && strcmp(status, "done") ? status : "",
			 status && strcmp(status, "done") ? ")" : "");
	}
	store_train_rows_free(rows, n);
	free(status);
	free(path);
	return rc;
}

/* Whether spec names the file the session's model came from. */
static bool is_loaded(const struct session *s, const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];
	return s->model && s->model->path && realpath(path, a) && realpath(s->model->path, b) &&
	       !strcmp(a, b);
}

/* The loaded model (when there is one) or the run of --run, then each
 * model named, skipping the loaded model when it is drawn already.  A first word that is neither a
 * curve nor a model is reported as an unknown curve. */
static int gather(struct session *s, const struct cmd_args *a, int first, struct sources *ss,
		  struct err *e)
{
	const struct cmd_entry *c = &cmd_curves_entry;
	bool run = cmd_has(c, a, "--run");
	if (run) {
		if (add_run(ss, s, (int64_t)cmd_num(c, a, "--run", 0), e))
			return -1;
	} else if (s->model && add_model(ss, s->model, e)) {
		return -1;
	}
	for (int i = first; i < a->n_pos; i++) {
		char path[PATH_MAX];
		const char *spec = a->pos[i];
		if (model_resolve(spec, path, sizeof path, e)) {
			if (i == 0 && !strpbrk(spec, "/.:"))
				return err_set(e, "%.64s: neither a curve (loss, lr, grad, layers) nor a "
					       "model", spec);
			return -1;
		}
		if (!run && is_loaded(s, path))
			continue; /* drawn already */
		struct model *m = model_open(path, e);
		if (!m)
			return -1;
		int rc = add_model(ss, m, e);
		model_free(m);
		if (rc)
			return -1;
	}
	if (ss->n == 0)
		return session_need_model(s, e);
	return 0;
}

/* The series of `what` for every source, named for the legend: the plain
 * series name for one model, "MODEL name" for several.  Returns how many
 * (0 with e set when a record lacks them). */
static int pick(struct sources *ss, enum what w, struct curve **out, struct err *e)
{
	int n = 0;
	for (int i = 0; i < ss->n; i++) {
		struct curves_record *r = &ss->v[i].rec;
		struct curve *list[CURVES_MAX_LAYERS + 2];
		int k = 0;
		if (w == WHAT_LOSS) {
			list[k++] = &r->loss;
			if (r->val.n)
				list[k++] = &r->val;
		} else if (w == WHAT_LR || w == WHAT_GRAD) {
			list[k++] = w == WHAT_LR ? &r->lr : &r->grad;
		} else {
			for (int l = 0; l < r->n_layer; l++)
				list[k++] = &r->layer[l];
		}
		if (k == 0 || list[0]->n == 0) {
			err_set(e, "%s: its training record has no %s", ss->v[i].name,
				w == WHAT_LR ? "learning rates" : w == WHAT_GRAD ? "gradient norms"
									: "per-layer gradient norms");
			return 0;
		}
		for (int j = 0; j < k; j++) {
			if (ss->n > 1) {
				char name[256];
				snprintf(name, sizeof name, "%s %s", ss->v[i].name, list[j]->name);
				curve_rename(list[j], name);
			}
			out[n++] = list[j];
		}
	}
	return n;
}

/* "shakespeare: loss by step (3000 steps, every 3rd stored; val 12 times)";
 * for several models "loss by step: a, b"; ", log y" after either. */
static void make_title(const struct sources *ss, enum what w, bool log, char *buf, size_t size)
{
	static const char *const what[] = { "loss", "learning rate", "gradient norm",
					    "gradient norm of each layer" };
	size_t n;
	if (ss->n == 1) {
		char kept[128];
		curves_describe(&ss->v[0].rec, w == WHAT_LOSS, kept, sizeof kept);
		n = (size_t)snprintf(buf, size, "%s: %s by step (%s)", ss->v[0].name, what[w], kept);
	} else {
		n = (size_t)snprintf(buf, size, "%s by step:", what[w]);
		for (int i = 0; i < ss->n && n < size; i++)
			n += (size_t)snprintf(buf + n, size - n, "%s %s", i ? "," : "", ss->v[i].name);
	}
	if (log && n < size)
		snprintf(buf + n, size - n, ", log y");
}

/* Writes b to path ("-": standard output, which is s->out here). */
static int write_out(struct session *s, const char *path, const struct render_buf *b,
		     const char *desc, struct err *e)
{
	if (out_is_stdout(path)) {
		fwrite(b->data ? b->data : "", 1, b->len, s->out);
		return 0;
	}
	if (write_file_atomic(path, b->data ? b->data : "", b->len, e))
		return err_prefix(e, "curves");
	if (!s->quiet)
		fprintf(s->out, "wrote %s (%s, %zu bytes)\n", path, desc, b->len);
	return 0;
}

/* The final losses the record states, wrapped to the width. */
static void loss_summary(const struct sources *ss, int width, struct render_buf *b)
{
	for (int i = 0; i < ss->n; i++) {
		const struct curves_record *r = &ss->v[i].rec;
		char line[256], val[32] = "";
		if (isfinite(r->final_val_loss))
			snprintf(val, sizeof val, ", val %.4f", r->final_val_loss);
		snprintf(line, sizeof line, "%s: final train loss %.4f (mean of the last 10%% of steps)%s",
			 ss->v[i].name, r->final_train_loss, val);
		curves_wrap(line, width, b);
	}
}

/* The text of the plot (or of each model's heat strip for layers). */
static void draw(const struct sources *ss, enum what w, struct curve **series,
		 const struct curves_plot_spec *base, struct render_buf *b, bool color)
{
	struct curves_grid g;
	if (w != WHAT_LAYERS) {
		curves_plot(base, &g);
		curves_grid_text(&g, color, b);
		curves_grid_free(&g);
		if (w == WHAT_LOSS)
			loss_summary(ss, base->width, b);
		return;
	}
	for (int i = 0, k = 0; i < ss->n; i++) {
		const struct curves_record *r = &ss->v[i].rec;
		char title[256];
		snprintf(title, sizeof title, "%s: gradient norm of each layer by step%s", ss->v[i].name,
			 base->scale == CURVES_LINEAR ? "" : ", log shading");
		struct curves_heat_spec hs = {
			.rows = (const struct curve *const *)series + k, .n_rows = r->n_layer,
			.width = base->width, .log = base->scale != CURVES_LINEAR, .ascii = base->ascii,
			.title = title,
		};
		curves_heat(&hs, &g);
		curves_grid_text(&g, color, b);
		curves_grid_free(&g);
		k += r->n_layer;
		if (i + 1 < ss->n)
			render_buf_puts(b, "\n");
	}
}

/* What s->out takes: *utf8 unless it is a terminal in a locale that is
 * not UTF-8 (files and pipes get UTF-8, as every command's output does);
 * *color when it is a terminal and NO_COLOR is not set. */
static void out_terminal(const struct session *s, bool *utf8, bool *color)
{
	bool tty = cmd_out_tty(s);
	const char *cs = nl_langinfo(CODESET), *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	*utf8 = !tty || (cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8")));
	*color = tty && !(nc && nc[0]) && term && strcmp(term, "dumb");
}

static int curves_exec(struct session *s, int argc, char **argv, struct err *e)
{
	const struct cmd_entry *c = &cmd_curves_entry;
	struct cmd_args a;
	if (cmd_args_parse(c, argc, argv, &a, e) != 0)
		return -1;
	int w = WHAT_LOSS, first = 0;
	for (int i = 0; a.n_pos > 0 && what_names[i]; i++)
		if (!strcmp(a.pos[0], what_names[i])) {
			w = i;
			first = 1;
		}
	bool log = cmd_has(c, &a, "--log"), linear = cmd_has(c, &a, "--linear");
	if (log && linear)
		return err_set(e, "curves: --log and --linear exclude each other");
	const char *csv = cmd_str(c, &a, "--csv"), *svg = cmd_str(c, &a, "--svg");
	if ((csv && out_check(csv, OUT_STDOUT, e)) || (svg && out_check(svg, OUT_STDOUT, e)))
		return err_prefix(e, "curves");

	struct sources ss = { 0 };
	struct curve **series = xmalloc(CURVES_SERIES * sizeof *series);
	int n = 0, rc = -1;
	if (gather(s, &a, first, &ss, e) || (n = pick(&ss, w, series, e)) == 0)
		goto out;
	bool utf8, color;
	out_terminal(s, &utf8, &color);
	/* loss: log when the values span more than a decade; the learning
	 * rate linear (schedules are linear in it); gradient norms log */
	enum curves_scale scale = log ? CURVES_LOG : linear ? CURVES_LINEAR
				  : w == WHAT_GRAD || w == WHAT_LAYERS ? CURVES_LOG
				  : w == WHAT_LR ? CURVES_LINEAR : CURVES_AUTO;
	struct curves_plot_spec sp = {
		.series = (const struct curve *const *)series, .n_series = n,
		.width = (int)cmd_num(c, &a, "--width", cmd_out_width(s) < 1000 ? cmd_out_width(s) : 1000),
		.height = (int)cmd_num(c, &a, "--height", CURVES_HEIGHT),
		.scale = scale, .ascii = cmd_has(c, &a, "--ascii") || !utf8,
	};
	char title[512];
	make_title(&ss, w, w != WHAT_LAYERS && curves_plot_is_log(&sp), title, sizeof title);
	sp.title = title;

	struct render_buf b;
	render_buf_init(&b);
	if (!(csv && out_is_stdout(csv)) && !(svg && out_is_stdout(svg))) {
		draw(&ss, w, series, &sp, &b, color);
		fwrite(b.data ? b.data : "", 1, b.len, s->out);
	}
	rc = 0;
	if (csv) {
		render_buf_free(&b);
		curves_csv(sp.series, n, &b);
		rc = write_out(s, csv, &b, "CSV", e);
	}
	if (svg && rc == 0) {
		render_buf_free(&b);
		curves_svg(&sp, &b);
		rc = write_out(s, svg, &b, "SVG", e);
	}
	render_buf_free(&b);
out:
	free(series);
	sources_free(&ss);
	return rc;
}

static const struct cmd_opt curves_opts[] = {
	{ "--width", CMD_OPT_INT, "N", 20, 1000, "the width" },
	{ "--height", CMD_OPT_INT, "N", 2, 200, "the height" },
	{ "--log", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--linear", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--csv", CMD_OPT_WORD, "FILE", 0, 0, "the CSV file" },
	{ "--svg", CMD_OPT_WORD, "FILE", 0, 0, "the SVG file" },
	{ "--ascii", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--run", CMD_OPT_INT, "ID", 1, 9007199254740992.0, "the training run" },
	{ NULL },
};

const struct cmd_entry cmd_curves_entry = {
	.name = "curves",
	.usage = "[loss | lr | grad | layers] [MODEL...]",
	.opts = curves_opts,
	.help = "training curves from the model file or a recorded run: loss, lr, gradient norms",
	.long_help =
		"Plots the record the trainer keeps in the model file: loss (train and val,\n"
		"the default, then the final losses the record states), lr, grad (the global\n"
		"gradient norm) or layers (each layer's gradient norm as a shaded strip, a row\n"
		"per layer).  Without MODEL: the loaded model; MODEL... adds other models'\n"
		"curves on the same axes (the legend names them).  Braille dots (2x4 per\n"
		"character; --ascii: one per character), --width N columns (default: the\n"
		"terminal's), --height N plot rows (16).  The y axis is log for grad and\n"
		"layers, linear for lr, and log for loss only when it spans more than a\n"
		"decade; --log or --linear choose.  --csv FILE: a row per recorded step, a\n"
		"column per series; --svg FILE: a figure (FILE -: standard output).  Models\n"
		"of other formats (GPT-2, llama2.c, llm.c) have no training record.  --run ID:\n"
		"instead of the loaded model, the steps `train --db` recorded for training run\n"
		"ID in the session database (every step, even of a run that never finished).",
	.complete = COMPLETE_WORDS,
	.words = what_names,
	.min_args = 0,
	.max_args = CURVES_MODELS + 1,
	.exec = curves_exec,
};
