#!/usr/bin/env bash
# bench-counters.sh [OLD_COMMIT] [ROUNDS]: what the call counters cost
# (docs/performance.md, "What the counters cost"). Builds the benchmark
# binaries of OLD_COMMIT (default 9e62204, the last with counters shared
# by all connections; its oncrpc gets this tree's counting benchmark in
# its own API) and of this tree, then runs every benchmark as old, off
# (-counting=false) and on, in random order every round, and prints the
# CPU time (user + system) per operation: a run of N iterations minus a
# run of 1 (the set-up), medians over the rounds and medians of the
# per-round ratios. CPU time rather than ns/op because on a shared
# machine wall time swings by tens of percent between runs.
set -euo pipefail
old=${1:-9e62204}
rounds=${2:-15}
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/go/bin:$PATH
work=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
git -C "$root" worktree add --detach "$work/old" "$old" >/dev/null 2>&1
# The counting benchmark without the in-process comparison, in the old API
# (a connection's Peer.Client acquired from the table; always counting).
awk '/^\/\/ BenchmarkCountingCostNull/ {exit} {print}' "$root/oncrpc/counting_bench_test.go" |
	sed -e 's#\td.OpenConn(&c.ex.From, clients)#\tc.ex.From.Client = clients.Acquire(c.ex.From.Remote.Addr())#' \
		-e '/d.SetCounting(\*benchCounting)/d' -e '/^\t"slices"$/d' -e '/^\t"time"$/d' >"$work/old/oncrpc/counting_bench_test.go"
for pkg in oncrpc nfs rpcrdma; do
	(cd "$work/old" && go test -c -o "$work/old-$pkg.test" "./$pkg/")
	(cd "$root" && go test -c -o "$work/new-$pkg.test" "./$pkg/")
done
# package benchmark iterations
benches="oncrpc CountingNull 2000000
oncrpc CountingNullParallel 2000000
oncrpc TCPNullDepth16 30000
nfs Getattr 200000
nfs Read1MiB 3000
nfs Write1MiB 3000
rpcrdma NFSGetattr 20000"
# cpu BIN DIR ITER ARGS...: CPU seconds (user + system) of one run.
cpu() {
	local bin=$1 dir=$2 n=$3
	shift 3
	local TIMEFORMAT='%3U %3S' t
	t=$({ time "$bin" -test.run '^$' -test.bench "^Benchmark$bench\$" -test.count 1 -test.benchtime "${n}x" "$@" >/dev/null 2>&1; } 2>&1)
	echo "$t" | awk '{print $1 + $2}'
}
: >"$work/results"
for r in $(seq "$rounds"); do
	while read -r pkg bench n; do
		for v in old off on; do echo "$pkg $bench $n $v"; done
	done <<<"$benches" | shuf >"$work/jobs"
	while read -r pkg bench n v; do
		case $v in
		old) bin=$work/old-$pkg.test dir=$work/old/$pkg args=() ;;
		off) bin=$work/new-$pkg.test dir=$root/$pkg args=(-counting=false) ;;
		on) bin=$work/new-$pkg.test dir=$root/$pkg args=() ;;
		esac
		one=$(cd "$dir" && cpu "$bin" "$dir" 1 "${args[@]}")
		all=$(cd "$dir" && cpu "$bin" "$dir" "$n" "${args[@]}")
		echo "$r $pkg/$bench $v $(awk -v a="$all" -v o="$one" -v n="$n" 'BEGIN {printf "%.1f", (a - o) / (n - 1) * 1e9}')" >>"$work/results"
	done <"$work/jobs"
	echo "round $r of $rounds done" >&2
done
# Per benchmark: medians of old, off, on and of the per-round ratios.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| benchmark | rounds | old ns | off ns | on ns | on/old | on/off | old/off |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for b in $(awk '{print $2}' "$work/results" | sort -u); do
	awk -v b="$b" '$2 == b {t[$1, $3] = $4; r[$1] = 1} END {for (k in r) if ((k, "old") in t && (k, "off") in t && (k, "on") in t) print t[k, "old"], t[k, "off"], t[k, "on"]}' "$work/results" >"$work/b"
	printf '| %s | %d | %s | %s | %s | %.3f | %.3f | %.3f |\n' "$b" "$(wc -l <"$work/b")" \
		"$(awk '{print $1}' "$work/b" | median)" "$(awk '{print $2}' "$work/b" | median)" "$(awk '{print $3}' "$work/b" | median)" \
		"$(awk '{print $3 / $1}' "$work/b" | median)" "$(awk '{print $3 / $2}' "$work/b" | median)" "$(awk '{print $1 / $2}' "$work/b" | median)"
done
