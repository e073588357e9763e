/*
 * test_patch.c — activation patching (patch.h) on cases with a known
 * answer, for seeded random models:
 *  - putting back the clean stream after the last block at the last
 *    position restores everything (share 1, to 1e-5): the last logits read
 *    only that row; at any earlier position of the last block, nothing
 *    (share 0): no later block reads it;
 *  - a head whose output-projection columns are zero restores nothing
 *    (share exactly 0): patching it changes no number downstream;
 *  - the unpatched metrics are the logit differences of the two runs, and
 *    the answers their argmaxes at the last position;
 *  - two texts with the same prediction are refused;
 *  - both hold for one site a pass, 3 (partial batches) and the default;
 *  - every share equals a patch made the plain way, here in the test: a
 *    whole corrupted pass per site, the site put back by a hook, the
 *    metric from that pass's own logits (patch_run batches sites, resumes
 *    at the patched block, and with one site a pass under a causal or
 *    window mask starts a residual row's pass at its row, and reads the
 *    last rows through the output head alone), for both families under
 *    native, GQA, post-norm, window-mask, ablated, no-mask and
 *    after-softmax options, each with one of the three batch sizes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "patch.h"
#include "randmodel.h"

enum { V = 17, T = 8 };


/* Two texts that differ in one token and lead to different predictions. */
static void find_texts(struct model *m, const struct run_options *o, int *clean, int *corrupt)
{
	struct err e;
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
	for (int seed = 0; seed < 200; seed++) {
		for (int i = 0; i < T; i++)
			clean[i] = corrupt[i] = (i * 5 + seed) % V;
		int at = 2 + seed % (T - 2);
		corrupt[at] = (clean[at] + 1 + seed % 7) % V;
		int a[2];
		for (int k = 0; k < 2; k++) {
			assert_int_equal(model_forward(m, o, k ? corrupt : clean, NULL, 1, T, r, &e), 0);
			const float *z = run_logits(r) + (size_t)(T - 1) * V;
			a[k] = 0;
			for (int j = 1; j < V; j++)
				a[k] = z[j] > z[a[k]] ? j : a[k];
		}
		if (a[0] != a[1]) {
			run_free(r);
			return;
		}
	}
	fail_msg("no pair of texts with different predictions");
}

static void test_patch_known_answers(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 2, 4, V, 8.0f, 21);
	int C = m->cfg.d_model, D = C / 4;
	/* head 0.2 writes nothing: its columns of the output projection are zero */
	for (int o = 0; o < C; o++)
		memset(m->p[P_ATTPROJW] + (size_t)o * C + 2 * D, 0, (size_t)D * sizeof(float));
	struct run_options o;
	run_options_native(m, &o);
	int clean[T], corrupt[T];
	find_texts(m, &o, clean, corrupt);
	struct patch_result r;
	struct err e;
	static const int batches[] = { 1, 3, 0 }; /* one site a pass, 3, the default (4) */
	for (int bi = 0; bi < 3; bi++) {
		assert_int_equal(patch_run(m, &o, clean, corrupt, T, batches[bi], NULL, NULL, NULL, &r, &e), 0);
		assert_int_equal(r.L, 2);
		assert_int_equal(r.T, T);
		assert_int_not_equal(r.clean_answer, r.corrupt_answer);
		assert_true(r.ld_clean > 0 && r.ld_corrupt < 0); /* each run prefers its own answer */
		print_message("batch %d: last block, last position %.6f; head 0.2 %.3g\n", batches[bi],
			      r.resid[(size_t)1 * T + T - 1], r.heads[2]);
		assert_true(fabs(r.resid[(size_t)1 * T + T - 1] - 1.0) < 1e-5);
		for (int t = 0; t < T - 1; t++)
			assert_true(fabs(r.resid[(size_t)1 * T + t]) < 1e-9);
		/* A head that writes nothing restores nothing.  Exactly 0 when the
		 * reference and the site run alone; in a batch their rows are rows
		 * of one product, and OpenBLAS may give the rows of a product's
		 * tail another micro-kernel (Haswell and Zen kernels do), so the
		 * share is 0 up to float rounding of the logit difference. */
		assert_true(fabs(r.heads[2]) < 1e-6);
		if (batches[bi] == 1)
			assert_true(r.heads[2] == 0.0);
		patch_free(&r);
	}

	/* the same text twice: nothing to restore */
	assert_int_equal(patch_run(m, &o, clean, clean, T, 0, NULL, NULL, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "same next token"));
	model_free(m);
}

/* The plain patch: keep the clean sites, then put one back per pass. */
struct plain {
	int mode; /* 0 keep, 1 head, 2 row */
	int T, D, layer, which;
	float *heads, *resid; /* (L, T, C) each */
};

