#!/bin/sh
# Hugging Face Phi-3 directories (loader-hf-phi3.c): a seeded model written
# by tool_mkhf --phi3 in HF's layout (fused qkv_proj with rotate-half q and
# k rows, fused gate_up_proj, config.json spelled as Phi-3-mini-4k's with a
# sliding window of 6 keys; one file or two shards; --partial: RoPE over
# half of each head and tied, as Phi-4-mini) gives exactly the numbers of
# the same weights as an attnscope checkpoint; a text longer than the
# window sees only the window; a sentencepiece tokenizer.json (Phi-3's
# kind) loads beside it; Phi-3.5's LongRoPE (tool_mkhf --longrope) gives
# the checkpoint's numbers, its spellings read alike and damaged tables
# are refused in one line; what the engine cannot run is refused by name.  Needs GPT-2's vocabulary from ../shared/tokenizers (or
# $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-phi3
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkphi TOKENIZER OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mkphi() {
	tk=$1
	shift
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tk" --phi3 "$@" >/dev/null 2>&1
}

gzip -dc tests/data/tokenizers/llama2.json.gz >"$tmp/llama2.json"
for opt in "$gpt2" "$gpt2 --shards" "$gpt2 --partial" "$gpt2 --partial --shards" \
	"$tmp/llama2.json"; do
	name="phi3 $(echo "$opt" | sed "s|$gpt2|gpt2|; s|$tmp/||")"
	if ! mkphi $opt; then
		fail "$name setup (tool_mkhf --phi3 $opt)"
		continue
	fi
	same_as_ref "$name" --loss
done
check "setup: a sentencepiece tokenizer.json was the last one's (32000 tokens)" \
	grep -q '^config vocab 32000 ' "$tmp/hf.dump"

mkphi "$gpt2"
run "$tmp/hf" -t "$text" --dump
check "the config is read: 2 K/V heads, RMSNorm eps 1e-5, untied, every layer local over 6 keys" \
	sh -c "grep -q 'heads 4 kv_heads 2 d_head 8 d_ff 48 context 64' '$tmp/out' &&
	grep -q 'norm rmsnorm eps 1e-05 placement pre pos rope theta 10000 mlp swiglu bias no tied no local_window 6 local_layers 0,1 ' '$tmp/out'"
mkphi "$gpt2" --partial
run "$tmp/hf" -t "$text" --dump
check "partial_rotary_factor 0.5 turns 4 of 8 dims; tie_word_embeddings true ties" \
	grep -q 'pos rope theta 10000 rotary 4 mlp swiglu bias no tied yes ' "$tmp/out"

# row 9 of head 0 in each layer: keys 0..3 (9 - j >= 6) get 0 and the
# window's 6 keys 4..9 sum to 1
row() { # LAYER.HEAD I: the attention row of query I
	awk -v h="attn $1" -v i="$2" '$0 == h { n = 0; on = 1; next }
		on && n++ == i { print; exit }' "$tmp/out"
}
mkphi "$gpt2"
run "$tmp/hf" -t "$text" --dump
check "setup: the text is longer than the window (10 tokens or more)" \
	sh -c "[ \$(grep -c '^token ' '$tmp/out') -ge 10 ]"
for lh in 0.0 1.3; do
	row $lh 9 >"$tmp/row"
	check "sliding_window 6: layer ${lh%.*}'s query 9 sees keys 4..9 only (they sum to 1)" \
		awk '{ s = 0; for (j = 1; j <= 4; j++) if ($j != 0) exit 1;
			for (j = 5; j <= 10; j++) s += $j; if (s < 0.9999 || s > 1.0001) exit 1 }' "$tmp/row"
done

# LongRoPE as Phi-3.5-mini spells it (tool_mkhf --longrope: an original
# context of 4, shorter than the text, so the long table turns it; with
# --partial over 4 of 8 dims): the checkpoint's numbers, and a text within
# the original context too
for opt in "" "--partial"; do
	mkphi "$gpt2" --longrope $opt || fail "longrope $opt setup (tool_mkhf --phi3 --longrope)"
	same_as_ref "phi3 longrope${opt:+ $opt}" --loss
	long_text=$text text="To be" # 2 tokens
	same_as_ref "phi3 longrope${opt:+ $opt}, a text within the original context" --loss
	check "setup: that text is within the original context (4 tokens)" \
		sh -c "[ \$(grep -c '^token ' '$tmp/hf.dump') -le 4 ]"
	text=$long_text
done
mkphi "$gpt2" --longrope
run "$tmp/hf" -t "$text" --dump
check "longrope is read and named: original context 4, attention factor sqrt(1 + ln 16 / ln 4), both tables" \
	grep -q 'theta 10000 rope_scaling longrope original_context 4 attn_factor 1.73205 short_factor 1,1.02,1.04,1.06 long_factor 1.08,4.78,15.88,34.38 mlp swiglu bias no tied no params' "$tmp/out"
