/*
 * heads.h — what each attention head does: scores over its attention
 * pattern, an induction score on a repeated random sequence, and a role
 * label derived from them.  Plain structs and pure functions over runs (the
 * induction score runs the model once on its own sequence); nothing here
 * prints.  A storage module records struct head_scores as it is.
 *
 * Definitions (docs/heatmaps.md "Head scores"; A is one head's (T, T)
 * attention of batch 0, row i = query, column j = key, each row summing to
 * 1; "rows i >= 1" because under a causal mask row 0 can only see itself):
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
 *   delim          mean over rows i >= 1 of the weight on delimiter keys
 *                  (tokens made only of whitespace and punctuation)
 *   delim_share    mean over rows i >= 1 of the delimiters' share of the
 *                  keys row i may see: what uniform attention puts there
 *   cls, sep       an encoder's special keys (Clark et al. 2019, "What Does
 *                  BERT Look At?"): mean over rows i >= 1 of the weight on
 *                  the [CLS] keys, and on the [SEP] keys; 0 for a model
 *                  whose vocabulary has no [SEP] (every decoder)
 *   cls_share,     mean over rows i >= 1 of those keys' share of the keys
 *   sep_share      row i may see (uniform attention's cls and sep)
 *   spread         entropy over what uniform attention over the visible
 *                  keys scores (mean over all T rows of ln(visible keys));
 *                  1 = as broad as uniform, 0 = one key per row (0 when
 *                  T = 1).  Clark et al. find the broad heads in BERT's
 *                  lowest layers.
 *   sink           max over keys j of sum over rows i >= 1, i != j of
 *                  A[i][j], divided by T - 1: the share of all the rows'
 *                  weight that goes to one fixed key (sink_key = that j;
 *                  the smallest j on ties).  first_token is this for j = 0.
 *   offset         the k != 0, |k| <= max(1, (T-1)/2), with the largest
 *                  offset_weight; offset_weight = mean over the rows i with
 *                  0 <= i-k < T of A[i][i-k] (k > 0 looks back, k < 0 ahead;
 *                  ties go to the smaller |k|, then to k > 0).  k = 1 gives
 *                  prev_token.  |k| is bounded so that at least half the
 *                  rows take part: the last row alone would make any head
 *                  that looks far back an "offset T-1" head.
 *   induction      on a sequence of 2n tokens R R (after a BOS token when the
 *                  vocabulary has one), R being n random non-special tokens,
 *                  distinct when the vocabulary has at least n of them:
 *                  mean over k = 0..n-1 of A[s+n+k][s+k+1], s = 1 with BOS
 *                  else 0 — the weight each token of the second copy puts on
 *                  the token that followed its earlier occurrence.
 *                  n = min(32, (context - s) / 2), seed HEADS_SEED; the run
 *                  uses the session's current options.  NAN when n < 2.
 *
 * Roles, first match wins (thresholds HEADS_* below; each is set well above
 * what uniform attention over the visible keys scores, which
 * heads_score_uniform computes for the same text and mask):
 *   induction       induction >= 0.3
 *   previous-token  offset == 1 and offset_weight > 0.5
 *   next-token      offset == -1 and offset_weight > 0.5 (bidirectional
 *                   models only: a causal mask hides the next token)
 *   offset k        offset == k and offset_weight > 0.5
 *   cls             cls >= 0.5 and cls >= 2 * cls_share
 *   sep             sep >= 0.5 and sep >= 2 * sep_share
 *   sink            sink > 0.5
 *   delimiter       delim >= 0.5 and delim >= 2 * delim_share
 *   self            self > 0.5
 *   local           local >= 0.7
 *   broad           anything else
 */
#ifndef ATTNSCOPE_HEADS_H
#define ATTNSCOPE_HEADS_H

#include <stdbool.h>
#include <stddef.h>
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
	HEAD_OFFSET,
	HEAD_DELIM,
	HEAD_NEXT_TOKEN,
	HEAD_CLS,
	HEAD_SEP,
	HEAD_N_ROLES,
};

/* Thresholds of the role labels (see above). */
#define HEADS_INDUCTION_MIN 0.3  /* induction >= */
#define HEADS_PREV_MIN 0.5       /* offset_weight > (previous-token and offset k) */
#define HEADS_SINK_MIN 0.5       /* sink > */
#define HEADS_DELIM_MIN 0.5      /* delim >= */
#define HEADS_DELIM_LIFT 2.0     /* delim >= this times delim_share */
#define HEADS_SPECIAL_MIN 0.5    /* cls >= and sep >= */
#define HEADS_SPECIAL_LIFT 2.0   /* cls >= this times cls_share (sep likewise) */
#define HEADS_SELF_MIN 0.5       /* self > */
#define HEADS_LOCAL_MIN 0.7      /* local >= */
#define HEADS_LOCAL_BACK 3       /* local window: keys i-3 .. i-1 */
#define HEADS_INDUCTION_N 32     /* largest n of the repeated sequence */
#define HEADS_SEED 20240607u     /* seed of the random sequence */
#define HEADS_PROFILE_MAX 16     /* heads --offsets: offsets 1 .. 16 at most */

struct head_scores {
	double entropy, max_weight, prev_token, first_token, self, local, mean_distance;
	double delim, delim_share;
	double cls, cls_share, sep, sep_share;
	double spread;
	double sink;
	int sink_key;
	int offset;
	double offset_weight;
	double induction; /* NAN when not measured */
	enum head_role role;
};

/* What the scores know of the text besides the attention: which keys are
 * delimiters or an encoder's [CLS] and [SEP], and the mask (which keys
 * row i may see, for the shares). */
