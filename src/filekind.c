/*
 * filekind.c — what a path is, for refusing special files before opening
 * them (filekind.h).
 */
#define _GNU_SOURCE
#include "filekind.h"

#include <sys/stat.h>

const char *file_kind(mode_t mode)
{
	return S_ISREG(mode)    ? "a regular file"
	       : S_ISDIR(mode)  ? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISCHR(mode)  ? "a character device"
	       : S_ISBLK(mode)  ? "a block device"
	       : S_ISSOCK(mode) ? "a socket"
				: "a special file";
}

int file_refuse_special(const char *path, bool dir_ok, const char *what, struct err *e)
{
	struct stat st;
	if (stat(path, &st) != 0 || S_ISREG(st.st_mode) || (dir_ok && S_ISDIR(st.st_mode)))
		return 0;
	return err_set(e, "%s: is %s, not %s", path, file_kind(st.st_mode), what);
}
