// client.go: the client transport (oncrpc.Caller over RPC-over-RDMA),
// marshaling calls the way the Linux client's rpcrdma_marshal_req does,
// plus raw access for conformance tests.
//
// Buffer ownership: the client registers one Receive buffer and one Send
// buffer per credit (recvMR, sendMR) and, lazily per call slot, an "out"
// region the server RDMA-Reads Read chunks from and an "in" region it
// RDMA-Writes Write and Reply chunks into. The regions carry no remote
// access of their own: a call exposes the part it advertises through a
// memory window bound for that call only, with a fresh rkey, and
// invalidated (by the server's Send-With-Invalidate or by a local
// invalidate whose completion is awaited) before the reply is decoded and
// before the slot is reused (client_keys.go). A slot belongs to one Call
// from credit acquisition until the reply has been consumed, the Send has
// completed and its windows are invalidated. A Receive buffer belongs to
// the provider while posted, to the Call that the reply matched while it
// is decoded, and is re-posted right after. Results are copied out, so
// callers own what Call returns. Every region and window is released by
// Close after the queue pair is closed and no Call is still running.

package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Config configures Dial. Zero fields take defaults.
type Config struct {
	// Credits is the most calls in flight and the Receives kept posted
	// (default 64). The server's grant lowers it further.
	Credits int
	// InlineSend and InlineRecv are offered in the private data
	// (default 4096 each).
	InlineSend, InlineRecv int
	// MaxRecord sizes the chunk regions: the largest WRITE payload or
	// NOMSG call, READ payload and Reply chunk (default 1 MiB + 64 KiB).
	MaxRecord int
	// MaxPayload caps the Write chunk offered for a READ payload, as the
	// Linux client's rsize does (default 1 MiB).
	MaxPayload int
	// RemoteInvalidate offers Send-With-Invalidate (RFC 8797 section 4.3):
	// a server that uses it invalidates the call's window with its reply,
	// which saves the local invalidate.
	RemoteInvalidate bool
	// Cred is the default credential (AUTH_NONE when zero).
	Cred oncrpc.OpaqueAuth
	// LocalAddr binds the source address ("host:port"); empty: any.
	LocalAddr string
	// Logger gets the connection's one-time notes (nil: none).
	Logger *zap.Logger
	// IgnoreGrant makes the client keep up to Credits calls in flight
	// whatever the server grants: a misbehaving client, for tests and
	// conformance runs of how a server copes with one (RFC 8166 section
	// 3.3.1 forbids it).
	IgnoreGrant bool
}

// RDMAError is an RDMA_ERROR reply.
type RDMAError struct {
	Code      proto.ErrCode
	Low, High uint32 // ERR_VERS range
}

func (e *RDMAError) Error() string {
	if e.Code == proto.ErrVers {
		return fmt.Sprintf("rpcrdma: server replied ERR_VERS (versions %d-%d)", e.Low, e.High)
	}
	return "rpcrdma: server replied " + e.Code.String()
}

// ErrClosed is returned for calls on a closed client or a lost connection.
var ErrClosed = errors.New("rpcrdma: client connection closed")

// errDead is a post on a connection whose queue pair is gone.
var errDead = errors.New("rpcrdma: client connection is gone")

// Client is an RPC-over-RDMA client connection. It implements
// oncrpc.Caller; calls may be issued concurrently.
type Client struct {
	vc      verbs.Conn
	cfg     Config
	sendMax int // min(our InlineSend, server's receive size)
	recvMax int

	recvMR, sendMR *verbs.MR
	recvWRs        []verbs.RecvWR // one per Receive buffer, for re-posting
	recvSGEs       []verbs.SGE
	slots          []*cslot
	free           chan *cslot
	credits        *clientCredits
	xid            atomic.Uint32

	mu      sync.Mutex
	pending map[uint32]*cslot
	closed  bool
	active  sync.WaitGroup

	postMu sync.Mutex
	dead   bool
	done   chan struct{}
	err    error

	closeOnce sync.Once

	stats clientCounters
	// windowless: calls expose chunks through per-call registrations
	// (probeWindows), set once before the first call.
	windowless bool
}

