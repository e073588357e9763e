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
/* Aligned (64-byte) allocation for large float blocks; free with free(). */
void *xmalloc_aligned(size_t n);

/* Checked multiplication for sizes: returns false on overflow. */
bool size_mul(size_t a, size_t b, size_t *out);

/* Prints "attnscope: fatal: ..." and aborts.  For broken invariants only. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads a whole file.  On success returns a malloc'd buffer (NUL-terminated
 * one past *len) that the caller frees; on failure returns NULL and sets e. */
char *read_file(const char *path, size_t *len, struct err *e);

/* Writes len bytes to path atomically (temp file + rename).  0 or -1. */
int write_file_atomic(const char *path, const void *buf, size_t len, struct err *e);

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

#endif
