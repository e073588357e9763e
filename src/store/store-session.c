/*
 * store-session.c — a session in the database (store.h): its row, the
 * states it starts in and is saved as, the command lines it runs
 * (store_command_begin / end), and finding, listing, reading and
 * forgetting sessions; also the recording helpers the other files share
 * (store-db.h: rec_*).
 */
#define _GNU_SOURCE
#include "store-db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

/* ------------------------------------------------------------- recording */

void rec_model_ident(struct store *st, const struct session *s, struct model_ident *id)
{
	memset(id, 0, sizeof *id);
	if (!s->model)
		return;
	id->name = s->model->name ? s->model->name : s->model_spec;
	id->spec = s->model_spec;
	if (s->model->path && realpath(s->model->path, id->path)) {
		id->has_path = true;
		id->has_sha = store_file_sha256(st, id->path, id->sha, NULL) == 0;
	}
}

/* "0.1 1.2": the ablated heads of o for model m. */
char *rec_ablated_list(const struct model *m, const struct run_options *o)
{
	size_t cap = 64, n = 0;
	char *buf = xmalloc(cap);
	buf[0] = '\0';
	if (!m)
		return buf;
	int H = m->cfg.n_head, total = m->cfg.n_layer * H;
	for (int bit = 0; bit < total && bit < ABLATE_WORDS * 64; bit++) {
		if (!opt_is_ablated(o, bit))
			continue;
		if (n + 24 > cap) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		n += (size_t)snprintf(buf + n, cap - n, "%s%d.%d", n ? " " : "", bit / H, bit % H);
	}
	return buf;
}

/* Inserts the session's current state into `states`. */
static int insert_state(struct store *st, const struct session *s, const struct model_ident *id,
			int64_t *out, struct err *e)
{
	sqlite3_stmt *q = db_stmt(st, S_INS_STATE, e);
	if (!q)
		return -1;
	char *abl = rec_ablated_list(s->model, &s->opt);
	int rc = SQLITE_OK;
	B(bind_str(q, 1, id->name));
	B(bind_str(q, 2, id->spec));
	B(bind_str(q, 3, id->has_path ? id->path : NULL));
	B(bind_str(q, 4, id->has_sha ? id->sha : NULL));
	B(bind_bytes(q, 5, s->text, s->text ? strlen(s->text) : 0));
	if (s->model) {
		B(sqlite3_bind_int(q, 6, s->opt.kv_heads));
		B(bind_str(q, 7, norm_place_name(s->opt.placement)));
		B(bind_str(q, 8, mask_kind_name(s->opt.mask)));
		B(s->opt.mask == MASK_WINDOW ? sqlite3_bind_int(q, 9, s->opt.window)
					     : sqlite3_bind_null(q, 9));
		B(sqlite3_bind_int(q, 10, s->opt.scale));
		B(bind_str(q, 11, abl));
		B(bind_str(q, 16, pitfall_name(s->opt.pitfall)));
	}
	B(sqlite3_bind_int(q, 12, s->sel_layer));
	B(sqlite3_bind_int(q, 13, s->sel_head));
	B(sqlite3_bind_int(q, 14, s->sel_token));
	B(sqlite3_bind_int(q, 15, s->threads));
	free(abl);
	if (db_run_bound(st, q, rc, "binding a state", "recording a state", e) != 0)
		return -1;
	*out = sqlite3_last_insert_rowid(st->db);
	return 0;
}

/* Inside a transaction: creates the session's row when it has none. */
int rec_ensure_session(struct store *st, const struct session *s, const struct model_ident *id,
			  struct err *e)
{
	if (st->session_id)
		return 0;
	int64_t state;
	if (insert_state(st, s, id, &state, e) != 0)
		return -1;
	sqlite3_stmt *q = db_stmt(st, S_INS_SESSION, e);
	if (!q)
		return -1;
	int rc = SQLITE_OK;
	B(bind_str(q, 1, id->name));
	B(bind_str(q, 2, id->has_sha ? id->sha : NULL));
	B(bind_str(q, 3, ATTNSCOPE_VERSION));
	B(sqlite3_bind_int64(q, 4, state));
	if (db_run_bound(st, q, rc, "binding a session", "recording the session", e) != 0)
		return -1;
	st->session_id = sqlite3_last_insert_rowid(st->db);
	st->session_new = true;
	st->seq = 0;
	free(st->session_model);
	st->session_model = id->name ? xstrdup(id->name) : NULL;
	return 0;
}

