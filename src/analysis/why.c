/*
 * why.c — one score split into its parts (see why.h): a pass that keeps
 * every layer (RUN_TRAIN), then, for the query and the key position side
 * by side, the stream's components built in double block by block up to
 * layer L (each norm on the way frozen at the position's scale), each
 * turned into a query or key vector, and every (query part, key part)
 * pair's dot product.
 */
#include "why.h"

#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The components of the stream at the query (side 0) and key (side 1)
 * positions: parts[a] names component a, comp[s] + a*C is its value. */
struct streams {
	int C, max, pos[2];
	double *comp[2]; /* (max, C) each */
	struct why_result *r;
};

/* A new component, zero at both positions; its index. */
static int add_comp(struct streams *st, enum why_kind kind, int layer, int head)
{
	struct why_result *r = st->r;
	if (r->n >= st->max)
		die("why: more parts than counted"); /* a broken invariant */
	r->parts[r->n] = (struct why_part){ kind, layer, head, 0, 0, 0 };
	for (int s = 0; s < 2; s++)
		memset(st->comp[s] + (size_t)r->n * st->C, 0, (size_t)st->C * sizeof(double));
	return r->n++;
}

static double *comp_at(struct streams *st, int s, int a)
{
	return st->comp[s] + (size_t)a * st->C;
}

static void set_from(double *dst, const float *src, int n)
{
	for (int j = 0; j < n; j++)
		dst[j] = src[j];
}

/* Freezes a norm over components a0 .. n-1 of side s: c <- g * (c -
 * mean c) * rstd (no centring for RMSNorm). */
static void freeze(struct streams *st, const struct model_config *c, int s, int a0, int n,
		   const float *g, double rstd)
{
	int C = st->C;
	for (int a = a0; a < n; a++) {
		double *v = comp_at(st, s, a), mean = 0;
		if (c->norm == NORM_LAYER) {
			for (int j = 0; j < C; j++)
				mean += v[j];
			mean /= C;
		}
		for (int j = 0; j < C; j++)
			v[j] = (v[j] - mean) * rstd * g[j];
	}
}

/* A norm with scales rstd[0], rstd[1] at the two positions, gain g and
 * shift b (NULL: none) applied to the stream as a frozen linear map; g
 * NULL: no norm there (OLMo-2's absent pre-norms), the stream kept. */
static void norm_both(struct streams *st, const struct model_config *c, const float *g,
		      const float *b, const double rstd[2], int layer, int which)
{
	int n = st->r->n;
	if (!g)
		return;
	for (int s = 0; s < 2; s++)
		freeze(st, c, s, 0, n, g, rstd[s]);
	if (!b)
		return;
	int a = add_comp(st, WHY_SHIFT, layer, which);
	for (int s = 0; s < 2; s++)
		set_from(comp_at(st, s, a), b, st->C);
}

double why_rstd(const struct model_config *c, const double *x, double eps)
{
	int C = c->d_model;
	double mean = 0, var = 0;
	if (c->norm == NORM_LAYER) {
		for (int j = 0; j < C; j++)
			mean += x[j];
		mean /= C;
	}
	for (int j = 0; j < C; j++)
		var += (x[j] - mean) * (x[j] - mean);
	return 1.0 / sqrt(var / C + eps);
}

/* 1/std or 1/rms of the sum of side s's components (epsilon eps). */
static double stream_rstd(struct streams *st, const struct model_config *c, int s, double eps)
{
	int C = st->C;
	double *x = xcalloc((size_t)C, sizeof *x);
	for (int a = 0; a < st->r->n; a++)
		for (int j = 0; j < C; j++)
			x[j] += comp_at(st, s, a)[j];
	double r = why_rstd(c, x, eps);
	free(x);
	return r;
}

