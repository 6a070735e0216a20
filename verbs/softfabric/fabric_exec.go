package softfabric

import (
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// The per-Conn worker executes send-queue WRs in order, which gives the
// RC ordering guarantee: an RDMA Write is placed before a Send posted
// after it completes at the peer.

func (c *fabConn) run() {
	defer close(c.workerDone)
	ackTimer := time.NewTimer(time.Hour)
	ackTimer.Stop()
	defer ackTimer.Stop()
	for {
		select {
		case <-c.kick:
		case <-ackTimer.C:
		case <-c.quit:
			return
		}
		for c.step() {
		}
		// FaultPlan.SendAckLag: wake for the next acknowledgement due.
		c.l.mu.Lock()
		var next time.Time
		if len(c.acks) > 0 && c.state == stConnected {
			next = c.acks[0].due
		}
		c.l.mu.Unlock()
		ackTimer.Stop()
		if !next.IsZero() {
			ackTimer.Reset(max(time.Until(next), 0))
		}
	}
}

// pendingAck is a WR executed under FaultPlan.SendAckLag that completes
// at due.
type pendingAck struct {
	due     time.Time
	byteLen uint32
}

// step completes the acknowledged WRs, then executes the next WR of the
// send queue and reports whether there was one.
func (c *fabConn) step() bool {
	l := c.l
	l.mu.Lock()
	if c.state == stConnected && len(c.acks) > 0 {
		c.retireAcked(time.Now())
	}
	if c.state != stConnected || c.sqLen == len(c.acks) {
		l.mu.Unlock()
		return false
	}
	plan := c.fab.plan.Load()
	if plan != nil && plan.CompletionDelay > 0 {
		l.mu.Unlock()
		t := time.NewTimer(plan.CompletionDelay)
		select {
		case <-t.C:
		case <-c.quit:
			t.Stop()
			return false
		}
		l.mu.Lock()
		if c.state != stConnected || c.sqLen == len(c.acks) {
			l.mu.Unlock() // flushed meanwhile
			return false
		}
	}
	if plan != nil && plan.DropAfter > 0 {
		if l.gen != plan.gen {
			l.gen, l.ops = plan.gen, 0
		}
		l.ops++
		if l.ops > plan.DropAfter {
			l.teardown(c, errInjectedDrop, errInjectedDrop)
			l.mu.Unlock()
			return false
		}
	}
	if plan != nil {
		c.lagging = plan.SendAckLag
	}
	c.exec(&c.sq[(c.sqHead+len(c.acks))%len(c.sq)])
	c.lagging = 0
	p := c.peer()
	c.checkOverflow()
	if p != nil {
		p.checkOverflow()
	}
	l.mu.Unlock()
	return true
}

// checkOverflow kills a QP whose CQ overflowed. Caller holds link.mu.
func (c *fabConn) checkOverflow() {
	if c.cqOverflow && (c.state == stConnected || c.state == stIdle) {
		c.l.teardown(c, &verbs.AsyncEventError{Event: verbs.EventCQErr}, verbs.ErrDisconnected)
	}
}

// exec runs one send-queue WR against the peer. Caller holds link.mu.
func (c *fabConn) exec(e *sendEntry) {
	p := c.peer()
	if p == nil || p.state != stConnected {
		c.l.teardown(c, verbs.ErrDisconnected, verbs.ErrDisconnected)
		return
	}
	switch e.op {
	case verbs.OpSend, verbs.OpSendWithInv:
		c.execSend(e, p)
	case verbs.OpRDMAWrite:
		c.execWrite(e, p)
	case verbs.OpRDMARead:
		c.execRead(e, p)
	case verbs.OpBindMW:
		c.execBind(e)
	case verbs.OpLocalInv:
		c.execLocalInv(e)
	}
}

// finishSend retires e, the send-queue entry just executed (the head,
// unless executed WRs wait for their acknowledgement before it). Under
// FaultPlan.SendAckLag a success waits for its acknowledgement: a Send's
// comes the lag later, any other WR's with the one before it (also once
// the plan is gone, while WRs executed under it still wait). An error
// completes at once, after the WRs before it, which are flushed (the
// queue pair is going to the error state).
func (c *fabConn) finishSend(e *sendEntry, status verbs.WCStatus, byteLen uint32) {
	if status == verbs.WCSuccess && (c.lagging > 0 || len(c.acks) > 0) {
		due := time.Now()
		if c.lagging > 0 && (e.op == verbs.OpSend || e.op == verbs.OpSendWithInv) {
			due = due.Add(c.lagging)
		}
		if n := len(c.acks); n > 0 && c.acks[n-1].due.After(due) {
			due = c.acks[n-1].due
		}
		c.acks = append(c.acks, pendingAck{due: due, byteLen: byteLen})
		return
	}
	for range c.acks {
		c.retireHead(verbs.WCWRFlushErr, 0)
	}
	c.acks = c.acks[:0]
	c.retireHead(status, byteLen)
}

// retireAcked completes the WRs whose acknowledgement is due by now.
func (c *fabConn) retireAcked(now time.Time) {
	n := 0
	for n < len(c.acks) && !c.acks[n].due.After(now) {
		c.retireHead(verbs.WCSuccess, c.acks[n].byteLen)
		n++
	}
	if n > 0 {
		c.acks = c.acks[:copy(c.acks, c.acks[n:])]
		c.checkOverflow()
	}
}

// retireHead retires the head send-queue entry with a completion: always
// for errors, for success only when signaled. A signaled success also
// frees the slots of the unsignaled WRs before it.
func (c *fabConn) retireHead(status verbs.WCStatus, byteLen uint32) {
	e := &c.sq[c.sqHead]
	if status != verbs.WCSuccess || e.signaled {
		c.pushCQE(verbs.Completion{WRID: e.id, Status: status, Opcode: sendWCOpcode(e.op), ByteLen: byteLen})
	}
	switch {
	case status != verbs.WCSuccess:
		c.sqUsed--
	case e.signaled:
		c.sqUsed -= 1 + c.unsignaledRetire
		c.unsignaledRetire = 0
	default:
		c.unsignaledRetire++
	}
	c.sqHead = (c.sqHead + 1) % len(c.sq)
	c.sqLen--
	c.fab.postedSends.Add(-1)
}

// fail completes e in error, kills this QP with that error and the peer
// with peerErr.
func (c *fabConn) fail(e *sendEntry, status verbs.WCStatus, peerErr error) {
	id := e.id
	c.finishSend(e, status, 0)
	c.l.teardown(c, &verbs.WCError{Status: status, WRID: id}, peerErr)
}

// gatherLen checks a local SGL and returns its total length.
func (c *fabConn) gatherLen(sgl []verbs.SGE, write bool) (uint32, bool) {
	var n uint64
	for _, s := range sgl {
		if _, ok := c.localSeg(s, write); !ok {
			return 0, false
		}
		n += uint64(s.Length)
	}
	if n > 1<<31 {
		return 0, false
	}
	return uint32(n), true
}

// remoteSeg resolves an RDMA Read/Write target at the responder p.
func (c *fabConn) remoteSeg(p *fabConn, e *sendEntry, n uint32, need verbs.Access) ([]byte, bool) {
	rkey := e.rkey
	if c.fab.takeCorrupt() {
		rkey ^= 0xff // turns the key into an lkey-shaped value: never a valid rkey
	}
	return p.remoteBytes(rkey, e.raddr, n, need)
}

// execSend: IBV_WR_SEND / IBV_WR_SEND_WITH_INV consume the peer's next
// Receive.
func (c *fabConn) execSend(e *sendEntry, p *fabConn) {
	total, ok := c.gatherLen(e.sgl, false)
	if !ok {
		c.fail(e, verbs.WCLocProtErr, verbs.ErrDisconnected)
		return
	}
	if c.fab.plan.Load().loseSend() {
		// FaultPlan.LoseSends: the sender's NIC saw it go; the peer
		// never does.
		c.finishSend(e, verbs.WCSuccess, 0)
		return
	}
	if p.rqLen == 0 {
		// Receiver not ready and rnr_retry_count 0: the requester
		// gives up at once.
		c.fail(e, verbs.WCRNRRetryExcErr, verbs.ErrDisconnected)
		return
	}
	r := &p.rq[p.rqHead]
	p.rqHead = (p.rqHead + 1) % len(p.rq)
	p.rqLen--
	p.fab.postedRecvs.Add(-1)
	recvFail := func(status verbs.WCStatus, senderStatus verbs.WCStatus) {
		p.pushCQE(verbs.Completion{WRID: r.id, Status: status, Opcode: verbs.WCRecv, Recv: true})
		peerErr := &verbs.WCError{Status: status, WRID: r.id, Recv: true}
		c.fail(e, senderStatus, peerErr)
	}
	room, ok := p.gatherLen(r.sgl, true)
	if !ok {
		recvFail(verbs.WCLocProtErr, verbs.WCRemOpErr)
		return
	}
	if total > room {
		recvFail(verbs.WCLocLenErr, verbs.WCRemInvReqErr)
		return
	}
	var inv *fabMR
	var invWin *fabWindow
	if e.op == verbs.OpSendWithInv {
		if inv = p.mrByKey(e.invRKey, true); inv == nil {
			if invWin = p.windowByKey(e.invRKey); invWin == nil {
				recvFail(verbs.WCLocAccessErr, verbs.WCRemInvReqErr)
				return
			}
		}
	}
	// Copy the gather list into the scatter list.
	di, doff := 0, 0
	for _, s := range e.sgl {
		src, _ := c.localSeg(s, false)
		for len(src) > 0 {
			dst, _ := p.localSeg(r.sgl[di], true)
			n := copy(dst[doff:], src)
			src = src[n:]
			doff += n
			if doff == len(dst) {
				di, doff = di+1, 0
			}
		}
	}
	c.fab.movedSend.Add(int64(total))
	wc := verbs.Completion{WRID: r.id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, Recv: true, ByteLen: total}
	if inv != nil {
		inv.invalidated = true
	}
	if invWin != nil {
		p.unbind(invWin)
	}
	if inv != nil || invWin != nil {
		wc.Invalidated, wc.InvalidatedRKey = true, e.invRKey
	}
	p.pushCQE(wc)
	c.finishSend(e, verbs.WCSuccess, 0)
}

// execWrite: IBV_WR_RDMA_WRITE places the gather list at RemoteAddr.
func (c *fabConn) execWrite(e *sendEntry, p *fabConn) {
	total, dst, ok := c.rdmaTarget(e, p, false)
	if !ok {
		return
	}
	for _, s := range e.sgl {
		src, _ := c.localSeg(s, false)
		dst = dst[copy(dst, src):]
	}
	c.fab.movedWrite.Add(int64(total))
	c.finishSend(e, verbs.WCSuccess, 0)
}

// execRead: IBV_WR_RDMA_READ scatters the bytes at RemoteAddr into the SGL.
func (c *fabConn) execRead(e *sendEntry, p *fabConn) {
	total, src, ok := c.rdmaTarget(e, p, true)
	if !ok {
		return
	}
	for _, s := range e.sgl {
		dst, _ := c.localSeg(s, true)
		src = src[copy(dst, src):]
	}
	c.fab.movedRead.Add(int64(total))
	c.finishSend(e, verbs.WCSuccess, total)
}

// rdmaTarget checks the local SGL of an RDMA Write (read false) or Read
// and the range of p's memory its rkey names, and returns the SGL's total
// length and that range. When a check fails it fails e and tears the
// connection down (fail) and ok is false: a local SGE out of bounds or
// without the access is WCLocProtErr (the peer sees a disconnect), a
// remote range the rkey does not allow WCRemAccessErr (the peer sees a QP
// access error event).
func (c *fabConn) rdmaTarget(e *sendEntry, p *fabConn, read bool) (total uint32, remote []byte, ok bool) {
	need := verbs.AccessRemoteWrite
	if read {
		need = verbs.AccessRemoteRead
	}
	total, ok = c.gatherLen(e.sgl, read)
	if !ok {
		c.fail(e, verbs.WCLocProtErr, verbs.ErrDisconnected)
		return 0, nil, false
	}
	remote, ok = c.remoteSeg(p, e, total, need)
	if !ok {
		c.fail(e, verbs.WCRemAccessErr, &verbs.AsyncEventError{Event: verbs.EventQPAccessErr})
		return 0, nil, false
	}
	return total, remote, true
}
