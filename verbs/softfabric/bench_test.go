package softfabric

import (
	"context"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/verbstest"
)

// BenchmarkFabricSendRecv measures a Send/Receive round trip: the client
// Sends, the server polls the Receive, re-posts it and Sends back.
func BenchmarkFabricSendRecv(b *testing.B) {
	f := NewFabric()
	e := &verbstest.Env{Prov: f, Software: true, NewAddr: func() string { return "bench:1" }}
	p := verbstest.ConnectPair(b, e, verbstest.PairOpts{})
	ctx := context.Background()
	wcs := make([]verbs.Completion, 4)
	cliSend := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{p.CMR.SGE(verbstest.SendOff, 256)}, Signaled: true}}
	srvSend := []verbs.SendWR{{ID: 2, Opcode: verbs.OpSend, SGL: []verbs.SGE{p.SMR.SGE(verbstest.SendOff, 256)}, Signaled: true}}
	cliRecv := []verbs.RecvWR{{SGL: make([]verbs.SGE, 1)}}
	srvRecv := []verbs.RecvWR{{SGL: make([]verbs.SGE, 1)}}
	// pollFor polls c until it has seen want completions.
	pollFor := func(c verbs.Conn, rw []verbs.RecvWR, m *verbs.MR, want int) {
		for want > 0 {
			n, err := c.Poll(ctx, wcs)
			if err != nil {
				b.Fatal(err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.WCSuccess {
					b.Fatal(wc.Err())
				}
				if wc.Recv {
					rw[0].ID = wc.WRID
					rw[0].SGL[0] = m.SGE(verbstest.RecvOff+int(wc.WRID)*verbstest.RecvSize, verbstest.RecvSize)
					if err := c.PostRecv(rw); err != nil {
						b.Fatal(err)
					}
				}
			}
			want -= n
		}
	}
	b.ReportAllocs()
	b.SetBytes(512)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Cli.PostSend(cliSend); err != nil {
			b.Fatal(err)
		}
		pollFor(p.Srv, srvRecv, p.SMR, 1) // the Receive
		if err := p.Srv.PostSend(srvSend); err != nil {
			b.Fatal(err)
		}
		pollFor(p.Cli, cliRecv, p.CMR, 2) // the Send completion and the reply
		pollFor(p.Srv, srvRecv, p.SMR, 1) // the reply's Send completion
	}
}

// BenchmarkFabricWrite1MiB measures a 1 MiB RDMA Write followed by a
// signaled Send, as a READ reply does.
func BenchmarkFabricWrite1MiB(b *testing.B) {
	const n = 1 << 20
	f := NewFabric()
	e := &verbstest.Env{Prov: f, Software: true, NewAddr: func() string { return "bench:1" }}
	p := verbstest.ConnectPair(b, e, verbstest.PairOpts{})
	src, err := p.Srv.Register(n, verbs.AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Deregister()
	dst, err := p.Cli.Register(n, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Deregister()
	ctx := context.Background()
	wcs := make([]verbs.Completion, 4)
	wrs := []verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey(), Signaled: true}}
	b.ReportAllocs()
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Srv.PostSend(wrs); err != nil {
			b.Fatal(err)
		}
		if k, err := p.Srv.Poll(ctx, wcs); err != nil || k != 1 || wcs[0].Status != verbs.WCSuccess {
			b.Fatalf("poll: %d %v %+v", k, err, wcs[0])
		}
	}
}

func TestFabricSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, bm := range []func(*testing.B){BenchmarkFabricSendRecv, BenchmarkFabricWrite1MiB} {
		r := testing.Benchmark(bm)
		if r.N > 100 && r.AllocsPerOp() != 0 {
			t.Errorf("%d allocs/op in steady state (%s)", r.AllocsPerOp(), r.MemString())
		}
	}
}
