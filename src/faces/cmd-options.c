/*
 * cmd-options.c — commands that change how the model runs: attn, norm,
 * mask, scale, ablate, restore, reset.  Each re-runs the forward pass and
 * prints the one-line summary.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

int cmd_apply_options(struct session *s, const struct run_options *o, struct err *e)
{
	if (session_set_options(s, o, e) != 0)
		return -1;
	if (!s->quiet && session_ready(s)) {
		char line[256];
		session_summary(s, line, sizeof line);
		fprintf(s->out, "%s\n", line);
	}
	return 0;
}

static int attn_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	struct run_options o = s->opt;
	int H = s->model->cfg.n_head;
	if (!strcmp(argv[1], "mha") && argc == 2) {
		o.kv_heads = H;
	} else if (!strcmp(argv[1], "mqa") && argc == 2) {
		o.kv_heads = 1;
	} else if (!strcmp(argv[1], "gqa") && argc == 3) {
		if (cmd_parse_int(argv[2], 1, H, "the number of key/value heads", &o.kv_heads, e))
			return -1;
		if (H % o.kv_heads)
			return err_set(e, "gqa %d: the number of key/value heads must divide the %d query heads",
				       o.kv_heads, H);
	} else {
		return err_set(e, "usage: attn mha | attn gqa N | attn mqa");
	}
	return cmd_apply_options(s, &o, e);
}

static const char *const attn_words[] = { "mha", "gqa", "mqa", NULL };
const struct cmd_entry cmd_attn_entry = {
	.name = "attn",
	.usage = "mha | gqa N | mqa",
	.help = "share key/value heads: MHA, GQA with N groups, or MQA",
	.long_help = "Runs the model with N key/value heads. Going down from the native count, the\n"
		     "K and V projections of the heads in each group are mean-pooled; going up,\n"
		     "heads are replicated (exactly the native outputs). Query head h reads\n"
		     "key/value head h / (n_head / N).",
	.complete = COMPLETE_WORDS,
	.words = attn_words,
	.min_args = 1,
	.max_args = 2,
	.exec = attn_exec,
};

static int norm_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (session_need_model(s, e))
		return -1;
	struct run_options o = s->opt;
	if (norm_place_parse(argv[1], &o.placement) != 0)
		return err_set(e, "usage: norm pre | norm post");
	return cmd_apply_options(s, &o, e);
}

static const char *const norm_words[] = { "pre", "post", NULL };
const struct cmd_entry cmd_norm_entry = {
	.name = "norm",
	.usage = "pre | post",
	.help = "place the norms before (pre) or after (post) each sub-block",
	.long_help = "pre:  x = x + attn(norm1(x)); x = x + mlp(norm2(x))\n"
		     "post: x = norm1(x + attn(x)); x = norm2(x + mlp(x))\n"
		     "The final norm is applied before the output layer in both.",
	.complete = COMPLETE_WORDS,
	.words = norm_words,
	.min_args = 1,
	.max_args = 1,
	.exec = norm_exec,
};

/* After `mask after-softmax`: what the pitfall did to the rows, over every
 * layer, head and query of the current text. */
static void print_row_sums(struct session *s)
{
	struct row_sums rs;
	attention_row_sums(s->run, &rs);
	fprintf(s->out, "rows of attention now sum to %.3f on average, %.3f at least (head %d.%d, "
		"query %d); only the last row still sums to 1: the softmax normalised over "
		"later tokens too, then their weights were dropped\n",
		rs.mean, rs.min, rs.min_layer, rs.min_head, rs.min_query);
}

static int mask_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	struct run_options o = s->opt;
	if (!strcmp(argv[1], "causal") && argc == 2) {
		o.mask = MASK_CAUSAL;
	} else if (!strcmp(argv[1], "none") && argc == 2) {
		o.mask = MASK_NONE;
	} else if (!strcmp(argv[1], "after-softmax") && argc == 2) {
		o.mask = MASK_AFTER_SOFTMAX;
	} else if (!strcmp(argv[1], "window") && argc == 3) {
		o.mask = MASK_WINDOW;
		if (cmd_parse_int(argv[2], 0, CFG_MAX_CONTEXT, "the window", &o.window, e))
			return -1;
	} else {
		return err_set(e, "usage: mask causal | none | window N | after-softmax");
	}
	if (cmd_apply_options(s, &o, e) != 0)
		return -1;
	if (o.mask == MASK_AFTER_SOFTMAX && !s->quiet && session_ready(s) && s->run->t > 1)
		print_row_sums(s);
	return 0;
}

static const char *const mask_words[] = { "causal", "none", "window", "after-softmax", NULL };
const struct cmd_entry cmd_mask_entry = {
	.name = "mask",
	.usage = "causal | none | window N | after-softmax",
	.help = "attention mask: causal, none (every token sees every token), a causal window of N back, "
		"or the pitfall of masking after the softmax; a local layer (GPT-Neo) keeps its own "
		"window under each, narrowed by a shorter window N",
	.complete = COMPLETE_WORDS,
	.words = mask_words,
	.min_args = 1,
	.max_args = 2,
	.exec = mask_exec,
};

