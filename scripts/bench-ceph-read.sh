#!/usr/bin/env bash
# bench-ceph-read.sh: server CPU per GiB of sequential READ on the CephFS
# backend, gonfsrdma (backend=cephfs) against NFS-Ganesha 4.3 FSAL_CEPH, in
# a throwaway one-node cluster (scripts/ceph-cluster.sh), one server at a
# time, order rotated per repetition. Each server exports its own
# directory holding the same 256 MiB file (written once through
# gonfsrdma), is started fresh per repetition and read READS times: fio
# with its libnfs engine (scripts/fio-nfs.sh), 1 MiB READs at depth 4
# (MODE=fio, the default), or `gonfsrdma bench` write+read of a new file
# (MODE=bench, the seq rows of bench-ceph). One line per read in
# OUT/results.tsv: server, repetition, read, MiB/s, server CPU s/GiB
# (/proc/PID/stat), load average (MODE=bench: write and read MiB/s and
# s/GiB). MODE=meta: `gonfsrdma bench`'s create and remove phases instead
# (FILES files, 3000 by default; C and D: ops/s, server CPU µs a call).
# PERF=stat: `perf stat` (task clock, page faults, context switches) per
# server run in OUT/SERVER.REP.stat; PERF=record: `perf record -g` in
# OUT/SERVER.REP.perf; PPROF=1: gonfsrdma's --cpu-profile.
#
# Usage (root, under the Ceph lock): flock /tmp/gonfsrdma-ceph.lock
#   scripts/bench-ceph-read.sh OUT   (env: BINS="gonfsrdma binaries built
#   with -tags ceph", default this tree's; REPS 3, READS 3, MODE, PERF, PPROF)
# Servers g0, g1, ... are BINS in order (a BINS entry may be a script that
# sets an environment and execs a binary). MODE=bench writes a new 256 MiB
# file a read: more than 6 reads in all need CEPH_MEMSTORE_BYTES raised
# (scripts/ceph-cluster.sh). Needs nfs-ganesha-ceph and rpcbind
# (scripts/bench-ceph.sh installs them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NFS_PORT=2049 MOUNT_PORT=20048
wait_port() { for _ in $(seq 1 600); do kill -0 "$2" 2>/dev/null || return 1; (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
cpu() { awk '{print ($14+$15)/100}' /proc/$1/stat; }
if [ "${1:-}" = --inner ]; then
  OUT=$2
  mount -t tmpfs tmpfs /run; mkdir -p /run/ganesha /run/rpcbind
  rpcbind -w -f & RPCB=$!
  trap 'kill $RPCB ${pid:-} ${perfpid:-} 2>/dev/null || true' EXIT
  wait_port 111 $RPCB
  first=${BINS%% *}
  printf '/bench -backend=cephfs,ceph_conf=%s,fsid=2 127.0.0.1(rw,insecure,no_root_squash)\n' "$CEPH_CONF" >"$OUT/exports.root"
  "$first" serve --exports "$OUT/exports.root" --listen "127.0.0.1:$NFS_PORT" --mount-listen "127.0.0.1:$MOUNT_PORT" --rdma-listen "" --no-portmap --no-nlm --state-dir "$OUT/state" --log-level warn >>"$OUT/setup.log" 2>&1 &
  pid=$!; wait_port $NFS_PORT $pid
  head -c 268435456 /dev/urandom > "$OUT/f.bin"
  i=0; for b in $BINS ganesha; do
    [ $b = ganesha ] && nm=ganesha || nm=g$i; i=$((i+1))
    "$first" mkdir "nfs://127.0.0.1:$NFS_PORT/bench/d-$nm?mountport=$MOUNT_PORT"
    "$first" cp "$OUT/f.bin" "nfs://127.0.0.1:$NFS_PORT/bench/d-$nm/f.bin?mountport=$MOUNT_PORT"
  done
  rm -f "$OUT/f.bin"
  kill $pid; wait $pid 2>/dev/null || true
  sleep 1
  srvs=(); i=0; for b in $BINS; do srvs+=("g$i"); i=$((i+1)); done; srvs+=(ganesha)
  read -r -a bins <<<"$BINS"
  for rep in $(seq 1 ${REPS:-3}); do
    n=${#srvs[@]}
    for k in $(seq 0 $((n-1))); do
      s=${srvs[$(((k+rep-1)%n))]}
      case $s in
      ganesha)
        cat >"$OUT/ganesha.conf" <<G
NFS_CORE_PARAM { Protocols = 3; NFS_Port = $NFS_PORT; MNT_Port = $MOUNT_PORT; Enable_NLM = false; Enable_RQUOTA = false; }
NFSV4 { Graceless = true; RecoveryBackend = fs; }
NFS_KRB5 { Active_krb5 = false; }
LOG { Default_Log_Level = WARN; }
CEPH { Ceph_Conf = $CEPH_CONF; }
EXPORT { Export_Id = 1; Path = /d-ganesha; Pseudo = /bench; Access_Type = RW; Squash = No_Root_Squash; Protocols = 3; Transports = TCP; SecType = sys;
 FSAL { Name = CEPH; User_Id = "admin"; Filesystem = "cephfs"; } }
G
        ganesha.nfsd -F -f "$OUT/ganesha.conf" -L "$OUT/ganesha.log" -p /run/ganesha/ganesha.pid & pid=$!; exp=/d-ganesha ;;
      g*)
        b=${bins[${s#g}]}
        prof=(); [ "${PPROF:-0}" = 1 ] && prof=(--cpu-profile "$OUT/$s.$rep.pprof")
        printf '/bench -backend=cephfs,ceph_conf=%s,ceph_path=/d-%s,fsid=3 127.0.0.1(rw,insecure,no_root_squash)\n' "$CEPH_CONF" "$s" >"$OUT/exports"
        "$b" serve --exports "$OUT/exports" --listen "127.0.0.1:$NFS_PORT" --mount-listen "127.0.0.1:$MOUNT_PORT" --rdma-listen "" --no-portmap --no-nlm --state-dir "$OUT/state" --log-level warn "${prof[@]}" >>"$OUT/$s.log" 2>&1 & pid=$!; exp=/bench ;;
      esac
      wait_port $NFS_PORT $pid; wait_port $MOUNT_PORT $pid
      [ "${PERF:-0}" = stat ] && { perf stat -e task-clock,page-faults,context-switches,cpu-migrations -p $pid -o "$OUT/$s.$rep.stat" >/dev/null 2>&1 & perfpid=$!; }
      [ "${PERF:-0}" = record ] && { perf record -F 499 -g -p $pid -o "$OUT/$s.$rep.perf" >/dev/null 2>&1 & perfpid=$!; }
      for r in $(seq 1 ${READS:-3}); do
        if [ "${MODE:-fio}" = meta ]; then
          timeout 600 "$first" bench --port $NFS_PORT --mountport $MOUNT_PORT --files "${FILES:-3000}" --qd 4 --skip seq-write,seq-read,rand-read,stat --uid 0 --gid 0 --server-pid $pid --quiet --json "$OUT/$s.$rep.$r.bench.json" "127.0.0.1:$exp" >/dev/null 2>"$OUT/$s.$rep.$r.err" || echo "bench failed $s $rep $r" >&2
          python3 -c "
import json;d=json.load(open('$OUT/$s.$rep.$r.bench.json'))
ph={p['name']:p for p in d['phases']}
c,m=ph['create'],ph['remove']
print('$s\t$rep\t$r\tC %.1f %.1f\tD %.1f %.1f\t'%(c['ops_per_s'],c.get('server_cpu_us_per_op',0),m['ops_per_s'],m.get('server_cpu_us_per_op',0))+open('/proc/loadavg').read().split()[0])" | tee -a "$OUT/results.tsv"
          continue
        fi
        if [ "${MODE:-fio}" = bench ]; then
          timeout 600 "$first" bench --port $NFS_PORT --mountport $MOUNT_PORT --size 256MiB --block 1MiB --qd 4 --skip rand-read,create,stat,remove --uid 0 --gid 0 --server-pid $pid --quiet --json "$OUT/$s.$rep.$r.bench.json" "127.0.0.1:$exp" >/dev/null 2>"$OUT/$s.$rep.$r.err" || echo "bench failed $s $rep $r" >&2
          python3 -c "
import json;d=json.load(open('$OUT/$s.$rep.$r.bench.json'))
ph={p['name']:p for p in d['phases']}
w,r=ph['seq-write'],ph['seq-read']
print('$s\t$rep\t$r\tW %.1f %.3f\tR %.1f %.3f\t'%(w['mib_per_s'],w.get('server_cpu_s_per_gib',0),r['mib_per_s'],r.get('server_cpu_s_per_gib',0))+open('/proc/loadavg').read().split()[0])" | tee -a "$OUT/results.tsv"
          continue
        fi
        c0=$(cpu $pid)
        "$FIO" --name=read --ioengine=nfs --nfs_url="nfs://127.0.0.1$exp?nfsport=$NFS_PORT&mountport=$MOUNT_PORT&version=3&uid=0&gid=0" \
          --filename=f.bin --rw=read --bs=1048576 --iodepth=4 --size=268435456 --output-format=json --output="$OUT/$s.$rep.$r.json" >/dev/null 2>"$OUT/$s.$rep.$r.err" || echo "fio failed $s $rep $r" >&2
        c1=$(cpu $pid)
        bw=$(python3 -c "import json;d=json.load(open('$OUT/$s.$rep.$r.json'));print('%.1f'%(d['jobs'][0]['read']['bw_bytes']/1048576))")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$rep" "$r" "$bw" "$(awk -v a=$c0 -v b=$c1 'BEGIN{printf "%.3f",(b-a)*4}')" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/results.tsv"
      done
      [ "${PERF:-0}" != 0 ] && { kill -INT $perfpid; wait $perfpid 2>/dev/null || true; }
      kill $pid; wait $pid 2>/dev/null || true
      for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$NFS_PORT") 2>/dev/null || break; sleep 0.1; done
    done
  done
  kill $RPCB
  exit 0
fi
OUT=${1:?usage: bench-ceph-read.sh OUT}
[ "$(id -u)" = 0 ] || { echo "bench-ceph-read: needs root" >&2; exit 1; }
mkdir -p "$OUT/state"
GO=${GO:-go}
if [ -z "${BINS:-}" ]; then
	(cd "$ROOT" && CGO_ENABLED=1 $GO build -tags ceph -o "$OUT/gonfsrdma" ./cmd/gonfsrdma)
	BINS=$OUT/gonfsrdma
fi
[ "${MODE:-fio}" = bench ] || [ "${MODE:-fio}" = meta ] || FIO=$("$ROOT/scripts/fio-nfs.sh" "$OUT/fio-build.log")
export BINS REPS READS PERF PPROF MODE FIO FILES
echo "bench-ceph-read: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), gonfsrdma $(cd "$ROOT" && git rev-parse --short HEAD)" >&2
"$ROOT/scripts/ceph-cluster.sh" run unshare -m --propagation private "$0" --inner "$OUT"
