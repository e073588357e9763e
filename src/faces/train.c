/*
 * train.c — `attnscope train`: its flags (a flags.h table) turned into a
 * train_run spec (train-run.h: the model, the data, resuming, the loop and
 * the files), and the hooks that add progress, the stop signals
 * (train-stop.h) and the session database (the recorder of store-train.h,
 * on the store train.c opens) around the run.  On --resume the flags
 * stored in FILE.optim (layout in optim.h, struct optim_file) are
 * replayed first.
 */
#define _GNU_SOURCE
#include "train.h"

#include <assert.h>
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
#include "flags.h"
#include "model.h"
#include "store-train.h"
#include "train-run.h"
#include "train-stop.h"
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
	bool mask_given;         /* --mask was given */
	enum train_objective objective;
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

/* The values of the FLAG_CHOICE flags. */
static int norm_flag(const char *v, void *p) { return norm_type_parse(v, p); }
static int place_flag(const char *v, void *p) { return norm_place_parse(v, p); }
static int pos_flag(const char *v, void *p) { return pos_type_parse(v, p); }
static int mlp_flag(const char *v, void *p) { return mlp_type_parse(v, p); }

static int mask_flag(const char *v, void *p)
{
	return mask_kind_parse(v, p) || *(enum mask_kind *)p == MASK_WINDOW ? -1 : 0;
}

static int objective_flag(const char *v, void *p) { return train_objective_parse(v, p); }

static int dtype_flag(const char *v, void *p)
{
	if (strcmp(v, "f32") == 0 || strcmp(v, "F32") == 0)
		*(enum ckpt_dtype *)p = CKPT_F32;
	else if (strcmp(v, "f16") == 0 || strcmp(v, "F16") == 0)
		*(enum ckpt_dtype *)p = CKPT_F16;
	else
		return -1;
	return 0;
}

/* Marks: R, stored in FILE.optim and replayed on --resume; S, a shape
 * flag (the architecture or the vocabulary), which --from MODEL takes from
 * MODEL instead.  The defaults of --batch .. --seed are the trainer's
 * (train_hparams_default; opts_default checks that they agree). */
enum { R = 1, S = 2 };
#define F(name, kind, field, lo, hi, marks, arg, def, help) \
	{ name, kind, offsetof(struct opts, field), lo, hi, marks, arg, def, help, NULL }
#define C(name, field, marks, arg, def, help, choice) \
	{ name, FLAG_CHOICE, offsetof(struct opts, field), 0, 0, marks, arg, def, help, choice }
