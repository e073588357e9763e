/*
 * decode.h — running a model one token at a time with a key/value cache
 * (after llama2.c's forward(transformer, token, pos) and its RunState).
 *
 * A decoder owns the cache and the scratch of one sequence.  Each
 * decoder_step appends one token at the next position: it embeds it,
 * runs every block on that one row — reading the keys and values of the
 * positions before from the cache and writing its own — and leaves the
 * next-token logits in d->logits.  The numbers are those of model_forward
 * over the whole sequence (tests/test_decode.c holds it to that), with one
 * difference by construction: a step cannot see tokens that do not exist
 * yet, so `mask none` and `mask after-softmax` decode as causal.
 *
 * LongRoPE (config.h) makes the second difference.  Each call is a pass
 * over the positions up to its last: a step at position p over p + 1, a
 * prefill over all it appends, and its queries and keys turn by the long
 * table when that count passes the original context.  Keys already in
 * the cache keep the table they were made with, as in transformers'
 * generate (its rotary embedding picks the table from the largest
 * position of each forward call), while a full pass longer than the
 * original context turns every key by the long table.  The two agree
 * while every call stays within the original context, and when the
 * first call (a prefill) already passes it; a decoder that steps across
 * it differs from the full pass from then on.
 *
 * The cache honours the run options it was made for: G key/value heads
 * (the converted K/V weights of model_qkv_for; going up by a whole factor
 * keeps the native heads, as model_forward does) and the window of a
 * windowed mask: a position attends to at most window keys back, so the
 * cache keeps only the last window + 1 positions (kv_positions).  Its size
 * is 2 * n_layer * G * slots * d_head floats, kv_cache_bytes() of the
 * same numbers.
 *
 * Lifetimes: decoder_new -> decoder_step ... (decoder_reset starts a new
 * sequence) -> decoder_free.  The model must outlive the decoder and keep
 * its weights.
 */
#ifndef ATTNSCOPE_DECODE_H
#define ATTNSCOPE_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"
#include "util.h"

struct decoder {
	int L, H, G, D, C, cap; /* layers, query heads, cached K/V heads, head width, d_model, positions */
	int slots;              /* positions the cache holds: cap, or window + 1 */
	int n;                  /* positions stepped: the next token goes to position n */
	int used;               /* slots filled; slot s holds position n - used + s */
	struct run_options opt; /* the options it was made for */
	const struct run_hook *hook; /* called at each site of each step (model.h); NULL: none */
	float *k, *v;           /* (L, slots, G*D) the cache */
	float *x;               /* (C) the residual stream of the new position */
	float *xn;              /* (C) a norm's output */
	float *ar;              /* (C) the residual after attention */
	float *qkv;             /* (QKV) the new position's query, key and value rows */
	float *att;             /* (H, slots) the new position's attention weights over the
				 * cached slots, per layer reused */
	float *atty;            /* (H * D) the heads' outputs, concatenated */
	float *tmp;             /* (C) */
	float *fch, *fch_act;   /* (FF), (F) */
	float *logits;          /* (V) next-token logits after the last step: logits_own,
				 * or the kept run's row (decoder_keep) */
	float *logits_own;      /* (V) */
	float *freq;            /* (2, 2, rotary dims / 2) RoPE frequencies of a pass
				 * within LongRoPE's original context and of a longer
				 * one, each of the global and the local layers
				 * (config rope_local_theta); NULL without RoPE */
	float mscale[2];        /* cfg_rope_mscale of the global and the local layers */
	int *ids;               /* (cap) the token at each position stepped */
	struct run *keep;       /* the run each step writes its rows into (decoder_keep);
				 * NULL: none.  Not owned */
	double keep_ms;         /* the time of the steps since decoder_keep */
	double from_ms;         /* the forward_ms of the pass that gave the first rows */
	bool keep_bad;          /* a kept block output, final norm or logit was not finite */
};

/* A decoder for model m run with options o, holding up to cap positions
 * (at most the context; 0 = the context).  NULL with e set for invalid
 * options, a pitfall (model.h: none decodes one token at a time) or an
 * encoder (cfg_is_encoder: BERT).  Out of memory is fatal. */
struct decoder *decoder_new(struct model *m, const struct run_options *o, int cap,
			    struct err *e);

