/*
 * compose.c — composition scores (see compose.h).  One pass over the
 * layers keeps each head's D x D Gram matrices, the norms of its W_QK and
 * W_OV, and four (D, C) factors: F with F^T F = W_QK W_QK^T, W_QK^T W_QK
 * or W_OV^T W_OV (the later head's side, one per kind) and E with
 * E^T E = W_OV W_OV^T (the earlier head's side), each F = chol(Gram) W.
 * A pair's squared norm is then the Frobenius product of two symmetric
 * C x C matrices, <F^T F, E^T E>; these are formed a block of rows at a
 * time (upper triangle only) and every pair's products are dgemm calls,
 * one per block and later layer: C^2 / 2 multiply-adds a pair and kind
 * where X = M^B O^A would take D^2 C.  Double precision throughout.  The
 * baseline scores standard normal matrices through X and the Grams.
 */
#include "compose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cblas.h>

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

/* a (D, D) = m m^T for m (D, C): the upper triangle by dsyrk, then
 * mirrored. */
static void gram(double *a, const double *m, int C, int D)
{
	cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, D, C, 1.0, m, C, 0.0, a, D);
	for (int i = 0; i < D; i++)
		for (int j = 0; j < i; j++)
			a[i * D + j] = a[j * D + i];
}

/* The Grams of one head from its rows q, k, v, ot (D, C each) into g,
 * whose four matrices the caller placed. */
static void grams_of(const double *q, const double *k, const double *v, const double *ot, int C,
		     int D, struct head_grams *g)
{
	gram(g->gq, q, C, D);
	gram(g->gk, k, C, D);
	gram(g->gv, v, C, D);
	gram(g->go, ot, C, D);
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
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), A = cfg_attn_width(c);
	const float *w = qkvw + (size_t)l * cfg_qkv_rows(c, G) * C;
	const float *gain = pre && m->p[P_LN1W] ? m->p[P_LN1W] + (size_t)l * C : NULL; /* OLMo-2: none */
	bool centre = pre && c->norm == NORM_LAYER;
	const float *pw = m->p[P_ATTPROJW] + (size_t)l * C * A; /* (C, A) */
	for (int h = 0; h < H; h++) {
		size_t at = (size_t)h * D * C;
		int g = h / (H / G);
		if (qkv) {
			fold_rows(lm->q + at, w + (size_t)h * D * C, gain, centre, D, C);
			fold_rows(lm->k + at, w + (size_t)(H + g) * D * C, gain, centre, D, C);
			fold_rows(lm->v + at, w + (size_t)(H + G + g) * D * C, gain, centre, D, C);
			if (c->qk_norm) { /* the q/k norm's scales; its 1/rms left out */
				size_t nq = m->psize[P_QNORMW] / (size_t)c->n_layer, K = (size_t)c->n_kv_head;
				const float *qs = m->p[P_QNORMW] + (size_t)l * nq;
				const float *ks = m->p[P_KNORMW] + (size_t)l * (m->psize[P_KNORMW] / (size_t)c->n_layer);
				if (c->qk_norm_whole) { /* OLMo-2's: head h's, key head g's native one */
					qs += (size_t)h * D;
					ks += (size_t)g / ((size_t)G / K) * D;
				}
				for (int d = 0; d < D; d++)
					for (int j = 0; j < C; j++) {
						lm->q[at + (size_t)d * C + j] *= qs[d];
						lm->k[at + (size_t)d * C + j] *= ks[d];
					}
			}
		}
		const float *post = m->p[P_ATTPOSTW] ? m->p[P_ATTPOSTW] + (size_t)l * C : NULL;
		for (int r = 0; r < C; r++) /* pw's rows in order, D at a time; Gemma's
					     * sandwich norm's gain on them, its 1/rms left out */
			for (int d = 0; d < D; d++)
				lm->ot[at + (size_t)d * C + r] =
					(double)pw[(size_t)r * A + h * D + d] * (post ? post[r] : 1.0);
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

/* ---------------------------------------------------- the pairs, batched */

/* Upper r (D, D) with r^T r = g for a symmetric positive semidefinite g:
 * Cholesky, a pivot at or below 1e-14 of g's largest diagonal taken as
 * zero (its row of r left zero), so a rank-deficient Gram still gives
 * r^T r = g up to rounding. */
static void chol_upper(double *r, const double *g, int D)
{
	double top = 0;
	for (int i = 0; i < D; i++)
		top = g[i * D + i] > top ? g[i * D + i] : top;
	memset(r, 0, (size_t)D * D * sizeof *r);
	for (int j = 0; j < D; j++) {
		double s = g[j * D + j];
		for (int k = 0; k < j; k++)
			s -= r[k * D + j] * r[k * D + j];
		if (s <= 1e-14 * top)
			continue;
		double piv = sqrt(s);
		r[j * D + j] = piv;
		for (int i = j + 1; i < D; i++) {
			double t = g[j * D + i];
			for (int k = 0; k < j; k++)
				t -= r[k * D + j] * r[k * D + i];
			r[j * D + i] = t / piv;
		}
	}
}

/* Each head's factors, stored transposed as (C, D): F^T F (C, C) is the
 * matrix whose Frobenius product with another head's gives a squared pair
 * norm.  f[k] for B's side of kind k (F = chol(gk) W_Q for Q, chol(gq) W_K
 * for K, chol(go) W_V for V, so F^T F is W_QK W_QK^T, W_QK^T W_QK,
 * W_OV^T W_OV), e for A's side (F = chol(gv) W_O^T: F^T F = W_OV W_OV^T).
 * Then ||(kind k of B) W_OV^A||^2 = <F_k^T F_k, F_e^T F_e> (for V:
 * tr(W_OV^A^T W_OV^B^T W_OV^B W_OV^A)), C^2 products a pair where
 * X = M^B O^A costs D^2 C.  r: (D, D) scratch. */
static void head_factors(const double *q, const double *k, const double *v, const double *ot,
			 const struct head_grams *g, int C, int D, double *f[COMPOSE_KINDS],
			 double *e, double *r)
{
	const double *m[COMPOSE_KINDS + 1] = { q, k, v, ot };
	const double *gl[COMPOSE_KINDS + 1] = { g->gk, g->gq, g->go, g->gv };
	for (int kind = 0; kind <= COMPOSE_KINDS; kind++) {
		chol_upper(r, gl[kind], D);
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, C, D, D, 1.0, m[kind], C, r, D,
			    0.0, kind < COMPOSE_KINDS ? f[kind] : e, D); /* M^T R^T */
	}
}

