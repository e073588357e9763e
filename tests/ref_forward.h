/*
 * ref_forward.h — a deliberately naive, double-precision reference of the
 * forward pass described in include/model.h, for the tests only.
 *
 * It shares no math with src/: plain loops over one head at a time, textbook
 * formulas, every intermediate in double.  It reads the model's float
 * weights through m->p[] (layouts in include/config.h) and does the K/V head
 * conversion itself from the rule in model.h; it never touches the model's
 * K/V cache.  The pitfalls of model.h's enum pitfall are written from the
 * tutorial's description of each mistake: no-transpose reads the flat
 * (T, n*D) buffer as (n, T, D) and back, mask-one-head masks head 0 only,
 * eps0 puts 0 in every norm's square root.
 */
#ifndef ATTNSCOPE_REF_FORWARD_H
#define ATTNSCOPE_REF_FORWARD_H

#include "model.h"

/* Optional intermediates (any member may be NULL). */
struct ref_trace {
	double *resid;    /* (L+1, T, C): block inputs, then the final block output */
	double *att_res;  /* (L, T, C):   block input + attention projection */
	double *atty;     /* (L, T, A):   heads' outputs before projection (ablated heads zeroed; A = H * D) */
};

/* One sequence of T tokens.  logits (T, V) and att (L, H, T, T) are
 * caller-allocated (either may be NULL); trace may be NULL.
 * Returns 0, or -1 for arguments it cannot run (bad token, G not dividing H,
 * T above the context for learned positions). */
int ref_forward(const struct model *m, const struct run_options *o, const int *tokens, int T,
		double *logits, double *att, struct ref_trace *trace);

/* More intermediates, for score decompositions (any member may be NULL). */
struct ref_trace_qk {
	double *mlp;      /* (L, T, C):   the MLP's output, its bias included (not written
			   * without an MLP) */
	double *q;        /* (L, H, T, D): queries as the scores read them (after RoPE) */
	double *k;        /* (L, G, T, D): keys likewise, G = o->kv_heads */
};

/* ref_forward, also filling qk (may be NULL). */
int ref_forward_qk(const struct model *m, const struct run_options *o, const int *tokens, int T,
		   double *logits, double *att, struct ref_trace *trace, struct ref_trace_qk *qk);

/* The same with a padding mask: keys key_len .. T-1 (1 <= key_len <= T) take
 * no part in any query's softmax, on every head (model.h run.key_len for
 * one sequence). */
int ref_forward_padded(const struct model *m, const struct run_options *o, const int *tokens,
		       int T, int key_len, double *logits, double *att, struct ref_trace *trace);

/* ref_forward as the step decoder computes it (decode.h): positions
 * 0 .. prefill-1 in one call over prefill positions, each later position t
 * in a call of its own over t + 1, with its query and key turned by that
 * call's LongRoPE table (the keys before keep theirs); without LongRoPE the
 * numbers of ref_forward.  -1 also for prefill outside 1 .. T. */
int ref_forward_stepped(const struct model *m, const struct run_options *o, const int *tokens,
			int T, int prefill, double *logits, double *att);

/* The angle per position that RoPE turns pair i (of R/2) by under c's
 * scaling (config.h enum rope_scaling) in a call over n_pos positions
 * (LongRoPE's table), in double from the published rules, written apart
 * from the engine's config_rope_freqs.  LongRoPE also scales cos and sin
 * by c->rope_attn_factor, which this angle leaves out. */
double ref_rope_freq_in(const struct model_config *c, int i, int R, int n_pos);

/* ref_rope_freq_in of a call within the original context (n_pos 1). */
double ref_rope_freq(const struct model_config *c, int i, int R);

#endif
