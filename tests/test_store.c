/*
 * test_store.c — the session database (store.h) and its commands: schema
 * and versions, the rows a batch of commands leaves, open and replay in a
 * new process, two writer processes, kill -9, unusable paths, hostile
 * strings.  The database is checked with plain SQLite queries, not through
 * the module under test.
 *
 * Child processes are this binary run again (fork + exec of /proc/self/exe
 * with a --child-* mode), so that no SQLite handle or OpenMP pool crosses a
 * fork.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"
#include "checkpoint.h"
#include "cmd.h"
#include "model.h"
#include "session.h"
#include "store.h"
#include "tokenizer.h"

static char tmpdir[512];
static char model_path[PATH_MAX];
static int db_counter;

/* ---------------------------------------------------------------- helpers */

/* A 2-layer, 4-head character model with seeded random weights. */
static void make_model(const char *path)
{
	struct model_config c;
	config_default(&c);
	c.d_model = 32;
	c.n_layer = 2;
	c.n_head = 4;
	c.n_kv_head = 4;
	c.d_ff = 64;
	c.context = 64;
	uint32_t cps[128];
	int n = 0;
	cps[n++] = '\n';
	for (uint32_t ch = ' '; ch < 127; ch++)
		cps[n++] = ch;
	struct err e;
	struct tokenizer *t = tok_char_new(cps, n, 0, &e);
	assert_non_null(t);
	c.vocab_size = t->vocab_size;
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	m->tok = t;
	model_init_random(m, 11);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 20.0f;
	m->name = xstrdup("storemodel");
	assert_int_equal(checkpoint_save(m, path, CKPT_F32, &e), 0);
	model_free(m);
}

/* A fresh database path in the temporary directory. */
static void db_path(char *out, size_t size, const char *tag)
{
	snprintf(out, size, "%s/%s-%d.db", tmpdir, tag, ++db_counter);
}

struct fixture {
	struct session s;
	FILE *out;
	char *outbuf;
	size_t outlen, mark;
};

static void fixture_init(struct fixture *f, struct store *st)
{
	memset(f, 0, sizeof *f);
	f->out = open_memstream(&f->outbuf, &f->outlen);
	session_init(&f->s, f->out);
	store_attach(&f->s, st);
	f->s.threads = 1;
}

static void fixture_free(struct fixture *f)
{
	store_close(f->s.store);
	store_attach(&f->s, NULL);
	session_free(&f->s);
	fclose(f->out);
	free(f->outbuf);
}

/* What the commands printed since the last call (malloc'd). */
static char *take_output(struct fixture *f)
{
	fflush(f->out);
	char *s = strndup(f->outbuf + f->mark, f->outlen - f->mark);
	f->mark = f->outlen;
	return s;
}

static void run_ok(struct session *s, const char *line)
{
	struct err e = { { 0 } };
	int rc = cmd_run_line(s, line, &e);
	if (rc < 0)
		fail_msg("%s: %s", line, e.msg);
}

static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	return db;
}

/* One integer from a query with up to one integer parameter. */
static int64_t q_int(sqlite3 *db, const char *sql, int64_t param)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_bind_parameter_count(q) > 0)
		sqlite3_bind_int64(q, 1, param);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* One text value (malloc'd; its byte length in *len), or NULL for NULL. */
static char *q_text(sqlite3 *db, const char *sql, int64_t param, size_t *len)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_bind_parameter_count(q) > 0)
		sqlite3_bind_int64(q, 1, param);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	char *out = NULL;
	if (sqlite3_column_type(q, 0) != SQLITE_NULL) {
		const void *p = sqlite3_column_blob(q, 0);
		size_t n = (size_t)sqlite3_column_bytes(q, 0);
		out = malloc(n + 1);
		memcpy(out, p, n);
		out[n] = '\0';
		if (len)
			*len = n;
	}
	sqlite3_finalize(q);
	return out;
}

static void assert_integrity(const char *path)
{
	sqlite3 *db = raw_open(path);
	char *r = q_text(db, "PRAGMA integrity_check", 0, NULL);
	assert_string_equal(r, "ok");
	free(r);
	sqlite3_close(db);
}

static char *slurp(const char *path, size_t *len)
{
	struct err e;
	char *p = read_file(path, len, &e);
	if (!p)
		fail_msg("%s", e.msg);
	return p;
}

static bool file_equals(const char *path, const char *bytes, size_t len)
{
	size_t n;
	char *p = slurp(path, &n);
	bool same = n == len && !memcmp(p, bytes, n);
	free(p);
	return same;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Runs this binary with arguments; returns its pid (stdout to out_fd when
 * >= 0, stderr to err_path when not NULL). */
static pid_t spawn(int out_fd, const char *err_path, const char *const *args)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, STDOUT_FILENO);
		if (err_path) {
			int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0)
				dup2(fd, STDERR_FILENO);
		}
		char *argv[16];
		int n = 0;
		argv[n++] = "test_store";
		for (int i = 0; args[i] && n < 15; i++)
			argv[n++] = (char *)args[i];
		argv[n] = NULL;
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ----------------------------------------------------------- schema tests */

static void test_fresh_schema(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "fresh");
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	store_close(st);

	sqlite3 *db = raw_open(path);
	assert_int_equal(q_int(db, "PRAGMA user_version", 0), STORE_SCHEMA_VERSION);
	assert_int_equal(q_int(db, "PRAGMA application_id", 0), STORE_APPLICATION_ID);
	char *mode = q_text(db, "PRAGMA journal_mode", 0, NULL);
	assert_string_equal(mode, "wal");
	free(mode);
	static const char *const tables[] = { "sessions", "states", "commands", "measurements",
					      "head_stats", "training_runs", "training_steps" };
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		sqlite3_stmt *q;
		sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
				   -1, &q, NULL);
		sqlite3_bind_text(q, 1, tables[i], -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		if (sqlite3_column_int(q, 0) != 1)
			fail_msg("table %s missing", tables[i]);
		sqlite3_finalize(q);
	}
	/* the columns the issue names */
	assert_int_equal(q_int(db, "SELECT count(*) FROM pragma_table_info('measurements') WHERE name IN "
				   "('id','session_id','created_at','model','variant','kv_heads','norm',"
				   "'mask','scale','ablated','text','n_tokens','forward_ms',"
				   "'kv_cache_bytes','loss','ppl','kl_vs_baseline','top1_agree')", 0),
			 18);
	assert_int_equal(q_int(db, "SELECT count(*) FROM pragma_table_info('head_stats') WHERE name IN "
				   "('measurement_id','layer','head','entropy','max_weight','prev_token',"
				   "'first_token','self','local','mean_distance','induction','role')", 0),
			 12);
	char *schema1 = q_text(db, "SELECT group_concat(sql, ';') FROM sqlite_schema", 0, NULL);
	sqlite3_close(db);

	/* reopening is a no-op: same bytes, same schema */
	size_t n1;
	char *bytes1 = slurp(path, &n1);
	st = store_open(path, &e);
	assert_non_null(st);
	store_close(st);
	assert_true(file_equals(path, bytes1, n1));
	db = raw_open(path);
	char *schema2 = q_text(db, "SELECT group_concat(sql, ';') FROM sqlite_schema", 0, NULL);
	assert_string_equal(schema1, schema2);
	assert_int_equal(q_int(db, "PRAGMA user_version", 0), STORE_SCHEMA_VERSION);
	sqlite3_close(db);
	free(schema1);
	free(schema2);
	free(bytes1);
}

