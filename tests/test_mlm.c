/*
 * test_mlm.c — the masked-LM batch maker (mlm.h) and the character
 * vocabulary's special tokens it needs (tokenizer.h, TOK_CHAR_MLM).
 *
 *  - the vocabulary: [CLS], [SEP], [MASK] are ids 1-3 with those pieces;
 *    a typed "[MASK]" encodes to its id, as BERT's tokenizers read it,
 *    while a typed "[SEP]" and near misses ("[MAS", "[mask]") stay
 *    characters;
 *    tok_encode with BOS wraps the text as [CLS] ... [SEP]; the JSON
 *    round trip keeps them; a plain vocabulary has no [MASK].
 *  - mlm_corrupt with a fixed seed: every window starts with [CLS] and
 *    ends with [SEP], which are never selected; exactly round(0.15 (T-2))
 *    positions per window carry a target, the original token; every
 *    other position keeps its token; of the selected positions about 80%
 *    hold [MASK], 10% a random character (never a special token) and 10%
 *    their own token.
 *  - the loss counts the selected positions only: a forward pass of an
 *    encoder on a batch has n_targets = the selections and NAN NLL
 *    elsewhere.
 *  - mlm_val_batch gives the same batch every time for a batch index,
 *    another for another index; mlm_check refuses a plain vocabulary and
 *    a context under 3.
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

#include "dataset.h"
#include "mlm.h"
#include "model.h"
#include "tokenizer.h"

static const char corpus[] =
	"First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
	"First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\n"
	"Resolved. resolved.\n";

static struct tokenizer *mlm_tok(void)
{
	struct err e = { "" };
	struct tokenizer *t = tok_char_from_text(corpus, sizeof corpus - 1, 1, TOK_CHAR_MLM, &e);
	if (!t)
		fail_msg("tok_char_from_text: %s", e.msg);
	return t;
}

static void test_vocabulary(void **state)
{
	(void)state;
	struct tokenizer *t = mlm_tok();
	char buf[16];
	static const char *const names[4] = { "<unk>", "[CLS]", "[SEP]", "[MASK]" };
	for (int id = 0; id < 4; id++) {
		tok_piece(t, id, buf, sizeof buf);
		assert_string_equal(buf, names[id]);
	}
	assert_int_equal(t->bos_id, 1);
	assert_int_equal(t->eos_id, 2);
	assert_int_equal(tok_char_mask_id(t), 3);
	assert_int_equal(tok_char_specials(t), 4);
	/* typed: "[MASK]" is its id; "[SEP]", "[MAS" and "[mask]" are
	 * characters ('[' and ']' are not in the corpus, so they are <unk>;
	 * the letters are letters of it) */
	int *ids = NULL, n = 0;
	struct err e = { "" };
	const char *typed = "A[MASK]l[SEP][MAS[mask]";
	assert_true(tok_encode(t, typed, strlen(typed), 1, &ids, &n, &e) >= 0);
	assert_int_equal(n, 1 + 3 + 15 + 1); /* [CLS] A [MASK] l, 15 characters, [SEP] */
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[2], 3);
	assert_int_equal(ids[n - 1], 2);
	for (int i = 3; i < n - 1; i++)
		assert_true(ids[i] == 0 || ids[i] >= 4);
	char *back = tok_decode(t, ids + 1, n - 2);
	assert_int_equal(strncmp(back, "A[MASK]l", 8), 0);
	free(back);
	free(ids);
	/* the JSON round trip keeps the special tokens */
	char *json = t->ops->to_json(t);
	struct tokenizer *u = tok_from_json(json, &e);
	assert_non_null(u);
	assert_int_equal(tok_char_mask_id(u), 3);
	assert_int_equal(u->eos_id, 2);
	assert_int_equal(u->vocab_size, t->vocab_size);
	free(json);
	tok_free(u);
	/* a damaged "specials" is refused with a message */
	assert_null(tok_from_json("{\"type\":\"char\",\"bos\":true,\"specials\":\"xyz\",\"chars\":[97]}",
				  &e));
	assert_non_null(strstr(e.msg, "specials"));
	tok_free(t);
	/* a plain vocabulary has none */
	t = tok_char_from_text(corpus, sizeof corpus - 1, 1, TOK_CHAR_BOS, &e);
	assert_int_equal(tok_char_mask_id(t), -1);
	assert_int_equal(t->eos_id, -1);
	assert_int_equal(mlm_check(t, 16, &e), -1);
	tok_free(t);
}

enum { B = 300, T = 42 }; /* 40 ordinary positions: 6 selected per window */

/* B windows of plain tokens drawn from the corpus's characters. */
static void plain_windows(const struct tokenizer *t, int *w)
{
	struct rng r;
	rng_seed(&r, 99);
	for (int i = 0; i < B * T; i++)
		w[i] = 4 + (int)(rng_u32(&r) % (uint32_t)(t->vocab_size - 4));
}

