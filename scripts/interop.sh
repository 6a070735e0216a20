#!/usr/bin/env bash
# Interop with an independent NFSv3 client: Debian's libnfs-utils copies a
# 64 MiB file in and out byte-identical and lists a 2,000-entry directory.
# The server listens on loopback only, with rpcbind off.
# Usage: scripts/interop.sh path/to/gonfsrdma
set -euo pipefail
bin=$(readlink -f "${1:-bin/gonfsrdma}")
work=$(mktemp -d /tmp/gonfsrdma-interop.XXXXXX)
export_dir=$work/export
mkdir -p "$export_dir"
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/exports" <<EOX
$export_dir 127.0.0.1(rw,insecure,no_root_squash,fsid=7)
EOX
# The server binds port 0 and logs the ports it got (its "listening"
# line, written once both listeners are bound): no port is picked here and
# bound later, which another process could take in between, and nothing
# beyond the shell is needed to find one.
"$bin" serve --exports "$work/exports" --listen 127.0.0.1:0 --mount-listen 127.0.0.1:0 \
	--no-portmap --rdma-listen "" --state-dir "$work/state" --log-level info >"$work/server.log" 2>&1 &
pid=$!
nfsport= mountport=
for _ in $(seq 300); do
	if line=$(grep -m1 -F '"nfs_tcp":' "$work/server.log"); then
		nfsport=$(sed -nE 's/.*"nfs_tcp": ?"127\.0\.0\.1:([0-9]+)".*/\1/p' <<<"$line")
		mountport=$(sed -nE 's/.*"mount_tcp_udp": ?"127\.0\.0\.1:([0-9]+)".*/\1/p' <<<"$line")
		break
	fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! [[ $nfsport =~ ^[0-9]+$ && $mountport =~ ^[0-9]+$ ]]; then
	echo "interop: the server exited or did not log its NFS and MOUNT ports within 30 s"
	echo "--- server log"; cat "$work/server.log"
	exit 1
fi
url() { echo "nfs://127.0.0.1$export_dir/$1?nfsport=$nfsport&mountport=$mountport&version=3"; }

pass=0 fail=0
check() {
	local name=$1; shift
	if "$@"; then echo "interop $name: PASS"; pass=$((pass + 1)); else echo "interop $name: FAIL"; fail=$((fail + 1)); fi
}

head -c $((64 << 20)) /dev/urandom >"$work/src.bin"
want=$(sha256sum <"$work/src.bin" | cut -d' ' -f1)
copy_in() { nfs-cp "$work/src.bin" "$(url big.bin)" && [ "$(sha256sum <"$export_dir/big.bin" | cut -d' ' -f1)" = "$want" ]; }
copy_out() { nfs-cp "$(url big.bin)" "$work/back.bin" && [ "$(sha256sum <"$work/back.bin" | cut -d' ' -f1)" = "$want" ]; }
cat_small() { printf 'hello, libnfs\n' >"$export_dir/small.txt" && [ "$(nfs-cat "$(url small.txt)")" = "hello, libnfs" ]; }
# nfs-ls mounts the whole URL path, so the 2,000 entries are listed at the
# export root.
list_dir() {
	(cd "$export_dir" && seq -f 'entry-%05g' 1 2000 | xargs touch)
	local n
	n=$(nfs-ls "nfs://127.0.0.1$export_dir?nfsport=$nfsport&mountport=$mountport&version=3" | grep -c ' entry-')
	[ "$n" = 2000 ] || { echo "nfs-ls listed $n entries, want 2000"; return 1; }
}

start=$(date +%s%N)
check "64 MiB copy in (nfs-cp local -> nfs)" copy_in
check "64 MiB copy out (nfs-cp nfs -> local)" copy_out
check "small file (nfs-cat)" cat_small
check "2,000-entry directory (nfs-ls)" list_dir
echo "interop: $(( ($(date +%s%N) - start) / 1000000 )) ms"
if ((fail)); then
	echo "--- server log"; cat "$work/server.log"
fi
echo "interop: $pass passed, $fail failed"
((fail == 0))
