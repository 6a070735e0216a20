// credits.go: RPC-over-RDMA credits (RFC 8166 section 3.3.1) and the
// send-queue budget.
//
// Buffer ownership: nothing here owns buffers. The credit grant is fixed
// per connection: the server keeps exactly Credits Receives posted (the
// receive path re-posts a fresh buffer as soon as one is consumed, before
// the call is processed), so every reply, RDMA_ERROR included, may grant
// Credits. The send-queue budget counts work requests posted and not yet
// retired; a worker reserves a whole chain before posting it and the
// completion path returns it.

package rpcrdma

import "sync"

// sqBudget is a counting semaphore over send-queue slots. Waiters give up
// when the connection dies.
type sqBudget struct {
	mu    sync.Mutex
	cond  sync.Cond
	avail int
	dead  bool
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
	for b.avail < n && !b.dead {
		b.cond.Wait()
	}
	if b.dead {
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

// clientCredits tracks the client side: at most limit calls in flight,
// where limit follows the server's latest grant (at least 1, at most the
// Receives the client keeps posted).
type clientCredits struct {
	mu       sync.Mutex
	cond     sync.Cond
	limit    int
	max      int
	inFlight int
	dead     bool
}

func newClientCredits(max int) *clientCredits {
	c := &clientCredits{limit: 1, max: max}
	c.cond.L = &c.mu
	return c
}

// update applies a grant from a reply header.
func (c *clientCredits) update(grant uint32) {
	g := int(grant)
	if g < 1 {
		g = 1 // a grant of 0 is read as 1 (RFC 8166 section 3.3.1)
	}
	if g > c.max {
		g = c.max
	}
	c.mu.Lock()
	grew := g > c.limit
	c.limit = g
	c.mu.Unlock()
	if grew {
		c.cond.Broadcast()
	}
}

func (c *clientCredits) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.inFlight >= c.limit && !c.dead {
		c.cond.Wait()
	}
	if c.dead {
		return false
	}
	c.inFlight++
	return true
}

func (c *clientCredits) release() {
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	c.cond.Signal()
}

func (c *clientCredits) kill() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
	c.cond.Broadcast()
}
