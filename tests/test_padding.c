/*
 * test_padding.c — the padding mask (model.h run.key_len) and the padding
 * lesson (padding.h), on seeded random models:
 *  - with the mask, every text of a right-padded batch gets the attention
 *    and loss of its own run (to float rounding) and pads get exactly 0
 *    weight, under every mask kind;
 *  - without it, under `mask none`, the shorter texts attend to the pads
 *    and their losses move, while the longest (no pads) is unchanged;
 *  - under the causal mask the pads are never seen, mask or not;
 *  - each combination of the attention and padding masks (both: logical
 *    and; the padding mask alone; the attention mask alone; neither) gives
 *    the losses of the double-precision reference (ref_forward.c) run on the
 *    padded sequence with that combination, and only both matches alone;
 *  - bad lengths are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "model.h"
#include "padding.h"
#include "randmodel.h"
#include "ref_forward.h"

enum { V = 13 };

static int t1[3] = { 1, 5, 2 }, t2[6] = { 3, 3, 7, 1, 9, 4 }, t3[9] = { 2, 8, 6, 4, 1, 1, 5, 12, 3 };

static void run3(struct model *m, const struct run_options *o, struct pad_result *r)
{
	int *texts[3] = { t1, t2, t3 }, lens[3] = { 3, 6, 9 };
	struct err e;
	if (pad_run(m, o, 3, texts, lens, 0, r, &e) != 0)
		fail_msg("pad_run: %s", e.msg);
	assert_int_equal(r->T, 9);
}

static void test_mask_makes_batch_equal_alone(void **state)
{
	(void)state;
	static const enum mask_kind masks[4] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW,
						 MASK_AFTER_SOFTMAX };
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = randmodel_new(llama, 2, 2, V, 8.0f, 40 + llama);
		for (int k = 0; k < 4; k++) {
			struct run_options o;
			run_options_native(m, &o);
			o.mask = masks[k];
			o.window = 2;
			struct pad_result r;
			run3(m, &o, &r);
			for (int i = 0; i < 3; i++) {
				const struct pad_text *p = &r.texts[i];
				assert_true(p->pad_masked == 0.0);
				assert_true(p->diff_masked < 1e-5);
				assert_true(fabs(p->loss_masked - p->loss_alone) < 1e-5);
			}
			pad_result_free(&r);
		}
		model_free(m);
	}
}

static void test_without_mask(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 2, 4, V, 8.0f, 44);
	struct run_options o;
	run_options_native(m, &o);
	struct pad_result r;
	run3(m, &o, &r); /* causal: the pads come after every real token */
	for (int i = 0; i < 3; i++) {
		assert_true(r.texts[i].pad_unmasked == 0.0);
		assert_true(fabs(r.texts[i].loss_unmasked - r.texts[i].loss_alone) < 1e-5);
	}
	pad_result_free(&r);
	o.mask = MASK_NONE;
	run3(m, &o, &r);
	for (int i = 0; i < 2; i++) { /* the padded ones */
		print_message("text %d: weight on pads %.3f, loss %.4f alone %.4f\n", i,
			      r.texts[i].pad_unmasked, r.texts[i].loss_unmasked, r.texts[i].loss_alone);
		assert_true(r.texts[i].pad_unmasked > 0.01);
		assert_true(r.texts[i].diff_unmasked > 1e-3);
		assert_true(fabs(r.texts[i].loss_unmasked - r.texts[i].loss_alone) > 1e-4);
	}
	assert_true(r.texts[2].pad_unmasked == 0.0); /* the longest has no pads */
	assert_true(r.texts[2].diff_unmasked < 1e-5);
	pad_result_free(&r);
	model_free(m);
}

/* Mean NLL of the next-token targets inside the first len of T padded
 * tokens, by the reference under options o with padding mask key_len. */
