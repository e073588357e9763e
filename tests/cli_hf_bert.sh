#!/bin/sh
# Hugging Face BERT directories (loader-hf-bert.c): a seeded BertForMaskedLM
# written by tool_mkhf --bert in HF's layout (separate query/key/value,
# post-norm LayerNorms, an embedding LayerNorm, two token types, the
# masked-LM head; one file or two shards; tied or untied decoder; gamma/beta
# LayerNorm names) gives exactly the numbers of the same weights as an
# attnscope checkpoint (whose positions hold token type 0 folded in); what
# the engine cannot run is refused by name; generate and train refuse an
# encoder; other masks and K/V sharing run.  A BertModel (no masked-LM
# head) loads with the attention of the same weights, the output's drift
# in place of loss and KL, and the commands that read predictions refuse it.  The tokenizer is GPT-2's pair,
# a vocab.txt, or bert-base-uncased's own WordPiece tokenizer.json
# (tests/data/tokenizers).  Needs GPT-2's vocabulary from
# ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-bert
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."

# mkbert OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mkbert() {
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$gpt2" --bert "$@" >/dev/null 2>&1
}

for opt in "" --shards --untied --gamma; do
	name=$(echo "bert $opt" | tr -d '-' | tr ' ' _)
	if ! mkbert $opt; then
		fail "$name setup (tool_mkhf --bert $opt)"
		continue
	fi
	same_as_ref "$name"
	if [ "$opt" = --untied ]; then
		check "a decoder.weight other than the word embeddings unties the model" \
			grep -q 'tied no' "$tmp/hf.dump"
	fi
done

mkbert
run "$tmp/hf" -t "$text" --dump
check "the config is read: post-norm LayerNorm eps 1e-12, exact GELU, no mask, embedding norm, MLM head" \
	sh -c "grep -q 'heads 4 kv_heads 4 d_head 8 d_ff 48 context 64' '$tmp/out' &&
	grep -q 'norm layernorm eps 1e-12 placement post pos learned mlp gelu-exact bias yes tied yes residual yes scale yes mask none emb_norm yes head mlm' '$tmp/out'"

run "$tmp/hf" -c "text $text; attn mqa; mask causal; norm pre; compare variants"
check "attn mqa, mask causal (not BERT's own) and norm pre run, each changing the output" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c 'tokens  loss .* KL 0.0[0-9]*[1-9]' '$tmp/out') -eq 3 ]"
check "compare variants offers mask causal, the mask BERT does not use" \
	sh -c "grep -q '^mask causal ' '$tmp/out' && ! grep -q '^mask none ' '$tmp/out'"

run "$tmp/hf" -c "text $text; top 3 at 2"
check "top names the encoder's prediction at a position, not a next token" \
	sh -c "[ $rc -eq 0 ] && grep -q 'token at position 2 .* as the encoder predicts it' '$tmp/out'"

run "$tmp/hf" -c "text $text; batch To be | or not to be at all"
check "batch pads an encoder's texts: masked, each text's attention and reconstruction loss are its own" \
	sh -c "[ $rc -eq 0 ] && grep -q 'loss match its own run' '$tmp/out'"

run "$tmp/hf" -c "text $text; generate 3"
check "generate refuses a bidirectional encoder in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'bidirectional encoder' '$tmp/err' && [ \$(wc -l <'$tmp/err') -eq 1 ]"

training_text "$tmp/data.txt"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 1 --batch 2 \
	--out "$tmp/t.safetensors"
check "train --from a BERT model needs the mlm objective" \
	sh -c "[ $rc -ne 0 ] && grep -q 'train it with the mlm objective' '$tmp/err' && [ ! -e '$tmp/t.safetensors' ]"
RUN_ARGS= run train --no-db --data "$tmp/data.txt" --from "$tmp/hf" --steps 1 --batch 2 \
	--objective mlm --out "$tmp/t.safetensors"
check "train --from a BERT model with --objective mlm is refused: its WordPiece vocabulary has no character [MASK] batches" \
	sh -c "[ $rc -ne 0 ] && grep -q 'character vocabulary with \[CLS\], \[SEP\] and \[MASK\]' '$tmp/err' && [ \$(wc -l <'$tmp/err') -eq 1 ] && [ ! -e '$tmp/t.safetensors' ]"

# refused by name: config.json edits on a fresh model each
refuse() { refuse_edit mkbert "$@"; } # NAME SED-EXPRESSION MESSAGE
refuse "hidden_act relu" 's/"hidden_act": "gelu"/"hidden_act": "relu"/' \
	'hidden_act "relu" is not supported'
refuse "position_embedding_type relative_key" \
	's/"position_embedding_type": "absolute"/"position_embedding_type": "relative_key"/' \
	'position_embedding_type "relative_key" is not supported'
refuse "is_decoder true" 's/"use_cache": true/"is_decoder": true/' 'is_decoder true is not supported'
refuse "add_cross_attention true" 's/"use_cache": true/"add_cross_attention": true/' \
	'add_cross_attention true is not supported'
refuse "a config.json asking for more weights than the files hold" \
	's/"num_hidden_layers": 2/"num_hidden_layers": 200/' 'describes .* weights, but the safetensors files hold'
refuse "a hidden_size the weights do not have" \
	's/"intermediate_size": 48/"intermediate_size": 40/' \
	'intermediate.dense.weight has shape \[48, 32\], but config.json needs \[40, 32\]'

