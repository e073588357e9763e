/*
 * cmd-generate.c — generate N: continue the current text with the step
 * decoder (decode.h: its cache filled from the text's pass, which the
 * session holds) under the current run options, choosing each token with
 * the sampler (sampler.h), printing them as they come (the status line,
 * where shown, redraws at most every PROGRESS_MS).  The text then becomes
 * the continued one and runs once, so the whole generation is one
 * measurement, not one per token: when it tokenizes back into the tokens
 * made, its run is the one the decoder kept as it stepped (decoder_keep),
 * else a pass of its own.  When that text tokenizes again past the
 * context (BPE need not give back the ids it decoded), it keeps the most
 * generated tokens that fit.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "decode.h"
#include "sampler.h"
#include "tokenizer.h"
#include "utf8.h"

#define GENERATE_SEED 1337u
#define PROGRESS_MS 40.0 /* the status line redraws at most this often */

extern const struct cmd_entry cmd_generate_entry;

/* Where the newest token looks: the selected head's weights over the
 * positions up to it, kept at that layer's heads site of each step (the
 * decoder's att holds that layer's then; decode.h). */
struct glance {
	const struct decoder *d;
	int layer, head;
	int n, first; /* keys, and the position of the first */
	float *w;     /* (cap) */
};

static void glance_hook(void *ctx, enum hook_site site, int layer, float *x, int B, int T,
			int pos0, int width)
{
	struct glance *g = ctx;
	(void)x, (void)B, (void)T, (void)width;
	if (site != HOOK_HEADS || layer != g->layer)
		return;
	int n = g->d->used + 1; /* the cached positions and the new one */
	memcpy(g->w, g->d->att + (size_t)g->head * n, (size_t)n * sizeof(float));
	g->n = n;
	g->first = pos0 - g->d->used;
}

/* The token at position pos: the text's, then the generated ones. */
static int token_at(const struct session *s, const int *made, int pos)
{
	return pos < s->n_tokens ? s->tokens[pos] : made[pos - s->n_tokens];
}

/* " [L.H->'a' 0.61]": the earlier token the newest one weighs most under
 * the selected head, into buf. */
static void glance_text(const struct session *s, const struct glance *g, const int *made,
			char *buf, size_t size)
{
	int top = 0;
	for (int j = 1; j < g->n; j++)
		top = g->w[j] > g->w[top] ? j : top;
	char lab[64];
	tok_label(s->model->tok, token_at(s, made, g->first + top), lab, sizeof lab);
	snprintf(buf, size, " [%d.%d->'%.12s' %.2f]", g->layer, g->head, lab, (double)g->w[top]);
}

/* "generate 7/20 [0.1->'a' 0.61]: …the tail of the generated text" on
 * standard error: where its newest token looked (glance, may be empty),
 * then the text, so that a narrow status line keeps the first. */
static void show_progress(const struct model *m, const int *ids, int made, int n, const char *glance)
{
	int from = made > 24 ? made - 24 : 0;
	char *tail = tok_decode(m->tok, ids + from, made - from);
	size_t len = strlen(tail);
	char shown[4 * 64 + 1];
	utf8_printable(tail, len, shown, sizeof shown);
	fprintf(stderr, "\rgenerate %d/%d%s: %s%s", made, n, glance, from ? "..." : "", shown);
	fflush(stderr);
	free(tail);
}

/* True when s[0..len) ends inside a UTF-8 character: a lead byte whose
 * continuation bytes have not all come (a byte-level token can end there). */
