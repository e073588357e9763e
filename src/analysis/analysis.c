/*
 * analysis.c — comparisons between runs, next-token rankings, simple
 * per-head summaries, the head-ablation sweep and the variant table.
 */
#include "analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"

/* log-softmax normaliser of one row of logits. */
static double log_norm(const float *z, int V)
{
	float mx = fast_maxf(z, V);
	double s = 0.0;
	for (int j = 0; j < V; j++)
		s += exp((double)z[j] - mx);
	return log(s) + mx;
}

static int argmax(const float *z, int V)
{
	int best = 0;
	for (int j = 1; j < V; j++)
		if (z[j] > z[best])
			best = j;
	return best;
}

/* Mean over the rows of the last block's output of ||h_run - h_base|| /
 * ||h_base||. */
static double output_drift(const struct run *base, const struct run *run)
{
	int N = run->b * run->t, C = run->C;
	const float *hb = base->resid + (size_t)run->L * N * C, *hr = run->resid + (size_t)run->L * N * C;
	double sum = 0.0;
	for (int i = 0; i < N; i++) {
		double d = 0.0, n = 0.0;
		for (int j = 0; j < C; j++) {
			double b = hb[(size_t)i * C + j], x = (double)hr[(size_t)i * C + j] - b;
			d += x * x;
			n += b * b;
		}
		sum += n > 0.0 ? sqrt(d / n) : 0.0;
	}
	return N ? sum / N : 0.0;
}

/* Whether every one of n floats is finite: blocks without an exit in
 * them, so that the test vectorises (a run's logits are T x V floats). */
static bool all_finite(const float *z, size_t n)
{
	for (size_t i = 0; i < n; i += 4096) {
		size_t end = n - i < 4096 ? n : i + 4096;
		bool ok = true;
		for (size_t j = i; j < end; j++)
			ok &= isfinite(z[j]) != 0;
		if (!ok)
			return false;
	}
	return true;
}

void compare_runs(const struct run *base, const struct run *run, struct comparison *out)
{
	int T = run->b * run->t, V = run->V; /* every position of every sequence */
	out->drift = output_drift(base, run);
	if (!base->logits || !run->logits) { /* no RUN_LOGITS */
		out->kl = out->top1_agree = out->delta_loss = NAN;
		return;
	}
	/* a run beside itself (the baseline is the run under native options):
	 * with finite logits every term below is exactly 0 and every argmax
	 * agrees, so skip the T x V exponentials */
	if (base == run && (!run->nonfinite.site || all_finite(run_logits(run), (size_t)T * V))) {
		out->kl = 0.0;
		out->top1_agree = 1.0;
		out->delta_loss = run->loss - base->loss;
		return;
	}
	double kl = 0.0;
	int agree = 0;
	const float *zp = run_logits(base), *zq = run_logits(run);
	for (int i = 0; i < T; i++) {
		const float *p = zp + (size_t)i * V, *q = zq + (size_t)i * V;
		double lp = log_norm(p, V), lq = log_norm(q, V), s = 0.0;
		for (int j = 0; j < V; j++) {
			double a = (double)p[j] - lp, b = (double)q[j] - lq;
			s += exp(a) * (a - b);
		}
		kl += isnan(s) ? s : s > 0.0 ? s : 0.0; /* a NaN stays NaN */
		agree += argmax(p, V) == argmax(q, V);
	}
	out->kl = T ? kl / T : 0.0;
	out->top1_agree = T ? (double)agree / T : 1.0;
	if (isnan(out->kl)) /* no argmax means anything among NaN logits */
		out->top1_agree = NAN;
	out->delta_loss = run->loss - base->loss;
}

int top_tokens(const struct run *r, int pos, int k, int *ids, double *prob)
{
	return logits_top(run_logits_row(r, pos), r->V, k, ids, prob);
}

int logits_top(const float *z, int V, int k, int *ids, double *prob)
{
	double ln = log_norm(z, V);
	if (k > V)
		k = V;
	int n = 0;
	for (int j = 0; j < V; j++) {
		/* insertion into the sorted top-k list */
		if (n == k && z[j] <= z[ids[n - 1]])
			continue;
		int i = n < k ? n++ : n - 1;
		while (i > 0 && z[ids[i - 1]] < z[j]) {
			ids[i] = ids[i - 1];
			i--;
		}
		ids[i] = j;
	}
	for (int i = 0; i < n; i++)
		prob[i] = exp((double)z[ids[i]] - ln);
	return n;
}

double token_prob(const struct run *r, int pos, int id)
{
	const float *z = run_logits_row(r, pos);
	return exp((double)z[id] - log_norm(z, r->V));
}

