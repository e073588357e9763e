#!/bin/sh
# End-to-end tests of the interactive prompt, driven through tmux at a fixed
# 100x30 size: a command, tab completion, the prompt naming the variant,
# a pasted text with a line break, Ctrl-C at the prompt and during a command, errors, history, quit and
# Ctrl-D.  Prints "ok NAME" or "FAIL NAME" per check; skips when tmux is
# missing.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_repl.sh
. "$(dirname "$0")/lib-cli.sh"

if ! command -v tmux >/dev/null 2>&1; then
	echo "ok repl # skipped: no tmux"
	exit 0
fi

make_tmp repl
sock=attnscope-test-$$
T() { tmux -L "$sock" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mkdir "$tmp/models" "$tmp/home"
mkmodel "$tmp/models/shakespeare.safetensors"
TERM=${TERM:-xterm}
[ "$TERM" = dumb ] && TERM=xterm
export TERM

# ok: tests/lib-cli.sh; fail is this script's own
fail() {
	echo "FAIL $1"
	T capture-pane -p -t "$S" 2>/dev/null | grep -v '^$' | tail -n 12 | sed 's/^/  screen: /'
	failures=$((failures + 1))
}
screen() { T capture-pane -p -t "$S" 2>/dev/null; }
# wait_for PATTERN: until a line of the screen matches (about 10 s; at
# once when the session is gone).
wait_for() {
	i=0
	while [ $i -lt 100 ]; do
		screen | grep -q -- "$1" && return 0
		T has-session -t "$S" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# wait_file FILE: until FILE exists (about 10 s).
wait_file() {
	i=0
	while [ $i -lt 100 ]; do
		[ -s "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# expect NAME PATTERN: ok when the screen shows PATTERN.
expect() { if wait_for "$2"; then ok "$1"; else fail "$1"; fi; }
# last_line: the last non-empty line of the screen.
last_line() { screen | grep -v '^$' | tail -n 1; }
# start: runs attnscope in a fresh 100x30 session (the previous one, if
# any, is closed once the new one keeps the server alive); the shell writes
# the exit status to $tmp/status when attnscope ends.
S=
n_sessions=0
start() {
	rm -f "$tmp/status"
	old=$S
	n_sessions=$((n_sessions + 1))
	S=s$n_sessions
	cmd="cd '$tmp' && HOME='$tmp/home' XDG_DATA_HOME='$tmp/home/data' '$A' shakespeare; echo \$? >'$tmp/status'; sleep 60"
	T new-session -d -s "$S" -x 100 -y 30 "$cmd" 2>/dev/null ||
		{ sleep 0.5; T new-session -d -s "$S" -x 100 -y 30 "$cmd"; }
	[ -n "$old" ] && T kill-session -t "$old" >/dev/null 2>&1
}
keys() { T send-keys -t "$S" "$@"; }

start
expect repl-prompt '^shakespeare> *$'

keys 'text hello there' Enter
expect repl-command '^11 tokens '
wait_for '^shakespeare> *$' >/dev/null # the next prompt, before typing on

# tab completion: "att" completes to the command, "mq" to its argument
keys 'att' Tab
expect repl-complete-command '^shakespeare> attn *$'
keys 'mq' Tab
expect repl-complete-argument '^shakespeare> attn mqa *$'
keys Enter
expect repl-prompt-variant '^shakespeare \[mqa\]> *$'

# Ctrl-C at the prompt drops the line and gives a fresh prompt
keys 'bogus-partial'
wait_for 'bogus-partial' >/dev/null
keys C-c
if wait_for '^shakespeare \[mqa\]> bogus-partial' && i=0 &&
	while [ $i -lt 50 ] && [ "$(last_line)" != 'shakespeare [mqa]>' ]; do sleep 0.1; i=$((i + 1)); done &&
	[ "$(last_line)" = 'shakespeare [mqa]>' ]; then
	ok repl-ctrl-c-prompt
else
	fail repl-ctrl-c-prompt
fi
keys 'echo still-here' Enter
expect repl-after-ctrl-c '^still-here$'
if screen | grep -q 'bogus-partial (did'; then fail repl-ctrl-c-line-dropped; else ok repl-ctrl-c-line-dropped; fi

# a pasted block (bracketed paste) that starts with `text` is one text with
# its line breaks; any other block runs line by line
printf 'text ab\ncd' >"$tmp/paste1"
T load-buffer -b p1 "$tmp/paste1"
T paste-buffer -p -b p1 -t "$S"
keys Enter
expect repl-paste-text-one '^5 tokens '
printf 'echo one\necho two' >"$tmp/paste2"
T load-buffer -b p2 "$tmp/paste2"
T paste-buffer -p -b p2 -t "$S"
keys Enter
if wait_for '^one$' && wait_for '^two$'; then ok repl-paste-commands; else fail repl-paste-commands; fi

# errors: one line, "error: ..." with the suggestion
keys 'halp' Enter
expect repl-error-did-you-mean '^error: unknown command: halp (did you mean: help?)$'
keys 'attn' Enter
expect repl-error-usage '^error: usage: attn '

# Ctrl-C during a command (pause waits for Enter at a terminal) sets the
# cancel flag and returns to the prompt
keys 'pause' Enter
wait_for 'press Enter' >/dev/null
keys C-c
expect repl-ctrl-c-command '^interrupted$'
keys 'echo back-again' Enter
expect repl-after-interrupt '^back-again$'

keys 'quit' Enter
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok repl-quit-status-0; else fail repl-quit-status-0; fi
if grep -q '^text hello there$' "$tmp/home/data/attnscope/history" 2>/dev/null; then
	ok repl-history-file
else
	fail repl-history-file
fi

# Ctrl-D on an empty line leaves with status 0; history came back
start
wait_for '^shakespeare> *$' >/dev/null
keys Up
expect repl-history-recalled '^shakespeare> quit$'
keys C-u C-d
if wait_file "$tmp/status" && [ "$(cat "$tmp/status")" = 0 ]; then ok repl-ctrl-d-status-0; else fail repl-ctrl-d-status-0; fi

# heatmaps at the prompt: the 256-colour ramp on a terminal that has it,
# shading characters with NO_COLOR
for nc in "" 1; do
	S=colour$nc
	T new-session -d -s "$S" -x 100 -y 30 \
		"cd '$tmp' && env HOME='$tmp/home' TERM=xterm-256color NO_COLOR=$nc '$A' shakespeare --no-db; sleep 60"
	wait_for '^shakespeare> *$' >/dev/null
	keys 'text To be' Enter 'show head 0.0' Enter
	wait_for '^rows: query tokens' >/dev/null
	coloured=0
	T capture-pane -p -e -t "$S" | grep -q "48;5;" && coloured=1
	if [ -z "$nc" ]; then
		if [ $coloured = 1 ]; then ok repl-heatmap-colour; else fail repl-heatmap-colour; fi
	elif [ $coloured = 0 ] && screen | grep -q "█"; then
		ok repl-heatmap-no-colour
	else
		fail repl-heatmap-no-colour
	fi
	T kill-session -t "$S" >/dev/null 2>&1
done

# heads at a terminal narrower than its full table: the main scores, and
# the prose wrapped between words within the width
S=narrow
T new-session -d -s "$S" -x 80 -y 40 "cd '$tmp' && env HOME='$tmp/home' '$A' shakespeare --db '$tmp/narrow.db'; sleep 60"
wait_for '^shakespeare> *$' >/dev/null
keys 'text To be, or not to be' Enter 'heads' Enter
if wait_for '^head   role            entropy    max   prev   sink  delim  offset  induct$' &&
	wait_for 'help heads defines every score' &&
	! screen | grep -qE '^[a-z]+ > [0-9.]+ at offset K;$|^ffw'; then
	ok repl-heads-fits-80
else
	fail repl-heads-fits-80
fi
keys 'measurements' Enter
if wait_for '^    id variant          tokens      loss     dloss       KL  top-1  text$' &&
	wait_for '^     1 native  .* To be, o\.\.\.$'; then
	ok repl-measurements-fit-80
else
	fail repl-measurements-fit-80
fi
keys 'compare variants' Enter
if wait_for '^variant  *loss  *KL  *top-1  *KV cache$' && wait_for 'Conversions use the same weights' &&
	! screen | grep -q '^raining'; then
	ok repl-compare-fits-80
else
	fail repl-compare-fits-80
fi
T kill-session -t "$S" >/dev/null 2>&1

# output taller than the screen goes through the pager ($ATTNSCOPE_PAGER,
# else $PAGER, else less -FRX); shorter output and piped output do not
printf 'cat >"%s/paged"\necho "(paged $(wc -l <"%s/paged") lines)"\n' "$tmp" "$tmp" >"$tmp/pager.sh"
S=pager
T new-session -d -s "$S" -x 100 -y 30 "cd '$tmp' && env HOME='$tmp/home' ATTNSCOPE_PAGER='sh $tmp/pager.sh' '$A' shakespeare --no-db; sleep 60"
wait_for '^shakespeare> *$' >/dev/null
keys 'help' Enter
if wait_for '^(paged [0-9]* lines)' && grep -q '^  load MODEL' "$tmp/paged" &&
	[ "$(wc -l <"$tmp/paged")" -gt 30 ] && ! screen | grep -q '^  load MODEL'; then
	ok repl-pager-long-output
else
	fail repl-pager-long-output
fi
rm -f "$tmp/paged"
keys 'kv' Enter
if wait_for '^KV cache' && [ ! -e "$tmp/paged" ]; then ok repl-pager-not-for-short; else fail repl-pager-not-for-short; fi
T kill-session -t "$S" >/dev/null 2>&1
if command -v less >/dev/null 2>&1; then
	S=less
	T new-session -d -s "$S" -x 100 -y 30 "cd '$tmp' && env -u PAGER -u ATTNSCOPE_PAGER HOME='$tmp/home' '$A' shakespeare --no-db; sleep 60"
	wait_for '^shakespeare> *$' >/dev/null
	keys 'help' Enter
	if wait_for '^  load MODEL' && ! screen | grep -q '^shakespeare> *$'; then
		keys q
		if wait_for '^shakespeare> *$'; then ok repl-pager-less-q-returns; else fail repl-pager-less-q-returns; fi
	else
		fail repl-pager-less-shows-help
	fi
	T kill-session -t "$S" >/dev/null 2>&1
else
	ok "repl-pager-less # skipped: no less"
fi

# beside: two texts side by side fit the terminal at 80 and at 160 columns
for width in 80 160; do
	S=beside$width
	T new-session -d -s "$S" -x $width -y 75 "cd '$tmp' && env HOME='$tmp/home' ATTNSCOPE_PAGER=cat '$A' shakespeare --no-db; sleep 60"
	wait_for '^shakespeare> *$' >/dev/null
	keys 'text First Citizen: Before we proceed any further, hear me' Enter
	wait_for '^57 tokens' >/dev/null
	keys 'beside 0.1 text First Citizen: Before we proceed any further, hear ye' Enter
	# both titles and both maps' last rows on one line each: nothing wrapped
	if wait_for '^rows: query tokens' && screen | grep -q '^head 0.1, the current text .*head 0.1, the other text' &&
		screen | grep -qE '^ *52( e)? │.*│ +52( e)? │.*│ *$' &&
		! screen | sed 's/ *$//' | while IFS= read -r l; do
			[ "$(printf '%s' "$l" | LC_ALL=C.UTF-8 wc -m)" -gt $width ] && echo long
		done | grep -q long; then
		ok repl-beside-fits-$width
	else
		fail repl-beside-fits-$width
	fi
	T kill-session -t "$S" >/dev/null 2>&1
done

# a tokenizer.json whose Split regex backtracks catastrophically: that text
# is refused in one line and the session goes on with the same model and
# tokenizer (not "fatal: PCRE2 match failed", exit 134)
mkdir "$tmp/bt"
printf '{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated", "invert": false}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}\n' >"$tmp/bt.json"
if "$TOOLS/tool_mkhf" "$tmp/bt" "$tmp/bt-ref.safetensors" "$tmp/bt.json" >/dev/null 2>&1; then
	S=backtrack
	T new-session -d -s "$S" -x 100 -y 30 "cd '$tmp' && env HOME='$tmp/home' '$A' bt --no-db; echo \$? >'$tmp/status'; sleep 60"
	wait_for '^bt> *$' >/dev/null
	keys "text $(printf 'a%.0s' $(seq 60))b" Enter
	expect repl-regex-limit-refused 'pre-tokenizer regex hit its match limit on this text'
	keys 'text abab' Enter
	expect repl-regex-limit-goes-on '^2 tokens '
	T kill-session -t "$S" >/dev/null 2>&1
else
	fail "repl-regex-limit setup (tool_mkhf)"
fi

[ "$failures" -eq 0 ]
