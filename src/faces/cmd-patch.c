/*
 * cmd-patch.c — patch TEXT...: activation patching (patch.h) from the
 * current text (clean) into TEXT (corrupted, the same number of tokens):
 * the share of the logit difference each head's output and each residual
 * row restores, as tables and a ranking.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "export.h"
#include "loader.h"
#include "patch.h"
#include "render.h"
#include "text-input.h"
#include "tokenizer.h"

#define PATCH_RANKED 8

#define PATCH_COLS 64 /* positions the residual table shows: the last ones */

/* The heads that restore most, largest first. */
static void print_ranking(FILE *f, const struct patch_result *r)
{
	int n = r->L * r->H, k = n < PATCH_RANKED ? n : PATCH_RANKED;
	int *order = xmalloc((size_t)n * sizeof *order);
	patch_rank(r, order);
	fprintf(f, "ranking:");
	for (int i = 0; i < k; i++)
		fprintf(f, "%s %d.%d %.3f", i ? "," : "", order[i] / r->H, order[i] % r->H,
			render_shown(r->heads[order[i]], 3));
	fputc('\n', f);
	free(order);
}

static int patch_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (session_need_run(s, e))
		return -1;
	struct model *m = s->model;
	char *text = text_unescape(argv[1]);
	int *ids = NULL, n = 0, bad = 0, rc = -1;
	if (model_tokenize(m, text, strlen(text), &ids, &n, &bad, e) != 0)
		goto out;
	if (n != s->n_tokens) {
		err_set(e, "the corrupted text is %d tokens and the clean one %d: patching needs the "
			   "same number", n, s->n_tokens);
		goto out;
	}
	struct patch_result r;
	bool tty = cmd_progress_shown();
	int prc = patch_run(m, &s->opt, s->tokens, ids, n, 0, s->cancel, tty ? cmd_progress : NULL,
			    "patch", &r, e);
	if (tty)
		cmd_progress("patch", 1, 1); /* clear the progress line */
	if (prc != 0)
		goto out;
	char ca[64], xa[64];
	tok_label(m->tok, r.clean_answer, ca, sizeof ca);
	tok_label(m->tok, r.corrupt_answer, xa, sizeof xa);
	FILE *f = s->out;
	fprintf(f, "activation patching, %d tokens: clean (the current text) answers '%s', "
		   "corrupted answers '%s'\n", n, ca, xa);
	fprintf(f, "metric: logit('%s') - logit('%s') at the last position: clean %.3f, corrupted "
		   "%.3f\nshare restored by putting one clean activation into the corrupted run "
		   "(0: none, 1: all):\n", ca, xa, r.ld_clean, r.ld_corrupt);
	char **lab = session_labels(s);
	struct render_buf b;
	render_buf_init(&b);
	export_patch_heads(&r, &b);
	fwrite(b.data, 1, b.len, f);
	print_ranking(f, &r);
	b.len = 0;
	export_patch_resid(&r, lab, n > PATCH_COLS ? n - PATCH_COLS : 0, &b);
	fwrite(b.data, 1, b.len, f);
	render_buf_free(&b);
	render_labels_free(lab, s->n_tokens);
	/* kept for the visualizer's patch view */
	patch_free(&s->patch);
	free(s->patch_text);
	s->patch = r;
	s->patch_gen = s->run_gen;
	s->patch_text = xstrdup(text);
	s->dirty |= DIRTY_RUN;
	rc = 0;
out:
	free(ids);
	free(text);
	return rc;
}

const struct cmd_entry cmd_patch_entry = {
	.name = "patch",
	.usage = "TEXT...",
	.help = "activation patching from the current text into TEXT: which heads and positions carry the answer",
	.long_help =
		"The current text is the clean run, TEXT (the rest of the line, escapes as in\n"
		"text) the corrupted one; both must be the same number of tokens and lead to\n"
		"different next tokens at the last position.  Metric: logit(clean answer) -\n"
		"logit(corrupted answer) there.  For each site, the corrupted text runs with\n"
		"that site's clean activations put back, and the share\n"
		"  (metric patched - metric corrupted) / (metric clean - metric corrupted)\n"
		"is printed: each head's output at every position (an L x H table and a\n"
		"ranking), and the residual stream after each block at one position at a\n"
		"time (shaded).  Under the current options: one corrupted pass, then per\n"
		"site the blocks from the patched one on (the earlier ones are the corrupted\n"
		"pass's) and the output layer on the last row.",
	.flags = CMD_RAW | CMD_LOGITS,
	.min_args = 1,
	.max_args = 1,
	.exec = patch_exec,
};
