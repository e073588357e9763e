/*
 * patch.c — activation patching (see patch.h): one clean pass that keeps
 * every head output and residual row, one corrupted pass that keeps every
 * block's input, then per site the corrupted pass resumed at the patched
 * block (model_blocks_from) with that site's clean activations written
 * back: through the run's hook for a head, into the next block's input for
 * a residual row.  Under a causal or window mask a residual row's pass
 * also starts at its row: the rows before it, and their keys and values,
 * are the corrupted pass's.  Every metric reads the last row's logits
 * alone.
 */
#include "patch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the hook does: keep the clean activations, put one head back, or
 * nothing. */
struct patcher {
	enum { KEEP, PUT_HEAD, NONE } mode;
	int T, H, D, C;
	float *heads;  /* (L, T, H*D) the clean run's head outputs */
	float *resid;  /* (L, T, C) the clean run's stream after each block */
	int layer, head; /* the head being put back (PUT_HEAD) */
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
	if (p->mode == PUT_HEAD && site == HOOK_HEADS && layer == p->layer)
		for (int i = 0; i < T; i++)
			memcpy(x + (size_t)i * width + (size_t)p->head * p->D,
			       keep + (size_t)i * width + (size_t)p->head * p->D, (size_t)p->D * sizeof(float));
}

/* The logits z (V) at the last position of r's last pass (its final block
 * output), through the output head alone; xn and tmp: (C) scratch. */
static void last_logits(const struct model *m, const struct run *r, float *z, float *xn, float *tmp)
{
	size_t C = (size_t)m->cfg.d_model;
	model_head_forward(m, z, xn, NULL, NULL, tmp,
			   r->resid + (size_t)m->cfg.n_layer * r->t * C + (size_t)(r->t - 1) * C, 1);
}

static int argmax(const float *z, int V)
{
	int best = 0;
	for (int j = 1; j < V; j++)
		best = z[j] > z[best] ? j : best;
	return best;
}

/* Block l's input of the corrupted pass back into r (the blocks from l on
 * were overwritten by the last patched pass). */
static void restore_input(struct run *r, const float *corrupt_resid, int l, size_t TC)
{
	memcpy(r->resid + (size_t)l * TC, corrupt_resid + (size_t)l * TC, TC * sizeof(float));
}

/* The corrupted pass's q, k and v rows row0 .. T-1 of blocks l0 .. L-1
 * back into r (qkv: its copy of r->qkv), after a patched pass replaced
 * them: a later site resuming by rows reads the keys before its row. */
static void restore_keys(struct run *r, const float *qkv, int l0, int row0, int rows)
{
	for (int l = l0; l < r->L; l++) {
		size_t at = (size_t)l * r->lstride_qkv + (size_t)row0 * rows;
		memcpy(r->qkv + at, qkv + at, (size_t)(r->t - row0) * rows * sizeof(float));
	}
}

int patch_run(struct model *m, const struct run_options *o, const int *clean, const int *corrupt,
	      int T, volatile sig_atomic_t *cancel, patch_progress_fn progress, void *ctx,
	      struct patch_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	int L = c->n_layer, H = c->n_head, C = c->d_model, V = c->vocab_size;
	size_t TC = (size_t)T * C;
	struct patcher p = { .mode = KEEP, .T = T, .H = H, .D = cfg_d_head(c), .C = C };
	p.heads = xmalloc((size_t)L * TC * sizeof(float)); /* H * D = C */
	p.resid = xmalloc((size_t)L * TC * sizeof(float));
	float *corrupt_resid = xmalloc((size_t)(L + 1) * TC * sizeof(float));
	float *z = xmalloc((size_t)V * sizeof *z), *zc = xmalloc((size_t)V * sizeof *zc);
	float *xn = xmalloc(2 * (size_t)C * sizeof *xn);
	struct run_hook hook = { patch_hook, &p };
	/* no logits: every metric is the last row's, from last_logits; every
	 * layer's keys kept where a residual row can be resumed from its row */
	bool causal = o->mask == MASK_CAUSAL || o->mask == MASK_WINDOW;
	struct run *r = run_new(c, 1, T, causal ? RUN_QKV : 0);
	float *corrupt_qkv = NULL;
	r->hook = &hook;
	int rc = -1;
	if (model_forward(m, o, clean, NULL, 1, T, r, e) != 0)
		goto out;
	last_logits(m, r, zc, xn, xn + C);
	out->clean_answer = argmax(zc, V);
	p.mode = NONE;
	if (model_forward(m, o, corrupt, NULL, 1, T, r, e) != 0)
		goto out;
	memcpy(corrupt_resid, r->resid, (size_t)(L + 1) * TC * sizeof(float));
	bool by_rows = model_rows_resumable(r);
	int qkv_rows = cfg_qkv_rows(c, run_kv_heads(m, o)); /* floats a qkv row holds */
	if (by_rows) {
		size_t n = (size_t)L * r->lstride_qkv;
		corrupt_qkv = xmalloc(n * sizeof *corrupt_qkv);
		memcpy(corrupt_qkv, r->qkv, n * sizeof *corrupt_qkv);
	}
	last_logits(m, r, z, xn, xn + C);
	out->corrupt_answer = argmax(z, V);
	if (out->clean_answer == out->corrupt_answer) {
		err_set(e, "both texts lead to the same next token at the last position: nothing "
			   "to restore (choose a corrupted text whose prediction differs)");
		goto out;
	}
	int a = out->clean_answer, b = out->corrupt_answer;
	out->ld_corrupt = (double)z[a] - (double)z[b];
	out->ld_clean = (double)zc[a] - (double)zc[b];
	double span = out->ld_clean - out->ld_corrupt;

	out->L = L;
	out->H = H;
	out->T = T;
	out->heads = xmalloc((size_t)L * H * sizeof *out->heads);
	out->resid = xmalloc((size_t)L * T * sizeof *out->resid);
	/* every site: heads (l, h), then residual rows (l, t) */
	int n_heads = L * H, n_sites = n_heads + L * T;
	for (int k = 0; k < n_sites; k++) {
		if (cancel && *cancel) {
			err_set(e, "patch cancelled");
			goto out;
		}
		bool head = k < n_heads;
		int i = head ? k : k - n_heads, per = head ? H : T;
		int l = i / per, from = l, row0 = 0;
		if (head) {
			/* block l again, the hook putting head (l, h) back */
			p.mode = PUT_HEAD;
			p.layer = l;
			p.head = i % per;
			restore_input(r, corrupt_resid, l, TC);
		} else {
			/* block l's output row t is block l + 1's input; under a
			 * causal or window mask no later block changes before row t */
			int t = i % per;
			p.mode = NONE;
			from = l + 1;
			row0 = by_rows ? t : 0;
			restore_input(r, corrupt_resid, from, TC);
			memcpy(r->resid + (size_t)from * TC + (size_t)t * C,
			       p.resid + (size_t)l * TC + (size_t)t * C, (size_t)C * sizeof(float));
		}
		if (model_blocks_from(m, r, from, row0, e) != 0)
			goto out;
		if (by_rows)
			restore_keys(r, corrupt_qkv, from, row0, qkv_rows);
		last_logits(m, r, z, xn, xn + C);
		double share = ((double)z[a] - (double)z[b] - out->ld_corrupt) / span;
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
	free(z);
	free(zc);
	free(xn);
	free(corrupt_resid);
	free(corrupt_qkv);
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
