/*
 * export-groups.c — `export groups` and `show groups`: which query heads
 * read which key/value head under the current `attn` setting (query head
 * h reads K/V head h / (H / G)), and what the KV cache costs there beside
 * MHA, every GQA group count that divides H, and MQA (export.h).
 *
 * Needs a model, not a text: the cache is counted for the current tokens,
 * or the model's context when there is no text, the window's positions
 * under a windowed mask (model.h: kv_positions), float32 as the engine
 * keeps it.  Text and ASCII: the groups and a table of the sizes; CSV one
 * row per query head; JSON the groups and the sizes; SVG the query heads
 * above their K/V heads joined by lines, in one colour per group, and one
 * bar per setting.
 */
#include "export.h"
#include "export-parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"

#define MAX_SETTINGS 64

/* The model's sharing and the cache sizes of every setting. */
struct groups {
	int L, H, G, native, D, T, kept; /* kept: positions the cache holds */
	bool no_text;
	int n;                        /* settings, most K/V heads first */
	int kv[MAX_SETTINGS];
	char name[MAX_SETTINGS][16];  /* "MHA", "GQA-2", "MQA" */
	double bytes[MAX_SETTINGS];
};

static void groups_of(const struct session *s, struct groups *g)
{
	const struct model_config *c = &s->model->cfg;
	memset(g, 0, sizeof *g);
	g->L = c->n_layer;
	g->H = c->n_head;
	g->G = s->opt.kv_heads;
	g->native = s->native.kv_heads;
	g->D = cfg_d_head(c);
	g->no_text = s->n_tokens == 0;
	g->T = g->no_text ? c->context : s->n_tokens;
	g->kept = kv_positions(&s->opt, g->T);
	for (int k = g->H; k >= 1 && g->n < MAX_SETTINGS; k--) {
		if (g->H % k)
			continue;
		int i = g->n++;
		g->kv[i] = k;
		if (k == g->H)
			snprintf(g->name[i], sizeof g->name[i], g->H == 1 ? "MHA=MQA" : "MHA");
		else if (k == 1)
			snprintf(g->name[i], sizeof g->name[i], "MQA");
		else
			snprintf(g->name[i], sizeof g->name[i], "GQA-%d", k);
		g->bytes[i] = kv_cache_bytes(g->L, k, g->kept, g->D, 4);
	}
}

/* What the current setting is called ("MHA", "GQA-2", "MQA"). */
static const char *current_name(const struct groups *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->kv[i] == g->G)
			return g->name[i];
	return "?";
}

/* "2 x 4 layers x 2 K/V heads x 42 positions x 32 dims x 4 bytes = 84 KiB" */
static void arithmetic(const struct groups *g, char *buf, size_t size)
{
	char b[32];
	format_bytes(kv_cache_bytes(g->L, g->G, g->kept, g->D, 4), b, sizeof b);
	snprintf(buf, size, "2 (K and V) x %d layers x %d K/V head%s x %d positions x %d dims x 4 "
		 "bytes (float32) = %s", g->L, g->G, g->G == 1 ? "" : "s", g->kept, g->D, b);
}

/* ------------------------------------------------------------------ text */

static void groups_text(const struct session *s, const struct groups *g, struct render_buf *b)
{
	int per = g->H / g->G;
	char cmd[32];
	if (g->G == g->H || g->G == 1)
		snprintf(cmd, sizeof cmd, "attn %s", g->G == g->H ? "mha" : "mqa");
	else
		snprintf(cmd, sizeof cmd, "attn gqa %d", g->G);
	render_buf_printf(b, "K/V sharing of %s: %d query heads read %d K/V head%s (%s, %s; "
			  "native %d)\n", ex_model_name(s), g->H, g->G, g->G == 1 ? "" : "s",
			  current_name(g), cmd, g->native);
	for (int k = 0; k < g->G; k++) {
		render_buf_printf(b, "  K/V head %d <- query head%s", k, per == 1 ? "" : "s");
		for (int h = k * per; h < (k + 1) * per; h++)
			render_buf_printf(b, " %d", h);
		render_buf_puts(b, "\n");
	}
	render_buf_printf(b, "query head h reads K/V head h / %d (every layer alike)\n", per);
	char line[256];
	arithmetic(g, line, sizeof line);
	render_buf_printf(b, "KV cache for %d tokens%s%s:\n  %s\n", g->T,
			  g->no_text ? " (no text: the full context)" : "",
			  g->kept < g->T ? " under the window (the last positions only)" : "", line);
	for (int i = 0; i < g->n; i++) {
		char sz[32];
		format_bytes(g->bytes[i], sz, sizeof sz);
		bool cur = g->kv[i] == g->G, nat = g->kv[i] == g->native;
		render_buf_printf(b, "  %-8s %3d K/V head%s %10s%s\n", g->name[i], g->kv[i],
				  g->kv[i] == 1 ? " " : "s", sz,
				  cur && nat ? "  (current, native)" : cur ? "  (current)"
				  : nat ? "  (native)" : "");
	}
}

