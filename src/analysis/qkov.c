/*
 * qkov.c — one head's OV copying score and its QK split by token and
 * position on the current text (see qkov.h).
 */
#include "qkov.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "why.h"

/* ------------------------------------------------------------------ OV */

/* LAPACK (OpenBLAS ships it); the trailing lengths are the Fortran
 * character arguments'. */
void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda,
	    double *wr, double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr,
	    double *work, const int *lwork, int *info, size_t ljobvl, size_t ljobvr);

int qkov_eigen(double *a, int n, double *re, double *im, struct err *e)
{
	/* row-major a is the transpose of what dgeev reads: same eigenvalues */
	int one = 1, lwork = -1, info = 0;
	double query, dummy;
	dgeev_("N", "N", &n, a, &n, re, im, &dummy, &one, &dummy, &one, &query, &lwork, &info, 1, 1);
	if (info != 0)
		return err_set(e, "eigenvalues: dgeev workspace query failed (info %d)", info);
	lwork = (int)query;
	double *work = xmalloc((size_t)lwork * sizeof *work);
	dgeev_("N", "N", &n, a, &n, re, im, &dummy, &one, &dummy, &one, work, &lwork, &info, 1, 1);
	free(work);
	if (info != 0)
		return err_set(e, "eigenvalues: the QR algorithm did not converge (info %d)", info);
	return 0;
}

double qkov_copy_score(const double *re, const double *im, int n)
{
	double pos = 0, all = 0;
	for (int i = 0; i < n; i++) {
		pos += re[i] > 0 ? re[i] : 0;
		all += hypot(re[i], im[i]);
	}
	return all > 0 ? pos / all : NAN;
}

/* v (C) <- g * (v - mean v) (no centring for RMSNorm); g NULL: v kept. */
static void fold(const struct model_config *c, double *v, const float *g)
{
	int C = c->d_model;
	if (!g)
		return;
	double mean = 0;
	if (c->norm == NORM_LAYER) {
		for (int j = 0; j < C; j++)
			mean += v[j];
		mean /= C;
	}
	for (int j = 0; j < C; j++)
		v[j] = (v[j] - mean) * g[j];
}

/* The (D, D) matrix W_V~ W_E W_U~ W_O into M, summed over tokens v:
 * (W_V~ wte[v]) (W_U~[v] W_O)^T. */
static void ov_small(struct model *m, const struct run_options *o, int L, int h, double *M)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), V = c->vocab_size;
	int G = run_kv_heads(m, o), g = h / (H / G);
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	struct layer_weights w;
	model_layer(m, L, qkvw, qkvb, G, &w);
	const float *wv = w.qkvw + (size_t)(H + G + g) * D * C, *wu = c->tied ? m->p[P_WTE] : m->p[P_LMHEAD];
	const float *g1 = o->placement == PLACE_PRE ? w.ln1w : NULL;
	double es = c->emb_scale > 0.0f ? c->emb_scale : 1.0; /* Gemma's sqrt(C) */
	double *x = xmalloc((2 * (size_t)C + 2 * (size_t)D) * sizeof *x), *u = x + C, *a = u + C,
	       *b = a + D;
	memset(M, 0, (size_t)D * D * sizeof *M);
	for (int v = 0; v < V; v++) {
		for (int j = 0; j < C; j++) {
			x[j] = m->p[P_WTE][(size_t)v * C + j] * es;
			u[j] = (double)wu[(size_t)v * C + j] * m->p[P_LNFW][j];
			if (w.apw) /* the sandwich norm's gain on the head's output */
				u[j] *= w.apw[j];
		}
		fold(c, x, g1);
		if (c->norm == NORM_LAYER) { /* u <- P (g_f * W_U[v]) */
			double mean = 0;
			for (int j = 0; j < C; j++)
				mean += u[j];
			for (int j = 0; j < C; j++)
				u[j] -= mean / C;
		}
		for (int d = 0; d < D; d++) {
			double sa = 0, sb = 0;
			for (int j = 0; j < C; j++) {
				sa += (double)wv[(size_t)d * C + j] * x[j];
				sb += u[j] * w.projw[(size_t)j * cfg_attn_width(c) + h * D + d];
			}
			a[d] = sa;
			b[d] = sb;
		}
		for (int d = 0; d < D; d++)
			for (int k = 0; k < D; k++)
				M[(size_t)d * D + k] += a[d] * b[k];
	}
	free(x);
}

