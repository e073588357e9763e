/*
 * store.c — the session database (see store.h): opening it (probe, lock,
 * WAL, migrations), closing it, statements and transactions, and the one
 * row reader the other files of src/store/ read their queries with
 * (store-db.h).  Only src/store/ includes sqlite3.h.
 */
#define _GNU_SOURCE
#include "store-db.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ statements */

int db_err(struct store *st, struct err *e, const char *what)
{
	return err_set(e, "%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

sqlite3_stmt *db_stmt(struct store *st, enum stmt_id id, struct err *e)
{
	if (!st->stmt[id]) {
		int rc = sqlite3_prepare_v3(st->db, store_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &st->stmt[id], NULL);
		if (rc != SQLITE_OK) {
			db_err(st, e, "preparing a statement");
			st->stmt[id] = NULL;
			return NULL;
		}
	}
	return st->stmt[id];
}

/* Runs a bound statement that returns no rows. */
int db_run(struct store *st, sqlite3_stmt *q, const char *what, struct err *e)
{
	int rc = sqlite3_step(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		db_err(st, e, what);
		db_done(q);
		return -1;
	}
	db_done(q);
	return 0;
}

/* Runs q once its parameters are bound, rc being the first binding's
 * failure (SQLITE_OK: none): 0, or -1 with "PATH: BINDING: ..." or "PATH:
 * RUNNING: ..." (q reset either way). */
int db_run_bound(struct store *st, sqlite3_stmt *q, int rc, const char *binding,
		     const char *running, struct err *e)
{
	if (rc != SQLITE_OK) {
		db_done(q);
		return db_err(st, e, binding);
	}
	return db_run(st, q, running, e);
}

static int simple(struct store *st, enum stmt_id id, const char *what, struct err *e)
{
	sqlite3_stmt *q = db_stmt(st, id, e);
	return q ? db_run(st, q, what, e) : -1;
}

int db_begin(struct store *st, struct err *e)
{
	st->session_new = false;
	return simple(st, S_BEGIN, "starting a transaction", e);
}

int db_commit(struct store *st, struct err *e)
{
	if (simple(st, S_COMMIT, "committing", e) != 0)
		return -1;
	st->session_new = false;
	return 0;
}

void db_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_stmt *q = db_stmt(st, S_ROLLBACK, NULL);
		if (q) {
			sqlite3_step(q);
			db_done(q);
		}
	}
	if (st->session_new) {
		st->session_id = 0;
		st->session_new = false;
	}
}

/* ----------------------------------------------------------------- utf-8 */

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

/* ------------------------------------------------------------- row reader */

/* Frees the n elements of type t at v, then v; NULL is a no-op. */
void db_rows_free(const struct row_type *t, void *v, int n)
{
	for (int i = 0; v && t->free_row && i < n; i++)
		t->free_row((char *)v + (size_t)i * t->size);
	free(v);
}

/* Statement id with args[0..n_args) bound to ?1, ?2, ... (args NULL: as
 * the caller bound it).  NULL with a message when it cannot be prepared. */
static sqlite3_stmt *stmt_with(struct store *st, enum stmt_id id, const int64_t *args, int n_args,
			       struct err *e)
{
	sqlite3_stmt *q = db_stmt(st, id, e);
	for (int i = 0; q && args && i < n_args; i++)
		sqlite3_bind_int64(q, i + 1, args[i]);
	return q;
}

/*
 * The one row reader: steps statement id, bound as by stmt_with, to its
 * end and reads every row by t->read into a growing array: *out (malloc'd,
 * free with rows_free; NULL when there are no rows) of *n elements.  The
 * statement is reset.  0, or -1 with "PATH: WHAT: SQLite's message" and
 * nothing left allocated.
 */
int db_rows(struct store *st, enum stmt_id id, const int64_t *args, int n_args,
		     const struct row_type *t, void **out, int *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = stmt_with(st, id, args, n_args, e);
	if (!q)
		return -1;
	char *v = NULL;
	int cap = 0, rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : t->cap0;
			v = xrealloc(v, (size_t)cap * t->size);
		}
		t->read(q, v + (size_t)(*n)++ * t->size);
	}
	db_done(q);
	if (rc != SQLITE_DONE) {
		db_rows_free(t, v, *n);
		*n = 0;
		return db_err(st, e, t->what);
	}
	*out = v;
	return 0;
}

/* The same for a query of one row: reads the first row, if any, into row.
 * 1 when there was one, 0 when there was none, -1 with a message. */
int db_row(struct store *st, enum stmt_id id, const int64_t *args, int n_args,
		    const struct row_type *t, void *row, struct err *e)
{
	sqlite3_stmt *q = stmt_with(st, id, args, n_args, e);
	if (!q)
		return -1;
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		t->read(q, row);
	db_done(q);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : db_err(st, e, t->what);
}

void db_read_int64(sqlite3_stmt *q, void *row)
{
	*(int64_t *)row = sqlite3_column_int64(q, 0);
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
		rc = sqlite3_exec(db, store_migrations[v], NULL, NULL, &msg);
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
	st->files = in_use_new("the session database");
	in_use_add(st->files, path);
	/* SQLite names them after the file the links lead to */
	char *real = realpath(path, NULL);
	static const char *const side[] = { "-wal", "-shm", "-journal" };
	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++)
		for (int k = 0; k < 2; k++) {
			const char *base = k == 0 ? path : real;
			if (!base)
				continue;
			char *p = xmalloc(strlen(base) + 16);
			sprintf(p, "%s%s", base, side[i]);
			in_use_add(st->files, p);
			free(p);
		}
	free(real);
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
	in_use_drop(st->files);
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
