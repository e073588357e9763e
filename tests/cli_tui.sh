#!/bin/sh
# End-to-end tests of the visualizer, driven through tmux at fixed sizes:
# the status line and the grid at 80x24; g through GQA to MQA (status, KV
# bytes, heatmaps); ablating head 0.0 and restoring it (marks, KL); resizing
# to 120x40 and back (fills the space, then the same screen as before);
# editing the text to CJK (tokens, labels, heatmaps); `:` commands and the
# pager; a sweep's progress and Esc cancelling it; no colour with NO_COLOR;
# `view` from the REPL and `q` back to it; a sane terminal afterwards
# (no alternate screen, echo on) after q, quit, SIGTERM and SIGINT; the
# newline key of the text editor; bytes that are no UTF-8, a paste into a
# prompt and a key held down during a sweep (each followed by a key that
# must act); and the role badge on the shipped model.  Every wait is for
# what the screen shows, with a deadline that only bounds a failure.
# Prints "ok NAME" or "FAIL NAME" per check; skips when tmux is missing.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_tui.sh
. "$(dirname "$0")/lib-cli.sh"
. "$(dirname "$0")/lib-tui.sh"

tui_setup tui

# a character model whose vocabulary has the CJK characters typed below
ascii=' !"#$%&'"'"'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~'
nl=$(printf '\nx')
nl=${nl%x}
mkmodel "$tmp/models/shakespeare.safetensors" \
	--chars "$ascii${nl}床前明月光疑是地上霜举头望低思故乡"
L=2 H=4 # tool_mkmodel's default shape

# ----------------------------------------------------- start at 80x24
start main 80 24 NO_COLOR= "--tui shakespeare --no-db -t 'hello world'"
if wait_for 'MHA' 1; then ok tui-starts; else fail tui-starts; fi
st=$(line 1)
check tui-status-line 'echo "$st" | grep -q MHA && echo "$st" | grep -q pre && echo "$st" | grep -q causal' "$st"
n_cells=$(screen | grep -oE '\[?[0-9]+\.[0-9]+\]?─' | tr -d '[]─' | sort -u | wc -l)
check tui-grid-cells '[ "$n_cells" -eq $((L * H)) ]' "$n_cells cells, want $((L * H))"
check tui-grid-halfblocks 'screen | grep -q "[▀▄█]"'
check tui-grid-colour 'screen_e | grep -q "38;5;\|48;5;\|\[3[0-7]m\|\[4[0-7]m"'
check tui-selected-head 'screen | grep -q "\[0\.0\]"'
check tui-hint-line 'line 24 | grep -q "? help" && line 24 | grep -q "q quit"'
check tui-info-line 'line 23 | grep -q "^loss .* KL 0\.0000 .* KV "'
wait_stable
fresh=$(screen_e | mask_ms)
check tui-alternate-screen '[ "$(alt_on)" = 1 ]'

# ------------------------------------------------ resize and back
T resize-window -t "$S" -x 120 -y 40
if wait_for 'no ablations {40,}1 grid' 1 && wait_stable; then ok tui-resize-120x40; else fail tui-resize-120x40; fi
check tui-resize-hints-at-bottom 'line 40 | grep -q "q quit"'
check tui-resize-grid-grows 'screen | grep -qE "\[0\.0\]─{17}"'
n_cells=$(screen | grep -oE '\[?[0-9]+\.[0-9]+\]?─' | tr -d '[]─' | sort -u | wc -l)
check tui-resize-all-cells '[ "$n_cells" -eq $((L * H)) ]' "$n_cells cells"
T resize-window -t "$S" -x 80 -y 24
wait_for 'no ablations {1,10}1 grid' 1 >/dev/null
wait_stable
back=$(screen_e | mask_ms)
if [ "$back" = "$fresh" ]; then
	ok tui-resize-back-no-garbage
else
	fail tui-resize-back-no-garbage
	printf '%s\n' "$fresh" >"$tmp/fresh"
	printf '%s\n' "$back" >"$tmp/back"
	diff "$tmp/fresh" "$tmp/back" | sed 's/^/  diff: /' | head -20
