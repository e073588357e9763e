/*
 * cmd-lab.c — `lab`: lists the experiments of lab.h, or runs one with a
 * progress line, prints its table and findings, records it in the session
 * database and writes the table as CSV on request.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "lab.h"
#include "render.h"
#include "resolve.h"
#include "store.h"

extern const struct cmd_entry cmd_lab_entry;

/* The training text when --data is not given: $ATTNSCOPE_CORPUS, else the
 * corpus the shipped models were trained on, which ships in data/
 * (resolve.h: data_file). */
#define LAB_CORPUS_ENV "ATTNSCOPE_CORPUS"
#define LAB_CORPUS_DEFAULT "tinyshakespeare.txt"

static void list(struct session *s)
{
	fprintf(s->out, "lab NAME runs one (--quick: the small size the tests run):\n");
	for (const struct lab_experiment *x = lab_experiments; x->name; x++) {
		char line[512], first[32];
		snprintf(line, sizeof line, "%s (about %d s quick, %d s full here)", x->claim,
			 x->quick_s, x->full_s);
		snprintf(first, sizeof first, "  %-9s ", x->name);
		fputs(first, s->out);
		cmd_wrap(s->out, line, (int)strlen(first), 12, 80);
	}
}

struct progress {
	FILE *f;
	bool tty;
	size_t last_len;
};

/* One line redrawn in place on a terminal; elsewhere quiet. */
static void on_progress(void *ctx, const char *line)
{
	struct progress *p = ctx;
	if (!p->tty)
		return;
	if (!line) {
		fputs("\r\033[K", p->f);
	} else {
		fprintf(p->f, "\r\033[K%.*s", 79, line);
	}
	fflush(p->f);
}

static void print_table(FILE *f, const struct lab_table *t)
{
	int w[16] = { 0 };
	for (int j = 0; j < t->cols && j < 16; j++)
		for (int i = 0; i < t->rows; i++) {
			int n = (int)strlen(t->cells[(size_t)i * t->cols + j]);
			w[j] = n > w[j] ? n : w[j];
		}
	for (int i = 0; i < t->rows; i++) {
		fputs("  ", f);
		for (int j = 0; j < t->cols; j++) {
			const char *c = t->cells[(size_t)i * t->cols + j];
			/* the first column left-aligned, numbers right-aligned */
			fprintf(f, j ? "  %*s" : "%-*s", w[j < 16 ? j : 15], c);
		}
		fputc('\n', f);
	}
}

static int write_csv(const char *path, const struct lab_table *t, struct err *e)
{
	struct render_buf b;
	render_buf_init(&b);
	for (int i = 0; i < t->rows; i++)
		for (int j = 0; j < t->cols; j++) {
			render_csv_field(&b, t->cells[(size_t)i * t->cols + j]);
			render_buf_puts(&b, j + 1 < t->cols ? "," : "\n");
		}
	int rc = write_file_atomic(path, b.data ? b.data : "", b.len, e);
	render_buf_free(&b);
	return rc;
}

static void record(struct session *s, const struct lab_experiment *x, const struct lab_ctx *ctx,
		   const char *status, double seconds, const char *json)
{
	if (!s->store)
		return;
	struct store_lab_row row = {
		.experiment = x->name, .size = ctx->quick ? "quick" : "full", .data_path = ctx->data,
		.status = status, .seconds = seconds,
		.threads = ctx->threads > 0 ? ctx->threads : cpu_count(), .result_json = json,
	};
	struct err e;
	if (store_lab_run(s, &row, &e) < 0)
		fprintf(stderr, "attnscope: warning: %s\n", e.msg);
}

/* Ctrl-C where nothing else catches it (batch mode; the prompt has its
 * own handler): the first stops after the current step, a second quits. */
static volatile sig_atomic_t *lab_cancel;

static void on_interrupt(int sig)
{
	(void)sig;
	if (*lab_cancel)
		_exit(130);
	*lab_cancel = 1;
}

