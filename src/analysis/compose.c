/*
 * compose.c — composition scores (see compose.h).  Each head's W_Q, W_K,
 * W_V (folded with its layer's input norm) and W_O are copied to double
 * once, with their D x D Gram matrices; a pair's three scores then cost
 * three (D, C) x (C, D) products and a few D x D ones.  The baseline runs
 * the same pair score on standard normal matrices.
 */
#include "compose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One head's matrices, in double.  Grams: gq = W_Q W_Q^T, gk, gv likewise,
 * go = W_O^T W_O, all (D, D). */
struct head_mats {
	double *q, *k, *v; /* (D, C) */
	double *o;         /* (C, D) */
	double *gq, *gk, *gv, *go;
	double qk, ov;     /* ||W_QK||, ||W_OV|| */
};

static void mats_alloc(struct head_mats *h, int C, int D)
{
	size_t dc = (size_t)D * C, dd = (size_t)D * D;
	h->q = xmalloc((4 * dc + 4 * dd) * sizeof(double));
	h->k = h->q + dc;
	h->v = h->k + dc;
	h->o = h->v + dc;
	h->gq = h->o + dc;
	h->gk = h->gq + dd;
	h->gv = h->gk + dd;
	h->go = h->gv + dd;
}

/* out (D, D) = a b^T for a, b (D, n) rows. */
static void gram_rows(double *out, const double *a, const double *b, int D, int n)
{
	for (int i = 0; i < D; i++)
		for (int j = 0; j < D; j++) {
			double s = 0;
			for (int c = 0; c < n; c++)
				s += a[(size_t)i * n + c] * b[(size_t)j * n + c];
			out[i * D + j] = s;
		}
}

/* sum_ij a_ij b_ij of two (D, D) matrices: tr(a^T b). */
static double frob_dot(const double *a, const double *b, int D)
{
	double s = 0;
	for (int i = 0; i < D * D; i++)
		s += a[i] * b[i];
	return s;
}

/* The Grams and norms of h from its q, k, v, o. */
static void mats_finish(struct head_mats *h, int C, int D)
{
	gram_rows(h->gq, h->q, h->q, D, C);
	gram_rows(h->gk, h->k, h->k, D, C);
	gram_rows(h->gv, h->v, h->v, D, C);
	for (int i = 0; i < D; i++)
		for (int j = 0; j < D; j++) {
			double s = 0;
			for (int c = 0; c < C; c++)
				s += h->o[(size_t)c * D + i] * h->o[(size_t)c * D + j];
			h->go[i * D + j] = s;
		}
	h->qk = sqrt(frob_dot(h->gq, h->gk, D)); /* ||W_Q^T W_K||^2 = tr(gq gk) */
	h->ov = sqrt(frob_dot(h->go, h->gv, D)); /* ||W_O W_V||^2 = tr(go gv) */
}

/* D rows of a float matrix with C columns into dst, times diag(g) and,
 * with centre, minus each row's mean (W diag(g) P); g NULL: unfolded. */
static void fold_rows(double *dst, const float *src, const float *g, bool centre, int D, int C)
{
	for (int d = 0; d < D; d++) {
		double *r = dst + (size_t)d * C, mean = 0;
		for (int c = 0; c < C; c++) {
			r[c] = (double)src[(size_t)d * C + c] * (g ? g[c] : 1.0f);
			mean += r[c];
		}
		mean = centre ? mean / C : 0.0;
		for (int c = 0; c < C; c++)
			r[c] -= mean;
	}
}

/* Head h of layer l of m with G K/V heads, qkvw the pass's fused weights. */
static void head_from_model(const struct model *m, const float *qkvw, int G, bool pre, int l,
			    int h, struct head_mats *out)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), g = h / (H / G);
	const float *w = qkvw + (size_t)l * cfg_qkv_rows(c, G) * C;
	const float *gain = pre ? m->p[P_LN1W] + (size_t)l * C : NULL;
	bool centre = pre && c->norm == NORM_LAYER;
	fold_rows(out->q, w + (size_t)h * D * C, gain, centre, D, C);
	fold_rows(out->k, w + (size_t)(H + g) * D * C, gain, centre, D, C);
	fold_rows(out->v, w + (size_t)(H + G + g) * D * C, gain, centre, D, C);
	const float *pw = m->p[P_ATTPROJW] + (size_t)l * C * C;
	for (int r = 0; r < C; r++)
		for (int d = 0; d < D; d++)
			out->o[(size_t)r * D + d] = pw[(size_t)r * C + h * D + d];
	mats_finish(out, C, D);
}

/* ||L X W_V^A|| with X = M O^A (M: B's q, k or v), through the Grams:
 * tr(X^T gl X gv^A), gl the Gram of the left factor L (go for W_O, gk for
 * W_K^T, gq for W_Q^T).  x, y: (D, D) scratch. */
