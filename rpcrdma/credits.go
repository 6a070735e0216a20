// credits.go: the server's RPC-over-RDMA credits (RFC 8166 section 3.3.1)
// and the send-queue budget.
//
// Buffer ownership: nothing here owns buffers. The server keeps Credits
// Receives posted (the receive path re-posts a fresh buffer as soon as one
// is consumed, before the call is processed), so a reply, RDMA_ERROR
// included, grants Credits. A Receive that could not be re-posted (the
// post failed, or no slot was free) is owed: until it is posted again
// every reply grants that many fewer (grant, proto.Grant), so the client
// never has more calls in flight than Receives are posted for it; a Send
// completion that frees a slot posts an owed Receive (postOwed). The
// send-queue budget counts work requests posted and not yet retired; a
// worker reserves a whole chain before posting it and the completion path
// returns it.

package rpcrdma

import (
	"sync"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
)

// repost runs on the completion goroutine (the one place that posts
// Receives after Accept) for each Receive consumed: it posts a free slot's
// Receive in its place, and one for each Receive still owed, while free
// slots last. A Receive that is not posted stays owed, and every reply
// grants that many fewer credits (grant): the client is never granted
// more calls than Receives are posted for it. A post that fails also
// tears the connection down (the client reconnects and retransmits)
// rather than let the client's Send meet no Receive; the replies still
// on their way out until then grant only what is posted.
func (c *conn) repost() { c.postReceives(1) }

// postOwed runs on the completion goroutine after a Send completion freed
// a slot: it posts the Receives still owed. A slot stays busy until its
// reply's Send completes, and with verbs.Config.LazySend that completion
// is reaped only when the loop polls; so the slots can all be held by
// calls in progress and by replies whose Send is not yet reaped while
// the client is within its grant (rxe acknowledges a Send well after the
// client has its reply, so its next calls can arrive first). Without
// this, an owed Receive waited for the next Receive to complete, which
// never comes once none is posted (the grant does not go below 1): the
// client's next Send met no Receive and the connection died.
func (c *conn) postOwed() {
	c.mu.Lock()
	owed := c.owed
	c.mu.Unlock()
	if owed > 0 {
		c.postReceives(0)
	}
}

// postReceives posts consumed Receives plus those owed, while free slots
// last. While any is owed the connection holds a WatchSend, so that the
// completion loop wakes for the Send completion that frees a slot
// (postOwed).
func (c *conn) postReceives(consumed int) {
	c.mu.Lock()
	want := consumed + c.owed
	c.mu.Unlock()
	posted := 0
	var err error
	for posted < want {
		c.mu.Lock()
		n := len(c.free)
		if n == 0 {
			c.mu.Unlock()
			break
		}
		f := c.free[n-1]
		c.free = c.free[:n-1]
		c.mu.Unlock()
		if err = c.postRecv(f); err != nil {
			c.mu.Lock()
			c.free = append(c.free, f)
			c.mu.Unlock()
			break
		}
		posted++
	}
	c.mu.Lock()
	c.owed += consumed - posted
	owed := c.owed
	noSlot := err == nil && owed > 0
	warn := noSlot && !c.warned
	c.warned = c.warned || warn
	watch := noSlot && !c.owedWatch
	unwatch := !noSlot && c.owedWatch
	c.owedWatch = noSlot
	c.mu.Unlock()
	if watch {
		c.vc.WatchSend()
	}
	if unwatch {
		c.vc.UnwatchSend()
	}
	switch {
	case err != nil:
		// Logged once, with the connection's end (failure.go).
		c.failure.record(err, "receive re-post")
		c.disconnect("a Receive could not be re-posted")
	case warn:
		// Every slot is held: by calls in progress, by replies whose
		// Send has not completed yet, or by a client past its grant.
		// Replies grant fewer credits until a freed slot takes the
		// Receive (postOwed).
		c.log.Info("no free slot to re-post a Receive; granting fewer credits until one frees",
			zap.Uint32("credits", c.credits), zap.Int("owed", owed))
	}
}

// grant is the credit value of the next reply: Credits less the Receives
// owed, at least 1 (proto.Grant; RFC 8166 section 3.3.1).
func (c *conn) grant() uint32 {
	c.mu.Lock()
	owed := c.owed
	c.mu.Unlock()
	return proto.Grant(int(c.credits)-owed, int(c.credits))
}

// sqBudget is a counting semaphore over send-queue slots. Waiters give up
// when the connection dies.
type sqBudget struct {
	mu    sync.Mutex
	cond  sync.Cond
	avail int
	dead  bool
	// watch, when set, is the connection's queue pair: a waiter holds a
	// WatchSend while it waits, since only send-queue completions give
	// room back and the completion loop does not wake for them unasked
	// (verbs.Config.LazySend).
	watch sendWatcher
}

// sendWatcher is the part of verbs.Conn that makes its completion loop
// wake for send-queue completions (verbs.Config.LazySend).
type sendWatcher interface {
	WatchSend()
	UnwatchSend()
}

func newSQBudget(n int) *sqBudget {
	b := &sqBudget{avail: n}
	b.cond.L = &b.mu
	return b
}

// acquire reserves n slots; it returns false if the connection died.
func (b *sqBudget) acquire(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.avail < n && !b.dead && b.watch != nil {
		b.watch.WatchSend()
		defer b.watch.UnwatchSend()
	}
	for b.avail < n && !b.dead {
		b.cond.Wait()
	}
	if b.dead {
		return false
	}
	b.avail -= n
	return true
}

// tryAcquire reserves n slots if they are free now.
func (b *sqBudget) tryAcquire(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead || b.avail < n {
		return false
	}
	b.avail -= n
	return true
}

func (b *sqBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.avail += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *sqBudget) kill() {
	b.mu.Lock()
	b.dead = true
	b.mu.Unlock()
	b.cond.Broadcast()
}
