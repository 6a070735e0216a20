package oncrpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

type fakeListener struct{ closed atomic.Int32 }

func (l *fakeListener) Close() error { l.closed.Add(1); return nil }

// fakeConn ends its goroutine when drained (or, if stuck, when aborted).
type fakeConn struct {
	stuck           bool
	drained, abortd atomic.Int32
	done            chan struct{}
}

func (c *fakeConn) Drain() {
	c.drained.Add(1)
	if !c.stuck {
		close(c.done)
	}
}

func (c *fakeConn) Abort() {
	c.abortd.Add(1)
	if c.stuck {
		close(c.done)
	}
}

// TestLifecycleShutdown: Shutdown closes listeners, drains every
// connection, waits for their goroutines; after it nothing new starts.
func TestLifecycleShutdown(t *testing.T) {
	l := NewLifecycle[*fakeConn]()
	ln := &fakeListener{}
	if !l.Listen(ln) {
		t.Fatal("Listen refused before Shutdown")
	}
	loopDone := make(chan struct{})
	go func() {
		// A serve loop: ends when its listener is closed.
		for ln.closed.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		l.Unlisten(ln)
		close(loopDone)
	}()
	conns := []*fakeConn{{done: make(chan struct{})}, {done: make(chan struct{})}}
	var ended atomic.Int32
	for _, c := range conns {
		if !l.Add(c) || !l.Go(func() { <-c.done; l.Remove(c); ended.Add(1) }) {
			t.Fatal("Add/Go refused before Shutdown")
		}
	}
	if l.Len() != 2 || len(l.Conns(nil)) != 2 {
		t.Fatalf("Len %d, Conns %d; want 2", l.Len(), len(l.Conns(nil)))
	}
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-loopDone
	if ended.Load() != 2 || l.Len() != 0 {
		t.Fatalf("after Shutdown: %d goroutines ended, %d conns left", ended.Load(), l.Len())
	}
	for _, c := range conns {
		if c.drained.Load() != 1 || c.abortd.Load() != 0 {
			t.Fatalf("conn drained %d aborted %d; want 1, 0", c.drained.Load(), c.abortd.Load())
		}
	}
	select {
	case <-l.Closed():
	default:
		t.Fatal("Closed not closed")
	}
	if l.Context().Err() == nil {
		t.Fatal("context not cancelled after Shutdown")
	}
	ln2 := &fakeListener{}
	if l.Listen(ln2) || ln2.closed.Load() != 1 {
		t.Fatal("Listen after Shutdown: not refused, or listener left open")
	}
	if l.Add(&fakeConn{}) || l.Go(func() { t.Error("ran after Shutdown") }) {
		t.Fatal("Add/Go after Shutdown not refused")
	}
}

// TestLifecycleShutdownDeadline: a connection that does not drain is
// aborted when the context ends, after the lifecycle's context is
// cancelled; Shutdown still waits for it and reports the deadline.
func TestLifecycleShutdownDeadline(t *testing.T) {
	l := NewLifecycle[*fakeConn]()
	c := &fakeConn{stuck: true, done: make(chan struct{})}
	var cancelledFirst atomic.Bool
	l.Add(c)
	l.Go(func() {
		<-c.done
		cancelledFirst.Store(l.Context().Err() != nil)
		l.Remove(c)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	if c.drained.Load() != 1 || c.abortd.Load() != 1 || !cancelledFirst.Load() || l.Len() != 0 {
		t.Fatalf("drained %d aborted %d cancelled-first %v left %d", c.drained.Load(), c.abortd.Load(), cancelledFirst.Load(), l.Len())
	}
}
