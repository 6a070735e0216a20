// credits.go: the client's side of RPC-over-RDMA credits (RFC 8166
// section 3.3.1): at most as many calls in flight as the server's latest
// grant, which proto.Grant keeps at least 1.
//
// Buffer ownership: nothing here owns buffers.

package client

import (
	"context"
	"sync"
)

// clientCredits tracks the client side: at most limit calls in flight,
// where limit follows the server's latest grant (at least 1, at most the
// Receives the client keeps posted).
type clientCredits struct {
	mu       sync.Mutex
	limit    int
	max      int
	inFlight int
	dead     bool
	// ignoreGrant keeps limit at max whatever the server grants
	// (Config.IgnoreGrant).
	ignoreGrant bool
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

// ignoringGrant returns credits that stay at max whatever the server
// grants (Config.IgnoreGrant).
func ignoringGrant(max int) *clientCredits {
	c := newClientCredits(max)
	c.limit, c.ignoreGrant = max, true
	return c
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
	if c.ignoreGrant {
		g = c.max
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
