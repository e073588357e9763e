/*
 * text-input.h — what the `text` command accepts besides plain words:
 * escapes for characters a command line cannot hold (newline, tab) and
 * passages cut from a file.  Pure functions over strings and files; the
 * session runs the result.
 *
 * Escapes (text_unescape): \n newline, \t tab, \\ one backslash; a
 * backslash before anything else stays as it is.  text_escape writes a
 * text back in that form, so that `text ESCAPED` sets exactly the text.
 */
#ifndef ATTNSCOPE_TEXT_INPUT_H
#define ATTNSCOPE_TEXT_INPUT_H

#include <stddef.h>

#include "tokenizer.h"
#include "util.h"

/* The text s with its escapes decoded.  malloc'd; never NULL. */
char *text_unescape(const char *s);

/* s with backslash, newline and tab escaped (the inverse of
 * text_unescape).  malloc'd; never NULL. */
char *text_escape(const char *s);

/* A passage of a UTF-8 text file, for `text --file`. */
struct text_passage {
	char *text;        /* malloc'd, NUL-terminated: the passage's exact bytes */
	long first;        /* its first character's index in the file (characters) */
	long chars;        /* its length in characters */
	long long file_bytes; /* the file's size in bytes */
	int tokens;        /* what t encodes it to, without BOS */
};

/* Reads path (a regular file: open_regular; inflated as it is read when
 * gzip: gz.h), skips `offset` characters and
 * keeps the longest run of whole characters that t encodes into at most
 * max_tokens tokens (BOS not counted; max_tokens >= 1).  Reads only the
 * file's first bytes as far as the passage needs (the skipped ones a chunk
 * at a time), so a file of any size costs memory for the passage alone.
 * Fills p (free p->text).  Fails with one line naming the file for an
 * unreadable file, a NUL byte in the passage (the rest of the file is not
 * looked at), or an offset at or past the end.  0 or -1. */
int text_passage(const struct tokenizer *t, const char *path, long offset, int max_tokens,
		 struct text_passage *p, struct err *e);

#endif
