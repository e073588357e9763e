#!/bin/sh
# End-to-end checks of dla and circuits on the shipped induction model
# (2 layers x 4 heads): the shape of their output, and the one-line errors
# (a bad position, an unknown token, no text, no model, post-norm); expect
# reading the last circuits (compose, compose.rank, compose.into,
# compose.base): the values `circuits` printed, a claim that holds (with a
# model and no text), a false one failing with its number, and the errors
# before any circuits, after a load and under other attn options.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope sh tests/cli_circuits.sh
. "$(dirname "$0")/lib-cli.sh"
make_tmp circuits
IND=$(pwd)/models/induction.safetensors
TEXT='the cat sat on the mat. the cat sat on the'

# one_line_err PATTERN: status 1, exactly one line on stderr, matching
one_line_err() {
	[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && has_err "$1"
}

run --no-db "$IND" -c "text $TEXT; dla --top 3"
check dla-table sh -c "[ $rc -eq 0 ] && grep -q '^direct logit attribution of .* (the prediction) at position 41 ' '$tmp/out' \
	&& [ \$(sed -n '/^part  *logit$/,/^(the other parts)/p' '$tmp/out' | wc -l) -eq 5 ] \
	&& grep -q '^sum of 15 parts' '$tmp/out' && grep -q 'left out' '$tmp/out'"
# the sum and the model's logit agree to the 4 decimals printed
sum=$(sed -n 's/^sum of [0-9]* parts *//p' "$tmp/out")
logit=$(sed -n "s/^the model's logit *\([-+0-9.]*\) .*/\1/p" "$tmp/out")
check dla-sum sh -c "[ -n '$sum' ] && [ '$sum' = '$logit' ]"

run --no-db "$IND" -c "text $TEXT; dla 3 x"
check dla-named sh -c "[ $rc -eq 0 ] && grep -q \"^direct logit attribution of 'x' (named) at position 3 \" '$tmp/out'"
run --no-db "$IND" -c "text $TEXT; dla 1 ␣"
check dla-space-label sh -c "[ $rc -eq 0 ] && grep -q \"of '␣' \" '$tmp/out'"

run --no-db "$IND" -c "text $TEXT; dla 42"
check dla-bad-position one_line_err 'the position must be a whole number from 0 to 41'
run --no-db "$IND" -c "text $TEXT; dla 3 qqq"
check dla-unknown-token one_line_err 'unknown token: qqq'
run --no-db "$IND" -c "text $TEXT; norm post; dla"
check dla-post-norm one_line_err 'dla needs pre-norm placement'
run --no-db "$IND" -c 'dla'
check dla-no-text one_line_err 'no text'

run --no-db "$IND" -c 'circuits --top 2'
check circuits-table sh -c "[ $rc -eq 0 ] && grep -q '^random baseline (mean of 16 standard normal pairs' '$tmp/out' \
	&& [ \$(grep -c '^[QKV]-composition (B.s .* read A.s output), the 2 strongest of 16 pairs:' '$tmp/out') -eq 3 ] \
	&& [ \$(grep -c '^0\.[0-3]   1\.[0-3] ' '$tmp/out') -eq 6 ]"
run --no-db "$IND" -c 'circuits'
check circuits-induction sh -c "sed -n '/^K-composition/,/^$/p' '$tmp/out' | grep -q '^0\.2   1\.1 ' \
	&& sed -n '/^K-composition/,/^$/p' '$tmp/out' | grep -q '^0\.2   1\.2 '"
# expect reads what circuits printed: the K table's top pair and its place
run --no-db "$IND" -c 'circuits --top 16'
top=$(sed -n '/^K-composition/,/^$/p' "$tmp/out" | sed -n '3p')
a=$(echo "$top" | awk '{ print $1 }'); b=$(echo "$top" | awk '{ print $2 }'); sc=$(echo "$top" | awk '{ print $3 }')
base=$(sed -n 's/^random baseline .*  K \([0-9.]*\)  V .*/\1/p' "$tmp/out")
run --no-db "$IND" -c "circuits; expect compose.rank K $a $b == 1 and compose K $a $b ~= $sc +- 0.0005 and compose.base K ~= $base +- 0.0005 and compose.into K $a $b == 1 \"true\""
check expect-compose-holds sh -c "[ $rc -eq 0 ] && [ -n '$a' ] && grep -q '^✓ true$' '$tmp/out'"
run --no-db "$IND" -c "circuits; expect compose.rank K 0.2 1.2 == 1 \"false\""
check expect-compose-false sh -c "[ $rc -eq 1 ] && grep -q '^✗ false$' '$tmp/out' \
	&& grep -q 'measured: compose.rank K 0.2 1.2 = [2-9]' '$tmp/out'"
run --no-db "$IND" -c 'expect compose K 0.2 1.1 > 0 "x"'
check expect-compose-none sh -c "[ $rc -eq 1 ] && grep -q 'no circuits has run' '$tmp/err'"
run --no-db "$IND" -c 'circuits; attn gqa 2; expect compose K 0.2 1.1 > 0 "x"'
check expect-compose-stale sh -c "[ $rc -eq 1 ] && grep -q 'run circuits again' '$tmp/err'"
run --no-db "$IND" -c "circuits; load $IND; expect compose K 0.2 1.1 > 0 \"x\""
check expect-compose-load sh -c "[ $rc -eq 1 ] && grep -q 'no circuits has run' '$tmp/err'"
run --no-db "$IND" -c 'circuits; expect compose K 1.1 0.2 > 0 "x"'
check expect-compose-order sh -c "[ $rc -eq 1 ] && grep -q 'not in a layer before' '$tmp/err'"

run --no-db "$IND" -c 'circuits 3'
check circuits-usage sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"

# without a model
mkdir "$tmp/empty"
cd "$tmp/empty" || exit 1
ATTNSCOPE_MODELS=$tmp/empty
export ATTNSCOPE_MODELS
for c in dla circuits; do
	run --no-db -c "$c" </dev/null
	check "$c-no-model" sh -c "[ $rc -eq 1 ] && grep -q 'no model loaded' '$tmp/err'"
done
[ "$failures" -eq 0 ]
