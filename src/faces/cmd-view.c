/*
 * cmd-view.c — `view`: enters the full-screen visualizer (tui.h) from the
 * REPL or a script run at a terminal; `q` comes back here and the prompt
 * or the script goes on.  `:quit` inside the visualizer ends the program
 * as `quit` would.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "tui.h"

static int view_exec(struct session *s, int argc, char **argv, struct err *e)
{
	int v = 0;
	if (argc == 2 && tui_view_parse(argv[1], &v) != 0) {
		char list[256] = "";
		int n = 0;
		for (; strcmp(tui_view_name(n), "?") != 0; n++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s, ", tui_view_name(n));
		return err_set(e, "%.32s: not a view (%sor 1-%d)", argv[1], list, n);
	}
	if (tui_active())
		return err_set(e, "view: the visualizer is already running");
	if (s->out)
		fflush(s->out);
	return tui_run(s, v, 0, e);
}

/* The views' names, from the visualizer's table. */
static void view_names(struct cmd_cands *out)
{
	for (int v = 0; strcmp(tui_view_name(v), "?") != 0; v++)
		cmd_cands_add(out, tui_view_name(v));
}

const struct cmd_entry cmd_view_entry = {
	.name = "view",
	.flags = CMD_STREAMS,
	.usage = "[VIEW]",
	.help = "the full-screen visualizer of every head (q returns here)",
	.long_help = "VIEW: a view's name or its number (Tab completes the names; `?` in the\n"
		     "visualizer lists them with their keys).  Keys: Tab or the numbers switch\n"
		     "views; arrows or hjkl move; Enter opens the selected head; g cycles MHA ->\n"
		     "GQA -> MQA; n norm pre/post; m mask causal/none/window; s scaling; a\n"
		     "ablates or restores the selected head, A restores all, r resets; e edits\n"
		     "the text; : runs any command; x exports the view; ? lists every key; q\n"
		     "returns. Needs a terminal; colour follows the terminal (none with\n"
		     "NO_COLOR).",
	.complete = COMPLETE_WORDS,
	.more_words = view_names,
	.min_args = 0,
	.max_args = 1,
	.exec = view_exec,
};
