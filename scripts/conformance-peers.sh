#!/usr/bin/env bash
# conformance-peers.sh: the conformance suite (gonfsrdma conformance, TCP)
# against NFS-Ganesha (FSAL VFS, NFSv3 only, Debian's rpcbind) and, for
# comparison in the same run, against gonfsrdma itself (its own rpcbind).
# Each server runs alone in its own private network and mount namespace
# (unshare -n -m, loopback only) with two exports: a read-write one for
# the suite and a read-only one holding `file` and `dir` (--roexport).
# The rdma tests OMIT over TCP.
#
# Environment: CONF_SERVERS ("ganesha gonfsrdma"), CONF_OUT (results
# directory; default a temp dir, printed at the end), CONF_SELECT (flags
# or codes to run; default all).
# Output per server in CONF_OUT: NAME.json, NAME.txt (the suite's lines),
# NAME.log (server log). Needs root (unshare, apt-get).
# Exit status: 0 when every server ran to its closing line (test FAILs
# against a peer server are results, not errors of this script).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/peers.sh
. "$ROOT/scripts/lib/peers.sh"
SERVERS=${CONF_SERVERS:-"ganesha gonfsrdma"}
SELECT=${CONF_SELECT:-all}
GO=${GO:-go}
NFS_PORT=2049
MOUNT_PORT=20048

log() { echo "conformance-peers: $*" >&2; }

# ---------------------------------------------------------------- inner --
# Runs inside `unshare -n -m`: no network but our loopback, /run private.
if [ "${1:-}" = --inner ]; then
	SRV=$2
	WORK=$3
	OUT=$4
	peers_inner_setup

	# The exports: rw (empty, writable by everyone) and ro (a file, a dir).
	exp=$WORK/exp-$SRV/export
	ro=$WORK/exp-$SRV/roexport
	rm -rf "${WORK:?}/exp-$SRV"
	mkdir -p "$exp" "$ro/dir"
	chmod 0777 "$exp" "$ro/dir"
	printf 'read-only data\n' >"$ro/file"
	chmod 0666 "$ro/file"

	case $SRV in
	ganesha)
		# Ganesha registers MOUNT and NFS with rpcbind at start: rpcbind first.
		rpcbind -w -f &
		pids+=($!)
		if ! wait_port 111 "$!"; then
			log "ganesha: rpcbind did not start"
			exit 1
		fi
		mkdir -p /var/lib/nfs/ganesha
		sed -e "s#@EXPORT@#$exp#" -e "s#@ROEXPORT@#$ro#" "$WORK/ganesha.conf.in" >"$WORK/ganesha.conf"
		ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$OUT/ganesha.log" -p /run/ganesha/ganesha.pid &
		SRV_PID=$!
		;;
	gonfsrdma)
		cat >"$WORK/exports" <<EOX
$exp 127.0.0.1(rw,insecure,no_root_squash)
$ro 127.0.0.1(ro,insecure,no_root_squash)
EOX
		"$WORK/gonfsrdma" serve --exports "$WORK/exports" --listen "127.0.0.1:$NFS_PORT" \
			--mount-listen "127.0.0.1:$MOUNT_PORT" --portmap-listen "127.0.0.1:111" --rdma-listen "" \
			--state-dir "$WORK/state" --log-level warn >>"$OUT/gonfsrdma.log" 2>&1 &
		SRV_PID=$!
		;;
	*)
		log "unknown server $SRV"
		exit 1
		;;
	esac
	pids+=("$SRV_PID")
	if ! wait_port "$NFS_PORT" "$SRV_PID" || ! wait_port "$MOUNT_PORT" "$SRV_PID" || ! wait_port 111 "$SRV_PID"; then
		log "$SRV: did not start; see $OUT/$SRV.log"
		tail -5 "$OUT/$SRV.log" >&2 || true
		exit 1
	fi
	# Both register with rpcbind after they listen: wait for MOUNT v3/tcp.
	for _ in $(seq 1 100); do
		rpcinfo -T tcp 127.0.0.1 100005 3 >/dev/null 2>&1 && break
		sleep 0.1
	done
	rpcinfo -p 127.0.0.1 >"$OUT/$SRV.rpcinfo" 2>&1 || true
	log "$SRV (pid $SRV_PID): running the suite"
	read -ra sel <<<"$SELECT"
	rc=0
	# No --port/--mountport: the suite asks rpcbind, as a client would.
	timeout 900 "$WORK/gonfsrdma" conformance --maketree --roexport "$ro" \
		--json "$OUT/$SRV.json" --junit "$OUT/$SRV.xml" \
		"127.0.0.1:$exp" "${sel[@]}" >"$OUT/$SRV.txt" 2>"$OUT/$SRV.err" || rc=$?
	echo "$rc" >"$OUT/$SRV.rc"
	if ! kill -0 "$SRV_PID" 2>/dev/null; then
		log "$SRV: the server died during the run"
		echo died >"$OUT/$SRV.died"
	fi
	exit 0
