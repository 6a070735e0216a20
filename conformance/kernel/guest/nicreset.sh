#!/bin/bash
# nicreset.sh: resets this guest's emulated NIC (eth0) and puts the lab's
# network back on it: the virtio device is unbound from virtio_net and bound
# again, then the address (NET_ADDR of /share/guest/config), the link and
# Soft-RoCE (rxe0) are set up on the new eth0 as guest/init did at boot.
#
# Why: in about 1 of 15 two-guest runs the emulated NIC's transmit queue
# stops for good (the kernel's "NETDEV WATCHDOG: transmit queue 0 timed
# out", then tx_packets never moves again; QEMU 7.2, virtio-net on the UDP
# socket netdev). A link down and up does not restart it (CI run of
# 2026-12-01: seven restarts, tx_packets stayed at 972150). A device reset
# starts both ends afresh: QEMU's virtio-net reset purges a transmit request
# it still waits on, and the guest driver starts from empty rings. That it
# cures a real stall is not yet seen (none since); the reset itself and the
# mounts' recovery from it are what the "NIC reset" rows check.
#
# What it costs the mounts: rxe0 goes with its netdev, so every RDMA
# connection of this guest sees RDMA_CM_EVENT_DEVICE_REMOVAL; the kernel's
# xprtrdma disconnects and reconnects on the new rxe0 at its next call (a
# call not answered is sent again on the new connection).
# TCP connections see a link flap only. A user-space RDMA process holds
# rxe0 for as long as it has the device open (its verbs context, opened by
# librdmacm), and the netdev's unregistration waits for that forever
# ("unregister_netdevice: waiting for eth0 to become free"); rxe has no
# way to take the device from it. So every process with
# /dev/infiniband/uverbs* open is killed first (SIGKILL, said on the
# console): on the server guest gonfsrdma, which is started again with its
# command line once the new rxe0 is up (the client sees a server restart,
# as in the "server killed mid-write" row); on the client guest a running
# `gonfsrdma cp`, whose row then fails. knfsd and the kernel client hold
# no user-space context and ride the reset out.
#
# Usage: nicreset.sh WHY. Serialized (mkdir lock): a second caller while one
# runs returns 0 without a second reset. Says each step on the console
# (@@ INFO) and counts resets in /share/results/eth0-resets. Exit 0 when
# eth0, its address and rxe0 are back.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
NET_ADDR="" HOST_NAME=guest
# shellcheck source=/dev/null
source /share/guest/config 2>/dev/null
say() { echo "@@ INFO $HOST_NAME: $*" >/dev/console; }
lock=/run/nicreset.lock
mkdir "$lock" 2>/dev/null || { say "eth0 reset ($1): one is already under way"; exit 0; }
trap 'rmdir "$lock"' EXIT

drv=/sys/bus/virtio/drivers/virtio_net
dev=$(basename "$(readlink -f /sys/class/net/eth0/device)") || { say "eth0 reset ($1): no eth0 device"; exit 1; }
n=$(($(cat /share/results/eth0-resets 2>/dev/null || echo 0) + 1))
echo "$n" >/share/results/eth0-resets 2>/dev/null
t0=$SECONDS
say "eth0 reset $n ($1): tx_packets $(</sys/class/net/eth0/statistics/tx_packets), tx_timeout $(</sys/class/net/eth0/queues/tx-0/tx_timeout); unbinding $dev from virtio_net"
# the user-space holders of the RDMA device (see above)
holders=()
for p in /proc/[0-9]*; do
	for fd in "$p"/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null) == /dev/infiniband/uverbs* ]] && { holders+=("${p#/proc/}"); break; }
	done
done
restart_gonfsrdma=0
gonf_pid=$(cat /run/gonfsrdma.pid 2>/dev/null)
for pid in "${holders[@]}"; do
	[[ $pid == "$gonf_pid" ]] && restart_gonfsrdma=1
	say "eth0 reset $n: killing pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)), which holds the RDMA device open"
	kill -9 "$pid" 2>/dev/null
done
for pid in "${holders[@]}"; do
	for ((i = 0; i < 100; i++)); do [[ -e /proc/$pid ]] || break; sleep 0.1; done
done
echo "$dev" >"$drv/unbind" || { say "eth0 reset $n: unbind of $dev failed"; exit 1; }
# rxe0 is unregistered after its netdev, once its users let go of it
for ((i = 0; i < 1200; i++)); do rdma link show rxe0/1 >/dev/null 2>&1 || break; sleep 0.1; done
rdma link show rxe0/1 >/dev/null 2>&1 && { say "eth0 reset $n: rxe0 still registered after 120 s"; exit 1; }
echo "$dev" >"$drv/bind" || { say "eth0 reset $n: bind of $dev failed"; exit 1; }
for ((i = 0; i < 100; i++)); do [[ -e /sys/class/net/eth0 ]] && break; sleep 0.1; done
[[ -e /sys/class/net/eth0 ]] || { say "eth0 reset $n: no eth0 after the bind"; exit 1; }
ip addr add "$NET_ADDR" dev eth0 || { say "eth0 reset $n: ip addr add $NET_ADDR failed"; exit 1; }
ip link set eth0 up || { say "eth0 reset $n: link up failed"; exit 1; }
rdma link add rxe0 type rxe netdev eth0 || { say "eth0 reset $n: rdma link add rxe0 failed"; exit 1; }
if ((restart_gonfsrdma)); then
	echo "=== $(date -u +%T.%N) killed gonfsrdma pid $gonf_pid for a NIC reset" >>/share/results/gonfsrdma.log
	out=$(LIB_ONLY=1 && source /share/guest/test.sh && gonfsrdma_up 2>&1) || { say "eth0 reset $n: gonfsrdma did not start again: $(tail -n 2 <<<"$out" | tr '\n' ' ')"; exit 1; }
	say "eth0 reset $n: gonfsrdma started again: $(grep -m1 'listening after' <<<"$out")"
fi
say "eth0 reset $n done in $((SECONDS - t0)) s: $(rdma link show rxe0/1 2>&1 | tr -s ' ')"
