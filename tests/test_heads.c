/*
 * test_heads.c — head scores, role labels, the induction score, the
 * ablation sweep and the variant table.
 *
 *  - Scores and labels on hand-built (T, T) attention patterns: a pure
 *    previous-token head, a pure sink, a diagonal, a local window, uniform
 *    causal attention, and an induction pattern over a repeated sequence.
 *  - A real 2-layer model built by hand (make_circuit below) in which head
 *    0.0 is an exact previous-token head and head 1.0 an induction head
 *    reading what 0.0 wrote: the first is labelled previous-token, the
 *    second induction (score > 0.9), the uniform heads score low.
 *  - sweep: a head whose output-projection columns are zero changes
 *    nothing (delta loss and KL exactly 0); L x H entries; cancel (before
 *    the call and half way through) leaves the session as it was.
 *  - compare variants: with identical K/V heads every G gives KL < 1e-9;
 *    the natively trained shakespeare variants are found beside the model.
 *  - compare_runs: the output drift is the mean relative change of the
 *    last block's output the double-precision reference computes; without
 *    a head the runs hold no logits and KL, top-1 and the loss change are
 *    NAN, the drift the same.
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

#include "analysis.h"
#include "checkpoint.h"
#include "cmd.h"
#include "heads.h"
#include "model.h"
#include "randmodel.h"
#include "ref_forward.h"
#include "session.h"
#include "tokenizer.h"

#define EPS 1e-6

/* ---------------------------------------------------------------- patterns */

enum pattern { PAT_PREV, PAT_SINK, PAT_SELF, PAT_LOCAL, PAT_UNIFORM };

/* A (T, T) causal pattern, malloc'd.  Row 0 always puts 1 on key 0. */
static float *make_pattern(enum pattern p, int T)
{
	float *a = calloc((size_t)T * T, sizeof *a);
	for (int i = 0; i < T; i++) {
		float *row = a + (size_t)i * T;
		switch (p) {
		case PAT_PREV:
			row[i > 0 ? i - 1 : 0] = 1.0f;
			break;
		case PAT_SINK:
			row[0] = 1.0f;
			break;
		case PAT_SELF:
			row[i] = 1.0f;
			break;
		case PAT_LOCAL: { /* equal weight on keys i-3 .. i-1 */
			int lo = i - 3 > 0 ? i - 3 : 0, n = i - lo;
			if (n == 0)
				row[0] = 1.0f;
			for (int j = lo; j < i; j++)
				row[j] = 1.0f / (float)n;
			break;
		}
		case PAT_UNIFORM:
			for (int j = 0; j <= i; j++)
				row[j] = 1.0f / (float)(i + 1);
			break;
		}
	}
	return a;
}

static void test_pattern_prev(void **state)
{
	(void)state;
	int T = 8;
	float *a = make_pattern(PAT_PREV, T);
	struct head_scores s;
	heads_score_pattern(a, T, NULL, &s);
	assert_true(fabs(s.entropy) < EPS);
	assert_true(fabs(s.max_weight - 1.0) < EPS);
	assert_true(fabs(s.prev_token - 1.0) < EPS);
	assert_true(fabs(s.first_token - 1.0 / 7) < EPS); /* row 1's previous token is token 0 */
	assert_true(fabs(s.self) < EPS);
	assert_true(fabs(s.local - 1.0) < EPS);
	assert_true(fabs(s.mean_distance - 7.0 / 8) < EPS); /* rows 1..7 at distance 1, row 0 at 0 */
	assert_true(isnan(s.induction));
	assert_int_equal(s.role, HEAD_PREV_TOKEN);
	assert_string_equal(heads_role_name(s.role), "previous-token");
	free(a);
}

static void test_pattern_sink(void **state)
{
	(void)state;
	int T = 8;
	float *a = make_pattern(PAT_SINK, T);
	struct head_scores s;
	heads_score_pattern(a, T, NULL, &s);
	assert_true(fabs(s.entropy) < EPS);
	assert_true(fabs(s.max_weight - 1.0) < EPS);
	assert_true(fabs(s.first_token - 1.0) < EPS);
	assert_true(fabs(s.prev_token - 1.0 / 7) < EPS);
	assert_true(fabs(s.self) < EPS);
	assert_true(fabs(s.local - 3.0 / 7) < EPS);          /* rows 1, 2, 3 reach key 0 */
	assert_true(fabs(s.mean_distance - 28.0 / 8) < EPS); /* (0 + 1 + ... + 7) / 8 */
	assert_int_equal(s.role, HEAD_SINK);
	assert_string_equal(heads_role_name(s.role), "sink");
	free(a);
}

