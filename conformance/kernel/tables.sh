#!/bin/bash
# tables.sh: the report tables of the kernel-VM run, built on the host from
# the guest's result files (plain text, so no JSON tool is needed).
#
#   tables.sh conformance-text RESULTS   per-server closing lines and one line
#                                        per test (4 columns), reasons below
#   tables.sh conformance-md RESULTS     the same as a Markdown table
#                                        (docs/conformance-results.md)
#   tables.sh perf RESULTS ROWS.tsv      kernel-client dd MiB/s and bench
#                                        phases, knfsd vs gonfsrdma, ratios
#   tables.sh locks RESULTS ROWS.tsv     the "locks:" rows side by side, both
#                                        servers, RDMA and TCP: status, checks
#                                        and each row's measured times
#   tables.sh stalls RESULTS SERVER_RESULTS
#                                        each guest's emulated-NIC transmit
#                                        stalls and the rows run again after
#                                        one (nothing when there were none)
#
# RESULTS is share/results of a run: conf-SERVER-XPORT.txt (the output of
# `gonfsrdma conformance`: "CODE Name : STATUS", the reason indented on the
# next line, then "N passed, N failed, N warned, N omitted") and
# bench-SERVER-XPORT.txt (the table `gonfsrdma bench` prints).
set -euo pipefail

