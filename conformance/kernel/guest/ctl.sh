#!/bin/bash
# ctl.sh: one command of the two-host lab's control channel, on the server
# guest. busybox `nc -ll -e` (started by test.sh in ROLE=server) runs it per
# connection with the socket as stdin/stdout. It reads one line from the
# client guest: "SERVER=.. XPORT=.. FUNC ARGS..." (shell-quoted by test.sh's
# `remote`), runs it with test.sh's functions, and answers with FUNC's
# output, its reason lines ("@@reason LINE") and its exit status
# ("@@rc N"), then closes. FUNC runs with its stdio on a file, never on the
# socket, so a daemon it starts cannot hold the connection open.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
IFS= read -r line || exit 0
# this guest's CPU time before this command's own work (sourcing test.sh
# below is most of it): server_cpu_snapshot end reads it
IFS= read -r CTL_PROC_STAT </proc/stat
LIB_ONLY=1
# shellcheck source=test.sh
source /share/guest/test.sh
REASON=/tmp/ctl.$$.reason
out=/tmp/ctl.$$.out
rm -f "$REASON"
echo "=== $(date -u +%T.%N) ctl: $line" >>"$LOG"
(eval "$line") >"$out" 2>&1 </dev/null
rc=$?
cat "$out"
cat "$out" >>"$LOG"
echo "=== $(date -u +%T.%N) ctl: exit $rc" >>"$LOG"
[[ -s $REASON ]] && sed 's/^/@@reason /' "$REASON"
echo "@@rc $rc"
rm -f "$out" "$REASON"
