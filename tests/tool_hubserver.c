/*
 * tool_hubserver — a Hugging Face hub on 127.0.0.1 for tests/cli_pull.sh:
 * serves the files of one directory as the repository ORG/NAME at one
 * commit, the way the hub does, one connection at a time, and logs what it
 * sent.
 *
 * usage: tool_hubserver --root DIR --repo ORG/NAME --commit HEX40
 *        --port-file FILE --log FILE [--token T] [--mode MODE] [--seconds N]
 *
 *   GET  /api/models/ORG/NAME/revision/REV   {"sha": COMMIT, "siblings": [...]}:
 *        the files of DIR and one "onnx/model.onnx" that is not there
 *   HEAD|GET /ORG/NAME/resolve/REV/FILE      X-Repo-Commit; *.safetensors as in
 *        LFS: 302 to /cdn/SHA256 with X-Linked-Etag (the SHA-256) and
 *        X-Linked-Size; other files 200 with ETag (the Git blob id)
 *   GET  /cdn/SHA256                         the bytes, with Range: bytes=N-
 *        (206 and Content-Range)
 * REV is "main" or the commit (else 404 RevisionNotFound); ORG/old-NAME
 * is a renamed repository: 307 with a relative Location to the same path
 * of ORG/NAME; another repository is 404 RepoNotFound; with --token every request without
 * "Authorization: Bearer T" is 401.  MODE:
 *   ok         (default) as above
 *   interrupt  the first /cdn/ GET sends half its bytes and closes
 *   stall      the first /cdn/ GET sends half its bytes and waits 10 s (for a
 *              Ctrl-C to arrive mid-file)
 *   corrupt    /cdn/ bodies have their middle byte flipped
 *   gated      every request is 403 GatedRepo
 * The log gets one line per request: "METHOD PATH STATUS BODYBYTES" where
 * BODYBYTES counts the file bytes sent (0 for listings and HEAD).  The
 * server exits after --seconds (default 60), so a test never leaves it
 * behind.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha1.h"
#include "sha256.h"

struct file {
	char name[256];
	unsigned char *data;
	size_t size;
	bool lfs;
	char sha256[SHA256_HEX], gitid[SHA1_HEX];
};

static struct file files[64];
static int n_files;
static const char *repo, *commit, *token, *mode = "ok";
static bool interrupted_once;
static FILE *logf_;

static void load_files(const char *root)
{
	DIR *d = opendir(root);
	if (!d) {
		perror(root);
		exit(1);
	}
	struct dirent *de;
	while ((de = readdir(d)) && n_files < 64) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", root, de->d_name);
		struct stat st;
		if (de->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		struct file *f = &files[n_files++];
		snprintf(f->name, sizeof f->name, "%s", de->d_name);
		f->size = (size_t)st.st_size;
		f->data = malloc(f->size + 1);
		FILE *in = fopen(path, "rb");
		if (!f->data || !in || fread(f->data, 1, f->size, in) != f->size) {
			perror(path);
			exit(1);
		}
		fclose(in);
		size_t n = strlen(f->name);
		f->lfs = n > 12 && !strcmp(f->name + n - 12, ".safetensors");
		struct sha256 c;
		sha256_init(&c);
		sha256_update(&c, f->data, f->size);
		sha256_final(&c, f->sha256);
		struct sha1 g;
		sha1_git_blob(&g, f->size);
		sha1_update(&g, f->data, f->size);
		sha1_final(&g, f->gitid);
	}
	closedir(d);
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t k = write(fd, c, n);
		if (k <= 0)
			return;
		c += k;
		n -= (size_t)k;
	}
}

/* A reply: status line, the extra headers, Content-Length, the body. */
static void reply(int fd, int status, const char *extra, const void *body, size_t n,
		  size_t length, bool head)
{
	const char *why = status == 200 ? "OK" : status == 206 ? "Partial Content" :
			  status == 302 ? "Found" : status == 307 ? "Temporary Redirect" : status == 401 ? "Unauthorized" :
			  status == 403 ? "Forbidden" : status == 404 ? "Not Found" : "Error";
	char h[2048];
	int k = snprintf(h, sizeof h, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, why, extra ? extra : "", length);
	send_all(fd, h, (size_t)k);
	if (!head && n)
		send_all(fd, body, n);
}

