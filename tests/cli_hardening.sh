#!/bin/sh
# End-to-end checks of the files attnscope writes (export --out, train
# --out), of write errors on standard output, and of the bound on the length
# of a script line.  Prints "ok NAME" or "FAIL NAME" per check; exit status
# 1 when any check failed.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_hardening.sh
#
# Runs in a temporary directory holding models/shakespeare.safetensors, a
# seeded random model made by tool_mkmodel.  Device-node checks need root
# (mknod) and are skipped otherwise; /dev/full checks are skipped when it
# is missing.
. "$(dirname "$0")/lib-cli.sh"

make_tmp cli-hardening
mkdir "$tmp/models" "$tmp/home"
mkmodel "$tmp/models/shakespeare.safetensors"
HOME=$tmp/home
XDG_DATA_HOME=$tmp/home/data
export HOME XDG_DATA_HOME
cd "$tmp" || exit 1
umask 022

# run, ok, fail, check, has_out, has_err, status: tests/lib-cli.sh
skip() { echo "ok $1 # skipped: $2"; }
lines_err() { [ "$(wc -l <"$tmp/err")" -eq "$1" ]; }
mode() { stat -c %a "$1"; }
# export_to FILE: exports the grid of "hi" to FILE (--no-db, batch)
export_to() { run --no-db -c "text hi; export grid --out $1" </dev/null; }
# no_temp_in DIR: no file left behind but the ones named after DIR
no_temp_in() { [ -z "$(find "$1" -maxdepth 1 -name '*.tmp*')" ]; }
# full ARGS...: runs the binary with standard output on /dev/full
full() {
	$TIMEOUT "$A" "$@" >/dev/full 2>"$tmp/err"
	rc=$?
	printf '' >"$tmp/out"
	return $rc
}
enospc='error writing standard output: No space left on device$'

run --no-db -c 'text hi; export grid' </dev/null
grep -v '^2 tokens' "$tmp/out" >"$tmp/grid.ref"
check setup-reference-grid test -s "$tmp/grid.ref"

# --------------------------------------------- export --out: refused kinds
mkfifo "$tmp/fifo"
export_to "$tmp/fifo"
check out-fifo-refused sh -c "[ $rc -eq 1 ] && grep -q '^-c:2: export: $tmp/fifo: is a FIFO' '$tmp/err'"
check out-fifo-kept test -p "$tmp/fifo"

mkdir "$tmp/dir"
export_to "$tmp/dir"
check out-directory-refused sh -c "[ $rc -eq 1 ] && grep -q '$tmp/dir: is a directory' '$tmp/err' && [ -d '$tmp/dir' ]"
check out-directory-no-temp no_temp_in "$tmp"

if [ "$(id -u)" = 0 ]; then
	mknod "$tmp/null" c 1 3
	export_to "$tmp/null"
	check out-chardev-refused sh -c "[ $rc -eq 1 ] && grep -q '$tmp/null: is a character device' '$tmp/err'"
	check out-chardev-kept test -c "$tmp/null"
else
	# /dev/null itself is safe to name when not root (it cannot be replaced)
	export_to /dev/null
	check out-chardev-refused sh -c "[ $rc -eq 1 ] && grep -q '/dev/null: is a character device' '$tmp/err'"
	skip out-chardev-kept "mknod needs root"
fi

if command -v python3 >/dev/null 2>&1 &&
	python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$tmp/sock')" 2>/dev/null; then
	export_to "$tmp/sock"
	check out-socket-refused sh -c "[ $rc -eq 1 ] && grep -q '$tmp/sock: is a socket' '$tmp/err' && [ -S '$tmp/sock' ]"
else
	skip out-socket-refused "no python3 to make a socket"
fi

printf 'old\n' >"$tmp/ro.txt"
chmod 0444 "$tmp/ro.txt"
export_to "$tmp/ro.txt"
check out-read-only-refused sh -c "[ $rc -eq 1 ] && grep -q '$tmp/ro.txt: the file is read-only' '$tmp/err'"
check out-read-only-kept sh -c "[ \"\$(cat '$tmp/ro.txt')\" = old ] && [ \$(stat -c %a '$tmp/ro.txt') = 444 ]"

