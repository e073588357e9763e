#!/bin/sh
# Installs the Debian packages attnscope builds and tests with, when missing.
# As root it runs apt-get; otherwise it prints the line to run.  librsvg2-dev
# and libcairo2-dev: `export ... --format png` rasterises the SVG figures;
# libcurl4-openssl-dev: `pull` downloads from the Hugging Face hub.
PKGS="build-essential pkg-config libopenblas-dev libjansson-dev libncurses-dev \
libreadline-dev libsqlite3-dev libpcre2-dev zlib1g-dev librsvg2-dev libcairo2-dev \
libcurl4-openssl-dev libcmocka-dev tmux sqlite3"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
		|| missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "make deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq $missing >/dev/null || {
		echo "make deps: apt-get install$missing failed" >&2; exit 1; }
else
	echo "make deps: missing packages; run:" >&2
	echo "  sudo apt-get update && sudo apt-get install -y$missing" >&2
	exit 1
fi
