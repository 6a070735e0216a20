package localfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

func newOS(t testing.TB, root string, opts localfs.Options) *localfs.FS {
	t.Helper()
	f, err := localfs.New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		vfstest.CheckNoLeaks(t, f)
	})
	return f
}

// fsType names the filesystem of dir.
func fsType(t testing.TB, dir string) int64 {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		t.Fatal(err)
	}
	return s.Type
}

func TestOSConformance(t *testing.T) {
	if typ := fsType(t, os.TempDir()); typ != unix.EXT4_SUPER_MAGIC {
		t.Logf("%s is filesystem type %#x", os.TempDir(), typ)
	}
	vfstest.RunFSTests(t, func(t *testing.T) vfs.FS { return newOS(t, t.TempDir(), localfs.Options{}) })
}

// tmpfs has different readdir offsets and handle sizes than ext4.
func TestOSConformanceTmpfs(t *testing.T) {
	const shm = "/dev/shm"
	if fsType(t, shm) != unix.TMPFS_MAGIC {
		t.Fatalf("%s is not tmpfs on this machine", shm)
	}
	vfstest.RunFSTests(t, func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp(shm, "vfstest")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return newOS(t, dir, localfs.Options{})
	})
}

func TestOSHandlesSurviveRestartAndRename(t *testing.T) {
	root := t.TempDir()
	f1, err := localfs.New(root, localfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := f1.Mkdir(vfs.Cred{}, f1.Root(), "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	h, a, err := f1.Create(vfs.Cred{}, d, "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	gone, _, err := f1.Create(vfs.Cred{}, d, "gone", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	r1 := f1.Root()
	f1.Close()
	vfstest.CheckNoLeaks(t, f1)

	// Meanwhile, locally: the directory is renamed, a file removed.
	if err := os.Rename(filepath.Join(root, "d"), filepath.Join(root, "e")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "e", "gone")); err != nil {
		t.Fatal(err)
	}
	f2 := newOS(t, root, localfs.Options{})
	if !bytes.Equal(f2.Root(), r1) {
		t.Errorf("root handle changed across restart")
	}
	a2, err := f2.GetAttr(h)
	if err != nil || a2.FileID != a.FileID {
		t.Fatalf("handle after restart: %+v %v", a2, err)
	}
	if _, err := f2.GetAttr(d); err != nil {
		t.Errorf("renamed dir after restart: %v", err)
	}
	if _, _, err := f2.Lookup(vfs.Cred{}, d, "f"); err != nil {
		t.Errorf("lookup in renamed dir: %v", err)
	}
	if _, err := f2.GetAttr(gone); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("deleted file after restart: %v, want ErrStale", err)
	}
}

func TestOSHandleKeys(t *testing.T) {
	root := t.TempDir()
	buf := make([]byte, 64)
	if _, err := unix.Getxattr(root, localfs.KeyXattr, buf); err != unix.ENODATA {
		t.Fatalf("fresh dir has a key: %v", err)
	}
	f := newOS(t, root, localfs.Options{})
	n, err := unix.Getxattr(root, localfs.KeyXattr, buf)
	if err != nil || n != 32 {
		t.Fatalf("key xattr: %d %v", n, err)
	}
	// An explicit key makes other handles: the xattr key's are stale.
	g := newOS(t, root, localfs.Options{HandleKey: bytes.Repeat([]byte{7}, 16)})
	if bytes.Equal(f.Root(), g.Root()) {
		t.Fatalf("different keys, same handle")
	}
	if _, err := g.GetAttr(f.Root()); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("handle under another key: %v", err)
	}
	if _, err := localfs.New(root, localfs.Options{HandleKey: []byte("short")}); err == nil {
		t.Errorf("short key accepted")
	}
	// Two exports of one filesystem do not accept each other's handles.
	other := t.TempDir()
	o := newOS(t, other, localfs.Options{})
	h, _, err := o.Create(vfs.Cred{}, o.Root(), "x", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	for _, hh := range []vfs.Handle{h, o.Root()} {
		if _, err := f.GetAttr(hh); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("handle of another export: %v", err)
		}
	}
}

func TestNewOSErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, root := range []string{filepath.Join(dir, "missing"), file} {
		if f, err := localfs.New(root, localfs.Options{}); err == nil {
			f.Close()
			t.Errorf("New(%s) succeeded", root)
		}
	}
	// /proc cannot make file handles.
	if f, err := localfs.New("/proc/self", localfs.Options{HandleKey: make([]byte, 16)}); err == nil {
		f.Close()
		t.Errorf("New(/proc/self) succeeded")
	}
}

// A symlink planted in the export (pointing at /etc, or at a file
// outside) never lets an operation reach its target.
func TestOSSymlinkEscape(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "export")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"etc": "/etc", "out": outside, "sec": secret, "rel": "../outside/secret"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	var before, etcBefore unix.Stat_t
	unix.Stat(secret, &before)
	unix.Stat("/etc", &etcBefore)
	f := newOS(t, root, localfs.Options{})
	r := f.Root()
	own := vfs.Cred{UID: 99, GID: 99}
	for _, name := range []string{"etc", "out", "sec", "rel"} {
		l, a, err := f.Lookup(vfs.Cred{}, r, name)
		if err != nil || a.Type != vfs.TypeLnk {
			t.Fatalf("lookup %s: %+v %v", name, a, err)
		}
		wantErr := func(err error, want syscall.Errno, what string) {
			t.Helper()
			if got, _ := vfs.ToErrno(err); got != want {
				t.Errorf("%s through %s: %v, want %v", what, name, err, want)
			}
		}
		_, _, err = f.Lookup(vfs.Cred{}, l, "passwd")
		wantErr(err, syscall.ENOTDIR, "lookup")
		_, _, err = f.Lookup(vfs.Cred{}, l, "secret")
		wantErr(err, syscall.ENOTDIR, "lookup")
		_, _, err = f.Create(own, l, "x", 0o644, false, false, [8]byte{})
		wantErr(err, syscall.ENOTDIR, "create")
		_, _, err = f.Mkdir(own, l, "x", 0o755)
		wantErr(err, syscall.ENOTDIR, "mkdir")
		_, _, _, err = f.ReadDir(l, 0, 0, 100)
		wantErr(err, syscall.ENOTDIR, "readdir")
		_, _, err = f.ReadAt(l, make([]byte, 10), 0)
		wantErr(err, syscall.EINVAL, "read")
		_, err = f.WriteAt(vfs.Cred{}, l, []byte("pwned"), 0, true)
		wantErr(err, syscall.EINVAL, "write")
		size := uint64(0)
		wantErr(f.SetAttr(vfs.Cred{}, l, vfs.SetAttr{Size: &size}), syscall.EINVAL, "truncate")
		mode, uid := uint32(0o777), uint32(99)
		if err := f.SetAttr(vfs.Cred{}, l, vfs.SetAttr{Mode: &mode, UID: &uid}); err != nil {
			t.Errorf("setattr of the link %s: %v", name, err)
		}
		wantErr(f.Remove(vfs.Cred{}, l, "secret"), syscall.ENOTDIR, "remove")
		wantErr(f.Link(vfs.Cred{}, l, l, "x"), syscall.ENOTDIR, "link")
		wantErr(f.Rename(vfs.Cred{}, l, "secret", r, "stolen"), syscall.ENOTDIR, "rename")
		_, _, err = f.Create(own, r, name, 0o644, false, false, [8]byte{})
		wantErr(err, syscall.EEXIST, "unchecked create over the link")
	}
	var after, etcAfter unix.Stat_t
	unix.Stat(secret, &after)
	unix.Stat("/etc", &etcAfter)
	if after.Mode != before.Mode || after.Uid != before.Uid || after.Size != before.Size || after.Nlink != before.Nlink {
		t.Errorf("outside file changed: %+v -> %+v", before, after)
	}
	if etcAfter.Mode != etcBefore.Mode || etcAfter.Uid != etcBefore.Uid {
		t.Errorf("/etc changed")
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Errorf("a file was created outside")
	}
	// Lookup ".." of the root stays at the root.
	if h, _, err := f.Lookup(vfs.Cred{}, r, ".."); err != nil || !bytes.Equal(h, r) {
		t.Errorf("lookup .. of root: %x %v", h, err)
	}
	// Removing the links leaves their targets.
	for _, name := range []string{"etc", "sec"} {
		if err := f.Remove(vfs.Cred{}, r, name); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("secret gone: %v", err)
	}
}

