package localfs

import (
	"encoding/binary"
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
// export by a rename (of itself or of a directory above it), so the FS
// watches its filesystem for renames with fanotify (a filesystem mark,
// FAN_MOVED_FROM for files and directories; this needs CAP_SYS_ADMIN) and
// counts the relevant ones in an epoch. A cached entry remembers the
// epoch at which within last passed; a cache hit skips within when no
// event is queued (FIONREAD on the fanotify descriptor, one cheap ioctl),
// the reader holds none, and the epoch is unchanged. The kernel queues
// the event inside rename(2), before it returns. The reader counts itself
// in flight before each read and bumps the epoch before it leaves, and a
// hit looks at the queue, then at the reader, then at the epoch, so there
// is no instant after a rename at which a stale verification could be
// trusted: the event is queued, or being judged, or the epoch has moved.
//
// Only renames out of a directory inside the export bump the epoch: an
// object can leave the export only when it, or a directory above it that
// lies inside, is renamed, and that rename's source directory is inside.
// The reader opens the source directory of each event by its handle
// (FAN_REPORT_FID reports it) and asks within; renames elsewhere on the
// filesystem cost the reader, not the data path. An event it cannot
// place (the directory is gone, the queue overflowed, a record it does
// not understand) bumps the epoch.
//
// Where fanotify is not available (no CAP_SYS_ADMIN, a kernel or a
// filesystem without support for FID-reporting filesystem marks, or the
// per-user limit of fanotify groups, fs.fanotify.max_user_groups, used
// up: each FS holds one group, one descriptor and one goroutine) every
// cache hit runs within: the same answers, slower.

// moveWatch is an FS's rename watcher.
type moveWatch struct {
	epoch    atomic.Uint64 // relevant renames seen (or possibly seen); starts at 1
	inflight atomic.Int32  // the reader holds events it has not judged yet
	fd       int           // the fanotify descriptor, -1 when not watching
	file     *os.File      // fd, in the runtime poller; Close stops the reader
	// inside reports whether the directory open as fd lies inside the
	// export (FS.within); event handles are opened relative to mountFD.
	inside  func(fd int) bool
	mountFD int
}

// start watches the filesystem of rootFD; on failure the watch is off
// (fd -1) and the reason is logged.
func (w *moveWatch) start(rootFD int, inside func(fd int) bool, log *zap.Logger) {
	w.epoch.Store(1)
	w.fd = -1
	w.inside, w.mountFD = inside, rootFD
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
	w.file = os.NewFile(uintptr(fd), "fanotify")
	rc, err := w.file.SyscallConn()
	if err != nil {
		w.file.Close()
		w.file = nil
		return
	}
	w.fd = fd
	go w.read(rc)
}

// read judges rename events until the watch is closed. It allocates
// nothing once started, so renames elsewhere do not disturb allocation
// tests of the data path.
func (w *moveWatch) read(rc interface {
	Read(func(fd uintptr) bool) error
}) {
	buf := make([]byte, 8192)
	judge := func(fd uintptr) bool {
		for {
			w.inflight.Add(1)
			n, err := unix.Read(int(fd), buf)
			if err == nil && n > 0 && w.relevant(buf[:n]) {
				w.epoch.Add(1)
			}
			w.inflight.Add(-1)
			if err == unix.EAGAIN {
				return false // drained: wait for more
			}
			if err != nil || n <= 0 {
				return true
			}
		}
	}
	for rc.Read(judge) == nil {
	}
}

// relevant reports whether any event in b may have moved something out
// of the export.
func (w *moveWatch) relevant(b []byte) bool {
	for len(b) > 0 {
		// struct fanotify_event_metadata: event_len u32, vers u8,
		// reserved u8, metadata_len u16, mask u64, fd s32, pid s32.
		if len(b) < unix.FAN_EVENT_METADATA_LEN {
			return true
		}
		evLen := int(binary.NativeEndian.Uint32(b[0:]))
		metaLen := int(binary.NativeEndian.Uint16(b[6:]))
		mask := binary.NativeEndian.Uint64(b[8:])
		if metaLen < unix.FAN_EVENT_METADATA_LEN || evLen < metaLen || evLen > len(b) {
			return true
		}
		if mask&unix.FAN_Q_OVERFLOW != 0 || !w.sourceOutside(b[metaLen:evLen]) {
			return true
		}
		b = b[evLen:]
	}
	return false
}

// sourceOutside reports whether the FID record in info names a directory
// that exists and lies outside the export.
func (w *moveWatch) sourceOutside(info []byte) bool {
	// struct fanotify_event_info_fid: info_type u8, pad u8, len u16,
	// fsid 8 bytes, then struct file_handle: handle_bytes u32,
	// handle_type s32, f_handle[handle_bytes].
	if len(info) < 20 || info[0] != unix.FAN_EVENT_INFO_TYPE_FID {
		return false
	}
	recLen := int(binary.NativeEndian.Uint16(info[2:]))
	if recLen > len(info) || 20+int(binary.NativeEndian.Uint32(info[12:])) > recLen {
		return false
	}
	fd, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(w.mountFD), uintptr(unsafe.Pointer(&info[12])),
		unix.O_PATH|unix.O_CLOEXEC)
	if e != 0 {
		return false
	}
	in := w.inside(int(fd))
	unix.Close(int(fd))
	return !in
}

// quiet reports whether nothing can have moved out of the export since
// epoch. The order matters (see the comment at the top): the queue, then
// the reader, then the epoch.
func (w *moveWatch) quiet(epoch uint64) bool {
	if w.fd < 0 {
		return false
	}
	var n int32
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(w.fd), unix.TIOCINQ, // FIONREAD
		uintptr(unsafe.Pointer(&n)))
	return e == 0 && n == 0 && w.inflight.Load() == 0 && w.epoch.Load() == epoch
}

func (w *moveWatch) close() {
	if w.file != nil {
		w.file.Close()
	}
}
