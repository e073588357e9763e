/*
 * train.c — `attnscope train`: flags, the loop over trainer_step
 * (trainer.h) with validation, progress, signals and the database, the
 * training record (m->train_meta) and the resumable optimizer state
 * FILE.optim (format documented in train.h).
 *
 * Everything that decides the next step (weights, moments, step counter,
 * batch generator) is saved on an interrupt, so a resumed run repeats the
 * uninterrupted one exactly.
 */
#define _GNU_SOURCE
#include "train.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "backward.h"
#include "checkpoint.h"
#include "config.h"
#include "dataset.h"
#include "json-util.h"
#include "loader.h"
#include "model.h"
#include "optim.h"
#include "resolve.h"
#include "store.h"
#include "tokenizer.h"
#include "trainer.h"

/* ------------------------------------------------------------------ flags */

struct opts {
	const char *data, *out, *resume, *name, *db, *from;
	int min_count;
	int layers, heads, kv_heads, d_model, d_ff, context; /* kv_heads, d_ff: 0 = default */
	enum norm_type norm;
	enum norm_place placement;
	enum pos_type pos;
	enum mlp_type mlp;
	bool no_bias, untied;
	bool no_residual, no_scale, no_mlp; /* the lab's switches */
	enum mask_kind mask;
	const char *shape_flag;  /* the first flag given that --from would override */
	long steps, warmup, val_every, log_every, stop_after, stop_now_at;
	int batch, val_batches, threads;
	double lr, min_lr_frac, weight_decay, clip, val_fraction;
	long long seed;
	enum ckpt_dtype dtype;
	bool keep_optim, quiet, help, no_db;
	bool line_starts, repeat_random;
	double repeat;
	int repeat_min, repeat_max;
};

static void opts_default(struct opts *o)
{
	memset(o, 0, sizeof *o);
	o->min_count = 1;
	o->layers = 4;
	o->heads = 4;
	o->d_model = 128;
	o->context = 256;
	o->norm = NORM_LAYER;
	o->placement = PLACE_PRE;
	o->pos = POS_LEARNED;
	o->mlp = MLP_GELU;
	struct train_hparams hp; /* the trainer's defaults (trainer.h) */
	train_hparams_default(&hp, 2000);
	o->steps = hp.steps;
	o->batch = hp.batch;
	o->lr = hp.lr;
	o->warmup = hp.warmup;
	o->min_lr_frac = hp.min_lr_frac;
	o->weight_decay = hp.weight_decay;
	o->clip = hp.clip;
	o->val_batches = hp.val_batches;
	o->seed = (long long)hp.seed;
	o->val_fraction = 0.1;
	o->val_every = 250;
	o->threads = 0;
	o->dtype = CKPT_F32;
	o->log_every = 100;
	o->repeat_min = 20;
	o->repeat_max = 100;
}

enum flag_kind { F_STR, F_INT, F_LONG, F_SEED, F_DOUBLE, F_BOOL, F_NORM, F_PLACE, F_POS, F_MLP,
		 F_MASK, F_DTYPE };

struct flag {
	const char *name;
	enum flag_kind kind;
	size_t off;
	double lo, hi;     /* numeric range (inclusive) */
	bool replay;       /* stored in FILE.optim and replayed on --resume */
	const char *arg, *help;
};

#define O(f) offsetof(struct opts, f)
static const struct flag flags[] = {
	{ "--data", F_STR, O(data), 0, 0, true, "FILE", "UTF-8 training text (required)" },
	{ "--min-count", F_INT, O(min_count), 1, 1e9, true, "N",
	  "characters occurring fewer than N times become <unk> (1)" },
	{ "--layers", F_INT, O(layers), 1, CFG_MAX_LAYERS, true, "N", "transformer blocks (4)" },
	{ "--heads", F_INT, O(heads), 1, CFG_MAX_HEADS, true, "N", "query heads (4)" },
	{ "--kv-heads", F_INT, O(kv_heads), 1, CFG_MAX_HEADS, true, "N",
	  "key/value heads: = heads MHA, 1 MQA, else GQA (heads); with --from, MODEL's\n"
	  "                                 K/V heads mean-pooled (or replicated) to N first" },
	{ "--d-model", F_INT, O(d_model), 1, CFG_MAX_DMODEL, true, "N", "model width (128)" },
	{ "--d-ff", F_INT, O(d_ff), 1, CFG_MAX_DFF, true, "N", "MLP width (4 x d-model)" },
	{ "--context", F_INT, O(context), 1, CFG_MAX_CONTEXT, true, "N",
	  "context = training window length (256)" },
	{ "--norm", F_NORM, O(norm), 0, 0, true, "layernorm|rmsnorm", "norm type (layernorm)" },
	{ "--placement", F_PLACE, O(placement), 0, 0, true, "pre|post", "norm placement (pre)" },
	{ "--pos", F_POS, O(pos), 0, 0, true, "learned|rope", "positions (learned)" },
	{ "--mlp", F_MLP, O(mlp), 0, 0, true, "gelu|swiglu|gelu-exact",
	  "MLP kind: GELU (tanh approximation), SwiGLU or exact GELU (gelu)" },
	{ "--no-bias", F_BOOL, O(no_bias), 0, 0, true, NULL, "no biases in linear layers and norms" },
	{ "--untied", F_BOOL, O(untied), 0, 0, true, NULL, "separate output projection (tied to wte)" },
	{ "--no-residual", F_BOOL, O(no_residual), 0, 0, true, NULL,
	  "blocks without residual connections: each sub-block replaces the stream" },
	{ "--no-scale", F_BOOL, O(no_scale), 0, 0, true, NULL, "scores not multiplied by 1/sqrt(d_head)" },
	{ "--mask", F_MASK, O(mask), 0, 0, true, "causal|none|after-softmax",
	  "the mask the model trains with (causal); none and after-softmax\n"
	  "                                 let a position see the token it must predict" },
	{ "--no-mlp", F_BOOL, O(no_mlp), 0, 0, true, NULL, "attention-only blocks (no MLP)" },
	{ "--from", F_STR, O(from), 0, 0, true, "MODEL",
	  "start from MODEL's weights, shape and tokenizer (a name in models/ or a\n"
	  "                                 path); the shape flags above cannot be given with it" },
	{ "--steps", F_LONG, O(steps), 1, 1e8, true, "N", "optimizer steps (2000)" },
	{ "--batch", F_INT, O(batch), 1, 65536, true, "N", "windows per step (16)" },
	{ "--lr", F_DOUBLE, O(lr), 1e-9, 10, true, "X", "peak learning rate (2e-3)" },
	{ "--warmup", F_LONG, O(warmup), 0, 1e8, true, "N", "linear warmup steps (100)" },
	{ "--min-lr-frac", F_DOUBLE, O(min_lr_frac), 0, 1, true, "X",
	  "cosine floor as a fraction of --lr (0.1)" },
	{ "--weight-decay", F_DOUBLE, O(weight_decay), 0, 10, true, "X",
	  "AdamW decay of matrices and embeddings (0.1)" },
	{ "--clip", F_DOUBLE, O(clip), 0, 1e9, true, "X", "global grad-norm clip, 0 = off (1.0)" },
	{ "--line-starts", F_BOOL, O(line_starts), 0, 0, true, NULL,
	  "every window starts at a line's first token (one poem per line: at a poem)" },
	{ "--repeat", F_DOUBLE, O(repeat), 0, 1, true, "P",
	  "chance that a training window repeats a span of itself later (0)" },
	{ "--repeat-min", F_INT, O(repeat_min), 1, CFG_MAX_CONTEXT, true, "N",
	  "shortest repeated span, tokens (20)" },
	{ "--repeat-max", F_INT, O(repeat_max), 1, CFG_MAX_CONTEXT, true, "N",
	  "longest repeated span, tokens (100)" },
	{ "--repeat-random", F_BOOL, O(repeat_random), 0, 0, true, NULL,
	  "repeated spans are random characters written twice, not copies of the text" },
	{ "--val-fraction", F_DOUBLE, O(val_fraction), 0, 0.9, true, "X",
	  "last fraction of the file kept for validation (0.1)" },
	{ "--val-every", F_LONG, O(val_every), 0, 1e8, true, "N", "validate every N steps, 0 = only at the end (250)" },
	{ "--val-batches", F_INT, O(val_batches), 1, 100000, true, "N", "fixed validation batches (8)" },
	{ "--seed", F_SEED, O(seed), 0, 0, true, "N", "initialisation and batch seed (1337)" },
	{ "--threads", F_INT, O(threads), 0, 1024, true, "N", "threads, 0 = all cores (0)" },
	{ "--out", F_STR, O(out), 0, 0, true, "FILE", "checkpoint to write (required)" },
	{ "--resume", F_STR, O(resume), 0, 0, false, "FILE", "continue an interrupted run from FILE + FILE.optim" },
	{ "--name", F_STR, O(name), 0, 0, true, "NAME", "model name (--out without .safetensors)" },
	{ "--dtype", F_DTYPE, O(dtype), 0, 0, true, "f32|f16", "checkpoint dtype (f32)" },
	{ "--log-every", F_LONG, O(log_every), 1, 1e8, true, "N", "log line every N steps when not on a terminal (100)" },
	{ "--keep-optim", F_BOOL, O(keep_optim), 0, 0, true, NULL, "keep FILE.optim after a complete run" },
	{ "--stop-after", F_LONG, O(stop_after), 1, 1e8, false, "N", "stop as if interrupted after N steps of this session" },
	{ "--stop-now-at", F_LONG, O(stop_now_at), 1, 1e8, false, "N",
	  "stop as if interrupted twice during step N of this session (it is dropped)" },
	{ "--db", F_STR, O(db), 0, 0, false, "PATH",
	  "record the run here as it trains ($ATTNSCOPE_DB)" },
	{ "--no-db", F_BOOL, O(no_db), 0, 0, false, NULL, "record nothing, even with $ATTNSCOPE_DB set" },
	{ "--quiet", F_BOOL, O(quiet), 0, 0, false, NULL, "no progress or summary" },
	{ "--help", F_BOOL, O(help), 0, 0, false, NULL, "this help" },
};
#undef O
#define N_FLAGS (sizeof flags / sizeof flags[0])

