/*
 * decode.c — the step decoder: one token at a time through every block,
 * keys and values kept in a cache (see decode.h).  The block is the one of
 * model_forward written for a single row: the same kernels, in the same
 * order, so a step reproduces a full pass up to float rounding.
 */
#include "decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "tokenizer.h"

/* The K/V heads a pass with options o computes with: going up by a whole
 * factor only replicates native heads, so the native ones are used (as in
 * model_forward). */
static int effective_kv_heads(const struct model_config *c, const struct run_options *o)
{
	return o->kv_heads > c->n_kv_head && o->kv_heads % c->n_kv_head == 0 ? c->n_kv_head
									    : o->kv_heads;
}

/* RoPE's frequencies once, not at every layer of every step: those of the
 * global layers and of the local ones (a base of their own: Gemma 3), each
 * for a pass within LongRoPE's original context and for a longer one
 * (decode.h says which a step takes), and the two kinds' mscale. */
static void rope_tables(struct decoder *d, const struct model_config *c)
{
	size_t n = (size_t)cfg_rotary_dims(c) / 2;
	int l0 = 0; /* a local layer, or the last layer when none is */
	while (l0 < c->n_layer - 1 && !cfg_layer_local(c, l0))
		l0++;
	struct model_config lc;
	config_rope_of_layer(c, l0, &lc);
	d->freq = xmalloc(4 * n * sizeof *d->freq);
	for (int len = 0; len < 2; len++) { /* a pass of 1 position, then one past the original */
		int n_pos = len ? c->rope_orig_context + 1 : 1;
		config_rope_freqs(c, n_pos, d->freq + (2 * len) * n);
		config_rope_freqs(&lc, n_pos, d->freq + (2 * len + 1) * n);
	}
	d->mscale[0] = cfg_rope_mscale(c);
	d->mscale[1] = cfg_rope_mscale(&lc);
}

struct decoder *decoder_new(struct model *m, const struct run_options *o, int cap,
			    struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (cfg_is_encoder(c))
		return err_set(e, "%s is a bidirectional encoder (config head %s): it has no "
			       "next-token prediction to decode", m->name ? m->name : "the model",
			       head_type_name(c->head)), NULL;
	if (run_options_validate(m, o, e) != 0)
		return NULL;
	if (o->pitfall != PITFALL_NONE)
		return err_set(e, "pitfall %s has no one-token-at-a-time form to decode with "
			       "(pitfall off first)", pitfall_name(o->pitfall)), NULL;
	if (cap <= 0 || cap > c->context)
		cap = c->context;
	struct decoder *d = xcalloc(1, sizeof *d);
	d->L = c->n_layer;
	d->H = c->n_head;
	d->G = effective_kv_heads(c, o);
	d->D = cfg_d_head(c);
	d->C = c->d_model;
	d->cap = cap;
	d->slots = kv_positions(o, cap);
	d->opt = *o;
	size_t kvn = (size_t)d->L * d->slots * d->G * d->D;
	d->k = xmalloc(kvn * sizeof(float));
	d->v = xmalloc(kvn * sizeof(float));
	d->x = xmalloc((size_t)d->C * sizeof(float));
	d->xn = xmalloc((size_t)d->C * sizeof(float));
	d->ar = xmalloc((size_t)d->C * sizeof(float));
	d->qkv = xmalloc((size_t)cfg_qkv_rows(c, d->G) * sizeof(float));
	d->att = xmalloc((size_t)d->H * d->slots * sizeof(float));
	d->atty = xmalloc((size_t)d->H * d->D * sizeof(float));
	d->tmp = xmalloc((size_t)d->C * sizeof(float));
	d->fch = xmalloc((size_t)cfg_ff_rows(c) * sizeof(float));
	d->fch_act = xmalloc((size_t)c->d_ff * sizeof(float));
	d->logits = d->logits_own = xmalloc((size_t)c->vocab_size * sizeof(float));
	d->ids = xmalloc((size_t)cap * sizeof *d->ids);
	if (c->pos == POS_ROPE)
		rope_tables(d, c);
	return d;
}

