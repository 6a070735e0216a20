package rpcrdma

// Device removal (device.go): the software fabric removes the server
// host's device with calls in flight, then adds it back. The calls in
// flight get no reply, the server frees every object it had on the device
// (listener, queue pairs, MRs) while it is gone, logs one WARN, keeps
// trying to listen, listens again once the device is back, and a client
// that reconnects gets its retransmissions answered: from the duplicate
// request cache for the calls that had completed.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

func TestDeviceRemovalAndReturn(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fab := softfabric.NewFabric()
	host := fmt.Sprintf("fabric-device-%d", addrSeq.Add(1))
	addr := host + ":20049"
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	led := &ledger{}
	drc := oncrpc.NewDRC(1024, 64<<20, time.Minute)
	srv := NewServer(log, oncrpc.NewDispatcher(log, drc, led.program()), fab,
		Config{RelistenMin: 5 * time.Millisecond, RelistenMax: 20 * time.Millisecond})
	ln, err := fab.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	gateOpen := true
	t.Cleanup(func() {
		if !gateOpen {
			close(led.gate)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		select {
		case err := <-served:
			if err != ErrServerClosed {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Shutdown")
		}
		waitFor(t, "fabric objects released", func() bool { return fab.Stats() == softfabric.FabricStats{} }, func() string {
			return fmt.Sprintf("%+v", fab.Stats())
		})
		waitFor(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= goroutines }, func() string {
			buf := make([]byte, 1<<16)
			return fmt.Sprintf("%d > %d\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
		})
	})
	port := 700
	dial := func() (*rdmaclient.Client, error) {
		port++
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return rdmaclient.Dial(ctx, fab, addr, rdmaclient.Config{LocalAddr: fmt.Sprintf("10.0.0.2:%d", port)})
	}

	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A call that completes before the removal.
	done := make([]byte, 3000)
	pattern(1, done)
	doneXID := c.NextXID()
	res, err := c.Call(ctxT(t), withXID(appendCall(done), doneXID))
	if err != nil {
		t.Fatal(err)
	}
	if seq := checkResult(t, appendCall(done), done, res); seq != 1 {
		t.Fatalf("first APPEND: sequence %d", seq)
	}
	led.gate = make(chan struct{})
	gateOpen = false

	// Calls in flight when the device goes: three APPENDs held in their
	// handler (the second and third came with a Read chunk).
	type call struct {
		cc   *oncrpc.ClientCall
		data []byte
		xid  uint32
	}
	var calls []call
	for i := range 3 {
		d := make([]byte, 500+i*60000)
		pattern(uint32(10+i), d)
		calls = append(calls, call{appendCall(d), d, c.NextXID()})
	}
	errs := make(chan error, len(calls))
	for _, k := range calls {
		go func() {
			_, err := c.Call(ctxT(t), withXID(k.cc, k.xid))
			errs <- err
		}()
	}
	waitFor(t, "3 APPENDs in their handler", func() bool { return led.inside.Load() == 3 }, func() string { return fmt.Sprint(led.inside.Load()) })

	fab.RemoveDevice(host)
	for range calls {
		select {
		case err := <-errs:
			if !errors.Is(err, rdmaclient.ErrClosed) {
				t.Fatalf("call in flight across the removal: %v, want ErrClosed (no reply)", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call hangs across the device removal")
		}
	}
	// The handlers finish on the dead connection: their replies are
	// dropped, their results cached.
	close(led.gate)
	gateOpen = true
	c.Close()
	waitFor(t, "the server holds nothing on the removed device", func() bool {
		s := fab.Stats()
		return srv.Stats().Conns == 0 && s == softfabric.FabricStats{}
	}, func() string { return fmt.Sprintf("server conns %d, fabric %+v", srv.Stats().Conns, fab.Stats()) })
	if led.appends.Load() != 4 {
		t.Fatalf("APPEND ran %d times, want 4", led.appends.Load())
	}
	var rej *verbs.RejectError
	if _, err := dial(); !errors.As(err, &rej) {
		t.Fatalf("Dial while the device is removed: %v, want a rejection", err)
	}
	waitFor(t, "attempts to listen again", func() bool { return logs.FilterMessage("cannot listen again yet").Len() >= 2 },
		func() string { return fmt.Sprint(entries(logs.All())) })

	warns := logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	if len(warns) != 1 || warns[0].Message != removedMsg {
		t.Fatalf("warnings %v, want one %q", entries(warns), removedMsg)
	}
	f := warns[0].ContextMap()
	if f["device"] != softfabric.DeviceName(host) || f["connections"] != int64(1) {
		t.Errorf("warning fields %v, want device %s and 1 connection", f, softfabric.DeviceName(host))
	}
	if n := logs.FilterMessage("connection closed: RDMA device removed").Len(); n != 1 {
		t.Errorf("%d INFO lines for the connection's end, want 1", n)
	}

	fab.AddDevice(host)
	waitFor(t, "listening again", func() bool { return logs.FilterMessage("RDMA device back; listening again").Len() == 1 },
		func() string { return fmt.Sprint(entries(logs.All())) })
	if s := fab.Stats(); s.Listeners != 1 {
		t.Fatalf("fabric listeners %d after the device came back, want 1", s.Listeners)
	}
	c2, err := dial()
	if err != nil {
		t.Fatalf("reconnect after the device came back: %v", err)
	}
	defer c2.Close()
	// A READ-like call with a Write chunk works on the new connection.
	if res, err := c2.Call(ctxT(t), fetchCall(200<<10, 7)); err != nil {
		t.Fatal(err)
	} else {
		checkResult(t, fetchCall(200<<10, 7), nil, res)
	}
	seqs := map[uint32]bool{}
	for _, k := range append([]call{{appendCall(done), done, doneXID}}, calls...) {
		res, err := c2.Call(ctxT(t), withXID(k.cc, k.xid))
		if err != nil {
			t.Fatalf("retransmission after reconnect: %v", err)
		}
		if seq := checkResult(t, k.cc, k.data, res); k.cc.Proc == ledgerAppend {
			if seqs[seq] {
				t.Fatalf("two APPENDs answered with sequence %d", seq)
			}
			seqs[seq] = true
		}
	}
	if n := led.appends.Load(); n != 4 {
		t.Fatalf("APPEND ran %d times after the retransmissions, want 4: each once, the rest from the DRC", n)
	}
	if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Errorf("%d warnings in all, want the one", n)
	}
	c2.Close()
	waitFor(t, "connection gone", func() bool { return srv.Stats().Conns == 0 && fab.Stats().MRs == 0 },
		func() string { return fmt.Sprintf("%+v", fab.Stats()) })
}

// TestDeviceRemovedShutdownWhileWaiting: Shutdown while the server waits
// for a removed device to come back ends the wait at once.
func TestDeviceRemovedShutdownWhileWaiting(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fab := softfabric.NewFabric()
	host := fmt.Sprintf("fabric-device-%d", addrSeq.Add(1))
	log := zap.NewNop()
	srv := NewServer(log, oncrpc.NewDispatcher(log, nil, (&ledger{}).program()), fab, Config{RelistenMin: time.Hour})
	ln, err := fab.Listen(host + ":20049")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fab.RemoveDevice(host)
	waitFor(t, "the listener closed", func() bool { return fab.Stats().Listeners == 0 }, func() string { return fmt.Sprintf("%+v", fab.Stats()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case err := <-served:
		if err != ErrServerClosed {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still waits for the device after Shutdown")
	}
	if s := fab.Stats(); s != (softfabric.FabricStats{}) {
		t.Fatalf("fabric %+v after Shutdown", s)
	}
	waitFor(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= goroutines }, func() string { return fmt.Sprint(runtime.NumGoroutine()) })
}
