/*
 * tui-edit.c — the visualizer's line prompt (e the text, : a command, x
 * an export's format and file): a line edited on the row above the
 * bottom one (tui_line, tui-layout.h, holds it), scrolled to keep the
 * cursor in view, with Emacs keys, Ctrl-O for a newline in the text, a
 * paste read in blocks, and in a command prompt Up/Down history and Tab
 * completion by cmd_complete() (edit_complete).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "cmd.h"
#include "render.h"
#include "utf8.h"

/* ----------------------------------------------------------- completion */

/*
 * Tab in a command prompt: completes the word before the cursor in l by
 * cmd_complete(), the REPL's rules (commands, words, options, models,
 * paths, formats, heads and roles), to the longest common prefix of the
 * candidates, with a blank after a single one (none after a directory's
 * '/').  Several are listed in the message; none says "no completion".
 */
static void edit_complete(struct tui *t, struct tui_line *l)
{
	struct tui_line before; /* the text before the cursor */
	tui_line_init(&before, NULL);
	for (int i = 0; i < l->cur; i++)
		tui_line_insert(&before, l->cp[i]);
	char *pre = tui_line_utf8(&before);
	tui_line_free(&before);
	struct cmd_cands c;
	cmd_complete(t->s, pre, strlen(pre), &c);
	free(pre);
	if (c.n == 0) {
		tui_screen_msg(t, TUI_MSG_INFO, "no completion");
		cmd_cands_free(&c);
		return;
	}
	size_t common = cmd_cands_common(&c), wl = strlen(c.word);
	const unsigned char *m = (const unsigned char *)c.v[0];
	for (size_t k = wl; k < common;) {
		uint32_t cp;
		int bad;
		k += (size_t)utf8_decode(m + k, common - k, &cp, &bad);
		tui_line_insert(l, cp);
	}
	if (c.n == 1) {
		if (common == 0 || c.v[0][common - 1] != '/')
			tui_line_insert(l, ' ');
		t->msg_kind = TUI_MSG_NONE;
	} else {
		char list[1024];
		size_t n = 0;
		for (int i = 0; i < c.n && n < sizeof list; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? " " : "", c.v[i]);
		tui_screen_msg(t, TUI_MSG_INFO, "%s", list);
	}
	cmd_cands_free(&c);
}

/* ----------------------------------------------------------- the prompt */

/* Draws the prompt's line being edited on the row above the bottom one
 * (scrolled so the cursor shows; newlines as ⏎) and, on the bottom row,
 * the message or what the keys do.  Returns the cursor's column. */
static int draw_prompt(struct tui *t, const char *prompt, const struct tui_line *l, int *first,
		       enum tui_prompt_kind kind)
{
	int y = LINES - 2;
	tui_blank(y, 0, COLS, 0, TUI_ROLE_NONE);
	int pw = tui_put(y, 0, COLS, prompt, TUI_A_BOLD, TUI_ROLE_LABEL);
	*first = tui_line_scroll(l, *first, COLS - pw);
	int x = pw, cx = pw;
	for (int i = *first; i < l->n; i++) {
		char u[8];
		uint32_t cp = l->cp[i];
		int cw = render_cp_width(cp);
		if (cp == '\n')
			snprintf(u, sizeof u, "%s", t->st.utf8 ? "\u23ce" : "|"), cw = 1;
		else
			u[utf8_encode(cp, u)] = '\0';
		if (x + cw > COLS)
			break;
		if (i == l->cur)
			cx = x;
		tui_put(y, x, cw, u, 0, TUI_ROLE_NONE);
		x += cw;
	}
	if (l->cur >= l->n)
		cx = x;
	tui_blank(LINES - 1, 0, COLS, 0, TUI_ROLE_NONE);
	if (t->msg_kind != TUI_MSG_NONE) /* completions, or what went wrong */
		tui_put(LINES - 1, 0, COLS, t->msg, 0, TUI_ROLE_HINT);
	else if (kind == TUI_PROMPT_TEXT)
		tui_put(LINES - 1, 0, COLS, "editing the text: Enter applies (text ...), Ctrl-O newline, Esc cancels, "
			"Ctrl-U clears, \u2190\u2192 Home End move", TUI_A_DIM, TUI_ROLE_NONE);
	else if (kind == TUI_PROMPT_COMMAND)
		tui_put(LINES - 1, 0, COLS, "any command: Enter runs, Tab completes, \u2191\u2193 history, Esc cancels",
			TUI_A_DIM, TUI_ROLE_NONE);
	else
		tui_put(LINES - 1, 0, COLS, "Enter accepts, Esc cancels", TUI_A_DIM, TUI_ROLE_NONE);
	return cx;
}

/* A prompt's line being edited. */
struct prompt {
	struct tui_line l;
	enum tui_prompt_kind kind;
	int first;   /* the first code point shown */
	int hist;    /* the history entry shown; n_history: the line being typed */
	char *saved; /* the line being typed while browsing history */
};

enum prompt_step { PROMPT_EDITING, PROMPT_ACCEPT, PROMPT_CANCEL };

/* Up/Down in a command prompt: the previous or next history entry. */
static void prompt_history(struct tui *t, struct prompt *p, int step)
{
	if (p->kind != TUI_PROMPT_COMMAND || t->n_history == 0)
		return;
	if (p->hist == t->n_history) {
		free(p->saved);
		p->saved = tui_line_utf8(&p->l);
	}
	p->hist += step;
	if (p->hist < 0)
		p->hist = 0;
	if (p->hist >= t->n_history) {
		p->hist = t->n_history;
		tui_line_set(&p->l, p->saved);
	} else {
		tui_line_set(&p->l, t->history[p->hist]);
	}
	p->first = 0;
}

