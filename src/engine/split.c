/*
 * split.c — the engine's helper thread (split.h).
 */
#include "split.h"

#include <cblas.h>
#include <pthread.h>
#include <stdbool.h>

static struct {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	bool up;
	unsigned posted, finished;
	split_fn *fn;
	void *ctx;
	int lo, hi;
} helper = { .mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
	     .done = PTHREAD_COND_INITIALIZER };

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&helper.mu);
	for (;;) {
		while (helper.finished == helper.posted)
			pthread_cond_wait(&helper.go, &helper.mu);
		pthread_mutex_unlock(&helper.mu);
		helper.fn(helper.ctx, helper.lo, helper.hi, 1);
		pthread_mutex_lock(&helper.mu);
		helper.finished = helper.posted;
		pthread_cond_signal(&helper.done);
	}
	return NULL;
}

/* A forked child has no helper thread: it starts its own when it needs one. */
static void helper_forked(void)
{
	pthread_mutex_init(&helper.mu, NULL);
	pthread_cond_init(&helper.go, NULL);
	pthread_cond_init(&helper.done, NULL);
	helper.up = false;
	helper.posted = helper.finished = 0;
}

/* Whether the helper runs (started on first use; false when it cannot). */
static bool helper_ready(void)
{
	static bool at_fork;
	if (helper.up)
		return true;
	if (!at_fork)
		at_fork = pthread_atfork(NULL, NULL, helper_forked) == 0;
	pthread_t th;
	if (!at_fork || pthread_create(&th, NULL, helper_main, NULL) != 0)
		return false;
	pthread_detach(th);
	helper.up = true;
	return true;
}

/* fn over rows 0 .. n - 1 in two halves, the second on the helper. */
static void split_two(split_fn *fn, void *ctx, int n)
{
	int mid = n / 2;
	pthread_mutex_lock(&helper.mu);
	helper.fn = fn;
	helper.ctx = ctx;
	helper.lo = mid;
	helper.hi = n;
	helper.posted++;
	pthread_cond_signal(&helper.go);
	pthread_mutex_unlock(&helper.mu);
	fn(ctx, 0, mid, 0);
	pthread_mutex_lock(&helper.mu);
	while (helper.finished != helper.posted)
		pthread_cond_wait(&helper.done, &helper.mu);
	pthread_mutex_unlock(&helper.mu);
}

/* fn over rows 0 .. n - 1, split when n >= min and there are two BLAS
 * threads (OpenBLAS on one meanwhile with blas1), else all here. */
static void split(split_fn *fn, void *ctx, int n, int min, bool blas1)
{
	int threads = openblas_get_num_threads();
	if (n < min || threads < 2 || !helper_ready()) {
		fn(ctx, 0, n, 0);
		return;
	}
	if (blas1)
		openblas_set_num_threads(1);
	split_two(fn, ctx, n);
	if (blas1)
		openblas_set_num_threads(threads);
}

void split_rows(split_fn *fn, void *ctx, int n, int min)
{
	split(fn, ctx, n, min, false);
}

void split_rows_blas1(split_fn *fn, void *ctx, int n, int min)
{
	split(fn, ctx, n, min, true);
}
