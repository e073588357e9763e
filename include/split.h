/*
 * split.h — the engine's own second thread: loops outside OpenBLAS (held
 * weights' conversions and products, attention heads) split their rows
 * with one helper thread, which sleeps between jobs and is started on
 * first use (a forked child starts its own).
 *
 * fn(ctx, lo, hi, t) does rows lo .. hi - 1 on thread t: 0 the caller's,
 * 1 the helper's (for per-thread scratch).  The caller owns ctx; nothing
 * is allocated but the thread.  One split runs at a time: the engine is
 * single-threaded around them.
 */
#ifndef ATTNSCOPE_SPLIT_H
#define ATTNSCOPE_SPLIT_H

typedef void split_fn(void *ctx, int lo, int hi, int t);

/* fn over rows 0 .. n - 1: halves on the caller's thread and the helper
 * when OpenBLAS is set to two threads or more (engine_set_threads) and n
 * is at least min, else all on the caller's thread. */
void split_rows(split_fn *fn, void *ctx, int n, int min);

/* split_rows with OpenBLAS set to one thread while fn runs, its own
 * threads restored after: fn's BLAS calls then run on the thread that
 * makes them, and OpenBLAS's workers are given no work (an idle worker
 * spins for a while after each job, on the core the helper needs). */
void split_rows_blas1(split_fn *fn, void *ctx, int n, int min);

#endif
