package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// RunFSTests runs the conformance suite against fresh filesystems from
// newFS, one per subtest. The process must be allowed to chown (root).
// Each FS is closed at the end of its subtest, after which it must hold no
// open files (when it is an OpenCounter).
//
// Backend differences the suite accepts: Link may fail with
// vfs.ErrNotSupported (then nothing may be created); everything else must
// behave identically.
func RunFSTests(t *testing.T, newFS func(t *testing.T) vfs.FS) {
	for _, tc := range append(suite[:len(suite):len(suite)], identitySuite...) {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			c := &checker{T: t, fs: fsys, root: fsys.Root()}
			// Objects are created as owner, not root: the root becomes
			// owner's so that the kernel (or the memory backend's rules)
			// lets owner create in it.
			uid, gid := owner.UID, owner.GID
			c.ok(fsys.SetAttr(vfs.Cred{}, c.root, vfs.SetAttr{UID: &uid, GID: &gid}), "chown root to owner")
			t.Cleanup(func() {
				if err := fsys.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				if oc, ok := fsys.(OpenCounter); ok {
					CheckNoLeaks(t, oc)
				}
			})
			tc.fn(c)
		})
	}
}

var suite = []struct {
	name string
	fn   func(c *checker)
}{
	{"Root", testRoot},
	{"CreateAttrs", testCreateAttrs},
	{"CreateModes", testCreateModes},
	{"BadNames", testBadNames},
	{"ReadWrite", testReadWrite},
	{"Truncate", testTruncate},
	{"SetAttr", testSetAttr},
	{"MkdirRmdir", testMkdirRmdir},
	{"Symlink", testSymlink},
	{"Mknod", testMknod},
	{"RemoveStale", testRemoveStale},
	{"Rename", testRename},
	{"RenameDirRules", testRenameDirRules},
	{"RenamePrefixSiblings", testRenamePrefixSiblings},
	{"Link", testLink},
	{"ReadDirPaging", testReadDirPaging},
	{"ReadDirResume", testReadDirResume},
	{"ReadDirErrors", testReadDirErrors},
	{"FSStat", testFSStat},
	{"GarbageHandles", testGarbageHandles},
	{"Concurrent", testConcurrent},
	{"Closed", testClosed},
}

// checker bundles the FS under test with assertion helpers.
type checker struct {
	*testing.T
	fs   vfs.FS
	root vfs.Handle
}

var (
	owner = vfs.Cred{UID: 1234, GID: 5678}
	noV   [8]byte
)

func (c *checker) ok(err error, what string) {
	c.Helper()
	if err != nil {
		c.Fatalf("%s: %v", what, err)
	}
}

// errno asserts err reduces to want through vfs.ToErrno.
func (c *checker) errno(err error, want syscall.Errno, what string) {
	c.Helper()
	got, ok := vfs.ToErrno(err)
	if !ok || got != want {
		c.Errorf("%s: error %v (errno %v, %v), want %v", what, err, got, ok, want)
	}
}

// is asserts errors.Is(err, want).
func (c *checker) is(err, want error, what string) {
	c.Helper()
	if !errors.Is(err, want) {
		c.Errorf("%s: error %v, want %v", what, err, want)
	}
}

func (c *checker) create(dir vfs.Handle, name string, mode uint32) (vfs.Handle, vfs.Attr) {
	c.Helper()
	h, a, err := c.fs.Create(owner, dir, name, mode, true, false, noV)
	c.ok(err, "create "+name)
	return h, a
}

func (c *checker) mkdir(dir vfs.Handle, name string) vfs.Handle {
	c.Helper()
	h, _, err := c.fs.Mkdir(owner, dir, name, 0o755)
	c.ok(err, "mkdir "+name)
	return h
}

func (c *checker) attr(h vfs.Handle) vfs.Attr {
	c.Helper()
	a, err := c.fs.GetAttr(h)
	c.ok(err, "getattr")
	return a
}

func (c *checker) write(h vfs.Handle, data []byte, off int64) {
	c.Helper()
	n, err := c.fs.WriteAt(vfs.Cred{}, h, data, off, false)
	c.ok(err, "write")
	if n != len(data) {
		c.Fatalf("wrote %d of %d", n, len(data))
	}
}

func (c *checker) read(h vfs.Handle, n int, off int64) ([]byte, bool) {
	c.Helper()
	p := make([]byte, n)
	got, eof, err := c.fs.ReadAt(h, p, off)
	c.ok(err, "read")
	return p[:got], eof
}

func (c *checker) lookup(dir vfs.Handle, name string) (vfs.Handle, vfs.Attr) {
	c.Helper()
	h, a, err := c.fs.Lookup(vfs.Cred{}, dir, name)
	c.ok(err, "lookup "+name)
	return h, a
}

func (c *checker) noent(dir vfs.Handle, name string) {
	c.Helper()
	_, _, err := c.fs.Lookup(vfs.Cred{}, dir, name)
	c.errno(err, syscall.ENOENT, "lookup "+name)
}

func (c *checker) stale(h vfs.Handle, what string) {
	c.Helper()
	_, err := c.fs.GetAttr(h)
	c.is(err, vfs.ErrStale, what)
}

func testRoot(c *checker) {
	a := c.attr(c.root)
	if a.Type != vfs.TypeDir || a.Nlink < 2 || a.FileID == 0 {
		c.Errorf("root attr %+v", a)
	}
	for _, name := range []string{".", ".."} {
		h, la := c.lookup(c.root, name)
		if !bytes.Equal(h, c.root) || la.FileID != a.FileID {
			c.Errorf("lookup %q of root: handle %x fileid %d, want %x %d", name, h, la.FileID, c.root, a.FileID)
		}
	}
	if len(c.root) < vfs.MinHandle || len(c.root) > vfs.MaxHandle {
		c.Errorf("root handle of %d bytes", len(c.root))
	}
	r2 := c.fs.Root()
	r2[0] ^= 0xff // the caller owns the slice it got
	if !bytes.Equal(c.fs.Root(), c.root) {
		c.Errorf("Root() returned a shared slice")
	}
}

