/*
 * store-files.c — model files' identity (store_file_sha256): the sha256 of
 * a file, remembered in the store by device, inode, size and mtime, and in
 * the model_files table for the next run, so that a file is hashed once.
 */
#define _GNU_SOURCE
#include "store-db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"

static void remember_hash(struct store *st, const struct stat *sb, const char hex[65])
{
	struct hash_entry *h = &st->hashes[st->next_hash];
	st->next_hash = (st->next_hash + 1) % HASH_CACHE;
	*h = (struct hash_entry){ .dev = sb->st_dev, .ino = sb->st_ino, .size = sb->st_size,
				  .mtime = sb->st_mtim, .used = true };
	memcpy(h->hex, hex, 65);
}

int store_file_sha256(struct store *st, const char *path, char hex[65], struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return err_set(e, "%s: %s", path, strerror(errno));
	}
	for (int i = 0; st && i < HASH_CACHE; i++) {
		struct hash_entry *h = &st->hashes[i];
		if (h->used && h->dev == sb.st_dev && h->ino == sb.st_ino && h->size == sb.st_size &&
		    h->mtime.tv_sec == sb.st_mtim.tv_sec && h->mtime.tv_nsec == sb.st_mtim.tv_nsec) {
			memcpy(hex, h->hex, 65);
			close(fd);
			return 0;
		}
	}
	/* hashed in an earlier run: the model_files table */
	int64_t mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	sqlite3_stmt *q = st ? db_stmt(st, S_GET_HASH, NULL) : NULL;
	if (q) {
		bool found = false;
		bind_str(q, 1, path);
		sqlite3_bind_int64(q, 2, (sqlite3_int64)sb.st_size);
		sqlite3_bind_int64(q, 3, mtime_ns);
		sqlite3_bind_int64(q, 4, (sqlite3_int64)sb.st_ino);
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) == 64) {
			memcpy(hex, sqlite3_column_text(q, 0), 64);
			hex[64] = '\0';
			found = true;
		}
		db_done(q);
		if (found) {
			close(fd);
			remember_hash(st, &sb, hex);
			return 0;
		}
	}
	struct sha256 c;
	sha256_init(&c);
	size_t cap = 1 << 20;
	unsigned char *buf = xmalloc(cap);
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int er = errno;
			free(buf);
			close(fd);
			return err_set(e, "%s: %s", path, strerror(er));
		}
		if (n == 0)
			break;
		sha256_update(&c, buf, (size_t)n);
	}
	free(buf);
	close(fd);
	sha256_final(&c, hex);
	if (!st)
		return 0;
	remember_hash(st, &sb, hex);
	/* for the next run (best effort: a failure only costs hashing again) */
	q = st->dead ? NULL : db_stmt(st, S_PUT_HASH, NULL);
	if (q && db_begin(st, NULL) == 0) {
		int rc = bind_str(q, 1, path);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 2, (sqlite3_int64)sb.st_size);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 3, mtime_ns);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 4, (sqlite3_int64)sb.st_ino);
		if (rc == SQLITE_OK)
			rc = bind_str(q, 5, hex);
		if (rc != SQLITE_OK || db_run(st, q, "recording a file hash", NULL) != 0 ||
		    db_commit(st, NULL) != 0) {
			db_done(q);
			db_rollback(st);
		}
	}
	return 0;
}
