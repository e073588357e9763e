/*
 * cmd-batch.c — batch TEXT | TEXT [| TEXT...]: the padding lesson
 * (padding.h): the texts run as one right-padded batch with and without a
 * padding mask, each against its own run, under the current options.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "loader.h"
#include "padding.h"
#include "text-input.h"
#include "tokenizer.h"

#define BATCH_MAX 16

/* Splits line at " | " into at most BATCH_MAX unescaped texts.  Returns the
 * count, or -1 with a message. */
static int split_texts(const char *line, char **texts, struct err *e)
{
	int n = 0;
	const char *p = line;
	for (;;) {
		const char *bar = strstr(p, " | ");
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (n == BATCH_MAX) {
			for (int i = 0; i < n; i++)
				free(texts[i]);
			return err_set(e, "batch: at most %d texts", BATCH_MAX);
		}
		char *raw = xstrndup(p, len);
		texts[n++] = text_unescape(raw);
		free(raw);
		if (!bar)
			break;
		p = bar + 3;
	}
	return n;
}

static void print_result(FILE *f, const struct pad_result *r, const struct model *m,
			 const char *mask)
{
	char pad[32];
	tok_label(m->tok, r->pad_id, pad, sizeof pad);
	fprintf(f, "%d texts padded on the right to %d tokens with '%s' (id %d), mask %s\n", r->n,
		r->T, pad, r->pad_id, mask);
	fprintf(f, "                    loss                  max |attention - alone|  weight on pads\n"
		   "   # tokens    alone  masked unmasked        masked  unmasked    masked unmasked\n");
	double worst_with = 0, worst_without = 0, pad_with = 0, pad_without = 0;
	for (int i = 0; i < r->n; i++) {
		const struct pad_text *p = &r->texts[i];
		fprintf(f, "%4d %6d  %7.4f %7.4f %8.4f     %9.2g %9.2g   %7.2g %8.2g\n", i + 1, p->len,
			p->loss_alone, p->loss_masked, p->loss_unmasked, p->diff_masked,
			p->diff_unmasked, p->pad_masked, p->pad_unmasked);
		worst_with = fmax(worst_with, fmax(p->diff_masked, fabs(p->loss_masked - p->loss_alone)));
		worst_without = fmax(worst_without,
				     fmax(p->diff_unmasked, fabs(p->loss_unmasked - p->loss_alone)));
		pad_with = fmax(pad_with, p->pad_masked);
		pad_without = fmax(pad_without, p->pad_unmasked);
	}
	fprintf(f, "with the padding mask: pads get weight %g, and every text's attention and\n"
		   "  loss match its own run to %.1g\n", pad_with, worst_with);
	if (pad_without == 0)
		fprintf(f, "without it: pads get no weight either: under this mask no real token\n"
			   "  can see a later position, and the pads are all after the text\n");
	else
		fprintf(f, "without it: real tokens put up to %.2g of their attention on pads, and\n"
			   "  attention and loss move by up to %.2g\n", pad_without, worst_without);
}

/* The largest |loss - alone| over the texts of one combination (which:
 * 0 both, 1 the attention mask alone, 2 the padding mask alone, 3 neither). */
static double worst_loss(const struct pad_result *r, int which)
{
	double w = 0;
	for (int i = 0; i < r->n; i++) {
		const struct pad_text *p = &r->texts[i];
		double v = which == 0 ? p->loss_masked : which == 1 ? p->loss_unmasked
			 : which == 2 ? p->loss_pad_only : p->loss_neither;
		w = fmax(w, fabs(v - p->loss_alone));
	}
	return w;
}

