/*
 * util.c — allocation, error messages, whole-file I/O and the rules for
 * the files attnscope writes, write errors on standard output, clocks, a
 * seeded random generator, half-precision conversions and the one loop
 * that turns a weight file's F16, BF16 or F32 bytes into floats.
 */
#define _GNU_SOURCE
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

static bool huge_pages = true;

void xmalloc_huge_pages(bool on)
{
	huge_pages = on;
}

/* Huge blocks (2 MiB aligned, XMALLOC_HUGE bytes or more) given back with
 * xfree_aligned, kept for the next xmalloc_aligned they fit (up to an
 * eighth larger): their pages are already faulted in.  A request none fits
 * frees them all first, so that what is kept never adds to the peak.  A
 * kept block is poisoned under ASan: a use after xfree_aligned is caught. */
#define KEPT_MAX 64
static struct kept { void *p; size_t size; } kept[KEPT_MAX];
static int n_kept;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;

static void kept_free(int i)
{
	mem_unpoison(kept[i].p, kept[i].size);
	free(kept[i].p);
}

static void *kept_take(size_t size)
{
	void *p = NULL;
	pthread_mutex_lock(&kept_mu);
	for (int i = 0; i < n_kept && !p; i++)
		if (kept[i].size >= size && kept[i].size - size <= size / 8 + XMALLOC_HUGE) {
			p = kept[i].p;
			mem_unpoison(p, kept[i].size);
			kept[i] = kept[--n_kept];
		}
	if (!p) {
		for (int i = 0; i < n_kept; i++)
			kept_free(i);
		n_kept = 0;
	}
	pthread_mutex_unlock(&kept_mu);
#ifdef __SANITIZE_ADDRESS__
	if (p) /* tests under ASan see a reused block as garbage, never as zeros */
		memset(p, 0xff, size);
#endif
	return p;
}

void *xmalloc_aligned(size_t n)
{
	void *p = NULL;
	size_t align = 64, size = n ? n : 64;
	bool huge = huge_pages && n >= XMALLOC_HUGE && n <= SIZE_MAX - XMALLOC_HUGE;
	if (huge) {
		align = XMALLOC_HUGE;
		size = (n + XMALLOC_HUGE - 1) / XMALLOC_HUGE * XMALLOC_HUGE;
	}
	if (n >= XMALLOC_HUGE && (p = kept_take(size)) != NULL)
		return p;
	if (posix_memalign(&p, align, size) != 0)
		die("out of memory (%zu bytes)", n);
#ifdef MADV_HUGEPAGE
	/* advice only: EINVAL where the kernel has no transparent huge pages.
	 * Huge pages for the whole 2 MiB pages of the n bytes asked for; the
	 * last part-page in 4 KiB pages (also in "always" mode), touched only
	 * as far as it is used: a huge one there would hold up to 2 MiB the
	 * caller never asked for. */
	if (huge) {
		size_t whole = n / XMALLOC_HUGE * XMALLOC_HUGE;
		(void)madvise(p, whole, MADV_HUGEPAGE);
		if (whole < size)
			(void)madvise((char *)p + whole, size - whole, MADV_NOHUGEPAGE);
	}
#endif
	return p;
}

void xfree_aligned(void *p)
{
	/* the blocks xmalloc_aligned made huge: 2 MiB aligned, 2 MiB or more */
	size_t size = p && (uintptr_t)p % XMALLOC_HUGE == 0 ? malloc_usable_size(p) : 0;
	if (size < XMALLOC_HUGE) {
		free(p);
		return;
	}
	pthread_mutex_lock(&kept_mu);
	bool room = n_kept < KEPT_MAX;
	if (room) {
		mem_poison(p, size);
		kept[n_kept++] = (struct kept){ p, size };
	}
	pthread_mutex_unlock(&kept_mu);
	if (!room)
		free(p);
}

size_t xmalloc_kept_bytes(void)
{
	size_t n = 0;
	pthread_mutex_lock(&kept_mu);
	for (int i = 0; i < n_kept; i++)
		n += kept[i].size;
	pthread_mutex_unlock(&kept_mu);
	return n;
}

void xmalloc_release(void)
{
	pthread_mutex_lock(&kept_mu);
	for (int i = 0; i < n_kept; i++)
		kept_free(i);
	n_kept = 0;
	pthread_mutex_unlock(&kept_mu);
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
	return read_file_max(path, SIZE_MAX, NULL, len, e);
}