static void usage(FILE *f)
{
	fputs("usage: attnscope train --data FILE --out FILE [options]\n"
	      "       attnscope train --resume FILE [options that override the stored ones]\n"
	      "Trains a character-level transformer on a UTF-8 text and writes a checkpoint.\n"
	      "Ctrl-C (or SIGTERM) finishes the current step and saves FILE and FILE.optim;\n"
	      "a second one drops the step in progress and saves the last finished one; a\n"
	      "third quits at once without saving.  --resume FILE then continues exactly\n"
	      "where the run stopped.\n"
	      "Exit status: 0 done; 1 failure (the data, a file, the database, training\n"
	      "diverged, or quit without saving); 2 bad flags (wrong whatever the data);\n"
	      "130 stopped early and saved (resumable).\n\n",
	      f);
	for (size_t i = 0; i < N_FLAGS; i++) {
		char left[64];
		snprintf(left, sizeof left, "%s%s%s", flags[i].name, flags[i].arg ? " " : "",
			 flags[i].arg ? flags[i].arg : "");
		fprintf(f, "  %-30s %s\n", left, flags[i].help);
	}
}

static int parse_num(const char *name, const char *v, double lo, double hi, bool integer,
		     double *out, struct err *e)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno == ERANGE || !isfinite(x))
		return err_set(e, "%s: '%s' is not a number", name, v);
	if (integer && x != floor(x))
		return err_set(e, "%s: '%s' is not a whole number", name, v);
	if (x < lo || x > hi)
		return err_set(e, "%s: %s is outside %g..%g", name, v, lo, hi);
	*out = x;
	return 0;
}

/* Sets one flag from its value (NULL for booleans). */
static int set_flag(struct opts *o, const struct flag *f, const char *v, struct err *e)
{
	char *base = (char *)o + f->off;
	double x;
	int rc = 0;
	switch (f->kind) {
	case F_STR:
		if (!*v)
			return err_set(e, "%s: empty value", f->name);
		*(const char **)base = v;
		break;
	case F_INT:
		if (parse_num(f->name, v, f->lo, f->hi, true, &x, e))
			return -1;
		*(int *)base = (int)x;
		break;
	case F_LONG:
		if (parse_num(f->name, v, f->lo, f->hi, true, &x, e))
			return -1;
		*(long *)base = (long)x;
		break;
	case F_SEED: {
		char *end;
		errno = 0;
		long long s = strtoll(v, &end, 10);
		if (end == v || *end || errno || s < 0)
			return err_set(e, "%s: '%s' is not a non-negative integer", f->name, v);
		*(long long *)base = s;
		break;
	}
	case F_DOUBLE:
		if (parse_num(f->name, v, f->lo, f->hi, false, &x, e))
			return -1;
		*(double *)base = x;
		break;
	case F_BOOL:
		*(bool *)base = true;
		break;
	case F_NORM: rc = norm_type_parse(v, (enum norm_type *)base); break;
	case F_PLACE: rc = norm_place_parse(v, (enum norm_place *)base); break;
	case F_POS: rc = pos_type_parse(v, (enum pos_type *)base); break;
	case F_MLP: rc = mlp_type_parse(v, (enum mlp_type *)base); break;
	case F_MASK:
		rc = mask_kind_parse(v, (enum mask_kind *)base);
		if (rc == 0 && *(enum mask_kind *)base == MASK_WINDOW)
			rc = -1;
		break;
	case F_DTYPE:
		if (strcmp(v, "f32") == 0 || strcmp(v, "F32") == 0)
			*(enum ckpt_dtype *)base = CKPT_F32;
		else if (strcmp(v, "f16") == 0 || strcmp(v, "F16") == 0)
			*(enum ckpt_dtype *)base = CKPT_F16;
		else
			rc = -1;
		break;
	}
	if (rc)
		return err_set(e, "%s: unknown value '%s' (expected %s)", f->name, v, f->arg);
	return 0;
}

