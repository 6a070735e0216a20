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

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
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

	hdr   Header
	cc    CallChunks
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
	m, err := s.c.big.get()
	if err != nil {
		return nil, err
	}
	s.bigs[s.nbig] = m
	s.nbig++
	return m, nil
}

// releaseBuffers gives the borrowed buffers back.
func (s *slot) releaseBuffers() {
	for i := 0; i < s.nbig; i++ {
		s.c.big.put(s.bigs[i])
		s.bigs[i] = nil
	}
	s.nbig = 0
	s.call = oncrpc.Call{}
	s.msg = nil
	s.reply.Payload = nil
}

// serveCall runs one received call to its reply.
func (c *conn) serveCall(s *slot) {
	lim := c.srv.cfg
	s.rd.Reset(s.recv[:s.recvLen])
	if err := s.hdr.Decode(&s.rd, lim.Limits); err != nil {
		var he *HeaderError
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
	if s.hdr.Proc == ProcDone {
		c.release(s)
		return
	}
	var inline []byte
	if s.hdr.Proc == ProcMsg {
		inline = s.rd.Rest()
	}
	climits := ChunkLimits{MaxRecord: lim.MaxRecord, MaxWriteChunkLen: lim.MaxPayload, MaxReplyChunkLen: lim.MaxRecord}
	if err := Validate(&s.hdr, len(inline), climits, &s.cc); err != nil {
		c.log.Info("bad chunk list", zap.Uint32("xid", s.hdr.XID), zap.Error(err))
		c.sendError(s, s.hdr.XID, ErrChunk)
		return
	}
	msg := inline
	if len(s.cc.Reads) > 0 {
		var err error
		if msg, err = c.pullReads(s, inline); err != nil {
			// The Reads failed or were flushed: the connection is
			// dead (its first error is logged once, at teardown) or
			// no buffer could be had; no reply either way, the
			// client retransmits.
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
	if !c.srv.disp.Dispatch(c.ctx, s, &s.call, &s.reply) {
		c.release(s)
		return
	}
	c.sendReply(s)
}

// pullReads assembles the whole RPC call in a registered buffer: the
// inline bytes before each chunk's position, the chunk data RDMA-Read
// straight into place, its XDR pad, and the inline bytes after it (the
// client leaves the pad out of the inline part). A position-zero chunk is
// the whole call. All Reads complete before it returns.
func (c *conn) pullReads(s *slot, inline []byte) ([]byte, error) {
	m, err := s.borrow()
	if err != nil {
		return nil, err
	}
	buf := m.Bytes()
	s.wrs, s.sges = s.wrs[:0], s.sges[:0]
	off, prev := 0, 0
	copied := 0
	for _, ch := range s.cc.Reads {
		pos := int(ch.Position)
		off += copy(buf[off:], inline[prev:pos])
		copied += pos - prev
		prev = pos
		for _, seg := range ch.Segs {
			s.sges = append(s.sges, m.SGE(off, int(seg.Length)))
			s.wrs = append(s.wrs, verbs.SendWR{
				ID: sendWRID(wrReadChain, s.idx), Opcode: verbs.OpRDMARead, SGL: s.sges[len(s.sges)-1:],
				RemoteAddr: seg.Offset, RKey: seg.Handle,
			})
			off += int(seg.Length)
		}
		if !s.hdr.isNoMsg() {
			for p := padLen(ch.Len); p > 0; p-- {
				buf[off] = 0
				off++
			}
		}
	}
	off += copy(buf[off:], inline[prev:])
	copied += len(inline) - prev
	c.srv.copied.Add(int64(copied))
	last := &s.wrs[len(s.wrs)-1]
	last.ID, last.Signaled = sendWRID(wrRead, s.idx), true
	select {
	case <-s.readDone: // stale
	default:
	}
	k := len(s.wrs)
	if !c.sq.acquire(k) {
		return nil, errDead
	}
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
	case <-c.deadCh:
		return nil, errDead
	}
	return buf[:off], nil
}

func (h *Header) isNoMsg() bool { return h.Proc == ProcNoMsg }

// maxReply is the largest RPC reply this call can receive: inline, or
// inline plus the first Write chunk's payload, or the Reply chunk.
func (c *conn) maxReply(h *Header) int {
	room := c.sendMax - echoHeaderLen(h)
	switch {
	case len(h.WriteList) > 0:
		return room + h.WriteList[0].Len()
	case h.HasReply && h.ReplyChunk.Len() > room:
		return h.ReplyChunk.Len()
	}
	return room
}
