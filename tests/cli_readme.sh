#!/bin/sh
# README and docs/ stay true: the command list in docs/commands.md is exactly
# the output of `help`, every demo they name exists in sessions/demos, every
# example output they show is what the program prints, and README's screen
# is what the visualizer draws.
A=${ATTNSCOPE:-./attnscope}
tmp=$(mktemp -d)
sock=attnscope-readme-$$
trap 'tmux -L "$sock" kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
docs="README.md docs/*.md"

COLUMNS=80 "$A" --no-db -c help >"$tmp/help" 2>"$tmp/err"
sed -n '/^<!-- help -->$/,/^<!-- \/help -->$/p' docs/commands.md | sed '1,2d;$d' | sed '$d' >"$tmp/readme"
if [ -s "$tmp/readme" ] && cmp -s "$tmp/help" "$tmp/readme"; then
	echo "ok readme-command-list"
else
	echo "FAIL readme-command-list (docs/commands.md's list differs from help; diff below)"
	diff "$tmp/readme" "$tmp/help" | head -n 20
fi

# shellcheck disable=SC2086 # $docs is a list of files and a glob
demos=$(grep -ho '`[a-z]*\.cmds`' $docs | tr -d '`' | sort -u)
missing=""
for d in $demos; do
	[ -f "sessions/demos/$d" ] || missing="$missing $d"
done
if [ -z "$demos" ]; then
	echo "FAIL readme-demos-exist: README and docs/ name no demo"
elif [ -z "$missing" ]; then
	echo "ok readme-demos-exist ($(echo $demos | wc -w) demos)"
else
	echo "FAIL readme-demos-exist:$missing"
fi

# Each example (<!-- example: ARGS --> before a fenced block) in README or a
# file of docs/ is the program's output for ARGS, the summary line of each
# run left out.
# shellcheck disable=SC2086
grep -n '^<!-- example: .* -->$' $docs >"$tmp/hits"
if [ ! -s "$tmp/hits" ]; then
	echo "FAIL readme-examples: no <!-- example: ARGS --> block in README.md or docs/*.md"
fi
n=0
while IFS= read -r hit; do
	file=${hit%%:*}
	hit=${hit#*:}
	line=${hit%%:*}
	args=$(echo "${hit#*:}" | sed 's/^<!-- example: //; s/ -->$//')
	n=$((n + 1))
	# the block: from the fence after the marker to the next fence
	tail -n +"$((line + 2))" "$file" | sed '/^```$/,$d' >"$tmp/want"
	eval "set -- $args"
	# (trailing blank lines are not part of a README block)
	"$A" --no-db "$@" 2>&1 | grep -v '^[0-9]* tokens  ' |
		awk '{ a[NR] = $0 } END { n = NR; while (n > 0 && a[n] == "") n--; for (i = 1; i <= n; i++) print a[i] }' >"$tmp/got"
	if [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then
		echo "ok readme-example-$n ($file: $args)"
	else
		echo "FAIL readme-example-$n ($file: $args): the file's output differs (diff below)"
		diff "$tmp/want" "$tmp/got" | head -n 20
	fi
done <"$tmp/hits"

# README's screen (<!-- screen: ARGS --> before a fenced block) is what the
# visualizer draws for ARGS at 80x24, but for the forward time; skipped
# without tmux or a UTF-8 locale.
grep -n '^<!-- screen: .* -->$' README.md >"$tmp/screens"
utf8=
for l in C.UTF-8 C.utf8 en_US.UTF-8 en_US.utf8; do
	if locale -a 2>/dev/null | grep -qx "$l"; then utf8=$l; break; fi
done
if [ ! -s "$tmp/screens" ]; then
	echo "FAIL readme-screen: no <!-- screen: ARGS --> block in README.md"
elif ! command -v tmux >/dev/null 2>&1 || [ -z "$utf8" ]; then
	echo "ok readme-screen # skipped: no tmux or no UTF-8 locale"
else
	abs=$(cd "$(dirname "$A")" && pwd)/$(basename "$A")
	n=0
	while IFS= read -r hit; do
		line=${hit%%:*}
		args=$(echo "${hit#*:}" | sed 's/^<!-- screen: //; s/ -->$//')
		n=$((n + 1))
		tail -n +"$((line + 2))" README.md | sed '/^```$/,$d' |
			sed 's/fwd [0-9.]* ms/fwd - ms/' >"$tmp/want"
		LC_ALL=$utf8 tmux -L "$sock" -f /dev/null new-session -d -x 80 -y 24 \
			"LC_ALL=$utf8 exec '$abs' --no-db $args"
		i=0
		while [ $i -lt 40 ]; do
			sleep 0.25
			tmux -L "$sock" capture-pane -p >"$tmp/got" 2>/dev/null
			grep -q '^loss ' "$tmp/got" && break
			i=$((i + 1))
		done
		sleep 0.5
		tmux -L "$sock" capture-pane -p 2>/dev/null | sed 's/ *$//; s/fwd [0-9.]* ms/fwd - ms/' >"$tmp/got"
		tmux -L "$sock" kill-server >/dev/null 2>&1
		if [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then
			echo "ok readme-screen-$n ($args)"
		else
			echo "FAIL readme-screen-$n ($args): the visualizer draws another screen (diff below)"
			diff "$tmp/want" "$tmp/got" | head -n 20
		fi
	done <"$tmp/screens"
fi
