#!/usr/bin/env bash
# A throwaway one-node Ceph cluster for the CephFS backend's tests: one
# monitor, one manager, one memstore OSD and one MDS, "auth none", pools of
# size 1, bound to 127.0.0.1, everything (config, data, logs, sockets, PIDs)
# inside one directory. Written for this project; it needs ceph-mon,
# ceph-mgr, ceph-osd, ceph-mds and the ceph CLI (scripts/deps.sh).
#
#   ceph-cluster.sh start DIR    make a cluster in DIR (created; must not
#                                exist or be empty), wait until its CephFS
#                                "cephfs" has an active MDS, print DIR/ceph.conf
#   ceph-cluster.sh stop DIR     stop the daemons started in DIR (by the PIDs
#                                recorded there), then remove DIR
#   ceph-cluster.sh run CMD...   in a new network namespace (loopback only):
#                                start a cluster in a temporary directory, run
#                                CMD with CEPH_CONF set, stop the cluster,
#                                remove the namespace; exits with CMD's status
#
# CEPH_MEMSTORE_BYTES sizes the OSD's in-memory store (default 2 GiB; runs
# that write many 256 MiB files, as bench-ceph-read.sh MODE=bench does,
# need more).
#
# start/stop bind the well-known monitor ports (3300, 6789) of 127.0.0.1 of
# the network namespace they run in, so run them in one of their own (as
# "run" does) when anything else on the machine might use Ceph.
set -euo pipefail

die() { echo "ceph-cluster: $*" >&2; exit 1; }

# How long a step may take before the start fails (seconds).
STEP_TIMEOUT=${CEPH_CLUSTER_TIMEOUT:-60}

ceph_cli() { ceph --conf "$conf" --connect-timeout 10 "$@"; }

# wait_for DESC CMD...: retry CMD every 0.2 s until it succeeds; says on
# stderr how long the cluster has taken so far.
wait_for() {
	local desc=$1 deadline=$((SECONDS + STEP_TIMEOUT))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "timed out after ${STEP_TIMEOUT}s waiting for $desc (logs: $dir/log)"
		sleep 0.2
	done
	echo "ceph-cluster: $desc after $((SECONDS - t_start)) s" >&2
}

# daemon NAME CMD...: start a daemon in the foreground of a background job
# and record its PID.
daemon() {
	local name=$1
	shift
	"$@" -f --conf "$conf" >"$dir/log/$name.out" 2>&1 &
	echo $! >"$dir/pids/$name"
}

