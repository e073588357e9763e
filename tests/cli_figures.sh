#!/bin/sh
# The figures for slides, through the real binary on a seeded random model
# (tool_mkmodel: 2 layers x 4 heads), so that nothing here depends on which
# heads a trained model has or on the fonts installed: export layer L (one
# heatmap per head, masked cells hatched, the legend saying so, no selection
# frame unless --selected, upright labels, CJK font fallbacks named), PNG
# (the signature, the size the SVG gives times --scale; librsvg reading the
# SVG is its parse check), export mask [--all], export groups, export lab,
# their text forms, re-runs byte-identical, and one-line errors that leave
# an existing file untouched.  Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_figures.sh
. "$(dirname "$0")/lib-cli.sh"
make_tmp figures
mkdir "$tmp/home"
HOME=$tmp/home
export HOME
cd "$tmp" || exit 1
mkmodel "$tmp/m.safetensors" --seed 7
RUN_ARGS="--no-db"
text='To be, or not to be: that is the question.'
T=42 L=2 H=4

# count PATTERN FILE: lines of FILE holding PATTERN, one element a line
count() { grep -c -- "$1" "$2"; }
# svg_size FILE: "W H" of the <svg> element
svg_size() { sed -n '1s/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1"; }
# png_size FILE: "W H" from the IHDR chunk
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'; }
# is_png FILE: the 8-byte PNG signature
is_png() { [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]; }

# ---------------------------------------------------------------- layer
run m.safetensors -c "text $text; export layer 1 --out layer.svg; export layer 1 --out layer.png; export layer 1 --scale 2 --out layer2.png; export layer 1 --format txt --out layer.txt; show head 1.2; export layer 1 --selected --out sel.svg"
check "export layer writes svg, png and txt" sh -c "[ $rc = 0 ] && [ -s layer.svg ] && [ -s layer.png ] && [ -s layer.txt ]"
check "layer svg: one heatmap per head ($H)" \
	sh -c "[ \$(grep -c '<g class=\"head\">' layer.svg) = $H ] && [ \$(grep -c '<g class=\"map\">' layer.svg) = $H ]"
masked=$(count 'class="masked"' layer.svg)
check "layer svg: causal masked cells hatched, one run per row but the last, in every head ($masked)" \
	[ "$masked" = $((H * (T - 1) + 1)) ]
check "layer svg: the legend says what the hatching is, apart from a weight of 0" \
	sh -c "grep -q 'hatched = masked by the causal mask' layer.svg && grep -q 'not a weight of 0' layer.svg"
check "layer svg: a heading and a plain-language subtitle naming the model and the text" \
	sh -c "grep -q 'class=\"heading\"' layer.svg && grep 'class=\"subtitle\"' layer.svg | grep -q 'Model m' &&
		grep -q 'To be, or not to be' layer.svg && grep -q 'attention weight' layer.svg"
check "layer svg: no selection frame unless asked" [ "$(count 'class="selected"' layer.svg)" = 0 ]
check "layer svg --selected: the selected head (1.2) framed" \
	sh -c "[ \$(grep -c 'class=\"selected\"' sel.svg) = 1 ] && grep -q 'head 1.2' sel.svg"
check "svg names DejaVu Sans Mono and CJK fallbacks, labels upright" \
	sh -c "grep -q \"font-family=\\\"'DejaVu Sans Mono', 'Noto Sans Mono CJK SC', 'Noto Sans CJK SC', 'WenQuanYi Zen Hei Mono', 'Source Han Sans SC', monospace\\\"\" layer.svg && ! grep -q '<text[^>]*rotate' layer.svg"
check "every element that opens in the layer svg closes" \
	sh -c "[ \$(grep -o '<g[ >]' layer.svg | wc -l) = \$(grep -o '</g>' layer.svg | wc -l) ] &&
		[ \$(grep -o '<text' layer.svg | wc -l) = \$(grep -o '</text>' layer.svg | wc -l) ] && tail -n 1 layer.svg | grep -q '^</svg>\$'"
check "layer png: the PNG signature" is_png layer.png
check "layer png: the svg's size in pixels" [ "$(png_size layer.png)" = "$(svg_size layer.svg)" ]
check "layer png --scale 2: twice the size" \
	[ "$(png_size layer2.png)" = "$(svg_size layer.svg | awk '{ print $1 * 2, $2 * 2 }')" ]
check "layer txt: the layer's $H heads, masked cells marked in the legend" \
	sh -c "grep -q '^model m, $T tokens, layer 1\$' layer.txt && grep -q '1 layer × 4 heads' layer.txt && grep -q \"'·' masked\" layer.txt"
run m.safetensors -c "text $text; export layer 1 --format csv"
check "layer csv: a header and T rows per head of the layer" \
	[ "$(grep -c '^1,[0-3],' "$tmp/out")" = $((H * T)) ]

# the grid and one head share the figure style
run m.safetensors -c "text $text; show head 0.1; export grid --out grid.svg; export grid --selected --out gsel.svg; export heatmap 0.1 --out head.svg; export grid --out grid.png"
check "grid svg: no red frame unless asked, one with --selected" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c 'class=\"selected\"' grid.svg) = 0 ] && [ \$(grep -c 'class=\"selected\"' gsel.svg) = 1 ]"
check "heatmap svg: the visible cells, hatched runs and the legend" \
	sh -c "[ \$(grep -c '<rect class=\"c\"' head.svg) = $((T * (T + 1) / 2)) ] && [ \$(grep -c 'class=\"masked\"' head.svg) = $T ]"