static void test_newer_version_refused(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "newer");
	struct err e;
	struct store *st = store_open(path, &e);
	assert_non_null(st);
	store_close(st);
	sqlite3 *db = raw_open(path);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	size_t n;
	char *before = slurp(path, &n);
	e.msg[0] = '\0';
	assert_null(store_open(path, &e));
	assert_non_null(strstr(e.msg, "newer attnscope"));
	assert_non_null(strstr(e.msg, "left unchanged"));
	assert_true(file_equals(path, before, n));
	free(before);

	/* the command-line policy: a warning, no store */
	char warn[1024];
	assert_null(store_open_default(path, false, warn, sizeof warn));
	assert_non_null(strstr(warn, "schema version 99"));
	assert_non_null(strstr(warn, "without recording"));

	/* another program's database is not touched either */
	char other[PATH_MAX];
	db_path(other, sizeof other, "other");
	db = NULL;
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	before = slurp(other, &n);
	assert_null(store_open(other, &e));
	assert_non_null(strstr(e.msg, "not an attnscope one"));
	assert_true(file_equals(other, before, n));
	free(before);

	/* --no-db: nothing, no warning */
	snprintf(warn, sizeof warn, "x");
	assert_null(store_open_default(path, true, warn, sizeof warn));
	assert_string_equal(warn, "");
}

/* A forward migration: a version-0 attnscope database (application_id set,
 * nothing else) is brought to the current version. */
static void test_migration_from_zero(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "v0");
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA application_id = 1096045390", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	store_close(st);
	db = raw_open(path);
	assert_int_equal(q_int(db, "PRAGMA user_version", 0), STORE_SCHEMA_VERSION);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'measurements'", 0), 1);
	sqlite3_close(db);
}

/* ------------------------------------------------------ unusable paths */

static void test_not_sqlite_file(void **state)
{
	char path[PATH_MAX], wal[PATH_MAX + 8];
	db_path(path, sizeof path, "notdb");
	char junk[4096];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)("attnscope notes, not a database\n"[i % 32]);
	assert_int_equal(write_file_atomic(path, junk, sizeof junk, NULL), 0);

	char warn[1024];
	struct store *st = store_open_default(path, false, warn, sizeof warn);
	assert_null(st);
	assert_non_null(strstr(warn, "not a SQLite database"));
	assert_non_null(strstr(warn, "left unchanged"));
	assert_true(file_equals(path, junk, sizeof junk));
	snprintf(wal, sizeof wal, "%s-wal", path);
	assert_false(exists(wal));

	/* attnscope goes on: commands work without recording */
	struct fixture f;
	fixture_init(&f, NULL);
	snprintf(f.s.store_note, sizeof f.s.store_note, "not recording");
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	run_ok(&f.s, "text hello there");
	struct err e;
	assert_int_equal(cmd_run_line(&f.s, "save demo", &e), -1);
	assert_non_null(strstr(e.msg, "no session database"));
	fixture_free(&f);
	assert_true(file_equals(path, junk, sizeof junk));

	/* a damaged database: a page overwritten */
	char bad[PATH_MAX];
	db_path(bad, sizeof bad, "damaged");
	st = store_open(bad, &e);
	assert_non_null(st);
	fixture_init(&f, st);
	run_ok(&f.s, line);
	for (int i = 0; i < 20; i++)
		run_ok(&f.s, "text hello there, general kenobi");
	fixture_free(&f);
	size_t n;
	char *bytes = slurp(bad, &n);
	assert_true(n > 8192);
	memset(bytes + 4096, 0x5a, 2000); /* page 2: its header and cells */
	assert_int_equal(write_file_atomic(bad, bytes, n, NULL), 0);
	assert_null(store_open_default(bad, false, warn, sizeof warn));
	assert_non_null(strstr(warn, "left unchanged"));
	assert_true(file_equals(bad, bytes, n));
	free(bytes);
}

static void test_unwritable_path(void **state)
{
	char warn[1024];
	char path[PATH_MAX];
	/* a directory nobody may create files in: /proc for root, else a
	 * directory with mode 0555 */
	if (geteuid() == 0) {
		snprintf(path, sizeof path, "/proc/attnscope-test-%d.db", (int)getpid());
	} else {
		char dir[1024];
		snprintf(dir, sizeof dir, "%s/readonly", tmpdir);
		mkdir(dir, 0755);
		chmod(dir, 0555);
		snprintf(path, sizeof path, "%s/x.db", dir);
	}
	assert_null(store_open_default(path, false, warn, sizeof warn));
	assert_non_null(strstr(warn, "cannot"));
	assert_non_null(strstr(warn, "without recording"));
	assert_false(exists(path));

	/* a parent that is a file */
	char under[PATH_MAX + 16];
	snprintf(under, sizeof under, "%s", model_path);
	strcat(under, "/x.db");
	assert_null(store_open_default(under, false, warn, sizeof warn));
	assert_non_null(strstr(warn, "cannot"));

	/* an existing database in a read-only directory (not for root) */
	if (geteuid() != 0) {
		char dir[PATH_MAX], p[PATH_MAX + 8];
		snprintf(dir, sizeof dir, "%s/rodb", tmpdir);
		mkdir(dir, 0755);
		snprintf(p, sizeof p, "%s/s.db", dir);
		struct err e;
		store_close(store_open(p, &e));
		chmod(dir, 0555);
		size_t n;
		char *before = slurp(p, &n);
		assert_null(store_open_default(p, false, warn, sizeof warn));
		assert_true(file_equals(p, before, n));
		free(before);
		chmod(dir, 0755);
	}
}

/* A database locked by someone else beyond the timeout mid-session: one
 * warning, the command still works, recording stops, the prompt is told. */
static void test_locked_midway(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "locked");
	struct err e;
	struct store *st = store_open(path, &e);
	assert_non_null(st);
	store_set_busy_timeout(st, 50);
	struct fixture f;
	fixture_init(&f, st);
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	sqlite3 *db = raw_open(path);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

	/* the warning goes to stderr: catch it */
	char errpath[PATH_MAX + 8];
	snprintf(errpath, sizeof errpath, "%s.err", path);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, STDERR_FILENO);
	close(fd);
	run_ok(&f.s, "text still works");
	run_ok(&f.s, "attn mqa");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);

	assert_true(session_ready(&f.s));
	assert_false(store_recording(st));
	assert_string_equal(f.s.store_note, "not recording");
	size_t n;
	char *err = slurp(errpath, &n);
	int warnings = 0;
	for (char *p = err; (p = strstr(p, "warning:")); p++)
		warnings++;
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(err, "recording stopped"));
	free(err);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* save says why it cannot */
	assert_int_equal(cmd_run_line(&f.s, "save x", &e), -1);
	assert_non_null(strstr(e.msg, "not recording"));
	fixture_free(&f);
	assert_integrity(path);
}

