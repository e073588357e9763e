#!/bin/sh
# export circuits and export dla on the shipped induction model (2 layers x
# 4 heads), against the numbers the commands print:
#   circuits csv: one row per pair (16) and a baseline row; every Q, K and
#     V score equal to `circuits --top 16`'s to its 3 decimals, the
#     baseline to `circuits`' line; json: the same pairs, in the same
#     order, with the csv's digits; svg: well-formed (xmllint when there,
#     and librsvg's parse for the PNG), one cell per pair and kind (48),
#     the strongest K pair named under its map; png: the signature and the
#     svg's size;
#   dla csv: every part equal to `dla --top 100`'s to its 4 decimals, the
#     parts summing to the model's logit within 1e-4; json: logit and sum
#     as `dla` prints them; svg: well-formed, one bar per part;
#   export dla without a text: one line saying so, status 1.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope sh tests/cli_export_circuits.sh
. "$(dirname "$0")/lib-cli.sh"
make_tmp export-circuits
IND=$(pwd)/models/induction.safetensors
TEXT='the cat sat on the mat. the cat sat on the'
cd "$tmp" || exit 1

# well_formed FILE: xmllint accepts it (true when xmllint is missing:
# the PNG export's librsvg parse checks the same)
well_formed() { if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$1"; fi; }
is_png() { [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]; }
svg_size() { sed -n '1s/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1"; }
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'; }

run --no-db "$IND" -c "text $TEXT; circuits --top 16; dla --top 100;
export circuits --out c.csv; export circuits --out c.json; export circuits --out c.svg;
export circuits --out c.png; export dla --out d.csv; export dla --out d.json;
export dla --out d.svg; export dla --out d.png"
cp "$tmp/out" printed
check "exports written" sh -c "[ $rc -eq 0 ] && [ -s c.csv ] && [ -s c.json ] && [ -s c.svg ] && [ -s c.png ] \
	&& [ -s d.csv ] && [ -s d.json ] && [ -s d.svg ] && [ -s d.png ]"

# ------------------------------------------------------------- circuits
# printed KIND: "A B SCORE" of every pair in the KIND table, sorted by A, B
printed() {
	sed -n "/^$1-composition/,/^\$/p" printed | awk '$1 ~ /^[0-9]+\.[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ { print $1, $2, $3 }' | sort
}
# csv_kind COL: "A B SCORE" from the csv's column COL (3 Q, 4 K, 5 V) to 3 decimals
csv_kind() {
	tr -d '"' <c.csv | awk -F, -v c="$1" 'NR > 1 && $1 != "baseline" { printf "%s %s %.3f\n", $1, $2, $c }' | sort
}
check "circuits csv: 16 pairs and a baseline row" \
	sh -c "[ \$(wc -l <c.csv) -eq 18 ] && tail -n 1 c.csv | grep -q '^\"baseline\",\"\",'"
check "circuits csv: Q scores as printed" [ "$(csv_kind 3)" = "$(printed Q)" ]
check "circuits csv: K scores as printed" [ "$(csv_kind 4)" = "$(printed K)" ]
check "circuits csv: V scores as printed" [ "$(csv_kind 5)" = "$(printed V)" ]
base_printed=$(sed -n 's/^random baseline .*: Q \([0-9.]*\)  K \([0-9.]*\)  V \([0-9.]*\)$/\1 \2 \3/p' printed)
base_csv=$(tail -n 1 c.csv | awk -F, '{ printf "%.3f %.3f %.3f", $3, $4, $5 }')
check "circuits csv: the baseline as printed" eval '[ -n "$base_printed" ] && [ "$base_csv" = "$base_printed" ]'
# the json's K scores, in order, are the csv's (9 significant digits both)
json_k=$(grep -oE '"K":[-0-9.e]+' c.json | sed 's/"K"://' | sed 1d)
csv_k=$(awk -F, 'NR > 1 && $1 != "\"baseline\"" { print $4 }' c.csv)
check "circuits json: the csv's K scores" eval '[ -n "$json_k" ] && [ "$json_k" = "$csv_k" ]'
check "circuits svg: well-formed" well_formed c.svg
check "circuits svg: a cell per pair and kind" [ "$(grep -c '<rect class="c"' c.svg)" -eq 48 ]
topk=$(printed K | sort -k3 -r | head -n 1)
check "circuits svg: the strongest K pair named" \
	grep -q "strongest $(echo "$topk" | awk '{ print $1 }') → $(echo "$topk" | awk '{ print $2 ": " $3 }')" c.svg
check "circuits png: signature and the svg's size" eval 'is_png c.png && [ "$(png_size c.png)" = "$(svg_size c.svg)" ]'

# ------------------------------------------------------------------ dla
# the printed table's parts (name, value), sorted by name
dla_printed() {
	sed -n '/^part  *logit$/,/^sum of/p' printed | sed '1d;$d' |
		sed 's/^\(.*[^ ]\)  *\([-+][0-9.]*\)$/\1|\2/' | sort
}
dla_csv() {
	tr -d '"' <d.csv | awk -F, 'NR > 1 { printf "%s|%+.4f\n", $1, $4 }' | sort
}
check "dla csv: every part as printed" eval '[ -n "$(dla_csv)" ] && [ "$(dla_csv)" = "$(dla_printed)" ]'
logit=$(sed -n "s/^the model's logit *\([-+0-9.]*\) .*/\1/p" printed)
check "dla csv: the parts sum to the model's logit within 1e-4" \
	awk -F, -v l="$logit" 'NR > 1 { s += $4 } END { d = s - l; exit !(l != "" && d < 1e-4 && d > -1e-4) }' d.csv
jlogit=$(grep -oE '"logit":[-0-9.e]+' d.json | head -n 1 | sed 's/"logit"://')
check "dla json: the logit as printed" [ "$(printf '%+.4f' "$jlogit")" = "$logit" ]
check "dla svg: well-formed" well_formed d.svg
check "dla svg: a bar per part" [ "$(grep -c '<rect class="bar"' d.svg)" -eq $(($(wc -l <d.csv) - 1)) ]
check "dla png: signature and the svg's size" eval 'is_png d.png && [ "$(png_size d.png)" = "$(svg_size d.svg)" ]'

run --no-db "$IND" -c "export dla --out x.csv"
check "export dla without a text: one line" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && [ ! -e x.csv ]"

[ "$failures" -eq 0 ]
