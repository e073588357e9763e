/*
 * heads.c — per-head scores, the induction score and role labels.  The
 * definitions are in heads.h (and docs/heatmaps.md "Head scores").
 */
#include "heads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static const char *const role_names[HEAD_N_ROLES] = {
	[HEAD_BROAD] = "broad",
	[HEAD_PREV_TOKEN] = "previous-token",
	[HEAD_SINK] = "sink",
	[HEAD_SELF] = "self",
	[HEAD_LOCAL] = "local",
	[HEAD_INDUCTION] = "induction",
	[HEAD_OFFSET] = "offset",
	[HEAD_DELIM] = "delimiter",
	[HEAD_NEXT_TOKEN] = "next-token",
	[HEAD_CLS] = "cls",
	[HEAD_SEP] = "sep",
};

static const char *const role_badges[HEAD_N_ROLES] = {
	[HEAD_BROAD] = "-",
	[HEAD_PREV_TOKEN] = "prev",
	[HEAD_SINK] = "sink",
	[HEAD_SELF] = "self",
	[HEAD_LOCAL] = "local",
	[HEAD_INDUCTION] = "ind",
	[HEAD_OFFSET] = "off",
	[HEAD_DELIM] = "delim",
	[HEAD_NEXT_TOKEN] = "next",
	[HEAD_CLS] = "cls",
	[HEAD_SEP] = "sep",
};

const char *heads_role_name(enum head_role r)
{
	return (unsigned)r < HEAD_N_ROLES ? role_names[r] : "?";
}

const char *heads_role_badge(enum head_role r)
{
	return (unsigned)r < HEAD_N_ROLES ? role_badges[r] : "?";
}

int heads_role_parse(const char *name, enum head_role *out)
{
	for (int r = 0; r < HEAD_N_ROLES; r++)
		if (!strcmp(name, role_names[r]) || !strcmp(name, role_badges[r])) {
			if (r == HEAD_BROAD && !strcmp(name, "-"))
				continue;
			*out = (enum head_role)r;
			return 0;
		}
	return -1;
}

double heads_role_score(const struct head_scores *s, enum head_role r)
{
	switch (r) {
	case HEAD_INDUCTION: return s->induction;
	case HEAD_PREV_TOKEN:
	case HEAD_NEXT_TOKEN:
	case HEAD_OFFSET: return s->offset_weight;
	case HEAD_CLS: return s->cls;
	case HEAD_SEP: return s->sep;
	case HEAD_SINK: return s->sink;
	case HEAD_DELIM: return s->delim;
	case HEAD_SELF: return s->self;
	case HEAD_LOCAL: return s->local;
	default: return s->entropy;
	}
}

int heads_strongest(const struct head_scores *scores, int n, enum head_role r)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (scores[i].role == r &&
		    (best < 0 || heads_role_score(&scores[i], r) > heads_role_score(&scores[best], r)))
			best = i;
	return best;
}

void heads_role_text(const struct head_scores *s, char *buf, size_t size)
{
	if (s->role == HEAD_OFFSET)
		snprintf(buf, size, "offset %d", s->offset);
	else
		snprintf(buf, size, "%s", heads_role_name(s->role));
}

void heads_badge_text(const struct head_scores *s, char *buf, size_t size)
{
	if (s->role == HEAD_OFFSET)
		snprintf(buf, size, "off%d", s->offset);
	else
		snprintf(buf, size, "%s", heads_role_badge(s->role));
}

/* Keys row i may see under keys' mask: [*lo, *hi]. */
static void visible(const struct heads_keys *k, int i, int T, int *lo, int *hi)
{
	enum mask_kind m = k ? k->mask : MASK_CAUSAL;
	*lo = 0;
	*hi = m == MASK_NONE ? T - 1 : i;
	if (m == MASK_WINDOW && i - k->window > 0)
		*lo = i - k->window;
}

double heads_uniform_offset(int T, const struct heads_keys *keys, int k)
{
	double s = 0.0;
	int rows = 0;
	for (int i = 0; i < T; i++) {
		int lo, hi;
		if (i - k < 0 || i - k >= T)
			continue;
		visible(keys, i, T, &lo, &hi);
		rows++;
		if (i - k >= lo && i - k <= hi)
			s += 1.0 / (hi - lo + 1);
	}
	return rows ? s / rows : 0.0;
}

