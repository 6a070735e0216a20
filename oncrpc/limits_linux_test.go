package oncrpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// limitsEnv is a TCP server whose log lines the test can read.
type limitsEnv struct {
	srv  *Server
	addr string
	logs *observer.ObservedLogs
}

// bulkProgram: proc 0 NULL, proc 1 READ-like: the argument is a byte
// count, the reply carries that many bytes from AllocPayload.
func bulkProgram() *Program {
	return &Program{Prog: 400001, Name: "bulk", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "NULL", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return nil }},
		{Name: "READ", Idempotent: true, Handler: func(ctx context.Context, c *Call, r *Reply) error {
			if len(c.Args) != 4 {
				return ErrGarbageArgs
			}
			n := binary.BigEndian.Uint32(c.Args)
			if n > 1<<20 {
				return ErrGarbageArgs
			}
			p := r.AllocPayload(int(n))
			for i := 0; i < len(p); i += 4096 {
				p[i] = byte(i)
			}
			r.Head = xdr.AppendUint32(r.Head, n)
			r.SetPayload(p)
			return nil
		}},
	}}}}
}

func newLimitsEnv(t testing.TB, cfg ServerConfig, l net.Listener) *limitsEnv {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	env := &limitsEnv{logs: logs}
	env.srv = NewServer(log, NewDispatcher(log, nil, bulkProgram()), cfg)
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	env.addr = l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- env.srv.ServeTCP(l) }()
	t.Cleanup(func() {
		// Draining hundreds of connections whose clients just went away
		// takes well under a second on an idle machine; the generous
		// deadline is for the race detector beside other test binaries.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		if err := env.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v after %v", err, time.Since(start))
		} else if d := time.Since(start); d > time.Second {
			t.Logf("shutdown drained in %v", d)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("ServeTCP returned %v, want ErrServerClosed", err)
		}
	})
	return env
}

// logged waits up to 5 s for a line containing msg.
func (e *limitsEnv) logged(t testing.TB, msg string) observer.LoggedEntry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range e.logs.All() {
			if strings.Contains(l.Message, msg) {
				return l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no log line %q; have %v", msg, e.logs.All())
	return observer.LoggedEntry{}
}

// nullCall makes one NULL call over a new connection from the default
// local address and returns how long dial and call took.
func nullCall(ctx context.Context, addr string) (time.Duration, error) {
	start := time.Now()
	c, err := Dial(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 0}); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// flakyListener fails its first n Accepts with err.
type flakyListener struct {
	net.Listener
	n     atomic.Int32
	err   error
	calls atomic.Int32
	// The times of the first and the last failure.
	firstFail, lastFail atomic.Int64
}

func (f *flakyListener) Accept() (net.Conn, error) {
	f.calls.Add(1)
	if f.n.Add(-1) >= 0 {
		now := time.Now().UnixNano()
		f.firstFail.CompareAndSwap(0, now)
		f.lastFail.Store(now)
		return nil, f.err
	}
	return f.Listener.Accept()
}

// failSpan is the time from the first failure to the last.
func (f *flakyListener) failSpan() time.Duration {
	return time.Duration(f.lastFail.Load() - f.firstFail.Load())
}

func TestAcceptOutOfDescriptorsBacksOff(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fl := &flakyListener{Listener: inner, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}}
			fl.n.Store(6)
			start := time.Now()
			env := newLimitsEnv(t, ServerConfig{}, fl)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := nullCall(ctx, env.addr); err != nil {
				t.Fatalf("no answer after %d failed accepts: %v", 6, err)
			}
			// Six failures wait 5+10+20+40+80+160 ms before the seventh
			// Accept: a server that spun would be much faster, one that
			// stopped would not answer at all.
			if took := time.Since(start); took < 315*time.Millisecond {
				t.Errorf("answered %v after start: the back-off did not wait", took)
			}
			if n := fl.calls.Load(); n < 7 {
				t.Errorf("%d accepts, want at least 7", n)
			}
			line := env.logged(t, "accept failed; retrying")
			if line.Level != zap.WarnLevel {
				t.Errorf("accept failure logged at %v", line.Level)
			}
			// One line a second at most: six failures within a second
			// (315 ms of back-off on an idle machine) are one line. A
			// loaded machine can stretch the back-off past a second;
			// then one line more per second is allowed, never more.
			span := fl.failSpan()
			if n, most := env.logs.FilterMessage("accept failed; retrying").Len(), 1+int(span/time.Second); n > most {
				t.Errorf("%d log lines for 6 failures within %v, want at most %d (one a second)", n, span, most)
			}
		})
	}
}

