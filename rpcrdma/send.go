// send.go: the reply side: choosing how a reply travels (inline, payload
// in the Write chunk, whole reply in the Reply chunk, or RDMA_ERROR),
// encoding the reply transport header and posting the Writes and the
// final Send as one chain.
//
// Buffer ownership: the transport header and inline RPC reply are built
// directly in the slot's registered Send buffer (small replies are pulled
// up into it). RDMA Writes are posted from registered memory: the READ
// payload buffer the handler filled (borrowed from the pool by
// AllocPayload) or a pool buffer the reply was staged in. The provider
// owns these from PostSend until the Send's completion, which releases the
// slot and everything it borrowed.

package rpcrdma

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// sendReply sends the reply the dispatcher left in s.reply.
func (c *conn) sendReply(s *slot) {
	h := &s.hdr
	r := &s.reply
	s.wrs, s.sges, s.used = s.wrs[:0], s.sges[:0], s.used[:0]
	b := s.send[:0]
	var copied int
	switch {
	case len(h.WriteList) > 0 && r.Payload != nil:
		// Direct placement: the payload goes into the first Write
		// chunk, the rest (without the pad) goes inline.
		n := len(r.Payload)
		if n > h.WriteList[0].Len() {
			c.log.Info("reply payload larger than the Write chunk", zap.Uint32("xid", h.XID), zap.Int("payload", n), zap.Int("chunk", h.WriteList[0].Len()))
			c.sendError(s, h.XID, proto.ErrChunk)
			return
		}
		inline := len(r.Head) + len(r.Tail)
		if proto.ReplyMsgLen(h.WriteList)+inline > c.sendMax {
			c.log.Info("reply around the Write chunk does not fit inline", zap.Uint32("xid", h.XID), zap.Int("len", inline))
			c.sendError(s, h.XID, proto.ErrChunk)
			return
		}
		m, off, err := c.registered(s, r.Payload)
		if err != nil {
			c.shortage(s, "staging the READ payload", err)
			return
		}
		s.wrs, s.sges, s.used = appendWrites(s.wrs, s.sges, s.used, m, off, n, c.writePiece, h.WriteList[0], wr.ID(wr.Write, s.idx))
		c.srv.counters.rdmaWrite.Add(uint64(n))
		b = proto.AppendReplyMsg(b, h.XID, c.grant(), h.WriteList, s.used)
		b = append(b, r.Head...)
		b = append(b, r.Tail...)
		copied = inline
	case proto.ReplyMsgLen(h.WriteList)+r.Len() <= c.sendMax:
		// Inline: pull everything up into the Send buffer.
		b = proto.AppendReplyMsg(b, h.XID, c.grant(), h.WriteList, nil)
		b = r.AppendFlat(b)
		copied = r.Len()
	case h.HasReply && h.ReplyChunk.Len() >= r.Len():
		// The whole reply goes into the Reply chunk; RDMA_NOMSG with an
		// empty Write list says where.
		m, err := s.borrow()
		if err != nil {
			c.shortage(s, "staging the reply for the Reply chunk", err)
			return
		}
		flat := r.AppendFlat(m.Bytes()[:0])
		copied = len(flat)
		s.wrs, s.sges, s.used = appendWrites(s.wrs, s.sges, s.used, m, 0, len(flat), c.writePiece, h.ReplyChunk, wr.ID(wr.Write, s.idx))
		c.srv.counters.rdmaWrite.Add(uint64(len(flat)))
		c.srv.counters.replyChunkReplies.Add(1)
		b = proto.AppendReplyNoMsg(b, h.XID, c.grant(), h.ReplyChunk, s.used)
	default:
		c.log.Info("reply too large for inline and offered chunks", zap.Uint32("xid", h.XID), zap.Int("len", r.Len()),
			zap.Bool("reply_chunk", h.HasReply), zap.Int("reply_chunk_len", h.ReplyChunk.Len()))
		c.sendError(s, h.XID, proto.ErrChunk)
		return
	}
	if len(b) > c.sendMax || len(b) > 0 && &b[0] != &s.send[0] {
		// Cannot happen: every branch checked the size first.
		c.log.Error("reply overflowed the send buffer", zap.Uint32("xid", h.XID), zap.Int("len", len(b)))
		c.sendError(s, h.XID, proto.ErrChunk)
		return
	}
	c.counts.copied.Add(int64(copied))
	op := verbs.OpSend
	var inv uint32
	if c.remoteInv {
		if k, ok := proto.SingleRKey(h); ok {
			op, inv = verbs.OpSendWithInv, k
		}
	}
	c.postReply(s, len(b), op, inv)
}

