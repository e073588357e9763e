/*
 * compose.c — composition scores (see compose.h).  A first pass over the
 * layers keeps each head's D x D Gram matrices and the norms of its W_QK
 * and W_OV; then for each layer B of later heads and each earlier layer
 * A, one (H D, C) x (C, H D) product per kind gives X = M^B O^A for every
 * pair of their heads at once (M: B's W_Q, W_K or W_V, folded), and each
 * pair's score needs two D x D products more.  At most two layers' folded
 * matrices are held at a time.  The baseline runs the same pair score on
 * standard normal matrices.
 */
#include "compose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* One layer's matrices, in double, for H heads: q, k, v (H D, C), the
 * rows of head h at h D (folded with the layer's input norm; k and v those
 * of the head's K/V group), and ot (H D, C): W_O^T of each head. */
struct layer_mats {
	double *q, *k, *v, *ot;
};

/* A head's Grams: gq = W_Q W_Q^T, gk, gv likewise, go = W_O^T W_O (each
 * (D, D)), and ||W_QK||, ||W_OV||. */
struct head_grams {
	double *gq, *gk, *gv, *go;
	double qk, ov;
};

/* sum_ij a_ij b_ij of two (D, D) matrices: tr(a^T b). */
static double frob_dot(const double *a, const double *b, int D)
{
	double s = 0;
	for (int i = 0; i < D * D; i++)
		s += a[i] * b[i];
	return s;
}

/* The Grams of one head from its rows q, k, v, ot (D, C each) into g,
 * whose four matrices the caller placed. */
static void grams_of(const double *q, const double *k, const double *v, const double *ot, int C,
		     int D, struct head_grams *g)
{
	dmatmul(g->gq, q, q, D, C, D, true);
	dmatmul(g->gk, k, k, D, C, D, true);
	dmatmul(g->gv, v, v, D, C, D, true);
	dmatmul(g->go, ot, ot, D, C, D, true);
	g->qk = sqrt(frob_dot(g->gq, g->gk, D)); /* ||W_Q^T W_K||^2 = tr(gq gk) */
	g->ov = sqrt(frob_dot(g->go, g->gv, D)); /* ||W_O W_V||^2 = tr(go gv) */
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

/* Layer l of m with G K/V heads (qkvw the pass's fused weights) into lm;
 * with qkv false only ot. */
static void layer_from_model(const struct model *m, const float *qkvw, int G, bool pre, int l,
			     bool qkv, struct layer_mats *lm)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c);
	const float *w = qkvw + (size_t)l * cfg_qkv_rows(c, G) * C;
	const float *gain = pre ? m->p[P_LN1W] + (size_t)l * C : NULL;
	bool centre = pre && c->norm == NORM_LAYER;
	const float *pw = m->p[P_ATTPROJW] + (size_t)l * C * C;
	for (int h = 0; h < H; h++) {
		size_t at = (size_t)h * D * C;
		int g = h / (H / G);
		if (qkv) {
			fold_rows(lm->q + at, w + (size_t)h * D * C, gain, centre, D, C);
			fold_rows(lm->k + at, w + (size_t)(H + g) * D * C, gain, centre, D, C);
			fold_rows(lm->v + at, w + (size_t)(H + G + g) * D * C, gain, centre, D, C);
		}
		for (int d = 0; d < D; d++)
			for (int r = 0; r < C; r++)
				lm->ot[at + (size_t)d * C + r] = pw[(size_t)r * C + h * D + d];
	}
}

/* ||L X W_V^A|| for X = M^B O^A (D, D), through the Grams:
 * tr(X^T gl X gv) = sum_kj (gl X)_kj (X gv)_kj, gl the Gram of the left
 * factor L (go for W_O^B, gk for W_K^B^T, gq for W_Q^B^T), gv A's.
 * y, z: (D, D) scratch. */
static double pair_norm(const double *x, const double *gl, const double *gv, int D, double *y,
			double *z)
{
	dmatmul(y, gl, x, D, D, D, false);
	dmatmul(z, x, gv, D, D, D, false);
	double t = frob_dot(y, z, D);
	return sqrt(t > 0 ? t : 0);
}

/* The score of kind k of A -> B from X = M^B O^A (M B's q, k or v for
 * k = Q, K, V). */
static double kind_score(enum compose_kind k, const double *x, const struct head_grams *a,
			 const struct head_grams *b, int D, double *y, double *z)
{
	const double *gl = k == COMPOSE_Q ? b->gk : k == COMPOSE_K ? b->gq : b->go;
	double den = (k == COMPOSE_V ? b->ov : b->qk) * a->ov;
	return den > 0 ? pair_norm(x, gl, a->gv, D, y, z) / den : 0;
}

/* The baseline: mean scores of COMPOSE_DRAWS standard normal pairs, each
 * head's q, k, v (D, C) and then W_O (C, D) drawn in that order. */
