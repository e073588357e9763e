/*
 * cmd-expect.c — expect EXPR "SENTENCE": a demo's claim about the current
 * session, checked where it is made.  Prints "✓ SENTENCE" when EXPR holds;
 * else "✗ SENTENCE" with the value of every quantity EXPR read, and fails
 * (so that --batch stops with FILE:LINE and exit status 1).  In Chinese
 * (attnscope --lang zh) the sentence printed is the line's zh twin
 * (s->narration, script.h); the claim checked is the same.
 *
 * EXPR is read from the command's words (quotes group a word, as for every
 * command) and evaluated as it is parsed:
 *
 *   claim   := test { "and" test }
 *   test    := sum OP sum [ "+-" sum ]          OP: < <= > >= == != ~=
 *                                               (~= needs +- TOLERANCE)
 *            | "role" HEAD ( "==" | "!=" ) ROLE
 *   sum     := term { ( "+" | "-" ) term }
 *   term    := factor { ( "*" | "/" ) factor }
 *   factor  := NUMBER | QUANTITY ARGS... | "(" sum ")" | "-" factor
 *   HEAD    := L.H | a role name (the head `show head ROLE` picks: the
 *              strongest of that role)
 *
 * Every quantity is read from what the session already holds — the
 * numbers of the summary line, `heads`' scores (session_head_scores), the
 * last sweep, `compare variants`, lab table, patch, why, qkov and circuits
 * as those commands printed them — never computed a second way.  The table
 * quantities[] below lists them; `help expect` prints it.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cmd.h"
#include "compose.h"
#include "config.h"
#include "decode.h"
#include "heads.h"
#include "patch.h"
#include "tokenizer.h"

/* ---------------------------------------------------------------- parser */

/* The words w[i .. n) of one expression, and what was read so far. */
struct ex {
	struct session *s;
	char **w;
	int n, i;
	struct err *e;
	char seen[1024]; /* "name = value, ..." of every quantity read */
	size_t used;
};

static const char *peek(const struct ex *x)
{
	return x->i < x->n ? x->w[x->i] : NULL;
}

static const char *next(struct ex *x)
{
	return x->i < x->n ? x->w[x->i++] : NULL;
}

static bool accept(struct ex *x, const char *word)
{
	if (peek(x) && !strcmp(peek(x), word)) {
		x->i++;
		return true;
	}
	return false;
}

/* A number as the ✗ line shows it: whole numbers whole, else 4 decimals,
 * very small or large ones in %g. */
static void fmt(double v, char *buf, size_t size)
{
	double a = fabs(v);
	if (isnan(v))
		snprintf(buf, size, "-");
	else if (v == floor(v) && a < 1e9)
		snprintf(buf, size, "%.0f", v);
	else if (a >= 1e-3 && a < 1e6)
		snprintf(buf, size, "%.4f", v);
	else
		snprintf(buf, size, "%.3g", v);
}

/* Notes that the quantity called name (printf-style) has value v; returns v. */
static double note(struct ex *x, double v, const char *name, ...) __attribute__((format(printf, 3, 4)));
static double note(struct ex *x, double v, const char *name, ...)
{
	char what[160], num[32];
	va_list ap;
	va_start(ap, name);
	vsnprintf(what, sizeof what, name, ap);
	va_end(ap);
	fmt(v, num, sizeof num);
	if (x->used < sizeof x->seen)
		x->used += (size_t)snprintf(x->seen + x->used, sizeof x->seen - x->used, "%s%s = %s",
					    x->used ? ", " : "", what, num);
	return v;
}

/* The next word as argument `what` of quantity q, or -1 with a message. */
static int arg(struct ex *x, const char *q, const char *what, const char **out)
{
	*out = next(x);
	if (!*out)
		return err_set(x->e, "expect: %s needs %s", q, what);
	return 0;
}

static int arg_int(struct ex *x, const char *q, const char *what, int lo, int hi, int *out)
{
	const char *w;
	if (arg(x, q, what, &w))
		return -1;
	return cmd_parse_int(w, lo, hi, what, out, x->e);
}

/* ------------------------------------------------------------------ heads */

/* Every head's scores (`heads`), or NULL with a message. */
static const struct head_scores *scores(struct ex *x)
{
	if (session_need_run(x->s, x->e))
		return NULL;
	return session_head_scores(x->s, x->e);
}

/* HEAD: L.H, or a role name (the strongest head of that role).  Sets *idx
 * to l * H + h, or -1 when no head has the role (noted); 0, or -1 with a
 * message. */
static int head_arg(struct ex *x, const char *q, int *idx, char *label, size_t size)
{
	const char *w;
	if (arg(x, q, "a head (L.H or a role)", &w))
		return -1;
	if (session_need_run(x->s, x->e))
		return -1;
	int H = x->s->model->cfg.n_head, l, h;
	enum head_role r;
	if (w[0] >= '0' && w[0] <= '9') {
		if (session_parse_head(x->s, w, &l, &h, x->e))
			return -1;
		*idx = l * H + h;
		snprintf(label, size, "%d.%d", l, h);
		return 0;
	}
	if (heads_role_parse(w, &r) != 0)
		return err_set(x->e, "expect: %.40s: not a head (L.H) or a role name", w);
	const struct head_scores *sc = scores(x);
	if (!sc)
		return -1;
	*idx = heads_strongest(sc, x->s->model->cfg.n_layer * H, r);
	if (*idx < 0)
		snprintf(label, size, "%s (no such head)", w);
	else
		snprintf(label, size, "%s %d.%d", w, *idx / H, *idx % H);
	return 0;
}

