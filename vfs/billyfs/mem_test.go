package billyfs_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

func TestMemConformance(t *testing.T) {
	vfstest.RunFSTests(t, func(t *testing.T) vfs.FS {
		tr := vfstest.NewTrackingFS(memfs.New())
		m, err := billyfs.New(tr, billyfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			m.Close()
			vfstest.CheckNoLeaks(t, tr, m)
		})
		return m
	})
}

func TestMemOpenFileCacheBounded(t *testing.T) {
	tr := vfstest.NewTrackingFS(memfs.New())
	m, err := billyfs.New(tr, billyfs.Options{MaxOpenFiles: 4})
	if err != nil {
		t.Fatal(err)
	}
	root := m.Root()
	var hs []vfs.Handle
	for i := range 10 {
		h, _, err := m.Create(vfs.Cred{}, root, string(rune('a'+i)), 0o644, true, false, [8]byte{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.WriteAt(vfs.Cred{}, h, []byte{byte(i)}, 0, false); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if n := tr.OpenFiles(); n != 4 {
		t.Errorf("%d billy files open, want the cache bound 4", n)
	}
	for i, h := range hs { // evicted files reopen transparently
		p := make([]byte, 1)
		if n, _, err := m.ReadAt(h, p, 0); err != nil || n != 1 || p[0] != byte(i) {
			t.Errorf("file %d: %v %v", i, p, err)
		}
	}
	m.Close()
	vfstest.CheckNoLeaks(t, tr, m)
	if tr.Opened() < 10 {
		t.Errorf("only %d opens", tr.Opened())
	}
}

func TestMemHandlesOfAnotherInstanceAreStale(t *testing.T) {
	a, b := billyfs.NewMem(billyfs.Options{}), billyfs.NewMem(billyfs.Options{})
	defer a.Close()
	defer b.Close()
	h, _, err := a.Create(vfs.Cred{}, a.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Root(), b.Root()) {
		t.Fatalf("two instances share a root handle")
	}
	for _, hh := range []vfs.Handle{h, a.Root()} {
		if _, err := b.GetAttr(hh); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("handle of another instance: %v, want ErrStale", err)
		}
	}
}

// Objects put in the billy filesystem behind the FS's back get nodes
// on sight, and vanish the same way.
func TestMemExternalChanges(t *testing.T) {
	bfs := memfs.New()
	if err := bfs.MkdirAll("pre/sub", 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := bfs.Create("pre/file")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("preexisting"))
	f.Close()
	owner := billyfs.Owner{UID: 7, GID: 8}
	m, err := billyfs.New(bfs, billyfs.Options{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pre, pa, err := m.Lookup(vfs.Cred{}, m.Root(), "pre")
	if err != nil || pa.Type != vfs.TypeDir || pa.UID != 7 || pa.Nlink != 3 {
		t.Fatalf("pre: %+v %v", pa, err)
	}
	fh, fa, err := m.Lookup(vfs.Cred{}, pre, "file")
	if err != nil || fa.Size != 11 || fa.Type != vfs.TypeReg || fa.GID != 8 {
		t.Fatalf("file: %+v %v", fa, err)
	}
	es, _, eof, err := m.ReadDir(pre, 0, 0, 10)
	if err != nil || !eof || len(es) != 4 {
		t.Fatalf("readdir: %v %v %v", es, eof, err)
	}
	if err := bfs.Remove("pre/file"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetAttr(fh); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("externally removed file: %v", err)
	}
	es, _, _, err = m.ReadDir(pre, 0, 0, 10)
	if err != nil || len(es) != 3 {
		t.Errorf("readdir after external remove: %v %v", es, err)
	}
	if _, err := billyfs.New(bfs, billyfs.Options{}); err != nil {
		t.Errorf("second FS on the same billy: %v", err)
	}
}

func TestMemFSStat(t *testing.T) {
	m := billyfs.NewMem(billyfs.Options{})
	defer m.Close()
	s0, _ := m.FSStat()
	if _, _, err := m.Mkdir(vfs.Cred{}, m.Root(), "d", 0o755); err != nil {
		t.Fatal(err)
	}
	s1, _ := m.FSStat()
	if s1.FreeFiles != s0.FreeFiles-1 || s1.TotalBytes != 1<<40 {
		t.Errorf("fsstat %+v then %+v", s0, s1)
	}
}
