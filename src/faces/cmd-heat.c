/*
 * cmd-heat.c — heat [weights | scores | norms | rollout]: what every
 * heatmap shows (heat.h), in `show`, exports and the visualizer.
 */
#include <string.h>

#include "cmd.h"

static int heat_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (argc == 1) {
		fprintf(s->out, "heatmaps show %s:\n", heat_kind_name(s->heat));
		for (int k = 0; k < HEAT_KINDS; k++)
			fprintf(s->out, "%s %-8s %s\n", k == (int)s->heat ? "*" : " ",
				heat_kind_name((enum heat_kind)k), heat_kind_about((enum heat_kind)k));
		return 0;
	}
	enum heat_kind k;
	if (heat_kind_parse(argv[1], &k) != 0)
		return err_set(e, "heat: \"%.40s\" is not one of weights, scores, norms, rollout", argv[1]);
	if (session_need_model(s, e) || session_set_heat(s, k, e) != 0)
		return -1;
	if (!s->quiet)
		fprintf(s->out, "heatmaps show %s: %s\n", heat_kind_name(k), heat_kind_about(k));
	return 0;
}

static const char *const heat_words[] = { "weights", "scores", "norms", "rollout", NULL };

const struct cmd_entry cmd_heat_entry = {
	.name = "heat",
	.usage = "[weights | scores | norms | rollout]",
	.help = "what the heatmaps show: weights, pre-softmax scores, value-weighted norms, or rollout",
	.long_help =
		"weights  the attention weights A_ij after the softmax (the default).\n"
		"scores   the scores before the softmax, q_i.k_j times 1/sqrt(d_head) when scaling\n"
		"         is on; drawn per row from its lowest (blank) to its highest (full);\n"
		"         keys the mask hides are marked apart (\u00b7, or / in ASCII), not as 0.\n"
		"         With `scale off` they show why the softmax saturates.\n"
		"norms    ||A_ij W_O v_j||: how much key j's value actually adds to query i's\n"
		"         output through the head (Kobayashi et al. 2020), each row as shares of\n"
		"         its sum; a large weight on a value of small norm does little.\n"
		"rollout  attention rollout (Abnar & Zuidema 2020): for each layer the mean of\n"
		"         its heads' weights plus the identity (the residual stream), halved and\n"
		"         rows renormalised, multiplied up from layer 0; every head of a layer\n"
		"         shows the same map: how much each input token reaches each position.\n"
		"Exports write the values as computed (CSV and JSON: raw scores and norms).",
	.complete = COMPLETE_WORDS,
	.words = heat_words,
	.min_args = 0,
	.max_args = 1,
	.exec = heat_exec,
};
