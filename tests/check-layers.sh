#!/bin/sh
# Modules depend one way: no two object files of the library use symbols
# of each other (read from nm).  The command table and its faces (cmd.c,
# cmd-*.c, the REPL and the visualizer) call each other by design and are
# the one exception.  Prints "ok layers" or "FAIL layers" with the pairs.
#
#   sh tests/check-layers.sh [BUILD_DIR]
dir=${1:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
for o in "$dir"/*.o; do
	b=$(basename "$o" .o)
	[ "$b" = main ] && continue
	nm -g --defined-only "$o" | awk -v b="$b" 'NF >= 3 { print $3, b }' >>"$tmp/def"
	nm -u "$o" | awk -v b="$b" '{ print $2, b }' >>"$tmp/use"
	n=$((n + 1))
done
if [ "$n" -lt 10 ]; then
	echo "FAIL layers (only $n object files in $dir)"
	exit 1
fi
sort -u "$tmp/def" >"$tmp/d"
sort -u "$tmp/use" >"$tmp/u"
pairs=$(join "$tmp/u" "$tmp/d" | awk '$2 != $3 { e[$2 " " $3] = 1 }
	END { for (k in e) { split(k, a, " "); if ((a[2] " " a[1]) in e && a[1] < a[2]) print a[1] " <-> " a[2] } }' |
	grep -Ev '^(cmd(-[a-z]+)?|repl|tui) <-> (cmd(-[a-z]+)?|repl|tui)$' | sort)
if [ -z "$pairs" ]; then
	echo "ok layers ($n modules, one-way)"
else
	echo "FAIL layers: modules that use each other:"
	echo "$pairs" | sed 's/^/  /'
	exit 1
fi
