// Package nlm implements the Network Lock Manager, program 100021:
// version 4 (XNFS, Version 3W, chapter 14, the NFSv3 companion) and
// versions 1 and 3 (chapter 10), over the lock table of package locks.
// It is an RPC program like NFS and MOUNT: every transport feeds it
// through the same oncrpc.Dispatcher, and it never sees a connection.
//
// Files: a Resolver turns the NFS file handle of a call into a File (the
// daemon resolves it through the NFS server's export table, with the
// export's client rules), whose Key names it in the lock table. Backends
// that implement vfs.Locker (the OS backend) also hold every lock as an
// open file description lock on the file, so processes on the server
// host see them; elsewhere the table is the only holder.
//
// Owners are (caller_name@client address, svid, oh), as the Linux server
// keys its hosts, so no client can name another's locks. Ranges follow
// the Linux server: length 0, or a range past 2^63-1, runs to end of
// file; an offset past 2^63-1 is NLM4_FBIG.
//
// Versions 1 and 3 carry NFSv2 handles of 32 bytes and 32-bit ranges:
// other handle lengths are GARBAGE_ARGS and version 4 statuses are
// mapped as the Linux server does (DEADLCK -> DENIED, the rest of the
// version 4 additions -> DENIED_NOLOCKS).
//
// Grace and monitoring: with a Monitor (package nsm), the first lock of
// a host is refused (DENIED_NOLOCKS) unless the host is durably recorded
// first, and during the grace period after a start only reclaims are
// granted; TEST, UNLOCK, CANCEL, UNSHARE and non-reclaim LOCK and SHARE
// get DENIED_GRACE_PERIOD, and a reclaim after grace too (as Linux).
//
// Permissions: as the Linux server opens the file for its lock manager,
// an exclusive lock needs write permission and everything else read
// permission (the owner passes regardless), else NLM4_FAILED; an
// exclusive lock on a read-only export is NLM4_ROFS.
//
// Blocking locks: a LOCK with block=1 that conflicts is queued and
// answered BLOCKED, or NLM4_DEADLCK when waiting would close a cycle of
// waiting owners. When the table grants it, GRANTED_MSG goes to the
// client's NLM (found through the client's rpcbind, over the transport
// of the LOCK, from the server address the client reached, which the
// Linux client matches), every GrantRetry until a GRANTED_RES with the
// server's cookie comes back from that client; a GRANTED_RES other than
// GRANTED (the client cancelled meanwhile) releases the lock. The _MSG
// procedures are answered void at once and their result sent as the
// matching _RES call.
//
// # Buffer ownership
//
// Decoded arguments alias the call buffer and are used only while the
// handler runs; what a blocked request keeps (handle, owner handle) is
// copied. Callbacks own their encoded arguments.
package nlm
