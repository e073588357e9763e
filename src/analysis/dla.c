/*
 * dla.c — direct logit attribution (see dla.h): one pass whose HOOK_HEADS
 * hook keeps each layer's head outputs at the position, then every part
 * read in double through the final norm frozen at that position's scale:
 * the readout direction w = P u (dla.h) is formed once, the heads' through
 * w^T W_O, and each part is one dot product.
 *
 * The pass makes no logits: only row pos of them is wanted, so the output
 * layer runs on that one normed row (the pass's own, r->lnf), V dot
 * products of C instead of T * V, before any soft-capping (the cap is
 * applied to the one logit split, apart); everything else is what the
 * pass kept.
 */
#include "dla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* What the hook keeps: row pos of every layer's head outputs. */
struct dla_keep {
	int pos;
	float *heads; /* (L, A): A = H * D, the heads' width */
};

static void dla_hook(void *ctx, enum hook_site site, int layer, float *x, int B, int T, int pos0,
		     int width)
{
	struct dla_keep *k = ctx;
	(void)B;
	if (site != HOOK_HEADS || k->pos < pos0 || k->pos >= pos0 + T)
		return;
	memcpy(k->heads + (size_t)layer * width, x + (size_t)(k->pos - pos0) * width,
	       (size_t)width * sizeof(float));
}

/* One line for what dla cannot split; 0 when m under o can be. */
static int dla_refuse(const struct model *m, const struct run_options *o, struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (c->head != HEAD_LM)
		return err_set(e, "dla needs a final norm and an output layer (this model's head is %s)",
			       head_type_name(c->head));
	if (o->placement == PLACE_POST)
		return err_set(e, "dla needs pre-norm placement: under post-norm the stream is no sum of parts (norm pre)");
	if (!c->residual)
		return err_set(e, "dla needs residual connections: this model has none");
	if (c->emb_norm)
		return err_set(e, "dla cannot split an embedding norm's output into token and position");
	return 0;
}

/* The readout direction of token v at a stream row x (C) with the final
 * norm frozen at x's scale (its epsilon eps, the pass's): w = P (W_U[v] *
 * g_f * rstd) into w (C).  Returns rstd. */
static double readout(const struct model *m, const float *x, int v, double eps, double *w)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model;
	bool layer = c->norm == NORM_LAYER;
	double mean = 0, var = 0;
	for (int j = 0; j < C; j++)
		mean += x[j];
	mean = layer ? mean / C : 0.0;
	for (int j = 0; j < C; j++)
		var += (x[j] - mean) * (x[j] - mean);
	double rstd = 1.0 / sqrt(var / C + eps);
	const float *wu = (c->tied ? m->p[P_WTE] : m->p[P_LMHEAD]) + (size_t)v * C;
	double ubar = 0;
	for (int j = 0; j < C; j++) {
		w[j] = (double)wu[j] * m->p[P_LNFW][j] * rstd;
		ubar += w[j];
	}
	ubar = layer ? ubar / C : 0.0;
	for (int j = 0; j < C; j++)
		w[j] -= ubar;
	return rstd;
}

static double dot(const double *w, const float *p, int n)
{
	double s = 0;
	for (int j = 0; j < n; j++)
		s += w[j] * p[j];
	return s;
}

static void add_part(struct dla_result *r, enum dla_kind kind, int layer, int head, double logit)
{
	r->parts[r->n++] = (struct dla_part){ kind, layer, head, logit };
}

/* Gemma's and OLMo-2's sandwich norm of layer l's attention at the
 * position, frozen: into wa (C) the readout w times its gain and its
 * 1/rms there (of the heads' output row through W_O plus b_O, what the
 * norm reads); returns that 1/rms. */
