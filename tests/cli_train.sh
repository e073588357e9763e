#!/bin/sh
# End-to-end checks of `attnscope train` (run by tests/run.sh with
# ATTNSCOPE=path-to-binary).  Prints "ok NAME" or "FAIL NAME" per check and
# works in a temporary directory that it removes.
bin=${ATTNSCOPE:-./attnscope}
dir=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-cli-train.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM

check() { # NAME CONDITION-STATUS
	if [ "$2" = 0 ]; then echo "ok $1"; else echo "FAIL $1"; fi
}

# --help prints the usage and exits 0
"$bin" train --help >"$dir/help" 2>&1
rc=$?
grep -q -- '--data' "$dir/help"
check "train --help exits 0 and lists the flags" $(( rc != 0 || $? != 0 ))

# a learnable generated text: numbered lines cycling through a few words
i=0
: >"$dir/text.txt"
while [ $i -lt 600 ]; do
	echo "the cat sat on the mat $((i % 10)); the dog ran to the log $((i % 7))." >>"$dir/text.txt"
	i=$((i + 1))
done

# missing --data: non-zero exit, exactly one line on stderr
"$bin" train --out "$dir/x.safetensors" >"$dir/out" 2>"$dir/err"
rc=$?
lines=$(wc -l <"$dir/err")
grep -q -- '--data' "$dir/err"
check "train without --data fails with one line on stderr" $(( rc == 0 || lines != 1 || $? != 0 ))

# a missing data file: non-zero exit, one line naming the file
"$bin" train --data "$dir/nope.txt" --out "$dir/x.safetensors" >"$dir/out" 2>"$dir/err"
rc=$?
lines=$(wc -l <"$dir/err")
grep -q 'nope.txt' "$dir/err"
check "train with a missing data file fails naming it" $(( rc == 0 || lines != 1 || $? != 0 ))

# a 30-step run writes a checkpoint
"$bin" train --data "$dir/text.txt" --out "$dir/m.safetensors" --steps 30 --layers 2 \
	--heads 2 --d-model 32 --context 32 --batch 8 --threads 1 >"$dir/out" 2>"$dir/err"
rc=$?
[ -s "$dir/m.safetensors" ] && [ ! -e "$dir/m.safetensors.optim" ]
check "a 30-step train run writes a checkpoint" $(( rc != 0 || $? != 0 ))

# interrupted with --stop-after, then resumed: exit 130 and FILE.optim, then 0
"$bin" train --data "$dir/text.txt" --out "$dir/r.safetensors" --steps 20 --layers 1 \
	--heads 2 --d-model 16 --context 16 --batch 4 --threads 1 --stop-after 5 \
	>"$dir/out" 2>"$dir/err"
rc1=$?
grep -q 'resume with: attnscope train --resume' "$dir/err"
hint=$?
"$bin" train --resume "$dir/r.safetensors" --quiet >"$dir/out" 2>"$dir/err"
rc2=$?
[ ! -e "$dir/r.safetensors.optim" ]
check "an interrupted run says how to resume and resumes" $(( rc1 != 130 || hint != 0 || rc2 != 0 || $? != 0 ))

# --db records the run, one row per step with its validation losses
"$bin" train --data "$dir/text.txt" --out "$dir/d.safetensors" --steps 12 --layers 1 \
	--heads 2 --d-model 16 --context 16 --batch 4 --threads 1 --val-every 6 --quiet \
	--db "$dir/runs.db" >"$dir/out" 2>"$dir/err"
rc=$?
got=$(sqlite3 "$dir/runs.db" "select status, steps_done, (select count(*) from training_steps),
	(select count(*) from training_steps where val_loss is not null) from training_runs" 2>&1)
[ "$got" = "done|12|12|2" ]
check "train --db records the run and its 12 steps ($got)" $(( rc != 0 || $? != 0 ))
