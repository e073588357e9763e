/*
 * main.c — the attnscope command line: options, then the chosen face
 * (--dump, command files and -c, standard input, the REPL, or the tour),
 * and the narration language (--lang, else the locale).
 */
#define _GNU_SOURCE
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "dump.h"
#include "loader.h"
#include "model.h"
#include "repl.h"
#include "script.h"
#include "session.h"
#include "store.h"
#include "tour.h"
#include "train.h"
#include "tui.h"
#include "version.h"

#define DEFAULT_MODEL "shakespeare"

static const char usage[] =
	"usage: attnscope [MODEL] [-m MODEL] [--tokenizer PATH] [-t TEXT] [-c \"CMD; CMD\"]\n"
	"                 [-f FILE] [--batch] [--tui] [--db PATH | --no-db] [--threads N] [--dump]\n"
	"                 [--lang en|zh] [--help] [--version]\n"
	"       attnscope tour [options]       (attnscope tour --help)\n"
	"       attnscope train [options]      (attnscope train --help)\n"
	"       attnscope pull ORG/NAME[@REV]  (attnscope pull --help)\n"
	"\n"
	"Runs a transformer language model on text and shows what every attention\n"
	"head does with it.\n"
	"\n"
	"  MODEL, -m MODEL   a model file or directory (.safetensors, .gguf, llama2.c or llm.c\n"
	"                    .bin, Hugging Face GPT-2, Llama, Qwen2, Qwen3, Mistral, Gemma 2,\n"
	"                    Gemma 3, GPT-NeoX, GPT-Neo, Phi-3, OLMo-2, BERT, RoBERTa or\n"
	"                    DistilBERT), or\n"
	"                    a name in models/ (default: " DEFAULT_MODEL ").\n"
	"                    A MODEL given here must load.  When the default is missing,\n"
	"                    attnscope starts without a model (a script or `load MODEL` can\n"
	"                    load one) and tells why the first time a command fails without one.\n"
	"  --tokenizer PATH  the tokenizer of MODEL, instead of the one beside it (or in a\n"
	"                    .gguf's metadata): for a llama2.c .bin a tokenizer.bin; for an llm.c\n"
	"                    .bin or a Hugging Face GPT-2 directory, a directory with vocab.json +\n"
	"                    merges.txt or tokenizer.json (or that file); for a .gguf either.\n"
	"                    An attnscope .safetensors carries its own: refused\n"
	"  -t, --text TEXT   the text to run (needs a model)\n"
	"  -c CMDS           run commands separated by ';' (\\; is a literal ';'), then exit;\n"
	"                    the first failing command stops the run (status 1)\n"
	"  -f FILE           run a command file (- is standard input); at a terminal without\n"
	"                    --batch, errors are reported and the prompt follows the file.\n"
	"                    -c and -f may be repeated; they run in the order given\n"
	"  --batch           no prompt: run -c/-f, or else standard input, and stop at the\n"
	"                    first failing command with FILE:LINE: message and status 1.\n"
	"                    Implied when standard input is not a terminal (it is then read\n"
	"                    only when no -c or -f is given)\n"
	"  --tui             the full-screen visualizer\n"
	"  --db PATH         session database (default: $ATTNSCOPE_DB, else\n"
	"                    sessions/attnscope.db where a sessions/ directory exists,\n"
	"                    else $XDG_DATA_HOME/attnscope/attnscope.db, by default\n"
	"                    ~/.local/share/attnscope/attnscope.db)\n"
	"  --no-db           record nothing\n"
	"  --dump            print the config, tokens and every head's attention rows\n"
	"  --threads N       threads for matrix products (default: all cores)\n"
	"  --lang en|zh      narration of command files: English, or the Chinese twins of\n"
	"                    their echo and expect lines (default: zh for a zh_* locale in\n"
	"                    LC_ALL, LC_MESSAGES or LANG, the first one set; else en)\n"
	"  -h, --help        this help\n"
	"  --version         the version\n"
	"\n"
	"In a command file, one command per line; '#' starts a comment line; `text` takes the\n"
	"rest of the line literally; a line with a NUL byte is refused, and one longer than\n"
	"1 MiB (1048576 bytes) ends the run.  `pause` waits for Enter only at a terminal.\n"
	"`quit` ends with status 0.  Type `help` at the prompt for the commands.\n";