static void test_pattern_self_local(void **state)
{
	(void)state;
	int T = 8;
	float *a = make_pattern(PAT_SELF, T);
	struct head_scores s;
	heads_score_pattern(a, T, NULL, &s);
	assert_true(fabs(s.self - 1.0) < EPS);
	assert_true(fabs(s.local) < EPS);
	assert_true(fabs(s.mean_distance) < EPS);
	assert_int_equal(s.role, HEAD_SELF);
	free(a);

	a = make_pattern(PAT_LOCAL, T);
	heads_score_pattern(a, T, NULL, &s);
	assert_true(fabs(s.local - 1.0) < EPS);
	/* rows 1, 2, then 1/3 for rows 3..7 */
	assert_true(fabs(s.prev_token - (1.0 + 0.5 + 5.0 / 3) / 7) < EPS);
	assert_true(fabs(s.self) < EPS);
	assert_int_equal(s.role, HEAD_LOCAL);
	free(a);
}

static void test_pattern_uniform(void **state)
{
	(void)state;
	int T = 8;
	float *a = make_pattern(PAT_UNIFORM, T);
	struct head_scores s;
	heads_score_pattern(a, T, NULL, &s);
	double ent = 0, one = 0, local = 0;
	for (int i = 0; i < T; i++)
		ent += log(i + 1.0);
	for (int i = 1; i < T; i++) {
		one += 1.0 / (i + 1);
		local += (i < 3 ? i : 3) / (i + 1.0);
	}
	assert_true(fabs(s.entropy - ent / T) < EPS);
	assert_true(fabs(s.max_weight - one / 7) < EPS);
	assert_true(fabs(s.prev_token - one / 7) < EPS);
	assert_true(fabs(s.first_token - one / 7) < EPS);
	assert_true(fabs(s.self - one / 7) < EPS);
	assert_true(fabs(s.local - local / 7) < EPS);
	assert_true(fabs(s.mean_distance - 1.75) < EPS); /* row i: i/2; mean of 0..3.5 */
	assert_int_equal(s.role, HEAD_BROAD);
	free(a);

	/* short texts: uniform attention is never "local", "previous" or "sink" */
	for (int t = 2; t <= 40; t++) {
		a = make_pattern(PAT_UNIFORM, t);
		heads_score_pattern(a, t, NULL, &s);
		assert_int_equal(s.role, HEAD_BROAD);
		free(a);
	}
}

static void test_induction_pattern(void **state)
{
	(void)state;
	for (int start = 0; start <= 1; start++) {
		int n = 8, T = start + 2 * n;
		/* induction: second copy n+k attends k+1; first copy attends itself */
		float *a = calloc((size_t)T * T, sizeof *a);
		for (int i = 0; i < T; i++)
			a[(size_t)i * T + i] = 1.0f;
		for (int k = 0; k < n; k++) {
			int q = start + n + k;
			a[(size_t)q * T + q] = 0.0f;
			a[(size_t)q * T + start + k + 1] = 1.0f;
		}
		assert_true(fabs(heads_induction_pattern(a, T, start, n) - 1.0) < EPS);
		free(a);

		float *u = make_pattern(PAT_UNIFORM, T), *p = make_pattern(PAT_PREV, T);
		double iu = heads_induction_pattern(u, T, start, n);
		assert_true(iu < 0.1);
		assert_true(heads_induction_pattern(p, T, start, n) < EPS);
		struct head_scores s;
		heads_score_pattern(u, T, NULL, &s);
		s.induction = iu;
		assert_int_equal(heads_classify(&s), HEAD_BROAD);
		free(u);
		free(p);
	}
}

static void test_classify_order(void **state)
{
	(void)state;
	struct head_scores s = { .offset = 1, .offset_weight = 0.9, .local = 0.95, .induction = NAN };
	assert_int_equal(heads_classify(&s), HEAD_PREV_TOKEN);
	s.induction = 0.5;
	assert_int_equal(heads_classify(&s), HEAD_INDUCTION);
	s.induction = 0.29;
	assert_int_equal(heads_classify(&s), HEAD_PREV_TOKEN);
	s.offset = 4;
	assert_int_equal(heads_classify(&s), HEAD_OFFSET);
	s.offset_weight = 0.5; /* strictly more than half */
	assert_int_equal(heads_classify(&s), HEAD_LOCAL);
	s.local = 0.69;
	assert_int_equal(heads_classify(&s), HEAD_BROAD);
	s.delim = 0.6;
	s.delim_share = 0.3; /* exactly twice the share is enough */
	assert_int_equal(heads_classify(&s), HEAD_DELIM);
	s.delim_share = 0.31;
	assert_int_equal(heads_classify(&s), HEAD_BROAD);
	s.sink = 0.6;
	s.self = 0.6; /* impossible together, but the order decides */
	assert_int_equal(heads_classify(&s), HEAD_SINK);
	for (int r = 0; r < HEAD_N_ROLES; r++) {
		assert_non_null(heads_role_name((enum head_role)r));
		assert_true(strlen(heads_role_badge((enum head_role)r)) <= 5);
	}
}

/* ------------------------------------------------------------ test models */