// A file unlinked behind the server's back must not look alive through
// its cached descriptor.
func TestOSLocalUnlinkIsStale(t *testing.T) {
	root := t.TempDir()
	f := newOS(t, root, localfs.Options{})
	h, _, err := f.Create(vfs.Cred{}, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(vfs.Cred{}, h, []byte("abc"), 0, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "f")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr: %v", err)
	}
	if _, _, err := f.ReadAt(h, make([]byte, 3), 0); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("read: %v", err)
	}
	d, _, err := f.Mkdir(vfs.Cred{}, f.Root(), "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetAttr(d); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr of a removed dir: %v", err)
	}
}

func TestOSFDCache(t *testing.T) {
	root := t.TempDir()
	const max = 8
	f, err := localfs.New(root, localfs.Options{MaxOpenFiles: max})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.OpenFiles(); n != 1 {
		t.Errorf("fresh FS holds %d descriptors, want 1 (the root)", n)
	}
	var hs []vfs.Handle
	for i := range 40 {
		h, _, err := f.Create(vfs.Cred{}, f.Root(), string(rune('A'+i)), 0o644, true, false, [8]byte{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(vfs.Cred{}, h, []byte{byte(i)}, 0, false); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 1)
		if _, _, err := f.ReadAt(h, p, 0); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		if n := f.OpenFiles(); n > 1+3*max {
			t.Fatalf("%d descriptors open, bound is %d", n, 1+3*max)
		}
	}
	for i, h := range hs { // evicted entries reopen by handle
		p := make([]byte, 1)
		if _, _, err := f.ReadAt(h, p, 0); err != nil || p[0] != byte(i) {
			t.Errorf("file %d: %v %v", i, p, err)
		}
	}
	if f.OpenFiles() == 0 {
		t.Fatalf("nothing cached")
	}
	f.Close()
	if n := f.OpenFiles(); n != 0 {
		t.Errorf("%d descriptors open after Close", n)
	}
	// Every descriptor really is closed: none of ours remains in /proc.
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); l != "" && filepath.HasPrefix(l, root) {
			t.Errorf("descriptor %s still open on %s", e.Name(), l)
		}
	}
}

