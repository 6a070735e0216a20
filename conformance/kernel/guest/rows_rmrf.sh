# rows_rmrf.sh: `rm -rf` of large directories through the mount (issue 17),
# sourced by test.sh; `rmrf_rows TRANSPORT MOUNT-OPTIONS` adds the rows to a
# workload (RMRF=1), or is the whole workload (RMRF=only, for targeted runs).
#
# For each directory: create it (on the server guest through `remote`, or
# through the mount from this client guest, which costs minutes),
# remount (a cold client cache), check that `find | wc -l` through the mount
# equals the server's own count of the exported tmpfs (`remote`), remount
# again (find cached the listing), remove it with busybox `rm -rf` and check
# that nothing is left, in the mount and on the server.
#
# busybox rm interleaves getdents and unlink the way rm -rf, make clean and
# package managers do (GNU rm's fts reads up to 100,000 entries of a
# directory before it removes any): when the client has to ask for the next
# page after removing the entries of the previous ones, the server must
# resume from its cookies after the directory changed (the failure of issue
# 17 on a 6.1 tmpfs). How often it has to ask depends on the page sizes the
# server lets the client grow to (FSINFO dtpref): every find and rm row
# notes the READDIR and READDIRPLUS calls it took (the per-op counts of
# /proc/self/mountstats, before and after), and gonfsrdma's row FAILS when
# it took more calls than knfsd's same row in this guest (knfsd runs
# first, as reference). run.sh prints them side by side.
#
# Every call-count note also gives the client's mean time per call of
# REMOVE, GETATTR, CREATE (mountstats "execute": queue + round trip, ms):
# the 6.1 client keeps the attributes READDIRPLUS gave an entry for acregmin
# (3 s) and stats it again (GETATTR) when rm reaches it later than that,
# so the GETATTR count of an rm row follows the time per call.
#
# The directories: RMRF_ROWS, a list of TRANSPORT/KIND/SIZE (each row on
# that transport, when it is in RMRF_TRANSPORTS and gonfsrdma runs it in
# this guest; not in the one-guest run, whose time is full):
#   T/mount/N        a flat directory of N 197-byte names created through
#                    the mount by treemake (conformance/kernel/treemake,
#                    built on the host) with RMRF_WRITERS creators at once
#   T/tree/DxWxF     a deep tree created through the mount by treemake: W
#                    directories on each of D levels, each level inside the
#                    first directory of the one above, F files in every
#                    directory
#   T/server/N       a flat directory of N long names created on the server
#                    guest (through `remote`: seconds)
# Before the find row the server's count is checked against what was made.

: "${RMRF_ROWS=tcp/mount/2500}" "${RMRF_WRITERS:=16}"
RMRF_BUSYBOX=/bin/busybox
RMRF_TREEMAKE=/share/bin/treemake
RMRF_CALLS=/tmp/rmrf-calls # knfsd's call counts, for gonfsrdma's rows

# rmrf_name VAR I: entry I's 197-byte name into VAR (no subshell: a fork
# costs ~150 ms under emulation)
rmrf_name() { printf -v "$1" '%06d-%0190d' "$2" 0; }

# rmrf_make DIR N WRITERS: N empty files with long names, WRITERS at once
rmrf_make() {
	local d=$1 n=$2 writers=$3 w pids=() rc=0 p
	mkdir "$d" || fail "mkdir $d failed"
	for ((w = 0; w < writers; w++)); do
		(
			local i name
			for ((i = w; i < n; i += writers)); do
				rmrf_name name "$i"
				: >"$d/$name" || exit 1
			done
		) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	((rc == 0)) || fail "creating $n files in $d failed"
}

# rmrf_dirstats: "RD RP RDB RPB", the READDIR and READDIRPLUS calls on
# this mount since it was mounted and the bytes of their replies (one
# read of mountstats: a process costs ~150 ms under emulation); nothing
# when the mount has no such counts
rmrf_dirstats() {
	awk -v m="$MNT" '$1 == "device" { inblk = ($5 == m) }
		inblk && $1 == "READDIR:" { rd = $2; rdb = $6 }
		inblk && $1 == "READDIRPLUS:" { rp = $2; rpb = $6 }
		END { if (rd != "" && rp != "") print rd, rp, rdb, rpb }' /proc/self/mountstats
}

