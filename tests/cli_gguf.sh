#!/bin/sh
# GGUF files (loader-gguf.c): a seeded model written by tool_mkhf as a
# Hugging Face directory, and as GGUF from the same weights in llama.cpp's
# names and layout, gives exactly the directory's attention, norms and
# losses in F32 (`--dump` compared byte for byte), with the tokenizer from
# the GGUF metadata (GPT-2's vocabulary; NeoX with --tokenizer, as its
# directory has Pythia's tokenizer.json).  Llama's Q/K rows interleaved,
# Qwen2's, Qwen3's (with its q/k norm scales, heads twice hidden / heads
# wide) and NeoX's rotate-half: tool_mkgguf --from the checkpoint.  Gemma 2,
# Gemma 3 and OLMo-2: tool_mkgguf --convert the directory itself, as
# convert_hf_to_gguf.py does (renamed, Gemma's 1 added to every norm, rows
# as they are), so that the loader's permutation, norms and sliding layers
# meet the HF loader's on an independent file; the directory's config.json
# is first made one llama.cpp runs as transformers does
# (query_pre_attn_scalar the head width; Gemma 3's sliding_window_pattern
# llama.cpp's 6, every layer of two sliding, or 1, none); quantized files
# load and run; Llama 3.1's scaling as llama.cpp's rope_freqs meets the
# llama3 directory within 1e-4; Phi-3: tool_mkgguf --convert a tool_mkhf
# --phi3 directory (a sliding window, partial RoPE, LongRoPE) meets it
# within 1e-4 in F32 and by the loss in Q8_0, and damaged LongRoPE tables
# are refused by name; every fuzz seed that should load does;
# damaged files fail
# with one line naming the file.  Needs GPT-2's vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-gguf
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# config.json of $tmp/hf for family $1 as llama.cpp runs it: Gemma's
# query_pre_attn_scalar the head width (tool_mkhf writes 24 over 16), Gemma
# 3's sliding layers its pattern 6 or none (tool_mkhf writes 2)
llama_cpp_config() {
	case $1 in
	gemma2) s='s/"query_pre_attn_scalar": 24/"query_pre_attn_scalar": 16/' ;;
	gemma3) s='s/"query_pre_attn_scalar": 24/"query_pre_attn_scalar": 16/
		s/"sliding_window_pattern": 2/"sliding_window_pattern": 6/' ;;
	gemma3-global) s='s/"query_pre_attn_scalar": 24/"query_pre_attn_scalar": 16/
		s/"sliding_window_pattern": 2/"sliding_window_pattern": 1/' ;;
	*) return 0 ;;
	esac
	sed "$s" "$tmp/hf/config.json" >"$tmp/config.json" && mv "$tmp/config.json" "$tmp/hf/config.json"
}

# mkgguf OUT TYPE: $tmp/m's family as GGUF, from the checkpoint or converted
mkgguf() {
	case $arch in
	gemma*|olmo2) src="--convert $tmp/hf" ;;
	*) src="--from $tmp/ref.safetensors" ;;
	esac
	"$TOOLS/tool_mkgguf" "$1" $src --arch "$arch" --tokdir "$gpt2" --type "$2" >/dev/null 2>&1
}

