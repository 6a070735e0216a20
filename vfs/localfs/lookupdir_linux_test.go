package localfs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

// LookupDirAttr (one resolution and one fstat of the directory, which
// also decides whether the server may open the name itself) answers as
// Lookup does, with the directory's attributes GetAttr gives: for root and
// for other callers, with and without search permission, for present and
// missing names, "." and "..", and for a handle that is not a directory.
func TestLookupDirAttrMatchesLookupAndGetAttr(t *testing.T) {
	root := t.TempDir()
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"open", 0o755}, {"nosearch", 0o700}, {"sticky", 0o1777}, {"searchonly", 0o711}} {
		p := filepath.Join(root, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newOS(t, root, localfs.Options{})
	callers := []vfs.Cred{{}, {UID: 1000, GID: 1000}, {UID: 65534, GID: 65534, GIDs: []uint32{100}}}
	dirs := []string{"open", "nosearch", "sticky", "searchonly"}
	for _, c := range callers {
		for _, dn := range dirs {
			dh, _, err := f.Lookup(vfs.Cred{}, f.Root(), dn)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"f", "missing", ".", ".."} {
				wantH, wantA, wantErr := f.Lookup(c, dh, name)
				wantD, err := f.GetAttr(dh)
				if err != nil {
					t.Fatal(err)
				}
				h, a, d, have, err := f.LookupDirAttr(c, dh, name)
				where := func() string { return fmt.Sprintf("uid %d %s/%s", c.UID, dn, name) }
				if !have {
					t.Fatalf("%s: no directory attributes (err %v)", where(), err)
				}
				if !localfs.SameErrno(err, wantErr) {
					t.Fatalf("%s: err %v, Lookup's %v", where(), err, wantErr)
				}
				if d != wantD {
					t.Fatalf("%s: dir attributes %+v, GetAttr's %+v", where(), d, wantD)
				}
				if wantErr == nil && (string(h) != string(wantH) || a != wantA) {
					t.Fatalf("%s: handle/attributes differ from Lookup's", where())
				}
			}
		}
	}
	// A handle that is not a directory: ENOTDIR, with its attributes.
	fh, fa, err := f.Lookup(vfs.Cred{}, mustLookup(t, f, "open"), "f")
	if err != nil {
		t.Fatal(err)
	}
	_, _, d, have, err := f.LookupDirAttr(vfs.Cred{UID: 1000, GID: 1000}, fh, "x")
	if !have || !errors.Is(err, unix.ENOTDIR) || d.Type != vfs.TypeReg || d.Size != fa.Size {
		t.Fatalf("lookup in a file: have %v err %v attrs %+v, want ENOTDIR with the file's attributes", have, err, d)
	}
	// A stale directory handle: no attributes, ErrStale.
	gone, _, err := f.Mkdir(vfs.Cred{}, f.Root(), "gone", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Rmdir(vfs.Cred{}, f.Root(), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, have, err := f.LookupDirAttr(vfs.Cred{}, gone, "x"); have || !errors.Is(err, vfs.ErrStale) {
		t.Fatalf("lookup in a removed directory: have %v err %v, want no attributes and ErrStale", have, err)
	}
}

func mustLookup(t *testing.T, f interface {
	Lookup(vfs.Cred, vfs.Handle, string) (vfs.Handle, vfs.Attr, error)
	Root() vfs.Handle
}, name string) vfs.Handle {
	t.Helper()
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
