#!/bin/sh
# `lab`: every experiment at its quick size on a small generated text (run
# by tests/run.sh).  Besides running, each checks a property of its table
# that the lesson rests on and that wrong code would break.
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-lab
training_text "$tmp/text.txt"
RUN_ARGS="--no-db"
# The experiments train: a quick one takes seconds on an idle machine but
# has taken over a minute beside two training runs, where OpenBLAS's
# threads wait for each other.  The timeout only guards against a hang.
[ -n "$TIMEOUT" ] && TIMEOUT="timeout 600"

# column N of the table row whose first cell is KEY, from $tmp/out
cell() { awk -v k="$1" -v n="$2" '$1 == k { print $n; exit }' "$tmp/out"; }

run -c "lab"
check "lab lists the seven experiments" \
	sh -c "[ \$(grep -cE '^  (residual|norm|scaling|mask|heads|gqa|fused) ' '$tmp/out') -eq 7 ]"

run -c "lab residual --quick --data $tmp/text.txt"
check "lab residual runs" status 0
r10=$(cell 10 3) r50=$(cell 50 3) w10=$(cell 10 2) w50=$(cell 50 2)
check "without residuals the first layer's gradient shrinks from depth 10 to 50 ($r10 -> $r50)" \
	awk -v a="$r10" -v b="$r50" 'BEGIN { exit !(b + 0 < a / 1000) }'
check "with residuals it stays within a factor 10 ($w10 -> $w50)" \
	awk -v a="$w10" -v b="$w50" 'BEGIN { exit !(a > 0 && b > a / 10 && b < a * 10) }'

run -c "lab norm --quick --data $tmp/text.txt"
check "lab norm runs and has six arms" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -cE '^  [0-9]+ +(layernorm|rmsnorm) +(pre|post)' '$tmp/out') -eq 6 ]"
check "dead blocks are counted out of each depth" \
	sh -c "grep -qE '^  12 .* [0-9]+ of 12\$' '$tmp/out'"

run -c "lab scaling --quick --data $tmp/text.txt"
check "lab scaling runs and reports both arms" \
	sh -c "[ $rc -eq 0 ] && grep -q '^  QK^T / sqrt(d)' '$tmp/out' && grep -q '^  QK^T  ' '$tmp/out'"

run -c "lab mask --quick --data $tmp/text.txt"
check "lab mask runs" status 0
check "the causal model's held-out loss is the same under its own mask and the causal one" \
	sh -c "[ '$(cell causal 3)' = '$(cell causal 4)' ] && [ -n '$(cell causal 3)' ]"
check "the unmasked model's two held-out losses differ" \
	sh -c "[ '$(cell none 3)' != '$(cell none 4)' ]"

run -c "lab heads --quick --data $tmp/text.txt"
check "lab heads: 1, 2, 4, 8 and 16 heads have the same parameter count" \
	sh -c "[ $rc -eq 0 ] && [ \$(awk 'NF == 5 && \$1 ~ /^(1|2|4|8|16)\$/ { n++; print \$3 } END { if (n != 5) print \"missing\" }' '$tmp/out' | sort -u | wc -l) -eq 1 ]"
check "lab heads: head dimensions 32, 16, 8, 4 and 2 at the quick width 32" \
	sh -c "[ \"\$(awk 'NF == 5 && \$1 ~ /^[0-9]+\$/ { printf \"%s \", \$2 }' '$tmp/out')\" = '32 16 8 4 2 ' ]"
check "lab heads: 3 heads are refused with the message naming both numbers" \
	sh -c "tr '\n' ' ' <'$tmp/out' | tr -s ' ' | grep -q 'd_model 32 is not divisible by num_heads 3'"

run -c "lab gqa --quick --data $tmp/text.txt"
check "lab gqa runs on shakespeare" status 0
before=$(awk '/^  GQA, mean-pooled/ { print $4 }' "$tmp/out")
after=$(awk '/^  GQA, mean-pooled/ { print $5 }' "$tmp/out")
check "uptraining lowers the converted model's held-out loss ($before -> $after)" \
	awk -v a="$before" -v b="$after" 'BEGIN { exit !(b + 0 > 0 && b + 0 < a + 0) }'

run -c "lab fused --quick --csv $tmp/fused.csv"
check "lab fused times three shapes" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -cE '^\"?(shakespeare|GPT-2|one token)' '$tmp/fused.csv') -eq 3 ]"
check "--csv writes the header first" sh -c "head -1 '$tmp/fused.csv' | grep -q '^shape,fused QKV ms'"