func testCreateAttrs(c *checker) {
	before := time.Now().Add(-2 * time.Second)
	h, a := c.create(c.root, "f", 0o640)
	if a.Type != vfs.TypeReg || a.Mode != 0o640 || a.UID != owner.UID || a.GID != owner.GID ||
		a.Nlink != 1 || a.Size != 0 || a.FileID == c.attr(c.root).FileID {
		c.Errorf("created attr %+v", a)
	}
	if a.Mtime.Before(before) || a.Ctime.Before(before) {
		c.Errorf("times %v %v before %v", a.Mtime, a.Ctime, before)
	}
	if g := c.attr(h); g != a {
		c.Errorf("getattr %+v != create's %+v", g, a)
	}
	lh, la := c.lookup(c.root, "f")
	if !bytes.Equal(lh, h) || la.FileID != a.FileID {
		c.Errorf("lookup gives %x/%d, create gave %x/%d", lh, la.FileID, h, a.FileID)
	}
	// Exact modes, umask and chown notwithstanding.
	for i, mode := range []uint32{0, 0o777, 0o6755, 0o1644, 0o2750} {
		_, a := c.create(c.root, fmt.Sprintf("m%d", i), mode)
		if a.Mode != mode {
			c.Errorf("create mode %#o: got %#o", mode, a.Mode)
		}
	}
	for i, mode := range []uint32{0o700, 0o2775, 0o1777} {
		d, _, err := c.fs.Mkdir(owner, c.root, fmt.Sprintf("d%d", i), mode)
		c.ok(err, "mkdir")
		if a := c.attr(d); a.Mode != mode || a.UID != owner.UID || a.GID != owner.GID {
			c.Errorf("mkdir mode %#o: got %+v", mode, a)
		}
	}
	if a := c.attr(c.root); a.Nlink != 5 {
		c.Errorf("root nlink %d after 3 mkdirs, want 5", a.Nlink)
	}
}

func testCreateModes(c *checker) {
	h, _ := c.create(c.root, "f", 0o644)
	c.write(h, []byte("keep"), 0)
	_, _, err := c.fs.Create(owner, c.root, "f", 0o644, true, false, noV)
	c.errno(err, syscall.EEXIST, "guarded create of existing")
	c.is(err, fs.ErrExist, "guarded create of existing")
	h2, a2, err := c.fs.Create(owner, c.root, "f", 0o600, false, false, noV)
	c.ok(err, "unchecked create of existing")
	if !bytes.Equal(h2, h) || a2.Size != 4 || a2.Mode != 0o644 {
		c.Errorf("unchecked create: %x %+v", h2, a2)
	}
	d := c.mkdir(c.root, "d")
	_, _, err = c.fs.Create(owner, c.root, "d", 0o644, false, false, noV)
	c.errno(err, syscall.EEXIST, "unchecked create over a directory")

	v1 := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	v2 := [8]byte{1, 2, 3, 4, 5, 6, 7, 9}
	xh, xa, err := c.fs.Create(owner, c.root, "x", 0o600, false, true, v1)
	c.ok(err, "exclusive create")
	if xa.Type != vfs.TypeReg || xa.Size != 0 || xa.UID != owner.UID {
		c.Errorf("exclusive attr %+v", xa)
	}
	rh, ra, err := c.fs.Create(owner, c.root, "x", 0o600, false, true, v1)
	c.ok(err, "exclusive retransmit")
	if !bytes.Equal(rh, xh) || ra.FileID != xa.FileID {
		c.Errorf("retransmit gave another file")
	}
	_, _, err = c.fs.Create(owner, c.root, "x", 0o600, false, true, v2)
	c.is(err, vfs.ErrExclusiveMismatch, "exclusive with another verifier")
	if _, ok := vfs.ToErrno(err); ok {
		c.Errorf("ToErrno(%v) reports an errno", err)
	}
	_, _, err = c.fs.Create(owner, c.root, "f", 0o600, false, true, v1)
	c.is(err, vfs.ErrExclusiveMismatch, "exclusive over a plainly created file")
	_, _, err = c.fs.Create(owner, c.root, "d", 0o600, false, true, v1)
	c.is(err, vfs.ErrExclusiveMismatch, "exclusive over a directory")
	// The client's SETATTR after an exclusive create replaces the times:
	// the verifier is gone, a late retransmit no longer matches.
	now := time.Now()
	c.ok(c.fs.SetAttr(vfs.Cred{}, xh, vfs.SetAttr{Atime: &now, Mtime: &now}), "setattr times")
	_, _, err = c.fs.Create(owner, c.root, "x", 0o600, false, true, v1)
	c.is(err, vfs.ErrExclusiveMismatch, "exclusive after the times changed")

	_, _, err = c.fs.Create(owner, h, "y", 0o644, true, false, noV)
	c.errno(err, syscall.ENOTDIR, "create in a file")
	_, _, err = c.fs.Create(owner, d, "y", 0o644, true, false, noV)
	c.ok(err, "create in a subdirectory")
}

