//go:build rdmahw

package verbs_test

import (
	"fmt"
	"net"
	"os"
	"testing"

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
	ip := os.Getenv("GONFSRDMA_RDMA_ADDR")
	if ip == "" {
		t.Skip("GONFSRDMA_RDMA_ADDR not set: set it to the IP of an RDMA-capable interface (e.g. rdma_rxe) to run against real hardware")
	}
	if net.ParseIP(ip) == nil {
		t.Fatalf("GONFSRDMA_RDMA_ADDR=%q is not an IP address", ip)
	}
	if err := verbs.RaiseMemlock(64 << 20); err != nil {
		t.Fatal(err)
	}
	prov, err := verbs.NewRDMAProvider()
	if err != nil {
		t.Fatalf("NewRDMAProvider: %v", err)
	}
	defer prov.Close()
	port := 21000 + os.Getpid()%2000
	verbstest.Run(t, func(t *testing.T) *verbstest.Env {
		return &verbstest.Env{
			Prov: prov,
			NewAddr: func() string {
				port++
				return net.JoinHostPort(ip, fmt.Sprint(port))
			},
		}
	})
}