# a BertModel (no masked-LM head, a pooler): attention without predictions
mkbert --bare
run "$tmp/hf" -t "$text" --dump
grep -v '^model \|^config \|^loss ' "$tmp/out" >"$tmp/bare.dump"
check "a BertModel loads with head none and no loss" \
	sh -c "[ $rc -eq 0 ] && grep -q 'head none' '$tmp/out' && grep -q '^loss none' '$tmp/out'"
run "$tmp/ref.safetensors" -t "$text" --dump
grep -v '^model \|^config \|^loss ' "$tmp/out" >"$tmp/bare-ref.dump"
check "a BertModel gives the attention of the same weights with the masked-LM head" \
	sh -c "[ -s '$tmp/bare.dump' ] && cmp -s '$tmp/bare.dump' '$tmp/bare-ref.dump'"
run "$tmp/hf" -c "text $text; attn mqa"
check "its summary line gives the output's drift from the native run, not loss or KL" \
	sh -c "[ $rc -eq 0 ] && grep -q 'no head: output drift 0.0000 ' '$tmp/out' &&
	grep -q 'no head: output drift 0.0[0-9]*[1-9]' '$tmp/out' && ! grep -q 'KL\|nan' '$tmp/out'"
run "$tmp/hf" -c "text $text; compare variants; stats"
check "compare variants and stats show the drift (mqa moves the output), no nan" \
	sh -c "[ $rc -eq 0 ] && grep -q '^variant  *drift  *KV cache' '$tmp/out' &&
	grep -q '^mqa  *0.0[0-9]*[1-9]' '$tmp/out' && grep -q '^drift  *0.000000' '$tmp/out' &&
	! grep -q nan '$tmp/out'"
run "$tmp/hf" -c "text $text; attn mqa; export stats --format json"
check "export stats in JSON: the drift, and null for the loss and KL it cannot have" \
	sh -c "[ $rc -eq 0 ] && grep -q '\"output_drift\":0.0[0-9]*[1-9]' '$tmp/out' &&
	grep -q '\"kl_vs_baseline\":null' '$tmp/out' && grep -q '\"loss\":null' '$tmp/out'"
for c in lens "patch $text" top sweep "batch To be | or not" "export lens"; do
	run "$tmp/hf" -c "text $text; $c"
	check "${c%% *} is refused in one line: no output head" \
		sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q 'reads the model.s predictions, and hf has no output head' '$tmp/err'"
done

mkbert
rm "$tmp/hf/vocab.json" "$tmp/hf/merges.txt"
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\nhi\n##s\n' >"$tmp/hf/vocab.txt"
run "$tmp/hf" -t "his hi" --dump
check "a vocab.txt beside the model is BERT's WordPiece: [CLS] hi ##s hi [SEP]" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | tr '\n' ' ')\" = '2 4 5 4 3 ' ]"
# Hugging Face reads a vocab.txt with a UTF-8 byte order mark, or blank
# lines at its end, as the same vocabulary
printf '\357\273\277[PAD]\n[UNK]\n[CLS]\n[SEP]\nhi\n##s\n\n' >"$tmp/hf/vocab.txt"
run "$tmp/hf" -t "his hi" --dump
check "a vocab.txt with a byte order mark and a blank last line: the same ids" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | tr '\n' ' ')\" = '2 4 5 4 3 ' ]"
printf '[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhi\r\n##s\r\n\r\n\r\n' >"$tmp/hf/vocab.txt"
run "$tmp/hf" -t "his hi" --dump
check "a vocab.txt with CRLF lines and blank lines at its end: the same ids" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | tr '\n' ' ')\" = '2 4 5 4 3 ' ]"
run "$tmp/hf" --tokenizer "$gpt2" -t "$text" --dump
grep -v '^model ' "$tmp/out" >"$tmp/hf.dump"
check "--tokenizer gives the model GPT-2's pair: the same numbers as the checkpoint" \
	sh -c "[ $rc -eq 0 ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"

# bert-base-uncased's own tokenizer.json (WordPiece, 30,522 tokens): the
# directory reads it, [CLS] ... [SEP] around the text, the ids
# transformers.js gives, and the checkpoint of the same weights keeps it
gzip -dc "$(dirname "$0")/data/tokenizers/bert_uncased.json.gz" >"$tmp/bert.json"
rm -rf "$tmp/hf" && mkdir "$tmp/hf"
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tmp/bert.json" --bert >/dev/null 2>&1; then
	same_as_ref "bert-base-uncased tokenizer.json"
	run "$tmp/hf" -t "Hello, World!" --dump
	check "Hello, World! is [CLS] hello , world ! [SEP] (101 7592 1010 2088 999 102)" \
		sh -c "[ $rc -eq 0 ] && [ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | tr '\n' ' ')\" = '101 7592 1010 2088 999 102 ' ]"
	# a passage of a file by tokens: 62 of the text and [CLS] and [SEP]
	# fill the context of 64, with far more than 62 characters
	i=0
	while [ $i -lt 40 ]; do echo "the cat sat on the mat and the dog ran to the log" >>"$tmp/corpus.txt"; i=$((i + 1)); done
	run "$tmp/hf" -c "text --file $tmp/corpus.txt --tokens 62"
	check "text --file --tokens 62 on a word-level tokenizer: 62 tokens, 64 with [CLS] and [SEP]" \
		sh -c "[ $rc -eq 0 ] && grep -q '^text from .*: characters 0\.\.[0-9]* of a [0-9]*-byte file, 62 tokens$' '$tmp/out' &&
		grep -q '^64 tokens ' '$tmp/out'"
else
	fail "setup (tool_mkhf with bert-base-uncased's tokenizer.json)"
fi

exit $((failures > 0))