func testBadNames(c *checker) {
	c.create(c.root, "f", 0o644)
	long := strings.Repeat("n", vfs.MaxName+1)
	for _, name := range []string{"", ".", "..", "a/b", "/", "x\x00y"} {
		_, _, err := c.fs.Create(owner, c.root, name, 0o644, true, false, noV)
		c.errno(err, syscall.EACCES, fmt.Sprintf("create %q", name))
		_, _, err = c.fs.Mkdir(owner, c.root, name, 0o755)
		c.errno(err, syscall.EACCES, fmt.Sprintf("mkdir %q", name))
		c.errno(c.fs.Remove(vfs.Cred{}, c.root, name), syscall.EACCES, fmt.Sprintf("remove %q", name))
		c.errno(c.fs.Rmdir(vfs.Cred{}, c.root, name), syscall.EACCES, fmt.Sprintf("rmdir %q", name))
		c.errno(c.fs.Rename(vfs.Cred{}, c.root, "f", c.root, name), syscall.EACCES, fmt.Sprintf("rename to %q", name))
		c.errno(c.fs.Rename(vfs.Cred{}, c.root, name, c.root, "g"), syscall.EACCES, fmt.Sprintf("rename from %q", name))
		_, _, err = c.fs.Symlink(owner, c.root, name, "t", 0o777)
		c.errno(err, syscall.EACCES, fmt.Sprintf("symlink %q", name))
		if name != "." && name != ".." {
			_, _, err = c.fs.Lookup(vfs.Cred{}, c.root, name)
			c.errno(err, syscall.EACCES, fmt.Sprintf("lookup %q", name))
		}
	}
	_, _, err := c.fs.Create(owner, c.root, long, 0o644, true, false, noV)
	c.errno(err, syscall.ENAMETOOLONG, "create of a 256-byte name")
	_, _, err = c.fs.Lookup(vfs.Cred{}, c.root, long)
	c.errno(err, syscall.ENAMETOOLONG, "lookup of a 256-byte name")
	_, _, err = c.fs.Create(owner, c.root, long[:vfs.MaxName], 0o644, true, false, noV)
	c.ok(err, "create of a 255-byte name")
}

func testReadWrite(c *checker) {
	h, _ := c.create(c.root, "f", 0o644)
	old := time.Unix(1_000_000_000, 0)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Mtime: &old}), "set old mtime")
	data := []byte("hello, world")
	c.write(h, data, 0)
	a := c.attr(h)
	if a.Size != uint64(len(data)) || !a.Mtime.After(old) {
		c.Errorf("after write: %+v", a)
	}
	if got, eof := c.read(h, len(data), 0); !bytes.Equal(got, data) || !eof {
		c.Errorf("read all: %q eof %v", got, eof)
	}
	if got, eof := c.read(h, 5, 0); string(got) != "hello" || eof {
		c.Errorf("read head: %q eof %v", got, eof)
	}
	if got, eof := c.read(h, 5, 7); string(got) != "world" || !eof {
		c.Errorf("read tail exactly: %q eof %v", got, eof)
	}
	if got, eof := c.read(h, 100, 7); string(got) != "world" || !eof {
		c.Errorf("read past end: %q eof %v", got, eof)
	}
	if got, eof := c.read(h, 10, 1000); len(got) != 0 || !eof {
		c.Errorf("read beyond end: %q eof %v", got, eof)
	}
	// A sparse write far out; the hole reads as zeros.
	const far = 1 << 20
	n, err := c.fs.WriteAt(vfs.Cred{}, h, []byte("end"), far, true)
	c.ok(err, "sync write")
	if n != 3 || c.attr(h).Size != far+3 {
		c.Errorf("sparse write: n %d size %d", n, c.attr(h).Size)
	}
	if got, eof := c.read(h, 4, 4096); !bytes.Equal(got, make([]byte, 4)) || eof {
		c.Errorf("hole: %v eof %v", got, eof)
	}
	c.write(h, []byte("HELLO"), 0)
	if got, _ := c.read(h, 12, 0); string(got) != "HELLO, world" {
		c.Errorf("overwrite: %q", got)
	}
	c.ok(c.fs.Commit(h), "commit")
	c.ok(c.fs.Commit(c.root), "commit of a directory")
	if _, eof, err := c.fs.ReadAt(h, nil, 0); err != nil || eof {
		c.Errorf("empty read: eof %v err %v", eof, err)
	}

	_, _, err = c.fs.ReadAt(h, make([]byte, 1), -1)
	c.errno(err, syscall.EINVAL, "read at a negative offset")
	_, err = c.fs.WriteAt(vfs.Cred{}, h, []byte("x"), -1, false)
	c.errno(err, syscall.EINVAL, "write at a negative offset")
	_, _, err = c.fs.ReadAt(c.root, make([]byte, 1), 0)
	c.errno(err, syscall.EISDIR, "read of a directory")
	_, err = c.fs.WriteAt(vfs.Cred{}, c.root, []byte("x"), 0, false)
	c.errno(err, syscall.EISDIR, "write of a directory")
	l, _, err := c.fs.Symlink(owner, c.root, "l", "f", 0o777)
	c.ok(err, "symlink")
	_, _, err = c.fs.ReadAt(l, make([]byte, 1), 0)
	c.errno(err, syscall.EINVAL, "read of a symlink")
	_, err = c.fs.WriteAt(vfs.Cred{}, l, []byte("x"), 0, false)
	c.errno(err, syscall.EINVAL, "write of a symlink")
}

func testTruncate(c *checker) {
	h, _ := c.create(c.root, "f", 0o644)
	c.write(h, []byte("0123456789"), 0)
	size := func(n uint64) *uint64 { return &n }
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Size: size(4)}), "shrink")
	if got, eof := c.read(h, 10, 0); string(got) != "0123" || !eof {
		c.Errorf("after shrink: %q %v", got, eof)
	}
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Size: size(8)}), "extend")
	if got, _ := c.read(h, 10, 0); string(got) != "0123\x00\x00\x00\x00" {
		c.Errorf("after extend: %q", got)
	}
	if a := c.attr(h); a.Size != 8 {
		c.Errorf("size %d", a.Size)
	}
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Size: size(0)}), "truncate to 0")
	if a := c.attr(h); a.Size != 0 {
		c.Errorf("size %d", a.Size)
	}
	c.errno(c.fs.SetAttr(vfs.Cred{}, c.root, vfs.SetAttr{Size: size(0)}), syscall.EISDIR, "truncate a directory")
	l, _, err := c.fs.Symlink(owner, c.root, "l", "f", 0o777)
	c.ok(err, "symlink")
	c.errno(c.fs.SetAttr(vfs.Cred{}, l, vfs.SetAttr{Size: size(0)}), syscall.EINVAL, "truncate a symlink")
}

