/*
 * fuzz-common.h — what the libFuzzer targets fuzz/fuzz_*.c share: the
 * crash check, a private temporary directory with the files an input is
 * written to, the one-line error rule, the checks every loaded model must
 * pass (with a forward pass), and the script runner set-up of the two
 * script targets.
 *
 * Not a target itself: the Makefile builds fuzz/fuzz_*.c, each alone, and
 * this file's name does not match that pattern.  A target includes it
 * first, after defining _GNU_SOURCE (for memmem()).  Everything here
 * is static inline, so a target that uses a few of the functions neither
 * warns about nor links the others.
 */
#ifndef ATTNSCOPE_FUZZ_COMMON_H
#define ATTNSCOPE_FUZZ_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "config.h"
#include "loader.h"
#include "model.h"
#include "script.h"
#include "session.h"
#include "tokenizer.h"
#include "util.h"

/* Stops the run with a crash that libFuzzer reports with the input. */
#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

/* The line that separates the files of a multi-file input (fuzz_hf,
 * fuzz_llama2c). */
#define FUZZ_SEP "\n--8<--\n"
#define FUZZ_SEP_LEN (sizeof FUZZ_SEP - 1)

/* A text that loaded tokenizers encode: ASCII words, CJK and an invalid
 * byte. */
#define FUZZ_TEXT "the hello, 床前 \xff\n"

/* ------------------------------------------------------- temporary files */

/* The private temporary directory, made by fuzz_make_tmpdir(). */
static char fuzz_tmpdir[64];

/* Deletes everything inside dir: its files, and its directories with what
 * they hold.  dir itself stays. */
static inline void fuzz_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno == EISDIR) {
			char sub[PATH_MAX];
			snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
			fuzz_empty_dir(sub);
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

/* Removes the temporary directory and everything in it (at exit). */
static inline void fuzz_remove_tmpdir(void)
{
	fuzz_empty_dir(fuzz_tmpdir);
	rmdir(fuzz_tmpdir);
}

/* Makes the private temporary directory fuzz_tmpdir, in /dev/shm when
 * there is one (inputs are written to files for every run), else in /tmp,
 * and has it removed at exit.  Aborts when neither works. */
static inline void fuzz_make_tmpdir(void)
{
	snprintf(fuzz_tmpdir, sizeof fuzz_tmpdir, "/dev/shm/attnscope-fuzz.XXXXXX");
	if (!mkdtemp(fuzz_tmpdir)) {
		snprintf(fuzz_tmpdir, sizeof fuzz_tmpdir, "/tmp/attnscope-fuzz.XXXXXX");
		if (!mkdtemp(fuzz_tmpdir))
			abort();
	}
	atexit(fuzz_remove_tmpdir);
}

/* What LLVMFuzzerInitialize() does first in every target that writes its
 * inputs to files (argc and argv, libFuzzer's, are not used): makes the
 * temporary directory and, with engine, runs the engine on one thread (the
 * targets that load models).  Returns 0, libFuzzer's "go on". */
static inline int fuzz_initialize(int *argc, char ***argv, bool engine)
{
	(void)argc;
	(void)argv;
	fuzz_make_tmpdir();
	if (engine)
		engine_set_threads(1);
	return 0;
}

/* "TMPDIR/name" into buf. */
static inline void fuzz_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fuzz_tmpdir, name);
}

/* Writes the n bytes at p to path, a new (or emptied) file. */
static inline void fuzz_put_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const char *s = p;

	CHECK(fd >= 0);
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		CHECK(w > 0);
		s += w;
		n -= (size_t)w;
	}
	CHECK(close(fd) == 0);
}

/* Splits data[0 .. size) at the line FUZZ_SEP into at most max parts, the
 * last taking the rest of the input (separators and all).  part[i] and
 * len[i] get part i; returns how many parts there are, one more than the
 * separators used (so at least 1: an empty part after a final separator
 * counts, a part after the last one found does not exist). */
