/*
 * test_render.c — the layout helpers (pooling, shading, label widths with
 * CJK, the one-head and grid layouts) on hand-made matrices, then the
 * exports and the show/top/stats/kv/export commands on a real run of a
 * seeded random character model built in-process.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "export.h"
#include "model.h"
#include "render.h"
#include "session.h"
#include "tokenizer.h"

/* ------------------------------------------------------------ helpers */

/* Number of non-overlapping occurrences of needle in hay. */
static int count_str(const char *hay, const char *needle)
{
	int n = 0;
	size_t k = strlen(needle);
	for (const char *p = hay; (p = strstr(p, needle)); p += k)
		n++;
	return n;
}

/* Display width of each line of s (up to '\n'), into w[]; returns lines. */
static int line_widths(const char *s, int *w, int max)
{
	int n = 0;
	while (*s && n < max) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char *line = strndup(s, len);
		w[n++] = render_width(line);
		free(line);
		s += len + (e ? 1 : 0);
	}
	return n;
}

/* Returns the line of s that starts with prefix (malloc'd), or NULL. */
static char *find_line(const char *s, const char *prefix)
{
	size_t k = strlen(prefix);
	while (*s) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len >= k && !strncmp(s, prefix, k))
			return strndup(s, len);
		s += len + (e ? 1 : 0);
	}
	return NULL;
}

/* Whether s has a line that starts with prefix. */
static bool has_line(const char *s, const char *prefix)
{
	char *l = find_line(s, prefix);
	bool found = l != NULL;
	free(l);
	return found;
}

/* ------------------------------------------------------------- pooling */

static void test_pool_identity(void **state)
{
	float m[64] = { 0 }, out[16];
	for (int i = 0; i < 8; i++)
		m[i * 8 + i] = 1.0f;
	int fy, fx, r, c;
	render_fit(m, 8, 8, 8, 4, 4, true, RENDER_POOL_MAX, out, &fy, &fx, &r, &c);
	assert_int_equal(fy, 2);
	assert_int_equal(fx, 2);
	assert_int_equal(r, 4);
	assert_int_equal(c, 4);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			assert_true(out[i * 4 + j] == (i == j ? 1.0f : 0.0f));
	render_fit(m, 8, 8, 8, 4, 4, true, RENDER_POOL_MEAN, out, NULL, NULL, &r, &c);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			assert_true(out[i * 4 + j] == (i == j ? 0.5f : 0.0f));
	/* no pooling needed: a copy */
	float same[64];
	render_fit(m, 8, 8, 8, 16, 0, true, RENDER_POOL_MAX, same, &fy, &fx, &r, &c);
	assert_int_equal(fy, 1);
	assert_int_equal(r, 8);
	assert_memory_equal(same, m, sizeof m);
}

static void test_pool_edges(void **state)
{
	/* 5 x 5 by 2: edge cells cover what is left, means over what they cover */
	float m[25], out[9];
	for (int i = 0; i < 25; i++)
		m[i] = (float)i;
	render_pool(m, 5, 5, 5, 2, 2, RENDER_POOL_MEAN, out);
	assert_true(out[0] == (0 + 1 + 5 + 6) / 4.0f);
	assert_true(out[2] == (4 + 9) / 2.0f);
	assert_true(out[8] == 24.0f);
	render_pool(m, 5, 5, 5, 2, 2, RENDER_POOL_MAX, out);
	assert_true(out[4] == 18.0f);
	assert_true(out[8] == 24.0f);
	/* a row stride wider than the row */
	float wide[2 * 4] = { 1, 2, 99, 99, 3, 4, 99, 99 }, o1[1];
	render_pool(wide, 2, 2, 4, 2, 2, RENDER_POOL_MEAN, o1);
	assert_true(o1[0] == 2.5f);
	assert_int_equal(render_pool_factor(37, 16), 3);
	assert_int_equal(render_pool_factor(16, 16), 1);
	assert_int_equal(render_pool_factor(17, 0), 1);
	/* rectangular fit without the square constraint */
	float r6[6 * 3] = { 0 }, o2[9];
	int fy, fx, rr, cc;
	render_fit(r6, 6, 3, 3, 3, 3, false, RENDER_POOL_MAX, o2, &fy, &fx, &rr, &cc);
	assert_int_equal(fy, 2);
	assert_int_equal(fx, 1);
	assert_int_equal(rr, 3);
	assert_int_equal(cc, 3);
}

