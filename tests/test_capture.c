/*
 * test_capture.c — the attention and the logits a run makes on first read
 * (model.h, run.att_lazy and run.logits_lazy) against the ones a pass
 * writes as it goes.
 *   - every layer's weights are the same bits either way, read in any
 *     order, under each rule a pass's attention takes: learned positions
 *     and RoPE, GQA and the kv_heads option, causal / window / no mask /
 *     mask after softmax, unscaled scores, a soft-cap, q/k norms, a local
 *     layer, both pitfalls that change the attention (no-transpose,
 *     mask-one-head), and a batch of two with a padding mask; so are the
 *     logits, the NLL and the loss (the logits made LOGIT_ROWS rows at a
 *     time where the output layer is gemmw.h's, all at once elsewhere);
 *   - a lazy pass writes nothing into the capture: a sentinel there
 *     survives the pass, and reading one layer makes that layer only;
 *     nor into the logits (where gemmw.h is built): reading one row makes
 *     its LOGIT_ROWS rows only;
 *   - a pass resumed from a row (model_blocks_from) makes the weights of
 *     the rows it changed anew, equal to the eager run's (bit for bit with
 *     attnmm.h's products, whose elements do not depend on the first row);
 *   - run_att_each gives every head of a layer once, the same bits as
 *     run_att, whether the layer is made or not, and makes no layer;
 *   - the layers model_forward_from does not fill read as zeros.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnmm.h"
#include "gemmw.h"
#include "model.h"
#include "randmodel.h"
#include "util.h"

#define T_MAX 40 /* past one 32-key panel of attnmm.h */
#define VOCAB 23
#define N_LAYERS 3

static void tokens_of(int *ids, int n, int seed)
{
	for (int i = 0; i < n; i++)
		ids[i] = (i * 7 + seed * 3 + 1) % VOCAB;
}

/* The pass of o over B sequences of T tokens (key_len: a padding mask or
 * NULL) into a new run, its capture written as it goes (eager) or made on
 * read. */
