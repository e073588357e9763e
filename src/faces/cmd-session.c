/*
 * cmd-session.c — load a model, set the text; echo, pause, help, quit.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "dump.h"
#include "loader.h"
#include "text-input.h"

static void print_summary(struct session *s)
{
	if (s->quiet)
		return;
	char line[256];
	session_summary(s, line, sizeof line);
	fprintf(s->out, "%s\n", line);
}

/* load MODEL [--tokenizer PATH] (the flag before or after MODEL). */
static int load_exec(struct session *s, int argc, char **argv, struct err *e)
{
	const char *spec = NULL, *tok = NULL;
	for (int i = 1; i < argc; i++) {
		bool flag = !strcmp(argv[i], "--tokenizer");
		if (flag && i + 1 < argc && !tok)
			tok = argv[++i];
		else if (!flag && !spec)
			spec = argv[i];
		else
			return err_set(e, "usage: load MODEL [--tokenizer PATH]");
	}
	if (!spec)
		return err_set(e, "usage: load MODEL [--tokenizer PATH]");
	if (session_load(s, spec, tok, e) != 0)
		return -1;
	if (!s->quiet) {
		const struct model_config *c = &s->model->cfg;
		fprintf(s->out, "loaded %s: %d layers x %d heads (%d kv), d_model %d, vocab %d, context %d, %s %s-norm, %s, %s\n",
			s->model->name ? s->model->name : spec, c->n_layer, c->n_head, c->n_kv_head,
			c->d_model, c->vocab_size, c->context, norm_type_name(c->norm),
			norm_place_name(c->placement), pos_type_name(c->pos), mlp_type_name(c->mlp));
		char types[64], mem[32];
		format_bytes(model_bytes(s->model), mem, sizeof mem);
		model_held_types(s->model, types, sizeof types);
		if (types[0]) /* float32 weights are what a model's size says */
			fprintf(s->out, "weights: %s, %s\n", mem, types);
		if (session_ready(s))
			print_summary(s);
	}
	return 0;
}

const struct cmd_entry cmd_load_entry = {
	.name = "load",
	.usage = "MODEL",
	.help = "load a model file or a name in models/",
	.long_help =
		"load MODEL [--tokenizer PATH]\n"
		"MODEL is a file or directory, found by its content: an attnscope .safetensors,\n"
		"a Hugging Face GPT-2, Llama, Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3 (text, or\n"
		"the text model of a multimodal one), GPT-NeoX, GPT-Neo, Phi-3, OLMo-2, BERT,\n"
		"RoBERTa or DistilBERT directory, a GGUF file\n"
		"(llama.cpp, Ollama, LM Studio: Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3,\n"
		"OLMo-2, Phi-3, GPT-2, GPT-NeoX or BERT, F32/F16/BF16 or quantized Q8_0, Q4_0/1,\n"
		"Q5_0/1, Q2_K..Q6_K, dequantized), a llama2.c .bin or an llm.c GPT-2 .bin; or a\n"
		"name in models/ (shakespeare -> models/shakespeare.safetensors); or hf:NAME, a\n"
		"snapshot in the local Hugging Face cache (never downloaded).\n"
		"`models` lists the names there are.  A model whose weights will not fit in the\n"
		"memory available is refused before loading.\n"
		"--tokenizer PATH  the tokenizer to use instead of the one beside the model: for\n"
		"                  a llama2.c .bin a tokenizer.bin; for an llm.c .bin or a GPT-2\n"
		"                  directory, a directory with vocab.json + merges.txt or\n"
		"                  tokenizer.json (or that file); for a GGUF file, whose\n"
		"                  metadata holds its own, any of these.  An attnscope\n"
		"                  .safetensors carries its own tokenizer, so --tokenizer is\n"
		"                  refused for it.",
	.complete = COMPLETE_MODEL,
	.min_args = 1,
	.max_args = 3,
	.exec = load_exec,
};

/* text --file FILE [--offset N] [--tokens N]: words after "text". */
static int text_file(struct session *s, const char *args, struct err *e)
{
	int argc;
	char **argv;
	if (cmd_split(args, &argc, &argv, e) != 0)
		return -1;
	const struct model_config *c = &s->model->cfg;
	/* the ids the tokenizer adds around a text: BOS, and [SEP] after it */
	const struct tokenizer *tk = s->model->tok;
	int bos = tk ? (tk->bos_id >= 0) + (tk->eos_id >= 0) : 0;
	const char *path = NULL;
	int offset = 0, tokens = c->context - bos, rc = -1;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		if (!strcmp(a, "--file") && has) {
			path = argv[++i];
		} else if (!strcmp(a, "--offset") && has) {
			if (cmd_parse_int(argv[++i], 0, 2147483647, "--offset", &offset, e))
				goto out;
		} else if (!strcmp(a, "--tokens") && has) {
			if (cmd_parse_int(argv[++i], 1, c->context - bos, "--tokens", &tokens, e))
				goto out;
		} else {
			err_set(e, "usage: text --file FILE [--offset N] [--tokens N]");
			goto out;
		}
	}
	if (!path) {
		err_set(e, "usage: text --file FILE [--offset N] [--tokens N]");
		goto out;
	}
	struct text_passage p;
	if (text_passage(s->model->tok, path, offset, tokens, &p, e) != 0)
		goto out;
	rc = session_set_text(s, p.text, e);
	if (rc == 0 && !s->quiet)
		fprintf(s->out, "text from %s: characters %ld..%ld of a %lld-byte file, %d tokens\n",
			path, p.first, p.first + p.chars - 1, p.file_bytes, p.tokens);
	free(p.text);