/* ------------------------------------------------------------- shading */

static void test_shading_thresholds(void **state)
{
	assert_int_equal(render_levels(RENDER_UNICODE), 5);
	assert_int_equal(render_levels(RENDER_ASCII), 10);
	assert_int_equal(render_level(0.0, 5), 0);
	assert_int_equal(render_level(0.0099, 5), 0);
	assert_int_equal(render_level(0.01, 5), 1);
	assert_int_equal(render_level(0.2499, 5), 1);
	assert_int_equal(render_level(0.25, 5), 2);
	assert_int_equal(render_level(0.4999, 5), 2);
	assert_int_equal(render_level(0.5, 5), 3);
	assert_int_equal(render_level(0.75, 5), 4);
	assert_int_equal(render_level(1.0, 5), 4);
	assert_int_equal(render_level(7.0, 5), 4);
	assert_int_equal(render_level(-1.0, 5), 0);
	assert_int_equal(render_level(NAN, 5), 0);
	assert_string_equal(render_shade(RENDER_UNICODE, 0.0), " ");
	assert_string_equal(render_shade(RENDER_UNICODE, 0.1), "\u2591");
	assert_string_equal(render_shade(RENDER_UNICODE, 0.3), "\u2592");
	assert_string_equal(render_shade(RENDER_UNICODE, 0.6), "\u2593");
	assert_string_equal(render_shade(RENDER_UNICODE, 0.9), "\u2588");
	assert_string_equal(render_shade(RENDER_ASCII, 0.005), " ");
	assert_string_equal(render_shade(RENDER_ASCII, 0.05), ".");
	assert_string_equal(render_shade(RENDER_ASCII, 1.0 / 9 + 1e-9), ":");
	assert_string_equal(render_shade(RENDER_ASCII, 0.95), "@");
	/* the ANSI ramp runs from its first colour to its last, monotone in v */
	assert_int_equal(render_color256(0.0), 53);
	assert_int_equal(render_color256(1.0), 226);
	assert_int_equal(render_color256(-3.0), 53);
	unsigned char a[3], b[3];
	render_rgb(0.0, a);
	assert_int_equal(a[0], 0x44);
	assert_int_equal(a[2], 0x54);
	render_rgb(1.0, b);
	assert_int_equal(b[0], 0xfd);
	assert_int_equal(b[1], 0xe7);

	struct render_buf buf;
	render_buf_init(&buf);
	render_legend(&buf, RENDER_UNICODE, "attention weight");
	assert_string_equal(buf.data, "scale: ' ' <0.01  '\u2591' <0.25  '\u2592' <0.50  '\u2593' <0.75  "
				      "'\u2588' >=0.75 (attention weight)\n");
	render_buf_free(&buf);
	render_cell(&buf, RENDER_ANSI, 1.0, 2);
	assert_string_equal(buf.data, "\x1b[48;5;226m  \x1b[0m");
	render_buf_free(&buf);
}

/* --------------------------------------------------------------- labels */

