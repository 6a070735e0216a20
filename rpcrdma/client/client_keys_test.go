package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// A misbehaving server on the software fabric: it answers the client's
// calls correctly, then RDMA-Writes and RDMA-Reads with the rkeys of a call
// that has finished. Every such access must be a remote access error that
// changes nothing, whether the binding ended by the server's
// Send-With-Invalidate or by the client's local invalidate, and whether
// the client is idle or already running the next call on the same slot.

const (
	evilRecvSize = 8192
	evilRecvs    = 8
	evilDataOff  = evilRecvs * evilRecvSize // RDMA source/target area
	evilSendOff  = evilDataOff + 1<<20
	evilMRSize   = evilSendOff + evilRecvSize
	evilPayload  = 50000
)

type evilServer struct {
	t   *testing.T
	vc  verbs.Conn
	mr  *verbs.MR
	wcs []verbs.Completion
	// clientPriv is the private data of the client's request.
	clientPriv proto.PrivateData
}

// startEvil listens on fab and returns the server once a client connected
// (the client dials in dial).
func startEvil(t *testing.T, fab *softfabric.Fabric, addr string, remoteInv bool) <-chan *evilServer {
	ln, err := fab.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan *evilServer, 1)
	go func() {
		defer close(ch)
		req, err := ln.GetRequest(context.Background())
		if err != nil {
			return
		}
		vc, err := req.Conn(verbs.Config{MaxSendWR: 64, MaxRecvWR: evilRecvs})
		if err != nil {
			return
		}
		mr, err := vc.Register(evilMRSize, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		if err != nil {
			req.Reject(nil)
			return
		}
		wrs := make([]verbs.RecvWR, evilRecvs)
		for i := range wrs {
			wrs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{mr.SGE(i*evilRecvSize, evilRecvSize)}}
		}
		if err := vc.PostRecv(wrs); err != nil {
			req.Reject(nil)
			return
		}
		priv := proto.PrivateData{RemoteInvalidate: remoteInv, SendSize: 4096, RecvSize: 4096}.Append(nil)
		if err := req.Accept(priv, 16, 16); err != nil {
			return
		}
		cpd, _ := proto.ParsePrivateData(req.PrivateData())
		ch <- &evilServer{t: t, vc: vc, mr: mr, wcs: make([]verbs.Completion, 8), clientPriv: cpd}
	}()
	return ch
}

func (s *evilServer) close() {
	s.vc.Close()
	s.mr.Deregister()
}

// poll returns the next completion.
func (s *evilServer) poll() verbs.Completion {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := s.vc.Poll(ctx, s.wcs[:1])
	if err != nil || n != 1 {
		s.t.Fatalf("server poll: %d, %v", n, err)
	}
	return s.wcs[0]
}

// nextCall waits for a call and decodes its transport header.
func (s *evilServer) nextCall() *proto.Header {
	s.t.Helper()
	for {
		wc := s.poll()
		if !wc.Recv {
			if wc.Err() != nil {
				s.t.Fatalf("server send failed: %v", wc.Err())
			}
			continue
		}
		if wc.Err() != nil {
			s.t.Fatalf("server receive: %v", wc.Err())
		}
		buf := s.mr.Slice(int(wc.WRID)*evilRecvSize, int(wc.ByteLen))
		h := new(proto.Header)
		if err := h.Decode(xdr.NewReader(buf), proto.DefaultLimits); err != nil {
			s.t.Fatalf("decoding the client's header: %v", err)
		}
		if err := s.vc.PostRecv([]verbs.RecvWR{{ID: wc.WRID, SGL: []verbs.SGE{s.mr.SGE(int(wc.WRID)*evilRecvSize, evilRecvSize)}}}); err != nil {
			s.t.Fatal(err)
		}
		return h
	}
}

// rdma runs one RDMA Read or Write of n bytes at seg and returns its status.
func (s *evilServer) rdma(op verbs.WROpcode, seg proto.Segment, n int) verbs.WCStatus {
	s.t.Helper()
	err := s.vc.PostSend([]verbs.SendWR{{ID: 100, Opcode: op, Signaled: true,
		SGL: []verbs.SGE{s.mr.SGE(evilDataOff, n)}, RemoteAddr: seg.Offset, RKey: seg.Handle}})
	if err != nil {
		s.t.Fatal(err)
	}
	for {
		wc := s.poll()
		if wc.WRID == 100 && !wc.Recv {
			return wc.Status
		}
	}
}