/* The first failed recording write: one warning, then nothing is recorded. */
void rec_stop(struct session *s, const struct err *e)
{
	struct store *st = s->store;
	if (!st->dead)
		fprintf(stderr, "attnscope: warning: %s; recording stopped, attnscope goes on "
			"without it\n", e->msg);
	st->dead = true;
	snprintf(s->store_note, sizeof s->store_note, "not recording");
}

/* The first failed write of a result whose caller reports failures itself
 * (store_head_stats, store_sweep): recording stops as in stop_recording,
 * and the message in e, which the caller prints as the one warning, says
 * so.  Returns -1. */
int rec_stop_reported(struct store *st, struct err *e)
{
	if (!st->dead && e) {
		char msg[ERR_MAX];
		snprintf(msg, sizeof msg, "%s", e->msg);
		err_set(e, "%s; recording stopped, attnscope goes on without it", msg);
	}
	st->dead = true;
	return -1;
}

/* Whether s records.  When recording has stopped, makes sure the prompt
 * says so (stop_recording_reported has no session at hand). */
bool rec_live(struct session *s)
{
	if (!s || !s->store)
		return false;
	if (s->store->dead)
		snprintf(s->store_note, sizeof s->store_note, "not recording");
	return !s->store->dead;
}

int store_begin_session(struct session *s, struct err *e)
{
	if (!s->store)
		return err_set(e, "no session database");
	struct store *st = s->store;
	if (st->session_id)
		return 0;
	struct model_ident id;
	rec_model_ident(st, s, &id);
	if (db_begin(st, e) != 0)
		return -1;
	if (rec_ensure_session(st, s, &id, e) != 0 || db_commit(st, e) != 0) {
		db_rollback(st);
		return -1;
	}
	return 0;
}

int64_t store_command_begin(struct session *s, const char *line)
{
	if (!rec_live(s))
		return 0;
	const char *p = line;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (!*p || *p == '#')
		return 0;
	struct store *st = s->store;
	if (st->depth >= CMD_STACK)
		return 0;
	struct err e;
	struct model_ident id = { 0 };
	if (!st->session_id)
		rec_model_ident(st, s, &id);
	if (db_begin(st, &e) != 0)
		goto fail;
	if (rec_ensure_session(st, s, &id, &e) != 0)
		goto fail;
	sqlite3_stmt *q = db_stmt(st, S_INS_COMMAND, &e);
	if (!q)
		goto fail;
	int64_t seq = st->seq + 1;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(sqlite3_bind_int64(q, 2, seq));
	B(sqlite3_bind_int(q, 3, st->depth));
	B(bind_str(q, 4, line));
	if (db_run_bound(st, q, rc, "binding a command", "recording a command", &e) != 0 ||
	    db_commit(st, &e) != 0)
		goto fail;
	st->seq = seq;
	st->stack[st->depth++] = seq;
	return seq;
fail:
	db_rollback(st);
	rec_stop(s, &e);
	return 0;
}

void store_command_end(struct session *s, int64_t seq, int rc_cmd, const char *message)
{
	if (!seq || !s->store)
		return;
	struct store *st = s->store;
	if (st->depth > 0 && st->stack[st->depth - 1] == seq)
		st->depth--;
	if (!rec_live(s))
		return;
	struct err e;
	sqlite3_stmt *q = db_stmt(st, S_END_COMMAND, &e);
	if (!q)
		goto fail;
	if (db_begin(st, &e) != 0)
		goto fail;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(sqlite3_bind_int64(q, 2, seq));
	B(sqlite3_bind_int(q, 3, rc_cmd >= 0));
	B(rc_cmd < 0 ? bind_str(q, 4, message && message[0] ? message : "failed")
		     : sqlite3_bind_null(q, 4));
	if (db_run_bound(st, q, rc, "binding a command", "recording a command", &e) != 0 ||
	    db_commit(st, &e) != 0)
		goto fail;
	return;
fail:
	db_rollback(st);
	rec_stop(s, &e);
}

/* --------------------------------------------------------- saved sessions */

