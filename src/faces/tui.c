/*
 * tui.c — the visualizer's main loop and its keys: tui_run takes the
 * terminal, then reads a key, lets its handler act and draws the screen
 * again, until q or `:quit`; and the help that `?` shows.
 *
 * Every change to how the model runs, or to the text, is a command line
 * run through the command table (tui-command.c) — the same table, checks
 * and recording as the REPL.  Moving the selection and scrolling are view
 * state (the views, tui-view.h).  The rest of the visualizer is in the
 * files tui-int.h lists.
 *
 * Key handlers return what changed (after htop; enum tui_result):
 * TUI_HANDLED (nothing to draw), TUI_REFRESH (draw the screen again;
 * curses sends only what differs), TUI_REDRAW (repaint everything, e.g.
 * after a resize), or a way out.  The time from a key to its screen is
 * measured and shown in the info line and the numbers view.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "tui-int.h"
#include "tui.h"

#include <curses.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "cmd.h"

static char *help_text(void);

/* ================================================================= keys */

/* -------------------------------------------------- moving and clicking */

/* The head view's index in tui_views[] (Enter and a second click open it). */
static int head_view(void)
{
	int v = 0;
	tui_view_parse("head", &v);
	return v;
}

/* Arrow keys, hjkl and the wheel: dy, dx in {-1, 0, 1}, as the view moves. */
static enum tui_result move_cursor(struct tui *t, int dy, int dx)
{
	if (!session_ready(t->s))
		return TUI_HANDLED;
	const struct tui_view_mode *v = tui_views[t->st.view];
	if (v->arrows)
		v->arrows(&t->st, t->st.data[t->st.view], dy, dx);
	else
		tui_select_head(&t->st, t->s->sel_layer + dy, t->s->sel_head + dx);
	return TUI_REFRESH;
}

static enum tui_result mouse_event(struct tui *t)
{
	MEVENT ev;
	if (getmouse(&ev) != OK)
		return TUI_HANDLED;
	if (!session_ready(t->s))
		return TUI_HANDLED;
	if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		return move_cursor(t, ev.bstate & BUTTON4_PRESSED ? -1 : 1, 0); /* the wheel */
	}
	const struct tui_view_mode *v = tui_views[t->st.view];
	if (!(ev.bstate & BUTTON1_PRESSED) || !v->click)
		return TUI_HANDLED;
	bool open = false;
	if (v->click(&t->st, t->st.data[t->st.view], ev.y, ev.x, &open) == TUI_KEY_IGNORED)
		return TUI_HANDLED;
	if (open)
		t->st.view = head_view();
	return TUI_REFRESH;
}

/* ------------------------------------------------------------ every key */

/* The option keys (g n m s a A r w): each is a command. */
static enum tui_result option_key(struct tui *t, wint_t ch)
{
	struct session *s = t->s;
	char line[160];
	if (!s->model) {
		if (strchr("gnmsaArw", (int)ch)) {
			tui_screen_msg(t, TUI_MSG_ERROR, "error: no model loaded (press : and type load NAME)");
			return TUI_REFRESH;
		}
		return TUI_HANDLED;
	}
	const struct model_config *c = &s->model->cfg;
	switch (ch) {
	case 'g':
		tui_sharing_command(c->n_head, s->opt.kv_heads, line, sizeof line);
		break;
	case 'n':
		snprintf(line, sizeof line, "norm %s", s->opt.placement == PLACE_PRE ? "post" : "pre");
		break;
	case 'm':
		tui_mask_command(s->opt.mask, line, sizeof line);
		break;
	case 's':
		snprintf(line, sizeof line, "scale %s", s->opt.scale ? "off" : "on");
		break;
	case 'a': {
		bool on = session_head_ablated(s, s->sel_layer, s->sel_head);
		snprintf(line, sizeof line, "%s %d.%d", on ? "restore" : "ablate", s->sel_layer, s->sel_head);
		break;
	}
	case 'A':
		snprintf(line, sizeof line, "restore all");
		break;
	case 'r':
		snprintf(line, sizeof line, "reset");
		break;
	case 'w':
		snprintf(line, sizeof line, "heat %s", heat_kind_name((enum heat_kind)((s->heat + 1) % HEAT_KINDS)));
		break;
	default:
		return TUI_HANDLED;
	}
	return tui_command_key(t, line);
}