static void test_label_width(void **state)
{
	assert_non_null(setlocale(LC_ALL, "C.UTF-8"));
	assert_int_equal(render_width("abc"), 3);
	assert_int_equal(render_width("\u597d"), 2);          /* 好 */
	assert_int_equal(render_width("a\u597db"), 4);
	assert_int_equal(render_width("\u2423"), 1);          /* ␣ */
	assert_int_equal(render_width("e\u0301"), 1);         /* e + combining acute */
	assert_int_equal(render_width("\xff"), 1);            /* an invalid byte */
	assert_int_equal(render_width(""), 0);

	struct render_buf b;
	render_buf_init(&b);
	render_pad(&b, "\u597d", 3, RENDER_LEFT, false);
	assert_string_equal(b.data, "\u597d ");
	render_buf_free(&b);
	render_pad(&b, "\u597d", 4, RENDER_RIGHT, false);
	assert_string_equal(b.data, "  \u597d");
	render_buf_free(&b);
	render_pad(&b, "\u597d\u597d\u597d", 5, RENDER_LEFT, false);
	assert_string_equal(b.data, "\u597d\u597d\u2026");
	assert_int_equal(render_width(b.data), 5);
	render_buf_free(&b);
	/* a wide character that does not fit before the ellipsis is left out */
	render_pad(&b, "\u597d\u597d", 2, RENDER_LEFT, false);
	assert_string_equal(b.data, "\u2026 ");
	render_buf_free(&b);
	render_pad(&b, "abcdef", 4, RENDER_LEFT, true);
	assert_string_equal(b.data, "abc~");
	render_buf_free(&b);

	/* the built-in table answers where the locale does not know CJK */
	assert_non_null(setlocale(LC_ALL, "C"));
	assert_int_equal(render_cp_width(0x597D), 2);
	assert_int_equal(render_cp_width(0xAC00), 2);
	assert_int_equal(render_cp_width(0x0301), 0);
	assert_int_equal(render_cp_width('a'), 1);
	assert_non_null(setlocale(LC_ALL, "C.UTF-8"));
}

/* One head with CJK labels: every matrix line has the same width and the
 * key labels sit over their columns. */
static void test_head_layout_cjk(void **state)
{
	setlocale(LC_ALL, "C.UTF-8");
	enum { T = 4 };
	float att[T * T] = { 1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0, 1, 0, 0.3f, 0.3f, 0.2f, 0.2f };
	char *labels[T] = { "\u5e8a", "a", "\u2423", "\u6708" };
	struct render_head_spec sp = {
		.att = att, .T = T, .labels = labels, .style = RENDER_UNICODE, .title = "t",
	};
	struct render_buf b;
	render_buf_init(&b);
	render_head(&b, &sp);
	int w[32];
	int n = line_widths(b.data, w, 32);
	/* title, key labels, top border, T rows, bottom border, legend */
	assert_int_equal(n, 1 + 1 + 1 + T + 1 + 1);
	for (int i = 2; i < 2 + T + 2; i++)
		assert_int_equal(w[i], w[3]);
	/* key labels: the last (double width) one ends over the last cell */
	char *hdr = find_line(b.data + strlen("t\n"), " ");
	assert_non_null(hdr);
	assert_int_equal(render_width(hdr), w[3] - 1);
	assert_true(strstr(hdr, "\u6708") == hdr + strlen(hdr) - strlen("\u6708"));
	free(hdr);
	char *row = find_line(b.data, "1 a");
	assert_non_null(row);
	assert_non_null(strstr(row, "\u2593\u2593\u2593\u2593")); /* 0.5 0.5 as two ▓▓ cells */
	free(row);
	render_buf_free(&b);

	/* narrow: the wide labels forbid 1-column cells, so the matrix is pooled */
	sp.max_width = 12;
	render_head(&b, &sp);
	assert_non_null(strstr(b.data, "pooled 2\u00d7"));
	assert_true(has_line(b.data, "0-1 "));
	render_buf_free(&b);

	/* a label longer than a cell is stacked in rows over its column */
	char *long_labels[T] = { "<unk>", "a", "b", "c" };
	sp.labels = long_labels;
	sp.max_width = 0;
	sp.style = RENDER_ASCII;
	render_head(&b, &sp);
	assert_non_null(strstr(b.data, "<u\n"));
	assert_non_null(strstr(b.data, "+--------+"));
	assert_non_null(strstr(b.data, "'@' >=0.89"));
	render_buf_free(&b);
}

