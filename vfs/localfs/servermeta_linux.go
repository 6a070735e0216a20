package localfs

import (
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// SETATTR, RENAME and LINK as the server, without the hop to an identity
// thread.
//
// As for LOOKUP, REMOVE and CREATE (modeperm_linux.go,
// servercreate_linux.go), a call runs as the server on the calling
// goroutine only where the kernel's answer for the caller is certain and
// the server's call leaves exactly what the caller's would; anything
// else, refusals included, runs as the caller, so its errors are the
// kernel's. Both need f.modePerm (generic_permission filesystems, an
// unmapped mount, a root server) and a Cred asCaller would accept.
//
// SETATTR (notify_change, setattr_prepare, chown_common, fs/attr.c and
// fs/open.c in 6.x), by the file's owner (the caller's uid is the file's
// at the fstat just before the call):
//
//   - chmod needs ownership (inode_owner_or_capable) and drops
//     set-group-ID when the caller is not in the file's group
//     (in_group_or_capable): taken when the new mode has no set-group-ID
//     bit or the caller is in the group the file has after the chown;
//   - explicit times (ATTR_TIMES_SET) need ownership, times set to now
//     ownership or write permission: the owner may, as root may (an
//     immutable or append-only file refuses both alike);
//   - chown by the owner keeping the uid, to the file's group or one of
//     the caller's groups (chown_ok, chgrp_ok), on a file without
//     set-user-ID or set-group-ID bits: chown_common clears them for a
//     non-directory (set-group-ID depending on the identity), so with
//     none there is nothing to clear; a change of group also needs
//     quota limits off (XFS charges a CAP_FOWNER chown without checking
//     them, as CREATE's fast path says);
//   - truncation (through the descriptor the server opened, as before)
//     when the mode it meets has no set-id bits: the kernel clears them
//     for a caller without CAP_FSETID and keeps them for root
//     (setattr_should_drop_suidgid); the security.capability attribute
//     is removed for both.
//
// RENAME within one directory (both handles name the same directory, so
// the kernel checks nothing about moving a directory to a new parent),
// when dirGrants grants write and search on it and it is not sticky (then
// the ownership of the source and of a replaced target would matter).
// A rename between two directories always runs as the caller: a
// directory moving to a new parent needs write permission on itself, and
// which object the source name holds can change between any look at it
// and the rename (a caller could swap a directory it may not write under
// the name).
//
// LINK by the file's owner (may_linkat's protected_hardlinks rule then
// passes for the caller as for root; the owner's uid is the file's at
// an fstat just before) when dirGrants grants write and search on the
// directory (may_create; the sticky bit plays no part). The server links
// the descriptor itself (linkat AT_EMPTY_PATH, which needs
// CAP_DAC_READ_SEARCH), the caller its /proc/self/fd name: the same
// inode, and for an unlinked one the same ENOENT.
//
// The windows are those of dirGrants: a chown, chmod or ACL change of
// the file or directory completing between the fstat and the call is
// not seen by that one call. Changing a file's owner takes root; its
// group and mode, its owner, who is the caller.

// callerOK reports whether c is a Cred the fast paths may act for: not
// root (root as root needs no hop; a squashed root is not 0), and one
// asCaller would accept.
func (f *FS) callerOK(c *vfs.Cred) bool {
	return f.modePerm && c.UID != 0 && c.Valid() && len(c.GIDs) <= 65536
}

// setAttrAsServerOK reports whether SetAttr s of e, whose fresh stat is
// st, by c may run as the server (see the top of this file).
func (f *FS) setAttrAsServerOK(c *vfs.Cred, e *fdEntry, st *unix.Stat_t, s *vfs.SetAttr) bool {
	if !f.callerOK(c) || st.Uid != c.UID {
		return false
	}
	mode, gid := st.Mode&0o7777, st.Gid
	if s.UID != nil || s.GID != nil {
		if s.UID != nil && *s.UID != st.Uid {
			return false
		}
		if mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			return false
		}
		if s.GID != nil && *s.GID != st.Gid {
			if !c.InGroup(*s.GID) || !f.quotaLimitsOff() {
				return false
			}
			gid = *s.GID
		}
	}
	if s.Mode != nil && e.typ != vfs.TypeLnk {
		if *s.Mode&unix.S_ISGID != 0 && !c.InGroup(gid) {
			return false
		}
		mode = *s.Mode & 0o7777
	}
	return s.Size == nil || mode&(unix.S_ISUID|unix.S_ISGID) == 0
}

// renameAsServerOK reports whether a rename from fe to te by c may run
// as the server: one directory, granted write and search, not sticky.
func (f *FS) renameAsServerOK(c *vfs.Cred, fe, te *fdEntry) bool {
	return f.callerOK(c) && sameDir(fe, te) && f.dirGrants(c, fe, vfs.MayWrite|vfs.MayExec, true)
}

// sameDir reports whether two cache entries name one directory: equal
// kernel handles on one filesystem are one inode, generation included
// (an inode number alone could be reused).
func sameDir(a, b *fdEntry) bool {
	return a == b || (a.ino == b.ino && a.fh.Type() == b.fh.Type() && string(a.fh.Bytes()) == string(b.fh.Bytes()))
}

// linkAsServerOK reports whether c may link file e into directory de as
// the server, leaving e's fresh stat in st.
func (f *FS) linkAsServerOK(c *vfs.Cred, e, de *fdEntry, st *unix.Stat_t) bool {
	return f.callerOK(c) && unix.Fstat(e.fd, st) == nil && st.Uid == c.UID &&
		f.dirGrants(c, de, vfs.MayWrite|vfs.MayExec, false)
}
