package rpcrdma

// The two RFC 8166 rules of issue 12 for the server's own troubles, on the
// software fabric with faults injected on the server's queue pairs
// (faultConn, recovery_test.go): a call the server cannot get a
// registered buffer for is not reported to the client as ERR_CHUNK, and
// a Receive that could not be re-posted is never followed by a grant of
// the full credits.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

var errInjectedRegister = errors.New("injected: ibv_reg_mr failed (ENOMEM)")

// failRegs holds, per server queue pair, how many Register calls from now
// on fail (a side table, so faultConn's fields stay recovery_test.go's).
var failRegs sync.Map // *faultConn -> *atomic.Int32

func (c *faultConn) failRegister(n int32) {
	v, _ := failRegs.LoadOrStore(c, new(atomic.Int32))
	v.(*atomic.Int32).Store(n)
}

// Register fails while failRegister's count lasts, as ibv_reg_mr does
// when the device or the locked-memory limit is exhausted.
func (c *faultConn) Register(size int, access verbs.Access) (*verbs.MR, error) {
	if v, ok := failRegs.Load(c); ok && v.(*atomic.Int32).Add(-1) >= 0 {
		return nil, errInjectedRegister
	}
	return c.Conn.Register(size, access)
}

// TestShortageIsNotErrChunk: the server cannot register the buffer a call
// needs (READ payload staging for a Write chunk, reply staging for a
// Reply chunk, call assembly around a Read chunk). Before, the first came
// back as RDMA_ERROR ERR_CHUNK, which makes the Linux client fail the
// RPC without retransmitting, and the other two got no answer at all.
// Now the server logs it once, counts it and drops the connection; the
// call fails with ErrClosed (never an RDMAError), nothing leaks, and the
// retransmission on a new connection gets the right answer (APPEND runs
// exactly once).
func TestShortageIsNotErrChunk(t *testing.T) {
	data := make([]byte, 64<<10)
	pattern(3, data)
	for _, c := range []struct {
		name string
		cc   *oncrpcCall
		step string
	}{
		{"WriteChunkPayload", &oncrpcCall{fetchCall(256<<10, 9), nil}, "staging the READ payload"},
		{"ReplyChunk", &oncrpcCall{listCall(128 << 10), nil}, "staging the reply for the Reply chunk"},
		{"ReadChunkAssembly", &oncrpcCall{appendCall(data), data}, "assembling the call around its Read chunks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newFaultEnv(t, &ledger{})
			cl := e.dial()
			fc := e.prov.nth(t, 1)
			fc.failRegister(1 << 20)
			xid := cl.NextXID()
			_, err := cl.Call(ctxT(t), withXID(c.cc.cc, xid))
			var re *rdmaclient.RDMAError
			if errors.As(err, &re) {
				t.Fatalf("shortage answered with RDMA_ERROR %v", re.Code)
			}
			if !errors.Is(err, rdmaclient.ErrClosed) {
				t.Fatalf("call during the shortage: %v, want ErrClosed (connection dropped)", err)
			}
			fc.failRegister(0)
			e.closeAndCheckMemory(cl)
			if n := e.srv.Stats().Shortages; n != 1 {
				t.Fatalf("Stats().Shortages = %d, want 1", n)
			}
			e.oneWarning("connection failed", map[string]string{"first_error": errInjectedRegister.Error(), "work_request": c.step})
			seq := e.retransmit(c.cc.cc, c.cc.data, xid)
			if c.cc.cc.Proc == ledgerAppend && (seq != 1 || e.led.appends.Load() != 1) {
				t.Fatalf("APPEND ran %d times, sequence %d: want once", e.led.appends.Load(), seq)
			}
		})
	}
}

// oncrpcCall is a call and the data its results must match.
type oncrpcCall struct {
	cc   *oncrpc.ClientCall
	data []byte
}