# ---------------------------------------------- export --out: regular files
printf 'old\n' >"$tmp/mine.txt"
chmod 0600 "$tmp/mine.txt"
export_to "$tmp/mine.txt"
check out-regular-replaced sh -c "[ $rc -eq 0 ] && cmp -s '$tmp/grid.ref' '$tmp/mine.txt'"
check out-regular-mode-kept [ "$(mode "$tmp/mine.txt")" = 600 ]
check out-regular-no-temp no_temp_in "$tmp"

export_to "$tmp/new.txt"
check out-new-file sh -c "[ $rc -eq 0 ] && cmp -s '$tmp/grid.ref' '$tmp/new.txt' && [ \$(stat -c %a '$tmp/new.txt') = 644 ]"

# a symlink is written through: the link stays, its target is replaced
# (atomically, in the target's directory) and keeps its mode
mkdir "$tmp/sub"
printf 'old\n' >"$tmp/sub/target.txt"
chmod 0640 "$tmp/sub/target.txt"
ln -s sub/target.txt "$tmp/link.txt"
export_to "$tmp/link.txt"
check out-symlink-kept sh -c "[ $rc -eq 0 ] && [ -L '$tmp/link.txt' ] && [ \"\$(readlink '$tmp/link.txt')\" = sub/target.txt ]"
check out-symlink-target-written cmp -s "$tmp/grid.ref" "$tmp/sub/target.txt"
check out-symlink-target-mode [ "$(mode "$tmp/sub/target.txt")" = 640 ]
check out-symlink-no-temp sh -c "[ \"\$(ls -A '$tmp/sub')\" = target.txt ] && [ -z \"\$(find '$tmp' -maxdepth 1 -name '*.tmp*')\" ]"

# a chain of links, the last one dangling: the file it names is created
ln -s link2.txt "$tmp/link1.txt"
ln -s sub/created.txt "$tmp/link2.txt"
export_to "$tmp/link1.txt"
check out-symlink-dangling sh -c "[ $rc -eq 0 ] && [ -L '$tmp/link1.txt' ] && [ -L '$tmp/link2.txt' ] && cmp -s '$tmp/grid.ref' '$tmp/sub/created.txt'"

ln -s fifo "$tmp/to-fifo"
export_to "$tmp/to-fifo"
check out-symlink-to-fifo-refused sh -c "[ $rc -eq 1 ] && grep -q '$tmp/to-fifo: is a FIFO' '$tmp/err' && [ -L '$tmp/to-fifo' ]"

chmod 0444 "$tmp/sub/target.txt"
export_to "$tmp/link.txt"
check out-symlink-read-only-refused sh -c "[ $rc -eq 1 ] && grep -q 'the file is read-only' '$tmp/err'"
chmod 0640 "$tmp/sub/target.txt"

# ----------------------------------------- export --out: backslashes
# outside quotes a backslash before a letter stays (a\nb names those four
# characters, not "anb"); before a blank it escapes it
run --no-db -c 'text hi; export grid --out a\nb.txt' </dev/null
check out-backslash-kept sh -c "[ $rc -eq 0 ] && [ -s 'a\\nb.txt' ] && [ ! -e anb.txt ]"
run --no-db -c 'text hi; export grid --out a\ b.txt' </dev/null
check out-backslash-blank sh -c "[ $rc -eq 0 ] && [ -s 'a b.txt' ]"

# ---------------------------------------------- export --out - : stdout
for target in - /dev/stdout; do
	run --no-db -c "text hi; export grid --out $target" </dev/null
	grep -v '^2 tokens\|^wrote ' "$tmp/out" >"$tmp/got"
	check "out-stdout-$target" sh -c "[ $rc -eq 0 ] && cmp -s '$tmp/grid.ref' '$tmp/got' && [ ! -e '$tmp/-' ]"
done
# through a pipe, too (/dev/stdout is then a FIFO)
$TIMEOUT "$A" --no-db -c 'text hi; export stats --format csv --out /dev/stdout' </dev/null 2>"$tmp/err" | cat >"$tmp/piped"
check out-stdout-pipe sh -c "grep -q '^model,options' '$tmp/piped' && [ ! -s '$tmp/err' ]"

