/*
 * store.c — the session database (see store.h).  The only file that
 * includes sqlite3.h.
 */
#define _GNU_SOURCE
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "heads.h"
#include "session.h"
#include "version.h"

/* ------------------------------------------------------------------ schema */

#define NOW "strftime('%Y-%m-%d %H:%M:%f','now')"

/* Migration i takes user_version i to i + 1; each ends by setting it. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
	/* 0 -> 1 */
	"PRAGMA application_id = 1096045390;\n" /* STORE_APPLICATION_ID, "ATSN" */
	"CREATE TABLE states (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  created_at TEXT NOT NULL,\n"
	"  model TEXT,\n"
	"  model_spec TEXT,\n"
	"  model_path TEXT,\n"
	"  model_sha256 TEXT,\n"
	"  text TEXT,\n"
	"  kv_heads INTEGER,\n"
	"  norm TEXT,\n"
	"  mask TEXT,\n"
	"  mask_window INTEGER,\n"
	"  scale INTEGER,\n"
	"  ablated TEXT,\n"
	"  sel_layer INTEGER,\n"
	"  sel_head INTEGER,\n"
	"  sel_token INTEGER,\n"
	"  threads INTEGER\n"
	");\n"
	"CREATE TABLE sessions (\n"
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  name TEXT,\n"
	"  created_at TEXT NOT NULL,\n"
	"  model TEXT,\n"
	"  model_sha256 TEXT,\n"
	"  version TEXT NOT NULL,\n"
	"  start_state INTEGER REFERENCES states(id),\n"
	"  saved_state INTEGER REFERENCES states(id),\n"
	"  saved_at TEXT\n"
	");\n"
	"CREATE INDEX sessions_name ON sessions(name);\n"
	"CREATE TABLE commands (\n"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id),\n"
	"  seq INTEGER NOT NULL,\n"
	"  depth INTEGER NOT NULL DEFAULT 0,\n"
	"  line TEXT NOT NULL,\n"
	"  ok INTEGER,\n"
	"  message TEXT,\n"
	"  created_at TEXT NOT NULL,\n"
	"  finished_at TEXT,\n"
	"  PRIMARY KEY (session_id, seq)\n"
	");\n"
	"CREATE TABLE measurements (\n"
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id),\n"
	"  command_seq INTEGER,\n"
	"  created_at TEXT NOT NULL,\n"
	"  model TEXT,\n"
	"  model_sha256 TEXT,\n"
	"  variant TEXT NOT NULL,\n"
	"  kv_heads INTEGER NOT NULL,\n"
	"  norm TEXT NOT NULL,\n"
	"  mask TEXT NOT NULL,\n"
	"  mask_window INTEGER,\n"
	"  scale INTEGER NOT NULL,\n"
	"  ablated TEXT NOT NULL,\n"
	"  text TEXT NOT NULL,\n"
	"  n_tokens INTEGER NOT NULL,\n"
	"  forward_ms REAL,\n"
	"  kv_cache_bytes REAL,\n"
	"  loss REAL,\n"
	"  base_loss REAL,\n"
	"  delta_loss REAL,\n"
	"  ppl REAL,\n"
	"  kl_vs_baseline REAL,\n"
	"  top1_agree REAL,\n"
	"  threads INTEGER\n"
	");\n"
	"CREATE INDEX measurements_session ON measurements(session_id);\n"
	"CREATE TABLE head_stats (\n"
	"  measurement_id INTEGER NOT NULL REFERENCES measurements(id),\n"
	"  layer INTEGER NOT NULL,\n"
	"  head INTEGER NOT NULL,\n"
	"  entropy REAL,\n"
	"  max_weight REAL,\n"
	"  prev_token REAL,\n"
	"  first_token REAL,\n"
	"  self REAL,\n"
	"  local REAL,\n"
	"  mean_distance REAL,\n"
	"  induction REAL,\n"
	"  role TEXT,\n"
	"  PRIMARY KEY (measurement_id, layer, head)\n"
	");\n"
	"CREATE TABLE training_runs (\n"
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  created_at TEXT NOT NULL,\n"
	"  finished_at TEXT,\n"
	"  status TEXT NOT NULL,\n"
	"  model_path TEXT,\n"
	"  data_path TEXT,\n"
	"  data_bytes INTEGER,\n"
	"  data_hash TEXT,\n"
	"  config TEXT,\n"
	"  args TEXT,\n"
	"  seed INTEGER,\n"
	"  threads INTEGER,\n"
	"  resumed_from INTEGER REFERENCES training_runs(id),\n"
	"  version TEXT NOT NULL,\n"
	"  steps_done INTEGER,\n"
	"  tokens_seen INTEGER,\n"
	"  final_loss REAL,\n"
	"  val_loss REAL,\n"
	"  wall_s REAL,\n"
	"  message TEXT\n"
	");\n"
	"CREATE TABLE training_steps (\n"
	"  run_id INTEGER NOT NULL REFERENCES training_runs(id),\n"
	"  step INTEGER NOT NULL,\n"
	"  loss REAL,\n"
	"  lr REAL,\n"
	"  grad_norm REAL,\n"
	"  val_loss REAL,\n"
	"  layer_grad_norms TEXT,\n"
	"  PRIMARY KEY (run_id, step)\n"
	");\n"
	"CREATE TABLE model_files (\n"
	"  path TEXT PRIMARY KEY,\n"
	"  size INTEGER NOT NULL,\n"
	"  mtime_ns INTEGER NOT NULL,\n"
	"  inode INTEGER NOT NULL,\n"
	"  sha256 TEXT NOT NULL,\n"
	"  hashed_at TEXT NOT NULL\n"
	");\n"
	"PRAGMA user_version = 1;\n",
	/* 1 -> 2 */
	"CREATE TABLE sweeps (\n"
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id),\n"
	"  measurement_id INTEGER REFERENCES measurements(id),\n"
	"  created_at TEXT NOT NULL,\n"
	"  metric TEXT NOT NULL,\n"
	"  source TEXT NOT NULL,\n"
	"  n_tokens INTEGER NOT NULL,\n"
	"  options TEXT NOT NULL,\n"
	"  base_loss REAL,\n"
	"  cancelled INTEGER NOT NULL\n"
	");\n"
	"CREATE INDEX sweeps_session ON sweeps(session_id);\n"
	"CREATE TABLE sweep_entries (\n"
	"  sweep_id INTEGER NOT NULL REFERENCES sweeps(id),\n"
	"  layer INTEGER NOT NULL,\n"
	"  head INTEGER,\n"
	"  delta_loss REAL,\n"
	"  kl REAL,\n"
	"  top1_agree REAL\n"
	");\n"
	"CREATE UNIQUE INDEX sweep_entries_key ON sweep_entries(sweep_id, layer, head);\n"
	"PRAGMA user_version = 2;\n",
	/* 2 -> 3: the delimiter, generalised sink and offset scores of heads.h */
	"ALTER TABLE head_stats ADD COLUMN delim REAL;\n"
	"ALTER TABLE head_stats ADD COLUMN delim_share REAL;\n"
	"ALTER TABLE head_stats ADD COLUMN sink REAL;\n"
	"ALTER TABLE head_stats ADD COLUMN sink_key INTEGER;\n"
	"ALTER TABLE head_stats ADD COLUMN offset_k INTEGER;\n"
	"ALTER TABLE head_stats ADD COLUMN offset_weight REAL;\n"
	"PRAGMA user_version = 3;\n",
	/* 3 -> 4: the lab's experiments (lab.h) */
	"CREATE TABLE lab_runs (\n"
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id),\n"
	"  created_at TEXT NOT NULL,\n"
	"  experiment TEXT NOT NULL,\n"
	"  size TEXT NOT NULL,\n"
	"  data_path TEXT,\n"
	"  status TEXT NOT NULL,\n"
	"  seconds REAL NOT NULL,\n"
	"  threads INTEGER NOT NULL,\n"
	"  result TEXT NOT NULL\n"
	");\n"
	"CREATE INDEX lab_runs_session ON lab_runs(session_id);\n"
	"PRAGMA user_version = 4;\n",
};