// TestRepostFailureLowersGrant: a Receive the completion loop could not
// re-post stays owed, and every reply built until it is posted grants
// Credits less what is owed (never 0), as RFC 8166 section 3.3.1 asks
// (a grant covers Receives actually posted); the connection is then torn
// down (TestRecoveryReceiveRepostFails). The completion loop is idle
// here, so the test runs its re-post step itself.
func TestRepostFailureLowersGrant(t *testing.T) {
	e := newFaultEnv(t, &ledger{})
	cl := e.dial()
	fc := e.prov.nth(t, 1)
	conns := e.srv.life.Conns(nil)
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
	c := conns[0]
	if g := c.grant(); g != c.credits {
		t.Fatalf("grant before any failure = %d, want %d", g, c.credits)
	}
	fc.failPostRecv(1)
	// As if a Receive completed: it is consumed and its replacement
	// cannot be posted.
	c.repost()
	if g := c.grant(); g != c.credits-1 {
		t.Fatalf("grant after a failed re-post = %d, want %d", g, c.credits-1)
	}
	b := proto.AppendError(nil, 1, c.grant(), proto.ErrChunk)
	if g, _ := proto.PeekCredits(b); g >= c.credits {
		t.Fatalf("a reply after the failed re-post grants %d of %d credits", g, c.credits)
	}
	// The grant never reaches 0, however many are owed.
	c.mu.Lock()
	c.owed = int(c.credits) + 5
	c.mu.Unlock()
	if g := c.grant(); g != 1 {
		t.Fatalf("grant with every Receive owed = %d, want 1", g)
	}
	e.closeAndCheckMemory(cl)
	e.oneWarning("connection failed", map[string]string{"first_error": errInjectedPostRecv.Error(), "work_request": "receive re-post"})
}

// TestOverrunLowersGrant: the same rule seen from the client. A client
// that ignores its grant keeps every slot busy (Credits BLOCK calls, each
// Receive replaced from the free slots), then sends one call more: its
// Receive cannot be replaced (no free slot), so the reply grants
// Credits-1, as does the next one while a Receive is owed; once slots are
// free again the owed Receive is posted and the grant is back to Credits.
// Before, every one of these replies granted Credits with fewer Receives
// posted.
func TestOverrunLowersGrant(t *testing.T) {
	const credits = 4
	e := newEnv(t, Config{Credits: credits})
	c := e.dial(rdmaclient.Config{Credits: 16, IgnoreGrant: true})
	grant := func(what string) uint32 {
		t.Helper()
		xid := c.NextXID()
		hdr := xdr.AppendUint32(xdr.AppendUint32(xdr.AppendUint32(proto.AppendFixed(nil, xid, credits, proto.ProcMsg), 0), 0), 0)
		rh, _, err := c.RoundTripRaw(ctxT(t), hdr, callMsg(xid, procNull, nil))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		g, ok := proto.PeekCredits(rh)
		if !ok {
			t.Fatalf("%s: reply header % x", what, rh)
		}
		return g
	}
	if g := grant("before"); g != credits {
		t.Fatalf("grant before the overrun = %d, want %d", g, credits)
	}
	var wg sync.WaitGroup
	for i := 0; i < credits; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "every slot's call running", func() bool { return e.echo.blocked.Load() == credits }, func() string {
		return fmt.Sprintf("%d running", e.echo.blocked.Load())
	})
	if g := grant("first call past the grant"); g != credits-1 {
		t.Fatalf("grant with a Receive not re-posted = %d, want %d", g, credits-1)
	}
	if g := grant("second call past the grant"); g != credits-1 {
		t.Fatalf("grant while a Receive is still owed = %d, want %d", g, credits-1)
	}
	close(e.echo.unblock)
	wg.Wait()
	if g := grant("after the slots came back"); g != credits {
		t.Fatalf("grant once the owed Receive is posted = %d, want %d", g, credits)
	}
	select {
	case <-c.Done():
		t.Fatalf("connection died: %v", c.Err())
	default:
	}
}

