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
 *  - two texts with the same prediction are refused.
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
		corrupt[2] = (clean[2] + 1 + seed % 7) % V;
		int a[2];
		for (int k = 0; k < 2; k++) {
			assert_int_equal(model_forward(m, o, k ? corrupt : clean, NULL, 1, T, r, &e), 0);
			const float *z = r->logits + (size_t)(T - 1) * V;
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
	assert_int_equal(patch_run(m, &o, clean, corrupt, T, NULL, NULL, NULL, &r, &e), 0);
	assert_int_equal(r.L, 2);
	assert_int_equal(r.T, T);
	assert_int_not_equal(r.clean_answer, r.corrupt_answer);
	assert_true(r.ld_clean > 0 && r.ld_corrupt < 0); /* each run prefers its own answer */
	print_message("last block, last position %.6f; head 0.2 %.6f\n",
		      r.resid[(size_t)1 * T + T - 1], r.heads[2]);
	assert_true(fabs(r.resid[(size_t)1 * T + T - 1] - 1.0) < 1e-5);
	for (int t = 0; t < T - 1; t++)
		assert_true(fabs(r.resid[(size_t)1 * T + t]) < 1e-9);
	assert_true(r.heads[2] == 0.0);
	patch_free(&r);

	/* the same text twice: nothing to restore */
	assert_int_equal(patch_run(m, &o, clean, clean, T, NULL, NULL, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "same next token"));
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_known_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
