/*
 * train-run.c — one training run (train-run.h): the model and the data,
 * the resumable optimizer state FILE.optim (layout in optim.h), the loop
 * over trainer_step with validation and the hooks, and the files at the
 * end (the checkpoint with its record, train-record.h).
 *
 * Everything that decides the next step (weights, moments, step counter,
 * batch generator) is saved when a run stops early, so a resumed run
 * repeats the uninterrupted one exactly.
 */
#define _GNU_SOURCE
#include "train-run.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "backward.h"
#include "config.h"
#include "json-util.h"
#include "loader.h"
#include "resolve.h"
#include "train-record.h"

/* ----------------------------------------------------------- file names */

char *train_optim_path(const char *out)
{
	size_t n = strlen(out) + 7;
	char *p = xmalloc(n);
	snprintf(p, n, "%s.optim", out);
	return p;
}

char *train_default_name(const char *out)
{
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	size_t n = strlen(base);
	const char *ext = ".safetensors";
	if (n > strlen(ext) && strcmp(base + n - strlen(ext), ext) == 0)
		n -= strlen(ext);
	return xstrndup(base, n);
}

/* ------------------------------------------------ FILE.optim (optim.h) */

static void strings_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void train_saved_free(struct train_saved *s)
{
	free(s->path);
	optim_file_free(&s->f);
	strings_free(s->args, s->n_args);
	strings_free(s->cmds, s->n_cmds);
	free(s->config);
	free(s->link.path);
	memset(s, 0, sizeof *s);
}

/* a, a JSON array of strings, as (*n) malloc'd strings.  0 or -1. */
static int strings_from_json(const json_t *a, char ***v, int *n)
{
	if (!json_is_array(a))
		return -1;
	size_t len = json_array_size(a);
	*v = xcalloc(len + 1, sizeof **v);
	for (size_t i = 0; i < len; i++) {
		const json_t *x = json_array_get(a, i);
		if (!json_is_string(x))
			return -1;
		(*v)[(*n)++] = xstrdup(json_string_value(x));
	}
	return 0;
}

/* The JSON run description of FILE.optim: the replayable flags ("args"),
 * every command line that ran the run ("commands"), the model config
 * ("config") and, when the run is recorded somewhere, where ("db":
 * {"path", "run"}), so that the run resuming it can link its own record to
 * it. */
int train_saved_read(const char *path, struct train_saved *s, bool *unreadable, struct err *e)
{
	memset(s, 0, sizeof *s);
	if (unreadable)
		*unreadable = true;
	if (optim_file_read(path, &s->f, e))
		return -1;
	if (unreadable)
		*unreadable = false;
	s->path = xstrdup(path);
	json_error_t jerr;
	json_t *root = json_loads(s->f.json, 0, &jerr);
	json_t *cfg = root ? json_object_get(root, "config") : NULL;
	if (!root || strings_from_json(json_object_get(root, "args"), &s->args, &s->n_args) ||
	    strings_from_json(json_object_get(root, "commands"), &s->cmds, &s->n_cmds) ||
	    !json_is_string(cfg)) {
		json_decref(root);
		train_saved_free(s);
		return err_set(e, "%s: damaged run description", path);
	}
	s->config = xstrdup(json_string_value(cfg));
	json_t *db = json_object_get(root, "db");
	json_t *dbp = json_object_get(db, "path"), *dbr = json_object_get(db, "run");
	if (json_is_string(dbp) && json_is_integer(dbr) && json_integer_value(dbr) > 0) {
		s->link.path = xstrdup(json_string_value(dbp));
		s->link.run = (int64_t)json_integer_value(dbr);
	}
	json_decref(root);
	return 0;
}

/* A run in progress: the spec, what was built or borrowed for it, and the
 * trainer. */