fs_active() { ceph_cli mds stat 2>/dev/null | grep -q '=up:active'; }
pgs_clean() {
	local s
	s=$(ceph_cli pg stat 2>/dev/null) || return 1
	[[ $s =~ ([0-9]+)\ pgs:\ ([0-9]+)\ active\+clean ]] && [[ ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]
}

start() {
	dir=$1
	[ -n "$dir" ] || die "start needs a directory"
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir is not empty"
	fi
	for t in ceph ceph-mon ceph-mgr ceph-osd ceph-mds monmaptool uuidgen; do
		command -v "$t" >/dev/null || die "$t not found: run scripts/deps.sh"
	done
	t_start=$SECONDS
	mkdir -p "$dir"/{log,run,pids,mon.a,mgr.x,osd.0,mds.a,mgr-modules}
	dir=$(cd "$dir" && pwd)
	conf=$dir/ceph.conf
	local fsid osd_uuid
	fsid=$(uuidgen)
	osd_uuid=$(uuidgen)
	# $name and $cluster are Ceph's own metavariables, expanded per daemon.
	cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon allow pool delete = true
mon data avail warn = 1
auth allow insecure global id reclaim = false
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
mon cluster log file = $dir/log/cluster.log
crash dir = $dir/log/crash
mon data = $dir/\$name
mgr data = $dir/\$name
osd data = $dir/\$name
mds data = $dir/\$name
keyring = $dir/\$name/keyring
[osd]
osd objectstore = memstore
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-2147483648}
osd max object name len = 256
osd max object namespace len = 64
[mgr]
# No Python modules (an empty module directory): the manager's C++ core
# alone keeps the placement-group and space statistics that libcephfs's
# statfs reads, and starts in a second instead of half a minute.
mgr module path = $dir/mgr-modules
EOF
	monmaptool --create --fsid "$fsid" --addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' "$dir/monmap" >/dev/null
	ceph-mon --conf "$conf" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mkfs.mon.out" 2>&1 ||
		die "ceph-mon --mkfs failed: $(cat "$dir/log/mkfs.mon.out")"
	daemon mon.a ceph-mon -i a
	wait_for "the monitor" ceph_cli mon stat
	daemon mgr.x ceph-mgr -i x
	local id
	id=$(ceph_cli osd new "$osd_uuid")
	[ "$id" = 0 ] || die "osd new gave id $id"
	ceph-osd --conf "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" >"$dir/log/mkfs.osd.out" 2>&1 ||
		die "ceph-osd --mkfs failed: $(cat "$dir/log/mkfs.osd.out")"
	daemon osd.0 ceph-osd -i 0
	ceph_cli osd pool create cephfs_metadata 8 >/dev/null 2>&1
	ceph_cli osd pool create cephfs_data 8 >/dev/null 2>&1
	ceph_cli fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>&1
	# Files up to 16 TiB (CephFS's default limit is 1 TiB, where NFS
	# clients and the conformance suite write at 2^40).
	ceph_cli fs set cephfs max_file_size 17592186044416 >/dev/null
	daemon mds.a ceph-mds -i a
	wait_for "all placement groups active+clean" pgs_clean
	wait_for "an active MDS for cephfs" fs_active
	wait_for "the manager (file system statistics)" ceph_cli mgr stat -f json
	echo "$conf"
}

# alive PID CONF: PID is still one of this cluster's daemons (its command
# line names this cluster's config), so a reused PID is never signalled.
alive() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2"; }

stop() {
	dir=$1
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	conf=$dir/ceph.conf
	local f pid pids=()
	for f in mds.a osd.0 mgr.x mon.a; do
		[ -f "$dir/pids/$f" ] || continue
		pid=$(cat "$dir/pids/$f")
		if alive "$pid" "$conf"; then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	local deadline=$((SECONDS + 15))
	for pid in "${pids[@]}"; do
		while alive "$pid" "$conf" && ((SECONDS < deadline)); do sleep 0.1; done
		if alive "$pid" "$conf"; then kill -KILL "$pid" 2>/dev/null || true; fi
	done
	for pid in "${pids[@]}"; do
		while alive "$pid" "$conf"; do sleep 0.1; done
	done
	rm -rf "$dir"
}

run() {
	(($#)) || die "run needs a command"
	local ns tmp rc=0
	ns=gonfsrdma-ceph-$$
	tmp=$(mktemp -d /tmp/gonfsrdma-ceph.XXXXXX)
	ip netns add "$ns"
	# shellcheck disable=SC2064 # expand now: these are this run's names
	trap "ip netns exec '$ns' '$0' stop '$tmp/cluster' || true; ip netns del '$ns' 2>/dev/null || true; rm -rf '$tmp'" EXIT
	ip netns exec "$ns" ip link set lo up
	local t0=$SECONDS
	if ! ip netns exec "$ns" "$0" start "$tmp/cluster" >/dev/null; then
		for f in "$tmp"/cluster/log/*.log "$tmp"/cluster/log/*.out; do
			[ -f "$f" ] && { echo "== $f (tail)"; tail -n 20 "$f"; } >&2
		done
		die "the cluster did not start"
	fi
	echo "ceph-cluster: cluster up in $((SECONDS - t0)) s" >&2
	ip netns exec "$ns" env CEPH_CONF="$tmp/cluster/ceph.conf" "$@" || rc=$?
	return $rc
}

case ${1:-} in
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
run) shift; run "$@" ;;
*) die "usage: $0 start DIR | stop DIR | run CMD..." ;;
esac