static double attn_post(const struct model *m, const float *heads, int l, double eps,
			const double *w, double *wa)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, A = cfg_attn_width(c);
	const float *projw = m->p[P_ATTPROJW] + (size_t)l * C * A; /* (C, A) */
	const float *g = m->p[P_ATTPOSTW] + (size_t)l * C;
	double ss = 0;
	for (int o = 0; o < C; o++) {
		double y = m->p[P_ATTPROJB] ? (double)m->p[P_ATTPROJB][(size_t)l * C + o] : 0.0;
		for (int k = 0; k < A; k++)
			y += (double)projw[(size_t)o * A + k] * heads[(size_t)l * A + k];
		ss += y * y;
	}
	double rstd = 1.0 / sqrt(ss / C + eps);
	for (int o = 0; o < C; o++)
		wa[o] = w[o] * g[o] * rstd;
	return rstd;
}

/* The parts of layer l: its heads (through wo = wa^T W_O, A, wa the
 * readout w, or with sandwich norms w through the attention's norm frozen
 * at pos) and its MLP (the rest of the block's change, its biases apart;
 * with sandwich norms the MLP's bias stays in its part, inside its norm);
 * adds the biases' shares to *attn_b and *mlp_b. */
static void layer_parts(const struct model *m, const struct run *r, const float *heads, int l,
			int pos, const double *w, double *wo, double *attn_b, double *mlp_b,
			struct dla_result *out)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), A = cfg_attn_width(c);
	const float *projw = m->p[P_ATTPROJW] + (size_t)l * C * A; /* (C, A) */
	double *wa = xmalloc((size_t)C * sizeof *wa);
	memcpy(wa, w, (size_t)C * sizeof *wa);
	if (c->sandwich)
		out->post_rstd[l] = attn_post(m, heads, l, r->opt.pitfall == PITFALL_EPS0 ? 0.0
									       : c->norm_eps, w, wa);
	for (int k = 0; k < A; k++)
		wo[k] = 0;
	for (int o = 0; o < C; o++)
		for (int k = 0; k < A; k++)
			wo[k] += wa[o] * projw[(size_t)o * A + k];
	double attn = 0;
	for (int h = 0; h < H; h++) {
		double s = 0;
		for (int d = 0; d < D; d++)
			s += wo[h * D + d] * heads[(size_t)l * A + h * D + d];
		add_part(out, DLA_HEAD, l, h, s);
		attn += s;
	}
	double ab = m->p[P_ATTPROJB] ? dot(wa, m->p[P_ATTPROJB] + (size_t)l * C, C) : 0.0;
	*attn_b += ab;
	free(wa);
	if (!c->d_ff)
		return;
	size_t bt = (size_t)r->b * r->t;
	const float *x0 = r->resid + ((size_t)l * bt + pos) * C;
	const float *x1 = r->resid + ((size_t)(l + 1) * bt + pos) * C;
	double mb = m->p[P_FCPROJB] && !c->sandwich ? dot(w, m->p[P_FCPROJB] + (size_t)l * C, C) : 0.0;
	*mlp_b += mb;
	add_part(out, DLA_MLP, l, -1, dot(w, x1, C) - dot(w, x0, C) - attn - ab - mb);
}

