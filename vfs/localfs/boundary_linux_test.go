package localfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

var boundaryKey = []byte("0123456789abcdef-boundaries")

// Handles are bound to their domain (the export's fsid and handle
// version, from the NFS layer): the same key and even the same directory
// under another domain refuse them, so a handle relabelled for another
// export is stale (issue 11, defect 2).
func TestOSHandleDomain(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newOS(t, dir, localfs.Options{HandleKey: boundaryKey, HandleDomain: []byte("export 1")})
	h, _, err := a.Lookup(vfs.Cred{}, a.Root(), "f")
	if err != nil {
		t.Fatal(err)
	}
	same := newOS(t, dir, localfs.Options{HandleKey: boundaryKey, HandleDomain: []byte("export 1")})
	if _, err := same.GetAttr(h); err != nil {
		t.Errorf("same key and domain (a restart): %v", err)
	}
	other := newOS(t, dir, localfs.Options{HandleKey: boundaryKey, HandleDomain: []byte("export 2")})
	for what, fs := range map[string]*localfs.FS{"another domain": other} {
		if _, err := fs.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("%s: GETATTR %v, want ErrStale", what, err)
		}
		if _, err := fs.WriteAt(vfs.Cred{}, h, []byte("b"), 0, true); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("%s: WRITE %v, want ErrStale", what, err)
		}
		if _, _, err := fs.Lookup(vfs.Cred{}, a.Root(), "f"); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("%s: the other root handle: %v, want ErrStale", what, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "a" {
		t.Errorf("file changed through a foreign handle: %q", b)
	}
}

// dropCaches empties the kernel's dentry and inode caches, as after a
// reboot or under memory pressure: open_by_handle_at then has to
// reconnect what it finds.
func dropCaches(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatalf("drop caches: %v", err)
	}
}

// A directory moved out of the export on the server is stale from then
// on, with what lies below it: through cached descriptors (the same
// server), after a restart, and after a restart with a cold dentry cache;
// ".." cannot lead out of the export (issue 11, defect 3).
func TestOSMovedOutDirectory(t *testing.T) {
	vfstest.RequireRoot(t) // drop_caches
	base := t.TempDir()
	root, out := filepath.Join(base, "export"), filepath.Join(base, "elsewhere")
	for _, d := range []string{root, out, filepath.Join(root, "w", "mv", "s"), filepath.Join(root, "w", "a", "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(root, "w", "mv", "f"), filepath.Join(root, "w", "a", "b", "g"), filepath.Join(root, "stay")} {
		if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := localfs.Options{HandleKey: boundaryKey}
	fs := newOS(t, root, opts)
	walk := func(names ...string) vfs.Handle {
		t.Helper()
		h := fs.Root()
		for _, n := range names {
			var err error
			if h, _, err = fs.Lookup(vfs.Cred{}, h, n); err != nil {
				t.Fatalf("lookup %v: %v", names, err)
			}
		}
		return h
	}
	mv, s, f := walk("w", "mv"), walk("w", "mv", "s"), walk("w", "mv", "f")
	b, g := walk("w", "a", "b"), walk("w", "a", "b", "g")
	stay := walk("stay")
	buf := make([]byte, 4)
	if _, _, err := fs.ReadAt(f, buf, 0); err != nil {
		t.Fatal(err)
	}
	// On the server host: w/mv leaves the export, and so does w/a (an
	// ancestor of b, whose handle is cached).
	if err := os.Rename(filepath.Join(root, "w", "mv"), filepath.Join(out, "mv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "w", "a"), filepath.Join(out, "a")); err != nil {
		t.Fatal(err)
	}
	check := func(when string, fs *localfs.FS, coldFiles bool) {
		t.Helper()
		stale := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, vfs.ErrStale) {
				t.Errorf("%s: %s: %v, want ErrStale", when, what, err)
			}
		}
		for what, h := range map[string]vfs.Handle{"moved directory": mv, "its subdirectory": s, "directory below a moved ancestor": b} {
			_, err := fs.GetAttr(h)
			stale("GETATTR of the "+what, err)
			_, _, err = fs.Lookup(vfs.Cred{}, h, "..")
			stale(`LOOKUP ".." of the `+what, err)
			_, _, _, err = fs.ReadDir(h, 0, 0, 100)
			stale("READDIR of the "+what, err)
			_, _, err = fs.Create(vfs.Cred{}, h, "new", 0o644, true, false, [8]byte{})
			stale("CREATE in the "+what, err)
		}
		if !coldFiles {
			// With a cold dentry cache a file is disconnected and accepted
			// on its authenticator (see doc.go); while the kernel
			// knows where it is, it is refused.
			_, _, err := fs.ReadAt(f, buf, 0)
			stale("READ of a file in the moved directory", err)
			_, _, err = fs.ReadAt(g, buf, 0)
			stale("READ of a file below a moved ancestor", err)
		}
		if n, _, err := fs.ReadAt(stay, buf, 0); err != nil || string(buf[:n]) != "data" {
			t.Errorf("%s: READ of a file that stayed: %q %v", when, buf[:n], err)
		}
		// ".." of the root is the root.
		if h, _, err := fs.Lookup(vfs.Cred{}, fs.Root(), ".."); err != nil || string(h) != string(fs.Root()) {
			t.Errorf(`%s: LOOKUP ".." of the root: %x %v`, when, h, err)
		}
		if _, err := os.Stat(filepath.Join(out, "mv", "new")); err == nil {
			t.Errorf("%s: a file was created outside the export", when)
		}
	}
	check("cached", fs, false)
	fs.Close()
	fs2 := newOS(t, root, opts)
	check("after a restart", fs2, false)
	fs2.Close()
	dropCaches(t)
	fs3 := newOS(t, root, opts)
	check("after a restart with a cold dentry cache", fs3, true)
}