fi

# at 160 columns the side panel's lines are whole, none cut at the edge
T resize-window -t "$S" -x 160 -y 48
keys 2
if wait_for '│ forward ' && wait_stable; then ok tui-resize-160x48; else fail tui-resize-160x48; fi
check tui-side-panel-whole 'screen | grep "│ forward " | grep -qE "[0-9] ms *$"' "$(screen | grep '│ forward ')"
keys 1
# with room to spare, each heatmap has its keys underneath
wait_for 'h  *e  *l  *l  *o  *␣  *w  *o  *r  *l  *d' >/dev/null
check tui-grid-key-labels 'screen | grep -qE "h +e +l +l +o +␣ +w +o +r +l +d"' "$(screen | sed -n 10,14p)"
T resize-window -t "$S" -x 80 -y 24
wait_for '1 grid' 1 >/dev/null
wait_stable

# ---------------------------------------------------- g until MQA
keys 4
wait_for 'KV cache' >/dev/null
kv_native=$(screen | sed -n 's/.*native [^(]*(\([0-9]*\) B).*/\1/p')
keys 1
wait_for '1 grid' 1 >/dev/null
wait_stable
heat_mha=$(heat_rows 24)
i=0
while [ $i -lt $((H + 1)) ] && ! line 1 | grep -q MQA; do
	before=$(line 1)
	keys g
	j=0
	while [ $j -lt 100 ] && [ "$(line 1)" = "$before" ]; do sleep 0.1; j=$((j + 1)); done
	i=$((i + 1))
done
check tui-g-reaches-mqa 'line 1 | grep -q MQA' "$(line 1)"
check tui-mqa-joined-rule 'line 3 | grep -q "─0\.1"'
wait_stable
heat_mqa=$(heat_rows 24)
check tui-mqa-grid-changes '[ "$heat_mqa" != "$heat_mha" ]'
keys 4
wait_for 'KV cache' >/dev/null
kv_mqa=$(screen | sed -n 's/.*current [^(]*(\([0-9]*\) B).*/\1/p')
check tui-mqa-kv-bytes '[ -n "$kv_mqa" ] && [ "$kv_native" -eq $((kv_mqa * H)) ]' "native $kv_native, mqa $kv_mqa"
check tui-numbers-view 'screen | grep -q "key→redraw" && screen | grep -q "next token after"'
keys 1
# one more g: back to MHA, KL 0
keys g
if wait_for 'MHA' 1 && wait_for ' KL 0\.0000 ' 23; then ok tui-g-cycles-to-mha; else fail tui-g-cycles-to-mha; fi

# ------------------------------------------- w: what the heatmaps show
# (the weights compared after a repaint, Ctrl-L, each time: how tmux
# records a cell's colours depends on what the cell held before, e.g. the
# masked glyph the scores draw there)
keys C-l
wait_stable
heat_weights=$(heat_rows 24)
keys w
if wait_for 'scores' 1 && wait_stable; then ok tui-w-scores-in-status; else fail tui-w-scores-in-status; fi
check tui-w-scores-grid-changes '[ "$(heat_rows 24)" != "$heat_weights" ]'
keys w w w
if wait_for 'no ablations' 1 && ! line 1 | grep -q 'rollout' && wait_stable; then
	ok tui-w-cycles-to-weights
else
	fail tui-w-cycles-to-weights
fi
keys C-l
wait_stable
check tui-w-weights-grid-back '[ "$(heat_rows 24)" = "$heat_weights" ]'

# ------------------------------------- 7: the last patch of this run
keys 7
if wait_for 'nothing patched yet' 2; then ok tui-patch-view-empty; else fail tui-patch-view-empty; fi
keys 1
wait_for '1 grid' 1 >/dev/null

# ----------------------------- d in the head view: what MQA changed
keys : 'attn mqa' Enter
wait_for 'MQA' 1 >/dev/null
keys 2
wait_for '2 head' 1 >/dev/null
keys d
if wait_for 'minus native' 2 && screen | grep -qE '^ *[0-9]+ .* [+-][1-9#]'; then
	ok tui-head-diff
