/*
 * model.h — weights, run options and the forward pass with attention capture.
 *
 * Lifetimes (after llama2.c): the config is the blueprint; a `struct model`
 * owns its weights (one allocation plus a pointer table), its tokenizer and a
 * cache of converted K/V weights; a `struct run` owns the activations of one
 * forward pass of a given size and is reused across passes.
 *
 * Shapes use the legend in config.h.
 */
#ifndef ATTNSCOPE_MODEL_H
#define ATTNSCOPE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "held.h"
#include "util.h"

struct tokenizer;

/* ------------------------------------------------------------ run options */

#define ABLATE_WORDS 64 /* 4096 (layer, head) pairs */

/*
 * Rows of the multi-head-attention tutorial's table of common mistakes, run
 * on purpose (docs/variants.md, "Pitfalls").  For sequence b, let Q be its
 * (T, H*D) query rows, K and V its (T, G*D) key and value rows, and let a
 * head slot (t, s) of an (T, n*D) matrix be columns s*D .. s*D+D-1 of row t.
 *   NO_TRANSPOSE   Q, K and V are reshaped to (n, T, D) with a plain
 *                  row-major view, no transpose: "head" h at "position" t
 *                  is slot (u / n, u % n) of the matrix, u = h*T + t (n = H
 *                  for Q, G for K and V).  RoPE then turns each viewed row
 *                  by its view position t, the mask and softmax treat t as
 *                  the position, and the heads' outputs O (H, T, D) are put
 *                  back the same wrong way: slot (u / H, u % H) of the
 *                  (T, H*D) result is O[h][t], u = h*T + t.  Ablation, head
 *                  norms and the output projection read that result.
 *   MASK_ONE_HEAD  the run's mask on head 0 of every layer only; heads
 *                  1 .. H-1 see every key (MASK_NONE), as when a mask's
 *                  shape does not broadcast over heads.  The padding mask
 *                  (run.key_len) still holds for every head.
 *   EPS0           every norm (norm1, norm2, the final, embedding and MLM
 *                  head norms) with epsilon 0: a row whose variance
 *                  (LayerNorm) or mean square (RMSNorm) is 0 becomes NaN.
 */
enum pitfall { PITFALL_NONE, PITFALL_NO_TRANSPOSE, PITFALL_MASK_ONE_HEAD, PITFALL_EPS0 };
#define N_PITFALLS 4

/* "no-transpose", "mask-one-head", "eps0" ("off" for PITFALL_NONE);
 * pitfall_parse accepts those names and returns -1 for any other. */
const char *pitfall_name(enum pitfall p);
int pitfall_parse(const char *s, enum pitfall *out);

/* How one forward pass is computed.  Plain data: copy it freely. */
struct run_options {
	int kv_heads;               /* G key/value heads; G divides H */
	enum norm_place placement;  /* where the norms sit */
	enum mask_kind mask;
	int window;                 /* MASK_WINDOW: keys i-window..i are visible */
	bool scale;                 /* multiply scores by 1/sqrt(D) */
	uint64_t ablated[ABLATE_WORDS]; /* bit l*H + h: head output zeroed */
	enum pitfall pitfall;       /* PITFALL_NONE in every native run */
};

/* ------------------------------------------------------------------ model */

#define KV_CACHE_SLOTS 8

/* K/V weights converted to G heads, built on first use (see model_forward). */
struct kv_conversion {
	int kv_heads;   /* G; 0 marks an empty slot */
	float *qkvw;    /* (L, (H + 2G) * D, C), Q rows copied from the native */
	float *qkvb;    /* (L, (H + 2G) * D) or NULL without biases */
};