void decoder_free(struct decoder *d)
{
	if (!d)
		return;
	free(d->k);
	free(d->v);
	free(d->x);
	free(d->xn);
	free(d->ar);
	free(d->qkv);
	free(d->att);
	free(d->atty);
	free(d->tmp);
	free(d->fch);
	free(d->fch_act);
	free(d->logits_own);
	free(d->freq);
	free(d->ids);
	free(d);
}

void decoder_reset(struct decoder *d)
{
	if (d->keep)
		decoder_keep_end(d);
	d->n = d->used = 0;
}

size_t decoder_cache_bytes(const struct decoder *d)
{
	return 2 * (size_t)d->L * d->slots * d->G * d->D * sizeof(float);
}

/* Under a windowed mask the cache holds the last window + 1 positions:
 * when it is full, every layer's rows move up one, the oldest dropped, so
 * the keys stay in position order (as a full pass sums them). */
static void make_room(struct decoder *d)
{
	if (d->used < d->slots)
		return;
	size_t row = (size_t)d->G * d->D;
	for (int l = 0; l < d->L; l++) {
		float *k = d->k + (size_t)l * d->slots * row, *v = d->v + (size_t)l * d->slots * row;
		memmove(k, k + row, (size_t)(d->slots - 1) * row * sizeof(float));
		memmove(v, v + row, (size_t)(d->slots - 1) * row * sizeof(float));
	}
	d->used--;
}

/* ------------------------------------------------------------ kept rows */

/* Whether x[0..n) holds only finite values. */
static bool finite_row(const float *x, size_t n)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		ok &= isfinite(x[i]) != 0;
	return ok;
}

/* Row pos of block l's input (l = 0: the embedding; l = L: the last
 * block's output) from d->x, and block l - 1's output norm. */
static void keep_resid(struct decoder *d, int l, int pos)
{
	struct run *r = d->keep;
	size_t T = (size_t)r->T, C = (size_t)d->C;
	memcpy(r->resid + ((size_t)l * T + pos) * C, d->x, C * sizeof(float));
	if (l > 0) {
		row_norms(r->resid_norm + (size_t)(l - 1) * T + pos, d->x, 1, d->C, d->C);
		d->keep_bad |= !finite_row(d->x, C);
	}
}

/* Layer l's attention rows of position pos: the weights over the n cached
 * slots (slot s holds position first + s; those before lo are hidden), 0
 * for every other key, and each head's output norm from d->atty. */
static void keep_heads(struct decoder *d, int l, int pos, int first, int lo, int n)
{
	struct run *r = d->keep;
	size_t T = (size_t)r->T;
	for (int h = 0; h < d->H; h++) {
		float *row = r->att + (((size_t)l * d->H + h) * T + pos) * T;
		memset(row, 0, T * sizeof *row);
		memcpy(row + first + lo, d->att + (size_t)h * n + lo, (size_t)(n - lo) * sizeof *row);
		row_norms(r->head_norm + ((size_t)l * d->H + h) * T + pos, d->atty + (size_t)h * d->D,
			  1, d->D, d->D);
	}
}

/* Position pos's final norm output (d->xn); its logits are made in
 * place (d->logits points at the run's row while it is kept). */
static void keep_out(struct decoder *d, int pos, int V)
{
	struct run *r = d->keep;
	memcpy(r->lnf + (size_t)pos * d->C, d->xn, (size_t)d->C * sizeof(float));
	d->keep_bad |= !finite_row(d->xn, (size_t)d->C) || !finite_row(d->logits, (size_t)V);
}

void decoder_keep_end(struct decoder *d)
{
	if (d->logits != d->logits_own) {
		memcpy(d->logits_own, d->logits, (size_t)d->keep->V * sizeof(float));
		d->logits = d->logits_own;
	}
	d->keep = NULL;
}

