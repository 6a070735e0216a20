//go:build linux && !386 && !arm

package localfs

import "golang.org/x/sys/unix"

// System call numbers of the 32-bit-id variants (the only ones on 64-bit
// architectures).
const (
	sysSetfsuid  = unix.SYS_SETFSUID
	sysSetfsgid  = unix.SYS_SETFSGID
	sysSetgroups = unix.SYS_SETGROUPS
)
