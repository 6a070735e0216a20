package verbs

import (
	"context"
	"sync"
)

// Buffer ownership in the fabric: PostRecv/PostSend copy the WR and its
// SGL into the queue rings, but the bytes the SGEs name are read or
// written only when the WR executes, on the per-Conn worker goroutine;
// until the Completion is polled they belong to the fabric.

// link is one connection: the two queue pairs share one mutex, which
// guards every field marked "link.mu" of both fabConns and their MRs.
type link struct {
	mu   sync.Mutex
	side [2]*fabConn // 0 active (Dial), 1 passive (ConnRequest.Conn)
	ops  int         // send-queue WRs executed, for FaultPlan.DropAfter
	gen  uint64      // plan generation ops counts against
	req  *fabRequest // the connection request, until answered
}

type connState int

const (
	stIdle      connState = iota // QP created, not connected: Receives only
	stConnected                  // RTS
	stDead                       // error state, everything flushed
	stClosed                     // destroyed
)

type sendEntry struct {
	id       uint64
	op       WROpcode
	signaled bool
	raddr    uint64
	rkey     uint32
	invRKey  uint32
	bind     WindowBind
	sgl      []SGE
}

type recvEntry struct {
	id  uint64
	sgl []SGE
}

// fabConn implements Conn for the software fabric.
type fabConn struct {
	fab    *Fabric
	l      *link
	side   int
	cfg    Config
	local  string
	remote string

	notify     chan struct{} // wakes Poll; capacity 1
	kick       chan struct{} // wakes the worker; capacity 1
	quit       chan struct{}
	workerDone chan struct{}
	done       chan struct{}

	// link.mu
	state    connState
	err      error
	peerPriv []byte
	mrs      map[uint32]*MR
	windows  map[uint32]*Window

	sq               []sendEntry // ring, len MaxSendWR
	sqHead, sqLen    int
	sqUsed           int // send-queue slots held, including retired unsignaled WRs
	unsignaledRetire int // unsignaled WRs executed since the last signaled one

	rq            []recvEntry // ring, len MaxRecvWR
	rqHead, rqLen int

	cq                   []Completion // ring
	cqHead, cqLen        int
	cqSend, cqRecv       int // entries of each queue in the ring
	sendDepth, recvDepth int
	cqOverflow           bool
}

var _ Conn = (*fabConn)(nil)

func (f *Fabric) newConn(l *link, side int, cfg Config, local, remote string) *fabConn {
	c := &fabConn{
		fab: f, l: l, side: side, cfg: cfg, local: local, remote: remote,
		notify:     make(chan struct{}, 1),
		kick:       make(chan struct{}, 1),
		quit:       make(chan struct{}),
		workerDone: make(chan struct{}),
		done:       make(chan struct{}),
		mrs:        make(map[uint32]*MR),
		windows:    make(map[uint32]*Window),
		sq:         make([]sendEntry, cfg.MaxSendWR),
		rq:         make([]recvEntry, cfg.MaxRecvWR),
		sendDepth:  cfg.sendCQDepth(),
		recvDepth:  cfg.recvCQDepth(),
	}
	for i := range c.sq {
		c.sq[i].sgl = make([]SGE, 0, cfg.MaxSendSGE)
	}
	for i := range c.rq {
		c.rq[i].sgl = make([]SGE, 0, cfg.MaxRecvSGE)
	}
	c.cq = make([]Completion, c.sendDepth+c.recvDepth)
	l.mu.Lock()
	l.side[side] = c
	l.mu.Unlock()
	f.nConns.Add(1)
	go c.run()
	return c
}

// peer returns the other side, or nil. Caller holds link.mu.
func (c *fabConn) peer() *fabConn { return c.l.side[1-c.side] }

func (c *fabConn) PeerPrivateData() []byte {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.peerPriv
}

func (c *fabConn) LocalAddr() string     { return c.local }
func (c *fabConn) RemoteAddr() string    { return c.remote }
func (c *fabConn) Config() Config        { return c.cfg }
func (c *fabConn) Done() <-chan struct{} { return c.done }

func (c *fabConn) Err() error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.err
}

// Register implements Conn.
func (c *fabConn) Register(size int, access Access) (*MR, error) {
	if size <= 0 {
		return nil, ErrInvalidWR
	}
	buf, err := allocMem(size)
	if err != nil {
		return nil, err
	}
	id := c.fab.mrSeq.Add(1) & 0xffffff
	m := &MR{
		buf: buf, addr: sliceAddr(buf), access: access, owner: c, id: id,
		lkey: id<<8 | 0xa5, rkey: id<<8 | 0x5a,
	}
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		freeMem(buf)
		return nil, ErrClosed
	}
	c.mrs[id] = m
	c.l.mu.Unlock()
	c.fab.nMRs.Add(1)
	c.fab.mrBytes.Add(int64(size))
	return m, nil
}

