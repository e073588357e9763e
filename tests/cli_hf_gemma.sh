#!/bin/sh
# Hugging Face Gemma 2 and Gemma 3 directories (loader-hf-gemma.c).
# Gemma 2: a seeded model
# written by tool_mkhf --gemma2 in HF's layout (rotate-half q and k rows,
# four norms per layer stored as scale - 1, GeGLU, tied, heads 16 wide over
# hidden 32, config.json spelled as gemma-2-2b's with soft-capping at 4 and
# 2, query_pre_attn_scalar 24 and a sliding window of 4 on the even layers;
# one file or two shards) gives exactly the numbers of the same weights as
# an attnscope checkpoint; layer 0 sees its window only; the explorer
# commands run or say in one line what they cannot split (why and dla
# split it, their tables summing, the caps' changes lines of their own);
# what the engine cannot run is refused by name.  Gemma 3 (tool_mkhf --gemma3, spelled as
# gemma-3-1b-it's: the q/k norm, no soft-capping, layer 0 local on RoPE base
# 10000, layer 1 global on 1000000 scaled linearly by 8): the same
# exactness, and the QK split, why and dla run; the same in transformers 5's
# rope_parameters spelling, and as a Gemma 3 multimodal directory (the
# text model of tool_mkhf --gemma3 --mm / --mm2).  train --from either
# text directory runs and its checkpoint keeps the switches.  Needs GPT-2's
# vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-gemma
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkg OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors (Gemma 2 unless
# OPTIONS say --gemma3)
mkg() {
	fam=--gemma2
	case " $* " in *" --gemma3 "*) fam= ;; esac
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" $fam "$@" >/dev/null 2>&1
}

for opt in "" "--shards"; do
	if ! mkg $opt; then
		fail "gemma2 $opt setup (tool_mkhf --gemma2 $opt)"
		continue
	fi
	same_as_ref "gemma2 $opt" --loss
done

mkg
run "$tmp/hf" -t "$text" --dump
check "the config is read: GeGLU, sqrt(32) embeddings, sandwich norms, caps 4 / 2, scale 1/sqrt(24), layer 0 local over 4" \
	sh -c "grep -q 'heads 4 kv_heads 2 d_head 16 d_ff 48 context 64' '$tmp/out' &&
	grep -q 'mlp geglu bias no tied yes emb_scale 5.65685 sandwich yes softcap 4/2 scale_dim 24 local_window 4 local_layers 0 ' '$tmp/out'"


row() { # LAYER.HEAD I: the attention row of query I
	awk -v h="attn $1" -v i="$2" '$0 == h { n = 0; on = 1; next }
		on && n++ == i { print; exit }' "$tmp/out"
}
row 0.1 9 >"$tmp/row"
check "sliding_window 4 on layer 0: query 9 sees keys 6..9 only (they sum to 1)" \
	awk '{ s = 0; for (j = 1; j <= 6; j++) if ($j != 0) exit 1;
		for (j = 7; j <= 10; j++) s += $j; if (s < 0.9999 || s > 1.0001) exit 1 }' "$tmp/row"
row 1.1 9 >"$tmp/row"
check "layer 1 is global: query 9 gives key 0 some weight" awk '{ exit !($1 > 0) }' "$tmp/row"

for c in "qkov 1.2" "circuits" "heat norms" "heads" "lens" "attn mqa; kv" "norm post" \
	"scale off" "ablate 0.1" "generate 4"; do
	run "$tmp/hf" -c "text $text; $c"
	check "$c runs on Gemma 2" sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ]"
done
run "$tmp/hf" -c "text $text; qkov 1.2"
check "qkov splits Gemma 2's scores before the cap, the cap's change and the capped score after" \
	sh -c "grep -q '^copying score' '$tmp/out' && grep -q '^the whole score ' '$tmp/out' &&
	grep -q '^the cap.s change  *[-+]' '$tmp/out' && grep -q '^the capped score  *[-+].*4 tanh(score / 4)' '$tmp/out'"
run "$tmp/hf" -c "text $text; why 1.2 5 3; why 0.1 9 7; dla; dla 4; norm post; why 1.3 8 2"
sums=$(sums_check)
check "why and dla split Gemma 2 (sandwich norms frozen, scores and logits capped): 5 tables sum, the caps' lines add up" \
	sh -c "[ $rc -eq 0 ] && [ '$sums' = '5 5 0' ] &&
	[ \$(grep -c '^sandwich norms: each earlier attention output' '$tmp/out') -eq 2 ] &&
	grep -q '^the softmax reads 4 tanh(score / 4)' '$tmp/out' &&
	grep -q '^score = 1/sqrt(24) x sum' '$tmp/out' && grep -q '^frozen at its 1/rms here: 0: ' '$tmp/out'"

