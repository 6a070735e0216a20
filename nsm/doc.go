// Package nsm implements the Network Status Monitor, program 100024
// version 1 (XNFS, Version 3W, chapter 11), as the lock manager of this
// server needs it: the state number, the hosts holding locks, the grace
// period and the reboot notifications in both directions.
//
// State: StateFile in the state directory holds the state number and the
// recorded hosts, rewritten whole on every change as a temporary file,
// fsync, rename and directory fsync, so a crash at any point leaves the
// old list or the new one (Start removes a crashed write's temporary
// file). Each Start raises the state by two and keeps
// it odd (up). Hosts recorded before the start held locks: the grace
// period (Config.Grace) begins, during which the lock manager grants
// only reclaims, and each host gets SM_NOTIFY (over UDP to the status
// monitor its rpcbind names, from the server address the host used,
// which is also the mon_name sent) until it answers or NotifyFor passes;
// a notified host leaves the file unless it locked again. A start with
// no recorded host has nothing to reclaim and no grace period.
//
// Procedures: STAT answers the state; MON, UNMON and UNMON_ALL record
// and drop the monitoring requests of local programs (loopback callers
// only, as rpc.statd), which are called back with struct status when the
// host they named reboots; SIMU_CRASH (local callers only) acts as a
// restart: new state, the lock manager's locks dropped, grace, every
// recorded host notified; NOTIFY from a rebooted host frees its locks
// (Config.OnReboot: by its mon_name and by the sender's address).
//
// # Buffer ownership
//
// Decoded names are copies; nothing of a call is kept.
package nsm
