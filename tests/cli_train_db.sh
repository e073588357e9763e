#!/bin/sh
# `attnscope train --db`: the run is recorded as it trains.  Its
# training_runs row exists from the start (status running) and its steps
# are committed in batches, so a kill -9 keeps what was committed; a
# database that cannot be used is refused before training; a resumed run
# gets its own row, linked by resumed_from, with only the steps it trained.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope sh tests/cli_train_db.sh
. "$(dirname "$0")/lib-cli.sh"

make_tmp cli-train-db
cd "$tmp" || exit 1
unset ATTNSCOPE_DB

if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "FAIL setup (the sqlite3 command is needed)"
	exit 1
fi
q() { sqlite3 "$tmp/runs.db" "$1" 2>/dev/null; }

training_text text.txt
tiny="--layers 1 --heads 2 --d-model 16 --context 16 --batch 4 --threads 1"

# ------------------------------------------------- kill -9 mid-training
# a long run in the background; once the database holds 100 committed
# steps (polled, with a 60 s limit), kill -9 it
"$A" train --data text.txt --out k.safetensors --steps 1000000 $tiny --val-every 0 --quiet \
	--db runs.db >out 2>err &
pid=$!
n=0
waited=0
while [ "$waited" -lt 600 ]; do
	n=$(q "select count(*) from training_steps")
	[ "${n:-0}" -ge 100 ] 2>/dev/null && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
	waited=$((waited + 1))
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
rc=$?
got=$(q "select status, finished_at is null, data_path, model_path from training_runs")
check "kill-9 leaves the run row, status running ($got)" \
	test "$got" = "running|1|text.txt|k.safetensors"
got=$(q "select count(*) >= 100, count(*) = max(step), min(step), count(loss) = count(*),
	count(layer_grad_norms) = count(*) from training_steps")
check "kill-9 keeps the committed steps 1..N ($got)" test "$got" = "1|1|1|1|1"
check "kill-9 killed a run that was still training (exit $rc)" test "$rc" -eq 137

# ------------------------------------------- a database that cannot be used
# refused before training: status 1, one line, no checkpoint written
mkdir adir
printf 'not a database\n' >notdb.txt
cp notdb.txt notdb.orig
for bad in adir notdb.txt nodir/x.db; do
	rm -f b.safetensors
	run train --data text.txt --out b.safetensors --steps 1000000 $tiny --db "$bad"
	if status 1 && [ "$(wc -l <err)" -eq 1 ] && has_err "$bad" && [ ! -e b.safetensors ] &&
		! has_err 'step '; then
		ok "a bad --db ($bad) is refused before training"
	else
		fail "a bad --db ($bad) is refused before training"
	fi
done
run train --data text.txt --out b.safetensors $tiny --db adir
check "a directory given as --db is named as one" has_err 'adir: is a directory, not a database file'
check "a file that is not a database is left as it was" cmp -s notdb.txt notdb.orig
ATTNSCOPE_DB=notdb.txt run train --data text.txt --out b.safetensors --steps 5 $tiny
check "a bad \$ATTNSCOPE_DB is refused too, naming --no-db" sh -c \
	"[ $rc -eq 1 ] && grep -q 'ATTNSCOPE_DB' err && grep -q -- '--no-db' err && [ ! -e b.safetensors ]"
ATTNSCOPE_DB=notdb.txt run train --data text.txt --out b.safetensors --steps 5 $tiny --no-db --quiet
check "--no-db trains without recording" sh -c "[ $rc -eq 0 ] && [ -s b.safetensors ]"

# ------------------------------------------------- interrupted and resumed
rm -f runs.db runs.db-wal runs.db-shm
run train --data text.txt --out r.safetensors --steps 80 $tiny --val-every 20 --quiet \
	--db runs.db --stop-after 30
first=$(q "select id from training_runs")
got=$(q "select status, steps_done, finished_at is not null from training_runs")
check "an interrupted run is finished as interrupted ($got)" \
	sh -c "[ $rc -eq 130 ] && [ '$got' = 'interrupted|30|1' ]"
# resumed without --db: it records where the run it continues recorded
run train --resume r.safetensors --quiet
got=$(q "select count(*), sum(resumed_from = $first), sum(status = 'done') from training_runs")
check "the resumed run has its own row, resumed_from the first ($got)" \
	sh -c "[ $rc -eq 0 ] && [ '$got' = '2|1|1' ]"
got=$(q "select r.resumed_from is null, count(*), min(s.step), max(s.step), count(s.val_loss)
	from training_steps s join training_runs r on r.id = s.run_id group by r.id order by r.id")
check "each run recorded only the steps it trained ($(echo $got))" \
	test "$(echo $got)" = "1|30|1|30|1 0|50|31|80|3"
check "no step was recorded twice" test "$(q "select count(distinct step) from training_steps")" = 80

exit $((failures > 0))
