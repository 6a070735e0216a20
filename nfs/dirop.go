package nfs

import (
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Shared steps of the procedures that add or remove directory entries.

// beginDirChange resolves directory fh for a change of entry name:
// attributes before the change (into pre and wcc), NOTDIR, ROFS,
// NAMETOOLONG, in knfsd's order. Write and search permission are the
// backend's (the kernel's) to check, as the caller.
func (s *Server) beginDirChange(call *oncrpc.Call, proc string, fh []byte, name string, rq *req, pre *vfs.Attr, wcc *wire.WccData) wire.Status {
	if st := s.resolve(call, fh, rq); st != wire.OK {
		return st
	}
	return s.dirPreOp(proc, rq, name, pre, wcc)
}

// dirPreOp is beginDirChange after resolving: the GetAttr and the checks.
func (s *Server) dirPreOp(proc string, rq *req, name string, pre *vfs.Attr, wcc *wire.WccData) wire.Status {
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
	if len(name) > wire.MaxName {
		return wire.ErrNameTooLong
	}
	return wire.OK
}

// dirChanger returns the backend of rq as a vfs.DirAttrChanger when the
// directory's wcc_data of a change of name can come from the backend's
// own call: not for a backend without one, nor where beginDirChange's
// checks answer before the backend is asked whatever the directory is
// (read-only export, name too long), which then take dirPreOp's path.
func dirChanger(rq *req, name string) vfs.DirAttrChanger {
	dc, ok := rq.fs.(vfs.DirAttrChanger)
	if !ok || rq.ro || len(name) > wire.MaxName {
		return nil
	}
	return dc
}

// changedDir finishes the pre-op half of wcc after a DirAttrChanger call
// that filled da and returned err. When the backend took the directory's
// attributes before its change, they are the pre-op attributes. When it
// changed nothing (no Before), the answer is what beginDirChange's path
// gives: its GetAttr and checks (st, when not OK, is the procedure's
// answer), else err after them. The post-op half is rq.dirPost(da).
func (s *Server) changedDir(proc string, rq *req, name string, da *vfs.DirAttrs, err error, wcc *wire.WccData) (wire.Status, error) {
	if da.HaveBefore || err == nil {
		if da.HaveBefore {
			wcc.Before = preOp(&da.Before)
		}
		return wire.OK, err
	}
	var dir vfs.Attr
	if st := s.dirPreOp(proc, rq, name, &dir, wcc); st != wire.OK {
		return st, nil
	}
	return wire.OK, err
}

// dirPost is the post-op attributes of rq's directory after a change:
// the backend's, taken just after it (da), or else a GetAttr now.
func (rq *req) dirPost(da *vfs.DirAttrs) wire.PostOpAttr {
	if da != nil && da.HaveAfter {
		return rq.attrOp(&da.After)
	}
	return rq.postOp(rq.h)
}

// isDotName reports "." or "..": names that always exist, so creating
// one answers NFS3ERR_EXIST.
func isDotName(name string) bool { return name == "." || name == ".." }

// applyNewAttrs sets what sattr3 asks for on a just-created object a
// beyond what the create call itself took: owner and group (only for
// root, as knfsd's nfsd_create_setattr ignores them for anybody else),
// times, and a non-zero size. Mode was passed to the create call.
func (s *Server) applyNewAttrs(rq *req, h vfs.Handle, a *vfs.Attr, sa *wire.Sattr) error {
	v := newAttrsToSet(rq, a, sa)
	if isEmptySetAttr(&v) {
		return nil
	}
	return rq.fs.SetAttr(rq.cred, h, v)
}

// newAttrsToSet is what applyNewAttrs sets (empty: nothing).
func newAttrsToSet(rq *req, a *vfs.Attr, sa *wire.Sattr) vfs.SetAttr {
	v := toSetAttr(sa, time.Now())
	v.Mode = nil
	if v.UID != nil && (*v.UID == a.UID || rq.cred.UID != 0) {
		v.UID = nil
	}
	if v.GID != nil && (*v.GID == a.GID || rq.cred.UID != 0) {
		v.GID = nil
	}
	if v.Size != nil && *v.Size == 0 {
		v.Size = nil
	}
	return v
}

// finishCreate fills the CREATE / MKDIR / SYMLINK / MKNOD result for the
// new object h and the directory's after-attributes.
func (rq *req) finishCreate(h vfs.Handle, res *wire.CreateRes, buf *fhBuf) wire.Status {
	return rq.finishCreateAttr(h, nil, nil, res, buf)
}

// finishCreateAttr is finishCreate with the new object's attributes
// already known (a; nil: fetched here), so that a CREATE costs no
// GetAttr of the file it just made, and the directory's post-op
// attributes from the backend where it took them (da; see dirPost).
func (rq *req) finishCreateAttr(h vfs.Handle, a *vfs.Attr, da *vfs.DirAttrs, res *wire.CreateRes, buf *fhBuf) wire.Status {
	res.DirWcc.After = rq.dirPost(da)
	fh := makeHandle(buf, rq.ex.FSID, h)
	if fh == nil {
		return wire.ErrServerFault
	}
	res.FH = wire.PostOpFH{Set: true, FH: fh}
	if a != nil {
		res.Attr = rq.attrOp(a)
	} else {
		res.Attr = rq.postOp(h)
	}
	return wire.OK
}

// modeOr returns the sattr3 mode or def.
func modeOr(sa *wire.Sattr, def uint32) uint32 {
	if sa.Mode.Set {
		return sa.Mode.V & 07777
	}
	return def
}