func TestOSReadAtDoesNotAllocate(t *testing.T) {
	f := newOS(t, t.TempDir(), localfs.Options{})
	h, _, err := f.Create(vfs.Cred{}, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(vfs.Cred{}, h, make([]byte, 1<<16), 0, false); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 1<<16)
	f.ReadAt(h, p, 0)
	if n := testing.AllocsPerRun(100, func() { f.ReadAt(h, p, 0) }); n != 0 {
		t.Errorf("ReadAt allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { f.GetAttr(h) }); n != 0 {
		t.Errorf("GetAttr allocates %v times per call", n)
	}
}

func FuzzOSHandle(f *testing.F) {
	fsys := newOS(f, f.TempDir(), localfs.Options{})
	h, _, err := fsys.Create(vfs.Cred{}, fsys.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(fsys.Root()))
	f.Add([]byte(h))
	f.Add([]byte{1, 8, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := fsys.GetAttr(b)
		if err == nil {
			if !bytes.Equal(b, fsys.Root()) && !bytes.Equal(b, h) {
				t.Fatalf("forged handle %x accepted", b)
			}
			return
		}
		if !errors.Is(err, vfs.ErrBadHandle) && !errors.Is(err, vfs.ErrStale) {
			t.Fatalf("handle %x: %v", b, err)
		}
	})
}

func benchFile(b *testing.B) (*localfs.FS, vfs.Handle) {
	f := newOS(b, b.TempDir(), localfs.Options{})
	h, _, err := f.Create(vfs.Cred{}, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteAt(vfs.Cred{}, h, bytes.Repeat([]byte{1}, 4<<20), 0, false); err != nil {
		b.Fatal(err)
	}
	return f, h
}

func BenchmarkReadAt(b *testing.B) {
	f, h := benchFile(b)
	p := make([]byte, 1<<20)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := f.ReadAt(h, p, int64(i%4)<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetAttr(b *testing.B) {
	f, h := benchFile(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.GetAttr(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetAttrUncached measures handle resolution on a cache miss
// (open_by_handle_at, authentication, containment check).
func BenchmarkGetAttrUncached(b *testing.B) {
	f := newOS(b, b.TempDir(), localfs.Options{MaxOpenFiles: 1})
	d, _, _ := f.Mkdir(vfs.Cred{}, f.Root(), "d", 0o755)
	h1, _, _ := f.Create(vfs.Cred{}, d, "a", 0o644, true, false, [8]byte{})
	h2, _, _ := f.Create(vfs.Cred{}, d, "b", 0o644, true, false, [8]byte{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h := h1
		if i%2 == 1 {
			h = h2
		}
		if _, err := f.GetAttr(h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	f, _ := benchFile(b)
	r := f.Root()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.Lookup(vfs.Cred{}, r, "f"); err != nil {
			b.Fatal(err)
		}
	}
}

// The conformance suite accepts ErrNotSupported from Link; the OS backend
// must really have hard links.
func TestOSHasHardLinks(t *testing.T) {
	f := newOS(t, t.TempDir(), localfs.Options{})
	h, _, err := f.Create(vfs.Cred{}, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Link(vfs.Cred{}, h, f.Root(), "g"); err != nil {
		t.Fatalf("link: %v", err)
	}
	if a, err := f.GetAttr(h); err != nil || a.Nlink != 2 {
		t.Errorf("nlink after link: %+v %v", a, err)
	}
	// Removing one name must not make the other's handle stale.
	if err := f.Remove(vfs.Cred{}, f.Root(), "f"); err != nil {
		t.Fatal(err)
	}
	if a, err := f.GetAttr(h); err != nil || a.Nlink != 1 {
		t.Errorf("after removing one name: %+v %v", a, err)
	}
}

// TestOSCreateModeAnyUmask: CREATE gives the file exactly the mode and
// owner asked for under any process umask, whether the mode went to
// open(2) as the caller, or was restored by fchmod after the umask took
// bits away (set-id and sticky bits included).
func TestOSCreateModeAnyUmask(t *testing.T) {
	dir := t.TempDir()
	f := newOS(t, dir, localfs.Options{HandleKey: []byte("0123456789abcdef-vfs-umask")})
	if err := os.Chown(dir, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	for _, umask := range []int{0, 0o022, 0o077} {
		for i, mode := range []uint32{0o644, 0o777, 0o600, 0o666, 0o640, 0o4755, 0o2750, 0o1777, 0} {
			name := fmt.Sprintf("u%o-%d", umask, i)
			owner := vfs.Cred{UID: 1234, GID: 5678}
			old := syscall.Umask(umask)
			_, a, err := f.Create(owner, f.Root(), name, mode, true, false, [8]byte{})
			syscall.Umask(old)
			if err != nil {
				t.Fatalf("umask %#o: create %#o: %v", umask, mode, err)
			}
			if a.Mode != mode || a.UID != owner.UID || a.GID != owner.GID {
				t.Errorf("umask %#o: create %#o: got mode %#o uid %d gid %d", umask, mode, a.Mode, a.UID, a.GID)
			}
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(dir, name), &st); err == nil && st.Mode&0o7777 != mode {
				t.Errorf("umask %#o: create %#o: on disk %#o", umask, mode, st.Mode&0o7777)
			}
		}
	}
}
