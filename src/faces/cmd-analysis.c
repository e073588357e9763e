/*
 * cmd-analysis.c — what the heads do and which of them matter: heads
 * (scores and role labels), sweep (ablate every head and every layer) and
 * compare variants (every sharing scheme, norm placement and mask, plus the
 * natively trained variants of the shakespeare family, on one text).
 *
 * None of these change the session: extra forward passes run with private
 * options on runs of their own, so s->opt, s->run and s->base are exactly
 * as before (session_update afterwards is a no-op kept as a safety net).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "cmd.h"
#include "gz.h"
#include "store.h"
#include "heads.h"
#include "loader.h"
#include "tokenizer.h"

#define CORPUS_TOKENS 256   /* default --tokens: min(context, 256) */
#define CORPUS_MAX_BYTES ((size_t)256 << 20) /* a --corpus file is tokenized whole */
#define TABLE_WIDTH 80      /* sweep tables are split into chunks of heads this wide */

/* ---------------------------------------------------------------- helpers */

/* "native" or the session_variant() text of o. */
static void describe_options(const struct session *s, const struct run_options *o, char *buf,
			     size_t size)
{
	session_variant_of(s, o, buf, size);
	if (!buf[0])
		snprintf(buf, size, "native");
}

/* The tokens sweep and compare run on: the session's text, or the last N
 * tokens of a file (no BOS; the end of a training file is its validation
 * split, so for a model trained on FILE the slice is held out), cut into
 * B windows of T = the model's context when N is longer. */
struct source {
	int *tokens;   /* (B, T); owned when `owned` */
	int B, T;
	bool owned;
	char desc[320];
};

static void source_free(struct source *src)
{
	if (src->owned)
		free(src->tokens);
	src->tokens = NULL;
}

static int source_get(struct session *s, const char *corpus, int ntok, struct source *src,
		      struct err *e)
{
	memset(src, 0, sizeof *src);
	if (!corpus) {
		if (ntok > 0)
			return err_set(e, "--tokens N goes with --corpus FILE (the current text is used whole)");
		if (session_need_run(s, e))
			return -1;
		src->tokens = s->tokens;
		src->B = 1;
		src->T = s->n_tokens;
		snprintf(src->desc, sizeof src->desc, "%d tokens of the current text", s->n_tokens);
		return 0;
	}
	if (session_need_model(s, e))
		return -1;
	const struct model *m = s->model;
	int S = m->cfg.context;
	if (ntok == 0)
		ntok = S < CORPUS_TOKENS ? S : CORPUS_TOKENS;
	if (!m->tok)
		return err_set(e, "model %s has no tokenizer", m->name ? m->name : "?");
	size_t len;
	/* tokenized whole: bounded, and refused by its size before it is read */
	char *text = gz_read_file(corpus, CORPUS_MAX_BYTES, "a --corpus file", &len, e);
	if (!text)
		return -1;
	int *ids = NULL, n = 0;
	int bad = tok_encode(m->tok, text, len, 0, &ids, &n, e);
	free(text);
	if (bad < 0) {
		err_prefix(e, "%s", corpus);
		return -1;
	}
	if (n < 2) {
		free(ids);
		return err_set(e, "%s: %d token%s; at least 2 are needed", corpus, n, n == 1 ? "" : "s");
	}
	/* the last min(N, n) tokens, in windows of at most the context */
	int want = n < ntok ? n : ntok, T = want < S ? want : S, B = want / T;
	src->tokens = xmalloc((size_t)B * T * sizeof *src->tokens);
	memcpy(src->tokens, ids + (n - (size_t)B * T), (size_t)B * T * sizeof *ids);
	free(ids);
	src->B = B;
	src->T = T;
	src->owned = true;
	if (B == 1)
		snprintf(src->desc, sizeof src->desc, "the last %d tokens of %.200s%s", T, corpus,
			 T < ntok && T == n ? " (the whole file)" : "");
	else
		snprintf(src->desc, sizeof src->desc, "the last %d tokens of %.200s, as %d windows of "
			 "%d (the context)%s", B * T, corpus, B, T,
			 want < ntok ? ", all the file has in whole windows"
			 : B * T < want ? ", --tokens rounded down to whole windows" : "");
	return 0;
}

/* The source options both sweep and compare declare. */
#define SOURCE_OPTS \
	{ "--corpus", CMD_OPT_WORD, "FILE", 0, 0, "the corpus file" }, \
	{ "--tokens", CMD_OPT_INT, "N", 2, 1e8, "the number of tokens" }

/* --corpus and --tokens from declared options a of command c. */
static void source_args(const struct cmd_entry *c, const struct cmd_args *a, const char **corpus,
			int *ntok)
{
	*corpus = cmd_str(c, a, "--corpus");
	*ntok = (int)cmd_num(c, a, "--tokens", 0);
}

