/*
 * cmd.h — the one command table behind the REPL, scripts, -c, stdin and the
 * TUI's `:` prompt.  Everything a user can do goes through cmd_run().
 *
 * A command lives in one src/faces/cmd-*.c file as a `const struct
 * cmd_entry` with a static exec function; cmd.c lists them in cmd_table[].  Help,
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
	CMD_RAW = 1u << 0,     /* argv[1] is the rest of the line, verbatim (text, echo) */
	CMD_STREAMS = 1u << 1, /* prints as it goes, waits for a key or takes the
				* terminal (generate, lab, pause, view): never paged */
	CMD_LOGITS = 1u << 2,  /* reads the model's output distribution: refused for
				* a model without a head (cfg_has_head) */
};

/*
 * An option a command declares in its entry (after tmux's .args): --NAME,
 * alone or with one value (also --NAME=VALUE).  cmd_args_parse reads them
 * from anywhere after the command name, checks every value against the
 * declaration, and leaves the other words as positional arguments; the
 * usage line and completion list them from the declaration.
 */
enum cmd_opt_kind {
	CMD_OPT_FLAG,  /* no value */
	CMD_OPT_INT,   /* a whole number in [lo, hi] */
	CMD_OPT_REAL,  /* a number in [lo, hi] */
	CMD_OPT_WORD,  /* any non-empty word */
};

struct cmd_opt {
	const char *name;       /* "--layers"; NULL ends a list */
	enum cmd_opt_kind kind;
	const char *arg;        /* the value as the usage line shows it: "N", "FILE" */
	double lo, hi;          /* CMD_OPT_INT and CMD_OPT_REAL */
	const char *what;       /* names the value in messages ("the layer") */
};

#define CMD_MAX_OPTS 16
#define CMD_MAX_POS 16

/* What cmd_args_parse found.  Option i of the entry's list: given[i], and
 * its value in num[i] (numbers) or str[i] (words; points into argv). */
struct cmd_args {
	int n_pos;                    /* positional words after the name */
	const char *pos[CMD_MAX_POS];
	bool given[CMD_MAX_OPTS];
	double num[CMD_MAX_OPTS];
	const char *str[CMD_MAX_OPTS];
};

/* Return values of exec and cmd_run besides 0 and -1. */
#define CMD_QUIT 1

struct cmd_cands;

struct cmd_entry {
	const char *name;
	const char *alias;          /* or NULL */
	const char *usage;          /* arguments, e.g. "mha | gqa N | mqa" */
	const char *help;           /* one line */
	const char *long_help;      /* a paragraph, or NULL */
	unsigned flags;
	enum cmd_complete complete;
	const char *const *words;   /* NULL-terminated, for COMPLETE_WORDS */
	/* Adds COMPLETE_WORDS candidates kept in another module's table (the
	 * lab's experiments, the visualizer's views); or NULL. */
	void (*more_words)(struct cmd_cands *out);
	int min_args, max_args;     /* after the name; max -1 = any (ignored with opts:
				     * they bound the positional words instead) */
	const struct cmd_opt *opts; /* declared options, or NULL */
	/* Runs the command.  Returns 0, CMD_QUIT, or -1 with e set. */
	int (*exec)(struct session *s, int argc, char **argv, struct err *e);
};

extern const struct cmd_entry *const cmd_table[]; /* NULL-terminated */

/* `attnscope pull ORG/NAME[@REVISION]` (cmd-pull.c): the pull command
 * without a session, and --help.  Returns the exit status (0, 1 when the
 * pull failed, its one line on stderr; 2 for a bad command line). */
int pull_main(int argc, char **argv);

/* Finds a command by exact name, alias or unique prefix.  On failure NULL
 * and a message: "unknown command: X (did you mean: a, b?)" or
 * "ambiguous command: X, could be: a, b". */
const struct cmd_entry *cmd_find(const char *name, struct err *e);

/* Runs argv[0] with its arguments (checks the argument count and prints the
 * usage line on a mismatch).  The files it reads with read_file() are in
 * use (util.h) until it returns: no command writes over its own input.
 * 0, CMD_QUIT or -1 with e set. */
int cmd_run(struct session *s, int argc, char **argv, struct err *e);

/* Whether s->out is shown on a terminal: it is one, or it is the pager's
 * buffer (s->out_paged).  Piped and redirected output is laid out for
 * scripts. */
bool cmd_out_tty(const struct session *s);

/* A progress line on standard error for long commands: "sweep 12/36" with
 * ctx the command's name (a const char *), cleared when done == total (the
 * visualizer shows it beside "running ..."); only when standard error is a
 * terminal (cmd_progress_shown). */
void cmd_progress(void *ctx, int done, int total);
bool cmd_progress_shown(void);

/* Columns available on s->out: the terminal's width, else $COLUMNS, else
 * 80 (what wide layouts fit themselves to). */
int cmd_out_width(const struct session *s);

