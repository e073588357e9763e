/*
 * fuzz_cmdsplit.c — libFuzzer target for the line splitters: cmd_split()
 * (every face's words) and script_split_commands() (-c's ';').
 *
 * Each input, NULs included, is copied and NUL-terminated (the splitters
 * take C strings; the copy ends at the first NUL for them).  Checks beyond
 * "no crash": on success argv is NULL-terminated, every word is at most
 * as long as the line, and there are at most (len + 1) / 2 words; on failure the
 * message is set; without backslashes -c yields one command per ';' plus one.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	size_t len = strlen(line);

	int argc = -1;
	char **argv = NULL;
	struct err e;
	e.msg[0] = '\0';
	if (cmd_split(line, &argc, &argv, &e) == 0) {
		CHECK(argv != NULL);
		CHECK(argc >= 0 && (size_t)argc <= (len + 1) / 2);
		CHECK(argv[argc] == NULL);
		for (int i = 0; i < argc; i++) {
			CHECK(argv[i] != NULL);
			CHECK(strlen(argv[i]) <= len);
		}
		cmd_free_argv(argc, argv);
	} else {
		CHECK(e.msg[0] != '\0');
	}

	int n = -1;
	char **cmds = NULL;
	script_split_commands(line, &n, &cmds);
	CHECK(n >= 1 && cmds != NULL && cmds[n] == NULL);
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		CHECK(cmds[i] != NULL);
		total += strlen(cmds[i]);
	}
	CHECK(total <= len);
	if (!strchr(line, '\\')) {
		int semis = 0;
		for (const char *p = line; *p; p++)
			semis += *p == ';';
		CHECK(n == semis + 1);
	}
	cmd_free_argv(n, cmds);
	free(line);
	return 0;
}
