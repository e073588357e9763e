/*
 * hub-pull.c — `pull`: a Hugging Face hub repository into the local hub
 * cache through libcurl, verified, resumable (hub.h says the protocol and
 * the layout).
 */
#define _GNU_SOURCE
#include "hub.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "resolve.h"
#include "sha1.h"
#include "sha256.h"
#include "version.h"

#define API_MAX   ((size_t)16 << 20)	/* the largest listing read */
#define URL_MAX   4096

/* ------------------------------------------------------------ names */

/* A repository or file name part: [A-Za-z0-9._-], not starting with '.'
 * or '-' (so never ".."), at most 96 bytes. */
static bool good_part(const char *s, size_t n)
{
	if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
			return false;
	return !memmem(s, n, "..", 2);
}

bool hub_wanted_file(const char *f)
{
	static const char *const names[] = {
		"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
		"special_tokens_map.json", "vocab.txt", "vocab.json", "merges.txt",
		"model.safetensors.index.json",
	};
	size_t n = strlen(f);
	if (!good_part(f, n))
		return false; /* a folder, or a name the cache should not hold */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(f, names[i]))
			return true;
	return n > 12 && !strcmp(f + n - 12, ".safetensors");
}

/* spec -> repo ("ORG/NAME" or "NAME") and rev ("main" by default). */
static int parse_spec(const char *spec, struct hub_pull_result *r, struct err *e)
{
	const char *at = strchr(spec, '@');
	size_t n = at ? (size_t)(at - spec) : strlen(spec);
	const char *sl = memchr(spec, '/', n);
	bool ok = n < sizeof r->repo && (sl ? good_part(spec, (size_t)(sl - spec)) &&
					  good_part(sl + 1, n - (size_t)(sl - spec) - 1) :
					  good_part(spec, n));
	const char *rev = at ? at + 1 : "main";
	size_t rn = strlen(rev);
	for (size_t i = 0; ok && i < rn; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/",
			    rev[i]) != NULL;
	if (!ok || rn == 0 || rn >= sizeof r->revision || strstr(rev, "..") || rev[0] == '/' ||
	    rev[rn - 1] == '/')
		return err_set(e, "%s: expected ORG/NAME[@REVISION] (letters, digits, . _ -)", spec);
	snprintf(r->repo, sizeof r->repo, "%.*s", (int)n, spec);
	snprintf(r->revision, sizeof r->revision, "%s", rev);
	return 0;
}

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* snprintf for paths, whose lengths hub_pull() bounds first (the cache
 * directory at most PATH_MAX - 512 bytes, names at most 256). */
static void pathf(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ files */

static int mkdir_p(const char *path, struct err *e)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST)
				return err_set(e, "%s: %s", p, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* Writes text to path through path.tmp and a rename. */
static int write_atomic(const char *path, const char *text, struct err *e)
{
	char tmp[PATH_MAX + 8];
	pathf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return err_set(e, "%s: %s", tmp, strerror(errno));
	bool ok = fputs(text, f) >= 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return err_set(e, "%s: %s", path, strerror(errno));
	}
	return 0;
}

/* snapshot/file -> ../../blobs/etag, through a temporary link and a rename. */
static int link_blob(const char *snapshot, const char *file, const char *etag, struct err *e)
{
	char link[PATH_MAX + 128], tmp[PATH_MAX + 136], target[160];
	pathf(link, sizeof link, "%s/%s", snapshot, file);
	pathf(tmp, sizeof tmp, "%s.tmp", link);
	snprintf(target, sizeof target, "../../blobs/%s", etag);
	unlink(tmp);
	if (symlink(target, tmp) != 0 || rename(tmp, link) != 0) {
		int er = errno;
		unlink(tmp);
		return err_set(e, "%s: %s", link, strerror(er));
	}
	return 0;
}

/* Whether the file at path has etag's hash (SHA-256 for 64 digits, the
 * Git blob id for 40).  0, or -1 + e. */
