package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// link is LINK, RFC 1813 section 3.3.15. The file and the directory must
// be in one export (else NFS3ERR_XDEV).
func (s *Server) link(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.LinkArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.LinkRes
	res.Status = s.doLink(call, &args, &res)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doLink(call *oncrpc.Call, args *wire.LinkArgs, res *wire.LinkRes) wire.Status {
	var file, dir req
	if st := s.resolve(call, args.FH, &file); st != wire.OK {
		return st
	}
	a, err := file.fs.GetAttr(file.h)
	if err != nil {
		return s.status("LINK", err)
	}
	res.Attr = file.attrOp(&a)
	var dattr vfs.Attr
	if st := s.beginDirChange(call, "LINK", args.Link.Dir, args.Link.Name, &dir, &dattr, &res.DirWcc); st != wire.OK {
		return st
	}
	if isDotName(args.Link.Name) {
		return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
	}
	if file.ex != dir.ex {
		return wire.ErrXDev
	}
	if a.Type == vfs.TypeDir {
		return wire.ErrIsDir
	}
	err = dir.fs.Link(dir.cred, file.h, dir.h, args.Link.Name)
	res.Attr = file.postOp(file.h)
	res.DirWcc.After = dir.postOp(dir.h)
	return s.status("LINK", err)
}