static struct tokenizer *char_tok(const char *chars, int with_bos)
{
	uint32_t cps[128];
	int n = 0;
	for (const char *p = chars; *p; p++)
		cps[n++] = (uint32_t)(unsigned char)*p;
	struct err e;
	struct tokenizer *t = tok_char_new(cps, n, with_bos, &e);
	assert_non_null(t);
	return t;
}

/* A seeded random model with sharp attention (like tool_mkmodel). */
static struct model *make_random(int L, int H, int K, int with_bos, uint64_t seed)
{
	struct model_config c;
	config_default(&c);
	c.d_model = 32;
	c.n_layer = L;
	c.n_head = H;
	c.n_kv_head = K;
	c.d_ff = 64;
	c.context = 64;
	struct tokenizer *t = char_tok("abcdefghijklmnopqrstuvwxyz ,.:;'!?TBFO\n", with_bos);
	c.vocab_size = t->vocab_size;
	struct err e;
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	m->tok = t;
	model_init_random(m, seed);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 20.0f;
	m->name = xstrdup("testmodel");
	return m;
}

/*
 * make_circuit: a hand-set 2-layer, 2-head model (RMSNorm pre-norm, learned
 * positions, no biases, zero MLPs, tied embeddings; d_model 64, d_head 32,
 * context 16, vocabulary <unk> a..p).  The residual stream has three blocks:
 *   dims  0..15  position p (wpe[p] = e_p)
 *   dims 16..32  token t    (wte[t] = e_{16+t})
 *   dims 33..49  the previous token, written by head 0.0
 * The stream has 2 (then 3) unit entries, so the norm scales it by
 * sqrt(64/2) = 5.66 (then sqrt(64/3) = 4.62).
 *   Head 0.0: query row d reads position d+1 (x 4), key row d reads
 *   position d, so q_i . k_j / sqrt(32) = 22.6 [j == i-1]: weight on i-1 is
 *   1 - O(16 e^-22.6).  Its value is the token block; the output projection
 *   writes it (x 1/5.66) into the previous-token block: an exact
 *   previous-token head.
 *   Head 1.0: query = current token (x 6), key = the previous-token block,
 *   score 22.6 when key j's previous token is the query's token: on R R it
 *   attends from n+k to k+1, an induction head.  (k = 0 splits 1/2 with key
 *   0, whose "previous token" block holds its own token, so the score is
 *   (0.5 + 7) / 8 = 0.94.)
 *   Heads 0.1 and 1.1 are zero: uniform attention.  Layer 1 writes nothing.
 */
static struct model *make_circuit(void)
{
	struct model_config c;
	config_default(&c);
	c.norm = NORM_RMS;
	c.bias = false;
	c.d_model = 64;
	c.n_layer = 2;
	c.n_head = 2;
	c.n_kv_head = 2;
	c.d_ff = 64;
	c.context = 16;
	struct tokenizer *t = char_tok("abcdefghijklmnop", 0);
	c.vocab_size = t->vocab_size; /* 17 */
	struct err e;
	struct model *m = model_new(&c, &e);
	if (!m)
		fail_msg("model_new: %s", e.msg);
	m->tok = t;
	m->name = xstrdup("circuit");
	int C = 64, D = 32, QKV = 6 * D;
	enum { POS = 0, TOK = 16, PREV = 33 };
	for (int p = 0; p < 16; p++)
		m->p[P_WPE][(size_t)p * C + POS + p] = 1.0f;
	for (int v = 0; v < 17; v++)
		m->p[P_WTE][(size_t)v * C + TOK + v] = 1.0f;
	float *w0 = m->p[P_QKVW], *w1 = m->p[P_QKVW] + (size_t)QKV * C;
	/* rows: Q head 0 at 0, Q head 1 at D, K head 0 at 2D, K head 1 at 3D, V head 0 at 4D */
	for (int d = 0; d + 1 < 16; d++)
		w0[(size_t)d * C + POS + d + 1] = 4.0f;
	for (int d = 0; d < 16; d++)
		w0[(size_t)(2 * D + d) * C + POS + d] = 1.0f;
	for (int d = 0; d < 17; d++)
		w0[(size_t)(4 * D + d) * C + TOK + d] = 1.0f;
	float *proj0 = m->p[P_ATTPROJW]; /* (C out, C in), in = h * D + d */
	for (int d = 0; d < 17; d++)
		proj0[(size_t)(PREV + d) * C + d] = 1.0f / sqrtf(32.0f);
	for (int d = 0; d < 17; d++) {
		w1[(size_t)d * C + TOK + d] = 6.0f;
		w1[(size_t)(2 * D + d) * C + PREV + d] = 1.0f;
	}
	return m;
}

/* ---------------------------------------------------------- session helper */

struct fixture {
	struct session s;
	FILE *out;
	char *buf;
	size_t len;
};