/* Growable array of owned strings. */
struct strv {
	char **v;
	int n, cap;
};

static void strv_push(struct strv *s, const char *x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
	}
	s->v[s->n++] = xstrdup(x);
}

static void strv_free(struct strv *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* Flags that decide the architecture or the vocabulary: --from MODEL
 * takes them from MODEL instead. */
static bool is_shape_flag(const char *name)
{
	static const char *const shape[] = {
		"--min-count", "--layers", "--heads", "--d-model", "--d-ff", "--context", "--norm",
		"--placement", "--pos", "--mlp", "--no-bias", "--untied", "--no-residual",
		"--no-scale", "--mask", "--no-mlp",
	};
	for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++)
		if (strcmp(name, shape[i]) == 0)
			return true;
	return false;
}

/* Parses args[0..n) onto o (later flags win).  Accepts "--flag value" and
 * "--flag=value".  When replay is not NULL, the flags marked replayable are
 * appended to it as "--flag=value" / "--flag".  The values point into args,
 * which must outlive o. */
static int parse_args(struct opts *o, int n, char **args, struct strv *replay, struct err *e)
{
	for (int i = 0; i < n; i++) {
		const char *a = args[i];
		const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		const struct flag *f = NULL;
		for (size_t j = 0; j < N_FLAGS; j++)
			if (strlen(flags[j].name) == klen && strncmp(flags[j].name, a, klen) == 0)
				f = &flags[j];
		if (!f) {
			if (strncmp(a, "--", 2) == 0)
				return err_set(e, "unknown option '%.*s'", (int)klen, a);
			return err_set(e, "unexpected argument '%s'", a);
		}
		const char *v = NULL;
		if (f->kind == F_BOOL) {
			if (eq)
				return err_set(e, "%s takes no value", f->name);
		} else if (eq) {
			v = eq + 1;
		} else {
			if (i + 1 >= n)
				return err_set(e, "%s needs a value (%s)", f->name, f->arg);
			v = args[++i];
		}
		if (set_flag(o, f, v, e))
			return -1;
		if (!o->shape_flag && is_shape_flag(f->name))
			o->shape_flag = f->name;
		if (replay && f->replay) {
			if (v) {
				size_t len = strlen(f->name) + strlen(v) + 2;
				char *s = xmalloc(len);
				snprintf(s, len, "%s=%s", f->name, v);
				strv_push(replay, s);
				free(s);
			} else {
				strv_push(replay, f->name);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------- text helpers */

/* Growable string. */
struct sbuf {
	char *s;
	size_t n, cap;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

/* Appends s quoted for a POSIX shell: as is when it only has safe
 * characters, else in single quotes with ' written as '\''. */
static void sb_shell_quote(struct sbuf *b, const char *s)
{
	bool safe = *s != '\0';
	for (const char *p = s; *p && safe; p++)
		safe = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || strchr("-_./:=,+@%", *p);
	if (safe) {
		sb_puts(b, s);
		return;
	}
	sb_puts(b, "'");
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			sb_puts(b, "'\\''");
		else
			sb_putn(b, p, 1);
	}
	sb_puts(b, "'");
}

/* "attnscope train ARGS..." shell-quoted (argv[0] is "train"). */
static char *command_line(int argc, char **argv)
{
	struct sbuf b = { 0 };
	sb_puts(&b, "attnscope");
	for (int i = 0; i < argc; i++) {
		sb_puts(&b, " ");
		sb_shell_quote(&b, argv[i]);
	}
	return b.s;
}

/* "1h02m03s", "4m05s", "12s". */
static void fmt_duration(char *buf, size_t size, double s)
{
	if (!(s >= 0) || s > 1e8) {
		snprintf(buf, size, "?");
		return;
	}
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, size, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
	else if (t >= 60)
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, size, "%lds", t);
}

/* --------------------------------------------------------- run state */

/* The run's rows in the session database (--db, else $ATTNSCOPE_DB; none
 * with --no-db); see "session database" below. */
struct recorder {
	struct store *st;        /* NULL: not recording (none asked for, or stopped) */
	char *real;              /* the database's path with links resolved, or NULL */
	int64_t run_id;          /* this run's training_runs id; 0 before rec_begin */
	size_t next;             /* history row of the first step not yet committed */
	double last_ms;          /* when steps were last committed */
};

/* A training job: the flags, the model and data, the trainer (trainer.h)
 * and what the command adds around it. */
struct job {
	struct opts o;
	struct model_config cfg;
	struct model *m;
	struct dataset d;
	struct trainer tr;       /* weights' moments, step, history */
	double prev_seconds;     /* wall time of earlier sessions */
	struct strv args;        /* replayable flags of the run */
	struct strv cmds;        /* command lines that ran it */
	struct recorder rec;
	int inputs[2];           /* util.h groups of --data and --from's files */
};

static void job_free(struct job *t)
{
	trainer_release(&t->tr);
	model_free(t->m);
	dataset_free(&t->d);
	strv_free(&t->args);
	strv_free(&t->cmds);
	store_close(t->rec.st);
	free(t->rec.real);
	in_use_drop(t->inputs[0]);
	in_use_drop(t->inputs[1]);
}

/* ------------------------------------------------ FILE.optim (optim.h) */

static char *optim_path(const char *out)
{
	size_t n = strlen(out) + 7;
	char *p = xmalloc(n);
	snprintf(p, n, "%s.optim", out);
	return p;
}

/* Writes the trainer's state to path (format in optim.h).  The JSON run
 * description holds the replayable flags ("args"), every command line that
 * ran the run ("commands"), the model config ("config") and, when the run
 * has a row in a session database, where ("db": {"path", "run"}), so that
 * the run resuming it can link its own row to it. */
static int optim_save(const struct job *t, const char *path, struct err *e)
{
	json_t *root = ju_check(json_object());
	ju_set(root, "args", ju_strings(t->args.v, t->args.n));
	ju_set(root, "commands", ju_strings(t->cmds.v, t->cmds.n));
	char *cj = checkpoint_config_json(&t->cfg);
	ju_set(root, "config", json_string(cj));
	free(cj);
	json_t *dbp = t->rec.real && t->rec.run_id > 0 ? json_string(t->rec.real) : NULL;
	if (dbp) { /* (NULL too for a path that is not UTF-8: then no link) */
		json_t *db = ju_check(json_object());
		ju_set(db, "path", dbp);
		ju_set(db, "run", json_integer((json_int_t)t->rec.run_id));
		ju_set(root, "db", db);
	}
	struct optim_file f = {
		.n_layer = (uint32_t)t->cfg.n_layer,
		.n_params = t->m->n_params,
		.step = (uint64_t)t->tr.step,
		.rng = t->tr.rng.state,
		.tokens = t->tr.tokens,
		.data_bytes = t->d.bytes,
		.data_hash = t->d.hash,
		.seconds = t->prev_seconds,
		.hist_n = t->tr.hist_n,
		.val_n = t->tr.val_n,
		.json = ju_dump(root, JSON_COMPACT),
		.params = t->m->params,
		.m = t->tr.opt.m,
		.v = t->tr.opt.v,
		.hist = t->tr.hist,
		.val = t->tr.val,
	};
	json_decref(root);
	int rc = optim_file_write(path, &f, e);
	free(f.json);
	return rc;
}

/* A stored run: its state and its parsed description. */
struct saved {
	struct optim_file f;
	struct strv args, cmds;
	char *config;
	char *db_path;    /* the database holding the stored run's row, or NULL */
	int64_t db_run;   /* that row's id */
};

static void saved_free(struct saved *s)
{
	optim_file_free(&s->f);
	strv_free(&s->args);
	strv_free(&s->cmds);
	free(s->config);
	free(s->db_path);
}

static int strv_from_json(struct strv *s, json_t *a)
{
	if (!json_is_array(a))
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_string(v))
			return -1;
		strv_push(s, json_string_value(v));
	}
	return 0;
}

/* Reads FILE.optim and its run description.  Errors name the path. */
static int optim_read(const char *path, struct saved *s, struct err *e)
{
	memset(s, 0, sizeof *s);
	if (optim_file_read(path, &s->f, e))
		return err_prefix(e, "--resume needs the optimizer state an interrupted run leaves");
	json_error_t jerr;
	json_t *root = json_loads(s->f.json, 0, &jerr);
	json_t *cfg = root ? json_object_get(root, "config") : NULL;
	if (!root || strv_from_json(&s->args, json_object_get(root, "args")) ||
	    strv_from_json(&s->cmds, json_object_get(root, "commands")) || !json_is_string(cfg)) {
		json_decref(root);
		return err_set(e, "%s: damaged run description", path);
	}
	s->config = xstrdup(json_string_value(cfg));
	json_t *db = json_object_get(root, "db");
	json_t *dbp = json_object_get(db, "path"), *dbr = json_object_get(db, "run");
	if (json_is_string(dbp) && json_is_integer(dbr) && json_integer_value(dbr) > 0) {
		s->db_path = xstrdup(json_string_value(dbp));
		s->db_run = (int64_t)json_integer_value(dbr);
	}
	json_decref(root);
	return 0;
}

/* Takes over the stored state into a trainer whose model was built from
 * the stored flags, after checking that the model, the data and the step
 * count agree. */
static int optim_restore(struct job *t, struct saved *s, const char *path, struct err *e)
{
	struct optim_file *f = &s->f;
	char *cj = checkpoint_config_json(&t->cfg);
	bool same = strcmp(cj, s->config) == 0;
	free(cj);
	if (!same || f->n_params != t->m->n_params || f->n_layer != (uint32_t)t->cfg.n_layer)
		return err_set(e, "%s: the model shape differs from the stored run's "
			       "(shape flags cannot change on --resume)", path);
	if (f->data_bytes != t->d.bytes || f->data_hash != t->d.hash)
		return err_set(e, "%s: the data file differs from the one the run started on", path);
	if ((long)f->step >= t->o.steps)
		return err_set(e, "%s: all %llu steps are done; pass a larger --steps to train further",
			       path, (unsigned long long)f->step);
	size_t P = t->m->n_params;
	memcpy(t->m->params, f->params, P * sizeof(float));
	memcpy(t->tr.opt.m, f->m, P * sizeof(float));
	memcpy(t->tr.opt.v, f->v, P * sizeof(float));
	free(t->tr.hist);
	free(t->tr.val);
	t->tr.hist = f->hist;
	t->tr.hist_n = t->tr.hist_cap = f->hist_n;
	t->tr.val = f->val;
	t->tr.val_n = t->tr.val_cap = f->val_n;
	f->hist = f->val = NULL;
	t->tr.step = (long)f->step;
	t->tr.opt.step = (long)f->step;
	t->tr.rng.state = f->rng;
	t->tr.tokens = f->tokens;
	t->prev_seconds = f->seconds;
	model_clear_cache(t->m);
	return 0;
}

/* ------------------------------------------------------ training record */

/* The JSON training record stored as the checkpoint's "training" metadata:
 * what ran, on what, for how long, the outcome, and a history of at most
 * ~1000 steps (every k-th step, plus the last). */
static char *train_record(const struct job *t, double seconds, bool complete)
{
	const struct opts *o = &t->o;
	json_t *r = ju_check(json_object());
	json_t *cmd = json_string(t->cmds.n ? t->cmds.v[0] : "?");
	ju_set(r, "command", cmd ? cmd : json_null());
	if (t->cmds.n > 1) {
		json_t *a = ju_check(json_array());
		for (int i = 1; i < t->cmds.n; i++) {
			json_t *v = json_string(t->cmds.v[i]);
			ju_append(a, v ? v : json_null());
		}
		ju_set(r, "resumed", a);
	}
	json_t *data = json_string(o->data);
	ju_set(r, "data", data ? data : json_null());
	if (o->from) {
		json_t *from = json_string(o->from);
		ju_set(r, "from", from ? from : json_null());
	}
	ju_set(r, "data_bytes", json_integer((json_int_t)t->d.bytes));
	ju_set(r, "data_tokens", json_integer((json_int_t)t->d.n));
	ju_set(r, "train_tokens", json_integer((json_int_t)t->d.n_train));
	ju_set(r, "val_tokens", json_integer((json_int_t)t->d.n_val));
	ju_set(r, "unk_tokens", json_integer((json_int_t)t->d.n_unk));
	ju_set(r, "min_count", json_integer(o->min_count));
	ju_set(r, "line_starts", json_boolean(o->line_starts));
	ju_set(r, "repeat", json_real(o->repeat));
	if (o->repeat > 0) {
		ju_set(r, "repeat_min", json_integer(o->repeat_min));
		ju_set(r, "repeat_max", json_integer(o->repeat_max));
		ju_set(r, "repeat_random", json_boolean(o->repeat_random));
	}
	ju_set(r, "seed", json_integer((json_int_t)o->seed));
	ju_set(r, "steps", json_integer(o->steps));
	ju_set(r, "steps_done", json_integer(t->tr.step));
	ju_set(r, "complete", json_boolean(complete));
	ju_set(r, "batch", json_integer(o->batch));
	ju_set(r, "context", json_integer(t->cfg.context));
	ju_set(r, "lr", json_real(o->lr));
	ju_set(r, "warmup", json_integer(o->warmup));
	ju_set(r, "min_lr_frac", json_real(o->min_lr_frac));
	ju_set(r, "weight_decay", json_real(o->weight_decay));
	ju_set(r, "clip", json_real(o->clip));
	ju_set(r, "val_fraction", json_real(o->val_fraction));
	ju_set(r, "params", json_integer((json_int_t)t->m->n_params));
	ju_set(r, "tokens_seen", json_integer((json_int_t)t->tr.tokens));
	ju_set(r, "final_train_loss", ju_real(trainer_final_loss(&t->tr)));
	ju_set(r, "final_val_loss", ju_real(trainer_last_val(&t->tr)));
	ju_set(r, "wall_seconds", json_real(round(seconds * 10) / 10));
	ju_set(r, "threads", json_integer(o->threads > 0 ? o->threads : cpu_count()));
	ju_set(r, "cores", json_integer(cpu_count()));

	size_t n = t->tr.hist_n, k = n > 1000 ? (n + 999) / 1000 : 1;
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
		const float *row = t->tr.hist + j * (size_t)t->tr.hw;
		ju_append(hs, json_integer((json_int_t)j + 1));
		ju_append(hl, ju_real(row[0]));
		ju_append(hr, ju_real(row[1]));
		ju_append(hg, ju_real(row[2]));
		json_t *ly = ju_check(json_array());
		for (int l = 0; l < t->cfg.n_layer; l++)
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
	for (size_t i = 0; i < t->tr.val_n; i++) {
		ju_append(vs, json_integer((json_int_t)t->tr.val[2 * i]));
		ju_append(vl, ju_real(t->tr.val[2 * i + 1]));
	}
	ju_set(v, "step", vs);
	ju_set(v, "loss", vl);
	ju_set(r, "val", v);
	char *s = ju_dump(r, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(r);
	return s;
}

/* ------------------------------------------------------------- checks */

/* Bytes of activations, gradients and optimizer state a run needs. */
static double train_bytes(const struct model_config *c, int B, int T)
{
	double bt = (double)B * T, L = c->n_layer, C = c->d_model, H = c->n_head;
	double V = c->vocab_size, F = c->d_ff, FF = cfg_ff_rows(c), QKV = 3.0 * C;
	double fwd = bt * V + bt + L * B * H * (double)T * T + L * bt * H + L * bt +
		     (L + 1) * bt * C + L * (4 * bt * C + 4 * bt + bt * QKV + bt * FF + bt * F) +
		     2 * bt * C + 2 * bt;
	double bwd = bt * V + 4 * bt * C + bt * QKV + (double)T * T + bt * FF + bt * F;
	return 4.0 * (fwd + bwd + 4.0 * (double)config_param_count(c));
}

static int check_memory(const struct model_config *c, int B, int T, struct err *e)
{
	double need = train_bytes(c, B, T);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	double have = pages > 0 && page > 0 ? (double)pages * page : 0;
	if ((double)B * T > (double)(1 << 26))
		return err_set(e, "--batch %d x --context %d is too many tokens per step", B, T);
	if (have > 0 && need > 0.9 * have)
		return err_set(e, "training needs about %.1f GiB (this machine has %.1f GiB); "
			       "lower --batch or --context", need / 1073741824.0, have / 1073741824.0);
	return 0;
}

/* ------------------------------------------------- session database */

/* Steps are committed REC_STEPS at a time, or REC_MS after the last commit,
 * and at every validation, interrupt and end. */
#define REC_STEPS 50
#define REC_MS 2000.0

/*
 * The run's rows in the session database: its training_runs row is
 * inserted before the first step (status "running"), its steps are
 * committed in batches as they are done (a kill -9 loses at most the last
 * batch), and the row is finished at the end (finished_at, status, losses).
 * A database that cannot be opened or written is refused before training;
 * a write that fails later is one warning and recording stops, because
 * the checkpoint is what matters.
 */

/* Opens the database of --db; else, on --resume, the one the resumed run
 * recorded in (when it is still there); else $ATTNSCOPE_DB; none with
 * --no-db.  0 (also when there is none), or -1 with a message. */
static int rec_open(struct recorder *r, const struct opts *o, const struct saved *saved,
		    struct err *e)
{
	const char *env = getenv(STORE_ENV), *path = o->db, *from = "--db";
	if (!path && o->resume && saved->db_path) {
		path = saved->db_path;
		from = "the database of the run resumed";
		if (access(path, F_OK) != 0) {
			fprintf(stderr, "attnscope train: warning: %s, %s, is gone; this run is not "
				"recorded (--db PATH records it elsewhere)\n", from, path);
			return 0;
		}
	}
	if (!path && env && *env) {
		path = env;
		from = "$" STORE_ENV;
	}
	if (!path || o->no_db)
		return 0;
	r->st = store_open(path, e);
	if (!r->st) {
		char msg[ERR_MAX];
		snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
		return err_set(e, "%s: %s%s", from, msg, o->db ? "" : " (--no-db records nothing)");
	}
	r->real = realpath(path, NULL);
	return 0;
}

/* The first write that fails: one warning, and nothing more is recorded. */
static void rec_stop(struct recorder *r, const struct err *e)
{
	fprintf(stderr, "attnscope train: warning: %s; recording stopped, training goes on\n", e->msg);
	store_close(r->st);
	r->st = NULL;
}

/* Inserts the run's row (status "running"), linked by resumed_from to the
 * row of the run that saved the state it resumes when that row is in the
 * same database.  Steps already done (restored on --resume) belong to that
 * run and are not recorded again.  0 (also without a database), or -1. */
static int rec_begin(struct job *t, const struct saved *saved, struct err *e)
{
	struct recorder *r = &t->rec;
	const struct opts *o = &t->o;
	r->next = t->tr.hist_n;
	r->last_ms = now_ms();
	if (!r->st)
		return 0;
	char hash[24];
	snprintf(hash, sizeof hash, "%016llx", (unsigned long long)t->d.hash);
	char *cj = checkpoint_config_json(&t->cfg);
	json_t *aj = ju_strings(t->args.v, t->args.n);
	char *args = ju_dump(aj, JSON_COMPACT);
	json_decref(aj);
	bool linked = saved && saved->db_path && r->real && strcmp(saved->db_path, r->real) == 0;
	struct store_train_run run = {
		.model_path = o->out, .data_path = o->data, .data_bytes = (int64_t)t->d.bytes,
		.data_hash = hash, .config_json = cj, .args_json = args, .seed = (uint64_t)o->seed,
		.threads = o->threads > 0 ? o->threads : cpu_count(),
		.resumed_from = linked ? saved->db_run : 0,
	};
	r->run_id = store_training_run(r->st, &run, e);
	free(cj);
	free(args);
	return r->run_id > 0 ? 0 : -1;
}

/* Commits the steps done since the last commit: always when force, else
 * once REC_STEPS are waiting or REC_MS have passed. */
static void rec_flush(struct job *t, bool force)
{
	struct recorder *r = &t->rec;
	size_t n = t->tr.hist_n - r->next;
	if (!r->st || n == 0 || (!force && n < REC_STEPS && now_ms() - r->last_ms < REC_MS))
		return;
	struct store_train_step *steps = xcalloc(n, sizeof *steps);
	for (size_t i = 0; i < n; i++) {
		const float *row = t->tr.hist + (r->next + i) * (size_t)t->tr.hw;
		steps[i] = (struct store_train_step){
			.step = (int64_t)(r->next + i) + 1, .loss = row[0], .lr = row[1],
			.grad_norm = row[2], .val_loss = NAN, .layer_grad_norms = row + 3,
			.n_layers = t->cfg.n_layer,
		};
	}
	for (size_t i = t->tr.val_n; i-- > 0;) { /* validations, newest first */
		size_t step = (size_t)t->tr.val[2 * i];
		if (step <= r->next)
			break;
		if (step <= t->tr.hist_n)
			steps[step - 1 - r->next].val_loss = t->tr.val[2 * i + 1];
	}
	struct err e;
	if (store_training_steps(r->st, r->run_id, steps, (int)n, &e) != 0)
		rec_stop(r, &e);
	else
		r->next = t->tr.hist_n;
	r->last_ms = now_ms();
	free(steps);
}

/* Commits the last steps and finishes the run's row: status "done",
 * "interrupted" or "failed" (with message). */
static void rec_finish(struct job *t, const char *status, double seconds, const char *message)
{
	struct recorder *r = &t->rec;
	if (r->run_id <= 0)
		return;
	rec_flush(t, true);
	struct err e;
	if (r->st && store_training_finish(r->st, r->run_id, status, t->tr.step, (int64_t)t->tr.tokens,
					   trainer_final_loss(&t->tr), trainer_last_val(&t->tr), seconds, message,
					   &e) != 0)
		rec_stop(r, &e);
}

/* "--out" without directory and ".safetensors". */
static char *default_name(const char *out)
{
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	size_t n = strlen(base);
	const char *ext = ".safetensors";
	if (n > strlen(ext) && strcmp(base + n - strlen(ext), ext) == 0)
		n -= strlen(ext);
	return xstrndup(base, n);
}

/* ------------------------------------------------------------ signals */

/*
 * SIGINT and SIGTERM while training.  The first asks the loop to stop
 * after the current step (stop_level 1); the second to stop at once
 * (stop_level 2): the step in progress is dropped before it changes the
 * weights, and the last finished step is saved; the third quits at once,
 * saving nothing, with status TRAIN_EXIT_FAIL.  While the checkpoint and
 * FILE.optim are written (saving), a signal only says so: the files are
 * always finished.
 */
static volatile sig_atomic_t stop_level;
static volatile sig_atomic_t saving;

static void say(const char *msg, size_t len)
{
	ssize_t w = write(STDERR_FILENO, msg, len);
	(void)w;
}
#define SAY(s) say(s, sizeof s - 1)

static void on_stop_signal(int sig)
{
	(void)sig;
	if (saving) {
		SAY("\nattnscope train: writing the checkpoint; it will be complete in a moment\n");
		return;
	}
	if (stop_level >= 2) {
		SAY("\nattnscope train: quit without saving: the checkpoint and FILE.optim are as "
		    "they were before this run\n");
		_exit(TRAIN_EXIT_FAIL);
	}
	if (++stop_level == 1)
		SAY("\nattnscope train: interrupted: finishing this step and saving (again: stop "
		    "now, saving the last finished step)\n");
	else
		SAY("\nattnscope train: stopping now: saving the last finished step (again: quit "
		    "without saving)\n");
}

/* The handlers in place from the first step until the files are written. */
struct stop_signals {
	struct sigaction old_int, old_term;
};

static void stop_signals_catch(struct stop_signals *s)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	stop_level = 0;
	saving = 0;
	sigaction(SIGINT, &sa, &s->old_int);
	sigaction(SIGTERM, &sa, &s->old_term);
}

static void stop_signals_release(const struct stop_signals *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	saving = 0;
}

/* ----------------------------------------------------------------- loop */

/* Progress: one line redrawn in place on a terminal, else a log line every
 * --log-every steps and after each validation, prefixed with the model name
 * (several runs may share one log). */
static void progress(const struct job *t, long session_steps, double session_s,
		     bool tty, bool force)
{
	static double last_draw;
	double now = now_ms();
	bool log = t->tr.step % t->o.log_every == 0 || t->tr.step == t->o.steps;
	if (tty && !force && now - last_draw < 100 && t->tr.step != t->o.steps)
		return;
	if (!tty && !force && !log)
		return;
	last_draw = now;
	const float *row = t->tr.hist + (t->tr.hist_n - 1) * (size_t)t->tr.hw;
	double tps = session_s > 0 ? (double)session_steps * t->o.batch * t->cfg.context / session_s : 0;
	double eta = session_steps ? session_s / (double)session_steps * (double)(t->o.steps - t->tr.step) : NAN;
	char etas[32], val[32];
	fmt_duration(etas, sizeof etas, eta);
	if (t->tr.val_n)
		snprintf(val, sizeof val, "%.4f", trainer_last_val(&t->tr));
	else
		snprintf(val, sizeof val, "-");
	if (tty)
		fputs("\r\033[K", stderr);
	else
		fprintf(stderr, "%s: ", t->m->name);
	fprintf(stderr, "step %ld/%ld  loss %.4f  val %s  lr %.2e  gnorm %.3f  %.0f tok/s  ETA %s%s",
		t->tr.step, t->o.steps, row[0], val, row[1], row[2], tps, etas, tty ? "" : "\n");
	fflush(stderr);
}

/* The training loop of one session, with the stop signals caught by the
 * caller.  Returns 0 when all steps are done, 1 when stopped early
 * (interrupt or --stop-after), -1 on error. */
static int run_loop(struct job *t, struct err *e)
{
	const struct opts *o = &t->o;
	t->tr.stop = &stop_level;
	bool tty = !o->quiet && isatty(STDERR_FILENO);
	bool show = !o->quiet;

	int rc = 0;
	long session = 0;
	double t0 = now_ms();
	while (t->tr.step < o->steps) {
		if (o->stop_now_at && session + 1 == o->stop_now_at)
			stop_level = 2;
		rc = trainer_step(&t->tr, e);
		if (rc != 0)
			break;
		session++;
		bool validate = t->d.n_val > 0 &&
			((o->val_every > 0 && t->tr.step % o->val_every == 0) || t->tr.step == o->steps);
		if (validate) {
			double vl;
			rc = trainer_validate(&t->tr, &vl, e);
			if (rc < 0)
				break;
		}
		if (show)
			progress(t, session, (now_ms() - t0) / 1000, tty, validate && !tty);
		rec_flush(t, validate);
		rc = 0;
		if (t->tr.step < o->steps && (stop_level || (o->stop_after && session >= o->stop_after))) {
			rc = 1;
			break;
		}
	}
	if (tty && session > 0)
		fputc('\n', stderr);
	t->tr.stop = NULL;
	return rc;
}

/* ------------------------------------------------------------ entry */

/* Builds the model config from the flags (vocab_size as given). */
static void build_config(const struct opts *o, int vocab, struct model_config *c)
{
	config_default(c);
	c->vocab_size = vocab;
	c->n_layer = o->layers;
	c->n_head = o->heads;
	c->n_kv_head = o->kv_heads ? o->kv_heads : o->heads;
	c->d_model = o->d_model;
	c->d_ff = o->d_ff ? o->d_ff : (4 * o->d_model <= CFG_MAX_DFF ? 4 * o->d_model : CFG_MAX_DFF);
	c->context = o->context;
	c->norm = o->norm;
	c->placement = o->placement;
	c->pos = o->pos;
	c->mlp = o->mlp;
	c->bias = !o->no_bias;
	c->tied = !o->untied;
	c->residual = !o->no_residual;
	c->scale = !o->no_scale;
	c->mask = o->mask;
	if (o->no_mlp)
		c->d_ff = 0;
}

/* The flags (on --resume: the stored ones, then those given) and whatever
 * can be checked from them alone.  Returns -1 to go on, else the exit
 * status: TRAIN_EXIT_OK for --help, TRAIN_EXIT_USAGE for bad flags,
 * TRAIN_EXIT_FAIL when FILE.optim cannot be read. */
static int read_flags(struct job *t, int argc, char **argv, struct saved *saved,
		      struct err *e)
{
	struct opts *o = &t->o;
	struct strv replay = { 0 };
	int status = TRAIN_EXIT_USAGE;
	opts_default(o);
	if (parse_args(o, argc - 1, argv + 1, &replay, e))
		goto out;
	if (o->help) {
		usage(stdout);
		status = TRAIN_EXIT_OK;
		goto out;
	}
	if (o->resume) {
		/* replay the stored flags, then the ones given now */
		const char *resume = o->resume;
		char *opath = optim_path(resume);
		int rc = optim_read(opath, saved, e);
		if (rc == 0) {
			opts_default(o);
			rc = parse_args(o, saved->args.n, saved->args.v, NULL, e);
			if (rc != 0)
				err_prefix(e, "%s: stored flags", opath);
		}
		free(opath);
		if (rc != 0) {
			status = TRAIN_EXIT_FAIL;
			goto out;
		}
		o->out = resume;
		parse_args(o, argc - 1, argv + 1, NULL, e);
		o->resume = resume;
		for (int i = 0; i < saved->args.n; i++)
			strv_push(&t->args, saved->args.v[i]);
		for (int i = 0; i < saved->cmds.n; i++)
			strv_push(&t->cmds, saved->cmds.v[i]);
	}
	for (int i = 0; i < replay.n; i++)
		strv_push(&t->args, replay.v[i]);
	char *cmd = command_line(argc, argv);
	strv_push(&t->cmds, cmd);
	free(cmd);

	if (!o->data) {
		err_set(e, "--data FILE is required (see attnscope train --help)");
		goto out;
	}
	if (!o->out) {
		err_set(e, "--out FILE is required (see attnscope train --help)");
		goto out;
	}
	if (o->from && o->shape_flag) {
		err_set(e, "--from MODEL takes the shape and vocabulary from MODEL; %s cannot be "
			"given with it", o->shape_flag);
		goto out;
	}
	build_config(o, 256, &t->cfg);
	if (!o->from && config_validate(&t->cfg, e)) { /* --from: checked against MODEL */
		err_prefix(e, "impossible shape");
		goto out;
	}
	if (o->repeat > 0 && (o->repeat_min > o->repeat_max || 2 * o->repeat_max > o->context + 1)) {
		err_set(e, "--repeat-min %d, --repeat-max %d: repeated spans do not fit twice in a "
			"window of --context %d + 1 tokens", o->repeat_min, o->repeat_max, o->context);
		goto out;
	}
	status = -1;
out:
	strv_free(&replay);
	return status;
}

/* --from MODEL: opens it and fills c with its config, with --kv-heads G
 * key/value heads when given.  The model keeps its tokenizer (the caller
 * takes it).  NULL with a message on failure. */
static struct model *from_model(const struct opts *o, struct model_config *c, struct err *e)
{
	struct model *src = model_open(o->from, e);
	if (!src) {
		err_prefix(e, "--from");
		return NULL;
	}
	if (!src->tok) {
		model_free(src);
		return err_set(e, "--from %s: the model has no tokenizer", o->from), NULL;
	}
	if (backward_supports(&src->cfg, e) != 0) { /* BERT: forward only */
		model_free(src);
		err_prefix(e, "--from %s", o->from);
		return NULL;
	}
	*c = src->cfg;
	if (o->kv_heads) {
		int H = c->n_head;
		if (H % o->kv_heads != 0) {
			model_free(src);
			return err_set(e, "--kv-heads %d does not divide %s's %d query heads",
				       o->kv_heads, o->from, H), NULL;
		}
		c->n_kv_head = o->kv_heads;
	}
	return src;
}

/* Copies src's weights into m, whose config is src's with n_kv_head
 * possibly changed: the K/V rows are the engine's conversion to that many
 * heads (model_qkv_for: mean-pooled within each group, or replicated). */
static void copy_weights(struct model *m, struct model *src)
{
	const float *qkvw, *qkvb;
	model_qkv_for(src, m->cfg.n_kv_head, &qkvw, &qkvb);
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		const float *from = i == P_QKVW ? qkvw : i == P_QKVB ? qkvb : src->p[i];
		memcpy(m->p[i], from, m->psize[i] * sizeof(float));
	}
	model_clear_cache(m);
}

