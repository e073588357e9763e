/*
 * test_train.c — `attnscope train` through its internal entry point
 * train_run_args(), and the trainer library (trainer.h) step by step: the
 * loss falls, the F32 checkpoint holds the trained weights exactly, an
 * interrupted + resumed run equals an uninterrupted one bit for bit, bad
 * inputs fail with a message, the optimizer pieces (schedule, clipping,
 * decay mask) do what optim.h says, and models with Gemma 2's and OLMo-2's
 * engine switches train.
 *
 * Data: the first TEXT_BYTES of tinyshakespeare.txt from $CORPORA or
 * data/ (it ships with the program).  When neither exists the tests use a generated text
 * with a learnable pattern (a fixed cycle of words with a counter; see
 * generated_text) and print that they did.
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

#include <jansson.h>

#include "checkpoint.h"
#include "dataset.h"
#include "model.h"
#include "optim.h"
#include "train.h"
#include "trainer.h"
#include "util.h"

#define TEXT_BYTES 120000

static char tmpdir[64];
static char text_path[128];

/* Joins tmpdir and a file name into a static buffer (one of four). */
static const char *tmp(const char *name)
{
	static char bufs[4][192];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
	return b;
}

static void write_text(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(s, 1, n, f), n);
	fclose(f);
}

/* A learnable text: a cycle of words, each line numbered. */
static char *generated_text(size_t *n)
{
	static const char *words[] = { "the", "quick", "brown", "fox", "jumps", "over", "a",
				       "lazy", "dog", "and", "runs", "away" };
	size_t cap = TEXT_BYTES + 64, len = 0;
	char *s = xmalloc(cap);
	for (int i = 0; len < TEXT_BYTES; i++) {
		int k = snprintf(s + len, cap - len, "%s %s %d\n", words[i % 12], words[(i * 5) % 12],
				 i % 10);
		len += (size_t)k;
	}
	*n = len;
	return s;
}

