/*
 * train.c — `attnscope train`: its flags turned into a train_run spec
 * (train-run.h: the model, the data, resuming, the loop and the files),
 * and the hooks that add progress, the stop signals and the session
 * database (the recorder of store-train.h, on the store train.c opens)
 * around the run.  On --resume the flags stored in
 * FILE.optim (layout in optim.h, struct optim_file) are replayed first.
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

#include "checkpoint.h"
#include "config.h"
#include "model.h"
#include "store-train.h"
#include "train-run.h"
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


/* ------------------------------------------------------------ the run */

/* The hooks' state: the flags, the stored run on --resume, the run's
 * description, the database and the progress line. */
struct cli {
	struct opts o;
	struct model_config cfg;  /* from the flags (vocab_size 256 until the data is read) */
	struct train_saved saved; /* on --resume */
	struct strv args;         /* replayable flags of the run */
	struct strv cmds;         /* command lines that ran it */
	struct train_spec spec;   /* the flags as a train_run spec */
	struct store_train rec;   /* the run's rows in the session database */
	struct stop_signals sigs;
	bool tty;                 /* progress redrawn in place on a terminal */
	double t0;                /* when this session's first step began */
};

/* ------------------------------------------------- session database */

/* Opens the database of --db; else, on --resume, the one the resumed run
 * recorded in (when it is still there); else $ATTNSCOPE_DB; none with
 * --no-db.  0 with *st (NULL when there is none), or -1 with a message. */