/* ---------------------------------------------------- files attnscope writes */

bool out_is_stdout(const char *path)
{
	return !strcmp(path, "-") || !strcmp(path, "/dev/stdout");
}

/* The directory holding path (malloc'd): "." for a bare name. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	return xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* The contents of the symbolic link at path (malloc'd), or NULL with errno
 * set. */
static char *read_link(const char *path)
{
	for (size_t cap = 256;; cap *= 2) {
		char *buf = xmalloc(cap);
		ssize_t n = readlink(path, buf, cap);
		if (n >= 0 && (size_t)n < cap) {
			buf[n] = '\0';
			return buf;
		}
		int saved = n < 0 ? errno : ENAMETOOLONG;
		free(buf);
		if (n < 0 || cap >= (1u << 16)) {
			errno = saved;
			return NULL;
		}
	}
}

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

/* ------------------------------------------------------------ files in use */

/* A file as util.h's files in use know it. */
struct in_use_file {
	bool exists;          /* dev and ino are the file's */
	dev_t dev, dir_dev;
	ino_t ino, dir_ino;   /* dir_*: the directory holding it */
	char *name;           /* its last component there; owned */
};

struct in_use_group {
	int id;
	char *what;           /* owned */
	bool recording;
	struct in_use_file *f; /* (n) owned */
	int n, cap;
};

static struct in_use_group *in_use;  /* (n_in_use) the groups alive */
static int n_in_use, cap_in_use, in_use_next = 1;

/* Fills f with what path names, links followed: a file that exists by
 * its identity and its name, one that does not by its directory's
 * identity and its last component.  false (f empty) when neither the file
 * nor its directory can be found. */
static bool in_use_ident(const char *path, struct in_use_file *f)
{
	memset(f, 0, sizeof *f);
	struct stat st;
	char *real = realpath(path, NULL), *dir = NULL;
	const char *name;
	if (real && stat(real, &st) == 0) {
		f->exists = true;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		dir = dir_of(real);
		name = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	} else {
		char *d = dir_of(path);
		dir = realpath(d, NULL);
		free(d);
		name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	}
	bool ok = dir && name[0] && stat(dir, &st) == 0;
	if (ok) {
		f->dir_dev = st.st_dev;
		f->dir_ino = st.st_ino;
		f->name = xstrdup(name);
	}
	free(dir);
	free(real);
	return ok;
}

static bool in_use_same(const struct in_use_file *a, const struct in_use_file *b)
{
	if (a->exists && b->exists && a->dev == b->dev && a->ino == b->ino)
		return true;
	return a->dir_dev == b->dir_dev && a->dir_ino == b->dir_ino && !strcmp(a->name, b->name);
}

static struct in_use_group *in_use_group(int id)
{
	for (int i = 0; i < n_in_use; i++)
		if (in_use[i].id == id)
			return &in_use[i];
	return NULL;
}

int in_use_new(const char *what)
{
	if (n_in_use == cap_in_use) {
		cap_in_use = cap_in_use ? 2 * cap_in_use : 8;
		in_use = xrealloc(in_use, (size_t)cap_in_use * sizeof *in_use);
	}
	struct in_use_group *g = &in_use[n_in_use++];
	memset(g, 0, sizeof *g);
	g->id = in_use_next++;
	g->what = xstrdup(what);
	return g->id;
}

/* Adds the file path names to g, once. */
static void in_use_add_file(struct in_use_group *g, const char *path)
{
	struct in_use_file f;
	if (!in_use_ident(path, &f))
		return;
	for (int i = 0; i < g->n; i++)
		if (in_use_same(&g->f[i], &f)) {
			free(f.name);
			return;
		}
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 8;
		g->f = xrealloc(g->f, (size_t)g->cap * sizeof *g->f);
	}
	g->f[g->n++] = f;
}

void in_use_add(int id, const char *path)
{
	struct in_use_group *g = in_use_group(id);
	struct stat st;
	if (!g)
		return;
	DIR *d = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(path) : NULL;
	if (!d) {
		in_use_add_file(g, path);
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		size_t n = strlen(path) + strlen(de->d_name) + 2;
		char *p = xmalloc(n);
		snprintf(p, n, "%s/%s", path, de->d_name);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			in_use_add_file(g, p);
		free(p);
	}
	closedir(d);
}