/* Token and position embeddings (and an embedding norm, frozen). */
static void embed(struct streams *st, const struct model *m, const int *tokens)
{
	const struct model_config *c = &m->cfg;
	int C = st->C, a = add_comp(st, WHY_TOKEN, -1, -1);
	for (int s = 0; s < 2; s++) {
		double *v = comp_at(st, s, a);
		set_from(v, m->p[P_WTE] + (size_t)tokens[st->pos[s]] * C, C);
		for (int j = 0; c->emb_scale > 0.0f && j < C; j++) /* Gemma's sqrt(C) */
			v[j] *= (double)c->emb_scale;
	}
	if (c->pos == POS_LEARNED) {
		a = add_comp(st, WHY_POS, -1, -1);
		for (int s = 0; s < 2; s++)
			set_from(comp_at(st, s, a), m->p[P_WPE] + (size_t)st->pos[s] * C, C);
	}
	if (c->emb_norm) {
		double rstd[2] = { stream_rstd(st, c, 0, c->norm_eps), stream_rstd(st, c, 1, c->norm_eps) };
		norm_both(st, c, m->p[P_LNEW], m->p[P_LNEB], rstd, -1, 0);
	}
}

/* Block l's attention: each head's output row through its columns of the
 * output projection, and the projection's bias; with sandwich norms
 * (Gemma's, OLMo-2's) the attention's own norm (ATTPOSTW) after them,
 * frozen at the pass's scale at each position (run.attpost_rstd: the
 * 1/rms of their sum, the sub-block's output as the norm read it), that
 * scale kept in st->r->post_rstd when there is one. */
static void add_heads(struct streams *st, const struct model *m, const struct run *r, int l)
{
	const struct model_config *c = &m->cfg;
	int C = st->C, H = c->n_head, D = cfg_d_head(c), A = cfg_attn_width(c), a0 = st->r->n;
	const float *projw = m->p[P_ATTPROJW] + (size_t)l * C * A; /* (C, A) */
	for (int h = 0; h < H; h++) {
		int a = add_comp(st, WHY_HEAD, l, h);
		for (int s = 0; s < 2; s++) {
			const float *y = r->atty + l * r->lstride_a + (size_t)st->pos[s] * A + h * D;
			double *v = comp_at(st, s, a);
			for (int o = 0; o < C; o++) {
				double sum = 0;
				for (int d = 0; d < D; d++)
					sum += (double)projw[(size_t)o * A + h * D + d] * y[d];
				v[o] = sum;
			}
		}
	}
	if (m->p[P_ATTPROJB]) {
		int a = add_comp(st, WHY_ATTN_BIAS, l, -1);
		for (int s = 0; s < 2; s++)
			set_from(comp_at(st, s, a), m->p[P_ATTPROJB] + (size_t)l * C, C);
	}
	if (!c->sandwich)
		return;
	for (int s = 0; s < 2; s++) {
		double rstd = r->attpost_rstd[l * r->lstride_bt + st->pos[s]];
		freeze(st, c, s, a0, st->r->n, m->p[P_ATTPOSTW] + (size_t)l * C, rstd);
		if (st->r->post_rstd)
			st->r->post_rstd[2 * l + s] = rstd;
	}
}

/* The MLP's output of block l as after - before (rows of the pass). */
static void add_mlp(struct streams *st, const float *after, const float *before, size_t stride,
		    int l)
{
	int C = st->C, a = add_comp(st, WHY_MLP, l, -1);
	for (int s = 0; s < 2; s++) {
		const float *x1 = after + (size_t)st->pos[s] * stride, *x0 = before + (size_t)st->pos[s] * stride;
		double *v = comp_at(st, s, a);
		for (int j = 0; j < C; j++)
			v[j] = (double)x1[j] - x0[j];
	}
}

