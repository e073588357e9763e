#!/bin/sh
# The trainer's switches for the lab's experiments (run by tests/run.sh):
# models without residual connections, scaling or MLP, trained with no mask
# or the mask after the softmax, and --from MODEL [--kv-heads G], which
# starts from a model's weights, converted the way the explorer converts.
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-train-lab
training_text "$tmp/text.txt"
tiny="--steps 3 --layers 2 --heads 2 --d-model 16 --context 16 --batch 4 --no-db --quiet"

# every switch at once: the checkpoint keeps them, and the model runs
run train --data "$tmp/text.txt" --out "$tmp/sw.safetensors" $tiny \
	--no-residual --no-scale --no-mlp --mask after-softmax
check "train with every switch exits 0" status 0
run "$tmp/sw.safetensors" --no-db -t "the cat sat" --dump
check "the switches are stored in the checkpoint" \
	has_out "mlp none bias yes tied yes residual no scale no mask after-softmax"
run "$tmp/sw.safetensors" --no-db -c "text the cat; mask causal; reset; stats"
check "a switched model runs in the explorer, reset keeps its native mask" \
	sh -c "! grep -q 'mask:' '$tmp/out' || grep -q 'mask:causal' '$tmp/out'"

# an ordinary model's config is written as before: no switch keys at all
run train --data "$tmp/text.txt" --out "$tmp/plain.safetensors" $tiny
run "$tmp/plain.safetensors" --no-db -t "the cat" --dump
check "an ordinary model shows no switches" sh -c "! grep -q 'residual' '$tmp/out'"

# --from with --kv-heads 2 and a learning rate too small to move anything
# gives the explorer's mean-pooled GQA-2 conversion of the same model
run train --from shakespeare --kv-heads 2 --data "$tmp/text.txt" --out "$tmp/g2.safetensors" \
	--steps 1 --lr 1e-9 --warmup 0 --batch 1 --no-db --quiet
check "train --from shakespeare --kv-heads 2 exits 0" status 0
text="To be, or not to be, that is the question."
run "$tmp/g2.safetensors" --no-db -t "$text" --dump
check "the converted model has 2 key/value heads" has_out "kv_heads 2 "
run "$tmp/g2.safetensors" --no-db -c "text $text"
from=$(sed -n 's/.* loss \([0-9.]*\) .*/\1/p' "$tmp/out" | head -1)
run shakespeare --no-db -c "attn gqa 2; text $text"
conv=$(sed -n 's/.* loss \([0-9.]*\) .*/\1/p' "$tmp/out" | tail -1)
check "its loss equals the explorer's attn gqa 2 ($from vs $conv)" \
	awk -v a="$from" -v b="$conv" 'BEGIN { d = a - b; exit !(a != "" && d < 2e-3 && d > -2e-3) }'

# what cannot go with --from, and a mask a model cannot be trained with
run train --from shakespeare --layers 3 --data "$tmp/text.txt" --out "$tmp/x.safetensors"
check "--from with a shape flag is a usage error naming it" \
	sh -c "[ $rc -eq 2 ] && grep -q -- '--layers cannot be given' '$tmp/err'"
run train --from "$tmp/nothing" --data "$tmp/text.txt" --out "$tmp/x.safetensors"
check "--from a missing model fails naming it" \
	sh -c "[ $rc -eq 1 ] && grep -q 'nothing' '$tmp/err' && [ \$(wc -l <'$tmp/err') -eq 1 ]"
run train --mask window --data "$tmp/text.txt" --out "$tmp/x.safetensors"
check "--mask window is refused" sh -c "[ $rc -eq 2 ] && grep -q 'after-softmax' '$tmp/err'"
[ -e "$tmp/x.safetensors" ] && fail "no checkpoint is written by a refused run"

exit $((failures > 0))
