#!/bin/sh
# Files in use are never written over (util.h): export --out, curves --csv,
# lab --csv and train --out refuse the session database and its -wal and
# -shm, the loaded model's files (a file, or a Hugging Face directory's
# files, the tokenizer's among them), the command file being run, a file
# the command reads, and train's --data and --from; by identity, so a
# symbolic link, a hard link or another spelling of the path is refused
# too.  Each refusal leaves the file as it was; a file no longer in use (the
# model before a `load`) may be written again.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_inuse.sh
#
# Needs GPT-2's vocabulary from ../shared/tokenizers (or
# $ATTNSCOPE_SHARED/tokenizers) for the Hugging Face directory.
. "$(dirname "$0")/lib-cli.sh"
need_gpt2

make_tmp cli-inuse
mkdir "$tmp/models" "$tmp/home"
mkmodel "$tmp/models/shakespeare.safetensors"
mkmodel "$tmp/models/other.safetensors"
HOME=$tmp/home
XDG_DATA_HOME=$tmp/home/data
export HOME XDG_DATA_HOME
cd "$tmp" || exit 1
refused="refusing to write over it"
# same A B: the two files hold the same bytes
same() { cmp -s "$1" "$2"; }
# sessions DB: the number of saved sessions the database holds ("" when unreadable)
sessions() { sqlite3 "$1" 'SELECT count(*) FROM sessions WHERE name IS NOT NULL' 2>/dev/null; }

# ------------------------------------------------------ the session database
run --db "$tmp/s.db" shakespeare -c 'text hi; save first' </dev/null
n=$(sessions s.db)
check setup-database sh -c "[ $rc -eq 0 ] && [ '$n' = 1 ]"
cp s.db s.keep
for target in s.db ./s.db "$tmp/s.db" s.db-wal s.db-shm; do
	run --db s.db shakespeare -c "text hi; export stats --out $target" </dev/null
	check "export-over-database-refused ($target)" sh -c \
		"[ $rc -eq 1 ] && grep -q '^-c:2: export: $target: is the session database; $refused$' '$tmp/err'"
done
n=$(sessions s.db)
check export-over-database-kept [ "$n" = 1 ]
ln -s s.db link.db
ln s.db hard.db
for target in link.db hard.db; do
	run --db s.db shakespeare -c "text hi; export stats --format json --out $target" </dev/null
	check "export-over-database-by-identity ($target)" sh -c \
		"[ $rc -eq 1 ] && grep -q 'export: $target: is the session database' '$tmp/err'"
done
run --db link.db shakespeare -c 'text hi; export stats --out s.db-wal' </dev/null
check export-over-wal-of-linked-database sh -c \
	"[ $rc -eq 1 ] && grep -q 's.db-wal: is the session database' '$tmp/err'"
run --db s.db -c 'curves --csv s.db' </dev/null
check curves-csv-over-database-refused sh -c \
	"[ $rc -eq 1 ] && grep -q 's.db: is the session database' '$tmp/err'"
n=$(sessions s.db)
check database-history-kept [ "$n" = 1 ]

# ------------------------------------------------------------ the loaded model
cp models/shakespeare.safetensors model.keep
ln -s models/shakespeare.safetensors model-link
for target in models/shakespeare.safetensors model-link "$tmp/models/../models/shakespeare.safetensors"; do
	run --no-db shakespeare -c "text hi; export stats --out $target" </dev/null
	check "export-over-model-refused ($target)" sh -c \
		"[ $rc -eq 1 ] && grep -q 'export: $target: is a file of the loaded model; $refused$' '$tmp/err'"
done
check export-over-model-kept same models/shakespeare.safetensors model.keep
run --no-db shakespeare -c 'text hi; load other; export stats --out models/shakespeare.safetensors' </dev/null
check model-writable-after-load sh -c "[ $rc -eq 0 ] && ! cmp -s models/shakespeare.safetensors model.keep"
cp model.keep models/shakespeare.safetensors