/* A number in at most 7 characters: 4 decimals, fewer when large. */
static void fmt_num(double v, bool sign, char *buf, size_t size)
{
	double a = fabs(v);
	int dec = a < 10 ? 4 : a < 100 ? 3 : a < 1000 ? 2 : 0;
	if (isnan(v))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, sign ? "%+.*f" : "%.*f", dec, v);
}

/* ------------------------------------------------------------------ heads */

/* heads --offsets: each head's weight at 1 .. K tokens back, and uniform
 * attention's on the same text. */
static int heads_offsets(struct session *s, int only)
{
	const struct model_config *c = &s->model->cfg;
	int T = s->n_tokens, K = heads_offset_max(T) < HEADS_PROFILE_MAX ? heads_offset_max(T)
									 : HEADS_PROFILE_MAX;
	FILE *f = s->out;
	fprintf(f, "offset profile on %d tokens: mean weight on the token k back, over the rows "
		   "that have one\nhead   ", T);
	for (int k = 1; k <= K; k++)
		fprintf(f, " %5d", k);
	fputc('\n', f);
	for (int l = 0; l < c->n_layer; l++) {
		if (only >= 0 && l != only)
			continue;
		for (int h = 0; h < c->n_head; h++) {
			const float *a = run_att(s->run, l, 0, h);
			int best = 1;
			for (int k = 2; k <= K; k++)
				if (heads_offset_weight(a, T, k) > heads_offset_weight(a, T, best))
					best = k;
			char id[32];
			snprintf(id, sizeof id, "%d.%d", l, h);
			fprintf(f, "%-6s ", id);
			for (int k = 1; k <= K; k++)
				fprintf(f, " %5.3f", heads_offset_weight(a, T, k));
			fprintf(f, "   peak %d\n", best);
		}
	}
	struct heads_keys keys = { .mask = s->opt.mask, .window = s->opt.window };
	fprintf(f, "%-6s ", "even");
	for (int k = 1; k <= K; k++)
		fprintf(f, " %5.3f", heads_uniform_offset(T, &keys, k));
	fprintf(f, "\n(even: attention spread evenly over the visible keys)\n");
	return 0;
}

extern const struct cmd_entry cmd_heads_entry;

/* The role counts of the heads listed (layer only, or every one with
 * only < 0), then why each labelled head has its label. */
static void heads_roles(struct session *s, FILE *f, const struct head_scores *sc, int only,
			const struct head_scores *uni, const struct heads_keys *keys)
{
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, count[HEAD_N_ROLES] = { 0 };
	bool tty = cmd_out_tty(s);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++)
			if (only < 0 || l == only)
				count[sc[l * H + h].role]++;
	fprintf(f, "roles:");
	bool first = true;
	static const enum head_role order[] = { HEAD_INDUCTION, HEAD_PREV_TOKEN, HEAD_NEXT_TOKEN,
						HEAD_OFFSET, HEAD_CLS, HEAD_SEP, HEAD_SINK,
						HEAD_DELIM, HEAD_SELF, HEAD_LOCAL, HEAD_BROAD };
	for (size_t i = 0; i < sizeof order / sizeof *order; i++)
		if (count[order[i]]) {
			fprintf(f, "%s %d %s", first ? "" : ",", count[order[i]], heads_role_name(order[i]));
			first = false;
		}
	fputc('\n', f);
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			const struct head_scores *x = &sc[l * H + h];
			if ((only >= 0 && l != only) || x->role == HEAD_BROAD)
				continue;
			char why[256], lab[64];
			tok_label(s->model->tok, s->tokens[x->sink_key], lab, sizeof lab);
			heads_describe(x, uni, keys, s->n_tokens, lab, why, sizeof why);
			if (tty) { /* at a terminal, wrapped between words */
				char head[16];
				int n = snprintf(head, sizeof head, "  %d.%d ", l, h);
				fputs(head, f);
				cmd_wrap(f, why, n, n, cmd_out_width(s));
			} else {
				fprintf(f, "  %d.%d %s\n", l, h, why);
			}
		}
}

/* An encoder's scores on its special keys (Clark et al. 2019): each
 * head's weight on [CLS] and [SEP], its spread, and per layer the means,
 * beside what uniform attention gives. */