static int db_open(const struct opts *o, const struct train_saved *saved, struct store **st,
		   struct err *e)
{
	const char *env = getenv(STORE_ENV), *path = o->db, *from = "--db";
	*st = NULL;
	if (!path && o->resume && saved->link.path) {
		path = saved->link.path;
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
	*st = store_open(path, e);
	if (!*st) {
		char msg[ERR_MAX];
		snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
		return err_set(e, "%s: %s%s", from, msg, o->db ? "" : " (--no-db records nothing)");
	}
	return 0;
}

static void cli_free(struct cli *c)
{
	train_saved_free(&c->saved);
	strv_free(&c->args);
	strv_free(&c->cmds);
	store_train_free(&c->rec);
}

/* Progress: one line redrawn in place on a terminal, else a log line every
 * --log-every steps and after each validation, prefixed with the model name
 * (several runs may share one log). */
static void progress(const struct cli *c, const struct train_state *s, bool force)
{
	static double last_draw;
	const struct opts *o = &c->o;
	const struct trainer *tr = s->tr;
	double now = now_ms(), session_s = (now - c->t0) / 1000;
	bool log = tr->step % o->log_every == 0 || tr->step == o->steps;
	if (c->tty && !force && now - last_draw < 100 && tr->step != o->steps)
		return;
	if (!c->tty && !force && !log)
		return;
	last_draw = now;
	const float *row = tr->hist + (tr->hist_n - 1) * (size_t)tr->hw;
	double tps = session_s > 0 ? (double)s->session * o->batch * s->m->cfg.context / session_s : 0;
	double eta = s->session ? session_s / (double)s->session * (double)(o->steps - tr->step) : NAN;
	char etas[32], val[32];
	fmt_duration(etas, sizeof etas, eta);
	if (tr->val_n)
		snprintf(val, sizeof val, "%.4f", trainer_last_val(tr));
	else
		snprintf(val, sizeof val, "-");
	if (c->tty)
		fputs("\r\033[K", stderr);
	else
		fprintf(stderr, "%s: ", s->m->name);
	fprintf(stderr, "step %ld/%ld  loss %.4f  val %s  lr %.2e  gnorm %.3f  %.0f tok/s  ETA %s%s",
		tr->step, o->steps, row[0], val, row[1], row[2], tps, etas, c->tty ? "" : "\n");
	fflush(stderr);
}

/* train_run's hooks (train-run.h).  Before the first step: the run's row
 * in the database, the opening line, the stop signals caught. */
static int on_start(void *ctx, const struct train_state *s, struct train_link *link,
		    struct err *e)
{
	struct cli *c = ctx;
	const struct opts *o = &c->o;
	if (store_train_on_start(&c->rec, s, link, e))
		return -1;
	if (!o->quiet)
		fprintf(stderr, "attnscope train: %s: %zu tokens (%zu train, %zu validation), "
			"vocabulary %d; %zu parameters; %s step %ld of %ld\n",
			o->data, s->d->n, s->d->n_train, s->d->n_val, s->m->cfg.vocab_size,
			s->m->n_params, o->resume ? "resuming at" : "starting at", s->tr->step + 1,
			o->steps);
	stop_signals_catch(&c->sigs);
	c->t0 = now_ms();
	return 0;
}

/* Before each step: stop after a finished step when a signal asked to or
 * --stop-after is reached; --stop-now-at N stops as a second signal would
 * during step N. */
static bool should_stop(void *ctx, const struct train_state *s)
{
	const struct opts *o = &((struct cli *)ctx)->o;
	if (s->session > 0 && (stop_level || (o->stop_after && s->session >= o->stop_after)))
		return true;
	if (o->stop_now_at && s->session + 1 == o->stop_now_at)
		stop_level = 2;
	return false;
}

static void on_step(void *ctx, const struct train_state *s)
{
	struct cli *c = ctx;
	if (!c->o.quiet)
		progress(c, s, s->validated && !c->tty);
	store_train_on_step(&c->rec, s);
}

static void after_steps(void *ctx, const struct train_state *s)
{
	struct cli *c = ctx;
	if (c->tty && s->session > 0)
		fputc('\n', stderr);
	saving = 1;
}

static void on_end(void *ctx, const struct train_state *s, int status, double seconds,
		   const char *message)
{
	struct cli *c = ctx;
	store_train_on_end(&c->rec, s, status, seconds, message);
	stop_signals_release(&c->sigs);
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

/* --resume FILE: reads FILE.optim and replays its stored flags onto o,
 * then the ones given (argc, argv); the run's description continues the
 * stored one.  0, or -1 when FILE.optim cannot be read. */
static int replay_stored(struct cli *c, int argc, char **argv, struct err *e)
{
	struct opts *o = &c->o;
	const char *resume = o->resume;
	char *opath = train_optim_path(resume);
	bool unreadable;
	int rc = train_saved_read(opath, &c->saved, &unreadable, e);
	if (rc != 0 && unreadable)
		err_prefix(e, "--resume needs the optimizer state an interrupted run leaves");
	if (rc == 0) {
		opts_default(o);
		rc = parse_args(o, c->saved.n_args, c->saved.args, NULL, e);
		if (rc != 0)
			err_prefix(e, "%s: stored flags", opath);
	}
	free(opath);
	if (rc != 0)
		return -1;
	o->out = resume;
	parse_args(o, argc - 1, argv + 1, NULL, e);
	o->resume = resume;
	for (int i = 0; i < c->saved.n_args; i++)
		strv_push(&c->args, c->saved.args[i]);
	for (int i = 0; i < c->saved.n_cmds; i++)
		strv_push(&c->cmds, c->saved.cmds[i]);
	return 0;
}

/* The flags (on --resume: the stored ones, then those given) and whatever
 * can be checked from them alone.  Returns -1 to go on, else the exit
 * status: TRAIN_EXIT_OK for --help, TRAIN_EXIT_USAGE for bad flags,
 * TRAIN_EXIT_FAIL when FILE.optim cannot be read. */
static int read_flags(struct cli *c, int argc, char **argv, struct err *e)
{
	struct opts *o = &c->o;
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
	if (o->resume && replay_stored(c, argc, argv, e)) {
		status = TRAIN_EXIT_FAIL;
		goto out;
	}
	for (int i = 0; i < replay.n; i++)
		strv_push(&c->args, replay.v[i]);
	char *cmd = command_line(argc, argv);
	strv_push(&c->cmds, cmd);
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
	build_config(o, 256, &c->cfg);
	if (!o->from && config_validate(&c->cfg, e)) { /* --from: checked against MODEL */
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

/* The flags as a train_run spec (pointing into c). */
static void make_spec(const struct cli *c, struct train_spec *s)
{
	const struct opts *o = &c->o;
	*s = (struct train_spec){
		.from = o->from, .from_kv_heads = o->from ? o->kv_heads : 0, .cfg = c->cfg,
		.data = o->data, .min_count = o->min_count, .val_fraction = o->val_fraction,
		.line_starts = o->line_starts, .repeat = o->repeat, .repeat_min = o->repeat_min,
		.repeat_max = o->repeat_max, .repeat_random = o->repeat_random,
		.hp = {
			.batch = o->batch, .steps = o->steps, .warmup = o->warmup, .lr = o->lr,
			.min_lr_frac = o->min_lr_frac, .weight_decay = o->weight_decay,
			.clip = o->clip, .val_batches = o->val_batches, .seed = (uint64_t)o->seed,
		},
		.val_every = o->val_every, .threads = o->threads,
		.out = o->out, .name = o->name, .dtype = o->dtype, .keep_optim = o->keep_optim,
		.resume = o->resume ? &c->saved : NULL,
		.args = c->args.v, .n_args = c->args.n, .cmds = c->cmds.v, .n_cmds = c->cmds.n,
	};
}

/* What the run ended with, on stdout (the summary) or stderr (stopped). */
static int report(const struct cli *c, int rc, const struct train_outcome *r, struct err *e)
{
	const struct opts *o = &c->o;
	if (rc == 1) {
		struct sbuf b = { 0 };
		sb_shell_quote(&b, o->out);
		if (!o->quiet)
			fprintf(stderr, "attnscope train: stopped after step %ld of %ld; saved %s and "
				"%s.optim\nresume with: attnscope train --resume %s\n",
				r->step, o->steps, o->out, o->out, b.s);
		free(b.s);
		return TRAIN_EXIT_INTERRUPTED;
	}
	if (o->quiet)
		return TRAIN_EXIT_OK;
	char wall[32], val[32] = "- (no validation split)";
	fmt_duration(wall, sizeof wall, r->seconds);
	if (r->validated)
		snprintf(val, sizeof val, "%.4f", r->val_loss);
	char *name = o->name ? xstrdup(o->name) : train_default_name(o->out);
	printf("trained %s: %zu parameters, %ld steps, %llu tokens seen\n"
	       "final train loss %.4f (mean of the last 10%% of steps), val loss %s\n"
	       "wall time %s; wrote %s (%s)\n",
	       name, r->n_params, r->step, (unsigned long long)r->tokens, r->final_loss, val, wall,
	       o->out, o->dtype == CKPT_F16 ? "F16" : "F32");
	free(name);
	return stream_flush(stdout, e) ? TRAIN_EXIT_FAIL : TRAIN_EXIT_OK;
}

int train_run_args(int argc, char **argv, struct err *e)
{
	struct cli c;
	memset(&c, 0, sizeof c);
	struct store *st = NULL;
	int status = read_flags(&c, argc, argv, e);
	/* util.h's rules for the files read and written, before any work;
	 * the database first, so that --out is not it either */
	if (status < 0 && (file_refuse_special(c.o.data, false, "a regular file", e) ||
			   db_open(&c.o, &c.saved, &st, e)))
		status = TRAIN_EXIT_FAIL;
	if (status < 0) {
		c.tty = !c.o.quiet && isatty(STDERR_FILENO);
		make_spec(&c, &c.spec);
		store_train_init(&c.rec, st, &c.spec);
		struct train_hooks hooks = {
			.ctx = &c, .on_start = on_start, .should_stop = should_stop,
			.on_step = on_step, .after_steps = after_steps, .on_end = on_end,
			.stop_now = &stop_level,
		};
		struct train_outcome r;
		int rc = train_run(&c.spec, &hooks, &r, e);
		status = rc < 0 ? (r.spec_error ? TRAIN_EXIT_USAGE : TRAIN_EXIT_FAIL) : report(&c, rc, &r, e);
	}
	cli_free(&c);
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
