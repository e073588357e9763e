/*
 * cmd-tour.c — `tour [N | next | back | again | list]`: a 55-minute class
 * through the shipped demos in the tutorials' order (tour.h).  Owns the
 * lesson table (file, minutes, title in English and Chinese); the lessons'
 * narration is the demo files' own, run by script.c.
 */
#include "tour.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "resolve.h"
#include "script.h"

/* One lesson: a demo file of sessions/demos and its share of the class. */
struct lesson {
	const char *file;     /* its name in sessions/demos (resolve.h: demo_file) */
	int minutes;          /* its share of the 50 minutes (a plan, not a measurement) */
	const char *title;    /* what it teaches, in English */
	const char *title_zh; /* and in Chinese */
};

/* The tutorials' order; the minutes add up to 55. */
static const struct lesson lessons[] = {
	{ "basics.cmds", 4, "Heads, d_head and the 4·d² weights of attention",
	  "注意力头、d_head 与注意力层的 4·d² 个权重" },
	{ "scaling.cmds", 6, "Scaling the scores by 1/sqrt(d_head)",
	  "用 1/sqrt(d_head) 缩放注意力分数" },
	{ "causal.cmds", 7, "Masks: causal, none, window, after the softmax; padding",
	  "掩码：因果掩码、无掩码、窗口、softmax 之后再掩码；填充掩码" },
	{ "gqa.cmds", 6, "The KV cache: MHA → GQA → MQA, and uptraining",
	  "KV 缓存：MHA → GQA → MQA，以及转换后的继续训练" },
	{ "norm.cmds", 6, "Residuals and the norm: pre-norm, post-norm, RMSNorm",
	  "残差与归一化：前置归一化、后置归一化与 RMSNorm" },
	{ "heads.cmds", 7, "Heads that specialise, and heads that are redundant",
	  "各有分工的注意力头，与可有可无的注意力头" },
	{ "encoder.cmds", 5, "An encoder's heads: BERT's roles on a masked-LM model",
	  "编码器的注意力头：掩码语言模型上的 BERT 式角色" },
	{ "tang.cmds", 4, "静夜思 on a model of Tang poems", "唐诗模型读《静夜思》" },
	{ "lab.cmds", 5, "The lab: the tutorials' training claims, rerun",
	  "实验：在本机重跑教程中关于训练的结论" },
	{ "pitfalls.cmds", 5, "The tutorial's table of common mistakes, row by row",
	  "教程中的常见错误表，逐行演示" },
};

#define N_LESSONS ((int)(sizeof lessons / sizeof lessons[0]))

/* A lesson is running: `tour` inside one would start the tour again. */
static bool running;

int tour_lessons(void)
{
	return N_LESSONS;
}

static bool zh(const struct session *s)
{
	return s->lang == NARRATE_ZH;
}

static const char *title(const struct session *s, int n)
{
	return zh(s) ? lessons[n - 1].title_zh : lessons[n - 1].title;
}

int tour_run_lesson(struct session *s, int n, struct err *e)
{
	if (running)
		return err_set(e, "tour: a lesson is running (a lesson cannot start the tour)");
	const struct lesson *l = &lessons[n - 1];
	char path[PATH_MAX];
	if (demo_file(l->file, path, sizeof path, e) != 0)
		return err_prefix(e, "lesson %d/%d", n, N_LESSONS);
	if (zh(s))
		fprintf(s->out, "第 %d 课（共 %d 课）：%s（约 %d 分钟）\n", n, N_LESSONS, title(s, n),
			l->minutes);
	else
		fprintf(s->out, "lesson %d/%d: %s (about %d min)\n", n, N_LESSONS, title(s, n),
			l->minutes);
	/* as when its file runs alone: no text of an earlier lesson (which
	 * its `load` would run, and warn about, on its own model) */
	if (session_set_text(s, "", e) != 0)
		return -1;
	s->tour_lesson = n;
	running = true;
	int rc = script_run_file(s, path, s->interactive ? 0 : SCRIPT_BATCH, stderr);
	running = false;
	if (rc == SCRIPT_QUIT)
		return CMD_QUIT;
	if (rc == SCRIPT_FAILED)
		return err_set(e, "lesson %d/%d (%s): a command failed (its FILE:LINE: message is above)",
			       n, N_LESSONS, l->file);
	return 0;
}

/* After one lesson at the prompt: what `tour` does next. */
static void footer(struct session *s, int n)
{
	if (n == N_LESSONS) {
		fprintf(s->out, zh(s) ? "第 %d 课是最后一课，课程到此结束（tour 1 从头再来，"
					"tour list 列出各课）。\n"
				      : "Lesson %d was the last: the tour is over (tour 1 starts it "
					"again, tour list lists the lessons).\n", n);
		return;
	}
	if (zh(s))
		fprintf(s->out, "第 %d 课结束。下一课：tour（第 %d 课：%s，约 %d 分钟）；"
				"tour back 回到上一课，tour list 列出各课。\n",
			n, n + 1, title(s, n + 1), lessons[n].minutes);
	else
		fprintf(s->out, "End of lesson %d/%d. Next: tour (lesson %d/%d: %s, about %d min); "
				"tour back goes back, tour list lists the lessons.\n",
			n, N_LESSONS, n + 1, N_LESSONS, title(s, n + 1), lessons[n].minutes);
}

