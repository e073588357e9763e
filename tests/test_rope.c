/*
 * test_rope.c — RoPE frequency scaling (config.h enum rope_scaling).
 *
 * A tiny Llama-family model (d_head 16: 8 pairs, theta 10000) with Llama
 * 3.1's scaling over an original context of 32 (factor 8, low_freq 1,
 * high_freq 4), run over 48 tokens so that positions pass the original
 * context:
 *  - the three bands occur: by the published rule (turns of a pair over
 *    the original context, above 4 kept, below 1 divided by the factor,
 *    between blended) at least one pair of each, and the engine's table
 *    (config_rope_freqs) holds exactly f, f / 8 and a value strictly
 *    between for them;
 *  - model_forward's attention of every layer and head, its logits and its
 *    loss equal tests/ref_forward.c's double-precision pass (which applies
 *    the scaling from its own formula) within 1e-4 + 1e-4 |ref|, for llama3,
 *    linear and LongRoPE scaling (its long table: 48 positions past 32); the same model read without scaling is more than
 *    1e-2 away from the scaled reference, so the comparison sees the
 *    scaling;
 *  - the step decoder's next-token logits equal the full pass at every one
 *    of the 48 positions within 1e-4 + 1e-4 |ref|;
 *  - rerunning the blocks from row 40 (model_blocks_from, which turns each
 *    recomputed row by its own position) gives the whole pass's final
 *    stream for those rows within 1e-4 + 1e-4 |ref|, under llama3 and under
 *    LongRoPE (the rerun rows take the whole pass's long table);
 *  - a checkpoint keeps the scaling fields, and a config without them reads
 *    as no scaling; config_validate refuses out-of-range fields by name,
 *    LongRoPE's tables (a factor of 0 or NaN, more pairs than a table
 *    holds) and attention factor among them.
 */
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
#include "decode.h"
#include "model.h"
#include "ref_forward.h"

enum { V = 23, T = 48, ORIG = 32, D = 16, H = 4, L = 2 };

static struct model_config scaled_config(enum rope_scaling kind)
{
	struct model_config c;
	config_default(&c);
	c.vocab_size = V;
	c.d_model = H * D;
	c.n_layer = L;
	c.n_head = H;
	c.n_kv_head = 2;
	c.d_ff = 48;
	c.context = 64;
	c.norm = NORM_RMS;
	c.pos = POS_ROPE;
	c.mlp = MLP_SWIGLU;
	c.bias = false;
	c.tied = false;
	c.rope_scaling = kind;
	c.rope_factor = 8.0f;
	if (kind == ROPE_SCALE_LLAMA3) {
		c.rope_low_freq = 1.0f;
		c.rope_high_freq = 4.0f;
		c.rope_orig_context = ORIG;
	}
	if (kind == ROPE_SCALE_LONGROPE) { /* factors 1 + i / 4 within ORIG, 1 + 3i past it */
		c.rope_factor = 1.0f;
		c.rope_orig_context = ORIG;
		c.rope_attn_factor = 1.2f;
		for (int i = 0; i < D / 2; i++) {
			c.rope_short[i] = 1.0f + 0.25f * (float)i;
			c.rope_long[i] = 1.0f + 3.0f * (float)i;
		}
	}
	return c;
}

/* Weights N(0, 0.3^2), norm scales 1, the QKV weights larger so that the
 * attention is sharp and depends on the rotation angles. */
static struct model *scaled_model(enum rope_scaling kind, uint64_t seed)
{
	struct model_config c = scaled_config(kind);
	struct err e;
	struct model *m = model_new(&c, &e);
	if (!m)
		fail_msg("model_new: %s", e.msg);
	model_init_random(m, seed);
	struct rng r;
	rng_seed(&r, seed);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] = 0.8f * rng_normal(&r);
	return m;
}

static void make_tokens(int *tokens)
{
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 7 + 3) % V;
}

/* ---------------------------------------------------------------- bands */