/* ---------------------------------------------------------- statements */

enum stmt_id {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_INS_STATE,
	S_INS_SESSION,
	S_SESSION_MODEL,
	S_SESSION_SAVE,
	S_INS_COMMAND,
	S_END_COMMAND,
	S_INS_MEAS,
	S_UPSERT_HEAD,
	S_FIND_ID,
	S_FIND_NAME,
	S_GET_STATE,
	S_LIST_SESSIONS,
	S_GET_COMMANDS,
	S_GET_MEAS,
	S_COUNT_MEAS,
	S_GET_MEAS_ONE,
	S_GET_HEADS,
	S_INS_TRAIN,
	S_INS_STEP,
	S_FINISH_TRAIN,
	S_GET_TRAIN,
	S_GET_STEPS,
	S_GET_HASH,
	S_PUT_HASH,
	S_INS_SWEEP,
	S_INS_SWEEP_ENTRY,
	S_INS_LAB,
	N_STMT
};

#define MEAS_COLS \
	"id, session_id, command_seq, created_at, model, model_sha256, variant, kv_heads, norm, " \
	"mask, mask_window, scale, ablated, text, n_tokens, forward_ms, kv_cache_bytes, loss, " \
	"base_loss, delta_loss, ppl, kl_vs_baseline, top1_agree, threads"

static const char *const stmt_sql[N_STMT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_INS_STATE] =
		"INSERT INTO states (created_at, model, model_spec, model_path, model_sha256, text, "
		"kv_heads, norm, mask, mask_window, scale, ablated, sel_layer, sel_head, sel_token, "
		"threads) VALUES (" NOW ", ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
		"?14, ?15)",
	[S_INS_SESSION] = "INSERT INTO sessions (created_at, model, model_sha256, version, start_state) "
			  "VALUES (" NOW ", ?1, ?2, ?3, ?4)",
	[S_SESSION_MODEL] = "UPDATE sessions SET model = ?2, model_sha256 = ?3 WHERE id = ?1",
	[S_SESSION_SAVE] = "UPDATE sessions SET name = coalesce(?2, name), saved_state = ?3, "
			   "saved_at = " NOW " WHERE id = ?1",
	[S_INS_COMMAND] = "INSERT INTO commands (session_id, seq, depth, line, created_at) "
			  "VALUES (?1, ?2, ?3, ?4, " NOW ")",
	[S_END_COMMAND] = "UPDATE commands SET ok = ?3, message = ?4, finished_at = " NOW
			  " WHERE session_id = ?1 AND seq = ?2",
	[S_INS_MEAS] =
		"INSERT INTO measurements (session_id, command_seq, created_at, model, model_sha256, "
		"variant, kv_heads, norm, mask, mask_window, scale, ablated, text, n_tokens, "
		"forward_ms, kv_cache_bytes, loss, base_loss, delta_loss, ppl, kl_vs_baseline, "
		"top1_agree, threads) VALUES (?1, ?2, " NOW ", ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
	[S_UPSERT_HEAD] =
		"INSERT INTO head_stats (measurement_id, layer, head, entropy, max_weight, prev_token, "
		"first_token, self, local, mean_distance, induction, role, delim, delim_share, sink, "
		"sink_key, offset_k, offset_weight) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
		"?18) "
		"ON CONFLICT (measurement_id, layer, head) DO UPDATE SET "
		"entropy = coalesce(excluded.entropy, entropy), "
		"max_weight = coalesce(excluded.max_weight, max_weight), "
		"prev_token = coalesce(excluded.prev_token, prev_token), "
		"first_token = coalesce(excluded.first_token, first_token), "
		"self = coalesce(excluded.self, self), "
		"local = coalesce(excluded.local, local), "
		"mean_distance = coalesce(excluded.mean_distance, mean_distance), "
		"induction = coalesce(excluded.induction, induction), "
		"role = coalesce(excluded.role, role), "
		"delim = coalesce(excluded.delim, delim), "
		"delim_share = coalesce(excluded.delim_share, delim_share), "
		"sink = coalesce(excluded.sink, sink), "
		"sink_key = coalesce(excluded.sink_key, sink_key), "
		"offset_k = coalesce(excluded.offset_k, offset_k), "
		"offset_weight = coalesce(excluded.offset_weight, offset_weight)",
	[S_FIND_ID] = "SELECT id FROM sessions WHERE id = ?1",
	[S_FIND_NAME] = "SELECT id FROM sessions WHERE name = ?1 "
			"ORDER BY saved_at IS NULL, saved_at DESC, id DESC LIMIT 1",
	[S_GET_STATE] =
		"SELECT st.model, st.model_spec, st.model_path, st.model_sha256, st.text, "
		"st.kv_heads, st.norm, st.mask, st.mask_window, st.scale, st.ablated, st.sel_layer, "
		"st.sel_head, st.sel_token, st.threads "
		"FROM sessions se JOIN states st "
		"ON st.id = CASE WHEN ?2 THEN se.saved_state ELSE se.start_state END "
		"WHERE se.id = ?1",
	[S_LIST_SESSIONS] =
		"SELECT s.id, s.name, s.created_at, s.saved_at, s.model, "
		"(SELECT count(*) FROM commands c WHERE c.session_id = s.id), "
		"(SELECT count(*) FROM measurements m WHERE m.session_id = s.id) "
		"FROM sessions s ORDER BY s.id",
	[S_GET_COMMANDS] = "SELECT seq, depth, line, ok, message FROM commands "
			   "WHERE session_id = ?1 ORDER BY seq",
	[S_GET_MEAS] = "SELECT " MEAS_COLS " FROM measurements "
		       "WHERE ?1 = 0 OR session_id = ?1 ORDER BY id DESC LIMIT ?2",
	[S_COUNT_MEAS] = "SELECT count(*) FROM measurements WHERE ?1 = 0 OR session_id = ?1",
	[S_GET_MEAS_ONE] = "SELECT " MEAS_COLS " FROM measurements WHERE id = ?1",
	[S_GET_HEADS] = "SELECT layer, head, entropy, max_weight, prev_token, first_token, self, "
			"local, mean_distance, induction, role, delim, delim_share, sink, sink_key, "
			"offset_k, offset_weight FROM head_stats "
			"WHERE measurement_id = ?1 ORDER BY layer, head",
	[S_INS_TRAIN] =
		"INSERT INTO training_runs (created_at, status, model_path, data_path, data_bytes, "
		"data_hash, config, args, seed, threads, resumed_from, version) "
		"VALUES (" NOW ", 'running', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
		"(SELECT id FROM training_runs WHERE id = ?9), ?10)",
	[S_INS_STEP] = "INSERT OR REPLACE INTO training_steps (run_id, step, loss, lr, grad_norm, "
		       "val_loss, layer_grad_norms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[S_FINISH_TRAIN] =
		"UPDATE training_runs SET finished_at = " NOW ", status = ?2, steps_done = ?3, "
		"tokens_seen = ?4, final_loss = ?5, val_loss = ?6, wall_s = ?7, message = ?8 "
		"WHERE id = ?1",
	[S_GET_TRAIN] = "SELECT status, model_path FROM training_runs WHERE id = ?1",
	[S_GET_STEPS] = "SELECT step, loss, lr, grad_norm, val_loss, layer_grad_norms "
			"FROM training_steps WHERE run_id = ?1 ORDER BY step",
	[S_GET_HASH] = "SELECT sha256 FROM model_files WHERE path = ?1 AND size = ?2 AND "
		       "mtime_ns = ?3 AND inode = ?4",
	[S_PUT_HASH] = "INSERT OR REPLACE INTO model_files (path, size, mtime_ns, inode, sha256, "
		       "hashed_at) VALUES (?1, ?2, ?3, ?4, ?5, " NOW ")",
	[S_INS_SWEEP] = "INSERT INTO sweeps (session_id, measurement_id, created_at, metric, source, "
			"n_tokens, options, base_loss, cancelled) "
			"VALUES (?1, ?2, " NOW ", ?3, ?4, ?5, ?6, ?7, ?8)",
	[S_INS_SWEEP_ENTRY] = "INSERT INTO sweep_entries (sweep_id, layer, head, delta_loss, kl, "
			      "top1_agree) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[S_INS_LAB] = "INSERT INTO lab_runs (session_id, created_at, experiment, size, data_path, "
		      "status, seconds, threads, result) VALUES (?1, " NOW ", ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
};