static struct fixture *fixture_new(struct model *m, const char *text)
{
	struct fixture *f = calloc(1, sizeof *f);
	f->out = open_memstream(&f->buf, &f->len);
	session_init(&f->s, f->out);
	f->s.quiet = true;
	f->s.model = m;
	f->s.model_spec = xstrdup(m->name);
	run_options_native(m, &f->s.native);
	f->s.opt = f->s.native;
	struct err e;
	if (session_set_text(&f->s, text, &e) != 0)
		fail_msg("session_set_text: %s", e.msg);
	return f;
}

static void fixture_free(struct fixture *f)
{
	session_free(&f->s);
	fclose(f->out);
	free(f->buf);
	free(f);
}

/* Clears the output captured so far. */
static void out_reset(struct fixture *f)
{
	fclose(f->out);
	free(f->buf);
	f->buf = NULL;
	f->len = 0;
	f->out = open_memstream(&f->buf, &f->len);
	f->s.out = f->out;
}

static const char *out_text(struct fixture *f)
{
	fflush(f->out);
	return f->buf ? f->buf : "";
}

static void run_ok(struct fixture *f, const char *line)
{
	struct err e = { { 0 } };
	int rc = cmd_run_line(&f->s, line, &e);
	if (rc != 0)
		fail_msg("%s: %s", line, e.msg);
}

static int count_lines_starting(const char *s, const char *prefix)
{
	int n = 0;
	size_t k = strlen(prefix);
	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, k);
	return n;
}

/* ------------------------------------------------------------ model tests */

static void test_circuit_roles(void **state)
{
	(void)state;
	struct model *m = make_circuit();
	struct fixture *f = fixture_new(m, "abcdefghijklmnop");
	struct head_scores sc[4];
	struct err e;
	assert_int_equal(heads_analyze(m, &f->s.opt, f->s.run, f->s.tokens, sc, &e), 0);
	print_message("0.0 prev %.4f induct %.4f | 1.0 induct %.4f | 0.1 induct %.4f | 1.1 induct %.4f\n",
		      sc[0].prev_token, sc[0].induction, sc[2].induction, sc[1].induction, sc[3].induction);
	assert_true(sc[0].prev_token > 0.9);
	assert_int_equal(sc[0].role, HEAD_PREV_TOKEN);
	assert_true(sc[0].induction < 0.1);
	assert_true(sc[2].induction > 0.9);
	assert_int_equal(sc[2].role, HEAD_INDUCTION);
	assert_true(sc[1].induction < 0.1); /* uniform heads */
	assert_true(sc[3].induction < 0.1);
	assert_int_equal(sc[1].role, HEAD_BROAD);
	assert_int_equal(sc[3].role, HEAD_BROAD);

	/* the exact previous-token head: every row i >= 1 puts > 0.9 on i-1 */
	const float *a = run_att(f->s.run, 0, 0, 0);
	for (int i = 1; i < f->s.n_tokens; i++)
		assert_true(a[(size_t)i * f->s.n_tokens + i - 1] > 0.9f);

	/* the command prints every head with its role */
	run_ok(f, "heads");
	const char *o = out_text(f);
	assert_non_null(strstr(o, "\n0.0    previous-token"));
	assert_non_null(strstr(o, "\n1.0    induction"));
	assert_int_equal(count_lines_starting(o, "0."), 2);
	assert_int_equal(count_lines_starting(o, "1."), 2);
	out_reset(f);
	run_ok(f, "heads --layer 1");
	o = out_text(f);
	assert_int_equal(count_lines_starting(o, "0."), 0);
	assert_int_equal(count_lines_starting(o, "1."), 2);
	struct err e2;
	assert_int_equal(cmd_run_line(&f->s, "heads --layer 2", &e2), -1);
	assert_int_equal(cmd_run_line(&f->s, "heads --bogus", &e2), -1);
	fixture_free(f);
}

static void test_induction_tokens(void **state)
{
	(void)state;
	for (int bos = 0; bos <= 1; bos++) {
		struct model *m = make_random(1, 2, 2, bos, 3);
		int tokens[64], start, n;
		int T = heads_induction_tokens(m, HEADS_SEED, tokens, &start, &n);
		assert_int_equal(start, bos);
		assert_int_equal(n, 31 + (bos ? 0 : 1)); /* min(32, (64 - start) / 2) */
		assert_int_equal(T, start + 2 * n);
		if (bos)
			assert_int_equal(tokens[0], m->tok->bos_id);
		for (int k = 0; k < n; k++) {
			assert_int_equal(tokens[start + k], tokens[start + n + k]);
			assert_true(tokens[start + k] != m->tok->unk_id && tokens[start + k] != m->tok->bos_id);
			for (int j = 0; j < k; j++) /* distinct: the vocabulary has enough tokens */
				assert_true(tokens[start + j] != tokens[start + k]);
		}
		int again[64], s2, n2;
		assert_int_equal(heads_induction_tokens(m, HEADS_SEED, again, &s2, &n2), T);
		assert_memory_equal(tokens, again, (size_t)T * sizeof *tokens);
		model_free(m);
	}
}

