package oncrpc

// lifecycle.go: the serve/shutdown bookkeeping every server transport
// shares (TCP and UDP here, RPC-over-RDMA in rpcrdma): which listeners
// are open, which connections are served, which goroutines Shutdown waits
// for, and the context every connection's context derives from.
//
// Ownership: a Lifecycle owns none of the listeners or connections it
// tracks. It closes listeners and calls Drain and Abort on connections at
// Shutdown; the serve loops and connection goroutines that registered
// them still end and unregister them themselves.

import (
	"context"
	"io"
	"sync"

	"github.com/gonfsrdma/gonfsrdma/internal/drain"
)

// ServedConn is a connection a Lifecycle tracks.
type ServedConn interface {
	comparable
	// Drain makes the connection take no new calls, finish and answer
	// the calls in progress, then close.
	Drain()
	// Abort closes the connection at once; calls in progress end with
	// the lifecycle's context, which is cancelled before Abort is called.
	Abort()
}

// Lifecycle is one server's listeners, connections and goroutines, from
// the first Serve to the end of Shutdown.
type Lifecycle[C ServedConn] struct {
	ctx    context.Context
	cancel context.CancelFunc
	closed chan struct{} // closed when Shutdown begins

	mu        sync.Mutex
	closing   bool
	listeners map[io.Closer]struct{}
	conns     map[C]struct{}
	wg        sync.WaitGroup // serve loops, connection goroutines, sweepers
}

// NewLifecycle returns a lifecycle that serves until Shutdown.
func NewLifecycle[C ServedConn]() *Lifecycle[C] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Lifecycle[C]{
		ctx: ctx, cancel: cancel, closed: make(chan struct{}),
		listeners: make(map[io.Closer]struct{}),
		conns:     make(map[C]struct{}),
	}
}

// Context is the parent of every connection's context: cancelled when
// Shutdown has drained everything, or at once when its deadline passes.
func (l *Lifecycle[C]) Context() context.Context { return l.ctx }

// Closed is closed when Shutdown begins.
func (l *Lifecycle[C]) Closed() <-chan struct{} { return l.closed }

// Closing reports whether Shutdown has begun.
func (l *Lifecycle[C]) Closing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}

// Listen registers the listener (anything Shutdown should close: a
// net.Listener, a net.PacketConn, a verbs.Listener) of a serve loop that
// is about to run; the loop calls Unlisten when it ends. After Shutdown
// began it closes ln and returns false.
func (l *Lifecycle[C]) Listen(ln io.Closer) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		ln.Close()
		return false
	}
	l.listeners[ln] = struct{}{}
	l.wg.Add(1)
	return true
}

// Unlisten ends a serve loop registered with Listen. It does not close ln.
func (l *Lifecycle[C]) Unlisten(ln io.Closer) {
	l.mu.Lock()
	delete(l.listeners, ln)
	l.mu.Unlock()
	l.wg.Done()
}

// Go runs f on a goroutine that Shutdown waits for. After Shutdown began
// it does not run f and returns false.
func (l *Lifecycle[C]) Go(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f()
	}()
	return true
}

// Add registers a connection, from a goroutine started with Go (or a
// serve loop), so that Shutdown drains it. After Shutdown began it returns
// false; the caller closes the connection itself.
func (l *Lifecycle[C]) Add(c C) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

// Remove unregisters a connection that has closed.
func (l *Lifecycle[C]) Remove(c C) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// Len returns the number of connections registered.
func (l *Lifecycle[C]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Conns appends the registered connections to dst (for sweepers, which
// must not hold the lifecycle's lock while they look at each).
func (l *Lifecycle[C]) Conns(dst []C) []C {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		dst = append(dst, c)
	}
	return dst
}

// Shutdown stops accepting (closes every listener), drains every
// connection and waits for every serve loop and goroutine started with
// Go. If ctx ends first, it cancels Context, aborts every connection,
// waits all the same and returns ctx.Err().
func (l *Lifecycle[C]) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	if !l.closing {
		close(l.closed)
	}
	l.closing = true
	for ln := range l.listeners {
		ln.Close()
	}
	for c := range l.conns {
		c.Drain()
	}
	l.mu.Unlock()
	return drain.Wait(ctx, &l.wg, l.cancel, func() {
		l.mu.Lock()
		for c := range l.conns {
			c.Abort()
		}
		l.mu.Unlock()
	})
}
