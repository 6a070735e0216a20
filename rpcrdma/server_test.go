package rpcrdma

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

func TestEchoInline(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 3, 100, 3000} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, data)})
		if err != nil {
			t.Fatalf("echo %d: %v", n, err)
		}
		if !bytes.Equal(res, xdr.AppendOpaque(nil, data)) {
			t.Fatalf("echo %d: wrong result", n)
		}
	}
	if mr := e.echo.lastMaxReply.Load(); !e.echo.lastRDMA.Load() || mr <= 0 || mr > 4096 {
		t.Fatalf("exchange: RDMA %v, MaxReply %d", e.echo.lastRDMA.Load(), mr)
	}
	// Unknown procedure: an RPC-level error comes back through the transport.
	_, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: 99})
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProcUnavail {
		t.Fatalf("proc 99: %v", err)
	}
}

func TestReadViaWriteList(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	for _, n := range []int{5000, 65536, 1 << 20, 1<<20 - 3, 1} {
		res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(uint32(n), 7), ReplyPayloadMax: max(n, 8192)})
		if err != nil {
			t.Fatalf("read %d: %v", n, err)
		}
		want := make([]byte, n)
		pattern(7, want)
		exp := xdr.AppendFixedOpaque(xdr.AppendUint32(nil, uint32(n)), want)
		if !bytes.Equal(res, exp) {
			t.Fatalf("read %d: results differ (len %d want %d)", n, len(res), len(exp))
		}
	}
	// A small READ without a Write chunk comes back inline, payload pulled up.
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(1001, 3), ReplyPayloadMax: 1001})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 1001)
	pattern(3, want)
	if !bytes.Equal(res, xdr.AppendOpaque(nil, want)) {
		t.Fatal("small read differs")
	}
}

// TestReadWireForm checks the reply to a READ with a Write chunk on the
// wire: RDMA_MSG, echoed chunk with lengths cut to the data, the inline
// part ending with the length word, data in the client's memory.
func TestReadWireForm(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	buf, err := c.RegisterBuffer(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	const n = 5000 // spans two of three segments
	xid := c.NextXID()
	segs := proto.Chunk{buf.Segment(0, 4096), buf.Segment(4096, 4096), buf.Segment(8192, 4096)}
	hdr := (&proto.Header{XID: xid, Credits: 8, Proc: proto.ProcMsg, WriteList: []proto.Chunk{segs}}).Append(nil)
	rh, rm, err := c.RoundTripRaw(ctx, hdr, callMsg(xid, procRead, readArgs(n, 9)))
	if err != nil {
		t.Fatal(err)
	}
	h := decodeHdr(t, rh)
	if h.Proc != proto.ProcMsg || h.Credits != proto.DefaultCredits || len(h.ReadList) != 0 || h.HasReply || len(h.WriteList) != 1 {
		t.Fatalf("reply header %+v", h)
	}
	got := h.WriteList[0]
	if len(got) != 3 || got[0].Length != 4096 || got[1].Length != n-4096 || got[2].Length != 0 || got[1].Handle != segs[1].Handle || got[1].Offset != segs[1].Offset {
		t.Fatalf("echoed chunk %+v", got)
	}
	rpc, err := oncrpc.ParseReply(rm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rpc, xdr.AppendUint32(nil, n)) {
		t.Fatalf("inline results % x", rpc)
	}
	want := make([]byte, n)
	pattern(9, want)
	if !bytes.Equal(buf.Bytes()[:n], want) {
		t.Fatal("payload differs")
	}
	if buf.Bytes()[n] != 0 {
		t.Fatal("wrote past the payload (pad)")
	}
	// An error reply (no payload) echoes zero lengths.
	xid = c.NextXID()
	hdr = (&proto.Header{XID: xid, Credits: 8, Proc: proto.ProcMsg, WriteList: []proto.Chunk{segs}}).Append(nil)
	rh, _, err = c.RoundTripRaw(ctx, hdr, callMsg(xid, procReadErr, readArgs(n, 9)))
	if err != nil {
		t.Fatal(err)
	}
	h = decodeHdr(t, rh)
	if h.Proc != proto.ProcMsg || len(h.WriteList) != 1 || h.WriteList[0].Len() != 0 || len(h.WriteList[0]) != 3 {
		t.Fatalf("error reply header %+v", h)
	}
}

func TestWriteChunkSmallerThanRead(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	_, err := c.CallWith(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(10000, 1), ReplyPayloadMax: 10000},
		&rdmaclient.CallOpts{WriteChunk: []int{4096, 4096}}, nil)
	var re *rdmaclient.RDMAError
	if !errors.As(err, &re) || re.Code != proto.ErrChunk {
		t.Fatalf("got %v, want ERR_CHUNK", err)
	}
	// The connection still works.
	if _, err := c.Call(ctxT(t), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
}

func writeCall(data []byte, tail uint32) *oncrpc.ClientCall {
	return &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procWrite,
		Args: xdr.AppendUint32(nil, uint32(len(data))), Payload: data, Tail: xdr.AppendUint32(nil, tail)}
}

