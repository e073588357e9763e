#!/bin/sh
# Hugging Face GPT-Neo directories (loader-hf-neo.c): a seeded model
# written by tool_mkhf --neo in HF's layout (separate q_proj / k_proj /
# v_proj without biases, out_proj with, nn.Linear weights, the mask
# buffers, config.json spelled as TinyStories-1M's; layer 0 global, layer 1
# local over 4 keys; one file or two shards) gives exactly the numbers of
# the same weights as an attnscope checkpoint; the local layer sees only
# its window; what the engine cannot run is refused by name.  Needs
# GPT-2's vocabulary from ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-neo
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkneo OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mkneo() {
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --neo "$@" >/dev/null 2>&1
}

for opt in "" --shards; do
	if ! mkneo $opt; then
		fail "neo $opt setup (tool_mkhf --neo $opt)"
		continue
	fi
	same_as_ref "neo $opt" --loss
done

mkneo
run "$tmp/hf" -t "$text" --dump
check "the config is read: 4 heads of 8, d_ff 4 * 32, tanh GELU, tied, unscaled, layer 1 local over 4 keys" \
	sh -c "grep -q 'heads 4 kv_heads 4 d_head 8 d_ff 128 context 64' '$tmp/out' &&
	grep -q 'pos learned mlp gelu bias yes tied yes residual yes scale no mask causal local_window 4 local_layers 1 ' '$tmp/out'"

# row 9 of head 0 in each layer: the local layer's weights on keys 0..5
# (i - j >= 4) are 0 and its 4 keys 6..9 sum to 1; the global layer's are not 0
row() { # LAYER.HEAD I: the attention row of query I
	awk -v h="attn $1" -v i="$2" '$0 == h { n = 0; on = 1; next }
		on && n++ == i { print; exit }' "$tmp/out"
}
run "$tmp/hf" -t "$text" --dump
check "setup: the text is longer than the window (10 tokens or more)" \
	sh -c "[ \$(grep -c '^token ' '$tmp/out') -ge 10 ]"
row 1.0 9 >"$tmp/local"
row 0.0 9 >"$tmp/global"
check "the local layer's query 9 sees keys 6..9 only (its weights sum to 1)" \
	awk '{ s = 0; for (j = 1; j <= 6; j++) if ($j != 0) exit 1;
		for (j = 7; j <= 10; j++) s += $j; if (s < 0.9999 || s > 1.0001) exit 1 }' "$tmp/local"
check "the global layer's query 9 sees key 0" awk '{ exit !($1 > 0) }' "$tmp/global"

run "$tmp/hf" -c "text $text; why 1.0 9 2"
check "why on the local layer names the window a key outside it is hidden by" \
	sh -c "[ $rc -ne 0 ] && grep -q \"key 2 is outside query 9's window of 3\" '$tmp/err'"
run "$tmp/hf" -c "text $text; why 0.0 9 2"
check "why on the global layer splits the same key's score" sh -c "[ $rc -eq 0 ] && grep -q 'qk bias' '$tmp/out'"

run "$tmp/hf" -c "text $text; scale"
check "scale names the native setting off and warns that on is not how GPT-Neo was trained" \
	sh -c "[ $rc -eq 0 ] && grep -q 'not trained' '$tmp/out'"

# refused by name: config.json edits on a fresh model each
refuse() { refuse_edit mkneo "$@"; } # NAME SED-EXPRESSION MESSAGE
refuse "an attention kind the engine lacks" 's/\[\["global", "local"\], 1\]/[["global", "sparse"], 1]/' \
	'is sparse; the kinds are "global" and "local"'
refuse "attention_types that do not give num_layers" 's/"num_layers": 2/"num_layers": 3/' \
	'attention_types gives 2 layers, num_layers is 3'
refuse "attention_layers that disagree with attention_types" \
	's/"attention_layers": \["global", "local"\]/"attention_layers": ["local", "local"]/' \
	'attention_layers\[0\] disagrees with attention_types'
refuse "activation_function relu" 's/"activation_function": "gelu_new"/"activation_function": "relu"/' \
	'activation_function "relu" is not supported'
refuse "a window of 0" 's/"window_size": 4/"window_size": 0/' 'window_size'

mkneo
printf 'x' >>"$tmp/hf/model.safetensors"
cp "$tmp/hf/model.safetensors" "$tmp/m" && head -c 4000 "$tmp/m" >"$tmp/hf/model.safetensors"
run "$tmp/hf" -t hi
check "a truncated model.safetensors is refused with one line" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"

# show mask draws each kind of layer's mask: the global layer's causal one,
# and the local layer's window of 4 keys (itself and 3 back), even under
# the run's mask causal
mkneo
run "$tmp/hf" -t "$text" -c "show mask"
check "show mask names layer 0 causal and layer 1 local, window 3" \
	sh -c "grep -q '^mask causal (current), [0-9]* tokens: layer 0: ' '$tmp/out' &&
	grep -q '^mask window 3 (current), [0-9]* tokens: layer 1 (local): ' '$tmp/out'"
run "$tmp/hf" -t "$text" -c "export mask --format csv"
check "the local panel's query 9 sees keys 6..9 and no other; the causal panel's sees 0..9" \
	awk -F, '$1 == "\"window 3\"" && $2 == 9 { for (j = 0; j < 10; j++)
			if (($(4 + j) == "seen") != (j >= 6)) bad = 1; w = 1 }
		$1 == "\"causal\"" && $2 == 9 { for (j = 0; j < 10; j++)
			if ($(4 + j) != "seen") bad = 1; g = 1 }
		END { exit !(w && g && !bad) }' "$tmp/out"

# training from it keeps its layers: one step, then the checkpoint's config
mkneo
training_text "$tmp/data.txt"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 1 --batch 2 \
	--out "$tmp/t.safetensors"
check "train --from a GPT-Neo model runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/t.safetensors' ]"
run "$tmp/t.safetensors" -t "$text" --dump
check "and its checkpoint keeps the unscaled scores and layer 1 local over 4 keys" \
	grep -q 'scale no mask causal local_window 4 local_layers 1 ' "$tmp/out"

exit $((failures > 0))
