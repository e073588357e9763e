/*
 * heads.c — per-head scores, the induction score and role labels.  The
 * definitions are in heads.h (and README "Head scores").
 */
#include "heads.h"

#include <math.h>
#include <stdlib.h>

#include "tokenizer.h"

static const char *const role_names[HEAD_N_ROLES] = {
	[HEAD_BROAD] = "broad",
	[HEAD_PREV_TOKEN] = "previous-token",
	[HEAD_SINK] = "sink",
	[HEAD_SELF] = "self",
	[HEAD_LOCAL] = "local",
	[HEAD_INDUCTION] = "induction",
};

static const char *const role_badges[HEAD_N_ROLES] = {
	[HEAD_BROAD] = "-",
	[HEAD_PREV_TOKEN] = "prev",
	[HEAD_SINK] = "sink",
	[HEAD_SELF] = "self",
	[HEAD_LOCAL] = "local",
	[HEAD_INDUCTION] = "ind",
};

const char *heads_role_name(enum head_role r)
{
	return (unsigned)r < HEAD_N_ROLES ? role_names[r] : "?";
}

const char *heads_role_badge(enum head_role r)
{
	return (unsigned)r < HEAD_N_ROLES ? role_badges[r] : "?";
}

enum head_role heads_classify(const struct head_scores *s)
{
	/* Induction first: it is measured on its own sequence and is the most
	 * specific behaviour (a previous-token, sink or uniform head scores
	 * near 1/(n+k) there).  previous-token, sink and self look at different
	 * keys, so at most one of them is above 0.5 except on tiny texts.
	 * previous-token before local, because key i-1 is inside the local
	 * window: a head that looks one back is the more specific label. */
	if (!isnan(s->induction) && s->induction >= HEADS_INDUCTION_MIN)
		return HEAD_INDUCTION;
	if (s->prev_token > HEADS_PREV_MIN)
		return HEAD_PREV_TOKEN;
	if (s->first_token > HEADS_SINK_MIN)
		return HEAD_SINK;
	if (s->self > HEADS_SELF_MIN)
		return HEAD_SELF;
	if (s->local >= HEADS_LOCAL_MIN)
		return HEAD_LOCAL;
	return HEAD_BROAD;
}

void heads_score_pattern(const float *att, int T, struct head_scores *out)
{
	double ent = 0.0, dist = 0.0, mx = 0.0, prev = 0.0, first = 0.0, self = 0.0, local = 0.0;
	for (int i = 0; i < T; i++) {
		const float *row = att + (size_t)i * T;
		double rmax = 0.0;
		for (int j = 0; j < T; j++) {
			double w = row[j];
			if (w > 0.0)
				ent -= w * log(w);
			dist += w * abs(i - j);
			rmax = w > rmax ? w : rmax;
		}
		if (i == 0)
			continue;
		mx += rmax;
		prev += row[i - 1];
		first += row[0];
		self += row[i];
		int lo = i - HEADS_LOCAL_BACK > 0 ? i - HEADS_LOCAL_BACK : 0;
		for (int j = lo; j < i; j++)
			local += row[j];
	}
	int rows = T - 1;
	out->entropy = T > 0 ? ent / T : 0.0;
	out->mean_distance = T > 0 ? dist / T : 0.0;
	out->max_weight = rows > 0 ? mx / rows : (T > 0 ? att[0] : 0.0);
	out->prev_token = rows > 0 ? prev / rows : 0.0;
	out->first_token = rows > 0 ? first / rows : 0.0;
	out->self = rows > 0 ? self / rows : 0.0;
	out->local = rows > 0 ? local / rows : 0.0;
	out->induction = NAN;
	out->role = heads_classify(out);
}

double heads_induction_pattern(const float *att, int T, int start, int n)
{
	double s = 0.0;
	for (int k = 0; k < n; k++)
		s += att[(size_t)(start + n + k) * T + start + k + 1];
	return n > 0 ? s / n : NAN;
}

/* Whether id is an ordinary token (not BOS, not <unk>, has bytes). */
static int usable_token(const struct tokenizer *t, int id)
{
	if (!t)
		return 1;
	if (id == t->bos_id || id == t->unk_id)
		return 0;
	char buf[8];
	return tok_piece(t, id, buf, sizeof buf) > 0;
}

int heads_induction_tokens(const struct model *m, uint64_t seed, int *tokens, int *start, int *n)
{
	const struct tokenizer *t = m->tok;
	int V = m->cfg.vocab_size, s = t && t->bos_id >= 0 ? 1 : 0;
	int half = (m->cfg.context - s) / 2;
	if (half > HEADS_INDUCTION_N)
		half = HEADS_INDUCTION_N;
	int *pool = xmalloc((size_t)V * sizeof *pool), np = 0;
	for (int id = 0; id < V; id++)
		if (usable_token(t, id))
			pool[np++] = id;
	if (half < 2 || np == 0) {
		free(pool);
		*start = s;
		*n = 0;
		return 0;
	}
	struct rng g;
	rng_seed(&g, seed);
	if (s)
		tokens[0] = t->bos_id;
	for (int k = 0; k < half; k++) {
		int pick;
		if (np >= half) { /* distinct: a partial Fisher-Yates shuffle */
			int r = k + (int)(rng_u32(&g) % (uint32_t)(np - k));
			int tmp = pool[k];
			pool[k] = pool[r];
			pool[r] = tmp;
			pick = pool[k];
		} else {
			pick = pool[rng_u32(&g) % (uint32_t)np];
		}
		tokens[s + k] = tokens[s + half + k] = pick;
	}
	free(pool);
	*start = s;
	*n = half;
	return s + 2 * half;
}

int heads_induction(struct model *m, const struct run_options *o, uint64_t seed, double *out,
		    struct err *e)
{
	const struct model_config *c = &m->cfg;
	int LH = c->n_layer * c->n_head;
	for (int i = 0; i < LH; i++)
		out[i] = NAN;
	int *tokens = xmalloc((size_t)(c->context > 0 ? c->context : 1) * sizeof *tokens);
	int start, n, T = heads_induction_tokens(m, seed, tokens, &start, &n);
	if (T == 0) {
		free(tokens);
		return 0;
	}
	struct run *r = run_new(c, 1, T, RUN_LOGITS | RUN_ATTN);
	int rc = model_forward(m, o, tokens, NULL, 1, T, r, e);
	if (rc == 0)
		for (int l = 0; l < c->n_layer; l++)
			for (int h = 0; h < c->n_head; h++)
				out[l * c->n_head + h] = heads_induction_pattern(run_att(r, l, 0, h), T, start, n);
	else
		err_prefix(e, "induction sequence");
	run_free(r);
	free(tokens);
	return rc;
}

void heads_score_run(const struct run *r, const double *induction, struct head_scores *out)
{
	for (int l = 0; l < r->L; l++)
		for (int h = 0; h < r->H; h++) {
			struct head_scores *sc = &out[l * r->H + h];
			heads_score_pattern(run_att(r, l, 0, h), r->t, sc);
			sc->induction = induction ? induction[l * r->H + h] : NAN;
			sc->role = heads_classify(sc);
		}
}

int heads_analyze(struct model *m, const struct run_options *o, const struct run *r,
		  struct head_scores *out, struct err *e)
{
	int LH = m->cfg.n_layer * m->cfg.n_head;
	double *ind = xmalloc((size_t)LH * sizeof *ind);
	int rc = heads_induction(m, o, HEADS_SEED, ind, e);
	if (rc == 0)
		heads_score_run(r, ind, out);
	free(ind);
	return rc;
}
