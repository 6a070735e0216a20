// transport.go: the server side's connection management: listening,
// accepting a connection request (private data, queue pair, Receives
// posted before Accept), the per-connection completion loop, and orderly
// teardown.
//
// Buffer ownership: each connection registers three kinds of memory, all
// deregistered by teardown after the queue pair is closed (Conn.Close
// returns every posted buffer): recvMR (one InlineRecv-sized Receive
// buffer per slot), sendMR (one Send buffer per slot, sized to the
// client's inline receive size), and the bigPool of Read/Write buffers.
// A slot's Receive and Send buffers belong to the provider while posted,
// to the slot's worker while the call is processed, and return to the
// free list when the reply's Send completes.

package rpcrdma

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Config configures the server transport. Zero fields take defaults.
type Config struct {
	// Credits is the credit grant and the number of Receives kept
	// posted per connection. Default 64 (as knfsd).
	Credits int
	// InlineRecv and InlineSend are the inline receive and send sizes
	// offered in the private data: 1024..65536, multiples of 1024.
	// Default 4096. The effective send size is the minimum of InlineSend
	// and the client's receive size.
	InlineRecv, InlineSend int
	// MaxRecord bounds an assembled call (inline part plus Read chunks).
	// Default 1 MiB + 64 KiB.
	MaxRecord int
	// MaxPayload bounds a Write chunk and a READ payload. Default 1 MiB.
	MaxPayload int
	// SendWithInvalidate enables Send-With-Invalidate of the call's one
	// rkey when the client's private data asks for it.
	SendWithInvalidate bool
	// Limits bounds header decoding. Default proto.DefaultLimits.
	Limits proto.Limits
	// Conns caps connections together with the TCP servers sharing it
	// (oncrpc.Limits). Default: caps of this server's own.
	Conns *oncrpc.Limits
	// MaxPinned caps registered memory across connections; a connection
	// request that cannot reserve its set-up memory under it is
	// rejected (limits.go). Default DefaultMaxPinned.
	MaxPinned int64
	// MaxConnBuffers caps the Read/Write buffers one connection
	// registers. Default and most 2 × Credits + 2.
	MaxConnBuffers int
	// ReadPiece bounds one RDMA Read: a Read chunk segment longer than
	// this is pulled with several Reads of at most ReadPiece bytes
	// (recv.go readPieces). Default DefaultReadPiece; at least 4096.
	ReadPiece int
	// ReadWindow bounds the bytes of Read chunks one connection pulls at
	// once (recv.go pullReads): a call whose Read chunks do not fit waits
	// its turn, in arrival order, before it borrows a buffer. Default
	// DefaultReadWindow; at least one call's largest record is let
	// through alone.
	ReadWindow int
	// WritePiece bounds one RDMA Write: a Write or Reply chunk segment
	// longer than this is pushed with several Writes of at most
	// WritePiece bytes (rw.go writeSegments). Default DefaultWritePiece;
	// at least 4096.
	WritePiece int
	// IdleTimeout disconnects a connection that received no call and had
	// none in progress for this long (limits.go). Default
	// oncrpc.DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// AckTimeout is each queue pair's local ACK timeout
	// (verbs.Config.AckTimeout), rounded up to the device's steps of
	// 4.096 µs × 2^n: how long an RDMA Read, Write or Send whose last
	// packet was lost waits before it is resent, when no later packet on
	// the connection shows the gap (issue 16). Default DefaultAckTimeout;
	// negative: the connection manager's (2.1 s on RoCE under Linux 6.1).
	AckTimeout time.Duration
	// Clients, when set, counts each connection's calls and bytes under
	// its client address (for the metrics' busiest clients).
	Clients *meter.Clients
	// RelistenMin and RelistenMax bound the wait between attempts to
	// listen again after the listener's device was removed (device.go):
	// the first attempt comes RelistenMin after the removal, each next
	// one after twice the wait before, at most RelistenMax. Defaults 1 s
	// and 10 s.
	RelistenMin, RelistenMax time.Duration
}

