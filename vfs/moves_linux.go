package vfs

import (
	"os"
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Noticing renames cheaply, so that the inside-the-export check of a
// cache hit (within) runs only when something may have moved.
//
// within reads two /proc/self/fd names, several microseconds: too much to
// pay on every READ, WRITE and GETATTR. An object can only leave the
// export by a rename (of itself or of a directory above it), so the OSFS
// watches its filesystem for renames with fanotify (a filesystem mark,
// FAN_MOVED_FROM for files and directories; this needs CAP_SYS_ADMIN) and
// counts them in an epoch. A cached entry remembers the epoch at which
// within last passed; a cache hit skips within when the epoch is
// unchanged and no rename event is waiting to be read (FIONREAD on the
// fanotify descriptor, one cheap ioctl). The kernel queues the event
// inside rename(2), before it returns, and the reader bumps the epoch
// before it drains the queue, so there is no instant after a rename at
// which a stale verification could be trusted: either the event is queued
// or the epoch has moved. A full queue (FAN_Q_OVERFLOW) is an event too.
// Renames elsewhere on the filesystem also bump the epoch: the next hit
// of each entry then pays within once.
//
// Where fanotify is not available (no CAP_SYS_ADMIN, a kernel or a
// filesystem without support for FID-reporting filesystem marks) every
// cache hit runs within: the same answers, slower.

// moveWatch is an OSFS's rename watcher.
type moveWatch struct {
	epoch atomic.Uint64 // renames seen (or possibly seen) so far; starts at 1
	fd    int           // the fanotify descriptor, -1 when not watching
	file  *os.File      // fd, in the runtime poller; Close stops the reader
}

// watchMoves starts watching the filesystem of rootFD; on failure the
// watch is off (fd -1) and the reason is logged.
func (w *moveWatch) start(rootFD int, log *zap.Logger) {
	w.epoch.Store(1)
	w.fd = -1
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY)
	if err == nil {
		err = unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, unix.FAN_MOVED_FROM|unix.FAN_ONDIR, rootFD, "")
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		log.Info("fanotify unavailable: every cached object is checked to be inside the export on every call", zap.Error(err))
		return
	}
	w.fd = fd
	w.file = os.NewFile(uintptr(fd), "fanotify")
	rc, err := w.file.SyscallConn()
	if err != nil {
		w.file.Close()
		w.fd = -1
		return
	}
	go w.read(rc)
}

// read drains rename events until the watch is closed, bumping the
// epoch before each drain (see the comment at the top).
func (w *moveWatch) read(rc interface {
	Read(func(fd uintptr) bool) error
}) {
	buf := make([]byte, 4096)
	for {
		err := rc.Read(func(fd uintptr) bool {
			w.epoch.Add(1)
			for {
				n, err := unix.Read(int(fd), buf)
				if err == unix.EAGAIN {
					return false // drained: wait for more
				}
				if err != nil || n <= 0 {
					return true
				}
			}
		})
		if err != nil {
			return // closed
		}
	}
}

// quiet reports whether no rename can have happened since epoch: the
// watch is on, the epoch has not moved, and no event is queued.
func (w *moveWatch) quiet(epoch uint64) bool {
	if w.fd < 0 || w.epoch.Load() != epoch {
		return false
	}
	var n int32
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(w.fd), unix.TIOCINQ, // FIONREAD
		uintptr(unsafe.Pointer(&n)))
	return e == 0 && n == 0
}

func (w *moveWatch) close() {
	if w.file != nil {
		w.file.Close()
	}
}
