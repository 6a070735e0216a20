package rpcrdma

import (
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
)

// burstBoundsPool sends calls concurrent calls (call(c, i) makes and checks
// call i) on one connection with a 2 MiB read window, then checks that its
// pool ended with at most eager buffers registered, not one per call of
// the burst, and that the count of buffers coming back is sane.
func burstBoundsPool(t *testing.T, what string, call func(c *rdmaclient.Client, i uint32) error) {
	const calls = 24
	e := newEnv(t, Config{ReadWindow: 2 << 20})
	c := e.dial(rdmaclient.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i uint32) {
			defer wg.Done()
			if err := call(c, i); err != nil {
				errs <- err
			}
		}(uint32(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	conns := e.srv.life.Conns(nil)
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
	p := conns[0].big
	p.mu.Lock()
	registered, eager, returning := len(p.all), p.eager, p.returning
	p.mu.Unlock()
	t.Logf("%d concurrent %s: %d buffers registered (eager %d)", calls, what, registered, eager)
	if eager >= calls {
		t.Fatalf("eager %d: the test needs a burst larger than it", eager)
	}
	if registered > eager {
		t.Errorf("%d buffers registered for %d concurrent %s, want at most %d", registered, calls, what, eager)
	}
	if returning < 0 || returning > registered {
		t.Errorf("%d buffers counted as coming back of %d registered", returning, registered)
	}
}

// TestReadBurstBoundsPool: a burst of large READs (each answered from a
// pool buffer through a Write chunk) waits for buffers coming back once
// the pool holds eager ones, instead of registering one per call.
func TestReadBurstBoundsPool(t *testing.T) {
	burstBoundsPool(t, "1 MiB READs", func(c *rdmaclient.Client, i uint32) error {
		cc := &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, i), ReplyPayloadMax: 1 << 20}
		res, err := c.Call(ctxT(t), cc)
		if err == nil {
			checkResult(t, cc, nil, res)
		}
		return err
	})
}

// TestReadWindowBoundsPool: a burst of large WRITEs, as the kernel client
// sends when it flushes a file (one per credit), pulls a read window's
// worth at a time and is answered in full, and the connection's pool ends
// with at most eager buffers registered, not one per call of the burst
// (without the window and the wait for buffers coming back it registered
// about one per call).
func TestReadWindowBoundsPool(t *testing.T) {
	data := make([]byte, 1<<20)
	pattern(7, data)
	burstBoundsPool(t, "1 MiB WRITEs", func(c *rdmaclient.Client, i uint32) error {
		res, err := c.Call(ctxT(t), writeCall(data, i))
		if err == nil {
			checkWrite(t, res, data, i)
		}
		return err
	})
}
