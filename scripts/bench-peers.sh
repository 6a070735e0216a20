#!/usr/bin/env bash
# bench-peers.sh: the same client (gonfsrdma bench over TCP) and workload
# against gonfsrdma, go-nfs (willscott/go-nfs example/osnfs) and NFS-Ganesha
# (FSAL VFS, NFSv3 only), one server at a time, in a private network and
# mount namespace with only loopback. Repetitions interleave the servers;
# the summary prints medians, ratios to gonfsrdma and server CPU cost.
#
# Each repetition starts with raw loopback TCP (iperf3, one stream, 3 s),
# the baseline of the sequential rows. Besides that client, a libnfs
# metadata program (bench-peers-meta.c, built
# here against libnfs-dev) creates, stats and unlinks BENCH_FILES files by
# path, one call at a time, after each bench run; then fio with its libnfs
# engine (scripts/fio-nfs.sh builds it from Debian's source with
# scripts/fio-nfs-getevents-min.patch and caches it) writes and reads a
# BENCH_SIZE file in BENCH_BLOCK requests at depth BENCH_QD and reads it
# in 4 KiB random requests at depth BENCH_RAND_QD for BENCH_RAND_TIME.
#
# Environment: BENCH_SIZE (256MiB), BENCH_BLOCK (1MiB), BENCH_QD (4),
# BENCH_RAND_QD (16), BENCH_RAND_TIME (5s), BENCH_FILES (2000),
# BENCH_REPS (3), BENCH_SERVERS ("gonfsrdma go-nfs ganesha"; also
# "gonfsrdma-base": the gonfsrdma of git revision BENCH_BASE, built from
# that revision's tree, so that a change is measured before and after in
# the same interleaved run),
# BENCH_EXPORT_FS (unset: the exports live on /tmp's filesystem; "tmpfs":
# on a tmpfs mounted in the namespace, which takes the disk filesystem's
# allocator and the page cache's reclaim out of the numbers),
# BENCH_OUT (results directory; default a temp dir, printed at the end),
# BENCH_CEPH (1: then the CephFS table, scripts/bench-ceph.sh with the same
# workload into BENCH_OUT/ceph; 0: without it), BENCH_FIO (1: the fio
# table; 0: without it), BENCH_CPUS (unset: anywhere; a taskset(1) CPU
# list such as "0": every server and client of the namespace runs on
# those CPUs only, so that a run with one CPU shows a call without the
# cross-CPU wake-ups of client and server; docs/performance.md section 13).
# Needs root (unshare, apt-get); the CephFS table needs the Ceph daemons
# (scripts/deps.sh). Nothing is installed into the repo.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/peers.sh
. "$ROOT/scripts/lib/peers.sh"
SIZE=${BENCH_SIZE:-256MiB}
BLOCK=${BENCH_BLOCK:-1MiB}
QD=${BENCH_QD:-4}
RAND_QD=${BENCH_RAND_QD:-16}
RAND_TIME=${BENCH_RAND_TIME:-5s}
FILES=${BENCH_FILES:-2000}
REPS=${BENCH_REPS:-3}
SERVERS=${BENCH_SERVERS:-"gonfsrdma go-nfs ganesha"}
BASE=${BENCH_BASE:-}
if [[ " $SERVERS " == *" gonfsrdma-base "* ]] && [ -z "$BASE" ]; then
	echo "bench-peers: gonfsrdma-base in BENCH_SERVERS needs BENCH_BASE (a git revision)" >&2
	exit 2
fi
EXPORT_FS=${BENCH_EXPORT_FS:-}
CEPH=${BENCH_CEPH:-1}
FIO_ON=${BENCH_FIO:-1}
CPUS=${BENCH_CPUS:-}
PIN=()
[ -n "$CPUS" ] && PIN=(taskset -c "$CPUS")
case $EXPORT_FS in "" | tmpfs) ;; *)
	echo "bench-peers: BENCH_EXPORT_FS must be empty or tmpfs" >&2
	exit 2
	;;
esac
GO=${GO:-go}
NFS_PORT=2049
MOUNT_PORT=20048

log() { echo "bench-peers: $*" >&2; }