/* Moves the per-position rows of r laid out for a pass of `from` rows to
 * the layout of one of `to` rows (the first min(from, to) positions; the
 * attention rows of a longer layout end in 0).  In place: growing moves
 * from the end, shrinking from the start, so no row is overwritten before
 * it has moved. */
static void relayout(struct run *r, int from, int to)
{
	if (from == to)
		return;
	size_t C = (size_t)r->C, a = (size_t)from, b = (size_t)to, n = a < b ? a : b;
	size_t LH = (size_t)r->L * r->H;
	bool up = b > a;
	for (size_t k = 0; k <= (size_t)r->L; k++) { /* resid: L + 1 blocks of (rows, C) */
		size_t l = up ? r->L - k : k;
		memmove(r->resid + l * b * C, r->resid + l * a * C, n * C * sizeof(float));
	}
	for (size_t k = 0; k < LH; k++) { /* att: (L * H) blocks of (rows, rows) */
		size_t blk = up ? LH - 1 - k : k;
		for (size_t j = 0; j < n; j++) {
			size_t i = up ? n - 1 - j : j;
			float *dst = r->att + (blk * b + i) * b;
			memmove(dst, r->att + (blk * a + i) * a, n * sizeof(float));
			if (up)
				memset(dst + n, 0, (b - n) * sizeof(float));
		}
	}
	for (size_t k = 0; k < LH; k++) { /* head_norm: (L * H) blocks of (rows) */
		size_t blk = up ? LH - 1 - k : k;
		memmove(r->head_norm + blk * b, r->head_norm + blk * a, n * sizeof(float));
	}
	for (size_t k = 0; k < (size_t)r->L; k++) { /* resid_norm: L blocks of (rows) */
		size_t l = up ? r->L - 1 - k : k;
		memmove(r->resid_norm + l * b, r->resid_norm + l * a, n * sizeof(float));
	}
}

/* Copies the rows of from's pass (one sequence of n positions) into r,
 * laid out for r->T rows. */
static void copy_rows(struct run *r, const struct run *from, int n)
{
	size_t C = (size_t)r->C, T = (size_t)r->T, N = (size_t)n, LH = (size_t)r->L * r->H;
	for (size_t l = 0; l <= (size_t)r->L; l++)
		memcpy(r->resid + l * T * C, from->resid + l * N * C, N * C * sizeof(float));
	for (size_t blk = 0; blk < LH; blk++) {
		for (size_t i = 0; i < N; i++) {
			float *dst = r->att + (blk * T + i) * T;
			memcpy(dst, from->att + (blk * N + i) * N, N * sizeof(float));
			memset(dst + N, 0, (T - N) * sizeof(float));
		}
		memcpy(r->head_norm + blk * T, from->head_norm + blk * N, N * sizeof(float));
	}
	for (size_t l = 0; l < (size_t)r->L; l++)
		memcpy(r->resid_norm + l * T, from->resid_norm + l * N, N * sizeof(float));
	memcpy(r->lnf, from->lnf, N * C * sizeof(float));
	memcpy(r->logits, run_logits(from), N * (size_t)r->V * sizeof(float));
}

/* Whether run x was made for model config c with logits and every
 * layer's attention. */
static bool run_fits(const struct run *x, const struct model_config *c)
{
	return (x->flags & RUN_LOGITS) && (x->flags & RUN_ATTN) && x->C == c->d_model &&
	       x->L == c->n_layer && x->H == c->n_head && x->V == c->vocab_size &&
	       x->A == cfg_attn_width(c);
}

/* Whether from is a pass over n positions whose rows a step would
 * compute as it does (decoder_can_keep): 0, or -1 with e set. */
static int pass_fits(const struct decoder *d, const struct model *m, const struct run *from,
		     int n, struct err *e)
{
	const struct model_config *c = &m->cfg;
	const struct run_options *o = &d->opt;
	if (o->mask != MASK_CAUSAL && o->mask != MASK_WINDOW)
		return err_set(e, "mask %s: a step sees no later token, a pass does", mask_kind_name(o->mask));
	if (c->rope_scaling == ROPE_SCALE_LONGROPE || c->emb_norm)
		return err_set(e, "steps and a pass may differ here (LongRoPE, an embedding norm)");
	if (!from || !run_fits(from, c))
		return err_set(e, "the pass to start from does not fit the model");
	if (n < 1 || from->b != 1 || from->t != n || from->key_len || from->nonfinite.site ||
	    !run_options_equal(&from->opt, o))
		return err_set(e, "the pass to start from is not one over the %d positions", n);
	return 0;
}