func testSetAttr(c *checker) {
	h, _ := c.create(c.root, "f", 0o6755)
	at := time.Unix(1_500_000_000, 123456789)
	mt := time.Unix(1_600_000_000, 987654321)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Atime: &at, Mtime: &mt}), "set times")
	a := c.attr(h)
	if !a.Atime.Equal(at) || !a.Mtime.Equal(mt) {
		c.Errorf("times %v %v, want %v %v", a.Atime, a.Mtime, at, mt)
	}
	mt2 := time.Unix(1_700_000_000, 5)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Mtime: &mt2}), "set mtime only")
	if a := c.attr(h); !a.Atime.Equal(at) || !a.Mtime.Equal(mt2) {
		c.Errorf("mtime only: %v %v", a.Atime, a.Mtime)
	}
	uid, gid := uint32(42), uint32(43)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{UID: &uid}), "chown")
	a = c.attr(h)
	// Linux clears set-uid, and set-gid with group execute, on chown.
	if a.UID != 42 || a.GID != owner.GID || a.Mode != 0o755 {
		c.Errorf("after chown: %+v", a)
	}
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{GID: &gid}), "chgrp")
	if a := c.attr(h); a.UID != 42 || a.GID != 43 {
		c.Errorf("after chgrp: %+v", a)
	}
	mode := uint32(0o4710)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Mode: &mode}), "chmod")
	if a := c.attr(h); a.Mode != 0o4710 {
		c.Errorf("after chmod: %#o", a.Mode)
	}
	d := c.mkdir(c.root, "d")
	dm := uint32(0o2770)
	c.ok(c.fs.SetAttr(vfs.Cred{}, d, vfs.SetAttr{Mode: &dm, UID: &uid}), "chmod+chown dir")
	if a := c.attr(d); a.Mode != 0o2770 || a.UID != 42 {
		c.Errorf("dir after setattr: %+v", a)
	}
	l, _, err := c.fs.Symlink(owner, c.root, "l", "f", 0o777)
	c.ok(err, "symlink")
	c.ok(c.fs.SetAttr(vfs.Cred{}, l, vfs.SetAttr{Mode: &dm, UID: &uid, Mtime: &mt}), "setattr symlink")
	if a := c.attr(l); a.UID != 42 || !a.Mtime.Equal(mt) || a.Type != vfs.TypeLnk {
		c.Errorf("symlink after setattr: %+v", a)
	}
	if a := c.attr(h); a.Mode != 0o4710 || !a.Mtime.Equal(mt2) {
		c.Errorf("setattr of a symlink reached its target: %+v", a)
	}
	ct := c.attr(h).Ctime
	time.Sleep(20 * time.Millisecond)
	c.ok(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Mode: &mode}), "chmod again")
	if a := c.attr(h); a.Ctime.Before(ct) {
		c.Errorf("ctime went back: %v < %v", a.Ctime, ct)
	}
}

func testMkdirRmdir(c *checker) {
	d := c.mkdir(c.root, "d")
	da := c.attr(d)
	if da.Type != vfs.TypeDir || da.Nlink != 2 || da.Mode != 0o755 {
		c.Errorf("new dir %+v", da)
	}
	if a := c.attr(c.root); a.Nlink != 3 {
		c.Errorf("root nlink %d, want 3", a.Nlink)
	}
	sub := c.mkdir(d, "sub")
	if ph, pa := c.lookup(sub, ".."); !bytes.Equal(ph, d) || pa.FileID != da.FileID {
		c.Errorf("lookup .. of sub: %x", ph)
	}
	if a := c.attr(d); a.Nlink != 3 {
		c.Errorf("d nlink %d, want 3", a.Nlink)
	}
	_, _, err := c.fs.Mkdir(owner, c.root, "d", 0o755)
	c.errno(err, syscall.EEXIST, "mkdir existing")
	f, _ := c.create(d, "f", 0o644)
	_, _, err = c.fs.Mkdir(owner, c.root, "d", 0o755)
	c.errno(err, syscall.EEXIST, "mkdir over a file name")
	_, _, err = c.fs.Mkdir(owner, f, "x", 0o755)
	c.errno(err, syscall.ENOTDIR, "mkdir in a file")
	c.errno(c.fs.Rmdir(vfs.Cred{}, c.root, "d"), syscall.ENOTEMPTY, "rmdir non-empty")
	c.errno(c.fs.Rmdir(vfs.Cred{}, d, "f"), syscall.ENOTDIR, "rmdir a file")
	c.errno(c.fs.Remove(vfs.Cred{}, d, "sub"), syscall.EISDIR, "remove a directory")
	c.errno(c.fs.Rmdir(vfs.Cred{}, d, "nope"), syscall.ENOENT, "rmdir missing")
	c.errno(c.fs.Remove(vfs.Cred{}, d, "nope"), syscall.ENOENT, "remove missing")
	_, _, err = c.fs.Lookup(vfs.Cred{}, f, "x")
	c.errno(err, syscall.ENOTDIR, "lookup in a file")
	c.noent(d, "nope")
	c.ok(c.fs.Rmdir(vfs.Cred{}, d, "sub"), "rmdir sub")
	c.stale(sub, "removed directory")
	if a := c.attr(d); a.Nlink != 2 {
		c.Errorf("d nlink %d after rmdir, want 2", a.Nlink)
	}
	c.ok(c.fs.Remove(vfs.Cred{}, d, "f"), "remove f")
	c.ok(c.fs.Rmdir(vfs.Cred{}, c.root, "d"), "rmdir d")
	c.noent(c.root, "d")
	if a := c.attr(c.root); a.Nlink != 2 {
		c.Errorf("root nlink %d, want 2", a.Nlink)
	}
}