static int setup(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/attnscope-train-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(text_path, sizeof text_path, "%s/text.txt", tmpdir);
	const char *env = getenv("CORPORA");
	char src[512];
	snprintf(src, sizeof src, "%s/tinyshakespeare.txt", env && *env ? env : "data");
	size_t n;
	char *s = read_file(src, &n, NULL);
	if (s) {
		if (n > TEXT_BYTES)
			n = TEXT_BYTES;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--; /* cut at a character boundary */
	} else {
		fprintf(stderr, "test_train: %s not found; using a generated text\n", src);
		s = generated_text(&n);
	}
	FILE *f = fopen(text_path, "wb");
	if (!f)
		return -1;
	fwrite(s, 1, n, f);
	fclose(f);
	free(s);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs `attnscope train` with a NULL-terminated list of arguments after
 * the common tiny-shape flags; returns the exit status. */
#define MAX_ARGS 64
static int train(struct err *e, ...)
{
	char *argv[MAX_ARGS];
	int argc = 0;
	static const char *common[] = { "train", "--layers", "2", "--heads", "2", "--d-model", "32",
					"--context", "32", "--batch", "8", "--val-batches", "2",
					"--threads", "1", "--quiet" };
	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
		argv[argc++] = (char *)common[i];
	va_list ap;
	va_start(ap, e);
	for (const char *a; (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	e->msg[0] = '\0';
	return train_run_args(argc, argv, e);
}

static json_t *training_record(const struct model *m)
{
	assert_non_null(m->train_meta);
	json_error_t jerr;
	json_t *j = json_loads(m->train_meta, 0, &jerr);
	assert_non_null(j);
	return j;
}

/* Property (a): 300 steps of a 2-layer, d_model 32 model cut the training
 * loss from about ln V at step 1 to at most 65% of it (the mean of the last
 * 10% of steps), and the validation loss to at most 70% of ln V.  With zero
 * gradients the loss stays near ln V (checked by temporarily zeroing the
 * gradients in train_step: the test then fails). */
static void test_loss_falls(void **state)
{
	struct err e;
	const char *out = tmp("a.safetensors");
	int rc = train(&e, "--data", text_path, "--out", out, "--steps", "300", "--warmup", "30",
		       "--lr", "3e-3", "--val-every", "100", NULL);
	assert_int_equal(rc, 0);
	struct model *m = checkpoint_load(out, &e);
	assert_non_null(m);
	json_t *j = training_record(m);
	double lnv = log((double)m->cfg.vocab_size);
	json_t *loss = json_object_get(json_object_get(j, "history"), "loss");
	double first = json_number_value(json_array_get(loss, 0));
	double final = json_number_value(json_object_get(j, "final_train_loss"));
	double val = json_number_value(json_object_get(j, "final_val_loss"));
	printf("    ln V %.3f, first loss %.3f, final train %.3f, final val %.3f\n", lnv, first,
	       final, val);
	assert_true(fabs(first - lnv) < 0.3 * lnv);
	assert_true(final <= 0.65 * first);
	assert_true(val <= 0.70 * lnv);
	assert_int_equal(json_integer_value(json_object_get(j, "steps_done")), 300);
	assert_int_equal(json_integer_value(json_object_get(j, "tokens_seen")), 300 * 8 * 32);
	json_decref(j);
	model_free(m);
}

/* Reads the exact F32 weights from FILE.optim (layout in train.h). */
static float *optim_weights(const char *path, size_t n_params)
{
	size_t len;
	unsigned char *b = (unsigned char *)read_file(path, &len, NULL);
	assert_non_null(b);
	size_t at = 8 + 4 + 4 + 10 * 8;
	assert_true(len > at);
	uint64_t jlen = 0, np = 0;
	for (int i = 0; i < 8; i++) {
		jlen |= (uint64_t)b[at - 8 + i] << (8 * i);
		np |= (uint64_t)b[16 + i] << (8 * i);
	}
	assert_int_equal(np, n_params);
	at += jlen;
	assert_true(len >= at + 4 * n_params);
	float *w = xmalloc(n_params * sizeof(float));
	memcpy(w, b + at, n_params * sizeof(float)); /* little-endian host */
	free(b);
	return w;
}

/* Property (b): the F32 checkpoint holds the trained weights exactly (equal
 * to the exact copy kept in FILE.optim), and a forward pass of the loaded
 * model gives bit-identical logits to a model built from those weights;
 * saving the loaded model again and reloading changes nothing either. */
static void test_checkpoint_exact(void **state)
{
	struct err e;
	const char *out = tmp("b.safetensors");
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--steps", "20",
			       "--keep-optim", NULL), 0);
	struct model *a = checkpoint_load(out, &e);
	assert_non_null(a);
	float *w = optim_weights(tmp("b.safetensors.optim"), a->n_params);
	assert_memory_equal(a->params, w, a->n_params * sizeof(float));

	struct model *ref = model_new(&a->cfg, &e);
	assert_non_null(ref);
	memcpy(ref->params, w, a->n_params * sizeof(float));
	const char *out2 = tmp("b2.safetensors");
	assert_int_equal(checkpoint_save(a, out2, CKPT_F32, &e), 0);
	struct model *b = checkpoint_load(out2, &e);
	assert_non_null(b);

	int B = 2, T = 32, tokens[64];
	for (int i = 0; i < B * T; i++)
		tokens[i] = (i * 7 + 3) % a->cfg.vocab_size;
	struct model *ms[3] = { ref, a, b };
	float *logits[3];
	size_t nl = (size_t)B * T * a->cfg.vocab_size;
	for (int k = 0; k < 3; k++) {
		struct run *r = run_new(&a->cfg, B, T, RUN_LOGITS);
		struct run_options o;
		run_options_native(ms[k], &o);
		assert_int_equal(model_forward(ms[k], &o, tokens, NULL, B, T, r, &e), 0);
		logits[k] = xmalloc(nl * sizeof(float));
		memcpy(logits[k], run_logits(r), nl * sizeof(float));
		run_free(r);
	}
	assert_memory_equal(logits[0], logits[1], nl * sizeof(float));
	assert_memory_equal(logits[0], logits[2], nl * sizeof(float));
	assert_string_equal(a->train_meta, b->train_meta);
	for (int k = 0; k < 3; k++) {
		free(logits[k]);
		model_free(ms[k]);
	}
	free(w);
}

static struct model *load(const char *path)
{
	struct err e;
	struct model *m = checkpoint_load(path, &e);
	if (!m)
		fail_msg("%s", e.msg);
	return m;
}

/* Trains N steps uninterrupted and in pieces (stopped after each of the
 * given session lengths, then resumed) with the given thread count, and
 * checks the final weights are identical. */
static void check_resume(const char *threads, const char *tag)
{
	struct err e;
	char a[192], b[256], bo[272];
	snprintf(a, sizeof a, "%s", tmp(tag));
	snprintf(b, sizeof b, "%s.pieces", a);
	snprintf(bo, sizeof bo, "%s.optim", b);
	const char *steps = "30";
	assert_int_equal(train(&e, "--data", text_path, "--out", a, "--steps", steps,
			       "--warmup", "5", "--val-every", "10", "--threads", threads, NULL), 0);
	assert_int_equal(train(&e, "--data", text_path, "--out", b, "--steps", steps,
			       "--warmup", "5", "--val-every", "10", "--threads", threads,
			       "--stop-after", "7", NULL), TRAIN_EXIT_INTERRUPTED);
	assert_int_equal(access(bo, F_OK), 0);
	/* a second interruption of the resumed run, then the rest */
	assert_int_equal(train(&e, "--resume", b, "--stop-after", "11", "--threads", threads, NULL),
			 TRAIN_EXIT_INTERRUPTED);
	assert_int_equal(train(&e, "--resume", b, "--threads", threads, NULL), 0);
	assert_int_equal(access(bo, F_OK), -1); /* consumed by the complete run */

	struct model *ma = load(a), *mb = load(b);
	assert_int_equal(ma->n_params, mb->n_params);
	assert_memory_equal(ma->params, mb->params, ma->n_params * sizeof(float));
	/* the records agree on the outcome and the history */
	json_t *ja = training_record(ma), *jb = training_record(mb);
	assert_true(json_equal(json_object_get(ja, "history"), json_object_get(jb, "history")));
	assert_true(json_equal(json_object_get(ja, "val"), json_object_get(jb, "val")));
	assert_true(json_equal(json_object_get(ja, "final_val_loss"),
			       json_object_get(jb, "final_val_loss")));
	assert_int_equal(json_array_size(json_object_get(jb, "resumed")), 2);
	json_decref(ja);
	json_decref(jb);
	model_free(ma);
	model_free(mb);
}

/* Property (c): a run stopped after 7 steps, resumed and stopped again
 * after 11 more, then resumed to the end has bit-identical final weights
 * (memcmp), history and validation losses to an uninterrupted 30-step run
 * with the same seed, with 1 thread and with 2. */
static void test_resume_identical(void **state)
{
	check_resume("1", "r1.safetensors");
	check_resume("2", "r2.safetensors");
}

/* Steps done according to a checkpoint's training record. */
static long steps_done(const char *path)
{
	struct model *m = load(path);
	json_t *j = training_record(m);
	long n = (long)json_integer_value(json_object_get(j, "steps_done"));
	json_decref(j);
	model_free(m);
	return n;
}

/* Property: stopping at once (a second Ctrl-C) drops the step in progress
 * and saves the ones before it, and the run resumes from there to the
 * same final weights, history and validation losses, bit for bit, as an
 * uninterrupted one; also when the first step of a session is dropped. */
static void test_stop_now_identical(void **state)
{
	struct err e;
	char a[192], b[256], bo[272];
	snprintf(a, sizeof a, "%s", tmp("n.safetensors"));
	snprintf(b, sizeof b, "%s.pieces", a);
	snprintf(bo, sizeof bo, "%s.optim", b);
	assert_int_equal(train(&e, "--data", text_path, "--out", a, "--steps", "20", "--warmup", "5",
			       "--val-every", "5", NULL), 0);
	assert_int_equal(train(&e, "--data", text_path, "--out", b, "--steps", "20", "--warmup", "5",
			       "--val-every", "5", "--stop-now-at", "8", NULL), TRAIN_EXIT_INTERRUPTED);
	assert_int_equal(steps_done(b), 7);
	assert_int_equal(access(bo, F_OK), 0);
	assert_int_equal(train(&e, "--resume", b, "--stop-now-at", "1", NULL), TRAIN_EXIT_INTERRUPTED);
	assert_int_equal(steps_done(b), 7);
	assert_int_equal(train(&e, "--resume", b, NULL), 0);

	struct model *ma = load(a), *mb = load(b);
	assert_memory_equal(ma->params, mb->params, ma->n_params * sizeof(float));
	json_t *ja = training_record(ma), *jb = training_record(mb);
	assert_true(json_equal(json_object_get(ja, "history"), json_object_get(jb, "history")));
	assert_true(json_equal(json_object_get(ja, "val"), json_object_get(jb, "val")));
	json_decref(ja);
	json_decref(jb);
	model_free(ma);
	model_free(mb);
}

/* Property (d): bad inputs fail before training with a one-line message
 * and the documented status, without crashing: what is wrong with the data
 * is status 1 (missing data file, empty, 1-byte or non-UTF-8 file, a
 * context longer than the data or its validation split), what is wrong
 * with the flags alone status 2 (heads not dividing d_model, repeated
 * spans that cannot fit the context, unknown flags, missing --out), and
 * --resume without state is status 1. */
static void test_bad_inputs(void **state)
{
	struct err e;
	const char *out = tmp("bad.safetensors");
	const char *empty = tmp("empty.txt"), *binary = tmp("binary.txt"), *small = tmp("small.txt");
	char one[192]; /* tmp() keeps four names at a time */
	snprintf(one, sizeof one, "%s/one.txt", tmpdir);
	write_text(empty, "", 0);
	write_text(one, "a", 1);
	write_text(binary, "abc\xff\xfe def", 9);
	write_text(small, "hello world, this is short\n", 27);

	assert_int_equal(train(&e, "--data", tmp("missing.txt"), "--out", out, NULL), 1);
	assert_non_null(strstr(e.msg, "missing.txt"));
	assert_int_equal(train(&e, "--data", empty, "--out", out, NULL), 1);
	assert_non_null(strstr(e.msg, "empty"));
	assert_int_equal(train(&e, "--data", one, "--out", out, NULL), 1);
	assert_non_null(strstr(e.msg, "has 1 tokens"));
	assert_int_equal(train(&e, "--data", binary, "--out", out, NULL), 1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--heads", "3", NULL), 2);
	assert_non_null(strstr(e.msg, "divisible"));
	assert_int_equal(train(&e, "--data", small, "--out", out, NULL), 1);
	assert_non_null(strstr(e.msg, "context"));
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--context", "20000", NULL), 1);
	assert_non_null(strstr(e.msg, "validation split"));
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--repeat", "0.5",
			       "--repeat-max", "20", NULL), 2);
	assert_non_null(strstr(e.msg, "--repeat-max 20"));
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--bogus", NULL), 2);
	assert_non_null(strstr(e.msg, "--bogus"));
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--lr", "abc", NULL), 2);
	assert_non_null(strstr(e.msg, "--lr"));
	assert_int_equal(train(&e, "--data", text_path, NULL), 2);
	assert_non_null(strstr(e.msg, "--out"));
	assert_int_equal(train(&e, "--resume", tmp("nothing.safetensors"), NULL), 1);
	assert_non_null(strstr(e.msg, "nothing.safetensors.optim"));
	assert_int_equal(train(&e, "--data", text_path, "--out", tmp("no/such/dir/x"), NULL), 1);
	assert_int_equal(access(out, F_OK), -1); /* nothing was written */
}