int decoder_can_keep(const struct decoder *d, const struct model *m, const struct run *from,
		     struct err *e)
{
	return pass_fits(d, m, from, d->n, e);
}

int decoder_keep(struct decoder *d, const struct model *m, struct run *r, const struct run *from,
		 struct err *e)
{
	if (decoder_can_keep(d, m, from, e) != 0)
		return -1;
	if (!run_fits(r, &m->cfg) || r->T < d->cap)
		return err_set(e, "the run does not fit the model and the cache");
	run_att_fill(from); /* its rows are moved or copied as one block */
	(void)run_logits(from);
	if (from == r)
		relayout(r, d->n, r->T);
	else
		copy_rows(r, from, d->n);
	run_written(r);
	d->keep = r;
	d->keep_ms = 0.0;
	d->from_ms = from->forward_ms;
	d->keep_bad = false;
	return 0;
}

int decoder_kept(struct decoder *d, const int *tokens, int n, struct err *e)
{
	struct run *r = d->keep;
	if (!r)
		return err_set(e, "the decoder keeps no run");
	decoder_keep_end(d);
	if (n != d->n || memcmp(tokens, d->ids, (size_t)n * sizeof *tokens) != 0)
		return err_set(e, "the tokens are not the %d positions stepped", d->n);
	if (d->keep_bad)
		return err_set(e, "a kept value is not finite");
	relayout(r, r->T, n);
	int *tg = next_token_targets(tokens, 1, n);
	double sum = crossentropy_forward(r->nll, r->logits, tg, n, r->V, &r->n_targets);
	free(tg);
	r->loss = r->n_targets ? sum / r->n_targets : NAN;
	r->b = 1;
	r->t = n;
	r->opt = d->opt;
	r->key_len = NULL;
	memset(&r->nonfinite, 0, sizeof r->nonfinite);
	r->forward_ms = d->from_ms + d->keep_ms;
	return 0;
}

/* ------------------------------------------------------------ the step */

/* Attention sub-block of layer l for the new position, in a call over
 * n_pos positions (decode.h: LongRoPE's table): reads d->xn (the block's
 * input, normed or not), appends its key and value to the cache and
 * leaves the projected output in d->tmp. */
static void attend(struct decoder *d, struct model *m, int l, const struct layer_weights *w,
		   int n_pos)
{
	const struct model_config *c = &m->cfg;
	const struct run_options *o = &d->opt;
	int H = d->H, G = d->G, D = d->D, C = d->C, QKV = cfg_qkv_rows(c, G), pos = d->n;
	matmul_w(d->qkv, d->xn, (struct wmat){ w->qkvw, w->qkvh }, w->qkvb, 1, C, QKV, false);
	if (w->qnw)
		qk_norm_rows(d->qkv, 1, QKV, H, G, D, w->qnw, w->knw, c->qk_norm_whole, c->norm_eps);
	if (c->pos == POS_ROPE) {
		int local = cfg_layer_local(c, l), table = 2 * cfg_rope_long(c, n_pos) + local;
		rope_rotate(d->qkv, H + G, D, cfg_rotary_dims(c), pos,
			    d->freq + (size_t)table * (cfg_rotary_dims(c) / 2), d->mscale[local]);
	}
	/* slot s holds position pos - used + s; the new one goes last */
	size_t row = (size_t)G * D, base = (size_t)l * d->slots * row, at = (size_t)d->used;
	memcpy(d->k + base + at * row, d->qkv + (size_t)H * D, row * sizeof(float));
	memcpy(d->v + base + at * row, d->qkv + (size_t)(H + G) * D, row * sizeof(float));
	int first = pos - d->used; /* the position in slot 0 */
	int window; /* a local layer reads only its window of the cache */
	enum mask_kind mask = layer_mask(c, o, l, &window);
	int lo = mask == MASK_WINDOW && pos - window > first ? pos - window - first : 0;
	float scale = o->scale ? cfg_attn_scale(c) : 1.0f;
	attention_step(d->atty, d->att, d->qkv, d->k + base, d->v + base, d->used + 1, (int)row, H,
		       G, D, lo, scale, c->attn_softcap);
	model_heads_site(d->hook, o, l, d->atty, 1, 1, pos, H, D);
	if (d->keep)
		keep_heads(d, l, pos, first, lo, d->used + 1);
	matmul_w(d->tmp, d->atty, (struct wmat){ w->projw, w->projh }, w->projb, 1, H * D, C,
		 false);
	/* the sandwich norm of the attention's output (none without one) */
	norm_forward(c->norm, d->tmp, NULL, NULL, d->tmp, w->apw, NULL, 1, C, c->norm_eps);
}

