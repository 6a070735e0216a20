package localfs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// aclXattr encodes a POSIX access ACL (system.posix_acl_access, version
// 2): the mode's owner, group and other entries, a mask, and one named
// user entry for each of users (uid -> perm).
func aclXattr(mode uint32, users map[uint32]uint16) []byte {
	const undefined = 0xffffffff
	b := binary.NativeEndian.AppendUint32(nil, 2)
	entry := func(tag, perm uint16, id uint32) {
		b = binary.NativeEndian.AppendUint16(b, tag)
		b = binary.NativeEndian.AppendUint16(b, perm)
		b = binary.NativeEndian.AppendUint32(b, id)
	}
	entry(0x01, uint16(mode>>6&7), undefined) // ACL_USER_OBJ
	for uid, perm := range users {
		entry(0x02, perm, uid) // ACL_USER
	}
	entry(0x04, uint16(mode>>3&7), undefined) // ACL_GROUP_OBJ
	entry(0x10, 7, undefined)                 // ACL_MASK
	entry(0x20, uint16(mode&7), undefined)    // ACL_OTHER
	return b
}

// hopsDuring counts the calls handed to identity threads while fn runs.
func hopsDuring(fn func()) uint64 {
	before := identPool.hops.Load()
	fn()
	return identPool.hops.Load() - before
}

