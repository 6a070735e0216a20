package oncrpc

import (
	"errors"
	"net/netip"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Transport names a transport kind; it is what exports' transports= option
// and rpcbind netids speak about.
type Transport uint8

// Transport kinds.
const (
	TCP Transport = iota + 1
	UDP
	RDMA
)

func (t Transport) String() string {
	switch t {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case RDMA:
		return "rdma"
	}
	return "unknown"
}

// Peer says where a call came from, in transport-neutral terms.
type Peer struct {
	Transport Transport
	Local     netip.AddrPort
	Remote    netip.AddrPort
	// Client is the remote address's entry in the busiest-clients table
	// (ServerConfig.Clients), set by Dispatcher.OpenConn; nil: not in a
	// table.
	Client *meter.Client
	// counts are the connection's own call counters (OpenConn); nil:
	// the dispatcher's shared ones.
	counts *connCounts
}

// Secure reports whether the call counts as coming from a privileged port:
// a source port below 1024, or RDMA (as knfsd treats it).
func (p *Peer) Secure() bool {
	return p.Transport == RDMA || p.Remote.Port() < 1024
}

// Exchange is the contract between a transport and the dispatcher for one
// call: the transport hands Dispatcher.Dispatch the call through it, and
// the handler reaches the transport only through it (via Call and Reply),
// so no layer above type-switches on a transport (style rule 3). TCP, UDP
// (this package) and RPC-over-RDMA (rpcrdma) implement it on their per-call
// slot.
//
// Ownership: everything an Exchange returns belongs to the transport and
// stays valid until the call's reply has been sent.
type Exchange interface {
	// Peer is the connection the call came on.
	Peer() *Peer
	// Message is the whole RPC call message (header and arguments) as
	// received; Call.Args is a sub-slice of it.
	Message() []byte
	// MaxReply is the largest reply (header, results and payload) the
	// transport can deliver for this call; 0 means no limit below the
	// record-size limit.
	MaxReply() int
	// AllocPayload returns a buffer of exactly n bytes for bulk reply
	// data. It is released by the transport after the reply is sent,
	// whether or not it was attached with Reply.SetPayload. A transport
	// that places payloads by RDMA returns registered memory, so data read
	// from a file into it goes straight to the wire.
	AllocPayload(n int) []byte
	// CanSplice reports whether SpliceFile may work now.
	CanSplice() bool
	// SpliceFile takes up to n bytes at off of the regular file fd as the
	// payload, without copying them through user memory (TCP on Linux:
	// the file's page-cache pages go into a pipe with splice(2), and from
	// the pipe to the socket), and returns how many it took: fewer at end
	// of file or when the pipe is full, never more. The data is the
	// file's at the time of the call; the descriptor is not kept. A
	// transport that cannot splice returns ErrNoSplice.
	SpliceFile(fd int, off int64, n int) (int, error)
}

// Call is one decoded RPC call handed to a procedure handler.
//
// Ownership: Args, Cred.Body, Verf.Body and Unix.MachineName are sub-slices
// of the transport's receive buffer (on RDMA, possibly registered memory
// holding Read-chunk data). They are valid until the handler returns and its
// reply has been sent; a handler that keeps any of them longer must copy.
type Call struct {
	CallHeader
	// Args holds the procedure arguments (everything after the header).
	Args []byte
	// Unix is the decoded credential when Cred.Flavor is AUTH_SYS.
	Unix    AuthSysCred
	HasUnix bool
	// Conn is where the call came from (the exchange's Peer).
	Conn *Peer

	ex         Exchange
	authReject AuthStat
}

// Bind makes ex the call's exchange (Conn becomes its Peer), for a
// handler run outside Dispatch, which binds every call it decodes.
func (c *Call) Bind(ex Exchange) {
	c.ex = ex
	c.Conn = ex.Peer()
}

// MaxReply is the largest reply the call's transport can deliver for it
// (Exchange.MaxReply); 0 means no limit below the record-size limit.
func (c *Call) MaxReply() int {
	if c.ex == nil {
		return 0
	}
	return c.ex.MaxReply()
}

// RejectAuth makes the dispatcher answer the call with MSG_DENIED
// AUTH_ERROR stat instead of the results the handler appends: a handler
// that finds the credential too weak for what it names (RFC 2623 section
// 2.3.2: an export that does not allow the call's flavor) calls it and
// returns normally.
func (c *Call) RejectAuth(stat AuthStat) { c.authReject = stat }

// ArgsReader returns an XDR reader over the arguments, reusing r.
func (c *Call) ArgsReader(r *xdr.Reader) *xdr.Reader {
	r.Reset(c.Args)
	return r
}

// Reply is a reply under construction: head, payload, tail (style rule 2).
//
// Head holds the RPC reply header followed by the results; when the reply
// carries bulk data, the results end with the opaque's XDR length word and
// Payload holds the data itself, without padding. Tail holds what follows
// the data's padding (nothing, for NFSv3). The transport writes Head,
// Payload, pad and Tail in one gather write over TCP, or RDMA-Writes the
// payload into the client's Write chunk and Sends the rest.
type Reply struct {
	Head    []byte
	Payload []byte
	Tail    []byte
	// ex is the exchange of the call being answered (set by Dispatch);
	// nil outside a dispatch: payloads are then plain allocations.
	ex Exchange
	// spliced is the length of a payload the transport holds outside user
	// memory (file pages in a pipe, see SpliceFile); Payload is nil then.
	spliced int
}

// ErrNoSplice is returned by Reply.SpliceFile when the transport cannot
// splice; the handler copies the data into AllocPayload instead.
var ErrNoSplice = errors.New("oncrpc: transport cannot splice file data")

// NewReply returns a Reply that appends to head (usually a reusable buffer
// with length zero). Dispatch binds it to the exchange of the call it
// answers, which then supplies payload buffers.
func NewReply(head []byte) Reply {
	return Reply{Head: head[:0]}
}

// Reset empties r for reuse, keeping its buffers and exchange.
func (r *Reply) Reset() {
	r.Head = r.Head[:0]
	r.Payload = nil
	r.spliced = 0
	r.Tail = r.Tail[:0]
}

// CanSplice reports whether SpliceFile can work on this reply's transport.
func (r *Reply) CanSplice() bool {
	return r.ex != nil && r.ex.CanSplice()
}

// SpliceFile makes up to n bytes of the regular file fd at off the reply's
// payload without copying them (see Exchange.SpliceFile) and returns the count,
// which the handler then encodes in Head as the opaque's length word. It
// fails with ErrNoSplice on a transport that cannot splice; after any
// error the reply has no payload and the handler may fall back to
// AllocPayload. Spliced payloads are only for idempotent procedures: the
// duplicate request cache cannot keep them.
func (r *Reply) SpliceFile(fd int, off int64, n int) (int, error) {
	if r.ex == nil {
		return 0, ErrNoSplice
	}
	r.Payload = nil
	got, err := r.ex.SpliceFile(fd, off, n)
	if err != nil {
		r.spliced = 0
		return 0, err
	}
	r.spliced = got
	return got, nil
}

// AllocPayload returns a buffer of n bytes for bulk data; see
// Exchange.AllocPayload.
func (r *Reply) AllocPayload(n int) []byte {
	if r.ex == nil {
		return make([]byte, n)
	}
	return r.ex.AllocPayload(n)
}

// SetPayload attaches bulk data. The XDR length word must already end Head.
func (r *Reply) SetPayload(p []byte) { r.Payload = p }

// Len returns the encoded size of the reply including the payload padding.
func (r *Reply) Len() int {
	return len(r.Head) + xdr.PaddedLen(len(r.Payload)+r.spliced) + len(r.Tail)
}

// AppendFlat appends the whole reply as contiguous bytes. A spliced
// payload is not in memory; only TCP replies carry one and TCP does not
// flatten them.
func (r *Reply) AppendFlat(b []byte) []byte {
	b = append(b, r.Head...)
	b = xdr.AppendFixedOpaque(b, r.Payload)
	return append(b, r.Tail...)
}

// BufferExchange is an Exchange over a message held in memory, for calls
// dispatched in process (tests, tools): payloads come from one reusable
// buffer, nothing is spliced.
//
// Ownership: Msg and Payload belong to the caller; a payload handed out
// is Payload's memory, reused by the next call.
type BufferExchange struct {
	From Peer
	Msg  []byte
	// Max is what MaxReply reports (0: no limit).
	Max int
	// Payload is reused for AllocPayload when it is large enough.
	Payload []byte
}

// Peer implements Exchange.
func (b *BufferExchange) Peer() *Peer { return &b.From }

// Message implements Exchange.
func (b *BufferExchange) Message() []byte { return b.Msg }

// MaxReply implements Exchange.
func (b *BufferExchange) MaxReply() int { return b.Max }

// AllocPayload implements Exchange.
func (b *BufferExchange) AllocPayload(n int) []byte {
	if cap(b.Payload) < n {
		b.Payload = make([]byte, n)
	}
	return b.Payload[:n]
}

// CanSplice implements Exchange: never.
func (b *BufferExchange) CanSplice() bool { return false }

// SpliceFile implements Exchange: ErrNoSplice.
func (b *BufferExchange) SpliceFile(int, int64, int) (int, error) { return 0, ErrNoSplice }