static int lab_exec(struct session *s, int argc, char **argv, struct err *e)
{
	struct cmd_args a;
	if (cmd_args_parse(&cmd_lab_entry, argc, argv, &a, e) != 0)
		return -1;
	if (a.n_pos == 0) {
		list(s);
		return 0;
	}
	const struct lab_experiment *x = lab_find(a.pos[0]);
	if (!x)
		return err_set(e, "lab: no experiment \"%.40s\" (lab lists them)", a.pos[0]);
	const char *data = cmd_str(&cmd_lab_entry, &a, "--data");
	const char *env = getenv(LAB_CORPUS_ENV);
	char shipped[4096];
	if (!data && env && *env)
		data = env;
	if (!data) {
		if (data_file(LAB_CORPUS_DEFAULT, shipped, sizeof shipped, e) != 0)
			return err_prefix(e, "lab %s: cannot find the training text (give one with "
					  "--data FILE)", x->name);
		data = shipped;
	}
	const char *csv = cmd_str(&cmd_lab_entry, &a, "--csv");
	in_use_read(data); /* before the work, not at the write: --csv is not the text */
	if (csv && out_check(csv, OUT_STDOUT, e))
		return -1;
	if (access(data, R_OK) != 0)
		return err_set(e, "lab %s: cannot read the training text %s (give one with --data FILE)",
			       x->name, data);

	struct lab_ctx ctx = {
		.data = data, .base_model = "shakespeare", .native_gqa = "shakespeare-gqa",
		.quick = cmd_has(&cmd_lab_entry, &a, "--quick"), .threads = s->threads,
		.cancel = s->cancel,
	};
	struct progress p = { stderr, s->interactive && isatty(STDERR_FILENO), 0 };
	ctx.progress = on_progress;
	ctx.progress_ctx = &p;
	struct sigaction old;
	bool own = s->cancel && sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL;
	if (own) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_interrupt;
		sigemptyset(&sa.sa_mask);
		lab_cancel = s->cancel;
		sigaction(SIGINT, &sa, NULL);
	}
	/* after the handler: a Ctrl-C once this shows is caught */
	if (!s->quiet)
		cmd_wrap(s->out, x->measures, 0, 2, 80);
	if (!s->quiet)
		fprintf(s->out, "  %s size, on %s; about %d s here\n", ctx.quick ? "quick" : "full",
			data, ctx.quick ? x->quick_s : x->full_s);
	fflush(s->out);
	struct lab_result r;
	memset(&r, 0, sizeof r);
	double t0 = now_ms();
	int rc = x->run(&ctx, &r, e);
	double seconds = (now_ms() - t0) / 1000;
	if (own)
		sigaction(SIGINT, &old, NULL);
	on_progress(&p, NULL);
	if (rc < 0) {
		lab_result_free(&r);
		record(s, x, &ctx, "failed", seconds, "{}");
		return err_prefix(e, "lab %s", x->name);
	}
	lab_result_json(&r, x->name, ctx.quick);
	char head[512];
	snprintf(head, sizeof head, "lab %s (%s, %.0f s)%s — the tutorial: %s", x->name,
		 ctx.quick ? "quick" : "full", seconds, r.partial ? ", stopped early" : "", x->claim);
	cmd_wrap(s->out, head, 0, 2, 80);
	print_table(s->out, &r.table);
	for (int i = 0; i < r.n_findings; i++)
		fputs("- ", s->out), cmd_wrap(s->out, r.findings[i], 2, 2, 80);
	record(s, x, &ctx, r.partial ? "cancelled" : "done", seconds, r.json);
	int wrc = csv ? write_csv(csv, &r.table, e) : 0;
	lab_result_free(&s->lab); /* kept for expect */
	s->lab = r;
	snprintf(s->lab_name, sizeof s->lab_name, "%s", x->name);
	if (rc == 1 && s->cancel)
		*s->cancel = 0; /* handled: the partial result is shown */
	return wrc;
}

static const struct cmd_opt lab_opts[] = {
	{ "--quick", CMD_OPT_FLAG, NULL, 0, 0, NULL },
	{ "--data", CMD_OPT_WORD, "FILE", 0, 0, "the training text" },
	{ "--csv", CMD_OPT_WORD, "FILE", 0, 0, "the CSV file" },
	{ NULL },
};

static void lab_names(struct cmd_cands *out)
{
	for (const struct lab_experiment *x = lab_experiments; x->name; x++)
		cmd_cands_add(out, x->name);
}

const struct cmd_entry cmd_lab_entry = {
	.name = "lab",
	.flags = CMD_STREAMS,
	.usage = "[NAME]",
	.opts = lab_opts,
	.help = "rerun a tutorial's training experiment on this machine, or list them",
	.long_help =
		"Each experiment trains (or times) small models that differ in one thing and\n"
		"prints a table in the tutorial's shape with findings computed from the\n"
		"numbers, which say so where the result is not the tutorial's.  --quick is a\n"
		"size that runs in seconds (the tests run it); the full size takes minutes.\n"
		"The training text is --data FILE, else $ATTNSCOPE_CORPUS, else\n"
		"data/" LAB_CORPUS_DEFAULT " (the shipped models' corpus, which ships with\n"
		"the program; $ATTNSCOPE_DATA moves data/).  The gqa experiment converts\n"
		"the shipped shakespeare model.  Ctrl-C stops after the current step and\n"
		"shows the arms that finished.  Every run is recorded in the session\n"
		"database (lab_runs); --csv FILE writes the table.",
	.complete = COMPLETE_WORDS,
	.more_words = lab_names,
	.min_args = 0,
	.max_args = 1,
	.exec = lab_exec,
};
