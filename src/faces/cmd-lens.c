/*
 * cmd-lens.c — lens [--top K] [at I]: the logit lens (lens.h) at one
 * position, depth by depth, and the probability of the model's prediction
 * at every depth and position as a shaded table.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cmd.h"
#include "export.h"
#include "lens.h"
#include "render.h"
#include "tokenizer.h"

#define LENS_TOP_MAX 10
#define LENS_COLS 64 /* positions the table shows: the last ones */

extern const struct cmd_entry cmd_lens_entry;

static int lens_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_lens_entry, argc, argv, &a, e) != 0)
		return -1;
	if (session_need_run(s, e))
		return -1;
	int T = s->n_tokens, pos = T - 1, k = (int)cmd_num(&cmd_lens_entry, &a, "--top", 5);
	if (a.n_pos == 2 && !strcmp(a.pos[0], "at")) {
		if (cmd_parse_int(a.pos[1], 0, T - 1, "the position", &pos, e))
			return -1;
	} else if (a.n_pos != 0) {
		char u[256];
		cmd_usage(&cmd_lens_entry, u, sizeof u);
		return err_set(e, "%s", u);
	}
	struct model *m = s->model;
	int V = m->cfg.vocab_size;
	struct lens ln;
	lens_run(m, s->run, &ln);
	char **lab = session_labels(s);
	char want[64], got[64], opts[256];
	int fin = ln.final[pos];
	tok_label(m->tok, fin, want, sizeof want);
	session_variant(s, opts, sizeof opts);

	struct render_buf b;
	render_buf_init(&b);
	render_buf_printf(&b, "logit lens at position %d '%s' (%d tokens, options %s): the stream at "
			      "each depth through the final norm and the output layer\n",
			  pos, lab[pos], T, opts[0] ? opts : "native");
	render_buf_printf(&b, "the model's prediction: '%s' (p %.3f)\n", want,
			  (double)ln.p[(size_t)(ln.D - 1) * T + pos]);
	/* under options, the native run's lens beside: its own prediction's p
	 * and its most likely token at each depth */
	bool beside = s->base != s->run;
	struct lens nat = { 0 };
	if (beside) {
		lens_run(m, s->base, &nat);
		tok_label(m->tok, nat.final[pos], got, sizeof got);
		render_buf_printf(&b, "the native run's prediction: '%s' (p %.3f), its lens beside\n", got,
				  (double)nat.p[(size_t)(nat.D - 1) * T + pos]);
		render_buf_printf(&b, "%-11s %7s %15s  top %d\n", "depth", "p", "native p, top", k);
	} else {
		render_buf_printf(&b, "%-11s %7s  top %d\n", "depth", "p", k);
	}
	float *z = xmalloc((size_t)V * sizeof *z);
	for (int d = 0; d < ln.D; d++) {
		char name[32];
		lens_depth_name(d, name, sizeof name);
		render_buf_printf(&b, "%-11s %7.3f ", name, (double)ln.p[(size_t)d * T + pos]);
		if (beside) {
			tok_label(m->tok, nat.top[(size_t)d * T + pos], got, sizeof got);
			render_buf_printf(&b, "%8.3f ", (double)nat.p[(size_t)d * T + pos]);
			render_pad(&b, got, 6, RENDER_LEFT, true);
			render_buf_puts(&b, " ");
		}
		lens_logits(m, s->run, d, pos, z);
		int ids[LENS_TOP_MAX];
		double p[LENS_TOP_MAX];
		int n = logits_top(z, V, k, ids, p);
		for (int i = 0; i < n; i++) {
			tok_label(m->tok, ids[i], got, sizeof got);
			render_buf_printf(&b, " %s %.2f", got, p[i]);
		}
		render_buf_puts(&b, d == ln.D - 1 ? "   (the model's output)\n" : "\n");
	}
	free(z);

	/* every depth and position: how sure each depth already is of the
	 * model's prediction there */
	int first = T > LENS_COLS ? T - LENS_COLS : 0;
	render_buf_printf(&b, "\np(the model's prediction) by depth (rows) and position (columns%s):\n",
			  first ? ", the last 64" : "");
	export_lens_table(&ln, lab, first, &b);
	fwrite(b.data, 1, b.len, s->out);
	render_buf_free(&b);
	render_labels_free(lab, T);
	lens_free(&ln);
	if (beside)
		lens_free(&nat);
	return 0;
}

static const struct cmd_opt lens_opts[] = {
	{ "--top", CMD_OPT_INT, "K", 1, LENS_TOP_MAX, "K" },
	{ NULL },
};

const struct cmd_entry cmd_lens_entry = {
	.name = "lens",
	.flags = CMD_LOGITS,
	.usage = "[at I]",
	.opts = lens_opts,
	.help = "the logit lens: what each depth of the residual stream would predict",
	.long_help =
		"The residual stream after each block (and the embeddings) read through the\n"
		"final norm and the output layer, as if the model ended there: at position I\n"
		"(default: the last) the probability each depth gives the model's own\n"
		"prediction and its top K (5) tokens; then that probability at every depth\n"
		"and position, shaded as the heatmaps are.  The last depth is the model's\n"
		"output.  Under any option: a GQA conversion or an ablation shows its own lens,\n"
		"with the native run's beside it (the p of its own prediction and its top\n"
		"token at each depth), so a conversion's lens reads against the original.",
	.min_args = 0,
	.max_args = 2,
	.exec = lens_exec,
};
