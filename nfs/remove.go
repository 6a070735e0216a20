package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// remove is REMOVE, RFC 1813 section 3.3.12.
func (s *Server) remove(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.RemoveArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.RemoveRes
	res.Status = s.doUnlink(call, "REMOVE", &args, &res.Wcc, false)
	reply.Head = res.Append(reply.Head)
	return nil
}

// doUnlink is REMOVE (rmdir false) and RMDIR (rmdir true).
func (s *Server) doUnlink(call *oncrpc.Call, proc string, args *wire.DirOpArgs, wcc *wire.WccData, rmdir bool) wire.Status {
	var rq req
	if st := s.resolve(call, args.Dir, &rq); st != wire.OK {
		return st
	}
	// Write permission and the sticky rule are the backend's.
	if dc := dirChanger(&rq, args.Name); dc != nil {
		// The directory's attributes come from the backend's own
		// descriptor, before and after its unlink.
		var da vfs.DirAttrs
		var err error
		if rmdir {
			da, err = dc.RmdirDirAttrs(rq.cred, rq.h, args.Name)
		} else {
			da, err = dc.RemoveDirAttrs(rq.cred, rq.h, args.Name)
		}
		st, err := s.changedDir(proc, &rq, args.Name, &da, err, wcc)
		if st != wire.OK {
			return st
		}
		wcc.After = rq.dirPost(&da)
		return s.status(proc, err)
	}
	var dir vfs.Attr
	if st := s.dirPreOp(proc, &rq, args.Name, &dir, wcc); st != wire.OK {
		return st
	}
	var err error
	if rmdir {
		err = rq.fs.Rmdir(rq.cred, rq.h, args.Name)
	} else {
		err = rq.fs.Remove(rq.cred, rq.h, args.Name)
	}
	wcc.After = rq.postOp(rq.h)
	return s.status(proc, err)
}
