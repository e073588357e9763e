/*
 * patch.c — activation patching (see patch.h): one clean pass that keeps
 * every head output and residual row, one corrupted pass, then one
 * corrupted pass per site with that site's clean activations written back
 * through the run's hook.
 */
#include "patch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the hook does: keep the clean activations, or put one site back. */
struct patcher {
	enum { KEEP, PUT_HEAD, PUT_ROW } mode;
	int T, H, D, C;
	float *heads;  /* (L, T, H*D) the clean run's head outputs */
	float *resid;  /* (L, T, C) the clean run's stream after each block */
	int layer, head, row; /* the site being patched */
};

static void patch_hook(void *ctx, enum hook_site site, int layer, float *x, int B, int T,
		       int pos0, int width)
{
	struct patcher *p = ctx;
	(void)B;
	(void)pos0;
	float *keep = site == HOOK_HEADS ? p->heads + (size_t)layer * p->T * width
					 : p->resid + (size_t)layer * p->T * width;
	if (p->mode == KEEP) {
		memcpy(keep, x, (size_t)T * width * sizeof(float));
		return;
	}
	if (layer != p->layer)
		return;
	if (p->mode == PUT_HEAD && site == HOOK_HEADS) {
		for (int i = 0; i < T; i++)
			memcpy(x + (size_t)i * width + (size_t)p->head * p->D,
			       keep + (size_t)i * width + (size_t)p->head * p->D, (size_t)p->D * sizeof(float));
	} else if (p->mode == PUT_ROW && site == HOOK_RESID) {
		memcpy(x + (size_t)p->row * width, keep + (size_t)p->row * width,
		       (size_t)width * sizeof(float));
	}
}

/* The logits at the last position of run r. */
static const float *last_logits(const struct run *r)
{
	return r->logits + (size_t)(r->t - 1) * r->V;
}

/* logit[a] - logit[b] at the last position of run r. */
static double logit_diff(const struct run *r, int a, int b)
{
	const float *z = last_logits(r);
	return (double)z[a] - (double)z[b];
}

static int argmax(const float *z, int V)
{
	int best = 0;
	for (int j = 1; j < V; j++)
		best = z[j] > z[best] ? j : best;
	return best;
}

int patch_run(struct model *m, const struct run_options *o, const int *clean, const int *corrupt,
	      int T, volatile sig_atomic_t *cancel, patch_progress_fn progress, void *ctx,
	      struct patch_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	int L = c->n_layer, H = c->n_head, C = c->d_model;
	struct patcher p = { .mode = KEEP, .T = T, .H = H, .D = cfg_d_head(c), .C = C };
	p.heads = xmalloc((size_t)L * T * C * sizeof(float)); /* H * D = C */
	p.resid = xmalloc((size_t)L * T * C * sizeof(float));
	struct run_hook hook = { patch_hook, &p };
	struct run *r = run_new(c, 1, T, RUN_LOGITS);
	r->hook = &hook;
	int rc = -1, V = c->vocab_size;
	float *zc = xmalloc((size_t)V * sizeof *zc); /* the clean run's last logits */
	if (model_forward(m, o, clean, NULL, 1, T, r, e) != 0)
		goto out;
	memcpy(zc, last_logits(r), (size_t)V * sizeof *zc);
	out->clean_answer = argmax(zc, V);
	r->hook = NULL;
	if (model_forward(m, o, corrupt, NULL, 1, T, r, e) != 0)
		goto out;
	out->corrupt_answer = argmax(last_logits(r), V);
	if (out->clean_answer == out->corrupt_answer) {
		err_set(e, "both texts lead to the same next token at the last position: nothing "
			   "to restore (choose a corrupted text whose prediction differs)");
		goto out;
	}
	out->ld_corrupt = logit_diff(r, out->clean_answer, out->corrupt_answer);
	out->ld_clean = (double)zc[out->clean_answer] - (double)zc[out->corrupt_answer];
	double span = out->ld_clean - out->ld_corrupt;

	out->L = L;
	out->H = H;
	out->T = T;
	out->heads = xmalloc((size_t)L * H * sizeof *out->heads);
	out->resid = xmalloc((size_t)L * T * sizeof *out->resid);
	r->hook = &hook;
	/* every site: heads (l, h), then residual rows (l, t) */
	int n_heads = L * H, n_sites = n_heads + L * T;
	for (int k = 0; k < n_sites; k++) {
		if (cancel && *cancel) {
			err_set(e, "patch cancelled");
			goto out;
		}
		bool head = k < n_heads;
		int i = head ? k : k - n_heads, per = head ? H : T;
		p.mode = head ? PUT_HEAD : PUT_ROW;
		p.layer = i / per;
		p.head = p.row = i % per;
		if (model_forward(m, o, corrupt, NULL, 1, T, r, e) != 0)
			goto out;
		double share = (logit_diff(r, out->clean_answer, out->corrupt_answer) - out->ld_corrupt) / span;
		if (head)
			out->heads[i] = share;
		else
			out->resid[i] = share;
		if (progress)
			progress(ctx, k + 1, n_sites);
	}
	rc = 0;
out:
	if (rc != 0)
		patch_free(out);
	free(zc);
	run_free(r);
	free(p.heads);
	free(p.resid);
	return rc;
}

void patch_free(struct patch_result *r)
{
	free(r->heads);
	free(r->resid);
	memset(r, 0, sizeof *r);
}
