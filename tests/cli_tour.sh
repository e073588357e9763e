#!/bin/sh
# The tour (help tour, attnscope tour --help) and the demos' Chinese: every
# narrated line of every shipped demo has its zh twin; `attnscope tour
# --batch` runs the lessons in the tutorials' order under "lesson N/M"
# headers with every expectation ✓, its sentences the demos' own, in
# Chinese (all ten lessons) and in English (the lab lesson left to
# cli_demos.sh, which runs every demo in English); --from, tour N / back /
# again / list at the prompt, a failing lesson, --lang and the locale.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_tour.sh
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-tour
unset ATTNSCOPE_CORPUS ATTNSCOPE_DATA ATTNSCOPE_DEMOS LC_ALL LC_MESSAGES
LANG=C.UTF-8
ATTNSCOPE_MODELS=$root/models
export ATTNSCOPE_MODELS LANG
RUN_ARGS="--no-db"
cd "$root" || exit 1
demos=sessions/demos
# the tutorials' order
order="basics scaling causal gqa norm heads encoder tang lab pitfalls"

# en_sentences FILE: the sentence of each expect line ("..." at its end)
en_sentences() {
	sed -n 's/^expect .* "\(\([^"\\]\|\\.\)*\)"$/\1/p' "$1" | sed 's/\\\(["\\]\)/\1/g'
}
# zh_sentences FILE: the zh twin of each expect line
zh_sentences() {
	awk 'prev ~ /^expect / && /^zh / { print substr($0, 4) } { prev = $0 }' "$1"
}
# headers FILE PATTERN: the lesson numbers of the headers matching
# PATTERN (a sed expression keeping the number), on one line
headers() {
	sed -n "$2" "$1" | tr '\n' ' '
}
EN_HEAD='s/^lesson \([0-9]*\)\/10: .* (about [0-9]* min)$/\1/p'
ZH_HEAD='s/^第 \([0-9]*\) 课（共 10 课）：.*（约 [0-9]* 分钟）$/\1/p'
# stubs DIR [N]: a lesson file for every name of $order in DIR, each an
# echo and an expect with their twins; lesson N's expectation fails
stubs() {
	mkdir -p "$1"
	i=0
	for n in $order; do
		i=$((i + 1))
		if [ "$i" = "${2:-0}" ]; then
			printf 'echo stub %s\nzh 桩 %s\nexpect 1 == 2 "stub %s fails"\nzh 桩 %s 不成立\n' \
				"$n" "$n" "$n" "$n" >"$1/$n.cmds"
		else
			printf 'echo stub %s\nzh 桩 %s\nexpect 1 == 1 "stub %s holds"\nzh 桩 %s 成立\n' \
				"$n" "$n" "$n" "$n" >"$1/$n.cmds"
		fi
	done
}
# run_tour ARGS...: attnscope tour --no-db ARGS (tour comes first), as run does
run_tour() {
	$TIMEOUT "$A" tour --no-db "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
# only the warning naming characters a model does not know (tang.cmds)
clean_err() {
	! grep -v '^attnscope: warning: [0-9]* of [0-9]* tokens are <unk>' "$tmp/err" | grep -q .
}

# ---------------------------------------------------------------- the twins
# Every `echo TEXT` and `expect` line is followed by `zh TEXT`: Chinese
# (a character beyond ASCII), or for an echo a copy of a line with nothing
# to translate (a command to type).
: >"$tmp/untwinned"
narrated=0
for d in $demos/*.cmds; do
	LC_ALL=C awk -v f="$d" '
		want && !/^zh ./ { printf "%s:%d: no zh line after it\n", f, NR - 1 }
		want && /^zh ./ && substr($0, 4) !~ /[^ -~]/ && substr($0, 4) != eng {
			printf "%s:%d: its zh line is not Chinese\n", f, NR - 1 }
		{ want = /^echo ./ || /^expect /; eng = /^echo / ? substr($0, 6) : "" }
		END { if (want) printf "%s:%d: no zh line after it\n", f, NR }' "$d" >>"$tmp/untwinned"
	narrated=$((narrated + $(grep -cE '^(echo .|expect )' "$d")))
done
if [ "$narrated" -gt 100 ] && [ ! -s "$tmp/untwinned" ]; then
	ok "twins ($narrated narrated lines, each with its Chinese)"
else
	fail "twins" "$narrated narrated lines" "$(head -n 5 "$tmp/untwinned")"
fi

# ------------------------------------------------------------------ tour list
run -c "tour list" </dev/null
files=$(sed -n 's/^[ *] *[0-9]*  \([a-z]*\)\.cmds .*/\1/p' "$tmp/out" | tr '\n' ' ')
check "tour list lists the lessons in the tutorials' order" sh -c "[ $rc -eq 0 ] &&
	[ '$files' = '$order ' ] && grep -q '^The tour: 10 lessons, about 55 min' '$tmp/out' &&
	grep -q '^   3  causal.cmds    7 min  Masks' '$tmp/out'"
run --lang zh -c "tour list" </dev/null
check "tour list in Chinese" sh -c "[ $rc -eq 0 ] && grep -q '^课程共 10 课，约 55 分钟' '$tmp/out' &&
	grep -q '^   5  norm.cmds      6 分钟  残差与归一化' '$tmp/out'"

# ----------------------------------------------- the whole tour, in Chinese
# Every lesson, the lab's training included: a hang guard as in cli_demos.sh.
for n in $order; do zh_sentences "$demos/$n.cmds"; done >"$tmp/want-zh"
hang_guard=$TIMEOUT
[ -n "$TIMEOUT" ] && TIMEOUT="timeout 900"
run_tour --batch --lang zh </dev/null
TIMEOUT=$hang_guard
sed -n 's/^✓ //p' "$tmp/out" >"$tmp/got-zh"
if [ $rc -eq 0 ] && [ "$(headers "$tmp/out" "$ZH_HEAD")" = "1 2 3 4 5 6 7 8 9 10 " ] &&
   [ -s "$tmp/want-zh" ] && cmp -s "$tmp/want-zh" "$tmp/got-zh" && ! grep -q '^✗' "$tmp/out" &&
   grep -q '^课程结束：第 1–10 课都已运行完毕，没有失败。$' "$tmp/out" && clean_err; then
	ok "tour in Chinese: lessons 1-10 in order, $(wc -l <"$tmp/got-zh") Chinese sentences ✓"
else
	fail "tour in Chinese" "headers: $(headers "$tmp/out" "$ZH_HEAD")" \
		"$(diff "$tmp/want-zh" "$tmp/got-zh" | head -n 4)" "$(grep -A2 '^✗' "$tmp/out" | head -n 3)"
fi

# ------------------------------------------------ the tour, in English
# The shipped lessons but the lab, which cli_demos.sh runs in English: a
# stand-in lab.cmds in a copy of the demo directory.
mkdir -p "$tmp/en"
stubs "$tmp/stub"
for n in $order; do
	if [ "$n" = lab ]; then
		cp "$tmp/stub/lab.cmds" "$tmp/en/lab.cmds"
	else
		ln -s "$root/$demos/$n.cmds" "$tmp/en/$n.cmds"
	fi
	en_sentences "$tmp/en/$n.cmds"
done >"$tmp/want-en"
ATTNSCOPE_DEMOS=$tmp/en run_tour --batch --lang en </dev/null
sed -n 's/^✓ //p' "$tmp/out" >"$tmp/got-en"
if [ $rc -eq 0 ] && [ "$(headers "$tmp/out" "$EN_HEAD")" = "1 2 3 4 5 6 7 8 9 10 " ] &&
   [ "$(wc -l <"$tmp/want-en")" -gt 40 ] && cmp -s "$tmp/want-en" "$tmp/got-en" &&
   ! grep -q '^✗' "$tmp/out" && grep -q '^The tour is over: lessons 1-10 ran without a failure.$' "$tmp/out" &&
   clean_err; then
	ok "tour in English: lessons 1-10 in order, $(wc -l <"$tmp/got-en") sentences ✓ (a stand-in lab)"
else
	fail "tour in English" "headers: $(headers "$tmp/out" "$EN_HEAD")" \
		"$(diff "$tmp/want-en" "$tmp/got-en" | head -n 4)" "$(grep -A2 '^✗' "$tmp/out" | head -n 3)"
fi

# ------------------------------------------------ starting, skipping, going back
ATTNSCOPE_DEMOS=$tmp/stub run_tour --batch --from 6 </dev/null
check "--from 6 runs lessons 6-10" sh -c "[ $rc -eq 0 ] &&
	[ '$(headers "$tmp/out" "$EN_HEAD")' = '6 7 8 9 10 ' ] && grep -q '^lesson 6/10: Heads that' '$tmp/out' &&
	grep -q '^The tour is over: lessons 6-10 ran' '$tmp/out'"
ATTNSCOPE_DEMOS=$tmp/stub run --batch -c "tour; tour; tour 7; tour back; tour again; tour list" </dev/null
check "tour, tour N, tour back, tour again at the prompt" sh -c "[ $rc -eq 0 ] &&
	[ '$(headers "$tmp/out" "$EN_HEAD")' = '1 2 7 6 6 ' ] && grep -q '^\*  6  heads.cmds ' '$tmp/out' &&
	grep -q '^End of lesson 6/10. Next: tour (lesson 7/10: ' '$tmp/out'"
ATTNSCOPE_DEMOS=$tmp/stub run --batch -c "tour 10; tour" </dev/null
check "tour after the last lesson is an error" sh -c "[ $rc -eq 1 ] &&
	grep -q '^-c:2: tour: lesson 10/10 was the last (tour 1 starts again)' '$tmp/err'"
ATTNSCOPE_DEMOS=$tmp/stub run --batch -c "tour 1; tour back" </dev/null
check "tour back from lesson 1 is an error" grep -q '^-c:2: tour back: lesson 1 is the first' "$tmp/err"
run --batch -c "tour 11" </dev/null
check "tour 11 is an error" grep -q '^-c:1: 11: the lesson must be a whole number from 1 to 10' "$tmp/err"
run --batch -c "tour sideways" </dev/null
check "tour WORD says the usage" grep -q '^-c:1: usage: tour \[N | next | back | again | list\]' "$tmp/err"
run_tour --from 11 </dev/null
check "attnscope tour --from 11 is a one-line error" sh -c "[ $rc -eq 2 ] && [ ! -s '$tmp/out' ] &&
	[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q 'tour: --from 11: expected a lesson from 1 to 10' '$tmp/err'"
mkdir -p "$tmp/none"
ATTNSCOPE_DEMOS=$tmp/none run_tour --batch </dev/null
check "a missing lesson file says where it looked" sh -c "[ $rc -eq 1 ] &&
	grep -q 'lesson 1/10: no basics.cmds in \$ATTNSCOPE_DEMOS' '$tmp/err'"

# --------------------------------------------------------- a failing lesson
# Lesson 2's claim is false: it prints ✗ and FILE:LINE, the other lessons
# run, and the exit status is 1.
stubs "$tmp/fail" 2
ATTNSCOPE_DEMOS=$tmp/fail run_tour --batch </dev/null
check "a failing lesson: ✗, FILE:LINE, the next lessons run, exit status 1" sh -c "[ $rc -eq 1 ] &&
	grep -q '^✗ stub scaling fails' '$tmp/out' &&
	grep -q '^$tmp/fail/scaling.cmds:3: expectation not met: stub scaling fails' '$tmp/err' &&
	[ '$(headers "$tmp/out" "$EN_HEAD")' = '1 2 3 4 5 6 7 8 9 10 ' ] &&
	grep -q 'tour: 1 of lessons 1-10 failed: 2' '$tmp/err'"
ATTNSCOPE_DEMOS=$tmp/fail run_tour --batch --lang zh --from 2 </dev/null
check "in Chinese the same claim fails with its Chinese sentence" sh -c "[ $rc -eq 1 ] &&
	grep -q '^✗ 桩 scaling 不成立' '$tmp/out' && grep -q '^  measured: ' '$tmp/out'"

# ---------------------------------------------------- the language
run --lang fr -c "echo x" </dev/null
check "an unknown --lang is a one-line error" sh -c "[ $rc -eq 2 ] && [ ! -s '$tmp/out' ] &&
	[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^attnscope: --lang fr: expected en or zh' '$tmp/err'"
run_tour --lang fr </dev/null
check "attnscope tour --lang fr too" sh -c "[ $rc -eq 2 ] && [ ! -s '$tmp/out' ] &&
	[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q '^attnscope tour: --lang fr: expected en or zh' '$tmp/err'"
T='echo Good night; zh 晚安'
LANG=zh_CN.UTF-8 run -c "$T" </dev/null
check "LANG=zh_CN.UTF-8 narrates in Chinese" sh -c "[ $rc -eq 0 ] && [ \"\$(cat '$tmp/out')\" = 晚安 ]"
LANG=zh_CN.UTF-8 run --lang en -c "$T" </dev/null
check "--lang en overrides the locale" sh -c "[ \"\$(cat '$tmp/out')\" = 'Good night' ]"
LC_MESSAGES=zh_TW.UTF-8 run -c "$T" </dev/null
check "LC_MESSAGES=zh_TW.UTF-8 too" sh -c "[ \"\$(cat '$tmp/out')\" = 晚安 ]"
LC_ALL=C.UTF-8 LANG=zh_CN.UTF-8 run -c "$T" </dev/null
check "LC_ALL comes before LANG" sh -c "[ \"\$(cat '$tmp/out')\" = 'Good night' ]"
run --lang zh -c "echo untranslated" </dev/null
check "a line without a twin prints its own text in Chinese too" sh -c "[ \"\$(cat '$tmp/out')\" = untranslated ]"
printf 'echo One\nzh 一\n\nzh 二\n' >"$tmp/stray.cmds"
run --batch -f "$tmp/stray.cmds" </dev/null
check "a zh line after no echo or expect is an error at FILE:LINE" sh -c "[ $rc -eq 1 ] &&
	grep -q '^$tmp/stray.cmds:4: a zh line gives the Chinese of the echo or expect line just before it' '$tmp/err'"

# ------------------------------------------------------------ the record
# A replay runs the commands the lesson recorded, not the tour line again.
ATTNSCOPE_DEMOS=$tmp/stub $TIMEOUT "$A" --db "$tmp/s.db" -c "tour 3" >/dev/null 2>&1
ATTNSCOPE_DEMOS=$tmp/stub $TIMEOUT "$A" --db "$tmp/s.db" -c "replay 1" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "replay skips the tour line and runs its lesson's commands" sh -c "[ $rc -eq 0 ] &&
	! grep -q '^lesson ' '$tmp/out' && grep -q '^✓ stub causal holds' '$tmp/out' &&
	grep -q '^replayed session 1: 2 commands run, 1 skipped (save, replay, quit, tour)' '$tmp/out'"

[ "$failures" -eq 0 ]
