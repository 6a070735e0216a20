package localfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// newExportAt returns the backend exporting root (mode 0755, so that
// callers other than root may search it), closed at the end of the test.
func newExportAt(t *testing.T, root string) *FS {
	t.Helper()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// onTempAndTmpfs runs fn on the temporary directory's filesystem and on
// a fresh tmpfs.
func onTempAndTmpfs(t *testing.T, fn func(t *testing.T, root string)) {
	t.Run("tempdir", func(t *testing.T) { fn(t, t.TempDir()) })
	t.Run("tmpfs", func(t *testing.T) {
		mnt := t.TempDir()
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0755,size=64m"); err != nil {
			t.Fatalf("mounting a tmpfs: %v", err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(mnt, 0); err != nil {
				t.Errorf("unmounting the tmpfs: %v", err)
			}
		})
		fn(t, mnt)
	})
}

// errnoOf is err's errno, 0 for none; it fails the test for an error
// without one.
func errnoOf(t *testing.T, err error) syscall.Errno {
	t.Helper()
	var e syscall.Errno
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("error without an errno: %v", err)
	}
	return e
}

// TestServerSetAttrMatchesKernel applies the same SETATTRs to twin files
// through the server's fast path (setAttrAsServerOK) and through the
// identity thread (mode-bit grants off), by owners and by others, members
// of the file's group or not, on files with and without set-id bits, and
// compares what each left: errno, owner, group, mode, size and explicit
// times. The owner's usual calls (chmod, explicit times, times now, a
// truncation, a chown to its own ids) must take no hop; everything else
// is the kernel's as the caller.
func TestServerSetAttrMatchesKernel(t *testing.T) {
	vfstest.RequireRoot(t)
	onTempAndTmpfs(t, testServerSetAttr)
}