type cslot struct {
	idx       int
	send      []byte
	sendOff   int
	in, out   *verbs.MR
	keys      slotKeys
	hdr       proto.Header
	rd        xdr.Reader
	wr        [3]verbs.SendWR // up to two window binds, then the Send
	sge       [1]verbs.SGE
	sent      chan verbs.WCStatus
	reply     chan creply
	abandoned bool // guarded by Client.mu
	segs      []proto.Segment
	rsegs     []proto.ReadSegment
	wchunks   [1]proto.Chunk
	// wOffered is the length of the Write chunk the call offered (0:
	// none); a reply's Write chunk may not claim more (decodeReply).
	wOffered int
	buf      []byte // scratch for marshaling
}

type creply struct {
	idx, n      int
	invalidated bool
	invRKey     uint32 // the rkey a Send-With-Invalidate invalidated
	err         error
}

// Dial connects to an RPC-over-RDMA server at addr.
func Dial(ctx context.Context, provider verbs.Provider, addr string, cfg Config) (*Client, error) {
	if cfg.Credits <= 0 {
		cfg.Credits = proto.DefaultCredits
	}
	if cfg.InlineSend <= 0 {
		cfg.InlineSend = proto.DefaultInlineSize
	}
	if cfg.InlineRecv <= 0 {
		cfg.InlineRecv = proto.DefaultInlineSize
	}
	if cfg.MaxRecord <= 0 {
		cfg.MaxRecord = proto.DefaultMaxRecord
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = proto.DefaultMaxPayload
	}
	cfg.MaxPayload = min(cfg.MaxPayload, cfg.MaxRecord)
	c := &Client{
		cfg:     cfg,
		pending: make(map[uint32]*cslot),
		free:    make(chan *cslot, cfg.Credits),
		credits: newClientCredits(cfg.Credits),
		done:    make(chan struct{}),
	}
	if cfg.IgnoreGrant {
		c.credits = ignoringGrant(cfg.Credits)
	}
	c.xid.Store(uint32(time.Now().UnixNano()))
	n := cfg.Credits
	ourPriv := proto.PrivateData{RemoteInvalidate: cfg.RemoteInvalidate, SendSize: cfg.InlineSend, RecvSize: cfg.InlineRecv}
	priv := ourPriv.Append(nil)
	windowlessWhy := ""
	prepare := func(vc verbs.Conn) error {
		var err error
		// Decided before the request is sent: a windowless connection
		// does not offer Send-With-Invalidate, since a device invalidates
		// only windows and fast-registration regions remotely, not the
		// per-call registrations (rxe fails the server's Send).
		if windowlessWhy = probeWindows(vc); windowlessWhy != "" && ourPriv.RemoteInvalidate {
			ourPriv.RemoteInvalidate = false
			ourPriv.Append(priv[:0])
		}
		if c.recvMR, err = vc.Register(n*cfg.InlineRecv, verbs.AccessLocalWrite); err != nil {
			return err
		}
		c.recvWRs = make([]verbs.RecvWR, n)
		c.recvSGEs = make([]verbs.SGE, n)
		for i := range c.recvWRs {
			c.recvSGEs[i] = c.recvMR.SGE(i*cfg.InlineRecv, cfg.InlineRecv)
			c.recvWRs[i] = verbs.RecvWR{ID: wr.ID(wr.Recv, i), SGL: c.recvSGEs[i : i+1 : i+1]}
		}
		return vc.PostRecv(c.recvWRs)
	}
	vc, err := provider.Dial(ctx, addr, verbs.ConnParams{
		Config:      verbs.Config{MaxSendWR: 5*n + 8, MaxRecvWR: n, MaxSendSGE: 1, MaxRecvSGE: 1},
		PrivateData: priv, InitiatorDepth: 0, ResponderResources: 16,
		LocalAddr: cfg.LocalAddr,
		// As the Linux client (xprtrdma): transport retries 6, so a lost
		// packet (Soft-RoCE drops under load) is resent rather than fatal;
		// the CM REQ carries it to the server's queue pair too. RNR
		// retries 0: the server must always have a Receive posted.
		RetryCount: 6, RNRRetryCount: 0,
		Prepare: prepare,
	})
	if err != nil {
		if c.recvMR != nil {
			c.recvMR.Deregister()
		}
		return nil, err
	}
	c.vc = vc
	if why := windowlessWhy; why != "" {
		c.windowless = true
		log := cfg.Logger
		if log == nil {
			log = zap.NewNop()
		}
		log.Info("rpcrdma client: no usable memory windows, each call registers its chunks",
			zap.String("remote", addr), zap.String("reason", why))
	}
	spd, _ := proto.ParsePrivateData(vc.PeerPrivateData())
	c.sendMax = min(cfg.InlineSend, spd.RecvSize)
	c.recvMax = cfg.InlineRecv
	if c.sendMR, err = vc.Register(n*c.sendMax, verbs.AccessLocalWrite); err != nil {
		vc.Close()
		c.recvMR.Deregister()
		return nil, err
	}
	c.slots = make([]*cslot, n)
	for i := range c.slots {
		s := &cslot{
			idx: i, send: c.sendMR.Slice(i*c.sendMax, c.sendMax), sendOff: i * c.sendMax,
			sent: make(chan verbs.WCStatus, 1), reply: make(chan creply, 1),
		}
		s.keys.invDone = make(chan verbs.WCStatus, 1)
		c.slots[i] = s
		c.free <- s
	}
	go c.run()
	return c, nil
}

