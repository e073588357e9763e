#!/bin/sh
# The visualizer's numbers are true, checked on the screen in tmux at 80x24
# (and the side panel at 160x48) with a seeded random model, so that
# nothing depends on which heads a trained model has:
#   scores (w): no "nan" anywhere in any view; masked cells drawn as the
#     masked glyph on grey, the legend saying "masked"; a masked key never
#     among the strongest keys; the panel's entropy is the weights' (at
#     most ln T, the same in every heat kind); the map's normalisation in
#     words with the selected row's min and max of its raw scores; norms
#     and rollout say what their map is and list their values by name;
#   the mask after the softmax: the mean row sum in the grid's top line
#     and the numbers view equal to what `mask after-softmax` prints in the
#     REPL, and the head view's row sum equal to the exported weights';
#   a long error and a long output shown whole at 80x24 (wrapped), longer
#     output in the pager; the `?` help's title once; the patch view's
#     cells apart from each other, with a legend; the lens view's legend.
# Prints "ok NAME" or "FAIL NAME" per check; skips without tmux or a
# UTF-8 locale.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_tui_truth.sh
. "$(dirname "$0")/lib-cli.sh"
. "$(dirname "$0")/lib-tui.sh"

tui_setup tui-truth
mkmodel "$tmp/models/small.safetensors" # 2 layers x 4 heads, printable ASCII
text='To be, or not to be, that is the question:'
T_len=42

# no_nan: no "nan" (any case) anywhere on the screen
no_nan() { ! screen | grep -qi 'nan'; }
# le_ln X N: X <= ln N
le_ln() { awk -v x="$1" -v n="$2" 'BEGIN { exit !(x != "" && x + 0 <= log(n) + 1e-9) }'; }
# The head view's panel: its entropy, its listed keys' indexes
# and values (one "INDEX VALUE" a line).
hv_entropy() { screen | sed -n 's/.*their entropy \([0-9.]*\) nats.*/\1/p' | head -n 1; }
hv_keys() {
	screen | sed -n '/strongest keys/,+5p' | sed 1d |
		grep -oE '[0-9]+ [^ ]+ +(-?[0-9]+\.[0-9]{3}|-?nan|-?inf)' | awk '{ print $1, $3 }'
}
# keys_ok Q: every listed key is one query Q sees (causal: at most Q) and
# its value a number
keys_ok() {
	k=$(hv_keys)
	[ -n "$k" ] && echo "$k" | awk -v q="$1" '$1 > q || $2 !~ /^-?[0-9]+\.[0-9]+$/ { bad = 1 } END { exit bad }'
}
# joined: the screen's rows 2..23 as one line, blanks squeezed
joined() { screen | sed -n '2,23p' | tr '\n' ' ' | tr -s ' '; }
squeeze() { tr '\n' ' ' | tr -s ' ' | sed 's/ $//'; }
# weights_back: after w from rollout, until the status line names no kind
weights_back() {
	i=0
	while [ $i -lt 300 ] && line 1 | grep -qE '│ (scores|norms|rollout) │'; do
		sleep 0.1
		i=$((i + 1))
	done
	wait_stable
}
# batch ARGS...: the binary on the test's models, as the REPL runs it
batch() { (cd "$tmp" && "$A" --no-db "$@"); }

# --------------------------------------------- scores: the grid at 80x24
start grid 80 24 "" "--tui small --no-db -t '$text'"
wait_for 'MHA' 1 >/dev/null
keys w
if wait_for 'scores' 1 && wait_stable; then ok truth-scores-on; else fail truth-scores-on; fi
check truth-scores-grid-no-nan no_nan
check truth-scores-grid-legend 'line 2 | grep -q "map: each row.s scores, min..max → 0..1, · masked"' "$(line 2)"
# the upper triangle: whole masked cells, the masked glyph on grey
check truth-scores-grid-masked-glyph 'screen | sed -n "3,22p" | grep -q "·"'
check truth-scores-grid-masked-grey 'screen_e | grep -q "48;5;238m"'

