#!/usr/bin/env bash
# bench-ceph.sh: gonfsrdma (backend=cephfs) against NFS-Ganesha with
# FSAL_CEPH (Debian nfs-ganesha-ceph), both exporting a directory of the
# same throwaway CephFS (scripts/ceph-cluster.sh), the same client
# (gonfsrdma bench over TCP) and workload, one server at a time, in the
# cluster's private network namespace and a private mount namespace (own
# /run for rpcbind and Ganesha). Repetitions alternate the servers (and
# which goes first); the summary is bench-peers' table (scripts/bench-peers
# -ceph): each phase's median, server CPU, the ratio to gonfsrdma. `make
# bench-peers` runs this script after its own servers for its CephFS table.
#
# Environment: BENCH_SIZE (256MiB), BENCH_BLOCK (1MiB), BENCH_QD (4),
# BENCH_RAND_QD (16), BENCH_RAND_TIME (5s), BENCH_FILES (1000),
# BENCH_REPS (3), BENCH_OUT (results directory; default a temp dir).
# Needs root; installs nfs-ganesha, nfs-ganesha-ceph and rpcbind with
# apt-get when missing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${BENCH_SIZE:-256MiB}
BLOCK=${BENCH_BLOCK:-1MiB}
QD=${BENCH_QD:-4}
RAND_QD=${BENCH_RAND_QD:-16}
RAND_TIME=${BENCH_RAND_TIME:-5s}
FILES=${BENCH_FILES:-1000}
REPS=${BENCH_REPS:-3}
GO=${GO:-go}
NFS_PORT=2049
MOUNT_PORT=20048
log() { echo "bench-ceph: $*" >&2; }

wait_port() { # PORT PID
	for _ in $(seq 1 600); do
		kill -0 "$2" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- inner --
# In the cluster's network namespace (CEPH_CONF set) and a private mount
# namespace.
if [ "${1:-}" = --inner ]; then
	WORK=$2 OUT=$3
	mount -t tmpfs tmpfs /run
	mkdir -p /run/ganesha /run/rpcbind
	pids=()
	trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
	rpcbind -w -f &
	pids+=($!)
	wait_port 111 "$!" || { log "rpcbind did not start"; exit 1; }

	# The export directories, made through a gonfsrdma exporting the
	# file system's root.
	printf '/root -backend=cephfs,ceph_conf=%s,fsid=1 127.0.0.1(rw,insecure,no_root_squash)\n' "$CEPH_CONF" >"$WORK/exports.root"
	"$WORK/gonfsrdma" serve --exports "$WORK/exports.root" --listen "127.0.0.1:$NFS_PORT" --mount-listen "127.0.0.1:$MOUNT_PORT" \
		--rdma-listen "" --no-portmap --no-nlm --state-dir "$WORK/state" --log-level warn >>"$OUT/setup.log" 2>&1 &
	pid=$!
	wait_port "$NFS_PORT" "$pid" || { log "gonfsrdma did not start: $(tail -3 "$OUT/setup.log")"; exit 1; }
	for rep in $(seq 1 "$REPS"); do
		for srv in gonfsrdma ganesha; do
			"$WORK/gonfsrdma" mkdir "nfs://127.0.0.1:$NFS_PORT/root/bench-$srv-$rep?mountport=$MOUNT_PORT"
		done
	done
	kill "$pid"
	wait "$pid" 2>/dev/null || true

	order=(gonfsrdma ganesha)
	for rep in $(seq 1 "$REPS"); do
		# Alternate which server goes first, so neither always meets the
		# cluster right after the other's deletes.
		for i in 0 1; do
			srv=${order[$(((i + rep - 1) % 2))]}
			dir=/bench-$srv-$rep
			case $srv in
			gonfsrdma)
				mnt=/bench
				printf '/bench -backend=cephfs,ceph_conf=%s,ceph_path=%s,fsid=2 127.0.0.1(rw,insecure,no_root_squash)\n' "$CEPH_CONF" "$dir" >"$WORK/exports"
				"$WORK/gonfsrdma" serve --exports "$WORK/exports" --listen "127.0.0.1:$NFS_PORT" --mount-listen "127.0.0.1:$MOUNT_PORT" \
					--rdma-listen "" --no-portmap --no-nlm --state-dir "$WORK/state" --log-level warn >>"$OUT/gonfsrdma.log" 2>&1 &
				;;
			ganesha)
				mnt=$dir # Ganesha's NFSv3 MOUNT takes the export's Path
				cat >"$WORK/ganesha.conf" <<GANESHA
