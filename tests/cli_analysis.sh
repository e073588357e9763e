#!/bin/sh
# End-to-end tests of heads, sweep and compare in batch mode (-c and -f),
# and the norm demo with a natively trained post-norm model beside the
# default one.  They run from a temporary directory whose models/ holds
# seeded random models made by tool_mkmodel: shakespeare (2x4), tang (4x4,
# the characters of 静夜思), and later shakespeare-postnorm to check that
# compare picks it up.  (Every demo runs on the shipped models in
# tests/cli_claims.sh.)
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_analysis.sh
. "$(dirname "$0")/lib-cli.sh"
DEMOS=$(pwd)/sessions/demos

make_tmp analysis
POEM='床前明月光，疑是地上霜。举头望明月，低头思故乡。'
mkdir "$tmp/models"
mkmodel "$tmp/models/shakespeare.safetensors"
mkmodel "$tmp/models/tang.safetensors" --layers 4 --heads 4 --chars "$POEM"
cd "$tmp" || exit 1
# ok: tests/lib-cli.sh; fail and run are this script's own
fail() {
	echo "FAIL $1"
	[ -f out ] && sed 's/^/  out: /' out | tail -n 15
	[ -f err ] && sed 's/^/  err: /' err | tail -n 5
	failures=$((failures + 1))
}
# run NAME ARGS...: runs attnscope --no-db ARGS, output in out/err; status in rc
run() {
	name=$1
	shift
	"$A" --no-db "$@" >out 2>err
	rc=$?
}
has() { grep -q -- "$1" out; }

TEXT='To be, or not to be, that is the question:'

run heads shakespeare -c "text $TEXT; heads"
if [ $rc = 0 ] && has '^head   role' && [ "$(grep -c '^[01]\.[0-3] ' out)" = 8 ] && has '^roles:'; then
	ok heads
else
	fail heads
fi

run heads-layer shakespeare -c "text $TEXT; heads --layer 1"
if [ $rc = 0 ] && [ "$(grep -c '^1\.[0-3] ' out)" = 4 ] && [ "$(grep -c '^0\.' out)" = 0 ]; then
	ok heads-layer
else
	fail heads-layer
fi

run sweep shakespeare -c "text $TEXT; sweep"
if [ $rc = 0 ] && has '^layer ' && has '^    0 ' && has '^    1 ' && has 'all$' &&
   has 'can each be removed alone for under 1% loss increase' && has '^ranking'; then
	ok sweep
else
	fail sweep
fi

run sweep-kl shakespeare -c "text $TEXT; sweep --metric kl"
if [ $rc = 0 ] && has 'KL(unablated || ablated)'; then ok sweep-kl; else fail sweep-kl; fi

i=0
while [ $i -lt 30 ]; do
	echo "Now is the winter of our discontent made glorious summer by this sun of York;"
	i=$((i + 1))
done >corpus.txt
run sweep-corpus shakespeare -c "sweep --corpus corpus.txt --tokens 40"
if [ $rc = 0 ] && has 'the last 40 tokens of corpus.txt'; then ok sweep-corpus; else fail sweep-corpus; fi
# more tokens than the context: whole windows of the context, averaged
run sweep-windows shakespeare -c "sweep --corpus corpus.txt --tokens 600"
if [ $rc = 0 ] && has 'the last [0-9]* tokens of corpus.txt, as [0-9]* windows of [0-9]* (the context)'; then
	ok sweep-windows
else
	fail sweep-windows
fi

run compare shakespeare -c "text $TEXT; compare variants"
if [ $rc = 0 ] && has '^native (mha)' && has '^gqa 2 ' && has '^mqa ' && has '^post-norm ' &&
   has '^mask none ' && has 'shakespeare-postnorm: not found'; then
	ok compare
else
	fail compare
fi

run compare-corpus shakespeare -c "compare variants --corpus corpus.txt"
if [ $rc = 0 ] && has 'the last 64 tokens of corpus.txt'; then ok compare-corpus; else fail compare-corpus; fi

# two stored measurements side by side: long texts are cut with a blank
# left between the columns
"$A" shakespeare --db cmp.db -c "text To be or not to be that is the question; text O Romeo Romeo wherefore art thou Romeo; compare 1 2" >out 2>err
if grep -q '^text  *To be or not to be [a-z]*\.\.\. \+O Romeo' out; then
	ok compare-id-columns
else
	fail compare-id-columns
fi

run compare-id shakespeare -c "text $TEXT; compare 1 2"
if [ $rc = 1 ] && grep -q 'no session database' err; then
	ok compare-id
else
	fail compare-id
fi

# lens: a row per depth (embeddings, after 0, after 1: 2 layers) at the
# chosen position, then the depth x position table
run lens shakespeare -c "text $TEXT; lens at 3 --top 2"
if [ $rc = 0 ] && has "^logit lens at position 3 'b'" && [ "$(grep -c '^embeddings \|^after [01] ' out)" = 6 ] &&
   has '(the model.s output)$' && has '(probability)$'; then
	ok lens