func checkWrite(t *testing.T, res, data []byte, tail uint32) {
	t.Helper()
	want := xdr.AppendUint32(xdr.AppendUint32(xdr.AppendUint32(nil, uint32(len(data))), crc32.ChecksumIEEE(data)), tail)
	if !bytes.Equal(res, want) {
		t.Fatalf("write of %d: got % x want % x", len(data), res, want)
	}
}

func TestWriteViaReadChunk(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	for _, n := range []int{10, 4000, 4097, 65537, 1 << 20} {
		data := make([]byte, n)
		pattern(uint32(n), data)
		res, err := c.Call(ctx, writeCall(data, 0xabcdef01))
		if err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		checkWrite(t, res, data, 0xabcdef01)
	}
}

// TestReadChunkAtPositionP hand-builds a call with a Read chunk at the
// data's XDR position, split over two segments, with inline bytes after
// the position, and checks the server assembled exactly the bytes.
func TestReadChunkAtPositionP(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	buf, err := c.RegisterBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	data := buf.Bytes()[:5001]
	pattern(42, data)
	xid := c.NextXID()
	head := callMsg(xid, procWrite, xdr.AppendUint32(nil, uint32(len(data))))
	pos := uint32(len(head))
	hdr := (&proto.Header{XID: xid, Credits: 4, Proc: proto.ProcMsg, ReadList: []proto.ReadSegment{
		{Position: pos, Segment: buf.Segment(0, 3000)},
		{Position: pos, Segment: buf.Segment(3000, 2001)},
	}}).Append(nil)
	msg := append(head, xdr.AppendUint32(nil, 0x5eed)...) // inline part: no data, no pad
	rh, rm, err := c.RoundTripRaw(ctxT(t), hdr, msg)
	if err != nil {
		t.Fatal(err)
	}
	if h := decodeHdr(t, rh); h.Proc != proto.ProcMsg || len(h.WriteList) != 0 || h.HasReply {
		t.Fatalf("reply %+v", h)
	}
	res, err := oncrpc.ParseReply(rm)
	if err != nil {
		t.Fatal(err)
	}
	checkWrite(t, res, data, 0x5eed)
}