/* Block l < L of the pass, on the components. */
static void add_block(struct streams *st, const struct model *m, const struct run *r, int l)
{
	const struct model_config *c = &m->cfg;
	int C = st->C, T = r->t;
	add_heads(st, m, r, l);
	if (r->opt.placement == PLACE_PRE) {
		if (c->d_ff)
			add_mlp(st, r->resid + (size_t)(l + 1) * T * C, r->att_res + l * r->lstride_c, C, l);
		return;
	}
	size_t L1 = (size_t)l * C;
	double rs1[2] = { r->ln1_rstd[l * r->lstride_bt + st->pos[0]],
			  r->ln1_rstd[l * r->lstride_bt + st->pos[1]] };
	norm_both(st, c, m->p[P_LN1W] + L1, m->p[P_LN1B] ? m->p[P_LN1B] + L1 : NULL, rs1, l, 1);
	if (!c->d_ff)
		return;
	add_mlp(st, r->mlp_res + l * r->lstride_c, r->ln1 + l * r->lstride_c, C, l);
	double rs2[2] = { r->ln2_rstd[l * r->lstride_bt + st->pos[0]],
			  r->ln2_rstd[l * r->lstride_bt + st->pos[1]] };
	norm_both(st, c, m->p[P_LN2W] + L1, m->p[P_LN2B] ? m->p[P_LN2B] + L1 : NULL, rs2, l, 2);
}

/* out (D) = R_pos W v, W the D rows (C wide) at w; v (C). */
static void project(double *out, const float *w, const double *v, int C, int D)
{
	for (int d = 0; d < D; d++) {
		double s = 0;
		for (int j = 0; j < C; j++)
			s += (double)w[(size_t)d * C + j] * v[j];
		out[d] = s;
	}
}

/* v (D) turned by RoPE at position pos of a pass over n_pos positions. */
static void rope(const struct model_config *c, double *v, int pos, int n_pos)
{
	if (c->pos != POS_ROPE)
		return;
	int R = cfg_rotary_dims(c);
	for (int i = 0; i < R / 2; i++) {
		double f = config_rope_scale(c, n_pos, i, pow((double)c->rope_theta, -2.0 * i / R));
		double ang = (double)pos * f, ms = cfg_rope_mscale(c);
		double cs = ms * cos(ang), sn = ms * sin(ang), a = v[2 * i], b = v[2 * i + 1];
		v[2 * i] = a * cs - b * sn;
		v[2 * i + 1] = a * sn + b * cs;
	}
}

/* v (n, D): each part's dim d times rstd * w[d]. */
static void scale_parts(double *v, int n, int D, const float *w, double rstd)
{
	for (int a = 0; a < n; a++)
		for (int d = 0; d < D; d++)
			v[(size_t)a * D + d] *= rstd * (double)w[d];
}

/* The q/k norm (config qk_norm) frozen at one head's scale: the n parts
 * v (n, D) of a query or key head, whose sum the norm reads, each turned
 * into w * rstd * v_a, rstd = 1/rms of the sum; returns rstd. */
static double freeze_head(double *v, int n, int D, const float *w, double eps)
{
	double ss = 0;
	for (int d = 0; d < D; d++) {
		double sum = 0;
		for (int a = 0; a < n; a++)
			sum += v[(size_t)a * D + d];
		ss += sum * sum;
	}
	double rstd = 1.0 / sqrt(ss / D + eps);
	scale_parts(v, n, D, w, rstd);
	return rstd;
}

/* 1/rms of rows r0 .. r0+nr-1 of the layer's q/k/v projection (w) applied
 * to side s's stream (the sum of its components), their biases included:
 * what OLMo-2's whole-width q/k norm reads at that position. */
static double whole_rstd(struct streams *st, const struct layer_weights *w, int s, int r0, int nr,
			 double eps)
{
	int C = st->C;
	double *x = xcalloc((size_t)C, sizeof *x), ss = 0;
	for (int a = 0; a < st->r->n; a++)
		for (int j = 0; j < C; j++)
			x[j] += comp_at(st, s, a)[j];
	for (int i = r0; i < r0 + nr; i++) {
		double y = w->qkvb ? (double)w->qkvb[i] : 0.0;
		for (int j = 0; j < C; j++)
			y += (double)w->qkvw[(size_t)i * C + j] * x[j];
		ss += y * y;
	}
	free(x);
	return 1.0 / sqrt(ss / nr + eps);
}

