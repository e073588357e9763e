#!/bin/sh
# End-to-end tests of `generate`: greedy generation is the same every time
# and is what `top` calls most likely at each step; the text grows by the
# tokens made and runs once (one measurement for the whole generation, not
# one per token), its numbers those of a fresh pass over it; generation stops at the context; bad arguments are
# refused with the usage.  A seeded random model from tool_mkmodel.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_generate.sh
. "$(dirname "$0")/lib-cli.sh"

make_tmp generate
mkdir "$tmp/models"
mkmodel "$tmp/models/m.safetensors" --chars "abcdefgh "
cd "$tmp" || exit 1

run --no-db --batch m -c 'text abc; generate 5 --temperature 0' </dev/null
check greedy-status status 0
check greedy-grows has_out '^8 tokens '
check greedy-says has_out '^generated 5 tokens (temperature 0, top-k 40, seed 1337); '
first=$(sed -n 2p "$tmp/out")
run --no-db --batch m -c 'text abc; generate 5 --temperature 0' </dev/null
check greedy-repeats sh -c "[ \"\$(sed -n 2p '$tmp/out')\" = '$first' ]"

# each greedy token is the most likely next token of a full pass
run --no-db --batch m -c 'text abc; top 1' </dev/null
want=$(awk '/^ *1 /{ print $2; exit }' "$tmp/out")
check greedy-is-top sh -c "[ \"\$(printf '%s' '$first' | cut -c1 | sed 's/ /␣/')\" = '$want' ]"

# sampled generation: the same seed, the same text; another seed, another
run --no-db --batch m -c 'text abc; generate 30 --seed 7' </dev/null
s7=$(sed -n 2p "$tmp/out")
run --no-db --batch m -c 'text abc; generate 30 --seed 7' </dev/null
check seed-repeats sh -c "[ \"\$(sed -n 2p '$tmp/out')\" = '$s7' ]"
run --no-db --batch m -c 'text abc; generate 30 --seed 8' </dev/null
check seed-differs sh -c "[ \"\$(sed -n 2p '$tmp/out')\" != '$s7' ]"

# one measurement for the whole generation
run --db "$tmp/g.db" --batch m -c 'text abc; generate 20' </dev/null
check one-measurement sh -c "[ $rc -eq 0 ] && [ \"\$(sqlite3 '$tmp/g.db' 'SELECT count(*) FROM measurements')\" = 2 ]"

# the context (64) bounds it
run --no-db --batch m -c 'text abc; generate 64' </dev/null
check stops-at-context sh -c "[ $rc -eq 0 ] && grep -q '^generated 61 tokens' '$tmp/out' && grep -q '^64 tokens ' '$tmp/out'"

# the text generate leaves shows what a pass over it shows: its run is
# made of the decoder's steps when the text tokenizes back into the tokens
# made (here, one character a token), and its numbers (stats, every head's
# scores in heads, top; the forward time aside) equal a fresh pass's under
# each option a step computes as a pass does, and under mask none, whose
# pass sees later tokens and is run anew
for opts in "" "attn mqa;" "mask window 3;" "norm post;" "ablate 1.2;" "mask none;"; do
	run --no-db --batch m -c "text abc; $opts generate 12 --temperature 0; stats; heads; top 3 at 9" </dev/null
	made=$(awk '/^generated [0-9]+ tokens/ { print prev; exit } { prev = $0 }' "$tmp/out")
	sed -n '/^model /,$p' "$tmp/out" | sed '/^forward /d' >"$tmp/gen.txt"
	run --no-db --batch m -c "text abc$made; $opts stats; heads; top 3 at 9" </dev/null
	sed -n '/^model /,$p' "$tmp/out" | sed '/^forward /d' >"$tmp/pass.txt"
	if [ "$rc" = 0 ] && [ -s "$tmp/gen.txt" ] && cmp -s "$tmp/gen.txt" "$tmp/pass.txt"; then
		ok "generate-run-is-the-pass ${opts:-native}"
	else
		fail "generate-run-is-the-pass ${opts:-native}" "$(diff "$tmp/gen.txt" "$tmp/pass.txt" | head -5)"
	fi
done

run --no-db --batch m -c 'text abc; generate 0' </dev/null
check bad-count sh -c "[ $rc -eq 1 ] && grep -q 'the number of tokens' '$tmp/err'"
run --no-db --batch m -c 'text abc; generate 3 --temperature hot' </dev/null
check bad-temperature sh -c "[ $rc -eq 1 ] && grep -q 'the temperature' '$tmp/err'"
run --no-db --batch m -c 'generate 3' </dev/null
check needs-text sh -c "[ $rc -eq 1 ] && grep -q 'no text yet' '$tmp/err'"

