//go:build rdmahw

package verbs_test

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/verbstest"
)

// TestRDMAConformance runs the conformance cases against a real RDMA
// device, e.g. Soft-RoCE:
//
//	rdma link add rxe0 type rxe netdev eth0
//	ulimit -l unlimited
//	GONFSRDMA_RDMA_ADDR=10.0.2.15 go test -tags rdmahw -run RDMA ./verbs/
//
// Server and client both use that IP (rxe loops back); each case listens
// on a fresh port.
func TestRDMAConformance(t *testing.T) {
	e, prov := rdmaEnv(t, 21000)
	defer prov.Close()
	verbstest.Run(t, func(t *testing.T) *verbstest.Env { return e })
}

// rdmaEnv is the real device at GONFSRDMA_RDMA_ADDR (the test or
// benchmark is skipped when it is not set), with the memlock limit
// raised, as a conformance Env whose addresses are that IP on a fresh
// port each, counting up from basePort plus a share of the PID. The
// caller closes the provider.
func rdmaEnv(tb testing.TB, basePort int) (*verbstest.Env, *verbs.RDMAProvider) {
	tb.Helper()
	ip := os.Getenv("GONFSRDMA_RDMA_ADDR")
	if ip == "" {
		tb.Skip("GONFSRDMA_RDMA_ADDR not set: set it to the IP of an RDMA-capable interface (e.g. rdma_rxe) to run against real hardware")
	}
	if net.ParseIP(ip) == nil {
		tb.Fatalf("GONFSRDMA_RDMA_ADDR=%q is not an IP address", ip)
	}
	if err := verbs.RaiseMemlock(64 << 20); err != nil {
		tb.Fatal(err)
	}
	prov, err := verbs.NewRDMAProvider()
	if err != nil {
		tb.Fatalf("NewRDMAProvider: %v", err)
	}
	port := basePort + os.Getpid()%2000
	return &verbstest.Env{
		Prov: prov,
		NewAddr: func() string {
			port++
			return net.JoinHostPort(ip, fmt.Sprint(port))
		},
	}, prov
}

// TestRDMACloseReleasesAfterDisconnect: a connection the server closes
// first keeps its cm id until the client answers the disconnect (so that
// the connection manager can resend a DREQ a down link lost), and lets go
// of it once the client has: the client sees the connection end, and the
// provider holds one cm id less within seconds. Closing the provider does
// not wait for a lingering id.
func TestRDMACloseReleasesAfterDisconnect(t *testing.T) {
	e, prov := rdmaEnv(t, 23000)
	// After the pair's own clean-up (clean-ups run last first).
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { prov.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("provider Close did not return within 5 s")
		}
	})
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	ids0, _ := prov.Held() // the listener, the server's and the client's connections
	p.Srv.Close()
	p.SMR.Deregister() // its last MR: the cm id is released (or lingers) now
	p.Srv, p.SMR = nil, nil
	select {
	case <-p.Cli.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not see the server's disconnect within 10 s")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, _ := prov.Held()
		if ids == ids0-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the client saw the disconnect the provider holds %d cm ids, want %d (the closed connection's released)", ids, ids0-1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkRDMARegisterRange is what the project's client pays per chunk
// on a device whose windows do not bound their range (rxe): a
// registration of the chunk's range (ibv_reg_mr on memory already
// registered, its pages pinned again) and its deregistration.
//
//	GONFSRDMA_RDMA_ADDR=10.0.2.15 go test -tags rdmahw -run '^$' -bench RegisterRange ./verbs/
func BenchmarkRDMARegisterRange(b *testing.B) {
	e, prov := rdmaEnv(b, 25000)
	defer prov.Close()
	p := verbstest.ConnectPair(b, e, verbstest.PairOpts{})
	for _, n := range []int{4 << 10, 64 << 10, verbstest.MRSize} {
		b.Run(fmt.Sprintf("%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sub, err := verbs.RegisterRange(p.Cli, p.CMR, 0, n, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
				if err != nil {
					b.Fatal(err)
				}
				if err := sub.Deregister(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