struct model {
	struct model_config cfg;
	float *params;            /* one block of the F32 tensors' floats, owned */
	size_t n_params;          /* parameters of the model (held ones too) */
	float *p[N_PARAMS];       /* tensor i starts at p[i] (NULL when absent or held) */
	/* Tensor i kept in its file's type (model_new_held): one matrix a
	 * layer (n_layer of them, or one for a whole-model tensor), owned;
	 * NULL when the tensor is F32 in params. */
	struct held_mat *held[N_PARAMS];
	size_t psize[N_PARAMS];   /* element count of tensor i */
	struct tokenizer *tok;    /* owned; NULL until a tokenizer is attached */
	char *name;               /* short name, e.g. "shakespeare"; owned */
	char *path;               /* file it was loaded from, or NULL; owned */
	char *train_meta;         /* JSON text of the training record, or NULL; owned */
	struct kv_conversion kv_cache[KV_CACHE_SLOTS];
};

/* Allocates a model for a valid config with zeroed weights (norm scales set
 * to 1).  Returns NULL and sets e when the config is invalid. */
struct model *model_new(const struct model_config *c, struct err *e);

/* The tensors a model may hold in their file's type (the large matrices
 * of the products and the token embedding, whose rows are read one at a
 * time): P_WTE, P_LMHEAD, P_QKVW, P_ATTPROJW, P_FCW, P_FCPROJW. */
bool model_holdable(enum param_id i);

/* model_new with the tensors of bit i of held (holdable ones, present in
 * c) kept as stored: their held matrices are allocated empty, (rows,
 * cols) set, for the loader to fill with held_add_part; params holds the
 * rest.  Returns NULL and sets e as model_new does. */
struct model *model_new_held(const struct model_config *c, uint32_t held, struct err *e);

/* Whether any tensor of m is held; the bytes m's weights take (held ones
 * in their types, the rest as F32). */
bool model_is_held(const struct model *m);

/* Whether every held matrix of m has each of its rows (held_complete):
 * what a loader checks once it has read the files. */
bool model_held_complete(const struct model *m);
double model_bytes(const struct model *m);

/* "BF16 held" or "Q4_K, Q6_K held" (the types of m's held parts, in
 * ggml's order), or "" when nothing is held; into buf (cut to size). */
void model_held_types(const struct model *m, char *buf, size_t size);

/* Tensor id's held matrix of layer l (0 for a whole-model tensor), or
 * NULL when id is F32. */
static inline const struct held_mat *model_held(const struct model *m, int id, int l)
{
	return m->held[id] ? &m->held[id][l] : NULL;
}

/* A weight of a product: F32 rows (f), or a matrix held in its stored
 * type (h, held.h); exactly one is set. */
struct wmat {
	const float *f;
	const struct held_mat *h;
};

/* The output layer's weights (V, C): the token embedding when tied. */
struct wmat model_output_layer(const struct model *m);

/* Token tok's embedding row (C): in params, or converted into buf (C
 * floats) when held; the pointer to read it from. */
const float *model_embedding(const struct model *m, int tok, float *buf);

/* Rows r0 .. r0 + n - 1 of tensor id of layer l (rows of its last
 * dimension) as F32 into dst, from params or converted. */
void model_rows_f32(const struct model *m, enum param_id id, int l, size_t r0, size_t n,
		    float *dst);

/* Converts every held tensor of m to F32 (what the analyses and the
 * trainer read: m->p of every tensor).  0 at once when nothing is held;
 * -1 + e, m unchanged, when the F32 copy would not fit in the memory
 * available ("the analysis needs the weights as float32: 4.7 GB more,
 * 3.1 GB available").  `what` names the caller in that message. */
int model_to_f32(struct model *m, const char *what, struct err *e);

/* GPT-2-style initialisation: N(0, 0.02) for matrices and embeddings, output
 * projections (ATTPROJW, FCPROJW) scaled by 1/sqrt(2L), zero biases, unit
 * norm scales.  Deterministic for a given seed. */
void model_init_random(struct model *m, uint64_t seed);

/* Frees everything the model owns; NULL is a no-op.  Accepts half-built
 * models (any pointer may be NULL). */
void model_free(struct model *m);

/* Drops cached K/V conversions (call after changing the weights). */
void model_clear_cache(struct model *m);

/* The options that reproduce the model as trained: native K, placement,
 * mask and scaling (config.h), nothing ablated. */
void run_options_native(const struct model *m, struct run_options *o);