/* The upper part of rows r0 .. r0+R of F^T F for a factor ft = F^T
 * (C, D), as R rows of C - r0 entries from column r0 into out
 * (row-major); with twice true the columns past the R x R diagonal block
 * are doubled, so that the dot product of two such blocks (one doubled)
 * is rows r0 .. r0+R's share of <F^T F, E^T E> (both symmetric). */
static void gram_rows(double *out, const double *ft, int C, int D, int r0, int R, bool twice)
{
	int w = C - r0;
	const double *at = ft + (size_t)r0 * D;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, w, D, 1.0, at, D, at, D, 0.0, out,
		    w);
	if (twice)
		for (int i = 0; i < R; i++)
			for (int j = R; j < w; j++)
				out[(size_t)i * w + j] *= 2;
}

/* The shapes of pair_sums: R rows a block, B's layers NL at a time. */
struct pair_plan {
	int L, H, C, D, R, NL;
};

/* The pair sums: acc (L, COMPOSE_KINDS, H, L H), entry (lb, k, hb, la H +
 * ha) = ||(kind k of lb.hb) W_OV^{la.ha}||^2 for la < lb, from fb
 * ((layer, kind, head) factors) and ea ((layer, head) factors).  Over
 * blocks of R rows of the C x C matrices: the block of every A head
 * (layers 0 .. L-2) into sa, then for B's layers NL at a time their
 * blocks into pb and one product with the A heads of the layers before
 * the group's last (the entries with la >= lb are computed and unused).
 * sa (H (L - 1), R C), pb (NL 3H, R C): scratch. */
static void pair_sums(double *const *fb, double *const *ea, const struct pair_plan *pl,
		      double *pb, double *sa, double *acc)
{
	int H = pl->H, C = pl->C, L = pl->L, KH = COMPOSE_KINDS * H, LH = L * H;
	for (int r0 = 0; r0 < C; r0 += pl->R) {
		int rr = r0 + pl->R <= C ? pl->R : C - r0;
		size_t kk = (size_t)rr * (C - r0);
		for (int i = 0; i < (L - 1) * H; i++)
			gram_rows(sa + i * kk, ea[i], C, pl->D, r0, rr, false);
		for (int l0 = 1; l0 < L; l0 += pl->NL) {
			int nl = l0 + pl->NL <= L ? pl->NL : L - l0;
			for (int i = 0; i < nl * KH; i++)
				gram_rows(pb + i * kk, fb[l0 * KH + i], C, pl->D, r0, rr, true);
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nl * KH,
				    (l0 + nl - 1) * H, (int)kk, 1.0, pb, (int)kk, sa, (int)kk, 1.0,
				    acc + (size_t)l0 * KH * LH, LH);
		}
	}
}

/* Every pair's scores into out->pairs from the sums acc (see pair_sums),
 * in compose.h's order. */
