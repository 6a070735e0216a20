#!/bin/bash
# Guest side of the kernel-VM harness: the two-host lab. The same script runs
# in both guests (from each guest's 9p share as /share/guest/test.sh, started
# by the guest's /init; configuration in /share/guest/config, ROLE=server or
# ROLE=client).
#
# The server guest (10.99.0.1) only serves its control channel: a TCP
# listener on port $CTL_PORT (busybox `nc -ll -e guest/ctl.sh`) that runs one
# function of this script per connection (start, stop, kill and restart a
# server, the size of a file in the export, the hardware RDMA tests) and
# sends back its output, its reason lines and its exit status. It stops when
# the client sends ctl_stop.
#
# The client guest (10.99.0.2) drives the run: it generates the source data
# once, then for each server in $SERVERS (knfsd first, as reference, then
# gonfsrdma) has the server guest start it, mounts it with its own kernel NFS
# client over each transport across the emulated link, runs the checked
# workload and has it stopped. Client and server never share a kernel.
#
# ROLE=both is the one-guest run (run.sh, GONFSRDMA_KERNEL_ONE_GUEST): one
# guest is server and client at once (rxe on a dummy device), `remote` runs
# the function in place, and every row name starts with $ROW_PREFIX.
#
# Every check is a "step" run in a subshell of its own process group
# (set -m) with a watchdog, so a step that hangs on a dead hard mount is
# killed and reported without stopping the run. A step fails by calling
# `fail "reason"` (exit 1); `note` attaches a remark to a passing row;
# `skip` (exit 77) marks it skipped. Step times come from bash's
# $EPOCHREALTIME (the same clock as `date +%s%N`, without a fork: process
# start-up costs ~150 ms under emulation).
#
# Each server gets an equal share of the guest's time limit; steps that
# would start after its share ran out are reported as FAIL "not run", and
# the server's teardown (umount, stop) always runs.
#
# Results (on each guest's share): client: results/rows.tsv (server,
# transport, step, PASS/FAIL/SKIP, milliseconds, reason), results/mounts.txt,
# results/chunks.txt, results/workload.log; server: results/workload.log (the
# control commands and their output), results/gonfsrdma.log, the hardware
# test logs. Console lines starting with "@@ " are what the host shows live.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C

CONF=/share/guest/config
# shellcheck source=/dev/null
source "$CONF"
: "${SERVERS:?}" "${TRANSPORTS:=rdma tcp}" "${RUN_VERBS:=0}" "${RUN_RPCRDMA:=0}" "${STEP_TIMEOUT:=120}" "${BIG_TIMEOUT:=300}"
: "${BIG_MB:=64}" "${UCP_MB:=$BIG_MB}" "${KILL_MB:=32}" "${SIZES:=0 1 1023 1024 4095 4096 4097 65535 65536 1048577}"
: "${GONFSRDMA_ARGS:=}" "${SERVER_WAIT:=60}" "${ROLE:=client}" "${CTL_PORT:=7000}"
: "${GONF_TRANSPORTS=$TRANSPORTS}" "${CONF_TRANSPORTS=$TRANSPORTS}" "${ROW_PREFIX:=}"
: "${LOCK_SERVERS=knfsd gonfsrdma}" "${LOCK_FULL=tcp}" "${GRACE:=10}" "${NETEM_SERVERS:=}" "${NETEM_LOSS:=0.1 1 5}" "${OUTAGE:=10}" "${NETEM_ONLY:=0}"
: "${NETEM_MB:=$BIG_MB}" "${NETEM_ROWS=rw tar outage}" "${NETEM_REORDER:=1}" "${NIC_RESET_SERVERS=}"
: "${WORKLOAD:=1}" "${CONFORMANCE:=1}" "${CONF_SERVERS=knfsd gonfsrdma}" "${CONF_TIMEOUT:=300}" "${CONF_RDMA_LIMIT:=60}" "${BENCH:=1}" "${BENCH_TIMEOUT:=240}"
: "${BENCH_ARGS:=--size 64MiB --block 1MiB --qd 4 --rand-qd 16 --rand-time 5s --files 500}"

RES=/share/results
ROWS=$RES/rows.tsv
LOG=$RES/workload.log
ADDR=10.99.0.1 # the server guest; the client guest is 10.99.0.2
MNT=/mnt/nfs
EXP=/export
ROEXP=/export-ro # read-only export for the conformance suite's rofs tests
SRC=/tmp/src
TREE=/tmp/tree
BIN=/share/bin/gonfsrdma
LOCKTEST=/share/bin/locktest
GLOG=$RES/gonfsrdma.log
PIDFILE=/run/gonfsrdma.pid
NFSD_THREADS=4
KNFSD_MAX_BLOCK=${KNFSD_MAX_BLOCK:-1048576}
: "${RMRF:=1}" # the rm -rf rows: 1 in the workload, 0 none, only (mount, rm -rf rows, umount)
# shellcheck source=rows_rmrf.sh
source "$(dirname "${BASH_SOURCE[0]}")/rows_rmrf.sh" # rmrf_rows: rm -rf of large directories

console() { echo "$*" >/dev/console; }
now() { echo "${EPOCHREALTIME%.*}"; }
REASON=${REASON:-/tmp/reason} # the current step's reason lines (ctl.sh sets its own)
fail() { printf '%s\n' "$*" >"$REASON"; echo "FAIL: $*"; exit 1; }
# reason_first REASON: put REASON before the step's notes (a row shows
# the first 400 bytes of them)
reason_first() {
	local notes
	notes=$(cat "$REASON" 2>/dev/null)
	printf '%s\n%s\n' "$*" "$notes" >"$REASON"
}
# fail_noted REASON: fail, keeping the step's notes after the reason
fail_noted() { reason_first "$*"; echo "FAIL: $*"; exit 1; }
note() { printf '%s\n' "$*" >>"$REASON"; echo "note: $*"; }
skip() { printf '%s\n' "$*" >"$REASON"; echo "SKIP: $*"; exit 77; }
# known_fail REASON: the reference server's (knfsd's) own documented
# failure of a row that gonfsrdma must pass: status KNOWN, not counted as
# a failure, its reason printed with the row; from any other server it is
# a failure
known_fail() {
	[[ $SERVER == knfsd ]] || fail "$*"
	reason_first "$*"
	echo "KNOWN: $*"
	exit 78
}
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
sum_of() { local h; h=$(sha256sum <"$1") || return 1; echo "${h%% *}"; }
declare -A SUM=()
load_sums() { local h f; while read -r h f; do SUM[${f##*/}]=$h; done <"$SRC/SUMS"; }
want_sum() { echo "${SUM[$1]:-missing-checksum-$1}"; }
fsize() { stat -c %s "$1"; }
is_nfs_mounted() { local d m t r; while read -r d m t r; do [[ $m == "$MNT" && $t == nfs ]] && return 0; done </proc/mounts; return 1; }
is_mounted() { local d m r; while read -r d m r; do [[ $m == "$1" ]] && return 0; done </proc/mounts; return 1; }
need_mount() { is_nfs_mounted || fail "$MNT is not an NFS mount"; }

# ---------------------------------------------------------- control channel

# remote FUNC ARGS...: run FUNC of this script on the server guest (as the
# current SERVER and XPORT) through the control channel. Its output goes to
# stdout, its reason lines (fail/note/skip there) are appended to this
# step's reason; the exit status is FUNC's (111: no answer from the server
# guest). A step calls `remote X || exit $?` to fail with the server's reason.
remote() {
	local line rc=111 cmd a
	if [[ $ROLE == both ]]; then # the one-guest run: the server is here
		("$@")
		return
	fi
	printf -v cmd 'SERVER=%q XPORT=%q' "${SERVER:-}" "${XPORT:-}"
	for a in "$@"; do printf -v cmd '%s %q' "$cmd" "$a"; done
	if ! exec 5<>"/dev/tcp/$ADDR/$CTL_PORT"; then
		printf 'no answer from the server guest control channel (%s:%s) for: %s\n' "$ADDR" "$CTL_PORT" "$*" >>"$REASON"
		return 111
	fi
	printf '%s\n' "$cmd" >&5
	while IFS= read -r line <&5; do
		case $line in
		"@@rc "*) rc=${line#@@rc } ;;
		"@@reason "*) printf 'server: %s\n' "${line#@@reason }" >>"$REASON" ;;
		*) printf '%s\n' "$line" ;;
		esac
	done
	exec 5<&-
	((rc == 111)) && printf 'the server guest closed the control channel without an exit status for: %s\n' "$*" >>"$REASON"
	return "$rc"
}

# The transports a server runs: gonfsrdma's may be fewer ($GONF_TRANSPORTS).
transports_of() { if [[ $1 == gonfsrdma ]]; then echo "$GONF_TRANSPORTS"; else echo "$TRANSPORTS"; fi; }
# ... and those of them the conformance suite and bench run over
conf_transports_of() { local x; for x in $(transports_of "$1"); do [[ " $CONF_TRANSPORTS " == *" $x "* ]] && echo "$x"; done; }

# The server guest's side: serve the control channel until ctl_stop.
ctl_stop() { : >/tmp/ctl-stop; echo "control channel stopping"; }
serve_ctl() {
	local nc_pid
	mkdir -p "$RES"
	rm -f /tmp/ctl-stop
	nc -ll -p "$CTL_PORT" -e /share/guest/ctl.sh </dev/null >>"$LOG" 2>&1 &
	nc_pid=$!
	console "@@ INFO server guest $(hostname): control channel on tcp/$CTL_PORT (nc pid $nc_pid)"
	while [[ ! -e /tmp/ctl-stop ]]; do
		proc_alive "$nc_pid" || { console "@@ INFO server guest: the control channel listener exited"; return 1; }
		sleep 0.5
	done
	kill "$nc_pid" 2>/dev/null
	wait "$nc_pid" 2>/dev/null
	return 0
}

# ---------------------------------------------------------------- servers

proc_alive() { # pid: running and not a zombie
	[[ -r /proc/$1/stat ]] || return 1
	local st
	read -r st <"/proc/$1/stat" 2>/dev/null || return 1
	st=${st##*) } # "pid (comm) S ...": the state letter follows the command name
	st=${st%% *}
	[[ -n $st && $st != Z && $st != X ]]
}

tcp_listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
rdma_listening() { rdma resource show cm_id 2>/dev/null | grep -E "state LISTEN" | grep -Eq ":$1( |$)"; }
not_listening() { # the ports of an NFS server that are not listening yet
	local what=""
	tcp_listening 111 || what+=" tcp/111"
	tcp_listening 2049 || what+=" tcp/2049"
	tcp_listening 20048 || what+=" tcp/20048"
	rdma_listening 20049 || what+=" rdma/20049"
	echo "$what"
}

ro_setup() { # the read-only export: its own tmpfs holding a file and a directory
	if ! is_mounted "$ROEXP"; then
		mkdir -p "$ROEXP" && mount -t tmpfs -o mode=0755,size=16m tmpfs "$ROEXP" || fail "cannot mount a tmpfs on $ROEXP"
	fi
	mkdir -p "$ROEXP/dir" && echo "read-only data" >"$ROEXP/file" || fail "cannot populate $ROEXP"
}

knfsd_up() {
	local t
	is_mounted /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || fail "mount -t nfsd failed"
	ro_setup
	{
		echo "$EXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=1)"
		echo "$ROEXP *(ro,insecure,no_root_squash,no_subtree_check,fsid=2)"
	} >/etc/exports
	if ! pidof rpcbind >/dev/null; then rpcbind -w || fail "rpcbind -w failed"; fi
	# NLM: lockd runs in the kernel, rpc.statd monitors the clients; a
	# grace period of $GRACE s after each (re)start, as gonfsrdma gets
	if ! pidof rpc.statd >/dev/null; then rpc.statd --no-notify || fail "rpc.statd failed"; fi
	echo "$GRACE" >/proc/sys/fs/nfs/nlm_grace_period || fail "cannot set fs.nfs.nlm_grace_period"
	exportfs -ra || fail "exportfs -ra failed"
	if ! pidof rpc.mountd >/dev/null; then
		rpc.mountd -p 20048 --no-nfs-version 4 || fail "rpc.mountd failed"
	fi
	# knfsd sizes its largest READ/WRITE from guest memory (1/4096 of RAM,
	# rounded down to a power of two: 256 KiB in a 2 GiB guest); offer
	# 1 MiB as gonfsrdma does, so the kernel client negotiates the same
	# rsize/wsize with both servers and the conformance suite's 1 MiB
	# WRITEs fit (knfsd closes a TCP connection whose record is larger
	# than its maximum message). Settable only while no nfsd thread runs.
	if [[ $(cat /proc/fs/nfsd/max_block_size) != "$KNFSD_MAX_BLOCK" ]]; then
		echo "$KNFSD_MAX_BLOCK" >/proc/fs/nfsd/max_block_size || fail "cannot set /proc/fs/nfsd/max_block_size to $KNFSD_MAX_BLOCK"
	fi
	# NFSv3 only (-N 4), like gonfsrdma: a plain `mount -t nfs` then
	# negotiates v3 with both servers and locks through NLM
	# NLM waits out every grace period of the net, NFSv4's too (90 s by
	# default, started even with v4 off): the same $GRACE s for both
	if [[ $(cat /proc/fs/nfsd/nfsv4gracetime) != "$GRACE" ]]; then
		echo "$GRACE" >/proc/fs/nfsd/nfsv4gracetime || fail "cannot set /proc/fs/nfsd/nfsv4gracetime to $GRACE"
	fi
	rpc.nfsd -N 4 "$NFSD_THREADS" || fail "rpc.nfsd -N 4 $NFSD_THREADS failed"
	echo "rdma 20049" >/proc/fs/nfsd/portlist || fail "cannot add rdma 20049 to /proc/fs/nfsd/portlist"
	local end=$(($(now) + SERVER_WAIT)) missing
	while missing=$(not_listening) && [[ -n $missing ]] && (($(now) < end)); do sleep 0.2; done
	if [[ -n $missing ]]; then
		ss -ltn; rdma resource show cm_id
		fail "knfsd not listening on:$missing after ${SERVER_WAIT}s"
	fi
	echo "portlist: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
	rpcinfo -p 127.0.0.1 || true
}

knfsd_down() { rpc.nfsd 0 || fail "rpc.nfsd 0 failed"; }
knfsd_stop_all() { # end of the knfsd phase: free 111, 2049, 20048 and rdma 20049
	local t p
	knfsd_down
	exportfs -ua || true
	for p in $(pidof rpc.mountd rpc.statd rpcbind); do kill "$p"; done
	for ((t = 0; t < 100; t++)); do
		tcp_listening 111 || tcp_listening 2049 || tcp_listening 20048 || rdma_listening 20049 || break
		sleep 0.1
	done
	tcp_listening 111 && fail "port 111 still in use after stopping rpcbind"
	tcp_listening 2049 && fail "port 2049 still in use after rpc.nfsd 0"
	tcp_listening 20048 && fail "port 20048 still in use after stopping rpc.mountd"
	rdma_listening 20049 && fail "rdma port 20049 still listening after rpc.nfsd 0"
	true
}

gonfsrdma_up() { # start (or restart) with the fixed command line
	[[ -x $BIN ]] || fail "no $BIN"
	local missing t pid
	local magic
	read -r -n 4 magic <"$BIN"
	# a dynamically linked (cgo) binary must find its libraries in the image
	if [[ $magic == $'\x7fELF' ]] && ! missing=$(/lib64/ld-linux-x86-64.so.2 --list "$BIN" 2>&1) &&
		grep -Eq 'cannot open shared object|not found' <<<"$missing"; then
		fail "gonfsrdma cannot be loaded in the guest: $(head -c 300 <<<"$missing")"
	fi
	mkdir -p /var/lib/gonfsrdma
	ro_setup
	{
		echo "$EXP *(rw,no_root_squash,insecure,fsid=1)"
		echo "$ROEXP *(ro,insecure,no_root_squash,no_subtree_check,fsid=2)"
	} >/tmp/exports
	ulimit -l unlimited
	# the lock manager's grace period after a (re)start, as knfsd gets. The
	# help is read whole before it is searched: `--help | grep -q` under
	# pipefail failed whenever grep exited before the help was written
	# (SIGPIPE), and that start ran with the default 90 s grace.
	local grace=() help
	help=$("$BIN" serve --help 2>&1)
	[[ $help == *--grace* ]] && grace=(--grace "${GRACE}s")
	echo "=== $(date -u +%T.%N) starting gonfsrdma" >>"$GLOG"
	# GOTRACEBACK=all: a SIGQUIT (a hung row, nicreset.sh) dumps every goroutine
	# shellcheck disable=SC2086
	GOTRACEBACK=all setsid "$BIN" serve --exports /tmp/exports --listen :2049 --mount-listen :20048 \
		--rdma-listen "$ADDR:20049" --state-dir /var/lib/gonfsrdma --log-level info "${grace[@]}" $GONFSRDMA_ARGS \
		</dev/null >>"$GLOG" 2>&1 &
	pid=$!
	echo "$pid" >"$PIDFILE"
	local t0=$EPOCHREALTIME end=$(($(now) + SERVER_WAIT)) missing
	while :; do
		proc_alive "$pid" || fail "gonfsrdma exited during start-up: $(tail -n 3 "$GLOG" | tr '\n' ' ')"
		missing=$(not_listening)
		[[ -z $missing ]] && break
		if (($(now) >= end)); then
			ss -ltn; rdma resource show cm_id
			fail "gonfsrdma (pid $pid) not listening on:$missing after ${SERVER_WAIT}s"
		fi
		sleep 0.2
	done
	echo "gonfsrdma pid $pid listening after $(((${EPOCHREALTIME/./} - ${t0/./}) / 1000)) ms"
	now >/run/server.started
	rpcinfo -p 127.0.0.1 || true
}

gonfsrdma_kill9() {
	local pid t
	pid=$(cat "$PIDFILE" 2>/dev/null) || fail "no gonfsrdma pid file"
	proc_alive "$pid" || fail "gonfsrdma (pid $pid) was not running before kill -9"
	kill -9 "$pid"
	for ((t = 0; t < 100; t++)); do proc_alive "$pid" || break; sleep 0.1; done
	proc_alive "$pid" && fail "gonfsrdma pid $pid survived kill -9"
	echo "=== $(date -u +%T.%N) killed gonfsrdma pid $pid with SIGKILL" >>"$GLOG"
}

gonfsrdma_term() {
	local pid t
	pid=$(cat "$PIDFILE" 2>/dev/null) || fail "no gonfsrdma pid file"
	proc_alive "$pid" || fail "gonfsrdma (pid $pid) not running at the end of the run"
	kill -TERM "$pid"
	for ((t = 0; t < 150; t++)); do proc_alive "$pid" || break; sleep 0.1; done
	if proc_alive "$pid"; then
		kill -9 "$pid"
		fail "gonfsrdma did not exit within 15 s of SIGTERM (killed)"
	fi
	echo "=== $(date -u +%T.%N) gonfsrdma exited after SIGTERM" >>"$GLOG"
}

server_stop() {
	case $SERVER in
	knfsd) knfsd_stop_all ;;
	gonfsrdma) gonfsrdma_term ;;
	esac
}
step_server_start() { remote "${SERVER}_up"; }
step_server_stop() { remote server_stop; }
# The server-kill step. gonfsrdma: SIGKILL the process, start it again with
# the same command. knfsd has no process to kill: `rpc.nfsd 0` stops every
# nfsd thread and destroys all listeners and connections (the client sees its
# connection drop and in-flight calls go unanswered, exactly as when a
# user-space server dies); `rpc.nfsd N` + re-adding the rdma port brings the
# service back with a new write verifier, so the client must resend unstable
# writes, as after a gonfsrdma restart.
server_crash() { case $SERVER in knfsd) knfsd_down ;; gonfsrdma) gonfsrdma_kill9 ;; esac; }
server_restart() { "${SERVER}_up"; }
# On the server guest: wait out the lock manager's grace period ($GRACE s)
# after gonfsrdma's last start (it has one only when it restarts with lock
# holders on record, as in the reclaim row), so that the conformance
# suite's lock tests do not meet NLM4_DENIED_GRACE_PERIOD.
grace_wait() {
	local started
	started=$(cat /run/server.started 2>/dev/null) || return 0
	while (($(now) < started + GRACE + 1)); do sleep 1; done
	echo "grace over: $(($(now) - started)) s after the last start"
}
# The server's lock manager restarted: knfsd's lockd starts again inside
# rpc.nfsd, its statd tells the clients (sm-notify -f: a new state number);
# gonfsrdma sends SM_NOTIFY itself at start.
server_notify() { if [[ $SERVER == knfsd ]]; then sm-notify -f || fail "sm-notify -f on the server failed"; fi; }

