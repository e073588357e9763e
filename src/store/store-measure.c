/*
 * store-measure.c — what a session measures (store.h): a measurement after
 * every finished run (store_measure, hooked by store_attach) with a
 * head_stats row per head, the head scores the analysis commands add, the
 * measurements read back, and sweeps.
 */
#define _GNU_SOURCE
#include "store-db.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "heads.h"

/* ------------------------------------------------------------- recording */

/* A head_stats row from heads.h scores; the role only when induction was
 * measured (without it an induction head would get another label). */
static void head_row_from(struct store_head_row *r, int layer, int head,
			  const struct head_scores *sc, bool with_role)
{
	r->layer = layer;
	r->head = head;
	r->entropy = sc->entropy;
	r->max_weight = sc->max_weight;
	r->prev_token = sc->prev_token;
	r->first_token = sc->first_token;
	r->self = sc->self;
	r->local = sc->local;
	r->mean_distance = sc->mean_distance;
	r->induction = sc->induction;
	r->delim = sc->delim;
	r->delim_share = sc->delim_share;
	r->sink = sc->sink;
	r->sink_key = sc->sink_key;
	r->offset = sc->offset;
	r->offset_weight = sc->offset_weight;
	r->role = with_role && !isnan(sc->induction) ? heads_role_name(sc->role) : NULL;
}

/* Inside a transaction: the head rows of measurement mid. */
static int put_heads(struct store *st, int64_t mid, const struct store_head_row *rows, int n,
		     struct err *e)
{
	sqlite3_stmt *q = db_stmt(st, S_UPSERT_HEAD, e);
	if (!q)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct store_head_row *r = &rows[i];
		int rc = SQLITE_OK;
		B(sqlite3_bind_int64(q, 1, mid));
		B(sqlite3_bind_int(q, 2, r->layer));
		B(sqlite3_bind_int(q, 3, r->head));
		B(bind_num(q, 4, r->entropy));
		B(bind_num(q, 5, r->max_weight));
		B(bind_num(q, 6, r->prev_token));
		B(bind_num(q, 7, r->first_token));
		B(bind_num(q, 8, r->self));
		B(bind_num(q, 9, r->local));
		B(bind_num(q, 10, r->mean_distance));
		B(bind_num(q, 11, r->induction));
		B(bind_str(q, 12, r->role));
		B(bind_num(q, 13, r->delim));
		B(bind_num(q, 14, r->delim_share));
		B(bind_num(q, 15, r->sink));
		B(sqlite3_bind_int(q, 16, r->sink_key));
		B(sqlite3_bind_int(q, 17, r->offset));
		B(bind_num(q, 18, r->offset_weight));
		if (db_run_bound(st, q, rc, "binding head stats", "recording head stats", e) != 0)
			return -1;
	}
	return 0;
}

void store_attach(struct session *s, struct store *st)
{
	s->store = st;
	s->on_run = st ? store_measure : NULL;
}