// registered finds payload inside one of the slot's registered buffers,
// or stages it into one (a copy, counted). It fails only for want of a
// buffer (the payload fits a pool buffer: it fits the Write chunk, which
// Validate bounds by MaxPayload).
func (c *conn) registered(s *slot, p []byte) (*verbs.MR, int, error) {
	for i := 0; i < s.nbig; i++ {
		if off, ok := offsetIn(s.bigs[i], p); ok {
			return s.bigs[i], off, nil
		}
	}
	if len(p) > c.srv.bigSize {
		return nil, 0, fmt.Errorf("rpcrdma: payload of %d bytes exceeds the pool buffers' %d", len(p), c.srv.bigSize)
	}
	m, err := s.borrow()
	if err != nil {
		return nil, 0, err
	}
	copy(m.Bytes(), p)
	c.counts.copied.Add(int64(len(p)))
	return m, 0, nil
}

// shortage handles a call the server cannot carry on with for want of its
// own resources (a registered buffer it cannot get). That is no fault of
// the client's chunk lists, so it is not ERR_CHUNK (rpcrdma_errcode, RFC
// 8166 section 4.2.4), which reports a problem with the call's chunks that
// resending the same call cannot fix (the Linux client fails the RPC
// without retransmitting). As knfsd's svc_rdma_sendto does for send errors
// other than a reply too large for its chunks, the server logs and drops
// the connection: the client reconnects and retransmits the calls it has
// in flight, and the duplicate request cache answers those that already
// ran. The one WARN the connection's end logs names the shortage. When
// the connection is already gone there is nothing to say.
func (c *conn) shortage(s *slot, what string, err error) {
	if !errors.Is(err, errDead) && !c.isDead() {
		// Logged once, with the connection's end (failure.go).
		c.failure.record(fmt.Errorf("no buffer for call xid %#x: %w", s.hdr.XID, err), "buffer for "+what)
		c.srv.shortages.Add(1)
		c.disconnect("no buffer for a call")
	}
	c.failure.dropped.Add(1)
	c.release(s)
}

// sendError answers with RDMA_ERROR (and the usual credit grant).
func (c *conn) sendError(s *slot, xid uint32, code proto.ErrCode) {
	s.wrs, s.sges = s.wrs[:0], s.sges[:0]
	b := proto.AppendError(s.send[:0], xid, c.grant(), code)
	c.postReply(s, len(b), verbs.OpSend, 0)
}

// postReply appends the Send of the first n bytes of the slot's Send
// buffer to the chain built so far and posts it. The Send's completion
// releases the slot.
func (c *conn) postReply(s *slot, n int, op verbs.WROpcode, inv uint32) {
	s.sges = append(s.sges, c.sendMR.SGE(s.sendOff, n))
	s.wrs = append(s.wrs, verbs.SendWR{
		ID: wr.ID(wr.Send, s.idx), Opcode: op, SGL: s.sges[len(s.sges)-1:],
		Signaled: true, InvalidateRKey: inv,
	})
	// A call run on the completion goroutine reserved its one Send
	// beforehand (runsInline); others wait for room here.
	if k := len(s.wrs); k > s.sqHeld {
		s.setWait(waitSQ)
		if !c.sq.acquire(k - s.sqHeld) { // the connection died
			c.failure.dropped.Add(1)
			c.release(s)
			return
		}
		s.sqHeld = k
	}
	s.setWait(waitSend)
	s.replied = true // before the post: its completion may release s at once
	c.replied.Add(1)
	c.big.replying(s.nbig)
	if err := c.postSend(s.wrs); err != nil {
		if err != errDead && c.vc.Err() == nil {
			c.log.Info("cannot post reply", zap.Error(err))
		}
		c.failure.dropped.Add(1)
		c.release(s)
		return
	}
	c.counts.inlineOut.Add(uint64(n))
}
