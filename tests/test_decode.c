/*
 * test_decode.c — the step decoder and the sampler.
 *
 *  - decoder_step, token by token, gives the next-token logits of
 *    model_forward over the whole sequence at every position, within
 *    1e-4 + 1e-4 |ref|, for seeded random models of both families
 *    (LayerNorm / learned / GELU / biases / tied; RMSNorm / RoPE / SwiGLU /
 *    no biases / untied / native GQA) under the run options that change
 *    the computation: pre and post placement, K/V sharing down and up, a
 *    window, scaling off and an ablated head.  `mask none` decodes as the
 *    causal pass does (a step cannot see tokens that do not exist yet).
 *  - LongRoPE (decode.h's rule): stepped, or prefilled within or past the
 *    original context then stepped, the decoder gives the reference of
 *    those calls (ref_forward_stepped) at every position; within the
 *    original context it ends where the full pass does, and stepped across
 *    it parts from the full pass, whose keys all take the long table.
 *  - decoder_reset starts over with the same numbers; a full cache and a
 *    token outside the vocabulary are refused; the cache size is
 *    2 * L * G * cap * D floats, G being the K/V heads computed with.
 *  - intervention hooks: patching the residual stream after block l with
 *    another text's (HOOK_RESID) gives that text's logits exactly, as
 *    nothing after block l reads anything else; zeroing a head at
 *    HOOK_HEADS equals ablating it in the run options, bit for bit; the
 *    decoder calls the same hook at the same sites with the step's
 *    position, and gives the hooked full pass's logits.
 *  - a run kept while stepping (decoder_keep / decoder_kept) holds what
 *    model_forward's pass over the same tokens holds (logits, NLL,
 *    attention, norms, residual stream, final norm), the prompt's rows
 *    given in place or copied, for both families and the models of
 *    check_usual (head widths apart from d_model, Qwen3's q/k norm, Gemma 2
 *    and 3, OLMo-2); mask none and tokens not stepped are refused.
 *  - a prefill from a pass already made (decoder_prefill_from) caches
 *    the keys and values and gives the logits decoder_prefill does, and
 *    the same steps after; a pass under other options is refused.
 *  - sampler: temperature 0 and top_k 1 give the most likely token, ties
 *    to the smaller id; an excluded id is never drawn; a seed reproduces
 *    a sequence; with temperature 1 draws follow the softmax (70,000 draws
 *    of probabilities 1/7, 2/7, 4/7 land within 0.01 of each), and top_k 2
 *    never draws the third.
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

#include "decode.h"
#include "model.h"
#include "randmodel.h"
#include "ref_forward.h"
#include "sampler.h"

enum { V = 19, T = 12 };


/* Worst |decoder - forward| over every position and logit, relative to
 * 1e-4 + 1e-4 |ref|; fails the test above 1. */
static double compare(struct model *m, const struct run_options *o, const struct run_options *ref)
{
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 7 + 3) % V;
	struct err e;
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
	if (model_forward(m, ref, tokens, NULL, 1, T, r, &e) != 0)
		fail_msg("model_forward: %s", e.msg);
	struct decoder *d = decoder_new(m, o, 0, &e);
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
	decoder_free(d);
	run_free(r);
	return worst;
}

static void test_decoder_matches_forward(void **state)
{
	(void)state;
	for (int llama = 0; llama <= 1; llama++) {
		int K = llama ? 2 : 4;
		struct model *m = randmodel_new(llama, 2, K, V, 8.0f, 7 + llama);
		struct run_options native;
		run_options_native(m, &native);
		struct run_options cases[8];
		const char *names[8];
		int n = 0;
		cases[n] = native, names[n++] = "native";
		cases[n] = native, cases[n].placement = PLACE_POST, names[n++] = "post-norm";
		cases[n] = native, cases[n].kv_heads = 1, names[n++] = "mqa";
		cases[n] = native, cases[n].kv_heads = llama ? 4 : 2, names[n++] = "kv up / gqa 2";
		cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n].window = 3, names[n++] = "window 3";
		cases[n] = native, cases[n].scale = false, names[n++] = "scale off";
		cases[n] = native, opt_set_ablated(&cases[n], 1 * 4 + 2, true), names[n++] = "ablate 1.2";
		for (int i = 0; i < n; i++) {
			double w = compare(m, &cases[i], &cases[i]);
			print_message("%s %-14s worst %.3f of tolerance\n", llama ? "llama" : "gpt2 ", names[i], w);
			assert_true(w <= 1.0);
		}
		/* mask none: a step sees only what exists, as the causal pass does */
		struct run_options none = native;
		none.mask = MASK_NONE;
		assert_true(compare(m, &none, &native) <= 1.0);
		model_free(m);
	}
}

/* Blocks without residual connections or without an MLP decode as the
 * full pass computes them, under both placements; an after-softmax model
 * decodes as its causal pass (a step has no future keys to normalise over). */
