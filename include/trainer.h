/*
 * trainer.h — training as a library: one model, its data, AdamW and the
 * buffers of the step loop (after llm.c's gpt2_forward / gpt2_backward /
 * gpt2_update with the loop in the caller).  train_run (train-run.h)
 * loops over it with resuming, checkpoints and the training record, for
 * `attnscope train` (train.h) and the lab (lab.h).
 *
 * One step: B random windows of T + 1 tokens from the training split
 * (T = the model's context; for the MLM objective made masked-LM inputs,
 * mlm.h), gradients zeroed, forward (RUN_TRAIN),
 * backward, global-norm clipping, AdamW with a warmup + cosine learning
 * rate.  The batch generator and every number are deterministic for a
 * given seed and thread count.
 *
 * Lifetimes: trainer_init borrows the model (whose weights it updates)
 * and the dataset; both must outlive it.  trainer_release frees what the
 * trainer allocated (moments, history, loop buffers), not the model.
 */
#ifndef ATTNSCOPE_TRAINER_H
#define ATTNSCOPE_TRAINER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "model.h"
#include "optim.h"
#include "util.h"

/* What the loss scores:
 *   CLM  each position's next token (a decoder; dataset_sample's windows)
 *   MLM  BERT's masked-LM: windows wrapped as [CLS] ... [SEP] with 15% of
 *        their positions corrupted and scored (mlm.h); the model must be
 *        an encoder (HEAD_MLM) with the vocabulary's [MASK] */
enum train_objective { OBJ_CLM, OBJ_MLM };

/* "clm", "mlm"; the parser returns -1 for any other name. */
const char *train_objective_name(enum train_objective o);
int train_objective_parse(const char *s, enum train_objective *out);

/* How to train: plain data. */
struct train_hparams {
	enum train_objective objective;
	int batch;              /* B windows per step */
	long steps;             /* planned steps: the learning-rate schedule's length */
	long warmup;            /* linear warmup steps */
	double lr;              /* peak learning rate */
	double min_lr_frac;     /* cosine floor, a fraction of lr */
	double weight_decay;    /* AdamW decay of matrices and embeddings */
	double clip;            /* global gradient-norm clip, 0 = off */
	int val_batches;        /* fixed validation batches of B windows */
	uint64_t seed;          /* the batch generator's seed */
};

/* Training defaults of `attnscope train` (batch 16, lr 2e-3, warmup 100,
 * floor 0.1, decay 0.1, clip 1, 8 validation batches, seed 1337), for
 * steps steps. */
void train_hparams_default(struct train_hparams *hp, long steps);

/* One history row per step: loss, lr, global gradient norm, then the
 * gradient norm of each of the L layers (width 3 + L). */
enum { HIST_LOSS, HIST_LR, HIST_GRAD, HIST_LAYER0 };

struct trainer {
	struct model *m;              /* borrowed; updated by every step */
	const struct dataset *d;      /* borrowed */
	struct train_hparams hp;
	struct run_options ro;        /* the model's native options */
	struct adamw opt;
	struct rng rng;               /* the batch generator */
	long step;                    /* steps done */
	uint64_t tokens;              /* tokens seen */
	int hw;                       /* history row width: 3 + L */
	float *hist;                  /* (hist_n, hw) rows, owned */
	size_t hist_n, hist_cap;
	float *val;                   /* (val_n, 2): step, validation loss; owned */
	size_t val_n, val_cap;
	double val_acc;               /* MLM: share of the last validation's scored
				       * positions whose most likely token is the
				       * original one; NAN before it and for CLM */
	/* When not NULL and *stop >= 2, a step in progress is dropped before
	 * it changes anything, and a validation is abandoned (a signal
	 * handler's "stop now"). */
	const volatile sig_atomic_t *stop;
	/* the loop's buffers (B x T) */
	struct run *run;
	struct backward_state *bs;
	float *grads;                 /* m->n_params */
	int *batch_tokens, *batch_targets; /* (B, T) */
};

/* Whether hp's objective fits model m: MLM needs an encoder with the
 * masked-LM head and a vocabulary with [MASK] (mlm_check), CLM a decoder.
 * 0, or -1 with a message. */
int trainer_check_objective(const struct model *m, const struct train_hparams *hp,
			    struct err *e);

/* Sets t up to train m on d from step 0 (zeroed moments, the batch
 * generator seeded from hp->seed).  Cannot fail: the caller has checked
 * the shape and the memory. */
void trainer_init(struct trainer *t, struct model *m, const struct dataset *d,
		  const struct train_hparams *hp);
void trainer_release(struct trainer *t);

/* One optimizer step; appends its history row.  0; 1 when *t->stop asked
 * to stop at once (the step is dropped, the batch generator set back); -1
 * with a message when the loss or the gradient is not finite. */
int trainer_step(struct trainer *t, struct err *e);

/* Mean loss over the fixed validation batches, recorded at the current
 * step.  0; 1 when *t->stop asked to stop at once (nothing recorded); -1.
 * Without a validation split *loss is NAN and nothing is recorded. */
int trainer_validate(struct trainer *t, double *loss, struct err *e);

/* The last history row, or NULL before the first step. */
const float *trainer_last_row(const struct trainer *t);

/* Mean training loss over the last 10% of steps (at least one), NAN
 * before the first step; the last validation loss, or NAN. */
double trainer_final_loss(const struct trainer *t);
double trainer_last_val(const struct trainer *t);

#endif