static void pair_scores(const double *acc, const struct head_grams *g, int L, int H,
			struct compose_result *out)
{
	int KH = COMPOSE_KINDS * H, LH = L * H, n = 0;
	for (int la = 0; la < L; la++)
		for (int ha = 0; ha < H; ha++)
			for (int lb = la + 1; lb < L; lb++)
				for (int hb = 0; hb < H; hb++) {
					struct compose_pair *p = &out->pairs[n++];
					const struct head_grams *a = &g[la * H + ha], *b = &g[lb * H + hb];
					*p = (struct compose_pair){ la, ha, lb, hb, { 0 } };
					for (int k = 0; k < COMPOSE_KINDS; k++) {
						double t = acc[(size_t)lb * KH * LH +
							       (size_t)(k * H + hb) * LH + la * H + ha];
						double den = (k == COMPOSE_V ? b->ov : b->qk) * a->ov;
						p->score[k] = den > 0 ? sqrt(t > 0 ? t : 0) / den : 0;
					}
				}
}

/* n bytes, aligned to 2 MiB and marked for transparent huge pages where
 * the system has them: the factors of a GPT-2-small-sized model are some
 * 200 MB, and faulting them in 4 KiB pages costs more than the products
 * that fill them.  Out of memory is fatal; free with free(). */
static void *big_alloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, (size_t)2 << 20, n) != 0)
		die("out of memory (%zu bytes)", n);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE);
#endif
	return p;
}

static void layer_alloc(struct layer_mats *lm, size_t n)
{
	lm->q = xmalloc(4 * n * sizeof(double));
	lm->k = lm->q + n;
	lm->v = lm->k + n;
	lm->ot = lm->v + n;
}

/* pair_sums' shapes for a model: blocks of 32 rows (C / 4 for C under
 * 128) and B's layers three at a time (half of them under six), the two
 * scratch buffers then some 47 MB for GPT-2 small; a small model still
 * takes several blocks and groups, so the tests run every path. */
static struct pair_plan plan_for(int L, int H, int C, int D)
{
	struct pair_plan p = { L, H, C, D, C < 128 ? (C + 3) / 4 : 32, 3 };
	p.NL = p.NL < L / 2 ? p.NL : L / 2 > 0 ? L / 2 : 1;
	return p;
}

int compose_run(struct model *m, const struct run_options *o, struct compose_result *out,
		struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (run_options_validate(m, o, e) != 0 || model_to_f32(m, "circuits", e))
		return -1;
	int L = c->n_layer, H = c->n_head, C = c->d_model, D = cfg_d_head(c), HD = H * D;
	if (L < 2)
		return err_set(e, "composition needs two layers or more: this model has %d", L);
	int G = run_kv_heads(m, o), LH = L * H, K3 = COMPOSE_KINDS;
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	size_t dd = (size_t)D * D, dc = (size_t)D * C;
	struct head_grams *g = xmalloc((size_t)LH * sizeof *g);
	double *gm = xmalloc((size_t)LH * 4 * dd * sizeof *gm);
	double *fm = big_alloc((size_t)LH * (K3 + 1) * dc * sizeof *fm), *r = xmalloc(dd * sizeof *r);
	double **fb = xmalloc((size_t)LH * (K3 + 1) * sizeof *fb), **ea = fb + (size_t)LH * K3;
	struct layer_mats A;
	layer_alloc(&A, (size_t)HD * C);
	for (int l = 0; l < L; l++) { /* every head's Grams, norms and factors */
		layer_from_model(m, qkvw, G, o->placement == PLACE_PRE, l, true, &A);
		for (int h = 0; h < H; h++) {
			size_t i = (size_t)l * H + h, at = (size_t)h * dc;
			g[i] = (struct head_grams){ gm + 4 * i * dd, gm + (4 * i + 1) * dd,
						    gm + (4 * i + 2) * dd, gm + (4 * i + 3) * dd, 0, 0 };
			grams_of(A.q + at, A.k + at, A.v + at, A.ot + at, C, D, &g[i]);
			double *f[COMPOSE_KINDS];
			for (int k = 0; k < K3; k++)
				f[k] = fb[((size_t)l * K3 + k) * H + h] = fm + (i * (K3 + 1) + k) * dc;
			ea[i] = fm + (i * (K3 + 1) + K3) * dc;
			head_factors(A.q + at, A.k + at, A.v + at, A.ot + at, &g[i], C, D, f, ea[i], r);
		}
	}
	free(A.q);
	struct pair_plan pl = plan_for(L, H, C, D);
	double *pb = xmalloc((size_t)pl.NL * K3 * H * pl.R * C * sizeof *pb);
	double *sa = xmalloc((size_t)(L - 1) * H * pl.R * C * sizeof *sa);
	double *acc = xcalloc((size_t)L * K3 * H * LH, sizeof *acc);
	pair_sums(fb, ea, &pl, pb, sa, acc);
	out->L = L;
	out->H = H;
	out->G = G;
	out->n = H * H * L * (L - 1) / 2;
	out->pairs = xmalloc((size_t)out->n * sizeof *out->pairs);
	pair_scores(acc, g, L, H, out);
	baseline(C, D, out->baseline);
	free(acc);
	free(sa);
	free(pb);
	free(fb);
	free(r);
	free(fm);
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
