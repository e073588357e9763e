/*
 * test_complete.c — cmd_complete(), the completion both editors use: what
 * each kind of word completes to, that every list comes from its own table
 * (commands, export formats, lab experiments, views, roles, the loaded
 * model's heads), the word's start, paths with directories marked, and nothing for
 * free text or an open quote.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "export.h"
#include "heads.h"
#include "lab.h"
#include "randmodel.h"
#include "session.h"
#include "tui.h"

/* The candidates for line with the cursor at its end, as one string
 * "a b c" (static). */
static const char *offer(const struct session *s, const char *line)
{
	static char buf[8192];
	struct cmd_cands c;
	cmd_complete(s, line, strlen(line), &c);
	buf[0] = '\0';
	for (int i = 0; i < c.n; i++) {
		assert_true(strlen(buf) + strlen(c.v[i]) + 2 < sizeof buf);
		if (i)
			strcat(buf, " ");
		strcat(buf, c.v[i]);
	}
	cmd_cands_free(&c);
	return buf;
}

/* Whether word is one of the blank-separated words of list. */
static bool has(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

static void first_word_is_a_command(void **state)
{
	(void)state;
	assert_string_equal(offer(NULL, "att"), "attn");
	const char *all = offer(NULL, "");
	for (int i = 0; cmd_table[i]; i++)
		assert_true(has(all, cmd_table[i]->name));
	assert_string_equal(offer(NULL, "zzz"), "");
}

static void words_and_start(void **state)
{
	(void)state;
	assert_string_equal(offer(NULL, "attn mq"), "mqa");
	assert_string_equal(offer(NULL, "mask "), "after-softmax causal none window");
	/* the word starts after the last blank; the cursor may sit mid-line */
	struct cmd_cands c;
	const char *line = "attn  g   and more";
	cmd_complete(NULL, line, 7, &c);
	assert_int_equal(c.start, 6);
	assert_string_equal(c.word, "g");
	assert_int_equal(c.n, 1);
	assert_string_equal(c.v[0], "gqa");
	cmd_cands_free(&c);
	/* only the first argument of a WORDS command completes */
	assert_string_equal(offer(NULL, "attn gqa m"), "");
}

static void lists_come_from_their_tables(void **state)
{
	(void)state;
	const char *f = offer(NULL, "export grid --format ");
	assert_true(export_format_count() >= 6);
	for (int i = 0; i < export_format_count(); i++)
		assert_true(has(f, export_format_name((enum export_format)i)));
	const char *lab = offer(NULL, "lab ");
	for (const struct lab_experiment *x = lab_experiments; x->name; x++)
		assert_true(has(lab, x->name));
	const char *roles = offer(NULL, "ablate ");
	for (int r = 0; r < HEAD_N_ROLES; r++)
		assert_true(has(roles, heads_role_name((enum head_role)r)));
	const char *views = offer(NULL, "view ");
	int nv = 0;
	for (; strcmp(tui_view_name(nv), "?") != 0; nv++)
		assert_true(has(views, tui_view_name(nv)));
	assert_true(nv >= 7);
	assert_string_equal(offer(NULL, "help expe"), "expect");
}

static void options_after_a_dash(void **state)
{
	(void)state;
	const char *o = offer(NULL, "export grid --");
	assert_true(has(o, "--format") && has(o, "--out") && has(o, "--diff"));
	assert_string_equal(offer(NULL, "export grid --f"), "--format");
	/* a word without a dash is not offered options */
	assert_false(has(offer(NULL, "export "), "--format"));
}

static void heads_of_the_loaded_model(void **state)
{
	(void)state;
	FILE *out = fopen("/dev/null", "w");
	struct session s;
	session_init(&s, out);
	assert_false(has(offer(&s, "ablate "), "0.0"));
	s.model = randmodel_new(false, 2, 4, 16, 1.0f, 7);
	const char *h = offer(&s, "ablate ");
	assert_true(has(h, "0.0") && has(h, "1.3") && !has(h, "2.0") && !has(h, "1.4"));
	assert_string_equal(offer(&s, "ablate 1."), "1.0 1.1 1.2 1.3");
	assert_string_equal(offer(&s, "show head 0.3"), "0.3");
	assert_string_equal(offer(&s, "export heatmap 1.2"), "1.2");
	session_free(&s);
	fclose(out);
}

static void paths(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_complete.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[256];
	snprintf(p, sizeof p, "%s/sub", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/notes.txt", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(p, sizeof p, "%s/.hidden", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);

	char line[512], want[512];
	snprintf(line, sizeof line, "export grid --out %s/", dir);
	snprintf(want, sizeof want, "%s/notes.txt %s/sub/", dir, dir);
	assert_string_equal(offer(NULL, line), want);
	snprintf(line, sizeof line, "export grid --out %s/.", dir);
	snprintf(want, sizeof want, "%s/.hidden", dir);
	assert_string_equal(offer(NULL, line), want);
	snprintf(line, sizeof line, "load %s/n", dir); /* MODEL: files too */
	snprintf(want, sizeof want, "%s/notes.txt", dir);
	assert_string_equal(offer(NULL, line), want);

	snprintf(p, sizeof p, "%s/notes.txt", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/.hidden", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/sub", dir);
	rmdir(p);
	rmdir(dir);
}

static void nothing_for_free_text(void **state)
{
	(void)state;
	assert_string_equal(offer(NULL, "text att"), "");
	assert_string_equal(offer(NULL, "echo lo"), "");
	assert_string_equal(offer(NULL, "attn 'mq"), ""); /* inside a quote */
	assert_string_equal(offer(NULL, "nosuchcommand a"), "");
}

static void common_prefix(void **state)
{
	(void)state;
	struct cmd_cands c;
	cmd_complete(NULL, "mask a", 6, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(cmd_cands_common(&c), strlen("after-softmax"));
	cmd_cands_free(&c);
	cmd_complete(NULL, "s", 1, &c);
	assert_true(c.n > 1);
	assert_int_equal(cmd_cands_common(&c), 1);
	cmd_cands_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_word_is_a_command),
		cmocka_unit_test(words_and_start),
		cmocka_unit_test(lists_come_from_their_tables),
		cmocka_unit_test(options_after_a_dash),
		cmocka_unit_test(heads_of_the_loaded_model),
		cmocka_unit_test(paths),
		cmocka_unit_test(nothing_for_free_text),
		cmocka_unit_test(common_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