static void plain_hook(void *ctx, enum hook_site site, int layer, float *x, int B, int Tn,
		       int pos0, int width)
{
	struct plain *p = ctx;
	(void)B;
	(void)pos0;
	float *keep = (site == HOOK_HEADS ? p->heads : p->resid) + (size_t)layer * p->T * width;
	if (p->mode == 0) {
		memcpy(keep, x, (size_t)Tn * width * sizeof(float));
		return;
	}
	if (layer != p->layer)
		return;
	if (p->mode == 1 && site == HOOK_HEADS)
		for (int i = 0; i < Tn; i++)
			for (int d = 0; d < p->D; d++)
				x[(size_t)i * width + p->which * p->D + d] = keep[(size_t)i * width + p->which * p->D + d];
	if (p->mode == 2 && site == HOOK_RESID)
		memcpy(x + (size_t)p->which * width, keep + (size_t)p->which * width, (size_t)width * sizeof(float));
}

static double plain_ld(const struct run *r, int a, int b)
{
	const float *z = run_logits(r) + (size_t)(r->t - 1) * r->V;
	return (double)z[a] - (double)z[b];
}

static void test_patch_equals_whole_passes(void **state)
{
	(void)state;
	double worst = 0;
	for (int llama = 0; llama < 2; llama++)
		for (int variant = 0; variant < 7; variant++) {
			struct model *m = randmodel_new(llama, 3, llama ? 2 : 4, V, 8.0f, 60 + variant);
			struct run_options o;
			run_options_native(m, &o);
			if (variant == 1)
				o.kv_heads = 1;
			if (variant == 2)
				o.placement = PLACE_POST;
			if (variant == 3) {
				o.mask = MASK_WINDOW;
				o.window = 2;
			}
			if (variant == 4)
				opt_set_ablated(&o, 1 * 4 + 3, true);
			if (variant == 5)
				o.mask = MASK_NONE;
			if (variant == 6)
				o.mask = MASK_AFTER_SOFTMAX;
			int clean[T], corrupt[T];
			find_texts(m, &o, clean, corrupt);
			struct patch_result pr;
			struct err e;
			int batch = (llama * 7 + variant) % 3 == 0 ? 1 : (llama * 7 + variant) % 3 == 1 ? 3 : 0;
			assert_int_equal(patch_run(m, &o, clean, corrupt, T, batch, NULL, NULL, NULL, &pr, &e), 0);

			int L = m->cfg.n_layer, H = m->cfg.n_head, C = m->cfg.d_model;
			struct plain p = { .T = T, .D = C / H };
			p.heads = malloc((size_t)L * T * C * sizeof(float));
			p.resid = malloc((size_t)L * T * C * sizeof(float));
			struct run_hook hook = { plain_hook, &p };
			struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
			r->hook = &hook;
			assert_int_equal(model_forward(m, &o, clean, NULL, 1, T, r, &e), 0);
			double ld_clean = plain_ld(r, pr.clean_answer, pr.corrupt_answer);
			p.mode = 3; /* nothing */
			assert_int_equal(model_forward(m, &o, corrupt, NULL, 1, T, r, &e), 0);
			double ld_corrupt = plain_ld(r, pr.clean_answer, pr.corrupt_answer);
			assert_true(fabs(ld_clean - pr.ld_clean) < 1e-4);
			assert_true(fabs(ld_corrupt - pr.ld_corrupt) < 1e-4);
			for (int k = 0; k < L * H + L * T; k++) {
				bool head = k < L * H;
				int i = head ? k : k - L * H, per = head ? H : T;
				p.mode = head ? 1 : 2;
				p.layer = i / per;
				p.which = i % per;
				assert_int_equal(model_forward(m, &o, corrupt, NULL, 1, T, r, &e), 0);
				double want = (plain_ld(r, pr.clean_answer, pr.corrupt_answer) - ld_corrupt) /
					      (ld_clean - ld_corrupt);
				double got = head ? pr.heads[i] : pr.resid[i];
				double d = fabs(got - want) / (1.0 + fabs(want));
				worst = d > worst ? d : worst;
				if (d > 1e-4)
					fail_msg("llama %d variant %d batch %d site %d: patch_run %.6f, whole "
						 "passes %.6f", llama, variant, batch, k, got, want);
			}
			run_free(r);
			free(p.heads);
			free(p.resid);
			patch_free(&pr);
			model_free(m);
		}
	print_message("worst relative difference from whole passes: %.2e\n", worst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_known_answers),
		cmocka_unit_test(test_patch_equals_whole_passes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
