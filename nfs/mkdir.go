package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// mkdir is MKDIR, RFC 1813 section 3.3.9.
func (s *Server) mkdir(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.MkdirArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.MkdirRes
	var buf fhBuf
	res.Status = s.doMkdir(call, &args, &res, &buf)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doMkdir(call *oncrpc.Call, args *wire.MkdirArgs, res *wire.MkdirRes, buf *fhBuf) wire.Status {
	var rq req
	var dir vfs.Attr
	if st := s.beginDirChange(call, "MKDIR", args.Where.Dir, args.Where.Name, &rq, &dir, &res.DirWcc); st != wire.OK {
		return st
	}
	if isDotName(args.Where.Name) {
		return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
	}
	// The backend passes a set-group-ID bit of dir on, as Linux does.
	h, a, err := rq.fs.Mkdir(rq.cred, rq.h, args.Where.Name, modeOr(&args.Attr, defaultDirMode))
	if err == nil {
		err = s.applyNewAttrs(&rq, h, &a, &args.Attr)
	}
	if err != nil {
		res.DirWcc.After = rq.postOp(rq.h)
		return s.status("MKDIR", err)
	}
	return rq.finishCreate(h, res, buf)
}
