package verbs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// newFabricEnv returns a fabric environment whose cleanup fails the test
// if any listener, connection, MR or posted WR is left, or goroutines
// leaked.
func newFabricEnv(t testing.TB) *env {
	f := NewFabric()
	before := runtime.NumGoroutine()
	n := 0
	t.Cleanup(func() {
		if s := f.Stats(); s != (FabricStats{}) {
			t.Errorf("fabric leaked: %+v", s)
		}
		checkGoroutines(t, before)
	})
	return &env{
		prov: f,
		fab:  f,
		newAddr: func() string {
			n++
			return fmt.Sprintf("fabric-srv-%d:20049", n)
		},
	}
}

func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutines: %d before, %d after teardown\n%s", before, now, buf)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFabricConformance(t *testing.T) {
	runConformance(t, func(t *testing.T) *env { return newFabricEnv(t) })
}

func TestFabricStatsCountLiveObjects(t *testing.T) {
	f := NewFabric()
	e := &env{prov: f, fab: f, newAddr: func() string { return "a:1" }}
	p := connectPair(t, e, pairOpts{})
	s := f.Stats()
	want := FabricStats{Listeners: 1, Conns: 2, MRs: 2, MRBytes: 2 * mrSize, PostedRecvs: 2 * nRecv}
	if s != want {
		t.Fatalf("Stats %+v, want %+v", s, want)
	}
	send(t, p.cli, p.cmr, 1, sendOff, 10, true)
	pollN(t, p.srv, 1)
	pollN(t, p.cli, 1)
	if got := f.Stats().PostedRecvs; got != 2*nRecv-1 {
		t.Errorf("PostedRecvs %d after one Receive completed", got)
	}
	p.close()
	// MRs outlive their Conn until Deregistered.
	if s := f.Stats(); s != (FabricStats{}) {
		t.Errorf("after teardown: %+v", s)
	}
}