int qkov_ov_run(struct model *m, const struct run_options *o, int layer, int head,
		struct qkov_ov *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (model_to_f32(m, "qkov", e))
		return -1;
	if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
		return err_set(e, "head %d.%d is outside the model (%d layers of %d heads)", layer, head,
			       c->n_layer, c->n_head);
	if (c->head != HEAD_LM)
		return err_set(e, "the OV circuit needs a final norm and an output layer (this model's head is %s)",
			       head_type_name(c->head));
	if (run_options_validate(m, o, e) != 0)
		return -1;
	int D = cfg_d_head(c);
	double *M = xmalloc((size_t)D * D * sizeof *M);
	out->D = D;
	out->re = xmalloc(2 * (size_t)D * sizeof *out->re);
	out->im = out->re + D;
	ov_small(m, o, layer, head, M);
	int rc = qkov_eigen(M, D, out->re, out->im, e);
	free(M);
	if (rc != 0) {
		qkov_ov_free(out);
		return -1;
	}
	out->copy = qkov_copy_score(out->re, out->im, D);
	return 0;
}

void qkov_ov_free(struct qkov_ov *r)
{
	if (!r)
		return;
	free(r->re);
	memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ QK */

/* v (C) <- g * (v - mean v) * rstd: a norm frozen at one position. */
static void freeze(const struct model_config *c, double *v, const float *g, double rstd)
{
	fold(c, v, g);
	for (int j = 0; j < c->d_model; j++)
		v[j] *= rstd;
}

/* v (D) turned by RoPE at position pos of a pass over n_pos positions. */
static void rope_d(const struct model_config *c, double *v, int pos, int n_pos)
{
	int R = cfg_rotary_dims(c);
	for (int i = 0; i < R / 2; i++) {
		double f = config_rope_scale(c, n_pos, i, pow((double)c->rope_theta, -2.0 * i / R));
		double ang = (double)pos * f, ms = cfg_rope_mscale(c);
		double cs = ms * cos(ang), sn = ms * sin(ang), a = v[2 * i], b = v[2 * i + 1];
		v[2 * i] = a * cs - b * sn;
		v[2 * i + 1] = a * sn + b * cs;
	}
}

/* The token and position embeddings of position p as layer L's input
 * holds them (every norm on the way frozen at p's scale): tp (2, C). */
static void embeddings_at(const struct model *m, const struct run *r, const int *tokens, int L,
			  int p, double *tp)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model;
	double *tok = tp, *pos = tp + C;
	for (int j = 0; j < C; j++) {
		tok[j] = m->p[P_WTE][(size_t)tokens[p] * C + j] *
			 (c->emb_scale > 0.0f ? (double)c->emb_scale : 1.0);
		pos[j] = c->pos == POS_LEARNED ? m->p[P_WPE][(size_t)p * C + j] : 0.0;
	}
	if (c->emb_norm) {
		double *x = xmalloc((size_t)C * sizeof *x);
		for (int j = 0; j < C; j++)
			x[j] = tok[j] + pos[j];
		double rs = why_rstd(c, x, c->norm_eps);
		free(x);
		freeze(c, tok, m->p[P_LNEW], rs);
		freeze(c, pos, m->p[P_LNEW], rs);
	}
	for (int l = 0; l <= L; l++) {
		bool post = r->opt.placement == PLACE_POST;
		if (post && l == L)
			break;
		if ((!post && l < L) || c->post_only) /* OLMo-2: no norm on the stream */
			continue;
		double rs = r->ln1_rstd[l * r->lstride_bt + p];
		for (int s = 0; s < 2; s++)
			freeze(c, tp + (size_t)s * C, m->p[P_LN1W] + (size_t)l * C, rs);
		if (!post || !c->d_ff)
			continue;
		rs = r->ln2_rstd[l * r->lstride_bt + p];
		for (int s = 0; s < 2; s++)
			freeze(c, tp + (size_t)s * C, m->p[P_LN2W] + (size_t)l * C, rs);
	}
}