// ServerPrivateData returns the RFC 8797 private data of the server's
// connection reply and whether it carried any.
func (c *Client) ServerPrivateData() (proto.PrivateData, bool) {
	return proto.ParsePrivateData(c.vc.PeerPrivateData())
}

// SendMax is the negotiated inline send size (what one Send may carry).
func (c *Client) SendMax() int { return c.sendMax }

// Done is closed when the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is the reason the connection ended, once Done is closed.
func (c *Client) Err() error {
	<-c.done
	return c.err
}

func (c *Client) run() {
	err := wr.Poll(c.vc, c.complete)
	c.postMu.Lock()
	c.dead = true
	c.postMu.Unlock()
	c.mu.Lock()
	c.err = err
	for xid, s := range c.pending {
		delete(c.pending, xid)
		if s.abandoned {
			c.freeDeadSlot(s)
			continue
		}
		s.reply <- creply{err: fmt.Errorf("%w: %v", ErrClosed, err)}
	}
	c.mu.Unlock()
	c.credits.kill()
	close(c.done)
}

func (c *Client) complete(wc *verbs.Completion) {
	kind, i := wr.Split(wc.WRID)
	if i >= len(c.slots) {
		return
	}
	switch kind {
	case wr.Recv:
		if wc.Status != verbs.WCSuccess {
			return
		}
		buf := c.recvMR.Slice(i*c.recvMax, c.recvMax)
		xid, ok := proto.PeekXID(buf[:wc.ByteLen])
		if !ok {
			c.repost(i)
			return
		}
		c.mu.Lock()
		s := c.pending[xid]
		delete(c.pending, xid)
		abandoned := s != nil && s.abandoned
		c.mu.Unlock()
		switch {
		case s == nil:
			c.repost(i)
		case abandoned:
			c.repost(i)
			c.noteGrant(buf[:wc.ByteLen])
			c.noteRemoteInvalidate(s, wc.Invalidated, wc.InvalidatedRKey)
			c.releaseAbandoned(s)
		default:
			s.reply <- creply{idx: i, n: int(wc.ByteLen), invalidated: wc.Invalidated, invRKey: wc.InvalidatedRKey}
		}
	case wr.Send:
		select {
		case c.slots[i].sent <- wc.Status:
		default:
		}
	case wr.LocalInv:
		c.localInvDone(c.slots[i], wc.Status)
	}
}