/* Checks options against a model: G divides H, window >= 0, ablated bits
 * inside L*H, a known pitfall.  0 or -1 with a message. */
int run_options_validate(const struct model *m, const struct run_options *o, struct err *e);

bool run_options_equal(const struct run_options *a, const struct run_options *b);

static inline bool opt_is_ablated(const struct run_options *o, int bit)
{
	return (o->ablated[bit / 64] >> (bit % 64)) & 1u;
}
static inline void opt_set_ablated(struct run_options *o, int bit, bool on)
{
	if (on)
		o->ablated[bit / 64] |= (uint64_t)1 << (bit % 64);
	else
		o->ablated[bit / 64] &= ~((uint64_t)1 << (bit % 64));
}
int opt_ablated_count(const struct run_options *o);

/* KV-cache bytes for G heads: 2 * n_layer * G * T * d_head * bytes_per_elem. */
double kv_cache_bytes(int n_layer, int kv_heads, int tokens, int d_head, int bytes_per_elem);

/* The mask layer l is computed with under o, into *window (MASK_WINDOW):
 * the run's on a global layer; on a local one (config.h: local_window) the
 * local window always holds, whatever the run's mask (none, after-softmax
 * and causal all become keys i-local_window+1..i), narrowed to a run
 * window N when N + 1 is fewer keys. */
static inline enum mask_kind layer_mask(const struct model_config *c, const struct run_options *o,
					int l, int *window)
{
	*window = o->window;
	if (!cfg_layer_local(c, l))
		return o->mask;
	if (o->mask != MASK_WINDOW || o->window > c->local_window - 1)
		*window = c->local_window - 1;
	return MASK_WINDOW;
}

/* Positions a key/value cache must hold for T tokens under options o: T,
 * or window + 1 under a windowed mask (a key further back is never seen
 * again). */
static inline int kv_positions(const struct run_options *o, int T)
{
	return o->mask == MASK_WINDOW && o->window + 1 < T ? o->window + 1 : T;
}

/* ---------------------------------------------------------- intervention */

/*
 * Sites of a forward pass where a hook may read and change the activations
 * in place (activation patching, custom ablations).  At HOOK_HEADS the
 * ablation of the run options is applied first, then the hook: one site
 * serves both.  x holds B * T rows of `width` floats; pos0 is the position
 * of each sequence's first row (0 for model_forward, the step's position
 * for decoder_step, where B = T = 1).
 */
enum hook_site {
	HOOK_HEADS, /* layer l's head outputs, before the output projection: width H * D */
	HOOK_RESID, /* the residual stream after block l: width C */
};

struct run_hook {
	void (*fn)(void *ctx, enum hook_site site, int layer, float *x, int B, int T, int pos0,
		   int width);
	void *ctx;
};

/* The HOOK_HEADS site: zeroes the ablated heads of layer l in x (B * T
 * rows of H * D), then calls hook (may be NULL). */
void model_heads_site(const struct run_hook *hook, const struct run_options *o, int l, float *x,
		      int B, int T, int pos0, int H, int D);

/* -------------------------------------------------------------------- run */

/* What a run keeps.  Logits and NLL are always computed when RUN_LOGITS is
 * set (the logits kept made again on first read: see run.logits_lazy);
 * RUN_ATTN keeps every layer's attention (made on first read: see
 * run.att_lazy); RUN_QKV every layer's queries, keys and values (qkv);
 * RUN_TRAIN every activation the backward pass needs (and implies
 * RUN_LOGITS, RUN_ATTN and qkv). */
enum {
	RUN_LOGITS = 1u << 0,
	RUN_ATTN   = 1u << 1,
	RUN_TRAIN  = 1u << 2,
	RUN_QKV    = 1u << 3,
};

/* Activations of one forward pass over B sequences of T tokens, every
 * buffer in one block (huge pages round one size up, not each).
 * Per-layer buffers hold L layers with RUN_TRAIN (qkv also with RUN_QKV)
 * and one reused layer otherwise (`lstride` is their per-layer step in
 * floats: 0 when reused).
 * QKV below is sized for the largest sharing, 3A.  `bt` = B * T. */
