package nfs_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

const testFSID = 0x1234

// testHandleKey authenticates OS backend handles in every test, so that
// handles survive a restart.
var testHandleKey = []byte("0123456789abcdef-nfs-test")

// testServer is one NFS server on loopback TCP.
type testServer struct {
	nfs  *nfs.Server
	rpc  *oncrpc.Server
	addr string
	done chan error
}

// startServer serves export fs (fsid testFSID) on 127.0.0.1:0.
func startServer(t *testing.T, log *zap.Logger, cfg nfs.Config, fs vfs.FS) *testServer {
	t.Helper()
	return startServerRPC(t, log, cfg, fs, oncrpc.ServerConfig{})
}

// startServerRPC is startServer with a transport configuration.
func startServerRPC(t *testing.T, log *zap.Logger, cfg nfs.Config, fs vfs.FS, rpcCfg oncrpc.ServerConfig) *testServer {
	t.Helper()
	if cfg.Exports == nil {
		cfg.Exports = nfs.ExportList{{FSID: testFSID, Path: "/export", FS: fs}}
	}
	cfg.Log = log
	srv := nfs.NewServer(cfg)
	disp := oncrpc.NewDispatcher(log, oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program())
	rpc := oncrpc.NewServer(log, disp, rpcCfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{nfs: srv, rpc: rpc, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- rpc.ServeTCP(l) }()
	return ts
}

func (ts *testServer) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.rpc.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	<-ts.done
}

// dialClient connects an AUTH_SYS root client.
func dialClient(t *testing.T, addr string) *oncrpc.Client {
	t.Helper()
	c, err := oncrpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetCred(oncrpc.NewAuthSys("nfstest", 0, 0))
	return c
}

func (ts *testServer) root(t *testing.T) []byte {
	fh, ok := ts.nfs.RootHandle(testFSID)
	if !ok {
		t.Fatal("no root handle")
	}
	return fh
}

// newMemFS returns a memory backend over a leak-tracking billy filesystem
// and registers the leak check.
func newMemFS(t *testing.T) vfs.FS {
	tr := vfstest.NewTrackingFS(memfs.New())
	fs, err := billyfs.New(tr, billyfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := tr.OpenFiles(); n != 0 {
			t.Errorf("%d files left open: %v", n, tr.OpenNames())
		}
	})
	return fs
}

// newOSFS returns an OS backend over dir and registers the leak check.
func newOSFS(t *testing.T, dir string) *localfs.FS {
	fs, err := localfs.New(dir, localfs.Options{HandleKey: testHandleKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := fs.OpenFiles(); n != 0 {
			t.Errorf("%d descriptors left open", n)
		}
	})
	return fs
}

// dialTCP returns a DialFunc starting a server over the backend newFS
// makes.
func dialTCP(newFS func(t *testing.T) vfs.FS) nfstest.DialFunc {
	return dialTCPConfig(newFS, oncrpc.ServerConfig{})
}

func dialTCPConfig(newFS func(t *testing.T) vfs.FS, rpcCfg oncrpc.ServerConfig) nfstest.DialFunc {
	return func(t *testing.T) (oncrpc.Caller, []byte) {
		fs := newFS(t)
		ts := startServerRPC(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), nfs.Config{}, fs, rpcCfg)
		c := dialClient(t, ts.addr)
		t.Cleanup(func() {
			c.Close()
			ts.stop(t)
		})
		return c, ts.root(t)
	}
}

func TestEndToEndMem(t *testing.T) {
	nfstest.RunEndToEnd(t, dialTCP(newMemFS))
}

func TestEndToEndOS(t *testing.T) {
	nfstest.RunEndToEnd(t, dialTCP(func(t *testing.T) vfs.FS { return newOSFS(t, t.TempDir()) }))
}

// TestEndToEndOSSplice: READs of 64 KiB and more are spliced from the
// page cache to the socket.
func TestEndToEndOSSplice(t *testing.T) {
	nfstest.RunEndToEnd(t, dialTCPConfig(func(t *testing.T) vfs.FS { return newOSFS(t, t.TempDir()) },
		oncrpc.ServerConfig{SpliceReads: true}))
}
