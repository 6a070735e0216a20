package softfabric

import (
	"context"
	"sync"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
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
	op       verbs.WROpcode
	signaled bool
	raddr    uint64
	rkey     uint32
	invRKey  uint32
	bind     verbs.WindowBind
	sgl      []verbs.SGE
}

type recvEntry struct {
	id  uint64
	sgl []verbs.SGE
}

// fabConn implements Conn for the software fabric.
type fabConn struct {
	fab    *Fabric
	l      *link
	side   int
	cfg    verbs.Config
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
	mrs      map[uint32]*fabMR
	windows  map[uint32]*fabWindow

	sq               []sendEntry // ring, len MaxSendWR
	sqHead, sqLen    int
	sqUsed           int // send-queue slots held, including retired unsignaled WRs
	unsignaledRetire int // unsignaled WRs executed since the last signaled one
	// acks: the WRs at the head of sq, oldest first, that executed and
	// wait for their acknowledgement (FaultPlan.SendAckLag); the next WR
	// to execute is the one after them. lagging is the plan's lag while
	// step executes a WR under it.
	acks    []pendingAck
	lagging time.Duration

	rq            []recvEntry // ring, len MaxRecvWR
	rqHead, rqLen int

	cq                   []verbs.Completion // ring
	cqHead, cqLen        int
	cqSend, cqRecv       int // entries of each queue in the ring
	sendDepth, recvDepth int
	cqOverflow           bool
	// sendWatch counts WatchSend holds (Config.LazySend): while it is 0
	// and the connection is alive, a send-queue completion does not wake
	// Poll, as on a provider whose send CQ is left unarmed.
	sendWatch int
}

var _ verbs.Conn = (*fabConn)(nil)

func (f *Fabric) newConn(l *link, side int, cfg verbs.Config, local, remote string) *fabConn {
	c := &fabConn{
		fab: f, l: l, side: side, cfg: cfg, local: local, remote: remote,
		notify:     make(chan struct{}, 1),
		kick:       make(chan struct{}, 1),
		quit:       make(chan struct{}),
		workerDone: make(chan struct{}),
		done:       make(chan struct{}),
		mrs:        make(map[uint32]*fabMR),
		windows:    make(map[uint32]*fabWindow),
		sq:         make([]sendEntry, cfg.MaxSendWR),
		rq:         make([]recvEntry, cfg.MaxRecvWR),
		sendDepth:  cfg.SendCQDepth(),
		recvDepth:  cfg.RecvCQDepth(),
	}
	for i := range c.sq {
		c.sq[i].sgl = make([]verbs.SGE, 0, cfg.MaxSendSGE)
	}
	for i := range c.rq {
		c.rq[i].sgl = make([]verbs.SGE, 0, cfg.MaxRecvSGE)
	}
	c.cq = make([]verbs.Completion, c.sendDepth+c.recvDepth)
	l.mu.Lock()
	l.side[side] = c
	l.mu.Unlock()
	f.mu.Lock()
	f.conns[c] = struct{}{}
	gone := f.removed[hostOf(local)]
	f.mu.Unlock()
	f.nConns.Add(1)
	go c.run()
	if gone { // made for a request taken before the device went away
		l.mu.Lock()
		l.teardownSide(c, &verbs.DeviceRemovedError{Device: DeviceName(hostOf(local))})
		l.mu.Unlock()
	}
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
func (c *fabConn) Config() verbs.Config  { return c.cfg }
func (c *fabConn) Done() <-chan struct{} { return c.done }

func (c *fabConn) Err() error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.err
}

