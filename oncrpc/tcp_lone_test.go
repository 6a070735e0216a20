package oncrpc

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// loneEnv serves a program whose procedures report which goroutine of the
// connection ran them: proc 0 is Quick, proc 1 is not, proc 2 is Quick
// and waits for release.
type loneEnv struct {
	addr    string
	ranOn   chan string
	waiting chan struct{} // a QUICKWAIT call has entered its handler
	release chan struct{}
}

// runner names the connection goroutine that is running the caller:
// "reader" (tcpConn.readLoop) or "worker" (tcpConn.worker).
func runner() string {
	buf := make([]byte, 8192)
	st := string(buf[:runtime.Stack(buf, false)])
	switch {
	case strings.Contains(st, "(*tcpConn).worker"):
		return "worker"
	case strings.Contains(st, "(*tcpConn).readLoop"):
		return "reader"
	}
	return "unknown:\n" + st
}

func newLoneEnv(t *testing.T) *loneEnv {
	t.Helper()
	env := &loneEnv{ranOn: make(chan string, 16), waiting: make(chan struct{}, 16), release: make(chan struct{})}
	report := func(ctx context.Context, c *Call, r *Reply) error {
		env.ranOn <- runner()
		r.Head = append(r.Head, c.Args...)
		return nil
	}
	prog := &Program{Prog: 400100, Name: "lone", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "QUICK", Idempotent: true, Quick: true, Handler: report},
		{Name: "SLOW", Idempotent: true, Handler: report},
		{Name: "QUICKWAIT", Idempotent: true, Quick: true, Handler: func(ctx context.Context, c *Call, r *Reply) error {
			env.waiting <- struct{}{}
			select {
			case <-env.release:
			case <-ctx.Done():
			}
			return report(ctx, c, r)
		}},
	}}}}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	srv := NewServer(log, NewDispatcher(log, NewDRC(100, 1<<20, time.Minute), prog), ServerConfig{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.addr = l.Addr().String()
	go srv.ServeTCP(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return env
}

func (env *loneEnv) ran(t *testing.T) string {
	t.Helper()
	select {
	case s := <-env.ranOn:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not run")
		return ""
	}
}

// A Quick call with nothing else in flight is answered by the reader
// itself; a call that is not Quick goes to a worker.
func TestLoneQuickCallOnReader(t *testing.T) {
	env := newLoneEnv(t)
	c := dialT(t, env.addr)
	ctx := context.Background()
	for i := range 3 {
		res, err := c.Call(ctx, &ClientCall{Prog: 400100, Vers: 1, Proc: 0, Args: words(uint32(i))})
		if err != nil {
			t.Fatal(err)
		}
		if got := env.ran(t); got != "reader" {
			t.Fatalf("lone Quick call %d ran on %s, want the reader", i, got)
		}
		if string(res) != string(words(uint32(i))) {
			t.Fatalf("lone Quick call %d: reply body %x", i, res)
		}
	}
	if _, err := c.Call(ctx, &ClientCall{Prog: 400100, Vers: 1, Proc: 1, Args: words(7)}); err != nil {
		t.Fatal(err)
	}
	if got := env.ran(t); got != "worker" {
		t.Fatalf("non-Quick call ran on %s, want a worker", got)
	}
}

// A Quick call that arrives while another call runs goes to a worker, so
// it is answered while the first still waits.
func TestQuickCallBesideOtherInFlightOnWorker(t *testing.T) {
	env := newLoneEnv(t)
	c := dialT(t, env.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &ClientCall{Prog: 400100, Vers: 1, Proc: 2, Args: words(1)})
		first <- err
	}()
	// The waiting call is lone when it arrives: the reader runs it and
	// reads nothing else until it is answered. So a second Quick call
	// waits for it, which is the price of answering lone calls inline.
	// The second is sent once the first is in its handler: sent earlier,
	// both could arrive together (a loaded machine) and neither be lone.
	second := make(chan error, 1)
	select {
	case <-env.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not reach its handler")
	}
	go func() {
		_, err := c.Call(ctx, &ClientCall{Prog: 400100, Vers: 1, Proc: 0, Args: words(2)})
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("second call answered while the reader ran the first: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(env.release)
	if got := env.ran(t); got != "reader" {
		t.Fatalf("lone waiting call ran on %s, want the reader", got)
	}
	if got := env.ran(t); got != "reader" {
		t.Fatalf("second call (lone once the first was answered) ran on %s, want the reader", got)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}

	// With a non-Quick call in flight, a Quick call goes to a worker and
	// is answered before the first.
	block := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &ClientCall{Prog: 400100, Vers: 1, Proc: 1, Args: words(3)})
		block <- err
	}()
	if got := env.ran(t); got != "worker" {
		t.Fatalf("non-Quick call ran on %s", got)
	}
	if err := <-block; err != nil {
		t.Fatal(err)
	}
}

// Calls that arrive together (the second already buffered behind the
// first) go through the workers, so the second is answered while the
// first still waits.
func TestPipelinedQuickCallsOnWorkers(t *testing.T) {
	env := newLoneEnv(t)
	conn, err := net.Dial("tcp", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var raw []byte
	for _, c := range []struct{ xid, proc uint32 }{{1, 2}, {2, 0}} { // QUICKWAIT, then QUICK
		msg := AppendCallHeader(nil, &CallHeader{XID: c.xid, Prog: 400100, Vers: 1, Proc: c.proc})
		msg = append(msg, words(c.xid)...)
		raw = AppendRecordMark(raw, len(msg))
		raw = append(raw, msg...)
	}
	if _, err := conn.Write(raw); err != nil {
		t.Fatal(err)
	}
	if got := env.ran(t); got != "worker" {
		t.Fatalf("second of two buffered calls ran on %s, want a worker", got)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	rec, err := ReadRecord(br, nil, 1<<20)
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	if xid := uint32(rec[0])<<24 | uint32(rec[1])<<16 | uint32(rec[2])<<8 | uint32(rec[3]); xid != 2 {
		t.Fatalf("first reply has XID %d, want 2 (the first call still waits)", xid)
	}
	close(env.release)
	if got := env.ran(t); got != "worker" {
		t.Fatalf("first of two buffered calls ran on %s, want a worker", got)
	}
	if _, err := ReadRecord(br, nil, 1<<20); err != nil {
		t.Fatalf("reply: %v", err)
	}
}

// drainReader reports a drained socket only after a short read without
// an error: a read that filled its buffer, or failed, leaves the question
// to FIONREAD (socketIdle).
func TestDrainReaderShortReadOnly(t *testing.T) {
	d := drainReader{r: strings.NewReader("0123456789")}
	buf := make([]byte, 4)
	if n, err := d.Read(buf); n != 4 || err != nil || d.drained {
		t.Fatalf("full read: n %d err %v drained %v, want 4 nil false", n, err, d.drained)
	}
	big := make([]byte, 16)
	if n, err := d.Read(big); n != 6 || err != nil || !d.drained {
		t.Fatalf("short read: n %d err %v drained %v, want 6 nil true", n, err, d.drained)
	}
	if _, err := d.Read(big); err == nil || d.drained {
		t.Fatalf("read at EOF: err %v drained %v, want an error and false", err, d.drained)
	}
}
