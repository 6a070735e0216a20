package vfs

import "syscall"

// Cred is the identity a backend call runs as: the caller's AUTH_SYS
// identity after the export's squashing (root_squash, all_squash and
// invalid ids already mapped to anonuid/anongid by the NFS layer's
// Authorize hook). The zero Cred is root with no supplementary groups,
// the server's own identity.
//
// The OS backend runs the system calls that depend on identity with the
// thread's fsuid, fsgid and supplementary groups set to the Cred, so the
// kernel applies its own rules; the memory backend applies the same
// rules itself (see doc.go, "Identity").
type Cred struct {
	UID, GID uint32
	// GIDs are the supplementary groups. They may alias the caller's
	// buffer (the RPC credential) and are read only during the call.
	GIDs []uint32
}

// InvalidID is (uid_t)-1 / (gid_t)-1: no valid identity. The kernel reads
// it as "leave unchanged" in chown(2) and as a query in setfsuid(2), so
// backends refuse a Cred holding it (EINVAL) and the NFS layer maps it to
// the anonymous identity before any call.
const InvalidID = 0xffffffff

// CheckChownIDs refuses a chown to InvalidID, which fchownat would read
// as "unchanged": EPERM for a caller other than root (who could never
// give a file to another id, or to a group it is not in), EINVAL for
// root.
func CheckChownIDs(c *Cred, s *SetAttr) error {
	if (s.UID == nil || *s.UID != InvalidID) && (s.GID == nil || *s.GID != InvalidID) {
		return nil
	}
	if c.UID != 0 {
		return PathErr("chown", "", syscall.EPERM)
	}
	return PathErr("chown", "", syscall.EINVAL)
}

// Permission bits of a mode's rwx triple, as masks for Cred.May.
const (
	MayExec  = 1
	MayWrite = 2
	MayRead  = 4
)

// InGroup reports whether gid is c's primary or a supplementary group.
func (c *Cred) InGroup(gid uint32) bool {
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

// Valid reports whether c holds no InvalidID.
func (c *Cred) Valid() bool {
	if c.UID == InvalidID || c.GID == InvalidID {
		return false
	}
	for _, g := range c.GIDs {
		if g == InvalidID {
			return false
		}
	}
	return true
}

// ModeBits returns the rwx triple of a's mode that applies to c: owner,
// group or other, as the kernel's acl_permission_check (no ACLs).
func (c *Cred) ModeBits(a *Attr) uint32 {
	switch {
	case c.UID == a.UID:
		return a.Mode >> 6 & 7
	case c.InGroup(a.GID):
		return a.Mode >> 3 & 7
	}
	return a.Mode & 7
}

// May reports whether c may access a as may (a mask of MayRead, MayWrite,
// MayExec) by the mode bits, as generic_permission: root (CAP_DAC_OVERRIDE)
// may do anything except execute a non-directory without any x bit.
func (c *Cred) May(a *Attr, may uint32) bool {
	if c.UID == 0 {
		if may&MayExec != 0 && a.Type != TypeDir && a.Mode&0o111 == 0 {
			return false
		}
		return true
	}
	return c.ModeBits(a)&may == may
}
