package oncrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ClientCall is an outgoing call in head / payload / tail form, so that a
// transport able to place data directly (RPC-over-RDMA) can move Payload in
// a Read chunk and offer a Write chunk for bulk reply data.
type ClientCall struct {
	Prog, Vers, Proc uint32
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
}

// Caller sends calls and returns the results of SUCCESS replies. Results
// are owned by the caller. Non-SUCCESS replies come back as *AcceptError or
// *RejectError.
type Caller interface {
	Call(ctx context.Context, c *ClientCall) ([]byte, error)
	Close() error
}

// Client is an ONC RPC client over a TCP (record marking) or UDP
// connection. Calls may be issued concurrently; replies are matched by XID.
type Client struct {
	conn    net.Conn
	stream  bool
	cred    OpaqueAuth
	nextXID atomic.Uint32

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]chan clientResult
	err     error
	done    chan struct{}
}

type clientResult struct {
	msg []byte
	err error
}

// ErrClientClosed is returned for calls on a closed client.
var ErrClientClosed = errors.New("oncrpc: client closed")

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
		pending: make(map[uint32]chan clientResult),
		done:    make(chan struct{}),
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
	buf := make([]byte, maxDatagram)
	for {
		var msg []byte
		if c.stream {
			msg, err = ReadRecord(c.conn, nil, 64<<20)
		} else {
			var n int
			n, err = c.conn.Read(buf)
			msg = append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			break
		}
		if len(msg) < 4 {
			continue
		}
		xid := uint32(msg[0])<<24 | uint32(msg[1])<<16 | uint32(msg[2])<<8 | uint32(msg[3])
		c.mu.Lock()
		ch := c.pending[xid]
		delete(c.pending, xid)
		c.mu.Unlock()
		if ch != nil {
			ch <- clientResult{msg: msg}
		}
	}
	c.mu.Lock()
	c.err = err
	for xid, ch := range c.pending {
		ch <- clientResult{err: fmt.Errorf("oncrpc: connection lost: %w", err)}
		delete(c.pending, xid)
	}
	c.mu.Unlock()
}

// Call implements Caller.
func (c *Client) Call(ctx context.Context, cc *ClientCall) ([]byte, error) {
	cred := c.cred
	if cc.Cred != nil {
		cred = *cc.Cred
	}
	xid := c.nextXID.Add(1)
	h := CallHeader{XID: xid, Prog: cc.Prog, Vers: cc.Vers, Proc: cc.Proc, Cred: cred}
	msg := AppendCallHeader(make([]byte, 0, 128+len(cc.Args)+len(cc.Payload)+len(cc.Tail)), &h)
	msg = append(msg, cc.Args...)
	if cc.Payload != nil {
		msg = append(msg, cc.Payload...)
		msg = append(msg, padding(len(cc.Payload))...)
	}
	msg = append(msg, cc.Tail...)
	reply, err := c.RoundTrip(ctx, xid, msg)
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
	ch := make(chan clientResult, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	c.pending[xid] = ch
	c.mu.Unlock()
	if err := c.Send(msg); err != nil {
		c.forget(xid)
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
		case r := <-ch:
			return r.msg, r.err
		case <-retry:
			if err := c.Send(msg); err != nil {
				c.forget(xid)
				return nil, err
			}
		case <-ctx.Done():
			c.forget(xid)
			return nil, ctx.Err()
		}
	}
}

// udpRetransmit is the interval between retransmissions over UDP.
const udpRetransmit = 500 * time.Millisecond

// Send writes one message (one record on a stream) without waiting.
func (c *Client) Send(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.stream {
		_, err := c.conn.Write(msg)
		return err
	}
	bufs := net.Buffers{AppendRecordMark(nil, len(msg)), msg}
	_, err := bufs.WriteTo(c.conn)
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

func (c *Client) forget(xid uint32) {
	c.mu.Lock()
	delete(c.pending, xid)
	c.mu.Unlock()
}
