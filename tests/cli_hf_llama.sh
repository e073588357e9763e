#!/bin/sh
# Hugging Face Llama-family directories (loader-hf-llama.c): a seeded model
# written by tool_mkhf in HF's layout (rotate-half Q/K rows, HF names, one
# file or two shards and an index, Llama or Qwen2 with Q/K/V biases) gives
# exactly the numbers of the same weights as an attnscope checkpoint; what
# the engine cannot run is refused by name.  Needs GPT-2's vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
shared=${ATTNSCOPE_SHARED:-../shared}
case $shared in /*) ;; *) shared=$(pwd)/$shared ;; esac
gpt2=$shared/tokenizers/gpt2
if [ ! -f "$gpt2/vocab.json" ]; then
	echo "FAIL setup (no GPT-2 tokenizer in $shared/tokenizers)"
	exit 1
fi
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

# refused by name
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
sed 's/"rope_scaling": null/"rope_scaling": {"type": "linear", "factor": 2.0}/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "rope_scaling is refused by name" sh -c "[ $rc -ne 0 ] && grep -q 'rope_scaling is not supported' '$tmp/err'"
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
printf '{"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Split"}}\n' >"$tmp/hf/tokenizer.json"
run "$tmp/hf" -t hi
check "a tokenizer.json with another pre-tokenizer is refused, not misread" \
	sh -c "[ $rc -ne 0 ] && grep -q 'pre_tokenizer Split is not supported yet' '$tmp/err'"
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --shards >/dev/null 2>&1
rm "$tmp/hf/model-00002-of-00002.safetensors"
run "$tmp/hf" -t hi
check "a missing shard is named" sh -c "[ $rc -ne 0 ] && grep -q 'model-00002-of-00002.safetensors' '$tmp/err'"

exit $((failures > 0))