static const char tour_usage[] =
	"usage: attnscope tour [--lang en|zh] [--from N] [--batch] [--db PATH | --no-db]\n"
	"                      [--threads N] [--help]\n"
	"\n"
	"A 55-minute class through the shipped demos in the tutorials' order, one\n"
	"lesson per demo file, each announced as \"lesson N/M: TITLE (about K min)\".\n"
	"At a terminal: runs lesson N (default 1), its pauses waiting for Enter, then\n"
	"opens the prompt, where `tour` runs the next lesson, `tour back` the one\n"
	"before, `tour N` any, `tour list` lists them (help tour).\n"
	"\n"
	"  --lang en|zh      the narration: English or Chinese (default: from the locale,\n"
	"                    as attnscope --lang)\n"
	"  --from N          start at lesson N\n"
	"  --batch           no prompt and no pauses: lessons N..M in order; a lesson stops\n"
	"                    at its first failing command (FILE:LINE: message) and the next\n"
	"                    one runs; the exit status is 1 when any failed.  Implied when\n"
	"                    standard input is not a terminal\n"
	"  --db PATH, --no-db, --threads N   as for attnscope\n"
	"\n"
	"The lessons are sessions/demos/*.cmds ($ATTNSCOPE_DEMOS moves them).\n";

/* A -c or -f argument, in command-line order. */
struct script_arg {
	char kind; /* 'c' or 'f' */
	const char *arg;
};

struct cli {
	const char *model_spec;  /* NULL: the default */
	const char *tokenizer;   /* --tokenizer for model_spec, or NULL */
	const char *text;
	int threads;
	bool dump, batch, tui;
	const char *db_path;     /* --db or $ATTNSCOPE_DB; NULL: the default place */
	bool no_db;              /* --no-db */
	struct script_arg *scripts;
	int n_scripts;
	bool lang_given;         /* --lang */
	enum narrate_lang lang;
	bool tour;               /* attnscope tour */
	int tour_from;           /* its --from (1..M) */
};

static int usage_error(const char *fmt, const char *arg)
{
	fputs("attnscope: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (attnscope --help lists the options)\n", stderr);
	return 2;
}

/* A usage error of attnscope tour: "attnscope tour: MESSAGE (...)";
 * returns the exit status, 2. */
static int tour_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tour_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("attnscope tour: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(" (attnscope tour --help lists the options)\n", stderr);
	va_end(ap);
	return 2;
}

/* --lang WORD into c.  0, or -1 when WORD is neither en nor zh. */
static int parse_lang(const char *v, struct cli *c)
{
	if (strcmp(v, "en") && strcmp(v, "zh"))
		return -1;
	c->lang_given = true;
	c->lang = !strcmp(v, "zh") ? NARRATE_ZH : NARRATE_EN;
	return 0;
}

/* The narration language of the locale: zh when the first of LC_ALL,
 * LC_MESSAGES and LANG that is set (POSIX's order) names a zh locale
 * ("zh", "zh_CN.UTF-8", "zh_TW"...), else en. */
static enum narrate_lang lang_from_env(void)
{
	static const char *const vars[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return !strncmp(v, "zh", 2) && strchr("_.@", v[2] ? v[2] : '_') ? NARRATE_ZH
										: NARRATE_EN;
	}
	return NARRATE_EN;
}

/* Parses the arguments of `attnscope tour` (argv[0] is "tour") into c.
 * Returns -1 to go on, or the exit status (help, usage errors). */