#define MORE "\n                                 " /* a help line's continuation */
static const struct flag flags[] = {
	F("--data", FLAG_STR, data, 0, 0, R, "FILE", NULL, "UTF-8 training text (required)"),
	F("--min-count", FLAG_INT, min_count, 1, 1e9, R | S, "N", "1",
	  "characters occurring fewer than N times become <unk>"),
	F("--layers", FLAG_INT, layers, 1, CFG_MAX_LAYERS, R | S, "N", "4", "transformer blocks"),
	F("--heads", FLAG_INT, heads, 1, CFG_MAX_HEADS, R | S, "N", "4", "query heads"),
	F("--kv-heads", FLAG_INT, kv_heads, 1, CFG_MAX_HEADS, R, "N", NULL,
	  "key/value heads: = heads MHA, 1 MQA, else GQA (heads); with --from, MODEL's"
	  MORE "K/V heads mean-pooled (or replicated) to N first"),
	F("--d-model", FLAG_INT, d_model, 1, CFG_MAX_DMODEL, R | S, "N", "128", "model width"),
	F("--d-ff", FLAG_INT, d_ff, 1, CFG_MAX_DFF, R | S, "N", NULL, "MLP width (4 x d-model)"),
	F("--context", FLAG_INT, context, 1, CFG_MAX_CONTEXT, R | S, "N", "256",
	  "context = training window length"),
	C("--norm", norm, R | S, "layernorm|rmsnorm", "layernorm", "norm type",
	  norm_flag),
	C("--placement", placement, R | S, "pre|post", "pre", "norm placement",
	  place_flag),
	C("--pos", pos, R | S, "learned|rope", "learned", "positions", pos_flag),
	C("--mlp", mlp, R | S, "gelu|swiglu|gelu-exact", "gelu",
	  "MLP kind: GELU (tanh approximation), SwiGLU or exact GELU", mlp_flag),
	F("--no-bias", FLAG_BOOL, no_bias, 0, 0, R | S, NULL, NULL,
	  "no biases in linear layers and norms"),
	F("--untied", FLAG_BOOL, untied, 0, 0, R | S, NULL, NULL,
	  "separate output projection (tied to wte)"),
	F("--no-residual", FLAG_BOOL, no_residual, 0, 0, R | S, NULL, NULL,
	  "blocks without residual connections: each sub-block replaces the stream"),
	F("--no-scale", FLAG_BOOL, no_scale, 0, 0, R | S, NULL, NULL,
	  "scores not multiplied by 1/sqrt(d_head)"),
	C("--mask", mask, R | S, "causal|none|after-softmax", NULL,
	  "the mask the model trains with (causal); none and after-softmax"
	  MORE "let a position see the token it must predict", mask_flag),
	F("--no-mlp", FLAG_BOOL, no_mlp, 0, 0, R | S, NULL, NULL, "attention-only blocks (no MLP)"),
	C("--objective", objective, R, "clm|mlm", "clm",
	  "clm: next-token (a decoder); mlm: BERT's masked LM (an encoder: the"
	  MORE "[CLS] [SEP] [MASK] tokens, embedding norm, masked-LM head, mask none;"
	  MORE "windows start at lines, [CLS] + T-2 characters + [SEP], 15% scored)",
	  objective_flag),
	F("--from", FLAG_STR, from, 0, 0, R, "MODEL", NULL,
	  "start from MODEL's weights, shape and tokenizer (a name in models/ or a"
	  MORE "path); the shape flags above cannot be given with it"),
	F("--steps", FLAG_LONG, steps, 1, 1e8, R, "N", "2000", "optimizer steps"),
	F("--batch", FLAG_INT, batch, 1, 65536, R, "N", "16", "windows per step"),
	F("--lr", FLAG_DOUBLE, lr, 1e-9, 10, R, "X", "2e-3", "peak learning rate"),
	F("--warmup", FLAG_LONG, warmup, 0, 1e8, R, "N", "100", "linear warmup steps"),
	F("--min-lr-frac", FLAG_DOUBLE, min_lr_frac, 0, 1, R, "X", "0.1",
	  "cosine floor as a fraction of --lr"),
	F("--weight-decay", FLAG_DOUBLE, weight_decay, 0, 10, R, "X", "0.1",
	  "AdamW decay of matrices and embeddings"),
	F("--clip", FLAG_DOUBLE, clip, 0, 1e9, R, "X", "1.0", "global grad-norm clip, 0 = off"),
	F("--line-starts", FLAG_BOOL, line_starts, 0, 0, R, NULL, NULL,
	  "every window starts at a line's first token (one poem per line: at a poem)"),
	F("--repeat", FLAG_DOUBLE, repeat, 0, 1, R, "P", "0",
	  "chance that a training window repeats a span of itself later"),
	F("--repeat-min", FLAG_INT, repeat_min, 1, CFG_MAX_CONTEXT, R, "N", "20",
	  "shortest repeated span, tokens"),
	F("--repeat-max", FLAG_INT, repeat_max, 1, CFG_MAX_CONTEXT, R, "N", "100",
	  "longest repeated span, tokens"),
	F("--repeat-random", FLAG_BOOL, repeat_random, 0, 0, R, NULL, NULL,
	  "repeated spans are random characters written twice, not copies of the text"),
	F("--val-fraction", FLAG_DOUBLE, val_fraction, 0, 0.9, R, "X", "0.1",
	  "last fraction of the file kept for validation"),
	F("--val-every", FLAG_LONG, val_every, 0, 1e8, R, "N", "250",
	  "validate every N steps, 0 = only at the end"),
	F("--val-batches", FLAG_INT, val_batches, 1, 100000, R, "N", "8",
	  "fixed validation batches"),
	F("--seed", FLAG_NATURAL, seed, 0, 0, R, "N", "1337", "initialisation and batch seed"),
	F("--threads", FLAG_INT, threads, 0, 1024, R, "N", "0", "threads, 0 = all cores"),
	F("--out", FLAG_STR, out, 0, 0, R, "FILE", NULL, "checkpoint to write (required)"),
	F("--resume", FLAG_STR, resume, 0, 0, 0, "FILE", NULL,
	  "continue an interrupted run from FILE + FILE.optim"),
	F("--name", FLAG_STR, name, 0, 0, R, "NAME", NULL, "model name (--out without .safetensors)"),
	C("--dtype", dtype, R, "f32|f16", "f32", "checkpoint dtype", dtype_flag),
	F("--log-every", FLAG_LONG, log_every, 1, 1e8, R, "N", "100",
	  "log line every N steps when not on a terminal"),
	F("--keep-optim", FLAG_BOOL, keep_optim, 0, 0, R, NULL, NULL,
	  "keep FILE.optim after a complete run"),
	F("--stop-after", FLAG_LONG, stop_after, 1, 1e8, 0, "N", NULL,
	  "stop as if interrupted after N steps of this session"),
	F("--stop-now-at", FLAG_LONG, stop_now_at, 1, 1e8, 0, "N", NULL,
	  "stop as if interrupted twice during step N of this session (it is dropped)"),
	F("--db", FLAG_STR, db, 0, 0, 0, "PATH", NULL,
	  "record the run here as it trains ($ATTNSCOPE_DB)"),
	F("--no-db", FLAG_BOOL, no_db, 0, 0, 0, NULL, NULL,
	  "record nothing, even with $ATTNSCOPE_DB set"),
	F("--quiet", FLAG_BOOL, quiet, 0, 0, 0, NULL, NULL, "no progress or summary"),
	F("--help", FLAG_BOOL, help, 0, 0, 0, NULL, NULL, "this help"),
};
#undef MORE
#undef C
#undef F
#define N_FLAGS (sizeof flags / sizeof flags[0])

