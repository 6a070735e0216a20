package verbs

import (
	"context"
	"testing"
)

// BenchmarkFabricSendRecv measures a Send/Receive round trip: the client
// Sends, the server polls the Receive, re-posts it and Sends back.
func BenchmarkFabricSendRecv(b *testing.B) {
	f := NewFabric()
	e := &env{prov: f, fab: f, newAddr: func() string { return "bench:1" }}
	p := connectPair(b, e, pairOpts{})
	ctx := context.Background()
	wcs := make([]Completion, 4)
	cliSend := []SendWR{{ID: 1, Opcode: OpSend, SGL: []SGE{p.cmr.SGE(sendOff, 256)}, Signaled: true}}
	srvSend := []SendWR{{ID: 2, Opcode: OpSend, SGL: []SGE{p.smr.SGE(sendOff, 256)}, Signaled: true}}
	cliRecv := []RecvWR{{SGL: make([]SGE, 1)}}
	srvRecv := []RecvWR{{SGL: make([]SGE, 1)}}
	// pollFor polls c until it has seen want completions.
	pollFor := func(c Conn, rw []RecvWR, m *MR, want int) {
		for want > 0 {
			n, err := c.Poll(ctx, wcs)
			if err != nil {
				b.Fatal(err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != WCSuccess {
					b.Fatal(wc.Err())
				}
				if wc.Recv {
					rw[0].ID = wc.WRID
					rw[0].SGL[0] = m.SGE(recvOff+int(wc.WRID)*recvSize, recvSize)
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
		if err := p.cli.PostSend(cliSend); err != nil {
			b.Fatal(err)
		}
		pollFor(p.srv, srvRecv, p.smr, 1) // the Receive
		if err := p.srv.PostSend(srvSend); err != nil {
			b.Fatal(err)
		}
		pollFor(p.cli, cliRecv, p.cmr, 2) // the Send completion and the reply
		pollFor(p.srv, srvRecv, p.smr, 1) // the reply's Send completion
	}
}

// BenchmarkFabricWrite1MiB measures a 1 MiB RDMA Write followed by a
// signaled Send, as a READ reply does.
func BenchmarkFabricWrite1MiB(b *testing.B) {
	const n = 1 << 20
	f := NewFabric()
	e := &env{prov: f, fab: f, newAddr: func() string { return "bench:1" }}
	p := connectPair(b, e, pairOpts{})
	src, err := p.srv.Register(n, AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Deregister()
	dst, err := p.cli.Register(n, AccessLocalWrite|AccessRemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Deregister()
	ctx := context.Background()
	wcs := make([]Completion, 4)
	wrs := []SendWR{{ID: 1, Opcode: OpRDMAWrite, SGL: []SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey(), Signaled: true}}
	b.ReportAllocs()
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.srv.PostSend(wrs); err != nil {
			b.Fatal(err)
		}
		if k, err := p.srv.Poll(ctx, wcs); err != nil || k != 1 || wcs[0].Status != WCSuccess {
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