fi

# ---------------------------------------------------------------- outer --
if [ "$(id -u)" != 0 ]; then
	echo "conformance-peers: needs root (network namespaces, apt-get)" >&2
	exit 1
fi
WORK=$(mktemp -d /tmp/conformance-peers.XXXXXX)
OUT=${CONF_OUT:-$WORK/results}
mkdir -p "$OUT" "$WORK/state"
OUT=$(cd "$OUT" && pwd)
trap 'rm -rf "${WORK:?}/exp-"*' EXIT
start=$(date +%s)

log "building gonfsrdma"
(cd "$ROOT" && CGO_ENABLED=1 $GO build -o bin/gonfsrdma ./cmd/gonfsrdma)
cp "$ROOT/bin/gonfsrdma" "$WORK/gonfsrdma"

if [[ " $SERVERS " == *" ganesha "* ]]; then
	if ! why=$(ganesha_install "$OUT/apt.log"); then
		log "$why"
		exit 1
	fi
	dpkg-query -W -f='nfs-ganesha ${Version}\n' nfs-ganesha >"$OUT/ganesha.version" 2>/dev/null || true
	# VFS exports with no root squash (the suite runs as root and as uid 4242).
	{
		ganesha_core "$NFS_PORT" "$MOUNT_PORT"
		ganesha_export 1 @EXPORT@ /rw RW "TCP, UDP"
		ganesha_export 2 @ROEXPORT@ /ro RO "TCP, UDP"
	} >"$WORK/ganesha.conf.in"
fi

for srv in $SERVERS; do
	log "$srv: in a private network namespace"
	CONF_SELECT=$SELECT unshare -n -m --propagation private "$0" --inner "$srv" "$WORK" "$OUT" || log "$srv: the run failed"
done

echo
echo "== conformance-peers: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), gonfsrdma $(cd "$ROOT" && git rev-parse --short HEAD), $(cat "$OUT/ganesha.version" 2>/dev/null || echo 'nfs-ganesha -')"
status=0
for srv in $SERVERS; do
	if [ -s "$OUT/$srv.txt" ] && tail -1 "$OUT/$srv.txt" | grep -qE '^[0-9]+ passed, [0-9]+ failed'; then
		grep -E ': (FAIL|WARN)$' -A1 "$OUT/$srv.txt" | sed "s/^/$srv: /" | grep -v -- '^[a-z]*: --$' || true
		extra=""
		[ -e "$OUT/$srv.died" ] && extra=" (the server died during the run)"
		echo "== $srv: $(tail -1 "$OUT/$srv.txt")$extra"
	else
		echo "== $srv: no result ($(tail -1 "$OUT/$srv.err" 2>/dev/null || echo 'did not run'))"
		status=1
	fi
done
echo "== results (JSON, JUnit, text per server, server logs): $OUT; took $(($(date +%s) - start)) s"
exit $status