func testSymlink(c *checker) {
	target := "../../../etc/passwd"
	l, la, err := c.fs.Symlink(owner, c.root, "l", target, 0o600)
	c.ok(err, "symlink")
	if la.Type != vfs.TypeLnk || la.Size != uint64(len(target)) || la.UID != owner.UID || la.GID != owner.GID {
		c.Errorf("symlink attr %+v", la)
	}
	got, err := c.fs.ReadLink(l)
	c.ok(err, "readlink")
	if got != target {
		c.Errorf("readlink %q", got)
	}
	lh, lla := c.lookup(c.root, "l")
	if !bytes.Equal(lh, l) || lla.Type != vfs.TypeLnk {
		c.Errorf("lookup followed the symlink: %+v", lla)
	}
	_, _, err = c.fs.Symlink(owner, c.root, "l", "x", 0o777)
	c.errno(err, syscall.EEXIST, "symlink existing")
	_, _, err = c.fs.Symlink(owner, c.root, "e", "", 0o777)
	c.errno(err, syscall.ENOENT, "symlink to an empty target")
	_, err = c.fs.ReadLink(c.root)
	c.errno(err, syscall.EINVAL, "readlink a directory")
	f, _ := c.create(c.root, "f", 0o644)
	_, err = c.fs.ReadLink(f)
	c.errno(err, syscall.EINVAL, "readlink a file")
	// A symlink to a directory is not a directory.
	c.mkdir(c.root, "d")
	dl, _, err := c.fs.Symlink(owner, c.root, "dl", "d", 0o777)
	c.ok(err, "symlink to dir")
	_, _, err = c.fs.Create(owner, dl, "x", 0o644, true, false, noV)
	c.errno(err, syscall.ENOTDIR, "create through a symlink")
	_, _, err = c.fs.Lookup(vfs.Cred{}, dl, "x")
	c.errno(err, syscall.ENOTDIR, "lookup through a symlink")
	_, _, _, err = c.fs.ReadDir(dl, 0, 0, 10)
	c.errno(err, syscall.ENOTDIR, "readdir of a symlink")
	// Creating over a symlink never follows it.
	_, _, err = c.fs.Create(owner, c.root, "l", 0o644, false, false, noV)
	c.errno(err, syscall.EEXIST, "unchecked create over a symlink")
	c.ok(c.fs.Remove(vfs.Cred{}, c.root, "l"), "remove symlink")
	c.stale(l, "removed symlink")
}

func testMknod(c *checker) {
	for _, tc := range []struct {
		typ          vfs.FileType
		major, minor uint32
	}{{vfs.TypeFIFO, 0, 0}, {vfs.TypeSock, 0, 0}, {vfs.TypeChr, 1, 3}, {vfs.TypeBlk, 7, 200}} {
		name := fmt.Sprintf("n%d", tc.typ)
		who := owner
		if tc.typ == vfs.TypeChr || tc.typ == vfs.TypeBlk {
			// Device nodes need CAP_MKNOD: refused for owner, made by root.
			_, _, err := c.fs.Mknod(owner, c.root, name, tc.typ, 0o640, tc.major, tc.minor)
			c.errno(err, syscall.EPERM, "mknod of a device by a non-root caller")
			who = vfs.Cred{}
		}
		h, a, err := c.fs.Mknod(who, c.root, name, tc.typ, 0o640, tc.major, tc.minor)
		c.ok(err, "mknod "+name)
		if a.Type != tc.typ || a.Mode != 0o640 || a.UID != who.UID || a.Size != 0 {
			c.Errorf("mknod %v: %+v", tc.typ, a)
		}
		if (tc.typ == vfs.TypeChr || tc.typ == vfs.TypeBlk) && (a.Major != tc.major || a.Minor != tc.minor) {
			c.Errorf("mknod %v: rdev %d,%d", tc.typ, a.Major, a.Minor)
		}
		if _, la := c.lookup(c.root, name); la.Type != tc.typ || la.FileID != a.FileID {
			c.Errorf("lookup %s: %+v", name, la)
		}
		_, _, err = c.fs.ReadAt(h, make([]byte, 1), 0)
		c.errno(err, syscall.EINVAL, "read of a special file")
		_, _, err = c.fs.Mknod(owner, c.root, name, tc.typ, 0o640, 0, 0)
		c.errno(err, syscall.EEXIST, "mknod existing")
	}
	for _, typ := range []vfs.FileType{vfs.TypeReg, vfs.TypeDir, vfs.TypeLnk, 0, 99} {
		_, _, err := c.fs.Mknod(owner, c.root, "bad", typ, 0o644, 0, 0)
		c.errno(err, syscall.EINVAL, fmt.Sprintf("mknod type %d", typ))
	}
	c.ok(c.fs.Remove(vfs.Cred{}, c.root, "n7"), "remove fifo")
	c.noent(c.root, "n7")
}

func testRemoveStale(c *checker) {
	h, _ := c.create(c.root, "f", 0o644)
	c.write(h, []byte("data"), 0)
	c.read(h, 4, 0) // get it into any open-file cache
	c.ok(c.fs.Remove(vfs.Cred{}, c.root, "f"), "remove")
	c.stale(h, "getattr of a removed file")
	_, _, err := c.fs.ReadAt(h, make([]byte, 4), 0)
	c.is(err, vfs.ErrStale, "read of a removed file")
	_, err = c.fs.WriteAt(vfs.Cred{}, h, []byte("x"), 0, false)
	c.is(err, vfs.ErrStale, "write of a removed file")
	c.is(c.fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{}), vfs.ErrStale, "setattr of a removed file")
	c.noent(c.root, "f")
	// A new file of the same name is another file.
	h2, _ := c.create(c.root, "f", 0o644)
	if bytes.Equal(h, h2) {
		c.Errorf("recreated file has the removed file's handle")
	}
	c.stale(h, "old handle after recreation")
	if got, eof := c.read(h2, 4, 0); len(got) != 0 || !eof {
		c.Errorf("new file reads %q", got)
	}
}

