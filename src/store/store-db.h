/*
 * store-db.h — what the files of src/store/ share, and nothing outside
 * them includes: struct store, the prepared statements, the helpers that
 * bind parameters and read columns, the one row reader, and the recording
 * helpers of store-session.c.  The files, each using only those before it:
 *
 *   store-sql.c      the schema's migrations and every statement's SQL
 *   store.c          open (probe, migrate, lock), close, transactions, the
 *                    row reader
 *   store-files.c    model files' sha256, cached in model_files
 *   store-session.c  sessions, their states and commands
 *   store-measure.c  measurements, head stats and sweeps
 *   store-runs.c     training runs and lab runs
 *
 * Failure as in store.h: 0 / a pointer, or -1 / NULL with a message in e
 * ("PATH: WHAT: SQLite's message" from db_err).
 */
#ifndef ATTNSCOPE_STORE_DB_H
#define ATTNSCOPE_STORE_DB_H

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "session.h"
#include "store.h"

#define NOW "strftime('%Y-%m-%d %H:%M:%f','now')"

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

/* Migration i takes user_version i to i + 1 (store-sql.c). */
extern const char *const store_migrations[STORE_SCHEMA_VERSION];
/* The SQL of each statement, prepared once on first use (store-sql.c). */
extern const char *const store_stmt_sql[N_STMT];

/* ----------------------------------------------------------------- store */

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
	int files;              /* util.h group of the database, -wal, -shm, -journal */
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

/* "PATH: WHAT: SQLite's message" in e; returns -1. */
int db_err(struct store *st, struct err *e, const char *what);

/* Statement id, prepared on first use and kept until store_close.  NULL
 * with a message when it cannot be prepared. */
sqlite3_stmt *db_stmt(struct store *st, enum stmt_id id, struct err *e);

static inline void db_done(sqlite3_stmt *q)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
}

/* Runs a bound statement that returns no rows: 0, or -1 with a message
 * (WHAT names it).  q is reset. */
int db_run(struct store *st, sqlite3_stmt *q, const char *what, struct err *e);

/* Runs q once its parameters are bound, rc being the first binding's
 * failure (SQLITE_OK: none): 0, or -1 with "PATH: BINDING: ..." or "PATH:
 * RUNNING: ..." (q reset either way). */
int db_run_bound(struct store *st, sqlite3_stmt *q, int rc, const char *binding,
		 const char *running, struct err *e);

/* A BEGIN IMMEDIATE transaction, its COMMIT, and its ROLLBACK (a no-op
 * outside one; forgets a session row made inside it). */
int db_begin(struct store *st, struct err *e);
int db_commit(struct store *st, struct err *e);
void db_rollback(struct store *st);

/* Binding: B(x) runs x while rc, a local int of the caller, is SQLITE_OK,
 * and keeps the first failure in rc (then db_run_bound reports it). */
#define B(x) \
	do { \
		if (rc == SQLITE_OK) \
			rc = (x); \
	} while (0)

/* ----------------------------------------------------------- bind/column */

/* Binds len bytes: as TEXT when valid UTF-8, else as a BLOB (so that every
 * byte round-trips); NULL binds NULL. */
static inline int bind_bytes(sqlite3_stmt *q, int i, const char *s, size_t len)
{
	if (!s)
		return sqlite3_bind_null(q, i);
	if (store_utf8_valid(s, len))
		return sqlite3_bind_text64(q, i, s, len, SQLITE_TRANSIENT, SQLITE_UTF8);
	return sqlite3_bind_blob64(q, i, s, len, SQLITE_TRANSIENT);
}

static inline int bind_str(sqlite3_stmt *q, int i, const char *s)
{
	return bind_bytes(q, i, s, s ? strlen(s) : 0);
}

static inline int bind_num(sqlite3_stmt *q, int i, double v)
{
	return isnan(v) ? sqlite3_bind_null(q, i) : sqlite3_bind_double(q, i, v);
}

static inline int bind_id(sqlite3_stmt *q, int i, int64_t v)
{
	return v ? sqlite3_bind_int64(q, i, v) : sqlite3_bind_null(q, i);
}

/* A copy of column i (NUL-terminated; its length in *len), NULL for NULL. */
static inline char *col_bytes(sqlite3_stmt *q, int i, size_t *len)
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

static inline char *col_str(sqlite3_stmt *q, int i)
{
	return col_bytes(q, i, NULL);
}

static inline double col_num(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static inline int64_t col_int(sqlite3_stmt *q, int i, int64_t dflt)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(q, i);
}

/* ------------------------------------------------------------ row reader */

/*
 * How the rows of one query become C values: read fills one size-byte
 * element from the current row (texts copied, malloc'd); free_row frees
 * what read allocated in one element (NULL: nothing); what names the
 * reading in messages ("reading commands").
 */
struct row_type {
	size_t size;
	int cap0;       /* elements allocated at first */
	void (*read)(sqlite3_stmt *q, void *row);
	void (*free_row)(void *row);
	const char *what;
};

/* Frees the n elements of type t at v, then v; NULL is a no-op. */
void db_rows_free(const struct row_type *t, void *v, int n);

/*
 * The one row reader: steps statement id, with args[0..n_args) bound to
 * ?1, ?2, ... (args NULL: as the caller bound it), to its end and reads
 * every row by t->read into a growing array: *out (malloc'd, free with
 * db_rows_free; NULL when there are no rows) of *n elements.  The
 * statement is reset.  0, or -1 with "PATH: WHAT: SQLite's message" and
 * nothing left allocated.
 */
int db_rows(struct store *st, enum stmt_id id, const int64_t *args, int n_args,
	    const struct row_type *t, void **out, int *n, struct err *e);

/* The same for a query of one row: reads the first row, if any, into row.
 * 1 when there was one, 0 when there was none, -1 with a message. */
int db_row(struct store *st, enum stmt_id id, const int64_t *args, int n_args,
	   const struct row_type *t, void *row, struct err *e);

/* A row reader of one integer, column 0, into an int64_t. */
void db_read_int64(sqlite3_stmt *q, void *row);

/* ------------------------------------------- recording (store-session.c) */

/* What a session's model is, found before any transaction (hashing a large
 * file must not hold the write lock). */
struct model_ident {
	const char *name, *spec;
	char path[PATH_MAX];
	char sha[65];
	bool has_path, has_sha;
};

void rec_model_ident(struct store *st, const struct session *s, struct model_ident *id);

/* "0.1 1.2": the ablated heads of o for model m (malloc'd; "" when none). */
char *rec_ablated_list(const struct model *m, const struct run_options *o);

/* Inside a transaction: creates the session's row when it has none. */
int rec_ensure_session(struct store *st, const struct session *s, const struct model_ident *id,
		       struct err *e);

/* The first failed recording write: one warning, then nothing is recorded. */
void rec_stop(struct session *s, const struct err *e);

/* The first failed write of a result whose caller reports failures itself
 * (store_head_stats, store_sweep, store_lab_run): recording stops as in
 * rec_stop, and the message in e, which the caller prints as the one
 * warning, says so.  Returns -1. */
int rec_stop_reported(struct store *st, struct err *e);

/* Whether s records.  When recording has stopped, makes sure the prompt
 * says so (rec_stop_reported has no session at hand). */
bool rec_live(struct session *s);

#endif
