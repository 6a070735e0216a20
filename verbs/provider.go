package verbs

// The seam for a Provider implemented outside this package (the software
// fabric, verbs/softfabric): how it makes the MRs and Windows the API
// hands out, and the optional capabilities a Conn may offer. The RDMA
// provider in this package uses the same interfaces.

// MRReleaser is the provider side of an MR: MR.Deregister calls
// ReleaseMR exactly once, which deregisters the region and frees its
// memory (unless the MR is a RegisterRange registration, which owns
// none). The MR's Bytes are nil once Deregister returns.
type MRReleaser interface {
	ReleaseMR(m *MR) error
}

// NewMR makes the MR a provider returns from Register or RegisterRange:
// buf is the registered memory (the provider's until ReleaseMR; Addr is
// the address of buf[0]), lkey and rkey its keys, access what it was
// registered with.
func NewMR(buf []byte, lkey, rkey uint32, access Access, owner MRReleaser) *MR {
	return &MR{buf: buf, addr: sliceAddr(buf), lkey: lkey, rkey: rkey, access: access, owner: owner}
}

// WindowReleaser is the provider side of a Window: Window.Free calls
// ReleaseWindow exactly once.
type WindowReleaser interface {
	ReleaseWindow(w *Window) error
}

// NewWindow makes the Window a provider returns from AllocWindow, with
// its initial rkey (NextRKey changes only its low 8 bits).
func NewWindow(rkey uint32, owner WindowReleaser) *Window {
	return &Window{owner: owner, rkey: rkey}
}

// RangeRegistrar is implemented by a Conn that can register part of an
// MR a second time (RegisterRange).
type RangeRegistrar interface {
	RegisterRange(m *MR, off, n int, access Access) (*MR, error)
}

// WindowBoundsEnforcer is implemented by a Conn that can say whether its
// device confines a window's rkey to the bound range
// (WindowBoundsEnforced).
type WindowBoundsEnforcer interface {
	WindowBoundsEnforced() bool
}

// MemoryPinner is implemented by a Provider that can say whether its
// registrations pin memory. The RDMA provider's do (ibv_reg_mr), so
// RLIMIT_MEMLOCK bounds them; the software fabric's pin nothing.
type MemoryPinner interface {
	PinsMemory() bool
}

// PinsMemory reports whether p's registrations pin memory: what p says
// through MemoryPinner, else true.
func PinsMemory(p Provider) bool {
	if m, ok := p.(MemoryPinner); ok {
		return m.PinsMemory()
	}
	return true
}
