/*
 * script.h — runs commands that are not typed at the REPL: command files
 * (-f FILE), standard input when it is not a terminal, and -c "CMD; CMD".
 *
 * Every line goes through cmd_run_line(), so a script can do exactly what a
 * person at the prompt can.  Rules:
 *   - one command per line; blank lines and lines starting with '#' do
 *     nothing; a trailing "\r" (CRLF files) and a UTF-8 byte-order mark at
 *     the start of the first line are dropped;
 *   - a line longer than SCRIPT_LINE_MAX bytes (not counting its '\n') is
 *     refused: "NAME:LINE: line longer than 1048576 bytes"; in a file or
 *     a stream reading stops there (the rest of the line is never read),
 *     so the script ends whatever the flags; a line containing a NUL byte
 *     is refused with an error (it is never run);
 *   - only -c splits on ';' ("\;" keeps a literal semicolon): in files
 *     `text a; b` sets the text "a; b";
 *   - a line `zh TEXT` right after an echo or expect line is that line's
 *     Chinese twin: with the session's language NARRATE_ZH (attnscope
 *     --lang zh) the narrated line runs with s->narration = TEXT, so echo
 *     prints TEXT and expect checks its own EXPR but prints TEXT as its
 *     sentence; in English the twin does nothing.  A narrated line without
 *     a twin prints its own text in both.  In Chinese a narrated line runs
 *     once the line after it has been read (or the input has ended).  A zh
 *     line anywhere else is an error ("NAME:LINE: a zh line gives ...");
 *     the same holds for the commands of -c;
 *   - `quit` ends the script (and the program) with status 0;
 *   - errors are printed as "NAME:LINE: message" on the error stream; with
 *     SCRIPT_BATCH the first error stops the script, otherwise the script
 *     goes on with the next line;
 *   - the session's output is flushed after every command; when it could
 *     not be written the script stops there, whatever the flags, with
 *     "NAME:LINE: error writing standard output: REASON".
 */
#ifndef ATTNSCOPE_SCRIPT_H
#define ATTNSCOPE_SCRIPT_H

#include <stdio.h>

#include "session.h"

enum {
	SCRIPT_BATCH = 1u << 0, /* stop at the first failing command */
};

/* The longest script line read, in bytes: far above any model's context. */
#define SCRIPT_LINE_MAX 1048576

/* Results of the script_run_* functions. */
enum {
	SCRIPT_OK = 0,      /* every command succeeded (or the input was empty) */
	SCRIPT_QUIT = 1,    /* `quit` ran: the caller ends with status 0 */
	SCRIPT_FAILED = -1, /* a command failed (with SCRIPT_BATCH: the script stopped there),
			     * the file could not be read, a line was too long, the
			     * output could not be written, or the run was interrupted */
};

/* Runs the lines of in.  name labels messages ("<stdin>", a file name).
 * Errors go to errs (stderr when NULL); s->out is flushed before each
 * message so that output and errors interleave in order. */
int script_run_stream(struct session *s, FILE *in, const char *name, unsigned flags,
		      FILE *errs);

/* Opens path and runs it as above; "-" reads standard input ("<stdin>").
 * The file is in use (util.h) while it runs. */
int script_run_file(struct session *s, const char *path, unsigned flags, FILE *errs);

/* Runs the commands of one -c argument, split by script_split_commands();
 * messages are labelled "-c:N:" with N the command's position (from 1). */
int script_run_commands(struct session *s, const char *cmds, unsigned flags, FILE *errs);

/* Splits a -c argument on ';'.  "\;" becomes a literal ';'; every other
 * backslash pair is kept as it is (for cmd_split to interpret), so "\\;"
 * is a backslash followed by a separator.  Blanks at the end of each
 * command are dropped; empty commands are kept (they do nothing).
 * *out is a malloc'd array of *n malloc'd strings (free with
 * cmd_free_argv).  Never fails. */
void script_split_commands(const char *cmds, int *n, char ***out);

/* Why the session may have no model — for example the error of loading the
 * default model at start.  After the first failed command while no model
 * is loaded, script_note_no_model() prints it once as
 * "attnscope: note: NOTE".  NULL clears it.  The text is copied. */
void script_set_no_model_note(const char *note);
void script_note_no_model(const struct session *s, FILE *errs);

#endif