/* Property: a damaged FILE.optim (one flipped byte) is refused with a
 * message instead of resuming from garbage. */
static void test_damaged_state(void **state)
{
	struct err e;
	const char *out = tmp("d.safetensors");
	char opath[256];
	snprintf(opath, sizeof opath, "%s.optim", out);
	assert_int_equal(train(&e, "--data", text_path, "--out", out, "--steps", "10",
			       "--stop-after", "3", NULL), TRAIN_EXIT_INTERRUPTED);
	size_t len;
	char *b = read_file(opath, &len, &e);
	assert_non_null(b);
	b[len / 2] ^= 0x10;
	write_text(opath, b, len);
	free(b);
	assert_int_equal(train(&e, "--resume", out, NULL), 1);
	assert_non_null(strstr(e.msg, "checksum"));
}

/* Property: the schedule warms up linearly to the peak, ends at the
 * floor, and decreases in between; clipping scales to the clip norm only
 * above it; decay applies to matrices and embeddings only. */
static void test_optim_pieces(void **state)
{
	assert_float_equal(lr_schedule(0, 100, 10, 1.0f, 0.1f), 0.1f, 1e-6);
	assert_float_equal(lr_schedule(9, 100, 10, 1.0f, 0.1f), 1.0f, 1e-6);
	assert_float_equal(lr_schedule(10, 100, 10, 1.0f, 0.1f), 1.0f, 1e-6);
	assert_float_equal(lr_schedule(99, 100, 10, 1.0f, 0.1f), 0.1f, 1e-6);
	for (long s = 10; s < 99; s++)
		assert_true(lr_schedule(s + 1, 100, 10, 1.0f, 0.1f) <= lr_schedule(s, 100, 10, 1.0f, 0.1f));
	assert_float_equal(clip_scale(0.5, 1.0f), 1.0f, 0);
	assert_float_equal(clip_scale(4.0, 1.0f), 0.25f, 1e-7);
	assert_float_equal(clip_scale(4.0, 0.0f), 1.0f, 0);
	assert_true(optim_param_decays(P_WTE) && optim_param_decays(P_QKVW) &&
		    optim_param_decays(P_FCPROJW) && optim_param_decays(P_LMHEAD));
	assert_false(optim_param_decays(P_LN1W) || optim_param_decays(P_QKVB) ||
		     optim_param_decays(P_LNFB) || optim_param_decays(P_FCB));
}

