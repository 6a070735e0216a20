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
	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// echoHeaderLen is the size of an RDMA_MSG reply header that echoes the
// call's Write list and carries no Reply chunk.
func echoHeaderLen(h *Header) int {
	n := fixedHeaderSize + 4 + 4 + 4 // empty read list, write list end, no reply chunk
	for _, c := range h.WriteList {
		n += 8 + segmentSize*len(c)
	}
	return n
}

// appendEcho appends the Write list with segment lengths cut to what was
// written into chunk 0 (used) and zero for every other segment.
func appendEcho(b []byte, h *Header, used []uint32) []byte {
	for i, c := range h.WriteList {
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint32(b, uint32(len(c)))
		for j, seg := range c {
			seg.Length = 0
			if i == 0 && j < len(used) {
				seg.Length = used[j]
			}
			b = AppendSegment(b, seg)
		}
	}
	return xdr.AppendUint32(b, 0)
}

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
			c.sendError(s, h.XID, ErrChunk)
			return
		}
		inline := len(r.Head) + len(r.Tail)
		if echoHeaderLen(h)+inline > c.sendMax {
			c.log.Info("reply around the Write chunk does not fit inline", zap.Uint32("xid", h.XID), zap.Int("len", inline))
			c.sendError(s, h.XID, ErrChunk)
			return
		}
		m, off, ok := c.registered(s, r.Payload)
		if !ok {
			c.sendError(s, h.XID, ErrChunk)
			return
		}
		s.wrs, s.sges, s.used = appendWrites(s.wrs, s.sges, s.used, m, off, n, h.WriteList[0], sendWRID(wrWrite, s.idx))
		b = AppendFixed(b, h.XID, c.credits, ProcMsg)
		b = xdr.AppendUint32(b, 0)
		b = appendEcho(b, h, s.used)
		b = xdr.AppendUint32(b, 0)
		b = append(b, r.Head...)
		b = append(b, r.Tail...)
		copied = inline
	case echoHeaderLen(h)+r.Len() <= c.sendMax:
		// Inline: pull everything up into the Send buffer.
		b = AppendFixed(b, h.XID, c.credits, ProcMsg)
		b = xdr.AppendUint32(b, 0)
		b = appendEcho(b, h, nil)
		b = xdr.AppendUint32(b, 0)
		b = r.AppendFlat(b)
		copied = r.Len()
	case h.HasReply && h.ReplyChunk.Len() >= r.Len():
		// The whole reply goes into the Reply chunk; RDMA_NOMSG with an
		// empty Write list says where.
		m, err := s.borrow()
		if err != nil { // the connection died
			c.failure.dropped.Add(1)
			c.release(s)
			return
		}
		flat := r.AppendFlat(m.Bytes()[:0])
		copied = len(flat)
		s.wrs, s.sges, s.used = appendWrites(s.wrs, s.sges, s.used, m, 0, len(flat), h.ReplyChunk, sendWRID(wrWrite, s.idx))
		b = AppendFixed(b, h.XID, c.credits, ProcNoMsg)
		b = xdr.AppendUint32(b, 0)
		b = xdr.AppendUint32(b, 0)
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint32(b, uint32(len(h.ReplyChunk)))
		for j, seg := range h.ReplyChunk {
			seg.Length = s.used[j]
			b = AppendSegment(b, seg)
		}
	default:
		c.log.Info("reply too large for inline and offered chunks", zap.Uint32("xid", h.XID), zap.Int("len", r.Len()),
			zap.Bool("reply_chunk", h.HasReply), zap.Int("reply_chunk_len", h.ReplyChunk.Len()))
		c.sendError(s, h.XID, ErrChunk)
		return
	}
	if len(b) > c.sendMax || len(b) > 0 && &b[0] != &s.send[0] {
		// Cannot happen: every branch checked the size first.
		c.log.Error("reply overflowed the send buffer", zap.Uint32("xid", h.XID), zap.Int("len", len(b)))
		c.sendError(s, h.XID, ErrChunk)
		return
	}
	c.srv.copied.Add(int64(copied))
	op := verbs.OpSend
	var inv uint32
	if c.remoteInv {
		if k, ok := singleRKey(h); ok {
			op, inv = verbs.OpSendWithInv, k
		}
	}
	c.postReply(s, len(b), op, inv)
}

// registered finds payload inside one of the slot's registered buffers,
// or stages it into one (a copy, counted).
func (c *conn) registered(s *slot, p []byte) (*verbs.MR, int, bool) {
	for i := 0; i < s.nbig; i++ {
		if off, ok := offsetIn(s.bigs[i], p); ok {
			return s.bigs[i], off, true
		}
	}
	if len(p) > c.srv.bigSize {
		return nil, 0, false
	}
	m, err := s.borrow()
	if err != nil {
		return nil, 0, false
	}
	copy(m.Bytes(), p)
	c.srv.copied.Add(int64(len(p)))
	return m, 0, true
}

// sendError answers with RDMA_ERROR (and the usual credit grant).
func (c *conn) sendError(s *slot, xid uint32, code ErrCode) {
	s.wrs, s.sges = s.wrs[:0], s.sges[:0]
	b := AppendError(s.send[:0], xid, c.credits, code)
	c.postReply(s, len(b), verbs.OpSend, 0)
}

// postReply appends the Send of the first n bytes of the slot's Send
// buffer to the chain built so far and posts it. The Send's completion
// releases the slot.
func (c *conn) postReply(s *slot, n int, op verbs.WROpcode, inv uint32) {
	s.sges = append(s.sges, c.sendMR.SGE(s.sendOff, n))
	s.wrs = append(s.wrs, verbs.SendWR{
		ID: sendWRID(wrSend, s.idx), Opcode: op, SGL: s.sges[len(s.sges)-1:],
		Signaled: true, InvalidateRKey: inv,
	})
	// A call run on the completion goroutine reserved its one Send
	// beforehand (runsInline); others wait for room here.
	if k := len(s.wrs); k > s.sqHeld {
		if !c.sq.acquire(k - s.sqHeld) { // the connection died
			c.failure.dropped.Add(1)
			c.release(s)
			return
		}
		s.sqHeld = k
	}
	if err := c.postSend(s.wrs); err != nil {
		if err != errDead && c.vc.Err() == nil {
			c.log.Info("cannot post reply", zap.Error(err))
		}
		c.failure.dropped.Add(1)
		c.release(s)
	}
}
