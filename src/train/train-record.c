/*
 * train-record.c — the training record's JSON, written from a run and
 * read back into arrays (train-record.h).
 */
#include "train-record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json-util.h"

/* ------------------------------------------------------------- writing */

/* The JSON training record stored as the checkpoint's "training" metadata:
 * what ran, on what, for how long, the outcome, and a history of at most
 * ~1000 steps (every k-th step, plus the last). */
char *train_record_json(const struct train_spec *s, const struct trainer *t,
			const struct dataset *d, double seconds, bool complete)
{
	const struct model_config *c = &t->m->cfg;
	json_t *r = ju_check(json_object());
	json_t *cmd = json_string(s->n_cmds ? s->cmds[0] : "?");
	ju_set(r, "command", cmd ? cmd : json_null());
	if (s->n_cmds > 1) {
		json_t *a = ju_check(json_array());
		for (int i = 1; i < s->n_cmds; i++) {
			json_t *v = json_string(s->cmds[i]);
			ju_append(a, v ? v : json_null());
		}
		ju_set(r, "resumed", a);
	}
	json_t *data = json_string(s->data);
	ju_set(r, "data", data ? data : json_null());
	if (s->from) {
		json_t *from = json_string(s->from);
		ju_set(r, "from", from ? from : json_null());
	}
	ju_set(r, "data_bytes", json_integer((json_int_t)d->bytes));
	ju_set(r, "data_tokens", json_integer((json_int_t)d->n));
	ju_set(r, "train_tokens", json_integer((json_int_t)d->n_train));
	ju_set(r, "val_tokens", json_integer((json_int_t)d->n_val));
	ju_set(r, "unk_tokens", json_integer((json_int_t)d->n_unk));
	ju_set(r, "min_count", json_integer(s->min_count));
	ju_set(r, "line_starts", json_boolean(s->line_starts));
	ju_set(r, "repeat", json_real(s->repeat));
	if (s->repeat > 0) {
		ju_set(r, "repeat_min", json_integer(s->repeat_min));
		ju_set(r, "repeat_max", json_integer(s->repeat_max));
		ju_set(r, "repeat_random", json_boolean(s->repeat_random));
	}
	ju_set(r, "objective", json_string(train_objective_name(s->hp.objective)));
	ju_set(r, "seed", json_integer((json_int_t)s->hp.seed));
	ju_set(r, "steps", json_integer(s->hp.steps));
	ju_set(r, "steps_done", json_integer(t->step));
	ju_set(r, "complete", json_boolean(complete));
	ju_set(r, "batch", json_integer(s->hp.batch));
	ju_set(r, "context", json_integer(c->context));
	ju_set(r, "lr", json_real(s->hp.lr));
	ju_set(r, "warmup", json_integer(s->hp.warmup));
	ju_set(r, "min_lr_frac", json_real(s->hp.min_lr_frac));
	ju_set(r, "weight_decay", json_real(s->hp.weight_decay));
	ju_set(r, "clip", json_real(s->hp.clip));
	ju_set(r, "val_fraction", json_real(s->val_fraction));
	ju_set(r, "params", json_integer((json_int_t)t->m->n_params));
	ju_set(r, "tokens_seen", json_integer((json_int_t)t->tokens));
	ju_set(r, "final_train_loss", ju_real(trainer_final_loss(t)));
	ju_set(r, "final_val_loss", ju_real(trainer_last_val(t)));
	if (s->hp.objective == OBJ_MLM)
		ju_set(r, "final_val_masked_accuracy", ju_real(t->val_acc));
	ju_set(r, "wall_seconds", json_real(round(seconds * 10) / 10));
	ju_set(r, "threads", json_integer(s->threads > 0 ? s->threads : cpu_count()));
	ju_set(r, "cores", json_integer(cpu_count()));

	size_t n = t->hist_n, k = n > 1000 ? (n + 999) / 1000 : 1;
	json_t *h = ju_check(json_object());
	json_t *hs = ju_check(json_array()), *hl = ju_check(json_array()), *hr = ju_check(json_array());
	json_t *hg = ju_check(json_array()), *hy = ju_check(json_array());
	size_t *rows = xmalloc((n / k + 2) * sizeof *rows), nr = 0;
	for (size_t i = 0; i < n; i += k)
		rows[nr++] = i;
	if (nr && rows[nr - 1] != n - 1)
		rows[nr++] = n - 1;
	for (size_t ri = 0; ri < nr; ri++) {
		size_t j = rows[ri];
		const float *row = t->hist + j * (size_t)t->hw;
		ju_append(hs, json_integer((json_int_t)j + 1));
		ju_append(hl, ju_real(row[0]));
		ju_append(hr, ju_real(row[1]));
		ju_append(hg, ju_real(row[2]));
		json_t *ly = ju_check(json_array());
		for (int l = 0; l < c->n_layer; l++)
			ju_append(ly, ju_real(row[3 + l]));
		ju_append(hy, ly);
	}
	free(rows);
	ju_set(h, "every", json_integer((json_int_t)k));
	ju_set(h, "step", hs);
	ju_set(h, "loss", hl);
	ju_set(h, "lr", hr);
	ju_set(h, "grad_norm", hg);
	ju_set(h, "layer_grad_norm", hy);
	ju_set(r, "history", h);
	json_t *v = ju_check(json_object()), *vs = ju_check(json_array()), *vl = ju_check(json_array());
	for (size_t i = 0; i < t->val_n; i++) {
		ju_append(vs, json_integer((json_int_t)t->val[2 * i]));
		ju_append(vl, ju_real(t->val[2 * i + 1]));
	}
	ju_set(v, "step", vs);
	ju_set(v, "loss", vl);
	ju_set(r, "val", v);
	char *text = ju_dump(r, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(r);
	return text;
}

/* ------------------------------------------------------------- reading */

void train_record_free(struct train_record *r)
{
	free(r->step);
	free(r->loss);
	free(r->lr);
	free(r->grad);
	for (int l = 0; l < r->n_layer; l++)
		free(r->layer[l]);
	free(r->layer);
	free(r->val_step);
	free(r->val_loss);
	memset(r, 0, sizeof *r);
}

/* Keeps a message on one line: JSON error texts quote the input. */
static int one_line(struct err *e)
{
	if (e)
		for (char *p = e->msg; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	return -1;
}

/* x as a value: a finite number, or null (NAN) when null_ok.  False for
 * anything else. */
static bool number_of(const json_t *x, bool null_ok, double *v)
{
	if (json_is_number(x) && isfinite(json_number_value(x))) {
		*v = json_number_value(x);
		return true;
	}
	*v = NAN;
	return null_ok && json_is_null(x);
}

/* Reads o[key], an array of numbers, into *out (*n of them).  Steps must
 * be finite numbers; values may also be null (NAN).  want >= 0: the
 * length it must have.  An absent key is 0 with *out NULL unless
 * required. */
static int read_array(const json_t *o, const char *obj, const char *key, bool steps, int want,
		      bool required, double **out, int *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	const json_t *a = json_object_get(o, key);
	if (!a) {
		if (required)
			return err_set(e, "training record: %s.%s is missing", obj, key);
		return 0;
	}
	if (!json_is_array(a))
		return err_set(e, "training record: %s.%s is not an array", obj, key);
	size_t len = json_array_size(a);
	if (len > (size_t)(1 << 28))
		return err_set(e, "training record: %s.%s is too long", obj, key);
	if (want >= 0 && len != (size_t)want)
		return err_set(e, "training record: %s.%s has %zu values for %d steps", obj, key, len,
			       want);
	double *v = xmalloc((len + 1) * sizeof *v);
	for (size_t i = 0; i < len; i++)
		if (!number_of(json_array_get(a, i), !steps, &v[i])) {
			free(v);
			return err_set(e, "training record: %s.%s[%zu] is not a %s", obj, key, i,
				       steps ? "step number" : "number");
		}
	*out = v;
	*n = (int)len;
	return 0;
}

/* history.layer_grad_norm: r->n rows of the same number of layers. */
static int read_layers(const json_t *h, struct train_record *r, struct err *e)
{
	const json_t *a = json_object_get(h, "layer_grad_norm");
	int n = r->n;
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) != (size_t)n)
		return err_set(e, "training record: history.layer_grad_norm needs one row per step");
	size_t L = n ? json_array_size(json_array_get(a, 0)) : 0;
	if (L > TRAIN_RECORD_MAX_LAYERS)
		return err_set(e, "training record: history.layer_grad_norm has more than %d layers",
			       TRAIN_RECORD_MAX_LAYERS);
	for (int i = 0; i < n; i++) {
		const json_t *row = json_array_get(a, (size_t)i);
		if (!json_is_array(row) || json_array_size(row) != L)
			return err_set(e, "training record: history.layer_grad_norm[%d] is not a row of "
				       "%zu numbers", i, L);
	}
	r->layer = xcalloc(L + 1, sizeof *r->layer);
	for (size_t l = 0; l < L; l++) {
		double *v = xmalloc(((size_t)n + 1) * sizeof *v);
		r->layer[r->n_layer++] = v;
		for (int i = 0; i < n; i++)
			if (!number_of(json_array_get(json_array_get(a, (size_t)i), l), true, &v[i]))
				return err_set(e, "training record: history.layer_grad_norm[%d][%zu] is "
					       "not a number", i, l);
	}
	return 0;
}

