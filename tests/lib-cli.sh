# lib-cli.sh — helpers shared by the tests/cli_*.sh scripts.  Each script
# sources it first, before any cd:
#
#   . "$(dirname "$0")/lib-cli.sh"
#
# (Named so that tests/run.sh, which runs every tests/cli_*.sh, skips it.)
# Sourcing sets A (the binary: $ATTNSCOPE, default ./attnscope) and TOOLS
# (tool_mkmodel's directory: $TOOLS, default build/tests), both made
# absolute; failures=0; and TIMEOUT ("timeout 60" when timeout exists).
# Scripts whose run/fail/check differ define their own after sourcing.
# Command files narrate in the locale's language (attnscope --lang: zh for
# a zh_* LC_ALL, LC_MESSAGES or LANG); the tests read their English unless
# they ask for Chinese, so a zh_* locale of the caller's is set aside.
case ${LC_ALL:-} in zh*) LC_ALL=C.UTF-8; export LC_ALL ;; esac
case ${LC_MESSAGES:-${LANG:-}} in zh*) LC_MESSAGES=C; export LC_MESSAGES ;; esac
A=${ATTNSCOPE:-./attnscope}
TOOLS=${TOOLS:-build/tests}
case $A in /*) ;; *) A=$(pwd)/$A ;; esac
case $TOOLS in /*) ;; *) TOOLS=$(pwd)/$TOOLS ;; esac
failures=0

TIMEOUT=
if command -v timeout >/dev/null 2>&1; then
	TIMEOUT="timeout 60"
fi

# make_tmp NAME: a new directory in $tmp (attnscope-NAME.XXXXXX), removed
# on exit; INT and TERM exit 130.  A script needing more cleanup sets its
# own EXIT trap afterwards.
make_tmp() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-$1.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
}

# mkmodel FILE [OPTIONS...]: a seeded random model made by tool_mkmodel;
# when that fails, prints "FAIL setup (tool_mkmodel)" and exits 1.
mkmodel() {
	if ! "$TOOLS/tool_mkmodel" "$@" >/dev/null 2>&1; then
		echo "FAIL setup (tool_mkmodel)"
		exit 1
	fi
}

# run ARGS...: runs the binary (after $RUN_ARGS, if set) with the caller's
# stdin; stdout in $tmp/out, stderr in $tmp/err, the exit status in $rc and
# as run's own status (at the end of a pipeline, which may be a subshell,
# write `... | run; rc=$?`).
RUN_ARGS=
run() {
	$TIMEOUT "$A" $RUN_ARGS "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	return $rc
}
ok() { echo "ok $1"; }
# fail NAME [MESSAGE...]: prints FAIL NAME, the messages, $rc and the start
# of $tmp/out and $tmp/err; counts the failure.
fail() {
	echo "FAIL $1"
	shift
	for m in "$@"; do echo "  $m"; done
	echo "  exit status: $rc"
	sed -n '1,5s/^/  stdout: /p' "$tmp/out" 2>/dev/null
	sed -n '1,5s/^/  stderr: /p' "$tmp/err" 2>/dev/null
	failures=$((failures + 1))
}
# check NAME CONDITION-COMMAND...: ok when the command succeeds.
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name" "failed: $*"; fi
}
has_out() { grep -q -- "$1" "$tmp/out"; }
has_err() { grep -q -- "$1" "$tmp/err"; }
status() { [ "$rc" -eq "$1" ]; }

# training_text FILE: 400 lines of a small repetitive English text, enough
# for a tiny model (context 16) to train on in a few steps.
training_text() {
	i=0
	: >"$1"
	while [ $i -lt 400 ]; do
		echo "the cat sat on the mat $((i % 10)); the dog ran to the log $((i % 7))." >>"$1"
		i=$((i + 1))
	done
}

# same_as_ref NAME [--loss]: the HF directory $tmp/hf's --dump of $text
# equals that of the checkpoint $tmp/ref.safetensors holding the same
# weights, all but the model's name (config lines, tokens, loss and
# attention); with --loss the loss must also be a number (a model with
# an output head).
same_as_ref() {
	run "$tmp/hf" -t "$text" --dump
	grep -v '^model ' "$tmp/out" >"$tmp/hf.dump"
	run "$tmp/ref.safetensors" -t "$text" --dump
	grep -v '^model ' "$tmp/out" >"$tmp/ref.dump"
	need_loss=true
	[ "$2" = --loss ] && need_loss="grep -q '^loss [0-9]' '$tmp/hf.dump'"
	check "$1: the HF directory gives the checkpoint's config, attention and loss exactly" \
		sh -c "[ -s '$tmp/hf.dump' ] && $need_loss && cmp -s '$tmp/hf.dump' '$tmp/ref.dump'"
}

# refuse_edit MAKE NAME SED MESSAGE: a fresh $tmp/hf made by the command
# MAKE (split into words), its config.json edited by the sed expression
# SED, is refused in one line that says MESSAGE (a grep pattern).
refuse_edit() {
	$1
	sed "$3" "$tmp/hf/config.json" >"$tmp/c" && mv "$tmp/c" "$tmp/hf/config.json"
	run "$tmp/hf" -t hi
	check "$2 is refused by name" sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q -- '$4' '$tmp/err'"
}

# need_gpt2: sets $gpt2 to GPT-2's tokenizer directory in the shared data
# ($ATTNSCOPE_SHARED, default ../shared), absolute; a failed setup check
# and exit 1 when it is missing.
need_gpt2() {
	shared=${ATTNSCOPE_SHARED:-../shared}
	case $shared in /*) ;; *) shared=$(pwd)/$shared ;; esac
	gpt2=$shared/tokenizers/gpt2
	if [ ! -f "$gpt2/vocab.json" ]; then
		echo "FAIL setup (no GPT-2 tokenizer in $shared/tokenizers)"
		exit 1
	fi
}

# sums_check: "SPLITS CAPPED BAD" for the why and dla tables in $tmp/out:
# each table's sum of terms (parts), as printed, is the pass's score
# (logit) before any cap, and where the model caps, that plus the cap's
# change is the capped score (the model's logit) within 0.00015 (rounding
# of the 4 decimals shown)
sums_check() {
	awk '/^sum of [0-9]+ (terms|parts) / { s = $NF; next }
		/left out/ && s != "" { if ($4 != s) bad++; pre = $4; n++; s = ""; next }
		/^the (soft-)?cap.s change / { z = $4; next }
		z != "" && /^the (capped score|model.s logit) / { d = pre + z - $4
			if (d > 0.00015 || d < -0.00015) bad++; c++; z = "" }
		END { print n + 0, c + 0, bad + 0 }' "$tmp/out"
}

# near A B: two --dump outputs agree but for their model and config lines:
# the same words, numbers within 1e-4 + 1e-4 |b|
near() {
	awk 'NR == FNR { if ($1 != "model" && $1 != "config") a[n++] = $0; next }
	$1 == "model" || $1 == "config" { next }
	{
		if (m >= n || split(a[m++], x, " ") != split($0, y, " ")) exit 1
		for (i = 1; i in x; i++) {
			d = x[i] - y[i]; d = d < 0 ? -d : d; t = y[i] < 0 ? -y[i] : y[i]
			if (x[i] != y[i] && (x[i] + 0 != x[i] || d > 1e-4 + 1e-4 * t)) exit 1
		}
	}
	END { exit m != n }' "$1" "$2"
}

# limited ARGS: run ARGS with 2 GiB of address space (ulimit -v), $rc set
limited() { (ulimit -v 2097152 && run "$@"); rc=$?; }