func (c *fabConn) deregister(m *MR) error {
	c.l.mu.Lock()
	delete(c.mrs, m.id)
	c.l.mu.Unlock()
	c.fab.nMRs.Add(-1)
	if m.parent != nil {
		m.buf = nil
		return nil
	}
	c.fab.mrBytes.Add(-int64(len(m.buf)))
	err := freeMem(m.buf)
	m.buf = nil
	return err
}

// registerRange implements RegisterRange: a second registration of the n
// bytes at off of m, with its own keys; its memory stays m's.
func (c *fabConn) registerRange(m *MR, off, n int, access Access) (*MR, error) {
	id := c.fab.mrSeq.Add(1) & 0xffffff
	sub := &MR{
		buf: m.buf[off : off+n : off+n], addr: m.addr + uint64(off), access: access, owner: c, id: id,
		lkey: id<<8 | 0xa5, rkey: id<<8 | 0x5a, parent: m,
	}
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		return nil, ErrClosed
	}
	c.mrs[id] = sub
	c.l.mu.Unlock()
	c.fab.nMRs.Add(1)
	return sub, nil
}

// mrByKey finds a live MR of this PD by lkey (local) or rkey (remote).
// Caller holds link.mu.
func (c *fabConn) mrByKey(key uint32, remote bool) *MR {
	m := c.mrs[key>>8]
	if m == nil {
		return nil
	}
	if remote {
		if m.rkey != key || m.invalidated {
			return nil
		}
	} else if m.lkey != key {
		return nil
	}
	return m
}

// localSeg resolves a local SGE, checking lkey, bounds and (for
// destinations) IBV_ACCESS_LOCAL_WRITE. Caller holds link.mu.
func (c *fabConn) localSeg(s SGE, write bool) ([]byte, bool) {
	m := c.mrByKey(s.LKey, false)
	if m == nil || (write && m.access&AccessLocalWrite == 0) {
		return nil, false
	}
	return m.bytesAt(s.Addr, s.Length)
}

// PostRecv implements Conn (ibv_post_recv).
func (c *fabConn) PostRecv(wrs []RecvWR) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state == stClosed {
		return ErrClosed
	}
	if c.rqLen+len(wrs) > len(c.rq) {
		return ErrQueueFull
	}
	for i := range wrs {
		if len(wrs[i].SGL) > c.cfg.MaxRecvSGE || wrs[i].ID >= ReservedWRID {
			return ErrInvalidWR
		}
	}
	for i := range wrs {
		e := &c.rq[(c.rqHead+c.rqLen)%len(c.rq)]
		e.id = wrs[i].ID
		e.sgl = append(e.sgl[:0], wrs[i].SGL...)
		c.rqLen++
	}
	c.fab.postedRecvs.Add(int64(len(wrs)))
	if c.state == stDead {
		c.flush() // a QP in the error state flushes new WRs at once
	}
	return nil
}