else
	fail tui-head-diff
fi
keys d
if wait_for '2 head' 1 && ! line 2 | grep -q 'minus native'; then ok tui-head-diff-off; else fail tui-head-diff-off; fi
keys r
wait_for 'MHA' 1 >/dev/null
keys 1
wait_for '1 grid' 1 >/dev/null

# ------------------------------------------------- ablate head 0.0
keys a
if wait_for '\[0\.0\]✗' && wait_for 'ablated 0\.0' 1; then ok tui-ablate-marked; else fail tui-ablate-marked; fi
wait_for ' KL 0\.[0-9]*[1-9]' 23 >/dev/null
check tui-ablate-kl-positive '[ "$(kl)" != "0.0000" ] && [ -n "$(kl)" ]' "KL $(kl)"
keys A
if wait_for 'no ablations' 1 && wait_for ' KL 0\.0000 ' 23; then ok tui-restore-all-kl-zero; else fail tui-restore-all-kl-zero "KL $(kl)"; fi
check tui-key-redraw-time 'line 23 | grep -qE "key [0-9.]+"'

# --------------------------------------------------- edit the text
wait_stable
heat_before=$(heat_rows 24)
keys 4
check tui-numbers-last-command 'wait_for "last key ran +restore all"'
keys 1
wait_for '1 grid' 1 >/dev/null
keys e
if wait_for '^text: hello world' 23; then ok tui-edit-prompt; else fail tui-edit-prompt; fi
keys C-u
keys -l '床前明月光疑是地上霜'
wait_for '^text: 床前明月光疑是地上霜' 23 >/dev/null
keys Enter
if wait_for '10 tokens' 2; then ok tui-edit-applies; else fail tui-edit-applies; fi
wait_stable
check tui-edit-grid-changes '[ "$(heat_rows 24)" != "$heat_before" ]'
keys Enter
wait_for '2 head' 1 >/dev/null
check tui-head-view-cjk-keys 'screen | grep -q "床前明月光疑是地上霜"'
check tui-head-view-cjk-rows 'screen | grep -qE "^0 床" && screen | grep -qE "^9 霜"'
keys 3
wait_for '3 token' 1 >/dev/null
check tui-token-view 'screen | grep -q "text: 床前明月光疑是地上霜" && screen | grep -qE "^0\.3 "'
keys 5
check tui-lens-view 'wait_for "5 lens" 1 && screen | grep -q "^logit lens: p(the model.s prediction) by depth" && screen | grep -qE "^after 1 "'
keys 1
wait_for '1 grid' 1 >/dev/null

# Ctrl-O puts a newline into the text (shown as ⏎), which runs as one token
keys e
wait_for '^text: ' 23 >/dev/null
keys C-u
keys -l 'ab'
keys C-o
keys -l 'cd'
if wait_for '^text: ab⏎cd' 23; then ok tui-edit-newline-shown; else fail tui-edit-newline-shown; fi
keys Enter
if wait_for '5 tokens' 2; then ok tui-edit-newline-applies; else fail tui-edit-newline-applies; fi
keys 2
wait_for '2 head' 1 >/dev/null
check tui-edit-newline-label 'screen | grep -qE "^2 ⏎"'
keys 1

# -------------------------------------------------- : and the pager
keys : 'echo hi there' Enter
check tui-command-output 'wait_for "^hi there" 23'
keys : 'help' Enter
if wait_for 'lines 1-' && screen | grep -q 'load MODEL'; then ok tui-command-pager; else fail tui-command-pager; fi
keys q
check tui-pager-closes 'wait_for "1 grid" 1'
keys : 'bogus' Enter
check tui-command-error 'wait_for "^error: unknown command: bogus" 23'
keys '?'
check tui-help 'wait_for "g +sharing: MHA"'
keys q
wait_for '1 grid' 1 >/dev/null