static bool ends_mid_char(const char *s, size_t len)
{
	size_t i = len;
	int cont = 0;
	while (i > 0 && cont < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--, cont++;
	if (i == 0)
		return false;
	unsigned char c = (unsigned char)s[i - 1];
	int need = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 0;
	return need > cont;
}

/* Whether text tokenizes back into the session's tokens and then out[0..k):
 * the ids the decoder stepped, so that its kept rows are text's pass. */
static bool tokenizes_back(const struct session *s, const char *text, const int *out, int k)
{
	int *ids = NULL, n = 0;
	struct err ignore;
	bool same = tok_encode(s->model->tok, text, strlen(text), 1, &ids, &n, &ignore) >= 0 &&
		    n == s->n_tokens + k &&
		    memcmp(ids, s->tokens, (size_t)s->n_tokens * sizeof *ids) == 0 &&
		    memcmp(ids + s->n_tokens, out, (size_t)k * sizeof *ids) == 0;
	free(ids);
	return same;
}

/* The run the decoder fills as it steps (decode.h, decoder_keep): the
 * session's pass of the continued text when that text tokenizes back into
 * the ids made, which then needs no pass of its own.  NULL when the
 * options make steps and a pass differ (mask none). */
static struct run *keep_rows(struct session *s, struct decoder *d, int T)
{
	struct err ignore;
	const struct run *from = s->run_valid ? s->run : NULL;
	if (decoder_can_keep(d, s->model, from, &ignore) != 0)
		return NULL;
	struct run *r = session_run_to_fill(s, T);
	if (r && decoder_keep(d, s->model, r, from, &ignore) != 0) { /* a broken invariant */
		if (r != s->run)
			run_free(r);
		session_update(s, &ignore);
		return NULL;
	}
	return r;
}

/* The continued text's pass from the kept rows: the last token made
 * stepped too (its attention row and the logits after it), then the run
 * is the pass over the prompt and out[0..k).  Into *r: the run, or NULL
 * when it cannot be (its rows are not a pass then; the text runs). */
static void finish_kept(struct session *s, struct decoder *d, const char *text, const int *out,
			int k, struct run **r)
{
	struct err ignore;
	if (!*r)
		return;
	int n = s->n_tokens + k;
	/* a generation stopped early (Ctrl-C) stepped its last token already */
	if (k > 0 && (d->n == n || d->n == n - 1) && tokenizes_back(s, text, out, k) &&
	    (d->n == n || decoder_step(d, s->model, out[k - 1], &ignore) == 0) &&
	    decoder_kept(d, d->ids, n, &ignore) == 0)
		return;
	decoder_keep_end(d);
	if (*r != s->run)
		run_free(*r);
	*r = NULL;
}

/* The typed text and then the first k generated tokens, decoded (a new
 * string), when it ends on a whole character; NULL otherwise.  *n: its
 * tokens when tokenized again, -1 + e when that fails. */
static char *continued(const struct session *s, const int *out, int k, int *n, struct err *e)
{
	size_t a = s->text ? strlen(s->text) : 0;
	char *gen = tok_decode(s->model->tok, out, k);
	size_t b = strlen(gen);
	*n = 0;
	if (ends_mid_char(gen, b)) {
		free(gen);
		return NULL;
	}
	char *text = xmalloc(a + b + 1);
	if (a)
		memcpy(text, s->text, a);
	memcpy(text + a, gen, b + 1);
	free(gen);
	int *ids = NULL;
	if (tok_encode(s->model->tok, text, a + b, 1, &ids, n, e) < 0)
		*n = -1;
	free(ids);
	return text;
}

/* The continued text with the most of the *kept generated tokens that
 * tokenizes within the context and ends on a whole character.  Decoding
 * pieces and tokenizing the text again need not give the same ids (BPE
 * merges across the pieces, a vocabulary may hold tokens its merges never
 * make), so a generation that filled the context can come back longer
 * (*over: the count with every token, else 0).  The longest prefix is
 * found by bisection (more tokens kept, more tokens again), then shortened
 * to a whole character.  A new string (owned by the caller; the typed text
 * alone when nothing fits), or NULL + e. */
static char *continuation(const struct session *s, const int *out, int *kept, int *over,
			  struct err *e)
{
	int ctx = s->model->cfg.context, n;
	char *text = continued(s, out, *kept, &n, e);
	*over = text && n > ctx ? n : 0;
	if (text && n >= 0 && n <= ctx)
		return text;
	free(text);
	if (n < 0)
		return NULL;
	/* lo fits (the typed text ran), *kept does not; a prefix that ends
	 * inside a character counts as fitting here, the loop below checks */
	int lo = 0, hi = *kept - 1;
	while (*over && lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		free(continued(s, out, mid, &n, e));
		if (n < 0)
			return NULL;
		if (n <= ctx)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (int k = *over ? lo : hi; k > 0; k--) {
		text = continued(s, out, k, &n, e);
		if (n < 0) {
			free(text);
			return NULL;
		}
		if (text && n <= ctx) {
			*kept = k;
			return text;
		}
		free(text);
	}
	*kept = 0;
	return xstrdup(s->text ? s->text : "");
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
	/* only ids the tokenizer can decode: the first decoder_ids of the row */
	sampler_init(&sp, decoder_ids(m), (float)temp, top_k, (uint64_t)seed);
	int *out = xmalloc((size_t)n * sizeof *out), made = 0, rc = 0;
	/* the cache from the text's pass, which the session holds (keys and
	 * values again from its block inputs), else from one pass, not n steps */
	struct err ignore;
	if (!s->run_valid || decoder_prefill_from(d, m, s->tokens, s->n_tokens, s->run, &ignore) != 0)
		rc = decoder_prefill(d, m, s->tokens, s->n_tokens, e);
	int unk = m->tok ? m->tok->unk_id : -1;
	struct run *keep = rc == 0 ? keep_rows(s, d, s->n_tokens + n) : NULL;
	/* where the text is not seen growing (the visualizer captures the
	 * output), the progress line shows it, and where each new token looked
	 * under the selected head */
	bool live = !cmd_out_tty(s) && cmd_progress_shown();
	double drawn = 0;
	struct glance g = { d, s->sel_layer, s->sel_head, 0, 0, NULL };
	struct run_hook hook = { glance_hook, &g };
	if (live) {
		g.w = xmalloc((size_t)d->slots * sizeof *g.w);
		d->hook = &hook; /* after the prefill, which would step with a hook */
	}
	while (rc == 0 && made < n && !(s->cancel && *s->cancel)) {
		int t = sampler_sample(&sp, d->logits, unk);
		out[made++] = t;
		char piece[64];
		int len = tok_piece(m->tok, t, piece, sizeof piece);
		if (len > 0 && len < (int)sizeof piece)
			fwrite(piece, 1, (size_t)len, s->out);
		fflush(s->out);
		g.n = 0;
		if (made < n)
			rc = decoder_step(d, m, t, e);
		if (live && (made == n || now_ms() - drawn >= PROGRESS_MS)) {
			drawn = now_ms(); /* a person reads ~25 lines a second, not 500 */
			char look[160] = "";
			if (g.n)
				glance_text(s, &g, out, look, sizeof look);
			show_progress(m, out, made, n, look);
		}
	}
	d->hook = NULL; /* the glance ends with the loop (a kept run's last step comes after) */
	free(g.w);
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
		int kept = made, over;
		char *text = continuation(s, out, &kept, &over, e);
		if (text && over)
			fprintf(stderr, "attnscope: warning: generate: the text keeps %d of the %d "
				"tokens made: tokenized again, all of it is %d tokens, past the "
				"context of %d\n", kept, made, over, m->cfg.context);
		else if (text && kept < made)
			fprintf(stderr, "attnscope: warning: generate: the text keeps %d of the %d "
				"tokens made: the last ends inside a UTF-8 character\n", kept, made);
		if (text)
			finish_kept(s, d, text, out, kept, &keep);
		int *ids = keep ? d->ids : NULL; /* the prompt's and the kept tokens */
		rc = text ? session_set_text_run(s, text, keep, ids, keep ? d->n : 0, e) : -1;
		keep = NULL; /* the session's */
		if (rc == 0 && !s->quiet) {
			char line[256];
			session_summary(s, line, sizeof line);
			fprintf(s->out, "generated %d token%s (temperature %g, top-k %d, seed %d); "
				"KV cache %s for %d positions of %d K/V heads (kv: %s)\n%s\n",
				made, made == 1 ? "" : "s", temp, top_k, seed, held, positions, d->G,
				want, line);
		}
		free(text);
	}
	if (keep) { /* not given to the session: its pass again, when it was that */
		struct err ignore;
		decoder_keep_end(d);
		if (keep != s->run)
			run_free(keep);
		else
			session_update(s, &ignore);
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
		"Fills a key/value cache from the text's pass, then continues it one token\n"
		"at a time (the same numbers as a full pass), under the current options: a GQA\n"
		"conversion or an ablated head generates differently.  The last line gives the\n"
		"cache's bytes as held beside kv's arithmetic (under mask window N it keeps\n"
		"N + 1 positions).  Each token is drawn from the softmax of\n"
		"logits / T among the K most likely (<unk> never): T 0.8, K 40 and seed 1337\n"
		"unless given; --temperature 0 takes the most likely token.  The text then\n"
		"becomes the continued one and runs once: one measurement, not one per token.\n"
		"When it tokenizes back into the tokens made, that run is the decoder's own\n"
		"rows, kept as it stepped (the same numbers as a pass up to float rounding;\n"
		"forward ms is then the text's pass and the steps); else a pass of its own\n"
		"(where that text tokenizes again into more tokens than the context, it keeps\n"
		"the most generated tokens that fit, and says so).\n"
		"Stops at the context; Ctrl-C stops early and keeps what was made.  At the\n"
		"prompt the tokens print as they come; in the visualizer the status line shows\n"
		"the text growing and, for each new token, the earlier one the selected head\n"
		"weighs most from it ([L.H->'a' 0.61]), then the grid the result.",
	.min_args = 1,
	.max_args = 1,
	.exec = generate_exec,
};
