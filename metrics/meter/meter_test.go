package meter

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	cases := []struct {
		d      time.Duration
		bucket int
	}{
		{-5, 0}, {0, 0}, {1, 0}, {1024, 0}, {1025, 1}, {2048, 1}, {2049, 2},
		{time.Millisecond, 10}, // 2^19 < 1e6 <= 2^20
		{BucketBound(Buckets - 1), Buckets - 1},
		{BucketBound(Buckets-1) + 1, Buckets},
		{time.Hour, Buckets},
	}
	for _, c := range cases {
		var h Histogram
		h.Observe(c.d)
		s := h.Snapshot()
		if s.Counts[c.bucket] != 1 || s.Count() != 1 {
			t.Errorf("Observe(%v): counts %v, want one in bucket %d", c.d, s.Counts, c.bucket)
		}
		if want := max(c.d, 0); s.Sum != want {
			t.Errorf("Observe(%v): sum %v, want %v", c.d, s.Sum, want)
		}
		if c.bucket < Buckets && c.d > BucketBound(c.bucket) {
			t.Errorf("%v is above its bucket's bound %v", c.d, BucketBound(c.bucket))
		}
		if c.bucket > 0 && c.d <= BucketBound(c.bucket-1) {
			t.Errorf("%v fits the bucket below, bound %v", c.d, BucketBound(c.bucket-1))
		}
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count() != 4000 {
		t.Fatalf("count %d, want 4000", s.Count())
	}
	var want time.Duration
	for i := range 4000 {
		want += time.Duration(i) * time.Microsecond
	}
	if s.Sum != want {
		t.Fatalf("sum %v, want %v", s.Sum, want)
	}
}

// conn is a connection's traffic, as a transport's counters report it.
type conn struct{ calls, in, out atomic.Uint64 }

func (c *conn) count(in, out int) {
	c.calls.Add(1)
	c.in.Add(uint64(in))
	c.out.Add(uint64(out))
}

func (c *conn) Traffic() Traffic {
	return Traffic{Calls: c.calls.Load(), BytesIn: c.in.Load(), BytesOut: c.out.Load()}
}

func addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }

func TestClientsTopAndBound(t *testing.T) {
	tab := NewClients(100)
	// 1,000 clients, client i moves i bytes in one call, one connection each.
	for i := 1; i <= 1000; i++ {
		src := new(conn)
		c := tab.Acquire(addr(i), src)
		src.count(i, 0)
		tab.Release(c, src)
	}
	s := tab.Top(5)
	if s.Known > 100 {
		t.Fatalf("table holds %d idle addresses, bound 100", s.Known)
	}
	if int(s.Forgotten)+s.Known != 1000 {
		t.Fatalf("known %d + forgotten %d != 1000", s.Known, s.Forgotten)
	}
	if len(s.Top) != 5 {
		t.Fatalf("top has %d entries", len(s.Top))
	}
	for k, e := range s.Top {
		if want := addr(1000 - k); e.Addr != want || e.BytesIn != uint64(1000-k) || e.Calls != 1 {
			t.Errorf("top[%d] = %+v, want %v with %d bytes", k, e, want, 1000-k)
		}
	}
}

func TestClientsKeepsConnected(t *testing.T) {
	tab := NewClients(1)
	heldConn := new(conn)
	held := tab.Acquire(addr(1), heldConn) // never released, no traffic yet
	for i := 2; i < 50; i++ {
		src := new(conn)
		c := tab.Acquire(addr(i), src)
		src.count(100, 100)
		tab.Release(c, src)
	}
	heldConn.count(1, 1)
	found := false
	for _, e := range tab.Top(100).Top {
		if e.Addr == addr(1) {
			found = e.Calls == 1 && e.Bytes() == 2
		}
	}
	if !found {
		t.Fatal("an address with an open connection was forgotten or lost its counts")
	}
	// Two connections from one address share one entry.
	second := new(conn)
	again := tab.Acquire(addr(1).Unmap(), second)
	if again != held {
		t.Fatal("a second connection from the same address got another entry")
	}
	mapped := tab.Acquire(netip.AddrFrom16(addr(1).As16()), nil)
	if mapped != held {
		t.Fatal("the IPv4-mapped form of an address got another entry")
	}
	// The address adds up its open connections, and keeps what a closed
	// one moved.
	second.count(1000, 2000)
	if e := tab.Top(1).Top[0]; e.Addr != addr(1) || e.Calls != 2 || e.BytesIn != 1001 || e.BytesOut != 2001 {
		t.Fatalf("two open connections: %+v", e)
	}
	tab.Release(again, second)
	heldConn.count(1, 1)
	if e := tab.Top(1).Top[0]; e.Addr != addr(1) || e.Calls != 3 || e.BytesIn != 1002 || e.BytesOut != 2002 {
		t.Fatalf("after one of them closed: %+v", e)
	}
}

func TestClientsNil(t *testing.T) {
	var tab *Clients
	if c := tab.Acquire(addr(1), new(conn)); c != nil {
		t.Fatal("nil table handed out a client")
	}
	tab.Release(nil, nil)
	if s := tab.Top(3); len(s.Top) != 0 || s.Known != 0 {
		t.Fatalf("nil table summary %+v", s)
	}
}

func BenchmarkHistogramObserve(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i))
	}
}

// BenchmarkClientsTop is a scrape's cost with 1,000 connections open.
func BenchmarkClientsTop(b *testing.B) {
	tab := NewClients(0)
	for i := range 1000 {
		src := new(conn)
		src.count(i, i)
		tab.Acquire(addr(i), src)
	}
	for b.Loop() {
		tab.Top(10)
	}
}

func ExampleClients() {
	tab := NewClients(0)
	src := new(conn)                                        // the connection's own counters
	c := tab.Acquire(netip.MustParseAddr("192.0.2.7"), src) // at connection set-up
	src.count(180, 4200)                                    // per call, on the connection's counters
	tab.Release(c, src)                                     // at close: its traffic stays with the address
	top := tab.Top(10).Top[0]
	fmt.Println(top.Addr, top.Calls, top.Bytes())
	// Output: 192.0.2.7 1 4380
}