/* The MLP of layer l on in into d->tmp, its sandwich norm after it. */
static void mlp(struct decoder *d, const struct model_config *c, const struct layer_weights *w,
		const float *in)
{
	mlp_forward(c, d->fch, d->fch_act, d->tmp, in, (struct wmat){ w->fcw, w->fch }, w->fcb,
		    (struct wmat){ w->fpw, w->fph }, w->fpb, 1, false);
	norm_forward(c->norm, d->tmp, NULL, NULL, d->tmp, w->mpw, NULL, 1, d->C, c->norm_eps);
}

/* decoder_step in a call over n_pos positions (decode.h). */
static int step(struct decoder *d, struct model *m, int token, int n_pos, struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (token < 0 || token >= c->vocab_size)
		return err_set(e, "token %d is outside the vocabulary (%d)", token, c->vocab_size);
	if (d->n >= d->cap)
		return err_set(e, "the cache holds %d positions and is full", d->cap);
	int C = d->C, L = d->L, pos = d->n;
	bool post = d->opt.placement == PLACE_POST;
	make_room(d);
	const float *qkvw, *qkvb;
	model_qkv_for(m, d->G, &qkvw, &qkvb);

	const float *te = model_embedding(m, token, d->x);
	float s = c->emb_scale > 0.0f ? c->emb_scale : 1.0f; /* as the full pass: embed_forward */
	for (int j = 0; j < C; j++)
		d->x[j] = c->pos == POS_LEARNED ? te[j] * s + m->p[P_WPE][(size_t)pos * C + j]
						: te[j] * s;
	if (d->keep)
		keep_resid(d, 0, pos);

	for (int l = 0; l < L; l++) {
		struct layer_weights w;
		model_layer(m, l, qkvw, qkvb, d->G, &w);

		const float *skip = c->residual ? d->x : NULL;
		if (!post) { /* x <- x + attn(norm1(x)); x <- x + mlp(norm2(x)), or
			      * parallel: x <- x + attn(norm1(x)) + mlp(norm2(x)) */
			norm_forward(c->norm, d->xn, NULL, NULL, d->x, w.ln1w, w.ln1b, 1, C, c->norm_eps);
			attend(d, m, l, &w, n_pos);
			residual_forward(d->ar, skip, d->tmp, C);
			if (c->d_ff) {
				norm_forward(c->norm, d->xn, NULL, NULL, c->parallel ? d->x : d->ar, w.ln2w,
					     w.ln2b, 1, C, c->norm_eps);
				mlp(d, c, &w, d->xn);
				residual_forward(d->x, c->residual || c->parallel ? d->ar : NULL, d->tmp, C);
			} else {
				memcpy(d->x, d->ar, (size_t)C * sizeof(float));
			}
		} else { /* x <- norm1(x + attn(x)); x <- norm2(x + mlp(x)) */
			memcpy(d->xn, d->x, (size_t)C * sizeof(float));
			attend(d, m, l, &w, n_pos);
			residual_forward(d->ar, skip, d->tmp, C);
			norm_forward(c->norm, d->xn, NULL, NULL, d->ar, w.ln1w, w.ln1b, 1, C, c->norm_eps);
			if (c->d_ff) {
				mlp(d, c, &w, d->xn);
				residual_forward(d->ar, c->residual ? d->xn : NULL, d->tmp, C);
				norm_forward(c->norm, d->x, NULL, NULL, d->ar, w.ln2w, w.ln2b, 1, C, c->norm_eps);
			} else {
				memcpy(d->x, d->xn, (size_t)C * sizeof(float));
			}
		}
		if (d->hook && d->hook->fn)
			d->hook->fn(d->hook->ctx, HOOK_RESID, l, d->x, 1, 1, pos, C);
		if (d->keep)
			keep_resid(d, l + 1, pos);
	}
	norm_forward(c->norm, d->xn, NULL, NULL, d->x, m->p[P_LNFW], m->p[P_LNFB], 1, C, c->norm_eps);
	if (d->keep) /* made in the kept run's row */
		d->logits = d->keep->logits + (size_t)pos * c->vocab_size;
	matmul_w(d->logits, d->xn, model_output_layer(m), NULL, 1, C, c->vocab_size, false);
	softcap_forward(d->logits, c->vocab_size, c->final_softcap);
	if (d->keep)
		keep_out(d, pos, c->vocab_size);
	d->ids[pos] = token;
	d->n++;
	d->used++;
	return 0;
}