func (c *Client) noteGrant(b []byte) {
	if grant, ok := proto.PeekCredits(b); ok {
		c.credits.update(grant)
	}
}

func (c *Client) repost(i int) {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	if !c.dead {
		c.vc.PostRecv(c.recvWRs[i : i+1 : i+1])
	}
}

func (c *Client) freeSlot(s *cslot) {
	c.free <- s
	c.credits.release()
}

// Close disconnects, fails the calls in progress, waits for them and
// frees every registered region.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.vc.Disconnect()
		<-c.done
		c.active.Wait()
		c.vc.Close()
		c.recvMR.Deregister()
		c.sendMR.Deregister()
		for _, s := range c.slots {
			// Windows and per-call registrations before the regions
			// they cover.
			c.freeKeys(&s.keys)
			if s.in != nil {
				s.in.Deregister()
			}
			if s.out != nil {
				s.out.Deregister()
			}
		}
	})
	return nil
}

// CallOpts override how a call offers chunks (conformance tests).
type CallOpts struct {
	// WriteChunk, when non-nil, are the segment lengths of the Write chunk
	// offered for the reply payload (instead of one segment of
	// ReplyPayloadMax bytes).
	WriteChunk []int
	// ReplyChunk, when non-nil, are the segment lengths of the Reply
	// chunk offered (LargeReply offers one segment of MaxRecord bytes).
	ReplyChunk []int
}

// Call implements oncrpc.Caller. The results are appended to
// cc.ReplyBuf[:0] when it is not nil (they alias it when its capacity
// suffices); the Write-chunk payload is copied there from the registered
// region it was placed in (counted in Stats as payload copies), or, when
// cc.Sink accepts it (oncrpc.ReplySink.Place), written from that region
// into the sink's file and left out of the results (payloads placed).
func (c *Client) Call(ctx context.Context, cc *oncrpc.ClientCall) ([]byte, error) {
	var dst []byte
	if cc.ReplyBuf != nil {
		dst = cc.ReplyBuf[:0]
	}
	return c.CallWith(ctx, cc, nil, dst)
}

// CallWith sends cc offering chunks per opts (nil for the defaults) and
// appends the results of a SUCCESS reply to dst.
func (c *Client) CallWith(ctx context.Context, cc *oncrpc.ClientCall, opts *CallOpts, dst []byte) ([]byte, error) {
	s, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.active.Done()
	xid := c.xid.Add(1)
	if cc.XID != 0 { // a retransmission (oncrpc.ClientCall.XID)
		xid = cc.XID
	}
	hdr, msgLen, err := c.marshal(s, xid, cc, opts)
	if err != nil {
		c.disarm(&s.keys)
		c.freeSlot(s)
		return nil, err
	}
	r, err := c.roundTrip(ctx, s, xid, hdr, msgLen)
	if err != nil {
		return nil, err
	}
	defer c.finish(s, r)
	msg, payload, err := c.decodeReply(s, r)
	if err != nil {
		return nil, err
	}
	res, err := oncrpc.ParseReply(msg)
	if err != nil {
		return nil, err
	}
	if cc.Sink != nil && len(payload) <= cc.ReplyPayloadMax {
		// The Write chunk's data goes from the region it landed in
		// straight into the sink's file, instead of through dst.
		// decodeReply bounds it by the chunk the call offered, which
		// CallOpts.WriteChunk may make larger than ReplyPayloadMax; such
		// a reply is returned whole, so that the file is written only
		// inside [Off, Off+ReplyPayloadMax), as on TCP.
		placed, err := cc.Sink.Place(res, payload)
		if err != nil {
			return nil, err
		}
		if placed {
			c.stats.payloadPlaced.Add(1)
			return append(dst, res...), nil
		}
	}
	dst = append(dst, res...)
	if payload != nil {
		dst = xdr.AppendFixedOpaque(dst, payload)
		c.stats.payloadCopies.Add(1)
		c.stats.payloadBytes.Add(int64(len(payload)))
	}
	return dst, nil
}

