/*
 * export.c — heatmaps, grids (every layer, or a range of them: export
 * layer's text forms) and run statistics as txt, ascii, ansi, csv, json
 * (jansson) and svg, built into a render_buf.  Nothing here depends on the
 * clock, so exports of one session reproduce byte for byte.
 */
#include "export.h"
#include "export-parts.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis.h"
#include "json-util.h"
#include "tokenizer.h"
#include "utf8.h"

/* ------------------------------------------------------------------- csv */

static void csv_header(struct render_buf *b, char **labels, int T, bool with_head)
{
	if (with_head)
		render_buf_puts(b, "\"layer\",\"head\",");
	ex_csv_quoted(b, "query\\key");
	for (int j = 0; j < T; j++) {
		render_buf_puts(b, ",");
		ex_csv_quoted(b, labels[j]);
	}
	render_buf_puts(b, "\n");
}

/* One block of T rows for head (l, h); the layer/head columns when asked. */
static void csv_rows(struct render_buf *b, const float *a, char **labels, int T, int l, int h,
		     bool with_head)
{
	for (int i = 0; i < T; i++) {
		if (with_head)
			render_buf_printf(b, "%d,%d,", l, h);
		ex_csv_quoted(b, labels[i]);
		for (int j = 0; j < T; j++) /* a masked cell (NAN) is empty */
			if (isnan(a[(size_t)i * T + j]))
				render_buf_puts(b, ",");
			else
				render_buf_printf(b, ",%.9g", (double)a[(size_t)i * T + j]);
		render_buf_puts(b, "\n");
	}
}

/* ------------------------------------------------------------------ json */

static json_t *json_matrix(const float *a, int T)
{
	json_t *rows = ju_check(json_array());
	for (int i = 0; i < T; i++) {
		json_t *row = ju_check(json_array());
		for (int j = 0; j < T; j++)
			ju_append(row, ju_real((double)a[(size_t)i * T + j]));
		ju_append(rows, row);
	}
	return rows;
}

/* ------------------------------------------------------------------- svg */

static int imax(int a, int b)
{
	return a > b ? a : b;
}

/* The role scores of head (l, h) in r, or NULL. */
static const struct head_scores *role_of(const struct session *s, const struct export_req *r,
					 int l, int h)
{
	return r->roles ? &r->roles[l * s->model->cfg.n_head + h] : NULL;
}

/* One head's map a (T, T) as a figure; diverging: a holds changes in
 * -1..1 (export heatmap --diff). */
static void svg_heatmap(struct render_buf *out, const struct session *s, const struct export_req *r,
			char **labels, const char *opts, const float *a, bool diverging)
{
	int T = s->n_tokens, layer = r->layer, head = r->head;
	int cs = imax(4, 640 / T > 20 ? 20 : 640 / T);
	int left = 16 + ex_svg_query_labels_w(labels, T, cs, true);
	int top = 24 + ex_svg_key_labels_h(labels, T, cs);
	int side = T * cs;
	char mask[256], sub[1400], heading[256], tip[1024];
	ex_mask_words(&s->opt, mask, sizeof mask);
	struct ex_legend lg = {
		.what = diverging ? "weight under these options minus the native run's"
				  : heat_kind_legend(s->heat),
		.diverging = diverging, .masked = mask, .roles = role_of(s, r, layer, head),
		.n_roles = 1,
	};
	int w = imax(imax(left + side + 24, 720), left + ex_svg_legend_w(&lg));
	int body_h = top + side + 16 + ex_svg_legend_h(&lg);
	snprintf(heading, sizeof heading, "%s of head %d.%d (layer %d, head %d)%s: %s",
		 diverging ? "Change in the attention" : "Attention", layer, head, layer, head,
		 session_head_ablated(s, layer, head) ? " [ablated]" : "", ex_model_name(s));
	ex_subtitle(s, diverging, sub, sizeof sub);
	snprintf(tip, sizeof tip, "attnscope: %s; %d tokens; options: %s", heading, T, opts);

	struct render_buf b;
	render_buf_init(&b);
	char name[48];
	snprintf(name, sizeof name, "head %d.%d%s", layer, head,
		 session_head_ablated(s, layer, head) ? " (ablated)" : "");
	render_buf_printf(&b, "<text x=\"%d\" y=\"16\" font-size=\"13\" font-weight=\"bold\">%s</text>\n",
			  left, name);
	ex_svg_badge(&b, left + ex_text_px(render_width(name), 13) + 8, 16, role_of(s, r, layer, head));
	ex_svg_key_labels(&b, labels, T, left, top, cs);
	ex_svg_query_labels(&b, labels, T, left, top, cs, true);
	struct ex_map m = { .a = a, .T = T, .o = &s->opt, .diverging = diverging, .every_cell = true };
	ex_svg_map(&b, &m, left, top, cs);
	ex_svg_frame(&b, left, top, side, side, false);
	ex_svg_legend(&b, left, top + side + 16, &lg);
	ex_svg_figure(out, w, body_h, tip, heading, sub, &b);
	render_buf_free(&b);
}

