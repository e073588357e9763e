/*
 * lab.c — the lab's shared machinery (lab-arm.h): arms trained with
 * progress and cancelling, held-out losses, attention entropy, result
 * tables, findings and their JSON record.  The experiments and their
 * registry are in lab-exps.c.
 */
#include "lab-arm.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json-util.h"
#include "train-run.h"
#include "tokenizer.h"

void lab_result_free(struct lab_result *r)
{
	for (int i = 0; i < r->table.rows * r->table.cols; i++)
		free(r->table.cells[i]);
	free(r->table.cells);
	for (int i = 0; i < r->n_findings; i++)
		free(r->findings[i]);
	for (int i = 0; i < r->n_curves; i++)
		curve_free(&r->curves[i]);
	free(r->json);
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ arms */

struct model *lab_model(const struct model_config *c, const struct dataset *d, uint64_t seed,
			struct err *e)
{
	struct model_config cfg = *c;
	cfg.vocab_size = d->tok->vocab_size;
	if (config_check_heads(cfg.d_model, cfg.n_head, e) || config_validate(&cfg, e))
		return NULL;
	struct model *m = model_new(&cfg, e);
	if (m)
		model_init_random(m, seed);
	return m;
}

static void say(const struct lab_ctx *ctx, const char *line)
{
	if (ctx->progress)
		ctx->progress(ctx->progress_ctx, line);
}

/* lab_train's hooks: progress about every 100 ms, cancelling. */
struct arm_progress {
	const struct lab_ctx *ctx;
	const char *exp, *label;
	double t0, last;
};

static bool arm_cancelled(void *p, const struct train_state *s)
{
	(void)s;
	const struct arm_progress *a = p;
	return a->ctx->cancel && *a->ctx->cancel;
}

static void arm_step(void *p, const struct train_state *s)
{
	struct arm_progress *a = p;
	const struct trainer *tr = s->tr;
	double now = now_ms();
	if (now - a->last < 100 && tr->step != tr->hp.steps)
		return;
	a->last = now;
	double per = (now - a->t0) / 1000 / (double)tr->step;
	char line[256];
	snprintf(line, sizeof line, "lab %s: %s: step %ld/%ld  loss %.3f  %.0fs left", a->exp,
		 a->label, tr->step, tr->hp.steps, (double)trainer_last_row(tr)[HIST_LOSS],
		 per * (double)(tr->hp.steps - tr->step));
	say(a->ctx, line);
}

int lab_train(const struct lab_ctx *ctx, const char *exp, const char *label, struct model *m,
	      const struct dataset *d, const struct train_hparams *hp, struct trainer *tr,
	      struct err *e)
{
	struct arm_progress a = { ctx, exp, label, now_ms(), 0 };
	struct train_spec spec = {
		.model = m, .dataset = d, .hp = *hp, .val_every = -1, .threads = ctx->threads,
		.trainer = tr,
	};
	struct train_hooks hooks = { .ctx = &a, .should_stop = arm_cancelled, .on_step = arm_step };
	struct train_outcome out;
	int rc = train_run(&spec, &hooks, &out, e);
	if (rc == 0)
		say(ctx, NULL);
	return rc;
}

int lab_held_out(struct model *m, const struct run_options *o, const struct dataset *d, int B,
		 int n_batches, double *loss, struct err *e)
{
	int T = m->cfg.context;
	*loss = NAN;
	if (d->n_val < (size_t)T + 1)
		return 0;
	struct run *r = run_new(&m->cfg, B, T, RUN_LOGITS);
	int *tokens = xmalloc((size_t)B * T * sizeof *tokens);
	int *targets = xmalloc((size_t)B * T * sizeof *targets);
	double sum = 0;
	long count = 0;
	int rc = 0;
	for (int i = 0; i < n_batches && rc == 0; i++) {
		dataset_val_batch(d, i, n_batches, B, T, tokens, targets);
		rc = model_forward(m, o, tokens, targets, B, T, r, e);
		sum += r->loss * r->n_targets;
		count += r->n_targets;
	}
	if (rc == 0 && count)
		*loss = sum / (double)count;
	free(tokens);
	free(targets);
	run_free(r);
	return rc;
}

double lab_attention_entropy(struct model *m, const struct dataset *d, struct err *e)
{
	int T = m->cfg.context, L = m->cfg.n_layer, H = m->cfg.n_head;
	if (d->n_val < (size_t)T + 1)
		return NAN;
	int *tokens = xmalloc((size_t)T * sizeof *tokens), *targets = xmalloc((size_t)T * sizeof *targets);
	dataset_val_batch(d, 0, 1, 1, T, tokens, targets);
	struct run *r = run_new(&m->cfg, 1, T, RUN_ATTN);
	struct run_options o;
	run_options_native(m, &o);
	double sum = NAN;
	if (model_forward(m, &o, tokens, NULL, 1, T, r, e) == 0) {
		sum = 0;
		for (int l = 0; l < L; l++)
			for (int h = 0; h < H; h++) {
				const float *a = run_att(r, l, 0, h);
				for (size_t k = 0; k < (size_t)T * T; k++)
					if (a[k] > 0)
						sum -= (double)a[k] * log((double)a[k]);
			}
		sum /= (double)L * H * T;
	}
	run_free(r);
	free(tokens);
	free(targets);
	return sum;
}

/* ---------------------------------------------------------------- curves */

void lab_curve(struct lab_result *r, const char *label, const struct trainer *tr)
{
	if (r->n_curves == LAB_MAX_CURVES)
		return;
	size_t n = tr->hist_n, per = (n + LAB_CURVE_POINTS - 1) / LAB_CURVE_POINTS;
	per = per ? per : 1;
	int points = (int)((n + per - 1) / per);
	struct curve *c = &r->curves[r->n_curves++];
	curve_init(c, label, points);
	for (int k = 0; k < points; k++) {
		size_t a = (size_t)k * per, b = a + per < n ? a + per : n;
		double sum = 0;
		for (size_t i = a; i < b; i++)
			sum += tr->hist[i * (size_t)tr->hw + HIST_LOSS];
		c->step[k] = (double)b; /* steps count from 1: the bucket's last */
		c->value[k] = sum / (double)(b - a);
	}
}

/* ---------------------------------------------------------------- tables */

void lab_table_header(struct lab_table *t, int cols, const char *const *names)
{
	t->cols = cols;
	t->rows = 1;
	t->cells = xmalloc((size_t)cols * sizeof *t->cells);
	for (int i = 0; i < cols; i++)
		t->cells[i] = xstrdup(names[i]);
}

void lab_table_row(struct lab_table *t, ...)
{
	t->cells = xrealloc(t->cells, (size_t)(t->rows + 1) * t->cols * sizeof *t->cells);
	va_list ap;
	va_start(ap, t);
	for (int i = 0; i < t->cols; i++) {
		const char *s = va_arg(ap, const char *);
		t->cells[(size_t)t->rows * t->cols + i] = xstrdup(s ? s : "");
	}
	va_end(ap);
	t->rows++;
}

void lab_finding(struct lab_result *r, const char *fmt, ...)
{
	if (r->n_findings == LAB_MAX_FINDINGS)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	r->findings[r->n_findings++] = xstrdup(buf);
}

const char *lab_num(char *buf, size_t size, double x, int decimals)
{
	if (!isfinite(x))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.*f", decimals, x);
	return buf;
}

static json_t *jstr(const char *s)
{
	json_t *v = json_string(s);
	return v ? v : ju_check(json_null()); /* text that is not UTF-8 is left out */
}

void lab_result_json(struct lab_result *r, const char *name, bool quick)
{
	r->quick = quick;
	json_t *o = ju_check(json_object()), *rows = ju_check(json_array()), *f = ju_check(json_array());
	for (int i = 0; i < r->table.rows; i++) {
		json_t *row = ju_check(json_array());
		for (int j = 0; j < r->table.cols; j++)
			ju_append(row, jstr(r->table.cells[(size_t)i * r->table.cols + j]));
		ju_append(rows, row);
	}
	for (int i = 0; i < r->n_findings; i++)
		ju_append(f, jstr(r->findings[i]));
	ju_set(o, "experiment", jstr(name));
	ju_set(o, "size", jstr(quick ? "quick" : "full"));
	ju_set(o, "partial", json_boolean(r->partial));
	ju_set(o, "table", rows);
	ju_set(o, "findings", f);
	json_t *curves = ju_check(json_array());
	for (int i = 0; i < r->n_curves; i++) {
		const struct curve *c = &r->curves[i];
		json_t *co = ju_check(json_object()), *x = ju_check(json_array());
		json_t *y = ju_check(json_array());
		for (int k = 0; k < c->n; k++) {
			ju_append(x, json_integer((json_int_t)c->step[k]));
			ju_append(y, ju_real(c->value[k]));
		}
		ju_set(co, "arm", jstr(c->name));
		ju_set(co, "step", x);
		ju_set(co, "loss", y);
		ju_append(curves, co);
	}
	ju_set(o, "curves", curves);
	free(r->json);
	r->json = ju_dump(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(o);
}
