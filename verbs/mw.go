package verbs

import (
	"errors"
	"sync"
	"unsafe"
)

// Memory windows: per-use remote keys over a long-lived registration.
//
// A Window is a type 2 memory window (ibv_alloc_mw(pd, IBV_MW_TYPE_2),
// IB Architecture Specification vol. 1, 10.6.7). It grants remote access
// to a range of an MR registered with AccessMWBind, through its own rkey,
// only while it is bound:
//
//   - Bind it with an OpBindMW work request on the send queue of the Conn
//     that allocated it; SendWR.Bind names the MR range, the access and the
//     new rkey (Window.NextRKey). Work requests posted after the bind on the
//     same queue see the binding, so a bind chained before the Send that
//     advertises the rkey needs no completion of its own.
//   - Invalidate it with an OpLocalInv work request naming its rkey, or let
//     the peer do it with a Send-With-Invalidate (Completion.Invalidated on
//     the Receive). From then on any RDMA Read or Write with that rkey
//     fails with IBV_WC_REM_ACCESS_ERR at the peer and touches nothing.
//   - A window must be invalidated before it is bound again; binding a
//     bound window fails with IBV_WC_MW_BIND_ERR.
//
// The MR itself should then carry no remote access flags, so that its own
// rkey grants nothing and every remote access goes through a window.
//
// Ownership: while a window is bound the peer may read or write the bound
// range (as its access allows) at any time; the memory belongs to the
// peer from the bind until the invalidation has completed (the local
// invalidate's completion was polled, or the Receive that carried the
// remote invalidation was polled). Free a window only when it is not
// bound or its Conn is closed.
type Window struct {
	owner  WindowReleaser
	handle unsafe.Pointer // *C.struct_ibv_mw for the RDMA provider

	mu   sync.Mutex
	rkey uint32 // the last rkey handed out by NextRKey, or the initial one

	once sync.Once
	err  error
}

// Memory-window access flag, opcodes and completion opcodes (libibverbs
// enum values).
const (
	// AccessMWBind (IBV_ACCESS_MW_BIND) lets windows be bound to the MR.
	AccessMWBind Access = 16

	// OpLocalInv (IBV_WR_LOCAL_INV) invalidates the window rkey
	// SendWR.InvalidateRKey on this side.
	OpLocalInv WROpcode = 7
	// OpBindMW (IBV_WR_BIND_MW) binds SendWR.Bind.Window.
	OpBindMW WROpcode = 8

	WCBindMW   WCOpcode = 5 // IBV_WC_BIND_MW
	WCLocalInv WCOpcode = 6 // IBV_WC_LOCAL_INV
)

// WindowBind is the bind part of an OpBindMW work request (struct
// ibv_send_wr.bind_mw with its ibv_mw_bind_info).
type WindowBind struct {
	Window *Window
	// MR is the region the window is bound to; Offset and Length select
	// the range (bytes) the peer may access at MR.Addr()+Offset.
	MR             *MR
	Offset, Length int
	// Access is AccessRemoteRead, AccessRemoteWrite or both. Remote write
	// needs an MR with AccessLocalWrite.
	Access Access
	// RKey is the rkey the window gets: Window.NextRKey().
	RKey uint32
}

// RKey is the window's current rkey: the one last returned by NextRKey.
func (w *Window) RKey() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rkey
}

// NextRKey returns a fresh rkey for the next bind: the same index with the
// 8-bit key incremented (ibv_inc_rkey), so a peer holding an older rkey
// of this window cannot use it after the rebind.
func (w *Window) NextRKey() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rkey = w.rkey&^0xff | (w.rkey+1)&0xff
	return w.rkey
}

// Free deallocates the window (ibv_dealloc_mw). It is idempotent.
func (w *Window) Free() error {
	w.once.Do(func() { w.err = w.owner.ReleaseWindow(w) })
	return w.err
}

func (o WROpcode) isWindowOp() bool { return o == OpBindMW || o == OpLocalInv }

// WindowBoundsEnforced reports whether the device behind c refuses a
// remote access through a window rkey that falls outside the window's
// bound range but inside its MR. The software fabric and hardware
// implementing the IB specification (10.6.7.2) do. Soft-RoCE (rxe,
// checked on Linux 6.1) does not: its responder looks the window up, then
// checks the access against the range of the window's MR only
// (rxe_resp.c check_rkey, mr_check_range(mw->mr, ...)), so there a window
// limits who may access the MR and until when, not which bytes.
func WindowBoundsEnforced(c Conn) bool {
	if b, ok := c.(WindowBoundsEnforcer); ok {
		return b.WindowBoundsEnforced()
	}
	return false
}

// ErrWindowsUnsupported is AllocWindow's error on a connection whose
// device offers no memory windows (the fabric after DisableWindows).
var ErrWindowsUnsupported = errors.New("verbs: memory windows not supported")

// RegisterRange registers the n bytes at off of m a second time
// (ibv_reg_mr over that memory) with the given access and its own lkey
// and rkey, for devices where a window cannot bound remote access (see
// WindowBoundsEnforced). Remote write access needs AccessLocalWrite. The
// returned MR shares m's memory: Deregister it before m; deregistering it
// frees nothing, and once Deregister has returned its rkey grants nothing.
// Ownership of the range is as for any MR while the peer holds the rkey.
func RegisterRange(c Conn, m *MR, off, n int, access Access) (*MR, error) {
	r, ok := c.(RangeRegistrar)
	if !ok {
		return nil, errors.New("verbs: RegisterRange: the provider cannot register a range")
	}
	if m == nil || m.buf == nil || off < 0 || n <= 0 || off > len(m.buf) || n > len(m.buf)-off {
		return nil, ErrInvalidWR
	}
	return r.RegisterRange(m, off, n, access)
}
