#!/bin/sh
# Runs every test program given as an argument (cmocka binaries), then every
# tests/cli_*.sh script, and ends with one line "N passed, N failed".
# A cmocka binary counts its own tests; a CLI script counts as one test per
# "ok"/"FAIL" line it prints.  Exit status is 1 when anything failed.
passed=0
failed=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -E '^\[  (PASSED|FAILED) \]|^\[  ERROR   \]|^\[  FAILED  \]' >/dev/null
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	p=${p:-0}; f=${f:-0}
	if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
	if [ "$f" != 0 ]; then
		printf '%s\n' "$out"
		echo "FAIL $t ($f failed)"
	else
		echo "ok   $t ($p tests)"
	fi
	passed=$((passed + p)); failed=$((failed + f))
done
for s in tests/cli_*.sh; do
	[ -f "$s" ] || continue
	out=$(sh "$s" 2>&1)
	rc=$?
	p=$(printf '%s\n' "$out" | grep -c '^ok ')
	f=$(printf '%s\n' "$out" | grep -c '^FAIL')
	if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
	if [ "$f" != 0 ]; then
		printf '%s\n' "$out"
		echo "FAIL $s ($f failed)"
	else
		echo "ok   $s ($p checks)"
	fi
	passed=$((passed + p)); failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
