/*
 * cmd-circuits.c — circuits [--top K]: composition scores between heads
 * (compose.h), the K strongest pairs of each kind with the random
 * baseline beside them.  The session keeps the result for expect
 * (compose, compose.rank, compose.into, compose.base).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "compose.h"
#include "render.h"

extern const struct cmd_entry cmd_circuits_entry;

static const char *const kind_what[COMPOSE_KINDS] = {
	"B's queries read A's output",
	"B's keys read A's output",
	"B's values read A's output",
};

static int circuits_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_circuits_entry, argc, argv, &a, e) != 0)
		return -1;
	if (session_need_model(s, e))
		return -1;
	struct compose_result r;
	if (compose_run(s->model, &s->opt, &r, e) != 0)
		return -1;
	int k = (int)cmd_num(&cmd_circuits_entry, &a, "--top", 8);
	k = k < r.n ? k : r.n;
	struct render_buf b;
	render_buf_init(&b);
	render_buf_printf(&b, "composition scores from the weights (Elhage et al. 2021): %d layers x %d "
			      "heads, %d K/V heads, %s folded in\n",
			  r.L, r.H, r.G,
			  s->opt.placement == PLACE_PRE ? "each layer's input norm gain" : "no norm");
	render_buf_printf(&b, "random baseline (mean of %d standard normal pairs of these shapes): "
			      "Q %.3f  K %.3f  V %.3f\n",
			  COMPOSE_DRAWS, r.baseline[COMPOSE_Q], r.baseline[COMPOSE_K],
			  r.baseline[COMPOSE_V]);
	int *order = xmalloc((size_t)r.n * sizeof *order);
	for (int kind = 0; kind < COMPOSE_KINDS; kind++) {
		compose_rank(&r, kind, order);
		render_buf_printf(&b, "\n%s-composition (%s), the %d strongest of %d pairs:\n",
				  compose_kind_name(kind), kind_what[kind], k, r.n);
		render_buf_printf(&b, "%-5s %-5s %7s %10s\n", "A", "B", "score", "/baseline");
		for (int i = 0; i < k; i++) {
			const struct compose_pair *p = &r.pairs[order[i]];
			char ha[16], hb[16];
			snprintf(ha, sizeof ha, "%d.%d", p->la, p->ha);
			snprintf(hb, sizeof hb, "%d.%d", p->lb, p->hb);
			render_buf_printf(&b, "%-5s %-5s %7.3f %10.2f\n", ha, hb, p->score[kind],
					  p->score[kind] / r.baseline[kind]);
		}
	}
	free(order);
	fwrite(b.data, 1, b.len, s->out);
	render_buf_free(&b);
	compose_free(&s->compose); /* kept for expect (compose, compose.rank, ...) */
	s->compose = r;
	s->compose_kv = s->opt.kv_heads;
	s->compose_place = s->opt.placement;
	return 0;
}

static const struct cmd_opt circuits_opts[] = {
	{ "--top", CMD_OPT_INT, "K", 1, 100000, "K" },
	{ NULL },
};

const struct cmd_entry cmd_circuits_entry = {
	.name = "circuits",
	.usage = "",
	.opts = circuits_opts,
	.help = "composition scores: which later heads read what earlier heads write",
	.long_help =
		"For every pair of heads in different layers, earlier A and later B, the\n"
		"Q-, K- and V-composition of Elhage et al. 2021 from the weights alone:\n"
		"||M W_OV^A|| / (||M|| ||W_OV^A||), Frobenius norms, with M = W_QK^B^T\n"
		"(B's queries), W_QK^B (keys) or W_OV^B (values), W_QK = W_Q^T W_K and\n"
		"W_OV = W_O W_V, each layer's input norm gain (and LayerNorm's mean\n"
		"subtraction) folded into W_Q, W_K and W_V, each query head with its K/V\n"
		"group's weights under the current sharing.  The K (8) strongest pairs of\n"
		"each kind are listed beside what random matrices of the same shapes score.",
	.min_args = 0,
	.max_args = 0,
	.exec = circuits_exec,
};
