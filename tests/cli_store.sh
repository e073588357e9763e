#!/bin/sh
# End-to-end tests of the session database through the binary: --db,
# ATTNSCOPE_DB, --no-db, save/open/replay/measurements across processes,
# unusable paths, two writers, kill -9.  Prints "ok NAME" or "FAIL NAME"
# per check; exit status 1 when any check failed.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_store.sh
#
# Runs in a temporary directory holding models/shakespeare.safetensors (a
# seeded random character model from tool_mkmodel).  Uses the sqlite3
# command-line tool for integrity checks when it is installed.
. "$(dirname "$0")/lib-cli.sh"

make_tmp store
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/models" "$tmp/home"
mkmodel "$tmp/models/shakespeare.safetensors"
HOME=$tmp/home
export HOME
unset ATTNSCOPE_DB
cd "$tmp" || exit 1

SQLITE=
if command -v sqlite3 >/dev/null 2>&1; then
	SQLITE=sqlite3
fi

# run (here with one thread: runs reproduce exactly, and a loaded machine is
# not oversubscribed), ok, fail, check, has_out, has_err, status:
# tests/lib-cli.sh
RUN_ARGS="--threads 1"
no_err() { [ ! -s "$tmp/err" ]; }
integrity() {
	[ -z "$SQLITE" ] && return 0
	[ "$($SQLITE "$1" 'PRAGMA integrity_check')" = ok ]
}
# CSV fields of the last N measurements without ids, times and timings:
# variant, kv_heads, norm, mask, scale, ablated, n_tokens, loss, base_loss,
# delta_loss, kl, top1 (texts below have no commas).
numbers() {
	sed 1d | cut -d, -f7-10,12,13,15,18-20,22,23
}

# Is the database wired into the command line yet?
run --db "$tmp/probe.db" -c 'echo probe' </dev/null
if [ ! -f "$tmp/probe.db" ]; then
	echo "skip cli_store: --db is not wired into main.c yet (nothing recorded)"
	exit 0
fi

# ------------------------------------------------- default, env, --no-db
# the default place: sessions/attnscope.db where a sessions/ directory
# exists (a checkout), else under $XDG_DATA_HOME, else ~/.local/share;
# never a new sessions/ directory in whatever directory attnscope runs in
run -c 'text hello' </dev/null
check default-path-home sh -c "[ $rc -eq 0 ] && [ -f '$tmp/home/.local/share/attnscope/attnscope.db' ] &&
	[ ! -e '$tmp/sessions' ] && [ ! -s '$tmp/err' ]"
XDG_DATA_HOME=$tmp/xdg
export XDG_DATA_HOME
run -c 'text hello' </dev/null
unset XDG_DATA_HOME
check default-path-xdg sh -c "[ $rc -eq 0 ] && [ -f '$tmp/xdg/attnscope/attnscope.db' ]"
mkdir "$tmp/sessions"
run -c 'text hello' </dev/null
check default-path-checkout sh -c "[ $rc -eq 0 ] && [ -f '$tmp/sessions/attnscope.db' ] && [ ! -s '$tmp/err' ]"
(HOME= ; unset HOME; cd "$tmp/home" && $TIMEOUT "$A" -c 'echo hello' </dev/null >"$tmp/out" 2>"$tmp/err")
rc=$?
check default-path-no-home sh -c "[ $rc -eq 0 ] && grep -q 'no \$HOME for the default database' '$tmp/err'"
ATTNSCOPE_DB=$tmp/env.db run -c 'text hello' </dev/null
check env-path sh -c "[ $rc -eq 0 ] && [ -f '$tmp/env.db' ]"
ATTNSCOPE_DB=$tmp/env2.db run --db "$tmp/flag.db" -c 'text hello' </dev/null
check flag-over-env sh -c "[ $rc -eq 0 ] && [ -f '$tmp/flag.db' ] && [ ! -f '$tmp/env2.db' ]"
ATTNSCOPE_DB=$tmp/none.db run --no-db -c 'text hello' </dev/null
check no-db sh -c "[ $rc -eq 0 ] && [ ! -f '$tmp/none.db' ] && [ ! -s '$tmp/err' ]"
run --no-db -c 'sessions' </dev/null
check no-db-commands sh -c "[ $rc -eq 1 ] && grep -q 'no session database' '$tmp/err'"

