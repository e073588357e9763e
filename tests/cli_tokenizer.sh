#!/bin/sh
# --tokenizer: `attnscope MODEL --tokenizer PATH` and `load MODEL
# --tokenizer PATH` for llm.c and llama2.c .bin files with no tokenizer
# beside them (seeded random weights from tool_mkbin; the GPT-2 and Llama 2
# vocabularies of ../shared/tokenizers, or $ATTNSCOPE_SHARED/tokenizers).
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_tokenizer.sh
. "$(dirname "$0")/lib-cli.sh"

shared=${ATTNSCOPE_SHARED:-../shared}
case $shared in /*) ;; *) shared=$(pwd)/$shared ;; esac
gpt2=$shared/tokenizers/gpt2
llama=$shared/tokenizers/llama2c/tokenizer.bin
if [ ! -f "$gpt2/vocab.json" ] || [ ! -f "$llama" ]; then
	echo "FAIL setup (no tokenizers in $shared/tokenizers)"
	exit 1
fi

make_tmp cli-tokenizer
mkdir "$tmp/models"
mkmodel "$tmp/models/shakespeare.safetensors"
cd "$tmp" || exit 1
for f in llmc llama2c; do
	if ! "$TOOLS/tool_mkbin" $f $f.bin >/dev/null 2>&1; then
		echo "FAIL setup (tool_mkbin $f)"
		exit 1
	fi
done
RUN_ARGS=--no-db

# ------------------------------------------------------------------ llm.c
run llmc.bin -c "text Hello world"
check "llm.c without a tokenizer says to give one" sh -c \
	"[ $rc -eq 1 ] && grep -q 'give one with --tokenizer' err"
run llmc.bin --tokenizer "$gpt2" -c "text Hello world; show tokens"
check "llm.c with --tokenizer DIR (vocab.json + merges.txt)" sh -c \
	"[ $rc -eq 0 ] && grep -q '15496  Hello' out && grep -q '995  ␣world' out"
run llmc.bin --tokenizer="$gpt2/merges.txt" -c "text Hello world; show tokens"
check "llm.c with --tokenizer=DIR/merges.txt" sh -c "[ $rc -eq 0 ] && grep -q '15496  Hello' out"
run llmc.bin --tokenizer "$gpt2" --dump -t "Hello world"
check "--dump with --tokenizer" sh -c "[ $rc -eq 0 ] && grep -q 'token 1 id 15496 Hello' out"

# --------------------------------------------------------------- llama2.c
run llama2c.bin -c "text Hello world"
check "llama2.c without a tokenizer says to give one" sh -c \
	"[ $rc -eq 1 ] && grep -q 'give one with --tokenizer' err"
run llama2c.bin --tokenizer "$llama" -c "text Hello world; show tokens"
check "llama2.c with --tokenizer FILE" sh -c \
	"[ $rc -eq 0 ] && grep -q '15043  ␣Hello' out && grep -q '3186  ␣world' out"
# one beside the model that does not fit: the explicit one wins
head -c 4000 "$llama" >tokenizer.bin
run llama2c.bin -c "text hi"
check "a broken tokenizer.bin beside the model fails" status 1
run llama2c.bin --tokenizer "$(dirname "$llama")" -c "text Hello; show tokens"
check "--tokenizer DIR overrides the tokenizer.bin beside the model" sh -c \
	"[ $rc -eq 0 ] && grep -q '15043  ␣Hello' out"
rm tokenizer.bin

# ------------------------------------------------------------ load command
run -c "load llmc.bin --tokenizer $gpt2; text Hello world; show tokens; load llama2c.bin --tokenizer $llama; text Hello; show tokens"
check "load MODEL --tokenizer PATH, for both formats" sh -c \
	"[ $rc -eq 0 ] && grep -q '^loaded llmc:' out && grep -q '15496  Hello' out && grep -q '^loaded llama2c:' out && grep -q '15043  ␣Hello' out"
run -c "load --tokenizer $gpt2 llmc.bin; text Hello; show tokens"
check "load --tokenizer PATH MODEL (flag first)" sh -c "[ $rc -eq 0 ] && grep -q '15496  Hello' out"
run -c "load llmc.bin --tokenizer $gpt2; load llmc.bin"
check "--tokenizer applies to that load only" sh -c \
	"[ $rc -eq 1 ] && grep -q '^-c:2: .*give one with --tokenizer' err"
run -c "load llmc.bin --tokenizer"
check "load MODEL --tokenizer without PATH is a usage error" sh -c \
	"[ $rc -eq 1 ] && grep -q 'usage: load MODEL \[--tokenizer PATH\]' err"
run -c "help load"
check "help load explains --tokenizer" sh -c "[ $rc -eq 0 ] && grep -q -- '--tokenizer PATH' out"

# ------------------------------------------------------------- refusals
run --help
check "--help lists --tokenizer" sh -c "[ $rc -eq 0 ] && grep -q -- '--tokenizer PATH' out"
run models/shakespeare.safetensors --tokenizer "$gpt2" -c "text hi"
check "an attnscope checkpoint (its own tokenizer) refuses --tokenizer" sh -c \
	"[ $rc -eq 1 ] && grep -q 'carries its own tokenizer' err"
run --tokenizer "$gpt2" -c "text hi"
check "--tokenizer without a MODEL is a usage error" sh -c \
	"[ $rc -eq 2 ] && grep -q 'give the MODEL it is for' err"
run llmc.bin --tokenizer
check "--tokenizer without a value is a usage error" sh -c "[ $rc -eq 2 ] && grep -q 'needs a value' err"
run llmc.bin --tokenizer nowhere -c "text hi"
check "a missing --tokenizer is named" sh -c "[ $rc -eq 1 ] && grep -q -- '--tokenizer nowhere' err"
mkfifo fifo
run llmc.bin --tokenizer fifo -c "text hi"
check "a FIFO as --tokenizer says what it is" sh -c \
	"[ $rc -eq 1 ] && grep -q -- '--tokenizer fifo: is a FIFO' err"
run llama2c.bin --tokenizer "$gpt2" -c "text hi"
check "a GPT-2 tokenizer for a llama2.c model is refused" sh -c \
	"[ $rc -eq 1 ] && grep -q 'no tokenizer.bin there' err"

# damaged vocabularies: the messages quote what is there
mkdir gap nul
python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); del v["!"]; json.dump(v,open("gap/vocab.json","w"))' \
	"$gpt2/vocab.json" 2>/dev/null && cp "$gpt2/merges.txt" gap/
if [ -f gap/vocab.json ]; then
	run llmc.bin --tokenizer gap -c "text hi"
	check "a vocabulary with an id missing names that id, not the last token" sh -c \
		"[ $rc -eq 1 ] && grep -q 'no token has id 0 (the 50256 ids must run from 0 without gaps)' err"
fi
cp "$gpt2/vocab.json" nul/
{ sed -n 1,3p "$gpt2/merges.txt"; printf 'a\000 b\n'; sed -n '4,$p' "$gpt2/merges.txt"; } >nul/merges.txt
run llmc.bin --tokenizer nul -c "text hi"
check "a merge holding a NUL byte is quoted with it" sh -c \
	"[ $rc -eq 1 ] && grep -q 'merges.txt:4: token \"a\\\\x00\" is not in the vocabulary' err"

exit $((failures > 0))
