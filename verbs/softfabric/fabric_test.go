package softfabric

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/verbstest"
)

// newFabricEnv returns a fabric environment whose cleanup fails the test
// if any listener, connection, MR or posted WR is left, or goroutines
// leaked.
func newFabricEnv(t testing.TB) *verbstest.Env {
	f := NewFabric()
	before := runtime.NumGoroutine()
	n := 0
	t.Cleanup(func() {
		if s := f.Stats(); s != (FabricStats{}) {
			t.Errorf("fabric leaked: %+v", s)
		}
		checkGoroutines(t, before)
	})
	return &verbstest.Env{
		Prov:     f,
		Software: true,
		NewAddr: func() string {
			n++
			return fmt.Sprintf("fabric-srv-%d:20049", n)
		},
	}
}

func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	// Teardown's goroutines end on their own schedule: a loaded CI
	// machine may not run them for a while, so the wait is long (it
	// ends as soon as they are gone).
	deadline := time.Now().Add(10 * time.Second)
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
	verbstest.Run(t, func(t *testing.T) *verbstest.Env { return newFabricEnv(t) })
}

func TestFabricStatsCountLiveObjects(t *testing.T) {
	f := NewFabric()
	e := &verbstest.Env{Prov: f, Software: true, NewAddr: func() string { return "a:1" }}
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	s := f.Stats()
	want := FabricStats{Listeners: 1, Conns: 2, MRs: 2, MRBytes: 2 * verbstest.MRSize, PostedRecvs: 2 * verbstest.NRecv}
	if s != want {
		t.Fatalf("Stats %+v, want %+v", s, want)
	}
	verbstest.Send(t, p.Cli, p.CMR, 1, verbstest.SendOff, 10, true)
	verbstest.PollN(t, p.Srv, 1)
	verbstest.PollN(t, p.Cli, 1)
	if got := f.Stats().PostedRecvs; got != 2*verbstest.NRecv-1 {
		t.Errorf("PostedRecvs %d after one Receive completed", got)
	}
	p.Close()
	// MRs outlive their Conn until Deregistered.
	if s := f.Stats(); s != (FabricStats{}) {
		t.Errorf("after teardown: %+v", s)
	}
}

func TestFabricMRsOutliveConn(t *testing.T) {
	f := NewFabric()
	e := &verbstest.Env{Prov: f, Software: true, NewAddr: func() string { return "a:1" }}
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	p.Cli.Close()
	if s := f.Stats(); s.MRs != 2 {
		t.Fatalf("Close deregistered MRs: %+v", s)
	}
	if _, err := p.Cli.Register(10, verbstest.AllAccess); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("Register on closed conn: %v", err)
	}
	if err := p.Cli.PostRecv(nil); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("PostRecv on closed conn: %v", err)
	}
	if _, err := p.Cli.Poll(context.Background(), make([]verbs.Completion, 1)); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("Poll on closed conn: %v", err)
	}
	if err := p.CMR.Deregister(); err != nil {
		t.Fatal(err)
	}
	if err := p.CMR.Deregister(); err != nil {
		t.Errorf("second Deregister: %v", err)
	}
}

func TestFabricDialNoListener(t *testing.T) {
	e := newFabricEnv(t)
	_, err := e.Prov.Dial(context.Background(), "nobody:1", verbs.ConnParams{})
	var rej *verbs.RejectError
	if !errors.As(err, &rej) || rej.Status != verbs.RejectInvalidServiceID {
		t.Fatalf("Dial to no listener: %v", err)
	}
}