static int verify(const char *path, const char *file, const char *etag, uint64_t size,
		  struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set(e, "%s: %s", path, strerror(errno));
	bool lfs = strlen(etag) == 64;
	struct sha256 c256;
	struct sha1 c1;
	if (lfs)
		sha256_init(&c256);
	else
		sha1_git_blob(&c1, size);
	static unsigned char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		if (lfs)
			sha256_update(&c256, buf, n);
		else
			sha1_update(&c1, buf, n);
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad)
		return err_set(e, "%s: read error", path);
	char hex[SHA256_HEX];
	if (lfs)
		sha256_final(&c256, hex);
	else
		sha1_final(&c1, hex);
	if (strcmp(hex, etag))
		return err_set(e, "%s: the download's %s is %s, not the hub's %s; deleted it (pull "
			       "again, or check $HF_ENDPOINT)", file, lfs ? "SHA-256" : "Git blob id",
			       hex, etag);
	return 0;
}

/* ------------------------------------------------------------- HTTP */

struct reply {
	long status;
	char commit[48], etag[80], error_code[64], location[1024];
	uint64_t size;			/* X-Linked-Size, else Content-Length */
	bool linked_size, has_size;
	char *body;			/* GET into memory: the bytes, NUL-terminated */
	size_t n, max;
};

static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	while (n && *v == ' ')
		v++, n--;
	if (n >= 2 && !strncmp(v, "W/", 2))
		v += 2, n -= 2;
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
		v++, n -= 2;
	snprintf(dst, size, "%.*s", (int)(n < size ? n : size - 1), v);
}

/* Each header line; a redirect's are overwritten by the next reply's,
 * but a linked etag or size (given on the redirect) is kept. */
static size_t on_header(char *line, size_t one, size_t n, void *arg)
{
	struct reply *r = arg;
	(void)one;
	char num[32];
	if (n > 5 && !strncmp(line, "HTTP/", 5)) {
		r->status = strtol(strchr(line, ' ') ? strchr(line, ' ') + 1 : line, NULL, 10);
		if (!r->linked_size)
			r->has_size = false;
		return n;
	}
	const char *colon = memchr(line, ':', n);
	if (!colon)
		return n;
	size_t k = (size_t)(colon - line), vn = n - k - 1;
	const char *v = colon + 1;
	if (k == 13 && !strncasecmp(line, "X-Repo-Commit", k))
		copy_value(r->commit, sizeof r->commit, v, vn);
	else if (k == 13 && !strncasecmp(line, "X-Linked-Etag", k))
		copy_value(r->etag, sizeof r->etag, v, vn);
	else if (k == 4 && !strncasecmp(line, "ETag", k) && !r->etag[0])
		copy_value(r->etag, sizeof r->etag, v, vn);
	else if (k == 8 && !strncasecmp(line, "Location", k))
		copy_value(r->location, sizeof r->location, v, vn);
	else if (k == 12 && !strncasecmp(line, "X-Error-Code", k))
		copy_value(r->error_code, sizeof r->error_code, v, vn);
	else if ((k == 13 && !strncasecmp(line, "X-Linked-Size", k)) ||
		 (k == 14 && !strncasecmp(line, "Content-Length", k) && !r->linked_size)) {
		copy_value(num, sizeof num, v, vn);
		r->size = strtoull(num, NULL, 10);
		r->has_size = true;
		r->linked_size |= k == 13;
	}
	return n;
}

static size_t on_body(char *p, size_t one, size_t n, void *arg)
{
	struct reply *r = arg;
	(void)one;
	if (r->n + n > r->max)
		return 0;
	r->body = xrealloc(r->body, r->n + n + 1);
	memcpy(r->body + r->n, p, n);
	r->n += n;
	r->body[r->n] = '\0';
	return n;
}

/* A handle with what every request carries. */
static CURL *handle(struct curl_slist **hdr)
{
	CURL *c = curl_easy_init();
	if (!c)
		die("curl_easy_init failed");
	const char *tok = getenv("HF_TOKEN");
	*hdr = curl_slist_append(NULL, "Accept-Encoding: identity");
	if (tok && *tok) {
		char a[1024];
		snprintf(a, sizeof a, "Authorization: Bearer %s", tok);
		*hdr = curl_slist_append(*hdr, a);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "attnscope/" ATTNSCOPE_VERSION);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	return c;
}

