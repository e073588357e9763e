#!/bin/sh
# End-to-end tests of the command line, command files, -c and standard
# input.  Prints "ok NAME" or "FAIL NAME" per check; exit status 1 when any
# check failed.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_script.sh
#
# Runs in a temporary directory holding models/shakespeare.safetensors, a
# seeded random model made by tool_mkmodel (2 layers x 4 heads, context 64,
# one token per character, no BOS).  The demos run on the shipped models in
# tests/cli_claims.sh.
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib-cli.sh"

make_tmp cli
mkdir "$tmp/models" "$tmp/home" "$tmp/empty"
mkmodel "$tmp/models/shakespeare.safetensors"
cp "$tmp/models/shakespeare.safetensors" "$tmp/other.safetensors"
HOME=$tmp/home
XDG_DATA_HOME=$tmp/home/data
export HOME XDG_DATA_HOME
cd "$tmp" || exit 1

# run, ok, fail, check, has_out, has_err, status: tests/lib-cli.sh
lines_err() { [ "$(wc -l <"$tmp/err")" -eq "$1" ]; }

# ------------------------------------------------------------ options
run --help </dev/null
check help status 0
check help-usage has_out '^usage: attnscope'
run --version </dev/null
check version status 0
check version-text has_out '^attnscope [0-9]'
run --bogus </dev/null
check unknown-option status 2
run --tui </dev/null
check tui-needs-terminal sh -c "[ $rc -eq 1 ] && grep -q 'needs a terminal' '$tmp/err'"
run -m nosuchmodel -c 'echo hi' </dev/null
check explicit-model-missing sh -c "[ $rc -eq 1 ] && grep -q nosuchmodel '$tmp/err'"
run --db "$tmp/x.db" --no-db --threads 1 -c 'echo db' </dev/null
check db-options-accepted sh -c "[ $rc -eq 0 ] && grep -q '^db$' '$tmp/out'"
run -t 'hello' -c 'attn mqa' </dev/null
check text-option sh -c "[ $rc -eq 0 ] && grep -q '^5 tokens' '$tmp/out'"
run --dump </dev/null
check dump-config sh -c "[ $rc -eq 0 ] && grep -q '^config' '$tmp/out'"

# ----------------------------------------------------------- -f files
printf '# a comment\n\ntext hello\n  # indented comment\nbogus\necho after\n' >"$tmp/err5.cmds"
run -f "$tmp/err5.cmds" </dev/null
check error-line-status status 1
check error-line-location has_err "^$tmp/err5.cmds:5: unknown command: bogus"
check error-stops-batch sh -c "! grep -q after '$tmp/out'"

printf '# only comments\n\n   \n\t\n  # indented\necho done\n' >"$tmp/comments.cmds"
run -f "$tmp/comments.cmds" </dev/null
check comments-blank-lines sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out')\" = done ] && [ ! -s '$tmp/err' ]"

printf 'echo a\npause\necho b\n' >"$tmp/pause.cmds"
run -f "$tmp/pause.cmds" </dev/null
check pause-no-terminal sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out' | tr '\n' ' ')\" = 'a b ' ]"

# text keeps apostrophes, quotes and ';' literally (16 characters = 16 tokens)
printf '%s\n' "text don't \"stop\"; go" >"$tmp/literal.cmds"
run -f "$tmp/literal.cmds" </dev/null
check text-literal sh -c "[ $rc -eq 0 ] && grep -q '^16 tokens' '$tmp/out'"

printf 'echo a\r\ntext ab\r\n' >"$tmp/crlf.cmds"
run -f "$tmp/crlf.cmds" </dev/null
check crlf-lines sh -c "[ $rc -eq 0 ] && grep -q '^2 tokens' '$tmp/out' && ! grep -q \"\$(printf '\r')\" '$tmp/out'"

run -f "$tmp/nosuchfile.cmds" </dev/null
check missing-file sh -c "[ $rc -eq 1 ] && grep -q nosuchfile '$tmp/err'"

printf 'echo one\nquit\nbogus\n' >"$tmp/quit.cmds"
run -f "$tmp/quit.cmds" </dev/null
check quit-status-0 sh -c "[ $rc -eq 0 ] && grep -q '^one$' '$tmp/out' && [ ! -s '$tmp/err' ]"