// Defaults (the ones the client shares are proto's).
const (
	DefaultCredits    = proto.DefaultCredits
	DefaultInlineSize = proto.DefaultInlineSize
	MaxInlineSize     = 65536
	DefaultMaxRecord  = proto.DefaultMaxRecord
	DefaultMaxPayload = proto.DefaultMaxPayload
	// DefaultReadPiece is knfsd's largest RDMA Read on Soft-RoCE (32
	// pages: rdma_rw over max_sge_rd 32).
	DefaultReadPiece = 128 << 10
	// DefaultReadWindow lets four 1 MiB WRITEs pull at once: more than
	// the initiator depth keeps busy (16 Reads of ReadPiece), and a burst
	// of the kernel client's WRITEs (one per credit) no longer makes the
	// connection register a buffer per call.
	DefaultReadWindow = 4 << 20
	// DefaultWritePiece bounds one RDMA Write (rw.go writeSegments):
	// 16 frames at Soft-RoCE's path MTU of 1024, so an ACK is asked for
	// every 16 frames (knfsd's Writes there are 128 KiB).
	DefaultWritePiece = 16 << 10
	// DefaultAckTimeout is exponent 16 (268 ms) instead of the
	// connection manager's 19 (2.1 s) on RoCE: a Read chunk whose last
	// response frame was lost on a lossy link waits an eighth as long;
	// with the retries the client asks for (the Linux client: 6) a peer
	// must still be silent for about 2 s before the connection fails (and
	// the client then reconnects).
	DefaultAckTimeout = 268 * time.Millisecond
	// maxInitiatorDepth bounds the RDMA Reads a connection has in
	// flight (knfsd's svcrdma uses at most 16 too).
	maxInitiatorDepth = 16
)

func (c Config) withDefaults() Config {
	if c.Credits <= 0 {
		c.Credits = proto.DefaultCredits
	}
	if c.Credits > 1024 {
		c.Credits = 1024
	}
	fix := func(n int) int {
		if n <= 0 {
			return proto.DefaultInlineSize
		}
		if n < 1024 {
			n = 1024
		}
		if n > MaxInlineSize {
			n = MaxInlineSize
		}
		return n &^ 1023
	}
	c.InlineRecv, c.InlineSend = fix(c.InlineRecv), fix(c.InlineSend)
	if c.MaxPayload <= 0 {
		c.MaxPayload = proto.DefaultMaxPayload
	}
	if c.MaxRecord <= 0 {
		c.MaxRecord = proto.DefaultMaxRecord
	}
	if c.MaxRecord < c.MaxPayload+c.InlineRecv {
		c.MaxRecord = c.MaxPayload + c.InlineRecv
	}
	if c.Limits == (proto.Limits{}) {
		c.Limits = proto.DefaultLimits
	}
	if c.Conns == nil {
		c.Conns = oncrpc.NewLimits(oncrpc.LimitsConfig{})
	}
	if c.MaxPinned <= 0 {
		c.MaxPinned = DefaultMaxPinned
	}
	if c.MaxConnBuffers <= 0 {
		c.MaxConnBuffers = 2*c.Credits + 2
	}
	if c.ReadPiece <= 0 {
		c.ReadPiece = DefaultReadPiece
	}
	c.ReadPiece = max(c.ReadPiece, 4096)
	if c.ReadWindow <= 0 {
		c.ReadWindow = DefaultReadWindow
	}
	if c.WritePiece <= 0 {
		c.WritePiece = DefaultWritePiece
	}
	c.WritePiece = max(c.WritePiece, 4096)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = oncrpc.DefaultIdleTimeout
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.RelistenMin <= 0 {
		c.RelistenMin = time.Second
	}
	if c.RelistenMax <= 0 {
		c.RelistenMax = 10 * time.Second
	}
	c.RelistenMax = max(c.RelistenMax, c.RelistenMin)
	return c
}

