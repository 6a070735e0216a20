#!/usr/bin/env bash
# bench-cp.sh: `gonfsrdma cp` beside libnfs's `nfs-cp`, same server, same
# file, side by side in one run. One gonfsrdma server (`serve`, TCP only)
# on 127.0.0.1 in a private network and mount namespace, its export and
# the local files on a tmpfs; a random source file copied in (local ->
# server) and out (server -> local) by every client, repetitions
# interleaved (the order of the clients rotates each repetition), every
# copy compared byte for byte with the source. Per copy: wall time, the
# client's CPU (user+sys, from /usr/bin/time), the server's CPU (its
# /proc/PID/stat around the copy) and the 1-minute load average at its
# start (other work on the machine; a comparison holds only inside one
# run). The summary prints medians per client and direction and the
# speed-up over nfs-cp (nfs-cp's median wall time / the client's).
#
# Environment:
#   CP_SIZE     source file size (256MiB)
#   CP_REPS     repetitions (7)
#   CP_CLIENTS  space-separated clients (default "nfs-cp gonfsrdma"):
#               nfs-cp, or LABEL[=BINARY][?QUERY] for `BINARY cp` (default
#               the gonfsrdma built from this tree) with QUERY added to its
#               nfs:// URLs (e.g. "d16?depth=16" or "old=/tmp/gonfsrdma-old")
#   CP_SERVER   the server binary (default: the one built from this tree)
#   CP_OUT      results directory (default a temp dir, printed at the end)
# Needs root (unshare, mount) and libnfs-utils (nfs-cp). Nothing is
# written into the repo but bin/gonfsrdma.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${CP_SIZE:-256MiB}
REPS=${CP_REPS:-7}
CLIENTS=${CP_CLIENTS:-"nfs-cp gonfsrdma"}
GO=${GO:-go}
NFS_PORT=2049
MOUNT_PORT=20048

log() { echo "bench-cp: $*" >&2; }
# bytes SIZE: 256MiB, 256M, 1GiB -> bytes (powers of 1024)
bytes() {
	local v=${1%B}
	numfmt --from=iec "${v%i}"
}

