#!/bin/sh
# Hugging Face Llama-family directories (loader-hf-llama.c): a seeded model
# written by tool_mkhf in HF's layout (rotate-half Q/K rows, HF names, one
# file or two shards and an index, Llama or Qwen2 with Q/K/V biases) gives
# exactly the numbers of the same weights as an attnscope checkpoint, also
# with Llama 3.1's rope_scaling (which changes them); what
# the engine cannot run is refused by name; a real tokenizer.json beside the
# model (tests/data/tokenizers) tokenizes as transformers.js does.  Needs GPT-2's vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-llama
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

for opt in "" --qwen2 --shards "--qwen2 --shards"; do
	name=$(echo "llama $opt" | tr -d '-' | tr ' ' _)
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opt >/dev/null 2>&1; then
		fail "$name setup (tool_mkhf $opt)"
		continue
	fi
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/ref.safetensors" -t "$text" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/ref.dump"
	check "$name: the HF directory gives the checkpoint's attention and losses exactly" \
		sh -c "[ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"
done
run "$tmp/hf" -t "$text" --dump
check "the config is read: RMSNorm, RoPE, SwiGLU, 2 K/V heads, biases for Qwen2" \
	sh -c "grep -q 'kv_heads 2 d_head 8 d_ff 48 context 64' '$tmp/out' &&
	grep -q 'norm rmsnorm eps 1e-06 placement pre pos rope theta 10000 mlp swiglu bias yes tied no' '$tmp/out'"
run "$tmp/hf" -c "text $text; attn mha; attn mqa; kv"
check "its native GQA converts both ways" sh -c "[ $rc -eq 0 ] && grep -q 'KV 3.50 KiB' '$tmp/out'"

# head_dim (Qwen3's, Mistral-Nemo's): heads of 16 and of 4 over d_model 32
# and 4 heads, and head_dim 8 = hidden / heads as Mistral's configs write
# it, each the same numbers as its checkpoint
for hd in "16:64" "4:16" "8:32"; do
	d=${hd%%:*} width=${hd#*:}
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --headdim "$d" >/dev/null 2>&1; then
		fail "head_dim $d setup (tool_mkhf --headdim $d)"
		continue
	fi
	run "$tmp/hf" -t "$text" --dump
	cp "$tmp/out" "$tmp/hf.full"
	grep -v '^model\|^config' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/ref.safetensors" -t "$text" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/ref.dump"
	check "head_dim $d: the HF directory gives the checkpoint's attention and losses exactly" \
		sh -c "[ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump' &&
		grep -q 'heads 4 kv_heads 2 d_head $d d_ff' '$tmp/hf.full'"
	run "$tmp/hf" -c "text $text; attn mqa; kv"
	check "head_dim $d: MQA runs and the KV cache counts heads $d wide" \
		sh -c "[ $rc -eq 0 ] && grep -q 'head dim $d,' '$tmp/out'"
done
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --headdim 16 >/dev/null 2>&1
run "$tmp/hf" -c "text $text; why 1.0 3 1; dla; heat norms; qkov 1.0; circuits"
check "head_dim 16: why and dla split exactly; heat norms, qkov and circuits run" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c 'left out 0.0000' '$tmp/out') -eq 2 ] &&
	grep -q '^heatmaps show norms' '$tmp/out'"

