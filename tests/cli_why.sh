#!/bin/sh
# End-to-end checks of why and qkov on the shipped induction model
# (2 layers x 4 heads; 0.2 the previous-token head, 1.1 and 1.2 induction
# heads) on a random string typed twice: the table's shape, the terms'
# sum against the pass's score, the induction circuit (head 1.2's lead on
# the key after the earlier copy comes from the key side, and goes when
# 0.2 is ablated), post-norm, GQA and unscaled runs splitting exactly, and
# the one-line errors (head out of range, a key after the query, a key
# beyond the text, no text, no model, expect on a why of an earlier
# run).  Prints "ok NAME" or "FAIL NAME".
#
#   ATTNSCOPE=./attnscope sh tests/cli_why.sh
. "$(dirname "$0")/lib-cli.sh"
make_tmp why
IND=$(pwd)/models/induction.safetensors
TEXT='xqzvk jwpfy bmgd. xqzvk jwpfy bmgd.'

one_line_err() {
	[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && has_err "$1"
}

# the printed sum of the terms equals the pass's score to the 4 decimals shown
sums_agree() {
	sum=$(sed -n 's/^sum of [0-9]* terms *\([-+0-9.]*\)$/\1/p' "$tmp/out" | head -1)
	score=$(sed -n "s/^the pass's score *\([-+0-9.]*\) .*/\1/p" "$tmp/out" | head -1)
	[ "$rc" -eq 0 ] && [ -n "$sum" ] && [ "$sum" = "$score" ]
}

run --no-db "$IND" -c "text $TEXT; why 1.2 25 8 --top 4"
check why-header sh -c "[ $rc -eq 0 ] && grep -q \"^why 1.2: query 25 'w' on key 8 'p' (K/V head 2; options native)\" '$tmp/out' \
	&& grep -q 'norm frozen at each position' '$tmp/out' \
	&& [ \$(sed -n '/^query part  *key part  *term$/,/^(the other terms)/p' '$tmp/out' | wc -l) -eq 6 ]"
check why-sum sums_agree
# the key side's largest part is the MLP of layer 0, then 0.2
check why-key-side sh -c "sed -n '/^key side/,/^$/p' '$tmp/out' | sed -n '4p' | grep -q '^mlp 0 ' \
	&& sed -n '/^key side/,/^$/p' '$tmp/out' | sed -n '5p' | grep -q '^0\.2 '"

run --no-db "$IND" -c "text $TEXT" -c "why 1.2 25 8" \
	-c 'expect why.lead > 10 and why.contrast "mlp 0" > 10 and why.contrast 0.2 > 1.5 "lead"' \
	-c "ablate 0.2" -c "why 1.2 25 8" -c 'expect why.lead < 1 and why.key 0.2 == 0 "ablated"'
check why-induction-circuit sh -c "[ $rc -eq 0 ] && grep -q '✓ lead' '$tmp/out' && grep -q '✓ ablated' '$tmp/out'"

for opts in 'norm post' 'attn gqa 2' 'scale off' 'mask none' 'ablate 0.1 1.3'; do
	run --no-db "$IND" -c "text $TEXT; $opts; why 1.1 30 13"
	check "why-sum-$(echo "$opts" | tr ' .' '--')" sums_agree
done
run --no-db "$IND" -c "text $TEXT; norm post; why 1.1 30 13"
check why-post-header sh -c "grep -q '^post-norm: layer 1 reads its input as it is' '$tmp/out' && grep -q '^mlp 0 ' '$tmp/out' \
	&& grep -q 'shift 2 0' '$tmp/out'"
run --no-db "$IND" -c "text $TEXT; mask none; why 1.1 3 30"
check why-mask-none sums_agree

run --no-db "$IND" -c "text $TEXT; why 2.0 5 1"
check why-bad-head one_line_err 'head'
run --no-db "$IND" -c "text $TEXT; why 1.4 5 1"
check why-bad-head-index one_line_err 'head'
run --no-db "$IND" -c "text $TEXT; why 1.1 3 5"
check why-key-after-query one_line_err 'key 5 is after query 3: the causal mask hides it'
run --no-db "$IND" -c "text $TEXT; mask none; why 1.1 3 35"
check why-key-beyond-text one_line_err '35: the key position must be a whole number from 0 to 34'
run --no-db "$IND" -c "text $TEXT; why 1.1 3"
check why-usage sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"
run --no-db "$IND" -c 'why 1.1 3 1'
check why-no-text one_line_err 'no text'
run --no-db "$IND" -c 'expect why.lead > 0 "x"'
check why-expect-none one_line_err 'no why has run yet'
run --no-db "$IND" -c "text $TEXT; why 1.1 25 8; ablate 0.1" -c 'expect why.lead > 0 "x"'
check why-expect-stale one_line_err 'the last why split an earlier run'

run --no-db "$IND" -c "qkov 1.1"
check qkov-no-text sh -c "[ $rc -eq 0 ] && grep -q '^copying score (sum of positive real parts / sum of |eigenvalue|): 0\.[0-9]*; [0-9]* of 32 eigenvalues' '$tmp/out' \
	&& grep -q '^(no text' '$tmp/out'"
run --no-db "$IND" -c "text $TEXT; qkov 0.2"
check qkov-text sh -c "[ $rc -eq 0 ] && grep -q '^QK circuit of 0.2 on the text (35 tokens, 630 visible pairs)' '$tmp/out' \
	&& [ \$(grep -c '^token  *position  *[-+]' '$tmp/out') -eq 1 ] && grep -q '^the whole score ' '$tmp/out'"
run --no-db "$IND" -c "qkov 3.0"
check qkov-bad-head one_line_err 'head'

mkdir "$tmp/empty"
cd "$tmp/empty" || exit 1
ATTNSCOPE_MODELS=$tmp/empty
export ATTNSCOPE_MODELS
for c in 'why 0.0 0 0' 'qkov 0.0'; do
	run --no-db -c "$c" </dev/null
	check "$(echo "$c" | cut -d' ' -f1)-no-model" sh -c "[ $rc -eq 1 ] && grep -q 'no model loaded' '$tmp/err'"
done
[ "$failures" -eq 0 ]