/* The one line a refusal by the hub gets. */
static int refused(const struct reply *q, const struct hub_pull_result *r, const char *what,
		   struct err *e)
{
	const char *code = q->error_code[0] ? q->error_code : NULL;
	if (q->status == 401 || q->status == 403)
		return err_set(e, "%s: the hub refused %s (%ld%s%s): the repository is gated or "
			       "private; accept its terms on the hub and set HF_TOKEN to a token "
			       "that may read it", r->repo, what, q->status, code ? " " : "",
			       code ? code : "");
	if (q->status == 404)
		return err_set(e, "%s: %s not found (404%s%s): no such repository, revision %s or "
			       "file on the hub", r->repo, what, code ? " " : "", code ? code : "",
			       r->revision);
	return err_set(e, "%s: %s: the hub answered %ld", r->repo, what, q->status);
}

/* Runs c; 0 when a reply came, else -1 + e naming what failed. */
static int perform(CURL *c, const char *url, const char *file, struct err *e)
{
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		return 0;
	return err_set(e, "%s: %s (%s)", file, curl_easy_strerror(rc), url);
}

/* ------------------------------------------------------------ listing */

struct listing {
	char **files;
	int n;
};

static void listing_free(struct listing *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->files[i]);
	free(l->files);
	l->files = NULL;
	l->n = 0;
}

/* GET the revision's file list: the commit and the files pull wants. */
static int list_files(const char *endpoint, struct hub_pull_result *r, struct listing *l,
		      struct err *e)
{
	struct curl_slist *hdr;
	CURL *c = handle(&hdr);
	char url[URL_MAX];
	char *rev = curl_easy_escape(c, r->revision, 0);
	pathf(url, sizeof url, "%s/api/models/%s/revision/%s", endpoint, r->repo, rev);
	curl_free(rev);
	struct reply q = { .max = API_MAX };
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &q);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &q);
	int rc = perform(c, url, r->repo, e);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	if (rc == 0 && q.status != 200)
		rc = refused(&q, r, "the file list", e);
	json_error_t je;
	json_t *j = rc == 0 ? json_loadb(q.body ? q.body : "", q.n, 0, &je) : NULL;
	free(q.body);
	if (rc == 0 && !j)
		return err_set(e, "%s: the hub's file list is not JSON (%s, line %d) at %s", r->repo,
			       je.text, je.line, url);
	if (rc != 0)
		return -1;
	json_t *sha = json_object_get(j, "sha"), *sib = json_object_get(j, "siblings");
	if (!json_is_string(sha) || !is_hex(json_string_value(sha), 40) || !json_is_array(sib)) {
		json_decref(j);
		return err_set(e, "%s: the hub's file list has no 40-digit \"sha\" and \"siblings\" "
			       "(%s)", r->repo, url);
	}
	snprintf(r->commit, sizeof r->commit, "%s", json_string_value(sha));
	size_t i;
	json_t *s;
	l->files = xmalloc((json_array_size(sib) + 1) * sizeof *l->files);
	json_array_foreach(sib, i, s) {
		json_t *f = json_object_get(s, "rfilename");
		if (json_is_string(f) && hub_wanted_file(json_string_value(f)))
			l->files[l->n++] = xstrdup(json_string_value(f));
	}
	json_decref(j);
	return 0;
}

/* Refuses, before any download, a listing attnscope could not load. */
static int check_listing(const struct hub_pull_result *r, const struct listing *l, struct err *e)
{
	bool config = false, weights = false;
	for (int i = 0; i < l->n; i++) {
		config |= !strcmp(l->files[i], "config.json");
		weights |= hub_wanted_file(l->files[i]) && strstr(l->files[i], ".safetensors") &&
			   !strstr(l->files[i], ".index.json");
	}
	if (!config)
		return err_set(e, "%s@%s: no config.json at the top of the repository; not a model "
			       "attnscope reads", r->repo, r->revision);
	if (!weights)
		return err_set(e, "%s@%s: no .safetensors weights (attnscope reads safetensors, and "
			       "pull fetches no other format)", r->repo, r->revision);
	return 0;
}

/* -------------------------------------------------------- downloads */

struct xfer {
	FILE *out;
	const char *file;
	const struct reply *q;		/* the headers, for the status */
	uint64_t have, total;		/* bytes on disk before, the file's size */
	double t0, last;		/* ms */
	FILE *progress;
	bool tty, drawn;
	volatile sig_atomic_t *cancel;
	int write_errno;
};