/* The score names of `heads` and where each is in struct head_scores. */
static const struct score_name {
	const char *name;
	size_t off;
	bool whole; /* an int field */
} score_names[] = {
	{ "entropy", offsetof(struct head_scores, entropy), false },
	{ "max", offsetof(struct head_scores, max_weight), false },
	{ "prev", offsetof(struct head_scores, prev_token), false },
	{ "first", offsetof(struct head_scores, first_token), false },
	{ "self", offsetof(struct head_scores, self), false },
	{ "local", offsetof(struct head_scores, local), false },
	{ "dist", offsetof(struct head_scores, mean_distance), false },
	{ "delim", offsetof(struct head_scores, delim), false },
	{ "share", offsetof(struct head_scores, delim_share), false },
	{ "sink", offsetof(struct head_scores, sink), false },
	{ "key", offsetof(struct head_scores, sink_key), true },
	{ "offset", offsetof(struct head_scores, offset), true },
	{ "offw", offsetof(struct head_scores, offset_weight), false },
	{ "induct", offsetof(struct head_scores, induction), false },
	{ "cls", offsetof(struct head_scores, cls), false },
	{ "sep", offsetof(struct head_scores, sep), false },
	{ "cls.share", offsetof(struct head_scores, cls_share), false },
	{ "sep.share", offsetof(struct head_scores, sep_share), false },
	{ "spread", offsetof(struct head_scores, spread), false },
	{ NULL, 0, false },
};

static double score_of(const struct head_scores *x, const struct score_name *n)
{
	const char *p = (const char *)x + n->off;
	return n->whole ? (double)*(const int *)p : *(const double *)p;
}

/* SCORE: one of score_names, or "layer" (layer_ok); NULL with a message
 * with the names near it. */
static const struct score_name *score_arg(struct ex *x, const char *q, bool layer_ok,
					  const char **word)
{
	static const struct score_name layer = { "layer", 0, true };
	if (arg(x, q, "a score (entropy, max, prev, ...)", word))
		return NULL;
	for (const struct score_name *n = score_names; n->name; n++)
		if (!strcmp(n->name, *word))
			return n;
	if (layer_ok && !strcmp(*word, "layer"))
		return &layer;
	char near[160] = "";
	size_t k = 0;
	for (const struct score_name *n = score_names; n->name && k < sizeof near; n++)
		if (edit_distance(*word, n->name) <= 2)
			k += (size_t)snprintf(near + k, sizeof near - k, "%s%s", k ? ", " : "", n->name);
	err_set(x->e, "expect: %s: no score \"%.32s\"%s%s%s (the columns of heads: entropy, max, "
		"prev, first, self, local, dist, delim, share, sink, key, offset, offw, induct; an "
		"encoder's cls, sep, cls.share, sep.share, spread%s)",
		q, *word, k ? " (did you mean: " : "", near, k ? "?)" : "", layer_ok ? "; layer" : "");
	return NULL;
}

static int q_head(struct ex *x, const char *q, double *v)
{
	int idx;
	char label[64];
	const char *w;
	if (head_arg(x, q, &idx, label, sizeof label))
		return -1;
	const struct score_name *n = score_arg(x, q, true, &w);
	const struct head_scores *sc = n ? scores(x) : NULL;
	if (!sc)
		return -1;
	int H = x->s->model->cfg.n_head;
	*v = idx < 0 ? NAN : !strcmp(n->name, "layer") ? idx / H : score_of(&sc[idx], n);
	note(x, *v, "head %s %s", label, n->name);
	return 0;
}

static int q_heads_agg(struct ex *x, const char *q, double *v)
{
	const char *w;
	const struct score_name *n = score_arg(x, q, false, &w);
	const struct head_scores *sc = n ? scores(x) : NULL;
	if (!sc)
		return -1;
	int N = x->s->model->cfg.n_layer * x->s->model->cfg.n_head;
	double sum = 0, lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < N; i++) {
		double y = score_of(&sc[i], n);
		sum += y;
		lo = y < lo ? y : lo;
		hi = y > hi ? y : hi;
	}
	*v = !strcmp(q, "heads.mean") ? sum / N : !strcmp(q, "heads.min") ? lo : hi;
	note(x, *v, "%s %s", q, n->name);
	return 0;
}

static int q_heads_count(struct ex *x, const char *q, double *v)
{
	const char *w;
	enum head_role r;
	if (arg(x, q, "a role", &w))
		return -1;
	if (heads_role_parse(w, &r) != 0)
		return err_set(x->e, "expect: %s: no role \"%.32s\" (help heads lists them)", q, w);
	const struct head_scores *sc = scores(x);
	if (!sc)
		return -1;
	int N = x->s->model->cfg.n_layer * x->s->model->cfg.n_head, c = 0;
	for (int i = 0; i < N; i++)
		c += sc[i].role == r;
	*v = note(x, c, "%s %s", q, w);
	return 0;
}

/* att HEAD I J: the weight query I puts on key J, as views draw it. */
static int q_att(struct ex *x, const char *q, double *v)
{
	int idx, i, j;
	char label[64];
	if (head_arg(x, q, &idx, label, sizeof label))
		return -1;
	int T = x->s->n_tokens, H = x->s->model->cfg.n_head;
	if (arg_int(x, q, "the query token", 0, T - 1, &i) || arg_int(x, q, "the key token", 0, T - 1, &j))
		return -1;
	*v = idx < 0 ? NAN : session_att(x->s, idx / H, idx % H)[(size_t)i * T + j];
	note(x, *v, "att %s %d %d", label, i, j);
	return 0;
}

