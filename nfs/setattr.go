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
	pre, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return s.status("SETATTR", err)
	}
	wcc.Before = preOp(&pre)
	wcc.After = rq.attrOp(&pre)
	if rq.ro {
		return wire.ErrROFS
	}
	if args.Guard && toTime(pre.Ctime) != args.Ctime {
		return wire.ErrNotSync
	}
	if st := permitSetattr(&rq.cred, &pre, &args.Attr); st != wire.OK {
		return st
	}
	v := toSetAttr(&args.Attr, time.Now())
	if isEmptySetAttr(&v) {
		return wire.OK
	}
	err = rq.fs.SetAttr(rq.h, v)
	wcc.After = rq.postOp(rq.h)
	return s.status("SETATTR", err)
}

// permitSetattr applies chmod/chown/truncate/utimes rules: mode and
// client times need ownership, a new owner needs root, a new group needs
// ownership and membership, a size change needs write permission on a
// regular file (owner override) and "now" times need ownership or write
// permission.
func permitSetattr(c *Cred, a *vfs.Attr, sa *wire.Sattr) wire.Status {
	if sa.Size.Set {
		switch a.Type {
		case vfs.TypeReg:
		case vfs.TypeDir:
			return wire.ErrIsDir
		default:
			return wire.ErrInval
		}
	}
	if c.UID == 0 {
		return wire.OK
	}
	owner := c.UID == a.UID
	if sa.Mode.Set && !owner {
		return wire.ErrPerm
	}
	if sa.UID.Set && sa.UID.V != a.UID {
		return wire.ErrPerm
	}
	if sa.GID.Set && sa.GID.V != a.GID && (!owner || !c.inGroup(sa.GID.V)) {
		return wire.ErrPerm
	}
	if (sa.Atime.How == wire.SetToClientTime || sa.Mtime.How == wire.SetToClientTime) && !owner {
		return wire.ErrPerm
	}
	if (sa.Atime.How == wire.SetToServerTime || sa.Mtime.How == wire.SetToServerTime) && !owner && !mayAccess(c, a, mayWrite) {
		return wire.ErrAcces
	}
	if sa.Size.Set {
		return permit(c, a, mayWrite, true)
	}
	return wire.OK
}