func TestNoMsgPositionZero(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	// A call larger than inline with no payload: the client sends it
	// whole in a position-zero Read chunk (RDMA_NOMSG).
	data := make([]byte, 20000)
	pattern(5, data)
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, data[:3000]), LargeReply: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res, xdr.AppendOpaque(nil, data[:3000])) {
		t.Fatal("echo 3000 differs")
	}
	res, err = c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, data), LargeReply: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res, xdr.AppendOpaque(nil, data)) {
		t.Fatal("echo 20000 differs")
	}
	// Hand-built: NOMSG with the whole call in a position-zero chunk.
	buf, err := c.RegisterBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	xid := c.NextXID()
	msg := callMsg(xid, procEcho, xdr.AppendOpaque(nil, []byte("position zero")))
	copy(buf.Bytes(), msg)
	hdr := (&proto.Header{XID: xid, Credits: 4, Proc: proto.ProcNoMsg, ReadList: []proto.ReadSegment{{Position: 0, Segment: buf.Segment(0, len(msg))}}}).Append(nil)
	rh, rm, err := c.RoundTripRaw(ctx, hdr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := decodeHdr(t, rh); h.Proc != proto.ProcMsg {
		t.Fatalf("reply %+v", h)
	}
	if res, err := oncrpc.ParseReply(rm); err != nil || !bytes.Equal(res, xdr.AppendOpaque(nil, []byte("position zero"))) {
		t.Fatalf("%q %v", res, err)
	}
}

func TestReplyChunk(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	buf, err := c.RegisterBuffer(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	big := func(n uint32, rc proto.Chunk) (*proto.Header, []byte) {
		xid := c.NextXID()
		hdr := (&proto.Header{XID: xid, Credits: 4, Proc: proto.ProcMsg, HasReply: true, ReplyChunk: rc}).Append(nil)
		rh, rm, err := c.RoundTripRaw(ctx, hdr, callMsg(xid, procBig, xdr.AppendUint32(nil, n)))
		if err != nil {
			t.Fatal(err)
		}
		return decodeHdr(t, rh), rm
	}
	rc := proto.Chunk{buf.Segment(0, 16<<10), buf.Segment(16<<10, 16<<10)}
	// Fits inline: RDMA_MSG with every list empty although a Reply chunk was offered.
	h, rm := big(100, rc)
	if h.Proc != proto.ProcMsg || h.HasReply || len(h.WriteList) != 0 || len(h.ReadList) != 0 {
		t.Fatalf("inline reply %+v", h)
	}
	if _, err := oncrpc.ParseReply(rm); err != nil {
		t.Fatal(err)
	}
	// Too large for inline: RDMA_NOMSG, empty Write list, used lengths.
	const n = 20000
	h, rm = big(n, rc)
	if h.Proc != proto.ProcNoMsg || len(h.WriteList) != 0 || !h.HasReply || len(rm) != 0 {
		t.Fatalf("NOMSG reply %+v", h)
	}
	total := h.ReplyChunk.Len()
	if h.ReplyChunk[0].Length != 16<<10 || total != 24+4+xdr.PaddedLen(n) {
		t.Fatalf("reply chunk lengths %+v (total %d)", h.ReplyChunk, total)
	}
	res, err := oncrpc.ParseReply(buf.Bytes()[:total])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, n)
	pattern(n, want)
	if !bytes.Equal(res, xdr.AppendOpaque(nil, want)) {
		t.Fatal("reply chunk contents differ")
	}
	// Larger than the Reply chunk: ERR_CHUNK.
	h, _ = big(40000, rc)
	if h.Proc != proto.ProcError || h.Err != proto.ErrChunk || h.Credits < 1 {
		t.Fatalf("oversized reply %+v", h)
	}
	// Too large, no chunk at all: ERR_CHUNK.
	xid := c.NextXID()
	rh, _, err := c.RoundTripRaw(ctx, (&proto.Header{XID: xid, Credits: 4, Proc: proto.ProcMsg}).Append(nil), callMsg(xid, procBig, xdr.AppendUint32(nil, 5000)))
	if err != nil {
		t.Fatal(err)
	}
	if h := decodeHdr(t, rh); h.Proc != proto.ProcError || h.Err != proto.ErrChunk {
		t.Fatalf("no chunk %+v", h)
	}
	// Through the client: LargeReply offers a Reply chunk.
	res, err = c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBig, Args: xdr.AppendUint32(nil, 300000), LargeReply: true})
	if err != nil || len(res) != 4+300000 {
		t.Fatalf("LargeReply: %d %v", len(res), err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, Config{Credits: 8})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				var err error
				switch (g + i) % 3 {
				case 0:
					_, err = c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, Args: readArgs(70000, uint32(i)), ReplyPayloadMax: 70000})
				case 1:
					d := make([]byte, 9000+g)
					var res []byte
					res, err = c.Call(ctx, writeCall(d, 1))
					if err == nil && len(res) != 12 {
						err = errors.New("short write reply")
					}
				default:
					_, err = c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, []byte("x"))})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every call's keys ended with it: each window binding was
	// invalidated, or (windowless device, e.g. rxe) each per-call
	// registration deregistered.
	st := c.Stats()
	t.Logf("client key stats: %+v", st)
	if st.Windowless {
		if st.CallRegistrations == 0 || st.CallRegistrations != st.CallDeregistrations || st.Binds != 0 {
			t.Fatalf("windowless: %d call registrations, %d deregistrations, %d binds", st.CallRegistrations, st.CallDeregistrations, st.Binds)
		}
	} else if st.Binds == 0 || st.Binds != st.RemoteInvalidations+st.LocalInvalidations || st.CallRegistrations != 0 {
		t.Fatalf("windows: %d binds, %d remote + %d local invalidations, %d call registrations", st.Binds, st.RemoteInvalidations, st.LocalInvalidations, st.CallRegistrations)
	}
}