static void heads_special_table(struct session *s, FILE *f, const struct head_scores *sc,
				int only, const struct head_scores *uni)
{
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head;
	fprintf(f, "an encoder's special keys: weight on [CLS] and [SEP], spread = entropy / "
		   "uniform's\nhead      cls    sep  spread\n");
	for (int l = 0; l < L; l++) {
		if (only >= 0 && l != only)
			continue;
		double mc = 0, ms = 0, mp = 0;
		for (int h = 0; h < H; h++) {
			const struct head_scores *x = &sc[l * H + h];
			char id[32];
			snprintf(id, sizeof id, "%d.%d", l, h);
			fprintf(f, "%-6s %6.3f %6.3f %7.3f\n", id, x->cls, x->sep, x->spread);
			mc += x->cls / H;
			ms += x->sep / H;
			mp += x->spread / H;
		}
		fprintf(f, "layer %d %5.3f %6.3f %7.3f  (mean)\n", l, mc, ms, mp);
	}
	fprintf(f, "even   %6.3f %6.3f %7.3f  (attention spread evenly over the visible keys)\n",
		uni->cls, uni->sep, uni->spread);
}

static int heads_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	int L = c->n_layer, H = c->n_head, only = -1;
	struct cmd_args a;
	if (cmd_args_parse(&cmd_heads_entry, argc, argv, &a, e) != 0)
		return -1;
	if (cmd_has(&cmd_heads_entry, &a, "--layer") &&
	    cmd_parse_int(cmd_str(&cmd_heads_entry, &a, "--layer"), 0, L - 1, "the layer", &only, e))
		return -1;
	if (cmd_has(&cmd_heads_entry, &a, "--offsets"))
		return heads_offsets(s, only);
	const struct head_scores *sc = session_head_scores(s, e);
	if (!sc)
		return -1;
	/* the scores complete the head_stats rows of the run's measurement */
	if (s->store && store_recording(s->store) && store_last_measurement(s->store) > 0) {
		struct err se;
		if (store_head_scores(s->store, store_last_measurement(s->store), sc, L, H, &se) != 0)
			fprintf(stderr, "attnscope: warning: head scores not recorded: %s\n", se.msg);
	}
	int *seq = xmalloc((size_t)c->context * sizeof *seq), start, n;
	heads_induction_tokens(s->model, HEADS_SEED, seq, &start, &n);
	free(seq);
	size_t nt = (size_t)s->n_tokens;
	bool *delim = xmalloc(3 * nt * sizeof *delim), *cls = delim + nt, *sep = cls + nt;
	heads_delimiters(s->model->tok, s->tokens, s->n_tokens, delim);
	heads_specials(s->model->tok, s->tokens, s->n_tokens, cls, sep);
	struct heads_keys keys = { .delim = delim, .cls = cls, .sep = sep, .mask = s->opt.mask,
				   .window = s->opt.window };
	struct head_scores uni;
	heads_score_uniform(s->n_tokens, &keys, &uni);

	char opts[256];
	describe_options(s, &s->opt, opts, sizeof opts);
	FILE *f = s->out;
	bool tty = cmd_out_tty(s);
	fprintf(f, "heads on %d tokens; options: %s;%s", s->n_tokens, opts, tty ? "\n" : " ");
	if (n > 0)
		fprintf(f, "induction on %d random tokens repeated twice\n", n);
	else
		fprintf(f, "induction not measured (context or vocabulary too small)\n");
	/* at a terminal narrower than the full table, the main scores only
	 * (piped, the table stays whole for scripts) */
	bool compact = tty && cmd_out_width(s) < 113;
	if (compact)
		fprintf(f, "head   role            entropy    max   prev   sink  delim  offset  induct\n");
	else
		fprintf(f, "head   role            entropy    max   prev  first   self  local   dist  delim"
			   "   sink  key  offset  offw  induct\n");
	for (int l = 0; l < L; l++) {
		if (only >= 0 && l != only)
			continue;
		for (int h = 0; h < H; h++) {
			const struct head_scores *x = &sc[l * H + h];
			char id[32], ind[16], role[32];
			snprintf(id, sizeof id, "%d.%d", l, h);
			if (isnan(x->induction))
				snprintf(ind, sizeof ind, "-");
			else
				snprintf(ind, sizeof ind, "%.3f", x->induction);
			heads_role_text(x, role, sizeof role);
			if (compact)
				fprintf(f, "%-6s %-14s %8.3f %6.3f %6.3f %6.3f %6.3f %7d %7s\n", id, role,
					x->entropy, x->max_weight, x->prev_token, x->sink, x->delim, x->offset,
					ind);
			else
				fprintf(f, "%-6s %-14s %8.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.2f %6.3f %6.3f "
					   "%4d %7d %5.3f %7s\n", id, role, x->entropy, x->max_weight,
					x->prev_token, x->first_token, x->self, x->local, x->mean_distance,
					x->delim, x->sink, x->sink_key, x->offset, x->offset_weight, ind);
		}
	}
	if (heads_has_specials(s->model->tok))
		heads_special_table(s, f, sc, only, &uni);
	heads_roles(s, f, sc, only, &uni, &keys);
	char legend[1024];
	snprintf(legend, sizeof legend,
		 "labels, first match wins: induction induct >= %.2f; previous-token / offset K: "
		 "offw > %.2f at offset K;\nsink > %.2f; delimiter delim >= %.2f and >= %.0fx the "
		 "delimiters' share of the keys (here %.2f);\nself > %.2f; local >= %.2f; else broad.  "
		 "Uniform attention on this text: prev %.2f, sink %.2f, self %.2f, local %.2f.\n"
		 "help heads defines every score.\n",
		 HEADS_INDUCTION_MIN, HEADS_PREV_MIN, HEADS_SINK_MIN, HEADS_DELIM_MIN, HEADS_DELIM_LIFT,
		 uni.delim_share, HEADS_SELF_MIN, HEADS_LOCAL_MIN, uni.prev_token, uni.sink, uni.self,
		 uni.local);
	if (heads_has_specials(s->model->tok)) {
		size_t used = strlen(legend);
		snprintf(legend + used, sizeof legend - used,
			 "An encoder's roles come before sink: next-token offw > %.2f at offset -1; "
			 "cls / sep: cls / sep >= %.2f and >= %.0fx\nthose keys' share (here %.2f / "
			 "%.2f).\n", HEADS_PREV_MIN, HEADS_SPECIAL_MIN, HEADS_SPECIAL_LIFT, uni.cls_share,
			 uni.sep_share);
	}
	if (tty) { /* one paragraph, wrapped between words */
		for (char *p = legend; *p; p++)
			if (*p == '\n')
				*p = ' ';
		cmd_wrap(f, legend, 0, 0, cmd_out_width(s));
	} else {
		fputs(legend, f);
	}
	free(delim);
	return 0;
}