static void baseline(int C, int D, double *out)
{
	struct rng r;
	rng_seed(&r, COMPOSE_SEED);
	size_t dc = (size_t)D * C, dd = (size_t)D * D;
	double *buf = xmalloc((8 * dc + 11 * dd) * sizeof *buf), *gm = buf + 8 * dc;
	struct head_grams g[2];
	for (int i = 0; i < 2; i++)
		g[i] = (struct head_grams){ gm + 4 * i * dd, gm + (4 * i + 1) * dd,
					    gm + (4 * i + 2) * dd, gm + (4 * i + 3) * dd, 0, 0 };
	double *x = gm + 8 * dd, *y = x + dd, *z = y + dd;
	for (int k = 0; k < COMPOSE_KINDS; k++)
		out[k] = 0;
	for (int n = 0; n < COMPOSE_DRAWS; n++) {
		for (int i = 0; i < 2; i++) {
			double *h = buf + 4 * i * dc; /* q, k, v, ot */
			for (size_t j = 0; j < 3 * dc; j++)
				h[j] = rng_normal(&r);
			for (int row = 0; row < C; row++)
				for (int d = 0; d < D; d++)
					h[3 * dc + (size_t)d * C + row] = rng_normal(&r);
			grams_of(h, h + dc, h + 2 * dc, h + 3 * dc, C, D, &g[i]);
		}
		for (int k = 0; k < COMPOSE_KINDS; k++) { /* A = head 0, B = head 1 */
			dmatmul(x, buf + 4 * dc + k * dc, buf + 3 * dc, D, C, D, true);
			out[k] += kind_score(k, x, &g[0], &g[1], D, y, z) / COMPOSE_DRAWS;
		}
	}
	free(buf);
}

/* Every pair of a head of layer la with one of layer lb (la < lb) into
 * out->pairs (first[a]: the index of head a's first pair): for each kind,
 * X of all H x H pairs in one product.  xall (H D, H D); x, y, z (D, D). */
static void layer_pairs(const struct layer_mats *A, const struct layer_mats *B, int la, int lb,
			const struct head_grams *g, const int *first, int H, int C, int D,
			double *xall, double *x, double *y, double *z, struct compose_result *out)
{
	int HD = H * D;
	for (int ha = 0; ha < H; ha++)
		for (int hb = 0; hb < H; hb++)
			out->pairs[first[la * H + ha] + (lb - la - 1) * H + hb] =
				(struct compose_pair){ la, ha, lb, hb, { 0 } };
	for (int k = 0; k < COMPOSE_KINDS; k++) {
		const double *mb = k == COMPOSE_Q ? B->q : k == COMPOSE_K ? B->k : B->v;
		dmatmul(xall, mb, A->ot, HD, C, HD, true); /* block (hb, ha) = M^hb O^ha */
		for (int ha = 0; ha < H; ha++)
			for (int hb = 0; hb < H; hb++) {
				for (int i = 0; i < D; i++)
					memcpy(x + (size_t)i * D, xall + (size_t)(hb * D + i) * HD + ha * D,
					       (size_t)D * sizeof *x);
				int a = la * H + ha, b = lb * H + hb;
				out->pairs[first[a] + (lb - la - 1) * H + hb].score[k] =
					kind_score(k, x, &g[a], &g[b], D, y, z);
			}
	}
}

static void layer_alloc(struct layer_mats *lm, size_t n)
{
	lm->q = xmalloc(4 * n * sizeof(double));
	lm->k = lm->q + n;
	lm->v = lm->k + n;
	lm->ot = lm->v + n;
}

int compose_run(struct model *m, const struct run_options *o, struct compose_result *out,
		struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (run_options_validate(m, o, e) != 0)
		return -1;
	int L = c->n_layer, H = c->n_head, C = c->d_model, D = cfg_d_head(c), HD = H * D;
	if (L < 2)
		return err_set(e, "composition needs two layers or more: this model has %d", L);
	int G = run_kv_heads(m, o);
	bool pre = o->placement == PLACE_PRE;
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	size_t dd = (size_t)D * D, lsize = (size_t)HD * C;
	struct head_grams *g = xmalloc((size_t)L * H * sizeof *g);
	double *gm = xmalloc((size_t)L * H * 4 * dd * sizeof *gm);
	struct layer_mats A, B;
	layer_alloc(&A, lsize);
	layer_alloc(&B, lsize);
	for (int l = 0; l < L; l++) { /* pass 1: every head's Grams */
		layer_from_model(m, qkvw, G, pre, l, true, &A);
		for (int h = 0; h < H; h++) {
			size_t i = (size_t)l * H + h, at = (size_t)h * D * C;
			g[i] = (struct head_grams){ gm + 4 * i * dd, gm + (4 * i + 1) * dd,
						    gm + (4 * i + 2) * dd, gm + (4 * i + 3) * dd, 0, 0 };
			grams_of(A.q + at, A.k + at, A.v + at, A.ot + at, C, D, &g[i]);
		}
	}
	out->L = L;
	out->H = H;
	out->G = G;
	int *first = xmalloc((size_t)L * H * sizeof *first);
	for (int a = 0; a < L * H; a++) {
		first[a] = out->n;
		out->n += (L - 1 - a / H) * H;
	}
	out->pairs = xmalloc((size_t)out->n * sizeof *out->pairs);
	double *xall = xmalloc(((size_t)HD * HD + 3 * dd) * sizeof *xall);
	double *x = xall + (size_t)HD * HD, *y = x + dd, *z = y + dd;
	for (int lb = 1; lb < L; lb++) { /* pass 2: layer lb's heads read the earlier ones */
		layer_from_model(m, qkvw, G, pre, lb, true, &B);
		for (int la = 0; la < lb; la++) {
			layer_from_model(m, qkvw, G, pre, la, false, &A);
			layer_pairs(&A, &B, la, lb, g, first, H, C, D, xall, x, y, z, out);
		}
	}
	baseline(C, D, out->baseline);
	free(xall);
	free(first);
	free(A.q);
	free(B.q);
	free(gm);
	free(g);
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
