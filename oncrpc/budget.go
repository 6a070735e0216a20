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
//     (budget / connections) drops its buffers;
//   - the reader of such a connection takes no new call while one is
//     still in flight, so a client that stops reading its replies stalls
//     only itself;
//   - a payload buffer grows only within the budget, within the
//     connection's share, or for the connection's one exempt call, so
//     every connection can always finish a call: a fresh client is
//     served whatever the others hold.
// Hence the buffers of all connections stay under the budget plus one
// call (a record of MaxRecord and a payload) per connection.

// throttleWait is how long a throttled reader or worker sleeps before it
// looks at the budget again when its own connection freed nothing.
const throttleWait = 10 * time.Millisecond

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
		select {
		case tc.wake <- struct{}{}:
		default:
		}
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

// admitCall runs in the reader, holding slot, when the budget is
// exceeded: it waits while the connection is over its share and still
// has calls in flight (whose replies, once written, free its buffers). It
// returns false when the connection stops.
func (tc *tcpConn) admitCall(slot *tcpSlot) bool {
	logged := false
	for tc.overShare() && tc.callsInFlight() > 0 {
		tc.drop(slot)
		tc.trimFree()
		if !tc.overShare() {
			break
		}
		if !logged {
			logged = true
			tc.limits.throttleLog.Info(tc.log, "connection over its buffer share; not reading calls until replies go out",
				zap.Int64("held", tc.held.Load()), zap.Int64("share", tc.limits.share()),
				zap.Int64("budget", tc.limits.cfg.BufferBudget), zap.Int64("used", tc.limits.bufUsed.Load()))
		}
		t := time.NewTimer(throttleWait)
		select {
		case <-tc.wake:
		case <-t.C:
		case <-tc.stopped:
			t.Stop()
			return false
		}
		t.Stop()
	}
	return true
}

// waitToGrow runs in a worker before the slot's payload buffer grows by n
// bytes: it returns at once within the budget or the connection's share,
// or when the slot can be the connection's exempt call; else it waits for
// buffers to be freed. Once the connection's context ends it returns
// regardless (the reply will not be sent).
func (tc *tcpConn) waitToGrow(s *tcpSlot, n int64) {
	l := tc.limits
	mayGrow := func() bool {
		return l.bufUsed.Load()+n <= l.cfg.BufferBudget || tc.held.Load()+n <= l.share() ||
			tc.exempt.CompareAndSwap(nil, s) || tc.exempt.Load() == s
	}
	if mayGrow() {
		return
	}
	tc.trimFree()
	for !mayGrow() {
		t := time.NewTimer(throttleWait)
		select {
		case <-tc.wake:
		case <-t.C:
		case <-tc.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// releaseExempt ends s's exemption, if it has it, when its reply is out.
func (tc *tcpConn) releaseExempt(s *tcpSlot) {
	if tc.exempt.Load() == s {
		tc.exempt.Store(nil)
		select {
		case tc.wake <- struct{}{}:
		default:
		}
	}
}
