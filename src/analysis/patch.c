/*
 * patch.c — activation patching (see patch.h): one clean pass that keeps
 * every head output and residual row, one corrupted pass of k copies of
 * the corrupted text that keeps every block's input, then per batch of k
 * sites the corrupted pass resumed at the patched block
 * (model_blocks_from), sequence b with site b's clean activations written
 * back: through the run's hook for a head, into the next block's input for
 * a residual row.  Short texts batch k sites a pass, so that a pass
 * multiplies enough rows to read each weight once for several sites;
 * longer ones run one site a pass (k = 1), and under a causal or window
 * mask a residual row's pass then starts at its row: the rows before it,
 * and their keys and values, are the corrupted pass's.  Every metric reads
 * the last row of each sequence through the output head alone, k rows at
 * once in every pass, the corrupted one included, so that a site that
 * changes nothing restores 0: exactly at k = 1, and up to float rounding
 * in a batch, whose rows OpenBLAS may multiply with different
 * micro-kernels (a few 1e-8 of the logit difference with the Haswell
 * kernels).
 */
#include "patch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PATCH_ROWS 512    /* rows a batched pass aims at */
#define PATCH_BATCH_T 128 /* texts this long or longer run one site a pass */

/* What the hook does: keep the clean activations, put heads back, or
 * nothing. */
struct patcher {
	enum { KEEP, PUT_HEAD, NONE } mode;
	int T, D;
	float *heads;  /* (L, T, H*D) the clean run's head outputs */
	float *resid;  /* (L, T, C) the clean run's stream after each block */
	int layer, head0, n; /* PUT_HEAD: sequence b < n gets head head0 + b back */
};

static void patch_hook(void *ctx, enum hook_site site, int layer, float *x, int B, int T,
		       int pos0, int width)
{
	struct patcher *p = ctx;
	(void)pos0;
	float *keep = site == HOOK_HEADS ? p->heads + (size_t)layer * p->T * width
					 : p->resid + (size_t)layer * p->T * width;
	if (p->mode == KEEP) {
		memcpy(keep, x, (size_t)T * width * sizeof(float));
		return;
	}
	if (p->mode != PUT_HEAD || site != HOOK_HEADS || layer != p->layer)
		return;
	for (int b = 0; b < B && b < p->n; b++) {
		size_t col = (size_t)(p->head0 + b) * p->D;
		for (int i = 0; i < T; i++)
			memcpy(x + ((size_t)b * T + i) * width + col, keep + (size_t)i * width + col,
			       (size_t)p->D * sizeof(float));
	}
}

/* A patching run: the run of k sequences, the corrupted pass's inputs,
 * and the output head's scratch. */
struct patching {
	struct model *m;
	struct run *r;
	int k, T, C, L, V;
	float *corrupt_resid; /* (L+1, T, C) one sequence of the corrupted pass */
	float *corrupt_qkv;   /* the corrupted pass's r->qkv when rows resume by row */
	int qkv_floats;       /* floats in a row of qkv */
	float *last, *xn, *tmp; /* (k, C) */
	float *z;             /* (k, V) the last row's logits of each sequence */
};

/* The logits of the last row of each of the k sequences of r's last pass
 * (its final block output) into P->z. */
static void last_logits(struct patching *P)
{
	const struct run *r = P->r;
	size_t TC = (size_t)P->T * P->C;
	const float *out = r->resid + (size_t)P->L * r->b * TC;
	for (int b = 0; b < r->b; b++)
		memcpy(P->last + (size_t)b * P->C, out + b * TC + (size_t)(P->T - 1) * P->C,
		       (size_t)P->C * sizeof(float));
	model_head_forward(P->m, P->z, P->xn, NULL, NULL, P->tmp, P->last, r->b);
}

static int argmax(const float *z, int V)
{
	int best = 0;
	for (int j = 1; j < V; j++)
		best = z[j] > z[best] ? j : best;
	return best;
}

/* Block l's input of the corrupted pass back into every sequence of r
 * (the blocks from l on were overwritten by the last patched pass). */