/* The q/k norm on the n parts v (n, D) of query head (side 0) or key head
 * (side 1) hh of G, frozen at the 1/rms of what the norm reads: the head's
 * own row (Qwen3's, Gemma 3's), or with qk_norm_whole (OLMo-2's) all H
 * query heads' or all G key heads' rows of the position together, the
 * head's D scales a slice of the norm's H*D or G*D.  Returns that 1/rms. */
static double qk_norm_parts(struct streams *st, const struct model_config *c,
			    const struct layer_weights *w, int G, int s, int hh, double *v, int n)
{
	int D = cfg_d_head(c), H = c->n_head;
	const float *scale = s ? w->knw : w->qnw;
	if (!c->qk_norm_whole)
		return freeze_head(v, n, D, scale, c->norm_eps);
	double rstd = whole_rstd(st, w, s, s ? H * D : 0, (s ? G : H) * D, c->norm_eps);
	scale_parts(v, n, D, scale + (size_t)hh * D, rstd);
	return rstd;
}

/* One line for what why cannot split; 0 when it can. */
static int why_refuse(const struct model *m, const struct run_options *o, int layer, int head,
		      int I, int J, int T, struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
		return err_set(e, "head %d.%d is outside the model (%d layers of %d heads)", layer, head,
			       c->n_layer, c->n_head);
	if (I < 0 || I >= T)
		return err_set(e, "query position %d is outside the text (0 to %d)", I, T - 1);
	if (J < 0 || J >= T)
		return err_set(e, "key position %d is outside the text (0 to %d)", J, T - 1);
	int window; /* a local layer's own window (model.h: layer_mask) */
	enum mask_kind mask = layer_mask(c, o, layer, &window);
	if ((mask == MASK_CAUSAL || mask == MASK_WINDOW) && J > I)
		return err_set(e, "key %d is after query %d: the causal mask hides it (no score)", J, I);
	if (mask == MASK_WINDOW && J < I - window)
		return err_set(e, "key %d is outside query %d's window of %d (no score)", J, I, window);
	if (!c->residual)
		return err_set(e, "why needs residual connections: this model's stream is no sum of parts");
	if (o->pitfall != PITFALL_NONE)
		return err_set(e, "why needs the pitfall off (pitfall %s mixes positions or heads)",
			       pitfall_name(o->pitfall));
	return 0;
}

/* Upper bound on the parts: token, position, qk bias, embedding shift,
 * and per layer H heads, bias, MLP, two shifts (one more for layer L). */
static int max_parts(const struct model_config *c, int layer)
{
	return 5 + layer * (c->n_head + 4);
}

/* The query and key vectors of every part (layer L's input, frozen
 * norm1 under pre-norm, the head's rows, the frozen q/k norm, RoPE) into
 * *q and *k (n, D),
 * malloc'd; returns n. */
