#!/bin/bash
# A stand-in for the gonfsrdma binary that fronts the kernel's nfsd, used to
# exercise the harness's gonfsrdma path (start with the real command line,
# wait for the ports, kill -9, restart, SIGTERM, log capture, the two-server
# report) before the real server exists:
#   GONFSRDMA_BIN=conformance/kernel/testdata/fake-gonfsrdma.sh ./conformance/kernel/run.sh
# It proves nothing about gonfsrdma. Its "SIGKILL" does not take the service
# down (the kernel keeps serving), so that row is weaker than with the real
# binary.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
echo "fake-gonfsrdma: args: $*"
[[ ${1:-} == serve ]] || { echo "usage: $0 serve --exports FILE ..."; exit 2; }
shift
exports=""
while (($#)); do
	case $1 in
	--exports) exports=$2; shift 2 ;;
	--listen | --mount-listen | --rdma-listen | --state-dir | --log-level) shift 2 ;;
	*) echo "fake-gonfsrdma: unknown flag $1"; exit 2 ;;
	esac
done
[[ -r $exports ]] || { echo "fake-gonfsrdma: cannot read exports file '$exports'"; exit 1; }
stop() {
	echo "fake-gonfsrdma: stopping"
	rpc.nfsd 0
	exportfs -ua
	for p in $(pidof rpc.mountd rpcbind); do kill "$p"; done
	exit 0
}
trap stop TERM INT
grep -qs ' /proc/fs/nfsd ' /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd
# knfsd needs no_subtree_check spelled out to stay quiet
sed 's/(\(.*\))/(\1,no_subtree_check)/' "$exports" >/etc/exports
pidof rpcbind >/dev/null || rpcbind -w
exportfs -ra
pidof rpc.mountd >/dev/null || rpc.mountd -p 20048 --no-nfs-version 4
if [[ $(cat /proc/fs/nfsd/threads) == 0 ]]; then
	rpc.nfsd 4
	echo "rdma 20049" >/proc/fs/nfsd/portlist
fi
echo "fake-gonfsrdma: serving ($(tr '\n' ' ' </proc/fs/nfsd/portlist))"
while :; do sleep 1; done