# ---------------------------------------------- scores: the head view
keys 2
wait_for '2 head' 1 >/dev/null
keys End
wait_for "query $((T_len - 1)) " 2 >/dev/null
wait_stable
check truth-scores-head-no-nan no_nan
e_last=$(hv_entropy)
check truth-scores-entropy-at-most-lnT 'le_ln "$e_last" $T_len' "entropy '$e_last', ln $T_len = 3.738"
check truth-scores-panel-raw 'screen | grep -q "strongest keys, raw score:"'
# the map's normalisation in words, with the row's min and max of the
# listed raw scores: the strongest listed is the max
hi=$(hv_keys | head -n 1 | awk '{ print $2 }')
check truth-scores-map-words 'screen | grep -q "map: each row.s scores," &&
	screen | grep -qE "^.* -?[0-9]+\.[0-9]{3}\.\.$hi( |$)"' "max '$hi'"
# a masked cell under the cursor says so: query 0, key 41
keys Home
wait_for "query 0 'T' → key $((T_len - 1)) ':': masked" 2 >/dev/null
check truth-scores-cursor-masked 'line 2 | grep -q ": masked *$" && no_nan' "$(line 2)"
check truth-scores-legend-masked 'screen | grep -q "· masked: a key the query"'
# a query in the middle: its listed keys are all visible, none masked
for q in 3 10 20; do
	keys Home
	i=0
	while [ $i -lt $q ]; do keys Down; i=$((i + 1)); done
	wait_for "query $q " 2 >/dev/null
	wait_stable
	check "truth-scores-strongest-visible-q$q" "keys_ok $q && no_nan" "$(hv_keys | tr '\n' ' ')"
	e=$(hv_entropy)
	check "truth-scores-entropy-q$q" 'le_ln "$e" $((q + 1))' "entropy '$e' at query $q"
done
e_scores=$(hv_entropy)
# the entropy is the weights': the same after w to norms, rollout, weights
keys w
wait_for ' norms ' 1 >/dev/null
wait_stable
check truth-norms-head-no-nan no_nan
check truth-norms-panel 'screen | grep -q "strongest keys, norm:" && screen | grep -q "map: shares of its row"'
check truth-norms-entropy-is-weights '[ -n "$e_scores" ] && [ "$(hv_entropy)" = "$e_scores" ]' "$(hv_entropy) vs $e_scores"
keys w
wait_for ' rollout ' 1 >/dev/null
wait_stable
check truth-rollout-head-no-nan no_nan
check truth-rollout-panel 'screen | grep -q "strongest keys, rollout:" && screen | grep -q "map: as is, rows sum to 1"'
keys w
weights_back
check truth-weights-entropy-same '[ -n "$e_scores" ] && [ "$(hv_entropy)" = "$e_scores" ]' "$(hv_entropy) vs $e_scores"
keys 1
wait_for '1 grid' 1 >/dev/null

# --------------------------- scores in the token and numbers views, 80x24
keys w
wait_for 'scores' 1 >/dev/null
keys 3
wait_for '3 token' 1 >/dev/null
keys Home
keys Right Right Right Right Right
wait_for "token 5 " 2 >/dev/null
wait_stable
check truth-scores-token-view 'no_nan && screen | grep -q "top key, raw score" && screen | sed -n "5,8p" | grep -q "·"'
keys 4
wait_for '4 numbers' 1 >/dev/null
check truth-scores-numbers-view 'no_nan && screen | grep -q "token 5 .*, raw score:"'
keys 1
wait_for '1 grid' 1 >/dev/null

# ------------------------ norms and rollout: the grid says what it shows
keys w
wait_for ' norms ' 1 >/dev/null
check truth-norms-grid 'wait_for "map: norms as shares of their row" 2 && no_nan'
keys w
wait_for ' rollout ' 1 >/dev/null
check truth-rollout-grid 'wait_for "map: rollout from the input" 2 && no_nan'
keys w
weights_back

# --------------------------------------------- the mask after the softmax
# what the REPL prints after `mask after-softmax`
batch small --batch -c "text $text; mask after-softmax" >"$tmp/repl" 2>&1
mean=$(sed -n 's/^rows of attention now sum to \([0-9.]*\) on average.*/\1/p' "$tmp/repl")
keys :
wait_for '^:' 23 >/dev/null
keys 'mask after-softmax' Enter
wait_for 'mask after softmax' 1 >/dev/null
wait_stable
check truth-rows-grid-mean '[ -n "$mean" ] && line 2 | grep -q "rows of weights sum to $mean on average, not 1"' \
	"REPL '$mean'; $(line 2)"
