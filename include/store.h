/*
 * store.h — sessions, commands, measurements and training history in a
 * SQLite database.  src/store/ is the only code that touches SQLite.
 *
 * One `struct store` is one open database; it records one attnscope session
 * (a row in `sessions`, created on the first thing recorded).  The session
 * hooks (store_command_begin/end around every command line, store_measure
 * after every finished forward pass) never fail the caller: the first write
 * that fails prints one warning, stops recording (store_recording() turns
 * false) and puts "not recording" in s->store_note for the prompt.  The
 * writes of analysis results (store_head_stats, store_sweep) stop it the
 * same way but leave the one warning to their caller.
 *
 * Rules kept by src/store/: WAL journal, synchronous=NORMAL (a committed row
 * survives a crash or kill -9 of the process), a busy timeout of
 * STORE_BUSY_MS, every write in one BEGIN IMMEDIATE transaction, bound
 * parameters only, statements prepared once and reused.  The schema is
 * versioned with PRAGMA user_version (STORE_SCHEMA_VERSION) and marked with
 * PRAGMA application_id; older versions are migrated forward, a newer
 * version or another program's database is refused without a byte
 * written.  Texts that are not valid UTF-8 are stored as BLOBs, so every
 * byte comes back as it went in (in SQL, LIKE needs CAST(x AS TEXT) on
 * those).  Times are UTC, "YYYY-MM-DD HH:MM:SS.SSS".  A database file up to
 * 64 MiB gets PRAGMA quick_check when opened; larger ones only the header
 * checks (damage found later stops recording with the one warning).
 *
 * Tables (schema version 3): states (model, text, options, view of a
 * moment), sessions (name, start_state, saved_state), commands (session_id,
 * seq, depth, line, ok, message), measurements (one per finished forward
 * pass), head_stats (measurement_id, layer, head, scores), training_runs,
 * training_steps, model_files (sha256 of model files by path, size, mtime,
 * inode, so that a file is hashed once); version 2 adds sweeps (one per
 * `sweep`: metric, source, n_tokens, options, base_loss, cancelled) and
 * sweep_entries (sweep_id, layer, head (NULL: the whole layer), delta_loss,
 * kl, top1_agree); version 3 adds to head_stats the delimiter, sink and
 * offset scores of heads.h (delim, delim_share, sink, sink_key, offset_k,
 * offset_weight).
 */
#ifndef ATTNSCOPE_STORE_H
#define ATTNSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "util.h"

struct session;
struct store;

#define STORE_SCHEMA_VERSION 5
#define STORE_APPLICATION_ID 0x4154534e /* "ATSN" */
#define STORE_DEFAULT_PATH "sessions/attnscope.db"
#define STORE_ENV "ATTNSCOPE_DB"
#define STORE_BUSY_MS 5000

/* ---------------------------------------------------- database (store.c) */

/* Opens (creating when missing) the database at path and brings its schema
 * up to date.  NULL with a one-line message when the file cannot be
 * created or written, is not a regular file ("PATH: is a directory, not a
 * database file"), is not a SQLite database or is corrupt (left as it
 * was), belongs to another program, or has a newer schema (left as it
 * was).  The file and its -wal, -shm and -journal are in use (util.h)
 * until store_close(). */
struct store *store_open(const char *path, struct err *e);

/*
 * The command-line policy.  no_db: returns NULL, warning "".  Otherwise the
 * path is db_flag (--db), else $ATTNSCOPE_DB when set and not empty, else
 * STORE_DEFAULT_PATH when the current directory has a sessions/ directory
 * (a checkout, where the demos live), else
 * $XDG_DATA_HOME/attnscope/attnscope.db ($XDG_DATA_HOME: ~/.local/share),
 * its directories created.
 * When the database cannot be used, returns NULL with one line in warning
 * (say what and that attnscope goes on without recording); warning is ""
 * when all is well.  The caller prints it and keeps working.
 */
struct store *store_open_default(const char *db_flag, bool no_db, char *warning, size_t size);

/* Closes the database; NULL is a no-op. */
void store_close(struct store *st);

const char *store_path(const struct store *st);

/* Changes the busy timeout (STORE_BUSY_MS by default; tests shorten it). */
void store_set_busy_timeout(struct store *st, int ms);

/* False once a write has failed (recording stopped) or for NULL. */
bool store_recording(const struct store *st);

/* The session's row in `sessions`, 0 until something was recorded. */
int64_t store_session_id(const struct store *st);

/* Id of the last measurement this store recorded (0: none yet). */
int64_t store_last_measurement(const struct store *st);

/* Replay bookkeeping: while replaying, nested replays are refused and
 * store_measure is not suppressed.  suppress > 0 makes store_measure a
 * no-op (open uses it while it rebuilds the state, then records once). */
void store_set_replaying(struct store *st, bool on);
bool store_replaying(const struct store *st);
void store_suppress(struct store *st, int delta);

/* True when the len bytes are valid UTF-8 (no overlongs, surrogates or
 * code points above U+10FFFF). */
bool store_utf8_valid(const char *s, size_t len);

/* ------------------------------------------- model files (store-files.c) */

