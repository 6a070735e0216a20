package localfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// makeOutcome is what a MKDIR, SYMLINK or MKNOD left: the errno (0:
// none) and the object's owner, group, full mode and link target.
type makeOutcome struct {
	errno    syscall.Errno
	uid, gid uint32
	mode     uint32
	target   string
}

func (o makeOutcome) String() string {
	if o.errno != 0 {
		return fmt.Sprintf("error %v", o.errno)
	}
	return fmt.Sprintf("%d:%d mode %#o target %q", o.uid, o.gid, o.mode, o.target)
}

func makeOutcomeOf(t *testing.T, path string, err error) makeOutcome {
	t.Helper()
	var o makeOutcome
	if err != nil {
		if !errors.As(err, &o.errno) {
			t.Fatalf("error without an errno: %v", err)
		}
		return o
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("made, but %s: %v", path, err)
	}
	o.uid, o.gid, o.mode = st.Uid, st.Gid, st.Mode
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		o.target, _ = os.Readlink(path)
	}
	return o
}

// TestMakeHereMatchesIdentityThread makes the same directories, symlinks
// and nodes as the caller on the calling goroutine's own thread
// (asCallerHere) and on an identity thread (asCaller) in twin
// directories, and compares what each left: error, owner, group, mode,
// target. Directory kinds cover set-group-ID directories of a group the
// caller is and is not in, sticky, read-only, unsearchable, an access ACL
// refusing the caller and a default ACL; callers an ordinary user, a
// member of the directory's group and the squashed root (65534); names
// new, just made and taken by root. Each call must take the path it was
// given (counted).
func TestMakeHereMatchesIdentityThread(t *testing.T) {
	vfstest.RequireRoot(t)
	onTempAndTmpfs(t, testMakeHere)
}

func testMakeHere(t *testing.T, root string) {
	f := newExportAt(t, root)
	defer here.off.Store(false)
	server := vfs.Cred{}
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5}}
	member := vfs.Cred{UID: 1001, GID: 1001, GIDs: []uint32{2000}}
	squashed := vfs.Cred{UID: 65534, GID: 65534}
	type dirSpec struct {
		name      string
		mode      uint32
		uid, gid  int
		accessACL bool
		defACL    bool
	}
	dirs := []dirSpec{
		{name: "open", mode: 0o777},
		{name: "own", mode: 0o755, uid: 1000, gid: 1000},
		{name: "group", mode: 0o770, gid: 2000},
		{name: "sgid-group", mode: 0o2777, gid: 2000},
		{name: "sgid-root", mode: 0o2775},
		{name: "sticky", mode: 0o1777},
		{name: "readonly", mode: 0o555},
		{name: "noexec", mode: 0o666},
		{name: "acl-refuses", mode: 0o777, accessACL: true},
		{name: "default-acl", mode: 0o777, defACL: true},
	}
	type op struct {
		name  string
		modes []uint32
		do    func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error
	}
	ops := []op{
		{"mkdir", []uint32{0o755, 0o700, 0o777, 0, 0o2755, 0o4755, 0o1777}, func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error {
			_, _, err := f.Mkdir(c, dir, name, mode)
			return err
		}},
		{"symlink", []uint32{0o777}, func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error {
			_, _, err := f.Symlink(c, dir, name, "../somewhere/"+name, mode)
			return err
		}},
		{"fifo", []uint32{0o644, 0o600, 0o2644, 0o4755, 0o1666}, func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error {
			_, _, err := f.Mknod(c, dir, name, vfs.TypeFIFO, mode, 0, 0)
			return err
		}},
		{"socket", []uint32{0o755}, func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error {
			_, _, err := f.Mknod(c, dir, name, vfs.TypeSock, mode, 0, 0)
			return err
		}},
		{"chardev", []uint32{0o644}, func(c vfs.Cred, dir vfs.Handle, name string, mode uint32) error {
			_, _, err := f.Mknod(c, dir, name, vfs.TypeChr, mode, 1, 3)
			return err
		}},
	}
	mkdir := func(name string, d dirSpec) vfs.Handle {
		t.Helper()
		var acl map[uint32]uint16
		if d.accessACL {
			acl = map[uint32]uint16{1000: 0, 1001: 0, 65534: 0}
		}
		var defaultACL uint32
		if d.defACL {
			defaultACL = 0o750
		}
		return makeCaseDir(t, f, server, root, name, d.uid, d.gid, d.mode, acl, defaultACL)
	}
	made := 0
	for di, d := range dirs {
		for ci, c := range []vfs.Cred{user, member, squashed} {
			here := mkdir(fmt.Sprintf("d%d-%d-here", di, ci), d)
			hop := mkdir(fmt.Sprintf("d%d-%d-hop", di, ci), d)
			for _, o := range ops {
				for _, mode := range o.modes {
					name := fmt.Sprintf("%s-%o", o.name, mode)
					what := fmt.Sprintf("%s in %s dir as %d groups %v, mode %#o", o.name, d.name, c.UID, c.GIDs, mode)
					compare := func(label, name string) {
						t.Helper()
						errH, calls, hops := makeVia(t, false, func() error { return o.do(c, here, name, mode) })
						errS, _, slowHops := makeVia(t, true, func() error { return o.do(c, hop, name, mode) })
						if calls != 1 || hops != 0 || slowHops != 1 {
							t.Errorf("%s, %s: %d calls on the calling thread and %d hops, then %d hops; want 1, 0, 1", what, label, calls, hops, slowHops)
						}
						got := makeOutcomeOf(t, filepath.Join(root, fmt.Sprintf("d%d-%d-here", di, ci), name), errH)
						want := makeOutcomeOf(t, filepath.Join(root, fmt.Sprintf("d%d-%d-hop", di, ci), name), errS)
						if got != want {
							t.Errorf("%s, %s: on the calling thread %v, on an identity thread %v", what, label, got, want)
						}
						if got.errno == 0 {
							made++
						}
					}
					compare("new name", name)
					compare("again", name)
					compare("root's file", "taken")
				}
			}
		}
	}
	if made == 0 {
		t.Fatal("nothing was made: the comparison proved nothing")
	}
}