/* A write that fails half-way leaves nothing: the measurement and its head
 * rows are one transaction, and so are a new session and its first
 * command. */
static void test_atomic_writes(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "atomic");
	struct err e;
	store_close(store_open(path, &e));
	sqlite3 *db = raw_open(path);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER fail_head BEFORE INSERT ON head_stats "
				      "WHEN NEW.layer = 1 AND NEW.head = 2 "
				      "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);

	struct store *st = store_open(path, &e);
	assert_non_null(st);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, STDERR_FILENO);
	close(devnull);
	run_ok(&f.s, "text half a measurement is none");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_false(store_recording(st));
	assert_true(session_ready(&f.s));
	fixture_free(&f);

	db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements", 0), 0);
	assert_int_equal(q_int(db, "SELECT count(*) FROM head_stats", 0), 0);
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE ok = 1", 0), 1);
	/* the first command fails: no session row is left without it */
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER fail_cmd BEFORE INSERT ON commands "
				      "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	st = store_open(path, &e);
	assert_non_null(st);
	fixture_init(&f, st);
	f.s.quiet = true;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, STDERR_FILENO);
	close(devnull);
	run_ok(&f.s, line);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_int_equal(store_session_id(st), 0);
	fixture_free(&f);
	db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sessions", 0), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM states", 0), 1);
	sqlite3_close(db);
	assert_integrity(path);
}

/* ------------------------------------------------------------ batch rows */

/* Lines of the batch script and what each must leave. */
static const char *const batch[] = {
	NULL, /* load MODEL */
	"text To be, or not to be: that is the question.",
	"attn gqa 2",
	"ablate 0.1",
	"ablate 9.9",
	"norm post",
	"show head 1.2",
	"save demo",
};
static const int batch_ok[] = { 1, 1, 1, 1, 0, 1, 1, 1 };
#define BATCH_N 8

static void run_batch(struct session *s)
{
	char load[PATH_MAX + 16];
	snprintf(load, sizeof load, "load %s", model_path);
	for (int i = 0; i < BATCH_N; i++) {
		const char *line = i == 0 ? load : batch[i];
		struct err e = { { 0 } };
		int rc = cmd_run_line(s, line, &e);
		if ((rc >= 0) != batch_ok[i])
			fail_msg("%s: rc %d %s", line, rc, e.msg);
	}
}

/* The export every head's attention in CSV (what open must reproduce). */
static char *export_grid(struct fixture *f)
{
	free(take_output(f));
	run_ok(&f->s, "export grid --format csv");
	return take_output(f);
}

struct meas_row {
	char variant[64];
	double loss, kl, top1;
	int n_tokens;
};

/* Measurements of a session from seq > after_seq, in id order. */
static int read_meas(sqlite3 *db, int64_t session, int64_t after_seq, struct meas_row *out, int max)
{
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT variant, loss, kl_vs_baseline, top1_agree, n_tokens "
					    "FROM measurements WHERE session_id = ?1 AND "
					    "coalesce(command_seq, 0) > ?2 ORDER BY id",
					    -1, &q, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_int64(q, 2, after_seq);
	int n = 0;
	while (sqlite3_step(q) == SQLITE_ROW && n < max) {
		snprintf(out[n].variant, sizeof out[n].variant, "%s", sqlite3_column_text(q, 0));
		out[n].loss = sqlite3_column_double(q, 1);
		out[n].kl = sqlite3_column_double(q, 2);
		out[n].top1 = sqlite3_column_double(q, 3);
		out[n].n_tokens = sqlite3_column_int(q, 4);
		n++;
	}
	sqlite3_finalize(q);
	return n;
}