static void test_grid_layout(void **state)
{
	enum { L = 2, H = 2, T = 8 };
	float m[T * T] = { 0 };
	for (int i = 0; i < T; i++)
		m[i * T + i] = 1.0f;
	const float *att[L * H] = { m, m, m, m };
	bool abl[L * H] = { false, false, false, true };
	struct render_grid_spec sp = {
		.att = att, .L = L, .H = H, .T = T, .ablated = abl, .sel_layer = 0, .sel_head = 1,
		.style = RENDER_UNICODE, .cell = 4, .max_width = 0,
	};
	struct render_buf b;
	render_buf_init(&b);
	render_grid(&b, &sp);
	assert_non_null(strstr(b.data, "pooled 2\u00d7"));
	assert_non_null(strstr(b.data, "[0.1]"));
	assert_non_null(strstr(b.data, "1.1 \u2717"));
	assert_non_null(strstr(b.data, "\u2554[0.1]"));   /* a double frame for the selection */
	/* 4 x 4 pooled identity: a diagonal of full blocks in each head */
	assert_non_null(strstr(b.data, "\u2502\u2588   "));
	render_buf_free(&b);
	/* wrapped to a narrow width: one head per band */
	sp.max_width = 10;
	sp.cell = 8;
	sp.style = RENDER_ASCII;
	render_grid(&b, &sp);
	assert_non_null(strstr(b.data, "not pooled"));
	assert_non_null(strstr(b.data, "#[0.1]"));
	assert_non_null(strstr(b.data, "1.1 x"));
	int w[128];
	int n = line_widths(b.data, w, 128);
	assert_true(n > 4 * (T + 2));
	render_buf_free(&b);
}

/* ------------------------------------------------------- real sessions */

struct fixture {
	struct session s;
	FILE *out;
	char *outbuf;
	size_t outlen, mark; /* take_output() has returned outbuf[0..mark) */
};

/* A 2-layer, 4-head character model with seeded random weights (the same
 * recipe as tests/tool_mkmodel.c) in a session with `text` run. */
