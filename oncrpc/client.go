package oncrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ClientCall is an outgoing call in head / payload / tail form, so that a
// transport able to place data directly (RPC-over-RDMA) can move Payload in
// a Read chunk and offer a Write chunk for bulk reply data.
type ClientCall struct {
	Prog, Vers, Proc uint32
	// XID, when nonzero, is the call's XID instead of a fresh one from
	// the connection: a retransmission, which the server's duplicate
	// request cache answers when the first transmission's call ran (RFC
	// 5531 section 9: a retransmitted call keeps its XID). A connection
	// carries one call per XID at a time: resend on a new connection, or
	// once the first attempt has returned.
	XID uint32
	// Cred overrides the client's default credential when its Flavor or
	// Body is set.
	Cred *OpaqueAuth
	// Args are the encoded arguments; when Payload is set they end with the
	// payload's XDR length word.
	Args    []byte
	Payload []byte
	Tail    []byte
	// ReplyPayloadMax, when positive, says the reply carries up to this
	// many bytes of bulk data (READ, READLINK): an RDMA transport offers a
	// Write chunk of this size.
	ReplyPayloadMax int
	// LargeReply says the reply may exceed the inline size (READDIR): an
	// RDMA transport offers a Reply chunk.
	LargeReply bool
	// ReplyBuf, when not nil, is lent for the reply: when its capacity
	// holds the whole reply message, the reply is read into it and the
	// results Call returns alias it; otherwise a buffer is allocated. The
	// caller must leave it alone until Call returns (also when the call
	// fails or its context is cancelled: Call returns only once the
	// transport no longer writes to it). It is a hint that a transport may
	// ignore: Client uses it on TCP only; rpcrdma/client.Client appends the
	// results to it.
	ReplyBuf []byte
	// Sink, when not nil with ReplyPayloadMax set, asks for the data of
	// a SUCCESS reply to be written into a file instead of returned
	// (client_sink.go). Like ReplyBuf, it is a hint: Client uses it on
	// TCP, the RPC-over-RDMA client for Write-chunk data (ReplySink.Place);
	// Sink.Placed says whether it was used.
	Sink *ReplySink
}

// Caller sends calls and returns the results of SUCCESS replies. Results
// are owned by the caller: freshly allocated, or aliasing the ReplyBuf the
// caller lent. Non-SUCCESS replies come back as *AcceptError or
// *RejectError.
type Caller interface {
	Call(ctx context.Context, c *ClientCall) ([]byte, error)
	Close() error
}

// Client is an ONC RPC client over a TCP (record marking) or UDP
// connection. Calls may be issued concurrently; replies are matched by XID.
//
// On TCP, replies are read through a buffer, so that small replies cost
// one read system call for several; a reply whose call lent a ReplyBuf
// large enough is read straight into it, large bodies directly from the
// socket. Calls are written with one writev each: record mark, header and
// arguments, payload, padding and tail, without copying the payload.
type Client struct {
	conn    net.Conn
	br      *bufio.Reader // stream only
	stream  bool
	cred    OpaqueAuth
	nextXID atomic.Uint32

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]*pendingCall
	err     error
	done    chan struct{}

	scratch []byte // the reader's buffer for large replies without a ReplyBuf

	// The reader's means to place reply data into a ReplySink's file
	// (client_sink.go): the socket (nil when the connection is not
	// one), a pipe made at the first splice, and a buffer for copying
	// where splicing is not possible.
	raw      syscall.RawConn
	noSplice bool
	pipe     *sinkPipe
	sinkBuf  []byte
	spliced  atomic.Int64 // reply data bytes spliced into sink files
}

// pendingCall is a call waiting for its reply.
type pendingCall struct {
	ch  chan clientResult // buffered: the reader never blocks on it
	buf []byte            // the lent ReplyBuf, nil if none
	// sink and max are the call's ReplySink and ReplyPayloadMax (sink nil
	// if none or not on a stream).
	sink *ReplySink
	max  int
	// claimed says the reader is reading the reply into buf; cancelled
	// that the caller gave up meanwhile and waits for the reader to let
	// go of buf. Both are guarded by Client.mu.
	claimed, cancelled bool
}

type clientResult struct {
	msg []byte
	err error
}

// ErrClientClosed is returned for calls on a closed client.
var ErrClientClosed = errors.New("oncrpc: client closed")