func TestFabricDialCanceled(t *testing.T) {
	e := newFabricEnv(t)
	ln, err := e.Prov.Listen("srv:1")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := e.Prov.Dial(ctx, "srv:1", verbs.ConnParams{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial: %v", err)
	}
	req, err := ln.GetRequest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Conn(verbs.Config{}); !errors.Is(err, verbs.ErrDisconnected) {
		t.Errorf("Conn on abandoned request: %v", err)
	}
	if err := req.Reject(nil); err != nil {
		t.Errorf("Reject of abandoned request: %v", err)
	}
}

func TestFabricListenerCloseRejectsPending(t *testing.T) {
	e := newFabricEnv(t)
	ln, err := e.Prov.Listen("srv:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prov.Listen("srv:1"); err == nil {
		t.Fatal("second Listen on the same address succeeded")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := e.Prov.Dial(context.Background(), "srv:1", verbs.ConnParams{})
		errc <- err
	}()
	for e.Prov.(*Fabric).Stats().Conns == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	ln.Close()
	var rej *verbs.RejectError
	if err := <-errc; !errors.As(err, &rej) {
		t.Fatalf("pending Dial: %v", err)
	}
	if _, err := ln.GetRequest(context.Background()); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("GetRequest after Close: %v", err)
	}
}

func TestFabricServerCloseBeforeAccept(t *testing.T) {
	e := newFabricEnv(t)
	ln, _ := e.Prov.Listen("srv:1")
	defer ln.Close()
	srvDone := make(chan struct{})
	defer func() { <-srvDone }()
	go func() {
		defer close(srvDone)
		req, err := ln.GetRequest(context.Background())
		if err != nil {
			return
		}
		c, _ := req.Conn(verbs.Config{})
		if err := c.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSend}}); !errors.Is(err, verbs.ErrNotConnected) {
			t.Errorf("PostSend before Accept: %v", err)
		}
		c.Close()
		if err := req.Accept(nil, 1, 0); err == nil {
			t.Errorf("Accept after Close succeeded")
		}
	}()
	_, err := e.Prov.Dial(context.Background(), "srv:1", verbs.ConnParams{})
	var rej *verbs.RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("Dial: %v", err)
	}
}

func TestFabricPollContext(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Cli.Poll(ctx, make([]verbs.Completion, 4)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll: %v", err)
	}
	if n, err := p.Cli.TryPoll(make([]verbs.Completion, 4)); n != 0 || err != nil {
		t.Fatalf("TryPoll: %d, %v", n, err)
	}
	// Close wakes a blocked Poll.
	errc := make(chan error, 1)
	go func() {
		_, err := p.Srv.Poll(context.Background(), make([]verbs.Completion, 4))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	p.Srv.Close()
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
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{Cfg: verbs.Config{MaxSendWR: 4, MaxRecvWR: verbstest.NRecv, MaxSendSGE: 2}})
	w := func(id uint64, signaled bool) verbs.SendWR {
		return verbs.SendWR{ID: id, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{p.SMR.SGE(verbstest.DataOff, 8)},
			RemoteAddr: p.CMR.Addr() + verbstest.DataOff, RKey: p.CMR.RKey(), Signaled: signaled}
	}
	// Unsignaled WRs hold their slots until a later signaled WR completes.
	if err := p.Srv.PostSend([]verbs.SendWR{w(1, false), w(2, false), w(3, false)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := p.Srv.PostSend([]verbs.SendWR{w(4, false), w(5, true)}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("overfilling the send queue: %v", err)
	}
	if err := p.Srv.PostSend([]verbs.SendWR{w(4, true)}); err != nil {
		t.Fatal(err)
	}
	if wc := verbstest.PollN(t, p.Srv, 1)[0]; wc.WRID != 4 || wc.Err() != nil {
		t.Fatalf("completion %+v", wc)
	}
	if err := p.Srv.PostSend([]verbs.SendWR{w(5, false), w(6, false), w(7, false), w(8, true)}); err != nil {
		t.Fatalf("send queue not freed by the signaled completion: %v", err)
	}
	verbstest.PollN(t, p.Srv, 1)
	if err := p.Srv.PostRecv([]verbs.RecvWR{{ID: 1}}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Errorf("overfilling the receive queue: %v", err)
	}
	three := []verbs.SGE{p.SMR.SGE(0, 1), p.SMR.SGE(1, 1), p.SMR.SGE(2, 1)}
	if err := p.Srv.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, SGL: three}}); !errors.Is(err, verbs.ErrInvalidWR) {
		t.Errorf("too many SGEs: %v", err)
	}
	if err := p.Srv.PostSend([]verbs.SendWR{{ID: verbs.ReservedWRID, Opcode: verbs.OpSend}}); !errors.Is(err, verbs.ErrInvalidWR) {
		t.Errorf("reserved wr_id: %v", err)
	}
	if err := p.Srv.PostSend([]verbs.SendWR{{ID: 1, Opcode: 77}}); !errors.Is(err, verbs.ErrInvalidWR) {
		t.Errorf("bad opcode: %v", err)
	}
	if _, err := (verbs.Config{MaxRecvWR: 8, CQDepth: 4}).WithDefaults(); err == nil {
		t.Error("CQDepth below MaxRecvWR+1 accepted")
	}
}

