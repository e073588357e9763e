#!/bin/sh
# Weights held as stored (held.h): a Hugging Face directory written in F16
# or BF16 (tool_mkhf --dtype) and GGUF files of each tensor type keep
# their matrices in those types, and give the numbers of the same files
# loaded with every weight as float32 (ATTNSCOPE_WEIGHTS=f32) within
# 1e-4 (near: only the products' order differs); load says what is held
# and what it takes; models counts the held bytes; the analyses that read
# the weights convert them to float32 and say so; a stored NaN is refused
# by name.  Needs GPT-2's vocabulary from ../shared/tokenizers.
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-held
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."
training_text "$tmp/train.txt"

# dump_pair NAME MODEL: MODEL's --dump held and as float32 into
# $tmp/held.dump and $tmp/f32.dump; near's verdict in $close
dump_pair() {
	run "$2" -t "$text" --dump
	cp "$tmp/out" "$tmp/held.dump"
	ATTNSCOPE_WEIGHTS=f32 run "$2" -t "$text" --dump
	cp "$tmp/out" "$tmp/f32.dump"
	near "$tmp/held.dump" "$tmp/f32.dump"
	close=$?
}

for fam in "" --qwen2 --qwen3 --gemma2 --gemma3 --olmo2 "--phi3 --longrope" --neox --neo; do
	for dt in BF16 F16; do
		name="hf${fam:+ $fam} $dt"
		rm -rf "$tmp/hf" && mkdir "$tmp/hf"
		if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $fam --dtype $dt \
			>/dev/null 2>&1; then
			fail "$name setup"
			continue
		fi
		dump_pair "$name" "$tmp/hf"
		check "$name: held, the attention and loss of the float32 load within 1e-4" \
			sh -c "[ $close -eq 0 ] && grep -q '^loss [0-9]' '$tmp/held.dump'"
	done
done

# what load says, and what it takes: the BF16 directory half of float32's
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --dtype BF16 >/dev/null 2>&1
run -c "load $tmp/hf"
check "load says the BF16 matrices are held and what the weights take" \
	sh -c "[ $rc -eq 0 ] && grep -q '^weights: 6.16 MiB, BF16 held$' '$tmp/out'"
ATTNSCOPE_WEIGHTS=f32 run -c "load $tmp/hf"
check "ATTNSCOPE_WEIGHTS=f32 holds nothing" \
	sh -c "[ $rc -eq 0 ] && grep -q '^loaded hf' '$tmp/out' && ! grep -q '^weights' '$tmp/out'"
mkdir "$tmp/models" && cp -r "$tmp/hf" "$tmp/models/bf16"
ATTNSCOPE_MODELS="$tmp/models" run -c models
check "models counts a BF16 directory's weights at 2 bytes a value" \
	sh -c "grep -q '^  bf16 .* 3.2 M 6.16 MiB$' '$tmp/out'"

# a model that will not fit held is refused before a weight is read, by
# what it takes held (the files' 2 bytes a value over the config's
# parameters); skipped where the binary cannot run under ulimit -v
mkdir "$tmp/huge" && cp "$tmp/hf/"* "$tmp/huge/"
sed -e 's/"hidden_size": [0-9]*/"hidden_size": 4096/' \
	-e 's/"intermediate_size": [0-9]*/"intermediate_size": 16384/' \
	-e 's/"num_hidden_layers": [0-9]*/"num_hidden_layers": 12/' \
	-e 's/"num_attention_heads": [0-9]*/"num_attention_heads": 32/' \
	-e 's/"num_key_value_heads": [0-9]*/"num_key_value_heads": 8/' \
	"$tmp/hf/config.json" >"$tmp/huge/config.json"
limited "$tmp/hf" -t hi
if [ "$rc" -eq 0 ]; then
	limited "$tmp/huge" -t hi
	check "a held model that cannot fit is refused by what it takes held, in one line" \
		sh -c "[ $rc -ne 0 ] && grep -q 'parameters need 6.2.* GiB held as the files store them, and .* of memory is available; it will not fit' '$tmp/err' &&
		[ \$(wc -l <'$tmp/err') -eq 1 ]"
else
	ok "a held model that cannot fit is refused # skipped: the binary does not run under ulimit -v"
fi