static void groups_csv(const struct groups *g, struct render_buf *b)
{
	render_buf_puts(b, "\"query_head\",\"kv_head\",\"kv_heads\",\"kv_cache_bytes\"\n");
	double bytes = kv_cache_bytes(g->L, g->G, g->kept, g->D, 4);
	for (int h = 0; h < g->H; h++)
		render_buf_printf(b, "%d,%d,%d,%.0f\n", h, h / (g->H / g->G), g->G, bytes);
}

static void groups_json(const struct session *s, const struct groups *g, struct render_buf *b)
{
	json_t *root = ex_json_head_obj(s, NULL, false);
	ju_set(root, "query_heads", json_integer(g->H));
	ju_set(root, "kv_heads", json_integer(g->G));
	ju_set(root, "native_kv_heads", json_integer(g->native));
	json_t *reads = ju_check(json_array()), *groups = ju_check(json_array());
	for (int h = 0; h < g->H; h++)
		ju_append(reads, json_integer(h / (g->H / g->G)));
	for (int k = 0; k < g->G; k++) {
		json_t *q = ju_check(json_array());
		for (int h = k * (g->H / g->G); h < (k + 1) * (g->H / g->G); h++)
			ju_append(q, json_integer(h));
		ju_append(groups, q);
	}
	ju_set(root, "reads", reads);
	ju_set(root, "groups", groups);
	json_t *kv = ju_check(json_object()), *set = ju_check(json_array());
	ju_set(kv, "tokens", json_integer(g->T));
	ju_set(kv, "positions", json_integer(g->kept));
	ju_set(kv, "bytes_per_element", json_integer(4));
	ju_set(kv, "bytes", json_integer((json_int_t)kv_cache_bytes(g->L, g->G, g->kept, g->D, 4)));
	for (int i = 0; i < g->n; i++) {
		json_t *o = ju_check(json_object());
		ju_set(o, "name", json_string(g->name[i]));
		ju_set(o, "kv_heads", json_integer(g->kv[i]));
		ju_set(o, "bytes", json_integer((json_int_t)g->bytes[i]));
		ju_append(set, o);
	}
	ju_set(kv, "settings", set);
	ju_set(root, "kv_cache", kv);
	ex_json_emit(b, root);
}

/* ------------------------------------------------------------------- svg */

static const char *const group_colors[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
					    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };
#define N_COLORS 8

#define BOX_W 64  /* a query head's box, at most */
#define BOX_H 34
#define ROW_GAP 110 /* between the query row and the K/V row */

/* The boxes and the lines between them, at y; their height. */
static int svg_wiring(struct render_buf *b, const struct groups *g, int x0, int y, int width)
{
	int per = g->H / g->G;
	int slot = width / g->H, bw = slot - 8 < BOX_W ? slot - 8 : BOX_W;
	bw = bw < 16 ? 16 : bw;
	int fs = bw >= 40 ? 12 : 9, ky = y + BOX_H + ROW_GAP;
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333333\">query heads "
			  "(one per head, every layer alike)</text>\n", x0, y - 8);
	for (int h = 0; h < g->H; h++) { /* lines first, under the boxes */
		int k = h / per;
		int qx = x0 + h * slot + slot / 2;
		int kx = x0 + (int)((k + 0.5) * width / g->G);
		render_buf_printf(b, "<line class=\"reads\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
				  "stroke=\"%s\" stroke-width=\"2\"/>\n", qx, y + BOX_H, kx, ky,
				  group_colors[k % N_COLORS]);
	}
	for (int h = 0; h < g->H; h++) {
		int qx = x0 + h * slot + slot / 2;
		render_buf_printf(b, "<g class=\"query\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				  "rx=\"4\" fill=\"%s\" fill-opacity=\"0.25\" stroke=\"%s\"/><text x=\"%d\" "
				  "y=\"%d\" font-size=\"%d\" text-anchor=\"middle\">%s%d</text></g>\n",
				  qx - bw / 2, y, bw, BOX_H, group_colors[(h / per) % N_COLORS],
				  group_colors[(h / per) % N_COLORS], qx, y + BOX_H / 2 + fs / 3, fs,
				  bw >= 40 ? "Q " : "", h);
	}
	int kw = width / g->G - 16 < 180 ? width / g->G - 16 : 180;
	kw = kw < 16 ? 16 : kw;
	for (int k = 0; k < g->G; k++) {
		int kx = x0 + (int)((k + 0.5) * width / g->G);
		render_buf_printf(b, "<g class=\"kv\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				  "rx=\"4\" fill=\"%s\" stroke=\"#000000\" stroke-width=\"0.8\"/><text x=\"%d\" "
				  "y=\"%d\" font-size=\"%d\" text-anchor=\"middle\" fill=\"#ffffff\">%s%d</text>"
				  "</g>\n", kx - kw / 2, ky, kw, BOX_H, group_colors[k % N_COLORS], kx,
				  ky + BOX_H / 2 + fs / 3, fs, kw >= 64 ? "K/V " : "", k);
	}
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#333333\">key/value "
			  "heads: what the KV cache keeps, per layer and position</text>\n", x0,
			  ky + BOX_H + 18);
	return BOX_H + ROW_GAP + BOX_H + 26;
}

