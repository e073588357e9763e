#!/bin/sh
# GGUF files (loader-gguf.c): a seeded model written by tool_mkhf as a
# Hugging Face directory, and by tool_mkgguf from the same weights as GGUF in
# llama.cpp's names and layout (Llama's Q/K rows interleaved, Qwen2's,
# Qwen3's (with its q/k norm scales, heads twice hidden / heads wide) and
# NeoX's rotate-half), gives exactly the directory's attention, norms and
# losses in F32 (`--dump` compared byte for byte), with the tokenizer from
# the GGUF metadata (GPT-2's vocabulary; NeoX with --tokenizer, as its
# directory has Pythia's tokenizer.json); quantized files load and run;
# every fuzz seed that should load does; damaged files fail with one line
# naming the file.  Needs GPT-2's vocabulary from ../shared/tokenizers (or
# $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-gguf
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

for fam in "llama:" "qwen2:--qwen2" "qwen3:--qwen3" "gptneox:--neox" "bert:--bert --bare"; do
	arch=${fam%%:*} opt=${fam#*:}
	rm -rf "$tmp/hf" && mkdir "$tmp/hf"
	if ! "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opt >/dev/null 2>&1 ||
		! "$TOOLS/tool_mkgguf" "$tmp/m.gguf" --from "$tmp/ref.safetensors" --arch "$arch" \
			--tokdir "$gpt2" >/dev/null 2>&1; then
		fail "$arch setup (tool_mkhf $opt, tool_mkgguf)"
		continue
	fi
	tokopt=
	[ "$arch" = gptneox ] && tokopt="--tokenizer $tmp/hf/tokenizer.json"
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/m.gguf" $tokopt -t "$text" --dump
	grep -v '^model' "$tmp/out" >"$tmp/gguf.dump"
	check "$arch: the GGUF file gives the HF directory's config, attention and losses exactly" \
		sh -c "[ $rc -eq 0 ] && [ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/gguf.dump'"
	for type in q8_0 q4_0; do
		"$TOOLS/tool_mkgguf" "$tmp/q.gguf" --from "$tmp/ref.safetensors" --arch "$arch" \
			--tokdir "$gpt2" --type $type >/dev/null 2>&1
		run "$tmp/q.gguf" $tokopt -c "text $text; stats"
		check "$arch in $type loads and runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/out' ]"
	done
done
run "$tmp/m.gguf" -c "load $tmp/m.gguf; echo loaded"
check "load takes a GGUF file" sh -c "[ $rc -eq 0 ] && grep -q loaded '$tmp/out'"

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
