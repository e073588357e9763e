/*
 * test_dataset.c — how training windows are drawn (dataset.h).
 *
 *  - Line starts: every training and validation window begins at the first
 *    token of a line, and the windows are exactly the file's tokens there.
 *  - Repeated text spans: each window is the file's text at some start with
 *    one span of repeat_min..repeat_max tokens copied to a later place; the
 *    window minus that copy is the plain text.  The corpus is built so that
 *    no 4 tokens repeat on their own, so the copy is the only repeat.
 *  - Random repeated spans: one run of repeat_min..repeat_max tokens occurs
 *    twice, not overlapping, and the rest of the window is the plain text.
 *  - repeat 0 leaves windows plain; bad span bounds and a text without a
 *    line that fits are refused with a message.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"

#define T 48

/* A text of n characters from a 40-letter alphabet in which no 4
 * consecutive characters occur twice (a walk that picks each next letter
 * so as to make a new 4-gram), with a newline every `line` characters. */
static char *make_text(int n, int line)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN";
	int A = (int)strlen(alpha);
	char *s = calloc((size_t)n + 1, 1);
	unsigned char *seen = calloc((size_t)A * A * A * A, 1);
	int idx[4] = { 0, 1, 2, 3 };
	uint32_t x = 12345;
	for (int i = 0; i < n; i++) {
		if (line && i % line == line - 1) {
			s[i] = '\n';
			continue;
		}
		int pick = -1;
		for (int tries = 0; tries < 4 * A && pick < 0; tries++) {
			x = x * 1103515245u + 12345u;
			int c = (int)((x >> 8) % (uint32_t)A);
			size_t key = (((size_t)idx[1] * A + idx[2]) * A + idx[3]) * A + c;
			if (!seen[key]) {
				seen[key] = 1;
				pick = c;
			}
		}
		assert_true(pick >= 0);
		idx[0] = idx[1];
		idx[1] = idx[2];
		idx[2] = idx[3];
		idx[3] = pick;
		s[i] = alpha[pick];
	}
	free(seen);
	return s;
}

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/attnscope-dataset-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* Index of window w (T + 1 tokens: tokens then the last target) in d's ids
 * when it is plain text there, else -1. */
static long find_plain(const struct dataset *d, const int *w)
{
	for (size_t s = 0; s + T + 1 <= d->n; s++)
		if (!memcmp(d->ids + s, w, (T + 1) * sizeof(int)))
			return (long)s;
	return -1;
}

static void join(const int *tokens, const int *targets, int *w)
{
	memcpy(w, tokens, T * sizeof(int));
	w[T] = targets[T - 1];
	for (int i = 1; i < T; i++)
		assert_int_equal(targets[i - 1], tokens[i]);
}

static void test_line_starts(void **state)
{
	(void)state;
	char *text = make_text(6000, 60);
	char *path = write_tmp(text);
	struct dataset d;
	struct err e;
	assert_int_equal(dataset_load(&d, path, 1, 0.2, &e), 0);
	assert_int_equal(dataset_set_windows(&d, T, true, 0.0, 20, 30, false, &e), 0);
	assert_true(d.n_train_starts > 10 && d.n_val_starts > 2);
	int nl = d.ids[59]; /* text[59] is the first newline */
	struct rng r;
	rng_seed(&r, 7);
	int tok[4 * T], tgt[4 * T], w[T + 1];
	for (int round = 0; round < 50; round++) {
		dataset_sample(&d, &r, 4, T, tok, tgt);
		for (int b = 0; b < 4; b++) {
			join(tok + b * T, tgt + b * T, w);
			long s = find_plain(&d, w);
			assert_true(s >= 0);
			assert_true(s == 0 || d.ids[s - 1] == nl);
			assert_true((size_t)s + T + 1 <= d.n_train);
		}
	}
	for (int i = 0; i < 4; i++) {
		dataset_val_batch(&d, i, 4, 4, T, tok, tgt);
		for (int b = 0; b < 4; b++) {
			join(tok + b * T, tgt + b * T, w);
			long s = find_plain(&d, w);
			assert_true(s >= 0 && (size_t)s >= d.n_train);
			assert_true(d.ids[s - 1] == nl);
		}
	}
	dataset_free(&d);

	/* lines too long for a window of T + 1: refused */
	assert_int_equal(dataset_load(&d, path, 1, 0.2, &e), 0);
	assert_int_equal(dataset_set_windows(&d, 5900, true, 0.0, 20, 30, false, &e), -1);
	assert_non_null(strstr(e.msg, "line"));
	dataset_free(&d);
	unlink(path);
	free(path);
	free(text);
}