static int part_vectors(struct streams *st, struct model *m, const struct run *r, int L, int h,
			double **qp, double **kp)
{
	const struct model_config *c = &m->cfg;
	struct why_result *out = st->r;
	int C = st->C, H = c->n_head, D = cfg_d_head(c), G = run_kv_heads(m, &r->opt);
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	struct layer_weights w;
	model_layer(m, L, qkvw, qkvb, G, &w);
	out->kv_head = h / (H / G);
	out->rstd_q = out->rstd_k = NAN;
	if (r->opt.placement == PLACE_PRE && w.ln1w) {
		out->rstd_q = r->ln1_rstd[L * r->lstride_bt + st->pos[0]];
		out->rstd_k = r->ln1_rstd[L * r->lstride_bt + st->pos[1]];
		double rs[2] = { out->rstd_q, out->rstd_k };
		norm_both(st, c, w.ln1w, w.ln1b, rs, L, 1);
	}
	const float *wq = w.qkvw + (size_t)h * D * C, *wk = w.qkvw + (size_t)(H + out->kv_head) * D * C;
	int ns = out->n;
	if (w.qkvb)
		add_comp(st, WHY_QK_BIAS, -1, -1);
	int n = out->n;
	double *q = xcalloc((size_t)n * D, sizeof *q), *k = xcalloc((size_t)n * D, sizeof *k);
	for (int a = 0; a < n; a++) {
		if (a < ns) {
			project(q + (size_t)a * D, wq, comp_at(st, 0, a), C, D);
			project(k + (size_t)a * D, wk, comp_at(st, 1, a), C, D);
		} else {
			set_from(q + (size_t)a * D, w.qkvb + (size_t)h * D, D);
			set_from(k + (size_t)a * D, w.qkvb + (size_t)(H + out->kv_head) * D, D);
		}
	}
	out->qn_rstd_q = out->qn_rstd_k = NAN;
	if (w.qnw) {
		out->qn_rstd_q = qk_norm_parts(st, c, &w, G, 0, h, q, n);
		out->qn_rstd_k = qk_norm_parts(st, c, &w, G, 1, out->kv_head, k, n);
	}
	struct model_config rc; /* layer L's RoPE (Gemma 3's local base) */
	config_rope_of_layer(c, L, &rc);
	for (int a = 0; a < n; a++) {
		rope(&rc, q + (size_t)a * D, st->pos[0], r->t);
		rope(&rc, k + (size_t)a * D, st->pos[1], r->t);
	}
	*qp = q;
	*kp = k;
	return n;
}

/* Builds the parts of the pair st->pos up to layer L and their vectors. */
static int build(struct streams *st, struct model *m, const struct run *r, const int *tokens,
		 int L, int h, double **q, double **k)
{
	st->r->n = 0;
	embed(st, m, tokens);
	for (int l = 0; l < L; l++)
		add_block(st, m, r, l);
	return part_vectors(st, m, r, L, h, q, k);
}

/* Every term of the pair, and both sides' sums. */
static void score_terms(struct why_result *out, const double *q, const double *k, int n, int D)
{
	out->terms = xcalloc((size_t)n * n, sizeof *out->terms);
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			double s = 0;
			for (int d = 0; d < D; d++)
				s += q[(size_t)a * D + d] * k[(size_t)b * D + d];
			s *= out->scale;
			out->terms[(size_t)a * n + b] = s;
			out->parts[a].query += s;
			out->parts[b].key += s;
			out->sum += s;
		}
}

/* The mean over query I's visible keys j of each part's key side
 * (scale * q . k_b(j), q the whole query at I): into parts[b].key_mean,
 * their sum into out->mean_score. */
static void key_means(struct streams *st, struct model *m, const struct run *r, const int *tokens,
		      const double *qall, int D)
{
	struct why_result *out = st->r, tmp = { 0 };
	int lo, hi, window;
	enum mask_kind mask = layer_mask(&m->cfg, &r->opt, out->layer, &window);
	mask_range(mask, window, out->qpos, r->t, &lo, &hi);
	tmp.parts = xmalloc((size_t)st->max * sizeof *tmp.parts);
	struct streams s2 = *st;
	s2.r = &tmp;
	for (int j = lo; j <= hi; j++) {
		s2.pos[1] = j;
		double *q, *k;
		int n = build(&s2, m, r, tokens, out->layer, out->head, &q, &k);
		for (int b = 0; b < n; b++) {
			double s = 0;
			for (int d = 0; d < D; d++)
				s += qall[d] * k[(size_t)b * D + d];
			out->parts[b].key_mean += s * out->scale / (hi - lo + 1);
			out->mean_score += s * out->scale / (hi - lo + 1);
		}
		free(q);
		free(k);
	}
	free(tmp.parts);
}

/* The pass's own score: its q row at I and k row at J, scaled. */
static double pass_score(const struct model *m, const struct run *r, int L, int h, int g, int I,
			 int J, double scale)
{
	const struct model_config *c = &m->cfg;
	int H = c->n_head, D = cfg_d_head(c), QKV = cfg_qkv_rows(c, run_kv_heads(m, &r->opt));
	const float *qkv = r->qkv + L * r->lstride_qkv;
	const float *q = qkv + (size_t)I * QKV + h * D, *k = qkv + (size_t)J * QKV + (H + g) * D;
	double s = 0;
	for (int d = 0; d < D; d++)
		s += (double)q[d] * k[d];
	return s * scale;
}

