package nfs

import (
	"context"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// setattr is SETATTR, RFC 1813 section 3.3.2: the guard compares the
// object's ctime with the client's and answers NFS3ERR_NOT_SYNC on a
// mismatch; wcc_data brackets the change.
func (s *Server) setattr(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.SetattrArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.SetattrRes
	res.Status = s.doSetattr(call, &args, &res.Wcc)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doSetattr(call *oncrpc.Call, args *wire.SetattrArgs, wcc *wire.WccData) wire.Status {
	var rq req
	if st := s.resolve(call, args.FH, &rq); st != wire.OK {
		return st
	}
	// decide checks the call against the attributes before the change
	// (and makes them the wcc_data's), returning the change to make, or
	// the status to answer without one.
	decide := func(pre *vfs.Attr) (vfs.SetAttr, wire.Status, bool) {
		wcc.Before = preOp(pre)
		wcc.After = rq.attrOp(pre)
		if rq.ro {
			return vfs.SetAttr{}, wire.ErrROFS, false
		}
		if args.Guard && toTime(pre.Ctime) != args.Ctime {
			return vfs.SetAttr{}, wire.ErrNotSync, false
		}
		if st := permitSetattr(&rq.cred, pre, &args.Attr); st != wire.OK {
			return vfs.SetAttr{}, st, false
		}
		v := toSetAttr(&args.Attr, time.Now())
		return v, wire.OK, !isEmptySetAttr(&v)
	}
	if as, ok := rq.fs.(vfs.AttrSetter); ok {
		// One resolution and stat before, one after (vfs.AttrSetter).
		st, applied := wire.OK, false
		_, post, havePre, havePost, err := as.SetAttrAround(rq.cred, rq.h, func(pre *vfs.Attr) (vfs.SetAttr, bool) {
			var v vfs.SetAttr
			v, st, applied = decide(pre)
			return v, applied
		})
		switch {
		case !havePre:
			return s.status("SETATTR", err)
		case !applied:
			return st
		}
		if havePost {
			wcc.After = rq.attrOp(&post)
		} else {
			wcc.After = rq.postOp(rq.h)
		}
		return s.status("SETATTR", err)
	}
	pre, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return s.status("SETATTR", err)
	}
	v, st, apply := decide(&pre)
	if !apply {
		return st
	}
	err = rq.fs.SetAttr(rq.cred, rq.h, v)
	wcc.After = rq.postOp(rq.h)
	return s.status("SETATTR", err)
}

// permitSetattr is what SETATTR checks itself: a size change needs a
// regular file and write permission with the owner override (knfsd's
// NFSD_MAY_TRUNC | NFSD_MAY_OWNER_OVERRIDE), since the backend truncates
// through a descriptor the server opened. The chown, chmod and utimes
// rules (ownership, group membership, set-group-ID clearing, write
// permission for times set to now) are the backend's, applied as the
// caller.
//
// Times set to the server's clock alone (no client time) need write
// permission with the owner override too, as knfsd's nfsd_setattr asks
// for NFSD_MAY_WRITE | NFSD_MAY_OWNER_OVERRIDE then: NFS3ERR_ACCES, not
// the NFS3ERR_PERM of an explicit time.
func permitSetattr(c *Cred, a *vfs.Attr, sa *wire.Sattr) wire.Status {
	serverTime := sa.Atime.How == wire.SetToServerTime || sa.Mtime.How == wire.SetToServerTime
	clientTime := sa.Atime.How == wire.SetToClientTime || sa.Mtime.How == wire.SetToClientTime
	if serverTime && !clientTime {
		if st := permit(c, a, mayWrite, true); st != wire.OK {
			return st
		}
	}
	if !sa.Size.Set {
		return wire.OK
	}
	switch a.Type {
	case vfs.TypeReg:
	case vfs.TypeDir:
		return wire.ErrIsDir
	default:
		return wire.ErrInval
	}
	return permit(c, a, mayWrite, true)
}