func TestFabricMRsOutliveConn(t *testing.T) {
	f := NewFabric()
	e := &env{prov: f, fab: f, newAddr: func() string { return "a:1" }}
	p := connectPair(t, e, pairOpts{})
	p.cli.Close()
	if s := f.Stats(); s.MRs != 2 {
		t.Fatalf("Close deregistered MRs: %+v", s)
	}
	if _, err := p.cli.Register(10, allAccess); !errors.Is(err, ErrClosed) {
		t.Errorf("Register on closed conn: %v", err)
	}
	if err := p.cli.PostRecv(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PostRecv on closed conn: %v", err)
	}
	if _, err := p.cli.Poll(context.Background(), make([]Completion, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Poll on closed conn: %v", err)
	}
	if err := p.cmr.Deregister(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmr.Deregister(); err != nil {
		t.Errorf("second Deregister: %v", err)
	}
}

func TestFabricDialNoListener(t *testing.T) {
	e := newFabricEnv(t)
	_, err := e.prov.Dial(context.Background(), "nobody:1", ConnParams{})
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Status != RejectInvalidServiceID {
		t.Fatalf("Dial to no listener: %v", err)
	}
}

func TestFabricDialCanceled(t *testing.T) {
	e := newFabricEnv(t)
	ln, err := e.prov.Listen("srv:1")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := e.prov.Dial(ctx, "srv:1", ConnParams{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial: %v", err)
	}
	req, err := ln.GetRequest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Conn(Config{}); !errors.Is(err, ErrDisconnected) {
		t.Errorf("Conn on abandoned request: %v", err)
	}
	if err := req.Reject(nil); err != nil {
		t.Errorf("Reject of abandoned request: %v", err)
	}
}

func TestFabricListenerCloseRejectsPending(t *testing.T) {
	e := newFabricEnv(t)
	ln, err := e.prov.Listen("srv:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.prov.Listen("srv:1"); err == nil {
		t.Fatal("second Listen on the same address succeeded")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := e.prov.Dial(context.Background(), "srv:1", ConnParams{})
		errc <- err
	}()
	for e.fab.Stats().Conns == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	ln.Close()
	var rej *RejectError
	if err := <-errc; !errors.As(err, &rej) {
		t.Fatalf("pending Dial: %v", err)
	}
	if _, err := ln.GetRequest(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("GetRequest after Close: %v", err)
	}
}

func TestFabricServerCloseBeforeAccept(t *testing.T) {
	e := newFabricEnv(t)
	ln, _ := e.prov.Listen("srv:1")
	defer ln.Close()
	srvDone := make(chan struct{})
	defer func() { <-srvDone }()
	go func() {
		defer close(srvDone)
		req, err := ln.GetRequest(context.Background())
		if err != nil {
			return
		}
		c, _ := req.Conn(Config{})
		if err := c.PostSend([]SendWR{{ID: 1, Opcode: OpSend}}); !errors.Is(err, ErrNotConnected) {
			t.Errorf("PostSend before Accept: %v", err)
		}
		c.Close()
		if err := req.Accept(nil, 1, 0); err == nil {
			t.Errorf("Accept after Close succeeded")
		}
	}()
	_, err := e.prov.Dial(context.Background(), "srv:1", ConnParams{})
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("Dial: %v", err)
	}
}

func TestFabricPollContext(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.cli.Poll(ctx, make([]Completion, 4)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll: %v", err)
	}
	if n, err := p.cli.TryPoll(make([]Completion, 4)); n != 0 || err != nil {
		t.Fatalf("TryPoll: %d, %v", n, err)
	}
	// Close wakes a blocked Poll.
	errc := make(chan error, 1)
	go func() {
		_, err := p.srv.Poll(context.Background(), make([]Completion, 4))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	p.srv.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Poll returned nil error after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Poll")
	}
}

func TestFabricQueueLimits(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{cfg: Config{MaxSendWR: 4, MaxRecvWR: nRecv, MaxSendSGE: 2}})
	w := func(id uint64, signaled bool) SendWR {
		return SendWR{ID: id, Opcode: OpRDMAWrite, SGL: []SGE{p.smr.SGE(dataOff, 8)},
			RemoteAddr: p.cmr.Addr() + dataOff, RKey: p.cmr.RKey(), Signaled: signaled}
	}
	// Unsignaled WRs hold their slots until a later signaled WR completes.
	if err := p.srv.PostSend([]SendWR{w(1, false), w(2, false), w(3, false)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := p.srv.PostSend([]SendWR{w(4, false), w(5, true)}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("overfilling the send queue: %v", err)
	}
	if err := p.srv.PostSend([]SendWR{w(4, true)}); err != nil {
		t.Fatal(err)
	}
	if wc := pollN(t, p.srv, 1)[0]; wc.WRID != 4 || wc.Err() != nil {
		t.Fatalf("completion %+v", wc)
	}
	if err := p.srv.PostSend([]SendWR{w(5, false), w(6, false), w(7, false), w(8, true)}); err != nil {
		t.Fatalf("send queue not freed by the signaled completion: %v", err)
	}
	pollN(t, p.srv, 1)
	if err := p.srv.PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("overfilling the receive queue: %v", err)
	}
	three := []SGE{p.smr.SGE(0, 1), p.smr.SGE(1, 1), p.smr.SGE(2, 1)}
	if err := p.srv.PostSend([]SendWR{{ID: 1, Opcode: OpSend, SGL: three}}); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("too many SGEs: %v", err)
	}
	if err := p.srv.PostSend([]SendWR{{ID: ReservedWRID, Opcode: OpSend}}); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("reserved wr_id: %v", err)
	}
	if err := p.srv.PostSend([]SendWR{{ID: 1, Opcode: 77}}); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("bad opcode: %v", err)
	}
	if _, err := (Config{MaxRecvWR: 8, CQDepth: 4}).withDefaults(); err == nil {
		t.Error("CQDepth below MaxRecvWR+1 accepted")
	}
}