/* ------------------------------------------------------------------ store */

#define HASH_CACHE 4
#define CMD_STACK 16

struct hash_entry {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	char hex[65];
	bool used;
};

struct store {
	sqlite3 *db;
	char *path;
	int lockfd;             /* held open (unlocked) until close; see init_lock */
	sqlite3_stmt *stmt[N_STMT];
	bool dead;              /* a recording write failed: nothing more is recorded */
	int64_t session_id;     /* 0 until the first write */
	bool session_new;       /* session_id was made in the open transaction */
	int64_t seq;            /* last command seq */
	int64_t stack[CMD_STACK]; /* seqs of the commands running (nested by replay) */
	int depth;
	int64_t last_measurement;
	int suppress;
	bool replaying;
	char *session_model;    /* the model the sessions row names */
	struct hash_entry hashes[HASH_CACHE];
	int next_hash;
};

static int db_err(struct store *st, struct err *e, const char *what)
{
	return err_set(e, "%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

static sqlite3_stmt *stmt(struct store *st, enum stmt_id id, struct err *e)
{
	if (!st->stmt[id]) {
		int rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &st->stmt[id], NULL);
		if (rc != SQLITE_OK) {
			db_err(st, e, "preparing a statement");
			st->stmt[id] = NULL;
			return NULL;
		}
	}
	return st->stmt[id];
}

static void done(sqlite3_stmt *q)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
}

/* Runs a bound statement that returns no rows. */
static int run_stmt(struct store *st, sqlite3_stmt *q, const char *what, struct err *e)
{
	int rc = sqlite3_step(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		db_err(st, e, what);
		done(q);
		return -1;
	}
	done(q);
	return 0;
}

/* Steps the bound statement q to its end, appending each row, read by
 * read(q, element), to the growing array *v of size-byte elements (first
 * cap0 of them) and counting them in *n.  q is reset.  SQLITE_DONE, or the
 * failing step's code with the rows read so far left in *v for the caller
 * to free. */
static int step_rows(sqlite3_stmt *q, size_t size, int cap0, void (*read)(sqlite3_stmt *, void *),
		     void **v, int *n)
{
	int cap = 0, rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : cap0;
			*v = xrealloc(*v, (size_t)cap * size);
		}
		read(q, (char *)*v + (size_t)(*n)++ * size);
	}
	done(q);
	return rc;
}

static int simple(struct store *st, enum stmt_id id, const char *what, struct err *e)
{
	sqlite3_stmt *q = stmt(st, id, e);
	return q ? run_stmt(st, q, what, e) : -1;
}

static int tx_begin(struct store *st, struct err *e)
{
	st->session_new = false;
	return simple(st, S_BEGIN, "starting a transaction", e);
}

static int tx_commit(struct store *st, struct err *e)
{
	if (simple(st, S_COMMIT, "committing", e) != 0)
		return -1;
	st->session_new = false;
	return 0;
}

static void tx_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_stmt *q = stmt(st, S_ROLLBACK, NULL);
		if (q) {
			sqlite3_step(q);
			done(q);
		}
	}
	if (st->session_new) {
		st->session_id = 0;
		st->session_new = false;
	}
}

/* ------------------------------------------------------------ bind/column */

bool store_utf8_valid(const char *str, size_t len)
{
	const unsigned char *p = (const unsigned char *)str;
	size_t i = 0;
	while (i < len) {
		unsigned c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		int n;
		uint32_t cp, min;
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1, cp = c & 0x1f, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2, cp = c & 0x0f, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (len - i <= (size_t)n)
			return false;
		for (int k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += (size_t)n + 1;
	}
	return true;
}

/* Binds len bytes: as TEXT when valid UTF-8, else as a BLOB (so that every
 * byte round-trips); NULL binds NULL. */
static int bind_bytes(sqlite3_stmt *q, int i, const char *s, size_t len)
{
	if (!s)
		return sqlite3_bind_null(q, i);
	if (store_utf8_valid(s, len))
		return sqlite3_bind_text64(q, i, s, len, SQLITE_TRANSIENT, SQLITE_UTF8);
	return sqlite3_bind_blob64(q, i, s, len, SQLITE_TRANSIENT);
}

static int bind_str(sqlite3_stmt *q, int i, const char *s)
{
	return bind_bytes(q, i, s, s ? strlen(s) : 0);
}

static int bind_num(sqlite3_stmt *q, int i, double v)
{
	return isnan(v) ? sqlite3_bind_null(q, i) : sqlite3_bind_double(q, i, v);
}

static int bind_id(sqlite3_stmt *q, int i, int64_t v)
{
	return v ? sqlite3_bind_int64(q, i, v) : sqlite3_bind_null(q, i);
}

/* A copy of column i (NUL-terminated; its length in *len), NULL for NULL. */
static char *col_bytes(sqlite3_stmt *q, int i, size_t *len)
{
	if (sqlite3_column_type(q, i) == SQLITE_NULL) {
		if (len)
			*len = 0;
		return NULL;
	}
	const void *p = sqlite3_column_blob(q, i);
	size_t n = (size_t)sqlite3_column_bytes(q, i);
	char *out = xmalloc(n + 1);
	if (n)
		memcpy(out, p, n);
	out[n] = '\0';
	if (len)
		*len = n;
	return out;
}

static char *col_str(sqlite3_stmt *q, int i)
{
	return col_bytes(q, i, NULL);
}

static double col_num(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static int64_t col_int(sqlite3_stmt *q, int i, int64_t dflt)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(q, i);
}

/* ----------------------------------------------------------------- sha256 */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t fill;
};

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct sha256 *c, const unsigned char *p)
{
	uint32_t w[64], a[8];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(a, c->h, sizeof a);
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = ROR(a[4], 6) ^ ROR(a[4], 11) ^ ROR(a[4], 25);
		uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
		uint32_t t1 = a[7] + s1 + ch + sha_k[i] + w[i];
		uint32_t s0 = ROR(a[0], 2) ^ ROR(a[0], 13) ^ ROR(a[0], 22);
		uint32_t mj = (a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]);
		memmove(a + 1, a, 7 * sizeof a[0]);
		a[4] += t1;
		a[0] = t1 + s0 + mj;
	}
	for (int i = 0; i < 8; i++)
		c->h[i] += a[i];
}

