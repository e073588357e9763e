/*
 * cmd-generate.c — generate N: continue the current text with the step
 * decoder (decode.h: the text prefilled in one pass) under the current run
 * options, choosing each token
 * with the sampler (sampler.h), printing them as they come.  The text then
 * becomes the continued one and runs once, so the whole generation is one
 * measurement, not one per token.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "decode.h"
#include "sampler.h"
#include "tokenizer.h"
#include "utf8.h"

#define GENERATE_SEED 1337u

extern const struct cmd_entry cmd_generate_entry;

/* "generate 7/20: …the tail of the generated text" on standard error. */
static void show_progress(const struct model *m, const int *ids, int made, int n)
{
	int from = made > 24 ? made - 24 : 0;
	char *tail = tok_decode(m->tok, ids + from, made - from);
	size_t len = strlen(tail);
	char shown[4 * 64 + 1];
	utf8_printable(tail, len, shown, sizeof shown);
	fprintf(stderr, "\rgenerate %d/%d: %s%s", made, n, from ? "..." : "", shown);
	fflush(stderr);
	free(tail);
}

static int generate_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	struct model *m = s->model;
	struct cmd_args a;
	if (cmd_args_parse(&cmd_generate_entry, argc, argv, &a, e) != 0)
		return -1;
	int n;
	if (cmd_parse_int(a.pos[0], 1, m->cfg.context, "the number of tokens", &n, e))
		return -1;
	double temp = cmd_num(&cmd_generate_entry, &a, "--temperature", 0.8);
	int top_k = (int)cmd_num(&cmd_generate_entry, &a, "--top-k", 40);
	int seed = (int)cmd_num(&cmd_generate_entry, &a, "--seed", GENERATE_SEED);
	int room = m->cfg.context - s->n_tokens;
	if (room <= 0)
		return err_set(e, "the text already fills the context of %d tokens", m->cfg.context);
	if (n > room)
		n = room;

	struct decoder *d = decoder_new(m, &s->opt, s->n_tokens + n, e);
	if (!d)
		return -1;
	struct sampler sp;
	sampler_init(&sp, m->cfg.vocab_size, (float)temp, top_k, (uint64_t)seed);
	int *out = xmalloc((size_t)n * sizeof *out), made = 0, rc = 0;
	rc = decoder_prefill(d, m, s->tokens, s->n_tokens, e); /* one pass, not n steps */
	int unk = m->tok ? m->tok->unk_id : -1;
	/* where the text is not seen growing (the visualizer captures the
	 * output), the progress line shows it */
	bool live = !cmd_out_tty(s) && cmd_progress_shown();
	while (rc == 0 && made < n && !(s->cancel && *s->cancel)) {
		int t = sampler_sample(&sp, d->logits, unk);
		out[made++] = t;
		char piece[64];
		int len = tok_piece(m->tok, t, piece, sizeof piece);
		if (len > 0 && len < (int)sizeof piece)
			fwrite(piece, 1, (size_t)len, s->out);
		fflush(s->out);
		if (live)
			show_progress(m, out, made, n);
		if (made < n)
			rc = decoder_step(d, m, t, e);
	}
	if (live)
		cmd_progress("generate", 1, 1); /* clear it */
	fputc('\n', s->out);
	/* the cache as held, beside what kv computes for the same positions */
	char held[32], want[32];
	int positions = kv_positions(&s->opt, s->n_tokens + n);
	format_bytes((double)decoder_cache_bytes(d), held, sizeof held);
	format_bytes(kv_cache_bytes(m->cfg.n_layer, d->G, positions, cfg_d_head(&m->cfg), 4), want,
		     sizeof want);
	if (rc == 0 && made > 0) {
		/* the continued text: what was typed, then the generated pieces */
		char *gen = tok_decode(m->tok, out, made);
		size_t a = strlen(s->text), b = strlen(gen);
		char *text = xmalloc(a + b + 1);
		memcpy(text, s->text, a);
		memcpy(text + a, gen, b + 1);
		rc = session_set_text(s, text, e);
		if (rc == 0 && !s->quiet) {
			char line[256];
			session_summary(s, line, sizeof line);
			fprintf(s->out, "generated %d token%s (temperature %g, top-k %d, seed %d); "
				"KV cache %s for %d positions of %d K/V heads (kv: %s)\n%s\n",
				made, made == 1 ? "" : "s", temp, top_k, seed, held, positions, d->G,
				want, line);
		}
		free(text);
		free(gen);
	}
	free(out);
	sampler_free(&sp);
	decoder_free(d);
	return rc;
}

static const struct cmd_opt generate_opts[] = {
	{ "--temperature", CMD_OPT_REAL, "T", 0, 100, "the temperature" },
	{ "--top-k", CMD_OPT_INT, "K", 0, 1 << 30, "top-k" },
	{ "--seed", CMD_OPT_INT, "S", 0, 2147483647, "the seed" },
	{ NULL },
};

const struct cmd_entry cmd_generate_entry = {
	.name = "generate",
	.flags = CMD_STREAMS,
	.usage = "N",
	.opts = generate_opts,
	.help = "continue the text by N tokens with the current options, then run it",
	.long_help =
		"Fills a key/value cache from the text in one pass, then continues it one token\n"
		"at a time (the same numbers as a full pass), under the current options: a GQA\n"
		"conversion or an ablated head generates differently.  The last line gives the\n"
		"cache's bytes as held beside kv's arithmetic (under mask window N it keeps\n"
		"N + 1 positions).  Each token is drawn from the softmax of\n"
		"logits / T among the K most likely (<unk> never): T 0.8, K 40 and seed 1337\n"
		"unless given; --temperature 0 takes the most likely token.  The text then\n"
		"becomes the continued one and runs once: one measurement, not one per token.\n"
		"Stops at the context; Ctrl-C stops early and keeps what was made.  At the\n"
		"prompt the tokens print as they come; in the visualizer the status line shows\n"
		"the text growing, then the grid the result.",
	.min_args = 1,
	.max_args = 1,
	.exec = generate_exec,
};