static void test_batch_rows_open_replay(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "batch");
	struct err e;
	struct store *st = store_open(path, &e);
	assert_non_null(st);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	run_batch(&f.s);
	int64_t sid = store_session_id(st);
	assert_true(sid > 0);
	char *grid = export_grid(&f);
	assert_true(strlen(grid) > 1000);

	/* the commands: every line, in order, with its outcome */
	sqlite3 *db = raw_open(path);
	/* the export above is a command too */
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE session_id = ?1", sid), BATCH_N + 1);
	char load[PATH_MAX + 16];
	snprintf(load, sizeof load, "load %s", model_path);
	sqlite3_stmt *q;
	sqlite3_prepare_v2(db, "SELECT seq, line, ok, message, depth FROM commands WHERE session_id = ?1 "
			       "ORDER BY seq", -1, &q, NULL);
	sqlite3_bind_int64(q, 1, sid);
	for (int i = 0; i < BATCH_N; i++) {
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), i + 1);
		assert_string_equal((const char *)sqlite3_column_text(q, 1), i == 0 ? load : batch[i]);
		assert_int_equal(sqlite3_column_int(q, 2), batch_ok[i]);
		if (batch_ok[i])
			assert_int_equal(sqlite3_column_type(q, 3), SQLITE_NULL);
		else
			assert_non_null(strstr((const char *)sqlite3_column_text(q, 3), "does not exist"));
		assert_int_equal(sqlite3_column_int(q, 4), 0);
	}
	sqlite3_finalize(q);

	/* the measurements: one per finished forward pass */
	static const char *const variants[] = { "native", "gqa2", "gqa2 -0.1", "gqa2 post-norm -0.1" };
	static const int seqs[] = { 2, 3, 4, 6 }, kv[] = { 4, 2, 2, 2 };
	static const char *const norms[] = { "pre", "pre", "pre", "post" };
	static const char *const abl[] = { "", "", "0.1", "0.1" };
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE session_id = ?1", sid), 4);
	sqlite3_prepare_v2(db, "SELECT command_seq, variant, kv_heads, norm, mask, scale, ablated, text, "
			       "n_tokens, loss, ppl, kl_vs_baseline, top1_agree, kv_cache_bytes, model, "
			       "base_loss FROM measurements WHERE session_id = ?1 ORDER BY id", -1, &q, NULL);
	sqlite3_bind_int64(q, 1, sid);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), seqs[i]);
		assert_string_equal((const char *)sqlite3_column_text(q, 1), variants[i]);
		assert_int_equal(sqlite3_column_int(q, 2), kv[i]);
		assert_string_equal((const char *)sqlite3_column_text(q, 3), norms[i]);
		assert_string_equal((const char *)sqlite3_column_text(q, 4), "causal");
		assert_int_equal(sqlite3_column_int(q, 5), 1);
		assert_string_equal((const char *)sqlite3_column_text(q, 6), abl[i]);
		assert_string_equal((const char *)sqlite3_column_text(q, 7), batch[1] + 5);
		assert_int_equal(sqlite3_column_int(q, 8), (int)strlen(batch[1] + 5));
		double loss = sqlite3_column_double(q, 9);
		assert_true(loss > 0.0);
		assert_true(fabs(sqlite3_column_double(q, 10) - exp(loss)) < 1e-9 * exp(loss));
		if (i == 0) {
			assert_true(sqlite3_column_double(q, 11) < 1e-9);
			assert_true(sqlite3_column_double(q, 12) == 1.0);
			assert_true(sqlite3_column_double(q, 15) == loss);
		} else {
			assert_true(sqlite3_column_double(q, 11) > 0.0);
		}
		/* 2 * L * G * T * D * 4 bytes */
		assert_true(sqlite3_column_double(q, 13) ==
			    2.0 * 2 * kv[i] * (double)strlen(batch[1] + 5) * 8 * 4);
		assert_string_equal((const char *)sqlite3_column_text(q, 14), "storemodel");
	}
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	/* one head_stats row per head and measurement, with the pattern scores */
	assert_int_equal(q_int(db, "SELECT count(*) FROM head_stats h JOIN measurements m ON "
				   "m.id = h.measurement_id WHERE m.session_id = ?1", sid), 4 * 8);
	assert_int_equal(q_int(db, "SELECT count(*) FROM head_stats h JOIN measurements m ON "
				   "m.id = h.measurement_id WHERE m.session_id = ?1 AND entropy > 0 AND "
				   "max_weight > 0 AND max_weight <= 1 AND prev_token IS NOT NULL AND "
				   "induction IS NULL AND role IS NULL", sid), 4 * 8);
	/* the session: named, saved, with its model */
	size_t n;
	char *name = q_text(db, "SELECT name FROM sessions WHERE id = ?1", sid, &n);
	assert_string_equal(name, "demo");
	free(name);
	char *model = q_text(db, "SELECT model FROM sessions WHERE id = ?1", sid, NULL);
	assert_string_equal(model, "storemodel");
	free(model);
	char *sha = q_text(db, "SELECT model_sha256 FROM sessions WHERE id = ?1", sid, NULL);
	assert_non_null(sha);
	assert_int_equal(strlen(sha), 64);
	/* the file's hash is kept for the next run (by path, size, mtime, inode) */
	char *cached = q_text(db, "SELECT sha256 FROM model_files", 0, NULL);
	assert_string_equal(cached, sha);
	free(cached);
	free(sha);
	assert_int_equal(q_int(db, "SELECT sel_layer * 10 + sel_head FROM states WHERE id = "
				   "(SELECT saved_state FROM sessions WHERE id = ?1)", sid), 12);
	char *sab = q_text(db, "SELECT ablated FROM states WHERE id = "
			       "(SELECT saved_state FROM sessions WHERE id = ?1)", sid, NULL);
	assert_string_equal(sab, "0.1");
	free(sab);
	struct meas_row orig[8];
	int norig = read_meas(db, sid, 0, orig, 8);
	assert_int_equal(norig, 4);
	sqlite3_close(db);

	/* measurements and sessions at the prompt */
	free(take_output(&f));
	run_ok(&f.s, "measurements --csv");
	char *csv = take_output(&f);
	int lines = 0;
	for (char *p = csv; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 5);
	assert_true(!strncmp(csv, "id,session_id,command_seq,created_at,model,", 42));
	assert_non_null(strstr(csv, ",\"gqa2 post-norm -0.1\","));
	free(csv);
	run_ok(&f.s, "measurements --last 2 --session demo");
	char *tab = take_output(&f);
	assert_null(strstr(tab, " native "));
	assert_non_null(strstr(tab, "gqa2 post-norm -0.1"));
	free(tab);
	run_ok(&f.s, "sessions");
	char *ses = take_output(&f);
	assert_non_null(strstr(ses, "demo"));
	assert_non_null(strstr(ses, "storemodel"));
	free(ses);
	assert_int_equal(cmd_run_line(&f.s, "measurements --last zero", &e), -1);
	assert_int_equal(cmd_run_line(&f.s, "open nosuchsession", &e), -1);
	assert_non_null(strstr(e.msg, "no session named nosuchsession"));

	/* compare two measurements, and a session's latest by name */
	int64_t last = store_last_measurement(st);
	char a1[32], a2[32];
	snprintf(a1, sizeof a1, "%lld", (long long)(last - 3));
	snprintf(a2, sizeof a2, "%lld", (long long)last);
	char *cargv[] = { "compare", a1, a2, NULL };
	free(take_output(&f));
	assert_int_equal(store_cmd_compare(&f.s, 3, cargv, &e), 0);
	char *cmp = take_output(&f);
	assert_non_null(strstr(cmp, "native"));
	assert_non_null(strstr(cmp, "gqa2 post-norm -0.1"));
	assert_non_null(strstr(cmp, "differs"));
	assert_non_null(strstr(cmp, "KL vs baseline"));
	assert_non_null(strstr(cmp, "largest head entropy changes"));
	free(cmp);
	char *cargv2[] = { "compare", "s:demo", a2, NULL };
	assert_int_equal(store_cmd_compare(&f.s, 3, cargv2, &e), 0);
	free(take_output(&f));
	char *cargv3[] = { "compare", "99999", a2, NULL };
	assert_int_equal(store_cmd_compare(&f.s, 3, cargv3, &e), -1);
	assert_non_null(strstr(e.msg, "no measurement 99999"));

	/* open in a new process reproduces the saved attention byte for byte,
	 * and replay in it reproduces the measurements */
	char outp[PATH_MAX + 16];
	snprintf(outp, sizeof outp, "%s.open.csv", path);
	const char *args[] = { "--child-open", path, outp, NULL };
	char errp[PATH_MAX + 16];
	snprintf(errp, sizeof errp, "%s.open.err", path);
	pid_t pid = spawn(-1, errp, args);
	int rc = wait_status(pid);
	if (rc != 0) {
		char *er = slurp(errp, &n);
		fail_msg("child-open exit %d: %s", rc, er);
	}
	size_t glen;
	char *grid2 = slurp(outp, &glen);
	assert_int_equal(glen, strlen(grid));
	assert_true(!memcmp(grid, grid2, glen));
	free(grid2);

	db = raw_open(path);
	int64_t child = q_int(db, "SELECT max(id) FROM sessions", 0);
	assert_true(child > sid);
	/* the child: open (seq 1, one measurement), export (seq 2), replay (seq 3) */
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE session_id = ?1 AND command_seq = 1",
			       child), 1);
	char *l3 = q_text(db, "SELECT line FROM commands WHERE seq = 3 AND session_id = "
			      "(SELECT max(id) FROM sessions)", 0, NULL);
	assert_string_equal(l3, "replay demo");
	free(l3);
	/* replayed lines are recorded under it at depth 1: load, text, attn,
	 * ablate, norm, show, measurements x2, sessions (skipped: save, the
	 * export that writes a file, and the three that failed when recorded) */
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE depth = 1 AND session_id = ?1", child),
			 9);
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE depth = 1 AND session_id = ?1 "
				   "AND (line LIKE 'save%' OR line LIKE 'ablate 9%')", child), 0);
	struct meas_row rep[8];
	int nrep = read_meas(db, child, 3, rep, 8);
	sqlite3_close(db);
	assert_int_equal(nrep, norig);
	for (int i = 0; i < norig; i++) {
		assert_string_equal(rep[i].variant, orig[i].variant);
		assert_true(rep[i].loss == orig[i].loss);
		assert_true(rep[i].kl == orig[i].kl);
		assert_true(rep[i].top1 == orig[i].top1);
		assert_int_equal(rep[i].n_tokens, orig[i].n_tokens);
	}
	free(grid);
	fixture_free(&f);
	assert_integrity(path);
}