/* offw HEAD K and even K: `heads --offsets`' columns. */
static int q_offw(struct ex *x, const char *q, double *v)
{
	int idx, k;
	char label[64];
	if (head_arg(x, q, &idx, label, sizeof label))
		return -1;
	int T = x->s->n_tokens, H = x->s->model->cfg.n_head;
	if (arg_int(x, q, "the offset", -(T - 1), T - 1, &k))
		return -1;
	if (k == 0)
		return err_set(x->e, "expect: offw: the offset is not 0 (1 back, -1 ahead, ...)");
	*v = idx < 0 ? NAN : heads_offset_weight(run_att(x->s->run, idx / H, 0, idx % H), T, k);
	note(x, *v, "offw %s %d", label, k);
	return 0;
}

static int q_even(struct ex *x, const char *q, double *v)
{
	int k;
	if (session_need_run(x->s, x->e))
		return -1;
	int T = x->s->n_tokens;
	if (arg_int(x, q, "the offset", T > 1 ? -(T - 1) : -1, T > 1 ? T - 1 : 1, &k))
		return -1;
	if (k == 0)
		return err_set(x->e, "expect: even: the offset is not 0 (1 back, -1 ahead, ...)");
	struct heads_keys keys = { .mask = x->s->opt.mask, .window = x->s->opt.window };
	*v = note(x, heads_uniform_offset(T, &keys, k), "even %d", k);
	return 0;
}

/* role HEAD == NAME: a test of its own (the role is a word, not a number). */
static int role_test(struct ex *x, bool *holds)
{
	int idx;
	char label[64], got[32] = "-";
	const char *op, *w;
	if (head_arg(x, "role", &idx, label, sizeof label) || arg(x, "role", "== or !=", &op) ||
	    arg(x, "role", "a role name", &w))
		return -1;
	if (strcmp(op, "==") && strcmp(op, "!="))
		return err_set(x->e, "expect: role HEAD compares with == or !=, not %.16s", op);
	enum head_role r;
	if (heads_role_parse(w, &r) != 0)
		return err_set(x->e, "expect: role: no role \"%.32s\" (help heads lists them)", w);
	const struct head_scores *sc = scores(x);
	if (!sc)
		return -1;
	bool same = idx >= 0 && sc[idx].role == r;
	if (idx >= 0)
		heads_role_text(&sc[idx], got, sizeof got);
	*holds = !strcmp(op, "==") ? same : !same;
	if (x->used < sizeof x->seen)
		x->used += (size_t)snprintf(x->seen + x->used, sizeof x->seen - x->used, "%srole %s = %s",
					    x->used ? ", " : "", label, got);
	return 0;
}

/* ------------------------------------------------------------ the run */

/* loss, ppl, kl, top1, dloss, drift, tokens of the current run (the
 * summary line's numbers), prev.* of the run before it, base.loss. */
static int q_run(struct ex *x, const char *q, double *v)
{
	bool prev = !strncmp(q, "prev.", 5), base = !strcmp(q, "base.loss");
	const struct run_numbers *n = prev ? &x->s->prev : &x->s->cur;
	if (!prev && session_need_run(x->s, x->e))
		return -1;
	if (!n->valid)
		return err_set(x->e, "expect: %s: there is no run before the current one", q);
	const char *f = prev ? q + 5 : q;
	*v = base ? n->loss - n->dloss : !strcmp(f, "loss") ? n->loss : !strcmp(f, "ppl") ? n->ppl
	   : !strcmp(f, "kl") ? n->kl : !strcmp(f, "top1") ? n->top1 : !strcmp(f, "dloss") ? n->dloss
	   : !strcmp(f, "drift") ? n->drift : n->tokens;
	if (prev)
		note(x, *v, "%s (%s)", q, n->model);
	else
		note(x, *v, "%s", q);
	return 0;
}

/* unk: the text's tokens that are <unk> (what the warning after `text` counts). */
static int q_unk(struct ex *x, const char *q, double *v)
{
	if (session_need_run(x->s, x->e))
		return -1;
	int c = 0;
	for (int i = 0; i < x->s->n_tokens; i++)
		c += x->s->unk_src && x->s->unk_src[i] >= 0;
	*v = note(x, c, "%s", q);
	return 0;
}

/* The loaded model's shape (native), and one layer's attention parameters
 * from the tensor table (Q, K, V and output weights and biases). */
static int q_model(struct ex *x, const char *q, double *v)
{
	if (session_need_model(x->s, x->e))
		return -1;
	const struct model_config *c = &x->s->model->cfg;
	if (!strcmp(q, "params.attn")) {
		static const enum param_id attn[] = { P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB };
		size_t shape[3], sum = 0;
		int nd;
		for (size_t i = 0; i < sizeof attn / sizeof *attn; i++)
			sum += param_shape(c, attn[i], shape, &nd);
		*v = (double)sum / c->n_layer; /* the tensors hold every layer */
	} else {
		*v = !strcmp(q, "d_model") ? c->d_model : !strcmp(q, "n_layer") ? c->n_layer
		   : !strcmp(q, "n_head") ? c->n_head : c->n_kv_head;
	}
	note(x, *v, "%s", q);
	return 0;
}

/* p I TOKEN, p.rank I TOKEN: the probability `top ... at I` gives TOKEN
 * (the next token, or for an encoder the token at I itself) and its place
 * among all (1: the most likely).  TOKEN is written as top labels it
 * ("n", "\u2423the", "[MASK]"). */
