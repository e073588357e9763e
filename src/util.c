/*
 * util.c — allocation, error messages, whole-file I/O, clocks, a seeded
 * random generator and half-precision conversions.
 */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ errors */

int err_set(struct err *e, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
	if (e) {
		char prefix[ERR_MAX], old[ERR_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(prefix, sizeof prefix, fmt, ap);
		va_end(ap);
		memcpy(old, e->msg, sizeof old);
		size_t n = strlen(prefix);
		if (n > sizeof e->msg - 3)
			n = sizeof e->msg - 3;
		memcpy(e->msg, prefix, n);
		memcpy(e->msg + n, ": ", 2);
		size_t room = sizeof e->msg - n - 3;
		size_t m = strnlen(old, room);
		memcpy(e->msg + n + 2, old, m);
		e->msg[n + 2 + m] = '\0';
	}
	return -1;
}

_Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	fputs("attnscope: fatal: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* -------------------------------------------------------------- allocation */

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", count, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory (%zu bytes)", n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *xmalloc_aligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n ? n : 64) != 0)
		die("out of memory (%zu bytes)", n);
	return p;
}

bool size_mul(size_t a, size_t b, size_t *out)
{
	if (a != 0 && b > SIZE_MAX / a)
		return false;
	*out = a * b;
	return true;
}

/* --------------------------------------------------------------------- I/O */

char *read_file(const char *path, size_t *len, struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		err_set(e, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		err_set(e, "%s: not a regular file", path);
		fclose(f);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = xmalloc(n + 1);
	if (n && fread(buf, 1, n, f) != n) {
		err_set(e, "%s: read failed: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int write_file_atomic(const char *path, const void *buf, size_t len, struct err *e)
{
	size_t plen = strlen(path);
	char *tmp = xmalloc(plen + 32);
	snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		err_set(e, "%s: %s", path, strerror(errno));
		free(tmp);
		return -1;
	}
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			err_set(e, "%s: write failed: %s", path, strerror(errno));
			close(fd);
			unlink(tmp);
			free(tmp);
			return -1;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		err_set(e, "%s: write failed: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		err_set(e, "%s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

/* ------------------------------------------------------------ clock, cores */

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		int n = CPU_COUNT(&set);
		if (n > 0)
			return n;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* --------------------------------------------------------------------- rng */

void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 to spread small seeds; state must never be zero */
	uint64_t z = seed + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	r->state = z ? z : 0x2545F4914F6CDD1Dull;
}

uint32_t rng_u32(struct rng *r)
{
	uint64_t x = r->state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->state = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

float rng_uniform(struct rng *r)
{
	return (float)(rng_u32(r) >> 8) / 16777216.0f;
}

float rng_normal(struct rng *r)
{
	/* Box-Muller; u1 in (0, 1] so the log is finite */
	float u1 = 1.0f - rng_uniform(r);
	float u2 = rng_uniform(r);
	return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}

/* ------------------------------------------------------ half / bfloat16 */

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	if (exp == 0) {
		if (man == 0)
			return bits_f32(sign);
		/* subnormal: value = man * 2^-24 */
		float v = (float)man * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	if (exp == 31)
		return bits_f32(sign | 0x7f800000u | (man << 13));
	return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t exp = (u >> 23) & 0xff;
	uint32_t man = u & 0x7fffff;
	if (exp == 0xff) /* Inf or NaN */
		return sign | 0x7c00 | (man ? 0x200 : 0);
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return sign | 0x7c00;
	if (e <= 0) {
		if (e < -10)
			return sign;
		man |= 0x800000;
		int shift = 14 - e;
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return sign | (uint16_t)half;
	}
	uint32_t half = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
		half++; /* may carry into the exponent, which is still correct */
	return sign | (uint16_t)half;
}

float bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}