static void sha_init(struct sha256 *c)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(c->h, h0, sizeof h0);
	c->len = 0;
	c->fill = 0;
}

static void sha_update(struct sha256 *c, const unsigned char *p, size_t n)
{
	c->len += n;
	while (n > 0) {
		if (c->fill == 0 && n >= 64) {
			sha_block(c, p);
			p += 64;
			n -= 64;
			continue;
		}
		size_t k = 64 - c->fill < n ? 64 - c->fill : n;
		memcpy(c->buf + c->fill, p, k);
		c->fill += k;
		p += k;
		n -= k;
		if (c->fill == 64) {
			sha_block(c, c->buf);
			c->fill = 0;
		}
	}
}

static void sha_final(struct sha256 *c, char hex[65])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padn = (c->fill < 56 ? 56 : 120) - c->fill;
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha_update(c, pad, padn);
	sha_update(c, lenb, 8);
	for (int i = 0; i < 8; i++)
		snprintf(hex + 8 * i, 9, "%08x", c->h[i]);
}

static void remember_hash(struct store *st, const struct stat *sb, const char hex[65])
{
	struct hash_entry *h = &st->hashes[st->next_hash];
	st->next_hash = (st->next_hash + 1) % HASH_CACHE;
	*h = (struct hash_entry){ .dev = sb->st_dev, .ino = sb->st_ino, .size = sb->st_size,
				  .mtime = sb->st_mtim, .used = true };
	memcpy(h->hex, hex, 65);
}

int store_file_sha256(struct store *st, const char *path, char hex[65], struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return err_set(e, "%s: %s", path, strerror(errno));
	}
	for (int i = 0; st && i < HASH_CACHE; i++) {
		struct hash_entry *h = &st->hashes[i];
		if (h->used && h->dev == sb.st_dev && h->ino == sb.st_ino && h->size == sb.st_size &&
		    h->mtime.tv_sec == sb.st_mtim.tv_sec && h->mtime.tv_nsec == sb.st_mtim.tv_nsec) {
			memcpy(hex, h->hex, 65);
			close(fd);
			return 0;
		}
	}
	/* hashed in an earlier run: the model_files table */
	int64_t mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	sqlite3_stmt *q = st ? stmt(st, S_GET_HASH, NULL) : NULL;
	if (q) {
		bool found = false;
		bind_str(q, 1, path);
		sqlite3_bind_int64(q, 2, (sqlite3_int64)sb.st_size);
		sqlite3_bind_int64(q, 3, mtime_ns);
		sqlite3_bind_int64(q, 4, (sqlite3_int64)sb.st_ino);
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) == 64) {
			memcpy(hex, sqlite3_column_text(q, 0), 64);
			hex[64] = '\0';
			found = true;
		}
		done(q);
		if (found) {
			close(fd);
			remember_hash(st, &sb, hex);
			return 0;
		}
	}
	struct sha256 c;
	sha_init(&c);
	size_t cap = 1 << 20;
	unsigned char *buf = xmalloc(cap);
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int er = errno;
			free(buf);
			close(fd);
			return err_set(e, "%s: %s", path, strerror(er));
		}
		if (n == 0)
			break;
		sha_update(&c, buf, (size_t)n);
	}
	free(buf);
	close(fd);
	sha_final(&c, hex);
	if (!st)
		return 0;
	remember_hash(st, &sb, hex);
	/* for the next run (best effort: a failure only costs hashing again) */
	q = st->dead ? NULL : stmt(st, S_PUT_HASH, NULL);
	if (q && tx_begin(st, NULL) == 0) {
		int rc = bind_str(q, 1, path);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 2, (sqlite3_int64)sb.st_size);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 3, mtime_ns);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 4, (sqlite3_int64)sb.st_ino);
		if (rc == SQLITE_OK)
			rc = bind_str(q, 5, hex);
		if (rc != SQLITE_OK || run_stmt(st, q, "recording a file hash", NULL) != 0 ||
		    tx_commit(st, NULL) != 0) {
			done(q);
			tx_rollback(st);
		}
	}
	return 0;
}

/* ----------------------------------------------------------- open/close */

/* Runs "PRAGMA x" that returns one integer. */
static int pragma_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(q, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(q);
	return rc;
}

/* Runs "PRAGMA x" that returns one text value into out. */
static int pragma_text(sqlite3 *db, const char *sql, char *out, size_t size)
{
	sqlite3_stmt *q;
	out[0] = '\0';
	int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(q, 0);
		snprintf(out, size, "%s", t ? (const char *)t : "");
		rc = SQLITE_OK;
	}
	sqlite3_finalize(q);
	return rc;
}