int store_save(struct session *s, const char *name, size_t len, struct err *e)
{
	if (!s->store)
		return err_set(e, "no session database");
	struct store *st = s->store;
	if (st->dead)
		return err_set(e, "not recording: an earlier write to %s failed", st->path);
	if (name) {
		if (len == 0)
			return err_set(e, "a session name cannot be empty");
		size_t i = 0;
		while (i < len && name[i] >= '0' && name[i] <= '9')
			i++;
		if (i == len)
			return err_set(e, "%.*s: a session name cannot be a number (it would read as an id)",
				       (int)(len > 40 ? 40 : len), name);
	}
	struct model_ident id;
	rec_model_ident(st, s, &id);
	if (db_begin(st, e) != 0)
		return -1;
	int64_t state;
	if (rec_ensure_session(st, s, &id, e) != 0 || insert_state(st, s, &id, &state, e) != 0)
		goto fail;
	sqlite3_stmt *q = db_stmt(st, S_SESSION_SAVE, e);
	if (!q)
		goto fail;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(bind_bytes(q, 2, name, len));
	B(sqlite3_bind_int64(q, 3, state));
	if (db_run_bound(st, q, rc, "binding a session", "saving the session", e) != 0 ||
	    db_commit(st, e) != 0)
		goto fail;
	return 0;
fail:
	db_rollback(st);
	return -1;
}

static const struct row_type id_row = { sizeof(int64_t), 1, db_read_int64, NULL,
					"finding a session" };

int store_find_session(struct store *st, const char *ref, int64_t *id, struct err *e)
{
	size_t len = strlen(ref), i = 0;
	while (i < len && ref[i] >= '0' && ref[i] <= '9')
		i++;
	bool by_id = len > 0 && i == len && len < 19;
	sqlite3_stmt *q = db_stmt(st, by_id ? S_FIND_ID : S_FIND_NAME, e);
	if (!q)
		return -1;
	if (by_id)
		sqlite3_bind_int64(q, 1, strtoll(ref, NULL, 10));
	else
		bind_bytes(q, 1, ref, len);
	int rc = db_row(st, by_id ? S_FIND_ID : S_FIND_NAME, NULL, 0, &id_row, id, e);
	if (rc != 0)
		return rc > 0 ? 0 : -1;
	if (by_id)
		return err_set(e, "no session %s (sessions lists them)", ref);
	return err_set(e, "no session named %.200s (sessions lists them)", ref);
}

void store_state_free(struct store_state *ss)
{
	free(ss->model);
	free(ss->model_spec);
	free(ss->model_path);
	free(ss->model_sha256);
	free(ss->text);
	free(ss->ablated_list);
	memset(ss, 0, sizeof *ss);
}

static void read_state(sqlite3_stmt *q, void *row)
{
	struct store_state *out = row;
	out->model = col_str(q, 0);
	out->model_spec = col_str(q, 1);
	out->model_path = col_str(q, 2);
	out->model_sha256 = col_str(q, 3);
	out->text = col_bytes(q, 4, &out->text_len);
	out->opt.kv_heads = (int)col_int(q, 5, 0);
	char *norm = col_str(q, 6), *mask = col_str(q, 7);
	if (!norm || norm_place_parse(norm, &out->opt.placement) != 0)
		out->opt.placement = PLACE_PRE;
	if (!mask || mask_kind_parse(mask, &out->opt.mask) != 0)
		out->opt.mask = MASK_CAUSAL;
	free(norm);
	free(mask);
	out->opt.window = (int)col_int(q, 8, 0);
	out->opt.scale = col_int(q, 9, 1) != 0;
	out->ablated_list = col_str(q, 10);
	if (!out->ablated_list)
		out->ablated_list = xstrdup("");
	out->sel_layer = (int)col_int(q, 11, 0);
	out->sel_head = (int)col_int(q, 12, 0);
	out->sel_token = (int)col_int(q, 13, 0);
	out->threads = (int)col_int(q, 14, 0);
	char *pit = col_str(q, 15); /* NULL before schema 5: no pitfall */
	if (!pit || pitfall_parse(pit, &out->opt.pitfall) != 0)
		out->opt.pitfall = PITFALL_NONE;
	free(pit);
}

static const struct row_type state_row = { sizeof(struct store_state), 1, read_state, NULL,
					   "reading a session" };

int store_get_state(struct store *st, int64_t session_id, bool saved, struct store_state *out,
		    struct err *e)
{
	memset(out, 0, sizeof *out);
	int64_t args[] = { session_id, saved };
	int rc = db_row(st, S_GET_STATE, args, 2, &state_row, out, e);
	if (rc != 0)
		return rc > 0 ? 0 : -1;
	if (saved)
		return err_set(e, "session %lld was never saved (replay %lld re-runs its commands)",
			       (long long)session_id, (long long)session_id);
	return err_set(e, "session %lld has no start state", (long long)session_id);
}