static void test_bands(void **state)
{
	(void)state;
	struct model_config c = scaled_config(ROPE_SCALE_LLAMA3);
	float freq[D / 2];
	config_rope_freqs(&c, 1, freq);
	int kept = 0, divided = 0, blended = 0;
	for (int i = 0; i < D / 2; i++) {
		double f = pow(10000.0, -2.0 * i / D);
		double turns = ORIG * f / (2.0 * 3.14159265358979323846);
		double got = freq[i];
		if (turns > 4.0) {
			kept++;
			assert_true(fabs(got - f) <= 1e-6 * f);
		} else if (turns < 1.0) {
			divided++;
			assert_true(fabs(got - f / 8.0) <= 1e-6 * f);
		} else {
			blended++;
			assert_true(got > f / 8.0 * (1 + 1e-6) && got < f * (1 - 1e-6));
		}
		print_message("pair %d: turns %.4f freq %.6g -> %.6g\n", i, turns, f, got);
	}
	print_message("bands: kept %d, blended %d, divided %d\n", kept, blended, divided);
	assert_true(kept >= 1 && blended >= 1 && divided >= 1);
}

/* ------------------------------------------------------ against the ref */

/* Worst |a - ref| / (1e-4 + 1e-4 |ref|) over n values. */
static double worst_ratio(const float *a, const double *ref, size_t n)
{
	double w = 0.0;
	for (size_t i = 0; i < n; i++) {
		double q = fabs((double)a[i] - ref[i]) / (1e-4 + 1e-4 * fabs(ref[i]));
		w = q > w ? q : w;
	}
	return w;
}

/* The reference's mean next-token NLL from its logits. */
static double ref_loss(const double *logits, const int *tokens)
{
	double sum = 0.0;
	for (int t = 0; t + 1 < T; t++) {
		const double *z = logits + (size_t)t * V;
		double mx = z[0], s = 0.0;
		for (int j = 1; j < V; j++)
			mx = z[j] > mx ? z[j] : mx;
		for (int j = 0; j < V; j++)
			s += exp(z[j] - mx);
		sum += mx + log(s) - z[tokens[t + 1]];
	}
	return sum / (T - 1);
}

/* Compares the engine's pass over m with the reference of config ref_cfg
 * (m's weights); returns the worst ratio over attention and logits and
 * the loss difference in *dloss. */
static double engine_vs_ref(struct model *m, const struct model_config *ref_cfg, double *dloss)
{
	int tokens[T];
	make_tokens(tokens);
	struct run_options o;
	run_options_native(m, &o);
	struct err e;
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	if (model_forward(m, &o, tokens, NULL, 1, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	double *logits = malloc(sizeof(double) * T * V);
	double *att = malloc(sizeof(double) * L * H * T * T);
	assert_non_null(logits);
	assert_non_null(att);
	struct model_config saved = m->cfg;
	m->cfg = *ref_cfg;
	int rc = ref_forward(m, &o, tokens, T, logits, att, NULL);
	m->cfg = saved;
	assert_int_equal(rc, 0);
	double w = worst_ratio(run_logits(r), logits, (size_t)T * V);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			double q = worst_ratio(run_att(r, l, 0, h), att + ((size_t)l * H + h) * T * T,
					       (size_t)T * T);
			w = q > w ? q : w;
		}
	*dloss = fabs(r->loss - ref_loss(logits, tokens));
	free(logits);
	free(att);
	run_free(r);
	return w;
}

static void test_forward_matches_reference(void **state)
{
	(void)state;
	const enum rope_scaling kinds[] = { ROPE_SCALE_LLAMA3, ROPE_SCALE_LINEAR, ROPE_SCALE_NONE,
					    ROPE_SCALE_LONGROPE };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct model *m = scaled_model(kinds[k], 41 + k);
		double dloss, w = engine_vs_ref(m, &m->cfg, &dloss);
		print_message("%-6s worst attention/logit error %.3f of the tolerance, loss %.3g\n",
			      rope_scaling_name(kinds[k]), w, dloss);
		assert_true(w <= 1.0);
		assert_true(dloss <= 1e-4);
		model_free(m);
	}
	/* the engine without scaling, against the scaled reference: far off */
	struct model *m = scaled_model(ROPE_SCALE_LLAMA3, 41);
	struct model_config scaled = m->cfg;
	m->cfg.rope_scaling = ROPE_SCALE_NONE;
	double dloss, w = engine_vs_ref(m, &scaled, &dloss);
	print_message("unscaled engine vs llama3 reference: %.1f of the tolerance\n", w);
	assert_true(w > 100.0); /* > 1e-2 */
	model_free(m);
}

