/*
 * train-stop.h — SIGINT and SIGTERM while `attnscope train` trains.  The
 * first asks the loop to stop after the current step (train_stop_level
 * 1); the second to stop at once (2): the step in progress is dropped
 * before it changes the weights, and the last finished step is saved; the
 * third quits at once, saving nothing, with status TRAIN_EXIT_FAIL.  Once
 * train_stop_saving() says the checkpoint and FILE.optim are being written,
 * a signal only says so: the files are always finished.  Each signal
 * prints one line on stderr.
 *
 * One run at a time: the state is the process's (a signal handler's).
 */
#ifndef ATTNSCOPE_TRAIN_STOP_H
#define ATTNSCOPE_TRAIN_STOP_H

#include <signal.h>

/* 0, then 1 and 2 as signals arrive; train_run's hooks->stop_now. */
extern volatile sig_atomic_t train_stop_level;

/* The handlers replaced, restored by train_stop_release. */
struct train_stop {
	struct sigaction old_int, old_term;
};

/* Catches the signals (the level back to 0), from the first step. */
void train_stop_catch(struct train_stop *s);
/* The files are being written from now on. */
void train_stop_saving(void);
/* Puts the handlers back, once the files are written. */
void train_stop_release(const struct train_stop *s);

#endif