/* The q/k norm's scale (1/rms) at position p of layer L: the projection
 * (n rows of C, bias or NULL) of the layer's attention input, which the
 * pass kept (norm1's output under pre-norm, the block's input under
 * post-norm or without a norm there, OLMo-2's), that the norm reads: one
 * head's D rows, or OLMo-2's whole H*D query (G*D key) rows. */
static double head_rstd(const struct run *r, int L, int p, const float *rows, const float *bias,
			int n, int C, float eps)
{
	const float *in = r->opt.placement == PLACE_PRE ? r->ln1 + L * r->lstride_c
						      : r->resid + (size_t)L * r->b * r->t * C;
	in += (size_t)p * C;
	double ss = 0;
	for (int d = 0; d < n; d++) {
		double s = bias ? bias[d] : 0.0;
		for (int j = 0; j < C; j++)
			s += (double)rows[(size_t)d * C + j] * in[j];
		ss += s * s;
	}
	return 1.0 / sqrt(ss / n + eps);
}

/* Each position's query and key by class, qc and kc (T, 3, D): token and
 * position projected (the q/k norm frozen at the head's scale there) and
 * turned, the rest the pass's row minus them. */
static void class_vectors(struct model *m, const struct run *r, const int *tokens, int T, int L,
			  int h, double *qc, double *kc)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), G = run_kv_heads(m, &r->opt);
	int g = h / (H / G), QKV = cfg_qkv_rows(c, G);
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	struct layer_weights w;
	model_layer(m, L, qkvw, qkvb, G, &w);
	const float *rows[2] = { w.qkvw + (size_t)h * D * C, w.qkvw + (size_t)(H + g) * D * C };
	const float *pass = r->qkv + L * r->lstride_qkv;
	const float *bias[2] = { w.qkvb ? w.qkvb + (size_t)h * D : NULL,
				 w.qkvb ? w.qkvb + (size_t)(H + g) * D : NULL };
	/* what each side's q/k norm reads (the head's rows, or OLMo-2's whole
	 * query or key block) and the head's slice of its scales */
	bool whole = c->qk_norm_whole;
	const float *nrows[2] = { whole ? w.qkvw : rows[0], whole ? w.qkvw + (size_t)H * D * C : rows[1] };
	const float *nbias[2] = { whole && w.qkvb ? w.qkvb : bias[0],
				  whole && w.qkvb ? w.qkvb + (size_t)H * D : bias[1] };
	int nn[2] = { whole ? H * D : D, whole ? G * D : D };
	const float *qkn[2] = { w.qnw ? w.qnw + (whole ? (size_t)h * D : 0) : NULL,
				w.knw ? w.knw + (whole ? (size_t)g * D : 0) : NULL };
	struct model_config rc; /* layer L's RoPE (Gemma 3's local base) */
	config_rope_of_layer(c, L, &rc);
	double *tp = xmalloc(2 * (size_t)C * sizeof *tp);
	for (int p = 0; p < T; p++) {
		embeddings_at(m, r, tokens, L, p, tp);
		for (int side = 0; side < 2; side++) {
			double *v = (side ? kc : qc) + (size_t)p * QK_CLASSES * D;
			const float *row = pass + (size_t)p * QKV + (side ? (H + g) : h) * D;
			double qs = qkn[side] ? head_rstd(r, L, p, nrows[side], nbias[side], nn[side],
							  C, c->norm_eps) : 1.0;
			const float *qw = qkn[side];
			for (int k = 0; k < 2; k++) {
				for (int d = 0; d < D; d++) {
					double s = 0;
					for (int j = 0; j < C; j++)
						s += (double)rows[side][(size_t)d * C + j] * tp[(size_t)k * C + j];
					v[k * D + d] = qw ? s * qs * qw[d] : s;
				}
				if (c->pos == POS_ROPE)
					rope_d(&rc, v + k * D, p, r->t);
			}
			for (int d = 0; d < D; d++)
				v[QK_REST * D + d] = row[d] - v[d] - v[D + d];
		}
	}
	free(tp);
}

