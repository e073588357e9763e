#!/bin/sh
# End-to-end checks of the masked-LM objective (`train --objective mlm`)
# and of an encoder's roles in `heads` (run by tests/run.sh with
# ATTNSCOPE=path-to-binary).  Prints "ok NAME" or "FAIL NAME" per check
# and works in a temporary directory that it removes.
bin=${ATTNSCOPE:-./attnscope}
dir=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-cli-encoder.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM

check() { # NAME CONDITION-STATUS
	if [ "$2" = 0 ]; then echo "ok $1"; else echo "FAIL $1"; fi
}

i=0
: >"$dir/text.txt"
while [ $i -lt 400 ]; do
	echo "the cat sat on the mat $((i % 10)); the dog ran to the log $((i % 7))." >>"$dir/text.txt"
	i=$((i + 1))
done
flags="--objective mlm --placement post --mlp gelu-exact --layers 1 --heads 2 --d-model 16
	--context 24 --batch 4 --steps 12 --threads 1 --val-every 6 --no-db"

# a whole run, and one stopped after 5 steps then resumed: the same model
# (the loss it gives on a text, to the last digit printed)
# shellcheck disable=SC2086
"$bin" train $flags --data "$dir/text.txt" --out "$dir/a.safetensors" >"$dir/a.out" 2>"$dir/a.err"
rc=$?
grep -q 'masked accuracy' "$dir/a.out"
check "train --objective mlm runs and reports the masked accuracy" $(( rc != 0 || $? != 0 ))
# shellcheck disable=SC2086
"$bin" train $flags --data "$dir/text.txt" --out "$dir/b.safetensors" --stop-after 5 \
	>"$dir/b.out" 2>"$dir/b.err"
rc1=$?
"$bin" train --resume "$dir/b.safetensors" --quiet >"$dir/b.out" 2>"$dir/b.err"
rc2=$?
la=$("$bin" --no-db -c "load $dir/a.safetensors" -c "text the cat sat" 2>&1 | grep 'tokens  loss')
lb=$("$bin" --no-db -c "load $dir/b.safetensors" -c "text the cat sat" 2>&1 | grep 'tokens  loss')
[ -n "$la" ] && [ "${la%%KV*}" = "${lb%%KV*}" ]
check "an mlm run stopped and resumed ends with the same model" \
	$(( rc1 != 130 || rc2 != 0 || $? != 0 ))

# the checkpoint is an encoder: [CLS] ... [SEP] around the text, the
# special-key table in heads, and a typed "[CLS]" is characters
"$bin" --no-db -c "load $dir/a.safetensors" -c "text the cat" -c "heads" >"$dir/h.out" 2>&1
grep -q '^9 tokens' "$dir/h.out" # [CLS] + 7 characters + [SEP]
n9=$?
grep -q "an encoder's special keys" "$dir/h.out"
check "heads on an mlm checkpoint wraps the text and shows the [CLS] / [SEP] table" \
	$(( n9 != 0 || $? != 0 ))
grep -q '\\"specials\\":\\"mlm\\"' "$dir/a.safetensors"
check "the checkpoint's tokenizer records the special tokens" $?
grep -q '\\"objective\\":\\"mlm\\"' "$dir/a.safetensors"
check "the training record names the objective" $?
"$bin" --no-db -c "load $dir/a.safetensors" -c "text [CLS]" >"$dir/t.out" 2>&1
grep -q '^7 tokens' "$dir/t.out" # [CLS] + the 5 characters + [SEP]
check "a typed [CLS] is five characters, not the special token" $?
"$bin" --no-db -c "load $dir/a.safetensors" -c "text a[MASK]b" >"$dir/t.out" 2>&1
grep -q '^5 tokens' "$dir/t.out" # [CLS] a [MASK] b [SEP]
check "a typed [MASK] is the mask token (one token)" $?

# a decoder's heads output has no special-key table
"$bin" train --data "$dir/text.txt" --out "$dir/d.safetensors" --steps 3 --layers 1 \
	--heads 2 --d-model 16 --context 24 --batch 4 --threads 1 --no-db --quiet
"$bin" --no-db -c "load $dir/d.safetensors" -c "text the cat" -c "heads" >"$dir/hd.out" 2>&1
! grep -q "special keys" "$dir/hd.out" && grep -q '^roles:' "$dir/hd.out"
check "a decoder's heads output is unchanged (no special-key table)" $?

# flags that contradict the objective: exit 2, one line
# shellcheck disable=SC2086
"$bin" train $flags --mask causal --data "$dir/text.txt" --out "$dir/x.safetensors" \
	>"$dir/out" 2>"$dir/err"
