#!/bin/bash
# lockhook.sh server|client FUNC ARGS...: locktest's hook in the client
# guest. "server" runs FUNC of test.sh on the server guest through the
# control channel (test.sh's `remote`, as the exported SERVER and XPORT of
# the step), "client" runs it here. Output on stdout, reason lines on stderr,
# FUNC's exit status.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
where=${1:?server or client}
shift
LIB_ONLY=1
# shellcheck source=test.sh
source /share/guest/test.sh
REASON=/tmp/lockhook.$$.reason
rm -f "$REASON"
case $where in
server) remote "$@" ;;
client) ("$@") ;;
*) echo "lockhook.sh: where is '$where'? (server or client)" >&2; exit 2 ;;
esac
rc=$?
[[ -s $REASON ]] && sed 's/^/lockhook: /' "$REASON" >&2
rm -f "$REASON"
exit $rc