void in_use_record(int id, bool on)
{
	struct in_use_group *g = in_use_group(id);
	if (g)
		g->recording = on;
}

void in_use_read(const char *path)
{
	for (int i = 0; i < n_in_use; i++)
		if (in_use[i].recording)
			in_use_add_file(&in_use[i], path);
}

void in_use_drop(int id)
{
	struct in_use_group *g = in_use_group(id);
	if (!g)
		return;
	for (int i = 0; i < g->n; i++)
		free(g->f[i].name);
	free(g->f);
	free(g->what);
	*g = in_use[--n_in_use];
}

/* -1 with "PATH: is WHAT; refusing to write over it" when target, the
 * file path leads to, is in use; else 0. */
static int in_use_refuse(const char *path, const char *target, struct err *e)
{
	struct in_use_file f;
	if (!n_in_use || !in_use_ident(target, &f))
		return 0;
	int rc = 0;
	for (int i = 0; i < n_in_use && !rc; i++)
		for (int j = 0; j < in_use[i].n && !rc; j++)
			if (in_use_same(&in_use[i].f[j], &f))
				rc = err_set(e, "%s: is %s; refusing to write over it", path,
					     in_use[i].what);
	free(f.name);
	return rc;
}

/* Refuses a file that is not regular: "PATH: is a FIFO, not a regular file". */
static int refuse_kind(const char *path, mode_t m, struct err *e)
{
	return err_set(e, "%s: is %s, not a regular file", path, file_kind(m));
}

/*
 * Applies the rules of util.h to path (a file name, not standard output).
 * On success *target is the file to replace (malloc'd; symbolic links
 * followed), *exists tells whether it exists and *st holds its status when
 * it does.  0, or -1 with e set and *target NULL.
 */
static int out_resolve(const char *path, char **target, bool *exists, struct stat *st,
		       struct err *e)
{
	*target = NULL;
	*exists = false;
	if (!path[0])
		return err_set(e, "no file name given");
	if (out_is_stdout(path))
		return err_set(e, "%s: standard output is not accepted here; name a file", path);

	/* what the name finally leads to, as the kernel follows it: this also
	 * covers links that do not hold a path (/proc/self/fd/N to a pipe) */
	struct stat kst;
	bool kexists = stat(path, &kst) == 0;
	if (!kexists && errno != ENOENT)
		return err_set(e, "%s: %s", path, strerror(errno));
	if (kexists && !S_ISREG(kst.st_mode))
		return refuse_kind(path, kst.st_mode, e);

	/* follow the links one by one, to know which name to rename onto */
	char *cur = xstrdup(path);
	for (int hops = 0;; hops++) {
		if (lstat(cur, st) != 0) {
			if (errno == ENOENT && !kexists)
				break; /* a new file, or a link to nothing */
			err_set(e, "%s: %s", path, strerror(errno));
			free(cur);
			return -1;
		}
		if (!S_ISLNK(st->st_mode)) {
			*exists = true;
			break;
		}
		char *link = hops < 40 ? read_link(cur) : NULL;
		if (!link) {
			err_set(e, "%s: %s", path, strerror(hops < 40 ? errno : ELOOP));
			free(cur);
			return -1;
		}
		char *next;
		if (link[0] == '/') {
			next = link;
		} else {
			char *dir = dir_of(cur);
			size_t n = strlen(dir) + strlen(link) + 2;
			next = xmalloc(n);
			snprintf(next, n, "%s/%s", dir, link);
			free(dir);
			free(link);
		}
		free(cur);
		cur = next;
	}
	if (*exists != kexists ||
	    (kexists && (st->st_dev != kst.st_dev || st->st_ino != kst.st_ino))) {
		/* the links changed while being followed, or one does not hold a path */
		free(cur);
		return err_set(e, "%s: cannot follow its symbolic links to a file name", path);
	}
	if (*exists && (access(cur, W_OK) != 0 || !(st->st_mode & 0222))) {
		/* no write bit at all counts even for root, who may write anything */
		free(cur);
		return err_set(e, "%s: the file is read-only", path);
	}
	if (in_use_refuse(path, cur, e)) {
		free(cur);
		return -1;
	}
	*target = cur;
	return 0;
}

