package verbs

import "context"

// Provider creates RDMA connections. The two implementations are real
// RDMA through librdmacm and libibverbs (NewRDMAProvider) and the
// in-process software fabric (verbs/softfabric).
type Provider interface {
	// Listen binds a connection-manager listener (rdma_bind_addr +
	// rdma_listen) to addr, "host:port".
	Listen(addr string) (Listener, error)
	// Dial resolves addr, creates the protection domain, completion queues
	// and RC queue pair, calls p.Prepare (post Receives there), sends the
	// connection request (rdma_connect) and waits until the connection is
	// established or rejected. A rejection is a *RejectError.
	Dial(ctx context.Context, addr string, p ConnParams) (Conn, error)
}

// Listener yields incoming connection requests (RDMA_CM_EVENT_CONNECT_REQUEST).
type Listener interface {
	// GetRequest waits for the next connection request. Every request
	// returned must be Accepted or Rejected. Once the device the
	// listener is bound to is removed (RDMA_CM_EVENT_DEVICE_REMOVAL on
	// the listening id) it returns a *DeviceRemovedError: the listener
	// will never yield another request and must be Closed, which frees
	// the listening id so the device can go; Listen again when the
	// address is back. A listener on the wildcard address is bound to no
	// device and sees no removal (the connection manager listens on a
	// device that comes back by itself).
	GetRequest(ctx context.Context) (ConnRequest, error)
	// Addr is the address the listener is bound to.
	Addr() string
	// Close stops listening and rejects requests not yet returned by
	// GetRequest. Established connections are not affected.
	Close() error
}

// ConnRequest is a connection request that has not been answered yet.
//
// The server calls Conn to create the queue pair, posts its Receives on it,
// and only then calls Accept: the Linux client connects with
// rnr_retry_count=0, so a Send that arrives before a Receive is posted kills
// the connection.
type ConnRequest interface {
	// PrivateData is the private data of the CM REQ. The connection
	// manager may zero-pad it to its fixed size (56 bytes for RDMA_PS_TCP).
	PrivateData() []byte
	RemoteAddr() string
	LocalAddr() string
	// InitiatorDepth and ResponderResources are the peer's offered values
	// (the RDMA Reads it will issue / accept at a time).
	InitiatorDepth() uint8
	ResponderResources() uint8
	// Conn creates the protection domain, completion queues and queue pair
	// for this request (zero Config fields take defaults). It may be called
	// once; Receives may be posted on the result at once, Sends only after
	// Accept returns.
	Conn(cfg Config) (Conn, error)
	// Accept answers with a CM REP (rdma_accept) carrying privateData (at
	// most MaxRepPrivateData bytes) and waits until the connection is
	// established. Conn must have been called first. initiatorDepth (the
	// RDMA Reads this side issues at a time: at most the peer's
	// ResponderResources) and responderResources are cut to what the
	// device supports.
	Accept(privateData []byte, initiatorDepth, responderResources uint8) error
	// Reject answers with a CM REJ carrying privateData (at most
	// MaxRejPrivateData bytes) and closes the Conn if one was created. MRs
	// registered on it must still be Deregistered.
	Reject(privateData []byte) error
}

// Private data limits of the RDMA_PS_TCP port space (IB CM message sizes
// minus the rdma_cm header).
const (
	MaxReqPrivateData = 56
	MaxRepPrivateData = 196
	MaxRejPrivateData = 148
)

// Config sizes a connection's queues. Zero fields take the defaults below.
type Config struct {
	MaxSendWR  int // send queue depth (default 256)
	MaxRecvWR  int // receive queue depth (default 256)
	MaxSendSGE int // scatter/gather entries per send-queue WR (default 4)
	MaxRecvSGE int // scatter/gather entries per Receive WR (default 1)
	// CQDepth is the depth of each of the two completion queues (send and
	// receive). Default: MaxSendWR+1 and MaxRecvWR+1 respectively; a
	// smaller non-zero value is an error. A completion queue that overflows
	// because completions are not polled kills the connection
	// (IBV_EVENT_CQ_ERR), as on hardware.
	CQDepth int
	// AckTimeout, when not 0, is the local ACK timeout exponent the queue
	// pair gets instead of the connection manager's (IB spec 9.7.6.1.3:
	// a request not acknowledged within 4.096 µs × 2^AckTimeout is resent;
	// 1..31): how long a request whose last packet was lost waits before
	// it is resent, when no later packet reveals the gap. On RoCE the
	// connection manager derives it from a fixed packet lifetime (exponent
	// 19, 2.1 s, on Linux 6.1). Set with rdma_set_option
	// (RDMA_OPTION_ID_ACK_TIMEOUT) before the connection is made; a kernel
	// that refuses it leaves the manager's value, which QueryQP shows. The
	// software fabric loses no packets and has no such timer.
	AckTimeout uint8
	// LazySend leaves the send completion queue unarmed while Poll
	// waits, unless a WatchSend holds it armed: Poll then sleeps until a
	// Receive completes (or the connection dies), and the send-queue
	// completions made meanwhile come with the next Poll that returns.
	// For a consumer that needs a send-queue completion promptly only
	// now and then (an RDMA Read it waits for, room in the send queue):
	// a lone call then costs one completion event instead of two. Send
	// completions are still polled first whenever Poll polls. Without
	// LazySend, Poll wakes for completions of either queue.
	LazySend bool
}

// Default queue sizes.
const (
	DefaultMaxSendWR  = 256
	DefaultMaxRecvWR  = 256
	DefaultMaxSendSGE = 4
	DefaultMaxRecvSGE = 1
)

