/*
 * cmd-kv.c — `kv`: the KV-cache size under MHA, every GQA grouping and MQA,
 * for the loaded model or given numbers; for the loaded model also the
 * memory at long context: the attention a run keeps to draw every head,
 * O(T^2), beside the KV cache, O(T), at T = 512 ... the context, and what
 * the current run and its baseline hold.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "decode.h"
#include "render.h"

/* Writes a finished buffer to s->out. */
static void emit(struct session *s, struct render_buf *b)
{
	if (b->len)
		fwrite(b->data, 1, b->len, s->out);
	render_buf_free(b);
}

/* Bytes of the attention weights a run keeps for T tokens: every layer's
 * (H, T, T) in float32 (model.h run.att with RUN_ATTN). */
static double attention_bytes(int L, int H, int T)
{
	return (double)L * H * T * T * sizeof(float);
}

static void long_row(struct render_buf *b, const struct session *s, int T, int B,
		     const char *note)
{
	const struct model_config *c = &s->model->cfg;
	int G = s->opt.kv_heads;
	double att = attention_bytes(c->n_layer, c->n_head, T);
	double kv = kv_cache_bytes(c->n_layer, G, kv_positions(&s->opt, T), cfg_d_head(c), B);
	char a[32], k[32];
	format_bytes(att, a, sizeof a);
	format_bytes(kv, k, sizeof k);
	render_buf_printf(b, "  %7d  %10s  %10s  %9.3gx%s\n", T, a, k, att / kv, note);
}

/* The long-context table: T = 512, 1024, ... up to the context (and the
 * context itself; only it when it is under 512), the current text's T,
 * then what the session's runs hold. */
static void long_context(struct render_buf *b, const struct session *s, int B)
{
	const struct model_config *c = &s->model->cfg;
	render_buf_printf(b, "memory at long context: the attention a run keeps to draw every head\n"
			     "(layers x heads x T x T x 4 bytes, O(T^2)) beside the KV cache above\n"
			     "(%d kv heads, %d bytes per element, O(T)):\n"
			     "   tokens   attention    KV cache  attention/KV\n", s->opt.kv_heads, B);
	int T = c->context < 512 ? c->context : 512;
	for (; T <= c->context; T = T * 2 > c->context && T < c->context ? c->context : T * 2)
		long_row(b, s, T, B, T == c->context ? "  (the context)" : "");
	bool listed = s->n_tokens == c->context;
	for (int t = 512; t < c->context && !listed; t *= 2)
		listed = s->n_tokens == t;
	if (s->n_tokens > 0 && !listed)
		long_row(b, s, s->n_tokens, B, "  (the current text)");
	if (!s->run || !s->run_valid)
		return;
	char run[32], base[32];
	format_bytes((double)run_bytes(s->run), run, sizeof run);
	bool two = s->base_own && s->base == s->base_own;
	format_bytes(two ? (double)run_bytes(s->base_own) : 0, base, sizeof base);
	render_buf_printf(b, "the current run holds %s for %d tokens (attention, logits and\n"
			     "activations)%s%s%s\n", run, s->n_tokens,
			  two ? "; the baseline run, under the native options, another " : "",
			  two ? base : "", two ? "" : "; the baseline is the same run (native options)");
}

static void kv_line(struct render_buf *b, const char *name, int g, double bytes, const char *mark)
{
	char sz[32];
	format_bytes(bytes, sz, sizeof sz);
	render_buf_printf(b, "  %-8s %4d kv head%s  %10s%s\n", name, g, g == 1 ? " " : "s", sz, mark);
}

extern const struct cmd_entry cmd_kv_entry;