/* Model file identity: sha256 (hex) of the file at path, cached by inode,
 * size and mtime.  0 or -1. */
int store_file_sha256(struct store *st, const char *path, char hex[65], struct err *e);

/* ------------------------------- sessions and commands (store-session.c) */

/* Records a command line as it starts (ok NULL) and returns its seq (0 when
 * nothing was recorded: no store, recording stopped, blank or comment). */
int64_t store_command_begin(struct session *s, const char *line);

/* Finishes the row of store_command_begin: ok = (rc >= 0), and the message
 * on failure.  seq 0 is a no-op. */
void store_command_end(struct session *s, int64_t seq, int rc, const char *message);

/* Makes sure the session has its row (recording its current state as the
 * start state).  0, or -1 with a message. */
int store_begin_session(struct session *s, struct err *e);

/* A session's state: the model, the text, the options and the view. */
struct store_state {
	char *model;        /* display name; NULL: no model */
	char *model_spec;   /* what was typed to load it */
	char *model_path;   /* absolute path of the file, or NULL */
	char *model_sha256; /* hex, or NULL when unknown */
	char *text;         /* NUL-terminated copy; NULL when none */
	size_t text_len;
	struct run_options opt; /* ablated is filled from ablated_list by the reader */
	char *ablated_list; /* "0.1 1.2" ("" when none) */
	int sel_layer, sel_head, sel_token;
	int threads;
};
void store_state_free(struct store_state *ss);

/* Names the current session (name may be NULL: keep the name it has) and
 * snapshots its state; name holds len bytes (any bytes).  0 or -1. */
int store_save(struct session *s, const char *name, size_t len, struct err *e);

/* Finds a session by id (all digits) or name (the most recently saved of
 * that name, else the newest).  0 or -1 with a message. */
int store_find_session(struct store *st, const char *ref, int64_t *id, struct err *e);

/* Reads a session's saved state (saved true) or the state it started in. */
int store_get_state(struct store *st, int64_t session_id, bool saved, struct store_state *out,
		    struct err *e);

/* One row of `sessions`. */
struct store_session_info {
	int64_t id;
	char *name;         /* NULL when unnamed */
	size_t name_len;
	char *created_at, *saved_at; /* saved_at NULL when never saved */
	char *model;        /* NULL when none */
	int64_t n_commands, n_measurements;
};
int store_list_sessions(struct store *st, struct store_session_info **out, int *n, struct err *e);

/* Deletes session id and everything recorded under it (commands,
 * measurements and their head scores, sweeps, lab runs, and the saved
 * states no other session uses), in one transaction.  The session being
 * recorded is refused.  0 with the commands and measurements deleted
 * counted, or -1 with a message ("no session 7"). */
int store_forget_session(struct store *st, int64_t id, int64_t *n_commands,
			 int64_t *n_measurements, struct err *e);
void store_sessions_free(struct store_session_info *v, int n);

/* One command of a session's log. */
struct store_command {
	int64_t seq;
	int depth;          /* 0: typed; 1+: run by replay */
	char *line;
	size_t line_len;
	int ok;             /* 1, 0, or -1 when it never finished */
	char *message;      /* NULL when none */
};
int store_get_commands(struct store *st, int64_t session_id, struct store_command **out, int *n,
		       struct err *e);
void store_commands_free(struct store_command *v, int n);

/* -------------------- measurements, head stats, sweeps (store-measure.c) */

/* Records the session's finished run (options, text, numbers and one
 * head_stats row per head with the heads.h scores of the run; induction and
 * role stay NULL until store_head_scores adds them).  session_update calls
 * it after each new forward pass through s->on_run (store_attach).  No-op
 * without a store. */
void store_measure(struct session *s);

/* Makes st the session's recorder (NULL: none): s->store, and
 * store_measure called after each run.  The session does not own st. */
void store_attach(struct session *s, struct store *st);

/* One head of a measurement.  A NAN number or a NULL role is stored as NULL
 * and, for an existing row, keeps the value already there. */
struct store_head_row {
	int layer, head;
	double entropy, max_weight;
	double prev_token, first_token, self, local, mean_distance, induction;
	const char *role;   /* heads_role_name: one word; an offset head's k is in offset */
	double delim, delim_share, sink, offset_weight;
	int sink_key, offset;
};

/* Inserts or updates head rows of measurement_id, in one transaction.
 * 0, or -1 with a message; a write that fails stops recording, reported
 * as by store_sweep. */
int store_head_stats(struct store *st, int64_t measurement_id, const struct store_head_row *rows,
		     int n, struct err *e);

/* The same from heads.h scores (scores[l * n_head + h]); the role is stored
 * when induction was measured (not NAN). */
struct head_scores;
int store_head_scores(struct store *st, int64_t measurement_id, const struct head_scores *scores,
		      int n_layer, int n_head, struct err *e);

/* Reads the head rows of a measurement ordered by layer, head.  *rows is
 * malloc'd (free with store_head_rows_free). */
int store_get_head_stats(struct store *st, int64_t measurement_id, struct store_head_row **rows,
			 int *n, struct err *e);
