/*
 * cmd-generate.c — generate N: continue the current text with the step
 * decoder (decode.h) under the current run options, choosing each token
 * with the sampler (sampler.h), printing them as they come.  The text then
 * becomes the continued one and runs once, so the whole generation is one
 * measurement, not one per token.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "decode.h"
#include "sampler.h"
#include "tokenizer.h"

#define GENERATE_SEED 1337u

static int parse_real(const char *arg, double lo, double hi, const char *what, double *out,
		      struct err *e)
{
	char *end;
	errno = 0;
	double x = strtod(arg, &end);
	if (end == arg || *end || errno == ERANGE || !isfinite(x) || x < lo || x > hi)
		return err_set(e, "%s: %s must be a number from %g to %g", arg, what, lo, hi);
	*out = x;
	return 0;
}

static int generate_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	struct model *m = s->model;
	int n, top_k = 40, seed = (int)GENERATE_SEED;
	double temp = 0.8;
	if (cmd_parse_int(argv[1], 1, m->cfg.context, "the number of tokens", &n, e))
		return -1;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			return err_set(e, "usage: generate N [--temperature T] [--top-k K] [--seed S]");
		if (!strcmp(a, "--temperature")) {
			if (parse_real(argv[++i], 0, 100, "the temperature", &temp, e))
				return -1;
		} else if (!strcmp(a, "--top-k")) {
			if (cmd_parse_int(argv[++i], 0, m->cfg.vocab_size, "top-k", &top_k, e))
				return -1;
		} else if (!strcmp(a, "--seed")) {
			if (cmd_parse_int(argv[++i], 0, 2147483647, "the seed", &seed, e))
				return -1;
		} else {
			return err_set(e, "usage: generate N [--temperature T] [--top-k K] [--seed S]");
		}
	}
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
	for (int i = 0; i < s->n_tokens && rc == 0; i++)
		rc = decoder_step(d, m, s->tokens[i], e);
	int unk = m->tok ? m->tok->unk_id : -1;
	while (rc == 0 && made < n && !(s->cancel && *s->cancel)) {
		int t = sampler_sample(&sp, d->logits, unk);
		out[made++] = t;
		char piece[64];
		int len = tok_piece(m->tok, t, piece, sizeof piece);
		if (len > 0 && len < (int)sizeof piece)
			fwrite(piece, 1, (size_t)len, s->out);
		fflush(s->out);
		if (made < n)
			rc = decoder_step(d, m, t, e);
	}
	fputc('\n', s->out);
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
			fprintf(s->out, "generated %d token%s (temperature %g, top-k %d, seed %d)\n%s\n",
				made, made == 1 ? "" : "s", temp, top_k, seed, line);
		}
		free(text);
		free(gen);
	}
	free(out);
	sampler_free(&sp);
	decoder_free(d);
	return rc;
}

static const char *const generate_words[] = { "--temperature", "--top-k", "--seed", NULL };
const struct cmd_entry cmd_generate_entry = {
	.name = "generate",
	.usage = "N [--temperature T] [--top-k K] [--seed S]",
	.help = "continue the text by N tokens with the current options, then run it",
	.long_help =
		"Continues the text one token at a time with a key/value cache (the same\n"
		"numbers as a full pass), under the current options: a GQA conversion or an\n"
		"ablated head generates differently.  Each token is drawn from the softmax of\n"
		"logits / T among the K most likely (<unk> never): T 0.8, K 40 and seed 1337\n"
		"unless given; --temperature 0 takes the most likely token.  The text then\n"
		"becomes the continued one and runs once: one measurement, not one per token.\n"
		"Stops at the context; Ctrl-C stops early and keeps what was made.",
	.complete = COMPLETE_WORDS,
	.words = generate_words,
	.min_args = 1,
	.max_args = 7,
	.exec = generate_exec,
};
