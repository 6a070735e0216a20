package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// mknod is MKNOD, RFC 1813 section 3.3.11: FIFOs, sockets and (where the
// backend and the server's privileges allow) character and block devices.
// REG, DIR and LNK are NFS3ERR_BADTYPE; a backend that cannot make the
// node answers NFS3ERR_NOTSUPP.
func (s *Server) mknod(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.MknodArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.MknodRes
	var buf fhBuf
	res.Status = s.doMknod(call, &args, &res, &buf)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doMknod(call *oncrpc.Call, args *wire.MknodArgs, res *wire.MknodRes, buf *fhBuf) wire.Status {
	var rq req
	var dir vfs.Attr
	if st := s.beginDirChange(call, "MKNOD", args.Where.Dir, args.Where.Name, &rq, &dir, &res.DirWcc); st != wire.OK {
		return st
	}
	if isDotName(args.Where.Name) {
		return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
	}
	switch args.Type {
	case wire.TypeChr, wire.TypeBlk, wire.TypeSock, wire.TypeFIFO:
	default:
		return wire.ErrBadType
	}
	// Device nodes need CAP_MKNOD: the backend refuses them (EPERM,
	// NFS3ERR_PERM) for anybody but root.
	h, a, err := rq.fs.Mknod(rq.cred, rq.h, args.Where.Name, vfs.FileType(args.Type), modeOr(&args.Attr, defaultSpecialMode),
		args.Spec.Major, args.Spec.Minor)
	if err == nil {
		err = s.applyNewAttrs(&rq, h, &a, &args.Attr)
	}
	if err != nil {
		res.DirWcc.After = rq.postOp(rq.h)
		return s.status("MKNOD", err)
	}
	return rq.finishCreate(h, res, buf)
}
