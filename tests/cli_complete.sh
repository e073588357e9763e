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
. "$(dirname "$0")/lib-tui.sh"
tui_setup complete
mkdir "$tmp/figures"
mkmodel "$tmp/models/shakespeare.safetensors" # 2 layers of 4 heads

# ere TEXT: TEXT as an extended regular expression, its trailing blank
# dropped (tmux drops trailing blanks)
ere() { printf '%s' "$1" | sed 's/ $//; s/[].[*^$()+?{}|\\]/\\&/g'; }
# at_col PREFIX LINE: until the screen shows PREFIX LINE with the cursor
# just after LINE's last character (a blank counts).
at_col() {
	want_x=$(printf '%s%s' "$1" "$2" | wc -m)
	wait_for "^$(ere "$1$2")\$" || return 1
	i=0
	while [ $i -lt 100 ]; do
		[ "$(T display -p -t "$S" '#{cursor_x}')" -eq "$want_x" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
start complete 100 30 "ATTNSCOPE_MODELS='$tmp/models'" "--no-db shakespeare"

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
