/*
 * store-runs.c — runs recorded beside the sessions (store.h): training runs
 * and their steps (`attnscope train --db`, read back by `curves --run`),
 * and lab runs.
 */
#define _GNU_SOURCE
#include "store-db.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

/* -------------------------------------------------------------------- lab */

int64_t store_lab_run(struct session *s, const struct store_lab_row *r, struct err *e)
{
	if (!s->store)
		return err_set(e, "no session database");
	struct store *st = s->store;
	if (st->dead)
		return err_set(e, "not recording: an earlier write to %s failed", st->path);
	if (store_begin_session(s, e) != 0)
		goto stop;
	sqlite3_stmt *q = db_stmt(st, S_INS_LAB, e);
	if (!q)
		goto stop;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(bind_str(q, 2, r->experiment));
	B(bind_str(q, 3, r->size));
	B(r->data_path ? bind_str(q, 4, r->data_path) : sqlite3_bind_null(q, 4));
	B(bind_str(q, 5, r->status));
	B(sqlite3_bind_double(q, 6, r->seconds));
	B(sqlite3_bind_int(q, 7, r->threads));
	B(bind_str(q, 8, r->result_json));
	if (db_run_bound(st, q, rc, "binding a lab run", "recording a lab run", e) != 0)
		goto stop;
	return sqlite3_last_insert_rowid(st->db);
stop:
	snprintf(s->store_note, sizeof s->store_note, "not recording");
	return rec_stop_reported(st, e);
}

/* --------------------------------------------------------------- training */

int64_t store_training_run(struct store *st, const struct store_train_run *r, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = db_stmt(st, S_INS_TRAIN, e);
	if (!q || db_begin(st, e) != 0)
		return -1;
	int rc = SQLITE_OK;
	B(bind_str(q, 1, r->model_path));
	B(bind_str(q, 2, r->data_path));
	B(sqlite3_bind_int64(q, 3, r->data_bytes));
	B(bind_str(q, 4, r->data_hash));
	B(bind_str(q, 5, r->config_json));
	B(bind_str(q, 6, r->args_json));
	B(sqlite3_bind_int64(q, 7, (sqlite3_int64)r->seed));
	B(sqlite3_bind_int(q, 8, r->threads));
	B(bind_id(q, 9, r->resumed_from));
	B(bind_str(q, 10, ATTNSCOPE_VERSION));
	if (db_run_bound(st, q, rc, "binding a training run", "recording a training run", e) != 0)
		goto fail;
	int64_t id = sqlite3_last_insert_rowid(st->db);
	if (db_commit(st, e) != 0)
		goto fail;
	return id;
fail:
	db_rollback(st);
	return -1;
}

int store_training_steps(struct store *st, int64_t run_id, const struct store_train_step *steps,
			 int n, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = db_stmt(st, S_INS_STEP, e);
	if (!q || db_begin(st, e) != 0)
		return -1;
	char *json = NULL;
	size_t cap = 0;
	for (int i = 0; i < n; i++) {
		const struct store_train_step *p = &steps[i];
		int rc = SQLITE_OK;
		B(sqlite3_bind_int64(q, 1, run_id));
		B(sqlite3_bind_int64(q, 2, p->step));
		B(bind_num(q, 3, p->loss));
		B(bind_num(q, 4, p->lr));
		B(bind_num(q, 5, p->grad_norm));
		B(bind_num(q, 6, p->val_loss));
		if (p->layer_grad_norms && p->n_layers > 0) {
			size_t need = (size_t)p->n_layers * 24 + 3;
			if (need > cap) {
				cap = need;
				json = xrealloc(json, cap);
			}
			size_t k = 0;
			json[k++] = '[';
			for (int l = 0; l < p->n_layers; l++) {
				float g = p->layer_grad_norms[l];
				if (isfinite(g))
					k += (size_t)snprintf(json + k, cap - k, "%s%.9g", l ? "," : "", g);
				else
					k += (size_t)snprintf(json + k, cap - k, "%snull", l ? "," : "");
			}
			json[k++] = ']';
			json[k] = '\0';
			B(bind_str(q, 7, json));
		} else {
			B(sqlite3_bind_null(q, 7));
		}
		if (db_run_bound(st, q, rc, "binding a training step", "recording a training step", e) != 0)
			goto fail;
	}
	free(json);
	if (db_commit(st, e) != 0) {
		db_rollback(st);
		return -1;
	}
	return 0;
fail:
	free(json);
	db_rollback(st);
	return -1;
}