# NAME:TOOL_MKHF OPTIONS:WHAT --dump MUST SHOW (so that the case is not vacuous)
for fam in "llama::" "qwen2:--qwen2:" "qwen3:--qwen3:qk_norm yes" "gptneox:--neox:" \
	"bert:--bert --bare:" "gemma2:--gemma2:softcap 4/2 local_window 4 local_layers 0 " \
	"gemma3:--gemma3:local_theta 10000 local_window 4 local_layers 0,1 " \
	"gemma3-global:--gemma3:rope_scaling linear factor 8 mlp geglu bias no tied yes qk_norm yes emb_scale 5.65685 sandwich yes params" \
	"olmo2:--olmo2:qk_norm whole sandwich post_only"; do
	label=${fam%%:*} rest=${fam#*:}
	opt=${rest%%:*} shows=${rest#*:} arch=${label%-global}
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opt >/dev/null 2>&1 ||
		! llama_cpp_config "$label" || ! mkgguf "$tmp/m.gguf" f32; then
		fail "$label setup (tool_mkhf $opt, tool_mkgguf)"
		continue
	fi
	tokopt=
	[ "$arch" = gptneox ] && tokopt="--tokenizer $tmp/hf/tokenizer.json"
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/m.gguf" $tokopt -t "$text" --dump
	grep -v '^model' "$tmp/out" >"$tmp/gguf.dump"
	check "$label: the GGUF file gives the HF directory's config, attention and losses exactly" \
		sh -c "[ $rc -eq 0 ] && [ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/gguf.dump' &&
			grep -q '$shows' '$tmp/hf.dump'"
	for type in q8_0 q4_0; do
		mkgguf "$tmp/q.gguf" $type
		run "$tmp/q.gguf" $tokopt -c "text $text; stats"
		check "$label in $type loads and runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/out' ]"
	done
done

# Llama 3.1 / 3.2 files: llama.cpp's converter writes Llama 3.1's scaling
# as rope_freqs.weight, one divisor per pair (tool_mkgguf --from a
# tool_mkhf --llama3 directory, over an original context of 16: pair 0
# blends, pairs 1-3 turn 8 times slower), which the engine takes as it is
# (rope_scaling factors); the file's numbers meet the directory's, whose
# rule the engine computes in double, within 1e-4
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --llama3 >/dev/null 2>&1 &&
	"$TOOLS/tool_mkgguf" "$tmp/m.gguf" --from "$tmp/hf" --arch llama --tokdir "$gpt2" \
		>/dev/null 2>&1; then
	long="$text Whether 'tis nobler in the mind to suffer the slings and arrows"
	run "$tmp/hf" -t "$long" --dump
	cp "$tmp/out" "$tmp/hf.dump"
	run "$tmp/m.gguf" -t "$long" --dump
	cp "$tmp/out" "$tmp/gguf.dump"
	near "$tmp/hf.dump" "$tmp/gguf.dump"
	close=$?
	check "a llama file's rope_freqs (Llama 3.1's scaling) meets the llama3 directory within 1e-4" \
		sh -c "[ $rc -eq 0 ] && grep -q 'rope_scaling factors 1.73594,8,8,8 ' '$tmp/gguf.dump' &&
			grep -q '^loss [0-9]' '$tmp/gguf.dump' && [ $close -eq 0 ]"
	run "$tmp/m.gguf" -c "text $long; generate 4; why 1.0 20 3; qkov 1.0"
	check "the scaled llama file generates and its scores split" sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ]"
else
	fail "llama3 setup (tool_mkhf --llama3, tool_mkgguf --from)"
fi

# Phi-3 (phi3): tool_mkgguf --convert a tool_mkhf --phi3 directory as
# Phi3MiniModel does (the fused qkv_proj and gate_up_proj copied whole as
# attn_qkv and ffn_up, rows as they are; rope.dimension_count;
# sliding_window; the LongRoPE tables as rope_factors_long / _short.weight
# with the attention factor it derives), so that the loader's permutation
# of the rotate-half rows, its [gate; up] and its tables meet the HF
# loader's on an independent file: plain (every layer sliding over 6
# keys), --partial (RoPE over 4 of 8 dims, tied, as Phi-4-mini), --longrope
# and --longrope --partial (an original context of 4: the long text takes
# the long table, "To be" the short one); --dump within 1e-4 in F32, the
# loss in Q8_0 within 0.017 (test_gguf's tolerance, 3 eps + 1e-3, at the
# relative weight error eps 0.0053 it measures for Q8_0)
loss_of() { sed -n 's/^loss \([0-9.]*\).*/\1/p' "$1"; }
for opt in "" "--partial" "--longrope" "--longrope --partial"; do
	label="phi3${opt:+ $opt}"
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --phi3 $opt >/dev/null 2>&1 ||
		! "$TOOLS/tool_mkgguf" "$tmp/m.gguf" --convert "$tmp/hf" --arch phi3 --tokdir "$gpt2" \
			>/dev/null 2>&1 ||
		! "$TOOLS/tool_mkgguf" "$tmp/q.gguf" --convert "$tmp/hf" --arch phi3 --tokdir "$gpt2" \
			--type q8_0 >/dev/null 2>&1; then
		fail "$label setup (tool_mkhf --phi3 $opt, tool_mkgguf --convert)"
		continue
	fi
	case $opt in
	*longrope*) shows='rope_scaling longrope original_context 4 attn_factor 1.73205' ;;
	*) shows='local_window 6 local_layers 0,1 ' ;;
	esac
	case $opt in *partial*) shows="rotary 4 .*$shows" ;; esac
	for t in "$text" "To be"; do
		run "$tmp/hf" -t "$t" --dump
		cp "$tmp/out" "$tmp/hf.dump"
		run "$tmp/m.gguf" -t "$t" --dump
		cp "$tmp/out" "$tmp/gguf.dump"
		frc=$rc
		near "$tmp/hf.dump" "$tmp/gguf.dump"
		close=$?
		n=$(grep -c '^token ' "$tmp/hf.dump")
		[ "$t" = "$text" ] && nlong=$n || nshort=$n
		check "$label, $n tokens: the GGUF file gives the directory's --dump within 1e-4" \
			sh -c "[ $frc -eq 0 ] && [ $close -eq 0 ] && grep -q '^loss [0-9]' '$tmp/gguf.dump' &&
				grep '^config' '$tmp/hf.dump' | tr '\n' ' ' | grep -q '$shows'"
		run "$tmp/q.gguf" -t "$t" --dump
		check "$label, $n tokens: in Q8_0 its loss is the directory's within 0.017" \
			awk -v a="$(loss_of "$tmp/hf.dump")" -v b="$(loss_of "$tmp/out")" \
				'BEGIN { d = a - b; exit !(b != "" && d <= 0.017 && -d <= 0.017) }'
	done
