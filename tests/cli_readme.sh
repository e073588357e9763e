#!/bin/sh
# README stays true: its command list is exactly the output of `help`, and
# every demo it lists exists in sessions/demos.
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