func testRename(c *checker) {
	h, a := c.create(c.root, "f", 0o644)
	c.write(h, []byte("content"), 0)
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "f", c.root, "g"), "rename")
	c.noent(c.root, "f")
	gh, ga := c.lookup(c.root, "g")
	if !bytes.Equal(gh, h) || ga.FileID != a.FileID {
		c.Errorf("renamed file has handle %x, was %x", gh, h)
	}
	if got, _ := c.read(h, 7, 0); string(got) != "content" {
		c.Errorf("read after rename: %q", got)
	}
	d := c.mkdir(c.root, "d")
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "g", d, "h"), "rename to another dir")
	c.noent(c.root, "g")
	if hh, _ := c.lookup(d, "h"); !bytes.Equal(hh, h) {
		c.Errorf("moved file has another handle")
	}
	c.ok(c.fs.Rename(vfs.Cred{}, d, "h", d, "h"), "rename onto itself")
	c.lookup(d, "h")
	// Over an existing file: the victim is gone, its handle stale.
	v, _ := c.create(c.root, "victim", 0o644)
	c.ok(c.fs.Rename(vfs.Cred{}, d, "h", c.root, "victim"), "rename over a file")
	c.stale(v, "replaced file")
	if vh, va := c.lookup(c.root, "victim"); !bytes.Equal(vh, h) || va.FileID != a.FileID {
		c.Errorf("rename over: victim name has %x", vh)
	}
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "nope", c.root, "x"), syscall.ENOENT, "rename missing")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "victim", h, "x"), syscall.ENOTDIR, "rename into a file")
	// Renaming a directory moves its subtree; handles inside stay valid.
	sub := c.mkdir(d, "sub")
	leaf, _ := c.create(sub, "leaf", 0o644)
	c.write(leaf, []byte("leaf"), 0)
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "d", c.root, "e"), "rename dir")
	c.noent(c.root, "d")
	e, _ := c.lookup(c.root, "e")
	if !bytes.Equal(e, d) {
		c.Errorf("renamed dir has another handle")
	}
	s2, _ := c.lookup(e, "sub")
	l2, _ := c.lookup(s2, "leaf")
	if !bytes.Equal(l2, leaf) {
		c.Errorf("leaf in renamed dir has another handle")
	}
	if got, _ := c.read(leaf, 4, 0); string(got) != "leaf" {
		c.Errorf("leaf reads %q", got)
	}
	if ph, _ := c.lookup(sub, ".."); !bytes.Equal(ph, d) {
		c.Errorf(".. of sub after parent rename")
	}
	// Moving a directory changes both parents' link counts.
	other := c.mkdir(c.root, "other")
	c.ok(c.fs.Rename(vfs.Cred{}, e, "sub", other, "sub"), "move subdir")
	if a := c.attr(e); a.Nlink != 2 {
		c.Errorf("old parent nlink %d", a.Nlink)
	}
	if a := c.attr(other); a.Nlink != 3 {
		c.Errorf("new parent nlink %d", a.Nlink)
	}
	if ph, _ := c.lookup(sub, ".."); !bytes.Equal(ph, other) {
		c.Errorf(".. of moved subdir is not its new parent")
	}
	if l3, _ := c.lookup(sub, "leaf"); !bytes.Equal(l3, leaf) {
		c.Errorf("leaf handle changed with its directory's move")
	}
}

func testRenameDirRules(c *checker) {
	c.create(c.root, "f", 0o644)
	d := c.mkdir(c.root, "d")
	full := c.mkdir(c.root, "full")
	c.create(full, "x", 0o644)
	empty := c.mkdir(c.root, "empty")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "f", c.root, "d"), syscall.EISDIR, "file over dir")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "d", c.root, "f"), syscall.ENOTDIR, "dir over file")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "d", c.root, "full"), syscall.ENOTEMPTY, "dir over non-empty dir")
	sub := c.mkdir(d, "sub")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "d", sub, "x"), syscall.EINVAL, "dir into its own subdir")
	c.errno(c.fs.Rename(vfs.Cred{}, c.root, "d", d, "x"), syscall.EINVAL, "dir into itself")
	c.errno(c.fs.Rename(vfs.Cred{}, d, "sub", c.root, "d"), syscall.ENOTEMPTY, "dir over its non-empty parent")
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "d", c.root, "empty"), "dir over empty dir")
	c.stale(empty, "replaced empty dir")
	if h, _ := c.lookup(c.root, "empty"); !bytes.Equal(h, d) {
		c.Errorf("dir over empty dir: wrong object")
	}
	if a := c.attr(c.root); a.Nlink != 4 { // ., .., full, empty(=d)
		c.Errorf("root nlink %d, want 4", a.Nlink)
	}
}

// testRenamePrefixSiblings guards against backends (go-billy memfs) that
// treat every path starting with the source as part of it.
func testRenamePrefixSiblings(c *checker) {
	a, _ := c.create(c.root, "a", 0o644)
	c.write(a, []byte("A"), 0)
	ab, _ := c.create(c.root, "ab", 0o644)
	c.write(ab, []byte("AB"), 0)
	dir := c.mkdir(c.root, "dir")
	c.create(dir, "in", 0o644)
	dir2 := c.mkdir(c.root, "dir2")
	c.create(dir2, "in2", 0o644)
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "a", c.root, "c"), "rename a")
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "dir", c.root, "zdir"), "rename dir")
	names := c.listAll(c.root, 7)
	want := map[string]bool{".": true, "..": true, "ab": true, "c": true, "zdir": true, "dir2": true}
	for n := range want {
		if !names[n] {
			c.Errorf("%q missing after renames: %v", n, names)
		}
	}
	if len(names) != len(want) {
		c.Errorf("names %v, want %v", names, want)
	}
	if got, _ := c.read(ab, 2, 0); string(got) != "AB" {
		c.Errorf("ab reads %q", got)
	}
	if got, _ := c.read(a, 1, 0); string(got) != "A" {
		c.Errorf("renamed a reads %q", got)
	}
	c.lookup(dir2, "in2")
	if zd, _ := c.lookup(c.root, "zdir"); !bytes.Equal(zd, dir) {
		c.Errorf("zdir handle changed")
	}
	c.lookup(dir, "in")
}