static const struct cmd_opt heads_opts[] = {
	{ "--layer", CMD_OPT_WORD, "L", 0, 0, "the layer" },
	{ "--offsets", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ NULL },
};

const struct cmd_entry cmd_heads_entry = {
	.name = "heads",
	.usage = "",
	.opts = heads_opts,
	.help = "what each head does: scores (previous-token, offset, sink, delimiter, self, local, induction...) and a role",
	.long_help =
		"Scores of each head's attention A on the current text (rows i are queries,\n"
		"columns j keys; \"rows i >= 1\" because row 0 of a causal mask sees only itself):\n"
		"  entropy  mean over all rows of -sum_j A[i][j] ln A[i][j] (nats)\n"
		"  max      mean over rows i >= 1 of the row's largest weight\n"
		"  prev     mean over rows i >= 1 of A[i][i-1]\n"
		"  first    mean over rows i >= 1 of A[i][0]\n"
		"  self     mean over rows i >= 1 of A[i][i]\n"
		"  local    mean over rows i >= 1 of the weight on keys i-3 .. i-1\n"
		"  dist     mean over all rows of sum_j A[i][j] |i - j| (tokens)\n"
		"  delim    mean over rows i >= 1 of the weight on delimiters: tokens made\n"
		"           only of whitespace (newline too) and punctuation, CJK included\n"
		"  sink     the most any one key j gets: sum over rows i >= 1, i != j of\n"
		"           A[i][j], divided by the T-1 rows; key = that j (first = key 0)\n"
		"  offset   the k (|k| <= (T-1)/2, k != 0) whose diagonal A[i][i-k] holds\n"
		"           the most; offw = its mean over the rows that have it (k < 0:\n"
		"           looking ahead, possible with mask none).  prev is offset 1.\n"
		"  induct   on n random tokens R followed by R again (n = min(32, context/2),\n"
		"           fixed seed, current options): mean over the second copy of the\n"
		"           weight from position n+k to k+1, the token after the earlier\n"
		"           occurrence (one later with BOS first)\n"
		"Roles, first match wins: induction (induct >= 0.3); previous-token (offset 1,\n"
		"offw > 0.5) or offset K (offset K, offw > 0.5); sink (sink > 0.5); delimiter\n"
		"(delim >= 0.5 and at least twice the delimiters' share of the keys each row\n"
		"sees); self (self > 0.5); local (local >= 0.7); else broad.  Each threshold\n"
		"is far above what uniform attention over the visible keys scores (printed\n"
		"under the table for the current text: e.g. prev ~ ln(T)/T under a causal\n"
		"mask); the delimiter role is relative because the delimiters' share varies.\n"
		"An encoder (a vocabulary with [CLS] and [SEP]: BERT's, train --objective mlm)\n"
		"also gets, in a table of its own: cls and sep, the mean over rows i >= 1 of\n"
		"the weight on [CLS] / [SEP] keys, beside those keys' share of the visible keys\n"
		"(uniform attention's); spread = entropy / uniform attention's entropy (1 =\n"
		"as broad as uniform).  Its roles, checked after the offsets and before sink:\n"
		"next-token (offset -1, offw > 0.5), cls and sep (>= 0.5 and >= 2x the share).\n"
		"--layer L shows one layer only.  --offsets prints instead each head's\n"
		"offset profile: its weight at 1, 2, ... tokens back (up to 16), the peak,\n"
		"and what attention spread evenly would put there.",
	.min_args = 0,
	.max_args = 0,
	.exec = heads_exec,
};

