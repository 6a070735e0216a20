package vfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ToErrno reduces an error returned by an FS method to the errno the NFS
// layer maps to nfsstat3. It reports false for the vfs sentinels
// (ErrStale, ErrBadHandle, ErrNotSupported, ErrExclusiveMismatch,
// ErrBadCookie) and for nil, which the caller maps itself. Every other
// error yields true: a syscall.Errno found anywhere in the chain (through
// *os.PathError, *os.LinkError, fmt %w wrapping), else the errno matching
// an io/fs sentinel, else EIO.
func ToErrno(err error) (syscall.Errno, bool) {
	if err == nil {
		return 0, false
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return 0, false
		}
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT, true
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST, true
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES, true
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL, true
	}
	return syscall.EIO, true
}

// sentinels lists the errors ToErrno leaves to the caller.
var sentinels = [...]error{ErrStale, ErrBadHandle, ErrNotSupported, ErrExclusiveMismatch, ErrBadCookie}

// PathErr wraps errno e as the *os.PathError every backend returns.
func PathErr(op, name string, e syscall.Errno) error {
	return &os.PathError{Op: op, Path: name, Err: e}
}

// CheckName validates a single name component for a method other than
// Lookup: as lookup_one_len in the kernel (which knfsd uses), "", ".",
// "..", and names containing '/' or NUL fail with EACCES; names longer
// than MaxName fail with ENAMETOOLONG.
func CheckName(op, name string) error {
	if len(name) > MaxName {
		return PathErr(op, name, syscall.ENAMETOOLONG)
	}
	if name == "" || name == "." || name == ".." {
		return PathErr(op, name, syscall.EACCES)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return PathErr(op, name, syscall.EACCES)
		}
	}
	return nil
}