// errAbandoned is what the reader hands a claimed call whose caller gave
// up on it (abandon receives it and drops it).
var errAbandoned = errors.New("oncrpc: call abandoned")

const (
	// clientReadBuffer is the size of the TCP read buffer.
	clientReadBuffer = 64 << 10
	// maxReplyRecord bounds the reply records a Client accepts.
	maxReplyRecord = 64 << 20
	// maxScratch bounds the scratch buffer the reader keeps.
	maxScratch = 4 << 20
)

// aLongTimeAgo is a read deadline that interrupts a read in progress.
var aLongTimeAgo = time.Unix(1, 0)

// Dial connects to addr over network ("tcp" or "udp").
func Dial(ctx context.Context, network, addr string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return NewClient(c), nil
}

// NewClient wraps an established connection; a net.PacketConn-backed
// connection (UDP) sends one datagram per call.
func NewClient(c net.Conn) *Client {
	_, isUDP := c.(*net.UDPConn)
	cl := &Client{
		conn:    c,
		stream:  !isUDP,
		pending: make(map[uint32]*pendingCall),
		done:    make(chan struct{}),
	}
	if cl.stream {
		cl.br = bufio.NewReaderSize(c, clientReadBuffer)
		if sc, ok := c.(syscall.Conn); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				cl.raw = raw
			}
		}
	}
	cl.nextXID.Store(uint32(time.Now().UnixNano()))
	go cl.readLoop()
	return cl
}

// SetCred sets the default credential for later calls.
func (c *Client) SetCred(a OpaqueAuth) { c.cred = a }

// LocalAddr returns the local address of the connection.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Close closes the connection; pending calls fail.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

func (c *Client) readLoop() {
	defer close(c.done)
	var err error
	if c.stream {
		err = c.readStream()
		c.closeSinkPipe()
	} else {
		err = c.readDatagrams()
	}
	c.mu.Lock()
	c.err = err
	for xid, p := range c.pending {
		p.ch <- clientResult{err: fmt.Errorf("oncrpc: connection lost: %w", err)}
		delete(c.pending, xid)
	}
	c.mu.Unlock()
}

func (c *Client) readDatagrams() error {
	buf := make([]byte, maxDatagram)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			return err
		}
		c.deliver(append([]byte(nil), buf[:n]...))
	}
}

// deliver hands msg to the call its XID names, if it still waits.
func (c *Client) deliver(msg []byte) {
	xid, ok := PeekXID(msg)
	if !ok {
		return
	}
	c.mu.Lock()
	p := c.pending[xid]
	delete(c.pending, xid)
	c.mu.Unlock()
	if p != nil {
		p.ch <- clientResult{msg: msg}
	}
}

// readStream reads reply records until the connection fails. It peeks at
// each record's mark and XID first, so that a reply can go straight into
// the buffer its call lent.
func (c *Client) readStream() error {
	for {
		hdr, err := c.br.Peek(4)
		if err != nil {
			return err
		}
		word := binary.BigEndian.Uint32(hdr)
		var (
			p    *pendingCall
			xid  uint32
			buf  []byte
			sink bool // p's reply data goes into p.sink's file
		)
		// A first fragment too short for the XID is legal but odd; such a
		// record is read into a fresh buffer.
		if n := int(word & fragmentLenMax); n >= 4 {
			b, err := c.br.Peek(8)
			if err != nil {
				return err
			}
			xid = binary.BigEndian.Uint32(b[4:])
			c.mu.Lock()
			// A single-fragment record that does not fit is not worth
			// starting in the lent buffer; a multi-fragment one may fit.
			if q := c.pending[xid]; q != nil && q.sink != nil && word&lastFragment != 0 {
				// A call with a sink takes single-fragment replies
				// (what servers send); others go the usual ways.
				q.claimed = true
				p, sink = q, true
			} else if q != nil && cap(q.buf) > 0 && (word&lastFragment == 0 || n <= cap(q.buf)) {
				q.claimed = true
				p, buf = q, q.buf
			}
			c.mu.Unlock()
		}
		// Without a lent buffer, a record larger than growStep (or of
		// several fragments) is read into the reader's scratch buffer
		// and copied out once, rather than into a fresh buffer grown by
		// doubling; a small one is allocated at its size.
		scratch := p == nil && (word&lastFragment == 0 || int(word&fragmentLenMax) > growStep)
		if scratch {
			buf = c.scratch
		}
		var (
			st  recordState
			msg []byte
			sr  sinkResult
		)
		if sink {
			sr, err = c.readSinkRecord(p, p.sink, p.max, &st)
			msg = sr.msg
		} else {
			msg, err = c.readRecord(buf, &st)
		}
		if p == nil {
			if err != nil {
				return err
			}
			if scratch && cap(msg) <= maxScratch {
				c.scratch = msg[:0]
				msg = bytes.Clone(msg)
			}
			c.deliver(msg)
			continue
		}
		c.mu.Lock()
		cancelled := p.cancelled
		if cancelled {
			// The caller poked the read deadline under c.mu; reset it
			// before reading on.
			c.conn.SetReadDeadline(time.Time{})
		}
		if err == nil || cancelled {
			delete(c.pending, xid)
		}
		c.mu.Unlock()
		switch {
		case cancelled:
			// The reader no longer touches buf: give it back.
			p.ch <- clientResult{err: errAbandoned}
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					return err
				}
				if err := c.skipRecord(&st); err != nil {
					return err
				}
			}
		case err != nil:
			return err // p is still pending and gets the error
		case sr.werr != nil:
			p.ch <- clientResult{err: &SinkWriteError{Err: sr.werr}}
		default:
			if sr.placed {
				p.sink.placed, p.sink.isPlace = sr.n, true
			}
			p.ch <- clientResult{msg: msg}
		}
	}
}