// TestOwedReceivePostedWhenSlotFrees: every slot held while the client is
// within its grant (calls in progress, replies whose Send completion the
// completion loop has not reaped yet: verbs.Config.LazySend; seen on
// Soft-RoCE, where the client's ACK of a reply can come after its next
// calls). The Receive that could not be re-posted is owed, the grant
// drops, and the connection watches its send queue; the Send completion
// that frees a slot posts the owed Receive at once (postOwed), the grant
// is whole again and the watch is released. Before, an owed Receive
// waited for the next Receive to complete, which never came once none was
// posted: the client's next Send met no Receive and the connection died
// (rpcrdma-hw.test GrantRespected, 2026-12-07).
func TestOwedReceivePostedWhenSlotFrees(t *testing.T) {
	e := newFaultEnv(t, &ledger{})
	cl := e.dial()
	fab := e.prov.Fabric
	conns := e.srv.life.Conns(nil)
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
	c := conns[0]
	watches, posted := fab.Stats().SendWatches, fab.Stats().PostedRecvs
	// Every idle slot taken, as if held by calls and unreaped replies.
	c.mu.Lock()
	held := c.free
	c.free = nil
	c.mu.Unlock()
	// As if a Receive completed: its replacement finds no free slot.
	c.repost()
	if g := c.grant(); g != c.credits-1 {
		t.Fatalf("grant with a Receive owed = %d, want %d", g, c.credits-1)
	}
	if w := fab.Stats().SendWatches; w != watches+1 {
		t.Fatalf("send watches with a Receive owed: %d, want %d", w, watches+1)
	}
	// A Send completion releases one slot.
	c.mu.Lock()
	c.free = append(c.free, held[0])
	c.mu.Unlock()
	c.postOwed()
	if g := c.grant(); g != c.credits {
		t.Fatalf("grant after the slot freed = %d, want %d", g, c.credits)
	}
	st := fab.Stats()
	if st.SendWatches != watches || st.PostedRecvs != posted+1 {
		t.Fatalf("after the slot freed: %d send watches (want %d), %d Receives posted (want %d)", st.SendWatches, watches, st.PostedRecvs, posted+1)
	}
	c.mu.Lock()
	c.free = append(c.free, held[1:]...)
	c.mu.Unlock()
	e.closeAndCheckMemory(cl)
}

// TestAckLagKeepsReceivesPosted: the race of
// TestOwedReceivePostedWhenSlotFrees end to end, made by the fabric
// instead of by hand. Every Send's acknowledgement comes late
// (softfabric.FaultPlan.SendAckLag, as on Soft-RoCE), so a reply's slot
// stays held after the client has the reply and has sent its next call;
// a client keeping its whole grant in flight then finds the slots held by
// calls and by replies not yet acknowledged. An owed Receive must be
// posted by the Send completion that frees a slot, or the client's next
// Send meets no Receive and the connection dies (the fabric behaves as
// rnr_retry 0).
func TestAckLagKeepsReceivesPosted(t *testing.T) {
	e := newEnvOn(t, nil, Config{Credits: 2})
	c := e.dial(rdmaclient.Config{Credits: 32})
	ctx := ctxT(t)
	if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	e.fab.SetFaults(softfabric.FaultPlan{SendAckLag: 2 * time.Millisecond})
	defer e.fab.SetFaults(softfabric.FaultPlan{})
	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				call := &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}
				if i%2 == 1 {
					call = &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(8192, uint32(i)), ReplyPayloadMax: 8192}
				}
				if _, err := c.Call(ctx, call); err != nil {
					if failed.Add(1) == 1 {
						t.Errorf("call %d of caller %d: %v", i, g, err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if st := e.srv.Stats(); st.Conns != 1 {
		t.Errorf("server connections after the calls: %d, want the one it had", st.Conns)
	}
}