static size_t on_data(char *p, size_t one, size_t n, void *arg)
{
	struct xfer *x = arg;
	(void)one;
	if (x->q->status != 200 && x->q->status != 206)
		return n; /* an error page, not the file */
	if (x->q->status == 200 && x->have) { /* the range was not honoured: start over */
		if (fflush(x->out) != 0 || ftruncate(fileno(x->out), 0) != 0) {
			x->write_errno = errno;
			return 0;
		}
		rewind(x->out);
		x->have = 0;
	}
	if (fwrite(p, 1, n, x->out) != n) {
		x->write_errno = errno;
		return 0;
	}
	return n;
}

/* Binary units: "1.5 MiB". */
static void size_str(double b, char *buf, size_t size)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int k = 0;
	while (b >= 1024 && k < 4)
		b /= 1024, k++;
	snprintf(buf, size, k ? "%.1f %s" : "%.0f %s", b, u[k]);
}

/* The bar, on a terminal; the cancel check, everywhere. */
static int on_progress(void *arg, curl_off_t dl_total, curl_off_t dl_now, curl_off_t ul_total,
		       curl_off_t ul_now)
{
	struct xfer *x = arg;
	(void)dl_total, (void)ul_total, (void)ul_now;
	if (x->cancel && *x->cancel)
		return 1;
	double t = now_ms();
	if (!x->progress || !x->tty || t - x->last < 100)
		return 0;
	x->last = t;
	uint64_t done = x->have + (uint64_t)dl_now;
	double frac = x->total && done <= x->total ? (double)done / (double)x->total : 1;
	double rate = (double)dl_now / ((t - x->t0) / 1000 + 1e-9);
	char a[24], b[24], rt[24], left[24] = "?";
	size_str((double)done, a, sizeof a);
	size_str((double)x->total, b, sizeof b);
	size_str(rate, rt, sizeof rt);
	if (rate > 0 && x->total >= done) {
		double sec = (double)(x->total - done) / rate;
		snprintf(left, sizeof left, "%d:%02d", (int)(sec / 60), (int)sec % 60);
	}
	char bar[21];
	int fill = (int)(frac * 20 + 0.5);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[20] = '\0';
	fprintf(x->progress, "\r  %-22.22s %3d%% [%s] %s / %s  %s/s  %s left\033[K", x->file,
		(int)(frac * 100), bar, a, b, rt, left);
	fflush(x->progress);
	x->drawn = true;
	return 0;
}

/* The file's line once fetched: on a terminal it replaces the bar. */
static void done_line(const struct xfer *x, uint64_t got)
{
	if (!x->progress)
		return;
	double sec = (now_ms() - x->t0) / 1000;
	char a[24], rt[24];
	size_str((double)got, a, sizeof a);
	size_str((double)got / (sec + 1e-9), rt, sizeof rt);
	fprintf(x->progress, "%s  %-22s %s%s in %.1f s (%s/s)%s\n", x->drawn ? "\r" : "", x->file,
		a, x->have ? " more" : "", sec, rt, x->drawn ? "\033[K" : "");
	fflush(x->progress);
}

/* What a finished transfer of part means.  0, or -1 + e. */
static int fetch_result(const struct xfer *x, const struct reply *q, CURLcode rc,
			const struct hub_pull_result *r, const char *part, const char *url,
			struct err *e)
{
	struct stat st;
	uint64_t now = stat(part, &st) == 0 ? (uint64_t)st.st_size : 0;
	if (x->write_errno)
		return err_set(e, "%s: %s", part, strerror(x->write_errno));
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return err_set(e, "%s: interrupted at %llu of %llu bytes; kept %s: pull again to "
			       "resume", x->file, (unsigned long long)now,
			       (unsigned long long)x->total, part);
	if (rc == CURLE_OK && q->status != 200 && q->status != 206) {
		if (now == 0)
			unlink(part); /* an error page: nothing was fetched */
		return refused(q, r, x->file, e);
	}
	if (rc != CURLE_OK)
		return err_set(e, "%s: %s at %llu of %llu bytes (%s); kept the part: pull again to "
			       "resume", x->file, curl_easy_strerror(rc), (unsigned long long)now,
			       (unsigned long long)x->total, url);
	if (now != x->total) {
		unlink(part);
		return err_set(e, "%s: the hub sent %llu bytes, not %llu; deleted the download",
			       x->file, (unsigned long long)now, (unsigned long long)x->total);
	}
	return 0;
}

/* GET url into part from its current size on (Range), following redirects.
 * 0 with *got the bytes fetched now, or -1 + e (part kept, to resume,
 * unless its size is wrong). */
