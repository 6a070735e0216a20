package vfs

import "errors"

// Locker is implemented by backends whose files can carry byte-range
// locks that other users of the storage see (the OS backend: processes
// on the server host, other servers of the same file system). The NLM
// server mirrors its lock table on them; backends without it (the memory
// backend) leave the lock table the only holder, which for them is
// complete, since nothing else reaches their files.
type Locker interface {
	// OpenLocks returns the lock holder of h's file. It fails with
	// ErrNotSupported for objects that cannot be locked (directories,
	// special files) and ErrStale for a handle that names no file.
	OpenLocks(h Handle) (FileLocks, error)
}

// FileLocks holds locks on one file for any number of owners, named by
// strings; each owner's locks behave as one POSIX lock owner's (a new
// lock replaces the owner's locks on its range, locks of one owner never
// conflict). Ranges are inclusive [start, end]; end == math.MaxInt64
// means to end of file and beyond. No call waits.
type FileLocks interface {
	// Lock takes the lock for owner; ok is false when another holder
	// (not one of this FileLocks' owners) has a conflicting lock.
	Lock(owner string, exclusive bool, start, end int64) (ok bool, err error)
	// Unlock releases owner's locks on the range.
	Unlock(owner string, start, end int64) error
	// Test returns a lock of another holder that conflicts with the
	// lock owner would take.
	Test(owner string, exclusive bool, start, end int64) (LockHolder, bool, error)
	// Forget releases every lock of owner and what holds them (an
	// owner with no locks left).
	Forget(owner string) error
	// Close releases every lock and descriptor.
	Close() error
}

// LockHolder describes a lock held outside the server (F_GETLK's answer).
type LockHolder struct {
	Exclusive  bool
	Start, End int64
	// PID is the holding process, -1 for an open file description lock.
	PID int32
}

// ErrLockUnsupported: the file system under the export refuses locks
// (fcntl returns ENOLCK or EOPNOTSUPP).
var ErrLockUnsupported = errors.New("vfs: the file system does not support locks")