/* tour list: every lesson, the one run last marked with *. */
static void list(struct session *s)
{
	int total = 0;
	for (int i = 0; i < N_LESSONS; i++)
		total += lessons[i].minutes;
	if (zh(s))
		fprintf(s->out, "课程共 %d 课，约 %d 分钟（tour N 运行第 N 课）：\n", N_LESSONS, total);
	else
		fprintf(s->out, "The tour: %d lessons, about %d min (tour N runs lesson N):\n",
			N_LESSONS, total);
	for (int i = 0; i < N_LESSONS; i++)
		fprintf(s->out, "%c %2d  %-13s %2d %s  %s\n", s->tour_lesson == i + 1 ? '*' : ' ', i + 1,
			lessons[i].file, lessons[i].minutes, zh(s) ? "分钟" : "min", title(s, i + 1));
	if (s->tour_lesson > 0)
		fprintf(s->out, zh(s) ? "* 上次运行的一课\n" : "* the lesson run last\n");
}

/* Which lesson the words after `tour` name: 0 for list; else 1..M, or -1
 * with e set. */
static int pick(const struct session *s, int argc, char **argv, struct err *e)
{
	const char *w = argc > 1 ? argv[1] : "next";
	int last = s->tour_lesson, n;
	if (!strcmp(w, "list"))
		return 0;
	if (!strcmp(w, "next")) {
		if (last == N_LESSONS)
			return err_set(e, "tour: lesson %d/%d was the last (tour 1 starts again)", last,
				       N_LESSONS);
		return last + 1;
	}
	if (!strcmp(w, "back") || !strcmp(w, "again")) {
		if (last == 0)
			return err_set(e, "tour %s: no lesson has run yet (tour starts lesson 1)", w);
		if (w[0] == 'b' && last == 1)
			return err_set(e, "tour back: lesson 1 is the first (tour again runs it again)");
		return w[0] == 'b' ? last - 1 : last;
	}
	if (w[0] >= '0' && w[0] <= '9')
		return cmd_parse_int(w, 1, N_LESSONS, "the lesson", &n, e) ? -1 : n;
	return err_set(e, "usage: tour [N | next | back | again | list]");
}

static int tour_exec(struct session *s, int argc, char **argv, struct err *e)
{
	int n = pick(s, argc, argv, e);
	if (n < 0)
		return -1;
	if (n == 0) {
		list(s);
		return 0;
	}
	int rc = tour_run_lesson(s, n, e);
	if (rc == 0)
		footer(s, n);
	return rc;
}

int tour_run_all(struct session *s, int from, struct err *e)
{
	char failed[256] = "";
	size_t k = 0;
	int n_failed = 0;
	for (int n = from; n <= N_LESSONS; n++) {
		if (n > from)
			fputc('\n', s->out);
		struct err le;
		int rc = tour_run_lesson(s, n, &le);
		if (rc == CMD_QUIT)
			return CMD_QUIT;
		if (rc < 0) {
			fprintf(stderr, "attnscope: %s\n", le.msg);
			n_failed++;
			if (k < sizeof failed) /* at most M short numbers: it fits */
				k += (size_t)snprintf(failed + k, sizeof failed - k, "%s%d",
						      k ? ", " : "", n);
		}
		if (s->cancel && *s->cancel)
			return err_set(e, "tour: interrupted in lesson %d/%d", n, N_LESSONS);
	}
	if (n_failed)
		return err_set(e, "tour: %d of lessons %d-%d failed: %s", n_failed, from, N_LESSONS,
			       failed);
	if (zh(s))
		fprintf(s->out, "\n课程结束：第 %d–%d 课都已运行完毕，没有失败。\n", from, N_LESSONS);
	else
		fprintf(s->out, "\nThe tour is over: lessons %d-%d ran without a failure.\n", from,
			N_LESSONS);
	return 0;
}

static const char *const tour_words[] = { "next", "back", "again", "list", NULL };

const struct cmd_entry cmd_tour_entry = {
	.name = "tour",
	.usage = "[N | next | back | again | list]",
	.help = "the class in lesson order: run the next lesson (or lesson N), go back, or "
		"list the lessons",
	.long_help =
		"The tour walks a 55-minute class through the shipped demos (sessions/demos)\n"
		"in the tutorials' order; each lesson is one demo file, announced as\n"
		"\"lesson N/M: TITLE (about K min)\".  tour (or tour next) runs the lesson\n"
		"after the one run last (the first, to start), tour N runs lesson N,\n"
		"tour back the one before the last, tour again the last once more, tour\n"
		"list lists them.  At a terminal a lesson's pauses wait for Enter and a\n"
		"failing command is reported without stopping it; in --batch (and in the\n"
		"visualizer) nothing waits and the lesson stops at its first failure.\n"
		"The narration is in English, or in Chinese with attnscope --lang zh (or a\n"
		"zh_* locale).  From the shell: attnscope tour [--lang en|zh] [--from N]\n"
		"[--batch] (attnscope tour --help).  $ATTNSCOPE_DEMOS moves the lessons.",
	.flags = CMD_STREAMS,
	.complete = COMPLETE_WORDS,
	.words = tour_words,
	.min_args = 0,
	.max_args = 1,
	.exec = tour_exec,
};
