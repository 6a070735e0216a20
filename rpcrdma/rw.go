// rw.go: RDMA Read and Write contexts: the pool of large registered
// buffers that Read chunks are pulled into and bulk replies are pushed
// from, and the construction of Read/Write work-request chains over chunk
// segments.
//
// Buffer ownership: a bigBuf belongs to the pool while free. A per-call
// slot borrows it (call assembly, READ payload, Reply-chunk staging) and
// gives it back when the slot is released, which happens only after the
// Send that ends the reply has completed (so no posted WR names it). Every
// registered buffer is also listed in pool.all; the connection deregisters
// them all after its queue pair is closed, whether or not a slot still
// holds them.

package rpcrdma

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

var errDead = errors.New("rpcrdma: connection is gone")

// bigPool is a per-connection, lazily grown pool of registered buffers of
// one size. It never holds more than max buffers.
type bigPool struct {
	reg    func(size int, access verbs.Access) (*verbs.MR, error)
	size   int
	access verbs.Access
	max    int
	// The first reserve buffers are paid for by the connection's
	// reservation; each further one takes its size from budget (when
	// set), charged counts those (limits.go).
	reserve int
	budget  *pinnedBudget
	charged int

	mu   sync.Mutex
	cond sync.Cond
	free []*verbs.MR
	all  []*verbs.MR // every registered buffer, free or lent
	// pending counts registrations in flight (p.mu let go): places
	// taken that are not yet in all.
	pending int
	dead    bool
}

func newBigPool(reg func(int, verbs.Access) (*verbs.MR, error), size, max int, access verbs.Access) *bigPool {
	p := &bigPool{reg: reg, size: size, max: max, access: access}
	p.cond.L = &p.mu
	return p
}

// get returns a free buffer, registering one if the pool may still grow,
// else waiting for one.
func (p *bigPool) get() (*verbs.MR, error) {
	p.mu.Lock()
	for {
		if p.dead {
			p.mu.Unlock()
			return nil, errDead
		}
		if n := len(p.free); n > 0 {
			m := p.free[n-1]
			p.free = p.free[:n-1]
			p.mu.Unlock()
			return m, nil
		}
		if len(p.all)+p.pending < p.max {
			charged, ok := p.mayGrow()
			if !ok {
				p.cond.Wait()
				continue
			}
			// Registering takes a system call: count the buffer as
			// pending so others see the place taken, and let go of
			// the lock meanwhile. p.all only ever holds registered
			// buffers, so close can deregister them whatever is in
			// flight.
			p.pending++
			p.mu.Unlock()
			m, err := p.reg(p.size, p.access)
			p.mu.Lock()
			p.pending--
			if err != nil || p.dead {
				// close gave back every charge when the pool died.
				if charged && !p.dead {
					p.charged--
					p.budget.give(int64(p.size))
				}
				p.mu.Unlock()
				if m != nil {
					m.Deregister()
				}
				if err == nil {
					err = errDead
				}
				p.cond.Broadcast()
				return nil, err
			}
			p.all = append(p.all, m)
			p.mu.Unlock()
			return m, nil
		}
		p.cond.Wait()
	}
}

func (p *bigPool) put(m *verbs.MR) {
	p.mu.Lock()
	p.free = append(p.free, m)
	p.mu.Unlock()
	p.cond.Signal()
}

// close deregisters every buffer the pool ever registered. Call it only
// when no WR names them any more (after Conn.Close).
func (p *bigPool) close() {
	p.mu.Lock()
	p.dead = true
	all := p.all
	p.all, p.free = nil, nil
	if p.budget != nil {
		p.budget.give(int64(p.charged) * int64(p.size))
		p.charged = 0
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	for _, m := range all {
		if m != nil {
			m.Deregister()
		}
	}
}

// offsetIn reports where b starts inside m, if b lies wholly inside m.
func offsetIn(m *verbs.MR, b []byte) (int, bool) {
	if m == nil || len(b) == 0 {
		return 0, false
	}
	base := m.Bytes()
	if len(base) == 0 {
		return 0, false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(base)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < start || p-start > uintptr(len(base)) || uintptr(len(b)) > uintptr(len(base))-(p-start) {
		return 0, false
	}
	return int(p - start), true
}

// appendWrites appends RDMA Write WRs that place n bytes of m starting at
// off into the segments of c, in order, never past a segment's length. It
// returns the WRs, the SGE storage, and the per-segment lengths written
// (appended to used). The caller has checked n <= c.Len() and gave sges
// enough capacity that it never grows (each WR's SGL points into it).
func appendWrites(wrs []verbs.SendWR, sges []verbs.SGE, used []uint32, m *verbs.MR, off, n int, c Chunk, wrid uint64) ([]verbs.SendWR, []verbs.SGE, []uint32) {
	for _, seg := range c {
		k := int(seg.Length)
		if k > n {
			k = n
		}
		used = append(used, uint32(k))
		if k == 0 {
			continue
		}
		sges = append(sges, m.SGE(off, k))
		wrs = append(wrs, verbs.SendWR{
			ID: wrid, Opcode: verbs.OpRDMAWrite, SGL: sges[len(sges)-1:],
			RemoteAddr: seg.Offset, RKey: seg.Handle,
		})
		off += k
		n -= k
	}
	return wrs, sges, used
}

// mayGrow reports whether one more buffer is paid for: by the
// reservation, or by the pinned budget (then taken from it, and charged
// is true). p.mu is held.
func (p *bigPool) mayGrow() (charged, ok bool) {
	if p.budget == nil || len(p.all)+p.pending < p.reserve {
		return false, true
	}
	if !p.budget.take(int64(p.size)) {
		return false, false
	}
	p.charged++
	return true, true
}