static int parse_tour_args(int argc, char **argv, struct cli *c)
{
	const char *env_db = getenv("ATTNSCOPE_DB");
	c->db_path = env_db && env_db[0] ? env_db : NULL;
	c->scripts = xmalloc(sizeof *c->scripts);
	c->tour = true;
	c->tour_from = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char name[64];
		const char *v = NULL;
		if (!strncmp(a, "--", 2) && strchr(a, '=') && strchr(a, '=') - a < (long)sizeof name) {
			snprintf(name, sizeof name, "%.*s", (int)(strchr(a, '=') - a), a);
			v = strchr(a, '=') + 1;
			a = name;
		}
		bool takes = !strcmp(a, "--lang") || !strcmp(a, "--from") || !strcmp(a, "--db") ||
			     !strcmp(a, "--threads");
		if (!takes && v)
			return tour_error("%s takes no value", a);
		if (takes && !v && i + 1 >= argc)
			return tour_error("%s needs a value", a);
		if (takes && !v)
			v = argv[++i];
		char *end = NULL;
		long n = v ? strtol(v, &end, 10) : 0;
		bool number = v && end != v && !*end;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(tour_usage, stdout);
			return 0;
		} else if (!strcmp(a, "--lang")) {
			if (parse_lang(v, c) != 0)
				return tour_error("--lang %s: expected en or zh", v);
		} else if (!strcmp(a, "--from")) {
			if (!number || n < 1 || n > tour_lessons())
				return tour_error("--from %s: expected a lesson from 1 to %d", v,
						  tour_lessons());
			c->tour_from = (int)n;
		} else if (!strcmp(a, "--threads")) {
			if (!number || n < 0 || n > 4096)
				return tour_error("--threads %s: expected a number from 0 to 4096", v);
			c->threads = (int)n;
		} else if (!strcmp(a, "--db")) {
			c->db_path = v;
		} else if (!strcmp(a, "--batch")) {
			c->batch = true;
		} else if (!strcmp(a, "--no-db")) {
			c->no_db = true;
		} else {
			return tour_error("unexpected argument %s", a);
		}
	}
	return -1;
}

/* Parses argv into c.  Returns -1 to go on, or the exit status (help,
 * version, usage errors). */
static int parse_args(int argc, char **argv, struct cli *c)
{
	const char *env_db = getenv("ATTNSCOPE_DB");
	c->db_path = env_db && env_db[0] ? env_db : NULL;
	c->scripts = xmalloc((size_t)(argc + 1) * sizeof *c->scripts);
	bool options_done = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *inline_val = NULL;
		char name[64];
		/* --long=value */
		if (!options_done && !strncmp(a, "--", 2) && strchr(a, '=')) {
			size_t n = (size_t)(strchr(a, '=') - a);
			if (n >= sizeof name)
				return usage_error("unknown option %s", a);
			memcpy(name, a, n);
			name[n] = '\0';
			inline_val = a + n + 1;
			a = name;
		}
		if (options_done || a[0] != '-' || a[1] == '\0') {
			if (c->model_spec)
				return usage_error("unexpected argument %s (the model is already given)", a);
			c->model_spec = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			options_done = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("attnscope %s\n", ATTNSCOPE_VERSION);
			return 0;
		} else if (!strcmp(a, "--dump")) {
			c->dump = true;
		} else if (!strcmp(a, "--batch")) {
			c->batch = true;
		} else if (!strcmp(a, "--tui")) {
			c->tui = true;
		} else if (!strcmp(a, "--no-db")) {
			c->no_db = true;
		} else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-t") ||
			   !strcmp(a, "--text") || !strcmp(a, "-c") || !strcmp(a, "--command") ||
			   !strcmp(a, "-f") || !strcmp(a, "--file") || !strcmp(a, "--db") ||
			   !strcmp(a, "--threads") || !strcmp(a, "--tokenizer") || !strcmp(a, "--lang")) {
			const char *v = inline_val;
			if (!v) {
				if (i + 1 >= argc)
					return usage_error("%s needs a value", a);
				v = argv[++i];
			}
			if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
				if (c->model_spec)
					return usage_error("%s: the model is already given", a);
				c->model_spec = v;
			} else if (!strcmp(a, "-t") || !strcmp(a, "--text")) {
				if (!v[0])
					return usage_error("%s '': the text is empty; there is nothing to run", a);
				c->text = v;
			} else if (!strcmp(a, "-c") || !strcmp(a, "--command")) {
				c->scripts[c->n_scripts++] = (struct script_arg){ 'c', v };
			} else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
				c->scripts[c->n_scripts++] = (struct script_arg){ 'f', v };
			} else if (!strcmp(a, "--db")) {
				c->db_path = v;
			} else if (!strcmp(a, "--lang")) {
				if (parse_lang(v, c) != 0)
					return usage_error("--lang %s: expected en or zh", v);
			} else if (!strcmp(a, "--tokenizer")) {
				if (!v[0])
					return usage_error("%s needs a value", a);
				c->tokenizer = v;
			} else {
				char *end;
				long n = strtol(v, &end, 10);
				if (end == v || *end || n < 0 || n > 4096)
					return usage_error("--threads %s: expected a number from 0 to 4096", v);
				c->threads = (int)n;
			}
			continue;
		} else {
			return usage_error("unknown option %s", a);
		}
		if (inline_val)
			return usage_error("%s takes no value", a);
	}
	if (c->tokenizer && !c->model_spec)
		return usage_error("--tokenizer %s: give the MODEL it is for "
				   "(attnscope MODEL --tokenizer PATH)", c->tokenizer);
	return -1;
}

