/*
 * util.h — memory, errors and checked I/O shared by every module.
 *
 * Error convention: a function that can fail because of something a user did
 * (a bad file, a bad argument) returns -1 (or NULL) and fills an `struct err`
 * with one line that says what and where.  Out-of-memory and broken internal
 * invariants are fatal: xmalloc() and friends print and abort.
 */
#ifndef ATTNSCOPE_UTIL_H
#define ATTNSCOPE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define ERR_MAX 512

/* One-line error message.  Pass NULL where the caller does not care. */
struct err {
	char msg[ERR_MAX];
};

/* Formats into e->msg (when e is not NULL) and returns -1, so that
 * `return err_set(e, "...")` reads naturally.  Later calls overwrite. */
int err_set(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefixes the message already in e with "prefix: ". Returns -1. */
int err_prefix(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Allocation that never returns NULL: aborts with a message on failure.
 * A zero size returns a valid, freeable pointer. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Aligned allocation for float blocks; free with free() or xfree_aligned.
 * Blocks of at least XMALLOC_HUGE bytes are aligned to and rounded up to
 * 2 MiB, their whole 2 MiB pages marked MADV_HUGEPAGE, so that where
 * transparent huge pages are in "madvise" mode (or "always") the first
 * touch faults once per 2 MiB instead of once per 4 KiB page (the last
 * part-page stays in 4 KiB pages: no memory beyond n is touched); smaller
 * blocks are 64-byte aligned.  Where the kernel has no huge pages the
 * advice is ignored and the block is an ordinary one. */
#define XMALLOC_HUGE ((size_t)2 << 20)
void *xmalloc_aligned(size_t n);
/* Frees a block of xmalloc_aligned (or NULL); one it made huge (above,
 * with the advice on) is kept for a later xmalloc_aligned it fits (up to
 * an eighth larger), whose pages are then faulted in already: a run freed
 * and made again at the same size costs no page faults.  A request no kept block
 * fits frees them all first, so kept blocks never add to the peak; until
 * then they stay in the process (xmalloc_release frees them).  A reused
 * block is not cleared: it holds what it held (under ASan, 0xff bytes). */
void xfree_aligned(void *p);
void xmalloc_release(void);
/* Bytes of the blocks xfree_aligned keeps now (for tests and benchmarks). */
size_t xmalloc_kept_bytes(void);

/* Marks n bytes at p unusable (mem_poison) or usable again under
 * AddressSanitizer, so that a read or write of them is reported; nothing
 * elsewhere.  For memory the program keeps but must not touch: a kept
 * block, the gap between two buffers of one allocation. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define mem_poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define mem_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define mem_poison(p, n) ((void)(p), (void)(n))
#define mem_unpoison(p, n) ((void)(p), (void)(n))
#endif
/* Turns the huge-page advice above on (the default) or off for the blocks
 * allocated after the call: for benchmarks that measure both. */
void xmalloc_huge_pages(bool on);

/* Checked multiplication for sizes: returns false on overflow. */
bool size_mul(size_t a, size_t b, size_t *out);

/* Prints "attnscope: fatal: ..." and aborts.  For broken invariants only. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads a whole regular file: read_file_max() without a limit (below). */
char *read_file(const char *path, size_t *len, struct err *e);

/*
 * Files named by a user (export --out, train --out and its FILE.optim, the
 * models tool_mkmodel writes) are written by the functions below, under one
 * set of rules:
 *   - an existing regular file is replaced atomically: the bytes go to a
 *     temporary file beside it ("FILE.tmp.PID"), which is flushed to disk
 *     and renamed over it; it keeps its mode (and, where the system allows,
 *     its owner and group);
 *   - a symbolic link (or a chain of them) is followed and the file it
 *     names is replaced as above, in that file's directory; the link stays.
 *     A link to nothing creates the file it names;
 *   - a new file gets mode 0666 less the umask;
 *   - an existing file this process may not write is refused:
 *     "PATH: the file is read-only";
 *   - a directory, device, FIFO or socket is refused:
 *     "PATH: is a FIFO, not a regular file";
 *   - "-" and "/dev/stdout" are standard output where the caller accepts
 *     it (OUT_STDOUT; write_file_atomic), written directly; elsewhere they
 *     are refused.
 * Messages are one line that starts with the path as given.
 */
enum {
	OUT_STDOUT = 1u << 0, /* "-" and "/dev/stdout" mean standard output */
};

/* Whether path names standard output ("-" or "/dev/stdout"). */
bool out_is_stdout(const char *path);

/* Checks, without writing anything, that path may be written under the
 * rules above and that the directory the temporary file goes to is
 * writable: for refusing before long work.  0, or -1 with e set. */
int out_check(const char *path, unsigned flags, struct err *e);

/* A file being written: out_open(), write(2) to fd, then out_commit() or
 * out_abort().  Standard output is not accepted here. */
struct out_file {
	int fd;       /* write the bytes here; -1 when closed */
	char *path;   /* the name given, for messages */
	char *target; /* the file that will be replaced (links followed) */
	char *tmp;    /* the temporary file renamed onto target */
};

/* Creates the temporary file for path.  0, or -1 with e set and nothing
 * created (o is then safe to pass to out_abort()). */
int out_open(struct out_file *o, const char *path, struct err *e);

/* Flushes the temporary file to disk, closes it and renames it over the
 * target.  0, or -1 with e set ("PATH: ...") and the temporary file
 * removed.  Releases o either way. */
int out_commit(struct out_file *o, struct err *e);

/* Closes and removes the temporary file and releases o.  A no-op after
 * out_commit() or a failed out_open(). */
void out_abort(struct out_file *o);

/* Writes len bytes to path under the rules above; "-" and "/dev/stdout"
 * write them to standard output (through stdout, flushed).  0, or -1 with
 * e set ("error writing standard output: REASON" for standard output). */
int write_file_atomic(const char *path, const void *buf, size_t len, struct err *e);

/*
 * Files in use, which no writer above replaces: the session database and
 * its -wal, -shm and -journal, the loaded model's files and its
 * tokenizer's, the command file being run, the training data, a file the
 * running command reads.  A file is known by its identity (device and
 * inode, symbolic links followed) and by its name in its directory (that
 * directory's device and inode, and the last component), so a hard link,
 * a symbolic link, another spelling of the path, or a -wal not created
 * yet are the same file.  out_check(), out_open() and write_file_atomic()
 * refuse one: "PATH: is the session database; refusing to write over it".
 *
 * Files are marked in groups, each with a noun phrase for messages ("the
 * session database", "a file of the loaded model"); a group lives until
 * in_use_drop().  For the main thread only.
 */

/* A new empty group; its id (> 0), for the calls below.  what is copied. */
int in_use_new(const char *what);

/* Marks path in group id: the file (links followed; one that does not
 * exist yet by its name), or each regular file directly in a directory.
 * A path whose directory does not exist marks nothing. */
void in_use_add(int id, const char *path);

/* While on, every file read_file() opens (and every path passed to
 * in_use_read()) joins group id too. */
void in_use_record(int id, bool on);

/* For readers that open a file themselves: joins path to the groups
 * recording. */
void in_use_read(const char *path);

/* Ends group id: its files may be written again.  0 is a no-op. */
void in_use_drop(int id);

/* What a path is, for refusing special files before opening them: opening
 * a FIFO for reading blocks until a writer comes, and a device such as
 * /dev/zero never ends.  Readers of user-named files (train --data,
 * FILE.optim, model files and --tokenizer, the session database) call
 * file_refuse_special() first. */
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

/* Flushes f and tells whether every write to it so far succeeded.  0, or
 * -1 with "error writing standard output: REASON" in e ("error writing
 * output" when f is not stdout).  The error flag of f is cleared then, so
 * that one failure is reported once. */
int stream_flush(FILE *f, struct err *e);

/* At exit: stream_flush(stdout), then fclose(stdout).  0, or -1 after
 * printing "attnscope: error writing standard output: REASON" on stderr. */
int stdout_close(void);

/* Monotonic clock in milliseconds. */
double now_ms(void);

/* Number of CPU cores available to this process (at least 1). */
int cpu_count(void);

/* Small deterministic generator (xorshift64*), so runs reproduce. */
struct rng {
	uint64_t state;
};
void rng_seed(struct rng *r, uint64_t seed);
uint32_t rng_u32(struct rng *r);
float rng_uniform(struct rng *r);  /* in [0, 1) */
float rng_normal(struct rng *r);   /* standard normal */

/* IEEE half and bfloat16 conversions (round to nearest even). */
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);

/* The element types weight files store, as the readers see them.
 * DTYPE_OTHER is any other (a U8 mask buffer in a Hugging Face file, say):
 * listed by a reader, never converted. */
enum dtype { DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_OTHER };

/* Bytes per element: 4, 2, 2, and 0 for DTYPE_OTHER. */
size_t dtype_size(enum dtype t);

/* Converts n elements of type t, little-endian bytes at src (any
 * alignment), to floats in dst[0..n).  src and dst must not overlap.  The
 * one conversion every reader uses; NaN and Inf pass through (the readers
 * refuse them after).  DTYPE_OTHER is a broken invariant (die). */
void dtype_to_f32(float *dst, const void *src, size_t n, enum dtype t);

/* Bytes this process may still allocate: the kernel's MemAvailable, less
 * when an address-space limit (ulimit -v) is nearer.  < 0 when unknown. */
double mem_available(void);

/* Formats a byte count with binary units ("1.25 GiB", "160 MiB", "896 B"). */
void format_bytes(double bytes, char *buf, size_t size);

/* Formats a duration in seconds: "1h02m03s", "4m05s", "12s"; "?" when
 * negative, NAN or over 1e8 s. */
void format_duration(double seconds, char *buf, size_t size);

/* s quoted for a POSIX shell (malloc'd): as is when it has only the
 * characters a-z A-Z 0-9 - _ . / : = , + @ % and is not empty, else in
 * single quotes with ' written as '\''. */
char *shell_quote(const char *s);

/* Levenshtein distance between a and b (bytes); 99 when either is longer
 * than 98 bytes.  For "did you mean" suggestions. */
int edit_distance(const char *a, const char *b);

/* ------------------------------------------ regular files, read bounded */

/*
 * Opens path (symbolic links followed) for reading when it is a regular
 * file, race-free: the open does not block on a FIFO (O_NONBLOCK, cleared
 * after), and what is refused is what the descriptor is (fstat), not what
 * the name was a moment before.  Every reader of a file a user names goes
 * through here.  Returns the descriptor (O_CLOEXEC), or -1 with e set to
 * "is a FIFO, not a regular file" (file_kind) or the system's reason,
 * without the path, which the caller adds.
 */
int open_regular(const char *path, struct err *e);

/* Reads the whole regular file path (open_regular) when it holds at most
 * max bytes.  Returns a malloc'd buffer, NUL-terminated one past *len,
 * that the caller frees; or NULL with e set: "PATH: is a FIFO, not a
 * regular file", "PATH: 3 GiB is more than the 2 GiB WHAT may have"
 * (what: "a training text"; NULL: "a file read whole"), "PATH: SIZE does
 * not fit in memory" (never an abort), "PATH: REASON". */
char *read_file_max(const char *path, size_t max, const char *what, size_t *len, struct err *e);

#endif