/* ------------------------------------------------------------------ sweep */

/* Zeroes the output-projection columns of head l.h. */
static void zero_head_output(struct model *m, int l, int h)
{
	int C = m->cfg.d_model, D = cfg_d_head(&m->cfg);
	float *w = m->p[P_ATTPROJW] + (size_t)l * C * C;
	for (int o = 0; o < C; o++)
		for (int d = 0; d < D; d++)
			w[(size_t)o * C + h * D + d] = 0.0f;
}

static void test_sweep_zero_head(void **state)
{
	(void)state;
	struct model *m = make_random(2, 4, 4, 0, 11);
	zero_head_output(m, 1, 2);
	struct fixture *f = fixture_new(m, "To be, or not to be, that is the question:");
	struct sweep_result r;
	struct err e;
	assert_int_equal(sweep_run(m, &f->s.opt, f->s.tokens, 1, f->s.n_tokens, NULL, NULL, NULL, &r, &e), 0);
	assert_int_equal(r.L * r.H, 8);
	assert_int_equal(r.done, r.total);
	assert_int_equal(r.total, 1 + 8 + 2);
	assert_true(r.head[1 * 4 + 2].delta_loss == 0.0);
	assert_true(r.head[1 * 4 + 2].kl == 0.0);
	assert_true(r.head[1 * 4 + 2].top1_agree == 1.0);
	int moved = 0;
	for (int i = 0; i < 8; i++) {
		assert_false(isnan(r.head[i].delta_loss));
		moved += r.head[i].kl > 1e-6;
	}
	assert_true(moved >= 4); /* the other heads do something */
	for (int l = 0; l < 2; l++)
		assert_false(isnan(r.layer[l].delta_loss));
	assert_true(fabs(r.base_loss - f->s.run->loss) < 1e-9);
	int idx[8];
	sweep_rank(&r, false, idx);
	for (int i = 1; i < 8; i++)
		assert_true(r.head[idx[i - 1]].delta_loss >= r.head[idx[i]].delta_loss);
	int n = sweep_removable(&r, 0.01), want = 0;
	for (int i = 0; i < 8; i++)
		want += r.head[i].delta_loss < 0.01 * r.base_loss;
	assert_int_equal(n, want);
	assert_true(n >= 1); /* 1.2 at least */
	sweep_free(&r);

	/* the command: a table with one row per layer, one value per head + all */
	run_ok(f, "sweep");
	const char *o = out_text(f);
	assert_int_equal(count_lines_starting(o, "    0 "), 1);
	assert_int_equal(count_lines_starting(o, "    1 "), 1);
	assert_non_null(strstr(o, "can each be removed alone for under 1% loss increase"));
	const char *row1 = strstr(o, "\n    1 ");
	assert_non_null(row1);
	double v[5];
	assert_int_equal(sscanf(row1, " %*d %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4]), 5);
	assert_true(v[2] == 0.0);
	out_reset(f);
	run_ok(f, "sweep --metric kl");
	assert_non_null(strstr(out_text(f), "KL(unablated || ablated)"));
	struct err e2;
	assert_int_equal(cmd_run_line(&f->s, "sweep --metric foo", &e2), -1);
	assert_int_equal(cmd_run_line(&f->s, "sweep --tokens 5", &e2), -1);
	fixture_free(f);
}

static volatile sig_atomic_t cancel_flag;

static void cancel_after_3(void *ctx, int done, int total)
{
	(void)ctx;
	(void)total;
	if (done == 3)
		cancel_flag = 1;
}

/* A sweep over two windows at once averages them: every loss change and
 * KL is the mean of the two windows' own sweeps (same number of positions
 * each), and agreement too. */
static void test_sweep_windows_average(void **state)
{
	(void)state;
	struct model *m = make_random(2, 4, 4, 0, 12);
	struct fixture *f = fixture_new(m, "To be, or not to be, that is the question:");
	int T = f->s.n_tokens / 2;
	struct sweep_result both, a, b;
	struct err e;
	assert_int_equal(sweep_run(m, &f->s.opt, f->s.tokens, 2, T, NULL, NULL, NULL, &both, &e), 0);
	assert_int_equal(sweep_run(m, &f->s.opt, f->s.tokens, 1, T, NULL, NULL, NULL, &a, &e), 0);
	assert_int_equal(sweep_run(m, &f->s.opt, f->s.tokens + T, 1, T, NULL, NULL, NULL, &b, &e), 0);
	assert_int_equal(both.B, 2);
	assert_true(fabs(both.base_loss - (a.base_loss + b.base_loss) / 2) < 1e-5);
	for (int i = 0; i < both.L * both.H; i++) {
		assert_true(fabs(both.head[i].delta_loss - (a.head[i].delta_loss + b.head[i].delta_loss) / 2) < 1e-5);
		assert_true(fabs(both.head[i].kl - (a.head[i].kl + b.head[i].kl) / 2) < 1e-6);
		assert_true(fabs(both.head[i].top1_agree - (a.head[i].top1_agree + b.head[i].top1_agree) / 2) < 1e-9);
	}
	sweep_free(&both);
	sweep_free(&a);
	sweep_free(&b);
	fixture_free(f);
}

static void test_sweep_cancel(void **state)
{
	(void)state;
	struct model *m = make_random(2, 4, 2, 0, 5);
	struct fixture *f = fixture_new(m, "First Citizen: Before we proceed");
	run_ok(f, "ablate 0.1");
	run_ok(f, "attn mha");
	struct run_options before = f->s.opt;
	double loss = f->s.run->loss;
	f->s.cancel = &cancel_flag;
	cancel_flag = 1;
	struct err e;
	out_reset(f);
	assert_int_equal(cmd_run_line(&f->s, "sweep", &e), -1);
	assert_string_equal(e.msg, "sweep cancelled");
	assert_true(run_options_equal(&f->s.opt, &before));
	assert_true(session_ready(&f->s));
	assert_true(f->s.run->loss == loss);
	assert_int_equal(f->s.opt.kv_heads, 4);

	/* half way through */
	cancel_flag = 0;
	struct sweep_result r;
	assert_int_equal(sweep_run(m, &f->s.opt, f->s.tokens, 1, f->s.n_tokens, &cancel_flag, cancel_after_3,
				   NULL, &r, &e), -1);
	assert_true(r.cancelled);
	assert_int_equal(r.done, 3);
	assert_false(isnan(r.head[0].delta_loss));
	assert_false(isnan(r.head[1].delta_loss));
	assert_true(isnan(r.head[2].delta_loss));
	assert_true(isnan(r.layer[1].delta_loss));
	sweep_free(&r);

	/* the session still works: a full sweep and other commands */
	cancel_flag = 0;
	run_ok(f, "sweep");
	assert_true(run_options_equal(&f->s.opt, &before));
	assert_true(session_ready(&f->s));
	assert_non_null(strstr(out_text(f), "(the session's ablations cleared)"));
	run_ok(f, "restore all");
	run_ok(f, "heads");
	f->s.cancel = NULL;
	fixture_free(f);
}

/* -------------------------------------------------------------- compare */

/* Copies K/V head 0 of every layer over the other K/V heads. */
static void identical_kv(struct model *m)
{
	const struct model_config *c = &m->cfg;
	int H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), C = c->d_model;
	int rows = cfg_qkv_rows(c, K);
	for (int l = 0; l < c->n_layer; l++) {
		float *w = m->p[P_QKVW] + (size_t)l * rows * C;
		float *b = m->p[P_QKVB] ? m->p[P_QKVB] + (size_t)l * rows : NULL;
		for (int part = 0; part < 2; part++) {
			int off = H + part * K;
			for (int k = 1; k < K; k++) {
				memcpy(w + (size_t)(off + k) * D * C, w + (size_t)off * D * C,
				       (size_t)D * C * sizeof(float));
				if (b)
					memcpy(b + (size_t)(off + k) * D, b + (size_t)off * D, (size_t)D * sizeof(float));
			}
		}
	}
	model_clear_cache(m);
}

static void test_compare_identical_kv(void **state)
{
	(void)state;
	for (int K = 4; K >= 2; K -= 2) {
		struct model *m = make_random(2, 4, K, 0, 21 + (uint64_t)K);
		/* biases non-zero so that pooling them is exercised too */
		struct rng g;
		rng_seed(&g, 9);
		for (size_t i = 0; i < m->psize[P_QKVB]; i++)
			m->p[P_QKVB][i] = 0.3f * rng_normal(&g);
		identical_kv(m);
		struct fixture *f = fixture_new(m, "O Romeo, Romeo, wherefore art thou Romeo?");
		struct variant_row rows[VARIANTS_MAX];
		int n = variant_list(m, rows, VARIANTS_MAX);
		assert_int_equal(n, 1 + 2 + 2); /* native, the two other G of {4, 2, 1}, norm, mask */
		assert_int_equal(rows[0].kv_heads, K);
		int T = f->s.n_tokens, n_g = 0;
		struct run *ref = run_new(&m->cfg, 1, T, RUN_LOGITS), *w = run_new(&m->cfg, 1, T, RUN_LOGITS);
		struct err e;
		assert_int_equal(model_forward(m, &rows[0].opt, f->s.tokens, NULL, 1, T, ref, &e), 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(variant_measure(m, &rows[i].opt, f->s.tokens, 1, T, ref, w, &rows[i], &e), 0);
			print_message("K=%d %-14s loss %.6f KL %.3g top-1 %.3f\n", K, rows[i].name, rows[i].loss,
				      rows[i].kl, rows[i].top1_agree);
			bool sharing = rows[i].opt.placement == m->cfg.placement && rows[i].opt.mask == MASK_CAUSAL;
			if (sharing) {
				n_g++;
				assert_true(rows[i].kl < 1e-9);
				assert_true(rows[i].top1_agree == 1.0);
				assert_true(fabs(rows[i].loss - ref->loss) < 1e-5);
			}
			assert_true(rows[i].kv_bytes ==
				    kv_cache_bytes(2, rows[i].kv_heads, T, cfg_d_head(&m->cfg), 4));
		}
		assert_int_equal(n_g, 3); /* G = 4, 2, 1 */
		assert_true(rows[n - 1].kl > 1e-6); /* mask none does change things */
		run_free(ref);
		run_free(w);

		run_ok(f, "compare variants");
		const char *o = out_text(f);
		assert_non_null(strstr(o, K == 4 ? "native (mha)" : "native (gqa 2)"));
		assert_non_null(strstr(o, "\nmqa "));
		assert_non_null(strstr(o, K == 4 ? "\ngqa 2 " : "\nmha "));
		assert_non_null(strstr(o, "\npost-norm "));
		assert_non_null(strstr(o, "\nmask none "));
		assert_null(strstr(o, "[trained]"));
		fixture_free(f);
	}
}

static void test_compare_args_and_corpus(void **state)
{
	(void)state;
	struct model *m = make_random(2, 4, 4, 0, 2);
	struct fixture *f = fixture_new(m, "abc");
	struct err e;
	assert_int_equal(cmd_run_line(&f->s, "compare 1 2", &e), -1);
	assert_non_null(strstr(e.msg, "no session database"));
	assert_int_equal(cmd_run_line(&f->s, "compare variants --bogus 3", &e), -1);

	char dir[] = "/tmp/attnscope-heads.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/corpus.txt", dir);
	FILE *cf = fopen(path, "w");
	for (int i = 0; i < 40; i++)
		fprintf(cf, "Now is the winter of our discontent\n");
	fclose(cf);
	char line[400];
	snprintf(line, sizeof line, "sweep --corpus %s --tokens 30", path);
	run_ok(f, line);
	assert_non_null(strstr(out_text(f), "the last 30 tokens of"));
	out_reset(f);
	snprintf(line, sizeof line, "compare variants --corpus %s", path);
	run_ok(f, line);
	assert_non_null(strstr(out_text(f), "the last 64 tokens of")); /* min(context 64, 256) */
	/* more than the context: whole windows of it */
	out_reset(f);
	snprintf(line, sizeof line, "compare variants --corpus %s --tokens 130", path);
	run_ok(f, line);
	assert_non_null(strstr(out_text(f), "the last 128 tokens of"));
	assert_non_null(strstr(out_text(f), "as 2 windows of 64 (the context)"));
	snprintf(line, sizeof line, "sweep --corpus %s/missing.txt", dir);
	assert_int_equal(cmd_run_line(&f->s, line, &e), -1);
	unlink(path);
	rmdir(dir);
	assert_true(session_ready(&f->s));
	fixture_free(f);
}

