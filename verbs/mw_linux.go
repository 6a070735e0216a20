//go:build linux && cgo && !nordma

package verbs

/*
#include "rdma_shim.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// AllocWindow implements Conn (ibv_alloc_mw, IBV_MW_TYPE_2). The window
// holds a reference on the protection domain like an MR does.
func (c *rdmaConn) AllocWindow() (*Window, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed || c.pd == nil {
		return nil, ErrClosed
	}
	mw, err := C.ibv_alloc_mw(c.pd, C.IBV_MW_TYPE_2)
	if mw == nil {
		return nil, fmt.Errorf("verbs: ibv_alloc_mw (type 2): %w", err)
	}
	c.mu.Lock()
	c.nMR++
	c.mu.Unlock()
	c.prov.liveMRs.Add(1)
	return &Window{owner: c, handle: unsafe.Pointer(mw), rkey: uint32(mw.rkey)}, nil
}

func (c *rdmaConn) ReleaseWindow(w *Window) error {
	var err error
	if rc := C.ibv_dealloc_mw((*C.struct_ibv_mw)(w.handle)); rc != 0 {
		err = fmt.Errorf("verbs: ibv_dealloc_mw: %w", syscall.Errno(rc))
	}
	c.mu.Lock()
	c.nMR--
	last := c.destroyed && c.nMR == 0
	c.mu.Unlock()
	c.prov.liveMRs.Add(-1)
	if last {
		// as ReleaseMR: the PD, then the id (librdmacm's hold on the
		// device) and its channel
		c.releaseDevice()
	}
	return err
}

// validBind checks what the provider cannot: both objects exist and the
// range lies inside the MR.
func validBind(b *WindowBind) bool {
	return b.Window != nil && b.Window.handle != nil && b.MR != nil && b.MR.handle != nil &&
		b.Offset >= 0 && b.Length >= 0 && b.Offset <= b.MR.Len() && b.Length <= b.MR.Len()-b.Offset &&
		b.Access&^(AccessRemoteRead|AccessRemoteWrite) == 0
}

// fillBind sets the IBV_WR_BIND_MW fields of a flat work request.
func fillBind(x *C.struct_shim_send_wr, b *WindowBind) {
	x.mw = (*C.struct_ibv_mw)(b.Window.handle)
	x.mr = (*C.struct_ibv_mr)(b.MR.handle)
	x.remote_addr = C.uint64_t(b.MR.Addr() + uint64(b.Offset))
	x.rkey = C.uint32_t(b.RKey)
	x.bind_len = C.uint64_t(b.Length)
	x.bind_access = C.uint32_t(b.Access)
}

// WindowBoundsEnforced implements WindowBoundsEnforcer.
func (c *rdmaConn) WindowBoundsEnforced() bool { return !c.rxe }

// QueryQP implements QPQuerier (ibv_query_qp).
func (c *rdmaConn) QueryQP() (QPAttributes, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.destroyed || c.qp == nil {
		return QPAttributes{}, ErrClosed
	}
	var a C.struct_shim_qp_attrs
	if rc := C.shim_query_qp(c.qp, &a); rc != 0 {
		return QPAttributes{}, fmt.Errorf("verbs: ibv_query_qp: %w", syscall.Errno(-rc))
	}
	return QPAttributes{
		Timeout: uint8(a.timeout), RetryCount: uint8(a.retry_cnt), RNRRetry: uint8(a.rnr_retry),
		MaxReadAtomic: uint8(a.max_rd_atomic), MaxDestReadAtomic: uint8(a.max_dest_rd_atomic),
		PathMTU: int(a.path_mtu),
	}, nil
}