func TestFabricLocalProtectionError(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{})
	bad := p.smr.SGE(mrSize-8, 8)
	bad.Length = 16 // runs past the MR
	if err := p.srv.PostSend([]SendWR{{ID: 9, Opcode: OpSend, SGL: []SGE{bad}}}); err != nil {
		t.Fatal(err)
	}
	wcs, err := drain(t, p.srv)
	wantStatus(t, wcs[0], 9, WCLocProtErr)
	if !errors.Is(err, WCLocProtErr) {
		t.Errorf("Err %v", err)
	}
	waitDone(t, p.cli, "peer")
}

func TestFabricReceiveIntoReadOnlyMR(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{noCliRecvs: true, cliAccess: AccessRemoteRead})
	if err := p.cli.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{p.cmr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	send(t, p.srv, p.smr, 2, sendOff, 8, true)
	cw, _ := drain(t, p.cli)
	wantStatus(t, cw[0], 1, WCLocProtErr)
	sw, _ := drain(t, p.srv)
	wantStatus(t, sw[0], 2, WCRemOpErr)
}

func TestFabricCQOverflow(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{cfg: Config{MaxSendWR: nRecv, MaxRecvWR: nRecv, CQDepth: nRecv + 1}})
	// nRecv completions sit unpolled; repost and send two more.
	for i := 0; i < nRecv-1; i++ {
		send(t, p.cli, p.cmr, uint64(i), sendOff, 8, false)
	}
	send(t, p.cli, p.cmr, 100, sendOff, 8, true)
	pollN(t, p.cli, 1)
	postRecvs(t, p.srv, p.smr, 2, recvSize)
	send(t, p.cli, p.cmr, 101, sendOff, 8, false)
	send(t, p.cli, p.cmr, 102, sendOff, 8, true)
	waitDone(t, p.srv, "server")
	var ae *AsyncEventError
	if !errors.As(p.srv.Err(), &ae) || ae.Event != EventCQErr {
		t.Fatalf("server Err %v, want IBV_EVENT_CQ_ERR", p.srv.Err())
	}
}

func TestFaultDropAfter(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{})
	e.fab.SetFaults(FaultPlan{DropAfter: 3})
	defer e.fab.SetFaults(FaultPlan{})
	for i := 0; i < 5; i++ {
		send(t, p.cli, p.cmr, uint64(i), sendOff, 8, true)
	}
	all, err := drain(t, p.cli)
	wcs := sendsOnly(all)
	if len(wcs) != 5 {
		t.Fatalf("%d completions, want 5: %+v", len(wcs), wcs)
	}
	for i, wc := range wcs {
		want := WCSuccess
		if i >= 3 {
			want = WCWRFlushErr
		}
		wantStatus(t, wc, uint64(i), want)
	}
	if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), "injected") {
		t.Errorf("client Err %v", err)
	}
	waitDone(t, p.srv, "server")
	if !errors.Is(p.srv.Err(), ErrDisconnected) {
		t.Errorf("server Err %v", p.srv.Err())
	}
	sw, _ := drain(t, p.srv)
	if len(sw) != nRecv {
		t.Errorf("server: %d completions, want %d (3 received + %d flushed)", len(sw), nRecv, nRecv-3)
	}
}

func TestFaultCompletionDelay(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{})
	const d = 40 * time.Millisecond
	e.fab.SetFaults(FaultPlan{CompletionDelay: d})
	defer e.fab.SetFaults(FaultPlan{})
	start := time.Now()
	send(t, p.cli, p.cmr, 1, sendOff, 8, true)
	pollN(t, p.srv, 1)
	if el := time.Since(start); el < d {
		t.Errorf("Receive completed after %v, want >= %v", el, d)
	}
	pollN(t, p.cli, 1)
	// Outstanding delayed sends are flushed by a disconnect.
	send(t, p.cli, p.cmr, 2, sendOff, 8, true)
	send(t, p.cli, p.cmr, 3, sendOff, 8, false)
	p.cli.Disconnect()
	wcs, _ := drain(t, p.cli)
	var sends int
	for _, wc := range wcs {
		if !wc.Recv {
			sends++
			if wc.Status != WCWRFlushErr {
				t.Errorf("send %+v, want flushed", wc)
			}
		}
	}
	if sends != 2 {
		t.Errorf("%d send flushes, want 2 (unsignaled WRs flush too)", sends)
	}
}

