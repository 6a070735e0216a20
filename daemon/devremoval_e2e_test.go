package daemon

import (
	"bytes"
	"context"
	"testing"
	"time"

	nfsclient "github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// TestRDMADeviceRemovedAndBack: the daemon's RDMA device goes away and
// comes back (as `rdma link delete rxe0` and `rdma link add` do). NFS over
// TCP keeps working while it is gone, the daemon holds nothing on the
// fabric, and once the device is back the daemon listens on RDMA again by
// itself: a client that reconnects reads the file it wrote before.
func TestRDMADeviceRemovedAndBack(t *testing.T) {
	fabric := softfabric.NewFabric()
	const host = "daemon-devremoval"
	addr := host + ":20049"
	d, root := startForTransport(t, fabric, addr)
	ctx := context.Background()
	dial := func() (*rdmaclient.Client, error) {
		return rdmaclient.Dial(ctx, fabric, addr, rdmaclient.Config{Cred: oncrpc.NewAuthSys("test", 0, 0), LocalAddr: "127.0.0.1:40003"})
	}
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc := nfsclient.New(c)
	cr, err := nc.Create(ctx, root, "before-removal", wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("device removal "), 10000)
	if _, err := nc.Write(ctx, cr.FH.FH, 0, data, wire.FileSync); err != nil {
		t.Fatal(err)
	}

	fabric.RemoveDevice(host)
	// The daemon's queue pair and listener go; the client's connection
	// (dead) is left until it closes, then nothing is left at all while
	// the device is still removed.
	waitStats := func(what string, ok func(softfabric.FabricStats) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(fabric.Stats()); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: fabric %+v", what, fabric.Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitStats("the daemon's queue pair and listener closed", func(s softfabric.FabricStats) bool { return s.Listeners == 0 && s.Conns == 1 })
	c.Close()
	waitStats("nothing left once the client closed", func(s softfabric.FabricStats) bool { return s == softfabric.FabricStats{} })
	tc, err := oncrpc.Dial(ctx, "tcp", d.NFSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetCred(oncrpc.NewAuthSys("test", 0, 0))
	if rr, err := nfsclient.New(tc).Read(ctx, cr.FH.FH, 0, uint32(len(data))); err != nil || !bytes.Equal(rr.Data, data) {
		t.Fatalf("READ over TCP while the RDMA device is gone: %v", err)
	}

	fabric.AddDevice(host)
	var c2 *rdmaclient.Client
	for deadline := time.Now().Add(15 * time.Second); ; {
		c2, err = dial()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RDMA not back 15 s after the device: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c2.Close()
	rr, err := nfsclient.New(c2).Read(ctx, cr.FH.FH, 0, uint32(len(data)))
	if err != nil || !bytes.Equal(rr.Data, data) {
		t.Fatalf("READ over RDMA after the device came back: %v", err)
	}
}