static int setup(void **state)
{
	setlocale(LC_ALL, "C.UTF-8");
	struct fixture *f = calloc(1, sizeof *f);
	struct model_config c;
	config_default(&c);
	c.d_model = 32;
	c.n_layer = 2;
	c.n_head = 4;
	c.n_kv_head = 4;
	c.d_ff = 64;
	c.context = 64;
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz ,.\n\"";
	uint32_t cps[64];
	int n = 0;
	for (const char *p = chars; *p; p++)
		cps[n++] = (uint32_t)(unsigned char)*p;
	cps[n++] = 0x597D; /* 好 */
	struct err e;
	struct tokenizer *t = tok_char_new(cps, n, 0, &e);
	assert_non_null(t);
	c.vocab_size = t->vocab_size;
	struct model *m = model_new(&c, &e);
	assert_non_null(m);
	m->tok = t;
	model_init_random(m, 7);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= 20.0f;
	m->name = xstrdup("testmodel");

	f->out = open_memstream(&f->outbuf, &f->outlen);
	session_init(&f->s, f->out);
	f->s.quiet = true;
	f->s.model = m;
	f->s.model_spec = xstrdup("testmodel");
	run_options_native(m, &f->s.native);
	f->s.opt = f->s.native;
	assert_int_equal(session_set_text(&f->s, "the cat sat, \"on\" the mat.\n\u597d the end", &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	session_free(&f->s);
	fclose(f->out);
	free(f->outbuf);
	free(f);
	return 0;
}

/* Runs a command line; asserts it succeeds. */
static void run_ok(struct fixture *f, const char *line)
{
	struct err e = { { 0 } };
	int rc = cmd_run_line(&f->s, line, &e);
	if (rc != 0)
		fail_msg("%s: %s", line, e.msg);
}

/* What the commands printed since the last call (malloc'd). */
static char *take_output(struct fixture *f)
{
	fflush(f->out);
	char *s = strndup(f->outbuf + f->mark, f->outlen - f->mark);
	f->mark = f->outlen;
	return s;
}

/* Parses a heatmap CSV into w (T x T); checks the header and the labels. */
static void parse_csv(const char *csv, int T, double *w)
{
	const char *p = strchr(csv, '\n');
	assert_non_null(p);
	assert_true(!strncmp(csv, "\"query\\key\",", 12));
	p++;
	for (int i = 0; i < T; i++) {
		assert_int_equal(*p, '"');
		/* skip the quoted label ("" is an escaped quote) */
		p++;
		while (!(p[0] == '"' && p[1] != '"')) {
			if (p[0] == '"')
				p++;
			p++;
		}
		p++;
		for (int j = 0; j < T; j++) {
			assert_int_equal(*p, ',');
			char *end;
			w[i * T + j] = strtod(p + 1, &end);
			assert_true(end > p + 1);
			p = end;
		}
		assert_int_equal(*p, '\n');
		p++;
	}
	assert_int_equal(*p, '\0');
}

static char *export_str(struct fixture *f, int kind, int l, int h, enum export_format fmt)
{
	struct render_buf b;
	struct err e;
	render_buf_init(&b);
	int rc = kind == 0 ? export_heatmap(&f->s, l, h, fmt, &b, &e)
		 : kind == 1 ? export_grid(&f->s, fmt, &b, &e) : export_stats(&f->s, fmt, &b, &e);
	if (rc != 0)
		fail_msg("export: %s", e.msg);
	assert_non_null(b.data);
	return b.data; /* the caller frees */
}

static void test_csv_rows(void **state)
{
	struct fixture *f = *state;
	int T = f->s.n_tokens, L = 2, H = 4;
	assert_true(T > 10);
	double *w = malloc(sizeof *w * T * T);

	/* causal: rows sum to 1, nothing above the diagonal; every weight is
	 * written with all its float digits (%.9g reads back exactly) */
	for (int l = 0; l < L; l++)
		for (int h = 0; h < H; h++) {
			char *csv = export_str(f, 0, l, h, EXPORT_CSV);
			parse_csv(csv, T, w);
			const float *a = run_att(f->s.run, l, 0, h);
			for (int i = 0; i < T * T; i++)
				assert_true((float)w[i] == a[i]);
			for (int i = 0; i < T; i++) {
				double sum = 0;
				for (int j = 0; j < T; j++) {
					sum += w[i * T + j];
					if (j > i)
						assert_true(w[i * T + j] == 0.0);
				}
				assert_true(fabs(sum - 1.0) <= 1e-5);
			}
			free(csv);
		}

	/* window 3: keys i-3..i only */
	run_ok(f, "mask window 3");
	for (int h = 0; h < H; h++) {
		char *csv = export_str(f, 0, 1, h, EXPORT_CSV);
		parse_csv(csv, T, w);
		for (int i = 0; i < T; i++) {
			double sum = 0;
			for (int j = 0; j < T; j++) {
				sum += w[i * T + j];
				if (j > i || j < i - 3)
					assert_true(w[i * T + j] == 0.0);
			}
			assert_true(fabs(sum - 1.0) <= 1e-5);
		}
		free(csv);
	}
	/* no mask: some weight above the diagonal */
	run_ok(f, "mask none");
	char *csv = export_str(f, 0, 0, 0, EXPORT_CSV);
	parse_csv(csv, T, w);
	double upper = 0;
	for (int i = 0; i < T; i++)
		for (int j = i + 1; j < T; j++)
			upper += w[i * T + j];
	assert_true(upper > 0.01);
	free(csv);
	run_ok(f, "reset");

	/* attn mqa changes the rows of the heads */
	char *before = export_str(f, 0, 0, 1, EXPORT_CSV);
	run_ok(f, "attn mqa");
	char *after = export_str(f, 0, 0, 1, EXPORT_CSV);
	assert_string_not_equal(before, after);
	parse_csv(after, T, w);
	for (int i = 0; i < T; i++) {
		double sum = 0;
		for (int j = 0; j < T; j++)
			sum += w[i * T + j];
		assert_true(fabs(sum - 1.0) <= 1e-5);
	}
	free(before);
	free(after);
	run_ok(f, "reset");

	/* labels: whitespace visible, quotes doubled, CJK kept */
	csv = export_str(f, 0, 0, 0, EXPORT_CSV);
	char *hdr = strndup(csv, (size_t)(strchr(csv, '\n') - csv));
	assert_non_null(strstr(hdr, ",\"\u2423\","));
	assert_non_null(strstr(hdr, ",\"\"\"\","));
	assert_non_null(strstr(hdr, ",\"\u23ce\","));
	assert_non_null(strstr(hdr, ",\"\u597d\","));
	free(hdr);
	free(csv);

	/* the grid: a header and T rows per head */
	csv = export_str(f, 1, 0, 0, EXPORT_CSV);
	assert_int_equal(count_str(csv, "\n"), 1 + L * H * T);
	assert_true(!strncmp(csv, "\"layer\",\"head\",\"query\\key\",", 27));
	assert_non_null(strstr(csv, "\n1,3,\"t\","));
	free(csv);
	free(w);
}

static void test_json(void **state)
{
	struct fixture *f = *state;
	int T = f->s.n_tokens;
	run_ok(f, "attn gqa 2");
	run_ok(f, "ablate 1.2 0.0");
	char *txt = export_str(f, 0, 1, 3, EXPORT_JSON);
	json_error_t je;
	json_t *root = json_loads(txt, 0, &je);
	if (!root)
		fail_msg("json: %s at %d", je.text, je.position);
	assert_string_equal(json_string_value(json_object_get(root, "model")), "testmodel");
	json_t *shape = json_object_get(root, "shape");
	assert_int_equal(json_array_size(shape), 2);
	assert_int_equal(json_integer_value(json_array_get(shape, 0)), T);
	assert_int_equal(json_integer_value(json_array_get(shape, 1)), T);
	assert_int_equal(json_integer_value(json_object_get(root, "layer")), 1);
	assert_int_equal(json_integer_value(json_object_get(root, "head")), 3);
	json_t *toks = json_object_get(root, "tokens");
	assert_int_equal(json_array_size(toks), T);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(toks, 0), "id")),
			 f->s.tokens[0]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(toks, 3), "label")), "\u2423");
	json_t *o = json_object_get(root, "options");
	assert_int_equal(json_integer_value(json_object_get(o, "kv_heads")), 2);
	assert_string_equal(json_string_value(json_object_get(o, "placement")), "pre");
	assert_string_equal(json_string_value(json_object_get(o, "mask")), "causal");
	assert_true(json_is_null(json_object_get(o, "window")));
	assert_true(json_is_true(json_object_get(o, "scale")));
	json_t *abl = json_object_get(o, "ablated");
	assert_int_equal(json_array_size(abl), 2);
	assert_string_equal(json_string_value(json_array_get(abl, 0)), "0.0");
	assert_string_equal(json_string_value(json_array_get(abl, 1)), "1.2");
	json_t *wts = json_object_get(root, "weights");
	assert_int_equal(json_array_size(wts), T);
	const float *a = run_att(f->s.run, 1, 0, 3);
	for (int i = 0; i < T; i++) {
		json_t *row = json_array_get(wts, i);
		assert_int_equal(json_array_size(row), T);
		for (int j = 0; j < T; j++)
			/* %.9g round-trips a float exactly */
			assert_true((float)json_real_value(json_array_get(row, j)) == a[i * T + j]);
	}
	json_decref(root);
	free(txt);

	txt = export_str(f, 1, 0, 0, EXPORT_JSON);
	root = json_loads(txt, 0, &je);
	assert_non_null(root);
	json_t *heads = json_object_get(root, "heads");
	assert_int_equal(json_array_size(heads), 8);
	assert_true(json_is_true(json_object_get(json_array_get(heads, 6), "ablated")));
	assert_int_equal(json_array_size(json_object_get(json_array_get(heads, 5), "weights")), T);
	json_decref(root);
	free(txt);

	txt = export_str(f, 2, 0, 0, EXPORT_JSON);
	root = json_loads(txt, 0, &je);
	assert_non_null(root);
	assert_int_equal(json_integer_value(json_object_get(root, "n_tokens")), T);
	assert_true(json_real_value(json_object_get(root, "kl_vs_baseline")) > 0.0);
	assert_int_equal(json_integer_value(json_object_get(root, "kv_cache_bytes")),
			 (json_int_t)kv_cache_bytes(2, 2, T, 8, 4));
	assert_int_equal(json_array_size(json_object_get(root, "heads")), 8);
	assert_null(json_object_get(root, "forward_ms"));
	json_decref(root);
	free(txt);
	run_ok(f, "reset");
}