func testServerSetAttr(t *testing.T, root string) {
	f := newExportAt(t, root)
	fastOK := f.modePerm
	t.Logf("fast SETATTR on %s: %v", root, fastOK)
	if !fastOK && os.Getenv("CI") == "true" {
		t.Fatal("CI=true but mode-bit grants are off")
	}
	user := vfs.Cred{UID: 1000, GID: 1000}
	member := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{2000}}
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	tm := time.Unix(1e9, 5000)
	type file struct {
		uid, gid int
		mode     uint32
	}
	files := []file{
		{1000, 1000, 0o644}, {1000, 2000, 0o644}, {1000, 3000, 0o755},
		{1000, 1000, 0o4755}, {1000, 2000, 0o2755}, {1000, 3000, 0o2745}, {1000, 1000, 0o6711},
		{2000, 2000, 0o666}, {0, 0, 0o644},
	}
	type change struct {
		name string
		s    vfs.SetAttr
		fast bool // by the owner of a file without set-id bits, no hop
	}
	changes := []change{
		{"chmod", vfs.SetAttr{Mode: u32(0o640)}, true},
		{"chmod-sgid", vfs.SetAttr{Mode: u32(0o2750)}, false},
		{"chmod-suid", vfs.SetAttr{Mode: u32(0o4750)}, true},
		{"chmod-sticky", vfs.SetAttr{Mode: u32(0o1777)}, true},
		{"times", vfs.SetAttr{Atime: &tm, Mtime: &tm}, true},
		{"mtime", vfs.SetAttr{Mtime: &tm}, true},
		{"now", vfs.SetAttr{AtimeNow: true, MtimeNow: true}, true},
		{"atime-now", vfs.SetAttr{AtimeNow: true}, true},
		{"size0", vfs.SetAttr{Size: u64(0)}, true},
		{"size10", vfs.SetAttr{Size: u64(10)}, true},
		{"chown-same", vfs.SetAttr{UID: u32(1000)}, true},
		{"chgrp-2000", vfs.SetAttr{GID: u32(2000)}, false},
		{"chgrp-3000", vfs.SetAttr{GID: u32(3000)}, false},
		{"chown-2000", vfs.SetAttr{UID: u32(2000)}, false},
		{"chmod-and-size", vfs.SetAttr{Mode: u32(0o600), Size: u64(0)}, true},
		{"chmod-suid-and-size", vfs.SetAttr{Mode: u32(0o4700), Size: u64(0)}, false},
		{"chgrp-and-chmod-sgid", vfs.SetAttr{GID: u32(2000), Mode: u32(0o2770)}, false},
		{"everything", vfs.SetAttr{UID: u32(1000), Mode: u32(0o700), Size: u64(3), Atime: &tm, Mtime: &tm}, true},
	}
	type outcome struct {
		errno        syscall.Errno
		uid, gid     uint32
		mode         uint32
		size         int64
		atime, mtime time.Time
	}
	mkfile := func(name string, fl file) (string, vfs.Handle) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, fl.uid, fl.gid); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, fl.mode); err != nil {
			t.Fatal(err)
		}
		old := time.Unix(5e8, 0)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		h, _, err := f.Lookup(vfs.Cred{}, f.Root(), name)
		if err != nil {
			t.Fatal(err)
		}
		return p, h
	}
	outcomeOf := func(p string, err error, explicitTimes bool) outcome {
		o := outcome{errno: errnoOf(t, err)}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		o.uid, o.gid, o.mode, o.size = st.Uid, st.Gid, st.Mode, st.Size
		if explicitTimes {
			o.atime, o.mtime = time.Unix(st.Atim.Unix()), time.Unix(st.Mtim.Unix())
		}
		return o
	}
	fastCalls := 0
	for fi, fl := range files {
		for _, c := range []vfs.Cred{user, member} {
			for _, ch := range changes {
				what := fmt.Sprintf("file %d:%d %#o, caller %d groups %v, %s", fl.uid, fl.gid, fl.mode, c.UID, c.GIDs, ch.name)
				base := fmt.Sprintf("f%d-%d-%s", fi, len(c.GIDs), ch.name)
				pf, hf := mkfile(base+"-fast", fl)
				ps, hs := mkfile(base+"-slow", fl)
				var errF, errS error
				hops := hopsDuring(func() { errF = f.SetAttr(c, hf, ch.s) })
				f.modePerm = false
				errS = f.SetAttr(c, hs, ch.s)
				f.modePerm = fastOK
				explicit := ch.s.Atime != nil || ch.s.Mtime != nil
				got, want := outcomeOf(pf, errF, explicit), outcomeOf(ps, errS, explicit)
				if !explicit && errF == nil && errS == nil {
					got.atime, got.mtime, want.atime, want.mtime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				}
				if got != want {
					t.Errorf("%s: fast path left %+v, the caller's call %+v", what, got, want)
				}
				wantFast := fastOK && ch.fast && fl.uid == 1000 && fl.mode&0o6000 == 0
				if wantFast && hops != 0 {
					t.Errorf("%s: %d hops to the identity thread, want none", what, hops)
				}
				if !fastOK && hops != 1 {
					t.Errorf("%s: %d hops without mode-bit grants, want 1", what, hops)
				}
				if hops == 0 {
					fastCalls++
				}
			}
		}
	}
	if fastOK && fastCalls == 0 {
		t.Error("no SETATTR took the fast path")
	}

	// The handle names the inode, not its name: a file renamed away and
	// a symbolic link to a file outside the export put in its place
	// leave the outside file alone.
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(outside, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	p, h := mkfile("swapped", file{1000, 1000, 0o644})
	if err := os.Rename(p, p+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	if err := f.SetAttr(user, h, vfs.SetAttr{Mode: u32(0o600), Size: u64(0)}); err != nil {
		t.Fatalf("SETATTR of a renamed file: %v", err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o644 || fi.Size() != 1 {
		t.Errorf("the file behind the swapped-in symbolic link: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Lstat(p + ".moved"); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 0 {
		t.Errorf("the renamed file: %v %v, want 0600 and empty", fi.Mode(), err)
	}
}

// TestServerRenameMatchesKernel renames in twin directory trees through
// the server's fast path (renameAsServerOK) and as the caller, and
// compares errors and the names each tree holds afterwards: within one
// directory (granted, read-only, sticky, refused by an ACL entry, owned
// by the caller, group-writable for members), over another's file and
// directory, and between directories (always as the caller: moving a
// directory the caller may not write to a new parent is refused). Names
// with "/" or "..", and a symbolic link to a file outside the export,
// are renamed (or refused) as names, never followed.
func TestServerRenameMatchesKernel(t *testing.T) {
	vfstest.RequireRoot(t)
	onTempAndTmpfs(t, testServerRename)
}

func testServerRename(t *testing.T, root string) {
	f := newExportAt(t, root)
	var err error
	fastOK := f.modePerm
	user := vfs.Cred{UID: 1000, GID: 1000}
	member := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{2000}}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	type dirSpec struct {
		name      string
		mode      uint32
		uid, gid  int
		accessACL bool // a named entry refusing uid 1000
	}
	dirs := []dirSpec{
		{name: "open", mode: 0o777},
		{name: "own", mode: 0o755, uid: 1000, gid: 1000},
		{name: "group", mode: 0o770, gid: 2000},
		{name: "readonly", mode: 0o555},
		{name: "sticky", mode: 0o1777},
		{name: "acl-refuses", mode: 0o777, accessACL: true},
	}
	// tree makes directory base/name per d holding: "mine" (uid 1000),
	// "roots" (root's, 0644), "rootdir" (root's directory, 0755), "link"
	// (a symbolic link to the outside file), and "sub" (0777).
	tree := func(base string, d dirSpec) (string, vfs.Handle, vfs.Handle) {
		t.Helper()
		p := filepath.Join(root, base, d.name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"mine", "roots"} {
			if err := os.WriteFile(filepath.Join(p, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(filepath.Join(p, "mine"), 1000, 1000); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"rootdir", "sub"} {
			if err := os.Mkdir(filepath.Join(p, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(p, "sub"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(p, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, d.uid, d.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(d.mode&0o777)|modeExtra(d.mode)); err != nil {
			t.Fatal(err)
		}
		if d.accessACL {
			if err := unix.Setxattr(p, "system.posix_acl_access", aclXattr(d.mode, map[uint32]uint16{1000: 0}), 0); err != nil {
				t.Fatalf("setting an ACL: %v", err)
			}
		}
		rel := filepath.Join(base, d.name)
		h := f.Root()
		for _, n := range strings.Split(rel, "/") {
			if h, _, err = f.Lookup(vfs.Cred{}, h, n); err != nil {
				t.Fatal(err)
			}
		}
		sub, _, err := f.Lookup(vfs.Cred{}, h, "sub")
		if err != nil {
			t.Fatal(err)
		}
		return p, h, sub
	}
	// listing is every name below p, with its type and owner.
	listing := func(p string) string {
		var out []string
		filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
			if err != nil {
				out = append(out, q+": "+err.Error())
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			rel, _ := filepath.Rel(p, q)
			out = append(out, fmt.Sprintf("%s %v %d", rel, fi.Mode().Type(), st.Uid))
			return nil
		})
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	type move struct {
		from, to string
		down     bool // to the directory's "sub"
		fast     bool // granted within one directory: no hop
	}
	moves := []move{
		{from: "mine", to: "new", fast: true},
		{from: "mine", to: "roots", fast: true},
		{from: "roots", to: "new", fast: true},
		{from: "rootdir", to: "newdir", fast: true},
		{from: "link", to: "moved-link", fast: true},
		{from: "mine", to: "link", fast: true},
		{from: "missing", to: "new", fast: true},
		{from: "mine", to: "rootdir"},
		{from: "rootdir", to: "sub"},
		{from: "mine", to: "../escaped"},
		{from: "../mine", to: "new"},
		{from: "mine", to: "a/b"},
		{from: "mine", to: "new", down: true},
		{from: "rootdir", to: "newdir", down: true},
		{from: "link", to: "link", down: true},
	}
	fastCalls := 0
	for di, d := range dirs {
		for ci, c := range []vfs.Cred{user, member} {
			for mi, m := range moves {
				what := fmt.Sprintf("%s dir, caller groups %v, %s -> %s (into sub %v)", d.name, c.GIDs, m.from, m.to, m.down)
				base := fmt.Sprintf("r%d-%d-%d", di, ci, mi)
				pf, hf, subF := tree(base+"-fast", d)
				ps, hs, subS := tree(base+"-slow", d)
				toF, toS := hf, hs
				if m.down {
					toF, toS = subF, subS
				}
				var errF, errS error
				hops := hopsDuring(func() { errF = f.Rename(c, hf, m.from, toF, m.to) })
				f.modePerm = false
				errS = f.Rename(c, hs, m.from, toS, m.to)
				f.modePerm = fastOK
				if eF, eS := errnoOf(t, errF), errnoOf(t, errS); eF != eS {
					t.Errorf("%s: fast path %v, as the caller %v", what, errF, errS)
				}
				if got, want := listing(pf), listing(ps); got != want {
					t.Errorf("%s: fast path left\n%s\nthe caller's call\n%s", what, got, want)
				}
				granted := d.name == "open" || d.name == "own" || (d.name == "group" && len(c.GIDs) > 0)
				if fastOK && m.fast && granted && hops != 0 {
					t.Errorf("%s: %d hops to the identity thread, want none", what, hops)
				}
				if m.down && hops != 1 {
					t.Errorf("%s: between directories %d hops, want 1 (as the caller)", what, hops)
				}
				if hops == 0 {
					fastCalls++
				}
			}
		}
	}
	if fastOK && fastCalls == 0 {
		t.Error("no RENAME took the fast path")
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x" {
		t.Errorf("the file outside the export: %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(filepath.Dir(root), "escaped")); err == nil {
		t.Errorf("a rename left the export: %v", fi.Name())
	}
}

// TestServerLinkMatchesKernel links files of the caller's and of root's
// (protected_hardlinks: read and write access, set-user-ID) into twin
// directories of six kinds through the server's fast path
// (linkAsServerOK) and as the caller, and compares the errors and what
// each new name holds; the owner's links into directories it may write
// take no hop. Names with "/" or ".." are refused as names.
func TestServerLinkMatchesKernel(t *testing.T) {
	vfstest.RequireRoot(t)
	onTempAndTmpfs(t, testServerLink)
}

func testServerLink(t *testing.T, root string) {
	f := newExportAt(t, root)
	fastOK := f.modePerm
	user := vfs.Cred{UID: 1000, GID: 1000}
	type spec struct {
		name      string
		mode      uint32
		uid       int
		accessACL bool
	}
	files := []spec{{"mine", 0o644, 1000, false}, {"mine-suid", 0o4755, 1000, false}, {"roots", 0o644, 0, false},
		{"roots-rw", 0o666, 0, false}, {"roots-suid", 0o4777, 0, false}}
	dirs := []spec{{"open", 0o777, 0, false}, {"own", 0o755, 1000, false}, {"readonly", 0o555, 0, false},
		{"sticky", 0o1777, 0, false}, {"closed", 0o700, 0, false}, {"acl-refuses", 0o777, 0, true}}
	src := map[string]vfs.Handle{}
	if err := os.Mkdir(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	sd, _, err := f.Lookup(vfs.Cred{}, f.Root(), "src")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range files {
		p := filepath.Join(root, "src", s.name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, s.uid, s.uid); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, s.mode); err != nil {
			t.Fatal(err)
		}
		if src[s.name], _, err = f.Lookup(vfs.Cred{}, sd, s.name); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(name string, d spec) vfs.Handle {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, d.uid, d.uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(d.mode&0o777)|modeExtra(d.mode)); err != nil {
			t.Fatal(err)
		}
		if d.accessACL {
			if err := unix.Setxattr(p, "system.posix_acl_access", aclXattr(d.mode, map[uint32]uint16{1000: 0}), 0); err != nil {
				t.Fatalf("setting an ACL: %v", err)
			}
		}
		h, _, err := f.Lookup(vfs.Cred{}, f.Root(), name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	holds := func(p string) string {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("ino %d", st.Ino)
	}
	fastCalls := 0
	for di, d := range dirs {
		df, ds := mkdir(fmt.Sprintf("l%d-fast", di), d), mkdir(fmt.Sprintf("l%d-slow", di), d)
		for _, s := range files {
			for _, name := range []string{s.name, "a/b", "..", "."} {
				what := fmt.Sprintf("%s dir, %s as %q", d.name, s.name, name)
				var errF, errS error
				hops := hopsDuring(func() { errF = f.Link(user, src[s.name], df, name) })
				f.modePerm = false
				errS = f.Link(user, src[s.name], ds, name)
				f.modePerm = fastOK
				if eF, eS := errnoOf(t, errF), errnoOf(t, errS); eF != eS {
					t.Errorf("%s: fast path %v, as the caller %v", what, errF, errS)
				}
				if errF == nil {
					got := holds(filepath.Join(root, fmt.Sprintf("l%d-fast", di), name))
					want := holds(filepath.Join(root, "src", s.name))
					if got != want {
						t.Errorf("%s: the new name holds %s, want the source's %s", what, got, want)
					}
				}
				if fastOK && name == s.name && s.uid == 1000 && (d.name == "open" || d.name == "own" || d.name == "sticky") && hops != 0 {
					t.Errorf("%s: %d hops to the identity thread, want none", what, hops)
				}
				if hops == 0 && errF == nil {
					fastCalls++
				}
			}
		}
	}
	if fastOK && fastCalls == 0 {
		t.Error("no LINK took the fast path")
	}
}
