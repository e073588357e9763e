/*
 * cmd-why.c — why L.H I J [--top K]: the pre-softmax score of query I on
 * key J in head L.H split into (query part x key part) terms (why.h), the
 * largest first, the rest summed, the sum checked against the pass's own
 * score (and, for soft-capped scores, the cap's change and the capped
 * score); then each part's share on the key side and on the query side.
 * The session keeps the result for expect (why.key, why.query, why.term).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "render.h"
#include "why.h"

extern const struct cmd_entry cmd_why_entry;

/* The sandwich norms' frozen scales of layers 0 .. L-1, five a line
 * (none before layer 0). */
static void print_post(struct render_buf *b, const struct why_result *w)
{
	if (!w->post_rstd || w->layer == 0)
		return;
	render_buf_printf(b, "sandwich norms: each earlier attention output (its heads and bias) "
			     "frozen at its 1/rms,\nlayer: at %d / at %d (each MLP's part is its "
			     "normed output as the pass made it)\n", w->qpos, w->kpos);
	for (int l = 0; l < w->layer; l++)
		render_buf_printf(b, "%s%d: %.4f / %.4f%s", l % 5 ? "  " : "", l, w->post_rstd[2 * l],
				  w->post_rstd[2 * l + 1], l % 5 == 4 || l == w->layer - 1 ? "\n" : "");
}

/* The header: what is split, under which convention. */
static void print_header(struct render_buf *b, struct session *s, const struct why_result *w,
			 char **lab)
{
	const struct model_config *c = &s->model->cfg;
	char opts[256], scale[32];
	session_variant(s, opts, sizeof opts);
	bool rms = c->norm == NORM_RMS;
	render_buf_printf(b, "why %d.%d: query %d '%s' on key %d '%s' (K/V head %d; options %s)\n",
			  w->layer, w->head, w->qpos, lab[w->qpos], w->kpos, lab[w->kpos], w->kv_head,
			  opts[0] ? opts : "native");
	if (s->opt.placement == PLACE_PRE && isnan(w->rstd_q))
		render_buf_printf(b, "no norm before the sub-blocks (OLMo-2's): layer %d reads the stream "
				     "as it is\n", w->layer);
	else if (s->opt.placement == PLACE_PRE)
		render_buf_printf(b, "layer %d's input norm frozen at each position's scale: %s %.4f "
				     "at %d,\n%.4f at %d (centring and gain linear)\n",
				  w->layer, rms ? "1/rms" : "1/std", w->rstd_q, w->qpos, w->rstd_k,
				  w->kpos);
	else
		render_buf_printf(b, "post-norm: layer %d reads its input as it is; every earlier norm "
				     "is\nfrozen at the position's scale, its shift a part\n",
				  w->layer);
	print_post(b, w);
	if (!isnan(w->qn_rstd_q))
		render_buf_printf(b, "q/k norm frozen at %s scale: 1/rms %.4f (query at %d), %.4f (key "
				     "at %d)\n", c->qk_norm_whole ? "the whole row's (all query heads; "
				     "all key heads)" : "each head's", w->qn_rstd_q, w->qpos,
				  w->qn_rstd_k, w->kpos);
	if (!s->opt.scale)
		snprintf(scale, sizeof scale, "1 (scale off)");
	else if (c->attn_scale_dim) /* Gemma's query_pre_attn_scalar */
		snprintf(scale, sizeof scale, "1/sqrt(%d)", c->attn_scale_dim);
	else
		snprintf(scale, sizeof scale, "1/sqrt(D)");
	render_buf_printf(b, "score = %s x sum of (query part . key part)\n%s", scale,
			  c->pos == POS_ROPE ? "RoPE turns each part by its position: positions act "
					       "inside every term\n" : "");
	if (w->softcap > 0)
		render_buf_printf(b, "the softmax reads %g tanh(score / %g): the terms split the score "
				     "before the cap,\nthe cap's change is a line of its own\n",
				  w->softcap, w->softcap);
}

/* The top k terms, the rest, the sum check. */
static void print_terms(struct render_buf *b, const struct why_result *w, int k)
{
	size_t nn = (size_t)w->n * w->n;
	int *order = xmalloc(nn * sizeof *order);
	why_rank(w->terms, (int)nn, order);
	render_buf_printf(b, "\n%-14s %-14s %10s\n", "query part", "key part", "term");
	double rest = 0;
	for (size_t i = 0; i < nn; i++) {
		if ((int)i >= k) {
			rest += w->terms[order[i]];
			continue;
		}
		char qn[32], kn[32];
		why_part_name(&w->parts[order[i] / w->n], qn, sizeof qn);
		why_part_name(&w->parts[order[i] % w->n], kn, sizeof kn);
		render_buf_printf(b, "%-14s %-14s %+10.4f\n", qn, kn, render_shown(w->terms[order[i]], 4));
	}
	if ((int)nn > k)
		render_buf_printf(b, "%-29s %+10.4f\n", "(the other terms)", render_shown(rest, 4));
	char sum[48];
	snprintf(sum, sizeof sum, "sum of %zu terms", nn);
	double left = render_shown(w->left_out, 4);
	render_buf_printf(b, "%-29s %+10.4f\n%-29s %+10.4f   left out %.4f\n", sum, render_shown(w->sum, 4),
			  "the pass's score", render_shown(w->score, 4), left);
	if (w->softcap > 0)
		render_buf_printf(b, "%-29s %+10.4f\n%-29s %+10.4f   (what the softmax read)\n",
				  "the soft-cap's change", render_shown(w->capped - w->score, 4),
				  "the capped score", render_shown(w->capped, 4));
	free(order);
}