static void test_svg(void **state)
{
	struct fixture *f = *state;
	int T = f->s.n_tokens;
	char *svg = export_str(f, 0, 0, 2, EXPORT_SVG);
	assert_true(!strncmp(svg, "<svg ", 5));
	size_t n = strlen(svg);
	assert_true(n > 8 && !strcmp(svg + n - 7, "</svg>\n"));
	/* causal: the T(T+1)/2 visible cells, and one hatched run in every
	 * row but the last */
	assert_int_equal(count_str(svg, "<rect class=\"c\""), T * (T + 1) / 2);
	assert_int_equal(count_str(svg, "<rect class=\"masked\""), T - 1 + 1 /* legend */);
	assert_int_equal(count_str(svg, "<svg"), 1);
	assert_int_equal(count_str(svg, "<title>"), 1);
	assert_non_null(strstr(svg, "mask causal"));
	assert_non_null(strstr(svg, "&quot;"));    /* the label " escaped */
	assert_null(strstr(svg, ">\"<"));
	assert_non_null(strstr(svg, "linearGradient"));
	/* every element that opens is closed: text and g */
	assert_int_equal(count_str(svg, "<text"), count_str(svg, "</text>"));
	assert_int_equal(count_str(svg, "<g"), count_str(svg, "</g>"));
	free(svg);
	svg = export_str(f, 1, 0, 0, EXPORT_SVG);
	assert_true(!strncmp(svg, "<svg ", 5));
	assert_int_equal(count_str(svg, "<g class=\"head\">"), 8);
	assert_int_equal(count_str(svg, "class=\"selected\""), 0); /* only with --selected */
	assert_int_equal(count_str(svg, "<g"), count_str(svg, "</g>"));
	free(svg);
}

