#!/bin/sh
# The architecture holds, read from the object files' symbols (nm):
#   - src/ is layered: a module uses only modules of its own folder or of
#     the folders before it, in the order base, text, engine, formats, train,
#     analysis, session, store, faces;
#   - modules depend one way: no two use symbols of each other, except the
#     command table and its faces (cmd.c, cmd-*.c, the REPL and the
#     visualizer), which call each other by design.
# Prints "ok layers" or "FAIL layers" with the offending pairs.
#
#   sh tests/check-layers.sh [BUILD_DIR]
dir=${1:-build}
layers="base text engine formats train analysis session store faces"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
rank=0
for layer in $layers; do
	for o in "$dir/$layer"/*.o; do
		[ -e "$o" ] || continue
		b=$(basename "$o" .o)
		echo "$b $rank $layer" >>"$tmp/rank"
		[ "$b" = main ] && continue
		nm -g --defined-only "$o" | awk -v b="$b" 'NF >= 3 { print $3, b }' >>"$tmp/def"
		nm -u "$o" | awk -v b="$b" '{ print $2, b }' >>"$tmp/use"
		n=$((n + 1))
	done
	rank=$((rank + 1))
done
if [ "$n" -lt 10 ]; then
	echo "FAIL layers (only $n object files in $dir/{$(echo $layers | tr ' ' ,)})"
	exit 1
fi
sort -u "$tmp/def" >"$tmp/d"
sort -u "$tmp/use" >"$tmp/u"
join "$tmp/u" "$tmp/d" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/deps"
# upward: a module that uses one of a later folder
up=$(awk 'NR == FNR { r[$1] = $2; f[$1] = $3; next }
	r[$2] > r[$1] { print $1 " (" f[$1] ") -> " $2 " (" f[$2] ")" }' "$tmp/rank" "$tmp/deps")
pairs=$(awk '{ e[$1 " " $2] = 1 }
	END { for (k in e) { split(k, a, " "); if ((a[2] " " a[1]) in e && a[1] < a[2]) print a[1] " <-> " a[2] } }' \
	"$tmp/deps" | grep -Ev '^(cmd(-[a-z]+)?|repl|tui) <-> (cmd(-[a-z]+)?|repl|tui)$' | sort)
if [ -z "$up$pairs" ]; then
	echo "ok layers ($n modules, one-way, in the order $layers)"
	exit 0
fi
echo "FAIL layers:"
[ -n "$up" ] && echo "$up" | sed 's/^/  uses a later folder: /'
[ -n "$pairs" ] && echo "$pairs" | sed 's/^/  use each other: /'
exit 1
