#!/bin/sh
# The headers' lists of table members are the tables' own: every model
# format in loader.c's formats[] is named in loader.h's opening comment,
# and every visualizer view (a `.name` in a src/faces/tui-*.c view mode)
# is in tui_views[] (tui-views.c) and named, with its file, in
# tui-view.h's view modes comment.  Prints "ok comments" or one FAIL line
# per missing name.
#
#   sh tests/check-comments.sh
cd "$(dirname "$0")/.." || exit 1
bad=0
n=0
for f in src/formats/loader*.c src/formats/checkpoint.c; do
	# a format is `const struct model_format format_X = { "NAME", ...`
	for name in $(grep -A1 '^const struct model_format format_' "$f" | grep -o '^	"[a-z0-9-]*"' | tr -d '\t"'); do
		n=$((n + 1))
		grep -q "^ \*   \"$name\"" include/loader.h || { echo "FAIL comments: format \"$name\" ($f) is not in include/loader.h's list"; bad=1; }
	done
done
[ "$n" -gt 0 ] || { echo "FAIL comments: found no model format to check"; bad=1; }
v=0
modes=$(sed -n '/A view of the visualizer/,/\*\//p' include/tui-view.h)
for f in src/faces/tui-*.c; do
	name=$(sed -n 's/^	\.name = "\([a-z]*\)",$/\1/p' "$f" | head -n 1)
	[ -n "$name" ] || continue
	v=$((v + 1))
	mode=$(sed -n 's/^const struct tui_view_mode \(tui_[a-z]*_view\) = {$/\1/p' "$f")
	[ -n "$mode" ] && grep -q "^	&$mode,$" src/faces/tui-views.c ||
		{ echo "FAIL comments: view \"$name\" ($(basename "$f")) is not in tui_views[] (tui-views.c)"; bad=1; }
	echo "$modes" | grep -q "\"$name\"" ||
		{ echo "FAIL comments: view \"$name\" is not in tui-view.h's view modes comment"; bad=1; }
	echo "$modes" | grep -q "$(basename "$f")" ||
		{ echo "FAIL comments: $(basename "$f") is not in tui-view.h's view modes comment"; bad=1; }
done
[ "$v" -gt 0 ] || { echo "FAIL comments: found no view to check"; bad=1; }
# every export (a row `{ "NAME", ` of export_kinds[] in export-kinds.c) is
# named in export.h's list of what can be exported and in the export
# command's usage line (cmd-show.c)
x=0
for name in $(sed -n '/^const struct export_kind export_kinds\[\] = {/,/^};/p' src/faces/export-kinds.c |
	sed -n 's/^	{ "\([a-z]*\)",.*/\1/p'); do
	x=$((x + 1))
	sed -n '/What can be exported/,/\*\//p' include/export.h | grep -qE "(^|[ (])$name([ ,.)]|\$)" ||
		{ echo "FAIL comments: export \"$name\" is not in include/export.h's list"; bad=1; }
	sed -n '/^	.name = "export",/,/^};/p' src/faces/cmd-show.c | grep '^	.usage = ' | grep -qw "$name" ||
		{ echo "FAIL comments: export \"$name\" is not in the export command's usage"; bad=1; }
done
[ "$x" -gt 0 ] || { echo "FAIL comments: found no export to check"; bad=1; }
[ $bad = 0 ] && echo "ok comments ($n formats, $v views, $x exports)"
exit $bad
