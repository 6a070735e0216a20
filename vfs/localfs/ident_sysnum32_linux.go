//go:build linux && (386 || arm)

package localfs

import "golang.org/x/sys/unix"

// System call numbers of the 32-bit-id variants: the plain ones take
// 16-bit ids on these architectures.
const (
	sysSetfsuid  = unix.SYS_SETFSUID32
	sysSetfsgid  = unix.SYS_SETFSGID32
	sysSetgroups = unix.SYS_SETGROUPS32
)