func TestFaultCorruptRKey(t *testing.T) {
	e := newFabricEnv(t)
	p := connectPair(t, e, pairOpts{})
	wr := []SendWR{{ID: 1, Opcode: OpRDMAWrite, SGL: []SGE{p.smr.SGE(dataOff, 8)},
		RemoteAddr: p.cmr.Addr() + dataOff, RKey: p.cmr.RKey(), Signaled: true}}
	if err := p.srv.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, pollN(t, p.srv, 1)[0], 1, WCSuccess)
	e.fab.SetFaults(FaultPlan{CorruptRKeys: 1})
	defer e.fab.SetFaults(FaultPlan{})
	wr[0].ID = 2
	if err := p.srv.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	checkAccessError(t, e, p, 2)
}

func TestStatusStrings(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{WCRemAccessErr.String(), "IBV_WC_REM_ACCESS_ERR"},
		{WCRemAccessErr.Description(), "remote access error"},
		{WCRNRRetryExcErr.String(), "IBV_WC_RNR_RETRY_EXC_ERR"},
		{WCWRFlushErr.String(), "IBV_WC_WR_FLUSH_ERR"},
		{WCLocLenErr.Description(), "local length error"},
		{WCTMRndvIncomplete.String(), "IBV_WC_TM_RNDV_INCOMPLETE"},
		{WCStatus(99).String(), "IBV_WC_STATUS(99)"},
		{EventQPAccessErr.String(), "IBV_EVENT_QP_ACCESS_ERR"},
		{EventWQFatal.String(), "IBV_EVENT_WQ_FATAL"},
		{WCRecv.String(), "IBV_WC_RECV"},
		{OpSendWithInv.String(), "SEND_WITH_INV"},
		{(&WCError{Status: WCRemAccessErr, WRID: 7}).Error(), "verbs: send work request 7 failed: IBV_WC_REM_ACCESS_ERR (remote access error)"},
		{ErrNoRDMA.Error(), "verbs: built without RDMA support"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	wc := Completion{WRID: 3, Status: WCLocLenErr, Recv: true}
	if err := wc.Err(); !errors.Is(err, WCLocLenErr) || errors.Is(err, WCRemAccessErr) {
		t.Errorf("errors.Is on %v", err)
	}
}

func TestRaiseMemlock(t *testing.T) {
	if err := RaiseMemlock(0); err != nil {
		t.Fatalf("RaiseMemlock(0): %v", err)
	}
	err := RaiseMemlock(^uint64(0) - 1)
	if err != nil && !strings.Contains(err.Error(), "LimitMEMLOCK") {
		t.Errorf("error does not say what to change: %v", err)
	}
}

func TestNoRDMABuild(t *testing.T) {
	if RDMASupported {
		t.Skip("built with RDMA support")
	}
	if _, err := NewRDMAProvider(); !errors.Is(err, ErrNoRDMA) {
		t.Fatalf("NewRDMAProvider: %v", err)
	}
}

func TestRDMAProviderWithoutDevice(t *testing.T) {
	if !RDMASupported {
		t.Skip("built without RDMA support")
	}
	p, err := NewRDMAProvider()
	if err == nil {
		p.Close()
		t.Skip("an RDMA device is present; hw_test.go (-tags rdmahw) covers it")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("NewRDMAProvider without a device: %v, want ErrNoDevice", err)
	}
}