/* A "shakespeare" model with a natively trained -gqa beside it (same
 * vocabulary) and an -mqa with another vocabulary: the first becomes a row,
 * the second is skipped with a note, -postnorm is reported missing. */
static void test_compare_trained_family(void **state)
{
	(void)state;
	char dir[] = "/tmp/attnscope-family.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p_base[256], p_gqa[256], p_mqa[256];
	snprintf(p_base, sizeof p_base, "%s/shakespeare.safetensors", dir);
	snprintf(p_gqa, sizeof p_gqa, "%s/shakespeare-gqa.safetensors", dir);
	snprintf(p_mqa, sizeof p_mqa, "%s/shakespeare-mqa.safetensors", dir);
	struct err e;
	struct model *g = make_random(2, 4, 2, 0, 8);
	assert_int_equal(checkpoint_save(g, p_gqa, CKPT_F32, &e), 0);
	model_free(g);
	struct model *q = make_random(2, 4, 1, 0, 9);
	tok_free(q->tok);
	q->tok = char_tok("zyxwvutsrqponmlkjihgfedcba ,.:;'!?TBFO\n", 0); /* same size, other order */
	assert_int_equal(checkpoint_save(q, p_mqa, CKPT_F32, &e), 0);
	model_free(q);

	struct model *m = make_random(2, 4, 4, 0, 7);
	free(m->name);
	m->name = xstrdup("shakespeare");
	m->path = xstrdup(p_base);
	struct fixture *f = fixture_new(m, "To be, or not to be");
	/* run from the temporary directory, so that the shipped models in
	 * ./models are not found by name */
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	run_ok(f, "compare variants");
	assert_int_equal(chdir(cwd), 0);
	const char *o = out_text(f);
	print_message("%s", o);
	assert_non_null(strstr(o, "\nshakespeare-gqa [trained] "));
	assert_null(strstr(o, "\nshakespeare-mqa [trained]"));
	assert_non_null(strstr(o, "skipped shakespeare-mqa: a different vocabulary"));
	assert_non_null(strstr(o, "shakespeare-postnorm: not found"));
	fixture_free(f);
	unlink(p_gqa);
	unlink(p_mqa);
	rmdir(dir);
}

