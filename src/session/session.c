/*
 * session.c — the state one user works on, and keeping its runs current.
 */
#include "session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "render.h"
#include "tokenizer.h"

void session_init(struct session *s, FILE *out)
{
	memset(s, 0, sizeof *s);
	s->out = out;
	s->dirty = DIRTY_ALL;
	s->qkov_copy = NAN;
}

void session_free(struct session *s)
{
	model_free(s->model);
	in_use_drop(s->model_files);
	free(s->model_spec);
	free(s->text);
	free(s->tokens);
	free(s->unk_src);
	run_free(s->run);
	run_free(s->base_own);
	free(s->scores);
	heat_free(&s->heat_vals);
	free(s->heat_disp);
	patch_free(&s->patch);
	free(s->patch_text);
	why_free(&s->why);
	compose_free(&s->compose);
	sweep_free(&s->sweep);
	lab_result_free(&s->lab);
	pad_result_free(&s->batch);
	free(s->variants);
	memset(s, 0, sizeof *s);
}

bool session_ready(const struct session *s)
{
	return s->model && s->n_tokens > 0 && s->run_valid && s->base_valid;
}

int session_need_model(const struct session *s, struct err *e)
{
	return s->model ? 0 : err_set(e, "no model loaded (try: load shakespeare)");
}

int session_need_run(const struct session *s, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	if (!session_ready(s))
		return err_set(e, "no text yet (try: text To be, or not to be)");
	return 0;
}

int session_need_head(const struct session *s, const char *what, struct err *e)
{
	if (!s->model || cfg_has_head(&s->model->cfg))
		return 0;
	return err_set(e, "%s reads the model's predictions, and %s has no output head (a "
		       "BertModel without the masked-LM head)", what, s->model->name);
}

/* Makes sure the current run can hold n tokens of the current model (and
 * the baseline's own run, when there is one, the same). */
static void ensure_runs(struct session *s, int n)
{
	const struct model_config *c = &s->model->cfg;
	if (s->run && (s->run->T < n || s->run->C != c->d_model || s->run->V != c->vocab_size ||
		       s->run->L != c->n_layer || s->run->H != c->n_head || s->run->F != c->d_ff)) {
		run_free(s->run);
		run_free(s->base_own);
		s->run = s->base = s->base_own = NULL;
	}
	if (!s->run) {
		s->run = run_new(c, 1, n, RUN_LOGITS | RUN_ATTN);
		s->run_valid = s->base_valid = s->base_own_valid = false;
	}
}

/* Computes the chosen heat of the current run (nothing for weights). */
static int refresh_heat(struct session *s, struct err *e)
{
	heat_free(&s->heat_vals);
	free(s->heat_disp);
	s->heat_disp = NULL;
	if (s->heat == HEAT_WEIGHTS || !s->run_valid)
		return 0;
	struct heat h;
	if (heat_compute(s->model, &s->opt, s->tokens, s->n_tokens, s->heat, &h, e) != 0)
		return -1;
	size_t TT = (size_t)h.T * h.T;
	s->heat_disp = xmalloc((size_t)h.L * h.H * TT * sizeof *s->heat_disp);
	for (int l = 0; l < h.L; l++)
		for (int hd = 0; hd < h.H; hd++)
			heat_display(&h, l, hd, s->heat_disp + ((size_t)l * h.H + hd) * TT);
	s->heat_vals = h;
	return 0;
}

int session_set_heat(struct session *s, enum heat_kind k, struct err *e)
{
	enum heat_kind old = s->heat;
	s->heat = k;
	if (refresh_heat(s, e) != 0) {
		s->heat = old;
		struct err ignore;
		refresh_heat(s, &ignore);
		return -1;
	}
	s->dirty |= DIRTY_RUN;
	return 0;
}

/* Whether heat_disp belongs to the current run (a failed update or a new
 * model leaves it behind until the next run). */
static bool heat_current(const struct session *s)
{
	return s->heat_disp && s->run_valid && s->heat_vals.T == s->n_tokens &&
	       s->heat_vals.L == s->model->cfg.n_layer && s->heat_vals.H == s->model->cfg.n_head;
}

const float *session_att(const struct session *s, int l, int h)
{
	if (!heat_current(s))
		return run_att(s->run, l, 0, h);
	size_t TT = (size_t)s->n_tokens * s->n_tokens;
	return s->heat_disp + ((size_t)l * s->model->cfg.n_head + h) * TT;
}

const float *session_heat_values(const struct session *s, int l, int h)
{
	return heat_current(s) ? heat_at(&s->heat_vals, l, h) : run_att(s->run, l, 0, h);
}