// reply sends an RDMA_MSG reply with results and, for a READ, the Write
// chunk actually used; invalidate names the rkey to invalidate (0: none).
func (s *evilServer) reply(xid uint32, write proto.Chunk, results []byte, invalidate uint32) {
	s.t.Helper()
	h := proto.Header{XID: xid, Credits: 1, Proc: proto.ProcMsg}
	if write != nil {
		h.WriteList = []proto.Chunk{write}
	}
	b := h.Append(s.mr.Bytes()[evilSendOff:evilSendOff:evilMRSize])
	b = oncrpc.AppendAcceptedHeader(b, xid, oncrpc.Success)
	b = append(b, results...)
	wr := verbs.SendWR{ID: 200, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.mr.SGE(evilSendOff, len(b))}, Signaled: true}
	if invalidate != 0 {
		wr.Opcode, wr.InvalidateRKey = verbs.OpSendWithInv, invalidate
	}
	if err := s.vc.PostSend([]verbs.SendWR{wr}); err != nil {
		s.t.Fatal(err)
	}
}

// TestClientKeysDieWithTheCall, "Windows": keys are window rkeys;
// "Windowless": the fabric has no windows (softfabric.Fabric.DisableWindows),
// so each call registers exactly its chunk's bytes and deregisters them
// after the reply. Either way a finished call's key reaches nothing.
func TestClientKeysDieWithTheCall(t *testing.T) {
	for _, mode := range []string{"Windows", "Windowless"} {
		for _, kind := range []string{"WriteChunk", "ReadChunk"} {
			for _, inv := range []string{"RemoteInvalidate", "LocalInvalidate"} {
				for _, when := range []string{"Idle", "DuringNextCall"} {
					t.Run(mode+"/"+kind+"/"+inv+"/"+when, func(t *testing.T) {
						testStaleKeys(t, mode == "Windowless", kind == "ReadChunk", inv == "RemoteInvalidate", when == "DuringNextCall")
					})
				}
			}
		}
	}
}