void store_measure(struct session *s)
{
	if (!rec_live(s) || s->store->suppress > 0 || !session_ready(s))
		return;
	struct store *st = s->store;
	const struct model_config *c = &s->model->cfg;
	struct model_ident id;
	rec_model_ident(st, s, &id);
	char variant[512];
	session_variant(s, variant, sizeof variant);
	char *abl = rec_ablated_list(s->model, &s->opt);
	/* every score but induction (that one needs its own forward pass: the
	 * analysis commands add it, and the role, with store_head_scores) */
	int nh = c->n_layer * c->n_head;
	struct head_scores *sc = xcalloc((size_t)nh, sizeof *sc);
	bool *delim = xmalloc((size_t)s->n_tokens * sizeof *delim);
	heads_delimiters(s->model->tok, s->tokens, s->n_tokens, delim);
	heads_score_run(c, s->run, delim, NULL, sc);
	free(delim);
	struct store_head_row *rows = xcalloc((size_t)nh, sizeof *rows);
	for (int i = 0; i < nh; i++)
		head_row_from(&rows[i], i / c->n_head, i % c->n_head, &sc[i], false);
	free(sc);
	double loss = s->run->loss, base = s->base->loss;

	struct err e;
	sqlite3_stmt *q = NULL;
	if (db_begin(st, &e) != 0 || rec_ensure_session(st, s, &id, &e) != 0)
		goto fail;
	q = db_stmt(st, S_INS_MEAS, &e);
	if (!q)
		goto fail;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(bind_id(q, 2, st->depth > 0 ? st->stack[st->depth - 1] : 0));
	B(bind_str(q, 3, id.name));
	B(bind_str(q, 4, id.has_sha ? id.sha : NULL));
	B(bind_str(q, 5, variant[0] ? variant : "native"));
	B(sqlite3_bind_int(q, 6, s->opt.kv_heads));
	B(bind_str(q, 7, norm_place_name(s->opt.placement)));
	B(bind_str(q, 8, mask_kind_name(s->opt.mask)));
	B(s->opt.mask == MASK_WINDOW ? sqlite3_bind_int(q, 9, s->opt.window) : sqlite3_bind_null(q, 9));
	B(sqlite3_bind_int(q, 10, s->opt.scale));
	B(bind_str(q, 11, abl));
	B(bind_bytes(q, 12, s->text ? s->text : "", s->text ? strlen(s->text) : 0));
	B(sqlite3_bind_int(q, 13, s->n_tokens));
	B(bind_num(q, 14, s->run->forward_ms));
	B(bind_num(q, 15, session_kv_bytes(s, &s->opt)));
	B(bind_num(q, 16, loss));
	B(bind_num(q, 17, base));
	B(bind_num(q, 18, s->cmp.delta_loss));
	B(bind_num(q, 19, isnan(loss) ? NAN : exp(loss)));
	B(bind_num(q, 20, s->cmp.kl));
	B(bind_num(q, 21, s->cmp.top1_agree));
	B(sqlite3_bind_int(q, 22, s->threads));
	B(bind_str(q, 23, pitfall_name(s->opt.pitfall)));
	if (db_run_bound(st, q, rc, "binding a measurement", "recording a measurement", &e) != 0)
		goto fail;
	int64_t mid = sqlite3_last_insert_rowid(st->db);
	if (put_heads(st, mid, rows, nh, &e) != 0)
		goto fail;
	bool model_changed = (id.name == NULL) != (st->session_model == NULL) ||
			     (id.name && strcmp(id.name, st->session_model));
	if (model_changed) {
		sqlite3_stmt *u = db_stmt(st, S_SESSION_MODEL, &e);
		if (!u)
			goto fail;
		rc = SQLITE_OK;
		B(sqlite3_bind_int64(u, 1, st->session_id));
		B(bind_str(u, 2, id.name));
		B(bind_str(u, 3, id.has_sha ? id.sha : NULL));
		if (db_run_bound(st, u, rc, "binding a session", "recording the session's model", &e) != 0)
			goto fail;
	}
	if (db_commit(st, &e) != 0)
		goto fail;
	if (model_changed) {
		free(st->session_model);
		st->session_model = id.name ? xstrdup(id.name) : NULL;
	}
	st->last_measurement = mid;
	free(abl);
	free(rows);
	return;
fail:
	db_rollback(st);
	rec_stop(s, &e);
	free(abl);
	free(rows);
}

/* ------------------------------------------------------------ head scores */

int store_head_scores(struct store *st, int64_t measurement_id, const struct head_scores *scores,
		      int n_layer, int n_head, struct err *e)
{
	int nh = n_layer * n_head;
	struct store_head_row *rows = xcalloc((size_t)(nh > 0 ? nh : 1), sizeof *rows);
	for (int i = 0; i < nh; i++)
		head_row_from(&rows[i], i / n_head, i % n_head, &scores[i], true);
	int rc = store_head_stats(st, measurement_id, rows, nh, e);
	free(rows);
	return rc;
}

int store_head_stats(struct store *st, int64_t measurement_id, const struct store_head_row *rows,
		     int n, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	if (st->dead)
		return err_set(e, "not recording: an earlier write to %s failed", st->path);
	if (db_begin(st, e) != 0)
		return rec_stop_reported(st, e);
	if (put_heads(st, measurement_id, rows, n, e) != 0 || db_commit(st, e) != 0) {
		db_rollback(st);
		return rec_stop_reported(st, e);
	}
	return 0;
}

