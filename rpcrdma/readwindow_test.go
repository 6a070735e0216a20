package rpcrdma

import (
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
)

// poolRegistered is how many buffers the one server connection's pool
// registered, and its eager and returning counts.
func poolRegistered(t *testing.T, e *env) (registered, eager, returning int) {
	t.Helper()
	conns := e.srv.life.Conns(nil)
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
	p := conns[0].big
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all), p.eager, p.returning
}

// TestReadBurstBoundsPool: a burst of large READs (each answered from a
// pool buffer through a Write chunk) waits for buffers coming back once
// the pool holds eager ones, instead of registering one per call.
func TestReadBurstBoundsPool(t *testing.T) {
	const calls = 24
	e := newEnv(t, Config{ReadWindow: 2 << 20})
	c := e.dial(rdmaclient.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(seed uint32) {
			defer wg.Done()
			cc := &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, seed), ReplyPayloadMax: 1 << 20}
			res, err := c.Call(ctxT(t), cc)
			if err != nil {
				errs <- err
				return
			}
			checkResult(t, cc, nil, res)
		}(uint32(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	registered, eager, returning := poolRegistered(t, e)
	t.Logf("%d concurrent 1 MiB READs: %d buffers registered (eager %d)", calls, registered, eager)
	if registered > eager {
		t.Errorf("%d buffers registered for %d concurrent 1 MiB READs, want at most %d", registered, calls, eager)
	}
	if returning < 0 || returning > registered {
		t.Errorf("%d buffers counted as coming back of %d registered", returning, registered)
	}
}

// TestReadWindowBoundsPool: a burst of large WRITEs, as the kernel client
// sends when it flushes a file (one per credit), pulls a read window's
// worth at a time and is answered in full, and the connection's pool ends
// with at most eager buffers registered, not one per call of the burst
// (without the window and the wait for buffers coming back it registered
// about one per call).
func TestReadWindowBoundsPool(t *testing.T) {
	const calls = 24
	e := newEnv(t, Config{ReadWindow: 2 << 20})
	c := e.dial(rdmaclient.Config{})
	data := make([]byte, 1<<20)
	pattern(7, data)
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(tail uint32) {
			defer wg.Done()
			res, err := c.Call(ctxT(t), writeCall(data, tail))
			if err != nil {
				errs <- err
				return
			}
			checkWrite(t, res, data, tail)
		}(uint32(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	registered, eager, returning := poolRegistered(t, e)
	t.Logf("%d concurrent 1 MiB WRITEs: %d buffers registered (eager %d)", calls, registered, eager)
	if registered > eager {
		t.Errorf("%d buffers registered for %d concurrent 1 MiB WRITEs, want at most %d", registered, calls, eager)
	}
	if eager >= calls {
		t.Fatalf("eager %d: the test needs a burst larger than it", eager)
	}
	if returning < 0 || returning > registered {
		t.Errorf("%d buffers counted as coming back of %d registered", returning, registered)
	}
}