check "grid png" sh -c "is_png() { [ \"\$(od -An -tx1 -N8 \"\$1\" | tr -d ' \n')\" = 89504e470d0a1a0a ]; }; is_png grid.png"
run m.safetensors -c "text $text; mask none; export layer 0 --out none.svg"
check "under mask none nothing is hatched and the legend has no masked line" \
	sh -c "[ $rc = 0 ] && ! grep -q 'class=\"masked\"' none.svg"

# ------------------------------------------------------------------ mask
run m.safetensors -c "text $text; show mask; mask window 3; export mask --format txt --out w.txt; mask causal; export mask --all --out all.svg; export mask --all --out all.png; export mask --format csv --out m.csv; export mask --all --format ascii --out all.txt"
check "show mask: one row per token, row i seeing keys 0..i" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c '│█*·*│\$' '$tmp/out') = $T ] && grep -q '^ 5 , │██████···' '$tmp/out'"
check "mask window 3: each row sees at most 4 keys" \
	sh -c "grep -q '^mask window 3 (current)' w.txt && ! grep -q '█████' w.txt"
check "mask --all: five panels, the after-softmax one with a row sum per query, pads padded" \
	sh -c "[ \$(grep -c '<g class=\"panel\">' all.svg) = 5 ] && [ \$(grep -c 'class=\"rowsum\"' all.svg) = $T ] &&
		grep -q 'class=\"padded\"' all.svg && grep -q 'class=\"zeroed\"' all.svg && grep -q 'mask causal (current)' all.svg"
check "mask --all png" sh -c "[ \"\$(od -An -tx1 -N8 all.png | tr -d ' \n')\" = 89504e470d0a1a0a ]"
check "mask csv: one row per query, a state per key" \
	sh -c "[ \$(grep -c '^\"causal\",' m.csv) = $T ] && grep -q '^\"causal\",0,\"T\",seen,hidden,' m.csv"
check "mask --all --format ascii is printable ASCII" sh -c "[ -s all.txt ] && ! LC_ALL=C grep -q '[^ -~]' all.txt"

# ---------------------------------------------------------------- groups
run m.safetensors -c "attn gqa 2; show groups; export groups --out g.svg; export groups --out g.png; export groups --format json --out g.json; text $text; kv"
check "show groups: query heads 2 and 3 read K/V head 1" \
	sh -c "[ $rc = 0 ] && grep -q '^  K/V head 1 <- query heads 2 3\$' '$tmp/out'"
check "groups svg: $H query heads, 2 K/V heads, one line per query head" \
	sh -c "[ \$(grep -c 'class=\"query\"' g.svg) = $H ] && [ \$(grep -c 'class=\"kv\"' g.svg) = 2 ] && [ \$(grep -c 'class=\"reads\"' g.svg) = $H ]"
check "groups json: reads and the settings' sizes" \
	sh -c "grep -q '\"reads\":\[0,0,1,1\]' g.json && grep -q '\"name\":\"MQA\",\"kv_heads\":1' g.json"
run m.safetensors -c "text $text; attn gqa 2; show groups; kv"
gq=$(awk '/^  GQA-2 / && /current/ { print $5, $6; exit }' "$tmp/out")
kq=$(awk '/^ *GQA-2 / && /current/ { n++; if (n == 2) { print $5, $6; exit } }' "$tmp/out")
check "groups: the current setting's KV bytes are kv's ($gq)" sh -c "[ -n '$gq' ] && [ '$gq' = '$kq' ]"