/* "scale": the run's setting and the native one; "scale on" on a model
 * trained without the scaling (GPT-Neo) says so after the summary. */
static int scale_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	bool native = s->model->cfg.scale;
	const char *untrained = "this model was not trained with 1/sqrt(d_head): its native "
				"scale is off, so scale on changes what every head computes";
	if (argc < 2) {
		fprintf(s->out, "scale %s (native %s)%s%s\n", s->opt.scale ? "on" : "off",
			native ? "on" : "off", native ? "" : "; ", native ? "" : untrained);
		return 0;
	}
	struct run_options o = s->opt;
	if (!strcmp(argv[1], "on"))
		o.scale = true;
	else if (!strcmp(argv[1], "off"))
		o.scale = false;
	else
		return err_set(e, "usage: scale [on | off]");
	if (cmd_apply_options(s, &o, e) != 0)
		return -1;
	if (o.scale && !native && !s->quiet)
		fprintf(s->out, "note: %s\n", untrained);
	return 0;
}

static const char *const scale_words[] = { "on", "off", NULL };
const struct cmd_entry cmd_scale_entry = {
	.name = "scale",
	.usage = "[on | off]",
	.help = "multiply attention scores by 1/sqrt(d_head) (on) or not (off); alone, the current "
		"and native setting (off for GPT-Neo, which was not trained with it)",
	.complete = COMPLETE_WORDS,
	.words = scale_words,
	.min_args = 0,
	.max_args = 1,
	.exec = scale_exec,
};

/* Sets or clears the ablation bit of every head named in argv[1..]. */
static int set_heads(struct session *s, int argc, char **argv, bool on, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	struct run_options o = s->opt;
	int H = s->model->cfg.n_head;
	if (!on && argc == 2 && !strcmp(argv[1], "all")) {
		memset(o.ablated, 0, sizeof o.ablated);
		return cmd_apply_options(s, &o, e);
	}
	if (s->model->cfg.n_layer * H > ABLATE_WORDS * 64)
		return err_set(e, "ablation supports up to %d heads", ABLATE_WORDS * 64);
	char named[512] = "";
	size_t at = 0;
	for (int i = 1; i < argc; i++) {
		int l, h;
		enum head_role role;
		if (heads_role_parse(argv[i], &role) == 0) {
			/* every head with that role on the current text */
			const struct head_scores *sc = session_head_scores(s, e);
			if (!sc)
				return -1;
			int n = 0;
			for (int k = 0; k < s->model->cfg.n_layer * H; k++)
				if (sc[k].role == role) {
					opt_set_ablated(&o, k, on);
					n++;
					if (at < sizeof named)
						at += (size_t)snprintf(named + at, sizeof named - at, " %d.%d",
								       k / H, k % H);
				}
			if (n == 0)
				return err_set(e, "no head is labelled %s on this text (heads shows every "
					       "head's role)", heads_role_name(role));
			continue;
		}
		if (session_parse_head(s, argv[i], &l, &h, e) != 0)
			return -1;
		opt_set_ablated(&o, l * H + h, on);
	}
	if (named[0] && !s->quiet)
		fprintf(s->out, "%s heads by role:%s\n", on ? "ablating" : "restoring", named);
	return cmd_apply_options(s, &o, e);
}

static int ablate_exec(struct session *s, int argc, char **argv, struct err *e)
{
	return set_heads(s, argc, argv, true, e);
}

const struct cmd_entry cmd_ablate_entry = {
	.name = "ablate",
	.usage = "L.H...|ROLE",
	.help = "zero the output of heads (before the output projection)",
	.long_help = "ablate L.H...  zero these heads' outputs before the output projection\n"
		     "ablate ROLE    every head `heads` gives that role on this text (previous-token,\n"
		     "               offset, sink, delimiter, self, local, induction)\n"
		     "The attention of an ablated head is still computed and shown; only what it\n"
		     "adds to the residual stream is gone.",
	.complete = COMPLETE_HEAD,
	.min_args = 1,
	.max_args = -1,
	.exec = ablate_exec,
};

static int restore_exec(struct session *s, int argc, char **argv, struct err *e)
{
	return set_heads(s, argc, argv, false, e);
}

static const char *const restore_words[] = { "all", NULL };
const struct cmd_entry cmd_restore_entry = {
	.name = "restore",
	.usage = "L.H...|ROLE | all",
	.help = "undo the ablation of heads",
	.complete = COMPLETE_HEAD,
	.words = restore_words,
	.min_args = 1,
	.max_args = -1,
	.exec = restore_exec,
};

static int reset_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	(void)argv;
	if (session_need_model(s, e))
		return -1;
	return cmd_apply_options(s, &s->native, e);
}

const struct cmd_entry cmd_reset_entry = {
	.name = "reset",
	.usage = "",
	.help = "all options back to the model's native ones",
	.min_args = 0,
	.max_args = 0,
	.exec = reset_exec,
};
