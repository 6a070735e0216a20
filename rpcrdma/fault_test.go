package rpcrdma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// rawError sends hdr+msg and expects an RDMA_ERROR with code and a credit
// grant of at least 1.
func rawError(t *testing.T, c *rdmaclient.Client, hdr, msg []byte, code proto.ErrCode) *proto.Header {
	t.Helper()
	rh, _, err := c.RoundTripRaw(ctxT(t), hdr, msg)
	if err != nil {
		t.Fatal(err)
	}
	h := decodeHdr(t, rh)
	if h.Proc != proto.ProcError || h.Err != code || h.Credits < 1 || h.Credits > proto.DefaultCredits {
		t.Fatalf("reply %+v, want RDMA_ERROR %v", h, code)
	}
	return h
}

func TestProtocolErrors(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	null := func(xid uint32) []byte { return callMsg(xid, procNull, nil) }

	xid := c.NextXID()
	h := rawError(t, c, w(xid, 2, 8, 0, 0, 0, 0), null(xid), proto.ErrVers)
	if h.XID != xid || h.VersLow != 1 || h.VersHigh != 1 {
		t.Fatalf("ERR_VERS %+v", h)
	}
	xid = c.NextXID()
	rawError(t, c, w(xid, 1, 8, uint32(proto.ProcMsgP), 0, 0, 0, 0, 0), null(xid), proto.ErrChunk)
	xid = c.NextXID()
	rawError(t, c, w(xid, 1, 8, 7, 0, 0, 0), null(xid), proto.ErrChunk) // unknown proc
	xid = c.NextXID()
	rawError(t, c, w(xid, 1, 8), nil, proto.ErrChunk) // truncated fixed part
	xid = c.NextXID()
	rawError(t, c, w(xid, 1, 8, 0, 1, 0), nil, proto.ErrChunk) // truncated read list
	xid = c.NextXID()
	rawError(t, c, w(xid, 1, 8, 0, 5, 0, 0), null(xid), proto.ErrChunk) // bad discriminator

	seg := proto.Segment{Handle: 1, Length: 8, Offset: 0}
	bad := []*proto.Header{
		{Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{{Position: 6, Segment: seg}}},                              // unaligned
		{Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{{Position: 0, Segment: seg}}},                              // position zero in MSG
		{Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{{Position: 4000, Segment: seg}}},                           // beyond inline
		{Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{{Position: 8, Segment: seg}, {Position: 4, Segment: seg}}}, // out of order
		{Proc: proto.ProcNoMsg}, // NOMSG without chunk
		{Proc: proto.ProcMsg, WriteList: []proto.Chunk{{{Handle: 1, Length: 2 << 20}}}},                                         // write chunk over MaxPayload
		{Proc: proto.ProcMsg, WriteList: []proto.Chunk{{}}},                                                                     // empty write chunk
		{Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{{Position: 8, Segment: proto.Segment{Handle: 1, Length: 4 << 20}}}}, // over MaxRecord
	}
	for i, bh := range bad {
		xid = c.NextXID()
		bh.XID, bh.Credits = xid, 8
		var msg []byte
		if bh.Proc == proto.ProcMsg {
			msg = null(xid)
		}
		t.Logf("case %d", i)
		rawError(t, c, bh.Append(nil), msg, proto.ErrChunk)
	}
	// RDMA_DONE is dropped: no reply.
	xid = c.NextXID()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, _, err := c.RoundTripRaw(ctx, w(xid, 1, 8, uint32(proto.ProcDone)), nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DONE answered: %v", err)
	}
	// After all that the connection still serves calls.
	if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
}

// TestSendNeverAboveClientInline: a client that receives only 1024 bytes
// gets replies of at most 1024 bytes, ERR_CHUNK beyond.
func TestSendNeverAboveClientInline(t *testing.T) {
	e := newEnv(t, Config{InlineSend: 8192, InlineRecv: 8192})
	c := e.dial(rdmaclient.Config{InlineRecv: 1024, InlineSend: 1024})
	ctx := ctxT(t)
	for n := 900; n < 1100; n += 4 {
		res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBig, Args: xdr.AppendUint32(nil, uint32(n))})
		if n+4+24+28 <= 1024 {
			if err != nil || len(res) != 4+n {
				t.Fatalf("%d: %v", n, err)
			}
			continue
		}
		var re *rdmaclient.RDMAError
		if !errors.As(err, &re) || re.Code != proto.ErrChunk {
			t.Fatalf("%d: got %v, want ERR_CHUNK", n, err)
		}
	}
	select {
	case <-c.Done():
		t.Fatalf("connection died: %v", c.Err())
	default:
	}
}

// TestCreditOverrun: a client that ignores its grant makes its own Send
// meet no Receive; the fabric kills the QP. The server must log, tear the
// connection down and leak nothing.
func TestCreditOverrun(t *testing.T) {
	e := newEnv(t, Config{Credits: 4})
	// A client that ignores the server's grant.
	c := e.dial(rdmaclient.Config{Credits: 16, IgnoreGrant: true})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock})
			errs <- err
		}()
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection survived 16 calls against 4 credits (8 buffers)")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, rdmaclient.ErrClosed) {
			t.Errorf("call error %v", err)
		}
	}
	waitFor(t, "server connection gone", func() bool { return e.srv.Stats().Conns == 0 }, func() string { return "" })
	// The server still accepts new connections.
	c2 := e.dial(rdmaclient.Config{})
	if _, err := c2.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
}