/* One key: the view's own keys first, then switching views, moving, the
 * prompts and the help, and last the option keys. */
static enum tui_result handle_key(struct tui *t, wint_t ch, bool fn)
{
	struct session *s = t->s;
	struct tui_state *st = &t->st;
	/* the view's own keys come first */
	const struct tui_view_mode *v = tui_views[st->view];
	if (v->key) {
		enum tui_key_result k = v->key(st, st->data[st->view], (int)ch, fn);
		if (k != TUI_KEY_IGNORED) {
			t->measure = !fn;
			return k == TUI_KEY_REFRESH ? TUI_REFRESH : TUI_HANDLED;
		}
	}
	if (!fn && ch >= '1' && (int)(ch - '1') < tui_n_views) {
		t->measure = true;
		st->view = (int)(ch - '1');
		return TUI_REFRESH;
	}
	if (fn) {
		switch (ch) {
		case KEY_RESIZE: return TUI_REDRAW;
		case KEY_UP: return move_cursor(t, -1, 0);
		case KEY_DOWN: return move_cursor(t, 1, 0);
		case KEY_LEFT: return move_cursor(t, 0, -1);
		case KEY_RIGHT: return move_cursor(t, 0, 1);
		case KEY_PPAGE:
		case KEY_NPAGE:
			return move_cursor(t, ch == KEY_PPAGE ? -1 : 1, 0);
		case KEY_HOME: tui_select_token(st, 0); return TUI_REFRESH;
		case KEY_END: tui_select_token(st, s->n_tokens - 1); return TUI_REFRESH;
		case KEY_BTAB: st->view = (st->view + tui_n_views - 1) % tui_n_views; return TUI_REFRESH;
		case KEY_ENTER: st->view = st->view == head_view() ? 0 : head_view(); return TUI_REFRESH;
		case KEY_MOUSE: return mouse_event(t);
		default: return TUI_HANDLED;
		}
	}
	t->measure = true;
	switch (ch) {
	case 'q':
		return TUI_BACK;
	case '\t':
		st->view = (st->view + 1) % tui_n_views;
		return TUI_REFRESH;
	case '\r':
	case '\n':
		st->view = st->view == head_view() ? 0 : head_view();
		return TUI_REFRESH;
	case 27: /* Esc: back to the grid */
		if (st->view == 0)
			return TUI_HANDLED;
		st->view = 0;
		return TUI_REFRESH;
	case 'k': return move_cursor(t, -1, 0);
	case 'j': return move_cursor(t, 1, 0);
	case 'h': return move_cursor(t, 0, -1);
	case 'l': return move_cursor(t, 0, 1);
	case ',': case '<': tui_select_token(st, s->sel_token - 1); return TUI_REFRESH;
	case '.': case '>': tui_select_token(st, s->sel_token + 1); return TUI_REFRESH;
	case '[': tui_step_head(st, -1); return TUI_REFRESH;
	case ']': tui_step_head(st, 1); return TUI_REFRESH;
	case 12: return TUI_REDRAW; /* Ctrl-L */
	case 26: tui_term_suspend(); return TUI_REDRAW; /* Ctrl-Z */
	case 3:
		tui_screen_msg(t, TUI_MSG_INFO, "Ctrl-C cancels long work; q %s", st->standalone ? "quits" : "returns to the prompt");
		return TUI_REFRESH;
	case '?': {
		char *help = help_text();
		tui_pager(t, "attnscope visualizer: keys (q closes)", help);
		free(help);
		return TUI_REDRAW;
	}
	case ':':
		return tui_command_line(t);
	case 'e':
		return tui_command_text(t);
	case 'x':
		return tui_command_export(t);
	default:
		return option_key(t, ch);
	}
}