static bool is_damage(int rc)
{
	return (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
}

/* The one-line error for a step of opening path that SQLite refused with
 * rc (verb: "read" or "write"): a read-only file or file system and a
 * full disk are named as such whichever step met them (SQLite says
 * "attempt to write a readonly database", "unable to open database file"
 * or "disk I/O error" for them); anything else is SQLite's message.
 * not_writable: 0 when path, or its directory when it does not exist, is
 * writable by this process, else the errno that says why not. */
static int not_writable(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (access(path, W_OK) == 0)
		return 0;
	if (errno == ENOENT) { /* may it be created? */
		if (!slash)
			snprintf(dir, sizeof dir, ".");
		else
			snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
		if (access(dir, W_OK) == 0)
			return 0;
	}
	return errno == EROFS || errno == EACCES || errno == EPERM ? errno : 0;
}

static int open_error(sqlite3 *db, int rc, const char *path, const char *verb, struct err *e)
{
	int sys = db ? sqlite3_system_errno(db) : 0, prim = rc & 0xff, why = 0;
	bool cant = prim == SQLITE_CANTOPEN || prim == SQLITE_IOERR || prim == SQLITE_READONLY;

	if (cant)
		why = sys == EROFS ? EROFS : not_writable(path);
	if (why)
		return err_set(e, "%s: the database is read-only (%s)", path, strerror(why));
	if (prim == SQLITE_READONLY)
		return err_set(e, "%s: the database is read-only", path);
	if (prim == SQLITE_FULL || ((prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN) &&
				    (sys == ENOSPC || sys == EDQUOT)))
		return err_set(e, "%s: no space left on the device", path);
	return err_set(e, "cannot %s %s: %s", verb, path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* Files above this size are not read whole by quick_check at every start. */
#define QUICK_CHECK_MAX ((off_t)64 << 20)

/* Reads the header fields; refuses what is not ours.  Writes nothing. */
static int probe(sqlite3 *db, const char *path, int64_t *version, struct err *e)
{
	int64_t appid = 0, n_schema = 0;
	int rc = pragma_int(db, "PRAGMA application_id", &appid);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "PRAGMA user_version", version);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "SELECT count(*) FROM sqlite_schema", &n_schema);
	if (is_damage(rc))
		return err_set(e, "%s is not a SQLite database or is damaged (%s); it was left unchanged",
			       path, sqlite3_errstr(rc));
	if (rc != SQLITE_OK)
		return open_error(db, rc, path, "read", e);
	if (appid != 0 && appid != STORE_APPLICATION_ID)
		return err_set(e, "%s is a SQLite database of another program (application_id %lld); "
			       "it was left unchanged", path, (long long)appid);
	if (appid == 0 && (*version != 0 || n_schema != 0))
		return err_set(e, "%s is a SQLite database but not an attnscope one; it was left unchanged",
			       path);
	if (*version > STORE_SCHEMA_VERSION)
		return err_set(e, "%s was written by a newer attnscope (schema version %lld, this build "
			       "knows up to %d); it was left unchanged", path, (long long)*version,
			       STORE_SCHEMA_VERSION);
	struct stat sb;
	if (n_schema > 0 && stat(path, &sb) == 0 && sb.st_size <= QUICK_CHECK_MAX) {
		char res[256];
		rc = pragma_text(db, "PRAGMA quick_check(1)", res, sizeof res);
		if (rc != SQLITE_OK || strcmp(res, "ok") != 0)
			return err_set(e, "%s is damaged (%s); it was left unchanged", path,
				       rc != SQLITE_OK ? sqlite3_errstr(rc) : res);
	}
	return 0;
}

/* Brings the schema to STORE_SCHEMA_VERSION in one transaction (re-reading
 * the version under the write lock, as another process may have done it). */
static int migrate(sqlite3 *db, const char *path, struct err *e)
{
	int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return open_error(db, rc, path, "write", e);
	int64_t version = 0;
	if (probe(db, path, &version, e) != 0) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	for (int64_t v = version; v < STORE_SCHEMA_VERSION; v++) {
		char *msg = NULL;
		rc = sqlite3_exec(db, migrations[v], NULL, NULL, &msg);
		if (rc != SQLITE_OK) {
			if ((rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_READONLY)
				open_error(db, rc, path, "write", e);
			else
				err_set(e, "cannot write %s: schema version %lld to %lld: %s", path,
					(long long)v, (long long)v + 1, msg ? msg : sqlite3_errstr(rc));
			sqlite3_free(msg);
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
			return -1;
		}
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		open_error(db, rc, path, "write", e);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

/*
 * Serialises the first minutes of a connection — probe, WAL switch,
 * migration — among attnscope processes opening the same file at once:
 * SQLite answers some of those steps with SQLITE_BUSY without waiting, and
 * a second process could see the first one's half-made database.  An
 * flock(2) on the database file itself (a lock namespace apart from the
 * POSIX locks SQLite uses) is taken for up to STORE_BUSY_MS.  The
 * descriptor stays open until store_close, because closing any descriptor
 * of the file would drop SQLite's own locks.  Returns the descriptor, or
 * -1 when the file cannot be opened (SQLite then reports why).
 */
static int init_lock(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) != 0 && waited < STORE_BUSY_MS; waited += 10)
		usleep(10000);
	return fd;
}

struct store *store_open(const char *path, struct err *e)
{
	if (!path || !path[0]) {
		err_set(e, "no database path");
		return NULL;
	}
	if (file_refuse_special(path, false, "a database file", e))
		return NULL;
	int lockfd = init_lock(path);
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		open_error(db, rc, path, "open or create", e);
		sqlite3_close(db);
		if (lockfd >= 0)
			close(lockfd);
		return NULL;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, STORE_BUSY_MS);
	int64_t version = 0;
	if (probe(db, path, &version, e) != 0)
		goto fail;
	if (sqlite3_db_readonly(db, "main") == 1) {
		open_error(db, SQLITE_READONLY, path, "write", e);
		goto fail;
	}
	char mode[32];
	rc = pragma_text(db, "PRAGMA journal_mode = WAL", mode, sizeof mode);
	if (rc != SQLITE_OK) {
		open_error(db, rc, path, "write", e);
		goto fail;
	}
	if (strcmp(mode, "wal") != 0) {
		err_set(e, "cannot write %s: the WAL journal could not be set up", path);
		goto fail;
	}
	if (sqlite3_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", NULL, NULL,
			 NULL) != SQLITE_OK) {
		err_set(e, "%s: %s", path, sqlite3_errmsg(db));
		goto fail;
	}
	if (version < STORE_SCHEMA_VERSION) {
		if (migrate(db, path, e) != 0)
			goto fail;
	} else {
		/* up to date: check that we may write (the lock, the -wal file)
		 * without changing anything */
		rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			open_error(db, rc, path, "write", e);
			goto fail;
		}
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	}
	struct store *st = xcalloc(1, sizeof *st);
	st->db = db;
	st->path = xstrdup(path);
	st->lockfd = lockfd;
	if (lockfd >= 0)
		flock(lockfd, LOCK_UN);
	return st;
fail:
	sqlite3_close(db);
	if (lockfd >= 0)
		close(lockfd); /* after sqlite3_close: closing a descriptor of the file
				  drops this process's POSIX locks on it */
	return NULL;
}

/* Creates each missing directory of path's directory part (mode 0777 less
 * the umask); failures show when the database is opened. */
static void make_parents(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0777);
			*p = '/';
		}
	mkdir(dir, 0777);
}

/* The database when neither --db nor $ATTNSCOPE_DB names one: in a
 * directory that has sessions/ (a checkout of attnscope, where the demos
 * live) STORE_DEFAULT_PATH; elsewhere $XDG_DATA_HOME/attnscope/attnscope.db,
 * $XDG_DATA_HOME defaulting to ~/.local/share, so that running attnscope
 * from any directory neither litters it nor splits the history.  The
 * directories are created.  NULL with a message without a home. */