# -------------------------------- bytes that start no UTF-8 character
# (a Latin-1 terminal, a Meta key setting the 8th bit): the byte is
# dropped and the key after it acts, in the views and in a prompt
for b in ff e9 c3 80; do
	T send-keys -t "$S" -H "$b"
	keys 4
	if wait_for ' 4 numbers *$' 1; then ok "tui-bad-byte-$b-then-key"; else fail "tui-bad-byte-$b-then-key"; fi
	keys 1
	wait_for ' 1 grid *$' 1 >/dev/null
done
keys e C-u
T send-keys -t "$S" -H e9
keys -l ab
T send-keys -t "$S" -H ff c3 a9 80
keys -l cd
if wait_for '^text: abécd *$' 23; then ok tui-bad-byte-prompt; else fail tui-bad-byte-prompt; fi
keys Escape
wait_for 'q quit' 24 >/dev/null

# --------------------------------------------------- a paste in a prompt
# Pasting is reading: 50 times the characters take less than 10 times as
# long as the small paste before it (drawing each character took 250 us,
# the large paste as long as 50 small ones), with every character there
# (the line ends in its marker, the start shows after Home), and an Esc
# right after a large paste is read as soon as the paste is.
now_ms() { date +%s%3N; }
# paste_time N MARK: pastes N-3 a's and MARK (3 characters) into the open
# : prompt; the milliseconds until the prompt's line ends in it, or
# nothing after LIMIT ms (default 10 minutes).
paste_time() {
	awk -v n="$1" -v m="$2" 'BEGIN { for (i = 3; i < n; i++) printf "a"; printf "%s", m }' >"$tmp/paste"
	T load-buffer -b paste "$tmp/paste"
	t0=$(now_ms)
	T paste-buffer -b paste -t "$S"
	while ! line 23 | grep -q "a$2 *\$"; do
		[ $(($(now_ms) - t0)) -gt "${LIMIT:-600000}" ] && return 0
		sleep 0.02
	done
	echo $(($(now_ms) - t0))
}
case $(now_ms) in
*N*) ok "tui-paste # skipped: date has no %N" ;;
*)
	keys :
	wait_for '^:' 23 >/dev/null
	small=$(paste_time 20000 S1Z)
	keys C-u
	wait_for '^: *$' 23 >/dev/null
	LIMIT=$((small * 10))
	large=$(paste_time 1000000 L2Z)
	check "tui-paste-linear # 20000 characters in $small ms, 1000000 in ${large:-more than $LIMIT} ms" \
		'[ -n "$small" ] && [ -n "$large" ]'
	keys Home
	check tui-paste-whole 'wait_for "^:aaaa" 23'
	keys Escape
	check tui-paste-esc-closes 'wait_for "q quit" 24'
	keys :
	wait_for '^:' 23 >/dev/null
	awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "b" }' >"$tmp/paste"
	T load-buffer -b paste "$tmp/paste"
	t0=$(now_ms)
	T paste-buffer -b paste -t "$S"
	keys Escape
	until line 24 | grep -q 'q quit' || [ $(($(now_ms) - t0)) -gt "$LIMIT" ]; do sleep 0.02; done
	check tui-paste-esc-cancels 'line 24 | grep -q "q quit"' "after $(($(now_ms) - t0)) ms"
	;;
esac
# a paste's newline runs the line, and its text is the text's characters
keys :
wait_for '^:' 23 >/dev/null
printf 'text 床前明月光 abc\n' >"$tmp/paste"
T load-buffer -b paste "$tmp/paste"
T paste-buffer -b paste -t "$S"
check tui-paste-runs 'wait_for " 9 tokens" 2'
keys 1
wait_for ' 1 grid *$' 1 >/dev/null

# ----------------------------------------------------- q: terminal sane
keys q
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok tui-q-exits-0; else fail tui-q-exits-0; fi
wait_file "$tmp/stty" >/dev/null
check tui-q-echo-restored 'grep -Eq "(^| )echo( |$)" "$tmp/stty"'
check tui-q-no-alternate-screen '[ "$(alt_on)" = 0 ]'