/* Child: open demo, export the grid to OUT, replay demo. */
static int child_open(const char *path, const char *out)
{
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	const char *lines[] = { "open demo", "export grid --format csv", "replay demo" };
	for (int i = 0; i < 3; i++) {
		e.msg[0] = '\0';
		if (cmd_run_line(&f.s, lines[i], &e) < 0) {
			fprintf(stderr, "%s: %s\n", lines[i], e.msg);
			return 1;
		}
		if (i == 1) {
			char *g = take_output(&f);
			if (write_file_atomic(out, g, strlen(g), &e) != 0)
				return 1;
			free(g);
		}
	}
	if (!store_recording(st))
		return 1;
	if (f.s.sel_layer != 1 || f.s.sel_head != 2)
		return 3;
	fixture_free(&f);
	return 0;
}

/* ------------------------------------------------------- hostile strings */

static void test_hostile_strings(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "hostile");
	struct err e;
	struct store *st = store_open(path, &e);
	assert_non_null(st);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);

	static const char name[] = "it's \"a\"; demo'); DROP TABLE sessions; -- \xff\xfe\xc3( \xe2\x82 "
				   "caf\xc3\xa9 \xf0\x9f\x98\x80";
	static const char text[] = "O'Brien said \"no\"; '); DROP TABLE sessions; -- \xff bad \xc0\xaf ok";
	assert_false(store_utf8_valid(name, strlen(name)));
	assert_true(store_utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80", 10));
	assert_false(store_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
	assert_false(store_utf8_valid("\xc0\xaf", 2));     /* overlong */

	char tline[256];
	snprintf(tline, sizeof tline, "text %s", text);
	/* the tokenizer warns about the invalid bytes on stderr */
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, STDERR_FILENO);
	close(devnull);
	run_ok(&f.s, tline);
	char sline[256];
	snprintf(sline, sizeof sline, "save %s", name);
	run_ok(&f.s, sline);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	int64_t sid = store_session_id(st);

	/* read back through the module */
	struct store_session_info *v;
	int n;
	assert_int_equal(store_list_sessions(st, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].name_len, strlen(name));
	assert_memory_equal(v[0].name, name, strlen(name));
	store_sessions_free(v, n);
	int64_t found = 0;
	assert_int_equal(store_find_session(st, name, &found, &e), 0);
	assert_int_equal(found, sid);
	struct store_state ss;
	assert_int_equal(store_get_state(st, sid, true, &ss, &e), 0);
	assert_int_equal(ss.text_len, strlen(text));
	assert_memory_equal(ss.text, text, strlen(text));
	store_state_free(&ss);
	struct store_command *cmds;
	assert_int_equal(store_get_commands(st, sid, &cmds, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(cmds[1].line_len, strlen(tline));
	assert_memory_equal(cmds[1].line, tline, strlen(tline));
	assert_memory_equal(cmds[2].line, sline, strlen(sline) + 1);
	store_commands_free(cmds, n);
	struct store_measurement *m;
	assert_int_equal(store_get_measurements(st, sid, -1, &m, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(m[0].text_len, strlen(text));
	assert_memory_equal(m[0].text, text, strlen(text));
	store_measurements_free(m, n);

	/* bytes with a NUL in them, through the API */
	static const char nul_name[] = "a\0b'; --";
	assert_int_equal(store_save(&f.s, nul_name, sizeof nul_name - 1, &e), 0);
	assert_int_equal(store_list_sessions(st, &v, &n, &e), 0);
	assert_int_equal(v[0].name_len, sizeof nul_name - 1);
	assert_memory_equal(v[0].name, nul_name, sizeof nul_name - 1);
	store_sessions_free(v, n);
	/* a number is not a name */
	assert_int_equal(store_save(&f.s, "123", 3, &e), -1);
	assert_non_null(strstr(e.msg, "cannot be a number"));
	fixture_free(&f);

	/* read back with plain SQLite: exact bytes, and the tables all there */
	sqlite3 *db = raw_open(path);
	size_t len;
	char *t = q_text(db, "SELECT text FROM states WHERE id = (SELECT max(id) FROM states)", 0, &len);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(t, text, len);
	free(t);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sessions", 0), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sessions'", 0), 1);
	/* valid UTF-8 is stored as TEXT (queryable), invalid as BLOB */
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE typeof(line) = 'blob'", 0), 2);
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE typeof(line) = 'text'", 0), 1);
	sqlite3_close(db);
	assert_integrity(path);
}

/* ------------------------------------------------------------ concurrency */

/* Child: runs commands that each record a measurement for `seconds`, then
 * prints "N_MEASUREMENTS N_COMMANDS SESSION_ID". */
static int child_writer(const char *path, double seconds)
{
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	if (cmd_run_line(&f.s, line, &e) < 0)
		return 2;
	long meas = 0, cmds = 1;
	double t0 = now_ms();
	for (long i = 0; now_ms() - t0 < seconds * 1000.0; i++) {
		char text[64];
		snprintf(text, sizeof text, "text writer %d line %ld", (int)getpid(), i);
		int64_t before = store_last_measurement(st);
		if (cmd_run_line(&f.s, text, &e) < 0) {
			fprintf(stderr, "%s: %s\n", text, e.msg);
			return 3;
		}
		cmds++;
		if (store_last_measurement(st) != before)
			meas++;
	}
	if (!store_recording(st))
		return 4;
	printf("%ld %ld %lld\n", meas, cmds, (long long)store_session_id(st));
	fflush(stdout);
	fixture_free(&f);
	return 0;
}

static void test_two_writers(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "concurrent");
	/* both start on a database that does not exist yet */
	int fds[2][2];
	pid_t pids[2];
	char errs[2][PATH_MAX + 16];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe(fds[i]), 0);
		snprintf(errs[i], sizeof errs[i], "%s.%d.err", path, i);
		const char *args[] = { "--child-writer", path, "2.5", NULL };
		pids[i] = spawn(fds[i][1], errs[i], args);
		close(fds[i][1]);
	}
	long meas[2], cmds[2];
	long long sid[2];
	for (int i = 0; i < 2; i++) {
		char buf[128] = "";
		FILE *in = fdopen(fds[i][0], "r");
		char *got = fgets(buf, sizeof buf, in);
		fclose(in);
		int rc = wait_status(pids[i]);
		size_t n;
		char *er = slurp(errs[i], &n);
		if (rc != 0 || !got || sscanf(buf, "%ld %ld %lld", &meas[i], &cmds[i], &sid[i]) != 3)
			fail_msg("writer %d: exit %d, output '%s', errors: %s", i, rc, buf, er);
		if (n != 0)
			fail_msg("writer %d wrote to stderr: %s", i, er);
		free(er);
		assert_true(meas[i] > 20);
	}
	assert_true(sid[0] != sid[1]);
	assert_integrity(path);
	sqlite3 *db = raw_open(path);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE session_id = ?1", sid[i]),
				 meas[i]);
		assert_int_equal(q_int(db, "SELECT count(*) FROM commands WHERE session_id = ?1 AND ok = 1",
				       sid[i]), cmds[i]);
		assert_int_equal(q_int(db, "SELECT count(*) FROM head_stats h JOIN measurements m ON "
					   "m.id = h.measurement_id WHERE m.session_id = ?1", sid[i]),
				 8 * meas[i]);
	}
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements", 0), meas[0] + meas[1]);
	sqlite3_close(db);
}

