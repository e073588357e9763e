#!/bin/sh
# GGUF files other tools keep (discover-gguf.c): an Ollama models directory
# built here ($OLLAMA_MODELS: manifests naming blobs written by
# tool_mkgguf), an LM Studio folder and a llama.cpp cache under a $HOME of
# its own.  `models` lists each by the name Ollama or the folder gives it,
# with the architecture, main tensor type and file size its GGUF header
# states; `load NAME` and `attnscope NAME` open it; hostile manifests (bad
# JSON, a digest climbing out with ../, a missing blob, a blob of the wrong
# size, a symbolic-link loop, a FIFO) are listed with one line saying what
# is wrong, and loading them fails in one line, without hanging.
. "$(dirname "$0")/lib-cli.sh"
make_tmp cli-discover
[ -n "$KEEP" ] && trap - EXIT
RUN_ARGS=--no-db

O="$tmp/ollama"
mkdir -p "$O/blobs" "$tmp/home"
# blob: a tiny model of architecture $1 in tensor type $2; prints its digest
blob() {
	"$TOOLS/tool_mkgguf" "$tmp/b.gguf" --tiny --arch "$1" --type "$2" >/dev/null 2>&1 || return 1
	h=$(sha256sum "$tmp/b.gguf" | cut -d' ' -f1)
	mv "$tmp/b.gguf" "$O/blobs/sha256-$h"
	echo "$h"
}
# manifest PATH DIGEST SIZE: an Ollama manifest with a config, a model and
# a template layer, as `ollama pull` leaves it
manifest() {
	mkdir -p "$(dirname "$O/manifests/$1")"
	cat >"$O/manifests/$1" <<EOF
{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
 "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:$(printf '%064d' 1)","size":10},
 "layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"$2","size":$3},
  {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:$(printf '%064d' 2)","size":5}]}
EOF
}
size() { wc -c <"$1" | tr -d ' '; }

q=$(blob qwen2 q8_0) && l=$(blob llama q4_0) && g=$(blob gpt2 f16) || fail "setup (tool_mkgguf)"
manifest registry.ollama.ai/library/qwen2.5/0.5b "sha256:$q" "$(size "$O/blobs/sha256-$q")"
manifest registry.ollama.ai/library/tinyllama/latest "sha256:$l" "$(size "$O/blobs/sha256-$l")"
manifest hf.co/someone/gpt2-gguf/f16 "sha256:$g" "$(size "$O/blobs/sha256-$g")"
mkdir -p "$tmp/home/.lmstudio/models/pub/repo" "$tmp/home/.cache/llama.cpp"
cp "$O/blobs/sha256-$l" "$tmp/home/.lmstudio/models/pub/repo/tiny-Q4_0.gguf"
cp "$O/blobs/sha256-$q" "$tmp/home/.cache/llama.cpp/org_repo_tiny-q8_0.gguf"
export OLLAMA_MODELS="$O" HOME="$tmp/home" ATTNSCOPE_MODELS="$tmp/none" HF_HUB_CACHE="$tmp/nohub"
unset LLAMA_CACHE XDG_CACHE_HOME

run -c "models"
check "Ollama's models are listed by Ollama's names, read from their GGUF headers" \
	sh -c "[ $rc -eq 0 ] && grep -q '^  qwen2.5:0.5b  *gguf  *1  *2  *1  *32 ' '$tmp/out' &&
	grep -q '^  tinyllama:latest  *gguf  *1  *2  *1  *32 ' '$tmp/out' &&
	grep -A1 '^  hf.co/someone/gpt2-gguf:f16\$' '$tmp/out' | grep -q '^     *gguf  *1  *2  *2  *32 '"
check "each with its architecture, tensor type and file size" \
	sh -c "grep -A1 '^  qwen2.5:0.5b ' '$tmp/out' | grep -q '^    qwen2, Q8_0, [0-9.]* KiB file (ollama)' &&
	grep -A1 '^  tinyllama:latest ' '$tmp/out' | grep -q '^    llama, Q4_0, .* (ollama)' &&
	grep -A2 '^  hf.co/someone/gpt2-gguf:f16\$' '$tmp/out' | grep -q '^    gpt2, F16, .* (ollama)'"
check "a name longer than its column is on a line of its own, never cut" \
	sh -c "! grep -q 'gpt2-gguf:f ' '$tmp/out'"
check "LM Studio's folder and llama.cpp's cache are listed" \
	sh -c "grep -A2 '^  lmstudio:pub/repo/tiny-Q4_0.gguf\$' '$tmp/out' | grep -q '^   *gguf  *1  *2  *1 ' &&
	grep -A2 '^  lmstudio:pub/repo/tiny-Q4_0.gguf\$' '$tmp/out' | grep -q 'llama, Q4_0, .*(lm studio)' &&
	grep -A2 '^  llama.cpp:org_repo_tiny-q8_0.gguf\$' '$tmp/out' | grep -q 'qwen2, Q8_0, .*(llama.cpp)'"
check "the Ollama directory is named" grep -q "^Ollama  *$O\$" "$tmp/out"

run -c "load qwen2.5:0.5b; load tinyllama; load hf.co/someone/gpt2-gguf:f16; load lmstudio:pub/repo/tiny-Q4_0.gguf; load llama.cpp:org_repo_tiny-q8_0.gguf"
check "load opens each listed name (a missing tag is latest)" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c '^loaded' '$tmp/out') -eq 5 ]"
run qwen2.5:0.5b -c "models"
check "attnscope NAME opens it, and models marks it loaded" grep -q '^\* qwen2.5:0.5b ' "$tmp/out"
run qwen2.5:7b -t hi
check "a tag Ollama does not have: one line naming the manifest it looked for" \
	sh -c "[ $rc -ne 0 ] && grep -q 'qwen2.5:7b: no Ollama manifest .*/manifests/registry.ollama.ai/library/qwen2.5/7b' '$tmp/err' &&
	[ \$(wc -l <'$tmp/err') -eq 1 ]"