static inline int fuzz_split(const uint8_t *data, size_t size, int max, const char **part,
			     size_t *len)
{
	const char *p = (const char *)data, *end = p + size;
	int k = 0;

	while (k + 1 < max) {
		const char *sep = memmem(p, (size_t)(end - p), FUZZ_SEP, FUZZ_SEP_LEN);
		if (!sep)
			break;
		part[k] = p;
		len[k++] = (size_t)(sep - p);
		p = sep + FUZZ_SEP_LEN;
	}
	part[k] = p;
	len[k++] = (size_t)(end - p);
	return k;
}

/* ----------------------------------------------------------------- errors */

/* A failure says why on one line, which starts with prefix (when prefix is
 * not NULL: the path of the file that failed). */
static inline void fuzz_check_error(const struct err *e, const char *prefix)
{
	CHECK(e->msg[0] != '\0' && !strchr(e->msg, '\n'));
	CHECK(!prefix || strncmp(e->msg, prefix, strlen(prefix)) == 0);
}

/* ----------------------------------------------------------------- models */

/* Opens path as `attnscope PATH [--tokenizer TOKENIZER]` would, through
 * model_open_ex() (tokenizer may be NULL), and returns the model with its
 * format in *format, or NULL after checking that the failure is one line. */
static inline struct model *fuzz_open_model(const char *path, const char *tokenizer,
					    const char **format)
{
	struct err e = { "" };
	struct model *m = model_open_ex(path, tokenizer, format, &e);

	if (!m)
		fuzz_check_error(&e, NULL);
	return m;
}

/* What every model that loads must be: a config that validates and finite
 * weights, those held as stored (held.h) whole and finite once converted. */
static inline void fuzz_check_weights(const struct model *m)
{
	struct err e = { "" };

	CHECK(config_validate(&m->cfg, &e) == 0);
	CHECK(model_held_complete(m));
	for (int i = 0; i < N_PARAMS; i++) {
		for (size_t j = 0; m->p[i] && j < m->psize[i]; j++)
			CHECK(isfinite(m->p[i][j]));
		int n = param_per_layer((enum param_id)i) ? m->cfg.n_layer : 1;
		for (int l = 0; m->held[i] && l < n; l++) {
			const struct held_mat *h = &m->held[i][l];
			float *x = xmalloc((size_t)h->rows * h->cols * sizeof *x);
			held_rows(h, 0, h->rows, x);
			for (size_t j = 0; j < (size_t)h->rows * h->cols; j++)
				CHECK(isfinite(x[j]));
			free(x);
		}
	}
}

/* Encodes text[0 .. len) with t (BOS first when t has one): every id is in
 * t's vocabulary and the ids decode.  Returns the ids (*n of them), or NULL
 * with *n = 0 when t cannot encode the text, which it must say why. */
static inline int *fuzz_encode(const struct tokenizer *t, const char *text, size_t len, int *n)
{
	struct err e = { "" };
	int *ids = NULL;

	*n = 0;
	if (tok_encode(t, text, len, 1, &ids, n, &e) < 0) {
		CHECK(e.msg[0] != '\0');
		free(ids);
		*n = 0;
		return NULL;
	}
	for (int i = 0; i < *n; i++)
		CHECK(ids[i] >= 0 && ids[i] < t->vocab_size);
	free(tok_decode(t, ids, *n));
	return ids;
}

/* Runs m's forward pass over its first min(n, context, 8) ids (none when
 * that is 0), which must succeed.  It runs on any model that loads: finite
 * weights as large as float holds overflow the activations, so the logits
 * may be Inf or NaN, which is allowed; a crash or undefined behaviour (as
 * UBSan stops on) is not. */
static inline void fuzz_forward(struct model *m, const int *ids, int n)
{
	int T = n < m->cfg.context ? n : m->cfg.context;
	T = T < 8 ? T : 8;
	if (T <= 0)
		return;

	struct err e = { "" };
	struct run_options o;
	run_options_native(m, &o);
	struct run *r = run_new(&m->cfg, 1, T, RUN_LOGITS);
	CHECK(model_forward(m, &o, ids, NULL, 1, T, r, &e) == 0);
	run_free(r);
}