/* How many ids a generation may draw for m: ids 0 .. returned-1.  The
 * model's vocabulary, or the tokenizer's when that is smaller (a Qwen2
 * config pads its vocab_size past the tokenizer's): the rows beyond it
 * have logits but no text to decode to. */
int decoder_ids(const struct model *m);

/* Frees the decoder; NULL is a no-op. */
void decoder_free(struct decoder *d);

/* Empties the cache: the next step is position 0. */
void decoder_reset(struct decoder *d);

/* Appends token at position d->n (a call over d->n + 1 positions) and
 * computes d->logits.  0, or -1 with e set for a token outside the
 * vocabulary or a full cache. */
int decoder_step(struct decoder *d, struct model *m, int token, struct err *e);

/* Appends n tokens at once, one call over d->n + n positions: one full
 * pass (model_forward, every layer's keys and values kept) fills the cache
 * and leaves the last position's logits, instead of n steps.  The same
 * numbers as the steps up to float rounding (but for LongRoPE's table when
 * the steps would cross the original context); `mask none` and
 * `after-softmax` prefill as causal, as steps do.  With a hook set, or a
 * cache in use, it steps (the hook sees each position), each step still a
 * call over d->n + n positions.  0, or -1 with e set for a bad token or
 * too many positions. */
int decoder_prefill(struct decoder *d, struct model *m, const int *tokens, int n,
		    struct err *e);

/*
 * Keeping a pass: the rows of a run filled as the decoder steps, so that
 * the text it made needs no pass of its own (generate's display).
 *
 * decoder_keep(d, m, r, from): from then on each step writes its
 * position's rows into r, a run of run_new(c, 1, T, RUN_LOGITS | RUN_ATTN)
 * with T >= d->cap: the embedding and every block's output (resid) and
 * their norms (resid_norm), each layer's attention row (att, 0 where the
 * mask hides a key, as a pass leaves it) and each head's output norm
 * (head_norm), the final norm's output (lnf) and the logits.  They are laid
 * out for a pass of r->T rows until decoder_kept.  from is the pass over
 * the d->n positions already in the cache (the prompt's, one sequence,
 * under the decoder's options) and gives the rows before; it may be r
 * itself, its rows then moved in place.  The per-layer scratch of a pass
 * (ln1, qkv, atty, ... of its last layer) is not filled.  Every step
 * computes what a pass over the same tokens computes (up to float
 * rounding) only under a causal or windowed mask, without LongRoPE and
 * without an embedding norm: otherwise, or when r or from does not fit,
 * -1 with e set and nothing is touched.
 *
 * While it keeps, d->logits points at r's row of the last step.
 * decoder_keep_end(d) stops keeping (r's rows are then not a pass),
 * d->logits again the decoder's own (the same numbers); decoder_reset and
 * decoder_kept call it.
 *
 * decoder_kept(d, tokens, n, e): r becomes the pass over tokens[0..n),
 * which must be the n positions stepped: its rows laid out for n, the NLL
 * of each next token and the loss (as model_forward computes them from
 * the logits), b = 1, t = n, the decoder's options, and forward_ms = from's
 * plus the time of the steps.  The decoder keeps no more.  0, or -1 with e
 * set when the tokens are not the ones stepped or a kept value was not
 * finite (run the pass: it says where); r's rows are then not a pass.
 */
int decoder_keep(struct decoder *d, const struct model *m, struct run *r, const struct run *from,
		 struct err *e);
/* decoder_keep's conditions on d, m and from alone (any r that fits then
 * does): 0, or -1 with e set. */
int decoder_can_keep(const struct decoder *d, const struct model *m, const struct run *from,
		     struct err *e);
int decoder_kept(struct decoder *d, const int *tokens, int n, struct err *e);
void decoder_keep_end(struct decoder *d);

/* decoder_prefill of tokens[0..n) into an empty cache from r, a pass
 * already made over them (one sequence, under the decoder's options, as
 * decoder_can_keep asks of from): each layer's keys and values are
 * computed again from the pass's block inputs (norm, QKV product, q/k
 * norm, RoPE), and the last position's logits are the pass's; no MLP and
 * no output layer run.  0, or -1 with e set and nothing done when r is not
 * such a pass or the cache is in use (decoder_prefill then). */
int decoder_prefill_from(struct decoder *d, struct model *m, const int *tokens, int n,
			 const struct run *r, struct err *e);

/* Bytes of the cache as allocated (float32 keys and values). */
size_t decoder_cache_bytes(const struct decoder *d);

#endif