func TestFabricLocalProtectionError(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	bad := p.SMR.SGE(verbstest.MRSize-8, 8)
	bad.Length = 16 // runs past the MR
	if err := p.Srv.PostSend([]verbs.SendWR{{ID: 9, Opcode: verbs.OpSend, SGL: []verbs.SGE{bad}}}); err != nil {
		t.Fatal(err)
	}
	wcs, err := verbstest.Drain(t, p.Srv)
	verbstest.WantStatus(t, wcs[0], 9, verbs.WCLocProtErr)
	if !errors.Is(err, verbs.WCLocProtErr) {
		t.Errorf("Err %v", err)
	}
	verbstest.WaitDone(t, p.Cli, "peer")
}

func TestFabricReceiveIntoReadOnlyMR(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{NoCliRecvs: true, CliAccess: verbs.AccessRemoteRead})
	if err := p.Cli.PostRecv([]verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{p.CMR.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	verbstest.Send(t, p.Srv, p.SMR, 2, verbstest.SendOff, 8, true)
	cw, _ := verbstest.Drain(t, p.Cli)
	verbstest.WantStatus(t, cw[0], 1, verbs.WCLocProtErr)
	sw, _ := verbstest.Drain(t, p.Srv)
	verbstest.WantStatus(t, sw[0], 2, verbs.WCRemOpErr)
}

func TestFabricCQOverflow(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{Cfg: verbs.Config{MaxSendWR: verbstest.NRecv, MaxRecvWR: verbstest.NRecv, CQDepth: verbstest.NRecv + 1}})
	// verbstest.NRecv completions sit unpolled; repost and send two more.
	for i := 0; i < verbstest.NRecv-1; i++ {
		verbstest.Send(t, p.Cli, p.CMR, uint64(i), verbstest.SendOff, 8, false)
	}
	verbstest.Send(t, p.Cli, p.CMR, 100, verbstest.SendOff, 8, true)
	verbstest.PollN(t, p.Cli, 1)
	verbstest.PostRecvs(t, p.Srv, p.SMR, 2, verbstest.RecvSize)
	verbstest.Send(t, p.Cli, p.CMR, 101, verbstest.SendOff, 8, false)
	verbstest.Send(t, p.Cli, p.CMR, 102, verbstest.SendOff, 8, true)
	verbstest.WaitDone(t, p.Srv, "server")
	var ae *verbs.AsyncEventError
	if !errors.As(p.Srv.Err(), &ae) || ae.Event != verbs.EventCQErr {
		t.Fatalf("server Err %v, want IBV_EVENT_CQ_ERR", p.Srv.Err())
	}
}