# ------------------------------------------------ a batch, open, replay
DB=$tmp/s.db
run --db "$DB" -c 'text To be or not to be that is the question;attn gqa 2;ablate 0.1;ablate 9.9' </dev/null
check batch-failing-command sh -c "[ $rc -eq 1 ] && grep -q 'does not exist' '$tmp/err'"
cat >"$tmp/batch.cmds" <<'EOF'
text To be or not to be that is the question
attn gqa 2
ablate 0.1
norm post
show head 1.2
save demo
export heatmap 0.0 --format csv --out saved.csv
export grid --format csv --out saved-grid.csv
EOF
run --db "$DB" -f "$tmp/batch.cmds" </dev/null
check batch status 0
check batch-saved has_out '^saved session 2 "demo"'
run --db "$DB" -c 'sessions' </dev/null
check sessions-list sh -c "[ $rc -eq 0 ] && grep -q '^ *2  *demo ' '$tmp/out'"
if [ -n "$SQLITE" ]; then
	check rows-commands sh -c "[ \"\$($SQLITE '$DB' 'SELECT group_concat(seq || \":\" || ok || \":\" || line, \"|\") FROM commands WHERE session_id = 2')\" = '1:1:text To be or not to be that is the question|2:1:attn gqa 2|3:1:ablate 0.1|4:1:norm post|5:1:show head 1.2|6:1:save demo|7:1:export heatmap 0.0 --format csv --out saved.csv|8:1:export grid --format csv --out saved-grid.csv' ]"
	check rows-failed-command sh -c "[ \"\$($SQLITE '$DB' 'SELECT ok FROM commands WHERE session_id = 1 AND seq = 4')\" = 0 ]"
	check rows-measurements sh -c "[ \"\$($SQLITE '$DB' 'SELECT group_concat(command_seq || \":\" || variant, \"|\") FROM measurements WHERE session_id = 2')\" = '1:native|2:gqa2|3:gqa2 -0.1|4:gqa2 post-norm -0.1' ]"
	check rows-head-stats sh -c "[ \"\$($SQLITE '$DB' 'SELECT count(*) FROM head_stats h JOIN measurements m ON m.id = h.measurement_id WHERE m.session_id = 2')\" = 32 ]"
	# `heads` completes the current measurement's rows with induction and role
	run --db "$tmp/heads.db" -c 'text To be or not to be; heads' </dev/null
	check heads-recorded sh -c "[ $rc -eq 0 ] && [ \"\$($SQLITE '$tmp/heads.db' 'SELECT count(*) || \":\" || count(role) || \":\" || count(induction) FROM head_stats WHERE measurement_id = (SELECT max(id) FROM measurements)')\" = '8:8:8' ]"
	check rows-schema-version sh -c "[ \"\$($SQLITE '$DB' 'PRAGMA user_version')\" = 5 ]"
	# `sweep` records one sweep and L*H + L entries (2 layers x 4 heads + 2)
	run --db "$tmp/sweep.db" -c 'text To be or not to be; sweep' </dev/null
	check sweep-recorded sh -c "[ $rc -eq 0 ] && [ \"\$($SQLITE '$tmp/sweep.db' 'SELECT (SELECT count(*) FROM sweeps) || \":\" || (SELECT count(*) FROM sweep_entries) || \":\" || (SELECT count(*) FROM sweep_entries WHERE head IS NULL)')\" = '1:10:2' ]"
fi
run --db "$DB" -c 'measurements --csv --session demo' </dev/null
numbers <"$tmp/out" >"$tmp/orig.numbers"
check measurements-csv sh -c "[ $rc -eq 0 ] && [ \$(wc -l <'$tmp/out') -eq 5 ] && [ \$(wc -l <'$tmp/orig.numbers') -eq 4 ]"

# open in a new process: the same attention, byte for byte
run --db "$DB" -c 'open demo; export heatmap 0.0 --format csv --out reopened.csv; export grid --format csv --out reopened-grid.csv; export heatmap 1.2 --format csv --out sel.csv' </dev/null
check open status 0
check open-heatmap-identical cmp -s saved.csv reopened.csv
check open-grid-identical cmp -s saved-grid.csv reopened-grid.csv
check open-summary has_out '^opened session 2: shakespeare, 39 tokens, gqa2 post-norm -0.1$'

