//go:build !linux

package oncrpc

import "syscall"

// socketIdle is unknown here, so never idle: calls go to the workers.
func socketIdle(syscall.RawConn) bool { return false }
