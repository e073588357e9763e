/*
 * heat.c — weights, scores, value-weighted norms and rollout (heat.h),
 * each layer's computed during one forward pass that keeps no layer: a
 * hook at the layer's heads site reads the queries, keys, values and
 * attention the run holds for that layer at that moment.
 */
#include "heat.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static const char *const kind_names[HEAT_KINDS] = { "weights", "scores", "norms", "rollout" };

const char *heat_kind_name(enum heat_kind k)
{
	return (unsigned)k < HEAT_KINDS ? kind_names[k] : "?";
}

int heat_kind_parse(const char *s, enum heat_kind *out)
{
	for (int k = 0; k < HEAT_KINDS; k++)
		if (strcmp(s, kind_names[k]) == 0) {
			*out = (enum heat_kind)k;
			return 0;
		}
	return -1;
}

const char *heat_kind_about(enum heat_kind k)
{
	switch (k) {
	case HEAT_WEIGHTS:
		return "attention weight A_ij after the softmax";
	case HEAT_SCORES:
		return "score before the softmax (scaled q.k), per row from its lowest (0) to its highest (1)";
	case HEAT_NORMS:
		return "norm of what key j adds to query i, ||A_ij W_O v_j||, as a share of its row";
	case HEAT_ROLLOUT:
		return "attention rollout from the input to this layer, (A + I)/2 multiplied up the layers, "
		       "head-averaged";
	default:
		return "?";
	}
}

const char *heat_kind_legend(enum heat_kind k)
{
	static const char *const legend[HEAT_KINDS] = {
		"attention weight",
		"score, per row from lowest to highest",
		"share of the row's value-weighted norm",
		"rollout from the input, head-averaged",
	};
	return (unsigned)k < HEAT_KINDS ? legend[k] : "?";
}

const char *heat_kind_value(enum heat_kind k)
{
	static const char *const value[HEAT_KINDS] = { "weight", "raw score", "norm", "rollout" };
	return (unsigned)k < HEAT_KINDS ? value[k] : "?";
}

void heat_free(struct heat *h)
{
	free(h->v);
	memset(h, 0, sizeof *h);
}

/* Scores of every head of layer l from its saved (post-RoPE) queries and
 * keys, as the softmax reads them: scaled by the model's scale (1/sqrt of
 * D, or of Gemma's query_pre_attn_scalar) when the run scales, then
 * soft-capped where the model caps (Gemma 2); keys the mask hides are NAN. */
static void scores(const struct model *m, const struct run_options *o, const struct run *r, int l,
		   int G, float *out)
{
	const struct model_config *c = &m->cfg;
	int T = r->t, H = c->n_head, D = cfg_d_head(c), ld = cfg_qkv_rows(c, G), group = H / G;
	const float *qkv = run_qkv(r, l);
	float s = o->scale ? cfg_attn_scale(c) : 1.0f;
	int window; /* a local layer's own window (model.h: layer_mask) */
	enum mask_kind mask = layer_mask(c, o, l, &window);
	for (int h = 0; h < H; h++) {
		float *a = out + (size_t)h * T * T;
		/* a = s * Q_h K_g^T, (T, D) x (D, T), rows of the fused qkv */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, s, qkv + (size_t)h * D,
			    ld, qkv + (size_t)(H + h / group) * D, ld, 0.0f, a, T);
		softcap_forward(a, (long)T * T, c->attn_softcap);
		for (int i = 0; i < T; i++) {
			int lo, hi;
			mask_range(mask, window, i, T, &lo, &hi);
			for (int j = 0; j < T; j++)
				if (j < lo || j > hi)
					a[(size_t)i * T + j] = NAN;
		}
	}
}

/* ||A_ij W_O^h v_j|| for every head of layer l. */
static void norms(const struct model *m, const struct run_options *o, const struct run *r, int l,
		  int G, float *out)
{
	const struct model_config *c = &m->cfg;
	int T = r->t, C = c->d_model, H = c->n_head, D = cfg_d_head(c), A = cfg_attn_width(c);
	int ld = cfg_qkv_rows(c, G), group = H / G;
	const float *qkv = run_qkv(r, l);
	float *held = m->p[P_ATTPROJW] ? NULL : xmalloc_aligned((size_t)C * A * sizeof *held);
	if (held)
		model_rows_f32(m, P_ATTPROJW, l, 0, (size_t)C, held);
	const float *wo = held ? held : m->p[P_ATTPROJW] + (size_t)l * C * A; /* (C, A), input h*D + d */
	double *u = xmalloc((size_t)T * sizeof *u);
	float *y = xmalloc((size_t)T * C * sizeof *y);
	for (int h = 0; h < H; h++) {
		const float *a = run_att(r, l, 0, h);
		float *n = out + (size_t)h * T * T;
		bool ablated = opt_is_ablated(o, l * H + h);
		/* y = V_g W_O^h^T, (T, D) x (D, C): row j is W_O^h v_j */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, C, D, 1.0f,
			    qkv + (size_t)(H + G + h / group) * D, ld, wo + (size_t)h * D, A, 0.0f, y,
			    C);
		for (int j = 0; j < T; j++) { /* u_j = ||W_O^h v_j|| */
			double sq = 0;
			for (int k = 0; k < C; k++)
				sq += (double)y[(size_t)j * C + k] * y[(size_t)j * C + k];
			u[j] = ablated ? 0.0 : sqrt(sq);
		}
		for (int i = 0; i < T; i++)
			for (int j = 0; j < T; j++)
				n[(size_t)i * T + j] = (float)(a[(size_t)i * T + j] * u[j]);
	}
	free(y);
	free(u);
	free(held);
}