int dla_run(struct model *m, const struct run_options *o, const int *tokens, int T, int pos,
	    int token, struct dla_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (dla_refuse(m, o, e) || model_to_f32(m, "dla", e))
		return -1;
	if (pos < 0 || pos >= T)
		return err_set(e, "position %d is outside the text (0 to %d)", pos, T - 1);
	int V = c->vocab_size, C = c->d_model, L = c->n_layer, H = c->n_head, A = cfg_attn_width(c);
	if (token < -1 || token >= V)
		return err_set(e, "token %d is outside the vocabulary", token);
	struct dla_keep keep = { pos, xmalloc((size_t)L * A * sizeof(float)) };
	struct run_hook hook = { dla_hook, &keep };
	struct run *r = run_new(c, 1, T, 0); /* no logits: row pos is made below */
	r->hook = &hook;
	float *lg = xmalloc((size_t)V * sizeof *lg);
	int rc = -1;
	if (model_forward(m, o, tokens, NULL, 1, T, r, e) != 0)
		goto out;
	matmul_forward(lg, r->lnf + (size_t)pos * C, c->tied ? m->p[P_WTE] : m->p[P_LMHEAD], NULL, 1,
		       C, V);
	int best = 0;
	for (int v = 1; v < V; v++)
		best = lg[v] > lg[best] ? v : best;
	out->token = token < 0 ? best : token;
	out->predicted = out->token == best;
	out->pos = pos;
	out->logit = lg[out->token];
	out->parts = xmalloc((size_t)(L * (H + 1) + 6) * sizeof *out->parts);
	double *w = xmalloc(((size_t)C + A) * sizeof *w), *wo = w + C;
	out->n_layer = L;
	if (c->sandwich)
		out->post_rstd = xcalloc((size_t)L, sizeof *out->post_rstd);
	const float *x = r->resid + ((size_t)L * T + pos) * C;
	out->rstd = readout(m, x, out->token, o->pitfall == PITFALL_EPS0 ? 0.0 : c->norm_eps, w);
	add_part(out, DLA_TOKEN, -1, -1, dot(w, m->p[P_WTE] + (size_t)tokens[pos] * C, C) *
					     (c->emb_scale > 0.0f ? (double)c->emb_scale : 1.0));
	if (c->pos == POS_LEARNED)
		add_part(out, DLA_POS, -1, -1, dot(w, m->p[P_WPE] + (size_t)pos * C, C));
	double attn_b = 0, mlp_b = 0;
	for (int l = 0; l < L; l++)
		layer_parts(m, r, keep.heads, l, pos, w, wo, &attn_b, &mlp_b, out);
	if (m->p[P_ATTPROJB])
		add_part(out, DLA_ATTN_BIAS, -1, -1, attn_b);
	if (m->p[P_FCPROJB] && c->d_ff && !c->sandwich)
		add_part(out, DLA_MLP_BIAS, -1, -1, mlp_b);
	if (m->p[P_LNFB]) {
		const float *wu = (c->tied ? m->p[P_WTE] : m->p[P_LMHEAD]) + (size_t)out->token * C;
		double s = 0;
		for (int j = 0; j < C; j++)
			s += (double)wu[j] * m->p[P_LNFB][j];
		add_part(out, DLA_NORM_BIAS, -1, -1, s);
	}
	for (int i = 0; i < out->n; i++)
		out->sum += out->parts[i].logit;
	out->left_out = out->logit - out->sum;
	out->softcap = c->final_softcap;
	out->capped = out->softcap > 0 ? out->softcap * tanh(out->logit / out->softcap) : out->logit;
	free(w);
	rc = 0;
out:
	run_free(r);
	free(lg);
	free(keep.heads);
	return rc;
}

void dla_free(struct dla_result *r)
{
	if (!r)
		return;
	free(r->parts);
	free(r->post_rstd);
	memset(r, 0, sizeof *r);
}

/* Insertion sort: a few dozen parts, and no state outside the call. */
void dla_rank(const struct dla_result *r, int *order)
{
	for (int i = 0; i < r->n; i++) {
		double x = fabs(r->parts[i].logit);
		int j = i;
		while (j > 0 && fabs(r->parts[order[j - 1]].logit) < x) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

void dla_part_name(const struct dla_part *p, char *buf, size_t size)
{
	switch (p->kind) {
	case DLA_TOKEN: snprintf(buf, size, "token"); break;
	case DLA_POS: snprintf(buf, size, "position"); break;
	case DLA_HEAD: snprintf(buf, size, "%d.%d", p->layer, p->head); break;
	case DLA_MLP: snprintf(buf, size, "mlp %d", p->layer); break;
	case DLA_ATTN_BIAS: snprintf(buf, size, "attn biases"); break;
	case DLA_MLP_BIAS: snprintf(buf, size, "mlp biases"); break;
	case DLA_NORM_BIAS: snprintf(buf, size, "final norm shift"); break;
	}
}
