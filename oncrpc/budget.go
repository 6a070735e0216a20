package oncrpc

import (
	"time"

	"go.uber.org/zap"
)

// budget.go: the TCP side of the buffer budget (LimitsConfig.BufferBudget).
//
// Every call slot's record, head, tail and payload buffers are charged,
// by capacity, to their connection (tcpConn.held) and to the process
// (Limits.bufUsed): by the reader once a record is in, by the worker
// after the handler ran (and before a payload buffer grows), and back
// when buffers are dropped. Within the budget nothing changes: slots keep
// their buffers for the next call and steady state allocates nothing.
// Over it:
//   - a slot coming back to a connection that holds more than its share
//     (budget / connections) drops its buffers, and so does the exempt
//     slot (below);
//   - the reader of a connection takes no new call while one is still
//     in flight and the connection is over its share (counting
//     admitUnit per call in flight) or has a call waiting for buffers,
//     so a client that stops reading its replies stalls only itself;
//   - a payload buffer grows only within the budget or for the
//     connection's one exempt call, so every connection can always
//     finish a call: a fresh client is served whatever the others hold.
// Hence the buffers of all connections stay under the budget plus one
// call (a record of MaxRecord and a payload) per connection.

// throttleWait is how often one waiter per connection (the poller)
// looks at the budget again for room freed by other connections; the
// other waiters sleep until their own connection frees something.
const throttleWait = 20 * time.Millisecond

// charge brings the slot's charged bytes up to date with its buffers.
func (tc *tcpConn) charge(s *tcpSlot) {
	n := int64(cap(s.record) + cap(s.payload) + cap(s.reply.Head) + cap(s.reply.Tail))
	d := n - s.charged
	if d == 0 {
		return
	}
	s.charged = n
	tc.held.Add(d)
	tc.limits.bufUsed.Add(d)
	if d < 0 {
		tc.broadcast()
	}
}

// drop lets the slot's buffers go and uncharges them. The caller owns the
// slot (or holds the free list's lock while the slot is on it).
func (tc *tcpConn) drop(s *tcpSlot) {
	s.record, s.payload, s.reply.Head, s.reply.Tail = nil, nil, nil, nil
	tc.charge(s)
}

// overShare reports whether the connection holds more than its share of
// an exceeded budget.
func (tc *tcpConn) overShare() bool {
	return tc.limits.overBudget() && tc.held.Load() > tc.limits.share()
}

// trimFree drops the buffers of the connection's idle slots.
func (tc *tcpConn) trimFree() {
	tc.free.mu.Lock()
	for _, s := range tc.free.slots {
		if s.charged != 0 {
			tc.drop(s)
		}
	}
	tc.free.mu.Unlock()
}

// releaseAll uncharges every slot when the connection has ended and all
// slots are back on the free list.
func (tc *tcpConn) releaseAll() { tc.trimFree() }

// callsInFlight is the number of calls handed to workers or the writer
// and not yet back; the reader's slot does not count.
func (tc *tcpConn) callsInFlight() int {
	return max(tc.free.size()-len(tc.free.avail)-1, 0)
}

// admitUnit is what a call admitted over the budget is assumed to cost
// until its buffers are charged: calls arrive in bursts faster than
// workers charge them.
const admitUnit = 64 << 10

// admitCall runs in the reader, holding slot, when the budget is
// exceeded: while the connection has calls in flight (whose replies,
// once written, free its buffers) it waits as long as one of them waits
// for buffers or the connection's buffers and admitUnit per call in
// flight exceed its share. It returns false when the connection stops.
func (tc *tcpConn) admitCall(slot *tcpSlot) bool {
	admitted := func() bool {
		n := tc.callsInFlight()
		if n == 0 || !tc.limits.overBudget() {
			return true
		}
		tc.wakeMu.Lock()
		waiting := tc.waiters > 0
		tc.wakeMu.Unlock()
		return !waiting && tc.held.Load()+int64(n)*admitUnit <= tc.limits.share()
	}
	if admitted() {
		return true
	}
	tc.drop(slot)
	tc.trimFree()
	if admitted() {
		return true
	}
	tc.limits.throttleLog.Info(tc.log, "connection over its buffer share; not reading calls until replies go out",
		zap.Int64("held", tc.held.Load()), zap.Int64("share", tc.limits.share()),
		zap.Int64("budget", tc.limits.cfg.BufferBudget), zap.Int64("used", tc.limits.bufUsed.Load()))
	return tc.waitUntil(admitted, tc.stopped)
}