/* ============================================================ main loop */

static bool g_in_tui; /* tui_run is running */

bool tui_active(void)
{
	return g_in_tui;
}

/* Keeps the time from a key to its screen (the newest TUI_KEY_MS_KEEP). */
static void record_key_time(struct tui *t, double ms)
{
	struct tui_state *st = &t->st;
	if (st->n_key_ms >= TUI_KEY_MS_KEEP) {
		memmove(st->key_ms, st->key_ms + 1, (TUI_KEY_MS_KEEP - 1) * sizeof *st->key_ms);
		st->key_ms[TUI_KEY_MS_KEEP - 1] = ms;
	} else {
		st->key_ms[st->n_key_ms] = ms;
	}
	st->n_key_ms++;
	st->keys_total++;
}

int tui_run(struct session *s, int first, unsigned flags, struct err *e)
{
	if (g_in_tui)
		return err_set(e, "the visualizer is already running");
	struct tui *t = xcalloc(1, sizeof *t);
	t->s = s;
	t->st.s = s;
	t->st.view = first >= 0 && first < tui_n_views ? first : 0;
	t->st.standalone = flags & TUI_STANDALONE;
	s->dirty = 0;
	if (tui_term_enter(&t->st, e) != 0) {
		free(t);
		return -1;
	}
	g_in_tui = true;
	tui_views_init(&t->st);
	volatile sig_atomic_t *keep_cancel = s->cancel;
	if (!s->cancel)
		s->cancel = &t->local_cancel;
	bool keep_interactive = s->interactive;
	s->interactive = false; /* pause must not wait on a raw terminal */
	tui_watch_open();

	int rc = 0;
	enum tui_result r = TUI_REDRAW;
	for (;;) {
		if (r == TUI_REDRAW)
			clearok(curscr, TRUE);
		if (r != TUI_HANDLED) {
			tui_screen_draw(t);
			refresh();
			if (t->measure) {
				record_key_time(t, now_ms() - t->key_t0);
				/* show the time just measured */
				if (!t->st.frame.too_small) {
					tui_screen_info(t, &t->st.frame.info);
					if (tui_views[t->st.view]->numbers || t->st.frame.side.w > 0)
						tui_screen_draw(t);
					refresh();
				}
			}
		}
		t->measure = false;
		wint_t ch;
		bool fn;
		if (tui_key_read(t, &ch, &fn) != OK) {
			if (t->gone)
				break;
			r = TUI_HANDLED;
			continue;
		}
		/* a message stays until the next key */
		t->msg_kind = TUI_MSG_NONE;
		t->msg[0] = '\0';
		r = handle_key(t, ch, fn);
		if (fn && ch != KEY_RESIZE)
			t->measure = r != TUI_HANDLED;
		/* what the commands changed (session.h): a new model or text
		 * starts the views' cursors and scrolling over */
		if (s->dirty & (DIRTY_MODEL | DIRTY_TEXT))
			tui_views_reset(&t->st);
		if (s->dirty && r == TUI_HANDLED)
			r = TUI_REFRESH;
		s->dirty = 0;
		if (r == TUI_BACK || r == TUI_QUIT) {
			rc = r == TUI_QUIT ? CMD_QUIT : 0;
			break;
		}
	}

	tui_watch_close();
	tui_term_leave();
	s->interactive = keep_interactive;
	s->cancel = keep_cancel;
	g_in_tui = false;
	for (int i = 0; i < t->n_history; i++)
		free(t->history[i]);
	tui_views_free(&t->st);
	free(t);
	return rc;
}

/* ================================================================= help */

/* The keys of the views and their names, from tui_views[]: "  1 2 3 ...
 * grid, head, ...". */
static void help_views(struct render_buf *b)
{
	char keys[64] = "", names[256] = "";
	for (int v = 0; v < tui_n_views; v++) {
		snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%d", v ? " " : "", v + 1);
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", v ? ", " : "",
			 tui_views[v]->name);
	}
	render_buf_printf(b, "  %-17s%s\n", keys, names);
}

