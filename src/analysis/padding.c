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
	struct run *ra = run_new(&m->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	out->texts = xcalloc((size_t)n, sizeof *out->texts);
	out->n = n;
	out->T = T;
	out->pad_id = pad_id;
	int rc = 0;
	for (int masked = 0; masked <= 1 && rc == 0; masked++) {
		rb->key_len = masked ? lens : NULL;
		rc = model_forward(m, o, batch, tg, n, T, rb, e);
		for (int i = 0; i < n && rc == 0; i++) {
			struct pad_text *p = &out->texts[i];
			p->len = lens[i];
			rc = model_forward(m, o, tokens[i], tg + (size_t)i * T, 1, lens[i], ra, e);
			if (rc)
				break;
			p->loss_alone = seq_loss(ra, 0, lens[i]);
			double loss = seq_loss(rb, i, T), diff, pad;
			compare(rb, i, ra, lens[i], L, H, &diff, &pad);
			if (masked) {
				p->loss_masked = loss;
				p->diff_masked = diff;
				p->pad_masked = pad;
			} else {
				p->loss_unmasked = loss;
				p->diff_unmasked = diff;
				p->pad_unmasked = pad;
			}
		}
	}
	run_free(rb);
	run_free(ra);
	free(batch);
	free(tg);
	if (rc)
		pad_result_free(out);
	return rc;
}
