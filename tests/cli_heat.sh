#!/bin/sh
# heat: what the heatmaps show, in show, exports and the listing (run by
# tests/run.sh).  The quantities themselves are checked against direct
# computations in test_heat.c; here: the command, masked cells marked
# apart, and exports writing the values as computed.
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-heat
RUN_ARGS="--no-db"

run shakespeare -c "heat"
check "heat lists the four kinds, the current one starred" \
	sh -c "[ $rc -eq 0 ] && grep -q '^\* weights ' '$tmp/out' && [ \$(grep -cE '^[ *] (weights|scores|norms|rollout) ' '$tmp/out') -eq 4 ]"

run shakespeare -c "text To be, or not; heat scores; show head 0.0"
check "heat scores: the head's title and legend say so, masked keys are marked" \
	sh -c "[ $rc -eq 0 ] && grep -q '^head 0.0 (layer 0, head 0): scores' '$tmp/out' &&
	grep -q \"'·' masked\" '$tmp/out' && grep -q '^ 0 T │██··' '$tmp/out'"
run shakespeare -c "text To be, or not; mask none; heat scores; show head 0.0"
check "under mask none no key is masked" sh -c "[ $rc -eq 0 ] && ! grep -q '·' '$tmp/out'"
run shakespeare -c "text To be; heat scores; export heatmap 0.0 --format csv"
check "a CSV of scores holds the raw scores, masked cells empty" \
	sh -c "[ $rc -eq 0 ] && grep -qE '^\"T\",-?[0-9.]+,,,,$' '$tmp/out'"
run shakespeare -c "text To be; heat norms; export heatmap 1.2 --format json"
check "a JSON export names the quantity" \
	sh -c "[ $rc -eq 0 ] && grep -q '\"heat\": *\"norms\"' '$tmp/out' && grep -q '\"norms\": *\[' '$tmp/out'"
run shakespeare -c "text To be; heat rollout; export grid --format ascii"
check "an ASCII grid of rollout is ASCII and says what it shades" \
	sh -c "[ $rc -eq 0 ] && ! LC_ALL=C grep -q '[^ -~]' '$tmp/out' && grep -q 'rollout from the input' '$tmp/out'"
run shakespeare -c "text To be; heat scores; text O Romeo; show head 0.1"
check "the kind stays across texts" sh -c "[ $rc -eq 0 ] && grep -q ': scores, 7 tokens' '$tmp/out'"
# show diff: what the options changed in one head
run shakespeare -c "text To be, or not to be; show diff 0.1"
check "show diff under the native options: nothing differs, no cell marked" \
	sh -c "[ $rc -eq 0 ] && grep -q 'nothing differs' '$tmp/out' && ! grep -qE '│.*[+-][1-9#]' '$tmp/out'"
run shakespeare -c "text To be, or not to be; attn mqa; show diff 0.1"
check "show diff under MQA marks changes and names the largest" \
	sh -c "[ $rc -eq 0 ] && grep -q 'weights under mqa minus' '$tmp/out' && grep -qE '│.*[+-][1-9#]' '$tmp/out' &&
	grep -qE '^largest change [+-]0\.[0-9]+: query [0-9]+ ' '$tmp/out'"
check "docs/heatmaps.md's example: head 0.1 moves 0.831 of query 4's weight off itself" \
	grep -q "^largest change -0.831: query 4 'e' on key 4 'e' (0.916 -> 0.085)" "$tmp/out"

# export heatmap --diff: the values are run minus native, so each row of a
# causal head sums to 0 (both rows sum to 1)
run shakespeare -c "text To be or not; attn mqa; export heatmap 0.1 --diff --format csv"
check "export heatmap --diff: every row of changes sums to 0" sh -c "[ $rc -eq 0 ] && grep '^\"' '$tmp/out' | sed 1d |
	awk -F, '{ s = 0; for (i = 2; i <= NF; i++) s += \$i; if (s > 1e-5 || s < -1e-5) bad = 1; n++ }
	END { exit !(n == 12 && !bad) }'"
run shakespeare -c "text To be or not; attn mqa; export heatmap 0.1 --diff --format svg"
check "an SVG of changes says so" sh -c "[ $rc -eq 0 ] && grep -q 'Change in the attention of head 0.1' '$tmp/out'"
run shakespeare -c "text To be; export grid --diff"
check "--diff goes with heatmap only" sh -c "[ $rc -ne 0 ] && grep -q -- '--diff goes with heatmap' '$tmp/err'"

# beside: one head in two runs, side by side
run shakespeare -c "text To be, or not to be; beside 0.1 shakespeare-gqa"
check "beside MODEL: both models' maps on the same lines, one legend" \
	sh -c "[ $rc -eq 0 ] && grep -qE '^shakespeare 0.1 +shakespeare-gqa 0.1$' '$tmp/out' &&
	grep -qE '^18 e │.*│ +18 e │' '$tmp/out' && [ \$(grep -c '^rows: query tokens' '$tmp/out') -eq 1 ]"
run shakespeare -c "text To be, or not to be; beside 1.1 text O Romeo, Romeo"
check "beside text: the current text and the other one" \
	sh -c "[ $rc -eq 0 ] && grep -q 'the current text (19 tokens) .*the other text (14 tokens)' '$tmp/out'"
run shakespeare -c "text To be; beside 0.1 tang"
check "beside a model of another vocabulary is refused" \
	sh -c "[ $rc -ne 0 ] && grep -q 'tang has another vocabulary' '$tmp/err'"

run shakespeare -c "heat colours"
check "an unknown kind is one line naming it" \
	sh -c "[ $rc -ne 0 ] && grep -q 'heat: \"colours\" is not one of' '$tmp/err'"

exit $((failures > 0))