// TestGrantRespected: a well-behaved client never exceeds the grant, even
// with many goroutines calling. The server keeps twice the grant in call
// slots, so a client one or two calls over it would still be served: the
// test counts the calls the server runs at once instead. Twenty callers
// of a procedure that blocks until released must put exactly the grant,
// 2, in the handler at a time, never more; then the data calls run.
func TestGrantRespected(t *testing.T) {
	e := newEnv(t, Config{Credits: 2})
	c := e.dial(rdmaclient.Config{Credits: 32})
	// The client may have one call outstanding until a reply carries the
	// grant (RFC 8166 3.3.1).
	if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "2 BLOCK calls running", func() bool { return e.echo.blocked.Load() == 2 }, func() string {
		return fmt.Sprintf("%d running", e.echo.blocked.Load())
	})
	time.Sleep(100 * time.Millisecond) // room for a third call, were the client to send one
	if n := e.echo.maxBlocked.Load(); n != 2 {
		t.Errorf("the server ran %d calls at once; the grant is 2", n)
	}
	close(e.echo.unblock)
	wg.Wait()
	if n := e.echo.maxBlocked.Load(); n != 2 {
		t.Errorf("the server ran %d calls at once; the grant is 2", n)
	}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(30000, 1), ReplyPayloadMax: 30000}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// Faults mid-transfer: the fabric drops the connection after N send-queue
// operations (both sides), or an rkey goes bad.
func TestDisconnectMidTransfer(t *testing.T) {
	data := make([]byte, 1<<20)
	cases := []struct {
		name string
		plan softfabric.FaultPlan
		call *oncrpc.ClientCall
	}{
		// ops: client Send (1), server RDMA Read (2), server Send (3)
		{"during RDMA Read of WRITE data", softfabric.FaultPlan{DropAfter: 1}, writeCall(data, 1)},
		{"before WRITE reply", softfabric.FaultPlan{DropAfter: 2}, writeCall(data, 1)},
		// ops: client Send (1), server RDMA Write (2), server Send (3)
		{"during Write-list READ", softfabric.FaultPlan{DropAfter: 1},
			&oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, 1), ReplyPayloadMax: 1 << 20}},
		{"before READ reply Send", softfabric.FaultPlan{DropAfter: 2},
			&oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, 1), ReplyPayloadMax: 1 << 20}},
		{"bad rkey on RDMA Read", softfabric.FaultPlan{CorruptRKeys: 1}, writeCall(data, 1)},
		{"bad rkey on RDMA Write", softfabric.FaultPlan{CorruptRKeys: 1},
			&oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1<<20, 1), ReplyPayloadMax: 1 << 20}},
		{"slow completions then client close", softfabric.FaultPlan{CompletionDelay: 20 * time.Millisecond}, writeCall(data, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			c := e.dial(rdmaclient.Config{})
			if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
				t.Fatal(err)
			}
			e.fab.SetFaults(tc.plan)
			defer e.fab.SetFaults(softfabric.FaultPlan{})
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctxT(t), tc.call)
				errc <- err
			}()
			if tc.plan.CompletionDelay > 0 {
				time.Sleep(30 * time.Millisecond)
				c.Close()
			}
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("call succeeded across a dropped connection")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("call hangs")
			}
			waitFor(t, "server connection gone", func() bool { return e.srv.Stats().Conns == 0 }, func() string { return "" })
		})
	}
}

func TestSendWithInvalidate(t *testing.T) {
	e := newEnv(t, Config{SendWithInvalidate: true})
	c := e.dial(rdmaclient.Config{RemoteInvalidate: true})
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(50000, 1), ReplyPayloadMax: 50000}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctx, writeCall(make([]byte, 50000), 2)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Stats().RemoteInvalidations; got != 6 {
		t.Fatalf("%d replies by Send-With-Invalidate, want 6", got)
	}
	// Inline calls carry no rkey: plain Send.
	if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().RemoteInvalidations; got != 6 {
		t.Fatalf("inline reply invalidated something (%d)", got)
	}
	// Without the client's consent the server never invalidates.
	c2 := e.dial(rdmaclient.Config{})
	if _, err := c2.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(50000, 1), ReplyPayloadMax: 50000}); err != nil {
		t.Fatal(err)
	}
	if c2.Stats().RemoteInvalidations != 0 {
		t.Fatal("invalidated without consent")
	}
}

func TestPrivateDataNegotiation(t *testing.T) {
	e := newEnv(t, Config{InlineRecv: 2048, InlineSend: 16384})
	c := e.dial(rdmaclient.Config{InlineSend: 8192, InlineRecv: 4096})
	if c.SendMax() != 2048 {
		t.Fatalf("client send size %d, want the server's 2048", c.SendMax())
	}
	// A server reply bigger than 4096 would kill the client's Receive.
	res, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBig, Args: xdr.AppendUint32(nil, 4000)})
	if err != nil || len(res) != 4004 {
		t.Fatalf("%d %v", len(res), err)
	}
	_, err = c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBig, Args: xdr.AppendUint32(nil, 5000)})
	var re *rdmaclient.RDMAError
	if !errors.As(err, &re) {
		t.Fatalf("5000-byte reply to a 4096-byte receiver: %v", err)
	}
}