struct run {
	int B, T;           /* sizes this run was allocated for (max) */
	int b, t;           /* sizes of the last forward pass */
	unsigned flags;
	int V, C, L, H, F, FF, QKVmax;
	int A;              /* attention width H * D (cfg_attn_width) */

	/* outputs */
	float *logits;      /* (B, T, V)  RUN_LOGITS; read through run_logits */
	float *nll;         /* (B, T)     -log p(target); NAN where no target */
	float *att;         /* (L, B, H, T, T) with RUN_ATTN, else (B, H, T, T); read
			     * through run_att (or after run_att_fill) */
	float *head_norm;   /* (L, B, H, T) L2 norm of each head's output (pre-projection) */
	float *resid_norm;  /* (L, B, T)   L2 norm of the residual stream after each block */
	double loss;        /* mean NLL over positions with a target */
	int n_targets;
	double forward_ms;
	struct run_options opt; /* options of the last pass */
	const struct run_hook *hook; /* called at each site of each pass; NULL: none.
				      * Set by the caller, not owned. */
	/* Where the last pass first made a value that is not finite, in the
	 * order it computes: block `layer` (-1: the embeddings, L: the output
	 * head), sequence `seq`, position `pos`, at `site` ("norm1", "norm2",
	 * "block output", "embedding norm", "final norm", "logits"); site is
	 * NULL when every norm output, block output and logit was finite. */
	struct run_nonfinite { int layer, seq, pos; const char *site; } nonfinite;
	const int *key_len; /* (b) a padding mask: keys at or after key_len[i] are hidden
			     * from every query of sequence i; NULL: none.  Set by the
			     * caller, not owned; forward only (backward refuses it). */

	/* saved activations (per layer: lstride apart) */
	size_t lstride_c, lstride_a, lstride_qkv, lstride_ff, lstride_f, lstride_bt;
	float *resid;       /* (L+1, b, t, C) block inputs, then the final block output;
			       packed by the last pass's b * t (not lstride) */
	float *ln1;         /* (L, B, T, C) norm1 output */
	float *ln1_mean;    /* (L, B, T)  (LayerNorm only) */
	float *ln1_rstd;    /* (L, B, T) */
	float *qkv;         /* (L, B, T, QKVmax) q and k after RoPE; row stride = (H+2G)*D */
	float *atty;        /* (L, B, T, A)  heads' outputs, concatenated, before projection */
	float *att_res;     /* (L, B, T, C)  input + attention projection */
	float *ln2;         /* (L, B, T, C) */
	float *ln2_mean;    /* (L, B, T) */
	float *ln2_rstd;    /* (L, B, T) */
	float *fch;         /* (L, B, T, FF) MLP pre-activation (gate | up for SwiGLU) */
	float *fch_act;     /* (L, B, T, F)  MLP activation */
	float *mlp_res;     /* (L, B, T, C)  (pre: att_res + mlp; post: ln1 + mlp) */
	/* the sandwich norms' inputs (each sub-block's output projection) and
	 * rstd: RUN_TRAIN of a model with sandwich norms only, else NULL */
	float *attpost_in;  /* (L, B, T, C) */
	float *attpost_rstd; /* (L, B, T) */
	float *mlppost_in;  /* (L, B, T, C) */
	float *mlppost_rstd; /* (L, B, T) */
	float *lnf;         /* (B, T, C) final norm output */
	float *lnf_mean;    /* (B, T) */
	float *lnf_rstd;    /* (B, T) */
	float *scratch;     /* (B, T, C) */
	void *block;        /* every buffer above, one allocation (run_new); owned */
	size_t block_bytes; /* its size, the buffers 64-byte aligned */

