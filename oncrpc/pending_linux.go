package oncrpc

import (
	"syscall"
	"unsafe"
)

// socketIdle reports whether nothing, not even part of a record, waits
// unread in the socket behind raw (FIONREAD, one ioctl(2) that takes no
// lock of the connection). A nil raw, or a failed ioctl, is not idle.
func socketIdle(raw syscall.RawConn) bool {
	if raw == nil {
		return false
	}
	var n int32
	var errno syscall.Errno
	err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	return err == nil && errno == 0 && n == 0
}