static void restore_input(struct patching *P, int l)
{
	size_t TC = (size_t)P->T * P->C;
	float *in = P->r->resid + (size_t)l * P->k * TC;
	for (int b = 0; b < P->k; b++)
		memcpy(in + b * TC, P->corrupt_resid + (size_t)l * TC, TC * sizeof(float));
}

/* The corrupted pass's q, k and v rows row0 .. T-1 of blocks l0 .. L-1
 * back into r, after a patched pass replaced them: a later site resuming
 * by rows reads the keys before its row. */
static void restore_keys(struct patching *P, int l0, int row0)
{
	struct run *r = P->r;
	for (int l = l0; l < P->L; l++) {
		size_t at = (size_t)l * r->lstride_qkv + (size_t)row0 * P->qkv_floats;
		memcpy(r->qkv + at, P->corrupt_qkv + at,
		       (size_t)(P->T - row0) * P->qkv_floats * sizeof(float));
	}
}

/* Sequences per pass: as given, else by the text's length. */
static int batch_size(int batch, int T, int H)
{
	if (batch > 0)
		return batch;
	if (T >= PATCH_BATCH_T)
		return 1;
	int k = PATCH_ROWS / T;
	return k < 1 ? 1 : k > H ? H : k;
}

/* The clean pass (keeping its sites through the hook) and the corrupted
 * one (k copies; its block inputs and keys kept in P), with the answers
 * and metrics into out.  0, or -1 with e set. */
static int reference_passes(struct patching *P, struct patcher *p, const struct run_options *o,
			    const int *clean, const int *corrupt, struct patch_result *out,
			    struct err *e)
{
	struct run *r = P->r;
	int k = P->k, T = P->T, V = P->V;
	size_t TC = (size_t)T * P->C;
	p->mode = KEEP;
	if (model_forward(P->m, o, clean, NULL, 1, T, r, e) != 0)
		return -1;
	last_logits(P);
	float *zc = xmalloc((size_t)V * sizeof *zc);
	memcpy(zc, P->z, (size_t)V * sizeof *zc);
	out->clean_answer = argmax(zc, V);

	p->mode = NONE;
	int *copies = xmalloc((size_t)k * T * sizeof *copies);
	for (int b = 0; b < k; b++)
		memcpy(copies + (size_t)b * T, corrupt, (size_t)T * sizeof *copies);
	int rc = model_forward(P->m, o, copies, NULL, k, T, r, e);
	free(copies);
	if (rc != 0) {
		free(zc);
		return -1;
	}
	for (int l = 0; l <= P->L; l++)
		memcpy(P->corrupt_resid + (size_t)l * TC, r->resid + (size_t)l * k * TC, TC * sizeof(float));
	if (k == 1 && model_rows_resumable(r)) {
		size_t n = (size_t)P->L * r->lstride_qkv;
		P->corrupt_qkv = xmalloc(n * sizeof *P->corrupt_qkv);
		memcpy(P->corrupt_qkv, r->qkv, n * sizeof *P->corrupt_qkv);
	}
	last_logits(P);
	out->corrupt_answer = argmax(P->z, V);
	int a = out->clean_answer, c = out->corrupt_answer;
	out->ld_corrupt = (double)P->z[a] - (double)P->z[c];
	out->ld_clean = (double)zc[a] - (double)zc[c];
	free(zc);
	if (a == c)
		return err_set(e, "both texts lead to the same next token at the last position: "
			       "nothing to restore (choose a corrupted text whose prediction differs)");
	return 0;
}

/* One pass over n sites of one layer: heads first .. first+n-1 of layer
 * l (head), or the stream after block l at rows first .. first+n-1; their
 * shares into dst[0 .. n).  0, or -1 with e set. */
