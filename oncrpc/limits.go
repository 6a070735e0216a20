package oncrpc

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/internal/ratelog"
)

// LimitsConfig sets what all connections of a process may cost together.
// Zero fields take defaults; negative counts mean no cap.
type LimitsConfig struct {
	// MaxConns caps connections across every transport sharing the
	// Limits (NFS, MOUNT and rpcbind over TCP, RPC-over-RDMA). Default
	// DefaultMaxConns().
	MaxConns int
	// MaxConnsPerClient caps connections from one client IP address.
	// Default DefaultMaxConnsPerClient.
	MaxConnsPerClient int
	// BufferBudget is the number of bytes of call record and reply
	// buffers that TCP connections hold together before a connection
	// over its share stops taking calls. Default DefaultBufferBudget.
	BufferBudget int64
}

// Defaults for LimitsConfig.
const (
	// DefaultMaxConnsPerClient leaves room for nconnect=16 mounts of
	// several exports from one host.
	DefaultMaxConnsPerClient = 128
	// maxConnsCeiling bounds DefaultMaxConns.
	maxConnsCeiling = 4096
	// DefaultBufferBudget is 1 GiB.
	DefaultBufferBudget = 1 << 30
)

// DefaultMaxConns is half the process's descriptor limit (the other half
// is for files, the open-file cache and the listeners), at most 4096 and
// at least 16.
func DefaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return maxConnsCeiling
	}
	return int(min(max(rl.Cur/2, 16), maxConnsCeiling))
}

func (c LimitsConfig) withDefaults() LimitsConfig {
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns()
	}
	if c.MaxConnsPerClient == 0 {
		c.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if c.BufferBudget <= 0 {
		c.BufferBudget = DefaultBufferBudget
	}
	return c
}

// Limits is the connection table and buffer budget that every server of
// a process shares: oncrpc.Server (TCP) and rpcrdma.Server take the same
// *Limits so the caps count all their connections. It is safe for
// concurrent use.
type Limits struct {
	cfg LimitsConfig

	mu        sync.Mutex
	total     int
	perClient map[netip.Addr]int
	conns     atomic.Int64 // == total, readable without mu

	// bufUsed is the bytes of record and reply buffers TCP connections
	// hold (charged per call slot, see tcpConn.charge).
	bufUsed atomic.Int64

	refusedLog  *ratelog.Limiter // connections refused
	throttleLog *ratelog.Limiter // connections over their buffer share
}

// NewLimits returns limits for cfg.
func NewLimits(cfg LimitsConfig) *Limits {
	return &Limits{
		cfg:         cfg.withDefaults(),
		perClient:   make(map[netip.Addr]int),
		refusedLog:  ratelog.New(time.Second),
		throttleLog: ratelog.New(time.Second),
	}
}

// Config returns the effective configuration (defaults filled in).
func (l *Limits) Config() LimitsConfig { return l.cfg }

// Conns returns the number of connections admitted and not yet left.
func (l *Limits) Conns() int { return int(l.conns.Load()) }

// BufferBytes returns the bytes of TCP record and reply buffers held now.
func (l *Limits) BufferBytes() int64 { return l.bufUsed.Load() }

// Admit counts a new connection from remote, or refuses it when a cap is
// reached, logging the refusal (at most one line a second, with the
// number left out). The caller closes a refused connection at once and
// calls Leave for an admitted one when it ends.
func (l *Limits) Admit(log *zap.Logger, transport string, remote netip.Addr) bool {
	remote = remote.Unmap()
	l.mu.Lock()
	total, mine := l.total, l.perClient[remote]
	ok := (l.cfg.MaxConns < 0 || total < l.cfg.MaxConns) &&
		(l.cfg.MaxConnsPerClient < 0 || mine < l.cfg.MaxConnsPerClient)
	if ok {
		l.total++
		l.perClient[remote]++
		l.conns.Store(int64(l.total))
	}
	l.mu.Unlock()
	if !ok {
		l.refusedLog.Warn(log, "connection refused: limit reached",
			zap.String("transport", transport), zap.Stringer("client", remote),
			zap.Int("connections", total), zap.Int("max_connections", l.cfg.MaxConns),
			zap.Int("client_connections", mine), zap.Int("max_connections_per_client", l.cfg.MaxConnsPerClient))
	}
	return ok
}

// Leave uncounts a connection Admit let in.
func (l *Limits) Leave(remote netip.Addr) {
	remote = remote.Unmap()
	l.mu.Lock()
	l.total--
	if n := l.perClient[remote] - 1; n > 0 {
		l.perClient[remote] = n
	} else {
		delete(l.perClient, remote)
	}
	l.conns.Store(int64(l.total))
	l.mu.Unlock()
}

// overBudget reports whether TCP buffers exceed the budget.
func (l *Limits) overBudget() bool { return l.bufUsed.Load() > l.cfg.BufferBudget }

// share is one connection's part of the buffer budget.
func (l *Limits) share() int64 { return l.cfg.BufferBudget / max(l.conns.Load(), 1) }

// Accept back-off, as net/http's Server: 5 ms doubling to 1 s.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// nextAcceptBackoff returns the wait after another failed accept.
func nextAcceptBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return acceptBackoffMin
	}
	return min(2*d, acceptBackoffMax)
}

// temporaryAcceptError reports whether an accept failure is worth waiting
// out rather than fatal to the listener: out of descriptors (EMFILE,
// ENFILE) or memory (ENOBUFS, ENOMEM), a connection that went away while
// queued, a timeout, or anything else the error calls temporary.
func temporaryAcceptError(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}