done
# the long text is longer than the original context, "To be" within it
check "setup: the texts fall on both sides of LongRoPE's original context (4)" \
	sh -c "[ '${nlong:-0}' -gt 4 ] && [ '${nshort:-9}' -le 4 ]"

# damaged Phi-3 files (the --longrope --partial one) are refused on one
# line naming what is wrong: rope_factors_short renamed in place, both
# tables renamed (rope.scaling.attn_factor still asks for LongRoPE), the
# long table 3 factors long where the 4 turned dims have 2 pairs
at() { grep -obUa "$1" "$tmp/m.gguf" | head -1 | cut -d: -f1; }
poke() { # OFFSET BYTES: $tmp/m.gguf with bytes at OFFSET into $tmp/bad.gguf
	cp "$tmp/m.gguf" "$tmp/bad.gguf"
	printf "$2" | dd of="$tmp/bad.gguf" bs=1 seek="$1" conv=notrunc 2>/dev/null
}
refused_phi3() { # NAME WORDS
	run "$tmp/bad.gguf" -t hi
	check "$1" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q \"^attnscope: $tmp/bad.gguf: .*$2\" '$tmp/err'"
}
short=$(at rope_factors_short.weight) long=$(at rope_factors_long.weight)
if [ -n "$short" ] && [ -n "$long" ]; then
	poke $((short + 17)) x
	refused_phi3 "phi3: a missing rope_factors_short.weight is refused by name" \
		"missing tensor rope_factors_short.weight: rope_factors_long.weight asks for LongRoPE"
	poke $((short + 17)) x
	printf x | dd of="$tmp/bad.gguf" bs=1 seek=$((long + 16)) conv=notrunc 2>/dev/null
	refused_phi3 "phi3: no table where rope.scaling.attn_factor asks for LongRoPE is refused" \
		"missing tensor rope_factors_long.weight: phi3.rope.scaling.attn_factor asks for LongRoPE"
	poke $((long + 28)) '\003' # ne[0] after the name and its dimension count
	refused_phi3 "phi3: a table of the wrong length is refused by name" \
		"tensor rope_factors_long.weight has shape \\[3\\], but the metadata needs \\[2\\]"
else
	fail "phi3 damage setup (no rope_factors tensors in the --longrope --partial file)"
fi

# a directory llama.cpp would run otherwise is not converted: tool_mkhf's
# query_pre_attn_scalar 24 over heads 16 wide, which no GGUF key holds
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --gemma2 >/dev/null 2>&1
"$TOOLS/tool_mkgguf" "$tmp/x.gguf" --convert "$tmp/hf" --arch gemma2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "tool_mkgguf --convert refuses a query_pre_attn_scalar llama.cpp does not derive" \
	sh -c "[ $rc -ne 0 ] && grep -q query_pre_attn_scalar '$tmp/err' && [ ! -e '$tmp/x.gguf' ]"
