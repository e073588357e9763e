/*
 * fuzz_script.c — libFuzzer target for the script runner: arbitrary bytes
 * (NULs, invalid UTF-8, CR, no final newline, very long lines) run as a
 * command file on a session with no model, output and messages to
 * /dev/null.  The first byte chooses batch mode (stop at the first error)
 * or not (every line runs).
 *
 * Lines that would `load` a file are blanked first, so that the fuzzer
 * cannot open arbitrary paths (a FIFO or /dev/zero would hang the run);
 * loaders have their own targets.  The run happens in a fresh temporary
 * directory, so an `export --out` that got through would land there.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "script.h"
#include "session.h"

#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

static FILE *devnull;
static char workdir[] = "/tmp/attnscope-fuzz.XXXXXX";

static void remove_workdir(void)
{
	if (chdir("/") == 0)
		rmdir(workdir); /* only when nothing was written there */
}

/* Runs before libFuzzer reads the corpus: give corpus paths absolute. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull || !mkdtemp(workdir) || chdir(workdir) != 0)
		abort();
	atexit(remove_workdir);
	return 0;
}

/* True when the line (up to its end or a NUL) names the load command. */
static bool is_load(const char *line, size_t len)
{
	char *copy = xstrndup(line, len);
	int argc;
	char **argv;
	bool load = false;
	if (cmd_split(copy, &argc, &argv, NULL) == 0) {
		const struct cmd_entry *c = argc > 0 ? cmd_find(argv[0], NULL) : NULL;
		load = c && !strcmp(c->name, "load");
		cmd_free_argv(argc, argv);
	}
	free(copy);
	return load;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned flags = (data[0] & 1) ? SCRIPT_BATCH : 0;
	char *text = xmalloc(size);
	memcpy(text, data, size);
	for (size_t i = 0; i < size;) {
		if (i == 0 && size >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
			i = 3; /* the runner drops a byte-order mark before line 1 */
		size_t j = i;
		while (j < size && text[j] != '\n')
			j++;
		if (is_load(text + i, j - i))
			memset(text + i, ' ', j - i);
		i = j + 1;
	}

	FILE *in = fmemopen(text, size, "r");
	CHECK(in != NULL);
	static volatile sig_atomic_t cancel;
	struct session s;
	session_init(&s, devnull);
	s.interactive = false;
	s.cancel = &cancel;
	int rc = script_run_stream(&s, in, "fuzz", flags, devnull);
	CHECK(rc == SCRIPT_OK || rc == SCRIPT_QUIT || rc == SCRIPT_FAILED);
	CHECK(s.model == NULL);
	fclose(in);
	session_free(&s);
	free(text);
	return 0;
}
