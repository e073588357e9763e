/*
 * bench_llama.h — llama.cpp measured beside attnscope, where a person has
 * built it: LLAMA_BENCH in the environment names a llama-bench binary
 * (llama.cpp's benchmark tool, built from its source; nothing of llama.cpp
 * ships here).  Unset, the benches leave the llama.cpp rows out and say
 * so.
 *
 * The model both read is one GGUF file, written by the project's own
 * tests/tool_mkgguf from the model the bench built (llama.cpp's converter
 * layout, tests/gguf_write.h), so that the two programs multiply the same
 * numbers.  Each round of a bench runs llama-bench once (-r 1: one timed
 * repetition after its own warm-up) in a child process and reads its CSV:
 * avg_ns of the prompt test (pp: a batch of P tokens, the last position's
 * logits) and of the generation test (tg: N tokens, one at a time, from an
 * empty cache).  llama-bench times inside its process (the load and the
 * warm-up are not counted); so do the benches here.
 *
 * Static inline functions, as bench_common.h, for the same reason.
 */
#ifndef ATTNSCOPE_BENCH_LLAMA_H
#define ATTNSCOPE_BENCH_LLAMA_H

#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode.h"
#include "model.h"
#include "util.h"

/* The llama-bench binary LLAMA_BENCH names when it can be run, else NULL. */
static inline const char *llama_bench_path(void)
{
	const char *p = getenv("LLAMA_BENCH");
	return p && *p && access(p, X_OK) == 0 ? p : NULL;
}

/* Runs argv (argv[0] a path) with standard output into out (size bytes,
 * NUL-terminated; truncated when longer), standard error to /dev/null.
 * 0 when it exited 0, else -1. */
static inline int llama_run_capture(char *const argv[], char *out, size_t size)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(fd[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		close(fd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t n = 1;
	while (got < size - 1 && (n = read(fd[0], out + got, size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	char sink[4096]; /* what did not fit is drained, so that the child ends */
	while (n > 0)
		n = read(fd[0], sink, sizeof sink);
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Writes OUT.gguf with the project's tests/tool_mkgguf (beside the bench
 * binary self: build/bench/X -> build/tests/tool_mkgguf), args after the
 * output path (NULL-terminated, at most 16).  0, or -1. */
static inline int llama_write_gguf(const char *self, const char *out, const char *const *args)
{
	char dir[600], tool[700], sink[4096];
	snprintf(dir, sizeof dir, "%s", self);
	snprintf(tool, sizeof tool, "%s/../tests/tool_mkgguf", dirname(dir));
	char *argv[20] = { tool, (char *)out };
	int k = 2;
	for (; args[k - 2] && k < 19; k++)
		argv[k] = (char *)args[k - 2];
	argv[k] = NULL;
	return llama_run_capture(argv, sink, sizeof sink);
}

/* The column named name of CSV line `line` under header `head` (both
 * comma-separated, values quoted or not), as a number; NAN when absent. */
static inline double llama_csv_field(const char *head, const char *line, const char *name)
{
	int col = 0;
	size_t len = strlen(name);
	const char *h = head;
	for (;;) {
		if (strncmp(h, name, len) == 0 && (h[len] == ',' || h[len] == '\n' || !h[len]))
			break;
		h = strchr(h, ',');
		if (!h)
			return NAN;
		h++, col++;
	}
	const char *v = line;
	for (int c = 0; c < col; c++) { /* quoted values hold no commas here */
		v = strchr(v, ',');
		if (!v)
			return NAN;
		v++;
	}
	if (*v == '"')
		v++;
	char *end;
	double x = strtod(v, &end);
	return end == v ? NAN : x;
}

/* One llama-bench run on gguf with `threads` threads: a prompt of pp
 * tokens and a generation of tg tokens (either 0: not run).  Into *pp_ms
 * and *tg_ms: llama-bench's avg_ns of each test in ms (NAN when not run).
 * 0, or -1 (it failed or printed no such row). */
static inline int llama_bench_once(const char *bin, const char *gguf, int pp, int tg, int threads,
				   double *pp_ms, double *tg_ms)
{
	char p[16], n[16], t[16], out[8192];
	snprintf(p, sizeof p, "%d", pp);
	snprintf(n, sizeof n, "%d", tg);
	snprintf(t, sizeof t, "%d", threads);
	char *argv[] = { (char *)bin, "-m", (char *)gguf, "-p", p, "-n", n, "-t", t,
			 "-r", "1", "-o", "csv", NULL };
	*pp_ms = *tg_ms = NAN;
	if (llama_run_capture(argv, out, sizeof out) != 0)
		return -1;
	char *save = NULL, *head = strtok_r(out, "\n", &save);
	for (char *l = strtok_r(NULL, "\n", &save); head && l; l = strtok_r(NULL, "\n", &save)) {
		double np = llama_csv_field(head, l, "n_prompt"), ng = llama_csv_field(head, l, "n_gen");
		double ns = llama_csv_field(head, l, "avg_ns");
		if (np == pp && ng == 0)
			*pp_ms = ns / 1e6;
		else if (np == 0 && ng == tg)
			*tg_ms = ns / 1e6;
	}
	return (pp && isnan(*pp_ms)) || (tg && isnan(*tg_ms)) ? -1 : 0;
}

/* attnscope's side of a prompt test: decoder_prefill of tokens tok[0..n)
 * on m under o (the keys and values kept, the last position's logits),
 * after one warm-up as llama-bench has; the second's ms into *ms.  0, or
 * -1 when a decoder cannot be made or the prefill fails. */
static inline int llama_prefill_ms(struct model *m, const struct run_options *o, const int *tok,
				   int n, double *ms)
{
	struct err e;
	for (int k = 0; k < 2; k++) {
		struct decoder *d = decoder_new(m, o, n, &e);
		if (!d)
			return -1;
		double t0 = now_ms();
		int rc = decoder_prefill(d, m, tok, n, &e);
		*ms = now_ms() - t0;
		decoder_free(d);
		if (rc != 0)
			return -1;
	}
	return 0;
}

#endif