static void test_byte_identical(void **state)
{
	struct fixture *f = *state;
	static const enum export_format fmts[] = { EXPORT_TXT, EXPORT_ASCII, EXPORT_ANSI,
						   EXPORT_CSV, EXPORT_JSON, EXPORT_SVG };
	run_ok(f, "ablate 0.3");
	for (int kind = 0; kind < 3; kind++)
		for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++) {
			if (kind == 2 && (fmts[k] == EXPORT_ANSI || fmts[k] == EXPORT_SVG))
				continue;
			char *a = export_str(f, kind, 1, 1, fmts[k]);
			/* a fresh forward pass of the same text and options */
			struct err e;
			char *text = xstrdup(f->s.text);
			assert_int_equal(session_set_text(&f->s, text, &e), 0);
			free(text);
			char *b = export_str(f, kind, 1, 1, fmts[k]);
			assert_string_equal(a, b);
			free(a);
			free(b);
		}
	run_ok(f, "reset");
}

static void test_export_errors(void **state)
{
	struct fixture *f = *state;
	struct err e;
	struct render_buf b;
	render_buf_init(&b);
	assert_int_equal(export_heatmap(&f->s, 2, 0, EXPORT_TXT, &b, &e), -1);
	assert_non_null(strstr(e.msg, "does not exist"));
	assert_int_equal(export_stats(&f->s, EXPORT_SVG, &b, &e), -1);
	assert_null(b.data);
	enum export_format fmt;
	assert_int_equal(export_format_parse("pdf", &fmt, &e), -1);
	assert_non_null(strstr(e.msg, "unknown format"));
	assert_int_equal(export_format_from_path("a/b.SVG", &fmt), 0);
	assert_int_equal(fmt, EXPORT_SVG);
	assert_int_equal(export_format_from_path("a.d/b", &fmt), -1);

	static const char *const bad[] = {
		"export heatmap 9.9", "export heatmap x", "export grid --format pdf",
		"export stats --format ansi", "export heatmap 0.1 --out /nonexistent-dir/x.csv",
		"export", "export grid --bogus", "show head 0.9", "show token 999", "show",
		"top 0", "top 2 at -1", "top at", "kv --kv-heads 3", "kv --layers", "kv --bytes 0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		e.msg[0] = '\0';
		if (cmd_run_line(&f->s, bad[i], &e) != -1)
			fail_msg("%s succeeded", bad[i]);
		assert_true(e.msg[0] != '\0');
		assert_null(strchr(e.msg, '\n'));
	}
	free(take_output(f));

	/* no text, no model */
	struct session s;
	session_init(&s, f->out);
	assert_int_equal(cmd_run_line(&s, "show grid", &e), -1);
	assert_non_null(strstr(e.msg, "no model"));
	assert_int_equal(export_grid(&s, EXPORT_TXT, &b, &e), -1);
	assert_int_equal(cmd_run_line(&s, "kv --layers 2 --heads 2", &e), -1);
	assert_non_null(strstr(e.msg, "--head-dim"));
	session_free(&s);
	struct err e2;
	char *text = xstrdup(f->s.text);
	assert_int_equal(session_set_text(&f->s, "", &e2), 0);
	assert_int_equal(cmd_run_line(&f->s, "export stats", &e), -1);
	assert_non_null(strstr(e.msg, "no text"));
	assert_int_equal(cmd_run_line(&f->s, "top", &e), -1);
	assert_int_equal(session_set_text(&f->s, text, &e2), 0);
	free(text);
}