# ------------------------------------------------------------------ -c
run -c 'echo one; echo two\; three;echo four' </dev/null
check c-split sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out' | tr '\n' '|')\" = 'one|two; three|four|' ]"
run -c 'text a\; b' </dev/null
check c-escaped-semicolon-text sh -c "[ $rc -eq 0 ] && grep -q '^4 tokens' '$tmp/out'"
run -c 'echo ok; halp; echo never' </dev/null
check unknown-did-you-mean sh -c "[ $rc -eq 1 ] && grep -q '^-c:2: unknown command: halp (did you mean: help' '$tmp/err' && ! grep -q never '$tmp/out'"
run -c 'attn' </dev/null
check wrong-args-usage sh -c "[ $rc -eq 1 ] && grep -q '^-c:1: usage: attn ' '$tmp/err'"
run -c 'mask window x' </dev/null
check bad-number-message sh -c "[ $rc -eq 1 ] && grep -q '^-c:1: .*window' '$tmp/err'"
run -c 'echo a' -c 'echo b' </dev/null
check c-repeated sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out' | tr '\n' ' ')\" = 'a b ' ]"

# ------------------------------------------------------------- stdin
printf 'text a; b\necho fine\n' | run; rc=$?
check stdin-script sh -c "[ $rc -eq 0 ] && grep -q '^4 tokens' '$tmp/out' && grep -q '^fine$' '$tmp/out'"
printf 'echo a\n\nnorm sideways\necho b\n' | run; rc=$?
check stdin-error-location sh -c "[ $rc -eq 1 ] && grep -q '^<stdin>:3: ' '$tmp/err' && ! grep -q '^b$' '$tmp/out'"
printf 'echo a\n' | run --batch -f "$tmp/comments.cmds"; rc=$?
check stdin-not-read-with-f sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out')\" = done ]"
printf 'echo from-stdin\n' | run -f -; rc=$?
check f-dash-reads-stdin sh -c "[ $rc -eq 0 ] && grep -q '^from-stdin$' '$tmp/out'"

# a NUL byte: the line is refused with a message, nothing crashes
printf 'echo a\necho b\000c\necho d\n' | run; rc=$?
check nul-byte-refused sh -c "[ $rc -eq 1 ] && grep -q '^<stdin>:2: .*NUL' '$tmp/err' && ! grep -q '^d$' '$tmp/out'"

# invalid UTF-8 reaches the command: text warns and goes on
printf 'text ab\377cd\necho alive\n' | run; rc=$?
check invalid-utf8-warns sh -c "[ $rc -eq 0 ] && grep -qi 'warning' '$tmp/err' && grep -q '^alive$' '$tmp/out'"

# a very long line (getline): 100000 characters echoed back
long=$(head -c 100000 /dev/zero | tr '\0' x)
printf 'echo %s\n' "$long" | run; rc=$?
check long-line sh -c "[ $rc -eq 0 ] && [ \$(wc -c <'$tmp/out') -eq 100001 ]"

# text longer than the context (64): one line naming the limit, status 1
printf 'text %s\necho never\n' "$(head -c 100 /dev/zero | tr '\0' y)" | run; rc=$?
check text-too-long sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^<stdin>:1: .*64' '$tmp/err' && ! grep -q never '$tmp/out'"

# ------------------------------------------- without the default model
cd "$tmp/empty" || exit 1
# no ./models here, and none beside the binary either (a checkout has some)
ATTNSCOPE_MODELS=$tmp/empty
export ATTNSCOPE_MODELS
run -c "load $tmp/other.safetensors; text hi" </dev/null
check default-missing-script-loads sh -c "[ $rc -eq 0 ] && grep -q '^2 tokens' '$tmp/out' && [ ! -s '$tmp/err' ]"
run -c 'text hi' </dev/null
check default-missing-note sh -c "[ $rc -eq 1 ] && grep -q 'no model loaded' '$tmp/err' && grep -q 'note: the default model was not loaded' '$tmp/err'"
run -c 'echo plain' </dev/null
check default-missing-quiet sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ]"
unset ATTNSCOPE_MODELS
cd "$tmp" || exit 1

[ "$failures" -eq 0 ]
