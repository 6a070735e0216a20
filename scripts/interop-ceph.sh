#!/usr/bin/env bash
# scripts/interop.sh on a CephFS export: Debian's libnfs-utils copies a
# 64 MiB file in and out byte-identical through a gonfsrdma built with the
# CephFS backend, reads a small file, and lists a 2,000-entry directory.
# Runs inside scripts/ceph-cluster.sh run (CEPH_CONF names the cluster);
# the server listens on loopback only, with rpcbind off.
# Usage: scripts/ceph-cluster.sh run scripts/interop-ceph.sh path/to/gonfsrdma-with-ceph
set -euo pipefail
bin=$(readlink -f "${1:?usage: $0 path/to/gonfsrdma (built with make build-ceph)}")
: "${CEPH_CONF:?CEPH_CONF is not set: run this under scripts/ceph-cluster.sh run}"
work=$(mktemp -d /tmp/gonfsrdma-interop-ceph.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

nfsport=20149
mountport=20148
cat >"$work/exports" <<EOX
/ceph -backend=cephfs,ceph_conf=$CEPH_CONF,fsid=7 127.0.0.1(rw,insecure,no_root_squash)
EOX
"$bin" serve --exports "$work/exports" --listen "127.0.0.1:$nfsport" --mount-listen "127.0.0.1:$mountport" \
	--no-portmap --no-nlm --rdma-listen "" --state-dir "$work/state" --log-level warn >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$nfsport") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$mountport") 2>/dev/null; then break; fi
	kill -0 "$pid" 2>/dev/null || { echo "--- server log"; cat "$work/server.log"; exit 1; }
	sleep 0.1
done
dir=interop-$$
url() { echo "nfs://127.0.0.1/ceph/$dir$1?nfsport=$nfsport&mountport=$mountport&version=3"; }
gurl() { echo "nfs://127.0.0.1:$nfsport/ceph/$dir$1?mountport=$mountport"; }
"$bin" mkdir "$(gurl "")"

pass=0 fail=0
check() {
	local name=$1; shift
	if "$@"; then echo "interop-ceph $name: PASS"; pass=$((pass + 1)); else echo "interop-ceph $name: FAIL"; fail=$((fail + 1)); fi
}

head -c $((64 << 20)) /dev/urandom >"$work/src.bin"
want=$(sha256sum <"$work/src.bin" | cut -d' ' -f1)
copy_in() { nfs-cp "$work/src.bin" "$(url /big.bin)" && [ "$("$bin" stat --json "$(gurl /big.bin)" | grep -o '"size": *[0-9]*' | grep -o '[0-9]*$')" = $((64 << 20)) ]; }
copy_out() { nfs-cp "$(url /big.bin)" "$work/back.bin" && [ "$(sha256sum <"$work/back.bin" | cut -d' ' -f1)" = "$want" ]; }
cat_small() {
	printf 'hello, libnfs\n' >"$work/small.txt"
	nfs-cp "$work/small.txt" "$(url /small.txt)" && [ "$(nfs-cat "$(url /small.txt)")" = "hello, libnfs" ]
}
# nfs-ls mounts the whole URL path: the entries are made (by gonfsrdma's
# own client) in a directory that nfs-ls then mounts and lists.
list_dir() {
	mkdir "$work/entries"
	(cd "$work/entries" && seq -f 'entry-%05g' 1 2000 | xargs touch)
	"$bin" cp -r -q "$work/entries" "$(gurl /)" || return 1
	local n
	n=$(nfs-ls "$(url /entries)" | grep -c ' entry-')
	[ "$n" = 2000 ] || { echo "nfs-ls listed $n entries, want 2000"; return 1; }
}

start=$(date +%s%N)
check "64 MiB copy in (nfs-cp local -> nfs)" copy_in
check "64 MiB copy out (nfs-cp nfs -> local), byte-identical" copy_out
check "small file (nfs-cat)" cat_small
check "2,000-entry directory (nfs-ls)" list_dir
echo "interop-ceph: $(( ($(date +%s%N) - start) / 1000000 )) ms"
if ((fail)); then
	echo "--- server log"; cat "$work/server.log"
fi
echo "interop-ceph: $pass passed, $fail failed"
((fail == 0))
