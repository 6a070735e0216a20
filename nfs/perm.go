package nfs

import (
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// The permission checks that stay in the NFS layer: those where NFS
// semantics differ from a local system call's, or where the backend runs
// as the server (see vfs/doc.go, "Identity"). Everything else (directory
// write and search permission, sticky directories, chown/chmod/utimes
// rules, set-id clearing, device creation, protected hard links, the
// owner of new objects) is the backend's, which on the OS backend means
// the kernel's, applied as the caller.

// Unix permission bits as in a mode's rwx triple.
const (
	mayExec  = vfs.MayExec
	mayWrite = vfs.MayWrite
	mayRead  = vfs.MayRead
)

// mayAccess reports whether c may access a as may (a mask of mayRead,
// mayWrite, mayExec) by the mode bits: root may do anything except
// execute a non-directory without any x bit, as with CAP_DAC_OVERRIDE.
func mayAccess(c *Cred, a *vfs.Attr, may uint32) bool { return c.May(a, may) }

// checkAccess computes the ACCESS3 result (RFC 1813 section 3.3.4) for
// the bits in want, as knfsd's nfsd_access maps them: directories grant
// READ, LOOKUP, MODIFY, EXTEND, DELETE; regular files READ, MODIFY,
// EXTEND, EXECUTE; other objects READ, MODIFY, EXTEND, EXECUTE. A
// read-only export never grants MODIFY, EXTEND or DELETE. ACCESS answers
// from the mode bits; it is advisory, and the operation itself is checked
// by the backend.
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

// permit is the check of READ, WRITE, COMMIT, READDIR and truncation,
// whose backend calls use descriptors the server opened: NFS3ERR_ACCES
// unless c may access a as may. With ownerOverride the owner passes
// regardless of the mode bits (knfsd's NFSD_MAY_OWNER_OVERRIDE, used for
// READ, WRITE, COMMIT and truncation, so that a file created read-only
// can still be written through the open that created it).
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