func (c *Client) acquire(ctx context.Context) (*cslot, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.active.Add(1)
	c.mu.Unlock()
	if err := c.credits.acquire(ctx); err != nil {
		c.active.Done()
		return nil, err
	}
	select {
	case s := <-c.free:
		return s, nil
	case <-ctx.Done():
		c.credits.release()
		c.active.Done()
		return nil, ctx.Err()
	}
}

// finish re-posts the reply's Receive, makes sure no window of the call
// is still bound and frees the slot.
func (c *Client) finish(s *cslot, r creply) {
	c.repost(r.idx)
	c.invalidateWindows(s, r)
	c.freeSlot(s)
}

// region returns the slot's region *m, (re)registering it when it is
// missing or smaller than size. Regions have no remote access of their
// own; windows expose them (AccessMWBind).
func (c *Client) region(m **verbs.MR, size int) (*verbs.MR, error) {
	if *m != nil && (*m).Len() >= size {
		return *m, nil
	}
	if *m != nil {
		(*m).Deregister()
		*m = nil
	}
	r, err := c.vc.Register(size, verbs.AccessLocalWrite|verbs.AccessMWBind)
	if err != nil {
		return nil, err
	}
	c.stats.registrations.Add(1)
	*m = r
	return r, nil
}

// segOf is the segment for n bytes at off of m, reached through rkey.
func segOf(m *verbs.MR, rkey uint32, off, n int) proto.Segment {
	return proto.Segment{Handle: rkey, Length: uint32(n), Offset: m.Addr() + uint64(off)}
}