# -------------------------------------------------- from the REPL
start repl 80 24 "" "shakespeare --no-db"
wait_for '^shakespeare> *$' >/dev/null
keys 'text hello world' Enter
wait_for '^11 tokens ' >/dev/null
keys 'view' Enter
if wait_for 'MHA' 1 && [ "$(alt_on)" = 1 ]; then ok tui-view-enters; else fail tui-view-enters; fi
check tui-view-hint-back 'line 24 | grep -q "q back"'
keys g
wait_for 'GQA 2' 1 >/dev/null
keys q
if wait_for '^shakespeare \[gqa2\]> *$'; then ok tui-q-returns-to-repl; else fail tui-q-returns-to-repl; fi
check tui-repl-no-alternate-screen '[ "$(alt_on)" = 0 ]'
keys 'view' Enter
wait_for 'GQA 2' 1 >/dev/null
check tui-view-again 'line 1 | grep -q "GQA 2"'
keys q
wait_for '^shakespeare \[gqa2\]> *$' >/dev/null
keys 'quit' Enter
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok tui-repl-quit-0; else fail tui-repl-quit-0; fi
wait_file "$tmp/stty" >/dev/null
check tui-repl-echo-restored 'grep -Eq "(^| )echo( |$)" "$tmp/stty"'
check tui-repl-quit-no-alternate '[ "$(alt_on)" = 0 ]'

# ------------------------------------------------------- NO_COLOR
start mono 80 24 NO_COLOR=1 "--tui shakespeare --no-db -t 'hello world'"
wait_for 'MHA' 1 >/dev/null
wait_stable
check tui-no-color-no-colours '! screen_e | grep -q "38;5;\|48;5;\|\[3[0-7]m\|\[4[0-7]m\|\[9[0-7]m"'
check tui-no-color-shading 'screen | grep -q "[░▒▓█]" && ! screen | grep -q "[▀▄]"'
keys : quit Enter
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok tui-colon-quit-0; else fail tui-colon-quit-0; fi

# ------------------------------------------------- SIGTERM restores
start term 80 24 "" "--tui shakespeare --no-db -t 'hello world'"
wait_for 'MHA' 1 >/dev/null
pid=$(cat "$tmp/pid" 2>/dev/null)
[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 143 ]; then ok tui-sigterm-status; else fail tui-sigterm-status "$(cat "$tmp/status" 2>/dev/null)"; fi
wait_file "$tmp/stty" >/dev/null
check tui-sigterm-echo-restored 'grep -Eq "(^| )echo( |$)" "$tmp/stty"'
check tui-sigterm-no-alternate '[ "$(alt_on)" = 0 ]'

# ------------------------------------------------- SIGINT restores
start int 80 24 "" "--tui shakespeare --no-db -t 'hello world'"
wait_for 'MHA' 1 >/dev/null
pid=$(cat "$tmp/pid" 2>/dev/null)
[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 130 ]; then ok tui-sigint-status; else fail tui-sigint-status "$(cat "$tmp/status" 2>/dev/null)"; fi
wait_file "$tmp/stty" >/dev/null
check tui-sigint-echo-restored 'grep -Eq "(^| )echo( |$)" "$tmp/stty" && grep -Eq "(^| )icanon( |$)" "$tmp/stty"'
check tui-sigint-no-alternate '[ "$(alt_on)" = 0 ]'