/* Marks the files training reads (--data; --from's file, or its
 * directory's files) in use, so that neither --out nor its FILE.optim
 * replaces them, then checks both by util.h's rules.  0 or -1. */
static int check_out(struct job *t, struct err *e)
{
	const struct opts *o = &t->o;
	t->inputs[0] = in_use_new("the training data (--data)");
	in_use_add(t->inputs[0], o->data);
	char from[PATH_MAX];
	struct err ignored; /* a --from that does not resolve fails when it is loaded */
	if (o->from && model_resolve(o->from, from, sizeof from, &ignored) == 0) {
		t->inputs[1] = in_use_new("the model trained from (--from)");
		in_use_add(t->inputs[1], from);
	}
	char *optim = optim_path(o->out);
	int rc = out_check(o->out, 0, e) || out_check(optim, 0, e) ? -1 : 0;
	free(optim);
	return rc;
}

/* Files, data, the database and the model, everything before the first
 * step.  Problems found in the data are failures (TRAIN_EXIT_FAIL), even
 * when other flags would avoid them (a smaller --context); only the
 * machine's memory for the shape asked for is a usage error.  Returns -1
 * to go on, else the exit status. */
static int prepare(struct job *t, struct saved *saved, struct err *e)
{
	struct opts *o = &t->o;
	/* util.h's rules for written files, and the files read, before any
	 * work; after the database is open, so that --out is not it either */
	if (file_refuse_special(o->data, false, "a regular file", e))
		return TRAIN_EXIT_FAIL;
	if (rec_open(&t->rec, o, saved, e) || check_out(t, e))
		return TRAIN_EXIT_FAIL;
	struct model *src = NULL;
	if (o->from) {
		src = from_model(o, &t->cfg, e);
		if (!src)
			return TRAIN_EXIT_FAIL;
		if (dataset_load_tok(&t->d, o->data, src->tok, o->val_fraction, e)) {
			src->tok = NULL;
			model_free(src);
			return TRAIN_EXIT_FAIL;
		}
		src->tok = NULL;
	} else if (dataset_load(&t->d, o->data, o->min_count, o->val_fraction, e)) {
		return TRAIN_EXIT_FAIL;
	}
	int T = src ? t->cfg.context : o->context;
	if (dataset_check_context(&t->d, o->data, T, e)) {
		model_free(src);
		return TRAIN_EXIT_FAIL;
	}
	if (dataset_set_windows(&t->d, T, o->line_starts, o->repeat, o->repeat_min,
				o->repeat_max, o->repeat_random, e)) {
		err_prefix(e, "%s", o->data);
		model_free(src);
		return TRAIN_EXIT_FAIL;
	}
	if (!src)
		build_config(o, t->d.tok->vocab_size, &t->cfg);
	if (config_validate(&t->cfg, e)) {
		err_prefix(e, "%s: vocabulary of %d characters", o->data, t->cfg.vocab_size);
		model_free(src);
		return TRAIN_EXIT_FAIL;
	}
	if (check_memory(&t->cfg, o->batch, T, e)) {
		model_free(src);
		return TRAIN_EXIT_USAGE;
	}

	t->m = model_new(&t->cfg, e);
	if (!t->m) {
		model_free(src);
		return TRAIN_EXIT_FAIL;
	}
	if (src)
		copy_weights(t->m, src);
	else
		model_init_random(t->m, (uint64_t)o->seed);
	model_free(src);
	t->m->tok = t->d.tok;
	t->d.tok = NULL;
	t->m->name = o->name ? xstrdup(o->name) : default_name(o->out);
	struct train_hparams hp = {
		.batch = o->batch, .steps = o->steps, .warmup = o->warmup, .lr = o->lr,
		.min_lr_frac = o->min_lr_frac, .weight_decay = o->weight_decay, .clip = o->clip,
		.val_batches = o->val_batches, .seed = (uint64_t)o->seed,
	};
	trainer_init(&t->tr, t->m, &t->d, &hp);
	if (o->resume) {
		char *opath = optim_path(o->resume);
		int rc = optim_restore(t, saved, opath, e);
		free(opath);
		if (rc)
			return TRAIN_EXIT_FAIL;
	}
	engine_set_threads(o->threads);
	if (rec_begin(t, o->resume ? saved : NULL, e))
		return TRAIN_EXIT_FAIL;
	return -1;
}