# ------------------------------------------------------------- lock helpers
# On the server guest, for locktest's hook (guest/lockhook.sh): what a
# local F_GETLK on the exported file sees, a local holder, the crash.
lock_do() { "$LOCKTEST" do "$1" "$2"; } # file "cmd args"
lock_hold() { # file "t start len": a process on the server holds the lock until lock_release
	local t
	rm -f /run/lockhold.fifo /run/lockhold.out
	mkfifo /run/lockhold.fifo || fail "mkfifo failed"
	setsid sleep 100000 >/run/lockhold.fifo </dev/null 2>/dev/null &
	echo $! >/run/lockhold.keeper
	# shellcheck disable=SC2086
	setsid "$LOCKTEST" hold "$1" $2 </run/lockhold.fifo >/run/lockhold.out 2>&1 &
	echo $! >/run/lockhold.pid
	for ((t = 0; t < 100; t++)); do grep -q held /run/lockhold.out 2>/dev/null && break; sleep 0.1; done
	cat /run/lockhold.out
	grep -q held /run/lockhold.out || fail "the local holder did not get its lock: $(cat /run/lockhold.out)"
}
lock_release() {
	local k h t
	k=$(cat /run/lockhold.keeper 2>/dev/null) h=$(cat /run/lockhold.pid 2>/dev/null)
	[[ -n $k && -n $h ]] || fail "no local holder"
	kill "$k" # its stdin closes: the holder unlocks and exits
	for ((t = 0; t < 100; t++)); do proc_alive "$h" || break; sleep 0.1; done
	proc_alive "$h" && fail "the local holder (pid $h) did not exit"
	rm -f /run/lockhold.*
	echo released
}
lock_server_restart() { # file: crash the server, show the file's locks, restart, notify
	server_crash
	echo "after-crash: $("$LOCKTEST" do "$1" "test w 0 0")"
	sleep 1
	server_restart
	server_notify
}
# On the server guest: wait until FILE holds BYTES (or LIMIT seconds
# passed), kill the server, start it again 1 s later; prints at_kill=SIZE.
crash_at_size() { # file bytes limit
	local f=$1 want=$2 end=$(($(now) + $3)) sz
	while sz=$(stat -c %s "$f" 2>/dev/null || echo 0) && ((sz < want)) && (($(now) < end)); do sleep 0.05; done
	echo "at_kill=$sz"
	server_crash
	echo "server killed with $sz bytes in $f"
	sleep 1
	server_restart
}

# ---------------------------------------------------------------- sources

step_sources() {
	rm -rf "$SRC" && mkdir -p "$SRC" || fail "cannot create $SRC"
	dd if=/dev/urandom of="$SRC/rand" bs=1M count="$BIG_MB" status=none || fail "dd urandom failed"
	local s
	for s in $SIZES 4194304 16777216; do
		head -c "$s" "$SRC/rand" >"$SRC/s_$s"
		[[ $(fsize "$SRC/s_$s") == "$s" ]] || fail "source s_$s has the wrong size"
	done
	for s in 0 1 2 3; do
		dd if="$SRC/rand" of="$SRC/q$s" bs=1M skip=$((s * 4)) count=4 status=none
	done
	head -c $((KILL_MB << 20)) "$SRC/rand" >"$SRC/k_$KILL_MB"
	(cd "$SRC" && sha256sum rand s_* q* k_*) >"$SRC/SUMS" || fail "sha256sum of the sources failed"
	# the tree copied in with tar: kernel modules (binary files), the RDMA
	# providers, /etc, and a generated part with nesting, odd names,
	# symlinks (relative, absolute, dangling), a hard link, an empty dir,
	# non-root owners and unusual modes
	rm -rf "$TREE" && mkdir -p "$TREE"
	cp -a "/lib/modules/$(uname -r)" "$TREE/modules"
	cp -a /usr/lib/x86_64-linux-gnu/libibverbs "$TREE/providers"
	cp -a /etc "$TREE/etc"
	local g=$TREE/gen d i
	d=$g
	for i in 1 2 3 4 5 6 7 8; do
		d=$d/level$i
		mkdir -p "$d"
		head -c $((i * 777)) "$SRC/rand" >"$d/file$i.bin"
		echo "text $i" >"$d/name with spaces $i.txt"
		ln -s "file$i.bin" "$d/rel$i"
	done
	mkdir -p "$g/empty" "$g/modes"
	ln -s /nonexistent/target "$g/dangling"
	ln -s /etc/hostname "$g/absolute"
	head -c 12345 "$SRC/rand" >"$g/hard1"
	ln "$g/hard1" "$g/hard2"
	for i in 600 640 700 755 4755 1777 2750; do
		: >"$g/modes/m$i" && chmod "$i" "$g/modes/m$i"
	done
	chown -R 1000:1000 "$g/level1/level2"
	mkfifo "$g/fifo"
	echo "tree: $(find "$TREE" | wc -l) entries, $(du -sk "$TREE" | cut -f1) KiB"
}

# ---------------------------------------------------------------- chunks