# On the server guest (through `remote`): the server's context switches
# (voluntary and involuntary, summed over its threads) and CPU time (user +
# system, ms), "CTXSW CPU_MS": gonfsrdma's process, or knfsd's nfsd kernel
# threads. How many thread switches a call costs is what a user-space
# server pays on top of the file system's work (issue 19).
# task_switches TASKDIR: a thread's context switches, voluntary and
# involuntary, from its /proc status (0 once it is gone)
task_switches() {
	local k n v=0
	{ while read -r k n; do
		[[ $k == voluntary_ctxt_switches: || $k == nonvoluntary_ctxt_switches: ]] && v=$((v + n))
	done <"$1/status"; } 2>/dev/null
	echo "$v"
}
server_sched() {
	local p t v=0 ticks=0 pids=() st
	case $SERVER in
	gonfsrdma) pids=("$(<"$PIDFILE")") ;;
	knfsd)
		for p in /proc/[0-9]*; do
			[[ $(<"$p/comm") == nfsd ]] 2>/dev/null && pids+=("${p#/proc/}")
		done
		;;
	esac
	for p in "${pids[@]}"; do
		for t in /proc/"$p"/task/*; do
			v=$((v + $(task_switches "$t")))
			# utime and stime, fields 14 and 15 (the comm field has no spaces)
			read -ra st <"$t/stat"
			ticks=$((ticks + st[13] + st[14]))
		done 2>/dev/null
	done
	echo "$v $((ticks * 10))" # USER_HZ is 100 on x86
}

# On the server guest (through `remote`): gonfsrdma's context switches per
# thread, "TID:SWITCHES,..." with TID relative to the process id (+0 is the
# main thread); empty for knfsd. Whether one thread or several switch tells
# the runtime's own wake-ups from goroutine hand-offs; which Go thread a TID
# is (sysmon, a spinning M) shows in an execution trace of the same run
# (serve --exec-trace, "M=" is the TID; docs/performance.md section 12).
server_threads() {
	local pid t out=""
	[[ $SERVER == gonfsrdma ]] || return 0
	pid=$(<"$PIDFILE")
	for t in /proc/"$pid"/task/*; do
		out+="${out:+,}$((${t##*/} - pid)):$(task_switches "$t")"
	done
	echo "$out"
}

# On the server guest (through `remote`): the entries of NAME under the
# work directory in the exported file system, their creation and removal.
rmrf_server_count() { # 0 once it is gone
	local d=$EXP/run-$XPORT/$1
	if [[ -e $d ]]; then find "$d" | wc -l; else echo 0; fi
}
rmrf_server_clear() { rm -rf "${EXP:?}/run-$XPORT/$1"; }
rmrf_server_make() { # name n
	[[ -d $EXP/run-$XPORT ]] || fail "no work directory $EXP/run-$XPORT on the server"
	rmrf_make "$EXP/run-$XPORT/$1" "$2" 1
}

