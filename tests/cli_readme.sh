#!/bin/sh
# README stays true: its command list is exactly the output of `help`,
# every demo it lists exists in sessions/demos, and every example output it
# shows is what the program prints.
A=${ATTNSCOPE:-./attnscope}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

COLUMNS=80 "$A" --no-db -c help >"$tmp/help" 2>"$tmp/err"
sed -n '/^<!-- help -->$/,/^<!-- \/help -->$/p' README.md | sed '1,2d;$d' | sed '$d' >"$tmp/readme"
if cmp -s "$tmp/help" "$tmp/readme"; then
	echo "ok readme-command-list"
else
	echo "FAIL readme-command-list (README's list differs from help; diff below)"
	diff "$tmp/readme" "$tmp/help" | head -n 20
fi

missing=""
for d in $(grep -o '`[a-z]*\.cmds`' README.md | tr -d '`'); do
	[ -f "sessions/demos/$d" ] || missing="$missing $d"
done
if [ -z "$missing" ]; then echo "ok readme-demos-exist"; else echo "FAIL readme-demos-exist:$missing"; fi

# Each README example (<!-- example: ARGS --> before a fenced block) is the
# program's output for ARGS, the summary line of each run left out.
n=0
grep -n '^<!-- example: .* -->$' README.md | while IFS= read -r hit; do
	line=${hit%%:*}
	args=$(echo "${hit#*:}" | sed 's/^<!-- example: //; s/ -->$//')
	n=$((n + 1))
	# the block: from the fence after the marker to the next fence
	tail -n +"$((line + 2))" README.md | sed '/^```$/,$d' >"$tmp/want"
	eval "set -- $args"
	# (trailing blank lines are not part of a README block)
	"$A" --no-db "$@" 2>&1 | grep -v '^[0-9]* tokens  ' |
		awk '{ a[NR] = $0 } END { n = NR; while (n > 0 && a[n] == "") n--; for (i = 1; i <= n; i++) print a[i] }' >"$tmp/got"
	if [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then
		echo "ok readme-example-$n ($args)"
	else
		echo "FAIL readme-example-$n ($args): README's output differs (diff below)"
		diff "$tmp/want" "$tmp/got" | head -n 20
	fi
done