// marshal builds the transport header and inline message in the slot's
// Send buffer, choosing chunks as rpcrdma_marshal_req does: inline when
// the call fits; a Read chunk at the payload's XDR position when only the
// payload does not fit; otherwise RDMA_NOMSG with a position-zero chunk.
// The reply gets a Write chunk for a large ReplyPayloadMax, else a Reply
// chunk for LargeReply.
func (c *Client) marshal(s *cslot, xid uint32, cc *oncrpc.ClientCall, opts *CallOpts) (int, int, error) {
	cred := c.cfg.Cred
	if cc.Cred != nil {
		cred = *cc.Cred
	}
	h := oncrpc.CallHeader{XID: xid, Prog: cc.Prog, Vers: cc.Vers, Proc: cc.Proc, Cred: cred}
	s.buf = oncrpc.AppendCallHeader(s.buf[:0], &h)
	s.buf = append(s.buf, cc.Args...)
	pos := len(s.buf)
	flatLen := pos + xdr.PaddedLen(len(cc.Payload)) + len(cc.Tail)

	hh := &s.hdr
	hh.Reset()
	hh.XID, hh.Credits = xid, uint32(c.cfg.Credits)
	hh.Proc = proto.ProcMsg
	s.segs = s.segs[:0]
	s.wOffered = 0
	// Reply side chunks, in the "in" region: Write chunk first.
	inOff := 0
	wantWrite := cc.ReplyPayloadMax > 0 && cc.ReplyPayloadMax+256 > c.recvMax
	if opts != nil && opts.WriteChunk != nil {
		wantWrite = true
	}
	wantReply := cc.LargeReply && !wantWrite
	if opts != nil && opts.ReplyChunk != nil {
		wantReply = true
	}
	inSize := 0
	if wantWrite {
		inSize += c.cfg.MaxRecord
	}
	if wantReply {
		inSize += c.cfg.MaxRecord
	}
	var in *verbs.MR
	if inSize > 0 {
		var err error
		if in, err = c.region(&s.in, inSize); err != nil {
			return 0, 0, err
		}
	}
	addSegs := func(lens []int) (proto.Chunk, error) {
		start := len(s.segs)
		for _, n := range lens {
			if n < 0 || inOff+n > in.Len() {
				return nil, errors.New("rpcrdma: chunk larger than the client's region")
			}
			s.segs = append(s.segs, segOf(in, 0, inOff, n)) // rkey set below
			inOff += n
		}
		return proto.Chunk(s.segs[start:len(s.segs):len(s.segs)]), nil
	}
	var wlens, rlens [1]int
	if wantWrite {
		lens := wlens[:]
		wlens[0] = min(cc.ReplyPayloadMax, c.cfg.MaxPayload)
		if opts != nil && opts.WriteChunk != nil {
			lens = opts.WriteChunk
		}
		ch, err := addSegs(lens)
		if err != nil {
			return 0, 0, err
		}
		s.wchunks[0] = ch
		hh.WriteList = s.wchunks[:1]
		s.wOffered = ch.Len()
		inOff = c.cfg.MaxRecord
	}
	if wantReply {
		lens := rlens[:]
		rlens[0] = c.cfg.MaxRecord
		if opts != nil && opts.ReplyChunk != nil {
			lens = opts.ReplyChunk
		}
		ch, err := addSegs(lens)
		if err != nil {
			return 0, 0, err
		}
		hh.ReplyChunk, hh.HasReply = ch, true
	}
	if in != nil {
		// Expose exactly the advertised bytes, writable, for this call.
		inKey, err := c.expose(&s.keys.in, in, segsEnd(in, s.segs), verbs.AccessRemoteWrite)
		if err != nil {
			return 0, 0, err
		}
		for i := range s.segs {
			s.segs[i].Handle = inKey
		}
	}
	// Call side.
	s.rsegs = s.rsegs[:0]
	hdrLen := len(hh.Append(s.send[:0]))
	switch {
	case hdrLen+flatLen <= c.sendMax:
		b := hh.Append(s.send[:0])
		b = append(b, s.buf...)
		if cc.Payload != nil {
			b = xdr.AppendFixedOpaque(b, cc.Payload)
		}
		b = append(b, cc.Tail...)
		return len(b), 0, nil
	case cc.Payload != nil && hdrLen+proto.ReadSegmentSize+pos+len(cc.Tail) <= c.sendMax && len(cc.Payload) <= c.cfg.MaxRecord:
		out, err := c.region(&s.out, c.cfg.MaxRecord)
		if err != nil {
			return 0, 0, err
		}
		copy(out.Bytes(), cc.Payload)
		outKey, err := c.expose(&s.keys.out, out, len(cc.Payload), verbs.AccessRemoteRead)
		if err != nil {
			return 0, 0, err
		}
		s.rsegs = append(s.rsegs, proto.ReadSegment{Position: uint32(pos), Segment: segOf(out, outKey, 0, len(cc.Payload))})
		hh.ReadList = s.rsegs
		b := hh.Append(s.send[:0])
		b = append(b, s.buf...) // no payload, no pad
		b = append(b, cc.Tail...)
		return len(b), 0, nil
	case flatLen <= c.cfg.MaxRecord && hdrLen+proto.ReadSegmentSize <= c.sendMax:
		out, err := c.region(&s.out, c.cfg.MaxRecord)
		if err != nil {
			return 0, 0, err
		}
		b := append(out.Bytes()[:0], s.buf...)
		if cc.Payload != nil {
			b = xdr.AppendFixedOpaque(b, cc.Payload)
		}
		b = append(b, cc.Tail...)
		outKey, err := c.expose(&s.keys.out, out, len(b), verbs.AccessRemoteRead)
		if err != nil {
			return 0, 0, err
		}
		s.rsegs = append(s.rsegs, proto.ReadSegment{Position: 0, Segment: segOf(out, outKey, 0, len(b))})
		hh.ReadList = s.rsegs
		hh.Proc = proto.ProcNoMsg
		return len(hh.Append(s.send[:0])), 0, nil
	}
	return 0, 0, fmt.Errorf("rpcrdma: call of %d bytes is too large", flatLen)
}