"$TOOLS/tool_mkgguf" "$tmp/x.gguf" --from "$tmp/ref.safetensors" --arch gemma2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "tool_mkgguf --from refuses it as well" sh -c "[ $rc -ne 0 ] && grep -q query_pre_attn_scalar '$tmp/err'"
run "$tmp/m.gguf" -c "load $tmp/m.gguf; echo loaded"
check "load takes a GGUF file" sh -c "[ $rc -eq 0 ] && grep -q loaded '$tmp/out'"

# Gemma's tokenizer from the metadata (a llama one with add_space_prefix
# false, tool_mkgguf --spmjson from the model's tokenizer.json): a tiny
# Gemma 2 / 3 model of the whole vocabulary loads without --tokenizer and
# gives the --dump it gives with --tokenizer tokenizer.json, on text with
# the chat markers (control tokens), runs of spaces and newlines
# (user-defined ones) and a character only byte fallback spells
# (within the tiny model's context of 8)
gtext=$(printf '<start_of_turn>\n\n\364\217\277\275  ')
for g in gemma2 gemma3; do
	gzip -dc "tests/data/tokenizers/$g.json.gz" >"$tmp/$g.json"
	if ! "$TOOLS/tool_mkgguf" "$tmp/g.gguf" --tiny --arch $g --spmjson "$tmp/$g.json" \
		>/dev/null 2>&1; then
		fail "$g: tool_mkgguf --spmjson"
		continue
	fi
	run "$tmp/g.gguf" -t "$gtext" --dump
	grep -v '^model' "$tmp/out" >"$tmp/meta.dump"
	mrc=$rc
	run "$tmp/g.gguf" --tokenizer "$tmp/$g.json" -t "$gtext" --dump
	grep -v '^model' "$tmp/out" >"$tmp/json.dump"
	check "$g: the tokenizer from the GGUF metadata gives tokenizer.json's --dump" \
		sh -c "[ $mrc -eq 0 ] && [ $rc -eq 0 ] && [ -s '$tmp/meta.dump' ] &&
			cmp -s '$tmp/meta.dump' '$tmp/json.dump' &&
			grep -q 'id 10[56] <start_of_turn>' '$tmp/meta.dump' && grep -q '<f4>' '$tmp/meta.dump'"
done

# the seeds of fuzz_gguf: the valid ones load, the damaged ones fail on one line
for f in fuzz/seeds/gguf/*; do
	name=$(basename "$f")
	run "$f" -c "echo ok"
	case $name in
	damaged-*)
		check "seed $name fails on one line naming the file" sh -c "[ $rc -eq 1 ] &&
			[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '$f: ' '$tmp/err'" ;;
	*)
		check "seed $name loads" sh -c "[ $rc -eq 0 ] && grep -q '^ok' '$tmp/out'" ;;
	esac
done

# damaged files: one line, exit status 1, the file named
good=fuzz/seeds/gguf/llama-q8_0-spm.gguf
bad="$tmp/bad.gguf"
damage() { # OFFSET BYTES...: the good file with bytes (octal escapes) at OFFSET
	cp "$good" "$bad"
	off=$1
	shift
	printf "$*" | dd of="$bad" bs=1 seek="$off" conv=notrunc 2>/dev/null
}
one_line() { # NAME WORDS
	check "$1" sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q \"^attnscope: $bad: .*$2\" '$tmp/err'"
}
head -c 100 "$good" >"$bad"
run "$bad" -t hi
one_line "a cut header is refused" "more than the file holds"
damage 4 '\001'
run "$bad" -t hi
one_line "GGUF version 1 is refused with what to do" "version 1 is not supported (2 and 3 are): convert"
damage 4 '\011'
run "$bad" -t hi
one_line "an unknown version is refused" "GGUF version 9 is not supported"
damage 8 '\377\377\377\377\377\377\377\177'
run "$bad" -t hi
one_line "a huge tensor count is refused before anything is allocated" "claims 9223372036854775807 tensors"
damage 16 '\000\000\000\000\000\001\000\000'
run "$bad" -t hi
one_line "a huge key count is refused" "claims 1099511627776 keys"
head -c $(($(wc -c <"$good") - 64)) "$good" >"$bad"
run "$bad" -t hi
one_line "cut tensor data is refused by name" "tensor .* run past the end of the file"
cp "$good" "$bad"
run "$bad" -t hi --tokenizer "$tmp/nowhere"
check "--tokenizer that does not exist is named" sh -c "[ $rc -eq 1 ] && grep -q nowhere '$tmp/err'"

exit $((failures > 0))