# hostile manifests
bad() { mkdir -p "$O/manifests/registry.ollama.ai/library/bad"; }
bad
printf '{"layers": [' >"$O/manifests/registry.ollama.ai/library/bad/json"
# jansson quotes the text near its error: here a newline (fuzz_ollama's find)
printf '{"laa}\\\n' >"$O/manifests/registry.ollama.ai/library/bad/quote"
manifest registry.ollama.ai/library/bad/climb "sha256:../../../../etc/passwd" 10
manifest registry.ollama.ai/library/bad/gone "sha256:$(printf '%064d' 7)" 10
manifest registry.ollama.ai/library/bad/short "sha256:$q" 99
ln -s loop2 "$O/manifests/registry.ollama.ai/library/bad/loop"
ln -s loop "$O/manifests/registry.ollama.ai/library/bad/loop2"
mkfifo "$O/manifests/registry.ollama.ai/library/bad/fifo"
echo '{"layers":[{"mediaType":"application/vnd.ollama.image.license","digest":"x"}]}' \
	>"$O/manifests/registry.ollama.ai/library/bad/nomodel"
ln -s "$O/blobs/../blobs" "$O/blobs/sha256-$(printf '%064d' 8)"
manifest registry.ollama.ai/library/bad/dirblob "sha256:$(printf '%064d' 8)" 10
run -c "models"
check "no line of it is longer than 80 columns" sh -c "! awk 'length > 80' '$tmp/out' | grep -q ."
check "models still lists the good ones and says in one line what is wrong with each bad one" \
	sh -c "[ $rc -eq 0 ] && grep -q '^  qwen2.5:0.5b ' '$tmp/out' &&
	grep -A1 '^  bad:json  *(ollama)' '$tmp/out' | grep -q '^    not a JSON manifest (line 1: ' &&
	grep -A1 '^  bad:climb  *(ollama)' '$tmp/out' | grep -q '^    model layer digest sha256:../../../../etc/passwd is not sha256:<64 hex>' &&
	grep -A1 '^  bad:gone  *(ollama)' '$tmp/out' | grep -q '^    blob sha256-000000000000...: missing (.ollama pull. fetches it)' &&
	grep -A1 '^  bad:short  *(ollama)' '$tmp/out' | grep -q '^    blob sha256-[0-9a-f]*... holds [0-9]* bytes, not 99 (partial download?)' &&
	grep -A1 '^  bad:loop  *(ollama)' '$tmp/out' | grep -qi '^    too many levels of symbolic links' &&
	grep -A1 '^  bad:fifo  *(ollama)' '$tmp/out' | grep -q '^    is a FIFO, not a regular file' &&
	grep -A1 '^  bad:nomodel  *(ollama)' '$tmp/out' | grep -q '^    no layer of mediaType application/vnd.ollama.image.model' &&
	grep -A1 '^  bad:dirblob  *(ollama)' '$tmp/out' | grep -q '^    blob sha256-0*... is a directory, not a file' &&
	grep -A1 '^  bad:quote  *(ollama)' '$tmp/out' | grep -q '^    not a JSON manifest (line 2: invalid escape near .*?.)\$'"
for t in json quote climb gone short loop fifo nomodel dirblob; do
	run "$O/blobs/sha256-$q" -c "load bad:$t"
	check "load bad:$t fails in one line naming the manifest" sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$tmp/err') -eq 1 ] &&
		grep -q '^-c:1: $O/manifests/registry.ollama.ai/library/bad/$t: ' '$tmp/err'"
done
run -c "load ../x:y"
check "a name with ../ is not taken as an Ollama name" \
	sh -c "[ $rc -ne 0 ] && ! grep -q 'Ollama' '$tmp/err'"
run -c "load lmstudio:pub/../../x.gguf"
check "an LM Studio name with .. is refused before any path is built" \
	sh -c "[ $rc -ne 0 ] && grep -q 'expected lmstudio:PUBLISHER/REPO/FILE.gguf' '$tmp/err'"

exit $((failures > 0))
