#!/bin/sh
# Hugging Face RoBERTa and DistilBERT directories (loader-hf-roberta.c,
# loader-hf-distilbert.c): seeded models written by tool_mkhf --roberta /
# --distilbert in HF's names, layout and config spelling give exactly the
# numbers of the same weights as an attnscope checkpoint, which the writer
# computes from the same arrays with its own index arithmetic (RoBERTa: the
# checkpoint's position row i is the file's row 2 + i, rows 0 and 1 noise;
# token type 0 folded in).  One file or shards, tied or untied decoder, a
# bare model (no head: attention only), the masked-LM head present, <s> ...
# </s> around RoBERTa's byte-level BPE and [CLS] ... [SEP] around
# DistilBERT's WordPiece, refusals in one line.  Needs GPT-2's vocabulary
# from ../shared/tokenizers (or $ATTNSCOPE_SHARED/tokenizers).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-hf-bertlike
RUN_ARGS=--no-db
text="To be, or not to be, that is the question."
gzip -dc "$(dirname "$0")/data/tokenizers/bert_uncased.json.gz" >"$tmp/bert.json"

# mk FAMILY OPTIONS...: a fresh $tmp/hf and $tmp/ref.safetensors
mk() {
	fam=$1
	shift
	tokarg=$gpt2
	[ "$fam" = distilbert ] && tokarg=$tmp/bert.json
	rm -rf "$tmp/hf" && mkdir "$tmp/hf" &&
		"$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/ref.safetensors" "$tokarg" --"$fam" "$@" >/dev/null 2>&1
}

for fam in roberta distilbert; do
	for opt in "" --shards --untied; do
		nm=$fam${opt:+_}$(echo "$opt" | tr -d '-')
		if ! mk $fam $opt; then
			fail "$nm setup (tool_mkhf --$fam $opt)"
			continue
		fi
		same_as_ref "$nm"
		check "$nm: the masked-LM head is read (head mlm, a loss)" \
			sh -c "grep -q 'head mlm' '$tmp/hf.dump' && grep -q '^loss [0-9]' '$tmp/hf.dump'"
		if [ "$opt" = --untied ]; then
			check "$nm: a decoder weight other than the word embeddings unties the model" \
				grep -q 'tied no' "$tmp/hf.dump"
		fi
	done
done

# RoBERTa's position offset: the dumps above match only with the file's row
# 2 as position 0; read from row 1 instead (pad_token_id 0) they differ
mk roberta
run "$tmp/hf" -t "$text" --dump
check "roberta: max_position_embeddings 66 with pad_token_id 1 is a context of 64, eps 1e-05" \
	sh -c "grep -q 'context 64' '$tmp/out' && grep -q 'eps 1e-05' '$tmp/out'"
