package adversary

// Attacks on the resource limits of issue 11 through the daemon's limit
// settings (daemon.Config MaxConns, MaxConnsPerClient, BufferBudget,
// IdleTimeout).

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Limits of TestLimits' daemon, small enough to reach in a test.
const (
	testIdleTimeout       = 2 * time.Second
	testMaxConnsPerClient = 16
	testMaxConns          = 64
	testBufferBudget      = 256 << 20
)

// TestLimits attacks a daemon with small limits: connections beyond the
// per-client and total caps are closed, idle and half-sent connections
// are closed after the idle timeout while busy ones stay, and unread
// replies stay within the buffer budget.
func TestLimits(t *testing.T) {
	e := newEnv(t, func(c *daemon.Config) {
		c.IdleTimeout = testIdleTimeout
		c.MaxConnsPerClient = testMaxConnsPerClient
		c.MaxConns = testMaxConns
		c.BufferBudget = testBufferBudget
	})
	runAttacks(t, e, limitAttacks)
}

var limitAttacks = []attack[*env]{
	{"idle", limitIdle},
	{"perclient", limitPerClient},
	{"total", limitTotal},
	{"unread", limitUnread},
}

// liveHeap collects garbage and returns the bytes of live heap objects.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// closedWithin reports whether the server closes c within d (a read
// returns EOF or a reset), reading and discarding replies meanwhile.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		return err == io.EOF || errors.Is(err, syscall.ECONNRESET)
	}
}

// answers reports whether a NULL call over a fresh connection from ip
// gets an answer.
func answers(e *env, ip string) (*Conn, bool) {
	c, err := Dial(context.Background(), e.d.NFSAddr(), ip)
	if err != nil {
		return nil, false
	}
	c.Timeout = 10 * time.Second
	if err := c.Null(); err != nil {
		c.Close()
		return nil, false
	}
	return c, true
}

// An idle connection, and one holding a half-sent record, are closed
// after the idle timeout; one that keeps calling is not.
func limitIdle(t *testing.T, e *env) {
	idle, err := dialRaw(e.d.NFSAddr(), attackerIP)
	must(t, err)
	defer idle.Close()
	half, err := dialRaw(e.d.NFSAddr(), attackerIP)
	must(t, err)
	defer half.Close()
	half.Write([]byte{0x80, 0x10, 0, 0, 1, 2, 3, 4}) // claims 1 MiB, sends 4 bytes
	busy, ok := answers(e, bystanderIP)
	if !ok {
		t.Fatal("no answer to a NULL call")
	}
	defer busy.Close()
	start := time.Now()
	done := make(chan [2]bool)
	go func() { done <- [2]bool{closedWithin(idle, 5*testIdleTimeout), closedWithin(half, 5*testIdleTimeout)} }()
	for time.Since(start) < 3*testIdleTimeout {
		if err := busy.Null(); err != nil {
			t.Fatalf("a connection calling every %v was closed after %v: %v", testIdleTimeout/10, time.Since(start), err)
		}
		time.Sleep(testIdleTimeout / 10)
	}
	closed := <-done
	if !closed[0] {
		t.Errorf("an idle connection was not closed within %v of an idle timeout of %v", 5*testIdleTimeout, testIdleTimeout)
	}
	if !closed[1] {
		t.Errorf("a connection holding a half-sent record was not closed within %v of an idle timeout of %v", 5*testIdleTimeout, testIdleTimeout)
	}
	diskStillServed(t, e, "after-idle-timeout")
}

// Connections from one address beyond MaxConnsPerClient are closed;
// those within it and another address's are served.
func limitPerClient(t *testing.T, e *env) {
	var served []*Conn
	defer func() {
		for _, c := range served {
			c.Close()
		}
	}()
	refusedConns := 0
	for range testMaxConnsPerClient + 8 {
		if c, ok := answers(e, attackerIP); ok {
			served = append(served, c)
		} else {
			refusedConns++
		}
	}
	t.Logf("%d connections from one address: %d served, %d refused (cap %d)", testMaxConnsPerClient+8, len(served), refusedConns, testMaxConnsPerClient)
	if len(served) > testMaxConnsPerClient {
		t.Errorf("%d connections from one address served, over the cap of %d", len(served), testMaxConnsPerClient)
	}
	if len(served) < testMaxConnsPerClient {
		t.Errorf("only %d connections from one address served, under the cap of %d", len(served), testMaxConnsPerClient)
	}
	freshClient(t, e, "one address at its cap")
}