/* What the hook computes each layer into. */
struct heat_pass {
	const struct model *m;
	const struct run_options *o;
	const struct run *r;
	int G;
	struct heat *out;
	double *R, *A, *P; /* rollout: (T, T) the product so far, this layer's, scratch */
};

/* Rollout up to layer l (R holds it up to l - 1), written to each head of
 * layer l. */
static void rollout(struct heat_pass *p, int l)
{
	int T = p->r->t, H = p->out->H;
	size_t TT = (size_t)T * T;
	double *R = p->R, *A = p->A;
	/* Â = rows of (mean over heads + I) / 2, each divided by its sum */
	for (size_t k = 0; k < TT; k++)
		A[k] = 0;
	for (int h = 0; h < H; h++) {
		const float *a = run_att(p->r, l, 0, h);
		for (size_t k = 0; k < TT; k++)
			A[k] += (double)a[k] / H;
	}
	for (int i = 0; i < T; i++) {
		double *row = A + (size_t)i * T, sum = 0;
		row[i] += 1.0;
		for (int j = 0; j < T; j++)
			sum += row[j] *= 0.5;
		for (int j = 0; j < T; j++)
			row[j] /= sum;
	}
	if (l == 0) {
		memcpy(R, A, TT * sizeof *R);
	} else { /* R <- Â R */
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, T, T, 1.0, A, T, R, T, 0.0,
			    p->P, T);
		memcpy(R, p->P, TT * sizeof *R);
	}
	float *out = p->out->v + (size_t)l * H * TT;
	for (int h = 0; h < H; h++)
		for (size_t k = 0; k < TT; k++)
			out[(size_t)h * TT + k] = (float)R[k];
}

/* At layer l's heads site: layer l's quantity from what the run holds. */
static void heat_hook(void *ctx, enum hook_site site, int l, float *x, int B, int T, int pos0,
		      int width)
{
	struct heat_pass *p = ctx;
	(void)x, (void)B, (void)pos0, (void)width;
	if (site != HOOK_HEADS)
		return;
	int H = p->out->H;
	size_t TT = (size_t)T * T;
	float *dst = p->out->v + (size_t)l * H * TT;
	switch (p->out->kind) {
	case HEAT_WEIGHTS:
		for (int h = 0; h < H; h++)
			memcpy(dst + (size_t)h * TT, run_att(p->r, l, 0, h), TT * sizeof *dst);
		break;
	case HEAT_SCORES:
		scores(p->m, p->o, p->r, l, p->G, dst);
		break;
	case HEAT_NORMS:
		norms(p->m, p->o, p->r, l, p->G, dst);
		break;
	default:
		rollout(p, l);
	}
}

int heat_compute(struct model *m, const struct run_options *o, const int *tokens, int T,
		 enum heat_kind kind, struct heat *out, struct err *e)
{
	memset(out, 0, sizeof *out);
	if ((unsigned)kind >= HEAT_KINDS)
		return err_set(e, "unknown heatmap kind");
	const struct model_config *c = &m->cfg;
	size_t TT = (size_t)T * T;
	out->kind = kind;
	out->L = c->n_layer;
	out->H = c->n_head;
	out->T = T;
	out->v = xmalloc((size_t)out->L * out->H * TT * sizeof *out->v);
	/* no logits, one layer of activations: the hook takes each layer's */
	struct run *r = run_new(c, 1, T, 0);
	struct heat_pass p = { m, o, r, run_kv_heads(m, o), out, NULL, NULL, NULL };
	if (kind == HEAT_ROLLOUT) {
		p.R = xmalloc(TT * sizeof *p.R);
		p.A = xmalloc(TT * sizeof *p.A);
		p.P = xmalloc(TT * sizeof *p.P);
	}
	struct run_hook hook = { heat_hook, &p };
	r->hook = &hook;
	int rc = model_forward(m, o, tokens, NULL, 1, T, r, e);
	free(p.R);
	free(p.A);
	free(p.P);
	run_free(r);
	if (rc != 0)
		heat_free(out);
	return rc;
}

void heat_display(const struct heat *h, int l, int hd, float *out)
{
	int T = h->T;
	const float *v = heat_at(h, l, hd);
	for (int i = 0; i < T; i++) {
		const float *row = v + (size_t)i * T;
		float *o = out + (size_t)i * T;
		double lo = INFINITY, hi = -INFINITY, sum = 0;
		for (int j = 0; j < T; j++)
			if (!isnan(row[j])) {
				lo = row[j] < lo ? row[j] : lo;
				hi = row[j] > hi ? row[j] : hi;
				sum += row[j];
			}
		for (int j = 0; j < T; j++) {
			double x = row[j];
			if (!isnan(x)) {
				if (h->kind == HEAT_SCORES)
					x = hi > lo ? (x - lo) / (hi - lo) : 1.0;
				else if (h->kind == HEAT_NORMS)
					x = sum > 0 ? x / sum : 0.0;
			}
			o[j] = (float)x;
		}
	}
}