static void read_head_row(sqlite3_stmt *q, void *row)
{
	struct store_head_row *r = row;
	r->layer = (int)sqlite3_column_int(q, 0);
	r->head = (int)sqlite3_column_int(q, 1);
	r->entropy = col_num(q, 2);
	r->max_weight = col_num(q, 3);
	r->prev_token = col_num(q, 4);
	r->first_token = col_num(q, 5);
	r->self = col_num(q, 6);
	r->local = col_num(q, 7);
	r->mean_distance = col_num(q, 8);
	r->induction = col_num(q, 9);
	r->role = col_str(q, 10);
	r->delim = col_num(q, 11);
	r->delim_share = col_num(q, 12);
	r->sink = col_num(q, 13);
	r->sink_key = sqlite3_column_int(q, 14);
	r->offset = sqlite3_column_int(q, 15);
	r->offset_weight = col_num(q, 16);
}

static void free_head_row(void *row)
{
	free((char *)((struct store_head_row *)row)->role);
}

static const struct row_type head_rows = { sizeof(struct store_head_row), 64, read_head_row,
					   free_head_row, "reading head stats" };

int store_get_head_stats(struct store *st, int64_t measurement_id, struct store_head_row **rows,
			 int *n, struct err *e)
{
	void *v;
	int rc = db_rows(st, S_GET_HEADS, &measurement_id, 1, &head_rows, &v, n, e);
	*rows = v;
	return rc;
}

void store_head_rows_free(struct store_head_row *rows, int n)
{
	db_rows_free(&head_rows, rows, n);
}

/* ----------------------------------------------------------- measurements */

static void read_measurement(sqlite3_stmt *q, void *row)
{
	struct store_measurement *m = row;
	m->id = sqlite3_column_int64(q, 0);
	m->session_id = sqlite3_column_int64(q, 1);
	m->command_seq = col_int(q, 2, 0);
	m->created_at = col_str(q, 3);
	m->model = col_str(q, 4);
	m->model_sha256 = col_str(q, 5);
	m->variant = col_str(q, 6);
	m->kv_heads = (int)col_int(q, 7, 0);
	m->norm = col_str(q, 8);
	m->mask = col_str(q, 9);
	m->window = (int)col_int(q, 10, -1);
	m->scale = (int)col_int(q, 11, 1);
	m->ablated = col_str(q, 12);
	m->text = col_bytes(q, 13, &m->text_len);
	m->n_tokens = (int)col_int(q, 14, 0);
	m->forward_ms = col_num(q, 15);
	m->kv_cache_bytes = col_num(q, 16);
	m->loss = col_num(q, 17);
	m->base_loss = col_num(q, 18);
	m->delta_loss = col_num(q, 19);
	m->ppl = col_num(q, 20);
	m->kl_vs_baseline = col_num(q, 21);
	m->top1_agree = col_num(q, 22);
	m->pitfall = col_str(q, 24); /* NULL in rows from before schema 5 */
	m->threads = (int)col_int(q, 23, 0);
}

static void free_measurement(void *row)
{
	store_measurement_free(row);
}

static const struct row_type measurement_rows = { sizeof(struct store_measurement), 32,
						  read_measurement, free_measurement,
						  "reading measurements" };

