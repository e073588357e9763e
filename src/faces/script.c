/*
 * script.c — command files, standard input and -c: lines in, cmd_run_line()
 * on each, "NAME:LINE: message" out; a `zh` line gives the narrated line
 * before it its Chinese (script.h).
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

/* ------------------------------------------------------------ zh twins */

/* The text of a line "zh TEXT" (leading blanks allowed; one blank after zh
 * is dropped, as after echo): the Chinese of the line before.  NULL when
 * the line is something else. */
static const char *twin_text(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	if (strncmp(line, "zh", 2) || (line[2] != ' ' && line[2] != '\t' && line[2] != '\0'))
		return NULL;
	return line[2] ? line + 3 : line + 2;
}

/* Whether line runs echo or expect (by any name cmd_find takes): the lines
 * a zh twin may follow. */
static bool narrated(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	size_t n = strcspn(line, " \t");
	char name[16];
	if (n == 0 || n >= sizeof name)
		return false;
	memcpy(name, line, n);
	name[n] = '\0';
	const struct cmd_entry *c = cmd_find(name, NULL);
	return c && (!strcmp(c->name, "echo") || !strcmp(c->name, "expect"));
}

/* One script being run: where its messages go, how it has gone so far,
 * and the narrated line that waits for its twin. */
struct runner {
	struct session *s;
	const char *name;    /* labels messages: a file name, "<stdin>", "-c" */
	unsigned flags;      /* SCRIPT_BATCH */
	FILE *errs;
	int result;          /* SCRIPT_OK, SCRIPT_QUIT or SCRIPT_FAILED so far */
	bool after_narrated; /* the line before was echo or expect: a zh line may follow */
	char *held;          /* in Chinese, that line (held_len bytes, line held_no)
			      * until the next line says whether it has a twin; or NULL */
	size_t held_len;
	long held_no;
};

/* Runs one line with narration (its zh twin, or NULL) in effect.  True
 * when the script stops here. */
static bool run_as(struct runner *r, const char *line, size_t len, long lineno, const char *twin)
{
	r->s->narration = twin;
	int rc = run_one(r->s, line, len, r->name, lineno, r->errs);
	r->s->narration = NULL;
	return settle(r->s, rc, r->flags, &r->result);
}

/* Runs the held line, if any, with twin, and lets it go.  True when the
 * script stops here. */
static bool run_held(struct runner *r, const char *twin)
{
	if (!r->held)
		return false;
	bool stop = run_as(r, r->held, r->held_len, r->held_no, twin);
	free(r->held);
	r->held = NULL;
	return stop;
}

/* Takes the script's next line (len bytes, which may include NULs): a zh
 * line goes with the narrated line before it, and is an error anywhere
 * else; in Chinese a narrated line waits for the next line, to print its
 * twin when it has one.  True when the script stops here. */
static bool feed(struct runner *r, const char *line, size_t len, long lineno)
{
	bool whole = strlen(line) == len; /* else run_one refuses it */
	const char *twin = whole ? twin_text(line) : NULL;
	if (twin) {
		bool after = r->after_narrated;
		r->after_narrated = false;
		if (after)
			return run_held(r, twin); /* in English nothing is held */
		report(r->s, r->errs, r->name, lineno,
		       "a zh line gives the Chinese of the echo or expect line just before it, "
		       "and the line before is neither");
		return settle(r->s, SCRIPT_FAILED, r->flags, &r->result);
	}
	if (run_held(r, NULL))
		return true;
	r->after_narrated = whole && narrated(line);
	if (r->after_narrated && r->s->lang == NARRATE_ZH) {
		r->held = xmalloc(len + 1);
		memcpy(r->held, line, len);
		r->held[len] = '\0';
		r->held_len = len;
		r->held_no = lineno;
		return false;
	}
	return run_as(r, line, len, lineno, NULL);
}

/* ------------------------------------------------------------ the readers */

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
	struct runner r = { .s = s, .name = name, .flags = flags, .errs = errs ? errs : stderr };
	if (s->cancel)
		*s->cancel = 0;
	char *line = NULL;
	size_t cap = 0;
	long got;
	long lineno = 0;
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
		if (feed(&r, p, len, lineno))
			break;
	}
	bool stopped = got >= 0;
	if (!stopped && run_held(&r, NULL))
		stopped = true;
	if (!stopped && got == -2) {
		/* the rest of that line is never read: where the next line
		 * starts is unknown, so the input ends here */
		report_too_long(s, r.errs, name, lineno + 1);
		r.result = SCRIPT_FAILED;
	} else if (!stopped && ferror(in)) {
		report(s, r.errs, name, lineno + 1, strerror(errno));
		r.result = SCRIPT_FAILED;
	}
	free(line);
	return r.result;
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
	struct runner r = { .s = s, .name = "-c", .flags = flags, .errs = errs ? errs : stderr };
	if (s->cancel)
		*s->cancel = 0;
	int n;
	char **v;
	script_split_commands(cmds, &n, &v);
	bool stopped = false;
	for (int i = 0; i < n && !stopped; i++) {
		size_t len = strlen(v[i]);
		if (len <= SCRIPT_LINE_MAX) {
			stopped = feed(&r, v[i], len, i + 1);
		} else if (!(stopped = run_held(&r, NULL))) {
			report_too_long(s, r.errs, "-c", i + 1);
			r.after_narrated = false;
			stopped = settle(s, SCRIPT_FAILED, flags, &r.result);
		}
	}
	if (!stopped)
		run_held(&r, NULL);
	cmd_free_argv(n, v);
	return r.result;
}