static void svg_grid(struct render_buf *out, const struct session *s, const struct export_req *r,
		     const char *opts)
{
	int T = s->n_tokens, L = s->model->cfg.n_layer, H = s->model->cfg.n_head;
	int cs = imax(2, 128 / T > 8 ? 8 : 128 / T);
	int side = T * cs, gap = 22, row_h = side + gap + 20;
	int bw = imax(side, r->roles ? 150 : 80);
	char heading[256], sub[1400], tip[1024], mask[256];
	snprintf(heading, sizeof heading, "Attention of every head: %s (%d layers x %d heads)",
		 ex_model_name(s), L, H);
	ex_subtitle(s, false, sub, sizeof sub);
	snprintf(tip, sizeof tip, "attnscope: %s; %d tokens; options: %s", heading, T, opts);
	ex_mask_words(&s->opt, mask, sizeof mask);
	struct ex_legend lg = { .what = heat_kind_legend(s->heat), .masked = mask,
				.roles = r->roles, .n_roles = L * H };
	int w = imax(imax(16 + H * (bw + gap), 760), 16 + ex_svg_legend_w(&lg));
	int body_h = L * row_h + 8 + ex_svg_legend_h(&lg);

	struct render_buf b;
	render_buf_init(&b);
	for (int l = 0; l < L; l++)
		for (int hd = 0; hd < H; hd++) {
			int x0 = 16 + hd * (bw + gap), y0 = l * row_h + 20;
			bool sel = r->selected && l == s->sel_layer && hd == s->sel_head;
			char name[48];
			snprintf(name, sizeof name, "%d.%d%s%s", l, hd,
				 session_head_ablated(s, l, hd) ? " ablated" : "", sel ? " (selected)" : "");
			render_buf_printf(&b, "<g class=\"head\">\n<text x=\"%d\" y=\"%d\" font-size=\"12\"%s>%s</text>\n",
					  x0, y0 - 6, sel ? " font-weight=\"bold\"" : "", name);
			ex_svg_badge(&b, x0 + ex_text_px(render_width(name), 12) + 6, y0 - 6,
				     role_of(s, r, l, hd));
			struct ex_map m = { .a = session_att(s, l, hd), .T = T, .o = &s->opt };
			ex_svg_map(&b, &m, x0, y0, cs);
			ex_svg_frame(&b, x0, y0, side, side, sel);
			render_buf_puts(&b, "</g>\n");
		}
	ex_svg_legend(&b, 16, L * row_h + 8, &lg);
	ex_svg_figure(out, w, body_h, tip, heading, sub, &b);
	render_buf_free(&b);
}

/* --------------------------------------------------------------- exports */

static enum render_style text_style(enum export_format f)
{
	return f == EXPORT_ASCII ? RENDER_ASCII : f == EXPORT_ANSI ? RENDER_ANSI : RENDER_UNICODE;
}

/* The text form of one head: the shading with masked cells marked. */
static void heatmap_text(const struct session *s, const struct export_req *r, const float *a,
			 bool diff, char **labels, const char *opts, enum export_format f,
			 struct render_buf *out)
{
	int layer = r->layer, head = r->head, T = s->n_tokens;
	char title[1024], role[64] = "";
	const struct head_scores *sc = role_of(s, r, layer, head);
	if (sc && sc->role != HEAD_BROAD) {
		strcpy(role, ", role ");
		heads_role_text(sc, role + 7, sizeof role - 7);
	}
	snprintf(title, sizeof title, "head %d.%d (layer %d, head %d)%s%s%s%s, model %s, %d tokens\noptions: %s",
		 layer, head, layer, head,
		 session_head_ablated(s, layer, head) ? " ablated (output zeroed; attention shown)" : "",
		 diff || s->heat != HEAT_WEIGHTS ? ": " : "",
		 diff ? "weights minus the native run's" : s->heat != HEAT_WEIGHTS ? heat_kind_name(s->heat) : "",
		 role, ex_model_name(s), T, opts);
	float *m = ex_masked_copy(&s->opt, a, T);
	struct render_head_spec sp = {
		.att = m, .T = T, .labels = labels, .style = text_style(f),
		.max_width = 0, .title = title,
		.what = diff ? "the weight is" : heat_kind_legend(s->heat), .diverging = diff,
	};
	render_head(out, &sp);
	free(m);
}

