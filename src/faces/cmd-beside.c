/*
 * cmd-beside.c — beside L.H MODEL | beside L.H text TEXT...: one head's
 * attention in two runs side by side: the current text on the loaded
 * model and on another model (same vocabulary: shakespeare beside
 * shakespeare-gqa), or the current text and another text on the loaded
 * model.  Each side under its model's native options.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "loader.h"
#include "render.h"
#include "text-input.h"
#include "tokenizer.h"

/* Display columns of a line, its colour escapes (ESC [ ... m) not counted. */
static int visible_width(const char *line)
{
	struct render_buf plain;
	render_buf_init(&plain);
	for (const char *p = line; *p;) {
		if (p[0] == '\x1b' && p[1] == '[') {
			p += 2;
			while (*p && !(*p >= 0x40 && *p <= 0x7e))
				p++;
			if (*p)
				p++;
		} else {
			render_buf_put(&plain, p++, 1);
		}
	}
	int w = render_width(plain.data ? plain.data : "");
	render_buf_free(&plain);
	return w;
}

/* line in w columns: padded, or cut with '…' when wider (only prose, a
 * title say, is ever wider: the maps are drawn to fit). */
static void put_padded(struct render_buf *out, const char *line, int w, bool pad)
{
	int vw = visible_width(line);
	if (vw > w) {
		render_pad(out, line, w, RENDER_LEFT, false);
	} else {
		render_buf_puts(out, line);
		if (pad)
			render_buf_repeat(out, " ", w - vw);
	}
}

/* Appends the lines of a and b side by side: a padded to its widest line
 * plus a gap of 3 columns, then b; a line of either wider than half is cut
 * there (a title, say), so that the two fit 2 * half + 3 columns. */
static void side_by_side(struct render_buf *out, const struct render_buf *a,
			 const struct render_buf *b, int half)
{
	int wa = 0;
	for (const char *p = a->data; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, n);
		int w = visible_width(line);
		wa = w > wa ? w : wa;
		free(line);
		p = nl ? nl + 1 : p + n;
	}
	if (wa > half)
		wa = half;
	const char *pa = a->data ? a->data : "", *pb = b->data ? b->data : "";
	while (*pa || *pb) {
		const char *na = strchr(pa, '\n'), *nb = strchr(pb, '\n');
		size_t la = na ? (size_t)(na - pa) : strlen(pa), lb = nb ? (size_t)(nb - pb) : strlen(pb);
		char *line = xstrndup(pa, la), *right = xstrndup(pb, lb);
		put_padded(out, line, wa, true);
		render_buf_repeat(out, " ", 3);
		put_padded(out, right, half, false);
		free(line);
		free(right);
		/* no trailing blanks when the right side has run out */
		while (out->len > 0 && out->data[out->len - 1] == ' ')
			out->len--;
		render_buf_puts(out, "\n");
		pa = na ? na + 1 : pa + la;
		pb = nb ? nb + 1 : pb + lb;
	}
}

/* Removes the legend line render_head ends with from b and returns it
 * (malloc'd), or NULL when there is none. */
static char *cut_legend(struct render_buf *b)
{
	static const char mark[] = "rows: query tokens";
	char *last = NULL;
	for (char *p = b->data; p && (p = strstr(p, mark)); p++)
		if (p == b->data || p[-1] == '\n')
			last = p;
	if (!last)
		return NULL;
	char *line = xstrdup(last);
	b->len = (size_t)(last - b->data);
	b->data[b->len] = '\0';
	return line;
}

/* One head's map of a run of m on tokens into b, titled title, max_width
 * columns wide, drawn in style (cmd_style). */
static int head_of(struct model *m, const int *tokens, int T, int l, int h, const char *title,
		   int max_width, int style, struct render_buf *b, struct err *e)
{
	if (l >= m->cfg.n_layer || h >= m->cfg.n_head)
		return err_set(e, "%s has no head %d.%d (%d layers, %d heads)",
			       m->name ? m->name : "the model", l, h, m->cfg.n_layer, m->cfg.n_head);
	struct run *r = run_new(&m->cfg, 1, T, RUN_ATTN);
	struct run_options o;
	run_options_native(m, &o);
	int rc = model_forward(m, &o, tokens, NULL, 1, T, r, e);
	if (rc == 0) {
		char **labels = render_labels(m->tok, tokens, T);
		struct render_head_spec sp = {
			.att = run_att(r, l, 0, h), .T = T, .labels = labels, .style = (enum render_style)style,
			.max_width = max_width, .title = title,
		};
		render_head(b, &sp);
		render_labels_free(labels, T);
	}
	run_free(r);
	return rc;
}