/* How heatmaps printed to s->out are drawn: in colour (RENDER_ANSI, the
 * 256-colour ramp) when s->out is a terminal whose TERM or COLORTERM says
 * it has 256 colours and NO_COLOR is unset, else shading characters
 * (RENDER_UNICODE). */
int cmd_style(const struct session *s);

/* Prints text (words separated by blanks) starting at column col of the
 * current line, wrapped to width columns at blanks; continuation lines
 * start with indent blanks; ends the line.  A word longer than a line is
 * printed whole. */
void cmd_wrap(FILE *f, const char *text, int col, int indent, int width);

/* Splits a line into words: blanks separate, '...' and "..." quote, '#'
 * at the start of a word begins a comment.  Outside quotes a backslash
 * escapes a blank, a quote, a backslash or '#'; before any other character
 * it is kept ("a\nb" is those four characters, not "anb"); inside "..."
 * it escapes '"' and '\' only, inside '...' nothing.  For a CMD_RAW command the rest of the line after the name (one
 * blank skipped) is one argument, verbatim.  *argv is malloc'd with its
 * strings (free with cmd_free_argv).  0 or -1 (unbalanced quote). */
int cmd_split(const char *line, int *argc, char ***argv, struct err *e);
void cmd_free_argv(int argc, char **argv);

/* Splits and runs one line; blank lines and comments do nothing. */
int cmd_run_line(struct session *s, const char *line, struct err *e);

/* Parses a whole number from lo to hi (what names it in the message).
 * 0, or -1 with "ARG: WHAT must be a whole number from LO to HI". */
int cmd_parse_int(const char *arg, int lo, int hi, const char *what, int *out, struct err *e);

/* Reads argv (argv[0] the command's name) against c->opts into a.  0, or
 * -1 with "usage: ..." for an unknown option or a missing value, or
 * "ARG: WHAT must be ..." for a value out of its range. */
int cmd_args_parse(const struct cmd_entry *c, int argc, char **argv, struct cmd_args *a,
		   struct err *e);

/* The index of option name in c->opts (-1 when it has none: a broken
 * invariant of the caller). */
int cmd_opt_index(const struct cmd_entry *c, const char *name);

/* Whether option name was given, and its value (0 / NULL when not). */
bool cmd_has(const struct cmd_entry *c, const struct cmd_args *a, const char *name);
double cmd_num(const struct cmd_entry *c, const struct cmd_args *a, const char *name, double def);
const char *cmd_str(const struct cmd_entry *c, const struct cmd_args *a, const char *name);

/* The synopsis of c: "NAME USAGE", then its declared options as
 * "[--NAME ARG]" (help lists these). */
void cmd_synopsis(const struct cmd_entry *c, char *buf, size_t size);

/* Prints the usage line of c: "usage: " and its synopsis. */
void cmd_usage(const struct cmd_entry *c, char *buf, size_t size);

/* --------------------------------------------- completion (cmd-complete.c) */

/* What Tab offers for one word: every candidate that starts with it,
 * sorted, each once.  The editor replaces line[start, cursor) by one of
 * them (or by their common prefix, cmd_cands_common). */
struct cmd_cands {
	char *word;   /* the word being completed, line[start, cursor) */
	size_t start; /* its byte offset in the line */
	char **v;     /* the candidates, owned */
	int n, cap;
};

/*
 * Fills out (free with cmd_cands_free) for the word that ends at byte
 * cursor of line.  The first word completes to command names; after a
 * command the word completes to, in this order of precedence: export
 * formats after "--format"; paths after an option whose value is a FILE
 * (and "-o"); the command's --options for a word starting with "-"; head
 * ids and role names after a word that a head follows ("head", "heatmap", "diff"); otherwise
 * what the command's complete kind says (WORDS, MODEL and COMMAND for its
 * first argument only).  Paths are the entries of the word's directory
 * ("~/" the home directory), directories ending in '/'.  Nothing inside an
 * open quote or after a CMD_RAW command.  s may be NULL (no head ids).
 */
void cmd_complete(const struct session *s, const char *line, size_t cursor, struct cmd_cands *out);

/* Adds w when it starts with out->word and is not there yet. */
void cmd_cands_add(struct cmd_cands *out, const char *w);

/* The length of the longest prefix every candidate shares (0 for none). */
size_t cmd_cands_common(const struct cmd_cands *c);

void cmd_cands_free(struct cmd_cands *c);

/* ------------------------------------------ shared between command files */

/* Makes o the session's run options (cmd-options.c: attn, norm, mask,
 * scale, ablate, restore, reset; pitfall) and prints the summary line of
 * the new run.  0 or -1 with e set. */
int cmd_apply_options(struct session *s, const struct run_options *o, struct err *e);

/* `compare ID ID` (cmd-store.c): two measurements of the session database
 * side by side.  IDs are measurement ids, or s:ID / s:NAME for a session's
 * latest measurement.  The `compare` command (cmd-analysis.c) calls this
 * for every first argument other than `variants`.  argv[0] is the command
 * name.  0 or -1 with e set. */
int store_cmd_compare(struct session *s, int argc, char **argv, struct err *e);

#endif
