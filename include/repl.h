/*
 * repl.h — the interactive prompt on GNU readline.
 *
 * The prompt names the model and the options that differ from its native
 * ones ("shakespeare [gqa2 post-norm]> "; "attnscope> " with no model).
 * History persists in $XDG_DATA_HOME/attnscope/history (or
 * ~/.local/share/attnscope/history); tab completion comes from the command
 * table.  Ctrl-C at the prompt discards the line; Ctrl-C while a command
 * runs sets *session.cancel, which long commands poll, and a second one
 * ends the program with status 130.  Ctrl-D and `quit` leave.
 */
#ifndef ATTNSCOPE_REPL_H
#define ATTNSCOPE_REPL_H

#include "session.h"

/* Reads and runs commands from the terminal on standard input until quit
 * or end of input.  Errors are printed as "error: MESSAGE" on stderr and
 * the loop goes on, except that output that could not be written ends it
 * ("attnscope: error writing standard output: REASON").  s->cancel must
 * point to a flag.  Returns the exit status (0, or 1 after lost output). */
int repl_run(struct session *s);

/* Between these two calls Ctrl-C sets *s->cancel instead of ending the
 * program (a second Ctrl-C ends it with status 130); repl_run() uses them
 * around each command, and main() around command files run at a terminal.
 * s->cancel must point to a flag; the flag is cleared on entry. */
void repl_interrupts_begin(struct session *s);
void repl_interrupts_end(void);

#endif