// PostSend implements Conn (ibv_post_send).
func (c *fabConn) PostSend(wrs []SendWR) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	switch c.state {
	case stClosed:
		return ErrClosed
	case stIdle:
		return ErrNotConnected
	}
	if c.sqUsed+len(wrs) > len(c.sq) {
		return ErrQueueFull
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGL) > c.cfg.MaxSendSGE || w.ID >= ReservedWRID {
			return ErrInvalidWR
		}
		switch w.Opcode {
		case OpSend, OpSendWithInv, OpRDMAWrite, OpRDMARead, OpLocalInv:
		case OpBindMW:
			if w.Bind.Window == nil || w.Bind.MR == nil {
				return ErrInvalidWR
			}
		default:
			return ErrInvalidWR
		}
	}
	for i := range wrs {
		w := &wrs[i]
		e := &c.sq[(c.sqHead+c.sqLen)%len(c.sq)]
		e.id, e.op, e.signaled = w.ID, w.Opcode, w.Signaled
		e.raddr, e.rkey, e.invRKey, e.bind = w.RemoteAddr, w.RKey, w.InvalidateRKey, w.Bind
		e.sgl = append(e.sgl[:0], w.SGL...)
		c.sqLen++
		c.sqUsed++
	}
	c.fab.postedSends.Add(int64(len(wrs)))
	if c.state == stDead {
		c.flush()
		return nil
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// pushCQE adds a completion to the CQ ring. Caller holds link.mu.
func (c *fabConn) pushCQE(wc Completion) {
	if c.state == stClosed {
		return
	}
	if (wc.Recv && c.cqRecv == c.recvDepth) || (!wc.Recv && c.cqSend == c.sendDepth) {
		c.cqOverflow = true // IBV_EVENT_CQ_ERR; handled by checkOverflow
		return
	}
	c.cq[(c.cqHead+c.cqLen)%len(c.cq)] = wc
	c.cqLen++
	if wc.Recv {
		c.cqRecv++
	} else {
		c.cqSend++
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// TryPoll implements Conn.
func (c *fabConn) TryPoll(wcs []Completion) (int, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state == stClosed {
		return 0, ErrClosed
	}
	n := 0
	for n < len(wcs) && c.cqLen > 0 {
		wc := &c.cq[c.cqHead]
		wcs[n] = *wc
		if wc.Recv {
			c.cqRecv--
		} else {
			c.cqSend--
		}
		c.cqHead = (c.cqHead + 1) % len(c.cq)
		c.cqLen--
		n++
	}
	if n == 0 && c.state == stDead {
		return 0, c.err
	}
	return n, nil
}

// Poll implements Conn.
func (c *fabConn) Poll(ctx context.Context, wcs []Completion) (int, error) {
	if len(wcs) == 0 {
		return 0, nil
	}
	for {
		n, err := c.TryPoll(wcs)
		if n > 0 || err != nil {
			return n, err
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Disconnect implements Conn (rdma_disconnect).
func (c *fabConn) Disconnect() error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	switch c.state {
	case stClosed:
		return ErrClosed
	case stIdle, stConnected:
		c.l.teardown(c, ErrDisconnected, ErrDisconnected)
	}
	return nil
}

// Close implements Conn.
func (c *fabConn) Close() error {
	l := c.l
	l.mu.Lock()
	if c.state == stClosed {
		l.mu.Unlock()
		return nil
	}
	if c.state != stDead {
		l.teardown(c, ErrClosed, ErrDisconnected)
	}
	c.state = stClosed
	c.cqLen, c.cqSend, c.cqRecv = 0, 0, 0
	close(c.quit)
	select {
	case c.notify <- struct{}{}:
	default:
	}
	l.mu.Unlock()
	<-c.workerDone
	c.fab.nConns.Add(-1)
	return nil
}

// teardown moves both QPs of the link to the error state: self gets
// reason selfErr, its peer peerErr. Caller holds link.mu.
func (l *link) teardown(self *fabConn, selfErr, peerErr error) {
	if r := l.req; r != nil && !r.answered {
		// Torn down before Accept: the active side sees a reject.
		r.answered = true
		close(r.decided)
	}
	l.teardownSide(self, selfErr)
	if p := self.peer(); p != nil {
		l.teardownSide(p, peerErr)
	}
}

// teardownSide moves one QP to the error state and flushes it.
func (l *link) teardownSide(c *fabConn, reason error) {
	if c.state == stDead || c.state == stClosed {
		return
	}
	c.state = stDead
	c.err = reason
	c.flush()
	close(c.done)
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// flush completes every outstanding WR with IBV_WC_WR_FLUSH_ERR. Caller
// holds link.mu.
func (c *fabConn) flush() {
	for c.rqLen > 0 {
		e := &c.rq[c.rqHead]
		c.pushCQE(Completion{WRID: e.id, Status: WCWRFlushErr, Opcode: WCRecv, Recv: true})
		c.rqHead = (c.rqHead + 1) % len(c.rq)
		c.rqLen--
		c.fab.postedRecvs.Add(-1)
	}
	for c.sqLen > 0 {
		e := &c.sq[c.sqHead]
		c.pushCQE(Completion{WRID: e.id, Status: WCWRFlushErr, Opcode: sendWCOpcode(e.op)})
		c.sqHead = (c.sqHead + 1) % len(c.sq)
		c.sqLen--
		c.fab.postedSends.Add(-1)
	}
	c.sqUsed, c.unsignaledRetire = 0, 0
}

func sendWCOpcode(op WROpcode) WCOpcode {
	switch op {
	case OpRDMAWrite:
		return WCRDMAWrite
	case OpRDMARead:
		return WCRDMARead
	case OpBindMW:
		return WCBindMW
	case OpLocalInv:
		return WCLocalInv
	}
	return WCSend
}
