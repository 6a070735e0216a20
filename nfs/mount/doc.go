// Package mount implements the MOUNT protocol version 3 (RFC 1813 appendix
// I, program 100005) that NFSv3 clients use to get an export's root file
// handle, with versions 1 and 2 answering everything but MNT (showmount(8)
// asks version 1), and client helpers for tests, the conformance suite and
// the bench tool.
//
// The server knows nothing of file systems or export rules: a Backend
// supplies the export list and decides each MNT (the daemon's, with
// exports.Table.ForMount for which export a path mounts,
// exports.Export.AuthorizeMount for the client, and WalkDir here for a
// directory below an export). The server decodes and
// bounds arguments (a dirpath over MNTPATHLEN is GARBAGE_ARGS, as from
// rpc.mountd; a component over MNTNAMLEN is MNT3ERR_NAMETOOLONG), checks
// the handle the backend returns, adds AUTH_SYS when the backend names no
// flavor, and keeps the mount list that DUMP reports: in memory, keyed by
// client IP address and path, at most DefaultMaxMounts entries with the
// oldest dropped first. UMNT removes one entry and UMNTALL all of a
// client's. Lists in DUMP and EXPORT replies are cut short rather than
// exceed a transport's reply limit (a UDP datagram).
//
// All procedures are idempotent and bypass the duplicate request cache.
//
// # Buffer ownership
//
// The dirpath is copied out of the call buffer before the backend sees it;
// the backend's handle is copied into the reply before the handler returns,
// so a backend may return a slice it keeps. Export lists from the backend
// are only read. Client helpers return freshly allocated results.
package mount