struct job {
	const struct train_spec *s;
	const struct train_hooks *h;
	struct model_config cfg;
	struct model *m;           /* s->model, or built here (owned) */
	struct dataset dl;         /* the data loaded here */
	const struct dataset *d;   /* s->dataset or &dl */
	struct trainer own, *tr;   /* s->trainer or &own */
	double prev_seconds;       /* wall time of earlier sessions */
	double seconds;            /* of every session, once this one ended */
	struct train_link link;    /* from on_start; path owned */
	int inputs[2];             /* util.h groups of the data's and from's files */
	struct train_state st;
};

/* Writes the trainer's state and the run's description to path. */
static int optim_save(const struct job *j, const char *path, struct err *e)
{
	const struct train_spec *s = j->s;
	json_t *root = ju_check(json_object());
	ju_set(root, "args", ju_strings(s->args, s->n_args));
	ju_set(root, "commands", ju_strings(s->cmds, s->n_cmds));
	char *cj = checkpoint_config_json(&j->cfg);
	ju_set(root, "config", json_string(cj));
	free(cj);
	json_t *dbp = j->link.path && j->link.run > 0 ? json_string(j->link.path) : NULL;
	if (dbp) { /* (NULL too for a path that is not UTF-8: then no link) */
		json_t *db = ju_check(json_object());
		ju_set(db, "path", dbp);
		ju_set(db, "run", json_integer((json_int_t)j->link.run));
		ju_set(root, "db", db);
	}
	const struct trainer *t = j->tr;
	struct optim_file f = {
		.n_layer = (uint32_t)j->cfg.n_layer,
		.n_params = j->m->n_params,
		.step = (uint64_t)t->step,
		.rng = t->rng.state,
		.tokens = t->tokens,
		.data_bytes = j->d->bytes,
		.data_hash = j->d->hash,
		.seconds = j->prev_seconds,
		.hist_n = t->hist_n,
		.val_n = t->val_n,
		.json = ju_dump(root, JSON_COMPACT),
		.params = j->m->params,
		.m = t->opt.m,
		.v = t->opt.v,
		.hist = t->hist,
		.val = t->val,
	};
	json_decref(root);
	int rc = optim_file_write(path, &f, e);
	free(f.json);
	return rc;
}

/* Copies the stored state into the trainer of a model built from the
 * stored flags, after checking that the model, the data and the step
 * count agree. */
static int optim_restore(struct job *j, const struct train_saved *sv, struct err *e)
{
	const struct optim_file *f = &sv->f;
	struct trainer *t = j->tr;
	char *cj = checkpoint_config_json(&j->cfg);
	bool same = strcmp(cj, sv->config) == 0;
	free(cj);
	if (!same || f->n_params != j->m->n_params || f->n_layer != (uint32_t)j->cfg.n_layer)
		return err_set(e, "%s: the model shape differs from the stored run's "
			       "(shape flags cannot change on --resume)", sv->path);
	if (f->data_bytes != j->d->bytes || f->data_hash != j->d->hash)
		return err_set(e, "%s: the data file differs from the one the run started on", sv->path);
	if ((long)f->step >= j->s->hp.steps)
		return err_set(e, "%s: all %llu steps are done; pass a larger --steps to train further",
			       sv->path, (unsigned long long)f->step);
	size_t P = j->m->n_params, hw = (size_t)t->hw;
	memcpy(j->m->params, f->params, P * sizeof(float));
	memcpy(t->opt.m, f->m, P * sizeof(float));
	memcpy(t->opt.v, f->v, P * sizeof(float));
	free(t->hist);
	free(t->val);
	t->hist = xmalloc((f->hist_n * hw + 1) * sizeof *t->hist);
	memcpy(t->hist, f->hist, f->hist_n * hw * sizeof *t->hist);
	t->hist_n = t->hist_cap = f->hist_n;
	t->val = xmalloc((f->val_n * 2 + 1) * sizeof *t->val);
	memcpy(t->val, f->val, f->val_n * 2 * sizeof *t->val);
	t->val_n = t->val_cap = f->val_n;
	t->step = (long)f->step;
	t->opt.step = (long)f->step;
	t->rng.state = f->rng;
	t->tokens = f->tokens;
	j->prev_seconds = f->seconds;
	model_clear_cache(j->m);
	return 0;
}

