package daemon

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/internal/exporttest"
	nfsclient "github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// startForTransport starts a whole daemon exporting an empty directory
// (rw, no_root_squash, insecure) over TCP and, on the given fabric, over
// RPC-over-RDMA, and returns the root handle obtained through MOUNT.
func startForTransport(t *testing.T, fabric *softfabric.Fabric, rdmaAddr string) (*Daemon, []byte) {
	t.Helper()
	dir := exporttest.Dir(t, 0o755)
	exportsFile := exporttest.File(t, fmt.Sprintf("%s 127.0.0.1(rw,no_root_squash,insecure,fsid=3)\n", dir))
	cfg := Config{
		ExportsFile: exportsFile,
		NFSAddr:     "127.0.0.1:0",
		MountAddr:   "127.0.0.1:0",
		NoPortmap:   true,
		StateDir:    t.TempDir(),
		RDMAAddr:    rdmaAddr,
		RequireRDMA: rdmaAddr != "",
		RDMACredits: 16,
	}
	if fabric != nil {
		cfg.RDMAProvider = fabric
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	d, err := Start(context.Background(), log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	mc, err := oncrpc.Dial(context.Background(), "tcp", d.MountAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	mc.SetCred(oncrpc.NewAuthSys("test", 0, 0))
	fh, _, err := mount.Mnt(context.Background(), mc, dir)
	if err != nil {
		t.Fatal(err)
	}
	return d, fh
}

// TestEndToEndTCP runs the NFS end-to-end table through a whole daemon
// (exports, authorization, DRC, MOUNT) over TCP.
func TestEndToEndTCP(t *testing.T) {
	nfstest.RunEndToEnd(t, func(t *testing.T) (oncrpc.Caller, []byte) {
		d, root := startForTransport(t, nil, "")
		c, err := oncrpc.Dial(context.Background(), "tcp", d.NFSAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetCred(oncrpc.NewAuthSys("test", 0, 0))
		t.Cleanup(func() { c.Close() })
		return c, root
	})
}

// TestEndToEndRDMAFabric runs the same table over RPC-over-RDMA on the
// software fabric, through the daemon's RDMA listener; MOUNT stays on TCP
// as with the Linux client. Afterwards the fabric must hold nothing.
func TestEndToEndRDMAFabric(t *testing.T) {
	fabric := softfabric.NewFabric()
	n := 0
	nfstest.RunEndToEnd(t, func(t *testing.T) (oncrpc.Caller, []byte) {
		n++
		addr := fmt.Sprintf("daemon-%d:20049", n)
		d, root := startForTransport(t, fabric, addr)
		if d.RDMAPort() != 20049 {
			t.Fatalf("RDMA port %d", d.RDMAPort())
		}
		c, err := rdmaclient.Dial(context.Background(), fabric, addr, rdmaclient.Config{
			Cred: oncrpc.NewAuthSys("test", 0, 0), LocalAddr: "127.0.0.1:40001",
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, root
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := fabric.Stats()
		if st == (softfabric.FabricStats{}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fabric not empty after every daemon stopped: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRDMASendWithInvalidate: a client that offers Send-With-Invalidate
// (the Linux client always does, RFC 8797 section 4.3) gets its one
// chunk's steering tag invalidated by the reply of a bulk WRITE (Read
// chunk) and READ (Write chunk), which saves it a local invalidation per
// call; a client that does not offer it never gets one.
func TestRDMASendWithInvalidate(t *testing.T) {
	fabric := softfabric.NewFabric()
	_, root := startForTransport(t, fabric, "daemon-swi:20049")
	ctx := context.Background()
	for _, offer := range []bool{true, false} {
		c, err := rdmaclient.Dial(ctx, fabric, "daemon-swi:20049", rdmaclient.Config{
			Cred: oncrpc.NewAuthSys("test", 0, 0), LocalAddr: "127.0.0.1:40002", RemoteInvalidate: offer,
		})
		if err != nil {
			t.Fatal(err)
		}
		nc := nfsclient.New(c)
		name := fmt.Sprintf("swi-%v", offer)
		cr, err := nc.Create(ctx, root, name, wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}})
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 200<<10)
		for i := range data {
			data[i] = byte(i * 7)
		}
		if _, err := nc.Write(ctx, cr.FH.FH, 0, data, wire.FileSync); err != nil {
			t.Fatal(err)
		}
		rr, err := nc.Read(ctx, cr.FH.FH, 0, uint32(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rr.Data, data) {
			t.Fatalf("read back %d bytes, not what was written", len(rr.Data))
		}
		got := c.Stats().RemoteInvalidations
		c.Close()
		want := int64(0)
		if offer {
			want = 2 // the WRITE's Read chunk and the READ's Write chunk
		}
		if got != want {
			t.Fatalf("client offered Send-With-Invalidate: %v; %d replies invalidated, want %d", offer, got, want)
		}
	}
}