// Register implements Conn.
func (c *fabConn) Register(size int, access verbs.Access) (*verbs.MR, error) {
	if size <= 0 {
		return nil, verbs.ErrInvalidWR
	}
	buf, err := allocMem(size)
	if err != nil {
		return nil, err
	}
	id := c.fab.mrSeq.Add(1) & 0xffffff
	m := verbs.NewMR(buf, id<<8|0xa5, id<<8|0x5a, access, c)
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		freeMem(buf)
		return nil, verbs.ErrClosed
	}
	c.mrs[id] = &fabMR{MR: m, id: id}
	c.l.mu.Unlock()
	c.fab.nMRs.Add(1)
	c.fab.mrBytes.Add(int64(size))
	return m, nil
}

// fabMR is the fabric's record of a live registration, found by the
// index part (key>>8) of its keys in its Conn's table. Guarded by
// link.mu.
type fabMR struct {
	*verbs.MR
	id          uint32
	sub         bool // a RegisterRange registration: owns no memory
	invalidated bool // a Send-With-Invalidate named the rkey
}

// bytesAt maps [addr, addr+n) to the region's memory, or reports false
// when the range is not inside the region.
func (m *fabMR) bytesAt(addr uint64, n uint32) ([]byte, bool) {
	buf, base := m.Bytes(), m.Addr()
	if addr < base || addr-base > uint64(len(buf)) || uint64(n) > uint64(len(buf))-(addr-base) {
		return nil, false
	}
	off := int(addr - base)
	return buf[off : off+int(n)], true
}

// ReleaseMR implements verbs.MRReleaser.
func (c *fabConn) ReleaseMR(m *verbs.MR) error {
	id := m.LKey() >> 8
	c.l.mu.Lock()
	fm := c.mrs[id]
	delete(c.mrs, id)
	c.l.mu.Unlock()
	c.fab.nMRs.Add(-1)
	if fm.sub {
		return nil
	}
	c.fab.mrBytes.Add(-int64(m.Len()))
	return freeMem(m.Bytes())
}

// RegisterRange implements verbs.RangeRegistrar: a second registration
// of the n bytes at off of m, with its own keys; its memory stays m's.
func (c *fabConn) RegisterRange(m *verbs.MR, off, n int, access verbs.Access) (*verbs.MR, error) {
	id := c.fab.mrSeq.Add(1) & 0xffffff
	sub := verbs.NewMR(m.Slice(off, n), id<<8|0xa5, id<<8|0x5a, access, c)
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		return nil, verbs.ErrClosed
	}
	c.mrs[id] = &fabMR{MR: sub, id: id, sub: true}
	c.l.mu.Unlock()
	c.fab.nMRs.Add(1)
	return sub, nil
}

// mrByKey finds a live MR of this PD by lkey (local) or rkey (remote).
// Caller holds link.mu.
func (c *fabConn) mrByKey(key uint32, remote bool) *fabMR {
	m := c.mrs[key>>8]
	if m == nil {
		return nil
	}
	if remote {
		if m.RKey() != key || m.invalidated {
			return nil
		}
	} else if m.LKey() != key {
		return nil
	}
	return m
}

// localSeg resolves a local SGE, checking lkey, bounds and (for
// destinations) IBV_ACCESS_LOCAL_WRITE. Caller holds link.mu.
func (c *fabConn) localSeg(s verbs.SGE, write bool) ([]byte, bool) {
	m := c.mrByKey(s.LKey, false)
	if m == nil || (write && m.Access()&verbs.AccessLocalWrite == 0) {
		return nil, false
	}
	return m.bytesAt(s.Addr, s.Length)
}