/* The longest k such that w[a, a+k) == w[b, b+k) for some a < b, a + k <= b;
 * *pa and *pb get the pair. */
static int longest_repeat(const int *w, int n, int *pa, int *pb)
{
	int best = 0;
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			int k = 0;
			while (b + k < n && a + k < b && w[a + k] == w[b + k])
				k++;
			if (k > best) {
				best = k;
				*pa = a;
				*pb = b;
			}
		}
	return best;
}

static void test_repeats(void **state)
{
	(void)state;
	char *text = make_text(20000, 0);
	char *path = write_tmp(text);
	struct dataset d;
	struct err e;
	assert_int_equal(dataset_load(&d, path, 1, 0.1, &e), 0);

	for (int random = 0; random <= 1; random++) {
		assert_int_equal(dataset_set_windows(&d, T, false, 1.0, 8, 16, random, &e), 0);
		struct rng r;
		rng_seed(&r, 99 + random);
		int tok[T], tgt[T], w[T + 1];
		for (int round = 0; round < 200; round++) {
			dataset_sample(&d, &r, 1, T, tok, tgt);
			join(tok, tgt, w);
			int a = 0, b = 0, k = longest_repeat(w, T + 1, &a, &b);
			/* a span may extend by chance into the tokens beside it */
			assert_true(k >= 8 && k <= 16 + 6);
			if (!random) {
				/* some run of 8..16 tokens removed at or before the end
				 * of the prefix that matches the text leaves plain text
				 * (where the copy starts is ambiguous by a token or two
				 * when its neighbours match by chance) */
				long s0 = -1;
				for (size_t s = 0; s + 4 <= d.n && s0 < 0; s++)
					if (!memcmp(d.ids + s, w, 4 * sizeof(int)))
						s0 = (long)s;
				assert_true(s0 >= 0);
				int P = 0;
				while (P < T + 1 && d.ids[s0 + P] == w[P])
					P++;
				bool found = false;
				for (int p = P; p >= 0 && p >= P - 4 && !found; p--)
					for (int kk = 8; kk <= 16 && !found; kk++)
						found = p + kk <= T + 1 &&
							!memcmp(w + p + kk, d.ids + s0 + p,
								(size_t)(T + 1 - p - kk) * sizeof(int));
				assert_true(found);
			}
		}
	}

	/* repeat 0: plain windows only */
	assert_int_equal(dataset_set_windows(&d, T, false, 0.0, 8, 16, true, &e), 0);
	struct rng r;
	rng_seed(&r, 5);
	int tok[T], tgt[T], w[T + 1];
	for (int round = 0; round < 50; round++) {
		dataset_sample(&d, &r, 1, T, tok, tgt);
		join(tok, tgt, w);
		assert_true(find_plain(&d, w) >= 0);
	}

	/* spans that cannot fit twice */
	assert_int_equal(dataset_set_windows(&d, T, false, 0.5, 20, 25, false, &e), -1);
	assert_int_equal(dataset_set_windows(&d, T, false, 0.5, 9, 8, false, &e), -1);
	dataset_free(&d);
	unlink(path);
	free(path);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_starts),
		cmocka_unit_test(test_repeats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
