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
	var dir vfs.Attr
	if st := s.beginDirChange(call, proc, args.Dir, args.Name, &rq, &dir, wcc); st != wire.OK {
		return st
	}
	// Write permission and the sticky rule are the backend's.
	var err error
	if rmdir {
		err = rq.fs.Rmdir(rq.cred, rq.h, args.Name)
	} else {
		err = rq.fs.Remove(rq.cred, rq.h, args.Name)
	}
	wcc.After = rq.postOp(rq.h)
	return s.status(proc, err)
}
