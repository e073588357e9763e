/*
 * cmd-pitfall.c — `pitfall NAME | off`: runs one of the tutorial's common
 * mistakes (model.h, enum pitfall) as a run option, compared with the
 * native baseline like every other option; `reset` undoes it too.
 */
#include <string.h>

#include "cmd.h"

/* "no-transpose, mask-one-head, eps0": every name but off. */
static void pitfall_list(char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = PITFALL_NONE + 1; i < N_PITFALLS && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
				      pitfall_name((enum pitfall)i));
}

static int pitfall_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	if (session_need_model(s, e))
		return -1;
	struct run_options o = s->opt;
	if (pitfall_parse(argv[1], &o.pitfall) != 0) {
		char list[96];
		pitfall_list(list, sizeof list);
		return err_set(e, "unknown pitfall '%s' (pitfalls: %s; or off)", argv[1], list);
	}
	return cmd_apply_options(s, &o, e);
}

static const char *const pitfall_words[] = { "no-transpose", "mask-one-head", "eps0", "off",
					     NULL };
const struct cmd_entry cmd_pitfall_entry = {
	.name = "pitfall",
	.usage = "no-transpose | mask-one-head | eps0 | off",
	.help = "run one of the tutorial's common multi-head attention mistakes",
	.long_help =
		"no-transpose   Q, K, V reshaped (T, H*D) -> (H, T, D) with a plain view, no\n"
		"               transpose, and the heads' outputs put back the same way.\n"
		"  symptom: no error, shapes are right, but the loss is bad and the heads\n"
		"  learn nothing sensible. cause: \"head\" h at \"position\" t is the slice\n"
		"  (h*T + t) % H of token (h*T + t) / H. fix: view (T, H, D), then\n"
		"  transpose to (H, T, D), and transpose back before the reshape.\n"
		"  attnscope: on a long line of Hamlet the shipped shakespeare's loss rises\n"
		"  by more than a nat and its top-1 agrees with the baseline's at under half\n"
		"  the positions; `heads` labels every head broad, with weight on the\n"
		"  diagonal (neighbouring rows are slices of the same token).\n"
		"mask-one-head  the causal mask on head 0 only (a mask whose shape does not\n"
		"               broadcast over heads); heads 1.. see every key.\n"
		"  symptom: training loss suspiciously low, generation poor. cause: the\n"
		"  unmasked heads read the next token. fix: give the mask shape (1, 1, T, T)\n"
		"  so that it broadcasts over batch and heads.\n"
		"  attnscope: the shipped model never learnt to read ahead, so the loss\n"
		"  rises on it (KL well above 0); the heatmaps of heads 1.. fill above the\n"
		"  diagonal, head 0 stays causal.\n"
		"eps0           every LayerNorm/RMSNorm with epsilon 0.\n"
		"  symptom: NaN loss on some inputs. cause: a row of variance 0 divides\n"
		"  0 by 0. fix: keep eps (1e-5) inside the square root.\n"
		"  attnscope: on ordinary text no row is constant and nothing changes\n"
		"  visibly; when a NaN appears the summary says where it first did (layer,\n"
		"  position, which norm) and the loss and KL say NaN.\n"
		"pitfall off (or reset) runs the model correctly again.",
	.complete = COMPLETE_WORDS,
	.words = pitfall_words,
	.min_args = 1,
	.max_args = 1,
	.exec = pitfall_exec,
};