cp "$tmp/out" "$tmp/longrope.dump"
# edit SED-EXPRESSION: $tmp/hf's config.json edited, then --dump of $text
edit() {
	mkphi "$gpt2" --longrope
	sed "$1" "$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
	run "$tmp/hf" -t "$text" --dump
}
for spelling in '"type": "su"' '"rope_type": "longrope"' '"rope_type": "su", "type": "su"'; do
	edit "s/\"type\": \"longrope\"/$spelling/"
	check "rope_scaling {$spelling} reads as longrope" cmp -s "$tmp/out" "$tmp/longrope.dump"
done
edit 's/"type": "longrope"/"type": "longrope", "attention_factor": 1.5/'
check "an explicit attention_factor is taken as it is" \
	grep -q 'rope_scaling longrope original_context 4 attn_factor 1.5 short' "$tmp/out"
edit 's/"type": "longrope"/"type": "longrope", "factor": 4/'
check "an explicit factor 4 gives the attention factor sqrt(1 + ln 4 / ln 4)" \
	grep -q 'rope_scaling longrope original_context 4 attn_factor 1.41421 short' "$tmp/out"
edit 's/"original_max_position_embeddings": 4, //; s/"type": "longrope"/"type": "longrope", "original_max_position_embeddings": 8/'
check "original_max_position_embeddings inside rope_scaling (factor 64 / 8)" \
	grep -q 'rope_scaling longrope original_context 8 attn_factor 1.41421 short' "$tmp/out"

# refused by name: config.json edits on a fresh model each
refuse() { refuse_edit "mkphi $gpt2 $4" "$1" "$2" "$3"; } # NAME SED-EXPRESSION MESSAGE [TOOL OPTION]
refuse "a long_factor one short" 's/"long_factor": \[1.0800000429153442, /"long_factor": [/' \
	'rope_scaling long_factor holds 3 factors, not the 4 of the 8 rotary dims' --longrope
refuse "a short_factor for the whole head under partial rotary" \
	's/"short_factor": \[1.0, /"short_factor": [1.0, 1.0, 1.0, /' \
	'rope_scaling short_factor holds 4 factors, not the 2 of the 4 rotary dims' "--longrope --partial"
refuse "a factor of 0" 's/"short_factor": \[1.0, /"short_factor": [0, /' \
	'rope_scaling short_factor\[0\] = 0 must be above 0' --longrope
refuse "a negative factor" 's/"long_factor": \[1.0800000429153442, /"long_factor": [-1.08, /' \
	'rope_scaling long_factor\[0\] = -1.08 must be above 0' --longrope
refuse "a factor that is not a number" 's/"long_factor": \[1.0800000429153442, /"long_factor": ["1.08", /' \
	'"long_factor"\[0\] must be a number' --longrope
refuse "a missing short_factor" 's/"short_factor": \[[^]]*\], //' \
	'rope_scaling: missing key "short_factor"' --longrope
refuse "an attention_factor of 0" 's/"type": "longrope"/"type": "longrope", "attention_factor": 0/' \
	'attention factor 0 (factor 16 over an original context of 4) is not a positive number' --longrope
refuse "a key longrope does not read" 's/"type": "longrope"/"type": "longrope", "beta_fast": 32/' \
	'rope_scaling key "beta_fast" is not supported for longrope' --longrope
refuse "rope_type and type that differ" 's/"type": "longrope"/"type": "longrope", "rope_type": "yarn"/' \
	'rope_type and type differ' --longrope
refuse "rope_scaling yarn" 's/"rope_scaling": null/"rope_scaling": {"rope_type": "yarn", "factor": 4}/' \
	'rope_scaling type "yarn" is not supported'
refuse "hidden_act gelu_new" 's/"hidden_act": "silu"/"hidden_act": "gelu_new"/' \
	'hidden_act "gelu_new" is not supported'
refuse "a partial_rotary_factor that turns one dim" \
	's/"partial_rotary_factor": 0.5/"partial_rotary_factor": 0.2/' \
	'partial_rotary_factor 0.2 turns 1 of head_dim 8' --partial
refuse "a head_dim the engine cannot hold" 's/"hidden_size": 32/"head_dim": 16, "hidden_size": 32/' \
	'head_dim 16 is not hidden_size / num_attention_heads (8)'
refuse "tie_word_embeddings false without lm_head.weight (the weights fall short)" \
	's/"tie_word_embeddings": true/"tie_word_embeddings": false/' \
	'config.json describes 3231968 weights, but the safetensors files hold 1623744' --partial
refuse "num_key_value_heads that do not fit the fused qkv_proj" \
	's/"num_key_value_heads": 2/"num_key_value_heads": 4/' 'qkv_proj.weight'

mkphi "$gpt2"
cp "$tmp/hf/model.safetensors" "$tmp/m" && head -c 4000 "$tmp/m" >"$tmp/hf/model.safetensors"
run "$tmp/hf" -t hi
check "a truncated model.safetensors is refused with one line" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"

run -c "help load"
check "help load names the family" sh -c "[ $rc -eq 0 ] && grep -q 'Phi-3' '$tmp/out'"

exit $((failures > 0))
