/*
 * heads.h — what each attention head does: scores over its attention
 * pattern, an induction score on a repeated random sequence, and a role
 * label derived from them.  Plain structs and pure functions over runs (the
 * induction score runs the model once on its own sequence); nothing here
 * prints.  A storage module records struct head_scores as it is.
 *
 * Definitions (README "Head scores"; A is one head's (T, T) attention of
 * batch 0, row i = query, column j = key, each row summing to 1; "rows
 * i >= 1" because under a causal mask row 0 can only see itself):
 *
 *   entropy        mean over all T rows of -sum_j A[i][j] ln A[i][j]  (nats;
 *                  the same number `stats` shows)
 *   max_weight     mean over rows i >= 1 of max_j A[i][j]  (how sharp a row
 *                  gets; row 0 is left out, its maximum is always 1 under
 *                  a causal mask)
 *   prev_token     mean over rows i >= 1 of A[i][i-1]
 *   first_token    mean over rows i >= 1 of A[i][0]  ("sink" score)
 *   self           mean over rows i >= 1 of A[i][i]
 *   local          mean over rows i >= 1 of sum of A[i][j] for
 *                  max(0, i-3) <= j <= i-1  (the 3 keys just before the
 *                  query, not the query itself)
 *   mean_distance  mean over all T rows of sum_j A[i][j] * |i - j|  (tokens;
 *                  equals sum_j A[i][j] * (i - j) under causal and window
 *                  masks; with mask none, looking ahead counts as distance too)
 *   induction      on a sequence of 2n tokens R R (after a BOS token when the
 *                  vocabulary has one), R being n random non-special tokens,
 *                  distinct when the vocabulary has at least n of them:
 *                  mean over k = 0..n-1 of A[s+n+k][s+k+1], s = 1 with BOS
 *                  else 0 — the weight each token of the second copy puts on
 *                  the token that followed its earlier occurrence.
 *                  n = min(32, (context - s) / 2), seed HEADS_SEED; the run
 *                  uses the session's current options.  NAN when n < 2.
 *
 * Roles, first match wins (thresholds HEADS_*_MIN below):
 *   induction       induction >= 0.3
 *   previous-token  prev_token > 0.5
 *   sink            first_token > 0.5
 *   self            self > 0.5
 *   local           local >= 0.7
 *   broad           anything else
 */
#ifndef ATTNSCOPE_HEADS_H
#define ATTNSCOPE_HEADS_H

#include <stdint.h>

#include "model.h"
#include "util.h"

enum head_role {
	HEAD_BROAD,
	HEAD_PREV_TOKEN,
	HEAD_SINK,
	HEAD_SELF,
	HEAD_LOCAL,
	HEAD_INDUCTION,
	HEAD_N_ROLES,
};

/* Thresholds of the role labels (see above). */
#define HEADS_INDUCTION_MIN 0.3  /* induction >= */
#define HEADS_PREV_MIN 0.5       /* prev_token > */
#define HEADS_SINK_MIN 0.5       /* first_token > */
#define HEADS_SELF_MIN 0.5       /* self > */
#define HEADS_LOCAL_MIN 0.7      /* local >= */
#define HEADS_LOCAL_BACK 3       /* local window: keys i-3 .. i-1 */
#define HEADS_INDUCTION_N 32     /* largest n of the repeated sequence */
#define HEADS_SEED 20240607u     /* seed of the random sequence */

struct head_scores {
	double entropy, max_weight, prev_token, first_token, self, local, mean_distance;
	double induction; /* NAN when not measured */
	enum head_role role;
};

/* Role name ("previous-token", "sink", "self", "local", "induction", "broad")
 * and a short badge for grids ("prev", "sink", "self", "local", "ind", "-"). */
const char *heads_role_name(enum head_role r);
const char *heads_role_badge(enum head_role r);

/* Scores of one (T, T) attention pattern (everything but induction, which
 * is set to NAN) and the role those give.  T >= 1. */
void heads_score_pattern(const float *att, int T, struct head_scores *out);

/* The role label of a set of scores (induction may be NAN: not induction). */
enum head_role heads_classify(const struct head_scores *s);

/* Induction score of one (T, T) pattern over a sequence whose positions
 * start .. start+2n-1 hold R R: mean over k = 0..n-1 of
 * att[start+n+k][start+k+1].  Needs start + 2n <= T and n >= 1. */
double heads_induction_pattern(const float *att, int T, int start, int n);

/* Builds the induction sequence for model m into tokens (at least
 * m->cfg.context ids): returns its length T = start + 2n and sets *start
 * and *n; 0 when the model cannot hold one (context or vocabulary too
 * small: n < 2). */
int heads_induction_tokens(const struct model *m, uint64_t seed, int *tokens, int *start, int *n);

/* Runs m with options o on the induction sequence and writes the induction
 * score of every head to out[l * H + h] (all NAN when the model cannot
 * hold a sequence).  0, or -1 with a message from the forward pass. */
int heads_induction(struct model *m, const struct run_options *o, uint64_t seed, double *out,
		    struct err *e);

/* Scores and roles of every head of run r (batch 0, RUN_ATTN, last pass
 * of r->t tokens) into out[l * H + h].  induction: L*H scores from
 * heads_induction, or NULL (NAN). */
void heads_score_run(const struct run *r, const double *induction, struct head_scores *out);

/* Both: scores of r plus induction measured with m and o.  0 or -1. */
int heads_analyze(struct model *m, const struct run_options *o, const struct run *r,
		  struct head_scores *out, struct err *e);

#endif
