package localfs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

// threadIDs returns, per thread of this process, the "Uid:", "Gid:" and
// "Groups:" lines of /proc/self/task/*/status.
func threadIDs(t *testing.T) map[string]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		var ids []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "Gid:") || strings.HasPrefix(line, "Groups:") {
				ids = append(ids, strings.Join(strings.Fields(line), " "))
			}
		}
		out[task.Name()] = strings.Join(ids, "; ")
	}
	return out
}

// After many concurrent operations as other identities every thread of
// the process has the server's own uid, gid, fsuid, fsgid and groups,
// except the dedicated identity threads (at most localfs.IdentityThreads),
// which keep the last caller's: the per-thread identity never reaches a
// thread other goroutines run on, and threads the runtime made meanwhile
// did not inherit one, and threads that switched for a MKDIR on their
// own are back to the server's. (That no other goroutine runs on an
// identity thread is TestIdentityThreadsAreDedicated's.)
func TestOSThreadIdentityRestored(t *testing.T) {
	vfstest.RequireRoot(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f := newOS(t, dir, localfs.Options{})
	// This goroutine never runs on an identity thread, so its thread's
	// ids are the server's.
	gs, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	u, g := os.Geteuid(), os.Getegid()
	ref := fmt.Sprintf("Uid: %d %d %d %d; Gid: %d %d %d %d; Groups:", u, u, u, u, g, g, g, g)
	for _, x := range gs {
		ref += fmt.Sprintf(" %d", x)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := vfs.Cred{UID: uint32(1000 + g), GID: uint32(1000 + g), GIDs: []uint32{uint32(2000 + g), 5}}
			for i := range 200 {
				name := "f" + string(rune('a'+g)) + string(rune('a'+i%26))
				if h, _, err := f.Create(c, f.Root(), name, 0o644, false, false, [8]byte{}); err == nil {
					f.WriteAt(c, h, []byte("x"), 0, false)
					f.Remove(c, f.Root(), name)
				}
				// MKDIR switches on this goroutine's own thread (when
				// the process allows it) and restores it.
				if _, _, err := f.Mkdir(c, f.Root(), name+"-d", 0o755); err == nil {
					f.Rmdir(c, f.Root(), name+"-d")
				}
			}
		}()
	}
	wg.Wait()
	got := threadIDs(t)
	if len(got) == 0 {
		t.Fatal("no threads found")
	}
	other := 0
	for task, ids := range got {
		if ids == ref {
			continue
		}
		other++
		// An identity thread may still hold the squashed root (65534) of
		// an earlier test in this binary.
		caller := (strings.Contains(ids, "Uid: 0 0 0 10") && strings.Contains(ids, "Gid: 0 0 0 10")) ||
			(strings.Contains(ids, "Uid: 0 0 0 65534") && strings.Contains(ids, "Gid: 0 0 0 65534"))
		if !caller {
			t.Errorf("thread %s: %s: neither the server's %s nor a caller's of these tests", task, ids, ref)
		}
	}
	if other > localfs.IdentityThreads {
		t.Errorf("%d threads hold a caller's identity, more than the %d identity threads", other, localfs.IdentityThreads)
	}
	if !strings.HasPrefix(ref, "Uid: 0 0 0 0; Gid: 0 0 0 0") {
		t.Errorf("server identity %q: the test runs as root", ref)
	}
}

// With fs.protected_hardlinks=1 a caller may not hard-link a file it
// neither owns nor may read and write (issue 11, "also seen": LINK of a
// root 0600 file by uid 1000 succeeded), while it may link its own.
func TestOSLinkProtectedHardlinks(t *testing.T) {
	vfstest.RequireRoot(t)
	const sysctl = "/proc/sys/fs/protected_hardlinks"
	b, err := os.ReadFile(sysctl)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) != "1" {
		if err := os.WriteFile(sysctl, []byte("1"), 0); err != nil {
			t.Fatalf("%s is %q and cannot be set to 1: %v", sysctl, b, err)
		}
		t.Cleanup(func() { os.WriteFile(sysctl, b, 0) })
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newOS(t, dir, localfs.Options{})
	user := vfs.Cred{UID: 1000, GID: 1000}
	secret, _, err := f.Lookup(user, f.Root(), "secret")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Link(user, secret, f.Root(), "mine")
	if errno, _ := vfs.ToErrno(err); errno != syscall.EPERM {
		t.Errorf("link of a root 0600 file by uid 1000: %v, want EPERM", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "mine")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link exists on disk: %v", err)
	}
	own, _, err := f.Create(user, f.Root(), "own", 0o600, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Link(user, own, f.Root(), "own2"); err != nil {
		t.Errorf("link of one's own file: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "own2"), &st); err != nil || st.Uid != 1000 || st.Nlink != 2 {
		t.Errorf("own2 on disk: %+v %v", st, err)
	}
}

// The kernel, not the server's identity, decides: files made as a
// caller are the caller's on disk, with no moment at which they were
// root's (no chown follows), and set-id bits the caller may not keep are
// gone on disk too.
func TestOSOwnershipOnDisk(t *testing.T) {
	vfstest.RequireRoot(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f := newOS(t, dir, localfs.Options{})
	user := vfs.Cred{UID: 1000, GID: 1000}
	if _, _, err := f.Create(user, f.Root(), "f", 0o6777, true, false, [8]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Mkdir(user, f.Root(), "d", 0o777); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "d"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("%s on disk: %d:%d mode %#o, want 1000:1000", name, st.Uid, st.Gid, st.Mode&0o7777)
		}
	}
	// The server's own writes (as root) keep set-id bits; a caller's
	// write to the same file clears them on disk.
	p := filepath.Join(dir, "s")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 2000, 2000); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p, 0o6777); err != nil { // os.Chmod drops bits above 0777
		t.Fatal(err)
	}
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(vfs.Cred{}, h, []byte("root"), 0, false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != os.ModeSetuid|os.ModeSetgid {
		t.Errorf("after root's write: %v", fi.Mode())
	}
	if _, err := f.WriteAt(user, h, []byte("user"), 0, true); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("after uid 1000's write through the cached descriptor: %v, want no set-id bits", fi.Mode())
	}
}

// The data path stays allocation-free as the caller: WriteAt of a plain
// file (no identity switch) and of a set-id file (written as the
// caller). The inside-the-export check itself is measured by
// TestOSWithinDoesNotAllocate.
func TestOSCallerDataPathDoesNotAllocate(t *testing.T) {
	vfstest.RequireRoot(t)
	f := newOS(t, t.TempDir(), localfs.Options{})
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5}}
	plain, _, err := f.Create(vfs.Cred{}, f.Root(), "plain", 0o666, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	setid, _, err := f.Create(vfs.Cred{}, f.Root(), "setid", 0o6666, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	for what, h := range map[string]vfs.Handle{"a plain file": plain, "a set-id file": setid} {
		f.WriteAt(user, h, p, 0, false)
		if n := testing.AllocsPerRun(100, func() { f.WriteAt(user, h, p, 0, false) }); n != 0 {
			t.Errorf("WriteAt of %s as a caller: %v allocations per call", what, n)
		}
	}
}