/* One bar per setting, the current one outlined; their height. */
static int svg_bars(struct render_buf *b, const struct groups *g, int x0, int y, int width)
{
	double most = g->bytes[0];
	int label = 150, bar_w = width - label - 130;
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">KV cache "
			  "for %d tokens%s, float32</text>\n", x0, y + 12, g->T,
			  g->no_text ? " (no text: the full context)" : "");
	for (int i = 0; i < g->n; i++) {
		int yy = y + 24 + i * 24;
		bool cur = g->kv[i] == g->G;
		int w = most > 0 ? (int)(bar_w * g->bytes[i] / most + 0.5) : 0;
		char sz[32];
		format_bytes(g->bytes[i], sz, sizeof sz);
		render_buf_printf(b, "<g class=\"setting\"><text x=\"%d\" y=\"%d\" font-size=\"12\"%s>%s, "
				  "%d K/V</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"16\" "
				  "fill=\"%s\"%s/><text x=\"%d\" y=\"%d\" font-size=\"12\">%s%s%s</text></g>\n",
				  x0, yy + 12, cur ? " font-weight=\"bold\"" : "", g->name[i], g->kv[i],
				  x0 + label, yy, w > 1 ? w : 1, cur ? "#1f77b4" : "#b8c7dc",
				  cur ? " stroke=\"#000000\" stroke-width=\"1.5\"" : "", x0 + label + w + 6,
				  yy + 12, sz, cur ? "  current" : "",
				  g->kv[i] == g->native ? "  native" : "");
	}
	char line[256];
	arithmetic(g, line, sizeof line);
	int yy = y + 24 + g->n * 24 + 14;
	render_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\">current: ", x0, yy);
	ex_xml_text(b, line);
	render_buf_puts(b, "</text>\n");
	return yy - y + 8;
}

static void groups_svg(const struct session *s, const struct groups *g, struct render_buf *out)
{
	int w = g->H * 72 + 40;
	w = w < 900 ? 900 : w > 2400 ? 2400 : w;
	struct render_buf b;
	render_buf_init(&b);
	int h = 20 + svg_wiring(&b, g, 20, 20, w - 40);
	h += 10 + svg_bars(&b, g, 20, h + 10, w - 40);
	char heading[256], sub[1000];
	snprintf(heading, sizeof heading, "%s: %d query heads share %d key/value head%s (%s)",
		 ex_model_name(s), g->H, g->G, g->G == 1 ? "" : "s", current_name(g));
	snprintf(sub, sizeof sub, "Each query head reads the key/value head below it: query head h "
		 "reads K/V head h / %d, in every layer. Fewer K/V heads keep a smaller KV cache "
		 "(the bars); the model was trained with %d. Going down `attn` mean-pools the K and V "
		 "weights of each group; going up it copies them.", g->H / g->G, g->native);
	ex_svg_figure(out, w, h, heading, heading, sub, &b);
	render_buf_free(&b);
}

int export_groups(const struct session *s, const struct export_req *r, enum export_format f,
		  struct render_buf *out, struct err *e)
{
	(void)r;
	if (session_need_model(s, e))
		return -1;
	if (f == EXPORT_PNG)
		return err_set(e, "export groups: png is made from the svg (export_run)");
	struct groups g;
	groups_of(s, &g);
	size_t start = out->len;
	switch (f) {
	case EXPORT_CSV:
		groups_csv(&g, out);
		break;
	case EXPORT_JSON:
		groups_json(s, &g, out);
		break;
	case EXPORT_SVG:
		groups_svg(s, &g, out);
		break;
	default:
		groups_text(s, &g, out);
		if (f == EXPORT_ASCII)
			ex_to_ascii(out, start);
		break;
	}
	return 0;
}