	/* The capture made on first read.  With att_lazy (set by run_new for
	 * RUN_ATTN without RUN_TRAIN) a pass keeps every layer's qkv and makes
	 * each head's weights in att_scratch, one head per thread at a time;
	 * run_att makes a layer's weights into att when it is first read, by
	 * the pass's own attention call (att_plan) on the kept q and k: the
	 * same bits the pass used where its products are attnmm.h's (ops.h,
	 * struct attn_spec).  A caller may clear att_lazy before a pass to have
	 * the pass write every layer's weights as it goes (the tests compare
	 * the two).  Owned; NULL when the run is not lazy. */
	bool att_lazy;
	float *att_scratch;          /* (2, T, T) in block */
	struct attn_spec *att_plan;  /* (L) layer l's call (q0 = 0); T = 0: not filled */
	unsigned char *att_made;     /* (L) layer l's weights are in att */
	int *kept_len;               /* (B) the pass's key_len, which att_plan points at */

	/* The logits made on first read.  With logits_lazy (set by run_new for
	 * RUN_LOGITS without RUN_TRAIN) a pass whose output layer is gemmw.h's
	 * (F32, F16 or BF16 on the engine's threads) makes the logits
	 * LOGIT_ROWS rows at a time in logits_chunk, keeps each chunk's NLL and
	 * drops its logits; run_logits makes a chunk again from the kept final
	 * norm rows (lnf) by the same product when it is first read: the same
	 * bits.  Any other pass (quantized output weights, OpenBLAS's products)
	 * writes them all as it goes.  logits_of is the model of a lazy pass
	 * (not owned: it must outlive the reads, and its output layer stay as
	 * it was), NULL when the pass wrote every row (or run_written). */
	bool logits_lazy;
	float *logits_chunk;             /* (LOGIT_ROWS, V) in block */
	const struct model *logits_of;
	unsigned char *logits_made;      /* (B * T / LOGIT_ROWS rounded up) */
};

#define LOGIT_ROWS 64 /* rows of logits a lazy pass makes at a time */

/* The default targets of B sequences of T tokens: each token's next one,
 * -1 at the last position of each sequence.  malloc'd (B * T ints). */
int *next_token_targets(const int *tokens, int B, int T);

/* The loss targets a pass uses when given none: next_token_targets for a
 * decoder; for an encoder (cfg_is_encoder: BERT's MLM head) each token
 * itself, at its own position (the head reconstructs the unmasked input).
 * malloc'd (B * T ints). */
int *model_targets(const struct model_config *c, const int *tokens, int B, int T);

/* The output head (config.h, enum head_type) on n rows x (n, C) of the
 * last block's output: its normed rows into xn (n, C) (mean / rstd (n)
 * kept when not NULL), tmp (n, C) scratch, and with logits not NULL the
 * logits (n, V).  Without a head (HEAD_NONE) x is copied to xn and logits
 * is not written: ask for them only when cfg_has_head.  The norm uses the
 * config's epsilon (a pass under the eps0 pitfall uses 0 in its own). */
void model_head_forward(const struct model *m, float *logits, float *xn, float *mean,
			float *rstd, float *tmp, const float *x, int n);

/* Allocates activations for up to B x T tokens of model config c; for a
 * model without a head (cfg_has_head false) RUN_LOGITS is dropped: such a
 * run's logits are NULL and its loss NAN.  Never returns NULL (out of
 * memory is fatal). */
struct run *run_new(const struct model_config *c, int B, int T, unsigned flags);
void run_free(struct run *r);

/* Whether a pass with run flags `flags` runs its products on the engine's
 * own two threads (ops.h: matmul_w's own; held weights of every type,
 * held.h): where gemmw.h is built, for every pass but a training one
 * (RUN_TRAIN: its backward's products are OpenBLAS's, whose idle workers
 * would spin beside the engine's).  Its attention then runs there too
 * (struct attn_spec's own). */
bool run_own_threads(unsigned flags);

/* Bytes held by a run (for benchmarks and the memory budget): its block
 * (whether or not a pass has touched it), the struct and its bookkeeping. */
size_t run_bytes(const struct run *r);

/* Pointer to the (T, T) attention of layer l, batch b, head h of the last
 * pass (RUN_ATTN), row i = query i, column j = key j; made on the first
 * read of layer l after a pass (run.att_lazy), on the engine's threads:
 * not to be called from inside a split (split.h).  A layer a pass did not
 * fill (model_forward_from's before l0) reads as zeros. */
