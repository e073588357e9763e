/*
 * store-train.c — a training run's rows in the session database, written
 * from train_run's hooks (store-train.h).  Uses only store.h's training
 * calls (store-runs.c), not SQLite itself.
 */
#define _GNU_SOURCE
#include "store-train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checkpoint.h"
#include "json-util.h"
#include "trainer.h"

void store_train_init(struct store_train *r, struct store *st, const struct train_spec *spec)
{
	memset(r, 0, sizeof *r);
	r->st = st;
	r->spec = spec;
	if (st)
		r->real = realpath(store_path(st), NULL);
}

void store_train_free(struct store_train *r)
{
	store_close(r->st);
	free(r->real);
	memset(r, 0, sizeof *r);
}

/* The first write that fails: one warning, and nothing more is recorded. */
static void rec_stop(struct store_train *r, const struct err *e)
{
	fprintf(stderr, "attnscope train: warning: %s; recording stopped, training goes on\n", e->msg);
	store_close(r->st);
	r->st = NULL;
}

int store_train_on_start(void *ctx, const struct train_state *s, struct train_link *link,
			 struct err *e)
{
	struct store_train *r = ctx;
	const struct train_spec *sp = r->spec;
	const struct train_saved *saved = sp->resume;
	r->next = s->tr->hist_n;
	r->last_ms = now_ms();
	if (!r->st)
		return 0;
	char hash[24];
	snprintf(hash, sizeof hash, "%016llx", (unsigned long long)s->d->hash);
	char *cj = checkpoint_config_json(&s->m->cfg);
	json_t *aj = ju_strings(sp->args, sp->n_args);
	char *args = ju_dump(aj, JSON_COMPACT);
	json_decref(aj);
	bool linked = saved && saved->link.path && r->real && strcmp(saved->link.path, r->real) == 0;
	struct store_train_run run = {
		.model_path = sp->out, .data_path = sp->data, .data_bytes = (int64_t)s->d->bytes,
		.data_hash = hash, .config_json = cj, .args_json = args, .seed = sp->hp.seed,
		.threads = sp->threads > 0 ? sp->threads : cpu_count(),
		.resumed_from = linked ? saved->link.run : 0,
	};
	r->run_id = store_training_run(r->st, &run, e);
	free(cj);
	free(args);
	if (r->run_id <= 0)
		return -1;
	if (r->real && link) {
		link->path = xstrdup(r->real);
		link->run = r->run_id;
	}
	return 0;
}

/* Commits the steps done since the last commit: always when force, else
 * once STORE_TRAIN_STEPS are waiting or STORE_TRAIN_MS have passed. */
static void rec_flush(struct store_train *r, const struct train_state *s, bool force)
{
	const struct trainer *t = s->tr;
	size_t n = t->hist_n - r->next;
	if (!r->st || n == 0 ||
	    (!force && n < STORE_TRAIN_STEPS && now_ms() - r->last_ms < STORE_TRAIN_MS))
		return;
	struct store_train_step *steps = xcalloc(n, sizeof *steps);
	for (size_t i = 0; i < n; i++) {
		const float *row = t->hist + (r->next + i) * (size_t)t->hw;
		steps[i] = (struct store_train_step){
			.step = (int64_t)(r->next + i) + 1, .loss = row[0], .lr = row[1],
			.grad_norm = row[2], .val_loss = NAN, .layer_grad_norms = row + 3,
			.n_layers = s->m->cfg.n_layer,
		};
	}
	for (size_t i = t->val_n; i-- > 0;) { /* validations, newest first */
		size_t step = (size_t)t->val[2 * i];
		if (step <= r->next)
			break;
		if (step <= t->hist_n)
			steps[step - 1 - r->next].val_loss = t->val[2 * i + 1];
	}
	struct err e;
	if (store_training_steps(r->st, r->run_id, steps, (int)n, &e) != 0)
		rec_stop(r, &e);
	else
		r->next = t->hist_n;
	r->last_ms = now_ms();
	free(steps);
}

void store_train_on_step(void *ctx, const struct train_state *s)
{
	rec_flush(ctx, s, s->validated);
}

void store_train_on_end(void *ctx, const struct train_state *s, int status, double seconds,
			const char *message)
{
	struct store_train *r = ctx;
	const struct trainer *t = s->tr;
	if (r->run_id <= 0)
		return;
	rec_flush(r, s, true);
	struct err e;
	const char *st = status < 0 ? "failed" : status == 1 ? "interrupted" : "done";
	if (r->st && store_training_finish(r->st, r->run_id, st, t->step, (int64_t)t->tokens,
					   trainer_final_loss(t), trainer_last_val(t), seconds, message,
					   &e) != 0)
		rec_stop(r, &e);
}

struct train_hooks store_train_hooks(struct store_train *r)
{
	return (struct train_hooks){
		.ctx = r, .on_start = store_train_on_start, .on_step = store_train_on_step,
		.on_end = store_train_on_end,
	};
}