// PostRecv implements Conn (ibv_post_recv).
func (c *fabConn) PostRecv(wrs []verbs.RecvWR) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state == stClosed {
		return verbs.ErrClosed
	}
	if c.rqLen+len(wrs) > len(c.rq) {
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		if len(wrs[i].SGL) > c.cfg.MaxRecvSGE || wrs[i].ID >= verbs.ReservedWRID {
			return verbs.ErrInvalidWR
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
func (c *fabConn) PostSend(wrs []verbs.SendWR) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	switch c.state {
	case stClosed:
		return verbs.ErrClosed
	case stIdle:
		return verbs.ErrNotConnected
	}
	if c.sqUsed+len(wrs) > len(c.sq) {
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGL) > c.cfg.MaxSendSGE || w.ID >= verbs.ReservedWRID {
			return verbs.ErrInvalidWR
		}
		switch w.Opcode {
		case verbs.OpSend, verbs.OpSendWithInv, verbs.OpRDMAWrite, verbs.OpRDMARead, verbs.OpLocalInv:
		case verbs.OpBindMW:
			if w.Bind.Window == nil || w.Bind.MR == nil {
				return verbs.ErrInvalidWR
			}
		default:
			return verbs.ErrInvalidWR
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
func (c *fabConn) pushCQE(wc verbs.Completion) {
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
	if wc.Recv || !c.cfg.LazySend || c.sendWatch > 0 || c.state == stDead {
		c.wake()
	}
}

// wake wakes Poll.
func (c *fabConn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// WatchSend implements Conn: it also wakes a Poll waiting while send-queue
// completions sit unreturned (the real provider's Poll re-polls after it
// arms the send CQ).
func (c *fabConn) WatchSend() {
	if !c.cfg.LazySend {
		return
	}
	c.l.mu.Lock()
	if c.state != stClosed {
		c.sendWatch++
		c.fab.sendWatches.Add(1)
	}
	if c.cqSend > 0 {
		c.wake()
	}
	c.l.mu.Unlock()
}

// UnwatchSend implements Conn.
func (c *fabConn) UnwatchSend() {
	if !c.cfg.LazySend {
		return
	}
	c.l.mu.Lock()
	if c.state != stClosed {
		c.sendWatch--
		c.fab.sendWatches.Add(-1)
	}
	c.l.mu.Unlock()
}

// TryPoll implements Conn.
func (c *fabConn) TryPoll(wcs []verbs.Completion) (int, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.state == stClosed {
		return 0, verbs.ErrClosed
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
func (c *fabConn) Poll(ctx context.Context, wcs []verbs.Completion) (int, error) {
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
		return verbs.ErrClosed
	case stIdle, stConnected:
		c.l.teardown(c, verbs.ErrDisconnected, verbs.ErrDisconnected)
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
		l.teardown(c, verbs.ErrClosed, verbs.ErrDisconnected)
	}
	c.state = stClosed
	c.cqLen, c.cqSend, c.cqRecv = 0, 0, 0
	c.fab.sendWatches.Add(-int64(c.sendWatch)) // a dead connection's holds end with it
	c.sendWatch = 0
	close(c.quit)
	select {
	case c.notify <- struct{}{}:
	default:
	}
	l.mu.Unlock()
	<-c.workerDone
	c.fab.mu.Lock()
	delete(c.fab.conns, c)
	c.fab.mu.Unlock()
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
		c.pushCQE(verbs.Completion{WRID: e.id, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, Recv: true})
		c.rqHead = (c.rqHead + 1) % len(c.rq)
		c.rqLen--
		c.fab.postedRecvs.Add(-1)
	}
	for c.sqLen > 0 {
		e := &c.sq[c.sqHead]
		c.pushCQE(verbs.Completion{WRID: e.id, Status: verbs.WCWRFlushErr, Opcode: sendWCOpcode(e.op)})
		c.sqHead = (c.sqHead + 1) % len(c.sq)
		c.sqLen--
		c.fab.postedSends.Add(-1)
	}
	c.sqUsed, c.unsignaledRetire, c.acks = 0, 0, c.acks[:0]
}

func sendWCOpcode(op verbs.WROpcode) verbs.WCOpcode {
	switch op {
	case verbs.OpRDMAWrite:
		return verbs.WCRDMAWrite
	case verbs.OpRDMARead:
		return verbs.WCRDMARead
	case verbs.OpBindMW:
		return verbs.WCBindMW
	case verbs.OpLocalInv:
		return verbs.WCLocalInv
	}
	return verbs.WCSend
}