xprt_line() {
	awk -v m="$MNT" '$1 == "device" { inblk = ($5 == m) } inblk && $1 == "xprt:" { print; exit }' /proc/self/mountstats
}
# Fields of the `xprt: rdma` line, as printed by xprt_rdma_print_stats() in
# net/sunrpc/xprtrdma/transport.c. awk numbering: $1 "xprt:", $2 "rdma",
# $3 local port (0), $4 bind_count, $5 connect_count, $6 connect_time,
# $7 idle_time, $8 sends, $9 recvs, $10 bad_xids, $11 req_u, $12 bklog_u,
# $13 read_chunk_count, $14 write_chunk_count, $15 reply_chunk_count,
# $16 total_rdma_request, $17 total_rdma_reply, $18 pullup_copy_count,
# $19 fixup_copy_count, $20 hardway_register_count, $21 failed_marshal_count,
# $22 bad_reply_count, $23 nomsg_call_count, then MR and send-queue counters.
decode_xprt() {
	awk '$2 == "rdma" {
		printf "read_chunks=%s write_chunks=%s reply_chunks=%s connects=%s sends=%s recvs=%s bad_xids=%s rdma_request_bytes=%s rdma_reply_bytes=%s pullup_copies=%s fixup_copies=%s hardway_registers=%s failed_marshal=%s bad_replies=%s nomsg_calls=%s\n",
			$13, $14, $15, $5, $8, $9, $10, $16, $17, $18, $19, $20, $21, $22, $23 }'
}
# read write reply chunks, failed marshals, MRs allocated, local invalidations
save_chunks() { xprt_line | awk '$2 == "rdma" { print $13, $14, $15, $21, $26, $27 }' >"/tmp/chunks.$1"; }
# The client's own RDMA cost of a phase (xprtrdma's counters: local
# invalidations it had to post, MRs it allocated, marshals that failed),
# for the harness table beside the other server's: results/client-rdma.tsv
# (server, transport, phase, local_inv, mrs_allocated, failed_marshal).
step_client_rdma_cost() { # tag phase
	local a b d=() i
	read -ra a <"/tmp/chunks.$1.before" 2>/dev/null
	read -ra b <"/tmp/chunks.$1.after" 2>/dev/null
	((${#a[@]} == 6 && ${#b[@]} == 6)) || fail "no xprt: rdma counters recorded (not an RDMA mount, or the step before failed)"
	for i in 5 4 3; do d+=($((b[i] - a[i]))); done
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$SERVER" "$XPORT" "$2" "${d[@]}" >>"$RES/client-rdma.tsv"
	note "client: local invalidations +${d[0]}, MRs allocated +${d[1]}, failed marshals +${d[2]}"
}
# A phase's CPU time and Soft-RoCE packets on both guests, for the perf
# table beside the other server's: results/guest-cpu.tsv (server,
# transport, phase, wall ms, client guest CPU ms, server guest CPU ms, the
# server's own CPU ms, then per guest, client first: rxe packets sent,
# received, and signs of loss). Each guest has one vCPU: a guest busy for
# the whole phase was CPU-bound. The server guest's time includes rxe and
# the NIC (softirq, kernel threads); the server's own is gonfsrdma's
# process or knfsd's nfsd threads (server_sched). Guest CPU is /proc/stat's
# busy time (user, nice, system, irq, softirq, steal) in ms (USER_HZ 100);
# the server guest's end snapshot is read as its control command starts
# (ctl.sh), so that the command's own work stays out of the phase.
guest_cpu_ms() { # [CPU_LINE]: of /proc/stat, or the one given
	local l=${1:-}
	[[ -n $l ]] || IFS= read -r l </proc/stat
	awk '{ printf "%d\n", ($2 + $3 + $4 + $7 + $8 + $9) * 10 }' <<<"$l"
}
# rxe_counts: "SENT RCVD LOSS", this guest's rxe0 packets and signs of
# loss: the requester's retries (completer_retry_err) and sequence NAKs
# received (rcvd_seq_err), the responder's duplicate and out-of-sequence
# requests; zeros without rxe0
rxe_counts() {
	local d=/sys/class/infiniband/rxe0/ports/1/hw_counters n v=()
	for n in sent_pkts rcvd_pkts completer_retry_err rcvd_seq_err duplicate_request out_of_seq_request; do
		v+=("$(cat "$d/$n" 2>/dev/null || echo 0)")
	done
	echo "${v[0]} ${v[1]} $((v[2] + v[3] + v[4] + v[5]))"
}
server_cpu_snapshot() { # start|end, on the server guest: "GUEST_MS SERVER_MS SENT RCVD LOSS"
	local s g
	if [[ $1 == end && -n ${CTL_PROC_STAT:-} ]]; then g=$(guest_cpu_ms "$CTL_PROC_STAT"); else g=$(guest_cpu_ms); fi
	s=$(server_sched)
	echo "$g ${s#* } $(rxe_counts)"
}
phase_cpu_start() { # tag
	local s
	s=$(remote server_cpu_snapshot start) || s=""
	echo "${EPOCHREALTIME/./} $(guest_cpu_ms) $(rxe_counts) $s" >"/tmp/cpu.$1"
}
phase_cpu_end() { # tag phase
	local a b c s t1=${EPOCHREALTIME/./}
	b=$(guest_cpu_ms)
	read -ra c <<<"$(rxe_counts)"
	s=$(remote server_cpu_snapshot end) || s=""
	read -ra a <"/tmp/cpu.$1" 2>/dev/null
	read -ra s <<<"$s"
	((${#a[@]} == 10 && ${#s[@]} == 5)) || {
		note "CPU time of the $2 not recorded (server guest control channel)"
		return 0
	}
	local wall=$(((t1 - a[0]) / 1000)) cg=$((b - a[1])) sg=$((s[0] - a[5])) sp=$((s[1] - a[6]))
	local cs=$((c[0] - a[2])) cr=$((c[1] - a[3])) cl=$((c[2] - a[4])) ss=$((s[2] - a[7])) sr=$((s[3] - a[8])) sl=$((s[4] - a[9]))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$SERVER" "$XPORT" "$2" "$wall" "$cg" "$sg" "$sp" \
		"$cs" "$cr" "$cl" "$ss" "$sr" "$sl" >>"$RES/guest-cpu.tsv"
	note "CPU of the $2 over $wall ms: client guest $cg ms, server guest $sg ms, server $sp ms; rxe packets sent/received/loss signs: client $cs/$cr/$cl, server $ss/$sr/$sl"
}
step_chunk_check() { # tag field(1=read,2=write,3=reply) label
	local a b
	a=$(cut -d' ' -f"$2" "/tmp/chunks.$1.before" 2>/dev/null)
	b=$(cut -d' ' -f"$2" "/tmp/chunks.$1.after" 2>/dev/null)
	[[ -n $a && -n $b ]] || fail "no xprt: rdma counters recorded (not an RDMA mount, or the step before failed)"
	((b > a)) || fail "$3 did not increase (before: $a, after: $b)"
	note "$3 +$((b - a))"
}
step_show_chunks() {
	local l d
	l=$(xprt_line)
	[[ -n $l ]] || fail "no xprt line for $MNT in /proc/self/mountstats"
	d=$(decode_xprt <<<"$l")
	echo "$SERVER $XPORT raw: $(echo $l)" >>"$RES/chunks.txt"
	echo "$SERVER $XPORT decoded: $d" >>"$RES/chunks.txt"
	console "@@ CHUNKS $SERVER $XPORT (since this mount): ${d% connects=*}"
}

# ---------------------------------------------------------------- mounts

need_nomount() { if is_mounted "$MNT"; then umount -f "$MNT" 2>/dev/null || umount -l "$MNT"; fi; }
step_mount() { # mount options
	mkdir -p "$MNT"
	need_nomount
	mount.nfs "$ADDR:$EXP" "$MNT" -o "$1" || fail "mount.nfs -o $1 failed"
	need_mount
	local line
	line=$(awk -v m="$MNT" '$2 == m' /proc/mounts)
	echo "$SERVER $XPORT -o $1: $line" >>"$RES/mounts.txt"
	console "@@ MOUNT $SERVER $XPORT -o $1: $line"
	[[ $line == *vers=3* ]] || fail "mount is not NFSv3: $line"
	case $1 in
	*proto=rdma*) [[ $line == *proto=rdma* ]] || fail "mount does not show proto=rdma: $line" ;;
	*proto=tcp*) [[ $line == *proto=tcp* ]] || fail "mount does not show proto=tcp: $line" ;;
	esac
	# a fresh work directory: what an earlier server's rows left behind
	# (a row cut short by its deadline) must not fail this server's rows
	if [[ -e $W ]]; then
		note "removed a left-over $W"
		rm -rf "$W" || fail "cannot remove the left-over $W"
	fi
	mkdir -p "$W" || fail "mkdir $W failed"
}
do_umount() {
	sync
	umount.nfs "$MNT" || umount "$MNT" || fail "umount failed"
	is_mounted "$MNT" && fail "$MNT still mounted"
	true
}
step_umount() { need_mount; do_umount; }

# ---------------------------------------------------------------- locking

# prog_registered PROG: this host's rpcbind maps PROG. awk reads all of
# rpcinfo's output and answers by its exit status: `| grep -q .` under
# pipefail failed whenever grep exited before awk's last write (SIGPIPE),
# which failed the setup row with statd registered.
prog_registered() { rpcinfo -p 127.0.0.1 2>/dev/null | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }'; }
statd_registered() { prog_registered 100024; }
# The client host's own rpcbind and statd, as on any NFS client that locks.
step_client_services() {
	is_mounted /var/lib/nfs/rpc_pipefs || mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs || fail "cannot mount rpc_pipefs"
	mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak
	pidof rpcbind >/dev/null || rpcbind -w || fail "rpcbind -w failed"
	pidof rpc.statd >/dev/null || rpc.statd || fail "rpc.statd failed"
	# rpc.statd registers after it has forked into the background
	local t
	for ((t = 0; t < 100; t++)); do
		statd_registered && break
		sleep 0.1
	done
	rpcinfo -p 127.0.0.1 || fail "rpcinfo -p 127.0.0.1 failed"
	statd_registered || fail "rpc.statd (100024) not registered with the client's rpcbind after 10 s"
	note "rpcbind and rpc.statd running, state $(statd_state)"
}
statd_state() { od -An -tu4 /var/lib/nfs/state 2>/dev/null | tr -d ' ' || echo '?'; }
# On the client, for locktest's hook: statd restarted with a new state.
statd_new_state() {
	local p t before
	before=$(statd_state)
	for p in $(pidof rpc.statd); do kill "$p"; done
	for ((t = 0; t < 50; t++)); do pidof rpc.statd >/dev/null || break; sleep 0.1; done
	pidof rpc.statd >/dev/null && fail "rpc.statd did not stop"
	echo "monitored: $(ls /var/lib/nfs/sm | tr '\n' ' ')"
	sm-notify -f || fail "sm-notify -f failed"
	rpc.statd --no-notify || fail "rpc.statd failed to start again"
	echo "statd state $before -> $(statd_state)"
}

step_lock_mount() { # mount options as an admin types them (may be empty)
	mkdir -p "$MNT"
	need_nomount
	# shellcheck disable=SC2086
	mount -t nfs $1 "server:$EXP" "$MNT" || fail "mount -t nfs $1 server:$EXP $MNT failed"
	need_mount
	local line
	line=$(awk -v m="$MNT" '$2 == m' /proc/mounts)
	echo "$SERVER $XPORT mount -t nfs $1: $line" >>"$RES/mounts.txt"
	console "@@ MOUNT $SERVER $XPORT mount -t nfs ${1:-(no options)} server:$EXP: $line"
	[[ $line == *vers=3* ]] || fail "mount is not NFSv3: $line"
	[[ $line == *proto=$XPORT* ]] || fail "mount does not show proto=$XPORT: $line"
	[[ $line == *nolock* || $line == *local_lock=all* ]] && fail "the mount does not lock through the server: $line"
	mkdir -p "$W" || fail "mkdir $W failed"
	: >"$W/lock-quick" || fail "create failed"
	locktest_run quick
}
locktest_run() { # scenario: locktest on $W/lock-SCENARIO, the server's view through the hook
	local f=$W/lock-$1 out rc=0 summary infos
	[[ -x $LOCKTEST ]] || fail "no $LOCKTEST"
	[[ -e $f ]] || : >"$f" || fail "cannot create $f"
	export SERVER XPORT
	out=$("$LOCKTEST" --hook /share/guest/lockhook.sh --server-file "$EXP/run-$XPORT/lock-$1" "$1" "$f" 2>&1) || rc=$?
	printf '%s\n' "$out"
	summary=$(tail -n 1 <<<"$out")
	infos=$(sed -n 's/^info //p' <<<"$out" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
	((rc == 0)) || fail "$summary: $(grep -m 3 '^FAIL' <<<"$out" | tr '\n' ' ')"
	note "$summary${infos:+; $infos}"
}
step_locktest() { need_mount; locktest_run "$1"; }

lock_rows() { # transport: a mount without nolock and the lock scenarios on it
	local xp=$1
	case $xp in
	rdma) S rdma "locks: mount -t nfs -o vers=3,proto=rdma server:/export" 120 step_lock_mount "-o vers=3,proto=rdma" || return 1 ;;
	tcp) S tcp "locks: mount -t nfs server:/export (no options)" 120 step_lock_mount "" || return 1 ;;
	esac
	if [[ " $LOCK_FULL " == *" $xp "* ]]; then
		S "$xp" "locks: fcntl suite (ranges, owners, 64-bit, close)" 300 step_locktest posix
		S "$xp" "locks: blocking lock granted on unlock" 300 step_locktest blocking
		S "$xp" "locks: flock(2)" 180 step_locktest flock
		S "$xp" "locks: server killed, client reclaims" 300 step_locktest reclaim
		S "$xp" "locks: client statd new state, server frees" 180 step_locktest statd
	else
		# NLM and NSM go over TCP/UDP for this mount too (LOCK_FULL)
		S "$xp" "locks: blocking lock granted on unlock" 300 step_locktest blocking
	fi
	S "$xp" "locks: rm -rf work directory" "$STEP_TIMEOUT" step_cleanup
	S "$xp" "locks: umount" 60 step_umount
}

# ------------------------------------------------------ a lossy link (netem)
# Frame loss on the link with tc netem (module sch_netem): on the server
# guest's eth0 (its egress) for the loss rows; an outage drops every frame
# both ways (netem loss 100% on both guests' eth0) for $OUTAGE s.

# netem_set ARGS: a fresh netem qdisc with only ARGS (replacing a netem
# qdisc keeps parameters of the old one that ARGS do not name: a row after
# a timed-out reordering row ran with its reordering)
netem_set() {
	tc qdisc del dev eth0 root 2>/dev/null
	tc qdisc add dev eth0 root netem "$@" || fail "tc qdisc add dev eth0 root netem $* failed"
	tc qdisc show dev eth0
}
netem_clear() { tc qdisc del dev eth0 root 2>/dev/null; tc qdisc show dev eth0; }
netem_outage() { # seconds: from now on, drop every frame for that long (in the background)
	netem_set loss 100%
	setsid bash -c "sleep $1; tc qdisc del dev eth0 root" </dev/null >/dev/null 2>&1 &
	echo "link down (netem loss 100%) for $1 s from $(date -u +%T.%N)"
}
step_netem_clear() { netem_clear; remote netem_clear; }
# netem_fresh: a lossy-link row starts on a clean link, whatever a row
# before it that timed out left on either guest
netem_fresh() { netem_clear >/dev/null; remote netem_clear >/dev/null || exit $?; }
outage_during() { # pid: a second into background job pid, the link down $OUTAGE s on both guests; the step ends if that cannot be done
	sleep 1
	netem_outage "$OUTAGE" && remote netem_outage "$OUTAGE" || { kill -9 "$1"; exit 1; }
}
netem_stats() { tc -s qdisc show dev eth0 | awk '/dropped/ { sub(/,$/, "", $7); print "client eth0: sent " $4 " pkt, dropped " $7 }'; }
# rxe's counters (rdma statistic) on one line, and what changed between two
# such lines: how Soft-RoCE recovered (retransmissions, NAKs, ACK timeouts)
rxe_snap() { echo "$(rdma statistic show 2>/dev/null | tr -s ' \n' ' ')"; } # one line, newline-terminated (ctl.sh puts "@@rc" on the next)
rxe_delta() { # before after: "name +N" for each counter that changed
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, A, " "); for (i = 1; i < n; i++) if (A[i + 1] ~ /^[0-9]+$/) v[A[i]] = A[i + 1]
		n = split(b, B, " "); for (i = 1; i < n; i++) if (B[i + 1] ~ /^[0-9]+$/ && B[i + 1] != v[B[i]]) printf "%s +%d ", B[i], B[i + 1] - v[B[i]]
	}'
}
rxe_both() { echo "$(rxe_snap)|$(remote rxe_snap)"; }
rxe_note() { # what before after: both guests' rxe counter changes over one phase
	echo "rxe $1: client: $(rxe_delta "${2%%|*}" "${3%%|*}")| server: $(rxe_delta "${2#*|}" "${3#*|}")"
}
step_netem_rw() { # what netem-args...: a NETEM_MB MiB write + read back with netem-args on the server's eth0 ("1% loss": loss 1%)
	need_mount
	netem_fresh
	local t0 t1 t2 got want r0 r1 r2 what=$1
	shift
	want=$(head -c $((NETEM_MB << 20)) "$SRC/rand" | sha256sum)
	remote netem_set "$@" || exit $?
	r0=$(rxe_both)
	t0=$EPOCHREALTIME
	dd if="$SRC/rand" of="$W/netem-big" bs=1M count="$NETEM_MB" conv=fsync status=none || fail "dd write of ${NETEM_MB} MiB under $what failed"
	t1=$EPOCHREALTIME
	r1=$(rxe_both)
	# shown in the log at once, so a read that runs out of time still says how the write went
	echo "write done in $(((${t1/./} - ${t0/./}) / 1000)) ms"
	rxe_note write "$r0" "$r1"
	drop_caches
	got=$(dd if="$W/netem-big" bs=1M status=none | sha256sum) || fail "read under $what failed"
	t2=$EPOCHREALTIME
	r2=$(rxe_both)
	rxe_note read "$r1" "$r2"
	remote netem_clear || exit $?
	[[ ${got%% *} == "${want%% *}" ]] || fail "content of the ${NETEM_MB} MiB file differs after $what"
	[[ $(fsize "$W/netem-big") == $((NETEM_MB << 20)) ]] || fail "size after write is $(fsize "$W/netem-big")"
	note "write $(((${t1/./} - ${t0/./}) / 1000)) ms, read $(((${t2/./} - ${t1/./}) / 1000)) ms"
	rm -f "$W/netem-big"
}
step_netem_tar() { # loss%: tar of the tree + diff -r under frame loss on the server's eth0
	need_mount
	netem_fresh
	local out
	remote netem_set loss "$1%" || exit $?
	rm -rf "$W/netem-tree" && mkdir "$W/netem-tree" || fail "mkdir failed"
	tar -C "$TREE" -cf - . | tar -C "$W/netem-tree" -xpf - || fail "tar copy under ${1}% loss failed"
	drop_caches
	out=$(diff -r --no-dereference "$TREE" "$W/netem-tree" 2>&1 | grep -Ev '^File .* is a fifo while file .* is a fifo$')
	remote netem_clear || exit $?
	[[ -z $out ]] || fail "diff -r after ${1}% loss: $(head -c 200 <<<"$out")"
	rm -rf "$W/netem-tree" || fail "rm -rf of the copied tree failed"
}
step_netem_outage() { # 64 MiB write + read, the link down for $OUTAGE s during each
	need_mount
	netem_fresh
	local pid t0 t1 t2 rc=0 got
	t0=$EPOCHREALTIME
	dd if="$SRC/rand" of="$W/netem-big" bs=1M conv=fsync status=none &
	pid=$!
	outage_during "$pid"
	wait "$pid" || rc=$?
	t1=$EPOCHREALTIME
	((rc == 0)) || fail "dd write across the ${OUTAGE} s outage exited $rc"
	drop_caches
	(dd if="$W/netem-big" bs=1M status=none | sha256sum >/tmp/netem.sum) &
	pid=$!
	outage_during "$pid"
	wait "$pid" || fail "read across the ${OUTAGE} s outage failed"
	t2=$EPOCHREALTIME
	got=$(cat /tmp/netem.sum)
	[[ ${got%% *} == "$(want_sum rand)" ]] || fail "content of the ${BIG_MB} MiB file differs after the outages"
	note "write $(((${t1/./} - ${t0/./}) / 1000)) ms, read $(((${t2/./} - ${t1/./}) / 1000)) ms, each across a ${OUTAGE} s outage"
	rm -f "$W/netem-big"
}
step_netem_ucp_outage() { # the project's own client (gonfsrdma cp over RDMA) across a $OUTAGE s outage, each way
	need_mount
	netem_fresh
	[[ -x $BIN ]] || skip "no $BIN"
	local pid t0 t1 t2 rc=0
	rm -f "$W/netem-ucp" /tmp/netem-ucp.back
	t0=$EPOCHREALTIME
	"$BIN" cp -q "$SRC/rand" "$(ucp_url netem-ucp)" &
	pid=$!
	outage_during "$pid"
	wait "$pid" || rc=$?
	t1=$EPOCHREALTIME
	((rc == 0)) || fail "gonfsrdma cp in across the ${OUTAGE} s outage exited $rc"
	"$BIN" cp -q "$(ucp_url netem-ucp)" /tmp/netem-ucp.back &
	pid=$!
	outage_during "$pid"
	wait "$pid" || fail "gonfsrdma cp out across the ${OUTAGE} s outage failed"
	t2=$EPOCHREALTIME
	[[ $(sum_of /tmp/netem-ucp.back) == "$(want_sum rand)" ]] || fail "the copy back differs from the source after the outages"
	drop_caches
	[[ $(sum_of "$W/netem-ucp") == "$(want_sum rand)" ]] || fail "the file read through the kernel mount differs after the outages"
	note "cp in $(((${t1/./} - ${t0/./}) / 1000)) ms, cp out $(((${t2/./} - ${t1/./}) / 1000)) ms, each across a ${OUTAGE} s outage"
	rm -f "$W/netem-ucp" /tmp/netem-ucp.back
}
netem_rows() { # on the RDMA mount of the workload
	local l
	for l in $NETEM_LOSS; do
		[[ " $NETEM_ROWS " == *" rw "* ]] && S rdma "netem: ${NETEM_MB} MiB write+read, ${l}% loss" "$BIG_TIMEOUT" step_netem_rw "${l}% loss" loss "${l}%"
		[[ " $NETEM_ROWS " == *" tar "* ]] && S rdma "netem: tar + diff -r, ${l}% loss" "$BIG_TIMEOUT" step_netem_tar "$l"
	done
	# reordering: P % of the server's frames go at once, the others 1 ms
	# later, so the first overtake the others; RoCE's reliable connection
	# takes a frame out of order as a gap (a NAK and a go-back-N resend),
	# as it takes a lost one
	if [[ " $NETEM_ROWS " == *" reorder "* ]]; then
		for l in $NETEM_REORDER; do
			S rdma "netem: ${NETEM_MB} MiB write+read, ${l}% of frames reordered (the rest 1 ms late)" "$BIG_TIMEOUT" \
				step_netem_rw "${l}% reordering" delay 1ms reorder "${l}%"
		done
	fi
	if [[ " $NETEM_ROWS " == *" outage "* ]]; then
		S rdma "netem: ${BIG_MB} MiB write+read across ${OUTAGE} s outages" "$BIG_TIMEOUT" step_netem_outage
		S rdma "netem: gonfsrdma cp ${BIG_MB} MiB in and out across ${OUTAGE} s outages (user-space client)" "$BIG_TIMEOUT" step_netem_ucp_outage
	fi
	S rdma "netem: clear" '!30' step_netem_clear
}

# ---------------------------------------------------------------- workload

step_rw() { # size: write with dd, drop caches, read back through sha256sum
	need_mount
	local s=$1 f=$W/f_$1
	dd if="$SRC/s_$s" of="$f" bs=64k conv=fsync status=none || fail "dd write failed"
	drop_caches
	[[ $(fsize "$f") == "$s" ]] || fail "size $(fsize "$f") after write, want $s"
	[[ $(sum_of "$f") == "$(want_sum "s_$s")" ]] || fail "content differs after read-back"
}

step_big_write() {
	need_mount
	save_chunks big_write.before
	phase_cpu_start big_write
	dd if="$SRC/rand" of="$W/big" bs=1M conv=fsync status=none || fail "dd write of ${BIG_MB} MiB failed"
	phase_cpu_end big_write "${BIG_MB} MiB write"
	save_chunks big_write.after
	[[ $(fsize "$W/big") == $((BIG_MB << 20)) ]] || fail "size after write is $(fsize "$W/big")"
}
step_big_read() {
	need_mount
	drop_caches
	save_chunks big_read.before
	# timed: the copy into this guest's tmpfs alone, as `gonfsrdma cp` out
	# does (step_ucp_out), so that the two compare like for like; the
	# checksum (seconds of CPU under TCG) comes after the phase
	local back=/tmp/big.back
	rm -f "$back"
	phase_cpu_start big_read
	dd if="$W/big" of="$back" bs=1M status=none || { rm -f "$back"; fail "read failed"; }
	phase_cpu_end big_read "${BIG_MB} MiB read"
	save_chunks big_read.after
	local got
	got=$(sum_of "$back")
	rm -f "$back"
	[[ $got == "$(want_sum rand)" ]] || fail "content of the ${BIG_MB} MiB file differs"
}

step_direct() {
	need_mount
	local f got
	dd if="$SRC/s_4194304" of="$W/direct4m" bs=1M oflag=direct status=none || fail "dd oflag=direct (4 MiB, bs=1M) failed"
	# GNU dd writes the last, partial block without O_DIRECT
	dd if="$SRC/s_1048577" of="$W/direct_odd" bs=64k oflag=direct status=none || fail "dd oflag=direct (1 MiB + 1) failed"
	drop_caches
	for f in direct4m:s_4194304 direct_odd:s_1048577; do
		got=$(dd if="$W/${f%%:*}" bs=1M iflag=direct status=none | sha256sum) || fail "dd iflag=direct of ${f%%:*} failed"
		[[ ${got%% *} == "$(want_sum "${f#*:}")" ]] || fail "O_DIRECT read-back of ${f%%:*} differs"
	done
}

step_mkdir2000() {
	need_mount
	local d=$W/dir2000 i
	mkdir "$d" || fail "mkdir failed"
	for ((i = 1; i <= 2000; i++)); do
		: >"$d/entry_$i" || fail "create entry_$i failed"
	done
}
step_ls2000() {
	need_mount
	drop_caches
	save_chunks ls.before
	local n
	n=$(ls "$W/dir2000" | wc -l) || fail "ls failed"
	save_chunks ls.after
	[[ $n == 2000 ]] || fail "ls | wc -l = $n, want 2000"
}
step_find2000() {
	need_mount
	drop_caches
	local n
	n=$(find "$W/dir2000" -mindepth 1 | wc -l) || fail "find failed"
	[[ $n == 2000 ]] || fail "find count = $n, want 2000"
	n=$(find "$W/dir2000" -mindepth 1 -type f -name 'entry_*' | wc -l)
	[[ $n == 2000 ]] || fail "find -type f -name 'entry_*' count = $n, want 2000"
}

# The user-space client (gonfsrdma cp / ls over nfsclient) from this host
# over RDMA, against the server under test: a file of UCP_MB MiB copied in
# and out byte for byte, a listing compared with the kernel mount's.
ucp_url() { echo "nfs://$ADDR$EXP/run-$XPORT/$1?proto=rdma"; }
step_ucp_in() {
	need_mount
	local i
	if [[ ! -s $SRC/ucp ]]; then # BIG_MB parts, part i = rand with every byte + i
		for ((i = 0; i < UCP_MB / BIG_MB; i++)); do
			if ((i == 0)); then cat "$SRC/rand"; else tr '\000-\377' "$(printf '\\%03o' "$i")-\\377\\000-$(printf '\\%03o' $((i - 1)))" <"$SRC/rand"; fi
		done >"$SRC/ucp" || fail "cannot build the ${UCP_MB} MiB source"
		sum_of "$SRC/ucp" >"$SRC/ucp.sum"
	fi
	[[ $(fsize "$SRC/ucp") == $((UCP_MB << 20)) ]] || fail "the source is $(fsize "$SRC/ucp") bytes"
	phase_cpu_start ucp_in
	"$BIN" cp -q "$SRC/ucp" "$(ucp_url ucp.bin)" || fail "gonfsrdma cp to $(ucp_url ucp.bin) failed"
	phase_cpu_end ucp_in "${UCP_MB} MiB cp in"
	drop_caches
	[[ $(sum_of "$W/ucp.bin") == "$(cat "$SRC/ucp.sum")" ]] || fail "the file read back through the kernel mount differs"
}
step_ucp_out() {
	need_mount
	rm -f /tmp/ucp.back
	phase_cpu_start ucp_out
	"$BIN" cp -q "$(ucp_url ucp.bin)" /tmp/ucp.back || fail "gonfsrdma cp from $(ucp_url ucp.bin) failed"
	phase_cpu_end ucp_out "${UCP_MB} MiB cp out"
	[[ $(sum_of /tmp/ucp.back) == "$(cat "$SRC/ucp.sum")" ]] || fail "the copy differs from the source"
	rm -f /tmp/ucp.back "$W/ucp.bin"
}
step_ucp_ls() { # gonfsrdma ls -R of the work directory against the kernel mount's ls -R
	need_mount
	local got want
	got=$("$BIN" ls -R "$(ucp_url "")") || fail "gonfsrdma ls -R failed"
	got=$(grep -v -e '^$' -e ':$' <<<"$got" | sort)
	want=$(cd "$W" && ls -R -A . | grep -v -e '^$' -e ':$' | sort)
	[[ $got == "$want" ]] || fail "listing differs from the kernel mount's: $(diff <(echo "$want") <(echo "$got") | head -5 | tr '\n' ' ')"
	note "$(wc -l <<<"$want") names"
}

long_target() { # 4000 bytes: 400 components "compNNNNN/"
	local t="" c i
	for ((i = 0; i < 400; i++)); do printf -v c 'comp%05d/' "$i"; t+=$c; done
	printf '%s' "${t:0:4000}"
}
step_symlink() {
	need_mount
	local t got
	t=$(long_target)
	((${#t} == 4000)) || fail "test bug: target length ${#t}"
	ln -s "$t" "$W/longlink" || fail "symlink with a 4000-byte target failed"
	drop_caches
	got=$(readlink "$W/longlink") || fail "readlink failed"
	[[ $got == "$t" ]] || fail "readlink returned ${#got} bytes that differ from the 4000-byte target"
	[[ $(stat -c %s "$W/longlink") == 4000 ]] || fail "stat size of the link is $(stat -c %s "$W/longlink"), want 4000"
	[[ $(stat -c %F "$W/longlink") == "symbolic link" ]] || fail "stat type is $(stat -c %F "$W/longlink")"
}

step_rename() {
	need_mount
	mkdir -p "$W/sub" || fail "mkdir sub failed"
	cp "$SRC/s_4097" "$W/ren_a" || fail "cp failed"
	mv "$W/ren_a" "$W/ren_b" || fail "rename in one directory failed"
	mv "$W/ren_b" "$W/sub/ren_c" || fail "rename across directories failed"
	drop_caches
	[[ ! -e $W/ren_a && ! -e $W/ren_b ]] || fail "old name still exists after rename"
	[[ $(stat -c %F "$W/sub/ren_c") == "regular file" ]] || fail "renamed file missing"
	[[ $(sum_of "$W/sub/ren_c") == "$(want_sum s_4097)" ]] || fail "content changed by rename"
	echo old >"$W/ren_over" && cp "$SRC/s_1023" "$W/ren_new" && mv "$W/ren_new" "$W/ren_over" || fail "rename over an existing file failed"
	drop_caches
	[[ ! -e $W/ren_new ]] || fail "source name still exists after rename over a file"
	[[ $(sum_of "$W/ren_over") == "$(want_sum s_1023)" ]] || fail "rename over an existing file left the wrong content"
}
step_hardlink() {
	need_mount
	cp "$SRC/s_4096" "$W/hl_a" || fail "cp failed"
	ln "$W/hl_a" "$W/sub/hl_b" || fail "link failed"
	drop_caches
	[[ $(stat -c %h "$W/hl_a") == 2 ]] || fail "link count of hl_a is $(stat -c %h "$W/hl_a"), want 2"
	[[ $(stat -c %h "$W/sub/hl_b") == 2 ]] || fail "link count of hl_b is $(stat -c %h "$W/sub/hl_b"), want 2"
	[[ $(stat -c %i "$W/hl_a") == $(stat -c %i "$W/sub/hl_b") ]] || fail "the two names have different inode numbers"
	[[ $(sum_of "$W/sub/hl_b") == "$(want_sum s_4096)" ]] || fail "content through the link differs"
	rm "$W/hl_a" || fail "unlink of one name failed"
	drop_caches
	[[ $(stat -c %h "$W/sub/hl_b") == 1 ]] || fail "link count after unlink is $(stat -c %h "$W/sub/hl_b"), want 1"
}
step_chmod() {
	need_mount
	local f=$W/modefile m
	: >"$f" || fail "create failed"
	for m in 640 4755 0 1777 600; do
		chmod "$m" "$f" || fail "chmod $m failed"
		drop_caches
		[[ $(stat -c %a "$f") == "$m" ]] || fail "mode after chmod $m is $(stat -c %a "$f")"
	done
}
step_chown() {
	need_mount
	local f=$W/ownfile
	: >"$f" || fail "create failed"
	chown 1234:5678 "$f" || fail "chown 1234:5678 failed"
	drop_caches
	[[ $(stat -c %u:%g "$f") == 1234:5678 ]] || fail "owner is $(stat -c %u:%g "$f"), want 1234:5678"
	chown 0:0 "$f" || fail "chown back to 0:0 failed"
	drop_caches
	[[ $(stat -c %u:%g "$f") == 0:0 ]] || fail "owner is $(stat -c %u:%g "$f"), want 0:0"
}
step_touch() {
	need_mount
	local f=$W/timefile got
	cp "$SRC/s_1024" "$f" || fail "cp failed"
	touch -m -d '2001-02-03 04:05:06.123456789 UTC' "$f" || fail "touch -m -d failed"
	drop_caches
	got=$(stat -c %Y "$f")
	[[ $got == 981173106 ]] || fail "mtime is $got, want 981173106 (2001-02-03 04:05:06 UTC)"
	got=$(TZ=UTC stat -c %y "$f")
	[[ $got == "2001-02-03 04:05:06.123456789 +0000" ]] || fail "mtime is '$got', want 2001-02-03 04:05:06.123456789 +0000"
	touch -a -d '1999-12-31 23:59:59 UTC' "$f" || fail "touch -a -d failed"
	drop_caches
	got=$(stat -c %X "$f")
	[[ $got == 946684799 ]] || fail "atime is $got, want 946684799"
	[[ $(stat -c %Y "$f") == 981173106 ]] || fail "setting atime changed mtime"
	[[ $(sum_of "$f") == "$(want_sum s_1024)" ]] || fail "touch changed the content"
}
step_truncate() {
	need_mount
	local f=$W/truncfile l=/tmp/truncfile.local
	cp "$SRC/s_65536" "$f" && cp "$SRC/s_65536" "$l" || fail "cp failed"
	truncate -s 1000 "$f" && truncate -s 1000 "$l" || fail "truncate -s 1000 failed"
	drop_caches
	[[ $(fsize "$f") == 1000 ]] || fail "size after truncate -s 1000 is $(fsize "$f")"
	[[ $(sum_of "$f") == "$(sum_of "$l")" ]] || fail "content after shrinking differs"
	truncate -s 70000 "$f" && truncate -s 70000 "$l" || fail "truncate -s 70000 failed"
	drop_caches
	[[ $(fsize "$f") == 70000 ]] || fail "size after truncate -s 70000 is $(fsize "$f")"
	[[ $(sum_of "$f") == "$(sum_of "$l")" ]] || fail "content after extending differs (the new range is not zeros?)"
	truncate -s 0 "$f" || fail "truncate -s 0 failed"
	drop_caches
	[[ $(fsize "$f") == 0 ]] || fail "size after truncate -s 0 is $(fsize "$f")"
	rm -f "$l"
}
step_mkfifo() {
	need_mount
	local f=$W/fifo
	mkfifo -m 0640 "$f" || fail "mkfifo failed"
	drop_caches
	[[ $(stat -c %F "$f") == fifo ]] || fail "type is '$(stat -c %F "$f")', want fifo"
	[[ $(stat -c %a "$f") == 640 ]] || fail "fifo mode is $(stat -c %a "$f"), want 640"
}

step_concurrent_files() {
	need_mount
	local i pids=() bad=0
	for i in 0 1 2 3; do
		dd if="$SRC/q$i" of="$W/cw$i" bs=256k conv=fsync status=none &
		pids+=($!)
	done
	for i in 0 1 2 3; do wait "${pids[$i]}" || bad=1; done
	((bad == 0)) || fail "a concurrent dd failed"
	drop_caches
	for i in 0 1 2 3; do
		[[ $(sum_of "$W/cw$i") == "$(want_sum "q$i")" ]] || fail "file cw$i differs"
	done
}
step_concurrent_ranges() {
	need_mount
	local i pids=() bad=0
	: >"$W/cwone" || fail "create failed"
	for i in 3 1 0 2; do
		dd if="$SRC/rand" of="$W/cwone" bs=1M skip=$((i * 4)) seek=$((i * 4)) count=4 conv=notrunc,fsync status=none &
		pids+=($!)
	done
	for i in 0 1 2 3; do wait "${pids[$i]}" || bad=1; done
	((bad == 0)) || fail "a concurrent dd failed"
	drop_caches
	[[ $(fsize "$W/cwone") == 16777216 ]] || fail "size is $(fsize "$W/cwone"), want 16777216"
	[[ $(sum_of "$W/cwone") == "$(want_sum s_16777216)" ]] || fail "content of the 4-range file differs"
}

tree_listing() { # dir: type, mode, owner, size, links, link target, name, mtime of files
	(cd "$1" && find . -printf '%y %m %U:%G %s %n %l %p ' -a \( -type f -printf '%T@\n' -o -printf '-\n' \)) |
		sed -E 's/ ([0-9]+)\.[0-9]+$/ \1/' | LC_ALL=C sort
}
step_tar_tree() {
	need_mount
	local out
	mkdir "$W/tree" || fail "mkdir failed"
	tar -C "$TREE" -cf - . | tar -C "$W/tree" -xpf - || fail "tar copy failed"
	drop_caches
	# diff cannot compare FIFOs ("File a is a fifo while file b is a fifo");
	# the metadata listing below checks their type
	out=$(diff -r --no-dereference "$TREE" "$W/tree" 2>&1 | grep -Ev '^File .* is a fifo while file .* is a fifo$')
	[[ -z $out ]] || fail "diff -r: $(head -c 200 <<<"$out")"
	tree_listing "$TREE" >/tmp/tree.src || fail "listing the source tree failed"
	tree_listing "$W/tree" >/tmp/tree.nfs || fail "listing the copied tree failed"
	if ! diff /tmp/tree.src /tmp/tree.nfs >/tmp/tree.diff 2>&1; then
		cat /tmp/tree.diff
		fail "metadata differs (type/mode/owner/size/links/target/mtime): $(head -n 5 /tmp/tree.diff | tr '\n' ' ')"
	fi
	note "$(find "$W/tree" | wc -l) entries"
}

step_rm_r() {
	need_mount
	rm -r "$W/dir2000" "$W/sub" "$W/tree" || fail "rm -r failed"
	drop_caches
	[[ ! -e $W/dir2000 && ! -e $W/sub && ! -e $W/tree ]] || fail "a removed tree still exists"
	stat "$W/dir2000" >/dev/null 2>&1 && fail "stat of a removed directory succeeded"
	ls "$W" | grep -Eq '^(dir2000|sub|tree)$' && fail "ls still lists a removed directory"
	true
}

step_remount() { # umount, mount again with the same options, all data intact
	need_mount
	do_umount
	mount.nfs "$ADDR:$EXP" "$MNT" -o "$1" || fail "mount again failed"
	need_mount
	local s
	for s in $SIZES; do
		[[ $(sum_of "$W/f_$s") == "$(want_sum "s_$s")" ]] || fail "f_$s differs after remount"
	done
	[[ $(sum_of "$W/big") == "$(want_sum rand)" ]] || fail "the ${BIG_MB} MiB file differs after remount"
	[[ $(sum_of "$W/cwone") == "$(want_sum s_16777216)" ]] || fail "cwone differs after remount"
	[[ $(readlink "$W/longlink") == "$(long_target)" ]] || fail "the long symlink differs after remount"
	[[ $(stat -c %Y "$W/timefile") == 981173106 ]] || fail "mtime lost after remount"
	[[ $(stat -c %F "$W/fifo") == fifo ]] || fail "fifo lost after remount"
}

bounded_wait() { # pid seconds: the background pid's status once it ends; 124 when it had to be killed after seconds
	local t rc=0
	for ((t = 0; t < $2 * 10; t++)); do
		proc_alive "$1" || break
		sleep 0.1
	done
	if proc_alive "$1"; then
		kill -9 "$1"
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1" || rc=$?
	return "$rc"
}
wait_or_kill() { # pid seconds what: the background dd pid ends within seconds, with status 0
	local rc=0
	bounded_wait "$1" "$2" || rc=$?
	((rc != 124)) || fail "dd did not finish within $2 s $3"
	((rc == 0)) || fail "dd exited $rc $3"
}

step_server_kill() { # SIGKILL the server in the middle of a large write
	need_mount
	local f=$W/killfile sf=$EXP/run-$XPORT/killfile pid out at_kill ssz total=$((KILL_MB << 20))
	dd if="$SRC/k_$KILL_MB" of="$f" bs=1M conv=fsync status=none &
	pid=$!
	# on the server guest: kill when 1/8 of the file is there, restart 1 s later
	out=$(remote crash_at_size "$sf" $((total / 8)) 60) || { echo "$out"; kill -9 "$pid"; exit 1; }
	echo "$out"
	at_kill=$(sed -n 's/^at_kill=//p' <<<"$out")
	[[ -n $at_kill ]] || fail "the server guest did not report the file size at the kill"
	((at_kill >= total)) && note "dd had already finished when the server was killed"
	# hard mount: the client resends and dd completes
	wait_or_kill "$pid" 240 "after the restart"
	drop_caches
	[[ $(fsize "$f") == "$total" ]] || fail "size after restart is $(fsize "$f"), want $total"
	ssz=$(remote fsize "$sf") || exit 1
	[[ $ssz == "$total" ]] || fail "server-side size after restart is $ssz, want $total"
	[[ $(sum_of "$f") == "$(want_sum "k_$KILL_MB")" ]] || fail "content written across the restart differs"
	note "killed with $((at_kill >> 20)) of $KILL_MB MiB in the server's file"
}

# A NIC reset on either guest in the middle of a write: guest/nicreset.sh
# (the tx_watchdog's cure for an emulated NIC whose transmit queue stopped)
# unbinds the virtio device and binds it again, so rxe0 is removed under the
# RDMA mount and a new rxe0 comes up. The kernel client (client guest) or
# the server (server guest) sees its device removed; the write must complete
# on a new connection with its data intact.
nic_reset_bg() { # why: nicreset.sh in the background (the control channel crosses eth0)
	rm -f /run/nicreset.done
	setsid /bin/bash /share/guest/nicreset.sh "$1" </dev/null >/dev/null 2>&1 &
	echo "eth0 reset started at $(date -u +%T.%N)"
}
nic_ready() { # the reset nic_reset_bg started is done: eth0 has its address and rxe0 is registered on it
	# why the done file: on a slow guest the script may not have taken its lock
	# yet when this first looks, and the old eth0 and rxe0 would pass for new ones
	[[ -e /run/nicreset.done && ! -d /run/nicreset.lock ]] && ip -4 addr show dev eth0 2>/dev/null | grep -q "inet ${NET_ADDR%/*}/" && rdma link show rxe0/1 >/dev/null 2>&1
}
gonf_log_mark() { # the server guest's gonfsrdma: "PID LINES" (its pid, lines in its log)
	echo "$(cat "$PIDFILE" 2>/dev/null) $(wc -l <"$GLOG")"
}
gonf_device_back() { # pid lines: after a NIC reset, gonfsrdma (pid) let go of rxe0 by itself and listens on the new one
	local pid=$1 lines=$2 i log
	[[ $(cat "$PIDFILE" 2>/dev/null) == "$pid" ]] && proc_alive "$pid" || { echo "gonfsrdma pid $pid is gone: $(cat /run/nicreset.gonfsrdma 2>/dev/null)"; return 1; }
	[[ $(cat /run/nicreset.gonfsrdma 2>/dev/null) == released ]] || { echo "nicreset.sh: $(cat /run/nicreset.gonfsrdma 2>/dev/null || echo 'no verdict')"; return 1; }
	for ((i = 0; i < 150; i++)); do
		log=$(tail -n +"$((lines + 1))" "$GLOG")
		[[ $log == *"RDMA device back; listening again"* ]] && break
		sleep 0.1
	done
	local warns
	warns=$(grep -c 'RDMA device removed; its connections are closed' <<<"$log")
	((warns == 1)) || { echo "$warns 'RDMA device removed; its connections are closed' WARNs in gonfsrdma's log after the reset, want 1"; return 1; }
	[[ $log == *"RDMA device back; listening again"* ]] || { echo "gonfsrdma not listening again 15 s after rxe0 came back"; return 1; }
	echo "gonfsrdma (pid $pid, not restarted) let go of the removed rxe0 by itself (one WARN) and listens on the new one"
}
step_nic_reset() { # client|server: reset that guest's NIC a second into a KILL_MB MiB write
	need_mount
	local side=$1 f=$W/nicreset pid t t0 t1 t2 total=$((KILL_MB << 20)) mark="" back
	[[ $side == server && $SERVER == gonfsrdma ]] && { mark=$(remote gonf_log_mark) || exit 1; }
	t0=$EPOCHREALTIME
	dd if="$SRC/k_$KILL_MB" of="$f" bs=1M conv=fsync status=none &
	pid=$!
	sleep 1
	if [[ $side == client ]]; then
		nic_reset_bg "row: NIC reset mid-write" && sleep 1
		for ((t = 0; t < 1300; t++)); do nic_ready && break; sleep 0.1; done
		nic_ready || { kill -9 "$pid"; fail "the client's eth0 and rxe0 are not back 130 s after the reset"; }
	else
		remote nic_reset_bg "row: NIC reset mid-write" || { kill -9 "$pid"; exit 1; }
		sleep 1
		for ((t = 0; t < 130; t++)); do remote nic_ready && break; sleep 1; done
		remote nic_ready || { kill -9 "$pid"; fail "the server's eth0 and rxe0 are not back 130 s after the reset"; }
		if [[ -n $mark ]]; then
			# shellcheck disable=SC2086 # "pid lines"
			back=$(remote gonf_device_back $mark) || { kill -9 "$pid"; fail "gonfsrdma across the server's NIC reset: $back"; }
			note "$back"
		fi
	fi
	t1=$EPOCHREALTIME
	wait_or_kill "$pid" 240 "after the $side's NIC reset"
	t2=$EPOCHREALTIME
	drop_caches
	[[ $(fsize "$f") == "$total" ]] || fail "size after the reset is $(fsize "$f"), want $total"
	[[ $(sum_of "$f") == "$(want_sum "k_$KILL_MB")" ]] || fail "content written across the $side's NIC reset differs"
	note "$side NIC back after $(((${t1/./} - ${t0/./}) / 1000)) ms, write done after $(((${t2/./} - ${t0/./}) / 1000)) ms"
	rm -f "$f"
}

step_cleanup() {
	need_mount
	rm -rf "$W" || fail "rm -rf of the work directory failed"
	drop_caches
	[[ ! -e $W ]] || fail "work directory still exists"
}

step_verbs() {
	[[ -x /share/bin/verbs-hw.test ]] || skip "no /share/bin/verbs-hw.test"
	ulimit -l unlimited
	(cd /tmp && GONFSRDMA_RDMA_ADDR=$ADDR /share/bin/verbs-hw.test -test.v -test.timeout 150s) >"$RES/verbs-hw.log" 2>&1 ||
		fail "verbs-hw.test failed: $(grep -E '^(--- FAIL|FAIL|panic)' "$RES/verbs-hw.log" | head -3 | tr '\n' ' ')"
	note "$(grep -c '^--- PASS' "$RES/verbs-hw.log") tests passed"
}

step_rpcrdma() {
	[[ -x /share/bin/rpcrdma-hw.test ]] || skip "no /share/bin/rpcrdma-hw.test"
	ulimit -l unlimited
	(cd /tmp && GONFSRDMA_RDMA_ADDR=$ADDR /share/bin/rpcrdma-hw.test -test.v -test.run RDMAHardware -test.timeout 150s) >"$RES/rpcrdma-hw.log" 2>&1 ||
		fail "rpcrdma-hw.test failed: $(grep -E '^(\s*--- FAIL|FAIL|panic)' "$RES/rpcrdma-hw.log" | head -3 | tr '\n' ' ')"
	note "$(grep -c -- '--- PASS' "$RES/rpcrdma-hw.log") tests passed"
}

# ------------------------------------------------------- conformance, bench

has_cmd() { "$BIN" "$1" --help >/dev/null 2>&1; } # the binary has this subcommand

# The conformance suite (gonfsrdma conformance) against the running server.
# Output: results/conf-SERVER-XPORT.txt ("CODE Name : STATUS", the reason
# indented below, the closing line "N passed, N failed, N warned, N
# omitted"), .json next to it, the suite's stderr in .stderr.
# Over RDMA the suite runs twice: the rpc, rpcbind, mount and nfs tests
# (209), then the rdma tests (29, their own hand-built RPC-over-RDMA
# connections) under a limit of their own, so that a hang in one of the
# latter cannot hide the NFS-over-RDMA results; the .txt file merges both
# (JSON: .json and -rdmatests.json). A part that does not finish in its
# limit gets SIGQUIT (the Go runtime prints every goroutine's stack into
# .stderr); the test it hung in is then reported FAIL "hung" and the tests
# after it OMIT, by the harness, marked as such.
# knfsd is the reference: its failures are noted on a passing row (analysed
# in docs/conformance-results.md) and never fail the run (a reference run
# that cannot complete is SKIP); on gonfsrdma any failure, hang or
# incomplete run fails the row.
CLOSING_RE='^[0-9]+ passed, [0-9]+ failed, [0-9]+ warned, [0-9]+ omitted$'
conf_codes() { # flag...: "CODE Name" of the tests carrying any of the flags, in run order
	"$BIN" conformance --showcodes | awk -v want=" $* " '
		$3 ~ /^\[/ && index(want, " all ") { print $1, $2; next }
		$3 ~ /^\[/ { fl = $3; gsub(/[][]/, "", fl); n = split(fl, a, ",")
			for (i = 1; i <= n; i++) if (index(want, " " a[i] " ")) { print $1, $2; break } }'
}
conf_part() { # out limit args...: one suite run; exit status of timeout(1) or the suite
	local out=$1 lim=$2 rc=0
	shift 2
	((lim < 20)) && lim=20
	echo "$BIN conformance $* (limit ${lim}s)"
	timeout -s QUIT -k 10 "$lim" "$BIN" conformance "$@" >"$out" 2>"$out.stderr" || rc=$?
	echo "exit $rc: $(grep -E "$CLOSING_RE" "$out" || echo 'no closing line')"
	return "$rc"
}
conf_fill() { # out rc limit flag...: a part without its closing line: mark the test it stopped in and the rest
	local out=$1 rc=$2 lim=$3 code name hung=""
	shift 3
	grep -Eq "$CLOSING_RE" "$out" && return 0
	while read -r code name; do
		grep -Eq "^$code $name : (PASS|FAIL|WARN|OMIT)$" "$out" && continue
		if [[ -z $hung ]]; then
			hung=$code
			if ((rc == 124 || rc == 137)); then
				printf '%s %s : FAIL\n    [harness] the suite hung in this test: no result within its %ss limit (its own 30 s per-test timeout did not fire); killed with SIGQUIT, goroutine stacks in %s\n' \
					"$code" "$name" "$lim" "${out##*/}.stderr" >>"$out"
			else
				printf '%s %s : FAIL\n    [harness] the suite exited %s before reporting this test: %s\n' \
					"$code" "$name" "$rc" "$(tail -n 2 "$out.stderr" | tr '\n' ' ')" >>"$out"
			fi
		else
			printf '%s %s : OMIT\n    [harness] not run: the suite stopped in %s\n' "$code" "$name" "$hung" >>"$out"
		fi
	done < <(conf_codes "$@")
	[[ -n $hung ]] && echo "$hung" >>/tmp/conf_hung
	return 0
}
conf_closing() { # file: the closing line counted from its per-test lines
	awk '$(NF - 1) == ":" && $NF ~ /^(PASS|FAIL|WARN|OMIT)$/ { n[$NF]++ }
		END { printf "%d passed, %d failed, %d warned, %d omitted\n", n["PASS"], n["FAIL"], n["WARN"], n["OMIT"] }' "$1"
}
conf_statd_back() { # after the suite's callback service: this host's rpc.statd registered again
	local p t
	for p in $(pidof rpc.statd); do kill "$p"; done
	for ((t = 0; t < 50; t++)); do pidof rpc.statd >/dev/null || break; sleep 0.1; done
	rpcinfo -d 100021 4 2>/dev/null
	rpc.statd --no-notify || return 1
	for ((t = 0; t < 100; t++)); do
		statd_registered && return 0
		sleep 0.1
	done
	return 1
}
step_conformance() { # transport
	[[ -x $BIN ]] || skip "no $BIN"
	has_cmd conformance || skip "$BIN has no conformance command"
	local xp=$1 out=$RES/conf-$SERVER-$1.txt json=$RES/conf-$SERVER-$1 rc=0 rc2=0 line codes warns nf lim t0 left
	local args=(--transport "$xp" --mountport 20048 --portmapport 111 --roexport "$ROEXP")
	if [[ $xp == rdma ]]; then args+=(--port 20049 --tcp-port 2049); else args+=(--port 2049); fi
	ulimit -l unlimited
	if [[ $SERVER == gonfsrdma ]]; then remote grace_wait || fail "waiting for the grace period failed"; fi
	rm -f "$out" "$out".* "$json".json "$json"-rdmatests.json /tmp/conf_hung
	t0=$(now)
	if [[ $xp == tcp ]]; then
		# The lock tests' callbacks (GRANTED, the _RES replies, SM_NOTIFY)
		# reach this host through its own rpcbind, where the suite's
		# callback service takes NLM v4's and NSM's places: only while no
		# kernel lockd is registered (no lock mount), and rpc.statd is
		# started again afterwards for the lock rows that follow. The grace
		# tests stay OMIT here: SM_SIMU_CRASH is taken from local callers
		# only (rpc.statd and gonfsrdma alike), so they run in CI.
		local cb=()
		if prog_registered 100021; then
			note "a lockd is registered with this host's rpcbind: the callback tests are OMIT"
		elif [[ -S /run/rpcbind.sock ]]; then
			cb=(--callback-rpcbind /run/rpcbind.sock)
		fi
		conf_part "$out" $((STEP_TMO - 15)) "${args[@]}" "${cb[@]}" --maketree --json "$json.json" "$ADDR:$EXP" || rc=$?
		conf_fill "$out" "$rc" $((STEP_TMO - 15)) all
		if ((${#cb[@]})); then
			conf_statd_back || note "rpc.statd could not be started again after the suite"
		fi
	else
		lim=$((STEP_TMO - CONF_RDMA_LIMIT - 25))
		conf_part "$out.part1" "$lim" "${args[@]}" --maketree --json "$json.json" "$ADDR:$EXP" rpc rpcbind mount nfs || rc=$?
		conf_fill "$out.part1" "$rc" "$lim" rpc rpcbind mount nfs
		left=$((STEP_TMO - ($(now) - t0) - 10))
		lim=$((left < CONF_RDMA_LIMIT ? left : CONF_RDMA_LIMIT))
		conf_part "$out.part2" "$lim" "${args[@]}" --json "$json-rdmatests.json" "$ADDR:$EXP" rdma || rc2=$?
		conf_fill "$out.part2" "$rc2" "$lim" rdma
		{
			grep -Ev "$CLOSING_RE" "$out.part1"
			grep -Ev "$CLOSING_RE" "$out.part2"
		} >"$out.merged"
		{
			cat "$out.merged"
			conf_closing "$out.merged"
		} >"$out"
		rm -f "$out.merged"
		cat "$out.part1.stderr" "$out.part2.stderr" >"$out.stderr" 2>/dev/null
		((rc == 0)) && rc=$rc2
	fi
	[[ $SERVER == knfsd ]] && { echo "mountd's rmtab after the suite:"; remote cat /var/lib/nfs/rmtab; }
	line=$(grep -E "$CLOSING_RE" "$out" | tail -n 1)
	console "@@ CONFORMANCE $SERVER $xp: ${line:-no result}$([[ -s /tmp/conf_hung ]] && echo " (hung in: $(tr '\n' ' ' </tmp/conf_hung))")"
	codes=$(awk '$(NF-1) == ":" && $NF == "FAIL" { printf "%s ", $1 }' "$out")
	warns=$(awk '$(NF-1) == ":" && $NF == "WARN" { printf "%s ", $1 }' "$out")
	nf=${line#*passed, }
	nf=${nf%% failed*}
	if [[ -z $line || -s /tmp/conf_hung ]]; then
		[[ $SERVER == knfsd ]] && skip "reference run incomplete (exit $rc${codes:+; FAIL ${codes% }})"
		fail "the suite did not complete (exit $rc): ${line:+$line; }FAIL ${codes% }"
	fi
	if ((nf > 0)); then
		[[ $SERVER == knfsd ]] || fail "$line; FAIL ${codes% }"
		note "$line; reference server, not counted: FAIL ${codes% }${warns:+; WARN ${warns% }}"
	else
		note "$line${warns:+; WARN ${warns% }}"
	fi
}

# gonfsrdma bench from inside the guest. Output: results/bench-SERVER-XPORT.txt
# (table) and .json.
step_bench() { # transport
	[[ -x $BIN ]] || skip "no $BIN"
	has_cmd bench || skip "$BIN has no bench command"
	# from the client guest across the link: the server's CPU time
	# (--server-pid, /proc of the server's host) is not measured here
	local xp=$1 out=$RES/bench-$SERVER-$1.txt json=$RES/bench-$SERVER-$1.json rc=0
	local args=(--transport "$xp" --mountport 20048 --quiet --json "$json")
	if [[ $xp == rdma ]]; then args+=(--port 20049); else args+=(--port 2049); fi
	ulimit -l unlimited
	rm -f "$json"
	# shellcheck disable=SC2086
	echo "$BIN bench ${args[*]} $BENCH_ARGS $ADDR:$EXP"
	# shellcheck disable=SC2086
	# bounded inside the step, so a stall still shows both guests' rxe
	# counters (retransmissions, sequence errors) below
	timeout -s INT $((STEP_TMO > 60 ? STEP_TMO - 20 : STEP_TMO)) "$BIN" bench "${args[@]}" $BENCH_ARGS "$ADDR:$EXP" >"$out" 2>&1 || rc=$?
	cat "$out"
	if [[ $xp == rdma ]]; then
		echo "rxe counters, client: $(rdma statistic show 2>&1 | tr -s ' \n' ' ')"
		echo "rxe counters, server: $(remote rdma statistic show 2>&1 | tr -s ' \n' ' ')"
	fi
	((rc == 0)) || fail "bench exited $rc: $(tail -n 3 "$out" | tr '\n' ' ')"
	[[ -s $json ]] || fail "bench wrote no JSON"
	console "@@ BENCH $SERVER $xp: $(awk '$2 ~ /^[0-9]+$/ { if ($4 != "-") printf "%s %s MiB/s; ", $1, $4; else printf "%s %s ops/s; ", $1, $5 }' "$out")"
}

# ---------------------------------------------------------------- driver

T0=$EPOCHREALTIME
LIMIT=$(cat /share/guest/timeout 2>/dev/null || echo 600)
DEADLINE=0 # end of the current server's share of the time limit (seconds, EPOCHREALTIME)
FAILED=0

# stall_times: the epoch seconds of this guest's transmit stalls (written
# by guest/init's tx_watchdog before it resets the NIC), one a line.
stall_times() { awk '{ print $1 }' "$RES/eth0-stalls" 2>/dev/null; return 0; }
# stalled_during T0 T1: says which guest's NIC stalled between T0 - 60 s
# (a reset under way when the step started) and T1, if one did.
stalled_during() {
	local t guest times
	for guest in here server; do
		if [[ $guest == here ]]; then
			times=$(stall_times)
		else
			[[ $ROLE == client ]] || continue
			times=$(REASON=/dev/null remote stall_times 2>/dev/null) || times=""
		fi
		for t in $times; do
			if isnum "$t" && ((t >= $1 - 60 && t <= $2)); then
				[[ $guest == here ]] && guest=$(hostname)
				echo "$guest at $(date -u -d "@$t" +%T)"
				return 0
			fi
		done
	done
	return 1
}
isnum() { [[ $1 =~ ^[0-9]+$ ]]; }

# run_step SERVER TRANSPORT NAME TIMEOUT FUNC ARGS...
# With DEADLINE set, a step is not started (FAIL "not run") unless
# min(TIMEOUT, 60 s) is left, and its timeout is cut to the time left;
# TIMEOUT prefixed with "!" ignores the deadline (teardown).
# A step that fails while either guest's emulated NIC stalled (see
# tx_watchdog in guest/init: QEMU's virtio-net stops transmitting, which
# no server causes and none survives unharmed) runs once more, and its row
# says so with the first attempt's reason; the run's summary counts such
# rows. A failure without a stall is never run again.
run_step() {
	local srv=$1 xp=$2 name=$ROW_PREFIX$3 tmo=$4 force=0 attempt st reason ms first="" stall
	shift 4
	if [[ $tmo == !* ]]; then force=1 tmo=${tmo#!}; fi
	for attempt in 1 2; do
		step_attempt "$srv" "$xp" "$name" "$tmo" "$force" "$@" || return 1
		[[ $st == FAIL && $attempt == 1 ]] || break
		stall=$(stalled_during "${T_STEP0%.*}" "${T_STEP1%.*}") || break
		first="ran again: its first attempt failed while the emulated NIC of $stall stalled (tx_watchdog reset; first attempt: $reason, $ms ms)"
		echo "@@ INFO $srv $xp | $name: failed while the NIC of $stall stalled; running it again"
		printf '%s\t%s\t%s\n' "$srv" "$xp" "$name" >>"$RES/stall-retries"
	done
	[[ -n $first ]] && reason="$first${reason:+; $reason}"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$srv" "$xp" "$name" "$st" "$ms" "$reason" >>"$ROWS"
	echo "@@ ROW $srv $xp | $name | $st | $ms ms${reason:+ | $reason}"
	[[ $st == FAIL ]] && FAILED=1
	[[ $st != FAIL ]]
}

# step_attempt SERVER TRANSPORT NAME TIMEOUT FORCE FUNC ARGS...: one run of
# a step; sets st, reason, ms and T_STEP0/T_STEP1 in run_step's scope.
# Returns 1 (the row written) when the deadline leaves no time to start it.
step_attempt() {
	local srv=$1 xp=$2 name=$3 tmo=$4 force=$5 rc=0 pid wd left
	shift 5
	if ((DEADLINE > 0 && !force)); then
		# start a step only with min(its timeout, 60 s) left: a step cut
		# short (the server kill above all) could leave the server down
		left=$((DEADLINE - $(now)))
		if ((left < (tmo < 60 ? tmo : 60))); then
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$srv" "$xp" "$name" FAIL 0 "not run: the server's share of the guest time limit ran out${first:+; $first}" >>"$ROWS"
			echo "@@ ROW $srv $xp | $name | FAIL | not run (out of time)"
			FAILED=1
			return 1
		fi
		((tmo > left)) && tmo=$left
	fi
	rm -f "$REASON" /tmp/timedout
	echo "=== [$srv/$xp] $name ($(date -u +%T))" >>"$LOG"
	T_STEP0=$EPOCHREALTIME
	(
		set +m
		SERVER=$srv XPORT=$xp W=$MNT/run-$xp STEP_TMO=$tmo
		"$@"
	) >>"$LOG" 2>&1 </dev/null &
	pid=$!
	(
		sleep "$tmo"
		: >/tmp/timedout
		kill -TERM -- "-$pid" 2>/dev/null
		sleep 5
		kill -KILL -- "-$pid" 2>/dev/null
	) >/dev/null 2>&1 </dev/null &
	wd=$!
	wait "$pid" || rc=$?
	kill -- "-$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	T_STEP1=$EPOCHREALTIME
	ms=$(((${T_STEP1/./} - ${T_STEP0/./}) / 1000))
	reason=""
	[[ -s $REASON ]] && reason=$(head -c 400 "$REASON" | tr '\t\n' '  ' | sed 's/ *$//')
	st=PASS
	if [[ -e /tmp/timedout ]]; then
		st=FAIL reason="timed out after ${tmo}s${reason:+; $reason}"
	elif ((rc == 77)); then
		st=SKIP
	elif ((rc == 78)); then
		st=KNOWN
	elif ((rc != 0)); then
		st=FAIL
		[[ -n $reason ]] || reason="exit status $rc (see workload.log)"
	fi
	return 0
}
S() { run_step "$SERVER" "$@"; } # transport name timeout func args...

workload() { # transport mount-options
	local xp=$1 opts=$2 s
	S "$xp" "mount" 60 step_mount "$opts" || return 1
	if [[ $RMRF == only ]]; then
		rmrf_rows "$xp" "$opts"
		S "$xp" "rm -rf work directory" "$STEP_TIMEOUT" step_cleanup
		S "$xp" "umount" 60 step_umount
		return
	fi
	if [[ $NETEM_ONLY == 1 && $xp == rdma && " $NETEM_SERVERS " == *" $SERVER "* ]]; then
		# GONFSRDMA_KERNEL_NETEM_ONLY: the lossy-link rows alone
		netem_rows
		S "$xp" "rm -rf work directory" "$STEP_TIMEOUT" step_cleanup
		S "$xp" "umount" 60 step_umount
		return 0
	fi
	for s in $SIZES; do
		S "$xp" "write+read $s B" "$STEP_TIMEOUT" step_rw "$s"
	done
	S "$xp" "write ${BIG_MB} MiB" "$BIG_TIMEOUT" step_big_write
	S "$xp" "read ${BIG_MB} MiB" "$BIG_TIMEOUT" step_big_read
	if [[ $xp == rdma ]]; then
		S "$xp" "Read chunks used by the ${BIG_MB} MiB write" 10 step_chunk_check big_write 1 "read_chunks"
		S "$xp" "Write chunks used by the ${BIG_MB} MiB read" 10 step_chunk_check big_read 2 "write_chunks"
		S "$xp" "client RDMA cost of the ${BIG_MB} MiB write" 10 step_client_rdma_cost big_write "${BIG_MB} MiB write"
		S "$xp" "client RDMA cost of the ${BIG_MB} MiB read" 10 step_client_rdma_cost big_read "${BIG_MB} MiB read"
	fi
	S "$xp" "O_DIRECT write+read (4 MiB, 1 MiB+1)" "$STEP_TIMEOUT" step_direct
	S "$xp" "create 2000 entries" "$BIG_TIMEOUT" step_mkdir2000
	S "$xp" "ls 2000 entries" "$STEP_TIMEOUT" step_ls2000
	[[ $xp == rdma ]] && S "$xp" "Reply chunks used by the 2000-entry listing" 10 step_chunk_check ls 3 "reply_chunks"
	S "$xp" "find 2000 entries" "$STEP_TIMEOUT" step_find2000
	if [[ $xp == rdma ]]; then
		S "$xp" "gonfsrdma cp ${UCP_MB} MiB in (user-space client)" "$BIG_TIMEOUT" step_ucp_in
		S "$xp" "gonfsrdma cp ${UCP_MB} MiB out (user-space client)" "$BIG_TIMEOUT" step_ucp_out
		S "$xp" "gonfsrdma ls -R vs the kernel mount" "$STEP_TIMEOUT" step_ucp_ls
	fi
	S "$xp" "symlink 4000-byte target" "$STEP_TIMEOUT" step_symlink
	S "$xp" "rename" "$STEP_TIMEOUT" step_rename
	S "$xp" "hard link" "$STEP_TIMEOUT" step_hardlink
	S "$xp" "chmod" "$STEP_TIMEOUT" step_chmod
	S "$xp" "chown" "$STEP_TIMEOUT" step_chown
	S "$xp" "touch -d (mtime, atime)" "$STEP_TIMEOUT" step_touch
	S "$xp" "truncate" "$STEP_TIMEOUT" step_truncate
	S "$xp" "mkfifo" "$STEP_TIMEOUT" step_mkfifo
	S "$xp" "4 concurrent writers, distinct files" "$BIG_TIMEOUT" step_concurrent_files
	S "$xp" "4 concurrent writers, one file" "$BIG_TIMEOUT" step_concurrent_ranges
	S "$xp" "tar tree copy + diff -r" "$BIG_TIMEOUT" step_tar_tree
	S "$xp" "rm -r" "$STEP_TIMEOUT" step_rm_r
	[[ $RMRF == 1 ]] && rmrf_rows "$xp" "$opts"
	S "$xp" "umount + mount, data intact" "$BIG_TIMEOUT" step_remount "$opts"
	S "$xp" "server killed mid-write, client completes" "$BIG_TIMEOUT" step_server_kill
	if [[ $xp == rdma && " $NIC_RESET_SERVERS " == *" $SERVER "* ]]; then
		S "$xp" "NIC reset on the client mid-write, data intact" "$BIG_TIMEOUT" step_nic_reset client
		S "$xp" "NIC reset on the server mid-write, data intact" "$BIG_TIMEOUT" step_nic_reset server
	fi
	[[ $xp == rdma && " $NETEM_SERVERS " == *" $SERVER "* ]] && netem_rows
	[[ $xp == rdma ]] && S "$xp" "xprt: rdma counters" 10 step_show_chunks
	S "$xp" "rm -rf work directory" "$STEP_TIMEOUT" step_cleanup
	S "$xp" "umount" 60 step_umount
}

phase() { # one server: start, every transport, stop
	local xp
	S setup "server start" 120 step_server_start || {
		echo "@@ INFO $SERVER did not start: skipping its workload"
		S teardown "server stop" '!30' step_server_stop
		return 1
	}
	for xp in $TRANSPORTS; do
		# the lock rows' data is small: they run over every transport,
		# also one the server's workload leaves out
		# (GONFSRDMA_KERNEL_GONF_TRANSPORTS)
		if [[ " $LOCK_SERVERS " == *" $SERVER "* ]]; then
			lock_rows "$xp"
			is_mounted "$MNT" && { timeout 30 umount -f "$MNT" || umount -l "$MNT"; }
		fi
		[[ $WORKLOAD == 1 && " $(transports_of "$SERVER") " == *" $xp "* ]] || continue
		case $xp in
		rdma)
			# NFS on the default port 20049, MOUNT over TCP found through rpcbind
			workload rdma "vers=3,proto=rdma,nolock"
			# the same with every port given (no rpcbind needed)
			if S rdma "mount -o port=20049,mountport=20048,mountproto=tcp" 60 \
				step_mount "vers=3,proto=rdma,port=20049,mountport=20048,mountproto=tcp,nolock"; then
				S rdma "write+read 1048577 B (explicit ports)" "$STEP_TIMEOUT" step_rw 1048577
				S rdma "rm -rf work directory (explicit ports)" "$STEP_TIMEOUT" step_cleanup
				S rdma "umount (explicit ports)" 60 step_umount
			fi
			;;
		tcp) workload tcp "vers=3,proto=tcp,nolock" ;;
		*) echo "@@ INFO unknown transport $xp" ;;
		esac
		# a step that failed may have left the mount behind
		if is_mounted "$MNT"; then
			echo "@@ INFO forcing umount of a left-over mount"
			timeout 30 umount -f "$MNT" || umount -l "$MNT"
		fi
	done
	if [[ $CONFORMANCE == 1 && " $CONF_SERVERS " == *" $SERVER "* ]]; then
		for xp in $(conf_transports_of "$SERVER"); do
			S "$xp" "conformance suite" "$CONF_TIMEOUT" step_conformance "$xp"
		done
	fi
	if [[ $BENCH == 1 ]]; then
		for xp in $(conf_transports_of "$SERVER"); do
			S "$xp" "bench" "$BENCH_TIMEOUT" step_bench "$xp"
		done
	fi
	S teardown "server stop" '!30' step_server_stop
}

step_ctl_wait() { # the server guest's control channel answers
	local t out
	for ((t = 0; t < STEP_TMO; t++)); do
		if out=$(REASON=/dev/null remote hostname 2>/dev/null); then
			note "server guest '$out' answers after ${t} s"
			return 0
		fi
		sleep 1
	done
	fail "no answer from the server guest's control channel at $ADDR:$CTL_PORT"
}
step_link() { # the emulated Ethernet between the guests
	ping -c 3 -W 5 "$ADDR" || fail "ping $ADDR failed"
	ip -s link show eth0
	rdma link show
	note "$(ping -c 5 -i 0.2 -q "$ADDR" | sed -n 's/^rtt \(.*\)/\1/p')"
}

main() {
	local n i
	exec 2>>"$LOG" # job-control notices go to the log, not the console
	mkdir -p "$RES"
	: >"$ROWS"
	echo "@@ INFO client guest $(hostname): servers '$SERVERS', transports '$TRANSPORTS', big file ${BIG_MB} MiB, guest limit ${LIMIT}s"
	if [[ $ROLE == client ]]; then
		run_step setup setup "server guest control channel" 180 step_ctl_wait || {
			echo "@@ INFO the server guest does not answer"
			return 1
		}
		run_step setup setup "link: ping 10.99.0.2 -> 10.99.0.1" 60 step_link
		run_step setup setup "client: rpcbind, rpc.statd" 60 step_client_services
	fi
	run_step setup setup "generate sources" "$BIG_TIMEOUT" step_sources || {
		echo "@@ INFO cannot generate the sources"
		return 1
	}
	load_sums
	# the hardware RDMA tests run on the server guest (rxe0 on its eth0,
	# connecting to its own address)
	if [[ $RUN_VERBS == 1 ]]; then
		run_step verbs rdma "verbs-hw.test" 240 remote step_verbs
	fi
	if [[ $RUN_RPCRDMA == 1 ]]; then
		run_step verbs rdma "rpcrdma-hw.test" 240 remote step_rpcrdma
	fi
	set -- $SERVERS
	n=$#
	for ((i = 1; i <= n; i++)); do
		SERVER=${!i}
		# a share of what is left, keeping 40 s for teardown + poweroff,
		# in proportion to the transports of the workload each server
		# still to run has (gonfsrdma may run fewer between the guests)
		local w=0 wall=0 j
		w=$(($(wc -w <<<"$(transports_of "$SERVER")") + 1))
		for ((j = i; j <= n; j++)); do wall=$((wall + $(wc -w <<<"$(transports_of "${!j}")") + 1)); done
		DEADLINE=$((${T0%.*} + LIMIT - 40))
		DEADLINE=$(($(now) + (DEADLINE - $(now)) * w / wall))
		echo "@@ INFO $SERVER: $((DEADLINE - $(now))) s of the guest time limit"
		phase
	done
	return 0
}

# ctl.sh sources this file for its functions only
[[ ${LIB_ONLY:-0} == 1 ]] && return 0

if [[ $ROLE == server ]]; then
	exec 2>>"$LOG"
	serve_ctl
	exit $?
fi
set -m # each step runs in its own process group, so its watchdog can kill it whole
main
rc=$?
((FAILED)) && rc=1
# the client is done: let the server guest power off. It may power off
# before its answer (the FIN) leaves, and a host that is gone sends no
# RST: the read would then wait for TCP to give up, past the guest's time
# limit (seen once: rc 124 after every row had passed). 20 s is plenty.
if [[ $ROLE == client ]]; then
	(REASON=/dev/null remote ctl_stop >/dev/null 2>&1) &
	bounded_wait $! 20
fi
exit $rc