/* Writes the checkpoint, and FILE.optim when stopped early or with
 * --keep-optim (else removes a stale one).  0 or -1. */
static int save_run(struct job *t, double seconds, bool stopped, struct err *e)
{
	const struct opts *o = &t->o;
	free(t->m->train_meta);
	t->m->train_meta = train_record(t, seconds, !stopped);
	if (checkpoint_save(t->m, o->out, o->dtype, e))
		return -1;
	char *opath = optim_path(o->out);
	int rc = 0;
	if (stopped || o->keep_optim) {
		t->prev_seconds = seconds;
		rc = optim_save(t, opath, e);
	} else if (unlink(opath) != 0 && errno != ENOENT) {
		fprintf(stderr, "attnscope train: warning: cannot remove stale %s: %s\n", opath,
			strerror(errno));
	}
	free(opath);
	return rc;
}

/* Trains, saves and reports.  Returns the exit status. */
static int train_and_save(struct job *t, double t_start, struct err *e)
{
	const struct opts *o = &t->o;
	if (!o->quiet)
		fprintf(stderr, "attnscope train: %s: %zu tokens (%zu train, %zu validation), "
			"vocabulary %d; %zu parameters; %s step %ld of %ld\n",
			o->data, t->d.n, t->d.n_train, t->d.n_val, t->cfg.vocab_size, t->m->n_params,
			o->resume ? "resuming at" : "starting at", t->tr.step + 1, o->steps);
	struct stop_signals sigs;
	stop_signals_catch(&sigs);
	int lrc = run_loop(t, e);
	double seconds = t->prev_seconds + (now_ms() - t_start) / 1000;
	bool stopped = lrc == 1;
	saving = 1;
	int rc = lrc < 0 ? -1 : save_run(t, seconds, stopped, e);
	rec_finish(t, rc < 0 ? "failed" : stopped ? "interrupted" : "done", seconds,
		   rc < 0 ? e->msg : NULL);
	stop_signals_release(&sigs);
	if (rc < 0)
		return TRAIN_EXIT_FAIL;
	if (stopped) {
		struct sbuf b = { 0 };
		sb_shell_quote(&b, o->out);
		if (!o->quiet)
			fprintf(stderr, "attnscope train: stopped after step %ld of %ld; saved %s and "
				"%s.optim\nresume with: attnscope train --resume %s\n",
				t->tr.step, o->steps, o->out, o->out, b.s);
		free(b.s);
		return TRAIN_EXIT_INTERRUPTED;
	}
	if (!o->quiet) {
		char wall[32], val[32] = "- (no validation split)";
		fmt_duration(wall, sizeof wall, seconds);
		if (t->tr.val_n)
			snprintf(val, sizeof val, "%.4f", trainer_last_val(&t->tr));
		printf("trained %s: %zu parameters, %ld steps, %llu tokens seen\n"
		       "final train loss %.4f (mean of the last 10%% of steps), val loss %s\n"
		       "wall time %s; wrote %s (%s)\n",
		       t->m->name, t->m->n_params, t->tr.step, (unsigned long long)t->tr.tokens,
		       trainer_final_loss(&t->tr), val, wall, o->out, o->dtype == CKPT_F16 ? "F16" : "F32");
		if (stream_flush(stdout, e))
			return TRAIN_EXIT_FAIL;
	}
	return TRAIN_EXIT_OK;
}

int train_run_args(int argc, char **argv, struct err *e)
{
	struct job t;
	memset(&t, 0, sizeof t);
	struct saved saved;
	memset(&saved, 0, sizeof saved);
	double t_start = now_ms();
	int status = read_flags(&t, argc, argv, &saved, e);
	if (status < 0)
		status = prepare(&t, &saved, e);
	if (status < 0)
		status = train_and_save(&t, t_start, e);
	saved_free(&saved);
	job_free(&t);
	return status;
}

int train_main(int argc, char **argv)
{
	struct err e = { { 0 } };
	int rc = train_run_args(argc, argv, &e);
	if (rc != TRAIN_EXIT_OK && rc != TRAIN_EXIT_INTERRUPTED)
		fprintf(stderr, "attnscope train: %s\n", e.msg);
	return rc;
}