void head_entropy(const struct run *r, int l, int h, double *entropy, double *max_weight)
{
	int T = r->t;
	const float *a = run_att(r, l, 0, h);
	double ent = 0.0, mx_sum = 0.0;
	for (int i = 0; i < T; i++) {
		double mx = 0.0;
		ent += row_entropy(a + (size_t)i * T, T);
		for (int j = 0; j < T; j++)
			if (a[(size_t)i * T + j] > mx)
				mx = a[(size_t)i * T + j];
		/* row 0 of a causal head can only see itself: leave it out */
		if (i > 0 || T == 1)
			mx_sum += mx;
	}
	*entropy = T ? ent / T : 0.0;
	*max_weight = T > 1 ? mx_sum / (T - 1) : mx_sum;
}

double row_entropy(const float *w, int n)
{
	double ent = 0.0;
	for (int j = 0; j < n; j++)
		if (w[j] > 0.0f)
			ent -= (double)w[j] * log((double)w[j]);
	return ent;
}

double attention_row_sum(const struct run *r, int l, int h, int i)
{
	int T = r->t;
	const float *a = run_att(r, l, 0, h) + (size_t)i * T;
	double sum = 0.0;
	for (int j = 0; j < T; j++)
		sum += a[j];
	return sum;
}

void attention_row_sums(const struct run *r, struct row_sums *out)
{
	int L = r->L, H = r->H, T = r->t;
	double sum = 0.0;
	out->min = INFINITY;
	out->min_layer = out->min_head = out->min_query = 0;
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < T; i++) {
				double row = attention_row_sum(r, l, h, i);
				sum += row;
				if (row < out->min) {
					out->min = row;
					out->min_layer = l, out->min_head = h, out->min_query = i;
				}
			}
	out->mean = L * H * T > 0 ? sum / ((double)L * H * T) : 1.0;
	if (L * H * T == 0)
		out->min = 1.0;
}

/* ----------------------------------------------------------- ablation sweep */

static void ablation_from(struct ablation *a, const struct comparison *c)
{
	a->delta_loss = c->delta_loss;
	a->kl = c->kl;
	a->top1_agree = c->top1_agree;
}

static void ablation_unset(struct ablation *a)
{
	a->delta_loss = a->kl = a->top1_agree = NAN;
}

int sweep_run(struct model *m, const struct run_options *o, const int *tokens, int B, int T,
	      volatile sig_atomic_t *cancel, sweep_progress_fn progress, void *ctx,
	      struct sweep_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	int L = c->n_layer, H = c->n_head;
	memset(out, 0, sizeof *out);
	out->L = L;
	out->H = H;
	out->T = T;
	out->B = B;
	out->base_loss = NAN;
	out->opt = *o;
	memset(out->opt.ablated, 0, sizeof out->opt.ablated);
	out->head = xmalloc((size_t)L * H * sizeof *out->head);
	out->layer = xmalloc((size_t)L * sizeof *out->layer);
	for (int i = 0; i < L * H; i++)
		ablation_unset(&out->head[i]);
	for (int l = 0; l < L; l++)
		ablation_unset(&out->layer[l]);
	out->total = 1 + L * H + L;
	if (L * H > ABLATE_WORDS * 64)
		return err_set(e, "sweep: ablation supports up to %d heads; this model has %d",
			       ABLATE_WORDS * 64, L * H);
	if (T < 2)
		return err_set(e, "sweep needs at least 2 tokens (a loss needs a next token)");
	if (run_options_validate(m, &out->opt, e) != 0)
		return -1;

	struct run *base = run_new(c, B, T, RUN_LOGITS), *work = run_new(c, B, T, RUN_LOGITS);
	int rc = 0;
	struct comparison cmp;
	struct run_options ab;
	if (cancel && *cancel)
		goto cancelled;
	if (model_forward(m, &out->opt, tokens, NULL, B, T, base, e) != 0)
		goto fail;
	out->base_loss = base->loss;
	out->done++;
	if (progress)
		progress(ctx, out->done, out->total);
	for (int pass = 0; pass < L * H + L; pass++) {
		if (cancel && *cancel)
			goto cancelled;
		ab = out->opt;
		int l = pass < L * H ? pass / H : pass - L * H; /* the ablated layer */
		if (pass < L * H) {
			opt_set_ablated(&ab, pass, true);
		} else {
			for (int h = 0; h < H; h++)
				opt_set_ablated(&ab, l * H + h, true);
		}
		/* the blocks before the ablated layer are the unablated pass's */
		if (model_forward_from(m, &ab, tokens, NULL, base, l, work, e) != 0)
			goto fail;
		compare_runs(base, work, &cmp);
		ablation_from(pass < L * H ? &out->head[pass] : &out->layer[pass - L * H], &cmp);
		out->done++;
		if (progress)
			progress(ctx, out->done, out->total);
	}
	goto done;
cancelled:
	out->cancelled = true;
	rc = err_set(e, "sweep cancelled");
	goto done;
fail:
	rc = -1;
done:
	run_free(base);
	run_free(work);
	return rc;
}

