#!/bin/sh
# Hugging Face Qwen3 directories (model_type qwen3 in loader-hf-llama.c): a
# seeded model written by tool_mkhf --qwen3 in HF's layout (rotate-half q
# and k rows, self_attn.q_norm / k_norm scales in the same order, heads
# twice hidden / heads wide, tied, config.json spelled as Qwen3-0.6B's;
# one file or two shards; GPT-2's pair or Qwen2.5's tokenizer.json, which
# Qwen3 shares) gives exactly the numbers of the same weights as an
# attnscope checkpoint; every explorer command that reads q and k runs on
# it (why splits the score exactly with the q/k norm frozen); a directory
# without the norms, or a Llama one with them, is refused by name.  Needs
# GPT-2's vocabulary from ../shared/tokenizers (or $ATTNSCOPE_SHARED).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-qwen3
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkq TOKENIZER OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mkq() {
	tk=$1
	shift
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tk" --qwen3 "$@" >/dev/null 2>&1
}

gzip -dc tests/data/tokenizers/qwen2_5.json.gz >"$tmp/qwen.json"
for opt in "$gpt2" "$gpt2 --shards" "$tmp/qwen.json"; do
	name="qwen3 $(echo "$opt" | sed "s|$gpt2|gpt2|; s|$tmp/||")"
	if ! mkq $opt; then
		fail "$name setup (tool_mkhf --qwen3 $opt)"
		continue
	fi
	same_as_ref "$name" --loss
done
check "setup: Qwen2.5's tokenizer.json was the last one's (151665 tokens)" \
	grep -q '^config vocab 151665 ' "$tmp/hf.dump"

mkq "$gpt2"
run "$tmp/hf" -t "$text" --dump
check "the config is read: heads 16 wide over hidden 32, 2 K/V heads, tied, the q/k norm on" \
	sh -c "grep -q 'heads 4 kv_heads 2 d_head 16 d_ff 48 context 64' '$tmp/out' &&
	grep -q 'norm rmsnorm eps 1e-06 placement pre pos rope theta 10000 mlp swiglu bias no tied yes qk_norm yes ' '$tmp/out'"

run "$tmp/hf" -c "text $text; why 1.2 5 3; qkov 1.2; circuits; dla; heat norms; heads; attn mqa; kv; norm post; attn gqa 2; norm pre; scale off; ablate 0.1"
check "why splits a score exactly with the q/k norm frozen, and says so; the rest runs" \
	sh -c "[ $rc -eq 0 ] && grep -q '^q/k norm frozen at each head.s scale: 1/rms' '$tmp/out' &&
	[ \$(grep -c 'left out 0.0000' '$tmp/out') -ge 2 ] && grep -q '^heatmaps show norms' '$tmp/out'"

# refused by name
mkq "$gpt2"
sed 's/"model_type": "qwen3"/"model_type": "llama"/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "a Llama config over Qwen3's weights: the q/k norm tensors are named as unexpected" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'q_norm.weight' '$tmp/err'"
rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
	"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --headdim 16 >/dev/null 2>&1
sed 's/"model_type": "llama"/"model_type": "qwen3"/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "a Qwen3 config over weights without q_norm / k_norm names the missing tensor" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'q_norm.weight' '$tmp/err'"

exit $((failures > 0))