static void error_reply(int fd, int status, const char *code, bool head)
{
	char extra[128], body[128];
	snprintf(extra, sizeof extra, "X-Error-Code: %s\r\nContent-Type: application/json\r\n", code);
	int n = snprintf(body, sizeof body, "{\"error\": \"%s\"}", code);
	reply(fd, status, extra, body, (size_t)n, (size_t)n, head);
}

static struct file *find(const char *name)
{
	for (int i = 0; i < n_files; i++)
		if (!strcmp(files[i].name, name))
			return &files[i];
	return NULL;
}

static void listing(int fd)
{
	size_t cap = 4096 + (size_t)n_files * 300, n = 0;
	char *b = malloc(cap);
	n += (size_t)snprintf(b + n, cap - n, "{\"id\": \"%s\", \"sha\": \"%s\", \"siblings\": [",
			      repo, commit);
	for (int i = 0; i < n_files; i++)
		n += (size_t)snprintf(b + n, cap - n, "{\"rfilename\": \"%s\"}, ", files[i].name);
	n += (size_t)snprintf(b + n, cap - n, "{\"rfilename\": \"onnx/model.onnx\"}]}");
	reply(fd, 200, "Content-Type: application/json\r\n", b, n, n, false);
	free(b);
}

/* /cdn/SHA256: the bytes from the Range on; returns the file bytes sent. */
static size_t cdn(int fd, const char *sha, size_t from, bool head)
{
	struct file *f = NULL;
	for (int i = 0; i < n_files; i++)
		if (!strcmp(files[i].sha256, sha))
			f = &files[i];
	if (!f) {
		error_reply(fd, 404, "EntryNotFound", head);
		return 0;
	}
	if (from > f->size)
		from = f->size;
	unsigned char *data = malloc(f->size + 1);
	memcpy(data, f->data, f->size);
	if (!strcmp(mode, "corrupt") && f->size)
		data[f->size / 2] ^= 0x5a;
	char extra[256] = "";
	if (from)
		snprintf(extra, sizeof extra, "Content-Range: bytes %zu-%zu/%zu\r\n", from,
			 f->size - 1, f->size);
	size_t n = f->size - from;
	bool cut = !head && !interrupted_once && (!strcmp(mode, "interrupt") || !strcmp(mode, "stall"));
	if (cut) {
		interrupted_once = true;
		n /= 2; /* promise all, send half, close */
	}
	reply(fd, from ? 206 : 200, extra, data + from, n, f->size - from, head);
	if (cut && !strcmp(mode, "stall"))
		sleep(10);
	free(data);
	return head ? 0 : n;
}

/* /ORG/NAME/resolve/REV/FILE */
static void resolve(int fd, const char *rev, const char *name, bool head)
{
	if (strcmp(rev, "main") && strcmp(rev, commit)) {
		error_reply(fd, 404, "RevisionNotFound", head);
		return;
	}
	struct file *f = find(name);
	if (!f) {
		error_reply(fd, 404, "EntryNotFound", head);
		return;
	}
	char extra[1024];
	if (f->lfs) {
		snprintf(extra, sizeof extra, "X-Repo-Commit: %s\r\nX-Linked-Etag: \"%s\"\r\n"
			 "X-Linked-Size: %zu\r\nETag: W/\"%s\"\r\nLocation: /cdn/%s\r\n", commit,
			 f->sha256, f->size, f->gitid, f->sha256);
		reply(fd, 302, extra, "", 0, 0, head);
		return;
	}
	snprintf(extra, sizeof extra, "X-Repo-Commit: %s\r\nETag: \"%s\"\r\n", commit, f->gitid);
	reply(fd, 200, extra, f->data, f->size, f->size, head);
}