# replay in a new process: the same measurements
run --db "$DB" -c 'replay demo' </dev/null
check replay sh -c "[ $rc -eq 0 ] && grep -q '^replayed session 2: 5 commands run, 1 skipped (save, replay, quit, tour), 2 not run because they write a file' '$tmp/out'"
run --db "$DB" -c 'measurements --csv --last 4' </dev/null
numbers <"$tmp/out" >"$tmp/replay.numbers"
check replay-measurements cmp -s "$tmp/orig.numbers" "$tmp/replay.numbers"
check replay-export cmp -s saved.csv reopened.csv

# names and texts that try to break out of SQL
printf '%s\n' "text it's \"quoted\"; '); DROP TABLE sessions; -- end" \
	"save o'neil \"x\"; '); DROP TABLE sessions; -- $(printf '\377\376')" >"$tmp/hostile.cmds"
run --db "$DB" -f "$tmp/hostile.cmds" </dev/null
check hostile-save sh -c "[ $rc -eq 0 ] && grep -q 'DROP TABLE sessions' '$tmp/out'"
# forget takes a name as save and open do: the rest of the line, an
# apostrophe included (not "unbalanced ' quote")
printf '%s\n' "save Romeo's take" >"$tmp/romeo.cmds"
run --db "$DB" -f "$tmp/romeo.cmds" </dev/null
printf '%s\n' "forget Romeo's take" "open Romeo's take" >"$tmp/romeo-forget.cmds"
run --db "$DB" -f "$tmp/romeo-forget.cmds" </dev/null
check forget-name-as-typed sh -c "[ $rc -ne 0 ] && grep -q '^forgot session [0-9]*: ' '$tmp/out' && ! grep -q 'unbalanced' '$tmp/err' && grep -q \"Romeo's take\" '$tmp/err'"
printf '%s\n' "open o'neil \"x\"; '); DROP TABLE sessions; -- $(printf '\377\376')" 'sessions' >"$tmp/hostile-open.cmds"
run --db "$DB" -f "$tmp/hostile-open.cmds" </dev/null
check hostile-open sh -c "[ $rc -eq 0 ] && grep -q '^opened session' '$tmp/out' && grep -q ' demo ' '$tmp/out'"
if [ -n "$SQLITE" ]; then
	printf '%s\n' "it's \"quoted\"; '); DROP TABLE sessions; -- end" >"$tmp/hostile.want"
	$SQLITE "$DB" "SELECT text FROM measurements WHERE text LIKE 'it%' ORDER BY id DESC LIMIT 1" >"$tmp/hostile.got"
	check hostile-text-exact cmp -s "$tmp/hostile.want" "$tmp/hostile.got"
	$SQLITE "$DB" "SELECT hex(name) FROM sessions WHERE CAST(name AS TEXT) LIKE 'o''neil%'" >"$tmp/hostile-name.got"
	printf '%s' "o'neil \"x\"; '); DROP TABLE sessions; -- $(printf '\377\376')" | od -An -tx1 | tr -d ' \n' | tr a-f A-F >"$tmp/hostile-name.want"
	echo >>"$tmp/hostile-name.want"
	check hostile-name-bytes cmp -s "$tmp/hostile-name.want" "$tmp/hostile-name.got"
fi

# ------------------------------------------ listing and forgetting sessions
FDB=$tmp/forget.db
run --db "$FDB" -c 'text one' </dev/null
run --db "$FDB" -c 'text two; save kept' </dev/null
run --db "$FDB" -c 'text three' </dev/null
run --db "$FDB" -c 'sessions --named' </dev/null
check sessions-named sh -c "[ $rc -eq 0 ] && grep -q '^    2   kept ' '$tmp/out' &&
	! grep -q '^    1 ' '$tmp/out' && grep -q '(1 of 4 sessions' '$tmp/out'"
run --db "$FDB" -c 'sessions --last 2' </dev/null
check sessions-last sh -c "[ $rc -eq 0 ] && grep -q '^    4 ' '$tmp/out' && grep -q '^    5\\*' '$tmp/out' &&
	! grep -q '^    3 ' '$tmp/out'"