static int beside_exec(struct session *s, int argc, char **argv, struct err *e)
{
	if (session_need_run(s, e))
		return -1;
	int l, h;
	if (session_parse_head(s, argv[1], &l, &h, e) != 0)
		return -1;
	bool texts = !strcmp(argv[2], "text");
	if (texts ? argc < 4 : argc != 3)
		return err_set(e, "usage: beside L.H MODEL | beside L.H text TEXT...");
	int half = (cmd_out_width(s) - 3) / 2;
	struct render_buf a, b, out;
	render_buf_init(&a);
	render_buf_init(&b);
	render_buf_init(&out);
	struct model *other = NULL;
	int *ids = NULL, n = 0, rc = -1;
	char ta[256], tb[256];
	const char *name = s->model->name ? s->model->name : "the model";
	if (texts) { /* the rest of the line is the other text */
		size_t len = 0;
		for (int i = 3; i < argc; i++)
			len += strlen(argv[i]) + 1;
		char *joined = xmalloc(len + 1), *p = joined;
		for (int i = 3; i < argc; i++)
			p += sprintf(p, "%s%s", i > 3 ? " " : "", argv[i]);
		char *text = text_unescape(joined);
		free(joined);
		int bad = 0;
		rc = model_tokenize(s->model, text, strlen(text), &ids, &n, &bad, e);
		free(text);
		if (rc)
			goto out;
		/* short titles: each has half the width (the model is the loaded one) */
		snprintf(ta, sizeof ta, "head %d.%d, the current text (%d tokens)", l, h, s->n_tokens);
		snprintf(tb, sizeof tb, "head %d.%d, the other text (%d tokens)", l, h, n);
	} else {
		other = model_open(argv[2], e);
		if (!other)
			goto out;
		if (!other->tok || other->cfg.vocab_size != s->model->cfg.vocab_size) {
			rc = err_set(e, "%s has another vocabulary: the same text would be other tokens",
				     argv[2]);
			goto out;
		}
		if (s->n_tokens > other->cfg.context) {
			rc = err_set(e, "%s's context is %d tokens, the text %d", argv[2],
				     other->cfg.context, s->n_tokens);
			goto out;
		}
		snprintf(ta, sizeof ta, "%s %d.%d", name, l, h);
		snprintf(tb, sizeof tb, "%s %d.%d", other->name ? other->name : argv[2], l, h);
	}
	int style = cmd_style(s);
	rc = head_of(s->model, s->tokens, s->n_tokens, l, h, ta, half, style, &a, e);
	if (rc == 0)
		rc = head_of(other ? other : s->model, other ? s->tokens : ids, other ? s->n_tokens : n,
			     l, h, tb, half, style, &b, e);
	if (rc == 0) {
		/* one legend for both, under them */
		char *legend = cut_legend(&a);
		free(cut_legend(&b));
		side_by_side(&out, &a, &b, half);
		if (legend)
			render_buf_puts(&out, legend);
		free(legend);
		fwrite(out.data, 1, out.len, s->out);
	}
out:
	model_free(other);
	free(ids);
	render_buf_free(&a);
	render_buf_free(&b);
	render_buf_free(&out);
	return rc;
}

const struct cmd_entry cmd_beside_entry = {
	.name = "beside",
	.usage = "L.H MODEL | L.H text TEXT...",
	.help = "one head in two runs side by side: the text on another model, or another text",
	.long_help =
		"beside L.H MODEL       the current text on the loaded model and on MODEL (the\n"
		"                       same vocabulary; e.g. shakespeare beside shakespeare-gqa)\n"
		"beside L.H text TEXT   the current text and TEXT (escapes as in text) on the\n"
		"                       loaded model\n"
		"Each side runs under its model's native options; the maps share the\n"
		"terminal's width.",
	.complete = COMPLETE_MODEL,
	.min_args = 2,
	.max_args = -1,
	.exec = beside_exec,
};