static int q_prob(struct ex *x, const char *q, double *v)
{
	const char *w;
	int pos;
	if (session_need_run(x->s, x->e) ||
	    arg_int(x, q, "the position", 0, x->s->n_tokens - 1, &pos) ||
	    arg(x, q, "a token (as top labels it)", &w))
		return -1;
	const struct model *m = x->s->model;
	const struct run *r = x->s->run;
	if (!cfg_has_head(&m->cfg) || !r->logits)
		return err_set(x->e, "expect: %s: the model has no output head", q);
	int id = -1, nt = decoder_ids(m);
	char lab[96];
	for (int t = 0; t < nt && id < 0; t++) {
		tok_label(m->tok, t, lab, sizeof lab);
		if (!strcmp(lab, w))
			id = t;
	}
	if (id < 0)
		return err_set(x->e, "expect: %s: no token \"%.32s\" (write it as top labels it)", q, w);
	if (!strcmp(q, "p")) {
		*v = note(x, token_prob(r, pos, id), "p %d %s", pos, w);
		return 0;
	}
	const float *z = run_logits_row(r, pos);
	int rank = 1;
	for (int t = 0; t < r->V; t++)
		rank += z[t] > z[id];
	*v = note(x, rank, "p.rank %d %s", pos, w);
	return 0;
}

/* ------------------------------------------------- results of commands */

static int q_sweep(struct ex *x, const char *q, double *v)
{
	const struct sweep_result *r = &x->s->sweep;
	if (!r->L || !r->head)
		return err_set(x->e, "expect: %s: no sweep has run yet", q);
	if (r->L * r->H != x->s->model->cfg.n_layer * x->s->model->cfg.n_head)
		return err_set(x->e, "expect: %s: the last sweep was of another model", q);
	if (!strcmp(q, "sweep.removable") || !strcmp(q, "sweep.heads") || !strcmp(q, "sweep.base")) {
		*v = q[6] == 'r' ? sweep_removable(r, SWEEP_REMOVABLE_FRAC) : q[6] == 'h' ? r->L * r->H
		   : r->base_loss;
		note(x, *v, "%s", q);
		return 0;
	}
	const struct ablation *a;
	char label[64];
	int idx, l;
	if (!strcmp(q, "sweep")) {
		if (head_arg(x, q, &idx, label, sizeof label))
			return -1;
		a = idx < 0 ? NULL : &r->head[idx];
	} else {
		if (arg_int(x, q, "the layer", 0, r->L - 1, &l))
			return -1;
		a = &r->layer[l];
		snprintf(label, sizeof label, "%d", l);
	}
	const char *m;
	if (arg(x, q, "dloss, kl or top1", &m))
		return -1;
	if (strcmp(m, "dloss") && strcmp(m, "kl") && strcmp(m, "top1"))
		return err_set(x->e, "expect: %s: no measure \"%.32s\" (dloss, kl or top1)", q, m);
	*v = !a ? NAN : m[0] == 'd' ? a->delta_loss : m[0] == 'k' ? a->kl : a->top1_agree;
	note(x, *v, "%s %s %s", q, label, m);
	return 0;
}

static int q_compare(struct ex *x, const char *q, double *v)
{
	const char *row, *col;
	if (arg(x, q, "a row (a variant's name)", &row) || arg(x, q, "a column", &col))
		return -1;
	if (!x->s->n_variants)
		return err_set(x->e, "expect: compare: `compare variants` has not run yet");
	const struct variant_row *r = NULL;
	for (int i = 0; i < x->s->n_variants && !r; i++) {
		const char *name = x->s->variants[i].name;
		size_t n = strlen(row);
		if (!strcmp(name, row) || (!strncmp(name, row, n) && (!strncmp(name + n, " [", 2) ||
									!strncmp(name + n, " (", 2))))
			r = &x->s->variants[i];
	}
	if (!r)
		return err_set(x->e, "expect: compare: no row \"%.64s\" in the last compare variants", row);
	static const char *const cols[] = { "loss", "ppl", "kl", "top1", "drift", NULL };
	int c = 0;
	while (cols[c] && strcmp(cols[c], col))
		c++;
	if (!cols[c])
		return err_set(x->e, "expect: compare: no column \"%.32s\" (loss, ppl, kl, top1, drift)", col);
	double vals[] = { r->loss, r->ppl, r->kl, r->top1_agree, r->drift };
	*v = note(x, vals[c], "compare \"%s\" %s", r->name, col);
	return 0;
}

/* compare ROW COLUMN above: ROW is a row's name, or the name without its
 * " [trained]" or " (mha)"-style suffix. */

/* lab ROW COLUMN: the cell of the last lab table in the column headed
 * COLUMN and the row whose first cells, joined by blanks, read ROW. */
static int q_lab(struct ex *x, const char *q, double *v)
{
	const char *row, *col;
	if (arg(x, q, "a row", &row) || arg(x, q, "a column", &col))
		return -1;
	const struct lab_table *t = &x->s->lab.table;
	if (t->rows == 0)
		return err_set(x->e, "expect: lab: no lab experiment has run yet");
	int c = -1, r = -1, matches = 0;
	for (int j = 0; j < t->cols; j++)
		if (!strcmp(t->cells[j], col))
			c = j;
	if (c < 0)
		return err_set(x->e, "expect: lab: no column \"%.40s\" in lab %s", col, x->s->lab_name);
	for (int i = 1; i < t->rows; i++) {
		char key[256] = "";
		size_t n = 0;
		for (int j = 0; j < t->cols && n < sizeof key; j++) {
			n += (size_t)snprintf(key + n, sizeof key - n, "%s%s", j ? " " : "",
					      t->cells[(size_t)i * t->cols + j]);
			if (!strcmp(key, row)) {
				r = i;
				matches++;
				break;
			}
		}
	}
	if (matches != 1)
		return err_set(x->e, "expect: lab: %s row \"%.64s\" in lab %s", matches ? "more than one"
			       : "no", row, x->s->lab_name);
	const char *cell = t->cells[(size_t)r * t->cols + c];
	char *end;
	double d = strtod(cell, &end);
	*v = note(x, end == cell ? NAN : d, "lab %s [%s, %s]", x->s->lab_name, row, col);
	return 0;
}