# recorded in the database, one row per run
RUN_ARGS=
run --db "$tmp/lab.db" -c "lab fused --quick"
if command -v sqlite3 >/dev/null 2>&1; then
	n=$(sqlite3 "$tmp/lab.db" "SELECT count(*) FROM lab_runs WHERE experiment = 'fused' AND status = 'done' AND size = 'quick' AND result LIKE '%\"findings\"%'")
	check "a lab run is recorded in lab_runs with its result" [ "$n" = 1 ]
fi
RUN_ARGS="--no-db"

# the padding lesson: with the padding mask each text matches its own run
RUN_ARGS="--no-db"
run shakespeare -c "mask none; batch To be, or not to be | O Romeo | Now is the winter of our discontent"
check "batch: with the padding mask pads get weight 0 and every text matches its own run" \
	sh -c "grep -q 'pads get weight 0, and every text' '$tmp/out' && grep -qE 'match its own run to [0-9.e-]+' '$tmp/out'"
check "batch under mask none: without the padding mask the short texts look at the pads" \
	awk '$1 == 2 && NF == 9 { found = 1; if ($8 != 0 || $9 + 0 < 0.01) bad = 1 } END { exit !(found && !bad) }' "$tmp/out"
run shakespeare -c "batch To be, or not to be | O Romeo"
check "batch under the causal mask: the pads are never seen, mask or not" \
	sh -c "grep -q 'pads get no weight either' '$tmp/out'"
run shakespeare -c "batch To be, or not to be | O Romeo | Now is the winter of our discontent"
# combo COL: column COL of the four-way table's row for text 2 (alone both pad causal neither)
combo() { awk -v n="$1" '/^   # tokens    alone     both/ { t = 1; next } t && $1 == 2 { print $n; exit }' "$tmp/out"; }
check "batch: both masks (logical and) give text 2 its own loss ($(combo 3) = $(combo 4))" \
	sh -c "[ -n '$(combo 3)' ] && [ '$(combo 3)' = '$(combo 4)' ]"
check "batch: the padding mask alone lets text 2 read ahead: its loss moves ($(combo 3) -> $(combo 5))" \
	awk -v a="$(combo 3)" -v b="$(combo 5)" 'BEGIN { exit !(b - a > 0.1 || a - b > 0.1) }'
check "batch: the causal mask alone equals both under right padding ($(combo 6))" \
	sh -c "[ '$(combo 6)' = '$(combo 4)' ] && grep -q 'the causal mask alone: the same as both' '$tmp/out'"
check "batch: neither mask differs from the padding mask alone for a padded text ($(combo 7))" \
	sh -c "[ -n '$(combo 7)' ] && [ '$(combo 7)' != '$(combo 5)' ]"
run shakespeare -c "mask none; batch To be | O Romeo"
check "batch under mask none: nothing to combine, said in words" \
	sh -c "grep -q 'the attention mask is none: the padding mask is the only mask' '$tmp/out'"
run shakespeare -c "batch only one text"
check "batch with one text is refused" sh -c "[ $rc -ne 0 ] && grep -q 'at least two texts' '$tmp/err'"

# errors: one line that says what
run -c "lab nosuch"
check "an unknown experiment is one error line naming it" \
	sh -c "[ $rc -ne 0 ] && grep -q 'no experiment \"nosuch\"' '$tmp/err'"
run -c "lab norm --quick --data $tmp/missing.txt"
check "a missing training text is refused before any work" \
	sh -c "[ $rc -ne 0 ] && grep -q 'missing.txt' '$tmp/err'"

# Ctrl-C in batch mode: the arms that finished are shown, marked as partial
# (timeout --foreground passes the signal to attnscope alone, where plain
# timeout would send it to its whole process group, a second Ctrl-C that
# quits at once; and a shell starts background jobs with Ctrl-C ignored,
# which timeout's own handler undoes)
timeout --foreground 120 "$A" --no-db -c "lab norm --data $tmp/text.txt" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0 # until it has started (slow under the sanitizers), then a moment more
while [ $i -lt 300 ] && ! grep -q 'full size, on' "$tmp/out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 1
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
check "Ctrl-C stops lab norm after the current step and shows what finished" \
	sh -c "[ $rc -eq 0 ] && grep -q 'stopped early' '$tmp/out'"

exit $((failures > 0))
