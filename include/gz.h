/*
 * gz.h — reading a file that may be gzip-compressed (zlib), for the
 * training texts and passages the program reads whole: the corpora that
 * ship in data/ are kept compressed when large (data/README.md).
 *
 * A file is gzip when it starts with the gzip magic (1f 8b); then its
 * members are inflated one after another, as gunzip does.  Anything else
 * is read as it is (read_file_max).  Nothing here knows what the bytes mean.
 */
#ifndef ATTNSCOPE_GZ_H
#define ATTNSCOPE_GZ_H

#include <stddef.h>

#include "util.h"

/* The bytes of path, inflated when it is gzip, when the file holds at most
 * max bytes and inflates to at most max (what names the file for the
 * message, as read_file_max: "a training text").  A malloc'd buffer
 * NUL-terminated one past *len, which the caller frees; NULL and e set on
 * failure: read_file_max's errors, "PATH: not a valid gzip file (REASON)"
 * for a damaged or truncated stream, "PATH: inflates to more than the N
 * bytes WHAT may have", "PATH: does not fit in memory inflated" (never an
 * abort). */
char *gz_read_file(const char *path, size_t max, const char *what, size_t *len, struct err *e);

/* A file read from the front, inflated as it is read when it is gzip and
 * read as it is otherwise (zlib's transparent mode): for readers that need
 * only the start of a file of any size (text --file). */
struct gz_stream;

/* Takes fd (open for reading; closed by gz_stream_close, or here on
 * failure).  NULL with e set. */
struct gz_stream *gz_stream_open(int fd, const char *path, struct err *e);

/* Reads up to n bytes: the count, 0 at the end, or -1 with e set ("PATH:
 * not a valid gzip file (REASON)", "PATH: read failed: REASON"). */
long gz_stream_read(struct gz_stream *s, void *buf, size_t n, const char *path, struct err *e);

/* Closes s and its descriptor.  NULL is a no-op. */
void gz_stream_close(struct gz_stream *s);

/* Whether the n bytes at p start with the gzip magic. */
bool gz_is_gzip(const void *p, size_t n);

#endif
