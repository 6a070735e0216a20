package vfs

import (
	"encoding/binary"
	"syscall"
)

// CheckRegular checks that an I/O target is a regular file: EISDIR for a
// directory, EINVAL for anything else.
func CheckRegular(t FileType, op string) error {
	switch t {
	case TypeReg:
		return nil
	case TypeDir:
		return PathErr(op, "", syscall.EISDIR)
	}
	return PathErr(op, "", syscall.EINVAL)
}

// ExclusiveTimes is where an EXCLUSIVE create keeps its verifier, as
// knfsd: mtime seconds = verf[0:4], atime seconds = verf[4:8] (big-endian,
// top bit cleared), nanoseconds 0.
func ExclusiveTimes(verf [8]byte) (atime, mtime int64) {
	return int64(binary.BigEndian.Uint32(verf[4:8]) & 0x7fffffff), int64(binary.BigEndian.Uint32(verf[0:4]) & 0x7fffffff)
}