/* ------------------------------------------------------------------ kill */

/* Child: loops over commands forever, printing "SID SEQ" after each one
 * returned (acknowledged). */
static int child_loop(const char *path)
{
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		return 1;
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	if (cmd_run_line(&f.s, line, &e) < 0)
		return 2;
	static const char *const loop[] = { "text the loop goes on and on", "attn mqa", "ablate 1.1",
					    "restore all", "attn mha", "norm post", "norm pre" };
	for (long i = 0;; i++) {
		const char *l = loop[i % 7];
		if (cmd_run_line(&f.s, l, &e) < 0)
			return 3;
		printf("%lld %ld\n", (long long)store_session_id(st), i + 2);
		fflush(stdout);
	}
}

static void test_kill9(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "killed");
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	const char *args[] = { "--child-loop", path, NULL };
	pid_t pid = spawn(fd[1], NULL, args);
	close(fd[1]);
	FILE *in = fdopen(fd[0], "r");
	long long sid = 0;
	long acked = 0;
	char buf[64];
	double t0 = now_ms();
	/* let the child acknowledge a few dozen commands, however busy the
	 * machine is, then kill it in the middle of its loop */
	while (fgets(buf, sizeof buf, in)) {
		long seq;
		if (sscanf(buf, "%lld %ld", &sid, &seq) == 2)
			acked = seq;
		if ((acked >= 30 && now_ms() - t0 > 300.0) || now_ms() - t0 > 120000.0)
			break;
	}
	kill(pid, SIGKILL);
	/* whatever was acknowledged in the pipe before the kill counts too */
	while (fgets(buf, sizeof buf, in)) {
		long seq;
		if (sscanf(buf, "%lld %ld", &sid, &seq) == 2)
			acked = seq;
	}
	fclose(in);
	assert_int_equal(wait_status(pid), 128 + SIGKILL);
	assert_true(acked > 20);

	assert_integrity(path);
	sqlite3 *db = raw_open(path);
	/* every acknowledged command is there, finished and successful */
	sqlite3_stmt *q;
	sqlite3_prepare_v2(db, "SELECT count(*) FROM commands WHERE session_id = ?1 AND seq <= ?2 AND ok = 1",
			   -1, &q, NULL);
	sqlite3_bind_int64(q, 1, sid);
	sqlite3_bind_int64(q, 2, acked);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), acked);
	sqlite3_finalize(q);
	sqlite3_close(db);
	/* and attnscope opens it again */
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	store_close(st);
}

/* ---------------------------------------------------- training, analysis */

static void test_training_and_scores(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "train");
	struct err e;
	struct store *st = store_open(path, &e);
	assert_non_null(st);
	struct store_train_run r = { .model_path = "models/x.safetensors", .data_path = "data/x.txt",
				     .data_bytes = 1234, .data_hash = "abcd", .config_json = "{\"n_layer\":2}",
				     .args_json = "[\"--steps\",\"3\"]", .seed = 42, .threads = 1 };
	int64_t id = store_training_run(st, &r, &e);
	assert_true(id > 0);
	float g[2][2] = { { 0.5f, 0.25f }, { NAN, 1.0f } };
	struct store_train_step steps[3] = {
		{ .step = 1, .loss = 4.2, .lr = 1e-3, .grad_norm = 1.5, .val_loss = NAN,
		  .layer_grad_norms = g[0], .n_layers = 2 },
		{ .step = 2, .loss = 4.0, .lr = 1e-3, .grad_norm = 1.4, .val_loss = 4.1,
		  .layer_grad_norms = g[1], .n_layers = 2 },
		{ .step = 3, .loss = 3.9, .lr = 9e-4, .grad_norm = 1.3, .val_loss = NAN },
	};
	assert_int_equal(store_training_steps(st, id, steps, 3, &e), 0);
	steps[2].loss = 3.8; /* a resumed run records step 3 again */
	assert_int_equal(store_training_steps(st, id, steps + 2, 1, &e), 0);
	assert_int_equal(store_training_finish(st, id, "done", 3, 3000, 3.8, 4.1, 1.25, NULL, &e), 0);

	/* analysis scores on a recorded measurement */
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	run_ok(&f.s, "text abcabcabc");
	int64_t mid = store_last_measurement(st);
	assert_true(mid > 0);
	struct store_head_row rows[1] = { { .layer = 1, .head = 3, .entropy = NAN, .max_weight = NAN,
					    .prev_token = NAN, .first_token = NAN, .self = NAN,
					    .local = NAN, .mean_distance = NAN, .induction = 0.75,
					    .role = "induction" } };
	assert_int_equal(store_head_stats(st, mid, rows, 1, &e), 0);
	struct store_head_row *got;
	int n;
	assert_int_equal(store_get_head_stats(st, mid, &got, &n, &e), 0);
	assert_int_equal(n, 8);
	assert_int_equal(got[7].layer, 1);
	assert_int_equal(got[7].head, 3);
	assert_true(got[7].induction == 0.75);
	assert_string_equal(got[7].role, "induction");
	assert_true(got[7].entropy > 0.0); /* kept */
	assert_true(isnan(got[6].induction));
	assert_null(got[6].role);
	store_head_rows_free(got, n);
	fixture_free(&f);

	sqlite3 *db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM training_steps WHERE run_id = ?1", id), 3);
	char *js = q_text(db, "SELECT layer_grad_norms FROM training_steps WHERE step = 2", 0, NULL);
	assert_string_equal(js, "[null,1]");
	free(js);
	js = q_text(db, "SELECT layer_grad_norms FROM training_steps WHERE step = 1", 0, NULL);
	assert_string_equal(js, "[0.5,0.25]");
	free(js);
	assert_int_equal(q_int(db, "SELECT count(*) FROM training_steps WHERE step = 3 AND loss = 3.8", 0), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM training_steps WHERE val_loss IS NULL", 0), 2);
	char *stt = q_text(db, "SELECT status FROM training_runs WHERE id = ?1", id, NULL);
	assert_string_equal(stt, "done");
	free(stt);
	sqlite3_close(db);

	/* a resumed run links to the run it continues; a link to a run that is
	 * not there is stored as NULL (the foreign key holds) */
	st = store_open(path, &e);
	assert_non_null(st);
	r.resumed_from = id;
	int64_t id2 = store_training_run(st, &r, &e);
	assert_true(id2 > id);
	r.resumed_from = id + 1000;
	int64_t id3 = store_training_run(st, &r, &e);
	assert_true(id3 > id2);
	store_close(st);
	db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT resumed_from FROM training_runs WHERE id = ?1", id2), id);
	assert_int_equal(q_int(db, "SELECT resumed_from IS NULL FROM training_runs WHERE id = ?1", id3),
			 1);
	sqlite3_close(db);
}