/* One request: returns the file bytes sent. */
static size_t serve(int fd, const char *req, const char *method, const char *path)
{
	bool head = !strcmp(method, "HEAD");
	if (!strcmp(mode, "gated")) {
		error_reply(fd, 403, "GatedRepo", head);
		return 0;
	}
	if (token) {
		char want[512];
		snprintf(want, sizeof want, "\r\nAuthorization: Bearer %s\r\n", token);
		if (!strcasestr(req, want)) {
			error_reply(fd, 401, "GatedRepo", head);
			return 0;
		}
	}
	const char *range = strcasestr(req, "\r\nRange: bytes=");
	size_t from = range ? strtoull(range + 15, NULL, 10) : 0;
	char api[600], res[600], old[600];
	const char *sl = strchr(repo, '/');
	snprintf(old, sizeof old, "/%.*s/old-%s/", sl ? (int)(sl - repo) : 0, repo, sl ? sl + 1 : repo);
	const char *o = strstr(path, old);
	if (o && (o == path || o == path + 11)) { /* /ORG/old-NAME/... or /api/models/ORG/old-NAME/... */
		char extra[4600];
		snprintf(extra, sizeof extra, "Location: %.*s/%s/%s\r\n", (int)(o - path), path, repo,
			 o + strlen(old));
		reply(fd, 307, extra, "", 0, 0, head);
		return 0;
	}
	snprintf(api, sizeof api, "/api/models/%s/revision/", repo);
	snprintf(res, sizeof res, "/%s/resolve/", repo);
	if (!strncmp(path, "/cdn/", 5))
		return cdn(fd, path + 5, from, head);
	if (!strncmp(path, api, strlen(api))) {
		const char *rev = path + strlen(api);
		if (strcmp(rev, "main") && strcmp(rev, commit))
			error_reply(fd, 404, "RevisionNotFound", head);
		else
			listing(fd);
		return 0;
	}
	if (!strncmp(path, res, strlen(res))) {
		char rev[256];
		const char *p = path + strlen(res), *sl = strchr(p, '/');
		if (sl && (size_t)(sl - p) < sizeof rev) {
			snprintf(rev, sizeof rev, "%.*s", (int)(sl - p), p);
			struct file *f = find(sl + 1);
			resolve(fd, rev, sl + 1, head);
			return f && !f->lfs && !head ? f->size : 0;
		}
	}
	error_reply(fd, 404, "RepoNotFound", head);
	return 0;
}

static void on_connection(int fd)
{
	char req[16384];
	size_t n = 0;
	while (n + 1 < sizeof req) {
		ssize_t k = read(fd, req + n, sizeof req - 1 - n);
		if (k <= 0)
			return;
		n += (size_t)k;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	char method[16], path[4096];
	if (sscanf(req, "%15s %4095s", method, path) != 2)
		return;
	size_t sent = serve(fd, req, method, path);
	fprintf(logf_, "%s %s %zu\n", method, path, sent);
	fflush(logf_);
}

static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	if (!dflt) {
		fprintf(stderr, "tool_hubserver: %s is needed\n", name);
		exit(2);
	}
	return dflt;
}

int main(int argc, char **argv)
{
	const char *root = arg(argc, argv, "--root", NULL), *port_file;
	repo = arg(argc, argv, "--repo", NULL);
	commit = arg(argc, argv, "--commit", NULL);
	port_file = arg(argc, argv, "--port-file", NULL);
	logf_ = fopen(arg(argc, argv, "--log", NULL), "a");
	token = arg(argc, argv, "--token", "");
	token = *token ? token : NULL;
	mode = arg(argc, argv, "--mode", "ok");
	alarm((unsigned)atoi(arg(argc, argv, "--seconds", "60")));
	signal(SIGPIPE, SIG_IGN);
	load_files(root);
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (!logf_ || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) != 0) {
		perror("tool_hubserver");
		return 1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
	FILE *pf = fopen(tmp, "w"); /* renamed: a reader sees the whole number or none */
	if (!pf || fprintf(pf, "%d\n", ntohs(a.sin_port)) < 0 || fclose(pf) != 0 ||
	    rename(tmp, port_file) != 0) {
		perror(port_file);
		return 1;
	}
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			continue;
		on_connection(c);
		shutdown(c, SHUT_RDWR);
		close(c);
	}
}