void sweep_free(struct sweep_result *r)
{
	free(r->head);
	free(r->layer);
	r->head = r->layer = NULL;
}

int sweep_removable(const struct sweep_result *r, double frac)
{
	int n = 0;
	double limit = frac * r->base_loss;
	for (int i = 0; i < r->L * r->H; i++)
		n += !isnan(r->head[i].delta_loss) && r->head[i].delta_loss < limit;
	return n;
}

struct rank_item {
	double key;
	int idx;
};

static int rank_cmp(const void *pa, const void *pb)
{
	const struct rank_item *a = pa, *b = pb;
	bool na = isnan(a->key), nb = isnan(b->key);
	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->key != b->key)
		return a->key > b->key ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

void sweep_rank(const struct sweep_result *r, bool by_kl, int *idx)
{
	int n = r->L * r->H;
	struct rank_item *it = xmalloc((size_t)(n ? n : 1) * sizeof *it);
	for (int i = 0; i < n; i++) {
		it[i].key = by_kl ? r->head[i].kl : r->head[i].delta_loss;
		it[i].idx = i;
	}
	qsort(it, (size_t)n, sizeof *it, rank_cmp);
	for (int i = 0; i < n; i++)
		idx[i] = it[i].idx;
	free(it);
}

/* ----------------------------------------------------------- variant table */

/* "mha", "mqa" or "gqa G" for G key/value heads out of H. */
static void sharing_name(int G, int H, char *buf, size_t size)
{
	if (G == H)
		snprintf(buf, size, "mha");
	else if (G == 1)
		snprintf(buf, size, "mqa");
	else
		snprintf(buf, size, "gqa %d", G);
}

int variant_list(const struct model *m, struct variant_row *rows, int max)
{
	const struct model_config *c = &m->cfg;
	int H = c->n_head, n = 0;
	struct run_options nat;
	run_options_native(m, &nat);
	char sh[24];
#define ROW(opts, ...) \
	do { \
		if (n < max) { \
			memset(&rows[n], 0, sizeof rows[n]); \
			rows[n].opt = (opts); \
			rows[n].kv_heads = (opts).kv_heads; \
			snprintf(rows[n].name, sizeof rows[n].name, __VA_ARGS__); \
			n++; \
		} \
	} while (0)
	sharing_name(nat.kv_heads, H, sh, sizeof sh);
	ROW(nat, "native (%s)", sh);
	for (int G = H; G >= 1; G--) {
		if (H % G || G == nat.kv_heads)
			continue;
		struct run_options o = nat;
		o.kv_heads = G;
		sharing_name(G, H, sh, sizeof sh);
		ROW(o, "%s", sh);
	}
	struct run_options o = nat;
	o.placement = nat.placement == PLACE_PRE ? PLACE_POST : PLACE_PRE;
	ROW(o, "%s-norm", norm_place_name(o.placement));
	o = nat; /* the other mask: none, or causal for a bidirectional model (BERT) */
	o.mask = nat.mask == MASK_NONE ? MASK_CAUSAL : MASK_NONE;
	ROW(o, "mask %s", mask_kind_name(o.mask));
#undef ROW
	return n;
}

int variant_measure(struct model *m, const struct run_options *o, const int *tokens, int B, int T,
		    const struct run *ref, struct run *work, struct variant_row *out, struct err *e)
{
	double best = INFINITY;
	for (int pass = 0; pass < 2; pass++) {
		if (model_forward(m, o, tokens, NULL, B, T, work, e) != 0)
			return -1;
		best = work->forward_ms < best ? work->forward_ms : best;
	}
	struct comparison cmp;
	compare_runs(ref, work, &cmp);
	const struct model_config *c = &m->cfg;
	out->opt = *o;
	out->kv_heads = o->kv_heads;
	out->loss = work->loss;
	out->ppl = exp(work->loss);
	out->kl = cmp.kl;
	out->top1_agree = cmp.top1_agree;
	out->drift = cmp.drift;
	out->kv_bytes = kv_cache_bytes(c->n_layer, o->kv_heads, kv_positions(o, T), cfg_d_head(c), 4);
	out->forward_ms = best;
	return 0;
}