static void test_commands(void **state)
{
	struct fixture *f = *state;
	int T = f->s.n_tokens;
	free(take_output(f));

	run_ok(f, "kv --layers 80 --heads 64 --kv-heads 8 --head-dim 128 --tokens 4096 --bytes 2");
	char *out = take_output(f);
	char *l = find_line(out, "  MHA ");
	assert_non_null(l);
	assert_non_null(strstr(l, " 10 GiB"));
	free(l);
	l = find_line(out, "  GQA-8 ");
	assert_non_null(l);
	assert_non_null(strstr(l, " 1.25 GiB"));
	free(l);
	l = find_line(out, "  MQA ");
	assert_non_null(l);
	assert_non_null(strstr(l, " 160 MiB"));
	free(l);
	assert_false(has_line(out, "  GQA-2 "));
	free(out);

	/* the loaded model: every divisor, native and current marked */
	run_ok(f, "attn gqa 2");
	run_ok(f, "kv");
	out = take_output(f);
	assert_non_null(strstr(out, "GQA-2"));
	assert_non_null(strstr(out, "(current)"));
	assert_non_null(strstr(out, "(native)"));
	free(out);
	run_ok(f, "reset");

	run_ok(f, "show head 1.2");
	assert_int_equal(f->s.sel_layer, 1);
	assert_int_equal(f->s.sel_head, 2);
	out = take_output(f);
	assert_non_null(strstr(out, "head 1.2"));
	free(out);
	run_ok(f, "show grid");
	out = take_output(f);
	assert_non_null(strstr(out, "[1.2]"));
	free(out);
	run_ok(f, "show token 4");
	assert_int_equal(f->s.sel_token, 4);
	out = take_output(f);
	assert_true(has_line(out, "  1.3"));
	free(out);
	run_ok(f, "show tokens");
	out = take_output(f);
	assert_int_equal(count_str(out, "\n"), T + 1);
	free(out);

	run_ok(f, "top");
	out = take_output(f);
	assert_true(has_line(out, "   5  "));
	assert_null(strstr(out, "base p"));
	free(out);
	run_ok(f, "top 3 at 2");
	out = take_output(f);
	assert_non_null(strstr(out, "position 2 "));
	assert_false(has_line(out, "   4  "));
	free(out);
	run_ok(f, "scale off");
	run_ok(f, "top 4");
	out = take_output(f);
	assert_non_null(strstr(out, "base p"));
	assert_non_null(strstr(out, "scale:off"));
	free(out);
	run_ok(f, "stats");
	out = take_output(f);
	assert_non_null(strstr(out, "perplexity"));
	assert_non_null(strstr(out, "forward"));
	assert_true(has_line(out, "    1     3 "));
	free(out);
	run_ok(f, "reset");

	/* export to stdout equals export to a file */
	char dir[] = "/tmp/test_render.XXXXXX", path[128], line[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/h.json", dir);
	snprintf(line, sizeof line, "export heatmap 0.1 --out %s", path);
	run_ok(f, "export heatmap 0.1 --format json");
	out = take_output(f);
	run_ok(f, line);   /* the format follows the extension */
	free(take_output(f));
	size_t len;
	struct err e;
	char *file = read_file(path, &len, &e);
	assert_non_null(file);
	assert_string_equal(file, out);
	free(file);
	free(out);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_identity),
		cmocka_unit_test(test_pool_edges),
		cmocka_unit_test(test_shading_thresholds),
		cmocka_unit_test(test_label_width),
		cmocka_unit_test(test_head_layout_cjk),
		cmocka_unit_test(test_grid_layout),
		cmocka_unit_test_setup_teardown(test_csv_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_svg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commands, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