func testStaleKeys(t *testing.T, windowless, readChunk, remoteInv, duringNext bool) {
	fab := softfabric.NewFabric()
	if windowless {
		fab.DisableWindows()
	}
	addr := "evil-server:20049"
	srvCh := startEvil(t, fab, addr, remoteInv)
	ctx := ctxT(t)
	c, err := Dial(ctx, fab, addr, Config{Credits: 1, RemoteInvalidate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := <-srvCh
	if srv == nil {
		t.Fatal("server side did not come up")
	}
	// The client offers Send-With-Invalidate only with windows: the
	// per-call registrations of a windowless connection cannot be
	// invalidated remotely on a device.
	if srv.clientPriv.RemoteInvalidate == windowless {
		t.Fatalf("windowless %v: client private data %+v", windowless, srv.clientPriv)
	}
	defer func() {
		c.Close()
		srv.close()
		// The listener is closed by its cleanup, later.
		if st := fab.Stats(); st.Conns != 0 || st.MRs != 0 || st.Windows != 0 || st.PostedSends != 0 {
			t.Errorf("after close: %+v", st)
		}
	}()

	data := make([]byte, evilPayload)
	pattern(7, data)
	call := func() *oncrpc.ClientCall {
		if readChunk {
			return &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procWrite, Payload: data}
		}
		return &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, ReplyPayloadMax: evilPayload}
	}
	type result struct {
		res []byte
		err error
	}
	run := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			res, err := c.Call(ctx, call())
			ch <- result{res, err}
		}()
		return ch
	}

	// Call 1, served correctly.
	done := run()
	h := srv.nextCall()
	var seg proto.Segment
	var results []byte
	var write proto.Chunk
	if readChunk {
		if len(h.ReadList) != 1 || len(h.WriteList) != 0 {
			t.Fatalf("call offers read list %v, write list %v", h.ReadList, h.WriteList)
		}
		seg = h.ReadList[0].Segment
		if st := srv.rdma(verbs.OpRDMARead, seg, evilPayload); st != verbs.WCSuccess {
			t.Fatalf("legitimate RDMA Read during the call: %v", st)
		}
		if !bytes.Equal(srv.mr.Slice(evilDataOff, evilPayload), data) {
			t.Fatal("the Read chunk does not hold the call's payload")
		}
		results = xdr.AppendUint32(nil, 1)
	} else {
		if len(h.WriteList) != 1 || len(h.WriteList[0]) != 1 {
			t.Fatalf("call offers write list %v", h.WriteList)
		}
		seg = h.WriteList[0][0]
		copy(srv.mr.Slice(evilDataOff, evilPayload), data)
		if st := srv.rdma(verbs.OpRDMAWrite, seg, evilPayload); st != verbs.WCSuccess {
			t.Fatalf("legitimate RDMA Write during the call: %v", st)
		}
		write = proto.Chunk{{Handle: seg.Handle, Length: evilPayload, Offset: seg.Offset}}
		results = xdr.AppendUint32(nil, evilPayload)
	}
	var inv uint32
	if remoteInv {
		inv = seg.Handle
	}
	srv.reply(h.XID, write, results, inv)
	r := <-done
	if r.err != nil {
		t.Fatalf("call 1: %v", r.err)
	}
	if !readChunk && !bytes.Equal(r.res[4:], data) {
		t.Fatal("call 1 returned the wrong payload")
	}
	st := c.Stats()
	wantRemote, wantLocal := int64(0), int64(1)
	if remoteInv {
		wantRemote, wantLocal = 1, 0
	}
	if windowless {
		// The server's Send-With-Invalidate names a plain MR rkey: the
		// client deregisters that registration all the same.
		want := Stats{Registrations: 1, Windowless: true, CallRegistrations: 1, CallDeregistrations: 1,
			PayloadCopies: st.PayloadCopies, PayloadBytes: st.PayloadBytes}
		if st != want {
			t.Fatalf("after call 1: %+v, want %+v", st, want)
		}
		if fs := fab.Stats(); fs.Windows != 0 {
			t.Fatalf("windowless client allocated windows: %+v", fs)
		}
	} else if st.Windowless || st.CallRegistrations != 0 || st.Binds != 1 || st.RemoteInvalidations != wantRemote || st.LocalInvalidations != wantLocal || st.Windows != 1 || st.Registrations != 1 {
		t.Fatalf("after call 1: %+v, want 1 bind, %d remote and %d local invalidations, 1 window, 1 registration", st, wantRemote, wantLocal)
	}

	if duringNext {
		// Call 2 reuses the slot and its window: the window is bound
		// again, under a new rkey.
		done = run()
		h2 := srv.nextCall()
		seg2 := h2.ReadList
		var key2 uint32
		if readChunk {
			key2 = seg2[0].Handle
		} else {
			key2 = h2.WriteList[0][0].Handle
		}
		if key2 == seg.Handle {
			t.Fatalf("call 2 reuses rkey %#x", key2)
		}
	}

	slot := c.slots[0]
	var before []byte
	if readChunk {
		before = append([]byte(nil), slot.out.Bytes()...)
		fill := srv.mr.Slice(evilDataOff, evilPayload)
		for i := range fill {
			fill[i] = 0xee
		}
		if got := srv.rdma(verbs.OpRDMARead, seg, evilPayload); got != verbs.WCRemAccessErr {
			t.Fatalf("RDMA Read with a finished call's rkey: %v, want IBV_WC_REM_ACCESS_ERR", got)
		}
		if !bytes.Equal(fill, bytes.Repeat([]byte{0xee}, evilPayload)) {
			t.Fatal("the refused RDMA Read delivered client memory")
		}
		if !bytes.Equal(slot.out.Bytes(), before) {
			t.Fatal("client memory changed")
		}
	} else {
		before = append([]byte(nil), slot.in.Bytes()...)
		copy(srv.mr.Slice(evilDataOff, evilPayload), bytes.Repeat([]byte{0x66}, evilPayload))
		if got := srv.rdma(verbs.OpRDMAWrite, seg, evilPayload); got != verbs.WCRemAccessErr {
			t.Fatalf("RDMA Write with a finished call's rkey: %v, want IBV_WC_REM_ACCESS_ERR", got)
		}
		if !bytes.Equal(slot.in.Bytes(), before) {
			t.Fatal("the refused RDMA Write changed client memory")
		}
	}
	// The server's access error kills the connection, as on hardware.
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client connection survived the server's access error")
	}
	if duringNext {
		if r := <-done; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("call 2 after the connection died: %v", r.err)
		}
	}
}