float *session_diff(const struct session *s, int l, int h)
{
	size_t TT = (size_t)s->n_tokens * s->n_tokens;
	const float *a = run_att(s->run, l, 0, h), *b = run_att(s->base, l, 0, h);
	float *d = xmalloc((TT ? TT : 1) * sizeof *d);
	for (size_t k = 0; k < TT; k++)
		d[k] = a[k] - b[k];
	return d;
}

/* The current run becomes cur, the one before prev. */
static void note_numbers(struct session *s)
{
	s->prev = s->cur;
	struct run_numbers *n = &s->cur;
	n->valid = true;
	n->tokens = s->n_tokens;
	n->loss = s->run->loss;
	n->ppl = exp(s->run->loss);
	n->kl = s->cmp.kl;
	n->top1 = s->cmp.top1_agree;
	n->dloss = s->cmp.delta_loss;
	n->drift = s->cmp.drift;
	snprintf(n->model, sizeof n->model, "%s", s->model->name ? s->model->name : "?");
}

/* What follows a new pass of s->run: the baseline (its own pass when the
 * options differ from the native ones), the comparison, the numbers, the
 * heat, the marks.  0 or -1. */
static int pass_made(struct session *s, struct err *e)
{
	bool native = run_options_equal(&s->opt, &s->native);
	s->base_valid = false;
	if (!native && !s->base_own_valid) {
		if (!s->base_own)
			s->base_own = run_new(&s->model->cfg, 1, s->run->T, RUN_LOGITS | RUN_ATTN);
		if (model_forward(s->model, &s->native, s->tokens, NULL, 1, s->n_tokens, s->base_own,
				  e) != 0)
			return -1;
		s->base_own_valid = true;
	}
	s->base = native ? s->run : s->base_own;
	s->base_valid = true;
	s->run_valid = true;
	s->run_gen++;
	s->scores_valid = false;
	compare_runs(s->base, s->run, &s->cmp);
	note_numbers(s);
	if (refresh_heat(s, e) != 0)
		return -1;
	s->dirty |= DIRTY_RUN;
	if (s->on_run)
		s->on_run(s);
	return 0;
}

int session_update(struct session *s, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	if (s->n_tokens == 0)
		return 0;
	ensure_runs(s, s->n_tokens);
	if (!s->run_valid) {
		if (model_forward(s->model, &s->opt, s->tokens, NULL, 1, s->n_tokens, s->run, e) != 0)
			return -1;
		if (pass_made(s, e) != 0)
			return -1;
	}
	if (s->sel_token >= s->n_tokens)
		s->sel_token = s->n_tokens - 1;
	return 0;
}

/* A code point for a message or a label: itself, as tok_label shows
 * whitespace (space, newline, tab), or U+XXXX for another control character. */
static void cp_text(uint32_t cp, char *buf, size_t size)
{
	const char *shown = cp == ' ' ? "\u2423" : cp == '\n' ? "\u23ce" : cp == '\t' ? "\u21e5" : NULL;
	if (shown) {
		snprintf(buf, size, "%s", shown);
		return;
	}
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
		snprintf(buf, size, "U+%04X", (unsigned)cp);
		return;
	}
	char u[5];
	u[utf8_encode(cp, u)] = 0;
	snprintf(buf, size, "%s", u);
}

/* Encodes text for model m into *ids / *n and the sources of its <unk>
 * tokens into *src (malloc'd, one per token), warning on stderr about
 * invalid UTF-8 and about characters m does not know.  0 or -1 (too long,
 * no tokenizer). */
static int encode_text(const struct model *m, const char *text, int **ids, int *n, int32_t **src,
		       struct err *e)
{
	int bad = 0;
	*ids = NULL;
	*n = 0;
	*src = NULL;
	if (!text || !text[0])
		return 0;
	size_t len = strlen(text);
	if (model_tokenize(m, text, len, ids, n, &bad, e) != 0)
		return -1;
	if (bad)
		fprintf(stderr, "attnscope: warning: %d invalid UTF-8 byte%s replaced by U+FFFD\n", bad,
			bad == 1 ? "" : "s");
	*src = xmalloc((size_t)(*n > 0 ? *n : 1) * sizeof **src);
	enum { SHOW = 12 };
	uint32_t cps[SHOW];
	int ncps = 0;
	int unk = tok_unknown(m->tok, text, len, 1, *ids, *n, *src, cps, SHOW, &ncps);
	if (unk == 0)
		return 0;
	char list[256] = "";
	size_t at = 0;
	for (int i = 0; i < ncps && i < SHOW && at < sizeof list; i++) {
		char c[16];
		cp_text(cps[i], c, sizeof c);
		at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? " " : "", c);
	}
	if (ncps > SHOW && at < sizeof list)
		snprintf(list + at, sizeof list - at, " and %d more", ncps - SHOW);
	const char *name = m->name ? m->name : "the model";
	if (ncps > 0)
		fprintf(stderr, "attnscope: warning: %d of %d tokens are <unk>%s: %s does not know %s\n",
			unk, *n, 2 * unk > *n ? " (most of the text)" : "", name, list);
	else
		fprintf(stderr, "attnscope: warning: %d of %d tokens are <unk>%s\n", unk, *n,
			2 * unk > *n ? " (most of the text)" : "");
	return 0;
}

