#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, once.
set -euo pipefail
# xfsprogs, btrfs-progs: mkfs.xfs and mkfs.btrfs for the vfs directory-
# cookie tests on loop-mounted xfs and btrfs images.
# libcephfs-dev, librados-dev: the CephFS backend (go build -tags ceph);
# ceph-mon, ceph-mgr, ceph-osd, ceph-mds (with the ceph CLI) and
# uuid-runtime: scripts/ceph-cluster.sh's throwaway cluster for make test-ceph.
# systemd (systemd-analyze), dpkg-dev (dpkg-shlibdeps), groff-base and
# bash-completion: make deb and deb-check (the unit verified, the Depends
# computed, the man page formatted, the completion script run).
# rpcbind: scripts/interop-rpcbind.sh (gonfsrdma registering with the
# system's rpcbind), which runs it in namespaces of its own; the package's
# own service is not started where no systemd runs (these CI machines).
need=(libibverbs-dev librdmacm-dev libnfs-utils rpcbind qemu-system-x86 iproute2 xfsprogs btrfs-progs
	libcephfs-dev librados-dev ceph-mon ceph-mgr ceph-osd ceph-mds uuid-runtime
	systemd dpkg-dev groff-base bash-completion)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages ${missing[*]}; run as root or install them" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if ! command -v go >/dev/null; then
	if [ -x /usr/local/go/bin/go ]; then
		echo "deps: Go is at /usr/local/go/bin; add it to PATH" >&2
	else
		echo "deps: Go 1.26 or newer is needed (https://go.dev/doc/install)" >&2
	fi
	exit 1
fi
go mod download
