package rpcrdma

import (
	"context"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// The benchmarks run client and server over the software fabric in one
// process, so allocs/op counts both sides. copies/B is the number of
// bytes the server copied per payload byte served: the handler's one copy
// into the registered payload buffer (the "file read") plus whatever the
// transport copied (Stats.CopiedBytes).

func benchCall(b *testing.B, cc *oncrpc.ClientCall, payload int) {
	e := newEnv(b, Config{})
	c := e.dial(ClientConfig{})
	ctx := context.Background()
	dst := make([]byte, 0, 2<<20)
	for i := 0; i < 3; i++ { // warm the pools
		if _, err := c.CallWith(ctx, cc, nil, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	before := e.srv.Stats().CopiedBytes
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
		copied := float64(e.srv.Stats().CopiedBytes - before)
		handler := 0.0
		if cc.Proc == procBulkRd {
			handler = 1 // the handler's copy into the payload buffer
		}
		b.ReportMetric(handler+copied/float64(b.N)/float64(payload), "copies/B")
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