/* batch I COLUMN: text I's loss in the last batch, alone or under one
 * combination of the masks (cmd-batch.c's four-way table), or the most
 * weight its real tokens put on pads without the padding mask. */
static int q_batch(struct ex *x, const char *q, double *v)
{
	const struct pad_result *r = &x->s->batch;
	if (!r->n)
		return err_set(x->e, "expect: batch: `batch` has not run yet");
	int i;
	const char *col;
	if (arg_int(x, q, "the text", 1, r->n, &i) || arg(x, q, "a column", &col))
		return -1;
	const struct pad_text *p = &r->texts[i - 1];
	static const char *const cols[] = { "alone", "both", "pad", "attn", "neither", "padw", NULL };
	const double vals[] = { p->loss_alone, p->loss_masked, p->loss_pad_only, p->loss_unmasked,
				p->loss_neither, p->pad_unmasked };
	for (int c = 0; cols[c]; c++)
		if (!strcmp(cols[c], col)) {
			*v = note(x, vals[c], "batch %d %s", i, col);
			return 0;
		}
	return err_set(x->e, "expect: batch: no column \"%.32s\" (alone, both, pad, attn, neither, "
		       "padw)", col);
}

/* patch HEAD, patch.rank HEAD, patch.resid L T: the last patch's shares. */
static int q_patch(struct ex *x, const char *q, double *v)
{
	const struct patch_result *p = &x->s->patch;
	if (!p->L)
		return err_set(x->e, "expect: %s: no patch has run yet", q);
	int idx, l, t;
	char label[64];
	if (!strcmp(q, "patch.resid")) {
		if (arg_int(x, q, "the layer", 0, p->L - 1, &l) ||
		    arg_int(x, q, "the position", 0, p->T - 1, &t))
			return -1;
		*v = note(x, p->resid[(size_t)l * p->T + t], "patch.resid %d %d", l, t);
		return 0;
	}
	if (head_arg(x, q, &idx, label, sizeof label))
		return -1;
	if (idx < 0 || !strcmp(q, "patch")) {
		*v = note(x, idx < 0 ? NAN : p->heads[idx], "%s %s", q, label);
		return 0;
	}
	int n = p->L * p->H, *order = xmalloc((size_t)n * sizeof *order), rank = 0;
	patch_rank(p, order);
	while (order[rank] != idx)
		rank++;
	free(order);
	*v = note(x, rank + 1, "%s %s", q, label);
	return 0;
}

/* why.score, why.lead, why.key PART, why.query PART, why.contrast PART,
 * why.term QPART KPART: the last `why`, as it printed them. */
static int why_part_arg(struct ex *x, const char *q, int *a)
{
	const char *w;
	if (arg(x, q, "a part (token, position, L.H, \"mlp L\", ...)", &w))
		return -1;
	*a = why_find_part(&x->s->why, w);
	if (*a < 0)
		return err_set(x->e, "expect: %s: the last why has no part %.40s", q, w);
	return 0;
}

static int q_why(struct ex *x, const char *q, double *v)
{
	const struct why_result *w = &x->s->why;
	if (!w->parts)
		return err_set(x->e, "expect: %s: no why has run yet", q);
	if (x->s->why_gen != x->s->run_gen)
		return err_set(x->e, "expect: %s: the last why split an earlier run (run why again)", q);
	int a, b;
	char name[32], kname[32];
	if (!strcmp(q, "why.score") || !strcmp(q, "why.lead")) {
		*v = note(x, q[4] == 's' ? w->score : w->score - w->mean_score, "%s %d.%d %d %d", q,
			  w->layer, w->head, w->qpos, w->kpos);
		return 0;
	}
	if (why_part_arg(x, q, &a))
		return -1;
	why_part_name(&w->parts[a], name, sizeof name);
	const struct why_part *p = &w->parts[a];
	if (!strcmp(q, "why.term")) {
		if (why_part_arg(x, q, &b))
			return -1;
		why_part_name(&w->parts[b], kname, sizeof kname);
		*v = note(x, w->terms[(size_t)a * w->n + b], "%s %s %s", q, name, kname);
		return 0;
	}
	*v = note(x, !strcmp(q, "why.key") ? p->key : !strcmp(q, "why.query") ? p->query
		     : p->key - p->key_mean, "%s %s", q, name);
	return 0;
}

/* qkov.copy: the last `qkov`'s copying score. */
static int q_qkov(struct ex *x, const char *q, double *v)
{
	if (isnan(x->s->qkov_copy))
		return err_set(x->e, "expect: %s: no qkov has run yet", q);
	*v = note(x, x->s->qkov_copy, "%s %d.%d", q, x->s->qkov_layer, x->s->qkov_head);
	return 0;
}

/* compose KIND A B, compose.rank KIND A B, compose.into KIND A B,
 * compose.base KIND: the last `circuits`, as it printed them.  A and B
 * are L.H (the weights alone: no text needed) or role names. */
static int compose_kind_arg(struct ex *x, const char *q, enum compose_kind *k)
{
	const char *w;
	if (arg(x, q, "a kind (Q, K or V)", &w))
		return -1;
	for (int i = 0; i < COMPOSE_KINDS; i++)
		if (!strcmp(w, compose_kind_name((enum compose_kind)i))) {
			*k = (enum compose_kind)i;
			return 0;
		}
	return err_set(x->e, "expect: %s: no kind \"%.16s\" (Q, K or V)", q, w);
}