// makeVia runs fn with calls as the caller on the calling thread allowed
// or not (viaHop), and counts both paths.
func makeVia(t *testing.T, viaHop bool, fn func() error) (err error, calls, hops uint64) {
	t.Helper()
	here.off.Store(viaHop)
	c0 := here.calls.Load()
	hops = hopsDuring(func() { err = fn() })
	return err, here.calls.Load() - c0, hops
}

// TestCallerHereRestoresThread: after a call as another identity on the
// calling goroutine's thread, that thread's fsuid, fsgid, groups and
// capability sets are what they were, and inside the call they were the
// caller's.
func TestCallerHereRestoresThread(t *testing.T) {
	vfstest.RequireRoot(t)
	here.off.Store(false)
	runtime.LockOSThread() // the same thread before, during and after
	defer runtime.UnlockOSThread()
	fsids := func() (uint32, uint32) {
		u, _, _ := unix.RawSyscall(sysSetfsuid, ^uintptr(0), 0, 0)
		g, _, _ := unix.RawSyscall(sysSetfsgid, ^uintptr(0), 0, 0)
		return uint32(u), uint32(g)
	}
	var caps0 capSets
	if err := caps0.get(); err != nil {
		t.Fatal(err)
	}
	u0, g0 := fsids()
	groups0, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	tid := unix.Gettid()
	c := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	calls := here.calls.Load()
	err = asCallerHere(&c, func() error {
		if unix.Gettid() != tid {
			t.Error("ran on another thread")
		}
		if u, g := fsids(); u != c.UID || g != c.GID {
			t.Errorf("inside: fsuid %d fsgid %d, want %d %d", u, g, c.UID, c.GID)
		}
		if gs, _ := unix.Getgroups(); fmt.Sprint(gs) != "[5 6]" {
			t.Errorf("inside: groups %v", gs)
		}
		var caps capSets
		if err := caps.get(); err != nil || caps.d[0].Effective&(1<<unix.CAP_DAC_OVERRIDE) != 0 {
			t.Errorf("inside: CAP_DAC_OVERRIDE still effective (%v)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if here.calls.Load() != calls+1 {
		t.Fatal("the call did not run on the calling thread")
	}
	var caps1 capSets
	if err := caps1.get(); err != nil {
		t.Fatal(err)
	}
	u1, g1 := fsids()
	groups1, _ := unix.Getgroups()
	if u1 != u0 || g1 != g0 || fmt.Sprint(groups1) != fmt.Sprint(groups0) || caps1 != caps0 {
		t.Fatalf("after: fsuid %d fsgid %d groups %v caps %+v; before %d %d %v %+v", u1, g1, groups1, caps1, u0, g0, groups0, caps0)
	}
}
