//go:build ceph && linux && cgo

package cephfs

import (
	"testing"

	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// A directory moved to a new parent makes Rename refresh the old
// parent's link count (refreshDirStat, a mount and an unmount: about a
// second). The parents' name locks are released before it, so other
// changes of those directories' entries do not wait for it: inside the
// refresh, both parents' stripes can be taken exclusively.
func TestRenameReleasesNameLocksBeforeRefresh(t *testing.T) {
	conf := cephtest.Conf(t)
	f, err := New(Options{ConfigFile: conf, Root: exportDir(t, conf)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer f.Close()
	root := f.Root()
	mkdir := func(dir vfs.Handle, name string) vfs.Handle {
		t.Helper()
		h, _, err := f.Mkdir(vfs.Cred{}, dir, name, 0o755)
		if err != nil {
			t.Fatalf("mkdir %s: %v", name, err)
		}
		return h
	}
	a, b := mkdir(root, "a"), mkdir(root, "b")
	mkdir(a, "sub")
	va, err := f.codec.decode(a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := f.codec.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if nameStripe(va) == nameStripe(vb) {
		t.Logf("a and b share a stripe (%d)", nameStripe(va))
	}
	calls := 0
	f.refreshHook = func(v Vino) {
		calls++
		if v != va {
			t.Errorf("refreshDirStat(%v), want the old parent %v", v, va)
		}
		for _, d := range []struct {
			name string
			v    Vino
		}{{"a", va}, {"b", vb}} {
			m := &f.names[nameStripe(d.v)]
			if !m.TryLock() {
				t.Errorf("%s's name lock is held during refreshDirStat", d.name)
				continue
			}
			m.Unlock()
		}
	}
	if err := f.Rename(vfs.Cred{}, a, "sub", b, "sub"); err != nil {
		t.Fatalf("rename a/sub b/sub: %v", err)
	}
	if calls != 1 {
		t.Fatalf("refreshDirStat called %d times, want 1", calls)
	}
	// The refresh still does its work: a lost a subdirectory.
	attr, err := f.GetAttr(a)
	if err != nil {
		t.Fatalf("getattr a: %v", err)
	}
	if attr.Nlink != 2 {
		t.Errorf("a's link count %d after its subdirectory moved out, want 2", attr.Nlink)
	}
}