/* stats and the visualizer (head_entropy) report the same entropy and max
 * as `heads` (heads_score_run) for every head of a real run. */
static void test_entropy_matches_scores(void **state)
{
	(void)state;
	struct model *m = make_random(2, 4, 4, 0, 11);
	struct fixture *f = fixture_new(m, "To be, or not to be, that is");
	const struct run *r = f->s.run;
	int L = 2, H = 4;
	struct head_scores sc[8];
	heads_score_run(&m->cfg, r, NULL, NULL, sc);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			double ent, mx;
			head_entropy(r, l, h, &ent, &mx);
			assert_true(fabs(ent - sc[l * H + h].entropy) < 1e-9);
			assert_true(fabs(mx - sc[l * H + h].max_weight) < 1e-9);
			assert_true(mx < 1.0); /* row 0's certain 1 is left out */
		}
	fixture_free(f);
}

/* The reference's drift of the last block's output under o from native. */
static double ref_drift(const struct model *m, const struct run_options *o, const int *tok, int T)
{
	int L = m->cfg.n_layer, C = m->cfg.d_model;
	struct run_options nat;
	run_options_native(m, &nat);
	double *a = malloc((size_t)(L + 1) * T * C * sizeof *a), *b = malloc((size_t)(L + 1) * T * C * sizeof *b);
	struct ref_trace ta = { a, NULL, NULL }, tb = { b, NULL, NULL };
	assert_int_equal(ref_forward(m, &nat, tok, T, NULL, NULL, &ta), 0);
	assert_int_equal(ref_forward(m, o, tok, T, NULL, NULL, &tb), 0);
	double sum = 0;
	for (int i = 0; i < T; i++) {
		const double *x = a + ((size_t)L * T + i) * C, *y = b + ((size_t)L * T + i) * C;
		double d = 0, n = 0;
		for (int j = 0; j < C; j++) {
			d += (y[j] - x[j]) * (y[j] - x[j]);
			n += x[j] * x[j];
		}
		sum += sqrt(d / n);
	}
	free(a);
	free(b);
	return sum / T;
}