run --db "$FDB" -c 'forget kept; forget 1' </dev/null
check forget-sessions sh -c "[ $rc -eq 0 ] && grep -q '^forgot session 2: 2 commands, 1 measurement\$' '$tmp/out'"
if [ -n "$SQLITE" ]; then
	check forget-rows-gone sh -c "[ \"\$($SQLITE '$FDB' 'SELECT count(*) FROM sessions WHERE id IN (1, 2); SELECT count(*) FROM measurements WHERE session_id IN (1, 2); SELECT count(*) FROM commands WHERE session_id IN (1, 2); PRAGMA foreign_key_check' | tr '\n' ' ')\" = '0 0 0 ' ]"
	check forget-others-kept sh -c "[ \"\$($SQLITE '$FDB' 'SELECT count(*) FROM measurements WHERE session_id = 3')\" = 1 ]"
fi
run --db "$FDB" -c 'forget 99' </dev/null
check forget-unknown sh -c "[ $rc -eq 1 ] && grep -q 'no session 99' '$tmp/err'"
run --db "$FDB" -c 'text x; forget 8' </dev/null
check forget-current-refused sh -c "[ $rc -eq 1 ] && grep -q 'is this one, still being recorded' '$tmp/err'"

# replay does not overwrite files unless told to
RDB=$tmp/replay-write.db
run --db "$RDB" -c "text hi there; export stats --out $tmp/stats.txt" </dev/null
echo mine >"$tmp/stats.txt"
run --db "$RDB" -c 'replay 1' </dev/null
check replay-keeps-files sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/stats.txt')\" = mine ] &&
	grep -q '1 not run because it writes a file (--write runs it)' '$tmp/out'"
run --db "$RDB" -c 'replay 1 --write' </dev/null
check replay-write sh -c "[ $rc -eq 0 ] && grep -q '^model  *shakespeare' '$tmp/stats.txt'"

# ---------------------------------------------------- unusable paths
printf 'my notes, not a database\n' >"$tmp/notes.txt"
cp "$tmp/notes.txt" "$tmp/notes.orig"
run --db "$tmp/notes.txt" -c 'text hello; echo alive' </dev/null
check not-sqlite-keeps-working sh -c "[ $rc -eq 0 ] && grep -q '^alive$' '$tmp/out'"
check not-sqlite-one-warning sh -c "[ \$(grep -c 'warning' '$tmp/err') -eq 1 ] && grep -q 'not a SQLite database' '$tmp/err'"
check not-sqlite-unchanged cmp -s "$tmp/notes.txt" "$tmp/notes.orig"
check not-sqlite-no-wal sh -c "[ ! -e '$tmp/notes.txt-wal' ]"
run --db "$tmp/notes.txt" -c 'save x' </dev/null
check not-sqlite-save-fails sh -c "[ $rc -eq 1 ] && grep -q 'no session database' '$tmp/err'"

if [ "$(id -u)" = 0 ]; then
	ro=/proc/attnscope-test-$$.db
else
	mkdir "$tmp/ro"
	chmod 555 "$tmp/ro"
	ro=$tmp/ro/s.db
fi
run --db "$ro" -c 'text hello; echo alive' </dev/null
check readonly-keeps-working sh -c "[ $rc -eq 0 ] && grep -q '^alive$' '$tmp/out'"
check readonly-one-warning sh -c "[ \$(grep -c 'warning' '$tmp/err') -eq 1 ] && grep -q 'cannot\\|read-only' '$tmp/err' && grep -q 'without recording' '$tmp/err'"
check readonly-no-file sh -c "[ ! -e '$ro' ]"

# a database on a read-only file system, and one on a full one, say so in
# one line (not SQLite's "unable to open database file" or "disk I/O
# error"): a 64 KiB tmpfs, remounted read-only, then filled.  Needs root
# and mount(8); skipped otherwise.
fs=$tmp/fs
mkdir "$fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k tmpfs "$fs" 2>/dev/null; then
	trap 'umount "$fs" 2>/dev/null; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
	run --db "$fs/s.db" -c 'echo made' </dev/null
	if mount -o remount,ro "$fs" 2>/dev/null; then
		for f in s.db new.db; do
			run --db "$fs/$f" -c 'text hello; echo alive' </dev/null
			check "read-only-fs-says-so $f" sh -c "[ $rc -eq 0 ] && grep -q '^alive\$' '$tmp/out' && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^attnscope: warning: $fs/$f: the database is read-only (Read-only file system); going on without recording' '$tmp/err'"
		done
		mount -o remount,rw "$fs"
	else
		echo "ok read-only-fs-says-so # skipped: cannot remount read-only"
	fi
	rm -f "$fs"/s.db-*
	dd if=/dev/zero of="$fs/fill" bs=1k count=128 2>/dev/null
	for f in s.db full.db; do
		run --db "$fs/$f" -c 'text hello; echo alive' </dev/null
		check "full-disk-says-so $f" sh -c "[ $rc -eq 0 ] && grep -q '^alive\$' '$tmp/out' && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^attnscope: warning: $fs/$f: no space left on the device; going on without recording' '$tmp/err'"
	done
	umount "$fs"