# --------------------------------------------- sweep: progress, Esc
# a model large enough that a sweep takes seconds
if "$TOOLS/tool_mkmodel" "$tmp/models/big.safetensors" --layers 8 --heads 8 --d-model 256 \
	--context 1024 >/dev/null 2>&1; then
	text=$(awk 'BEGIN { for (i = 0; i < 100; i++) printf "the cat sat "; }' | cut -c1-1000)
	start sweep 80 24 "" "--tui big --no-db --threads 1 -t '$text'"
	wait_for 'MHA' 1 >/dev/null
	keys : sweep Enter
	if wait_for 'running sweep +sweep [0-9]+/[0-9]+' 23; then ok tui-sweep-progress; else fail tui-sweep-progress; fi
	keys Escape
	if wait_for '^cancelled: sweep cancelled' 23; then ok tui-sweep-esc-cancels; else fail tui-sweep-esc-cancels; fi
	check tui-sweep-still-in-tui 'line 1 | grep -q MHA && [ "$(alt_on)" = 1 ]'
	# a key held down during a sweep (100 arrows, 300 bytes, more than
	# curses takes back): what fits is given back, the rest dropped, and
	# the keys after it act
	wait_stable
	keys : sweep Enter
	wait_for 'running sweep' 23 >/dev/null
	keys $(awk 'BEGIN { for (i = 0; i < 100; i++) printf "Up " }')
	keys C-c
	wait_for '^cancelled: sweep cancelled' 23 >/dev/null
	keys 4
	if wait_for ' 4 numbers *$' 1; then ok tui-keys-held-during-sweep; else fail tui-keys-held-during-sweep; fi
	keys 1
	wait_for ' 1 grid *$' 1 >/dev/null
	# patching (1,666 sites on 199 tokens here) shows its progress and Esc
	# stops it
	short=$(echo "$text" | cut -c1-199)
	wait_stable
	keys :
	wait_for '^:' 23 >/dev/null
	keys "text $short" Enter
	wait_for '^199 tok' 23 >/dev/null
	wait_stable
	keys :
	wait_for '^:' 23 >/dev/null
	keys "patch $(echo "$short" | sed 's/.$/X/')" Enter
	if wait_for "running patch .*  patch [0-9]+/[0-9]+" 23; then ok tui-patch-progress; else fail tui-patch-progress; fi
	keys Escape
	if wait_for 'patch cancelled' 23; then ok tui-patch-esc-cancels; else fail tui-patch-esc-cancels; fi
	# generation shows the text growing on the status line, then the grid
	# holds the continued text
	wait_stable
	keys :
	wait_for '^:' 23 >/dev/null
	keys "generate 600 --temperature 0" Enter
	if wait_for "running generate .*  generate [0-9]+/600" 23; then ok tui-generate-live; else fail tui-generate-live; fi
	# and where each new token looked, under the selected head 0.0
	if wait_for "generate [0-9]+/600 \\[0\\.0->'.*' [01]\\.[0-9][0-9]\\]" 23; then
		ok tui-generate-glance
	else
		fail tui-generate-glance
	fi
	# its output shows when it ends (however long the 600 steps take
	# here): over the grid, or in the pager when long (q closes it); the
	# grid then holds the 799 tokens
	if ! wait_long '^generated 600 tokens'; then
		fail tui-generate-grid-grows "no output from generate"
	else
		line 24 | grep -q 'q/Esc close' && keys q
		if wait_for '^8×8 heads, 799 tokens' 2; then ok tui-generate-grid-grows; else fail tui-generate-grid-grows; fi
	fi
	keys q
	if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok tui-sweep-quit-0; else fail tui-sweep-quit-0; fi
else
	fail tui-sweep-setup
fi

# --------------------------------- role badges, on the shipped model
# the grid marks the head `heads` labels delimiter (cut to its 8-column
# cell at 80x24: "L.H deli")
root=$(cd "$(dirname "$0")/.." && pwd)
txt='First Citizen: Before we proceed any further, hear me speak.'
dl=$(ATTNSCOPE_MODELS="$root/models" "$A" shakespeare --no-db --batch -c "text $txt; heads" 2>/dev/null |
	awk '$2 == "delimiter" { print $1; exit }')