int out_check(const char *path, unsigned flags, struct err *e)
{
	if ((flags & OUT_STDOUT) && out_is_stdout(path))
		return 0;
	char *target;
	bool exists;
	struct stat st;
	if (out_resolve(path, &target, &exists, &st, e) != 0)
		return -1;
	char *dir = dir_of(target);
	int rc = 0;
	if (access(dir, W_OK | X_OK) != 0)
		rc = err_set(e, "%s: cannot write in %s: %s", path, dir, strerror(errno));
	free(dir);
	free(target);
	return rc;
}

int out_open(struct out_file *o, const char *path, struct err *e)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	bool exists;
	struct stat st;
	if (out_resolve(path, &o->target, &exists, &st, e) != 0)
		return -1;
	o->path = xstrdup(path);
	size_t n = strlen(o->target) + 48;
	o->tmp = xmalloc(n);
	/* O_EXCL: never write through whatever already has the temporary name */
	for (int i = 0; i < 100 && o->fd < 0; i++) {
		if (i == 0)
			snprintf(o->tmp, n, "%s.tmp.%ld", o->target, (long)getpid());
		else
			snprintf(o->tmp, n, "%s.tmp.%ld.%d", o->target, (long)getpid(), i);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666);
		if (o->fd < 0 && errno != EEXIST)
			break;
	}
	if (o->fd < 0) {
		char *dir = dir_of(o->target);
		err_set(e, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
		free(dir);
		free(o->tmp);
		o->tmp = NULL; /* nothing to remove */
		out_abort(o);
		return -1;
	}
	if (exists) {
		if (st.st_uid != geteuid() || st.st_gid != getegid()) {
			if (fchown(o->fd, st.st_uid, st.st_gid) != 0) {
				/* not permitted: the replacement belongs to this process */
			}
		}
		if (fchmod(o->fd, st.st_mode & 07777) != 0) {
			err_set(e, "%s: %s", path, strerror(errno));
			out_abort(o);
			return -1;
		}
	}
	return 0;
}

int out_commit(struct out_file *o, struct err *e)
{
	int rc = 0;
	if (fsync(o->fd) != 0)
		rc = err_set(e, "%s: write failed: %s", o->path, strerror(errno));
	if (close(o->fd) != 0 && rc == 0)
		rc = err_set(e, "%s: write failed: %s", o->path, strerror(errno));
	o->fd = -1;
	if (rc == 0 && rename(o->tmp, o->target) != 0)
		rc = err_set(e, "%s: %s", o->path, strerror(errno));
	if (rc == 0) {
		free(o->tmp);
		o->tmp = NULL; /* renamed: nothing to remove */
	}
	out_abort(o);
	return rc;
}

void out_abort(struct out_file *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->target);
	free(o->path);
	memset(o, 0, sizeof *o);
	o->fd = -1;
}

int write_file_atomic(const char *path, const void *buf, size_t len, struct err *e)
{
	if (out_is_stdout(path)) {
		fwrite(buf, 1, len, stdout); /* a failure shows in ferror() */
		return stream_flush(stdout, e);
	}
	struct out_file o;
	if (out_open(&o, path, e) != 0)
		return -1;
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(o.fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			err_set(e, "%s: write failed: %s", path, strerror(errno));
			out_abort(&o);
			return -1;
		}
		p += w;
		left -= (size_t)w;
	}
	return out_commit(&o, e);
}

/* --------------------------------------------------------- standard output */

int stream_flush(FILE *f, struct err *e)
{
	errno = 0;
	bool failed = fflush(f) != 0;
	int why = failed ? errno : 0;
	if (!failed && !ferror(f))
		return 0;
	clearerr(f);
	return err_set(e, "error writing %s: %s", f == stdout ? "standard output" : "output",
		       why ? strerror(why) : "an earlier write failed");
}