/* "[1.5,null,2]" as written by store_training_steps: NAN for null; what
 * does not parse ends the list. */
static void read_layer_norms(const char *s, struct store_train_row *r)
{
	r->layer_grad_norms = NULL;
	r->n_layers = 0;
	if (!s || *s++ != '[')
		return;
	int cap = 0;
	while (*s && *s != ']' && r->n_layers < 1 << 16) {
		double v = NAN;
		char *end = (char *)s;
		if (!strncmp(s, "null", 4))
			end = (char *)s + 4;
		else
			v = strtod(s, &end);
		if (end == s)
			break;
		if (r->n_layers == cap) {
			cap = cap ? 2 * cap : 16;
			r->layer_grad_norms = xrealloc(r->layer_grad_norms, (size_t)cap * sizeof(double));
		}
		r->layer_grad_norms[r->n_layers++] = v;
		s = *end == ',' ? end + 1 : end;
	}
}

static void read_train_row(sqlite3_stmt *q, void *row)
{
	struct store_train_row *r = row;
	r->step = sqlite3_column_int64(q, 0);
	r->loss = col_num(q, 1);
	r->lr = col_num(q, 2);
	r->grad_norm = col_num(q, 3);
	r->val_loss = col_num(q, 4);
	read_layer_norms((const char *)sqlite3_column_text(q, 5), r);
}

static void free_train_row(void *row)
{
	free(((struct store_train_row *)row)->layer_grad_norms);
}

static const struct row_type train_rows = { sizeof(struct store_train_row), 256, read_train_row,
					    free_train_row, "reading training steps" };

/* A training run's status and model path. */
struct train_run_head {
	char *status, *model_path;
};

static void read_train_run_head(sqlite3_stmt *q, void *row)
{
	struct train_run_head *r = row;
	r->status = col_str(q, 0);
	r->model_path = col_str(q, 1);
}

static const struct row_type train_run_row = { sizeof(struct train_run_head), 1,
					       read_train_run_head, NULL,
					       "reading a training run" };

int store_get_training_steps(struct store *st, int64_t run_id, struct store_train_row **rows,
			     int *n, char **status, char **model_path, struct err *e)
{
	*rows = NULL;
	*n = 0;
	*status = *model_path = NULL;
	if (!st)
		return err_set(e, "no session database");
	struct train_run_head head = { 0 };
	int rc = db_row(st, S_GET_TRAIN, &run_id, 1, &train_run_row, &head, e);
	if (rc <= 0)
		return rc == 0 ? err_set(e, "no training run %lld in %s", (long long)run_id, st->path)
			       : -1;
	void *v;
	if (db_rows(st, S_GET_STEPS, &run_id, 1, &train_rows, &v, n, e) != 0) {
		free(head.status);
		free(head.model_path);
		return -1;
	}
	*rows = v;
	*status = head.status;
	*model_path = head.model_path;
	return 0;
}

void store_train_rows_free(struct store_train_row *v, int n)
{
	db_rows_free(&train_rows, v, n);
}

int store_training_finish(struct store *st, int64_t run_id, const char *status, int64_t steps_done,
			  int64_t tokens_seen, double final_loss, double val_loss, double wall_s,
			  const char *message, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = db_stmt(st, S_FINISH_TRAIN, e);
	if (!q || db_begin(st, e) != 0)
		return -1;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, run_id));
	B(bind_str(q, 2, status ? status : "done"));
	B(sqlite3_bind_int64(q, 3, steps_done));
	B(sqlite3_bind_int64(q, 4, tokens_seen));
	B(bind_num(q, 5, final_loss));
	B(bind_num(q, 6, val_loss));
	B(bind_num(q, 7, wall_s));
	B(bind_str(q, 8, message));
	if (db_run_bound(st, q, rc, "binding a training run", "finishing a training run", e) != 0 ||
	    db_commit(st, e) != 0)
		goto fail;
	return 0;
fail:
	db_rollback(st);
	return -1;
}
