// limits.go: what RPC-over-RDMA connections may cost together. Each
// connection counts against the connection caps of Config.Conns (shared
// with the TCP servers) and reserves, before its queue pair is made, the
// registered memory it cannot run without: its Receive and Send buffers
// and minBigBuffers Read/Write buffers. Its pool of Read/Write buffers
// grows beyond that only while the pinned total stays under
// Config.MaxPinned, and never beyond Config.MaxConnBuffers; past that a
// call waits for one of its connection's buffers to come back. A
// connection request over a cap is rejected (RDMA CM reject) with a
// rate-limited log line. A sweeper disconnects connections that received
// no call and had none in progress for Config.IdleTimeout.
//
// Buffer ownership: the budget only counts bytes; buffers stay owned by
// their connection's bigPool (rw.go) and are deregistered by teardown.

package rpcrdma

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/internal/ratelog"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// DefaultMaxPinned is the default cap on registered memory across
// connections: 4 GiB.
const DefaultMaxPinned = 4 << 30

// minBigBuffers is how many Read/Write buffers a connection reserves at
// set-up: enough for one call that assembles a Read chunk and sends a
// payload, so every connection can always finish a call.
const minBigBuffers = 2

// pinnedBudget counts registered bytes across connections.
type pinnedBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes if they fit under the limit.
func (b *pinnedBudget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *pinnedBudget) give(n int64) { b.used.Add(-n) }

// serverLimits is the Server's part of the limits.
type serverLimits struct {
	pinned     pinnedBudget
	refusedLog *ratelog.Limiter
	idleLog    *ratelog.Limiter

	sweepOnce sync.Once
}

func newServerLimits(cfg Config) serverLimits {
	return serverLimits{pinned: pinnedBudget{limit: cfg.MaxPinned}, refusedLog: ratelog.New(time.Second),
		idleLog: ratelog.New(time.Second)}
}

// startSweeper starts, once, the goroutine that disconnects idle
// connections: it looks at every connection an eighth of the timeout
// apart (10 ms to 30 s).
func (s *Server) startSweeper() {
	if s.cfg.IdleTimeout < 0 {
		return
	}
	s.lim.sweepOnce.Do(func() {
		s.life.Go(func() { s.sweep(min(max(s.cfg.IdleTimeout/8, 10*time.Millisecond), 30*time.Second)) })
	})
}

func (s *Server) sweep(every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var conns []*conn
	for {
		var now time.Time
		select {
		case <-s.life.Closed():
			return
		case now = <-tick.C:
		}
		conns = s.life.Conns(conns[:0])
		for _, c := range conns {
			if c.active.Swap(false) || c.lastSeen.IsZero() {
				c.lastSeen = now
				continue
			}
			c.mu.Lock()
			idle := c.busy == 0 && !c.draining
			unreaped := c.busy > 0 && !c.draining
			c.mu.Unlock()
			if unreaped {
				// No call came since the last tick: the replies still
				// counted busy may be Sends whose completions the loop
				// has not been woken for (LazySend). A watch held for
				// an instant makes a waiting Poll return them.
				c.vc.WatchSend()
				c.vc.UnwatchSend()
			}
			if idle && now.Sub(c.lastSeen) >= s.cfg.IdleTimeout {
				s.lim.idleLog.Info(c.log, "disconnecting idle connection", zap.Duration("idle", now.Sub(c.lastSeen)))
				c.drain()
			}
		}
		clear(conns)
	}
}

// Pinned returns the registered bytes reserved by connections now.
func (s *Server) Pinned() int64 { return s.lim.pinned.used.Load() }

// connCost is the registered memory a connection reserves at set-up and
// the most it may hold.
func (s *Server) connCost() (reserve, most int64) {
	nslots := int64(2 * s.cfg.Credits)
	fixed := nslots * int64(s.cfg.InlineRecv+s.cfg.InlineSend)
	return fixed + minBigBuffers*int64(s.bigSize), fixed + int64(s.bigPoolMax())*int64(s.bigSize)
}

// bigPoolMax is how many Read/Write buffers one connection may register.
func (s *Server) bigPoolMax() int {
	return max(min(s.cfg.MaxConnBuffers, 2*s.cfg.Credits+2), minBigBuffers)
}

// admit counts a connection request against the caps and reserves its
// set-up memory; it rejects the request and returns false when a cap is
// reached. The caller calls leave when the connection is gone.
func (s *Server) admit(req verbs.ConnRequest, remote netip.Addr) bool {
	if !s.cfg.Conns.Admit(s.log, "rdma", remote) {
		req.Reject(nil)
		return false
	}
	reserve, _ := s.connCost()
	if !s.lim.pinned.take(reserve) {
		s.cfg.Conns.Leave(remote)
		s.lim.refusedLog.Warn(s.log, "connection refused: pinned memory limit reached",
			zap.String("remote", req.RemoteAddr()), zap.Int64("pinned", s.lim.pinned.used.Load()),
			zap.Int64("needed", reserve), zap.Int64("max_pinned", s.lim.pinned.limit))
		req.Reject(nil)
		return false
	}
	return true
}

// leave gives back what admit took.
func (s *Server) leave(remote netip.Addr) {
	reserve, _ := s.connCost()
	s.lim.pinned.give(reserve)
	s.cfg.Conns.Leave(remote)
}

// remoteAddr is the client's IP address for the per-client cap; requests
// whose address is not an IP (the software fabric) share the zero one.
func remoteAddr(req verbs.ConnRequest) netip.Addr {
	ap, err := netip.ParseAddrPort(req.RemoteAddr())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}
