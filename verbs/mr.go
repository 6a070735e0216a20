package verbs

import (
	"sync"
	"unsafe"
)

// MR is a registered memory region (struct ibv_mr) whose memory lives
// outside the Go heap (anonymous mmap), so it never moves and the garbage
// collector never scans it.
//
// Ownership: while a work request that names part of the region is posted
// (until its Completion is polled, or until Close of the Conn returns) the
// provider owns those bytes. While the peer holds the rkey it may read or
// write the region at any time. Deregister only when neither holds; any
// slice obtained from Bytes or Slice is invalid afterwards.
type MR struct {
	buf    []byte
	addr   uint64
	lkey   uint32
	rkey   uint32
	access Access

	owner  MRReleaser
	handle unsafe.Pointer // *C.struct_ibv_mr for the RDMA provider
	// parent is the MR whose memory a RegisterRange registration covers;
	// such an MR owns no memory of its own.
	parent *MR

	once sync.Once
	err  error
}

// Bytes is the whole region.
func (m *MR) Bytes() []byte { return m.buf }

// Len is the size of the region in bytes.
func (m *MR) Len() int { return len(m.buf) }

// Addr is the virtual address of byte 0, as the peer uses it in RDMA
// Read/Write (RFC 8166 segment offset = Addr()+off).
func (m *MR) Addr() uint64 { return m.addr }

// LKey is the local key used in SGEs.
func (m *MR) LKey() uint32 { return m.lkey }

// RKey is the remote key the peer uses for RDMA Read/Write.
func (m *MR) RKey() uint32 { return m.rkey }

// Access is the access the region was registered with.
func (m *MR) Access() Access { return m.access }

// Slice returns the n bytes at off. It panics if they are out of range.
func (m *MR) Slice(off, n int) []byte { return m.buf[off : off+n : off+n] }

// SGE returns a scatter/gather entry for the n bytes at off. It panics if
// they are out of range.
func (m *MR) SGE(off, n int) SGE {
	if off < 0 || n < 0 || off+n > len(m.buf) || n > 1<<31 {
		panic("verbs: MR.SGE out of range")
	}
	return SGE{Addr: m.addr + uint64(off), Length: uint32(n), LKey: m.lkey}
}

// Deregister deregisters the region (ibv_dereg_mr) and frees its memory.
// It is idempotent.
func (m *MR) Deregister() error {
	m.once.Do(func() {
		m.err = m.owner.ReleaseMR(m)
		m.buf = nil
	})
	return m.err
}

// sliceAddr is the virtual address of b[0].
func sliceAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