static void test_decoder_lab_architectures(void **state)
{
	(void)state;
	for (int sw = 1; sw < 4; sw++)
		for (int llama = 0; llama <= 1; llama++) {
			struct model *base = randmodel_new(llama, 2, 2, V, 8.0f, 20 + sw);
			struct model_config c = base->cfg;
			model_free(base);
			c.residual = !(sw & 1);
			if (sw & 2)
				c.d_ff = 0;
			struct err e;
			struct model *m = model_new(&c, &e);
			if (!m)
				fail_msg("model_new: %s", e.msg);
			model_init_random(m, 30 + sw);
			for (size_t i = 0; i < m->psize[P_QKVW]; i++)
				m->p[P_QKVW][i] *= 8.0f;
			struct run_options o;
			run_options_native(m, &o);
			for (int pl = 0; pl < 2; pl++) {
				o.placement = pl ? PLACE_POST : PLACE_PRE;
				double w = compare(m, &o, &o);
				print_message("%s residual %d mlp %d %s: worst %.3f of tolerance\n",
					      llama ? "llama" : "gpt2 ", c.residual, c.d_ff > 0,
					      norm_place_name(o.placement), w);
				assert_true(w <= 1.0);
			}
			struct run_options after = o;
			after.mask = MASK_AFTER_SOFTMAX;
			assert_true(compare(m, &after, &o) <= 1.0);
			model_free(m);
		}
}

static double kept_vs_pass(struct model *m, const struct run_options *o, int P, bool in_place);
static double prefill_from_vs_prefill(struct model *m, const struct run_options *o, int P);

/* The cases every family's decoder test runs: native, post-norm (when
 * post), K/V heads kv_a and kv_b (each when > 0), a window of 3, head 1.2
 * ablated; each decoded as the full pass computes it, within tolerance,
 * and so are a run kept while stepping and a prefill from a pass
 * (decoder_keep, decoder_prefill_from). */
static void check_usual(struct model *m, bool post, int kv_a, int kv_b, const char *label)
{
	struct run_options native, cases[6];
	run_options_native(m, &native);
	int n = 0;
	cases[n++] = native;
	if (post)
		cases[n] = native, cases[n++].placement = PLACE_POST;
	if (kv_a > 0)
		cases[n] = native, cases[n++].kv_heads = kv_a;
	if (kv_b > 0)
		cases[n] = native, cases[n++].kv_heads = kv_b;
	cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 3;
	cases[n] = native, opt_set_ablated(&cases[n++], 1 * m->cfg.n_head + 2, true);
	for (int i = 0; i < n; i++) {
		double w = compare(m, &cases[i], &cases[i]);
		print_message("%s case %d: worst %.3f of tolerance\n", label, i, w);
		assert_true(w <= 1.0);
		assert_true(kept_vs_pass(m, &cases[i], 5, true) <= 1.0);
		assert_true(prefill_from_vs_prefill(m, &cases[i], 6) <= 1.0);
	}
}

/* head_dim apart from d_model / n_head (4 heads of 16 or of 4 over
 * d_model 32: heads' width 64 or 16), and heads of 16 with Qwen3's q/k
 * norm (scales away from 1), decode as the full pass computes them:
 * native, post-norm, MQA, GQA up, a window and an ablation, with RoPE
 * (llama) and learned positions (gpt2). */
static void test_decoder_head_dim(void **state)
{
	(void)state;
	static const int dims[3] = { 16, 4, 16 };
	for (int di = 0; di < 3; di++)
		for (int llama = 0; llama <= 1; llama++) {
			struct model *base = randmodel_new(llama, 2, 2, V, 8.0f, 40 + di);
			struct model_config c = base->cfg;
			model_free(base);
			c.head_dim = dims[di];
			c.qk_norm = di == 2;
			assert_true(cfg_attn_width(&c) != c.d_model);
			struct err e;
			struct model *m = model_new(&c, &e);
			if (!m)
				fail_msg("model_new: %s", e.msg);
			model_init_random(m, 50 + di);
			for (size_t i = 0; i < m->psize[P_QKVW]; i++)
				m->p[P_QKVW][i] *= 8.0f;
			struct rng g;
			rng_seed(&g, 60 + di);
			for (size_t i = 0; i < m->psize[P_QNORMW]; i++) {
				m->p[P_QNORMW][i] = 1.0f + 0.5f * rng_normal(&g);
				m->p[P_KNORMW][i] = 1.0f + 0.5f * rng_normal(&g);
			}
			char label[64];
			snprintf(label, sizeof label, "%s head_dim %d%s", llama ? "llama" : "gpt2 ",
				 c.head_dim, c.qk_norm ? " q/k norm" : "");
			check_usual(m, true, 1, 4, label);
			model_free(m);
		}
}

/* Gemma 2's switches decode as the full pass computes them: sqrt(C)
 * embeddings, sandwich norms (scales away from 1), GeGLU, scores and
 * logits soft-capped, the scale of a query_pre_attn_scalar of 12, layer 0
 * local over 4 keys (the text is 12), and as Gemma 3 (the q/k norm, the
 * local layer on RoPE base 10000, the global on 100 scaled by 4);
 * native, post-norm, MQA, a window, an ablation. */
static void test_decoder_gemma(void **state)
{
	(void)state;
	for (int qk = 0; qk <= 1; qk++) {
		struct model *base = randmodel_new(true, 2, 2, V, 8.0f, 70 + qk);
		struct model_config c = base->cfg;
		c.emb_scale = sqrtf((float)c.d_model);
		c.sandwich = true;
		c.attn_softcap = 3.0f;
		c.final_softcap = 2.0f;
		c.attn_scale_dim = 12;
		c.mlp = MLP_GEGLU;
		c.local_window = 4;
		cfg_set_local(&c, 0, true);
		c.qk_norm = qk;
		if (qk) { /* Gemma 3: the local layer on a RoPE base of its own, the global scaled */
			c.rope_theta = 100.0f;
			c.rope_scaling = ROPE_SCALE_LINEAR;
			c.rope_factor = 4.0f;
			c.rope_local_theta = 10000.0f;
		}
		struct model *m = randmodel_rebuild(base, &c, 90 + qk); /* the new scales 1 + 0.3 N */
		check_usual(m, true, 1, 0, qk ? "gemma 3" : "gemma 2");
		model_free(m);
	}
}

