package oncrpc

import (
	"context"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
)

// The cost of the call counters (docs/performance.md, "What the counters
// cost"): NULL calls whose XIDs count up as a client's do, so one in
// LatencySampleEvery is timed, on connections opened as the TCP and RDMA
// transports open them, with a busiest-clients table as the daemon with
// --metrics-listen has. -counting=false measures the dispatcher without
// counting.

// countingConn is one connection's exchange and reused buffers.
type countingConn struct {
	ex    BufferExchange
	call  Call
	reply Reply
	xid   uint32
}

func newCountingConn(d *Dispatcher, clients *meter.Clients, i int) *countingConn {
	c := &countingConn{reply: NewReply(make([]byte, 0, 512))}
	c.ex.Msg = AppendCallHeader(nil, &CallHeader{XID: 1, Prog: 400000, Vers: 2, Proc: 0, Cred: NewAuthSys("bench", 1, 1, 1, 2, 3)})
	c.ex.From = Peer{Transport: TCP, Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}), 900)}
	d.OpenConn(&c.ex.From, clients)
	return c
}

func (c *countingConn) call1(d *Dispatcher) {
	c.xid++
	binary.BigEndian.PutUint32(c.ex.Msg, c.xid)
	d.Dispatch(context.Background(), &c.ex, &c.call, &c.reply)
}

func countingDispatcher() *Dispatcher {
	d := NewDispatcher(zap.NewNop(), nil, testProgram(nil, new(atomic.Int32)))
	d.SetCounting(*benchCounting)
	return d
}

// BenchmarkCountingNull is one connection's NULL calls, one at a time.
func BenchmarkCountingNull(b *testing.B) {
	d := countingDispatcher()
	c := newCountingConn(d, meter.NewClients(0), 1)
	b.ReportAllocs()
	for b.Loop() {
		c.call1(d)
	}
}

// BenchmarkCountingNullParallel runs NULL calls on GOMAXPROCS connections
// at once (from as many client addresses): counters that connections
// shared would have every CPU adding to the same cache lines.
func BenchmarkCountingNullParallel(b *testing.B) {
	d := countingDispatcher()
	clients := meter.NewClients(0)
	var next atomic.Int32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := newCountingConn(d, clients, int(next.Add(1)))
		for pb.Next() {
			c.call1(d)
		}
	})
}

// BenchmarkCountingCostNull is BenchmarkCountingNull on two dispatchers,
// one counting and one not, in alternating blocks of 1,000 calls (the
// first of each pair alternating too), so that both see the same state of
// a shared machine. It reports the median over block pairs of the
// counting one's time per call minus the other's (delta-ns/call) and of
// their ratio (on/off); ns/op is the two calls together.
func BenchmarkCountingCostNull(b *testing.B) {
	on := NewDispatcher(zap.NewNop(), nil, testProgram(nil, new(atomic.Int32)))
	off := NewDispatcher(zap.NewNop(), nil, testProgram(nil, new(atomic.Int32)))
	off.SetCounting(false)
	clients := meter.NewClients(0)
	cOn, cOff := newCountingConn(on, clients, 1), newCountingConn(off, clients, 2)
	const block = 1000
	run := func(d *Dispatcher, c *countingConn) time.Duration {
		start := time.Now()
		for range block {
			c.call1(d)
		}
		return time.Since(start)
	}
	var deltas, ratios []float64
	b.ReportAllocs()
	for i := 0; i < b.N; i += block {
		var tOn, tOff time.Duration
		if len(deltas)%2 == 0 {
			tOn, tOff = run(on, cOn), run(off, cOff)
		} else {
			tOff, tOn = run(off, cOff), run(on, cOn)
		}
		deltas = append(deltas, float64(tOn-tOff)/block)
		ratios = append(ratios, float64(tOn)/float64(tOff))
	}
	b.StopTimer()
	slices.Sort(deltas)
	slices.Sort(ratios)
	b.ReportMetric(deltas[len(deltas)/2], "delta-ns/call")
	b.ReportMetric(ratios[len(ratios)/2], "on/off")
}