static void opts_default(struct opts *o)
{
	memset(o, 0, sizeof *o);
	if (flags_defaults(flags, N_FLAGS, o, NULL))
		abort();
	struct train_hparams hp; /* the trainer's defaults (trainer.h) */
	train_hparams_default(&hp, o->steps);
	assert(o->batch == hp.batch && o->lr == hp.lr && o->warmup == hp.warmup &&
	       o->min_lr_frac == hp.min_lr_frac && o->weight_decay == hp.weight_decay &&
	       o->clip == hp.clip && o->val_batches == hp.val_batches &&
	       (uint64_t)o->seed == hp.seed);
	(void)hp;
}

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
	flags_usage(f, flags, N_FLAGS, 30);
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

struct parse_ctx {
	struct opts *o;
	struct strv *replay;
};

/* After each flag: the first shape flag noted, a replayable one kept as
 * "--flag=value" / "--flag". */
static void seen_flag(void *ctx, const struct flag *f, const char *v)
{
	struct parse_ctx *p = ctx;
	if (!p->o->shape_flag && (f->marks & S))
		p->o->shape_flag = f->name;
	if (strcmp(f->name, "--mask") == 0)
		p->o->mask_given = true;
	if (!p->replay || !(f->marks & R))
		return;
	if (!v) {
		strv_push(p->replay, f->name);
		return;
	}
	size_t len = strlen(f->name) + strlen(v) + 2;
	char *s = xmalloc(len);
	snprintf(s, len, "%s=%s", f->name, v);
	strv_push(p->replay, s);
	free(s);
}