static const char *default_path(char *buf, size_t size, struct err *e)
{
	struct stat sb;
	if (stat("sessions", &sb) == 0 && S_ISDIR(sb.st_mode))
		return STORE_DEFAULT_PATH;
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, size, "%s/attnscope/attnscope.db", xdg);
	else if (home && home[0])
		n = snprintf(buf, size, "%s/.local/share/attnscope/attnscope.db", home);
	else
		return err_set(e, "no sessions/ directory here and no $HOME for the default database"),
		       NULL;
	if (n < 0 || (size_t)n >= size)
		return err_set(e, "the default database path is too long"), NULL;
	make_parents(buf);
	return buf;
}

struct store *store_open_default(const char *db_flag, bool no_db, char *warning, size_t size)
{
	if (size)
		warning[0] = '\0';
	if (no_db)
		return NULL;
	const char *path = db_flag;
	char home_db[PATH_MAX];
	if (!path) {
		const char *env = getenv(STORE_ENV);
		path = env && env[0] ? env : NULL;
	}
	if (!path) {
		struct err he;
		path = default_path(home_db, sizeof home_db, &he);
		if (!path) {
			if (size)
				snprintf(warning, size, "%s; going on without recording sessions (--db PATH "
					 "chooses a file, --no-db turns recording off)", he.msg);
			return NULL;
		}
	}
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st && size)
		snprintf(warning, size,
			 "%s; going on without recording sessions (--db PATH for another file, "
			 "--no-db to turn recording off)", e.msg);
	return st;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < N_STMT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	if (st->lockfd >= 0)
		close(st->lockfd);
	free(st->path);
	free(st->session_model);
	free(st);
}

const char *store_path(const struct store *st)
{
	return st ? st->path : NULL;
}

void store_set_busy_timeout(struct store *st, int ms)
{
	if (st)
		sqlite3_busy_timeout(st->db, ms);
}

bool store_recording(const struct store *st)
{
	return st && !st->dead;
}

int64_t store_session_id(const struct store *st)
{
	return st ? st->session_id : 0;
}

int64_t store_last_measurement(const struct store *st)
{
	return st ? st->last_measurement : 0;
}

void store_set_replaying(struct store *st, bool on)
{
	if (st)
		st->replaying = on;
}

bool store_replaying(const struct store *st)
{
	return st && st->replaying;
}

void store_suppress(struct store *st, int delta)
{
	if (st)
		st->suppress += delta;
}

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

/* What a session's model is, found before any transaction (hashing a large
 * file must not hold the write lock). */
struct model_ident {
	const char *name, *spec;
	char path[PATH_MAX];
	char sha[65];
	bool has_path, has_sha;
};

static void model_ident(struct store *st, const struct session *s, struct model_ident *id)
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
static char *ablated_list(const struct model *m, const struct run_options *o)
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
	sqlite3_stmt *q = stmt(st, S_INS_STATE, e);
	if (!q)
		return -1;
	char *abl = ablated_list(s->model, &s->opt);
	int rc = SQLITE_OK;
#define B(x) \
	do { \
		if (rc == SQLITE_OK) \
			rc = (x); \
	} while (0)
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
	}
	B(sqlite3_bind_int(q, 12, s->sel_layer));
	B(sqlite3_bind_int(q, 13, s->sel_head));
	B(sqlite3_bind_int(q, 14, s->sel_token));
	B(sqlite3_bind_int(q, 15, s->threads));
	free(abl);
	if (rc != SQLITE_OK) {
		done(q);
		return db_err(st, e, "binding a state");
	}
	if (run_stmt(st, q, "recording a state", e) != 0)
		return -1;
	*out = sqlite3_last_insert_rowid(st->db);
	return 0;
}

/* Inside a transaction: creates the session's row when it has none. */
static int ensure_session(struct store *st, const struct session *s, const struct model_ident *id,
			  struct err *e)
{
	if (st->session_id)
		return 0;
	int64_t state;
	if (insert_state(st, s, id, &state, e) != 0)
		return -1;
	sqlite3_stmt *q = stmt(st, S_INS_SESSION, e);
	if (!q)
		return -1;
	int rc = SQLITE_OK;
	B(bind_str(q, 1, id->name));
	B(bind_str(q, 2, id->has_sha ? id->sha : NULL));
	B(bind_str(q, 3, ATTNSCOPE_VERSION));
	B(sqlite3_bind_int64(q, 4, state));
	if (rc != SQLITE_OK) {
		done(q);
		return db_err(st, e, "binding a session");
	}
	if (run_stmt(st, q, "recording the session", e) != 0)
		return -1;
	st->session_id = sqlite3_last_insert_rowid(st->db);
	st->session_new = true;
	st->seq = 0;
	free(st->session_model);
	st->session_model = id->name ? xstrdup(id->name) : NULL;
	return 0;
}

/* The first failed recording write: one warning, then nothing is recorded. */
static void stop_recording(struct session *s, const struct err *e)
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
static int stop_recording_reported(struct store *st, struct err *e)
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
static bool live(struct session *s)
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
	model_ident(st, s, &id);
	if (tx_begin(st, e) != 0)
		return -1;
	if (ensure_session(st, s, &id, e) != 0 || tx_commit(st, e) != 0) {
		tx_rollback(st);
		return -1;
	}
	return 0;
}

int64_t store_command_begin(struct session *s, const char *line)
{
	if (!live(s))
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
		model_ident(st, s, &id);
	if (tx_begin(st, &e) != 0)
		goto fail;
	if (ensure_session(st, s, &id, &e) != 0)
		goto fail;
	sqlite3_stmt *q = stmt(st, S_INS_COMMAND, &e);
	if (!q)
		goto fail;
	int64_t seq = st->seq + 1;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(sqlite3_bind_int64(q, 2, seq));
	B(sqlite3_bind_int(q, 3, st->depth));
	B(bind_str(q, 4, line));
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, &e, "binding a command");
		goto fail;
	}
	if (run_stmt(st, q, "recording a command", &e) != 0 || tx_commit(st, &e) != 0)
		goto fail;
	st->seq = seq;
	st->stack[st->depth++] = seq;
	return seq;
fail:
	tx_rollback(st);
	stop_recording(s, &e);
	return 0;
}

void store_command_end(struct session *s, int64_t seq, int rc_cmd, const char *message)
{
	if (!seq || !s->store)
		return;
	struct store *st = s->store;
	if (st->depth > 0 && st->stack[st->depth - 1] == seq)
		st->depth--;
	if (!live(s))
		return;
	struct err e;
	sqlite3_stmt *q = stmt(st, S_END_COMMAND, &e);
	if (!q)
		goto fail;
	if (tx_begin(st, &e) != 0)
		goto fail;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(sqlite3_bind_int64(q, 2, seq));
	B(sqlite3_bind_int(q, 3, rc_cmd >= 0));
	B(rc_cmd < 0 ? bind_str(q, 4, message && message[0] ? message : "failed")
		     : sqlite3_bind_null(q, 4));
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, &e, "binding a command");
		goto fail;
	}
	if (run_stmt(st, q, "recording a command", &e) != 0 || tx_commit(st, &e) != 0)
		goto fail;
	return;
fail:
	tx_rollback(st);
	stop_recording(s, &e);
}