// roundTrip sends the first n bytes of the slot's Send buffer and waits
// for the reply. On error the slot has been freed or handed to the
// completion loop.
func (c *Client) roundTrip(ctx context.Context, s *cslot, xid uint32, n, _ int) (creply, error) {
	select {
	case <-s.sent:
	default:
	}
	c.mu.Lock()
	c.pending[xid] = s
	s.abandoned = false
	c.mu.Unlock()
	s.sge[0] = c.sendMR.SGE(s.sendOff, n)
	// The binds of the call's windows go first on the send queue, so they
	// take effect before the server sees the Send that names their rkeys.
	wrs := c.appendBinds(s, s.wr[:0])
	wrs = append(wrs, verbs.SendWR{ID: wr.ID(wr.Send, s.idx), Opcode: verbs.OpSend, SGL: s.sge[:], Signaled: true})
	c.postMu.Lock()
	err := errDead
	if !c.dead {
		if err = c.vc.PostSend(wrs); err != nil {
			// Some binds may have been posted without the Send: a
			// binding no call will end. Kill the connection.
			c.vc.Disconnect()
		}
	}
	c.postMu.Unlock()
	if err != nil {
		c.mu.Lock()
		_, still := c.pending[xid]
		delete(c.pending, xid)
		c.mu.Unlock()
		if still {
			c.freeDeadSlot(s)
		}
		return creply{}, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	// The Send buffer is ours again only after its completion.
	select {
	case <-s.sent:
	case <-c.done:
	}
	select {
	case r := <-s.reply:
		if r.err != nil {
			c.freeDeadSlot(s)
			return creply{}, r.err
		}
		// No window of the call stays usable while its reply is decoded.
		c.invalidateWindows(s, r)
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		if _, still := c.pending[xid]; still {
			// The server may still write into our regions: the completion
			// loop frees the slot when the reply comes.
			s.abandoned = true
			c.mu.Unlock()
			return creply{}, ctx.Err()
		}
		c.mu.Unlock()
		r := <-s.reply
		if r.err == nil {
			c.finish(s, r)
		} else {
			c.freeDeadSlot(s)
		}
		return creply{}, ctx.Err()
	}
}

// decodeReply decodes the reply transport header and returns the RPC
// reply: inline, or fetched from the Reply chunk region. When the payload
// came in the Write chunk it is returned separately; it belongs after the
// inline part with its pad (NFSv3 READ and READLINK results end with their
// data). The results alias client buffers until finish.
func (c *Client) decodeReply(s *cslot, r creply) (msg, payload []byte, err error) {
	buf := c.recvMR.Slice(r.idx*c.recvMax, r.n)
	c.noteGrant(buf)
	s.rd.Reset(buf)
	if err := s.hdr.Decode(&s.rd, proto.DefaultLimits); err != nil {
		return nil, nil, err
	}
	h := &s.hdr
	switch h.Proc {
	case proto.ProcError:
		return nil, nil, &RDMAError{Code: h.Err, Low: h.VersLow, High: h.VersHigh}
	case proto.ProcMsg:
		if h.HasReply {
			return nil, nil, errors.New("rpcrdma: RDMA_MSG reply carries a Reply chunk")
		}
		inline := s.rd.Rest()
		if len(h.WriteList) == 0 {
			return inline, nil, nil
		}
		// RFC 8166 section 3.4.6: the reply's Write list has the chunk
		// the call offered, with the lengths the responder wrote.
		if len(h.WriteList) != 1 || s.wOffered == 0 || s.in == nil {
			return nil, nil, fmt.Errorf("rpcrdma: reply has %d Write chunks, the call offered %d", len(h.WriteList), min(s.wOffered, 1))
		}
		n := h.WriteList[0].Len()
		if n > s.wOffered || n > c.cfg.MaxRecord {
			return nil, nil, fmt.Errorf("rpcrdma: reply's Write chunk claims %d bytes, the call offered %d", n, s.wOffered)
		}
		return inline, s.in.Bytes()[:n], nil
	case proto.ProcNoMsg:
		if len(h.WriteList) != 0 || !h.HasReply {
			return nil, nil, errors.New("rpcrdma: RDMA_NOMSG reply without a Reply chunk or with a Write list")
		}
		n := h.ReplyChunk.Len()
		if s.in == nil || n > s.in.Len() || len(h.ReplyChunk) == 0 {
			return nil, nil, errors.New("rpcrdma: bad Reply chunk in reply")
		}
		// Our Reply chunk is contiguous in the in region; find its start.
		start := int(h.ReplyChunk[0].Offset - s.in.Addr())
		if start < 0 || start+n > s.in.Len() {
			return nil, nil, errors.New("rpcrdma: Reply chunk outside our region")
		}
		return s.in.Bytes()[start : start+n], nil, nil
	}
	return nil, nil, fmt.Errorf("rpcrdma: unexpected reply %v", h.Proc)
}

// Buffer is client memory registered for hand-built chunks: the server
// may RDMA Read and Write it, through the MR's own rkey, for as long as it
// is registered. It exists for conformance tests that build chunk lists by
// hand; Call never uses it.
type Buffer struct{ mr *verbs.MR }

// RegisterBuffer registers size bytes for RoundTripRaw chunks.
func (c *Client) RegisterBuffer(size int) (*Buffer, error) {
	m, err := c.vc.Register(size, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	return &Buffer{mr: m}, nil
}

// Bytes is the buffer's memory.
func (b *Buffer) Bytes() []byte { return b.mr.Bytes() }

// Segment describes n bytes at off for a chunk list.
func (b *Buffer) Segment(off, n int) proto.Segment { return segOf(b.mr, b.mr.RKey(), off, n) }

// Close deregisters the buffer; call it after Client.Close or once no
// call names it.
func (b *Buffer) Close() error { return b.mr.Deregister() }

// NextXID returns a fresh XID for RoundTripRaw.
func (c *Client) NextXID() uint32 { return c.xid.Add(1) }

// RoundTripRaw sends a hand-built transport header followed by msg (hdr
// starts with the XID the reply is matched by) and returns the raw reply
// transport header and the inline message after it (nil when the header
// does not decode). It takes a credit like any call.
func (c *Client) RoundTripRaw(ctx context.Context, hdr, msg []byte) (replyHdr, replyMsg []byte, err error) {
	if len(hdr) < 4 {
		return nil, nil, errors.New("rpcrdma: header too short")
	}
	if len(hdr)+len(msg) > c.sendMax {
		return nil, nil, fmt.Errorf("rpcrdma: %d bytes exceed the inline send size %d", len(hdr)+len(msg), c.sendMax)
	}
	s, err := c.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer c.active.Done()
	b := append(append(s.send[:0], hdr...), msg...)
	xid, _ := proto.PeekXID(hdr)
	r, err := c.roundTrip(ctx, s, xid, len(b), 0)
	if err != nil {
		return nil, nil, err
	}
	defer c.finish(s, r)
	raw := append([]byte(nil), c.recvMR.Slice(r.idx*c.recvMax, r.n)...)
	c.noteGrant(raw)
	var h proto.Header
	rd := xdr.NewReader(raw)
	if h.Decode(rd, proto.DefaultLimits) != nil {
		return raw, nil, nil
	}
	return raw[:rd.Offset()], raw[rd.Offset():], nil
}