float *run_att(const struct run *r, int l, int b, int h);

/* Makes every layer's attention of r's last pass (run_att), for readers
 * of r->att as one block. */
void run_att_fill(const struct run *r);

/* What is given one head's weights at a time: sequence b's head h, rows
 * q0 .. T-1 of (T, T) from att (T apart), possibly on a thread of the
 * engine's (split.h): it must write nothing another head's call writes. */
typedef void attn_head_fn(void *ctx, int b, int h, const float *att);

/* Gives fn every head's (T, T) attention of layer l (as run_att's): a
 * layer not yet made is made a head at a time in att_scratch on the
 * engine's two threads and not kept, so that a reader of every head once
 * need not make the capture. */
void run_att_each(const struct run *r, int l, attn_head_fn *fn, void *ctx);

/* Marks every layer's attention and every row's logits as written by the
 * caller (the decoder's rows): no read remakes them until the next pass. */
void run_written(struct run *r);

/* The (b * t, V) logits of r's last pass, NULL without RUN_LOGITS; those
 * not yet made are made (run.logits_lazy), on the engine's threads. */
const float *run_logits(const struct run *r);

/* Row i (of b * t) of run_logits, making only the LOGIT_ROWS rows around
 * it. */
const float *run_logits_row(const struct run *r, int i);

/* Layer l's fused q, k (after RoPE) and v rows (b * t, (H + 2G) * D) of
 * the last pass (RUN_TRAIN, RUN_QKV, or RUN_ATTN: run.att_lazy's).
 * Otherwise the run keeps one layer: during model_forward or
 * model_blocks_from, a HOOK_HEADS hook of layer l reads layer l's here. */
float *run_qkv(const struct run *r, int l);

/*
 * Runs the model on tokens (B, T) and fills r.
 *   targets: (B, T) ids for the NLL, -1 to skip a position; NULL means
 *            model_targets: tokens shifted left by one (the last position
 *            has none), or for an encoder the tokens themselves.
 * Option semantics (docs/variants.md):
 *   - kv_heads G != K: K/V projection weights are converted once and cached:
 *     each query head's native K/V head is mean-pooled over the H/G query
 *     heads of its new group.  Going down this is the mean of the native
 *     heads in the group; going up it replicates, which is exact (a whole
 *     factor up is computed with the native heads themselves).
 *     Query head h reads K/V head h / (H / G).
 *   - placement: pre  x <- x + attn(norm1(x)); x <- x + mlp(norm2(x))
 *                     (a parallel model, config.h:
 *                      x <- x + attn(norm1(x)) + mlp(norm2(x)))
 *                post x <- norm1(x + attn(x)); x <- norm2(x + mlp(x))
 *                     (for every model: post-norm has no parallel form)
 *     the final norm is applied before the output projection in both
 *     (BERT's MLM head has none: config.h, enum head_type).
 *   - an embedding norm (config emb_norm) normalises token + position
 *     embeddings before block 0.
 *   - mask: causal (j <= i), none, window (i - window <= j <= i).
 *   - scale: scores multiplied by 1/sqrt(D) when on, by 1 when off.
 *   - ablated heads: their output rows are zeroed before the output projection.
 *   - pitfall: see enum pitfall; with no-transpose the kept qkv rows and
 *     attention are the viewed ones (head h, view position t).
 *   - r->hook, when set, is called at every site (see enum hook_site).
 * Returns 0, or -1 with a message for bad tokens, T above the context or the
 * run's size, or invalid options.
 */
int model_forward(struct model *m, const struct run_options *o, const int *tokens,
		  const int *targets, int B, int T, struct run *r, struct err *e);

