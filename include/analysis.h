/*
 * analysis.h — pure functions on finished runs: comparisons with the
 * baseline, next-token predictions, per-head summaries.  Nothing here
 * allocates memory that outlives a call, prints, or touches a terminal.
 */
#ifndef ATTNSCOPE_ANALYSIS_H
#define ATTNSCOPE_ANALYSIS_H

#include <signal.h>
#include <stdbool.h>

#include "model.h"
#include "util.h"

/* How a run differs from the baseline run on the same tokens. */
struct comparison {
	double kl;          /* KL(baseline || run), nats, mean over positions; NaN
			     * when a logit of either run is NaN */
	double top1_agree;  /* fraction of positions whose argmax agrees (NaN
			     * with kl) */
	double delta_loss;  /* run loss - baseline loss (NAN without targets) */
	double drift;       /* the model's output (the last block's, before any
			     * head): mean over positions of ||h_run - h_base|| /
			     * ||h_base|| */
};

/* Compares two runs over the same B x T tokens: KL and agreement averaged
 * over every position of every sequence (NAN, as delta_loss, when the runs
 * have no logits: a model without a head), and the output drift. */
void compare_runs(const struct run *base, const struct run *run, struct comparison *out);

/* The k most likely next tokens at position pos (batch 0): ids[k] and
 * probabilities prob[k], most likely first.  Returns how many were written
 * (min(k, V)). */
int top_tokens(const struct run *r, int pos, int k, int *ids, double *prob);

/* The same for one row of V logits z. */
int logits_top(const float *z, int V, int k, int *ids, double *prob);

/* Probability of token id at position pos (batch 0). */
double token_prob(const struct run *r, int pos, int id);

/* Mean entropy (nats) over query rows, and the mean over rows i >= 1 of
 * each row's largest weight (the `max` of heads.h), of head (l, h), batch 0. */
void head_entropy(const struct run *r, int l, int h, double *entropy, double *max_weight);

/* Entropy (nats) of one row of n attention weights: -sum w ln w over the
 * positive ones (at most ln n when the row sums to 1). */
double row_entropy(const float *w, int n);

/* What the rows of attention of run r (batch 0) add up to, over every
 * layer, head and query: each sums to 1 but under MASK_AFTER_SOFTMAX,
 * whose rows lose the weight the softmax gave to later keys. */
struct row_sums {
	double mean;                   /* over the L * H * T rows */
	double min;                    /* the smallest row's sum... */
	int min_layer, min_head, min_query; /* ...and where it is (the first of equals) */
};
void attention_row_sums(const struct run *r, struct row_sums *out);

/* The sum of row i (query i) of head (l, h)'s weights in run r, batch 0. */
double attention_row_sum(const struct run *r, int l, int h, int i);

/* ------------------------------------------------------------ ablation sweep */

/* One ablation against the unablated run on the same tokens. */
struct ablation {
	double delta_loss;  /* ablated loss - unablated loss, nats (NAN: not run) */
	double kl;          /* KL(unablated || ablated), nats, mean over positions */
	double top1_agree;  /* fraction of positions whose argmax is unchanged */
};

/* The "which heads matter" experiment: every head ablated alone, then every
 * layer's heads together, each compared with the unablated run. */
struct sweep_result {
	int L, H, T;
	int B;                   /* windows of T tokens, averaged over */
	struct run_options opt;  /* the unablated options: the caller's, ablations cleared */
	double base_loss;        /* loss of the unablated run */
	struct ablation *head;   /* (L * H) head l.h alone at [l * H + h]; owned */
	struct ablation *layer;  /* (L) all heads of layer l; owned */
	int done, total;         /* forward passes finished / planned (1 + L*H + L) */
	bool cancelled;
};

/* Called after each forward pass of a sweep (may be NULL). */
typedef void (*sweep_progress_fn)(void *ctx, int done, int total);

/*
 * Runs the sweep of model m under options o (its ablations are cleared
 * first) on tokens: B sequences of T (T >= 2, within the context), whose
 * losses and KLs are averaged over every position, with runs of its own: the
 * caller's runs and options are never touched; each ablated pass computes
 * only the blocks from the ablated layer on (model_forward_from), the
 * earlier ones being the unablated pass's.  *cancel (may be NULL) is
 * polled before every forward pass; when set, the sweep stops, out keeps
 * what finished (the rest NAN), out->cancelled is set and -1 is returned
 * with "sweep cancelled".  0, or -1 with a message.  Free out with
 * sweep_free (also after -1).
 */
int sweep_run(struct model *m, const struct run_options *o, const int *tokens, int B, int T,
	      volatile sig_atomic_t *cancel, sweep_progress_fn progress, void *ctx,
	      struct sweep_result *out, struct err *e);
void sweep_free(struct sweep_result *r);

/* Number of heads whose ablation alone raises the loss by less than
 * frac * base_loss (frac SWEEP_REMOVABLE_FRAC: "under 1% loss increase",
 * what `sweep` reports); a lowered loss counts as removable. */
#define SWEEP_REMOVABLE_FRAC 0.01
int sweep_removable(const struct sweep_result *r, double frac);

/* Fills idx[0 .. L*H) with head indices (l * H + h), the most important
 * first: by delta_loss, or by KL when by_kl (ties: lower index first). */
void sweep_rank(const struct sweep_result *r, bool by_kl, int *idx);

/* ---------------------------------------------------------- variant table */

#define VARIANTS_MAX 40

/* One row of `compare variants`. */
struct variant_row {
	char name[64];           /* "native (mha)", "gqa 2", "mqa", "post-norm", "mask none", ... */
	struct run_options opt;  /* options of the run (of the row's own model when trained) */
	bool trained;            /* a separately trained model, not a conversion */
	int kv_heads;            /* G of the run */
	double loss;             /* mean NLL, nats */
	double ppl;              /* exp(loss) */
	double kl;               /* KL(reference || row), nats, mean over positions */
	double top1_agree;       /* fraction of positions with the reference's argmax */
	double drift;            /* the output's drift from the reference (struct comparison) */
	double kv_bytes;         /* float32 KV cache for the T tokens */
	double forward_ms;       /* one forward pass: the faster of two */
};

/* The conversion rows `compare variants` shows for m, native first:
 * native; every G dividing n_head other than the native one (largest first:
 * "mha" for n_head, "gqa G", "mqa" for 1); the other norm placement;
 * mask none (mask causal for a model whose native mask is none).  Only
 * name, opt and kv_heads are filled.  Returns the count (at most max). */
int variant_list(const struct model *m, struct variant_row *rows, int max);

/* Runs m with options o on tokens (B sequences of T) in work (RUN_LOGITS,
 * room for B x T) and fills out's numbers, comparing with ref: a finished
 * RUN_LOGITS run on the same tokens of a model with the same vocabulary
 * (for conversions, m's native run).  The KV bytes are one sequence's.
 * name and trained are left alone.  0 or -1. */
int variant_measure(struct model *m, const struct run_options *o, const int *tokens, int B, int T,
		    const struct run *ref, struct run *work, struct variant_row *out, struct err *e);

#endif