static int compose_head_arg(struct ex *x, const char *q, int *idx, char *label, size_t size)
{
	const char *w = peek(x);
	if (!w || !(w[0] >= '0' && w[0] <= '9'))
		return head_arg(x, q, idx, label, size);
	int l, h;
	x->i++;
	if (session_need_model(x->s, x->e) || session_parse_head(x->s, w, &l, &h, x->e))
		return -1;
	*idx = l * x->s->model->cfg.n_head + h;
	snprintf(label, size, "%d.%d", l, h);
	return 0;
}

/* The index of pair A -> B in r, or -1 when A is not in an earlier layer. */
static int compose_pair_of(const struct compose_result *r, int a, int b)
{
	for (int i = 0; i < r->n; i++) {
		const struct compose_pair *p = &r->pairs[i];
		if (p->la * r->H + p->ha == a && p->lb * r->H + p->hb == b)
			return i;
	}
	return -1;
}

static int q_compose(struct ex *x, const char *q, double *v)
{
	const struct compose_result *r = &x->s->compose;
	if (!r->n)
		return err_set(x->e, "expect: %s: no circuits has run for this model yet", q);
	if (x->s->compose_kv != x->s->opt.kv_heads || x->s->compose_place != x->s->opt.placement)
		return err_set(x->e, "expect: %s: the last circuits was under other attn or norm "
			       "options (run circuits again)", q);
	enum compose_kind k = COMPOSE_Q;
	if (compose_kind_arg(x, q, &k))
		return -1;
	if (!strcmp(q, "compose.base")) {
		*v = note(x, r->baseline[k], "%s %s", q, compose_kind_name(k));
		return 0;
	}
	int a, b;
	char la[64], lb[64];
	if (compose_head_arg(x, q, &a, la, sizeof la) || compose_head_arg(x, q, &b, lb, sizeof lb))
		return -1;
	int i = a < 0 || b < 0 ? -1 : compose_pair_of(r, a, b);
	if (i < 0 && a >= 0 && b >= 0)
		return err_set(x->e, "expect: %s: %s is not in a layer before %s's", q, la, lb);
	if (i < 0 || !strcmp(q, "compose")) { /* a role no head has: not measured */
		*v = note(x, i < 0 ? NAN : r->pairs[i].score[k], "%s %s %s %s", q, compose_kind_name(k),
			  la, lb);
		return 0;
	}
	/* the place of pair i: 1 + the pairs scoring more (all of them, or
	 * those into the same B), ties counted by index as compose_rank does */
	bool into = !strcmp(q, "compose.into");
	double y = r->pairs[i].score[k];
	int place = 1;
	for (int j = 0; j < r->n; j++) {
		const struct compose_pair *p = &r->pairs[j];
		if (into && (p->lb != r->pairs[i].lb || p->hb != r->pairs[i].hb))
			continue;
		place += p->score[k] > y || (p->score[k] == y && j < i);
	}
	*v = note(x, place, "%s %s %s %s", q, compose_kind_name(k), la, lb);
	return 0;
}

/* ------------------------------------------------------------ the names */