/* ----------------------------------------------------------- the decoder */

static void test_decoder_matches_forward(void **state)
{
	(void)state;
	const enum rope_scaling kinds[] = { ROPE_SCALE_LLAMA3, ROPE_SCALE_LINEAR };
	for (size_t k = 0; k < 2; k++) {
		struct model *m = scaled_model(kinds[k], 77 + k);
		int tokens[T];
		make_tokens(tokens);
		struct run_options o;
		run_options_native(m, &o);
		struct err e;
		struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
		if (model_forward(m, &o, tokens, NULL, 1, T, r, &e) != 0)
			fail_msg("model_forward: %s", e.msg);
		struct decoder *d = decoder_new(m, &o, 0, &e);
		if (!d)
			fail_msg("decoder_new: %s", e.msg);
		double worst = 0.0;
		for (int i = 0; i < T; i++) {
			if (decoder_step(d, m, tokens[i], &e) != 0)
				fail_msg("decoder_step: %s", e.msg);
			for (int j = 0; j < V; j++) {
				double a = d->logits[j], b = run_logits(r)[(size_t)i * V + j];
				double q = fabs(a - b) / (1e-4 + 1e-4 * fabs(b));
				worst = q > worst ? q : worst;
			}
		}
		print_message("%-6s decoder vs full pass: worst %.3f of the tolerance\n",
			      rope_scaling_name(kinds[k]), worst);
		assert_true(worst <= 1.0);
		decoder_free(d);
		run_free(r);
		model_free(m);
	}
}

/* ----------------------------------------------------- resuming by rows */