int export_heatmap_req(const struct session *s, const struct export_req *r, enum export_format f,
		       struct render_buf *out, struct err *e)
{
	size_t start = out->len;
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	int layer = r->layer, head = r->head;
	if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
		return err_set(e, "head %d.%d does not exist (layers 0-%d, heads 0-%d)", layer, head,
			       c->n_layer - 1, c->n_head - 1);
	if (f == EXPORT_PNG)
		return err_set(e, "export heatmap: png is made from the svg (export_run)");
	int T = s->n_tokens;
	float *d = r->diff ? session_diff(s, layer, head) : NULL;
	const float *a = d ? d : session_att(s, layer, head);
	const float *raw = d ? d : session_heat_values(s, layer, head);
	const char *key = d ? "diff" : s->heat == HEAT_WEIGHTS ? "weights" : heat_kind_name(s->heat);
	char opts[512];
	export_describe_options(s, opts, sizeof opts);
	char **labels = session_labels(s);

	switch (f) {
	case EXPORT_TXT:
	case EXPORT_ASCII:
	case EXPORT_ANSI:
		heatmap_text(s, r, a, d != NULL, labels, opts, f, out);
		break;
	case EXPORT_CSV:
		csv_header(out, labels, T, false);
		csv_rows(out, raw, labels, T, layer, head, false);
		break;
	case EXPORT_JSON: {
		json_t *root = ex_json_head_obj(s, labels, true);
		ju_set(root, "layer", json_integer(layer));
		ju_set(root, "head", json_integer(head));
		if (s->heat != HEAT_WEIGHTS && !d) /* the weights' JSON stays as it always was */
			ju_set(root, "heat", json_string(heat_kind_name(s->heat)));
		ju_set(root, key, json_matrix(raw, T));
		ex_json_emit(out, root);
		break;
	}
	default:
		svg_heatmap(out, s, r, labels, opts, a, d != NULL);
		break;
	}
	render_labels_free(labels, T);
	free(d);
	if (f == EXPORT_ASCII)
		ex_to_ascii(out, start);
	return 0;
}

int export_heatmap(const struct session *s, int layer, int head, enum export_format f,
		   struct render_buf *out, struct err *e)
{
	struct export_req r = { .layer = layer, .head = head };
	return export_heatmap_req(s, &r, f, out, e);
}

int export_heatmap_diff(const struct session *s, int layer, int head, enum export_format f,
			struct render_buf *out, struct err *e)
{
	struct export_req r = { .layer = layer, .head = head, .diff = true };
	return export_heatmap_req(s, &r, f, out, e);
}

/* Layers l0 .. l1-1 as the text grid: masked cells marked, badges when
 * asked, the selected head bracketed only with r->selected. */
static void grid_text(const struct session *s, const struct export_req *r, int l0, int l1,
		      enum export_format f, struct render_buf *out)
{
	int T = s->n_tokens, H = s->model->cfg.n_head, n = (l1 - l0) * H;
	const float **att = xmalloc((size_t)n * sizeof *att);
	float **masked = xmalloc((size_t)n * sizeof *masked);
	bool *abl = xmalloc((size_t)n * sizeof *abl);
	for (int l = l0; l < l1; l++)
		for (int h = 0; h < H; h++) {
			int k = (l - l0) * H + h;
			masked[k] = ex_masked_copy(&s->opt, session_att(s, l, h), T);
			att[k] = masked[k];
			abl[k] = session_head_ablated(s, l, h);
		}
	const char **badges = ex_badges(r->roles ? r->roles + l0 * H : NULL, n);
	struct render_grid_spec sp = {
		.att = att, .L = l1 - l0, .H = H, .T = T, .ablated = abl, .badges = badges,
		.sel_layer = r->selected && s->sel_layer >= l0 ? s->sel_layer - l0 : -1,
		.sel_head = r->selected ? s->sel_head : -1,
		.style = text_style(f), .cell = 16, .max_width = 0,
		.what = heat_kind_legend(s->heat),
	};
	render_grid(out, &sp);
	bool any = false;
	for (int k = 0; badges && k < n; k++)
		any |= badges[k][0] != '\0';
	if (any)
		render_buf_puts(out, EX_BADGE_LEGEND);
	for (int k = 0; k < n; k++)
		free(masked[k]);
	free(masked);
	free(badges);
	free(att);
	free(abl);
}