// TestQuickCallsOnCompletionGoroutine: chunk-less calls to Quick
// procedures run on the completion goroutine (counted in Stats), while a
// blocked call of a procedure that is not Quick sits on a worker and holds
// nothing up; a Quick call that carries chunks goes to a worker too.
func TestQuickCallsOnCompletionGoroutine(t *testing.T) {
	e := newEnv(t, Config{Credits: 8})
	c := e.dial(rdmaclient.Config{})
	ctx := ctxT(t)
	// The client may send one call until a reply grants more credits.
	if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	blockDone := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock})
		blockDone <- err
	}()
	waitFor(t, "BLOCK running", func() bool { return e.echo.blocked.Load() == 1 }, func() string { return "" })
	before := e.srv.Stats().InlineCalls
	for i := 0; i < 10; i++ {
		if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendOpaque(nil, []byte("quick"))})
		if err != nil || !bytes.Equal(res, xdr.AppendOpaque(nil, []byte("quick"))) {
			t.Fatalf("ECHO: % x, %v", res, err)
		}
	}
	if got := e.srv.Stats().InlineCalls - before; got != 20 {
		t.Errorf("%d of 20 quick chunk-less calls ran inline", got)
	}
	// ECHO with a Read chunk: RDMA Reads to wait for, so a worker.
	before = e.srv.Stats().InlineCalls
	big := bytes.Repeat([]byte("r"), 20000)
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procEcho, Args: xdr.AppendUint32(nil, uint32(len(big))), Payload: big, LargeReply: true})
	if err != nil || !bytes.Equal(res, xdr.AppendOpaque(nil, big)) {
		t.Fatalf("ECHO with a Read chunk: %d bytes, %v", len(res), err)
	}
	if got := e.srv.Stats().InlineCalls - before; got != 0 {
		t.Errorf("a call with a Read chunk ran inline")
	}
	select {
	case err := <-blockDone:
		t.Fatalf("BLOCK returned early: %v", err)
	default:
	}
	close(e.echo.unblock)
	if err := <-blockDone; err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDrains(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.dial(rdmaclient.Config{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock})
		done <- err
	}()
	waitFor(t, "call blocked", func() bool { return e.echo.blocked.Load() == 1 }, func() string { return "" })
	sd := make(chan error, 1)
	go func() { sd <- e.srv.Shutdown(ctxT(t)) }()
	close(e.echo.unblock)
	if err := <-done; err != nil {
		t.Fatalf("call in progress at shutdown: %v", err)
	}
	if err := <-sd; err != nil {
		t.Fatal(err)
	}
	<-c.Done()
}
