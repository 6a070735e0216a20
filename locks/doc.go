// Package locks is the lock manager's core: a table of POSIX byte-range
// locks (fcntl(2) semantics) and DOS share reservations per file, with
// queues of blocked requests, independent of any protocol. The NLM server
// (package nlm) drives it; it knows nothing of RPC, file handles or hosts
// beyond the strings that name them.
//
// Semantics, as POSIX and the Linux kernel's posix_lock_file:
//   - an owner is (host, svid, oh); locks of one owner never conflict with
//     each other, and a new lock of an owner replaces the owner's locks on
//     the range it covers (splitting them), so shared <-> exclusive
//     conversion is a lock call; adjacent or overlapping ranges of one
//     owner and type merge;
//   - ranges are inclusive [Start, End] of non-negative int64 offsets;
//     End == MaxOffset means "to end of file and beyond" (NLM length 0);
//   - a request that conflicts with any lock of another owner is refused
//     whole, leaving the owner's existing locks unchanged: an upgrade that
//     conflicts is denied, never half applied;
//   - a blocking request whose wait would close a cycle of owners waiting
//     for each other (across files) is refused as Deadlock, as the
//     kernel's posix_locks_deadlock;
//   - a blocking request that conflicts waits in the file's queue; each
//     time locks on the file go away, the queue is scanned in arrival order
//     and every waiter that no longer conflicts is granted (the caller is
//     told through Config.Granted).
//
// A file may have a Backing (the OS backend's open file description
// locks, opened through the Opener a call passes): every change the table
// makes for an owner is mirrored on it
// while the table's mutex is held, and a backing that refuses (another
// process on the server host holds a conflicting lock) makes the request
// conflict. Waiters refused only by the backing are retried by Poll.
//
// Limits: Config.MaxLocks bounds the locks, waiters and shares of the
// whole table; a request beyond it is NoLocks.
//
// # Buffer ownership
//
// The table copies nothing it is given: Owner and file keys are strings
// (immutable). Results are copies of table entries.
package locks