void heads_describe(const struct head_scores *x, const struct head_scores *uni,
		    const struct heads_keys *keys, int T, const char *sink_label, char *buf,
		    size_t size)
{
	switch (x->role) {
	case HEAD_INDUCTION:
		snprintf(buf, size, "induction: %.2f of the weight of a repeated token on the token "
			 "after its first occurrence", x->induction);
		break;
	case HEAD_PREV_TOKEN:
	case HEAD_NEXT_TOKEN:
	case HEAD_OFFSET:
		snprintf(buf, size, "%s: %.2f of each row's weight on the token %d %s (uniform "
			 "attention: %.2f)", x->role == HEAD_OFFSET ? "offset" : heads_role_name(x->role),
			 x->offset_weight, abs(x->offset), x->offset > 0 ? "back" : "ahead",
			 heads_uniform_offset(T, keys, x->offset));
		break;
	case HEAD_CLS:
	case HEAD_SEP:
		snprintf(buf, size, "%s: %.2f of each row's weight on %s, which is %.2f of the keys "
			 "it sees", heads_role_name(x->role), x->role == HEAD_CLS ? x->cls : x->sep,
			 x->role == HEAD_CLS ? "[CLS]" : "[SEP]",
			 x->role == HEAD_CLS ? x->cls_share : x->sep_share);
		break;
	case HEAD_SINK:
		snprintf(buf, size, "sink: %.2f of all rows' weight on token %d '%s' (uniform: %.2f)",
			 x->sink, x->sink_key, sink_label ? sink_label : "?", uni->sink);
		break;
	case HEAD_DELIM:
		snprintf(buf, size, "delimiter: %.2f of its weight on whitespace and punctuation, "
			 "which are %.2f of the keys it sees", x->delim, x->delim_share);
		break;
	case HEAD_SELF:
		snprintf(buf, size, "self: %.2f of each row's weight on the query itself (uniform: "
			 "%.2f)", x->self, uni->self);
		break;
	case HEAD_LOCAL:
		snprintf(buf, size, "local: %.2f of each row's weight on the 3 tokens before "
			 "(uniform: %.2f)", x->local, uni->local);
		break;
	default:
		snprintf(buf, size, "broad: no offset, key or kind of key holds most of its weight "
			 "(strongest offset %d: %.2f; sink: %.2f; delimiters: %.2f)", x->offset,
			 x->offset_weight, x->sink, x->delim);
		break;
	}
}

void heads_explain(const struct tokenizer *t, const int *tokens, int T,
		   const struct run_options *o, const struct head_scores *x, char *buf, size_t size)
{
	size_t n = (size_t)(T > 0 ? T : 1);
	bool *delim = xmalloc(3 * n * sizeof *delim), *cls = delim + n, *sep = cls + n;
	heads_delimiters(t, tokens, T, delim);
	heads_specials(t, tokens, T, cls, sep);
	struct heads_keys keys = { .delim = delim, .cls = cls, .sep = sep, .mask = o->mask,
				   .window = o->window };
	struct head_scores uni;
	heads_score_uniform(T, &keys, &uni);
	char lab[64] = "?";
	if (x->sink_key >= 0 && x->sink_key < T)
		tok_label(t, tokens[x->sink_key], lab, sizeof lab);
	heads_describe(x, &uni, &keys, T, lab, buf, size);
	free(delim);
}

