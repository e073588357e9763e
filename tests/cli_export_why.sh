#!/bin/sh
# export why and export qkov on the shipped induction model, against the
# numbers the commands print:
#   why csv: one row per (query part, key part) term (n x n of them), every
#     term equal to `why --top 1000`'s to its 4 decimals, the terms summing
#     to the pass's score as printed within 1e-4; json: score and the csv's
#     terms in the same order; txt: every part's key side as `why` prints
#     it; svg: well-formed, one cell per term; png: signature and size;
#   qkov csv: every (query, key) mean and spread as `qkov` prints it, the
#     means summing to the whole score's within 1e-4; json: the copying
#     score as printed, one eigenvalue per head dimension; svg: one point
#     per eigenvalue, one cell per class pair; png: signature and size;
#   a second process writes the same bytes (svg, json, csv);
#   export qkov without a text: json and svg still (the OV circuit), csv
#     refused in one line; export why without a text, a key after the
#     query, and a missing position: one line each, status 1.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope sh tests/cli_export_why.sh
. "$(dirname "$0")/lib-cli.sh"
make_tmp export-why
IND=$(pwd)/models/induction.safetensors
TEXT='xqzvk jwpfy bmgd. xqzvk jwpfy bmgd.'
cd "$tmp" || exit 1

well_formed() { if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$1"; fi; }
is_png() { [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]; }
svg_size() { sed -n '1s/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1"; }
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'; }

run --no-db "$IND" -c "text $TEXT; why 1.2 25 8 --top 1000; qkov 1.1;
export why 1.2 25 8 --out w.txt; export why 1.2 25 8 --out w.csv; export why 1.2 25 8 --out w.json;
export why 1.2 25 8 --out w.svg; export why 1.2 25 8 --out w.png;
export qkov 1.1 --out q.csv; export qkov 1.1 --out q.json; export qkov 1.1 --out q.svg;
export qkov 1.1 --out q.png"
cp "$tmp/out" printed
check "exports written" sh -c "[ $rc -eq 0 ] && [ -s w.txt ] && [ -s w.csv ] && [ -s w.json ] && [ -s w.svg ] \
	&& [ -s w.png ] && [ -s q.csv ] && [ -s q.json ] && [ -s q.svg ] && [ -s q.png ]"

# ------------------------------------------------------------------ why
# the printed terms "QPART|KPART|TERM", sorted (part names may hold blanks:
# the columns are 15 characters wide)
why_printed() {
	sed -n '/^query part  *key part  *term$/,/^sum of/p' printed | sed '1d;$d' |
		grep -v '^(the other terms)' |
		awk '{ q = substr($0, 1, 14); k = substr($0, 16, 14); t = substr($0, 31);
		       gsub(/ +$/, "", q); gsub(/ +$/, "", k); gsub(/ /, "", t); print q "|" k "|" t }' | sort
}
# (a term that rounds to 0 prints +0.0000, as why prints it)
why_csv() {
	tr -d '"' <w.csv | awk -F, 'NR > 1 { v = $3 + 0; if (v < 0.00005 && v > -0.00005) v = 0
		printf "%s|%s|%+.4f\n", $1, $2, v }' | sort
}
n=$(sed -n 's/^sum of \([0-9]*\) terms .*/\1/p' printed)
check "why csv: n x n terms" eval '[ -n "$n" ] && [ $(($(wc -l <w.csv) - 1)) -eq "$n" ]'
check "why csv: every term as printed" eval '[ -n "$(why_csv)" ] && [ "$(why_csv)" = "$(why_printed)" ]'
score=$(sed -n "s/^the pass's score *\([-+0-9.]*\) .*/\1/p" printed)
check "why csv: the terms sum to the pass's score within 1e-4" \
	awk -F, -v l="$score" 'NR > 1 { s += $3 } END { d = s - l; exit !(l != "" && d < 1e-4 && d > -1e-4) }' w.csv
