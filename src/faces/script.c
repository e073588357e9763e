/*
 * script.c — command files, standard input and -c: lines in, cmd_run_line()
 * on each, "NAME:LINE: message" out.
 */
#include "script.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static char *no_model_note;
static bool no_model_noted;

void script_set_no_model_note(const char *note)
{
	free(no_model_note);
	no_model_note = note ? xstrdup(note) : NULL;
	no_model_noted = false;
}

void script_note_no_model(const struct session *s, FILE *errs)
{
	if (s->model || !no_model_note || no_model_noted)
		return;
	no_model_noted = true;
	fprintf(errs ? errs : stderr, "attnscope: note: %s\n", no_model_note);
}

/* Prints "name:line: msg" after flushing the command output. */
static void report(struct session *s, FILE *errs, const char *name, long line, const char *msg)
{
	if (s->out)
		fflush(s->out);
	fprintf(errs, "%s:%ld: %s\n", name, line, msg);
	script_note_no_model(s, errs);
	fflush(errs);
}

static void report_too_long(struct session *s, FILE *errs, const char *name, long line)
{
	char msg[64];
	snprintf(msg, sizeof msg, "line longer than %d bytes", SCRIPT_LINE_MAX);
	report(s, errs, name, line, msg);
}

static bool cancelled(const struct session *s)
{
	return s->cancel && *s->cancel;
}

/* run_one's result when the script must stop whatever the flags say: the
 * command's output could not be written. */
#define RUN_OUTPUT_LOST (-2)

/*
 * Runs one line (already stripped of its line ending; len bytes, which may
 * include NULs).  Returns SCRIPT_OK, SCRIPT_QUIT, SCRIPT_FAILED or
 * RUN_OUTPUT_LOST (after reporting).
 */
static int run_one(struct session *s, const char *line, size_t len, const char *name, long lineno,
		   FILE *errs)
{
	struct err e;
	size_t nul = strlen(line);
	if (nul < len) {
		err_set(&e, "the line contains a NUL byte (at column %zu); it was not run", nul + 1);
		report(s, errs, name, lineno, e.msg);
		return SCRIPT_FAILED;
	}
	e.msg[0] = '\0';
	int rc = cmd_run_line(s, line, &e);
	struct err oe;
	bool lost = s->out && stream_flush(s->out, &oe) != 0;
	if (rc < 0)
		report(s, errs, name, lineno, e.msg[0] ? e.msg : "the command failed");
	if (lost) {
		report(s, errs, name, lineno, oe.msg);
		return RUN_OUTPUT_LOST;
	}
	if (rc == CMD_QUIT)
		return SCRIPT_QUIT;
	if (rc < 0)
		return SCRIPT_FAILED;
	if (cancelled(s)) {
		report(s, errs, name, lineno, "interrupted");
		return SCRIPT_FAILED;
	}
	return SCRIPT_OK;
}

/* Folds one line's outcome rc into *result; true when the script stops here
 * (quit, lost output, or a failure in batch mode or after Ctrl-C). */
static bool settle(struct session *s, int rc, unsigned flags, int *result)
{
	if (rc == SCRIPT_QUIT) {
		*result = SCRIPT_QUIT;
		return true;
	}
	if (rc == RUN_OUTPUT_LOST) {
		*result = SCRIPT_FAILED;
		return true;
	}
	if (rc == SCRIPT_FAILED) {
		*result = SCRIPT_FAILED;
		return (flags & SCRIPT_BATCH) || cancelled(s);
	}
	return false;
}

/*
 * Reads one line of in into *buf (grown as needed, to at most max + 1
 * bytes), without its '\n' and NUL-terminated.  Returns its length in
 * bytes; -1 at the end of the input or on a read error (ferror(in) tells);
 * -2 when the line is longer than max bytes, after reading max + 1 of them
 * and nothing more.
 */