/* OLMo-2's blocks decode as the full pass computes them: no norm before
 * the sub-blocks, the sandwich norms after them, the whole-width q and k
 * norms (scales away from 1); native GQA, GQA up to MHA, a window, an
 * ablation. */
static void test_decoder_olmo2(void **state)
{
	(void)state;
	struct model *base = randmodel_new(true, 2, 2, V, 8.0f, 75);
	struct model_config c = base->cfg;
	c.sandwich = c.post_only = c.qk_norm = c.qk_norm_whole = true;
	struct model *m = randmodel_rebuild(base, &c, 76);
	check_usual(m, false, 4, 0, "olmo2");
	model_free(m);
}

/* GPT-NeoX's blocks decode as the full pass computes them: parallel
 * residual, RoPE over 4 of each head's 8 dims, exact GELU, with and without
 * each, under the run options that change the computation (post-norm runs
 * the sequential block in both). */
static void test_decoder_neox(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		struct model *base = randmodel_new(false, 2, 2, V, 8.0f, 40 + k);
		struct model_config c = base->cfg;
		model_free(base);
		c.pos = POS_ROPE;
		c.parallel = k != 1;
		c.rotary_dims = k != 2 ? 4 : 0;
		c.mlp = k != 3 ? MLP_GELU_EXACT : MLP_GELU;
		c.tied = k % 2;
		struct err e;
		struct model *m = model_new(&c, &e);
		if (!m)
			fail_msg("model_new: %s", e.msg);
		model_init_random(m, 50 + k);
		for (size_t i = 0; i < m->psize[P_QKVW]; i++)
			m->p[P_QKVW][i] *= 8.0f;
		for (size_t i = 0; i < m->psize[P_FCW]; i++) /* pre-activations away from 0 */
			m->p[P_FCW][i] *= 20.0f;
		struct run_options native, cases[5];
		run_options_native(m, &native);
		int n = 0;
		cases[n++] = native;
		cases[n] = native, cases[n++].placement = PLACE_POST;
		cases[n] = native, cases[n++].kv_heads = 1;
		cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 3;
		cases[n] = native, opt_set_ablated(&cases[n++], 1 * 4 + 2, true);
		for (int i = 0; i < n; i++) {
			double w = compare(m, &cases[i], &cases[i]);
			print_message("neox parallel %d rotary %d mlp %s case %d: worst %.3f of tolerance\n",
				      c.parallel, cfg_rotary_dims(&c), mlp_type_name(c.mlp), i, w);
			assert_true(w <= 1.0);
		}
		model_free(m);
	}
}

/* GPT-Neo's local layers decode as the full pass computes them: a local
 * layer reads only its last 4 keys of the 12-token cache, under run
 * options that change the computation; and the window matters (the same
 * weights with every layer global decode differently). */
static void test_decoder_neo(void **state)
{
	(void)state;
	for (int k = 0; k < 2; k++) {
		struct model *base = randmodel_new(false, 2, 4, V, 8.0f, 60 + k);
		struct model_config c = base->cfg;
		model_free(base);
		c.local_window = 4;
		cfg_set_local(&c, k, true); /* layer 0 or layer 1 local */
		c.scale = false;
		struct err e;
		struct model *m = model_new(&c, &e);
		if (!m)
			fail_msg("model_new: %s", e.msg);
		model_init_random(m, 70 + k);
		for (size_t i = 0; i < m->psize[P_QKVW]; i++)
			m->p[P_QKVW][i] *= 8.0f;
		struct run_options native, cases[7];
		run_options_native(m, &native);
		int n = 0;
		cases[n++] = native;
		cases[n] = native, cases[n++].placement = PLACE_POST;
		cases[n] = native, cases[n++].kv_heads = 2;
		cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 2;
		cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 6;
		cases[n] = native, cases[n++].scale = true;
		cases[n] = native, opt_set_ablated(&cases[n++], 1 * 4 + 2, true);
		for (int i = 0; i < n; i++) {
			double w = compare(m, &cases[i], &cases[i]);
			print_message("neo local layer %d case %d: worst %.3f of tolerance\n", k, i, w);
			assert_true(w <= 1.0);
		}
		struct run_options none = native;
		none.mask = MASK_NONE;
		assert_true(compare(m, &none, &native) <= 1.0);
		/* the same weights, every layer global: not what the decoder gave */
		struct model *g = model_new(&c, &e);
		if (!g)
			fail_msg("model_new: %s", e.msg);
		memcpy(g->params, m->params, m->n_params * sizeof(float));
		g->cfg.local_window = 0;
		memset(g->cfg.local, 0, sizeof g->cfg.local);
		double apart = 0.0;
		{
			int tokens[T];
			for (int i = 0; i < T; i++)
				tokens[i] = (i * 7 + 3) % V;
			struct run *r = run_new(&g->cfg, 1, T, RUN_LOGITS);
			struct decoder *d = decoder_new(m, &native, 0, &e);
			assert_non_null(d);
			assert_int_equal(model_forward(g, &native, tokens, NULL, 1, T, r, &e), 0);
			for (int i = 0; i < T; i++) {
				assert_int_equal(decoder_step(d, m, tokens[i], &e), 0);
				for (int j = 0; j < V; j++) {
					double q = fabs(d->logits[j] - run_logits(r)[(size_t)i * V + j]);
					apart = q > apart ? q : apart;
				}
			}
			decoder_free(d);
			run_free(r);
		}
		print_message("neo local layer %d: all-global logits differ by up to %.3g\n", k, apart);
		assert_true(apart > 1e-2);
		model_free(g);
		model_free(m);
	}
}

