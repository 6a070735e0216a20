// Package daemon assembles a running server from a Config: the exports
// table and its backends, the NFS and MOUNT programs on one dispatcher with
// the duplicate request cache, the TCP, UDP and RPC-over-RDMA listeners,
// and rpcbind. It owns reloads (SIGHUP) and the orderly shutdown.
//
// Ownership: the daemon owns every vfs.FS it opens. An export set (table,
// backends, fsid index) is immutable once published; a reload builds a new
// set, reusing the backends of exports whose path and backend did not
// change, publishes it atomically, and closes the backends of removed
// exports after a grace period so calls already using them finish.
package daemon
