#!/bin/sh
# `curves`, end to end on the shipped models: the plot of shakespeare's
# loss (title, train and val in the legend, braille, lines within the
# width); two models overlaid; lr, grad and the per-layer strip; ASCII;
# --csv (a header, one row per recorded step, the last row equal to the
# numbers the record states) and --svg; and one-line errors (a model with
# no training record, an unknown curve, files that cannot be written,
# --log with --linear); a run recorded with --db read back by --run; and
# the visualizer's curves view at 80x24 through tmux.  Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_curves.sh
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib-cli.sh"
make_tmp curves
ATTNSCOPE_MODELS=$root/models
export ATTNSCOPE_MODELS
RUN_ARGS="--no-db --batch"
unset COLUMNS NO_COLOR
LC_ALL=C.UTF-8
export LC_ALL
cd "$tmp" || exit 1
model=$root/models/shakespeare.safetensors

braille=$(printf '\342[\240-\243]') # the first two bytes of U+2800-U+28FF
# widest N: every line of $tmp/out is at most N columns wide
widest() { [ "$(wc -L <"$tmp/out")" -le "$1" ]; }
# rec KEY: a number of shakespeare's training record (the JSON text is a
# string in the safetensors header, so its quotes are escaped there)
rec() { grep -ao "\\\\\"$1\\\\\":[-0-9.e]*" "$model" | head -n 1 | sed 's/.*://'; }
# steps KEY: the steps of KEY (history or val), one a line
steps() {
	grep -ao "\\\\\"$1\\\\\":{[^}]*\\\\\"step\\\\\":\[[0-9,]*\]" "$model" | head -n 1 |
		sed 's/.*\[//; s/\]//' | tr ',' '\n'
}
# close A B TOL: |A - B| <= TOL
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(a != "" && b != "" && d <= t && -d <= t) }'; }

# ------------------------------------------------------------- the plot
run shakespeare -c "curves"
if status 0 && has_out '^shakespeare: loss by step (3000 steps, every 3rd stored; val 12 times)$' &&
	has_out '● train loss  ■ val loss' && LC_ALL=C grep -q "$braille" "$tmp/out" && widest 80 &&
	has_out '^shakespeare: final train loss 2.9194 (mean of the last 10% of steps), val 1.6140$'; then
	ok "curves: shakespeare's loss, train and val, in 80 columns"
else
	fail "curves: shakespeare's loss, train and val, in 80 columns"
fi
run shakespeare -c "curves --width 40 --height 6"
check "curves --width 40 keeps every line within 40 columns" eval 'status 0 && widest 40 && has_out "val loss"'

run shakespeare -c "curves loss shakespeare-postnorm"
if status 0 && has_out '^loss by step: shakespeare, shakespeare-postnorm$' &&
	has_out '● shakespeare train loss  ■ shakespeare val loss' &&
	has_out '▲ shakespeare-postnorm train loss  ◆ shakespeare-postnorm val loss' &&
	has_out '^shakespeare-postnorm: final train loss 2.9098'; then
	ok "curves loss shakespeare-postnorm overlays two models"
else
	fail "curves loss shakespeare-postnorm overlays two models"
fi
run shakespeare -c "curves loss shakespeare"
check "naming the loaded model again does not draw it twice" \
	eval 'status 0 && has_out "^shakespeare: loss by step" && ! has_out "shakespeare train loss"'

run shakespeare -c "curves lr; curves grad; curves layers"
if status 0 && has_out '^shakespeare: learning rate by step' && has_out '● learning rate' &&
	has_out '^shakespeare: gradient norm by step (3000 steps, every 3rd stored), log y$' &&
	has_out '^layer 3 │[░▒▓█]*$' && has_out "^scale (log):  '░' >="; then
	ok "curves lr, grad and layers"
else
	fail "curves lr, grad and layers"
fi
run shakespeare -c "curves --ascii; curves layers --ascii"
check "curves --ascii prints only ASCII" eval 'status 0 && ! LC_ALL=C grep -q "[^ -~]" "$tmp/out" && has_out "^\* train loss  o val loss$"'

# ------------------------------------------------------------ CSV, SVG
run shakespeare -c "curves --csv loss.csv"
want=$({ steps history; steps val; } | sort -n -u | wc -l)
rows=$(($(wc -l <loss.csv) - 1))
last=$(tail -n 1 loss.csv)
final_val=$(rec final_val_loss)
last_loss=$(grep -ao '\\"loss\\":\[[-0-9.,e]*\]' "$model" | head -n 1 | sed 's/.*,//; s/\]//')
if status 0 && has_out '^wrote loss.csv (CSV, ' && [ "$(head -n 1 loss.csv)" = "step,train loss,val loss" ] &&
	[ "$rows" -eq "$want" ] && [ "$want" -gt 1000 ] && [ "${last%%,*}" = "$(rec steps_done)" ] &&
	close "$(echo "$last" | cut -d, -f3)" "$final_val" 1e-4 &&
	close "$(echo "$last" | cut -d, -f2)" "$last_loss" 1e-4; then
	ok "curves --csv: header, $rows rows (one per recorded step), last row = the record's final numbers"
else
	fail "curves --csv: header, rows, last row" "rows $rows, want $want; last $last; final val $final_val, last loss $last_loss"
fi
run shakespeare -c "curves layers --csv layers.csv"
check "curves layers --csv: a column per layer" \
	eval 'status 0 && [ "$(head -n 1 layers.csv)" = "step,layer 0,layer 1,layer 2,layer 3" ]'
