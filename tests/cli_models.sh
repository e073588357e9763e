#!/bin/sh
# models: what load can open by name, from the models directory and the
# local Hugging Face cache, each described from its header or config.json
# (the same numbers the loaded model has); a mistyped name gets the
# nearest ones; a model whose weights cannot fit is refused before any
# weight is read.  Needs GPT-2's vocabulary from ../shared/tokenizers (or
# $ATTNSCOPE_SHARED/tokenizers) for the Hugging Face directory.
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-models
RUN_ARGS=--no-db

# the shipped models, described without loading them
run shakespeare -c "models"
check "the shipped models are listed with format, layers, heads, K/V heads, width and context" \
	sh -c "[ $rc -eq 0 ] && grep -q '^  shakespeare-gqa  *safetensors  *4  *4  *2  *128  *256 ' '$tmp/out' &&
	grep -q '^  shakespeare-mqa  *safetensors  *4  *4  *1  *128  *256 ' '$tmp/out' &&
	grep -q '^  induction  *safetensors  *2  *4  *4  *128  *64 ' '$tmp/out'"
check "the loaded model is marked" grep -q '^\* shakespeare  ' "$tmp/out"
check "lines fit 80 columns" sh -c "! awk 'length > 80' '$tmp/out' | grep -q ."

# the numbers are the loaded model's: layers, heads and K/V heads from --dump
run shakespeare-gqa --dump -t "To be"
dump=$(grep -o 'd_model [0-9]* layers [0-9]* heads [0-9]* kv_heads [0-9]*' "$tmp/out")
check "--dump of the loaded model agrees: $dump" \
	sh -c "[ '$dump' = 'd_model 128 layers 4 heads 4 kv_heads 2' ]"

# a models directory with a checkpoint, an HF directory and a stray file;
# an HF cache with one snapshot
mkdir -p "$tmp/models" "$tmp/hub/models--org--tiny/snapshots/abc123" "$tmp/hub/models--org--tiny/refs"
cp models/shakespeare-mqa.safetensors "$tmp/models/mine.safetensors"
echo "not a model" >"$tmp/models/notes.txt"
mkdir "$tmp/models/tiny-llama"
"$TOOLS/tool_mkhf" "$tmp/models/tiny-llama" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1 ||
	fail "setup (tool_mkhf)"
cp -r "$tmp/models/tiny-llama/." "$tmp/hub/models--org--tiny/snapshots/abc123/"
echo abc123 >"$tmp/hub/models--org--tiny/refs/main"
export ATTNSCOPE_MODELS="$tmp/models" HF_HUB_CACHE="$tmp/hub"
run "$tmp/ref.safetensors" -c "models"
check "the models directory: the checkpoint by its name, the HF directory with its GQA" \
	sh -c "[ $rc -eq 0 ] && grep -q '^  mine  *safetensors  *4  *4  *1 ' '$tmp/out' &&
	grep -q '^  tiny-llama  *hf-llama  *2  *4  *2  *32  *64 ' '$tmp/out'"
check "the cache's snapshot as hf:ORG/NAME" grep -q '^  hf:org/tiny  *hf-llama  *2  *4  *2 ' "$tmp/out"
check "a stray file says why it is not a model" \
	sh -c "grep -A1 '^  notes.txt  *(not a model)' '$tmp/out' | grep -q 'not a model format attnscope knows'"
run "$tmp/ref.safetensors" -c "load hf:org/tiny; load tiny-llama; load mine"
check "each listed name loads" sh -c "[ $rc -eq 0 ] && [ \$(grep -c '^loaded' '$tmp/out') -eq 3 ]"

# a mistyped name: the nearest ones
run "$tmp/ref.safetensors" -c "load tiny-lama"
check "load with a mistyped name suggests the nearest" \
	sh -c "[ $rc -ne 0 ] && grep -q 'did you mean tiny-llama?' '$tmp/err'"
run "$tmp/ref.safetensors" -c "load zzzzzzzz"
check "a name near nothing points to models" \
	sh -c "[ $rc -ne 0 ] && grep -q '(\`models\` lists the models there are)' '$tmp/err'"
unset ATTNSCOPE_MODELS HF_HUB_CACHE

# memory: under a 2 GiB address-space limit (ulimit -v), a config.json
# describing 3.3 billion parameters (12 GiB as float32) is refused before
# its tiny weights are read, saying what it needs.  Skipped where the
# binary cannot run under that limit at all (AddressSanitizer reserves
# terabytes of address space).
mkdir "$tmp/huge"
cp "$tmp/models/tiny-llama/"* "$tmp/huge/"
sed -e 's/"hidden_size": [0-9]*/"hidden_size": 4096/' \
	-e 's/"intermediate_size": [0-9]*/"intermediate_size": 16384/' \
	-e 's/"num_hidden_layers": [0-9]*/"num_hidden_layers": 12/' \
	-e 's/"num_attention_heads": [0-9]*/"num_attention_heads": 32/' \
	-e 's/"num_key_value_heads": [0-9]*/"num_key_value_heads": 8/' \
	"$tmp/models/tiny-llama/config.json" >"$tmp/huge/config.json"
run "$tmp/huge" -t hi
# (or, on a machine with less than 12.41 GiB free, for its size)
check "without a limit, weights far fewer than the config's are refused before allocating" \
	sh -c "[ $rc -ne 0 ] && grep -q -e 'config.json describes 3331043328 weights, but the safetensors files hold' \
	-e 'it will not fit' '$tmp/err'"
limited "$tmp/ref.safetensors" -t hi
if [ "$rc" -eq 0 ]; then
	limited "$tmp/huge" -t hi
	check "a model that cannot fit is refused by its size, in one line" \
		sh -c "[ $rc -ne 0 ] && grep -q 'parameters need 12.* GiB as float32, and .* of memory is available; it will not fit' '$tmp/err' &&
		[ \$(wc -l <'$tmp/err') -eq 1 ]"
else
	ok "a model that cannot fit is refused # skipped: the binary does not run under ulimit -v"
fi

exit $((failures > 0))