check "roberta: <s> ... </s> around the text, ids as roberta-base lays them out (<s> 0, </s> 2, To 2518)" \
	sh -c "[ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | head -2 | tr '\n' ' ')\" = '0 2518 ' ] &&
	[ \"\$(grep '^token ' '$tmp/out' | tail -1 | awk '{ print \$4 }')\" = 2 ]"
sed 's/"pad_token_id": 1/"pad_token_id": 0/' "$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t "$text" --dump
grep -v '^model \|^config ' "$tmp/out" >"$tmp/off1.dump"
grep -v '^config ' "$tmp/ref.dump" >"$tmp/ref-noconf.dump"
check "roberta: reading positions one row early (pad_token_id 0) changes the numbers: the offset is the file's row 2" \
	sh -c "[ $rc -eq 0 ] && grep -q 'context 65' '$tmp/out' && [ -s '$tmp/off1.dump' ] && ! cmp -s '$tmp/off1.dump' '$tmp/ref-noconf.dump'"

mk roberta
run "$tmp/hf" -c "text $text; generate 3"
check "generate refuses RoBERTa, a bidirectional encoder, in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'bidirectional encoder' '$tmp/err' && [ \$(wc -l <'$tmp/err') -eq 1 ]"

# bare models: attention without predictions
for fam in roberta distilbert; do
	mk $fam --bare || fail "$fam --bare setup"
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model \|^config \|^loss ' "$tmp/out" >"$tmp/bare.dump"
	check "$fam --bare: loads with head none and no loss" \
		sh -c "[ $rc -eq 0 ] && grep -q 'head none' '$tmp/out' && grep -q '^loss none' '$tmp/out'"
	run "$tmp/ref.safetensors" -t "$text" --dump
	grep -v '^model \|^config \|^loss ' "$tmp/out" >"$tmp/bare-ref.dump"
	check "$fam --bare: the attention of the same weights with the head" \
		sh -c "[ -s '$tmp/bare.dump' ] && cmp -s '$tmp/bare.dump' '$tmp/bare-ref.dump'"
done

# DistilBERT's tokenizer: bert-base-uncased's WordPiece, [CLS] ... [SEP]
mk distilbert
run "$tmp/hf" -t "Hello, World!" --dump
check "distilbert: Hello, World! is [CLS] hello , world ! [SEP] (101 7592 1010 2088 999 102)" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(grep '^token ' '$tmp/out' | awk '{ print \$4 }' | tr '\n' ' ')\" = '101 7592 1010 2088 999 102 ' ]"
check "distilbert: the config is read: eps 1e-12, post-norm, exact GELU, no mask, head mlm" \
	grep -q 'norm layernorm eps 1e-12 placement post pos learned mlp gelu-exact bias yes tied yes residual yes scale yes mask none emb_norm yes head mlm' "$tmp/out"
sed 's/"sinusoidal_pos_embds": false/"sinusoidal_pos_embds": true/' "$tmp/hf/config.json" >"$tmp/c" &&
	mv "$tmp/c" "$tmp/hf/config.json"
run "$tmp/hf" -t "$text" --dump
grep -v '^model ' "$tmp/out" >"$tmp/hf.dump"
run "$tmp/ref.safetensors" -t "$text" --dump
grep -v '^model ' "$tmp/out" >"$tmp/ref.dump"
check "distilbert: sinusoidal_pos_embds true reads the position table as stored" \
	sh -c "[ -s '$tmp/hf.dump' ] && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"

# refused by name, in one line: config.json edits on a fresh model each
refuse() { refuse_edit "mk $1" "$1: $2" "$3" "$4"; } # FAMILY NAME SED-EXPRESSION MESSAGE
refuse roberta "hidden_act relu" 's/"hidden_act": "gelu"/"hidden_act": "relu"/' \
	'hidden_act "relu" is not supported'
refuse roberta "is_decoder true" 's/"pad_token_id": 1,/"pad_token_id": 1, "is_decoder": true,/' \
	'is_decoder true is not supported'
refuse roberta "max_position_embeddings 2 with pad_token_id 1" \
	's/"max_position_embeddings": 66/"max_position_embeddings": 2/' \
	'max_position_embeddings 2 leaves no position after pad_token_id 1'
refuse roberta "a position table longer than max_position_embeddings says" \
	's/"max_position_embeddings": 66/"max_position_embeddings": 65/' \
	'position_embeddings.weight has shape \[66, 32\], but config.json needs \[65, 32\]'
refuse distilbert "activation relu" 's/"activation": "gelu"/"activation": "relu"/' \
	'activation "relu" is not supported'
refuse distilbert "n_heads 5 (dim 32)" 's/"n_heads": 4/"n_heads": 5/' \
	'dim 32 is not divisible by n_heads 5'

mk roberta
rm "$tmp/hf/vocab.json" "$tmp/hf/merges.txt"
cp "$gpt2/vocab.json" "$gpt2/merges.txt" "$tmp/hf/"
run "$tmp/hf" -t hi
check "roberta: a byte-level vocabulary without <s> is refused in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'the vocabulary has no <s>' '$tmp/err' && [ \$(wc -l <'$tmp/err') -eq 1 ]"

exit $((failures > 0))