/* ------------------------------------------------------------------ sweep */

/* Prints one chunk of the layer x head table: heads h0 .. h1-1 (and the
 * per-layer "all" column when last). */
static void sweep_chunk(FILE *f, const struct sweep_result *r, bool by_kl, int h0, int h1, bool last)
{
	fprintf(f, "layer ");
	for (int h = h0; h < h1; h++) {
		char hd[24];
		snprintf(hd, sizeof hd, "h%d", h);
		fprintf(f, "%8s", hd);
	}
	if (last)
		fprintf(f, "%9s", "all");
	fprintf(f, "\n");
	for (int l = 0; l < r->L; l++) {
		fprintf(f, "%5d ", l);
		char v[32];
		for (int h = h0; h < h1; h++) {
			const struct ablation *a = &r->head[l * r->H + h];
			fmt_num(by_kl ? a->kl : a->delta_loss, !by_kl, v, sizeof v);
			fprintf(f, "%8s", v);
		}
		if (last) {
			fmt_num(by_kl ? r->layer[l].kl : r->layer[l].delta_loss, !by_kl, v, sizeof v);
			fprintf(f, "%9s", v);
		}
		fprintf(f, "\n");
	}
}

/* Records a finished or cancelled sweep in the session database; a failure
 * is one warning on stderr and never fails the command. */
static void sweep_record(struct session *s, const struct sweep_result *r, bool by_kl,
			 const char *corpus)
{
	if (!s->store || !store_recording(s->store) || !r->head || !r->layer)
		return;
	struct err se;
	if (store_sweep(s, r, by_kl ? "kl" : "loss", corpus ? corpus : "text", &se) < 0)
		fprintf(stderr, "attnscope: warning: sweep not recorded: %s\n", se.msg);
}

extern const struct cmd_entry cmd_sweep_entry, cmd_compare_entry;

static int sweep_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_sweep_entry, argc, argv, &a, e) != 0)
		return -1;
	const char *corpus, *metric = cmd_str(&cmd_sweep_entry, &a, "--metric");
	int ntok;
	source_args(&cmd_sweep_entry, &a, &corpus, &ntok);
	if (metric && strcmp(metric, "loss") && strcmp(metric, "kl"))
		return err_set(e, "--metric %.32s: use loss or kl", metric);
	bool by_kl = metric && !strcmp(metric, "kl");
	struct source src;
	if (source_get(s, corpus, ntok, &src, e) != 0)
		return -1;
	struct sweep_result r;
	bool tty = cmd_progress_shown();
	int rc = sweep_run(s->model, &s->opt, src.tokens, src.B, src.T, s->cancel,
			   tty ? cmd_progress : NULL, "sweep", &r, e);
	if (tty && rc != 0)
		cmd_progress("sweep", 1, 1); /* clear the progress line */
	if (rc != 0 && r.cancelled)
		sweep_record(s, &r, by_kl, corpus);
	if (rc != 0) {
		struct err e2;
		sweep_free(&r);
		source_free(&src);
		/* nothing of the session was touched; make sure it is current */
		if (session_update(s, &e2) != 0)
			err_set(e, "%s (and: %s)", r.cancelled ? "sweep cancelled" : "sweep failed", e2.msg);
		return -1;
	}

	sweep_record(s, &r, by_kl, corpus);

	FILE *f = s->out;
	int L = r.L, H = r.H;
	char opts[256];
	describe_options(s, &r.opt, opts, sizeof opts);
	fprintf(f, "sweep on %s (%d forward passes):\n"
		   "each of %d head%s ablated alone, then each layer's heads together\n",
		src.desc, r.total, L * H, L * H == 1 ? "" : "s");
	fprintf(f, "unablated run: options %s%s, loss %.4f nats\n", opts,
		opt_ablated_count(&s->opt) ? " (the session's ablations cleared)" : "", r.base_loss);
	if (by_kl)
		fprintf(f, "KL(unablated || ablated), nats, mean over positions:\n");
	else
		fprintf(f, "loss change (ablated - unablated), nats:\n");
	int per = (TABLE_WIDTH - 6 - 9) / 8;
	for (int h0 = 0; h0 < H; h0 += per) {
		int h1 = h0 + per < H ? h0 + per : H;
		sweep_chunk(f, &r, by_kl, h0, h1, h1 == H);
	}

	int *idx = xmalloc((size_t)L * H * sizeof *idx);
	sweep_rank(&r, by_kl, idx);
	fprintf(f, "ranking by %s, most important first:\n", by_kl ? "KL" : "loss change");
	for (int i = 0; i < L * H; i++) {
		const struct ablation *a = &r.head[idx[i]];
		char id[32], v[32], item[96];
		snprintf(id, sizeof id, "%d.%d", idx[i] / H, idx[i] % H);
		fmt_num(by_kl ? a->kl : a->delta_loss, !by_kl, v, sizeof v);
		snprintf(item, sizeof item, "%3d. %-6s %s", i + 1, id, v);
		bool eol = i % 4 == 3 || i == L * H - 1;
		fprintf(f, eol ? "%s%s\n" : "%s%-20s", i % 4 ? "" : "  ", item);
	}
	free(idx);
	int removable = sweep_removable(&r, SWEEP_REMOVABLE_FRAC);
	fprintf(f, "%d of %d heads can each be removed alone for under 1%% loss increase:\n"
		   "ablated alone, each raises the loss by < %.4f nats (1%% of %.4f); not all at once\n",
		removable, L * H, SWEEP_REMOVABLE_FRAC * r.base_loss, r.base_loss);
	sweep_free(&s->sweep); /* kept for expect */
	s->sweep = r;
	source_free(&src);
	return session_update(s, e);
}

