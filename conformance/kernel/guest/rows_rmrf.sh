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
# Names are 197 bytes. RMRF_SIZES (default 2500): directories created
# through the mount by one writer (eight at once took 91 s for 2,500 with
# knfsd over TCP, where the workload's one writer makes 2,000 short names
# in 6 s), on the transports of the workload that gonfsrdma
# runs in this guest. RMRF_BIG_SIZES (default none): directories created
# on the server, on those of the transports in RMRF_BIG_TRANSPORTS
# (default tcp).

: "${RMRF_SIZES=2500}" "${RMRF_BIG_SIZES=}" "${RMRF_BIG_TRANSPORTS=tcp}" "${RMRF_WRITERS:=1}"
RMRF_BUSYBOX=/bin/busybox
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

# the ops count of procedure $1 on this mount since it was mounted
rmrf_ops() {
	awk -v m="$MNT" -v p="$1:" '$1 == "device" { inblk = ($5 == m) } inblk && $1 == p { print $2; exit }' /proc/self/mountstats
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

step_rmrf_create() { # n: through the mount
	need_mount
	remote rmrf_server_clear "rmrf$1" || exit $?
	rmrf_make "$W/rmrf$1" "$1" "$RMRF_WRITERS"
	note "$1 files created through the mount"
}
step_rmrf_server_create() { # n: on the server, in the exported tmpfs
	need_mount
	remote rmrf_server_clear "rmrf$1" || exit $?
	remote rmrf_server_make "rmrf$1" "$1" || exit $?
	note "$1 files created on the server"
}
step_rmrf_remount() { # mount options
	need_mount
	do_umount
	drop_caches
	mount.nfs "$ADDR:$EXP" "$MNT" -o "$1" || fail "mount again failed"
	need_mount
}

# rmrf_calls WHAT RD0 RP0: note the READDIR and READDIRPLUS calls since
# RD0/RP0; knfsd's are kept, gonfsrdma's must not be more
rmrf_calls() {
	local what=$1 rd=$(($(rmrf_ops READDIR) - $2)) rp=$(($(rmrf_ops READDIRPLUS) - $3)) k f
	f=$RMRF_CALLS/$XPORT.$what
	note "READDIR $rd, READDIRPLUS $rp calls"
	case $SERVER in
	knfsd) mkdir -p "$RMRF_CALLS" && echo "$((rd + rp))" >"$f" ;;
	gonfsrdma)
		if [[ -s $f ]]; then
			k=$(<"$f")
			((rd + rp <= k)) || fail "READDIR $rd, READDIRPLUS $rp calls: $((rd + rp)), knfsd's same row took $k"
			note "(knfsd's same row: $k)"
		else
			note "no knfsd row in this guest to compare with"
		fi
		;;
	esac
}