/* ------------------------------------------------------------------ sweeps */

/* `sweep` records one sweeps row and L*H + L entries with its numbers. */
static void test_sweep_recorded(void **state)
{
	char path[PATH_MAX];
	db_path(path, sizeof path, "sweep");
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	run_ok(&f.s, "text abcabcabc hello");
	int64_t mid = store_last_measurement(st);
	assert_true(mid > 0);
	char *before = take_output(&f);
	free(before);
	run_ok(&f.s, "sweep");
	char *out = take_output(&f);
	assert_non_null(strstr(out, "sweep on"));
	free(out);

	/* the same sweep, run directly: the numbers the rows must hold */
	struct sweep_result r;
	assert_int_equal(sweep_run(f.s.model, &f.s.opt, f.s.tokens, 1, f.s.n_tokens, NULL, NULL, NULL, &r, &e), 0);
	int L = r.L, H = r.H;
	assert_int_equal(L, 2);
	assert_int_equal(H, 4);

	sqlite3 *db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweeps", 0), 1);
	int64_t sid = q_int(db, "SELECT id FROM sweeps", 0);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweep_entries WHERE sweep_id = ?1", sid), L * H + L);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweep_entries WHERE head IS NULL", 0), L);
	assert_int_equal(q_int(db, "SELECT measurement_id FROM sweeps WHERE id = ?1", sid), mid);
	assert_int_equal(q_int(db, "SELECT session_id FROM sweeps WHERE id = ?1", sid), store_session_id(st));
	assert_int_equal(q_int(db, "SELECT n_tokens FROM sweeps WHERE id = ?1", sid), f.s.n_tokens);
	assert_int_equal(q_int(db, "SELECT cancelled FROM sweeps WHERE id = ?1", sid), 0);
	char *t = q_text(db, "SELECT metric || '|' || source || '|' || options FROM sweeps WHERE id = ?1", sid, NULL);
	assert_string_equal(t, "loss|text|native");
	free(t);
	static const int pick[][2] = { { 0, 1 }, { 1, 3 }, { 1, -1 } };
	for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
		int l = pick[i][0], h = pick[i][1];
		const struct ablation *a = h >= 0 ? &r.head[l * H + h] : &r.layer[l];
		sqlite3_stmt *q;
		assert_int_equal(sqlite3_prepare_v2(db, "SELECT delta_loss, kl, top1_agree FROM sweep_entries "
						    "WHERE sweep_id = ?1 AND layer = ?2 AND head IS ?3",
						    -1, &q, NULL), SQLITE_OK);
		sqlite3_bind_int64(q, 1, sid);
		sqlite3_bind_int(q, 2, l);
		if (h >= 0)
			sqlite3_bind_int(q, 3, h);
		else
			sqlite3_bind_null(q, 3);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_false(isnan(a->delta_loss));
		assert_true(fabs(sqlite3_column_double(q, 0) - a->delta_loss) < 1e-9);
		assert_true(fabs(sqlite3_column_double(q, 1) - a->kl) < 1e-9);
		assert_true(fabs(sqlite3_column_double(q, 2) - a->top1_agree) < 1e-9);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
	}
	double base = 0;
	{
		sqlite3_stmt *q;
		sqlite3_prepare_v2(db, "SELECT base_loss FROM sweeps WHERE id = ?1", -1, &q, NULL);
		sqlite3_bind_int64(q, 1, sid);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		base = sqlite3_column_double(q, 0);
		sqlite3_finalize(q);
	}
	assert_true(fabs(base - r.base_loss) < 1e-9);
	sqlite3_close(db);
	sweep_free(&r);

	/* NAN is stored as NULL; a cancelled sweep says so */
	struct sweep_result c = { .L = 1, .H = 1, .T = 3, .base_loss = NAN, .cancelled = true };
	struct ablation ha = { NAN, NAN, NAN }, la = { 0.5, NAN, 1.0 };
	c.head = &ha;
	c.layer = &la;
	int64_t id2 = store_sweep(&f.s, &c, "kl", "corpus.txt", &e);
	assert_true(id2 > sid);
	fixture_free(&f);
	db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweep_entries WHERE sweep_id = ?1", id2), 2);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweep_entries WHERE sweep_id = ?1 AND "
				   "delta_loss IS NULL AND kl IS NULL AND top1_agree IS NULL", id2), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweeps WHERE id = ?1 AND base_loss IS NULL AND "
				   "cancelled = 1 AND metric = 'kl' AND source = 'corpus.txt'", id2), 1);
	sqlite3_close(db);
	assert_integrity(path);
}

/* A version-1 database (the current schema without what versions 2 and 3
 * added) is migrated to the current version, keeps its rows and ends with
 * the schema of a new database. */
/* A version-4 database (before the pitfall columns) with a session saved
 * and measured is migrated: its rows keep their numbers and read as no
 * pitfall (NULL), `open` restores it with the pitfall off, and a new
 * measurement under a pitfall records its name. */