char **session_labels(const struct session *s)
{
	char **v = render_labels(s->model ? s->model->tok : NULL, s->tokens, s->n_tokens);
	for (int i = 0; s->unk_src && i < s->n_tokens; i++)
		if (s->unk_src[i] >= 0) {
			char c[16], buf[24];
			cp_text((uint32_t)s->unk_src[i], c, sizeof c);
			snprintf(buf, sizeof buf, "<%s>", c);
			free(v[i]);
			v[i] = xstrdup(buf);
		}
	return v;
}

const struct head_scores *session_head_scores(struct session *s, struct err *e)
{
	if (session_need_run(s, e))
		return NULL;
	if (!s->scores_valid) {
		const struct model_config *c = &s->model->cfg;
		free(s->scores);
		s->scores = xmalloc((size_t)c->n_layer * c->n_head * sizeof *s->scores);
		if (heads_analyze(s->model, &s->opt, s->run, s->tokens, s->scores, e) != 0)
			return NULL;
		s->scores_valid = true;
	}
	return s->scores;
}

/* A warning on stderr when m's tokenizer and vocabulary differ in size. */
static void warn_vocab(const struct model *m, const char *spec)
{
	int V = m->cfg.vocab_size, nt = m->tok ? m->tok->vocab_size : V;
	const char *name = m->name ? m->name : spec;

	if (nt < V)
		fprintf(stderr, "attnscope: warning: %s: the tokenizer has %d tokens but the model's "
			"vocabulary %d; ids %d..%d have no text (generate never draws them, top marks "
			"them)\n", name, nt, V, nt, V - 1);
	else if (nt > V)
		fprintf(stderr, "attnscope: warning: %s: the tokenizer has %d tokens but the model's "
			"vocabulary %d; a text holding ids %d..%d will not run\n", name, nt, V, V,
			nt - 1);
}

int session_load(struct session *s, const char *spec, const char *tokenizer, struct err *e)
{
	int files = in_use_new("a file of the loaded model");
	in_use_record(files, true);
	struct model *m = model_open_ex(spec, tokenizer, NULL, e);
	in_use_record(files, false);
	if (!m) {
		in_use_drop(files);
		return -1;
	}
	if (m->path)
		in_use_add(files, m->path);
	if (tokenizer)
		in_use_add(files, tokenizer);
	int *ids = NULL, n = 0;
	int32_t *src = NULL;
	if (encode_text(m, s->text, &ids, &n, &src, e) != 0) {
		err_prefix(e, "current text with %s", m->name ? m->name : spec);
		model_free(m);
		in_use_drop(files);
		return -1;
	}
	if (m->name) { /* a name from a file's metadata is shown, never obeyed */
		size_t n = strlen(m->name);
		char *safe = xmalloc(4 * n + 1);
		utf8_printable(m->name, n, safe, 4 * n + 1);
		free(m->name);
		m->name = safe;
	}
	warn_vocab(m, spec);
	model_free(s->model);
	in_use_drop(s->model_files);
	s->model_files = files;
	free(s->model_spec);
	free(s->tokens);
	free(s->unk_src);
	s->unk_src = src;
	run_free(s->run);
	run_free(s->base_own);
	s->run = s->base = s->base_own = NULL;
	s->model = m;
	s->model_spec = xstrdup(spec);
	s->tokens = ids;
	s->n_tokens = n;
	run_options_native(m, &s->native);
	s->opt = s->native;
	s->run_valid = s->base_valid = s->base_own_valid = false;
	s->sel_layer = s->sel_head = s->sel_token = 0;
	compose_free(&s->compose); /* the last model's weights */
	s->qkov_copy = NAN;
	s->dirty = DIRTY_ALL;
	return session_update(s, e);
}

