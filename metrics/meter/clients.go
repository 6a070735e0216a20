package meter

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
)

// Traffic is a count of calls and the bytes they moved.
type Traffic struct {
	Calls    uint64
	BytesIn  uint64 // call bytes received
	BytesOut uint64 // reply bytes sent
}

// Add adds o to t.
func (t *Traffic) Add(o Traffic) {
	t.Calls += o.Calls
	t.BytesIn += o.BytesIn
	t.BytesOut += o.BytesOut
}

// TrafficSource is one connection's traffic so far, read at scrape time
// (the connection keeps it in counters of its own, see oncrpc's
// connection counters). Traffic must only load; it is called with the
// table's lock held.
type TrafficSource interface {
	Traffic() Traffic
}

// Client is the traffic of one client address: what its closed
// connections moved, plus what its open ones have moved so far. A
// connection adds nothing here per call; the table asks its source at
// scrape time and folds the source's total in when it closes.
type Client struct {
	Addr    netip.Addr
	retired Traffic         // closed connections; under Clients.mu
	conns   []TrafficSource // open connections; under Clients.mu
	refs    int             // connections holding it; under Clients.mu
}

// ClientSnapshot is a Client read at one time.
type ClientSnapshot struct {
	Addr                     netip.Addr
	Calls, BytesIn, BytesOut uint64
}

// Bytes is the client's traffic in both directions.
func (s ClientSnapshot) Bytes() uint64 { return s.BytesIn + s.BytesOut }

// DefaultMaxIdleClients is how many client addresses a Clients table
// remembers beyond those with connections open.
const DefaultMaxIdleClients = 1024

// Clients is a bounded table of per-address traffic. Addresses with a
// connection open are always kept; once more than MaxIdle addresses have
// none, those with the least traffic are forgotten. Readers take the top
// N by traffic (Top), so the number of series a scrape makes does not
// grow with the number of clients.
type Clients struct {
	maxIdle int

	mu        sync.Mutex
	byAddr    map[netip.Addr]*Client
	idle      int    // entries with refs == 0
	forgotten uint64 // addresses dropped from the table so far
}

// NewClients returns a table remembering up to maxIdle addresses without
// a connection (0: DefaultMaxIdleClients).
func NewClients(maxIdle int) *Clients {
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdleClients
	}
	return &Clients{maxIdle: maxIdle, byAddr: make(map[netip.Addr]*Client)}
}

// Acquire returns the entry of addr for a new connection whose traffic
// src reports. A nil table returns nil.
func (t *Clients) Acquire(addr netip.Addr, src TrafficSource) *Client {
	if t == nil {
		return nil
	}
	addr = addr.Unmap()
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byAddr[addr]
	if c == nil {
		c = &Client{Addr: addr}
		t.byAddr[addr] = c
	} else if c.refs == 0 {
		t.idle--
	}
	c.refs++
	if src != nil {
		c.conns = append(c.conns, src)
	}
	return c
}

// Release ends the hold on c of the connection src reports, whose
// traffic so far is folded into c (so a source must have counted its
// last call before it is released). When the table then remembers more
// idle addresses than its bound, it forgets the least busy eighth of
// them (at least one), so a close costs a scan only now and then.
func (t *Clients) Release(c *Client, src TrafficSource) {
	if t == nil || c == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(c.conns, src); src != nil && i >= 0 {
		c.retired.Add(src.Traffic())
		c.conns = slices.Delete(c.conns, i, i+1)
	}
	c.refs--
	if c.refs > 0 {
		return
	}
	t.idle++
	if t.idle <= t.maxIdle {
		return
	}
	idle := make([]*Client, 0, t.idle)
	for _, e := range t.byAddr {
		if e.refs == 0 {
			idle = append(idle, e)
		}
	}
	slices.SortFunc(idle, func(a, b *Client) int { return cmp.Compare(a.snapshot().Bytes(), b.snapshot().Bytes()) })
	drop := max(t.idle-t.maxIdle+t.maxIdle/8, 1)
	for _, e := range idle[:drop] {
		delete(t.byAddr, e.Addr)
	}
	t.idle -= drop
	t.forgotten += uint64(drop)
}

// snapshot adds up c's traffic; under Clients.mu.
func (c *Client) snapshot() ClientSnapshot {
	tr := c.retired
	for _, src := range c.conns {
		tr.Add(src.Traffic())
	}
	return ClientSnapshot{Addr: c.Addr, Calls: tr.Calls, BytesIn: tr.BytesIn, BytesOut: tr.BytesOut}
}

// ClientsSummary is what a scrape reads: the busiest clients and the
// size of the table.
type ClientsSummary struct {
	Top       []ClientSnapshot // by traffic, busiest first
	Known     int              // addresses in the table
	Forgotten uint64           // addresses dropped so far
}

// Top returns the n busiest addresses by bytes (ties by address, so the
// choice is stable) and the table's size.
func (t *Clients) Top(n int) ClientsSummary {
	if t == nil {
		return ClientsSummary{}
	}
	t.mu.Lock()
	all := make([]ClientSnapshot, 0, len(t.byAddr))
	for _, c := range t.byAddr {
		all = append(all, c.snapshot())
	}
	s := ClientsSummary{Known: len(t.byAddr), Forgotten: t.forgotten}
	t.mu.Unlock()
	slices.SortFunc(all, func(a, b ClientSnapshot) int {
		if c := cmp.Compare(b.Bytes(), a.Bytes()); c != 0 {
			return c
		}
		return a.Addr.Compare(b.Addr)
	})
	s.Top = all[:min(n, len(all))]
	return s
}