if [ -n "$dl" ]; then
	start badge 80 24 "ATTNSCOPE_MODELS='$root/models'" "--tui shakespeare --no-db -t '$txt'"
	wait_for 'MHA' 1 >/dev/null
	if wait_for "$(echo "$dl" | sed 's/\./\\./') deli"; then ok tui-role-badge; else fail tui-role-badge "$dl"; fi
	keys q
	# at 160x48 the 4x4 grid of 61 tokens and its panel use at least 80% of
	# the columns: the heads' title rules (line 3) reach the panel (the
	# height pools the queries 3x; the width leaves the keys pooled 2x)
	start wide 160 48 "ATTNSCOPE_MODELS='$root/models'" "--tui shakespeare --no-db -t '$txt'"
	wait_for '│ forward ' >/dev/null
	wait_stable
	rule=$(line 3 | sed 's/│.*//; s/ *$//' | LC_ALL=C.UTF-8 wc -m)
	panel=0
	line 3 | grep -q '│' && panel=34
	check tui-grid-uses-160-columns '[ $((rule + panel)) -ge 128 ]' \
		"grid $rule columns + panel $panel of 160: $(line 3)"
	check tui-grid-colour-legend 'line 2 | grep -q " 0 .* 1 attention weight│"' "$(line 2)"
	check tui-grid-pooling-per-axis 'line 2 | grep -q "60 tokens, pooled: max of 3 queries × 2 keys"' "$(line 2)"
	# the diff view at 160x48: MQA minus native in the head view, every
	# key of the 60 shown
	wait_stable
	keys :
	wait_for '^:' 47 >/dev/null
	keys 'attn mqa' Enter
	wait_for 'MQA' 1 >/dev/null
	keys 2
	wait_for '2 head' 1 >/dev/null
	keys d
	# (one column a key here: the sign of each change)
	if wait_for 'minus native' 2 && screen | grep -qE '^ *[0-9]+ [^ ] .*[+-]' &&
		screen | grep -q 'we␣proceed␣any␣further,␣hear␣me␣speak\.'; then
		ok tui-head-diff-160x48
	else
		fail tui-head-diff-160x48
	fi
	keys q
else
	fail tui-role-badge "heads finds no delimiter head on the shipped shakespeare model"
fi

# ------------------------------ the patch view after `patch`, shipped model
start patch 80 24 "ATTNSCOPE_MODELS='$root/models'" "--tui shakespeare --no-db -t 'First Citizen'"
wait_for 'MHA' 1 >/dev/null
keys : 'patch First Citize.' Enter
wait_for 'lines 1-' >/dev/null
keys q 7
if wait_for "patching into \"First Citize.\": clean answers ':'" 2 && wait_for '^layer 3 ' &&
	wait_for '^after 3 '; then
	ok tui-patch-view
else
	fail tui-patch-view
fi
keys q

# ------------------- a NaN (pitfall eps0): said where it began, never drawn
# RMSNorm, RoPE and `z` embedded as zeros: with epsilon 0 the first z's
# norm divides 0 by 0 (tests/cli_pitfall.sh checks the place on the CLI)
mkmodel "$tmp/models/zero.safetensors" --norm rmsnorm --pos rope --zero-char z
start nan 100 30 NO_COLOR= "--tui zero --no-db -t 'To be zz or not' -c 'pitfall eps0'"
where='first NaN at layer 0 \(norm1\), position 6'
check tui-nan-grid-says-where 'wait_for "The run has a NaN: $where\\." && ! screen | grep -q "[▀▄█]"'
check tui-nan-info-line 'wait_for "^15 tokens  $where: loss NaN  KL NaN" 29'
keys 4
check tui-nan-numbers 'wait_for "^first NaN +at layer 0 \(norm1\), position 6$" &&
	wait_for "^loss +NaN" && wait_for "^KL vs base +NaN" && ! screen | grep -qi "nan%\|-nan"'
check tui-nan-numbers-no-scores 'wait_for "entropies are NaN from there on: not shown" && ! screen | grep -q "entropy by head"'
keys 2
check tui-nan-head-view 'wait_for "2 head" 1 && wait_for "The run has a NaN: $where"'
keys r
check tui-nan-reset-draws 'wait_for "^15 tok  loss [0-9]" 29 && wait_for "KL 0\.0000" 29'
keys 1
check tui-nan-reset-grid 'wait_for "[▀▄█]" && ! screen | grep -q "The run has a NaN"'
keys q

[ "$failures" -eq 0 ]
