/*
 * hub.h — `pull`: a model repository of the Hugging Face hub into the
 * local hub cache, laid out as huggingface_hub lays it, so that Python
 * tools and attnscope share one copy.  Through libcurl.
 *
 * What is fetched: config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json, special_tokens_map.json, vocab.txt, vocab.json,
 * merges.txt, model.safetensors.index.json and every *.safetensors at the
 * top of the repository (no other weight format, nothing in folders).
 *
 * The conversation, as the hub holds it:
 *   GET  {endpoint}/api/models/{repo}/revision/{rev}  -> {"sha": COMMIT,
 *        "siblings": [{"rfilename": FILE}, ...]}
 *   HEAD {endpoint}/{repo}/resolve/{COMMIT}/{FILE}    -> X-Repo-Commit; for a
 *        file in LFS a redirect with X-Linked-Etag (its SHA-256) and
 *        X-Linked-Size; for one in Git, ETag (its Git blob id) and
 *        Content-Length
 *   GET  the same URL, redirects followed, Range: bytes=N- to resume
 * with Authorization: Bearer $HF_TOKEN when that is set; the endpoint is
 * $HF_ENDPOINT, else https://huggingface.co.
 *
 * The cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub;
 * resolve.h's hf_hub_dir):
 *   models--ORG--NAME/blobs/ETAG            the file's bytes, named by its etag
 *   models--ORG--NAME/blobs/ETAG.incomplete a download under way or cut off
 *   models--ORG--NAME/snapshots/COMMIT/FILE  a relative symbolic link
 *                                           ../../blobs/ETAG
 *   models--ORG--NAME/refs/REV               COMMIT (no newline), when REV
 *                                           is a name rather than the commit
 * A blob is renamed into place only once its size is the one the hub
 * gave and its SHA-256 (LFS) or Git blob id (sha1.h) is its etag: a
 * mismatch deletes the download and fails.  A link or ref is written under
 * a temporary name and renamed.  An interrupted download (the connection
 * lost, or *cancel set by Ctrl-C) keeps its .incomplete, and the next pull
 * asks only for the rest.  A blob already in the cache is not fetched again.
 *
 * $HF_HUB_OFFLINE (1, true, yes, on) forbids the network: a snapshot the
 * cache holds for REV is used; otherwise pull is refused in one line.
 */
#ifndef ATTNSCOPE_HUB_H
#define ATTNSCOPE_HUB_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

struct hub_pull_opts {
	const char *spec;		/* ORG/NAME[@REVISION] (or NAME[@REVISION]) */
	FILE *progress;			/* where progress goes; NULL: nowhere */
	bool tty;			/* progress as a bar redrawn in place */
	volatile sig_atomic_t *cancel;	/* set (by SIGINT) to stop; may be NULL */
};

struct hub_pull_result {
	char repo[256];			/* ORG/NAME */
	char revision[256];		/* as asked, "main" by default */
	char commit[48];		/* the commit the revision names */
	char snapshot[PATH_MAX];	/* the snapshot directory */
	int files;			/* files in the snapshot from this repository */
	int fetched;			/* of them, downloaded (wholly or the rest) now */
	uint64_t bytes;			/* bytes downloaded now */
	bool offline;			/* HF_HUB_OFFLINE: the cache's snapshot was used */
};

/*
 * Pulls o->spec (above).  0 with *r filled, or -1 with one line in e:
 * a spec that is not ORG/NAME[@REV] ("..", characters the hub does not
 * allow); 401 or 403 ("gated or private: set HF_TOKEN ..."); 404 (no such
 * repository or revision); a repository without config.json or without
 * safetensors weights (refused before any download); the connection lost
 * or interrupted (the .incomplete kept, "pull again to resume"); a
 * download whose size or hash is not the hub's (deleted); a write error;
 * HF_HUB_OFFLINE without a cached snapshot.
 */
int hub_pull(const struct hub_pull_opts *o, struct hub_pull_result *r, struct err *e);

/* Whether path is a file pull fetches (the list above). */
bool hub_wanted_file(const char *path);

#endif
