#!/bin/sh
# End-to-end tests of `pitfall NAME | off` in batch mode: set, named in the
# option summary (show diff's title, export stats' options line), undone by
# `pitfall off` and `reset`, an unknown name as a one-line error listing the
# names, eps0's NaN reported once with its place (a seeded model whose `z`
# embeds as zeros, RMSNorm), and the effects `help pitfall` describes,
# measured on the shipped shakespeare model.
# Prints "ok NAME" or "FAIL NAME" per check.
#
#   ATTNSCOPE=./attnscope TOOLS=build/tests sh tests/cli_pitfall.sh
. "$(dirname "$0")/lib-cli.sh"
SHIPPED=$(pwd)/models/shakespeare.safetensors

make_tmp pitfall
mkmodel "$tmp/rand.safetensors" --seed 3
mkmodel "$tmp/zero.safetensors" --norm rmsnorm --pos rope --zero-char z
cd "$tmp" || exit 1
TEXT='To be, or not to be, that is the question:'

# field NAME: the word after "loss" / "KL" / "top-1" on the last summary line
field() { grep 'tokens  ' out | tail -n 1 | sed -n "s/.*$1 \([^ ]*\).*/\1/p"; }

run --no-db rand.safetensors -c "text $TEXT; pitfall no-transpose; show diff 0.1; export stats"
check set status 0
check set-summary has_out 'under pitfall:no-transpose minus the native run'
check set-stats has_out 'pitfall no-transpose'
kl=$(sed -n '2s/.*KL \([0-9.]*\).*/\1/p' out)
check set-kl awk -v k="$kl" 'BEGIN { exit !(k != "" && k > 0) }'

run --no-db rand.safetensors -c "text $TEXT; pitfall mask-one-head; pitfall off; show diff 0.1"
check off status 0
check off-native has_out 'the native options (nothing differs)'
check off-kl sh -c "sed -n '3p' out | grep -q 'KL 0.0000  top-1 100.0%'"

run --no-db rand.safetensors -c "text $TEXT; pitfall eps0; reset; show diff 0.1"
check reset has_out 'the native options (nothing differs)'

run --no-db rand.safetensors -c "text $TEXT; pitfall transpose"
check unknown-status status 1
check unknown-one-line sh -c "[ \$(wc -l <err) = 1 ]"
check unknown-list has_err "unknown pitfall 'transpose' (pitfalls: no-transpose, mask-one-head, eps0; or off)"

run --no-db zero.safetensors -c "text abc z def; pitfall eps0"
check nan-status status 0
check nan-where has_out '^9 tokens  first NaN at layer 0 (norm1), position 4: loss NaN  KL NaN '
run --no-db zero.safetensors -c "text abc z def; pitfall eps0; show grid"
check nan-no-draw sh -c "[ $rc = 1 ] && grep -q 'nothing to draw: 9 tokens  first NaN at layer 0' err && ! grep -q '┌' out"
run --no-db zero.safetensors -c "text abc z def"
check nan-native sh -c "[ $rc = 0 ] && ! grep -q NaN out"

run --no-db -c "help pitfall"
check help sh -c "grep -q '^usage: pitfall no-transpose | mask-one-head | eps0 | off' out && grep -q 'symptom' out"

# the effects `help pitfall` states, on the shipped model
if [ -f "$SHIPPED" ]; then
	T2="To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer"
	run --no-db "$SHIPPED" -c "text $T2; pitfall no-transpose; heads"
	d=$(grep 'tokens  ' out | tail -n 1 | sed -n 's/.*loss [0-9.]* (+\([0-9.]*\)).*/\1/p')
	t=$(field top-1 | tr -d %)
	check shipped-no-transpose-nat awk -v d="$d" -v t="$t" 'BEGIN { exit !(d > 1 && t < 50) }'
	check shipped-no-transpose-broad has_out '^roles: 16 broad$'
	run --no-db "$SHIPPED" -c "text $T2; pitfall mask-one-head"
	d=$(grep 'tokens  ' out | tail -n 1 | sed -n 's/.*loss [0-9.]* (+\([0-9.]*\)).*/\1/p')
	check shipped-mask-one-head awk -v d="$d" -v k="$(field KL)" 'BEGIN { exit !(d > 0 && k > 0.05) }'
	run --no-db "$SHIPPED" -c "text $T2; pitfall eps0"
	check shipped-eps0 sh -c "tail -n 1 out | grep -q 'KL 0.0000  top-1 100.0%'"
fi

# memory at long context: kv's table of the attention a run keeps (layers x
# heads x T x T x 4 bytes) beside the KV cache, at T = 512 ... the context,
# against the same arithmetic done here; and what the runs hold
mkmodel long.safetensors --layers 2 --heads 4 --d-model 64 --context 4096 --pos rope
run --no-db long.safetensors -c "kv"
rows=$(awk '/^   tokens   attention/ { t = 1; next } t && NF >= 4 { print $1 }' out | tr '\n' ' ')
check long-rows sh -c "[ '$rows' = '512 1024 2048 4096 ' ]"
# 2 x 4 x 4096^2 x 4 bytes = 512 MiB; 2 (K, V) x 2 x 4 x 4096 x 16 x 4 = 4 MiB;
# 128x (4 x T x 4 / (2 x 4 x 16 x 4) = T / 32)
check long-4096 sh -c "grep -qE '^ +4096 +512 MiB +4 MiB +128x  \(the context\)$' out"
check long-512 sh -c "grep -qE '^ +512 +8 MiB +512 KiB +16x$' out"
run --no-db long.safetensors -c "text $TEXT; kv"
check long-native-one-run has_out 'the baseline is the same run (native options)'
check long-current-text sh -c "grep -qE '^ +42 .*\(the current text\)$' out"
run --no-db long.safetensors -c "text $TEXT; scale off; kv"
check long-baseline-held has_out 'the baseline run, under the native options, another'

[ "$failures" = 0 ]
