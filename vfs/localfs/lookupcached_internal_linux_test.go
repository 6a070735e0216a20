package localfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// A LOOKUP of a name whose object is cached is answered by
// name_to_handle_at and an fstat of the cached descriptor
// (lookupCached), opening nothing; the answer is the one opening the
// name gives: the cached object's handle with its current attributes,
// the new object after the name was replaced, ENOENT after it was
// removed, a symbolic link itself, EXDEV for a mount point even when the
// mounted object's kernel handle is a cached entry's (a bind mount of a
// directory of the export), and the kernel's refusal where the caller
// may not search the directory.
func TestLookupCachedByHandle(t *testing.T) {
	vfstest.RequireRoot(t)
	root := t.TempDir()
	mk := func(name, data string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("f", "x")
	mk("g", "yy")
	if err := os.Symlink("f", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sub", "mnt", "private"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "private", "p"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(root, "sub"), filepath.Join(root, "mnt"), "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(filepath.Join(root, "mnt"), 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, c := range []vfs.Cred{{}, {UID: 1000, GID: 1000}} {
		// cached looks name up twice: the first opens it (uncached, or
		// answered by the cache: either way the same), the second must be
		// answered by handle with nothing opened, as the first answered.
		cached := func(name string) (vfs.Handle, vfs.Attr) {
			t.Helper()
			h1, a1, err := f.Lookup(c, f.Root(), name)
			if err != nil {
				t.Fatalf("uid %d: lookup %s: %v", c.UID, name, err)
			}
			open, hits := f.OpenFiles(), f.cache.lookupCached.Load()
			h2, a2, err := f.Lookup(c, f.Root(), name)
			if err != nil {
				t.Fatalf("uid %d: lookup %s again: %v", c.UID, name, err)
			}
			if got := f.cache.lookupCached.Load() - hits; got != 1 {
				t.Errorf("uid %d: lookup of cached %s: %d answered by handle, want 1", c.UID, name, got)
			}
			if n := f.OpenFiles(); n != open {
				t.Errorf("uid %d: lookup of cached %s: %d descriptors open, want %d", c.UID, name, n, open)
			}
			ga, err := f.GetAttr(h1)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(h1, h2) || a2 != ga || a1.FileID != a2.FileID {
				t.Fatalf("uid %d: lookup of cached %s: handle %x attrs %+v, want %x and GetAttr's %+v", c.UID, name, h2, a2, h1, ga)
			}
			return h2, a2
		}
		hf, af := cached("f")
		hg, ag := cached("g")
		if af.Size != 1 || ag.Size != 2 {
			t.Fatalf("sizes %d, %d, want 1, 2", af.Size, ag.Size)
		}
		if _, al := cached("l"); al.Type != vfs.TypeLnk {
			t.Errorf("uid %d: lookup of a symbolic link gave type %v, want the link itself", c.UID, al.Type)
		}

		// Attributes are the object's now, not those cached with it.
		if err := os.WriteFile(filepath.Join(root, "f"), []byte("longer"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, a, err := f.Lookup(c, f.Root(), "f"); err != nil || a.Size != 6 {
			t.Fatalf("uid %d: lookup after a write: size %d err %v, want 6", c.UID, a.Size, err)
		}

		// The name now names g's inode: g's handle, not f's.
		if err := os.Rename(filepath.Join(root, "g"), filepath.Join(root, "f")); err != nil {
			t.Fatal(err)
		}
		h, a, err := f.Lookup(c, f.Root(), "f")
		if err != nil || !bytes.Equal(h, hg) || a.FileID != ag.FileID {
			t.Fatalf("uid %d: lookup of a replaced name: %x (id %d) err %v, want g's %x (id %d), not f's %x",
				c.UID, h, a.FileID, err, hg, ag.FileID, hf)
		}
		// Removed: ENOENT.
		if err := os.Remove(filepath.Join(root, "f")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.Lookup(c, f.Root(), "f"); !errors.Is(err, unix.ENOENT) {
			t.Fatalf("uid %d: lookup of a removed name: %v, want ENOENT", c.UID, err)
		}
		mk("f", "x")
		mk("g", "yy")

		// A mount point: refused, although sub (the same inode) is cached.
		cached("sub")
		for range 2 {
			if _, _, err := f.Lookup(c, f.Root(), "mnt"); !errors.Is(err, unix.EXDEV) {
				t.Fatalf("uid %d: lookup of a bind mount of a cached directory: %v, want EXDEV", c.UID, err)
			}
		}
	}

	// A directory the caller may not search: the kernel's EACCES, also
	// for a name whose object is cached (looked up by root first).
	ph := mustLookupIn(t, f, f.Root(), "private")
	if _, _, err := f.Lookup(vfs.Cred{}, ph, "p"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := f.Lookup(vfs.Cred{UID: 1000, GID: 1000}, ph, "p"); !errors.Is(err, unix.EACCES) {
			t.Fatalf("lookup in a directory without search permission: %v, want EACCES", err)
		}
	}

	// withHandle finds an entry only by its exact kernel handle.
	if e, err := f.acquire(mustLookupIn(t, f, f.Root(), "g")); err != nil {
		t.Fatal(err)
	} else {
		fh := e.fh
		f.cache.release(e)
		if w := f.cache.withHandle(fh); w == nil {
			t.Error("withHandle(a cached entry's kernel handle) = nil")
		} else {
			f.cache.release(w)
		}
		other := append([]byte(nil), fh.Bytes()...)
		other[len(other)-1] ^= 1
		if w := f.cache.withHandle(unix.NewFileHandle(fh.Type(), other)); w != nil {
			f.cache.release(w)
			t.Error("withHandle(other handle bytes) found an entry")
		}
		if w := f.cache.withHandle(unix.NewFileHandle(fh.Type()+1, fh.Bytes())); w != nil {
			f.cache.release(w)
			t.Error("withHandle(other handle type) found an entry")
		}
	}
}

func mustLookupIn(t *testing.T, f *FS, dir vfs.Handle, name string) vfs.Handle {
	t.Helper()
	h, _, err := f.Lookup(vfs.Cred{}, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An ENOSYS answer of quotactl_fd (no quota operations on the
// filesystem) is kept, and only that answer: state answers are asked
// again on every CREATE.
func TestQuotaENOSYSKept(t *testing.T) {
	saved := quotactlFD
	defer func() { quotactlFD = saved }()
	for _, c := range []struct {
		e     unix.Errno
		calls int
		off   bool
	}{{unix.ENOSYS, 1, true}, {0, 3, true}, {unix.EPERM, 3, false}} {
		f, err := New(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		quotactlFD = func(int, uintptr, *byte) unix.Errno { calls++; return c.e }
		for i := range 3 {
			if got := f.quotaLimitsOff(); got != c.off {
				t.Errorf("answer %v, call %d: limits off %v, want %v", c.e, i, got, c.off)
			}
		}
		if calls != c.calls {
			t.Errorf("answer %v: quotactl_fd asked %d times in 3 calls, want %d", c.e, calls, c.calls)
		}
		f.Close()
	}
}

// LookupEntries resolves its directory once for any number of lookups,
// each answering as Lookup as the server does: present and missing names,
// a subdirectory, "." and "..".
func TestLookupEntriesResolvesOnce(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{".", "..", "sub", "missing"}
	for i := range 20 {
		n := "f" + string(rune('a'+i))
		names = append(names, n)
		if err := os.WriteFile(filepath.Join(root, "d", n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dh := mustLookupIn(t, f, f.Root(), "d")
	type answer struct {
		h   string
		a   vfs.Attr
		err error
	}
	want := map[string]answer{}
	for _, n := range names {
		h, a, err := f.Lookup(vfs.Cred{}, dh, n)
		want[n] = answer{string(h), a, err}
	}
	hits := f.OpenFileCache().Hits
	err = f.LookupEntries(dh, func(lookup func(string) (vfs.Handle, vfs.Attr, error)) {
		for _, n := range names {
			h, a, err := lookup(n)
			w := want[n]
			if string(h) != w.h || a != w.a || !sameErrno(err, w.err) {
				t.Errorf("%s: %x %+v %v, Lookup gave %x %+v %v", n, h, a, err, w.h, w.a, w.err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.OpenFileCache().Hits - hits; got != 1 {
		t.Errorf("%d lookups resolved the directory %d times, want once", len(names), got)
	}
	// A directory that is gone: its error, fn not run.
	gone, _, err := f.Mkdir(vfs.Cred{}, f.Root(), "gone", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Rmdir(vfs.Cred{}, f.Root(), "gone"); err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := f.LookupEntries(gone, func(func(string) (vfs.Handle, vfs.Attr, error)) { ran = true }); err == nil || ran {
		t.Errorf("LookupEntries of a removed directory: %v, fn run %v; want its error, fn not run", err, ran)
	}
}

// SameErrno is sameErrno for the package's external tests.
var SameErrno = sameErrno

// sameErrno reports whether a and b are both nil or carry the same errno
// (or the same vfs error).
func sameErrno(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	var ea, eb unix.Errno
	if errors.As(a, &ea) && errors.As(b, &eb) {
		return ea == eb
	}
	return errors.Is(a, b) || a.Error() == b.Error()
}

// SetAttrAround resolves the object once: decide sees the attributes
// GetAttr gives before the change, the change is SetAttr's (refusals
// included, the attributes after still reported), post is GetAttr's
// after it, and a decide that declines changes nothing.
func TestSetAttrAroundMatchesSetAttr(t *testing.T) {
	vfstest.RequireRoot(t)
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	owner := vfs.Cred{UID: 1000, GID: 1000}
	h, _, err := f.Create(owner, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	mode := func(m uint32) vfs.SetAttr { return vfs.SetAttr{Mode: &m} }
	for _, c := range []struct {
		who   vfs.Cred
		set   vfs.SetAttr
		apply bool
		errno unix.Errno
		want  uint32
	}{
		{owner, mode(0o600), true, 0, 0o600},
		{owner, mode(0o640), false, 0, 0o600},                                  // declined: unchanged
		{vfs.Cred{UID: 2000, GID: 2000}, mode(0o777), true, unix.EPERM, 0o600}, // not the owner
		{vfs.Cred{}, mode(0o604), true, 0, 0o604},
	} {
		want, err := f.GetAttr(h)
		if err != nil {
			t.Fatal(err)
		}
		hits := f.OpenFileCache().Hits
		ran := false
		pre, post, havePre, havePost, err := f.SetAttrAround(c.who, h, func(a *vfs.Attr) (vfs.SetAttr, bool) {
			ran = true
			if *a != want {
				t.Errorf("decide saw %+v, GetAttr gave %+v", *a, want)
			}
			return c.set, c.apply
		})
		if got := f.OpenFileCache().Hits - hits; got != 1 {
			t.Errorf("uid %d mode %#o: resolved %d times, want once", c.who.UID, *c.set.Mode, got)
		}
		if !ran || !havePre || pre != want {
			t.Fatalf("uid %d: decide ran %v, pre %v %+v, want %+v", c.who.UID, ran, havePre, pre, want)
		}
		var errno unix.Errno
		if (c.errno == 0 && err != nil) || (c.errno != 0 && (!errors.As(err, &errno) || errno != c.errno)) {
			t.Fatalf("uid %d mode %#o: %v, want errno %v", c.who.UID, *c.set.Mode, err, c.errno)
		}
		after, err := f.GetAttr(h)
		if err != nil {
			t.Fatal(err)
		}
		if after.Mode != c.want {
			t.Errorf("uid %d mode %#o apply %v: mode now %#o, want %#o", c.who.UID, *c.set.Mode, c.apply, after.Mode, c.want)
		}
		if c.apply != havePost || (havePost && post != after) {
			t.Errorf("uid %d: post %v %+v, want %v and GetAttr's %+v", c.who.UID, havePost, post, c.apply, after)
		}
	}
	// A removed object: not resolved, decide not run.
	if err := f.Remove(vfs.Cred{}, f.Root(), "f"); err != nil {
		t.Fatal(err)
	}
	ran := false
	if _, _, havePre, _, err := f.SetAttrAround(owner, h, func(*vfs.Attr) (vfs.SetAttr, bool) { ran = true; return vfs.SetAttr{}, false }); havePre || ran || !errors.Is(err, vfs.ErrStale) {
		t.Errorf("SetAttrAround of a removed file: havePre %v, decide ran %v, err %v; want ErrStale", havePre, ran, err)
	}
}

// A LOOKUP of an object not cached opens it by the handle asked by name
// (lookupByHandle) and caches it: the answer is the open by name's
// (compared with a second FS, whose lookups open names), the next lookup
// finds it cached, and a file moved out of the export afterwards is
// stale. A file with several links, which could be opened through a link
// outside the export, is opened by name instead.
func TestLookupByHandleUncached(t *testing.T) {
	vfstest.RequireRoot(t)
	top := t.TempDir()
	root := filepath.Join(top, "export")
	for _, d := range []string{root, filepath.Join(root, "d"), filepath.Join(top, "outside")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"f", "linked", "leaver"} {
		if err := os.WriteFile(filepath.Join(root, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "linked"), filepath.Join(top, "outside", "linked")); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []vfs.Cred{{}, {UID: 1000, GID: 1000}} {
		for _, tc := range []struct {
			name     string
			byHandle bool
		}{{"f", true}, {"d", true}, {"linked", false}} {
			// Evict the object: it is not cached.
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(root, tc.name), &st); err != nil {
				t.Fatal(err)
			}
			f.cache.dropIno(st.Ino)
			byH, opened := f.cache.lookupByHandle.Load(), f.cache.lookupOpened.Load()
			h, a, err := f.Lookup(c, f.Root(), tc.name)
			if err != nil {
				t.Fatalf("uid %d: lookup %s: %v", c.UID, tc.name, err)
			}
			if got := f.cache.lookupByHandle.Load() - byH; got != map[bool]uint64{true: 1}[tc.byHandle] {
				t.Errorf("uid %d: lookup of uncached %s: %d opened by handle, want by handle %v", c.UID, tc.name, got, tc.byHandle)
			}
			if got := f.cache.lookupOpened.Load() - opened; got != map[bool]uint64{false: 1}[tc.byHandle] {
				t.Errorf("uid %d: lookup of uncached %s: %d left to the open by name, want %v", c.UID, tc.name, got, !tc.byHandle)
			}
			ga, err := f.GetAttr(h)
			if err != nil || ga != a {
				t.Fatalf("uid %d: %s: attributes %+v, GetAttr %+v (%v)", c.UID, tc.name, a, ga, err)
			}
			hits := f.cache.lookupCached.Load()
			h2, _, err := f.Lookup(c, f.Root(), tc.name)
			if err != nil || !bytes.Equal(h, h2) || f.cache.lookupCached.Load() != hits+1 {
				t.Errorf("uid %d: %s looked up again: %x (%v), want %x from the cache", c.UID, tc.name, h2, err, h)
			}
		}
	}
	// Moved out after an uncached lookup: stale from the next call on.
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "leaver")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "leaver"), filepath.Join(top, "outside", "leaver")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("GETATTR of a file moved out of the export after its lookup: %v, want ErrStale", err)
	}
}