/* `attnscope --dump`: the config, or one run's attention, as plain text. */
static int run_dump(const struct cli *c)
{
	struct err e;
	struct model *m = model_open_ex(c->model_spec ? c->model_spec : DEFAULT_MODEL, c->tokenizer,
					NULL, &e);
	if (!m) {
		fprintf(stderr, "attnscope: %s\n", e.msg);
		return 1;
	}
	int rc = 0;
	if (!c->text) {
		dump_config(stdout, m);
	} else if (dump_run(stdout, m, c->text, strlen(c->text), &e) != 0) {
		/* including "error writing standard output: ..." */
		fprintf(stderr, "attnscope: %s\n", e.msg);
		rc = 1;
	}
	model_free(m);
	return rc;
}

/* The line shown above the first prompt. */
static void banner(const struct session *s)
{
	printf("attnscope %s", ATTNSCOPE_VERSION);
	if (s->model) {
		const struct model_config *m = &s->model->cfg;
		printf(": %s, %d layers x %d heads (%d kv), context %d",
		       s->model->name ? s->model->name : s->model_spec, m->n_layer, m->n_head,
		       m->n_kv_head, m->context);
	}
	printf("\nType help for the commands, quit to leave.\n");
	if (session_ready(s)) {
		char line[256];
		session_summary(s, line, sizeof line);
		printf("%s\n", line);
	}
}

static volatile sig_atomic_t cancel_flag;

/* attnscope tour: with no_repl every lesson from --from on; else the
 * command `tour N` for that lesson (recorded as if typed), then the
 * prompt.  Returns the exit status. */
static int run_tour(const struct cli *c, struct session *s, bool no_repl)
{
	struct err e;
	e.msg[0] = '\0';
	char line[32];
	snprintf(line, sizeof line, "tour %d", c->tour_from);
	if (s->interactive)
		repl_interrupts_begin(s);
	int rc = no_repl ? tour_run_all(s, c->tour_from, &e) : cmd_run_line(s, line, &e);
	if (s->interactive)
		repl_interrupts_end();
	if (rc == CMD_QUIT)
		return 0;
	if (rc < 0)
		fprintf(stderr, "attnscope: %s\n", e.msg[0] ? e.msg : "the tour failed");
	if (no_repl)
		return rc < 0 ? 1 : 0;
	return repl_run(s);
}

/* Everything but --dump: load, set the text, run scripts, then maybe the
 * prompt.  Returns the exit status. */