# rmrf_others: the counts of the other calls a listing or removal makes,
# "LOOKUP n GETATTR n ACCESS n REMOVE n CREATE n" (for the diff below)
RMRF_OTHER_OPS="LOOKUP GETATTR ACCESS REMOVE CREATE"
rmrf_others() { local p; for p in $RMRF_OTHER_OPS; do printf '%s %s ' "$p" "$(rmrf_ops "$p")"; done; }
# rmrf_others_note BEFORE: note the other calls made since BEFORE
rmrf_others_note() {
	local -a a b
	local i out=""
	read -ra a <<<"$1"
	read -ra b <<<"$(rmrf_others)"
	for ((i = 0; i < ${#a[@]}; i += 2)); do out+="${out:+, }${a[i]} $((b[i + 1] - a[i + 1]))"; done
	note "other calls: $out"
}

step_rmrf_count() { # name under the work directory
	need_mount
	local c s rd0 rp0 o0
	rd0=$(rmrf_ops READDIR) rp0=$(rmrf_ops READDIRPLUS) o0=$(rmrf_others)
	[[ -n $rd0 && -n $rp0 ]] || fail "no READDIR/READDIRPLUS counts for $MNT in /proc/self/mountstats"
	c=$(find "$W/$1" | wc -l)
	rmrf_others_note "$o0"
	s=$(remote rmrf_server_count "$1") || exit $?
	((c == s)) || fail "find through the mount lists $c entries, the server's file system holds $s"
	note "$c entries on both sides"
	rmrf_calls "find-$1" "$rd0" "$rp0"
}
step_rmrf_remove() { # name under the work directory
	need_mount
	local rd0 rp0 out left rc=0 o0
	rd0=$(rmrf_ops READDIR) rp0=$(rmrf_ops READDIRPLUS) o0=$(rmrf_others)
	[[ -n $rd0 && -n $rp0 ]] || fail "no READDIR/READDIRPLUS counts for $MNT in /proc/self/mountstats"
	out=$("$RMRF_BUSYBOX" rm -rf "$W/$1" 2>&1) || rc=$?
	rmrf_others_note "$o0"
	if ((rc != 0)); then
		left=$(remote rmrf_server_count "$1")
		fail "busybox rm -rf failed: $(printf '%s' "$out" | head -c 200); $left entries left on the server; READDIR $(($(rmrf_ops READDIR) - rd0)), READDIRPLUS $(($(rmrf_ops READDIRPLUS) - rp0)) calls"
	fi
	[[ -e $W/$1 ]] && fail "$W/$1 still exists after rm -rf"
	left=$(remote rmrf_server_count "$1") || exit $?
	((left == 0)) || fail "the server still holds $left entries of $1 after rm -rf"
	rmrf_calls "rm-$1" "$rd0" "$rp0"
}

step_rmrf_server_cleanup() { # name: what a failed row left, removed on the server (fast)
	remote rmrf_server_clear "$1" || exit $?
	note "$(remote rmrf_server_count "$1") entries left"
}

# rmrf_dir TRANSPORT OPTS N CREATE-STEP LABEL: the rows of one directory;
# when one fails, the directory is removed on the server, so that no later
# row (a work directory removed through the mount) inherits it
rmrf_dir() {
	local xp=$1 opts=$2 n=$3 create=$4 label=$5 tmo
	# rm -rf and find of many names: 30 ms a name (REMOVE and LOOKUP
	# between the guests took 21 ms a name with knfsd over TCP)
	tmo=$((n * 3 / 100))
	((tmo < BIG_TIMEOUT)) && tmo=$BIG_TIMEOUT
	if S "$xp" "rm -rf $n $label: create" "$tmo" "$create" "$n" &&
		S "$xp" "rm -rf $n $label: remount" 60 step_rmrf_remount "$opts" &&
		S "$xp" "rm -rf $n $label: find = server count" "$tmo" step_rmrf_count "rmrf$n" &&
		# find filled the client's directory cache: remount again, so
		# that rm -rf reads the directory from the server as it removes
		S "$xp" "rm -rf $n $label: remount" 60 step_rmrf_remount "$opts" &&
		S "$xp" "rm -rf $n $label" "$tmo" step_rmrf_remove "rmrf$n"; then
		return 0
	fi
	S "$xp" "rm -rf $n $label: server-side cleanup after a failure" "$STEP_TIMEOUT" step_rmrf_server_cleanup "rmrf$n"
	return 1
}

# rmrf_rows TRANSPORT OPTS: on the transports of RMRF_TRANSPORTS that
# gonfsrdma runs in this guest (the rows compare it with knfsd; between the
# guests its RDMA does not run yet, issue 16)
rmrf_rows() {
	local xp=$1 opts=$2 n
	[[ " $RMRF_TRANSPORTS " == *" $xp "* && " $(transports_of gonfsrdma) " == *" $xp "* ]] || return 0
	for n in $RMRF_MOUNT_SIZES; do
		rmrf_dir "$xp" "$opts" "$n" step_rmrf_create "long names made through the mount"
	done
	for n in $RMRF_SERVER_SIZES; do
		rmrf_dir "$xp" "$opts" "$n" step_rmrf_server_create "long names"
	done
}
