/*
 * tui-pager.c — the visualizer's pager: a command's output longer than a
 * few lines, and the help, in a window over the whole screen with its
 * title on top and the keys at the bottom, scrolled by lines and pages
 * and sideways by 8 columns.  Terminal escape sequences in the text are
 * dropped and tabs expanded.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

/* Text without terminal escape sequences and with tabs expanded, split
 * into lines (a malloc'd array of malloc'd strings). */
static char **split_lines(const char *text, int *n_out)
{
	int n = 0, cap = 64;
	char **v = xmalloc((size_t)cap * sizeof *v);
	struct render_buf line;
	render_buf_init(&line);
	int col = 0;
	for (const char *p = text;; p++) {
		if (*p == '\0' || *p == '\n') {
			if (*p == '\0' && line.len == 0)
				break;
			if (n == cap) {
				cap *= 2;
				v = xrealloc(v, (size_t)cap * sizeof *v);
			}
			v[n++] = xstrdup(line.data ? line.data : "");
			render_buf_free(&line);
			col = 0;
			if (*p == '\0')
				break;
		} else if (*p == '\x1b') {
			/* CSI ... final byte, or a two-byte escape */
			if (p[1] == '[') {
				p += 2;
				while (*p && !(*p >= '@' && *p <= '~'))
					p++;
				if (!*p)
					p--;
			} else if (p[1]) {
				p++;
			}
		} else if (*p == '\t') {
			do {
				render_buf_puts(&line, " ");
				col++;
			} while (col % 8);
		} else if (*p == '\r') {
			/* dropped */
		} else {
			render_buf_put(&line, p, 1);
			col++;
		}
	}
	render_buf_free(&line);
	*n_out = n;
	return v;
}

void tui_pager(struct tui *t, const char *title, const char *text)
{
	int n;
	char **lines = split_lines(text, &n);
	int top = 0, left = 0;
	for (;;) {
		erase();
		int rows = LINES - 2 > 1 ? LINES - 2 : 1;
		tui_blank(0, 0, COLS, TUI_A_BOLD, TUI_ROLE_STATUS);
		tui_put(0, 1, COLS - 2, title, TUI_A_BOLD, TUI_ROLE_STATUS);
		if (top > n - rows)
			top = n - rows;
		if (top < 0)
			top = 0;
		for (int i = 0; i < rows && top + i < n; i++) {
			/* skip `left` columns */
			const char *p = lines[top + i];
			int skip = 0;
			while (*p && skip < left) {
				uint32_t cp;
				int bad;
				int k = utf8_decode((const unsigned char *)p, strlen(p), &cp, &bad);
				skip += bad ? 1 : render_cp_width(cp);
				p += k;
			}
			tui_put(1 + i, 0, COLS, p, 0, TUI_ROLE_NONE);
		}
		char foot[256];
		snprintf(foot, sizeof foot, "lines %d-%d of %d   %s scroll  PgUp/PgDn  %s  q/Esc close",
			 n ? top + 1 : 0, top + rows < n ? top + rows : n, n, t->st.utf8 ? "\u2191\u2193" : "j/k",
			 t->st.utf8 ? "\u2190\u2192 sideways" : "h/l sideways");
		tui_put(LINES - 1, 0, COLS, foot, TUI_A_DIM, TUI_ROLE_HINT);
		refresh();
		wint_t ch;
		bool fn;
		if (tui_key_read(t, &ch, &fn) != OK) {
			if (t->gone)
				goto done;
			continue;
		}
		if (fn) {
			switch (ch) {
			case KEY_UP: top--; break;
			case KEY_DOWN: top++; break;
			case KEY_PPAGE: top -= rows; break;
			case KEY_NPAGE: top += rows; break;
			case KEY_HOME: top = 0; break;
			case KEY_END: top = n; break;
			case KEY_LEFT: left = left > 8 ? left - 8 : 0; break;
			case KEY_RIGHT: left += 8; break;
			case KEY_ENTER: goto done;
			case KEY_RESIZE: clearok(curscr, TRUE); break;
			default: break;
			}
			continue;
		}
		switch (ch) {
		case 'k': top--; break;
		case 'j': top++; break;
		case ' ': case 'f': case 6: top += rows; break;
		case 'b': case 2: top -= rows; break;
		case 'g': top = 0; break;
		case 'G': top = n; break;
		case 'h': left = left > 8 ? left - 8 : 0; break;
		case 'l': left += 8; break;
		case 'q': case 27: case '\r': case '\n': case 3: goto done;
		default: break;
		}
	}
done:
	for (int i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	clearok(curscr, TRUE);
}