static const char *const sweep_words[] = { "loss", "kl", NULL };
static const struct cmd_opt sweep_opts[] = {
	{ "--metric", CMD_OPT_WORD, "loss|kl", 0, 0, "the metric" },
	SOURCE_OPTS,
	{ NULL },
};
const struct cmd_entry cmd_sweep_entry = {
	.name = "sweep",
	.flags = CMD_LOGITS,
	.usage = "",
	.opts = sweep_opts,
	.help = "ablate every head alone and every layer's heads together; which heads matter",
	.long_help =
		"Runs the model once unablated (the current options with every ablation cleared)\n"
		"and once per head with that head's output zeroed, then once per layer with all\n"
		"of its heads zeroed.  The table shows the loss change (--metric loss, default)\n"
		"or KL(unablated || ablated) (--metric kl); heads are ranked by it.  A head can\n"
		"be \"removed for under 1% loss increase\" when its ablation alone raises the\n"
		"loss by less than 1% of the unablated loss.  --corpus FILE runs on the last N\n"
		"tokens of FILE (default N = min(context, 256)) instead of the current text;\n"
		"more than the context are cut into windows of the context, run as one batch,\n"
		"and every number is averaged over all their positions.\n"
		"Ctrl-C cancels; the session is left as it was.",
	.complete = COMPLETE_WORDS,
	.words = sweep_words,
	.min_args = 0,
	.max_args = 0,
	.exec = sweep_exec,
};

/* ---------------------------------------------------------------- compare */

/* Natively trained members of the shakespeare family. */
static const char *const family[] = { "shakespeare", "shakespeare-gqa", "shakespeare-gqa-uptrained",
				      "shakespeare-mqa", "shakespeare-rmsnorm",
				      "shakespeare-postnorm" };
#define FAMILY_N (int)(sizeof family / sizeof *family)

static bool in_family(const char *name)
{
	for (int i = 0; i < FAMILY_N; i++)
		if (name && !strcmp(name, family[i]))
			return true;
	return false;
}

/* Finds family member `name`: beside the loaded model's file first, then
 * through model_resolve.  0 when found (path in out). */
static int find_member(const struct model *m, const char *name, char *out, size_t size)
{
	if (m->path) {
		const char *slash = strrchr(m->path, '/');
		int dir = slash ? (int)(slash - m->path) : 0;
		struct stat st;
		snprintf(out, size, "%.*s%s%s.safetensors", dir, m->path, slash ? "/" : "", name);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
	}
	return model_resolve(name, out, size, NULL);
}

/* Same vocabulary: size, special ids and every token's bytes. */
static bool same_vocab(const struct model *a, const struct model *b)
{
	if (!a->tok || !b->tok || a->cfg.vocab_size != b->cfg.vocab_size ||
	    a->tok->bos_id != b->tok->bos_id || a->tok->unk_id != b->tok->unk_id)
		return false;
	for (int id = 0; id < a->cfg.vocab_size; id++) {
		char pa[64], pb[64];
		int la = tok_piece(a->tok, id, pa, sizeof pa), lb = tok_piece(b->tok, id, pb, sizeof pb);
		if (la != lb || strcmp(pa, pb))
			return false;
	}
	return true;
}

/* One row; compact (a narrow terminal): without perplexity and time;
 * head: the model has an output head (else the drift replaces loss, ppl,
 * KL and top-1). */