static void test_corrupt(void **state)
{
	(void)state;
	struct tokenizer *t = mlm_tok();
	int *orig = malloc(B * T * sizeof *orig), *tok = malloc(B * T * sizeof *tok);
	int *tg = malloc(B * T * sizeof *tg);
	plain_windows(t, orig);
	memcpy(tok, orig, B * T * sizeof *tok);
	struct rng r;
	rng_seed(&r, 1234);
	mlm_corrupt(t, &r, B, T, tok, tg);
	int k = (int)lround(MLM_SELECT * (T - 2)), masked = 0, random = 0, kept = 0;
	for (int b = 0; b < B; b++) {
		const int *w = tok + b * T, *g = tg + b * T, *o = orig + b * T;
		assert_int_equal(w[0], t->bos_id);
		assert_int_equal(w[T - 1], t->eos_id);
		assert_int_equal(g[0], -1);
		assert_int_equal(g[T - 1], -1);
		int sel = 0;
		for (int i = 1; i < T - 1; i++) {
			int was = o[i - 1]; /* the window moved right by one */
			if (g[i] < 0) {
				assert_int_equal(w[i], was);
				continue;
			}
			sel++;
			assert_int_equal(g[i], was);
			assert_true(w[i] == tok_char_mask_id(t) || w[i] >= tok_char_specials(t));
			if (w[i] == tok_char_mask_id(t))
				masked++;
			else if (w[i] == was)
				kept++;
			else
				random++;
		}
		assert_int_equal(sel, k);
	}
	double n = (double)B * k;
	print_message("  %d selected: %.3f [MASK], %.3f random, %.3f unchanged\n", B * k,
		      masked / n, random / n, kept / n);
	/* 1800 draws: a share's standard deviation is under 0.01 */
	assert_true(fabs(masked / n - MLM_MASK) < 0.03);
	/* a random character is the original one 1 time in V - 4 */
	assert_true(fabs(random / n - MLM_RANDOM) < 0.03);
	assert_true(fabs(kept / n - (1 - MLM_MASK - MLM_RANDOM)) < 0.03);
	free(orig);
	free(tok);
	free(tg);
	tok_free(t);
}

/* A tiny encoder over t's vocabulary. */
static struct model *tiny_encoder(const struct tokenizer *t)
{
	struct model_config c;
	config_default(&c);
	c.vocab_size = t->vocab_size;
	c.d_model = 16;
	c.n_layer = 1;
	c.n_head = 2;
	c.n_kv_head = 2;
	c.d_ff = 32;
	c.context = T;
	c.placement = PLACE_POST;
	c.mlp = MLP_GELU_EXACT;
	c.mask = MASK_NONE;
	c.emb_norm = true;
	c.head = HEAD_MLM;
	struct err e = { "" };
	struct model *m = model_new(&c, &e);
	if (!m)
		fail_msg("model_new: %s", e.msg);
	model_init_random(m, 5);
	return m;
}

static void test_loss_positions(void **state)
{
	(void)state;
	struct tokenizer *t = mlm_tok();
	int *tok = malloc(B * T * sizeof *tok), *tg = malloc(4 * T * sizeof *tg);
	plain_windows(t, tok); /* the first 4 of them are used */
	struct rng r;
	rng_seed(&r, 7);
	mlm_corrupt(t, &r, 4, T, tok, tg);
	struct model *m = tiny_encoder(t);
	struct run_options o;
	run_options_native(m, &o);
	struct run *run = run_new(&m->cfg, 4, T, RUN_LOGITS);
	struct err e = { "" };
	assert_int_equal(model_forward(m, &o, tok, tg, 4, T, run, &e), 0);
	int sel = 0;
	for (int i = 0; i < 4 * T; i++) {
		sel += tg[i] >= 0;
		assert_true(tg[i] >= 0 ? isfinite(run->nll[i]) : isnan(run->nll[i]));
	}
	assert_int_equal(run->n_targets, sel);
	assert_int_equal(sel, 4 * (int)lround(MLM_SELECT * (T - 2)));
	run_free(run);
	model_free(m);
	free(tok);
	free(tg);
	tok_free(t);
}

static void test_val_batches(void **state)
{
	(void)state;
	char path[] = "/tmp/attnscope-mlm-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	for (int i = 0; i < 30; i++)
		assert_int_equal(write(fd, corpus, sizeof corpus - 1), (ssize_t)(sizeof corpus - 1));
	close(fd);
	struct dataset d;
	struct err e = { "" };
	assert_int_equal(dataset_load_chars(&d, path, 1, TOK_CHAR_MLM, 0.3, &e), 0);
	unlink(path);
	assert_int_equal(dataset_set_windows(&d, T, true, 0.0, 1, 1, false, &e), 0);
	assert_int_equal(mlm_check(d.tok, T, &e), 0);
	assert_int_equal(mlm_check(d.tok, 2, &e), -1);
	int a[4 * T], ga[4 * T], b[4 * T], gb[4 * T];
	mlm_val_batch(&d, d.tok, 1337, 1, 3, 4, T, a, ga);
	mlm_val_batch(&d, d.tok, 1337, 1, 3, 4, T, b, gb);
	assert_memory_equal(a, b, sizeof a);
	assert_memory_equal(ga, gb, sizeof ga);
	mlm_val_batch(&d, d.tok, 1337, 2, 3, 4, T, b, gb);
	assert_memory_not_equal(ga, gb, sizeof ga);
	/* each window begins at a line: [CLS], then the line's first letter */
	for (int w = 0; w < 4; w++) {
		assert_int_equal(a[w * T], d.tok->bos_id);
		char buf[8];
		tok_piece(d.tok, ga[w * T + 1] >= 0 ? ga[w * T + 1] : a[w * T + 1], buf, sizeof buf);
		assert_true(buf[0] != '\n');
	}
	dataset_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vocabulary),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_loss_positions),
		cmocka_unit_test(test_val_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
