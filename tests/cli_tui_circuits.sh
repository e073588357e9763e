#!/bin/sh
# The circuits view draws the numbers `circuits` prints, checked on the
# screen in tmux at 80x24 and 120x40 on the shipped induction model
# (2 layers x 4 heads):
#   with 1.2 selected (K, the view's first kind), each layer-0 cell is the
#     K score `circuits --top 16` prints for that head -> 1.2, and the
#     "reads" line names the three strongest of them in order with their
#     scores; c switches to V and then Q, the cells following;
#   with 0.2 selected, each layer-1 cell is 0.2 -> that head, "read by"
#     names the strongest, and "reads" says layer 0 reads nothing;
#   the heading names the kind and the selection, the legend the weakest
#     and strongest pair and the baseline `circuits` prints.
# Prints "ok NAME" or "FAIL NAME" per check; skips without tmux or a
# UTF-8 locale.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_tui_circuits.sh
. "$(dirname "$0")/lib-cli.sh"
. "$(dirname "$0")/lib-tui.sh"

tui_setup tui-circuits
cp "$(pwd)/models/induction.safetensors" "$tmp/models/"
"$A" --no-db "$tmp/models/induction.safetensors" -c 'circuits --top 16' >"$tmp/circ" 2>&1 ||
	{ echo "FAIL setup (circuits)"; exit 1; }

# score KIND A B: the score `circuits` prints for A -> B
score() {
	sed -n "/^$1-composition/,/^\$/p" "$tmp/circ" | awk -v a="$2" -v b="$3" '$1 == a && $2 == b { print $3 }'
}
# baseline KIND
baseline() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" "$tmp/circ" | sed -n 1p; }
# row N: the numbers of the table row "layer N" on the screen, one a line
row() { screen | sed -n "s/^layer $1 //p" | grep -oE '[0-9]+\.[0-9]{3}'; }
# want_row KIND LAYER B FROM: the scores `circuits` has for that row of
# the table around B: FROM=a the row's heads read by B, FROM=b reading B
want_row() {
	for h in 0 1 2 3; do
		if [ "$4" = a ]; then score "$1" "$2.$h" "$3"; else score "$1" "$3" "$2.$h"; fi
	done
}
# top3 KIND B: "A SCORE" of the three strongest A -> B, strongest first
top3() {
	sed -n "/^$1-composition/,/^\$/p" "$tmp/circ" | awk -v b="$2" '$2 == b { print $1, $3 }' | head -n 3 |
		tr '\n' ' ' | sed 's/ $//'
}
# listed LABEL: "HEAD SCORE" pairs of the line LABEL on the screen
listed() {
	screen | sed -n "s/^$1 *//p" | grep -oE '[0-9]+\.[0-9]+ [0-9]+\.[0-9]{3}' | tr '\n' ' ' | sed 's/ $//'
}

for size in "80 24" "120 40"; do
	set -- $size
	W=$1
	start "c$W" "$1" "$2" "" "--no-db models/induction.safetensors -t 'abcabcabc' --tui"
	wait_for 'induction' 1 || fail "tui-circuits-start-$W"
	keys 8
	wait_for '^K-composition around 0\.0' || fail "tui-circuits-open-$W"
	keys Down Right Right
	wait_for '^K-composition around 1\.2: earlier layers what it reads, later who reads it'
	check "tui-circuits-heading-$W" 'line 2 | grep -q "^K-composition around 1\.2"'
	check "tui-circuits-k-cells-$W" '[ "$(row 0)" = "$(want_row K 0 1.2 a)" ] && [ -n "$(row 0)" ]' \
		"screen $(row 0 | tr '\n' ' ') want $(want_row K 0 1.2 a | tr '\n' ' ')"
	check "tui-circuits-k-reads-$W" '[ "$(listed reads)" = "$(top3 K 1.2)" ]' \
		"screen '$(listed reads)' want '$(top3 K 1.2)'"
	top=$(sed -n '/^K-composition/{n;n;p}' "$tmp/circ" | awk '{ print $3 }')
	low=$(sed -n '/^K-composition/,/^$/p' "$tmp/circ" | awk 'NF == 4 && $1 ~ /^[0-9]/ { v = $3 } END { print v }')
	check "tui-circuits-legend-$W" 'screen | grep -q "K pairs from $low to $top; random baseline $(baseline K)"'
	keys c
	wait_for '^V-composition around 1\.2'
	check "tui-circuits-v-cells-$W" '[ "$(row 0)" = "$(want_row V 0 1.2 a)" ]' \
		"screen $(row 0 | tr '\n' ' ') want $(want_row V 0 1.2 a | tr '\n' ' ')"
	keys c
	wait_for '^Q-composition around 1\.2'
	check "tui-circuits-q-cells-$W" '[ "$(row 0)" = "$(want_row Q 0 1.2 a)" ]'
	keys c Up
	wait_for '^K-composition around 0\.2'
	check "tui-circuits-read-by-$W" '[ "$(row 1)" = "$(want_row K 1 0.2 b)" ] &&
		screen | grep -q "^reads *nothing: layer 0 reads only the embeddings"'
	want=$(sed -n '/^K-composition/,/^$/p' "$tmp/circ" | awk '$1 == "0.2" { print $2, $3 }' | head -n 3 |
		tr '\n' ' ' | sed 's/ $//')
	check "tui-circuits-read-by-list-$W" '[ "$(listed "read by")" = "$want" ]' \
		"screen '$(listed "read by")' want '$want'"
	keys q
done

[ "$failures" -eq 0 ]
