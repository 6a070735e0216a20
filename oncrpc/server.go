package oncrpc

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/internal/ratelog"
	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
)

// ServerConfig bounds what one connection may cost.
type ServerConfig struct {
	// MaxRecord is the largest call record accepted over TCP; a larger one
	// is logged and its connection closed. Default DefaultMaxRecord.
	MaxRecord int
	// MaxInFlight is the number of calls one connection may have in
	// progress at once; the connection stops reading beyond it.
	// Default 64.
	MaxInFlight int
	// SpliceReads lets handlers send file data over TCP by splice(2) from
	// the page cache (Reply.CanSplice) instead of copying it through a
	// buffer. It saves the server's copies, but on loopback the kernel
	// work moves to the receiver and throughput drops (see
	// docs/performance.md), so it is off by default.
	SpliceReads bool
	// Limits caps connections and the buffers they hold; servers of one
	// process share one. Default: a Limits of the server's own, with
	// default caps.
	Limits *Limits
	// IdleTimeout closes a connection that had no call in flight and
	// sent or received nothing for this long, as knfsd does (6 minutes);
	// a connection with calls in flight whose replies made no progress
	// for this long (a client that stopped reading) is closed too.
	// Default DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// Clients, when set, counts each TCP connection's calls and bytes
	// under its client address (for the metrics' busiest clients).
	Clients *meter.Clients
}

// DefaultIdleTimeout is knfsd's idle timeout for TCP connections.
const DefaultIdleTimeout = 6 * time.Minute

// DefaultMaxRecord fits a 1 MiB WRITE with its headers.
const DefaultMaxRecord = 1<<20 + 64<<10

func (c *ServerConfig) withDefaults() ServerConfig {
	out := *c
	if out.MaxRecord <= 0 {
		out.MaxRecord = DefaultMaxRecord
	}
	if out.MaxInFlight <= 0 {
		out.MaxInFlight = 64
	}
	if out.Limits == nil {
		out.Limits = NewLimits(LimitsConfig{})
	}
	if out.IdleTimeout == 0 {
		out.IdleTimeout = DefaultIdleTimeout
	}
	return out
}

// Server runs the TCP and UDP transports for one dispatcher. Other
// transports (rpcrdma) use the same Dispatcher directly.
type Server struct {
	disp *Dispatcher
	log  *zap.Logger
	cfg  ServerConfig

	// life tracks the TCP listeners, UDP sockets and TCP connections.
	life *Lifecycle[*tcpConn]

	acceptLog *ratelog.Limiter // accept failures
	idleLog   *ratelog.Limiter // idle and stalled connections closed
	sweepOnce sync.Once

	pipesOnce sync.Once
	pipes     *pipePool // free pipes for spliced READ payloads
}

// ErrServerClosed is returned by Serve* after Shutdown.
var ErrServerClosed = errors.New("oncrpc: server closed")

// NewServer returns a server for disp.
func NewServer(log *zap.Logger, disp *Dispatcher, cfg ServerConfig) *Server {
	return &Server{
		disp: disp, log: log, cfg: cfg.withDefaults(), life: NewLifecycle[*tcpConn](),
		acceptLog: ratelog.New(time.Second), idleLog: ratelog.New(time.Second),
	}
}

// Dispatcher returns the server's dispatcher.
func (s *Server) Dispatcher() *Dispatcher { return s.disp }

// ServeTCP accepts connections on l until Shutdown and serves RPC over
// record marking on each. A connection over a cap of ServerConfig.Limits
// is closed at once. Temporary accept failures (out of descriptors or
// memory) are logged and waited out with a back-off from 5 ms doubling to
// 1 s; only a failure of the listener itself ends ServeTCP.
func (s *Server) ServeTCP(l net.Listener) error {
	if !s.life.Listen(l) {
		return ErrServerClosed
	}
	defer s.life.Unlisten(l)
	s.startSweeper()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			closing := s.life.Closing()
			if !closing && temporaryAcceptError(err) {
				backoff = nextAcceptBackoff(backoff)
				s.acceptLog.Warn(s.log, "accept failed; retrying", zap.Stringer("listener", l.Addr()),
					zap.Error(err), zap.Duration("backoff", backoff))
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.life.Closed():
					t.Stop()
				}
				continue
			}
			if closing {
				return ErrServerClosed
			}
			return err
		}
		backoff = 0
		remote := addrPort(c.RemoteAddr()).Addr()
		if !s.cfg.Limits.Admit(s.log, "tcp", remote) {
			c.Close()
			continue
		}
		s.startConn(c, remote)
	}
}

func (s *Server) startConn(c net.Conn, remote netip.Addr) {
	tc := newTCPConn(s, c)
	s.disp.OpenConn(&tc.peer, s.cfg.Clients)
	leave := func() {
		s.disp.CloseConn(&tc.peer)
		s.cfg.Limits.Leave(remote)
	}
	if !s.life.Add(tc) {
		c.Close()
		leave()
		return
	}
	if !s.life.Go(func() {
		tc.serve()
		s.life.Remove(tc)
		leave()
	}) {
		s.life.Remove(tc)
		c.Close()
		leave()
	}
}

// Drain implements ServedConn: the reader stops, calls in flight finish
// and are answered, then the connection closes.
func (tc *tcpConn) Drain() { tc.stopReading() }

// Abort implements ServedConn.
func (tc *tcpConn) Abort() { tc.c.Close() }

// Shutdown stops accepting, lets every call in progress finish and its
// reply go out, then closes the connections. If ctx ends first, it closes
// everything at once and cancels the calls' contexts.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.life.Shutdown(ctx)
	if s.cfg.SpliceReads {
		if p := s.splicePipes(); p != nil {
			p.closeAll()
		}
	}
	return err
}

// splicePipes returns the server's pool of pipes for spliced payloads,
// made on first use; nil where splicing is unavailable.
func (s *Server) splicePipes() *pipePool {
	s.pipesOnce.Do(func() { s.pipes = newPipePool(s.cfg.MaxInFlight, s.log) })
	return s.pipes
}
