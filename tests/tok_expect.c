/*
 * tok_expect.c — tokenizer expectation tables (see tok_expect.h).
 */
#define _GNU_SOURCE
#include "tok_expect.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *tok_expect_shared_dir(void)
{
	const char *s = getenv("ATTNSCOPE_SHARED");
	return s && *s ? s : "../shared";
}

struct row {
	unsigned char *text;
	size_t len;
	char *decoded;		/* expected decode (NUL-terminated), or NULL: the text */
	int *ids;
	int n;
	int bad;
	int line;
};

static int hexv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void free_table(struct row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		free(rows[i].text);
		free(rows[i].ids);
		free(rows[i].decoded);
	}
	free(rows);
}

/* Reads "hex TAB ids TAB bad TAB json" rows; returns the row count, or -1
 * (reported on stderr) when the file cannot be read or a row is malformed. */
static int read_table(const char *path, struct row **out)
{
	struct err e = { "" };
	size_t len;
	char *buf = read_file(path, &len, &e), *save = NULL, *line;
	struct row *rows = NULL;
	int n = 0, lineno = 0;

	*out = NULL;
	if (!buf) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = { line, NULL, NULL, NULL };
		struct row r = { 0 };

		lineno++;
		if (line[0] == '#')
			continue;
		for (int k = 1; k < 4; k++) {
			f[k] = strchr(f[k - 1], '\t');
			if (!f[k]) {
				fprintf(stderr, "%s:%d: fewer than 4 tab-separated fields\n", path,
					lineno);
				goto bad;
			}
			*f[k]++ = '\0';
		}
		r.len = strlen(f[0]) / 2;
		r.text = xmalloc(r.len + 1);
		for (size_t i = 0; i < r.len; i++)
			r.text[i] = (unsigned char)(hexv(f[0][2 * i]) * 16 + hexv(f[0][2 * i + 1]));
		r.text[r.len] = '\0';
		r.ids = xmalloc((strlen(f[1]) + 1) * sizeof *r.ids);
		if (!strcmp(f[1], "refused")) {
			r.n = -1; /* encoding must fail */
			f[1][0] = '\0';
		}
		for (char *p = f[1]; *p;) {
			char *end;
			r.ids[r.n++] = (int)strtol(p, &end, 10);
			if (end <= p) {
				fprintf(stderr, "%s:%d: bad id list\n", path, lineno);
				free(r.text);
				free(r.ids);
				goto bad;
			}
			p = end;
			while (*p == ' ')
				p++;
		}
		r.bad = atoi(f[2]);
		r.line = lineno;
		char *dec = strchr(f[3], '\t'); /* optional: the decode, in hex */
		if (dec) {
			size_t dl = strlen(++dec) / 2;
			r.decoded = xmalloc(dl + 1);
			for (size_t i = 0; i < dl; i++)
				r.decoded[i] = (char)(hexv(dec[2 * i]) * 16 + hexv(dec[2 * i + 1]));
			r.decoded[dl] = '\0';
		}
		rows = xrealloc(rows, (size_t)(n + 1) * sizeof *rows);
		rows[n++] = r;
	}
	free(buf);
	*out = rows;
	return n;
bad:
	free(buf);
	free_table(rows, n);
	return -1;
}

/* The text with every invalid byte replaced by U+FFFD (tokenizer.h);
 * its length (texts may hold NUL bytes) in *out_len. */
static char *replaced(const unsigned char *s, size_t len, size_t *out_len)
{
	char *out = xmalloc(3 * len + 1);
	size_t i = 0, o = 0;

	while (i < len) {
		uint32_t cp;
		int bad, k = utf8_decode(s + i, len - i, &cp, &bad);
		o += (size_t)utf8_encode(cp, out + o);
		i += (size_t)k;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

static void print_ids(const char *what, const int *ids, int n)
{
	fprintf(stderr, "  %s:", what);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %d", ids[i]);
	fprintf(stderr, "\n");
}

int tok_expect_check(const struct tokenizer *t, const char *path, int min_rows)
{
	struct row *rows;
	int n = read_table(path, &rows), failures = 0;

	if (n < 0)
		return 1;
	if (n < min_rows) {
		fprintf(stderr, "%s: %d rows, expected at least %d\n", path, n, min_rows);
		free_table(rows, n);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		struct err e = { "" };
		int *ids = NULL, k = 0;
		int bad = tok_encode(t, (const char *)r->text, r->len, 0, &ids, &k, &e);

		if (r->n < 0) {
			if (bad >= 0 || strchr(e.msg, '\n')) {
				fprintf(stderr, "%s:%d: \"%s\" should be refused with a one-line "
					"error, but %s\n", path, r->line, r->text,
					bad >= 0 ? "it encodes" : "the error spans lines");
				failures++;
			}
			free(ids);
			continue;
		}
		if (bad < 0) {
			fprintf(stderr, "%s:%d: \"%s\" does not encode: %s\n", path, r->line,
				r->text, e.msg);
			failures++;
			continue;
		}
		if (k != r->n || memcmp(ids, r->ids, (size_t)k * sizeof *ids) != 0 ||
		    bad != r->bad) {
			fprintf(stderr, "%s:%d: \"%s\" encodes differently (bad %d, expected %d)\n",
				path, r->line, r->text, bad, r->bad);
			print_ids("got     ", ids, k);
			print_ids("expected", r->ids, r->n);
			failures++;
		}
		char *back = tok_decode(t, ids, k);
		size_t wlen = 0;
		char *want = r->decoded ? xstrdup(r->decoded) : replaced(r->text, r->len, &wlen);
		if (r->decoded)
			wlen = strlen(want);
		/* decode's output is NUL-terminated; compare wlen bytes and the NUL */
		if (memcmp(back, want, wlen + 1) != 0 ||
		    (r->bad == 0 && !r->decoded && wlen != r->len)) {
			fprintf(stderr, "%s:%d: decode(encode(s)) = \"%s\", expected \"%s\"\n",
				path, r->line, back, want);
			failures++;
		}
		free(want);
		free(back);
		free(ids);
	}
	free_table(rows, n);
	return failures;
}

char *tok_expect_gz_text(const char *name, size_t *len)
{
	char cmd[256];
	size_t cap = 1 << 20, n = 0, k;
	char *buf = xmalloc(cap);
	FILE *f;

	snprintf(cmd, sizeof cmd, "gzip -dc tests/data/tokenizers/%s.json.gz", name);
	f = popen(cmd, "r");
	if (!f) {
		free(buf);
		return NULL;
	}
	while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (cap - n < 2)
			buf = xrealloc(buf, cap *= 2);
	}
	if (pclose(f) != 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}
