package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// limitsEnv is a server on a fresh fabric whose log lines the test reads.
type limitsEnv struct {
	fab  *softfabric.Fabric
	srv  *Server
	addr string
	logs *observer.ObservedLogs
}

func newLimitsEnv(t *testing.T, cfg Config) *limitsEnv {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	e := &limitsEnv{fab: softfabric.NewFabric(), logs: logs, addr: fmt.Sprintf("fabric-limits-%d:20049", addrSeq.Add(1))}
	e.srv = NewServer(log, oncrpc.NewDispatcher(log, nil, (&echoServer{unblock: make(chan struct{})}).program()), e.fab, cfg)
	l, err := e.fab.Listen(e.addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve returned %v", err)
		}
		if n := e.srv.Pinned(); n != 0 {
			t.Errorf("%d pinned bytes still counted after shutdown", n)
		}
		waitFor(t, "fabric objects released", func() bool { return e.fab.Stats() == softfabric.FabricStats{} }, func() string {
			return fmt.Sprintf("%+v", e.fab.Stats())
		})
	})
	return e
}

func (e *limitsEnv) dial(t *testing.T) (*rdmaclient.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := rdmaclient.Dial(ctx, e.fab, e.addr, rdmaclient.Config{})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func (e *limitsEnv) logged(t *testing.T, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range e.logs.All() {
			if strings.Contains(l.Message, msg) {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no log line %q; have %v", msg, e.logs.All())
}

func nullOK(t *testing.T, c *rdmaclient.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatalf("NULL: %v", err)
	}
}

func wantRejected(t *testing.T, err error) {
	t.Helper()
	var rej *verbs.RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("dial over the cap: %v, want a rejection", err)
	}
}

func TestRDMAConnectionCap(t *testing.T) {
	conns := oncrpc.NewLimits(oncrpc.LimitsConfig{MaxConns: 2})
	e := newLimitsEnv(t, Config{Conns: conns})
	c1, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dial(t); err != nil {
		t.Fatal(err)
	}
	_, err = e.dial(t)
	wantRejected(t, err)
	e.logged(t, "connection refused: limit reached")
	nullOK(t, c1)
	c1.Close()
	waitFor(t, "connection left", func() bool { return conns.Conns() == 1 }, func() string { return fmt.Sprint(conns.Conns()) })
	c3, err := e.dial(t)
	if err != nil {
		t.Fatalf("dial after a connection ended: %v", err)
	}
	nullOK(t, c3)
}

// TestRDMAPinnedCap: with room for two connections' set-up memory and
// nothing more, a third connection is rejected, each connection's pool
// stays at its reserved buffers however many calls it has in flight, and
// every call completes.
func TestRDMAPinnedCap(t *testing.T) {
	probe := NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil), softfabric.NewFabric(), Config{})
	reserve, most := probe.connCost()
	t.Logf("a connection reserves %d KiB at set-up and may hold %d KiB", reserve>>10, most>>10)
	e := newLimitsEnv(t, Config{MaxPinned: 2 * reserve})
	c1, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.dial(t)
	wantRejected(t, err)
	e.logged(t, "connection refused: pinned memory limit reached")
	if n := e.srv.Pinned(); n != 2*reserve {
		t.Errorf("pinned %d, want %d", n, 2*reserve)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for _, c := range []*rdmaclient.Client{c1, c2} {
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, 1), ReplyPayloadMax: 1 << 20})
				if err == nil && len(res) != 4+1<<20 {
					err = fmt.Errorf("READ returned %d bytes", len(res))
				}
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("READ under the pinned cap: %v", err)
		}
	}
	if n := e.srv.Pinned(); n != 2*reserve {
		t.Errorf("pinned %d after 32 READs, want %d (no growth beyond the reservation)", n, 2*reserve)
	}
	c1.Close()
	waitFor(t, "reservation returned", func() bool { return e.srv.Pinned() == reserve }, func() string { return fmt.Sprint(e.srv.Pinned()) })
	c3, err := e.dial(t)
	if err != nil {
		t.Fatalf("dial after a connection ended: %v", err)
	}
	nullOK(t, c3)
}

// TestRDMAPinnedGrowthCounted: within the cap a connection's pool grows
// and the growth is counted, and given back when it ends.
func TestRDMAPinnedGrowthCounted(t *testing.T) {
	e := newLimitsEnv(t, Config{})
	c, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	reserve, most := e.srv.connCost()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, 1), ReplyPayloadMax: 1 << 20}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := e.srv.Pinned()
	t.Logf("pinned after 8 concurrent 1 MiB READs: %d KiB (reserve %d KiB, most %d KiB)", n>>10, reserve>>10, most>>10)
	if n < reserve || n > most {
		t.Errorf("pinned %d outside [%d, %d]", n, reserve, most)
	}
	for _, conn := range e.srv.life.Conns(nil) {
		conn.big.mu.Lock()
		registered := len(conn.big.all)
		conn.big.mu.Unlock()
		if want := reserve + int64(max(registered-minBigBuffers, 0))*int64(e.srv.bigSize); n != want {
			t.Errorf("pinned %d, want %d for %d registered buffers", n, want, registered)
		}
	}
	c.Close()
	waitFor(t, "pinned back to zero", func() bool { return e.srv.Pinned() == 0 }, func() string { return fmt.Sprint(e.srv.Pinned()) })
}

// TestRDMAIdleTimeout: a connection with no calls for the timeout is
// disconnected; one that keeps calling stays.
func TestRDMAIdleTimeout(t *testing.T) {
	// busy calls every idle/6: a loaded machine that holds the test up
	// for most of a timeout would make busy look idle, so the timeout is
	// long enough that only a real defect closes it.
	const idle = time.Second
	e := newLimitsEnv(t, Config{IdleTimeout: idle})
	quiet, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := e.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	nullOK(t, quiet)
	// busy keeps calling for three timeouts and until quiet is gone (its
	// disconnect takes a sweep and a drain after the timeout, which a
	// loaded machine can stretch): every call of busy must succeed.
	start := time.Now()
	for time.Since(start) < 3*idle || e.srv.Stats().Conns != 1 {
		if time.Since(start) > 3*idle+10*time.Second {
			t.Fatalf("%d connections after %v, want 1 (the busy one)", e.srv.Stats().Conns, time.Since(start))
		}
		nullOK(t, busy)
		time.Sleep(idle / 6)
	}
	e.logged(t, "disconnecting idle connection")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := quiet.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err == nil {
		t.Error("a call on the disconnected idle connection succeeded")
	}
	nullOK(t, busy)
}
