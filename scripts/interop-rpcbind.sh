#!/usr/bin/env bash
# gonfsrdma beside the system's rpcbind (Debian's rpcbind(8), not the
# embedded one): started while rpcbind owns port 111, it registers NFS,
# MOUNT, NLM (100021 v1, v3, v4) and NSM (100024 v1) over TCP and UDP
# there, at the ports it serves; libnfs finds the export through that
# rpcbind alone (no ports given); lockd's NULL answers through the
# registration; SIGTERM removes every registration; --no-nlm registers no
# NLM or NSM. Everything runs in a network namespace and a mount namespace
# of its own (a private /run for rpcbind's socket), as root.
# Usage: scripts/interop-rpcbind.sh path/to/gonfsrdma
set -euo pipefail
bin=$(readlink -f "${1:-bin/gonfsrdma}")
if [ "$(id -u)" != 0 ]; then
	echo "interop-rpcbind: needs root (network and mount namespaces, rpcbind)" >&2
	exit 1
fi
command -v rpcbind >/dev/null || { echo "interop-rpcbind: no rpcbind (make deps installs it)" >&2; exit 1; }

if [ "${INTEROP_RPCBIND_INNER:-}" != 1 ]; then
	ns=gonfsrdma-rpcbind-$$
	ip netns add "$ns"
	trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
	INTEROP_RPCBIND_INNER=1 ip netns exec "$ns" unshare -m "$0" "$bin"
	exit
fi

# Inside: private /run, loopback up, the system rpcbind.
mount -t tmpfs none /run
mkdir -p /run/rpcbind
ip link set lo up
work=$(mktemp -d /tmp/gonfsrdma-interop-rpcbind.XXXXXX)
rpcbind -f &
rb=$!
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	kill "$rb" 2>/dev/null || true
	wait "$rb" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done

mkdir -p "$work/export"
echo "$work/export 127.0.0.1(rw,insecure,no_root_squash,fsid=9)" >"$work/exports"
pass=0 fail=0
check() {
	local name=$1; shift
	if "$@"; then echo "interop-rpcbind $name: PASS"; pass=$((pass + 1)); else echo "interop-rpcbind $name: FAIL"; fail=$((fail + 1)); fi
}
serve() { # extra flags; waits until NFS, MOUNT and rpcbind's view are up
	local seen
	seen=$(grep -c "registered with it" "$work/server.log" 2>/dev/null) || seen=0
	"$bin" serve --exports "$work/exports" --rdma-listen "" --state-dir "$work/state" "$@" >>"$work/server.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		(($(grep -c "registered with it" "$work/server.log") > seen)) && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop() { kill -TERM "$pid" && wait "$pid" || true; pid=; }
# has PROG VERS PROTO PORT: rpcbind maps it to exactly that port
has() { rpcinfo -p 127.0.0.1 | awk -v p="$1" -v v="$2" -v t="$3" -v port="$4" '$1 == p && $2 == v && $3 == t && $4 == port { f = 1 } END { exit !f }'; }
registered_all() {
	local v t
	for t in tcp udp; do
		for v in 1 3 4; do has 100021 "$v" "$t" 4045 || { echo "no nlockmgr v$v/$t at 4045"; return 1; }; done
		has 100024 1 "$t" 4046 || { echo "no status v1/$t at 4046"; return 1; }
		has 100005 3 "$t" 20048 || { echo "no mountd v3/$t at 20048"; return 1; }
	done
	has 100003 3 tcp 2049 || { echo "no nfs v3/tcp at 2049"; return 1; }
}
none_of() { # progs...: none registered
	local p
	for p in "$@"; do
		if rpcinfo -p 127.0.0.1 | awk -v p="$p" '$1 == p { f = 1 } END { exit !f }'; then echo "program $p still registered"; return 1; fi
	done
}
nlm_null() { rpcinfo -T tcp 127.0.0.1 100021 4 >/dev/null && rpcinfo -T udp 127.0.0.1 100024 1 >/dev/null; }
libnfs_ls() { # no ports in the URL: libnfs asks rpcbind on 111 for MOUNT and NFS
	touch "$work/export/through-rpcbind"
	nfs-ls "nfs://127.0.0.1$work/export?version=3" | grep -q ' through-rpcbind'
}

check "gonfsrdma starts beside the system rpcbind" serve
check "NFS, MOUNT, NLM v1/v3/v4 and NSM v1 registered over TCP and UDP at the served ports" registered_all
check "NLM v4 (TCP) and NSM v1 (UDP) answer NULL through the registration" nlm_null
check "libnfs lists the export through the system rpcbind (no ports given)" libnfs_ls
stop
check "SIGTERM removes every registration" none_of 100003 100005 100021 100024
check "rpcbind itself stays registered" has 100000 2 tcp 111
check "gonfsrdma --no-nlm starts beside the system rpcbind" serve --no-nlm
check "--no-nlm registers no NLM and no NSM" none_of 100021 100024
check "--no-nlm still registers NFS" has 100003 3 tcp 2049
stop
if ((fail)); then
	echo "--- rpcinfo -p"; rpcinfo -p 127.0.0.1 || true
	echo "--- server log"; cat "$work/server.log"
fi
echo "interop-rpcbind: $pass passed, $fail failed"
((fail == 0))