func TestFaultDropAfter(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	e.Prov.(*Fabric).SetFaults(FaultPlan{DropAfter: 3})
	defer e.Prov.(*Fabric).SetFaults(FaultPlan{})
	for i := 0; i < 5; i++ {
		verbstest.Send(t, p.Cli, p.CMR, uint64(i), verbstest.SendOff, 8, true)
	}
	all, err := verbstest.Drain(t, p.Cli)
	wcs := verbstest.SendsOnly(all)
	if len(wcs) != 5 {
		t.Fatalf("%d completions, want 5: %+v", len(wcs), wcs)
	}
	for i, wc := range wcs {
		want := verbs.WCSuccess
		if i >= 3 {
			want = verbs.WCWRFlushErr
		}
		verbstest.WantStatus(t, wc, uint64(i), want)
	}
	if !errors.Is(err, verbs.ErrDisconnected) || !strings.Contains(err.Error(), "injected") {
		t.Errorf("client Err %v", err)
	}
	verbstest.WaitDone(t, p.Srv, "server")
	if !errors.Is(p.Srv.Err(), verbs.ErrDisconnected) {
		t.Errorf("server Err %v", p.Srv.Err())
	}
	sw, _ := verbstest.Drain(t, p.Srv)
	if len(sw) != verbstest.NRecv {
		t.Errorf("server: %d completions, want %d (3 received + %d flushed)", len(sw), verbstest.NRecv, verbstest.NRecv-3)
	}
}

func TestFaultCompletionDelay(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	const d = 40 * time.Millisecond
	e.Prov.(*Fabric).SetFaults(FaultPlan{CompletionDelay: d})
	defer e.Prov.(*Fabric).SetFaults(FaultPlan{})
	start := time.Now()
	verbstest.Send(t, p.Cli, p.CMR, 1, verbstest.SendOff, 8, true)
	verbstest.PollN(t, p.Srv, 1)
	if el := time.Since(start); el < d {
		t.Errorf("Receive completed after %v, want >= %v", el, d)
	}
	verbstest.PollN(t, p.Cli, 1)
	// Outstanding delayed sends are flushed by a disconnect.
	verbstest.Send(t, p.Cli, p.CMR, 2, verbstest.SendOff, 8, true)
	verbstest.Send(t, p.Cli, p.CMR, 3, verbstest.SendOff, 8, false)
	p.Cli.Disconnect()
	wcs, _ := verbstest.Drain(t, p.Cli)
	var sends int
	for _, wc := range wcs {
		if !wc.Recv {
			sends++
			if wc.Status != verbs.WCWRFlushErr {
				t.Errorf("send %+v, want flushed", wc)
			}
		}
	}
	if sends != 2 {
		t.Errorf("%d send flushes, want 2 (unsignaled WRs flush too)", sends)
	}
}

// TestFaultSendAckLag: Sends are delivered at once, one behind the other
// (the link is pipelined), and complete at the sender SendAckLag later,
// in order; a disconnect during the lag flushes a delivered Send at the
// sender.
func TestFaultSendAckLag(t *testing.T) {
	e := newFabricEnv(t)
	f := e.Prov.(*Fabric)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	const lag = 60 * time.Millisecond
	f.SetFaults(FaultPlan{SendAckLag: lag})
	defer f.SetFaults(FaultPlan{})
	start := time.Now()
	verbstest.Send(t, p.Cli, p.CMR, 1, verbstest.SendOff, 8, true)
	verbstest.Send(t, p.Cli, p.CMR, 2, verbstest.SendOff, 8, true)
	for _, wc := range verbstest.PollN(t, p.Srv, 2) {
		if !wc.Recv || wc.Status != verbs.WCSuccess {
			t.Fatalf("receiver's completion %+v, want a Receive", wc)
		}
	}
	if el := time.Since(start); el >= lag {
		t.Errorf("both Sends delivered after %v, want before their %v acknowledgement", el, lag)
	}
	wcs := verbstest.PollN(t, p.Cli, 2)
	if el := time.Since(start); el < lag {
		t.Errorf("Sends completed at the sender after %v, want >= %v", el, lag)
	}
	verbstest.WantStatus(t, wcs[0], 1, verbs.WCSuccess)
	verbstest.WantStatus(t, wcs[1], 2, verbs.WCSuccess)
	// The plan goes while a Send waits for its acknowledgement: a WR
	// executed after that completes behind it, not before.
	verbstest.Send(t, p.Cli, p.CMR, 3, verbstest.SendOff, 8, true)
	verbstest.PollN(t, p.Srv, 1)
	f.SetFaults(FaultPlan{})
	verbstest.Send(t, p.Cli, p.CMR, 4, verbstest.SendOff, 8, true)
	verbstest.PollN(t, p.Srv, 1)
	wcs = verbstest.PollN(t, p.Cli, 2)
	verbstest.WantStatus(t, wcs[0], 3, verbs.WCSuccess)
	verbstest.WantStatus(t, wcs[1], 4, verbs.WCSuccess)
	f.SetFaults(FaultPlan{SendAckLag: lag})
	// Delivered, then the connection goes before the acknowledgement.
	verbstest.Send(t, p.Cli, p.CMR, 5, verbstest.SendOff, 8, true)
	verbstest.PollN(t, p.Srv, 1)
	p.Cli.Disconnect()
	wcs, _ = verbstest.Drain(t, p.Cli)
	if s := verbstest.SendsOnly(wcs); len(s) != 1 || s[0].WRID != 5 || s[0].Status != verbs.WCWRFlushErr {
		t.Errorf("sender's completions after a disconnect during the lag: %+v, want Send 5 flushed", s)
	}
}