// Directory permissions read off the mode bits (dirGrants) give the same
// answers as the kernel applied as the caller: granted calls run without
// the identity thread where the filesystem allows it, and every refusal
// (mode bits, a named-user ACL entry, an ACL set after a grant was
// remembered, a sticky directory) is the kernel's, as the caller.
func TestDirGrantsMatchKernel(t *testing.T) {
	vfstest.RequireRoot(t)
	root := t.TempDir()
	f := newExportAt(t, root)
	var err error
	t.Logf("mode-bit grants on %s: %v", root, f.modePerm)
	server := vfs.Cred{UID: 0, GID: 0}
	user := vfs.Cred{UID: 1000, GID: 1000}
	mkdir := func(name string, mode uint32, uid int) vfs.Handle {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "a"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(mode&0o777)|modeExtra(mode)); err != nil {
			t.Fatal(err)
		}
		h, _, err := f.Lookup(server, f.Root(), name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// wantFast is how many hops a granted call takes: none with mode-bit
	// grants, one without.
	wantFast := uint64(1)
	if f.modePerm {
		wantFast = 0
	}
	lookup := func(dir vfs.Handle) (error, uint64) {
		var err error
		n := hopsDuring(func() { _, _, err = f.Lookup(user, dir, "a") })
		return err, n
	}

	open := mkdir("open", 0o755, 0)
	if err, n := lookup(open); err != nil || n != wantFast {
		t.Errorf("LOOKUP in a 0755 directory: %v, %d hops, want success in %d", err, n, wantFast)
	}
	closed := mkdir("closed", 0o700, 0)
	if err, n := lookup(closed); !errors.Is(err, unix.EACCES) || n != 1 {
		t.Errorf("LOOKUP in a 0700 directory of another: %v, %d hops, want EACCES from the kernel as the caller", err, n)
	}
	own := mkdir("own", 0o700, 1000)
	if err := unix.Setxattr(filepath.Join(root, "own"), "system.posix_acl_access", aclXattr(0o700, map[uint32]uint16{1000: 0}), 0); err != nil {
		t.Fatalf("setting an ACL: %v", err)
	}
	if err, n := lookup(own); err != nil || n != wantFast {
		t.Errorf("LOOKUP by the owner (owner bits rwx, ACL or not): %v, %d hops, want success in %d", err, n, wantFast)
	}

	// A named-user entry refusing the caller where the mode bits grant.
	acl := mkdir("acl", 0o755, 0)
	if err := unix.Setxattr(filepath.Join(root, "acl"), "system.posix_acl_access", aclXattr(0o755, map[uint32]uint16{1000: 0}), 0); err != nil {
		t.Fatalf("setting an ACL: %v", err)
	}
	if err, n := lookup(acl); !errors.Is(err, unix.EACCES) || n != 1 {
		t.Errorf("LOOKUP in a 0755 directory whose ACL refuses the caller: %v, %d hops, want EACCES from the kernel", err, n)
	}

	// A remembered "no ACL" (ctime over a second old) is dropped when an
	// ACL is set: the ctime moves.
	late := mkdir("late", 0o755, 0)
	time.Sleep(aclFreeMinAge + 100*time.Millisecond)
	if err, n := lookup(late); err != nil || n != wantFast {
		t.Fatalf("LOOKUP in a 0755 directory: %v, %d hops", err, n)
	}
	if err := unix.Setxattr(filepath.Join(root, "late"), "system.posix_acl_access", aclXattr(0o755, map[uint32]uint16{1000: 0}), 0); err != nil {
		t.Fatalf("setting an ACL: %v", err)
	}
	if err, n := lookup(late); !errors.Is(err, unix.EACCES) || n != 1 {
		t.Errorf("LOOKUP after an ACL refusing the caller was set: %v, %d hops, want EACCES from the kernel", err, n)
	}

	// REMOVE: granted in a 0777 directory, refused in a 0555 one and, for
	// another's file, in a sticky one.
	remove := func(dir vfs.Handle) (error, uint64) {
		var err error
		n := hopsDuring(func() { err = f.Remove(user, dir, "a") })
		return err, n
	}
	rw := mkdir("rw", 0o777, 0)
	if err, n := remove(rw); err != nil || n != wantFast {
		t.Errorf("REMOVE in a 0777 directory: %v, %d hops, want success in %d", err, n, wantFast)
	}
	if _, err := os.Lstat(filepath.Join(root, "rw", "a")); !os.IsNotExist(err) {
		t.Errorf("REMOVE left the file: %v", err)
	}
	ro := mkdir("ro", 0o555, 0)
	if err, n := remove(ro); !errors.Is(err, unix.EACCES) || n != 1 {
		t.Errorf("REMOVE in a 0555 directory: %v, %d hops, want EACCES from the kernel", err, n)
	}
	sticky := mkdir("sticky", 0o1777, 0)
	if err, n := remove(sticky); (!errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES)) || n != 1 {
		t.Errorf("REMOVE of root's file in a sticky directory: %v, %d hops, want the kernel's refusal", err, n)
	}
	for _, d := range []string{"ro", "sticky"} {
		if _, err := os.Lstat(filepath.Join(root, d, "a")); err != nil {
			t.Errorf("refused REMOVE in %s: %v", d, err)
		}
	}
	// RMDIR likewise.
	if err := os.Mkdir(filepath.Join(root, "rw", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n := hopsDuring(func() { err = f.Rmdir(user, rw, "sub") }); err != nil || n != wantFast {
		t.Errorf("RMDIR in a 0777 directory: %v, %d hops, want success in %d", err, n, wantFast)
	}
	if err := os.Mkdir(filepath.Join(root, "ro", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n := hopsDuring(func() { err = f.Rmdir(user, ro, "sub") }); !errors.Is(err, unix.EACCES) || n != 1 {
		t.Errorf("RMDIR in a 0555 directory: %v, %d hops, want EACCES from the kernel", err, n)
	}
}

// modeExtra maps the sticky bit of a numeric mode to os.FileMode's.
func modeExtra(mode uint32) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// dirXattrAbsent answers as getxattr of the directory's path does, by
// each of its routes: the export root's own descriptor, a directory's
// read descriptor opened once and kept in its entry, and /proc/self/fd
// when that cannot be opened; and an ACL on the export root itself
// refuses a caller the mode bits grant (the root's route is the one the
// fast paths take for the export's top level).
func TestDirXattrAbsentEveryDescriptor(t *testing.T) {
	vfstest.RequireRoot(t)
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	server := vfs.Cred{UID: 0, GID: 0}
	user := vfs.Cred{UID: 1000, GID: 1000}
	sh, _, err := f.Lookup(server, f.Root(), "sub")
	if err != nil {
		t.Fatal(err)
	}
	rootEntry, err := f.acquire(f.Root())
	if err != nil {
		t.Fatal(err)
	}
	defer f.cache.release(rootEntry)
	subEntry, err := f.acquire(sh)
	if err != nil {
		t.Fatal(err)
	}
	defer f.cache.release(subEntry)
	// An entry whose handle no longer opens: only /proc/self/fd is left.
	pfd, err := unix.Open(sub, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	bogus := &fdEntry{fd: pfd, rfd: -1, wfd: -1, typ: vfs.TypeDir, fh: unix.NewFileHandle(1, make([]byte, 8))}

	names := []struct {
		name string
		b    *byte
	}{{"system.posix_acl_access", &aclAccessName[0]}, {"system.posix_acl_default", &aclDefaultName[0]}}
	check := func(when string) {
		t.Helper()
		for _, n := range names {
			for _, c := range []struct {
				route string
				path  string
				e     *fdEntry
			}{{"export root", root, rootEntry}, {"kept descriptor", sub, subEntry}, {"/proc/self/fd", sub, bogus}} {
				_, gerr := unix.Getxattr(c.path, n.name, nil)
				want := gerr == unix.ENODATA || gerr == unix.EOPNOTSUPP
				if got := f.dirXattrAbsent(c.e, n.b); got != want {
					t.Errorf("%s, %s by the %s: absent %v, getxattr of the path says %v (%v)", when, n.name, c.route, got, want, gerr)
				}
			}
		}
	}
	open := f.OpenFiles()
	check("no ACLs")
	if n := f.OpenFiles(); n != open+1 {
		t.Errorf("%d descriptors open after the first asks, want %d (the subdirectory's read descriptor, once)", n, open+1)
	}
	if bogus.rfd != -1 {
		t.Errorf("an entry whose handle does not open got read descriptor %d", bogus.rfd)
	}
	for _, p := range []string{root, sub} {
		if err := unix.Setxattr(p, "system.posix_acl_access", aclXattr(0o777, map[uint32]uint16{1000: 0}), 0); err != nil {
			t.Fatalf("setting an ACL: %v", err)
		}
	}
	check("access ACLs set")
	for _, p := range []string{root, sub} {
		if err := unix.Setxattr(p, "system.posix_acl_default", aclXattr(0o777, nil), 0); err != nil {
			t.Fatalf("setting a default ACL: %v", err)
		}
	}
	check("default ACLs set too")
	if n := f.OpenFiles(); n != open+1 {
		t.Errorf("%d descriptors open after further asks, want %d", n, open+1)
	}

	// The export root's ACL refuses uid 1000 what its mode 0777 grants:
	// the kernel's refusal, as the caller.
	var lerr error
	if n := hopsDuring(func() { _, _, lerr = f.Lookup(user, f.Root(), "a") }); !errors.Is(lerr, unix.EACCES) || n != 1 {
		t.Errorf("LOOKUP in an export root whose ACL refuses the caller: %v, %d hops, want EACCES from the kernel", lerr, n)
	}
	var cerr error
	if n := hopsDuring(func() { _, _, cerr = f.Create(user, f.Root(), "new", 0o644, true, false, [8]byte{}) }); !errors.Is(cerr, unix.EACCES) || n != 1 {
		t.Errorf("CREATE in an export root whose ACL refuses the caller: %v, %d hops, want EACCES from the kernel", cerr, n)
	}
}