# the cache as held equals kv's arithmetic for its positions and K/V heads:
# 8 positions of 4 heads; under MQA 1 head; under mask window 3, 4 positions
for opts in "" "attn mqa;" "mask window 3;" "attn mqa; mask window 3;"; do
	run --no-db --batch m -c "text abc; $opts generate 5 --temperature 0" </dev/null
	held=$(sed -n 's/.*; KV cache \(.*\) for \([0-9]*\) positions of \([0-9]*\) K\/V heads (kv: \(.*\))$/\1|\4|\2|\3/p' "$tmp/out")
	case "$opts" in
	*window*) want_pos=4 ;;
	*) want_pos=8 ;;
	esac
	case "$opts" in
	*mqa*) want_g=1 ;;
	*) want_g=4 ;;
	esac
	if [ "$rc" = 0 ] && [ "$(echo "$held" | cut -d'|' -f1)" = "$(echo "$held" | cut -d'|' -f2)" ] &&
		[ "$(echo "$held" | cut -d'|' -f3)" = $want_pos ] && [ "$(echo "$held" | cut -d'|' -f4)" = $want_g ]; then
		ok "generate-kv-bytes ${opts:-native}"
	else
		fail "generate-kv-bytes ${opts:-native}" "$held"
	fi
done

# a tokenizer smaller than the model's vocabulary (10 rows, 4 tokens, as a
# Qwen2 config pads vocab_size): a warning at load, generate draws only ids
# the tokenizer decodes (the text grows by every token), and top marks the
# others; greedy and sampled alike
mkdir "$tmp/hf"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 6, "h": 7, "ab": 8, "cd": 9}, "merges": ["a b", "c d"]}}\n' >"$tmp/big.json"
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/hf-ref.safetensors" "$tmp/big.json" >/dev/null 2>&1; then
	printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "d": 3}, "merges": []}}\n' >"$tmp/hf/tokenizer.json"
	run --no-db --batch "$tmp/hf" -c 'text abcd; top 10' </dev/null
	check small-tokenizer-warns sh -c "[ $rc -eq 0 ] && grep -q 'warning: hf: the tokenizer has 4 tokens but the model.s vocabulary 10; ids 4..9 have no text' '$tmp/err'"
	check small-tokenizer-top-marks has_out '^<bad id N>: ids 4\.\.9 have no token in the tokenizer'
	for g in "--temperature 0" "--seed 1" "--seed 2" "--seed 3"; do
		run --no-db --batch "$tmp/hf" -c "text abcd; generate 20 $g" </dev/null
		check "small-tokenizer-decodable $g" sh -c "[ $rc -eq 0 ] && grep -q '^24 tokens ' '$tmp/out' && grep -qx '[abcd]\\{20\\}' '$tmp/out'"
	done
else
	fail "small-tokenizer setup (tool_mkhf)"
fi

# a vocabulary holding tokens its merges never make (ab, cd): the text
# generated to the context tokenizes again longer (each ab is a, b); the
# session keeps the longest part that fits, says so, and runs it
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "ab": 4, "cd": 5}, "merges": []}}\n' >"$tmp/unmade.json"
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/hf-ref.safetensors" "$tmp/unmade.json" >/dev/null 2>&1; then
	run --no-db --batch "$tmp/hf" -c 'text abcd; generate 64 --temperature 0' </dev/null
	made=$(sed -n 2p "$tmp/out") shown=
	kept=$(sed -n 's/.*the text keeps \([0-9]*\) of the 60 tokens made: tokenized again, all of it is \([0-9]*\) tokens, past the context of 64$/\1 \2/p' "$tmp/err")
	check "generate past the context once tokenized again: the text keeps what fits, says so, and runs" \
		sh -c "[ $rc -eq 0 ] && [ -n '$kept' ] && [ ${kept#* } -gt 64 ] &&
		grep -Eq '^(6[0-4]|5[0-9]) tokens ' '$tmp/out'"
	run --no-db --batch "$tmp/hf" -c 'text abcd; generate 64 --temperature 0; show tokens' </dev/null
	shown=$(awk '/^ *[0-9]+ +[0-9]+ +[abcd]$/ { printf "%s", $3 }' "$tmp/out")
	check "and the session's tokens spell the typed text and the start of what was made" \
		sh -c "[ $rc -eq 0 ] && [ ${#shown} -ge 60 ] && case 'abcd$made' in '$shown'*) true ;; *) false ;; esac"
else
	fail "unmade-tokens setup (tool_mkhf)"
fi

[ "$failures" -eq 0 ]