struct heads_keys {
	const bool *delim;   /* (T) key j is a delimiter; NULL: none is */
	const bool *cls;     /* (T) key j is [CLS]; NULL: none is */
	const bool *sep;     /* (T) key j is [SEP]; NULL: none is */
	enum mask_kind mask;
	int window;          /* MASK_WINDOW: keys i-window .. i */
};

/* Role name ("previous-token", "next-token", "offset", "cls", "sep",
 * "sink", "delimiter", "self", "local", "induction", "broad") and a short
 * badge for grids ("prev", "next", "off", "cls", "sep", "sink", "delim",
 * "self", "local", "ind", "-"). */
const char *heads_role_name(enum head_role r);
const char *heads_role_badge(enum head_role r);

/* The role named name (a role name or a badge; "offset" and "off" for
 * every offset K).  0, or -1 when no role has that name. */
int heads_role_parse(const char *name, enum head_role *out);

/* The score a role is decided on (induction, offset_weight, sink, delim,
 * self, local; entropy for broad), for ranking heads of one role. */
double heads_role_score(const struct head_scores *s, enum head_role r);

/* Index of the head with role r and the highest heads_role_score among
 * scores[0 .. n), or -1 when none has it. */
int heads_strongest(const struct head_scores *scores, int n, enum head_role r);

/* The role as `heads` prints it: the name, or "offset K" for an offset
 * head; the badge with K for grids ("off5", "off-2").  NUL-terminated. */
void heads_role_text(const struct head_scores *s, char *buf, size_t size);
void heads_badge_text(const struct head_scores *s, char *buf, size_t size);

/* One sentence saying why a head got its role, with its number and what
 * uniform attention scores there (uni: heads_score_uniform of the same T
 * tokens and keys), e.g. "offset 5: 0.62 of each row's weight on the
 * token 5 back (uniform attention: 0.08)".  sink_label: the label of
 * token sink_key (used by the sink role).  NUL-terminated. */
void heads_describe(const struct head_scores *x, const struct head_scores *uni,
		    const struct heads_keys *keys, int T, const char *sink_label, char *buf,
		    size_t size);

/* heads_describe for head scores x of a run on tokens[0 .. T) with options
 * o (the delimiters, the baseline and the sink's label worked out here). */
void heads_explain(const struct tokenizer *t, const int *tokens, int T,
		   const struct run_options *o, const struct head_scores *x, char *buf, size_t size);

/* Offset weight of one (T, T) pattern at offset k (k > 0 back, k < 0
 * ahead): the mean over rows i with 0 <= i-k < T of att[i][i-k]; 0 when
 * no row has that offset. */
double heads_offset_weight(const float *att, int T, int k);

/* The largest |k| the offset score considers for T tokens: max(1, (T-1)/2). */
int heads_offset_max(int T);

/* What uniform attention over the visible keys puts at offset k: the mean
 * over rows i with 0 <= i-k < T of [i-k visible] / (keys row i sees). */
double heads_uniform_offset(int T, const struct heads_keys *keys, int k);

/* Whether a token's text is a delimiter: non-empty and made only of
 * whitespace (newline included) and punctuation, ASCII or Unicode (general
 * and CJK punctuation, full-width forms).  Special tokens (BOS, <unk>) are
 * not. */
bool heads_is_delimiter(const struct tokenizer *t, int id);

/* heads_is_delimiter of each of n tokens into out[0 .. n). */
void heads_delimiters(const struct tokenizer *t, const int *ids, int n, bool *out);

/* Whether t is an encoder's vocabulary with [CLS] and [SEP] (a BOS and
 * an EOS id: WordPiece, a masked-LM character vocabulary). */
bool heads_has_specials(const struct tokenizer *t);

/* Which of n tokens are [CLS] (t's bos_id) and [SEP] (its eos_id) into
 * cls[0 .. n) and sep[0 .. n); all false unless heads_has_specials. */
void heads_specials(const struct tokenizer *t, const int *ids, int n, bool *cls, bool *sep);

/* Scores of one (T, T) attention pattern (everything but induction, which
 * is set to NAN) and the role those give.  T >= 1.  keys NULL: causal
 * mask, no delimiters. */
void heads_score_pattern(const float *att, int T, const struct heads_keys *keys,
			 struct head_scores *out);

/* The scores of uniform attention over the keys each row may see (the
 * baseline the role thresholds are set against), for T tokens. */
void heads_score_uniform(int T, const struct heads_keys *keys, struct head_scores *out);

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
 * of r->t tokens, under each layer's mask: the pass's, or a local layer's
 * window of config c, model.h layer_mask) into out[l * H + h].  c is the
 * run's model's config, or NULL (the pass's mask on every layer).  delim:
 * r->t flags from heads_delimiters, or NULL.  induction: L*H scores from
 * heads_induction, or NULL (NAN). */
void heads_score_run(const struct model_config *c, const struct run *r, const bool *delim,
		     const double *induction, struct head_scores *out);

/* heads_score_run with the keys' delimiters and special tokens (keys'
 * mask and window are taken from the run and c). */
void heads_score_run_keys(const struct model_config *c, const struct run *r,
			  const struct heads_keys *keys, const double *induction,
			  struct head_scores *out);

/* Both: scores of r over the tokens it ran on (for the delimiters and
 * special tokens) plus
 * induction measured with m and o.  0 or -1. */
int heads_analyze(struct model *m, const struct run_options *o, const struct run *r,
		  const int *tokens, struct head_scores *out, struct err *e);

#endif
