package nfs_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

// TestRestartOS restarts the server (and its OS backend) in the middle of
// a session: handles from before still work, a file renamed between two
// calls keeps its handle, and the write verifier changes so the client
// knows to resend unstable data.
func TestRestartOS(t *testing.T) {
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	dir := t.TempDir()

	fs1, err := localfs.New(dir, localfs.Options{HandleKey: testHandleKey})
	if err != nil {
		t.Fatal(err)
	}
	ts1 := startServer(t, log, nfs.Config{BootTime: time.Unix(1000, 1)}, fs1)
	rpc1 := dialClient(t, ts1.addr)
	c1 := client.New(rpc1)
	root := ts1.root(t)
	d, err := c1.Mkdir(ctx, root, "d", wire.Sattr{})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := c1.Create(ctx, d.FH.FH, "f", wire.CreateHow{Mode: wire.Guarded})
	if err != nil {
		t.Fatal(err)
	}
	f := cr.FH.FH
	w1, err := c1.Write(ctx, f, 0, []byte("before restart"), wire.Unstable)
	if err != nil {
		t.Fatal(err)
	}
	// Rename between two calls: the handle stays.
	if _, err := c1.Rename(ctx, d.FH.FH, "f", root, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Getattr(ctx, f); err != nil {
		t.Fatalf("GETATTR after rename: %v", err)
	}
	rpc1.Close()
	ts1.stop(t)
	if err := fs1.Close(); err != nil {
		t.Fatal(err)
	}

	fs2 := newOSFS(t, dir) // same directory, same handle key
	ts2 := startServer(t, log, nfs.Config{BootTime: time.Unix(2000, 2)}, fs2)
	defer ts2.stop(t)
	rpc2 := dialClient(t, ts2.addr)
	defer rpc2.Close()
	c2 := client.New(rpc2)
	if root2 := ts2.root(t); !bytes.Equal(root2, root) {
		t.Fatalf("root handle changed across restart: %x -> %x", root, root2)
	}
	data, err := c2.ReadAll(ctx, f)
	if err != nil || string(data) != "before restart" {
		t.Fatalf("old handle after restart: %q, %v", data, err)
	}
	if _, err := c2.Getattr(ctx, d.FH.FH); err != nil {
		t.Fatalf("old directory handle after restart: %v", err)
	}
	// Rename again, now on the new server, and use the old handle.
	if _, err := c2.Rename(ctx, root, "g", d.FH.FH, "h"); err != nil {
		t.Fatal(err)
	}
	cm, err := c2.Commit(ctx, f, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Verf == w1.Verf {
		t.Fatal("write verifier unchanged across restart")
	}
	w2, err := c2.Write(ctx, f, 0, []byte("B"), wire.Unstable)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Verf != cm.Verf {
		t.Fatal("WRITE and COMMIT verifiers differ")
	}
	lk, err := c2.Lookup(ctx, d.FH.FH, "h")
	if err != nil || !bytes.Equal(lk.FH, f) {
		t.Fatalf("renamed file's handle: %v", err)
	}
}

// blockingFS blocks ReadAt until released.
type blockingFS struct {
	vfs.FS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingFS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return b.FS.ReadAt(h, p, off)
}

// TestConcurrentCalls sends two calls on one connection; the first blocks
// in the backend and the second is answered first.
func TestConcurrentCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bfs := &blockingFS{FS: newMemFS(t), entered: make(chan struct{}), release: make(chan struct{})}
	ts := startServer(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), nfs.Config{}, bfs)
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	c := client.New(rpc)
	root := ts.root(t)
	cr, err := c.Create(ctx, root, "f", wire.CreateHow{Mode: wire.Guarded})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteAll(ctx, cr.FH.FH, []byte("slow data")); err != nil {
		t.Fatal(err)
	}
	readDone := make(chan error, 1)
	var readData []byte
	go func() {
		res, err := c.Read(ctx, cr.FH.FH, 0, 100)
		if err == nil {
			readData = res.Data
		}
		readDone <- err
	}()
	<-bfs.entered
	if _, err := c.Getattr(ctx, cr.FH.FH); err != nil {
		t.Fatalf("GETATTR while READ blocks: %v", err)
	}
	select {
	case err := <-readDone:
		t.Fatalf("READ finished before release: %v", err)
	default:
	}
	close(bfs.release)
	if err := <-readDone; err != nil || string(readData) != "slow data" {
		t.Fatalf("READ: %q, %v", readData, err)
	}
}