static void test_decoder_reset_and_limits(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 2, 4, V, 8.0f, 3);
	struct run_options o;
	run_options_native(m, &o);
	o.kv_heads = 2;
	struct err e;
	struct decoder *d = decoder_new(m, &o, 5, &e);
	assert_non_null(d);
	assert_int_equal(d->G, 2);
	assert_int_equal(decoder_cache_bytes(d), 2 * 2 * 2 * 5 * 8 * sizeof(float));
	float first[V];
	for (int i = 0; i < 5; i++)
		assert_int_equal(decoder_step(d, m, i, &e), 0);
	memcpy(first, d->logits, sizeof first);
	assert_int_equal(decoder_step(d, m, 1, &e), -1);
	assert_non_null(strstr(e.msg, "full"));
	decoder_reset(d);
	for (int i = 0; i < 5; i++)
		assert_int_equal(decoder_step(d, m, i, &e), 0);
	assert_memory_equal(first, d->logits, sizeof first);
	decoder_reset(d);
	assert_int_equal(decoder_step(d, m, V, &e), -1);
	assert_int_equal(decoder_step(d, m, -1, &e), -1);
	decoder_free(d);
	decoder_free(NULL);

	/* going up by a whole factor computes with the native heads */
	o.kv_heads = 4;
	struct model *g = randmodel_new(true, 2, 2, V, 8.0f, 4);
	d = decoder_new(g, &o, 0, &e);
	assert_non_null(d);
	assert_int_equal(d->G, 2);
	assert_int_equal(d->cap, g->cfg.context);
	decoder_free(d);
	o.kv_heads = 3; /* does not divide 4 heads */
	assert_null(decoder_new(g, &o, 0, &e));
	model_free(g);
	model_free(m);
}

/* The decoder's logits at positions P-1 .. T-1 after a prefill of P tokens
 * (P = 1: every position stepped) against the reference of the same calls
 * (ref_forward_stepped): the worst |d - ref| / (1e-4 + 1e-4 |ref|). */
static double stepped_vs_ref(struct model *m, const struct run_options *o, const int *tokens,
			     int P)
{
	struct err e;
	double *ref = malloc(sizeof(double) * T * V);
	assert_non_null(ref);
	assert_int_equal(ref_forward_stepped(m, o, tokens, T, P, ref, NULL), 0);
	struct decoder *d = decoder_new(m, o, 0, &e);
	assert_non_null(d);
	assert_int_equal(decoder_prefill(d, m, tokens, P, &e), 0);
	double worst = 0.0;
	for (int i = P - 1; i < T; i++) {
		if (i >= P)
			assert_int_equal(decoder_step(d, m, tokens[i], &e), 0);
		for (int j = 0; j < V; j++) {
			double b = ref[(size_t)i * V + j];
			worst = fmax(worst, fabs(d->logits[j] - b) / (1e-4 + 1e-4 * fabs(b)));
		}
	}
	decoder_free(d);
	free(ref);
	return worst;
}

/* The worst ratio between the last logits of a full pass over the first n
 * tokens and of a decoder stepped through them. */
static double step_vs_pass(struct model *m, const struct run_options *o, const int *tokens, int n)
{
	struct err e;
	struct run *r = run_new(&m->cfg, 1, n, RUN_LOGITS);
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, n, r, &e), 0);
	struct decoder *d = decoder_new(m, o, 0, &e);
	assert_non_null(d);
	for (int k = 0; k < n; k++)
		assert_int_equal(decoder_step(d, m, tokens[k], &e), 0);
	double worst = 0.0;
	for (int j = 0; j < V; j++) {
		double b = run_logits(r)[(size_t)(n - 1) * V + j];
		worst = fmax(worst, fabs(d->logits[j] - b) / (1e-4 + 1e-4 * fabs(b)));
	}
	decoder_free(d);
	run_free(r);
	return worst;
}

/* Phi-3's LongRoPE over an original context of 6 (the text is 12), RoPE
 * over all of each head or half of it, decodes by decode.h's rule: each
 * call turns its queries and keys by the table of the positions it spans,
 * the cached keys keep theirs.  Stepped from the start, and prefilled with
 * 4 (within the original context) or 9 tokens (past it) then stepped, the
 * logits at every position equal the reference of those calls (with the
 * 9-token prefill, that of one full pass).  A decoder stepped through the
 * 6 tokens of the original context ends where the full pass over them
 * does; stepped through all 12 it parts from the full pass over 12 (whose
 * keys all take the long table), as transformers' generate does.  Native,
 * MQA, post-norm and a window of 3. */