/* The trainer as a library (trainer.h), driven step by step as the lab
 * drives it: the loss falls, two trainers with one seed end with the same
 * weights bit for bit, validation is recorded at its step, and a stop at
 * once drops the step in progress without changing anything. */
static void test_trainer_library(void **state)
{
	(void)state;
	struct dataset d;
	struct err e;
	assert_int_equal(dataset_load(&d, text_path, 1, 0.1, &e), 0);
	assert_int_equal(dataset_set_windows(&d, 32, false, 0, 1, 1, false, &e), 0);
	struct model_config c;
	config_default(&c);
	c.vocab_size = d.tok->vocab_size;
	c.n_layer = 2;
	c.d_model = 32;
	c.n_head = c.n_kv_head = 4;
	c.d_ff = 64;
	c.context = 32;
	struct model *a = model_new(&c, &e), *b = model_new(&c, &e);
	model_init_random(a, 7);
	model_init_random(b, 7);
	struct train_hparams hp;
	train_hparams_default(&hp, 60);
	hp.batch = 4;
	hp.warmup = 5;
	struct trainer ta, tb;
	trainer_init(&ta, a, &d, &hp);
	trainer_init(&tb, b, &d, &hp);
	for (int i = 0; i < 60; i++) {
		assert_int_equal(trainer_step(&ta, &e), 0);
		assert_int_equal(trainer_step(&tb, &e), 0);
	}
	assert_int_equal(ta.step, 60);
	assert_int_equal(ta.hist_n, 60);
	double first = ta.hist[HIST_LOSS], last = trainer_final_loss(&ta);
	print_message("trainer: loss %.3f at step 1, %.3f over the last 6 steps\n", first, last);
	assert_true(last < first - 0.5);
	assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));
	double val;
	assert_int_equal(trainer_validate(&ta, &val, &e), 0);
	assert_true(isfinite(val) && ta.val_n == 1 && ta.val[0] == 60.0f);
	/* a stop at once: the step is dropped, the weights and batches kept */
	volatile sig_atomic_t stop = 2;
	tb.stop = &stop;
	float *before = malloc(b->n_params * sizeof(float));
	memcpy(before, b->params, b->n_params * sizeof(float));
	uint64_t rng = tb.rng.state;
	assert_int_equal(trainer_step(&tb, &e), 1);
	assert_int_equal(tb.step, 60);
	assert_true(tb.rng.state == rng);
	assert_memory_equal(before, b->params, b->n_params * sizeof(float));
	free(before);
	trainer_release(&ta);
	trainer_release(&tb);
	model_free(a);
	model_free(b);
	dataset_free(&d);
}

