/*
 * gz.h — reading a file that may be gzip-compressed (zlib), for the
 * training texts and passages the program reads whole: the corpora that
 * ship in data/ are kept compressed when large (data/README.md).
 *
 * A file is gzip when it starts with the gzip magic (1f 8b); then its
 * members are inflated one after another, as gunzip does.  Anything else
 * is read as it is (read_file).  Nothing here knows what the bytes mean.
 */
#ifndef ATTNSCOPE_GZ_H
#define ATTNSCOPE_GZ_H

#include <stddef.h>

#include "util.h"

/* The most a gzip file may inflate to (2 GiB, what a training text may
 * have): a larger or endless stream is refused rather than filling memory. */
#define GZ_MAX_BYTES ((size_t)1 << 31)

/* The bytes of path, inflated when it is gzip.  As read_file: a malloc'd
 * buffer NUL-terminated one past *len, which the caller frees; NULL and e
 * set on failure: the file's own error, or "PATH: not a valid gzip file
 * (REASON)" for a damaged or truncated stream, or "PATH: inflates to more
 * than 2 GiB". */
char *gz_read_file(const char *path, size_t *len, struct err *e);

/* Whether the n bytes at p start with the gzip magic. */
bool gz_is_gzip(const void *p, size_t n);

#endif
