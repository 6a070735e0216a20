// Package threadcred settles, once per process, whether threads that
// switched identity and back may run other code.
//
// A thread whose credentials changed and were restored has the same ids
// but a new struct cred, and the kernel compares credentials by pointer
// where it checks that a file is written by the credentials that opened
// it (ib_safe_file_access: the uverbs and rdma_cm command files, written
// by Soft-RoCE's ibv_post_send and by rdma_accept). So a process either
// lets goroutines switch identity on their own threads and later run
// anything there (the OS backend's MKDIR, SYMLINK and MKNOD), or opens
// RDMA devices; never both. The first to ask wins: Taint after Reserve
// returns false (the backend keeps its dedicated identity threads), and
// Reserve after Taint fails (RDMA is refused with an error, not left to
// fail on some thread later). verbs.NewRDMAProvider reserves once it has
// found a device; the daemon asks for it before serving any call.
package threadcred

import (
	"errors"
	"sync/atomic"
)

const (
	undecided int32 = iota
	tainted         // shared threads have switched identity
	reserved        // RDMA command files may be opened
)

var state atomic.Int32

// ErrTainted is returned by Reserve once threads have switched identity
// and gone back to running other goroutines.
var ErrTainted = errors.New("threadcred: threads of this process switched identity and back; their credentials would fail the RDMA command files' check")

// Taint reports whether the caller may switch identity on a shared
// thread (and restore it), and if so records that such threads exist.
func Taint() bool {
	if state.Load() == tainted {
		return true
	}
	return state.CompareAndSwap(undecided, tainted)
}

// Reserve records that this process opens RDMA devices, so that no
// thread may switch identity and be reused afterwards; it fails with
// ErrTainted if some already did.
func Reserve() error {
	if state.Load() == reserved || state.CompareAndSwap(undecided, reserved) {
		return nil
	}
	return ErrTainted
}
