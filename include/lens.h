/*
 * lens.h — the logit lens (nostalgebraist 2020; TransformerLens, Ecco): the
 * residual stream at each depth read out as if it were the last layer's,
 * through the final norm and the output layer.  Where in the stack does
 * the model's prediction appear?
 *
 * Depth d = 0 is the embeddings (the input of block 0), d = l + 1 the
 * stream after block l; depth L is the model's own output, so its lens is
 * exactly the run's logits.  The run's options (sharing, placement, mask,
 * ablations) are in its residual stream already, so a lens of a variant
 * is that variant's.
 */
#ifndef ATTNSCOPE_LENS_H
#define ATTNSCOPE_LENS_H

#include "model.h"
#include "util.h"

struct lens {
	int D;         /* depths: n_layer + 1 */
	int T, V;
	int *final;    /* (T) the model's most likely next token at each position */
	float *p;      /* (D, T) the probability each depth's lens gives final[i] at i */
	int *top;      /* (D, T) each depth's own most likely token */
};

/* Reads batch 0 of run r (a finished pass of model m: r->t tokens) through
 * the lens at every depth and position; the last depth reads the run's own
 * logits when it kept them (RUN_LOGITS: the same numbers).  Out of memory
 * is fatal; nothing else fails.  Free with lens_free. */
void lens_run(const struct model *m, const struct run *r, struct lens *out);
void lens_free(struct lens *l);

/* The name of depth d: "embeddings" for 0, "after K" for the stream after
 * block K = d - 1. */
void lens_depth_name(int d, char *buf, size_t size);

/* The lens logits (V) at depth d, position i of run r into z. */
void lens_logits(const struct model *m, const struct run *r, int d, int i, float *z);

#endif