/* Inside a transaction: the head rows of measurement mid. */
static int put_heads(struct store *st, int64_t mid, const struct store_head_row *rows, int n,
		     struct err *e)
{
	sqlite3_stmt *q = stmt(st, S_UPSERT_HEAD, e);
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
		if (rc != SQLITE_OK) {
			done(q);
			return db_err(st, e, "binding head stats");
		}
		if (run_stmt(st, q, "recording head stats", e) != 0)
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
	if (!live(s) || s->store->suppress > 0 || !session_ready(s))
		return;
	struct store *st = s->store;
	const struct model_config *c = &s->model->cfg;
	struct model_ident id;
	model_ident(st, s, &id);
	char variant[512];
	session_variant(s, variant, sizeof variant);
	char *abl = ablated_list(s->model, &s->opt);
	/* every score but induction (that one needs its own forward pass: the
	 * analysis commands add it, and the role, with store_head_scores) */
	int nh = c->n_layer * c->n_head;
	struct head_scores *sc = xcalloc((size_t)nh, sizeof *sc);
	bool *delim = xmalloc((size_t)s->n_tokens * sizeof *delim);
	heads_delimiters(s->model->tok, s->tokens, s->n_tokens, delim);
	heads_score_run(s->run, delim, NULL, sc);
	free(delim);
	struct store_head_row *rows = xcalloc((size_t)nh, sizeof *rows);
	for (int i = 0; i < nh; i++)
		head_row_from(&rows[i], i / c->n_head, i % c->n_head, &sc[i], false);
	free(sc);
	double loss = s->run->loss, base = s->base->loss;

	struct err e;
	sqlite3_stmt *q = NULL;
	if (tx_begin(st, &e) != 0 || ensure_session(st, s, &id, &e) != 0)
		goto fail;
	q = stmt(st, S_INS_MEAS, &e);
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
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, &e, "binding a measurement");
		goto fail;
	}
	if (run_stmt(st, q, "recording a measurement", &e) != 0)
		goto fail;
	int64_t mid = sqlite3_last_insert_rowid(st->db);
	if (put_heads(st, mid, rows, nh, &e) != 0)
		goto fail;
	bool model_changed = (id.name == NULL) != (st->session_model == NULL) ||
			     (id.name && strcmp(id.name, st->session_model));
	if (model_changed) {
		sqlite3_stmt *u = stmt(st, S_SESSION_MODEL, &e);
		if (!u)
			goto fail;
		rc = SQLITE_OK;
		B(sqlite3_bind_int64(u, 1, st->session_id));
		B(bind_str(u, 2, id.name));
		B(bind_str(u, 3, id.has_sha ? id.sha : NULL));
		if (rc != SQLITE_OK) {
			done(u);
			db_err(st, &e, "binding a session");
			goto fail;
		}
		if (run_stmt(st, u, "recording the session's model", &e) != 0)
			goto fail;
	}
	if (tx_commit(st, &e) != 0)
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
	tx_rollback(st);
	stop_recording(s, &e);
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
	if (tx_begin(st, e) != 0)
		return stop_recording_reported(st, e);
	if (put_heads(st, measurement_id, rows, n, e) != 0 || tx_commit(st, e) != 0) {
		tx_rollback(st);
		return stop_recording_reported(st, e);
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

int store_get_head_stats(struct store *st, int64_t measurement_id, struct store_head_row **rows,
			 int *n, struct err *e)
{
	*rows = NULL;
	*n = 0;
	sqlite3_stmt *q = stmt(st, S_GET_HEADS, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, measurement_id);
	void *v = NULL;
	if (step_rows(q, sizeof **rows, 64, read_head_row, &v, n) != SQLITE_DONE) {
		store_head_rows_free(v, *n);
		*n = 0;
		return db_err(st, e, "reading head stats");
	}
	*rows = v;
	return 0;
}

void store_head_rows_free(struct store_head_row *rows, int n)
{
	for (int i = 0; rows && i < n; i++)
		free((char *)rows[i].role);
	free(rows);
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
	model_ident(st, s, &id);
	if (tx_begin(st, e) != 0)
		return -1;
	int64_t state;
	if (ensure_session(st, s, &id, e) != 0 || insert_state(st, s, &id, &state, e) != 0)
		goto fail;
	sqlite3_stmt *q = stmt(st, S_SESSION_SAVE, e);
	if (!q)
		goto fail;
	int rc = SQLITE_OK;
	B(sqlite3_bind_int64(q, 1, st->session_id));
	B(bind_bytes(q, 2, name, len));
	B(sqlite3_bind_int64(q, 3, state));
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, e, "binding a session");
		goto fail;
	}
	if (run_stmt(st, q, "saving the session", e) != 0 || tx_commit(st, e) != 0)
		goto fail;
	return 0;
fail:
	tx_rollback(st);
	return -1;
}

int store_find_session(struct store *st, const char *ref, int64_t *id, struct err *e)
{
	size_t len = strlen(ref), i = 0;
	while (i < len && ref[i] >= '0' && ref[i] <= '9')
		i++;
	bool by_id = len > 0 && i == len && len < 19;
	sqlite3_stmt *q = stmt(st, by_id ? S_FIND_ID : S_FIND_NAME, e);
	if (!q)
		return -1;
	if (by_id)
		sqlite3_bind_int64(q, 1, strtoll(ref, NULL, 10));
	else
		bind_bytes(q, 1, ref, len);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(q, 0);
	done(q);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return db_err(st, e, "finding a session");
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

int store_get_state(struct store *st, int64_t session_id, bool saved, struct store_state *out,
		    struct err *e)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *q = stmt(st, S_GET_STATE, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_int(q, 2, saved);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
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
	}
	done(q);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return db_err(st, e, "reading a session");
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
	if (tx_begin(st, e) != 0)
		return -1;
	int64_t changed[8] = { 0 };
	for (size_t i = 0; i < sizeof del / sizeof del[0]; i++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(st->db, del[i], -1, &q, NULL) != SQLITE_OK) {
			db_err(st, e, "forgetting a session");
			tx_rollback(st);
			return -1;
		}
		if (strstr(del[i], "?1"))
			sqlite3_bind_int64(q, 1, id);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE) {
			db_err(st, e, "forgetting a session");
			tx_rollback(st);
			return -1;
		}
		changed[i] = sqlite3_changes(st->db);
	}
	if (changed[6] == 0) {
		tx_rollback(st);
		return err_set(e, "no session %lld", (long long)id);
	}
	if (tx_commit(st, e) != 0) {
		tx_rollback(st);
		return -1;
	}
	*n_commands = changed[4];
	*n_measurements = changed[3];
	return 0;
}

int store_list_sessions(struct store *st, struct store_session_info **out, int *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = stmt(st, S_LIST_SESSIONS, e);
	if (!q)
		return -1;
	void *v = NULL;
	if (step_rows(q, sizeof **out, 16, read_session_info, &v, n) != SQLITE_DONE) {
		store_sessions_free(v, *n);
		*n = 0;
		return db_err(st, e, "listing sessions");
	}
	*out = v;
	return 0;
}

void store_sessions_free(struct store_session_info *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].created_at);
		free(v[i].saved_at);
		free(v[i].model);
	}
	free(v);
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