/* --------------------------------------------------------------- checks */

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

/* Marks the files training reads (the data; from's file, or its
 * directory's files) in use, so that neither the checkpoint nor its
 * FILE.optim replaces them, then checks both by util.h's rules.  0 or -1. */
static int check_out(struct job *j, struct err *e)
{
	const struct train_spec *s = j->s;
	if (s->data) {
		j->inputs[0] = in_use_new("the training data (--data)");
		in_use_add(j->inputs[0], s->data);
	}
	char from[PATH_MAX];
	struct err ignored; /* a from that does not resolve fails when it is loaded */
	if (s->from && model_resolve(s->from, from, sizeof from, &ignored) == 0) {
		j->inputs[1] = in_use_new("the model trained from (--from)");
		in_use_add(j->inputs[1], from);
	}
	if (!s->out)
		return 0;
	char *optim = train_optim_path(s->out);
	int rc = out_check(s->out, 0, e) || out_check(optim, 0, e) ? -1 : 0;
	free(optim);
	return rc;
}

/* ---------------------------------------------------------------- setup */

/* from: opens it and fills c with its config, with from_kv_heads
 * key/value heads when given.  The model keeps its tokenizer (the caller
 * takes it).  NULL with a message on failure. */
static struct model *from_model(const struct train_spec *s, struct model_config *c,
				struct err *e)
{
	struct model *src = model_open(s->from, e);
	if (!src) {
		err_prefix(e, "--from");
		return NULL;
	}
	if (!src->tok) {
		model_free(src);
		return err_set(e, "--from %s: the model has no tokenizer", s->from), NULL;
	}
	if (backward_supports(&src->cfg, e) != 0) { /* no head: no loss */
		model_free(src);
		err_prefix(e, "--from %s", s->from);
		return NULL;
	}
	*c = src->cfg;
	if (s->from_kv_heads) {
		int H = c->n_head;
		if (H % s->from_kv_heads != 0) {
			model_free(src);
			return err_set(e, "--kv-heads %d does not divide %s's %d query heads",
				       s->from_kv_heads, s->from, H), NULL;
		}
		if (c->qk_norm_whole && s->from_kv_heads != c->n_kv_head) {
			model_free(src);
			return err_set(e, "--kv-heads %d: %s's key norm spans its %d key heads "
				       "together (OLMo-2's), so it trains with them", s->from_kv_heads,
				       s->from, c->n_kv_head), NULL;
		}
		c->n_kv_head = s->from_kv_heads;
	}
	return src;
}

/* Copies src's weights into m, whose config is src's with n_kv_head
 * possibly changed: the K/V rows are the engine's conversion to that many
 * heads (model_qkv_for: mean-pooled within each group, or replicated).
 * Tensors src holds as stored are converted a layer at a time. */
static void copy_weights(struct model *m, struct model *src)
{
	const float *qkvw, *qkvb;
	model_qkv_for(src, m->cfg.n_kv_head, &qkvw, &qkvb);
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		const float *from = i == P_QKVW ? qkvw : i == P_QKVB ? qkvb : src->p[i];
		if (from) {
			memcpy(m->p[i], from, m->psize[i] * sizeof(float));
			continue;
		}
		int n = param_per_layer((enum param_id)i) ? m->cfg.n_layer : 1;
		for (int l = 0; l < n; l++) /* held as stored (the native QKV too) */
			model_rows_f32(src, (enum param_id)i, l, 0, (size_t)src->held[i][l].rows,
				       m->p[i] + (size_t)l * (m->psize[i] / (size_t)n));
	}
	model_clear_cache(m);
}

/* Loads s->data into j->dl (with from's tokenizer, src->tok, which it
 * takes) and sets its windows.  0 or -1. */