# refused by name: config.json edits on a fresh model each
refuse() { refuse_edit mkg "$@"; } # NAME SED-EXPRESSION MESSAGE (on Gemma 2)
refuse "hidden_activation gelu" 's/"hidden_activation": "gelu_pytorch_tanh"/"hidden_activation": "gelu"/' \
	'hidden_activation "gelu" is not supported'
refuse "attention_bias true" 's/"attention_bias": false/"attention_bias": true/' \
	'attention_bias true is not supported'
refuse "rope_scaling" 's/"rope_theta": 10000.0/"rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 2}/' \
	'rope_scaling: rope_type linear is not supported (default only)'
refuse "a layer type it does not know" \
	's/"sliding_window": 4/"sliding_window": 4, "layer_types": ["chunked_attention", "full_attention"]/' \
	'layer_types\[0\] "chunked_attention"'
refuse "a negative soft-cap" 's/"attn_logit_softcapping": 4.0/"attn_logit_softcapping": -1/' \
	'attn_logit_softcapping -1 must be a positive number or null'

mkg
sed 's/"sliding_window": 4/"sliding_window": 4, "layer_types": ["full_attention", "full_attention"]/; s/"final_logit_softcapping": 2.0/"final_logit_softcapping": null/' \
	"$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t "$text" --dump
check "layer_types with no sliding layer and a null final cap: no local layers, no final cap" \
	sh -c "[ $rc -eq 0 ] && grep -q 'softcap 4/0 scale_dim 24 params' '$tmp/out'"

mkg
cp "$tmp/hf/model.safetensors" "$tmp/m" && head -c 3000 "$tmp/m" >"$tmp/hf/model.safetensors"
run "$tmp/hf" -t hi
check "a truncated model.safetensors is refused with one line" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"

# Gemma 3
for opt in "--gemma3" "--gemma3 --shards"; do
	if ! mkg $opt; then
		fail "$opt setup (tool_mkhf $opt)"
		continue
	fi
	same_as_ref "gemma3 ${opt#--gemma3}" --loss
done
# with Gemma 3's own tokenizer.json (262144 tokens): <bos> first, a run of
# two spaces one token, as transformers.js has them (tests/data)
gzip -dc tests/data/tokenizers/gemma3.json.gz >"$tmp/gemma3.json"
rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
	"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tmp/gemma3.json" --gemma3 >/dev/null 2>&1 ||
	fail "gemma3 tokenizer.json setup"
save_text=$text
text="To be,  or not"
same_as_ref "gemma3 with its own tokenizer.json" --loss
check "Gemma 3's tokenizer: <bos> (2) first, two spaces as one token (138)" \
	sh -c "grep -q '^token 0 id 2 <bos>' '$tmp/hf.dump' && grep -q '^token 4 id 138 ' '$tmp/hf.dump'"
text=$save_text
rm -f "$tmp/gemma3.json"

mkg --gemma3
run "$tmp/hf" -t "$text" --dump
check "Gemma 3's config is read: the q/k norm, no caps, base 1e6 scaled by 8, local base 10000 on layer 0" \
	sh -c "grep -q 'theta 1e+06 rope_scaling linear factor 8 mlp geglu bias no tied yes qk_norm yes emb_scale 5.65685 sandwich yes scale_dim 24 local_theta 10000 local_window 4 local_layers 0 ' '$tmp/out'"
row 0.1 9 >"$tmp/row"
check "Gemma 3's layer 0 sees its window of 4 keys only" \
	awk '{ s = 0; for (j = 1; j <= 6; j++) if ($j != 0) exit 1;
		for (j = 7; j <= 10; j++) s += $j; if (s < 0.9999 || s > 1.0001) exit 1 }' "$tmp/row"
run "$tmp/hf" -c "text $text; qkov 0.1; qkov 1.2"
check "qkov splits Gemma 3's scores (no soft-capping) on both kinds of layer" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c '^copying score' '$tmp/out') -eq 2 ] &&
	! grep -q 'QK split is left out' '$tmp/out'"
run "$tmp/hf" -c "text $text; why 1.2 5 3; why 0.1 9 7; dla; attn mqa; why 1.1 12 0"
sums=$(sums_check)
check "why and dla split Gemma 3 (sandwich and q/k norms frozen, a local layer, no caps): 4 tables sum" \
	sh -c "[ $rc -eq 0 ] && [ '$sums' = '4 0 0' ] &&
	[ \$(grep -c '^q/k norm frozen at each head' '$tmp/out') -eq 3 ]"
refuse() { refuse_edit "mkg --gemma3" "$@"; } # NAME SED-EXPRESSION MESSAGE (on Gemma 3)
refuse "Gemma 3's rope_scaling yarn" 's/"factor": 8.0, "rope_type": "linear"/"factor": 8.0, "rope_type": "yarn"/' \
	'rope_scaling: rope_type yarn is not supported (default, or linear with a factor)'
refuse "rope_scaling with a key linear does not take" 's/"rope_type": "linear"/"rope_type": "linear", "beta_fast": 32/' \
	'rope_scaling: key "beta_fast" is not supported'
