#!/bin/sh
# Every model family the Hugging Face loaders read, as tool_mkhf writes it
# (seeded weights in each family's own layout and config.json spelling),
# runs every explorer command: in one script per family, each command must
# succeed with nothing on standard error.  What a family cannot do is
# refused in one line that says why, and only that: OLMo-2's key norm
# under fewer K/V heads, its post-norm and the no-transpose pitfall;
# an encoder's next-token commands (generate, dla, qkov) and patching at
# its last position, where both texts end on </s> or [SEP].  `compare
# variants` leaves out, with the reason, the variants a model refuses.
# Needs GPT-2's vocabulary from ../shared/tokenizers (or $ATTNSCOPE_SHARED).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-families
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."
other="To go, or not to go, this was the question?"

# every command of the explorer that reads a run, separated by "; "
all="heads; stats; top; lens; heat scores; heat norms; heat rollout; heat weights;
show head 1.0; show token 3; show mask; show groups; show diff 1.0; why 1.0 5 3; dla;
qkov 1.0; circuits; patch $other; attn mha; attn mqa; attn gqa 2; reset; norm post; reset;
mask none; mask window 2; mask after-softmax; reset; scale off; scale on; ablate 0.1;
restore all; sweep; compare variants; kv; generate 3; beside 1.0 text $other;
pitfall eps0; pitfall mask-one-head; pitfall no-transpose; pitfall off; batch $text | $other;
export grid --format svg --out $tmp/g.svg; export layer 1 --format png --out $tmp/l.png;
export heatmap 1.0 --format csv --out $tmp/h.csv"

# without CMD...: the list above less the commands given
without() {
	list=$all
	for c in "$@"; do
		list=$(printf '%s\n' "$list" | tr '\n' ' ' | sed "s/ *$c;//")
	done
	printf '%s' "$list" | tr '\n' ' '
}

# family NAME TOOL-OPTIONS [PATTERN=COMMAND | -COMMAND]...: the directory,
# every command in one run but those named, then each PATTERN=COMMAND alone,
# refused in one line matching PATTERN (-COMMAND: left out, not run)
family() {
	fam=$1 opts=$2
	shift 2
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $opts >/dev/null 2>&1 ||
		{ fail "$fam setup (tool_mkhf $opts)"; return; }
	skip=""
	for r in "$@"; do
		case $r in -*) skip="$skip|${r#-}" ;; *) skip="$skip|${r#*=}" ;; esac
	done
	set -f
	cmds=$(IFS='|'; without ${skip#|})
	set +f
	run "$tmp/hf" -c "text $text; $cmds"
	check "$fam: every explorer command runs" sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ] &&
		[ -s '$tmp/g.svg' ] && [ -s '$tmp/l.png' ] && [ -s '$tmp/h.csv' ]"
	rm -f "$tmp/g.svg" "$tmp/l.png" "$tmp/h.csv"
	for r in "$@"; do
		case $r in -*) continue ;; esac
		run "$tmp/hf" -c "text $text; ${r#*=}"
		check "$fam: ${r#*=} is refused in one line" sh -c "[ $rc -ne 0 ] &&
			[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q -- '${r%%=*}' '$tmp/err'"
	done
}

family "Llama" ""
family "Llama 3.1 rope_scaling" --llama3
family "Qwen2" --qwen2
family "Qwen3" --qwen3
family "Phi-3" --phi3
family "Phi-4-mini partial rotary" "--phi3 --partial"
family "Phi-3.5 LongRoPE" "--phi3 --longrope"
family "Gemma 2" --gemma2
family "Gemma 3" --gemma3
family "Gemma 3 multimodal" "--gemma3 --mm"
family "OLMo-2" --olmo2 "key norm spans=attn mqa" "no norm before its sub-blocks=norm post" \
	"key norm spans=pitfall no-transpose"
family "GPT-NeoX" --neox
family "GPT-Neo" --neo
same_end="To be, or not to be, that is the answer."
for enc in bert roberta distilbert; do
	family "$enc" --$enc "bidirectional encoder=generate 3" "needs a final norm and an output layer=dla" \
		"needs a final norm and an output layer=qkov 1.0" "-patch $other" \
		"nothing to restore=patch $same_end"
done

rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
	"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --olmo2 >/dev/null 2>&1
run "$tmp/hf" -c "text $text; compare variants"
check "compare variants on OLMo-2 leaves out mqa and post-norm, each with its reason" \
	sh -c "[ $rc -eq 0 ] && grep -q '^mha ' '$tmp/out' && grep -q '^left out mqa: .*key norm spans' '$tmp/out' &&
	grep -q '^left out post-norm: .*no norm before' '$tmp/out'"

exit $((failures > 0))
