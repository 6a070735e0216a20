package rpcrdma

import (
	"fmt"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
)

// TestSendWatchesReleased checks that the server's queue pairs, made
// with verbs.Config.LazySend, are left unwatched once each kind of call
// is answered: a WatchSend left held would make the completion loop wake
// for every Send completion again (the cost LazySend removes), which no
// answer would show. The watches themselves (RDMA Reads, send-queue
// room, buffers, drain, the idle sweep) are checked by the tests that
// hang without them.
func TestSendWatchesReleased(t *testing.T) {
	e := newEnv(t, Config{})
	if e.fab == nil {
		t.Skip("counts the software fabric's watches")
	}
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	data := make([]byte, 300<<10)
	pattern(5, data)
	for i, call := range []*oncrpc.ClientCall{
		{Prog: echoProg, Vers: echoVers, Proc: procNull},
		writeCall(data, 9), // a Read chunk: the RDMA Read is watched
		{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(200000, 3), ReplyPayloadMax: 200000}, // a Write chunk
		writeCall(data[:5000], 1),
	} {
		if _, err := c.Call(ctx, call); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		waitFor(t, fmt.Sprintf("no send watch after call %d", i), func() bool { return e.fab.Stats().SendWatches == 0 },
			func() string { return fmt.Sprint(e.fab.Stats().SendWatches) })
	}
}
