#!/bin/sh
# Hugging Face GPT-NeoX directories (loader-hf-neox.c): a seeded model
# written by tool_mkhf --neox in HF's layout (each head's [q; k; v] fused in
# query_key_value, rotate-half over the first 4 of 16 dims, HF names, a
# tokenizer.json; one file or two shards; parallel or sequential blocks)
# gives exactly the numbers of the same weights as an attnscope checkpoint;
# the newer rope_parameters spelling reads the same; what the engine cannot
# run is refused by name; training from it keeps its blocks.  Needs GPT-2's
# vocabulary from ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-neox
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkneox OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mkneox() {
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --neox "$@" >/dev/null 2>&1
}

for opt in "" --shards --sequential; do
	name=$(echo "neox $opt" | tr -d '-' | tr ' ' _)
	if ! mkneox $opt; then
		fail "$name setup (tool_mkhf --neox $opt)"
		continue
	fi
	same_as_ref "$name" --loss
done
check "use_parallel_residual false is read as sequential blocks" \
	sh -c "! grep -q parallel '$tmp/hf.dump' && grep -q 'rotary 4 mlp gelu-exact' '$tmp/hf.dump'"

mkneox
run "$tmp/hf" -t "$text" --dump
check "the config is read: LayerNorm, RoPE over 4 of 16 dims, exact GELU, biases, untied, parallel" \
	sh -c "grep -q 'heads 4 kv_heads 4 d_head 16 d_ff 96 context 64' '$tmp/out' &&
	grep -q 'norm layernorm eps 1e-05 placement pre pos rope theta 10000 rotary 4 mlp gelu-exact bias yes tied no parallel yes' '$tmp/out'"

# the newer spelling: rope_parameters holds theta and the rotary fraction
sed 's/"rotary_pct": 0.25, "rotary_emb_base": 10000,/"rope_parameters": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25},/' \
	"$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
check "setup: config.json rewritten with rope_parameters" grep -q partial_rotary_factor "$tmp/hf/config.json"
same_as_ref "rope_parameters" --loss

mkneox
run "$tmp/hf" -c "text $text; norm post; attn mqa; compare variants"
check "run options apply (post-norm runs the sequential block; K/V sharing converts)" \
	sh -c "[ $rc -eq 0 ] && grep -q 'post-norm' '$tmp/out'"

# refused by name: config.json edits on a fresh model each
refuse() { refuse_edit mkneox "$@"; } # NAME SED-EXPRESSION MESSAGE
refuse rope_scaling 's/"rope_scaling": null/"rope_scaling": {"type": "linear", "factor": 2.0}/' \
	'rope_scaling is not supported'
refuse "hidden_act relu" 's/"hidden_act": "gelu"/"hidden_act": "relu"/' \
	'hidden_act "relu" is not supported'
refuse "an odd rotary width (rotary_pct 0.0625 of 16)" 's/"rotary_pct": 0.25/"rotary_pct": 0.0625/' \
	'rotary_pct 0.0625 gives 1 rotary dims'
refuse "rope_type linear" \
	's/"rotary_pct": 0.25,/"rope_parameters": {"rope_type": "linear", "factor": 2.0}, "rotary_pct": 0.25,/' \
	'rope_type linear is not supported'
refuse "a rotary fraction spelled twice, differently" \
	's/"rotary_pct": 0.25,/"rotary_pct": 0.25, "rope_parameters": {"partial_rotary_factor": 0.5},/' \
	'rotary_pct 0.25 and rope_parameters.partial_rotary_factor 0.5 disagree'
refuse "attention_bias false beside bias tensors" 's/"attention_bias": true/"attention_bias": false/' \
	'unexpected tensor "gpt_neox.layers.0.attention.query_key_value.bias"'
refuse "a config.json asking for more weights than the files hold" \
	's/"num_hidden_layers": 2/"num_hidden_layers": 200/' 'describes .* weights, but the safetensors files hold'

mkneox
sed 's/"pre_tokenizer":{"type":"ByteLevel"/"pre_tokenizer":{"type":"Whitespace"/' "$tmp/hf/tokenizer.json" >"$tmp/t" &&
	mv "$tmp/t" "$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi
check "a tokenizer.json with a pre-tokenizer attnscope lacks is refused, not misread" \
	sh -c "[ $rc -ne 0 ] && grep -q 'pre_tokenizer Whitespace is not supported' '$tmp/err'"
mkneox
sed 's/"normalizer":{"type":"NFC"}/"normalizer":{"type":"Lowercase"}/' "$tmp/hf/tokenizer.json" >"$tmp/t" &&
	mv "$tmp/t" "$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi
check "a tokenizer.json with another normalizer is refused by name" \
	sh -c "[ $rc -ne 0 ] && grep -q 'normalizer Lowercase is not supported' '$tmp/err'"
run "$tmp/hf" -t hi


mkneox
sed 's/"add_prefix_space":false/"add_prefix_space":true/' "$tmp/hf/tokenizer.json" >"$tmp/t" &&
	mv "$tmp/t" "$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi --dump
check "a ByteLevel pre-tokenizer that adds a prefix space: 'hi' is read as ' hi' (no BOS, as Pythia)" \
	sh -c "[ $rc -eq 0 ] && grep -q '^token 0 id 23105 ␣hi$' '$tmp/out'"

mkneox --shards
rm "$tmp/hf/model-00002-of-00002.safetensors"
run "$tmp/hf" -t hi
check "a missing shard is named" sh -c "[ $rc -ne 0 ] && grep -q 'model-00002-of-00002.safetensors' '$tmp/err'"

# training from it keeps its blocks: one step, then the checkpoint's config
mkneox
training_text "$tmp/data.txt"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 1 --batch 2 \
	--out "$tmp/t.safetensors"
check "train --from a GPT-NeoX model runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/t.safetensors' ]"
run "$tmp/t.safetensors" -t "$text" --dump
check "and its checkpoint keeps parallel blocks, RoPE over 4 of 16 dims and exact GELU" \
	grep -q 'rotary 4 mlp gelu-exact bias yes tied no parallel yes' "$tmp/out"

exit $((failures > 0))