static double pair_norm(const double *mb, const double *gl, const struct head_mats *a, int C,
			int D, double *x, double *y)
{
	for (int i = 0; i < D; i++) /* x = M O^A */
		for (int j = 0; j < D; j++) {
			double s = 0;
			for (int c = 0; c < C; c++)
				s += mb[(size_t)i * C + c] * a->o[(size_t)c * D + j];
			x[i * D + j] = s;
		}
	for (int i = 0; i < D; i++) /* y = gl x */
		for (int j = 0; j < D; j++) {
			double s = 0;
			for (int k = 0; k < D; k++)
				s += gl[i * D + k] * x[k * D + j];
			y[i * D + j] = s;
		}
	double t = 0; /* tr(x^T y gv) = sum_ij (x^T y)_ij gv_ij */
	for (int i = 0; i < D; i++)
		for (int j = 0; j < D; j++) {
			double s = 0;
			for (int k = 0; k < D; k++)
				s += x[k * D + i] * y[k * D + j];
			t += s * a->gv[i * D + j];
		}
	return sqrt(t > 0 ? t : 0);
}

/* The three scores of A -> B into score[COMPOSE_KINDS]. */
static void pair_scores(const struct head_mats *a, const struct head_mats *b, int C, int D,
			double *x, double *y, double *score)
{
	double den_qk = b->qk * a->ov, den_ov = b->ov * a->ov;
	score[COMPOSE_Q] = den_qk > 0 ? pair_norm(b->q, b->gk, a, C, D, x, y) / den_qk : 0;
	score[COMPOSE_K] = den_qk > 0 ? pair_norm(b->k, b->gq, a, C, D, x, y) / den_qk : 0;
	score[COMPOSE_V] = den_ov > 0 ? pair_norm(b->v, b->go, a, C, D, x, y) / den_ov : 0;
}

/* The baseline: mean scores of COMPOSE_DRAWS standard normal pairs. */
static void baseline(int C, int D, double *x, double *y, double *out)
{
	struct rng g;
	rng_seed(&g, COMPOSE_SEED);
	struct head_mats h[2];
	mats_alloc(&h[0], C, D);
	mats_alloc(&h[1], C, D);
	for (int k = 0; k < COMPOSE_KINDS; k++)
		out[k] = 0;
	for (int n = 0; n < COMPOSE_DRAWS; n++) {
		for (int i = 0; i < 2; i++) {
			for (size_t j = 0; j < 4 * (size_t)D * C; j++)
				h[i].q[j] = rng_normal(&g); /* q, k, v and o are one block */
			mats_finish(&h[i], C, D);
		}
		double s[COMPOSE_KINDS];
		pair_scores(&h[0], &h[1], C, D, x, y, s);
		for (int k = 0; k < COMPOSE_KINDS; k++)
			out[k] += s[k] / COMPOSE_DRAWS;
	}
	free(h[0].q);
	free(h[1].q);
}

int compose_run(struct model *m, const struct run_options *o, struct compose_result *out,
		struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (run_options_validate(m, o, e) != 0)
		return -1;
	int L = c->n_layer, H = c->n_head, C = c->d_model, D = cfg_d_head(c);
	if (L < 2)
		return err_set(e, "composition needs two layers or more: this model has %d", L);
	int G = run_kv_heads(m, o);
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	struct head_mats *hm = xmalloc((size_t)L * H * sizeof *hm);
	for (int i = 0; i < L * H; i++) {
		mats_alloc(&hm[i], C, D);
		head_from_model(m, qkvw, G, o->placement == PLACE_PRE, i / H, i % H, &hm[i]);
	}
	double *x = xmalloc(2 * (size_t)D * D * sizeof *x), *y = x + (size_t)D * D;
	out->L = L;
	out->H = H;
	out->G = G;
	out->pairs = xmalloc((size_t)H * H * L * (L - 1) / 2 * sizeof *out->pairs);
	for (int a = 0; a < L * H; a++)
		for (int b = (a / H + 1) * H; b < L * H; b++) {
			struct compose_pair *p = &out->pairs[out->n++];
			*p = (struct compose_pair){ a / H, a % H, b / H, b % H, { 0 } };
			pair_scores(&hm[a], &hm[b], C, D, x, y, p->score);
		}
	baseline(C, D, x, y, out->baseline);
	free(x);
	for (int i = 0; i < L * H; i++)
		free(hm[i].q);
	free(hm);
	return 0;
}

void compose_free(struct compose_result *r)
{
	if (!r)
		return;
	free(r->pairs);
	memset(r, 0, sizeof *r);
}

struct ranked {
	double score;
	int i;
};

static int by_score(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->i - y->i;
}

void compose_rank(const struct compose_result *r, enum compose_kind k, int *order)
{
	struct ranked *t = xmalloc((size_t)r->n * sizeof *t);
	for (int i = 0; i < r->n; i++)
		t[i] = (struct ranked){ r->pairs[i].score[k], i };
	qsort(t, (size_t)r->n, sizeof *t, by_score);
	for (int i = 0; i < r->n; i++)
		order[i] = t[i].i;
	free(t);
}

const char *compose_kind_name(enum compose_kind k)
{
	return k == COMPOSE_Q ? "Q" : k == COMPOSE_K ? "K" : "V";
}