/* Replaces the text and its tokens (ids, n; src: the sources of its
 * <unk> tokens), both taken over; the run no longer valid. */
static void take_text(struct session *s, const char *text, int *ids, int n, int32_t *src)
{
	free(s->text);
	free(s->tokens);
	free(s->unk_src);
	s->unk_src = src;
	s->text = text[0] ? xstrdup(text) : NULL;
	s->tokens = ids;
	s->n_tokens = n;
	s->run_valid = s->base_valid = s->base_own_valid = false;
	s->sel_token = n > 0 ? n - 1 : 0;
	s->dirty |= DIRTY_TEXT;
}

int session_set_text(struct session *s, const char *text, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	int *ids = NULL, n = 0;
	int32_t *src = NULL;
	if (encode_text(s->model, text, &ids, &n, &src, e) != 0)
		return -1;
	take_text(s, text, ids, n, src);
	return session_update(s, e);
}

struct run *session_run_to_fill(struct session *s, int T)
{
	if (!s->model || !s->run || !s->run_valid)
		return NULL;
	if (s->run->T < T)
		return run_new(&s->model->cfg, 1, T, RUN_LOGITS | RUN_ATTN);
	s->run_valid = s->base_valid = false; /* its rows are about to move */
	return s->run;
}

/* Whether r is a pass over the session's tokens (ids, n) under its options. */
static bool run_is_pass(const struct session *s, const struct run *r, const int *ids, int n)
{
	return r && n == s->n_tokens && n > 0 && r->b == 1 && r->t == n &&
	       memcmp(ids, s->tokens, (size_t)n * sizeof *ids) == 0 &&
	       run_options_equal(&r->opt, &s->opt);
}

int session_set_text_run(struct session *s, const char *text, struct run *r, const int *ids,
			 int n, struct err *e)
{
	int *tok = NULL, nt = 0;
	int32_t *src = NULL;
	if (session_need_model(s, e) || encode_text(s->model, text, &tok, &nt, &src, e) != 0) {
		if (r != s->run)
			run_free(r);
		struct err ignore; /* the text stays: its pass again, when r was it */
		session_update(s, &ignore);
		return -1;
	}
	take_text(s, text, tok, nt, src);
	if (!run_is_pass(s, r, ids, n)) {
		if (r != s->run)
			run_free(r);
		return session_update(s, e);
	}
	if (r != s->run) { /* the session's run is r from here on */
		run_free(s->run);
		s->run = r;
		if (s->base_own && s->base_own->T < n) {
			run_free(s->base_own);
			s->base_own = NULL;
		}
	}
	if (pass_made(s, e) != 0)
		return -1;
	return session_update(s, e);
}

int session_set_options(struct session *s, const struct run_options *o, struct err *e)
{
	if (session_need_model(s, e))
		return -1;
	if (run_options_validate(s->model, o, e) != 0)
		return -1;
	struct run_options old = s->opt;
	s->opt = *o;
	if (!run_options_equal(&old, o)) {
		s->run_valid = false;
		s->dirty |= DIRTY_OPTIONS;
	}
	if (session_update(s, e) != 0) {
		s->opt = old;
		s->run_valid = false;
		return -1;
	}
	return 0;
}

double session_kv_bytes(const struct session *s, const struct run_options *o)
{
	if (!s->model)
		return 0.0;
	const struct model_config *c = &s->model->cfg;
	return kv_cache_bytes(c->n_layer, o->kv_heads, kv_positions(o, s->n_tokens), cfg_d_head(c), 4);
}

bool session_head_ablated(const struct session *s, int l, int h)
{
	int bit = l * s->model->cfg.n_head + h;
	return bit < ABLATE_WORDS * 64 && opt_is_ablated(&s->opt, bit);
}

void session_variant(const struct session *s, char *buf, size_t size)
{
	session_variant_of(s, &s->opt, buf, size);
}

