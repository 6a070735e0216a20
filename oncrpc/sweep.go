package oncrpc

import (
	"time"

	"go.uber.org/zap"
)

// sweep.go: the server's sweeper, one goroutine per Server that looks at
// every TCP connection a few times per idle timeout. It closes
// connections that are idle (no call in flight, nothing read or written
// for IdleTimeout: also a record trickling in too slowly to complete)
// or stalled (calls in flight, but nothing read and no reply written for
// IdleTimeout: a client that stopped reading), and, while the buffer
// budget is more than half used, drops the buffers of connections that
// were quiet for a whole sweep. The data path pays one atomic flag per
// record and per write batch.

// sweepInterval is how often the sweeper runs: an eighth of the idle
// timeout, between 10 ms and 30 s (a second when there is no timeout).
func (s *Server) sweepInterval() time.Duration {
	if s.cfg.IdleTimeout < 0 {
		return time.Second
	}
	return min(max(s.cfg.IdleTimeout/8, 10*time.Millisecond), 30*time.Second)
}

// startSweeper starts the sweeper once.
func (s *Server) startSweeper() {
	s.sweepOnce.Do(func() { s.life.Go(s.sweep) })
}

func (s *Server) sweep() {
	tick := time.NewTicker(s.sweepInterval())
	defer tick.Stop()
	var conns []*tcpConn
	for {
		var now time.Time
		select {
		case <-s.life.Closed():
			return
		case now = <-tick.C:
		}
		conns = s.life.Conns(conns[:0])
		trim := s.cfg.Limits.bufUsed.Load() > s.cfg.Limits.cfg.BufferBudget/2
		for _, c := range conns {
			c.sweep(now, trim)
		}
		clear(conns)
	}
}

// sweep runs in the sweeper for one connection.
func (tc *tcpConn) sweep(now time.Time, trim bool) {
	read, wrote := tc.readActive.Swap(false), tc.wroteActive.Swap(false)
	if read || wrote {
		tc.lastSeen = now
		return
	}
	inFlight := tc.callsInFlight()
	if trim && inFlight == 0 {
		tc.trimFree()
	}
	idle := tc.srv.cfg.IdleTimeout
	if tc.swept || idle < 0 || now.Sub(tc.lastSeen) < idle {
		return
	}
	tc.swept = true
	if inFlight == 0 {
		tc.srv.idleLog.Info(tc.log, "closing idle connection", zap.Duration("idle", now.Sub(tc.lastSeen)))
		tc.stopReading()
		return
	}
	// Replies made no progress for the whole timeout: the client does not
	// read them. Close the socket under the writer and end the calls.
	tc.srv.idleLog.Info(tc.log, "closing stalled connection: replies not read", zap.Duration("stalled", now.Sub(tc.lastSeen)),
		zap.Int("calls_in_flight", inFlight), zap.Int64("buffer_bytes", tc.held.Load()))
	tc.stopReading()
	tc.cancel()
	tc.c.Close()
}