static const struct quantity {
	const char *name, *args, *what;
	int (*get)(struct ex *x, const char *q, double *v);
} quantities[] = {
	{ "loss", "", "the current run's loss, nats (the summary line)", q_run },
	{ "ppl", "", "its perplexity, exp(loss)", q_run },
	{ "kl", "", "KL(baseline || run), nats, mean over positions", q_run },
	{ "top1", "", "top-1 agreement with the baseline, 0 to 1", q_run },
	{ "dloss", "", "loss minus the baseline's (the summary line's (+D))", q_run },
	{ "drift", "", "the output's drift from the baseline", q_run },
	{ "tokens", "", "tokens of the text", q_run },
	{ "unk", "", "those that are <unk> (characters the model does not know)", q_unk },
	{ "base.loss", "", "the baseline's loss (native options, same text)", q_run },
	{ "prev.loss", "", "the run before the current one (each new text, option", q_run },
	{ "", "", "  or model makes a new run); also prev.ppl, prev.kl,", NULL },
	{ "", "", "  prev.top1, prev.dloss, prev.drift, prev.tokens", NULL },
	{ "prev.ppl", "", NULL, q_run },
	{ "prev.kl", "", NULL, q_run },
	{ "prev.top1", "", NULL, q_run },
	{ "prev.dloss", "", NULL, q_run },
	{ "prev.drift", "", NULL, q_run },
	{ "prev.tokens", "", NULL, q_run },
	{ "d_model", "", "the model's width", q_model },
	{ "n_layer", "", "its layers", q_model },
	{ "n_head", "", "its query heads", q_model },
	{ "n_kv_head", "", "its native key/value heads", q_model },
	{ "params.attn", "", "one layer's attention parameters (Q, K, V, output; biases)", q_model },
	{ "head", "HEAD SCORE", "a column of heads (entropy max prev first self local dist", q_head },
	{ "", "", "  delim share sink key offset offw induct; an encoder's", NULL },
	{ "", "", "  cls sep cls.share sep.share spread), or layer", NULL },
	{ "role", "HEAD == ROLE", "the role heads gives HEAD (== or !=; offset: any K)", NULL },
	{ "heads.count", "ROLE", "how many heads have that role", q_heads_count },
	{ "heads.mean", "SCORE", "a score's mean over every head", q_heads_agg },
	{ "heads.min", "SCORE", "its smallest", q_heads_agg },
	{ "heads.max", "SCORE", "its largest", q_heads_agg },
	{ "att", "HEAD I J", "the weight query I puts on key J (show head, show token)", q_att },
	{ "p", "I TOKEN", "the probability top at I gives TOKEN (written as top labels it)", q_prob },
	{ "p.rank", "I TOKEN", "its place among every token (1: the most likely)", q_prob },
	{ "offw", "HEAD K", "HEAD's weight K tokens back (heads --offsets; K < 0: ahead)", q_offw },
	{ "even", "K", "attention spread evenly, K back (heads --offsets; K < 0: ahead)", q_even },
	{ "sweep", "HEAD dloss|kl|top1", "the last sweep, HEAD ablated alone", q_sweep },
	{ "sweep.layer", "L dloss|kl|top1", "the last sweep, layer L's heads together", q_sweep },
	{ "sweep.removable", "", "heads it found removable (under 1% loss increase)", q_sweep },
	{ "sweep.heads", "", "heads it ablated", q_sweep },
	{ "sweep.base", "", "its unablated loss", q_sweep },
	{ "compare", "ROW COLUMN", "the last compare variants: ROW a variant's name", q_compare },
	{ "", "", "  (its [trained] or (mha) optional), COLUMN loss ppl kl top1 drift", NULL },
	{ "lab", "ROW COLUMN", "the last lab table: COLUMN a header, ROW its first", q_lab },
	{ "", "", "  cells joined by blanks (\"4 layernorm post\")", NULL },
	{ "batch", "I COLUMN", "the last batch, text I: loss alone, or with both masks", q_batch },
	{ "", "", "  (both), the padding mask alone (pad), the attention mask alone", NULL },
	{ "", "", "  (attn), neither; padw its weight on pads without the padding mask", NULL },
	{ "patch", "HEAD", "the share HEAD restored in the last patch", q_patch },
	{ "patch.rank", "HEAD", "HEAD's place in its ranking (1: restores most)", q_patch },
	{ "patch.resid", "L T", "the share restored by the stream after block L at T", q_patch },
	{ "why.score", "", "the last why's score (query I on key J)", q_why },
	{ "why.lead", "", "its lead over the mean score of the keys I sees", q_why },
	{ "why.key", "PART", "a part's key side (token position L.H \"mlp L\" ...)", q_why },
	{ "why.query", "PART", "a part's query side", q_why },
	{ "why.contrast", "PART", "a part's key side minus its mean over the keys", q_why },
	{ "why.term", "QPART KPART", "one (query part, key part) term", q_why },
	{ "qkov.copy", "", "the last qkov's OV copying score", q_qkov },
	{ "compose", "KIND A B", "the last circuits: the KIND (Q, K or V) composition of", q_compose },
	{ "", "", "  earlier head A into later head B", NULL },
	{ "compose.rank", "KIND A B", "its place among every pair of that kind (1: strongest)", q_compose },
	{ "compose.into", "KIND A B", "A's place among the heads writing into B (1: strongest)", q_compose },
	{ "compose.base", "KIND", "what random matrices of those shapes score", q_compose },
	{ NULL, NULL, NULL, NULL },
};

/* The quantity word w names, or NULL with "did you mean". */
static const struct quantity *quantity_find(struct ex *x, const char *w)
{
	for (const struct quantity *q = quantities; q->name; q++)
		if (q->name[0] && !strcmp(q->name, w))
			return q;
	char near[256] = "";
	size_t k = 0;
	int limit = strlen(w) <= 3 ? 1 : 2;
	for (const struct quantity *q = quantities; q->name && k < sizeof near; q++)
		if (q->name[0] && edit_distance(w, q->name) <= limit)
			k += (size_t)snprintf(near + k, sizeof near - k, "%s%s", k ? ", " : "", q->name);
	if (k)
		err_set(x->e, "expect: unknown quantity %.40s (did you mean: %s?)", w, near);
	else
		err_set(x->e, "expect: unknown quantity %.40s (help expect lists them)", w);
	return NULL;
}

/* ------------------------------------------------------------ expressions */

static int sum(struct ex *x, double *v);

static int factor(struct ex *x, double *v)
{
	const char *w = next(x);
	if (!w)
		return err_set(x->e, "expect: the expression ends where a number or quantity should be");
	if (!strcmp(w, "(")) {
		if (sum(x, v))
			return -1;
		return accept(x, ")") ? 0 : err_set(x->e, "expect: a ( without its )");
	}
	if (!strcmp(w, "-")) {
		if (factor(x, v))
			return -1;
		*v = -*v;
		return 0;
	}
	char *end;
	double d = strtod(w, &end);
	if (end != w && !*end) {
		*v = d;
		return 0;
	}
	const struct quantity *q = quantity_find(x, w);
	if (!q)
		return -1;
	if (!q->get)
		return err_set(x->e, "expect: %s is a test of its own (role HEAD == ROLE), not a number", w);
	return q->get(x, q->name, v);
}

static int term(struct ex *x, double *v)
{
	if (factor(x, v))
		return -1;
	for (;;) {
		bool mul = accept(x, "*");
		if (!mul && !accept(x, "/"))
			return 0;
		double r;
		if (factor(x, &r))
			return -1;
		*v = mul ? *v * r : *v / r;
	}
}

static int sum(struct ex *x, double *v)
{
	if (term(x, v))
		return -1;
	for (;;) {
		bool plus = accept(x, "+");
		if (!plus && !accept(x, "-"))
			return 0;
		double r;
		if (term(x, &r))
			return -1;
		*v = plus ? *v + r : *v - r;
	}
}

