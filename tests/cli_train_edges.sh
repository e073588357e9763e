#!/bin/sh
# Edges of `attnscope train` and of the files attnscope reads: bad data is
# status 1 and bad flags status 2; FIFOs and devices are refused before
# they are opened (data, FILE.optim, models); a second Ctrl-C still saves
# the last finished step, a third quits saving nothing; and a database
# write that fails during an analysis command gives one warning.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_train_edges.sh
. "$(dirname "$0")/lib-cli.sh"

make_tmp cli-train-edges
mkdir "$tmp/models"
mkmodel "$tmp/models/shakespeare.safetensors"
cd "$tmp" || exit 1
unset ATTNSCOPE_DB

training_text text.txt
tiny="--layers 1 --heads 2 --d-model 16 --context 16 --batch 4 --threads 1 --quiet"
train() { run train --out m.safetensors $tiny "$@"; }

# ------------------------------------------------ exit status: data vs flags
: >empty.txt
printf 'a' >one.txt
printf 'hello world\n' >short.txt
train --data empty.txt
check "an empty data file is status 1" sh -c "[ $rc -eq 1 ] && grep -q 'empty file' err"
train --data one.txt
check "a 1-byte data file is status 1, as an empty one" sh -c \
	"[ $rc -eq 1 ] && grep -q 'one.txt: the training split has 1 tokens' err"
train --data short.txt
check "a text shorter than the context is status 1" sh -c "[ $rc -eq 1 ] && grep -q 'context' err"
printf 'abcdefghijklmnopqrstuvwxyz%.0s' 1 2 3 4 5 6 7 8 9 10 >noline.txt
train --data noline.txt --line-starts
check "--line-starts on a text without newlines is status 1" sh -c \
	"[ $rc -eq 1 ] && grep -q 'no newline' err"
train --data text.txt --repeat 0.5 --repeat-min 10 --repeat-max 12
check "repeated spans that cannot fit the context are status 2 (flags)" sh -c \
	"[ $rc -eq 2 ] && grep -q -- '--repeat-max 12' err"
train --data text.txt --heads 3
check "an impossible shape is status 2 and one line naming both numbers" sh -c \
	"[ $rc -eq 2 ] && [ \$(wc -l <err) -eq 1 ] && grep -q 'd_model 16 is not divisible by num_heads 3' err"
train --data text.txt --steps x
check "a bad number is status 2" status 2

# -------------------------------------------- special files, before opening
mkfifo fifo
train --data fifo
check "train --data FIFO is refused without opening it" sh -c \
	"[ $rc -eq 1 ] && [ \$(wc -l <err) -eq 1 ] && grep -q '^attnscope train: fifo: is a FIFO, not a regular file$' err"
train --data /dev/zero
check "train --data /dev/zero is refused" sh -c \
	"[ $rc -eq 1 ] && grep -q '/dev/zero: is a character device, not a regular file' err"
train --data .
check "train --data DIR is refused" sh -c "[ $rc -eq 1 ] && grep -q '\\.: is a directory' err"
mkfifo r.safetensors.optim
run train --resume r.safetensors
check "--resume with a FIFO as FILE.optim is refused" sh -c \
	"[ $rc -eq 1 ] && grep -q 'r.safetensors.optim: is a FIFO, not a regular file' err"
run --no-db fifo -c "text hi"
check "a FIFO as the model says what it is" sh -c \
	"[ $rc -eq 1 ] && grep -q 'fifo: is a FIFO, not a model file or directory' err"
run --no-db /dev/zero -c "text hi"
check "/dev/zero as the model says what it is" sh -c \
	"[ $rc -eq 1 ] && grep -q '/dev/zero: is a character device, not a model file' err"
run --no-db -c "load fifo"
check "load FIFO says what it is" sh -c "[ $rc -eq 1 ] && grep -q 'fifo: is a FIFO' err"

# ---------------------------------------------------------- Ctrl-C twice
# steps of about half a second, so that the second signal comes mid-step
slow="--layers 4 --d-model 128 --context 256 --batch 16 --threads 1 --val-batches 1
	--val-every 0 --steps 100000 --log-every 1"
# wait_err TEXT: waits (up to 60 s) until err holds TEXT or the trainer ended
wait_err() {
	n=0
	while [ $n -lt 600 ] && ! grep -q -- "$1" err && kill -0 $pid 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
	done
}
# interrupt N: starts a slow run, and once a step is done sends N SIGINTs,
# each after the trainer has said it got the one before
interrupt() {
	rm -f c.safetensors c.safetensors.optim
	"$A" train --data text.txt --out c.safetensors $slow >out 2>err &
	pid=$!
	wait_err 'step 1/'
	kill -INT $pid
	wait_err 'interrupted:'
	if [ "$1" -ge 2 ]; then
		kill -INT $pid
		wait_err 'stopping now'
	fi
	[ "$1" -ge 3 ] && kill -INT $pid
	wait $pid
	rc=$?
}
interrupt 2
done_steps=$(sed -n 's/.*stopped after step \([0-9]*\) of.*/\1/p' err)
check "a second Ctrl-C still saves the last finished step (step $done_steps)" sh -c \
	"[ $rc -eq 130 ] && [ -s c.safetensors ] && [ -s c.safetensors.optim ] && grep -q 'resume with' err"
run train --resume c.safetensors --steps $((done_steps + 1)) --quiet
check "and that run resumes" sh -c "[ $rc -eq 0 ] && [ ! -e c.safetensors.optim ]"
interrupt 3
# the third comes mid-step (nothing saved, status 1), or, when the loop had
# already stopped, while the files are written (they are finished)
if [ $rc -eq 1 ] && grep -q 'quit without saving' err && [ ! -e c.safetensors ] &&
	[ -z "$(find . -name 'c.safetensors*')" ]; then
	ok "a third Ctrl-C quits at once, saving nothing (status 1)"
elif [ $rc -eq 130 ] && [ -s c.safetensors ] && [ -s c.safetensors.optim ]; then
	ok "a third Ctrl-C after the loop stopped lets the save finish"
else
	fail "a third Ctrl-C quits saving nothing, or lets the save finish"
fi

# ------------------------------------ a failed analysis write: one warning
# triggers make every write fail from the analysis result on, as a full
# disk would
for cmd in sweep heads; do
	rm -f full.db full.db-wal full.db-shm
	run --db full.db -c "text hi"
	sqlite3 full.db "
	CREATE TRIGGER full1 BEFORE INSERT ON sweeps BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
	CREATE TRIGGER full2 BEFORE UPDATE ON head_stats BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
	CREATE TRIGGER full3 BEFORE UPDATE ON commands WHEN trim(OLD.line) = '$cmd'
		BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
	CREATE TRIGGER full4 BEFORE INSERT ON commands
		WHEN EXISTS (SELECT 1 FROM commands WHERE trim(line) = '$cmd')
		BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;" ||
		echo "FAIL setup (sqlite3)"
	run --db full.db -c "text First Citizen; $cmd; text hello there; stats; save x"
	check "a full disk during $cmd gives one warning" sh -c \
		"[ \$(grep -c warning err) -eq 1 ] && grep -q 'recording stopped' err"
	check "and recording stops (save says so)" sh -c "[ $rc -eq 1 ] && grep -q 'not recording' err"
done

exit $((failures > 0))