out:
	cmd_free_argv(argc, argv);
	return rc;
}

static int text_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	const char *a = argv[1];
	int rc;
	if (!strncmp(a, "--file", 6) && (a[6] == '\0' || a[6] == ' ' || a[6] == '\t')) {
		if (session_need_model(s, e))
			return -1;
		rc = text_file(s, a, e);
	} else {
		char *text = text_unescape(a);
		rc = session_set_text(s, text, e);
		free(text);
	}
	if (rc != 0)
		return -1;
	print_summary(s);
	return 0;
}

const struct cmd_entry cmd_text_entry = {
	.name = "text",
	.usage = "TEXT... | --file FILE [--offset N] [--tokens N]",
	.help = "set the text (the rest of the line; \\n is a newline) and run the model on it",
	.long_help =
		"text TEXT...   the rest of the line is the text, literally (quotes, ';' and '#'\n"
		"               are text), except three escapes: \\n a newline, \\t a tab,\n"
		"               \\\\ a backslash.  A block pasted at the prompt that starts with\n"
		"               `text` is one text, its line breaks kept.\n"
		"text --file FILE [--offset N] [--tokens N]\n"
		"               a passage of FILE, newlines kept: skip N characters (0), then as\n"
		"               many whole characters as fit in N tokens (the context).\n"
		"Tokens show a newline as \u23ce, a space as \u2423, a tab as \u21e5; a character the model\n"
		"does not know becomes <unk> (shown as <c>) with a warning that names it.",
	.flags = CMD_RAW,
	.complete = COMPLETE_FILE,
	.min_args = 1,
	.max_args = 1,
	.exec = text_exec,
};

/* echo TEXT: the text, or in Chinese the zh twin the script runner found
 * for this line (s->narration). */
static int echo_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)e;
	const char *text = s->narration ? s->narration : argc > 1 ? argv[1] : "";
	fprintf(s->out, "%s\n", text);
	return 0;
}

const struct cmd_entry cmd_echo_entry = {
	.name = "echo",
	.usage = "TEXT...",
	.help = "print a line (for narrated demos)",
	.long_help = "In a command file, a line `zh TEXT` right after an echo line is its Chinese:\n"
		     "with attnscope --lang zh (or a zh_* locale) echo prints that instead.",
	.flags = CMD_RAW,
	.min_args = 0,
	.max_args = 1,
	.exec = echo_exec,
};

static int pause_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)argc;
	(void)argv;
	(void)e;
	if (!s->interactive || !isatty(STDIN_FILENO))
		return 0;
	fputs(s->lang == NARRATE_ZH ? "-- 按回车键继续 --" : "-- press Enter to continue --", s->out);
	fflush(s->out);
	int c;
	while ((c = getchar()) != EOF && c != '\n')
		;
	return 0;
}

const struct cmd_entry cmd_pause_entry = {
	.name = "pause",
	.flags = CMD_STREAMS,
	.usage = "",
	.help = "wait for Enter when a person is at a terminal (skipped otherwise)",
	.min_args = 0,
	.max_args = 0,
	.exec = pause_exec,
};

static int help_exec(struct session *s, int argc, char **argv, struct err *e)
{
	char u[256];
	if (argc == 2) {
		const struct cmd_entry *c = cmd_find(argv[1], e);
		if (!c)
			return -1;
		cmd_usage(c, u, sizeof u);
		fprintf(s->out, "%s\n%s\n", u, c->help);
		if (c->alias)
			fprintf(s->out, "alias: %s\n", c->alias);
		if (c->long_help)
			fprintf(s->out, "\n%s\n", c->long_help);
		return 0;
	}
	int width = cmd_out_width(s);
	width = width < 60 ? 60 : width;
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *c = cmd_table[i];
		cmd_synopsis(c, u, sizeof u);
		if (strlen(u) <= 34) {
			fprintf(s->out, "  %-34s ", u);
		} else { /* the synopsis on lines of its own */
			fputs("  ", s->out);
			cmd_wrap(s->out, u, 2, 6, width);
			fprintf(s->out, "  %-34s ", "");
		}
		cmd_wrap(s->out, c->help, 37, 37, width);
	}
	fprintf(s->out, "Heads are written LAYER.HEAD, counting from 0 (e.g. 2.1). help CMD tells more.\n");
	return 0;
}

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.alias = "?",
	.usage = "[CMD]",
	.help = "list the commands, or explain one",
	.complete = COMPLETE_COMMAND,
	.min_args = 0,
	.max_args = 1,
	.exec = help_exec,
};

static int quit_exec(struct session *s, int argc, char **argv, struct err *e)
{
	(void)s;
	(void)argc;
	(void)argv;
	(void)e;
	return CMD_QUIT;
}

const struct cmd_entry cmd_quit_entry = {
	.name = "quit",
	.alias = "exit",
	.usage = "",
	.help = "leave attnscope",
	.min_args = 0,
	.max_args = 0,
	.exec = quit_exec,
};
