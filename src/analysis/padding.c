/*
 * padding.c — the padding lesson (padding.h).
 */
#include "padding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pad_result_free(struct pad_result *r)
{
	free(r->texts);
	memset(r, 0, sizeof *r);
}

/* Mean NLL of sequence b's positions with a target. */
static double seq_loss(const struct run *r, int b, int T)
{
	double s = 0;
	int n = 0;
	for (int t = 0; t < T; t++) {
		float v = r->nll[(size_t)b * T + t];
		if (!isnan(v)) {
			s += v;
			n++;
		}
	}
	return n ? s / n : NAN;
}

/* Compares sequence b of the batch run with the text's own run (len
 * tokens): the largest attention difference over real queries and keys,
 * and the most weight a real query puts on pads. */
static void compare(const struct run *batch, int b, const struct run *alone, int len, int L,
		    int H, double *diff, double *pad)
{
	int T = batch->t;
	*diff = 0;
	*pad = 0;
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			const float *ab = run_att(batch, l, b, h), *aa = run_att(alone, l, 0, h);
			for (int i = 0; i < len; i++) {
				double on_pads = 0;
				for (int j = 0; j < len; j++) {
					double d = fabs((double)ab[(size_t)i * T + j] - aa[(size_t)i * len + j]);
					*diff = d > *diff ? d : *diff;
				}
				for (int j = len; j < T; j++)
					on_pads += ab[(size_t)i * T + j];
				*pad = on_pads > *pad ? on_pads : *pad;
			}
		}
}

/* The batch runs: both masks, the attention mask alone, the padding mask
 * alone, neither. */
enum pad_arm { ARM_BOTH, ARM_ATTN_ONLY, ARM_PAD_ONLY, ARM_NEITHER, N_ARMS };

/* Stores the batch run's numbers for sequence i under arm a. */
static void store_arm(struct pad_text *p, enum pad_arm a, double loss, double diff, double pad)
{
	switch (a) {
	case ARM_BOTH:
		p->loss_masked = loss, p->diff_masked = diff, p->pad_masked = pad;
		break;
	case ARM_ATTN_ONLY:
		p->loss_unmasked = loss, p->diff_unmasked = diff, p->pad_unmasked = pad;
		break;
	case ARM_PAD_ONLY:
		p->loss_pad_only = loss, p->diff_pad_only = diff;
		break;
	case ARM_NEITHER:
		p->loss_neither = loss;
		break;
	case N_ARMS:
		break;
	}
}

int pad_run(struct model *m, const struct run_options *o, int n, int *const *tokens,
	    const int *lens, int pad_id, struct pad_result *out, struct err *e)
{
	memset(out, 0, sizeof *out);
	int T = 0, L = m->cfg.n_layer, H = m->cfg.n_head;
	for (int i = 0; i < n; i++) {
		if (lens[i] < 1 || lens[i] > m->cfg.context)
			return err_set(e, "text %d has %d tokens; each needs 1 to %d", i + 1, lens[i],
				       m->cfg.context);
		T = lens[i] > T ? lens[i] : T;
	}
	if (n < 1 || pad_id < 0 || pad_id >= m->cfg.vocab_size)
		return err_set(e, "nothing to pad");
	/* the batch: each text, then pads; targets only inside each text (the
	 * next token, or an encoder's own token: model_targets) */
	int *batch = xmalloc((size_t)n * T * sizeof *batch), *tg = xmalloc((size_t)n * T * sizeof *tg);
	int shift = cfg_is_encoder(&m->cfg) ? 0 : 1;
	for (int i = 0; i < n; i++)
		for (int t = 0; t < T; t++) {
			batch[(size_t)i * T + t] = t < lens[i] ? tokens[i][t] : pad_id;
			tg[(size_t)i * T + t] = t + shift < lens[i] ? tokens[i][t + shift] : -1;
		}
	struct run *rb = run_new(&m->cfg, n, T, RUN_LOGITS | RUN_ATTN);
	struct run **ra = xcalloc((size_t)n, sizeof *ra); /* each text alone, under o */
	out->texts = xcalloc((size_t)n, sizeof *out->texts);
	out->n = n;
	out->T = T;
	out->pad_id = pad_id;
	out->combined = o->mask != MASK_NONE;
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		ra[i] = run_new(&m->cfg, 1, lens[i], RUN_LOGITS | RUN_ATTN);
		rc = model_forward(m, o, tokens[i], tg + (size_t)i * T, 1, lens[i], ra[i], e);
		out->texts[i].len = lens[i];
		out->texts[i].loss_alone = rc ? NAN : seq_loss(ra[i], 0, lens[i]);
	}
	for (int a = 0; a < (out->combined ? N_ARMS : ARM_PAD_ONLY) && rc == 0; a++) {
		struct run_options oa = *o;
		if (a == ARM_PAD_ONLY || a == ARM_NEITHER)
			oa.mask = MASK_NONE;
		rb->key_len = a == ARM_BOTH || a == ARM_PAD_ONLY ? lens : NULL;
		rc = model_forward(m, &oa, batch, tg, n, T, rb, e);
		for (int i = 0; i < n && rc == 0; i++) {
			double diff, pad;
			compare(rb, i, ra[i], lens[i], L, H, &diff, &pad);
			store_arm(&out->texts[i], (enum pad_arm)a, seq_loss(rb, i, T), diff, pad);
		}
	}
	if (!out->combined)
		for (int i = 0; i < n; i++) {
			struct pad_text *p = &out->texts[i];
			p->loss_pad_only = p->loss_masked;
			p->diff_pad_only = p->diff_masked;
			p->loss_neither = p->loss_unmasked;
		}
	run_free(rb);
	for (int i = 0; i < n; i++)
		run_free(ra[i]);
	free(ra);
	free(batch);
	free(tg);
	if (rc)
		pad_result_free(out);
	return rc;
}