/* The `?` help: every key, one per line (the pager's title names it).
 * Malloc'd. */
static char *help_text(void)
{
	struct render_buf b;
	render_buf_init(&b);
	render_buf_puts(&b, "Views\n"
			    "  Tab, Shift-Tab   next / previous view\n");
	help_views(&b);
	render_buf_puts(&b,
	       "  Enter            open the selected head (again: back to the grid)\n"
	       "  Esc              back to the grid\n"
	       "\n"
	       "Moving\n"
	       "  arrows or hjkl   grid and numbers: heads (left/right) and layers (up/down)\n"
	       "                   head view: query row (up/down) and key column (left/right)\n"
	       "                   token view: token (left/right) and head (up/down)\n"
	       "  [ ]              previous / next head (in every view)\n"
	       "  , . or < >       previous / next query token\n"
	       "  PgUp PgDn        a page of query rows (head view)\n"
	       "  Home End         first / last token\n"
	       "  z                token view: one layer / every layer\n"
	       "  mouse click      select a head (click again to open it) or a cell\n"
	       "\n"
	       "Changing the model's attention (each re-runs the forward pass; the command\n"
	       "it runs is shown at the end of the info line)\n"
	       "  g                sharing: MHA -> GQA (each group count, descending) -> MQA -> MHA\n"
	       "  n                norm placement: pre <-> post\n"
	       "  m                mask: causal -> none -> window 4 -> after-softmax -> causal\n"
	       "  s                1/sqrt(d_head) scaling on <-> off\n"
	       "  a                ablate / restore the selected head\n"
	       "  A                restore every head\n"
	       "  r                reset every option to the model's native ones\n"
	       "  w                what heatmaps show: weights -> scores -> norms -> rollout\n"
	       "  d                head view: the weights, or run minus native (what the\n"
	       "                   options changed: +k / -k tenths, red up, blue down)\n"
	       "  e                edit the text (Enter applies, Ctrl-O a newline, Esc cancels)\n"
	       "\n"
	       "Commands\n"
	       "  :                run any command (Tab completes, Up/Down history); output\n"
	       "                   longer than a line opens in a pager.  Long work (sweep)\n"
	       "                   shows its progress; Esc or Ctrl-C cancels it.\n"
	       "  x                export the current view (asks for the format and the file)\n"
	       "  ?                this help\n"
	       "  Ctrl-L           repaint       Ctrl-Z  suspend\n"
	       "  q                leave (back to the prompt, or quit when started with --tui)\n"
	       "\n"
	       "Curves view (the training record in the model file, as `curves` draws it)\n"
	       "  c                the curve: loss (train and val) -> learning rate -> grad norm\n"
	       "  y                the y scale: automatic -> log -> linear\n"
	       "\n"
	       "Reading the screen\n"
	       "  status line      model, sharing (MHA / GQA G / MQA), norm, mask, scale, ablations\n"
	       "  grid             layers down, heads across; rows are query tokens, columns key\n"
	       "                   tokens; a half block shows two query rows; large texts are\n"
	       "                   max-pooled (the line above the grid says by how much);\n"
	       "                   [L.H] is the selected head, a cross marks an ablated one, and\n"
	       "                   under GQA/MQA a rule joins the heads that share a KV head\n"
	       "  what maps show   w: weights as they are; scores shaded from each row's lowest\n"
	       "                   to its highest, the panels listing the raw scores; norms as\n"
	       "                   shares of their row; rollout as it is.  A dot (/ in ASCII,\n"
	       "                   on grey) is a key the mask hides: it has no score.  Entropies\n"
	       "                   are always the weights'\n"
	       "  row sums         under mask after-softmax rows of weights sum to less than 1:\n"
	       "                   the grid's top line and the numbers say their mean, the head\n"
	       "                   view's panel the selected row's\n"
	       "  info line        tokens, loss (change vs the native baseline), KL vs baseline,\n"
	       "                   top-1 agreement, KV-cache bytes, forward ms, key-to-redraw ms\n");
	return b.data;
}