# rmrf_treemake NAME ARGS...: treemake under the work directory through the
# mount; notes its line; the entries it made into RMRF_MADE
RMRF_MADE=0
rmrf_treemake() {
	local name=$1 out
	shift
	[[ -x $RMRF_TREEMAKE ]] || fail "no $RMRF_TREEMAKE (run.sh builds it when the rm -rf rows create through the mount)"
	out=$("$RMRF_TREEMAKE" "$1" "$W/$name" "${@:2}" 2>&1) || fail "treemake $*: $(printf '%s' "$out" | head -c 300)"
	[[ $out =~ ^created\ ([0-9]+)\ entries ]] || fail "treemake $*: unexpected output: $(printf '%s' "$out" | head -c 200)"
	RMRF_MADE=${BASH_REMATCH[1]}
	note "$out through the mount, $RMRF_WRITERS creators"
}
step_rmrf_create() { # n: a flat directory through the mount
	need_mount
	local o0
	remote rmrf_server_clear "rmrf$1" || exit $?
	o0=$(rmrf_others)
	rmrf_treemake "rmrf$1" flat "$1" "$RMRF_WRITERS"
	rmrf_others_note "$o0"
	rmrf_expect "rmrf$1" $((RMRF_MADE + 1))
}
step_rmrf_tree_create() { # name depth width files: a deep tree through the mount
	need_mount
	local o0
	remote rmrf_server_clear "$1" || exit $?
	o0=$(rmrf_others)
	rmrf_treemake "$1" tree "$2" "$3" "$4" "$RMRF_WRITERS"
	rmrf_others_note "$o0"
	rmrf_expect "$1" $((RMRF_MADE + 1))
}
# rmrf_expect NAME N: the server's file system holds N entries under NAME
# (the top included), what was made
rmrf_expect() {
	local s
	s=$(remote rmrf_server_count "$1") || exit $?
	((s == $2)) || fail "the server's file system holds $s entries under $1, $2 were made"
}
step_rmrf_server_create() { # n: on the server, in the exported tmpfs
	need_mount
	remote rmrf_server_clear "rmrf$1" || exit $?
	remote rmrf_server_make "rmrf$1" "$1" || exit $?
	rmrf_expect "rmrf$1" $(($1 + 1))
	note "$1 files created on the server"
}
step_rmrf_remount() { # mount options
	need_mount
	do_umount
	drop_caches
	mount.nfs "$ADDR:$EXP" "$MNT" -o "$1" || fail "mount again failed"
	need_mount
}

# rmrf_calls WHAT "RD0 RP0 RDB0 RPB0": note the READDIR and READDIRPLUS
# calls and the bytes of their replies since that rmrf_dirstats; knfsd's
# call counts are kept, gonfsrdma's must not be more
rmrf_calls() {
	local what=$1 rd0 rp0 rdb0 rpb0 rd rp rdb rpb k f
	read -r rd0 rp0 rdb0 rpb0 <<<"$2"
	read -r rd rp rdb rpb <<<"$(rmrf_dirstats)"
	rd=$((rd - rd0)) rp=$((rp - rp0))
	f=$RMRF_CALLS/$XPORT.$what
	note "READDIR $rd, READDIRPLUS $rp calls"
	note "reply bytes: READDIR $((rdb - rdb0)), READDIRPLUS $((rpb - rpb0))"
	case $SERVER in
	knfsd) mkdir -p "$RMRF_CALLS" && echo "$((rd + rp))" >"$f" ;;
	gonfsrdma)
		if [[ -s $f ]]; then
			k=$(<"$f")
			((rd + rp <= k)) || fail_noted "READDIR $rd, READDIRPLUS $rp calls: $((rd + rp)), knfsd's same row took $k"
			note "(knfsd's same row: $k)"
		else
			note "no knfsd row in this guest to compare with"
		fi
		;;
	esac
}