int decoder_step(struct decoder *d, struct model *m, int token, struct err *e)
{
	if (!d->keep)
		return step(d, m, token, d->n + 1, e);
	double t0 = now_ms();
	int rc = step(d, m, token, d->n + 1, e);
	d->keep_ms += now_ms() - t0;
	return rc;
}

int decoder_prefill(struct decoder *d, struct model *m, const int *tokens, int n,
		    struct err *e)
{
	if (d->n + n > d->cap)
		return err_set(e, "%d more positions do not fit the cache of %d (%d used)", n, d->cap,
			       d->n);
	if (d->hook || d->n > 0 || n < 2) { /* a hook sees every step; a cache in use grows */
		int end = d->n + n; /* one call over positions up to end - 1 */
		for (int i = 0; i < n; i++)
			if (step(d, m, tokens[i], end, e) != 0)
				return -1;
		return 0;
	}
	const struct model_config *c = &m->cfg;
	struct run_options o = d->opt;
	if (o.mask == MASK_NONE || o.mask == MASK_AFTER_SOFTMAX)
		o.mask = MASK_CAUSAL; /* a step sees no later token */
	/* the keys and values of every layer (RUN_QKV), no logits: only the
	 * last row's are read, computed below */
	struct run *r = run_new(c, 1, n, RUN_QKV);
	if (model_forward(m, &o, tokens, NULL, 1, n, r, e) != 0) {
		run_free(r);
		return -1;
	}
	/* the last `slots` positions' keys and values (after RoPE), per layer */
	int keep = n < d->slots ? n : d->slots, first = n - keep;
	size_t row = (size_t)d->G * d->D, ld = (size_t)cfg_qkv_rows(c, d->G);
	for (int l = 0; l < d->L; l++) {
		const float *qkv = r->qkv + (size_t)l * r->lstride_qkv;
		float *k = d->k + (size_t)l * d->slots * row, *v = d->v + (size_t)l * d->slots * row;
		for (int i = 0; i < keep; i++) {
			const float *q = qkv + (size_t)(first + i) * ld;
			memcpy(k + (size_t)i * row, q + (size_t)d->H * d->D, row * sizeof(float));
			memcpy(v + (size_t)i * row, q + (size_t)(d->H + d->G) * d->D, row * sizeof(float));
		}
	}
	const float *last = r->resid + ((size_t)c->n_layer * n + n - 1) * c->d_model;
	model_head_forward(m, d->logits, d->xn, NULL, NULL, d->x, last, 1);
	memcpy(d->ids, tokens, (size_t)n * sizeof *tokens);
	d->n = n;
	d->used = keep;
	run_free(r);
	return 0;
}

