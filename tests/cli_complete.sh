#!/bin/sh
# Tab completes the same way at the REPL's prompt and at the visualizer's
# `:` prompt (both call cmd_complete): each line below is typed into both,
# followed by Tab, and both must show the same completed line — a command,
# a command's word, a model name, an option after "-", an export format, a
# directory (a '/' and no blank after it), a head id of the loaded model, a
# lab experiment and a role name.  Driven through tmux at 100x30.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_complete.sh
. "$(dirname "$0")/lib-cli.sh"

if ! command -v tmux >/dev/null 2>&1; then
	echo "ok complete # skipped: no tmux"
	exit 0
fi

make_tmp complete
sock=attnscope-complete-$$
T() { tmux -L "$sock" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mkdir "$tmp/models" "$tmp/home" "$tmp/figures"
mkmodel "$tmp/models/shakespeare.safetensors" # 2 layers of 4 heads
TERM=${TERM:-xterm}
[ "$TERM" = dumb ] && TERM=xterm
export TERM

fail() {
	echo "FAIL $1${2:+ ($2)}"
	T capture-pane -p -t "$S" 2>/dev/null | grep -v '^$' | tail -n 6 | sed 's/^/  screen: /'
	failures=$((failures + 1))
}
screen() { T capture-pane -p -t "$S" 2>/dev/null; }
# wait_for PATTERN: until a line of the screen matches (about 30 s; the
# deadline only bounds a failure).
wait_for() {
	i=0
	while [ $i -lt 300 ]; do
		screen | grep -q -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
keys() { T send-keys -t "$S" "$@"; }
# at_col PREFIX LINE: until the screen shows PREFIX LINE (tmux drops its
# trailing blanks) with the cursor just after LINE's last character.
at_col() {
	want_x=$(printf '%s%s' "$1" "$2" | wc -m)
	wait_for "^$(bre "$1$2")\$" || return 1
	i=0
	while [ $i -lt 100 ]; do
		[ "$(T display -p -t "$S" '#{cursor_x}')" -eq "$want_x" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
S=complete
T new-session -d -s "$S" -x 100 -y 30 \
	"cd '$tmp' && HOME='$tmp/home' ATTNSCOPE_MODELS='$tmp/models' '$A' --no-db shakespeare; sleep 60"

# TYPED|COMPLETED: what is typed before Tab, and the line after it
cases='att|attn 
attn mq|attn mqa 
load shak|load shakespeare 
export grid --form|export grid --format 
export grid --format sv|export grid --format svg 
export grid --out fig|export grid --out figures/
ablate 1.3|ablate 1.3 
lab resi|lab residual 
show head previous-t|show head previous-token '

# as a basic regular expression, its trailing blank dropped
bre() { printf '%s' "$1" | sed 's/ $//; s/[].[*^$\\/]/\\&/g'; }

wait_for '^shakespeare> *$' || fail complete-repl-start
keys 'text First Citizen' Enter
wait_for '^shakespeare> *$' >/dev/null
while IFS='|' read -r typed want; do
	keys -l "$typed"
	keys Tab
	if at_col 'shakespeare> ' "$want"; then
		ok "complete-repl: $typed"
	else
		fail "complete-repl: $typed" "wanted \"$want\""
	fi
	keys C-e C-u
	wait_for '^shakespeare> *$' >/dev/null
done <<EOF
$cases
EOF

keys view Enter
wait_for 'Tab view' || fail complete-tui-start
while IFS='|' read -r typed want; do
	keys :
	wait_for '^: *$' >/dev/null
	keys -l "$typed"
	keys Tab
	if at_col : "$want"; then
		ok "complete-tui: $typed"
	else
		fail "complete-tui: $typed" "wanted \"$want\""
	fi
	keys Escape
	wait_for 'Tab view' >/dev/null
done <<EOF
$cases
EOF
exit $((failures > 0))
