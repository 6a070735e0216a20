#!/usr/bin/env bash
# fio-nfs.sh: print the path of a fio binary with its libnfs engine
# ("nfs"), building it first when the cache has none.
#
# Debian's fio package links no libnfs, so this takes fio's source from the
# Debian archive (`apt-get source --download-only fio` with a private apt
# configuration holding one deb-src entry: the host's apt sources and lists
# are left as they are; the download is checked against the archive's
# signed index), applies scripts/fio-nfs-getevents-min.patch (the engine
# returned from getevents before `min` events were done, so at a job's end
# fio tore the context down with I/O in flight: "Failed NFS
# operation(code:-14)"), and builds it with --enable-libnfs against
# libnfs-dev (installed under the apt lock when missing).
#
# The binary is cached in FIO_NFS_CACHE (default /var/cache/gonfsrdma),
# in a directory named after the patch's and this script's hashes, so a
# change to either builds again and repeated runs do not. Needs root for
# apt-get. Usage: scripts/fio-nfs.sh LOG_FILE
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PATCH=$ROOT/scripts/fio-nfs-getevents-min.patch
LOG=${1:-/dev/null}
CACHE=${FIO_NFS_CACHE:-/var/cache/gonfsrdma}
key=$(cat "$PATCH" "$0" | sha256sum | cut -c1-12)
DIR=$CACHE/fio-nfs-$key

if [ -x "$DIR/fio" ] && "$DIR/fio" --enghelp=nfs >/dev/null 2>&1; then
	echo "$DIR/fio"
	exit 0
fi

: >"$LOG"
if [ ! -e /usr/include/nfsc/libnfs.h ]; then
	flock /tmp/gonfsrdma-apt.lock sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnfs-dev' >>"$LOG" 2>&1 || {
		echo "fio-nfs: apt-get install libnfs-dev failed: $(tail -1 "$LOG")" >&2
		exit 1
	}
fi
tmp=$(mktemp -d /tmp/fio-nfs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/src"
cat >"$tmp/deb-src.sources" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
apt=(apt-get -o "Dir::Etc::SourceList=$tmp/deb-src.sources" -o "Dir::Etc::SourceParts=$tmp/none"
	-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache")
echo "fio-nfs: fetching fio's source (Debian bookworm) into $tmp" >&2
if ! flock /tmp/gonfsrdma-apt.lock "${apt[@]}" update >>"$LOG" 2>&1 ||
	! (cd "$tmp/src" && "${apt[@]}" source --download-only fio) >>"$LOG" 2>&1; then
	echo "fio-nfs: apt-get source fio failed: $(tail -1 "$LOG")" >&2
	exit 1
fi
orig=$(find "$tmp/src" -name 'fio_*.orig.tar.*' ! -name '*.asc' | head -1)
tar -xf "$orig" -C "$tmp"
src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' | head -1)
echo "fio-nfs: building $(basename "$src") with the libnfs engine" >&2
(
	cd "$src"
	patch -p1 <"$PATCH"
	./configure --enable-libnfs --disable-native
	grep -q '^CONFIG_LIBNFS=y' config-host.mak || {
		echo "configure found no libnfs" >&2
		exit 1
	}
	make -j"$(nproc)" fio
) >>"$LOG" 2>&1 || {
	echo "fio-nfs: build failed: $(tail -1 "$LOG")" >&2
	exit 1
}
"$src/fio" --enghelp=nfs >/dev/null
mkdir -p "$DIR"
cp "$src/fio" "$DIR/fio.tmp"
mv "$DIR/fio.tmp" "$DIR/fio"
basename "$orig" >"$DIR/source"
echo "$DIR/fio"
