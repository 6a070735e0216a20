package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestToErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want syscall.Errno
		ok   bool
	}{
		{nil, 0, false},
		{syscall.ENOENT, syscall.ENOENT, true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.ENOTEMPTY}, syscall.ENOTEMPTY, true},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EXDEV}, syscall.EXDEV, true},
		{fmt.Errorf("wrapped: %w", &os.PathError{Err: syscall.EROFS}), syscall.EROFS, true},
		{fs.ErrNotExist, syscall.ENOENT, true},
		{fs.ErrExist, syscall.EEXIST, true},
		{fs.ErrPermission, syscall.EACCES, true},
		{fs.ErrInvalid, syscall.EINVAL, true},
		{fs.ErrClosed, syscall.EIO, true},
		{errors.New("anything"), syscall.EIO, true},
		{ErrStale, 0, false},
		{fmt.Errorf("x: %w", ErrBadHandle), 0, false},
		{ErrNotSupported, 0, false},
		{ErrExclusiveMismatch, 0, false},
		{ErrBadCookie, 0, false},
	} {
		got, ok := ToErrno(tc.err)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ToErrno(%v) = %v, %v; want %v, %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCheckName(t *testing.T) {
	long := make([]byte, MaxName+1)
	for i := range long {
		long[i] = 'a'
	}
	for name, want := range map[string]syscall.Errno{
		"": syscall.EACCES, ".": syscall.EACCES, "..": syscall.EACCES, "a/b": syscall.EACCES,
		"a\x00": syscall.EACCES, string(long): syscall.ENAMETOOLONG, string(long[1:]): 0,
		"...": 0, ".hidden": 0, "a b": 0, "\xff\xfe": 0,
	} {
		err := CheckName("op", name)
		got, _ := ToErrno(err)
		if got != want {
			t.Errorf("CheckName(%q) = %v, want %v", name, err, want)
		}
	}
}