# the analyses read float32 weights: converted, said once, the same numbers
run "$tmp/hf" -c "text $text; dla; why 1.0 5 3; qkov 1.1; circuits; heat norms"
cp "$tmp/out" "$tmp/held.out"
ATTNSCOPE_WEIGHTS=f32 run "$tmp/hf" -c "text $text; dla; why 1.0 5 3; qkov 1.1; circuits; heat norms"
grep -v 'ms$\|float32' "$tmp/held.out" | sed 's/  *[0-9.]* ms//' >"$tmp/a"
grep -v 'ms$\|float32' "$tmp/out" | sed 's/  *[0-9.]* ms//' >"$tmp/b"
check "dla, why, qkov and circuits convert the held weights once, saying so" \
	sh -c "[ \$(grep -c 'reads the weights as float32: they take 12.33 MiB now' '$tmp/held.out') -eq 1 ] &&
		grep -q '^(dla reads the weights' '$tmp/held.out'"
check "and give what the float32 load gives" sh -c "[ -s '$tmp/a' ] && cmp -s '$tmp/a' '$tmp/b'"

# generation and the GQA / MQA toggles run on held weights (the decoder's
# one-row products, the K/V conversion from held rows)
run "$tmp/hf" -c "text $text; attn mqa; attn mha; generate 6 --temperature 0; kv"
check "attn mqa / mha and generate run on held weights" \
	sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ] && grep -q 'KV ' '$tmp/out'"
run "$tmp/hf" -c "text $text; attn mqa" --dump
cp "$tmp/out" "$tmp/held.dump"
ATTNSCOPE_WEIGHTS=f32 run "$tmp/hf" -c "text $text; attn mqa" --dump
near "$tmp/held.dump" "$tmp/out"
close=$?
check "the MQA conversion of held weights is the float32 one's" sh -c "[ $close -eq 0 ]"

# train --from a held model converts it a layer at a time: the trained
# weights are those of training from the float32 load
for w in held f32; do
	ATTNSCOPE_WEIGHTS=$w "$A" train --from "$tmp/hf" --data "$tmp/train.txt" --steps 2 --batch 2 \
		--seed 1 --out "$tmp/tr-$w.safetensors" >/dev/null 2>&1
	run "$tmp/tr-$w.safetensors" -t "$text" --dump
	grep -v '^model ' "$tmp/out" >"$tmp/tr-$w.dump"
done
check "train --from a held model trains what the float32 load trains" \
	sh -c "grep -q '^loss [0-9]' '$tmp/tr-held.dump' && cmp -s '$tmp/tr-held.dump' '$tmp/tr-f32.dump'"

# GGUF: every type the reader takes, from the same float32 directory
rm -rf "$tmp/f32" && mkdir "$tmp/f32"
"$TOOLS/tool_mkhf" "$tmp/f32" "$tmp/ref.safetensors" "$gpt2" >/dev/null 2>&1
for type in f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do
	if ! "$TOOLS/tool_mkgguf" "$tmp/m.gguf" --from "$tmp/f32" --arch llama --type $type \
		--tokdir "$gpt2" >/dev/null 2>&1; then
		fail "gguf $type setup"
		continue
	fi
	dump_pair "gguf $type" "$tmp/m.gguf"
	run -c "load $tmp/m.gguf"
	T=$(echo $type | tr a-z A-Z)
	check "gguf $type: held as $T, the float32 load's numbers within 1e-4" \
		sh -c "[ $close -eq 0 ] && grep -q '^weights: .*$T held' '$tmp/out'"
done

# a NaN stored in a held BF16 matrix is refused by name, as float32's are
rm -rf "$tmp/bad" && cp -r "$tmp/hf" "$tmp/bad"
off=$(($(od -An -tu8 -N8 "$tmp/bad/model.safetensors") + 8 + 64))
printf '\377\177' | dd of="$tmp/bad/model.safetensors" bs=1 seek=$off conv=notrunc 2>/dev/null
run "$tmp/bad" -t "$text"
check "a NaN in a held tensor is refused in one line that names it" \
	sh -c "[ $rc -ne 0 ] && grep -q 'has a non-finite value at element' '$tmp/err' &&
		[ \$(wc -l <'$tmp/err') -eq 1 ]"

exit $((failures > 0))