# rmrf_others: the counts and summed execute times (ms) of the other
# calls a listing or removal makes, "LOOKUP n ms GETATTR n ms ..." (for
# the diff below; mountstats per-op line: ops transmissions timeouts
# bytes-sent bytes-received queue rtt execute [errors])
RMRF_OTHER_OPS="LOOKUP GETATTR ACCESS REMOVE CREATE SETATTR MKDIR RMDIR"
rmrf_others() {
	awk -v m="$MNT" -v ops="$RMRF_OTHER_OPS" '
		$1 == "device" { inblk = ($5 == m) }
		inblk && $1 ~ /^[A-Z]+:$/ { p = substr($1, 1, length($1) - 1); n[p] = $2; x[p] = $9 }
		END { k = split(ops, o, " "); for (i = 1; i <= k; i++) printf "%s %d %d ", o[i], n[o[i]], x[o[i]] }' /proc/self/mountstats
	local sched threads
	sched=$(remote server_sched 2>/dev/null) && [[ $sched =~ ^[0-9]+\ [0-9]+$ ]] && printf 'SCHED %s ' "$sched"
	threads=$(remote server_threads 2>/dev/null) && [[ $threads =~ ^[0-9:,]+$ ]] && printf 'THREADS %s - ' "$threads"
}
# rmrf_threads_note BEFORE AFTER CALLS: the five threads that switched most
# between the two server_threads lists, switches a call each
rmrf_threads_note() {
	awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {
		k = split(a, x, ","); for (i = 1; i <= k; i++) { split(x[i], y, ":"); was[y[1]] = y[2] }
		k = split(b, x, ","); for (i = 1; i <= k; i++) { split(x[i], y, ":"); d[y[1]] = y[2] - was[y[1]] }
		for (m = 0; m < 5; m++) {
			best = ""; for (t in d) if (best == "" || d[t] > d[best]) best = t
			if (best == "" || d[best] <= 0) break
			out = out (out == "" ? "" : ", ") sprintf("pid+%s %.1f", best, d[best] / n); delete d[best]
		}
		if (out != "") printf "server threads, switches a call: %s\n", out
	}'
}
# rmrf_others_note BEFORE: note the other calls made since BEFORE, with the
# mean execute time of those that took 100 calls or more, and the
# server's context switches and CPU time per call when they were 100 or more
rmrf_others_note() {
	local -a a b
	local i out="" d calls=0 sw=-1 cpu thr_a="" thr_b="" thr
	read -ra a <<<"$1"
	read -ra b <<<"$(rmrf_others)"
	for ((i = 0; i < ${#a[@]}; i += 3)); do
		if [[ ${a[i]} == SCHED ]]; then
			[[ ${b[i]} == SCHED ]] && sw=$((b[i + 1] - a[i + 1])) cpu=$((b[i + 2] - a[i + 2]))
			continue
		fi
		if [[ ${a[i]} == THREADS ]]; then
			[[ ${b[i]} == THREADS ]] && thr_a=${a[i + 1]} thr_b=${b[i + 1]}
			continue
		fi
		d=$((b[i + 1] - a[i + 1]))
		calls=$((calls + d))
		((d == 0)) && [[ ${a[i]} == SETATTR || ${a[i]} == MKDIR || ${a[i]} == RMDIR ]] && continue
		out+="${out:+, }${a[i]} $d"
		((d >= 100)) && out+=" ($(awk -v t=$((b[i + 2] - a[i + 2])) -v d="$d" 'BEGIN { printf "%.1f", t / d }') ms a call)"
	done
	note "other calls: $out"
	((sw >= 0 && calls >= 100)) && note "server: $sw context switches, $cpu ms CPU for these $calls calls ($(awk -v s="$sw" -v c="$cpu" -v n="$calls" 'BEGIN { printf "%.1f switches, %.2f ms CPU a call", s / n, c / n }'))"
	if [[ -n $thr_b ]] && ((calls >= 100)); then
		thr=$(rmrf_threads_note "$thr_a" "$thr_b" "$calls")
		[[ -n $thr ]] && note "$thr"
	fi
	true
}

step_rmrf_count() { # name under the work directory
	need_mount
	local c s d0 o0
	d0=$(rmrf_dirstats) o0=$(rmrf_others)
	[[ -n $d0 ]] || fail "no READDIR/READDIRPLUS counts for $MNT in /proc/self/mountstats"
	c=$(find "$W/$1" | wc -l)
	rmrf_others_note "$o0"
	s=$(remote rmrf_server_count "$1") || exit $?
	((c == s)) || fail "find through the mount lists $c entries, the server's file system holds $s"
	note "$c entries on both sides"
	rmrf_calls "find-$1" "$d0"
}
step_rmrf_remove() { # name under the work directory
	need_mount
	local d0 out left rc=0 o0 rd0 rp0 rd rp x
	d0=$(rmrf_dirstats) o0=$(rmrf_others)
	[[ -n $d0 ]] || fail "no READDIR/READDIRPLUS counts for $MNT in /proc/self/mountstats"
	out=$("$RMRF_BUSYBOX" rm -rf "$W/$1" 2>&1) || rc=$?
	rmrf_others_note "$o0"
	if ((rc != 0)); then
		left=$(remote rmrf_server_count "$1")
		read -r rd0 rp0 x <<<"$d0"
		read -r rd rp x <<<"$(rmrf_dirstats)"
		out="busybox rm -rf failed: $(printf '%s' "$out" | head -c 200); $left entries left on the server; READDIR $((rd - rd0)), READDIRPLUS $((rp - rp0)) calls"
		if [[ $SERVER == knfsd && $out == *"Directory not empty"* ]]; then
			# knfsd on the guest's 6.1 tmpfs answers cookies that are
			# positions (tmpfs's d_off before 6.6's stable offsets), so
			# a listing resumed after removals skips entries: the bug
			# of issue 17 that gonfsrdma's cookies must not have
			remote rmrf_server_clear "$1" || exit $?
			known_fail "knfsd's known failure on the 6.1 tmpfs (its directory cookies are positions, which move as entries go): $out; the rest removed on the server"
		fi
		fail "$out"
	fi
	[[ -e $W/$1 ]] && fail "$W/$1 still exists after rm -rf"
	left=$(remote rmrf_server_count "$1") || exit $?
	((left == 0)) || fail "the server still holds $left entries of $1 after rm -rf"
	rmrf_calls "rm-$1" "$d0"
}

step_rmrf_server_cleanup() { # name: what a failed row left, removed on the server (fast)
	remote rmrf_server_clear "$1" || exit $?
	note "$(remote rmrf_server_count "$1") entries left"
}

# rmrf_dir TRANSPORT OPTS N NAME LABEL CREATE-STEP ARGS...: the rows of
# directory NAME (N entries below it); when one fails, the directory is
# removed on the server, so that no later row (a work directory removed
# through the mount) inherits it
rmrf_dir() {
	local xp=$1 opts=$2 n=$3 name=$4 label=$5 tmo
	shift 5
	# rm -rf and find of many names: 30 ms a name (REMOVE and LOOKUP
	# between the guests took 21 ms a name with knfsd over TCP)
	tmo=$((n * 3 / 100))
	((tmo < BIG_TIMEOUT)) && tmo=$BIG_TIMEOUT
	local found=1
	if S "$xp" "rm -rf $n $label: create" "$tmo" "$@" &&
		S "$xp" "rm -rf $n $label: remount" 60 step_rmrf_remount "$opts"; then
		# a failed find row (a wrong count, or more calls than knfsd's)
		# does not stop the rm -rf row: it is a row of its own
		S "$xp" "rm -rf $n $label: find = server count" "$tmo" step_rmrf_count "$name" && found=0
		# find filled the client's directory cache: remount again, so
		# that rm -rf reads the directory from the server as it removes
		if S "$xp" "rm -rf $n $label: remount" 60 step_rmrf_remount "$opts" &&
			S "$xp" "rm -rf $n $label" "$tmo" step_rmrf_remove "$name" && ((found == 0)); then
			return 0
		fi
	fi
	S "$xp" "rm -rf $n $label: server-side cleanup after a failure" "$STEP_TIMEOUT" step_rmrf_server_cleanup "$name"
	return 1
}

# rmrf_rows TRANSPORT OPTS: the rows of RMRF_ROWS on TRANSPORT, when it is
# in RMRF_TRANSPORTS and gonfsrdma runs it in this guest (the rows compare
# it with knfsd), not in the one-guest run (ROLE both: its qemu limit is
# full with the RDMA workload)
rmrf_rows() {
	local xp=$1 opts=$2 row kind spec n d w f
	[[ $ROLE != both ]] || return 0
	[[ " $RMRF_TRANSPORTS " == *" $xp "* && " $(transports_of gonfsrdma) " == *" $xp "* ]] || return 0
	for row in $RMRF_ROWS; do
		[[ ${row%%/*} == "$xp" ]] || continue
		kind=${row#*/} spec=${kind#*/} kind=${kind%%/*}
		case $kind in
		mount) rmrf_dir "$xp" "$opts" "$spec" "rmrf$spec" "long names made through the mount" step_rmrf_create "$spec" ;;
		server) rmrf_dir "$xp" "$opts" "$spec" "rmrf$spec" "long names" step_rmrf_server_create "$spec" ;;
		tree)
			IFS=x read -r d w f <<<"$spec"
			# below the top: d*w directories, (1 + d*w)*f files
			n=$((d * w + (1 + d * w) * f))
			rmrf_dir "$xp" "$opts" "$n" "rmrftree$spec" "entries of a tree $d deep made through the mount" step_rmrf_tree_create "rmrftree$spec" "$d" "$w" "$f"
			;;
		esac
	done
}