static void test_decoder_longrope(void **state)
{
	(void)state;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 7 + 3) % V;
	for (int partial = 0; partial <= 1; partial++) {
		struct model *base = randmodel_new(true, 2, 2, V, 8.0f, 80 + partial);
		struct model_config c = base->cfg;
		c.rotary_dims = partial ? cfg_d_head(&c) / 2 : 0;
		c.rope_theta = 100.0f;
		c.rope_scaling = ROPE_SCALE_LONGROPE;
		c.rope_orig_context = 6;
		c.rope_attn_factor = 1.3f;
		for (int i = 0; i < cfg_rotary_dims(&c) / 2; i++) {
			c.rope_short[i] = 1.0f + 0.5f * (float)i;
			c.rope_long[i] = 3.0f + 4.0f * (float)i;
		}
		struct model *m = randmodel_rebuild(base, &c, 85 + partial);
		struct run_options native, cases[4];
		run_options_native(m, &native);
		int n = 0;
		cases[n++] = native;
		cases[n] = native, cases[n++].kv_heads = 1;
		cases[n] = native, cases[n++].placement = PLACE_POST;
		cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 3;
		for (int k = 0; k < n; k++) {
			double w1 = stepped_vs_ref(m, &cases[k], tokens, 1);
			double w4 = stepped_vs_ref(m, &cases[k], tokens, 4);
			double w9 = stepped_vs_ref(m, &cases[k], tokens, 9);
			double pass_in = step_vs_pass(m, &cases[k], tokens, 6);
			double pass_out = step_vs_pass(m, &cases[k], tokens, T);
			print_message("longrope rot %d case %d: stepped %.3f, prefill 4 %.3f, prefill 9 "
				      "%.3f of tolerance; steps vs full pass over 6: %.3f, over %d: %.0f\n",
				      cfg_rotary_dims(&c), k, w1, w4, w9, pass_in, T, pass_out);
			assert_true(w1 <= 1.0 && w4 <= 1.0 && w9 <= 1.0 && pass_in <= 1.0);
			assert_true(pass_out > 5.0);
		}
		model_free(m);
	}
}

/* A prefill of P tokens (one full pass) leaves the cache and logits that
 * P steps leave (within 1e-4 + 1e-4 |ref|), under MHA, MQA, a window
 * shorter than the prefill, post-norm and mask none (which steps, and so
 * prefills, as causal); the steps after it agree too. */
static void test_prefill_matches_steps(void **state)
{
	(void)state;
	struct model *m = randmodel_new(true, 2, 2, V, 8.0f, 11);
	struct run_options native, cases[5];
	run_options_native(m, &native);
	int n = 0;
	cases[n++] = native;
	cases[n] = native, cases[n++].kv_heads = 1;
	cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 3;
	cases[n] = native, cases[n++].placement = PLACE_POST;
	cases[n] = native, cases[n++].mask = MASK_NONE;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 1) % V;
	for (int k = 0; k < n; k++)
		for (int P = 2; P < T; P += 5) {
			struct err e;
			struct decoder *a = decoder_new(m, &cases[k], 0, &e), *b = decoder_new(m, &cases[k], 0, &e);
			assert_non_null(a);
			assert_non_null(b);
			assert_int_equal(decoder_prefill(b, m, tokens, P, &e), 0);
			assert_int_equal(b->n, P);
			for (int i = 0; i < T; i++) {
				if (i >= P)
					assert_int_equal(decoder_step(b, m, tokens[i], &e), 0);
				assert_int_equal(decoder_step(a, m, tokens[i], &e), 0);
				if (i < P - 1)
					continue;
				assert_int_equal(a->used, b->used);
				for (int j = 0; j < V; j++)
					if (fabs(a->logits[j] - b->logits[j]) > 1e-4 + 1e-4 * fabs(a->logits[j]))
						fail_msg("case %d, prefill %d, position %d: logit %d %g vs %g", k,
							 P, i, j, a->logits[j], b->logits[j]);
			}
			decoder_free(a);
			decoder_free(b);
		}
	model_free(m);
}

/* Hook contexts: a stored residual stream to write in, and a head to zero. */
struct patch {
	int layer;
	const float *resid; /* (T, C) */
	int C, calls;
};

static void patch_resid(void *ctx, enum hook_site site, int layer, float *x, int B, int T,
			int pos0, int width)
{
	struct patch *p = ctx;
	(void)B;
	if (site != HOOK_RESID || layer != p->layer)
		return;
	assert_int_equal(width, p->C);
	memcpy(x, p->resid + (size_t)pos0 * width, (size_t)T * width * sizeof(float));
	p->calls++;
}

struct zero_head {
	int layer, head, D, calls;
};

static void zero_head(void *ctx, enum hook_site site, int layer, float *x, int B, int T, int pos0,
		      int width)
{
	struct zero_head *z = ctx;
	(void)pos0;
	if (site != HOOK_HEADS || layer != z->layer)
		return;
	for (int i = 0; i < B * T; i++)
		memset(x + (size_t)i * width + (size_t)z->head * z->D, 0, (size_t)z->D * sizeof(float));
	z->calls++;
}

