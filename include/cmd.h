/*
 * cmd.h — the one command table behind the REPL, scripts, -c, stdin and the
 * TUI's `:` prompt.  Everything a user can do goes through cmd_run().
 *
 * A command lives in one src/cmd-*.c file as a `const struct cmd_entry`
 * with a static exec function; cmd.c lists them in cmd_table[].  Help,
 * completion and "did you mean" are generated from the table.
 */
#ifndef ATTNSCOPE_CMD_H
#define ATTNSCOPE_CMD_H

#include "session.h"
#include "util.h"

/* What a command's arguments complete to. */
enum cmd_complete {
	COMPLETE_NONE,
	COMPLETE_WORDS,   /* cmd_entry.words */
	COMPLETE_MODEL,   /* model names in models/ and file paths */
	COMPLETE_HEAD,    /* layer.head ids of the loaded model */
	COMPLETE_FILE,    /* file paths */
	COMPLETE_COMMAND, /* command names (help) */
};

enum {
	CMD_RAW = 1u << 0, /* argv[1] is the rest of the line, verbatim (text, echo) */
};

/* Return values of exec and cmd_run besides 0 and -1. */
#define CMD_QUIT 1

struct cmd_entry {
	const char *name;
	const char *alias;          /* or NULL */
	const char *usage;          /* arguments, e.g. "mha | gqa N | mqa" */
	const char *help;           /* one line */
	const char *long_help;      /* a paragraph, or NULL */
	unsigned flags;
	enum cmd_complete complete;
	const char *const *words;   /* NULL-terminated, for COMPLETE_WORDS */
	int min_args, max_args;     /* after the name; max -1 = any */
	/* Runs the command.  Returns 0, CMD_QUIT, or -1 with e set. */
	int (*exec)(struct session *s, int argc, char **argv, struct err *e);
};

extern const struct cmd_entry *const cmd_table[]; /* NULL-terminated */

/* Finds a command by exact name, alias or unique prefix.  On failure NULL
 * and a message: "unknown command: X (did you mean: a, b?)" or
 * "ambiguous command: X, could be: a, b". */
const struct cmd_entry *cmd_find(const char *name, struct err *e);

/* Runs argv[0] with its arguments (checks the argument count and prints the
 * usage line on a mismatch).  0, CMD_QUIT or -1 with e set. */
int cmd_run(struct session *s, int argc, char **argv, struct err *e);

/* Splits a line into words: blanks separate, '...' and "..." quote, a
 * backslash escapes the next character, '#' at the start of a word begins a
 * comment.  For a CMD_RAW command the rest of the line after the name (one
 * blank skipped) is one argument, verbatim.  *argv is malloc'd with its
 * strings (free with cmd_free_argv).  0 or -1 (unbalanced quote). */
int cmd_split(const char *line, int *argc, char ***argv, struct err *e);
void cmd_free_argv(int argc, char **argv);

/* Splits and runs one line; blank lines and comments do nothing. */
int cmd_run_line(struct session *s, const char *line, struct err *e);

/* Parses a whole number from lo to hi (what names it in the message).
 * 0, or -1 with "ARG: WHAT must be a whole number from LO to HI". */
int cmd_parse_int(const char *arg, int lo, int hi, const char *what, int *out, struct err *e);

/* Prints the usage line of c: "usage: NAME USAGE". */
void cmd_usage(const struct cmd_entry *c, char *buf, size_t size);

#endif
