#!/bin/sh
# pull (hub-pull.c) against tool_hubserver, a hub on 127.0.0.1 serving a
# repository tool_mkhf writes (config, GPT-2's vocab.json + merges.txt, two
# safetensors shards and their index; a pytorch_model.bin and a listed
# onnx/model.onnx that pull must leave alone): the cache is laid out as
# huggingface_hub lays it (blobs named by etag, holding the served bytes;
# snapshot links ../../blobs/ETAG; refs/main the commit), every etag checked
# here with sha256sum and sha1sum of "blob SIZE\0" + content; `load ORG/NAME`
# gives the repository directory's own numbers; a second pull downloads
# nothing; an interrupted transfer leaves a .incomplete and the next pull
# fetches only the rest (bytes counted by the server); Ctrl-C keeps the
# .incomplete; a corrupted file is refused and not kept; 401 without
# HF_TOKEN, 403 for a gated repository and 404 are refused in one line; a
# renamed repository's relative redirect is followed;
# HF_HUB_OFFLINE uses the cache or refuses; HF_HOME places the cache.
# Needs GPT-2's vocabulary from ../shared/tokenizers (or $ATTNSCOPE_SHARED).
. "$(dirname "$0")/lib-cli.sh"
need_gpt2
make_tmp cli-pull
RUN_ARGS=--no-db
C=0123456789abcdef0123456789abcdef01234567
mkdir "$tmp/repo"
"$TOOLS/tool_mkhf" "$tmp/repo" "$tmp/ref.safetensors" "$gpt2" --tiny --shards >/dev/null 2>&1 ||
	fail "setup (tool_mkhf)"
echo "not for attnscope" >"$tmp/repo/pytorch_model.bin"
wanted="config.json merges.txt vocab.json model.safetensors.index.json
model-00001-of-00002.safetensors model-00002-of-00002.safetensors"
big=model-00001-of-00002.safetensors
big_sha=$(sha256sum "$tmp/repo/$big" | cut -d' ' -f1)
big_size=$(wc -c <"$tmp/repo/$big" | tr -d ' ')

server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
# serve MODE [--token T]: (re)starts the server; sets HF_ENDPOINT
serve() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	rm -f "$tmp/port" "$tmp/log"
	mode=$1
	shift
	"$TOOLS/tool_hubserver" --root "$tmp/repo" --repo org/tiny --commit $C --mode "$mode" \
		--port-file "$tmp/port" --log "$tmp/log" --seconds 60 "$@" &
	server_pid=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	export HF_ENDPOINT="http://127.0.0.1:$(cat "$tmp/port")"
}
# the file bytes the server has sent since it started
served() { awk '{ n += $NF } END { print n + 0 }' "$tmp/log"; }
# pull ARGS: `attnscope pull ARGS`, as run() runs the program; a failure
# is one line on stderr after the progress lines (which start with two
# spaces) of the files fetched before it
pull() {
	$TIMEOUT "$A" pull "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
R="$tmp/hub/models--org--tiny"
export HF_HUB_CACHE="$tmp/hub"
unset HF_TOKEN HF_HUB_OFFLINE HF_HOME

serve ok --token secret
pull org/tiny
check "401 without HF_TOKEN: one line, nothing written to the cache" \
	sh -c "[ $rc -eq 1 ] && grep -q 'org/tiny: the hub refused the file list (401 GatedRepo): the repository is gated or private; .*HF_TOKEN' '$tmp/err' &&
	[ \$(grep -vc '^  ' '$tmp/err') -eq 1 ] && [ ! -e '$R/blobs' ]"

export HF_TOKEN=secret
: >"$tmp/log"
pull org/tiny
check "pull with HF_TOKEN succeeds and says what it fetched" \
	sh -c "[ $rc -eq 0 ] && grep -q '^pulled org/tiny@main (commit 0123456789ab): 6 files, 6 downloaded now' '$tmp/out'"
first=$(served)
layout_ok=1
for f in $wanted; do
	size=$(wc -c <"$tmp/repo/$f" | tr -d ' ')
	case $f in
	*.safetensors) etag=$(sha256sum "$tmp/repo/$f" | cut -d' ' -f1) ;;
	*) etag=$({ printf 'blob %s\000' "$size"; cat "$tmp/repo/$f"; } | sha1sum | cut -d' ' -f1) ;;
	esac
	link=$(readlink "$R/snapshots/$C/$f")
	if [ "$link" != "../../blobs/$etag" ] || [ -L "$R/blobs/$etag" ] ||
		! cmp -s "$R/blobs/$etag" "$tmp/repo/$f"; then
		echo "  $f: link '$link', want ../../blobs/$etag"
		layout_ok=0
	fi