static void test_hooks(void **state)
{
	(void)state;
	struct model *m = randmodel_new(true, 2, 2, V, 8.0f, 11);
	const struct model_config *c = &m->cfg;
	int C = c->d_model, Tn = 10, clean[10], bad[10];
	for (int i = 0; i < Tn; i++) {
		clean[i] = (i * 5 + 1) % V;
		bad[i] = (i * 3 + 2) % V;
	}
	struct run_options o;
	run_options_native(m, &o);
	struct err e;
	struct run *rc = run_new(c, 1, Tn, RUN_LOGITS), *rb = run_new(c, 1, Tn, RUN_LOGITS);
	assert_int_equal(model_forward(m, &o, clean, NULL, 1, Tn, rc, &e), 0);
	/* the residual stream after block 0 is resid[1] */
	struct patch p = { .layer = 0, .resid = rc->resid + (size_t)1 * Tn * C, .C = C };
	struct run_hook hook = { patch_resid, &p };
	rb->hook = &hook;
	assert_int_equal(model_forward(m, &o, bad, NULL, 1, Tn, rb, &e), 0);
	assert_int_equal(p.calls, 1);
	assert_memory_equal(run_logits(rb), run_logits(rc), (size_t)Tn * V * sizeof(float));

	/* the decoder: the same hook, one row per step, the same logits */
	struct decoder *d = decoder_new(m, &o, 0, &e);
	d->hook = &hook;
	p.calls = 0;
	for (int i = 0; i < Tn; i++) {
		assert_int_equal(decoder_step(d, m, bad[i], &e), 0);
		for (int j = 0; j < V; j++)
			assert_true(fabs(d->logits[j] - run_logits(rc)[(size_t)i * V + j]) <
				    1e-4 + 1e-4 * fabs(run_logits(rc)[(size_t)i * V + j]));
	}
	assert_int_equal(p.calls, Tn);
	decoder_free(d);

	/* zeroing head 1.3 at HOOK_HEADS is ablating it */
	struct zero_head z = { .layer = 1, .head = 3, .D = cfg_d_head(c) };
	struct run_hook zh = { zero_head, &z };
	rb->hook = &zh;
	assert_int_equal(model_forward(m, &o, clean, NULL, 1, Tn, rb, &e), 0);
	assert_int_equal(z.calls, 1);
	struct run_options ab = o;
	opt_set_ablated(&ab, 1 * 4 + 3, true);
	rc->hook = NULL;
	assert_int_equal(model_forward(m, &ab, clean, NULL, 1, Tn, rc, &e), 0);
	assert_memory_equal(run_logits(rb), run_logits(rc), (size_t)Tn * V * sizeof(float));
	run_free(rc);
	run_free(rb);
	model_free(m);
}

static void test_sampler(void **state)
{
	(void)state;
	float logits[5] = { 0.5f, 2.0f, 2.0f, -1.0f, 1.0f };
	struct sampler s;
	sampler_init(&s, 5, 0.0f, 0, 1);
	assert_int_equal(sampler_sample(&s, logits, -1), 1); /* tie: the smaller id */
	assert_int_equal(sampler_sample(&s, logits, 1), 2);
	sampler_free(&s);
	sampler_init(&s, 5, 1.0f, 1, 1);
	for (int i = 0; i < 20; i++)
		assert_int_equal(sampler_sample(&s, logits, -1), 1);
	sampler_free(&s);

	/* a seed reproduces the draws; exclude is never drawn */
	struct sampler a, b;
	sampler_init(&a, 5, 1.0f, 0, 42);
	sampler_init(&b, 5, 1.0f, 0, 42);
	for (int i = 0; i < 200; i++) {
		int x = sampler_sample(&a, logits, 4);
		assert_int_equal(x, sampler_sample(&b, logits, 4));
		assert_int_not_equal(x, 4);
	}
	sampler_free(&a);
	sampler_free(&b);

	/* the softmax: probabilities 1/7, 2/7, 4/7 */
	float l3[3] = { 0.0f, logf(2.0f), logf(4.0f) };
	int count[3] = { 0 }, N = 70000;
	sampler_init(&s, 3, 1.0f, 0, 9);
	for (int i = 0; i < N; i++)
		count[sampler_sample(&s, l3, -1)]++;
	sampler_free(&s);
	for (int i = 0; i < 3; i++)
		assert_true(fabs((double)count[i] / N - (1 << i) / 7.0) < 0.01);
	/* top_k 2: the least likely is never drawn */
	sampler_init(&s, 3, 1.0f, 2, 9);
	for (int i = 0; i < 1000; i++)
		assert_int_not_equal(sampler_sample(&s, l3, -1), 0);
	sampler_free(&s);
	/* a sampler over the first 3 ids of a longer row (decoder_ids: a
	 * tokenizer smaller than the vocabulary) never draws the rest, however
	 * likely */
	float l5[5] = { 0.0f, 0.5f, 1.0f, 9.0f, 9.0f };
	sampler_init(&s, 3, 0.0f, 0, 9);
	assert_int_equal(sampler_sample(&s, l5, -1), 2);
	sampler_free(&s);
	sampler_init(&s, 3, 2.0f, 0, 9);
	for (int i = 0; i < 1000; i++)
		assert_true(sampler_sample(&s, l5, -1) < 3);
	sampler_free(&s);
}

/* The worst |kept - pass| / (1e-4 + 1e-4 |pass|) over one field of n
 * values, its name and index kept in *where when it is the worst so far. */
static double field_worst(const char *name, const float *a, const float *b, size_t n,
			  double worst, char *where, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		double q = fabs((double)a[i] - b[i]) / (1e-4 + 1e-4 * fabs((double)b[i]));
		if (!(q <= worst)) {
			worst = q;
			snprintf(where, size, "%s[%zu]: %g vs %g", name, i, (double)a[i], (double)b[i]);
		}
	}
	return worst;
}