jscore=$(grep -oE '"score":[-0-9.e]+' w.json | head -n 1 | sed 's/"score"://')
check "why json: the score as printed" [ "$(printf '%+.4f' "$jscore")" = "$score" ]
jterms=$(sed 's/.*"terms":\[\[//; s/\]\]}$//; s/\],\[/,/g' w.json | tr , '\n')
csvterms=$(awk -F, 'NR > 1 { print $3 }' w.csv)
# the same numbers (jansson writes 4.9e-5 where printf writes 4.9e-05)
same_numbers() { [ -n "$1" ] && echo "$1" | paste - "$2" | awk '$1 + 0 != $2 + 0 { bad = 1 } END { exit bad }'; }
echo "$csvterms" >csvterms
check "why json: the csv's terms in order" eval '[ "$(echo "$jterms" | wc -l)" -eq "${n:-0}" ] && same_numbers "$jterms" csvterms'
# key side of every part: the printed key-side table (part score share contrast)
# and the txt's part table (part query key contrast), "NAME|KEY" sorted
key_printed() {
	sed -n '/^key side/,/^$/p' printed | awk 'NF >= 4 && $(NF - 2) ~ /^[-+][0-9]/ {
		name = $1; for (i = 2; i <= NF - 3; i++) name = name " " $i; print name "|" $(NF - 2) }' | sort
}
key_txt() {
	sed -n '/^part  *query  *key  *contrast$/,/^$/p' w.txt | sed '1d' | awk 'NF >= 4 {
		name = $1; for (i = 2; i <= NF - 3; i++) name = name " " $i; print name "|" $(NF - 1) }' | sort
}
check "why txt: every part's key side as printed" eval '[ -n "$(key_txt)" ] && [ "$(key_txt)" = "$(key_printed)" ]'
check "why svg: well-formed" well_formed w.svg
check "why svg: a cell per term" [ "$(grep -c '<rect class="t"' w.svg)" -eq "${n:-0}" ]
check "why png: signature and the svg's size" eval 'is_png w.png && [ "$(png_size w.png)" = "$(svg_size w.svg)" ]'

# ----------------------------------------------------------------- qkov
qk_printed() {
	sed -n '/^query  *key  *mean  *spread$/,/^the whole score/p' printed | sed '1d;$d' |
		awk '{ print $1 "|" $2 "|" $3 "|" $4 }' | sort
}
qk_csv() { tr -d '"' <q.csv | awk -F, 'NR > 1 && $1 != "whole" { printf "%s|%s|%+.4f|%.4f\n", $1, $2, $3, $4 }' | sort; }
check "qkov csv: every class pair as printed" eval '[ -n "$(qk_csv)" ] && [ "$(qk_csv)" = "$(qk_printed)" ]'
whole=$(sed -n 's/^the whole score *\([-+0-9.]*\) .*/\1/p' printed)
check "qkov csv: the whole score as printed" \
	[ "$(tr -d '"' <q.csv | awk -F, '$1 == "whole" { printf "%+.4f", $3 }')" = "$whole" ]
check "qkov csv: the means sum to the whole within 1e-4" \
	awk -F, 'NR > 1 && $1 != "\"whole\"" { s += $3 } $1 == "\"whole\"" { w = $3 }
		END { d = s - w; exit !(NR > 2 && d < 1e-4 && d > -1e-4) }' q.csv
copy=$(sed -n 's/^copying score .*: \([0-9.]*\); .*/\1/p' printed)
jcopy=$(grep -oE '"copy":[-0-9.e]+' q.json | sed 's/"copy"://')
check "qkov json: the copying score as printed" eval '[ -n "$copy" ] && [ "$(printf "%.3f" "$jcopy")" = "$copy" ]'
D=$(sed -n 's/.*its \([0-9]*\) nonzero eigenvalues.*/\1/p' printed)
check "qkov json: one eigenvalue per head dimension" [ "$(grep -o '"re":' q.json | wc -l)" -eq "${D:-0}" ]
check "qkov svg: well-formed" well_formed q.svg
check "qkov svg: a point per eigenvalue, a cell per class pair" \
	eval '[ "$(grep -c "<circle class=\"eig\"" q.svg)" -eq "${D:-0}" ] && [ "$(grep -c "<rect class=\"qk\"" q.svg)" -eq $(($(wc -l <q.csv) - 2)) ]'
check "qkov png: signature and the svg's size" eval 'is_png q.png && [ "$(png_size q.png)" = "$(svg_size q.svg)" ]'

run --no-db "$IND" -c "text $TEXT; export why 1.2 25 8 --out w2.svg; export why 1.2 25 8 --out w2.json;
export qkov 1.1 --out q2.svg; export qkov 1.1 --out q2.csv"
check "re-run: byte-identical" sh -c "[ $rc -eq 0 ] && cmp -s w.svg w2.svg && cmp -s w.json w2.json \
	&& cmp -s q.svg q2.svg && cmp -s q.csv q2.csv"

# ----------------------------------------------------------------- errors
run --no-db "$IND" -c "export qkov 1.1 --out o.json; export qkov 1.1 --out o.svg"
check "export qkov without a text: the OV circuit" sh -c "[ $rc -eq 0 ] && grep -q '\"copy\":' o.json && ! grep -q '\"qk\"' o.json && [ -s o.svg ]"
run --no-db "$IND" -c "export qkov 1.1 --out o.csv"
check "export qkov csv without a text: one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && [ ! -e o.csv ]"
run --no-db "$IND" -c "export why 1.2 3 1 --out x.csv"
check "export why without a text: one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && [ ! -e x.csv ]"
run --no-db "$IND" -c "text $TEXT; export why 1.2 3 8 --out x.csv"
check "export why, a key after the query: one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && [ ! -e x.csv ]"
run --no-db "$IND" -c "text $TEXT; export why 1.2 3"
check "export why without J: the usage, one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"

[ "$failures" -eq 0 ]
