/*
 * cmd-dla.c — dla [POS [TOKEN]] [--top K]: direct logit attribution
 * (dla.h) of the predicted token (or TOKEN, the text of one token) at
 * position POS (default: the last), a table of the parts sorted by the
 * size of their contribution, then the sum check (and for soft-capped
 * logits, the cap's change and the model's logit).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "dla.h"
#include "render.h"
#include "tokenizer.h"

extern const struct cmd_entry cmd_dla_entry;

/* The id of the one token whose text is arg ('␣' and '⏎' as the labels
 * show a space and a newline).  0, or -1 with e set. */
static int parse_token(const struct tokenizer *t, const char *arg, int *id, struct err *e)
{
	char text[256];
	size_t n = 0;
	for (const char *p = arg; *p && n < sizeof text - 1;) {
		if (!strncmp(p, "␣", strlen("␣"))) {
			text[n++] = ' ';
			p += strlen("␣");
		} else if (!strncmp(p, "⏎", strlen("⏎"))) {
			text[n++] = '\n';
			p += strlen("⏎");
		} else {
			text[n++] = *p++;
		}
	}
	text[n] = 0;
	int *ids = NULL, k = 0;
	struct err ignore;
	if (tok_encode(t, text, n, 0, &ids, &k, &ignore) != 0 || k != 1 ||
	    tok_unknown(t, text, n, 0, ids, k, NULL, NULL, 0, NULL) != 0) {
		free(ids);
		return err_set(e, "unknown token: %.64s is not one token of this model's vocabulary", arg);
	}
	*id = ids[0];
	free(ids);
	return 0;
}

/* The table: the top k parts by |contribution|, the rest summed, the sum
 * check. */
static void print_parts(struct render_buf *b, const struct dla_result *d, int k)
{
	int *order = xmalloc((size_t)d->n * sizeof *order);
	dla_rank(d, order);
	render_buf_printf(b, "%-17s %10s\n", "part", "logit");
	double rest = 0;
	for (int i = 0; i < d->n; i++) {
		const struct dla_part *p = &d->parts[order[i]];
		if (i >= k) {
			rest += p->logit;
			continue;
		}
		char name[32];
		dla_part_name(p, name, sizeof name);
		render_buf_printf(b, "%-17s %+10.4f\n", name, p->logit);
	}
	if (d->n > k)
		render_buf_printf(b, "%-17s %+10.4f\n", "(the other parts)", rest);
	char sum[32];
	snprintf(sum, sizeof sum, "sum of %d parts", d->n);
	/* float rounding (about 1e-6) prints as 0.0000 whatever its sign */
	double left = fabs(d->left_out) < 5e-5 ? 0.0 : d->left_out;
	render_buf_printf(b, "%-17s %+10.4f\n%-17s %+10.4f   left out %.4f (the frozen-norm split is "
			     "exact)\n",
			  sum, d->sum, d->softcap > 0 ? "logit before cap" : "the model's logit", d->logit,
			  left);
	if (d->softcap > 0)
		render_buf_printf(b, "%-17s %+10.4f   (%g tanh(logit / %g) - logit)\n%-17s %+10.4f\n",
				  "the cap's change", d->capped - d->logit, d->softcap, d->softcap,
				  "the model's logit", d->capped);
	free(order);
}

static int dla_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_dla_entry, argc, argv, &a, e) != 0)
		return -1;
	if (session_need_run(s, e))
		return -1;
	struct model *m = s->model;
	int T = s->n_tokens, pos = T - 1, token = -1, k = (int)cmd_num(&cmd_dla_entry, &a, "--top", 12);
	if (a.n_pos >= 1 && cmd_parse_int(a.pos[0], 0, T - 1, "the position", &pos, e))
		return -1;
	if (a.n_pos >= 2 && parse_token(m->tok, a.pos[1], &token, e))
		return -1;
	struct dla_result d;
	if (dla_run(m, &s->opt, s->tokens, T, pos, token, &d, e) != 0)
		return -1;
	char **lab = session_labels(s);
	char want[64], opts[256];
	tok_label(m->tok, d.token, want, sizeof want);
	session_variant(s, opts, sizeof opts);
	struct render_buf b;
	render_buf_init(&b);
	render_buf_printf(&b, "direct logit attribution of '%s' (%s) at position %d '%s' "
			      "(%d tokens, options %s)\n",
			  want, d.predicted ? "the prediction" : "named", pos, lab[pos], T,
			  opts[0] ? opts : "native");
	render_buf_printf(&b, "the final norm frozen at this position's scale (%s %.4f); each "
			      "part's direct share of the logit:\n",
			  m->cfg.norm == NORM_RMS ? "1/rms" : "1/std", d.rstd);
	for (int l = 0; d.post_rstd && l < d.n_layer; l++) /* sandwich norms */
		render_buf_printf(&b, "%s%d: %.4f%s", l == 0 ? "each layer's attention output normed "
				  "before it joins the stream (sandwich),\nfrozen at its 1/rms here: "
				  : l % 6 ? "  " : "", l, d.post_rstd[l],
				  l % 6 == 5 || l == d.n_layer - 1 ? "\n" : "");
	print_parts(&b, &d, k);
	fwrite(b.data, 1, b.len, s->out);
	render_buf_free(&b);
	render_labels_free(lab, T);
	dla_free(&d);
	return 0;
}

static const struct cmd_opt dla_opts[] = {
	{ "--top", CMD_OPT_INT, "K", 1, 100000, "K" },
	{ NULL },
};

const struct cmd_entry cmd_dla_entry = {
	.name = "dla",
	.flags = CMD_LOGITS,
	.usage = "[POS [TOKEN]]",
	.opts = dla_opts,
	.help = "direct logit attribution: each head's and MLP's share of one logit",
	.long_help =
		"Splits the logit of the predicted token (or TOKEN, the text of one token;\n"
		"'␣' for a space) at position POS (default: the last) into what each head,\n"
		"each MLP, the token and position embeddings and the biases write into the\n"
		"residual stream, read through the final norm with its scale frozen at that\n"
		"position's real one (1/std or 1/rms), which makes the split exact: the parts\n"
		"sum to the logit.  The top K (12) parts by size are listed, the rest summed.\n"
		"Sandwich norms (Gemma 2/3, OLMo-2) are frozen the same way: each layer's\n"
		"attention output at its 1/rms at POS, shared by every head's part; an MLP's\n"
		"part is its normed output (its bias inside).  Soft-capped logits (Gemma 2):\n"
		"the parts sum to the logit before the cap, and the cap's change, cap\n"
		"tanh(logit / cap) - logit, is a line of its own, then the model's logit.\n"
		"The current options hold (a GQA conversion, ablations, the mask); post-norm\n"
		"placement is refused, its stream being no sum of parts.",
	.min_args = 0,
	.max_args = 2,
	.exec = dla_exec,
};