int why_run(struct model *m, const struct run_options *o, const int *tokens, int T, int layer,
	    int head, int I, int J, struct why_result *out, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(out, 0, sizeof *out);
	if (why_refuse(m, o, layer, head, I, J, T, e) || model_to_f32(m, "why", e))
		return -1;
	struct run *r = run_new(c, 1, T, RUN_TRAIN);
	if (model_forward(m, o, tokens, NULL, 1, T, r, e) != 0) {
		run_free(r);
		return -1;
	}
	int C = c->d_model;
	struct streams st = { .C = C, .max = max_parts(c, layer), .pos = { I, J }, .r = out };
	st.comp[0] = xmalloc(2 * (size_t)st.max * C * sizeof(double));
	st.comp[1] = st.comp[0] + (size_t)st.max * C;
	out->parts = xmalloc((size_t)st.max * sizeof *out->parts);
	out->layer = layer;
	out->head = head;
	out->qpos = I;
	out->kpos = J;
	out->scale = o->scale ? 1.0 / sqrt((double)(c->attn_scale_dim ? c->attn_scale_dim
								 : cfg_d_head(c)))
			      : 1.0;
	if (c->sandwich)
		out->post_rstd = xcalloc(2 * (size_t)(layer > 0 ? layer : 1), sizeof *out->post_rstd);
	double *q, *k;
	int n = build(&st, m, r, tokens, layer, head, &q, &k), D = cfg_d_head(c);
	score_terms(out, q, k, n, D);
	double *qall = xcalloc((size_t)D, sizeof *qall);
	for (int a = 0; a < n; a++)
		for (int d = 0; d < D; d++)
			qall[d] += q[(size_t)a * D + d];
	key_means(&st, m, r, tokens, qall, D);
	free(qall);
	free(q);
	free(k);
	out->score = pass_score(m, r, layer, head, out->kv_head, I, J, out->scale);
	out->left_out = out->score - out->sum;
	out->softcap = c->attn_softcap;
	out->capped = out->softcap > 0 ? out->softcap * tanh(out->score / out->softcap) : out->score;
	free(st.comp[0]);
	run_free(r);
	return 0;
}

void why_free(struct why_result *r)
{
	if (!r)
		return;
	free(r->parts);
	free(r->terms);
	free(r->post_rstd);
	memset(r, 0, sizeof *r);
}

/* Insertion sort: a few hundred values, no state outside the call. */
void why_rank(const double *v, int n, int *order)
{
	for (int i = 0; i < n; i++) {
		double x = fabs(v[i]);
		int j = i;
		while (j > 0 && fabs(v[order[j - 1]]) < x) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

void why_part_name(const struct why_part *p, char *buf, size_t size)
{
	switch (p->kind) {
	case WHY_TOKEN: snprintf(buf, size, "token"); break;
	case WHY_POS: snprintf(buf, size, "position"); break;
	case WHY_HEAD: snprintf(buf, size, "%d.%d", p->layer, p->head); break;
	case WHY_MLP: snprintf(buf, size, "mlp %d", p->layer); break;
	case WHY_ATTN_BIAS: snprintf(buf, size, "attn bias %d", p->layer); break;
	case WHY_SHIFT:
		if (p->layer < 0)
			snprintf(buf, size, "shift emb");
		else
			snprintf(buf, size, "shift %d %d", p->head, p->layer);
		break;
	case WHY_QK_BIAS: snprintf(buf, size, "qk bias"); break;
	}
}

int why_find_part(const struct why_result *r, const char *name)
{
	for (int a = 0; a < r->n; a++) {
		char buf[32];
		why_part_name(&r->parts[a], buf, sizeof buf);
		if (!strcmp(buf, name))
			return a;
	}
	return -1;
}
