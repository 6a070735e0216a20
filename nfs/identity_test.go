package nfs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// Issue 11, defect 1: AUTH_SYS uid/gid 0xffffffff made root-owned
// set-id files (fchownat(-1, -1) is "unchanged"). The ids now become
// nobody before any file system call; on disk nothing is root's.
func TestInvalidIDsMakeNoRootFiles(t *testing.T) {
	vfstest.RequireRoot(t)
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, log, nfs.Config{}, newOSFS(t, dir))
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	root := ts.root(t)
	setid := wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o6777}}
	for _, tc := range []struct {
		name          string
		uid, gid      uint32
		wantU, wantG  uint32
		supplementary []uint32
	}{
		{"both", 0xffffffff, 0xffffffff, nfs.Nobody, nfs.Nobody, nil},
		{"gid", 1000, 0xffffffff, 1000, nfs.Nobody, nil},
		{"groups", 1000, 1000, 1000, 1000, []uint32{0xffffffff}},
	} {
		c := client.New(rpc).WithCred(oncrpc.NewAuthSys("evil", tc.uid, tc.gid, tc.supplementary...))
		cr, err := c.Create(ctx, root, "f-"+tc.name, wire.CreateHow{Mode: wire.Unchecked, Attr: setid})
		if err != nil {
			t.Fatalf("%s: CREATE: %v", tc.name, err)
		}
		if _, err := c.Write(ctx, cr.FH.FH, 0, []byte("#!/bin/sh\n"), wire.FileSync); err != nil {
			t.Fatalf("%s: WRITE: %v", tc.name, err)
		}
		if _, err := c.Mkdir(ctx, root, "d-"+tc.name, setid); err != nil {
			t.Fatalf("%s: MKDIR: %v", tc.name, err)
		}
		for _, name := range []string{"f-" + tc.name, "d-" + tc.name} {
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
				t.Fatal(err)
			}
			if st.Uid != tc.wantU || st.Gid != tc.wantG {
				t.Errorf("%s on disk: %d:%d mode %#o, want %d:%d", name, st.Uid, st.Gid, st.Mode&0o7777, tc.wantU, tc.wantG)
			}
		}
	}
	// SETATTR of uid/gid 0xffffffff is refused (root: NFS3ERR_INVAL),
	// never a chown to (uid_t)-1 that leaves the owner alone while
	// answering OK.
	c := client.New(rpc)
	cr, err := c.Create(ctx, root, "r", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	bad := wire.Sattr{UID: wire.SetUint32{Set: true, V: 0xffffffff}, GID: wire.SetUint32{Set: true, V: 0xffffffff}}
	if _, err := c.Setattr(ctx, cr.FH.FH, bad, nil); client.StatusOf(err) != wire.ErrInval {
		t.Fatalf("SETATTR uid/gid 0xffffffff as root: %v, want NFS3ERR_INVAL", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "r"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("r after SETATTR -1: %d:%d %v", st.Uid, st.Gid, err)
	}
}

// READDIRPLUS gives handles and attributes only to a caller who may
// search the directory (the backend checks it once, as the caller); one
// who may only read it gets the names alone.
func TestReaddirplusNeedsSearchPermission(t *testing.T) {
	vfstest.RequireRoot(t)
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	dir := t.TempDir()
	for _, d := range []struct {
		name string
		mode uint32
	}{{"readonly", 0o744}, {"open", 0o755}} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, log, nfs.Config{}, newOSFS(t, dir))
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	root := ts.root(t)
	for _, tc := range []struct {
		dir         string
		uid         uint32
		wantHandles bool
	}{{"readonly", 1000, false}, {"readonly", 0, true}, {"open", 1000, true}} {
		c := client.New(rpc).WithCred(oncrpc.NewAuthSys("t", tc.uid, tc.uid))
		lk, err := client.New(rpc).Lookup(ctx, root, tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Readdirplus(ctx, lk.FH, 0, [8]byte{}, 8192, 65536)
		if err != nil {
			t.Fatalf("%s as %d: READDIRPLUS: %v", tc.dir, tc.uid, err)
		}
		found := false
		for _, e := range res.Entries {
			if e.Name != "f" {
				continue
			}
			found = true
			if e.FH.Set != tc.wantHandles || e.Attr.Set != tc.wantHandles {
				t.Errorf("%s as %d: entry f has handle %v attributes %v, want %v", tc.dir, tc.uid, e.FH.Set, e.Attr.Set, tc.wantHandles)
			}
		}
		if !found {
			t.Errorf("%s as %d: f not listed: %+v", tc.dir, tc.uid, res.Entries)
		}
	}
}