else
	fail lens
fi
# under options the native run's lens is beside: its prediction and its p
# at every depth are what lens says of the native run itself
run lens shakespeare -c "text $TEXT; lens at 3"
nat_pred=$(sed -n "s/^the model's prediction: \(.*\)$/\1/p" out)
nat_p=$(awk '/^embeddings |^after [01] / && n++ < 3 { printf "%.3f\n", substr($0, 13, 7) }' out | tr '\n' ' ')
run lens-beside shakespeare -c "text $TEXT; attn mqa; lens at 3"
beside_pred=$(sed -n "s/^the native run's prediction: \(.*\), its lens beside$/\1/p" out)
beside_p=$(awk '/^embeddings |^after [01] / && n++ < 3 { printf "%.3f\n", substr($0, 21, 8) }' out | tr '\n' ' ')
if [ $rc = 0 ] && [ -n "$nat_pred" ] && [ "$beside_pred" = "$nat_pred" ] && [ -n "$nat_p" ] &&
	[ "$beside_p" = "$nat_p" ]; then
	ok lens-native-beside
else
	echo "  native: $nat_pred / $nat_p; beside: $beside_pred / $beside_p"
	fail lens-native-beside
fi
run lens-bad-position shakespeare -c "text $TEXT; lens at 999"
if [ $rc = 1 ] && grep -q 'the position must be a whole number from 0 to' err; then ok lens-bad-position; else fail lens-bad-position; fi
run lens-bad-top shakespeare -c "text $TEXT; lens --top 0"
if [ $rc = 1 ] && grep -q 'K must be a whole number from 1 to 10' err; then ok lens-bad-top; else fail lens-bad-top; fi

# patch: the corrupted text must have as many tokens, and the same text
# cannot differ in its prediction
run patch-length shakespeare -c "text abcdef; patch abcde"
if [ $rc = 1 ] && grep -q 'the corrupted text is 5 tokens and the clean one 6' err; then ok patch-length; else fail patch-length; fi
run patch-same shakespeare -c "text abcdef; patch abcdef"
if [ $rc = 1 ] && grep -q 'same next token' err; then ok patch-same; else fail patch-same; fi

run all-three shakespeare -c "text $TEXT; heads; sweep; compare variants"
if [ $rc = 0 ]; then ok all-three; else fail all-three; fi

# with a natively trained post-norm model installed, compare shows it and
# the norm demo's commands still run (without its expects: its claims are
# about the shipped models, which tests/cli_demos.sh checks)
"$TOOLS/tool_mkmodel" models/shakespeare-postnorm.safetensors --placement post --seed 5 >/dev/null 2>&1
run compare-trained shakespeare -c "text $TEXT; compare variants"
if [ $rc = 0 ] && has '^shakespeare-postnorm \[trained\]' && has 'shakespeare-gqa, shakespeare-gqa-uptrained, shakespeare-mqa, shakespeare-rmsnorm: not found'; then
	ok compare-trained
else
	fail compare-trained
fi
# (each expect line goes with the zh line after it, its Chinese twin)
awk '/^expect / { twin = 1; next } twin && /^zh / { twin = 0; next } { twin = 0; print }' \
	"$DEMOS/norm.cmds" >"$tmp/norm-commands.cmds"
run demo-norm-with-postnorm --batch -f "$tmp/norm-commands.cmds"
if [ $rc = 0 ] && has '^shakespeare-postnorm \[trained\]'; then
	ok demo-norm-with-postnorm
else
	fail demo-norm-with-postnorm
fi

# The baseline is the current run while the options are native (one pass,
# not two) and a pass of its own otherwise: whichever order options and
# text come in, the loss, baseline and KL are the same.
T="the quick brown fox jumps over the lazy dog"
stats_after() { "$A" --no-db --batch shakespeare -c "$1" 2>&1 | grep '^loss\|^KL'; }
a=$(stats_after "attn mqa; text $T; stats")
b=$(stats_after "text $T; attn mqa; stats")
c=$(stats_after "text $T; attn mqa; attn mha; ablate 1.2; restore all; attn mqa; stats")
d=$(stats_after "text a much longer text that comes first, and is not the same; attn mqa; text $T; stats")
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$a" = "$d" ] && echo "$a" | grep -q 'KL vs base    0\.[0-9]*[1-9]'; then
	ok "baseline-any-order"
else
	printf "  %s\n" "$a" "$b" "$c" "$d"
	fail baseline-any-order
fi
n=$(stats_after "text $T; attn mqa; attn mha; stats")
if echo "$n" | grep -q 'KL vs base    0\.000000' && echo "$n" | grep -q 'delta +0\.0000'; then
	ok "baseline-native-again"
else
	printf "  %s\n" "$n"
	fail baseline-native-again
fi

[ $failures = 0 ]