// Server is the RPC-over-RDMA server transport for one dispatcher.
type Server struct {
	log      *zap.Logger
	disp     *oncrpc.Dispatcher
	provider verbs.Provider
	cfg      Config
	bigSize  int

	// life tracks the listeners and connections (shared with oncrpc's
	// TCP and UDP servers).
	life *oncrpc.Lifecycle[*conn]

	lim serverLimits

	copied atomic.Int64 // bytes the transport copied (pull-up, staging), ended connections
	inline atomic.Int64 // calls run on the completion goroutine, ended connections
	// countsMu orders a connection's fold of its counters (foldCounts)
	// with the readers that add up the open ones (liveCounts).
	countsMu sync.Mutex
	// shortages counts connections dropped for want of a buffer (shortage).
	shortages atomic.Int64
	counters  serverCounters // stats.go

	removal deviceRemoval // device.go

	ackOnce sync.Once // the WARN that a queue pair kept another ACK timeout
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("rpcrdma: server closed")

// NewServer returns a server transport that dispatches calls to disp and
// makes connections through provider.
func NewServer(log *zap.Logger, disp *oncrpc.Dispatcher, provider verbs.Provider, cfg Config) *Server {
	cfg = cfg.withDefaults()
	big := cfg.MaxRecord
	if cfg.MaxPayload > big {
		big = cfg.MaxPayload
	}
	return &Server{
		log: log.With(zap.String("transport", "rdma")), disp: disp, provider: provider, cfg: cfg, lim: newServerLimits(cfg),
		bigSize: (big + 4095) &^ 4095,
		life:    oncrpc.NewLifecycle[*conn](),
	}
}

// Stats are transport counters.
type Stats struct {
	Conns int
	// CopiedBytes counts bytes the transport copied between Go memory
	// and registered buffers (inline pull-up, Reply-chunk staging,
	// assembly of inline parts around Read chunks).
	CopiedBytes int64
	// InlineCalls counts calls run on a connection's completion
	// goroutine rather than handed to a worker (runsInline).
	InlineCalls int64
	// Shortages counts connections dropped because a call could not get
	// a registered buffer (send.go, shortage).
	Shortages int64
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	l := s.liveCounts()
	return Stats{Conns: s.life.Len(), CopiedBytes: l.copied, InlineCalls: l.inline, Shortages: s.shortages.Load()}
}

// ListenAndServe listens on addr ("host:port", usually port 20049) and
// serves until Shutdown.
func (s *Server) ListenAndServe(addr string) error {
	l, err := s.provider.Listen(addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Serve accepts connection requests from l until Shutdown or an error of
// the listener. l is closed when Serve returns. When l's device is
// removed, Serve closes l and listens on l.Addr() again, with a backoff,
// until the address is back (device.go).
func (s *Server) Serve(l verbs.Listener) error {
	if !s.life.Listen(l) {
		return ErrServerClosed
	}
	s.log.Info("listening", zap.String("addr", l.Addr()))
	s.startSweeper()
	for {
		err := s.acceptFrom(l)
		l.Close()
		if s.life.Closing() {
			s.life.Unlisten(l)
			return ErrServerClosed
		}
		if !errors.Is(err, verbs.ErrDeviceRemoved) {
			s.life.Unlisten(l)
			return err
		}
		// l stays registered (closed) while Serve waits, so Shutdown
		// waits for Serve and ends the wait.
		next := s.relisten(l.Addr(), err)
		s.life.Unlisten(l)
		if next == nil {
			return ErrServerClosed
		}
		l = next
	}
}

// acceptFrom takes connection requests from l until its GetRequest fails.
func (s *Server) acceptFrom(l verbs.Listener) error {
	for {
		req, err := l.GetRequest(s.life.Context())
		if err != nil {
			return err
		}
		if !s.life.Go(func() { s.accept(req) }) {
			req.Reject(nil)
		}
	}
}

// Shutdown stops accepting, lets the calls in progress finish and their
// replies go out, then disconnects. If ctx ends first, it disconnects at
// once and cancels the calls' contexts. It returns when every connection
// has been torn down and its memory deregistered.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.life.Shutdown(ctx)
}

// Drain implements oncrpc.ServedConn: finish the calls in progress, then
// disconnect.
func (c *conn) Drain() { c.drain() }

// Abort implements oncrpc.ServedConn.
// The calls that kept the connection from draining are logged with
// what each waits for.
func (c *conn) Abort() {
	c.logBusy("shutdown timed out with calls in progress")
	c.disconnect("shutdown timed out")
}

// disconnect disconnects the queue pair, recording that this side did
// and why (failure.go).
func (c *conn) disconnect(why string) {
	c.failure.closedHere(why)
	c.vc.Disconnect()
}

// conn is one accepted connection.
type conn struct {
	srv    *Server
	vc     verbs.Conn
	log    *zap.Logger
	ctx    context.Context
	cancel context.CancelFunc
	peer   oncrpc.Peer
	// counts are the connection's per-call counters (stats.go);
	// countsFolded, under srv.countsMu, says they are in the server's.
	counts       connCounters
	countsFolded bool

	sendMax   int // bytes per Send: min(InlineSend, client's receive size)
	recvSize  int
	readPiece int // Config.ReadPiece
	// readWindow admits calls to pull their Read chunks, Config.ReadWindow
	// bytes at a time, first come first served (recv.go pullReads).
	readWindow     *semaphore.Weighted
	readWindowSize int64
	writePiece     int // Config.WritePiece
	remoteInv      bool
	credits        uint32

	recvMR, sendMR *verbs.MR
	slots          []*slot
	free           []*slot // idle slots; guarded by mu
	work           chan *slot
	workers        int
	workerWG       sync.WaitGroup
	idle           atomic.Int32 // workers waiting for work
	queued         atomic.Int32 // calls sent to work and not yet taken
	big            *bigPool
	sq             *sqBudget

	postMu sync.Mutex // orders posting against death
	dead   bool
	deadCh chan struct{}

	// active is set for each call received; the sweeper clears it and
	// owns lastSeen (limits.go).
	active   atomic.Bool
	lastSeen time.Time

	mu   sync.Mutex
	busy int // calls received and not yet released (slots held)
	// replied counts the busy slots whose reply is posted (slot.replied):
	// busy less replied is the metrics' credits in use.
	replied atomic.Int64
	// owed is the Receives consumed and not replaced (credits.go);
	// written by the completion goroutine only.
	owed     int
	draining bool
	warned   bool
	// owedWatch is set while the connection holds a WatchSend because a
	// Receive is owed (postReceives); completion goroutine only.
	owedWatch bool

	failure connFailure // how the connection died (failure.go)
}

// accept sets up a connection for req and runs it until it dies.
func (s *Server) accept(req verbs.ConnRequest) {
	remote := remoteAddr(req)
	if !s.admit(req, remote) {
		return
	}
	defer s.leave(remote)
	cfg := s.cfg
	pd, hasPD := proto.ParsePrivateData(req.PrivateData())
	log := s.log.With(zap.String("remote", req.RemoteAddr()))
	c := &conn{
		srv: s, log: log,
		sendMax:        min(cfg.InlineSend, pd.RecvSize),
		recvSize:       cfg.InlineRecv,
		readPiece:      cfg.ReadPiece,
		readWindow:     semaphore.NewWeighted(int64(cfg.ReadWindow)),
		readWindowSize: int64(cfg.ReadWindow),
		writePiece:     cfg.WritePiece,
		remoteInv:      hasPD && pd.RemoteInvalidate && cfg.SendWithInvalidate,
		credits:        uint32(cfg.Credits),
		deadCh:         make(chan struct{}),
	}
	c.peer.Transport = oncrpc.RDMA
	c.peer.Remote, _ = netip.ParseAddrPort(req.RemoteAddr())
	c.peer.Local, _ = netip.ParseAddrPort(req.LocalAddr())
	s.disp.OpenConn(&c.peer, cfg.Clients)
	defer s.disp.CloseConn(&c.peer)
	nslots := 2 * cfg.Credits
	maxWR := cfg.Limits.MaxReadSegments
	// A call's Read chain: a Read per segment plus one per ReadPiece
	// of the record the segments make up.
	maxWR += readPieces(cfg.MaxRecord, cfg.ReadPiece)
	// A reply's Writes: one per segment of its chunk plus one per
	// WritePiece of what it pushes (at most a pool buffer).
	if k := cfg.Limits.MaxChunkSegments + writePieces(s.bigSize, cfg.WritePiece); k > maxWR {
		maxWR = k
	}
	sqDepth := max(4*cfg.Credits, 2*(maxWR+1)) + 16
	var ackTimeout uint8 // 0: the connection manager's
	if cfg.AckTimeout > 0 {
		ackTimeout = verbs.AckTimeoutExponent(cfg.AckTimeout)
	}
	// LazySend: a reply's Send completion only releases its slot, which
	// can wait for the next call's Receive; whatever waits on a send-queue
	// completion holds a WatchSend (pullReads, sqBudget, bigPool, drain,
	// the idle sweep).
	vc, err := req.Conn(verbs.Config{MaxSendWR: sqDepth, MaxRecvWR: nslots, MaxSendSGE: 1, MaxRecvSGE: 1, AckTimeout: ackTimeout, LazySend: true})
	if err != nil {
		log.Warn("cannot create queue pair; rejecting", zap.Error(err))
		req.Reject(nil)
		return
	}
	c.vc = vc
	c.sq = newSQBudget(sqDepth)
	c.sq.watch = vc
	c.big = newBigPool(vc.Register, s.bigSize, s.bigPoolMax(), verbs.AccessLocalWrite)
	c.big.watch = vc
	c.big.reserve, c.big.budget = minBigBuffers, &s.lim.pinned
	// Twice what the read window lets pull at once, and a little more:
	// past that, a call waits for a buffer coming back rather than
	// register one (bigPool.eager).
	c.big.eager = 2*(cfg.ReadWindow+s.bigSize-1)/s.bigSize + 2
	fail := func(what string, err error) {
		log.Warn("connection set-up failed; rejecting", zap.String("step", what), zap.Error(err))
		req.Reject(nil)
		vc.Close()
		c.releaseMemory()
	}
	if c.recvMR, err = vc.Register(nslots*c.recvSize, verbs.AccessLocalWrite); err != nil {
		fail("register receive buffers", err)
		return
	}
	if c.sendMR, err = vc.Register(nslots*c.sendMax, verbs.AccessLocalWrite); err != nil {
		fail("register send buffers", err)
		return
	}
	c.slots = make([]*slot, nslots)
	for i := range c.slots {
		c.slots[i] = newSlot(c, i, maxWR)
	}
	// Post the Receives for the whole grant before accepting: the Linux
	// client connects with rnr_retry_count 0.
	wrs := make([]verbs.RecvWR, cfg.Credits)
	sges := make([]verbs.SGE, cfg.Credits)
	for i := range wrs {
		sges[i] = c.recvMR.SGE(i*c.recvSize, c.recvSize)
		wrs[i] = verbs.RecvWR{ID: wr.ID(wr.Recv, i), SGL: sges[i : i+1]}
	}
	if err := vc.PostRecv(wrs); err != nil {
		fail("post receives", err)
		return
	}
	for i := nslots - 1; i >= cfg.Credits; i-- {
		c.free = append(c.free, c.slots[i])
	}
	c.work = make(chan *slot, nslots)
	// The server issues the RDMA Reads (WRITE data, position-zero
	// chunks): as many at a time as the client will serve, its
	// responder resources (the Linux client offers the device's
	// max_qp_rd_atom), at most 16, as knfsd caps sc_ord. With 1, every
	// Read waits for the one before it, and on a link that loses frames
	// each loss stalls the whole connection for a retransmission
	// timeout: the kernel client's calls then time out (issue 16).
	ord := min(req.ResponderResources(), maxInitiatorDepth)
	if ord == 0 {
		ord = 1
	}
	priv := proto.PrivateData{RemoteInvalidate: cfg.SendWithInvalidate, SendSize: c.sendMax, RecvSize: c.recvSize}.Append(nil)
	c.ctx, c.cancel = context.WithCancel(s.life.Context())
	if !s.life.Add(c) {
		c.cancel()
		fail("accept", ErrServerClosed)
		return
	}
	if err := req.Accept(priv, ord, 0); err != nil {
		s.life.Remove(c)
		c.cancel()
		log.Info("accept failed", zap.Error(err))
		vc.Close()
		c.releaseMemory()
		return
	}
	// What the connection manager made of the queue pair decides how it
	// recovers from a lost packet (issue 16): logged with the
	// connection, and a WARN for an ACK timeout of 0 (never resend).
	qa, qerr := verbs.QueryQP(vc)
	switch {
	case qerr != nil:
	case qa.Timeout == 0:
		log.Warn("queue pair has no ACK timeout: a request whose last packet is lost is never resent", zap.Uint8("retry_count", qa.RetryCount))
	case ackTimeout != 0 && qa.Timeout != ackTimeout:
		s.ackOnce.Do(func() {
			log.Warn("queue pair did not take the configured ACK timeout (kernel without RDMA_OPTION_ID_ACK_TIMEOUT?)",
				zap.Duration("configured", verbs.QPAttributes{Timeout: ackTimeout}.AckTimeout()), zap.Duration("qp_ack_timeout", qa.AckTimeout()))
		})
	}
	if ce := log.Check(zap.DebugLevel, "connection established"); ce != nil {
		fields := []zap.Field{zap.Int("credits", cfg.Credits), zap.Int("inline_send", c.sendMax), zap.Int("inline_recv", c.recvSize),
			zap.Uint8("initiator_depth", ord), zap.Uint8("peer_responder_resources", req.ResponderResources()),
			zap.Bool("private_data", hasPD), zap.Bool("remote_invalidate", c.remoteInv)}
		if qerr == nil {
			fields = append(fields, zap.Duration("qp_ack_timeout", qa.AckTimeout()), zap.Uint8("qp_retry_count", qa.RetryCount),
				zap.Uint8("qp_rnr_retry", qa.RNRRetry), zap.Uint8("qp_max_rd_atomic", qa.MaxReadAtomic),
				zap.Uint8("qp_max_dest_rd_atomic", qa.MaxDestReadAtomic), zap.Int("qp_path_mtu", qa.PathMTU))
		}
		ce.Write(fields...)
	}
	s.removal.connected()
	s.counters.granted.Add(int64(c.credits))
	c.run()
	s.counters.granted.Add(-int64(c.credits))
	s.counters.disconnects.Add(1)
	s.foldCounts(c)
	s.life.Remove(c)
}

// run is the connection's completion loop: the only goroutine that polls.
func (c *conn) run() {
	c.teardown(wr.Poll(c.vc, c.complete))
}

func (c *conn) complete(wc *verbs.Completion) {
	kind, i := wr.Split(wc.WRID)
	if i >= len(c.slots) {
		c.log.Error("completion with unknown work request ID", zap.Uint64("wr_id", wc.WRID))
		return
	}
	s := c.slots[i]
	if wc.Status != verbs.WCSuccess {
		if wc.Status != verbs.WCWRFlushErr {
			c.srv.counters.qpErrors.Add(1)
		}
		c.failure.completedInError(wc, kind)
	}
	switch kind {
	case wr.Recv:
		if wc.Status != verbs.WCSuccess {
			return
		}
		c.received(s, int(wc.ByteLen))
	case wr.Read:
		select {
		case s.readDone <- wc.Status:
		default:
		}
	case wr.Send:
		if wc.Status != verbs.WCSuccess {
			c.failure.dropped.Add(1)
		}
		c.release(s)
		c.postOwed()
	}
}

// received handles a Receive completion: re-post a fresh Receive first
// (keeping the grant covered), then queue the call for a worker.
func (c *conn) received(s *slot, n int) {
	if !c.active.Load() {
		c.active.Store(true)
	}
	c.mu.Lock()
	c.busy++
	drop := c.draining
	c.mu.Unlock()
	c.counts.inlineIn.Add(uint64(n))
	// This Receive is consumed: post one in its place, and any owed.
	c.repost()
	s.recvLen = n
	s.xid.Store(0)
	s.setWait(waitHandler)
	if drop {
		// Shutting down: the client retransmits after reconnecting.
		c.release(s)
		return
	}
	if c.runsInline(s) {
		c.serveCall(s)
		return
	}
	// A worker for this call unless an idle one is left over for it
	// after the calls queued before it. Comparing idle with zero alone
	// starved a call: a worker that has taken a call but not yet
	// decremented idle still counts as idle, so the next call was queued
	// with no worker to take it while every worker was busy (held, say,
	// by slow writes) and the credits allowed more.
	if q := c.queued.Add(1); c.idle.Load() < q && c.workers < int(c.credits) {
		c.workers++
		c.workerWG.Add(1)
		go c.worker()
	}
	s.setWait(waitWorker)
	c.work <- s
}

// runsInline reports whether the call received into s may run right here,
// on the completion goroutine, instead of being handed to a worker (a
// goroutine wake-up per call, the larger part of a small call's cost under
// emulation): an RDMA_MSG without chunks (no RDMA Reads to wait for, a
// reply that is one inline Send) whose procedure the dispatcher calls
// Quick, with room in the send queue for that Send, reserved now. A Send
// that had to wait for room would wait for completions that only this
// goroutine processes.
func (c *conn) runsInline(s *slot) bool {
	rpc, plain := proto.PlainMsg(s.recv[:s.recvLen])
	if !plain || !c.srv.disp.Quick(rpc) || !c.sq.tryAcquire(1) {
		return false
	}
	s.sqHeld = 1 // released with the slot
	c.counts.inline.Add(1)
	return true
}

// drain makes the connection finish the calls it has and then disconnect.
func (c *conn) drain() {
	c.mu.Lock()
	watch := !c.draining && c.busy > 0
	c.draining = true
	idle := c.busy == 0
	c.mu.Unlock()
	if idle {
		c.disconnect("drained")
	} else if watch {
		c.vc.WatchSend() // the last release disconnects; held until then
	}
}

// postSend posts a chain unless the connection is dead.
func (c *conn) postSend(wrs []verbs.SendWR) error {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	if c.dead {
		return errDead
	}
	return c.vc.PostSend(wrs)
}

// isDead reports whether teardown has begun.
func (c *conn) isDead() bool {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	return c.dead
}

// teardown runs once Poll reports the connection dead and every posted
// WR flushed: stop the workers, close the queue pair, free the memory.
func (c *conn) teardown(err error) {
	c.postMu.Lock()
	c.dead = true
	close(c.deadCh)
	c.postMu.Unlock()
	c.sq.kill()
	c.big.mu.Lock()
	c.big.dead = true
	c.big.mu.Unlock()
	c.big.cond.Broadcast()
	c.cancel()
	close(c.work)
	c.workerWG.Wait()
	c.takeLateCompletions()
	c.vc.Close()
	c.releaseMemory()
	c.failure.log(c.log, err)
	c.srv.deviceRemoved(err, false)
}

// takeLateCompletions handles the completions of work requests posted
// after Poll had ended but before teardown marked the connection dead: a
// handler that returned in that window posted its reply on a queue pair
// in the error state, which flushed it into a completion queue nobody
// polls any more. Taken here (the workers have stopped, so nothing is
// posted after), each such call is counted as dropped and its slot
// released, and the connection's end says how many calls it really
// dropped.
func (c *conn) takeLateCompletions() {
	var wcs [16]verbs.Completion
	for {
		n, err := c.vc.TryPoll(wcs[:])
		for i := range n {
			c.complete(&wcs[i])
		}
		if n == 0 || err != nil {
			return
		}
	}
}

func (c *conn) releaseMemory() {
	if c.recvMR != nil {
		c.recvMR.Deregister()
	}
	if c.sendMR != nil {
		c.sendMR.Deregister()
	}
	c.big.close()
}

func (c *conn) worker() {
	defer c.workerWG.Done()
	for {
		c.idle.Add(1)
		s, ok := <-c.work
		c.idle.Add(-1) // before queued: never seen idle for a call it took
		c.queued.Add(-1)
		if !ok {
			return
		}
		s.setWait(waitHandler)
		c.serveCall(s)
	}
}
