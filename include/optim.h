/*
 * optim.h — the pieces of one training step that are independent of the
 * model's maths: the learning-rate schedule, gradient norms and clipping,
 * and AdamW with decoupled weight decay.
 *
 * All of them work on one flat float block laid out like model->params
 * (see backward.h), so parameter i of the model is element i everywhere.
 */
#ifndef ATTNSCOPE_OPTIM_H
#define ATTNSCOPE_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* AdamW state.  m and v are the first and second moments (n floats each,
 * owned); step counts the updates applied so far (the bias correction of
 * update t uses t = step + 1). */
struct adamw {
	float beta1, beta2, eps, weight_decay;
	size_t n;
	float *m, *v;
	long step;
	bool decay[N_PARAMS]; /* whether tensor i gets weight decay */
};

/* Allocates zeroed moments for model m with beta1 0.9, beta2 0.95, eps 1e-8
 * and the given decoupled weight decay, applied to matrices and embeddings
 * only (WTE, WPE, QKVW, ATTPROJW, FCW, FCPROJW, LMHEAD), never to norm
 * scales or biases. */
void adamw_init(struct adamw *a, const struct model *m, float weight_decay);
void adamw_free(struct adamw *a);

/* Whether tensor i is a matrix or embedding (the tensors that decay). */
bool optim_param_decays(enum param_id i);

/*
 * One AdamW update of m->params with gradients g scaled by gscale (the
 * clipping factor) and learning rate lr:
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 *   p -= lr * wd * p        (decaying tensors; applied before the step above)
 * Increments a->step.  Deterministic: every element is independent.
 */
void adamw_update(struct adamw *a, struct model *m, const float *g, float gscale, float lr);

/* Warmup + cosine learning rate for step (0-based) of total steps:
 * linear from peak/warmup to peak over the first warmup steps, then a half
 * cosine from peak down to peak * min_frac at the last step. */
float lr_schedule(long step, long total, long warmup, float peak, float min_frac);

/* Global L2 norm of the gradient block (model m's layout), and per layer
 * the L2 norm over that layer's slices of the per-layer tensors
 * (layer_norms: n_layer floats, may be NULL).  Sums in double, in a fixed
 * order, so the result does not depend on the thread count. */
double grad_norms(const struct model *m, const float *g, float *layer_norms);

/* Clipping factor for a global norm: min(1, clip / norm); 1 when clip <= 0
 * or the norm is not positive. */
float clip_scale(double norm, float clip);

/* ------------------------------------------------- resumable run state */

/*
 * Everything an interrupted training run needs to continue exactly: the
 * file FILE.optim next to the checkpoint FILE (train-run.h).  Layout, all
 * integers and floats little-endian:
 *   magic    8 bytes  "ATSOPTIM"
 *   u32      version (OPTIM_FILE_VERSION)
 *   u32      n_layer L
 *   u64      n_params P
 *   u64      steps done (= the AdamW step)
 *   u64      state of the batch generator (struct rng)
 *   u64      tokens seen
 *   u64      size of the data file in bytes
 *   u64      FNV-1a 64 hash of the data file
 *   f64      wall-clock seconds so far
 *   u64      history rows R (one per step done)
 *   u64      validation rows W
 *   u64      length J of the JSON text that follows
 *   J bytes  JSON run description (train-run.c: flags, command lines,
 *            config, where the run is recorded)
 *   f32 x P  weights, exact (the checkpoint may be F16)
 *   f32 x P  AdamW first moments m
 *   f32 x P  AdamW second moments v
 *   f32 x R*(3+L)  per step: loss, learning rate, global grad norm (before
 *                  clipping), then each layer's grad norm
 *   f32 x W*2      per validation: step (as a float), loss
 *   u64      FNV-1a 64 hash of every byte before it
 */
#define OPTIM_FILE_MAGIC "ATSOPTIM"
#define OPTIM_FILE_VERSION 1u

struct optim_file {
	uint32_t n_layer;
	uint64_t n_params, step, rng, tokens, data_bytes, data_hash;
	double seconds;
	uint64_t hist_n, val_n;
	char *json;             /* NUL-terminated */
	float *params, *m, *v;  /* n_params each */
	float *hist;            /* hist_n * (3 + n_layer) */
	float *val;             /* val_n * 2 */
};

/* Writes f to path atomically (the arrays are only read).  0 or -1. */
int optim_file_write(const char *path, const struct optim_file *f, struct err *e);

/* Reads and checks path: magic, version, header fields against each other
 * and the file length, the hash, finite weights and moments.  Allocates
 * the arrays and the JSON (free with optim_file_free).  0, or -1 with one
 * line "PATH: problem" (and nothing allocated); a FIFO, device or
 * directory is refused before it is opened. */
int optim_file_read(const char *path, struct optim_file *f, struct err *e);
void optim_file_free(struct optim_file *f);

#endif