mkdir hf
if "$TOOLS/tool_mkhf" "$tmp/hf" "$tmp/hfref.safetensors" "$gpt2" >/dev/null 2>&1; then
	for f in config.json model.safetensors vocab.json merges.txt; do
		cp "hf/$f" "$f.keep"
		run --no-db "$tmp/hf" -c "text hi; export stats --out hf/$f" </dev/null
		check "export-over-hf-directory-refused ($f)" sh -c \
			"[ $rc -eq 1 ] && grep -q 'hf/$f: is a file of the loaded model' '$tmp/err' && cmp -s 'hf/$f' '$f.keep'"
	done
	run --no-db "$tmp/hf" -c 'text hi; export stats --out hf/notes.txt' </dev/null
	check export-new-file-in-hf-directory sh -c "[ $rc -eq 0 ] && [ -s hf/notes.txt ]"
else
	fail "hf setup (tool_mkhf)"
fi

# ------------------------------------------ what the running commands read
printf 'text hi\nexport stats --out cmds.txt\n' >cmds.txt
cp cmds.txt cmds.keep
run --no-db shakespeare -f cmds.txt </dev/null
check export-over-command-file-refused sh -c \
	"[ $rc -eq 1 ] && grep -q '^cmds.txt:2: export: cmds.txt: is the command file being run; $refused$' '$tmp/err'"
check export-over-command-file-kept same cmds.txt cmds.keep

training_text data.txt
cp data.txt data.keep
run --no-db -c 'lab heads --quick --data data.txt --csv data.txt' </dev/null
check lab-csv-over-its-data-refused sh -c \
	"[ $rc -eq 1 ] && grep -q 'data.txt: is a file this command reads; $refused$' '$tmp/err'"
check lab-csv-over-its-data-kept same data.txt data.keep
run --no-db shakespeare -c 'text --file data.txt; export stats --out data.txt' </dev/null
check file-read-by-an-earlier-command-writable sh -c "[ $rc -eq 0 ] && ! cmp -s data.txt data.keep"
cp data.keep data.txt

# ------------------------------------------------------------------- train
tiny="--layers 1 --heads 2 --d-model 16 --context 16 --steps 2 --quiet"
ln -s data.txt data-link
for target in data.txt data-link ./data.txt; do
	"$A" train --no-db --data data.txt --out $target $tiny >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "train-out-over-data-refused ($target)" sh -c \
		"[ $rc -eq 1 ] && grep -q '^attnscope train: $target: is the training data (--data); $refused$' '$tmp/err'"
done
check train-out-over-data-kept same data.txt data.keep
cp data.txt d.optim
"$A" train --no-db --data d.optim --out d $tiny >"$tmp/out" 2>"$tmp/err"
rc=$?
check train-optim-over-data-refused sh -c \
	"[ $rc -eq 1 ] && grep -q 'd.optim: is the training data' '$tmp/err' && [ ! -e d ]"
"$A" train --no-db --data data.txt --from shakespeare --out models/shakespeare.safetensors --steps 2 --quiet \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
check train-out-over-from-refused sh -c \
	"[ $rc -eq 1 ] && grep -q 'models/shakespeare.safetensors: is the model trained from (--from)' '$tmp/err'"
check train-out-over-from-kept same models/shakespeare.safetensors model.keep
"$A" train --db s.db --data data.txt --out s.db $tiny >"$tmp/out" 2>"$tmp/err"
rc=$?
n=$(sessions s.db)
check train-out-over-database-refused sh -c \
	"[ $rc -eq 1 ] && grep -q 's.db: is the session database' '$tmp/err' && [ '$n' = 1 ]"
"$A" train --no-db --data data.txt --out new.safetensors $tiny >"$tmp/out" 2>"$tmp/err"
rc=$?
check train-out-elsewhere-written sh -c "[ $rc -eq 0 ] && [ -s new.safetensors ]"

[ "$failures" -eq 0 ]
