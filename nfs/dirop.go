package nfs

import (
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Shared steps of the procedures that add or remove directory entries.

// beginDirChange resolves directory fh for a change of entry name:
// attributes before the change (into pre and wcc), NOTDIR, ROFS, write and
// search permission, NAMETOOLONG, in knfsd's order.
func (s *Server) beginDirChange(call *oncrpc.Call, proc string, fh []byte, name string, rq *req, pre *vfs.Attr, wcc *wire.WccData) wire.Status {
	if st := s.resolve(call, fh, rq); st != wire.OK {
		return st
	}
	var err error
	if *pre, err = rq.fs.GetAttr(rq.h); err != nil {
		return s.status(proc, err)
	}
	wcc.Before = preOp(pre)
	wcc.After = rq.attrOp(pre)
	if pre.Type != vfs.TypeDir {
		return wire.ErrNotDir
	}
	if rq.ro {
		return wire.ErrROFS
	}
	if st := permitDirChange(&rq.cred, pre); st != wire.OK {
		return st
	}
	if len(name) > wire.MaxName {
		return wire.ErrNameTooLong
	}
	return wire.OK
}

// isDotName reports "." or "..": names that always exist, so creating
// one answers NFS3ERR_EXIST.
func isDotName(name string) bool { return name == "." || name == ".." }

// newOwner is the owner of an object created by c in directory dir: the
// caller, with the directory's group when it is set-group-ID.
func newOwner(c *Cred, dir *vfs.Attr) vfs.Owner {
	o := vfs.Owner{UID: c.UID, GID: c.GID}
	if dir.Mode&02000 != 0 {
		o.GID = dir.GID
	}
	return o
}

// applyNewAttrs sets what sattr3 asks for on a just-created object beyond
// what the create call itself took: owner and group (a different owner
// only for root, a different group for root or a member), times, and a
// non-zero size. Mode was passed to the create call.
func (s *Server) applyNewAttrs(rq *req, h vfs.Handle, sa *wire.Sattr, owner vfs.Owner) error {
	v := toSetAttr(sa, time.Now())
	v.Mode = nil
	if v.UID != nil && (*v.UID == owner.UID || rq.cred.UID != 0) {
		v.UID = nil
	}
	if v.GID != nil && (*v.GID == owner.GID || (rq.cred.UID != 0 && !rq.cred.inGroup(*v.GID))) {
		v.GID = nil
	}
	if v.Size != nil && *v.Size == 0 {
		v.Size = nil
	}
	if isEmptySetAttr(&v) {
		return nil
	}
	return rq.fs.SetAttr(h, v)
}

// finishCreate fills the CREATE / MKDIR / SYMLINK / MKNOD result for the
// new object h and the directory's after-attributes.
func (rq *req) finishCreate(h vfs.Handle, res *wire.CreateRes, buf *fhBuf) wire.Status {
	res.DirWcc.After = rq.postOp(rq.h)
	fh := makeHandle(buf, rq.ex.FSID, h)
	if fh == nil {
		return wire.ErrServerFault
	}
	res.FH = wire.PostOpFH{Set: true, FH: fh}
	res.Attr = rq.postOp(h)
	return wire.OK
}

// modeOr returns the sattr3 mode or def.
func modeOr(sa *wire.Sattr, def uint32) uint32 {
	if sa.Mode.Set {
		return sa.Mode.V & 07777
	}
	return def
}