# ------------------------------------------------------------------- lab
training_text text.txt
run m.safetensors -c "export lab"
check "export lab before any lab is one error line" \
	sh -c "[ $rc = 1 ] && [ \$(grep -vc '^attnscope: note:' '$tmp/err') = 1 ] && grep -q 'no lab experiment has run' '$tmp/err'"
run m.safetensors -c "lab fused --quick --data text.txt; export lab --out fused.svg; lab heads --quick --data text.txt; export lab --out heads.svg; export lab --out heads.png; export lab --format csv --out heads.csv; export lab --format txt --out heads.txt"
check "lab fused: two bars for each of three shapes, on a log axis, no curves" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c 'class=\"bar\"' fused.svg) = 6 ] && grep -q 'log axis' fused.svg && ! grep -q 'class=\"series\"' fused.svg"
check "lab heads: final and held-out loss of each of 5 arms, and 5 training curves" \
	sh -c "[ \$(grep -c 'class=\"bar\"' heads.svg) = 10 ] && [ \$(grep -c 'class=\"series\"' heads.svg) = 5 ] && grep -q '>heads 16<' heads.svg"
check "lab png" sh -c "[ \"\$(od -An -tx1 -N8 heads.png | tr -d ' \n')\" = 89504e470d0a1a0a ]"
check "lab csv: 10 bars and 60 curve points per arm" \
	sh -c "[ \$(grep -c ',,' heads.csv) = 10 ] && [ \$(grep -c '\"training loss\",' heads.csv) = 300 ]"
check "lab txt: the table, the bars and the curve plot" \
	sh -c "grep -q '^lab heads (quick)' heads.txt && [ \$(grep -c '█' heads.txt) -ge 10 ] && grep -q 'training loss of each arm, by step' heads.txt"

# -------------------------------------------------------------- re-runs
cmds="text $text; export layer 1 --out a1.svg; export mask --all --out a2.svg; export groups --out a3.svg; export layer 0 --out a4.png"
run m.safetensors -c "$cmds"
for f in a1.svg a2.svg a3.svg a4.png; do mv "$f" "first-$f"; done
run m.safetensors -c "$cmds"
same=1
for f in a1.svg a2.svg a3.svg a4.png; do cmp -s "$f" "first-$f" || same=0; done
check "figures re-run byte-identical (svg and png)" [ $same = 1 ]

# --------------------------------------------------------------- errors
# err_check NAME PATTERN COMMANDS: status 1 and one stderr line matching
err_check() {
	name=$1 pat=$2
	shift 2
	run m.safetensors -c "$*" </dev/null
	n=$(grep -v '^attnscope: note:' "$tmp/err" | grep -c .)
	if [ $rc = 1 ] && [ "$n" = 1 ] && grep -q -- "$pat" "$tmp/err"; then
		ok "$name"
	else
		fail "$name" "wanted status 1 and one line matching: $pat"
	fi
}
echo keep >keep.png
cp keep.png ro.png
chmod 444 ro.png
err_check "error: a layer that does not exist" "layer 2 does not exist (layers 0-1)" "text $text; export layer 2 --out keep.png"
err_check "error: a layer that is not a number" "the layer must be a whole number" "text $text; export layer x"
err_check "error: an unwritable path" "export: " "text $text; export layer 0 --out nodir/l.png"
err_check "error: a read-only file" "read-only" "text $text; export layer 0 --out ro.png"
err_check "error: png to the terminal" "give a file with --out" "text $text; export layer 0 --format png"
err_check "error: --scale out of range" "scale" "text $text; export layer 0 --scale 9 --out keep.png"
err_check "error: --all goes with mask" "--all goes with mask" "text $text; export layer 0 --all"
err_check "error: --selected goes with grid and layer" "--selected goes with" "text $text; export mask --selected"
err_check "error: a format the export lacks" "not one of its formats" "text $text; export groups --format ansi"
err_check "error: export layer without a text" "no text" "export layer 0"
check "a failed export leaves an existing file untouched" \
	sh -c "[ \"\$(cat keep.png)\" = keep ] && [ \"\$(cat ro.png)\" = keep ] && [ ! -e nodir ]"

[ $failures = 0 ]