// waitToGrow runs in a worker before the slot's payload buffer grows by n
// bytes and charges them: at once when they fit in the budget or when
// the slot can be the connection's exempt call; else once buffers were
// freed. Once the connection's context ends
// it charges them regardless (the reply will not be sent).
func (tc *tcpConn) waitToGrow(s *tcpSlot, n int64) {
	if !tc.reserve(s, n) {
		tc.trimFree()
		if !tc.waitUntil(func() bool { return tc.reserve(s, n) }, tc.ctx.Done()) {
			tc.held.Add(n)
			tc.limits.bufUsed.Add(n)
		}
	}
	// The buffer about to be made is charged already.
	s.charged += n
}

// reserve charges n bytes to the connection and the budget if they fit
// in the budget or are for the connection's exempt call. (Not the share:
// shares are computed with the connections of the moment, and early
// connections would keep the large shares they got.)
func (tc *tcpConn) reserve(s *tcpSlot, n int64) bool {
	l := tc.limits
	for u := l.bufUsed.Load(); u+n <= l.cfg.BufferBudget; u = l.bufUsed.Load() {
		if l.bufUsed.CompareAndSwap(u, u+n) {
			tc.held.Add(n)
			return true
		}
	}
	if tc.exempt.CompareAndSwap(nil, s) || tc.exempt.Load() == s {
		tc.held.Add(n)
		l.bufUsed.Add(n)
		return true
	}
	return false
}

// waitUntil waits until ok() holds (true) or done closes (false). The
// waiters of a connection sleep until it frees buffers (broadcast); one
// of them, the poller, also wakes every throttleWait for room that other
// connections freed.
func (tc *tcpConn) waitUntil(ok func() bool, done <-chan struct{}) bool {
	for {
		tc.wakeMu.Lock()
		ch := tc.wakeCh
		tc.waiters++
		tc.wakeMu.Unlock()
		if ok() {
			tc.unwait()
			return true
		}
		poller := tc.poller.CompareAndSwap(false, true)
		var tick <-chan time.Time
		var t *time.Timer
		if poller {
			t = time.NewTimer(throttleWait)
			tick = t.C
		}
		stop := false
		select {
		case <-ch:
		case <-tick:
		case <-done:
			stop = true
		}
		if poller {
			t.Stop()
			tc.poller.Store(false)
		}
		tc.unwait()
		if stop {
			if poller {
				tc.broadcast()
			}
			return false
		}
		if poller && ok() {
			tc.broadcast() // another waiter takes over polling
			return true
		}
	}
}

func (tc *tcpConn) unwait() {
	tc.wakeMu.Lock()
	tc.waiters--
	tc.wakeMu.Unlock()
}

// broadcast wakes every waiter of the connection.
func (tc *tcpConn) broadcast() {
	tc.wakeMu.Lock()
	if tc.waiters > 0 {
		close(tc.wakeCh)
		tc.wakeCh = make(chan struct{})
	}
	tc.wakeMu.Unlock()
}

// releaseExempt ends s's exemption, if it has it, when its reply is out,
// and reports whether it had it: an exempt slot grew past the budget, so
// its caller drops its buffers.
func (tc *tcpConn) releaseExempt(s *tcpSlot) bool {
	if tc.exempt.Load() != s {
		return false
	}
	tc.exempt.Store(nil)
	tc.broadcast()
	return true
}
