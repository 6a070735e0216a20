//go:build ceph && linux && cgo

package cephfs

import (
	"bytes"
	"errors"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Two mounts of one directory are two heads: separate libcephfs clients
// (MDS sessions) in one process, as two gonfsrdma processes would be.
func twoHeads(t *testing.T) (a, b *FS) {
	conf := cephtest.Conf(t)
	dir := exportDir(t, conf)
	dom := []byte{1, 0, 0, 0, 5}
	var err error
	if a, err = New(Options{ConfigFile: conf, Root: dir, HandleDomain: dom}); err != nil {
		t.Fatalf("head A: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = New(Options{ConfigFile: conf, Root: dir, HandleDomain: dom}); err != nil {
		t.Fatalf("head B: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestHeadsShareHandles(t *testing.T) {
	a, b := twoHeads(t)
	// Both took the key from the export root's xattr: same handles.
	if !bytes.Equal(a.Root(), b.Root()) {
		t.Fatalf("root handles differ: %x vs %x", a.Root(), b.Root())
	}
	d, _, err := a.Mkdir(vfs.Cred{}, a.Root(), "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := a.Create(vfs.Cred{}, d, "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	if _, err := a.WriteAt(vfs.Cred{}, h, data, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(h); err != nil {
		t.Fatal(err)
	}
	// B resolves A's handle (never seen by B) and reads A's data.
	got := make([]byte, len(data)+10)
	n, eof, err := b.ReadAt(h, got, 0)
	if err != nil || n != len(data) || !eof || !bytes.Equal(got[:n], data) {
		t.Fatalf("B read %d eof %v err %v, equal %v", n, eof, err, bytes.Equal(got[:n], data))
	}
	// B's lookup gives A's handle.
	bd, _, err := b.Lookup(vfs.Cred{}, b.Root(), "d")
	if err != nil || !bytes.Equal(bd, d) {
		t.Fatalf("B lookup d: %x %v, A made %x", bd, err, d)
	}
	// A rename through A is seen through B, and the handle still works.
	if err := a.Rename(vfs.Cred{}, d, "f", a.Root(), "g"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lookup(vfs.Cred{}, bd, "f"); !errors.Is(err, errNoEnt) {
		t.Errorf("B lookup of the old name: %v", err)
	}
	if gh, _, err := b.Lookup(vfs.Cred{}, b.Root(), "g"); err != nil || !bytes.Equal(gh, h) {
		t.Errorf("B lookup g: %x %v, want %x", gh, err, h)
	}
	// A write through B is read through A.
	if _, err := b.WriteAt(vfs.Cred{}, h, []byte("HEAD-B"), 0, true); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 6)
	if n, _, err := a.ReadAt(h, p, 0); err != nil || string(p[:n]) != "HEAD-B" {
		t.Errorf("A reads %q %v", p[:n], err)
	}
	// Removed through A: stale through B.
	if err := a.Remove(vfs.Cred{}, a.Root(), "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("B getattr of a file removed through A: %v", err)
	}
}

// A head with another key refuses the others' handles.
func TestHeadsOtherKeyStale(t *testing.T) {
	conf := cephtest.Conf(t)
	dir := exportDir(t, conf)
	a, err := New(Options{ConfigFile: conf, Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(Options{ConfigFile: conf, Root: dir, HandleKey: bytes.Repeat([]byte{9}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.GetAttr(a.Root()); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr with another key: %v", err)
	}
}

var errNoEnt error = syscall.ENOENT

// Locks are CephFS's: an owner's lock through head A conflicts with
// another owner's through head B, and through A itself.
func TestHeadsLocksConflict(t *testing.T) {
	a, b := twoHeads(t)
	h, _, err := a.Create(vfs.Cred{}, a.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.OpenLocks(h)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	lb, err := b.OpenLocks(h)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	mustLock := func(l vfs.FileLocks, owner string, excl bool, s, e int64, want bool) {
		t.Helper()
		ok, err := l.Lock(owner, excl, s, e)
		if err != nil || ok != want {
			t.Fatalf("Lock(%s, %v, %d-%d) = %v, %v; want %v", owner, excl, s, e, ok, err, want)
		}
	}
	mustLock(la, "x", true, 0, 99, true)
	mustLock(lb, "y", false, 50, 60, false) // across heads
	mustLock(la, "z", false, 50, 60, false) // another owner, same head
	mustLock(lb, "y", true, 100, math.MaxInt64, true)
	mustLock(la, "x", true, 10, 20, true) // an owner never conflicts with itself
	hold, found, err := lb.Test("y", false, 0, 9)
	if err != nil || !found || !hold.Exclusive || hold.Start != 0 || hold.End != 99 {
		t.Errorf("Test through B: %+v %v %v, want A's exclusive 0-99", hold, found, err)
	}
	hold, found, err = la.Test("x", true, 200, 300)
	if err != nil || !found || !hold.Exclusive || hold.Start != 100 || hold.End != math.MaxInt64 {
		t.Errorf("Test through A: %+v %v %v, want B's exclusive 100-", hold, found, err)
	}
	if err := la.Unlock("x", 0, 99); err != nil {
		t.Fatal(err)
	}
	mustLock(lb, "y", false, 50, 60, true)
	// Closing B's holder releases its locks for A.
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	mustLock(la, "z", true, 0, math.MaxInt64, true)
	if err := la.Forget("z"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenLocks(a.Root()); !errors.Is(err, vfs.ErrNotSupported) {
		t.Errorf("OpenLocks of a directory: %v", err)
	}
}

// A head that starts in grace records it where every head over the file
// system reads it (GraceEnd), and its next start without grace removes
// the record.
func TestHeadsShareGraceRecords(t *testing.T) {
	conf := cephtest.Conf(t)
	dir := exportDir(t, conf)
	idA, idB := "test-a-"+t.Name(), "test-b-"+t.Name()
	until := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	a, err := New(Options{ConfigFile: conf, Root: dir, HeadID: idA, GraceUntil: until})
	if err != nil {
		t.Fatalf("head A: %v", err)
	}
	b, err := New(Options{ConfigFile: conf, Root: dir, HeadID: idB})
	if err != nil {
		a.Close()
		t.Fatalf("head B: %v", err)
	}
	defer b.Close()
	// Never leave a future record behind: the daemon's tests share the
	// cluster and would all be in grace.
	defer b.grace.clear(idA) // before b.Close (deferred above)
	if end, err := b.GraceEnd(); err != nil || !end.Equal(until) {
		t.Fatalf("B's GraceEnd = %v, %v; want A's %v", end, err, until)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a, err = New(Options{ConfigFile: conf, Root: dir, HeadID: idA})
	if err != nil {
		t.Fatalf("head A again: %v", err)
	}
	defer a.Close()
	if end, err := b.GraceEnd(); err != nil || end.After(time.Now()) {
		t.Fatalf("B's GraceEnd after A's start without grace = %v, %v; want none in the future", end, err)
	}
	// PublishGrace moves a head's end (the daemon's exact one).
	later := time.Now().Add(time.Minute).Truncate(time.Microsecond)
	if err := a.PublishGrace(idA, later); err != nil {
		t.Fatal(err)
	}
	if end, err := b.GraceEnd(); err != nil || !end.Equal(later) {
		t.Fatalf("B's GraceEnd after PublishGrace = %v, %v; want %v", end, err, later)
	}
}