else
	echo "ok read-only-fs-says-so # skipped: needs root and mount -t tmpfs"
	echo "ok full-disk-says-so # skipped: needs root and mount -t tmpfs"
fi

"$SQLITE" "$tmp/newer.db" 'PRAGMA application_id = 1096045390; PRAGMA user_version = 7; CREATE TABLE future (x)' 2>/dev/null
if [ -f "$tmp/newer.db" ]; then
	cp "$tmp/newer.db" "$tmp/newer.orig"
	run --db "$tmp/newer.db" -c 'echo alive' </dev/null
	check newer-refused sh -c "[ $rc -eq 0 ] && grep -q 'newer attnscope' '$tmp/err' && cmp -s '$tmp/newer.db' '$tmp/newer.orig'"
fi

# ------------------------------------------------------ two writers
C=$tmp/c.db
i=0
while [ $i -lt 150 ]; do echo "text writer one line $i"; i=$((i + 1)); done >"$tmp/w1.cmds"
i=0
while [ $i -lt 150 ]; do echo "text writer two line $i"; i=$((i + 1)); done >"$tmp/w2.cmds"
$TIMEOUT "$A" --threads 1 --db "$C" -f "$tmp/w1.cmds" >/dev/null 2>"$tmp/w1.err" </dev/null &
p1=$!
$TIMEOUT "$A" --threads 1 --db "$C" -f "$tmp/w2.cmds" >/dev/null 2>"$tmp/w2.err" </dev/null &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
rc=$r1
check writers-status sh -c "[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ ! -s '$tmp/w1.err' ] && [ ! -s '$tmp/w2.err' ]"
run --db "$C" -c 'measurements --csv' </dev/null
check writers-no-lost-rows sh -c "[ \$(grep -c 'writer one' '$tmp/out') -eq 150 ] && [ \$(grep -c 'writer two' '$tmp/out') -eq 150 ]"
check writers-integrity integrity "$C"

# two processes creating one new database at the same moment: both record,
# neither sees the other's half-made file (ten tries, each on a fresh path)
bad=0
k=0
while [ $k -lt 10 ]; do
	N=$tmp/new$k.db
	"$A" --threads 1 --db "$N" -c 'echo a' >/dev/null 2>"$tmp/n1.err" </dev/null &
	q=$!
	"$A" --threads 1 --db "$N" -c 'echo b' >/dev/null 2>"$tmp/n2.err" </dev/null
	wait $q
	if [ -s "$tmp/n1.err" ] || [ -s "$tmp/n2.err" ]; then bad=$((bad + 1)); fi
	k=$((k + 1))
done
check concurrent-create sh -c "[ $bad -eq 0 ]"

# ---------------------------------------------------------- kill -9
K=$tmp/k.db
seq 1 100000 | awk '{ print "text kill me " $1; print "attn mqa"; print "attn mha" }' >"$tmp/k.cmds"
"$A" --threads 1 --db "$K" -f "$tmp/k.cmds" >/dev/null 2>&1 </dev/null &
pk=$!
sleep 1
kill -9 $pk 2>/dev/null
wait $pk 2>/dev/null
run --db "$K" -c 'sessions' </dev/null
check kill9-reopens sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ] && grep -q '^ *1  ' '$tmp/out'"
check kill9-integrity integrity "$K"
if [ -n "$SQLITE" ]; then
	# every finished command is a prefix of the file, in order
	check kill9-commands sh -c "n=\$($SQLITE '$K' 'SELECT count(*) FROM commands WHERE session_id = 1 AND ok = 1'); [ \$n -gt 10 ] && [ \"\$($SQLITE '$K' 'SELECT line FROM commands WHERE session_id = 1 AND ok = 1 ORDER BY seq' | md5sum)\" = \"\$(head -n \$n '$tmp/k.cmds' | md5sum)\" ]"
fi

if [ $failures -gt 0 ]; then
	exit 1
fi
exit 0