refuse "a rope_type holding a newline, on one line" 's/"rope_type": "linear"/"rope_type": "lin\\nyarn"/' \
	'rope_scaling: rope_type lin.*yarn is not supported'
refuse "both rope_scaling and rope_parameters" 's/"rope_theta": 1000000/"rope_parameters": {}/' \
	'both rope_scaling and rope_parameters are set'

# transformers 5's spelling: rope_parameters in place of rope_theta,
# rope_scaling and rope_local_base_freq
v5_g3='s/"rope_local_base_freq": 10000, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": 1000000/"rope_parameters": {"full_attention": {"factor": 8.0, "rope_theta": 1000000, "rope_type": "linear"}, "sliding_attention": {"rope_theta": 10000, "rope_type": "default"}}/'
v5_g2='s/"rope_theta": 10000.0/"rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}/'
# v5 MAKE SED NAME: the directory MAKE writes, respelled by SED
v5() {
	$1 && sed "$2" "$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json" &&
		grep -q '"rope_parameters"' "$tmp/hf/config.json" || fail "$3 setup"
	same_as_ref "$3" --loss
}
v5 "mkg --gemma3" "$v5_g3" "Gemma 3 in transformers 5's rope_parameters"
v5 mkg "$v5_g2" "Gemma 2 in transformers 5's rope_parameters"
mkg --gemma3
sed "$v5_g3" "$tmp/hf/config.json" | sed 's/"rope_theta": 10000,/"rope_theta": 500,/' >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t "$text" --dump
check "rope_parameters' bases are read: sliding_attention's 500 is the local layers'" \
	sh -c "[ $rc -eq 0 ] && grep -q 'theta 1e+06 rope_scaling linear factor 8 .* local_theta 500 ' '$tmp/out'"
refuse "rope_parameters without sliding_attention" \
	"$v5_g3; s/, \"sliding_attention\": {[^}]*}//" 'rope_parameters must hold full_attention and sliding_attention'
refuse "a scaled sliding_attention" \
	"$v5_g3; s/\"rope_theta\": 10000, \"rope_type\": \"default\"/\"factor\": 2, \"rope_type\": \"linear\"/" \
	'rope_parameters.sliding_attention: rope_type linear is not supported (default only)'

# Gemma 3's multimodal files (Gemma3ForConditionalGeneration): the text
# model read from text_config and the language model's weights, in the
# Hub's names and in transformers' own, the vision model's passed over
for opt in --mm --mm2; do
	if ! mkg --gemma3 $opt; then
		fail "gemma3 $opt setup (tool_mkhf --gemma3 $opt)"
		continue
	fi
	same_as_ref "Gemma 3 multimodal ($opt)" --loss
done
run -c "load $tmp/hf; text $text; heads; lens; qkov 1.2; generate 4"
check "the explorer runs on a multimodal directory's text model" \
	sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ] && grep -q '2 layers x 4 heads (2 kv)' '$tmp/out'"
refuse() { refuse_edit "mkg --gemma3 --mm" "$@"; } # on Gemma 3 multimodal
refuse "a multimodal config without text_config" 's/"text_config": {/"text": {/' \
	'text_config is missing'
refuse "text_config's errors" 's/"sliding_window": 4,/"sliding_window": "x",/' \
	'config.json: text_config: "sliding_window" must be an integer'
refuse "a text_config of another model" 's/"model_type": "gemma3_text"/"model_type": "llama"/' \
	'text_config.model_type is not gemma3_text'
mkg --gemma3
sed 's/"model_type": "gemma3_text"/"model_type": "gemma3"/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "model_type gemma3 without text_config is refused in one line" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'text_config is missing' '$tmp/err'"
mkg --gemma3
sed 's/"model_type": "gemma3_text"/"model_type": "gemma2"/; s/"rope_scaling": {[^}]*}/"rope_scaling": null/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t hi
check "a Gemma 2 config over Gemma 3's weights names the q/k norm as unexpected" \
	sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'q_norm.weight' '$tmp/err'"

# training from either keeps its switches: two steps, then the checkpoint's config
training_text "$tmp/data.txt"
for family in --gemma2 --gemma3; do
	mkg $family
	RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 2 --batch 2 \
		--out "$tmp/t.safetensors"
	check "train --from a $family directory runs" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/t.safetensors' ]"
	run "$tmp/t.safetensors" -t "$text" --dump
	case $family in
	--gemma2) keeps='mlp geglu .*emb_scale 5.65685 sandwich yes softcap 4/2' ;;
	*) keeps='mlp geglu .*qk_norm .*emb_scale 5.65685 sandwich yes' ;;
	esac
	check "and its checkpoint keeps $family's switches" grep -q "$keeps" "$tmp/out"
done

run -c "help load"
check "help load names the families" sh -c "[ $rc -eq 0 ] && grep -q 'Gemma 2, Gemma 3' '$tmp/out'"

exit $((failures > 0))
