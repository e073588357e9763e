/*
 * tui-input.c — the visualizer's keys: bytes read through curses and
 * decoded in the locale's encoding into characters, or function keys
 * (curses' keypad), and bytes given back to curses to be read again (the
 * keys typed while a command ran, the rest of a paste).
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"

#include <curses.h>

#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

/*
 * Bytes given back to curses (ungetch) go in front of what it reads from
 * the terminal.  g_held counts the entries its input queue may hold:
 * those given back, and after an Esc (or a byte of the 8-bit half) what
 * it may have read ahead looking for a key's sequence.  Each read takes
 * at least one, so at 0 the queue is empty and the terminal's bytes can
 * be read directly, in order (a paste in a prompt).
 */
static int g_held;
#define KEY_SEQ_MAX 32   /* read ahead by curses at most, after an Esc */

bool tui_key_held(void)
{
	return g_held > 0;
}

void tui_key_unget(const unsigned char *p, int n)
{
	if (n > TUI_GIVE_BACK_MAX)
		n = TUI_GIVE_BACK_MAX;
	for (int i = n - 1; i >= 0; i--) {
		if (ungetch(p[i]) == ERR)
			break;
		g_held++;
	}
}

/* getch() with g_held kept: waits delay_ms (-1: until a key). */
static int key_byte(int delay_ms)
{
	if (delay_ms >= 0)
		timeout(delay_ms);
	int c = getch();
	if (delay_ms >= 0)
		timeout(-1);
	if (c != ERR && g_held > 0)
		g_held--;
	if (c == 27 || (c >= 0x80 && c <= 0xff))
		g_held += KEY_SEQ_MAX;
	return c;
}

/* -------------------------------------------------------------- reading */

/* How long the rest of a character's bytes may take after its first. */
#define KEY_MORE_MS 100

/*
 * Decodes the character that starts with byte `first` in the locale's
 * encoding, reading its other bytes.  OK with *ch; ERR when the bytes
 * start no character (a Latin-1 terminal, a Meta key setting the 8th
 * bit, a stray continuation byte): that first byte is dropped and the
 * bytes after it are read again as keys of their own.
 */
static int key_decode(int first, wint_t *ch)
{
	unsigned char buf[MB_LEN_MAX];
	int n = 0;
	buf[n++] = (unsigned char)first;
	for (;;) {
		mbstate_t st;
		memset(&st, 0, sizeof st);
		wchar_t wc;
		size_t r = mbrtowc(&wc, (const char *)buf, (size_t)n, &st);
		if (r <= (size_t)n) {
			*ch = (wint_t)wc;
			return OK;
		}
		if (r == (size_t)-1 || n == (int)sizeof buf)
			break;
		int c = key_byte(KEY_MORE_MS); /* (size_t)-2: more bytes to come */
		if (c == ERR)
			break;
		if (c > 0xff) { /* a function key: not part of this character */
			if (ungetch(c) == OK)
				g_held++;
			break;
		}
		buf[n++] = (unsigned char)c;
	}
	tui_key_unget(buf + 1, n - 1); /* buf[0] is dropped */
	return ERR;
}

/* After ERR from a blocking read (a signal, a terminal gone): waits for
 * input up to 100 ms rather than spinning; t->gone when it hung up. */
static void key_wait(struct tui *t)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	if (poll(&p, 1, 100) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
		t->gone = true;
}

int tui_key_read(struct tui *t, wint_t *ch, bool *fn)
{
	int c = key_byte(-1);
	t->key_t0 = now_ms();
	*fn = c > 0xff;
	if (c == ERR) {
		key_wait(t);
		return ERR;
	}
	if (*fn) {
		*ch = (wint_t)c;
		return OK;
	}
	return key_decode(c, ch);
}

bool tui_key_pending(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}