/* The "history" object: steps, then each array of one value per step. */
static int read_history(const json_t *h, struct train_record *r, struct err *e)
{
	if (!json_is_object(h))
		return err_set(e, "training record: no \"history\" object");
	int n, k;
	if (read_array(h, "history", "step", true, -1, true, &r->step, &n, e))
		return -1;
	r->n = n;
	int rc = read_array(h, "history", "loss", false, n, true, &r->loss, &k, e);
	if (!rc)
		rc = read_array(h, "history", "lr", false, n, false, &r->lr, &k, e);
	if (!rc)
		rc = read_array(h, "history", "grad_norm", false, n, false, &r->grad, &k, e);
	if (!rc)
		rc = read_layers(h, r, e);
	const json_t *every = json_object_get(h, "every");
	r->every = json_is_integer(every) && json_integer_value(every) >= 1 ?
		   (long)json_integer_value(every) : 1;
	return rc;
}

/* The "val" object: loss by step (optional). */
static int read_val(const json_t *v, struct train_record *r, struct err *e)
{
	if (!v)
		return 0;
	if (!json_is_object(v))
		return err_set(e, "training record: \"val\" is not an object");
	int n, k;
	if (read_array(v, "val", "step", true, -1, true, &r->val_step, &n, e))
		return -1;
	r->n_val = n;
	return read_array(v, "val", "loss", false, n, true, &r->val_loss, &k, e);
}

static long get_long(const json_t *o, const char *key)
{
	const json_t *x = json_object_get(o, key);
	return json_is_integer(x) && json_integer_value(x) >= 0 ? (long)json_integer_value(x) : -1;
}

static double get_real(const json_t *o, const char *key)
{
	const json_t *x = json_object_get(o, key);
	return json_is_number(x) ? json_number_value(x) : NAN;
}

int train_record_parse(const char *json, size_t len, struct train_record *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &jerr);
	if (!root) {
		err_set(e, "training record: invalid JSON (line %d, column %d: %s)", jerr.line,
			jerr.column, jerr.text);
		return one_line(e);
	}
	int rc = 0;
	if (!json_is_object(root))
		rc = err_set(e, "training record: not a JSON object");
	if (!rc)
		rc = read_history(json_object_get(root, "history"), r, e);
	if (!rc)
		rc = read_val(json_object_get(root, "val"), r, e);
	if (!rc) {
		r->steps = get_long(root, "steps");
		r->steps_done = get_long(root, "steps_done");
		r->final_train_loss = get_real(root, "final_train_loss");
		r->final_val_loss = get_real(root, "final_val_loss");
	}
	json_decref(root);
	if (rc)
		train_record_free(r);
	return rc;
}
