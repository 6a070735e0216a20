package rpcrdma_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

const e2eFSID = 0x4242

var e2eSeq atomic.Int32

// nfsOverFabric starts the NFS server behind the RDMA transport on a
// fresh software fabric and returns a connected client transport.
func nfsOverFabric(t testing.TB, log *zap.Logger) (*rpcrdma.Client, []byte, *rpcrdma.Server) {
	tr := vfstest.NewTrackingFS(memfs.New())
	fs, err := vfs.New(tr, vfs.MemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := nfs.NewServer(nfs.Config{Log: log, Exports: nfs.ExportList{{FSID: e2eFSID, Path: "/export", FS: fs}}})
	disp := oncrpc.NewDispatcher(log, oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program())
	fab := verbs.NewFabric()
	rs := rpcrdma.NewServer(log, disp, fab, rpcrdma.Config{})
	addr := fmt.Sprintf("fabric-nfs-%d:20049", e2eSeq.Add(1))
	l, err := fab.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rs.Serve(l) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := rpcrdma.Dial(ctx, fab, addr, rpcrdma.ClientConfig{Cred: oncrpc.NewAuthSys("nfstest", 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rs.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
		if st := fab.Stats(); st != (verbs.FabricStats{}) {
			t.Errorf("fabric objects leaked: %+v", st)
		}
		if err := fs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := tr.OpenFiles(); n != 0 {
			t.Errorf("%d files left open: %v", n, tr.OpenNames())
		}
	})
	root, ok := srv.RootHandle(e2eFSID)
	if !ok {
		t.Fatal("no root handle")
	}
	return c, root, rs
}

// TestNFSEndToEnd runs the transport-neutral NFSv3 suite over RPC-over-RDMA
// on the software fabric.
func TestNFSEndToEnd(t *testing.T) {
	nfstest.RunEndToEnd(t, func(t *testing.T) (oncrpc.Caller, []byte) {
		c, root, _ := nfsOverFabric(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
		return c, root
	})
}