int store_get_commands(struct store *st, int64_t session_id, struct store_command **out, int *n,
		       struct err *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = stmt(st, S_GET_COMMANDS, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, session_id);
	void *v = NULL;
	if (step_rows(q, sizeof **out, 32, read_command, &v, n) != SQLITE_DONE) {
		store_commands_free(v, *n);
		*n = 0;
		return db_err(st, e, "reading commands");
	}
	*out = v;
	return 0;
}

void store_commands_free(struct store_command *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].line);
		free(v[i].message);
	}
	free(v);
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
	m->threads = (int)col_int(q, 23, 0);
}

int store_get_measurements(struct store *st, int64_t session_id, int64_t last,
			   struct store_measurement **out, int *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = stmt(st, S_GET_MEAS, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_int64(q, 2, last);
	void *rows = NULL;
	if (step_rows(q, sizeof **out, 32, read_measurement, &rows, n) != SQLITE_DONE) {
		store_measurements_free(rows, *n);
		*n = 0;
		return db_err(st, e, "reading measurements");
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

int store_count_measurements(struct store *st, int64_t session_id, int64_t *count, struct err *e)
{
	sqlite3_stmt *q = stmt(st, S_COUNT_MEAS, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, session_id);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*count = sqlite3_column_int64(q, 0);
	done(q);
	return rc == SQLITE_ROW ? 0 : db_err(st, e, "counting measurements");
}

int store_get_measurement(struct store *st, int64_t id, struct store_measurement *out,
			  struct err *e)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *q = stmt(st, S_GET_MEAS_ONE, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		read_measurement(q, out);
	done(q);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return db_err(st, e, "reading a measurement");
	return err_set(e, "no measurement %lld (measurements lists them)", (long long)id);
}

void store_measurement_free(struct store_measurement *m)
{
	free(m->created_at);
	free(m->model);
	free(m->model_sha256);
	free(m->variant);
	free(m->norm);
	free(m->mask);
	free(m->ablated);
	free(m->text);
	memset(m, 0, sizeof *m);
}

void store_measurements_free(struct store_measurement *v, int n)
{
	for (int i = 0; v && i < n; i++)
		store_measurement_free(&v[i]);
	free(v);
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
	if (rc != SQLITE_OK) {
		done(q);
		return db_err(st, e, "binding a sweep entry");
	}
	return run_stmt(st, q, "recording a sweep entry", e);
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

	sqlite3_stmt *q = stmt(st, S_INS_SWEEP, e);
	sqlite3_stmt *qe = q ? stmt(st, S_INS_SWEEP_ENTRY, e) : NULL;
	if (!qe || tx_begin(st, e) != 0)
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
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, e, "binding a sweep");
		goto fail;
	}
	if (run_stmt(st, q, "recording a sweep", e) != 0)
		goto fail;
	int64_t id = sqlite3_last_insert_rowid(st->db);
	for (int l = 0; l < r->L; l++)
		for (int h = 0; h < r->H; h++)
			if (put_sweep_entry(st, qe, id, l, h, &r->head[l * r->H + h], e) != 0)
				goto fail;
	for (int l = 0; l < r->L; l++)
		if (put_sweep_entry(st, qe, id, l, -1, &r->layer[l], e) != 0)
			goto fail;
	if (tx_commit(st, e) != 0)
		goto fail;
	return id;
fail:
	tx_rollback(st);
stop:
	snprintf(s->store_note, sizeof s->store_note, "not recording");
	return stop_recording_reported(st, e);
}

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
	sqlite3_stmt *q = stmt(st, S_INS_LAB, e);
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
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, e, "binding a lab run");
		goto stop;
	}
	if (run_stmt(st, q, "recording a lab run", e) != 0)
		goto stop;
	return sqlite3_last_insert_rowid(st->db);
stop:
	snprintf(s->store_note, sizeof s->store_note, "not recording");
	return stop_recording_reported(st, e);
}

/* --------------------------------------------------------------- training */

int64_t store_training_run(struct store *st, const struct store_train_run *r, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = stmt(st, S_INS_TRAIN, e);
	if (!q || tx_begin(st, e) != 0)
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
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, e, "binding a training run");
		goto fail;
	}
	if (run_stmt(st, q, "recording a training run", e) != 0)
		goto fail;
	int64_t id = sqlite3_last_insert_rowid(st->db);
	if (tx_commit(st, e) != 0)
		goto fail;
	return id;
fail:
	tx_rollback(st);
	return -1;
}

int store_training_steps(struct store *st, int64_t run_id, const struct store_train_step *steps,
			 int n, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = stmt(st, S_INS_STEP, e);
	if (!q || tx_begin(st, e) != 0)
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
		if (rc != SQLITE_OK) {
			done(q);
			db_err(st, e, "binding a training step");
			goto fail;
		}
		if (run_stmt(st, q, "recording a training step", e) != 0)
			goto fail;
	}
	free(json);
	if (tx_commit(st, e) != 0) {
		tx_rollback(st);
		return -1;
	}
	return 0;
fail:
	free(json);
	tx_rollback(st);
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

int store_get_training_steps(struct store *st, int64_t run_id, struct store_train_row **rows,
			     int *n, char **status, char **model_path, struct err *e)
{
	*rows = NULL;
	*n = 0;
	*status = *model_path = NULL;
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = stmt(st, S_GET_TRAIN, e);
	if (!q)
		return -1;
	sqlite3_bind_int64(q, 1, run_id);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*status = col_str(q, 0);
		*model_path = col_str(q, 1);
	}
	done(q);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? err_set(e, "no training run %lld in %s", (long long)run_id,
						   st->path)
					 : db_err(st, e, "reading a training run");
	if (!(q = stmt(st, S_GET_STEPS, e)))
		goto fail;
	sqlite3_bind_int64(q, 1, run_id);
	void *v = NULL;
	if (step_rows(q, sizeof **rows, 256, read_train_row, &v, n) != SQLITE_DONE) {
		store_train_rows_free(v, *n);
		*n = 0;
		db_err(st, e, "reading training steps");
		goto fail;
	}
	*rows = v;
	return 0;
fail:
	free(*status);
	free(*model_path);
	*status = *model_path = NULL;
	return -1;
}

void store_train_rows_free(struct store_train_row *v, int n)
{
	for (int i = 0; v && i < n; i++)
		free(v[i].layer_grad_norms);
	free(v);
}

int store_training_finish(struct store *st, int64_t run_id, const char *status, int64_t steps_done,
			  int64_t tokens_seen, double final_loss, double val_loss, double wall_s,
			  const char *message, struct err *e)
{
	if (!st)
		return err_set(e, "no session database");
	sqlite3_stmt *q = stmt(st, S_FINISH_TRAIN, e);
	if (!q || tx_begin(st, e) != 0)
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
#undef B
	if (rc != SQLITE_OK) {
		done(q);
		db_err(st, e, "binding a training run");
		goto fail;
	}
	if (run_stmt(st, q, "finishing a training run", e) != 0 || tx_commit(st, e) != 0)
		goto fail;
	return 0;
fail:
	tx_rollback(st);
	return -1;
}