/* Checks a loaded model that may have no tokenizer (an attnscope
 * checkpoint) or any tokenizer within its vocabulary: fuzz_check_weights(),
 * FUZZ_TEXT through fuzz_encode() when there is a tokenizer, then a forward
 * pass over those ids, or over ids 0, 1, ... 7 (modulo the vocabulary) when
 * there is no tokenizer or it cannot encode the text. */
static inline void fuzz_exercise_model(struct model *m)
{
	int *ids = NULL, n = 0;

	fuzz_check_weights(m);
	if (m->tok) {
		CHECK(m->tok->vocab_size >= 1 && m->tok->vocab_size <= m->cfg.vocab_size);
		ids = fuzz_encode(m->tok, FUZZ_TEXT, sizeof FUZZ_TEXT - 1, &n);
	}
	if (n == 0) {
		free(ids);
		n = 8;
		ids = xmalloc((size_t)n * sizeof *ids);
		for (int i = 0; i < n; i++)
			ids[i] = i % m->cfg.vocab_size;
	}
	fuzz_forward(m, ids, n);
	free(ids);
}

/* ---------------------------------------------------------------- scripts */

/* An output stream to /dev/null, opened on first use (aborts if it cannot
 * be). */
static inline FILE *fuzz_devnull(void)
{
	static FILE *devnull;

	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	return devnull;
}

/* True when the line line[0 .. len) (up to a NUL) splits into words and
 * its first word names (or abbreviates, as cmd_find() takes it) one of the
 * commands in names, a NULL-terminated list. */
static inline bool fuzz_line_runs(const char *line, size_t len, const char *const *names)
{
	char *copy = xstrndup(line, len);
	int argc;
	char **argv;
	bool found = false;

	if (cmd_split(copy, &argc, &argv, NULL) == 0) {
		const struct cmd_entry *c = argc > 0 ? cmd_find(argv[0], NULL) : NULL;
		for (int i = 0; c && names[i] && !found; i++)
			found = !strcmp(c->name, names[i]);
		cmd_free_argv(argc, argv);
	}
	free(copy);
	return found;
}

/* A copy of data[0 .. size) in which every line (up to '\n') for which
 * blank(line, len) is true is overwritten with spaces.  A byte-order mark
 * before line 1 is passed over, as the script runner drops it. */
static inline char *fuzz_blank_lines(const uint8_t *data, size_t size,
				     bool (*blank)(const char *line, size_t len))
{
	char *text = xmalloc(size ? size : 1);

	memcpy(text, data, size);
	for (size_t i = 0; i < size;) {
		if (i == 0 && size >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
			i = 3;
		size_t j = i;
		while (j < size && text[j] != '\n')
			j++;
		if (blank(text + i, j - i))
			memset(text + i, ' ', j - i);
		i = j + 1;
	}
	return text;
}

/* Starts s as a non-interactive session without a model that writes to
 * /dev/null and is never cancelled. */
static inline void fuzz_session_init(struct session *s)
{
	static volatile sig_atomic_t cancel;

	session_init(s, fuzz_devnull());
	s->interactive = false;
	s->cancel = &cancel;
}

/* Runs text[0 .. size) as the command file "fuzz" on s with flags
 * (SCRIPT_BATCH or 0), output and messages to /dev/null; the result must be
 * one of the runner's three values. */
static inline void fuzz_run_script(struct session *s, char *text, size_t size, unsigned flags)
{
	FILE *in = fmemopen(text, size, "r");

	CHECK(in != NULL);
	int rc = script_run_stream(s, in, "fuzz", flags, fuzz_devnull());
	CHECK(rc == SCRIPT_OK || rc == SCRIPT_QUIT || rc == SCRIPT_FAILED);
	fclose(in);
}

#endif
