package nfs

import (
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Unix permission bits as in a mode's rwx triple.
const (
	mayExec  = 1
	mayWrite = 2
	mayRead  = 4
)

func (c *Cred) inGroup(gid uint32) bool {
	if c.GID == gid {
		return true
	}
	for _, g := range c.GIDs {
		if g == gid {
			return true
		}
	}
	return false
}

// modeBits returns the rwx triple of a's mode that applies to c: owner,
// group or other, as the kernel's acl_permission_check.
func modeBits(c *Cred, a *vfs.Attr) uint32 {
	switch {
	case c.UID == a.UID:
		return a.Mode >> 6 & 7
	case c.inGroup(a.GID):
		return a.Mode >> 3 & 7
	}
	return a.Mode & 7
}

// mayAccess reports whether c may access a as may (a mask of mayRead,
// mayWrite, mayExec). Root may do anything except execute a
// non-directory without any x bit, as with CAP_DAC_OVERRIDE.
func mayAccess(c *Cred, a *vfs.Attr, may uint32) bool {
	if c.UID == 0 {
		if may&mayExec != 0 && a.Type != vfs.TypeDir && a.Mode&0111 == 0 {
			return false
		}
		return true
	}
	return modeBits(c, a)&may == may
}

// checkAccess computes the ACCESS3 result (RFC 1813 section 3.3.4) for
// the bits in want, as knfsd's nfsd_access maps them: directories grant
// READ, LOOKUP, MODIFY, EXTEND, DELETE; regular files READ, MODIFY,
// EXTEND, EXECUTE; other objects READ, MODIFY, EXTEND, EXECUTE. A
// read-only export never grants MODIFY, EXTEND or DELETE.
func checkAccess(c *Cred, a *vfs.Attr, ro bool, want uint32) uint32 {
	var got uint32
	grant := func(bit, may uint32) {
		if want&bit != 0 && mayAccess(c, a, may) {
			got |= bit
		}
	}
	grant(wire.AccessRead, mayRead)
	if a.Type == vfs.TypeDir {
		grant(wire.AccessLookup, mayExec)
		grant(wire.AccessModify, mayExec|mayWrite)
		grant(wire.AccessExtend, mayExec|mayWrite)
		grant(wire.AccessDelete, mayExec|mayWrite)
	} else {
		grant(wire.AccessExecute, mayExec)
		grant(wire.AccessModify, mayWrite)
		grant(wire.AccessExtend, mayWrite)
	}
	if ro {
		got &^= wire.AccessModify | wire.AccessExtend | wire.AccessDelete
	}
	return got
}

// permit is the permission check of every procedure other than ACCESS:
// NFS3ERR_ACCES unless c may access a as may. With ownerOverride the
// owner passes regardless of the mode bits (knfsd's
// NFSD_MAY_OWNER_OVERRIDE, used for READ, WRITE, COMMIT and truncation, so
// that a file created read-only can still be written through the open
// that created it).
func permit(c *Cred, a *vfs.Attr, may uint32, ownerOverride bool) wire.Status {
	if ownerOverride && c.UID == a.UID {
		return wire.OK
	}
	if mayAccess(c, a, may) {
		return wire.OK
	}
	return wire.ErrAcces
}

// permitRead is READ's check: read permission, or execute permission
// (knfsd's NFSD_MAY_READ_IF_EXEC: clients read executables they may run).
func permitRead(c *Cred, a *vfs.Attr) wire.Status {
	if permit(c, a, mayRead, true) == wire.OK || (a.Type == vfs.TypeReg && mayAccess(c, a, mayExec)) {
		return wire.OK
	}
	return wire.ErrAcces
}

// permitDirChange checks that c may add or remove names in directory a:
// write and search permission.
func permitDirChange(c *Cred, a *vfs.Attr) wire.Status {
	return permit(c, a, mayWrite|mayExec, false)
}

// permitSticky applies the sticky-directory rule to removing or renaming
// child out of dir: only the owner of either, or root (EPERM, as
// may_delete).
func permitSticky(c *Cred, dir, child *vfs.Attr) wire.Status {
	if dir.Mode&01000 == 0 || c.UID == 0 || c.UID == dir.UID || c.UID == child.UID {
		return wire.OK
	}
	return wire.ErrPerm
}
