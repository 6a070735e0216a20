package localfs

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// TestOSFileLocks: owners are kept apart, a lock taken by another process
// (here another open file description) is seen and refuses a conflicting
// lock, and closing releases everything.
func TestOSFileLocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := New(dir, Options{HandleKey: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	h, _, err := fs.Lookup(vfs.Cred{}, fs.Root(), "f")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fs.OpenLocks(h)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := fl.Lock("a", true, 0, 9); !ok || err != nil {
		t.Fatalf("lock a: %v %v", ok, err)
	}
	if ok, err := fl.Lock("b", false, 5, 5); ok || err != nil {
		t.Fatalf("b's shared lock over a's exclusive one: %v %v", ok, err)
	}
	if ok, err := fl.Lock("b", false, 10, math.MaxInt64); !ok || err != nil {
		t.Fatalf("lock b: %v %v", ok, err)
	}
	// A process of the server host sees both.
	other, err := os.OpenFile(filepath.Join(dir, "f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	probe := unix.Flock_t{Type: unix.F_WRLCK, Start: 0, Len: 0}
	if err := unix.FcntlFlock(other.Fd(), unix.F_OFD_GETLK, &probe); err != nil || probe.Type != unix.F_WRLCK || probe.Start != 0 || probe.Len != 10 {
		t.Fatalf("the host sees %+v (%v)", probe, err)
	}
	// The host's own lock refuses ours and Test reports it.
	if err := fl.Unlock("b", 0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	hostLock := unix.Flock_t{Type: unix.F_RDLCK, Start: 100, Len: 1}
	if err := unix.FcntlFlock(other.Fd(), unix.F_OFD_SETLK, &hostLock); err != nil {
		t.Fatal(err)
	}
	if ok, err := fl.Lock("a", true, 50, 150); ok || err != nil {
		t.Fatalf("lock over the host's: %v %v", ok, err)
	}
	holder, found, err := fl.Test("c", true, 0, math.MaxInt64)
	if err != nil || !found || holder.Start != 0 || holder.End != 9 || !holder.Exclusive {
		t.Fatalf("Test from c: %+v %v %v", holder, found, err)
	}
	holder, found, err = fl.Test("a", true, 0, math.MaxInt64)
	if err != nil || !found || holder.Start != 100 || holder.End != 100 || holder.Exclusive {
		t.Fatalf("Test from a: %+v %v %v", holder, found, err)
	}
	if err := fl.Forget("a"); err != nil {
		t.Fatal(err)
	}
	probe = unix.Flock_t{Type: unix.F_WRLCK, Start: 0, Len: 100}
	if err := unix.FcntlFlock(other.Fd(), unix.F_OFD_GETLK, &probe); err != nil || probe.Type != unix.F_UNLCK {
		t.Fatalf("after Forget the host sees %+v (%v)", probe, err)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.OpenLocks(fs.Root()); err != vfs.ErrNotSupported {
		t.Fatalf("OpenLocks of a directory: %v", err)
	}
}
