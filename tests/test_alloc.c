/*
 * test_alloc.c — xmalloc_aligned (src/base/util.c): small blocks are
 * 64-byte aligned, blocks of XMALLOC_HUGE bytes or more are aligned to
 * 2 MiB (the only alignment at which the kernel can back them with huge
 * pages), and with xmalloc_huge_pages(false) large blocks fall back to
 * 64 bytes; every block can be written to its last requested byte.
 * xfree_aligned keeps a large block (never a small one) and the next
 * xmalloc_aligned it fits (the same size, or up to an eighth smaller)
 * gets it back; a request it does not fit frees every kept block first,
 * so nothing kept survives beside a new allocation; xmalloc_release frees
 * them; under ASan a reused block reads as 0xff bytes, never as zeros.
 * Where the kernel has transparent huge pages, the part of a large block
 * past the last whole 2 MiB page of the bytes asked for is not a huge
 * page: writing every byte asked for leaves the rest of the rounded-up
 * block out of memory (mincore).  Whether the kernel grants the huge
 * pages themselves depends on the machine, so it is measured by
 * bench/bench_firstpass, not asserted here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

static void write_all(unsigned char *p, size_t n)
{
	memset(p, 0xab, n);
	assert_int_equal(p[0], 0xab);
	assert_int_equal(p[n - 1], 0xab);
}

/* Whether the kernel has transparent huge pages ("always" or "madvise"). */
static bool thp_on(void)
{
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return false;
	bool ok = fgets(mode, sizeof mode, f) != NULL;
	fclose(f);
	return ok && !strstr(mode, "[never]");
}

/* A block of seventeen huge pages and 64 KiB, every byte written: the
 * pages of its last 2 MiB past those 64 KiB are not in memory.  (Over 32
 * MiB, so that glibc maps it afresh: a smaller block may come from memory
 * the process has touched before.) */
static void test_tail_not_huge(void **state)
{
	(void)state;
	if (!thp_on()) {
		printf("  skipped: no transparent huge pages on this machine\n");
		return;
	}
	xmalloc_release();
	size_t n = 17 * XMALLOC_HUGE + 64 * 1024, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from = (n + page - 1) / page * page, to = 18 * XMALLOC_HUGE;
	unsigned char *p = xmalloc_aligned(n), vec[XMALLOC_HUGE / 4096];
	write_all(p, n);
	assert_true((to - from) / page <= sizeof vec);
	assert_int_equal(mincore(p + from, to - from, vec), 0);
	size_t resident = 0;
	for (size_t i = 0; i < (to - from) / page; i++)
		resident += vec[i] & 1;
	if (resident)
		fail_msg("%zu of the %zu pages past the bytes asked for are in memory", resident,
			 (to - from) / page);
	free(p);
}

static void test_small_blocks_64_byte_aligned(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 63, 64, 4096, 100000, XMALLOC_HUGE - 1 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *p = xmalloc_aligned(sizes[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 64, 0);
		if (sizes[i])
			write_all(p, sizes[i]);
		free(p);
	}
}

static void test_large_blocks_2mib_aligned(void **state)
{
	(void)state;
	static const size_t sizes[] = { XMALLOC_HUGE, XMALLOC_HUGE + 1, 3 * XMALLOC_HUGE + 4096 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *p = xmalloc_aligned(sizes[i]);
		assert_int_equal((uintptr_t)p % XMALLOC_HUGE, 0);
		write_all(p, sizes[i]);
		free(p);
	}
}

static void test_huge_pages_off_falls_back(void **state)
{
	(void)state;
	xmalloc_huge_pages(false);
	int aligned_2mib = 0;
	for (int i = 0; i < 8; i++) {
		unsigned char *p = xmalloc_aligned(XMALLOC_HUGE + 64 * (size_t)i);
		assert_int_equal((uintptr_t)p % 64, 0);
		aligned_2mib += (uintptr_t)p % XMALLOC_HUGE == 0;
		write_all(p, XMALLOC_HUGE);
		free(p);
	}
	xmalloc_huge_pages(true);
	/* a 64-byte-aligned block lands on a 2 MiB boundary by chance at most
	 * now and then (glibc: never, its large blocks start after a 16-byte
	 * header); all 8 of them only when the switch is ignored */
	assert_true(aligned_2mib < 8);
}

static void test_kept_blocks(void **state)
{
	(void)state;
	enum { MB = 1 << 20 };
	xmalloc_release();
	xfree_aligned(NULL);
	unsigned char *small = xmalloc_aligned(XMALLOC_HUGE - 1);
	xfree_aligned(small);
	assert_int_equal(xmalloc_kept_bytes(), 0); /* small blocks are freed */

	unsigned char *p = xmalloc_aligned(8 * MB);
	write_all(p, 8 * MB);
	xfree_aligned(p);
	assert_true(xmalloc_kept_bytes() >= 8 * MB);
	unsigned char *q = xmalloc_aligned(8 * MB); /* the same size: the same block */
	assert_ptr_equal(q, p);
	assert_int_equal(xmalloc_kept_bytes(), 0);
#ifdef __SANITIZE_ADDRESS__
	assert_int_equal(q[0], 0xff);
	assert_int_equal(q[8 * MB - 1], 0xff);
#endif
	xfree_aligned(q);
	unsigned char *r = xmalloc_aligned(7 * MB + MB / 2); /* an eighth smaller: fits */
	assert_ptr_equal(r, p);
	write_all(r, 7 * MB + MB / 2);
	xfree_aligned(r);
	unsigned char *s = xmalloc_aligned(4 * MB); /* half: does not fit, frees it */
	assert_int_equal(xmalloc_kept_bytes(), 0);
	write_all(s, 4 * MB);
	unsigned char *t = xmalloc_aligned(32 * MB);
	xfree_aligned(s);
	xfree_aligned(t);
	assert_true(xmalloc_kept_bytes() >= 36 * MB);
	xmalloc_release();
	assert_int_equal(xmalloc_kept_bytes(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_blocks_64_byte_aligned),
		cmocka_unit_test(test_large_blocks_2mib_aligned),
		cmocka_unit_test(test_huge_pages_off_falls_back),
		cmocka_unit_test(test_kept_blocks),
		cmocka_unit_test(test_tail_not_huge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