static int load_data(struct job *j, struct model *src, struct err *e)
{
	const struct train_spec *s = j->s;
	if (src) {
		int rc = dataset_load_tok(&j->dl, s->data, src->tok, s->val_fraction, e);
		src->tok = NULL; /* taken, or freed on failure */
		if (rc)
			return -1;
	} else if (dataset_load_chars(&j->dl, s->data, s->min_count,
				      s->hp.objective == OBJ_MLM ? TOK_CHAR_MLM : TOK_CHAR_PLAIN,
				      s->val_fraction, e)) {
		return -1;
	}
	int T = j->cfg.context;
	if (dataset_check_context(&j->dl, s->data, T, e))
		return -1;
	if (dataset_set_windows(&j->dl, T, s->line_starts, s->repeat, s->repeat_min,
				s->repeat_max, s->repeat_random, e))
		return err_prefix(e, "%s", s->data);
	return 0;
}

/* The model and the data from files: from's or a fresh one, initialised.
 * Problems in the data are failures even when other settings would avoid
 * them (a smaller context); only the machine's memory for the shape asked
 * for is the spec's (out->spec_error).  0 or -1. */
static int build(struct job *j, struct train_outcome *out, struct err *e)
{
	const struct train_spec *s = j->s;
	/* util.h's rules for the files read and written, before any work */
	if (file_refuse_special(s->data, false, "a regular file", e) || check_out(j, e))
		return -1;
	j->cfg = s->cfg;
	struct model *src = s->from ? from_model(s, &j->cfg, e) : NULL;
	if (s->from && !src)
		return -1;
	int rc = load_data(j, src, e);
	if (rc == 0 && !src)
		j->cfg.vocab_size = j->dl.tok->vocab_size;
	if (rc == 0 && config_validate(&j->cfg, e)) {
		err_prefix(e, "%s: vocabulary of %d characters", s->data, j->cfg.vocab_size);
		rc = -1;
	}
	if (rc == 0 && check_memory(&j->cfg, s->hp.batch, j->cfg.context, e)) {
		out->spec_error = true;
		rc = -1;
	}
	if (rc == 0)
		j->m = model_new(&j->cfg, e);
	if (rc == 0 && !j->m)
		rc = -1;
	if (rc == 0) {
		if (src)
			copy_weights(j->m, src);
		else
			model_init_random(j->m, s->hp.seed);
		j->m->tok = j->dl.tok;
		j->dl.tok = NULL;
		j->m->name = s->name ? xstrdup(s->name) : s->out ? train_default_name(s->out)
			     : xstrdup("trained");
	}
	model_free(src);
	j->d = &j->dl;
	return rc;
}

/* Everything before the first step: the model, the data, the trainer and
 * the stored state.  0 or -1. */
static int prepare(struct job *j, struct train_outcome *out, struct err *e)
{
	const struct train_spec *s = j->s;
	if (!s->model != !s->dataset)
		return err_set(e, "train_run: a borrowed model needs a borrowed dataset and back");
	if (s->model) {
		j->m = s->model;
		j->d = s->dataset;
		j->cfg = s->model->cfg;
		if (check_out(j, e))
			return -1;
	} else if (build(j, out, e)) {
		return -1;
	}
	if (trainer_check_objective(j->m, &s->hp, e)) {
		out->spec_error = !s->model;
		return -1;
	}
	j->tr = s->trainer ? s->trainer : &j->own;
	trainer_init(j->tr, j->m, j->d, &s->hp);
	if (s->resume && optim_restore(j, s->resume, e))
		return -1;
	engine_set_threads(s->threads);
	return 0;
}

/* ----------------------------------------------------------------- loop */

/* The steps of this session.  0 when all are done, 1 when stopped early,
 * -1 on error. */