int export_grid_range(const struct session *s, const struct export_req *r, int l0, int l1,
		      enum export_format f, struct render_buf *out)
{
	size_t start = out->len;
	const struct model_config *c = &s->model->cfg;
	int T = s->n_tokens, H = c->n_head;
	char opts[512];
	export_describe_options(s, opts, sizeof opts);
	char **labels = session_labels(s);

	switch (f) {
	case EXPORT_TXT:
	case EXPORT_ASCII:
	case EXPORT_ANSI:
		render_buf_printf(out, "model %s, %d tokens", ex_model_name(s), T);
		if (l1 - l0 == 1 && c->n_layer > 1)
			render_buf_printf(out, ", layer %d", l0);
		render_buf_printf(out, "\noptions: %s\n", opts);
		grid_text(s, r, l0, l1, f, out);
		break;
	case EXPORT_CSV:
		csv_header(out, labels, T, true);
		for (int l = l0; l < l1; l++)
			for (int h = 0; h < H; h++)
				csv_rows(out, session_heat_values(s, l, h), labels, T, l, h, true);
		break;
	case EXPORT_JSON: {
		json_t *root = ex_json_head_obj(s, labels, true);
		json_t *heads = ju_check(json_array());
		for (int l = l0; l < l1; l++)
			for (int h = 0; h < H; h++) {
				json_t *o = ju_check(json_object());
				ju_set(o, "layer", json_integer(l));
				ju_set(o, "head", json_integer(h));
				ju_set(o, "ablated", json_boolean(session_head_ablated(s, l, h)));
				if (r->roles) {
					char role[48];
					heads_role_text(role_of(s, r, l, h), role, sizeof role);
					ju_set(o, "role", json_string(role));
				}
				ju_set(o, s->heat == HEAT_WEIGHTS ? "weights" : heat_kind_name(s->heat),
				       json_matrix(session_heat_values(s, l, h), T));
				ju_append(heads, o);
			}
		ju_set(root, "heads", heads);
		ex_json_emit(out, root);
		break;
	}
	default:
		svg_grid(out, s, r, opts);
		break;
	}
	render_labels_free(labels, T);
	if (f == EXPORT_ASCII)
		ex_to_ascii(out, start);
	return 0;
}

int export_grid_req(const struct session *s, const struct export_req *r, enum export_format f,
		    struct render_buf *out, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	if (f == EXPORT_PNG)
		return err_set(e, "export grid: png is made from the svg (export_run)");
	return export_grid_range(s, r, 0, s->model->cfg.n_layer, f, out);
}

int export_grid(const struct session *s, enum export_format f, struct render_buf *out,
		struct err *e)
{
	struct export_req r = { 0 };
	return export_grid_req(s, &r, f, out, e);
}

/* ----------------------------------------------------------------- stats */

/* The summary numbers of the session's run. */
struct summary {
	double loss, base_loss, ppl, kl, top1, dloss, kv, kv_native;
};

static void summarize(const struct session *s, struct summary *m)
{
	m->loss = s->run->loss;
	m->base_loss = s->base->loss;
	m->ppl = exp(m->loss);
	m->kl = s->cmp.kl;
	m->top1 = s->cmp.top1_agree;
	m->dloss = s->cmp.delta_loss;
	m->kv = session_kv_bytes(s, &s->opt);
	m->kv_native = session_kv_bytes(s, &s->native);
}

void export_stats_txt(const struct session *s, bool timing, struct render_buf *b)
{
	struct summary m;
	summarize(s, &m);
	const struct model_config *c = &s->model->cfg;
	char opts[512], kv[32], kvn[32];
	export_describe_options(s, opts, sizeof opts);
	format_bytes(m.kv, kv, sizeof kv);
	format_bytes(m.kv_native, kvn, sizeof kvn);
	render_buf_printf(b, "model         %s\n", ex_model_name(s));
	render_buf_printf(b, "options       %s\n", opts);
	render_buf_printf(b, "tokens        %d\n", s->n_tokens);
	if (!cfg_has_head(c)) {
		render_buf_puts(b, "loss          - (no output head: loss, KL and top-1 need one)\n");
		render_buf_printf(b, "drift         %.6f (||h - h_base|| / ||h_base|| of the output, mean "
				  "over positions)\n", s->cmp.drift);
	} else if (isnan(m.loss)) {
		render_buf_puts(b, "loss          - (one token: nothing to predict)\n");
		render_buf_puts(b, "perplexity    -\n");
	} else {
		render_buf_printf(b, "loss          %.4f nats (baseline %.4f, delta %+.4f)\n", m.loss,
				  m.base_loss, m.dloss);
		render_buf_printf(b, "perplexity    %.3f\n", m.ppl);
	}
	if (cfg_has_head(c)) {
		render_buf_printf(b, "KL vs base    %.6f nats (mean over positions)\n", m.kl);
		render_buf_printf(b, "top-1 agree   %.1f%%\n", 100.0 * m.top1);
	}
	render_buf_printf(b, "KV cache      %s (native %s; float32, %d tokens)\n", kv, kvn, s->n_tokens);
	if (timing)
		render_buf_printf(b, "forward       %.2f ms\n", s->run->forward_ms);
	render_buf_puts(b, "\nlayer  head  entropy  max_weight\n");
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++) {
			double ent, mx;
			head_entropy(s->run, l, h, &ent, &mx);
			render_buf_printf(b, "%5d  %4d  %7.4f  %10.4f%s\n", l, h, ent, mx,
					  session_head_ablated(s, l, h) ? "  ablated" : "");
		}
	render_buf_puts(b, "(entropy: mean over query rows, nats)\n");
}