/* The trainer on Gemma 2's and OLMo-2's engine switches, each a 2-layer
 * d_model 32 character model: Gemma 2's (RMSNorm, RoPE, GeGLU, GQA, tied,
 * the embedding scale sqrt(32), sandwich norms, soft-caps 5 and 10, layer
 * 0 local over 8 keys) and OLMo-2's (no norm before the sub-blocks, the
 * sandwich norms, the whole-width q/k norm, SwiGLU, untied): 60 steps of 4
 * windows take the loss down by 0.5 nats or more from step 1. */
static void test_trainer_switched(void **state)
{
	(void)state;
	struct dataset d;
	struct err e;
	assert_int_equal(dataset_load(&d, text_path, 1, 0.1, &e), 0);
	assert_int_equal(dataset_set_windows(&d, 32, false, 0, 1, 1, false, &e), 0);
	for (int olmo = 0; olmo < 2; olmo++) {
		struct model_config c;
		config_default(&c);
		c.vocab_size = d.tok->vocab_size;
		c.n_layer = 2;
		c.d_model = 32;
		c.n_head = 4;
		c.n_kv_head = 2;
		c.d_ff = 64;
		c.context = 32;
		c.norm = NORM_RMS;
		c.pos = POS_ROPE;
		c.bias = false;
		c.sandwich = true;
		if (olmo) {
			c.mlp = MLP_SWIGLU;
			c.tied = false;
			c.post_only = c.qk_norm = c.qk_norm_whole = true;
		} else {
			c.mlp = MLP_GEGLU;
			c.emb_scale = sqrtf(32.0f);
			c.attn_softcap = 5.0f;
			c.final_softcap = 10.0f;
			c.local_window = 8;
			cfg_set_local(&c, 0, true);
		}
		struct model *m = model_new(&c, &e);
		assert_non_null(m);
		model_init_random(m, 9);
		struct train_hparams hp;
		train_hparams_default(&hp, 60);
		hp.batch = 4;
		hp.warmup = 5;
		struct trainer t;
		trainer_init(&t, m, &d, &hp);
		for (int i = 0; i < 60; i++)
			if (trainer_step(&t, &e) != 0)
				fail_msg("%s step %d: %s", olmo ? "OLMo-2" : "Gemma 2", i + 1, e.msg);
		double first = t.hist[HIST_LOSS], last = trainer_final_loss(&t);
		print_message("%s's switches: loss %.3f at step 1, %.3f over the last 6 steps\n",
			      olmo ? "OLMo-2" : "Gemma 2", first, last);
		assert_true(last < first - 0.5);
		trainer_release(&t);
		model_free(m);
	}
	dataset_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_optim_pieces),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_loss_falls),
		cmocka_unit_test(test_trainer_library),
		cmocka_unit_test(test_trainer_switched),
		cmocka_unit_test(test_checkpoint_exact),
		cmocka_unit_test(test_resume_identical),
		cmocka_unit_test(test_stop_now_identical),
		cmocka_unit_test(test_damaged_state),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
