/*
 * cmd-pull.c — pull ORG/NAME[@REVISION]: a Hugging Face hub repository's
 * config, tokenizer files and safetensors weights into the local hub
 * cache (hub.h), with a progress bar on a terminal; and `attnscope pull`
 * on the command line, which runs the same without a session.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "hub.h"

static volatile sig_atomic_t *pull_cancel;

/* A first Ctrl-C stops the download (its .incomplete kept); a second one
 * leaves at once. */
static void on_interrupt(int sig)
{
	(void)sig;
	if (*pull_cancel)
		_exit(130);
	*pull_cancel = 1;
}

/* Pulls spec, printing progress on stderr and the result on out.  0, or
 * -1 + e.  cancel may be NULL: a flag of its own, set by SIGINT. */
static int pull_spec(const char *spec, FILE *out, volatile sig_atomic_t *cancel, struct err *e)
{
	static volatile sig_atomic_t own_flag;
	struct sigaction old, sa;
	if (!cancel) {
		own_flag = 0;
		cancel = &own_flag;
	}
	bool own = sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL;
	if (own) {
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_interrupt;
		sigemptyset(&sa.sa_mask);
		pull_cancel = cancel;
		sigaction(SIGINT, &sa, NULL);
	}
	struct hub_pull_opts o = { spec, stderr, isatty(STDERR_FILENO) == 1, cancel };
	struct hub_pull_result r;
	fflush(out);
	int rc = hub_pull(&o, &r, e);
	if (own)
		sigaction(SIGINT, &old, NULL);
	if (rc != 0)
		return -1;
	if (r.offline)
		fprintf(out, "HF_HUB_OFFLINE: %s@%s is in the cache, nothing downloaded: %s\n",
			r.repo, r.revision, r.snapshot);
	else
		fprintf(out, "pulled %s@%s (commit %.12s): %d files, %d downloaded now (%llu bytes), "
			"in %s\n", r.repo, r.revision, r.commit, r.files, r.fetched,
			(unsigned long long)r.bytes, r.snapshot);
	/* a name without an organisation is no ORG/NAME spec: hf:NAME is */
	fprintf(out, "`load %s%s` opens it\n", strchr(r.repo, '/') ? "" : "hf:", r.repo);
	return 0;
}

static int pull_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	return pull_spec(argv[1], s->out, s->cancel, e);
}

#define PULL_HELP \
	"Downloads a Hugging Face hub repository's config.json, generation_config.json,\n" \
	"tokenizer files (tokenizer.json, tokenizer_config.json, special_tokens_map.json,\n" \
	"vocab.txt, vocab.json, merges.txt) and *.safetensors weights (with\n" \
	"model.safetensors.index.json), no other weight format, into the Hugging Face\n" \
	"cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub) as\n" \
	"huggingface_hub lays it out (models--ORG--NAME/blobs, snapshots/COMMIT, refs),\n" \
	"so Python tools and attnscope share it; `load ORG/NAME` opens it then.  REVISION\n" \
	"is a branch, tag or commit (main by default).  Each file is checked against the\n" \
	"hub's SHA-256 (LFS) or Git blob id before it counts as complete; an interrupted\n" \
	"download (Ctrl-C, a lost connection) resumes where it stopped on the next pull;\n" \
	"what the cache holds already is not downloaded again.  $HF_ENDPOINT names a\n" \
	"mirror, $HF_TOKEN is sent as a bearer token (gated and private repositories), and\n" \
	"$HF_HUB_OFFLINE=1 forbids the network (the cached snapshot is used, if any)."

const struct cmd_entry cmd_pull_entry = {
	.name = "pull",
	.usage = "ORG/NAME[@REVISION]",
	.help = "download a Hugging Face model into the Hugging Face cache",
	.long_help = PULL_HELP,
	.min_args = 1,
	.max_args = 1,
	.exec = pull_exec,
};

int pull_main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: attnscope pull ORG/NAME[@REVISION]\n\n%s\n", PULL_HELP);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: attnscope pull ORG/NAME[@REVISION] (--help tells more)\n");
		return 2;
	}
	struct err e;
	if (pull_spec(argv[1], stdout, NULL, &e) != 0) {
		fprintf(stderr, "attnscope pull: %s\n", e.msg);
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
