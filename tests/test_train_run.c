/*
 * test_train_run.c — train_run (train-run.h) called directly with hooks:
 * on_step sees every step once, on_validate every validation,
 * should_stop stops the run early with a resumable FILE.optim, and a run
 * resumed from it ends with the weights of an uninterrupted run, bit for
 * bit; a borrowed model and dataset train in place with no files; the
 * record written into the checkpoint reads back (train-record.h).
 *
 * Data: a generated text with a learnable pattern (no corpus needed).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "config.h"
#include "dataset.h"
#include "model.h"
#include "train-record.h"
#include "train-run.h"
#include "trainer.h"
#include "util.h"

#define STEPS 20
#define STOP_AT 7

static char tmpdir[64];
static char text_path[128];

static const char *tmp(const char *name)
{
	static char bufs[4][192];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
	return b;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/attnscope-trainrun-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(text_path, sizeof text_path, "%s/text.txt", tmpdir);
	static const char *words[] = { "the", "quick", "brown", "fox", "jumps", "over", "a", "dog" };
	FILE *f = fopen(text_path, "wb");
	if (!f)
		return -1;
	for (int i = 0; i < 3000; i++)
		fprintf(f, "%s %s %d\n", words[i % 8], words[(i * 3) % 8], i % 10);
	return fclose(f);
}

static int teardown(void **state)
{
	(void)state;
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A small run of STEPS steps on the text into out. */
static void spec_small(struct train_spec *s, const char *out)
{
	memset(s, 0, sizeof *s);
	config_default(&s->cfg);
	s->cfg.n_layer = 2;
	s->cfg.n_head = s->cfg.n_kv_head = 2;
	s->cfg.d_model = 32;
	s->cfg.d_ff = 128;
	s->cfg.context = 32;
	s->data = text_path;
	s->min_count = 1;
	s->val_fraction = 0.1;
	train_hparams_default(&s->hp, STEPS);
	s->hp.batch = 4;
	s->hp.warmup = 2;
	s->hp.val_batches = 2;
	s->val_every = 5;
	s->threads = 1;
	s->out = out;
	s->dtype = CKPT_F32;
}

/* The hooks' counts; stop_at > 0 stops once that many steps of the
 * session are done. */
struct counts {
	long steps, validations, starts, ends, last_step;
	long stop_at;
	int end_status;
};

static int count_start(void *ctx, const struct train_state *s, struct train_link *link,
		       struct err *e)
{
	(void)s, (void)link, (void)e;
	((struct counts *)ctx)->starts++;
	return 0;
}

static bool count_stop(void *ctx, const struct train_state *s)
{
	const struct counts *c = ctx;
	return c->stop_at > 0 && s->session >= c->stop_at;
}

static void count_validate(void *ctx, const struct train_state *s, double loss)
{
	(void)s;
	assert_true(isfinite(loss));
	((struct counts *)ctx)->validations++;
}

static void count_step(void *ctx, const struct train_state *s)
{
	struct counts *c = ctx;
	c->steps++;
	assert_int_equal(s->session, c->steps);
	assert_int_equal(s->tr->step, c->last_step + 1);
	c->last_step = s->tr->step;
}

static void count_end(void *ctx, const struct train_state *s, int status, double seconds,
		      const char *message)
{
	(void)s, (void)seconds, (void)message;
	struct counts *c = ctx;
	c->ends++;
	c->end_status = status;
}

static struct train_hooks hooks_for(struct counts *c)
{
	return (struct train_hooks){
		.ctx = c, .on_start = count_start, .should_stop = count_stop,
		.on_validate = count_validate, .on_step = count_step, .on_end = count_end,
	};
}

static struct model *load(const char *path)
{
	struct err e;
	struct model *m = checkpoint_load(path, &e);
	if (!m)
		fail_msg("%s", e.msg);
	return m;
}

static void test_hooks_stop_resume(void **state)
{
	(void)state;
	struct err e;
	struct train_spec s;
	struct train_outcome out;

	/* uninterrupted */
	struct counts full = { 0 };
	struct train_hooks h = hooks_for(&full);
	spec_small(&s, tmp("full.safetensors"));
	if (train_run(&s, &h, &out, &e) != 0)
		fail_msg("%s", e.msg);
	assert_int_equal(full.steps, STEPS);
	assert_int_equal(full.validations, STEPS / 5);
	assert_int_equal(full.starts, 1);
	assert_int_equal(full.ends, 1);
	assert_int_equal(full.end_status, 0);
	assert_int_equal(out.step, STEPS);
	assert_true(out.validated && isfinite(out.val_loss) && isfinite(out.final_loss));
	assert_int_equal(access(tmp("full.safetensors.optim"), F_OK), -1);

	/* stopped by should_stop after STOP_AT steps */
	struct counts first = { .stop_at = STOP_AT };
	h = hooks_for(&first);
	spec_small(&s, tmp("part.safetensors"));
	assert_int_equal(train_run(&s, &h, &out, &e), 1);
	assert_int_equal(first.steps, STOP_AT);
	assert_int_equal(first.end_status, 1);
	assert_int_equal(out.step, STOP_AT);

	/* resumed from the stored state: the remaining steps, same weights */
	struct train_saved saved;
	if (train_saved_read(tmp("part.safetensors.optim"), &saved, NULL, &e))
		fail_msg("%s", e.msg);
	struct counts rest = { .last_step = STOP_AT };
	h = hooks_for(&rest);
	s.resume = &saved;
	if (train_run(&s, &h, &out, &e) != 0)
		fail_msg("%s", e.msg);
	train_saved_free(&saved);
	assert_int_equal(rest.steps, STEPS - STOP_AT);
	assert_int_equal(out.step, STEPS);

	struct model *a = load(tmp("full.safetensors")), *b = load(tmp("part.safetensors"));
	assert_int_equal(a->n_params, b->n_params);
	assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));

	/* the record reads back with every step */
	struct train_record r;
	if (train_record_parse(b->train_meta, strlen(b->train_meta), &r, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(r.n, STEPS);
	assert_int_equal(r.steps_done, STEPS);
	assert_int_equal(r.n_layer, 2);
	assert_int_equal(r.n_val, STEPS / 5);
	train_record_free(&r);
	model_free(a);
	model_free(b);
}

/* A borrowed model and dataset train in place; the trainer is left to the
 * caller; nothing is written. */
static void test_borrowed(void **state)
{
	(void)state;
	struct err e;
	struct dataset d;
	if (dataset_load(&d, text_path, 1, 0.1, &e) || dataset_set_windows(&d, 32, false, 0, 1, 1,
									  false, &e))
		fail_msg("%s", e.msg);
	struct train_spec s;
	spec_small(&s, NULL);
	s.data = NULL;
	s.cfg.vocab_size = d.tok->vocab_size;
	struct model *m = model_new(&s.cfg, &e);
	assert_non_null(m);
	model_init_random(m, 1);
	s.model = m;
	s.dataset = &d;
	s.val_every = -1;
	struct trainer tr;
	s.trainer = &tr;
	struct counts c = { 0 };
	struct train_hooks h = hooks_for(&c);
	struct train_outcome out;
	if (train_run(&s, &h, &out, &e) != 0)
		fail_msg("%s", e.msg);
	assert_int_equal(c.steps, STEPS);
	assert_int_equal(c.validations, 0);
	assert_int_equal(tr.hist_n, STEPS);
	assert_ptr_equal(tr.m, m);
	trainer_release(&tr);
	model_free(m);
	dataset_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hooks_stop_resume),
		cmocka_unit_test(test_borrowed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
