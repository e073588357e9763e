# lib-tui.sh — helpers shared by the visualizer's end-to-end tests (the
# tests/cli_tui*.sh scripts), which drive the real binary in tmux at fixed
# sizes and wait for what the screen shows, never for a fixed time.  Each
# script sources tests/lib-cli.sh, then this file, then calls tui_setup:
#
#   . "$(dirname "$0")/lib-cli.sh"
#   . "$(dirname "$0")/lib-tui.sh"
#   tui_setup NAME
#
# tui_setup NAME ends the script with "ok NAME # skipped: ..." when tmux or
# a UTF-8 locale is missing; else it exports LC_ALL (a UTF-8 locale, for
# tmux and attnscope: half blocks, CJK), makes $tmp (make_tmp NAME) with
# $tmp/models and $tmp/home, and a tmux server of its own (T runs tmux on
# it) that the EXIT trap kills.  $term is the richest terminal type the
# terminal database has (256 colours when it can).  start, keys, screen,
# line and the wait_* functions act on the session $S.  fail and check
# replace lib-cli.sh's: a failure prints the screen.
tui_setup() {
	if ! command -v tmux >/dev/null 2>&1; then
		echo "ok $1 # skipped: no tmux"
		exit 0
	fi
	utf8=
	for l in C.UTF-8 C.utf8 en_US.UTF-8 en_US.utf8; do
		if locale -a 2>/dev/null | grep -qx "$l"; then utf8=$l; break; fi
	done
	if [ -z "$utf8" ]; then
		echo "ok $1 # skipped: no UTF-8 locale"
		exit 0
	fi
	LC_ALL=$utf8
	export LC_ALL
	make_tmp "$1"
	sock=attnscope-$1-$$
	trap 'T kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
	mkdir "$tmp/models" "$tmp/home"
	term=screen
	for t in tmux-256color screen-256color xterm-256color; do
		if infocmp "$t" >/dev/null 2>&1; then term=$t; break; fi
	done
}
T() { tmux -L "$sock" -f /dev/null "$@"; }

# ok: tests/lib-cli.sh; fail and check replace its own
fail() {
	echo "FAIL $1${2:+ ($2)}"
	T capture-pane -p -t "$S" 2>/dev/null | sed 's/^/  screen: /'
	failures=$((failures + 1))
}
check() { if eval "$2"; then ok "$1"; else fail "$1" "$3"; fi; }
screen() { T capture-pane -p -t "$S" 2>/dev/null; }
screen_e() { T capture-pane -p -e -t "$S" 2>/dev/null; }
line() { screen | sed -n "${1}p"; }
# wait_until TENTHS PATTERN [ROW]: until the screen (or row ROW) matches
# an extended regular expression, for at most TENTHS tenths of a second.
wait_until() {
	i=0
	while [ $i -lt "$1" ]; do
		if [ -n "$3" ]; then line "$3"; else screen; fi | grep -Eq -- "$2" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# wait_for PATTERN [ROW]: wait_until for about 30 s, for what a key or a
# short command draws.  The deadline only bounds a failure: a loaded
# machine may take longer than an idle one, never this long.
wait_for() { wait_until 300 "$@"; }
# wait_long PATTERN [ROW]: the same for the end of a long command, whose
# time depends on the machine and on its load (at most 10 minutes).
wait_long() { wait_until 6000 "$@"; }
# wait_stable: until two captures 0.2 s apart agree (a redraw finished).
wait_stable() {
	prev=$(screen_e)
	i=0
	while [ $i -lt 50 ]; do
		sleep 0.2
		cur=$(screen_e)
		[ "$cur" = "$prev" ] && return 0
		prev=$cur
		i=$((i + 1))
	done
	return 1
}
# wait_file FILE: until FILE is there and not empty (about 30 s).
wait_file() {
	i=0
	while [ $i -lt 300 ]; do
		[ -s "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
keys() { T send-keys -t "$S" "$@"; }
# Timings differ from one capture to the next.
mask_ms() { sed 's/[0-9][0-9.]* ms/# ms/g'; }
# The heatmap rows of the grid (no title rules), with colours.
heat_rows() { screen_e | sed -n "3,$(($1 - 2))p" | grep -v '─'; }
# The KL figure of the info line.
kl() { screen | sed -n 's/.* KL \([0-9.]*\) .*/\1/p' | tail -n 1; }
alt_on() { T display -p -t "$S" '#{alternate_on}'; }

# start NAME W H ENV ARGS: attnscope with the environment assignments ENV
# and the arguments ARGS (shell words) in a fresh W x H session, through a
# shell that stays: it records the exit status and `stty -a` when
# attnscope ends.  $tmp/pid holds attnscope's process id.
S=
start() {
	old=$S
	S=$1
	rm -f "$tmp/status" "$tmp/stty" "$tmp/pid"
	printf '%s\n' "echo \$\$ >'$tmp/pid'" \
		"exec env HOME='$tmp/home' TERM=$term $4 '$A' $5" >"$tmp/run-$S.sh"
	T new-session -d -s "$S" -x "$2" -y "$3" \
		"cd '$tmp'; sh '$tmp/run-$S.sh'; echo \$? >'$tmp/status'; stty -a >'$tmp/stty' 2>&1; sleep 60" \
		>/dev/null
	[ -n "$old" ] && T kill-session -t "$old" >/dev/null 2>&1
}