static void variant_print(FILE *f, const struct variant_row *v, int w, bool compact, bool head)
{
	char kv[32], loss[16], ppl[16], kl[16];
	format_bytes(v->kv_bytes, kv, sizeof kv);
	if (!head) {
		fprintf(f, "%-*s %8.4f %10s %7.2f\n", w, v->name, v->drift, kv, v->forward_ms);
		return;
	}
	fmt_num(v->loss, false, loss, sizeof loss);
	snprintf(ppl, sizeof ppl, isnan(v->ppl) ? "-" : v->ppl < 1e5 ? "%.2f" : "%.3g", v->ppl);
	fmt_num(v->kl, false, kl, sizeof kl);
	if (compact)
		fprintf(f, "%-*s %7s %8s %6.1f%% %10s\n", w, v->name, loss, kl, 100.0 * v->top1_agree, kv);
	else
		fprintf(f, "%-*s %7s %9s %8s %6.1f%% %10s %7.2f\n", w, v->name, loss, ppl, kl,
			100.0 * v->top1_agree, kv, v->forward_ms);
}

/* Notes under the variant table ("skipped X: why"), at most NOTES_MAX. */
#define NOTES_MAX 4
#define NOTE_LEN 400

/* Appends a row for each natively trained member of m's family found in
 * models/ to rows[n..], measured on src against ref; members missing,
 * unreadable or not comparable get a note instead.  Returns the new n. */
static int measure_family(struct model *m, const struct source *src, const struct run *ref,
			  struct variant_row *rows, int n, char (*notes)[NOTE_LEN], int *n_notes)
{
	int B = src->B, T = src->T;
	char missing[300] = "";
	size_t nm = 0;
	for (int k = 0; k < FAMILY_N && n < VARIANTS_MAX; k++) {
		if (!strcmp(family[k], m->name))
			continue;
		char path[4096];
		if (find_member(m, family[k], path, sizeof path) != 0) {
			if (nm < sizeof missing)
				nm += (size_t)snprintf(missing + nm, sizeof missing - nm, "%s%s",
						       nm ? ", " : "", family[k]);
			continue;
		}
		struct err e2;
		struct model *o = model_open(path, &e2);
		const char *why = NULL;
		if (!o)
			why = e2.msg;
		else if (!same_vocab(m, o))
			why = "a different vocabulary, so KL vs this model means nothing";
		else if (T > o->cfg.context)
			why = "its context is shorter than the text";
		int r2 = -1;
		if (!why) {
			struct variant_row *v = &rows[n];
			memset(v, 0, sizeof *v);
			snprintf(v->name, sizeof v->name, "%s [trained]", family[k]);
			v->trained = true;
			struct run *w2 = run_new(&o->cfg, B, T, RUN_LOGITS);
			struct run_options nat;
			run_options_native(o, &nat);
			r2 = variant_measure(o, &nat, src->tokens, B, T, ref, w2, v, &e2);
			run_free(w2);
			if (r2 != 0)
				why = e2.msg;
		}
		model_free(o);
		if (r2 == 0)
			n++;
		else if (*n_notes < NOTES_MAX)
			snprintf(notes[(*n_notes)++], NOTE_LEN, "skipped %s: %.300s", family[k], why);
	}
	if (nm && *n_notes < NOTES_MAX)
		snprintf(notes[(*n_notes)++], NOTE_LEN, "natively trained %.300s: not found", missing);
	return n;
}

