#!/bin/sh
# End-to-end tests of what `text` accepts and how tokens are shown:
#  - escapes: \n is a newline (shown as ⏎), \t a tab, \\ one backslash, any
#    other backslash stays; the same from -c, a command file and a real
#    newline inside -c;
#  - text --file FILE [--offset N] [--tokens N]: the exact passage, its
#    character range, errors naming the file (past the end, NUL byte,
#    missing file, bad flags);
#  - characters outside the vocabulary: a warning names them and counts the
#    <unk> tokens, labels show the character as <c>, and loading a model
#    that knows fewer of the text's characters says "most of the text".
# Models: seeded random ones from tool_mkmodel with chosen vocabularies.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_text.sh
. "$(dirname "$0")/lib-cli.sh"

make_tmp text
mkdir "$tmp/models"
nl=$(printf '\nx')
nl=${nl%x}
tab=$(printf '\tx')
tab=${tab%x}
mkmodel "$tmp/models/abc.safetensors" --chars "abcdef \\n$nl$tab"
mkmodel "$tmp/models/ab.safetensors" --chars "ab"
cd "$tmp" || exit 1
RUN_ARGS="--no-db --batch"

# labels_are EXPECTED: the label column of `show tokens`, joined by '|',
# is EXPECTED
labels_are() {
	got=$(sed -n '/^index /,$p' "$tmp/out" | sed '1d' | awk '{print $3}' | tr '\n' '|')
	[ "$got" = "$1" ] || { echo "  labels: $got"; return 1; }
}

# ------------------------------------------------------------ escapes
run abc -c 'text ab\ncd; show tokens' </dev/null
check escape-newline-status status 0
check escape-newline labels_are 'a|b|⏎|c|d|'

run abc -c 'text a\tb\\nc\qd; show tokens' </dev/null
check escape-tab-backslash labels_are 'a|⇥|b|\|n|c|\|<q>|d|'

printf 'text ab\\ncd\nshow tokens\n' >esc.cmds
run abc -f esc.cmds </dev/null
check escape-in-file sh -c "[ $rc -eq 0 ] && grep -q '^ *2 .*⏎' '$tmp/out' && grep -q '^5 tokens' '$tmp/out'"

run abc -c "text ab${nl}cd; show tokens" </dev/null
check real-newline-in-c sh -c "[ $rc -eq 0 ] && grep -q '^ *2 .*⏎' '$tmp/out' && grep -q '^5 tokens' '$tmp/out'"

# ---------------------------------------------------------- --file
printf 'abc\ndef\nabcdef' >passage.txt
run abc -c 'text --file passage.txt --offset 2 --tokens 5; show tokens' </dev/null
check file-passage sh -c "[ $rc -eq 0 ] && grep -q 'text from passage.txt: characters 2..6 of a 14-byte file, 5 tokens' '$tmp/out' && grep -q '^5 tokens' '$tmp/out'"
check file-passage-exact labels_are 'c|⏎|d|e|f|'

run abc -c 'text --file passage.txt' </dev/null
check file-whole sh -c "[ $rc -eq 0 ] && grep -q 'characters 0..13 of a 14-byte file, 14 tokens' '$tmp/out'"

run abc -c 'text --file passage.txt --offset 14' </dev/null
check file-past-end sh -c "[ $rc -eq 1 ] && grep -q 'passage.txt: offset 14 is past the end of its 14 characters' '$tmp/err'"

printf 'ab\000cd' >nul.txt
run abc -c 'text --file nul.txt' </dev/null
check file-nul sh -c "[ $rc -eq 1 ] && grep -q 'nul.txt: NUL byte at offset 2' '$tmp/err'"

run abc -c 'text --file nosuch.txt' </dev/null
check file-missing sh -c "[ $rc -eq 1 ] && grep -q 'nosuch.txt' '$tmp/err'"

run abc -c 'text --file passage.txt --tokens 0' </dev/null
check file-bad-tokens sh -c "[ $rc -eq 1 ] && grep -q -- '--tokens' '$tmp/err'"

run abc -c 'text --file passage.txt --bogus' </dev/null
check file-bad-flag sh -c "[ $rc -eq 1 ] && grep -q 'usage: text --file FILE' '$tmp/err'"

# ------------------------------------------------- unknown characters
run abc -c 'text abxyx; show tokens' </dev/null
check unk-warning sh -c "[ $rc -eq 0 ] && grep -q 'warning: 3 of 5 tokens are <unk> (most of the text): abc does not know x y' '$tmp/err'"
check unk-labels labels_are 'a|b|<x>|<y>|<x>|'

run abc -c 'text abc; load ab' </dev/null
check unk-on-load sh -c "[ $rc -eq 0 ] && grep -q 'warning: 1 of 3 tokens are <unk>: ab does not know c' '$tmp/err'"
run ab -c 'text bccc' </dev/null
check unk-most-of-text sh -c "[ $rc -eq 0 ] && grep -q 'warning: 3 of 4 tokens are <unk> (most of the text): ab does not know c' '$tmp/err'"

run abc -c 'text abc' </dev/null
check no-unk-no-warning sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/err' ]"

[ "$failures" -eq 0 ]