static int kv_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_kv_entry, argc, argv, &a, e) != 0)
		return -1;
	/* the options in the order of kv_opts */
	int val[6];
	bool given[6];
	for (int k = 0; k < 6; k++) {
		given[k] = a.given[k];
		val[k] = (int)a.num[k];
	}
	enum { LAYERS, HEADS, KVH, DHEAD, TOKENS, BYTES };
	const struct model *m = s->model;
	bool no_text = false;
	if (!m && !(given[LAYERS] && given[HEADS] && given[DHEAD] && given[TOKENS]))
		return err_set(e, "kv: no model loaded; give --layers, --heads, --head-dim and --tokens");
	if (m) {
		const struct model_config *c = &m->cfg;
		if (!given[LAYERS])
			val[LAYERS] = c->n_layer;
		if (!given[HEADS])
			val[HEADS] = c->n_head;
		if (!given[DHEAD])
			val[DHEAD] = cfg_d_head(c);
		if (!given[TOKENS]) {
			val[TOKENS] = s->n_tokens > 0 ? s->n_tokens : c->context;
			no_text = s->n_tokens == 0;
		}
	}
	if (!given[BYTES])
		val[BYTES] = 4;
	int L = val[LAYERS], H = val[HEADS], D = val[DHEAD], T = val[TOKENS], B = val[BYTES];
	/* under a windowed mask a decoder keeps only the window's positions */
	int kept = m && !given[TOKENS] ? kv_positions(&s->opt, T) : T;
	if (given[KVH] && H % val[KVH])
		return err_set(e, "kv: --kv-heads %d must divide --heads %d", val[KVH], H);
	/* marks for the loaded model, when its shape is what is computed */
	bool own = m && !given[LAYERS] && !given[HEADS] && !given[DHEAD];
	int native = own ? s->native.kv_heads : -1, current = own ? s->opt.kv_heads : -1;

	struct render_buf b;
	render_buf_init(&b);
	render_buf_printf(&b, "KV cache for %d layer%s, %d query head%s, head dim %d, %d token%s%s, %d byte%s per element%s:\n",
			  L, L == 1 ? "" : "s", H, H == 1 ? "" : "s", D, T, T == 1 ? "" : "s",
			  no_text ? " (no text: the full context)" : "", B, B == 1 ? "" : "s",
			  B == 4 ? " (float32)" : B == 2 ? " (fp16)" : "");
	for (int g = H; g >= 1; g--) {
		bool listed = g == H || g == 1 || (given[KVH] ? g == val[KVH] : H % g == 0);
		if (!listed)
			continue;
		char name[32], mark[48] = "";
		if (g == H)
			snprintf(name, sizeof name, H == 1 ? "MHA=MQA" : "MHA");
		else if (g == 1)
			snprintf(name, sizeof name, "MQA");
		else
			snprintf(name, sizeof name, "GQA-%d", g);
		if (g == native && g == current)
			snprintf(mark, sizeof mark, "  (native, current)");
		else if (g == native)
			snprintf(mark, sizeof mark, "  (native)");
		else if (g == current)
			snprintf(mark, sizeof mark, "  (current)");
		kv_line(&b, name, g, kv_cache_bytes(L, g, kept, D, B), mark);
	}
	if (kept < T)
		render_buf_printf(&b, "mask window %d: a decoder keeps the last %d positions of the %d\n",
				  s->opt.window, kept, T);
	render_buf_puts(&b, "bytes = 2 (K and V) x layers x kv_heads x tokens x head_dim x bytes per element\n");
	if (own)
		long_context(&b, s, B);
	emit(s, &b);
	return 0;
}

static const struct cmd_opt kv_opts[] = {
	{ "--layers", CMD_OPT_INT, "N", 1, CFG_MAX_LAYERS, "layers" },
	{ "--heads", CMD_OPT_INT, "N", 1, CFG_MAX_HEADS, "heads" },
	{ "--kv-heads", CMD_OPT_INT, "N", 1, CFG_MAX_HEADS, "kv-heads" },
	{ "--head-dim", CMD_OPT_INT, "N", 1, 1 << 16, "head-dim" },
	{ "--tokens", CMD_OPT_INT, "N", 1, 1 << 30, "tokens" },
	{ "--bytes", CMD_OPT_INT, "N", 1, 16, "bytes" },
	{ NULL },
};

const struct cmd_entry cmd_kv_entry = {
	.name = "kv",
	.usage = "",
	.opts = kv_opts,
	.help = "KV-cache size under MHA, GQA and MQA for the loaded model or the given numbers",
	.long_help = "Defaults come from the loaded model and the current text (bytes 4: float32, as\n"
		     "the engine runs; --bytes 2 for fp16). Without --kv-heads every GQA group count\n"
		     "that divides the heads is listed. With no model, give --layers, --heads,\n"
		     "--head-dim and --tokens. Example: kv --layers 80 --heads 64 --kv-heads 8\n"
		     "--head-dim 128 --tokens 4096 --bytes 2 (10 GiB MHA, 1.25 GiB GQA-8, 160 MiB MQA).\n"
		     "For the loaded model (no shape given) a second table: the attention a run\n"
		     "keeps to draw every head (layers x heads x T x T x 4 bytes) beside the KV\n"
		     "cache, at T = 512, 1024, ... the context and the current text, then the\n"
		     "bytes the current run and the baseline run hold.",
	.min_args = 0,
	.max_args = 0,
	.exec = kv_exec,
};

