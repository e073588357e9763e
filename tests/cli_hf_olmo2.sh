#!/bin/sh
# Hugging Face OLMo-2 directories (loader-hf-olmo2.c): a seeded model written
# by tool_mkhf --olmo2 in HF's layout (rotate-half q and k rows and q/k norm
# scales, no norm before the sub-blocks, the norms after them, q_norm over
# all query heads and k_norm over both key heads, untied, config.json
# spelled as OLMo-2-0425-1B's; one file or two shards) gives exactly the
# numbers of the same weights as an attnscope checkpoint; the explorer
# commands run (why and dla too, their tables summing), or say in one line
# what they cannot do on it (a conversion to fewer key heads, another norm
# placement); train --from it keeps its switches and refuses other K/V
# heads; what the engine cannot run is refused by name.  Needs GPT-2's
# vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-olmo2
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mko OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mko() {
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --olmo2 "$@" >/dev/null 2>&1
}

for opt in "" "--shards"; do
	if ! mko $opt; then
		fail "olmo2 $opt setup (tool_mkhf --olmo2 $opt)"
		continue
	fi
	same_as_ref "olmo2 $opt" --loss
done

mko
run "$tmp/hf" -t "$text" --dump
check "the config is read: RoPE base 500000, untied, whole-width q/k norm, norms after the sub-blocks only" \
	grep -q 'theta 500000 mlp swiglu bias no tied no qk_norm whole sandwich post_only ' "$tmp/out"

for c in "qkov 1.2" "circuits" "heat norms" "heads" "lens" "attn mha; kv" "scale off" \
	"ablate 0.1" "generate 4"; do
	run "$tmp/hf" -c "text $text; $c"
	check "$c runs on OLMo-2" sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ]"
done
run "$tmp/hf" -c "text $text; qkov 1.2"
check "qkov shows the OV circuit and the QK split (the whole-width q/k norm frozen)" \
	sh -c "grep -q '^copying score' '$tmp/out' && grep -q '^QK circuit of 1.2 on the text' '$tmp/out' &&
	grep -q '^the whole score ' '$tmp/out'"
refused() { # COMMAND MESSAGE
	run "$tmp/hf" -c "text $text; $1"
	check "$1 is refused in one line: $2" sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q -- '$2' '$tmp/err'"
}
refused "attn mqa" "key norm spans its 2 key heads together"
refused "norm post" "norm placement stays native"
run "$tmp/hf" -c "text $text; why 1.2 5 3; why 0.0 9 9; dla; attn mha; why 1.1 12 0; dla 3"
sums=$(sums_check)
check "why and dla split OLMo-2 (sandwich norms and the whole-width q/k norm frozen): 5 tables sum" \
	sh -c "[ $rc -eq 0 ] && [ '$sums' = '5 0 0' ] &&
	[ \$(grep -c '^q/k norm frozen at the whole row' '$tmp/out') -eq 3 ] &&
	[ \$(grep -c '^no norm before the sub-blocks (OLMo-2' '$tmp/out') -eq 3 ]"

refuse() { refuse_edit mko "$@"; } # NAME SED-EXPRESSION MESSAGE
refuse "rope_scaling" 's/"rope_scaling": null/"rope_scaling": {"rope_type": "linear", "factor": 2}/' \
	'rope_scaling is not supported for OLMo-2 yet'
refuse "attention_bias true" 's/"attention_bias": false/"attention_bias": true/' \
	'attention_bias true is not supported'
refuse "hidden_act gelu" 's/"hidden_act": "silu"/"hidden_act": "gelu"/' 'hidden_act "gelu" is not supported'
refuse "a Llama config over OLMo-2's weights (no input_layernorm)" \
	's/"model_type": "olmo2"/"model_type": "llama"/' 'input_layernorm.weight'

# training from it keeps its switches (two steps, then the checkpoint's
# config); other K/V heads are refused in one line
mko
training_text "$tmp/data.txt"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 2 --batch 2 \
	--out "$tmp/t.safetensors"
check "train --from an OLMo-2 directory runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/t.safetensors' ]"
run "$tmp/t.safetensors" -t "$text" --dump
check "and its checkpoint keeps the whole-width q/k norm, sandwich norms and post_only" \
	grep -q 'qk_norm whole sandwich post_only' "$tmp/out"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --kv-heads 1 --steps 2 \
	--batch 2 --out "$tmp/t1.safetensors"
check "train --from it with --kv-heads 1 is refused in one line" sh -c "[ $rc -ne 0 ] &&
	[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'key norm spans its 2 key heads' '$tmp/err' &&
	[ ! -e '$tmp/t1.safetensors' ]"

run -c "help load"
check "help load names the family" sh -c "[ $rc -eq 0 ] && grep -q 'OLMo-2' '$tmp/out'"

exit $((failures > 0))