# a sliding window caps the context (exact within it), for Qwen2 only when
# use_sliding_window is true
for fam in "--qwen2:false:64" "--qwen2:true:16" ":absent:16"; do
	opt=${fam%%:*} rest=${fam#*:}
	use=${rest%%:*} want=${rest#*:}
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opt >/dev/null 2>&1
	field=""
	[ "$use" != absent ] && field="\"use_sliding_window\": $use, "
	sed "1s/^{/{\"sliding_window\": 16, $field/" "$tmp/hf/config.json" >"$tmp/c" &&
		mv "$tmp/c" "$tmp/hf/config.json"
	run "$tmp/hf" -t hi --dump
	check "sliding_window 16, ${opt:-llama} use_sliding_window $use: context $want" \
		sh -c "[ $rc -eq 0 ] && grep -q 'context $want\$' '$tmp/out'"
done

# Llama 3.1's RoPE scaling: the same weights with and without it; the
# scaled directory gives the scaled checkpoint's numbers, not the plain ones
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
run "$tmp/hf" -t "$text" --dump
grep -v '^model\|^config' "$tmp/out" >"$tmp/plain.dump"
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --llama3 >/dev/null 2>&1
run "$tmp/hf" -t "$text" --dump
grep -v '^model\|^config' "$tmp/out" >"$tmp/hf.dump"
check "llama3 rope_scaling is read and named" sh -c "[ $rc -eq 0 ] &&
	grep -q 'theta 10000 rope_scaling llama3 factor 8 low_freq 1 high_freq 4 original_context 16 mlp' '$tmp/out'"
run "$tmp/ref.safetensors" -t "$text" --dump
grep -v '^model\|^config' "$tmp/out" >"$tmp/ref.dump"
check "llama3: the HF directory gives the scaled checkpoint's attention and losses exactly" \
	sh -c "[ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"
check "llama3: and they differ from the same weights without scaling" \
	sh -c "[ -s '$tmp/plain.dump' ] && ! cmp -s '$tmp/hf.dump' '$tmp/plain.dump'"
cp "$tmp/hf/config.json" "$tmp/llama3.json"
# rope_scaling VALUE: the directory's config.json with that rope_scaling
# (and max_position_embeddings MAX when given)
with_scaling() {
	sed "s/\"rope_scaling\": {[^}]*}/\"rope_scaling\": $1/; s/\"max_position_embeddings\": 64/\"max_position_embeddings\": ${2:-64}/" \
		"$tmp/llama3.json" >"$tmp/hf/config.json"
}
with_scaling '{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}' 131072
run "$tmp/hf" -t hi --dump
check "Llama 3.2-1B's rope_scaling is read; its 131072 positions cap at the engine's 65536" \
	sh -c "[ $rc -eq 0 ] && grep -q 'context 65536\$' '$tmp/out' &&
	grep -q 'rope_scaling llama3 factor 32 low_freq 1 high_freq 4 original_context 8192 mlp' '$tmp/out'"
with_scaling '{"type": "linear", "factor": 2.0}'
run "$tmp/hf" -t hi --dump
check "the older key type names the kind; linear scaling is read" \
	sh -c "[ $rc -eq 0 ] && grep -q 'rope_scaling linear factor 2 mlp' '$tmp/out'"
refuse_scaling() {
	with_scaling "$1"
	run "$tmp/hf" -t hi
	check "rope_scaling $1 is refused: $2" sh -c "[ $rc -ne 0 ] && grep -q '$2' '$tmp/err'"
}
refuse_scaling '{"rope_type": "dynamic", "factor": 2.0}' \
	'rope_scaling dynamic is not supported: its frequencies change with the sequence length'
refuse_scaling '{"rope_type": "yarn", "factor": 4.0}' 'rope_scaling yarn is not supported yet'
refuse_scaling '{"rope_type": "longrope", "factor": 4.0}' 'rope_scaling longrope is not supported yet'
refuse_scaling '{"rope_type": "su"}' 'rope_scaling type "su" is not supported'
refuse_scaling '{"rope_type": "linear", "factor": 2.0, "beta_fast": 32}' \
	'rope_scaling key "beta_fast" is not supported'
refuse_scaling '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}' \
	'rope_scaling llama3 takes factor, low_freq_factor, high_freq_factor and original_max_position_embeddings'
refuse_scaling '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 16}' \
	'rope_high_freq 1 must be above rope_low_freq 4'
refuse_scaling '{"factor": 2.0}' 'rope_scaling has no rope_type'

# refused by name
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}}}\n' >"$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi
check "a WordPiece tokenizer.json is refused by name, not misread" \
	sh -c "[ $rc -ne 0 ] && grep -q 'tokenizer.json: model type WordPiece is not supported yet' '$tmp/err'"
printf '{"model": {"type": "BPE", "vocab": {"h": 0, "i": 1}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}}\n' \
	>"$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi
check "a tokenizer.json with an unsupported pre-tokenizer is refused by name" \
	sh -c "[ $rc -ne 0 ] && grep -q 'pre_tokenizer Whitespace is not supported yet' '$tmp/err'"
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --shards >/dev/null 2>&1
rm "$tmp/hf/model-00002-of-00002.safetensors"
run "$tmp/hf" -t hi
check "a missing shard is named" sh -c "[ $rc -ne 0 ] && grep -q 'model-00002-of-00002.safetensors' '$tmp/err'"

# tie_word_embeddings: absent is transformers' default for Llama, Qwen2 and
# Mistral, false: the file's lm_head.weight is the output layer
for opt in "" --qwen2; do
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opt >/dev/null 2>&1
	sed 's/"tie_word_embeddings": false, //' "$tmp/hf/config.json" >"$tmp/c" &&
		mv "$tmp/c" "$tmp/hf/config.json"
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/ref.safetensors" -t "$text" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/ref.dump"
	check "${opt:-llama} without tie_word_embeddings is untied: lm_head.weight is read" \
		sh -c "! grep -q tie_word '$tmp/hf/config.json' && [ -s '$tmp/hf.dump' ] &&
		cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"
done
sed '1s/^{/{"tie_word_embeddings": true, /' "$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "tied in config.json, but lm_head.weight is not the embeddings: refused, not ignored" \
	sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'lm_head.weight differs from model.embed_tokens.weight at row 0, but config.json ties them' '$tmp/err'"