rc=$?
lines=$(wc -l <"$dir/err")
grep -q 'mask causal' "$dir/err"
check "--objective mlm with --mask causal fails with one line" $(( rc != 2 || lines != 1 || $? != 0 ))
"$bin" train --from "$dir/a.safetensors" --data "$dir/text.txt" --out "$dir/y.safetensors" \
	--steps 2 --no-db >"$dir/out" 2>"$dir/err"
rc=$?
lines=$(wc -l <"$dir/err")
grep -q 'mlm' "$dir/err"
check "train --from an encoder without --objective mlm fails with one line" \
	$(( rc == 0 || lines != 1 || $? != 0 ))

# the shipped encoder: docs/models.md's numbers are its training record's
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/models/shakespeare-mlm.safetensors
row=$(sed -n '/^<!-- encoder-numbers -->$/,/^<!-- \/encoder-numbers -->$/p' "$root/docs/models.md" |
	grep '^| `shakespeare-mlm`')
meta() { # FIELD: its number in the file's training record, to 3 decimals
	head -c 65536 "$model" | grep -ao "$1\\\\\":[0-9.]*" | head -n 1 | sed 's/.*://' |
		awk '{ printf "%.3f", $1 }'
}
params=$(echo "$row" | cut -d'|' -f3 | tr -d ' ,')
train=$(echo "$row" | cut -d'|' -f5 | tr -d ' ')
val=$(echo "$row" | cut -d'|' -f6 | tr -d ' ')
acc=$(echo "$row" | cut -d'|' -f7 | tr -d ' ')
[ -n "$row" ] && [ "$train" = "$(meta final_train_loss)" ] && [ "$val" = "$(meta final_val_loss)" ] &&
	[ "$acc" = "$(meta final_val_masked_accuracy)" ] &&
	[ "$params" = "$(meta '"params' | sed 's/\.000$//')" ]
check "docs/models.md's encoder row is the shipped model's training record" $?
# and the model as trained is an encoder whose heads run on the lesson's text
"$bin" --no-db -c "load $model" -c 'text First Citizen:\nBefore we proceed any further, hear me speak.' \
	-c "heads" -c "show head 0.0" >"$dir/m.out" 2>&1
grep -q "mask none" "$dir/m.out" && grep -q '^62 tokens' "$dir/m.out" &&
	grep -q "an encoder's special keys" "$dir/m.out"
check "the shipped encoder loads as an encoder (mask none, [CLS] ... [SEP])" $?
# training on from an encoder: --objective mlm with --from is accepted
"$bin" train --no-db --from "$dir/a.safetensors" --objective mlm --data "$dir/text.txt" \
	--steps 2 --batch 2 --val-every 0 --quiet --out "$dir/f.safetensors" >"$dir/out" 2>"$dir/err"
rc=$?
[ -s "$dir/f.safetensors" ]
check "train --from an encoder with --objective mlm trains on" $(( rc != 0 || $? != 0 ))

# expect p / p.rank read what top prints: the shipped encoder's guess for a
# typed [MASK], its probability to 4 places, its rank; a false claim fails
masked='text To be, or [MASK]ot to be'
"$bin" --no-db -c "load $model" -c "$masked" -c "top 2 at 11" >"$dir/top.out" 2>&1
first=$(awk '$1 == 1 { print $2; exit }' "$dir/top.out")
second=$(awk '$1 == 2 { print $2; exit }' "$dir/top.out")
p1=$(awk '$1 == 1 { print $3; exit }' "$dir/top.out")
[ -n "$first" ] && [ -n "$second" ] && [ -n "$p1" ]
check "setup: top 2 at 11 lists two guesses for the [MASK]" $?
"$bin" --no-db --batch -c "load $model" -c "$masked" \
	-c "expect p 11 $first ~= $p1 +- 0.00005 and p.rank 11 $first == 1 and p.rank 11 $second == 2 \"x\"" \
	>"$dir/e.out" 2>&1
check "expect p and p.rank give top's probability and order" $?
"$bin" --no-db --batch -c "load $model" -c "$masked" -c "expect p.rank 11 $second == 1 \"x\"" \
	>"$dir/e.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "measured: p.rank 11 $second = 2" "$dir/e.out"
check "an expect that names the second guess as the first fails with the rank" $?
"$bin" --no-db --batch -c "load $model" -c "$masked" -c 'expect p 11 zz > 0 "x"' >"$dir/e.out" 2>&1
[ $? -ne 0 ] && grep -q 'no token "zz"' "$dir/e.out"
check "expect p refuses a word that is no token" $?