static int fetch(const struct hub_pull_opts *o, const struct hub_pull_result *r,
		 const char *url, const char *file, const char *part, uint64_t total,
		 uint64_t *got, struct err *e)
{
	struct stat st;
	uint64_t have = stat(part, &st) == 0 && (uint64_t)st.st_size < total ? (uint64_t)st.st_size :
			0;
	FILE *out = fopen(part, have ? "ab" : "wb");
	if (!out)
		return err_set(e, "%s: %s", part, strerror(errno));
	struct curl_slist *hdr;
	CURL *c = handle(&hdr);
	struct reply q = { 0 };
	struct xfer x = { out, file, &q, have, total, now_ms(), 0, o->progress, o->tty, false,
			  o->cancel, 0 };
	char range[48];
	snprintf(range, sizeof range, "%llu-", (unsigned long long)have);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	if (have)
		curl_easy_setopt(c, CURLOPT_RANGE, range);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &q);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
	CURLcode rc = curl_easy_perform(c);
	curl_off_t n = 0;
	curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &n);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	if (fclose(out) != 0 && !x.write_errno)
		x.write_errno = errno;
	if (x.drawn && rc != CURLE_OK && o->progress)
		fputc('\n', o->progress);
	*got = (uint64_t)n;
	int ret = fetch_result(&x, &q, rc, r, part, url, e);
	if (ret == 0)
		done_line(&x, *got);
	return ret;
}

/* HEAD the file at the commit: its etag, its size.  A redirect to a path
 * on the endpoint (a renamed repository) is followed; one elsewhere (the
 * CDN, for a file in LFS) is not, as it holds the linked etag and size.
 * 0, or -1 + e. */
static int head_file(const char *endpoint, const char *url, const char *file,
		     const struct hub_pull_result *r, struct reply *q, struct err *e)
{
	char at[URL_MAX];
	snprintf(at, sizeof at, "%s", url);
	for (int hops = 0;; hops++) {
		struct curl_slist *hdr;
		CURL *c = handle(&hdr);
		memset(q, 0, sizeof *q);
		curl_easy_setopt(c, CURLOPT_URL, at);
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
		curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, q);
		int rc = perform(c, at, file, e);
		curl_easy_cleanup(c);
		curl_slist_free_all(hdr);
		if (rc != 0)
			return -1;
		bool relative = q->status >= 301 && q->status <= 308 && !q->linked_size &&
				q->location[0] == '/';
		if (!relative)
			break;
		if (hops == 5)
			return err_set(e, "%s: more than 5 redirects (%s)", file, at);
		pathf(at, sizeof at, "%s%s", endpoint, q->location);
	}
	if (q->status != 200 && !(q->status >= 301 && q->status <= 308 && q->linked_size))
		return refused(q, r, file, e);
	if (!q->has_size)
		return err_set(e, "%s: the hub gave no size (X-Linked-Size or Content-Length)", file);
	if (!is_hex(q->etag, 64) && !is_hex(q->etag, 40))
		return err_set(e, "%s: the hub's etag \"%s\" is neither a SHA-256 nor a Git blob id; "
			       "cannot verify the file", file, q->etag);
	if (q->commit[0] && strcmp(q->commit, r->commit))
		return err_set(e, "%s: the hub gave commit %s for it, not %s", file, q->commit,
			       r->commit);
	return 0;
}

/* One file into the cache: the blob (unless it is there), then the link. */
static int pull_file(const struct hub_pull_opts *o, const char *endpoint, const char *repo_dir,
		     const char *file, struct hub_pull_result *r, struct err *e)
{
	char url[URL_MAX], blob[PATH_MAX + 128], part[PATH_MAX + 140];
	pathf(url, sizeof url, "%s/%s/resolve/%s/%s", endpoint, r->repo, r->commit, file);
	struct reply q = { 0 };
	if (head_file(endpoint, url, file, r, &q, e) != 0)
		return -1;
	pathf(blob, sizeof blob, "%s/blobs/%s", repo_dir, q.etag);
	pathf(part, sizeof part, "%s.incomplete", blob);
	struct stat st;
	if (!(stat(blob, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == q.size)) {
		uint64_t got = 0;
		int rc = fetch(o, r, url, file, part, q.size, &got, e);
		r->bytes += got;
		r->fetched++;
		if (rc != 0)
			return -1;
		if (verify(part, file, q.etag, q.size, e) != 0) {
			unlink(part);
			return -1;
		}
		if (rename(part, blob) != 0)
			return err_set(e, "%s: %s", blob, strerror(errno));
	}
	r->files++;
	return link_blob(r->snapshot, file, q.etag, e);
}

/* ------------------------------------------------------------- pull */

static bool offline(void)
{
	const char *v = getenv("HF_HUB_OFFLINE");
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "on"));
}