/* Layer l's keys and values of the n positions of pass r into the cache
 * (its last `slots`), computed again from the layer's input rows as
 * model_forward's attention does: the norm (pre-norm), the QKV product,
 * the q/k norm, RoPE over a pass of n.  xn (n, C), qkv (n, QKV): scratch. */
static void kv_from_pass(struct decoder *d, struct model *m, const struct run *r, int l, int n,
			 const float *qkvw, const float *qkvb, float *xn, float *qkv)
{
	const struct model_config *c = &m->cfg;
	int C = d->C, H = d->H, G = d->G, D = d->D, QKV = cfg_qkv_rows(c, G);
	struct layer_weights w;
	model_layer(m, l, qkvw, qkvb, G, &w);
	const float *in = r->resid + (size_t)l * n * C;
	if (d->opt.placement != PLACE_POST) {
		norm_forward(c->norm, xn, NULL, NULL, in, w.ln1w, w.ln1b, n, C, c->norm_eps);
		in = xn;
	}
	matmul_w(qkv, in, (struct wmat){ w.qkvw, w.qkvh }, w.qkvb, n, C, QKV,
		 run_own_threads(r->flags)); /* as the pass made them */
	if (w.qnw)
		qk_norm_rows(qkv, n, QKV, H, G, D, w.qnw, w.knw, c->qk_norm_whole, c->norm_eps);
	if (c->pos == POS_ROPE) {
		float *freq = xmalloc((size_t)cfg_rotary_dims(c) / 2 * sizeof *freq);
		struct model_config rc;
		config_rope_of_layer(c, l, &rc);
		config_rope_freqs(&rc, n, freq);
		rope_forward(qkv, 1, n, H + G, D, cfg_rotary_dims(c), QKV, freq, cfg_rope_mscale(&rc));
		free(freq);
	}
	int keep = n < d->slots ? n : d->slots, first = n - keep;
	size_t row = (size_t)G * D;
	float *k = d->k + (size_t)l * d->slots * row, *v = d->v + (size_t)l * d->slots * row;
	for (int i = 0; i < keep; i++) {
		const float *q = qkv + (size_t)(first + i) * QKV;
		memcpy(k + (size_t)i * row, q + (size_t)H * D, row * sizeof(float));
		memcpy(v + (size_t)i * row, q + (size_t)(H + G) * D, row * sizeof(float));
	}
}

int decoder_prefill_from(struct decoder *d, struct model *m, const int *tokens, int n,
			 const struct run *r, struct err *e)
{
	if (d->n != 0 || n < 1 || n > d->cap)
		return err_set(e, "%d positions do not fit an empty cache of %d", n, d->cap);
	if (pass_fits(d, m, r, n, e) != 0)
		return -1;
	const struct model_config *c = &m->cfg;
	const float *qkvw, *qkvb;
	model_qkv_for(m, d->G, &qkvw, &qkvb);
	float *xn = xmalloc((size_t)n * d->C * sizeof *xn);
	float *qkv = xmalloc((size_t)n * cfg_qkv_rows(c, d->G) * sizeof *qkv);
	for (int l = 0; l < d->L; l++)
		kv_from_pass(d, m, r, l, n, qkvw, qkvb, xn, qkv);
	free(xn);
	free(qkv);
	memcpy(d->logits, run_logits_row(r, n - 1),
	       (size_t)c->vocab_size * sizeof *d->logits);
	memcpy(d->ids, tokens, (size_t)n * sizeof *tokens);
	d->n = n;
	d->used = n < d->slots ? n : d->slots;
	return 0;
}

int decoder_ids(const struct model *m)
{
	int V = m->cfg.vocab_size;

	return m->tok && m->tok->vocab_size > 0 && m->tok->vocab_size < V ? m->tok->vocab_size : V;
}