/* A run kept by the decoder (decoder_keep from a pass over the first P
 * tokens, in place or into a run of its own, then stepped to T and
 * decoder_kept) against model_forward's run over the T tokens: the worst
 * ratio over the logits, NLL, attention, head and residual norms, the
 * residual stream of every block and the final norm's output. */
static double kept_vs_pass(struct model *m, const struct run_options *o, int P, bool in_place)
{
	const struct model_config *c = &m->cfg;
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 5 + 2) % V;
	struct err e;
	unsigned fl = RUN_LOGITS | RUN_ATTN;
	struct run *ref = run_new(c, 1, T, fl), *from = run_new(c, 1, T + 3, fl);
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, T, ref, &e), 0);
	run_att_fill(ref); /* read below as one block */
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, P, from, &e), 0);
	struct decoder *d = decoder_new(m, o, T, &e);
	assert_non_null(d);
	assert_int_equal(decoder_prefill(d, m, tokens, P, &e), 0);
	struct run *r = in_place ? from : run_new(c, 1, T + 5, fl);
	if (decoder_keep(d, m, r, from, &e) != 0)
		fail_msg("decoder_keep: %s", e.msg);
	for (int i = P; i < T; i++)
		assert_int_equal(decoder_step(d, m, tokens[i], &e), 0);
	if (decoder_kept(d, tokens, T, &e) != 0)
		fail_msg("decoder_kept: %s", e.msg);
	assert_int_equal(r->t, T);
	assert_int_equal(r->b, 1);
	assert_int_equal(r->n_targets, ref->n_targets);
	assert_true(run_options_equal(&r->opt, o));
	size_t L = (size_t)c->n_layer, H = (size_t)c->n_head, C = (size_t)c->d_model;
	char where[160] = "";
	double w = 0.0;
	w = field_worst("logits", run_logits(r), run_logits(ref), (size_t)T * V, w, where, sizeof where);
	w = field_worst("nll", r->nll, ref->nll, T - 1, w, where, sizeof where);
	w = field_worst("att", r->att, ref->att, L * H * T * T, w, where, sizeof where);
	w = field_worst("head_norm", r->head_norm, ref->head_norm, L * H * T, w, where, sizeof where);
	w = field_worst("resid_norm", r->resid_norm, ref->resid_norm, L * T, w, where, sizeof where);
	w = field_worst("resid", r->resid, ref->resid, (L + 1) * T * C, w, where, sizeof where);
	w = field_worst("lnf", r->lnf, ref->lnf, (size_t)T * C, w, where, sizeof where);
	float loss = (float)r->loss, rloss = (float)ref->loss;
	w = field_worst("loss", &loss, &rloss, 1, w, where, sizeof where);
	print_message("  P %2d %-8s worst %.3f of tolerance at %s\n", P, in_place ? "in place" : "copied",
		      w, where);
	decoder_free(d);
	if (r != from)
		run_free(r);
	run_free(from);
	run_free(ref);
	return w;
}

/* The options a step computes as a pass does, on a model of 4 heads:
 * native, post-norm, K/V sharing down to 1 and up to 4, a window of 3,
 * scaling off, head 1.2 ablated.  Returns how many (7) are in cases. */
static int step_cases(const struct model *m, struct run_options cases[7])
{
	struct run_options native;
	run_options_native(m, &native);
	int n = 0;
	cases[n++] = native;
	cases[n] = native, cases[n++].placement = PLACE_POST;
	cases[n] = native, cases[n++].kv_heads = 1;
	cases[n] = native, cases[n++].kv_heads = 4;
	cases[n] = native, cases[n].mask = MASK_WINDOW, cases[n++].window = 3;
	cases[n] = native, cases[n++].scale = false;
	cases[n] = native, opt_set_ablated(&cases[n++], 1 * 4 + 2, true);
	return n;
}

/* A run kept while stepping (decoder_keep / decoder_kept) holds what
 * model_forward's pass over the same tokens holds, within 1e-4 + 1e-4
 * |ref|, for both model families under the options a step computes as a
 * pass does (placement, K/V sharing down and up, a window, scaling off, an
 * ablated head), the first rows given in place or copied, from a prompt of
 * 1 or 5 tokens; mask none is refused (a pass sees later tokens, a step
 * cannot) without touching the run, and tokens other than those stepped
 * are refused. */
