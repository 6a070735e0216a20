// slot.go: the per-call slot: one per Receive buffer, it is the call's
// oncrpc.Exchange, and it borrows the registered pool buffers a call needs
// (call assembly around Read chunks, READ payload, Reply-chunk staging)
// and gives them back when it is released.
//
// Buffer ownership: a slot is one call in progress. Its Receive buffer (a
// slice of conn.recvMR) belongs to the provider while posted and holds the
// call as received from the Receive completion until the slot is
// released; its Send buffer (a slice of conn.sendMR) holds the reply from
// the worker's encoding until the Send completes. A bigPool buffer
// belongs to the pool while free and to the slot that borrowed it until
// the slot is released, which happens only after the Send that ends the
// reply has completed (so no posted WR names it) or when the call is
// dropped. Every registered pool buffer is also listed in bigPool.all;
// teardown deregisters them all after the queue pair is closed, whether
// or not a slot still holds them. A released slot goes back to the
// connection's free list, from which the completion loop posts its
// Receive again.

package rpcrdma

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// slot is the per-call context, one per Receive buffer.
type slot struct {
	c       *conn
	idx     int
	recv    []byte
	recvSGE [1]verbs.SGE
	recvWR  [1]verbs.RecvWR
	recvLen int
	send    []byte // Send buffer: sendMax bytes of conn.sendMR
	sendOff int

	hdr   proto.Header
	cc    proto.CallChunks
	rd    xdr.Reader
	msg   []byte // the RPC call: inline, or assembled around Read chunks
	call  oncrpc.Call
	reply oncrpc.Reply

	readDone chan verbs.WCStatus
	bigs     [4]*verbs.MR
	nbig     int

	wrs    []verbs.SendWR
	sges   []verbs.SGE
	used   []uint32
	sqHeld int
	// replied: the reply is posted (counted in conn.replied) and the
	// slot waits for its Send's completion.
	replied bool

	// What the call waits for and since when (busy.go), and its XID
	// once decoded: written by whoever runs the call, read by the log
	// of a connection that does not drain.
	wait      atomic.Int32
	waitSince atomic.Int64
	xid       atomic.Uint32
}

func newSlot(c *conn, i, maxWR int) *slot {
	s := &slot{
		c: c, idx: i,
		recv:     c.recvMR.Slice(i*c.recvSize, c.recvSize),
		send:     c.sendMR.Slice(i*c.sendMax, c.sendMax),
		sendOff:  i * c.sendMax,
		readDone: make(chan verbs.WCStatus, 1),
		wrs:      make([]verbs.SendWR, 0, maxWR+2),
		sges:     make([]verbs.SGE, 0, maxWR+2),
		used:     make([]uint32, 0, maxWR),
	}
	s.recvSGE[0] = c.recvMR.SGE(i*c.recvSize, c.recvSize)
	s.reply = oncrpc.NewReply(make([]byte, 0, 512))
	return s
}

// The slot is the call's oncrpc.Exchange.

// Peer implements oncrpc.Exchange.
func (s *slot) Peer() *oncrpc.Peer { return &s.c.peer }

// Message implements oncrpc.Exchange: the RPC call, inline in the Receive
// buffer or assembled around its Read chunks in a pool buffer.
func (s *slot) Message() []byte { return s.msg }

// MaxReply implements oncrpc.Exchange: what the reply can carry inline,
// plus the first Write chunk, or the Reply chunk.
func (s *slot) MaxReply() int { return s.c.maxReply(&s.hdr) }

// CanSplice implements oncrpc.Exchange: RDMA places payloads from
// registered memory, never from a pipe.
func (s *slot) CanSplice() bool { return false }

// SpliceFile implements oncrpc.Exchange: oncrpc.ErrNoSplice.
func (s *slot) SpliceFile(int, int64, int) (int, error) { return 0, oncrpc.ErrNoSplice }

// AllocPayload implements oncrpc.Exchange with registered memory,
// so a READ handler fills the buffer the RDMA Write is posted from.
func (s *slot) AllocPayload(n int) []byte {
	if n <= s.c.srv.bigSize && n > 0 {
		if m, err := s.borrow(); err == nil {
			return m.Bytes()[:n:n]
		}
	}
	return make([]byte, n)
}

// borrow takes a buffer from the connection's pool for this call.
func (s *slot) borrow() (*verbs.MR, error) {
	if s.nbig == len(s.bigs) {
		return nil, errors.New("rpcrdma: too many buffers for one call")
	}
	prev := s.setWait(waitBuffer)
	m, err := s.c.big.get()
	s.setWait(prev)
	if err != nil {
		return nil, err
	}
	s.bigs[s.nbig] = m
	s.nbig++
	return m, nil
}

// releaseBuffers gives the borrowed buffers back; replied says the
// slot's reply was posted (bigPool.replying counted them).
func (s *slot) releaseBuffers(replied bool) {
	for i := 0; i < s.nbig; i++ {
		s.c.big.put(s.bigs[i], replied)
		s.bigs[i] = nil
	}
	s.nbig = 0
	s.call = oncrpc.Call{}
	s.msg = nil
	s.reply.Payload = nil
}

func (c *conn) postRecv(s *slot) error {
	s.recvWR[0] = verbs.RecvWR{ID: wr.ID(wr.Recv, s.idx), SGL: s.recvSGE[:]}
	return c.vc.PostRecv(s.recvWR[:])
}

// release returns a slot whose reply went out (or that was dropped) to
// the free list.
func (c *conn) release(s *slot) {
	s.setWait(waitNone)
	replied := s.replied
	if replied {
		s.replied = false
		c.replied.Add(-1)
	}
	c.sq.release(s.sqHeld)
	s.sqHeld = 0
	s.releaseBuffers(replied)
	c.mu.Lock()
	c.free = append(c.free, s)
	c.busy--
	idle := c.draining && c.busy == 0
	c.mu.Unlock()
	if idle {
		c.disconnect("drained")
	}
}

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

	// watch: as sqBudget's (buffers come back when a reply's Send
	// completes).
	watch sendWatcher

	mu   sync.Mutex
	cond sync.Cond
	free []*verbs.MR
	all  []*verbs.MR // every registered buffer, free or lent
	// returning counts the buffers lent to calls whose reply is posted:
	// each comes back when its Send completes, which a watch makes
	// prompt, so once the pool holds eager buffers get waits for one of
	// them rather than register another (a registration pins its pages:
	// a CPU profile of the server in the test guests had 0.46 s of
	// registering while a burst of the kernel client's 1 MiB WRITEs made
	// the pool register one buffer per call).
	// Below eager it registers at once, so a lost completion (a device
	// fault the transport's tests inject) cannot stall the connection.
	returning int
	eager     int
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
		if p.returning > 0 && len(p.all)+p.pending >= p.eager {
			p.wait()
			continue
		}
		if len(p.all)+p.pending < p.max {
			charged, ok := p.mayGrow()
			if !ok {
				p.wait()
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
		p.wait()
	}
}

// wait waits for a buffer to come back, under a WatchSend. Caller holds
// p.mu.
func (p *bigPool) wait() {
	if p.watch != nil {
		p.watch.WatchSend()
		defer p.watch.UnwatchSend()
	}
	p.cond.Wait()
}

// replying counts n buffers lent to a call whose reply is being posted
// (they come back when its Send completes).
func (p *bigPool) replying(n int) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.returning += n
	p.mu.Unlock()
}

// put takes a buffer back; replied says replying counted it.
func (p *bigPool) put(m *verbs.MR, replied bool) {
	p.mu.Lock()
	p.free = append(p.free, m)
	if replied {
		p.returning--
	}
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