static int compare_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_compare_entry, argc, argv, &a, e) != 0)
		return -1;
	const char *corpus;
	int ntok;
	source_args(&cmd_compare_entry, &a, &corpus, &ntok);
	if (a.n_pos == 0)
		return err_set(e, "usage: compare variants [--corpus FILE] [--tokens N] | compare ID ID");
	if (strcmp(a.pos[0], "variants")) {
		if (corpus || ntok)
			return err_set(e, "compare ID ID takes no --corpus or --tokens");
		return store_cmd_compare(s, argc, argv, e);
	}
	if (a.n_pos != 1)
		return err_set(e, "usage: compare variants [--corpus FILE] [--tokens N]");
	struct source src;
	if (source_get(s, corpus, ntok, &src, e) != 0)
		return -1;
	struct model *m = s->model;
	int B = src.B, T = src.T;
	struct run *ref = run_new(&m->cfg, B, T, RUN_LOGITS), *work = run_new(&m->cfg, B, T, RUN_LOGITS);
	struct variant_row rows[VARIANTS_MAX];
	int n = variant_list(m, rows, VARIANTS_MAX), rc = 0;
	char notes[NOTES_MAX][NOTE_LEN];
	int n_notes = 0;

	if (model_forward(m, &rows[0].opt, src.tokens, NULL, B, T, ref, e) != 0)
		goto fail;
	/* a variant the model cannot run (OLMo-2's key norm under fewer K/V
	 * heads, its post-norm) is left out with the reason, not the table */
	int kept = 0;
	for (int i = 0; i < n; i++) {
		struct err why;
		struct variant_row v = rows[i];
		if (variant_measure(m, &v.opt, src.tokens, B, T, ref, work, &v, &why) == 0)
			rows[kept++] = v;
		else if (i == 0) {
			*e = why;
			err_prefix(e, "%s", rows[i].name);
			goto fail;
		} else if (n_notes < NOTES_MAX)
			snprintf(notes[n_notes++], NOTE_LEN, "left out %.40s: %.300s", rows[i].name,
				 why.msg);
	}
	n = kept;

	/* natively trained variants of the shakespeare family */
	if (in_family(m->name))
		n = measure_family(m, &src, ref, rows, n, notes, &n_notes);
	free(s->variants); /* kept for expect */
	s->variants = xmalloc((size_t)n * sizeof *s->variants);
	memcpy(s->variants, rows, (size_t)n * sizeof *rows);
	s->n_variants = n;

	FILE *f = s->out;
	int w = 30; /* the name column: as wide as the longest name */
	for (int i = 0; i < n; i++)
		w = (int)strlen(rows[i].name) > w ? (int)strlen(rows[i].name) : w;
	if (!cfg_has_head(&m->cfg)) { /* no distribution to compare: the output's drift */
		fprintf(f, "compare variants on %s;\n%s has no output head: how far each variant moves "
			   "the model's output from the native run's\n", src.desc, m->name);
		fprintf(f, "%-*s %8s %10s %7s\n", w, "variant", "drift", "KV cache", "ms");
		for (int i = 0; i < n; i++)
			variant_print(f, &rows[i], w, false, false);
		char foot[256];
		snprintf(foot, sizeof foot, "drift = ||h - h_native|| / ||h_native|| of the last block's "
			 "output, mean over positions; KV cache: float32 for %d tokens.", T);
		cmd_wrap(f, foot, 0, 0, cmd_out_width(s));
		goto done;
	}
	fprintf(f, "compare variants on %s;\nKL and top-1 agreement against the native run of %s\n",
		src.desc, m->name ? m->name : "the model");
	/* at a terminal too narrow for every column: without ppl and ms */
	bool compact = cmd_out_tty(s) && w + 52 > cmd_out_width(s);
	if (compact)
		fprintf(f, "%-*s %7s %8s %7s %10s\n", w, "variant", "loss", "KL", "top-1", "KV cache");
	else
		fprintf(f, "%-*s %7s %9s %8s %7s %10s %7s\n", w, "variant", "loss", "ppl", "KL", "top-1",
			"KV cache", "ms");
	for (int i = 0; i < n; i++)
		variant_print(f, &rows[i], w, compact, true);
	if (compact) {
		char foot[256];
		snprintf(foot, sizeof foot, "KL = KL(native || variant), nats, mean over positions; KV "
			 "cache: float32 for %d tokens. Conversions use the same weights (no training).", T);
		cmd_wrap(f, foot, 0, 0, cmd_out_width(s));
	} else {
		fprintf(f, "KL = KL(native || variant), nats, mean over positions; KV cache: float32 for %d tokens;\n"
			   "ms: one forward pass, the faster of two.  Conversions use the same weights (no training).\n",
			T);
	}
	for (int i = 0; i < n_notes; i++)
		fprintf(f, "%s\n", notes[i]);
	goto done;
fail:
	rc = -1;
done:
	run_free(ref);
	run_free(work);
	source_free(&src);
	if (rc == 0)
		rc = session_update(s, e);
	return rc;
}

static const char *const compare_words[] = { "variants", NULL };
static const struct cmd_opt compare_opts[] = {
	SOURCE_OPTS,
	{ NULL },
};
const struct cmd_entry cmd_compare_entry = {
	.name = "compare",
	.usage = "variants | ID ID",
	.opts = compare_opts,
	.help = "every variant in one table (loss, ppl, KL, top-1, KV, ms), or two stored measurements side by side",
	.long_help =
		"Rows: the native model; every other number of key/value heads G dividing\n"
		"n_head (mha, gqa G, mqa: K/V weights mean-pooled, no training); the other norm\n"
		"placement; mask none; and, when a shakespeare model is loaded, the natively\n"
		"trained shakespeare, -gqa, -mqa and -postnorm models found in models/ (same\n"
		"vocabulary required).  KL and top-1 agreement are against the loaded model's\n"
		"native run.  --corpus FILE runs on the last N tokens of FILE (default\n"
		"N = min(context, 256)) instead of the current text.",
	.complete = COMPLETE_WORDS,
	.words = compare_words,
	.min_args = 1,
	.max_args = 2,
	.exec = compare_exec,
};