// listAll reads a whole directory in pages of page entries and fails on a
// repeated name.
func (c *checker) listAll(dir vfs.Handle, page int) map[string]bool {
	c.Helper()
	names := map[string]bool{}
	var cookie uint64
	for range 100000 {
		es, _, eof, err := c.fs.ReadDir(dir, cookie, 0, page)
		c.ok(err, "readdir")
		if len(es) > page {
			c.Fatalf("readdir returned %d > %d entries", len(es), page)
		}
		for _, e := range es {
			if names[e.Name] {
				c.Errorf("readdir: %q listed twice", e.Name)
			}
			names[e.Name] = true
			cookie = e.Cookie
		}
		if eof {
			return names
		}
		if len(es) == 0 {
			c.Fatalf("readdir: no entries and no eof")
		}
	}
	c.Fatalf("readdir never reached eof")
	return nil
}

func testLink(c *checker) {
	h, a := c.create(c.root, "f", 0o644)
	d := c.mkdir(c.root, "d")
	err := c.fs.Link(vfs.Cred{}, h, d, "g")
	if errors.Is(err, vfs.ErrNotSupported) {
		c.noent(d, "g")
		if _, ok := vfs.ToErrno(err); ok {
			c.Errorf("ToErrno(ErrNotSupported) reports an errno")
		}
		return
	}
	c.ok(err, "link")
	gh, ga := c.lookup(d, "g")
	if !bytes.Equal(gh, h) || ga.FileID != a.FileID || ga.Nlink != 2 || c.attr(h).Nlink != 2 {
		c.Errorf("link: %x %+v", gh, ga)
	}
	c.errno(c.fs.Link(vfs.Cred{}, h, d, "g"), syscall.EEXIST, "link over an existing name")
	c.errno(c.fs.Link(vfs.Cred{}, d, c.root, "dl"), syscall.EPERM, "link a directory")
	c.errno(c.fs.Link(vfs.Cred{}, h, h, "x"), syscall.ENOTDIR, "link into a file")
	c.write(h, []byte("shared"), 0)
	c.ok(c.fs.Remove(vfs.Cred{}, c.root, "f"), "remove one name")
	if got, _ := c.read(gh, 6, 0); string(got) != "shared" {
		c.Errorf("other name reads %q", got)
	}
	if a := c.attr(h); a.Nlink != 1 {
		c.Errorf("nlink %d after removing one name", a.Nlink)
	}
	// Renaming one hard link onto another is a no-op.
	c.ok(c.fs.Link(vfs.Cred{}, h, c.root, "f2"), "link again")
	c.ok(c.fs.Rename(vfs.Cred{}, c.root, "f2", d, "g"), "rename onto own link")
	c.lookup(c.root, "f2")
	c.lookup(d, "g")
	c.attr(h)
}

func testReadDirPaging(c *checker) {
	d := c.mkdir(c.root, "big")
	const n = 2000
	ids := map[string]uint64{}
	for i := range n {
		name := fmt.Sprintf("entry-%04d", i)
		_, a := c.create(d, name, 0o644)
		ids[name] = a.FileID
	}
	names := map[string]int{}
	var cookie uint64
	pages := 0
	for {
		es, _, eof, err := c.fs.ReadDir(d, cookie, 0, 50)
		c.ok(err, "readdir")
		pages++
		if len(es) > 50 {
			c.Fatalf("page of %d", len(es))
		}
		for _, e := range es {
			names[e.Name]++
			if id, ok := ids[e.Name]; ok && id != e.FileID {
				c.Errorf("%s: fileid %d, lookup gave %d", e.Name, e.FileID, id)
			}
			if e.Name == ".." && e.FileID != c.attr(c.root).FileID {
				c.Errorf(".. fileid %d", e.FileID)
			}
			cookie = e.Cookie
		}
		if eof {
			break
		}
		if len(es) == 0 || pages > n {
			c.Fatalf("no progress")
		}
	}
	if len(names) != n+2 {
		c.Errorf("listed %d distinct names, want %d", len(names), n+2)
	}
	for name, k := range names {
		if k != 1 {
			c.Errorf("%q listed %d times", name, k)
		}
	}
	for name := range ids {
		if names[name] != 1 {
			c.Errorf("%q missing", name)
		}
	}
	if pages < (n+2)/50 {
		c.Errorf("only %d pages", pages)
	}
	// Cookie 0 restarts; the root's ".." is the root.
	es, _, _, err := c.fs.ReadDir(c.root, 0, 0, 10)
	c.ok(err, "readdir root")
	rid := c.attr(c.root).FileID
	for _, e := range es {
		if (e.Name == "." || e.Name == "..") && e.FileID != rid {
			c.Errorf("root %q fileid %d, want %d", e.Name, e.FileID, rid)
		}
	}
}

func testReadDirResume(c *checker) {
	d := c.mkdir(c.root, "dir")
	const n = 300
	for i := range n {
		c.create(d, fmt.Sprintf("e%03d", i), 0o644)
	}
	seen := map[string]int{}
	var cookie uint64
	es, verf, eof, err := c.fs.ReadDir(d, 0, 0, 100)
	c.ok(err, "first page")
	if eof || len(es) != 100 {
		c.Fatalf("first page: %d entries eof %v", len(es), eof)
	}
	for _, e := range es {
		seen[e.Name]++
		cookie = e.Cookie
	}
	// Mutate: remove some listed and some unlisted names, add new ones.
	removed := map[string]bool{}
	for i := 0; i < n; i += 7 {
		name := fmt.Sprintf("e%03d", i)
		c.ok(c.fs.Remove(vfs.Cred{}, d, name), "remove")
		removed[name] = true
	}
	for i := range 50 {
		c.create(d, fmt.Sprintf("new%02d", i), 0o644)
	}
	for {
		es, _, eof, err := c.fs.ReadDir(d, cookie, verf, 37)
		c.ok(err, "resume")
		for _, e := range es {
			seen[e.Name]++
			cookie = e.Cookie
		}
		if eof {
			break
		}
		if len(es) == 0 {
			c.Fatalf("no progress")
		}
	}
	for i := range n {
		name := fmt.Sprintf("e%03d", i)
		switch {
		case seen[name] > 1:
			c.Errorf("%s listed %d times", name, seen[name])
		case seen[name] == 0 && !removed[name]:
			c.Errorf("surviving %s skipped", name)
		}
	}
	for name, k := range seen {
		if k > 1 {
			c.Errorf("%s listed %d times", name, k)
		}
	}
}