/* One side's marginals, the largest first; the key side with each part's
 * contrast (its key side minus its mean over the visible keys). */
static void print_side(struct render_buf *b, const struct why_result *w, bool key, int k)
{
	double *v = xmalloc((size_t)w->n * sizeof *v);
	int *order = xmalloc((size_t)w->n * sizeof *order);
	for (int a = 0; a < w->n; a++)
		v[a] = key ? w->parts[a].key : w->parts[a].query;
	why_rank(v, w->n, order);
	if (key)
		render_buf_printf(b, "\nkey side (the whole query with each key part; contrast: minus "
				     "its mean over\nthe keys query %d sees, summing to key %d's lead "
				     "%+.4f over the mean %+.4f):\n%-14s %10s %8s %10s\n",
				  w->qpos, w->kpos, render_shown(w->score - w->mean_score, 4),
				  render_shown(w->mean_score, 4), "part",
				  "score", "share", "contrast");
	else
		render_buf_printf(b, "\nquery side (each query part with the whole key):\n%-14s %10s %8s\n",
				  "part", "score", "share");
	for (int i = 0; i < w->n && i < k; i++) {
		const struct why_part *p = &w->parts[order[i]];
		char name[32];
		why_part_name(p, name, sizeof name);
		render_buf_printf(b, "%-14s %+10.4f %7.1f%%", name, render_shown(v[order[i]], 4),
				  render_shown(100.0 * v[order[i]] / w->score, 1));
		if (key)
			render_buf_printf(b, " %+10.4f", render_shown(p->key - p->key_mean, 4));
		render_buf_printf(b, "\n");
	}
	free(order);
	free(v);
}

static int why_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_why_entry, argc, argv, &a, e) != 0)
		return -1;
	if (session_need_run(s, e))
		return -1;
	int l, h, I, J, k = (int)cmd_num(&cmd_why_entry, &a, "--top", 10);
	if (session_parse_head(s, a.pos[0], &l, &h, e) ||
	    cmd_parse_int(a.pos[1], 0, s->n_tokens - 1, "the query position", &I, e) ||
	    cmd_parse_int(a.pos[2], 0, s->n_tokens - 1, "the key position", &J, e))
		return -1;
	struct why_result w;
	if (why_run(s->model, &s->opt, s->tokens, s->n_tokens, l, h, I, J, &w, e) != 0)
		return -1;
	char **lab = session_labels(s);
	struct render_buf b;
	render_buf_init(&b);
	print_header(&b, s, &w, lab);
	print_terms(&b, &w, k);
	print_side(&b, &w, true, k);
	print_side(&b, &w, false, k);
	fwrite(b.data, 1, b.len, s->out);
	render_buf_free(&b);
	render_labels_free(lab, s->n_tokens);
	why_free(&s->why);
	s->why = w;
	s->why_gen = s->run_gen;
	return 0;
}

static const struct cmd_opt why_opts[] = {
	{ "--top", CMD_OPT_INT, "K", 1, 100000, "K" },
	{ NULL },
};

const struct cmd_entry cmd_why_entry = {
	.name = "why",
	.usage = "L.H I J",
	.opts = why_opts,
	.complete = COMPLETE_HEAD,
	.help = "one head's score of query I on key J split into its parts",
	.long_help =
		"Splits the pre-softmax score of query position I on key position J in head\n"
		"L.H into (query part x key part) terms.  The parts are the components of the\n"
		"residual stream at layer L's input: the token and (learned) position\n"
		"embeddings, each earlier head through its output projection, each layer's\n"
		"attention bias (its own part), each earlier MLP (its bias included), the\n"
		"shifts of the norms on the way, and the query/key biases.  Norms are frozen\n"
		"as TransformerLens does: the per-position 1/std (after centring) or 1/rms is\n"
		"a constant, centring and gain are linear, so the terms sum to the score.\n"
		"Pre-norm: layer L's norm1 is frozen at I for the query and at J for the key.\n"
		"Post-norm: every earlier norm is frozen and its shift is a part; layer L\n"
		"reads its input unnormed.  RoPE has no position part: each part's query and\n"
		"key are turned by their positions, so position acts inside every term.  An\n"
		"ablated head's part is 0; GQA reads the shared K/V head.  Sandwich norms\n"
		"(Gemma 2/3, OLMo-2) are frozen the same way: the attention's output norm at\n"
		"each row's 1/rms of its heads' sum, so every head's part of a row shares it;\n"
		"a q/k norm at its head's 1/rms (OLMo-2's whole-width one at the 1/rms of all\n"
		"the query heads, or all the key heads, of the position).  Soft-capped scores\n"
		"(Gemma 2): the terms sum to the score before the cap, and the cap's change,\n"
		"cap tanh(score / cap) - score, is a line of its own, then the capped score\n"
		"the softmax read.  Then the key side (the whole query with each key part)\n"
		"and the query side.  The top K (10).",
	.min_args = 3,
	.max_args = 3,
	.exec = why_exec,
};