usage() { echo "usage: $0 conformance-text|conformance-md RESULTS | perf|locks RESULTS ROWS.tsv | stalls RESULTS SERVER_RESULTS" >&2; exit 2; }
(($# >= 2)) || usage
cmd=$1 res=$2
[[ -d $res ]] || { echo "$0: no results directory $res" >&2; exit 2; }

COLS="knfsd-tcp knfsd-rdma gonfsrdma-tcp gonfsrdma-rdma"

# conf_awk MODE: reads every conf-*.txt present (in COLS order)
conf_awk() {
	local files=() c
	for c in $COLS; do
		[[ -s $res/conf-$c.txt ]] && files+=("$res/conf-$c.txt")
	done
	((${#files[@]})) || { echo "no conformance results in $res" >&2; return 1; }
	awk -v mode="$1" -v cols="$COLS" '
		FNR == 1 {
			col = FILENAME; sub(/.*\/conf-/, "", col); sub(/\.txt$/, "", col)
			prev = ""
		}
		prev != "" && /^    / {
			r = substr($0, 5)
			reason[col, prev] = ((col, prev) in reason) ? reason[col, prev] "; " r : r
			next
		}
		{ prev = "" }
		$(NF - 1) == ":" && $NF ~ /^(PASS|FAIL|WARN|OMIT)$/ {
			code = $1; prev = code
			if (!(code in seen)) { seen[code] = 1; order[++n] = code; name[code] = $2 }
			st[col, code] = $NF; cnt[col, $NF]++
			next
		}
		/^[0-9]+ passed, [0-9]+ failed, [0-9]+ warned, [0-9]+ omitted$/ { closing[col] = $0 }
		function md(s) { gsub(/\|/, "\\|", s); return s }
		function cell(c, k,   s) {
			if (!((c, k) in st)) return "–"
			s = st[c, k]
			if (s != "PASS" && ((c, k) in reason)) s = s ": " md(reason[c, k])
			return s
		}
		END {
			nc = split(cols, C, " ")
			if (mode == "text") {
				for (i = 1; i <= nc; i++)
					printf "%-16s %s\n", C[i] ":", ((C[i] in closing) ? closing[C[i]] : "not run (or did not complete)")
				printf "\n%-8s %-28s", "code", "name"
				for (i = 1; i <= nc; i++) printf " %-15s", C[i]
				printf "\n"
				for (j = 1; j <= n; j++) {
					k = order[j]
					printf "%-8s %-28s", k, name[k]
					for (i = 1; i <= nc; i++) printf " %-15s", (((C[i], k) in st) ? st[C[i], k] : "-")
					printf "\n"
				}
				printf "\nreasons (every result that is not PASS):\n"
				for (j = 1; j <= n; j++) {
					k = order[j]
					for (i = 1; i <= nc; i++)
						if (((C[i], k) in st) && st[C[i], k] != "PASS")
							printf "  %-8s %-15s %s: %s\n", k, C[i], st[C[i], k], (((C[i], k) in reason) ? reason[C[i], k] : "")
				}
			} else {
				printf "| Code | Name | knfsd TCP | knfsd RDMA | gonfsrdma TCP | gonfsrdma RDMA | NFS-Ganesha (host, TCP) |\n"
				printf "|---|---|---|---|---|---|---|\n"
				for (j = 1; j <= n; j++) {
					k = order[j]
					printf "| %s | %s |", k, name[k]
					for (i = 1; i <= nc; i++) printf " %s |", cell(C[i], k)
					printf " |\n"
				}
				printf "| **totals** | PASS / FAIL / WARN / OMIT |"
				for (i = 1; i <= nc; i++)
					printf " %d / %d / %d / %d |", cnt[C[i], "PASS"], cnt[C[i], "FAIL"], cnt[C[i], "WARN"], cnt[C[i], "OMIT"]
				printf " |\n"
			}
		}' "${files[@]}"
}

perf() {
	local rows=${1:-}
	[[ -n $rows && -f $rows ]] || usage
	local files=() f
	for f in "$res"/bench-*.txt; do [[ -s $f ]] && files+=("$f"); done
	local cost=()
	[[ -s $res/client-rdma.tsv ]] && cost=("$res/client-rdma.tsv")
	[[ -s $res/guest-cpu.tsv ]] && cost+=("$res/guest-cpu.tsv")
	awk -F'\t' -v OFS='\t' '
		# kernel client dd of the large file, from the workload rows
		FILENAME ~ /rows\.tsv$/ {
			if ($4 != "PASS" || $5 <= 0) next
			if ($3 ~ /^write [0-9]+ MiB$/ || $3 ~ /^read [0-9]+ MiB$/) {
				split($3, w, " ")
				m = (w[1] == "write") ? "dd write " w[2] " MiB, conv=fsync (MiB/s)" : "dd read " w[2] " MiB, cold cache (MiB/s)"
				v[$1 "-" $2, m] = w[2] / ($5 / 1000)
				if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			}
			next
		}
		# the kernel client'"'"'s own RDMA cost per phase (guest/test.sh
		# step_client_rdma_cost): lower is better
		FILENAME ~ /client-rdma\.tsv$/ {
			split("local invalidations|MRs allocated|failed marshals", what, "|")
			for (j = 1; j <= 3; j++) {
				m = "client " what[j] ", " $3
				v[$1 "-" $2, m] = $(3 + j)
				if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			}
			next
		}
		# CPU time and rxe loss of the large write and read and of
		# gonfsrdma cp in and out on both guests (guest/test.sh
		# phase_cpu_end): lower is better. The dd rows take the dd alone
		# from it (the row also times its checks).
		FILENAME ~ /guest-cpu\.tsv$/ {
			if ($4 <= 0) next
			k = $1 "-" $2
			split($3, w, " ")
			if (w[3] == "write" || w[3] == "read") {
				m = (w[3] == "write") ? "dd write " w[1] " MiB, conv=fsync (MiB/s)" : "dd read " w[1] " MiB, cold cache (MiB/s)"
				if ((k, m) in v) v[k, m] = w[1] / ($4 / 1000)
			} else if (w[3] == "cp") {
				# gonfsrdma cp (the user-space client) of the same run
				m = "gonfsrdma cp " w[1] " MiB " w[4] " (MiB/s)"
				v[k, m] = w[1] / ($4 / 1000)
				if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			}
			split("client guest CPU s|server guest CPU s|server CPU s", what, "|")
			for (j = 1; j <= 3; j++) {
				m = what[j] ", " $3
				v[k, m] = $(4 + j) / 1000
				if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			}
			m = "server guest busy %, " $3
			v[k, m] = 100 * $6 / $4
			if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			if (NF >= 13 && $2 == "rdma") {
				m = "rxe loss signs (both guests), " $3
				v[k, m] = $10 + $13
				if (!(m in seen)) { seen[m] = 1; order[++n] = m }
			}
			next
		}
		{
			col = FILENAME; sub(/.*\/bench-/, "", col); sub(/\.txt$/, "", col)
			split($0, a, " ")
			if (FNR == 1 && $0 ~ /^server /) { hdr = $0; sub(/^server [^ ]+ over [a-z]+: /, "", hdr) }
			if (!(a[2] ~ /^[0-9]+$/ && a[3] ~ /^[0-9.]+$/)) next
			if (a[4] != "-") { m = "bench " a[1] " (MiB/s)"; x = a[4] }
			else { m = "bench " a[1] ((a[1] == "rand-read") ? " (IOPS)" : " (ops/s)"); x = a[5] }
			if (a[1] == "rand-read") { m = "bench rand-read 4 KiB (IOPS)"; x = a[5] }
			v[col, m] = x
			if (!(m in seen)) { seen[m] = 1; order[++n] = m }
		}
		function c(k, m) { return ((k, m) in v) ? sprintf("%.1f", v[k, m]) : "-" }
		function r(a, b, m) { return (((a, m) in v) && ((b, m) in v) && v[a, m] > 0) ? sprintf("%.2f", v[b, m] / v[a, m]) : "-" }
		END {
			if (n == 0) { print "no performance results"; exit 1 }
			printf "| %-44s | %10s | %10s | %5s | %10s | %10s | %5s |\n", "metric", "knfsd RDMA", "gonf RDMA", "ratio", "knfsd TCP", "gonf TCP", "ratio"
			printf "|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:", "---:"
			for (i = 1; i <= n; i++) {
				m = order[i]
				printf "| %-44s | %10s | %10s | %5s | %10s | %10s | %5s |\n", m,
					c("knfsd-rdma", m), c("gonfsrdma-rdma", m), r("knfsd-rdma", "gonfsrdma-rdma", m),
					c("knfsd-tcp", m), c("gonfsrdma-tcp", m), r("knfsd-tcp", "gonfsrdma-tcp", m)
			}
			if (hdr != "") printf "\nbench: %s\n", hdr
		}' "$rows" "${cost[@]}" "${files[@]}"
}

# locks ROWS.tsv: one line per lock row (the two mount rows, whose commands
# differ per transport, are one "mount as an admin types it" line), one
# column per server and transport: PASS/FAIL/SKIP, the checks that failed
# when any did, and the row's times (grant after unlock, reclaim after the
# restart, release after sm-notify). "-" where the row did not run.
locks() {
	local rows=${1:?rows.tsv}
	[[ -s $rows ]] || { echo "no rows in $rows" >&2; return 1; }
	awk -F'\t' '
		$3 !~ /^locks: / || ($1 != "knfsd" && $1 != "gonfsrdma") { next }
		{
			name = substr($3, 8)
			if (name ~ /^mount /) { cmd[$2] = name; name = "mount as an admin types it (no ports, no nolock)" }
			if (!(name in seen)) { seen[name] = 1; order[++n] = name }
			d = $6; t = ""
			if (match(d, /[0-9]+ checks, [0-9]+ failed/)) {
				split(substr(d, RSTART, RLENGTH), ck, /[ ,]+/)
				t = (ck[1] - ck[3]) "/" ck[1]
			}
			while (match(d, /(unlock-to-grant: [0-9]+ ms(, [0-9]+ ms)*|release-to-grant: [0-9]+ ms|back on the server [0-9]+ ms|granted [0-9]+ ms after|freed [0-9]+ ms)/)) {
				m = substr(d, RSTART, RLENGTH); d = substr(d, RSTART + RLENGTH)
				sub(/^unlock-to-grant: |^release-to-grant: /, "grant ", m)
				sub(/^back on the server /, "reclaim ", m)
				sub(/^granted /, "B ", m); sub(/ after$/, "", m)
				t = t (t == "" ? "" : ", ") m
			}
			cell[$1 "-" $2, name] = $4 (t == "" ? "" : " " t) sprintf(" (%.0f s)", $5 / 1000)
		}
		END {
			if (n == 0) { print "no lock rows"; exit }
			split("knfsd-rdma gonfsrdma-rdma knfsd-tcp gonfsrdma-tcp", c, " ")
			printf "| %-48s | %-30s | %-30s | %-30s | %-30s |\n", "lock row", "knfsd RDMA", "gonfsrdma RDMA", "knfsd TCP", "gonfsrdma TCP"
			printf "|---|---|---|---|---|\n"
			for (i = 1; i <= n; i++) {
				k = order[i]; line = sprintf("| %-48s", k)
				for (j = 1; j <= 4; j++) line = line sprintf(" | %-30s", ((c[j], k) in cell) ? cell[c[j], k] : "-")
				print line " |"
			}
			print "N/M: checks passed of those the row made; (N s): the row'"'"'s time; grant: unlock (or flock release) to the waiter'"'"'s grant;"
			print "reclaim: server restart to the reclaimed lock on the server; B: A'"'"'s unlock to B'"'"'s grant after it; freed: sm-notify to the locks gone"
			for (x in cmd) printf "mount over %s: %s\n", x, cmd[x]
		}' "$rows"
}

# stalls CLIENT_RESULTS SERVER_RESULTS: the emulated NICs' transmit stalls
# (guest/init's tx_watchdog writes eth0-stalls) and the rows that failed in
# one and ran again (guest/test.sh's run_step writes stall-retries)
stalls() {
	local g f
	for g in client:"$res" server:"$1"; do
		f=${g#*:}/eth0-stalls
		if [[ -s $f ]]; then
			echo "${g%%:*} guest: $(wc -l <"$f") transmit stall(s) of its emulated NIC, each met by a NIC reset: $(awk '{ printf "%s%s", s, $0; s = "; " }' "$f")"
		fi
	done
	f=$res/stall-retries
	if [[ -s $f ]]; then
		echo "rows that failed during a NIC stall and ran again ($(wc -l <"$f")); their rows above say how the second attempt went:"
		sed 's/^/  /' "$f"
	fi
	return 0
}

case $cmd in
conformance-text) conf_awk text ;;
conformance-md) conf_awk md ;;
perf) shift 2; perf "$@" ;;
locks) shift 2; locks "$@" ;;
stalls) (($# == 3)) || usage; stalls "$3" ;;
*) usage ;;
esac