/* The two masks combined (logical and) beside each left out. */
static void print_combined(FILE *f, const struct pad_result *r, const char *mask)
{
	if (!r->combined) {
		fprintf(f, "the attention mask is none: the padding mask is the only mask, so the\n"
			   "  masked batch above is the right one and the unmasked the wrong one\n");
		return;
	}
	char only[40];
	snprintf(only, sizeof only, "%s only", mask);
	int w = strlen(only) < 11 ? 11 : (int)strlen(only);
	fprintf(f, "the two masks combined (a key is seen when both let it: logical and), and\n"
		   "each left out; loss of each text\n");
	fprintf(f, "   # tokens    alone     both  pad only %*s  neither\n", w, only);
	for (int i = 0; i < r->n; i++) {
		const struct pad_text *p = &r->texts[i];
		fprintf(f, "%4d %6d  %7.4f  %7.4f  %8.4f %*.4f  %7.4f\n", i + 1, p->len, p->loss_alone,
			p->loss_masked, p->loss_pad_only, w, p->loss_unmasked, p->loss_neither);
	}
	fprintf(f, "both masks: every loss is its text's own to %.1g\n", worst_loss(r, 0));
	fprintf(f, "the padding mask alone (mask none): real tokens see the later ones; losses\n"
		   "  move by up to %.4f\n", worst_loss(r, 2));
	double a = worst_loss(r, 1);
	if (a < 1e-4)
		fprintf(f, "the %s mask alone: the same as both to %.1g: the pads, all after the\n"
			   "  text, are hidden by it already (padding on the right)\n", mask, a);
	else
		fprintf(f, "the %s mask alone: real tokens see pads; losses move by up to %.4f\n",
			mask, a);
	fprintf(f, "neither: losses move by up to %.4f\n", worst_loss(r, 3));
}

static int batch_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (session_need_model(s, e))
		return -1;
	struct model *m = s->model;
	char *texts[BATCH_MAX];
	int n = split_texts(argv[1], texts, e);
	if (n < 0)
		return -1;
	int *ids[BATCH_MAX] = { 0 }, lens[BATCH_MAX], rc = -1;
	if (n < 2) {
		err_set(e, "batch: give at least two texts separated by \" | \"");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int bad = 0;
		if (model_tokenize(m, texts[i], strlen(texts[i]), &ids[i], &lens[i], &bad, e) != 0) {
			err_prefix(e, "text %d", i + 1);
			goto out;
		}
		if (lens[i] == 0) {
			err_set(e, "text %d is empty", i + 1);
			goto out;
		}
	}
	struct pad_result r;
	if (pad_run(m, &s->opt, n, ids, lens, 0, &r, e) != 0)
		goto out;
	char mask[32];
	if (s->opt.mask == MASK_WINDOW)
		snprintf(mask, sizeof mask, "window %d", s->opt.window);
	else
		snprintf(mask, sizeof mask, "%s", mask_kind_name(s->opt.mask));
	print_result(s->out, &r, m, mask);
	print_combined(s->out, &r, mask);
	pad_result_free(&s->batch); /* kept for expect's batch quantity */
	s->batch = r;
	rc = 0;
out:
	for (int i = 0; i < n; i++) {
		free(texts[i]);
		free(ids[i]);
	}
	return rc;
}

const struct cmd_entry cmd_batch_entry = {
	.name = "batch",
	.usage = "TEXT | TEXT [| TEXT...]",
	.help = "the padding lesson: texts run as one padded batch, with and without a padding mask",
	.long_help =
		"The texts (separated by \" | \", escapes as in text) run as one batch, each\n"
		"padded on the right to the longest with token 0, twice: with a padding mask\n"
		"(no query attends to a pad) and without.  For each text: its loss alone and\n"
		"in both batches, the largest change of any attention weight between its real\n"
		"tokens against its own run, and the most weight a real token puts on pads.\n"
		"Under the causal mask the pads, all after the text, are never seen; try\n"
		"`mask none` to see what the padding mask is for.  Then the two masks\n"
		"combined as they should be (a key is seen when both the attention mask and\n"
		"the padding mask let it: logical and) beside each left out: the loss of\n"
		"each text with both, the padding mask alone (mask none), the attention mask\n"
		"alone, and neither.  Current options apply.",
	.flags = CMD_RAW | CMD_LOGITS,
	.min_args = 1,
	.max_args = 1,
	.exec = batch_exec,
};