static int run_loop(struct job *j, struct err *e)
{
	const struct train_spec *s = j->s;
	const struct train_hooks *h = j->h;
	struct trainer *t = j->tr;
	t->stop = h->stop_now;
	int rc = 0;
	while (t->step < s->hp.steps) {
		j->st.validated = false;
		if (h->should_stop && h->should_stop(h->ctx, &j->st)) {
			rc = 1;
			break;
		}
		rc = trainer_step(t, e);
		if (rc != 0)
			break;
		j->st.session++;
		bool validate = s->val_every >= 0 && j->d->n_val > 0 &&
			((s->val_every > 0 && t->step % s->val_every == 0) || t->step == s->hp.steps);
		if (validate) {
			double vl;
			rc = trainer_validate(t, &vl, e);
			if (rc < 0)
				break;
			if (rc == 0 && h->on_validate)
				h->on_validate(h->ctx, &j->st, vl);
			rc = 0;
		}
		j->st.validated = validate;
		if (h->on_step)
			h->on_step(h->ctx, &j->st);
	}
	t->stop = NULL;
	return rc;
}

/* Writes the checkpoint with its record, and FILE.optim when stopped
 * early or with keep_optim (else removes a stale one).  0 or -1. */
static int save_run(struct job *j, double seconds, bool stopped, struct err *e)
{
	const struct train_spec *s = j->s;
	free(j->m->train_meta);
	j->m->train_meta = train_record_json(s, j->tr, j->d, seconds, !stopped);
	if (checkpoint_save(j->m, s->out, s->dtype, e))
		return -1;
	char *opath = train_optim_path(s->out);
	int rc = 0;
	if (stopped || s->keep_optim) {
		j->prev_seconds = seconds;
		rc = optim_save(j, opath, e);
	} else if (unlink(opath) != 0 && errno != ENOENT) {
		fprintf(stderr, "attnscope train: warning: cannot remove stale %s: %s\n", opath,
			strerror(errno));
	}
	free(opath);
	return rc;
}

/* Trains from the prepared job and writes the files.  0, 1 or -1. */
static int train_and_save(struct job *j, double t_start, struct err *e)
{
	const struct train_hooks *h = j->h;
	j->st.seconds_before = j->prev_seconds;
	if (h->on_start && h->on_start(h->ctx, &j->st, &j->link, e))
		return -1;
	int rc = run_loop(j, e);
	if (h->after_steps)
		h->after_steps(h->ctx, &j->st);
	double seconds = j->prev_seconds + (now_ms() - t_start) / 1000;
	bool stopped = rc == 1;
	if (rc >= 0 && j->s->out && save_run(j, seconds, stopped, e))
		rc = -1;
	if (h->on_end)
		h->on_end(h->ctx, &j->st, rc, seconds, rc < 0 ? e->msg : NULL);
	j->seconds = seconds;
	return rc;
}

static void outcome_fill(const struct job *j, struct train_outcome *out)
{
	const struct trainer *t = j->tr;
	out->seconds = j->seconds;
	if (!t)
		return;
	out->step = t->step;
	out->tokens = t->tokens;
	out->n_params = j->m->n_params;
	out->final_loss = trainer_final_loss(t);
	out->validated = t->val_n > 0;
	out->val_loss = t->val_n ? trainer_last_val(t) : NAN;
	out->val_acc = t->val_acc;
}

int train_run(const struct train_spec *spec, const struct train_hooks *hooks,
	      struct train_outcome *out, struct err *e)
{
	static const struct train_hooks none;
	double t_start = now_ms();
	struct job j;
	memset(&j, 0, sizeof j);
	j.s = spec;
	j.h = hooks ? hooks : &none;
	memset(out, 0, sizeof *out);
	if (spec->trainer)
		memset(spec->trainer, 0, sizeof *spec->trainer);
	out->final_loss = out->val_loss = out->val_acc = NAN;
	int rc = prepare(&j, out, e);
	if (rc == 0) {
		j.st = (struct train_state){ .tr = j.tr, .m = j.m, .d = j.d };
		rc = train_and_save(&j, t_start, e);
	}
	outcome_fill(&j, out);
	if (j.tr == &j.own)
		trainer_release(&j.own);
	if (j.m != spec->model)
		model_free(j.m);
	dataset_free(&j.dl);
	free(j.link.path);
	in_use_drop(j.inputs[0]);
	in_use_drop(j.inputs[1]);
	return rc;
}
