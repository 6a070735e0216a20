package rpcrdma

import (
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// TestWriteChunkPushedInPieces: the server pushes a Write chunk (a READ
// payload) and a Reply chunk (a large reply) with RDMA Writes of at most
// DefaultWritePiece bytes, in order and back to back over each segment,
// with the reply's Send at the end of the same chain, and the client gets
// its data intact. On Soft-RoCE each Write's last packet asks for an ACK,
// so a lost frame is then recovered by NAK instead of the 2.1 s ACK
// timeout far more often (writeSegments in rw.go; issue 16).
func TestWriteChunkPushedInPieces(t *testing.T) {
	l := &ledger{}
	e := newFaultEnv(t, l)
	c := e.dial()
	sc := e.prov.nth(t, 1)
	calls := []struct {
		n    int
		list bool // a LIST (Reply chunk), else a FETCH (Write chunk)
	}{
		{DefaultWritePiece - 4, false}, {DefaultWritePiece, false}, {DefaultWritePiece + 1, false},
		{1 << 20, false}, {1<<20 - 4, false}, {300 << 10, true},
	}
	for _, k := range calls {
		sc.mu.Lock()
		sc.chains = nil
		sc.mu.Unlock()
		cc := fetchCall(uint32(k.n), uint32(k.n))
		if k.list {
			cc = listCall(uint32(k.n))
		}
		res, err := c.Call(ctxT(t), cc)
		if err != nil {
			t.Fatalf("%d bytes: %v", k.n, err)
		}
		checkResult(t, cc, nil, res)
		sc.mu.Lock()
		chains := append([][]postedWR(nil), sc.chains...)
		sc.mu.Unlock()
		if len(chains) != 1 {
			t.Fatalf("%d bytes: %d chains with RDMA Writes posted, want 1", k.n, len(chains))
		}
		ch := chains[0]
		if last := ch[len(ch)-1].op; last != verbs.OpSend && last != verbs.OpSendWithInv {
			t.Errorf("%d bytes: the chain ends with opcode %v, not the reply's Send", k.n, last)
		}
		total, writes := 0, ch[:len(ch)-1]
		for i, w := range writes {
			if w.op != verbs.OpRDMAWrite {
				t.Fatalf("%d bytes: WR %d of the chain has opcode %v, want only RDMA Writes before the Send", k.n, i, w.op)
			}
			if w.n > DefaultWritePiece || w.n == 0 {
				t.Errorf("%d bytes: RDMA Write %d carries %d bytes, want 1..%d", k.n, i, w.n, DefaultWritePiece)
			}
			// A piece shorter than DefaultWritePiece ends its segment:
			// the next Write starts a new segment (another rkey or a
			// gap), never the rest of this one.
			if i > 0 {
				p := writes[i-1]
				contiguous := p.rkey == w.rkey && p.remoteAddr+uint64(p.n) == w.remoteAddr
				if contiguous && p.n != DefaultWritePiece {
					t.Errorf("%d bytes: RDMA Write %d (%d bytes) is followed by the rest of its segment", k.n, i-1, p.n)
				}
			}
			total += w.n
		}
		if !k.list && total != k.n {
			t.Errorf("FETCH of %d bytes: RDMA Writes carry %d bytes", k.n, total)
		}
		if want := (k.n + DefaultWritePiece - 1) / DefaultWritePiece; !k.list && len(writes) < want {
			t.Errorf("FETCH of %d bytes: %d RDMA Writes, want at least %d", k.n, len(writes), want)
		}
	}
	// Sixteen 1 MiB FETCHes at once: each reply is 64 Writes and its Send,
	// and the send queue holds four such chains at a time (272 WRs), so
	// replies also wait for room in it; each arrives intact.
	type result struct {
		cc  *oncrpc.ClientCall
		res []byte
		err error
	}
	var wg sync.WaitGroup
	results := make(chan result, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := fetchCall(1<<20, uint32(i))
			res, err := c.Call(ctxT(t), cc)
			results <- result{cc, res, err}
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil {
			t.Fatalf("concurrent 1 MiB FETCH: %v", r.err)
		}
		checkResult(t, r.cc, nil, r.res)
	}
	e.closeAndCheckMemory(c)
}
