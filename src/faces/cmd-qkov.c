/*
 * cmd-qkov.c — qkov L.H: one head's OV circuit (its copying score from the
 * eigenvalues of W_U W_OV W_E, computed in D x D) and, with a text, its
 * QK circuit on that text split by token and position (qkov.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "qkov.h"
#include "render.h"

extern const struct cmd_entry cmd_qkov_entry;

static void print_ov(struct render_buf *b, const struct qkov_ov *ov, int l, int h)
{
	int pos = 0, D = ov->D;
	for (int i = 0; i < D; i++)
		pos += ov->re[i] > 0;
	render_buf_printf(b, "OV circuit of %d.%d: W_U W_OV W_E (norm gains folded, biases and "
			     "per-token norm scales left out), its %d nonzero eigenvalues from the "
			     "%d x %d matrix W_V W_E W_U W_O\n",
			  l, h, D, D, D);
	render_buf_printf(b, "copying score (sum of positive real parts / sum of |eigenvalue|): "
			     "%.3f; %d of %d eigenvalues have a positive real part\n",
			  ov->copy, pos, D);
}

static void print_qk(struct render_buf *b, const struct qkov_qk *qk, int l, int h, int T)
{
	render_buf_printf(b, "\nQK circuit of %d.%d on the text (%d tokens, %d visible pairs): each "
			     "score split by what the query and the key are made of\n",
			  l, h, T, qk->pairs);
	render_buf_printf(b, "(norms frozen at each position's scale; rest = earlier heads, MLPs, "
			     "biases and norm shifts%s)\n",
			  qk->has_pos ? "" : "; RoPE: no position class, it turns every term");
	render_buf_printf(b, "%-10s %-10s %10s %10s\n", "query", "key", "mean", "spread");
	for (int a = 0; a < QK_CLASSES; a++)
		for (int k = 0; k < QK_CLASSES; k++) {
			if (!qk->has_pos && (a == QK_POS || k == QK_POS))
				continue;
			render_buf_printf(b, "%-10s %-10s %+10.4f %10.4f\n", qk_class_name(a),
					  qk_class_name(k), render_shown(qk->mean[a][k], 4), qk->spread[a][k]);
		}
	render_buf_printf(b, "%-21s %+10.4f %10.4f\n", "the whole score", render_shown(qk->mean_score, 4),
			  qk->spread_score);
	if (qk->softcap > 0) /* Gemma 2: the softmax reads the capped score */
		render_buf_printf(b, "%-21s %+10.4f\n%-21s %+10.4f %10.4f   (%g tanh(score / %g), what "
				     "the softmax reads)\n", "the cap's change",
				  render_shown(qk->mean_capped - qk->mean_score, 4), "the capped score",
				  render_shown(qk->mean_capped, 4), qk->spread_capped, qk->softcap,
				  qk->softcap);
	render_buf_printf(b, "spread: the standard deviation over a query's keys, averaged over "
			     "queries (what moves the pattern)\n");
}

static int qkov_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_qkov_entry, argc, argv, &a, e) != 0)
		return -1;
	if (session_need_model(s, e))
		return -1;
	int l, h;
	if (session_parse_head(s, a.pos[0], &l, &h, e))
		return -1;
	struct qkov_ov ov;
	if (qkov_ov_run(s->model, &s->opt, l, h, &ov, e) != 0)
		return -1;
	struct qkov_qk qk;
	bool text = session_ready(s);
	if (text && qkov_qk_run(s->model, &s->opt, s->tokens, s->n_tokens, l, h, &qk, e) != 0) {
		qkov_ov_free(&ov);
		return -1;
	}
	struct render_buf b;
	render_buf_init(&b);
	print_ov(&b, &ov, l, h);
	if (text)
		print_qk(&b, &qk, l, h, s->n_tokens);
	else
		render_buf_printf(&b, "(no text: set one with text to see the QK circuit on it)\n");
	fwrite(b.data, 1, b.len, s->out);
	render_buf_free(&b);
	s->qkov_copy = ov.copy;
	s->qkov_layer = l;
	s->qkov_head = h;
	qkov_ov_free(&ov);
	return 0;
}

const struct cmd_entry cmd_qkov_entry = {
	.name = "qkov",
	.usage = "L.H",
	.complete = COMPLETE_HEAD,
	.help = "one head's OV copying score and its QK circuit's token and position parts",
	.long_help =
		"The OV circuit: the copying score of W_U W_OV W_E, the sum of the positive\n"
		"real parts of its eigenvalues over the sum of their absolute values (1: the\n"
		"head copies the token it attends to), computed from the D x D matrix\n"
		"W_V W_E W_U W_O (the nonzero eigenvalues of AB are those of BA), with the\n"
		"layer's input-norm gain (pre-norm) and the final norm's gain folded in.\n"
		"The QK circuit on the current text: each visible score split into token x\n"
		"token, token x position, position x position ... and the rest (earlier\n"
		"heads and MLPs, biases), with norms frozen at each position's scale; their\n"
		"mean, and their spread over a query's keys (what changes the pattern).\n"
		"Soft-capped scores (Gemma 2): the classes split the score before the cap;\n"
		"the cap's change and the capped score the softmax reads follow.",
	.min_args = 1,
	.max_args = 1,
	.exec = qkov_exec,
};