int store_get_measurements(struct store *st, int64_t session_id, int64_t last,
			   struct store_measurement **out, int *n, struct err *e)
{
	int64_t args[] = { session_id, last };
	void *rows;
	if (db_rows(st, S_GET_MEAS, args, 2, &measurement_rows, &rows, n, e) != 0) {
		*out = NULL;
		return -1;
	}
	struct store_measurement *v = rows;
	/* newest first from the query; id order for the caller */
	for (int i = 0, j = *n - 1; i < j; i++, j--) {
		struct store_measurement t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	*out = v;
	return 0;
}

static const struct row_type count_row = { sizeof(int64_t), 1, db_read_int64, NULL,
					   "counting measurements" };

int store_count_measurements(struct store *st, int64_t session_id, int64_t *count, struct err *e)
{
	int rc = db_row(st, S_COUNT_MEAS, &session_id, 1, &count_row, count, e);
	return rc > 0 ? 0 : rc < 0 ? -1 : db_err(st, e, "counting measurements");
}

static const struct row_type measurement_row = { sizeof(struct store_measurement), 1,
						 read_measurement, NULL, "reading a measurement" };

int store_get_measurement(struct store *st, int64_t id, struct store_measurement *out,
			  struct err *e)
{
	memset(out, 0, sizeof *out);
	int rc = db_row(st, S_GET_MEAS_ONE, &id, 1, &measurement_row, out, e);
	if (rc != 0)
		return rc > 0 ? 0 : -1;
	return err_set(e, "no measurement %lld (measurements lists them)", (long long)id);
}

void store_measurement_free(struct store_measurement *m)
{
	free(m->created_at);
	free(m->model);
	free(m->model_sha256);
	free(m->variant);
	free(m->pitfall);
	free(m->norm);
	free(m->mask);
	free(m->ablated);
	free(m->text);
	memset(m, 0, sizeof *m);
}

void store_measurements_free(struct store_measurement *v, int n)
{
	db_rows_free(&measurement_rows, v, n);
}

/* ------------------------------------------------------------------ sweeps */

/* Inside a transaction: one row of sweep_entries (head -1: the layer). */
static int put_sweep_entry(struct store *st, sqlite3_stmt *q, int64_t sweep_id, int layer, int head,
			   const struct ablation *a, struct err *e)
{
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, sweep_id));
	B(sqlite3_bind_int(q, 2, layer));
	B(head >= 0 ? sqlite3_bind_int(q, 3, head) : sqlite3_bind_null(q, 3));
	B(bind_num(q, 4, a->delta_loss));
	B(bind_num(q, 5, a->kl));
	B(bind_num(q, 6, a->top1_agree));
	return db_run_bound(st, q, rc, "binding a sweep entry", "recording a sweep entry", e);
}

int64_t store_sweep(struct session *s, const struct sweep_result *r, const char *metric,
		    const char *source, struct err *e)
{
	if (!s->store)
		return err_set(e, "no session database");
	struct store *st = s->store;
	if (st->dead)
		return err_set(e, "not recording: an earlier write to %s failed", st->path);
	if (store_begin_session(s, e) != 0)
		goto stop;
	/* the variant description of the sweep's (unablated) options */
	char options[512];
	session_variant_of(s, &r->opt, options, sizeof options);
	if (!options[0])
		snprintf(options, sizeof options, "native");

	sqlite3_stmt *q = db_stmt(st, S_INS_SWEEP, e);
	sqlite3_stmt *qe = q ? db_stmt(st, S_INS_SWEEP_ENTRY, e) : NULL;
	if (!qe || db_begin(st, e) != 0)
		goto stop;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(bind_id(q, 2, st->last_measurement));
	B(bind_str(q, 3, metric ? metric : "loss"));
	B(bind_str(q, 4, source ? source : "text"));
	B(sqlite3_bind_int(q, 5, r->B * r->T));
	B(bind_str(q, 6, options));
	B(bind_num(q, 7, r->base_loss));
	B(sqlite3_bind_int(q, 8, r->cancelled));
	if (db_run_bound(st, q, rc, "binding a sweep", "recording a sweep", e) != 0)
		goto fail;
	int64_t id = sqlite3_last_insert_rowid(st->db);
	for (int l = 0; l < r->L; l++)
		for (int h = 0; h < r->H; h++)
			if (put_sweep_entry(st, qe, id, l, h, &r->head[l * r->H + h], e) != 0)
				goto fail;
	for (int l = 0; l < r->L; l++)
		if (put_sweep_entry(st, qe, id, l, -1, &r->layer[l], e) != 0)
			goto fail;
	if (db_commit(st, e) != 0)
		goto fail;
	return id;
fail:
	db_rollback(st);
stop:
	snprintf(s->store_note, sizeof s->store_note, "not recording");
	return rec_stop_reported(st, e);
}