static void test_migration_from_four(void **state)
{
	(void)state;
	char path[PATH_MAX];
	db_path(path, sizeof path, "v4");
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	run_ok(&f.s, "text one two three");
	run_ok(&f.s, "save four");
	fixture_free(&f);
	sqlite3 *db = raw_open(path);
	assert_int_equal(sqlite3_exec(db, "BEGIN; ALTER TABLE measurements DROP COLUMN pitfall; "
					  "ALTER TABLE states DROP COLUMN pitfall; "
					  "PRAGMA user_version = 4; COMMIT", NULL, NULL, NULL), SQLITE_OK);
	int64_t n_meas = q_int(db, "SELECT count(*) FROM measurements", 0);
	assert_true(n_meas > 0);
	sqlite3_close(db);

	st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	fixture_init(&f, st);
	f.s.quiet = true;
	struct store_measurement *v;
	int n;
	assert_int_equal(store_get_measurements(st, 0, -1, &v, &n, &e), 0);
	assert_int_equal(n, (int)n_meas);
	assert_null(v[n - 1].pitfall);
	assert_false(isnan(v[n - 1].loss));
	store_measurements_free(v, n);
	run_ok(&f.s, "open four");
	assert_int_equal(f.s.opt.pitfall, PITFALL_NONE);
	run_ok(&f.s, "pitfall eps0");
	run_ok(&f.s, "save four-eps0");
	fixture_free(&f);

	db = raw_open(path);
	assert_int_equal(q_int(db, "PRAGMA user_version", 0), STORE_SCHEMA_VERSION);
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE pitfall IS NULL", 0), n_meas);
	char *last = q_text(db, "SELECT pitfall FROM measurements ORDER BY id DESC LIMIT 1", 0, NULL);
	assert_string_equal(last, "eps0");
	free(last);
	char *saved = q_text(db, "SELECT st.pitfall FROM sessions se JOIN states st "
				 "ON st.id = se.saved_state WHERE se.name = 'four-eps0'", 0, NULL);
	assert_string_equal(saved, "eps0");
	free(saved);
	sqlite3_close(db);
	assert_integrity(path);

	/* and the saved pitfall comes back with open */
	st = store_open(path, &e);
	assert_non_null(st);
	fixture_init(&f, st);
	f.s.quiet = true;
	run_ok(&f.s, "open four-eps0");
	assert_int_equal(f.s.opt.pitfall, PITFALL_EPS0);
	fixture_free(&f);
}

static void test_migration_from_one(void **state)
{
	char path[PATH_MAX], fresh[PATH_MAX];
	db_path(path, sizeof path, "v1");
	db_path(fresh, sizeof fresh, "v2fresh");
	struct err e;
	struct store *st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	struct fixture f;
	fixture_init(&f, st);
	f.s.quiet = true;
	char line[PATH_MAX + 16];
	snprintf(line, sizeof line, "load %s", model_path);
	run_ok(&f.s, line);
	run_ok(&f.s, "text one two three");
	run_ok(&f.s, "save old");
	fixture_free(&f);

	/* back to version 1 by hand */
	sqlite3 *db = raw_open(path);
	assert_int_equal(sqlite3_exec(db, "BEGIN; DROP TABLE sweep_entries; DROP TABLE sweeps; "
					  "DROP TABLE lab_runs; "
					  "ALTER TABLE head_stats DROP COLUMN delim; "
					  "ALTER TABLE head_stats DROP COLUMN delim_share; "
					  "ALTER TABLE head_stats DROP COLUMN sink; "
					  "ALTER TABLE head_stats DROP COLUMN sink_key; "
					  "ALTER TABLE head_stats DROP COLUMN offset_k; "
					  "ALTER TABLE head_stats DROP COLUMN offset_weight; "
					  "ALTER TABLE measurements DROP COLUMN pitfall; "
					  "ALTER TABLE states DROP COLUMN pitfall; "
					  "PRAGMA user_version = 1; COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sweep%'", 0), 0);
	int64_t n_meas = q_int(db, "SELECT count(*) FROM measurements", 0);
	int64_t n_cmd = q_int(db, "SELECT count(*) FROM commands", 0);
	int64_t n_heads = q_int(db, "SELECT count(*) FROM head_stats", 0);
	assert_true(n_meas > 0 && n_cmd > 0 && n_heads > 0);
	sqlite3_close(db);

	st = store_open(path, &e);
	if (!st)
		fail_msg("%s", e.msg);
	store_close(st);
	st = store_open(fresh, &e);
	assert_non_null(st);
	store_close(st);

	db = raw_open(path);
	assert_int_equal(q_int(db, "PRAGMA user_version", 0), STORE_SCHEMA_VERSION);
	assert_int_equal(q_int(db, "SELECT count(*) FROM measurements", 0), n_meas);
	assert_int_equal(q_int(db, "SELECT count(*) FROM commands", 0), n_cmd);
	assert_int_equal(q_int(db, "SELECT count(*) FROM head_stats", 0), n_heads);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sessions WHERE name = 'old'", 0), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweeps", 0), 0);
	char *migrated = q_text(db, "SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_schema "
				    "WHERE name NOT LIKE 'sqlite_%' ORDER BY name)", 0, NULL);
	sqlite3_close(db);
	db = raw_open(fresh);
	char *want = q_text(db, "SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_schema "
				"WHERE name NOT LIKE 'sqlite_%' ORDER BY name)", 0, NULL);
	sqlite3_close(db);
	assert_string_equal(migrated, want);
	free(migrated);
	free(want);
	assert_integrity(path);

	/* and it records sweeps */
	st = store_open(path, &e);
	assert_non_null(st);
	fixture_init(&f, st);
	f.s.quiet = true;
	run_ok(&f.s, line);
	run_ok(&f.s, "text one two three");
	run_ok(&f.s, "sweep");
	fixture_free(&f);
	db = raw_open(path);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweeps", 0), 1);
	assert_int_equal(q_int(db, "SELECT count(*) FROM sweep_entries", 0), 10);
	sqlite3_close(db);
}

/* ------------------------------------------------------------------- main */

static int setup_all(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/attnscope-store.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(model_path, sizeof model_path, "%s/storemodel.safetensors", tmpdir);
	make_model(model_path);
	setenv("ATTNSCOPE_TEST_MODEL", model_path, 1);
	return 0;
}

static int teardown_all(void **state)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", tmpdir, tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "C.UTF-8");
	engine_set_threads(1);
	if (argc >= 2 && !strncmp(argv[1], "--child-", 8)) {
		const char *m = getenv("ATTNSCOPE_TEST_MODEL");
		if (!m)
			return 90;
		snprintf(model_path, sizeof model_path, "%s", m);
		if (!strcmp(argv[1], "--child-open") && argc == 4)
			return child_open(argv[2], argv[3]);
		if (!strcmp(argv[1], "--child-writer") && argc == 4)
			return child_writer(argv[2], atof(argv[3]));
		if (!strcmp(argv[1], "--child-loop") && argc == 3)
			return child_loop(argv[2]);
		return 91;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_schema),
		cmocka_unit_test(test_newer_version_refused),
		cmocka_unit_test(test_migration_from_zero),
		cmocka_unit_test(test_not_sqlite_file),
		cmocka_unit_test(test_unwritable_path),
		cmocka_unit_test(test_locked_midway),
		cmocka_unit_test(test_atomic_writes),
		cmocka_unit_test(test_batch_rows_open_replay),
		cmocka_unit_test(test_hostile_strings),
		cmocka_unit_test(test_two_writers),
		cmocka_unit_test(test_kill9),
		cmocka_unit_test(test_training_and_scores),
		cmocka_unit_test(test_sweep_recorded),
		cmocka_unit_test(test_migration_from_one),
		cmocka_unit_test(test_migration_from_four),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