func TestFaultCorruptRKey(t *testing.T) {
	e := newFabricEnv(t)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	wr := []verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{p.SMR.SGE(verbstest.DataOff, 8)},
		RemoteAddr: p.CMR.Addr() + verbstest.DataOff, RKey: p.CMR.RKey(), Signaled: true}}
	if err := p.Srv.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	verbstest.WantStatus(t, verbstest.PollN(t, p.Srv, 1)[0], 1, verbs.WCSuccess)
	e.Prov.(*Fabric).SetFaults(FaultPlan{CorruptRKeys: 1})
	defer e.Prov.(*Fabric).SetFaults(FaultPlan{})
	wr[0].ID = 2
	if err := p.Srv.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	verbstest.CheckAccessError(t, e, p, 2)
}

// TestFaultLoseSends: a lost Send completes successfully at the sender,
// reaches nobody, consumes no Receive and breaks neither side; the Sends
// around it are delivered in order.
func TestFaultLoseSends(t *testing.T) {
	e := newFabricEnv(t)
	f := e.Prov.(*Fabric)
	p := verbstest.ConnectPair(t, e, verbstest.PairOpts{})
	f.SetFaults(FaultPlan{LoseSends: 1, LoseSendsAfter: 1})
	defer f.SetFaults(FaultPlan{})
	for id := uint64(1); id <= 3; id++ {
		p.CMR.Slice(verbstest.SendOff, 1)[0] = byte(id)
		verbstest.Send(t, p.Cli, p.CMR, id, verbstest.SendOff, 1, true)
		verbstest.WantStatus(t, verbstest.PollN(t, p.Cli, 1)[0], id, verbs.WCSuccess)
		if id == 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			buf := make([]verbs.Completion, 1)
			n, _ := p.Srv.Poll(ctx, buf)
			cancel()
			if n != 0 {
				t.Fatalf("the lost Send arrived: %+v", buf[0])
			}
			if s := f.Stats(); s.PostedRecvs != 2*verbstest.NRecv-1 || s.PostedSends != 0 {
				t.Fatalf("after the lost Send: %+v, want one Receive consumed and no Send outstanding", s)
			}
			continue
		}
		wc := verbstest.PollN(t, p.Srv, 1)[0]
		got := p.SMR.Slice(verbstest.RecvOff+int(wc.WRID)*verbstest.RecvSize, 1)[0]
		if !wc.Recv || wc.Status != verbs.WCSuccess || wc.ByteLen != 1 || got != byte(id) {
			t.Fatalf("Send %d arrived as %+v carrying %d", id, wc, got)
		}
	}
	for who, c := range map[string]verbs.Conn{"client": p.Cli, "server": p.Srv} {
		select {
		case <-c.Done():
			t.Fatalf("%s: a lost Send disconnected it: %v", who, c.Err())
		default:
		}
	}
	p.Close()
}