int stdout_close(void)
{
	struct err e;
	int rc = stream_flush(stdout, &e);
	errno = 0;
	/* EBADF with nothing left to write: standard output was closed and
	 * nothing was written to it */
	if (fclose(stdout) != 0 && rc == 0 && errno != EBADF)
		rc = err_set(&e, "error writing standard output: %s", strerror(errno));
	if (rc != 0) {
		fprintf(stderr, "attnscope: %s\n", e.msg);
		fflush(stderr);
	}
	return rc;
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

size_t dtype_size(enum dtype t)
{
	return t == DTYPE_F32 ? 4 : t == DTYPE_F16 || t == DTYPE_BF16 ? 2 : 0;
}

void dtype_to_f32(float *dst, const void *src, size_t n, enum dtype t)
{
	const unsigned char *p = src;
	switch (t) {
	case DTYPE_F32:
		for (size_t i = 0; i < n; i++, p += 4)
			dst[i] = bits_f32((uint32_t)p[0] | (uint32_t)p[1] << 8 |
					  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		return;
	case DTYPE_F16:
		for (size_t i = 0; i < n; i++, p += 2)
			dst[i] = f16_to_f32((uint16_t)(p[0] | p[1] << 8));
		return;
	case DTYPE_BF16:
		for (size_t i = 0; i < n; i++, p += 2)
			dst[i] = bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
		return;
	case DTYPE_OTHER:
		break;
	}
	die("dtype_to_f32: no conversion for dtype %d", (int)t);
}

void format_bytes(double bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;
	while (bytes >= 1024.0 && u < 5) {
		bytes /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", bytes);
	else if (fabs(bytes - round(bytes)) < 0.005)
		snprintf(buf, size, "%.0f %s", bytes, units[u]);
	else
		snprintf(buf, size, "%.2f %s", bytes, units[u]);
}

void format_duration(double s, char *buf, size_t size)
{
	if (!(s >= 0) || s > 1e8) {
		snprintf(buf, size, "?");
		return;
	}
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, size, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
	else if (t >= 60)
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, size, "%lds", t);
}

char *shell_quote(const char *s)
{
	bool safe = *s != '\0';
	for (const char *p = s; *p && safe; p++)
		safe = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || strchr("-_./:=,+@%", *p);
	if (safe)
		return xstrdup(s);
	char *q = xmalloc(4 * strlen(s) + 3), *w = q;
	*w++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(w, "'\\''", 4);
			w += 4;
		} else {
			*w++ = *p;
		}
	}
	*w++ = '\'';
	*w = '\0';
	return q;
}

int edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 98 || m > 98)
		return 99;
	int row[99];
	for (size_t j = 0; j <= m; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= n; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= m; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[m];
}

/* ------------------------------------------ regular files, read bounded */

int open_regular(const char *path, struct err *e)
{
	/* O_NONBLOCK: opening a FIFO for reading does not wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s", strerror(errno));
	struct stat st;
	int flags;
	if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
	    (S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
		err_set(e, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(e, "is %s, not a regular file", file_kind(st.st_mode));
		close(fd);
		return -1;
	}
	return fd;
}

char *read_file_max(const char *path, size_t max, const char *what, size_t *len, struct err *e)
{
	int fd = open_regular(path, e);
	if (fd < 0) {
		err_prefix(e, "%s", path);
		return NULL;
	}
	in_use_read(path);
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) != 0) {
		err_set(e, "%s: %s", path, strerror(errno));
		goto out;
	}
	char size[32], limit[32];
	format_bytes((double)st.st_size, size, sizeof size);
	if ((uintmax_t)st.st_size > max) {
		format_bytes((double)max, limit, sizeof limit);
		err_set(e, "%s: %s is more than the %s %s may have", path, size, limit,
			what ? what : "a file read whole");
		goto out;
	}
	size_t n = (size_t)st.st_size, got = 0;
	buf = n < SIZE_MAX ? malloc(n + 1) : NULL;
	if (!buf) { /* too large to hold: a message, not an abort */
		err_set(e, "%s: %s does not fit in memory", path, size);
		goto out;
	}
	while (got < n) { /* a file that shrank since fstat() ends early */
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err_set(e, "%s: read failed: %s", path, strerror(errno));
			free(buf);
			buf = NULL;
			goto out;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	buf[got] = '\0';
	if (len)
		*len = got;
out:
	close(fd);
	return buf;
}

/* Bytes this process may still allocate: the kernel's MemAvailable, less
 * when an address-space limit (ulimit -v) is nearer.  < 0 when unknown. */
double mem_available(void)
{
	double avail = -1;
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			avail = 1024.0 * (double)kb;
	if (f)
		fclose(f);
	struct rlimit r;
	unsigned long long pages = 0;
	f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%llu", &pages) != 1)
		pages = 0;
	if (f)
		fclose(f);
	if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
		double left = (double)r.rlim_cur - (double)pages * (double)sysconf(_SC_PAGESIZE);
		if (left < 0)
			left = 0;
		if (avail < 0 || left < avail)
			avail = left;
	}
	return avail;
}