keys 4
wait_for '4 numbers' 1 >/dev/null
check truth-rows-numbers-mean 'screen | grep -q "row sums *$mean on average"'
keys 2
wait_for '2 head' 1 >/dev/null
keys Home Down Down Down Down
wait_for 'query 4 ' 2 >/dev/null
wait_stable
# the selected row's sum: what the exported weights of that row add up to
batch small --batch -c "text $text; mask after-softmax; export heatmap 0.0 --format csv --out h.csv" \
	>/dev/null 2>&1
want=$(awk -F, 'NR == 6 { s = 0; for (i = 2; i <= NF; i++) s += $i; printf "%.3f", s }' "$tmp/h.csv")
check truth-rows-head-row-sum '[ -n "$want" ] && screen | grep -q "its weights sum to $want" &&
	screen | grep -q "all rows: mean $mean"' "want $want, mean $mean"
keys 1
keys :
wait_for '^:' 23 >/dev/null
keys 'mask causal' Enter
wait_for ' causal ' 1 >/dev/null

# ------------------------------------------------------ long messages
keys :
wait_for '^:' 23 >/dev/null
bad=no_such_model_with_a_rather_long_name_that_goes_on_and_on
keys "load $bad" Enter
want=$(batch --batch -c "load $bad" 2>&1 | sed -n 's/^-c:1: //p' | squeeze)
wait_for '^error: ' >/dev/null
check truth-long-error-whole 'joined | grep -qF "error: $want"' "want: error: $want"
# an output of 4 rows at 80 columns is shown whole; one longer, in the pager
words=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "word%02d ", i }')
keys :
wait_for '^:' 23 >/dev/null
keys "echo $words" Enter
wait_for 'word39' >/dev/null
check truth-long-output-whole 'joined | grep -qF "$(echo "$words" | squeeze)"'
keys :
wait_for '^:' 23 >/dev/null
keys "echo $words$words$words" Enter
check truth-longer-output-pager 'wait_for "lines 1-" 24'
line 24 | grep -q 'q/Esc close' && keys q
wait_for '1 grid' 1 >/dev/null

# ------------------------------------------------------- the help's title
keys '?'
wait_for 'Views' >/dev/null
n=$(screen | grep -c 'attnscope visualizer: keys')
check truth-help-title-once '[ "$n" -eq 1 ]' "$n titles"
line 24 | grep -q 'q/Esc close' && keys q
wait_for '1 grid' 1 >/dev/null

# ------------------------------------------------ the side panel, 160x48
start wide 160 48 "" "--tui small --no-db -t '$text'"
wait_for '│ forward ' >/dev/null
keys w
wait_for 'scores' 1 >/dev/null
wait_stable
check truth-scores-side-panel 'no_nan && screen | grep -q "│ .*token [0-9]* .*, raw score:"'

# ----------------------------------------------------- patch and lens
# a corrupted text that changes the small model's answer
ptext='' ctext=''
for c in a b c d e f g h; do
	if batch small --batch -c "text hello world; patch hello worl$c" >/dev/null 2>&1; then
		ptext='hello world' ctext="hello worl$c"
		break
	fi
done
if [ -z "$ctext" ]; then
	fail truth-patch-setup "no corrupted text changes the answer"
else
	start patch 80 24 "" "--tui small --no-db -t '$ptext'"
	wait_for 'MHA' 1 >/dev/null
	keys :
	wait_for '^:' 23 >/dev/null
	keys "patch $ctext" Enter
	wait_for 'lines 1-|^patch' >/dev/null
	line 24 | grep -q 'q/Esc close' && keys q
	keys 7
	wait_for '7 patch' 1 >/dev/null
	wait_stable
	check truth-patch-legend 'screen | grep -q "^shade 0 .* 1: the share restored (below 0 blank, above 1 full)"'
	# each cell: a shade, a blank, its number, then a gap of two before
	# the next cell's shade
	cells() { screen | sed -n 's/^layer [0-9]* //p'; }
	check truth-patch-cells-apart 'cells | grep -qE "[0-9]\.[0-9]{2}  " && ! cells | grep -qE "[0-9] ?[░▒▓█]"'
	keys 5
	wait_for '5 lens' 1 >/dev/null
	check truth-lens-legend 'screen | grep -q "^shade 0 .* 1: p each depth gives the model.s final prediction" &&
		screen | grep -q "^rows: the embeddings, then the stream after each block"'
fi

[ "$failures" -eq 0 ]