done
check "each file: snapshots/COMMIT/FILE -> ../../blobs/ETAG, a blob holding the repository's bytes" \
	[ $layout_ok -eq 1 ]
check "refs/main holds the commit, without a newline" \
	sh -c "[ \"\$(cat '$R/refs/main')\" = $C ] && [ \$(wc -c <'$R/refs/main') -eq 40 ]"
check "only the wanted files: no pytorch_model.bin, no onnx/, no .incomplete, 6 blobs" \
	sh -c "[ ! -e '$R/snapshots/$C/pytorch_model.bin' ] && [ ! -e '$R/snapshots/$C/onnx' ] &&
	[ \$(ls '$R/blobs' | wc -l) -eq 6 ] && ! ls '$R/blobs' | grep -q incomplete &&
	! grep -q 'pytorch_model.bin\|onnx' '$tmp/log'"
check "the server sent each file's bytes once" \
	sh -c "[ $first -eq \$(cat $(for f in $wanted; do printf '%s ' "$tmp/repo/$f"; done) | wc -c) ]"

run "$tmp/repo" --dump -t "To be, or not"
grep -v '^model' "$tmp/out" >"$tmp/dir.dump"
run org/tiny --dump -t "To be, or not"
grep -v '^model' "$tmp/out" >"$tmp/pulled.dump"
check "attnscope org/tiny opens the pulled snapshot: the directory's numbers exactly" \
	sh -c "[ $rc -eq 0 ] && [ -s '$tmp/dir.dump' ] && cmp -s '$tmp/dir.dump' '$tmp/pulled.dump'"
run "$tmp/ref.safetensors" -c "pull org/tiny; load org/tiny"
n=$(served)
check "a second pull (the REPL command) downloads nothing, and load org/tiny opens it" \
	sh -c "[ $rc -eq 0 ] && grep -q '6 files, 0 downloaded now (0 bytes)' '$tmp/out' &&
	grep -q '^loaded' '$tmp/out' && [ $n -eq $first ]"

export HF_HUB_OFFLINE=1
pull org/tiny
n=$(wc -l <"$tmp/log")
check "HF_HUB_OFFLINE with the snapshot cached: used, nothing requested" \
	sh -c "[ $rc -eq 0 ] && grep -q '^HF_HUB_OFFLINE: org/tiny@main is in the cache' '$tmp/out' &&
	[ \$(wc -l <'$tmp/log') -eq $n ]"
pull org/other
unset HF_HUB_OFFLINE
check "HF_HUB_OFFLINE without it: refused in one line" \
	sh -c "[ $rc -eq 1 ] && grep -q 'org/other@main: HF_HUB_OFFLINE is set and the cache' '$tmp/err' &&
	[ \$(grep -vc '^  ' '$tmp/err') -eq 1 ]"

pull org/other
check "a missing repository: 404 in one line" \
	sh -c "[ $rc -eq 1 ] && grep -q 'org/other: the file list not found (404 RepoNotFound)' '$tmp/err' && [ \$(grep -vc '^  ' '$tmp/err') -eq 1 ]"
pull org/tiny@v9
check "a missing revision: 404 in one line" \
	sh -c "[ $rc -eq 1 ] && grep -q '(404 RevisionNotFound)' '$tmp/err' && [ \$(grep -vc '^  ' '$tmp/err') -eq 1 ]"
pull ../etc
check "a spec that is not ORG/NAME is refused before any request" \
	sh -c "[ $rc -eq 1 ] && grep -q 'expected ORG/NAME\[@REVISION\]' '$tmp/err'"
pull --help
check "attnscope pull --help explains" sh -c "[ $rc -eq 0 ] && grep -q 'HF_HUB_OFFLINE' '$tmp/out'"