void store_head_rows_free(struct store_head_row *rows, int n);

struct store_measurement {
	int64_t id, session_id, command_seq; /* command_seq 0: none */
	char *created_at;
	char *model, *model_sha256;
	char *variant;
	int kv_heads;
	char *norm, *mask;
	int window;         /* mask "window" only, else -1 */
	int scale;
	char *ablated;      /* "0.1 1.2" or "" */
	char *text;
	size_t text_len;
	int n_tokens;
	/* NAN when not known */
	double forward_ms, kv_cache_bytes, loss, base_loss, delta_loss, ppl, kl_vs_baseline,
		top1_agree;
	int threads;
	char *pitfall;      /* "off", "eps0", ... (model.h pitfall_name); NULL in rows
			     * recorded before the column existed (schema 4) */
};

/* Measurements of session_id (0: every session), the last `last` of them
 * (-1: all), in id order. */
int store_get_measurements(struct store *st, int64_t session_id, int64_t last,
			   struct store_measurement **out, int *n, struct err *e);
/* Total count with the same filter. */
int store_count_measurements(struct store *st, int64_t session_id, int64_t *count, struct err *e);
/* One measurement by id; -1 with "no measurement N" when absent. */
int store_get_measurement(struct store *st, int64_t id, struct store_measurement *out,
			  struct err *e);
void store_measurement_free(struct store_measurement *m);
void store_measurements_free(struct store_measurement *v, int n);

/* Records a finished or cancelled sweep (analysis.h): makes sure the
 * session has its row, then inserts the sweeps row (metric "loss" or "kl";
 * source "text" or the corpus path; options the variant description of
 * r->opt; measurement_id the store's last measurement, NULL when none) and
 * its L*H head entries and L layer entries (head NULL) in one transaction.
 * NAN numbers are stored as NULL.  Returns the sweep id, or -1 with a
 * message.  A write that fails stops recording as a failed hook does, but
 * prints nothing: the message ends "; recording stopped, attnscope goes on
 * without it", and the caller's warning is the one warning. */
struct sweep_result;
int64_t store_sweep(struct session *s, const struct sweep_result *r, const char *metric,
		    const char *source, struct err *e);

/* ----------------------------- training runs and lab runs (store-runs.c) */

/* A training run (`attnscope train`).  Strings may be NULL. */
struct store_train_run {
	const char *model_path;  /* checkpoint written */
	const char *data_path;
	int64_t data_bytes;
	const char *data_hash;   /* e.g. FNV-1a 64 in hex */
	const char *config_json; /* model config */
	const char *args_json;   /* the flags */
	uint64_t seed;
	int threads;
	int64_t resumed_from;    /* the training_runs id of the run this one continues,
				  * or 0; stored as NULL when there is no such row */
};

/* Inserts a run (status "running") when it starts.  Returns its id (> 0),
 * or -1. */
int64_t store_training_run(struct store *st, const struct store_train_run *r, struct err *e);

/* One optimizer step.  NAN val_loss: no validation at this step. */
struct store_train_step {
	int64_t step;
	double loss, lr, grad_norm, val_loss;
	const float *layer_grad_norms; /* n_layers values, or NULL */
	int n_layers;
};

/* Records steps of a run, all in one transaction (the trainer commits them
 * in batches as it goes; a step recorded again replaces the first).  0 or
 * -1. */
int store_training_steps(struct store *st, int64_t run_id, const struct store_train_step *steps,
			 int n, struct err *e);

/* Marks a run finished: status "done", "interrupted" or "failed". */
int store_training_finish(struct store *st, int64_t run_id, const char *status, int64_t steps_done,
			  int64_t tokens_seen, double final_loss, double val_loss, double wall_s,
			  const char *message, struct err *e);

/* One recorded step read back (curves --run): NAN where nothing was
 * stored; layer_grad_norms malloc'd (n_layers values, NAN for null) or
 * NULL. */
struct store_train_row {
	int64_t step;
	double loss, lr, grad_norm, val_loss;
	double *layer_grad_norms;
	int n_layers;
};

/* The steps of training run run_id in step order (*rows malloc'd: free
 * with store_train_rows_free), and the run's status and model path
 * (malloc'd strings, NULL when not stored).  0, or -1 with "no training
 * run N in PATH" or a database message; st NULL: "no session database". */
int store_get_training_steps(struct store *st, int64_t run_id, struct store_train_row **rows,
			     int *n, char **status, char **model_path, struct err *e);
void store_train_rows_free(struct store_train_row *v, int n);

/* One run of a lab experiment (lab.h), recorded in lab_runs. */
struct store_lab_row {
	const char *experiment;  /* "norm" */
	const char *size;        /* "quick" or "full" */
	const char *data_path;   /* the training text, or NULL */
	const char *status;      /* "done", "cancelled" or "failed" */
	double seconds;
	int threads;
	const char *result_json; /* lab_result.json */
};

/* Records a lab run in the session's database.  Returns its id, or -1
 * with a message (recording stops, as for every other write). */
int64_t store_lab_run(struct session *s, const struct store_lab_row *r, struct err *e);

#endif
