package rpcbind_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startLocal starts a Service on an ephemeral loopback port, never 111.
func startLocal(t *testing.T, mappings ...rpcbind.Mapping) *rpcbind.Service {
	t.Helper()
	s, err := rpcbind.Start(testCtx(t), zaptest.NewLogger(t), rpcbind.Config{Addr: "127.0.0.1:0", Mappings: mappings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if s.Remote() {
		t.Fatal("ephemeral port reported as taken")
	}
	return s
}

func dial(t *testing.T, network string, s *rpcbind.Service) *oncrpc.Client {
	t.Helper()
	c, err := oncrpc.Dial(testCtx(t), network, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func findMapping(l []rpcbind.Mapping, prog, vers uint32, netid string) (rpcbind.Mapping, bool) {
	for _, m := range l {
		if m.Prog == prog && m.Vers == vers && m.Netid == netid {
			return m, true
		}
	}
	return rpcbind.Mapping{}, false
}

var (
	nfsTCP   = rpcbind.NewMapping(100003, 3, rpcbind.NetidTCP, 2049)
	mountTCP = rpcbind.NewMapping(100005, 3, rpcbind.NetidTCP, 20048)
	mountUDP = rpcbind.NewMapping(100005, 3, rpcbind.NetidUDP, 20048)
	nfsRDMA  = rpcbind.NewMapping(100003, 3, rpcbind.NetidRDMA, 20049)
)

// TestEndToEnd runs the client helpers against a served registry over TCP
// and UDP.
func TestEndToEnd(t *testing.T) {
	s := startLocal(t, nfsTCP, mountTCP, mountUDP)
	port := uint16(s.Addr().(*net.TCPAddr).Port)
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			ctx := testCtx(t)
			c := dial(t, network, s)
			for _, v := range []uint32{2, 3, 4} {
				if err := rpcbind.Null(ctx, c, v); err != nil {
					t.Fatalf("NULL v%d: %v", v, err)
				}
			}
			if p, err := rpcbind.GetPort(ctx, c, 100005, 3, rpcbind.ProtoUDP); err != nil || p != 20048 {
				t.Fatalf("GETPORT mount/udp = %d, %v", p, err)
			}
			if p, err := rpcbind.GetPort(ctx, c, rpcbind.Prog, 2, rpcbind.ProtoTCP); err != nil || p != port {
				t.Fatalf("GETPORT of rpcbind itself = %d, %v; want %d", p, err, port)
			}
			if _, err := rpcbind.GetPort(ctx, c, 100021, 4, rpcbind.ProtoTCP); !errors.Is(err, rpcbind.ErrNotRegistered) {
				t.Fatalf("GETPORT of an unregistered program: %v", err)
			}
			if a, err := rpcbind.GetAddr(ctx, c, 100003, 3, "tcp"); err != nil || a != "127.0.0.1.8.1" {
				t.Fatalf("GETADDR nfs/tcp = %q, %v", a, err)
			}
			if _, err := rpcbind.GetAddr(ctx, c, 100003, 3, "rdma"); !errors.Is(err, rpcbind.ErrNotRegistered) {
				t.Fatalf("GETADDR nfs/rdma before registration: %v", err)
			}
			if _, err := rpcbind.GetVersAddr(ctx, c, 100003, 4, "tcp"); !errors.Is(err, rpcbind.ErrNotRegistered) {
				t.Fatalf("GETVERSADDR of a missing version: %v", err)
			}
			d, err := rpcbind.Dump(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []rpcbind.Mapping{nfsTCP, mountTCP, mountUDP} {
				if m, ok := findMapping(d, want.Prog, want.Vers, want.Netid); !ok || m.Addr != want.Addr {
					t.Errorf("DUMP lacks %+v: %+v", want, d)
				}
			}
			for v := uint32(2); v <= 4; v++ {
				if _, ok := findMapping(d, rpcbind.Prog, v, "udp"); !ok {
					t.Errorf("DUMP lacks rpcbind v%d/udp", v)
				}
			}
			pl, err := rpcbind.PmapDump(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range pl {
				found = found || (m == rpcbind.PortMapping{Prog: 100005, Vers: 3, Prot: rpcbind.ProtoUDP, Port: 20048})
			}
			if !found {
				t.Errorf("PMAPPROC_DUMP lacks mount/udp: %+v", pl)
			}
			if tm, err := rpcbind.GetTime(ctx, c); err != nil || time.Since(time.Unix(int64(tm), 0)).Abs() > time.Minute {
				t.Fatalf("GETTIME = %d, %v", tm, err)
			}

			// SET and UNSET from loopback, through v4 and through v2.
			if ok, err := rpcbind.Set(ctx, c, nfsRDMA); err != nil || !ok {
				t.Fatalf("SET rdma = %v, %v", ok, err)
			}
			if ok, _ := rpcbind.Set(ctx, c, nfsRDMA); ok {
				t.Fatal("duplicate SET accepted")
			}
			if a, err := rpcbind.GetAddr(ctx, c, 100003, 3, "rdma"); err != nil || a != "127.0.0.1.78.81" {
				t.Fatalf("GETADDR nfs/rdma = %q, %v", a, err)
			}
			if l, err := rpcbind.GetAddrList(ctx, c, 100003, 3); err != nil || len(l) != 2 {
				t.Fatalf("GETADDRLIST = %+v, %v", l, err)
			}
			if ok, err := rpcbind.Unset(ctx, c, 100003, 3, "rdma"); err != nil || !ok {
				t.Fatalf("UNSET rdma = %v, %v", ok, err)
			}
			if _, ok := s.Registry().Lookup(100003, 3, "rdma"); ok {
				t.Fatal("UNSET left the mapping")
			}
			pm := rpcbind.PortMapping{Prog: 100024, Vers: 1, Prot: rpcbind.ProtoTCP, Port: 40000}
			if ok, err := rpcbind.PmapSet(ctx, c, pm); err != nil || !ok {
				t.Fatalf("PMAPPROC_SET = %v, %v", ok, err)
			}
			if p, err := rpcbind.GetPort(ctx, c, 100024, 1, rpcbind.ProtoTCP); err != nil || p != 40000 {
				t.Fatalf("GETPORT after PMAPPROC_SET = %d, %v", p, err)
			}
			if ok, err := rpcbind.PmapUnset(ctx, c, 100024, 1); err != nil || !ok {
				t.Fatalf("PMAPPROC_UNSET = %v, %v", ok, err)
			}
			if _, err := rpcbind.GetPort(ctx, c, 100024, 1, rpcbind.ProtoTCP); !errors.Is(err, rpcbind.ErrNotRegistered) {
				t.Fatalf("GETPORT after PMAPPROC_UNSET: %v", err)
			}
		})
	}
}

// TestRegisterLocal checks Service.Register in local mode.
func TestRegisterLocal(t *testing.T) {
	s := startLocal(t)
	ctx := testCtx(t)
	if err := s.Register(ctx, nfsRDMA); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(ctx, nfsRDMA); err == nil {
		t.Fatal("duplicate Register succeeded")
	}
	c := dial(t, "tcp", s)
	if a, err := rpcbind.GetAddr(ctx, c, 100003, 3, "rdma"); err != nil || a != "127.0.0.1.78.81" {
		t.Fatalf("GETADDR = %q, %v", a, err)
	}
}

// TestFallbackToOtherRpcbind stands one Service in for the system's
// rpcbind and starts a second on the same address: the second must
// register through the first, and unregister at Close.
func TestFallbackToOtherRpcbind(t *testing.T) {
	ctx := testCtx(t)
	other := startLocal(t, rpcbind.NewMapping(100024, 1, "udp", 33333))
	ours, err := rpcbind.Start(ctx, zaptest.NewLogger(t), rpcbind.Config{
		Addr:     other.Addr().String(),
		Mappings: []rpcbind.Mapping{nfsTCP, mountTCP, mountUDP},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ours.Remote() || ours.Registry() != nil {
		t.Fatal("second Start did not fall back to the other rpcbind")
	}
	if ours.Addr().String() != other.Addr().String() {
		t.Fatalf("registered with %v, want %v", ours.Addr(), other.Addr())
	}
	// A transport started later registers through the same Service.
	if err := ours.Register(ctx, nfsRDMA); err != nil {
		t.Fatal(err)
	}

	c := dial(t, "tcp", other)
	d, err := rpcbind.Dump(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	uid := strconv.Itoa(os.Geteuid())
	for _, want := range []rpcbind.Mapping{nfsTCP, mountTCP, mountUDP, nfsRDMA} {
		m, ok := findMapping(d, want.Prog, want.Vers, want.Netid)
		if !ok || m.Addr != want.Addr || m.Owner != uid {
			t.Errorf("other rpcbind's DUMP lacks %+v (owner %s): %+v", want, uid, d)
		}
	}
	if p, err := rpcbind.GetPort(ctx, c, 100005, 3, rpcbind.ProtoUDP); err != nil || p != 20048 {
		t.Fatalf("GETPORT through the other rpcbind = %d, %v", p, err)
	}

	if err := ours.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d, err = rpcbind.Dump(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []rpcbind.Mapping{nfsTCP, mountTCP, mountUDP, nfsRDMA} {
		if _, ok := findMapping(d, gone.Prog, gone.Vers, gone.Netid); ok {
			t.Errorf("%+v still registered after Close", gone)
		}
	}
	if _, ok := findMapping(d, 100024, 1, "udp"); !ok {
		t.Error("Close removed the other rpcbind's own mapping")
	}
}

// TestFallbackReplacesStale: a stale registration of the same key (from a
// crashed earlier run) is replaced, not a reason to fail.
func TestFallbackReplacesStale(t *testing.T) {
	ctx := testCtx(t)
	stale := nfsTCP
	stale.Addr = "0.0.0.0.4.0"
	other := startLocal(t, stale)
	ours, err := rpcbind.Start(ctx, zap.NewNop(), rpcbind.Config{Addr: other.Addr().String(), Mappings: []rpcbind.Mapping{nfsTCP}})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close(ctx)
	if m, ok := other.Registry().Lookup(100003, 3, "tcp"); !ok || m.Addr != nfsTCP.Addr {
		t.Fatalf("after fallback registration: %+v, %v", m, ok)
	}
}

// TestStartFailsWithoutRpcbind: the port is taken by something that is
// not rpcbind, so Start reports an error instead of pretending.
func TestStartFailsWithoutRpcbind(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if s, err := rpcbind.Start(ctx, zap.NewNop(), rpcbind.Config{Addr: l.Addr().String(), Mappings: []rpcbind.Mapping{nfsTCP}}); err == nil {
		s.Close(ctx)
		t.Fatal("Start succeeded against a non-rpcbind listener")
	}
}