static void test_compare_drift(void **state)
{
	(void)state;
	enum { T = 9 };
	int tok[T] = { 1, 5, 2, 9, 3, 3, 7, 0, 4 };
	for (int headless = 0; headless < 2; headless++) {
		struct model *m = randmodel_new(true, 2, 2, 17, 8.0f, 11);
		if (headless) /* what the BERT loader makes of a BertModel */
			m->cfg.head = HEAD_NONE;
		struct run_options nat, o;
		run_options_native(m, &nat);
		o = nat;
		o.kv_heads = 1;
		struct run *a = run_new(&m->cfg, 1, T, RUN_LOGITS), *b = run_new(&m->cfg, 1, T, RUN_LOGITS);
		struct err e;
		assert_int_equal(model_forward(m, &nat, tok, NULL, 1, T, a, &e), 0);
		assert_int_equal(model_forward(m, &o, tok, NULL, 1, T, b, &e), 0);
		struct comparison cmp, same;
		compare_runs(a, b, &cmp);
		compare_runs(a, a, &same);
		double want = ref_drift(m, &o, tok, T);
		print_message("head %s: drift %.6f, reference %.6f, KL %g\n", headless ? "none" : "lm",
			      cmp.drift, want, cmp.kl);
		assert_true(want > 0.01 && fabs(cmp.drift - want) < 1e-5);
		assert_true(same.drift == 0.0);
		if (headless) {
			assert_null(a->logits);
			assert_true(isnan(a->loss) && isnan(cmp.kl) && isnan(cmp.top1_agree) &&
				    isnan(cmp.delta_loss));
		} else {
			assert_true(cmp.kl > 0 && same.kl < 1e-9 && !isnan(cmp.delta_loss));
		}
		run_free(a);
		run_free(b);
		model_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_drift),
		cmocka_unit_test(test_pattern_prev),
		cmocka_unit_test(test_pattern_sink),
		cmocka_unit_test(test_pattern_self_local),
		cmocka_unit_test(test_pattern_uniform),
		cmocka_unit_test(test_induction_pattern),
		cmocka_unit_test(test_classify_order),
		cmocka_unit_test(test_induction_tokens),
		cmocka_unit_test(test_circuit_roles),
		cmocka_unit_test(test_sweep_zero_head),
		cmocka_unit_test(test_sweep_windows_average),
		cmocka_unit_test(test_sweep_cancel),
		cmocka_unit_test(test_compare_identical_kv),
		cmocka_unit_test(test_compare_args_and_corpus),
		cmocka_unit_test(test_compare_trained_family),
		cmocka_unit_test(test_entropy_matches_scores),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