// nextFragment consumes a fragment header. It peeks before it consumes,
// so a read interrupted by the deadline leaves the stream in step.
func (c *Client) nextFragment(st *recordState) error {
	hdr, err := c.br.Peek(4)
	if err != nil {
		if st.started && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	word := binary.BigEndian.Uint32(hdr)
	c.br.Discard(4)
	return st.begin(word, maxReplyRecord)
}

// readRecord reads one record into buf[:0], as ReadRecord does, keeping
// st up to date so that skipRecord can drop the rest after an interrupted
// read. Data goes straight from the socket into buf for reads at least as
// large as the read buffer.
func (c *Client) readRecord(buf []byte, st *recordState) ([]byte, error) {
	buf = buf[:0]
	for !st.complete() {
		if err := c.nextFragment(st); err != nil {
			return buf, err
		}
		var err error
		if buf, err = readFragmentData(c.br, buf, st); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// skipRecord reads and drops the rest of a record readRecord left.
func (c *Client) skipRecord(st *recordState) error {
	for !st.complete() {
		if st.left == 0 {
			if err := c.nextFragment(st); err != nil {
				return err
			}
			continue
		}
		m, err := c.br.Discard(st.left)
		st.left -= m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// outMsg is a call message in pieces: header and arguments, payload,
// payload padding, tail.
type outMsg [4][]byte

func (o *outMsg) len() int { return len(o[0]) + len(o[1]) + len(o[2]) + len(o[3]) }

// flat returns the message as one slice.
func (o *outMsg) flat() []byte {
	if len(o[1])+len(o[2])+len(o[3]) == 0 {
		return o[0]
	}
	b := make([]byte, 0, o.len())
	for _, p := range o {
		b = append(b, p...)
	}
	return b
}

// Call implements Caller.
func (c *Client) Call(ctx context.Context, cc *ClientCall) ([]byte, error) {
	cred := c.cred
	if cc.Cred != nil {
		cred = *cc.Cred
	}
	xid := cc.XID
	if xid == 0 {
		xid = c.nextXID.Add(1)
	}
	h := CallHeader{XID: xid, Prog: cc.Prog, Vers: cc.Vers, Proc: cc.Proc, Cred: cred}
	head := AppendCallHeader(make([]byte, 0, 64+len(cred.Body)+len(cc.Args)), &h)
	o := outMsg{append(head, cc.Args...), nil, nil, cc.Tail}
	if cc.Payload != nil {
		o[1], o[2] = cc.Payload, xdr.Padding(len(cc.Payload))
	}
	var sink *ReplySink
	if cc.Sink != nil {
		cc.Sink.reset()
		if c.stream && cc.ReplyPayloadMax > 0 && cc.Sink.File != nil && cc.Sink.Locate != nil {
			sink = cc.Sink
		}
	}
	reply, err := c.roundTrip(ctx, xid, &o, cc.ReplyBuf, sink, cc.ReplyPayloadMax)
	if err != nil {
		return nil, err
	}
	return ParseReply(reply)
}

// ParseReply checks a reply message and returns its results, or the
// RPC-level error it carries.
func ParseReply(msg []byte) ([]byte, error) {
	rh, off, err := DecodeReplyHeader(msg)
	if err != nil {
		return nil, err
	}
	if rh.ReplyStat == MsgDenied {
		return nil, &RejectError{RejectStat: rh.RejectStat, AuthStat: rh.AuthStat, Low: rh.Low, High: rh.High}
	}
	if rh.AcceptStat != Success {
		return nil, &AcceptError{Stat: rh.AcceptStat, Low: rh.Low, High: rh.High}
	}
	return msg[off:], nil
}

// RoundTrip sends a complete RPC message whose XID is xid and returns the
// raw reply message. Conformance tests use it to send malformed calls.
func (c *Client) RoundTrip(ctx context.Context, xid uint32, msg []byte) ([]byte, error) {
	return c.roundTrip(ctx, xid, &outMsg{msg}, nil, nil, 0)
}

// roundTrip sends o and waits for the reply to xid, read into lent when it
// fits (TCP only), its data into sink's file (TCP only, at most max bytes).
func (c *Client) roundTrip(ctx context.Context, xid uint32, o *outMsg, lent []byte, sink *ReplySink, max int) ([]byte, error) {
	var dgram []byte
	if !c.stream {
		lent = nil
		dgram = o.flat()
	}
	p := &pendingCall{ch: make(chan clientResult, 1), buf: lent, sink: sink, max: max}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	c.pending[xid] = p
	c.mu.Unlock()
	if err := c.transmit(o, dgram); err != nil {
		c.abandon(xid, p)
		return nil, err
	}
	// Datagrams get lost: retransmit with the same XID (the server's DRC
	// answers a duplicate of a non-idempotent call from its cache).
	var retry <-chan time.Time
	if !c.stream {
		t := time.NewTicker(udpRetransmit)
		defer t.Stop()
		retry = t.C
	}
	for {
		select {
		case r := <-p.ch:
			return r.msg, r.err
		case <-retry:
			if err := c.transmit(o, dgram); err != nil {
				c.abandon(xid, p)
				return nil, err
			}
		case <-ctx.Done():
			c.abandon(xid, p)
			return nil, ctx.Err()
		}
	}
}

// transmit sends o on a stream, dgram (o flattened) on a datagram socket.
func (c *Client) transmit(o *outMsg, dgram []byte) error {
	if c.stream {
		return c.send(o)
	}
	return c.sendDatagram(dgram)
}

// abandon forgets the call p to xid. When the reader is already reading
// the reply into the call's lent buffer, it interrupts that read (a read
// deadline in the past; closing the connection if deadlines do not work)
// and waits until the reader lets go of the buffer, so the caller may
// reuse it once abandon returns. The reader then drops the rest of that
// reply and goes on with the next.
func (c *Client) abandon(xid uint32, p *pendingCall) {
	c.mu.Lock()
	if c.pending[xid] != p {
		// Answered or failed: the reader is done with p.
		c.mu.Unlock()
		return
	}
	if !p.claimed {
		delete(c.pending, xid)
		c.mu.Unlock()
		return
	}
	p.cancelled = true
	if err := c.conn.SetReadDeadline(aLongTimeAgo); err != nil {
		c.conn.Close()
	}
	c.mu.Unlock()
	<-p.ch
}

// udpRetransmit is the interval between retransmissions over UDP.
const udpRetransmit = 500 * time.Millisecond

// Send writes one message (one record on a stream) without waiting.
func (c *Client) Send(msg []byte) error {
	if !c.stream {
		return c.sendDatagram(msg)
	}
	return c.send(&outMsg{msg})
}

// send writes o as one record with one writev.
func (c *Client) send(o *outMsg) error {
	mark := AppendRecordMark(make([]byte, 0, 4), o.len())
	bufs := net.Buffers{mark, o[0], o[1], o[2], o[3]}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := bufs.WriteTo(c.conn)
	return err
}

func (c *Client) sendDatagram(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(msg)
	return err
}

// SendRaw writes bytes as they are (tests of record marking).
func (c *Client) SendRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(b)
	return err
}

// NextXID returns a fresh XID for RoundTrip.
func (c *Client) NextXID() uint32 { return c.nextXID.Add(1) }

// Done is closed when the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.done }