// TestAcceptFatalErrorEndsServe: an error that is not temporary still
// ends ServeTCP (a closed listener must not spin).
func TestAcceptFatalErrorEndsServe(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fatal := errors.New("listener broke")
	fl := &flakyListener{Listener: inner, err: fatal}
	fl.n.Store(1)
	srv := NewServer(zap.NewNop(), NewDispatcher(zap.NewNop(), nil, bulkProgram()), ServerConfig{})
	defer srv.Shutdown(context.Background())
	if err := srv.ServeTCP(fl); !errors.Is(err, fatal) {
		t.Fatalf("ServeTCP = %v, want %v", err, fatal)
	}
	inner.Close()
}

// TestAcceptRealEMFILEKeepsServing lowers the process's descriptor limit
// until accept4 fails with EMFILE, then gives the descriptors back: the
// server must answer again.
func TestAcceptRealEMFILEKeepsServing(t *testing.T) {
	env := newLimitsEnv(t, ServerConfig{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := nullCall(ctx, env.addr); err != nil {
		t.Fatal(err)
	}
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
				t.Errorf("restoring RLIMIT_NOFILE: %v", err)
			}
		}
	}
	defer restore()
	low := saved
	low.Cur = uint64(openFDs(t) + 16)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	// Each loopback connection costs a descriptor on both ends; once the
	// client side can open no more, the server's accepts fail too.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 64; i++ {
		c, err := net.DialTimeout("tcp", env.addr, time.Second)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Logf("dial %d: %v", i, err)
			}
			break
		}
		conns = append(conns, c)
	}
	line := env.logged(t, "accept failed; retrying")
	if err, _ := line.ContextMap()["error"].(string); !strings.Contains(err, "too many open files") {
		t.Errorf("accept failure logged as %q, want EMFILE", err)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	restore()
	took, err := nullCall(ctx, env.addr)
	if err != nil {
		t.Fatalf("server does not answer after descriptors came back: %v", err)
	}
	t.Logf("answered %v after the descriptors came back", took)
}

// dialFrom connects to addr from the loopback address local.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answers reports whether a NULL call over c is answered (false: the
// server closed c).
func answers(t *testing.T, c net.Conn) bool {
	t.Helper()
	msg := AppendCallHeader(nil, &CallHeader{XID: 7, Prog: 400001, Vers: 1, Proc: 0})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(append(AppendRecordMark(nil, len(msg)), msg...)); err != nil {
		return false
	}
	rec, err := ReadRecord(c, nil, 1<<20)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return false
		}
		t.Fatalf("reading the reply: %v", err)
	}
	if _, err := ParseReply(rec); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return true
}

func TestConnectionCaps(t *testing.T) {
	limits := NewLimits(LimitsConfig{MaxConns: 3, MaxConnsPerClient: 2})
	env := newLimitsEnv(t, ServerConfig{Limits: limits}, nil)
	a1, a2 := dialFrom(t, "127.0.0.1", env.addr), dialFrom(t, "127.0.0.1", env.addr)
	if !answers(t, a1) || !answers(t, a2) {
		t.Fatal("connections within the caps not served")
	}
	if answers(t, dialFrom(t, "127.0.0.1", env.addr)) {
		t.Fatal("third connection from one client served; per-client cap is 2")
	}
	line := env.logged(t, "connection refused: limit reached")
	if line.ContextMap()["client"] != "127.0.0.1" {
		t.Errorf("refusal names client %v", line.ContextMap()["client"])
	}
	b1 := dialFrom(t, "127.0.0.2", env.addr)
	if !answers(t, b1) {
		t.Fatal("another client's first connection refused")
	}
	if answers(t, dialFrom(t, "127.0.0.3", env.addr)) {
		t.Fatal("fourth connection served; total cap is 3")
	}
	if n := limits.Conns(); n != 3 {
		t.Errorf("%d connections counted, want 3", n)
	}
	// A connection that ends frees its place.
	a1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for limits.Conns() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !answers(t, dialFrom(t, "127.0.0.3", env.addr)) {
		t.Fatal("connection refused after another ended")
	}
}

