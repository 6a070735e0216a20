package softfabric

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// TestRemoveDevice: removing a host's device kills its queue pairs with a
// DeviceRemovedError (the peer sees a disconnect) and flushes their work
// requests, ends its listener, refuses Listen and connection requests
// until AddDevice, and leaves the objects counted until their owners free
// them; a request taken before the removal yields a dead Conn.
func TestRemoveDevice(t *testing.T) {
	before := runtime.NumGoroutine()
	f := NewFabric()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := f.Listen("dev-a:20049")
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.Listen("dev-b:20049") // another host: untouched
	if err != nil {
		t.Fatal(err)
	}
	type dialed struct {
		c   verbs.Conn
		err error
	}
	dial := func(addr string) chan dialed {
		ch := make(chan dialed, 1)
		go func() {
			c, err := f.Dial(ctx, addr, verbs.ConnParams{})
			ch <- dialed{c, err}
		}()
		return ch
	}
	// One established connection with a Receive posted on each side.
	pending := dial("dev-a:20049")
	req, err := ln.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := req.Conn(verbs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := sc.Register(4096, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.PostRecv([]verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{mr.SGE(0, 4096)}}}); err != nil {
		t.Fatal(err)
	}
	if err := req.Accept(nil, 1, 1); err != nil {
		t.Fatal(err)
	}
	d := <-pending
	if d.err != nil {
		t.Fatal(d.err)
	}
	cc := d.c
	// A second request, taken but not answered when the device goes.
	pending2 := dial("dev-a:20049")
	req2, err := ln.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}

	f.RemoveDevice("dev-a")

	<-sc.Done()
	if !errors.Is(sc.Err(), verbs.ErrDeviceRemoved) {
		t.Fatalf("server side: %v, want ErrDeviceRemoved", sc.Err())
	}
	var dre *verbs.DeviceRemovedError
	if !errors.As(sc.Err(), &dre) || dre.Device != DeviceName("dev-a") {
		t.Fatalf("server side: %#v, want the device named", sc.Err())
	}
	<-cc.Done()
	if !errors.Is(cc.Err(), verbs.ErrDisconnected) {
		t.Fatalf("client side: %v, want ErrDisconnected", cc.Err())
	}
	wcs := make([]verbs.Completion, 4)
	n, err := sc.Poll(ctx, wcs)
	if n != 1 || wcs[0].WRID != 1 || wcs[0].Status != verbs.WCWRFlushErr {
		t.Fatalf("Poll after removal: %d %+v %v, want the Receive flushed", n, wcs[:n], err)
	}
	if _, err := sc.Poll(ctx, wcs); !errors.Is(err, verbs.ErrDeviceRemoved) {
		t.Fatalf("Poll once flushed: %v, want ErrDeviceRemoved", err)
	}
	if _, err := ln.GetRequest(ctx); !errors.Is(err, verbs.ErrDeviceRemoved) {
		t.Fatalf("GetRequest: %v, want ErrDeviceRemoved", err)
	}
	c2, err := req2.Conn(verbs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	<-c2.Done()
	if !errors.Is(c2.Err(), verbs.ErrDeviceRemoved) {
		t.Fatalf("Conn of a request taken before the removal: %v", c2.Err())
	}
	if err := req2.Accept(nil, 1, 1); err == nil {
		t.Fatal("Accept on the removed device succeeded")
	}
	req2.Reject(nil) // closes c2
	if d := <-pending2; d.err == nil {
		t.Fatal("Dial answered by a removed device succeeded")
	}
	if _, err := f.Listen("dev-a:20050"); err == nil {
		t.Fatal("Listen on the removed device succeeded")
	}
	var rej *verbs.RejectError
	if d := <-dial("dev-a:20049"); !errors.As(d.err, &rej) || rej.Status != verbs.RejectInvalidServiceID {
		t.Fatalf("Dial to the removed device: %v, want no listener", d.err)
	}
	// Counted until freed: both listeners, sc and cc, sc's MR.
	if s := f.Stats(); s.Listeners != 2 || s.Conns != 2 || s.MRs != 1 {
		t.Fatalf("stats before the owners free: %+v", s)
	}
	sc.Close()
	c2.Close()
	cc.Close()
	mr.Deregister()
	ln.Close()
	if s := f.Stats(); s != (FabricStats{Listeners: 1}) {
		t.Fatalf("stats once freed: %+v", s)
	}

	f.AddDevice("dev-a")
	ln2, err := f.Listen("dev-a:20049")
	if err != nil {
		t.Fatalf("Listen once the device is back: %v", err)
	}
	pending = dial("dev-a:20049")
	req, err = ln2.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Conn(verbs.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := req.Accept(nil, 1, 1); err != nil {
		t.Fatal(err)
	}
	if d := <-pending; d.err != nil {
		t.Fatal(d.err)
	} else {
		d.c.Close()
	}
	req.Reject(nil) // answered: closes the server side
	ln2.Close()
	other.Close()
	if s := f.Stats(); s != (FabricStats{}) {
		t.Fatalf("fabric leaked: %+v", s)
	}
	checkGoroutines(t, before)
}