# ------------------------------------------------------- train --out
printf 'the quick brown fox jumps over the lazy dog. %.0s' $(seq 40) >"$tmp/text.txt"
train() {
	$TIMEOUT "$A" train --data "$tmp/text.txt" --steps 2 --layers 1 --heads 2 --d-model 16 \
		--context 16 --batch 2 --threads 1 --quiet "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
train --out "$tmp/fifo"
check train-fifo-refused sh -c "[ $rc -ne 0 ] && grep -q '$tmp/fifo: is a FIFO' '$tmp/err' && [ -p '$tmp/fifo' ]"
train --out "$tmp/dir"
check train-directory-refused sh -c "[ $rc -ne 0 ] && grep -q '$tmp/dir: is a directory' '$tmp/err'"
train --out "$tmp/ro.txt"
check train-read-only-refused sh -c "[ $rc -ne 0 ] && grep -q '$tmp/ro.txt: the file is read-only' '$tmp/err'"
train --out -
check train-stdout-refused sh -c "[ $rc -ne 0 ] && grep -q 'standard output' '$tmp/err' && [ ! -e '$tmp/-' ]"
printf 'old\n' >"$tmp/m.safetensors"
chmod 0600 "$tmp/m.safetensors"
ln -s m.safetensors "$tmp/m-link.safetensors"
train --out "$tmp/m-link.safetensors"
check train-symlink-mode-kept sh -c "[ $rc -eq 0 ] && [ -L '$tmp/m-link.safetensors' ] && [ \$(stat -c %a '$tmp/m.safetensors') = 600 ] && [ \$(stat -c %s '$tmp/m.safetensors') -gt 100 ]"
check train-no-temp no_temp_in "$tmp"

# ------------------------------------------- write errors on standard output
if [ -w /dev/full ]; then
	full --no-db -t hi --dump
	check full-dump sh -c "[ $rc -eq 1 ] && grep -q '^attnscope: $enospc' '$tmp/err'"
	check full-dump-one-line lines_err 1
	full --help
	check full-help sh -c "[ $rc -eq 1 ] && grep -q '^attnscope: $enospc' '$tmp/err'"
	full --version
	check full-version sh -c "[ $rc -eq 1 ] && grep -q '^attnscope: $enospc' '$tmp/err'"
	full train --help
	check full-train-help sh -c "[ $rc -ne 0 ] && grep -q '$enospc' '$tmp/err'"
	full --no-db -t hi -c 'show grid' </dev/null
	check full-show-grid sh -c "[ $rc -eq 1 ] && grep -q '$enospc' '$tmp/err'"
	check full-show-grid-one-line lines_err 1
	full --no-db -c 'text hi; export stats' </dev/null
	check full-export-stats sh -c "[ $rc -eq 1 ] && grep -q '^-c:[12]: $enospc' '$tmp/err'"
	check full-export-stats-one-line lines_err 1
	run --db "$tmp/m.db" -c 'text hi' </dev/null
	full --db "$tmp/m.db" -c 'measurements --csv' </dev/null
	check full-measurements-csv sh -c "[ $rc -eq 1 ] && grep -q '^-c:1: $enospc' '$tmp/err'"
	# a command file stops at the first command whose output was lost
	printf 'echo one\nexport grid --out %s/after.txt\n' "$tmp" >"$tmp/stop.cmds"
	full --no-db -t hi -f "$tmp/stop.cmds" </dev/null
	check full-script-stops sh -c "[ $rc -eq 1 ] && grep -q '^$tmp/stop.cmds:1: $enospc' '$tmp/err' && [ ! -e '$tmp/after.txt' ]"
	printf 'text hi\nshow grid\n' | full --no-db
	check full-stdin sh -c "[ $rc -eq 1 ] && grep -q '^<stdin>:1: $enospc' '$tmp/err'"
	full --no-db -c 'text hi; export grid --out -' </dev/null
	check full-export-dash sh -c "[ $rc -eq 1 ] && grep -q '$enospc' '$tmp/err'"
	check full-export-dash-one-line lines_err 1
	# the prompt (standard input a terminal, in tmux) ends at its banner
	if command -v tmux >/dev/null 2>&1; then
		sock=attnscope-hardening-$$
		TERM=${TERM:-xterm}
		[ "$TERM" = dumb ] && TERM=xterm
		export TERM
		trap 'tmux -L "$sock" kill-server >/dev/null 2>&1; rm -rf "$tmp"' EXIT
		tmux -L "$sock" -f /dev/null new-session -d -x 100 -y 30 \
			"cd '$tmp' && '$A' --no-db >/dev/full 2>'$tmp/repl.err'; echo \$? >'$tmp/repl.rc'; sleep 30"
		i=0
		while [ ! -s "$tmp/repl.rc" ] && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		tmux -L "$sock" kill-server >/dev/null 2>&1
		check full-repl sh -c "[ \"\$(cat '$tmp/repl.rc' 2>/dev/null)\" = 1 ] && grep -q '^attnscope: $enospc' '$tmp/repl.err' && [ \$(wc -l <'$tmp/repl.err') -eq 1 ]"
	else
		skip full-repl "no tmux"
	fi
else
	skip full "no writable /dev/full"
fi

# ------------------------------------------------- script line length
limit=1048576
# a line of exactly the limit is read (a comment), one byte more is refused
{ printf '#'; head -c $((limit - 1)) /dev/zero | tr '\0' x; printf '\necho after\n'; } >"$tmp/max.cmds"
run --no-db -f "$tmp/max.cmds" </dev/null
check line-at-limit sh -c "[ $rc -eq 0 ] && grep -q '^after$' '$tmp/out'"
{ printf 'echo before\n\n#'; head -c $limit /dev/zero | tr '\0' x; printf '\necho after\n'; } >"$tmp/long.cmds"
run --no-db -f "$tmp/long.cmds" </dev/null
check line-too-long sh -c "[ $rc -eq 1 ] && grep -q '^$tmp/long.cmds:3: line longer than $limit bytes$' '$tmp/err'"
check line-too-long-stops sh -c "grep -q '^before$' '$tmp/out' && ! grep -q after '$tmp/out'"
check line-too-long-one-line lines_err 1

# standard input: 256 MiB of NUL bytes with no newline; refused at the bound
# without reading the rest (the pipe writer is killed by SIGPIPE)
head -c 268435456 /dev/zero | run --no-db; rc=$?
check line-too-long-stdin sh -c "[ $rc -eq 1 ] && grep -q '^<stdin>:1: line longer than $limit bytes$' '$tmp/err'"

# NUL bytes do not count as line ends: the bound is met before the NUL check
head -c 3000000 /dev/zero >"$tmp/zero.cmds"
run --no-db -f "$tmp/zero.cmds" </dev/null
check line-too-long-nul sh -c "[ $rc -eq 1 ] && grep -q '^$tmp/zero.cmds:1: line longer than $limit bytes$' '$tmp/err'"

# ------------------------------------ messages quote what the user gave
run --no-db -c 'text hi; ablate 99999999999999999999.1' </dev/null
check head-overflow-quoted sh -c "[ $rc -eq 1 ] && grep -q '99999999999999999999.1: not a head id' '$tmp/err'"
run --no-db -c 'text hi; ablate 7.0' </dev/null
check head-missing-quoted sh -c "[ $rc -eq 1 ] && grep -q 'head 7.0 does not exist' '$tmp/err'"
run --no-db -c 'text hi; show token 99999999999999999999' </dev/null
check token-overflow-quoted sh -c "[ $rc -eq 1 ] && grep -q 'token 99999999999999999999 does not exist' '$tmp/err'"

# ------------------------------------------------ what reaches the terminal
# a model name with control characters in its metadata, an unknown command
# of invalid UTF-8, a session name of invalid UTF-8: shown escaped (\xNN),
# never raw; the session name is stored as it was given
python3 - "$tmp/models/shakespeare.safetensors" "$tmp/models/evil.safetensors" <<'PY' || skip evil-name "no python3"
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
h['__metadata__']['name'] = '%n%s\x1b[2J\n\r'
hs = json.dumps(h).encode()
hs += b' ' * ((8 - len(hs) % 8) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(hs)) + hs + b[8 + n:])
PY
esc=$(printf '\033')
if [ -f "$tmp/models/evil.safetensors" ]; then
	run --no-db evil --dump </dev/null
	check evil-name-dump sh -c "[ $rc -eq 0 ] && grep -q '^model %n%s\\\\x1b\[2J\\\\x0a\\\\x0d$' '$tmp/out' && ! grep -q '$esc' '$tmp/out'"
	run --no-db evil -c 'text hi; stats' </dev/null
	check evil-name-stats sh -c "[ $rc -eq 0 ] && ! grep -q '$esc' '$tmp/out' && ! grep -q '$esc' '$tmp/err'"