# ---------------------------------------------------------------- inner --
# Runs inside `unshare -n -m`: no network but our loopback.
if [ "${1:-}" = --inner ]; then
	WORK=$2
	OUT=$3
	SERVER=$4
	ip link set lo up
	mount -t tmpfs -o size=4g,mode=0755 tmpfs "$WORK/fs"
	EXP=$WORK/fs/export
	LOCAL=$WORK/fs/local
	mkdir -p "$EXP" "$LOCAL" "$WORK/state"
	chmod 0777 "$EXP"
	n=$(bytes "$SIZE")
	head -c "$n" /dev/urandom >"$LOCAL/src.bin"
	cp "$LOCAL/src.bin" "$EXP/src.bin"
	chmod 0644 "$EXP/src.bin"

	"$SERVER" serve --default-export "$EXP" --listen "127.0.0.1:$NFS_PORT" \
		--mount-listen "127.0.0.1:$MOUNT_PORT" --rdma-listen "" --no-portmap --no-nlm \
		--state-dir "$WORK/state" --log-level warn >>"$OUT/server.log" 2>&1 &
	SRV=$!
	trap 'kill $SRV 2>/dev/null || true; wait $SRV 2>/dev/null || true' EXIT
	for _ in $(seq 1 300); do
		kill -0 "$SRV" 2>/dev/null || {
			log "server exited: $(tail -3 "$OUT/server.log")"
			exit 1
		}
		(exec 3<>"/dev/tcp/127.0.0.1/$NFS_PORT") 2>/dev/null && break
		sleep 0.1
	done

	srv_ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }
	hz=$(getconf CLK_TCK)
	gq="mountport=$MOUNT_PORT&uid=1000&gid=1000"
	lq="nfsport=$NFS_PORT&mountport=$MOUNT_PORT&version=3&uid=1000&gid=1000"
	url_g="nfs://127.0.0.1:$NFS_PORT$EXP"
	url_l="nfs://127.0.0.1$EXP"

	# one CLIENT DIR REP: one copy, one TSV line:
	# client dir rep wall_s client_cpu_s server_cpu_s load1 check
	one() {
		local c=$1 dir=$2 rep=$3 label bin query src dst want tf rc=0 s0 s1 load check
		label=${c%%[=?]*}
		tf=$WORK/time.out
		if [ "$c" = nfs-cp ]; then
			if [ "$dir" = in ]; then
				src=$LOCAL/src.bin dst=$url_l/in-$label.bin?$lq want=$EXP/in-$label.bin
			else
				src=$url_l/src.bin?$lq dst=$LOCAL/out-$label.bin want=$LOCAL/out-$label.bin
			fi
			set -- nfs-cp "$src" "$dst"
		else
			bin=${c%%\?*}
			case $bin in *=?*) bin=${bin#*=} ;; *) bin=$WORK/gonfsrdma ;; esac
			query=$gq
			case $c in *\?*) query="$gq&${c#*\?}" ;; esac
			if [ "$dir" = in ]; then
				src=$LOCAL/src.bin dst=$url_g/in-$label.bin?$query want=$EXP/in-$label.bin
			else
				src=$url_g/src.bin?$query dst=$LOCAL/out-$label.bin want=$LOCAL/out-$label.bin
			fi
			set -- "$bin" cp -q "$src" "$dst"
		fi
		sync
		load=$(cut -d' ' -f1 /proc/loadavg)
		s0=$(srv_ticks)
		/usr/bin/time -f '%e %U %S' -o "$tf" timeout 300 "$@" >>"$OUT/client.log" 2>&1 || rc=$?
		s1=$(srv_ticks)
		if [ "$rc" != 0 ]; then
			check="FAIL(exit $rc)"
		elif ! cmp -s "$LOCAL/src.bin" "$want"; then
			check="FAIL(not byte-identical)"
		else
			check=ok
		fi
		# through the server: a file unlinked beside it would stay open
		# in its descriptor cache and keep its tmpfs pages
		case $want in
		"$EXP"/*) "$WORK/gonfsrdma" rm -f "$url_g/${want#"$EXP"/}?$gq" >>"$OUT/client.log" 2>&1 ;;
		*) rm -f "$want" ;;
		esac
		read -r wall u s <"$tf" || true
		awk -v c="$label" -v d="$dir" -v r="$rep" -v w="$wall" -v u="$u" -v s="$s" \
			-v sv="$((s1 - s0))" -v hz="$hz" -v l="$load" -v k="$check" \
			'BEGIN { printf "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t%s\n", c, d, r, w, u + s, sv / hz, l, k }' >>"$OUT/copies.tsv"
		tail -1 "$OUT/copies.tsv" >&2
	}

	read -r -a list <<<"$CLIENTS"
	printf 'client\tdir\trep\twall_s\tclient_cpu_s\tserver_cpu_s\tload1\tcheck\n' >"$OUT/copies.tsv"
	# warm-up, not measured: the server's first READs and WRITEs, page
	# cache and tmpfs pages touched once
	for c in "${list[@]}"; do one "$c" in 0 && one "$c" out 0; done >/dev/null 2>&1
	sed -i '2,$d' "$OUT/copies.tsv"
	for rep in $(seq 1 "$REPS"); do
		k=${#list[@]}
		for dir in in out; do
			for i in $(seq 0 $((k - 1))); do
				one "${list[$(((i + rep) % k))]}" "$dir" "$rep"
			done
		done
	done
	exit 0
fi

# ---------------------------------------------------------------- outer --
if [ "$(id -u)" != 0 ]; then
	echo "bench-cp: needs root (network and mount namespaces)" >&2
	exit 1
fi
command -v nfs-cp >/dev/null || {
	echo "bench-cp: nfs-cp missing (apt-get install libnfs-utils)" >&2
	exit 1
}
WORK=$(mktemp -d /tmp/bench-cp.XXXXXX)
OUT=${CP_OUT:-$WORK/results}
mkdir -p "$OUT" "$WORK/fs"
trap 'rm -f "$WORK/gonfsrdma"; rmdir "$WORK/fs" 2>/dev/null || true' EXIT
log "building gonfsrdma"
(cd "$ROOT" && $GO build -o bin/gonfsrdma ./cmd/gonfsrdma)
cp "$ROOT/bin/gonfsrdma" "$WORK/gonfsrdma"
SERVER=${CP_SERVER:-$WORK/gonfsrdma}
log "$REPS repetitions of $SIZE in and out: $CLIENTS (results in $OUT)"
CP_SIZE=$SIZE CP_REPS=$REPS CP_CLIENTS=$CLIENTS \
	unshare -n -m --propagation private "$0" --inner "$WORK" "$OUT" "$SERVER"

echo
echo "== bench-cp: $(nproc) cores, kernel $(uname -r), $SIZE on tmpfs, gonfsrdma $(cd "$ROOT" && git rev-parse --short HEAD), $REPS reps, $(nfs-cp 2>&1 | head -1 >/dev/null; dpkg-query -W -f 'libnfs-utils ${Version}' libnfs-utils 2>/dev/null || echo 'libnfs-utils ?')"
# medians per client and direction; speed-up = nfs-cp's median wall / this one's
awk -F'\t' -v size="$(bytes "$SIZE")" '
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
NR == 1 { next }
{
	k = $1 SUBSEP $2
	if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
	wall[k] = wall[k] " " $4; ccpu[k] = ccpu[k] " " $5; scpu[k] = scpu[k] " " $6
	if (!(k in lmin) || $7 + 0 < lmin[k]) lmin[k] = $7 + 0
	if (!(k in lmax) || $7 + 0 > lmax[k]) lmax[k] = $7 + 0
	n[k]++
	if ($8 != "ok") bad[k]++
}
END {
	printf "%-14s %-4s %4s %9s %9s %11s %11s %9s %11s  %s\n", "client", "dir", "n", "wall_s", "MiB/s", "client_cpu", "server_cpu", "vs_nfscp", "load", "checks"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, p, SUBSEP)
		w = median(wall[k]); base = median(wall["nfs-cp" SUBSEP p[2]])
		printf "%-14s %-4s %4d %9.3f %9.1f %11.3f %11.3f %8.2fx %5.1f-%-5.1f  %s\n", p[1], p[2], n[k], w, size / 1048576 / w,
			median(ccpu[k]), median(scpu[k]), (base > 0 ? base / w : 0), lmin[k], lmax[k], (bad[k] ? bad[k] " FAILED" : "all byte-identical")
		if (bad[k]) failed = 1
	}
	exit failed
}' "$OUT/copies.tsv"
echo "== per copy: $OUT/copies.tsv"
