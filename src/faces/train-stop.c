/*
 * train-stop.c — the stop signals of `attnscope train` (train-stop.h).
 */
#define _GNU_SOURCE
#include "train-stop.h"

#include <string.h>
#include <unistd.h>

#include "train.h"

volatile sig_atomic_t train_stop_level;
static volatile sig_atomic_t saving;

static void say(const char *msg, size_t len)
{
	ssize_t w = write(STDERR_FILENO, msg, len);
	(void)w;
}
#define SAY(s) say(s, sizeof s - 1)

static void on_stop_signal(int sig)
{
	(void)sig;
	if (saving) {
		SAY("\nattnscope train: writing the checkpoint; it will be complete in a moment\n");
		return;
	}
	if (train_stop_level >= 2) {
		SAY("\nattnscope train: quit without saving: the checkpoint and FILE.optim are as "
		    "they were before this run\n");
		_exit(TRAIN_EXIT_FAIL);
	}
	if (++train_stop_level == 1)
		SAY("\nattnscope train: interrupted: finishing this step and saving (again: stop "
		    "now, saving the last finished step)\n");
	else
		SAY("\nattnscope train: stopping now: saving the last finished step (again: quit "
		    "without saving)\n");
}

void train_stop_catch(struct train_stop *s)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	train_stop_level = 0;
	saving = 0;
	sigaction(SIGINT, &sa, &s->old_int);
	sigaction(SIGTERM, &sa, &s->old_term);
}

void train_stop_release(const struct train_stop *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	saving = 0;
}

void train_stop_saving(void)
{
	saving = 1;
}