enum head_role heads_classify(const struct head_scores *s)
{
	/* Induction first: it is measured on its own sequence and is the most
	 * specific behaviour (a previous-token, sink or uniform head scores
	 * near 1/(n+k) there).  A fixed offset (one key per row, the same
	 * distance back) before a fixed key (sink), both before a class of
	 * keys (delimiters), and self and local last: an offset or a
	 * delimiter head also scores on the local window.  Two different
	 * single keys cannot both hold more than half a row's weight, so the
	 * order among offset, sink and self only matters on tiny texts. */
	if (!isnan(s->induction) && s->induction >= HEADS_INDUCTION_MIN)
		return HEAD_INDUCTION;
	if (s->offset_weight > HEADS_PREV_MIN)
		return s->offset == 1 ? HEAD_PREV_TOKEN : s->offset == -1 ? HEAD_NEXT_TOKEN : HEAD_OFFSET;
	/* an encoder's [CLS] is also one fixed key: its own role first */
	if (s->cls >= HEADS_SPECIAL_MIN && s->cls >= HEADS_SPECIAL_LIFT * s->cls_share)
		return HEAD_CLS;
	if (s->sep >= HEADS_SPECIAL_MIN && s->sep >= HEADS_SPECIAL_LIFT * s->sep_share)
		return HEAD_SEP;
	if (s->sink > HEADS_SINK_MIN)
		return HEAD_SINK;
	if (s->delim >= HEADS_DELIM_MIN && s->delim >= HEADS_DELIM_LIFT * s->delim_share)
		return HEAD_DELIM;
	if (s->self > HEADS_SELF_MIN)
		return HEAD_SELF;
	if (s->local >= HEADS_LOCAL_MIN)
		return HEAD_LOCAL;
	return HEAD_BROAD;
}

/* ------------------------------------------------------------- delimiters */

/* Whitespace and punctuation code points: ASCII, Latin-1 punctuation,
 * general punctuation and spaces, CJK symbols and punctuation, CJK
 * compatibility and small forms, full-width punctuation. */
