//go:build ceph && cgo && linux

package cephfs

import "sync"

// nameLockStripes is how many locks the directories of an FS share.
const nameLockStripes = 64

// nameLocks orders this head's changes to directory entries, as the
// kernel's lock on a parent directory does: the entries of a directory
// cannot change between what a Rename checks and what ceph_ll_rename
// does. libcephfs checks a rename's parents but not the object moved;
// Rename checks that a non-root caller may write a directory it moves to
// a new parent (whose ".." the move rewrites) by looking the name up
// first. Without this lock another call could put a directory the caller
// may not write under that name in between, and libcephfs would move it
// (vfstest IdentityRenameSwapRace).
//
// Every method that changes a directory's entries (Create, Mkdir,
// Symlink, Mknod, Link, Remove, Rmdir) holds its stripe shared, so they
// still run in parallel with each other; Rename holds the stripes of both
// parents exclusively, taken in stripe order, until ceph_ll_rename has
// returned (not during the slow refreshDirStat). Changes made by other heads
// or other CephFS clients are not ordered by it (docs/security.md).
type nameLocks [nameLockStripes]sync.RWMutex

func nameStripe(v Vino) int { return int((v.Ino ^ v.Snap*0x9e3779b97f4a7c15) % nameLockStripes) }

// share holds directory v's stripe shared until the returned func is called.
func (l *nameLocks) share(v Vino) func() {
	m := &l[nameStripe(v)]
	m.RLock()
	return m.RUnlock
}

// exclude holds the stripes of directories a and b exclusively (each
// once, in stripe order) until the returned func is called.
func (l *nameLocks) exclude(a, b Vino) func() {
	i, j := nameStripe(a), nameStripe(b)
	if i > j {
		i, j = j, i
	}
	l[i].Lock()
	if i == j {
		return l[i].Unlock
	}
	l[j].Lock()
	return func() {
		l[j].Unlock()
		l[i].Unlock()
	}
}
