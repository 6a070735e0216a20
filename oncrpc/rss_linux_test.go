package oncrpc

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// These tests bound availability, not speed: the memory the process
// holds with many hostile connections, and that a fresh client is still
// answered quickly. RSS covers both ends (client and server run in this
// process). Under the race detector (memory ×5-10, every access slower)
// they run and assert the buffer bound and that probes are answered, but
// RSS and latency bounds are asserted by the run without it that
// `make test` adds.

// probeBound is how long a fresh client may wait for an answer.
const probeBound = 100 * time.Millisecond

// vmRSS reads the process's resident set size from /proc/self/status.
func vmRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// settledRSS collects garbage, returns freed memory to the OS and reads
// RSS: what the process holds, not what the collector has yet to find.
func settledRSS(t testing.TB) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return vmRSS(t)
}

// needDescriptors raises the soft RLIMIT_NOFILE to at least n (up to the
// hard limit) and restores it when the test ends; it fails the test when
// the hard limit is lower.
func needDescriptors(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n {
		t.Fatalf("this test needs %d descriptors; the hard RLIMIT_NOFILE is %d (raise it: ulimit -Hn)", n, rl.Max)
	}
	saved := rl
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved) })
}

// probe measures, probes times, a fresh client's dial and NULL call and
// then a 1 MiB READ on the same connection; it returns the medians.
func probe(t *testing.T, addr string, probes int) (nullMedian, readMedian time.Duration) {
	t.Helper()
	var nulls, reads []time.Duration
	for i := 0; i < probes; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		c, err := Dial(ctx, "tcp", addr)
		if err != nil {
			cancel()
			t.Fatalf("probe %d: dial: %v", i, err)
		}
		if _, err := c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 0}); err != nil {
			t.Fatalf("probe %d: NULL: %v", i, err)
		}
		nulls = append(nulls, time.Since(start))
		start = time.Now()
		res, err := c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 1, Args: xdr.AppendUint32(nil, 1<<20)})
		if err != nil || len(res) != 4+1<<20 {
			t.Fatalf("probe %d: READ: %d bytes, %v", i, len(res), err)
		}
		reads = append(reads, time.Since(start))
		c.Close()
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(nulls)
	slices.Sort(reads)
	t.Logf("fresh client: connect+NULL %v, 1 MiB READ %v (sorted, %d probes)", nulls, reads, probes)
	return nulls[len(nulls)/2], reads[len(reads)/2]
}

func checkProbes(t *testing.T, addr string) {
	t.Helper()
	null, read := probe(t, addr, 9)
	t.Logf("median: connect+NULL %v, READ %v (bound %v)", null, read, probeBound)
	if raceDetector {
		t.Logf("race detector on: latency bound not asserted here")
		return
	}
	if null > probeBound || read > probeBound {
		t.Errorf("fresh client answered in %v (NULL) / %v (READ) median, bound %v", null, read, probeBound)
	}
}

// closeAll closes conns from a few goroutines: a close that discards
// unread data resets the connection, and the kernel's work for that adds
// up over hundreds of connections on a loaded machine.
func closeAll(conns []net.Conn) {
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(conns); i += 8 {
				conns[i].Close()
			}
		}()
	}
	wg.Wait()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// idleConnBound is the most one idle connection may cost, both ends
// together: the server's 64 KiB read buffer, its 64 call slots without
// buffers, two goroutines, and the client's socket.
const idleConnBound = 128 << 10

// stalledConnBound is the most a connection with unread replies may cost
// besides its call buffers, both ends together: what an idle one costs,
// the workers blocked on its calls and the client's write buffer.
const stalledConnBound = 192 << 10

func TestRSSThousandIdleConnections(t *testing.T) {
	const conns = 1000
	needDescriptors(t, 2*conns+256)
	limits := NewLimits(LimitsConfig{MaxConns: conns + 64, MaxConnsPerClient: -1})
	env := newLimitsEnv(t, ServerConfig{Limits: limits}, nil)
	checkProbes(t, env.addr) // warm the server's paths before the baseline
	base := settledRSS(t)
	open := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	msg := AppendCallHeader(nil, &CallHeader{XID: 1, Prog: 400001, Vers: 1, Proc: 0})
	call := append(AppendRecordMark(nil, len(msg)), msg...)
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", env.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		open = append(open, c)
		// One call each, so the server has served the connection.
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(call); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if _, err := ReadRecord(c, nil, 1<<10); err != nil {
			t.Fatalf("connection %d: reply: %v", i, err)
		}
	}
	if n := limits.Conns(); n != conns {
		t.Fatalf("%d connections counted, want %d", n, conns)
	}
	rss := settledRSS(t)
	grew := rss - base
	bound := int64(conns * idleConnBound)
	t.Logf("%d idle connections: RSS %s -> %s, +%s (%.1f KiB per connection; bound %s = %d KiB each)",
		conns, mib(base), mib(rss), mib(grew), float64(grew)/conns/1024, mib(bound), idleConnBound>>10)
	if grew > bound && !raceDetector {
		t.Errorf("RSS grew %s with %d idle connections, bound %s", mib(grew), conns, mib(bound))
	}
	checkProbes(t, env.addr)
}

func TestRSSUnreadReplies(t *testing.T) {
	const (
		conns  = 300
		budget = 64 << 20
		reads  = 64 // READ calls each connection sends and never reads
		size   = 1 << 20
	)
	needDescriptors(t, 2*conns+256)
	limits := NewLimits(LimitsConfig{BufferBudget: budget, MaxConns: conns + 64, MaxConnsPerClient: -1})
	env := newLimitsEnv(t, ServerConfig{Limits: limits, IdleTimeout: -1}, nil)
	checkProbes(t, env.addr)
	base := settledRSS(t)
	var all []net.Conn
	defer func() { closeAll(all) }()
	for i := 0; i < conns; i++ {
		c := dialUnread(t, env.addr)
		all = append(all, c)
		w := bufio.NewWriter(c)
		for j := 0; j < reads; j++ {
			msg := AppendCallHeader(nil, &CallHeader{XID: uint32(j + 1), Prog: 400001, Vers: 1, Proc: 1})
			msg = xdr.AppendUint32(msg, size)
			w.Write(AppendRecordMark(nil, len(msg)))
			w.Write(msg)
		}
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := w.Flush(); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	sent := time.Now()
	held := waitSettled(limits)
	t.Logf("settled %v after the calls were sent; %d goroutines", time.Since(sent), runtime.NumGoroutine())
	rss := settledRSS(t)
	grew := rss - base
	// Within the budget, plus one exempt call per connection (a 1 MiB
	// payload; the small READ records are in the 64 KiB), plus what a
	// stalled connection costs besides its buffers.
	bound := int64(budget + conns*(size+64<<10) + conns*stalledConnBound)
	t.Logf("%d connections x %d unread 1 MiB READ replies (unbounded: %s): buffers held %s (budget %s); RSS %s -> %s, +%s (bound %s)",
		conns, reads, mib(int64(conns*reads*size)), mib(held), mib(budget), mib(base), mib(rss), mib(grew), mib(bound))
	if grew > bound && !raceDetector {
		t.Errorf("RSS grew %s, bound %s", mib(grew), mib(bound))
	}
	if held > int64(budget+conns*(size+64<<10)) {
		t.Errorf("buffers held %s, more than the budget plus one call per connection", mib(held))
	}
	checkProbes(t, env.addr)
}