fi
run --no-db -c "$(printf '\377\376')" </dev/null
check unknown-command-escaped sh -c "[ $rc -eq 1 ] && grep -q 'unknown command: \\\\xff\\\\xfe' '$tmp/err'"
run --db "$tmp/names.db" -c "$(printf 'save \377\376')" </dev/null
check save-name-escaped sh -c "[ $rc -eq 0 ] && grep -q 'saved session 1 \"\\\\xff\\\\xfe\"' '$tmp/out'"
check save-name-stored sh -c "[ \"\$(sqlite3 '$tmp/names.db' 'SELECT hex(name) FROM sessions')\" = FFFE ]"

# text --file and sweep --corpus on a FIFO: refused at once, not blocked in open
[ -p "$tmp/fifo" ] || mkfifo "$tmp/fifo"
run --no-db shakespeare -c "text --file $tmp/fifo" </dev/null
check text-file-fifo-refused sh -c "[ $rc -eq 1 ] && grep -q 'fifo: is a FIFO, not a regular file' '$tmp/err'"
run --no-db shakespeare -c "text hi; sweep --corpus $tmp/fifo --tokens 8" </dev/null
check sweep-corpus-fifo-refused sh -c "[ $rc -eq 1 ] && grep -q 'fifo: is a FIFO, not a regular file' '$tmp/err'"