void session_variant_of(const struct session *s, const struct run_options *o, char *buf,
			size_t size)
{
	buf[0] = '\0';
	if (!s->model)
		return;
	const struct model_config *c = &s->model->cfg;
	size_t n = 0;
#define ADD(...) \
	do { \
		if (n < size) \
			n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__); \
	} while (0)
	if (o->kv_heads != s->native.kv_heads) {
		if (o->kv_heads == c->n_head)
			ADD("%smha", n ? " " : "");
		else if (o->kv_heads == 1)
			ADD("%smqa", n ? " " : "");
		else
			ADD("%sgqa%d", n ? " " : "", o->kv_heads);
	}
	if (o->placement != s->native.placement)
		ADD("%s%s-norm", n ? " " : "", norm_place_name(o->placement));
	if (o->mask == MASK_WINDOW)
		ADD("%smask:window%d", n ? " " : "", o->window);
	else if (o->mask != s->native.mask)
		ADD("%smask:%s", n ? " " : "", mask_kind_name(o->mask));
	if (o->scale != s->native.scale)
		ADD("%sscale:%s", n ? " " : "", o->scale ? "on" : "off");
	if (o->pitfall != PITFALL_NONE)
		ADD("%spitfall:%s", n ? " " : "", pitfall_name(o->pitfall));
	for (int bit = 0; bit < c->n_layer * c->n_head && bit < ABLATE_WORDS * 64; bit++)
		if (opt_is_ablated(o, bit))
			ADD("%s-%d.%d", n ? " " : "", bit / c->n_head, bit % c->n_head);
#undef ADD
}

bool session_nonfinite_text(const struct session *s, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!session_ready(s) || !s->run || !s->run->nonfinite.site)
		return false;
	const struct run_nonfinite *nf = &s->run->nonfinite;
	if (nf->layer < 0 || nf->layer >= s->model->cfg.n_layer)
		snprintf(buf, size, "in the %s, position %d", nf->site, nf->pos);
	else
		snprintf(buf, size, "at layer %d (%s), position %d", nf->layer, nf->site, nf->pos);
	return true;
}

void session_summary(const struct session *s, char *buf, size_t size)
{
	if (!session_ready(s)) {
		snprintf(buf, size, s->model ? "no text (try: text To be, or not to be)" : "no model");
		return;
	}
	char kv[32], loss[48];
	format_bytes(session_kv_bytes(s, &s->opt), kv, sizeof kv);
	if (!cfg_has_head(&s->model->cfg)) { /* no distribution: how far the output moved */
		snprintf(buf, size, "%d tokens  no head: output drift %.4f  KV %s  %.1f ms",
			 s->n_tokens, s->cmp.drift, kv, s->run->forward_ms);
		return;
	}
	char where[96];
	if (session_nonfinite_text(s, where, sizeof where)) {
		/* where the first NaN (or inf) came from, and the loss and KL as they are */
		char kl[24];
		snprintf(loss, sizeof loss, isnan(s->run->loss) ? "NaN" : "%.4f", s->run->loss);
		snprintf(kl, sizeof kl, isnan(s->cmp.kl) ? "NaN" : "%.4f", s->cmp.kl);
		snprintf(buf, size, "%d tokens  first NaN %s: loss %s  KL %s  KV %s  %.1f ms",
			 s->n_tokens, where, loss, kl, kv, s->run->forward_ms);
		return;
	}
	if (isnan(s->run->loss))
		snprintf(loss, sizeof loss, "loss -");
	else
		snprintf(loss, sizeof loss, "loss %.4f (%+.4f)", s->run->loss, s->cmp.delta_loss);
	snprintf(buf, size, "%d tokens  %s  KL %.4f  top-1 %.1f%%  KV %s  %.1f ms", s->n_tokens, loss,
		 s->cmp.kl, 100.0 * s->cmp.top1_agree, kv, s->run->forward_ms);
}

/* A whole number of at most 9 digits at *p, advancing *p; -1 when there is
 * none (so that an id too long to be a head is refused, never wrapped). */
static long head_part(const char **p)
{
	long v = 0;
	int digits = 0;
	while (**p >= '0' && **p <= '9' && digits < 10) {
		v = v * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	return digits == 0 || digits > 9 ? -1 : v;
}

int session_parse_head(const struct session *s, const char *arg, int *layer, int *head,
		       struct err *e)
{
	if (!s->model)
		return err_set(e, "no model loaded");
	/* LAYER.HEAD, or L<layer>H<head> in either case */
	const char *p = arg;
	bool lh = *p == 'L' || *p == 'l';
	p += lh;
	long l = head_part(&p);
	bool sep = lh ? (*p == 'H' || *p == 'h') : *p == '.';
	p += sep;
	long h = sep ? head_part(&p) : -1;
	if (l < 0 || h < 0 || *p)
		return err_set(e, "%.32s: not a head id (write LAYER.HEAD, e.g. 2.1)", arg);
	const struct model_config *c = &s->model->cfg;
	if (l >= c->n_layer || h >= c->n_head)
		return err_set(e, "head %.32s does not exist (layers 0-%d, heads 0-%d)", arg,
			       c->n_layer - 1, c->n_head - 1);
	*layer = (int)l;
	*head = (int)h;
	return 0;
}
