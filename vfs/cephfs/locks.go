//go:build ceph && linux && cgo

package cephfs

/*
#cgo LDFLAGS: -lcephfs
#cgo CPPFLAGS: -D_FILE_OFFSET_BITS=64
#include <fcntl.h>
#include <cephfs/libcephfs.h>
*/
import "C"

import (
	"io/fs"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// lockOwners numbers lock owners across every FS of the process: CephFS
// tells lock owners apart by client session and this number, so two
// owners of one head must never share one.
var lockOwners atomic.Uint64

// OpenLocks implements vfs.Locker with CephFS's own byte-range locks
// (ceph_ll_setlk, ceph_ll_getlk), which the MDS arbitrates between all
// clients of the file system: a lock taken through one head conflicts with
// a lock through any other head, and with fcntl locks of kernel and FUSE
// clients of the same file system. Each FileLocks holds the inode and its
// own open file (not the cache's, so an eviction never drops a lock);
// each lock owner gets its own CephFS owner number.
func (f *FS) OpenLocks(h vfs.Handle) (vfs.FileLocks, error) {
	if err := f.enter(); err != nil {
		return nil, err
	}
	defer f.leave()
	n, err := f.get(h)
	if err != nil {
		return nil, err
	}
	if n.typ != vfs.TypeReg {
		f.put(n)
		return nil, vfs.ErrNotSupported
	}
	var fh *C.struct_Fh
	if r := C.ceph_ll_open(f.m, n.in, C.O_RDWR, &fh, f.rootPerm); r < 0 {
		f.put(n)
		return nil, perr("open", r)
	}
	return &fileLocks{f: f, n: n, fh: fh, owners: map[string]uint64{}}, nil
}

type fileLocks struct {
	f      *FS
	n      *node
	mu     sync.Mutex
	fh     *C.struct_Fh // nil once closed
	owners map[string]uint64
}

func lockRange(typ C.short, start, end int64) C.struct_flock {
	l := C.struct_flock{l_type: typ, l_whence: C.SEEK_SET, l_start: C.off_t(start), l_pid: C.pid_t(os.Getpid())}
	if end != math.MaxInt64 {
		l.l_len = C.off_t(end - start + 1)
	}
	return l
}

func lockType(exclusive bool) C.short {
	if exclusive {
		return C.F_WRLCK
	}
	return C.F_RDLCK
}

// call runs fn with the open file, under the FS's life lock.
func (l *fileLocks) call(fn func(fh *C.struct_Fh) error) error {
	if err := l.f.enter(); err != nil {
		return err
	}
	defer l.f.leave()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fh == nil {
		return fs.ErrClosed
	}
	return fn(l.fh)
}

func (l *fileLocks) owner(name string, create bool) (uint64, bool) {
	id, ok := l.owners[name]
	if !ok && create {
		id, ok = lockOwners.Add(1), true
		l.owners[name] = id
	}
	return id, ok
}

func lockErr(op string, r C.int) error {
	switch e := syscall.Errno(-r); e {
	case syscall.ENOLCK, syscall.EOPNOTSUPP, syscall.ENOSYS:
		return vfs.ErrLockUnsupported
	default:
		return &os.PathError{Op: op, Err: e}
	}
}

// Lock implements vfs.FileLocks; it never waits.
func (l *fileLocks) Lock(owner string, exclusive bool, start, end int64) (bool, error) {
	ok := false
	err := l.call(func(fh *C.struct_Fh) error {
		id, _ := l.owner(owner, true)
		fl := lockRange(lockType(exclusive), start, end)
		switch r := C.ceph_ll_setlk(l.f.m, fh, &fl, C.uint64_t(id), 0); {
		case r == 0:
			ok = true
		case syscall.Errno(-r) == syscall.EAGAIN || syscall.Errno(-r) == syscall.EACCES:
		default:
			return lockErr("setlk", r)
		}
		return nil
	})
	return ok, err
}

// Unlock implements vfs.FileLocks.
func (l *fileLocks) Unlock(owner string, start, end int64) error {
	return l.call(func(fh *C.struct_Fh) error {
		id, ok := l.owner(owner, false)
		if !ok {
			return nil
		}
		fl := lockRange(C.F_UNLCK, start, end)
		if r := C.ceph_ll_setlk(l.f.m, fh, &fl, C.uint64_t(id), 0); r < 0 {
			return lockErr("setlk", r)
		}
		return nil
	})
}

// Test implements vfs.FileLocks: a lock of another owner (of this head
// or any other client) that conflicts.
func (l *fileLocks) Test(owner string, exclusive bool, start, end int64) (vfs.LockHolder, bool, error) {
	var h vfs.LockHolder
	found := false
	err := l.call(func(fh *C.struct_Fh) error {
		id, ok := l.owner(owner, false)
		if !ok {
			id = lockOwners.Add(1) // an owner with no locks
		}
		fl := lockRange(lockType(exclusive), start, end)
		if r := C.ceph_ll_getlk(l.f.m, fh, &fl, C.uint64_t(id)); r < 0 {
			return lockErr("getlk", r)
		}
		if fl.l_type == C.F_UNLCK {
			return nil
		}
		found = true
		h = vfs.LockHolder{Exclusive: fl.l_type == C.F_WRLCK, Start: int64(fl.l_start), End: math.MaxInt64, PID: int32(fl.l_pid)}
		if fl.l_len != 0 {
			h.End = int64(fl.l_start) + int64(fl.l_len) - 1
		}
		return nil
	})
	return h, found, err
}

// Forget implements vfs.FileLocks.
func (l *fileLocks) Forget(owner string) error {
	return l.call(func(fh *C.struct_Fh) error {
		id, ok := l.owner(owner, false)
		if !ok {
			return nil
		}
		delete(l.owners, owner)
		fl := lockRange(C.F_UNLCK, 0, math.MaxInt64)
		if r := C.ceph_ll_setlk(l.f.m, fh, &fl, C.uint64_t(id), 0); r < 0 {
			return lockErr("setlk", r)
		}
		return nil
	})
}

// Close implements vfs.FileLocks: every owner's locks are released, then
// the open file and the inode. After the FS's Close it only forgets them
// (the unmount dropped the locks).
func (l *fileLocks) Close() error {
	l.f.life.RLock()
	defer l.f.life.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fh == nil {
		return nil
	}
	fh := l.fh
	l.fh = nil
	if l.f.closed {
		return nil
	}
	var err error
	for name, id := range l.owners {
		fl := lockRange(C.F_UNLCK, 0, math.MaxInt64)
		if r := C.ceph_ll_setlk(l.f.m, fh, &fl, C.uint64_t(id), 0); r < 0 && err == nil {
			err = lockErr("setlk", r)
		}
		delete(l.owners, name)
	}
	if r := C.ceph_ll_close(l.f.m, fh); r < 0 && err == nil {
		err = perr("close", r)
	}
	l.f.put(l.n)
	return err
}

var _ vfs.Locker = (*FS)(nil)