NFS_CORE_PARAM {
	Protocols = 3;
	NFS_Port = $NFS_PORT;
	MNT_Port = $MOUNT_PORT;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; RecoveryBackend = fs; }
NFS_KRB5 { Active_krb5 = false; }
LOG { Default_Log_Level = WARN; }
CEPH { Ceph_Conf = $CEPH_CONF; }
EXPORT {
	Export_Id = 1;
	Path = $dir;
	Pseudo = /bench;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = CEPH; User_Id = "admin"; Filesystem = "cephfs"; }
}
GANESHA
				ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$OUT/ganesha.log" -p /run/ganesha/ganesha.pid &
				;;
			esac
			pid=$!
			pids+=("$pid")
			if ! wait_port "$NFS_PORT" "$pid" || ! wait_port "$MOUNT_PORT" "$pid"; then
				log "$srv did not start (logs in $OUT)"
				exit 1
			fi
			log "rep $rep/$REPS: $srv"
			if ! timeout 900 "$WORK/gonfsrdma" bench --port "$NFS_PORT" --mountport "$MOUNT_PORT" \
				--size "$SIZE" --block "$BLOCK" --qd "$QD" --rand-qd "$RAND_QD" --rand-time "$RAND_TIME" \
				--files "$FILES" --uid 0 --gid 0 --server-pid "$pid" \
				--json "$OUT/$srv.$rep.json" "127.0.0.1:$mnt" >"$OUT/$srv.$rep.txt" 2>"$OUT/$srv.$rep.err"; then
				log "$srv rep $rep FAILED: $(tr '\r' '\n' <"$OUT/$srv.$rep.err" | tail -2)"
				exit 1
			fi
			cat "$OUT/$srv.$rep.txt" >&2
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$NFS_PORT") 2>/dev/null || break; sleep 0.1; done
		done
	done
	exit 0
fi

# ---------------------------------------------------------------- outer --
[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
if ! command -v ganesha.nfsd >/dev/null || ! ls /usr/lib/*/ganesha/libfsalceph.so >/dev/null 2>&1 || ! command -v rpcbind >/dev/null; then
	log "installing nfs-ganesha nfs-ganesha-ceph rpcbind"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nfs-ganesha nfs-ganesha-ceph rpcbind >&2
fi
WORK=$(mktemp -d /tmp/bench-ceph.XXXXXX)
OUT=${BENCH_OUT:-$WORK/results}
# With BENCH_OUT the work directory (binary, configuration, state) holds
# nothing to keep.
[ -z "${BENCH_OUT:-}" ] || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT" "$WORK/state"
log "building gonfsrdma with the CephFS backend"
(cd "$ROOT" && CGO_ENABLED=1 $GO build -tags ceph -o "$WORK/gonfsrdma" ./cmd/gonfsrdma)
start=$(date +%s)
"$ROOT/scripts/ceph-cluster.sh" run unshare -m --propagation private "$0" --inner "$WORK" "$OUT"

echo
echo "== bench-ceph: $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"), $(ganesha.nfsd -v 2>/dev/null | head -1), gonfsrdma $(cd "$ROOT" && git rev-parse --short HEAD)"
echo "== one-node CephFS (memstore OSD), NFSv3 over loopback TCP, size $SIZE block $BLOCK qd $QD, rand qd $RAND_QD, $FILES files, medians of $REPS"
(cd "$ROOT" && $GO run ./scripts/bench-peers -ceph "$OUT")
echo "== results (JSON per run, logs): $OUT; took $(($(date +%s) - start)) s"
