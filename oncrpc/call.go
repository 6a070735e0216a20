package oncrpc

import (
	"errors"
	"net/netip"

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

// Capabilities is what a transport tells upper layers about itself, so they
// never type-switch on it (style rule 3).
type Capabilities struct {
	// MaxReply is the largest reply (header, results and payload) the
	// transport can deliver for this call; 0 means no limit below the
	// record-size limit.
	MaxReply int
	// DirectPlacement is true when payloads move by RDMA rather than inline.
	DirectPlacement bool
}

// ConnInfo describes the connection a call came on, in transport-neutral
// terms.
type ConnInfo struct {
	Transport Transport
	Local     netip.AddrPort
	Remote    netip.AddrPort
	Caps      Capabilities
}

// Secure reports whether the call counts as coming from a privileged port:
// a source port below 1024, or RDMA (as knfsd treats it).
func (c *ConnInfo) Secure() bool {
	return c.Transport == RDMA || c.Remote.Port() < 1024
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
	Conn    *ConnInfo

	authReject AuthStat
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

// PayloadAllocator hands out buffers for bulk reply data. A transport that
// places payloads by RDMA returns registered memory, so data read from a file
// into it goes straight to the wire.
type PayloadAllocator interface {
	// AllocPayload returns a buffer of exactly n bytes, owned by the
	// transport. It is released by the transport after the reply is sent,
	// whether or not it was attached with SetPayload.
	AllocPayload(n int) []byte
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
	alloc   PayloadAllocator
	// spliced is the length of a payload the transport holds outside user
	// memory (file pages in a pipe, see SpliceFile); Payload is nil then.
	spliced int
}

// FileSplicer is implemented by payload allocators of transports that can
// send file data without copying it through user memory: TCP moves the
// file's page-cache pages into a pipe with splice(2) and from the pipe to
// the socket.
type FileSplicer interface {
	// CanSplice reports whether SpliceFile may work now.
	CanSplice() bool
	// SpliceFile takes up to n bytes at off of the regular file fd as the
	// payload and returns how many it took: fewer at end of file or when
	// the transport's pipe is full, never more. The data is the file's
	// at the time of the call; the descriptor is not kept.
	SpliceFile(fd int, off int64, n int) (int, error)
}

// ErrNoSplice is returned by Reply.SpliceFile when the transport cannot
// splice; the handler copies the data into AllocPayload instead.
var ErrNoSplice = errors.New("oncrpc: transport cannot splice file data")

// NewReply returns a Reply that appends to head (usually a reusable buffer
// with length zero) and takes payload buffers from alloc.
func NewReply(head []byte, alloc PayloadAllocator) Reply {
	return Reply{Head: head[:0], alloc: alloc}
}

// Reset empties r for reuse, keeping its buffers and allocator.
func (r *Reply) Reset() {
	r.Head = r.Head[:0]
	r.Payload = nil
	r.spliced = 0
	r.Tail = r.Tail[:0]
}

// CanSplice reports whether SpliceFile can work on this reply's transport.
func (r *Reply) CanSplice() bool {
	sp, ok := r.alloc.(FileSplicer)
	return ok && sp.CanSplice()
}

// SpliceFile makes up to n bytes of the regular file fd at off the reply's
// payload without copying them (see FileSplicer) and returns the count,
// which the handler then encodes in Head as the opaque's length word. It
// fails with ErrNoSplice on a transport that cannot splice; after any
// error the reply has no payload and the handler may fall back to
// AllocPayload. Spliced payloads are only for idempotent procedures: the
// duplicate request cache cannot keep them.
func (r *Reply) SpliceFile(fd int, off int64, n int) (int, error) {
	sp, ok := r.alloc.(FileSplicer)
	if !ok {
		return 0, ErrNoSplice
	}
	r.Payload = nil
	got, err := sp.SpliceFile(fd, off, n)
	if err != nil {
		r.spliced = 0
		return 0, err
	}
	r.spliced = got
	return got, nil
}

// AllocPayload returns a buffer of n bytes for bulk data; see
// PayloadAllocator.
func (r *Reply) AllocPayload(n int) []byte {
	if r.alloc == nil {
		return make([]byte, n)
	}
	return r.alloc.AllocPayload(n)
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