static long read_line(FILE *in, char **buf, size_t *cap, size_t max)
{
	if (!*buf) {
		*cap = 256;
		*buf = xmalloc(*cap);
	}
	size_t n = 0;
	int c;
	while ((c = getc_unlocked(in)) != EOF && c != '\n') {
		if (n == max)
			return -2;
		if (n + 1 >= *cap) {
			*cap = *cap * 2 > max + 1 ? max + 1 : *cap * 2;
			*buf = xrealloc(*buf, *cap);
		}
		(*buf)[n++] = (char)c;
	}
	if (c == EOF && (n == 0 || ferror(in)))
		return -1;
	(*buf)[n] = '\0';
	return (long)n;
}

int script_run_stream(struct session *s, FILE *in, const char *name, unsigned flags, FILE *errs)
{
	if (!errs)
		errs = stderr;
	if (s->cancel)
		*s->cancel = 0;
	char *line = NULL;
	size_t cap = 0;
	long got;
	long lineno = 0;
	int result = SCRIPT_OK;
	while ((got = read_line(in, &line, &cap, SCRIPT_LINE_MAX)) >= 0) {
		lineno++;
		size_t len = (size_t)got;
		while (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		const char *p = line;
		if (lineno == 1 && len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) {
			p += 3;
			len -= 3;
		}
		int rc = run_one(s, p, len, name, lineno, errs);
		if (settle(s, rc, flags, &result))
			break;
	}
	if (got == -2) {
		/* the rest of that line is never read: where the next line
		 * starts is unknown, so the input ends here */
		report_too_long(s, errs, name, lineno + 1);
		result = SCRIPT_FAILED;
	} else if (got < 0 && ferror(in)) {
		report(s, errs, name, lineno + 1, strerror(errno));
		result = SCRIPT_FAILED;
	}
	free(line);
	return result;
}

int script_run_file(struct session *s, const char *path, unsigned flags, FILE *errs)
{
	if (!strcmp(path, "-"))
		return script_run_stream(s, stdin, "<stdin>", flags, errs);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(errs ? errs : stderr, "attnscope: %s: %s\n", path, strerror(errno));
		return SCRIPT_FAILED;
	}
	int running = in_use_new("the command file being run");
	in_use_add(running, path);
	int rc = script_run_stream(s, f, path, flags, errs);
	in_use_drop(running);
	fclose(f);
	return rc;
}

void script_split_commands(const char *cmds, int *n, char ***out)
{
	size_t len = strlen(cmds);
	int count = 0, cap = 4;
	char **v = xmalloc((size_t)cap * sizeof *v);
	char *buf = xmalloc(len + 1);
	size_t w = 0;
	for (const char *p = cmds;; p++) {
		if (*p == '\\' && p[1] == ';') {
			buf[w++] = ';';
			p++;
		} else if (*p == '\\' && p[1]) {
			buf[w++] = p[0];
			buf[w++] = p[1];
			p++;
		} else if (*p == ';' || *p == '\0') {
			while (w > 0 && (buf[w - 1] == ' ' || buf[w - 1] == '\t'))
				w--;
			if (count + 1 >= cap) {
				cap *= 2;
				v = xrealloc(v, (size_t)cap * sizeof *v);
			}
			v[count++] = xstrndup(buf, w);
			w = 0;
			if (*p == '\0')
				break;
		} else {
			buf[w++] = *p;
		}
	}
	free(buf);
	v[count] = NULL;
	*n = count;
	*out = v;
}

int script_run_commands(struct session *s, const char *cmds, unsigned flags, FILE *errs)
{
	if (!errs)
		errs = stderr;
	if (s->cancel)
		*s->cancel = 0;
	int n;
	char **v;
	script_split_commands(cmds, &n, &v);
	int result = SCRIPT_OK;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(v[i]);
		int rc;
		if (len > SCRIPT_LINE_MAX) {
			report_too_long(s, errs, "-c", i + 1);
			rc = SCRIPT_FAILED;
		} else {
			rc = run_one(s, v[i], len, "-c", i + 1, errs);
		}
		if (settle(s, rc, flags, &result))
			break;
	}
	cmd_free_argv(n, v);
	return result;
}