/* HF_HUB_OFFLINE: the snapshot refs/REV (or the commit REV) names. */
static int pull_offline(const char *repo_dir, struct hub_pull_result *r, struct err *e)
{
	char ref[PATH_MAX + 300], cfg[PATH_MAX + 64];
	pathf(ref, sizeof ref, "%s/refs/%s", repo_dir, r->revision);
	FILE *f = fopen(ref, "r");
	if (f) {
		if (!fgets(r->commit, sizeof r->commit, f))
			r->commit[0] = '\0';
		fclose(f);
		r->commit[strcspn(r->commit, "\r\n")] = '\0';
	} else if (is_hex(r->revision, 40)) { /* a commit: its 40 digits */
		memcpy(r->commit, r->revision, 40);
		r->commit[40] = '\0';
	}
	pathf(r->snapshot, sizeof r->snapshot, "%s/snapshots/%s", repo_dir, r->commit);
	pathf(cfg, sizeof cfg, "%s/config.json", r->snapshot);
	struct stat st;
	if (!is_hex(r->commit, 40) || stat(cfg, &st) != 0)
		return err_set(e, "%s@%s: HF_HUB_OFFLINE is set and the cache (%s) holds no snapshot "
			       "of it; unset HF_HUB_OFFLINE to download it", r->repo, r->revision,
			       repo_dir);
	r->offline = true;
	return 0;
}

int hub_pull(const struct hub_pull_opts *o, struct hub_pull_result *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	if (parse_spec(o->spec, r, e) != 0)
		return -1;
	char hub[PATH_MAX], repo_dir[PATH_MAX + 300], dir[PATH_MAX + 360], flat[256];
	hf_hub_dir(hub, sizeof hub);
	if (strlen(hub) > PATH_MAX - 512)
		return err_set(e, "%.60s...: the Hugging Face cache's path is too long", hub);
	snprintf(flat, sizeof flat, "%s", r->repo);
	char *sl = strchr(flat, '/');
	if (sl) { /* ORG/NAME -> ORG--NAME */
		memmove(sl + 2, sl + 1, strlen(sl + 1) + 1);
		sl[0] = sl[1] = '-';
	}
	pathf(repo_dir, sizeof repo_dir, "%s/models--%s", hub, flat);
	if (offline())
		return pull_offline(repo_dir, r, e);
	const char *ep = getenv("HF_ENDPOINT");
	char endpoint[1024];
	snprintf(endpoint, sizeof endpoint, "%s", ep && *ep ? ep : "https://huggingface.co");
	for (size_t n = strlen(endpoint); n > 0 && endpoint[n - 1] == '/'; n--)
		endpoint[n - 1] = '\0';
	static bool inited;
	if (!inited && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return err_set(e, "pull: libcurl could not start");
	inited = true;
	struct listing l = { 0 };
	int rc = list_files(endpoint, r, &l, e);
	if (rc == 0)
		rc = check_listing(r, &l, e);
	pathf(r->snapshot, sizeof r->snapshot, "%s/snapshots/%s", repo_dir, r->commit);
	pathf(dir, sizeof dir, "%s/blobs", repo_dir);
	if (rc == 0)
		rc = mkdir_p(dir, e) == 0 && mkdir_p(r->snapshot, e) == 0 ? 0 : -1;
	for (int i = 0; rc == 0 && i < l.n; i++)
		rc = pull_file(o, endpoint, repo_dir, l.files[i], r, e);
	listing_free(&l);
	if (rc == 0 && strcmp(r->revision, r->commit)) {
		pathf(dir, sizeof dir, "%s/refs/%s", repo_dir, r->revision);
		char *slash = strrchr(dir, '/');
		*slash = '\0';
		rc = mkdir_p(dir, e);
		*slash = '/';
		if (rc == 0)
			rc = write_atomic(dir, r->commit, e);
	}
	return rc;
}