static void test_kept_run_matches_forward(void **state)
{
	(void)state;
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = randmodel_new(llama, 4, llama ? 2 : 4, V, 8.0f, 11 + llama);
		struct run_options cases[7];
		int n = step_cases(m, cases);
		struct run_options native = cases[0];
		for (int i = 0; i < n; i++) {
			print_message("%s case %d\n", llama ? "llama" : "gpt2", i);
			assert_true(kept_vs_pass(m, &cases[i], 5, false) <= 1.0);
			assert_true(kept_vs_pass(m, &cases[i], 5, true) <= 1.0);
			assert_true(kept_vs_pass(m, &cases[i], 1, true) <= 1.0);
		}
		/* mask none: refused, the run untouched */
		struct err e;
		struct run_options none = native;
		none.mask = MASK_NONE;
		int tokens[4] = { 1, 2, 3, 4 };
		struct run *from = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
		assert_int_equal(model_forward(m, &none, tokens, NULL, 1, 4, from, &e), 0);
		float before = run_att(from, 0, 0, 0)[5];
		struct decoder *d = decoder_new(m, &none, T, &e);
		assert_int_equal(decoder_prefill(d, m, tokens, 4, &e), 0);
		assert_int_equal(decoder_keep(d, m, from, from, &e), -1);
		assert_int_equal(from->t, 4);
		assert_true(from->att[5] == before);
		decoder_free(d);
		/* tokens other than the ones stepped */
		assert_int_equal(model_forward(m, &native, tokens, NULL, 1, 4, from, &e), 0);
		d = decoder_new(m, &native, T, &e);
		assert_int_equal(decoder_prefill(d, m, tokens, 4, &e), 0);
		assert_int_equal(decoder_keep(d, m, from, from, &e), 0);
		assert_int_equal(decoder_step(d, m, 7, &e), 0);
		int other[5] = { 1, 2, 3, 4, 8 };
		assert_int_equal(decoder_kept(d, other, 5, &e), -1);
		assert_non_null(strstr(e.msg, "not the 5 positions stepped"));
		decoder_free(d);
		run_free(from);
		model_free(m);
	}
}

/* decoder_prefill_from (the keys and values computed again from a pass's
 * block inputs, the last logits the pass's) against decoder_prefill of the
 * same P tokens: the worst ratio over the cached keys and values, the
 * logits after the prefill and after each step to T. */
static double prefill_from_vs_prefill(struct model *m, const struct run_options *o, int P)
{
	int tokens[T];
	for (int i = 0; i < T; i++)
		tokens[i] = (i * 3 + 1) % V;
	struct err e;
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	assert_int_equal(model_forward(m, o, tokens, NULL, 1, P, r, &e), 0);
	struct decoder *a = decoder_new(m, o, T, &e), *b = decoder_new(m, o, T, &e);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(decoder_prefill(a, m, tokens, P, &e), 0);
	if (decoder_prefill_from(b, m, tokens, P, r, &e) != 0)
		fail_msg("decoder_prefill_from: %s", e.msg);
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->used, b->used);
	char where[160] = "";
	double w = 0.0;
	for (int l = 0; l < a->L; l++) { /* the filled slots of each layer */
		size_t at = (size_t)l * a->slots * a->G * a->D, len = (size_t)a->used * a->G * a->D;
		w = field_worst("k", b->k + at, a->k + at, len, w, where, sizeof where);
		w = field_worst("v", b->v + at, a->v + at, len, w, where, sizeof where);
	}
	for (int i = P; i <= T; i++) {
		w = field_worst("logits", b->logits, a->logits, V, w, where, sizeof where);
		if (i == T)
			break;
		assert_int_equal(decoder_step(a, m, tokens[i], &e), 0);
		assert_int_equal(decoder_step(b, m, tokens[i], &e), 0);
	}
	print_message("  P %2d worst %.3f of tolerance at %s\n", P, w, where);
	decoder_free(a);
	decoder_free(b);
	run_free(r);
	return w;
}

/* A prefill from a pass already made fills the cache and gives the
 * logits decoder_prefill does, within 1e-4 + 1e-4 |ref|, and every step
 * after it too, for both families under the options a step computes as a
 * pass does (placement, K/V sharing down and up, a window shorter than the
 * prompt, scaling off, an ablated head); a pass under other options, of
 * other tokens' count, or a cache in use is refused. */
static void test_prefill_from_pass(void **state)
{
	(void)state;
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = randmodel_new(llama, 3, llama ? 2 : 4, V, 8.0f, 31 + llama);
		struct run_options cases[7];
		int n = step_cases(m, cases);
		struct run_options native = cases[0];
		for (int i = 0; i < n; i++) {
			print_message("%s case %d\n", llama ? "llama" : "gpt2", i);
			assert_true(prefill_from_vs_prefill(m, &cases[i], 6) <= 1.0);
			assert_true(prefill_from_vs_prefill(m, &cases[i], 1) <= 1.0);
		}
		struct err e;
		int tokens[4] = { 1, 2, 3, 4 };
		struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
		assert_int_equal(model_forward(m, &native, tokens, NULL, 1, 4, r, &e), 0);
		struct decoder *d = decoder_new(m, &cases[2], T, &e); /* other options */
		assert_int_equal(decoder_prefill_from(d, m, tokens, 4, r, &e), -1);
		assert_int_equal(d->n, 0);
		decoder_free(d);
		d = decoder_new(m, &native, T, &e);
		assert_int_equal(decoder_prefill_from(d, m, tokens, 3, r, &e), -1);
		assert_int_equal(decoder_step(d, m, 1, &e), 0);
		assert_int_equal(decoder_prefill_from(d, m, tokens, 4, r, &e), -1);
		decoder_free(d);
		run_free(r);
		model_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decoder_matches_forward),
		cmocka_unit_test(test_decoder_lab_architectures),
		cmocka_unit_test(test_decoder_neox),
		cmocka_unit_test(test_decoder_head_dim),
		cmocka_unit_test(test_decoder_gemma),
		cmocka_unit_test(test_decoder_olmo2),
		cmocka_unit_test(test_decoder_longrope),
		cmocka_unit_test(test_decoder_neo),
		cmocka_unit_test(test_decoder_reset_and_limits),
		cmocka_unit_test(test_prefill_matches_steps),
		cmocka_unit_test(test_kept_run_matches_forward),
		cmocka_unit_test(test_prefill_from_pass),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_sampler),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