static int run_session(const struct cli *c, struct session *s)
{
	struct err e;
	bool at_terminal = isatty(STDIN_FILENO);
	bool has_c = false;
	for (int i = 0; i < c->n_scripts; i++)
		has_c |= c->scripts[i].kind == 'c';
	/* no prompt afterwards: -c, --batch, or input that is not a person */
	bool no_repl = c->batch || !at_terminal || has_c;

	s->interactive = at_terminal && !c->batch;
	s->threads = c->threads;
	s->cancel = &cancel_flag;

	int lrc = session_load(s, c->model_spec ? c->model_spec : DEFAULT_MODEL, c->tokenizer, &e);
	if (lrc != 0) {
		if (c->model_spec) {
			fprintf(stderr, "attnscope: %s\n", e.msg);
			return 1;
		}
		char note[ERR_MAX + 64];
		snprintf(note, sizeof note, "the default model was not loaded: %s", e.msg);
		script_set_no_model_note(note);
	}
	if (c->text && session_set_text(s, c->text, &e) != 0) {
		fprintf(stderr, "attnscope: -t: %s\n", e.msg);
		script_note_no_model(s, stderr);
		return 1;
	}

	if (c->tour)
		return run_tour(c, s, no_repl);
	unsigned flags = no_repl ? SCRIPT_BATCH : 0;
	for (int i = 0; i < c->n_scripts; i++) {
		const struct script_arg *a = &c->scripts[i];
		if (s->interactive)
			repl_interrupts_begin(s);
		int rc = a->kind == 'c' ? script_run_commands(s, a->arg, flags, stderr)
					: script_run_file(s, a->arg, flags, stderr);
		if (s->interactive)
			repl_interrupts_end();
		if (rc == SCRIPT_QUIT)
			return 0;
		if (rc == SCRIPT_FAILED && (flags & SCRIPT_BATCH))
			return 1;
	}
	if (c->tui) {
		/* --tui: the visualizer once the model, the text and any -c/-f are in */
		struct err te;
		if (tui_run(s, 0, TUI_STANDALONE, &te) < 0) {
			fprintf(stderr, "attnscope: --tui: %s\n", te.msg);
			return 1;
		}
		return 0;
	}
	if (no_repl) {
		if (c->n_scripts > 0)
			return 0;
		int rc = script_run_stream(s, stdin, "<stdin>", SCRIPT_BATCH, stderr);
		return rc == SCRIPT_FAILED ? 1 : 0;
	}
	if (c->n_scripts == 0)
		banner(s);
	return repl_run(s);
}

/* Everything main() does but checking standard output.  Returns the exit
 * status. */
static int run(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "train") == 0)
		return train_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "pull") == 0)
		return pull_main(argc - 1, argv + 1);
	setlocale(LC_ALL, "");

	struct cli c;
	memset(&c, 0, sizeof c);
	bool tour = argc > 1 && !strcmp(argv[1], "tour");
	int rc = tour ? parse_tour_args(argc - 1, argv + 1, &c) : parse_args(argc, argv, &c);
	if (rc >= 0) {
		free(c.scripts);
		return rc;
	}
	engine_set_threads(c.threads);
	if (c.dump) {
		rc = run_dump(&c);
		free(c.scripts);
		return rc;
	}

	struct session s;
	session_init(&s, stdout);
	s.lang = c.lang_given ? c.lang : lang_from_env();
	char warning[ERR_MAX + 256];
	store_attach(&s, store_open_default(c.db_path, c.no_db, warning, sizeof warning));
	if (warning[0]) {
		fprintf(stderr, "attnscope: warning: %s\n", warning);
		snprintf(s.store_note, sizeof s.store_note, "not recording");
	}
	rc = run_session(&c, &s);
	store_close(s.store);
	store_attach(&s, NULL);
	session_free(&s);
	script_set_no_model_note(NULL);
	free(c.scripts);
	return rc;
}

/* A write to standard output that failed, however early, is an error: the
 * exit status is then 1 (or the run's own non-zero status). */
int main(int argc, char **argv)
{
	int rc = run(argc, argv);
	if (stdout_close() != 0 && rc == 0)
		rc = 1;
	return rc;
}