# a renamed repository: the hub redirects to the new name by a relative
# Location, which pull follows; the cache keeps the name asked for
pull org/old-tiny
check "a renamed repository (307 to a path on the endpoint) is followed" \
	sh -c "[ $rc -eq 0 ] && [ -L '$tmp/hub/models--org--old-tiny/snapshots/$C/config.json' ] &&
	cmp -s '$tmp/hub/models--org--old-tiny/snapshots/$C/$big' '$tmp/repo/$big'"

serve gated
pull org/tiny
check "a gated repository: 403 in one line" \
	sh -c "[ $rc -eq 1 ] && grep -q '(403 GatedRepo): the repository is gated' '$tmp/err' && [ \$(grep -vc '^  ' '$tmp/err') -eq 1 ]"

# interrupted: the first file download is cut halfway; the next pull
# fetches the rest only
export HF_HUB_CACHE="$tmp/hub2"
R="$tmp/hub2/models--org--tiny"
serve interrupt
pull org/tiny
part=$(ls "$R/blobs/" | grep '\.incomplete$')
cut_at=$(wc -c <"$R/blobs/$part" | tr -d ' ')
check "a cut transfer fails in one line and keeps a .incomplete, no blob, no link" \
	sh -c "[ $rc -eq 1 ] && grep -q 'pull again to resume' '$tmp/err' && [ \$(grep -vc '^  ' '$tmp/err') -eq 1 ] &&
	[ '$part' = '$big_sha.incomplete' ] && [ $cut_at -gt 0 ] && [ $cut_at -lt $big_size ] &&
	[ ! -e '$R/blobs/$big_sha' ] && [ ! -e '$R/snapshots/$C/$big' ]"
before=$(grep "/cdn/$big_sha" "$tmp/log" | awk '{ n += $NF } END { print n + 0 }')
pull org/tiny
after=$(grep "/cdn/$big_sha" "$tmp/log" | awk '{ n += $NF } END { print n + 0 }')
check "the next pull resumes: $((after - before)) more bytes of $big ($big_size), cut at $cut_at" \
	sh -c "[ $rc -eq 0 ] && [ $before -eq $cut_at ] && [ $((after - before)) -eq $((big_size - cut_at)) ] &&
	cmp -s '$R/blobs/$big_sha' '$tmp/repo/$big' && [ ! -e '$R/blobs/$part' ]"

# Ctrl-C mid-file: the .incomplete stays (perl restores SIGINT, which a
# background job of sh ignores)
export HF_HUB_CACHE="$tmp/hub3"
R="$tmp/hub3/models--org--tiny"
serve stall
perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' "$A" pull org/tiny >"$tmp/out" 2>"$tmp/err" &
pull_pid=$!
i=0
while ! ls "$R/blobs/" 2>/dev/null | grep -q incomplete && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.2
kill -INT $pull_pid
wait $pull_pid
rc=$?
check "Ctrl-C stops the pull in one line and keeps the .incomplete" \
	sh -c "[ $rc -eq 1 ] && grep -q 'interrupted at [0-9]* of $big_size bytes; kept .*$big_sha.incomplete: pull again to resume' '$tmp/err' &&
	[ -s '$R/blobs/$big_sha.incomplete' ] && [ ! -e '$R/blobs/$big_sha' ]"

# corrupted bytes: refused, not kept
export HF_HUB_CACHE="$tmp/hub4"
R="$tmp/hub4/models--org--tiny"
serve corrupt
pull org/tiny
check "a corrupted file is refused in one line, and neither kept nor linked" \
	sh -c "[ $rc -eq 1 ] && grep -q \"download's SHA-256 is [0-9a-f]*, not the hub's [0-9a-f]*; deleted it\" '$tmp/err' &&
	[ \$(grep -vc '^  ' '$tmp/err') -eq 1 ] && [ \$(ls '$R/blobs' | wc -l) -eq 1 ] && [ ! -e '$R/blobs/$big_sha.incomplete' ] &&
	[ ! -e '$R/snapshots/$C/$big' ] && [ -L '$R/snapshots/$C/model.safetensors.index.json' ]"

# HF_HOME places the cache when HF_HUB_CACHE is unset
unset HF_HUB_CACHE
serve ok
export HF_HOME="$tmp/home"
pull org/tiny
check "HF_HOME: the cache is HF_HOME/hub" \
	sh -c "[ $rc -eq 0 ] && [ -L '$tmp/home/hub/models--org--tiny/snapshots/$C/config.json' ]"

exit $((failures > 0))