static int patch_batch(struct patching *P, struct patcher *p, bool head, int l, int first, int n,
		       const struct patch_result *out, double *dst, struct err *e)
{
	int from = l, row0 = 0;
	if (head) {
		/* block l again, the hook putting head first + b back in sequence b */
		p->mode = PUT_HEAD;
		p->layer = l;
		p->head0 = first;
		p->n = n;
		restore_input(P, l);
	} else {
		/* block l's output row t is block l + 1's input; under a causal
		 * or window mask no later block changes before row t */
		p->mode = NONE;
		from = l + 1;
		row0 = P->corrupt_qkv ? first : 0;
		restore_input(P, from);
		size_t TC = (size_t)P->T * P->C;
		float *in = P->r->resid + (size_t)from * P->k * TC;
		for (int b = 0; b < n; b++)
			memcpy(in + b * TC + (size_t)(first + b) * P->C,
			       p->resid + (size_t)l * TC + (size_t)(first + b) * P->C,
			       (size_t)P->C * sizeof(float));
	}
	if (model_blocks_from(P->m, P->r, from, row0, e) != 0)
		return -1;
	if (P->corrupt_qkv)
		restore_keys(P, from, row0);
	last_logits(P);
	double span = out->ld_clean - out->ld_corrupt;
	for (int b = 0; b < n; b++) {
		const float *z = P->z + (size_t)b * P->V;
		double ld = (double)z[out->clean_answer] - (double)z[out->corrupt_answer];
		dst[b] = (ld - out->ld_corrupt) / span;
	}
	return 0;
}

int patch_run(struct model *m, const struct run_options *o, const int *clean, const int *corrupt,
	      int T, int batch, volatile sig_atomic_t *cancel, patch_progress_fn progress,
	      void *ctx, struct patch_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	int L = c->n_layer, H = c->n_head, C = c->d_model, k = batch_size(batch, T, H);
	struct patching P = { .m = m, .k = k, .T = T, .C = C, .L = L, .V = c->vocab_size };
	P.qkv_floats = cfg_qkv_rows(c, run_kv_heads(m, o));
	P.corrupt_resid = xmalloc((size_t)(L + 1) * T * C * sizeof(float));
	P.last = xmalloc((size_t)k * C * sizeof(float));
	P.xn = xmalloc((size_t)k * C * sizeof(float));
	P.tmp = xmalloc((size_t)k * C * sizeof(float));
	P.z = xmalloc((size_t)k * P.V * sizeof(float));
	struct patcher p = { .T = T, .D = cfg_d_head(c) };
	p.heads = xmalloc((size_t)L * T * cfg_attn_width(c) * sizeof(float)); /* (L, T, H * D) */
	p.resid = xmalloc((size_t)L * T * C * sizeof(float));
	struct run_hook hook = { patch_hook, &p };
	/* no logits (the metrics are the last rows', from last_logits); every
	 * layer's keys kept where a residual row's pass can start at its row */
	bool by_rows = k == 1 && (o->mask == MASK_CAUSAL || o->mask == MASK_WINDOW);
	P.r = run_new(c, k, T, by_rows ? RUN_QKV : 0);
	P.r->hook = &hook;
	int rc = -1;
	if (reference_passes(&P, &p, o, clean, corrupt, out, e) != 0)
		goto out;

	out->L = L;
	out->H = H;
	out->T = T;
	out->heads = xmalloc((size_t)L * H * sizeof *out->heads);
	out->resid = xmalloc((size_t)L * T * sizeof *out->resid);
	/* every site, k at a time within a layer: heads (l, h), then
	 * residual rows (l, t) */
	int done = 0, total = L * H + L * T;
	for (int pass = 0; pass < 2; pass++) {
		bool head = pass == 0;
		int per = head ? H : T;
		for (int l = 0; l < L; l++)
			for (int first = 0; first < per; first += k) {
				if (cancel && *cancel) {
					err_set(e, "patch cancelled");
					goto out;
				}
				int n = per - first < k ? per - first : k;
				double *dst = head ? out->heads + (size_t)l * H + first
						   : out->resid + (size_t)l * T + first;
				if (patch_batch(&P, &p, head, l, first, n, out, dst, e) != 0)
					goto out;
				done += n;
				if (progress)
					progress(ctx, done, total);
			}
	}
	rc = 0;
out:
	if (rc != 0)
		patch_free(out);
	run_free(P.r);
	free(P.corrupt_resid);
	free(P.corrupt_qkv);
	free(P.last);
	free(P.xn);
	free(P.tmp);
	free(P.z);
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

void patch_rank(const struct patch_result *r, int *order)
{
	int n = r->L * r->H;
	for (int i = 0; i < n; i++) { /* insertion: ties keep the lower index first */
		int j = i;
		while (j > 0 && r->heads[order[j - 1]] < r->heads[i]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}
