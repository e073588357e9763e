#!/bin/sh
# Golden tests of the exports, through the real binary: a seeded random model
# made by tool_mkmodel, a command file run in batch mode, and every export it
# writes compared byte for byte with tests/golden/.  Also: exports reproduce
# on a re-run, -c and standard input give the same bytes as --out, the kv
# arithmetic of the design (10 GiB / 1.25 GiB / 160 MiB), and one-line
# errors.  Prints "ok NAME" or "FAIL NAME" per check; exit status 1 when any
# check failed.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_export.sh
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_export.sh --update
#
# --update rewrites tests/golden/ from this build (review `git diff` after).
# CSV and JSON hold every float digit: when another CPU or BLAS kernel rounds
# differently, a file that differs only in numbers within 1e-5 is reported
# "ok ... (within 1e-5)" rather than failed.
root=$(cd "$(dirname "$0")/.." && pwd)
golden=$root/tests/golden
. "$(dirname "$0")/lib-cli.sh"
update=0
[ "$1" = "--update" ] && update=1

make_tmp export
mkdir "$tmp/run1" "$tmp/run2" "$tmp/home"
HOME=$tmp/home
export HOME
cd "$tmp" || exit 1
mkmodel "$tmp/golden.safetensors" --seed 7
rc=0

# run, ok, fail: tests/lib-cli.sh

# numeq A B: same tokens, numbers equal within 1e-5 (CSV and JSON).
numeq() {
	tr ',[]{}:' '\n\n\n\n\n\n' <"$1" >"$tmp/na"
	tr ',[]{}:' '\n\n\n\n\n\n' <"$2" >"$tmp/nb"
	[ "$(wc -l <"$tmp/na")" = "$(wc -l <"$tmp/nb")" ] || return 1
	paste -d '\t' "$tmp/na" "$tmp/nb" | awk -F '\t' '
		function isnum(s) { return s ~ /^-?[0-9][0-9.]*([eE][-+]?[0-9]+)?$/ }
		$1 == $2 { next }
		isnum($1) && isnum($2) && $1 - $2 <= 1e-5 && $2 - $1 <= 1e-5 { next }
		{ bad++ }
		END { exit bad > 0 }'
}

# The demo every golden file comes from.  Keep tests/golden/README in step.
text='To be, or not to be: that is the question.'
cat >golden.cmds <<EOF
# attnscope golden export script (tests/cli_export.sh)
text $text
ablate 1.3
show head 0.1
export heatmap 0.1 --format txt --out heatmap-0.1.txt
export heatmap 0.1 --format csv --out heatmap-0.1.csv
export heatmap 0.1 --format json --out heatmap-0.1.json
export heatmap 0.1 --format svg --out heatmap-0.1.svg
export grid --format txt --out grid.txt
export lens --format txt --out lens.txt
export lens --format csv --out lens.csv
export lens --format json --out lens.json
export lens --format svg --out lens.svg
patch To be, or not to be: that is the answer!!!
export patch --format txt --out patch.txt
export patch --format csv --out patch.csv
export patch --format json --out patch.json
export patch --format svg --out patch.svg
EOF
files="heatmap-0.1.txt heatmap-0.1.csv heatmap-0.1.json heatmap-0.1.svg grid.txt
lens.txt lens.csv lens.json lens.svg patch.txt patch.csv patch.json patch.svg"

# --------------------------------------------------------- batch script
(cd run1 && run --no-db ../golden.safetensors -f ../golden.cmds </dev/null)
rc=$?
if [ $rc = 0 ]; then ok "script runs"; else fail "script runs"; fi

if [ $update = 1 ]; then
	mkdir -p "$golden"
	for f in $files; do
		cp "run1/$f" "$golden/$f" && echo "updated tests/golden/$f"
	done
	exit 0
fi

for f in $files; do
	g=$golden/$f
	if [ ! -f "run1/$f" ]; then
		fail "golden $f" "not written"
	elif [ ! -f "$g" ]; then
		fail "golden $f" "tests/golden/$f is missing (sh tests/cli_export.sh --update)"
	elif cmp -s "$g" "run1/$f"; then
		ok "golden $f"
	else
		case $f in
		*.csv | *.json)
			if numeq "$g" "run1/$f"; then
				ok "golden $f (within 1e-5, not byte-identical: another CPU or BLAS?)"
				continue
			fi ;;
		esac
		diff "$g" "run1/$f" | head -n 6 | cut -c 1-160 >"$tmp/out"
		: >"$tmp/err"
		fail "golden $f" "differs from tests/golden/$f (first lines of diff as stdout)"
	fi