static struct run *pass(struct model *m, const struct run_options *o, int B, int T,
			const int *key_len, bool eager, unsigned flags)
{
	int ids[2 * T_MAX];
	tokens_of(ids, B * T, 5);
	struct run *r = run_new(&m->cfg, B, T, flags);
	assert_true(r->att_lazy); /* RUN_ATTN without RUN_TRAIN */
	r->att_lazy = r->logits_lazy = !eager;
	r->key_len = key_len;
	struct err e = { "" };
	if (model_forward(m, o, ids, NULL, B, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	return r;
}

/* Every layer of a and b (read in reverse order in b) equal bit for bit,
 * and their logits. */
static void same_capture(const char *what, const struct run *a, const struct run *b)
{
	size_t tt = (size_t)a->t * a->t;
	for (int l = a->L - 1; l >= 0; l--)
		for (int s = 0; s < a->b; s++)
			for (int h = 0; h < a->H; h++)
				if (memcmp(run_att(b, l, s, h), run_att(a, l, s, h), tt * sizeof(float)))
					fail_msg("%s: layer %d sequence %d head %d made on read differs "
						 "from the pass's", what, l, s, h);
	size_t N = (size_t)a->b * a->t;
	if (a->logits && memcmp(run_logits(a), run_logits(b), N * a->V * sizeof(float)))
		fail_msg("%s: the logits differ", what);
	for (size_t i = 0; i < N; i++)
		if (memcmp(&a->nll[i], &b->nll[i], sizeof(float)))
			fail_msg("%s: the NLL of row %zu differs", what, i);
	if (memcmp(&a->loss, &b->loss, sizeof a->loss) || a->n_targets != b->n_targets)
		fail_msg("%s: the loss differs", what);
}

struct rule {
	const char *name;
	bool llama;
	int kv, T, B;
	void (*set)(struct model *m, struct run_options *o);
};

static void set_none(struct model *m, struct run_options *o) { (void)m; (void)o; }
static void set_window(struct model *m, struct run_options *o)
{
	(void)m;
	o->mask = MASK_WINDOW;
	o->window = 5;
}
static void set_no_mask(struct model *m, struct run_options *o) { (void)m; o->mask = MASK_NONE; }
static void set_after(struct model *m, struct run_options *o)
{
	(void)m;
	o->mask = MASK_AFTER_SOFTMAX;
}
static void set_unscaled(struct model *m, struct run_options *o) { (void)m; o->scale = false; }
static void set_softcap(struct model *m, struct run_options *o)
{
	(void)o;
	m->cfg.attn_softcap = 2.0f;
}
static void set_local(struct model *m, struct run_options *o)
{
	(void)o;
	m->cfg.local_window = 6;
	cfg_set_local(&m->cfg, 1, true);
}
static void set_mqa(struct model *m, struct run_options *o) { (void)m; o->kv_heads = 1; }
static void set_no_transpose(struct model *m, struct run_options *o)
{
	(void)m;
	o->pitfall = PITFALL_NO_TRANSPOSE;
}
static void set_one_head(struct model *m, struct run_options *o)
{
	(void)m;
	o->pitfall = PITFALL_MASK_ONE_HEAD;
}

static const struct rule rules[] = {
	{ "gpt-2, causal", false, 4, 16, 1, set_none },
	{ "llama GQA, causal", true, 2, T_MAX, 1, set_none },
	{ "window 5", true, 2, T_MAX, 1, set_window },
	{ "no mask", true, 2, T_MAX, 1, set_no_mask },
	{ "mask after softmax", true, 2, T_MAX, 1, set_after },
	{ "unscaled", false, 4, 16, 1, set_unscaled },
	{ "soft-cap 2", true, 4, T_MAX, 1, set_softcap },
	{ "local layer 1", true, 4, T_MAX, 1, set_local },
	{ "kv_heads 1", true, 2, T_MAX, 1, set_mqa },
	{ "no-transpose", true, 2, T_MAX, 1, set_no_transpose },
	{ "mask-one-head", true, 4, T_MAX, 1, set_one_head },
	{ "two sequences", true, 2, T_MAX, 2, set_none },
};

static struct model *model_for(const struct rule *x, uint64_t seed)
{
	struct model *m = randmodel_new(x->llama, N_LAYERS, x->kv, VOCAB, 3.0f, seed);
	if (x->llama)
		m->cfg.context = T_MAX; /* RoPE: any length; the fixture's context is 16 */
	return m;
}

static void test_made_on_read_equals_written(void **state)
{
	(void)state;
	static const int key_len[2] = { T_MAX, 23 };
	for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
		const struct rule *x = &rules[k];
		struct model *m = model_for(x, 40 + k);
		struct run_options o;
		run_options_native(m, &o);
		x->set(m, &o);
		const int *kl = x->B > 1 ? key_len : NULL;
		struct run *a = pass(m, &o, x->B, x->T, kl, true, RUN_LOGITS | RUN_ATTN);
		struct run *b = pass(m, &o, x->B, x->T, kl, false, RUN_LOGITS | RUN_ATTN);
		same_capture(x->name, a, b);
		run_free(a);
		run_free(b);
		model_free(m);
	}
	struct model *m = randmodel_qk_norm(randmodel_new(true, N_LAYERS, 2, VOCAB, 3.0f, 61), 62);
	m->cfg.context = T_MAX;
	struct run_options o;
	run_options_native(m, &o);
	struct run *a = pass(m, &o, 1, T_MAX, NULL, true, RUN_LOGITS | RUN_ATTN);
	struct run *b = pass(m, &o, 1, T_MAX, NULL, false, RUN_LOGITS | RUN_ATTN);
	same_capture("q/k norm", a, b);
	run_free(a);
	run_free(b);
	model_free(m);
}

/* Whether every float of layer l's capture in r holds the sentinel. */
static bool untouched(const struct run *r, int l, float sentinel)
{
	size_t n = (size_t)r->b * r->H * r->t * r->t;
	const float *p = r->att + (size_t)l * n;
	for (size_t i = 0; i < n; i++)
		if (p[i] != sentinel)
			return false;
	return true;
}

static void test_pass_writes_no_capture(void **state)
{
	(void)state;
	const float sentinel = -7.25f;
	struct model *m = randmodel_new(true, N_LAYERS, 2, VOCAB, 3.0f, 71);
	struct run_options o;
	run_options_native(m, &o);
	int ids[16];
	tokens_of(ids, 16, 2);
	struct run *r = run_new(&m->cfg, 1, 16, RUN_LOGITS | RUN_ATTN);
	size_t n = (size_t)N_LAYERS * r->H * 16 * 16;
	for (size_t i = 0; i < n; i++)
		r->att[i] = sentinel;
	struct err e = { "" };
	assert_int_equal(model_forward(m, &o, ids, NULL, 1, 16, r, &e), 0);
	for (int l = 0; l < N_LAYERS; l++)
		if (!untouched(r, l, sentinel))
			fail_msg("the pass wrote layer %d's capture, which nothing has read", l);
	(void)run_att(r, 1, 0, 2);
	assert_false(untouched(r, 1, sentinel));
	assert_true(untouched(r, 0, sentinel) && untouched(r, 2, sentinel));
	/* a second pass makes layer 1 anew on read: its first row is all
	 * on key 0 under the causal mask */
	r->att[(size_t)1 * r->H * 16 * 16] = sentinel;
	assert_int_equal(model_forward(m, &o, ids, NULL, 1, 16, r, &e), 0);
	assert_true(run_att(r, 1, 0, 0)[0] == 1.0f);
	run_free(r);
	model_free(m);
}

static void test_logits_made_by_rows(void **state)
{
	(void)state;
	enum { N = 2 * LOGIT_ROWS + 9 }; /* three chunks, the last short */
	const float sentinel = -3.5f;
	struct model *m = randmodel_new(true, 2, 2, VOCAB, 3.0f, 111);
	m->cfg.context = N;
	struct run_options o;
	run_options_native(m, &o);
	int ids[N];
	tokens_of(ids, N, 4);
	struct run *e = run_new(&m->cfg, 1, N, RUN_LOGITS);
	e->logits_lazy = false;
	struct run *r = run_new(&m->cfg, 1, N, RUN_LOGITS);
	for (size_t i = 0; i < (size_t)N * VOCAB; i++)
		r->logits[i] = sentinel;
	struct err er = { "" };
	assert_int_equal(model_forward(m, &o, ids, NULL, 1, N, e, &er), 0);
	assert_int_equal(model_forward(m, &o, ids, NULL, 1, N, r, &er), 0);
	assert_null(e->logits_of);
	if (!gemmw_available()) {
		print_message("gemmw.h is not built here: the logits are written by the pass\n");
		assert_null(r->logits_of);
	} else {
		assert_non_null(r->logits_of);
		for (size_t i = 0; i < (size_t)N * VOCAB; i++)
			if (r->logits[i] != sentinel)
				fail_msg("the pass wrote logit %zu, which nothing has read", i);
		const float *z = run_logits_row(r, LOGIT_ROWS + 3);
		assert_memory_equal(z, run_logits(e) + (size_t)(LOGIT_ROWS + 3) * VOCAB,
				    VOCAB * sizeof(float));
		assert_true(r->logits[0] == sentinel && r->logits[(size_t)(N - 1) * VOCAB] == sentinel);
		assert_true(r->logits[(size_t)LOGIT_ROWS * VOCAB] != sentinel);
		assert_true(r->logits[(size_t)(2 * LOGIT_ROWS - 1) * VOCAB] != sentinel);
	}
	assert_memory_equal(run_logits(r), run_logits(e), (size_t)N * VOCAB * sizeof(float));
	assert_memory_equal(r->nll, e->nll, (N - 1) * sizeof(float));
	assert_true(r->loss == e->loss);
	run_free(e);
	run_free(r);
	model_free(m);
}

static void test_resumed_rows(void **state)
{
	(void)state;
	struct model *m = model_for(&rules[1], 81);
	struct run_options o;
	run_options_native(m, &o);
	unsigned fl = RUN_LOGITS | RUN_ATTN | RUN_QKV;
	struct run *r[2] = { pass(m, &o, 1, T_MAX, NULL, true, fl),
			     pass(m, &o, 1, T_MAX, NULL, false, fl) };
	const int l0 = 1, row0 = 20;
	struct err e = { "" };
	for (int k = 0; k < 2; k++) {
		(void)run_att(r[k], 2, 0, 0); /* layer 2 made before the resume */
		float *x = r[k]->resid + (size_t)l0 * T_MAX * r[k]->C;
		for (int i = row0 * r[k]->C; i < T_MAX * r[k]->C; i++)
			x[i] += 0.5f * sinf((float)i);
		assert_true(model_rows_resumable(r[k]));
		if (model_blocks_from(m, r[k], l0, row0, &e) != 0)
			fail_msg("model_blocks_from: %s", e.msg);
	}
	size_t tt = (size_t)T_MAX * T_MAX;
	double worst = 0.0;
	for (int l = 0; l < N_LAYERS; l++)
		for (int h = 0; h < r[0]->H; h++) {
			const float *a = run_att(r[0], l, 0, h), *b = run_att(r[1], l, 0, h);
			for (size_t i = 0; i < tt; i++)
				worst = fmax(worst, fabs((double)a[i] - b[i]));
		}
	print_message("resumed at row %d of block %d: max |d| eager vs on read %.3g (%s)\n", row0,
		      l0, worst, attnmm_available() ? "attnmm: 0 expected" : "OpenBLAS: 1e-6");
	assert_true(attnmm_available() ? worst == 0.0 : worst <= 1e-6);
	/* the resume changed layer 2's weights: the first read after it shows so */
	const float *w = run_att(r[1], 2, 0, 0) + (size_t)(T_MAX - 1) * T_MAX;
	struct run *fresh = pass(m, &o, 1, T_MAX, NULL, true, fl);
	assert_true(memcmp(w, run_att(fresh, 2, 0, 0) + (size_t)(T_MAX - 1) * T_MAX,
			   T_MAX * sizeof(float)) != 0);
	run_free(fresh);
	run_free(r[0]);
	run_free(r[1]);
	model_free(m);
}

/* What run_att_each gave: each (b, h)'s weights and how often. */
struct given {
	float *att; /* (B, H, T, T) */
	int calls[2][8];
	int T, H;
};

static void give(void *ctx, int b, int h, const float *att)
{
	struct given *g = ctx;
	size_t tt = (size_t)g->T * g->T;
	memcpy(g->att + ((size_t)b * g->H + h) * tt, att, tt * sizeof *att);
	g->calls[b][h]++; /* each (b, h) on one thread: no other call writes it */
}

static void test_each_head(void **state)
{
	(void)state;
	static const int key_len[2] = { T_MAX, 23 };
	const struct rule *x = &rules[11]; /* two sequences, GQA */
	struct model *m = model_for(x, 101);
	struct run_options o;
	run_options_native(m, &o);
	struct run *a = pass(m, &o, 2, T_MAX, key_len, true, RUN_LOGITS | RUN_ATTN);
	struct run *b = pass(m, &o, 2, T_MAX, key_len, false, RUN_LOGITS | RUN_ATTN);
	size_t tt = (size_t)T_MAX * T_MAX;
	struct given g = { xcalloc(2 * (size_t)b->H * tt, sizeof(float)), { { 0 } }, T_MAX, b->H };
	for (int made = 0; made < 2; made++)
		for (int l = 0; l < N_LAYERS; l++) {
			memset(g.calls, 0, sizeof g.calls);
			run_att_each(b, l, give, &g);
			assert_int_equal(b->att_made[l], made); /* made only by run_att below */
			for (int s = 0; s < 2; s++)
				for (int h = 0; h < b->H; h++) {
					assert_int_equal(g.calls[s][h], 1);
					assert_memory_equal(g.att + ((size_t)s * b->H + h) * tt,
							    run_att(a, l, s, h), tt * sizeof(float));
				}
			if (!made)
				(void)run_att(b, l, 0, 0);
		}
	free(g.att);
	run_free(a);
	run_free(b);
	model_free(m);
}

static void test_unfilled_layers_read_zero(void **state)
{
	(void)state;
	struct model *m = model_for(&rules[1], 91);
	struct run_options o;
	run_options_native(m, &o);
	int ids[T_MAX];
	tokens_of(ids, T_MAX, 5);
	struct run *from = pass(m, &o, 1, T_MAX, NULL, false, RUN_LOGITS | RUN_ATTN);
	struct run *r = pass(m, &o, 1, T_MAX, NULL, false, RUN_LOGITS | RUN_ATTN);
	struct err e = { "" };
	assert_int_equal(model_forward_from(m, &o, ids, NULL, from, 2, r, &e), 0);
	for (int h = 0; h < r->H; h++)
		for (int i = 0; i < T_MAX * T_MAX; i++)
			assert_true(run_att(r, 0, 0, h)[i] == 0.0f && run_att(r, 1, 0, h)[i] == 0.0f);
	assert_memory_equal(run_att(r, 2, 0, 1), run_att(from, 2, 0, 1), T_MAX * T_MAX * sizeof(float));
	run_free(from);
	run_free(r);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_made_on_read_equals_written),
		cmocka_unit_test(test_pass_writes_no_capture),
		cmocka_unit_test(test_logits_made_by_rows),
		cmocka_unit_test(test_resumed_rows),
		cmocka_unit_test(test_each_head),
		cmocka_unit_test(test_unfilled_layers_read_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