/* One test; *holds is false when a side is NAN (not measured). */
static int test(struct ex *x, bool *holds)
{
	if (accept(x, "role"))
		return role_test(x, holds);
	double a, b, tol = 0;
	static const char *const ops[] = { "<", "<=", ">", ">=", "==", "!=", "~=", NULL };
	if (sum(x, &a))
		return -1;
	const char *op = next(x);
	int k = 0;
	while (op && ops[k] && strcmp(ops[k], op))
		k++;
	if (!op || !ops[k])
		return err_set(x->e, "expect: %s%.16s%s where a comparison (< <= > >= == != ~=) should be",
			       op ? "\"" : "the expression ends", op ? op : "", op ? "\"" : "");
	if (sum(x, &b))
		return -1;
	if (k == 6 && (!accept(x, "+-") || sum(x, &tol)))
		return err_set(x->e, "expect: ~= needs a tolerance: A ~= B +- TOL");
	bool r[] = { a < b, a <= b, a > b, a >= b, a == b, a != b, fabs(a - b) <= tol };
	*holds = !isnan(a) && !isnan(b) && r[k];
	return 0;
}

/* The whole claim: every test is evaluated (so that every value is noted). */
static int claim(struct ex *x, bool *holds)
{
	*holds = true;
	do {
		bool h = false;
		if (test(x, &h))
			return -1;
		*holds = *holds && h;
	} while (accept(x, "and"));
	if (peek(x))
		return err_set(x->e, "expect: \"%.32s\" after a complete test (join tests with and)", peek(x));
	return 0;
}

/* ------------------------------------------------------------ the command */

/* expect with no arguments: the quantities, from the table. */
static void list(FILE *f)
{
	fprintf(f, "expect EXPR \"SENTENCE\" reads these (help expect: the grammar);\n"
		   "HEAD is L.H or a role name (the strongest head of that role):\n");
	for (const struct quantity *q = quantities; q->name; q++) {
		char left[64];
		snprintf(left, sizeof left, "%s%s%s", q->name, q->args[0] ? " " : "", q->args);
		if (q->what) /* NULL: named in the line above */
			fprintf(f, "  %-27s %s\n", left, q->what);
	}
}

static int expect_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (argc == 1) {
		list(s->out);
		return 0;
	}
	if (argc == 2)
		return err_set(e, "usage: expect EXPR \"SENTENCE\" (expect alone lists the quantities)");
	struct ex x = { .s = s, .w = argv + 1, .n = argc - 2, .e = e };
	/* in Chinese, the zh twin of this line (script.h); the claim is the same */
	const char *sentence = s->narration ? s->narration : argv[argc - 1];
	bool holds;
	if (claim(&x, &holds))
		return -1;
	if (holds) {
		fprintf(s->out, "✓ %s\n", sentence);
		return 0;
	}
	char expr[512] = "";
	size_t n = 0;
	for (int i = 1; i < argc - 1 && n < sizeof expr; i++)
		n += (size_t)snprintf(expr + n, sizeof expr - n, "%s%s", i > 1 ? " " : "", argv[i]);
	fprintf(s->out, "✗ %s\n  measured: %s\n  expected: %s\n", sentence, x.seen, expr);
	return err_set(e, "expectation not met: %.160s (measured: %.300s)", sentence, x.seen);
}

const struct cmd_entry cmd_expect_entry = {
	.name = "expect",
	.usage = "EXPR \"SENTENCE\"",
	.help = "a claim about the current run, checked: prints ✓ SENTENCE, or ✗ with the numbers",
	.long_help =
		"EXPR is a claim in terms the program measures; SENTENCE (the last word, quoted)\n"
		"says it in words.  When EXPR holds, expect prints \"✓ SENTENCE\"; else\n"
		"\"✗ SENTENCE\" with the value of every quantity EXPR read, and fails: a\n"
		"--batch run stops there with FILE:LINE and exit status 1, so a demo cannot\n"
		"keep a sentence its numbers contradict.  Grammar (words separated by blanks):\n"
		"  claim  := test { and test }\n"
		"  test   := sum OP sum            OP: < <= > >= == != ; or sum ~= sum +- TOL\n"
		"          | role HEAD == ROLE     (or !=)\n"
		"  sum    := term { + term | - term }     term := factor { * factor | / factor }\n"
		"  factor := NUMBER | QUANTITY ARGS... | ( sum ) | - factor\n"
		"  HEAD   := L.H | a role name (the strongest head of that role, as show head ROLE)\n"
		"Quantities read what the session holds, as the commands printed it: the\n"
		"current run (loss ppl kl top1 dloss drift tokens base.loss), the run before\n"
		"it (prev.loss ...), the model (d_model n_layer n_head n_kv_head params.attn),\n"
		"heads' scores (head HEAD SCORE, role, heads.count/mean/min/max), attention\n"
		"(att HEAD I J, offw HEAD K, even K), and the last sweep, compare variants,\n"
		"lab, patch, why, qkov and circuits (compose KIND A B, compose.rank,\n"
		"compose.into, compose.base).  `expect` alone lists every quantity with its\n"
		"arguments.\n"
		"A quantity a head of a role does not exist for is not measured (-): the\n"
		"test fails.  An unknown name or a missing result is an error.\n"
		"In a command file, a line `zh TEXT` right after an expect line is its\n"
		"sentence in Chinese: with attnscope --lang zh expect checks the same EXPR\n"
		"and prints TEXT.\n"
		"Example: expect head induction induct >= 0.3 and dloss > 0 \"...\"",
	.min_args = 0,
	.max_args = -1,
	.exec = expect_exec,
};