done

# ------------------------------------------------------------- re-runs
(cd run2 && run --no-db ../golden.safetensors -f ../golden.cmds </dev/null)
same=1
for f in $files; do
	cmp -s "run1/$f" "run2/$f" || same=0
done
if [ $same = 1 ]; then ok "re-run byte-identical"; else fail "re-run byte-identical"; fi

# ------------------------------------------- lens and patch: the numbers
# the exports hold what `lens` and `patch` print (to their 3 decimals), and
# the last depth of the lens is the model's own output: its top token is
# the prediction at every position
run --no-db golden.safetensors -c "text $text; ablate 1.3; lens; patch To be, or not to be: that is the answer!!!"
p_last=$(sed -n "s/^the model's prediction: .* (p \([0-9.]*\))$/\1/p" "$tmp/out")
L=2 T=42
# csv FILE: the rows of FILE with fields split at commas outside quotes,
# joined by tabs and unquoted (labels may hold commas and quotes)
csv() {
	awk '{
		out = ""; f = ""; q = 0
		for (i = 1; i <= length($0); i++) {
			c = substr($0, i, 1)
			if (q && c == "\"" && substr($0, i + 1, 1) == "\"") { f = f c; i++ }
			else if (c == "\"") q = !q
			else if (!q && c == ",") { out = out f "\t"; f = "" }
			else f = f c
		}
		print out f
	}' "$1"
}
csv run1/lens.csv >lens.tsv
p_csv=$(awk -F '\t' -v d="after $((L - 1))" -v t=$((T - 1)) '$1 == d && $2 == t { printf "%.3f", $5 }' lens.tsv)
rows=$(($(wc -l <lens.tsv) - 1))
own=$(awk -F '\t' -v d="after $((L - 1))" '$1 == d && $4 != $6 { n++ } END { print n + 0 }' lens.tsv)
if [ -n "$p_last" ] && [ "$p_csv" = "$p_last" ] && [ "$rows" = $(((L + 1) * T)) ] && [ "$own" = 0 ]; then
	ok "lens export: $rows rows, p $p_csv as lens prints, the last depth's top is the prediction"
else
	fail "lens export: rows $rows, p $p_csv vs $p_last, $own positions where the output's top differs"
fi
rects=$(grep -c '<rect class="c"' run1/lens.svg)
if [ "$rects" = $(((L + 1) * T)) ]; then ok "lens svg: one cell per depth and position"; else fail "lens svg: $rects cells"; fi
want=$(sed -n '/^layer  *0  *1/,/^ranking/p' "$tmp/out" | sed '1d;$d' | awk '{ for (i = 2; i <= NF; i++) print $i }')
got=$(awk -F, '$1 == "\"head\"" { v = sprintf("%.3f", $5); if (v == "-0.000") v = "0.000"; print v }' run1/patch.csv)
if [ -n "$want" ] && [ "$want" = "$got" ]; then
	ok "patch export: the heads' shares patch printed"
else
	fail "patch export: the heads' shares patch printed" "$(echo $want)" "$(echo $got)"
fi

# ----------------------------------------------- -c and stdin, to stdout
run --no-db golden.safetensors -c "text $text; ablate 1.3; export heatmap 0.1 --format csv"
sed -n '/^"query\\key"/,$p' "$tmp/out" >c.csv
if [ $rc = 0 ] && cmp -s c.csv run1/heatmap-0.1.csv; then
	ok "-c export to stdout = --out"
else
	fail "-c export to stdout = --out"
fi

printf 'text %s\nablate 1.3\nexport heatmap 0.1 --format json\n' "$text" |
	run --no-db golden.safetensors
rc=$?
grep '^{"model"' "$tmp/out" >s.json
if [ $rc = 0 ] && cmp -s s.json run1/heatmap-0.1.json; then
	ok "stdin export to stdout = --out"
else
	fail "stdin export to stdout = --out"
fi

printf 'text %s\nablate 1.3\nshow head 0.1\nexport grid\n' "$text" |
	run --no-db golden.safetensors
rc=$?
sed -n '/^model golden/,$p' "$tmp/out" >g.txt
if [ $rc = 0 ] && cmp -s g.txt run1/grid.txt; then
	ok "grid txt to stdout = --out"
