// recv.go: the receive side of a call: transport header decoding and
// validation, pulling Read chunks by RDMA Read, assembling the RPC call
// and dispatching it.
//
// Buffer ownership: a slot is one call in progress. Its Receive buffer
// (a slice of conn.recvMR) holds the call as received from the Receive
// completion until the slot is released; a call with Read chunks is
// assembled in a bigPool buffer borrowed by the slot. Either one backs
// oncrpc.Call.Args (so WRITE data reaches the handler as a slice of
// registered memory) and stays untouched until the reply's Send has
// completed. Payload buffers the handler gets from AllocPayload are
// borrowed the same way. All borrowed buffers go back to the pool when
// the slot is released.

package rpcrdma

import (
	"errors"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// serveCall runs one received call to its reply.
func (c *conn) serveCall(s *slot) {
	lim := c.srv.cfg
	s.rd.Reset(s.recv[:s.recvLen])
	if err := s.hdr.Decode(&s.rd, lim.Limits); err != nil {
		var he *proto.HeaderError
		errors.As(err, &he)
		if he == nil || !he.XIDValid {
			c.log.Info("dropping runt transport header", zap.Int("len", s.recvLen))
			c.release(s)
			return
		}
		c.log.Info("bad transport header", zap.Uint32("xid", he.XID), zap.Stringer("reply", he.Code), zap.Error(err))
		c.sendError(s, he.XID, he.Code)
		return
	}
	s.xid.Store(s.hdr.XID)
	if s.hdr.Proc == proto.ProcDone {
		c.release(s)
		return
	}
	var inline []byte
	if s.hdr.Proc == proto.ProcMsg {
		inline = s.rd.Rest()
	}
	climits := proto.ChunkLimits{MaxRecord: lim.MaxRecord, MaxWriteChunkLen: lim.MaxPayload, MaxReplyChunkLen: lim.MaxRecord}
	if err := proto.Validate(&s.hdr, len(inline), climits, &s.cc); err != nil {
		c.log.Info("bad chunk list", zap.Uint32("xid", s.hdr.XID), zap.Error(err))
		c.sendError(s, s.hdr.XID, proto.ErrChunk)
		return
	}
	if k := &c.srv.counters; len(s.cc.Reads)|len(s.hdr.WriteList) != 0 || s.hdr.HasReply {
		// Most calls carry no chunk: no atomic for them.
		k.readChunks.Add(uint64(len(s.cc.Reads)))
		k.writeChunks.Add(uint64(len(s.hdr.WriteList)))
		if s.hdr.HasReply {
			k.replyChunks.Add(1)
		}
	}
	msg := inline
	if len(s.cc.Reads) > 0 {
		var err error
		if msg, err = c.pullReads(s, inline); err != nil {
			// The Reads failed or were flushed: the connection is
			// dead (its first error is logged once, at teardown); no
			// reply, the client retransmits. A call that could not get
			// a buffer is a shortage (send.go).
			var short *shortageError
			if errors.As(err, &short) {
				c.shortage(s, "assembling the call around its Read chunks", short.err)
				return
			}
			var wce *verbs.WCError
			if !errors.As(err, &wce) && !errors.Is(err, errDead) && !c.isDead() {
				c.log.Info("cannot pull read chunks", zap.Uint32("xid", s.hdr.XID), zap.Error(err))
			}
			c.failure.dropped.Add(1)
			c.release(s)
			return
		}
	}
	s.msg = msg
	s.setWait(waitHandler)
	if !c.srv.disp.Dispatch(c.ctx, s, &s.call, &s.reply) {
		c.release(s)
		return
	}
	c.sendReply(s)
}

// readPieces is how many RDMA Reads of at most piece bytes pull total
// bytes. The server pulls a Read chunk segment longer than
// Config.ReadPiece with several Reads of at most that many bytes, each its
// own RDMA Read request, so that the Reads in flight on a connection (at
// most its initiator depth) carry at most depth × ReadPiece bytes. A
// device recovers a lost read response only by its ACK timeout (Soft-RoCE:
// rxe_comp.c check_psn drops every response after a gap; the retransmit
// timer then resends the Read from the gap on, and each response that
// arrives resets the retry count, so a lossy link makes the Read crawl,
// not fail). Between the two test guests, one 1 MiB Read per WRITE (four
// in flight: 4,096 response frames in a burst) lost a quarter of the
// frames and each loss cost the 2.1 s ACK timeout: 38 MiB in 228 s (issue
// 16). knfsd's Reads there are at most 32 pages (rdma_rw over rxe's
// max_sge_rd of 32), 128 KiB.
func readPieces(total, piece int) int { return (total + piece - 1) / piece }

// pullReads assembles the whole RPC call in a registered buffer: the
// inline bytes before each chunk's position, the chunk data RDMA-Read
// straight into place, its XDR pad, and the inline bytes after it (the
// client leaves the pad out of the inline part). A position-zero chunk is
// the whole call. All Reads complete before it returns.
func (c *conn) pullReads(s *slot, inline []byte) ([]byte, error) {
	// Wait for the read window first, holding no buffer: a burst of
	// large WRITEs (the kernel client sends one per credit) pulls a few
	// at a time, in arrival order, so the first are answered first and
	// the pool grows to what is pulled at once, not to the burst.
	var total int64
	for _, ch := range s.cc.Reads {
		total += int64(ch.Len)
	}
	need := min(total, c.readWindowSize)
	s.setWait(waitReadWindow)
	if err := c.readWindow.Acquire(c.ctx, need); err != nil {
		return nil, errDead
	}
	defer c.readWindow.Release(need)
	m, err := s.borrow()
	if err != nil {
		return nil, &shortageError{err}
	}
	buf := m.Bytes()
	s.wrs, s.sges = s.wrs[:0], s.sges[:0]
	off, prev := 0, 0
	copied, pulled := 0, 0
	for _, ch := range s.cc.Reads {
		pos := int(ch.Position)
		off += copy(buf[off:], inline[prev:pos])
		copied += pos - prev
		prev = pos
		for _, seg := range ch.Segs {
			// One RDMA Read per readPiece bytes at most (readPieces).
			for done := 0; done < int(seg.Length); {
				n := min(int(seg.Length)-done, c.readPiece)
				s.sges = append(s.sges, m.SGE(off, n))
				s.wrs = append(s.wrs, verbs.SendWR{
					ID: wr.ID(wr.ReadChain, s.idx), Opcode: verbs.OpRDMARead, SGL: s.sges[len(s.sges)-1:],
					RemoteAddr: seg.Offset + uint64(done), RKey: seg.Handle,
				})
				off += n
				done += n
			}
			pulled += int(seg.Length)
		}
		if s.hdr.Proc != proto.ProcNoMsg {
			off += copy(buf[off:], xdr.Padding(ch.Len))
		}
	}
	off += copy(buf[off:], inline[prev:])
	copied += len(inline) - prev
	c.counts.copied.Add(int64(copied))
	last := &s.wrs[len(s.wrs)-1]
	last.ID, last.Signaled = wr.ID(wr.Read, s.idx), true
	select {
	case <-s.readDone: // stale
	default:
	}
	k := len(s.wrs)
	s.setWait(waitSQ)
	if !c.sq.acquire(k) {
		return nil, errDead
	}
	s.setWait(waitRead)
	c.vc.WatchSend() // the Read's completion is on the send queue
	defer c.vc.UnwatchSend()
	if err := c.postSend(s.wrs); err != nil {
		c.sq.release(k)
		return nil, err
	}
	select {
	case st := <-s.readDone:
		c.sq.release(k)
		if st != verbs.WCSuccess {
			return nil, &verbs.WCError{Status: st}
		}
		c.srv.counters.rdmaRead.Add(uint64(pulled))
	case <-c.deadCh:
		return nil, errDead
	}
	return buf[:off], nil
}

// shortageError is a call the server could not get a buffer for.
type shortageError struct{ err error }

func (e *shortageError) Error() string { return "rpcrdma: no buffer for the call: " + e.err.Error() }

// maxReply is the largest RPC reply this call can receive: inline, or
// inline plus the first Write chunk's payload, or the Reply chunk.
func (c *conn) maxReply(h *proto.Header) int {
	room := c.sendMax - proto.ReplyMsgLen(h.WriteList)
	switch {
	case len(h.WriteList) > 0:
		return room + h.WriteList[0].Len()
	case h.HasReply && h.ReplyChunk.Len() > room:
		return h.ReplyChunk.Len()
	}
	return room
}