/* CSV cell of a number, empty when it is not finite. */
static void csv_number(struct render_buf *b, double v)
{
	if (isfinite(v))
		render_buf_printf(b, "%.9g", v);
}

int export_stats(const struct session *s, enum export_format f, struct render_buf *out,
		 struct err *e)
{
	if (f == EXPORT_ANSI || f == EXPORT_SVG)
		return err_set(e, "export stats: format %s is not available (use txt, ascii, csv or json)",
			       export_format_name(f));
	size_t start = out->len;
	if (session_need_run(s, e))
		return -1;
	const struct model_config *c = &s->model->cfg;
	struct summary m;
	summarize(s, &m);
	char opts[512];
	export_describe_options(s, opts, sizeof opts);

	if (f == EXPORT_TXT || f == EXPORT_ASCII) {
		export_stats_txt(s, false, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		return 0;
	}
	if (f == EXPORT_CSV) {
		render_buf_puts(out, "model,options,tokens,loss,baseline_loss,delta_loss,perplexity,"
				     "kl_vs_baseline,top1_agree,kv_cache_bytes,kv_cache_bytes_native,"
				     "layer,head,entropy,max_weight,ablated\n");
		char *name = ex_clean_text(ex_model_name(s));
		for (int l = 0; l < c->n_layer; l++)
			for (int h = 0; h < c->n_head; h++) {
				double ent, mx;
				head_entropy(s->run, l, h, &ent, &mx);
				ex_csv_quoted(out, name);
				render_buf_puts(out, ",");
				ex_csv_quoted(out, opts);
				render_buf_printf(out, ",%d,", s->n_tokens);
				const double nums[] = { m.loss, m.base_loss, m.dloss, m.ppl, m.kl, m.top1 };
				for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) {
					csv_number(out, nums[k]);
					render_buf_puts(out, ",");
				}
				render_buf_printf(out, "%.0f,%.0f,%d,%d,%.9g,%.9g,%d\n", m.kv, m.kv_native, l, h,
						  ent, mx, session_head_ablated(s, l, h) ? 1 : 0);
			}
		free(name);
		return 0;
	}
	/* json */
	json_t *root = ex_json_head_obj(s, NULL, false);
	ju_set(root, "n_tokens", json_integer(s->n_tokens));
	ju_set(root, "loss", ju_real(m.loss));
	ju_set(root, "baseline_loss", ju_real(m.base_loss));
	ju_set(root, "delta_loss", ju_real(m.dloss));
	ju_set(root, "perplexity", ju_real(m.ppl));
	ju_set(root, "kl_vs_baseline", ju_real(m.kl));
	ju_set(root, "top1_agree", ju_real(m.top1));
	ju_set(root, "output_drift", ju_real(s->cmp.drift));
	ju_set(root, "kv_cache_bytes", json_integer((json_int_t)m.kv));
	ju_set(root, "kv_cache_bytes_native", json_integer((json_int_t)m.kv_native));
	json_t *heads = ju_check(json_array());
	for (int l = 0; l < c->n_layer; l++)
		for (int h = 0; h < c->n_head; h++) {
			double ent, mx;
			head_entropy(s->run, l, h, &ent, &mx);
			json_t *o = ju_check(json_object());
			ju_set(o, "layer", json_integer(l));
			ju_set(o, "head", json_integer(h));
			ju_set(o, "entropy", ju_real(ent));
			ju_set(o, "max_weight", ju_real(mx));
			ju_set(o, "ablated", json_boolean(session_head_ablated(s, l, h)));
			ju_append(heads, o);
		}
	ju_set(root, "heads", heads);
	ex_json_emit(out, root);
	return 0;
}