else
	fail "grid txt to stdout = --out"
fi

# ------------------------------------------------------------------ kv
# The design's arithmetic; needs no model.
run --no-db -c "kv --layers 80 --heads 64 --kv-heads 8 --head-dim 128 --tokens 4096 --bytes 2" </dev/null
if [ $rc = 0 ] && grep -q '^ *MHA .* 10 GiB' "$tmp/out" &&
	grep -q '^ *GQA-8 .* 1\.25 GiB' "$tmp/out" && grep -q '^ *MQA .* 160 MiB' "$tmp/out"; then
	ok "kv 10 GiB / 1.25 GiB / 160 MiB"
else
	fail "kv 10 GiB / 1.25 GiB / 160 MiB"
fi
# under mask window 4 a decoder keeps 5 positions of the 42: the sizes are
# those of 5 tokens, in kv and in the summary line
run --no-db golden.safetensors -c "text $text; mask window 4; kv; kv --tokens 5" </dev/null
w=$(grep '^ *MHA ' "$tmp/out" | head -n 1)
t5=$(grep '^ *MHA ' "$tmp/out" | tail -n 1 | sed 's/  (native, current)//')
if [ $rc = 0 ] && [ "$(echo "$w" | sed 's/  (native, current)//')" = "$t5" ] &&
	grep -q '^mask window 4: a decoder keeps the last 5 positions of the 42$' "$tmp/out" &&
	grep -q "^42 tokens .* KV $(echo "$t5" | awk '{ print $5, $6 }') " "$tmp/out"; then
	ok "kv under a window: the window's positions"
else
	fail "kv under a window: the window's positions" "$w" "$t5"
fi

# --------------------------------------------------------------- errors
# err_check NAME PATTERN COMMANDS: the run fails with one stderr line
# matching PATTERN (notes the binary prints about its own setup aside).
err_check() {
	name=$1 pat=$2
	shift 2
	run --no-db golden.safetensors -c "$*" </dev/null
	n=$(grep -v '^attnscope: note:' "$tmp/err" | grep -c .)
	if [ $rc = 1 ] && [ "$n" = 1 ] && grep -q -- "$pat" "$tmp/err"; then
		ok "$name"
	else
		fail "$name" "wanted status 1 and one line matching: $pat"
	fi
}
err_check "error: bad head" "does not exist" "text $text; export heatmap 9.9"
err_check "error: bad format" "unknown format" "text $text; export grid --format pdf"
err_check "error: unwritable --out" "export: " "text $text; export stats --out nodir/stats.csv"
err_check "error: no text" "no text" "export grid"
err_check "error: stats as svg names the formats it has" "not one of its formats (txt, ascii, csv or json)" \
	"text $text; export stats --format svg"
err_check "error: export patch before any patch" 'no patching of the current run yet' \
	"text $text; export patch"
err_check "error: export patch after the text changed" 'no patching of the current run yet' \
	"text $text; patch To be, or not to be: that is the answer!!!; text $text?; export patch"
err_check "error: export lens --format ansi names its formats" \
	'not one of its formats (txt, csv, json, svg or png)' "text $text; export lens --format ansi"

# --format ascii is ASCII only, also for spaces, newlines and CJK labels
ATTNSCOPE_MODELS=$root/models
export ATTNSCOPE_MODELS
for what in "heatmap 0.0" grid stats; do
	run --no-db shakespeare -c "text To be, or\\nnot; export $what --format ascii" </dev/null
	if [ $rc = 0 ] && [ -s "$tmp/out" ] && ! LC_ALL=C grep -q '[^ -~]' "$tmp/out"; then
		ok "export $what --format ascii is printable ASCII"
	else
		fail "export $what --format ascii is printable ASCII"
	fi
done
run --no-db tang -c "text 床前明月光; export heatmap 0.0 --format ascii" </dev/null
if [ $rc = 0 ] && ! LC_ALL=C grep -q '[^ -~]' "$tmp/out" && grep -q '^0 ?? |' "$tmp/out"; then
	ok "CJK labels become one ? per column in ascii"
else
	fail "CJK labels become one ? per column in ascii"
fi
if [ ! -e nodir ]; then ok "no file left by a failed export"; else fail "no file left by a failed export"; fi

[ $failures = 0 ]