/* Adds query i's terms over its visible keys lo .. hi to the sums, and
 * its whole scores' and capped scores' (out->softcap; without a cap the
 * whole score). */
static void query_stats(struct qkov_qk *out, const double *qc, const double *kc, int i, int lo,
			int hi, int D, double scale)
{
	int n = hi - lo + 1;
	/* rows: the classes, then [whole score, capped score] */
	double sum[QK_CLASSES + 1][QK_CLASSES] = { { 0 } }, sq[QK_CLASSES + 1][QK_CLASSES] = { { 0 } };
	for (int j = lo; j <= hi; j++) {
		double whole = 0;
		for (int a = 0; a < QK_CLASSES; a++)
			for (int b = 0; b < QK_CLASSES; b++) {
				double t = 0;
				for (int d = 0; d < D; d++)
					t += qc[((size_t)i * QK_CLASSES + a) * D + d] *
					     kc[((size_t)j * QK_CLASSES + b) * D + d];
				t *= scale;
				sum[a][b] += t;
				sq[a][b] += t * t;
				whole += t;
			}
		double capped = out->softcap > 0 ? out->softcap * tanh(whole / out->softcap) : whole;
		sum[QK_CLASSES][0] += whole;
		sq[QK_CLASSES][0] += whole * whole;
		sum[QK_CLASSES][1] += capped;
		sq[QK_CLASSES][1] += capped * capped;
	}
	for (int a = 0; a <= QK_CLASSES; a++)
		for (int b = 0; b < (a < QK_CLASSES ? QK_CLASSES : 2); b++) {
			double mean = sum[a][b] / n, var = sq[a][b] / n - mean * mean;
			double sd = var > 0 ? sqrt(var) : 0;
			if (a < QK_CLASSES) {
				out->mean[a][b] += sum[a][b];
				out->spread[a][b] += sd;
			} else if (b == 0) {
				out->mean_score += sum[a][b];
				out->spread_score += sd;
			} else {
				out->mean_capped += sum[a][b];
				out->spread_capped += sd;
			}
		}
}

int qkov_qk_run(struct model *m, const struct run_options *o, const int *tokens, int T,
		int layer, int head, struct qkov_qk *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (model_to_f32(m, "qkov", e))
		return -1;
	if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
		return err_set(e, "head %d.%d is outside the model (%d layers of %d heads)", layer, head,
			       c->n_layer, c->n_head);
	if (!c->residual || o->pitfall != PITFALL_NONE)
		return err_set(e, "the QK split needs residual connections and the pitfall off");
	struct run *r = run_new(c, 1, T, RUN_TRAIN);
	if (model_forward(m, o, tokens, NULL, 1, T, r, e) != 0) {
		run_free(r);
		return -1;
	}
	int D = cfg_d_head(c);
	double scale = o->scale ? 1.0 / sqrt((double)(c->attn_scale_dim ? c->attn_scale_dim : D)) : 1.0;
	out->softcap = c->attn_softcap;
	double *qc = xmalloc(2 * (size_t)T * QK_CLASSES * D * sizeof *qc), *kc = qc + (size_t)T * QK_CLASSES * D;
	class_vectors(m, r, tokens, T, layer, head, qc, kc);
	int window; /* a local layer's own window (model.h: layer_mask) */
	enum mask_kind mask = layer_mask(c, o, layer, &window);
	for (int i = 0; i < T; i++) {
		int lo, hi;
		mask_range(mask, window, i, T, &lo, &hi);
		query_stats(out, qc, kc, i, lo, hi, D, scale);
		out->pairs += hi - lo + 1;
	}
	for (int a = 0; a < QK_CLASSES; a++)
		for (int b = 0; b < QK_CLASSES; b++) {
			out->mean[a][b] /= out->pairs;
			out->spread[a][b] /= T;
		}
	out->mean_score /= out->pairs;
	out->spread_score /= T;
	out->mean_capped /= out->pairs;
	out->spread_capped /= T;
	out->has_pos = c->pos == POS_LEARNED;
	free(qc);
	run_free(r);
	return 0;
}

const char *qk_class_name(enum qk_class c)
{
	static const char *const names[QK_CLASSES] = { "token", "position", "rest" };
	return names[c];
}