static enum prompt_step prompt_fn_key(struct tui *t, struct prompt *p, wint_t ch)
{
	struct tui_line *l = &p->l;
	switch (ch) {
	case KEY_LEFT: tui_line_left(l); break;
	case KEY_RIGHT: tui_line_right(l); break;
	case KEY_HOME: tui_line_home(l); break;
	case KEY_END: tui_line_end(l); break;
	case KEY_BACKSPACE: tui_line_backspace(l); break;
	case KEY_DC: tui_line_delete(l); break;
	case KEY_ENTER: return PROMPT_ACCEPT;
	case KEY_RESIZE: clearok(curscr, TRUE); break;
	case KEY_UP: prompt_history(t, p, -1); break;
	case KEY_DOWN: prompt_history(t, p, 1); break;
	default: break;
	}
	return PROMPT_EDITING;
}

static enum prompt_step prompt_char(struct tui *t, struct prompt *p, wint_t ch)
{
	struct tui_line *l = &p->l;
	switch (ch) {
	case '\r':
	case '\n':
		return PROMPT_ACCEPT;
	case 27: /* Esc */
	case 3:  /* Ctrl-C */
	case 7:  /* Ctrl-G */
		return PROMPT_CANCEL;
	case 1: tui_line_home(l); break;           /* Ctrl-A */
	case 5: tui_line_end(l); break;            /* Ctrl-E */
	case 2: tui_line_left(l); break;           /* Ctrl-B */
	case 6: tui_line_right(l); break;          /* Ctrl-F */
	case 4: tui_line_delete(l); break;         /* Ctrl-D */
	case 8: case 127: tui_line_backspace(l); break;
	case 11: tui_line_kill_end(l); break;      /* Ctrl-K */
	case 21: tui_line_kill_start(l); break;    /* Ctrl-U */
	case 23: tui_line_kill_word(l); break;     /* Ctrl-W */
	case 12: clearok(curscr, TRUE); break;     /* Ctrl-L */
	case 15:                                   /* Ctrl-O: a newline in the text */
		if (p->kind == TUI_PROMPT_TEXT)
			tui_line_insert(l, '\n');
		break;
	case '\t':
		if (p->kind == TUI_PROMPT_COMMAND)
			edit_complete(t, l);
		break;
	default:
		if (ch >= 32 && ch != 127 && ch <= 0x10FFFF)
			tui_line_insert(l, (uint32_t)ch);
		break;
	}
	return PROMPT_EDITING;
}

/*
 * Takes the keys waiting at the terminal in one read (a paste, while curses
 * holds nothing): text goes into the line, control keys act as typed.
 * From an Esc, or after a key that ends the prompt, the rest goes back to
 * curses (as much as fits), as do the first bytes of a character whose
 * others are still to come.  Bytes that start no character are dropped.
 */
static enum prompt_step prompt_paste(struct tui *t, struct prompt *p)
{
	unsigned char buf[4096];
	ssize_t n = read(STDIN_FILENO, buf, sizeof buf), i = 0;
	enum prompt_step step = PROMPT_EDITING;
	t->msg_kind = TUI_MSG_NONE;
	while (i < n && step == PROMPT_EDITING && buf[i] != 27) {
		if (buf[i] < 0x20 || buf[i] == 0x7f) {
			step = prompt_char(t, p, buf[i++]);
			continue;
		}
		mbstate_t st;
		memset(&st, 0, sizeof st);
		wchar_t wc;
		size_t r = mbrtowc(&wc, (const char *)buf + i, (size_t)(n - i), &st);
		if (r == (size_t)-2)
			break;
		if (r == (size_t)-1) {
			i++;
			continue;
		}
		prompt_char(t, p, (wint_t)wc);
		i += (ssize_t)r;
	}
	if (i < n)
		tui_key_unget(buf + i, (int)(n - i));
	return step;
}

/* The screen is drawn when no more keys wait, so a paste costs its
 * reading, not a redraw a character, and an Esc after it is read as soon
 * as the paste is. */
char *tui_edit_line(struct tui *t, const char *prompt, const char *initial, enum tui_prompt_kind kind)
{
	struct prompt p = { .kind = kind, .hist = t->n_history };
	tui_line_init(&p.l, initial);
	char *result = NULL;
	while (!t->gone) {
		if (!tui_key_pending()) {
			tui_screen_draw(t);
			int y = LINES - 2, cx = draw_prompt(t, prompt, &p.l, &p.first, kind);
			move(y, cx < COLS ? cx : COLS - 1);
			curs_set(1);
			refresh();
		}
		enum prompt_step step;
		wint_t ch;
		bool fn;
		if (!tui_key_held() && tui_key_pending()) {
			step = prompt_paste(t, &p);
		} else if (tui_key_read(t, &ch, &fn) == OK) {
			t->msg_kind = TUI_MSG_NONE;
			step = fn ? prompt_fn_key(t, &p, ch) : prompt_char(t, &p, ch);
		} else {
			continue;
		}
		if (step == PROMPT_ACCEPT)
			result = tui_line_utf8(&p.l);
		if (step != PROMPT_EDITING)
			break;
	}
	curs_set(0);
	free(p.saved);
	tui_line_free(&p.l);
	return result;
}

void tui_edit_history_add(struct tui *t, const char *line)
{
	if (!line[0] || (t->n_history && !strcmp(t->history[t->n_history - 1], line)))
		return;
	if (t->n_history == TUI_HISTORY_MAX) {
		free(t->history[0]);
		memmove(t->history, t->history + 1, (TUI_HISTORY_MAX - 1) * sizeof *t->history);
		t->n_history--;
	}
	t->history[t->n_history++] = xstrdup(line);
}