/* Reruns blocks l0 .. L-1 of r's last pass (its sizes, options and hook)
 * on r->resid[l0], which the caller may have changed, leaving the final
 * block's output in r->resid[L] (l0 == L runs nothing).  With row0 > 0
 * only rows row0 .. t-1 are recomputed in every block: the caller changed
 * no row of r->resid[l0] before row0, so under a causal or window mask
 * the rows before it are the last pass's, and so are their keys and
 * values, read from r (model_rows_resumable says when this holds); the
 * hooks see rows row0 .. t-1 (pos0 = row0).  The output head is not run:
 * r->logits, r->nll and r->loss still hold the last whole pass's
 * (model_head_forward computes the rows wanted).  For patching: the
 * layers before l0 are not recomputed.  Note that the recomputed rows'
 * q, k and v replace the last pass's in r.  0, or -1 with e set when r
 * holds no pass, l0 is outside 0 .. L, row0 outside the rows, row0 > 0
 * where the run cannot resume by rows, or r was made for another shape. */
int model_blocks_from(struct model *m, struct run *r, int l0, int row0, struct err *e);

/* model_forward of the tokens of pass `from` (its sequences and length)
 * under o into r, reusing from's blocks before l0: o must equal from's
 * options but for ablations in layers l0 and after (a head ablated at
 * layer l0 changes nothing before it), so that from's input of block l0
 * is r's too; blocks l0 .. L-1 and the output head (logits and loss as
 * r's flags ask, targets as model_forward's) are computed.  r's residual
 * stream is whole; what r keeps per layer before l0 (attention, norms) is
 * not filled.  The same numbers as model_forward.  0, or -1 with e set
 * when the options differ before l0, either run has a padding mask, or r
 * cannot hold the pass. */
int model_forward_from(struct model *m, const struct run_options *o, const int *tokens,
		       const int *targets, const struct run *from, int l0, struct run *r,
		       struct err *e);

/* Whether model_blocks_from may start after row 0 on r: one sequence, no
 * padding mask, a causal or window mask (a row reads no later row), no
 * no-transpose or mask-one-head pitfall (both let a row read later rows),
 * and every layer's qkv kept (RUN_QKV or RUN_TRAIN). */
bool model_rows_resumable(const struct run *r);

/* One block's weights, as views into the model's parameters (biases and
 * the norms' shifts NULL when the model has none). */
struct layer_weights {
	const float *ln1w, *ln1b, *ln2w, *ln2b; /* (C) */
	const float *qkvw, *qkvb;   /* (QKV, C), (QKV) for the pass's K/V heads */
	const float *projw, *projb; /* (C, A), (C): A = H * D */
	const float *fcw, *fcb;     /* (FF, C), (FF) */
	const float *fpw, *fpb;     /* (C, F), (C) */
	const float *qnw, *knw;     /* (D), (D): the q/k norm's scales (qk_norm), or NULL */
	const float *apw, *mpw;     /* (C), (C): the sandwich norms' scales, or NULL */
	/* The matrices above held as stored (model_is_held), each with its
	 * float pointer NULL; NULL when F32. */
	const struct held_mat *qkvh, *projh, *fch, *fph;
};

/* Block l's weights, its QKV rows taken from qkvw / qkvb (model_qkv_for's,
 * for G K/V heads; qkvw NULL: the model's held native QKV). */
void model_layer(const struct model *m, int l, const float *qkvw, const float *qkvb, int G,
		 struct layer_weights *w);

/* The fused QKV weights/biases a pass with G K/V heads uses: the native ones
 * when G == K (*w NULL when they are held: model_layer takes them from
 * there), else the cached conversion (built here on first use, in F32). */
void model_qkv_for(struct model *m, int kv_heads, const float **w, const float **b);

/* The K/V heads a pass under o computes with, which its qkv rows hold:
 * o->kv_heads, or the native count when o asks for a whole multiple of it
 * (replicated heads give the same numbers) and no no-transpose pitfall
 * (whose view of G replicated heads differs from the view of K). */
int run_kv_heads(const struct model *m, const struct run_options *o);

/* Sets the BLAS threads (0 = the number of cores present).  Matrix products
 * are the only threaded work (and held.h's conversions, which split their
 * rows with one helper thread when there are two or more): OpenBLAS's pool
 * sleeps between calls, where a second pool (OpenMP) spinning beside it
 * made whole passes several times slower on two cores.  The element-wise
 * loops are vectorised instead. */
void engine_set_threads(int n);

#endif
