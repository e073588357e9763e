/*
 * flags.h — a command's flags declared once, in a table, from which both
 * the parser and the --help lines are made (tmux's declared args, not a
 * parser per command).  Each row names a flag, its kind, where its value
 * goes (an offset in the caller's options struct), its range, its default
 * and its help.  Values are "--flag VALUE" or "--flag=VALUE"; a boolean
 * takes none; later flags win.
 *
 * Ownership: the parser stores pointers into argv for FLAG_STR, so argv
 * must outlive the options.  Nothing is allocated.
 *
 * Failure: 0, or -1 with a one-line message naming the flag ("--steps:
 * '1.5' is not a whole number", "unknown option '--x'", "--steps needs a
 * value (N)").
 */
#ifndef ATTNSCOPE_FLAGS_H
#define ATTNSCOPE_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "util.h"

enum flag_kind {
	FLAG_STR,     /* const char *, not empty */
	FLAG_INT,     /* int, a whole number in lo..hi */
	FLAG_LONG,    /* long, a whole number in lo..hi */
	FLAG_NATURAL, /* long long >= 0, any size (a seed) */
	FLAG_DOUBLE,  /* double in lo..hi */
	FLAG_BOOL,    /* bool, set true by the flag alone */
	FLAG_CHOICE,  /* any field, set by choice(): 0, or -1 for a value it does not know */
};

struct flag {
	const char *name;  /* "--steps" */
	enum flag_kind kind;
	size_t off;        /* offsetof the field in the options struct */
	double lo, hi;     /* FLAG_INT, FLAG_LONG, FLAG_DOUBLE: the range, inclusive */
	unsigned marks;    /* the caller's own bits; not read here */
	const char *arg;   /* the value's name in messages and help ("N"); NULL for FLAG_BOOL */
	const char *def;   /* the default, parsed like a value and shown at the end of the
			    * help as " (DEF)"; NULL: the field is left as it was */
	const char *help;
	int (*choice)(const char *v, void *field); /* FLAG_CHOICE */
};

/* Sets the fields of every flag with a default, in opts.  0, or -1 when a
 * default does not parse (a mistake in the table). */
int flags_defaults(const struct flag *t, size_t n, void *opts, struct err *e);

/* Parses args[0..argc) onto opts.  After each flag is set, seen (when not
 * NULL) is called with ctx, the row and the value (NULL for a boolean). */
int flags_parse(const struct flag *t, size_t n, void *opts, int argc, char **args,
		void (*seen)(void *ctx, const struct flag *f, const char *v), void *ctx,
		struct err *e);

/* One line per flag, in table order: "  --name ARG" padded to width + 2
 * columns, a space, the help and " (DEF)" when there is a default. */
void flags_usage(FILE *f, const struct flag *t, size_t n, int width);

#endif
