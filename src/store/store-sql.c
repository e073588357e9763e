/*
 * store-sql.c — the SQL of the session database (store.h): the migrations
 * that build the schema version by version, and the text of every
 * prepared statement (store-db.h names them).
 */
#include "store-db.h"

/* ---------------------------------------------------------------- schema */

/* Migration i takes user_version i to i + 1; each ends by setting it. */
const char *const store_migrations[STORE_SCHEMA_VERSION] = {
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
	/* 4 -> 5: the pitfall (model.h enum pitfall) of each measurement and
	 * saved state; rows from before it read as NULL, i.e. "off" */
	"ALTER TABLE measurements ADD COLUMN pitfall TEXT;\n"
	"ALTER TABLE states ADD COLUMN pitfall TEXT;\n"
	"PRAGMA user_version = 5;\n",
};

/* ------------------------------------------------------------ statements */

#define MEAS_COLS \
	"id, session_id, command_seq, created_at, model, model_sha256, variant, kv_heads, norm, " \
	"mask, mask_window, scale, ablated, text, n_tokens, forward_ms, kv_cache_bytes, loss, " \
	"base_loss, delta_loss, ppl, kl_vs_baseline, top1_agree, threads, pitfall"

const char *const store_stmt_sql[N_STMT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_INS_STATE] =
		"INSERT INTO states (created_at, model, model_spec, model_path, model_sha256, text, "
		"kv_heads, norm, mask, mask_window, scale, ablated, sel_layer, sel_head, sel_token, "
		"threads, pitfall) VALUES (" NOW ", ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
		"?13, ?14, ?15, ?16)",
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
		"top1_agree, threads, pitfall) VALUES (?1, ?2, " NOW ", ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
		"?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
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
		"st.sel_head, st.sel_token, st.threads, st.pitfall "
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