# text --file reads only the passage, --corpus and train --data refuse a
# file too large by its size: a 2 GiB sparse file under a 1 GiB address
# space limit (the old code read it whole: an out-of-memory abort)
# (AddressSanitizer reserves terabytes of shadow memory and cannot start
# under such a limit: a sanitized binary runs these without it, and the
# outputs still say the files were not read whole)
limit_v() { ulimit -v 1048576; }
(limit_v && "$A" --version) >/dev/null 2>&1 || limit_v() { :; }
printf 'abc' >"$tmp/big.txt" && truncate -s 2G "$tmp/big.txt"
truncate -s 2G "$tmp/holes.txt"
(limit_v && run --no-db shakespeare -c "text --file $tmp/big.txt --tokens 3" </dev/null); rc=$?
check text-file-huge-passage sh -c "[ $rc -eq 0 ] &&
	grep -q 'characters 0..2 of a 2147483648-byte file, 3 tokens' '$tmp/out'"
(limit_v && run --no-db shakespeare -c "text --file $tmp/holes.txt --tokens 8" </dev/null); rc=$?
check text-file-huge-nul sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
	grep -q 'holes.txt: NUL byte at offset 0; not a text file' '$tmp/err'"
(limit_v && run --no-db shakespeare -c "text hi; sweep --corpus $tmp/big.txt --tokens 8" </dev/null); rc=$?
check sweep-corpus-huge-refused sh -c "[ $rc -eq 1 ] &&
	grep -q 'big.txt: 2 GiB is more than the 256 MiB a --corpus file may have' '$tmp/err'"
truncate -s 3G "$tmp/big.txt"
(limit_v && run train --data "$tmp/big.txt" --steps 1 --out "$tmp/t.safetensors" </dev/null); rc=$?
check train-data-huge-refused sh -c "[ $rc -ne 0 ] &&
	grep -q 'big.txt: 3 GiB is more than the 2 GiB a training text may have' '$tmp/err'"
rm -f "$tmp/big.txt" "$tmp/holes.txt"

# an empty -t is a usage error that says so, not a silent success
run --no-db shakespeare -t '' </dev/null
check empty-text-refused sh -c "[ $rc -eq 2 ] && grep -q \"^attnscope: -t '': the text is empty\" '$tmp/err'"

[ "$failures" -eq 0 ]