static void rows_resume(enum rope_scaling kind)
{
	enum { ROW0 = 40, C = H * D };
	struct model *m = scaled_model(kind, 91);
	int tokens[T];
	make_tokens(tokens);
	struct run_options o;
	run_options_native(m, &o);
	struct err e;
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_QKV);
	if (model_forward(m, &o, tokens, NULL, 1, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	assert_true(model_rows_resumable(r));
	float *want = malloc(sizeof(float) * T * C);
	assert_non_null(want);
	float *last = r->resid + (size_t)L * T * C;
	memcpy(want, last, sizeof(float) * T * C);
	if (model_blocks_from(m, r, 0, ROW0, &e) != 0)
		fail_msg("model_blocks_from: %s", e.msg);
	double worst = 0.0;
	for (size_t i = (size_t)ROW0 * C; i < (size_t)T * C; i++) {
		double q = fabs((double)last[i] - want[i]) / (1e-4 + 1e-4 * fabs((double)want[i]));
		worst = q > worst ? q : worst;
	}
	print_message("%s: rows %d..%d rerun: worst %.3f of the tolerance\n",
		      rope_scaling_name(kind), ROW0, T - 1, worst);
	assert_true(worst <= 1.0);
	free(want);
	run_free(r);
	model_free(m);
}

static void test_rows_resume(void **state)
{
	(void)state;
	rows_resume(ROPE_SCALE_LLAMA3);
	rows_resume(ROPE_SCALE_LONGROPE); /* the rerun rows keep the pass's long table */
}

/* ----------------------------------------------------------- checkpoints */

static void test_checkpoint_round_trip(void **state)
{
	(void)state;
	char path[] = "/tmp/attnscope-rope-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct model *m = scaled_model(ROPE_SCALE_LLAMA3, 5);
	m->cfg.rope_factor = 32.0f;
	m->cfg.rope_orig_context = 8192;
	struct err e;
	if (checkpoint_save(m, path, CKPT_F32, &e) != 0)
		fail_msg("checkpoint_save: %s", e.msg);
	struct model *b = checkpoint_load(path, &e);
	if (!b)
		fail_msg("checkpoint_load: %s", e.msg);
	assert_int_equal(b->cfg.rope_scaling, ROPE_SCALE_LLAMA3);
	assert_true(b->cfg.rope_factor == 32.0f && b->cfg.rope_low_freq == 1.0f &&
		    b->cfg.rope_high_freq == 4.0f);
	assert_int_equal(b->cfg.rope_orig_context, 8192);
	model_free(b);
	model_free(m);
	unlink(path);

	/* linear keeps its factor; none writes no scaling key at all */
	struct model_config c = scaled_config(ROPE_SCALE_LINEAR), back;
	char *json = checkpoint_config_json(&c);
	assert_int_equal(checkpoint_config_parse(json, &back, &e), 0);
	assert_int_equal(back.rope_scaling, ROPE_SCALE_LINEAR);
	assert_true(back.rope_factor == 8.0f);
	free(json);
	c = scaled_config(ROPE_SCALE_NONE);
	json = checkpoint_config_json(&c);
	assert_null(strstr(json, "rope_"  "factor"));
	assert_non_null(strstr(json, "rope_theta"));
	assert_int_equal(checkpoint_config_parse(json, &back, &e), 0);
	assert_int_equal(back.rope_scaling, ROPE_SCALE_NONE);
	free(json);

	/* a llama3 config missing one of its keys is refused by name */
	c = scaled_config(ROPE_SCALE_LLAMA3);
	json = checkpoint_config_json(&c);
	json_t *o = json_loads(json, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_object_del(o, "rope_high_freq"), 0);
	char *cut = json_dumps(o, JSON_COMPACT);
	assert_int_equal(checkpoint_config_parse(cut, &back, &e), -1);
	print_message("without rope_high_freq: %s\n", e.msg);
	assert_non_null(strstr(e.msg, "rope_high_freq"));
	free(cut);
	json_decref(o);
	free(json);
}

/* ------------------------------------------------------------ validation */

static void expect_invalid(struct model_config c, const char *word)
{
	struct err e = { "" };
	assert_int_equal(config_validate(&c, &e), -1);
	if (!strstr(e.msg, word))
		fail_msg("message \"%s\" does not name %s", e.msg, word);
}

static void test_validation(void **state)
{
	(void)state;
	struct err e;
	struct model_config c = scaled_config(ROPE_SCALE_LLAMA3);
	assert_int_equal(config_validate(&c, &e), 0);
	c.rope_factor = 0.5f;
	expect_invalid(c, "rope_factor");
	c = scaled_config(ROPE_SCALE_LLAMA3);
	c.rope_high_freq = c.rope_low_freq;
	expect_invalid(c, "rope_high_freq");
	c = scaled_config(ROPE_SCALE_LLAMA3);
	c.rope_low_freq = 0.0f;
	expect_invalid(c, "rope_low_freq");
	c = scaled_config(ROPE_SCALE_LLAMA3);
	c.rope_orig_context = 0;
	expect_invalid(c, "rope_orig_context");
	c = scaled_config(ROPE_SCALE_LINEAR);
	c.pos = POS_LEARNED;
	expect_invalid(c, "RoPE");
	c = scaled_config(ROPE_SCALE_LINEAR);
	c.rope_scaling = (enum rope_scaling)7;
	expect_invalid(c, "scaling");
	/* LongRoPE: tables of R/2 factors each, above 0 and finite, a
	 * positive attention factor, at most CFG_MAX_ROPE_PAIRS pairs */
	c = scaled_config(ROPE_SCALE_NONE);
	c.rope_scaling = ROPE_SCALE_LONGROPE;
	c.rope_orig_context = ORIG;
	c.rope_attn_factor = 1.2f;
	for (int i = 0; i < D / 2; i++)
		c.rope_short[i] = c.rope_long[i] = 1.5f;
	assert_int_equal(config_validate(&c, &e), 0);
	struct model_config bad = c;
	bad.rope_long[D / 2 - 1] = 0.0f;
	expect_invalid(bad, "rope_long[7]");
	bad = c;
	bad.rope_short[2] = NAN;
	expect_invalid(bad, "rope_short[2]");
	bad = c;
	bad.rope_attn_factor = INFINITY;
	expect_invalid(bad, "rope_attn_factor");
	bad = c;
	bad.rope_orig_context = 0;
	expect_invalid(bad, "rope_orig_context");
	bad = c;
	bad.head_dim = bad.rotary_dims = 2 * CFG_MAX_ROPE_PAIRS + 2;
	expect_invalid(bad, "factors per table");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bands),
		cmocka_unit_test(test_forward_matches_reference),
		cmocka_unit_test(test_decoder_matches_forward),
		cmocka_unit_test(test_rows_resume),
		cmocka_unit_test(test_checkpoint_round_trip),
		cmocka_unit_test(test_validation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
