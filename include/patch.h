/*
 * patch.h — activation patching (after TransformerLens): run a corrupted
 * text with one piece of the clean text's activations put back, and see
 * how much of the clean prediction returns.
 *
 * The metric is the logit difference at the last position between the
 * clean run's most likely next token (its answer) and the corrupted run's:
 *   LD(run) = logit[clean answer] - logit[corrupted answer].
 * Patching site s from the clean run into the corrupted one restores
 *   share(s) = (LD(patched) - LD(corrupted)) / (LD(clean) - LD(corrupted)),
 * 0 when the site carries nothing of the difference, 1 when it carries
 * all of it (it may fall outside [0, 1]).  Sites (model.h's hook sites):
 * each head's output at every position (HOOK_HEADS, that head's columns),
 * and the residual stream after each block at one position at a time
 * (HOOK_RESID, that row).
 */
#ifndef ATTNSCOPE_PATCH_H
#define ATTNSCOPE_PATCH_H

#include <signal.h>

#include "model.h"
#include "util.h"

struct patch_result {
	int L, H, T;
	int clean_answer, corrupt_answer; /* token ids */
	double ld_clean, ld_corrupt;      /* the metric of the two unpatched runs */
	double *heads;                    /* (L, H) share restored by each head's output */
	double *resid;                    /* (L, T) share restored by the stream after block l at t */
};

/* Called after each patched site with the sites done and their total. */
typedef void (*patch_progress_fn)(void *ctx, int done, int total);

/* Patches every site of model m run with options o, clean and corrupt
 * being T tokens each: two whole passes (the corrupted one of k copies),
 * then per k sites of one layer one pass of k sequences resumed at the
 * patched block (a head at layer l reruns blocks l .. L-1, the stream
 * after block l blocks l+1 .. L-1) and the output head on each sequence's
 * last row.  batch: k, the sites a pass; 0 chooses: up to 512 rows a pass
 * (at most H sites) below 128 tokens, else 1, where under a causal or
 * window mask a residual row's pass starts at its row.  Every k gives the
 * same shares up to rounding.  progress (may be NULL) hears after each
 * pass with the sites done.  0, or -1 with e set: a forward pass failed,
 * the two runs predict the same token at the last position (nothing to
 * restore), or cancel was set (checked between passes).  Free with
 * patch_free. */
int patch_run(struct model *m, const struct run_options *o, const int *clean, const int *corrupt,
	      int T, int batch, volatile sig_atomic_t *cancel, patch_progress_fn progress,
	      void *ctx, struct patch_result *out, struct err *e);

void patch_free(struct patch_result *r);

/* Fills order[0 .. L*H) with head indices (l * H + h), the one that
 * restores most first (ties: the lower index first): the ranking `patch`
 * prints. */
void patch_rank(const struct patch_result *r, int *order);

#endif
