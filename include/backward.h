/*
 * backward.h — gradients of the mean loss over the positions with a target
 * (next-token for a decoder, the scored positions of a masked-LM batch for
 * an encoder) with respect to every parameter, for the model as configured
 * (native K/V heads, native norm placement and mask, scaling on, nothing
 * ablated), GPT-NeoX's parallel blocks, partial rotary, exact GELU,
 * BERT's embedding norm and masked-LM head, Qwen3's q/k norm, Gemma's
 * GeGLU, embedding scale, sandwich norms and soft-caps (attention and
 * final), and OLMo-2's blocks without norms before their sub-blocks
 * (post_only) and whole-width q/k norm included.
 *
 * Gradients live in one float block laid out exactly like model->params
 * (use the offsets m->p[i] - m->params), and are ADDED into (+=): zero them
 * in one place before a step.
 */
#ifndef ATTNSCOPE_BACKWARD_H
#define ATTNSCOPE_BACKWARD_H

#include "model.h"
#include "util.h"

/* Whether backward covers config c: 0, or -1 with a message naming the
 * field it does not ("config head none": a model without an output head
 * has no loss). */
int backward_supports(const struct model_config *c, struct err *e);

/* Scratch for one backward pass of up to B x T tokens. */
struct backward_state;

struct backward_state *backward_new(const struct model_config *c, int B, int T);
void backward_free(struct backward_state *s); /* NULL is a no-op */

/*
 * Backpropagates the loss of the last model_forward on r (which must have
 * been made with RUN_TRAIN and the options o, B x T = r->b x r->t) into
 * grads (m->n_params floats, +=).  The loss is the mean NLL over the
 * positions with a target, as in r->loss.
 * Returns 0, or -1 with a message when r was not made for training, o
 * is not the model's native options or backward_supports refuses the
 * config.
 */
int model_backward(const struct model *m, const struct run_options *o, const int *tokens,
		   const int *targets, const struct run *r, float *grads,
		   struct backward_state *s, struct err *e);

#endif