# the index and its shards: true one-line messages
rm -rf "$tmp/hf" && mkdir "$tmp/hf" "$tmp/one"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --shards >/dev/null 2>&1
"$TOOLS/tool_mkhf" "$tmp/one" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
cp "$tmp/hf/model.safetensors.index.json" "$tmp/index"
printf '{"weight_map": ' >"$tmp/hf/model.safetensors.index.json"
run "$tmp/hf" -t hi
check "an index that is not JSON says so" sh -c "[ $rc -eq 1 ] &&
	grep -q 'model.safetensors.index.json: invalid JSON (line 1' '$tmp/err'"
cp "$tmp/index" "$tmp/hf/model.safetensors.index.json"
cp "$tmp/one/model.safetensors" "$tmp/hf/model-00002-of-00002.safetensors"
run "$tmp/hf" -t hi
check "a tensor in two shards is named with both" sh -c "[ $rc -eq 1 ] &&
	grep -q 'tensor \"model\..*\" is in two shards, model-00001-of-00002.safetensors and model-00002-of-00002.safetensors' '$tmp/err'"

# a shard that is a FIFO, or a symbolic link to one, is refused for what
# it is, at once (the open does not wait for a writer: `timeout 10` ends a
# broken build's run); so is every other file the loader opens
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --shards >/dev/null 2>&1
mv "$tmp/hf/model-00002-of-00002.safetensors" "$tmp/shard2"
mkfifo "$tmp/hf/model-00002-of-00002.safetensors"
TIMEOUT="timeout 10" run "$tmp/hf" -t hi </dev/null
check "a shard that is a FIFO is refused as one" sh -c "[ $rc -eq 1 ] &&
	grep -q 'model-00002-of-00002.safetensors: is a FIFO, not a regular file' '$tmp/err'"
rm "$tmp/hf/model-00002-of-00002.safetensors"
mkfifo "$tmp/fifo"
ln -s "$tmp/fifo" "$tmp/hf/model-00002-of-00002.safetensors"
TIMEOUT="timeout 10" run "$tmp/hf" -t hi </dev/null
check "a shard that is a symbolic link to a FIFO is refused as a FIFO" sh -c "[ $rc -eq 1 ] &&
	grep -q 'model-00002-of-00002.safetensors: is a FIFO, not a regular file' '$tmp/err'"
rm "$tmp/hf/model-00002-of-00002.safetensors"
mv "$tmp/shard2" "$tmp/hf/model-00002-of-00002.safetensors"
for f in merges.txt vocab.json model.safetensors.index.json; do
	mv "$tmp/hf/$f" "$tmp/saved"
	ln -s "$tmp/fifo" "$tmp/hf/$f"
	TIMEOUT="timeout 10" run "$tmp/hf" -t hi </dev/null
	check "$f a link to a FIFO: refused at once, not waited on" sh -c "[ $rc -eq 1 ] && [ -s '$tmp/err' ]"
	rm "$tmp/hf/$f"
	mv "$tmp/saved" "$tmp/hf/$f"
done
# a tokenizer file too large is refused by its size, not read
truncate -s 300M "$tmp/hf/merges.txt"
run "$tmp/hf" -t hi </dev/null
check "a 300 MiB merges.txt is refused by its size" sh -c "[ $rc -eq 1 ] &&
	grep -q 'merges.txt: 300 MiB is more than the 256 MiB a tokenizer file may have' '$tmp/err'"

# a real tokenizer.json (sentencepiece-style BPE, 32000 tokens) beside the
# model: the ids are transformers.js's (tests/data/llama2_expect.tsv), and
# the checkpoint, which stores the tokenizer, gives the same dump
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
gzip -dc tests/data/tokenizers/llama2.json.gz >"$tmp/llama2.json"
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tmp/llama2.json" >/dev/null 2>&1; then
	line="To be, or not to be, that is the question:" # a row of the table
	hex=$(printf '%s' "$line" | od -An -tx1 | tr -d ' \n')
	want=$(awk -F '\t' -v h="$hex" '$1 == h { print "1 " $2 }' tests/data/llama2_expect.tsv)
	run "$tmp/hf" -t "$line" --dump
	got=$(sed -n 's/^token [0-9]* id \([0-9]*\) .*/\1/p' "$tmp/out" | tr '\n' ' ' | sed 's/ $//')
	check "tokenizer.json beside the model: BOS and transformers.js's ids" \
		sh -c "[ $rc -eq 0 ] && [ -n '$want' ] && [ '$got' = '$want' ]"
	grep -v '^model\|^config' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/ref.safetensors" -t "$line" --dump
	grep -v '^model\|^config' "$tmp/out" >"$tmp/ref.dump"
	check "the checkpoint keeps the tokenizer.json tokenizer: the same dump" \
		sh -c "[ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"
else
	fail "setup (tool_mkhf with a tokenizer.json)"
fi

exit $((failures > 0))
