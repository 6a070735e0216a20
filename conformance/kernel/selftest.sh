#!/usr/bin/env bash
# selftest.sh: checks guest/test.sh's step runner on the host, without a
# guest: a step that fails while an emulated NIC stalls runs once more and
# its row says why; a failure without a stall, or a second failure, stays
# a failure; wait_or_kill passes a dd that ends well and fails one that
# hangs or fails; the report's stall lines come out under set -e with and
# without stalls. Run by `make test`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/res"
sed -e "s#^CONF=/share/guest/config#CONF=$T/config#" -e "s#^RES=/share/results#RES=$T/res#" \
	"$HERE/guest/test.sh" >"$T/test.sh"
cp "$HERE/guest/rows_rmrf.sh" "$T/"
printf 'SERVERS=gonfsrdma\nROLE=server\n' >"$T/config"
cat >"$T/run.sh" <<'EOS'
LIB_ONLY=1 source "$T/test.sh"
set -m
REASON=$T/reason DEADLINE=0 FAILED=0
stall_now() { echo "$EPOCHSECONDS tx_timeout 0 -> 1, tx_packets 5" >>"$RES/eth0-stalls"; }
step_stalled_once() { if [[ ! -e $T/once ]]; then : >"$T/once"; stall_now; fail "short write"; fi; }
step_broken() { fail "wrong content"; }
step_stalled_twice() { stall_now; fail "still broken"; }
step_ok() { :; }
step_dd_ends() { sleep 0.2 & wait_or_kill $! 5 "after the test"; }
step_dd_hangs() { sleep 30 & wait_or_kill $! 1 "after the test"; }
step_dd_fails() { (exit 3) & wait_or_kill $! 5 "after the test"; }
run_step gonfsrdma rdma stalled-once 10 step_stalled_once
run_step gonfsrdma rdma ok 10 step_ok
rm -f "$RES/eth0-stalls"
run_step gonfsrdma rdma broken 10 step_broken
run_step gonfsrdma rdma stalled-twice 10 step_stalled_twice
rm -f "$RES/eth0-stalls"
run_step gonfsrdma rdma dd-ends 10 step_dd_ends
run_step gonfsrdma rdma dd-hangs 10 step_dd_hangs
run_step gonfsrdma rdma dd-fails 10 step_dd_fails
exit 0
EOS
T=$T bash "$T/run.sh" >"$T/out" 2>&1 || { cat "$T/out"; echo "selftest: the runner script failed"; exit 1; }
bad=0
want() { # name status reason-regex
	local line
	line=$(awk -F'\t' -v n="$1" '$3 == n' "$T/res/rows.tsv")
	if [[ $(cut -f4 <<<"$line") != "$2" || ! $(cut -f6 <<<"$line") =~ $3 ]]; then
		echo "selftest: row $1: want $2 /$3/, got: $line"
		bad=1
	fi
}
want stalled-once PASS '^ran again: its first attempt failed while the emulated NIC of .* stalled .*first attempt: short write'
want ok PASS '^$'
want broken FAIL '^wrong content$'
want stalled-twice FAIL '^ran again: .*first attempt: still broken.*; still broken$'
want dd-ends PASS '^$'
want dd-hangs FAIL '^dd did not finish within 1 s after the test$'
want dd-fails FAIL '^dd exited 3 after the test$'
[[ $(wc -l <"$T/res/rows.tsv") == 7 ]] || { echo "selftest: want 7 rows, got:"; cat "$T/res/rows.tsv"; bad=1; }
[[ $(cut -f3 "$T/res/stall-retries" | tr '\n' ' ') == "stalled-once stalled-twice " ]] || { echo "selftest: stall-retries:"; cat "$T/res/stall-retries"; bad=1; }
# the report's stall lines (tables.sh stalls, run by run.sh under set -e):
# none without stalls, each guest's stalls and the rows run again with them
mkdir -p "$T/none" "$T/sres"
out=$("$HERE/tables.sh" stalls "$T/none" "$T/none") || { echo "selftest: tables.sh stalls failed without stalls"; bad=1; }
[[ -z $out ]] || { echo "selftest: tables.sh stalls without stalls said: $out"; bad=1; }
echo "1796183466 tx_timeout 0 -> 1, tx_packets 5" >"$T/sres/eth0-stalls"
out=$("$HERE/tables.sh" stalls "$T/res" "$T/sres") || { echo "selftest: tables.sh stalls failed"; bad=1; }
[[ $out == *"server guest: 1 transmit stall(s)"*"rows that failed during a NIC stall and ran again (2)"*stalled-once*stalled-twice* ]] ||
	{ echo "selftest: tables.sh stalls said: $out"; bad=1; }
# the performance table's CPU rows (tables.sh perf): the dd rows take the
# dd's own time from guest-cpu.tsv, each guest's CPU and the rxe loss
# signs per phase; a failed row keeps its dd row out
mkdir -p "$T/perf"
printf 'knfsd\trdma\twrite 64 MiB\tPASS\t9000\t\ngonfsrdma\trdma\twrite 64 MiB\tPASS\t9000\t\ngonfsrdma\ttcp\twrite 64 MiB\tFAIL\t100\tx\n' >"$T/perf/rows.tsv"
printf 'knfsd\trdma\t64 MiB write\t8000\t2000\t4000\t700\t70000\t4000\t500\t4000\t67000\t90\nknfsd\trdma\t128 MiB cp in\t16000\t1\t1\t1\t0\t0\t0\t0\t0\t0\ngonfsrdma\trdma\t128 MiB cp in\t8000\t1\t1\t1\t0\t0\t0\t0\t0\t0\ngonfsrdma\trdma\t64 MiB write\t4000\t3000\t3000\t1800\t90000\t900\t300\t900\t85000\t150\ngonfsrdma\ttcp\t64 MiB write\t2000\t1000\t2000\t1000\t0\t0\t0\t0\t0\t0\n' >"$T/perf/guest-cpu.tsv"
out=$("$HERE/tables.sh" perf "$T/perf" "$T/perf/rows.tsv") || { echo "selftest: tables.sh perf failed: $out"; bad=1; }
for line in 'dd write 64 MiB, conv=fsync \(MiB/s\) *\| *8.0 \| *16.0 \| *2.00 \| *- \| *- \|' \
	'server guest CPU s, 64 MiB write *\| *4.0 \| *3.0 \| *0.75 \| *- \| *2.0 \|' \
	'server CPU s, 64 MiB write *\| *0.7 \| *1.8 \| *2.57 \|' \
	'server guest busy %, 64 MiB write *\| *50.0 \| *75.0 \| *1.50 \| *- \| *100.0 \|' \
	'rxe loss signs \(both guests\), 64 MiB write *\| *590.0 \| *450.0 \| *0.76 \| *- \| *- \|' \
	'gonfsrdma cp 128 MiB in \(MiB/s\) *\| *8.0 \| *16.0 \| *2.00 \|'; do
	grep -Eq "$line" <<<"$out" || { echo "selftest: tables.sh perf has no line like: $line"; echo "$out"; bad=1; }
done
((bad == 0)) || { cat "$T/out"; exit 1; }
echo "kernel harness selftest: 7 rows as wanted (a stalled step runs again, a broken one does not; wait_or_kill); the perf table's CPU rows"
