package localfs

import (
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// OpenLocks implements Locker with open file description locks
// (F_OFD_SETLK, F_OFD_GETLK): each owner gets its own open file
// description of the file, opened on its first lock, so the kernel keeps
// the owners apart exactly as the lock table does and processes on the
// server host see every lock. The descriptors are not the fd cache's: an
// evicted cache entry must not drop locks.
func (f *FS) OpenLocks(h vfs.Handle) (vfs.FileLocks, error) {
	e, err := f.acquire(h)
	if err != nil {
		return nil, err
	}
	defer f.cache.release(e)
	if e.typ != vfs.TypeReg {
		return nil, vfs.ErrNotSupported
	}
	root, fh := f.rootFD, unix.NewFileHandle(e.fh.Type(), append([]byte(nil), e.fh.Bytes()...))
	return &osFileLocks{open: func() (int, bool, error) { return openForLocks(root, fh) }, fds: map[string]osLockFD{}}, nil
}

// openForLocks opens the file read-write, or read-only where writing is
// refused (a read-only file system: shared locks only).
func openForLocks(rootFD int, fh unix.FileHandle) (int, bool, error) {
	fd, err := openByHandle(rootFD, fh, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err == nil {
		return fd, true, nil
	}
	if err != unix.EROFS && err != unix.EACCES && err != unix.ETXTBSY && err != unix.EPERM {
		if err == unix.ESTALE {
			return -1, false, vfs.ErrStale
		}
		return -1, false, &os.PathError{Op: "open", Path: "", Err: err}
	}
	fd, err = openByHandle(rootFD, fh, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		if err == unix.ESTALE {
			return -1, false, vfs.ErrStale
		}
		return -1, false, &os.PathError{Op: "open", Path: "", Err: err}
	}
	return fd, false, nil
}

type osLockFD struct {
	fd       int
	writable bool
}

// osFileLocks is the OS backend's FileLocks: one open file description
// per owner.
type osFileLocks struct {
	open func() (int, bool, error)
	mu   sync.Mutex
	fds  map[string]osLockFD
}

func flock(exclusive bool, typ int16, start, end int64) unix.Flock_t {
	l := unix.Flock_t{Type: typ, Whence: 0, Start: start}
	if typ == unix.F_RDLCK || typ == unix.F_WRLCK {
		if exclusive {
			l.Type = unix.F_WRLCK
		} else {
			l.Type = unix.F_RDLCK
		}
	}
	if end != math.MaxInt64 {
		l.Len = end - start + 1
	}
	return l
}

func lockErr(op string, err error) error {
	if err == unix.ENOLCK || err == unix.EOPNOTSUPP || err == unix.EINVAL {
		return vfs.ErrLockUnsupported
	}
	return &os.PathError{Op: op, Path: "", Err: err}
}

func (l *osFileLocks) fdOf(owner string, create bool) (osLockFD, error) {
	if d, ok := l.fds[owner]; ok || !create {
		return d, nil
	}
	fd, w, err := l.open()
	if err != nil {
		return osLockFD{fd: -1}, err
	}
	d := osLockFD{fd: fd, writable: w}
	l.fds[owner] = d
	return d, nil
}

// Lock implements FileLocks.
func (l *osFileLocks) Lock(owner string, exclusive bool, start, end int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, err := l.fdOf(owner, true)
	if err != nil {
		return false, err
	}
	if exclusive && !d.writable {
		return false, &os.PathError{Op: "fcntl", Path: "", Err: unix.EBADF}
	}
	fl := flock(exclusive, unix.F_WRLCK, start, end)
	switch err := unix.FcntlFlock(uintptr(d.fd), unix.F_OFD_SETLK, &fl); err {
	case nil:
		return true, nil
	case unix.EAGAIN, unix.EACCES:
		return false, nil
	default:
		return false, lockErr("fcntl", err)
	}
}

// Unlock implements FileLocks. The owner's descriptor stays open: its
// other locks live on it.
func (l *osFileLocks) Unlock(owner string, start, end int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.fds[owner]
	if !ok {
		return nil
	}
	fl := flock(false, unix.F_UNLCK, start, end)
	if err := unix.FcntlFlock(uintptr(d.fd), unix.F_OFD_SETLK, &fl); err != nil {
		return lockErr("fcntl", err)
	}
	return nil
}

// Test implements FileLocks, on owner's descriptor (so that owner's own
// locks are not reported) or a temporary one.
func (l *osFileLocks) Test(owner string, exclusive bool, start, end int64) (vfs.LockHolder, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.fds[owner]
	if !ok {
		fd, w, err := l.open()
		if err != nil {
			return vfs.LockHolder{}, false, err
		}
		defer unix.Close(fd)
		d = osLockFD{fd: fd, writable: w}
	}
	fl := flock(exclusive, unix.F_WRLCK, start, end)
	if err := unix.FcntlFlock(uintptr(d.fd), unix.F_OFD_GETLK, &fl); err != nil {
		return vfs.LockHolder{}, false, lockErr("fcntl", err)
	}
	if fl.Type == unix.F_UNLCK {
		return vfs.LockHolder{}, false, nil
	}
	h := vfs.LockHolder{Exclusive: fl.Type == unix.F_WRLCK, Start: fl.Start, End: math.MaxInt64, PID: fl.Pid}
	if fl.Len != 0 {
		h.End = fl.Start + fl.Len - 1
	}
	return h, true, nil
}

// Forget implements FileLocks.
func (l *osFileLocks) Forget(owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.fds[owner]; ok {
		delete(l.fds, owner)
		return unix.Close(d.fd)
	}
	return nil
}

// Close implements FileLocks: closing each description drops its locks.
func (l *osFileLocks) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for o, d := range l.fds {
		unix.Close(d.fd)
		delete(l.fds, o)
	}
	return nil
}

var _ vfs.Locker = (*FS)(nil)