# ---------------------------------------------------------------- inner --
# Runs inside `unshare -n -m`: no network but our loopback, /run private.
if [ "${1:-}" = --inner ]; then
	WORK=$2
	OUT=$3
	CLIENT=$WORK/client
	FIO=$WORK/fio
	peers_inner_setup
	EXPROOT=$WORK
	if [ "$EXPORT_FS" = tmpfs ]; then
		EXPROOT=$WORK/tmpfs
		mkdir -p "$EXPROOT"
		mount -t tmpfs -o size=8g,mode=0755 tmpfs "$EXPROOT"
	fi

	ganesha_ok=no
	if [[ " $SERVERS " == *" ganesha "* ]]; then
		if [ -e "$WORK/no-ganesha.why" ] || ! command -v ganesha.nfsd >/dev/null; then
			log "ganesha: not installed ($(cat "$WORK/no-ganesha.why" 2>/dev/null || echo 'ganesha.nfsd missing')); skipped"
		else
			rpcbind -w -f &
			pids+=($!)
			if wait_port 111 "$!"; then
				ganesha_ok=yes
			else
				log "ganesha: rpcbind did not start; skipped"
			fi
		fi
	fi

	# start_server NAME EXPORT_DIR: starts it, sets SRV_PID.
	start_server() {
		local name=$1 exp=$2
		case $name in
		gonfsrdma | gonfsrdma-base)
			"$WORK/$name" serve --default-export "$exp" --listen "127.0.0.1:$NFS_PORT" \
				--mount-listen "127.0.0.1:$MOUNT_PORT" --rdma-listen "" --no-portmap \
				--state-dir "$WORK/state" --log-level warn >>"$OUT/$name.log" 2>&1 &
			SRV_PID=$!
			M_PORT=$MOUNT_PORT
			;;
		go-nfs)
			"$WORK/osnfs" "$exp" "$NFS_PORT" >>"$OUT/go-nfs.log" 2>&1 &
			SRV_PID=$!
			M_PORT=$NFS_PORT # one port for NFS and MOUNT
			;;
		ganesha)
			sed "s#@EXPORT@#$exp#" "$WORK/ganesha.conf.in" >"$WORK/ganesha.conf"
			ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$OUT/ganesha.log" -p /run/ganesha/ganesha.pid &
			SRV_PID=$!
			M_PORT=$MOUNT_PORT
			;;
		esac
		pids+=("$SRV_PID")
		wait_port "$NFS_PORT" "$SRV_PID" && wait_port "$M_PORT" "$SRV_PID"
	}
	stop_server() {
		kill "$SRV_PID" 2>/dev/null || true
		wait "$SRV_PID" 2>/dev/null || true
		# The next server binds the same ports.
		for _ in $(seq 1 100); do
			(exec 3<>"/dev/tcp/127.0.0.1/$NFS_PORT") 2>/dev/null || break
			sleep 0.1
		done
	}

	# client_checks NAME EXPORT_DIR REP: the user-space client against
	# the running server: `gonfsrdma cp` of the same file in and out beside
	# libnfs's nfs-cp (times side by side, every copy compared byte for
	# byte with the source) and `gonfsrdma ls -R` of a tree against the
	# export's own listing. One line per check in OUT/client.NAME.REP.tsv:
	# check, PASS/FAIL, milliseconds, detail.
	client_checks() {
		local name=$1 exp=$2 rep=$3 tsv=$OUT/client.$1.$3.tsv q t0 ms got
		q="mountport=$M_PORT&uid=1000&gid=1000"
		local lq="nfsport=$NFS_PORT&mountport=$M_PORT&version=3&uid=1000&gid=1000"
		# go-nfs answers MOUNT EXPORT with a malformed reply (libnfs reads
		# it for its mount traversal) and MOUNTs any path with its root:
		# both clients are told the export.
		if [ "$name" = go-nfs ]; then
			lq="$lq&auto-traverse-mounts=0"
			q="$q&export=$exp"
		fi
		: >"$tsv"
		row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$tsv"; }
		timed() { # check cmd...: run, time, compare the result with the source
			local check=$1 out=$2 rc=0
			shift 2
			rm -f "$out"
			t0=$(date +%s%N)
			timeout 300 "$@" >>"$OUT/client.$name.log" 2>&1 || rc=$?
			ms=$((($(date +%s%N) - t0) / 1000000))
			if [ "$rc" != 0 ]; then
				row "$check" FAIL "$ms" "exit $rc"
			elif ! cmp -s "$WORK/client-src.bin" "$out"; then
				row "$check" FAIL "$ms" "not byte-identical"
			else
				row "$check" PASS "$ms" "$(stat -c %s "$out") bytes"
			fi
		}
		sync
		timed "gonfsrdma cp in" "$exp/cp-g.bin" "$CLIENT" cp -q "$WORK/client-src.bin" "nfs://127.0.0.1:$NFS_PORT$exp/cp-g.bin?$q"
		timed "gonfsrdma cp out" "$WORK/back-g.bin" "$CLIENT" cp -q "nfs://127.0.0.1:$NFS_PORT$exp/cp-g.bin?$q" "$WORK/back-g.bin"
		if command -v nfs-cp >/dev/null; then
			timed "nfs-cp in" "$exp/cp-l.bin" nfs-cp "$WORK/client-src.bin" "nfs://127.0.0.1$exp/cp-l.bin?$lq"
			timed "nfs-cp out" "$WORK/back-l.bin" nfs-cp "nfs://127.0.0.1$exp/cp-l.bin?$lq" "$WORK/back-l.bin"
		else
			row "nfs-cp in" FAIL 0 "nfs-cp not installed (libnfs-utils)"
		fi
		rm -f "$WORK/back-g.bin" "$WORK/back-l.bin" "$exp/cp-g.bin" "$exp/cp-l.bin"
		# A tree of 2,000 entries (40 directories of 49 files) made through
		# the server's own file system, listed through the client.
		rm -rf "$exp/tree" && mkdir -p "$exp/tree"
		(cd "$exp/tree" && for d in $(seq -w 1 40); do mkdir "d$d" && (cd "d$d" && seq -f 'f%02g' 1 49 | xargs touch); done)
		chmod -R a+rwX "$exp/tree"
		t0=$(date +%s%N)
		if got=$(timeout 120 "$CLIENT" ls -R "nfs://127.0.0.1:$NFS_PORT$exp/tree?$q" 2>>"$OUT/client.$name.log"); then
			ms=$((($(date +%s%N) - t0) / 1000000))
			# names only, from both listings, sorted
			local want n
			want=$(cd "$exp/tree" && find . -mindepth 1 -printf '%f\n' | sort)
			got=$(printf '%s\n' "$got" | grep -v -e '^$' -e ':$' | sort)
			n=$(printf '%s\n' "$want" | wc -l)
			if [ "$got" = "$want" ]; then row "gonfsrdma ls -R" PASS "$ms" "$n entries"; else row "gonfsrdma ls -R" FAIL "$ms" "listing differs from find ($n entries)"; fi
		else
			row "gonfsrdma ls -R" FAIL 0 "exit status $?"
		fi
		rm -rf "$exp/tree"
		column -t -s $'\t' "$tsv" >&2 || cat "$tsv" >&2
	}

	# meta_client NAME EXPORT_DIR REP: the libnfs metadata program
	# (bench-peers-meta.c: create, stat, unlink by path, one call at a
	# time) against the running server; OUT/NAME.REP.meta.tsv.
	meta_client() {
		local name=$1 exp=$2 rep=$3
		local lq="nfsport=$NFS_PORT&mountport=$M_PORT&version=3&uid=1000&gid=1000"
		[ "$name" = go-nfs ] && lq="$lq&auto-traverse-mounts=0"
		[ -x "$WORK/meta" ] || return 0
		if timeout 600 "$WORK/meta" "nfs://127.0.0.1$exp?$lq" "$FILES" "$SRV_PID" >"$OUT/$name.$rep.meta.tsv" 2>>"$OUT/meta.$name.log"; then
			sed "s/^/  libnfs meta: /" "$OUT/$name.$rep.meta.tsv" >&2
		else
			log "$name rep $rep: libnfs metadata program FAILED: $(tail -1 "$OUT/meta.$name.log")"
			rm -f "$OUT/$name.$rep.meta.tsv"
		fi
	}

	# fio_client NAME EXPORT_DIR REP: fio with its libnfs engine
	# (scripts/fio-nfs.sh) against the running server, three jobs one
	# after the other on one file: sequential write and read of SIZE in
	# BLOCK requests at depth QD, then 4 KiB random reads at depth RAND_QD
	# for RAND_TIME. Per job OUT/fio.NAME.REP.JOB.json (fio's JSON),
	# .err (its standard error) and a line in OUT/fio.NAME.REP.tsv: job,
	# exit status, server CPU seconds (-1: not read). The summary makes a
	# job FAIL on a non-zero status, any standard error, or a JSON that
	# does not show the whole size done without error.
	fio_client() {
		local name=$1 exp=$2 rep=$3 job rw bs depth extra rc cpu0 cpu1 size
		local lq="nfsport=$NFS_PORT&mountport=$M_PORT&version=3&uid=1000&gid=1000"
		[ "$name" = go-nfs ] && lq="$lq&auto-traverse-mounts=0"
		[ -x "$FIO" ] || return 0
		size=$(iec_bytes "$SIZE")
		: >"$OUT/fio.$name.$rep.tsv"
		for job in write read randread; do
			case $job in
			write | read) rw=$job bs=$(iec_bytes "$BLOCK") depth=$QD extra=() ;;
			randread) rw=randread bs=4096 depth=$RAND_QD extra=(--time_based "--runtime=$RAND_TIME") ;;
			esac
			cpu0=$(proc_cpu "$SRV_PID")
			rc=0
			# Sizes in bytes: fio reads "64MiB" as 64,000,000.
			timeout 600 "$FIO" --name="$job" --ioengine=nfs --nfs_url="nfs://127.0.0.1$exp?$lq" \
				--filename=fio.bin --rw="$rw" --bs="$bs" --iodepth="$depth" --size="$size" "${extra[@]}" \
				--output-format=json --output="$OUT/fio.$name.$rep.$job.json" \
				>>"$OUT/fio.$name.log" 2>"$OUT/fio.$name.$rep.$job.err" || rc=$?
			cpu1=$(proc_cpu "$SRV_PID")
			printf '%s\t%s\t%s\n' "$job" "$rc" "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { if (a < 0 || b < 0) print -1; else printf "%.3f", b - a }')" >>"$OUT/fio.$name.$rep.tsv"
			if [ "$rc" != 0 ] || [ -s "$OUT/fio.$name.$rep.$job.err" ]; then
				log "$name rep $rep: fio $job: exit $rc: $(head -1 "$OUT/fio.$name.$rep.$job.err")"
			fi
		done
		rm -f "$exp/fio.bin"
	}
	# iec_bytes SIZE: 256MiB, 256Mi or 256M as bytes.
	iec_bytes() {
		local v=${1%B}
		numfmt --from=iec "${v%i}"
	}
	# proc_cpu PID: user + system CPU seconds of PID (-1 when unreadable).
	proc_cpu() {
		local f
		if f=$(cat "/proc/$1/stat" 2>/dev/null); then
			# the fields after the command name, which may hold spaces
			f=${f##*) }
			awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f", ($12 + $13) / t }' <<<"$f"
		else
			echo -1
		fi
	}

	# Warm-up, not measured: the first touch of guest memory by the page
	# cache costs several times the CPU of later writes on a VM, which
	# would charge whichever server runs first.
	dd if=/dev/zero of="$WORK/warmup" bs=1M count=1024 status=none && rm -f "$WORK/warmup"
	head -c "$(iec_bytes "$SIZE")" /dev/urandom >"$WORK/client-src.bin"

	iperf_ok=no
	if command -v iperf3 >/dev/null; then
		iperf3 -s -B 127.0.0.1 -p 5201 >>"$OUT/iperf3.log" 2>&1 &
		pids+=($!)
		if wait_port 5201 "$!"; then iperf_ok=yes; else log "iperf3 server did not start; no raw TCP baseline"; fi
	fi
	read -ra order <<<"$SERVERS"
	for rep in $(seq 1 "$REPS"); do
		if [ "$iperf_ok" = yes ]; then
			if iperf3 -c 127.0.0.1 -p 5201 -t 3 -J >"$OUT/iperf3.$rep.json" 2>>"$OUT/iperf3.log"; then
				log "rep $rep/$REPS: raw loopback TCP $(grep -A8 '"sum_received"' "$OUT/iperf3.$rep.json" | awk -F'[:,]' '/bits_per_second/ {printf "%.0f MiB/s", $2 / 8 / 1048576; exit}')"
			else
				log "rep $rep/$REPS: iperf3 failed: $(tail -1 "$OUT/iperf3.log" 2>/dev/null)"
				rm -f "$OUT/iperf3.$rep.json"
			fi
		fi
		# Rotate the order each repetition so no server always goes first.
		for i in "${!order[@]}"; do
			srv=${order[$(((i + rep - 1) % ${#order[@]}))]}
			if [ "$srv" = ganesha ] && [ "$ganesha_ok" != yes ]; then continue; fi
			exp=$EXPROOT/export-$srv
			rm -rf "$exp"
			mkdir -p "$exp"
			chmod 0777 "$exp" # every server sees uid 1000 creating files
			if ! start_server "$srv" "$exp"; then
				log "$srv: did not start; see $OUT/$srv.log"
				if [ "$srv" = ganesha ]; then
					ganesha_ok=no
					tail -5 "$OUT/ganesha.log" >&2 || true
				fi
				stop_server
				continue
			fi
			log "rep $rep/$REPS: $srv (pid $SRV_PID), load average $(cut -d' ' -f1 /proc/loadavg)"
			cut -d' ' -f1 /proc/loadavg >>"$OUT/loadavg"
			if ! timeout 600 "$CLIENT" bench --port "$NFS_PORT" --mountport "$M_PORT" \
				--size "$SIZE" --block "$BLOCK" --qd "$QD" --rand-qd "$RAND_QD" --rand-time "$RAND_TIME" \
				--files "$FILES" --uid 1000 --gid 1000 --server-pid "$SRV_PID" \
				--json "$OUT/$srv.$rep.json" "127.0.0.1:$exp" >"$OUT/$srv.$rep.txt" 2>"$OUT/$srv.$rep.err"; then
				log "$srv rep $rep FAILED:"
				tr '\r' '\n' <"$OUT/$srv.$rep.err" | tail -3 >&2
				rm -f "$OUT/$srv.$rep.json"
			else
				cat "$OUT/$srv.$rep.txt" >&2
			fi
			meta_client "$srv" "$exp" "$rep"
			fio_client "$srv" "$exp" "$rep"
			client_checks "$srv" "$exp" "$rep"
			stop_server
		done
	done
	exit 0
fi

# ---------------------------------------------------------------- outer --
if [ "$(id -u)" != 0 ]; then
	echo "bench-peers: needs root (network namespaces, apt-get)" >&2
	exit 1
fi
WORK=$(mktemp -d /tmp/bench-peers.XXXXXX)
OUT=${BENCH_OUT:-$WORK/results}
mkdir -p "$OUT" "$WORK/state"
# At the end only the results stay: WORK goes whole when they are in
# BENCH_OUT, and but for WORK/results otherwise (the binaries, the
# exports and the state are over 100 MB a run).
cleanup_work() {
	if [ "$OUT" != "$WORK/results" ]; then
		rm -rf "$WORK"
	else
		find "$WORK" -mindepth 1 -maxdepth 1 ! -name results -exec rm -rf {} +
	fi
}
trap cleanup_work EXIT
start=$(date +%s)

log "building gonfsrdma"
(cd "$ROOT" && CGO_ENABLED=1 $GO build -o bin/gonfsrdma ./cmd/gonfsrdma)
cp "$ROOT/bin/gonfsrdma" "$WORK/gonfsrdma"
cp "$WORK/gonfsrdma" "$WORK/client"
if [[ " $SERVERS " == *" gonfsrdma-base "* ]]; then
	log "building gonfsrdma-base from $BASE ($(cd "$ROOT" && git rev-parse --short "$BASE"))"
	mkdir -p "$WORK/base-src"
	(cd "$ROOT" && git archive "$BASE") | tar -x -C "$WORK/base-src"
	(cd "$WORK/base-src" && CGO_ENABLED=1 $GO build -o "$WORK/gonfsrdma-base" ./cmd/gonfsrdma)
	rm -rf "$WORK/base-src"
fi

log "building the libnfs metadata program (scripts/bench-peers-meta.c)"
if [ ! -e /usr/include/nfsc/libnfs.h ]; then
	flock /tmp/gonfsrdma-apt.lock sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnfs-dev' >"$OUT/apt-libnfs.log" 2>&1 ||
		log "apt-get install libnfs-dev failed: $(tail -1 "$OUT/apt-libnfs.log")"
fi
if ! command -v iperf3 >/dev/null; then
	flock /tmp/gonfsrdma-apt.lock sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3' >"$OUT/apt-iperf3.log" 2>&1 ||
		log "apt-get install iperf3 failed: $(tail -1 "$OUT/apt-iperf3.log"); no raw TCP baseline"
fi
if ! gcc -O2 -Wall -o "$WORK/meta" "$ROOT/scripts/bench-peers-meta.c" -lnfs 2>"$OUT/meta-build.log"; then
	log "libnfs metadata program not built (no libnfs-dev?): $(head -1 "$OUT/meta-build.log"); its table is left out"
fi

if [ "$FIO_ON" != 0 ]; then
	log "fio with its libnfs engine (scripts/fio-nfs.sh; built once, then cached)"
	if fio=$("$ROOT/scripts/fio-nfs.sh" "$OUT/fio-build.log"); then
		cp "$fio" "$WORK/fio"
		"$WORK/fio" --version >"$OUT/fio.version"
	else
		log "fio not built (see $OUT/fio-build.log); its table is left out"
	fi
fi

if [[ " $SERVERS " == *" go-nfs "* ]]; then
	log "building go-nfs example/osnfs (temporary module in $WORK/gonfs)"
	mkdir -p "$WORK/gonfs"
	(cd "$WORK/gonfs" && $GO mod init tmp >/dev/null 2>&1 &&
		$GO get github.com/willscott/go-nfs/example/osnfs@latest >/dev/null 2>&1 &&
		$GO list -m github.com/willscott/go-nfs >"$OUT/go-nfs.version" &&
		$GO build -o "$WORK/osnfs" github.com/willscott/go-nfs/example/osnfs)
fi

if [[ " $SERVERS " == *" ganesha "* ]]; then
	if ! why=$(ganesha_install "$OUT/apt.log"); then
		echo "$why" >"$WORK/no-ganesha.why"
	fi
	ganesha.nfsd -v 2>/dev/null | head -1 >"$OUT/ganesha.version" || true
	# NFSv3 only over TCP; a VFS export with no root squash.
	{
		ganesha_core "$NFS_PORT" "$MOUNT_PORT"
		ganesha_export 1 @EXPORT@ /bench RW TCP
	} >"$WORK/ganesha.conf.in"
fi

log "running in a private network namespace: $REPS repetitions of: $SERVERS"
BENCH_SIZE=$SIZE BENCH_BLOCK=$BLOCK BENCH_QD=$QD BENCH_RAND_QD=$RAND_QD BENCH_RAND_TIME=$RAND_TIME \
	BENCH_FILES=$FILES BENCH_REPS=$REPS BENCH_SERVERS=$SERVERS BENCH_EXPORT_FS=$EXPORT_FS \
	"${PIN[@]}" unshare -n -m --propagation private "$0" --inner "$WORK" "$OUT"

echo
echo "== bench-peers: $(nproc) cores, $(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1048576)) GiB, $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), exports on ${EXPORT_FS:-$(df --output=fstype /tmp | tail -1)}"
echo "== go-nfs $(cut -d' ' -f2 "$OUT/go-nfs.version" 2>/dev/null || echo '-'), $(cat "$OUT/ganesha.version" 2>/dev/null || echo 'Ganesha -'), gonfsrdma $(cd "$ROOT" && git rev-parse --short HEAD)${BASE:+, gonfsrdma-base $(cd "$ROOT" && git rev-parse --short "$BASE")}, $(cat "$OUT/fio.version" 2>/dev/null || echo 'fio -')"
[ -n "$CPUS" ] && echo "== servers and clients ran on CPUs $CPUS only (BENCH_CPUS)"
[ -e "$WORK/no-ganesha.why" ] && echo "== Ganesha did not run: $(cat "$WORK/no-ganesha.why")"
[ -s "$OUT/loadavg" ] && echo "== 1-minute load average at the start of each run: $(sort -n "$OUT/loadavg" | head -1) to $(sort -n "$OUT/loadavg" | tail -1) (the machine's other work shares these cores)"
rc=0
# shellcheck disable=SC2086 # one argument per server
(cd "$ROOT" && $GO run ./scripts/bench-peers "$OUT" $SERVERS) || rc=$?
# The CephFS table: gonfsrdma (backend=cephfs) vs Ganesha FSAL_CEPH on one
# throwaway cluster, the same client and workload.
if [ "$CEPH" != 0 ]; then
	echo
	echo "== CephFS (scripts/bench-ceph.sh; BENCH_CEPH=0 leaves it out)"
	BENCH_OUT=$OUT/ceph BENCH_SIZE=$SIZE BENCH_BLOCK=$BLOCK BENCH_QD=$QD BENCH_RAND_QD=$RAND_QD \
		BENCH_RAND_TIME=$RAND_TIME BENCH_FILES=$FILES BENCH_REPS=$REPS GO=$GO "$ROOT/scripts/bench-ceph.sh" || rc=$?
fi
echo "== results (JSON per run, server logs): $OUT; took $(($(date +%s) - start)) s"
exit $rc