func TestIdleTimeout(t *testing.T) {
	// busy calls every idle/6: a loaded machine that holds the test up
	// for most of a timeout would make busy look idle, so the timeout is
	// long enough that only a real defect closes it.
	const idle = time.Second
	env := newLimitsEnv(t, ServerConfig{IdleTimeout: idle}, nil)
	quiet := dialFrom(t, "127.0.0.1", env.addr)
	busy := dialFrom(t, "127.0.0.1", env.addr)
	slow := dialFrom(t, "127.0.0.1", env.addr)
	if !answers(t, quiet) || !answers(t, busy) {
		t.Fatal("not served")
	}
	// slow trickles a record in: a 100-byte fragment, one byte per 50 ms.
	stopSlow := make(chan struct{})
	defer close(stopSlow)
	go func() {
		slow.Write(AppendRecordMark(nil, 100))
		for {
			select {
			case <-stopSlow:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := slow.Write([]byte{0}); err != nil {
					return
				}
			}
		}
	}()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		var b [1]byte
		quiet.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := quiet.Read(b[:])
		if errors.Is(err, io.EOF) {
			closed <- time.Since(start)
		} else {
			closed <- -1
		}
	}()
	// busy keeps calling for three timeouts and must stay open.
	for time.Since(start) < 3*idle {
		if !answers(t, busy) {
			t.Fatalf("busy connection closed after %v", time.Since(start))
		}
		time.Sleep(idle / 6)
	}
	took := <-closed
	if took < 0 {
		t.Fatal("idle connection not closed with EOF")
	}
	t.Logf("idle connection closed after %v (timeout %v)", took, idle)
	if took < idle {
		t.Errorf("idle connection closed after %v, before the timeout %v", took, idle)
	}
	var b [1]byte
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := slow.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Errorf("connection trickling a record: read %v, want EOF (closed as idle)", err)
	}
	env.logged(t, "closing idle connection")
}

// TestStalledConnectionClosed: a client that sends calls and never reads
// the replies is closed once its replies made no progress for the idle
// timeout; others are served meanwhile.
func TestStalledConnectionClosed(t *testing.T) {
	const idle = 400 * time.Millisecond
	env := newLimitsEnv(t, ServerConfig{IdleTimeout: idle}, nil)
	c := dialUnread(t, env.addr)
	sendReads(t, c, 64, 1<<20)
	env.logged(t, "closing stalled connection")
	if !answers(t, dialFrom(t, "127.0.0.1", env.addr)) {
		t.Fatal("fresh client not served")
	}
}

// dialUnread connects with a small receive buffer, for a client that will
// not read.
func dialUnread(t testing.TB, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendReads writes n READ calls of size bytes each on c.
func sendReads(t testing.TB, c net.Conn, n, size int) {
	t.Helper()
	w := bufio.NewWriter(c)
	for i := 0; i < n; i++ {
		msg := AppendCallHeader(nil, &CallHeader{XID: uint32(i + 1), Prog: 400001, Vers: 1, Proc: 1})
		msg = xdr.AppendUint32(msg, uint32(size))
		w.Write(AppendRecordMark(nil, len(msg)))
		w.Write(msg)
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestBufferBudgetBoundsUnreadReplies: connections that never read their
// replies hold at most their share of the budget or one call each; a
// fresh client is answered.
func TestBufferBudgetBoundsUnreadReplies(t *testing.T) {
	const (
		budget = 8 << 20
		conns  = 20
		call   = 1 << 20
	)
	limits := NewLimits(LimitsConfig{BufferBudget: budget, MaxConnsPerClient: -1})
	env := newLimitsEnv(t, ServerConfig{Limits: limits, IdleTimeout: -1}, nil)
	for i := 0; i < conns; i++ {
		sendReads(t, dialUnread(t, env.addr), 64, call)
	}
	// Wait until the buffers stop growing.
	settled := waitSettled(limits)
	// Each connection may hold its share of the budget plus one call
	// (1 MiB payload, its record and reply head) beyond it.
	bound := int64(budget + conns*(call+64<<10))
	t.Logf("%d connections with 64 unread 1 MiB replies each hold %d MiB of buffers (budget %d MiB, bound %d MiB)",
		conns, settled>>20, budget>>20, bound>>20)
	if settled > bound {
		t.Errorf("buffers %d > bound %d", settled, bound)
	}
	env.logged(t, "connection over its buffer share")
	if !answers(t, dialFrom(t, "127.0.0.1", env.addr)) {
		t.Fatal("fresh client not served")
	}
	c := dialFrom(t, "127.0.0.1", env.addr)
	cl := NewClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		res, err := cl.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 1, Args: xdr.AppendUint32(nil, call)})
		if err != nil {
			t.Fatalf("READ on a fresh connection: %v", err)
		}
		if len(res) != 4+call {
			t.Fatalf("READ returned %d bytes", len(res))
		}
	}
}

// waitSettled returns the budget's use once it stopped changing for
// 300 ms (at most 10 s).
func waitSettled(l *Limits) int64 {
	last, since := l.BufferBytes(), time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && time.Since(since) < 300*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
		if n := l.BufferBytes(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}