run shakespeare -c "curves loss shakespeare-mqa --svg loss.svg"
if status 0 && has_out '^wrote loss.svg (SVG, ' && head -n 1 loss.svg | grep -q '^<svg ' &&
	[ "$(grep -c '<path' loss.svg)" -eq 4 ] && [ "$(tail -n 1 loss.svg)" = "</svg>" ]; then
	ok "curves --svg: a figure with one path per series"
else
	fail "curves --svg: a figure with one path per series"
fi
run shakespeare -c "curves --csv -"
check "curves --csv - writes the CSV alone to standard output" \
	eval 'status 0 && [ "$(head -n 1 "$tmp/out")" = "step,train loss,val loss" ] && ! has_out "│"'

# -------------------------------------------------------------- errors
mkmodel rand.safetensors
# err NAME MESSAGE ARGS...: exit 1 and exactly one line on stderr, naming MESSAGE
err() {
	name=$1 msg=$2
	shift 2
	run "$@"
	if status 1 && [ "$(wc -l <"$tmp/err")" -eq 1 ] && has_err "$msg"; then ok "$name"; else fail "$name"; fi
}
err "a model with no record: one line" \
	'rand has no training history (it was not trained by attnscope)' rand.safetensors -c curves
err "overlaying a model with no record: one line" \
	'rand has no training history' shakespeare -c "curves loss $tmp/rand.safetensors"
err "an unknown curve: one line" \
	'los: neither a curve (loss, lr, grad, layers) nor a model' shakespeare -c "curves los"
err "--csv to a device is refused" \
	'curves: /dev/null: is a character device, not a regular file' shakespeare -c "curves --csv /dev/null"
err "--svg into a missing directory is refused" \
	'curves: nodir/x.svg: cannot write in nodir' shakespeare -c "curves --svg nodir/x.svg"
check "nothing written by the refused commands" test ! -e nodir
err "--log with --linear is refused" \
	'curves: --log and --linear exclude each other' shakespeare -c "curves --log --linear"
err "a width out of range is refused" '5: the width must be a whole number from 20 to 1000' \
	shakespeare -c "curves --width 5"

# ------------------------------------------------- a run in the database
# a 60-step run recorded with --db: curves --run reads every step back, and
# its final losses are those of the record in the model file the run wrote
training_text text.txt
"$A" train --data text.txt --out run.safetensors --steps 60 --layers 2 --heads 2 --d-model 8 \
	--context 16 --batch 2 --threads 1 --val-every 20 --db runs.db --quiet >/dev/null 2>&1
final=$("$A" --no-db --batch run.safetensors -c curves | sed -n 's/^run: final/final/p')
RUN_ARGS="--db runs.db --batch"
run run.safetensors -c "curves --run 1 --csv run.csv"
if status 0 && has_out '^run 1: loss by step (60 steps, each stored; val 3 times)$' &&
	[ "$(($(wc -l <run.csv) - 1))" -eq 60 ] && [ -n "$final" ] && has_out "^run 1: $final\$"; then
	ok "curves --run: every recorded step, the final losses of the model file"
else
	fail "curves --run: every recorded step, the final losses of the model file" "file: $final"
fi
err "curves --run with no such run: one line" 'no training run 2 in runs.db' \
	run.safetensors -c "curves --run 2"
RUN_ARGS="--no-db --batch"
err "curves --run without a database: one line" 'curves --run: no session database' \
	run.safetensors -c "curves --run 1"

# ------------------------------------------------------ the curves view
# key 6 of the visualizer at 80x24 (skipped without tmux): the loss plot
# with its legend and the per-layer strip below it; c moves to the
# learning rate
if command -v tmux >/dev/null 2>&1; then
	sock=attnscope-curves-$$
	T() { tmux -L "$sock" -f /dev/null "$@"; }
	trap 'T kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
	screen() { T capture-pane -p -t v; }
	wait_for() {
		i=0
		while [ $i -lt 150 ]; do
			screen | grep -q -- "$1" && return 0
			sleep 0.1
			i=$((i + 1))
		done
		return 1
	}
	T new-session -d -s v -x 80 -y 24 \
		"env TERM=screen LC_ALL=C.UTF-8 ATTNSCOPE_MODELS='$ATTNSCOPE_MODELS' '$A' shakespeare --no-db --tui"
	wait_for '6 curves\|shakespeare' && T send-keys -t v 6
	if wait_for '^layer 3 │' && screen | grep -q '^shakespeare: loss by step' &&
		screen | grep -q '^● train loss  ■ val loss' && screen | grep -q "^scale (log):"; then
		ok "the curves view at 80x24: loss, legend and the per-layer strip"
	else
		echo "FAIL the curves view at 80x24"
		screen | sed 's/^/  screen: /'
		failures=$((failures + 1))
	fi
	T send-keys -t v c
	# the legend is drawn after the title: wait for it, not the title
	if wait_for '^● learning rate' && screen | grep -q '^shakespeare: learning rate by step'; then
		ok "the curves view: c shows the learning rate"
	else
		echo "FAIL the curves view: c shows the learning rate"
		screen | sed 's/^/  screen: /'
		failures=$((failures + 1))
	fi
	T send-keys -t v q
else
	ok "the curves view # skipped: no tmux"
fi

[ "$failures" -eq 0 ]
