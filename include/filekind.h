/*
 * filekind.h — naming what a path is when it is not the regular file a
 * reader expects, before opening it: opening a FIFO for reading blocks
 * until a writer comes, and a device such as /dev/zero never ends.
 *
 * Readers of user-named files (train --data, FILE.optim, model files and
 * --tokenizer, the session database) call file_refuse_special() first.
 */
#ifndef ATTNSCOPE_FILEKIND_H
#define ATTNSCOPE_FILEKIND_H

#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

/* "a directory", "a FIFO", "a character device", "a block device",
 * "a socket", or "a regular file"; "a special file" for anything else. */
const char *file_kind(mode_t mode);

/*
 * Checks path (symbolic links followed) without opening it.  0 when it
 * does not exist (the caller's open reports that) or is a regular file, or
 * a directory when dir_ok.  Otherwise -1 with "PATH: is a FIFO, not WHAT"
 * in e, WHAT being what the caller reads ("a regular file", "a model file
 * or directory").
 */
int file_refuse_special(const char *path, bool dir_ok, const char *what, struct err *e);

#endif