static bool is_delim_cp(uint32_t c)
{
	if (c < 0x80)
		return c <= 0x20 || c == 0x7f || (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) ||
		       (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
	switch (c) {
	case 0x85: case 0xa0: case 0xa1: case 0xa7: case 0xab: case 0xb6: case 0xb7: case 0xbb:
	case 0xbf: case 0x1680:
		return true;
	}
	return (c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f) ||
	       (c >= 0xfe10 && c <= 0xfe19) || (c >= 0xfe30 && c <= 0xfe6f) ||
	       (c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
	       (c >= 0xff3b && c <= 0xff40) || (c >= 0xff5b && c <= 0xff65);
}

bool heads_is_delimiter(const struct tokenizer *t, int id)
{
	if (!t || id == t->bos_id || id == t->unk_id)
		return false;
	char buf[64];
	int len = tok_piece(t, id, buf, sizeof buf);
	if (len <= 0 || len >= (int)sizeof buf)
		return false;
	const unsigned char *u = (const unsigned char *)buf;
	for (int i = 0; i < len;) {
		uint32_t cp;
		int bad;
		i += utf8_decode(u + i, (size_t)(len - i), &cp, &bad);
		if (bad || !is_delim_cp(cp))
			return false;
	}
	return true;
}

void heads_delimiters(const struct tokenizer *t, const int *ids, int n, bool *out)
{
	for (int i = 0; i < n; i++)
		out[i] = heads_is_delimiter(t, ids[i]);
}

bool heads_has_specials(const struct tokenizer *t)
{
	return t && t->bos_id >= 0 && t->eos_id >= 0;
}

void heads_specials(const struct tokenizer *t, const int *ids, int n, bool *cls, bool *sep)
{
	bool on = heads_has_specials(t);
	for (int i = 0; i < n; i++) {
		cls[i] = on && ids[i] == t->bos_id;
		sep[i] = on && ids[i] == t->eos_id;
	}
}

/* ----------------------------------------------------------------- scores */

double heads_offset_weight(const float *att, int T, int k)
{
	int i0 = k > 0 ? k : 0, i1 = k > 0 ? T : T + k;
	double s = 0.0;
	for (int i = i0; i < i1; i++)
		s += att[(size_t)i * T + (i - k)];
	return i1 > i0 ? s / (i1 - i0) : 0.0;
}

int heads_offset_max(int T)
{
	return (T - 1) / 2 > 1 ? (T - 1) / 2 : 1;
}

/* The offset k (|k| <= heads_offset_max(T), k != 0) whose diagonal holds
 * the most weight, and that weight (see heads.h). */
static void best_offset(const float *att, int T, int *k_out, double *w_out)
{
	int best = 1;
	double bw = -1.0;
	for (int a = 1; a <= heads_offset_max(T) && a < T; a++)
		for (int sgn = 1; sgn >= -1; sgn -= 2) {
			double w = heads_offset_weight(att, T, sgn * a);
			if (w > bw) {
				bw = w;
				best = sgn * a;
			}
		}
	*k_out = best;
	*w_out = bw > 0.0 ? bw : 0.0;
}

/* Sums over rows of the weight on the special keys and their share of
 * the visible keys. */
struct special_sums {
	double cls, cls_share, sep, sep_share;
};

static void special_row(struct special_sums *sp, const struct heads_keys *keys, const float *row,
			int lo, int hi)
{
	if (!keys || (!keys->cls && !keys->sep))
		return;
	int nc = 0, ns = 0;
	for (int j = lo; j <= hi; j++) {
		if (keys->cls && keys->cls[j]) {
			sp->cls += row[j];
			nc++;
		}
		if (keys->sep && keys->sep[j]) {
			sp->sep += row[j];
			ns++;
		}
	}
	sp->cls_share += (double)nc / (hi - lo + 1);
	sp->sep_share += (double)ns / (hi - lo + 1);
}

void heads_score_pattern(const float *att, int T, const struct heads_keys *keys,
			 struct head_scores *out)
{
	double ent = 0.0, dist = 0.0, mx = 0.0, prev = 0.0, first = 0.0, self = 0.0, local = 0.0;
	double dl = 0.0, dshare = 0.0, uent = 0.0; /* uent: uniform attention's entropy */
	const bool *delim = keys ? keys->delim : NULL;
	struct special_sums sp = { 0 };
	double *col = xcalloc((size_t)(T > 0 ? T : 1), sizeof *col); /* column sums, rows i >= 1, i != j */
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
		int vlo, vhi;
		visible(keys, i, T, &vlo, &vhi);
		uent += log((double)(vhi - vlo + 1));
		if (i == 0)
			continue;
		special_row(&sp, keys, row, vlo, vhi);
		mx += rmax;
		prev += row[i - 1];
		first += row[0];
		self += row[i];
		int lo = i - HEADS_LOCAL_BACK > 0 ? i - HEADS_LOCAL_BACK : 0;
		for (int j = lo; j < i; j++)
			local += row[j];
		for (int j = 0; j < T; j++)
			if (j != i)
				col[j] += row[j];
		if (delim) {
			int nd = 0;
			for (int j = vlo; j <= vhi; j++)
				if (delim[j]) {
					dl += row[j];
					nd++;
				}
			dshare += (double)nd / (vhi - vlo + 1);
		}
	}
	int rows = T - 1;
	out->entropy = T > 0 ? ent / T : 0.0;
	out->mean_distance = T > 0 ? dist / T : 0.0;
	out->max_weight = rows > 0 ? mx / rows : (T > 0 ? att[0] : 0.0);
	out->prev_token = rows > 0 ? prev / rows : 0.0;
	out->first_token = rows > 0 ? first / rows : 0.0;
	out->self = rows > 0 ? self / rows : 0.0;
	out->local = rows > 0 ? local / rows : 0.0;
	out->delim = rows > 0 ? dl / rows : 0.0;
	out->delim_share = rows > 0 ? dshare / rows : 0.0;
	out->cls = rows > 0 ? sp.cls / rows : 0.0;
	out->cls_share = rows > 0 ? sp.cls_share / rows : 0.0;
	out->sep = rows > 0 ? sp.sep / rows : 0.0;
	out->sep_share = rows > 0 ? sp.sep_share / rows : 0.0;
	out->spread = uent > 0.0 ? ent / uent : 0.0;
	out->sink = 0.0;
	out->sink_key = 0;
	for (int j = 0; j < T && rows > 0; j++)
		if (col[j] / rows > out->sink) {
			out->sink = col[j] / rows;
			out->sink_key = j;
		}
	free(col);
	out->offset = 1;
	out->offset_weight = 0.0;
	if (T > 1)
		best_offset(att, T, &out->offset, &out->offset_weight);
	out->induction = NAN;
	out->role = heads_classify(out);
}

void heads_score_uniform(int T, const struct heads_keys *keys, struct head_scores *out)
{
	float *u = xcalloc((size_t)T * T, sizeof *u);
	for (int i = 0; i < T; i++) {
		int lo, hi;
		visible(keys, i, T, &lo, &hi);
		for (int j = lo; j <= hi; j++)
			u[(size_t)i * T + j] = 1.0f / (float)(hi - lo + 1);
	}
	heads_score_pattern(u, T, keys, out);
	free(u);
}

double heads_induction_pattern(const float *att, int T, int start, int n)
{
	double s = 0.0;
	for (int k = 0; k < n; k++)
		s += att[(size_t)(start + n + k) * T + start + k + 1];
	return n > 0 ? s / n : NAN;
}

/* Whether id is an ordinary token (not BOS, EOS, [MASK] or <unk>; has
 * bytes). */
static int usable_token(const struct tokenizer *t, int id)
{
	if (!t)
		return 1;
	if (id == t->bos_id || id == t->unk_id || id == t->eos_id || id == tok_char_mask_id(t))
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

/* One layer's induction scores as run_att_each gives its heads. */
struct induction_layer {
	double *out;
	int T, start, n, H, l;
};

static void induction_head(void *ctx, int b, int h, const float *att)
{
	const struct induction_layer *x = ctx;
	(void)b; /* one sequence */
	x->out[x->l * x->H + h] = heads_induction_pattern(att, x->T, x->start, x->n);
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
	struct run *r = run_new(c, 1, T, RUN_ATTN); /* no logits: only the weights are read */
	int rc = model_forward(m, o, tokens, NULL, 1, T, r, e);
	struct induction_layer x = { out, T, start, n, c->n_head, 0 };
	if (rc == 0)
		for (x.l = 0; x.l < c->n_layer; x.l++)
			run_att_each(r, x.l, induction_head, &x);
	else
		err_prefix(e, "induction sequence");
	run_free(r);
	free(tokens);
	return rc;
}

/* One layer's heads scored as run_att_each gives them (sequence 0's). */
struct score_layer {
	struct heads_keys keys;
	struct head_scores *out;
	const double *induction;
	int T, H, l;
};

static void score_head(void *ctx, int b, int h, const float *att)
{
	const struct score_layer *x = ctx;
	if (b != 0)
		return;
	struct head_scores *sc = &x->out[x->l * x->H + h];
	heads_score_pattern(att, x->T, &x->keys, sc);
	sc->induction = x->induction ? x->induction[x->l * x->H + h] : NAN;
	sc->role = heads_classify(sc);
}

void heads_score_run(const struct model_config *c, const struct run *r, const bool *delim,
		     const double *induction, struct head_scores *out)
{
	struct heads_keys keys = { .delim = delim };
	heads_score_run_keys(c, r, &keys, induction, out);
}

void heads_score_run_keys(const struct model_config *c, const struct run *r,
			  const struct heads_keys *k, const double *induction,
			  struct head_scores *out)
{
	struct score_layer x = { { .delim = k->delim, .cls = k->cls, .sep = k->sep,
				   .mask = r->opt.mask, .window = r->opt.window },
				 out, induction, r->t, r->H, 0 };
	for (int l = 0; l < r->L; l++) {
		if (c) /* a local layer's own window */
			x.keys.mask = layer_mask(c, &r->opt, l, &x.keys.window);
		x.l = l;
		run_att_each(r, l, score_head, &x);
	}
}

int heads_analyze(struct model *m, const struct run_options *o, const struct run *r,
		  const int *tokens, struct head_scores *out, struct err *e)
{
	int LH = m->cfg.n_layer * m->cfg.n_head;
	double *ind = xmalloc((size_t)LH * sizeof *ind);
	size_t n = (size_t)(r->t > 0 ? r->t : 1);
	bool *delim = xmalloc(3 * n * sizeof *delim), *cls = delim + n, *sep = cls + n;
	heads_delimiters(m->tok, tokens, r->t, delim);
	heads_specials(m->tok, tokens, r->t, cls, sep);
	struct heads_keys keys = { .delim = delim, .cls = cls, .sep = sep };
	int rc = heads_induction(m, o, HEADS_SEED, ind, e);
	if (rc == 0)
		heads_score_run_keys(&m->cfg, r, &keys, ind, out);
	free(delim);
	free(ind);
	return rc;
}
