package daemon_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Issue 11, defect 2: a handle of the read-only export relabelled with
// the read-write export's fsid wrote to the read-only export's file
// after a restart with a cold dentry cache (the exports shared the
// daemon's handle key, which did not cover the fsid). Handles are now
// bound to their export's fsid: the relabelled handle is stale, before
// and after a restart, with a warm or a cold cache; the genuine handle
// keeps working.
func TestExportsRelabelledHandleIsStale(t *testing.T) {
	requireRoot(t)
	ro, rw := exportDir(t, 0o777), exportDir(t, 0o777)
	writeFile(t, filepath.Join(ro, "f"), "read-only data", 0, 0, 0o666)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "exports")
	text := fmt.Sprintf("%s *(ro,insecure,no_root_squash,fsid=11)\n%s *(rw,insecure,no_root_squash,fsid=22)\n", ro, rw)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *daemon.Daemon {
		d, err := daemon.Start(context.Background(), zap.NewNop(), daemon.Config{
			ExportsFile: file, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true,
			StateDir: filepath.Join(tmp, "state"), // the handle key survives restarts
		})
		if err != nil {
			t.Fatalf("daemon.Start: %v", err)
		}
		return d
	}
	stop := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	}
	d := start()
	root, _ := mnt(t, dialFrom(t, d.MountAddr(), "127.0.0.1", false), ro)
	c := nfsAs(dialFrom(t, d.NFSAddr(), "127.0.0.1", false), 0, 0)
	f := lookup(t, c, root, "f")
	forged := append([]byte(nil), f...)
	binary.BigEndian.PutUint32(forged[4:8], 22)
	try := func(when string) {
		t.Helper()
		ctx := testCtx(t)
		_, err := c.Write(ctx, forged, 0, []byte("overwritten"), wire.FileSync)
		wantStatus(t, when+": WRITE through the relabelled handle", err, wire.ErrStale)
		_, err = c.Getattr(ctx, forged)
		wantStatus(t, when+": GETATTR of the relabelled handle", err, wire.ErrStale)
		if data, err := c.ReadAll(ctx, f); err != nil || string(data) != "read-only data" {
			t.Errorf("%s: READ through the genuine handle: %q %v", when, data, err)
		}
		_, err = c.Write(ctx, f, 0, []byte("overwritten"), wire.FileSync)
		wantStatus(t, when+": WRITE through the genuine read-only handle", err, wire.ErrROFS)
	}
	try("first run")
	stop(d)
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatalf("drop caches: %v", err)
	}
	d = start()
	defer stop(d)
	c = nfsAs(dialFrom(t, d.NFSAddr(), "127.0.0.1", false), 0, 0)
	try("after a restart with a cold dentry cache")
	if b, _ := os.ReadFile(filepath.Join(ro, "f")); string(b) != "read-only data" {
		t.Errorf("the read-only export's file changed: %q", b)
	}
}
