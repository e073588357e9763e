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
 * directory (in /dev/shm when there is one, removed at exit), so an
 * `export --out` that got through would land there.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

/* Runs before libFuzzer reads the corpus: give corpus paths absolute. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, false);
	if (chdir(fuzz_tmpdir) != 0)
		abort();
	return 0;
}

/* True when the line (up to its end or a NUL) names the load command. */
static bool is_load(const char *line, size_t len)
{
	static const char *const names[] = { "load", NULL };
	return fuzz_line_runs(line, len, names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned flags = (data[0] & 1) ? SCRIPT_BATCH : 0;
	char *text = fuzz_blank_lines(data, size, is_load);
	struct session s;

	fuzz_session_init(&s);
	fuzz_run_script(&s, text, size, flags);
	CHECK(s.model == NULL);
	session_free(&s);
	free(text);
	return 0;
}
