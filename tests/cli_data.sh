#!/bin/sh
# The data the program reads ships with it (data/README.md): a copy of the
# program with its data/ and models/ in a directory that has no ../shared
# beside it runs a quick lab arm with no --data and no $ATTNSCOPE_CORPUS,
# from that directory and from elsewhere (data/ beside the executable);
# gzip files are read directly (text --file, train --data), and a damaged
# one is refused in one line; nothing in src/, include/, sessions/, the
# Makefile or tests/ names ../shared/corpora.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_data.sh
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-data
unset ATTNSCOPE_CORPUS ATTNSCOPE_DATA ATTNSCOPE_MODELS
RUN_ARGS="--no-db --batch"

# a fresh copy far from this tree: $tmp/far/attnscope/{attnscope,data,models}
far=$tmp/far/attnscope
mkdir -p "$far"
cp "$A" "$far/attnscope" && cp -r "$root/data" "$root/models" "$far/" || exit 1
A=$far/attnscope
check "the copy has no ../shared beside it" sh -c "[ ! -e '$far/../shared' ]"

cd "$far" || exit 1
run -c "lab residual --quick"
check "lab residual --quick runs in the copy" status 0
check "on the shipped text, data/tinyshakespeare.txt" has_out "on data/tinyshakespeare.txt"
check "its table is there" sh -c "grep -qE '^  50 ' '$tmp/out'"

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
run -c "lab residual --quick"
check "from another directory it finds data/ beside the executable" \
	sh -c "[ $rc -eq 0 ] && grep -q 'on $far/data/tinyshakespeare.txt' '$tmp/out'"
ATTNSCOPE_DATA=$tmp/nowhere run -c "lab residual --quick"
check "a wrong \$ATTNSCOPE_DATA is named in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'lab residual: cannot find the training text (give one with --data FILE): no tinyshakespeare.txt in \$ATTNSCOPE_DATA ($tmp/nowhere)' '$tmp/err'"

# gzip, read directly: the shipped Tang corpus, a passage of it, and
# training from a small compressed text
run "$far/models/tang.safetensors" -c "text --file $far/data/tang_poems.simp.txt.gz --tokens 12"
check "text --file reads the compressed Tang corpus" \
	sh -c "[ $rc -eq 0 ] && grep -q 'characters 0..11 of a 5911830-byte file, 12 tokens' '$tmp/out'"
training_text "$tmp/small.txt"
RUN_ARGS=
gzip -9 -c "$tmp/small.txt" >"$tmp/small.txt.gz"
run train --data "$tmp/small.txt.gz" --layers 1 --heads 1 --d-model 8 --context 16 --batch 2 \
	--steps 2 --val-every 0 --out "$tmp/gz.safetensors"
check "train --data reads a gzip file" sh -c "[ $rc -eq 0 ] && [ -s '$tmp/gz.safetensors' ]"
check "and records the inflated size" sh -c "grep -q 'data_bytes..:$(wc -c <"$tmp/small.txt")[,}]' '$tmp/gz.safetensors'"
head -c 200 "$tmp/small.txt.gz" >"$tmp/cut.gz"
run train --data "$tmp/cut.gz" --layers 1 --heads 1 --d-model 8 --context 16 --batch 2 --steps 1 \
	--out "$tmp/cut.safetensors"
check "a truncated gzip file is refused in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'cut.gz: not a valid gzip file (truncated)' '$tmp/err'"
printf '\037\213garbage' >"$tmp/bad.gz"
run train --data "$tmp/bad.gz" --layers 1 --heads 1 --d-model 8 --context 16 --batch 2 --steps 1 \
	--out "$tmp/bad.safetensors"
check "a damaged gzip file is refused in one line" \
	sh -c "[ $rc -ne 0 ] && grep -q 'bad.gz: not a valid gzip file' '$tmp/err'"

# nothing the program or its tests read lives in ../shared/corpora
cd "$root" || exit 1
check "no ../shared/corpora in src, include, sessions, Makefile, tests" \
	sh -c "! grep -rn 'shared/corpora' src include sessions Makefile tests --exclude=cli_data.sh | grep -q ."

[ "$failures" -eq 0 ]
