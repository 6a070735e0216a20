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

import (
	"context"
	"sync"
)

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

// clientCredits tracks the client side: at most limit calls in flight,
// where limit follows the server's latest grant (at least 1, at most the
// Receives the client keeps posted).
type clientCredits struct {
	mu       sync.Mutex
	limit    int
	max      int
	inFlight int
	dead     bool
	// changed is closed (and replaced) whenever a waiter may proceed: a
	// call finished, the grant grew, or the connection died. Waiting on a
	// channel lets acquire honour its context. It is replaced only when
	// someone waits, so the steady state allocates nothing.
	changed chan struct{}
	waiters int
}

func newClientCredits(max int) *clientCredits {
	return &clientCredits{limit: 1, max: max, changed: make(chan struct{})}
}

// wakeLocked wakes every waiter; c.mu is held.
func (c *clientCredits) wakeLocked() {
	if c.waiters == 0 {
		return
	}
	close(c.changed)
	c.changed = make(chan struct{})
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
	defer c.mu.Unlock()
	grew := g > c.limit
	c.limit = g
	if grew {
		c.wakeLocked()
	}
}

// acquire waits for a credit. It returns ctx's error when ctx ends first
// and ErrClosed when the connection dies.
func (c *clientCredits) acquire(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			return ErrClosed
		}
		if c.inFlight < c.limit {
			c.inFlight++
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.waiters++
		c.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.waiters--
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (c *clientCredits) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	c.wakeLocked()
}

func (c *clientCredits) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	c.wakeLocked()
}
