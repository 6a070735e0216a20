package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// symlink is SYMLINK, RFC 1813 section 3.3.10. The target is stored as
// given (at most wire.MaxPath bytes); its mode is always 0777, as on
// Linux.
func (s *Server) symlink(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.SymlinkArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.SymlinkRes
	var buf fhBuf
	res.Status = s.doSymlink(call, &args, &res, &buf)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doSymlink(call *oncrpc.Call, args *wire.SymlinkArgs, res *wire.SymlinkRes, buf *fhBuf) wire.Status {
	var rq req
	var dir vfs.Attr
	if st := s.beginDirChange(call, "SYMLINK", args.Where.Dir, args.Where.Name, &rq, &dir, &res.DirWcc); st != wire.OK {
		return st
	}
	if isDotName(args.Where.Name) {
		return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
	}
	if args.Target == "" {
		return wire.ErrInval
	}
	h, _, err := rq.fs.Symlink(rq.cred, rq.h, args.Where.Name, args.Target, defaultSymlinkMode)
	if err != nil {
		res.DirWcc.After = rq.postOp(rq.h)
		return s.status("SYMLINK", err)
	}
	return rq.finishCreate(h, res, buf)
}