static double ref_loss(const struct model *m, const struct run_options *o, const int *text,
		       int len, int T, int key_len)
{
	int Vn = m->cfg.vocab_size, seq[16];
	for (int t = 0; t < T; t++)
		seq[t] = t < len ? text[t] : 0;
	double *logits = calloc((size_t)T * Vn, sizeof *logits);
	if (ref_forward_padded(m, o, seq, T, key_len, logits, NULL, NULL) != 0)
		fail_msg("ref_forward_padded refused");
	double s = 0;
	for (int t = 0; t + 1 < len; t++) {
		const double *z = logits + (size_t)t * Vn;
		double mx = z[0], sum = 0;
		for (int v = 1; v < Vn; v++)
			mx = fmax(mx, z[v]);
		for (int v = 0; v < Vn; v++)
			sum += exp(z[v] - mx);
		s += mx + log(sum) - z[text[t + 1]];
	}
	free(logits);
	return s / (len - 1);
}

static void test_combinations_match_reference(void **state)
{
	(void)state;
	int *texts[3] = { t1, t2, t3 }, lens[3] = { 3, 6, 9 };
	for (int llama = 0; llama <= 1; llama++) {
		struct model *m = randmodel_new(llama, 2, 2, V, 8.0f, 50 + llama);
		struct run_options o, none;
		run_options_native(m, &o);
		none = o;
		none.mask = MASK_NONE;
		struct pad_result r;
		run3(m, &o, &r);
		assert_true(r.combined);
		for (int i = 0; i < 3; i++) {
			const struct pad_text *p = &r.texts[i];
			double both = ref_loss(m, &o, texts[i], lens[i], 9, lens[i]);
			double attn = ref_loss(m, &o, texts[i], lens[i], 9, 9);
			double pad = ref_loss(m, &none, texts[i], lens[i], 9, lens[i]);
			double neither = ref_loss(m, &none, texts[i], lens[i], 9, 9);
			print_message("text %d: both %.5f/%.5f pad only %.5f/%.5f causal only %.5f/%.5f "
				      "neither %.5f/%.5f\n", i, p->loss_masked, both, p->loss_pad_only, pad,
				      p->loss_unmasked, attn, p->loss_neither, neither);
			assert_true(fabs(p->loss_masked - both) < 1e-4);
			assert_true(fabs(p->loss_pad_only - pad) < 1e-4);
			assert_true(fabs(p->loss_unmasked - attn) < 1e-4);
			assert_true(fabs(p->loss_neither - neither) < 1e-4);
			/* only both is the text's own run; the padding mask alone lets
			 * a real token read the later ones */
			assert_true(fabs(p->loss_masked - p->loss_alone) < 1e-5);
			assert_true(fabs(p->loss_pad_only - p->loss_alone) > 1e-3);
		}
		/* the padded texts see the pads without either mask */
		assert_true(fabs(r.texts[0].loss_neither - r.texts[0].loss_pad_only) > 1e-3);
		pad_result_free(&r);
		run3(m, &none, &r); /* no attention mask: nothing to combine */
		assert_false(r.combined);
		assert_true(r.texts[0].loss_pad_only == r.texts[0].loss_masked);
		pad_result_free(&r);
		model_free(m);
	}
}

static void test_refuses(void **state)
{
	(void)state;
	struct model *m = randmodel_new(false, 1, 4, V, 1.0f, 45);
	struct run_options o;
	run_options_native(m, &o);
	int *texts[2] = { t1, t2 }, lens[2] = { 3, 0 };
	struct pad_result r;
	struct err e;
	assert_int_equal(pad_run(m, &o, 2, texts, lens, 0, &r, &e), -1);
	lens[1] = m->cfg.context + 1;
	assert_int_equal(pad_run(m, &o, 2, texts, lens, 0, &r, &e), -1);
	print_message("%s\n", e.msg);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_makes_batch_equal_alone),
		cmocka_unit_test(test_without_mask),
		cmocka_unit_test(test_combinations_match_reference),
		cmocka_unit_test(test_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
