package rpcrdma

import (
	"context"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// The benchmarks run client and server over the software fabric in one
// process, so allocs/op counts both sides. Every figure is counted over
// the timed calls: copies/B is the bytes the server side copied per
// payload byte, the handler's copies into the payload buffer (the "file
// read", bulkCopied) plus the transport's (Stats.CopiedBytes); wire/B is
// the bytes the fabric moved (Sends, RDMA Writes and Reads, both
// directions, Fabric.Moved) per payload byte.

func benchCall(b *testing.B, cc *oncrpc.ClientCall, payload int) {
	e := newEnv(b, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := context.Background()
	dst := make([]byte, 0, 2<<20)
	for i := 0; i < 3; i++ { // warm the pools
		if _, err := c.CallWith(ctx, cc, nil, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	before, handlerBefore := e.srv.Stats().CopiedBytes, bulkCopied.Load()
	var movedBefore softfabric.FabricMoved
	if e.fab != nil {
		movedBefore = e.fab.Moved()
	}
	b.ReportAllocs()
	if payload > 0 {
		b.SetBytes(int64(payload))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.CallWith(ctx, cc, nil, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if payload > 0 {
		per := float64(b.N) * float64(payload)
		copied := e.srv.Stats().CopiedBytes - before + bulkCopied.Load() - handlerBefore
		b.ReportMetric(float64(copied)/per, "copies/B")
		if e.fab != nil {
			m := e.fab.Moved()
			moved := m.Send + m.Write + m.Read - movedBefore.Send - movedBefore.Write - movedBefore.Read
			b.ReportMetric(float64(moved)/per, "wire/B")
		}
	}
}

func BenchmarkRead1MiB(b *testing.B) {
	benchCall(b, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBulkRd, Args: xdr.AppendUint32(nil, 1<<20), ReplyPayloadMax: 1 << 20}, 1<<20)
}

func BenchmarkWrite1MiB(b *testing.B) {
	data := make([]byte, 1<<20)
	benchCall(b, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBulkWr, Args: xdr.AppendUint32(nil, 1<<20), Payload: data}, 1<<20)
}

func BenchmarkSmallCall(b *testing.B) {
	// GETATTR-sized: a 64-byte handle in, ~100 bytes out.
	benchCall(b, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, make([]byte, 96))}, 0)
}