func testReadDirErrors(c *checker) {
	f, _ := c.create(c.root, "f", 0o644)
	_, _, _, err := c.fs.ReadDir(f, 0, 0, 10)
	c.errno(err, syscall.ENOTDIR, "readdir of a file")
	_, _, _, err = c.fs.ReadDir(c.root, 0, 0, 0)
	c.errno(err, syscall.EINVAL, "readdir with max 0")
	_, _, _, err = c.fs.ReadDir(c.root, 1<<63+5, 0, 10)
	c.is(err, vfs.ErrBadCookie, "readdir with an impossible cookie")
	es, verf, eof, err := c.fs.ReadDir(c.root, 0, 0, 2)
	c.ok(err, "readdir")
	if len(es) != 2 || eof {
		c.Errorf("page of 2: %v eof %v", es, eof)
	}
	// Resuming with the verifier given, or with none (0, as clients that
	// do not keep it send), works; with another one (nonzero) it is a bad
	// cookie, also where the backend's verifier is 0.
	if len(es) == 2 {
		_, v2, _, err := c.fs.ReadDir(c.root, es[1].Cookie, verf, 10)
		c.ok(err, "resume with the verifier")
		if v2 != verf {
			c.Errorf("verifier changed from %#x to %#x on an unchanged directory", verf, v2)
		}
		_, _, _, err = c.fs.ReadDir(c.root, es[1].Cookie, 0, 10)
		c.ok(err, "resume with verifier 0")
		_, _, _, err = c.fs.ReadDir(c.root, es[1].Cookie, verf^0x5a5a, 10)
		c.is(err, vfs.ErrBadCookie, "resume with a wrong verifier")
		_, _, _, err = c.fs.ReadDir(c.root, 0, verf^0x5a5a, 10)
		c.ok(err, "cookie 0 with any verifier starts over")
	}
	es, _, eof, err = c.fs.ReadDir(c.root, 0, 0, 3)
	c.ok(err, "readdir")
	if len(es) != 3 || !eof {
		c.Errorf("whole listing of 3 (., .., f): %v eof %v", es, eof)
	}
}

func testFSStat(c *checker) {
	s, err := c.fs.FSStat()
	c.ok(err, "fsstat")
	if s.TotalBytes == 0 || s.FreeBytes > s.TotalBytes || s.AvailBytes > s.FreeBytes ||
		s.TotalFiles == 0 || s.FreeFiles > s.TotalFiles || s.AvailFiles > s.FreeFiles {
		c.Errorf("fsstat %+v", s)
	}
}

func testGarbageHandles(c *checker) {
	r := c.root
	flip := func(i int) vfs.Handle {
		h := append(vfs.Handle(nil), r...)
		h[i] ^= 0x5a
		return h
	}
	bad := []vfs.Handle{nil, {}, {0}, r[:len(r)-1], r[:1], append(append(vfs.Handle(nil), r...), 0),
		flip(0), flip(len(r) - 1), flip(len(r) / 2), bytes.Repeat([]byte{0xff}, vfs.MaxHandle),
		bytes.Repeat([]byte{0}, len(r)), bytes.Repeat([]byte{1}, 64)}
	for i := range 200 {
		h := make(vfs.Handle, i%(vfs.MaxHandle+1))
		for j := range h {
			h[j] = byte(i*31 + j*7)
		}
		bad = append(bad, h)
	}
	for _, h := range bad {
		if bytes.Equal(h, r) {
			continue
		}
		_, err := c.fs.GetAttr(h)
		if !errors.Is(err, vfs.ErrBadHandle) && !errors.Is(err, vfs.ErrStale) {
			c.Errorf("handle %x: %v, want ErrBadHandle or ErrStale", h, err)
		}
		_, _, err = c.fs.Lookup(vfs.Cred{}, h, "x")
		if !errors.Is(err, vfs.ErrBadHandle) && !errors.Is(err, vfs.ErrStale) {
			c.Errorf("lookup in handle %x: %v", h, err)
		}
		_, _, err = c.fs.ReadAt(h, make([]byte, 8), 0)
		if !errors.Is(err, vfs.ErrBadHandle) && !errors.Is(err, vfs.ErrStale) {
			c.Errorf("read of handle %x: %v", h, err)
		}
	}
}

func testConcurrent(c *checker) {
	const workers, rounds = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		dir, _, err := c.fs.Mkdir(owner, c.root, fmt.Sprintf("w%d", w), 0o755)
		c.ok(err, "mkdir")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				name := fmt.Sprintf("f%d", i)
				h, _, err := c.fs.Create(owner, dir, name, 0o644, true, false, noV)
				if err != nil {
					errs <- err
					return
				}
				msg := []byte(fmt.Sprintf("%d/%d", w, i))
				if _, err := c.fs.WriteAt(vfs.Cred{}, h, msg, 0, false); err != nil {
					errs <- err
					return
				}
				p := make([]byte, 32)
				n, _, err := c.fs.ReadAt(h, p, 0)
				if err != nil || !bytes.Equal(p[:n], msg) {
					errs <- fmt.Errorf("read %q, %v", p[:n], err)
					return
				}
				if _, err := c.fs.GetAttr(c.root); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if err := c.fs.Remove(vfs.Cred{}, dir, name); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		c.Errorf("worker: %v", err)
	}
}

func testClosed(c *checker) {
	h, _ := c.create(c.root, "f", 0o644)
	c.write(h, []byte("x"), 0)
	c.ok(c.fs.Close(), "close")
	if oc, ok := c.fs.(OpenCounter); ok && oc.OpenFiles() != 0 {
		c.Errorf("%d files open after Close", oc.OpenFiles())
	}
	if _, err := c.fs.GetAttr(h); err == nil {
		c.Errorf("getattr after Close succeeded")
	}
	if _, _, err := c.fs.ReadAt(h, make([]byte, 1), 0); err == nil {
		c.Errorf("read after Close succeeded")
	}
	c.ok(c.fs.Close(), "second close")
}