/* Parses args[0..n) onto o (later flags win); when replay is not NULL,
 * the replayable flags are appended to it.  The values point into args,
 * which must outlive o. */
static int parse_args(struct opts *o, int n, char **args, struct strv *replay, struct err *e)
{
	struct parse_ctx p = { o, replay };
	return flags_parse(flags, N_FLAGS, o, n, args, seen_flag, &p, e);
}

/* "attnscope train ARGS..." shell-quoted (argv[0] is "train"). */
static char *command_line(int argc, char **argv)
{
	size_t len = strlen("attnscope") + 1;
	char *line = xstrdup("attnscope");
	for (int i = 0; i < argc; i++) {
		char *q = shell_quote(argv[i]);
		len += strlen(q) + 1;
		line = xrealloc(line, len);
		strcat(strcat(line, " "), q);
		free(q);
	}
	return line;
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
	struct train_stop sigs;
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
	format_duration(eta, etas, sizeof etas);
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
	train_stop_catch(&c->sigs);
	c->t0 = now_ms();
	return 0;
}

/* Before each step: stop after a finished step when a signal asked to or
 * --stop-after is reached; --stop-now-at N stops as a second signal would
 * during step N. */
static bool should_stop(void *ctx, const struct train_state *s)
{
	const struct opts *o = &((struct cli *)ctx)->o;
	if (s->session > 0 && (train_stop_level || (o->stop_after && s->session >= o->stop_after)))
		return true;
	if (o->stop_now_at && s->session + 1 == o->stop_now_at)
		train_stop_level = 2;
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
	train_stop_saving();
}

static void on_end(void *ctx, const struct train_state *s, int status, double seconds,
		   const char *message)
{
	struct cli *c = ctx;
	store_train_on_end(&c->rec, s, status, seconds, message);
	train_stop_release(&c->sigs);
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
	if (o->objective == OBJ_MLM) { /* BERT's layout (placement and MLP as given) */
		c->head = HEAD_MLM;
		c->emb_norm = true;
		c->mask = MASK_NONE;
	}
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
	if (!o->from && config_check_heads(o->d_model, o->heads, e))
		goto out;
	if (!o->from && config_validate(&c->cfg, e)) { /* --from: checked against MODEL */
		err_prefix(e, "impossible shape");
		goto out;
	}
	if (o->objective == OBJ_MLM && o->mask_given && o->mask != MASK_NONE) {
		err_set(e, "--objective mlm trains an encoder, which sees every position: "
			"--mask %s cannot be given with it", mask_kind_name(o->mask));
		goto out;
	}
	if (o->objective == OBJ_MLM && o->repeat > 0) {
		err_set(e, "--objective mlm: --repeat is for decoders' windows only");
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
		.line_starts = o->line_starts || o->objective == OBJ_MLM, .repeat = o->repeat, .repeat_min = o->repeat_min,
		.repeat_max = o->repeat_max, .repeat_random = o->repeat_random,
		.hp = {
			.objective = o->objective, .batch = o->batch, .steps = o->steps, .warmup = o->warmup, .lr = o->lr,
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
		char *q = shell_quote(o->out);
		if (!o->quiet)
			fprintf(stderr, "attnscope train: stopped after step %ld of %ld; saved %s and "
				"%s.optim\nresume with: attnscope train --resume %s\n",
				r->step, o->steps, o->out, o->out, q);
		free(q);
		return TRAIN_EXIT_INTERRUPTED;
	}
	if (o->quiet)
		return TRAIN_EXIT_OK;
	char wall[32], val[64] = "- (no validation split)";
	format_duration(r->seconds, wall, sizeof wall);
	if (r->validated && o->objective == OBJ_MLM)
		snprintf(val, sizeof val, "%.4f, masked accuracy %.4f", r->val_loss, r->val_acc);
	else if (r->validated)
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
			.stop_now = &train_stop_level,
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