// Connections beyond MaxConns in total, from many addresses, are
// closed.
func limitTotal(t *testing.T, e *env) {
	var served []*Conn
	defer func() {
		for _, c := range served {
			c.Close()
		}
	}()
	for i := range testMaxConns + 16 {
		if c, ok := answers(e, attackerAddr(i)); ok {
			served = append(served, c)
		}
	}
	t.Logf("%d connections from 50 addresses: %d served (cap %d)", testMaxConns+16, len(served), testMaxConns)
	if len(served) > testMaxConns {
		t.Errorf("%d connections served, over the total cap of %d", len(served), testMaxConns)
	}
	for _, c := range served {
		c.Close()
	}
	served = nil
	// Once they are gone the server takes new clients again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, ok := answers(e, bystanderIP)
		if ok {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after the attackers left, a fresh client is still refused")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// 300 connections from 50 addresses each send 8 READs of 1 MiB and
// never read a reply, against a daemon of its own with a 256 MiB buffer
// budget. The server may stall them, never grow without bound. Two
// bounds, both what the budget promises (oncrpc's budget.go: the budget
// plus one call, a record of MaxRecord and a payload, per connection):
//   - the live heap after a collection, at most that plus 64 MiB: exact,
//     and untouched by the race detector's shadow memory;
//   - RSS, watched while the attack ramps up (the attack stops when it
//     passes, so that a server without a budget does not take the
//     machine down with it): twice the promise (GOGC=100 lets the heap
//     reach twice what is live) plus 512 MiB, times memoryFactor for the
//     slack under the race detector.
//
// Without a budget the attack would pin 300 x 8 MiB.
func limitUnread(t *testing.T, _ *env) {
	e := newEnv(t, func(c *daemon.Config) { c.BufferBudget = testBufferBudget })
	const (
		conns   = 300
		perConn = 8
		count   = 1 << 20
		promise = testBufferBudget + conns*(oncrpc.DefaultMaxRecord+count)
		heapMax = promise + 64<<20
		bound   = 2*promise + 512<<20*memoryFactor
	)
	big := filepath.Join(e.exp, "big")
	must(t, os.WriteFile(big, make([]byte, count), 0o644))
	fh := lookupPath(t, e.dial(bystanderIP, Sys(userUID, userGID)), e.root(e.exp), "big")
	base := rssBaseline(t)
	baseHeap := liveHeap()
	var open []net.Conn
	defer func() { closeAll(open) }()
	peak := int64(0)
	for i := 0; i < conns && peak <= bound; i++ {
		c, err := Dial(context.Background(), e.d.NFSAddr(), attackerAddr(i))
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		open = append(open, c.NetConn())
		c.Cred = Sys(userUID, userGID)
		c.Timeout = 200 * time.Millisecond
		for range perConn {
			if _, err := c.Send(NFSProgram, NFSVersion, ProcRead, ReadArgs(fh, 0, count)); err != nil {
				break // the server stopped reading this connection: its right
			}
		}
		peak = max(peak, rssBytes(t)-base)
	}
	for range 10 { // the server's handlers may still be filling buffers
		time.Sleep(100 * time.Millisecond)
		peak = max(peak, rssBytes(t)-base)
	}
	live := liveHeap() - baseHeap
	t.Logf("%d connections x %d unread 1 MiB READs, budget %d MiB: live heap +%d MiB (bound %d MiB), RSS peak growth %d MiB (bound %d MiB)",
		len(open), perConn, testBufferBudget>>20, live>>20, heapMax>>20, peak>>20, bound>>20)
	if live > heapMax {
		t.Errorf("unread replies hold %d MiB of live heap, over %d MiB", live>>20, heapMax>>20)
	}
	if peak > bound {
		t.Errorf("unread replies grew RSS by %d MiB after %d connections, over %d MiB", peak>>20, len(open), bound>>20)
	}
	freshClient(t, e, "unread replies within a budget")
	diskStillServed(t, e, "after-unread-budget")
	if b, _ := os.ReadFile(big); len(b) != count {
		t.Errorf("the file read by the attack now has %d bytes", len(b))
	}
}