// WithDefaults fills zero fields and checks the result (what every
// provider does with the Config it is given).
func (c Config) WithDefaults() (Config, error) {
	if c.MaxSendWR == 0 {
		c.MaxSendWR = DefaultMaxSendWR
	}
	if c.MaxRecvWR == 0 {
		c.MaxRecvWR = DefaultMaxRecvWR
	}
	if c.MaxSendSGE == 0 {
		c.MaxSendSGE = DefaultMaxSendSGE
	}
	if c.MaxRecvSGE == 0 {
		c.MaxRecvSGE = DefaultMaxRecvSGE
	}
	if c.MaxSendWR < 0 || c.MaxRecvWR < 0 || c.MaxSendSGE < 0 || c.MaxRecvSGE < 0 || c.CQDepth < 0 || c.AckTimeout > 31 {
		return c, errInvalidConfig
	}
	if c.CQDepth != 0 && (c.CQDepth < c.MaxSendWR+1 || c.CQDepth < c.MaxRecvWR+1) {
		return c, errInvalidConfig
	}
	return c, nil
}

// SendCQDepth and RecvCQDepth are the depths of the two completion
// queues a provider gives a connection.
func (c Config) SendCQDepth() int {
	if c.CQDepth != 0 {
		return c.CQDepth
	}
	return c.MaxSendWR + 1
}

func (c Config) RecvCQDepth() int {
	if c.CQDepth != 0 {
		return c.CQDepth
	}
	return c.MaxRecvWR + 1
}

// ConnParams are the active side's connection parameters (rdma_conn_param).
type ConnParams struct {
	Config Config
	// PrivateData goes in the CM REQ (at most MaxReqPrivateData bytes).
	PrivateData []byte
	// InitiatorDepth is the number of RDMA Reads this side issues at a
	// time; ResponderResources the number it accepts from the peer.
	InitiatorDepth     uint8
	ResponderResources uint8
	// LocalAddr, "host:port", binds the source address (port 0: any);
	// empty lets the provider choose. The fabric reports it as the
	// connection's address on both sides.
	LocalAddr string
	// RetryCount and RNRRetryCount go to the CM REQ (real RDMA only).
	// RNRRetryCount is how often the peer retries a Send that finds no
	// Receive posted here; the Linux client uses 0. The software fabric
	// always behaves as with 0 in both directions.
	RetryCount    uint8
	RNRRetryCount uint8
	// Prepare, if non-nil, runs once the queue pair exists and before the
	// connection request is sent: register memory and post Receives here.
	// It may also rewrite the bytes of PrivateData in place (same length),
	// e.g. to offer only what the device turned out to support: the
	// request carries them as they are when Prepare returns. An error
	// aborts Dial.
	Prepare func(Conn) error
}

// Conn is one side of a reliable-connected (RC) queue pair with its own
// protection domain and completion queues.
//
// PostSend, PostRecv and Register may be called from any goroutine. Poll
// must be called by one goroutine at a time.
type Conn interface {
	// Register allocates size bytes outside the Go heap and registers
	// them in this connection's protection domain (ibv_reg_mr) with the
	// given access. The MR outlives the Conn and must be Deregistered.
	Register(size int, access Access) (*MR, error)
	// AllocWindow allocates a type 2 memory window in this connection's
	// protection domain (ibv_alloc_mw). It starts unbound; see Window.
	// Like an MR it outlives the Conn and must be Freed.
	AllocWindow() (*Window, error)

	// PostRecv posts a chain of Receive WRs (ibv_post_recv). Allowed
	// before the connection is established.
	PostRecv(wrs []RecvWR) error
	// PostSend posts a chain of send-queue WRs (ibv_post_send): Send,
	// Send-With-Invalidate, RDMA Write, RDMA Read. They execute in order.
	// Allowed only once the connection is established.
	PostSend(wrs []SendWR) error

	// Poll fills wcs with completions from both completion queues. It
	// blocks until at least one completion is available, ctx is done, or
	// the connection is dead and every outstanding WR has been flushed; in
	// the last case it returns (0, Err()). After Close it returns
	// ErrClosed.
	Poll(ctx context.Context, wcs []Completion) (int, error)
	// TryPoll is Poll without waiting: it returns (0, nil) when no
	// completion is ready and the connection is alive.
	TryPoll(wcs []Completion) (int, error)
	// WatchSend makes a Poll of a Config.LazySend connection wake for
	// send-queue completions too, a Poll already waiting included, until
	// the matching UnwatchSend. Calls nest and may come from any
	// goroutine. Without LazySend both do nothing.
	WatchSend()
	UnwatchSend()

	// PeerPrivateData is the private data the peer sent: the REP's on the
	// active side, the REQ's on the passive side (possibly zero-padded by
	// the CM).
	PeerPrivateData() []byte
	LocalAddr() string
	RemoteAddr() string
	// Config is the effective queue configuration.
	Config() Config

	// Done is closed when the connection dies: the peer disconnected
	// (RDMA_CM_EVENT_DISCONNECTED), Disconnect or Close was called, a
	// work request completed in error, or a fatal async event arrived.
	// Err then returns the reason; it is nil before.
	Done() <-chan struct{}
	Err() error

	// Disconnect starts teardown (rdma_disconnect): the QP moves to the
	// error state, every outstanding WR completes with IBV_WC_WR_FLUSH_ERR
	// and the peer sees a disconnect. It does not wait.
	Disconnect() error
	// Close disconnects if needed and destroys the QP, CQs and CM id
	// (the real provider destroys the CM id once the peer has answered
	// the disconnect: see the package doc, "Errors and teardown").
	// Completions not yet polled are discarded; every posted buffer is
	// released to the caller when Close returns.
	Close() error
}