static void read_session_info(sqlite3_stmt *q, void *row)
{
	struct store_session_info *r = row;
	r->id = sqlite3_column_int64(q, 0);
	r->name = col_bytes(q, 1, &r->name_len);
	r->created_at = col_str(q, 2);
	r->saved_at = col_str(q, 3);
	r->model = col_str(q, 4);
	r->n_commands = sqlite3_column_int64(q, 5);
	r->n_measurements = sqlite3_column_int64(q, 6);
}

int store_forget_session(struct store *st, int64_t id, int64_t *n_commands,
			 int64_t *n_measurements, struct err *e)
{
	if (st->dead)
		return err_set(e, "not recording: an earlier write to %s failed", st->path);
	if (id == st->session_id)
		return err_set(e, "session %lld is this one, still being recorded", (long long)id);
	/* children first (foreign keys are on); then the states no session uses */
	static const char *const del[] = {
		"DELETE FROM sweep_entries WHERE sweep_id IN (SELECT id FROM sweeps WHERE session_id = ?1)",
		"DELETE FROM sweeps WHERE session_id = ?1",
		"DELETE FROM head_stats WHERE measurement_id IN "
		"(SELECT id FROM measurements WHERE session_id = ?1)",
		"DELETE FROM measurements WHERE session_id = ?1",
		"DELETE FROM commands WHERE session_id = ?1",
		"DELETE FROM lab_runs WHERE session_id = ?1",
		"DELETE FROM sessions WHERE id = ?1",
		"DELETE FROM states WHERE id NOT IN (SELECT start_state FROM sessions WHERE "
		"start_state IS NOT NULL UNION SELECT saved_state FROM sessions WHERE saved_state IS NOT NULL)",
	};
	if (db_begin(st, e) != 0)
		return -1;
	int64_t changed[8] = { 0 };
	for (size_t i = 0; i < sizeof del / sizeof del[0]; i++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(st->db, del[i], -1, &q, NULL) != SQLITE_OK) {
			db_err(st, e, "forgetting a session");
			db_rollback(st);
			return -1;
		}
		if (strstr(del[i], "?1"))
			sqlite3_bind_int64(q, 1, id);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE) {
			db_err(st, e, "forgetting a session");
			db_rollback(st);
			return -1;
		}
		changed[i] = sqlite3_changes(st->db);
	}
	if (changed[6] == 0) {
		db_rollback(st);
		return err_set(e, "no session %lld", (long long)id);
	}
	if (db_commit(st, e) != 0) {
		db_rollback(st);
		return -1;
	}
	*n_commands = changed[4];
	*n_measurements = changed[3];
	return 0;
}

static void free_session_info(void *row)
{
	struct store_session_info *r = row;
	free(r->name);
	free(r->created_at);
	free(r->saved_at);
	free(r->model);
}

static const struct row_type session_rows = { sizeof(struct store_session_info), 16,
					      read_session_info, free_session_info,
					      "listing sessions" };

int store_list_sessions(struct store *st, struct store_session_info **out, int *n, struct err *e)
{
	void *v;
	int rc = db_rows(st, S_LIST_SESSIONS, NULL, 0, &session_rows, &v, n, e);
	*out = v;
	return rc;
}

void store_sessions_free(struct store_session_info *v, int n)
{
	db_rows_free(&session_rows, v, n);
}

static void read_command(sqlite3_stmt *q, void *row)
{
	struct store_command *c = row;
	c->seq = sqlite3_column_int64(q, 0);
	c->depth = sqlite3_column_int(q, 1);
	c->line = col_bytes(q, 2, &c->line_len);
	if (!c->line)
		c->line = xstrdup("");
	c->ok = (int)col_int(q, 3, -1);
	c->message = col_str(q, 4);
}

static void free_command(void *row)
{
	struct store_command *c = row;
	free(c->line);
	free(c->message);
}

static const struct row_type command_rows = { sizeof(struct store_command), 32, read_command,
					       free_command, "reading commands" };

int store_get_commands(struct store *st, int64_t session_id, struct store_command **out, int *n,
		       struct err *e)
{
	void *v;
	int rc = db_rows(st, S_GET_COMMANDS, &session_id, 1, &command_rows, &v, n, e);
	*out = v;
	return rc;
}

void store_commands_free(struct store_command *v, int n)
{
	db_rows_free(&command_rows, v, n);
}
